"""Adaptive Gauss-Kronrod quadrature of vectorised integrands, with its error estimate.

Written here because SciPy's adaptive integrators (``quad``, ``quad_vec``) call the
integrand at one point at a time, and the models' integrands are NumPy expressions
over many nodes at once (a Python call per point costs more than the arithmetic);
``scipy.integrate.tanhsinh`` is vectorised but refines the whole interval level by
level, and does not home in on a step far narrower than the interval.  This is
QUADPACK's 15-point Kronrod / 7-point Gauss pair (the constants of ``qk15``) with
bisection of every interval whose estimate misses its share of the tolerance,
evaluating all the intervals of a level in one call.
"""

from __future__ import annotations

import numpy as np

# QUADPACK qk15: Kronrod abscissae (descending, the last is the centre) and weights;
# the Gauss weights of the 7-point rule on abscissae 1, 3, 5 and the centre.
_XGK = np.array([0.991455371120812639206854697526329, 0.949107912342758524526189684047851,
                 0.864864423359769072789712788640926, 0.741531185599394439863864773280788,
                 0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
                 0.207784955007898467600689403773245, 0.0])
_WGK = np.array([0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
                 0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
                 0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
                 0.204432940075298892414161999234649, 0.209482141084727828012999174891714])
_WG = np.array([0.129484966168869693270611432679082, 0.279705391489276667901467771423780,
                0.381830050505118944950369775488975, 0.417959183673469387755102040816327])
#: The 15 nodes on [-1, 1] and their Kronrod and Gauss weights (0 off the Gauss nodes).
NODES = np.concatenate([-_XGK[:-1], _XGK[::-1]])
W_KRONROD = np.concatenate([_WGK[:-1], _WGK[::-1]])
_g = np.zeros(8)
_g[[1, 3, 5, 7]] = _WG
W_GAUSS = np.concatenate([_g[:-1], _g[::-1]])


#: Levels of geometric grading toward each given point (down to (b - a) 2^-52).
GRADING = 52
#: Equal intervals the whole range starts with (besides the graded ones).
INITIAL = 16


def _rules(f, lo: np.ndarray, hi: np.ndarray) -> tuple:
    """(Kronrod, Gauss) estimates [components, intervals] of every interval at once,
    and whether ``f`` returns one component (a 1-D array)."""
    mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    x = mid[:, None] + half[:, None] * NODES[None, :]
    v = np.asarray(f(x.ravel()), dtype=float)
    scalar = v.ndim == 1
    v = v.reshape(-1, lo.size, NODES.size)
    return (v @ W_KRONROD) * half, (v @ W_GAUSS) * half, scalar


def integrate(f, a: float, b: float, *, points=(), atol: float = 1e-14, rtol: float = 1e-12,
              max_intervals: int = 100_000) -> tuple:
    """The integrals over [a, b] of the components of ``f`` and an error estimate.

    ``f(x)``: x a 1-D array of nodes; returns an array [components, len(x)] (or
    [len(x)] for one component).  ``points``: where the integrand steps, however
    narrowly (the intervals start graded geometrically toward each, besides
    :data:`INITIAL` equal ones).  An interval is accepted when its Kronrod and Gauss
    estimates differ, in every component, by at most its share (by length) of
    ``max(atol, rtol * largest |integral|)``; others are halved, up to
    ``max_intervals`` intervals in all (then the rest are accepted as they are and
    their differences counted in the estimate).

    Returns (integrals [components] (a float for one component), error): ``error``
    is the sum over intervals of the largest |Kronrod - Gauss| difference.  It is an
    estimate, not a bound: a feature narrower than the gap between two nodes, away
    from the ``points`` given, can hide from both rules (as from any quadrature); for
    smooth integrands it overstates the error of the Kronrod value returned by far.
    """
    # Edges graded geometrically toward every step (p +- (b - a) 2^-j): a step far
    # narrower than an interval, at its end, falls between the end and the first node,
    # where neither rule sees it; graded, some interval is about as wide as the step.
    pts = np.asarray([p for p in points if a < p < b], dtype=float)
    grade = (b - a) * 2.0 ** -np.arange(1, GRADING + 1)
    edges = np.concatenate([[a, b], pts, (pts[:, None] + grade).ravel(),
                            (pts[:, None] - grade).ravel(), np.linspace(a, b, INITIAL + 1)])
    edges = np.unique(np.clip(edges, a, b))
    lo, hi = edges[:-1], edges[1:]
    total, err, scalar, tol = None, 0.0, False, None
    n_intervals = lo.size
    while lo.size:
        k, g, one = _rules(f, lo, hi)
        if total is None:
            scalar = one
            total = np.zeros(k.shape[0])
            tol = max(atol, rtol * float(np.max(np.abs(k.sum(axis=1)), initial=0.0)))
        diff = np.max(np.abs(k - g), axis=0)
        ok = diff <= tol * (hi - lo) / (b - a)
        if n_intervals + int((~ok).sum()) > max_intervals:
            ok[:] = True
        total += k[:, ok].sum(axis=1)
        err += float(diff[ok].sum())
        lo, hi = lo[~ok], hi[~ok]
        mid = 0.5 * (lo + hi)
        lo, hi = np.concatenate([lo, mid]), np.concatenate([mid, hi])
        n_intervals += lo.size // 2
    return (float(total[0]) if scalar else total), err
