"""Dataset layout helpers the models share: a metric as value, standard error and
exact value, per cell and stacked over a grid's cells."""

from __future__ import annotations

import numpy as np


def cell_triplets(exact: dict, sim: dict | None) -> dict:
    """``{k_exact, k, k_se}`` of every exact value ``k``: the simulated value and its
    standard error from ``sim[k] = (values, se)`` (shaped like the exact value), or
    NaN when the cell was not simulated."""
    r = {}
    for k, v in exact.items():
        v = np.asarray(v, float)
        r[f"{k}_exact"] = v
        if sim is not None:
            s, se = (np.asarray(a, float) for a in sim[k])
            r[k], r[f"{k}_se"] = s.reshape(v.shape), se.reshape(v.shape)
        else:
            r[k] = r[f"{k}_se"] = np.full(v.shape, np.nan)
    return r


def stacker(res: list, shape: tuple):
    """``st(k)``: the per-cell values of ``k`` stacked and shaped as the grid."""
    def st(k):
        a = np.stack([np.asarray(r[k]) for r in res])
        return a.reshape(tuple(shape) + a.shape[1:])
    return st


def add_triplets(data: dict, st, ax: tuple, dims: tuple, metrics: dict, units=lambda k: "1",
                 sim_how: str = "simulated", exact_how: str = "exact",
                 se_how: str = "") -> None:
    """Add ``k``, ``k_se`` and ``k_exact`` of every metric (name -> meaning) with
    dimensions ``ax + dims`` to ``data`` (xarray's variable tuples)."""
    for k, ln in metrics.items():
        u = units(k)
        data[k] = (ax + dims, st(k), {"long_name": f"{ln}, {sim_how}", "units": u})
        data[f"{k}_se"] = (ax + dims, st(f"{k}_se"), {
            "long_name": f"standard error of {k}{se_how}", "units": u})
        data[f"{k}_exact"] = (ax + dims, st(f"{k}_exact"), {
            "long_name": f"{ln}, {exact_how}", "units": u})
