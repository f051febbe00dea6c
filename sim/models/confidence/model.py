"""Stated confidence in multi-round debate (seed 004) and judges that weigh it, as a model."""

from __future__ import annotations

import functools
import math
import time
from pathlib import Path

import numpy as np

from ...lazy import lazy
from ...plotting import panel_grid, save, shared_legend, wrap_prose
from ...registry import Model
from ...config import MAX_BLOCK_SUMS_BYTES  # noqa: F401 (the bound, read by tests)
from .config import SECTIONS
from ...layout import axis_coords
from . import core as cf

xr = lazy("xarray")

OVERSIGHT = {"amp": "Amp = Pr(y = a | a wrong)", "fwc": "follow-when-correct Pr(y = a | a right)",
             "acc": "accuracy Pr(y = omega)"}


@functools.lru_cache(maxsize=16)
def _data(path, condition: str) -> tuple:
    """A condition's bets and what the data alone give (the rounds' means, the closing
    classes, the Brier scores): the same for every cell that reads the same log and
    condition, so computed once, not per cell (read-only arrays)."""
    X = cf.bets_array(cf.load_bets(path), condition)
    means, means_se = cf.data_means(X)
    classes = cf.data_classes(X)
    out = (X, means, means_se, classes, np.sqrt(classes * (1 - classes) / len(X)))
    for a in out:
        a.flags.writeable = False
    return out + (dict(cf.brier_data(X)),)


def _cell(c) -> dict:
    cc = c.confidence
    rep_P, fitP = cf.reports_of(cc)
    rep_A = rep_P if cc.antagonist is None else cf.reports_of(cc, cc.antagonist)[0]
    X, mean_data, mean_data_se, class_data, class_data_se, bd = _data(cc.data, cc.condition)
    R = rep_P.rounds
    r: dict = {}
    vals = fitP.values()
    r["param"] = np.array([vals[n][0] for n in fitP.names])
    r["param_se"] = np.array([vals[n][1] for n in fitP.names])
    r["mean_model"] = cf.implied_means(rep_P)
    r["mean_data"], r["mean_data_se"] = mean_data, mean_data_se
    r["class_model"] = cf.closing_class_probs(rep_P)
    r["class_data"], r["class_data_se"] = class_data, class_data_se
    if cc.ppc_draws:
        pp = cf.predictive_check(fitP, X, cc.ppc_draws, seed=int(c.run.seed))
        r["class_ppc_lo"], r["class_ppc_hi"] = pp["lo"], pp["hi"]
        r["ppc_p_value"] = np.float64(pp["p_value"])
    else:
        r["class_ppc_lo"] = r["class_ppc_hi"] = np.full(len(cf.CATEGORIES), np.nan)
        r["ppc_p_value"] = np.float64(np.nan)
    # Model bands of the reports by round: 5-95% of a side's report (normal part).
    sd = math.sqrt(rep_P.shared_sd ** 2 + rep_P.side_sd ** 2 + rep_P.noise_sd ** 2
                   + (rep_P.weight * 100) ** 2 * _belief_var(rep_P))
    r["report_lo"] = r["mean_model"] - 1.645 * sd
    r["report_hi"] = r["mean_model"] + 1.645 * sd
    bm = cf.brier_model(rep_P)
    r["brier_best"], r["brier_best_se"] = np.float64(bd["best"]), np.float64(bd["best_se"])
    r["brier_coin"] = np.float64(bd["coin"])
    r["brier_model"], r["confidence_info"] = np.float64(bm["brier"]), np.float64(bm["corr"])
    r["loglik"] = np.float64(fitP.loglik)
    # The jury's latent correlation: configured, or fitted to the vote histogram.
    icc, icc_se = float(cc.icc), 0.0
    V = cf.votes_of(cc)
    if V is not None:  # per-judge votes: each judge's lean, and icc beside them
        fv = cf.fit_judge_votes(V)
        icc, icc_se = fv["icc"], fv["icc_se"]
    elif cc.votes is not None:
        fv = cf.fit_votes(cc.votes, cc.votes_judges)
        icc, icc_se = fv["icc"], fv["icc_se"]
    r["icc"], r["icc_se"] = np.float64(icc), np.float64(icc_se)
    r.update(_lean_values(fv if V is not None else None, int(cc.votes_judges)))
    j = c.judge
    args = dict(p=float(c.model.p), rho=float(c.model.rho), lam=float(j.lam), mu=float(j.mu),
                kappa=float(j.kappa), kappa_c=float(cc.kappa_c), n=int(j.jury_size), icc=icc,
                tie=float(j.jury_tie))
    # Judges that lean (per-judge votes): the jury seats jury_size of them, sides at
    # random; its endorsement is read from its table in the kernel and the quadrature.
    leans = cf.jury_leans_of(fv, cc.jury_leans) if V is not None else None
    r["jury_leans_used"] = np.float64(leans is not None)
    if leans is not None:
        jury = cf.lean_jury(int(j.jury_size), icc, float(j.jury_tie), leans)
    else:
        # A shared-latent jury read from its table (within 1e-9 of its quadrature, as the
        # kernel reads it): a tenth of the time of a quadrature at every grid point.
        jury = (cf.tabulated_jury(int(j.jury_size), icc, float(j.jury_tie))
                if j.jury_size > 1 and icc > 0 else None)
    # The clipping kinks integrated exactly, with an error estimate (a 24-node
    # Gauss-Hermite grid over them was off by up to 0.017 at wide spreads).
    ex, r["quad_error"] = cf.oversight_exact_bounded(rep_P, rep_A, **args, jury=jury)
    r["quad_error"] = np.float64(r["quad_error"])
    sim = (cf.simulate_oversight(rep_P, rep_A, **args, n_instances=int(c.run.n_instances),
                                 seed=int(c.run.seed), n_threads=int(c.run.n_threads),
                                 device=c.run.device, leans=leans)
           if c.run.n_instances > 1 else None)
    for k in OVERSIGHT:
        r[f"{k}_exact"] = np.array([ex[p][k] for p in cf.PROTOCOLS])
        r[k] = (np.array([sim[p][k] for p in cf.PROTOCOLS]) if sim else np.full(2, np.nan))
        r[f"{k}_se"] = (np.array([sim[p][f"{k}_se"] for p in cf.PROTOCOLS]) if sim
                        else np.full(2, np.nan))
    r["amp_gap"] = np.float64(sim["amp_gap"] if sim else np.nan)
    r["amp_gap_se"] = np.float64(sim["amp_gap_se"] if sim else np.nan)
    r["amp_gap_exact"] = np.float64(ex["consult"]["amp"] - ex["debate"]["amp"])
    th = cf.kappa_c_thresholds(rep_P, rep_A, **args, leans=leans)
    r["kappa_c_off"], r["kappa_c_half"] = np.float64(th["off"]), np.float64(th["half"])
    r["_R"] = R
    r["_names"] = fitP.names
    return r


#: Per-judge vote fit (confidence.votes as each judge's votes): name -> (dims, meaning).
LEANS = {
    "judge_pr_proposition": (("judge",), "each judge's probability of voting for the "
                             "proposition, fitted to per-judge votes"),
    "judge_pr_proposition_se": (("judge",), "standard error of judge_pr_proposition"),
    "judge_lean": (("judge",), "each judge's lean toward the proposition relative to the "
                   "panel (probit scale; the leans sum to 0)"),
    "judge_lean_se": (("judge",), "standard error of judge_lean"),
    "side_lean": ((), "the panel's mean lean toward the proposition (probit scale)"),
    "side_lean_se": ((), "standard error of side_lean"),
    "lean_p_value": ((), "likelihood-ratio test of interchangeable judges (no judge leans "
                     "differently), chi-squared with judges - 1 degrees of freedom"),
    "votes_observed": (("votes_for_proposition",), "share of debates (every judge voting) "
                       "by the number of votes for the proposition, data"),
    "votes_fitted": (("votes_for_proposition",), "the same share, judges that lean "
                     "(fitted)"),
    "votes_fitted_equal": (("votes_for_proposition",), "the same share, interchangeable "
                           "judges (fitted)"),
}


def _lean_values(fv, J: int) -> dict:
    """The per-judge vote fit's values (NaN when confidence.votes is not per-judge)."""
    nan = {(): np.float64(np.nan), ("judge",): np.full(J, np.nan),
           ("votes_for_proposition",): np.full(J + 1, np.nan)}
    if fv is None:
        return {k: nan[d] for k, (d, _) in LEANS.items()}
    return {"judge_pr_proposition": fv["pr_proposition"],
            "judge_pr_proposition_se": fv["pr_proposition_se"],
            "judge_lean": fv["leans"], "judge_lean_se": fv["leans_se"],
            "side_lean": np.float64(fv["m"]), "side_lean_se": np.float64(fv["m_se"]),
            "lean_p_value": np.float64(fv["lean_p_value"]),
            "votes_observed": fv["observed"], "votes_fitted": fv["fitted"],
            "votes_fitted_equal": fv["fitted_equal"]}


def _belief_var(rep) -> float:
    """Variance of the closing belief B_R (quadrature)."""
    x, w = np.polynomial.hermite_e.hermegauss(40)
    w = w / w.sum()
    B = cf.special.ndtr((rep.side_bias + math.sqrt(rep.info) * x) / math.sqrt(1 - rep.info))
    return float(np.sum(w * B ** 2) - np.sum(w * B) ** 2)


def solve_cells(base, cells):
    shape, dims, axes = (len(cells),), ("cell",), ()  # a block: its cells along "cell"
    t0 = time.perf_counter()
    res = [_cell(c) for c in cells]
    elapsed = time.perf_counter() - t0
    Rs = {r["_R"] for r in res}
    if len(Rs) > 1:
        from ...config import ConfigError

        raise ConfigError("every cell of a grid must have bets with the same number of rounds")
    R = Rs.pop()
    names = res[0]["_names"]
    sh, ax = tuple(shape), tuple(dims)

    def st(k):
        a = np.stack([np.asarray(r[k]) for r in res])
        return a.reshape(sh + a.shape[1:])

    P = ("protocol",)
    data = {
        "fitted": (ax + ("param",), st("param"), {
            "long_name": "fitted report model (maximum likelihood): a_1, escalation steps, "
                         "side offset, |weight on belief|, anchor share, sds", "units": "points"}),
        "fitted_se": (ax + ("param",), st("param_se"), {
            "long_name": "standard error of fitted (NaN: at a bound of the fit)",
            "units": "points"}),
        "mean_model": (ax + ("round",), st("mean_model"), {
            "long_name": "mean stated confidence by round, fitted model", "units": "%"}),
        "mean_data": (ax + ("round",), st("mean_data"), {
            "long_name": "mean stated confidence by round, data", "units": "%"}),
        "mean_data_se": (ax + ("round",), st("mean_data_se"), {
            "long_name": "standard error of mean_data (debates independent)", "units": "%"}),
        "report_lo": (ax + ("round",), st("report_lo"), {
            "long_name": "5% quantile of a report, fitted model (normal part)", "units": "%"}),
        "report_hi": (ax + ("round",), st("report_hi"), {
            "long_name": "95% quantile of a report, fitted model (normal part)", "units": "%"}),
        "class_model": (ax + ("category",), st("class_model"), {
            "long_name": "share of debates by the two sides' closing bets, fitted model",
            "units": "1"}),
        "class_data": (ax + ("category",), st("class_data"), {
            "long_name": "share of debates by the two sides' closing bets, data", "units": "1"}),
        "class_data_se": (ax + ("category",), st("class_data_se"), {
            "long_name": "binomial standard error of class_data", "units": "1"}),
        "class_ppc_lo": (ax + ("category",), st("class_ppc_lo"), {
            "long_name": "posterior predictive 5% quantile of the share", "units": "1"}),
        "class_ppc_hi": (ax + ("category",), st("class_ppc_hi"), {
            "long_name": "posterior predictive 95% quantile of the share", "units": "1"}),
        "ppc_p_value": (ax, st("ppc_p_value"), {
            "long_name": "posterior predictive p-value of the closing-bet categories "
                         "(chi-square discrepancy)", "units": "1"}),
        "brier_best": (ax, st("brier_best"), {
            "long_name": "closing bets' Brier score if every debate went to the side that "
                         "minimises it (a lower bound; 0.25 = always stating 50%)",
            "units": "1"}),
        "brier_best_se": (ax, st("brier_best_se"), {"long_name": "standard error of brier_best",
                                                     "units": "1"}),
        "brier_coin": (ax, st("brier_coin"), {
            "long_name": "closing bets' Brier score if the winner were a fair coin",
            "units": "1"}),
        "brier_model": (ax, st("brier_model"), {
            "long_name": "fitted model's expected Brier score of the closing bets",
            "units": "1"}),
        "confidence_info": (ax, st("confidence_info"), {
            "long_name": "fitted model: correlation of c_P - c_O with P's win (at +|w|)",
            "units": "1"}),
        "loglik": (ax, st("loglik"), {"long_name": "maximised log-likelihood", "units": "1"}),
        "quad_error": (ax, st("quad_error"), {
            "long_name": "error estimate of the exact oversight values: largest difference "
                         "from the same integration at two thirds of the nodes (the "
                         "clipping kinks integrated exactly, the own report terms cut "
                         "where a steep judge steps); an estimate, not a bound", "units": "1"}),
        "kappa_c_off": (ax, st("kappa_c_off"), {
            "long_name": "smallest kappa_c at which debate's Amp reaches consultancy's with a "
                         "judge that ignores confidence (NaN: never, up to 50)", "units": "1"}),
        "kappa_c_half": (ax, st("kappa_c_half"), {
            "long_name": "smallest kappa_c at which debate's Amp reaches 1/2 (NaN: never, "
                         "up to 50)", "units": "1"}),
        "icc": (ax, st("icc"), {"long_name": "jury latent correlation (configured or fitted "
                                             "to confidence.votes)", "units": "1"}),
        "icc_se": (ax, st("icc_se"), {"long_name": "standard error of icc (0: configured)",
                                      "units": "1"}),
        "amp_gap": (ax, st("amp_gap"), {
            "long_name": "Amp(consult) - Amp(debate), simulated on common instances "
                         "(> 0: debate anti-amplifies)", "units": "1"}),
        "amp_gap_se": (ax, st("amp_gap_se"), {"long_name": "standard error of amp_gap",
                                              "units": "1"}),
        "jury_leans_used": (ax, st("jury_leans_used"), {
            "long_name": "1 where the oversight jury's judges lean (fitted to per-judge "
                         "votes, confidence.jury_leans), 0 where they are interchangeable",
            "units": "1"}),
        "amp_gap_exact": (ax, st("amp_gap_exact"), {
            "long_name": "Amp(consult) - Amp(debate) by quadrature", "units": "1"}),
    }
    for k, ln in OVERSIGHT.items():
        data[k] = (ax + P, st(k), {"long_name": f"{ln}, simulated", "units": "1"})
        data[f"{k}_se"] = (ax + P, st(f"{k}_se"), {"long_name": f"standard error of {k}",
                                                   "units": "1"})
        data[f"{k}_exact"] = (ax + P, st(f"{k}_exact"), {
            "long_name": f"{ln}, quadrature over the latent terms", "units": "1"})
    Js = {len(r["judge_lean"]) for r in res}
    if len(Js) > 1:
        from ...config import ConfigError

        raise ConfigError("every cell of a grid must have the same confidence.votes_judges")
    J = Js.pop()
    for k, (dd, ln) in LEANS.items():
        data[k] = (ax + dd, st(k), {"long_name": ln, "units": "1"})
    coords = axis_coords(axes, dims, {
        "protocol": ("protocol", list(cf.PROTOCOLS), {
            "long_name": "oversight protocol",
            "description": "consult: open consultancy; debate: open debate"}),
        "round": ("round", np.arange(1, R + 1)),
        "param": ("param", list(names)), "category": ("category", list(cf.CATEGORIES)),
        "judge": ("judge", np.arange(J)),
        "votes_for_proposition": ("votes_for_proposition", np.arange(J + 1))})
    ds = xr.Dataset(data, coords=coords)
    ds.attrs.update({
        "title": "antiamp: stated confidence in multi-round debate",
        "method": "maximum likelihood per condition (quadrature over the belief path); "
                  "Monte Carlo oversight with common random numbers and its quadrature",
        "data_source": "Prasad and Nguyen (2025), When Two LLMs Debate, Both Think They'll "
                       "Win; bets from github.com/pradyuprasad/llms_overconfidence",
        "solve_seconds": float(elapsed), "solver_report": "no issues"})
    return ds


#: The config paths :func:`validate` reads beyond the declared ranges: the judge, and the
#: confidence section's lists and their counts. A grid is validated column by column, and
#: :func:`validate` once per distinct combination of the axes these cover.
VALIDATE_READS = ("judge.kind", "judge.jury_size", "confidence", "run.n_instances")

def validate(cfg) -> None:
    cf.validate_confidence(cfg)
    from ...config import check_block_sums
    from ...kernels.confidence import BLOCK, N_ACC

    check_block_sums(cfg, "confidence", 8 * (2 * N_ACC + 2), BLOCK, "instances")


def check_inputs(cfg) -> None:
    """The bets file and the conditions a config names (read once: cached)."""
    cc = cfg.confidence
    cf.check_bets(cc.data, cc.condition, cc.antagonist)
    if cc.intercepts is not None:  # one per round of the data: known before any directory
        rounds = cf.bets_array(cf.load_bets(cc.data), cc.condition).shape[2]
        if len(cc.intercepts) != rounds:
            from ...config import ConfigError

            raise ConfigError(f"confidence.intercepts must have {rounds} values (one per "
                              f"round of the data), got {len(cc.intercepts)}")
    if isinstance(cc.votes, str):  # a CSV of per-judge votes: read and checked now
        cf.votes_of(cc)


# ------------------------------------------------------------------ table and figures
def format_confidence(ds) -> str:
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    cc = cfg["confidence"]
    lab = cf.CONDITION_LABELS.get(cc["condition"], cc["condition"])
    lines = [f"stated confidence: condition {lab}, info {cc['info']}, kappa_c {cc['kappa_c']}",
             "", "fitted report model (maximum likelihood, 0-100 scale):"]
    for n, v, s in zip(ds["param"].values, ds.fitted.values, ds.fitted_se.values):
        se = f"± {s:.3f}" if np.isfinite(s) else "(at a bound)"
        lines.append(f"  {n:<14}{v:>9.3f} {se}")
    lines += ["", f"{'round':<8}{'data':>16}{'model':>9}"]
    for r in ds["round"].values:
        d = ds.sel(round=r)
        lines.append(f"{int(r):<8}{float(d.mean_data):>8.2f} ± {float(d.mean_data_se):4.2f}"
                     f"{float(d.mean_model):>9.2f}")
    lines += ["", f"{'closing bets':<16}{'data':>15}{'model':>9}{'predictive 90%':>18}"]
    for k in ds.category.values:
        d = ds.sel(category=k)
        lines.append(f"{k:<16}{float(d.class_data):>7.3f} ± {float(d.class_data_se):.3f}"
                     f"{float(d.class_model):>9.3f}   [{float(d.class_ppc_lo):.3f}, "
                     f"{float(d.class_ppc_hi):.3f}]")
    lines += [f"posterior predictive p-value: {float(ds.ppc_p_value):.3f}", "",
              f"Brier score of the closing bets (always 50%: 0.25): at least "
              f"{float(ds.brier_best):.3f} ± {float(ds.brier_best_se):.3f} whoever won; "
              f"{float(ds.brier_coin):.3f} with a fair-coin winner; fitted model "
              f"{float(ds.brier_model):.3f}; corr(c_P - c_O, win) at most "
              f"{float(ds.confidence_info):.3f}", ""]
    lines.append(f"{'protocol':<10}{'Amp':>18}{'exact':>9}{'fwc':>18}{'exact':>9}{'acc':>18}")
    for p in ds.protocol.values:
        d = ds.sel(protocol=p)
        row = f"{p:<10}"
        for k in ("amp", "fwc"):
            row += (f"{float(d[k]):>9.4f} ± {float(d[k + '_se']):.4f}"
                    f"{float(d[k + '_exact']):>9.4f}")
        row += f"{float(d.acc):>9.4f} ± {float(d.acc_se):.4f}"
        lines.append(row)
    lines.append(f"Amp(consult) - Amp(debate): {float(ds.amp_gap):.4f} ± "
                 f"{float(ds.amp_gap_se):.4f} simulated, {float(ds.amp_gap_exact):.4f} exact")
    off, half = float(ds.kappa_c_off), float(ds.kappa_c_half)
    lines.append("debate's anti-amplification is off (its Amp reaches consultancy's with a "
                 "judge ignoring confidence) from kappa_c = "
                 + (f"{off:.3f}" if np.isfinite(off) else "never (up to 50)")
                 + "; its Amp reaches 1/2 from kappa_c = "
                 + (f"{half:.3f}" if np.isfinite(half) else "never (up to 50)"))
    j = cfg["judge"]
    if j["jury_size"] > 1:
        lines.append(f"jury of {j['jury_size']}, latent correlation icc = {float(ds.icc):.3f}"
                     + (f" ± {float(ds.icc_se):.3f} (fitted to confidence.votes)"
                        if cc.get("votes") else " (configured)"))
    if np.isfinite(float(ds.side_lean)):
        lines += ["", "judges' votes (per judge): Pr(vote for the proposition) "
                  + ", ".join(f"{float(v):.2f} ± {float(e):.2f}" for v, e in
                              zip(ds.judge_pr_proposition.values,
                                  ds.judge_pr_proposition_se.values)),
                  f"  panel lean {float(ds.side_lean):+.3f} ± {float(ds.side_lean_se):.3f} "
                  f"(probit), icc {float(ds.icc):.3f}; interchangeable judges: LR p = "
                  f"{float(ds.lean_p_value):.3g}",
                  ("  the oversight jury above seats "
                   f"{j['jury_size']} of these judges at random, each with its "
                   f"{cc.get('jury_leans', 'relative')} lean, the protagonist on either "
                   "side with probability 1/2"
                   if float(ds.jury_leans_used) else
                   "  the oversight jury above uses icc; the judges' leans enter the vote "
                   "fit and its histogram only (confidence.jury_leans=none)")]
    return "\n".join(wrap_prose(lines))


#: The protocols' colours: C0 is the fitted model's in the same figure (one colour,
#: one meaning), C2 the leaning judges'.
COLOURS = {"consult": "C1", "debate": "C4"}


def _rounds_panel(ax, d, title):
    t = d["round"].values
    ax.fill_between(t, d.report_lo.values, d.report_hi.values, color="C0", alpha=0.15, lw=0)
    ax.plot(t, d.mean_model.values, "-", color="C0", lw=1.4)
    ax.errorbar(t, d.mean_data.values, yerr=1.96 * d.mean_data_se.values, fmt="o", ms=4,
                color="k", capsize=3)
    ax.axhline(50, color="0.6", lw=0.6, ls=":")
    ax.set_xticks(t, ["opening", "rebuttal", "closing"][:len(t)] if len(t) == 3 else t)
    ax.set_ylim(0, 100)
    ax.set_title(title, fontsize=9)
    ax.set_ylabel("stated confidence (%): band 90% of reports", fontsize=8)


def plot_cell(ds, path: Path) -> list:
    """Confidence by round (data with 95% intervals over the model's mean and 90%
    band), the closing-bet categories, and Amp/fwc per protocol."""
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    cc = cfg["confidence"]
    leaning = bool(np.isfinite(ds.votes_fitted.values).all())
    fig, axs = panel_grid(4 if leaning else 3, height=3.2)
    _rounds_panel(axs[0], ds, f"confidence by round: "
                  f"{cf.CONDITION_LABELS.get(cc['condition'], cc['condition'])}")
    ax = axs[1]
    k = np.arange(len(ds.category))
    ax.bar(k - 0.2, ds.class_data.values, 0.4, yerr=1.96 * ds.class_data_se.values,
           color="0.4", capsize=2, label="data ±1.96 SE")
    ax.bar(k + 0.2, ds.class_model.values, 0.4, color="C0", label="model")
    if np.isfinite(ds.class_ppc_lo.values).all():
        ax.vlines(k + 0.2, ds.class_ppc_lo.values, ds.class_ppc_hi.values, color="C3",
                  lw=1.2, label="predictive 90%")
    ax.set_xticks(k, [c.replace(" + ", "\n+ ").replace("both ", "both\n")
                      for c in ds.category.values], fontsize=6.5)
    ax.set_title(f"closing bets of both sides (PPC p = {float(ds.ppc_p_value):.2f})",
                 fontsize=9)
    ax.legend(fontsize=7, frameon=False)
    ax = axs[2]
    x = np.arange(3)
    for i, p in enumerate(ds.protocol.values):
        d = ds.sel(protocol=p)
        v = [float(d[m]) for m in OVERSIGHT]
        e = [1.96 * float(d[m + "_se"]) for m in OVERSIGHT]
        ax.bar(x + (i - 0.5) * 0.4, v, 0.4, yerr=e, color=COLOURS[str(p)], capsize=2)
        ax.plot(x + (i - 0.5) * 0.4, [float(d[m + "_exact"]) for m in OVERSIGHT], "D",
                color="k", ms=3.5, mfc="white", zorder=4)
    ax.set_xticks(x, ["Amp", "fwc", "accuracy"])
    ax.set_ylim(0, 1)
    ax.set_title(f"judge weighing confidence: κ_c = {cc['kappa_c']}", fontsize=9)
    if leaning:
        _votes_panel(axs[3], ds)
    shared_legend(fig, [(str(p), COLOURS[str(p)]) for p in ds.protocol.values],
                  [("quadrature", "none", "D")])
    fig.suptitle("stated confidence in debate (seed 004): data, fitted model, oversight",
                 fontsize=9)
    return save(fig, path)


def _votes_panel(ax, ds) -> None:
    """Debates by votes for the proposition (every judge voting): observed, fitted with
    each judge's lean, and fitted with interchangeable judges."""
    k = ds.votes_for_proposition.values
    ax.bar(k - 0.27, ds.votes_observed.values, 0.27, color="0.4", label="observed")
    ax.bar(k, ds.votes_fitted.values, 0.27, color="C2", label="judges that lean")
    ax.bar(k + 0.27, ds.votes_fitted_equal.values, 0.27, color="C7",
           label="interchangeable judges")
    ax.set_xticks(k)
    ax.set_xlabel("votes for the proposition", fontsize=8)
    ax.set_ylabel("share of debates", fontsize=8)
    ax.set_title(f"judges' votes (lean LR p = {float(ds.lean_p_value):.2g})", fontsize=9)
    ax.legend(fontsize=7, frameon=False)


def plot_grid(ds, path: Path) -> list:
    """Over conditions: confidence by round against the data, one panel each; with a
    kappa_c axis: Amp against kappa_c per condition and protocol."""
    from ...plotting import axes_of, axis_label

    dims = axes_of(ds, "amp_exact")
    if not dims:
        return []
    cond = next((d for d in dims if d.split(".")[-1] == "condition"), None)
    others = [d for d in dims if d != cond]
    if cond and not others:
        conds = ds[cond].values
        fig, axs = panel_grid(len(conds), height=2.8)
        for ax, cnd in zip(axs, conds):
            _rounds_panel(ax, ds.sel({cond: cnd}), cf.CONDITION_LABELS.get(str(cnd), str(cnd)))
        shared_legend(fig, [("model mean and 90% band", "C0")], [("data ±1.96 SE", "none", "o")])
        fig.suptitle("stated confidence by round: published debates (points) and the fitted "
                     "model", fontsize=9)
        return save(fig, path)
    x = others[0]
    xv = ds[x].values.astype(float)
    panels = list(ds[cond].values) if cond else [None]
    fig, axs = panel_grid(len(panels), height=2.9)
    for ax, cnd in zip(axs, panels):
        sub = ds.sel({cond: cnd}) if cond else ds
        sub = sub.isel({d: 0 for d in others[1:]})
        for p in ds.protocol.values:
            d = sub.sel(protocol=p)
            ax.plot(xv, d.amp_exact.values, "-", color=COLOURS[str(p)], lw=1.2)
            if np.isfinite(d.amp.values).any():
                ax.errorbar(xv, d.amp.values, yerr=1.96 * d.amp_se.values, fmt="o", ms=3,
                            color=COLOURS[str(p)], capsize=2)
        ax.set_ylim(0, 1)
        ax.set_xlabel(axis_label(ds, x), fontsize=8)
        ax.set_ylabel("Amp", fontsize=8)
        ax.set_title(cf.CONDITION_LABELS.get(str(cnd), str(cnd)) if cnd else "Amp", fontsize=9)
    shared_legend(fig, [(str(p), COLOURS[str(p)]) for p in ds.protocol.values],
                  [("quadrature", "-", None), ("simulated ±1.96 SE", "none", "o")])
    fig.suptitle("mistake amplification as the judge weighs stated confidence", fontsize=9)
    return save(fig, path)


MODEL = Model(
    name="confidence",
    title="stated confidence in multi-round debate (seed 004) and judges that weigh it",
    run_cells=solve_cells,
    sections=SECTIONS,
    uses=("model", "judge", "run", "confidence"),
    validate=validate, validate_reads=VALIDATE_READS,
    check_inputs=check_inputs,
    kernel_fields=("model.p", "model.rho", "judge.*", "confidence.*", "run.seed",
                   "run.n_instances"),
    format_table=format_confidence, figures=plot_grid, cell_figures=plot_cell,
    plot_vars=("amp_exact",), cells_per_block=4,
    gpu=True,  # the oversight Monte Carlo (kernels.gpu.confidence)
)
