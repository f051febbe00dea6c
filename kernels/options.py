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

One kernel, two targets: an instance's terms are a function of its discrete play
(omega, a, the antagonist's alternative, their evidence, the attack), which the
per-instance steps (:func:`_classify` and its parts, :func:`_values`) compute from
its words; the GPU runs them instance by instance (:func:`_instance`), while the CPU
launcher draws a batch's words first, classifies the batch stage by stage (the
antagonist's choice too, :func:`_alternatives`), counts each block's instances by
their play and weights per-cell tables of :func:`_values` by the counts: the same
plays and the same terms, added in another order (a count times a term, play by
play, rather than instance by instance), so the counted rows are the same integers
and the sums the same up to their rounding (within 1e-12 relative,
``tests/test_options.py``).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from .interrupt import stopped
from .rng import HI_SHIFT as _HI, INV32 as _INV32
from .rng import fill_batch

STREAM = 5
BLOCK = 4096
MAX_K = 16
ANT_ASSIGNED, ANT_BEST, ANT_ATTACK = 0, 1, 2
# Accumulator rows (per protocol p: base 0 consult, 12 debate; see sim.options).
N_ACC = 12
#: The rows an instance adds a term to (the others are counts, filled from integers):
#: :func:`_instance`'s accumulator holds these N_SUM rows only, in this order (on the
#: GPU a thread's sums live in local memory, and half of it was rows never written).
SUM_ROWS = (0, 2, 4, 5, 6, 10)
N_SUM = 6



@nb.njit(cache=True)
def _judge(K, a, d, om, av_a, ap, av_ap, argued, attack, lam, mu, bias_d, bias_j, kappa,
           probs):
    """Multinomial logit over the K options, option a showing evidence ``av_a``, the
    argued alternative ``ap`` (where ``argued``) ``av_ap``, the others none: returns
    (Pr(y = a), Pr(y = omega), Pr(y = d)), the weights in ``probs`` [K] (only the three
    probabilities read are divided: no evidence array, K - 3 fewer divisions)."""
    mx = -1e300
    for j in range(K):
        v = av_ap if argued and j == ap else (av_a if j == a else 0)
        s = kappa * np.float64(v) + bias_j[j]
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
    return probs[a] / tot, probs[om] / tot, probs[d] / tot


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


@nb.njit(inline="always", cache=True)
def _wrap(x, K):
    """x mod K for 0 <= x < 2 K (no division)."""
    return x - K if x >= K else x


@nb.njit(inline="always", cache=True)
def _answer(om, off, corr, K):
    """The protagonist's answer: omega when right, else the wrong pick at offset
    1 + ``off`` from omega (offset 1 is the distractor)."""
    return om if corr else _wrap(om + 1 + off, K)


@nb.njit(inline="always", cache=True)
def _avail_bit(w, j, om, K, t0, t1, t2):
    """Bit j of the availability mask: option j's word ``w`` against its role's
    threshold (``t0`` the truth, ``t1`` the distractor omega + 1, ``t2`` another wrong
    answer)."""
    d = _wrap(om + 1, K)
    t = t0 if j == om else (t1 if j == d else t2)
    return np.int64(np.uint64(w) < t) << j


@nb.njit(inline="always", cache=True)
def _play(words, at, step, K, c, cum_prior, t_p, wrong_cum):
    """The truth omega, whether the protagonist is right and its answer a, from words
    ``at``, ``at + step``, ``at + 2 step`` of ``words`` (a batch's words slot by slot
    on the CPU, one instance's on the GPU).  The thresholds are cumulative
    (nondecreasing), so the first threshold above u is found by counting those at or
    below it: no data-dependent branch."""
    u = np.uint64(words[at])
    om = 0
    for k in range(K - 1):
        om += u >= cum_prior[c, k]
    corr = np.uint64(words[at + step]) < t_p
    u = np.uint64(words[at + 2 * step])
    off = 0
    for k in range(K - 2):
        off += u >= wrong_cum[c, k]
    return om, corr, _answer(om, off, corr, K)


@nb.njit(inline="always", cache=True)
def _avail_mask(words, at, step, K, c, om, avail_thr):
    """Bit j: option j has a passing artifact (word 3 + j against its role's threshold:
    the truth, the distractor omega + 1, another wrong answer)."""
    t0, t1, t2 = avail_thr[c, 0], avail_thr[c, 1], avail_thr[c, 2]
    mask = 0
    for j in range(K):
        mask |= _avail_bit(words[at + (3 + j) * step], j, om, K, t0, t1, t2)
    return mask


@nb.njit(inline="always", cache=True)
def _score(kappa, av, isd, bias_d, bias_jj):
    """The antagonist's score of an alternative: its evidence, the judge's pull toward
    the distractor and toward its label."""
    return kappa * av + (bias_d if isd else 0.0) + bias_jj


@nb.njit(inline="always", cache=True)
def _alternative(words, at, step, K, c, om, a, mask, antagonist, k_examine, bias_d, bias_j,
                 kappa, cand):
    """The antagonist's alternative to a (-1: none, it attacks a): an assigned
    competitor (word 4 + K), or the best-scoring of ``k_examine`` alternatives in a
    random order (words 6 + K + e, partial Fisher-Yates), ties broken by word 5 + K."""
    ap = -1
    if antagonist == ANT_ASSIGNED:
        r = int((np.float64(words[at + (4 + K) * step]) * _INV32) * (K - 1))
        ap = _wrap(a + 1 + r, K)
    elif antagonist == ANT_BEST:
        d = _wrap(om + 1, K)
        m = K - 1
        for e in range(m):  # the options other than a, in order
            cand[e] = e + (e >= a)
        # Partial Fisher-Yates: the first k_examine of a random order.
        for e in range(k_examine):
            r = e + int((np.float64(words[at + (6 + K + e) * step]) * _INV32) * (m - e))
            tmp = cand[e]
            cand[e] = cand[r]
            cand[r] = tmp
        best = -1e300
        n_best = 0
        for e in range(k_examine):
            j = cand[e]
            s = _score(kappa, (mask >> j) & 1, j == d, bias_d, bias_j[c, j])
            new = s > best + 1e-12
            tie = abs(s - best) <= 1e-12
            n_best = 1 if new else n_best + tie
            best = s if new else best
        pick = int((np.float64(words[at + (5 + K) * step]) * _INV32) * n_best)
        seen = 0
        for e in range(k_examine):
            j = cand[e]
            s = _score(kappa, (mask >> j) & 1, j == d, bias_d, bias_j[c, j])
            hit = abs(s - best) <= 1e-12
            ap = j if hit and seen == pick else ap
            seen += hit
    return ap


@nb.njit(inline="always", cache=True)
def _classify(words, K, c, cum_prior, t_p, wrong_cum, avail_thr, t_attack, antagonist,
              k_examine, bias_d, bias_j, kappa, cand):
    """The discrete part of one instance of cell ``c`` from its words: the truth omega,
    whether the protagonist is right, its answer a, the attack evidence (the case
    against a holds when a is wrong, else word 3 + K), the antagonist's alternative
    (-1: none) and the availability bits.  Returns (om, corr, a, x_att, ap, mask)."""
    om, corr, a = _play(words, 0, 1, K, c, cum_prior, t_p, wrong_cum)
    mask = _avail_mask(words, 0, 1, K, c, om, avail_thr)
    x_att = np.int64(a != om or np.uint64(words[3 + K]) < t_attack)
    ap = _alternative(words, 0, 1, K, c, om, a, mask, antagonist, k_examine, bias_d, bias_j,
                      kappa, cand)
    return om, corr, a, x_att, ap, mask


@nb.njit(inline="always", cache=True)
def _values(K, c, om, a, ap, av_a, av_ap, att, argued, lam, mu, bias_d, bias_j, kappa,
            near_loss, E0, E1, XA, EA, XP, EP, probs):
    """The judge's probabilities of one protocol's play: (Pr(y = a), Pr(y = omega), the
    expected loss), a function of the truth, the two argued options, their
    availabilities and the attack only (the unargued options' weights do not depend on
    their evidence): the CPU launcher tabulates it per cell over these, the GPU calls it
    per instance; the same expressions either way, so the same bits."""
    d = (om + 1) % K
    attack = np.float64(att)
    isd_a = 1 if a == d else 0
    x_a = XA[c, a, av_a, att, isd_a]
    x_p = XP[c, ap, av_ap, 1 if ap == d else 0] if argued else -1e300
    tot = e_a = e_p = 0.0
    if x_a < 700.0 and x_p < 700.0:
        e_a = EA[c, a, av_a, att, isd_a]
        e_p = EP[c, ap, av_ap, 1 if ap == d else 0] if argued else 0.0
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
        pa, p_om, p_d = _judge(K, a, d, om, av_a, ap, av_ap, argued, attack, lam, mu, bias_d,
                               bias_j[c], kappa, probs)
    # Expected loss: 1 for every wrong option, near_loss for the distractor.
    exp_loss = (1.0 - p_om) - p_d * (1.0 - near_loss)
    return pa, p_om, exp_loss


@nb.njit(inline="always", cache=True)
def _instance(words, K, c, cum_prior, t_p, wrong_cum, avail_thr, t_attack, antagonist,
              k_examine, lam, mu, bias_d, bias_j, kappa, near_loss, loss_tol, E0, E1, XA, EA,
              XP, EP, probs, cand, loc, cnt):
    """One instance of cell ``c`` (its row of the per-cell arrays), from its words: adds
    its terms to ``loc[c]`` [2, N_SUM, 2] (the rows :data:`SUM_ROWS` of a protocol's
    sums) and its counts to ``cnt[c]`` [5] (the GPU's per-instance step; the CPU
    launcher batches the same steps).  Rows are indexed in place rather than sliced: a
    view per cell and instance cost 8%."""
    om, corr, a, x_att, ap, mask = _classify(words, K, c, cum_prior, t_p, wrong_cum,
                                             avail_thr, t_attack, antagonist, k_examine,
                                             bias_d, bias_j, kappa, cand)
    d = (om + 1) % K
    loss_a = 0.0 if a == om else (near_loss if a == d else 1.0)
    for p in range(2):
        att = x_att if (p == 1 and antagonist == ANT_ATTACK) else 0
        argued = p == 1 and antagonist != ANT_ATTACK and ap >= 0
        pa, p_om, exp_loss = _values(K, c, om, a, ap, (mask >> a) & 1,
                                     (mask >> ap) & 1 if argued else 0,
                                     att, argued, lam, mu, bias_d, bias_j, kappa, near_loss,
                                     E0, E1, XA, EA, XP, EP, probs)
        # The six summed rows' sums and sums of squares (rows 0 or 2, 4, 5, 6, 10 of
        # sim.options, at 0 or 1, 2, 3, 4, 5): the indicator rows are counted (their
        # squares are themselves), the rest added only where they are not zero (the
        # same sums as adding every term).
        r0 = 1 if corr else 0
        loc[c, p, r0, 0] += pa
        loc[c, p, r0, 1] += pa * pa
        loc[c, p, 2, 0] += p_om
        loc[c, p, 2, 1] += p_om * p_om
        loc[c, p, 3, 0] += exp_loss
        loc[c, p, 3, 1] += exp_loss * exp_loss
        if loss_a > loss_tol:
            loc[c, p, 4, 0] += pa
            loc[c, p, 4, 1] += pa * pa
        loc[c, p, 5, 0] += pa
        loc[c, p, 5, 1] += pa * pa
    cnt[c, 1 if corr else 0] += 1
    if loss_a > loss_tol:
        cnt[c, 2] += 1
    if ap >= 0 and ap != om:
        cnt[c, 4] += 1
        if not corr:
            cnt[c, 3] += 1


def table_bytes(K: int) -> int:
    """Bytes of one cell's tables in :func:`value_tables` (what a pass of many cells
    holds beside its sums)."""
    return 8 * 6 * K * K * 2 * (1 + 2 * (K + 1)) + K * K


@nb.njit(parallel=True, cache=True)
def value_tables(K, antagonist, lam, mu, bias_d, bias_j, kappa, near_loss, loss_tol, E0, E1,
                 XA, EA, XP, EP):
    """Per cell, :func:`_values` of every play the kernel can meet, with the squares:
    ``V0[C, K, K, 2, 6]`` for consultancy over (omega, a, its evidence), ``V1[C, K, K,
    2, Q, 6]`` for debate over (omega, a, its evidence, Q = 2 x (K + 1) codes of the
    antagonist's play: ``2 (ap + 1) + its evidence``, or ``x_att`` with the attack);
    the six numbers are Pr(y = a), its square, Pr(y = omega), its square, the expected
    loss and its square.  ``lossy[C, K, K]``: whether a's loss exceeds the tolerance."""
    n_cells = lam.shape[0]
    Q = 2 * (K + 1)
    V0 = np.zeros((n_cells, K, K, 2, 6))
    V1 = np.zeros((n_cells, K, K, 2, Q, 6))
    lossy = np.zeros((n_cells, K, K), np.bool_)
    for c in nb.prange(n_cells):
        probs = np.zeros(K)
        for om in range(K):
            d = (om + 1) % K
            for a in range(K):
                loss_a = 0.0 if a == om else (near_loss[c] if a == d else 1.0)
                lossy[c, om, a] = loss_a > loss_tol[c]
                for av_a in range(2):
                    for q in range(Q):
                        if q == 0:  # consultancy
                            ap, av_ap, att, argued = -1, 0, 0, False
                        elif antagonist[c] == ANT_ATTACK:
                            if q > 1:
                                break
                            ap, av_ap, att, argued = -1, 0, 1, False
                        else:
                            ap, av_ap, att = q // 2 - 1, q % 2, 0
                            if ap < 0 or ap == a:
                                continue
                            argued = True
                        pa, p_om, el = _values(K, c, om, a, ap, av_a, av_ap, att, argued,
                                               lam[c], mu[c], bias_d[c], bias_j, kappa[c],
                                               near_loss[c], E0, E1, XA, EA, XP, EP, probs)
                        for v, x in ((0, pa), (2, p_om), (4, el)):
                            if q == 0:
                                V0[c, om, a, av_a, v] = x
                                V0[c, om, a, av_a, v + 1] = x * x
                            V1[c, om, a, av_a, q, v] = x
                            V1[c, om, a, av_a, q, v + 1] = x * x
    return V0, V1, lossy


@nb.njit(cache=True)
def score_table(K, bias_d, bias_j, kappa):
    """Per cell, :func:`_score` of every option j by its evidence and whether it is
    the distractor: ``SC[C, K, 2, 2]`` (the same expression, so the same floats)."""
    n_cells = kappa.shape[0]
    SC = np.empty((n_cells, K, 2, 2))
    for c in range(n_cells):
        for j in range(K):
            for av in range(2):
                for isd in range(2):
                    SC[c, j, av, isd] = _score(kappa[c], av, isd == 1, bias_d[c], bias_j[c, j])
    return SC


@nb.njit(cache=True)
def score_ranks(K, bias_d, bias_j, kappa):
    """Per cell, integer ranks of :func:`score_table`'s entries that decide
    :func:`_alternative`'s two comparisons of scores exactly, where such ranks exist:
    ``RK[C, K, 2, 2]`` with, for every two entries s and b (and b the running best's
    start, -1e300, of rank 0), ``s > b + 1e-12`` exactly when ``RK[s] > RK[b]`` and
    ``|s - b| <= 1e-12`` exactly when ``RK[s] == RK[b]`` (checked pair by pair on the
    same float expressions).  Scores closer than the tolerance in a chain (a ties b,
    b ties c, a beats c) have no such ranks: the cell's entries are then all -1 and
    the batched antagonist compares the floats instead."""
    SC = score_table(K, bias_d, bias_j, kappa)
    n_cells = kappa.shape[0]
    S = 4 * K + 1
    RK = np.full((n_cells, K, 2, 2), -1, np.int64)
    f = np.empty(S)
    rk = np.empty(S, np.int64)
    for c in range(n_cells):
        f[:4 * K] = SC[c].ravel()
        f[4 * K] = -1e300
        order = np.argsort(f, kind="mergesort")
        r = 0
        first = f[order[0]]
        for t in range(S):  # a new rank wherever a score beats the first of its group
            x = f[order[t]]
            if x > first + 1e-12:
                r += 1
                first = x
            rk[order[t]] = r
        ok = rk[4 * K] == 0
        for i in range(S):
            for b in range(S):
                gt = f[i] > f[b] + 1e-12
                tie = abs(f[i] - f[b]) <= 1e-12
                ok = ok and gt == (rk[i] > rk[b]) and tie == (rk[i] == rk[b])
        if ok:
            RK[c] = rk[:4 * K].reshape(K, 2, 2)
    return RK


#: The options' labels packed four bits each (option e in bits 4e..4e+3): the
#: batched antagonist keeps each instance's candidate order in one integer.
_NIBBLE_IDENT = np.uint64(sum(e << (4 * e) for e in range(16)) & (2 ** 64 - 1))
_NIBBLE_ONES = np.uint64(sum(1 << (4 * e) for e in range(16)))
_NIB = np.uint64(15)


@nb.njit(inline="always", cache=True)
def _alternatives(W, K, c, OM, A, MK, antagonist, k_examine, SC, RK, AP, PERM, BEST, NBEST, LAB,
                  SCO, MX, MSET):
    """:func:`_alternative` for a batch (words ``W[slot, instance]``) into ``AP``, stage
    by stage so that each loop runs over the batch's instances without branches: the
    same alternatives, to the instance (``tests/test_options.py``).  A uniform times a
    small integer n, ``int((w 2**-32) n)``, is ``(w n) >> 32`` exactly (the product
    has at most 36 significant bits); the candidate order of the partial
    Fisher-Yates shuffle is kept as 4-bit labels packed in one integer per instance
    (a swap is shifts and XORs).  Where the cell's scores have ranks
    (:func:`score_ranks`, ``RK``), the best of the examined is found option by option
    (each option's rank from its evidence and whether it is the distractor, a
    select among four numbers the batch shares; no lookup per instance): the
    examined options of the highest rank, as a bit set, and their count, which the
    comparisons in examination order reach too (a rank order has no near-ties), then
    the pick among them in examination order; otherwise the scores are looked up in
    :func:`score_table` (flat, unsigned indices) and compared in examination order,
    kept with the labels for the tie-break's pass."""
    n = W.shape[1]
    if antagonist == ANT_ASSIGNED:
        km1 = np.uint64(K - 1)
        for j in range(n):
            r = np.int64((np.uint64(W[4 + K, j]) * km1) >> _HI)
            AP[j] = _wrap(A[j] + 1 + r, K)
        return
    m = K - 1
    one = np.uint64(1)
    two = np.uint64(2)
    four = np.uint64(4)
    uk = np.uint64(K)
    ident = _NIBBLE_IDENT & ((one << np.uint64(4 * m)) - one)
    ones = _NIBBLE_ONES & ((one << np.uint64(4 * m)) - one)
    SCc = SC[c].ravel()  # option j, its evidence, distractor at 4 j + 2 av + isd
    for j in range(n):
        # cand[e] = e + (e >= a): the labels 0..m-1, plus one from position a on.
        sh = np.uint64(4 * A[j])
        PERM[j] = ident + ((ones >> sh) << sh)
        BEST[j] = -1e300
        NBEST[j] = 0
        AP[j] = -1
    for e in range(k_examine):
        se = np.uint64(4 * e)
        me = np.uint64(m - e)
        for j in range(n):
            r = np.uint64(e) + ((np.uint64(W[6 + K + e, j]) * me) >> _HI)
            sr = r * four
            x = ((PERM[j] >> se) ^ (PERM[j] >> sr)) & _NIB
            PERM[j] ^= (x << se) | (x << sr)
    if RK[c, 0, 0, 0] >= 0:
        # The examined options as a bit set (in BEST's place, as integers: NBEST).
        for j in range(n):
            NBEST[j] = 0
        for e in range(k_examine):
            se = np.uint64(4 * e)
            for j in range(n):
                NBEST[j] |= np.int64(one << ((PERM[j] >> se) & _NIB))
        # Option by option: its rank (-2 where not examined), the highest so far (MX,
        # -1 before any), the set of examined options of that rank (MSET) and their
        # count (AP's place until the pick).
        for j in range(n):
            MX[j] = -1
            MSET[j] = 0
            AP[j] = 0
        for lab in range(K):
            r00, r01 = RK[c, lab, 0, 0], RK[c, lab, 0, 1]
            r10, r11 = RK[c, lab, 1, 0], RK[c, lab, 1, 1]
            bit = np.int64(1) << lab
            dl = lab - 1 if lab > 0 else K - 1  # the truth whose distractor lab is
            for j in range(n):
                isd = OM[j] == dl
                av = (MK[j] & bit) != 0
                r = (r11 if isd else r10) if av else (r01 if isd else r00)
                r = r if (NBEST[j] & bit) != 0 else -2
                mx = MX[j]
                new = r > mx
                eq = np.int64(r == mx)
                AP[j] = 1 if new else AP[j] + eq
                MSET[j] = bit if new else MSET[j] | (eq << lab)
                MX[j] = r if new else mx
        for j in range(n):  # the pick among them, then counted down to it
            NBEST[j] = np.int64((np.uint64(W[5 + K, j]) * np.uint64(AP[j])) >> _HI)
            AP[j] = -1
        for e in range(k_examine):
            se = np.uint64(4 * e)
            for j in range(n):
                lab_ = np.int64((PERM[j] >> se) & _NIB)
                hit = (MSET[j] >> lab_) & 1
                left = NBEST[j]
                AP[j] = lab_ if (hit & np.int64(left == 0)) == 1 else AP[j]
                NBEST[j] = left - hit
        return
    for e in range(k_examine):
        se = np.uint64(4 * e)
        for j in range(n):
            jj = (PERM[j] >> se) & _NIB
            d = np.uint64(OM[j]) + one
            d = d - uk if d >= uk else d
            av = (np.uint64(MK[j]) >> jj) & one
            s = SCc[(jj << two) | (av << one) | np.uint64(jj == d)]
            LAB[e, j] = np.int64(jj)
            SCO[e, j] = s
            # Every operand loaded before the selects: a load inside one arm of a
            # conditional expression stays a branch (unpredictable here), not a select.
            best = BEST[j]
            nbest = NBEST[j]
            new = s > best + 1e-12
            tie = np.int64(abs(s - best) <= 1e-12)
            NBEST[j] = 1 if new else nbest + tie
            BEST[j] = s if new else best
    for j in range(n):  # the pick among the ties, then counted down to it
        NBEST[j] = np.int64((np.uint64(W[5 + K, j]) * np.uint64(NBEST[j])) >> _HI)
    for e in range(k_examine):
        for j in range(n):
            lab = LAB[e, j]
            ap = AP[j]
            left = NBEST[j]
            hit = np.int64(abs(SCO[e, j] - BEST[j]) <= 1e-12)
            AP[j] = lab if (hit & np.int64(left == 0)) == 1 else ap
            NBEST[j] = left - hit


#: Instances whose words are drawn together (any multiple of 4, the histogram's
#: interleaved copies, gives the same sums).
BATCH = 256
#: Chunks of successive blocks the CPU launcher shares among its threads (any value
#: gives the same sums).
CHUNKS = 64


@nb.njit(parallel=True, cache=True)
def option_sums_cells(K, cum_prior, t_p, wrong_cum, avail_thr, t_attack, antagonist,
                      k_examine, lam, mu, bias_d, bias_j, kappa, near_loss, loss_tol,
                      first_block, n_blocks, k0, k1, stream, acc_out):
    """Sums over instance blocks [first_block, first_block + n_blocks) of C cells with K
    options on common random numbers: each instance's words are drawn once and played
    out for every cell.  Adds them, block by block in order, onto ``acc_out``
    float64[C, 2, N_ACC, 2] (protocol, row, [sum, sum sq]): a caller that passes
    successive block ranges gets each cell's sums to the last bit whatever cells share
    its pass (each block's sums are its own counts weighted in a fixed order).

    Per cell (row c): ``cum_prior`` [C, K] cumulative thresholds of omega; ``wrong_cum``
    [C, K - 1] cumulative thresholds of the wrong pick over offsets 1..K-1 from omega
    (offset 1 is the distractor); ``avail_thr`` [C, 3] thresholds for (truth,
    distractor, other wrong); ``bias_j`` [C, K] the judge's bias toward each answer by
    label; the rest length-C arrays.

    The launcher batches what :func:`_instance` does one instance at a time: a batch's
    words first (the generator vectorises), then per cell each instance's discrete play
    (:func:`_classify`'s steps over the batch, :func:`_alternatives`), counted by its
    key in the cell's tables of :func:`_values` (:func:`value_tables`); each block's
    sums are the tables weighted by its counts, key by key: the same terms as
    :func:`_instance` added in another order, so the same sums up to rounding (the
    counted rows exactly).
    """
    n_cells = t_p.shape[0]
    acc = np.zeros((n_blocks, n_cells, 2, N_ACC, 2))
    E0, E1, XA, EA, XP, EP = judge_tables(K, lam, mu, bias_d, bias_j, kappa)
    V0, V1, lossy = value_tables(K, antagonist, lam, mu, bias_d, bias_j, kappa, near_loss,
                                 loss_tol, E0, E1, XA, EA, XP, EP)
    n_words = 7 + K + K
    n_ctr = (n_words + 3) // 4
    Q = 2 * (K + 1)
    # Flat rows per cell: key (om, a, its evidence) then, for debate, the antagonist's
    # code; six numbers a key.
    T0 = V0.reshape(n_cells, K * K * 2 * 6)
    T1 = V1.reshape(n_cells, K * K * 2 * Q * 6)
    L = lossy.reshape(n_cells, K * K)
    NB = K * K * 2 * Q
    SC = score_table(K, bias_d, bias_j, kappa)
    RK = score_ranks(K, bias_d, bias_j, kappa)
    # Chunks of successive blocks (the scratch arrays, the counts' among them, made once
    # a chunk); every block's sums are its own, added in block order.
    n_par = max(1, min(n_blocks, CHUNKS))
    per = (n_blocks + n_par - 1) // n_par
    for ch in nb.prange(n_par):
        # A batch's words slot by slot: word k of instance j at k * BATCH + j.
        W = np.empty((4 * n_ctr, BATCH), np.uint32)
        OM = np.empty(BATCH, np.int64)
        AP = np.empty(BATCH, np.int64)
        PERM = np.empty(BATCH, np.uint64)
        BEST = np.empty(BATCH)
        NBEST = np.empty(BATCH, np.int64)
        LAB = np.empty((K, BATCH), np.int64)
        SCO = np.empty((K, BATCH))
        MX = np.empty(BATCH, np.int64)
        MSET = np.empty(BATCH, np.int64)
        OFF = np.empty(BATCH, np.int64)
        A = np.empty(BATCH, np.int64)
        MK = np.empty(BATCH, np.int64)
        # Per cell the block's instances counted by their play's key (omega, a, its
        # evidence) and the antagonist's code q1: every term of an instance is a
        # function of these (the tables of _values), so the block's sums are the
        # tables weighted by the counts (see the end of the block), which zeroes
        # them again for the next block.
        H = np.zeros((n_cells, 4, NB), np.int32)
        for b in range(ch * per, min(n_blocks, (ch + 1) * per)):
            start = (first_block + b) * BLOCK
            for i0 in range(start, start + BLOCK, BATCH):
                if stopped():  # Ctrl-C: the caller raises KeyboardInterrupt
                    break
                fill_batch(W, i0, BATCH, n_ctr, stream, k0, k1)
                for c in range(n_cells):
                    ant = antagonist[c]
                    t_att = t_attack[c]
                    # The steps of _play and _avail_mask (their comparisons, _answer and
                    # _avail_bit), stage by stage over the batch so that each loop
                    # vectorises: the same classes, pinned to _instance, the GPU's
                    # per-instance step, by tests/test_options.py.
                    for j in range(BATCH):
                        OM[j] = 0
                        OFF[j] = 0
                        MK[j] = 0
                    for k in range(K - 1):
                        t = cum_prior[c, k]
                        for j in range(BATCH):
                            OM[j] += np.uint64(W[0, j]) >= t
                    for k in range(K - 2):
                        t = wrong_cum[c, k]
                        for j in range(BATCH):
                            OFF[j] += np.uint64(W[2, j]) >= t
                    tp = t_p[c]
                    for j in range(BATCH):
                        A[j] = _answer(OM[j], OFF[j], np.uint64(W[1, j]) < tp, K)
                    t0, t1, t2 = avail_thr[c, 0], avail_thr[c, 1], avail_thr[c, 2]
                    for q in range(K):
                        for j in range(BATCH):
                            MK[j] |= _avail_bit(W[3 + q, j], q, OM[j], K, t0, t1, t2)
                    # Each instance's key (in OFF's place), then counted in four
                    # interleaved copies (successive increments of one key do not wait
                    # on each other); the copies are added at the block's end.
                    if ant == ANT_ATTACK:
                        for j in range(BATCH):
                            om, a, mask = OM[j], A[j], MK[j]
                            q1 = np.int64(a != om or np.uint64(W[3 + K, j]) < t_att)
                            OFF[j] = ((om * K + a) * 2 + ((mask >> a) & 1)) * Q + q1
                    else:
                        _alternatives(W, K, c, OM, A, MK, ant, k_examine[c], SC, RK, AP, PERM,
                                      BEST, NBEST, LAB, SCO, MX, MSET)
                        for j in range(BATCH):
                            om, a, mask, ap = OM[j], A[j], MK[j], AP[j]
                            q1 = 2 * (ap + 1) + ((mask >> ap) & 1) if ap >= 0 else 0
                            OFF[j] = ((om * K + a) * 2 + ((mask >> a) & 1)) * Q + q1
                    for j in range(0, BATCH, 4):
                        H[c, 0, OFF[j]] += 1
                        H[c, 1, OFF[j + 1]] += 1
                        H[c, 2, OFF[j + 2]] += 1
                        H[c, 3, OFF[j + 3]] += 1
            # The block's sums: each key's count times its terms (a count times a value,
            # added key by key in a fixed order), instead of the terms added instance by
            # instance: the same sums up to rounding (the order of the additions differs,
            # so not to the last bit), and the counted rows exact.
            for c in range(n_cells):
                for x in range(NB):
                    H[c, 0, x] += H[c, 1, x] + H[c, 2, x] + H[c, 3, x]
                    H[c, 1, x] = 0
                    H[c, 2, x] = 0
                    H[c, 3, x] = 0
                run = np.zeros((2, 12))
                n_right = n_lossy = n_alt = n_alt_wrong = 0
                for key in range(K * K * 2):
                    om = key // (2 * K)
                    a = (key // 2) % K
                    corr = om == a
                    lo_ = L[c, om * K + a]
                    n0 = 0
                    for q1 in range(Q):
                        n0 += H[c, 0, key * Q + q1]
                    if n0 == 0:
                        continue
                    n_right += n0 if corr else 0
                    n_lossy += n0 if lo_ else 0
                    for p in range(2):
                        for q1 in range(Q if p == 1 else 1):
                            nq = n0 if p == 0 else H[c, 0, key * Q + q1]
                            if nq == 0:
                                continue
                            x = np.float64(nq)
                            k6 = 6 * key if p == 0 else 6 * (key * Q + q1)
                            T = T0 if p == 0 else T1
                            v0, v1, v2 = x * T[c, k6], x * T[c, k6 + 1], x * T[c, k6 + 2]
                            v3, v4, v5 = x * T[c, k6 + 3], x * T[c, k6 + 4], x * T[c, k6 + 5]
                            r0 = 2 if corr else 0
                            run[p, r0] += v0
                            run[p, r0 + 1] += v1
                            run[p, 4] += v2
                            run[p, 5] += v3
                            run[p, 6] += v4
                            run[p, 7] += v5
                            if lo_:
                                run[p, 8] += v0
                                run[p, 9] += v1
                            run[p, 10] += v0
                            run[p, 11] += v1
                            if p == 1 and antagonist[c] != ANT_ATTACK:
                                ap = q1 // 2 - 1
                                if ap >= 0 and ap != om:
                                    n_alt += nq
                                    n_alt_wrong += 0 if corr else nq
                    for q1 in range(Q):
                        H[c, 0, key * Q + q1] = 0
                n_wrong = BLOCK - n_right
                for p in range(2):
                    for r, k in ((0, 0), (2, 2), (4, 4), (5, 6), (6, 8), (10, 10)):
                        acc[b, c, p, r, 0] = run[p, k]
                        acc[b, c, p, r, 1] = run[p, k + 1]
                    for r, k in ((1, n_wrong), (3, n_right), (7, n_lossy), (11, BLOCK)):
                        acc[b, c, p, r, 0] = k
                        acc[b, c, p, r, 1] = k
                acc[b, c, 1, 8, 0] = n_alt_wrong
                acc[b, c, 1, 8, 1] = n_alt_wrong
                acc[b, c, 1, 9, 0] = n_alt
                acc[b, c, 1, 9, 1] = n_alt
    for b in range(n_blocks):  # fixed order
        for c in range(n_cells):
            for p in range(2):
                for r in range(N_ACC):
                    acc_out[c, p, r, 0] += acc[b, c, p, r, 0]
                    acc_out[c, p, r, 1] += acc[b, c, p, r, 1]
