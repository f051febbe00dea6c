"""The rhetoric kernel on the GPU (numba.cuda): the same counts, float sums within 1e-12.

The per-instance functions are :func:`kernels.messages._normals` and
:func:`kernels.messages._instance` (the CPU kernel's own) compiled by
:func:`kernels.gpu.device`, on the same Philox words.  Float sums keep the CPU's
canonical blocks of :data:`kernels.messages.BLOCK` instances: one thread block
sums one canonical block, thread t taking instances t, t + THREADS, ... in order,
and the threads' partial sums are added in thread order (through shared memory),
so a block's sums do not depend on the grid and a rerun gives the same bits; the
host adds the blocks in block order.  The counts are integers
and equal the CPU's; the sums differ from the CPU's in the last bits, from the
order of the additions inside a block and from ``exp``, ``log``, ``cos`` and
``sin`` (CUDA's libdevice against the CPU's libm; ``sqrt`` is correctly rounded
on both).

Imported only when a GPU path is asked for (it imports numba.cuda).
"""

from __future__ import annotations

import numpy as np
from numba import float64

from .. import gpu as _gpu
from ..messages import BLOCK, N_CLASSES, _instance, _normals
from ..rng import philox4x32_10
from ..rng import HI_SHIFT as _HI, LO_WORD as _LO  # an instance's counter words

# The module global that numba's CUDA simulator swaps for its own.
cuda = _gpu.cuda()

philox = _gpu.device(philox4x32_10)
normals = _gpu.device(_normals)
instance = _gpu.device(_instance)

THREADS = _gpu.THREADS
#: Numbers per cell and canonical block: the 8 class counts, then the sums of the
#: debate probability, its square, the consultancy probability, its square (8 each).
NV = 5 * N_CLASSES
#: Cells per pass (each thread keeps TILE * NV partial sums).
TILE = 4
#: Partial sums moved through shared memory at a time (THREADS x CHUNK doubles).
CHUNK = 16
#: A thread's partial sums: the CUDA compiler takes a local array's shape only as an
#: integer literal (a module constant), not as an expression.
LOC = TILE * NV


@cuda.jit
def _blocks(t_p, t_rho, lam, mu, kappa_v, kappa_r, m_true, m_false, sd, favoured, band, tie,
            c0, nc, first_block, n_blocks, k0, k1, stream, out):
    loc = cuda.local.array(LOC, float64)
    stage = cuda.shared.array((THREADS, CHUNK), float64)
    t = cuda.threadIdx.x
    nvals = nc * NV
    b = cuda.blockIdx.x
    while b < n_blocks:  # grid-stride loop over canonical blocks
        for v in range(nc * NV):  # this pass's cells only (the rest is never read)
            loc[v] = 0.0
        base = np.int64(first_block + b) * BLOCK
        for r in range(BLOCK // THREADS):
            ii = np.uint64(base + r * THREADS + t)
            w0, w1, w2, w3 = philox(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)
            zP, zA = normals(w2, w3)
            for j in range(nc):  # common random numbers: every cell of the pass
                c = c0 + j
                k, gd, gc = instance(w0, w1, zP, zA, t_p[c], t_rho[c], lam[c], mu[c],
                                     kappa_v[c], kappa_r[c], m_true[c], m_false[c], sd[c],
                                     favoured[c], band[c], tie[c])
                o = j * NV + k
                loc[o] += 1.0
                loc[o + N_CLASSES] += gd
                loc[o + 2 * N_CLASSES] += gd * gd
                loc[o + 3 * N_CLASSES] += gc
                loc[o + 4 * N_CLASSES] += gc * gc
        # One reduction per block, in thread order: CHUNK numbers at a time.
        for v0 in range(0, nvals, CHUNK):
            for q in range(CHUNK):
                if v0 + q < nvals:
                    stage[t, q] = loc[v0 + q]
            cuda.syncthreads()
            if t < CHUNK and v0 + t < nvals:
                s = 0.0
                for r in range(THREADS):
                    s += stage[r, t]
                v = v0 + t
                out[b, c0 + v // NV, v % NV] = s
            cuda.syncthreads()
        b += cuda.gridDim.x


def message_sums_cells(t_p, t_rho, lam, mu, kappa_v, kappa_r, m_true, m_false, sd, favoured,
                       band, tie, first_block, n_blocks, k0, k1, stream, cnt_acc, sums_acc, *,
                       blocks=0, step=0):
    """:func:`kernels.messages.message_sums_cells` on the GPU: adds the canonical blocks'
    counts (the CPU's, exactly) and sums (within 1e-12 relative of the CPU's) onto
    ``cnt_acc`` int64[C, 8] and ``sums_acc`` float64[C, 4, 8], in block order.

    The blocks go in launches of at most ``step`` canonical blocks (0: pieces of about
    :data:`kernels.gpu.LAUNCH_SECONDS` each, :func:`kernels.gpu.launches`, the GPU
    synchronised between them so that a Ctrl-C stops the run there); a block's sums do
    not depend on the launch that computed it, so neither does the result."""
    cols = [np.ascontiguousarray(a) for a in (t_p, t_rho)]
    cols = [c.astype(np.uint64) for c in cols] + [
        np.ascontiguousarray(a, np.float64) for a in (lam, mu, kappa_v, kappa_r, m_true,
                                                      m_false, sd)] + [
        np.ascontiguousarray(favoured, np.bool_)] + [
        np.ascontiguousarray(a, np.float64) for a in (band, tie)]
    n_cells = cols[0].shape[0]
    d = [cuda.to_device(a) for a in cols]
    d_out = cuda.device_array((n_blocks, n_cells, NV), np.float64)
    first = _gpu.FIRST_LAUNCH // (BLOCK * n_cells)  # a piece's first size: blocks x cells
    for off, m in _gpu.launches(int(n_blocks), step or _gpu.MAX_LAUNCH, first):
        grid = min(blocks or _gpu.grid_blocks(m * THREADS), m)
        for c0 in range(0, n_cells, TILE):
            _blocks[grid, THREADS](
                *d, np.int64(c0), np.int64(min(TILE, n_cells - c0)),
                np.int64(first_block + off), np.int64(m), np.uint64(k0), np.uint64(k1),
                np.uint64(stream), d_out[off:off + m])
    out = d_out.copy_to_host()
    # The blocks in a fixed order (NumPy adds the rows of an axis-0 sum one by one).
    tot = out.sum(axis=0)
    cnt_acc += tot[:, :N_CLASSES].astype(np.int64)  # integers below 2**53: exact
    sums_acc += tot[:, N_CLASSES:].reshape(n_cells, 4, N_CLASSES)
