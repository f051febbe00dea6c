"""The field's other metrics beside Amp, from an oversight log: the judge's ROC curve
and AUC against ground truth, and the Agent Score Difference.

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
from pathlib import Path

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
def _agents(d: pd.DataFrame, K: int, cluster: str = "rows"):
    """Per agent observation: its row (with ``cluster="judge"``: its row's judge, as
    codes 0..G-1), whether it argued the truth, whether the judge sided with it, and
    the judge's probability for its answer (NaN if not logged)."""
    known = d["omega"].notna().to_numpy()  # columns, not a copy of the frame
    a, y, om = (d[c].to_numpy(float)[known] for c in ("a", "y", "omega"))
    p = d["p_y"].to_numpy(float)[known] if "p_y" in d.columns else np.full(len(a), np.nan)
    row = (pd.factorize(d["judge_id"].to_numpy()[known])[0] if cluster == "judge"
           else np.arange(len(a)))
    assigned = np.zeros(len(a), bool)
    if "role" in d.columns:
        assigned = ((d["role"].astype(object) == "assigned")
                    & (d["protocol"].astype(object) == "debate")).to_numpy()[known]
    # the protagonist of every row; the right debater of an assigned debate (two answers)
    extra = assigned & (K == 2)
    rows = np.r_[row, row[extra]]
    truthful = np.r_[a == om, np.ones(extra.sum(), bool)]
    win = np.r_[y == a, (y != a)[extra]]
    prob = np.r_[p, 1 - p[extra]]
    return rows, truthful, win.astype(float), prob


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


def asd(d: pd.DataFrame, K: int = 2, payoffs=(1.0, 0.0), cluster: str = "rows") -> dict:
    """ASD of one protocol's rows (a validated log): ``{asd, asd_prob, asd_log}`` each
    ``(value, se, n_truthful, n_deceptive)`` (``asd_prob`` and ``asd_log`` only where the
    log has p_y); ``payoffs`` (win, lose) scale ``asd``; ``cluster="judge"``: standard
    errors with the judges as clusters (a judge's rows together), not the rows."""
    rows, truthful, win, prob = _agents(d, K, cluster)
    w, l_ = payoffs
    out = {}
    v, se = diff_with_se(rows, truthful, win)
    out["asd"] = ((w - l_) * v, abs(w - l_) * se)
    ok = ~np.isnan(prob)
    if ok.any():
        out["asd_prob"] = diff_with_se(rows[ok], truthful[ok], prob[ok])
        out["asd_log"] = diff_with_se(rows[ok], truthful[ok],
                                  np.log(np.clip(prob[ok], 1e-6, 1 - 1e-6)))
    n = (int(truthful.sum()), int((~truthful).sum()))
    return {k: (*v_, *n) for k, v_ in out.items()}


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


def asd_assigned(amp, amp_se=None, payoffs=(1.0, 0.0)):
    """ASD of an assigned debate (one debater right, one wrong, the judge sides with
    exactly one): ``(value, se)`` with value = (win - lose) (1 - 2 Amp)."""
    w, l_ = payoffs
    amp = np.asarray(amp, dtype=float)
    value = (w - l_) * (1.0 - 2.0 * amp)
    return value, (None if amp_se is None else 2.0 * abs(w - l_) * np.asarray(amp_se, float))


# ------------------------------------------------------------------ tables
def field_metrics(df: pd.DataFrame, confidence: float = 0.95, which_round="final",
                  payoffs=(1.0, 0.0), cluster: str = "rows") -> pd.DataFrame:
    """Per protocol of a validated log (pooled over strata): AUC and ASD with standard
    errors and normal intervals (``cluster="judge"``: t intervals on judges - 1 df),
    clipped to the metric's range (:func:`metric_range`);
    columns protocol, metric, value, se, lo, hi, n_pos, n_neg.  A DataFrame not read by :func:`antiamp.logs.load_log` is checked first
    (:func:`antiamp.logs.validate_log`).  ``cluster="judge"``: judge-clustered
    standard errors (the log's judge_id, at least two judges; the table's
    ``attrs["cluster"]`` says so)."""
    from .logs import LogError, select_round, validate_log

    if cluster not in ("rows", "judge"):
        raise LogError(f"cluster must be one of rows, judge, got {cluster!r}")
    if "K" not in df.attrs:  # the user's own frame: letters, roles and columns checked
        df = validate_log(df)
    if cluster == "judge":
        from .estimators import check_judges

        check_judges(df)
    if "round" in df.columns:
        df = select_round(df, which_round)
    K = df.attrs.get("K", 2)
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    out = []
    for prot in PROTOCOLS:
        d = df[df["protocol"].astype(object) == prot]
        if not len(d):
            continue
        vals = {}
        if "p_y" in d.columns:
            m = d["p_y"].notna() & d["omega"].notna()
            right = (d["a"][m] == d["omega"][m]).to_numpy()
            auc, se = roc_auc(d["p_y"][m].to_numpy(float), right,
                              d["judge_id"][m].to_numpy() if cluster == "judge" else None)
            vals["auc"] = (auc, se, int(right.sum()), int((~right).sum()))
        vals.update(asd(d, K, payoffs, cluster))
        crit = z
        if cluster == "judge":  # t on (judges - 1) df, as the clustered t intervals take
            G = int(d["judge_id"][d["omega"].notna()].nunique())
            crit = float(stats.t.ppf(0.5 + confidence / 2, G - 1)) if G > 1 else math.nan
        for k in METRICS:
            if k in vals:
                v, se, npos, nneg = vals[k]
                lo, hi = metric_range(k, payoffs)
                # the normal (or t) interval, clipped to the metric's range: a 60-row
                # log's ASD 0.67 +- 0.34 reached 1.006
                out.append({"protocol": prot, "metric": k, "value": v, "se": se,
                            "lo": max(v - crit * se, lo), "hi": min(v + crit * se, hi),
                            "n_pos": npos, "n_neg": nneg})
    tab = pd.DataFrame(out)
    if cluster == "judge":
        tab.attrs["cluster"] = "judge"
    return tab


def format_field_metrics(tab: pd.DataFrame, confidence: float = 0.95) -> str:
    if tab.empty:
        return ""
    se = ("judge-clustered standard errors, {:.0%} t intervals (judges - 1 df)"
          if tab.attrs.get("cluster") == "judge" else "standard errors, {:.0%} normal intervals")
    se += " clipped to each metric's range"
    lines = [f"the field's metrics (pooled over strata; {se.format(confidence)}):"]
    for prot, g in tab.groupby("protocol", sort=False):
        parts = []
        for _, r in g.iterrows():
            if np.isnan(r.value):
                why = ("no right or no wrong arguments with p_y" if r.metric == "auc"
                       else "no truthful or no deceptive agents")
                parts.append(f"{LABELS[r.metric]} n/a ({why})")
            else:
                parts.append(f"{LABELS[r.metric]} {r.value:.4f} ({r.se:.4f}) "
                             f"[{r.lo:.4f}, {r.hi:.4f}]"
                             + (" (every agent's reward agrees, so the normal interval has "
                                "no width; more rows are needed for one)"
                                if r.se == 0 and r.metric != "auc" else ""))
        lines.append(f"  {prot:<8} " + "\n           ".join(parts))
    return "\n".join(lines)


def plot_field_metrics(df: pd.DataFrame, tab: pd.DataFrame, path) -> Path:
    """ROC curves of the judge per protocol and ASD with its interval per protocol."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .logs import select_round

    if "round" in df.columns:
        df = select_round(df)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 4))
    ax1.plot([0, 1], [0, 1], color="0.7", lw=1, ls=":")
    drew = False
    for prot in PROTOCOLS:
        d = df[(df["protocol"].astype(object) == prot)]
        if "p_y" not in d.columns:
            continue
        d = d[d["p_y"].notna() & d["omega"].notna()]
        right = (d["a"] == d["omega"]).to_numpy()
        if right.all() or not right.any():
            continue
        fpr, tpr = roc_curve(d["p_y"].to_numpy(float), right)
        r = tab[(tab.protocol == prot) & (tab.metric == "auc")]
        ax1.plot(fpr, tpr, marker=".", label=f"{prot} (AUC {float(r.value.iloc[0]):.3f})")
        drew = True
    ax1.set(xlabel="false positive rate (wrong arguments endorsed)",
            ylabel="true positive rate (right arguments endorsed)", title="judge ROC",
            xlim=(0, 1), ylim=(0, 1.01))
    if drew:
        ax1.legend(loc="lower right")
    else:
        ax1.text(0.5, 0.5, "no judge probabilities (p_y)", ha="center", va="center")
    t = tab[tab.metric == "asd"]
    ax2.axhline(0, color="0.6", lw=1)
    ax2.errorbar(np.arange(len(t)), t.value, yerr=[t.value - t.lo, t.hi - t.value],
                 fmt="o", capsize=4)
    ax2.set_xticks(np.arange(len(t)), t.protocol)
    ax2.set(ylabel="ASD = win rate truthful - deceptive", title="Agent Score Difference",
            xlim=(-0.6, len(t) - 0.4))
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
