"""The multi-option kernel on the GPU (numba.cuda): the same counts, float sums within 1e-12.

The per-instance function is :func:`kernels.options._instance` (the CPU kernel's
own) compiled by :func:`kernels.gpu.device`, with the judge's per-cell tables
from :func:`kernels.options.judge_tables` (computed once on the host, sent with the
thresholds) and the same Philox words.  Float sums keep the CPU's canonical blocks
of :data:`kernels.options.BLOCK` instances, as :mod:`kernels.gpu.messages`: one
thread block per canonical block, thread t taking instances t, t + THREADS, ...,
the threads' partial sums added in thread order, the blocks added on the host in
block order.  The sums differ from the CPU's in the last bits, from the order of
the additions inside a block and from ``exp`` (CUDA's libdevice; the tables'
exponentials are the CPU's, only the stable-logit fallback calls ``exp`` on the GPU).

Two kernels from one source: ``_blocks`` with that fallback, and ``_blocks_tabled``
for the passes whose cells' tabled exponents never need it (checked on the host,
:func:`tabled`), compiled with the fallback's function replaced by one that is never
called there: its loops and probabilities took 22 registers a thread, which kept
the kernel at one block an SM.

Imported only when a GPU path is asked for (it imports numba.cuda).
"""

from __future__ import annotations

import math

import numpy as np
from numba import float64, int32, int64, uint32

from .. import gpu as _gpu
from ..options import BLOCK, MAX_K, N_ACC, N_SUM, SUM_ROWS, _instance, _judge, judge_tables
from ..rng import fill_words

# The module global that numba's CUDA simulator swaps for its own.
cuda = _gpu.cuda()


def _judge_unreached(K, a, d, om, av_a, ap, av_ap, argued, attack, lam, mu, bias_d, bias_j,
                     kappa, probs):
    """The stable-logit fallback where :func:`tabled` says no instance reaches it: NaN
    (never returned there)."""
    return math.nan, math.nan, math.nan


words_of = _gpu.device(fill_words)
instance = _gpu.device(_instance)
instance_tabled = _gpu.device(_instance, {_judge.py_func: _judge_unreached})

THREADS = _gpu.THREADS
#: Cells per pass (each thread keeps their sums in local memory).
TILE = 4
#: Numbers per cell and canonical block: the [2, N_SUM, 2] sums (the rows an instance
#: adds terms to), then the 5 counts (a thread's, at most BLOCK // THREADS: int32).
NS = 2 * N_SUM * 2
NV = NS + 5
CHUNK = 16
MAX_WORDS = 4 * ((7 + 2 * MAX_K + 3) // 4)


def _kernel(instance, name):
    """The launch kernel calling ``instance`` for each instance and cell, named ``name``."""

    def kernel(K, cum_prior, t_p, wrong_cum, avail_thr, t_attack, antagonist, k_examine, lam,
               mu, bias_d, bias_j, kappa, near_loss, loss_tol, E0, E1, XA, EA, XP, EP, c0,
               nc, first_block, n_blocks, k0, k1, stream, out):
        words = cuda.local.array(MAX_WORDS, uint32)
        probs = cuda.local.array(MAX_K, float64)
        cand = cuda.local.array(MAX_K, int64)
        loc = cuda.local.array((TILE, 2, N_SUM, 2), float64)
        cnt = cuda.local.array((TILE, 5), int32)
        stage = cuda.shared.array((THREADS, CHUNK), float64)
        t = cuda.threadIdx.x
        n_ctr = (7 + 2 * K + 3) // 4
        nvals = nc * NV
        b = cuda.blockIdx.x
        while b < n_blocks:  # grid-stride loop over canonical blocks
            for j in range(nc):  # this pass's cells only (the rest is never read)
                for p in range(2):
                    for r in range(N_SUM):
                        loc[j, p, r, 0] = 0.0
                        loc[j, p, r, 1] = 0.0
                for q in range(5):
                    cnt[j, q] = 0
            base = np.int64(first_block + b) * BLOCK
            for r in range(BLOCK // THREADS):
                words_of(words, base + r * THREADS + t, n_ctr, stream, k0, k1)
                for j in range(nc):  # common random numbers: every cell of the pass
                    instance(words, K, j, cum_prior, t_p[j], wrong_cum, avail_thr, t_attack[j],
                             antagonist[j], k_examine[j], lam[j], mu[j], bias_d[j], bias_j,
                             kappa[j], near_loss[j], loss_tol[j], E0, E1, XA, EA, XP, EP, probs,
                             cand, loc, cnt)
            # One reduction per block, in thread order: CHUNK numbers at a time.
            for v0 in range(0, nvals, CHUNK):
                for q in range(CHUNK):
                    v = v0 + q
                    if v < nvals:
                        j = v // NV
                        w = v % NV
                        if w < NS:
                            stage[t, q] = loc[j, w // (2 * N_SUM), (w // 2) % N_SUM, w % 2]
                        else:
                            stage[t, q] = np.float64(cnt[j, w - NS])
                cuda.syncthreads()
                if t < CHUNK and v0 + t < nvals:
                    s = 0.0
                    for r in range(THREADS):
                        s += stage[r, t]
                    v = v0 + t
                    out[b, c0 + v // NV, v % NV] = s
                cuda.syncthreads()
            b += cuda.gridDim.x

    kernel.__name__ = kernel.__qualname__ = name
    return cuda.jit(kernel)


_blocks = _kernel(instance, "_blocks")
_blocks_tabled = _kernel(instance_tabled, "_blocks_tabled")


def tabled(XA, EA, XP):
    """Whether no instance of these cells (rows of :func:`kernels.options.judge_tables`'
    tables) reaches the stable-logit fallback of :func:`kernels.options._values`: every
    argued option's exponent is below 700 and a's weight above 1e-280, so the total
    weight, a's plus others' (none negative), is above 1e-280 too."""
    return bool((XA < 700.0).all() and (XP < 700.0).all() and (EA > 1e-280).all())


def option_sums_cells(K, cum_prior, t_p, wrong_cum, avail_thr, t_attack, antagonist,
                      k_examine, lam, mu, bias_d, bias_j, kappa, near_loss, loss_tol,
                      first_block, n_blocks, k0, k1, stream, acc_out, *, blocks=0, step=0):
    """:func:`kernels.options.option_sums_cells` on the GPU: adds the canonical blocks'
    sums onto ``acc_out`` float64[C, 2, N_ACC, 2] in block order (count rows exact,
    the other sums within 1e-12 relative of the CPU's).

    The blocks go in launches of at most ``step`` canonical blocks (0: pieces of about
    :data:`kernels.gpu.LAUNCH_SECONDS` each, :func:`kernels.gpu.launches`, the GPU
    synchronised between them so that a Ctrl-C stops the run there); a block's sums do
    not depend on the launch that computed it, so neither does the result."""
    K = int(K)
    u64 = [np.ascontiguousarray(a, np.uint64) for a in (cum_prior, t_p, wrong_cum, avail_thr,
                                                       t_attack)]
    i64 = [np.ascontiguousarray(a, np.int64) for a in (antagonist, k_examine)]
    f64 = [np.ascontiguousarray(a, np.float64) for a in (lam, mu, bias_d, bias_j, kappa,
                                                        near_loss, loss_tol)]
    tables = judge_tables(K, f64[0], f64[1], f64[2], f64[3], f64[4])
    args = [cuda.to_device(a) for a in (*u64, *i64, *f64, *tables)]
    n_cells = u64[1].shape[0]
    d_out = cuda.device_array((n_blocks, n_cells, NV), np.float64)
    passes = []
    for c0 in range(0, n_cells, TILE):
        # This pass's cells as rows 0 .. nc - 1 of every per-cell array (views: the
        # kernel indexes them from their start, no offset kept in a register).
        rows = slice(c0, c0 + TILE)
        kernel = _blocks_tabled if tabled(tables[2][rows], tables[3][rows],
                                          tables[4][rows]) else _blocks
        passes.append((c0, kernel))
    first = _gpu.FIRST_LAUNCH // (BLOCK * n_cells * K)  # a piece's first size
    for off, m in _gpu.launches(int(n_blocks), step or _gpu.MAX_LAUNCH, first):
        grid = min(blocks or _gpu.grid_blocks(m * THREADS), m)
        for c0, kernel in passes:
            kernel[grid, THREADS](
                np.int64(K), *(x[c0:] for x in args), np.int64(c0),
                np.int64(min(TILE, n_cells - c0)), np.int64(first_block + off), np.int64(m),
                np.uint64(k0), np.uint64(k1), np.uint64(stream), d_out[off:off + m])
    # The blocks in a fixed order (NumPy adds the rows of an axis-0 sum one by one); the
    # count rows filled as the CPU kernel fills them (integers below 2**53: exact).
    tot = d_out.copy_to_host().sum(axis=0)
    acc = np.zeros((n_cells, 2, N_ACC, 2))  # the rows no instance adds to: zeros
    acc[:, :, list(SUM_ROWS)] = tot[:, :NS].reshape(n_cells, 2, N_SUM, 2)
    cnt = tot[:, NS:]
    for p in range(2):
        for r, k in ((1, cnt[:, 0]), (3, cnt[:, 1]), (7, cnt[:, 2]), (11, cnt[:, 0] + cnt[:, 1])):
            acc[:, p, r, 0] = k
            acc[:, p, r, 1] = k
    acc[:, 1, 8, 0] = acc[:, 1, 8, 1] = cnt[:, 3]
    acc[:, 1, 9, 0] = acc[:, 1, 9, 1] = cnt[:, 4]
    acc_out += acc
