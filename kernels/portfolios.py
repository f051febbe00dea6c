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

from .rng import fill_words

#: Stream word of this model (baseline 0, correlated signals 1).
STREAM = 2
MAX_BUDGET = 64


@nb.njit(inline="always", cache=True)
def _class_index(words, t_p, t_true, t_false, budget):
    """Class of one instance from its words: ``correct * (B + 1)^2 + k_P * (B + 1) + k_A``
    (compiled for the CPU here and for the GPU by :mod:`kernels.gpu.portfolios`)."""
    nb1 = budget + 1
    corr = np.uint64(words[0]) < t_p
    tP = t_true if corr else t_false
    tA = t_false if corr else t_true
    kp = 0
    ka = 0
    for j in range(budget):
        kp += np.uint64(words[1 + j]) < tP
        ka += np.uint64(words[1 + budget + j]) < tA
    return (nb1 * nb1 if corr else 0) + kp * nb1 + ka

@nb.njit(parallel=True, cache=True)
def portfolio_class_counts_cells(t_p, t_true, t_false, budget, start, count, k0, k1, stream,
                                 n_blocks):
    """Counts ``int64[C, 2 (B + 1)^2]`` of C cells sharing one budget B, on common random
    numbers: instance i's words are drawn once and classified for every cell, so each
    row is what the cell alone would get (the same words, the same classes), at the
    cost of one Philox pass for the whole group.

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
        # One flat histogram (row c at c * n_classes): a tenth faster than a 2-D one.
        local = np.zeros(n_cells * n_classes, np.int64)
        words = np.empty(4 * n_ctr, np.uint32)
        for i in range(lo, hi):
            fill_words(words, i, n_ctr, stream, k0, k1)
            for c in range(n_cells):
                local[c * n_classes + _class_index(words, t_p[c], t_true[c], t_false[c],
                                                   budget)] += 1
        for c in range(n_cells):
            for k in range(n_classes):
                out[b, c, k] = local[c * n_classes + k]
    return out.sum(axis=0)


def portfolio_class_counts(t_p, t_true, t_false, budget, start, count, k0, k1, stream, n_blocks):
    """Counts of the 2 (B + 1)^2 classes over instances [start, start + count) of one
    cell: :func:`portfolio_class_counts_cells` with one row.

    ``t_p``, ``t_true``, ``t_false`` are uint64 thresholds (probability * 2**32).
    """
    one = [np.array([t], np.uint64) for t in (t_p, t_true, t_false)]
    return portfolio_class_counts_cells(*one, budget, start, count, k0, k1, stream,
                                        n_blocks)[0]
