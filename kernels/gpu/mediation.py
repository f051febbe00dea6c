"""The mediation kernel on the GPU (numba.cuda): the same integer sums, bit for bit.

The per-case function is :func:`kernels.mediation.one_case` (the CPU kernel's scalar
steps :func:`~kernels.mediation.residual_flaws`, :func:`~kernels.mediation.dissent`
and :func:`~kernels.mediation.citations` in order, each an inversion by the same
threshold tables) compiled by :func:`kernels.gpu.device`, on the same Philox words
(case i, blocks 0.., ``STREAM``) kept in a per-thread local array.  The CPU launcher
batches the words and runs each step over the batch; the GPU runs one case per
thread, as the scalar steps say, and gets the same draws.

A grid-stride loop.  The flaw part: per class the cases (uint32, a launch is at most
:data:`kernels.gpu.MAX_LAUNCH` cases) and the sums of the residual flaw count and of
its square (uint64), in shared-memory histograms (a copy per warp while they fit,
else one per block; with more classes than :data:`BINS`, P > 21, int64 atomic adds
straight into the output).  The citation part: each thread sums its cases' class
counts, their products and the perfect-case terms in registers, then adds them into
the block's shared sums, and each block adds those into the output once.  Every sum
is an integer, so the output depends on neither the grid, the launch split nor the
cases' cut.

One source, one caveat: the sequential inversions that the tables do not cover (more
than :data:`~kernels.mediation.M_TAB` citations; a residual flaw count above
:data:`~kernels.mediation.N_TAB`) run :func:`~kernels.mediation.binom_inv`, whose
running sum of probabilities NVVM may contract into fused multiply-adds; a draw there
can then differ from the CPU's where a uniform falls within a rounding of a
cumulative sum.  Every tabled draw is an integer comparison and the same bits.

Imported only when a GPU path is asked for (it imports numba.cuda).
"""

from __future__ import annotations

import numpy as np
from numba import int32, int64, uint32, uint64

from .. import gpu as _gpu
from ..mediation import N_CIT, one_case

# The module global that numba's CUDA simulator swaps for its own.
cuda = _gpu.cuda()

case = _gpu.device(one_case)

THREADS, WARPS = _gpu.THREADS, _gpu.WARPS
#: The largest iterations and perspectives the per-thread word array holds (the
#: ``mediation`` section's upper bounds).
MAX_ITERS = 1000
MAX_PERSPECTIVES = 64
#: Philox words of a case at those bounds (1 + 2k + 2P + 4, whole blocks of 4).
MAX_WORDS = 4 * ((1 + 2 * MAX_ITERS + 2 * MAX_PERSPECTIVES + 4 + 3) // 4)
#: Shared-memory counters per array of a block (20 KiB in all): the flaw classes,
#: 2 (P + 1)^2, of P <= 21.
BINS = 1024
#: The citation sums a case adds to: the five class counts, their 15 products a <= c,
#: the perfect cases and their five counts (the rest of N_CIT is the products' lower
#: triangle, copied on the host).  Each thread keeps its own in shared memory, a column
#: of int32 (26 KiB a block, within the 48 KiB of static shared memory beside the
#: histograms), added into the block's int64 sums before any can overflow: in
#: registers as int64 they held 52 of the thread's registers, which halved the
#: resident warps.
N_USED = 26


@cuda.jit(device=True)
def _flush(acc, t, c_sum):
    """Thread t's citation sums into the block's (at their N_CIT places; integers: any
    order gives the same sums), and zeroed."""
    u = 5
    for a in range(5):
        _add(c_sum, a, acc, a, t)
        _add(c_sum, 31 + a, acc, 21 + a, t)
        for c in range(a, 5):
            _add(c_sum, 5 + 5 * a + c, acc, u, t)
            u += 1
    _add(c_sum, 30, acc, 20, t)


@cuda.jit(device=True)
def _add(c_sum, k, acc, u, t):
    v = acc[u, t]
    if v != 0:
        cuda.atomic.add(c_sum, k, np.int64(v))
        acc[u, t] = 0


@cuda.jit
def _sums(start, count, k0, k1, iters, P, M, surv, s, false_dissent, G_p, S_p, G_b, S_b,
          t_dis, t_fa, t_erase, q, G_c, S_c, n_cls, copies, flush, out, cit):
    n_hist = cuda.shared.array(BINS, uint32)
    u_hist = cuda.shared.array(BINS, uint64)
    u2_hist = cuda.shared.array(BINS, uint64)
    c_sum = cuda.shared.array(N_CIT, int64)
    W = cuda.local.array((MAX_WORDS, 1), uint32)
    counts = cuda.local.array(5, int64)
    acc = cuda.shared.array((N_USED, THREADS), int32)
    t = cuda.threadIdx.x
    for k in range(t, BINS, THREADS):
        n_hist[k] = 0
        u_hist[k] = 0
        u2_hist[k] = 0
    for k in range(t, N_CIT, THREADS):
        c_sum[k] = 0
    for k in range(N_USED):
        acc[k, t] = 0
    cuda.syncthreads()
    n_words = 1 + 2 * iters + 2 * P + 4
    Wc = W[:4 * ((n_words + 3) // 4)]  # the case's words only
    base = ((t // _gpu.WARP) % copies) * n_cls if copies > 0 else 0
    i = np.int64(cuda.grid(1))
    stride = np.int64(cuda.gridsize(1))
    n_acc = 0
    while i < count:  # grid-stride loop
        cl, nf = case(start + i, k0, k1, iters, P, M, surv, s, false_dissent, G_p, S_p, G_b,
                      S_b, t_dis, t_fa, t_erase, q, G_c, S_c, Wc, counts)
        f = np.uint64(nf)
        if copies > 0:
            cuda.atomic.add(n_hist, base + cl, np.uint32(1))
            if f > 0:
                cuda.atomic.add(u_hist, base + cl, f)
                cuda.atomic.add(u2_hist, base + cl, f * f)
        else:  # too many classes for shared memory
            cuda.atomic.add(out, (0, cl), np.int64(1))
            if f > 0:
                cuda.atomic.add(out, (1, cl), np.int64(nf))
                cuda.atomic.add(out, (2, cl), np.int64(nf) * np.int64(nf))
        perf = np.int64(counts[0] + counts[1] == M)
        acc[20, t] += perf
        u = 5
        for a in range(5):
            ca = counts[a]
            acc[a, t] += ca
            acc[21 + a, t] += perf * ca
            for c in range(a, 5):
                acc[u, t] += ca * counts[c]
                u += 1
        n_acc += 1
        if n_acc == flush:  # every term is at most M^2: flush M^2 < 2^31
            _flush(acc, t, c_sum)
            n_acc = 0
        i += stride
    _flush(acc, t, c_sum)
    cuda.syncthreads()
    if copies > 0:
        for k in range(t, n_cls, THREADS):  # one reduction per block
            s0 = np.int64(0)
            s1 = np.int64(0)
            s2 = np.int64(0)
            for r in range(copies):
                s0 += np.int64(n_hist[r * n_cls + k])
                s1 += np.int64(u_hist[r * n_cls + k])
                s2 += np.int64(u2_hist[r * n_cls + k])
            if s0 != 0:
                cuda.atomic.add(out, (0, k), s0)
            if s1 != 0:
                cuda.atomic.add(out, (1, k), s1)
                cuda.atomic.add(out, (2, k), s2)
    for k in range(t, N_CIT, THREADS):
        if c_sum[k] != 0:
            cuda.atomic.add(cit, k, c_sum[k])


def mediation_sums(n, k0, k1, iters, P, M, surv, s, false_dissent, G_p, S_p, G_b, S_b, t_dis,
                   t_fa, t_erase, q, G_c, S_c, *, start=0, blocks=0, step=0, flush=0):
    """:func:`kernels.mediation.mediation_sums` on the GPU over cases ``start`` ..
    ``start + n - 1``: the same (int64[3, 2 (P + 1)**2], int64[N_CIT]).  ``blocks``
    (0 = fill the GPU), ``step`` (cases per launch) and ``flush`` (cases a thread adds
    up before its citation sums go into its block's; 0: the most that cannot overflow
    them) do not change the result; the tables go in once, the sums come out once."""
    n, iters, P, M = int(n), int(iters), int(P), int(M)
    if not 0 <= iters <= MAX_ITERS or not 1 <= P <= MAX_PERSPECTIVES:
        raise ValueError(f"the GPU mediation kernel takes iterations in [0, {MAX_ITERS}] and "
                         f"perspectives in [1, {MAX_PERSPECTIVES}], got {iters} and {P}")
    n_cls = 2 * (P + 1) * (P + 1)
    copies = min(WARPS, BINS // n_cls)
    # Cases a thread adds up before its int32 citation sums go into the block's: a
    # case adds at most M^2 to each (its class counts sum to M).
    flush = int(flush) or max(1, (2**31 - 1) // (M * M))
    dev = [cuda.to_device(np.ascontiguousarray(a)) for a in (G_p, S_p, G_b, S_b, t_dis, q,
                                                              G_c, S_c)]
    d_G_p, d_S_p, d_G_b, d_S_b, d_t_dis, d_q, d_G_c, d_S_c = dev
    d_out = cuda.to_device(np.zeros((3, n_cls), np.int64))
    d_cit = cuda.to_device(np.zeros(N_CIT, np.int64))
    for off, m in _gpu.launches(n, step or _gpu.MAX_LAUNCH):
        _sums[_gpu.grid_blocks(m, blocks), THREADS](
            np.int64(int(start) + off), np.int64(m), np.uint64(k0), np.uint64(k1),
            np.int64(iters), np.int64(P), np.int64(M), np.float64(surv), np.float64(s),
            np.float64(false_dissent), d_G_p, d_S_p, d_G_b, d_S_b, d_t_dis, np.uint64(t_fa),
            np.uint64(t_erase), d_q, d_G_c, d_S_c, np.int64(n_cls), np.int64(copies), np.int64(flush), d_out,
            d_cit)
    out, cit = d_out.copy_to_host(), d_cit.copy_to_host()
    for a in range(5):  # the products' lower triangle, as the CPU kernel fills it
        for c in range(a):
            cit[5 + 5 * a + c] = cit[5 + 5 * c + a]
    return out, cit
