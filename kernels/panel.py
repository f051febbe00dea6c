"""Juries beyond independent judges (seed 000, section 4): panel endorsement probabilities.

A panel of n judges faces one transcript class whose single-judge endorsement
probability is q.  Judge j votes for the protagonist iff

    Phi^-1(q) + beta_j - sqrt(icc) Z - sqrt(1 - icc) E_j > 0,

with Z the panel's shared latent (a common blind spot), E_j the judge's own noise
(both standard normal) and beta_j ~ N(0, bias_sd^2) the judge's own bias
(heterogeneity).  With bias_sd = 0 each judge endorses with probability exactly q
and icc is the latent correlation between judges.  Given (Z, beta) the votes are
independent, so the aggregation rule's endorsement probability is computed
exactly (Poisson-binomial recursion, or a normal for the confidence-weighted sum):
the kernel Rao-Blackwellises the votes and averages over Monte Carlo panels
(Z, beta) drawn from Philox stream ``STREAM`` (panel i uses counters (i, j)).

Float sums are kept per fixed block of ``PANEL_BLOCK`` panels and the blocks are
added in order, so the result does not depend on the thread count.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from .interrupt import stopped
from .rng import HI_SHIFT as _HI, INV32 as _INV32, LO_WORD as _LO, normal_cdf as _phi, philox4x32_10

STREAM = 3
PANEL_BLOCK = 256
RULE_MAJORITY, RULE_SUPER, RULE_UNANIMITY, RULE_CONFIDENCE = 0, 1, 2, 3
#: The ranges of |x| where the C library's erfc (fdlibm's algorithm, as in glibc and
#: musl) takes different branches, and with the sign the number of groups the CPU
#: launcher sorts its arguments into (any grouping gives the same values).
_R1, _R2, _R3 = 0.84375, 1.25, 1.0 / 0.35
_N_KEYS = 8


@nb.njit(cache=True)
def _aggregate(pi, n, rule, need, tie, default, dp):
    """Endorsement probability of the rule given independent vote probabilities ``pi``
    (``dp`` [at least n + 1]: the vote counts' distribution; only the entries the
    recursion reads are zeroed first)."""
    for k in range(n + 1):
        dp[k] = 0.0
    dp[0] = 1.0
    for j in range(n):
        p = pi[j]
        for k in range(j + 1, 0, -1):
            dp[k] = dp[k] * (1.0 - p) + dp[k - 1] * p
        dp[0] *= 1.0 - p
    if rule == RULE_UNANIMITY:
        return dp[n] + default * (1.0 - dp[n] - dp[0])
    out = 0.0
    for k in range(need, n + 1):
        out += dp[k]
    if rule == RULE_MAJORITY and n % 2 == 0:
        out += tie * dp[n // 2]
    return out


@nb.njit(inline="always", cache=True)
def _panel(i, zq, n, n_ctr, rule, need, tie, default, a, e, bias_sd, k0, k1, stream, pi, beta,
           dp, vals):
    """Panel ``i``: the endorsement probability of each entry of ``zq`` into ``vals``
    (compiled for the CPU here and for the GPU by :mod:`kernels.gpu.panel`).  Its
    normals are the latent z (normal 0) and the judges' biases (bias_sd times normals
    1 .. n), written where they are made rather than kept in an array of normals (on
    the GPU a thread's arrays live in local memory)."""
    ii = np.uint64(i)
    z = 0.0
    for c in range(n_ctr):
        w0, w1, w2, w3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(c), stream, k0, k1)
        u1 = (np.float64(w0) + 0.5) * _INV32
        u2 = (np.float64(w1) + 0.5) * _INV32
        r = math.sqrt(-2.0 * math.log(u1))
        x0 = r * math.cos(2.0 * math.pi * u2)
        x1 = r * math.sin(2.0 * math.pi * u2)
        if c == 0:
            z = x0
        else:
            beta[2 * c - 1] = bias_sd * x0
        if 2 * c < n:
            beta[2 * c] = bias_sd * x1
    for m in range(zq.shape[0]):
        t = zq[m]
        if rule == RULE_CONFIDENCE:
            if math.isinf(t):
                val = 1.0 if t > 0 else 0.0
            elif e == 0.0:
                tot = n * (t - a * z)
                for j in range(n):
                    tot += beta[j]
                val = 1.0 if tot > 0 else 0.0
            else:
                tot = n * (t - a * z)
                for j in range(n):
                    tot += beta[j]
                val = _phi(tot / (e * math.sqrt(n)))
        else:
            for j in range(n):
                if math.isinf(t):
                    pi[j] = 1.0 if t > 0 else 0.0
                elif e == 0.0:
                    pi[j] = 1.0 if t + beta[j] - a * z > 0 else 0.0
                else:
                    pi[j] = _phi((t + beta[j] - a * z) / e)
            val = _aggregate(pi, n, rule, need, tie, default, dp)
        vals[m] = val


@nb.njit(parallel=True, cache=True)
def panel_endorsement(zq, n, rule, need, tie, default, icc, bias_sd, n_panels, k0, k1, stream):
    """Sums and sums of products, over panels, of the entries' endorsement probabilities.

    Parameters
    ----------
    zq : float64[M]
        Phi^-1(q) of the M single-judge probabilities (+-inf for q = 1, 0).
    n : int
        Panel size.
    rule, need, tie, default :
        Aggregation (module constants); ``need`` votes endorse (majority: n // 2 + 1,
        supermajority: the quota), ``tie`` for even majority panels, ``default`` for a
        split unanimity panel.
    icc, bias_sd : float
        Latent intra-class correlation and the sd of judge biases.
    n_panels : int
        Monte Carlo panels (rounded up to whole blocks).

    Returns
    -------
    (float64[M], float64[M, M], int) sums, sums of products (the entries share their
    panels, so their estimates are correlated), panels used.

    The launcher batches what :func:`_panel` (the GPU's per-panel step) does one panel
    at a time: a block's Philox words first (the generator vectorises), then its
    normals, then per entry every judge's vote probability and the rule's recursion
    with the block's panels side by side (the same operations per panel, so the loops
    over panels vectorise), and the block's sums in panel order: the same expressions
    in the same order, so the same sums to the last bit
    (``tests/test_panel.py`` pins them to :func:`_panel` panel by panel).
    """
    M = zq.shape[0]
    P = PANEL_BLOCK
    n_blocks = (n_panels + P - 1) // P
    s1 = np.zeros((n_blocks, M))
    s2 = np.zeros((n_blocks, M, M))
    a = math.sqrt(icc)
    e = math.sqrt(max(1.0 - icc, 0.0))
    n_norm = 1 + n
    n_ctr = (n_norm + 1) // 2
    sn = e * math.sqrt(n)
    nP = n * P
    # The counts of votes the rule reads: from ``low`` to n, and none (``keep0``):
    # unanimity the all and the none, majority and supermajority ``need`` on (and an
    # even majority panel's tie).
    keep0 = rule == RULE_UNANIMITY
    if rule == RULE_UNANIMITY:
        low = n
    elif rule == RULE_MAJORITY and n % 2 == 0:
        low = min(need, n // 2)
    else:
        low = need
    for b in nb.prange(n_blocks):
        if stopped():  # Ctrl-C: the caller raises KeyboardInterrupt
            continue
        W0 = np.empty((n_ctr, P), np.uint32)
        W1 = np.empty((n_ctr, P), np.uint32)
        norms = np.empty((2 * n_ctr, P))
        beta = np.empty((n, P))
        az = np.empty(P)
        pi = np.empty((n, P))
        pif = pi.reshape(n * P)
        key = np.empty(n * P, np.int64)
        order = np.empty(n * P, np.int64)
        start = np.empty(_N_KEYS, np.int64)
        dp = np.empty((n + 1, P))
        vals = np.empty((M, P))
        i0 = b * P
        for c in range(n_ctr):
            for j in range(P):
                ii = np.uint64(i0 + j)
                w0, w1, _, _ = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(c), stream, k0, k1)
                W0[c, j] = np.uint32(w0)
                W1[c, j] = np.uint32(w1)
        for c in range(n_ctr):  # Box-Muller, as _panel
            for j in range(P):
                u1 = (np.float64(W0[c, j]) + 0.5) * _INV32
                u2 = (np.float64(W1[c, j]) + 0.5) * _INV32
                r = math.sqrt(-2.0 * math.log(u1))
                norms[2 * c, j] = r * math.cos(2.0 * math.pi * u2)
                norms[2 * c + 1, j] = r * math.sin(2.0 * math.pi * u2)
        for j in range(P):
            az[j] = a * norms[0, j]
        for k in range(n):
            for j in range(P):
                beta[k, j] = bias_sd * norms[1 + k, j]
        for m in range(M):
            t = zq[m]
            if rule == RULE_CONFIDENCE:
                if math.isinf(t):
                    for j in range(P):
                        vals[m, j] = 1.0 if t > 0 else 0.0
                    continue
                for j in range(P):
                    dp[0, j] = n * (t - az[j])  # the running total
                for k in range(n):
                    for j in range(P):
                        dp[0, j] += beta[k, j]
                if e == 0.0:
                    for j in range(P):
                        vals[m, j] = 1.0 if dp[0, j] > 0 else 0.0
                else:
                    for j in range(P):
                        vals[m, j] = _phi(dp[0, j] / sn)
                continue
            if math.isinf(t):
                for k in range(n):
                    for j in range(P):
                        pi[k, j] = 1.0 if t > 0 else 0.0
            elif e == 0.0:
                for k in range(n):
                    for j in range(P):
                        pi[k, j] = 1.0 if t + beta[k, j] - az[j] > 0 else 0.0
            else:
                # normal_cdf's argument over the block (it vectorises), then its erfc
                # (a library call each): the same operations as normal_cdf.
                for k in range(n):
                    for j in range(P):
                        x = -((t + beta[k, j] - az[j]) / e) / math.sqrt(2.0)
                        pi[k, j] = x
                        ax = abs(x)
                        key[k * P + j] = (np.int64(ax >= _R1) + np.int64(ax >= _R2)
                                          + np.int64(ax >= _R3) + 4 * np.int64(x < 0.0))
                # The erfc calls grouped by the argument's range and sign (a counting
                # sort of the block's arguments by key): the library's erfc branches on
                # them, and its branches are then predicted (in the block's order, half
                # the time went to mispredicted branches).  The same calls on the same
                # arguments, so the same values.
                for q in range(_N_KEYS):
                    cq = 0
                    for i in range(nP):
                        cq += key[i] == q
                    start[q] = cq
                tot = 0
                for q in range(_N_KEYS):
                    cq = start[q]
                    start[q] = tot
                    tot += cq
                for i in range(nP):
                    q = key[i]
                    order[start[q]] = i
                    start[q] += 1
                for i in range(nP):
                    o = order[i]
                    pif[o] = 0.5 * math.erfc(pif[o])
            # _aggregate's Poisson-binomial recursion, the block's panels side by side.
            # Its step k = jj + 1 reads dp[jj + 1] = 0 there: 0 (1 - p) + dp[jj] p is
            # dp[jj] p exactly (every term is >= 0), so that row is written once,
            # without zeroing the rows first.
            # Only the entries the rule reads are carried to the end: after judge jj
            # (0-based) the entries from ``low - (n - 1 - jj)`` on, and the none where
            # the rule reads it (each is computed from the same entries as in the full
            # recursion, so the same floats).
            for j in range(P):
                dp[0, j] = 1.0
            for jj in range(n):
                lo = max(1, low - (n - 1 - jj))
                for j in range(P):
                    dp[jj + 1, j] = dp[jj, j] * pi[jj, j]
                for k in range(jj, lo - 1, -1):
                    for j in range(P):
                        p = pi[jj, j]
                        dp[k, j] = dp[k, j] * (1.0 - p) + dp[k - 1, j] * p
                if keep0 or low - (n - 1 - jj) <= 0:
                    for j in range(P):
                        dp[0, j] *= 1.0 - pi[jj, j]
            if rule == RULE_UNANIMITY:
                for j in range(P):
                    vals[m, j] = dp[n, j] + default * (1.0 - dp[n, j] - dp[0, j])
            else:
                for j in range(P):
                    vals[m, j] = 0.0
                for k in range(need, n + 1):
                    for j in range(P):
                        vals[m, j] += dp[k, j]
                if rule == RULE_MAJORITY and n % 2 == 0:
                    for j in range(P):
                        vals[m, j] += tie * dp[n // 2, j]
        for j in range(P):  # the block's sums in panel order
            for m in range(M):
                s1[b, m] += vals[m, j]
                for m2 in range(m, M):  # x y = y x exactly: the lower triangle copied
                    s2[b, m, m2] += vals[m, j] * vals[m2, j]
        for m in range(M):
            for m2 in range(m):
                s2[b, m, m2] = s2[b, m2, m]
    out1 = np.zeros(M)
    out2 = np.zeros((M, M))
    for b in range(n_blocks):  # fixed order: bit-identical for any thread count
        for m in range(M):
            out1[m] += s1[b, m]
            for m2 in range(M):
                out2[m, m2] += s2[b, m, m2]
    return out1, out2, n_blocks * PANEL_BLOCK
