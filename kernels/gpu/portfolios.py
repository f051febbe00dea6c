"""The evidence-portfolio kernel on the GPU (numba.cuda): the same class counts, bit for bit.

The per-instance function is :func:`kernels.portfolios._class_index` (the CPU
kernel's own) compiled by :func:`kernels.gpu.device`, on the same Philox words
(:func:`kernels.rng.fill_words`: instance i, blocks 0.., ``STREAM``), kept in a
per-thread local array.  The class count grows as 2 (B + 1)^2, so the shared
histograms are one flat array of :data:`BINS` counters: a copy per warp and
several cells a pass when they fit, else one copy per block (B > 21).  A
grid-stride loop and one reduction per thread block, as :mod:`kernels.gpu.baseline`.

Imported only when a GPU path is asked for (it imports numba.cuda).
"""

from __future__ import annotations

import numpy as np
from numba import uint32

from .. import gpu as _gpu
from ..portfolios import MAX_BUDGET, _class_index
from ..rng import fill_words

# The module global that numba's CUDA simulator swaps for its own.
cuda = _gpu.cuda()

words_of = _gpu.device(fill_words)
classify = _gpu.device(_class_index)

THREADS, WARPS = _gpu.THREADS, _gpu.WARPS
#: Shared-memory counters of a block (33 KiB): the classes of one cell at MAX_BUDGET.
BINS = 2 * (MAX_BUDGET + 1) ** 2
#: Philox words of an instance at MAX_BUDGET (1 + 2B uniforms, whole blocks of 4).
MAX_WORDS = 4 * ((2 + 2 * MAX_BUDGET + 2) // 4)


@cuda.jit
def _cells(t_p, t_true, t_false, budget, n_classes, copies, c0, nc, start, count, k0, k1,
           stream, out):
    hist = cuda.shared.array(BINS, uint32)
    words = cuda.local.array(MAX_WORDS, uint32)
    t = cuda.threadIdx.x
    for k in range(t, BINS, THREADS):
        hist[k] = 0
    cuda.syncthreads()
    # This thread's histogram copy: its warp's, or the block's one copy.
    base = ((t // _gpu.WARP) % copies) * nc * n_classes
    n_ctr = (2 * budget + 4) // 4
    i = np.int64(cuda.grid(1))
    stride = np.int64(cuda.gridsize(1))
    while i < count:  # grid-stride loop
        words_of(words, start + i, n_ctr, stream, k0, k1)
        for j in range(nc):  # common random numbers: one draw, every cell of the pass
            c = c0 + j
            cl = classify(words, 0, 1, t_p[c], t_true[c], t_false[c], budget)
            cuda.atomic.add(hist, base + j * n_classes + cl, np.uint32(1))
        i += stride
    cuda.syncthreads()
    for k in range(t, nc * n_classes, THREADS):  # one reduction per block
        s = np.int64(0)
        for r in range(copies):
            s += np.int64(hist[r * nc * n_classes + k])
        cuda.atomic.add(out, (c0 + k // n_classes, k % n_classes), s)


def portfolio_class_counts_cells(t_p, t_true, t_false, budget, start, count, k0, k1, stream, *,
                                 blocks=0, step=0, on_step=None):
    """:func:`kernels.portfolios.portfolio_class_counts_cells` on the GPU: the same
    int64[C, 2 (B + 1)^2]; ``blocks`` and ``step`` do not change the result."""
    budget = int(budget)
    if not 0 <= budget <= MAX_BUDGET:
        raise ValueError(f"budget must be in 0..{MAX_BUDGET}, got {budget}")
    t_p, t_true, t_false = (np.ascontiguousarray(np.atleast_1d(a), np.uint64)
                            for a in (t_p, t_true, t_false))
    n_cells = t_p.shape[0]
    n_classes = 2 * (budget + 1) ** 2
    copies = WARPS if WARPS * n_classes <= BINS else 1
    tile = max(1, BINS // (copies * n_classes))
    d = [cuda.to_device(a) for a in (t_p, t_true, t_false)]
    d_out = cuda.to_device(np.zeros((n_cells, n_classes), np.int64))
    for off, m in _gpu.launches(count, step or _gpu.MAX_LAUNCH):
        for c0 in range(0, n_cells, tile):
            _cells[_gpu.grid_blocks(m, blocks), THREADS](
                *d, np.int64(budget), np.int64(n_classes), np.int64(copies), np.int64(c0),
                np.int64(min(tile, n_cells - c0)), np.int64(start + off), np.int64(m),
                np.uint64(k0), np.uint64(k1), np.uint64(stream), d_out)
        if on_step is not None:
            cuda.synchronize()
            on_step(m)
    return d_out.copy_to_host()
