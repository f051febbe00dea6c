"""Statistics of one group of log rows (one protocol and stratum): row codes and the
stratified bootstrap over their counts, the mislabel-corrected Amp, graded evidence,
the judge's probabilities and their reliability table.

Every statistic of the bootstrap reads only how many rows fall in each of 16 codes,
so a resample is a multinomial draw of code counts (the same distribution as
resampling rows, which scipy.stats.bootstrap does) and memory stays bounded whatever
the log's size.  Read by :mod:`antiamp.estimation.estimators`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..lazy import lazy

pd = lazy("pandas")
stats = lazy("scipy.stats")


def row_codes(d: pd.DataFrame) -> np.ndarray:
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


def fold_codes(c):
    """Counts of the 8 codes known/wrong/endorse, summed over y = omega."""
    c = np.asarray(c)
    return c[..., :8] + c[..., 8:]


def amp_of_codes(c):
    """Amp = Pr(y = a | a != omega) from code counts [..., 16] (:func:`row_codes`;
    NaN where no row's protagonist is wrong)."""
    f = fold_codes(c)
    with np.errstate(invalid="ignore", divide="ignore"):
        return f[..., 7] / (f[..., 6] + f[..., 7])


def fwc_of_codes(c):
    """Follow-when-correct Pr(y = a | a = omega) from code counts [..., 16]
    (:func:`row_codes`; NaN where no row's protagonist is right)."""
    f = fold_codes(c)
    with np.errstate(invalid="ignore", divide="ignore"):
        return f[..., 5] / (f[..., 4] + f[..., 5])


def acc_of_codes(c):
    """The judge's accuracy Pr(y = omega) over the rows with a known truth, from code
    counts [..., 16] (:func:`row_codes`; NaN with none)."""
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
    c = fold_codes(np.asarray(c, float))
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


def resampled_counts(counts: list, n_resamples: int, rng) -> np.ndarray:
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


def judge_code_table(codes, judges, n_judges: int) -> np.ndarray:
    """How many rows of each code each judge has [n_judges, 16] (``judges``: each row's
    judge index 0..n_judges-1)."""
    codes = np.asarray(codes, np.int64)
    judges = np.asarray(judges, np.int64)
    return np.bincount(judges * N_CODES + codes,
                       minlength=n_judges * N_CODES).reshape(n_judges, N_CODES)


#: Judge multiplicities held at once by :func:`resampled_judge_counts` (resamples x
#: judges), so that memory stays bounded whatever the numbers of resamples and judges.
_JUDGE_CHUNK = 1 << 22


def resampled_judge_counts(tables: list, n_resamples: int, rng) -> list:
    """Code counts of ``n_resamples`` judge-cluster bootstrap resamples, one [B, 16]
    array per table in ``tables`` (each [J, 16], :func:`judge_code_table`, the same J
    judges in the same order).

    A resample draws J judges with replacement, each drawn judge bringing all of its
    rows in every table: the multiplicities w [B, J] are one multinomial draw of J
    over the judges, and a table's counts are w @ table, so every table (a protocol,
    a stratum) sees the same judges and a difference between them keeps the pairing
    of the judges who judged both.  By hand because scipy.stats.bootstrap resamples
    rows (its samples are independent; it has no clusters that span samples), and
    because counts keep the bootstrap O(codes x judges) per resample, not O(rows)."""
    tables = [np.asarray(t, np.int64) for t in tables]
    J = tables[0].shape[0]
    out = [np.zeros((n_resamples, N_CODES), np.int64) for _ in tables]
    step = max(1, _JUDGE_CHUNK // max(J, 1))
    p = np.full(J, 1.0 / J)
    for b0 in range(0, n_resamples, step):
        w = rng.multinomial(J, p, size=min(step, n_resamples - b0))
        for o, t in zip(out, tables):
            o[b0:b0 + len(w)] = w @ t
    return out


@dataclass
class JudgeClusters:
    """The judge of each row, for the judge-cluster bootstrap: ``index`` one array of
    judge indices 0..n-1 per sample (stratum), parallel to its row codes; ``n`` the
    number of judges in the log (every resample draws n of them)."""

    index: list
    n: int

    def table(self, samples) -> np.ndarray:
        """The judges' code counts [n, 16] of the samples' rows, summed over them."""
        t = np.zeros((self.n, N_CODES), np.int64)
        for s, j in zip(samples, self.index):
            t += judge_code_table(s, j, self.n)
        return t


@dataclass
class Interval:
    """A point estimate, its interval, and how the interval was had: ``undefined`` is
    the share of bootstrap resamples in which the statistic was not defined (no row of
    the event it conditions on); ``method`` ``bootstrap``, ``wilson`` (every row agreed,
    or too few rows to resample) or ``""`` (no interval: ``why`` says why)."""

    point: float
    lo: float
    hi: float
    undefined: float = 0.0
    method: str = "bootstrap"
    why: str = ""

    def __iter__(self):  # point, lo, hi, as the three-tuple it was
        return iter((self.point, self.lo, self.hi))


# Numerator and denominator code counts of the rates (:data:`RATIOS`): with them
# a rate whose rows all agree (0 of n, n of n) gets a Wilson interval.
def _amp_nd(c):
    f = fold_codes(c)
    return f[..., 7], f[..., 6] + f[..., 7]


def _fwc_nd(c):
    f = fold_codes(c)
    return f[..., 5], f[..., 4] + f[..., 5]


def _acc_nd(c):
    c = np.asarray(c)
    return c[..., 12:].sum(axis=-1), c[..., 4:8].sum(axis=-1) + c[..., 12:].sum(axis=-1)


RATIOS = {"amp": _amp_nd, "fwc": _fwc_nd, "acc": _acc_nd}
#: What a rate's denominator counts (a rate with none is not defined).
EVENTS = {"amp": "row with a wrong protagonist", "fwc": "row with a right protagonist",
          "acc": "row with a known truth"}


def wilson(k: float, n: float, confidence: float) -> tuple[float, float]:
    """Wilson score interval of k successes in n (statsmodels)."""
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    # (at k = n the upper bound comes out as 1 - 1e-16 in floating point: an interval
    # that missed its own estimate; the Wilson interval always holds k / n)
    if not n > 0:
        return float(lo), float(hi)
    return min(float(lo), k / n), max(float(hi), k / n)


def bootstrap(samples, stat, confidence, n_resamples, rng, ratio=None,
              event: str = "", judges: JudgeClusters | None = None) -> Interval:
    """Point estimate and stratified percentile interval of ``stat`` (a statistic of
    code counts) over ``samples`` (one array of row codes per stratum).

    A resample in which the statistic is not defined (no row of the ``event`` it
    conditions on, which a small log draws now and then) is left out: the interval
    is the percentile interval of the resamples that have the event, and
    ``undefined`` says what share did not.  With ``ratio`` (numerator and denominator
    counts of a rate), a rate whose rows all agree (0 of n or n of n: every resample
    agrees too, an interval of no width) or a log too small to resample gets the
    Wilson interval of its counts instead.

    With ``judges`` (:class:`JudgeClusters`, parallel to ``samples``) the resamples
    draw judges, not rows (:func:`resampled_judge_counts`): the strata are not held
    fixed (a judge brings its rows in every one), and rows of fewer than two judges
    get no interval."""
    counts = [code_counts(s) for s in samples if len(s)]
    total = sum(int(c.sum()) for c in counts)
    if not counts or total < 2:
        iv = Interval(np.nan, np.nan, np.nan, method="", why="fewer than two rows")
    else:
        point = float(stat(np.sum(counts, axis=0)))
        if judges is not None:
            table = judges.table(samples)
            dist = stat(resampled_judge_counts([table], n_resamples, rng)[0])
        else:
            if any(c.sum() < 2 for c in counts):  # a stratum of one row cannot be resampled
                counts = [np.sum(counts, axis=0)]
            # (drawn whatever the counts: a seed gives the same resamples to every
            # statistic of the log as it always has)
            dist = stat(resampled_counts(counts, n_resamples, rng))
        lo, hi = percentile_interval(dist, confidence)
        bad = float(np.mean(~np.isfinite(dist)))
        why = (f"no {event or 'row the statistic needs'} in {bad:.1%} of resamples; the "
               "interval is over the others" if bad > 0 and np.isfinite(lo) else
               "not defined in any resample" if bad > 0 else "")
        iv = Interval(point, lo, hi, undefined=bad, why=why)
        if judges is not None and int((table.sum(axis=1) > 0).sum()) < 2:
            iv = Interval(point, np.nan, np.nan, method="",
                          why="rows of one judge: no judge-cluster bootstrap interval")
    if ratio is not None and counts:
        k, n = (float(v) for v in ratio(np.sum(counts, axis=0)))
        if n == 0:
            return Interval(np.nan, np.nan, np.nan, method="", why=f"no {event}")
        if total < 2 or k in (0.0, n):
            lo, hi = wilson(k, n, confidence)
            why = ("too few rows to resample: Wilson interval" if total < 2 else
                   f"every row agrees ({int(k)} of {int(n)}), so every resample does: "
                   "Wilson interval")
            return Interval(k / n, lo, hi, method="wilson", why=why)
    return iv


def boot_interval(samples, stat, confidence, n_resamples, rng,
                  judges: JudgeClusters | None = None):
    """(point, lo, hi) of :func:`bootstrap`."""
    return tuple(bootstrap(samples, stat, confidence, n_resamples, rng, judges=judges))


def percentile_interval(dist: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile interval of a bootstrap distribution, over the resamples in which
    the statistic is defined (NaN if it is in none)."""
    dist = np.asarray(dist, float)
    dist = dist[np.isfinite(dist)]
    if dist.size == 0:
        return np.nan, np.nan
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


def masked_rate(num_mask, den_mask):
    """Pr(num | den) from two boolean row masks (NaN where no row is in den)."""
    den = int(den_mask.sum())
    return float((num_mask & den_mask).sum() / den) if den else np.nan


#: Metrics of the judge's stated probability p_y for the protagonist's answer.
PROB_METRICS = {
    "amp_prob": "Amp from probabilities: mean p_y when a is wrong",
    "fwc_prob": "follow-when-correct from probabilities: mean p_y when a is right",
    "brier": "Brier score of p_y against a = omega",
    "log_loss": "log loss of the probability on the truth (p_y clipped to [1e-6, 1 - 1e-6])",
    "tie_prob": "share of exact 0.5 judgements",
}
N_BINS = 10


def stratified_mean(groups: list, confidence: float):
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


def clustered_variance(values, clusters) -> tuple[float, int]:
    """The CR1 (judge-clustered) variance of the mean of ``values`` and the number G of
    clusters with a row: G / (G - 1) sum_g (sum of the residuals of cluster g)^2 / n^2
    (NaN with fewer than two clusters).  By hand, for the round table's design effect
    (:func:`design_effect_wilson`); :func:`clustered_mean` takes the same from
    statsmodels and the tests hold the two together."""
    x = np.asarray(values, float)
    g = pd.factorize(np.asarray(clusters))[0]
    G = int(g.max()) + 1 if len(g) else 0
    if G < 2:
        return np.nan, G
    U = np.bincount(g, weights=x - x.mean())
    return float(G / (G - 1) * (U ** 2).sum() / len(x) ** 2), G


def clustered_mean(values, clusters, confidence: float, point: float | None = None):
    """Mean of ``values`` and its t interval with the judge-clustered (CR1) standard
    error: V = G / (G - 1) sum_g (sum of the residuals of cluster g)^2 / n^2, G the
    clusters (judges) with a row, t with G - 1 degrees of freedom; NaN bounds with
    fewer than two clusters.

    statsmodels' OLS on a constant with ``cov_type="cluster"`` is exactly this: its
    small-sample factor G / (G - 1) (N - 1) / (N - k) is G / (G - 1) with k = 1
    parameter, and with ``use_t`` its intervals take G - 1 degrees of freedom
    (``df_resid_inference``).  The strata are not held fixed (a judge's rows come and
    go together), as in the judge-cluster bootstrap.  ``point``: the mean as the
    caller summed it (the interval is centred on it; summed by strata it may differ
    from ``values``' own sum in the last bit)."""
    x = np.asarray(values, float)
    if len(x) == 0:
        return np.nan, np.nan, np.nan
    m = float(x.sum() / len(x)) if point is None else float(point)
    g = pd.factorize(np.asarray(clusters))[0]
    if len(x) < 2 or int(g.max()) < 1:
        return m, np.nan, np.nan
    import statsmodels.api as sm

    fit = sm.OLS(x, np.ones(len(x))).fit(cov_type="cluster", cov_kwds={"groups": g},
                                         use_t=True)
    t = float(stats.t.ppf(0.5 + confidence / 2, fit.df_resid_inference))  # G - 1
    se = float(fit.bse[0])
    return m, m - t * se, m + t * se


def clustered_difference(x1, g1, x2, g2, confidence: float):
    """mean(x1) - mean(x2) of two samples that share clusters (a judge's rows in both
    protocols), its t interval with the jointly clustered CR1 standard error: each row's
    influence (x1 - m1) / n1 or -(x2 - m2) / n2 summed per cluster over both samples,
    V = G / (G - 1) sum_g U_g^2, G the clusters with a row in either, t with G - 1 df.

    By hand (bincount): statsmodels' cluster-robust OLS on a constant and a protocol
    dummy gives the same sandwich but scales it by G / (G - 1) (N - 1) / (N - 2), the
    factor for two parameters; here the factor is the means' G / (G - 1), so that a
    difference and its two means carry the same correction."""
    x1, x2 = np.asarray(x1, float), np.asarray(x2, float)
    if not len(x1) or not len(x2):
        return np.nan, np.nan, np.nan
    m1, m2 = float(x1.sum() / len(x1)), float(x2.sum() / len(x2))
    d = m1 - m2
    g = pd.factorize(np.concatenate([np.asarray(g1), np.asarray(g2)]))[0]
    G = int(g.max()) + 1
    if G < 2 or len(x1) + len(x2) < 3:
        return d, np.nan, np.nan
    U = np.bincount(g, weights=np.r_[(x1 - m1) / len(x1), -(x2 - m2) / len(x2)])
    se = math.sqrt(G / (G - 1) * float((U ** 2).sum()))
    t = float(stats.t.ppf(0.5 + confidence / 2, G - 1))
    return d, d - t * se, d + t * se


def wrong_probabilities(ds_: pd.DataFrame):
    """p_y and judge_id of the rows with p_y, a known truth and a wrong protagonist (the
    rows of ``amp_prob``)."""
    m = ds_["p_y"].notna() & ds_["omega"].notna() & (ds_["a"] != ds_["omega"])
    return ds_["p_y"][m].to_numpy(float), ds_["judge_id"][m].to_numpy()


def probability_metrics(ds_: pd.DataFrame, confidence: float, cluster: str = "rows") -> dict:
    """:data:`PROB_METRICS` of one protocol and stratum (rows with p_y and a known
    truth), each ``(value, lo, hi)``: t intervals with the stratified row variance
    (:func:`stratified_mean`), or with ``cluster="judge"`` the judge-clustered one
    (:func:`clustered_mean`, clusters from ``judge_id``)."""
    d = ds_[ds_["p_y"].notna() & ds_["omega"].notna()]
    groups = [g for _, g in d.groupby("stratum", observed=True)]
    right = [(g["a"] == g["omega"]).to_numpy(float) for g in groups]
    p = [g["p_y"].to_numpy(float) for g in groups]
    if cluster == "judge":
        jid = [g["judge_id"].to_numpy() for g in groups]

        def mean(xs, sel=None):
            sel = sel or [np.ones(len(x), bool) for x in xs]
            xs = [x[s] for x, s in zip(xs, sel)]
            n = sum(len(x) for x in xs)
            # (the point summed by strata, as stratified_mean sums it: the same bits)
            point = sum(float(x.sum()) for x in xs) / n if n else None
            return clustered_mean(np.concatenate(xs or [[]]),
                                  np.concatenate([j[s] for j, s in zip(jid, sel)] or [[]]),
                                  confidence, point)
    else:
        def mean(xs, sel=None):
            return stratified_mean(xs if sel is None else [x[s] for x, s in zip(xs, sel)],
                                   confidence)
    out = {}
    out["amp_prob"] = mean(p, [rr == 0 for rr in right])
    out["fwc_prob"] = mean(p, [rr == 1 for rr in right])
    out["brier"] = mean([(pp - rr) ** 2 for pp, rr in zip(p, right)])
    q = [np.clip(np.where(rr == 1, pp, 1 - pp), 1e-6, 1 - 1e-6) for pp, rr in zip(p, right)]
    out["log_loss"] = mean([-np.log(qq) for qq in q])
    out["tie_prob"] = mean([(pp == 0.5).astype(float) for pp in p])
    return out


def design_effect_wilson(success, clusters, confidence: float) -> tuple[float, float]:
    """A Wilson interval of the share of ``success`` (0/1 per row) for rows clustered
    by judge: the design-effect adjusted interval, the Wilson interval of k / n_eff
    successes in n_eff = n / deff rows, deff = the CR1 clustered variance of the share
    (:func:`clustered_variance`) over the binomial p (1 - p) / n, with the critical
    value of t with G - 1 degrees of freedom (G judges with a row) in place of z.

    Chosen over the judge-cluster bootstrap for the round table because its cells are
    often small: the Wilson form keeps the interval inside [0, 1] and defined where
    every row agrees (deff is then taken as 1: the rows say nothing of how the
    judges differ), and it needs no random draws.  NaN with fewer than two judges."""
    x = np.asarray(success, float)
    n = len(x)
    var, G = clustered_variance(x, clusters)
    if n == 0 or G < 2:
        return np.nan, np.nan
    p = float(x.mean())
    binom = p * (1 - p) / n
    deff = var / binom if binom > 0 else 1.0
    if not deff > 0:  # (every judge's share is the overall share: no width, as t's)
        return p, p
    n_eff = n / deff
    crit = float(stats.t.ppf(0.5 + confidence / 2, G - 1))
    # the confidence level whose normal quantile is that t quantile
    conf_eff = float(1 - 2 * stats.norm.sf(crit))
    return wilson(p * n_eff, n_eff, conf_eff)


def reliability(d: pd.DataFrame):
    """Per bin of p_y (N_BINS equal bins on [0, 1]): rows, mean p_y, share with a right
    protagonist.

    A debate with assigned roles has the wrong debater as its protagonist by
    construction (the log is read role-symmetrically), so its p_y says nothing of
    calibration against "the protagonist is right" (always no).  It is read from both
    sides instead: the judge's probability for the right debater, 1 - p_y, with the
    outcome right, and p_y for the wrong one, with the outcome wrong (mirror bins, so a
    debate counts at most once in a bin, except at exactly 0.5)."""
    d = d[d["p_y"].notna() & d["omega"].notna()]
    p = d["p_y"].to_numpy(float)
    right = (d["a"] == d["omega"]).to_numpy(float)
    if "role" in d.columns:
        both = ((d["role"] == "assigned") & (d["protocol"] == "debate")).to_numpy(bool)
        if both.any():
            p = np.concatenate([p, 1 - p[both]])
            right = np.concatenate([right, 1 - right[both]])
    # (rounded first: 1 - 0.8 is 0.19999999999999996, and a stated 0.2 belongs in the
    # bin from 0.2 whichever side it was read from)
    b = np.minimum(np.floor(np.round(p * N_BINS, 9)).astype(int), N_BINS - 1)
    n = np.bincount(b, minlength=N_BINS).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mp = np.bincount(b, weights=p, minlength=N_BINS) / n
        fr = np.bincount(b, weights=right, minlength=N_BINS) / n
    return n, mp, fr

