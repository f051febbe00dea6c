"""The result schema (antiamp.schema): every model's metric ``x`` with ``x_se`` and
``x_exact``, the same attributes on each; a store of the former names (``x_theory``)
read under the current ones by antiamp-check, antiamp-plot, antiamp-merge and the
Python API."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import xarray as xr

import antiamp
from antiamp.schema import label, problems, upgrade

# The module's tests share a module fixture: the stores are written once, on one worker, not once
# per xdist worker (pyproject's --dist loadgroup).
pytestmark = pytest.mark.xdist_group("schema")

N = 4000
GRID = {"run": {"n_instances": N},
        "sweep": {"axes": {"model": {"rho": [0.1, 0.5]}, "judge": {"b": [0.2, 0.8]}},
                  "plot": False}}


def _metric(**extra):
    ds = xr.Dataset({"amp": (("protocol",), [0.2, 0.1], {"long_name": "mistake amplification",
                                                         "units": "1"}),
                     "amp_se": (("protocol",), [0.01, 0.01], {}),
                     "amp_exact": (("protocol",), [0.2, 0.1], {})},
                    coords={"protocol": ("protocol", ["consult", "debate"],
                                         {"long_name": "oversight protocol"})})
    return ds.assign(extra)


def test_label_gives_the_companions_the_metrics_attributes():
    ds = label(_metric())
    assert problems(ds) == []
    assert ds.amp_se.attrs == {"long_name": "standard error of mistake amplification", "units": "1"}
    assert ds.amp_exact.attrs["long_name"] == "exact value of mistake amplification"
    assert ds.amp.attrs["ancillary_variables"] == "amp_se"


@pytest.mark.parametrize("damage,expected", [
    (lambda ds: ds.rename_vars({"amp_exact": "amp_theory"}), "the former name"),
    (lambda ds: ds.assign(acc_se=(("protocol",), [0.1, 0.1])), "without its metric 'acc'"),
    (lambda ds: ds.assign(amp_se=((), 0.01)), "dimensions"),
    (lambda ds: ds.assign(amp=ds.amp.copy().drop_attrs()), "no 'long_name'"),
    (lambda ds: ds.assign_coords(protocol=ds.protocol.drop_attrs()), "protocol"),
])
def test_departures_from_the_schema_are_named(damage, expected):
    ds = damage(label(_metric()))
    found = problems(ds)
    assert any(expected in p for p in found), found


def test_upgrade_renames_the_former_names_only():
    old = _metric().rename_vars({"amp_exact": "amp_theory"})
    new = upgrade(old)
    assert "amp_exact" in new and "amp_theory" not in new
    np.testing.assert_array_equal(new.amp_exact.values, old.amp_theory.values)
    assert new.amp_exact.attrs["long_name"] == "exact value of mistake amplification"
    # a store of the current names, or a _theory with no metric beside it, is left alone
    assert upgrade(_metric()).identical(_metric())
    lone = xr.Dataset({"beta_theory": ((), 1.0)})
    assert upgrade(lone).identical(lone)


def _legacy_copy(store, to):
    """``store`` as the former versions wrote it: each ``<metric>_exact`` array under
    ``<metric>_theory`` (its folder, the metric's link to it, the consolidated
    metadata and the store's metadata record)."""
    from antiamp.sweeps.metadata import consolidate, record

    shutil.copytree(store, to)
    for d in sorted(to.iterdir()):
        if d.is_dir() and d.name.endswith("_exact"):
            d.rename(to / (d.name[: -len("_exact")] + "_theory"))
    consolidate(to)
    record(to)
    return to


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("schema")
    new = tmp / "new.zarr"
    antiamp.sweep(GRID, new, progress=False, log=lambda *a: None)
    return new, _legacy_copy(new, tmp / "old.zarr")


def test_a_store_of_the_former_names_is_read_under_the_current_ones(stores, tmp_path):
    from antiamp.sweeps.blocks import open_store
    from antiamp.sweeps.check import check_store
    from antiamp.sweeps.merge import merge_stores
    from antiamp.sweeps.plot import plot_store

    new, old = stores
    assert "amp_theory" in xr.open_zarr(old).data_vars  # the copy really has the old names
    ref = open_store(new).load()
    got = open_store(old).load()
    assert not [v for v in got.data_vars if v.endswith("_theory")]
    from antiamp.testing import same

    assert same(ref, got) == []
    # antiamp-check verifies it (its closed forms under their former names) ...
    n, bad = check_store(old, log=lambda *a: None)
    assert (n, bad) == (1, 0)
    # ... and still finds damage in them
    dam = _legacy_copy(new, tmp_path / "damaged.zarr")
    z = __import__("zarr").open_group(str(dam), mode="r+")
    z["amp_theory"][0, 0, 1] = 0.5
    assert check_store(dam, log=lambda *a: None)[1] == 1
    # the Python API resumes into it (every block verified, nothing rerun)
    again = antiamp.sweep(GRID, old, progress=False, log=lambda *a: None)
    assert "amp_exact" in again and "amp_theory" not in again
    # antiamp-plot draws its closed form; antiamp-merge writes the current names
    plot_store(old, ["amp"], out_dir=tmp_path / "figs", formats=("png",))
    merged = merge_stores([old], tmp_path / "merged.zarr")
    assert "amp_exact" in merged and "amp_theory" not in merged


def test_a_damaged_block_of_a_store_of_the_former_names_is_rewritten_under_them(
        stores, tmp_path, monkeypatch):
    """A rerun rewrites a damaged block of such a store from its sound class counts:
    the arrays of the former names (``<metric>_theory``), which the block's writers
    made from the metadata files cannot find, through zarr; the values those of the
    store of the current names."""
    from antiamp.sweeps import engine
    from antiamp.sweeps.blocks import open_store
    from antiamp.testing import same

    new, old = stores
    dam = _legacy_copy(new, tmp_path / "damaged.zarr")
    for chunk in (dam / "amp_theory").iterdir():
        if not chunk.name.startswith("."):
            chunk.unlink()
    opened, real = [], engine._stored
    monkeypatch.setattr(engine, "_stored", lambda g, n: opened.append(n) or real(g, n))
    lines = []
    antiamp.sweep(GRID, dam, progress=False, log=lines.append)
    assert any("rewritten from its sound class counts" in line for line in lines), lines
    assert "amp_exact" in opened and "amp" not in opened  # the former names alone
    assert (dam / "amp_theory").exists() and not (dam / "amp_exact").exists()
    assert same(open_store(new).load(), open_store(dam).load()) == []


def test_simulate_refuses_keyword_arguments_a_model_does_not_take():
    with pytest.raises(TypeError, match="counts_out"):
        antiamp.simulate({"model": {"name": "panel"}, "run": {"n_instances": 100}},
                         counts_out={})
    with pytest.raises(TypeError, match="colour"):
        antiamp.simulate({"run": {"n_instances": 100}}, colour=1)
    got = {}
    antiamp.simulate({"run": {"n_instances": 100}}, counts_out=got)
    assert got["counts"].sum() == 100
