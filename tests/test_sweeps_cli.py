"""The antiamp-sweep / antiamp-plot / antiamp-merge commands."""

from limits import limit
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import xarray as xr
import zarr

from antiamp.sweeps.engine import run_sweep
from cli_runner import run_command


def _cmd(name):
    exe = shutil.which(name)
    mod = {"antiamp-sweep": "antiamp.sweeps.cli", "antiamp-plot": "antiamp.sweeps.plot",
           "antiamp-merge": "antiamp.sweeps.merge"}[name]
    return [exe] if exe else [sys.executable, "-m", mod]


def run(name, args, cwd, **kw):
    """The command through :mod:`cli_runner`; a call with its own environment in a
    process of its own."""
    if kw:
        return subprocess.run(_cmd(name) + args, cwd=cwd, capture_output=True, text=True,
                              timeout=limit(600), **kw)
    return run_command(name, args, cwd)


def test_adhoc_sweep_from_the_command_line(tmp_path):
    r = run("antiamp-sweep", ["sweep.axes.model.rho=[0.1,0.4,0.8]",
                              "sweep.axes.judge.b=[0.2,0.5,0.9]", "run.n_instances=200000"],
            tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "outputs" / "sweeps" / "adhoc-baseline"
    ds = xr.open_zarr(out / "sweep.zarr")
    assert dict(ds.sizes) == {"rho": 3, "b": 3, "protocol": 2, "transcript_class": 32}
    for f in ("amp.png", "amp.pdf", "amp_gap.png", "welfare_diff.pdf"):
        assert (out / f).stat().st_size > 1000
    # what the command printed is kept in the job's log
    logged = (out / "antiamp-sweep.log").read_text()
    assert "wrote" in logged and logged.strip() in r.stdout.strip()
    # Same command again: already complete, nothing recomputed, same numbers.
    before = ds.load()
    r2 = run("antiamp-sweep", ["sweep.axes.model.rho=[0.1,0.4,0.8]",
                               "sweep.axes.judge.b=[0.2,0.5,0.9]", "run.n_instances=200000"],
             tmp_path)
    assert r2.returncode == 0, r2.stderr
    assert xr.open_zarr(out / "sweep.zarr").load().identical(before)


def test_two_stores_of_one_run_directory_keep_figures_of_their_own(tmp_path):
    """Ad hoc sweeps share ``outputs/sweeps/adhoc-<model>/``: a store of another name
    (``sweep.store=a.zarr``) writes ``a-amp.png``, not over the other's figures."""
    out = tmp_path / "outputs" / "sweeps" / "adhoc-baseline"
    made = {}
    for store, rho in (("a.zarr", "[0.1,0.8]"), ("b.zarr", "[0.3,0.5]")):
        r = run("antiamp-sweep", [f"sweep.axes.model.rho={rho}", "sweep.axes.judge.b=[0.2,0.9]",
                                  "run.n_instances=20000", f"sweep.store={store}"], tmp_path)
        assert r.returncode == 0, r.stderr
        stem = store[:-5]
        made[stem] = (out / f"{stem}-amp.png").read_bytes()
        assert f"{stem}-amp.png" in r.stdout
    assert made["a"] != made["b"]
    assert not (out / "amp.png").exists()


@pytest.mark.parametrize("args,msg", [
    (["sweep.axes.model.rhoo=[0.1]"], "unknown field"),
    (["sweep.axes.model.rho=[]"], "is empty"),
    (["sweep.axes.model.rho=[0.5,2]"], "model.rho must lie in [0, 1]"),
    (["sweep=nonesuch"], "sweep=nonesuch: no such named sweep"),
    ([], "sweep.axes is empty"),
])
def test_bad_sweeps_exit_2_and_write_nothing(tmp_path, args, msg):
    r = run("antiamp-sweep", args, tmp_path)
    assert r.returncode == 2
    assert msg in r.stderr
    assert not (tmp_path / "outputs").exists()


def test_different_sweep_into_existing_store_is_refused_untouched(tmp_path):
    ok = run("antiamp-sweep", ["sweep.axes.model.rho=[0.1,0.4]", "run.n_instances=10000",
                               "sweep.plot=false"], tmp_path)
    assert ok.returncode == 0, ok.stderr
    store = tmp_path / "outputs" / "sweeps" / "adhoc-baseline" / "sweep.zarr"
    before = xr.open_zarr(store).load()
    bad = run("antiamp-sweep", ["sweep.axes.model.rho=[0.2]", "run.n_instances=10000"],
              tmp_path)
    assert bad.returncode == 2 and "different sweep" in bad.stderr
    assert xr.open_zarr(store).load().identical(before)


@pytest.mark.parametrize("name", ["amp_gap", "logit_gap", "jury", "acc_tradeoff",
                                  "welfare_region"])
def test_named_sweeps_compose_and_validate(name):
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    import antiamp.sweeps.cli

    antiamp.sweeps.cli.setup()  # registers the schema with Hydra
    from antiamp.sweeps.spec import make_plan

    with initialize_config_module(config_module="antiamp.conf", version_base="1.3"):
        cfg = compose(config_name="sweep_config", overrides=[f"sweep={name}"])
    plan = make_plan(OmegaConf.to_container(cfg, resolve=True))
    assert plan.cfg.sweep.name == name and plan.n_cells > 10


def test_killed_sweep_resumes_to_an_identical_store(tmp_path):
    args = ["sweep.axes.model.rho={linspace:[0,1,10]}", "sweep.axes.judge.b=[0.1,0.5,0.9,1.0]",
            "run.n_instances=2000000", "sweep.cells_per_block=1", "sweep.plot=false",
            "hydra.run.dir=run"]
    proc = subprocess.Popen(_cmd("antiamp-sweep") + args, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    store = tmp_path / "run" / "sweep.zarr"
    killed = False
    deadline = time.time() + 300
    while proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
        try:
            done = int(np.asarray(zarr.open_group(str(store), mode="r")["cell_done"][...]).sum())
        except Exception:
            continue
        if 2 <= done <= 30:
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
            break
    proc.wait(60)
    assert killed, "the sweep finished before it could be killed"
    partial = int(np.asarray(zarr.open_group(str(store), mode="r")["cell_done"][...]).sum())
    assert partial < 40
    r = run("antiamp-sweep", args, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "resuming" in r.stdout
    resumed = xr.open_zarr(store).load()
    ref_cfg = {"sweep": {"axes": {"model": {"rho": {"linspace": [0, 1, 10]}},
                                  "judge": {"b": [0.1, 0.5, 0.9, 1.0]}},
                         "cells_per_block": 1, "plot": False},
               "run": {"n_instances": 2_000_000}}
    ref = run_sweep(ref_cfg, tmp_path / "ref", progress=False).load()
    for v in ref.data_vars:
        assert np.array_equal(ref[v].values, resumed[v].values, equal_nan=True), v


# The basic launcher in the default tier; joblib's and submitit's process pools (the
# same multirun, merge and store) in the long tier: 21 s of the suite's 5 minutes.
@pytest.mark.parametrize("launcher", ["basic", pytest.param("joblib", marks=pytest.mark.slow),
                                      pytest.param("submitit_local", marks=pytest.mark.slow)])
def test_multirun_merge_and_plot(tmp_path, launcher):
    r = run("antiamp-sweep", ["-m", f"hydra/launcher={launcher}", "judge=tiebreak,logit",
                              "sweep.axes.model.rho=[0.2,0.6]", "sweep.axes.judge.mu=[0.0,0.5]",
                              "run.n_instances=20000", "sweep.plot=false", "hydra.sweep.dir=mr"],
            tmp_path)
    assert r.returncode == 0, r.stderr
    merged = xr.open_zarr(tmp_path / "mr" / "merged.zarr")
    assert dict(merged.sizes)["kind"] == 2 and set(merged.kind.values) == {"tiebreak", "logit"}
    assert {"rho", "mu", "protocol"} <= set(merged.amp.dims)
    one = xr.open_zarr(tmp_path / "mr" / "0" / "sweep.zarr")
    assert np.array_equal(merged.amp.sel(kind=str(one.attrs["config"]).split("kind: ")[1]
                                         .split()[0]).values, one.amp.values)
    if launcher != "basic":  # the steps below read only the stores: once is enough
        return
    # The documented merge step gives the same store.
    r = run("antiamp-merge", ["mr", "-o", "again.zarr"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert xr.open_zarr(tmp_path / "again.zarr").amp.equals(merged.amp)
    # Plots: facets beyond two axes, PNG and PDF.
    r = run("antiamp-plot", ["mr/merged.zarr", "--vars", "amp", "acc_gap", "--out", "figs"],
            tmp_path)
    assert r.returncode == 0, r.stderr
    for f in ("amp.png", "amp.pdf", "acc_gap.png", "acc_gap.pdf"):
        assert (tmp_path / "figs" / f).stat().st_size > 1000


def test_plot_one_axis_and_bad_variable(tmp_path):
    run_sweep({"sweep": {"axes": {"model": {"rho": [0.1, 0.5, 0.9]}}, "plot": False},
               "run": {"n_instances": 10000}}, tmp_path, progress=False)
    r = run("antiamp-plot", ["sweep.zarr", "--formats", "png"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "amp.png").exists() and not (tmp_path / "amp.pdf").exists()
    r = run("antiamp-plot", ["sweep.zarr", "--vars", "nonesuch"], tmp_path)
    assert r.returncode != 0 and "no variable 'nonesuch'" in r.stderr


def test_merging_one_store_says_it_is_a_copy(tmp_path):
    r = run("antiamp-sweep", ["sweep.axes.model.rho=[0.1,0.8]", "run.n_instances=20000",
                              "sweep.plot=false"], tmp_path)
    assert r.returncode == 0, r.stderr
    store = tmp_path / "outputs" / "sweeps" / "adhoc-baseline" / "sweep.zarr"
    r = run("antiamp-merge", [str(store), "-o", str(tmp_path / "m.zarr")], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "copied 1 store (one store: nothing to merge along)" in r.stdout, r.stdout
    assert xr.open_zarr(tmp_path / "m.zarr").rho.size == 2
