"""Provenance-backed pluralistic mediation (seed 002, FOAM), as a model."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...layout import add_triplets, axis_coords, cell_triplets, computed_cells, model_dataset, pm_of
from ...plotting import panel_grid, save, shared_legend, wrap_columns, wrap_prose
from ...registry import Model, blocks_by_cost
from .config import SECTIONS
from . import core as md

COLOURS = {"memo": "C0", "summary": "C3"}


def _cell(c, par=None) -> dict:
    par = md.params_of(c) if par is None else par
    ex = md.exact(par)
    sim = (md.simulate(par, int(c.run.n_instances), int(c.run.seed), int(c.run.n_threads),
                       device=c.run.device)
           if c.run.n_instances > 1 else None)
    r = cell_triplets(ex, sim)
    r["mean_residual"] = np.float64(md.mean_residual(par))
    r["quad_error"] = np.float64(md.exact_error(par, ex=ex))  # ex: at the same (default) cut
    return r


def solve_cells(base, cells):
    shape, dims, axes = (len(cells),), ("cell",), ()  # a block: its cells along "cell"
    res, st, elapsed = computed_cells(_cell, cells, shape, md.params_of)
    ax = tuple(dims)
    data = {}
    for group, d in ((md.METRICS, ("protocol",)), (md.SHARED, ())):
        add_triplets(data, st, ax, d, group, se_how=" (delta method)", units=lambda k: (
            "points" if k == "eq_score" else ("calls" if k == "cost" else "1")))
    data["mean_residual"] = (ax, st("mean_residual"), {
        "long_name": "mean residual flaws in closed form: F_0 (1 - d r)^k + false alarms' "
                     "survivors", "units": "1"})
    data["quad_error"] = (ax, st("quad_error"), {
        "long_name": "bound on the error of every exact value in its own units (the residual "
                     "flaw law cut where its Poisson tail is below 1e-20, plus rounding)",
        "units": "1"})
    coords = axis_coords(axes, dims, {"protocol": ("protocol", list(md.PROTOCOLS), {
        "long_name": "mediation synthesis",
        "description": "memo: dissent memo (every dissent kept); summary: monolithic summary"})})
    return model_dataset(
        data, coords, "antiamp: provenance-backed pluralistic mediation (seed 002)",
        "Monte Carlo (common random numbers across syntheses, the human's "
        "decision Rao-Blackwellised) beside exact values", elapsed)


#: The config paths :func:`validate` reads beyond the declared ranges: escalation against
#: perspectives, the source and its classes. A grid is validated column by column, and
#: :func:`validate` once per distinct combination of the axes these cover.
VALIDATE_READS = ("mediation.escalate_at", "mediation.perspectives", "mediation.source",
                  "mediation.classes")


def validate(cfg) -> None:
    md.validate_mediation(cfg)


# ------------------------------------------------------------------ table and figures
def format_mediation(ds) -> str:
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    m = cfg["mediation"]
    lines = [
        f"mediation (seed 002): {m['citations']} citations per case from source "
        f"{m['source']}; relevance check {m['relevance']}",
        f"loop: F_0 = {m['flaws']} flaws, d = {m['detect']}, r = {m['repair']}, k = "
        f"{m['iterations']} iterations, false alarms {m['false_alarm']}; {m['perspectives']} "
        f"perspectives (dissent {m['dissent']} per flaw, false {m['false_dissent']}); summary "
        f"erases {m['erase']}; escalate at {m['escalate_at']} dissents to a human right w.p. "
        f"{m['human_accuracy']} costing {m['human_cost']} calls", "",
        "simulated ± SE [exact]:",
        f"  recommendation wrong {pm_of(ds, 'wrong')}; residual flaws {pm_of(ds, 'residual')} "
        f"(closed form {float(ds.mean_residual):.4f})",
        f"  perfect validation: case {pm_of(ds, 'perfect_case')}, citations exact "
        f"{pm_of(ds, 'exact_share')}; evidence quality {pm_of(ds, 'eq_score', 2)}", ""]
    cols = ("amp", "fwc", "acc", "escalated", "err_unescalated", "erased", "cost")
    rows = [f"{'synthesis':<10}" + "".join(f"{k:>28}" for k in cols)]
    for p in ds.protocol.values:
        d = ds.sel(protocol=p)
        rows.append(f"{p:<10}" + "".join(f"{pm_of(d, k):>28}" for k in cols))
    lines += wrap_columns(rows)  # within a terminal's 100 columns
    lines += ["", "Amp: Pr(final = a | a wrong); err_unescalated: Pr(a wrong | not escalated); "
              "erased: a wrong recommendation whose every dissent the synthesis dropped."]
    return "\n".join(wrap_prose(lines))


def plot_cell(ds, path: Path) -> list:
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    m = cfg["mediation"]
    fig, axs = panel_grid(3, height=3.0)
    ax = axs[0]
    keys = ("amp", "escalated", "err_unescalated", "erased")
    x = np.arange(len(keys))
    for i, p in enumerate(ds.protocol.values):
        d = ds.sel(protocol=p)
        pos = x + (i - 0.5) * 0.38
        ax.bar(pos, np.nan_to_num([float(d[f"{k}_exact"]) for k in keys]), 0.36,
               color=COLOURS[str(p)], alpha=0.85)
        sim = np.array([float(d[k]) for k in keys])
        if np.isfinite(sim).any():
            ax.errorbar(pos, sim, yerr=1.96 * np.array([float(d[f"{k}_se"]) for k in keys]),
                        fmt="o", ms=2.5, color="k", capsize=1.5)
    ax.set_xticks(x, ["Amp", "escalated", "wrong if\nunescalated", "dissent\nerased"])
    ax.set_ylim(0, 1)
    ax.set_title("the final decision by synthesis", fontsize=9)
    ax = axs[1]
    srcs = list(md.SOURCES)
    xs = np.arange(len(srcs))
    for j, (src, cls) in enumerate(md.SOURCES.items()):
        ce = md.citation_exact(md.Params(citations=int(m["citations"]), classes=cls))
        ax.bar(j - 0.2, 100 * ce["exact_share"], 0.38, color="C2", alpha=0.85)
        ax.bar(j + 0.2, ce["eq_score"], 0.38, color="C4", alpha=0.85)
        pv, eq = md.SEED_TABLES[src]
        ax.plot([j - 0.2, j + 0.2], [pv, eq], "k_", ms=14, mew=1.5)
    ax.set_xticks(xs, srcs)
    ax.set_title("citations: exact share (green), evidence quality (purple);\n"
                 "black ticks: the seed's Tables 2 and 1", fontsize=8)
    ax = axs[2]
    k = np.arange(0, max(8, int(m["iterations"])) + 1)
    surv = 1 - m["detect"] * m["repair"]
    ax.plot(k, m["flaws"] * surv ** k, "-", color="0.3", lw=1.2)
    ax.plot([m["iterations"]], [float(ds.residual_exact)], "o", color="C1", ms=6)
    ax.set_xlabel("iterations k", fontsize=8)
    ax.set_title("residual flaws F_0 (1 - d r)^k (dot: this cell,\nwith false alarms)",
                 fontsize=8)
    from ...plotting import integer_ticks

    integer_ticks(ax, k)
    shared_legend(fig, [(str(p), COLOURS[str(p)]) for p in ds.protocol.values],
                  [("simulated ±1.96 SE", "none", "o")])
    fig.suptitle(f"pluralistic mediation (seed 002): {m['iterations']} iterations, "
                 f"{m['perspectives']} perspectives, escalate at {m['escalate_at']}",
                 fontsize=9)
    return save(fig, path)


def plot_grid(ds, path: Path) -> list:
    from ...plotting import exact_and_simulated, label_x, line_axis, shown_at

    axis = line_axis(ds, "amp_exact")
    if axis is None:
        return []
    dims, x, sub, (_, xpos, _) = axis
    fig, axs = panel_grid(5, height=2.7)
    for ax, v, t in zip(axs, ("amp", "escalated", "err_unescalated", "cost"),
                        ("Amp", "escalation rate", "Pr(wrong | not escalated)",
                         "cost per case (model calls)")):
        for p in ds.protocol.values:
            exact_and_simulated(ax, sub.sel(protocol=p), v, xpos, COLOURS[str(p)])
        ax.set_title(t, fontsize=9)
    ax = axs[4]
    ax.plot(xpos, 100 * sub.exact_share_exact.values, "-o", ms=3, color="C2",
            label="citations exact (%)")
    ax.plot(xpos, 100 * sub.perfect_case_exact.values, "--o", ms=3, color="C2",
            label="cases all exact (%)")
    ax.plot(xpos, sub.eq_score_exact.values, "-s", ms=3, color="C4", label="evidence quality")
    ax.set_title("citations", fontsize=9)
    ax.legend(fontsize=7, frameon=False, loc="best")
    label_x(axs, sub, x)
    shared_legend(fig, [(str(p), COLOURS[str(p)]) for p in ds.protocol.values],
                  [("exact", "-", None), ("simulated ±1.96 SE", "none", "o")])
    fig.suptitle(f"pluralistic mediation (seed 002){shown_at(ds, dims[1:])}", fontsize=9)
    return save(fig, path)


def cell_work(size) -> tuple:
    """The work bound's cost of a cell (:class:`antiamp.registry.Model` ``work``): a
    case's draws grow with its iterations, perspectives and citations."""
    n = size("run", "n_instances", 0)
    per = (1 + size("mediation", "iterations", 3) + size("mediation", "perspectives", 3)
           + size("mediation", "citations", 8))
    return n * per, (f"{n:,.0f} instances x {per:,.0f} (1 + mediation.iterations + "
                     "perspectives + citations)")


#: A grid's default block: about 6 s of a default cell's CPU (5 ms of exact values and
#: delta method whatever its instances, 28 ms a million instances; measured at 10^4 to
#: 10^6): 1,024 cells at 10^4 instances a cell, 180 at 10^6 (were 320 and 16: 320-cell
#: blocks spent about 0.1 ms a cell on the block's own Dataset and chunk files).
cells_per_block = blocks_by_cost(5.0, 28.0)


MODEL = Model(
    name="mediation",
    title="provenance-backed pluralistic mediation (seed 002, FOAM)",
    run_cells=solve_cells,
    sections=SECTIONS,
    uses=("model", "run", "mediation"),
    validate=validate, validate_reads=VALIDATE_READS,
    kernel_fields=("mediation.*", "run.seed", "run.n_instances"),
    format_table=format_mediation, figures=plot_grid, cell_figures=plot_cell,
    plot_vars=("amp_exact",), cells_per_block=cells_per_block,
    gpu=True,  # the Monte Carlo's integer sums (kernels.gpu.mediation)
    work=cell_work,
)
