"""Cross-validation with power: one statistic pooled over the folds.

A fold of a few judges holds a few dozen rows, so its predictive interval is wide and
a reading that mispredicts every fold by the same mild amount (debate Amp 0.19
predicted, 0.13 observed, in each of five folds) leaves each fold inside its interval:
K intervals, each of them unable to fail.  What can fail is the sum.  Per statistic
the checks count (Amp and follow-when-correct per protocol), the held-out folds'
observed counts are summed and so are their predictions (each fold's predicted rate
at the estimate of the fit to the other folds, times its rows): the pooled residual
is the observed minus the predicted rate over every row, each row predicted by a fit
that did not see it.  With several fold seeds the residuals are averaged over the
fold assignments.

Its null distribution is not the sum of the folds' predictive variances: the folds'
fits share most of their rows, so their errors are correlated (summing the folds'
variances understates the parameters' part about K - 1 times), and a held-out row is
a training row of every other fold.  It is calibrated instead by a parametric
bootstrap: B logs are simulated from the fit to the whole log (the same rows,
judges, protocols, evidence and populations; labels, and stated probabilities where
the reading reads them, recorded on the log's grid and bounds, drawn from the fitted
judge), each cross-validated in the same folds and reading, and their pooled residuals
give the reference.  Per statistic the p-value is the t prediction test of the
observed residual against the B simulated ones (B - 1 degrees of freedom); over all
statistics at once (the pooled check's one p-value) Hotelling's prediction test,
(B - m) / (m (B - 1)) x B / (B + 1) x (r - rbar)' S^-1 (r - rbar) ~ F(m, B - m),
which accounts for the statistics' correlation (they share the judge's parameters)
and for S being estimated from B logs.  Both assume the residuals are near normal
(sums over hundreds of rows); a rank p-value would need many more refits for the
same resolution at 5%.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..lazy import lazy

special = lazy("scipy.special")
stats = lazy("scipy.stats")

#: Simulated logs of the pooled statistic's reference (``--cv-boot``).
N_BOOT = 40
#: Most simulated logs and fold seeds a request may ask for.
MAX_BOOT = 10_000
MAX_SEEDS = 100
#: Fewest simulated logs a reference may have (Hotelling's test needs B > m + 1; the
#: F reference's denominator degrees of freedom B - m stay >= 6).
MIN_BOOT = 10


def assign_folds(units: pd.Series, k: int, rng) -> np.ndarray:
    """Each row's fold (0 to k - 1): the units (judges or rooms) permuted by ``rng`` and
    dealt round-robin, as :func:`~.predictive.cross_validate` deals them."""
    uniq = np.array(sorted(set(units)))
    fold_of = dict(zip(rng.permutation(uniq), np.arange(len(uniq)) % k))
    return units.map(fold_of).to_numpy()


def statistics(df: pd.DataFrame) -> list:
    """The statistics a pooled check counts: (protocol, metric) with rows in ``df``."""
    known = df[df["omega"].notna()]
    right = known["a"] == known["omega"]
    out = []
    for prot in ("consult", "debate"):
        pm = known["protocol"] == prot
        for name, r in (("amp", False), ("fwc", True)):
            if (pm & (right == r)).any():
                out.append((prot, name))
    return out


def _counts(f, test: pd.DataFrame, keys: list) -> np.ndarray:
    """[observed, predicted, n] per statistic of ``keys`` for the rows ``test``: the
    predicted count at the fit's estimate."""
    from .predictive import endorse_prob, row_types

    out = np.zeros((len(keys), 3))
    test = test[test["omega"].notna()]
    if not len(test):
        return out
    agg = row_types(f, test)
    q = endorse_prob(f, agg, f.params[None, :])[0]
    w = agg["w"].to_numpy(float)
    e = agg["endorse"].to_numpy(float)
    for i, (prot, name) in enumerate(keys):
        m = ((agg["debate"] == (prot == "debate")) & (agg["right"] == (name == "fwc"))
             ).to_numpy()
        out[i] = (w[m] @ e[m], w[m] @ q[m], w[m].sum())
    return out


def pooled_counts(df: pd.DataFrame, folds: list, reading: str, fit_kw: dict,
                  keys: list, select_seed: int = 0, chosen: list | None = None) -> np.ndarray:
    """[observed, predicted, n] per statistic summed over the folds of every fold
    assignment in ``folds`` (arrays of each row's fold), averaged over the
    assignments.  Each fold is predicted by the fit (``reading``, ``fit_kw``) to the
    others; ``reading`` ``auto``: the reading selected on those other folds' rows
    alone (:func:`~.predictive.select_fit`, ``select_seed``), so that the held-out
    fold plays no part in the selection either; ``chosen`` (a list) gets the reading
    of each fold, assignment by assignment.  Raises the fit's error."""
    from .predictive import fit_for, fit_named

    tot = np.zeros((len(keys), 3))
    for fold in folds:
        for j in range(int(fold.max()) + 1):
            train, test = df[fold != j], df[fold == j]
            train.attrs, test.attrs = dict(df.attrs), dict(df.attrs)
            if reading == "auto":
                f = fit_for(train, "auto", select_seed, **fit_kw)[0]
            else:
                f = fit_named(train, reading, **fit_kw)
            if chosen is not None:
                chosen.append(f.reading)
            tot += _counts(f, test, keys)
    return tot / len(folds)


def simulate_from_fit(f, df: pd.DataFrame, rng) -> pd.DataFrame:
    """The log ``df`` with every label of a known truth redrawn from the fit ``f`` at
    its estimate (and the stated probability, where the fit reads them: the logistic of
    the judge's z, recorded on the fit's grid and clipped to its bounds; a recorded
    1/2 labelled with the protagonist's answer at the fit's tie share).  Rows, judges,
    protocols, evidence and populations are the log's; rows of unknown truth are kept
    as they are (no fit reads them)."""
    from . import structural as st
    from .predictive import likelihood_of

    out = df.copy()
    out.attrs = dict(df.attrs)
    known = out["omega"].notna().to_numpy()
    # one merged row per row of the log: a unique judge per row keeps them apart, in
    # the log's order (the judges' factorised codes follow it)
    key = out[known].drop(columns=["p_y"], errors="ignore").assign(
        judge_id=np.arange(int(known.sum())))
    agg, _ = st.merged_rows(key, f.debaters, f.populations or None, evidence=True)
    agg = agg.sort_values("g", kind="stable")
    m, s = likelihood_of(f, agg).moments(f.params)
    z = m + s * rng.standard_normal(len(agg))
    debate = agg["debate"].to_numpy()
    tie = np.where(debate, f.tie["debate"], f.tie["consult"])
    if f.sigma_free and "p_y" in out.columns:
        p = special.expit(z)
        if f.grid > 0:
            p = np.round(p / f.grid) * f.grid
        lo, hi = f.bounds
        p = np.clip(p, lo if np.isfinite(lo) else 0.0, hi if np.isfinite(hi) else 1.0)
        at_half = np.abs(p - 0.5) < 1e-9
        endorse = np.where(at_half, rng.random(len(p)) < tie, p > 0.5)
        p_col = out["p_y"].to_numpy(float).copy()
        p_col[known] = p
        out["p_y"] = p_col
    else:  # the label the recorded z favours, a tie inside the band at the tie share
        inside = np.abs(z) <= f.band
        endorse = np.where(inside, rng.random(len(z)) < tie, z > f.band)
        out = out.drop(columns=["p_y"], errors="ignore")  # (not this reading's)
    a = out.loc[known, "a"].to_numpy()
    y = out["y"].to_numpy().copy()
    y[known] = np.where(endorse, a, 1 - a)
    out["y"] = y.astype(out["y"].dtype)
    return out


def pooled_check(df: pd.DataFrame, fit, k: int, by: str = "judge", seeds=(0,),
                 n_boot: int = N_BOOT, seed: int = 0, fit_kw=None,
                 progress=None, reading: str | None = None) -> pd.DataFrame:
    """The pooled cross-validation statistic of the reading of ``fit`` (a fit to the
    whole log ``df``, the model the reference is simulated from) over ``k`` folds by
    ``by``, averaged over the fold assignments of ``seeds``, with its parametric
    bootstrap reference of ``n_boot`` simulated logs.

    Returns one row per statistic (protocol, metric, n, observed, predicted, residual,
    ref_mean, ref_sd, t, p_value) and a last row ``metric='all'`` (the statistics at
    once: Hotelling's T^2, its F, df and p_value); attrs: the reading, folds, fold
    seeds, the simulated logs used and those whose fit failed.

    ``reading``: the reading every fold is fitted in (default the reading of ``fit``),
    or ``auto``: each fold's reading selected on its training rows
    (:func:`pooled_counts`), in the log and in every simulated log alike, so that the
    reference carries the selection's variation too (about len(FITS) x (SELECT_FOLDS
    + 1) times the fits of one reading; attrs ``fold_readings``, the log's folds'
    readings, and ``ref_readings``, how often the simulated logs' folds selected
    each).  The simulated logs are drawn from ``fit``: where it reads labels alone
    they have no stated probabilities, so their folds select among the label
    readings."""
    from . import structural as st
    from .predictive import CheckError, fold_units

    fit_kw = dict(fit_kw or {})
    if fit_kw.get("debaters"):  # every fold knows every population, as cross_validate
        fit_kw["populations"] = sorted(set(df[fit_kw["debaters"]].astype(str)))
    reading = reading or fit.reading
    units = fold_units(df, by)
    folds = [assign_folds(units, k, np.random.default_rng(s)) for s in seeds]
    keys = statistics(df)
    chosen: list = []
    try:
        obs = pooled_counts(df, folds, reading, fit_kw, keys, seed, chosen)
    except (st.FitError, CheckError) as exc:
        raise CheckError(f"--cv pooled statistic ({reading}): {exc}") from None
    r = (obs[:, 0] - obs[:, 1]) / obs[:, 2]
    rng = np.random.default_rng([seed, 57])
    ref, failed, ref_chosen = [], 0, []
    for b in range(n_boot):
        sim = simulate_from_fit(fit, df, rng)
        try:
            c = pooled_counts(sim, folds, reading, fit_kw, keys, seed, ref_chosen)
        except (st.FitError, CheckError):  # a simulated log this reading cannot fit
            failed += 1
            continue
        ref.append((c[:, 0] - c[:, 1]) / c[:, 2])
        if progress is not None:
            progress(b + 1, n_boot)
    ref = np.array(ref).reshape(-1, len(keys))
    B, m = len(ref), len(keys)
    rows = []
    mean = ref.mean(axis=0) if B else np.full(m, np.nan)
    sd = ref.std(axis=0, ddof=1) if B > 1 else np.full(m, np.nan)
    for i, (prot, name) in enumerate(keys):
        t = (r[i] - mean[i]) / (sd[i] * np.sqrt(1 + 1 / B)) if B > 1 and sd[i] > 0 \
            else np.nan
        rows.append({"protocol": prot, "metric": name, "n": int(round(obs[i, 2])),
                     "observed": obs[i, 0] / obs[i, 2], "predicted": obs[i, 1] / obs[i, 2],
                     "residual": r[i], "ref_mean": mean[i], "ref_sd": sd[i], "t": t,
                     "p_value": float(2 * stats.t.sf(abs(t), B - 1)) if np.isfinite(t)
                     else np.nan})
    T2, F, p, dfn, dfd = hotelling(r, ref)
    rows.append({"protocol": "all", "metric": "all", "n": np.nan, "observed": np.nan,
                 "predicted": np.nan, "residual": np.nan, "ref_mean": np.nan,
                 "ref_sd": np.nan, "t": np.nan, "p_value": p, "T2": T2, "F": F,
                 "df1": dfn, "df2": dfd})
    tab = pd.DataFrame(rows)
    tab["reading"] = reading
    fold_readings = [{"fold_seed": int(s_), "fold": j + 1, "reading": chosen[i * k + j]}
                     for i, s_ in enumerate(seeds) for j in range(k)]
    counts = pd.Series(ref_chosen, dtype=object).value_counts()
    tab.attrs.update({"reading": reading, "k": k, "by": by, "seeds": list(seeds),
                      "n_boot": B, "failed": failed, "fold_readings": fold_readings,
                      "ref_readings": {str(a): int(b) for a, b in counts.items()}})
    return tab


def hotelling(r: np.ndarray, ref: np.ndarray):
    """Hotelling's prediction test of one vector ``r`` against ``ref`` ([B, m]) drawn
    from its null: (T^2, F, p, df1, df2).  Statistics whose reference has (numerically)
    no variance of their own, a linear combination of the others, are dropped from the
    quadratic form (df1 counts those kept)."""
    B = len(ref)
    if B < 3:
        return (np.nan,) * 5
    d = r - ref.mean(axis=0)
    S = np.cov(ref, rowvar=False).reshape(len(r), len(r))
    sd = np.sqrt(np.diag(S))
    keep = sd > 0
    R = S[np.ix_(keep, keep)] / np.outer(sd[keep], sd[keep])
    w, v = np.linalg.eigh(R)
    ok = w > 1e-8 * w.max()
    m = int(ok.sum())
    if m < 1 or B - m < 1:
        return (np.nan,) * 5
    u = (v[:, ok].T @ (d[keep] / sd[keep])) / np.sqrt(w[ok])
    T2 = float(B / (B + 1) * (u @ u))
    F = (B - m) / (m * (B - 1)) * T2
    return T2, float(F), float(stats.f.sf(F, m, B - m)), m, B - m


def format_pooled(tab: pd.DataFrame, confidence: float) -> str:
    a = tab.attrs
    seeds = a.get("seeds", [0])
    lines = [f"  pooled over the {a.get('k')} folds"
             + (f" and {len(seeds)} fold seeds ({', '.join(map(str, seeds))})"
                if len(seeds) > 1 else "")
             + (" (reading auto, selected within each fold" if a.get("reading") == "auto"
                else f" (reading {a.get('reading')}")
             + "; each row predicted by a fit that did not "
             f"see it), against {a.get('n_boot')} logs simulated from the fit to the whole "
             f"log and cross-validated alike"
             + (f" ({a['failed']} more could not be fitted)" if a.get("failed") else "")
             + ":"]
    if a.get("reading") == "auto" and a.get("fold_readings"):
        by_seed: dict = {}
        for x in a["fold_readings"]:
            by_seed.setdefault(x["fold_seed"], []).append(f"{x['fold']} {x['reading']}")
        lines.append("    reading selected in each fold on its training rows alone: "
                     + "; ".join((f"seed {s_}: " if len(by_seed) > 1 else "")
                                 + ", ".join(v) for s_, v in by_seed.items()))
        ref = a.get("ref_readings") or {}
        if ref:
            lines.append("    in the simulated logs' folds: "
                         + ", ".join(f"{r} {n}" for r, n in ref.items()))
    for _, x in tab[tab["metric"] != "all"].iterrows():
        lines.append(f"    {x['protocol']:<8} {x['metric']:<4} n {int(x['n']):>5}  observed "
                     f"{x['observed']:.4f}  predicted {x['predicted']:.4f}  residual "
                     f"{x['residual']:+.4f} (simulated {x['ref_mean']:+.4f} +- "
                     f"{x['ref_sd']:.4f})  p {x['p_value']:.3f}")
    o = tab[tab["metric"] == "all"].iloc[0]
    alpha = 1 - confidence
    if np.isfinite(o["p_value"]):
        lines.append(f"    all {int(o['df1'])} at once: Hotelling T^2 {o['T2']:.2f}, F "
                     f"{o['F']:.2f} on ({int(o['df1'])}, {int(o['df2'])}) df, p "
                     f"{o['p_value']:.4f}"
                     + (f"  POOR FIT (p < {alpha:g})" if o["p_value"] < alpha else ""))
    else:
        lines.append("    all at once: too few simulated logs could be fitted for a "
                     "reference")
    return "\n".join(lines)
