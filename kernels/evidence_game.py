"""Compiled support enumeration and certificates for the evidence-presentation game.

Per cell, the debate game's gains are affine: gain_P(x_A) = g0P + g1P x_A and
gain_A(x_P) = g0A + g1A x_P (sim.equilibrium derives the coefficients).  The
enumeration walks the 13 candidate profiles (4 pure, 1 interior, 8 end points of
equilibrium segments in degenerate games), keeps the best responses and merges
duplicates.  The certificate walks the chance tree instead (independently of
the affine coefficients) and returns each profile's largest deviation gain.
"""

from __future__ import annotations

import numba as nb
import numpy as np

PURE, MIXED, SEGMENT = 0, 1, 2
MAX_EQ = 13


@nb.njit(inline="always", cache=True)
def _is_br(x, g, tol):
    if x >= 1.0:
        return g >= -tol
    if x <= 0.0:
        return g <= tol
    return abs(g) <= tol


@nb.njit(cache=True)
def enumerate_debate_cells(g0P, g1P, g0A, g1A, tol):
    """Extreme equilibria of each cell: (x_P, x_A, kind, count), padded with NaN / -1."""
    C = g0P.shape[0]
    xp_out = np.full((C, MAX_EQ), np.nan)
    xa_out = np.full((C, MAX_EQ), np.nan)
    kind_out = np.full((C, MAX_EQ), -1, np.int8)
    count = np.zeros(C, np.int64)
    cp = np.empty(MAX_EQ)
    ca = np.empty(MAX_EQ)
    ck = np.empty(MAX_EQ, np.int8)
    for i in range(C):
        a0, a1, b0, b1 = g0P[i], g1P[i], g0A[i], g1A[i]
        m = 0
        for xp in (0.0, 1.0):  # pure profiles
            for xa in (0.0, 1.0):
                cp[m], ca[m], ck[m] = xp, xa, PURE
                m += 1
        if a1 != 0.0 and b1 != 0.0:  # interior: both indifferent
            xa_s, xp_s = -a0 / a1, -b0 / b1
            if 0.0 < xa_s < 1.0 and 0.0 < xp_s < 1.0:
                cp[m], ca[m], ck[m] = xp_s, xa_s, MIXED
                m += 1
        for who in range(2):  # segments: one sender indifferent against a pure action
            for pure in (0.0, 1.0):
                if who == 0:
                    indiff = abs(a0 + a1 * pure) <= tol
                    h0, h1 = b0, b1
                else:
                    indiff = abs(b0 + b1 * pure) <= tol
                    h0, h1 = a0, a1
                if not indiff:
                    continue
                sign = 1.0 if pure == 1.0 else -1.0
                at0 = sign * h0 >= -tol
                at1 = sign * (h0 + h1) >= -tol
                if not (at0 or at1):
                    continue
                root = -h0 / h1 if h1 != 0.0 else 0.0
                root = min(max(root, 0.0), 1.0)
                for y in (0.0 if at0 else root, 1.0 if at1 else root):
                    if who == 0:
                        cp[m], ca[m] = y, pure
                    else:
                        cp[m], ca[m] = pure, y
                    ck[m] = SEGMENT
                    m += 1
        n = 0
        for k in range(m):
            xp, xa = cp[k], ca[k]
            if not (_is_br(xp, a0 + a1 * xa, tol) and _is_br(xa, b0 + b1 * xp, tol)):
                continue
            dup = False
            for j in range(n):
                if abs(xp_out[i, j] - xp) < 1e-9 and abs(xa_out[i, j] - xa) < 1e-9:
                    dup = True
                    break
            if dup:
                continue
            xp_out[i, n], xa_out[i, n], kind_out[i, n] = xp, xa, ck[k]
            n += 1
        count[i] = n
    return xp_out, xa_out, kind_out, count


@nb.njit(cache=True)
def debate_certificates(p_c, rho, c_e, J, x_P, x_A):
    """Largest interim deviation gain of each profile, by walking the chance tree.

    Chance: P correct (p_c) or not; the false side's evidence (rho); the other
    sender's presentation draw.  P moves at t_P = 1, A at t_A = 1.
    """
    C, E = x_P.shape
    out = np.full((C, E), np.nan)
    for i in range(C):
        for e in range(E):
            xp, xa = x_P[i, e], x_A[i, e]
            if xp != xp:
                continue
            uP = np.zeros(2)
            uA = np.zeros(2)
            wP = 0.0
            wA = 0.0
            for correct in range(2):
                pr_c = p_c[i] if correct else 1.0 - p_c[i]
                for tP in range(2):
                    if correct:
                        pr_tp = 1.0 if tP else 0.0
                    else:
                        pr_tp = rho[i] if tP else 1.0 - rho[i]
                    for tA in range(2):
                        if correct:
                            pr_ta = rho[i] if tA else 1.0 - rho[i]
                        else:
                            pr_ta = 1.0 if tA else 0.0
                        w = pr_c * pr_tp * pr_ta
                        if w == 0.0:
                            continue
                        if tP:
                            wP += w
                            pres = tA * xa
                            for a in range(2):
                                uP[a] += w * (pres * J[i, a, 1] + (1 - pres) * J[i, a, 0]
                                              - c_e[i] * a)
                        if tA:
                            wA += w
                            pres = tP * xp
                            for a in range(2):
                                uA[a] += w * (pres * (1 - J[i, 1, a]) + (1 - pres) * (1 - J[i, 0, a])
                                              - c_e[i] * a)
            eps = 0.0
            if wP > 0:
                cur = xp * uP[1] + (1 - xp) * uP[0]
                eps = max(eps, (max(uP[0], uP[1]) - cur) / wP)
            if wA > 0:
                cur = xa * uA[1] + (1 - xa) * uA[0]
                eps = max(eps, (max(uA[0], uA[1]) - cur) / wA)
            out[i, e] = eps
    return out


@nb.njit(inline="always", cache=True)
def _nan_to_zero(x):
    """One value as ``sim.evidence_game.nan_to_zero`` maps it (``np.nan_to_num``)."""
    if x != x:
        return 0.0
    if x == np.inf:
        return np.finfo(np.float64).max
    if x == -np.inf:
        return -np.finfo(np.float64).max
    return x


@nb.njit(cache=True)
def profile_columns(J_c, c_e, tau_P, tau_A, g0P, g1P, g0A, g1A, gc, x_P, x_A, code, tol):
    """What a grid reports of each equilibrium beside its certificate, in one pass over
    the profiles ``x_P``, ``x_A``, ``code`` [C, 2 protocols (consult, debate), E]
    (NaN / -1 where a cell has fewer equilibria; ``x_A``'s consultancy row unused).

    Returns ``(eps_consult [C, E], stable [C, 2, E], belief_P, belief_A [C, 2, E],
    x_Pc, x_Pd, x_Ad [C, E] with NaN as 0, rows [C, E])``: consultancy's certificate
    (``certificates(..., "consult")``), the stability of both protocols
    (``stability``), each sender's belief that the other holds evidence, the profiles
    as the outcome kernel reads them, and the rows holding an equilibrium of either
    protocol.  The same operations in the same order as the NumPy functions it
    replaces (``sim.evidence_game``'s), so the same bits (``np.maximum``'s
    choice of the second of two equal values included); NaN where an equilibrium is
    missing, as there."""
    C, _, E = x_P.shape
    eps_c = np.empty((C, E))
    stable = np.empty((C, 2, E), np.bool_)
    belief_P = np.empty((C, 2, E))
    belief_A = np.empty((C, 2, E))
    x_Pc = np.empty((C, E))
    x_Pd = np.empty((C, E))
    x_Ad = np.empty((C, E))
    rows = np.empty((C, E), np.bool_)
    for i in range(C):
        u0 = J_c[i, 0]
        u1 = J_c[i, 1] - c_e[i]
        if u0 != u0:
            top = u0
        elif u1 != u1:
            top = u1
        else:
            top = u0 if u0 > u1 else u1
        strict_c = abs(gc[i]) > tol
        opposed = g1P[i] * g1A[i] < 0
        for e in range(E):
            xc, xd, ad = x_P[i, 0, e], x_P[i, 1, e], x_A[i, 1, e]
            miss_c, miss_d = xc != xc, xd != xd
            eps_c[i, e] = np.nan if miss_c else top - (xc * u1 + (1 - xc) * u0)
            stable[i, 0, e] = (code[i, 0, e] == 0) and strict_c and not miss_c
            a0, p0 = _nan_to_zero(ad), _nan_to_zero(xd)
            k = code[i, 1, e]
            pure = (k == 0) and abs(g0P[i] + g1P[i] * a0) > tol \
                and abs(g0A[i] + g1A[i] * p0) > tol
            stable[i, 1, e] = (pure or (k == 1 and opposed)) and not miss_d
            belief_P[i, 0, e] = np.nan if miss_c else 0.0
            belief_P[i, 1, e] = np.nan if miss_d else tau_P[i] * ad
            belief_A[i, 0, e] = np.nan
            belief_A[i, 1, e] = tau_A[i] * xd
            x_Pc[i, e], x_Pd[i, e], x_Ad[i, e] = _nan_to_zero(xc), p0, a0
            rows[i, e] = not (miss_c and miss_d)
    return eps_c, stable, belief_P, belief_A, x_Pc, x_Pd, x_Ad, rows
