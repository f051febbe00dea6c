"""The installed ``antiamp`` command: table, Zarr store and figure in the Hydra run dir."""

from limits import limit
import shutil
import subprocess
import sys

import pytest
import xarray as xr
import yaml

import antiamp as sim


def _cli(args, cwd):
    exe = shutil.which("antiamp")
    cmd = [exe] if exe else [sys.executable, "-m", "antiamp.cli"]
    return subprocess.run(cmd + args, cwd=cwd, capture_output=True, text=True, timeout=limit(300))


def test_cli_defaults_and_overrides(tmp_path):
    args = ["model.rho=0.4", "model.p=0.7", "judge=logit", "judge.kappa=2", "judge.lam=1.5",
            "judge.mu=0.3", "run.n_instances=200000", "run.seed=7", "hydra.run.dir=out/x"]
    r = _cli(args, tmp_path)
    assert r.returncode == 0, r.stderr
    for name in ("amp", "acc", "fwc", "tie_rate", "welfare", "rho_eq_P", "b_hat", "amp_gap"):
        assert name in r.stdout
    run_dir = tmp_path / "out" / "x"
    assert (run_dir / "results.png").stat().st_size > 10_000
    # What the terminal showed is saved; with a logit judge the tie-break judge's
    # closed forms of the contrasts are not printed beside other exact values.
    table = (run_dir / "results.txt").read_text()
    assert table.strip() and table.strip() in r.stdout
    assert "seed: rho" not in table and "{" not in table
    # ... and so is everything printed, in the job's log (Hydra's antiamp.log)
    logged = (run_dir / "antiamp.log").read_text()
    assert table.strip() in logged and "wrote" in logged and logged.strip() in r.stdout.strip()
    ds = xr.open_zarr(run_dir / "results.zarr")
    assert list(ds.protocol.values) == ["consult", "debate"]
    for name in ("amp", "acc", "fwc", "tie_rate", "welfare"):
        assert f"{name}_se" in ds and f"{name}_exact" in ds
        assert ds[name].attrs["long_name"] and "units" in ds[name].attrs
    assert ds.attrs["seed"] == 7 and ds.attrs["antiamp_version"] == sim.__version__
    cfg = yaml.safe_load(ds.attrs["config"])
    assert cfg["model"]["rho"] == 0.4 and cfg["judge"]["kind"] == "logit"
    assert cfg["judge"]["lam"] == 1.5 and cfg["run"]["n_instances"] == 200000
    # The same numbers come out of the Python API.
    api = sim.simulate({**cfg, "run": {**cfg["run"], "progress": False}})
    assert float(api.amp.values[1]) == float(ds.amp.values[1])


def test_cli_default_run_from_any_directory(tmp_path):
    r = _cli(["run.n_instances=100000", "run.figure=false"], tmp_path)
    assert r.returncode == 0, r.stderr
    stores = list((tmp_path / "outputs").rglob("results.zarr"))
    assert len(stores) == 1
    ds = xr.open_zarr(stores[0])
    assert ds.attrs["judge"] == "tiebreak"
    th = sim.theory()
    assert float(ds.amp_exact.values[0]) == pytest.approx(float(th.amp.values[0]))


@pytest.mark.parametrize("arg", ["sweep=amp_gap", "+sweep=amp_gap", "sweep.axes.model.rho=[0.1]",
                                 "executor=slurm"])
def test_a_grid_asked_of_the_cell_command_points_to_antiamp_sweep(tmp_path, arg):
    r = _cli([arg, "hydra.run.dir=run"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert "antiamp runs one cell" in r.stderr and "antiamp-sweep" in r.stderr, r.stderr
    assert not (tmp_path / "run").exists()


def test_no_config_file_sets_hydra_mode():
    """A plain single run answers Hydra's mode query itself (``cli._mode_known``): sound
    only while no config file of the package sets ``hydra.mode``."""
    from importlib.resources import files

    def walk(d):
        for p in d.iterdir():
            if p.is_dir():
                yield from walk(p)
            elif p.name.endswith(".yaml"):
                yield p

    found = list(walk(files("antiamp.conf")))
    assert len(found) > 20
    for p in found:
        cfg = yaml.safe_load(p.read_text()) or {}
        assert "mode" not in (cfg.get("hydra") or {}), p.name
        assert "hydra.mode" not in p.read_text(), p.name


@pytest.mark.parametrize("extra, composes", [([], 1), (["hydra.mode=RUN"], 3),
                                             (["hydra.job.name=x"], 1)])
def test_a_single_run_composes_its_config_once(extra, composes, tmp_path, monkeypatch):
    """The check composes the config as Hydra's run will and the run takes it; Hydra's
    own mode query is answered without composing.  A command line that sets a Hydra
    field that could change the mode is left to Hydra: the check, the mode query and
    the run each compose."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.hydra import Hydra

    from antiamp.cli import main

    calls = []
    orig = ConfigLoaderImpl.load_configuration
    monkeypatch.setattr(ConfigLoaderImpl, "load_configuration",
                        lambda self, *a, **k: calls.append(1) or orig(self, *a, **k))
    monkeypatch.setattr(sys, "argv", ["antiamp", "run.n_instances=1000", "run.figure=false",
                                      f"hydra.run.dir={tmp_path / 'r'}", *extra])
    main()
    assert (tmp_path / "r" / "results.zarr").is_dir()
    assert len(calls) == composes
    assert Hydra.get_mode is Hydra.__dict__["get_mode"] and \
        Hydra.get_mode.__name__ == "get_mode"  # restored
    assert ConfigLoaderImpl.__dict__["load_configuration"].__name__ == "<lambda>"  # restored
