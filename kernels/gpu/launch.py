"""Class-count launchers built around a model's per-instance function (the GPU side).

:func:`gpu_counter` is :func:`antiamp.kernels.launch.cpu_counter` on the GPU: the
per-instance function's own Python source compiled by :func:`kernels.gpu.device`,
a grid-stride loop, a histogram per warp in shared memory (uint32: a launch is at
most :data:`kernels.gpu.MAX_LAUNCH` instances) and one reduction per thread block,
an int64 atomic add per class into the output.  Integer adds commute, so the
counts are the CPU's, whatever the grid or the split into launches.

Imported only when a GPU path is asked for (it imports numba.cuda).
"""

from __future__ import annotations

import numpy as np
from numba import uint32

from .. import gpu as _gpu

# The module global that numba's CUDA simulator swaps for its own.
cuda = _gpu.cuda()

THREADS, WARPS, WARP = _gpu.THREADS, _gpu.WARPS, _gpu.WARP

_GPU: dict = {}


def _kernel(classify, n_classes: int):
    """The ``cuda.jit`` kernel counting ``classify``'s classes (built once a pair)."""
    key = (getattr(classify, "py_func", classify), int(n_classes))
    kern = _GPU.get(key)
    if kern is not None:
        return kern
    dev = _gpu.device(classify)
    C = int(n_classes)
    CB = C + 1  # the last bin: classes outside [0, C)

    @cuda.jit
    def kern(start, count, k0, k1, thr, out):
        # The shape is a tuple of integers this closure holds: compile-time constants
        # to the CUDA compiler, as a module's constants are.
        hist = cuda.shared.array((WARPS, CB), uint32)
        t = cuda.threadIdx.x
        for k in range(t, WARPS * CB, THREADS):
            hist[k // CB, k % CB] = 0
        cuda.syncthreads()
        w = t // WARP
        i = np.int64(cuda.grid(1))
        stride = np.int64(cuda.gridsize(1))
        while i < count:  # grid-stride loop
            c = dev(np.uint64(start + i), k0, k1, thr)
            if c < 0 or c >= C:
                c = C
            cuda.atomic.add(hist, (w, c), np.uint32(1))
            i += stride
        cuda.syncthreads()
        for k in range(t, CB, THREADS):  # one reduction per block
            s = np.int64(0)
            for r in range(WARPS):
                s += np.int64(hist[r, k])
            if s != 0:
                cuda.atomic.add(out, k, s)

    _GPU[key] = kern
    return kern


def cells_kernel(draw, classify, n_classes: int, tile: int, name: str = "_cells"):
    """The built-in models' multi-cell ``cuda.jit`` kernel, written once::

        kern[blocks, THREADS](thr, fixed, af, c0, nc, start, count, k0, k1, stream, need_x, out)

    adds to ``out[c0 + j, k]`` (int64[cells, n_classes]) the instances ``start ..
    start + count - 1`` that fall in class ``k`` in cell ``c0 + j``, ``j < nc <=
    tile``: ``draw(i, k0, k1, stream, need_x)`` gives instance ``i``'s words (a tuple;
    common random numbers: drawn once, classified in every cell of the tile) and
    ``classify(words, thr, fixed, af, cell)`` its class in a cell (in [0, n_classes),
    unchecked; ``fixed`` and ``af`` are arrays the model may ignore).  A grid-stride
    loop, per-warp histograms of the tile in shared memory (uint32: a launch is at
    most :data:`kernels.gpu.MAX_LAUNCH` instances), one reduction per thread block.
    ``draw`` and ``classify`` are plain or ``njit`` functions, compiled by
    :func:`kernels.gpu.device`; the kernel is built once for each set of arguments and
    bears ``name`` in ``draw``'s module (profilers and the PTX checks list it there)."""
    key = ("cells", getattr(draw, "py_func", draw), getattr(classify, "py_func", classify),
           int(n_classes), int(tile))
    kern = _GPU.get(key)
    if kern is not None:
        return kern
    dr = _gpu.device(draw)
    cl = _gpu.device(classify)
    C, T = int(n_classes), int(tile)

    def kern(thr, fixed, af, c0, nc, start, count, k0, k1, stream, need_x, out):
        hist = cuda.shared.array((WARPS, T, C), uint32)
        t = cuda.threadIdx.x
        for k in range(t, WARPS * T * C, THREADS):
            hist[k // (T * C), (k // C) % T, k % C] = 0
        cuda.syncthreads()
        w = t // WARP
        i = np.int64(cuda.grid(1))
        stride = np.int64(cuda.gridsize(1))
        while i < count:  # grid-stride loop
            words = dr(np.uint64(start + i), k0, k1, stream, need_x)
            for j in range(nc):  # common random numbers: one draw, every cell of the tile
                c = cl(words, thr, fixed, af, c0 + j)
                cuda.atomic.add(hist, (w, j, c), np.uint32(1))
            i += stride
        cuda.syncthreads()
        for k in range(t, nc * C, THREADS):  # one reduction per block
            j = k // C
            cl_ = k % C
            s = np.int64(0)
            for r in range(WARPS):
                s += np.int64(hist[r, j, cl_])
            cuda.atomic.add(out, (c0 + j, cl_), s)

    kern.__module__ = getattr(draw, "py_func", draw).__module__
    kern.__name__ = kern.__qualname__ = name
    kern = _GPU[key] = cuda.jit(kern)
    return kern


def gpu_counter(classify, n_classes: int):
    """``run(start, count, k0, k1, thr, blocks=0, step=0) -> int64[n_classes + 1]`` on
    the GPU: :func:`antiamp.kernels.launch.cpu_counter`'s counts, the same bits.
    ``blocks`` (0: fill the GPU) and ``step`` (instances a launch) do not change them;
    the thresholds go in once, the counts come out once."""
    C = int(n_classes)
    if C < 1:
        raise ValueError(f"n_classes must be an integer >= 1, got {n_classes!r}")
    kern = _kernel(classify, C)

    def run(start, count, k0, k1, thr, blocks=0, step=0):
        d_thr = cuda.to_device(np.ascontiguousarray(thr))
        d_out = cuda.to_device(np.zeros(C + 1, np.int64))
        for off, m in _gpu.launches(int(count), step or _gpu.MAX_LAUNCH):
            kern[_gpu.grid_blocks(m, blocks), THREADS](
                np.int64(int(start) + off), np.int64(m), np.uint64(k0), np.uint64(k1),
                d_thr, d_out)
        return d_out.copy_to_host()

    return run
