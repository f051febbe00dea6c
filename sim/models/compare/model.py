"""Every protocol on one task, on one Amp-vs-cost scale (seeds 000-003), as a model."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import core as cmp
from ...layout import add_triplets, axis_coords, cell_triplets, computed_cells, model_dataset, pm_of
from ...plotting import panel_grid, save, wrap_columns, wrap_prose
from ...registry import Model, blocks_by_instances
from .config import SECTIONS

#: protocol -> (colour, marker): one hue per seed, one marker per protocol.
STYLE = {
    "unchecked": ("k", "X"),
    "consult": ("C0", "o"), "debate": ("C0", "s"),
    "consult_jury": ("C9", "o"), "debate_jury": ("C9", "s"),
    "copmad": ("C1", "^"), "colmad": ("C1", "v"),
    "foam_memo": ("C2", "D"), "foam_summary": ("C8", "d"),
    "redelib_fixed": ("C3", "P"), "redelib_adaptive": ("C3", "*"),
}


def _cell(c) -> dict:
    mp = cmp.mapped(c)
    ex, err = cmp.exact_with_error(c, mp)
    sim = (cmp.simulate(c, int(c.run.n_instances), int(c.run.seed), int(c.run.n_threads), mp)
           if c.run.n_instances > 1 else None)
    r = cell_triplets(ex, sim)
    r["margin_scale"] = np.float64(mp.margin_scale)
    r["flaws_initial"] = np.float64(mp.flaws)
    r["quad_error"] = err
    return r


def solve_cells(base, cells):
    shape, dims, axes = (len(cells),), ("cell",), ()  # a block: its cells along "cell"
    res, st, elapsed = computed_cells(_cell, cells, shape)
    ax = tuple(dims)
    data = {}
    add_triplets(data, st, ax, ("protocol",), cmp.METRICS,
                 units=lambda k: "calls" if k == "cost" else "1",
                 sim_how="simulated by the protocol's own model kernel",
                 exact_how="exact (the protocol's own model: closed form, enumeration or "
                           "quadrature)")
    # a block's fronts at once (one comparison of every pair of protocols a cell)
    data["on_front"] = (ax + ("protocol",), cmp.front(st("amp_exact"), st("cost_exact")), {
        "long_name": "on the exact Amp-vs-cost Pareto front (no protocol has lower Amp at "
                     "no higher cost)", "units": "1"})
    data["quad_error"] = (ax + ("protocol",), st("quad_error"), {
        "long_name": "bound on the error of the protocol's exact values, the largest over "
                     "its metrics in their own units: 0 for closed forms; CopMAD's judge "
                     "table (QUADPACK), FOAM's truncated flaw law, the adaptive "
                     "re-deliberation's quadrature over the pool bias", "units": "1"})
    data["margin_scale"] = (ax, st("margin_scale"), {
        "long_name": "factor on the re-deliberation evidence margins that makes the first "
                     "pass right with probability p", "units": "1"})
    data["flaws_initial"] = (ax, st("flaws_initial"), {
        "long_name": "mediation's mean initial flaws F_0 = -ln p", "units": "1"})
    coords = axis_coords(axes, dims, {
        "protocol": ("protocol", list(cmp.NAMES), {
            "long_name": "oversight protocol of any seed",
            "description": "; ".join(f"{k}: {v[0]}" for k, v in cmp.PROTOCOLS.items())}),
        "protocol_label": ("protocol", [v[0] for v in cmp.PROTOCOLS.values()],
                           {"long_name": "protocol"}),
        "seed_model": ("protocol", [v[1] for v in cmp.PROTOCOLS.values()],
                       {"long_name": "the seed whose model runs the protocol"})})
    return model_dataset(
        data, coords, "antiamp: every protocol on one task (seeds 000-003)",
        "each protocol by its own model at the task's mapped parameters: exact "
        "values beside each model's compiled kernel (common seed)", elapsed)


#: The config paths :func:`validate` reads beyond the declared ranges: the task, the judge, and
#: the composed models' sections (their checks and the re-deliberation first pass's accuracy).
#: A grid is validated column by column, and :func:`validate` once per distinct combination of
#: the axes these cover.
VALIDATE_READS = ("model.stance", "model.p", "model.rho", "model.c_e", "judge.kind",
                  "judge.jury_size", "colmad", "mediation", "redeliberation")


def validate(cfg) -> None:
    cmp.validate_compare(cfg)


# ------------------------------------------------------------------ table and figures
def _task(cfg, wrap: bool = False, swept=()) -> str:
    """The task's parameters in words; a swept field reads "swept"."""
    def v(path):
        sec, key = path.split(".")
        return "swept" if path in swept else cfg[sec][key]

    return (f"task: the model right w.p. p = {v('model.p')}, the wrong side's evidence "
            f"passes w.p. rho = {v('model.rho')}, errors present w.p. pi = {v('model.pi')};"
            + ("\n" if wrap else " ") + f"logit judge lam = {v('judge.lam')}, mu = "
            f"{v('judge.mu')}, kappa = {v('judge.kappa')}; juries of "
            f"{v('compare.jury_size')}")


def format_compare(ds) -> str:
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    lines = [_task(cfg),
             f"mapped: mediation F_0 = -ln p = {float(ds.flaws_initial):.4f}; re-deliberation "
             f"margins x {float(ds.margin_scale):.4f} (first pass right w.p. p); ColMAD/CopMAD "
             f"{cfg['colmad']['rounds']} rounds, rhetoric gap {cfg['colmad']['hack']}, "
             f"delta {cfg['colmad']['delta']}, eta {cfg['colmad']['eta']}", "",
             "simulated ± SE [exact]; * = on the Amp-vs-cost front", ""]
    cols = ("amp", "acc", "fwc", "asd", "undecided", "cost")
    rows = [f"{'protocol':<38}{'seed':>5}" + "".join(f"{k:>28}" for k in cols)]
    for p in ds.protocol.values:
        d = ds.sel(protocol=p)
        mark = "*" if bool(d.on_front) else " "
        rows.append(f"{mark}{str(d.protocol_label.values):<37}{str(d.seed_model.values):>5}"
                    + "".join(f"{pm_of(d, k):>28}" for k in cols))
    lines += wrap_columns(rows, keep=2)  # within a terminal's 100 columns
    lines += ["", "Amp: Pr(final answer wrong | the model's answer wrong); fwc: Pr(final right "
              "| the model right); asd: the Agent Score Difference fwc - Amp; undecided: INSUFFICIENT; cost: model calls per case "
              "(a judge or juror is one call; a human review counts mediation.human_cost)."]
    return "\n".join(wrap_prose(lines))


def _legend(fig, names):
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=STYLE[p][0], marker=STYLE[p][1], ls="none", ms=6,
                      label=cmp.PROTOCOLS[p][0]) for p in names]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=7.5,
               frameon=False)


def _cost_axis(ax, cost, axis: str = "x") -> None:
    """Log-scaled cost with plain-number ticks (1, 2, 3, 5, 10, ...)."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    getattr(ax, f"set_{axis}scale")("log")
    c = np.asarray(cost, float)
    c = c[np.isfinite(c) & (c > 0)]
    ticks = [t for t in (1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 100, 200, 500, 1000)
             if len(c) and c.min() / 1.3 <= t <= c.max() * 1.3]
    getattr(ax, f"set_{axis}ticks")(ticks)
    getattr(ax, f"{axis}axis").set_major_formatter(ScalarFormatter())
    getattr(ax, f"{axis}axis").set_minor_formatter(NullFormatter())


def _front_line(ax, amp, cost):
    on = cmp.front(amp, cost)
    order = np.argsort(cost[on])
    ax.step(cost[on][order], amp[on][order], where="post", color="0.55", lw=1, ls="--",
            zorder=0)


def plot_cell(ds, path: Path) -> list:
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    fig, axs = panel_grid(2, height=3.4)
    names = [str(p) for p in ds.protocol.values]
    cost = ds.cost_exact.values
    for ax, v, t in ((axs[0], "amp", "Amp: the model's mistakes ratified"),
                     (axs[1], "acc", "accuracy of the final answer")):
        for j, p in enumerate(names):
            col, mk = STYLE[p]
            ax.plot(cost[j], ds[f"{v}_exact"].values[j], marker=mk, color=col, ls="none",
                    ms=8 if mk == "*" else 6)
            sv = float(ds[v].values[j])
            if np.isfinite(sv):
                ax.errorbar(float(ds.cost.values[j]), sv, yerr=1.96 * float(ds[f"{v}_se"][j]),
                            xerr=1.96 * np.nan_to_num(float(ds.cost_se[j])), fmt="none",
                            ecolor="k", elinewidth=0.8, capsize=1.5)
        _cost_axis(ax, cost)
        ax.set_xlabel("cost: model calls per case (log scale)", fontsize=8)
        ax.set_title(t, fontsize=9)
        ax.set_ylim(-0.02, 1.02)
    _front_line(axs[0], ds.amp_exact.values, cost)
    axs[0].set_ylabel("Pr(final wrong | model wrong)", fontsize=8)
    axs[1].set_ylabel("Pr(final right)", fontsize=8)
    _legend(fig, names)
    fig.suptitle("every protocol on one task (markers exact, bars simulated ±1.96 SE; "
                 "dashed: the Amp-vs-cost front)\n" + _task(cfg, wrap=True), fontsize=8.5)
    return save(fig, path)


def plot_grid(ds, path: Path) -> list:
    from ...plotting import label_x, line_axis, shown_at

    axis = line_axis(ds, "amp_exact")
    if axis is None:
        return []
    dims, x, sub, (xv, xpos, cat) = axis
    fig, axs = panel_grid(4, height=2.9)
    names = [str(p) for p in sub.protocol.values]
    for ax, v, t in zip(axs, ("amp", "acc", "cost"),
                        ("Amp: Pr(final wrong | model wrong)", "accuracy",
                         "cost: model calls per case")):
        for p in names:
            d = sub.sel(protocol=p)
            col, mk = STYLE[p]
            ax.plot(xpos, d[f"{v}_exact"].values, "-", marker=mk, ms=4, color=col, lw=1.1)
            if np.isfinite(d[v].values).any():
                ax.errorbar(xpos, d[v].values, yerr=1.96 * np.nan_to_num(d[f"{v}_se"].values),
                            fmt="none", ecolor=col, elinewidth=0.8, capsize=1.5)
        ax.set_title(t, fontsize=9)
    _cost_axis(axs[2], sub.cost_exact.values.ravel(), "y")
    label_x(axs[:3], sub, x)
    ax = axs[3]
    for p in names:
        d = sub.sel(protocol=p)
        col, mk = STYLE[p]
        ax.plot(d.cost_exact.values, d.amp_exact.values, "-", marker=mk, ms=4, color=col,
                lw=0.9, alpha=0.9)
        ax.plot(d.cost_exact.values[-1:], d.amp_exact.values[-1:], marker=mk, ms=8,
                color=col, ls="none", mec="k", mew=0.6)
    _cost_axis(ax, sub.cost_exact.values.ravel())
    ax.set_xlabel("model calls per case (log scale)", fontsize=8)
    ax.set_ylabel("Amp", fontsize=8)
    ax.set_title(f"Amp against cost as {sub[x].attrs.get('symbol', x)} runs from "
                 f"{xv[0]} to {xv[-1]}\n(outlined: the last value)", fontsize=8.5)
    _legend(fig, names)
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    swept = {ds[d].attrs.get("config_path") for d in dims}
    fig.suptitle("every protocol on one task" + shown_at(ds, dims[1:]) + "\n"
                 + _task(cfg, wrap=True, swept=swept), fontsize=8.5)
    return save(fig, path)


#: A grid's default block: 8 cells at 160,000 instances a cell or more (each cell runs
#: every protocol's exact values, about 50 ms, and its kernels, tens of milliseconds at
#: 10^4 instances), more as a cell's instances fall, at most 128 (about 10 s of a
#: block at 10^4 instances), so that a block's own cost, its Dataset and the store's
#: chunk files (tens of milliseconds), is small beside its cells'.
cells_per_block = blocks_by_instances(8, 160_000, most=128)


MODEL = Model(
    name="compare",
    title="every protocol on one task: consultancy, debate, juries, CopMAD, ColMAD, FOAM "
          "mediation, re-deliberation (seeds 000-003) on one Amp-vs-cost scale",
    run_cells=solve_cells,
    sections=SECTIONS,
    uses=("model", "judge", "protocol", "welfare", "run", "compare", "colmad", "mediation",
          "redeliberation"),
    validate=validate, validate_reads=VALIDATE_READS,
    kernel_fields=("model.*", "judge.*", "compare.*", "colmad.*", "mediation.*",
                   "redeliberation.*", "run.seed", "run.n_instances"),
    format_table=format_compare, figures=plot_grid, cell_figures=plot_cell,
    plot_vars=("amp_exact",), cells_per_block=cells_per_block,
)
