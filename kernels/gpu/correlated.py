"""The correlated-signal kernels on the GPU (numba.cuda): the same class counts, bit for bit.

The per-instance function is :func:`kernels.correlated._class_index` (the CPU grid
kernel's own) compiled for the GPU by :func:`kernels.gpu.device`, on the same
Philox words (instance i, block 0, ``STREAM``), counted by the multi-cell kernel
that the baseline's grid uses too (:func:`kernels.gpu.launch.cells_kernel`: a
grid-stride loop, per-warp shared-memory histograms and one reduction per thread
block).  One cell runs as a grid of one cell: the CPU's
single-cell kernel computes the same classes with a branch-free formula of its own.

Imported only when a GPU path is asked for (it imports numba.cuda).
"""

from __future__ import annotations

import numpy as np

from .. import gpu as _gpu
from .launch import cells_kernel
from ..correlated import N_CLASSES, _class_index
from ..rng import philox4x32_10
from ..rng import HI_SHIFT as _HI, LO_WORD as _LO  # an instance's counter words

# The module global that numba's CUDA simulator swaps for its own.
cuda = _gpu.cuda()

THREADS = _gpu.THREADS
#: Cells per pass (32 KiB of per-warp histograms in shared memory).
CELL_TILE = 32


def _draw(ii, k0, k1, stream, need_x):
    """Instance ``ii``'s words: one block (``need_x`` is the baseline's, unused)."""
    return philox4x32_10(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)


def _classify(words, thr, fixed, af, cell):
    """The class of an instance's words in one cell (``fixed``, ``af``: unused)."""
    w0, w1, w2, w3 = words
    return _class_index(w0, w1, w2, w3, thr[cell])


_cells = cells_kernel(_draw, _classify, N_CLASSES, CELL_TILE)


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
                d_thr, d_thr, d_thr, np.int64(c0), np.int64(min(CELL_TILE, n_cells - c0)),
                np.int64(start + off), np.int64(m), np.uint64(k0), np.uint64(k1),
                np.uint64(stream), False, d_out)
        if on_step is not None:
            cuda.synchronize()
            on_step(m)
    return d_out.copy_to_host()
