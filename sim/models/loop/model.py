"""Closed-loop oversight: endorsed labels train the model (seed 000's feedback loop), as a model."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
from ...lazy import lazy
xr = lazy("xarray")

from ...registry import Model
from .config import SECTIONS
from ...layout import axis_coords, configs_first
from ...plotting import fmt, judge_fields, panel_grid, save, shared_legend, wrap_prose
from . import core as lp

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
#: Per-round series of the simulation and the recursion.
SERIES = {
    "err": ("the model's error e_t", "1"),
    "label_err": ("error rate of the round's training targets", "1"),
    "ratified": ("ratified mistakes: share of overseen cases whose wrong answer was endorsed",
                 "1"),
    "rho": ("fabrication rate rho_t", "1"),
    "escalated": ("share of overseen cases escalated (to debate or the escalation jury)", "1"),
}
SCALARS = {
    "e_star": "long-run error: the recursion's fixed point reached from e_0",
    "e_star_error": "error estimate of e_star: 0 for the closed forms; where the recursion "
                    "is iterated, twice its last step times r / (1 - r), r the larger of the "
                    "slope and the last steps' ratio (an estimate, not a bound; infinite "
                    "where the map does not contract)",
    "slope": "the recursion's slope at its fixed point (spectral radius; < 1 is stable)",
    "amp": "Amp = Pr(y = a | a wrong) at rho_0 and e_0",
    "fwc": "follow-when-correct Pr(y = a | a right) at rho_0 and e_0",
    "amp_threshold": "largest Amp (fwc held) whose long-run error is at most e_0",
    "m_threshold": "largest share of endorsed targets m whose long-run error is at most e_0",
    "rho_threshold": "largest fabrication rate rho whose long-run error is at most e_0",
    "cost": "oversight cost: share of overseen cases escalated, at the fixed point",
}


def _cell(c) -> dict:
    """Everything one cell reports, as numpy arrays (protocol first)."""
    lc = c.loop
    ov = lp.oversight(c)
    T, P = lc.rounds, len(lp.PROTOCOLS)
    r: dict = {}
    for k in SERIES:
        r[f"{k}_exact"] = np.zeros((P, T + 1))
        r[f"{k}_meanfield"] = np.zeros((P, T + 1))
    r["exact_method"] = np.zeros(P, dtype=object)
    for k in SCALARS:
        r[k] = np.zeros(P)
    r["settle_rounds"] = np.zeros(P, np.int64)
    r["stable"] = np.zeros(P, bool)
    r["lock_in_exact"] = np.full(P, np.nan)
    for p, prot in enumerate(lp.PROTOCOLS):
        path = lp.meanfield_path(c, ov, prot)
        expected, r["exact_method"][p] = lp.expected_path(c, ov, prot)
        for k in SERIES:
            r[f"{k}_meanfield"][p] = path[k]
            r[f"{k}_exact"][p] = expected[k]
        lr = lp.long_run(c, ov, prot)
        amp, fwc, _ = ov.rates(prot, lp.start_error(c), float(c.model.rho))
        r["e_star"][p], r["slope"][p] = lr["e_star"], lr["slope"]
        r["e_star_error"][p] = lr["e_star_error"]
        r["stable"][p], r["settle_rounds"][p] = lr["stable"], lr["settle_rounds"]
        r["amp"][p], r["fwc"][p] = amp, fwc
        r["cost"][p] = ov.rates(prot, lr["e_star"], lr["rho_star"])[2]
        for k, v in lp.thresholds(c, ov, prot).items():
            r[k][p] = v
        if lc.learner == "majority" and lp.is_linear(lc, ov, prot, float(c.model.rho)):
            stay, _ = lp.type_tails(lc, amp, fwc)
            r["lock_in_exact"][p] = stay ** T
    front = lp.policy_front(c, ov)
    r["pareto_err"], r["pareto_cost"], r["pareto_front"] = (front["err"], front["cost"],
                                                            front["pareto"])
    r["pareto_safety"] = front["safety"]
    pol = (lp.cheapest_policy(c, ov, float(lc.target), front) if lc.target is not None
           else {"flag": "", "audit": math.nan, "cost": math.nan, "err": math.nan})
    r["policy_flag"] = np.array(pol["flag"], dtype=object)
    for k in ("audit", "cost", "err"):
        r[f"policy_{k}"] = np.float64(pol[k])
    r["policy_err_sim"] = r["policy_err_sim_se"] = np.float64(np.nan)
    if lc.paths:
        sim = lp.simulate(c, ov, c.run.n_threads)
        n = lc.paths
        for k in SERIES:
            a = sim[k]
            if a.shape[-1] == T:  # per-round flows: none after the last round
                a = np.concatenate([a, np.full(a.shape[:-1] + (1,), np.nan)], axis=-1)
            # A series constant over paths (the start, rho without feedback) is reported
            # as its value with a standard error of exactly 0, not rounding noise.
            const = np.ptp(a, axis=1) == 0
            r[f"{k}_mean"] = np.where(const, a[:, 0], a.mean(axis=1))
            r[f"{k}_se"] = np.where(const, 0.0, a.std(axis=1, ddof=1) / math.sqrt(n))
            if k == "err":
                r["err_quantile"] = np.moveaxis(np.quantile(a, QUANTILES, axis=1), 0, -1)
        locked, start = sim["locked"].astype(float), sim["start_wrong"].astype(float)
        tot = start.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(tot > 0, locked.sum(axis=1) / tot, np.nan)
            resid = locked - ratio[:, None] * start
            r["lock_in"] = ratio if lc.learner == "majority" else np.full(P, np.nan)
            r["lock_in_se"] = (np.sqrt((resid ** 2).sum(axis=1) * n / (n - 1)) / tot
                               if lc.learner == "majority" else np.full(P, np.nan))
        if lc.target is not None and pol["flag"]:
            from dataclasses import replace

            # The optimum checked by a fresh simulation of the chosen policy.
            c2 = replace(c, loop=replace(lc, audit=pol["audit"], flag=pol["flag"]))
            s2 = lp.simulate(c2, lp.oversight(c2), c.run.n_threads)["err"][2, :, -1]
            r["policy_err_sim"] = np.float64(s2.mean())
            r["policy_err_sim_se"] = np.float64(s2.std(ddof=1) / math.sqrt(n))
    return r  # not simulated: its paths' values NaN (_unsimulated), a block's at once


def _unsimulated(P: int, T: int, cells: tuple = ()) -> dict:
    """The simulated values of cells without paths: NaN, shaped as a cell's
    (``cells`` = () ) or as a block's (``cells`` = (n,))."""
    shapes = {f"{k}{s}": (P, T + 1) for k in SERIES for s in ("_mean", "_se")}
    shapes.update(err_quantile=(P, T + 1, len(QUANTILES)), lock_in=(P,), lock_in_se=(P,))
    return {k: np.full(cells + sh, np.nan) for k, sh in shapes.items()}  # each its own


def solve_cells(base, cells) -> xr.Dataset:
    shape, dims, axes = (len(cells),), ("cell",), ()  # a block: its cells along "cell"
    t0 = time.perf_counter()
    cells, _ = configs_first(cells)  # before any cell's solvers (see configs_first)
    res = [_cell(c) for c in cells]
    elapsed = time.perf_counter() - t0
    sh, ax = tuple(shape), tuple(dims)

    rounds = [c.loop.rounds for c in cells]
    T = max(rounds)
    ragged = min(rounds) < T
    n_p = len(lp.PROTOCOLS)
    unsim = [i for i, r in enumerate(res) if "lock_in" not in r]
    # a block without paths: its NaN arrays at once; else each such cell's own
    whole = _unsimulated(n_p, T, sh) if len(unsim) == len(res) else {}
    if not whole:
        for i in unsim:
            res[i].update(_unsimulated(n_p, rounds[i]))

    def st(k):
        if k in whole:
            return whole[k]
        parts = [r[k] for r in res]
        if ragged and np.ndim(parts[0]) >= 2:  # per-round series: cells' own rounds
            parts = [np.pad(np.asarray(a, float), [(0, 0), (0, T + 1 - a.shape[1])]
                            + [(0, 0)] * (a.ndim - 2), constant_values=np.nan)
                     if a.shape[1] < T + 1 and k.endswith(("_mean", "_se", "_exact", "_quantile",
                                                           "_meanfield"))
                     else a for a in parts]
        # np.array copies equal-shaped numbers as np.stack does, in a third of its time
        # (a block's ~50 variables of 512 cells); labels (objects) and parts of unequal
        # shapes (np.array refuses them) go through np.stack as before
        a = None
        if np.asarray(parts[0]).dtype != object:
            try:
                a = np.array(parts)
            except ValueError:
                pass
        if a is None or a.dtype == object:
            a = np.stack(parts)
        return a.reshape(sh + a.shape[1:])

    P, R = ("protocol",), ("protocol", "round")
    data = {}
    for k, (ln, units) in SERIES.items():
        data[f"{k}_mean"] = (ax + R, st(f"{k}_mean"), {
            "long_name": f"{ln}, mean over simulated paths", "units": units})
        # the schema's names (antiamp.schema): the metric <k>_mean, its standard error
        # <k>_mean_se and the exact expectation of the path <k>_mean_exact (NaN where it
        # is not computed exactly: exact_method says how); <k>_meanfield the recursion
        data[f"{k}_mean_se"] = (ax + R, st(f"{k}_se"), {
            "long_name": f"standard error of {k}_mean", "units": units})
        data[f"{k}_mean_exact"] = (ax + R, st(f"{k}_exact"), {
            "long_name": f"{ln}, exact expectation over paths (exact_method)", "units": units})
        data[f"{k}_meanfield"] = (ax + R, st(f"{k}_meanfield"), {
            "long_name": f"{ln}, mean-field recursion (the expectation only where the map "
                         "is affine on the reachable states)", "units": units})
    data["exact_method"] = (ax + P, st("exact_method").astype(str), {
        "long_name": "how <k>_mean_exact is obtained: mean-field (the recursion is the "
                     "expectation), chain (the error's distribution over its batch + 1 "
                     "states, round by round), none (not computed: NaN)"})
    data["err_quantile"] = (ax + R + ("quantile",), st("err_quantile"), {
        "long_name": "quantiles of the error e_t over simulated paths", "units": "1"})
    for k, ln in SCALARS.items():
        data[k] = (ax + P, st(k), {"long_name": ln, "units": "1"})
    data["stable"] = (ax + P, st("stable"), {"long_name": "the fixed point is stable"})
    data["settle_rounds"] = (ax + P, st("settle_rounds"), {
        "long_name": "rounds until the error is within 1% of its starting gap to e_star "
                     "(-1: never)", "units": "rounds"})
    def last(k):  # each cell's own last round (a block's series are padded to its longest)
        if k in whole:
            return whole[k][..., -1].copy()
        a = np.stack([np.asarray(r[k], float)[:, -1] for r in res])
        return a.reshape(sh + a.shape[1:])

    data["final_err"] = (ax + P, last("err_mean"), {
        "long_name": "the model's error after the last round, mean over paths", "units": "1"})
    data["final_err_se"] = (ax + P, last("err_se"), {
        "long_name": "standard error of final_err", "units": "1"})
    data["corrects"] = (ax + P, st("e_star") <= np.asarray(
        [lp.start_error(c) for c in cells]).reshape(sh + (1,)) + 1e-12, {
        "long_name": "the loop corrects: long-run error at most the starting error e_0"})
    data["lock_in"] = (ax + P, st("lock_in"), {
        "long_name": "majority learner: share of types wrong at the start that stay wrong "
                     "every round", "units": "1"})
    data["lock_in_se"] = (ax + P, st("lock_in_se"), {
        "long_name": "standard error of lock_in (over paths; unreliable when fewer than "
                     "about ten types lock in)", "units": "1"})
    data["lock_in_exact"] = (ax + P, st("lock_in_exact"), {
        "long_name": "lock-in probability from the binomial tail: Pr(stay wrong)^T", "units": "1"})
    es = st("e_star")
    data["e_star_gap"] = (ax, es[..., 0] - es[..., 1], {
        "long_name": "long-run error of consultancy minus that of debate (> 0: debate "
                     "pays in the loop)", "units": "1"})
    data["pareto_err"] = (ax + ("flag_rule", "audit_level"), st("pareto_err"), {
        "long_name": "escalation policy's long-run error", "units": "1"})
    data["pareto_cost"] = (ax + ("flag_rule", "audit_level"), st("pareto_cost"), {
        "long_name": "escalation policy's cost (share of overseen cases escalated)",
        "units": "1"})
    data["pareto_safety"] = (ax + ("flag_rule", "audit_level"), st("pareto_safety"), {
        "long_name": "safety of the escalation policy: share of the model's wrong answers "
                     "not ratified (1 - Amp) at its long-run fixed point (exact)", "units": "1"})
    data["pareto_front"] = (ax + ("flag_rule", "audit_level"), st("pareto_front"), {
        "long_name": "the policy is on the Pareto front of long-run error against cost"})
    data["policy_flag"] = (ax, st("policy_flag").astype(str), {
        "long_name": "cheapest policy meeting loop.target: its flag (empty: none meets it)"})
    for k, ln in (("audit", "audit rate"), ("cost", "cost"), ("err", "long-run error (exact)"),
                  ("err_sim", "error after the last round, simulated"),
                  ("err_sim_se", "standard error of policy_err_sim")):
        data[f"policy_{k}"] = (ax, st(f"policy_{k}"), {
            "long_name": f"cheapest policy meeting loop.target: its {ln}", "units": "1"})
    coords = axis_coords(axes, dims, {
        "protocol": ("protocol", list(lp.PROTOCOLS), {
            "long_name": "oversight protocol of the training loop",
            "description": "consult: consultancy on every case; debate: debate on every case; "
                           "escalate: consultancy, flagged and audited cases escalated"}),
        "round": ("round", np.arange(T + 1)),
        "quantile": ("quantile", list(QUANTILES)),
        "flag_rule": ("flag_rule", list(lp.FLAGS)),
        "audit_level": ("audit_level", lp.AUDIT_LEVELS)})
    ds = xr.Dataset(data, coords=coords)
    ds.attrs.update({
        "title": "antiamp: closed-loop oversight", "method":
            "exact expectation of the paths (exact_method), mean-field recursion and Monte Carlo "
            "paths (common random numbers across protocols)",
        "n_paths": int(cells[0].loop.paths), "solve_seconds": float(elapsed),
        "solver_report": "no issues"})
    return ds


#: The config paths :func:`validate` reads beyond the declared ranges: the loop's sizes and
#: learner, and the oversight it builds (judge tables, dominance check, escalation policy). A
#: grid is validated column by column, and :func:`validate` once per distinct combination of
#: the axes these cover.
VALIDATE_READS = ("model.stance", "model.c_e", "model.x_P", "model.x_A", "model.x_P_consult",
                  "judge", "protocol", "loop.paths", "loop.rounds", "loop.batch", "loop.types",
                  "loop.learner", "loop.bias", "loop.audit", "loop.flag", "loop.flag_band",
                  "loop.budget", "loop.escalate_to", "loop.escalate_jury")


def validate(cfg) -> None:
    lp.validate_loop(cfg)
    lp.oversight(cfg)  # the presentation strategies must be dominant or given


# ------------------------------------------------------------------ table and figures
def format_loop(ds: xr.Dataset) -> str:
    import yaml

    lc = yaml.safe_load(ds.attrs["config"])["loop"]
    lines = [f"closed loop: {lc['learner']} learner, m = {lc['m']}, e_h = {lc['e_h']}, "
             f"rate = {lc['rate']}, {lc['rounds']} rounds of {lc['batch']} cases"
             + (f" x {lc['types']} types" if lc["learner"] == "majority" else "")
             + f", {lc['paths']} paths",
             f"escalation policy: audit {lc['audit']}, flag {lc['flag']}, budget {lc['budget']}, "
             f"escalated cases to " + ("debate" if lc["escalate_to"] == "debate" else
                                       f"a jury of {lc['escalate_jury']}"),
             ""]
    head = (f"{'protocol':<10}{'Amp':>8}{'fwc':>8}{'e_star':>9}{'slope':>8}{'settle':>8}"
            f"{'final (sim)':>20}{'Amp*':>8}{'m*':>7}{'rho*':>7}{'cost':>7}")
    lines.append(head)
    for p in ds.protocol.values:
        d = ds.sel(protocol=p)
        fin = (f"{float(d.final_err):.4f} ± {float(d.final_err_se):.4f}"
               if np.isfinite(float(d.final_err)) else "-")
        lines.append(f"{p:<10}{float(d.amp):>8.4f}{float(d.fwc):>8.4f}{float(d.e_star):>9.4f}"
                     f"{float(d.slope):>8.3f}{int(d.settle_rounds):>8d}{fin:>20}"
                     f"{float(d.amp_threshold):>8.3f}{float(d.m_threshold):>7.3f}"
                     f"{float(d.rho_threshold):>7.3f}{float(d.cost):>7.3f}")
    lines += ["", "e_star: the mean-field recursion's long-run error; slope < 1: stable; settle: "
              "rounds to within 1% of it.", "Amp*, m*, rho*: the largest value at which the "
              "loop still corrects (long-run error <= e_0); 0: never (Amp*, rho*: drifts "
              "even at 0).",
              "cost: share of overseen cases escalated (escalate: to debate or the jury)."]
    if lc["learner"] == "majority":
        lines.append("")
        for p in ds.protocol.values:
            d = ds.sel(protocol=p)
            lines.append(f"lock-in ({p}): {float(d.lock_in):.4f} ± {float(d.lock_in_se):.4f} "
                         f"simulated, {float(d.lock_in_exact):.4f} exact")
    if lc.get("target") is not None:
        flag = str(ds.policy_flag.values)
        lines.append("")
        if flag:
            lines.append(
                f"cheapest policy with long-run error <= {lc['target']}: flag {flag}, audit "
                f"{float(ds.policy_audit):.4f}, cost {float(ds.policy_cost):.4f}; long-run error "
                f"{float(ds.policy_err):.4f} exact, "
                + (f"{float(ds.policy_err_sim):.4f} ± {float(ds.policy_err_sim_se):.4f} "
                   f"simulated after {lc['rounds']} rounds" if np.isfinite(
                       float(ds.policy_err_sim)) else "not simulated (loop.paths = 0)"))
        else:
            lines.append(f"no escalation policy reaches long-run error {lc['target']} "
                         "(not even debate on every case)")
    return "\n".join(wrap_prose(lines))  # its table is within 100 columns


COLOURS = {"consult": "C1", "debate": "C0", "escalate": "C2"}


def plot_cell(ds: xr.Dataset, path: Path) -> list:
    """Paths with bands (simulated) over the exact expected path, the training targets'
    error, rho or the escalated share, and the escalation policy's Pareto front."""
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    lc = cfg["loop"]
    fig, axs = panel_grid(4)
    t = ds["round"].values
    third = "rho" if lc["rho_gain"] > 0 else "escalated"
    for p in ds.protocol.values:
        d, col = ds.sel(protocol=p), COLOURS[str(p)]
        ax = axs[0]
        if np.isfinite(d.err_mean.values).any():
            q = d.err_quantile.values
            ax.fill_between(t, q[:, 0], q[:, 4], color=col, alpha=0.12, lw=0)
            ax.fill_between(t, q[:, 1], q[:, 3], color=col, alpha=0.25, lw=0)
            ax.plot(t, d.err_mean.values, "-", color=col, lw=1.4)
        ex = d.err_mean_exact.values
        ax.plot(t, ex if np.isfinite(ex).any() else d.err_meanfield.values, "--", color=col,
                lw=0.9)
        for ax, v in ((axs[1], "label_err"), (axs[2], third)):
            if np.isfinite(d[f"{v}_mean"].values).any():
                ax.plot(t, d[f"{v}_mean"].values, "-", color=col, lw=1.4)
            ex = d[f"{v}_mean_exact"].values
            ax.plot(t, ex if np.isfinite(ex).any() else d[f"{v}_meanfield"].values, "--",
                    color=col, lw=0.9)
    axs[0].axhline(float(ds.err_meanfield.values[0, 0]), color="0.6", lw=0.6, ls=":")
    axs[0].set_title("the model's error e_t: mean, 25-75% and 5-95% of paths", fontsize=9)
    axs[1].set_title("error rate of the training targets", fontsize=9)
    axs[2].set_title("fabrication rate ρ_t" if third == "rho" else
                     "share of overseen cases escalated", fontsize=9)
    for ax in axs[:3]:
        ax.set_xlabel("round t", fontsize=8)
    ax = axs[3]
    markers = {"none": "o", "no_evidence": "s", "uncertain": "^"}
    for f in ds.flag_rule.values:
        d = ds.sel(flag_rule=f)
        ax.plot(d.pareto_cost.values, d.pareto_err.values, markers[str(f)], ms=3.5,
                color="0.55", mfc="none", label=f"flag: {f}")
        on = d.pareto_front.values
        ax.plot(d.pareto_cost.values[on], d.pareto_err.values[on], markers[str(f)], ms=4,
                color="C3", gid=f"Pareto front of flag: {f}")
    if lc.get("target") is not None:
        ax.axhline(lc["target"], color="C3", lw=0.8, ls=":")
        if str(ds.policy_flag.values):
            ax.plot([float(ds.policy_cost)], [float(ds.policy_err)], "*", ms=12, color="C3",
                    label="cheapest meeting the target")
    ax.set_xlabel("cost: share of cases escalated", fontsize=8)
    ax.set_ylabel("long-run error", fontsize=8)
    ax.set_title("escalation policies over audit rate (red: Pareto front)", fontsize=9)
    ax.legend(fontsize=7, frameon=False, loc="upper right")
    shared_legend(fig, [(str(p), COLOURS[str(p)]) for p in ds.protocol.values],
                  [("simulated mean", "-", None), ("exact expectation (else mean-field)", "--", None)])
    fig.suptitle(f"closed-loop oversight ({lc['learner']} learner): "
                 f"m = {lc['m']}, e_h = {lc['e_h']}, rate = {lc['rate']}, "
                 f"ρ_0 = {cfg['model']['rho']}, " + _judge(cfg), fontsize=9)
    return save(fig, path) + plot_safety(ds, path.with_name(path.name + "_safety"))


def plot_safety(ds: xr.Dataset, path: Path) -> list:
    """Safety against the audit budget: per flag rule, the share of wrong answers that
    escalation keeps from being ratified (1 - Amp, exact, at each policy's long-run
    fixed point) against the share of cases escalated, the policies joined in order of
    their audit rate; consultancy's and debate's safety at their own fixed points as
    the two ends."""
    import yaml

    import matplotlib.pyplot as plt

    cfg = yaml.safe_load(ds.attrs["config"])
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    markers = {"none": "o", "no_evidence": "s", "uncertain": "^"}
    for i, f in enumerate(ds.flag_rule.values):
        d = ds.sel(flag_rule=f)
        ax.plot(d.pareto_cost.values, d.pareto_safety.values, "-" + markers[str(f)], ms=3.5,
                color=f"C{i + 2}", lw=1.0, label=f"flag: {f} (audit rate 0 to 1)")
    ax.set_xlabel("audit budget: share of overseen cases escalated", fontsize=8)
    ax.set_ylabel("safety: wrong answers not ratified (1 − Amp)", fontsize=8)
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=7, frameon=False, loc="lower right")
    ax.set_title("escalation: safety against the audit budget (exact, long-run fixed point)",
                 fontsize=9)
    fig.suptitle(f"closed-loop oversight: ρ_0 = {cfg['model']['rho']}, "
                 + _judge(cfg), fontsize=9)
    return save(fig, path)


def _judge(cfg) -> str:
    j = cfg["judge"]
    s = f"b = {j['b']}" if j["kind"] == "tiebreak" else (
        f"λ = {j['lam']}, μ = {j['mu']}, κ = {j['kappa']}")
    return s + (f", jury of {j['jury_size']}" if j["jury_size"] > 1 else "")


def plot_grid(ds: xr.Dataset, path: Path) -> list:
    """Two sweep axes: the phase diagram (long-run error of consultancy and debate, and
    their difference with its zero contour: where debate stops paying).  One axis:
    long-run and simulated final error per protocol, and the drift thresholds."""
    from ...plotting import axes_of, axis_label, describe, integer_ticks

    dims = axes_of(ds, "e_star")
    if not dims:
        return []
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    fields = judge_fields(cfg) + [("loop", k) for k in ("m", "e_h", "rate", "learner")]
    if len(dims) >= 2:
        x, y = dims[0], dims[1]
        sub = ds.isel({d: 0 for d in dims[2:]})
        fig, axs = panel_grid(3, height=3.2)
        xv, yv = sub[x].values.astype(float), sub[y].values.astype(float)
        lo = float(np.nanmin(sub.e_star.sel(protocol=["consult", "debate"]).values))
        hi = float(np.nanmax(sub.e_star.sel(protocol=["consult", "debate"]).values))
        for ax, p in zip(axs[:2], ("consult", "debate")):
            z = sub.e_star.sel(protocol=p).transpose(y, x).values
            m = ax.pcolormesh(xv, yv, z, shading="gouraud", vmin=lo, vmax=hi, cmap="viridis")
            ax.set_title(f"long-run error e* ({p})", fontsize=9)
            fig.colorbar(m, ax=ax, shrink=0.85)
        z = sub.e_star_gap.transpose(y, x).values
        lim = float(np.nanmax(np.abs(z))) or 1.0
        m = axs[2].pcolormesh(xv, yv, z, shading="gouraud", cmap="RdBu", vmin=-lim, vmax=lim)
        if np.nanmin(z) < 0 < np.nanmax(z):
            cs = axs[2].contour(xv, yv, z, levels=[0.0], colors="k", linewidths=1.2)
            axs[2].clabel(cs, fmt={0.0: "debate = consultancy"}, fontsize=7)
        axs[2].set_title("e*(consult) - e*(debate): blue, debate pays", fontsize=9)
        fig.colorbar(m, ax=axs[2], shrink=0.85)
        for ax in axs:
            ax.set_xlabel(axis_label(ds, x), fontsize=8)
            ax.set_ylabel(axis_label(ds, y), fontsize=8)
            integer_ticks(ax, xv)
            integer_ticks(ax, yv, "y")
        note = ("; shown at " + ", ".join(f"{d} = {fmt(ds[d].values[0])}" for d in dims[2:])
                if len(dims) > 2 else "")
        fig.suptitle(f"closed-loop phase diagram: {describe(ds, fields)}{note}", fontsize=9)
        return save(fig, path)
    x = dims[0]
    xv = ds[x].values
    xpos = np.arange(len(xv)) if xv.dtype.kind in "US" else xv
    fig, axs = panel_grid(3, height=3.0)
    for p in ds.protocol.values:
        d, col = ds.sel(protocol=p), COLOURS[str(p)]
        axs[0].plot(xpos, d.e_star.values, "--", color=col, lw=1.0)
        if np.isfinite(d.final_err.values).any():
            axs[0].errorbar(xpos, d.final_err.values, yerr=2 * d.final_err_se.values, fmt="o",
                            ms=3, color=col, capsize=2)
        axs[1].plot(xpos, d.amp_threshold.values, "-o", ms=3, color=col)
        axs[2].plot(xpos, d.cost.values, "-o", ms=3, color=col)
    axs[0].set_title("long-run error: exact e* (dashed), simulated (±2 SE)", fontsize=9)
    axs[1].set_title("drift threshold: largest Amp that corrects", fontsize=9)
    axs[2].set_title("cost: share of cases escalated", fontsize=9)
    for ax in axs:
        ax.set_xlabel(axis_label(ds, x), fontsize=8)
        if xv.dtype.kind in "US":
            ax.set_xticks(xpos, xv)
        else:
            integer_ticks(ax, xv)
    shared_legend(fig, [(str(p), COLOURS[str(p)]) for p in ds.protocol.values], [])
    fig.suptitle(f"closed-loop oversight: {describe(ds, fields)}", fontsize=9)
    return save(fig, path)


def cell_work(size) -> tuple:
    """The work bound's cost of a cell (:class:`antiamp.registry.Model` ``work``): three
    protocols' cases a round, paths x rounds x batch (x types for the majority
    learner; run.n_instances is not read), and the per-path series held in memory."""
    majority = size("loop", "learner", "calibrated") == "majority"
    types = size("loop", "types", 100) if majority else 1.0
    paths, rounds = size("loop", "paths", 200), size("loop", "rounds", 40)
    work = 3 * paths * rounds * size("loop", "batch", 1000) * types
    what = (f"{work:.3g} loop cases (3 protocols x loop.paths x rounds x batch"
            + (" x types)" if majority else ")"))
    return work, what, 3 * 8 * paths * (5 * rounds + 3)


#: Paths x rounds x batch (x types) of a default cell: 3 x 200 x 40 x 1,000 cases,
#: about 0.1 s of the path kernel, 8 cells a block.
_DEFAULT_WORK = 3 * 200 * 40 * 1000
#: Most bytes of per-path series a block holds (its cells' paths x rounds arrays).
_BLOCK_BYTES = 64 * 2**20


def cells_per_block(base) -> int:
    """A grid's default block: 8 cells of default paths (each about 0.1 s of the path
    kernel: small blocks spread over workers and resume finely), more cells as a cell's
    cases fall (about as many cases a block, at most 1,024 cells and 64 MiB of per-path
    series a block), and 512 cells of the exact recursion alone (``loop.paths = 0``:
    about 20 ms a cell, 10 s a block; 128-cell blocks spent about 0.7 ms a cell on their
    Dataset and chunk files, 8-cell blocks more than on their cells)."""
    lc = base.loop
    if int(lc.paths) == 0:
        return 512
    def size(sec, key, default):  # the work bound's reader, on the validated config
        v = getattr(getattr(base, sec), key, default)
        return v if isinstance(v, str) else float(v)

    work, _, mem = cell_work(size)
    by_work = 8 * _DEFAULT_WORK // max(1, int(work))
    by_mem = _BLOCK_BYTES // max(1, int(mem))
    return int(max(8, min(1024, by_work, by_mem)))


MODEL = Model(
    name="loop",
    title="closed-loop oversight: endorsed labels train the model",
    run_cells=solve_cells,
    sections=SECTIONS,
    uses=("model", "judge", "protocol", "run"),
    validate=validate, validate_reads=VALIDATE_READS, prepare=lp.ignore_instances,
    kernel_fields=("model.p", "model.rho", "model.c_e", "model.x_P", "model.x_A",
                   "model.x_P_consult", "judge.*", "protocol.*", "loop.*", "run.seed"),
    format_table=format_loop, figures=plot_grid, cell_figures=plot_cell,
    plot_vars=("e_star", "final_err"), cells_per_block=cells_per_block,
    gpu=True,  # the simulated paths (kernels.gpu.loop)
    work=cell_work,
)
