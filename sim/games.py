"""Game-theoretic pieces several models share, with public names.

- :func:`eta_range`: the feasible correlation of two senders' correctness
  indicators (Frechet bounds), for correlated signals and correlated detectors.
- :func:`zero_sum_lp`: one side of a zero-sum game between two senders with private
  types, as a linear programme (HiGHS), for evidence portfolios and strategic
  rhetoric.

The evidence game's enumeration and certificates live in :mod:`antiamp.evidence_game`,
the general fixed-point engine in :mod:`antiamp.fixedpoint`.
"""

from __future__ import annotations

import math

import numpy as np

from .lazy import lazy

optimize = lazy("scipy.optimize")


def eta_range(p_P: float, p_A: float) -> tuple[float, float]:
    """Feasible correlation of two Bernoulli indicators with means p_P, p_A.

    Pr(both correct) = p_P p_A + eta sd_P sd_A must lie in the Frechet bounds
    [max(0, p_P + p_A - 1), min(p_P, p_A)].  Degenerate margins (p = 0 or 1) leave
    only eta = 0.
    """
    sd = math.sqrt(p_P * (1 - p_P) * p_A * (1 - p_A))
    if sd == 0:
        return 0.0, 0.0
    lo = (max(0.0, p_P + p_A - 1) - p_P * p_A) / sd
    hi = (min(p_P, p_A) - p_P * p_A) / sd
    return lo, hi


def zero_sum_lp(W: np.ndarray, U: np.ndarray, allowed_row=None, allowed_col=None, size=None):
    """max over the row player's per-type mixtures of sum_types min_s (type payoff).

    ``W[k_row, k_col]`` joint type weights, ``U[s_row, s_col]`` the row player's
    (constant-sum) payoff; ``allowed_*[k, s]`` which actions each type has (default:
    s <= k, a portfolio's counts); ``size[s]`` the quantity the selection on the
    optimal face maximises (default: s).  Returns (sigma_row [K, S], value).
    """
    K = W.shape[0]
    S_r, S_c = U.shape
    if allowed_row is None:
        allowed_row = np.arange(S_r)[None, :] <= np.arange(K)[:, None]
    if allowed_col is None:
        allowed_col = np.arange(S_c)[None, :] <= np.arange(W.shape[1])[:, None]
    if size is None:
        size = np.arange(S_r, dtype=float)
    wr, wc = W.sum(axis=1), W.sum(axis=0)
    rows = [k for k in range(K) if wr[k] > 0]
    cols = [k for k in range(W.shape[1]) if wc[k] > 0]
    xi = {}
    for k in rows:
        for s in np.flatnonzero(allowed_row[k]):
            xi[k, int(s)] = len(xi)
    nx, nz = len(xi), len(cols)
    cvec = np.concatenate([np.zeros(nx), -np.ones(nz)])
    A_ub, b_ub = [], []
    for j, kc in enumerate(cols):
        for t in np.flatnonzero(allowed_col[kc]):
            row = np.zeros(nx + nz)
            for (k, s), i in xi.items():
                row[i] = -W[k, kc] / wr[k] * U[s, t]
            row[nx + j] = 1.0
            A_ub.append(row)
            b_ub.append(0.0)
    A_eq = np.zeros((len(rows), nx + nz))
    for (k, s), i in xi.items():
        A_eq[rows.index(k), i] = 1.0
    b_eq = np.array([wr[k] for k in rows])
    bounds = [(0, None)] * nx + [(None, None)] * nz
    A_ub, b_ub = np.array(A_ub), np.array(b_ub)
    res = optimize.linprog(cvec, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds,
                           method="highs")
    if res.status != 0:
        raise RuntimeError(f"linear programme failed: {res.message}")
    value = float(-res.fun)
    # Selection on the optimal face: as many items as equilibrium allows (the
    # analogue of presenting free evidence), so the report does not depend on
    # which vertex the solver happens to return.
    items = np.zeros(nx + nz)
    for (k, s), i in xi.items():
        items[i] = -size[s]
    face = np.vstack([A_ub, cvec[None, :]])
    res2 = optimize.linprog(items, A_ub=face, b_ub=np.append(b_ub, -value + 1e-12),
                            A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")
    if res2.status == 0:
        res = res2
    sig = np.zeros((K, S_r))
    for k in range(K):
        if wr[k] <= 0:  # a type of probability zero: its largest allowed action
            sig[k, np.flatnonzero(allowed_row[k]).max()] = 1.0
    for (k, s), i in xi.items():
        sig[k, s] = max(res.x[i], 0.0) / wr[k]
    # Weights at solver-tolerance level (the optimal-face slack) are rounding, not play.
    sig[sig < 1e-10] = 0.0
    sig /= sig.sum(axis=1, keepdims=True)
    return sig, value
