"""Multi-option answers (seed 000, section 5): Monte Carlo sums.

K answers; omega ~ prior; the protagonist is right with probability p, otherwise
picks a wrong answer (the distractor d = omega + 1 mod K with extra weight).  Each
option can be supported by a passing artifact with a probability depending on
its role (the truth, the distractor, another wrong answer); the availability
vector is shared by both senders.  The antagonist argues an assigned competitor,
the best-supported of k examined alternatives, or attacks a.  The judge chooses
among all K options by a multinomial logit

    Pr(y = j) proportional to exp(lam (mu [j = a] + b_d [j = d] + mu_j + kappa V_j - kappa X [j = a])),

with V_j the evidence shown for j and X the antagonist's attack evidence.  Per
instance the kernel evaluates these probabilities exactly (the judge is
Rao-Blackwellised) and accumulates the metric numerators with their squares per
fixed block of ``BLOCK`` instances, blocks added in order.

Uniforms of instance i come from Philox counters (i, c, 0, stream) in this order:
omega, correct, wrong pick, availability of options 0..K-1, attack availability,
assigned competitor, tie-break, then one per examined alternative.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from .rng import fill_words

STREAM = 5
BLOCK = 4096
MAX_K = 16
ANT_ASSIGNED, ANT_BEST, ANT_ATTACK = 0, 1, 2
# Accumulator rows (per protocol p: base 0 consult, 12 debate; see sim.options).
N_ACC = 12

_INV32 = 1.0 / 4294967296.0


@nb.njit(cache=True)
def _judge(K, a, d, scores_v, attack, lam, mu, bias_d, bias_j, kappa, probs):
    """Multinomial logit over the K options; returns into probs."""
    mx = -1e300
    for j in range(K):
        s = kappa * scores_v[j] + bias_j[j]
        if j == a:
            s += mu - kappa * attack
        if j == d:
            s += bias_d
        probs[j] = lam * s
        if probs[j] > mx:
            mx = probs[j]
    tot = 0.0
    for j in range(K):
        probs[j] = math.exp(probs[j] - mx)
        tot += probs[j]
    for j in range(K):
        probs[j] /= tot


@nb.njit(cache=True)
def judge_tables(K, lam, mu, bias_d, bias_j, kappa):
    """Per cell: the judge's exponents and weights (E0, E1, XA, EA, XP, EP) that
    :func:`_instance` reads, computed once per cell (on the host for the GPU)."""
    n_cells = lam.shape[0]
    # The judge's weight of an option that no sender argues depends only on whether it
    # is the distractor: exp(lam (bias_j + [j = d] bias_d) - G), computed once per cell
    # (G, the largest such exponent, keeps them <= 1); the same multinomial logit as
    # _judge, which stays the fallback for exponents beyond the doubles' range.
    G = np.full(n_cells, -1e300)
    E0 = np.empty((n_cells, K))
    E1 = np.empty((n_cells, K))
    # The argued options' exponents take few values too: the protagonist's answer a by
    # (its label, its evidence, the attack, whether it is the distractor), the
    # antagonist's alternative by (label, evidence, distractor): tabulated once per
    # cell with their exponentials (the same expressions, so the same bits as computing
    # them per instance; an exponent at or beyond 700 keeps the stable-logit fallback).
    XA = np.empty((n_cells, K, 2, 2, 2))
    EA = np.zeros((n_cells, K, 2, 2, 2))
    XP = np.empty((n_cells, K, 2, 2))
    EP = np.zeros((n_cells, K, 2, 2))
    for c in range(n_cells):
        for j in range(K):
            G[c] = max(G[c], lam[c] * bias_j[c, j], lam[c] * (bias_j[c, j] + bias_d[c]))
        for j in range(K):
            E0[c, j] = math.exp(lam[c] * bias_j[c, j] - G[c])
            E1[c, j] = math.exp(lam[c] * (bias_j[c, j] + bias_d[c]) - G[c])
            for av in range(2):
                for isd in range(2):
                    for att in range(2):
                        x = lam[c] * (kappa[c] * av + mu[c] - kappa[c] * np.float64(att)
                                      + bias_j[c, j] + (bias_d[c] if isd else 0.0)) - G[c]
                        XA[c, j, av, att, isd] = x
                        if x < 700.0:
                            EA[c, j, av, att, isd] = math.exp(x)
                    x = lam[c] * (kappa[c] * av + bias_j[c, j]
                                  + (bias_d[c] if isd else 0.0)) - G[c]
                    XP[c, j, av, isd] = x
                    if x < 700.0:
                        EP[c, j, av, isd] = math.exp(x)
    return E0, E1, XA, EA, XP, EP


@nb.njit(parallel=True, cache=True)
def option_sums_cells(K, cum_prior, t_p, wrong_cum, avail_thr, t_attack, antagonist,
                      k_examine, lam, mu, bias_d, bias_j, kappa, near_loss, loss_tol,
                      first_block, n_blocks, k0, k1, stream, acc_out):
    """Sums over instance blocks [first_block, first_block + n_blocks) of C cells with K
    options on common random numbers: each instance's words are drawn once and played
    out for every cell.  Adds them, block by block in order, onto ``acc_out``
    float64[C, 2, N_ACC, 2] (protocol, row, [sum, sum sq]): a caller that passes
    successive block ranges gets each cell's sums to the last bit whatever cells share
    its pass.

    Per cell (row c): ``cum_prior`` [C, K] cumulative thresholds of omega; ``wrong_cum``
    [C, K - 1] cumulative thresholds of the wrong pick over offsets 1..K-1 from omega
    (offset 1 is the distractor); ``avail_thr`` [C, 3] thresholds for (truth,
    distractor, other wrong); ``bias_j`` [C, K] the judge's bias toward each answer by
    label; the rest length-C arrays.
    """
    n_cells = t_p.shape[0]
    acc = np.zeros((n_blocks, n_cells, 2, N_ACC, 2))
    E0, E1, XA, EA, XP, EP = judge_tables(K, lam, mu, bias_d, bias_j, kappa)
    n_words = 7 + K + K
    n_ctr = (n_words + 3) // 4
    for b in nb.prange(n_blocks):
        words = np.empty(4 * n_ctr, np.uint32)
        avail = np.zeros(K, np.int64)
        scores = np.zeros(K)
        probs = np.zeros(K)
        cand = np.zeros(K, np.int64)
        loc = np.zeros((n_cells, 2, N_ACC, 2))
        # wrong, correct, lossy a, 8 and 9 of the debate rows
        cnt = np.zeros((n_cells, 5), np.int64)
        start = (first_block + b) * BLOCK
        for i in range(start, start + BLOCK):
            fill_words(words, i, n_ctr, stream, k0, k1)
            for c in range(n_cells):
                _instance(words, K, c, cum_prior, t_p[c], wrong_cum, avail_thr, t_attack[c],
                          antagonist[c], k_examine[c], lam[c], mu[c], bias_d[c], bias_j,
                          kappa[c], near_loss[c], loss_tol[c], E0, E1, XA, EA, XP, EP, avail,
                          scores, probs, cand, loc, cnt)
        for c in range(n_cells):
            for p in range(2):
                for r in range(N_ACC):
                    acc[b, c, p, r, 0] = loc[c, p, r, 0]
                    acc[b, c, p, r, 1] = loc[c, p, r, 1]
                for r, k in ((1, cnt[c, 0]), (3, cnt[c, 1]), (7, cnt[c, 2]),
                             (11, cnt[c, 0] + cnt[c, 1])):
                    acc[b, c, p, r, 0] = k
                    acc[b, c, p, r, 1] = k
            acc[b, c, 1, 8, 0] = cnt[c, 3]
            acc[b, c, 1, 8, 1] = cnt[c, 3]
            acc[b, c, 1, 9, 0] = cnt[c, 4]
            acc[b, c, 1, 9, 1] = cnt[c, 4]
    for b in range(n_blocks):  # fixed order
        for c in range(n_cells):
            for p in range(2):
                for r in range(N_ACC):
                    acc_out[c, p, r, 0] += acc[b, c, p, r, 0]
                    acc_out[c, p, r, 1] += acc[b, c, p, r, 1]


@nb.njit(inline="always", cache=True)
def _instance(words, K, c, cum_prior, t_p, wrong_cum, avail_thr, t_attack, antagonist,
              k_examine, lam, mu, bias_d, bias_j, kappa, near_loss, loss_tol, E0, E1, XA, EA,
              XP, EP, avail, scores, probs, cand, loc, cnt):
    """One instance of cell ``c`` (its row of the per-cell arrays), from its words: adds
    its terms to ``loc[c]`` [2, N_ACC, 2] and its counts to ``cnt[c]`` [5].  Rows are
    indexed in place rather than sliced: a view per cell and instance cost 8%."""
    u = np.uint64(words[0])
    om = 0
    while om < K - 1 and u >= cum_prior[c, om]:
        om += 1
    d = (om + 1) % K
    corr = np.uint64(words[1]) < t_p
    if corr:
        a = om
    else:
        u = np.uint64(words[2])
        off = 0
        while off < K - 2 and u >= wrong_cum[c, off]:
            off += 1
        a = (om + 1 + off) % K
    for j in range(K):
        role = 0 if j == om else (1 if j == d else 2)
        avail[j] = 1 if np.uint64(words[3 + j]) < avail_thr[c, role] else 0
    # Attack evidence: the case against a holds when a is wrong.
    x_att = 1 if (a != om or np.uint64(words[3 + K]) < t_attack) else 0
    # The antagonist's alternative.
    ap = -1
    if antagonist == ANT_ASSIGNED:
        r = int((np.float64(words[4 + K]) * _INV32) * (K - 1))
        ap = (a + 1 + r) % K
    elif antagonist == ANT_BEST:
        m = 0
        for j in range(K):
            if j != a:
                cand[m] = j
                m += 1
        # Partial Fisher-Yates: the first k_examine of a random order.
        for e in range(k_examine):
            r = e + int((np.float64(words[6 + K + e]) * _INV32) * (m - e))
            tmp = cand[e]
            cand[e] = cand[r]
            cand[r] = tmp
        best = -1e300
        n_best = 0
        for e in range(k_examine):
            j = cand[e]
            s = kappa * avail[j] + (bias_d if j == d else 0.0) + bias_j[c, j]
            if s > best + 1e-12:
                best = s
                n_best = 1
            elif abs(s - best) <= 1e-12:
                n_best += 1
        pick = int((np.float64(words[5 + K]) * _INV32) * n_best)
        seen = 0
        for e in range(k_examine):
            j = cand[e]
            s = kappa * avail[j] + (bias_d if j == d else 0.0) + bias_j[c, j]
            if abs(s - best) <= 1e-12:
                if seen == pick:
                    ap = j
                seen += 1
    loss_a = 0.0 if a == om else (near_loss if a == d else 1.0)
    for p in range(2):
        att = x_att if (p == 1 and antagonist == ANT_ATTACK) else 0
        attack = np.float64(att)
        argued = p == 1 and antagonist != ANT_ATTACK and ap >= 0
        isd_a = 1 if a == d else 0
        x_a = XA[c, a, avail[a], att, isd_a]
        x_p = XP[c, ap, avail[ap], 1 if ap == d else 0] if argued else -1e300
        tot = e_a = e_p = 0.0
        if x_a < 700.0 and x_p < 700.0:
            e_a = EA[c, a, avail[a], att, isd_a]
            e_p = EP[c, ap, avail[ap], 1 if ap == d else 0] if argued else 0.0
            tot = e_a + e_p
            for j in range(K):
                if j != a and not (argued and j == ap):
                    tot += E1[c, j] if j == d else E0[c, j]
        if tot > 1e-280:
            w_om = e_a if om == a else (e_p if argued and om == ap else
                                        (E1[c, om] if om == d else E0[c, om]))
            w_d = e_a if d == a else (e_p if argued and d == ap else E1[c, d])
            pa = e_a / tot
            p_om = w_om / tot
            p_d = w_d / tot
        else:  # exponents out of range: the stable logit
            for j in range(K):
                scores[j] = 0.0
            scores[a] = avail[a]
            if argued:
                scores[ap] = avail[ap]
            _judge(K, a, d, scores, attack, lam, mu, bias_d, bias_j[c], kappa, probs)
            pa, p_om, p_d = probs[a], probs[om], probs[d]
        # Expected loss: 1 for every wrong option, near_loss for the distractor.
        exp_loss = (1.0 - p_om) - p_d * (1.0 - near_loss)
        # The twelve rows' sums and sums of squares (see sim.options): the indicator
        # rows are counted (their squares are themselves), the rest added only where
        # they are not zero (the same sums as adding every term).
        r0 = 2 if corr else 0
        loc[c, p, r0, 0] += pa
        loc[c, p, r0, 1] += pa * pa
        loc[c, p, 4, 0] += p_om
        loc[c, p, 4, 1] += p_om * p_om
        loc[c, p, 5, 0] += exp_loss
        loc[c, p, 5, 1] += exp_loss * exp_loss
        if loss_a > loss_tol:
            loc[c, p, 6, 0] += pa
            loc[c, p, 6, 1] += pa * pa
        loc[c, p, 10, 0] += pa
        loc[c, p, 10, 1] += pa * pa
    cnt[c, 1 if corr else 0] += 1
    if loss_a > loss_tol:
        cnt[c, 2] += 1
    if ap >= 0 and ap != om:
        cnt[c, 4] += 1
        if not corr:
            cnt[c, 3] += 1
