"""Evidence portfolios (seed 000, section 5): counts of (correct, k_P, k_A).

Each sender has a budget of B candidate items.  Item j of a sender passes
verification with probability ``q_true`` when its stance is true and ``q_false``
(fabricated or misleading-but-authentic items that survive the checks, see
:mod:`sim.portfolios`) when false; k_i is the number of passing items the sender
holds.  One instance draws, from stream ``STREAM``,

    block 0, slot 0: P's stance correct ~ Bernoulli(p)
    block 0, slots 1-3 and blocks 1.. : one uniform per item, P's B items first,
        then A's B items (slot 1 + j for P's item j, slot 1 + B + j for A's).

The kernel returns the count of each class ``(correct, k_P, k_A)`` flattened as
``correct * (B + 1)^2 + k_P * (B + 1) + k_A``; strategies (how many items to
submit given k) and the judge are integrated out afterwards.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .interrupt import stopped
from .rng import fill_batch

#: Stream word of this model (baseline 0, correlated signals 1).
STREAM = 2
MAX_BUDGET = 64


@nb.njit(inline="always", cache=True)
def _class_index(words, at, step, t_p, t_true, t_false, budget):
    """Class of one instance from its words ``at``, ``at + step``, ...:
    ``correct * (B + 1)^2 + k_P * (B + 1) + k_A`` (a batch's words slot by slot on the
    CPU; one instance's on the GPU, by :mod:`kernels.gpu.portfolios`)."""
    nb1 = budget + 1
    corr = np.uint64(words[at]) < t_p
    tP = t_true if corr else t_false
    tA = t_false if corr else t_true
    kp = 0
    ka = 0
    for j in range(budget):
        kp += np.uint64(words[at + (1 + j) * step]) < tP
        ka += np.uint64(words[at + (1 + budget + j) * step]) < tA
    return (nb1 * nb1 if corr else 0) + kp * nb1 + ka


#: Instances whose words are drawn together (any value gives the same counts).
BATCH = 256


@nb.njit(parallel=True, cache=True)
def portfolio_class_counts_cells(t_p, t_true, t_false, budget, start, count, k0, k1, stream,
                                 n_blocks):
    """Counts ``int64[C, 2 (B + 1)^2]`` of C cells sharing one budget B, on common random
    numbers: instance i's words are drawn once and classified for every cell, so each
    row is what the cell alone would get (the same words, the same classes), at the
    cost of one Philox pass for the whole group.  A batch's words are drawn first (the
    generator vectorises), then classified.

    ``t_p``, ``t_true``, ``t_false`` are uint64[C] thresholds (probability * 2**32).
    """
    n_cells = t_p.shape[0]
    nb1 = budget + 1
    n_classes = 2 * nb1 * nb1
    n_words = 1 + 2 * budget
    n_ctr = (n_words + 3) // 4
    out = np.zeros((n_blocks, n_cells, n_classes), np.int64)
    bsize = (count + n_blocks - 1) // n_blocks
    for b in nb.prange(n_blocks):
        lo = start + b * bsize
        hi = min(start + count, lo + bsize)
        # Four interleaved flat histograms (row c at c * n_classes) break the
        # store-to-load chain on one bin.
        local = np.zeros((4, n_cells * n_classes), np.int64)
        W = np.empty((4 * n_ctr, BATCH), np.uint32)
        Wf = W.reshape(4 * n_ctr * BATCH)  # word k of instance j at k * BATCH + j
        for i0 in range(lo, hi, BATCH):
            if stopped():  # Ctrl-C: the caller raises KeyboardInterrupt
                break
            m = min(BATCH, hi - i0)
            fill_batch(W, i0, m, n_ctr, stream, k0, k1)
            for c in range(n_cells):
                tp, tt, tf = t_p[c], t_true[c], t_false[c]
                for j in range(m):
                    local[j & 3, c * n_classes + _class_index(Wf, j, BATCH, tp, tt, tf,
                                                              budget)] += 1
        for c in range(n_cells):
            for k in range(n_classes):
                out[b, c, k] = (local[0, c * n_classes + k] + local[1, c * n_classes + k]
                                + local[2, c * n_classes + k] + local[3, c * n_classes + k])
    return out.sum(axis=0)


def portfolio_class_counts(t_p, t_true, t_false, budget, start, count, k0, k1, stream, n_blocks):
    """Counts of the 2 (B + 1)^2 classes over instances [start, start + count) of one
    cell: :func:`portfolio_class_counts_cells` with one row.

    ``t_p``, ``t_true``, ``t_false`` are uint64 thresholds (probability * 2**32).
    """
    one = [np.array([t], np.uint64) for t in (t_p, t_true, t_false)]
    return portfolio_class_counts_cells(*one, budget, start, count, k0, k1, stream,
                                        n_blocks)[0]
