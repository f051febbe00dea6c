"""The antiamp-solve command."""

import numpy as np
import xarray as xr
from cli_runner import run_command


def run(args, cwd):
    return run_command("antiamp-solve", args, cwd)


def test_single_cell_table_and_store(tmp_path):
    r = run(["model.c_e=0.45", "model.p=0.6", "model.rho=0.5", "judge.b=0.8",
             "hydra.run.dir=out"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "mixed" in r.stdout and "0.81667" in r.stdout
    ds = xr.open_zarr(tmp_path / "out" / "equilibria.zarr")
    assert set(ds.x_P.dims) == {"protocol", "equilibrium"}
    for v in ("x_P", "x_A", "belief_P", "belief_A", "mu_P", "mu_A", "amp", "acc", "fwc",
              "welfare", "epsilon", "stable", "n_equilibria"):
        assert v in ds
    assert float(ds.epsilon.max()) < 1e-9
    assert "config" in ds.attrs and "antiamp_version" in ds.attrs


def test_grid_with_regime_map(tmp_path):
    r = run(["sweep.axes.model.c_e={linspace:[0,1,21]}", "sweep.axes.judge.b=[0.2,0.5,0.8]",
             "judge.jury_size=3", "hydra.run.dir=out"], tmp_path)
    assert r.returncode == 0, r.stderr
    ds = xr.open_zarr(tmp_path / "out" / "equilibria.zarr")
    assert ds.x_P.dims[:2] == ("c_e", "b")
    assert int(ds.sizes["equilibrium"]) == int(ds.n_equilibria.max())
    assert np.isnan(ds.x_P.where(ds.equilibrium >= ds.n_equilibria)).all()
    for f in ("regimes.png", "regimes.pdf"):
        assert (tmp_path / "out" / f).stat().st_size > 1000


def test_bad_input_exits_2_without_output(tmp_path):
    for args, msg in ((["equilibrium.method=newton"], "equilibrium.method"),
                      (["model.rho=2"], "model.rho"),
                      (["sweep.axes.model.c_e=[0.1,-1]"], "model.c_e")):
        r = run(args + ["hydra.run.dir=out"], tmp_path)
        assert r.returncode == 2, (args, r.stderr)
        assert msg in r.stderr
        assert not (tmp_path / "out").exists()
