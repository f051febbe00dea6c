"""Compiled candidate enumeration of the correlated-signals debate's sub-games.

Per cell and sub-game s (one protagonist type, two antagonist types), the gains
are affine (the protagonist's aP + BP . x_A, an antagonist type's aA + BA x_P, as the
model derives them from its class weights): the protagonist's candidates
are 0, 1 and the antagonist types' switch points, the antagonist types' are 0, 1
and the mixture that makes the protagonist indifferent given the other's pure
action: 32 candidate profiles, each kept iff every type best-responds, the
candidates within ``same`` of one kept before dropped, the rest ordered by
descending (x_P, x_A0, x_A1), ties in candidate order.

Written by hand because NumPy built a [cells, 32, 3] array a step (about 20
temporaries) and sorted each row's candidates with ``argsort`` and ``lexsort``:
most of a simulated-payoff grid's solving, whose delta-method standard errors
solve 64 perturbed games a mixed cell.  The same IEEE operations in the same
order as that NumPy code (kept as the oracle in ``tests/test_signals_equilibria.py``),
so the same bits.
"""

from __future__ import annotations

import numba as nb
import numpy as np

#: Candidate profiles of a sub-game: 8 antagonist pairs x 4 protagonist actions.
N_CAND = 32


@nb.njit(inline="always", cache=True)
def _best_response(x, g, tol):
    """x is a best response to the gain g (a NaN gain, of a null type, always is)."""
    if g != g:
        return True
    if x >= 1 - 1e-12:
        return g >= -tol
    if x <= 1e-12:
        return g <= tol
    return abs(g) <= tol


@nb.njit(inline="always", cache=True)
def _tidy(x):
    """A candidate's coordinate as the enumeration keeps it: within 1e-13 of 0 is 0;
    then NaN 0 and the rest clipped to [0, 1]."""
    if abs(x) < 1e-13:
        x = 0.0
    if x != x:
        return 0.0
    if x < 0.0:
        return 0.0
    if x > 1.0:
        return 1.0
    return x


@nb.njit(inline="always", cache=True)
def _inside(x):
    return x >= -1e-12 and x <= 1 + 1e-12


@nb.njit(cache=True)
def debate_subgames(aP, BP, aA, BA, null_P, null_A, tol, same):
    """Each cell's equilibria of both sub-games: ``(S [2, C, 32, 3], count [2, C])``,
    the first ``count[s, c]`` rows of ``S[s, c]`` the sub-game's equilibria
    (x_P, x_A0, x_A1) in their order (see the module docstring)."""
    C = aP.shape[0]
    S = np.zeros((2, C, N_CAND, 3))
    count = np.zeros((2, C), np.int64)
    cand = np.empty((N_CAND, 3))
    valid = np.empty(N_CAND, np.bool_)
    xp = np.empty(4)
    pa0 = np.empty(8)
    pa1 = np.empty(8)
    kept = np.empty(N_CAND, np.int64)
    nan = np.nan
    for c in range(C):
        for s in range(2):
            xp[0] = 0.0
            xp[1] = 1.0
            for r in range(2):
                ba = BA[c, s, r]
                sw = -aA[c, s, r] / ba if abs(ba) > 0 else nan
                xp[2 + r] = sw if (sw > 0 and sw < 1) else nan
            ap, bp0, bp1 = aP[c, s], BP[c, s, 0], BP[c, s, 1]
            for i in range(2):  # the four pure pairs, then the indifference points
                for j in range(2):
                    pa0[2 * i + j] = float(i)
                    pa1[2 * i + j] = float(j)
            for k in range(2):
                pa0[4 + k] = -(ap + bp1 * float(k)) / bp0 if bp0 != 0 else nan
                pa1[4 + k] = float(k)
                pa0[6 + k] = float(k)
                pa1[6 + k] = -(ap + bp0 * float(k)) / bp1 if bp1 != 0 else nan
            nP, nA0, nA1 = null_P[c, s], null_A[c, s, 0], null_A[c, s, 1]
            for q in range(8):
                for j in range(4):
                    m = 4 * q + j
                    x0, x1, x2 = xp[j], pa0[q], pa1[q]
                    z0 = 0.0 if abs(x0) < 1e-13 else x0
                    z1 = 0.0 if abs(x1) < 1e-13 else x1
                    z2 = 0.0 if abs(x2) < 1e-13 else x2
                    ok = _inside(z0) and _inside(z1) and _inside(z2)  # False for NaN
                    c0 = 1.0 if nP else _tidy(x0)
                    c1 = 1.0 if nA0 else _tidy(x1)
                    c2 = 1.0 if nA1 else _tidy(x2)
                    gP = nan if nP else ap + bp0 * c1 + bp1 * c2
                    gA0 = nan if nA0 else aA[c, s, 0] + BA[c, s, 0] * c0
                    gA1 = nan if nA1 else aA[c, s, 1] + BA[c, s, 1] * c0
                    cand[m, 0], cand[m, 1], cand[m, 2] = c0, c1, c2
                    valid[m] = (ok and _best_response(c0, gP, tol)
                                and _best_response(c1, gA0, tol)
                                and _best_response(c2, gA1, tol))
            # the valid candidates once each, in candidate order
            n = 0
            for m in range(N_CAND):
                if not valid[m]:
                    continue
                dup = False
                for u in range(n):
                    k = kept[u]
                    d = max(abs(cand[m, 0] - cand[k, 0]), abs(cand[m, 1] - cand[k, 1]),
                            abs(cand[m, 2] - cand[k, 2]))
                    if d < same:
                        dup = True
                        break
                if not dup:
                    kept[n] = m
                    n += 1
            # descending (x_P, x_A0, x_A1), ties in candidate order: insertion sort
            for u in range(1, n):
                k = kept[u]
                v = u
                while v > 0:
                    p = kept[v - 1]
                    if (cand[k, 0] > cand[p, 0] or (cand[k, 0] == cand[p, 0] and (
                            cand[k, 1] > cand[p, 1] or (cand[k, 1] == cand[p, 1]
                                                        and cand[k, 2] > cand[p, 2])))):
                        kept[v] = p
                        v -= 1
                    else:
                        break
                kept[v] = k
            for u in range(n):
                S[s, c, u, 0] = cand[kept[u], 0]
                S[s, c, u, 1] = cand[kept[u], 1]
                S[s, c, u, 2] = cand[kept[u], 2]
            count[s, c] = n
    return S, count


@nb.njit(inline="always", cache=True)
def _row_sum(x):
    """``x.sum()`` of a row of 32 as NumPy adds it (its pairwise sum: eight running
    sums, added in a tree, after an initial 0.0), so the same bits."""
    n = x.shape[0]
    r0, r1, r2, r3 = x[0], x[1], x[2], x[3]
    r4, r5, r6, r7 = x[4], x[5], x[6], x[7]
    i = 8
    while i < n - (n % 8):
        r0 += x[i]
        r1 += x[i + 1]
        r2 += x[i + 2]
        r3 += x[i + 3]
        r4 += x[i + 4]
        r5 += x[i + 5]
        r6 += x[i + 6]
        r7 += x[i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += x[i]
        i += 1
    return 0.0 + res


@nb.njit(cache=True)
def gain_coefficients(w, Jc, Jd, v, c_e, bits):
    """The affine gain maps of every sender type, per cell: ``(aP [C, 2], BP [C, 2, 2],
    aA [C, 2, 2], BA [C, 2, 2], gPc [C, 2], null_P [C, 2], null_A [C, 2, 2])`` from the
    class weights ``w`` [C, 32], the judge's tables (``Jc`` [C, 2]; ``Jd`` [C, 2, 2, 2]
    indexed [antagonist disbelieves, e_P, e_A]), the check ``v`` [C] and the cost
    ``c_e`` [C]; ``bits`` [6, 32]: each class's s_P, s_A, t_P, t_A, whether P's stance
    is true, whether A believes its own.  Each class's product in NumPy's order and
    each row summed as NumPy sums it (the NumPy code it replaced is the oracle of
    ``tests/test_signals_equilibria.py``)."""
    C, K = w.shape
    SP, SA, TP, TA, PT, AB = bits[0], bits[1], bits[2], bits[3], bits[4], bits[5]
    aP, gPc = np.zeros((C, 2)), np.zeros((C, 2))
    BP, aA, BA = np.zeros((C, 2, 2)), np.zeros((C, 2, 2)), np.zeros((C, 2, 2))
    null_P, null_A = np.zeros((C, 2), np.bool_), np.zeros((C, 2, 2), np.bool_)
    t = np.empty((6, K))
    accP, accA, cross = np.empty(K), np.empty(K), np.empty(K)
    J00, J01, J10 = np.empty(K), np.empty(K), np.empty(K)
    for c in range(C):
        dc = Jc[c, 1] - Jc[c, 0]
        u = 1 - v[c]
        for k in range(K):
            b = 1 - AB[k]
            J00[k], J01[k], J10[k] = Jd[c, b, 0, 0], Jd[c, b, 0, 1], Jd[c, b, 1, 0]
            cross[k] = Jd[c, b, 1, 1] - J01[k] - J10[k] + J00[k]
            accP[k] = 1.0 if PT[k] == 1 else u
            accA[k] = 1.0 if PT[k] == 0 else u  # A's stance is true where P's is not
        for s in range(2):
            for k in range(K):
                mP = 1.0 if (SP[k] == s and TP[k] == 1) else 0.0
                wm = w[c, k] * mP
                t[0, k] = wm
                t[1, k] = wm * accP[k] * (J10[k] - J00[k])
                t[2, k] = wm * accP[k] * dc
            FP = _row_sum(t[0])
            null_P[c, s] = FP <= 0
            FPs = FP if FP > 0 else 1.0
            aP[c, s] = _row_sum(t[1]) / FPs - c_e[c]
            gPc[c, s] = _row_sum(t[2]) / FPs - c_e[c]
            for r in range(2):
                for k in range(K):
                    both = 1.0 if (SP[k] == s and TP[k] == 1 and SA[k] == r
                                   and TA[k] == 1) else 0.0
                    mA = 1.0 if (SP[k] == s and SA[k] == r and TA[k] == 1) else 0.0
                    t[3, k] = w[c, k] * both * accP[k] * accA[k] * cross[k]
                    wa = w[c, k] * mA
                    t[4, k] = wa
                    t[5, k] = wa * accA[k] * (J00[k] - J01[k])
                    t[0, k] = wa * float(TP[k]) * accP[k] * accA[k] * (-cross[k])
                BP[c, s, r] = _row_sum(t[3]) / FPs
                FA = _row_sum(t[4])
                null_A[c, s, r] = FA <= 0
                FAs = FA if FA > 0 else 1.0
                aA[c, s, r] = _row_sum(t[5]) / FAs - c_e[c]
                BA[c, s, r] = _row_sum(t[0]) / FAs
    return aP, BP, aA, BA, gPc, null_P, null_A


#: The metrics :func:`row_outcomes` returns, in its columns' order.
ROW_METRICS = ("amp", "acc", "fwc", "endorse", "tie_rate", "evidence_P", "evidence_A",
               "counter_signal", "welfare")


@nb.njit(inline="always", cache=True)
def _mean(w, g, mask, p, q):
    """E_w[g | mask] as NumPy's masked weighted mean computes it: the kept weights
    (0.0 off the mask), their products with g (0.0 where a weight is not positive),
    each summed as NumPy sums a row of 32, the quotient; NaN without weight."""
    K = w.shape[0]
    for k in range(K):
        wk = w[k] if mask[k] else 0.0
        q[k] = wk
        p[k] = wk * g[k] if wk > 0 else 0.0
    tot = _row_sum(q)
    return _row_sum(p) / tot if tot > 0 else np.nan


@nb.njit(cache=True)
def row_outcomes(w, flat, protocol, Jc, Jd, v, alpha, beta, delta_c, bits):
    """Each row's metrics (:data:`ROW_METRICS`) at its own protocol (0 consultancy,
    1 debate) under the profile ``flat`` [R, 6] (consultancy's x_Pc or debate's x_P,
    then debate's x_A [s_P, s_A]), from the class weights ``w`` [R, 32], the judge's
    tables (``Jc`` [R, 2], ``Jd`` [R, 2, 2, 2] as :func:`gain_coefficients` takes it),
    the check ``v`` and the welfare weights [R]; the antagonist's metrics NaN in
    consultancy.  The same operations in the same order as the model's NumPy
    outcomes with ``se=False`` (its test's oracle), each row on its own."""
    R, K = w.shape
    SP, SA, TP, TA, PT, AB = bits[0], bits[1], bits[2], bits[3], bits[4], bits[5]
    out = np.full((R, 9), np.nan)
    g, qp, qa = np.empty(K), np.empty(K), np.empty(K)
    acc, tie, wel = np.empty(K), np.empty(K), np.empty(K)
    right, wrong = np.empty(K, np.bool_), np.empty(K, np.bool_)
    every = np.ones(K, np.bool_)
    p, q = np.empty(K), np.empty(K)
    for k in range(K):
        right[k] = PT[k] == 1
        wrong[k] = PT[k] != 1
    for i in range(R):
        u = 1 - v[i]
        debate = protocol[i] == 1
        cost = delta_c[i] if debate else 0.0
        for k in range(K):
            accP = 1.0 if PT[k] == 1 else u
            if not debate:
                qc = float(TP[k]) * flat[i, SP[k]] * accP
                g[k] = (1 - qc) * Jc[i, 0] + qc * Jc[i, 1]
                qp[k] = qc
                qa[k] = 0.0
            else:
                accA = 1.0 if PT[k] == 0 else u
                b = 1 - AB[k]
                qP = float(TP[k]) * flat[i, SP[k]] * accP
                qA = float(TA[k]) * flat[i, 2 + 2 * SP[k] + SA[k]] * accA
                g[k] = ((1 - qP) * ((1 - qA) * Jd[i, b, 0, 0] + qA * Jd[i, b, 0, 1])
                        + qP * ((1 - qA) * Jd[i, b, 1, 0] + qA * Jd[i, b, 1, 1]))
                qp[k] = qP
                qa[k] = qA
            acc[k] = g[k] if right[k] else 1 - g[k]
            tie[k] = qp[k] * qa[k] + (1 - qp[k]) * (1 - qa[k])
            wel[k] = (-alpha[i] * (1 - acc[k]) - beta[i] * (0.0 if right[k] else g[k])
                      - cost)
        wi = w[i]
        out[i, 0] = _mean(wi, g, wrong, p, q)
        out[i, 1] = _mean(wi, acc, every, p, q)
        out[i, 2] = _mean(wi, g, right, p, q)
        out[i, 3] = _mean(wi, g, every, p, q)
        out[i, 4] = _mean(wi, tie, every, p, q)
        out[i, 5] = _mean(wi, qp, every, p, q)
        if debate:
            out[i, 6] = _mean(wi, qa, every, p, q)
            out[i, 7] = _mean(wi, qa, wrong, p, q)
        out[i, 8] = _mean(wi, wel, every, p, q)
    return out
