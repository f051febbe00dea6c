"""Means, covariance and delta-method standard errors from kernel moment sums.

Kernels whose metrics are ratios of several per-instance sums (precision, F1, Amp
given a subset) add, per block of instances, the per-instance vector y and its outer
product y y^T.  The metrics are then smooth functions of the mean of y, and their
standard errors follow by the delta method.  No library takes a function of a mean
vector with its sample covariance at this size (statsmodels' delta method wants a
fitted model), so the few lines are written here, once, for every model.
"""

from __future__ import annotations

import numpy as np


def mean_cov(s1: np.ndarray, s2: np.ndarray, n: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean vector and per-instance covariance from per-block sums (blocks, L) and
    (blocks, L, L), added in block order (the result does not depend on scheduling)."""
    S1, S2 = s1.sum(axis=0), s2.sum(axis=0)
    m = S1 / n
    return m, (S2 / n - np.outer(m, m)) * n / (n - 1)


def delta_method(fn, m: np.ndarray, cov: np.ndarray, n: float, rel_step: float = 1e-6) -> dict:
    """Standard errors of every value of ``fn(m)`` (a dict of arrays) by the delta
    method, its gradient by central differences in each mean."""
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
    return {k: np.sqrt(np.maximum(np.einsum("pi,ij,pj->p", g, cov, g), 0.0) / n)
            for k, g in grads.items()}


def estimates(fn, s1: np.ndarray, s2: np.ndarray, n: float) -> dict:
    """``{name: (values, standard errors)}`` of ``fn`` at the simulated mean."""
    m, cov = mean_cov(s1, s2, n)
    vals, ses = fn(m), delta_method(fn, m, cov, n)
    return {k: (np.atleast_1d(vals[k]), ses[k]) for k in vals}
