"""Dataset layout helpers the models share: a metric as value, standard error and
exact value, per cell and stacked over a grid's cells."""

from __future__ import annotations

import time

import numpy as np

from .lazy import lazy

xr = lazy("xarray")


def computed_cells(cell, cells: list, shape=None):
    """``(results, st, seconds)``: each cell's dict by ``cell(config)``, a
    :func:`stacker` over them shaped as the grid, and the seconds they took."""
    shape = (len(cells),) if shape is None else shape
    t0 = time.perf_counter()
    res = [cell(c) for c in cells]
    return res, stacker(res, shape), time.perf_counter() - t0


def covers(field: str, path: str) -> bool:
    """Whether the kernel field ``field`` ("section", "section.*" or "section.name")
    covers the config path ``path``."""
    section = field[:-2] if field.endswith(".*") else field
    return path == section or path.split(".")[0] == section


def column(cells, path: str) -> np.ndarray:
    """Every cell's value of the config field ``path`` ("section.name"): a block of a
    grid (:class:`antiamp.sweeps.spec.CellBlock`) answers from its axes' columns, without
    a config per cell; a list of configs field by field."""
    if hasattr(cells, "field"):
        return cells.field(path)
    section, name = path.split(".")
    return np.array([getattr(getattr(c, section), name) for c in cells])


def kernel_groups(cells, fields) -> tuple[list, np.ndarray]:
    """Cells that agree on ``fields`` (a model's ``kernel_fields``: "section.name",
    "section.*" or "section") share one kernel pass: ``(one config for each group,
    in order of first appearance; each cell's group)``.

    A block of a grid (:class:`antiamp.sweeps.spec.CellBlock`) answers from its axes'
    columns (only axes vary within it); a list of configs is keyed field by field."""
    fields = tuple(fields)
    if hasattr(cells, "distinct"):
        return cells.distinct(fields)
    import dataclasses

    def value(c, f):
        section, _, name = f.partition(".")
        sec = getattr(c, section)
        return repr(dataclasses.astuple(sec)) if name in ("", "*") else getattr(sec, name)

    groups: dict = {}
    inverse = np.empty(len(cells), np.intp)
    reps = []
    for i, c in enumerate(cells):
        k = tuple(value(c, f) for f in fields)
        if k not in groups:
            groups[k] = len(reps)
            reps.append(c)
        inverse[i] = groups[k]
    return reps, inverse


def model_dataset(data: dict, coords: dict, title: str, method: str, seconds: float,
                  report: str = "no issues"):
    """A model's Dataset of one block of cells, with the attributes the engines read."""
    ds = xr.Dataset(data, coords=coords)
    ds.attrs.update({"title": title, "method": method, "solve_seconds": float(seconds),
                     "solver_report": report})
    return ds


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


def axis_coords(axes: list, dims, extra: dict | None = None) -> dict:
    """xarray coordinates of a grid's (or design's) axes, labelled, plus ``extra``."""
    from .fields import symbol

    coords = dict(extra or {})
    for a in axes:
        if dims and dims[0] == "point":
            coords[a.dim] = ("point", a.values, {"long_name": a.long_name, "config_path": a.path,
                                                 "symbol": symbol(a.path)})
        else:
            coords[a.dim] = (a.dim, a.values, {"long_name": a.long_name, "units": a.units,
                                               "symbol": symbol(a.path),
                                               "config_path": a.path})
    return coords


def pm(value: float, se: float, exact: float = float("nan"), digits: int = 4) -> str:
    """One table entry of a metric, the same way in every model's table:
    ``value ± se [exact]``; ``value ± se`` without an exact value; ``exact (exact)``
    when nothing was simulated (or the SE is 0: the value is the exact one); ``-``
    when there is neither."""
    import math

    f = f"{{:.{digits}f}}"
    sim = math.isfinite(value) and math.isfinite(se) and se > 0
    if sim:
        out = f"{f.format(value)} ± {f.format(se)}"
        return out + (f" [{f.format(exact)}]" if math.isfinite(exact) else "")
    if math.isfinite(exact):
        return f"{f.format(exact)} (exact)"
    return f.format(value) if math.isfinite(value) else "-"


def pm_of(ds, k: str, digits: int = 4) -> str:
    """:func:`pm` of metric ``k`` of a (one-cell) Dataset: ``k``, ``k_se``, ``k_exact``."""
    return pm(float(ds[k]), float(ds[f"{k}_se"]), float(ds[f"{k}_exact"]), digits)


def codes(col) -> tuple[np.ndarray, int]:
    """Integer codes of a column's values and how many distinct values it has
    (numpy for numbers and strings: a validation error then answers without
    importing pandas, a quarter of a second; pandas for anything else)."""
    arr = np.asarray(col)
    if arr.dtype.kind in "biufUS":
        uniq, inverse = np.unique(arr, return_inverse=True)
        return inverse.ravel().astype(np.int64), len(uniq)
    import pandas as pd

    inverse, uniq = pd.factorize(col)
    return inverse.astype(np.int64), len(uniq)


def combos(columns: list, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(key of each cell's combination of ``columns``, first cell of each key)."""
    key = np.zeros(n, np.int64)
    for col in columns:
        c, k = codes(col)
        key, _ = codes(key * k + c)  # stays < n: no overflow
    _, first = np.unique(key, return_index=True)
    return key, first
