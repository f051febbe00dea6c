"""No command deletes or replaces what antiamp did not write; creation is atomic."""

from limits import limit
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

from antiamp.config import ConfigError, to_config
from antiamp.output import OutputError, write_zarr_atomic
from antiamp.sweeps.engine import SweepError, run_sweep
from cli_runner import run_command


def _run(cmd, args, cwd):
    return run_command(cmd, args, cwd)


def _precious(d):
    d.mkdir(parents=True, exist_ok=True)
    (d / "thesis.tex").write_text("years of work")
    return d


def _intact(d):
    return (d / "thesis.tex").read_text() == "years of work"


@pytest.mark.parametrize("model", ["baseline", "panel"])
def test_overwrite_never_replaces_a_directory_antiamp_did_not_write(tmp_path, model):
    mine = _precious(tmp_path / "results")
    r = _run("antiamp-sweep", [f"model={model}", "sweep.axes.judge.b=[0.2,0.8]",
                               "run.n_instances=1000", f"sweep.store={mine}",
                               "sweep.overwrite=true", "hydra.run.dir=run"], tmp_path)
    assert r.returncode == 2 and "not an antiamp store" in r.stderr, r.stderr
    assert _intact(mine) and not (tmp_path / "run").exists()


@pytest.mark.parametrize("store", ["..", ".", "../.."])
def test_a_store_over_the_run_directory_or_its_parents_is_refused(tmp_path, store):
    work = _precious(tmp_path / "work")
    _precious(work / "run")
    r = _run("antiamp-sweep", ["sweep.axes.judge.b=[0.2,0.8]", "run.n_instances=1000",
                               f"sweep.store={store}", "sweep.overwrite=true",
                               "hydra.run.dir=run"], work)
    assert r.returncode == 2, r.stderr
    assert _intact(work) and _intact(work / "run")


def test_merge_never_replaces_a_foreign_directory(tmp_path):
    run_sweep({"sweep": {"axes": {"model": {"rho": [0.1, 0.3]}}, "plot": False},
               "run": {"n_instances": 1000}}, tmp_path / "a", progress=False)
    mine = _precious(tmp_path / "out")
    r = _run("antiamp-merge", ["a", "-o", "out"], tmp_path)
    assert r.returncode == 2 and "not an antiamp store" in r.stderr, r.stderr
    assert _intact(mine)
    with pytest.raises(OutputError, match="not an antiamp store"):
        write_zarr_atomic(xr.Dataset(), mine)
    assert _intact(mine)


def test_export_path_stays_inside_the_run_directory():
    with pytest.raises(ConfigError, match="export.path must stay inside the run directory"):
        to_config({"export": {"n_instances": 10, "path": "../../x.csv"}})
    to_config({"export": {"n_instances": 10, "path": "/tmp/elsewhere/x.csv"}})  # absolute: allowed


def test_a_kill_during_store_creation_leaves_nothing_a_rerun_trips_on(tmp_path):
    cfg = {"sweep": {"axes": {"model": {"rho": [0.1, 0.5]}, "judge": {"b": [0.2, 0.7]}},
                     "plot": False}, "run": {"n_instances": 5000}}
    ref = run_sweep(cfg, tmp_path / "ref", progress=False).load()
    # What a kill during creation leaves now: a temporary beside the store, never a
    # half-made store under the store's name.
    out = tmp_path / "cut"
    (out / ".sweep.zarr.creating-0badc0de").mkdir(parents=True)
    (out / ".sweep.zarr.creating-0badc0de" / ".zgroup").write_text("{")
    ds = run_sweep(cfg, out, progress=False).load()
    for v in ref.data_vars:
        assert np.array_equal(ref[v].values, ds[v].values, equal_nan=True), v
    assert not list(out.glob(".sweep.zarr.*"))


def test_overwrite_replaces_only_our_own_store_and_says_so(tmp_path):
    cfg = {"sweep": {"axes": {"model": {"rho": [0.1, 0.5]}}, "plot": False},
           "run": {"n_instances": 1000}}
    run_sweep(cfg, tmp_path, progress=False)
    other = {**cfg, "sweep": {**cfg["sweep"], "axes": {"model": {"rho": [0.2]}},
                              "overwrite": True}}
    msgs = []
    ds = run_sweep(other, tmp_path, progress=False, log=msgs.append)
    assert list(ds.rho.values) == [0.2]
    assert any("replaced" in m for m in msgs)
    with pytest.raises(SweepError, match="not an antiamp store"):
        run_sweep({**other, "sweep": {**other["sweep"], "store": str(_precious(tmp_path / "x"))}},
                  tmp_path, progress=False)
    assert _intact(tmp_path / "x")


def test_ctrl_c_says_what_was_saved_and_exits_130(tmp_path):
    import signal
    import time

    args = ["model=signals", "sweep.axes.signals.eta=[0.0,0.1,0.2,0.3,0.4,0.5,0.6,0.7]",
            "sweep.axes.model.p=[0.7,0.8,0.9]", "equilibrium.payoffs=simulated",
            "run.n_instances=3000000", "sweep.cells_per_block=1", "sweep.plot=false",
            "hydra.run.dir=run"]
    exe = shutil.which("antiamp-sweep")
    argv = [exe] if exe else [sys.executable, "-m", "antiamp.sweeps.cli"]
    # A user's Ctrl-C at a terminal: SIGINT with its default disposition.  A test run
    # launched in the background (`cmd &` in a script, nohup) inherits SIGINT ignored,
    # and the child would inherit that too; restore the default in the child.
    p = subprocess.Popen(argv + args, cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    from store_probe import cells_done

    store = tmp_path / "run" / "sweep.zarr"
    t0 = time.monotonic()
    sent = False
    while p.poll() is None and time.monotonic() - t0 < 300:
        if cells_done(store):
            p.send_signal(signal.SIGINT)
            sent = True
            break
        time.sleep(0.01)
    out, err = p.communicate(timeout=limit(300))
    # On a loaded machine this polling loop can be starved for seconds: the sweep is
    # made long (24 blocks of about half a second each here) so that the interrupt
    # lands while blocks remain, and a loop starved to the end says so.
    assert sent, "the sweep finished before the test could interrupt it: " + out[-500:]
    assert p.returncode == 130, (out, err)
    assert "interrupted" in err and "rerun the same command" in err and "Traceback" not in err
    r = _run("antiamp-sweep", args, tmp_path)
    assert r.returncode == 0 and "resuming" in r.stdout, r.stdout + r.stderr


# ----------------------------------------------------------------------------- bad requests
BAD_CONFIGS = [
    ({"run": {"n_instances": 10**15}}, r"run.n_instances must be an integer >= 1 and <= "),
    ({"run": {"n_instances": 2**64}}, "run.n_instances"),
    ({"judge": {"jury_size": 2**64}}, "judge.jury_size"),
    ({"judge": {"jury_size": 20_000}}, r"judge.jury_size must be an integer >= 1 and <= 10,001"),
    ({"run": {"n_threads": 100_000}}, "run.n_threads"),
    ({"export": {"n_instances": 10**13}}, "export.n_instances"),
    ({"model": 5}, "model must be a mapping"),
    ({"model": {"name": 3}}, "model.name"),
    ([0.1, 0.2], "a config is a dict"),
    ("rho=0.3", "a config is a dict"),
    ({"model": {"name": "equilibrium"}, "equilibrium": {"starts": 10**9}}, "equilibrium.starts"),
]


@pytest.mark.parametrize("cfg, match", BAD_CONFIGS)
def test_bad_configs_raise_config_errors_naming_the_field(cfg, match):
    import antiamp

    with pytest.raises(ConfigError, match=match):
        antiamp.simulate(cfg)


def test_numpy_values_are_welcome_in_the_api():
    import antiamp

    ds = antiamp.simulate({"model": {"rho": np.float64(0.3)}, "judge": {"b": np.float32(0.5)},
                           "run": {"n_instances": np.int64(1000)}})
    assert float(ds.amp_exact.sel(protocol="consult")) == pytest.approx(0.3)


@pytest.mark.parametrize("model", ["baseline", "panel"])
def test_numpy_axes_are_welcome_in_the_api(tmp_path, model):
    """An axis given as a NumPy array or with NumPy scalars sweeps the same values as
    plain lists (it was refused with OmegaConf's 'not a supported primitive type')."""
    import antiamp

    def sweep(axes, name):
        return antiamp.sweep({"model": {"name": model}, "run": {"n_instances": 1000},
                              "sweep": {"axes": axes, "plot": False}},
                             tmp_path / name, progress=False, log=lambda *a: None).load()

    a = sweep({"model": {"rho": np.linspace(0, 1, 3)}, "judge": {"b": [np.float64(0.2), 0.5]}},
              "numpy.zarr")
    b = sweep({"model": {"rho": [0.0, 0.5, 1.0]}, "judge": {"b": [0.2, 0.5]}}, "plain.zarr")
    assert list(a.rho.values) == [0.0, 0.5, 1.0] and list(a.b.values) == [0.2, 0.5]
    assert np.array_equal(a.amp.values, b.amp.values, equal_nan=True)


BAD_AXES = [
    ({"model": {"rho": {"linspace": [0, 1, 1e9]}}}, "num must be an integer in"),
    ({"model": {"rho": {"range": [0, 1, 1e-9]}}}, "gives 1,000,000,000 values"),
    ({"model": {"rho": {"range": [1, 0, 0.1]}}}, "gives 0 values"),
    ({"model": {"rho": {"geomspace": [0, 1, 3]}}}, "nonzero and of the same sign"),
    ({"model": {"rho": {"linspace": [0, 1, float("nan")]}}}, "each finite"),
    ({"model": {"rho": {"linspace": [0, float("inf"), 3]}}}, "each finite"),
    ({"model": {"rho": [0.1, True]}}, "value True is not a valid float"),
    ({"judge": {"jury_size": [True, 3]}}, "value True is not a valid int"),
    ({"judge": {"jury_size": [1, 1.0]}}, "repeats a value"),
    ({"model": {"rho": [0.1, "abc"]}}, "value 'abc' is not a valid float"),
    ({"model": {"rho": {"linspace": [0, 1, 8000]}}, "judge": {"b": {"linspace": [0, 1, 8000]}}},
     "the sweep has 64,000,000 cells; the limit is 50,000,000"),
]


@pytest.mark.parametrize("axes, match", BAD_AXES)
def test_bad_axes_are_refused_before_anything_is_built(axes, match):
    import time

    import antiamp

    t = time.perf_counter()
    with pytest.raises(ConfigError, match=match):
        antiamp.sweep({"sweep": {"axes": axes}})
    assert time.perf_counter() - t < limit(5)  # refused from the spec, not after laying it out


def test_bad_design_seed_is_refused():
    import antiamp

    with pytest.raises(ConfigError, match="sweep.design_seed"):
        antiamp.sweep({"sweep": {"axes": {"model": {"rho": {"uniform": [0, 1]}}},
                                 "design": "lhs", "design_seed": -1}})


@pytest.mark.parametrize("args, msg", [
    (["-m", "model.rho=0.2,1.7", "sweep.axes.judge.b=[0.2,0.8]"], "job model.rho=1.7"),
    (["-m", "judge=tiebreak,logit", "sweep=amp_gap"], "sweep=amp_gap pins judge.kind"),
    (["executor=distributed", "executor.address=not-an-address",
      "sweep.axes.judge.b=[0.2]"], "executor.address must look like tcp://host:port"),
    (["executor=distributed", "executor.address=tcp://127.0.0.1:1",
      "sweep.axes.judge.b=[0.2]"], "no dask scheduler answers"),
    (["run.figure=2", "sweep.axes.judge.b=[0.2]"], "run.figure must be true or false"),
])
def test_bad_jobs_executors_and_flags_exit_2_before_any_job_runs(tmp_path, args, msg):
    import time

    t = time.perf_counter()
    r = _run("antiamp-sweep", args + ["run.n_instances=1000", "hydra.run.dir=run",
                                      "hydra.sweep.dir=multi"], tmp_path)
    assert r.returncode == 2 and msg in r.stderr, r.stderr
    assert not (tmp_path / "run").exists() and not (tmp_path / "multi").exists()
    assert time.perf_counter() - t < limit(60)


def test_slurm_without_sbatch_is_refused_at_once(tmp_path):
    # A PATH without SLURM's commands (the interpreter's own directory only).
    env = {**os.environ, "PATH": os.path.dirname(sys.executable)}
    r = subprocess.run([sys.executable, "-m", "antiamp.sweeps.cli", "executor=slurm",
                        "sweep.axes.judge.b=[0.2]", "hydra.run.dir=run"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=limit(600), env=env)
    assert r.returncode == 2 and "sbatch" in r.stderr, r.stderr
    assert not (tmp_path / "run").exists()


def test_unknown_plot_vars_are_refused_before_the_sweep(tmp_path):
    r = _run("antiamp-sweep", ["sweep.axes.judge.b=[0.2]", "sweep.plot_vars=[nope]",
                               "run.n_instances=1000", "hydra.run.dir=run"], tmp_path)
    assert r.returncode == 2 and "sweep.plot_vars: 'nope'" in r.stderr, r.stderr
    assert not (tmp_path / "run").exists()


def test_an_incomplete_store_is_not_plotted_unless_asked(tmp_path):
    import zarr

    run_sweep({"sweep": {"axes": {"model": {"rho": [0.1, 0.3]}}, "plot": False},
               "run": {"n_instances": 1000}}, tmp_path, progress=False)
    zarr.open_group(str(tmp_path / "sweep.zarr"), mode="r+").attrs["complete"] = 0
    zarr.consolidate_metadata(str(tmp_path / "sweep.zarr"))
    r = run_command("antiamp-plot", ["sweep.zarr", "--out", "figs"], tmp_path)
    assert r.returncode == 2 and "not complete" in r.stderr, r.stderr
    assert not (tmp_path / "figs").exists()
    r = run_command("antiamp-plot", ["sweep.zarr", "--out", "figs", "--allow-incomplete"],
                    tmp_path)
    assert r.returncode == 0, r.stderr


def test_a_store_written_through_memory_holds_the_bytes_zarr_writes(tmp_path):
    """``to_zarr_files`` (encode in memory, then write file by file) must leave the very
    files that ``to_zarr`` on the directory leaves, and never write into an existing one."""
    from antiamp import simulate
    from antiamp.output import to_zarr_files

    ds = simulate({"run": {"n_instances": 3000}, "model": {"rho": 0.3}})
    ds.to_zarr(tmp_path / "direct.zarr", mode="w-", consolidated=True, zarr_format=2)
    to_zarr_files(ds, tmp_path / "memory.zarr", consolidated=True)

    def files(root):
        return {str(f.relative_to(root)): f.read_bytes() for f in root.rglob("*") if f.is_file()}

    direct, memory = files(tmp_path / "direct.zarr"), files(tmp_path / "memory.zarr")
    assert len(direct) > 100 and direct == memory
    xr.testing.assert_identical(xr.open_zarr(tmp_path / "memory.zarr").load(), ds)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "thesis.tex").write_text("years of work")
    with pytest.raises(FileExistsError):
        to_zarr_files(ds, tmp_path / "taken", consolidated=True)
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["thesis.tex"]
