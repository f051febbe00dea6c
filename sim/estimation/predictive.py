"""Predictive checks of the structural judge that can fail honestly.

The structural fit (:mod:`antiamp.estimation.structural`) gives, for every row with a known
truth, the probability that the judge labels the protagonist's answer.  Here it is
turned into a predictive distribution of what a log (or a held-out part of one)
would count:

- per group of rows (protocol x stratum, and pooled per protocol), the number of
  wrong protagonists endorsed (Amp) and of right ones endorsed (follow-when-correct);
- each count's predictive distribution mixes the fit's parameter uncertainty (draws
  from its judge-clustered sampling distribution) with the binomial variation of the
  rows themselves (per distinct row type, so the sum is exact), so an interval never
  collapses to zero width when every row of a group agrees (9 of 9 endorsed);
- observed proportions get Wilson intervals (statsmodels ``proportion_confint``);
- p-values are two-sided predictive tail areas of the observed count;
- the check says how many statistics it tests and how many parameters were fitted to
  them; with no more statistics than parameters it says it had nothing to test.

The fit these checks use reads the log in the way that predicts held-out judges'
labels (:func:`select_fit`): from the stated probabilities or from the labels alone,
with one quality gap and spread for both protocols or debate's own.

Cross-validation (:func:`cross_validate`) refits on all but one fold of judges or of
rooms and predicts the held-out fold; calibration (:func:`calibrate`) fits the judge
on one log and a new population of debaters on a few rooms of another, and predicts
that log's remaining rooms, with the dishonest side's evidence rate rho drawn from
its Jeffreys posterior on the calibration rooms.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..lazy import lazy

special = lazy("scipy.special")
stats = lazy("scipy.stats")

#: Statistics a check counts: (name, the protagonist right?) -> Pr(endorse) of those rows.
STATS = (("amp", False), ("fwc", True))
N_DRAWS = 1000
#: Most parameter draws of a predictive check (the draws are held at once, with the
#: predicted rates of every row type in chunks).
MAX_CHECK_DRAWS = 1_000_000


class CheckError(ValueError):
    """Options or a log that a predictive check cannot use (the message says why)."""


# ------------------------------------------------------------------ the predictive law
def param_draws(f, n_draws: int, rng) -> np.ndarray:
    """Draws of the fit's free parameters (draw 0 the estimate): under a shift prior
    importance-resampled to the posterior's shape
    (:func:`~.structural.posterior_draws`), else (or where that sampling is too poor)
    from N(theta-hat, V-hat), V-hat the fit's
    :meth:`~.structural.StructuralFit.draw_cov` (under a shift prior no smaller than
    the Laplace posterior's)."""
    from .structural import cov_factor, posterior_draws

    if f.log_post is not None and n_draws > 1:
        got = posterior_draws(f, n_draws, rng)
        if got is not None:
            return got[0]
        note = ("predictive draws: normal at the estimate (the importance resampling to "
                "the shift prior's posterior was too poor: fewer effective proposals than "
                "draws), so the draws follow no skew of the posterior")
        if note not in f.notes:  # said once, with the fit's other notes
            f.notes.append(note)
    chol = cov_factor(f.draw_cov())
    z = rng.standard_normal((n_draws, len(f.names)))
    z[0] = 0.0
    return f.params + z @ chol.T


def row_types(f, df: pd.DataFrame) -> pd.DataFrame:
    """Distinct row types (with a known truth) of a log, as the fit reads them."""
    from . import structural as st

    agg, _ = st.merged_rows(df, f.debaters, f.populations or None, evidence=True)
    return agg


def likelihood_of(f, agg):
    from . import structural as st

    lik = st.Likelihood(agg, f.names, f.fixed, f.sigma_free, f.bounds, f.grid)
    lik.populations = list(f.populations)
    return lik


def endorse_prob(f, agg: pd.DataFrame, draws: np.ndarray, rho=None) -> np.ndarray:
    """Pr(the recorded label is the protagonist's answer) per draw and row type,
    [draws, cells]: the favoured answer of z ~ N(m, s^2) with the fit's recording band
    and tie share.  ``rho`` ([draws] or a float): the dishonest side's evidence is
    Bernoulli(rho) instead of what the rows show (a prediction for rooms whose
    evidence is not yet seen)."""
    lik = likelihood_of(f, agg)
    debate = agg["debate"].to_numpy()
    tie = np.where(debate, f.tie["debate"], f.tie["consult"])

    def prob(x):
        lik.x = x
        out = np.empty((len(draws), len(agg)))
        for i, th in enumerate(draws):
            m, s = lik.moments(th)
            above = special.ndtr((m - f.band) / s)
            out[i] = above + tie * (special.ndtr((m + f.band) / s) - above)
        return out

    x = agg["x"].to_numpy(float)
    if rho is None:
        return prob(x)
    # the dishonest side's evidence w ~ Bernoulli(rho), the honest side's as logged:
    # debate x = w - e_A (protagonist wrong) or e_P - w (right); consultancy x = w
    # (wrong consultant) or e_P (right)
    right = agg["right"].to_numpy()
    ep, ea = agg["ep"].to_numpy(float), agg["ea"].to_numpy(float)

    def x_of(w):
        return np.where(debate, np.where(right, ep - w, w - ea), np.where(right, ep, w))

    r = np.asarray(rho, float).reshape(-1, 1)
    return r * prob(x_of(1.0)) + (1 - r) * prob(x_of(0.0))


def predictive_counts(f, agg: pd.DataFrame, q: np.ndarray, rng) -> np.ndarray:
    """Predicted endorsement counts [draws] of the row types ``agg`` given their
    probabilities ``q`` [draws, cells]: binomial per row type (exact for their sum)."""
    n = agg["w"].to_numpy(np.int64)
    return rng.binomial(n[None, :], np.clip(q, 0.0, 1.0)).sum(axis=1)


def _tail_p(sim: np.ndarray, k: int) -> float:
    """Two-sided predictive p-value of an observed count k: twice the smaller tail
    (each tail including k), at most 1."""
    return float(min(1.0, 2 * min(np.mean(sim <= k), np.mean(sim >= k))))


def _wilson(k: int, n: int, confidence: float):
    from .logstats import wilson

    return wilson(k, n, confidence)


#: Probabilities held at once by a predictive check ([draws, row types], 8 bytes each).
CHUNK_VALUES = 1 << 22


def compare(f, df: pd.DataFrame, groups: list, draws: np.ndarray, confidence: float,
            rng, rho=None) -> pd.DataFrame:
    """Observed against predicted per (labels, statistic) for ``groups``: a list of
    (dict of labels, row mask).  Columns: the labels, metric, n, k, observed,
    observed_lo/hi (Wilson), predicted (mean proportion), predicted_lo/hi (predictive
    interval of the proportion: parameters and rows), p_value, inside."""
    a = (1 - confidence) / 2
    rows = []
    for labels, mask in groups:
        sub = df[mask.to_numpy() if hasattr(mask, "to_numpy") else mask]
        sub = sub[sub["omega"].notna()]
        if not len(sub):
            continue
        agg = row_types(f, sub)
        r = rho(labels) if callable(rho) else rho
        obs_k = agg["w"] * agg["endorse"]
        # The predicted counts, summed over chunks of row types: a log with stated
        # probabilities has nearly as many row types as rows, and [draws, row types]
        # at once held gigabytes (a 5-million-row log).  One chunk (the usual case)
        # draws in the same order as before.
        step = max(1, CHUNK_VALUES // max(len(draws), 1))
        sims = {name: np.zeros(len(draws), np.int64) for name, _ in STATS}
        for c0 in range(0, len(agg), step):
            part = agg.iloc[c0:c0 + step]
            q = endorse_prob(f, part, draws, r)
            for name, right in STATS:
                m = (part["right"] == right).to_numpy()
                if part["w"][m].sum() > 0:
                    sims[name] += predictive_counts(f, part[m], q[:, m], rng)
        for name, right in STATS:
            m = (agg["right"] == right).to_numpy()
            n = int(agg["w"][m].sum())
            if n == 0:
                continue
            k = int(obs_k[m].sum())
            sim = sims[name]
            lo, hi = _wilson(k, n, confidence)
            plo, phi = np.quantile(sim / n, [a, 1 - a])
            p = _tail_p(sim, k)
            rows.append({**labels, "metric": name, "n": n, "k": k, "observed": k / n,
                         "observed_lo": lo, "observed_hi": hi,
                         "predicted": float(np.mean(sim) / n), "predicted_lo": float(plo),
                         "predicted_hi": float(phi), "p_value": p,
                         "inside": bool(plo <= k / n <= phi)})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ which fit predicts
#: Readings of a log the structural fit can take: (use the stated probabilities p_y,
#: debate's own quality gap, debate's own spread).  The selection keeps the one with
#: the fewest free parameters (the first listed of a tie) whose held-out score is within
#: one judge-clustered standard error of the best.  "labels" reads only the
#: labels (the sign of z): a judge whose stated
#: probabilities are not the logistic of a normal reading (the shipped human judges
#: pile their debate probabilities at the interface's bounds) moves a fit to the
#: probabilities away from the rates of its labels, which are what Amp counts.
FITS = {
    "probabilities": (True, False, False),
    "labels": (False, False, False),
    "probabilities+gap": (True, True, False),
    "probabilities+spread": (True, False, True),
    "labels+gap": (False, True, False),
    "probabilities+gap+spread": (True, True, True),
}
#: Largest |parameter| a fit to labels alone (probit scale) is taken to have bounded.
LABELS_BOUND = 8.0
#: Folds of judges the selection holds out in turn (fewer where the log has fewer judges).
SELECT_FOLDS = 5
#: Rows a second of one structural fit, for the work estimate (a log of distinct stated
#: probabilities: about 2e4 rows/s measured on 2 loaded cores; a log on a 0.01 grid
#: merges its rows and fits faster).
FIT_ROW_RATE = 2e4


def n_fits(args) -> int:
    """Structural fits the options ask for: one per fit the checks use (the log, each
    --cv fold, the calibration), times the selection's candidates x (folds + 1) where
    the reading is chosen (``auto``)."""
    seeds = getattr(args, "cv_seeds", 1) or 1
    uses = (1 if args.simulate else 0) + (args.cv or 0) * seeds + (
        1 if args.calibrate else 0)
    auto = getattr(args, "structural_fit", "auto") == "auto" and not getattr(
        args, "protocol_gap", False)
    # --cv's pooled statistic: the folds of every fold seed refitted on the log and on
    # each simulated log, in one reading, or under auto with the reading selected
    # within each fold (the candidates x (folds + 1) per fold); and the whole log
    # selected once without --simulate
    pooled = (args.cv or 0) * seeds * (getattr(args, "cv_boot", 0) + 1) * (
        len(FITS) * (SELECT_FOLDS + 1) if auto else 1) + (
        len(FITS) * (SELECT_FOLDS + 1) if args.cv and auto and not args.simulate else 0)
    # (+2: the shifts refitted at half and double the shift prior's scales)
    return uses * (len(FITS) * (SELECT_FOLDS + 1) if auto else 1) + (
        2 if args.simulate and getattr(args, "debaters", None) else 0) + (
        pooled if getattr(args, "cv_boot", 0) else 0)


def fit_named(df: pd.DataFrame, name: str, **kw):
    """The structural fit of one reading of :data:`FITS` (``kw``: debaters,
    populations)."""
    from . import structural as st

    if name not in FITS:
        raise CheckError(f"--structural-fit {name!r}: allowed values are auto, "
                         + ", ".join(FITS))
    probs, gap, spread = FITS[name]
    if not probs and "p_y" in df.columns:
        attrs = dict(df.attrs)
        df = df.drop(columns="p_y")
        df.attrs = attrs
    f = st.fit(df, protocol_gap=gap, protocol_spread=spread, **kw)
    f.reading = name
    if probs and not f.sigma_free:
        # a log without stated probabilities: this reading is the labels' (no spread
        # apart from the gap is identified there), and is named so where it is printed
        f.reading = "labels+gap" if "d_debate" in f.names else "labels"
    if not f.sigma_free:
        # Labels alone: a group whose labels all agree (a few calibration rooms in which
        # no dishonest side won, say) has no finite maximum-likelihood shift; the
        # optimiser stops far out, where the sandwich is near 0 and would give an
        # interval of no width.  On the probit scale of this fit |value| > LABELS_BOUND
        # is a probability within 1e-15 of 0 or 1: refused, so another reading is used.
        far = [n for n, v in zip(f.names, f.params) if abs(v) > LABELS_BOUND]
        if far:
            raise st.FitError(f"labels alone do not bound {', '.join(far)} (every label of "
                              f"a group agrees: separation)")
    return f


def label_score(f, df: pd.DataFrame) -> pd.Series:
    """Log-likelihood of the rows' labels (endorsed or not) under the fit's estimate,
    summed per judge: the held-out score of the selection."""
    agg = row_types(f, df)
    q = np.clip(endorse_prob(f, agg, f.params[None, :])[0], 1e-12, 1 - 1e-12)
    e = agg["endorse"].to_numpy(bool)
    ll = agg["w"].to_numpy(float) * np.where(e, np.log(q), np.log1p(-q))
    return pd.Series(ll).groupby(agg["g"].to_numpy()).sum()


def select_fit(df: pd.DataFrame, names=None, folds=SELECT_FOLDS, seed=0, **kw):
    """Let the log choose the reading of the structural fit that predicts held-out
    judges' labels best: each candidate of :data:`FITS` is fitted on all but one fold
    of judges and scored by the log-likelihood of the held-out judges' labels (the
    endorsements Amp and follow-when-correct count; the rows' predicted rates depend
    only on their protocol, side and evidence, so this is the binomial log-likelihood of
    the held-out judges' label counts).  Kept is the candidate with the fewest free
    parameters whose score is within one standard error of the best (the SE of the
    score difference over judges: judge-clustered), fitted on the whole log; a
    reading that predicts held-out labels clearly better is taken over a simpler one,
    a difference the held-out judges cannot tell apart is not.  Held-out judges, not an
    in-sample likelihood ratio: the
    readings differ in what they are fitted to (stated probabilities or labels), so
    their in-sample likelihoods are not comparable, and a judge's rows are not
    independent.

    Returns (fit, table): the table has, per candidate, its number of parameters, the
    held-out score, its difference from the best and that difference's standard error
    over judges (how clear the choice is)."""
    from . import structural as st

    names = list(names or FITS)
    judges = df["judge_id"].astype(str)
    known = df["omega"].notna().to_numpy()
    uniq = np.array(sorted(set(judges[known])))
    k = min(folds, len(uniq))
    rng = np.random.default_rng(seed)
    fold_of = dict(zip(rng.permutation(uniq), np.arange(len(uniq)) % max(k, 1)))
    fold = judges.map(fold_of).to_numpy()
    rows, scores, seen, why = [], {}, {}, []
    for name in names:
        try:
            whole = fit_named(df, name, **kw)
        except st.FitError as exc:
            why.append(f"{name}: {exc}")
            continue
        name = whole.reading  # (a probabilities reading of a log without them: labels)
        key = (tuple(whole.names), whole.sigma_free)
        if key in seen:  # the log does not identify this reading's extra parameter
            continue
        seen[key] = name
        per_judge = []
        try:
            for j in range(k):
                train, test = df[fold != j], df[(fold == j) & known]
                train.attrs, test.attrs = dict(df.attrs), dict(df.attrs)
                f = fit_named(train, name, **kw)
                per_judge.append(label_score(f, test))
        except (st.FitError, CheckError) as exc:
            why.append(f"{name}, fitted with a fold of judges left out: {exc}")
            continue
        # one entry per held-out judge, in the same order for every candidate
        scores[name] = pd.concat(per_judge, ignore_index=True)
        rows.append({"fit": name, "n_params": len(whole.names), "fitted": whole})
    if not rows:
        raise CheckError("the structural fit failed for every reading of the log"
                         + (f" ({'; '.join(why)})" if why else ""))
    if k < 2:  # one judge: nothing to hold out; the first reading that fits
        chosen = min(rows, key=lambda r: r["n_params"])["fit"]
        tab = pd.DataFrame([{"fit": r["fit"], "n_params": r["n_params"],
                             "score": np.nan, "diff": np.nan, "diff_se": np.nan}
                            for r in rows])
    else:
        S = pd.DataFrame(scores)
        best = S.sum().idxmax()
        diff = S.sub(S[best], axis=0)  # per judge, candidate minus best
        G = len(S)
        se = diff.std(ddof=1) * np.sqrt(G)
        tab = pd.DataFrame({"fit": [r["fit"] for r in rows],
                            "n_params": [r["n_params"] for r in rows],
                            "score": [float(S[r["fit"]].sum()) for r in rows],
                            "diff": [float(diff[r["fit"]].sum()) for r in rows],
                            "diff_se": [float(se[r["fit"]]) for r in rows]})
        ok = tab["diff"] >= -tab["diff_se"] - 1e-9
        chosen = tab[ok].sort_values("n_params", kind="stable")["fit"].iloc[0]
    f = next(r["fitted"] for r in rows if r["fit"] == chosen)
    f.notes.append(f"reading chosen by {k}-fold leave-judges-out label log-likelihood "
                   f"(the fewest parameters within one judge-clustered SE of the best): "
                   f"{chosen}")
    tab["chosen"] = tab["fit"] == chosen
    return f, tab


def fit_for(df: pd.DataFrame, choice: str = "auto", seed=0, **kw):
    """The structural fit the predictive checks use: ``choice`` a reading of
    :data:`FITS`, or ``auto`` (:func:`select_fit`).  Returns (fit, selection table or
    None)."""
    from . import structural as st

    if choice == "auto":
        return select_fit(df, seed=seed, **kw)
    try:
        return fit_named(df, choice, **kw), None
    except st.FitError as exc:
        raise CheckError(f"the structural fit ({choice}): {exc}") from None


def format_selection(tab) -> str:
    if tab is None:
        return ""
    lines = ["", "which reading of the log predicts held-out judges' labels (leave-judges-"
             "out log-likelihood of the labels; used: the fewest parameters within one "
             "SE of the best, the SE of the difference over judges):"]
    for _, r in tab.iterrows():
        lines.append(f"  {r['fit']:<26} {r['n_params']} parameters  score {r['score']:9.2f}  "
                     f"vs best {r['diff']:+8.2f} (SE {r['diff_se']:.2f})"
                     + ("  <- used" if r["chosen"] else ""))
    return "\n".join(lines)


# ------------------------------------------------------------------ in-sample check
def stratified_check(f, df: pd.DataFrame, confidence=0.95, n_draws=N_DRAWS, seed=0):
    """Per protocol x stratum and pooled per protocol (in sample).  Returns (table,
    summary dict with n_stats, n_params, free, statement)."""
    rng = np.random.default_rng(seed)
    draws = param_draws(f, n_draws, rng)
    strata = sorted(set(df["stratum"].astype(str))) if "stratum" in df.columns else ["all"]
    groups = []
    for prot in ("consult", "debate"):
        pm = df["protocol"] == prot
        groups.append(({"protocol": prot, "stratum": "all"}, pm))
        if len(strata) > 1:
            for s in strata:
                groups.append(({"protocol": prot, "stratum": s},
                               pm & (df["stratum"].astype(str) == s)))
    tab = compare(f, df, groups, draws, confidence, rng)
    tab["poor"] = tab["p_value"] < 1 - confidence
    # free statistics: the finest groups' rates (pooled ones are their sums); the
    # fitted parameters were chosen to reproduce them
    finest = tab[tab["stratum"] != "all"] if len(strata) > 1 else tab
    n_stats, n_par = len(finest), len(f.names)
    free = n_stats - n_par
    with_p = f.sigma_free
    if free <= 0 and with_p:
        statement = (f"little to test: {n_par} parameters (fitted to the stated "
                     f"probabilities and the labels together) against {n_stats} label "
                     f"rates; the rates test only how the probabilities and the labels "
                     f"agree (cross-validate with --cv K)")
    elif free <= 0:
        statement = (f"nothing to test: {n_par} fitted parameters against {n_stats} label "
                     f"rates; the fit reproduces what it was fitted to and these p-values "
                     f"cannot fail (cross-validate with --cv K)")
    elif free <= 2:
        statement = (f"almost nothing to test: {n_stats} label rates against {n_par} fitted "
                     f"parameters leave {free} free statistic(s) (cross-validate with --cv K)")
    else:
        statement = (f"{n_stats} label rates tested against {n_par} fitted parameters: "
                     f"about {free} free statistics")
    if with_p and free > 0:
        statement += ("; the parameters were fitted to the stated probabilities too, so the "
                      "rates test how probabilities and labels agree")
    bonf = float(min(1.0, tab["p_value"].min() * len(finest))) if len(tab) else np.nan
    return tab, {"n_stats": n_stats, "n_params": n_par, "free": free,
                 "statement": statement, "min_p_bonferroni": bonf}


def _observed_predicted(r) -> str:
    """A row's observed rate and interval, predicted rate and interval, and p-value
    (the words of every predictive check's table)."""
    return (f"observed {r['observed']:.4f} [{r['observed_lo']:.4f}, {r['observed_hi']:.4f}]"
            f"  predicted {r['predicted']:.4f} [{r['predicted_lo']:.4f}, "
            f"{r['predicted_hi']:.4f}]  p {r['p_value']:.3f}")


def format_stratified(tab: pd.DataFrame, summary: dict, confidence: float) -> str:
    lines = ["", f"predictive check per stratum (counts: the fit's parameter draws and "
             f"binomial rows; observed {confidence:.0%} Wilson, predicted {confidence:.0%} "
             f"predictive interval):"]
    for _, r in tab.iterrows():
        lines.append(f"  {r['protocol']:<8} {r['stratum']:<12} {r['metric']:<4} "
                     f"{r['k']:>5}/{r['n']:<5} {_observed_predicted(r)}"
                     + ("  POOR FIT" if r["poor"] else ""))
    lines.append(f"  {summary['statement']}; smallest p x {summary['n_stats']} (Bonferroni) "
                 f"{summary['min_p_bonferroni']:.3f}")
    return "\n".join(lines)


# ------------------------------------------------------------------ cross-validation
def fold_units(df: pd.DataFrame, by: str) -> pd.Series:
    """The unit a fold holds out: a judge or a room."""
    if by == "judge":
        return df["judge_id"].astype(str)
    if by == "room":
        for col in ("room", "instance"):
            if col in df.columns:
                return df[col].astype(str)
        raise CheckError("--cv-by room: the log has no 'room' (or 'instance') column; "
                         "allowed: judge, or add a room column")
    raise CheckError(f"--cv-by {by!r}: allowed values are judge, room")


def cross_validate(df: pd.DataFrame, k: int, by="judge", confidence=0.95,
                   n_draws=N_DRAWS, seed=0, fit_kw=None, choice="auto") -> pd.DataFrame:
    """K-fold cross-validation by judge or room: fit on K - 1 folds, predict the
    held-out fold's Amp and follow-when-correct per protocol.  Its own evidence is
    used as logged (the judge is what is predicted).  ``choice``: the reading of
    :data:`FITS`, or ``auto``: chosen by :func:`select_fit` within each fold's training
    rows (the held-out fold plays no part in it); column ``fit`` says which."""
    units = fold_units(df, by)
    uniq = np.array(sorted(set(units)))
    fit_kw = dict(fit_kw or {})
    if fit_kw.get("debaters"):  # every fold knows every population (one unseen: shift 0)
        fit_kw["populations"] = sorted(set(df[fit_kw["debaters"]].astype(str)))
    if not 2 <= k <= len(uniq):
        raise CheckError(f"--cv {k}: needs 2 <= K <= the number of {by}s ({len(uniq)})")
    rng = np.random.default_rng(seed)
    fold_of = dict(zip(rng.permutation(uniq), np.arange(len(uniq)) % k))
    fold = units.map(fold_of).to_numpy()
    out = []
    for j in range(k):
        train, test = df[fold != j], df[fold == j]
        train.attrs, test.attrs = dict(df.attrs), dict(df.attrs)
        try:
            f, _ = fit_for(train, choice, seed, **fit_kw)
        except CheckError as exc:
            raise CheckError(f"--cv fold {j + 1}: {exc}") from None
        draws = param_draws(f, n_draws, rng)
        n_out = int(pd.Series(units[fold == j]).nunique())
        groups = [({"fold": j + 1, "protocol": prot, f"{by}s_held_out": n_out,
                    "fit": f.reading}, test["protocol"] == prot)
                  for prot in ("consult", "debate")]
        out.append(compare(f, test, groups, draws, confidence, rng))
    return pd.concat(out, ignore_index=True)


def format_cv(tab: pd.DataFrame, k: int, by: str, confidence: float) -> str:
    """The folds' rows and how many lie inside their intervals (the statistic pooled
    over the folds, :func:`~.cvpool.format_pooled`, is printed after them)."""
    many = "fold_seed" in tab.columns and tab["fold_seed"].nunique() > 1
    lines = ["", f"{k}-fold cross-validation by {by} (each fold predicted by a fit to the "
             f"others; observed {confidence:.0%} Wilson, predicted {confidence:.0%} "
             f"predictive interval):"]
    for _, r in tab.iterrows():
        lines.append(f"  {'seed ' + str(r['fold_seed']) + ' ' if many else ''}"
                     f"fold {r['fold']} {r['protocol']:<8} {r['metric']:<4} "
                     f"{r['k']:>4}/{r['n']:<4} {_observed_predicted(r)}  ({r['fit']})"
                     + ("" if r["inside"] else "  OUTSIDE"))
    miss = tab[~tab["inside"]]
    lines.append(f"  {len(tab) - len(miss)} of {len(tab)} held-out rates inside their "
                 f"{confidence:.0%} predictive intervals"
                 + (": outside " + ", ".join(f"fold {a} {b} {c}" for a, b, c in
                                            zip(miss["fold"], miss["protocol"],
                                                miss["metric"])) if len(miss) else ""))
    return "\n".join(lines)


# ------------------------------------------------------------------ calibration
def evidence_rate(df: pd.DataFrame, confidence=0.95) -> dict:
    """The dishonest side's evidence rate rho: k of n wrong sides showed evidence
    (debate: e_P of a wrong protagonist, e_A of a right one; consultancy: e_P of a
    wrong consultant), with its Jeffreys interval."""
    from statsmodels.stats.proportion import proportion_confint

    d = df[df["omega"].notna()]
    right = d["a"] == d["omega"]
    shown = pd.concat([d.loc[~right, "e_P"],
                       d.loc[right & (d["protocol"] == "debate"), "e_A"]]).dropna()
    n, k = len(shown), int(shown.sum())
    lo, hi = proportion_confint(k, n, alpha=1 - confidence, method="jeffreys") if n else \
        (np.nan, np.nan)
    return {"k": k, "n": n, "rho": k / n if n else np.nan, "lo": lo, "hi": hi}


CAL_POP = "calibration"
#: Prior sd of a calibrated population's persuasiveness shift, in spreads of argument
#: quality (sigma): delta ~ N(0, (SHIFT_PRIOR sigma)^2).  A few rooms say little about
#: the shift, and without a prior a flat one is implied: the predictive draws then
#: spread the shift over several spreads, and since a wrong side's win rate is convex
#: in its shift where it is small (the normal cdf's lower tail) the predicted Amp is
#: pulled up (debate Amp 0.22 predicted against 0.15 at 10 real rooms), or, where
#: every label of the rooms agrees, no estimate exists at all.  One spread: a new
#: population's dishonest side reads within about two spreads of the fitted one's
#: (the human debaters of other rooms of the same study differ by about 0.7 to 0.9
#: spreads in debate and consultancy); many rooms override it.
SHIFT_PRIOR = 1.0


def calibrate(fit_log: pd.DataFrame, new_log: pd.DataFrame, n_rooms: int, confidence=0.95,
              n_draws=N_DRAWS, seed=0, protocol_gap=False, debaters=None, choice="auto",
              shift_prior=SHIFT_PRIOR, prior=None, protocol_shifts=True):
    """Judge parameters from ``fit_log`` (with its populations when it has a
    ``debaters`` column named), a new population's persuasiveness shift from ``n_rooms``
    rooms of ``new_log`` (fitted jointly: the judge's parameters shared), predictions
    for ``new_log``'s other rooms per protocol.  ``choice``: the reading of
    :data:`FITS` (``protocol_gap``: probabilities+gap), or ``auto``: chosen by
    :func:`select_fit` on the joint rows.  ``shift_prior``: the prior sd of the new
    population's shift in spreads (:data:`SHIFT_PRIOR`; ``inf`` or None: none, the
    maximum-likelihood shift).

    Both protocols' shifts of the new population are fitted (``delta_consult``,
    ``delta_debate``), partially pooled through the hierarchical shift ``prior``
    (:class:`~.structural.ShiftPrior`; default: both scales ``shift_prior``, the
    default correlation); a protocol with no calibration rooms has its shift drawn
    from the prior's conditional given the other (the table's ``rests_on`` says so).
    The table's rows: per protocol Amp and follow-when-correct of the other rooms, and
    the gap (consultancy minus debate Amp) with ``pr_gap_below_0``; ``rooms_used``: the
    calibration rooms of that protocol.  Returns (fit, table, rho dict); the table's
    attrs hold the rooms per protocol, the prior in words and what a shift without
    rooms rests on.  ``protocol_shifts=False``: one shift for both protocols with the
    prior N(0, (shift_prior sigma)^2) (the tied model, for comparison)."""
    from .structural import ShiftPrior

    if protocol_gap:
        choice = "probabilities+gap"
    units = fold_units(new_log, "room")
    uniq = np.array(sorted(set(units)))
    if not 1 <= n_rooms < len(uniq):
        raise CheckError(f"--calibrate-rooms {n_rooms}: needs 1 <= N < the new log's "
                         f"{len(uniq)} rooms")
    rng = np.random.default_rng(seed)
    cal_rooms = set(rng.permutation(uniq)[:n_rooms])
    is_cal = units.isin(cal_rooms).to_numpy()
    cal, rest = new_log[is_cal].copy(), new_log[~is_cal].copy()
    base = fit_log.copy()
    base["debaters"] = base[debaters].astype(str) if debaters else "fitted log"
    if CAL_POP in set(base["debaters"]):
        raise CheckError(f"column 'debaters': the label {CAL_POP!r} is reserved for the "
                         f"calibration rooms")
    cal["debaters"] = CAL_POP
    rest["debaters"] = CAL_POP
    # keep the judges of the two logs apart
    base["judge_id"] = "fit:" + base["judge_id"].astype(str)
    cal["judge_id"] = "new:" + cal["judge_id"].astype(str)
    rest["judge_id"] = "new:" + rest["judge_id"].astype(str)
    cols = [c for c in base.columns if c in cal.columns]
    joint = pd.concat([base[cols], cal[cols]], ignore_index=True)
    joint.attrs = dict(fit_log.attrs)
    pops = sorted(set(base["debaters"])) + [CAL_POP]
    if prior is None:
        tau = float(shift_prior) if shift_prior is not None else np.inf
        prior = ShiftPrior(tau, tau)
    cal_units = units[is_cal]
    used = {prot: int(cal_units[(cal["protocol"] == prot).to_numpy()].nunique())
            for prot in ("consult", "debate")}
    try:
        if protocol_shifts:
            f, _ = fit_for(joint, choice, seed, debaters="debaters", populations=pops,
                           protocol_shifts=True, pop_prior=prior)
        else:
            tied = ({CAL_POP: float(shift_prior)} if shift_prior is not None
                    and np.isfinite(shift_prior) else None)
            f, _ = fit_for(joint, choice, seed, debaters="debaters", populations=pops,
                           shift_prior=tied)
    except CheckError as exc:
        raise CheckError(f"--calibrate: {exc}") from None
    r = evidence_rate(cal, confidence)
    draws = param_draws(f, n_draws, rng)
    f2, draws2, rests = complete_shifts(f, draws, rng)
    # the calibration rooms' rho, drawn from its Jeffreys posterior
    rho = rng.beta(r["k"] + 0.5, r["n"] - r["k"] + 0.5, n_draws) if r["n"] else None
    groups = [({"protocol": prot}, rest["protocol"] == prot) for prot in ("consult", "debate")]
    tab = compare(f2, rest, groups, draws2, confidence, rng, rho=rho)
    gap = calibrated_gap(f2, rest, draws2, confidence, rng, rho)
    if gap is not None:
        tab = pd.concat([tab, pd.DataFrame([gap])], ignore_index=True)
    tab["fit"] = f.reading
    tab["rooms_used"] = [used.get(p, sum(used.values())) for p in tab["protocol"]]
    tab["rests_on"] = [rests.get((CAL_POP, p), f"{used[p]} calibration rooms"
                                 if p in used else "both protocols' shifts")
                       for p in tab["protocol"]]
    tab.attrs["rooms_used"] = used
    tab.attrs["shift_prior"] = prior.text()
    tab.attrs["rests_on"] = {p: rests[(CAL_POP, p)] for p in (*used, "honest consult")
                             if (CAL_POP, p) in rests}
    return f, tab, r


def calibrated_gap(f, rest: pd.DataFrame, draws, confidence, rng, rho):
    """The held-out rooms' gap, consultancy minus debate Amp, against its predictive
    distribution (parameter draws and binomial rows of both protocols); None where the
    held-out rooms lack wrong protagonists of a protocol."""
    sims, obs, n = {}, {}, {}
    for prot in ("consult", "debate"):
        sub = rest[(rest["protocol"] == prot) & rest["omega"].notna()
                   & (rest["a"] != rest["omega"])]
        if not len(sub):
            return None
        agg = row_types(f, sub)
        q = endorse_prob(f, agg, draws, rho)
        n[prot] = int(agg["w"].sum())
        sims[prot] = predictive_counts(f, agg, q, rng) / n[prot]
        obs[prot] = float((agg["w"] * agg["endorse"]).sum() / n[prot])
    g, o = sims["consult"] - sims["debate"], obs["consult"] - obs["debate"]
    a = (1 - confidence) / 2
    lo, hi = np.quantile(g, [a, 1 - a])
    return {"protocol": "consult-debate", "metric": "gap", "n": n["consult"] + n["debate"],
            "k": np.nan, "observed": o, "observed_lo": np.nan, "observed_hi": np.nan,
            "predicted": float(np.mean(g)), "predicted_lo": float(lo),
            "predicted_hi": float(hi), "p_value": float(min(1.0, 2 * min(
                np.mean(g <= o), np.mean(g >= o)))), "inside": bool(lo <= o <= hi),
            "pr_gap_below_0": float(np.mean(g < 0))}


# ------------------------------------------------------------------ populations
#: The population a "new population" prediction is made for (no rows of it are seen).
NEW_POP = "new population"
#: Column naming the one population of a fit without populations of debaters.
POP_COL = "_population"
#: The labels of the two kinds of prediction (text, CSV, the store's attributes).
SAME, NEW = "the same debaters", "a new population"


def shift_prior_of(args):
    """The hierarchical shift prior the options give (:class:`~.structural.ShiftPrior`):
    ``--shift-prior-consult``, ``--shift-prior-debate``, ``--shift-prior-corr``;
    ``--calibrate-prior TAU``, where given, sets both scales."""
    from .structural import ShiftPrior

    tc, td = args.shift_prior_consult, args.shift_prior_debate
    if getattr(args, "calibrate_prior", None) is not None:
        tc = td = args.calibrate_prior
    return ShiftPrior(float(tc), float(td), float(args.shift_prior_corr))


def complete_shifts(f, draws: np.ndarray, rng, extra=()):
    """The fit ``f`` and its parameter ``draws`` with the shifts the log did not fit
    appended: a population's shift in a protocol it has no rows of, drawn from the
    shift prior's conditional given its fitted shift in the other protocol (draw by
    draw, in units of that draw's sigma), and the populations ``extra`` (no rows at
    all: both shifts drawn from the prior; a new population).  The honest
    consultant's shift ``honest_consult[<label>]``: where some population of the fit
    has one fitted, a population without it (not identified, or new) has it drawn from
    its prior N(0, (tau_consult sigma)^2), independent of the other shifts; where none
    has, it is 0 for every population, as the fit reads it.  Returns (fit, draws,
    rests): ``rests`` {(population, protocol): what that shift rests on; protocol
    "honest consult" for the honest shift}."""
    from dataclasses import replace

    from ..design import population_shifts  # (the advisor's new population, the same draws)
    from .structural import PROTOCOLS, ShiftPrior, honest_param, pop_param

    prior = f.shift_prior if f.shift_prior is not None else ShiftPrior()
    pops = list(f.populations) + [p for p in extra if p not in f.populations]
    names, cols, rests = list(f.names), [], {}
    sig = np.array([f.value("sigma", th) for th in draws])
    any_honest = any(n.startswith("honest_") for n in f.names)
    tau = (prior.tau_consult, prior.tau_debate, prior.corr)
    for lab in pops[1:]:
        if pop_param(lab) in f.names:  # one shift for both protocols (the tied model)
            continue
        have = {p: pop_param(lab, p) for p in PROTOCOLS if pop_param(lab, p) in f.names}
        missing = [p for p in PROTOCOLS if p not in have]
        draw_honest = False
        if honest_param(lab) not in f.names:
            if any_honest and np.isfinite(prior.tau_consult):
                draw_honest = True
                rests[(lab, "honest consult")] = (
                    "the shift prior (its honest consultant's shift not fitted: "
                    + (f.honest.get(lab) or "no rows of this population") + ")")
            else:
                rests[(lab, "honest consult")] = (
                    "0 (no population's honest consultant's shift is fitted)"
                    if not any_honest else "0 (the consultancy prior is flat)")
        both = len(missing) == 2
        if both and not all(np.isfinite(prior.tau(p)) for p in PROTOCOLS):
            raise CheckError(f"population {lab!r}: a shift prior with a flat scale "
                             f"cannot predict a population with no rows")
        if both or draw_honest:  # (the advisor's new population is drawn by the same code)
            got = population_shifts(sig, tau, rng, dishonest=both, honest=draw_honest)
            for p in PROTOCOLS if both else ():
                names.append(pop_param(lab, p))
                cols.append(got[p])
                rests[(lab, p)] = "the shift prior (no rooms of this population)"
            if draw_honest:
                names.append(honest_param(lab))
                cols.append(got["honest"])
        if not missing or both:
            continue
        p, (o, name_o) = missing[0], next(iter(have.items()))
        if not np.isfinite(prior.tau(p)):
            raise CheckError(f"population {lab!r} has no {p} rows and the shift prior is flat "
                             f"there: nothing predicts its {p} shift (give a finite scale)")
        given = draws[:, f.names.index(name_o)] / sig
        mean, sd = prior.conditional(p, {o: 1.0})
        names.append(pop_param(lab, p))
        cols.append(sig * (mean * given + sd * rng.standard_normal(len(draws))))
        rests[(lab, p)] = (f"the shift prior given its {o} shift (no {p} rooms of this "
                           f"population; correlation {prior.corr:g})")
    if not cols and len(pops) == len(f.populations):
        return f, draws, rests
    add = np.column_stack(cols) if cols else np.zeros((len(draws), 0))
    k = add.shape[1]
    cov = np.zeros((len(names), len(names)))
    cov[:len(f.names), :len(f.names)] = f.cov
    if k:
        cov[len(f.names):, len(f.names):] = np.cov(add, rowvar=False).reshape(k, k)
    lap = None
    if f.cov_laplace is not None:  # the appended shifts' block as in cov
        lap = cov.copy()
        lap[:len(f.names), :len(f.names)] = f.cov_laplace
    # (log_post is the fitted parameters' density: not the completed ones')
    g = replace(f, names=names, params=np.r_[f.params, add.mean(axis=0)], cov=cov,
                populations=pops, cov_laplace=lap, log_post=None)
    return g, np.column_stack([draws, add]), rests


def _with_population_column(f, df: pd.DataFrame):
    """A fit without populations as one with a single (reference) population, and the
    log with that column."""
    from dataclasses import replace

    if f.debaters:
        return f, df
    d = df.copy()
    d[POP_COL] = "fitted log"
    d.attrs = dict(df.attrs)
    return replace(f, debaters=POP_COL, populations=["fitted log"]), d


def population_predictions(f, df: pd.DataFrame, confidence=0.95, n_draws=N_DRAWS, seed=0,
                           populations=None, prior=None) -> pd.DataFrame:
    """Two kinds of prediction per population of debaters, labelled: "the same
    debaters" (each fitted population: its shifts as fitted, the fit's parameter
    draws) and "a new population" (its shifts drawn from the shift prior draw by draw,
    so the interval carries the variation between populations).  Each predicts the
    population's consultancy Amp and debate Amp (the rates at which wrong
    protagonists are endorsed, over the log's rooms of that protocol with the
    dishonest side's evidence Bernoulli(rho)), the gap consultancy minus debate and
    Pr(gap < 0), and beside them each protocol's accuracy over the log's rooms of it
    (right protagonists endorsed, wrong ones not); intervals are percentiles of the
    draws (rates, no binomial rows).
    rho: a population's Jeffreys posterior on its own rows; a new population's that
    of a fitted population chosen at random per draw.  ``populations``: those to
    report as "the same debaters" (default: every fitted one); ``prior``: the shift
    prior (default: the fit's, else :class:`~.structural.ShiftPrior`'s defaults)."""
    from dataclasses import replace

    from .structural import PROTOCOLS, ShiftPrior

    rng = np.random.default_rng(seed)
    draws = param_draws(f, n_draws, rng)
    f0, d0 = _with_population_column(f, df[df["omega"].notna()])
    f0 = replace(f0, shift_prior=prior or f.shift_prior or ShiftPrior())
    col = f0.debaters
    f2, draws2, rests = complete_shifts(f0, draws, rng, extra=[NEW_POP])
    lab_of = d0[col].astype(str)
    rhos = {}
    for lab in f0.populations:
        r = evidence_rate(d0[lab_of == lab])
        rhos[lab] = rng.beta(r["k"] + 0.5, r["n"] - r["k"] + 0.5, len(draws)) if r["n"] \
            else rng.beta(0.5, 0.5, len(draws))
    pick = rng.integers(0, len(f0.populations), len(draws))
    rhos[NEW_POP] = np.array([rhos[f0.populations[j]][i] for i, j in enumerate(pick)])
    a = 50 * (1 - confidence)
    rows = []
    shown = list(populations) if populations is not None else list(f0.populations)
    for lab, kind in [(p, SAME) for p in shown] + [(NEW_POP, NEW)]:
        row = {"prediction": kind, "population": lab}
        amps, accs = {}, {}

        def endorsed(rows):
            """Per draw, the share of ``rows`` whose protagonist the judge endorses, and
            their number."""
            # a rate depends on a row's protocol, side, evidence and population only:
            # without the judge and the stated probability the rows merge into a few
            # types (a log of millions of distinct probabilities into a handful)
            rows = rows.drop(columns=["p_y"], errors="ignore").assign(judge_id="all")
            rows[col] = lab
            agg = row_types(f2, rows)
            w = agg["w"].to_numpy(float)
            step = max(1, CHUNK_VALUES // max(len(draws2), 1))
            tot = np.zeros(len(draws2))
            for c0 in range(0, len(agg), step):
                part = agg.iloc[c0:c0 + step]
                tot += endorse_prob(f2, part, draws2, rhos[lab]) @ w[c0:c0 + step]
            return tot / w.sum(), w.sum()

        for prot in PROTOCOLS:
            pm = d0["protocol"] == prot
            wrong, right = d0[pm & (d0["a"] != d0["omega"])], d0[pm & (d0["a"] == d0["omega"])]
            if not len(wrong):
                continue
            amps[prot], n_w = endorsed(wrong.copy())
            # accuracy over the log's rooms of the protocol: right protagonists endorsed
            # and wrong ones not (every assigned debate is read with the wrong debater
            # as the protagonist: there it is 1 - Amp)
            fwc, n_r = endorsed(right.copy()) if len(right) else (0.0, 0.0)
            accs[prot] = (n_r * fwc + n_w * (1 - amps[prot])) / (n_r + n_w)
        out = {f"{k}_amp": v for k, v in amps.items()}
        out.update({f"{k}_acc": v for k, v in accs.items()})
        if len(amps) == 2:
            out["gap"] = amps["consult"] - amps["debate"]
        for key, v in out.items():
            row[key] = float(np.mean(v))
            lo, hi = np.percentile(v, [a, 100 - a])
            row[f"{key}_lo"], row[f"{key}_hi"] = float(lo), float(hi)
        row["pr_gap_below_0"] = float(np.mean(out["gap"] < 0)) if "gap" in out else np.nan
        said = [f"{p}: {rests[(lab, p)]}" for p in (*PROTOCOLS, "honest consult")
                if (lab, p) in rests]
        row["rests_on"] = "; ".join(said) if lab != NEW_POP else \
            "the shift prior (both shifts), rho of a fitted population at random; " \
            f"honest consult: {rests[(lab, 'honest consult')]}"
        rows.append(row)
    tab = pd.DataFrame(rows)
    tab.attrs["shift_prior"] = (f2.shift_prior or ShiftPrior()).text()
    return tab


def format_populations(tab: pd.DataFrame, confidence: float) -> str:
    lines = ["", f"predictions per population (Amp: the rate at which wrong protagonists are "
             f"endorsed over the log's rooms; {confidence:.0%} intervals over the fit's "
             f"parameter draws, for a new population with its shifts drawn from the shift "
             f"prior):", f"  {tab.attrs.get('shift_prior', '')}"]

    def v(r, k):
        if k not in r or not np.isfinite(r.get(k, np.nan)):
            return "n/a"
        return f"{r[k]:+.4f} [{r[k + '_lo']:+.4f}, {r[k + '_hi']:+.4f}]" if k == "gap" else \
            f"{r[k]:.4f} [{r[k + '_lo']:.4f}, {r[k + '_hi']:.4f}]"
    for _, r in tab.iterrows():
        r = r.to_dict()
        lab = r["population"] if r["prediction"] == SAME else ""
        lines.append(f"  {r['prediction']:<18} {lab:<16} consultancy Amp {v(r, 'consult_amp')}"
                     f"  debate Amp {v(r, 'debate_amp')}  gap {v(r, 'gap')}  "
                     f"Pr(gap < 0) {r['pr_gap_below_0']:.3f}")
        lines.append(f"  {'':<18} {'':<16} consultancy accuracy {v(r, 'consult_acc')}  "
                     f"debate accuracy {v(r, 'debate_acc')}")
        if r["rests_on"]:  # (a new population's: what its honest shift is, too)
            lines.append(f"    ({r['rests_on']})")
    return "\n".join(lines)


def prior_sensitivity(df: pd.DataFrame, reading: str, prior, factors=(0.5, 2.0),
                      **kw) -> pd.DataFrame:
    """The shifts refitted (same reading) with the shift prior's scales times each of
    ``factors``: rows (scale, param, value, se)."""
    from . import structural as st

    rows = []
    for k in factors:
        try:
            g = fit_named(df, reading, pop_prior=prior.scaled(k), **kw)
        except st.FitError as exc:
            rows.append({"scale": k, "param": "(fit failed)", "value": np.nan,
                         "se": np.nan, "note": str(exc)})
            continue
        for i, n in enumerate(g.names):
            if n.startswith(("delta", "honest")):
                rows.append({"scale": k, "param": n, "value": float(g.params[i]),
                             "se": float(np.sqrt(g.draw_cov()[i, i])), "note": ""})
    return pd.DataFrame(rows)


def format_sensitivity(f, sens: pd.DataFrame) -> str:
    lines = ["  sensitivity to the shift prior (the shifts refitted with its scales halved "
             "and doubled):"]
    for i, n in enumerate(f.names):
        if not n.startswith(("delta", "honest")):
            continue
        parts = [f"{f.params[i]:+.4f} ({np.sqrt(f.draw_cov()[i, i]):.4f}) at the prior's "
                 "scales"]
        for k in sorted(set(sens["scale"])):
            r = sens[(sens["scale"] == k) & (sens["param"] == n)]
            parts.append(f"{r['value'].iloc[0]:+.4f} ({r['se'].iloc[0]:.4f}) at x{k:g}"
                         if len(r) else f"(no fit) at x{k:g}")
        lines.append(f"    {n:<28} " + ", ".join(parts))
    return "\n".join(lines)


def format_params(f, confidence: float) -> list:
    """The fit's parameters, one line each: value (SE) [interval], (fixed) where fixed."""
    return [f"  {k:<24} {row['value']:8.4f} ({row['se']:.4f}) [{row['lo']:.4f}, "
            f"{row['hi']:.4f}]" + (" (fixed)" if row["se"] == 0 else "")
            for k, row in f.table(confidence).iterrows()]


def format_calibrate(f, tab: pd.DataFrame, r: dict, n_rooms: int, confidence: float) -> str:
    lines = ["", f"calibrated prediction: the judge from the fitted log, the new debaters "
             f"from {n_rooms} of the new log's rooms (joint fit, judge-clustered SEs; "
             f"reading {f.reading}; both protocols' shifts, partially pooled through "
             f"the shift prior):", f"  {tab.attrs.get('shift_prior', '')}"]
    used = tab.attrs.get("rooms_used", {})
    if used:
        lines.append("  calibration rooms used: " + ", ".join(
            f"{k} {prot}" for prot, k in used.items()))
    for prot, why in tab.attrs.get("rests_on", {}).items():
        lines.append(f"  the new debaters' {prot} shift rests on {why}")
    lines += format_params(f, confidence)
    lines.append(f"  rho (new debaters' dishonest evidence rate) {r['k']}/{r['n']} = "
                 f"{r['rho']:.4f} [{r['lo']:.4f}, {r['hi']:.4f}] (Jeffreys)")
    lines.append("  the new log's other rooms, observed against predicted:")
    for _, x in tab.iterrows():
        if x["metric"] == "gap":
            lines.append(f"  gap (consultancy minus debate Amp) observed {x['observed']:+.4f}  "
                         f"predicted {x['predicted']:+.4f} [{x['predicted_lo']:+.4f}, "
                         f"{x['predicted_hi']:+.4f}]  Pr(gap < 0) {x['pr_gap_below_0']:.3f}  "
                         f"p {x['p_value']:.3f}" + ("" if x["inside"] else "  OUTSIDE"))
            continue
        lines.append(f"  {x['protocol']:<8} {x['metric']:<4} {int(x['k']):>4}/{int(x['n']):<4} "
                     f"observed "
                     f"{x['observed']:.4f} [{x['observed_lo']:.4f}, {x['observed_hi']:.4f}]  "
                     f"predicted {x['predicted']:.4f} [{x['predicted_lo']:.4f}, "
                     f"{x['predicted_hi']:.4f}]  p {x['p_value']:.3f}"
                     + ("" if x["inside"] else "  OUTSIDE"))
    return "\n".join(lines)
