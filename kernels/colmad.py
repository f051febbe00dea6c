"""Error detection by debate (seed 001): the Monte Carlo kernel.

Draw slots of response i, Philox stream ``STREAM``, counter (i, c, 0, STREAM):

* c = 0: word 0: whether it has an error (w.p. p_error); word 1: the pair of
  detector correctness indicators (one uniform against the class's joint table);
* c = r (r = 1..R), round r of a disagreement: word 0: the right side finds
  verified evidence (x); word 1: the wrong side's quote passes (pi_W); words 2, 3:
  the right and the wrong side concede to a bare assertion (ColMAD, delta each).

CopMAD and ColMAD read the same rounds (common random numbers).  The judge is not
drawn: its probability of endorsing the right side is accumulated (CopMAD: the
table over (omega, e_R, e_W) with rhetoric integrated out; ColMAD: the no-rhetoric
tie value).  Per instance the kernel adds the vector (tp, fp, fn, calls, wrong on a
disagreement per protocol; disagreement; per protocol, detector 1 wrong and the final
verdict wrong; detector 1 wrong) and its outer product, per block of
``BLOCK`` responses, blocks added in order: no dependence on the thread count.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .rng import HI_SHIFT as _HI, INV32 as _INV32, LO_WORD as _LO
from .rng import philox4x32_10

STREAM = 9
BLOCK = 4096
PER = 5
N_PROT = 4  # single, copmad, colmad, oracle
DIS = PER * N_PROT  # the disagreement indicator
FIRST = DIS + 1  # per protocol: detector 1 wrong and the final verdict wrong; then detector 1 wrong
L = FIRST + N_PROT + 1


@nb.njit(cache=True)
def _u(w):
    return (np.float64(w) + 0.5) * _INV32


@nb.njit(parallel=True, cache=True)
def colmad_kernel(n, k0, k1, p_error, pair, T, tie, x, pw, R, delta):
    n_blocks = (n + BLOCK - 1) // BLOCK
    s1 = np.zeros((n_blocks, L))
    s2 = np.zeros((n_blocks, L, L))
    stream = np.uint64(STREAM)
    for b in nb.prange(n_blocks):
        y = np.zeros(L)
        right = np.zeros(N_PROT)
        calls = np.zeros(N_PROT)
        for i in range(b * BLOCK, min((b + 1) * BLOCK, n)):
            ii = np.uint64(i)
            w0, w1, _, _ = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)
            om = 1 if _u(w0) < p_error else 0
            u = _u(w1)
            t11 = pair[om, 1, 1]
            t10 = t11 + pair[om, 1, 0]
            t01 = t10 + pair[om, 0, 1]
            if u < t11:
                c1, c2 = 1, 1
            elif u < t10:
                c1, c2 = 1, 0
            elif u < t01:
                c1, c2 = 0, 1
            else:
                c1, c2 = 0, 0
            dis = c1 != c2
            right[0] = c1
            calls[0] = 1.0
            right[3] = 1.0 if (c1 == 1 or c2 == 1) else 0.0
            calls[3] = 2.0
            if not dis:
                right[1] = c1
                right[2] = c1
                calls[1] = 2.0
                calls[2] = 2.0
            else:
                eR, eW = 0, 0
                col, col_done = 0.0, False
                used, judged = 0, 0.0
                for r in range(1, R + 1):
                    v0, v1, v2, v3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(r), stream,
                                                   k0, k1)
                    fr = _u(v0) < x
                    fw = _u(v1) < pw
                    if fr:
                        eR = 1
                    if fw:
                        eW = 1
                    if not col_done:
                        used += 1
                        if fr and not fw:
                            col, col_done = 1.0, True
                        elif fw and not fr:
                            col, col_done = 0.0, True
                        elif fr and fw:
                            col, col_done, judged = tie[om], True, 1.0
                        else:
                            cr = _u(v2) < delta  # the right side concedes
                            cw = _u(v3) < delta
                            if cw and not cr:
                                col, col_done = 1.0, True
                            elif cr and not cw:
                                col, col_done = 0.0, True
                if not col_done:
                    col, judged = tie[om], 1.0
                right[1] = T[om, eR, eW]
                calls[1] = 2.0 + 2.0 * R + 1.0
                right[2] = col
                calls[2] = 2.0 + 2.0 * used + judged
            for p in range(N_PROT):
                rr = right[p]
                y[p * PER] = om * rr
                y[p * PER + 1] = (1 - om) * (1.0 - rr)
                y[p * PER + 2] = om * (1.0 - rr)
                y[p * PER + 3] = calls[p]
                y[p * PER + 4] = (1.0 - rr) if dis else 0.0
            y[DIS] = 1.0 if dis else 0.0
            for p in range(N_PROT):
                y[FIRST + p] = (1.0 - c1) * (1.0 - right[p])
            y[L - 1] = 1.0 - c1
            for a in range(L):
                s1[b, a] += y[a]
                for c in range(a, L):
                    s2[b, a, c] += y[a] * y[c]
        for a in range(L):
            for c in range(a):
                s2[b, a, c] = s2[b, c, a]
    return s1, s2
