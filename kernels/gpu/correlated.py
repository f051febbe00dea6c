"""The correlated-signal kernels on the GPU (numba.cuda): the same class counts, bit for bit.

The per-instance function is :func:`kernels.correlated._class_index` (the CPU grid
kernel's own) compiled for the GPU by :func:`kernels.gpu.device`, on the same
Philox words (instance i, block 0, ``STREAM``); a grid-stride loop, per-warp
shared-memory histograms and one reduction per thread block, as
:mod:`kernels.gpu.baseline`.  One cell runs as a grid of one cell: the CPU's
single-cell kernel computes the same classes with a branch-free formula of its own.

Imported only when a GPU path is asked for (it imports numba.cuda).
"""

from __future__ import annotations

import numpy as np
from numba import uint32

from .. import gpu as _gpu
from ..correlated import N_CLASSES, _class_index
from ..rng import philox4x32_10
from ..rng import HI_SHIFT as _HI, LO_WORD as _LO  # an instance's counter words

# The module global that numba's CUDA simulator swaps for its own.
cuda = _gpu.cuda()

philox = _gpu.device(philox4x32_10)
classify = _gpu.device(_class_index)

THREADS, WARPS = _gpu.THREADS, _gpu.WARPS
#: Cells per pass (32 KiB of per-warp histograms in shared memory).
CELL_TILE = 32


@cuda.jit
def _cells(thr, c0, nc, start, count, k0, k1, stream, out):
    hist = cuda.shared.array((WARPS, CELL_TILE, N_CLASSES), uint32)
    t = cuda.threadIdx.x
    for k in range(t, WARPS * CELL_TILE * N_CLASSES, THREADS):
        hist[k // (CELL_TILE * N_CLASSES), (k // N_CLASSES) % CELL_TILE, k % N_CLASSES] = 0
    cuda.syncthreads()
    w = t // _gpu.WARP
    i = np.int64(cuda.grid(1))
    stride = np.int64(cuda.gridsize(1))
    while i < count:  # grid-stride loop
        ii = np.uint64(start + i)
        w0, w1, w2, w3 = philox(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)
        for j in range(nc):  # common random numbers: one draw, every cell of the tile
            c = classify(w0, w1, w2, w3, thr[c0 + j])
            cuda.atomic.add(hist, (w, j, c), np.uint32(1))
        i += stride
    cuda.syncthreads()
    for k in range(t, nc * N_CLASSES, THREADS):  # one reduction per block
        j = k // N_CLASSES
        cl = k % N_CLASSES
        s = np.int64(0)
        for r in range(WARPS):
            s += np.int64(hist[r, j, cl])
        cuda.atomic.add(out, (c0 + j, cl), s)


def signal_class_counts(thr, start, count, k0, k1, stream, *, blocks=0, step=0, on_step=None):
    """:func:`kernels.correlated.signal_class_counts` on the GPU: the same int64[C, 32].

    ``blocks`` (0 = fill the GPU) and ``step`` (instances per launch) do not change
    the result; thresholds go in once, counts come out once.
    """
    thr = np.ascontiguousarray(np.atleast_2d(thr), np.uint64)
    n_cells = thr.shape[0]
    d_thr = cuda.to_device(thr)
    d_out = cuda.to_device(np.zeros((n_cells, N_CLASSES), np.int64))
    for off, m in _gpu.launches(count, step or _gpu.MAX_LAUNCH):
        for c0 in range(0, n_cells, CELL_TILE):
            _cells[_gpu.grid_blocks(m, blocks), THREADS](
                d_thr, np.int64(c0), np.int64(min(CELL_TILE, n_cells - c0)),
                np.int64(start + off), np.int64(m), np.uint64(k0), np.uint64(k1),
                np.uint64(stream), d_out)
        if on_step is not None:
            cuda.synchronize()
            on_step(m)
    return d_out.copy_to_host()
