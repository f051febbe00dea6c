"""Baseline model of seed 000 (sections 3-4): transcript-class counts.

One instance draws, from fixed slots of its Philox counter block,
    slot 0: omega ~ Bernoulli(pi)
    slot 1: protagonist signal correct ~ Bernoulli(p)      (stance = signal)
    slot 2: protagonist evidence feasible when its stance is false ~ Bernoulli(rho)
    slot 3: antagonist evidence feasible when its stance is false ~ Bernoulli(rho)
and, only when some presentation probability lies strictly inside (0, 1), from a
second block
    slot 4: protagonist presents given t_P = 1 (the same uniform for consultancy
            and debate, so the two protocols share their randomness)
    slot 5: antagonist presents given t_A = 1.
The true side always has evidence (t = 1); e = t * x.

Both protocols are simulated on the same instances.  The kernel returns the count
of each transcript class

    index = 16 omega + 8 [a = omega] + 4 e_P(consult) + 2 e_P(debate) + e_A,

which is a sufficient statistic for every metric once the judge is weighted in
by its endorsement table (Rao-Blackwellisation, DESIGN.md).  Counts are integers,
so any split into chunks or threads gives bit-identical results.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .rng import philox4x32_10

N_CLASSES = 32
#: Stream word of this model in the Philox counter.
STREAM = 0

# Threshold vector layout.
T_PI, T_P, T_RHO, T_XPC, T_XPD, T_XA = range(6)

_BATCH = 256  # instances per vectorised batch; any value gives the same counts
_LO = np.uint64(0xFFFFFFFF)
_HI = np.uint64(32)


@nb.njit(inline="always", cache=True)
def _draw_batch(idx, i0, m, thr, fixed, a_fixed, need_x, k0, k1, stream):
    t_pi = thr[T_PI]
    t_p = thr[T_P]
    t_rho = thr[T_RHO]
    t_xpc = thr[T_XPC]
    t_xpd = thr[T_XPD]
    t_xa = thr[T_XA]
    af = np.uint8(a_fixed)
    for j in range(m):
        ii = np.uint64(i0 + j)
        w0, w1, w2, w3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)
        om = np.uint8(w0 < t_pi)
        if fixed:
            corr = np.uint8(om == af)
        else:
            corr = np.uint8(w1 < t_p)
        tp = corr | np.uint8(w2 < t_rho)
        ta = (np.uint8(1) - corr) | np.uint8(w3 < t_rho)
        if need_x:
            v0, v1, v2, v3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(1), stream, k0, k1)
        else:
            v0 = np.uint64(0)
            v1 = np.uint64(0)
        epc = tp & np.uint8(v0 < t_xpc)
        epd = tp & np.uint8(v0 < t_xpd)
        ea = ta & np.uint8(v1 < t_xa)
        idx[j] = (om << 4) | (corr << 3) | (epc << 2) | (epd << 1) | ea


@nb.njit(parallel=True, cache=True)
def class_counts(thr, fixed, a_fixed, start, count, k0, k1, stream, n_blocks):
    """Counts of the 32 transcript classes for instances [start, start + count).

    Parameters
    ----------
    thr : uint64[6]
        Bernoulli thresholds on 32-bit uniforms (T / 2**32 = probability) for
        pi, p, rho, x_P (consult), x_P (debate), x_A.
    fixed, a_fixed : int
        ``fixed = 1``: the stance is exogenous, a = ``a_fixed``.
    start, count : int
        Global instance range; instance i uses Philox counter (i, slot block, stream).
    k0, k1 : uint64
        The seed's two 32-bit key words.
    n_blocks : int
        Parallel work split; does not change the result.
    """
    lim = np.uint64(1) << np.uint64(32)
    need_x = False
    for q in (thr[T_XPC], thr[T_XPD], thr[T_XA]):
        if q != 0 and q != lim:
            need_x = True
    out = np.zeros((n_blocks, N_CLASSES), np.int64)
    bsize = (count + n_blocks - 1) // n_blocks
    for b in nb.prange(n_blocks):
        lo = start + b * bsize
        hi = min(start + count, lo + bsize)
        # Four interleaved sub-histograms break the store-to-load chain on one bin.
        local = np.zeros((4, N_CLASSES), np.int64)
        idx = np.empty(_BATCH, np.uint8)
        for i0 in range(lo, hi, _BATCH):
            m = min(_BATCH, hi - i0)
            if fixed:
                if need_x:
                    _draw_batch(idx, i0, m, thr, True, a_fixed, True, k0, k1, stream)
                else:
                    _draw_batch(idx, i0, m, thr, True, a_fixed, False, k0, k1, stream)
            else:
                if need_x:
                    _draw_batch(idx, i0, m, thr, False, a_fixed, True, k0, k1, stream)
                else:
                    _draw_batch(idx, i0, m, thr, False, a_fixed, False, k0, k1, stream)
            for j in range(m):
                local[j & 3, idx[j]] += 1
        for r in range(4):
            for c in range(N_CLASSES):
                out[b, c] += local[r, c]
    return out.sum(axis=0)


@nb.njit(parallel=True, cache=True)
def bare_philox(start, count, k0, k1, stream, n_blocks):
    """The floor: one Philox4x32-10 block per instance, XOR-folded (benchmark reference).

    Batched like :func:`class_counts` so that both vectorise the same way.
    """
    out = np.zeros(n_blocks, np.uint64)
    bsize = (count + n_blocks - 1) // n_blocks
    for b in nb.prange(n_blocks):
        lo = start + b * bsize
        hi = min(start + count, lo + bsize)
        buf = np.empty(_BATCH, np.uint32)
        acc = np.uint32(0)
        for i0 in range(lo, hi, _BATCH):
            m = min(_BATCH, hi - i0)
            for j in range(m):
                ii = np.uint64(i0 + j)
                w0, w1, w2, w3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)
                buf[j] = np.uint32(w0 ^ w1 ^ w2 ^ w3)
            for j in range(m):
                acc ^= buf[j]
        out[b] = acc
    return out
