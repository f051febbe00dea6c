"""The error-detection (colmad) and mediation kernels as first written, kept as the
oracles of the class-count kernels: per instance the metric vector y and its outer
product y y^T, added in instance order per block of 4,096 instances.

The class-count kernels draw the same words and classify every instance the same way
(integer thresholds equal to the float tests); only the order of the float additions
differs, so their sums agree with these to rounding (``tests/test_colmad.py``,
``tests/test_mediation.py``).
"""

import math

import numba as nb
import numpy as np

from antiamp.kernels.rng import HI_SHIFT as _HI, INV32 as _INV32, LO_WORD as _LO
from antiamp.kernels.rng import fill_words, philox4x32_10


C_STREAM = 9
BLOCK = 4096
C_PER = 5
N_PROT = 4  # single, copmad, colmad, oracle
DIS = C_PER * N_PROT  # the disagreement indicator
FIRST = DIS + 1  # per protocol: detector 1 wrong and the final verdict wrong; then detector 1 wrong
C_L = FIRST + N_PROT + 1


@nb.njit(cache=True)
def _u(w):
    return (np.float64(w) + 0.5) * _INV32


@nb.njit(parallel=True, cache=True)
def colmad_kernel(n, k0, k1, p_error, pair, T, tie, x, pw, R, delta):
    n_blocks = (n + BLOCK - 1) // BLOCK
    s1 = np.zeros((n_blocks, C_L))
    s2 = np.zeros((n_blocks, C_L, C_L))
    stream = np.uint64(C_STREAM)
    for b in nb.prange(n_blocks):
        y = np.zeros(C_L)
        right = np.zeros(N_PROT)
        calls = np.zeros(N_PROT)
        for i in range(b * BLOCK, min((b + 1) * BLOCK, n)):
            ii = np.uint64(i)
            w0, w1, _, _ = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)
            om = 1 if _u(w0) < p_error else 0
            u = _u(w1)
            t11 = pair[om, 1, 1]
            t10 = t11 + pair[om, 1, 0]
            t01 = t10 + pair[om, 0, 1]
            if u < t11:
                c1, c2 = 1, 1
            elif u < t10:
                c1, c2 = 1, 0
            elif u < t01:
                c1, c2 = 0, 1
            else:
                c1, c2 = 0, 0
            dis = c1 != c2
            right[0] = c1
            calls[0] = 1.0
            right[3] = 1.0 if (c1 == 1 or c2 == 1) else 0.0
            calls[3] = 2.0
            if not dis:
                right[1] = c1
                right[2] = c1
                calls[1] = 2.0
                calls[2] = 2.0
            else:
                eR, eW = 0, 0
                col, col_done = 0.0, False
                used, judged = 0, 0.0
                for r in range(1, R + 1):
                    v0, v1, v2, v3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(r), stream,
                                                   k0, k1)
                    fr = _u(v0) < x
                    fw = _u(v1) < pw
                    if fr:
                        eR = 1
                    if fw:
                        eW = 1
                    if not col_done:
                        used += 1
                        if fr and not fw:
                            col, col_done = 1.0, True
                        elif fw and not fr:
                            col, col_done = 0.0, True
                        elif fr and fw:
                            col, col_done, judged = tie[om], True, 1.0
                        else:
                            cr = _u(v2) < delta  # the right side concedes
                            cw = _u(v3) < delta
                            if cw and not cr:
                                col, col_done = 1.0, True
                            elif cr and not cw:
                                col, col_done = 0.0, True
                if not col_done:
                    col, judged = tie[om], 1.0
                right[1] = T[om, eR, eW]
                calls[1] = 2.0 + 2.0 * R + 1.0
                right[2] = col
                calls[2] = 2.0 + 2.0 * used + judged
            for p in range(N_PROT):
                rr = right[p]
                y[p * C_PER] = om * rr
                y[p * C_PER + 1] = (1 - om) * (1.0 - rr)
                y[p * C_PER + 2] = om * (1.0 - rr)
                y[p * C_PER + 3] = calls[p]
                y[p * C_PER + 4] = (1.0 - rr) if dis else 0.0
            y[DIS] = 1.0 if dis else 0.0
            for p in range(N_PROT):
                y[FIRST + p] = (1.0 - c1) * (1.0 - right[p])
            y[C_L - 1] = 1.0 - c1
            for a in range(C_L):
                s1[b, a] += y[a]
                for c in range(a, C_L):
                    s2[b, a, c] += y[a] * y[c]
        for a in range(C_L):
            for c in range(a):
                s2[b, a, c] = s2[b, c, a]
    return s1, s2


M_STREAM = 10
N_SHARED = 6
M_PER = 5
M_L = N_SHARED + 2 * M_PER


@nb.njit(cache=True)
def _poisson_inv(u, lam):
    k, p = 0, math.exp(-lam)
    c = p
    while u > c and k < 10_000:
        k += 1
        p *= lam / k
        c += p
        if p == 0.0 and c < u:  # numerically exhausted tail
            break
    return k


@nb.njit(cache=True)
def _binom_inv(u, n, q):
    if n == 0 or q <= 0.0:
        return 0
    if q >= 1.0:
        return n
    p = (1.0 - q) ** n
    c = p
    k = 0
    r = q / (1.0 - q)
    while u > c and k < n:
        p *= r * (n - k) / (k + 1)
        k += 1
        c += p
    return k


@nb.njit(parallel=True, cache=True)
def mediation_kernel(n, k0, k1, flaws, surv, iters, false_alarm, P, s, false_dissent, erase,
                     T, h, M, classes, weights, relevance):
    n_blocks = (n + BLOCK - 1) // BLOCK
    s1 = np.zeros((n_blocks, M_L))
    s2 = np.zeros((n_blocks, M_L, M_L))
    stream = np.uint64(M_STREAM)
    n_words = 1 + 2 * iters + 2 * P + 4
    n_ctr = (n_words + 3) // 4
    for b in nb.prange(n_blocks):
        words = np.empty(4 * n_ctr, np.uint32)
        y = np.zeros(M_L)
        for i in range(b * BLOCK, min((b + 1) * BLOCK, n)):
            fill_words(words, i, n_ctr, stream, k0, k1)
            pos = 0
            nf = _poisson_inv((np.float64(words[pos]) + 0.5) * _INV32, flaws)
            pos += 1
            for j in range(iters):
                nf = _binom_inv((np.float64(words[pos]) + 0.5) * _INV32, nf, surv)
                if (np.float64(words[pos + 1]) + 0.5) * _INV32 < false_alarm:
                    nf += 1
                pos += 2
            wrong = nf >= 1
            p_dis = 1.0 - (1.0 - s) ** nf if wrong else false_dissent
            raised, kept_memo, kept_sum = 0, 0, 0
            for p in range(P):
                if (np.float64(words[pos]) + 0.5) * _INV32 < p_dis:
                    raised += 1
                    kept_memo += 1
                    if (np.float64(words[pos + 1]) + 0.5) * _INV32 >= erase:
                        kept_sum += 1
                pos += 2
            # citations: sequential binomial split of M over the classes
            left, rest = M, 1.0
            counts = np.zeros(5)
            for c in range(4):
                q = classes[c] / rest if rest > 0 else 0.0
                kc = _binom_inv((np.float64(words[pos + c]) + 0.5) * _INV32, left,
                                min(max(q, 0.0), 1.0))
                counts[c] = kc
                left -= kc
                rest -= classes[c]
            counts[4] = left
            n_exact = counts[0] + counts[1]
            eq = 0.0
            for c in range(5):
                eq += counts[c] * weights[c]
            y[0] = 1.0 if wrong else 0.0
            y[1] = nf
            y[2] = 1.0 if n_exact == M else 0.0
            y[3] = n_exact / M
            y[4] = 100.0 * eq / M
            y[5] = counts[1] * relevance / M
            for pr in range(2):
                kept = kept_memo if pr == 0 else kept_sum
                esc = kept >= T
                base = N_SHARED + M_PER * pr
                y[base] = h if esc else (0.0 if wrong else 1.0)
                y[base + 1] = 1.0 if esc else 0.0
                y[base + 2] = 1.0 if (esc and wrong) else 0.0
                y[base + 3] = 1.0 if (wrong and raised > 0 and kept == 0) else 0.0
                y[base + 4] = 1.0 if (wrong and raised > 0) else 0.0
            for a in range(M_L):
                s1[b, a] += y[a]
                for c in range(a, M_L):
                    s2[b, a, c] += y[a] * y[c]
        for a in range(M_L):
            for c in range(a):
                s2[b, a, c] = s2[b, c, a]
    return s1, s2
