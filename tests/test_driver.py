"""The one sweep driver: both block strategies run, verify and repair through it."""

import typing

import numpy as np
import pytest

from antiamp.sweeps import driver
from antiamp.sweeps.blocks import ModelBlocks
from antiamp.sweeps.engine import FusedBlocks, block_strategy, run_sweep
from antiamp.sweeps.spec import make_plan, plan_grid

SWEEPS = {
    "baseline": {"sweep": {"axes": {"model": {"rho": [0.2, 0.5, 0.8]}},
                           "cells_per_block": 1, "plot": False},
                 "run": {"n_instances": 1000}},
    "signals": {"model": {"name": "signals"},
                "sweep": {"axes": {"signals": {"eta": [0.1, 0.3, 0.5]}},
                          "cells_per_block": 1, "plot": False},
                "run": {"n_instances": 1000}},
}


def _strategy(cfg):
    return block_strategy(make_plan(cfg))


def test_one_plan_for_every_model_whose_model_picks_the_block_strategy():
    from antiamp.sweeps import blocks, engine, spec

    plans = {name: make_plan(cfg) for name, cfg in SWEEPS.items()}
    assert {type(p) for p in plans.values()} == {spec.Plan}
    assert type(block_strategy(plans["baseline"])) is FusedBlocks
    assert type(block_strategy(plans["signals"])) is ModelBlocks
    # a fused model's grid alone (in memory, or a store of run_cells blocks): the same type
    grid = plan_grid(SWEEPS["baseline"])
    assert type(grid) is spec.Plan and grid.fused is None
    assert type(block_strategy(grid)) is ModelBlocks
    assert not hasattr(blocks, "GridPlan") and engine.Plan is spec.Plan


def test_both_strategies_have_the_drivers_interface():
    names = set(typing.get_type_hints(driver.Strategy)) | {
        n for n in vars(driver.Strategy) if not n.startswith("_")}
    for cfg in SWEEPS.values():
        s = _strategy(cfg)
        missing = sorted(n for n in names if not hasattr(s, n))
        assert not missing, f"{type(s).__name__} lacks {missing}"


@pytest.mark.parametrize("name", sorted(SWEEPS))
def test_one_verification_finds_and_repairs_an_unfinished_block(name, tmp_path):
    cfg = {**SWEEPS[name], "sweep": {**SWEEPS[name]["sweep"], "store": "s"}}
    ds = run_sweep(cfg, tmp_path, progress=False, log=lambda *a: None, dask=False)
    before = {k: np.asarray(v.values) for k, v in ds.data_vars.items()}
    store = tmp_path / "s"
    s = _strategy(cfg)
    assert driver.verify(s, store, repair=False, log=lambda *a: None).ok
    (store / "cell_done" / "1").unlink()  # the second block's cells not done
    report = driver.verify(_strategy(cfg), store, repair=False, log=lambda *a: None)
    assert len(report.todo) == 1 and not report.damaged
    said = []
    driver.verify(_strategy(cfg), store, repair=True, log=said.append)
    assert driver.verify(_strategy(cfg), store, repair=False, log=lambda *a: None).ok
    ds = run_sweep(cfg, tmp_path, progress=False, log=said.append, dask=False)
    assert any("is complete" in str(m) for m in said)
    for k, v in before.items():
        assert np.array_equal(np.asarray(ds[k].values), v, equal_nan=v.dtype.kind == "f"), k


@pytest.mark.parametrize("name", sorted(SWEEPS))
def test_a_sweeps_figures_are_drawn_as_its_model_declares(name, tmp_path):
    """The command draws a fused grid's store variable by variable (plot_store) and
    any other model's grid with the model's own figures; no branch of its own."""
    from antiamp.registry import get
    from antiamp.sweeps.plot import sweep_figures

    cfg = {**SWEEPS[name], "sweep": {**SWEEPS[name]["sweep"], "store": "s.zarr"}}
    ds = run_sweep(cfg, tmp_path, progress=False, log=lambda *a: None, dask=False)
    model = make_plan(cfg).model
    assert model is get(cfg.get("model", {}).get("name", "baseline"))
    paths = [str(p) for p in sweep_figures(model, ds, tmp_path / "s.zarr", tmp_path, [])]
    assert paths and all(p.startswith(str(tmp_path)) for p in paths)
    if name == "baseline":  # one figure a default variable, named after its store
        assert any(p.endswith("s-amp.png") for p in paths), paths


def test_blocks_run_with_older_objects_frozen_and_the_collector_handed_back():
    """While a sweep's blocks run here the objects alive before them are out of the
    collector's full passes; after, the process's collector is as it was, also after
    a block that raised; a process that froze objects itself keeps its own freeze."""
    import gc

    seen = []

    def task(item):
        return (lambda: seen.append(gc.get_freeze_count()) or item), ()

    assert gc.get_freeze_count() == 0
    driver.run_tasks([1, 2], task, lambda item, r: None, progress=False, label="t",
                     device="cpu", size=lambda item: 1)
    assert seen and min(seen) > 0 and gc.get_freeze_count() == 0

    def bad(item):
        def fail():
            raise RuntimeError("a block fails")
        return fail, ()

    with pytest.raises(RuntimeError):
        driver.run_tasks([1], bad, lambda item, r: None, progress=False, label="t",
                         device="cpu", size=lambda item: 1)
    assert gc.get_freeze_count() == 0
    gc.freeze()
    try:
        mine = gc.get_freeze_count()
        seen.clear()
        driver.run_tasks([1], task, lambda item, r: None, progress=False, label="t",
                         device="cpu", size=lambda item: 1)
        assert seen == [mine] and gc.get_freeze_count() == mine
    finally:
        gc.unfreeze()



def test_a_hold_inside_the_drivers_own_asks_the_collector_nothing(monkeypatch):
    """``run_tasks`` inside ``run_store``: the inner hold neither walks the frozen
    objects (``gc.get_freeze_count`` is O(frozen objects)) nor freezes or hands them
    back; the outer one does, after.  (The calls are counted, not the frozen objects:
    a frozen object that another thread frees, such as a test worker's, leaves the
    count.)"""
    import gc

    real = gc.get_freeze_count
    assert real() == 0
    with driver._old_objects_frozen():
        assert real() > 0
        asked = []
        with monkeypatch.context() as m:
            for name in ("get_freeze_count", "freeze", "unfreeze"):
                f = getattr(gc, name)
                m.setattr(gc, name, lambda *a, _f=f, _n=name: asked.append(_n) or _f(*a))
            with driver._old_objects_frozen():
                pass
        assert asked == [] and real() > 0
    assert real() == 0


def test_a_stores_run_holds_the_freeze_from_its_layout_to_its_finish(tmp_path):
    """A sweep into a store (``run_store``) keeps the older objects frozen for its whole
    run, the log lines before and after its blocks included (its layout, its finish),
    and hands them back after.  In a fresh process: objects of other tests that die
    while frozen would move the counts another test of this file reads."""
    import json
    import subprocess
    import sys

    code = f"""
import gc, json
from antiamp.sweeps.engine import run_sweep
seen = []
run_sweep({{"run": {{"n_instances": 1000}}, "sweep": {{"axes": {{"model": {{"rho": [0.2, 0.6]}}}},
          "plot": False}}}}, {str(tmp_path / "a")!r}, progress=False,
          log=lambda *a: seen.append(gc.get_freeze_count()))
print(json.dumps([seen, gc.get_freeze_count()]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    seen, after = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(seen) >= 1 and min(seen) > 1000 and after == 0
