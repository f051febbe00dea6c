"""The field's other metrics beside Amp, the formulas: the judge's ROC curve and AUC
against ground truth, and the Agent Score Difference (the tables of a log:
:mod:`antiamp.estimation.field_metrics`).

- **ROC/AUC** (where the judge gives probabilities, column ``p_y``): how well the
  judge's probability for the argued answer separates right from wrong arguments,
  AUC = Pr(p_y of a right argument > p_y of a wrong one) + Pr(tie) / 2 (the
  Mann-Whitney statistic, scipy.stats.mannwhitneyu), with DeLong's standard error
  (DeLong, DeLong and Clarke-Pearson 1988, in the midrank form of Sun and Xu 2014:
  neither scipy nor statsmodels provides it, so it is written here).  Rows whose
  protagonist cannot be right (assigned debates, read role-symmetrically) give no
  ROC.
- **Agent Score Difference** (ASD; Pallavi Sudhir et al. 2025, "A Benchmark for
  Scalable Oversight Mechanisms"): how much more an agent earns arguing the true
  answer than a false one.  With the judge's verdict as the reward (``win`` if the
  judge sides with the agent, ``lose`` otherwise) and open roles it is the closed
  form ASD = (win - lose) (fwc - Amp): the protagonist's reward when right minus when
  wrong.  In an assigned debate both debaters argue, one right and one wrong, and the
  judge sides with exactly one: ASD = (win - lose) (1 - 2 Amp).  A log with both
  pools every agent's observations (each row: the protagonist; an assigned debate's
  row also the right debater).  ``asd_prob`` and ``asd_log`` use the judge's
  probability for the agent's answer as the reward (linear and log score).  Standard
  errors by the delta method with rows as clusters (the two debaters of one row are
  not independent), N / (N - 1) small-sample factor; with ``cluster="judge"`` the
  judges are the clusters (G / (G - 1)), for the AUC too.
"""

from __future__ import annotations

import math
import numpy as np

from .lazy import lazy

pd = lazy("pandas")
stats = lazy("scipy.stats")

PROTOCOLS = ("consult", "debate")
METRICS = ("auc", "asd", "asd_prob", "asd_log")
LABELS = {"auc": "judge AUC (p_y vs truth)", "asd": "ASD (verdict reward)",
          "asd_prob": "ASD (judge probability)", "asd_log": "ASD (log score)"}


def metric_range(metric: str, payoffs=(1.0, 0.0)) -> tuple:
    """The values a metric can take: AUC in [0, 1]; ASD a difference of two means of a
    reward, so within +-(the reward's range): |win - lose| for the verdict, 1 for the
    judge's probability, the log of the clipped probability's range for the log score.
    A normal interval reaching past them is clipped to them (:func:`field_metrics`)."""
    if metric == "auc":
        return 0.0, 1.0
    span = {"asd": abs(payoffs[0] - payoffs[1]), "asd_prob": 1.0,
            "asd_log": math.log((1 - 1e-6) / 1e-6)}[metric]
    return -span, span


# ------------------------------------------------------------------ ROC and AUC
def roc_curve(score, label):
    """(false positive rates, true positive rates) at every distinct threshold of
    ``score``, from (0, 0) to (1, 1); ``label`` 1 for a positive (a right argument).
    Written with numpy: scikit-learn is no dependency of antiamp (its tests use it
    as the oracle)."""
    s, y = np.asarray(score, float), np.asarray(label, bool)
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    last = np.r_[np.flatnonzero(np.diff(s)), len(s) - 1]  # the last row of each score
    tp, fp = np.cumsum(y)[last], np.cumsum(~y)[last]
    return np.r_[0.0, fp / max(1, (~y).sum())], np.r_[0.0, tp / max(1, y.sum())]


def roc_auc(score, label, clusters=None) -> tuple[float, float]:
    """(AUC, DeLong standard error); NaN where either class is empty.

    With ``clusters`` (each row's judge) the standard error is judge-clustered: DeLong's
    structural components summed per cluster (Obuchowski 1997), each row's influence
    (V10_i - AUC) / n1 or (V01_j - AUC) / n0, V = G / (G - 1) sum_g (cluster g's sum)^2;
    NaN with fewer than two clusters."""
    s, y = np.asarray(score, float), np.asarray(label, bool)
    x1, x0 = s[y], s[~y]
    n1, n0 = len(x1), len(x0)
    if n1 == 0 or n0 == 0:
        return math.nan, math.nan
    u = stats.mannwhitneyu(x1, x0, alternative="two-sided", method="asymptotic").statistic
    auc = float(u) / (n1 * n0)
    if n1 < 2 or n0 < 2:
        return auc, math.nan
    r = stats.rankdata(np.r_[x1, x0])  # midranks: a tie counts one half
    v10 = (r[:n1] - stats.rankdata(x1)) / n0        # Pr(x0 < x1_i) + ties / 2
    v01 = 1.0 - (r[n1:] - stats.rankdata(x0)) / n1  # Pr(x1 > x0_j) + ties / 2
    if clusters is not None:
        g = pd.factorize(np.asarray(clusters))[0]
        g = np.r_[g[y], g[~y]]  # the order of v10, v01
        U = np.bincount(g, weights=np.r_[(v10 - auc) / n1, (v01 - auc) / n0])
        G = len(U)
        return auc, (math.sqrt(G / (G - 1) * float((U ** 2).sum())) if G > 1 else math.nan)
    var = v10.var(ddof=1) / n1 + v01.var(ddof=1) / n0
    return auc, math.sqrt(max(var, 0.0))


# ------------------------------------------------------------------ ASD
def diff_with_se(rows, truthful, x):
    """mean(x | truthful) - mean(x | not), and its delta-method standard error with the
    rows as clusters (``rows``: each observation's cluster: its row, or its judge)."""
    t, f = truthful, ~truthful
    nt, nf = int(t.sum()), int(f.sum())
    if nt == 0 or nf == 0:
        return math.nan, math.nan
    mt, mf = x[t].mean(), x[f].mean()
    z = np.where(t, (x - mt) / nt, -(x - mf) / nf)
    zc = np.bincount(rows, weights=z)
    N = int(np.count_nonzero(np.bincount(rows)))  # rows present (O(n), no sort)
    se = math.sqrt(N / (N - 1) * float((zc ** 2).sum())) if N > 1 else math.nan
    return float(mt - mf), se


def asd_from_rates(fwc, amp, fwc_se=None, amp_se=None, cov=0.0, payoffs=(1.0, 0.0)):
    """ASD of open roles from a protocol's follow-when-correct and Amp (arrays alike):
    ``(value, se)`` with value = (win - lose) (fwc - Amp), the closed form of the
    protagonist's expected reward arguing the truth minus arguing a falsehood when the
    judge's verdict is the reward, and se = |win - lose| sqrt(se_fwc^2 + se_Amp^2 -
    2 cov) (the delta method; ``cov`` the covariance of the two estimates, 0 where they
    condition on the disjoint events a = omega and a != omega of independent
    instances).  ``se`` is None where either standard error is."""
    w, l_ = payoffs
    fwc, amp = np.asarray(fwc, dtype=float), np.asarray(amp, dtype=float)
    value = (w - l_) * (fwc - amp)
    if fwc_se is None or amp_se is None:
        return value, None
    fs, as_ = np.asarray(fwc_se, dtype=float), np.asarray(amp_se, dtype=float)
    var = fs * fs + as_ * as_ - 2.0 * np.asarray(cov, dtype=float)
    return value, abs(w - l_) * np.sqrt(np.maximum(var, 0.0))
