"""Means, covariance and delta-method standard errors from kernel moment sums; the
rule that decides whether a fit's information identifies its parameters.

Kernels whose metrics are ratios of several per-instance sums (precision, F1, Amp
given a subset) add, per block of instances, the per-instance vector y and its outer
product y y^T.  The metrics are then smooth functions of the mean of y, and their
standard errors follow by the delta method.  No library takes a function of a mean
vector with its sample covariance at this size (statsmodels' delta method wants a
fitted model), so the few lines are written here, once, for every model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def mean_cov(s1: np.ndarray, s2: np.ndarray, n: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean vector and per-instance covariance from per-block sums (blocks, L) and
    (blocks, L, L), added in block order (the result does not depend on scheduling)."""
    S1, S2 = s1.sum(axis=0), s2.sum(axis=0)
    m = S1 / n
    return m, (S2 / n - np.outer(m, m)) * n / (n - 1)


def delta_method(fn, m: np.ndarray, cov: np.ndarray, n: float, rel_step: float = 1e-6,
                 rows=None) -> dict:
    """Standard errors of every value of ``fn(m)`` (a dict of arrays) by the delta
    method, its gradient by central differences in each mean.

    ``rows``, if given, is ``fn`` of many mean vectors at once (rows [K, L] ->
    ``{name: [K, ...]}``, the same floats as ``fn`` row by row): the 2 L shifted means
    are then evaluated in one call, not 2 L calls of ``fn`` (a model whose metrics are a
    few lines of arithmetic spends most of a cell in those calls otherwise); the
    standard errors are the same floats."""
    if rows is not None:
        return _delta_rows(rows, m, cov, n, rel_step)
    base = fn(m)
    grads = {k: np.zeros((np.size(v), len(m))) for k, v in base.items()}
    for i in range(len(m)):
        h = rel_step * max(abs(m[i]), 1e-3)
        up, dn = m.copy(), m.copy()
        up[i] += h
        dn[i] -= h
        fu, fd = fn(up), fn(dn)
        for k in base:
            grads[k][:, i] = (np.ravel(fu[k]) - np.ravel(fd[k])) / (2 * h)
    return _ses(grads, cov, n)


def _delta_rows(rows, m: np.ndarray, cov: np.ndarray, n: float, rel_step: float) -> dict:
    """:func:`delta_method` with ``fn`` of many rows: the same steps, differences and
    quotients, elementwise."""
    L = len(m)
    h = np.array([rel_step * max(abs(m[i]), 1e-3) for i in range(L)])
    shifted = np.repeat(np.asarray(m, np.float64)[None, :], 2 * L, axis=0)
    i = np.arange(L)
    shifted[i, i] += h  # rows 0 .. L-1: mean i up by h_i; rows L .. 2L-1: down
    shifted[L + i, i] -= h
    grads = {}
    for k, v in rows(shifted).items():
        v = np.asarray(v, np.float64).reshape(2 * L, -1)
        # C order, as delta_method's own: einsum then sums in the same order
        grads[k] = np.ascontiguousarray(((v[:L] - v[L:]) / (2 * h)[:, None]).T)
    return _ses(grads, cov, n)


def _ses(grads: dict, cov: np.ndarray, n: float) -> dict:
    return {k: np.sqrt(np.maximum(np.einsum("pi,ij,pj->p", g, cov, g), 0.0) / n)
            for k, g in grads.items()}


def estimates(fn, s1: np.ndarray, s2: np.ndarray, n: float, rows=None) -> dict:
    """``{name: (values, standard errors)}`` of ``fn`` at the simulated mean
    (``rows``: as :func:`delta_method`'s)."""
    m, cov = mean_cov(s1, s2, n)
    vals, ses = fn(m), delta_method(fn, m, cov, n, rows=rows)
    return {k: (np.atleast_1d(vals[k]), ses[k]) for k in vals}


# ------------------------------------------------------------------ identification
#: The rule that decides whether a log identifies a fit: the smallest eigenvalue of the
#: rows' information matrix (the outer product of the per-row scores, Rothenberg 1971)
#: scaled to unit diagonal, the reciprocal of the largest variance inflation.  Below
#: this the rows carry less than 1e-8 of the information they hold about the
#: parameters one at a time about some combination of them (an SE 1e4 times its
#: one-at-a-time value): not identified.  Centred-difference scores are accurate to
#: about 1e-10 relative, so an exactly flat combination comes out near 1e-20; every
#: identified fit of the tests has it above 1e-5.  Scaled, the rule does not depend on
#: the log's size or the parameters' units; far from both, it does not move with a few
#: ulps of rounding (a CPU's BLAS kernels).
IDENT_TOL = 1e-8


@dataclass
class Identification:
    """The rule's verdict: ``lam`` the smallest eigenvalue of the scaled information,
    ``direction`` its eigenvector (the flattest combination of the parameters)."""

    identified: bool
    lam: float
    direction: np.ndarray

    def describe(self, names) -> str:
        v = self.direction
        top = np.argsort(-np.abs(v))[:3]
        comb = " ".join(f"{'+' if v[i] >= 0 else '-'} {abs(v[i]):.2f} {names[i]}"
                        for i in top if abs(v[i]) >= 0.05)
        return (f"flattest combination {comb.lstrip('+ ')}: information {self.lam:.1e} of "
                f"its parts, below {IDENT_TOL:g}")


def information_rule(J: np.ndarray, tol: float = IDENT_TOL) -> Identification:
    """Decide identification from an information matrix ``J`` (symmetric, positive
    semi-definite): scaled to unit diagonal, its smallest eigenvalue against ``tol``.
    A parameter with no information at all (a zero diagonal, or below 1e-16 of the
    largest: rounding) is not identified either."""
    J = (np.asarray(J, float) + np.asarray(J, float).T) / 2
    dg = np.diag(J).copy()
    top = dg.max() if len(dg) else 0.0
    if not np.all(np.isfinite(J)) or top <= 0:
        return Identification(False, 0.0, np.ones(len(dg)) / np.sqrt(max(len(dg), 1)))
    empty = dg <= 1e-16 * top
    if empty.any():
        v = np.zeros(len(dg))
        v[np.argmax(empty)] = 1.0
        return Identification(False, 0.0, v)
    r = 1.0 / np.sqrt(dg)
    lam, vec = np.linalg.eigh(J * np.outer(r, r))
    return Identification(bool(lam[0] >= tol), float(lam[0]), vec[:, 0])
