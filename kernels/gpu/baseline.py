"""The baseline model's kernels on the GPU (numba.cuda): the same class counts, bit for bit.

The per-instance function is :func:`kernels.baseline._class_index`, the CPU
kernels' own, compiled for the GPU by :func:`kernels.gpu.device`; the Philox words
are the CPU's too (instance i, slot block, stream).  Only the launchers differ: a
grid-stride loop, a histogram per warp in shared memory (uint32, a launch is at
most :data:`kernels.gpu.MAX_LAUNCH` instances) and one reduction per thread block,
an int64 atomic add per class into the output (the multi-cell kernel is
:func:`kernels.gpu.launch.cells_kernel`'s, shared with the correlated signals).
Integer adds commute, so the counts do not depend on the grid, the launch split or
the instance range's cut.

Imported only when a GPU path is asked for (it imports numba.cuda).
"""

from __future__ import annotations

import numpy as np
from numba import uint32

from .. import gpu as _gpu
from .launch import cells_kernel
from ..baseline import (N_CLASSES, T_P, T_PI, T_RHO, T_XA, T_XPC, T_XPD, _class_index,
                        _needs_x)
from ..rng import philox4x32_10
from ..rng import HI_SHIFT as _HI, LO_WORD as _LO  # an instance's counter words

# The module global that numba's CUDA simulator swaps for its own (it looks for
# the numba.cuda module among a kernel's globals).
cuda = _gpu.cuda()

philox = _gpu.device(philox4x32_10)
classify = _gpu.device(_class_index)

THREADS, WARPS = _gpu.THREADS, _gpu.WARPS
#: Cells per pass of the multi-cell kernel (its per-warp histograms of a pass fill
#: 32 KiB of shared memory); a block of more cells takes several passes.
CELL_TILE = 32


@cuda.jit
def _one(thr, fixed, af, start, count, k0, k1, stream, need_x, out):
    hist = cuda.shared.array((WARPS, N_CLASSES), uint32)
    t = cuda.threadIdx.x
    for k in range(t, WARPS * N_CLASSES, THREADS):
        hist[k // N_CLASSES, k % N_CLASSES] = 0
    cuda.syncthreads()
    w = t // _gpu.WARP
    t_pi, t_p, t_rho = thr[T_PI], thr[T_P], thr[T_RHO]
    t_xpc, t_xpd, t_xa = thr[T_XPC], thr[T_XPD], thr[T_XA]
    isfixed = fixed != 0
    a = np.uint8(af)
    i = np.int64(cuda.grid(1))
    stride = np.int64(cuda.gridsize(1))
    while i < count:  # grid-stride loop
        ii = np.uint64(start + i)
        w0, w1, w2, w3 = philox(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)
        v0 = np.uint64(0)
        v1 = np.uint64(0)
        if need_x:
            v0, v1, v2, v3 = philox(ii & _LO, ii >> _HI, np.uint64(1), stream, k0, k1)
        c = classify(w0, w1, w2, w3, v0, v1, t_pi, t_p, t_rho, t_xpc, t_xpd, t_xa, isfixed, a)
        cuda.atomic.add(hist, (w, c), np.uint32(1))
        i += stride
    cuda.syncthreads()
    for k in range(t, N_CLASSES, THREADS):  # one reduction per block
        s = np.int64(0)
        for r in range(WARPS):
            s += np.int64(hist[r, k])
        cuda.atomic.add(out, k, s)


def _draw(ii, k0, k1, stream, need_x):
    """Instance ``ii``'s words: slots 0-3 and, if ``need_x``, 4-5 (else 0)."""
    w0, w1, w2, w3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)
    v0 = np.uint64(0)
    v1 = np.uint64(0)
    if need_x:
        v0, v1, v2, v3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(1), stream, k0, k1)
    return w0, w1, w2, w3, v0, v1


def _classify(words, thr, fixed, af, cell):
    """The transcript class of an instance's words in one cell."""
    w0, w1, w2, w3, v0, v1 = words
    return _class_index(w0, w1, w2, w3, v0, v1, thr[cell, T_PI], thr[cell, T_P],
                        thr[cell, T_RHO], thr[cell, T_XPC], thr[cell, T_XPD], thr[cell, T_XA],
                        fixed[cell] != 0, np.uint8(af[cell]))


_cells = cells_kernel(_draw, _classify, N_CLASSES, CELL_TILE)


@cuda.jit
def _floor(start, count, k0, k1, stream, out):
    i = np.int64(cuda.grid(1))
    stride = np.int64(cuda.gridsize(1))
    acc = np.uint64(0)
    while i < count:
        ii = np.uint64(start + i)
        w0, w1, w2, w3 = philox(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)
        acc ^= w0 ^ w1 ^ w2 ^ w3
        i += stride
    cuda.atomic.xor(out, 0, acc)


def class_counts(thr, fixed, a_fixed, start, count, k0, k1, stream, *, blocks=0, step=0,
                 on_step=None):
    """:func:`kernels.baseline.class_counts` on the GPU: the same int64[32], bit for bit.

    Thresholds go to the device once and the counts come back once; ``blocks``
    (thread blocks; 0 = fill the GPU) and ``step`` (instances per launch; 0 = the
    most, :data:`kernels.gpu.MAX_LAUNCH`) do not change the result.
    ``on_step(m)``, if given, is called after each launch of ``m`` instances.
    """
    thr = np.ascontiguousarray(thr, np.uint64)
    need_x = bool(_needs_x(thr))
    d_thr = cuda.to_device(thr)
    d_out = cuda.to_device(np.zeros(N_CLASSES, np.int64))
    for off, m in _gpu.launches(count, step or _gpu.MAX_LAUNCH):
        _one[_gpu.grid_blocks(m, blocks), THREADS](
            d_thr, np.int64(fixed), np.int64(a_fixed), np.int64(start + off), np.int64(m),
            np.uint64(k0), np.uint64(k1), np.uint64(stream), need_x, d_out)
        if on_step is not None:
            cuda.synchronize()
            on_step(m)
    return d_out.copy_to_host()


def class_counts_cells(thr, fixed, a_fixed, start, count, k0, k1, stream, *, blocks=0, step=0,
                       on_step=None):
    """:func:`kernels.baseline.class_counts_cells` on the GPU: the same int64[C, 32]."""
    thr = np.ascontiguousarray(thr, np.uint64)
    n_cells = thr.shape[0]
    need_x = any(bool(_needs_x(thr[c])) for c in range(n_cells))
    d_thr = cuda.to_device(thr)
    d_fixed = cuda.to_device(np.ascontiguousarray(fixed, np.int64))
    d_af = cuda.to_device(np.ascontiguousarray(a_fixed, np.int64))
    d_out = cuda.to_device(np.zeros((n_cells, N_CLASSES), np.int64))
    for off, m in _gpu.launches(count, step or _gpu.MAX_LAUNCH):
        for c0 in range(0, n_cells, CELL_TILE):
            nc = min(CELL_TILE, n_cells - c0)
            _cells[_gpu.grid_blocks(m, blocks), THREADS](
                d_thr, d_fixed, d_af, np.int64(c0), np.int64(nc), np.int64(start + off),
                np.int64(m), np.uint64(k0), np.uint64(k1), np.uint64(stream), need_x, d_out)
        if on_step is not None:
            cuda.synchronize()
            on_step(m)
    return d_out.copy_to_host()


def bare_philox(start, count, k0, k1, stream, *, blocks=0):
    """The GPU floor: one Philox4x32-10 block per instance, XOR-folded into one word
    (the benchmark's reference, as :func:`kernels.baseline.bare_philox` on the CPU)."""
    d_out = cuda.to_device(np.zeros(1, np.uint64))
    for off, m in _gpu.launches(count):
        _floor[_gpu.grid_blocks(m, blocks), THREADS](
            np.int64(start + off), np.int64(m), np.uint64(k0), np.uint64(k1),
            np.uint64(stream), d_out)
    cuda.synchronize()
    return d_out.copy_to_host()[0]
