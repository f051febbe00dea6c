"""Per-instance records of the baseline model (the transcript-export path).

The only per-instance path: it draws exactly the random numbers of
:func:`kernels.transcript_classes.class_counts_cells` for each instance (same key, stream,
counter and slots), so the records of instances [start, start + n) reproduce
the kernel's class counts for that range, plus each protocol's judge label from
a third counter block (slot 6: consultancy, slot 7: debate).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .transcript_classes import T_P, T_PI, T_RHO, T_XA, T_XPC, T_XPD
from .rng import HI_SHIFT as _HI, LO_WORD as _LO
from .rng import philox4x32_10



@nb.njit(cache=True)
def instance_records(thr, fixed, a_fixed, start, n, k0, k1, stream, J_c, J_d):
    """Columns (omega, correct, t_P, t_A, e_P consult, e_P debate, e_A, y consult, y debate),
    each uint8[n]; y = 1 when the judge endorses the protagonist."""
    out = np.zeros((9, n), np.uint8)
    inv = 1.0 / 4294967296.0
    for j in range(n):
        ii = np.uint64(start + j)
        w0, w1, w2, w3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)
        v0, v1, v2, v3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(1), stream, k0, k1)
        u0, u1, u2, u3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(2), stream, k0, k1)
        om = np.uint8(w0 < thr[T_PI])
        if fixed:
            corr = np.uint8(om == a_fixed)
        else:
            corr = np.uint8(w1 < thr[T_P])
        tp = corr | np.uint8(w2 < thr[T_RHO])
        ta = (np.uint8(1) - corr) | np.uint8(w3 < thr[T_RHO])
        # The kernel reads v0, v1 only when some x is strictly inside (0, 1); with x
        # in {0, 1} its comparison against 0 gives the same result as any draw.
        lim = np.uint64(1) << np.uint64(32)
        need_x = False
        for k in (T_XPC, T_XPD, T_XA):
            if thr[k] != 0 and thr[k] != lim:
                need_x = True
        if not need_x:
            v0 = np.uint64(0)
            v1 = np.uint64(0)
        epc = tp & np.uint8(v0 < thr[T_XPC])
        epd = tp & np.uint8(v0 < thr[T_XPD])
        ea = ta & np.uint8(v1 < thr[T_XA])
        out[0, j] = om
        out[1, j] = corr
        out[2, j] = tp
        out[3, j] = ta
        out[4, j] = epc
        out[5, j] = epd
        out[6, j] = ea
        out[7, j] = np.uint8(u0 * inv < J_c[epc])
        out[8, j] = np.uint8(u1 * inv < J_d[epd, ea])
    return out
