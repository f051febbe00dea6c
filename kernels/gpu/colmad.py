"""The ColMAD kernel on the GPU (numba.cuda): the same class counts and sums, bit for bit.

The per-response function is :func:`kernels.colmad.one_response` (the CPU kernel's
scalar steps :func:`~kernels.colmad.head_class`, :func:`~kernels.colmad.round_code`,
:func:`~kernels.colmad.round_step` and :func:`~kernels.colmad.final_class` in order)
compiled by :func:`kernels.gpu.device`, on the same Philox words (response i, block
0 for its head, block r for round r, ``STREAM``).  The CPU launcher batches the
words and looks the rounds up in a transition table; the GPU runs one response per
thread, as the scalar steps say, and gets the same classes.

A grid-stride loop; per-warp histograms in shared memory (the responses of a class
as uint32, a launch is at most :data:`kernels.gpu.MAX_LAUNCH` responses; the sums
of ColMAD's rounds used and of their squares as uint64, added for disagreements
only, the agreements' being 0) and one reduction per thread block, an int64
atomic add per class into the output.  Every sum is an integer, so the output does
not depend on the grid, the launch split or the responses' cut.

Imported only when a GPU path is asked for (it imports numba.cuda).
"""

from __future__ import annotations

import numpy as np
from numba import uint32, uint64

from .. import gpu as _gpu
from ..colmad import N_CLASSES, STREAM, one_response

# The module global that numba's CUDA simulator swaps for its own.
cuda = _gpu.cuda()

response = _gpu.device(one_response)

THREADS, WARPS = _gpu.THREADS, _gpu.WARPS


@cuda.jit
def _counts(start, count, k0, k1, stream, t_err, pt, t_x, t_pw, t_d, R, out):
    n_hist = cuda.shared.array((WARPS, N_CLASSES), uint32)
    u_hist = cuda.shared.array((WARPS, N_CLASSES), uint64)
    u2_hist = cuda.shared.array((WARPS, N_CLASSES), uint64)
    t = cuda.threadIdx.x
    for k in range(t, WARPS * N_CLASSES, THREADS):
        n_hist[k // N_CLASSES, k % N_CLASSES] = 0
        u_hist[k // N_CLASSES, k % N_CLASSES] = 0
        u2_hist[k // N_CLASSES, k % N_CLASSES] = 0
    cuda.syncthreads()
    w = t // _gpu.WARP
    i = np.int64(cuda.grid(1))
    stride = np.int64(cuda.gridsize(1))
    while i < count:  # grid-stride loop
        c, used = response(start + i, k0, k1, stream, t_err, pt, t_x, t_pw, t_d, R)
        cuda.atomic.add(n_hist, (w, c), np.uint32(1))
        if used > 0:
            u = np.uint64(used)
            cuda.atomic.add(u_hist, (w, c), u)
            cuda.atomic.add(u2_hist, (w, c), u * u)
        i += stride
    cuda.syncthreads()
    for k in range(t, N_CLASSES, THREADS):  # one reduction per block
        s0 = np.int64(0)
        s1 = np.int64(0)
        s2 = np.int64(0)
        for r in range(WARPS):
            s0 += np.int64(n_hist[r, k])
            s1 += np.int64(u_hist[r, k])
            s2 += np.int64(u2_hist[r, k])
        cuda.atomic.add(out, (0, k), s0)
        if s1 != 0:
            cuda.atomic.add(out, (1, k), s1)
            cuda.atomic.add(out, (2, k), s2)


def colmad_counts(n, k0, k1, t_err, pt, t_x, t_pw, t_d, R, *, start=0, blocks=0, step=0):
    """:func:`kernels.colmad.colmad_counts` on the GPU: per class the responses, and the
    sums of ColMAD's rounds used and of their squares, over responses ``start`` ..
    ``start + n - 1``: the same int64[3, N_CLASSES].  ``blocks`` (0 = fill the GPU) and
    ``step`` (responses per launch) do not change the result; thresholds go in once,
    counts come out once."""
    n, R = int(n), int(R)
    d_pt = cuda.to_device(np.ascontiguousarray(pt, np.uint64))
    d_out = cuda.to_device(np.zeros((3, N_CLASSES), np.int64))
    for off, m in _gpu.launches(n, step or _gpu.MAX_LAUNCH):
        _counts[_gpu.grid_blocks(m, blocks), THREADS](
            np.int64(int(start) + off), np.int64(m), np.uint64(k0), np.uint64(k1),
            np.uint64(STREAM), np.uint64(t_err), d_pt, np.uint64(t_x), np.uint64(t_pw),
            np.uint64(t_d), np.int64(R), d_out)
    return d_out.copy_to_host()
