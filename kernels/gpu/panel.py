"""The panel's Monte Carlo kernel on the GPU (numba.cuda): the CPU's sums, to the last bits.

The per-panel function is :func:`kernels.panel._panel` (the CPU kernel's own)
compiled by :func:`kernels.gpu.device`, on the same Philox words.  A canonical
block of :data:`kernels.panel.PANEL_BLOCK` panels is one thread block, one panel a
thread; the block's sums and sums of products are added over the threads in
thread order, which is the CPU's panel order, and the host adds the blocks in
block order, as the CPU does.  The sums therefore differ from the CPU's only
through ``log``, ``cos``, ``sin`` and ``erfc`` (CUDA's libdevice against the CPU's
libm) and the GPU's fused multiply-adds: within 1e-12 relative, the same bits run
to run.

Imported only when a GPU path is asked for (it imports numba.cuda).
"""

from __future__ import annotations

import numpy as np
from numba import float64

from .. import gpu as _gpu
from ..panel import PANEL_BLOCK, _panel

# The module global that numba's CUDA simulator swaps for its own.
cuda = _gpu.cuda()

panel = _gpu.device(_panel)

#: Largest panel (``panel.size`` is at most 501) and number of table entries.
MAX_SIZE = 501
MAX_ENTRIES = 16
#: The jury's vote-count distribution (0 .. MAX_SIZE votes): a module constant, since
#: the CUDA compiler takes a local array's shape only as an integer literal.
_DP = MAX_SIZE + 1


@cuda.jit
def _blocks(zq, n, rule, need, tie, default, a, e, bias_sd, b0, n_blocks, k0, k1, stream, s1,
            s2):
    pi = cuda.local.array(MAX_SIZE, float64)
    beta = cuda.local.array(MAX_SIZE, float64)
    dp = cuda.local.array(_DP, float64)
    vals = cuda.local.array(MAX_ENTRIES, float64)
    stage = cuda.shared.array((PANEL_BLOCK, MAX_ENTRIES), float64)
    t = cuda.threadIdx.x
    M = zq.shape[0]
    n_ctr = (1 + n + 1) // 2
    b = b0 + cuda.blockIdx.x
    while b < n_blocks:  # grid-stride loop over canonical blocks b0 .. n_blocks - 1
        panel(np.int64(b) * PANEL_BLOCK + t, zq, n, n_ctr, rule, need, tie, default, a, e,
              bias_sd, k0, k1, stream, pi, beta, dp, vals)
        for m in range(M):
            stage[t, m] = vals[m]
        cuda.syncthreads()
        # One reduction per block, in thread (= panel) order.
        for v in range(t, M + M * M, PANEL_BLOCK):
            s = 0.0
            if v < M:
                for r in range(PANEL_BLOCK):
                    s += stage[r, v]
                s1[b, v] = s
            else:
                m, m2 = (v - M) // M, (v - M) % M
                for r in range(PANEL_BLOCK):
                    s += stage[r, m] * stage[r, m2]
                s2[b, m, m2] = s
        cuda.syncthreads()
        b += cuda.gridDim.x


def panel_endorsement(zq, n, rule, need, tie, default, icc, bias_sd, n_panels, k0, k1, stream,
                      *, blocks=0, step=0):
    """:func:`kernels.panel.panel_endorsement` on the GPU: (sums [M], sums of products
    [M, M], panels used).

    The canonical blocks go in launches of at most ``step`` blocks (0: pieces of about
    :data:`kernels.gpu.LAUNCH_SECONDS` each, :func:`kernels.gpu.launches`, the GPU
    synchronised between them so that a Ctrl-C stops the run there); a block's sums do
    not depend on the launch that computed it, so neither does the result."""
    import math

    zq = np.ascontiguousarray(zq, np.float64)
    M = zq.shape[0]
    if M > MAX_ENTRIES or not 1 <= n <= MAX_SIZE:
        raise ValueError(f"at most {MAX_ENTRIES} entries and panels of 1..{MAX_SIZE} judges")
    n_blocks = (n_panels + PANEL_BLOCK - 1) // PANEL_BLOCK
    a = math.sqrt(icc)
    e = math.sqrt(max(1.0 - icc, 0.0))
    d_s1 = cuda.device_array((n_blocks, M), np.float64)
    d_s2 = cuda.device_array((n_blocks, M, M), np.float64)
    d_zq = cuda.to_device(zq)
    # A piece's first size: a panel costs about its judges' draws.
    first = _gpu.FIRST_LAUNCH // (PANEL_BLOCK * int(n))
    for off, m in _gpu.launches(n_blocks, step or _gpu.MAX_LAUNCH, first):
        grid = min(blocks or _gpu.grid_blocks(m * PANEL_BLOCK), m)
        _blocks[grid, PANEL_BLOCK](d_zq, np.int64(n), np.int64(rule), np.int64(need),
                                   np.float64(tie), np.float64(default), np.float64(a),
                                   np.float64(e), np.float64(bias_sd), np.int64(off),
                                   np.int64(off + m), np.uint64(k0), np.uint64(k1),
                                   np.uint64(stream), d_s1, d_s2)
    # The blocks in block order (NumPy adds the rows of an axis-0 sum one by one, as
    # the CPU kernel does).
    return (d_s1.copy_to_host().sum(axis=0), d_s2.copy_to_host().sum(axis=0),
            n_blocks * PANEL_BLOCK)
