"""Correlated signals and shared blind spots (seed 000, section 5): class counts.

One instance draws, from one Philox block (stream ``STREAM``),
    slot 0: omega ~ Bernoulli(pi)
    slot 1: the signal pair (s_P, s_A) ~ Pr(s_P, s_A | omega), one categorical draw
    slot 2: protagonist availability t_P ~ Bernoulli(avail[P's stance true?, believed])
    slot 3: antagonist availability t_A ~ Bernoulli(avail[A's stance true?, believed?])
The protagonist argues a = s_P (it always believes its stance); the antagonist
argues 1 - a and believes it when s_A = 1 - a.  Availability depends on whether
the stance argued is true and whether its sender believes it.

The kernel returns the count of each class

    index = 16 omega + 8 s_P + 4 s_A + 2 t_P + t_A.

Presentation, verification checks and the judge are random given the class and
are integrated out exactly afterwards (Rao-Blackwellisation, DESIGN.md), so the
same counts give every metric and every sender's interim payoff against *any*
strategy profile and judge attention: one kernel call per cell serves a whole
fixed-point computation, with common random numbers.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .interrupt import stopped
from .launch import fused_counts
from .rng import HI_SHIFT as _HI, LO_WORD as _LO
from .rng import philox4x32_10, philox_words

N_CLASSES = 32
#: Stream word of this model in the Philox counter (the baseline uses 0).
STREAM = 1

# Threshold vector layout (uint64 thresholds on 32-bit uniforms).
T_PI = 0
T_JOINT = 1  # 3 cumulative thresholds of (s_P, s_A) = 00, 01, 10 given omega = 0, then omega = 1
T_AVAIL = 7  # avail[true, believed], [true, not], [false, believed], [false, not]

_BATCH = 256


@nb.njit(inline="always", cache=True)
def _class_index(w0, w1, w2, w3, t):
    om = np.uint64(np.uint64(w0) < t[T_PI])
    base = T_JOINT + 3 * om
    u = np.uint64(w1)
    k = (np.uint64(u >= t[base]) + np.uint64(u >= t[base + 1])
         + np.uint64(u >= t[base + 2]))
    sp = k >> np.uint64(1)
    sa = k & np.uint64(1)
    p_false = np.uint64(sp != om)  # P's stance a = s_P is false
    a_false = np.uint64(1) - p_false  # A argues 1 - a
    a_unbel = np.uint64(sa == sp)  # A believes 1 - a iff s_A = 1 - a
    tp = np.uint64(np.uint64(w2) < t[T_AVAIL + 2 * p_false])
    ta = np.uint64(np.uint64(w3) < t[T_AVAIL + 2 * a_false + a_unbel])
    return (om << np.uint64(4)) | (sp << np.uint64(3)) | (sa << np.uint64(2)) \
        | (tp << np.uint64(1)) | ta


@nb.njit(parallel=True, cache=True)
def signal_class_counts(thr, start, count, k0, k1, stream, n_blocks):
    """Counts of the 32 classes for each of C cells sharing their random numbers.

    Parameters
    ----------
    thr : uint64[C, 11]
        Thresholds (probability * 2**32) in the layout of the module constants.
    start, count : int
        Global instance range; instance i uses Philox counter (i, 0, 0, stream).
    k0, k1 : uint64
        The seed's key words.
    n_blocks : int
        Parallel work split; does not change the result.

    Returns
    -------
    int64[C, 32]
    """
    n_cells = thr.shape[0]
    out = np.zeros((n_blocks, n_cells, N_CLASSES), np.int64)
    bsize = (count + n_blocks - 1) // n_blocks
    for b in nb.prange(n_blocks):
        lo = start + b * bsize
        hi = min(start + count, lo + bsize)
        local = np.zeros((n_cells, 4, N_CLASSES), np.int64)
        w0 = np.empty(_BATCH, np.uint32)
        w1 = np.empty(_BATCH, np.uint32)
        w2 = np.empty(_BATCH, np.uint32)
        w3 = np.empty(_BATCH, np.uint32)
        for i0 in range(lo, hi, _BATCH):
            if stopped():  # Ctrl-C: the caller raises KeyboardInterrupt
                break
            m = min(_BATCH, hi - i0)
            philox_words(w0, w1, w2, w3, i0, m, 0, stream, k0, k1)
            for c in range(n_cells):
                t = thr[c]
                for j in range(m):
                    local[c, j & 3, _class_index(w0[j], w1[j], w2[j], w3[j], t)] += 1
        for c in range(n_cells):
            for r in range(4):
                for k in range(N_CLASSES):
                    out[b, c, k] += local[c, r, k]
    return out.sum(axis=0)


@nb.njit(inline="always", cache=True)
def _sel(flag, a, b):
    # Branch-free select on uint64 (flag is 0 or 1), so that the loop vectorises.
    m = np.uint64(0) - flag
    return (a & m) | (b & ~m)


@nb.njit(inline="always", cache=True)
def _one_class(ii, k0, k1, stream, p):
    """The class of instance ``ii`` from its Philox words, branch-free (a formula of its
    own for the one-cell kernel: the same classes as :func:`_class_index`)."""
    t_pi, a0, a1, a2, b0, b1, b2, v_tb, v_tn, v_fb, v_fn, one = p
    w0, w1, w2, w3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)
    om = np.uint64(np.uint64(w0) < t_pi)
    u = np.uint64(w1)
    k = (np.uint64(u >= _sel(om, b0, a0)) + np.uint64(u >= _sel(om, b1, a1))
         + np.uint64(u >= _sel(om, b2, a2)))
    sp = k >> one
    sa = k & one
    p_false = np.uint64(sp != om)
    a_unbel = np.uint64(sa == sp)
    tp = np.uint64(np.uint64(w2) < _sel(p_false, v_fb, v_tb))
    # A's stance is false exactly when P's is true.
    ta_thr = _sel(p_false, _sel(a_unbel, v_tn, v_tb), _sel(a_unbel, v_fn, v_fb))
    ta = np.uint64(np.uint64(w3) < ta_thr)
    return np.uint8((om << np.uint64(4)) | (sp << np.uint64(3))
                    | (sa << np.uint64(2)) | (tp << one) | ta)


@nb.njit(parallel=True, cache=True)
def signal_class_counts_one(thr, start, count, k0, k1, stream, n_blocks):
    """The classes of :func:`signal_class_counts` for one cell (``thr``: uint64[11]),
    with the generator and the classification fused in one loop (no word buffers)."""
    p = (thr[T_PI], thr[T_JOINT], thr[T_JOINT + 1], thr[T_JOINT + 2],
         thr[T_JOINT + 3], thr[T_JOINT + 4], thr[T_JOINT + 5],
         thr[T_AVAIL], thr[T_AVAIL + 1], thr[T_AVAIL + 2], thr[T_AVAIL + 3],
         # The 1 of the bit shifts, a value the compiler does not know: with the
         # constant, LLVM's vector loop takes 278 instructions against 266 and runs
         # about 4% slower (AVX-512; the loop written out by hand had it so too).
         np.uint64(1))
    return fused_counts(_one_class, p, start, count, k0, k1, stream, n_blocks, N_CLASSES)
