"""Extension kernels' launchers as first written, kept as the oracles of the batched
launchers: instance by instance, each instance's words drawn and played out in turn
with the kernel module's own per-instance function (the one the GPU launchers call).

The batched launchers draw a batch's words first.  The panel's plays a block's panels
side by side with the same expressions, so its sums are these to the last bit
(``tests/test_panel.py``); the options launcher counts each block's plays and weights
tables of the same terms by the counts, so its counted rows are these integers and its
sums these up to the rounding of another order of addition (``tests/test_options.py``);
the loop's and the portfolio's counts are the same integers (``tests/test_loop.py``,
``tests/test_portfolios.py``).
"""

import math

import numba as nb
import numpy as np

from antiamp.kernels import options as ko
from antiamp.kernels import panel as kpn
from antiamp.kernels import portfolios as kp
from antiamp.kernels.loop import (MAJORITY, N_PROTOCOLS, STREAM as LOOP_STREAM,
                                  _flag_probability, _u)
from antiamp.kernels.rng import fill_words, philox4x32_10


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
        probs = np.zeros(K)
        cand = np.zeros(K, np.int64)
        loc = np.zeros((n_cells, 2, ko.N_SUM, 2))
        cnt = np.zeros((n_cells, 5), np.int64)
        start = (first_block + b) * ko.BLOCK
        for i in range(start, start + ko.BLOCK):
            fill_words(words, i, n_ctr, stream, k0, k1)
            for c in range(n_cells):
                ko._instance(words, K, c, cum_prior, t_p[c], wrong_cum, avail_thr, t_attack[c],
                             antagonist[c], k_examine[c], lam[c], mu[c], bias_d[c], bias_j,
                             kappa[c], near_loss[c], loss_tol[c], E0, E1, XA, EA, XP, EP,
                             probs, cand, loc, cnt)
        for c in range(n_cells):
            for p in range(2):
                for r in range(ko.N_SUM):
                    acc[b, c, p, ko.SUM_ROWS[r], 0] = loc[c, p, r, 0]
                    acc[b, c, p, ko.SUM_ROWS[r], 1] = loc[c, p, r, 1]
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


@nb.njit(parallel=True, cache=True)
def loop_paths(learner, rounds, batch, types, paths, e0, e_h, m, rate, bias, rho0, gain,
               x_pc, x_pd, x_a, J_c, J_d, audit, flag_c, budget, J_jury, esc_debate, k0, k1):
    """:func:`antiamp.kernels.loop.loop_paths`, case by case with float tests.

    Every path of the three protocols; returns float64 arrays
    ``err[3, paths, rounds + 1]``, ``label_err``, ``ratified``, ``rho``, ``escalated``
    ``[3, paths, rounds]`` and int64 ``locked[3, paths]``, ``start_wrong[3, paths]``
    (majority learner: types wrong at every round from 0 to ``rounds``, and at 0).
    Escalated cases go to debate (``esc_debate``) or to a jury's consultancy table
    ``J_jury``."""
    P = N_PROTOCOLS
    err = np.zeros((P, paths, rounds + 1))
    label_err = np.zeros((P, paths, rounds))
    ratified = np.zeros((P, paths, rounds))
    rho_out = np.zeros((P, paths, rounds))
    escalated = np.zeros((P, paths, rounds))
    locked = np.zeros((P, paths), np.int64)
    start_wrong = np.zeros((P, paths), np.int64)
    stream = np.uint64(LOOP_STREAM)
    n_round = batch * types if learner == MAJORITY else batch
    base_t = 3 * rounds
    for j in nb.prange(paths):
        jj = np.uint64(j)
        e = np.empty(P)
        rho = np.empty(P)
        s = np.empty(P)
        wrong_lab = np.zeros(P, np.int64)
        seen = np.zeros(P, np.int64)
        ratif = np.zeros(P, np.int64)
        esc = np.zeros(P, np.int64)
        state = np.zeros((P, types), np.uint8)  # majority learner: 1 = wrong answer
        always = np.zeros((P, types), np.uint8)
        type_wrong = np.zeros((P, types), np.int64)
        for p in range(P):
            rho[p] = rho0
        if learner == MAJORITY:
            for k in range(types):
                w0, _, _, _ = philox4x32_10(np.uint64(k), jj, np.uint64(base_t), stream, k0, k1)
                wr = 1 if _u(w0) < e0 else 0
                for p in range(P):
                    state[p, k] = wr
                    always[p, k] = wr
                    start_wrong[p, j] += wr
            for p in range(P):
                e[p] = start_wrong[p, j] / types
        else:
            for p in range(P):
                e[p] = e0
        for p in range(P):
            err[p, j, 0] = e[p]
        for t in range(rounds):
            tt = np.uint64(3 * t)
            for p in range(P):
                wrong_lab[p] = 0
                seen[p] = 0
                ratif[p] = 0
                esc[p] = 0
                rho_out[p, j, t] = rho[p]
                s[p] = 1.0
                if p == 2 and budget < 1.0:
                    f = _flag_probability(e[p], rho[p], x_pc, audit, flag_c)
                    if f > budget:
                        s[p] = budget / f
                if learner == MAJORITY:
                    for k in range(types):
                        type_wrong[p, k] = 0
            for i in range(n_round):
                ii = np.uint64(i)
                a0, a1, a2, a3 = philox4x32_10(ii, jj, tt, stream, k0, k1)
                b0, b1, b2, b3 = philox4x32_10(ii, jj, tt + np.uint64(1), stream, k0, k1)
                endorsed_src = _u(a1) < m
                fresh_wrong = _u(b1) < e_h  # the verdict's word: a fresh target has none
                k = i // batch
                for p in range(P):
                    if learner == MAJORITY:
                        wrong = state[p, k] == 1
                    else:
                        wrong = _u(a0) < e[p]
                    if not endorsed_src:
                        lab_wrong = fresh_wrong
                    else:
                        seen[p] += 1
                        # Evidence availability: the true side always has it; the false
                        # side passes a check with probability rho (seed 000, section 3).
                        # Only the false side's availability is random: one word serves
                        # the protagonist's (a wrong) and the antagonist's (a right).
                        fab = _u(a2) < rho[p]
                        t_p = (not wrong) or fab
                        t_a = wrong or fab
                        e_pc = 1 if (t_p and _u(a3) < x_pc) else 0
                        e_pd = 1 if (t_p and _u(a3) < x_pd) else 0
                        e_a = 1 if (t_a and _u(b0) < x_a) else 0
                        if p == 0:
                            J = J_c[e_pc]
                        elif p == 1:
                            J = J_d[e_pd, e_a]
                        else:
                            flagged = _u(b2) < audit or flag_c[e_pc] > 0.5
                            if flagged and _u(b3) < s[p]:
                                esc[p] += 1
                                J = J_d[e_pd, e_a] if esc_debate else J_jury[e_pc]
                            else:
                                J = J_c[e_pc]
                        follows = _u(b1) < J
                        lab_wrong = follows == wrong
                        if wrong and follows:
                            ratif[p] += 1
                    if lab_wrong:
                        wrong_lab[p] += 1
                        if learner == MAJORITY:
                            type_wrong[p, k] += 1
            for p in range(P):
                label_err[p, j, t] = wrong_lab[p] / n_round
                r = ratif[p] / seen[p] if seen[p] > 0 else 0.0
                ratified[p, j, t] = r
                escalated[p, j, t] = esc[p] / seen[p] if seen[p] > 0 else 0.0
                if learner == MAJORITY:
                    n_wrong = 0
                    for k in range(types):
                        w0, _, _, _ = philox4x32_10(np.uint64(k), jj,
                                                    np.uint64(base_t + 1 + t), stream, k0, k1)
                        if _u(w0) < rate:
                            if 2 * type_wrong[p, k] > batch:
                                state[p, k] = 1
                            elif 2 * type_wrong[p, k] < batch:
                                state[p, k] = 0
                        if state[p, k] == 0:
                            always[p, k] = 0
                        n_wrong += state[p, k]
                    e[p] = n_wrong / types
                else:
                    v = (1 - rate) * e[p] + rate * (label_err[p, j, t] + bias)
                    e[p] = min(1.0, max(0.0, v))
                rho[p] = rho[p] + gain * r * (1 - rho[p])
                err[p, j, t + 1] = e[p]
        if learner == MAJORITY:
            for p in range(P):
                c = 0
                for k in range(types):
                    c += always[p, k]
                locked[p, j] = c
    return err, label_err, ratified, rho_out, escalated, locked, start_wrong


@nb.njit(cache=True)
def portfolio_class_counts(t_p, t_true, t_false, budget, start, count, k0, k1, stream):
    """:func:`antiamp.kernels.portfolios.portfolio_class_counts`, one instance at a time
    with its per-instance class function."""
    nb1 = budget + 1
    n_ctr = (1 + 2 * budget + 3) // 4
    out = np.zeros(2 * nb1 * nb1, np.int64)
    words = np.empty(4 * n_ctr, np.uint32)
    for i in range(start, start + count):
        fill_words(words, i, n_ctr, stream, k0, k1)
        out[kp._class_index(words, 0, 1, t_p, t_true, t_false, budget)] += 1
    return out


@nb.njit(parallel=True, cache=True)
def panel_endorsement(zq, n, rule, need, tie, default, icc, bias_sd, n_panels, k0, k1, stream):
    """:func:`antiamp.kernels.panel.panel_endorsement`, one panel at a time with its
    per-panel function."""
    M = zq.shape[0]
    P = kpn.PANEL_BLOCK
    n_blocks = (n_panels + P - 1) // P
    s1 = np.zeros((n_blocks, M))
    s2 = np.zeros((n_blocks, M, M))
    a = math.sqrt(icc)
    e = math.sqrt(max(1.0 - icc, 0.0))
    n_ctr = (1 + n + 1) // 2
    for b in nb.prange(n_blocks):
        pi = np.empty(n)
        beta = np.empty(n)
        dp = np.empty(n + 1)
        vals = np.empty(M)
        for i in range(b * P, (b + 1) * P):
            kpn._panel(i, zq, n, n_ctr, rule, need, tie, default, a, e, bias_sd, k0, k1,
                       stream, pi, beta, dp, vals)
            for m in range(M):
                s1[b, m] += vals[m]
                for m2 in range(M):
                    s2[b, m, m2] += vals[m] * vals[m2]
    out1 = np.zeros(M)
    out2 = np.zeros((M, M))
    for b in range(n_blocks):
        for m in range(M):
            out1[m] += s1[b, m]
            for m2 in range(M):
                out2[m, m2] += s2[b, m, m2]
    return out1, out2, n_blocks * P
