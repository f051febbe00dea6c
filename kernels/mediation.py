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
(its expected catch).

What a case adds to the metrics is fixed by a few integers, and the kernel adds
only those (integer sums: any split into threads or blocks gives the same result):

* the flaw-and-dissent part (Pr(wrong), mean residual flaws, and per synthesis the
  final decision, escalation, erasure) by the case's *class*, (a flaw remains,
  dissents raised, dissents a summary keeps; a memo keeps all), with per class the
  sums of the residual flaw count and of its square (the only part linear in it);
* the citation part (perfect validation, exact share, evidence quality, the
  relevance check's catch) by the sums of the five class counts, of their pairwise
  products, of the perfect-case indicator and of its products with the counts.

The model weights these into the per-case vector's sums and outer-product sums
(``class_moments``).  No metric combines a citation value with a flaw value, so
their cross moments are not accumulated (their covariance enters no standard error).

Inversion by table lookup: every uniform test ``u > c`` (``u = (w + 0.5) 2**-32``) of
an inversion's cumulative sums is the integer test ``w >= G`` with
``G = floor(c 2**32 - 1/2) + 1`` (:func:`above`), and ``u < q`` is ``w < T``,
``T = ceil(q 2**32 - 1/2)`` (:func:`below`); both are exact in float64, so the draws
are the ones the float tests give, bit for bit.  The cumulative sums are computed
once per call, with the same float operations as the sequential inversions
(:func:`poisson_cdf`, :func:`binomial_cdf`), into rows of thresholds; a draw starts at
the row's count for its word's top 8 bits (:func:`invert`) and steps past the few
thresholds left in that bucket.  Written here rather than taken from a library: the
draws must be the sequential inversions' own, bit for bit, from keyed per-case words
inside compiled loops, which no library's samplers provide.

One kernel, two targets: the per-case steps (:func:`invert`, :func:`residual_flaws`,
:func:`dissent`, :func:`citations`, composed by :func:`one_case`) are plain functions
of words, scalars and read-only tables that numba can compile as CUDA device
functions too; the CPU launcher :func:`mediation_sums` draws a batch of cases' words
first so that the generator vectorises, and runs each step over the batch: an
inversion on a row the whole batch shares compares every word with every threshold
(vectorised), the others are looked up case by case.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from .interrupt import stopped
from .rng import HI_SHIFT as _HI, INV32 as _INV32, LO_WORD as _LO
from .rng import fill_batch, philox4x32_10
from .rng import word_above as above, word_below as below

STREAM = 10
#: Cases per vectorised batch (any value gives the same sums).
BATCH = 256
#: Binomial rows tabulated for flaw counts 0..N_TAB (larger counts, rare even at the
#: largest mean flaw count allowed, invert sequentially: the same draws).
N_TAB = 128
#: Citation tables up to this many citations (more: sequential inversion).
M_TAB = 64
#: Inversions on a row shared by the batch with at most this many thresholds compare
#: every word with every threshold (vectorised) rather than look each word up.
BROADCAST = 32
#: The citation sums: 5 class counts, their 5 x 5 products, the perfect-case
#: indicator and its products with the 5 counts.
N_CIT = 5 + 25 + 1 + 5
_NEVER = np.uint64(1 << 32)
_TOP = np.uint64(24)
#: Residual flaw counts up to this are counted per class (larger ones, rare, added).
F_CAP = 15
#: Citation splits are counted (their sums weighted at the end) where they have at
#: most this many keys, (M + 1)**4 (M <= 10); otherwise summed case by case.
CIT_BINS = 1 << 14


@nb.njit(cache=True)
def binom_inv(u, n, q):
    """Binomial(n, q) by sequential inversion of the uniform u (the reference draw)."""
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


@nb.njit(cache=True)
def binomial_cdf(n, q, out):
    """Into ``out[:n]``: the thresholds G of :func:`binom_inv`'s cumulative sums c_0 ..
    c_{n-1} (the draw is the number of them that u exceeds); the rest never."""
    out[:] = _NEVER
    if n == 0 or q <= 0.0:
        return
    if q >= 1.0:
        out[:n] = 0
        return
    p = (1.0 - q) ** n
    c = p
    r = q / (1.0 - q)
    for k in range(n):
        out[k] = above(c)
        p *= r * (n - k) / (k + 1)
        c += p


@nb.njit(cache=True)
def poisson_cdf(lam):
    """The thresholds G of Poisson(lam)'s cumulative sums, as the sequential inversion
    forms them (stopping where it stops: a probability that underflows to 0, or 10,000
    terms), up to the first that no word exceeds."""
    out = np.empty(10_000, np.uint64)
    k, p = 0, math.exp(-lam)
    c = p
    out[0] = above(c)
    n = 1
    while k < 9_999 and out[n - 1] < _NEVER:  # at most 10,000 thresholds: draws <= 10,000
        k += 1
        p *= lam / k
        c += p
        if p == 0.0:
            break
        out[n] = above(c)
        n += 1
    return out[:n]


@nb.njit(cache=True)
def starts(G):
    """Per row of thresholds (non-decreasing, ending in a never-threshold) and per top
    byte t of a word: how many of the row's thresholds are at most t 2**24."""
    rows, width = G.shape
    S = np.zeros((rows, 256), np.int32)
    for r in range(rows):
        k = 0
        for t in range(256):
            lo = np.uint64(t) << np.uint64(24)
            while k < width and G[r, k] <= lo:
                k += 1
            S[r, t] = k
    return S


@nb.njit(cache=True)
def direct(G, S):
    """Per row of thresholds and top byte of a word: the draw of every word with that
    top byte (:func:`invert`'s), where they all give the same one, else -1 (a
    threshold lies inside the byte's range).  One more row of -1 (the rows beyond the
    table).  One lookup for most words."""
    rows = G.shape[0]
    D = np.full((rows + 1, 256), -1, np.int16)
    span = np.uint64((1 << 24) - 1)
    for r in range(rows):
        for t in range(256):
            k = S[r, t]
            top = (np.uint64(t) << np.uint64(24)) + span  # the byte's largest word
            if G[r, k] > top:
                D[r, t] = k
    return D


@nb.njit(inline="always", cache=True)
def invert(w, G, S, row):
    """How many of row ``row``'s thresholds the word w reaches (an inversion's draw)."""
    u = np.uint64(w)
    r = np.uint64(row)
    k = np.uint64(S[r, u >> np.uint64(24)])  # unsigned indices: no negative-index wrap
    while u >= G[r, k]:
        k += np.uint64(1)
    return np.int64(k)


def tables(flaws, surv, iters, P, s, false_dissent, erase, false_alarm, M, classes):
    """Every table the kernel reads, as a tuple (see :func:`mediation_sums`)."""
    pois = poisson_cdf(float(flaws))
    G_p = np.full((1, len(pois) + 1), _NEVER, np.uint64)
    G_p[0, :len(pois)] = pois
    n_tab = N_TAB
    G_b = np.full((n_tab + 1, n_tab + 1), _NEVER, np.uint64)
    tmp = np.empty(n_tab + 1, np.uint64)
    for n in range(n_tab + 1):
        binomial_cdf(n, float(surv), tmp)
        G_b[n] = tmp
    t_dis = np.array([dissent_threshold(n, s, false_dissent) for n in range(n_tab + 1)],
                     np.uint64)
    q = citation_shares(np.asarray(classes, np.float64))
    m_tab = min(int(M), M_TAB)
    G_c = np.full((4 * (m_tab + 1), m_tab + 1), _NEVER, np.uint64)
    for c in range(4):
        for n in range(m_tab + 1):
            binomial_cdf(n, q[c], tmp)
            G_c[c * (m_tab + 1) + n] = tmp[:m_tab + 1]
    return (G_p, starts(G_p), G_b, starts(G_b), t_dis, below(false_alarm), below(erase),
            G_c, starts(G_c), q)


@nb.njit(cache=True)
def dissent_threshold(nf, s, false_dissent):
    """The threshold of Pr(a perspective dissents) on nf residual flaws."""
    p_dis = 1.0 - (1.0 - s) ** nf if nf >= 1 else false_dissent
    return below(p_dis)


@nb.njit(cache=True)
def citation_shares(classes):
    """The sequential binomials' success probabilities q_c = share_c / the shares left."""
    q = np.zeros(4)
    rest = 1.0
    for c in range(4):
        v = classes[c] / rest if rest > 0 else 0.0
        q[c] = min(max(v, 0.0), 1.0)
        rest -= classes[c]
    return q


@nb.njit(inline="always", cache=True)
def residual_flaws(W, j, iters, surv, G_p, S_p, G_b, S_b, t_fa):
    """One case's residual flaw count: Poisson(F_0), then per iteration the binomial
    survivors and a false alarm's new flaw (words 0 .. 2 iters of ``W[:, j]``)."""
    nf = invert(W[0, j], G_p, S_p, 0)
    pos = 1
    for _ in range(iters):
        if nf <= N_TAB:
            nf = invert(W[pos, j], G_b, S_b, nf)
        else:
            nf = binom_inv((np.float64(W[pos, j]) + 0.5) * _INV32, nf, surv)
        nf += np.uint64(W[pos + 1, j]) < t_fa
        pos += 2
    return nf


@nb.njit(inline="always", cache=True)
def dissent(w_dissent, w_erase, t, t_erase):
    """One perspective: (it dissents, and its dissent survives a summary), as 0 / 1."""
    d = np.int64(np.uint64(w_dissent) < t)
    return d, d & np.int64(np.uint64(w_erase) >= t_erase)


@nb.njit(inline="always", cache=True)
def citations(W, j, pos, M, q, G_c, S_c, counts):
    """Into ``counts``: one case's split of its M citations over the five classes."""
    left = M
    m1 = min(M, M_TAB) + 1
    for c in range(4):
        if M <= M_TAB:
            kc = invert(W[pos + c, j], G_c, S_c, c * m1 + left)
        else:
            kc = binom_inv((np.float64(W[pos + c, j]) + 0.5) * _INV32, left, q[c])
        counts[c] = kc
        left -= kc
    counts[4] = left


@nb.njit(inline="always", cache=True)
def one_case(i, k0, k1, iters, P, M, surv, s, false_dissent, G_p, S_p, G_b, S_b, t_dis, t_fa,
             t_erase, q, G_c, S_c, W, counts):
    """A case's flaw class and residual flaw count (its citation counts into ``counts``),
    one case at a time: the steps above in order (the launchers batch them).  ``W``:
    scratch for the case's words, [4 n_ctr, 1]."""
    n_words = 1 + 2 * iters + 2 * P + 4
    ii = np.uint64(i)
    for c in range(W.shape[0] // 4):
        w0, w1, w2, w3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(c), np.uint64(STREAM),
                                       k0, k1)
        W[4 * c, 0] = np.uint32(w0)
        W[4 * c + 1, 0] = np.uint32(w1)
        W[4 * c + 2, 0] = np.uint32(w2)
        W[4 * c + 3, 0] = np.uint32(w3)
    nf = residual_flaws(W, 0, iters, surv, G_p, S_p, G_b, S_b, t_fa)
    t = t_dis[nf] if nf <= N_TAB else dissent_threshold(nf, s, false_dissent)
    raised, kept = 0, 0
    pos = 1 + 2 * iters
    for _ in range(P):
        d, k = dissent(W[pos, 0], W[pos + 1, 0], t, t_erase)
        raised += d
        kept += k
        pos += 2
    citations(W, 0, n_words - 4, M, q, G_c, S_c, counts)
    return ((nf >= 1) * (P + 1) + raised) * (P + 1) + kept, nf


@nb.njit(parallel=True, cache=True)
def mediation_sums(n, k0, k1, iters, P, M, surv, s, false_dissent, G_p, S_p, G_b, S_b, t_dis,
                   t_fa, t_erase, q, G_c, S_c, n_chunks):
    """The sums over cases 0 .. n - 1 (module docstring): per flaw class
    ``(wrong (P + 1) + raised) (P + 1) + kept``, the number of cases and the sums of the
    residual flaw count and of its square (int64[3, 2 (P + 1)**2]); and the citation
    sums (int64[N_CIT]).  The tables come from :func:`tables`; ``n_chunks`` splits the
    work and does not change the result."""
    stream = np.uint64(STREAM)
    n_words = 1 + 2 * iters + 2 * P + 4
    n_ctr = (n_words + 3) // 4
    n_cls = 2 * (P + 1) * (P + 1)
    n_pois = 0  # the initial flaws' thresholds that some word reaches
    while G_p[0, n_pois] < _NEVER:
        n_pois += 1
    # The binomial rows' draws by a word's top byte where it decides them
    # (:func:`direct`), the thresholds past it otherwise: the same draws.
    D_b = direct(G_b, S_b)
    D_c = direct(G_c, S_c)
    # The thresholds as unsigned integers (a signed one against an unsigned word would
    # be compared as floats: the same answers, slower).
    u_fa = np.uint64(t_fa)
    u_erase = np.uint64(t_erase)
    F1 = F_CAP + 2  # bins of a class: 0 .. F_CAP residual flaws, and more
    M1 = M + 1
    cit_bins = M1 ** 4 <= CIT_BINS
    out = np.zeros((n_chunks, 3, n_cls), np.int64)
    cit = np.zeros((n_chunks, N_CIT), np.int64)
    size = (n + n_chunks - 1) // n_chunks
    for b in nb.prange(n_chunks):
        lo = b * size
        hi = min(n, lo + size)
        W = np.empty((4 * n_ctr, BATCH), np.uint32)
        acc = np.zeros((3, n_cls), np.int64)
        # Cases counted by (class, residual flaw count up to F_CAP), four interleaved
        # copies (they break the chains of increments on one class); the sums of the
        # count and its square are these counts weighted at the end (exact integers).
        hist = np.zeros((4, n_cls * F1), np.int64)
        csplit = np.zeros(M1 ** 4 if cit_bins else 1, np.int64)
        ca = np.zeros(N_CIT, np.int64)
        counts = np.zeros(5, np.int64)
        nf = np.empty(BATCH, np.int64)
        n32 = np.empty(BATCH, np.int32)
        t = np.empty(BATCH, np.uint64)
        cls = np.empty(BATCH, np.int64)
        raised = np.empty(BATCH, np.int64)
        kept = np.empty(BATCH, np.int64)
        C = np.empty((5, BATCH), np.int64)
        perf = np.empty(BATCH, np.int64)
        for i0 in range(lo, hi, BATCH):
            if stopped():  # Ctrl-C: the caller raises KeyboardInterrupt
                break
            m = min(BATCH, hi - i0)
            fill_batch(W, i0, m, n_ctr, stream, k0, k1)
            # An inversion whose table row is the same for every case (the initial
            # flaws; the first citation class) counts the thresholds each word reaches,
            # threshold by threshold over the batch (this vectorises); the others look
            # their row up case by case (:func:`invert`).
            pc = n_words - 4
            # (32-bit words against 32-bit thresholds, counted in 32 bits: twice the
            # lanes; a threshold of 2**32 or more is never reached and ends the row.)
            if n_pois <= BROADCAST:
                for j in range(m):
                    n32[j] = 0
                for k in range(n_pois):
                    g = np.uint32(G_p[0, k])
                    for j in range(m):
                        n32[j] += W[0, j] >= g
                for j in range(m):
                    nf[j] = n32[j]
            else:
                for j in range(m):
                    nf[j] = invert(W[0, j], G_p, S_p, 0)
            if M <= BROADCAST:
                for j in range(m):
                    n32[j] = 0
                for k in range(M):
                    if G_c[M, k] >= _NEVER:
                        break
                    g = np.uint32(G_c[M, k])
                    for j in range(m):
                        n32[j] += W[pc, j] >= g
                for j in range(m):
                    C[0, j] = n32[j]
            elif M <= M_TAB:
                for j in range(m):
                    C[0, j] = invert(W[pc, j], G_c, S_c, M)
            # The per-case inversions stage by stage over the batch (an iteration's, then
            # a citation class's, for every case) rather than case by case: each
            # case's chain of table lookups (a draw's row is the previous draw) is
            # independent of the others', so a stage's cases overlap in the processor.
            pos = np.uint64(1)
            for _ in range(iters):
                for jj in range(m):
                    j = np.uint64(jj)  # unsigned indices: no negative-index wrap-around
                    f = nf[j]
                    w = np.uint64(W[pos, j])
                    k = np.int64(D_b[np.uint64(min(f, N_TAB + 1)), w >> _TOP])
                    if k < 0:  # rare: a threshold within the word's top byte, or f > N_TAB
                        if f <= N_TAB:
                            k = invert(w, G_b, S_b, f)
                        else:
                            k = binom_inv((np.float64(w) + 0.5) * _INV32, f, surv)
                    nf[j] = k + (np.uint64(W[pos + np.uint64(1), j]) < u_fa)
                pos += np.uint64(2)
            for jj in range(m):
                j = np.uint64(jj)
                f = nf[j]
                t[j] = t_dis[np.uint64(f)] if f <= N_TAB else dissent_threshold(f, s,
                                                                              false_dissent)
            if M <= M_TAB:
                for jj in range(m):
                    C[4, jj] = M - C[0, jj]  # the citations left
                for c in range(1, 4):
                    if q[c] >= 1.0:  # the draw is every citation left, without a look
                        for j in range(m):
                            C[c, j] = C[4, j]
                            C[4, j] = 0
                        continue
                    uc = np.uint64(c)
                    row = c * (M + 1)
                    for jj in range(m):
                        j = np.uint64(jj)
                        left = C[np.uint64(4), j]
                        w = np.uint64(W[np.uint64(pc) + uc, j])
                        r = np.uint64(row + left)
                        kc = np.int64(D_c[r, w >> _TOP])
                        if kc < 0:
                            kc = invert(w, G_c, S_c, r)
                        C[uc, j] = kc
                        C[np.uint64(4), j] = left - kc
            else:
                for jj in range(m):
                    citations(W, jj, pc, M, q, G_c, S_c, counts)
                    for a in range(5):
                        C[a, jj] = counts[a]
            for j in range(m):
                raised[j] = 0
                kept[j] = 0
            pos = 1 + 2 * iters
            for _ in range(P):
                for j in range(m):
                    d, k = dissent(W[pos, j], W[pos + 1, j], t[j], u_erase)
                    raised[j] += d
                    kept[j] += k
                pos += 2
            # Each case's bin: its class and its residual flaw count (the last bin of a
            # class for more than F_CAP, whose counts and sums are added case by case
            # below), counted in four interleaved copies (successive increments of one
            # bin do not wait on each other).
            for j in range(m):
                f = nf[j]
                cls[j] = (((f >= 1) * (P + 1) + raised[j]) * (P + 1) + kept[j]) * F1 \
                    + min(f, F_CAP + 1)
            m4 = m - m % 4
            for j in range(0, m4, 4):
                hist[0, cls[j]] += 1
                hist[1, cls[j + 1]] += 1
                hist[2, cls[j + 2]] += 1
                hist[3, cls[j + 3]] += 1
            for j in range(m4, m):
                hist[0, cls[j]] += 1
            for j in range(m):
                f = nf[j]
                if f > F_CAP:  # rare
                    k = cls[j] // F1
                    acc[0, k] += 1
                    acc[1, k] += f
                    acc[2, k] += f * f
            if cit_bins:
                # The citation sums are functions of the split: the splits counted by
                # their digits base M + 1 (C[4] follows), weighted at the end.
                for j in range(m):
                    cls[j] = ((C[0, j] * M1 + C[1, j]) * M1 + C[2, j]) * M1 + C[3, j]
                for j in range(m):
                    csplit[cls[j]] += 1
                continue
            for a in range(5):
                sa = 0
                for j in range(m):
                    sa += C[a, j]
                ca[a] += sa
                for c in range(a, 5):
                    sac = 0
                    for j in range(m):
                        sac += C[a, j] * C[c, j]
                    ca[5 + 5 * a + c] += sac
            for j in range(m):
                perf[j] = (C[0, j] + C[1, j]) == M
            sp = 0
            for j in range(m):
                sp += perf[j]
            ca[30] += sp
            for a in range(5):
                sa = 0
                for j in range(m):
                    sa += perf[j] * C[a, j]
                ca[31 + a] += sa
        if cit_bins:
            for key in range(csplit.shape[0]):
                h = np.int64(csplit[key])
                if h == 0:
                    continue
                counts[3] = key % M1
                counts[2] = (key // M1) % M1
                counts[1] = (key // (M1 * M1)) % M1
                counts[0] = key // (M1 * M1 * M1)
                counts[4] = M - counts[0] - counts[1] - counts[2] - counts[3]
                pf = np.int64(counts[0] + counts[1] == M)
                ca[30] += h * pf
                for a in range(5):
                    ca[a] += h * counts[a]
                    ca[31 + a] += h * pf * counts[a]
                    for c in range(a, 5):
                        ca[5 + 5 * a + c] += h * counts[a] * counts[c]
        for a in range(5):
            for c in range(a):
                ca[5 + 5 * a + c] = ca[5 + 5 * c + a]
        for k in range(n_cls):
            for f in range(F_CAP + 1):
                h = hist[0, k * F1 + f] + hist[1, k * F1 + f] + hist[2, k * F1 + f] \
                    + hist[3, k * F1 + f]
                acc[0, k] += h
                acc[1, k] += h * f
                acc[2, k] += h * f * f
        out[b] = acc
        cit[b] = ca
    return out.sum(axis=0), cit.sum(axis=0)
