"""Provenance-backed pluralistic mediation (seed 002): the Monte Carlo kernel.

Draw slots of case i, Philox stream ``STREAM``: the words of counters (i, c, 0,
STREAM), c = 0, 1, ..., read in order as uniforms:

* word 0: the proposal's flaw count (Poisson, by inversion);
* words 1 + 2 (j - 1), 2 + 2 (j - 1), iteration j = 1..k: how many flaws survive
  (binomial, by inversion) and whether a false alarm breaks a sound part;
* then per perspective: whether it dissents, whether a summary erases the dissent;
* then four words that split the M citations into the five classes (sequential
  binomials, by inversion).

Both syntheses read the same draws (common random numbers).  The human's decision
is not drawn (Rao-Blackwellised: right with probability h), nor the relevance check
(its expected catch).  Per case the kernel adds a 16-vector and its outer product,
per block of ``BLOCK`` cases, blocks added in order.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from .rng import INV32 as _INV32
from .rng import fill_words

STREAM = 10
BLOCK = 4096
N_SHARED = 6
PER = 5
L = N_SHARED + 2 * PER


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
    s1 = np.zeros((n_blocks, L))
    s2 = np.zeros((n_blocks, L, L))
    stream = np.uint64(STREAM)
    n_words = 1 + 2 * iters + 2 * P + 4
    n_ctr = (n_words + 3) // 4
    for b in nb.prange(n_blocks):
        words = np.empty(4 * n_ctr, np.uint32)
        y = np.zeros(L)
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
                base = N_SHARED + PER * pr
                y[base] = h if esc else (0.0 if wrong else 1.0)
                y[base + 1] = 1.0 if esc else 0.0
                y[base + 2] = 1.0 if (esc and wrong) else 0.0
                y[base + 3] = 1.0 if (wrong and raised > 0 and kept == 0) else 0.0
                y[base + 4] = 1.0 if (wrong and raised > 0) else 0.0
            for a in range(L):
                s1[b, a] += y[a]
                for c in range(a, L):
                    s2[b, a, c] += y[a] * y[c]
        for a in range(L):
            for c in range(a):
                s2[b, a, c] = s2[b, c, a]
    return s1, s2
