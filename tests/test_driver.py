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


def test_a_run_keeps_the_objects_alive_before_it_out_of_full_collections(tmp_path):
    """``driver.long_lived_frozen``: during a sweep (a model's block, here) the objects
    alive before it are frozen out of the cyclic collector's reach, and given back
    after; a process that froze objects itself keeps them frozen, its count unchanged."""
    import gc

    seen = []
    assert gc.get_freeze_count() == 0
    with driver.long_lived_frozen():
        seen.append(gc.get_freeze_count())
    assert seen[0] > 1000 and gc.get_freeze_count() == 0
    # inside a real sweep: the frozen count seen by the run's progress callback
    counts = []
    run_sweep({"run": {"n_instances": 1000}, "sweep": {
        "axes": {"model": {"rho": [0.2, 0.6]}}, "plot": False}}, tmp_path / "a",
        progress=False, log=lambda *a: counts.append(gc.get_freeze_count()))
    assert counts and max(counts) > 1000 and gc.get_freeze_count() == 0
    # a process's own freeze is left as it is
    gc.freeze()
    try:
        own = gc.get_freeze_count()
        with driver.long_lived_frozen():
            assert gc.get_freeze_count() == own
        assert gc.get_freeze_count() == own
    finally:
        gc.unfreeze()
