"""Sweeps: layout, agreement with single runs and closed forms, bad specs, locks, designs."""

import numpy as np
import pytest
import xarray as xr
from filelock import FileLock

import antiamp as sim
from antiamp.sweeps.engine import SweepError, run_sweep
from antiamp.sweeps.spec import make_plan

Z = 5.0


def cfg(axes, n=200_000, **extra):
    c = {"sweep": {"axes": axes, "plot": False}, "run": {"n_instances": n}}
    for k, v in extra.items():
        sec, name = k.split("__")
        c.setdefault(sec, {})[name] = v
    return c


def test_grid_layout_and_single_run_agreement(tmp_path):
    c = cfg({"model": {"rho": [0.1, 0.4, 0.8]}, "judge": {"b": {"linspace": [0, 1, 5]}}},
            run__seed=3)
    ds = run_sweep(c, tmp_path, progress=False)
    plain = xr.open_zarr(tmp_path / "sweep.zarr")  # nothing of ours needed to read it
    assert dict(plain.sizes) == {"rho": 3, "b": 5, "protocol": 2, "transcript_class": 32}
    assert plain.rho.attrs["long_name"] and plain.rho.attrs["config_path"] == "model.rho"
    for k in ("config", "antiamp_version", "seed", "created"):
        assert k in plain.attrs
    assert bool(plain.cell_done.all())
    # A cell of the sweep is exactly the single run with the same parameters (CRN).
    one = sim.simulate({"model": {"rho": 0.4}, "judge": {"b": 0.25},
                        "run": {"n_instances": 200_000, "seed": 3, "progress": False}})
    assert np.array_equal(ds.class_counts.sel(rho=0.4, b=0.25).values, one.class_counts.values)
    assert float(ds.amp.sel(rho=0.4, b=0.25, protocol="debate")) == float(one.amp.values[1])


def test_whole_grid_agrees_with_closed_forms(tmp_path):
    c = cfg({"model": {"rho": {"linspace": [0.05, 0.95, 7]}, "p": [0.6, 0.9]},
             "judge": {"b": {"linspace": [0.0, 1.0, 6]}}}, n=300_000)
    ds = run_sweep(c, tmp_path, progress=False).load()
    th = sim.theory  # noqa: F841 (the store's _theory comes from the same closed forms)
    for name in ("amp", "acc", "fwc", "amp_gap", "acc_gap", "welfare_diff"):
        diff = np.abs(ds[name] - ds[f"{name}_exact"]).values
        se = ds[f"{name}_se"].values
        ok = (diff <= Z * se + 1e-12) | np.isnan(diff)
        assert ok.all(), (name, np.argwhere(~ok))
    # and the theory columns are the seed's: Amp gap = rho (1 - b)
    rho, b = xr.broadcast(ds.rho, ds.b)
    assert np.allclose(ds.amp_gap_exact.isel(p=0).values, (rho * (1 - b)).values)


def test_crn_makes_amp_monotone_in_rho_path_by_path(tmp_path):
    c = cfg({"model": {"rho": {"linspace": [0.0, 1.0, 41]}}}, n=20_000)
    ds = run_sweep(c, tmp_path / "crn", progress=False)
    for prot in ("consult", "debate"):
        assert (np.diff(ds.amp.sel(protocol=prot).values) >= 0).all()
    # The fabricated-evidence counts themselves are nested across rho.
    c2 = cfg({"model": {"rho": {"linspace": [0.0, 1.0, 41]}}}, n=20_000)
    c2["sweep"]["crn"] = False
    ind = run_sweep(c2, tmp_path / "ind", progress=False)
    assert not np.array_equal(ind.class_counts.values, ds.class_counts.values)
    diff = np.abs(ind.amp - ind.amp_exact).values
    assert (diff <= Z * ind.amp_se.values + 1e-12).all()


def test_categorical_and_integer_axes(tmp_path):
    c = cfg({"judge": {"kind": ["tiebreak", "logit"], "jury_size": [1, 2, 3]}})
    ds = run_sweep(c, tmp_path, progress=False)
    assert list(ds.kind.values) == ["tiebreak", "logit"]
    assert list(ds.jury_size.values) == [1, 2, 3]
    d = np.abs(ds.amp - ds.amp_exact).values
    assert (d <= Z * ds.amp_se.values + 1e-12).all()


@pytest.mark.parametrize("design", ["lhs", "sobol"])
def test_space_filling_designs(tmp_path, design):
    c = cfg({"model": {"rho": {"uniform": [0.1, 0.9]}}, "judge": {"lam": {"loguniform": [0.5, 8]},
                                                               "mu": {"uniform": [-1, 1]}}},
            n=50_000, judge__kind="logit")
    c["sweep"].update(design=design, n_points=16)
    ds = run_sweep(c, tmp_path, progress=False)
    assert dict(ds.sizes)["point"] == 16
    assert ds.rho.dims == ("point",) and float(ds.rho.min()) >= 0.1 and float(ds.rho.max()) <= 0.9
    assert float(ds.lam.min()) >= 0.5 and float(ds.lam.max()) <= 8
    d = np.abs(ds.amp - ds.amp_exact).values
    assert (d <= Z * ds.amp_se.values + 1e-12).all()


BAD_SPECS = [
    ({"model": {"rhoo": [0.1]}}, "model.rhoo: unknown field"),
    ({"modle": {"rho": [0.1]}}, "unknown section; did you mean sweep.axes.model?"),
    ({"model": {"roh": [0.1]}}, "unknown field; did you mean sweep.axes.model.rho?"),
    ({"model": {"rho": []}}, "is empty"),
    ({"model": {"rho": [0.1, 1.5]}}, "model.rho must lie in [0, 1]"),
    ({"judge": {"lam": [1, -1]}}, "judge.lam must lie in (0, 1,000,000]"),
    ({"judge": {"jury_size": [1, 2.5]}}, "not a valid int"),
    ({"judge": {"kind": ["tiebreak", "oracle"]}}, "judge.kind must be one of"),
    ({"model": {"rho": {"linspace": [0, 1]}}}, "three numbers"),
    ({"model": {"rho": {"geomspace": [0, 1, 3], "x": 1}}}, "must be a list"),
    ({"model": {"rho": {"spline": [0, 1, 3]}}}, "unknown range"),
    ({"model": {"rho": [0.1, 0.1]}}, "repeats"),
    ({}, "sweep.axes is empty"),
]


@pytest.mark.parametrize("axes,msg", BAD_SPECS)
def test_bad_specs_fail_before_any_computation(tmp_path, axes, msg):
    with pytest.raises(sim.ConfigError) as err:
        run_sweep(cfg(axes), tmp_path, progress=False)
    assert msg in str(err.value)
    assert not (tmp_path / "sweep.zarr").exists()


def test_bad_executor_and_design(tmp_path):
    c = cfg({"model": {"rho": [0.1]}})
    c["executor"] = {"kind": "distributed"}
    with pytest.raises(sim.ConfigError, match="executor.address"):
        make_plan(c)
    for bad in (0, -5, float("nan")):
        c["executor"] = {"kind": "slurm", "start_timeout": bad}
        with pytest.raises(sim.ConfigError, match=r"executor.start_timeout must be .* > 0"):
            make_plan(c)
    c = cfg({"model": {"rho": [0.1, 0.2]}})
    c["sweep"]["design"] = "lhs"
    with pytest.raises(sim.ConfigError, match="uniform"):
        make_plan(c)


def test_concurrent_sweeps_on_one_store_are_refused(tmp_path):
    c = cfg({"model": {"rho": [0.1, 0.2]}})
    lock = FileLock(str(tmp_path / "sweep.zarr") + ".lock")
    with lock:
        with pytest.raises(SweepError, match="another sweep is writing"):
            run_sweep(c, tmp_path, progress=False)


def test_store_of_another_sweep_is_not_touched(tmp_path):
    run_sweep(cfg({"model": {"rho": [0.1, 0.2]}}), tmp_path, progress=False)
    before = xr.open_zarr(tmp_path / "sweep.zarr").load()
    other = cfg({"model": {"rho": [0.3, 0.5]}})
    with pytest.raises(SweepError, match="different sweep"):
        run_sweep(other, tmp_path, progress=False)
    assert xr.open_zarr(tmp_path / "sweep.zarr").load().identical(before)
    other["sweep"]["overwrite"] = True
    ds = run_sweep(other, tmp_path, progress=False)
    assert list(ds.rho.values) == [0.3, 0.5]


def test_resume_after_partial_run_is_identical(tmp_path):
    """Blocks left undone (as after a kill) are redone; the store ends identical."""
    import zarr

    c = cfg({"model": {"rho": {"linspace": [0, 1, 6]}}, "judge": {"b": [0.2, 0.7]}})
    c["sweep"]["cells_per_block"] = 2
    ref = run_sweep(c, tmp_path / "ref", progress=False).load()
    run_sweep(c, tmp_path / "cut", progress=False)
    g = zarr.open_group(str(tmp_path / "cut" / "sweep.zarr"), mode="r+")
    g["cell_done"][2:5, :] = False  # three blocks "lost"
    g["amp"][2:5, :, :] = -1.0  # with garbage where they were half-written
    g.attrs["complete"] = 0
    out = run_sweep(c, tmp_path / "cut", progress=False).load()
    for v in ref.data_vars:
        assert np.array_equal(ref[v].values, out[v].values, equal_nan=True), v
    assert {k: v for k, v in ref.attrs.items() if k != "created"} == \
        {k: v for k, v in out.attrs.items() if k != "created"}
