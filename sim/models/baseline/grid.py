"""The baseline model's fused grids: what the sweep engine needs from it
(:class:`antiamp.registry.FusedGrid`).

A cell's result is its 32 transcript-class counts from one kernel pass; its
metrics, standard errors and closed forms are functions of the counts and of the
cell's judge tables and welfare weights.  The engine cuts the grid into blocks,
shares one kernel call between cells with equal kernel inputs, writes the store
and verifies it; this module only says what the inputs, the kernel and the
variables are.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...config import ConfigError
from ...lazy import lazy

kb = lazy("antiamp.kernels.transcript_classes")
_kb_gpu = lazy("antiamp.kernels.gpu.baseline")  # imports numba.cuda: only when asked for
_rng = lazy("antiamp.kernels.rng")
_judge = lazy("antiamp.judge")
_runner = lazy("antiamp.runner")

#: Transcript classes of an instance (``kernels.transcript_classes.N_CLASSES``; the engine
#: checks every block's counts against it).
N_CLASSES = 32


@dataclasses.dataclass
class Columns:
    """Every cell's inputs, one row per cell (C order over the grid)."""

    thr: np.ndarray  # [C, 6] uint64 Bernoulli thresholds
    fixed: np.ndarray  # [C] stance fixed
    a_fixed: np.ndarray  # [C] the fixed stance
    J_consult: np.ndarray  # [C, 2]
    J_debate: np.ndarray  # [C, 2, 2]
    welfare: tuple  # alpha, beta, delta_c, c_e: each [C]
    theory_args: tuple  # for antiamp.metrics.class_probabilities, each [C]
    strategies: np.ndarray  # [C, 3]


def _cells_one_by_one(grid) -> tuple:
    """Kernel inputs of every cell, built and validated one cell at a time."""
    n_cells = grid.n_cells
    thr = np.empty((n_cells, 6), np.uint64)
    fixed = np.empty(n_cells, np.int64)
    a_fixed = np.empty(n_cells, np.int64)
    Jc = np.empty((n_cells, 2))
    Jd = np.empty((n_cells, 2, 2))
    wel = np.empty((4, n_cells))
    targs = np.empty((6, n_cells))
    strat = np.empty((n_cells, 3))
    for i in range(n_cells):
        cell = grid.cell(i)
        try:
            st = _judge.resolve_strategies(cell)
        except ConfigError as exc:
            raise ConfigError(f"sweep cell ({grid.where(i)}): {exc}") from None
        m = cell.model
        thr[i] = _runner.baseline_thresholds(m.pi, m.p, m.rho, st.x_P_consult, st.x_P, st.x_A)
        fixed[i] = m.stance == "fixed"
        a_fixed[i] = m.a
        Jc[i], Jd[i] = _judge.judge_tables(cell.judge, cell.protocol)
        wel[:, i] = (cell.welfare.alpha, cell.welfare.beta, cell.welfare.delta_c, m.c_e)
        targs[:, i] = (m.pi, m.p, m.rho, st.x_P_consult, st.x_P, st.x_A)
        strat[i] = (st.x_P_consult, st.x_P, st.x_A)
    return thr, fixed, a_fixed, Jc, Jd, wel, targs, strat


#: Model fields that, with the judge's tables, decide the presentation strategies.
_STRATEGY_FIELDS = ("model.c_e", "model.x_P_consult", "model.x_P", "model.x_A")


def _columns_of(table_columns, n: int) -> tuple:
    """Kernel inputs of every cell, column by column.

    The strategies are resolved per combination of the judge and protocol axes
    with c_e and the given x's, the Bernoulli thresholds and the rest as whole
    columns.  The result is the cell-by-cell plan's, bit for bit (tests check).
    """
    from antiamp.layout import combos

    field, tkey, Jc, Jd, checked = table_columns
    col, table_paths = field.axes, field.table_paths
    strat_paths = table_paths + [p for p in _STRATEGY_FIELDS if p in col]
    skey, sfirst = combos([tkey] + [col[p] for p in _STRATEGY_FIELDS if p in col], n)
    strat_u = np.empty((len(sfirst), 3))
    for k, i in enumerate(sfirst):
        st = checked(int(i), strat_paths, _judge.resolve_strategies)
        strat_u[k] = (st.x_P_consult, st.x_P, st.x_A)

    strat = strat_u[skey]
    pi, p, rho = (field(f"model.{f}").astype(float) for f in ("pi", "p", "rho"))
    probs = np.stack([pi, p, rho, strat[:, 0], strat[:, 1], strat[:, 2]], axis=1)
    thr = _rng.bernoulli_thresholds(probs)
    fixed = (field("model.stance") == "fixed").astype(np.int64)
    a_fixed = field("model.a").astype(np.int64)
    wel = np.stack([field(f"welfare.{f}").astype(float) for f in ("alpha", "beta", "delta_c")]
                   + [field("model.c_e").astype(float)])
    targs = probs.T.copy()
    return thr, fixed, a_fixed, Jc, Jd, wel, targs, strat


def columns(grid, table_columns=None) -> Columns:
    """Every cell's inputs: column by column from ``table_columns``
    (:func:`antiamp.sweeps.spec.grid_columns`), else one cell at a time (the
    reference the tests hold the columnar inputs to)."""
    if table_columns is None:
        thr, fixed, a_fixed, Jc, Jd, wel, targs, strat = _cells_one_by_one(grid)
    else:
        thr, fixed, a_fixed, Jc, Jd, wel, targs, strat = _columns_of(table_columns,
                                                                     grid.n_cells)
    return Columns(thr, fixed, a_fixed, Jc, Jd, tuple(wel),
                   (*targs, fixed.astype(bool), a_fixed), strat)


def kernel_inputs(cols: Columns, cells: np.ndarray, streams) -> dict:
    """The kernel's inputs of ``cells`` (with ``streams``: a stream word per cell)."""
    out = {"thr": cols.thr[cells], "fixed": cols.fixed[cells], "a_fixed": cols.a_fixed[cells]}
    if streams is not None:
        out["stream"] = np.asarray(streams, np.uint64)
    return out


def count(inputs: dict, n: int, seed: int, n_threads: int, device: str = "cpu") -> np.ndarray:
    """Class counts ``[cells, 32]`` of ``n`` instances per cell: one fused pass over
    every cell on common random numbers, or (with a ``stream`` input) a pass per
    cell on its own stream.  ``device``: ``run.device``, resolved where the block
    runs (``auto`` picks a worker's GPU; ``cuda``: the GPU kernels, the same counts).
    """
    thr, fixed, a_fixed = inputs["thr"], inputs["fixed"], inputs["a_fixed"]
    streams = inputs.get("stream")
    k0, k1 = _rng.split_seed(seed)
    if _runner.device_of(device) == "cuda":
        if streams is None:
            return _kb_gpu.class_counts_cells(thr, fixed, a_fixed, 0, n, k0, k1,
                                              np.uint64(kb.STREAM))
        return np.stack([_kb_gpu.class_counts(thr[c], fixed[c], a_fixed[c], 0, n, k0, k1,
                                              np.uint64(streams[c]))
                         for c in range(thr.shape[0])])
    with _runner.numba_threads(n_threads) as nt:
        n_blocks = 4 * nt
        if streams is None:
            return kb.class_counts_cells(thr, fixed, a_fixed, 0, n, k0, k1,
                                         np.uint64(kb.STREAM), n_blocks)
        out = np.empty((thr.shape[0], kb.N_CLASSES), np.int64)
        for c in range(thr.shape[0]):
            out[c] = kb.class_counts(thr[c], fixed[c], a_fixed[c], 0, n, k0, k1,
                                     np.uint64(streams[c]), n_blocks)
        return out


def theory_values(cols: Columns, cells: np.ndarray, n: int) -> dict:
    """Closed forms (and expected standard errors) of the given cells."""
    from antiamp.metrics import class_probabilities, evaluate

    prob = class_probabilities(*(np.asarray(a)[cells] for a in cols.theory_args))
    return evaluate(prob, cols.J_consult[cells], cols.J_debate[cells],
                    *(w[cells] for w in cols.welfare), n=n)


def values(cols: Columns, cells: np.ndarray, counts: np.ndarray, n: int) -> dict:
    """Every metric, standard error and closed form of ``cells`` from their counts,
    in the order of :func:`layout`'s variables."""
    from antiamp.metrics import CONTRAST_METRICS, PROTOCOL_METRICS, evaluate

    vals = evaluate(counts, cols.J_consult[cells], cols.J_debate[cells],
                    *(w[cells] for w in cols.welfare))
    th = theory_values(cols, cells, n)
    out = {}
    for name in PROTOCOL_METRICS:
        out[name] = vals[name][0]
        out[f"{name}_se"] = vals[name][1]
        out[f"{name}_exact"] = th[name][0]
    for name in CONTRAST_METRICS:
        out[name] = np.asarray(vals[name][0])
        out[f"{name}_se"] = np.asarray(vals[name][1])
        out[f"{name}_exact"] = np.asarray(th[name][0])
    return out


def _metric_attrs(spec) -> dict:
    return {"long_name": spec.long_name, "units": spec.units, "definition": spec.definition}


def layout(plan) -> tuple:
    """(coords, variables, static) of the model's stores (see FusedGrid.layout)."""
    from antiamp.metrics import CONTRAST_METRICS, PROTOCOL_METRICS
    from antiamp.schema import exact_long_name, se_long_name

    coords = {
        "protocol": (("protocol",), ["consult", "debate"], {"long_name": "oversight protocol"}),
        "transcript_class": (("transcript_class",), np.arange(N_CLASSES), {
            "long_name": "transcript class",
            "description": "16 omega + 8 [a = omega] + 4 e_P(consult) + 2 e_P(debate) + e_A"}),
    }
    variables = {}
    for name, spec in PROTOCOL_METRICS.items():
        variables[name] = (("protocol",), (2,), _metric_attrs(spec))
        variables[f"{name}_se"] = (("protocol",), (2,), {
            "long_name": se_long_name(spec.long_name), "units": spec.units})
        variables[f"{name}_exact"] = (("protocol",), (2,), {
            "long_name": exact_long_name(spec.long_name), "units": spec.units})
    for name, spec in CONTRAST_METRICS.items():
        variables[name] = ((), (), _metric_attrs(spec))
        variables[f"{name}_se"] = ((), (), {
            "long_name": se_long_name(spec.long_name), "units": spec.units})
        variables[f"{name}_exact"] = ((), (), {
            "long_name": exact_long_name(spec.long_name), "units": spec.units})
    static = {}
    if plan is not None:
        for k, nm in enumerate(("x_P_consult", "x_P", "x_A")):
            static[f"strategy_{nm}"] = (plan.columns.strategies[:, k], {
                "long_name": f"presentation probability {nm} given evidence", "units": "1"})
    return coords, variables, static


def dataset(cells: list, cols: Columns, counts: np.ndarray):
    """The block's Dataset as ``run_cells`` gives it (each cell's
    :func:`antiamp.models.baseline.core.simulate` variables stacked over ``cell``),
    from the block's counts: the first cell's labelled Dataset is the template."""
    from antiamp.config import Config
    from antiamp.metrics import CONTRAST_METRICS, PROTOCOL_METRICS
    from antiamp.registry import BASE_SECTIONS

    from .core import simulation_dataset

    xr = __import__("xarray")
    n = int(cells[0].run.n_instances)
    idx = np.arange(len(cells))
    vals = values(cols, idx, counts, n)
    first = Config(**{s: getattr(cells[0], s) for s in BASE_SECTIONS})
    names = list(PROTOCOL_METRICS) + list(CONTRAST_METRICS)
    template = simulation_dataset(
        first, {k: (vals[k][0], vals[f"{k}_se"][0]) for k in names},
        {f"{k}_exact": vals[f"{k}_exact"][0] for k in names}, counts[0])
    stacked = {**vals, "judge_table": cols.J_debate, "judge_table_consult": cols.J_consult,
               "class_counts": counts}
    data = {k: (("cell",) + template[k].dims, np.asarray(stacked[k]), template[k].attrs)
            for k in template.data_vars}
    return xr.Dataset(data, coords={k: v for k, v in template.coords.items()},
                      attrs=template.attrs)
