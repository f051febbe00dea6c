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

import functools
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
    # A row per (column type kc, its action t): z_j <= sum_i x_i (-W[k_i, kc] / wr[k_i])
    # U[s_i, t], built as arrays (elementwise, the same bits as entry by entry).
    pairs = [(j, kc, int(t)) for j, kc in enumerate(cols) for t in np.flatnonzero(allowed_col[kc])]
    pj, pk, pt = (np.array([p[q] for p in pairs], dtype=int) for q in range(3))
    xk, xs = (np.array([ks[q] for ks in xi], dtype=int) for q in range(2))
    A_ub = np.zeros((len(pairs), nx + nz))
    if len(pairs) and nx:
        A_ub[:, :nx] = (-W[xk[:, None], pk[None, :]] / wr[xk][:, None]
                        * U[xs[:, None], pt[None, :]]).T
    A_ub[np.arange(len(pairs)), nx + pj] = 1.0
    b_ub = np.zeros(len(pairs))
    A_eq = np.zeros((len(rows), nx + nz))
    for (k, s), i in xi.items():
        A_eq[rows.index(k), i] = 1.0
    b_eq = np.array([wr[k] for k in rows])
    bounds = [(0, None)] * nx + [(None, None)] * nz
    lb = np.concatenate([np.zeros(nx), np.full(nz, -np.inf)])
    res = _linprog(cvec, A_ub, b_ub, A_eq, b_eq, lb, bounds)
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
    res2 = _linprog(items, face, np.append(b_ub, -value + 1e-12), A_eq, b_eq, lb, bounds)
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


#: scipy's HiGHS binding and the options ``linprog(method="highs")`` passes it, built once
#: (see :func:`_linprog`); None where this scipy has no such binding.
_HIGHS: dict | None = None


def _highs():
    global _HIGHS
    if _HIGHS is None:
        try:
            from scipy.optimize._highspy import _core as h

            opts = h.HighsOptions()
            # What scipy.optimize._linprog_highs sets for method="highs" by default.
            opts.presolve = "on"
            opts.highs_debug_level = h.HighsDebugLevel.kHighsDebugLevelNone
            opts.log_to_console = False
            opts.output_flag = False
            opts.simplex_strategy = h.simplex_constants.SimplexStrategy.kSimplexStrategyDual
            # every name :func:`_linprog` uses, so that another binding falls back here
            for name in ("HighsLp", "_Highs", "MatrixFormat.kColwise", "HighsStatus.kError",
                         "HighsModelStatus.kOptimal"):
                functools.reduce(getattr, name.split("."), h)
            _HIGHS = {"h": h, "settings": opts}
        except (ImportError, AttributeError, TypeError):
            _HIGHS = {}
    return _HIGHS


class _Result:
    __slots__ = ("status", "message", "x", "fun")

    def __init__(self, status, message, x=None, fun=None):
        self.status, self.message, self.x, self.fun = status, message, x, fun


def _linprog(c, A_ub, b_ub, A_eq, b_eq, lb, bounds, tol: float = 1e-9):
    """``scipy.optimize.linprog(c, A_ub, b_ub, A_eq, b_eq, bounds, method="highs")`` on
    dense arrays, the variables' upper bounds infinite (``lb`` their lower bounds):
    the same HiGHS model, options and acceptance test (``_check_result``), so the same
    solution to the bit, without linprog's per-call work.

    Written by hand, through scipy's own HiGHS binding (``scipy.optimize._highspy``,
    private): ``linprog`` validates its inputs and HiGHS options and builds sparse
    matrices and a full result (marginals, a Python loop over the columns) on every call,
    about 2 ms of CPU against about 0.4 ms in HiGHS for a portfolio's programmes, several
    of them a grid cell.  Where the binding is missing or differs (another scipy),
    ``linprog`` itself runs."""
    hs = _highs()
    if not hs:
        return optimize.linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds,
                                method="highs")
    h = hs["h"]
    c = np.asarray(c, float)
    A = np.vstack((A_ub, A_eq)).astype(float, copy=False)
    n_ub = len(b_ub)
    lhs = np.concatenate((np.full(n_ub, -np.inf), b_eq)).astype(float)
    rhs = np.concatenate((b_ub, b_eq)).astype(float)
    m, n = A.shape
    # Column-wise (CSC) storage of A's nonzeros, rows sorted within a column: what
    # scipy.sparse.csc_array(A) holds.
    cols, rows = np.nonzero(A.T)
    lp = h.HighsLp()
    lp.num_col_, lp.num_row_ = n, m
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, m
    lp.a_matrix_.format_ = h.MatrixFormat.kColwise
    lp.col_cost_ = c
    lp.col_lower_ = np.asarray(lb, float)
    lp.col_upper_ = np.full(n, np.inf)
    lp.row_lower_ = lhs
    lp.row_upper_ = rhs
    lp.a_matrix_.start_ = np.concatenate(([0], np.cumsum(np.bincount(cols, minlength=n)))
                                         ).astype(np.int32)
    lp.a_matrix_.index_ = rows.astype(np.int32)
    lp.a_matrix_.value_ = A[rows, cols]
    highs = h._Highs()
    if (highs.passOptions(hs["settings"]) == h.HighsStatus.kError
            or highs.passModel(lp) == h.HighsStatus.kError
            or highs.run() == h.HighsStatus.kError):
        return _Result(4, "HiGHS reported an error")
    status = highs.getModelStatus()
    if status != h.HighsModelStatus.kOptimal:
        return _Result(2, f"HiGHS: {highs.modelStatusToString(status)}")
    sol = highs.getSolution()
    x = np.array(sol.col_value)
    fun = highs.getInfo().objective_function_value
    # linprog's acceptance test (scipy.optimize._linprog_util._check_result)
    slack = rhs - np.asarray(sol.row_value)
    t = np.sqrt(tol) * 10
    if (np.isnan(x).any() or np.isnan(fun) or np.isnan(slack).any()
            or not np.all(x >= np.asarray(lb, float) - t)
            or (slack[:n_ub] < -t).any() or (np.abs(slack[n_ub:]) > t).any()):
        return _Result(4, "the solution does not satisfy the constraints within "
                          f"{t:.2E}")
    return _Result(0, "optimal", x, fun)
