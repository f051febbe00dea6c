"""The 32 transcript classes of the persuasion game of seed 000 (sections 3-4): their
counts, the kernel that the baseline model, the runner, the metrics and the
transcript export share (``antiamp.kernels.baseline`` is its former name).

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

from .interrupt import stopped
from .launch import fused_counts
from .rng import HI_SHIFT as _HI, LO_WORD as _LO
from .rng import philox4x32_10, philox_words

N_CLASSES = 32
#: Stream word of this model in the Philox counter.
STREAM = 0

# Threshold vector layout.
T_PI, T_P, T_RHO, T_XPC, T_XPD, T_XA = range(6)

_BATCH = 256  # instances per vectorised batch; any value gives the same counts


@nb.njit(inline="always", cache=True)
def _words(w0, w1, w2, w3, v0, v1, i0, m, need_x, k0, k1, stream):
    """Philox words of instances i0 .. i0 + m - 1: slots 0-3 and, if needed, 4-5."""
    philox_words(w0, w1, w2, w3, i0, m, 0, stream, k0, k1)
    if need_x:
        for j in range(m):
            ii = np.uint64(i0 + j)
            b0, b1, b2, b3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(1), stream, k0, k1)
            v0[j] = np.uint32(b0)
            v1[j] = np.uint32(b1)


@nb.njit(inline="always", cache=True)
def _class_index(w0, w1, w2, w3, v0, v1, t_pi, t_p, t_rho, t_xpc, t_xpd, t_xa, fixed, af):
    """Transcript class of one instance from its six draws (module docstring)."""
    om = np.uint8(np.uint64(w0) < t_pi)
    if fixed:
        corr = np.uint8(om == af)
    else:
        corr = np.uint8(np.uint64(w1) < t_p)
    tp = corr | np.uint8(np.uint64(w2) < t_rho)
    ta = (np.uint8(1) - corr) | np.uint8(np.uint64(w3) < t_rho)
    u = np.uint64(v0)
    epc = tp & np.uint8(u < t_xpc)
    epd = tp & np.uint8(u < t_xpd)
    ea = ta & np.uint8(np.uint64(v1) < t_xa)
    return (om << 4) | (corr << 3) | (epc << 2) | (epd << 1) | ea


@nb.njit(inline="always", cache=True)
def _classify(idx, w0, w1, w2, w3, v0, v1, m, t_pi, t_p, t_rho, t_xpc, t_xpd, t_xa, fixed, af):
    for j in range(m):
        idx[j] = _class_index(w0[j], w1[j], w2[j], w3[j], v0[j], v1[j], t_pi, t_p, t_rho,
                              t_xpc, t_xpd, t_xa, fixed, af)


@nb.njit(inline="always", cache=True)
def _needs_x(thr_row):
    lim = np.uint64(1) << np.uint64(32)
    for k in (T_XPC, T_XPD, T_XA):
        if thr_row[k] != 0 and thr_row[k] != lim:
            return True
    return False


@nb.njit(parallel=True, cache=True)
def class_counts_cells(thr, fixed, a_fixed, start, count, k0, k1, stream, n_blocks):
    """Counts of the 32 transcript classes for each of C cells sharing their random numbers.

    Every cell sees the same Philox words for instance i (common random numbers),
    so the words are drawn once per instance and classified once per cell.

    Parameters
    ----------
    thr : uint64[C, 6]
        Bernoulli thresholds on 32-bit uniforms (T / 2**32 = probability) for
        pi, p, rho, x_P (consult), x_P (debate), x_A, one row per cell.
    fixed, a_fixed : int64[C]
        ``fixed = 1``: the stance is exogenous, a = ``a_fixed``.
    start, count : int
        Global instance range; instance i uses Philox counter (i, slot block, stream).
    k0, k1 : uint64
        The seed's two 32-bit key words.
    n_blocks : int
        Parallel work split; does not change the result.

    Returns
    -------
    int64[C, 32]
    """
    n_cells = thr.shape[0]
    need_x = False
    for c in range(n_cells):
        if _needs_x(thr[c]):
            need_x = True
    out = np.zeros((n_blocks, n_cells, N_CLASSES), np.int64)
    bsize = (count + n_blocks - 1) // n_blocks
    for b in nb.prange(n_blocks):
        lo = start + b * bsize
        hi = min(start + count, lo + bsize)
        # Four interleaved sub-histograms break the store-to-load chain on one bin.
        local = np.zeros((n_cells, 4, N_CLASSES), np.int64)
        w0 = np.empty(_BATCH, np.uint32)
        w1 = np.empty(_BATCH, np.uint32)
        w2 = np.empty(_BATCH, np.uint32)
        w3 = np.empty(_BATCH, np.uint32)
        v0 = np.zeros(_BATCH, np.uint32)  # stay 0 when every x is 0 or 1
        v1 = np.zeros(_BATCH, np.uint32)
        idx = np.empty(_BATCH, np.uint8)
        for i0 in range(lo, hi, _BATCH):
            if stopped():  # Ctrl-C: the caller raises KeyboardInterrupt
                break
            m = min(_BATCH, hi - i0)
            _words(w0, w1, w2, w3, v0, v1, i0, m, need_x, k0, k1, stream)
            for c in range(n_cells):
                t = thr[c]
                if fixed[c]:
                    _classify(idx, w0, w1, w2, w3, v0, v1, m, t[T_PI], t[T_P], t[T_RHO],
                              t[T_XPC], t[T_XPD], t[T_XA], True, np.uint8(a_fixed[c]))
                else:
                    _classify(idx, w0, w1, w2, w3, v0, v1, m, t[T_PI], t[T_P], t[T_RHO],
                              t[T_XPC], t[T_XPD], t[T_XA], False, np.uint8(0))
                for j in range(m):
                    local[c, j & 3, idx[j]] += 1
        for c in range(n_cells):
            for r in range(4):
                for k in range(N_CLASSES):
                    out[b, c, k] += local[c, r, k]
    return out.sum(axis=0)


@nb.njit(inline="always", cache=True)
def _one_class(ii, k0, k1, stream, p):
    """The class of instance ``ii`` from its Philox words (the second block only when
    some presentation probability lies inside (0, 1))."""
    need_x, t_pi, t_p, t_rho, t_xpc, t_xpd, t_xa, isfixed, af = p
    w0, w1, w2, w3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)
    v0 = np.uint64(0)
    v1 = np.uint64(0)
    if need_x:
        v0, v1, v2, v3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(1), stream, k0, k1)
    return _class_index(w0, w1, w2, w3, v0, v1, t_pi, t_p, t_rho, t_xpc, t_xpd, t_xa,
                        isfixed, af)


@nb.njit(parallel=True, cache=True)
def class_counts(thr, fixed, a_fixed, start, count, k0, k1, stream, n_blocks):
    """Counts of the 32 transcript classes of one cell (``thr``: uint64[6]).

    The same draws and classes as :func:`class_counts_cells` with one cell, with the
    generator and the classification fused in one loop (no word buffers), which
    is what a single run needs: ``launch.fused_counts`` around :func:`_one_class`.
    """
    # The two flags as uint8, not bool: a bool read out of the tuple inside the
    # parallel loop counts, for numba's alias analysis, as a possible alias of it
    # (numba takes only numbers as immutable), and the loop's compiled function then
    # loses ``noalias`` on all its arrays (LLVM keeps fewer values in registers and
    # unrolls the histogram loop less).
    p = (np.uint8(_needs_x(thr)), thr[T_PI], thr[T_P], thr[T_RHO], thr[T_XPC], thr[T_XPD],
         thr[T_XA], np.uint8(fixed != 0), np.uint8(a_fixed))
    return fused_counts(_one_class, p, start, count, k0, k1, stream, n_blocks, N_CLASSES)


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
            if stopped():  # Ctrl-C: the caller raises KeyboardInterrupt
                break
            m = min(_BATCH, hi - i0)
            for j in range(m):
                ii = np.uint64(i0 + j)
                w0, w1, w2, w3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)
                buf[j] = np.uint32(w0 ^ w1 ^ w2 ^ w3)
            for j in range(m):
                acc ^= buf[j]
        out[b] = acc
    return out
