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
