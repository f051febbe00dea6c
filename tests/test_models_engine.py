"""Every registered model on the one engine: distributed = local, cell = grid cell,
resume after kill -9 = uninterrupted, named sweeps that pin a choice refuse it."""

from limits import limit
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import xarray as xr
import yaml

import antiamp
from antiamp.config import ConfigError
from antiamp.output import write_zarr_atomic
from antiamp.sweeps.blocks import partial_dir, run_grid, run_grid_store
from antiamp.registry import builtin_names
from antiamp.testing import default_grids, same
from cli_runner import run_command
from store_probe import cells_done

N = 20_000
SIM = {"payoffs": "simulated"}

#: The first declared grid of every built-in model (``antiamp.models.<name>.config.GRIDS``:
#: simulated payoffs where the model has them, so the kernels, their streams and
#: common random numbers are exercised).
GRIDS = {name: default_grids(name)[0] for name in builtin_names()}

VOLATILE = ("created", "run_seconds", "solve_seconds", "fingerprint")


def assert_same(a: xr.Dataset, b: xr.Dataset):
    """Bit-identical values and coordinates (a store's per-block checksums are its own
    bookkeeping, tested in test_integrity): antiamp.testing.same, as check_model uses it."""
    diffs = same(a, b)
    assert not diffs, diffs


def test_registry_lists_every_model():
    assert set(GRIDS) == set(builtin_names()) <= set(antiamp.models.names())
    for name in GRIDS:
        m = antiamp.models.get(name)
        assert m.name == name and m.title
    with pytest.raises(ConfigError, match="model.name must be one of"):
        antiamp.models.get("telepathy")


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=":0") as lc, Client(lc) as client:
        yield client


@pytest.mark.parametrize("name", sorted(GRIDS))
def test_grid_on_two_workers_is_bit_identical_to_the_local_run(name, cluster, tmp_path):
    cfg = {**GRIDS[name], "sweep": {**GRIDS[name]["sweep"], "cells_per_block": 2}}
    local = antiamp.sweep(cfg, tmp_path / "local.zarr", progress=False, log=lambda *a: None).load()
    dist = antiamp.sweep(cfg, tmp_path / "dist.zarr", client=cluster, progress=False,
                         log=lambda *a: None).load()
    assert_same(local, dist)
    assert local.attrs.get("antiamp_version") == antiamp.__version__
    assert local.attrs["model"] == name
    # every store's per-cell checksums
    assert np.array_equal(local.cell_digest.values, dist.cell_digest.values)
    assert bool(local.cell_done.all())
    from antiamp.registry import get

    if get(name).fused_grid is None:
        # Block size changes neither a value nor a padding: one block in memory.
        assert_same(local, run_grid(cfg, progress=False))


def test_sections_the_model_does_not_read_are_refused():
    with pytest.raises(ConfigError, match="does not read signals"):
        antiamp.simulate({"model": {"name": "panel"}, "signals": {"eta": 0.3}})
    with pytest.raises(ConfigError, match="sweep.axes.portfolio: model signals does not read"):
        antiamp.sweep({"model": {"name": "signals"},
                       "sweep": {"axes": {"portfolio": {"budget": [2, 3]}}}})
    with pytest.raises(ConfigError, match="model is not an axis"):
        antiamp.sweep({"sweep": {"axes": {"model": {"name": ["baseline", "panel"]}}}})


# ----------------------------------------------------------------------------- resume
KILL_GRID = {"model": {"name": "signals", "c_e": 0.4}, "judge": {"b": 0.7},
             "signals": {"phi": 0.3}, "equilibrium": SIM, "run": {"n_instances": 200_000},
             "sweep": {"axes": {"signals": {"eta": [round(0.1 * k, 3) for k in range(9)]},
                                "model": {"p": [0.7, 0.8, 0.9]}},
                       "cells_per_block": 1}}

_SCRIPT = """
import sys, antiamp
cfg = {cfg!r}
antiamp.sweep(cfg, sys.argv[1], progress=False, log=lambda *a: None)
"""


def _start(store, tmp_path):
    script = tmp_path / "run.py"
    script.write_text(_SCRIPT.format(cfg=KILL_GRID))
    return subprocess.Popen([sys.executable, str(script), str(store)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _kill_when(p, ready, timeout=300.0) -> bool:
    """SIGKILL ``p`` as soon as ``ready()``; False if it finished first.  Its pipes
    are closed on return (``with p``)."""
    with p:
        t0 = time.monotonic()
        timeout = limit(timeout) or float("inf")  # scaled by the load
        while p.poll() is None and time.monotonic() - t0 < timeout:
            if ready():
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
                return True
            time.sleep(0.005)
        p.wait()
        assert p.returncode == 0, p.stderr.read().decode()
        return False


def test_kill_9_at_random_moments_then_rerun_is_bit_identical(tmp_path):
    ref = run_grid(KILL_GRID, progress=False)
    store = tmp_path / "grid.zarr"
    n_blocks = 27

    def creating():
        return store.exists() or any(tmp_path.glob(f".{store.name}.creating-*"))

    rng = np.random.default_rng(12)
    moments = [lambda: True, creating]  # during start-up; as the store is laid out
    moments += [lambda k=k: cells_done(store) >= k
                for k in sorted(rng.choice(n_blocks - 1, 4) + 1)]
    moments += [lambda: cells_done(store) >= n_blocks]  # while the store is finished
    killed = [_kill_when(_start(store, tmp_path), ready) for ready in moments]
    assert sum(killed) >= 5
    assert cells_done(store) > 0
    p = _start(store, tmp_path)
    out, err = p.communicate(timeout=limit(600))
    assert p.returncode == 0, err.decode()
    assert not partial_dir(store).exists()
    assert [q.name for q in tmp_path.iterdir() if q.name.startswith(".")] == []
    done = xr.open_zarr(store)
    assert done.attrs["complete"] == 1 and bool(done.cell_done.all())
    assert_same(ref, done.load())


def test_a_damaged_block_of_an_interrupted_run_is_recomputed(tmp_path):
    cfg = {**KILL_GRID, "run": {"n_instances": 20_000}}
    store = tmp_path / "g.zarr"
    ref = run_grid(cfg, progress=False)
    # An interrupted run: stop after three blocks.
    from antiamp.sweeps import blocks

    calls = {"n": 0}
    real = blocks.run_block

    def dying(*a, **k):
        calls["n"] += 1
        if calls["n"] > 3:
            raise KeyboardInterrupt
        return real(*a, **k)

    blocks.run_block = dying
    try:
        with pytest.raises(KeyboardInterrupt):
            run_grid_store(cfg, store, progress=False, log=lambda *a: None)
    finally:
        blocks.run_block = real
    import zarr

    assert cells_done(store) == 3 and zarr.open_group(str(store)).attrs["complete"] == 0
    # A chunk of a finished block cut short (a torn write), and one altered.
    victim = store / "amp" / "0.1.0.0"
    victim.write_bytes(victim.read_bytes()[:20])
    zarr.open_group(str(store), mode="r+")["acc"][0, 2, 0, 0] = 0.5
    msgs = []
    ds = run_grid_store(cfg, store, progress=False, log=msgs.append).load()
    assert any("resuming" in m for m in msgs)
    damaged = [m for m in msgs if m.startswith("damaged block")]
    assert len(damaged) == 2, msgs
    assert damaged[0].startswith("damaged block eta[0:1], p[1:2]: values ")  # the torn chunk
    assert damaged[0].endswith("; recomputed")
    assert damaged[1] == ("damaged block eta[0:1], p[2:3]: values do not match the cells' "
                          "checksums; recomputed")
    assert_same(ref, ds)


def test_a_store_of_something_else_is_never_replaced(tmp_path):
    cfg = {**GRIDS["panel"], "equilibrium": {"payoffs": "exact"}}
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "keep.txt").write_text("precious")
    from antiamp.sweeps.blocks import EngineError

    for overwrite in (False, True):
        with pytest.raises(EngineError, match="not an antiamp store"):
            run_grid_store(cfg, mine, progress=False, overwrite=overwrite, log=lambda *a: None)
    assert (mine / "keep.txt").read_text() == "precious"
    # A finished store of ours is reused as is, and a different run into it is refused.
    store = tmp_path / "s.zarr"
    run_grid_store(cfg, store, progress=False, log=lambda *a: None)
    msgs = []
    run_grid_store(cfg, store, progress=False, log=msgs.append)
    assert any("complete" in m for m in msgs)
    other = {**cfg, "judge": {"b": 0.4}}
    with pytest.raises(EngineError, match="different run"):
        run_grid_store(other, store, progress=False, log=lambda *a: None)
    # A store of ours of another kind (a baseline cell) is named as such, not as
    # "not an antiamp store", and sweep.overwrite=true may replace it.
    cell = tmp_path / "cell.zarr"
    write_zarr_atomic(antiamp.simulate({"run": {"n_instances": 1000, "progress": False}}), cell)
    with pytest.raises(EngineError, match="model=baseline") as err:
        run_grid_store(cfg, cell, progress=False, log=lambda *a: None)
    assert "not an antiamp store" not in str(err.value)
    run_grid_store(cfg, cell, progress=False, overwrite=True, log=lambda *a: None)
    assert xr.open_zarr(cell).attrs["model"] == "panel"


# ----------------------------------------------------------------------------- commands
def _run(cmd, args, cwd):
    return run_command(cmd, args, cwd)


def test_every_model_runs_from_the_two_commands(tmp_path):
    r = _run("antiamp", ["model=portfolio", "portfolio.c_item=0.1", "hydra.run.dir=one"],
             tmp_path)
    assert r.returncode == 0, r.stderr
    assert "rho(B)" in r.stdout
    ds = xr.open_zarr(tmp_path / "one" / "results.zarr")
    assert ds.attrs["model"] == "portfolio" and "portfolio:" in ds.attrs["config"]
    assert ds.amp.attrs["ancillary_variables"] == "amp_se" if "amp_se" in ds else True
    r = _run("antiamp-sweep", ["sweep=panel_hurts", "sweep.axes.panel.size=[1,5]",
                               "hydra.run.dir=grid"], tmp_path)
    assert r.returncode == 0, r.stderr
    ds = xr.open_zarr(tmp_path / "grid" / "sweep.zarr")
    assert ds.attrs["model"] == "panel" and ds.amp.dims == ("size", "rule", "protocol")
    assert (tmp_path / "grid" / "sweep.png").stat().st_size > 1000
    # Rerunning the same command finds the finished store.
    r = _run("antiamp-sweep", ["sweep=panel_hurts", "sweep.axes.panel.size=[1,5]",
                               "hydra.run.dir=grid"], tmp_path)
    assert r.returncode == 0 and "complete" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("args, msg", [
    (["sweep=amp_gap", "judge=logit"], "sweep=amp_gap pins judge.kind='tiebreak'"),
    (["sweep=diversity", "model=panel"], "sweep=diversity pins model.name='signals'"),
    (["model=panel", "sweep.axes.signals.eta=[0.1,0.2]"], "does not read signals"),
    (["model=signals", "sweep.axes.signals.phi=[0.5,1.5]"], "signals.phi"),
    (["model=nope", "sweep.axes.model.rho=[0.1]"], "model"),
])
def test_bad_sweeps_exit_2_before_any_output(tmp_path, args, msg):
    r = _run("antiamp-sweep", args + ["hydra.run.dir=out"], tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert msg in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_a_multirun_of_a_model_grid_merges_along_the_varied_field(tmp_path):
    r = _run("antiamp-sweep", ["-m", "model=signals", "signals.phi=0.3,1.0",
                               "sweep.axes.signals.eta=[0.0,0.3]", "model.c_e=0.4",
                               "sweep.plot=false", "hydra.sweep.dir=mr"], tmp_path)
    assert r.returncode == 0, r.stderr
    merged = xr.open_zarr(tmp_path / "mr" / "merged.zarr")
    assert merged.attrs["model"] == "signals" and list(merged.phi.values) == [0.3, 1.0]
    assert {"phi", "eta", "protocol", "equilibrium"} <= set(merged.amp.dims)
    one = xr.open_zarr(tmp_path / "mr" / "0" / "sweep.zarr")
    phi0 = yaml.safe_load(one.attrs["config"])["signals"]["phi"]
    assert np.array_equal(merged.amp.sel(phi=phi0).values, one.amp.values, equal_nan=True)


def test_in_memory_baseline_grid_equals_its_cell_runs():
    """The baseline's in-memory grid stacks each cell's arrays (no Dataset per cell):
    every variable of every cell equals antiamp.simulate of that cell, bit for bit."""
    cfg = {"model": {"name": "baseline"}, "judge": {"kind": "logit"},
           "run": {"n_instances": 5000, "progress": False},
           "sweep": {"axes": {"judge": {"jury_size": [1, 3]}, "model": {"rho": [0.1, 0.6]}}}}
    grid = antiamp.sweep(cfg)
    for n in (1, 3):
        for rho in (0.1, 0.6):
            cell = antiamp.simulate({"judge": {"kind": "logit", "jury_size": n},
                                     "model": {"rho": rho}, "run": {"n_instances": 5000}})
            g = grid.sel(jury_size=n, rho=rho)
            assert set(cell.data_vars) == set(g.data_vars)
            for v in cell.data_vars:
                assert np.array_equal(cell[v].values, g[v].values, equal_nan=True), v
                assert cell[v].attrs == g[v].attrs, v


@pytest.mark.parametrize("name, before", [("mediation", {10_000: 320, 200_000: 16}),
                                          ("colmad", {10_000: 170, 100_000: 170, 10**6: 130}),
                                          ("redeliberation", {10_000: 160, 200_000: 8,
                                                              10**6: 8})])
def test_blocks_by_what_a_cell_costs(name, before):
    """Cells of milliseconds whatever their instances (mediation's, colmad's and
    redeliberation's exact values and quadratures) run in blocks of about 6 s of their cells
    (``registry.blocks_by_cost``): larger than the blocks by instances they had, fewer
    cells as a cell's instances grow, within 16 and 1,024; the plan takes the default."""
    from antiamp.registry import get, to_model_config
    from antiamp.sweeps.spec import plan_grid

    model = get(name)

    def block(n):
        _, base = to_model_config({"model": {"name": name}, "run": {"n_instances": n}})
        return model.cells_per_block(base)

    sizes = [block(n) for n in (100, 10_000, 100_000, 200_000, 10**6, 10**7, 10**9)]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > sizes[-1]
    assert all(16 <= b <= 1024 for b in sizes) and sizes[-1] == 16
    for n, old in before.items():
        assert block(n) > old
    plan = plan_grid({"model": {"name": name}, "run": {"n_instances": 10_000},
                      "sweep": {"axes": {"model": {"rho": {"linspace": [0.1, 0.9, 2000]}}}}})
    assert plan.cells_per_block == block(10_000)


def test_messages_portfolio_and_compare_blocks_by_what_a_cell_costs():
    """Cells of a few milliseconds whatever their instances (exact exogenous messages:
    quadratures; exact portfolios: two small linear programmes) run in large blocks, so
    that a block's own cost is small beside its cells'; strategic rhetoric, simulated
    portfolio payoffs and large budgets in smaller ones; simulated messages and compare by
    a cell's instances.  The named sweeps (rhetoric, rhetoric_strategic: 52 cells;
    portfolio_budget: 33, portfolio_logit: 48; compare_rho: 7 at 10^5 instances) still
    fit one block each, as before: their stores' chunks are unchanged."""
    from antiamp.registry import get, to_model_config
    from antiamp.sweeps.spec import plan_grid

    def block(name, **cfg):
        _, base = to_model_config({"model": {"name": name}, **cfg})
        return get(name).cells_per_block(base)

    logit = {"kind": "logit"}
    sim = {"payoffs": "simulated"}
    assert block("messages", judge=logit) == 1024
    assert block("messages", judge=logit, messages={"mode": "strategic"}) == 64
    assert block("messages", judge=logit, equilibrium=sim, run={"n_instances": 10**5}) == 64
    assert block("messages", judge=logit, equilibrium=sim, run={"n_instances": 10**4}) == 640
    assert block("portfolio") == 512
    assert block("portfolio", portfolio={"budget": 12}) == 512 * 16 // 13 ** 2 > 33
    assert block("portfolio", portfolio={"budget": 64, "tau": 1}) == 8
    assert block("portfolio", equilibrium=sim) == 64
    assert block("compare", judge=logit, run={"n_instances": 10**6}) == 8
    assert block("compare", judge=logit, run={"n_instances": 10**5}) == 12 > 7
    assert block("compare", judge=logit, run={"n_instances": 10**4}) == 128
    assert block("compare", judge=logit, run={"n_instances": 100}) == 128
    plan = plan_grid({"model": {"name": "portfolio"},
                      "sweep": {"axes": {"model": {"p": {"linspace": [0.55, 0.95, 2000]}}}}})
    assert plan.cells_per_block == 512  # the plan takes the model's default


def test_loop_blocks_grow_with_the_exact_recursion_and_fewer_cases(tmp_path):
    """The loop's default block: 8 cells of default paths (as before), 512 of the exact
    recursion alone (about 20 ms a cell), more as a cell's cases fall, within 1,024 cells
    and 64 MiB of per-path series; a grid's values do not depend on its blocks."""
    import xarray as xr

    from antiamp.registry import get, to_model_config
    from antiamp.sweeps.engine import run_sweep

    model = get("loop")

    def block(loop):
        _, base = to_model_config({"model": {"name": "loop"}, "loop": loop})
        return model.cells_per_block(base)

    assert block({}) == 8 and block({"learner": "majority"}) == 8
    assert block({"paths": 0}) == 512
    assert block({"paths": 100, "batch": 500}) == 32  # a quarter of the default's cases
    assert block({"paths": 10, "rounds": 10, "batch": 100}) == 1024
    assert block({"paths": 20_000, "rounds": 40, "batch": 1}) == 8  # by memory, not work
    cfg = {"model": {"name": "loop"}, "loop": {"paths": 0},
           "sweep": {"axes": {"judge": {"b": {"linspace": [0.0, 1.0, 20]}}}, "plot": False}}
    quiet = {"progress": False, "log": lambda *a: None}
    small = run_sweep({**cfg, "sweep": {**cfg["sweep"], "cells_per_block": 3}},
                      tmp_path / "a", **quiet)
    big = run_sweep(cfg, tmp_path / "b", **quiet)
    assert big.attrs["cells_per_block"] == 20  # the whole grid in one block
    xr.testing.assert_equal(small.load(), big.load())
