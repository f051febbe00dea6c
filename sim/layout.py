"""Dataset layout helpers the models share: a metric as value, standard error and
exact value, per cell and stacked over a grid's cells."""

from __future__ import annotations

import time

import numpy as np

from .lazy import lazy

xr = lazy("xarray")


def configs_first(cells, params_of=None) -> tuple:
    """``(configs, parameters)`` of a block's cells, built in tight loops before any
    cell's solvers run (``parameters`` None without ``params_of``).  Built between one
    cell's solvers and the next, whose arrays and kernel have filled the caches, the
    same Python costs several times as much: re-deliberation's config and parameters,
    32 and 20 us a cell against 3 and 3 (measured in-process, real solvers)."""
    configs = list(cells)
    return configs, (None if params_of is None else [params_of(c) for c in configs])


def computed_cells(cell, cells: list, shape=None, params_of=None):
    """``(results, st, seconds)``: each cell's dict by ``cell(config)`` (or, with
    ``params_of``, ``cell(config, params_of(config))``, the parameters resolved first:
    :func:`configs_first`), a :func:`stacker` over them shaped as the grid, and the
    seconds they took."""
    shape = (len(cells),) if shape is None else shape
    t0 = time.perf_counter()
    configs, params = configs_first(cells, params_of)
    res = ([cell(c) for c in configs] if params is None
           else [cell(c, par) for c, par in zip(configs, params)])
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


class Triplets(dict):
    """A cell's ``{k_exact, k, k_se}`` (:func:`cell_triplets`), each converted on first
    read; :func:`stacker` stacks a block's cells' straight from their exact and
    simulated values instead (a block's arrays, not about a hundred small arrays a
    cell), to the same values.  Other keys are stored as in a dict."""

    def __init__(self, exact: dict, sim: dict | None):
        super().__init__()
        self.exact, self.sim = exact, sim
        self.keys_of: dict = {}  # triplet key -> (metric, 0 exact, 1 value, 2 se)
        for k in exact:
            self.keys_of[f"{k}_exact"] = (k, 0)
            self.keys_of[k] = (k, 1)
            self.keys_of[f"{k}_se"] = (k, 2)

    def __missing__(self, key):
        if key not in self.keys_of:
            raise KeyError(key)
        k, which = self.keys_of[key]
        v = np.asarray(self.exact[k], float)
        if which == 0:
            return v
        if self.sim is None:
            return np.full(v.shape, np.nan)
        return np.asarray(self.sim[k][which - 1], float).reshape(v.shape)

    def __contains__(self, key):
        return dict.__contains__(self, key) or key in self.keys_of


def cell_triplets(exact: dict, sim: dict | None) -> dict:
    """``{k_exact, k, k_se}`` of every exact value ``k``: the simulated value and its
    standard error from ``sim[k] = (values, se)`` (shaped like the exact value), or
    NaN when the cell was not simulated (:class:`Triplets`: converted when read, or a
    block's at once by :func:`stacker`)."""
    return Triplets(exact, sim)


def _stack_triplets(res: list, key: str):
    """``key`` of a block's :class:`Triplets`, stacked from their exact and simulated
    values at once; None where the cells do not allow it (another key, cells with and
    without simulation, values of different shapes: each is then read on its own)."""
    if not all(type(r) is Triplets and key in r.keys_of and not dict.__contains__(r, key)
               for r in res):
        return None
    k, which = res[0].keys_of[key]
    try:
        v = np.asarray([r.exact[k] for r in res], float)
    except ValueError:  # ragged
        return None
    if which == 0:
        return v
    unsimulated = [r.sim is None for r in res]
    if any(unsimulated):
        return np.full(v.shape, np.nan) if all(unsimulated) else None
    try:
        a = np.asarray([r.sim[k][which - 1] for r in res], float)
    except ValueError:
        return None
    return a.reshape(v.shape) if a.size == v.size else None


def simulated_pairs(sims: list, exact: dict) -> dict:
    """``{k: values, k_se: standard errors}`` of a block's cells from their simulated
    ``sims[i][k] = (values, se)``, each shaped as the block's ``exact[k]`` ([cells, ...]);
    NaN for a cell not simulated (``sims[i]`` None)."""
    out = {}
    done = [i for i, sim in enumerate(sims) if sim is not None]
    every = len(done) == len(sims)
    for k, v in exact.items():
        for which, suf in ((0, ""), (1, "_se")):
            # the simulated cells' values a block at once (one array, not a row a cell)
            rows = stack_rows([sims[i][k][which] for i in done], v.shape[1:])
            if not every:  # NaN for the cells not simulated
                rows, simulated = np.full(v.shape, np.nan), rows
                rows[done] = simulated
            out[k + suf] = rows
    return out


def stack_rows(items: list, shape: tuple) -> np.ndarray:
    """``items`` (one a cell) as floats of shape ``[len(items), *shape]``: one
    ``np.array`` over the list where the items already share a shape of that size
    (a block's values as NumPy builds them), else each item converted and reshaped
    on its own first (a cell's scalar, list or differently shaped array); the same
    floats either way, and an item of another size refused as the reshape refuses it."""
    want = (len(items),) + tuple(shape)
    try:
        return np.array(items, float).reshape(want)
    except ValueError:  # ragged, or not of the shape's size: item by item
        return np.array([np.asarray(x, float).reshape(shape) for x in items],
                        float).reshape(want)


def stacker(res: list, shape: tuple):
    """``st(k)``: the per-cell values of ``k`` stacked and shaped as the grid."""
    def st(k):
        a = _stack_triplets(res, k) if res else None
        if a is None:
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


#: Cells from which a column's codes are found by hashing (pandas.factorize, linear
#: in the cells) rather than by sorting (np.unique, n log n: 10 of the 24 s of a
#: 10^7-cell plan went to sorting its columns and their combinations); below it
#: numpy alone, so that a small grid's validation error needs no pandas.
HASHED = 1 << 16


def codes(col) -> tuple[np.ndarray, int]:
    """Integer codes of a column's values and how many distinct values it has.

    Numbers and strings are numbered in sorted order (numpy's: NaN last, -0.0 and
    0.0 one value), as ``np.unique(col, return_inverse=True)`` does: by numpy for
    short columns (a validation error then answers without importing pandas, a
    quarter of a second) and by pandas' hashing for long numeric ones (the same
    codes); anything else in order of appearance (pandas)."""
    arr = np.asarray(col)
    if arr.dtype.kind in "biu" or arr.dtype in (np.float32, np.float64):
        if arr.size >= HASHED:
            import pandas as pd

            inverse, uniq = pd.factorize(arr.ravel(), use_na_sentinel=False)
            rank = np.empty(len(uniq), np.int64)
            rank[np.argsort(uniq, kind="stable")] = np.arange(len(uniq))
            return rank[inverse], len(uniq)
    if arr.dtype.kind in "biufUS":
        uniq, inverse = np.unique(arr, return_inverse=True)
        return inverse.ravel().astype(np.int64), len(uniq)
    import pandas as pd

    inverse, uniq = pd.factorize(col)
    return inverse.astype(np.int64), len(uniq)


def combos(columns: list, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(key of each cell's combination of ``columns``, first cell of each key): the
    keys number the combinations in sorted order, as ``np.unique`` would."""
    key = np.zeros(n, np.int64)
    count = 1 if n else 0
    for col in columns:
        c, k = codes(col)
        key, count = codes(key * k + c)  # stays < n: no overflow
    # the first cell of each key (the keys are 0 .. count-1, each present)
    first = np.full(count, n, np.int64)
    np.minimum.at(first, key, np.arange(n, dtype=np.int64))
    return key, first
