"""Richer messages (seed 000, section 5): verifiable evidence plus unverified rhetoric.

One instance draws, from stream ``STREAM``, counter (i, 0):
    slot 0: P's stance correct ~ Bernoulli(p)
    slot 1: the false side's evidence feasible ~ Bernoulli(rho)
    slots 2, 3: two uniforms -> (Box-Muller) the rhetoric scores r_P, r_A, each
        N(mean of its stance's truth, sd).
The true side always has evidence; evidence is presented when feasible.  The judge's
conditional endorsement probability, sigma(lam (mu + kappa_v (e_P - e_A) +
kappa_r (r_P - r_A))) in debate and sigma(lam (mu + kappa_v e_P + kappa_r r_P)) in
consultancy, is accumulated per class (correct, e_P, e_A) with its square.  With
``favoured`` set the judge labels the answer its probability favours: the step
1{index > band}, 0 below -band and ``tie`` in between (band 0, tie 1/2: 1/2 at
exactly 0) replaces the sigmoid.

Float sums are kept per fixed block of ``BLOCK`` instances and blocks are added in
order, so results do not depend on threads or chunking.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from .interrupt import stopped
from .rng import HI_SHIFT as _HI, INV32 as _INV32, LO_WORD as _LO
from .rng import philox4x32_10

STREAM = 4
BLOCK = 4096
N_CLASSES = 8  # 4 correct + 2 e_P + e_A



@nb.njit(inline="always", cache=True)
def _sigmoid(x):
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


@nb.njit(inline="always", cache=True)
def _judge(x, favoured, band, tie):
    if favoured:
        return 1.0 if x > band else (0.0 if x < -band else tie)
    return _sigmoid(x)


@nb.njit(inline="always", cache=True)
def _normals(w2, w3):
    """The instance's two rhetoric normals (Box-Muller on words 2 and 3)."""
    u1 = (np.float64(w2) + 0.5) * _INV32
    u2 = (np.float64(w3) + 0.5) * _INV32
    r = math.sqrt(-2.0 * math.log(u1))
    return r * math.cos(2.0 * math.pi * u2), r * math.sin(2.0 * math.pi * u2)


@nb.njit(inline="always", cache=True)
def _instance(w0, w1, zP, zA, t_p, t_rho, lam, mu, kappa_v, kappa_r, m_true, m_false, sd,
              favoured, band, tie):
    """One instance of one cell: its class and the debate and consultancy endorsement
    probabilities (compiled for the CPU here and for the GPU by
    :mod:`kernels.gpu.messages`)."""
    corr = np.uint64(w0) < t_p
    feas = np.uint64(w1) < t_rho
    ep = 1 if (corr or feas) else 0
    ea = 1 if ((not corr) or feas) else 0
    rP = (m_true if corr else m_false) + sd * zP
    rA = (m_false if corr else m_true) + sd * zA
    gd = _judge(lam * (mu + kappa_v * (ep - ea) + kappa_r * (rP - rA)), favoured, band, tie)
    gc = _judge(lam * (mu + kappa_v * ep + kappa_r * rP), favoured, band, tie)
    return (4 if corr else 0) + 2 * ep + ea, gd, gc


@nb.njit(parallel=True, cache=True)
def message_sums_cells(t_p, t_rho, lam, mu, kappa_v, kappa_r, m_true, m_false, sd, favoured,
                       band, tie, first_block, n_blocks, k0, k1, stream, cnt_acc, sums_acc):
    """Per class and cell: counts and sums (and squares) of the debate and consultancy
    endorsement probabilities over instance blocks [first_block, first_block + n_blocks)
    of C cells (every argument but the blocks and the key a length-C array), on common
    random numbers: each instance's words and standard normals are drawn once and
    judged for every cell.  Adds the blocks' counts and sums, in block order, onto
    ``cnt_acc`` int64[C, 8] and ``sums_acc`` float64[C, 4, 8]: a caller that passes
    successive block ranges gets each cell's sums to the last bit whatever cells share
    its pass (the same terms, added in the same order).
    """
    n_cells = t_p.shape[0]
    cnt = np.zeros((n_blocks, n_cells, N_CLASSES), np.int64)
    sums = np.zeros((n_blocks, n_cells, 4, N_CLASSES))
    for b in nb.prange(n_blocks):
        start = (first_block + b) * BLOCK
        for i in range(start, start + BLOCK):
            if (i & 1023) == 0 and stopped():  # Ctrl-C: the caller raises KeyboardInterrupt
                break
            ii = np.uint64(i)
            w0, w1, w2, w3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)
            zP, zA = _normals(w2, w3)
            for c in range(n_cells):
                k, gd, gc = _instance(w0, w1, zP, zA, t_p[c], t_rho[c], lam[c], mu[c],
                                      kappa_v[c], kappa_r[c], m_true[c], m_false[c], sd[c],
                                      favoured[c], band[c], tie[c])
                cnt[b, c, k] += 1
                sums[b, c, 0, k] += gd
                sums[b, c, 1, k] += gd * gd
                sums[b, c, 2, k] += gc
                sums[b, c, 3, k] += gc * gc
    for b in range(n_blocks):  # fixed order
        for c in range(n_cells):
            for k in range(N_CLASSES):
                cnt_acc[c, k] += cnt[b, c, k]
                for j in range(4):
                    sums_acc[c, j, k] += sums[b, c, j, k]
