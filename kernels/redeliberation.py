"""Adaptive re-deliberation of fact-check verdicts (seed 003): the Monte Carlo kernel.

Draw slots of claim i, Philox stream ``STREAM``, counter (i, c, 0, STREAM):

* c = 0: four uniforms: the claim's type (contested w.p. q), its truth (true w.p.
  p_true), the true side's evidence (found w.p. x), the false side's (passes w.p. rho);
* c = 1: words 0, 1: the evidence-pool bias's standard normal (Box-Muller);
* round r = 0, 1, ..., counters 2 + r (M + 1) + j, j < M = ceil(k / 4): the round's k
  run normals (four per counter, Box-Muller on word pairs (0, 1) and (2, 3));
  counter 2 + r (M + 1) + M, word 0: the round's hazard uniform (rounds r >= 1;
  never drawn for the first pass).

Every policy reads the same claim, evidence and first-pass runs (common random
numbers); the adaptive policy and the forced-rounds series read the same later
rounds.  The reconciler's decision is not drawn: its probability of upholding the
verdict's direction, J[e_P, e_A], is accumulated (Rao-Blackwellised), and so is the
re-reconciliation's resolution (probability h).  Sums are kept per block of
``BLOCK`` claims and added in order: results do not depend on the thread count.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from .interrupt import stopped
from .rng import HI_SHIFT as _HI, INV32 as _INV32, LO_WORD as _LO  # the shared word masks
from .rng import philox4x32_10

STREAM = 8
BLOCK = 4096
#: Accumulators per (policy, claim type): claims; then (sum, sum of squares) of the
#: decided indicator, the correct final verdict, the wrong final verdict; claims
#: whose first-pass direction is wrong and the ratified share's sums; claims whose
#: direction is right and the followed share's sums; then the sums of the hidden
#: correct verdict, the calls, the extra-deliberation indicator and the extra rounds.
N_ACC = 21
N_POL = 4  # raw, fixed, rereconcile, adaptive


@nb.njit(cache=True)
def _runs(r, i, k, M, stream, k0, k1, m, sig):
    """The k runs of round r (toward-truth coordinate m + sig Z) summarised as they are
    drawn, and the round's hazard uniform: (u, mean, range, agreement: +1 all toward
    the truth, -1 all away, 0 split).  The summary's sum, minimum and maximum take the
    runs in their order, as from an array of them; none is kept (on the GPU a thread's
    arrays live in local memory)."""
    ii = np.uint64(i)
    base = 2 + r * (M + 1)
    idx = 0
    s, lo, hi = 0.0, 0.0, 0.0
    pos = 0
    for j in range(M):
        w0, w1, w2, w3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(base + j), stream, k0, k1)
        for pair in range(2):
            a = w0 if pair == 0 else w2
            b = w1 if pair == 0 else w3
            u1 = (np.float64(a) + 0.5) * _INV32
            u2 = (np.float64(b) + 0.5) * _INV32
            rad = math.sqrt(-2.0 * math.log(u1))
            if idx < k:
                y = m + sig * rad * math.cos(2.0 * math.pi * u2)
                if idx == 0:
                    lo, hi = y, y
                s, lo, hi, pos = _step(s, lo, hi, pos, y)
            if idx + 1 < k:
                y = m + sig * rad * math.sin(2.0 * math.pi * u2)
                s, lo, hi, pos = _step(s, lo, hi, pos, y)
            idx += 2
    agree = 1 if pos == k else (-1 if pos == 0 else 0)
    if r == 0:
        return 1.0, s / k, hi - lo, agree  # the first pass has no hazard draw
    w0, _, _, _ = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(base + M), stream, k0, k1)
    return (np.float64(w0) + 0.5) * _INV32, s / k, hi - lo, agree


@nb.njit(inline="always", cache=True)
def _step(s, lo, hi, pos, y):
    """One run added to the summary's sum, minimum, maximum and count toward the truth."""
    return s + y, min(lo, y), max(hi, y), pos + (1 if y > 0.0 else 0)


@nb.njit(cache=True)
def _put(acc, b, p, t, right, dec, corr, wrongd, hidden, calls, trig, rounds):
    a = acc[b, p, t]
    a[0] += 1.0
    a[1] += dec
    a[2] += dec * dec
    a[3] += corr
    a[4] += corr * corr
    a[5] += wrongd
    a[6] += wrongd * wrongd
    if right:
        a[10] += 1.0
        a[11] += corr
        a[12] += corr * corr
    else:
        a[7] += 1.0
        a[8] += wrongd
        a[9] += wrongd * wrongd
    a[13] += hidden
    a[14] += hidden * hidden
    a[15] += calls
    a[16] += calls * calls
    a[17] += trig
    a[18] += trig * trig
    a[19] += rounds
    a[20] += rounds * rounds


@nb.njit(cache=True)  # not inline="always": numba 0.68 fails to inline it (UnsupportedError)
def _claim(i, k0, k1, stream, contested, p_true, margin, noise, bias, bias_sd, k, M, last, x,
           rho, h, max_rounds, bands, mults, thr, trig_spread, base_calls, round_calls, forced,
           J, acc, band, spread, fser, b):
    """Claim ``i``: adds its terms to ``acc[b]``, ``band[b]``, ``spread[b]``, ``fser[b]``
    (compiled for the CPU here and for the GPU by :mod:`kernels.gpu.redeliberation`)."""
    ii = np.uint64(i)
    w0, w1, w2, w3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)
    t = 1 if (np.float64(w0) + 0.5) * _INV32 < contested else 0
    s = 1.0 if (np.float64(w1) + 0.5) * _INV32 < p_true else -1.0
    eT = 1 if (np.float64(w2) + 0.5) * _INV32 < x else 0
    eF = 1 if (np.float64(w3) + 0.5) * _INV32 < rho else 0
    v0, v1, _, _ = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(1), stream, k0, k1)
    u1 = (np.float64(v0) + 0.5) * _INV32
    u2 = (np.float64(v1) + 0.5) * _INV32
    nB = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
    m = margin[t] + s * (bias + bias_sd * nB)
    sig = noise[t]
    _, ybar, S, agree = _runs(0, i, k, M, stream, k0, k1, m, sig)
    right = ybar > 0.0
    jR, jW = J[eT, eF], J[eF, eT]
    raw = jR if right else 1.0 - jW  # the one-pass verdict is correct
    C = min(50.0 + abs(ybar), 100.0)
    bi = 0
    while bi < bands.shape[0] and S > bands[bi]:
        bi += 1
    band[b, t, bi] += 1.0
    spread[b, t, 0] += S
    spread[b, t, 1] += S * S
    fser[b, t, 0] += 1.0 if right else 0.0
    # raw
    _put(acc, b, 0, t, right, 1.0, raw, 1.0 - raw, 0.0, base_calls, 0.0, 0.0)
    # fixed: the band multiplier and the INSUFFICIENT threshold
    dec = 1.0 if mults[bi] * C >= thr else 0.0
    _put(acc, b, 1, t, right, dec, dec * raw, dec * (1.0 - raw), (1.0 - dec) * raw,
         base_calls, 0.0, 0.0)
    # rereconcile: once, when the spread is high and contrarian evidence shows
    eA = eF if right else eT
    if S > trig_spread and eA == 1:
        d1 = 1.0 if C >= thr else 0.0  # resolved: unpenalised and correct
        dd = h * d1 + (1.0 - h) * dec
        _put(acc, b, 2, t, right, dd, h * d1 + (1.0 - h) * dec * raw,
             (1.0 - h) * dec * (1.0 - raw), (1.0 - dd) * raw, base_calls + 1.0, 1.0,
             0.0)
    else:
        _put(acc, b, 2, t, right, dec, dec * raw, dec * (1.0 - raw),
             (1.0 - dec) * raw, base_calls, 0.0, 0.0)
    # adaptive rounds (and the forced-rounds series on the same draws)
    going = agree == 0
    revealed = False
    a_dec, a_corr, rounds = 0.0, 0.0, 0
    if not going:
        a_dec, a_corr = 1.0, raw
    for r in range(1, last + 1):
        need_forced = r <= forced
        if not going and not need_forced:
            break
        u, yb, _, ag = _runs(r, i, k, M, stream, k0, k1, m, sig)
        if u < h:
            revealed = True
        if need_forced:
            fser[b, t, r] += 1.0 if (revealed or yb > 0.0) else 0.0
        if going and r <= max_rounds:
            rounds += 1
            if u < h:
                a_dec, a_corr, going = 1.0, 1.0, False
            elif ag != 0:
                a_dec, a_corr, going = 1.0, (jR if ag > 0 else 1.0 - jW), False
        elif going:
            going = False  # max_rounds reached without agreement: INSUFFICIENT
    _put(acc, b, 3, t, right, a_dec, a_corr, a_dec - a_corr, (1.0 - a_dec) * raw,
         base_calls + round_calls * rounds, 1.0 if rounds > 0 else 0.0, float(rounds))


@nb.njit(parallel=True, cache=True)
def redeliberation_kernel(n, k0, k1, contested, p_true, margin, noise, bias, bias_sd, k,
                          x, rho, h, max_rounds, bands, mults, thr, trig_spread, base_calls,
                          round_calls, forced, J):
    """Per-block sums over ``n`` claims: ``acc`` (blocks, policy, type, N_ACC), the
    spread bands' counts (blocks, type, bands), the spread's sum and sum of squares
    (blocks, type, 2), and the forced-rounds series' correct directions (blocks,
    type, forced + 1)."""
    n_blocks = (n + BLOCK - 1) // BLOCK
    nb_ = mults.shape[0]
    acc = np.zeros((n_blocks, N_POL, 2, N_ACC))
    band = np.zeros((n_blocks, 2, nb_))
    spread = np.zeros((n_blocks, 2, 2))
    fser = np.zeros((n_blocks, 2, forced + 1))
    stream = np.uint64(STREAM)
    M = (k + 3) // 4
    last = max(max_rounds, forced)
    for b in nb.prange(n_blocks):
        for i in range(b * BLOCK, min((b + 1) * BLOCK, n)):
            if (i & 1023) == 0 and stopped():  # Ctrl-C: the caller raises KeyboardInterrupt
                break
            _claim(i, k0, k1, stream, contested, p_true, margin, noise, bias, bias_sd, k, M,
                   last, x, rho, h, max_rounds, bands, mults, thr, trig_spread, base_calls,
                   round_calls, forced, J, acc, band, spread, fser, b)
    return acc, band, spread, fser
