"""Error detection by debate (seed 001): ColMAD, CopMAD and a single detector, as a model."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from ...layout import (add_triplets, axis_coords, configs_first, model_dataset, pm,
                       simulated_pairs)
from ...plotting import panel_grid, save, shared_legend, wrap_columns, wrap_prose
from ...registry import Model, blocks_by_cost
from .config import SECTIONS
from . import core as cm

COLOURS = {"single": "C7", "copmad": "C3", "colmad": "C0", "oracle": "C2"}
#: The seed's headline: ColMAD's F1 about 19% above CopMAD's.
SEED_GAIN = 0.19


def _cell(c, par=None) -> tuple:
    """A cell's solvers: its parameters, exact mean vector and simulated metrics (None
    without instances); :func:`solve_cells` derives the rest a block at once.  ``par``:
    the cell's parameters when the block resolved them."""
    par = cm.params_of(c) if par is None else par
    ex = cm.exact_means(par)
    sim = (cm.simulate(par, int(c.run.n_instances), int(c.run.seed), int(c.run.n_threads),
                       device=c.run.device)
           if c.run.n_instances > 1 else None)
    return par, ex, sim, cm.quad_error(par), cm.hack_for_gain(par, SEED_GAIN)


def _block_values(cells) -> tuple:
    """``(st, seconds)``: a block's values by name (``k_exact``, ``k``, ``k_se`` of every
    metric; ``pass_wrong``, ``quad_error``, ``hack_seed_gain``), its cells' exact metrics
    derived from their stacked mean vectors at once (:func:`~.core.metric_rows`), not a
    cell at a time (the same floats: the tests compare them with :func:`~.core.metric_values`
    cell by cell)."""
    t0 = time.perf_counter()
    configs, params = configs_first(cells, cm.params_of)
    rows = [_cell(c, par) for c, par in zip(configs, params)]
    exact = cm.metric_rows(np.array([r[1] for r in rows]).reshape(len(rows), cm.L))
    values = {f"{k}_exact": v for k, v in exact.items()}
    values.update(simulated_pairs([r[2] for r in rows], exact))
    values["pass_wrong"] = np.array([r[0].pass_wrong for r in rows], np.float64)
    values["quad_error"] = np.array([r[3] for r in rows], np.float64)
    values["hack_seed_gain"] = np.array([r[4] for r in rows], np.float64)
    return values.__getitem__, time.perf_counter() - t0


def solve_cells(base, cells):
    dims, axes = ("cell",), ()  # a block: its cells along "cell"
    st, elapsed = _block_values(cells)
    ax = tuple(dims)
    data = {}
    add_triplets(data, st, ax, ("protocol",), cm.METRICS,
                 units=lambda k: "calls" if k == "calls" else "1",
                 exact_how="exact enumeration", se_how=" (delta method)")
    add_triplets(data, lambda k: st(k)[..., 0], ax, (), {
        "f1_gain": "F1(ColMAD) / F1(CopMAD) - 1",
        "disagree": "share of responses on which the detectors disagree"},
        exact_how="exact enumeration", se_how=" (delta method)")
    data["pass_wrong"] = (ax, st("pass_wrong"), {
        "long_name": "per round, the wrong side's quote passes verification: "
                     "1 - (1 - rho_fab (1 - v_q)) (1 - m (1 - v_r))", "units": "1"})
    data["quad_error"] = (ax, st("quad_error"), {
        "long_name": "largest error bound of the CopMAD judge table's quadratures over "
                     "rhetoric (QUADPACK)", "units": "1"})
    data["hack_seed_gain"] = (ax, st("hack_seed_gain"), {
        "long_name": f"rhetoric gap (colmad.hack) at which ColMAD's F1 is {SEED_GAIN:.0%} "
                     "above CopMAD's, the seed's headline (exact)", "units": "1"})
    coords = axis_coords(axes, dims, {"protocol": ("protocol", list(cm.PROTOCOLS), {
        "long_name": "error-detection protocol",
        "description": "single: detector 1 alone; copmad: competitive debate of the two "
                       "detectors; colmad: collaborative debate; oracle: the better detector "
                       "known"})})
    return model_dataset(
        data, coords, "antiamp: error detection by collaborative and competitive debate (seed 001)",
        "Monte Carlo (common random numbers across protocols, the judge "
        "Rao-Blackwellised over rhetoric) beside exact enumeration", elapsed)


#: The config paths :func:`validate` reads beyond the declared ranges: the judge's kind and
#: size; eta's feasible range from the detectors. A grid is validated column by column, and
#: :func:`validate` once per distinct combination of the axes these cover.
VALIDATE_READS = ("judge.kind", "judge.jury_size", "colmad.eta", "colmad.eta_mode",
                  "colmad.sens_1", "colmad.sens_2", "colmad.spec_1", "colmad.spec_2")


def validate(cfg) -> None:
    cm.validate_colmad(cfg)


# ------------------------------------------------------------------ table and figures
def format_colmad(ds) -> str:
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    c, j = cfg["colmad"], cfg["judge"]
    lines = [
        f"error detection by debate (seed 001): p_error {c['p_error']}; detector 1 sens/spec "
        f"{c['sens_1']}/{c['spec_1']}, detector 2 {c['sens_2']}/{c['spec_2']}, eta {c['eta']} "
        f"({c['eta_mode']}); {c['rounds']} rounds",
        f"evidence x {c['evidence']}; wrong side: fabricates {c['fabricate']} (verification "
        f"{c['verify']}), misinterprets {c['mislead']} (relevance check {c['relevance']}): "
        f"passes {float(ds.pass_wrong):.3f} per round; hacking gap {c['hack']}, kappa_r "
        f"{c['kappa_r']}; ColMAD concedes to bare assertions w.p. {c['delta']}",
        f"judge: logit λ = {j['lam']}, μ = {j['mu']} (toward 'error'), κ = {j['kappa']}", "",
        "simulated ± SE [exact]:"]
    cols = ("acc", "precision", "recall", "f1", "amp", "hacking")
    rows = [f"{'protocol':<9}" + "".join(f"{k:>26}" for k in cols) + f"{'calls':>8}"
            + f"{'err. red.':>10}"]
    for p in ds.protocol.values:
        d = ds.sel(protocol=p)
        row = f"{p:<9}"
        for k in cols:
            cell = pm(float(d[k]), float(d[f"{k}_se"]), float(d[f"{k}_exact"]))
            row += f"{cell:>26}"
        row += f"{float(d.calls_exact):>8.3f}{float(d.error_reduction_exact):>10.3f}"
        rows.append(row)
    lines += wrap_columns(rows)  # within a terminal's 100 columns
    g, gs, ge = float(ds.f1_gain), float(ds.f1_gain_se), float(ds.f1_gain_exact)
    lines += ["", f"F1(ColMAD) / F1(CopMAD) - 1 = {pm(g, gs, ge)}; the detectors disagree "
              f"on {float(ds.disagree_exact):.3f} of responses"]
    h = float(ds.hack_seed_gain)
    lines.append(f"the seed's +{SEED_GAIN:.0%} needs colmad.hack = {h:.3f} here"
                 if math.isfinite(h) else f"no hacking gap in [0, 10] gives the seed's "
                 f"+{SEED_GAIN:.0%} here")
    lines += ["", "Amp: Pr(the error is ratified | error present) = 1 - recall; hacking: "
              "Pr(wrong final | the detectors disagree); err. red.: errors removed relative "
              "to detector 1 alone; calls: 2 detectors, 2 per round, 1 per judge call."]
    return "\n".join(wrap_prose(lines))


def plot_cell(ds, path: Path) -> list:
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    fig, axs = panel_grid(2, height=3.2)
    ax = axs[0]
    metrics = ("acc", "precision", "recall", "f1", "hacking")
    x = np.arange(len(metrics))
    w = 0.8 / len(ds.protocol)
    for i, p in enumerate(ds.protocol.values):
        d = ds.sel(protocol=p)
        pos = x + (i - (len(ds.protocol) - 1) / 2) * w
        ex = [float(d[f"{k}_exact"]) for k in metrics]
        ax.bar(pos, np.nan_to_num(ex), w * 0.9, color=COLOURS[str(p)], alpha=0.85)
        sim = np.array([float(d[k]) for k in metrics])
        if np.isfinite(sim).any():
            se = np.array([float(d[f"{k}_se"]) for k in metrics])
            ax.errorbar(pos, sim, yerr=1.96 * se, fmt="o", ms=2.5, color="k", capsize=1.5)
    ax.set_xticks(x, ["accuracy", "precision", "recall", "F1", "hacking rate"])
    ax.set_ylim(0, 1)
    ax.set_title("error detection (bars exact, points simulated ±1.96 SE)", fontsize=9)
    ax = axs[1]
    for p in ds.protocol.values:
        d = ds.sel(protocol=p)
        ax.plot(float(d.calls_exact), float(d.amp_exact), "o", ms=8, color=COLOURS[str(p)],
                alpha=0.85)
    ax.set_xlabel("model calls per response", fontsize=8)
    ax.set_ylabel("Amp: Pr(error ratified | error present)", fontsize=8)
    ax.set_title("mistake amplification against cost", fontsize=9)
    shared_legend(fig, [(str(p), COLOURS[str(p)]) for p in ds.protocol.values], [])
    c = cfg["colmad"]
    fig.suptitle(f"ColMAD vs CopMAD (seed 001): η = {c['eta']} ({c['eta_mode']}), "
                 f"{c['rounds']} rounds, F1 gain {float(ds.f1_gain_exact):+.1%}", fontsize=9)
    return save(fig, path)


def plot_grid(ds, path: Path) -> list:
    """One swept field: F1 and Amp of every protocol and ColMAD's F1 gain, exact lines
    and simulated points.  Two: where ColMAD beats a single detector (F1 difference,
    zero contour) and its gain over CopMAD, as xarray heatmaps."""
    from ...plotting import (axes_of, axis_label, exact_and_simulated, integer_ticks, label_x,
                            shown_at, x_positions)

    dims = axes_of(ds, "f1_exact")
    if not dims:
        return []
    if len(dims) >= 2:
        x, y = dims[0], dims[1]
        sub = ds.isel({d: 0 for d in dims[2:]})
        diff = (sub.f1_exact.sel(protocol="colmad") - sub.f1_exact.sel(protocol="single"))
        diff.attrs = {"long_name": "F1(ColMAD) - F1(single detector)"}
        gain = sub.f1_gain_exact.copy()
        gain.attrs = {"long_name": "F1(ColMAD) / F1(CopMAD) - 1"}
        fig, axs = panel_grid(2, height=3.4)
        for ax, da, title in ((axs[0], diff, "ColMAD against a single detector (blue: "
                                              "ColMAD better)"),
                              (axs[1], gain, "ColMAD's F1 gain over CopMAD")):
            lim = float(np.nanmax(np.abs(da.values))) or 1.0
            signed = np.nanmin(da.values) < 0 < np.nanmax(da.values)
            # xarray's own plotting: coordinates and labels from the store; a diverging
            # map only where the sign changes.
            da.plot.pcolormesh(x=x, y=y, ax=ax, cmap="RdBu" if signed else "viridis",
                               vmin=-lim if signed else None, vmax=lim if signed else None,
                               cbar_kwargs={"shrink": 0.85, "label": ""})
            if signed:
                cs = da.plot.contour(x=x, y=y, ax=ax, levels=[0.0], colors="k",
                                     linewidths=1.2, add_colorbar=False)
                ax.clabel(cs, fmt={0.0: "0"}, fontsize=7)
            ax.set_title(title, fontsize=9)
            ax.set_xlabel(axis_label(ds, x), fontsize=8)
            ax.set_ylabel(axis_label(ds, y), fontsize=8)
            integer_ticks(ax, sub[x].values)
            integer_ticks(ax, sub[y].values, "y")
        fig.suptitle(f"error detection by debate (seed 001){shown_at(ds, dims[2:])}",
                     fontsize=9)
        return save(fig, path)
    x = dims[0]
    _, xpos, _ = x_positions(ds, x)
    fig, axs = panel_grid(3, height=2.9)
    for p in ds.protocol.values:
        for ax, v in ((axs[0], "f1"), (axs[1], "amp")):
            exact_and_simulated(ax, ds.sel(protocol=p), v, xpos, COLOURS[str(p)])
    exact_and_simulated(axs[2], ds, "f1_gain", xpos, "k")
    axs[2].axhline(SEED_GAIN, color="0.5", ls=":", lw=0.8)
    for ax, t in zip(axs, ("F1 on the error class", "Amp: Pr(error ratified | error)",
                           "ColMAD's F1 gain over CopMAD (dotted: 19%)")):
        ax.set_title(t, fontsize=9)
    label_x(axs, ds, x)
    shared_legend(fig, [(str(p), COLOURS[str(p)]) for p in ds.protocol.values],
                  [("exact", "-", None), ("simulated ±1.96 SE", "none", "o")])
    fig.suptitle("error detection by debate (seed 001)", fontsize=9)
    return save(fig, path)


def cell_work(size) -> tuple:
    """The work bound's cost of a cell (:class:`antiamp.registry.Model` ``work``): a
    response draws one block, and one more a debate round."""
    n, r = size("run", "n_instances", 0), size("colmad", "rounds", 3)
    return n * (1 + r), f"{n:,.0f} instances x (1 + {r:,.0f} colmad.rounds)"


#: A grid's default block: about 6 s of a default cell's CPU (10 ms of exact values,
#: quadratures and the hack search whatever its instances, 6 ms a million instances;
#: measured at 10^4 and 10^6, the judge integrals memoised): about 590 cells at 10^4
#: instances a cell, 370 at 10^6 (were 170 and 130 at 35 ms a cell, and 160 and 16
#: before: blocks whose own Dataset and chunk files were a tenth of them).
cells_per_block = blocks_by_cost(10.0, 6.0)


MODEL = Model(
    name="colmad",
    title="error detection by collaborative vs competitive debate (seed 001)",
    run_cells=solve_cells,
    sections=SECTIONS,
    uses=("model", "judge", "run", "colmad"),
    validate=validate, validate_reads=VALIDATE_READS,
    kernel_fields=("judge.*", "colmad.*", "run.seed", "run.n_instances"),
    format_table=format_colmad, figures=plot_grid, cell_figures=plot_cell,
    plot_vars=("f1_exact",), cells_per_block=cells_per_block,
    gpu=True,  # the Monte Carlo's class counts (kernels.gpu.colmad)
    work=cell_work,
)
