"""The fused sweep engine runs any model that declares a FusedGrid, not one model.

A test-only model (a cell's instances are Bernoulli(model.p) coin flips; its counts
are heads and tails, drawn with NumPy from the seed and the cell's p) goes through
the same engine as the seed-000 game: the store, kernel-call sharing between cells
with equal kernel inputs, resume, antiamp-check and its repair, the in-memory grid.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
import zarr

from antiamp.registry import _MODELS, FusedGrid, Model, register, to_model_config

NAME = "coin_test_model"
CALLS: list = []  # rows of each kernel call


def _columns(grid, table):
    if table is None:
        p = np.array([grid.cell(i).model.p for i in range(grid.n_cells)], float)
    else:
        p = table[0]("model.p").astype(float)
    return {"p": p}


def _inputs(cols, cells, streams):
    out = {"p": cols["p"][cells]}
    if streams is not None:
        out["stream"] = np.asarray(streams, np.uint64)
    return out


def _count(inputs, n, seed, n_threads, device="cpu"):
    CALLS.append(len(inputs["p"]))
    out = np.empty((len(inputs["p"]), 2), np.int64)
    for i, p in enumerate(inputs["p"]):
        stream = int(inputs["stream"][i]) if "stream" in inputs else 0
        rng = np.random.default_rng([seed, stream, int(round(p * 1e9))])
        out[i, 0] = rng.binomial(n, p)
        out[i, 1] = n - out[i, 0]
    return out


def _values(cols, cells, counts, n):
    rate = counts[:, 0] / n
    return {"rate": rate, "rate_se": np.sqrt(rate * (1 - rate) / n),
            "rate_exact": cols["p"][cells]}


def _layout(plan):
    return ({}, {"rate": ((), (), {"long_name": "heads rate", "units": "1"}),
                 "rate_se": ((), (), {"long_name": "standard error of heads rate",
                                      "units": "1"}),
                 "rate_exact": ((), (), {"long_name": "heads probability", "units": "1"})},
            {})


def _dataset(cells, cols, counts):
    n = int(cells[0].run.n_instances)
    v = _values(cols, np.arange(len(cells)), counts, n)
    data = {k: (("cell",), a, _layout(None)[1][k][2]) for k, a in v.items()}
    data["class_counts"] = (("cell", "side"), counts, {"long_name": "heads, tails"})
    return xr.Dataset(data)


def _run_cells(base, cells):
    class _Grid:
        n_cells = len(cells)

        def cell(self, i):
            return cells[i]

    cols = _columns(_Grid(), None)
    counts = _count(_inputs(cols, np.arange(len(cells)), None), int(base.run.n_instances),
                    int(base.run.seed), 0)
    return _dataset(cells, cols, counts)


@pytest.fixture
def coin():
    fused = FusedGrid(n_counts=2, columns=_columns, kernel_inputs=_inputs, count=_count,
                      values=_values, layout=_layout, counts_name="class_counts",
                      counts_dim="side", counts_attrs={"long_name": "heads, tails"})
    register(Model(name=NAME, title="coin flips (test only)", run_cells=_run_cells,
                   fused_grid=fused, plot_vars=("rate",), cells_per_block=2))
    CALLS.clear()
    yield fused
    _MODELS.pop(NAME, None)
    from antiamp.registry import _schema_cache

    _schema_cache.clear()


def _cfg(**sweep):
    return {"model": {"name": NAME},
            "sweep": {"axes": {"model": {"p": [0.1, 0.3, 0.5, 0.7, 0.9]},
                               "welfare": {"beta": [0.0, 1.0]}},
                      "cells_per_block": 4, "plot": False, **sweep},
            "run": {"n_instances": 4000, "seed": 11, "progress": False}}


def test_a_fused_model_runs_through_the_engine_with_shared_kernel_calls(coin, tmp_path):
    from antiamp.sweeps.engine import run_sweep

    ds = run_sweep(_cfg(), tmp_path, progress=False, log=lambda *a: None).load()
    assert ds.attrs["model"] == NAME and ds.attrs["complete"] == 1
    assert dict(ds.sizes) == {"p": 5, "beta": 2, "side": 2}
    counts = ds["class_counts"].values
    assert (counts.sum(axis=-1) == 4000).all()
    # welfare.beta is no kernel input: blocks of 4 cells (2 p values x 2 betas) make
    # 2 + 2 + 1 kernel rows for 10 cells
    assert sum(CALLS) == 5 and len(CALLS) == 3
    assert np.array_equal(ds["class_counts"].values[:, 0], ds["class_counts"].values[:, 1])
    # each cell's rate is its own draw: within 5 standard errors of p
    p = ds["p"].values[:, None]
    assert (np.abs(ds["rate"].values - p) < 5 * np.sqrt(p * (1 - p) / 4000)).all()
    assert np.array_equal(ds["rate_exact"].values, np.broadcast_to(p, (5, 2)))
    assert "cell_digest" in ds and (ds["cell_digest"].values != 0).all()


def test_the_store_the_memory_grid_and_run_cells_agree_bit_for_bit(coin, tmp_path):
    import antiamp
    from antiamp.sweeps.engine import run_sweep

    store = run_sweep(_cfg(), tmp_path, progress=False, log=lambda *a: None).load()
    mem = antiamp.sweep(_cfg(), progress=False)  # blocks through FusedGrid.dataset
    for name in ("rate", "rate_se", "rate_exact", "class_counts"):
        assert np.array_equal(store[name].values, mem[name].values), name
    # each cell alone, through run_cells (no engine, no sharing)
    for i, p in enumerate([0.1, 0.3, 0.5, 0.7, 0.9]):
        _, c = to_model_config({"model": {"name": NAME, "p": p},
                                "run": {"n_instances": 4000, "seed": 11}})
        one = _run_cells(c, [c])
        for name in ("rate", "class_counts"):
            for j in range(2):
                assert np.array_equal(one[name].values[0], store[name].values[i, j]), name


def test_check_repair_and_resume_of_a_fused_models_store(coin, tmp_path):
    from antiamp.sweeps.check import check_store
    from antiamp.sweeps.engine import run_sweep

    cfg = _cfg(store=str(tmp_path / "coin.zarr"))
    want = run_sweep(cfg, tmp_path, progress=False, log=lambda *a: None).load()
    store = tmp_path / "coin.zarr"
    assert tuple(check_store(store, log=lambda *a: None)) == (3, 0)
    group = zarr.open_group(str(store), mode="r+")
    group["rate"][0, 0] = 0.5  # damage a value of the first block
    lines = []
    n, bad = check_store(store, log=lines.append)
    assert (n, bad) == (3, 1) and any("rate differs" in x for x in lines), lines
    check_store(store, repair=True, log=lambda *a: None)
    assert tuple(check_store(store, log=lambda *a: None)) == (3, 0)
    got = xr.open_zarr(store).load()
    assert np.array_equal(got["rate"].values, want["rate"].values)
    # a block never finished (cell_done cleared, as a kill leaves it) is run on resume
    group = zarr.open_group(str(store), mode="r+")
    group["cell_done"][4:, :] = False
    group["rate"][4:, :] = np.nan
    CALLS.clear()
    again = run_sweep(cfg, tmp_path, progress=False, log=lambda *a: None).load()
    assert sum(CALLS) == 1  # the last block only (p = 0.9, both betas)
    for name in ("rate", "rate_se", "class_counts", "cell_digest"):
        assert np.array_equal(again[name].values, want[name].values), name
