"""The logistic fit of effective bias and salience, Pr(y = a) = sigma(mu~ + kappa~ x)
with lambda = 1, with judge-clustered standard errors (statsmodels GLM), and the
checks that refuse a regressor or a log that does not identify it.
"""

from __future__ import annotations

import numpy as np

from ..lazy import lazy

pd = lazy("pandas")


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
    groups = judge_clusters(d["judge_id"])

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
    sep = separation(X[:, 1], endorse)
    if sep:
        # The ML estimate does not exist; Firth's penalised likelihood has a finite one
        # (Heinze and Schemper 2002), reported beside it, never in its place.
        out = refused(f"separation: {sep}, so the maximum-likelihood mu~ and kappa~ do not "
                      "exist (they run off to infinity) and kappa~ is not identified; Firth's "
                      "penalised estimates are given instead (finite, shrunk toward 0; "
                      "judge-clustered Wald SEs, which are rough under separation)")
        out.update(firth_fit(X, endorse, groups))
        return out
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
    # (Separation was checked exactly above; statsmodels' own warning also fires on a
    # saturated fit, two aggregated rows fitted exactly: one judge, binary evidence.)
    if any(issubclass(w.category, PerfectSeparationWarning) for w in caught) and not \
            np.all(np.isfinite(np.asarray(fit.params))):
        return refused("perfect separation: labels are deterministic in the evidence "
                       "(as with a tie-break judge), so kappa~ is not identified")
    # Intervals use t quantiles with G - 1 degrees of freedom (G judges): cluster-robust
    # standard errors are biased down when clusters are few (Cameron and Miller, 2015).
    corr = G / (G - 1) * (N - 1) / (N - K) if G > 1 and N > K else np.nan
    var = np.diag(np.asarray(fit.cov_params())) * corr
    if not (np.all(np.isfinite(var)) and np.all(var > 0)):
        # (a cluster covariance with a non-positive diagonal: too few judges, or one
        # judge holding every row that varies; no standard error, said, never sqrt(-v))
        out = refused(f"the judge-clustered covariance is not positive definite ({G} "
                      f"judge{'s' if G != 1 else ''}), so there are no standard errors; the "
                      "estimates are shown without them")
        out.update(mu=float(fit.params[0]), kappa=float(fit.params[1]))
        return out
    bse = np.sqrt(var)
    note = ("rows with assigned roles read the wrong debater as the protagonist, so mu~ "
            "there is the judge's lean toward the wrong answer at equal evidence, not toward "
            "a role" if "role" in d.columns and bool(((d["role"] == "assigned")
                                                      & (d["protocol"] == "debate")).any())
            else "")
    return dict(mu=float(fit.params[0]), mu_se=float(bse[0]), kappa=float(fit.params[1]),
                kappa_se=float(bse[1]), graded=graded, regressor=reg, note=note,
                df=max(G - 1, 1))


def judge_clusters(ids: pd.Series) -> np.ndarray:
    """Cluster codes 0..G-1 of the judges, numbered in the order of their sorted ids,
    so that no sum over clusters depends on the order of the log's rows."""
    try:
        return pd.factorize(ids, sort=True)[0]
    except TypeError:  # ids of several types (1 and "x"), which do not sort together
        return pd.factorize(ids.map(lambda v: (type(v).__name__, str(v))), sort=True)[0]


def separation(x: np.ndarray, y: np.ndarray) -> str:
    """Where the maximum-likelihood fit of Pr(y = 1) = sigma(b0 + b1 x) does not exist,
    what separates the labels; else "".

    With one regressor and a constant the estimate exists unless a threshold c puts
    every y = 0 at x <= c and every y = 1 at x >= c (or the reverse): complete or
    quasi-complete separation (Albert and Anderson 1984)."""
    x = np.asarray(x, float)
    y = np.asarray(y) > 0.5
    if y.all() or not y.any():
        return "the label never varies"
    x0, x1 = x[~y], x[y]
    for lo, hi, up, down in ((x0, x1, "endorsed", "rejected"), (x1, x0, "rejected", "endorsed")):
        c_lo, c_hi = lo.max(), hi.min()  # every `down` label at x <= c_lo, `up` at x >= c_hi
        if c_lo <= c_hi:
            parts = ([f"every row with x < {c_hi:g} is {down}"] if (x < c_hi).any() else []) \
                + ([f"every row with x > {c_lo:g} is {up}"] if (x > c_lo).any() else [])
            return (" and ".join(parts) + (f" (only x = {c_lo:g} has both labels)"
                                           if c_lo == c_hi else ""))
    return ""


def firth_fit(X: np.ndarray, y: np.ndarray, groups: np.ndarray, max_iter: int = 100) -> dict:
    """Firth's penalised-likelihood logistic fit (Jeffreys-prior penalty), finite under
    separation, with a judge-clustered sandwich at the estimate (bread: the inverse
    Fisher information; small-sample factor G/(G-1) (N-1)/(N-K), as the ML fit's).

    Hand-written: statsmodels has no Firth fit, and for two parameters the modified
    score iteration (Firth 1993; Heinze and Schemper 2002) is a few lines.  Rows are
    aggregated by (judge, x) as in :func:`logistic_fit`."""
    import pandas as pd_

    agg = pd_.DataFrame({"g": groups, "x": X[:, 1], "k": y}).groupby(
        ["g", "x"], sort=True)["k"].agg(["sum", "size"]).reset_index()
    n = agg["size"].to_numpy(float)
    k = agg["sum"].to_numpy(float)
    Xa = np.column_stack([np.ones(len(agg)), agg["x"].to_numpy(float)])
    beta = np.zeros(2)

    def parts(b):
        p = 1.0 / (1.0 + np.exp(-(Xa @ b)))
        w = n * p * (1 - p)
        info = Xa.T @ (w[:, None] * Xa)
        inv = np.linalg.inv(info)
        h = w * np.einsum("ij,jk,ik->i", Xa, inv, Xa)  # leverages
        return p, info, inv, h

    converged = False
    # Full steps; where they jump between two points for ever (one row at one x, all
    # endorsed, say: the iteration's map has an eigenvalue -1 there), half steps from
    # the start again, which turn that eigenvalue into 0.
    for damping, iters in ((1.0, max_iter), (0.5, 20 * max_iter)):
        beta = np.zeros(2)
        for _ in range(iters):
            p, info, inv, h = parts(beta)
            score = Xa.T @ (k - n * p + h * (0.5 - p))
            step = inv @ score
            shrink = damping * min(1.0, 5.0 / max(np.abs(step).max(), 1e-300))  # at most 5
            beta = beta + shrink * step
            if np.abs(step).max() < 1e-10:
                converged = True
                break
        if converged:
            break
    p, info, inv, _ = parts(beta)
    G, N = int(groups.max()) + 1, len(y)
    U = np.zeros((G, 2))
    np.add.at(U, agg["g"].to_numpy(), Xa * (k - n * p)[:, None])
    corr = G / (G - 1) * (N - 1) / (N - 2) if G > 1 and N > 2 else np.nan
    var = np.diag(inv @ (U.T @ U) @ inv) * corr
    se = np.sqrt(var) if np.all(np.isfinite(var)) and np.all(var > 0) else np.full(2, np.nan)
    if not converged:
        return {"firth_mu": np.nan, "firth_kappa": np.nan, "firth_mu_se": np.nan,
                "firth_kappa_se": np.nan}
    return {"firth_mu": float(beta[0]), "firth_kappa": float(beta[1]),
            "firth_mu_se": float(se[0]), "firth_kappa_se": float(se[1])}
