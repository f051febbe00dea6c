"""The antiamp-ext command: one cell, a named study, bad input."""

import numpy as np
import xarray as xr
from cli_runner import run_command


def run(args, cwd):
    return run_command("antiamp-ext", args, cwd)


def test_single_cell_table_and_store(tmp_path):
    r = run(["signals.eta=0.6", "signals.phi=0.3", "model.c_e=0.4", "judge.b=0.7",
             "hydra.run.dir=out"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "x_A by (a, s_A)" in r.stdout and "value of diversity" in r.stdout
    ds = xr.open_zarr(tmp_path / "out" / "extension.zarr")
    for v in ("amp", "acc", "fwc", "counter_signal", "x_P", "x_A", "epsilon", "n_equilibria",
              "diversity_value", "shared_blind_spot", "eta_min", "eta_max"):
        assert v in ds
    assert float(ds.epsilon.max()) < 1e-9
    assert ds.x_A.dims == ("protocol", "equilibrium", "s_P", "s_A")


def test_attention_cell_reports_equilibrium_attention(tmp_path):
    r = run(["effort.enabled=true", "judge=logit", "judge.mu=0.5", "effort.lam_gain=3",
             "effort.v_max=0.5", "effort.c_J=0.05", "hydra.run.dir=out"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "t*" in r.stdout and "judge as leader" in r.stdout
    ds = xr.open_zarr(tmp_path / "out" / "extension.zarr")
    assert 0 < float(ds.t_star.sel(protocol="debate").isel(equilibrium=0)) <= 1


def test_named_study_writes_grid_and_figures(tmp_path):
    r = run(["study=accuracy_gap", "sweep.axes.signals.p_A={linspace:[0.6,0.9,2]}", "hydra.run.dir=out"],
            tmp_path)
    assert r.returncode == 0, r.stderr
    ds = xr.open_zarr(tmp_path / "out" / "extension.zarr")
    assert ds.amp.dims == ("p_A", "eta", "protocol", "equilibrium")
    assert ds.p_A.attrs["config_path"] == "signals.p_A"
    assert not np.isnan(ds.amp.isel(equilibrium=0)).any()
    for f in ("extension.png", "extension.pdf"):
        assert (tmp_path / "out" / f).stat().st_size > 1000


def test_bad_input_exits_2_without_output(tmp_path):
    for args, msg in ((["signals.eta=0.95", "signals.p_A=0.6"], "feasible"),
                      (["effort.c_J=-1"], "effort.c_J"),
                      (["study=nope"], "study"),
                      (["sweep.axes.signals.phi=[0.5,1.5]"], "signals.phi")):
        r = run(args + ["hydra.run.dir=out"], tmp_path)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert msg in r.stderr, r.stderr
        assert not (tmp_path / "out").exists()


def test_portfolio_cell_and_study(tmp_path):
    r = run(["extension=portfolio", "portfolio.c_item=0.1", "judge=logit", "portfolio.rule=logit",
             "hydra.run.dir=one"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "rho(B)" in r.stdout and "Pr(submit s | k passing items held)" in r.stdout
    r = run(["study=portfolio_budget", "sweep.axes.portfolio.budget={range:[2,5,1]}",
             "hydra.run.dir=grid"], tmp_path)
    assert r.returncode == 0, r.stderr
    ds = xr.open_zarr(tmp_path / "grid" / "extension.zarr")
    assert ds.amp.dims == ("budget", "cross_exam", "protocol")
    assert ds.sigma_A.dims == ("budget", "cross_exam", "k", "s")
    assert float(ds.epsilon.max()) < 1e-9
    assert (tmp_path / "grid" / "extension.png").stat().st_size > 1000
    r = run(["extension=portfolio", "portfolio.tau=9", "hydra.run.dir=bad"], tmp_path)
    assert r.returncode == 2 and "portfolio.tau" in r.stderr
    assert not (tmp_path / "bad").exists()


def test_panel_cell_and_study(tmp_path):
    r = run(["extension=panel", "panel.size=9", "panel.icc=0.2", "judge.b=0.4",
             "hydra.run.dir=one"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "effective independent votes" in r.stdout
    r = run(["study=panel_hurts", "sweep.axes.panel.size=[1,5]", "hydra.run.dir=grid"], tmp_path)
    assert r.returncode == 0, r.stderr
    ds = xr.open_zarr(tmp_path / "grid" / "extension.zarr")
    assert ds.amp.dims == ("size", "rule", "protocol")
    assert list(ds.rule.values) == ["majority", "supermajority", "unanimity", "confidence"]
    assert (tmp_path / "grid" / "extension.png").stat().st_size > 1000


def test_messages_and_options_cells_and_studies(tmp_path):
    r = run(["extension=messages", "judge=logit", "messages.r_mean_false=1", "hydra.run.dir=m1"],
            tmp_path)
    assert r.returncode == 0, r.stderr
    assert "exogenous rhetoric" in r.stdout
    r = run(["study=rhetoric_strategic", "sweep.axes.messages.c_r={linspace:[0.0,0.2,2]}", "hydra.run.dir=m2"],
            tmp_path)
    assert r.returncode == 0, r.stderr
    ds = xr.open_zarr(tmp_path / "m2" / "extension.zarr")
    assert ds.amp.dims == ("c_r", "kappa_r", "protocol") and float(ds.epsilon.max()) < 1e-9
    r = run(["extension=options", "judge=logit", "options.antagonist=best_of_k",
             "hydra.run.dir=o1"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "wrong_alt" in r.stdout
    r = run(["study=options_antagonist", "sweep.axes.options.K=[3,4]", "hydra.run.dir=o2"],
            tmp_path)
    assert r.returncode == 0, r.stderr
    ds = xr.open_zarr(tmp_path / "o2" / "extension.zarr")
    assert ds.amp.dims == ("K", "antagonist", "protocol")
    assert (tmp_path / "o2" / "extension.png").stat().st_size > 1000
    r = run(["extension=options", "options.K=1", "hydra.run.dir=bad"], tmp_path)
    assert r.returncode == 2 and "options.K" in r.stderr and not (tmp_path / "bad").exists()
