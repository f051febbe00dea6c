"""Adaptive re-deliberation of fact-check verdicts (seed 003), as a model."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ...judge import judge_tables
from ...layout import (add_triplets, axis_coords, configs_first, model_dataset, pm_of,
                       simulated_pairs)
from ...plotting import panel_grid, save, shared_legend, wrap_columns, wrap_prose
from ...registry import Model, blocks_by_cost
from ...config import MAX_BLOCK_SUMS_BYTES  # noqa: F401 (the bound, read by tests)
from .config import MAX_FORCED_ROUNDS, SECTIONS
from . import core as rd

CLAIM_TYPES = rd.TYPES + ("all",)
COLOURS = {"raw": "C7", "fixed": "C3", "rereconcile": "C1", "adaptive": "C0"}
#: Climinator's published accuracy on contested claims after two rounds (seed 003).
CLIMINATOR = (0.953, 2)


def _n_bands(c) -> int:
    """A cell's number of spread bands (the ``band`` dimension's length less one)."""
    return len(rd.SEED_BANDS if c.redeliberation.bands is None else c.redeliberation.bands)


def _forced_rounds(c) -> int:
    """A cell's forced extra rounds (the ``round`` dimension's length less one)."""
    return int(c.redeliberation.forced_rounds)


#: What every cell of a grid shares (its Dataset's ``band`` and ``round`` dimensions):
#: a grid whose cells differ is refused at planning (:attr:`Model.same_in_grid`).
#: ``multipliers`` has one value per band more than ``bands`` (validated), so the bands
#: say how many.
SAME_IN_GRID = {"redeliberation.bands": ("number of spread bands", _n_bands),
                "redeliberation.forced_rounds": ("number of forced rounds", _forced_rounds)}


def _check_same(cells) -> None:
    """:data:`SAME_IN_GRID` over a block's cells, before any is solved (a list of
    configs handed to :func:`solve_cells` directly; a planned grid was checked whole)."""
    from ...config import ConfigError

    for path, (what, key) in SAME_IN_GRID.items():
        values = {key(c) for c in cells}
        if len(values) > 1:
            raise ConfigError(f"{path}: every cell of a grid must have the same {what}, "
                              f"got {sorted(values)}")


def _cell(c, J=None, par=None) -> tuple:
    """A cell's solvers: its parameters, exact values and their quadrature's error bound,
    simulated values (None without instances) and Climinator's hazard (NaN where no
    hazard reaches it); :func:`_block_values` derives the rest a block at once.  ``J``:
    the reconciler's table when the block computed it (once per distinct judge); ``par``:
    the cell's parameters when the block resolved them."""
    par = rd.params_of(c) if par is None else par
    if J is None:
        J = judge_tables(c.judge)[1]  # the reconciler: seed 000's debate judge J[e_P, e_A]
    ex, r_err = rd.exact_with_error(par, J)
    sim = (rd.simulate(par, J, int(c.run.n_instances), int(c.run.seed), int(c.run.n_threads),
                       c.run.device)
           if c.run.n_instances > 1 else None)
    try:
        hz = np.float64(rd.hazard_for(par, *CLIMINATOR))
    except ValueError:
        hz = np.float64(np.nan)
    return par, ex, r_err, sim, hz


def _reconcilers(cells) -> list:
    """Each cell's reconciler table, computed once per distinct judge of the block (a
    block of the engine: :meth:`~antiamp.sweeps.spec.CellBlock.distinct`; a list of
    configs: once per cell)."""
    if not hasattr(cells, "distinct"):
        return [judge_tables(c.judge)[1] for c in cells]
    firsts, rank = cells.distinct(("judge.*",))
    tables = [judge_tables(c.judge)[1] for c in firsts]
    return [tables[r] for r in rank.tolist()]


def _block_values(cells) -> tuple:
    """``(st, rows, seconds)``: a block's values by name (``k_exact``, ``k``, ``k_se`` of
    every exact value; ``insufficient_contested``, ``hazard_climinator``,
    ``quad_error``), stacked a block at once rather than a dict of arrays a cell (the
    same floats: the tests compare them with the cell-by-cell path)."""
    t0 = time.perf_counter()
    _check_same(cells)
    configs, params = configs_first(cells, rd.params_of)
    rows = [_cell(c, J, par) for c, J, par in zip(configs, _reconcilers(cells), params)]
    n = len(rows)
    exact = {k: np.array([r[1][k] for r in rows], float)  # one array, not one a cell
             for k in (rows[0][1] if rows else ())}
    values = {f"{k}_exact": v for k, v in exact.items()}
    values.update(simulated_pairs([r[3] for r in rows], exact))
    q = np.array([r[0].contested for r in rows], np.float64)[:, None]
    for suf in ("", "_exact"):
        ins = values["insufficient" + suf].reshape(n, -1, len(CLAIM_TYPES))
        # Simulated: the per-type rates weighted by the type shares, q i_1 / (q i_1 +
        # (1 - q) i_0), a share in [0, 1] by construction (q i_1 over the pooled rate
        # exceeded 1 when the sample's share of contested claims fell below q).
        tot = ins[..., 2] if suf else q * ins[..., 1] + (1 - q) * ins[..., 0]
        with np.errstate(invalid="ignore", divide="ignore"):
            values["insufficient_contested" + suf] = np.where(
                tot > 0, q * ins[..., 1] / np.where(tot > 0, tot, 1.0), np.nan)
    values["hazard_climinator"] = np.array([r[4] for r in rows], np.float64)
    values["quad_error"] = np.array([r[2] for r in rows], np.float64)
    return values.__getitem__, rows, time.perf_counter() - t0


def solve_cells(base, cells):
    dims, axes = ("cell",), ()  # a block: its cells along "cell"
    st, rows, elapsed = _block_values(cells)
    ax = tuple(dims)
    data = {}
    add_triplets(data, st, ax, ("protocol", "claim_type"), rd.METRICS,
                 units=lambda k: k if k in ("calls", "rounds") else "1",
                 exact_how="exact (quadrature over the pool bias)")
    from ...rare import SE_FLOOR

    for k in ("acc", "err", "insufficient", "hidden", "trigger", "amp", "fwc"):
        data[f"{k}_se"][2]["se_floor"] = SE_FLOOR
    for suf, how in (("", "simulated"), ("_exact", "exact")):
        data["insufficient_contested" + suf] = (ax + ("protocol",), st(
            "insufficient_contested" + suf), {
            "long_name": f"share of INSUFFICIENT verdicts on contested claims (genuine "
                         f"disagreement), {how}", "units": "1"})
    for k, dd, ln in (
            ("band_share", ("claim_type", "band"), "share of first passes in each spread band"),
            ("spread_mean", ("claim_type",), "mean spread (range of the k runs)"),
            ("acc_round", ("claim_type", "round"),
             "advocates' direction right after r forced extra rounds")):
        add_triplets(data, st, ax, dd, {k: ln},
                     units=lambda k: "points" if k == "spread_mean" else "1")
    data["quad_error"] = (ax, st("quad_error"), {
        "long_name": "error bound of the adaptive policy's quadrature over the pool "
                     "bias (the one-pass policies are closed forms), in each metric's "
                     "own units (Amp per wrong, fwc per right first pass; the largest): "
                     "adaptive Gauss-Kronrod (15/7 points) on the range where each "
                     "integrand lives, the sum of |Kronrod - Gauss| over its intervals "
                     "plus the normal tail left out",
        "units": "1"})
    data["hazard_climinator"] = (ax, st("hazard_climinator"), {
        "long_name": f"hazard h at which contested claims reach Climinator's "
                     f"{CLIMINATOR[0]:.1%} after {CLIMINATOR[1]} forced rounds", "units": "1"})
    nb = len(rows[0][0].multipliers)
    coords = axis_coords(axes, dims, {
        "protocol": ("protocol", list(rd.PROTOCOLS), {
            "long_name": "re-deliberation policy",
            "description": "raw: one pass; fixed: fixed spread multiplier (FactHarbor); "
                           "rereconcile: a second reconciliation above the spread trigger; "
                           "adaptive: adaptive rounds (Climinator)"}),
        "claim_type": ("claim_type", list(CLAIM_TYPES)),
        "band": ("band", np.arange(nb)),
        "round": ("round", np.arange(rows[0][0].forced_rounds + 1))})
    return model_dataset(
        data, coords, "antiamp: adaptive re-deliberation of fact-check verdicts (seed 003)",
        "Monte Carlo (common random numbers across policies, the reconciler "
        "Rao-Blackwellised) beside exact quadrature over the evidence-pool bias", elapsed)


#: The config paths :func:`validate` reads beyond the declared ranges: the bands and
#: multipliers (and how many the GPU kernel holds). A grid is validated column by column, and
#: :func:`validate` once per distinct combination of the axes these cover.
VALIDATE_READS = ("redeliberation.bands", "redeliberation.multipliers", "run.device",
                  "run.n_instances")



def validate(cfg) -> None:
    rd.validate_redeliberation(cfg)
    rc = cfg.redeliberation
    mults = rd.SEED_MULTIPLIERS if rc.multipliers is None else rc.multipliers
    from ...config import ConfigError, check_block_sums

    if cfg.run.device == "cuda" and len(mults) > GPU_MAX_MULTIPLIERS:
        raise ConfigError(f"redeliberation.multipliers: the GPU kernel (run.device=cuda) takes "
                          f"at most {GPU_MAX_MULTIPLIERS}, got {len(mults)}; use "
                          "run.device=cpu")
    from ...kernels.redeliberation import BLOCK, N_ACC, N_POL

    # the row at the most forced rounds the field allows, whatever this cell's: the
    # bound then reads no swept field (a grid's cells are refused alike, and the
    # validate_reads probe has no cross-field refusal to look for)
    per_block = 8 * (N_POL * 2 * N_ACC + 2 * len(mults) + 4 + 2 * (MAX_FORCED_ROUNDS + 1))
    check_block_sums(cfg, "redeliberation", per_block, BLOCK, "claims")


#: Spread bands' multipliers the GPU kernel holds per thread
#: (:data:`kernels.gpu.redeliberation.MAX_MULTS`, which imports numba.cuda).
GPU_MAX_MULTIPLIERS = 32


# ------------------------------------------------------------------ table and figures
def _pm(d, k, t="all", digits=4) -> str:
    return pm_of(d.sel(claim_type=t), k, digits)


def format_redeliberation(ds) -> str:
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    rc, j = cfg["redeliberation"], cfg["judge"]
    judge = (f"tie-break b = {j['b']}" if j["kind"] == "tiebreak" else
             f"logit λ = {j['lam']}, μ = {j['mu']}, κ = {j['kappa']}")
    if j["jury_size"] > 1:
        judge += f", jury of {j['jury_size']}"
    lines = [
        f"re-deliberation (seed 003): {rc['contested']:.0%} contested claims; margins "
        f"{rc['margin_clear']} / {rc['margin_contested']} points, run noise sd "
        f"{rc['noise_clear']} / {rc['noise_contested']} (clear / contested); pool bias "
        f"N({rc['bias']}, {rc['bias_sd']}^2); k = {rc['runs']} runs",
        f"evidence found x = {rc['evidence']}, false evidence passes ρ = {cfg['model']['rho']}; "
        f"hazard h = {rc['hazard']} per extra round; reconciler: {judge}",
        f"INSUFFICIENT below adjusted confidence {rc['insufficient_below']}; re-reconcile above "
        f"spread {rc['trigger_spread']}; adaptive up to {rc['max_rounds']} rounds", "",
        "simulated ± SE [exact], all claims:"]
    head = (f"{'policy':<12}{'accuracy':>28}{'contested acc':>28}{'INSUFFICIENT':>28}"
            f"{'Amp':>28}{'calls/claim':>14}{'trigger':>9}")
    rows = [head]
    for p in ds.protocol.values:
        d = ds.sel(protocol=p)
        calls = float(d.calls.sel(claim_type="all"))
        calls = calls if np.isfinite(calls) else float(d.calls_exact.sel(claim_type="all"))
        trig = float(d.trigger_exact.sel(claim_type="all"))
        rows.append(f"{p:<12}{_pm(d, 'acc'):>28}{_pm(d, 'acc', 'contested'):>28}"
                    f"{_pm(d, 'insufficient'):>28}{_pm(d, 'amp'):>28}{calls:>14.3f}"
                    f"{trig:>9.3f}")
    lines += wrap_columns(rows)  # within a terminal's 100 columns
    lines.append("")
    for p in ("fixed", "rereconcile", "adaptive"):
        d = ds.sel(protocol=p)
        share = float(d.insufficient_contested_exact)
        some = float(d.insufficient_exact.sel(claim_type="all")) > 1e-6
        lines.append(f"{p}: INSUFFICIENT hides a correct one-pass verdict for "
                     f"{_pm(d, 'hidden')} of claims"
                     + (f"; {share:.0%} of its INSUFFICIENT verdicts are contested claims"
                        if some and np.isfinite(share) else ""))
    sp = ds.spread_mean_exact.values
    lines += ["", f"mean spread (range of {rc['runs']} runs): clear {sp[0]:.2f}, contested "
                  f"{sp[1]:.2f} points (exact); first passes by band "
                  + ", ".join(f"{b:.3f}" for b in ds.band_share_exact.sel(claim_type="all").values)]
    h = float(ds.hazard_climinator)
    lines.append(f"Climinator's {CLIMINATOR[0]:.1%} on contested claims after {CLIMINATOR[1]} "
                 f"rounds needs h = {h:.3f} here" if np.isfinite(h) else
                 "Climinator's 95.3% is out of reach at these margins")
    lines += ["", "accuracy: decided and correct; Amp: Pr(decided and y = a | a wrong), a the "
              "first pass's direction; trigger: share given extra deliberation."]
    return "\n".join(wrap_prose(lines))


def _bars(ax, ds, var, types, title):
    x = np.arange(len(types))
    w = 0.8 / len(ds.protocol)
    for i, p in enumerate(ds.protocol.values):
        d = ds.sel(protocol=p)
        ex = [float(d[f"{var}_exact"].sel(claim_type=t)) for t in types]
        sim = [float(d[var].sel(claim_type=t)) for t in types]
        se = [float(d[f"{var}_se"].sel(claim_type=t)) for t in types]
        pos = x + (i - (len(ds.protocol) - 1) / 2) * w
        ax.bar(pos, ex, w * 0.9, color=COLOURS[str(p)], alpha=0.8)
        if np.isfinite(sim).any():
            ax.errorbar(pos, sim, yerr=1.96 * np.asarray(se), fmt="o", ms=2.5, color="k",
                        capsize=1.5)
    ax.set_xticks(x, list(types))
    ax.set_title(title, fontsize=9)


def plot_cell(ds, path: Path) -> list:
    """Accuracy and INSUFFICIENT by claim type, Amp against calls per claim (the cost
    axis), and the forced-rounds accuracy against the closed form."""
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    fig, axs = panel_grid(4, height=2.9)
    _bars(axs[0], ds, "acc", CLAIM_TYPES, "accuracy (decided and correct)")
    axs[0].set_ylim(0, 1)
    _bars(axs[1], ds, "insufficient", CLAIM_TYPES, "INSUFFICIENT rate")
    ax = axs[2]
    for p in ds.protocol.values:
        d = ds.sel(protocol=p, claim_type="all")
        ax.plot(float(d.calls_exact), float(d.amp_exact), "o", ms=7, color=COLOURS[str(p)],
                alpha=0.85)
    ax.set_xlabel("model calls per claim", fontsize=8)
    ax.set_ylabel("Amp", fontsize=8)
    ax.set_title("mistake amplification against cost (exact)", fontsize=9)
    ax = axs[3]
    r = ds["round"].values
    for t, mk in zip(rd.TYPES, ("s", "o")):
        d = ds.sel(claim_type=t)
        ax.plot(r, d.acc_round_exact.values, "-", color="0.3", lw=1)
        if np.isfinite(d.acc_round.values).any():
            ax.errorbar(r, d.acc_round.values, yerr=1.96 * d.acc_round_se.values, fmt=mk,
                        ms=3.5, color="0.3", mfc="white", capsize=2, label=t)
    ax.set_xlabel("forced extra rounds r", fontsize=8)
    ax.set_title("advocates right after r rounds: 1 - ε₀(1 - h)^r", fontsize=9)
    ax.legend(fontsize=7, frameon=False, loc="lower right")
    from ...plotting import integer_ticks

    integer_ticks(ax, r)
    shared_legend(fig, [(str(p), COLOURS[str(p)]) for p in ds.protocol.values],
                  [("simulated ±1.96 SE", "none", "o")])
    rc = cfg["redeliberation"]
    fig.suptitle(f"re-deliberation policies (seed 003): {rc['contested']:.0%} contested, "
                 f"h = {rc['hazard']}, ρ = {cfg['model']['rho']}", fontsize=9)
    return save(fig, path)


def plot_grid(ds, path: Path) -> list:
    """Over one swept field: accuracy (all and contested claims), Amp and calls per
    claim of every policy, exact lines and simulated points; further axes are shown
    at their first value."""
    from ...plotting import exact_and_simulated, label_x, line_axis, shown_at

    axis = line_axis(ds, "acc_exact")
    if axis is None:
        return []
    dims, x, sub, (_, xpos, _) = axis
    panels = [("acc", "all", "accuracy, all claims"), ("acc", "contested", "accuracy, contested"),
              ("insufficient", "all", "INSUFFICIENT rate"), ("amp", "all", "Amp"),
              ("calls", "all", "model calls per claim")]
    fig, axs = panel_grid(len(panels), height=2.7)
    for ax, (v, t, title) in zip(axs, panels):
        for p in ds.protocol.values:
            exact_and_simulated(ax, sub.sel(protocol=p, claim_type=t), v, xpos, COLOURS[str(p)])
        ax.set_title(title, fontsize=9)
    label_x(axs, sub, x)
    shared_legend(fig, [(str(p), COLOURS[str(p)]) for p in ds.protocol.values],
                  [("exact", "-", None), ("simulated ±1.96 SE", "none", "o")])
    fig.suptitle(f"re-deliberation policies (seed 003){shown_at(ds, dims[1:])}", fontsize=9)
    return save(fig, path)


#: A grid's default block: about 6 s of a default cell's CPU (8 ms of exact values and
#: quadrature whatever its instances, 680 ms a million instances of the kernel;
#: medians of 7 at 1, 10^4, 10^5 and 2 x 10^5 instances): about 400 cells at 10^4
#: instances a cell, 40 at 2 x 10^5, 16 at 10^6 (were 230, 30 and 16 when the exact
#: values cost 17 ms a cell; 160, 8 and 8 before that, blocks whose own Dataset and
#: chunk files, about 60 ms, were a tenth of them at 10^4).
cells_per_block = blocks_by_cost(8.0, 680.0)


MODEL = Model(
    name="redeliberation",
    title="adaptive re-deliberation of fact-check verdicts (seed 003)",
    run_cells=solve_cells,
    sections=SECTIONS,
    uses=("model", "judge", "run", "redeliberation"),
    validate=validate, validate_reads=VALIDATE_READS, same_in_grid=SAME_IN_GRID,
    kernel_fields=("model.rho", "judge.*", "redeliberation.*", "run.seed", "run.n_instances"),
    format_table=format_redeliberation, figures=plot_grid, cell_figures=plot_cell,
    plot_vars=("acc_exact", "amp_exact"), cells_per_block=cells_per_block,
    gpu=True,  # the Monte Carlo (kernels.gpu.redeliberation)
)
