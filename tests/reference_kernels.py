"""Extension kernels' launchers as first written, kept as the oracles of the batched
launchers: instance by instance, each instance's words drawn and played out in turn
with the kernel module's own per-instance function (the one the GPU launchers call).

The batched launchers draw a batch's words first and look the per-instance terms up in
tables of the same expressions, so their results are these to the last bit
(``tests/test_options.py``).
"""

import numba as nb
import numpy as np

from antiamp.kernels import options as ko
from antiamp.kernels.rng import fill_words


@nb.njit(parallel=True, cache=True)
def option_sums_cells(K, cum_prior, t_p, wrong_cum, avail_thr, t_attack, antagonist,
                      k_examine, lam, mu, bias_d, bias_j, kappa, near_loss, loss_tol,
                      first_block, n_blocks, k0, k1, stream, acc_out):
    """:func:`antiamp.kernels.options.option_sums_cells`, one instance at a time."""
    n_cells = t_p.shape[0]
    N_ACC = ko.N_ACC
    acc = np.zeros((n_blocks, n_cells, 2, N_ACC, 2))
    E0, E1, XA, EA, XP, EP = ko.judge_tables(K, lam, mu, bias_d, bias_j, kappa)
    n_words = 7 + K + K
    n_ctr = (n_words + 3) // 4
    for b in nb.prange(n_blocks):
        words = np.empty(4 * n_ctr, np.uint32)
        scores = np.zeros(K)
        probs = np.zeros(K)
        cand = np.zeros(K, np.int64)
        loc = np.zeros((n_cells, 2, N_ACC, 2))
        cnt = np.zeros((n_cells, 5), np.int64)
        start = (first_block + b) * ko.BLOCK
        for i in range(start, start + ko.BLOCK):
            fill_words(words, i, n_ctr, stream, k0, k1)
            for c in range(n_cells):
                ko._instance(words, K, c, cum_prior, t_p[c], wrong_cum, avail_thr, t_attack[c],
                             antagonist[c], k_examine[c], lam[c], mu[c], bias_d[c], bias_j,
                             kappa[c], near_loss[c], loss_tol[c], E0, E1, XA, EA, XP, EP,
                             scores, probs, cand, loc, cnt)
        for c in range(n_cells):
            for p in range(2):
                for r in range(N_ACC):
                    acc[b, c, p, r, 0] = loc[c, p, r, 0]
                    acc[b, c, p, r, 1] = loc[c, p, r, 1]
                for r, k in ((1, cnt[c, 0]), (3, cnt[c, 1]), (7, cnt[c, 2]),
                             (11, cnt[c, 0] + cnt[c, 1])):
                    acc[b, c, p, r, 0] = k
                    acc[b, c, p, r, 1] = k
            acc[b, c, 1, 8, 0] = cnt[c, 3]
            acc[b, c, 1, 8, 1] = cnt[c, 3]
            acc[b, c, 1, 9, 0] = cnt[c, 4]
            acc[b, c, 1, 9, 1] = cnt[c, 4]
    for b in range(n_blocks):  # fixed order
        for c in range(n_cells):
            for p in range(2):
                for r in range(N_ACC):
                    acc_out[c, p, r, 0] += acc[b, c, p, r, 0]
                    acc_out[c, p, r, 1] += acc[b, c, p, r, 1]
