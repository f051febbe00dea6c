"""The closed-loop kernel on the GPU (numba.cuda): the same paths, bit for bit.

The per-case function is :func:`kernels.loop.case_code` (the CPU kernel's own) and
the majority learner's per-type steps are :func:`kernels.loop.type_draw` and
:func:`kernels.loop.majority_step`, compiled by :func:`kernels.gpu.device`, on the
same Philox words (case i of round t of path j: counters (i, j, 3 t + c, STREAM)).

Why the rounds are driven from the host: a round's counts feed the next round's
error and rho through float arithmetic (:func:`kernels.loop.round_end`,
:func:`kernels.loop.budget_share`), and on the GPU NVVM contracts a multiply and
an add into one fused multiply-add (numba.cuda offers no switch to turn that off),
which rounds differently: an error one ulp off can move a threshold and then a
case's class.  So each round is one launch that counts the cases of every path
(integer counts: thresholds in, counts out) and the host does the float steps
with the CPU's compiled functions; every number is then the CPU kernel's, bit for
bit.  Per round the host sends three thresholds per path and protocol (rho's,
the escalation share's, the error's; the others are the round's constants, sent
once) and gets five counts back.

The round's launch: a thread block takes a tile of THREADS x :data:`CASES`
consecutive cases of one path (a grid-stride loop over paths x tiles), a thread's cases strided by
the block's width; each thread counts its cases' classes per protocol, the block
adds its threads' counts in shared memory and adds its totals to the path's
counters (int64 atomic adds: integers, so any grid gives the same counts).  The
majority learner keeps its types' answers on the device ((paths, protocol, type)
uint8) and counts each type's wrong labels there (uint32 atomic adds, a thread's
run of cases of one type added at once); a second launch per round updates the
types, one thread block per path.  Paths run in chunks whose per-type arrays fit
:data:`TYPE_BYTES`.

Imported only when a GPU path is asked for (it imports numba.cuda).
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numba import int32, int64, uint64

from .. import gpu as _gpu
from ..loop import (MAJORITY, N_PROTOCOLS, N_THR, STREAM, budget_share, case_code,
                    path_outputs,
                    majority_step, round_end, round_thresholds, type_draw)
from ..rng import philox4x32_10, word_below

# The module global that numba's CUDA simulator swaps for its own.
cuda = _gpu.cuda()

philox = _gpu.device(philox4x32_10)
case = _gpu.device(case_code)
draw = _gpu.device(type_draw)
step = _gpu.device(majority_step)

THREADS = _gpu.THREADS
P = N_PROTOCOLS
#: Cases a thread takes of a tile (a tile: THREADS * CASES consecutive cases of a path).
CASES = 16
#: Device bytes of the majority learner's per-type arrays (answers, ever-right
#: flags, wrong-label counters) a chunk of paths may hold.
TYPE_BYTES = 1 << 30
#: Slots of a round's per-path thresholds: rho's and the escalation share's (slots 2
#: and 7 of :func:`kernels.loop.round_thresholds`), and the error's.
T_RHO, T_S, T_ERR = 0, 1, 2
#: Counters of a round (four a protocol) and of a type update (two a protocol).  The
#: CUDA compiler takes a local or shared array's shape only as an integer literal (a
#: module constant), not as an expression such as ``4 * P``; the simulator takes both.
P4 = 4 * P
P2 = 2 * P


@cuda.jit
def _cases(majority, batch, n_round, per_thread, tiles, j0, u0, u_end, tt, k0, k1, base_T, thr,
           esc_debate, state, type_wrong, cnt):
    tot = cuda.shared.array(P4, int64)
    # The (path, tile)'s thresholds, the same for every thread of the block: in shared
    # memory, written once a block (per thread they took local memory and registers).
    T = cuda.shared.array((P, N_THR), uint64)
    te = cuda.shared.array(P, uint64)
    # A thread's counts of a tile, at most its ``per_thread`` cases: int32.
    c = cuda.local.array(P4, int32)
    lab = cuda.local.array(P, int32)
    t = cuda.threadIdx.x
    stream = np.uint64(STREAM)
    u = u0 + np.int64(cuda.blockIdx.x)
    while u < u_end:  # grid-stride loop over (path, tile) u0 .. u_end - 1 (path-major)
        jl = u // tiles
        first = (u % tiles) * (per_thread * THREADS)
        if t < 4 * P:
            tot[t] = 0
        if t < P * N_THR:
            p, q = t // N_THR, t % N_THR
            T[p, q] = thr[p, jl, T_RHO] if q == 2 else (thr[p, jl, T_S] if q == 7
                                                        else base_T[q])
        if t < P:
            te[t] = thr[t, jl, T_ERR]
        for p in range(P):
            lab[p] = 0
        for q in range(4 * P):
            c[q] = 0
        cuda.syncthreads()
        jj = np.uint64(j0 + jl)
        cur = np.int64(-1)  # the type of this thread's run of cases (majority learner)
        for r in range(per_thread):
            i = first + r * THREADS + t
            if i < n_round:
                ii = np.uint64(i)
                a0, a1, a2, a3 = philox(ii, jj, tt, stream, k0, k1)
                b0, b1, b2, b3 = philox(ii, jj, tt + np.uint64(1), stream, k0, k1)
                k = i // batch if majority else np.int64(0)
                if majority and k != cur:
                    if cur >= 0:
                        for p in range(P):
                            if lab[p] != 0:
                                cuda.atomic.add(type_wrong, (jl, p, cur), np.uint32(lab[p]))
                            lab[p] = 0
                    cur = k
                # The thresholds' row read where a case uses it: ``i >> 62`` is 0 (i <
                # 2**62), but the compiler cannot know it, so it does not hoist the
                # loads of all three rows out of the loop into 108 registers (shared
                # memory reads of one address by a warp are broadcasts).
                z = i >> 62
                for p in range(P):
                    if majority:
                        wrong = np.int64(state[jl, p, k])
                    else:
                        wrong = np.int64(np.uint64(a0) < te[p])
                    code = case(p, wrong, a1, a2, a3, b0, b1, b2, b3, T[p + z], esc_debate)
                    c[4 * p] += code & 1
                    c[4 * p + 1] += (code >> 1) & 1
                    c[4 * p + 2] += (code >> 2) & 1
                    c[4 * p + 3] += code >> 3
                    lab[p] += (code >> 1) & 1
        if majority and cur >= 0:
            for p in range(P):
                if lab[p] != 0:
                    cuda.atomic.add(type_wrong, (jl, p, cur), np.uint32(lab[p]))
        for q in range(4 * P):
            if c[q] != 0:
                cuda.atomic.add(tot, q, c[q])
        cuda.syncthreads()
        if t < 4 * P and tot[t] != 0:  # one reduction per block
            cuda.atomic.add(cnt, (t // 4, jl, t % 4), tot[t])
        cuda.syncthreads()
        u += cuda.gridDim.x


@cuda.jit
def _start(types, j0, n_paths, c, k0, k1, e0, state, always, start_wrong):
    acc = cuda.shared.array(1, int64)
    t = cuda.threadIdx.x
    stream = np.uint64(STREAM)
    b = np.int64(cuda.blockIdx.x)
    while b < n_paths:  # grid-stride loop over paths, a block a path
        if t == 0:
            acc[0] = 0
        cuda.syncthreads()
        n = np.int64(0)
        for k in range(t, types, THREADS):
            wr = draw(k, j0 + b, c, stream, k0, k1, e0)
            for p in range(P):
                state[b, p, k] = wr
                always[b, p, k] = wr
            n += wr
        if n != 0:
            cuda.atomic.add(acc, 0, n)
        cuda.syncthreads()
        if t == 0:
            start_wrong[b] = acc[0]
        cuda.syncthreads()
        b += cuda.gridDim.x


#: Registers a thread of :func:`_types`: the compiler takes 69 (3 blocks of 256 threads
#: an SM); at 64 it does not spill (4 blocks) for 1% more instructions in the loop.
TYPES_MAX_REGISTERS = 64


@_gpu.jit(TYPES_MAX_REGISTERS)
def _types(types, batch, j0, n_paths, c, k0, k1, rate, last, state, always, type_wrong,
           n_wrong, locked):
    acc = cuda.shared.array(P2, int64)
    nw = cuda.local.array(P2, int64)
    t = cuda.threadIdx.x
    stream = np.uint64(STREAM)
    b = np.int64(cuda.blockIdx.x)
    while b < n_paths:  # grid-stride loop over paths, a block a path
        if t < 2 * P:
            acc[t] = 0
        for q in range(2 * P):
            nw[q] = 0
        cuda.syncthreads()
        for k in range(t, types, THREADS):
            up = draw(k, j0 + b, c, stream, k0, k1, rate)
            for p in range(P):
                st = step(state[b, p, k], up, np.int64(type_wrong[b, p, k]), batch)
                state[b, p, k] = st
                type_wrong[b, p, k] = 0
                if st == 0:
                    always[b, p, k] = 0
                nw[p] += st
                if last:
                    nw[P + p] += always[b, p, k]
        for q in range(2 * P):
            if nw[q] != 0:
                cuda.atomic.add(acc, q, nw[q])
        cuda.syncthreads()
        if t < P:
            n_wrong[t, b] = acc[t]
            if last:
                locked[t, b] = acc[P + t]
        cuda.syncthreads()
        b += cuda.gridDim.x


@nb.njit(cache=True)
def _round_inputs(t, e, rho, x_pc, audit, flag_c, budget, rho_out, thr, j0):
    """The host's part before round t: rho's record and each path's thresholds."""
    for p in range(P):
        for jl in range(e.shape[1]):
            rho_out[p, j0 + jl, t] = rho[p, jl]
            s = budget_share(e[p, jl], rho[p, jl], x_pc, audit, flag_c, budget) if p == 2 \
                else 1.0
            thr[p, jl, T_RHO] = word_below(rho[p, jl], 0.0)
            thr[p, jl, T_S] = word_below(s, 0.0)
            thr[p, jl, T_ERR] = word_below(e[p, jl], 0.0)


@nb.njit(cache=True)
def _round_outputs(t, learner, n_round, types, rate, bias, gain, cnt, n_wrong, e, rho, err,
                   label_err, ratified, escalated, j0):
    """The host's part after round t: the CPU kernel's float steps on the counts."""
    for p in range(P):
        for jl in range(e.shape[1]):
            j = j0 + jl
            lab, r, es, e[p, jl], rho[p, jl] = round_end(
                learner, e[p, jl], rho[p, jl], n_round, types, rate, bias, gain, cnt[p, jl, 0],
                cnt[p, jl, 1], cnt[p, jl, 2], cnt[p, jl, 3], n_wrong[p, jl])
            label_err[p, j, t] = lab
            ratified[p, j, t] = r
            escalated[p, j, t] = es
            err[p, j, t + 1] = e[p, jl]


def loop_paths(learner, rounds, batch, types, paths, e0, e_h, m, rate, bias, rho0, gain, x_pc,
               x_pd, x_a, J_c, J_d, audit, flag_c, budget, J_jury, esc_debate, k0, k1, *,
               blocks=0, chunk=0, cases=CASES, step=0):
    """:func:`kernels.loop.loop_paths` on the GPU: the same arrays, bit for bit.
    ``blocks`` (0 = fill the GPU), ``chunk`` (paths at a time; 0 = as many as
    :data:`TYPE_BYTES` allows), ``cases`` (a thread's cases of a tile) and ``step``
    ((path, tile) pairs a launch of a round's cases; 0: pieces of about
    :data:`kernels.gpu.LAUNCH_SECONDS` each, :func:`kernels.gpu.launches`, the GPU
    synchronised between them so that a Ctrl-C stops a long round there) do not
    change the result: the counts are integers added atomically."""
    learner, rounds, batch, paths = int(learner), int(rounds), int(batch), int(paths)
    majority = learner == MAJORITY
    types = int(types) if majority else 1
    n_round = batch * types if majority else batch
    J_c, J_d, J_jury, flag_c = (np.ascontiguousarray(a, np.float64)
                                for a in (J_c, J_d, J_jury, flag_c))
    err, label_err, ratified, rho_out, escalated, locked, start_wrong = path_outputs(
        paths, rounds)
    base_T = np.empty(N_THR, np.uint64)  # the round's constants (slots 2 and 7 per path)
    round_thresholds(base_T, m, e_h, 0.0, x_pc, x_pd, x_a, audit, 1.0, J_c, J_d, J_jury, flag_c)
    d_base = cuda.to_device(base_T)
    per_path = 6 * P * types if majority else 1
    pc = max(1, min(paths, int(chunk) or TYPE_BYTES // per_path))
    cases = max(1, int(cases))
    tiles = -(-n_round // (cases * THREADS))
    k0, k1 = np.uint64(k0), np.uint64(k1)
    base_t = 3 * rounds
    # A piece's first size in (path, tile) pairs: a tile is cases * THREADS cases of
    # every protocol.
    first = _gpu.FIRST_LAUNCH // (cases * THREADS * P)
    for j0 in range(0, paths, pc):
        n = min(pc, paths - j0)
        grid_p = _gpu.grid_blocks(n * THREADS, blocks)
        if majority:
            d_state = cuda.device_array((n, P, types), np.uint8)
            d_always = cuda.device_array((n, P, types), np.uint8)
            d_tw = cuda.to_device(np.zeros((n, P, types), np.uint32))
            d_start = cuda.device_array(n, np.int64)
            d_nw = cuda.device_array((P, n), np.int64)
            d_locked = cuda.device_array((P, n), np.int64)
            _start[grid_p, THREADS](np.int64(types), np.int64(j0), np.int64(n), np.int64(base_t),
                                    k0, k1, np.float64(e0), d_state, d_always, d_start)
            sw = d_start.copy_to_host()
            start_wrong[:, j0:j0 + n] = sw
            e = np.empty((P, n))
            e[:] = sw / types
        else:  # placeholders: the calibrated learner has no per-type state
            d_state = cuda.device_array((1, P, 1), np.uint8)
            d_tw = cuda.device_array((1, P, 1), np.uint32)
            e = np.full((P, n), float(e0))
        nw = np.zeros((P, n), np.int64)
        rho = np.full((P, n), float(rho0))
        err[:, j0:j0 + n, 0] = e
        thr = np.empty((P, n, 3), np.uint64)
        zeros = np.zeros((P, n, 4), np.int64)
        for t in range(rounds):
            _round_inputs(t, e, rho, float(x_pc), float(audit), flag_c, float(budget), rho_out,
                          thr, j0)
            d_cnt = cuda.to_device(zeros)
            d_thr = cuda.to_device(thr)
            for off, size in _gpu.launches(n * tiles, step or _gpu.MAX_LAUNCH, first):
                _cases[_gpu.grid_blocks(size * THREADS, blocks), THREADS](
                    majority, np.int64(batch), np.int64(n_round), np.int64(cases),
                    np.int64(tiles), np.int64(j0), np.int64(off), np.int64(off + size),
                    np.uint64(3 * t), k0, k1, d_base, d_thr, bool(esc_debate), d_state, d_tw,
                    d_cnt)
            if majority:
                _types[grid_p, THREADS](np.int64(types), np.int64(batch), np.int64(j0),
                                        np.int64(n), np.int64(base_t + 1 + t), k0, k1,
                                        np.float64(rate), t == rounds - 1, d_state, d_always,
                                        d_tw, d_nw, d_locked)
                nw = d_nw.copy_to_host()
            _round_outputs(t, learner, n_round, types, float(rate), float(bias), float(gain),
                           d_cnt.copy_to_host(), nw, e, rho, err, label_err, ratified, escalated,
                           j0)
        if majority and rounds > 0:
            locked[:, j0:j0 + n] = d_locked.copy_to_host()
        elif majority:  # no rounds: the types wrong at round 0
            locked[:, j0:j0 + n] = sw
    return err, label_err, ratified, rho_out, escalated, locked, start_wrong
