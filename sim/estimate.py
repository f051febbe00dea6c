"""Estimating rho, b, kappa, mu and Amp from oversight logs (seed 000, section 6).

Reads a table in the schema of :data:`sim.transcripts.SCHEMA` (ours or a user's)
and reports, per protocol and stratum: Amp-hat, accuracy and follow-when-correct
with stratified percentile bootstrap intervals (each stratum resampled within
itself, as scipy.stats.bootstrap does with one sample per stratum, drawn as
multinomial code counts so that memory stays bounded whatever the log's size);
equilibrium fabrication rates per role; feasibility rates where forced attempts
are logged; the tie bias b-hat, split by label-blinding when logged; tie
and imbalance frequencies; a logistic fit of effective bias and salience with
judge-clustered standard errors (statsmodels GLM); the one-sided test of
Amp(debate) < Amp(consult); and sensitivity intervals for Amp under a stated
rate of mislabelled ground truth.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from .lazy import lazy
pd = lazy("pandas")
xr = lazy("xarray")
stats = lazy("scipy.stats")

from ._version import __version__
from .transcripts import SCHEMA, SCHEMA_VERSION

from .logs import (  # noqa: F401  (reading and checking logs; re-exported)
    BINARY, PROTOCOLS, PROTOCOL_ALIASES, ANSWERS, LETTERS,
    MAX_ANSWERS, LogError, MAX_PARQUET_BYTES, MAX_ROUND, load_log,
    _labels, _show, validate_log, _check_answers, n_answers,
    _rounds, select_round, amp_by_round, ROLES, SWAP,
    _roles)


# ------------------------------------------------------------------ statistics
def _codes(d: pd.DataFrame) -> np.ndarray:
    """Row code 8 right + 4 known + 2 wrong + endorse, for the bootstrap statistics
    (right: y = omega, which with K > 2 answers is not implied by y != a)."""
    known = d["omega"].notna().to_numpy()
    om = d["omega"].fillna(-1).to_numpy()
    a, y = d["a"].to_numpy(), d["y"].to_numpy()
    wrong = known & (a != om)
    return (8 * (known & (y == om)) + 4 * known + 2 * wrong + (y == a)).astype(float)


# Every statistic of the bootstrap reads only how many rows fall in each of the
# 16 codes, so a resample of n rows with replacement is a multinomial draw of the
# code counts (the same distribution as resampling rows, which scipy.stats.bootstrap
# does): memory and time per resample are O(16), not O(n), whatever the log's size.
N_CODES = 16


def code_counts(codes: np.ndarray) -> np.ndarray:
    """How many rows of each code 0..15."""
    return np.bincount(np.asarray(codes, np.int64), minlength=N_CODES)


_ORDER = np.lexsort((np.arange(N_CODES) // 8, np.arange(N_CODES) % 8))


def _fold(c):
    """Counts of the 8 codes known/wrong/endorse, summed over y = omega."""
    c = np.asarray(c)
    return c[..., :8] + c[..., 8:]


def _amp(c):
    f = _fold(c)
    with np.errstate(invalid="ignore", divide="ignore"):
        return f[..., 7] / (f[..., 6] + f[..., 7])


def _fwc(c):
    f = _fold(c)
    with np.errstate(invalid="ignore", divide="ignore"):
        return f[..., 5] / (f[..., 4] + f[..., 5])


def _acc(c):
    c = np.asarray(c)
    with np.errstate(invalid="ignore", divide="ignore"):
        return c[..., 12:].sum(axis=-1) / (c[..., 4:8].sum(axis=-1) + c[..., 12:].sum(axis=-1))


def corrected_amp_counts(c: np.ndarray, eps: float):
    """Amp after undoing a symmetric mislabel rate ``eps`` of the recorded ground truth.

    With q = Pr(a != omega), A = Amp and F = follow-when-correct, the recorded
    truth gives Pr(a != w~) = (1 - eps) q + eps (1 - q), Pr(y = a, a != w~) =
    (1 - eps) q A + eps (1 - q) F and Pr(y = a, a = w~) = (1 - eps)(1 - q) F + eps q A;
    solved for A.  ``c``: code counts [..., 16] (two answers).
    """
    c = _fold(np.asarray(c, float))
    with np.errstate(invalid="ignore", divide="ignore"):
        k = c[..., 4:].sum(axis=-1)
        qt = (c[..., 6] + c[..., 7]) / k
        jw = c[..., 7] / k
        jr = c[..., 5] / k
        q = (qt - eps) / (1 - 2 * eps)
        # [(1-eps) q, eps (1-q); eps q, (1-eps)(1-q)] [A, F] = [jw, jr]
        det = (1 - eps) ** 2 * q * (1 - q) - eps ** 2 * q * (1 - q)
        A = (jw * (1 - eps) * (1 - q) - eps * (1 - q) * jr) / det
    return np.clip(A, 0.0, 1.0)


def corrected_amp(codes: np.ndarray, eps: float):
    """:func:`corrected_amp_counts` of a sample of row codes."""
    return corrected_amp_counts(code_counts(codes), eps)


def _resampled(counts: list, n_resamples: int, rng) -> np.ndarray:
    """Code counts of ``n_resamples`` stratified bootstrap resamples [B, 8]: each
    stratum's rows resampled with replacement within the stratum."""
    out = np.zeros((n_resamples, N_CODES), np.int64)
    # Categories in the order of the 8 codes that ignore y = omega: with two answers the
    # y = omega bit is fixed by the others, so the nonzero categories come in the same
    # order as in an 8-code table and a seed gives the same resamples as it always has.
    for c in counts:
        n = int(c.sum())
        out[:, _ORDER] += rng.multinomial(n, c[_ORDER] / n, size=n_resamples)
    return out


def _boot(samples, stat, confidence, n_resamples, rng):
    """Point estimate and stratified percentile interval of ``stat`` (a statistic
    of code counts) over ``samples`` (one array of row codes per stratum)."""
    counts = [code_counts(s) for s in samples if len(s)]
    if not counts or sum(int(c.sum()) for c in counts) < 2:
        return np.nan, np.nan, np.nan
    point = float(stat(np.sum(counts, axis=0)))
    if any(c.sum() < 2 for c in counts):  # a stratum of one row cannot be resampled
        counts = [np.sum(counts, axis=0)]
    lo, hi = _percentile_interval(stat(_resampled(counts, n_resamples, rng)), confidence)
    return point, lo, hi


def _percentile_interval(dist: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile interval of a bootstrap distribution (NaN if a resample is
    undefined)."""
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(dist, [alpha, 1 - alpha])
    return float(lo), float(hi)


#: Graded evidence without a threshold: the wrong sides' mean score over the right
#: sides' (with binary scores and right sides that always show evidence, rho_eq).
GRADED = {
    "v_wrong": "mean graded evidence of the sides arguing a wrong answer",
    "v_right": "mean graded evidence of the sides arguing the right answer",
    "rho_graded": "graded fabrication rate: wrong sides' mean evidence / right sides'",
}


def graded_rho(d: pd.DataFrame, prot: str, confidence: float) -> dict:
    """Graded evidence per side without a threshold: the wrong sides' mean score
    v_wrong, the right sides' v_right, and their ratio rho_graded, which with 0/1
    scores and right sides that always show evidence is rho_eq itself.  Sides: the
    protagonist, and in two-answer debates the antagonist (wrong when the protagonist
    is right).  Interval: exp(log ratio +- z se), the delta-method variance of the log
    ratio of totals with judge-clustered influence sums (G/(G-1) factor); it stays
    O(rows) in memory, unlike a row bootstrap."""
    known = d["omega"].notna().to_numpy()
    right = (d["a"] == d["omega"]).to_numpy() & known
    wrong = known & ~right
    vP = d["v_P"].to_numpy(float)
    okP = np.isfinite(vP)
    s_w = np.where(wrong & okP, vP, 0.0)
    n_w = (wrong & okP).astype(float)
    s_r = np.where(right & okP, vP, 0.0)
    n_r = (right & okP).astype(float)
    if prot == "debate" and "v_A" in d.columns and d.attrs.get("K", 2) == 2:
        vA = d["v_A"].to_numpy(float)
        okA = np.isfinite(vA)
        s_w += np.where(right & okA, vA, 0.0)  # P right: A argues the wrong answer
        n_w += (right & okA)
        s_r += np.where(wrong & okA, vA, 0.0)
        n_r += (wrong & okA)
    Sw, Nw, Sr, Nr = s_w.sum(), n_w.sum(), s_r.sum(), n_r.sum()
    out = {k: np.nan for k in (*GRADED, "rho_graded_lo", "rho_graded_hi")}
    if Nw > 0:
        out["v_wrong"] = Sw / Nw
    if Nr > 0:
        out["v_right"] = Sr / Nr
    if not (Nw > 0 and Nr > 0 and Sr > 0):
        return out
    R = (Sw / Nw) / (Sr / Nr)
    out["rho_graded"] = R
    if Sw <= 0:
        return out
    u = s_w / Sw - n_w / Nw - s_r / Sr + n_r / Nr  # influence on log R
    g = (pd.factorize(d["judge_id"])[0] if "judge_id" in d.columns
         else np.arange(len(d)))
    U = np.bincount(g, weights=u)
    G = len(U)
    if G < 2:
        return out
    se = float(np.sqrt((U ** 2).sum() * G / (G - 1)))
    zq = stats.norm.ppf(0.5 + confidence / 2)
    out["rho_graded_lo"], out["rho_graded_hi"] = R * np.exp(-zq * se), R * np.exp(zq * se)
    return out


def _rate(num_mask, den_mask):
    den = int(den_mask.sum())
    return float((num_mask & den_mask).sum() / den) if den else np.nan


def logistic_fit(d: pd.DataFrame):
    """Pr(y = a) = sigma(mu~ + kappa~ x): x = e_P - e_A, or v_P - v_A when graded scores
    are logged; judge-clustered standard errors (statsmodels GLM, cluster covariance)."""
    import statsmodels.api as sm

    graded = "v_P" in d.columns and d["v_P"].notna().all() and \
        ("v_A" in d.columns and d["v_A"].notna().all())
    x = (d["v_P"] - d["v_A"]) if graded else (d["e_P"] - d["e_A"])
    reg = "v_P - v_A" if graded else "e_P - e_A"
    endorse = (d["y"] == d["a"]).astype(float).to_numpy()
    X = sm.add_constant(x.to_numpy(dtype=float), has_constant="add")
    groups = pd.factorize(d["judge_id"])[0]

    def refused(note):
        return dict(mu=np.nan, mu_se=np.nan, kappa=np.nan, kappa_se=np.nan, graded=graded,
                    regressor=reg, note=note)

    if np.ptp(X[:, 1]) == 0:
        return refused(f"x = {reg} is constant ({X[0, 1]:g} on every row), so kappa~ is not "
                       "identified; not fitted")
    if endorse.min() == endorse.max():
        return refused("the judge's label never varies; not fitted")
    codes = pd.factorize(d["protocol"])[0] if "protocol" in d.columns else np.zeros(1, int)
    if codes.max() > 0:
        # per protocol by masks: a groupby with np.ptp aggregates in Python and sorts,
        # about 0.6 GB of temporaries at 5 million rows
        if all(np.ptp(X[codes == k, 1]) == 0 for k in range(codes.max() + 1)):
            # x only says which protocol a row is
            return refused(f"x = {reg} is constant within each protocol, so it is collinear "
                           f"with the protocol (a protocol dummy) and kappa~ would measure the "
                           f"protocol, not the evidence; not fitted")
    if not graded:  # quasi-separation: a label that never varies at some evidence difference
        rates = pd.Series(endorse).groupby(X[:, 1]).mean()
        if any(r in (0.0, 1.0) for xv, r in rates.items() if xv != 0):
            return refused("separation: the label never varies at some evidence difference "
                           "(as with a tie-break judge), so kappa~ is not identified")
    import warnings

    from statsmodels.tools.sm_exceptions import PerfectSeparationWarning

    # The fit runs on rows aggregated by (judge, x): endorsements k out of n, a
    # binomial GLM with var_weights n.  Its estimates and its cluster sandwich are
    # those of the row-level fit (scores add up within a judge), with memory and
    # time set by judges x evidence values, not rows.  statsmodels' small-sample
    # factor would count aggregated rows, so it is applied here with the real count
    # N: G/(G-1) (N-1)/(N-K), as the row-level fit applies it (test_estimate checks).
    agg = pd.DataFrame({"g": groups, "x": X[:, 1], "k": endorse}).groupby(
        ["g", "x"], sort=True)["k"].agg(["sum", "size"]).reset_index()
    n_obs = agg["size"].to_numpy(dtype=float)
    Xa = sm.add_constant(agg["x"].to_numpy(dtype=float), has_constant="add")
    G, N, K = int(groups.max()) + 1, len(endorse), 2
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit = sm.GLM(agg["sum"].to_numpy() / n_obs, Xa, family=sm.families.Binomial(),
                         var_weights=n_obs).fit(
                cov_type="cluster", cov_kwds={"groups": agg["g"].to_numpy(),
                                              "use_correction": False})
    except Exception as exc:  # singular design, failed convergence
        return refused(f"fit failed: {exc}")
    if any(issubclass(w.category, PerfectSeparationWarning) for w in caught):
        return refused("perfect separation: labels are deterministic in the evidence "
                       "(as with a tie-break judge), so kappa~ is not identified")
    # Intervals use t quantiles with G - 1 degrees of freedom (G judges): cluster-robust
    # standard errors are biased down when clusters are few (Cameron and Miller, 2015).
    corr = G / (G - 1) * (N - 1) / (N - K) if G > 1 and N > K else np.nan
    bse = np.sqrt(np.diag(np.asarray(fit.cov_params())) * corr)
    note = ("rows with assigned roles read the wrong debater as the protagonist, so mu~ "
            "there is the judge's lean toward the wrong answer at equal evidence, not toward "
            "a role" if "role" in d.columns and bool(((d["role"] == "assigned")
                                                      & (d["protocol"] == "debate")).any())
            else "")
    return dict(mu=float(fit.params[0]), mu_se=float(bse[0]), kappa=float(fit.params[1]),
                kappa_se=float(bse[1]), graded=graded, regressor=reg, note=note,
                df=max(G - 1, 1))


#: Metrics of the judge's stated probability p_y for the protagonist's answer.
PROB_METRICS = {
    "amp_prob": "Amp from probabilities: mean p_y when a is wrong",
    "fwc_prob": "follow-when-correct from probabilities: mean p_y when a is right",
    "brier": "Brier score of p_y against a = omega",
    "log_loss": "log loss of the probability on the truth (p_y clipped to [1e-6, 1 - 1e-6])",
    "tie_prob": "share of exact 0.5 judgements",
}
N_BINS = 10


def _stratified_mean(groups: list, confidence: float):
    """Mean over the pooled rows of the strata and its t interval with the stratified
    variance sum_s (n_s / N)^2 s_s^2 / n_s (strata sizes fixed, as in the bootstrap).

    A mean of bounded per-row values needs no resampling: the t interval is the
    standard one, and memory stays O(rows) for any log size."""
    groups = [np.asarray(g, float) for g in groups if len(g)]
    N = sum(len(g) for g in groups)
    if N == 0:
        return np.nan, np.nan, np.nan
    m = sum(float(g.sum()) for g in groups) / N
    if N - len(groups) < 1 or any(len(g) < 2 for g in groups):
        return m, np.nan, np.nan
    se = math.sqrt(sum((len(g) / N) ** 2 * g.var(ddof=1) / len(g) for g in groups))
    t = float(stats.t.ppf(0.5 + confidence / 2, N - len(groups)))
    return m, m - t * se, m + t * se


def probability_metrics(ds_: pd.DataFrame, confidence: float) -> dict:
    """:data:`PROB_METRICS` of one protocol and stratum (rows with p_y and a known
    truth), each ``(value, lo, hi)``."""
    d = ds_[ds_["p_y"].notna() & ds_["omega"].notna()]
    groups = [g for _, g in d.groupby("stratum", observed=True)]
    right = [(g["a"] == g["omega"]).to_numpy(float) for g in groups]
    p = [g["p_y"].to_numpy(float) for g in groups]
    out = {}
    out["amp_prob"] = _stratified_mean([pp[rr == 0] for pp, rr in zip(p, right)], confidence)
    out["fwc_prob"] = _stratified_mean([pp[rr == 1] for pp, rr in zip(p, right)], confidence)
    out["brier"] = _stratified_mean([(pp - rr) ** 2 for pp, rr in zip(p, right)], confidence)
    q = [np.clip(np.where(rr == 1, pp, 1 - pp), 1e-6, 1 - 1e-6) for pp, rr in zip(p, right)]
    out["log_loss"] = _stratified_mean([-np.log(qq) for qq in q], confidence)
    out["tie_prob"] = _stratified_mean([(pp == 0.5).astype(float) for pp in p], confidence)
    return out


def reliability(d: pd.DataFrame):
    """Per bin of p_y (N_BINS equal bins on [0, 1]): rows, mean p_y, share with a right."""
    d = d[d["p_y"].notna() & d["omega"].notna()]
    p = d["p_y"].to_numpy(float)
    right = (d["a"] == d["omega"]).to_numpy(float)
    b = np.minimum((p * N_BINS).astype(int), N_BINS - 1)
    n = np.bincount(b, minlength=N_BINS).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mp = np.bincount(b, weights=p, minlength=N_BINS) / n
        fr = np.bincount(b, weights=right, minlength=N_BINS) / n
    return n, mp, fr


@dataclass
class EstimateOptions:
    confidence: float = 0.95
    n_resamples: int = 2000
    mislabel: float = 0.0
    seed: int = 0
    #: With a ``round`` column: the round every estimate reads, ``final`` (each
    #: instance's last) or a round number.
    round: object = "final"


def estimate(df: pd.DataFrame, opts: EstimateOptions | None = None) -> xr.Dataset:
    """All estimates of a validated log as a Dataset (dims protocol, stratum, fit)."""
    opts = opts or EstimateOptions()
    check_options(opts)
    if opts.mislabel > 0 and df.attrs.get("K", 2) > 2:
        raise LogError(f"the mislabel correction assumes two answers (a mislabelled truth is "
                       f"the other answer); the log has {df.attrs['K']}")
    by_round = amp_by_round(df, opts.confidence) if "round" in df.columns else None
    if "round" in df.columns:
        df = select_round(df, opts.round)
    rng = np.random.default_rng(opts.seed)
    strata = sorted(df["stratum"].unique().tolist())
    labels = strata + (["all"] if len(strata) > 1 or strata != ["all"] else [])
    if "all" not in labels:
        labels.append("all")
    labels = list(dict.fromkeys(labels))
    S, P = len(labels), len(PROTOCOLS)
    names = ["amp", "acc", "fwc"]
    out = {f"{n}{suf}": np.full((P, S), np.nan) for n in names for suf in ("", "_lo", "_hi")}
    for n in ("rho_eq_P", "rho_eq_A", "rho_feas_P", "rho_feas_A", "b_hat", "b_hat_blind",
              "b_hat_labelled", "tie_rate", "imbalance_rate", "n_rows", "n_known",
              "amp_mislabel_lo", "amp_mislabel_hi"):
        out[n] = np.full((P, S), np.nan)
    has_v = "v_P" in df.columns and bool(df["v_P"].notna().any())
    if has_v:
        for n in (*GRADED, "rho_graded_lo", "rho_graded_hi"):
            out[n] = np.full((P, S), np.nan)
    has_p = "p_y" in df.columns and bool(df["p_y"].notna().any())
    if has_p:
        for n in PROB_METRICS:
            for suf in ("", "_lo", "_hi"):
                out[f"{n}{suf}"] = np.full((P, S), np.nan)
    diff = {k: np.full(S, np.nan) for k in ("amp_diff", "amp_diff_lo", "amp_diff_hi", "p_value")}
    code_cache = {}
    for pi_, prot in enumerate(PROTOCOLS):
        dp = df[df["protocol"] == prot]
        for si, lab in enumerate(labels):
            ds_ = dp if lab == "all" else dp[dp["stratum"] == lab]
            out["n_rows"][pi_, si] = len(ds_)
            if len(ds_) == 0:
                continue
            groups = ([g for _, g in ds_.groupby("stratum", observed=True)] if lab == "all"
                      else [ds_])
            samples = [_codes(g) for g in groups]
            code_cache[prot, lab] = samples
            out["n_known"][pi_, si] = int(sum((s >= 4).sum() for s in samples))
            for n, f in (("amp", _amp), ("acc", _acc), ("fwc", _fwc)):
                ks = [s[s >= 4] for s in samples]
                out[n][pi_, si], out[f"{n}_lo"][pi_, si], out[f"{n}_hi"][pi_, si] = _boot(
                    ks, f, opts.confidence, opts.n_resamples, rng)
            known = ds_["omega"].notna()
            om = ds_["omega"]
            p_false = known & (ds_["a"] != om)
            a_false = known & (ds_["a"] == om)
            out["rho_eq_P"][pi_, si] = _rate(ds_["e_P"] == 1, p_false)
            if prot == "debate":
                out["rho_eq_A"][pi_, si] = _rate(ds_["e_A"] == 1, a_false)
            if "t_P" in ds_.columns:
                out["rho_feas_P"][pi_, si] = _rate(ds_["t_P"] == 1, p_false & ds_["t_P"].notna())
            if "t_A" in ds_.columns and prot == "debate":
                out["rho_feas_A"][pi_, si] = _rate(ds_["t_A"] == 1, a_false & ds_["t_A"].notna())
            if has_v:
                for n, v in graded_rho(ds_, prot, opts.confidence).items():
                    out[n][pi_, si] = v
            if has_p:
                for n, (v, lo, hi) in probability_metrics(ds_, opts.confidence).items():
                    out[n][pi_, si], out[f"{n}_lo"][pi_, si], out[f"{n}_hi"][pi_, si] = v, lo, hi
            tie = ds_["e_P"] == ds_["e_A"]
            endorse = ds_["y"] == ds_["a"]
            out["tie_rate"][pi_, si] = tie.mean()
            out["imbalance_rate"][pi_, si] = 1 - tie.mean()
            # b-hat is a lean toward a role: not defined where debate roles were assigned
            open_ = ~((ds_["role"] == "assigned") & (ds_["protocol"] == "debate")) \
                if "role" in ds_.columns else True
            out["b_hat"][pi_, si] = _rate(endorse, tie & open_)
            if "label_blind" in ds_.columns:
                out["b_hat_blind"][pi_, si] = _rate(endorse, tie & open_
                                                    & (ds_["label_blind"] == 1))
                out["b_hat_labelled"][pi_, si] = _rate(endorse, tie & open_
                                                       & (ds_["label_blind"] == 0))
            if opts.mislabel > 0:
                ks = [s[s >= 4] for s in samples]
                los, his = [], []
                for e in (0.0, opts.mislabel):
                    def st(c, e=e):
                        return corrected_amp_counts(c, e)
                    _, lo, hi = _boot(ks, st, opts.confidence, opts.n_resamples, rng)
                    los.append(lo)
                    his.append(hi)
                out["amp_mislabel_lo"][pi_, si] = np.nanmin(los)
                out["amp_mislabel_hi"][pi_, si] = np.nanmax(his)
    # Amp(debate) < Amp(consult): the difference, its bootstrap interval, a one-sided p.
    for si, lab in enumerate(labels):
        if ("consult", lab) not in code_cache or ("debate", lab) not in code_cache:
            continue
        cs = [code_counts(s[s >= 4]) for s in code_cache["consult", lab]]
        dsm = [code_counts(s[s >= 4]) for s in code_cache["debate", lab]]
        if any(c.sum() < 2 for c in cs + dsm):
            continue
        # Consultancy and debate rows are independent samples: resample each.
        point = float(_amp(np.sum(cs, axis=0)) - _amp(np.sum(dsm, axis=0)))
        dist = (_amp(_resampled(cs, opts.n_resamples, rng))
                - _amp(_resampled(dsm, opts.n_resamples, rng)))
        lo, hi = _percentile_interval(dist, opts.confidence)
        se = float(np.std(dist, ddof=1))
        diff["amp_diff"][si] = point
        diff["amp_diff_lo"][si] = lo
        diff["amp_diff_hi"][si] = hi
        diff["p_value"][si] = float(stats.norm.sf(point / se)) if se > 0 else np.nan
    fits = {}
    for name, sub in (("consult", df[df["protocol"] == "consult"]),
                      ("debate", df[df["protocol"] == "debate"]), ("pooled", df)):
        fits[name] = logistic_fit(sub) if len(sub) else dict(mu=np.nan, mu_se=np.nan,
                                                              kappa=np.nan, kappa_se=np.nan,
                                                              graded=False, regressor="none",
                                                              note="no rows")
    dims = ("protocol", "stratum")
    long = {
        "amp": "Amp-hat = Pr(y = a | a != omega)", "acc": "accuracy Pr(y = omega)",
        "fwc": "follow-when-correct Pr(y = a | a = omega)",
        "rho_eq_P": "equilibrium fabrication rate, protagonist",
        "rho_eq_A": "equilibrium fabrication rate, antagonist",
        "rho_feas_P": "feasibility rate (forced attempts), protagonist",
        "rho_feas_A": "feasibility rate (forced attempts), antagonist",
        "b_hat": "tie bias Pr(y = a | e_P = e_A)", "b_hat_blind": "tie bias, label-blind judges",
        "b_hat_labelled": "tie bias, judges told the roles", "tie_rate": "Pr(e_P = e_A)",
        "imbalance_rate": "Pr(e_P != e_A)", "n_rows": "rows", "n_known": "rows with known omega",
        "amp_mislabel_lo": f"Amp sensitivity interval, lower (mislabel rate up to {opts.mislabel})",
        "amp_mislabel_hi": f"Amp sensitivity interval, upper (mislabel rate up to {opts.mislabel})",
        **PROB_METRICS, **GRADED,
    }
    data = {}
    for k, v in out.items():
        base = k[:-3] if k.endswith(("_lo", "_hi")) and not k.startswith("amp_mislabel") else k
        ln = long.get(k, long.get(base, k))
        how = ("t interval" if base in PROB_METRICS else "judge-clustered delta-method"
               if base in GRADED else "bootstrap")
        if k.endswith("_lo") and not k.startswith("amp_mislabel"):
            ln = f"{ln}, {opts.confidence:.0%} {how} lower bound"
        if k.endswith("_hi") and not k.startswith("amp_mislabel"):
            ln = f"{ln}, {opts.confidence:.0%} {how} upper bound"
        data[k] = (dims, v, {"long_name": ln, "units": "1"})
    for k, v in diff.items():
        data[k] = (("stratum",), v, {"long_name": {
            "amp_diff": "Amp(consult) - Amp(debate)", "amp_diff_lo": "lower bound",
            "amp_diff_hi": "upper bound",
            "p_value": "one-sided p-value of H0: Amp(debate) >= Amp(consult)"}[k], "units": "1"})
    for f in fits.values():
        f.setdefault("df", np.nan)
    crit = {f: (stats.t.ppf(0.5 + opts.confidence / 2, fits[f]["df"])
                if np.isfinite(fits[f]["df"]) else np.nan) for f in fits}
    for k in ("mu", "kappa"):
        for side, sgn in (("lo", -1), ("hi", 1)):
            data[f"{k}_tilde_{side}"] = (("fit",), np.array(
                [fits[f][k] + sgn * crit[f] * fits[f][f"{k}_se"] for f in ("consult", "debate", "pooled")]),
                {"long_name": f"{opts.confidence:.0%} interval ({side}), t with (judges - 1) df"})
    for k in ("mu", "mu_se", "kappa", "kappa_se"):
        data[f"{k}_tilde" if not k.endswith("_se") else f"{k[:-3]}_tilde_se"] = (
            ("fit",), np.array([fits[f][k] for f in ("consult", "debate", "pooled")]),
            {"long_name": {"mu": "effective bias mu~ (lambda = 1)", "kappa":
                           "effective salience kappa~ (lambda = 1)"}[k.replace("_se", "")]
             + (", judge-clustered standard error" if k.endswith("_se") else "")})
    if has_p:
        rel = [reliability(df[df["protocol"] == prot]) for prot in PROTOCOLS]
        for j, (k, ln) in enumerate((("reliability_n", "rows in the p_y bin"),
                                     ("reliability_p", "mean p_y in the bin"),
                                     ("reliability_freq", "share of the bin with a right"))):
            data[k] = (("protocol", "p_bin"), np.array([r[j] for r in rel]),
                       {"long_name": ln, "units": "1"})
    if by_round is not None:
        rounds, rv = by_round
        for k, ln in (("amp_round", "Amp = Pr(y = a | a wrong) after each round (all rows "
                                    "of that round)"),
                      ("amp_round_lo", f"{opts.confidence:.0%} Wilson lower bound"),
                      ("amp_round_hi", f"{opts.confidence:.0%} Wilson upper bound"),
                      ("n_round", "rows with a wrong protagonist in that round")):
            data[k] = (("protocol", "round"), rv[k], {"long_name": ln, "units": "1"})
    data["regressor"] = (("fit",), np.array([fits[f]["regressor"] for f in
                                             ("consult", "debate", "pooled")], dtype=str),
                         {"long_name": "the evidence regressor x each fit used"})
    coords = {"protocol": list(PROTOCOLS), "stratum": labels,
              "fit": ["consult", "debate", "pooled"]}
    if by_round is not None:
        coords["round"] = ("round", by_round[0], {"long_name": "round"})
    if has_p:
        coords["p_bin"] = ("p_bin", (np.arange(N_BINS) + 0.5) / N_BINS,
                           {"long_name": "centre of the p_y bin"})
    ds = xr.Dataset(data, coords=coords)
    from antiamp.provenance import global_attrs

    ds.attrs.update({
        **global_attrs("antiamp-estimate: parameters and amplification from an oversight log",
                       f"antiamp {__version__}, estimation from an oversight log (antiamp-estimate)"),
        "antiamp_version": __version__, "confidence": opts.confidence,
        "n_resamples": opts.n_resamples, "mislabel": opts.mislabel, "seed": opts.seed,
        "graded_evidence": int(fits["pooled"]["graded"]),
        "fit_notes": "; ".join(f"{k}: {v['note']}" for k, v in fits.items() if v["note"]) or "",
        "log_notes": "; ".join(df.attrs.get("notes", [])
                               + ([f"rounds: every estimate reads round {opts.round}"
                                   + (" (each instance's last)" if opts.round == "final"
                                      else "")] if by_round is not None else [])),
        "round": str(opts.round),
        "log_schema": SCHEMA_VERSION,
        "n_answers": int(df.attrs.get("K", 2)),
        # Pr(the protagonist is right) over rows whose protagonist chose or was given
        # its answer: an assigned debate is read with the wrong debater as protagonist
        "p_correct": float((df["a"] == df["omega"])[df["omega"].notna() & ~(
            ((df["protocol"] == "debate") & (df["role"] == "assigned")) if "role" in df.columns
            else pd.Series(False, index=df.index))].mean()),
        "pi": float(df["omega"].mean()),
    })
    return ds


# ------------------------------------------------------------------ report, simulate, figure
def fitted_config(ds: xr.Dataset) -> dict:
    """Model parameters implied by the estimates, for the simulator."""
    all_ = ds.sel(stratum="all")
    rho = all_.rho_feas_P.sel(protocol="consult").item()
    if np.isnan(rho):
        rho = all_.rho_eq_P.sel(protocol="consult").item()
    b = all_.b_hat.sel(protocol="debate").item()
    d = all_.b_hat.sel(protocol="consult").item()
    clip = (lambda v, lo=0.0, hi=1.0: float(min(max(v, lo), hi)) if not np.isnan(v) else 0.5)
    return {
        "model": {"pi": clip(ds.attrs["pi"]), "p": clip(ds.attrs["p_correct"]), "rho": clip(rho)},
        "judge": {"kind": "tiebreak", "b": clip(b)},
        "protocol": {"consult_default": clip(d) if not np.isnan(d) else 0.0},
    }


def simulate_fitted(ds: xr.Dataset, n: int = 2_000_000, seed: int = 0) -> pd.DataFrame:
    """Predicted against observed metrics, under the fitted tie-break and logit judges."""
    import antiamp as sim

    cfg = fitted_config(ds)
    cfg["run"] = {"n_instances": n, "seed": seed, "progress": False}
    rows = []
    preds = {"tie-break (rho, b, consult default)": sim.simulate(cfg)}
    mu = ds.mu_tilde.sel(fit="pooled").item()
    kappa = ds.kappa_tilde.sel(fit="pooled").item()
    pooled_x = (str(ds.regressor.sel(fit="pooled").item()) if "regressor" in ds else
                ("v_P - v_A" if ds.attrs["graded_evidence"] else "e_P - e_A"))
    # The simulator's logit judge reads binary evidence: only a fit on e_P - e_A maps to it.
    if np.isfinite(mu) and np.isfinite(kappa) and kappa >= 0 and pooled_x == "e_P - e_A":
        lcfg = {**cfg, "judge": {"kind": "logit", "lam": 1.0, "mu": mu, "kappa": kappa},
                "protocol": {"consult_default": 0.0}}
        preds["logit (mu~, kappa~)"] = sim.simulate(lcfg)
    obs = ds.sel(stratum="all")
    for prot in PROTOCOLS:
        for m in ("amp", "acc", "fwc"):
            row = {"protocol": prot, "metric": m, "observed": obs[m].sel(protocol=prot).item(),
                   "lo": obs[f"{m}_lo"].sel(protocol=prot).item(),
                   "hi": obs[f"{m}_hi"].sel(protocol=prot).item()}
            for name, p in preds.items():
                row[name] = float(p[m].sel(protocol=prot))
            rows.append(row)
    return pd.DataFrame(rows)


def format_report(ds: xr.Dataset, source: str) -> str:
    lines = [f"antiamp-estimate {ds.attrs['antiamp_version']}: {source}",
             f"{ds.attrs['confidence']:.0%} stratified bootstrap intervals, "
             f"{ds.attrs['n_resamples']} resamples"]
    if ds.attrs.get("log_notes"):
        lines.append(f"read: {ds.attrs['log_notes']}")
    lines.append("")
    for lab in ds.stratum.values:
        lines.append(f"stratum {lab}:")
        for prot in PROTOCOLS:
            r = ds.sel(stratum=lab, protocol=prot)
            if r.n_rows.item() == 0:
                continue
            f = lambda n: (f"{r[n].item():.4f} [{r[n + '_lo'].item():.4f}, "  # noqa: E731
                           f"{r[n + '_hi'].item():.4f}]")
            lines.append(f"  {prot:<8} n={int(r.n_rows.item()):,} (truth known {int(r.n_known.item()):,})"
                         f"  Amp {f('amp')}  acc {f('acc')}  fwc {f('fwc')}")
            extra = [f"rho_eq_P {r.rho_eq_P.item():.4f}"]
            if prot == "debate":
                extra.append(f"rho_eq_A {r.rho_eq_A.item():.4f}")
            for n in ("rho_feas_P", "rho_feas_A", "b_hat_blind", "b_hat_labelled"):
                if np.isfinite(r[n].item()):
                    extra.append(f"{n} {r[n].item():.4f}")
            extra += [f"b_hat {r.b_hat.item():.4f}", f"ties {r.tie_rate.item():.4f}",
                      f"imbalance {r.imbalance_rate.item():.4f}"]
            if "rho_graded" in ds and np.isfinite(r.v_wrong.item()):
                extra.append(f"graded evidence: wrong sides {r.v_wrong.item():.4g}, right "
                             f"sides {r.v_right.item():.4g}, rho_graded "
                             f"{r.rho_graded.item():.4f} [{r.rho_graded_lo.item():.4f}, "
                             f"{r.rho_graded_hi.item():.4f}]")
            if np.isfinite(r.amp_mislabel_lo.item()):
                extra.append(f"Amp under mislabel <= {ds.attrs['mislabel']}: "
                             f"[{r.amp_mislabel_lo.item():.4f}, {r.amp_mislabel_hi.item():.4f}]")
            lines.append("           " + ", ".join(extra))
            if "amp_prob" in ds and np.isfinite(r.brier.item()):
                lines.append(f"           judge probabilities p_y ({ds.attrs['confidence']:.0%} "
                             f"t intervals): Amp {f('amp_prob')}, fwc {f('fwc_prob')}, Brier "
                             f"{f('brier')}, log loss {r.log_loss.item():.4f}, exact 0.5 "
                             f"{r.tie_prob.item():.4f}")
        dd = ds.sel(stratum=lab)
        if np.isfinite(dd.amp_diff.item()):
            lines.append(f"  Amp(consult) - Amp(debate) = {dd.amp_diff.item():.4f} "
                         f"[{dd.amp_diff_lo.item():.4f}, {dd.amp_diff_hi.item():.4f}], "
                         f"one-sided p = {dd.p_value.item():.3g}")
    if "amp_round" in ds:
        lines += ["", "Amp after each round (all instances' rows of that round, Wilson "
                  "intervals):"]
        for prot in PROTOCOLS:
            r = ds.sel(protocol=prot)
            cells = [f"{int(k)}: {v:.3f} [{lo:.3f}, {hi:.3f}] n={int(n)}" for k, v, lo, hi, n in
                     zip(ds["round"].values, r.amp_round.values, r.amp_round_lo.values,
                         r.amp_round_hi.values, r.n_round.values) if n > 0]
            if cells:
                lines.append(f"  {prot:<8} " + "; ".join(cells))
    lines += ["", "logistic fit Pr(y = a) = sigma(mu~ + kappa~ x), judge-clustered standard "
              "errors; each fit names its evidence regressor x:"]
    for fit in ds.fit.values:
        r = ds.sel(fit=fit)
        reg = (str(r.regressor.item()) if "regressor" in ds else
               ("v_P - v_A" if ds.attrs["graded_evidence"] else "e_P - e_A"))
        lines.append(f"  {fit:<8} x = {reg:<10} mu~ = {r.mu_tilde.item():.4f} "
                     f"({r.mu_tilde_se.item():.4f}) "
                     f"[{r.mu_tilde_lo.item():.4f}, {r.mu_tilde_hi.item():.4f}]   "
                     f"kappa~ = {r.kappa_tilde.item():.4f} ({r.kappa_tilde_se.item():.4f}) "
                     f"[{r.kappa_tilde_lo.item():.4f}, {r.kappa_tilde_hi.item():.4f}]")
    if ds.attrs["fit_notes"]:
        lines.append(f"  notes: {ds.attrs['fit_notes']}")
    return "\n".join(lines)


def plot_estimates(ds: xr.Dataset, path: Path, pred: pd.DataFrame | None = None) -> Path:
    """Observed metrics per stratum and protocol with their intervals; with ``pred``
    (``--simulate``) the structural judge's prediction beside the pooled value, with
    its interval over the fit's uncertainty, and the seed-000 judges' as crosses."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labs = list(ds.stratum.values)
    if len(labs) == 2 and "all" in labs:  # one stratum: "all" holds the same rows
        labs = [f"{[s for s in labs if s != 'all'][0]} (all rows)"]
        ds = ds.sel(stratum=["all"])
    fig, axs = plt.subplots(1, 3, figsize=(10.5, 3.9))
    colors = {"consult": "#d95f02", "debate": "#1b9e77"}
    for ax, m in zip(axs, ("amp", "acc", "fwc")):
        for k, prot in enumerate(PROTOCOLS):
            r = ds[m].sel(protocol=prot)
            lo, hi = ds[f"{m}_lo"].sel(protocol=prot), ds[f"{m}_hi"].sel(protocol=prot)
            x = np.arange(len(labs)) + (k - 0.5) * 0.36
            ax.errorbar(x, r.values, yerr=[r.values - lo.values, hi.values - r.values], fmt="o",
                        color=colors[prot], label=f"{prot}, observed", capsize=3)
            if pred is None:
                continue
            row = pred[(pred.protocol == prot) & (pred.metric == m)]
            if "predicted" in pred.columns and len(row) and np.isfinite(row["predicted"].item()):
                v = row["predicted"].item()
                ax.errorbar([x[-1] + 0.12], [v], yerr=[[v - row["predicted_lo"].item()],
                                                       [row["predicted_hi"].item() - v]],
                            fmt="D", ms=5, color="black", capsize=3, zorder=3,
                            label="structural judge, predicted" if k == 0 else None)
            for j, col in enumerate([c for c in pred.columns if "(" in c]):
                if len(row) and np.isfinite(row[col].item()):
                    ax.scatter([x[-1] + 0.12], [row[col].item()], marker=["x", "+"][j % 2],
                               color="0.45", s=40, zorder=3,
                               label=f"seed-000 {col}" if k == 0 else None)
        ax.set_xticks(range(len(labs)), labs)
        ax.set_xlim(-0.6, len(labs) - 0.4)  # every stratum's label inside, NaN or not
        ax.set_title({"amp": "Amp = Pr(y = a | a ≠ ω)", "acc": "accuracy",
                      "fwc": "follow-when-correct"}[m], fontsize=10)
        ax.set_xlabel("stratum")
    handles, labels = axs[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 3), fontsize=7,
               frameon=False)
    fig.suptitle(f"oversight log estimates, {ds.attrs['confidence']:.0%} stratified bootstrap "
                 "intervals", fontsize=10)
    fig.tight_layout(rect=(0, 0.05 + 0.04 * (len(labels) > 3), 1, 1))
    from .outputs_policy import save_figure

    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


def plot_reliability(ds: xr.Dataset, path: Path) -> list:
    """Reliability diagram of the judges' probabilities p_y, one panel per protocol:
    the share of rows whose protagonist is right against the mean p_y per bin (marker
    area by rows), the diagonal for perfect calibration, Brier score in the title."""
    from .plotting import panel_grid, save

    fig, axs = panel_grid(len(PROTOCOLS), height=3.2)
    for ax, prot in zip(axs, PROTOCOLS):
        r = ds.sel(protocol=prot)
        n = r.reliability_n.values
        ok = n > 0
        ax.plot([0, 1], [0, 1], color="0.6", lw=0.8, ls="--")
        # Wilson intervals per bin (statsmodels): small bins say little
        from statsmodels.stats.proportion import proportion_confint

        k = np.round(r.reliability_freq.values[ok] * n[ok])
        lo, hi = proportion_confint(k, n[ok], alpha=1 - float(ds.attrs["confidence"]),
                                    method="wilson")
        fr = r.reliability_freq.values[ok]
        ax.errorbar(r.reliability_p.values[ok], fr, yerr=np.maximum([fr - lo, hi - fr], 0.0),
                    fmt="none", ecolor="C0", elinewidth=0.8, capsize=2, alpha=0.7)
        ax.scatter(r.reliability_p.values[ok], r.reliability_freq.values[ok],
                   s=12 + 150 * n[ok] / max(n.max(), 1), color="C0", alpha=0.8)
        ax.plot(r.reliability_p.values[ok], r.reliability_freq.values[ok], color="C0", lw=0.8)
        a = ds.sel(protocol=prot, stratum="all")
        ax.set_title(f"{prot}: Brier {a.brier.item():.3f}, log loss {a.log_loss.item():.3f}, "
                     f"{int(n.sum())} rows", fontsize=9)
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("judge's probability for the protagonist's answer (bin mean)", fontsize=8)
        ax.set_ylabel("share of rows with the protagonist right", fontsize=8)
    fig.suptitle("calibration of the judges' probabilities (dashed: perfect calibration; "
                 f"marker area: rows; bars: {float(ds.attrs['confidence']):.0%} Wilson "
                 "intervals)", fontsize=9)
    return save(fig, path)


#: Shipped logs (``--sample NAME``), in antiamp's data folder (see its README for
#: the attribution and license of the real one).
SAMPLES = {"simulated": "sample_log.csv", "human_judges": "michael2023_human_judges.csv",
           "two_judges": "michael2023_judgments.csv"}

MAX_RESAMPLES = 10_000_000  # the bootstrap holds [resamples, 8] counts per statistic


def check_options(opts: EstimateOptions) -> None:
    """Range checks of the estimation options (LogError names the option)."""
    import numbers

    if isinstance(opts.n_resamples, bool) or not isinstance(opts.n_resamples, numbers.Integral) \
            or not 1 <= opts.n_resamples <= MAX_RESAMPLES:
        raise LogError(f"n_resamples must be an integer in [1, {MAX_RESAMPLES:,}], "
                       f"got {opts.n_resamples!r}")
    if isinstance(opts.seed, bool) or not isinstance(opts.seed, numbers.Integral) \
            or not 0 <= opts.seed < 2 ** 63:
        raise LogError(f"seed must be an integer in [0, 2**63), got {opts.seed!r}")
    if not (isinstance(opts.confidence, numbers.Real) and 0 < opts.confidence < 1):
        raise LogError(f"confidence must lie in (0, 1), got {opts.confidence!r}")
    r = opts.round
    if r != "final" and (isinstance(r, bool) or not isinstance(r, numbers.Integral) or r < 1):
        raise LogError(f"round must be final or a round number >= 1, got {r!r}")
    if not (isinstance(opts.mislabel, numbers.Real) and 0 <= opts.mislabel < 0.5):
        raise LogError(f"mislabel rate must lie in [0, 0.5), got {opts.mislabel!r}")


def _round_arg(v: str):
    if v == "final":
        return v
    try:
        r = int(v)
    except ValueError:
        r = 0
    if r < 1:
        raise argparse.ArgumentTypeError(f"must be final or a round number >= 1, got {v!r}")
    return r


def main(argv=None) -> None:
    from .config import MAX_INSTANCES

    ap = argparse.ArgumentParser(prog="antiamp-estimate", description=__doc__.splitlines()[0])
    ap.add_argument("--version", action="version", version=f"%(prog)s (antiamp {__version__})")
    ap.add_argument("log", nargs="?", default=None,
                    help="CSV (UTF-8) or Parquet log in the documented column schema, or an "
                         "Inspect .eval log or folder of them")
    ap.add_argument("--sample", nargs="?", const="simulated", default=None,
                    choices=tuple(SAMPLES),
                    help="use a shipped log instead of a file: simulated (the default: two "
                         "strata, a logit judge) or human_judges (Michael et al. 2023, "
                         "CC-BY 4.0: real human judges with their probabilities) or "
                         "two_judges (the same rooms, every online and offline judgment: "
                         "read_corr)")
    ap.add_argument("--out", default=None, help="output directory (default: "
                    "outputs/estimates/<log name>, beside the other commands' outputs/): a "
                    "new one, an empty one or one antiamp made")
    ap.add_argument("--force", action="store_true",
                    help="write into an existing --out directory antiamp did not make; "
                         "still overwrites only the files antiamp wrote there")
    ap.add_argument("--confidence", type=float, default=0.95, help="in (0, 1); default 0.95")
    ap.add_argument("--n-resamples", type=int, default=2000,
                    help=f"bootstrap resamples, 1 to {MAX_RESAMPLES:,}; default 2000")
    ap.add_argument("--mislabel", type=float, default=0.0,
                    help="rate of mislabelled ground truth for the Amp sensitivity interval, "
                         "in [0, 0.5)")
    ap.add_argument("--seed", type=int, default=0, help="bootstrap seed, >= 0")
    ap.add_argument("--mapping", default=None,
                    help="with Inspect .eval logs: a YAML or JSON file mapping log columns "
                         "to sample fields (README, 'From Inspect logs')")
    ap.add_argument("--round", type=_round_arg, default="final",
                    help="with a round column: the round every estimate reads, final (each "
                         "instance's last; the default) or a round number >= 1")
    ap.add_argument("--simulate", action="store_true",
                    help="simulate the fitted parameters and compare with the observed metrics")
    ap.add_argument("--n-sim", type=int, default=2_000_000,
                    help=f"instances per simulated protocol, 1 to {MAX_INSTANCES:.0e}")
    from . import predictive, readcorr

    predictive.add_arguments(ap)
    args = ap.parse_args(argv)
    if args.sample and args.log:
        ap.error("give a log file or --sample, not both")
    if args.sample:
        from importlib.resources import files

        args.log = str(files("antiamp") / "data" / SAMPLES[args.sample])
    if not args.log:
        ap.error("give a log file (or --sample)")
    opts = EstimateOptions(args.confidence, args.n_resamples, args.mislabel, args.seed,
                           args.round)
    # Under outputs/ like antiamp and antiamp-sweep (a deterministic name per log, as
    # sweeps have: rerunning on the same log replaces only what antiamp wrote).
    out = Path(args.out or Path("outputs") / "estimates" / Path(args.log).stem)
    from .output import OutputError, check_replaceable

    try:
        check_options(opts)
        if args.simulate and not 1 <= args.n_sim <= MAX_INSTANCES:
            raise LogError(f"--n-sim must lie in [1, {MAX_INSTANCES:.0e}], got {args.n_sim}")
        from .outputs_policy import check_out_dir

        check_replaceable(out / "estimates.zarr")  # (the more specific message first)
        check_out_dir(out, _OUT_FILES, force=args.force)
        t0 = time.perf_counter()
        df = load_log(args.log, args.mapping)
        if len(df) > 1_000_000:
            print(f"read {len(df):,} rows in {time.perf_counter() - t0:.1f} s; estimating "
                  f"(about {len(df) / 2e6:.0f}-{len(df) / 5e5:.0f} s more)", file=sys.stderr)
        if args.simulate and df.attrs.get("K", 2) > 2:
            raise LogError(f"--simulate runs the two-answer models; the log has "
                           f"{df.attrs['K']} answers (model=options is the multi-option "
                           f"model: antiamp model=options judge=logit options.K=...)")
        ds = estimate(df, opts)
        new = predictive.check_arguments(args, df, load_log)
        rc = readcorr.applies(df)
    except (LogError, OutputError, predictive.CheckError, readcorr.ReadCorrError) as exc:
        print(f"antiamp-estimate: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        print("\nantiamp-estimate: interrupted; nothing was written", file=sys.stderr)
        raise SystemExit(130) from None
    print(format_report(ds, args.log))
    from .oversight_metrics import field_metrics, format_field_metrics, plot_field_metrics

    field = field_metrics(df, args.confidence, args.round)
    print(format_field_metrics(field, args.confidence))
    if rc:  # several judgments of one room: how much judges share their reading
        r = readcorr.estimate(df, confidence=float(ds.attrs["confidence"]), seed=args.seed)
        readcorr.store(ds, r)
        print(readcorr.format_result(r, float(ds.attrs["confidence"])))
    try:
        _write_outputs(ds, out, args, df)
        print(f"wrote {plot_field_metrics(df, field, out / 'field_metrics.png')}")
        if predictive.wanted(args):
            predictive.run(args, df, new, float(ds.attrs["confidence"]), out)
    except (LogError, OutputError, predictive.CheckError) as exc:
        print(f"antiamp-estimate: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        print("\nantiamp-estimate: interrupted; the estimates store is written beside and "
              "renamed, so no partial store is left", file=sys.stderr)
        raise SystemExit(130) from None
    except OSError as exc:
        from .output import describe_os_error

        print(f"antiamp-estimate: error: {describe_os_error(exc)}; the estimates store is "
              "written beside and renamed, so no partial store is left", file=sys.stderr)
        raise SystemExit(1) from None


def structural_check(df: pd.DataFrame, ds: xr.Dataset, n: int, seed: int):
    """The structural judge (:mod:`antiamp.structural`) fitted to the log and run on
    the engine: adds its parameters and the predicted metrics (``predicted_<metric>``
    with ``_lo``, ``_hi``, ``_se`` and ``ppc_p_<metric>``, over ``protocol``) to
    ``ds``; returns the predicted-against-observed table."""
    from . import structural as st

    conf = float(ds.attrs["confidence"])
    if "round" in df.columns:
        df = select_round(df, ds.attrs["round"] if ds.attrs["round"] == "final"
                          else int(ds.attrs["round"]))
    deb = df[df["protocol"] == "debate"]
    if "role" in deb.columns and deb["role"].nunique() > 1:
        raise LogError("--simulate: the debate rows mix open and assigned roles; the "
                       "structural judge's lean is read differently in each (estimate them "
                       "as two logs)")
    try:
        f = st.fit(df)
    except st.FitError as exc:
        raise LogError(f"--simulate: {exc}") from None
    pc = st.predictive_check(f, df, ds, conf, n=n, seed=seed)
    tab = f.table(conf)
    ds.coords["param"] = ("param", list(tab.index), {"long_name": "structural parameter"})
    for col, ln in (("value", "structural judge, maximum likelihood"),
                    ("se", "judge-clustered standard error (0: fixed, not identified)"),
                    ("lo", f"{conf:.0%} t interval, lower"),
                    ("hi", f"{conf:.0%} t interval, upper")):
        ds[f"structural_{col}"] = ("param", tab[col].to_numpy(float),
                                   {"long_name": ln, "units": "log-odds"})
    # joint sampling covariance on the natural scale (sigma by the delta method; fixed
    # parameters 0): what antiamp-design draws the robust designs from
    jac = np.array([f.value("sigma") if n == "log_sigma" else 1.0 for n in f.names])
    cov = np.zeros((len(tab), len(tab)))
    k = len(f.names)
    cov[:k, :k] = f.cov * np.outer(jac, jac)
    ds.coords["param_2"] = ("param_2", list(tab.index), {"long_name": "structural parameter"})
    ds["structural_cov"] = (("param", "param_2"), cov,
                            {"long_name": "judge-clustered sampling covariance (natural "
                                          "scale; 0 for fixed parameters)"})
    ds["structural_doc"] = ("param", np.array([st.PARAM_DOC.get(k, k) for k in tab.index],
                                              dtype=str), {"long_name": "meaning"})
    for m in dict.fromkeys(pc["metric"]):
        for col, suf, ln in (("predicted", "", "predicted by the fitted structural judge "
                              "(messages model on the engine)"),
                             ("predicted_se", "_se", "Monte Carlo standard error of the "
                              "prediction"),
                             ("predicted_lo", "_lo", f"{conf:.0%} interval over the fit's "
                              "sampling distribution, lower"),
                             ("predicted_hi", "_hi", f"{conf:.0%} interval over the fit's "
                              "sampling distribution, upper"),
                             ("p_value", None, "two-sided p-value of observed = predicted")):
            v = np.full(len(PROTOCOLS), np.nan)
            for i, prot in enumerate(PROTOCOLS):
                r = pc[(pc["protocol"] == prot) & (pc["metric"] == m)]
                if len(r):
                    v[i] = float(r[col].iloc[0])
            name = f"predicted_{m}{suf}" if suf is not None else f"ppc_p_{m}"
            ds[name] = ("protocol", v, {"long_name": f"{m}: {ln}", "units": "1"})
    ds.attrs.update({"structural_notes": "; ".join(f.notes),
                     "structural_loglike": f.loglike, "structural_converged": int(f.converged),
                     "structural_judges": f.n_judges, "structural_rows": f.n_rows,
                     "structural_n_sim": int(n)})
    return f, pc


def format_check(f, pc: pd.DataFrame, conf: float) -> str:
    """The structural fit and its predictive check, as printed."""
    tab = f.table(conf)
    lines = ["", "structural judge (reads the argument: z = logit p_y = mu + kappa_v x + "
             "quality gap; messages model, decision=favoured), maximum likelihood, "
             f"judge-clustered SEs, {f.n_rows:,} rows, {f.n_judges} judges:"]
    for k, r in tab.iterrows():
        fixed = " (fixed)" if r["se"] == 0 else ""
        lines.append(f"  {k:<10} {r['value']:8.4f} ({r['se']:.4f}) [{r['lo']:.4f}, "
                     f"{r['hi']:.4f}]{fixed}")
    lines.append("  notes: " + "; ".join(f.notes))
    lines += ["", f"predicted (the fitted judge on the engine, {conf:.0%} interval over the "
              "fit's uncertainty) against observed:"]
    for _, r in pc.iterrows():
        lines.append(f"  {r['protocol']:<8} {r['metric']:<9} observed {r['observed']:.4f} "
                     f"[{r['observed_lo']:.4f}, {r['observed_hi']:.4f}]  predicted "
                     f"{r['predicted']:.4f} [{r['predicted_lo']:.4f}, {r['predicted_hi']:.4f}]"
                     f"  z {r['z']:+.2f}  p {r['p_value']:.3f}"
                     + ("  POOR FIT" if r["poor"] else ""))
    poor = pc[pc["poor"]]
    if len(poor):
        lines.append(f"  the fit is poor for {len(poor)} of {len(pc)} metrics (p < "
                     f"{1 - conf:.2g}): " + ", ".join(f"{a} {b}" for a, b in
                                                      zip(poor["protocol"], poor["metric"])))
    else:
        lines.append(f"  every observed metric is within what the fit predicts (all p >= "
                     f"{1 - conf:.2g}; smallest {pc['p_value'].min():.3f})")
    return "\n".join(lines)


#: What antiamp-estimate writes into its --out directory.
_OUT_FILES = ("estimates.zarr", "predicted_vs_observed.csv", "estimates.png", "estimates.pdf",
              "calibration.png", "calibration.pdf")


def _write_outputs(ds: xr.Dataset, out: Path, args, df: pd.DataFrame | None = None) -> None:
    pred = None
    if args.simulate:
        f, pc = structural_check(df, ds, args.n_sim, args.seed)
        print(format_check(f, pc, float(ds.attrs["confidence"])))
        seed0 = simulate_fitted(ds, args.n_sim, args.seed)
        pred = pc.merge(seed0.drop(columns=["observed", "lo", "hi"]), how="outer",
                        on=["protocol", "metric"])
        print("\nthe seed-000 judges fitted by the section-6 estimators, simulated:")
        print(seed0.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    from .output import write_zarr_atomic
    from .outputs_policy import OutputError, open_out_dir, record, write_file

    try:
        open_out_dir(out, _OUT_FILES, force=getattr(args, "force", False))
    except OutputError as exc:  # changed since the check before the estimation
        raise LogError(str(exc)) from None
    record(out / "estimates.zarr")
    write_zarr_atomic(ds, out / "estimates.zarr")
    if pred is not None:
        write_file(out / "predicted_vs_observed.csv", pred.to_csv(index=False))
    plot_estimates(ds, out / "estimates.png", pred)
    if "reliability_n" in ds:
        plot_reliability(ds, out / "calibration.png")
        print(f"wrote {out / 'calibration.png'} (and .pdf)")
    print(f"\nwrote {out / 'estimates.zarr'}, {out / 'estimates.png'}"
          + (f", {out / 'predicted_vs_observed.csv'}" if pred is not None else ""))


if __name__ == "__main__":
    main()
