"""Juries of heterogeneous, correlated judges (seed 000, section 4 extended), as a model."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from ...schema import CONSULT_DEBATE
from ...lazy import lazy
xr = lazy("xarray")

from ...config import ConfigError
from ...registry import Model, strategies_solved
from .config import SECTIONS
from ...layout import axis_coords
from ...plotting import both, judge_fields, line_figure, protocol_rows
from . import core as pnm


def solve_cells(base, cells) -> xr.Dataset:
    shape, dims, axes = (len(cells),), ("cell",), ()  # a block: its cells along "cell"
    from ...metrics import CONTRAST_METRICS, PROTOCOL_METRICS

    eqc = base.equilibrium
    calls: list = []
    t0 = time.perf_counter()
    r = pnm.solve_cells(cells, eqc.payoffs, base.run, calls)
    elapsed = time.perf_counter() - t0
    sh, ax = tuple(shape), tuple(dims)

    def rs(a):
        return np.asarray(a).reshape(sh + np.asarray(a).shape[1:])

    data = {}
    for k, spec in list(PROTOCOL_METRICS.items()) + list(CONTRAST_METRICS.items()):
        d = ax + (("protocol",) if k in PROTOCOL_METRICS else ())
        data[k] = (d, rs(r[k]), {"long_name": spec.long_name, "units": spec.units,
                                 "definition": spec.definition})
        data[f"{k}_se"] = (d, rs(r[f"{k}_se"]), {
            "long_name": f"standard error of {spec.long_name}" + (
                "" if eqc.payoffs == "simulated" else " expected at run.n_instances"),
            "units": spec.units})
    data["amp_panel_mc_error"] = (ax + ("protocol",), rs(r["amp_mc"]), {
        "long_name": "bound on the error of Amp from the panel Monte Carlo", "units": "1"})
    data["quad_error"] = (ax, rs(r["quad_error"]), {
        "long_name": "error estimate of the panel tables' quadrature over the shared latent "
                     "(QUADPACK's, the largest entry, plus the tail beyond 12 sd; every "
                     "metric a mixture of entries, a difference off by twice; NaN: Monte "
                     "Carlo tables, see amp_panel_mc_error)", "units": "1"})
    data["panel_table"] = (ax + ("e_P", "e_A"), rs(r["J_d"]), {
        "long_name": "panel's debate endorsement probability Pr(y = a | e_P, e_A)", "units": "1"})
    data["panel_table_consult"] = (ax + ("e_P",), rs(r["J_c"]), {
        "long_name": "panel's consultancy endorsement probability", "units": "1"})
    data["panel_table_se"] = (ax + ("e_P", "e_A"), rs(r["J_d_se"]), {
        "long_name": "Monte Carlo standard error of panel_table", "units": "1"})
    data["vote_corr"] = (ax, rs(r["vote_corr"]), {
        "long_name": "correlation of two judges' votes on the debate tie",
        "units": "1"})
    data["n_eff"] = (ax, rs(r["n_eff"]), {
        "long_name": "effective number of independent votes n / (1 + (n - 1) r)",
        "units": "judges"})
    data["b_single"] = (ax, rs(r["b_single"]), {
        "long_name": "one judge's endorsement of a debate tie", "units": "1"})
    data["b_panel"] = (ax, rs(r["b_panel_tie"]), {
        "long_name": "the panel's endorsement of a debate tie", "units": "1"})
    data["b_independent"] = (ax, rs(r["b_independent"]), {
        "long_name": "b_n: the same rule by majority of independent identical judges",
        "units": "1"})
    coords = axis_coords(axes, dims, {"protocol": ("protocol", ["consult", "debate"],
                                               dict(CONSULT_DEBATE)),
                                  "e_P": ("e_P", [0, 1]), "e_A": ("e_A", [0, 1])})
    ds = xr.Dataset(data, coords=coords)
    ds.attrs.update({
        "title": "antiamp: juries of heterogeneous, correlated judges",
        "payoffs": eqc.payoffs, "method": "dominant strategies",
        "kernel_calls": int(len(calls)), "solve_seconds": float(elapsed),
        "solver_report": "no issues", })
    return ds


#: The config paths :func:`validate` reads beyond the declared ranges: the dominance check
#: against the panel's tables (drawn with run.seed on run.device). A grid is validated column
#: by column, and :func:`validate` once per distinct combination of the axes these cover.
VALIDATE_READS = ("model.c_e", "judge", "protocol", "panel", "run.seed", "run.device")


def validate(cfg) -> None:
    """Checks of extension 'panel' beyond the shared ones (ConfigError names the field)."""
    from ...evidence_game import validate_equilibrium

    pnm.validate_panel(cfg.panel)
    if cfg.judge.jury_size != 1:
        raise ConfigError("model=panel builds the jury itself (panel.size); leave "
                          "judge.jury_size at 1")
    validate_equilibrium(cfg.equilibrium)
    from .core import panel_strategies

    panel_strategies(cfg)  # the dominance check reads the panel's tables (remembered)


# ------------------------------------------------------------------ table and figures
def format_panel(ds: xr.Dataset) -> str:
    import yaml

    pc = yaml.safe_load(ds.attrs["config"])["panel"]
    lines = [f"a panel of {pc['size']} judges, {pc['rule']} rule, icc = {pc['icc']}, "
             f"bias sd = {pc['bias_sd']} ({ds.attrs['payoffs']} class weights)",
             f"debate tie: one judge endorses {float(ds.b_single):.4f}; the panel "
             f"{float(ds.b_panel):.4f}; independent identical judges (b_n) "
             f"{float(ds.b_independent):.4f}",
             f"correlation of two judges' votes {float(ds.vote_corr):.4f}; effective independent "
             f"votes {float(ds.n_eff):.3f} of {pc['size']}", ""]
    lines += protocol_rows(ds, [(v, v) for v in ("amp", "acc", "fwc", "tie_rate", "welfare")])
    lines.append("")
    lines.append("panel table Pr(y = a | e_P, e_A), debate: " + str(np.round(ds.panel_table.values, 5)
                                                                  .tolist()))
    return "\n".join(lines)


def plot_panel(ds: xr.Dataset, path: Path) -> list:
    def identity(axs, x):
        if x == "size":
            axs[3].plot(ds[x].values, ds[x].values, color="0.6", lw=0.8, label="n_eff = n")
            axs[3].legend(fontsize=7, frameon=False)

    return line_figure(ds, path, [
        ("mistake amplification Amp (dashed: consultancy)", both("amp")),
        ("accuracy (dashed: consultancy)", both("acc")),
        ("panel endorsement of a debate tie (dotted: b_n)",
         [("b_panel", None, "-o"), ("b_independent", None, ":")]),
        ("effective independent votes", [("n_eff", None, "-o")]),
    ], "juries", _fields(ds), identity)



def _fields(ds) -> list:
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    return judge_fields(cfg) + [("panel", k) for k in ("size", "rule", "icc", "bias_sd")]



MODEL = Model(
    name="panel",
    title="juries of heterogeneous, correlated judges",
    run_cells=solve_cells,
    sections=SECTIONS,
    validate=validate, validate_reads=VALIDATE_READS, prepare=strategies_solved,
    kernel_fields=("model.*", "judge.*", "protocol.*", "panel.*", "run.n_instances", "run.seed"),
    gpu=True,  # the simulated-payoff path runs the baseline's kernel
    format_table=format_panel, figures=plot_panel, plot_vars=("amp", "acc", "b_panel"),
    # A cell's tables cost about a millisecond: 64-cell blocks spent more on their own
    # Dataset and chunk files than on solving (a 10^4-cell grid at 10^4 instances a cell,
    # the overhead per cell about 18x the fused baseline's); 1,024 cells a block is about
    # a second of solving, still small enough to spread over workers and to resume.
    cells_per_block=1024,
)
