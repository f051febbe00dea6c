"""Closed-loop oversight: rounds of answer -> oversight -> training, simulated path by path.

Each of ``paths`` independent paths runs ``rounds`` rounds.  In round t the model
answers a batch of instances; each instance's training target is, with probability
m, the label that oversight endorsed (the judge's verdict on the model's answer
under consultancy, debate or the escalation policy), and otherwise a fresh label
that is wrong with probability e_h.  The learner then moves:

* calibrated learner: its error becomes ``(1 - rate) e_t + rate (W / N + bias)``
  (clipped to [0, 1]), W the wrong targets among the N of the round;
* majority (MAP) learner: each of ``types`` instance types holds one answer; with
  probability ``rate`` it takes the majority of that type's ``batch`` targets
  (keeping its answer on a tie).

Optionally the fabrication feasibility follows the ratified mistakes:
``rho_{t+1} = rho_t + gain R_t (1 - rho_t)``, R_t the share of overseen cases whose
wrong answer was endorsed.

The three protocols run side by side on the same random numbers (common random
numbers, DESIGN.md): instance i of round t of path j reads Philox counters
``(i, j, 3 t + c, STREAM)``, c = 0, 1, whatever the protocol; a type's starting
answer reads ``(k, j, 3 rounds, STREAM)`` and its update draw in round t
``(k, j, 3 rounds + 1 + t, STREAM)``.  Word slots of an instance: 0 the model's
error, 1 the target's source, 2 the false side's evidence (the protagonist's when
a is wrong, the antagonist's when a is right: only one of them is ever random),
3 and 4 the presentation draws of the protagonist and the antagonist, 5 the
judge's verdict (or, for a fresh target, whether it is wrong), 6 the audit, 7
escalation under a budget.  Two Philox calls per case serve all three protocols.

The kernel draws the judge's verdict (the labels are what the learner trains on,
so they are not Rao-Blackwellised) and returns per path and round the learner's
error, the training targets' error rate, the ratified-mistake rate, rho and the
share of overseen cases escalated; paths run in parallel and each writes only its
own rows, so results do not depend on the thread count.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .rng import philox4x32_10

STREAM = 6
N_PROTOCOLS = 3  # consult, debate, escalate
CALIBRATED, MAJORITY = 0, 1

_INV32 = 1.0 / 4294967296.0


@nb.njit(inline="always", cache=True)
def _u(w):
    return np.float64(w) * _INV32


@nb.njit(cache=True)
def _flag_probability(e, rho, x_pc, audit, flag_c):
    """Pr(a case is flagged for escalation) at error e and fabrication rate rho."""
    pe1_w = rho * x_pc  # Pr(e_Pc = 1 | a wrong)
    pe1_r = x_pc
    f = e * ((1 - pe1_w) * flag_c[0] + pe1_w * flag_c[1]) + (1 - e) * (
        (1 - pe1_r) * flag_c[0] + pe1_r * flag_c[1])
    return audit + (1 - audit) * f


@nb.njit(parallel=True, cache=True)
def loop_paths(learner, rounds, batch, types, paths, e0, e_h, m, rate, bias, rho0, gain,
               x_pc, x_pd, x_a, J_c, J_d, audit, flag_c, budget, J_jury, esc_debate, k0, k1):
    """Every path of the three protocols; returns float64 arrays
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
    stream = np.uint64(STREAM)
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
