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

One kernel, two targets: a case's class (:func:`case_code`), a type's draws and
update (:func:`type_draw`, :func:`majority_step`) and the float steps between
rounds (:func:`budget_share`, :func:`round_end`) are the functions the GPU launcher
(:mod:`kernels.gpu.loop`) compiles or calls too, so both give the same paths.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .interrupt import stopped
from .rng import INV32 as _INV32, philox4x32_10, word_below

STREAM = 6
N_PROTOCOLS = 3  # consult, debate, escalate
CALIBRATED, MAJORITY = 0, 1

#: Cases whose words are drawn together (any value gives the same counts).
BATCH = 256
#: Thresholds of a protocol's round (:func:`round_thresholds`), by position.
N_THR = 18


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


@nb.njit(inline="always", cache=True)
def budget_share(e, rho, x_pc, audit, flag_c, budget):
    """The share s of flagged cases the escalation policy escalates under the budget."""
    s = 1.0
    if budget < 1.0:
        f = _flag_probability(e, rho, x_pc, audit, flag_c)
        if f > budget:
            s = budget / f
    return s


@nb.njit(inline="always", cache=True)
def type_draw(k, j, c, stream, k0, k1, q):
    """1 when instance type k of path j's uniform at counter block c is below q, else 0:
    the majority learner's starting answer (q = e_0) and its update draws (q = rate)."""
    w0, _, _, _ = philox4x32_10(np.uint64(k), np.uint64(j), np.uint64(c), stream, k0, k1)
    return 1 if _u(w0) < q else 0


@nb.njit(inline="always", cache=True)
def majority_step(state, update, type_wrong, batch):
    """A type's answer (1 = wrong) after a round: with an update it takes the majority
    of its ``batch`` targets, ``type_wrong`` of them wrong (a tie keeps it)."""
    if update:
        if 2 * type_wrong > batch:
            return 1
        if 2 * type_wrong < batch:
            return 0
    return state


@nb.njit(inline="always", cache=True)
def round_end(learner, e, rho, n_round, types, rate, bias, gain, n_end, n_lab, n_rat, n_esc,
              n_wrong):
    """A protocol's round from its integer counts (endorsed, wrong labels, ratified,
    escalated cases; the majority learner's wrong types): ``(label error, ratified
    rate, escalated share, next error, next rho)``."""
    label = n_lab / n_round
    r = n_rat / n_end if n_end > 0 else 0.0
    esc = n_esc / n_end if n_end > 0 else 0.0
    if learner == MAJORITY:
        e_next = n_wrong / types
    else:
        v = (1 - rate) * e + rate * (label + bias)
        e_next = min(1.0, max(0.0, v))
    return label, r, esc, e_next, rho + gain * r * (1 - rho)


@nb.njit(inline="always", cache=True)
def round_thresholds(T, m, e_h, rho, x_pc, x_pd, x_a, audit, s, J_c, J_d, J_jury, flag_c):
    """A protocol's round as integer thresholds into ``T`` (uint64[N_THR]): each float
    test ``w 2**-32 < x`` of the kernel's words is ``w < T`` (:func:`word_below`), so
    the cases' classes are the float tests', bit for bit.  Layout: m, e_h, rho, x_pc,
    x_pd, x_a, audit, s; J_c[0..1]; J_d[0..1, 0..1]; J_jury[0..1]; and whether a
    consultancy transcript with e_pc = 0, 1 is flagged (flag_c > 1/2)."""
    T[0] = word_below(m, 0.0)
    T[1] = word_below(e_h, 0.0)
    T[2] = word_below(rho, 0.0)
    T[3] = word_below(x_pc, 0.0)
    T[4] = word_below(x_pd, 0.0)
    T[5] = word_below(x_a, 0.0)
    T[6] = word_below(audit, 0.0)
    T[7] = word_below(s, 0.0)
    for e in range(2):
        T[8 + e] = word_below(J_c[e], 0.0)
        T[10 + 2 * e] = word_below(J_d[e, 0], 0.0)
        T[11 + 2 * e] = word_below(J_d[e, 1], 0.0)
        T[14 + e] = word_below(J_jury[e], 0.0)
        T[16 + e] = 1 if flag_c[e] > 0.5 else 0


@nb.njit(inline="always", cache=True)
def case_code(p, wrong, a1, a2, a3, b0, b1, b2, b3, T, esc_debate):
    """One case of protocol ``p`` (0 consult, 1 debate, 2 escalate) with the model's
    answer ``wrong`` (0, 1), from its words a1..a3, b0..b3 (slots 1..7) and the
    round's thresholds ``T`` (an array or a tuple of ``N_THR``): ``endorsed + 2
    label_wrong + 4 ratified + 8 escalated`` (endorsed: the target is oversight's
    verdict; otherwise a fresh label).  Branch-free.

    Evidence availability: the true side always has it; the false side passes a check
    with probability rho (seed 000, section 3).  Only the false side's availability is
    random: one word serves the protagonist's (a wrong) and the antagonist's (a right)."""
    # Each threshold is read at a fixed position, unconditionally, and chosen by the
    # case's bits with selects: a position that depends on the case (T[10 + 2 e_pd +
    # e_a]) is a gather, which kept the caller's loop over cases from vectorising.
    T0, T1, T2, T3, T4, T5, T6, T7 = T[0], T[1], T[2], T[3], T[4], T[5], T[6], T[7]
    c0, c1, d00, d01, d10, d11 = T[8], T[9], T[10], T[11], T[12], T[13]
    y0, y1, f0, f1 = T[14], T[15], T[16], T[17]
    endorsed = np.int64(np.uint64(a1) < T0)
    fresh_wrong = np.int64(np.uint64(b1) < T1)
    fab = np.int64(np.uint64(a2) < T2)
    t_p = (1 - wrong) | fab
    t_a = wrong | fab
    e_pc = t_p & np.int64(np.uint64(a3) < T3)
    e_pd = t_p & np.int64(np.uint64(a3) < T4)
    e_a = t_a & np.int64(np.uint64(b0) < T5)
    flagged = np.int64(np.uint64(b2) < T6) | np.int64(f1 if e_pc else f0)
    esc = np.int64(p == 2) & flagged & np.int64(np.uint64(b3) < T7)
    t_d = (d11 if e_a else d10) if e_pd else (d01 if e_a else d00)
    t_c = c1 if e_pc else c0
    if p == 1:
        tj = t_d
    else:  # consultancy, or the escalation policy: the escalated cases' judge
        tj = (t_d if esc_debate else (y1 if e_pc else y0)) if esc else t_c
    follows = np.int64(np.uint64(b1) < tj)
    lab = (1 - (follows ^ wrong)) if endorsed else fresh_wrong
    return endorsed | (lab << 1) | ((endorsed & wrong & follows) << 2) | ((endorsed & esc) << 3)


@nb.njit(inline="always", cache=True)
def _row(T, p):
    """Protocol p's thresholds as a tuple, the entries the protocols share read from
    row 0: the rows differ only in slots 2 (rho) and 7 (s), so the three protocols'
    tests of a word against a shared threshold become one test."""
    return (T[0, 0], T[0, 1], T[p, 2], T[0, 3], T[0, 4], T[0, 5], T[0, 6], T[p, 7],
            T[0, 8], T[0, 9], T[0, 10], T[0, 11], T[0, 12], T[0, 13], T[0, 14], T[0, 15],
            T[0, 16], T[0, 17])


@nb.njit(cache=True)
def count_cases(W, n_b, t_err, T, esc_debate, n):
    """A batch's first ``n_b`` cases (words ``W[0..7, q]``) counted per protocol into
    ``n[p] = (endorsed, wrong labels, ratified, escalated)``; the model's answer is
    wrong where word 0 is below ``t_err[p]``.

    The three protocols in one pass over the cases, each case's class by
    :func:`case_code` with a constant protocol and thresholds held in registers
    (:func:`_row`), so that LLVM vectorises the loop.  A function of its own, not
    inlined into :func:`loop_paths`: inside the parallel loop's body the same loop
    did not vectorise (measured: no vector selects in its machine code)."""
    r0, r1, r2 = _row(T, 0), _row(T, 1), _row(T, 2)
    te0, te1, te2 = t_err[0], t_err[1], t_err[2]
    e0 = l0 = q0 = s0 = e1 = l1 = q1 = s1 = e2 = l2 = q2 = s2 = 0
    for q in range(n_b):
        w0, a1, a2, a3 = W[0, q], W[1, q], W[2, q], W[3, q]
        b0, b1, b2, b3 = W[4, q], W[5, q], W[6, q], W[7, q]
        c = case_code(0, np.int64(np.uint64(w0) < te0), a1, a2, a3, b0, b1, b2, b3, r0,
                      esc_debate)
        e0 += c & 1
        l0 += (c >> 1) & 1
        q0 += (c >> 2) & 1
        s0 += c >> 3
        c = case_code(1, np.int64(np.uint64(w0) < te1), a1, a2, a3, b0, b1, b2, b3, r1,
                      esc_debate)
        e1 += c & 1
        l1 += (c >> 1) & 1
        q1 += (c >> 2) & 1
        s1 += c >> 3
        c = case_code(2, np.int64(np.uint64(w0) < te2), a1, a2, a3, b0, b1, b2, b3, r2,
                      esc_debate)
        e2 += c & 1
        l2 += (c >> 1) & 1
        q2 += (c >> 2) & 1
        s2 += c >> 3
    n[0, 0], n[0, 1], n[0, 2], n[0, 3] = e0, l0, q0, s0
    n[1, 0], n[1, 1], n[1, 2], n[1, 3] = e1, l1, q1, s1
    n[2, 0], n[2, 1], n[2, 2], n[2, 3] = e2, l2, q2, s2


@nb.njit(cache=True)
def path_outputs(paths, rounds):
    """The paths' outputs, zeroed (what :func:`loop_paths` returns, in its order; the
    GPU launcher fills the same)."""
    P = N_PROTOCOLS
    return (np.zeros((P, paths, rounds + 1)), np.zeros((P, paths, rounds)),
            np.zeros((P, paths, rounds)), np.zeros((P, paths, rounds)),
            np.zeros((P, paths, rounds)), np.zeros((P, paths), np.int64),
            np.zeros((P, paths), np.int64))


@nb.njit(parallel=True, cache=True)
def loop_paths(learner, rounds, batch, types, paths, e0, e_h, m, rate, bias, rho0, gain,
               x_pc, x_pd, x_a, J_c, J_d, audit, flag_c, budget, J_jury, esc_debate, k0, k1):
    """Every path of the three protocols; returns float64 arrays
    ``err[3, paths, rounds + 1]``, ``label_err``, ``ratified``, ``rho``, ``escalated``
    ``[3, paths, rounds]`` and int64 ``locked[3, paths]``, ``start_wrong[3, paths]``
    (majority learner: types wrong at every round from 0 to ``rounds``, and at 0).
    Escalated cases go to debate (``esc_debate``) or to a jury's consultancy table
    ``J_jury``.

    A round's cases are counted by class, a batch of cases' words first (the generator
    vectorises), then each case's class under the three protocols (:func:`count_cases`,
    which vectorises too) from integer thresholds: every output is a function of
    integer counts, so the same numbers as playing the cases one by one."""
    P = N_PROTOCOLS
    err, label_err, ratified, rho_out, escalated, locked, start_wrong = path_outputs(
        paths, rounds)
    stream = np.uint64(STREAM)
    n_round = batch * types if learner == MAJORITY else batch
    # Calibrated learner: one run of cases a round; majority: one per type.
    n_runs = types if learner == MAJORITY else 1
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
        W = np.empty((8, BATCH), np.uint32)
        T = np.empty((P, N_THR), np.uint64)
        t_err = np.empty(P, np.uint64)
        n = np.empty((P, 4), np.int64)
        for p in range(P):
            rho[p] = rho0
        if learner == MAJORITY:
            for k in range(types):
                wr = type_draw(k, j, base_t, stream, k0, k1, e0)
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
            if stopped():  # Ctrl-C: the caller raises KeyboardInterrupt
                break
            tt = np.uint64(3 * t)
            for p in range(P):
                wrong_lab[p] = 0
                seen[p] = 0
                ratif[p] = 0
                esc[p] = 0
                rho_out[p, j, t] = rho[p]
                s[p] = budget_share(e[p], rho[p], x_pc, audit, flag_c, budget) if p == 2 else 1.0
                if learner == MAJORITY:
                    for k in range(types):
                        type_wrong[p, k] = 0
                round_thresholds(T[p], m, e_h, rho[p], x_pc, x_pd, x_a, audit, s[p], J_c, J_d,
                                 J_jury, flag_c)
                t_err[p] = word_below(e[p], 0.0)
            for k in range(n_runs):
                for i0 in range(k * batch, k * batch + (batch if learner == MAJORITY else
                                                        n_round), BATCH):
                    if stopped():  # Ctrl-C: the caller raises KeyboardInterrupt
                        break
                    n_b = min(BATCH, (k + 1) * batch - i0 if learner == MAJORITY
                              else n_round - i0)
                    for q in range(n_b):
                        ii = np.uint64(i0 + q)
                        a0, a1, a2, a3 = philox4x32_10(ii, jj, tt, stream, k0, k1)
                        b0, b1, b2, b3 = philox4x32_10(ii, jj, tt + np.uint64(1), stream, k0, k1)
                        W[0, q] = np.uint32(a0)
                        W[1, q] = np.uint32(a1)
                        W[2, q] = np.uint32(a2)
                        W[3, q] = np.uint32(a3)
                        W[4, q] = np.uint32(b0)
                        W[5, q] = np.uint32(b1)
                        W[6, q] = np.uint32(b2)
                        W[7, q] = np.uint32(b3)
                    for p in range(P):
                        if learner == MAJORITY:  # the type's answer: always or never wrong
                            t_err[p] = np.uint64(4294967296) if state[p, k] else np.uint64(0)
                    count_cases(W, n_b, t_err, T, esc_debate, n)
                    for p in range(P):
                        seen[p] += n[p, 0]
                        wrong_lab[p] += n[p, 1]
                        ratif[p] += n[p, 2]
                        esc[p] += n[p, 3]
                        if learner == MAJORITY:
                            type_wrong[p, k] += n[p, 1]
            for p in range(P):
                n_wrong = 0
                if learner == MAJORITY:
                    for k in range(types):
                        up = type_draw(k, j, base_t + 1 + t, stream, k0, k1, rate)
                        state[p, k] = majority_step(state[p, k], up, type_wrong[p, k], batch)
                        if state[p, k] == 0:
                            always[p, k] = 0
                        n_wrong += state[p, k]
                lab, r, es, e[p], rho[p] = round_end(learner, e[p], rho[p], n_round, types, rate,
                                                     bias, gain, seen[p], wrong_lab[p], ratif[p],
                                                     esc[p], n_wrong)
                label_err[p, j, t] = lab
                ratified[p, j, t] = r
                escalated[p, j, t] = es
                err[p, j, t + 1] = e[p]
        if learner == MAJORITY:
            for p in range(P):
                c = 0
                for k in range(types):
                    c += always[p, k]
                locked[p, j] = c
    return err, label_err, ratified, rho_out, escalated, locked, start_wrong
