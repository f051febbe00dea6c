"""The re-deliberation kernel on the GPU (numba.cuda): per-block sums within 1e-12.

The per-claim function is :func:`kernels.redeliberation._claim` (the CPU kernel's
own, with the runs, summaries and accumulations it calls) compiled by
:func:`kernels.gpu.device`, on the same Philox words.  Float sums keep the CPU's
canonical blocks of :data:`kernels.redeliberation.BLOCK` claims: one thread block
per canonical block, thread t taking claims t, t + THREADS, ..., the threads'
partial sums added in thread order (CHUNK numbers at a time through shared
memory); the caller adds the blocks in block order, as with the CPU kernel.  The
sums differ from the CPU's in the last bits, from the order inside a block and
from ``log``, ``cos`` and ``sin`` (CUDA's libdevice against the CPU's libm).

Imported only when a GPU path is asked for (it imports numba.cuda).
"""

from __future__ import annotations

import numpy as np
from numba import float64

from .. import gpu as _gpu
from ..redeliberation import BLOCK, N_ACC, N_POL, STREAM, _claim

# The module global that numba's CUDA simulator swaps for its own.
cuda = _gpu.cuda()

claim = _gpu.device(_claim)

THREADS = _gpu.THREADS
#: Per-thread bounds: runs (redeliberation.runs <= 64), spread bands' multipliers,
#: forced rounds (redeliberation.forced_rounds <= 100).
MAX_RUNS = 64
MAX_MULTS = 32
MAX_FORCED = 100
CHUNK = 16
#: The forced-rounds series' length: a module constant, since the CUDA compiler takes
#: a local array's shape only as integer literals.
F1 = MAX_FORCED + 1
NA = N_POL * 2 * N_ACC


@cuda.jit
def _blocks(n, k0, k1, contested, p_true, margin, noise, bias, bias_sd, k, M, last, x, rho, h,
            max_rounds, bands, mults, thr, trig_spread, base_calls, round_calls, forced, J,
            b0, n_blocks, out):
    acc = cuda.local.array((1, N_POL, 2, N_ACC), float64)
    band = cuda.local.array((1, 2, MAX_MULTS), float64)
    spread = cuda.local.array((1, 2, 2), float64)
    fser = cuda.local.array((1, 2, F1), float64)
    stage = cuda.shared.array((THREADS, CHUNK), float64)
    t = cuda.threadIdx.x
    stream = np.uint64(STREAM)
    nm = mults.shape[0]
    f1 = forced + 1
    nvals = NA + 2 * nm + 4 + 2 * f1
    b = b0 + cuda.blockIdx.x
    while b < n_blocks:  # grid-stride loop over canonical blocks b0 .. n_blocks - 1
        for p in range(N_POL):
            for q in range(2):
                for j in range(N_ACC):
                    acc[0, p, q, j] = 0.0
        # Only the bands and forced rounds of this launch (the rest is never read).
        for q in range(2):
            for j in range(nm):
                band[0, q, j] = 0.0
            spread[0, q, 0] = 0.0
            spread[0, q, 1] = 0.0
            for j in range(f1):
                fser[0, q, j] = 0.0
        base = np.int64(b) * BLOCK
        for r in range(BLOCK // THREADS):
            i = base + r * THREADS + t
            if i < n:
                claim(i, k0, k1, stream, contested, p_true, margin, noise, bias, bias_sd, k, M,
                      last, x, rho, h, max_rounds, bands, mults, thr, trig_spread, base_calls,
                      round_calls, forced, J, acc, band, spread, fser, 0)
        # One reduction per block, in thread order: CHUNK numbers at a time.
        for v0 in range(0, nvals, CHUNK):
            for q in range(CHUNK):
                v = v0 + q
                if v < nvals:
                    if v < NA:
                        val = acc[0, v // (2 * N_ACC), (v // N_ACC) % 2, v % N_ACC]
                    elif v < NA + 2 * nm:
                        w = v - NA
                        val = band[0, w // nm, w % nm]
                    elif v < NA + 2 * nm + 4:
                        w = v - NA - 2 * nm
                        val = spread[0, w // 2, w % 2]
                    else:
                        w = v - NA - 2 * nm - 4
                        val = fser[0, w // f1, w % f1]
                    stage[t, q] = val
            cuda.syncthreads()
            if t < CHUNK and v0 + t < nvals:
                s = 0.0
                for r in range(THREADS):
                    s += stage[r, t]
                out[b, v0 + t] = s
            cuda.syncthreads()
        b += cuda.gridDim.x


def redeliberation_kernel(n, k0, k1, contested, p_true, margin, noise, bias, bias_sd, k, x, rho,
                          h, max_rounds, bands, mults, thr, trig_spread, base_calls, round_calls,
                          forced, J, *, blocks=0, step=0):
    """:func:`kernels.redeliberation.redeliberation_kernel` on the GPU: the same four
    per-block arrays (acc, band, spread, fser).

    The canonical blocks go in launches of at most ``step`` blocks (0: pieces of about
    :data:`kernels.gpu.LAUNCH_SECONDS` each, :func:`kernels.gpu.launches`, the GPU
    synchronised between them so that a Ctrl-C stops the run there); a block's sums do
    not depend on the launch that computed it, so neither does the result."""
    n, k, forced = int(n), int(k), int(forced)
    bands = np.ascontiguousarray(bands, np.float64)
    mults = np.ascontiguousarray(mults, np.float64)
    nm = mults.shape[0]
    if k > MAX_RUNS or nm > MAX_MULTS or forced > MAX_FORCED:
        raise ValueError(f"the GPU kernel takes at most {MAX_RUNS} runs, {MAX_MULTS} "
                         f"multipliers and {MAX_FORCED} forced rounds")
    n_blocks = (n + BLOCK - 1) // BLOCK
    M = (k + 3) // 4
    last = max(int(max_rounds), forced)
    f1 = forced + 1
    nvals = NA + 2 * nm + 4 + 2 * f1
    d_out = cuda.device_array((n_blocks, nvals), np.float64)
    d_margin = cuda.to_device(np.ascontiguousarray(margin, np.float64))
    d_noise = cuda.to_device(np.ascontiguousarray(noise, np.float64))
    d_bands, d_mults = cuda.to_device(bands), cuda.to_device(mults)
    d_J = cuda.to_device(np.ascontiguousarray(J, np.float64))
    # A piece's first size: a claim costs about its runs' rounds.
    first = _gpu.FIRST_LAUNCH // (BLOCK * max(1, k) * max(1, last))
    for off, m in _gpu.launches(n_blocks, step or _gpu.MAX_LAUNCH, first):
        grid = min(blocks or _gpu.grid_blocks(m * THREADS), m)
        _blocks[grid, THREADS](
            np.int64(n), np.uint64(k0), np.uint64(k1), np.float64(contested),
            np.float64(p_true), d_margin, d_noise, np.float64(bias), np.float64(bias_sd),
            np.int64(k), np.int64(M), np.int64(last), np.float64(x), np.float64(rho),
            np.float64(h), np.int64(max_rounds), d_bands, d_mults, np.float64(thr),
            np.float64(trig_spread), np.float64(base_calls), np.float64(round_calls),
            np.int64(forced), d_J, np.int64(off), np.int64(off + m), d_out)
    out = d_out.copy_to_host()
    acc = out[:, :NA].reshape(n_blocks, N_POL, 2, N_ACC)
    band = out[:, NA:NA + 2 * nm].reshape(n_blocks, 2, nm)
    spread = out[:, NA + 2 * nm:NA + 2 * nm + 4].reshape(n_blocks, 2, 2)
    fser = out[:, NA + 2 * nm + 4:].reshape(n_blocks, 2, f1)
    return acc, band, spread, fser
