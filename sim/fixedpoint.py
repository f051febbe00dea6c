"""A general fixed-point engine for equilibria of binary-action sender types.

A profile is a vector ``x`` of action probabilities, one per sender type (the
probability of the "present" action).  A game is given by its *gain map*
``gain(x)[i]`` = payoff of presenting minus payoff of withholding for type ``i``
against the profile ``x`` (from closed forms or from simulation-kernel
statistics; with common random numbers the simulated map is deterministic).
``x`` is an equilibrium when every type puts weight only on its best actions:

    x_i = 1 if gain_i > 0,  x_i = 0 if gain_i < 0,  x_i in [0, 1] if gain_i = 0.

Methods, each from several starts: damped best-response iteration, the logit
quantal-response homotopy (x = sigma(lam gain(x)) followed from small lam to
large), and scipy root finding on the projection equation x = clip(x + gain(x)).
Each candidate is then polished (indifference conditions solved on its support)
and kept only if its deviation gain is below tolerance.  The engine knows
nothing of the baseline model; later models reuse it with their own gain maps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from .lazy import lazy
optimize = lazy("scipy.optimize")
special = lazy("scipy.special")

Gain = Callable[[np.ndarray], np.ndarray]


@dataclass
class Result:
    """Equilibria found by the general methods, with what each method did."""

    profiles: list = field(default_factory=list)
    epsilons: list = field(default_factory=list)
    report: list = field(default_factory=list)  # (method, start, status) per run


def deviation_gain(gain: Gain, x: np.ndarray) -> float:
    """Largest gain of a unilateral deviation to a pure action, over types."""
    g = np.asarray(gain(x), dtype=float)
    return float(np.max(np.maximum(g, 0.0) - x * g))


def best_response(g: np.ndarray) -> np.ndarray:
    return (g > 0).astype(float) + 0.5 * (g == 0)


def damped_best_response(gain: Gain, x0, tol=1e-9, max_iter=2_000):
    """x <- x + (BR(x) - x) / (t + 2): fictitious-play-like damping, which settles
    on stable equilibria (pure ones exactly, mixed ones at rate 1/t before polishing)."""
    x = np.array(x0, dtype=float)
    for t in range(max_iter):
        x_new = x + (best_response(np.asarray(gain(x))) - x) / (t + 2.0)
        if np.max(np.abs(x_new - x)) < tol:
            return x_new, True
        x = x_new
    return x, False


def damped_best_response_rows(gain_rows, X0, tol=1e-9, max_iter=2_000):
    """:func:`damped_best_response` from every row of ``X0`` at once: ``gain_rows(X)``
    maps profiles [S, k] to their gains [S, k].  Each row follows its own iteration
    (the same operations, so the same bits) and stops when its own step is below
    ``tol``; returns the profiles [S, k] and whether each converged."""
    x = np.array(X0, dtype=float)
    ok = np.zeros(len(x), bool)
    live = np.arange(len(x))
    for t in range(max_iter):
        if not live.size:
            break
        xl = x[live]
        x_new = xl + (best_response(np.asarray(gain_rows(xl))) - xl) / (t + 2.0)
        done = np.max(np.abs(x_new - xl), axis=1) < tol
        x[live] = x_new
        ok[live[done]] = True
        live = live[~done]
    return x, ok


def qre_homotopy(gain: Gain, x0=None, lam_min=0.01, lam_max=1e6, steps=120):
    """Follow the logit quantal-response branch x = sigma(lam gain(x)) from lam_min to lam_max."""
    k = len(np.asarray(gain(np.full(1 if x0 is None else len(x0), 0.5))))
    x = np.full(k, 0.5) if x0 is None else np.array(x0, dtype=float)
    ok = True
    for lam in np.geomspace(lam_min, lam_max, steps):
        def f(z, lam=lam):
            return z - special.expit(lam * np.asarray(gain(z)))

        sol = optimize.root(f, x, method="hybr")
        if not sol.success:
            ok = False
            break
        x = np.clip(sol.x, 0.0, 1.0)
    return x, ok


def projection_root(gain: Gain, x0):
    """Solve x = clip(x + gain(x), 0, 1) (the box-constrained complementarity form)."""
    def f(z):
        return z - np.clip(z + np.asarray(gain(z)), 0.0, 1.0)

    sol = optimize.root(f, np.asarray(x0, dtype=float), method="lm")
    return np.clip(sol.x, 0.0, 1.0), bool(sol.success)


def _solve_support(gain: Gain, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Solve gain_i(x) = 0 for the types in ``idx``, the others held fixed."""
    x = x.copy()
    if idx.size:
        def f(z):
            y = x.copy()
            y[idx] = z
            return np.asarray(gain(y))[idx]

        sol = optimize.root(f, x[idx], method="hybr")
        if sol.success and np.all((sol.x >= -1e-12) & (sol.x <= 1 + 1e-12)):
            x[idx] = np.clip(sol.x, 0.0, 1.0)
    return x


def polish(gain: Gain, x: np.ndarray, strict=1e-7, rounds=4, interior=1e-4):
    """Refine an approximate equilibrium: try the support suggested by the profile
    (types strictly inside (0, 1) are indifferent) and the one suggested by the
    gains (types with a strict preference take their best action); keep the
    refinement with the smaller deviation gain."""
    x0 = np.clip(np.array(x, dtype=float), 0.0, 1.0)
    inside = (x0 > interior) & (x0 < 1 - interior)
    by_profile = np.where(inside, x0, np.round(x0))
    by_profile = _solve_support(gain, by_profile, np.flatnonzero(inside))
    by_gain = _polish_by_gain(gain, x0, strict, rounds)
    return min((by_profile, by_gain), key=lambda y: deviation_gain(gain, y))


def _polish_by_gain(gain: Gain, x: np.ndarray, strict, rounds):
    x = x.copy()
    for _ in range(rounds):
        g = np.asarray(gain(x), dtype=float)
        x_new = x.copy()
        x_new[g > strict] = 1.0
        x_new[g < -strict] = 0.0
        x_new = _solve_support(gain, x_new, np.flatnonzero(np.abs(g) <= strict))
        if np.array_equal(x_new, x):
            break
        x = x_new
    return x


def starts(k: int, n: int) -> np.ndarray:
    """``n`` starting profiles for ``k`` types: corners, the centre, then a Halton fill."""
    from scipy.stats import qmc

    pts = [np.full(k, 0.5)]
    corners = np.array(np.meshgrid(*[[0.0, 1.0]] * k, indexing="ij")).reshape(k, -1).T
    pts += list(corners)
    if n > len(pts):
        pts += list(qmc.Halton(d=k, seed=0).random(n - len(pts)))
    return np.array(pts[:n])


def solve_general(gain: Gain, k: int, methods=("br", "qre", "root"), n_starts=9,
                  tol=1e-9, max_iter=2_000, gain_rows=None) -> Result:
    """Equilibria of the gain map by the general methods; duplicates merged.

    ``gain_rows``, optional: the same map on many profiles at once ([S, k] -> [S, k]);
    damped best response then runs its starts together (the same iterates)."""
    res = Result()
    for method in methods:
        X0 = starts(k, n_starts)
        if method == "br" and gain_rows is not None:
            batch = damped_best_response_rows(gain_rows, X0, tol=1e-12, max_iter=max_iter)
        for s, x0 in enumerate(X0):
            if method == "br" and gain_rows is not None:
                x, ok = batch[0][s], bool(batch[1][s])
            elif method == "br":
                x, ok = damped_best_response(gain, x0, tol=1e-12, max_iter=max_iter)
            elif method == "qre":
                x, ok = qre_homotopy(gain, x0)
            elif method == "root":
                x, ok = projection_root(gain, x0)
            else:
                raise ValueError(f"unknown method {method!r}; use br, qre or root")
            x = polish(gain, x)
            eps = deviation_gain(gain, x)
            if eps > tol:
                res.report.append((method, s, f"no equilibrium reached (deviation gain {eps:.3g})"))
                continue
            res.report.append((method, s, "converged" if ok else "converged after polishing"))
            if not any(np.max(np.abs(x - y)) < 1e-7 for y in res.profiles):
                res.profiles.append(x)
                res.epsilons.append(eps)
    return res
