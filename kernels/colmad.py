"""Error detection by debate (seed 001): the Monte Carlo kernel.

Draw slots of response i, Philox stream ``STREAM``, counter (i, c, 0, STREAM):

* c = 0: word 0: whether it has an error (w.p. p_error); word 1: the pair of
  detector correctness indicators (one uniform against the class's joint table);
* c = r (r = 1..R), round r of a disagreement: word 0: the right side finds
  verified evidence (x); word 1: the wrong side's quote passes (pi_W); words 2, 3:
  the right and the wrong side concede to a bare assertion (ColMAD, delta each).

CopMAD and ColMAD read the same rounds (common random numbers).  The judge is not
drawn: its probability of endorsing the right side is weighted in afterwards
(CopMAD: the table over (omega, e_R, e_W) with rhetoric integrated out; ColMAD: the
no-rhetoric tie value).

A response's whole contribution to every metric is fixed by its *class*: (omega,
c_1, c_2) when the detectors agree; with a disagreement also whether each side ever
showed verified evidence (e_R, e_W, CopMAD's judge) and how ColMAD ended (the right
side won, the wrong side won, or the judge decided the tie), and ColMAD's rounds
used, on which the calls depend linearly.  The kernel therefore counts the
classes and adds, per class, the rounds used and their squares (integers), and the
per-response vector (tp, fp, fn, calls, wrong on a disagreement per protocol; ...)
and its outer product are weighted in afterwards (the model's ``class_moments``):
the same sufficient-statistic design as the baseline's transcript classes.  Every
sum is an integer, so any split into threads or blocks gives the same counts.

Every uniform test ``(w + 0.5) 2**-32 < q`` of the word w is the integer test
``w < T`` with ``T = ceil(q 2**32 - 1/2)`` (:func:`threshold`), so the classes are the
ones the float tests give, bit for bit.

One kernel, two targets: the per-response steps (:func:`head_class`,
:func:`round_code`, :func:`round_step`, :func:`final_class`) are plain scalar
functions that numba can compile both here and as CUDA device functions; the CPU
launcher :func:`colmad_counts` batches the words (block 0 of a batch of responses,
then block r of the batch's disagreements only) so that the generator vectorises,
and replaces the round logic by a lookup in the transition table.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .interrupt import stopped
from .rng import HI_SHIFT as _HI, LO_WORD as _LO
from .rng import philox4x32_10, word_below

STREAM = 9
#: Responses per vectorised batch (any value gives the same counts).
BATCH = 256

#: Class layout.  Agreement: ``4 omega + 2 c_1 + c_2`` (0..7; c_1 = c_2).
#: Disagreement: ``N_HEAD + 16 (2 omega + c_1) + state``, the final round state
#: ``e_R + 2 e_W + 4 outcome`` with outcome :data:`RIGHT`, :data:`WRONG` or
#: :data:`TIE` (the judge decided: both showed verified evidence in the deciding round,
#: or no one conceded in R rounds).
N_HEAD = 8
N_CLASSES = N_HEAD + 4 * 16
OPEN, RIGHT, WRONG, TIE = 0, 1, 2, 3


def threshold(q: float) -> int:
    """The integer T with ``w < T`` exactly when ``(w + 0.5) 2**-32 < q`` for every 32-bit
    word w (:func:`kernels.rng.word_below`, the test every kernel shares)."""
    return int(word_below(float(q), 0.5))


@nb.njit(inline="always", cache=True)
def head_class(w0, w1, t_err, t11_0, t10_0, t01_0, t11_1, t10_1, t01_1):
    """Block 0's words -> ``4 omega + 2 c_1 + c_2``: omega from word 0; the
    correctness pair from word 1 against omega's cumulative joint table (the
    thresholds of Pr(1, 1), + Pr(1, 0), + Pr(0, 1))."""
    om = np.uint64(w0) < t_err
    u = np.uint64(w1)
    a = t11_1 if om else t11_0
    b = t10_1 if om else t10_0
    c = t01_1 if om else t01_0
    k = np.int64(u >= a) + np.int64(u >= b) + np.int64(u >= c)
    return 4 * np.int64(om) + 3 - np.int64(k)


@nb.njit(inline="always", cache=True)
def round_code(v0, v1, v2, v3, t_x, t_pw, t_d):
    """A round's four words -> ``f_R + 2 f_W + 4 c_R + 8 c_W`` (the right side finds
    verified evidence, the wrong side's quote passes, the right / the wrong side
    concedes to a bare assertion)."""
    return ((np.int64(np.uint64(v0) < t_x)) | (np.int64(np.uint64(v1) < t_pw) << 1)
            | (np.int64(np.uint64(v2) < t_d) << 2) | (np.int64(np.uint64(v3) < t_d) << 3))


@nb.njit(inline="always", cache=True)
def round_step(state, code):
    """The state ``e_R + 2 e_W + 4 outcome`` after one more round with ``code``.

    CopMAD: e_R, e_W (verified evidence ever shown).  ColMAD, while open: a side
    alone with verified evidence wins; both: the judge decides (TIE); neither: a side
    that concedes to the other's bare assertion (and the other not) loses."""
    fr = code & 1
    fw = (code >> 1) & 1
    cr = (code >> 2) & 1
    cw = (code >> 3) & 1
    out = state >> 2
    if out == OPEN:
        if fr == 1 and fw == 0:
            out = RIGHT
        elif fw == 1 and fr == 0:
            out = WRONG
        elif fr == 1 and fw == 1:
            out = TIE
        elif cw == 1 and cr == 0:
            out = RIGHT
        elif cr == 1 and cw == 0:
            out = WRONG
    return ((state & 1) | fr) | (((state >> 1) & 1) | fw) << 1 | out << 2


@nb.njit(inline="always", cache=True)
def final_class(head, state):
    """The class of a response: its head class, or for a disagreement (c_1 != c_2) the
    head with the last round's state (still open after R rounds: the judge decides)."""
    c1 = (head >> 1) & 1
    if c1 == (head & 1):
        return head
    if (state >> 2) == OPEN:
        state = state | (TIE << 2)
    return N_HEAD + 16 * (2 * (head >> 2) + c1) + state


@nb.njit(inline="always", cache=True)
def one_response(i, k0, k1, stream, t_err, pt, t_x, t_pw, t_d, R):
    """A response's class and ColMAD's rounds used, one response at a time (the steps
    above in order; the launchers batch them)."""
    ii = np.uint64(i)
    w0, w1, _, _ = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)
    head = head_class(w0, w1, t_err, pt[0, 0], pt[0, 1], pt[0, 2], pt[1, 0], pt[1, 1],
                      pt[1, 2])
    state, used = 0, 0
    if ((head >> 1) & 1) != (head & 1):
        for r in range(1, R + 1):
            v0, v1, v2, v3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(r), stream, k0, k1)
            used += (state >> 2) == OPEN
            state = round_step(state, round_code(v0, v1, v2, v3, t_x, t_pw, t_d))
    return final_class(head, state), used


@nb.njit(cache=True)
def transition_table():
    """:func:`round_step` of every (state, code): uint8[16, 16]."""
    out = np.empty((16, 16), np.uint8)
    for s in range(16):
        for c in range(16):
            out[s, c] = round_step(s, c)
    return out


@nb.njit(parallel=True, cache=True)
def colmad_counts(n, k0, k1, t_err, pt, t_x, t_pw, t_d, R, n_chunks):
    """Per class: the number of responses, and the sums of ColMAD's rounds used and of
    their squares, over responses 0 .. n - 1: int64[3, N_CLASSES].

    ``pt``: uint64[2, 3], per omega the thresholds of the cumulative correctness-pair
    table; ``t_*``: uint64 thresholds (:func:`threshold`).  ``n_chunks`` splits the work
    and does not change the result."""
    stream = np.uint64(STREAM)
    trans = transition_table()
    out = np.zeros((n_chunks, 3, N_CLASSES), np.int64)
    size = (n + n_chunks - 1) // n_chunks
    t11_0, t10_0, t01_0 = pt[0, 0], pt[0, 1], pt[0, 2]
    t11_1, t10_1, t01_1 = pt[1, 0], pt[1, 1], pt[1, 2]
    for b in nb.prange(n_chunks):
        lo = b * size
        hi = min(n, lo + size)
        head = np.empty(BATCH, np.int64)
        pos = np.empty(BATCH, np.int64)
        state = np.empty(BATCH, np.int64)
        used = np.empty(BATCH, np.int64)
        code = np.empty(BATCH, np.int64)
        cnt = np.zeros((3, N_CLASSES), np.int64)
        hist = np.zeros((4, N_HEAD), np.int64)
        for i0 in range(lo, hi, BATCH):
            if stopped():  # Ctrl-C: the caller raises KeyboardInterrupt
                break
            m = min(BATCH, hi - i0)
            for j in range(m):
                ii = np.uint64(i0 + j)
                w0, w1, _, _ = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)
                head[j] = head_class(w0, w1, t_err, t11_0, t10_0, t01_0, t11_1, t10_1, t01_1)
            # Agreements are counted by their head class (four interleaved histograms
            # break the store-to-load chain on one bin); disagreements listed, branch-free.
            nd = 0
            for j in range(m):
                h = head[j]
                hist[j & 3, h] += 1
                pos[nd] = j
                nd += ((h >> 1) ^ h) & 1
            for k in range(nd):
                state[k] = 0
                used[k] = 0
            for r in range(1, R + 1):
                for k in range(nd):
                    ii = np.uint64(i0 + pos[k])
                    v0, v1, v2, v3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(r), stream,
                                                   k0, k1)
                    code[k] = round_code(v0, v1, v2, v3, t_x, t_pw, t_d)
                for k in range(nd):
                    s = state[k]
                    used[k] += (s >> 2) == OPEN
                    state[k] = trans[s, code[k]]
            for k in range(nd):
                c = final_class(head[pos[k]], state[k])
                u = used[k]
                cnt[0, c] += 1
                cnt[1, c] += u
                cnt[2, c] += u * u
        for h in range(N_HEAD):
            if ((h >> 1) & 1) == (h & 1):  # disagreements are in their final classes
                for r in range(4):
                    cnt[0, h] += hist[r, h]
        out[b] = cnt
    return out.sum(axis=0)
