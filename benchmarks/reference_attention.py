"""Reference for the attention benchmark: the judge-attention equilibrium solved one
cell at a time with nested scalar solvers (scipy's ``brentq`` for the fixed point
t = t_BR(x*(t)), bounded ``minimize_scalar`` for each best response), as antiamp
did before its batched solver and as one would write it by hand.

Kept here, outside the package, only as the benchmark's reference: the same
model (antiamp's judge tables, sender-equilibrium enumeration and certificates)
and the same algorithm as :mod:`antiamp.models.signals.effort`, one cell and one scalar at a
time.  Not used by antiamp itself.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

from antiamp.models.signals import effort as ef
from antiamp.models.signals import core as sg


def _equilibria(cm, t, tol):
    t = np.atleast_1d(t)
    Jc, Jd, v = ef.tables_at(cm.effort, cm.judge, cm.protocol, t)
    G = sg.gains(np.broadcast_to(cm.weights, (len(t), 32)), Jc, Jd, v, np.full(len(t), cm.c_e))
    return sg.enumerate_equilibria(G, tol * 1e-3)


def _utility(cm, prof, t, protocol):
    t = np.atleast_1d(np.asarray(t, float))
    Jc, Jd, v = ef.tables_at(cm.effort, cm.judge, cm.protocol, t)
    acc = sg.accuracy(np.broadcast_to(cm.weights, (len(t), 32)), prof, Jc, Jd, v, protocol)
    return acc - ef.cost(cm.effort, t, protocol)


def _best(cm, prof, protocol, grid, refine=True):
    N, T = len(prof.x_P), len(grid)
    rep = sg.Profile(*(np.repeat(x, T, 0) for x in (prof.x_Pc, prof.x_P, prof.x_A)))
    U = _utility(cm, rep, np.tile(grid, N), protocol).reshape(N, T)
    j = U.argmax(axis=1)
    t_br, u_br = grid[j].astype(float), U[np.arange(N), j]
    if not refine:
        return t_br, u_br
    for i in range(N):
        lo, hi = grid[max(j[i] - 1, 0)], grid[min(j[i] + 1, T - 1)]
        one = sg.Profile(prof.x_Pc[i:i + 1], prof.x_P[i:i + 1], prof.x_A[i:i + 1])
        r = optimize.minimize_scalar(lambda s: -_utility(cm, one, [s], protocol)[0],
                                     bounds=(lo, hi), method="bounded", options={"xatol": 1e-11})
        if -r.fun > u_br[i]:
            t_br[i], u_br[i] = float(r.x), float(-r.fun)
    return t_br, u_br


def _certify(cm, t, pr, protocol, grid):
    prof = ef._profile_rows([pr], protocol)
    u_here = _utility(cm, prof, [t], protocol)[0]
    _, u_best = _best(cm, prof, protocol, grid, True)
    Jc, Jd, v = ef.tables_at(cm.effort, cm.judge, cm.protocol, [t])
    eps_s = sg.certificate(cm.weights[None], prof, Jc, Jd, v, np.array([cm.c_e]))[0, protocol]
    return max(0.0, float(u_best[0] - u_here)), float(eps_s)


def _mix(cm, z, lo_pr, hi_pr, protocol, grid):
    if ef._same(lo_pr, hi_pr):
        return None

    def blend(lam):
        if isinstance(lo_pr, tuple):
            return tuple((1 - lam) * a + lam * b for a, b in zip(lo_pr, hi_pr))
        return (1 - lam) * lo_pr + lam * hi_pr

    def g(lam):
        return _best(cm, ef._profile_rows([blend(lam)], protocol), protocol, grid, True)[0][0] - z

    g0, g1 = g(0.0), g(1.0)
    if g0 * g1 > 0:
        return None
    lam = optimize.brentq(g, 0.0, 1.0, xtol=1e-14) if g0 * g1 < 0 else (0.0 if g0 == 0 else 1.0)
    return blend(lam)


def solve_cell(cm, tol=1e-9):
    """Joint (attention, senders) equilibria of one cell with free attention, both
    protocols: a list of (protocol, t, profile)."""
    e = cm.effort
    grid = np.linspace(0.0, e.t_max, e.n_grid)
    cons, deb = _equilibria(cm, grid, tol)
    out = []
    for protocol, per_t in ((0, cons), (1, deb)):
        rows = [(k, pr) for k, lst in enumerate(per_t) for pr in lst]
        prof = ef._profile_rows([pr for _, pr in rows], protocol)
        ks = np.array([k for k, _ in rows])
        t_br, u_br = _best(cm, prof, protocol, grid, False)
        u_here = _utility(cm, prof, grid[ks], protocol)
        unique = np.array([len(lst) == 1 for lst in per_t])
        coarse = np.full(len(grid), np.nan)
        for i, (k, _) in enumerate(rows):
            if unique[k]:
                coarse[k] = t_br[i] - grid[k]
        step = grid[1] - grid[0]
        cands, fine = [], {}

        def h_at(z, ref=None):
            lst = _equilibria(cm, [z], tol)[protocol][0]
            if len(lst) != 1:
                lst = [min(lst, key=lambda pr: ef._dist(pr, ref))]
            tb, _ = _best(cm, ef._profile_rows([lst[0]], protocol), protocol, grid, True)
            return tb[0] - z, lst[0]

        for k in range(len(grid)):
            if not unique[k]:
                cands += [(grid[k], pr) for i, (kk, pr) in enumerate(rows)
                          if kk == k and u_br[i] - u_here[i] <= tol]
                continue
            near = abs(coarse[k]) <= 2.5 * step
            cross = k + 1 < len(grid) and unique[k + 1] and coarse[k] * coarse[k + 1] <= 0
            if near or cross:
                for kk in (k, k + 1):
                    if kk < len(grid) and unique[kk] and kk not in fine:
                        fine[kk] = h_at(grid[kk])[0]
        for k in sorted(fine):
            if abs(fine[k]) <= 1e-12:
                cands.append((grid[k], per_t[k][0]))
            elif k + 1 in fine and fine[k] * fine[k + 1] < 0:
                lo_pr, hi_pr = per_t[k][0], per_t[k + 1][0]
                z = optimize.brentq(lambda q: h_at(q, lo_pr)[0], grid[k], grid[k + 1], xtol=1e-14)
                cands.append((z, h_at(z, lo_pr)[1]))
                lo_z = h_at(max(grid[k], z - 1e-9), lo_pr)[1]
                hi_z = h_at(min(grid[k + 1], z + 1e-9), hi_pr)[1]
                mix = _mix(cm, z, lo_z, hi_z, protocol, grid)
                if mix is not None:
                    cands.append((z, mix))
        for s, pr in cands:
            eps_j, eps_s = _certify(cm, s, pr, protocol, grid)
            if eps_j <= tol and eps_s <= tol and not any(
                    q == protocol and abs(s - t) < 1e-7 and ef._same(pr, f) for q, t, f in out):
                out.append((protocol, float(s), pr))
    return out
