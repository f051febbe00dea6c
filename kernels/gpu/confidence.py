"""The stated-confidence oversight kernel on the GPU (numba.cuda): sums within 1e-12.

The per-instance function is :func:`kernels.confidence._instance` (the CPU kernel's
own, with the jury's endorsement :func:`kernels.confidence.jury_at` it calls)
compiled by :func:`kernels.gpu.device`, on the same Philox words; the jury's table
and log-binomials are computed once on the host and sent with the parameters.
Float sums keep the CPU's canonical blocks of :data:`kernels.confidence.BLOCK`
instances: one thread block per canonical block, thread t taking instances t,
t + THREADS, ..., the threads' partial sums added in thread order; the host adds
the blocks in block order, as the CPU's caller does.  The sums differ from the
CPU's in the last bits, from the order inside a block and from ``exp``, ``log``,
``log1p``, ``cos``, ``sin`` and ``erfc`` (CUDA's libdevice against the CPU's libm).

Imported only when a GPU path is asked for (it imports numba.cuda).
"""

from __future__ import annotations

import math

import numpy as np
from numba import float64

from .. import gpu as _gpu
from ..confidence import BLOCK, N_ACC, STREAM, _instance, log_binom_row

# The module global that numba's CUDA simulator swaps for its own.
cuda = _gpu.cuda()

instance = _gpu.device(_instance)

THREADS = _gpu.THREADS
NV = 2 * N_ACC + 2  # the [2, N_ACC] sums, then the paired contrast's two


#: Registers a thread of :func:`_blocks`: left to itself the compiler takes 164, one
#: block of 256 threads an SM (12.5% occupancy on compute capability 9.0); capped at 128
#: it takes 108 without spilling (two blocks, 25%) for under 2% more instructions in
#: the loop (``tests/gpu_ptx_checks.py --report``).
MAX_REGISTERS = 128


@_gpu.jit(MAX_REGISTERS)
def _blocks(n, k0, k1, beta, s_info, s_rest, rep_p, rep_a, t_rho, t_zp, t_za, t_ap, t_aa, lam,
            mu, kappa, kappa_c, jury_n, icc, tie, gx, gw, lbin, table, b0, n_blocks, acc_out,
            gap_out):
    words = cuda.local.array(16, float64)
    nrm = cuda.local.array(6, float64)
    acc = cuda.local.array((1, 2, N_ACC), float64)
    gap = cuda.local.array((1, 2), float64)
    stage = cuda.shared.array((THREADS, NV), float64)
    t = cuda.threadIdx.x
    stream = np.uint64(STREAM)
    b = b0 + cuda.blockIdx.x
    while b < n_blocks:  # grid-stride loop over canonical blocks b0 .. n_blocks - 1
        for p in range(2):
            for k in range(N_ACC):
                acc[0, p, k] = 0.0
            gap[0, p] = 0.0
        base = np.int64(b) * BLOCK
        for r in range(BLOCK // THREADS):
            i = base + r * THREADS + t
            if i < n:
                instance(i, k0, k1, stream, words, nrm, beta, s_info, s_rest, rep_p, rep_a,
                         t_rho, t_zp, t_za, t_ap, t_aa, lam, mu, kappa, kappa_c, jury_n, icc,
                         tie, gx, gw, lbin, table, acc, gap, 0)
        for p in range(2):
            for k in range(N_ACC):
                stage[t, p * N_ACC + k] = acc[0, p, k]
            stage[t, 2 * N_ACC + p] = gap[0, p]
        cuda.syncthreads()
        if t < NV:  # one reduction per block, in thread order
            s = 0.0
            for r in range(THREADS):
                s += stage[r, t]
            if t < 2 * N_ACC:
                acc_out[b, t // N_ACC, t % N_ACC] = s
            else:
                gap_out[b, t - 2 * N_ACC] = s
        cuda.syncthreads()
        b += cuda.gridDim.x


def confidence_kernel(n, k0, k1, beta, info, rho, rep_p, rep_a, lam, mu, kappa, kappa_c,
                      jury_n, icc, tie, gx, gw, table, *, blocks=0, step=0):
    """:func:`kernels.confidence.confidence_kernel` on the GPU: per-block sums
    (n_blocks, 2, N_ACC) and the paired contrast's (n_blocks, 2).

    The canonical blocks go in launches of at most ``step`` blocks (0: pieces of about
    :data:`kernels.gpu.LAUNCH_SECONDS` each, :func:`kernels.gpu.launches`, the GPU
    synchronised between them so that a Ctrl-C stops the run there); a block's sums do
    not depend on the launch that computed it, so neither does the result."""
    n = int(n)
    n_blocks = (n + BLOCK - 1) // BLOCK
    rep_p = np.ascontiguousarray(rep_p, np.float64)
    rep_a = np.ascontiguousarray(rep_a, np.float64)
    s_info, s_rest = math.sqrt(info), math.sqrt(1.0 - info)
    two32 = 4294967296.0
    scal = [np.float64(x) for x in (beta, s_info, s_rest)]
    thr = [np.float64(x) for x in (rho * two32, rep_p[5] * two32, rep_a[5] * two32,
                                   rep_p[6] * two32, rep_a[6] * two32, lam, mu, kappa, kappa_c)]
    arrs = [cuda.to_device(np.ascontiguousarray(a, np.float64))
            for a in (gx, gw, log_binom_row(int(jury_n)), table)]
    d_acc = cuda.device_array((n_blocks, 2, N_ACC), np.float64)
    d_gap = cuda.device_array((n_blocks, 2), np.float64)
    d_rep = cuda.to_device(rep_p), cuda.to_device(rep_a)
    # A piece's first size: an instance's jury costs about its quadrature's nodes.
    first = _gpu.FIRST_LAUNCH // (BLOCK * max(1, len(gx)) * max(1, int(jury_n)))
    for off, m in _gpu.launches(n_blocks, step or _gpu.MAX_LAUNCH, first):
        grid = min(blocks or _gpu.grid_blocks(m * THREADS), m)
        _blocks[grid, THREADS](np.int64(n), np.uint64(k0), np.uint64(k1), *scal, *d_rep, *thr,
                               np.int64(jury_n), np.float64(icc), np.float64(tie), *arrs,
                               np.int64(off), np.int64(off + m), d_acc, d_gap)
    return d_acc.copy_to_host(), d_gap.copy_to_host()
