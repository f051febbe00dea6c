"""Exact outcomes at the equilibria of a grid, fused: class probabilities and the
four outcome metrics of both protocols in one compiled pass per (cell, equilibrium).

The same arithmetic, operation for operation and in the same order, as
``sim.metrics.class_probabilities`` followed by ``sim.metrics.evaluate(...,
se=False)`` for amp, acc, fwc and welfare (each mean summed over the 32 classes
in class order, as ``kernels.means.masked_mean`` does), so the values have the
same bits; written again here because the NumPy path builds a dozen arrays of
[cells, equilibria, 32] for what is 32 products per row (``tests/test_equilibrium``
checks the two agree exactly).  A row whose class weights come out negative
(rounding) or whose values are not finite is flagged, and its block is left to
the NumPy path, which handles those cases.

Class k = 16 omega + 8 correct + 4 e_P(consult) + 2 e_P(debate) + e_A.
Metrics (index): 0 amp = E[J | wrong], 1 acc = E[accurate], 2 fwc = E[J | right],
3 welfare = E[-alpha (1 - accurate) - beta (1 - correct) J - cost].
"""

from __future__ import annotations

import numba as nb
import numpy as np

METRICS = ("amp", "acc", "fwc", "welfare")
N_METRICS = len(METRICS)


@nb.njit(parallel=True, cache=True)
def equilibrium_outcomes(pi, p_correct, rho, fixed, a_fixed, x_pc, x_pd, x_a, J_c, J_d, alpha,
                         beta, delta_c, rows=None):
    """Values [4, C, E, 2 protocols] and a flag [C, E] for rows to recompute.

    ``rows`` [C, E] (optional): the rows wanted (an equilibrium in either protocol);
    the others are NaN, unflagged.  Each class's endorsement, accuracy and welfare
    depend on the cell only, so they are computed once per cell (the same
    operations) and each equilibrium of the cell only weighs them; the sums run over
    the classes in class order as before, the two protocols' side by side.
    """
    C, E = x_pc.shape
    out = np.empty((N_METRICS, C, E, 2))
    bad = np.zeros((C, E), np.bool_)
    # Cells in chunks, the scratch arrays allocated once a chunk (not once a cell).
    n_chunks = min(C, 256)
    for ch in nb.prange(n_chunks):
        w = np.empty(32)
        p_oc = np.empty((2, 2))
        p_ep = np.empty((2, 4))
        p_ea = np.empty((2, 2))
        joint = np.empty(4)
        tJ = np.empty(12)
        tacc = np.empty(12)
        twel = np.empty(12)
        for c in range(ch * C // n_chunks, (ch + 1) * C // n_chunks):
            _cell(c, pi, p_correct, rho, fixed, a_fixed, x_pc, x_pd, x_a, J_c, J_d, alpha,
                  beta, delta_c, rows, out, bad, w, p_oc, p_ep, p_ea, joint, tJ, tacc, twel)
    return out, bad


@nb.njit(cache=True, inline="always")
def _cell(c, pi, p_correct, rho, fixed, a_fixed, x_pc, x_pd, x_a, J_c, J_d, alpha, beta, delta_c,
          rows, out, bad, w, p_oc, p_ep, p_ea, joint, tJ, tacc, twel):
    """Cell ``c``'s rows of :func:`equilibrium_outcomes` (scratch arrays passed in)."""
    E = x_pc.shape[1]
    r = rho[c]
    for om in range(2):
        p_om = pi[c] if om == 1 else 1 - pi[c]
        for corr in range(2):
            if fixed[c]:
                pcor = 1.0 if (corr == 1) == (om == a_fixed[c]) else 0.0
            else:
                pcor = p_correct[c] if corr == 1 else 1 - p_correct[c]
            p_oc[om, corr] = p_om * pcor
    # A class's endorsement J, accuracy and welfare take one value per (protocol,
    # correct, the evidence the judge sees): 4 for consultancy, 8 for debate,
    # computed once each with the same operations, and looked up by class.
    cell_flag = False
    for prot in range(2):
        cost = 0.0 if prot == 0 else delta_c[c]
        n_seen = 2 if prot == 0 else 4
        for corr in range(2):
            fc = float(corr)
            for s in range(n_seen):
                J = J_c[c, s] if prot == 0 else J_d[c, s >> 1, s & 1]
                accurate = fc * J + (1 - fc) * (1 - J)
                wel = -alpha[c] * (1 - accurate) - beta[c] * (1 - fc) * J - cost
                if not np.isfinite(wel) or not np.isfinite(accurate):
                    cell_flag = True
                i = corr * 2 + s if prot == 0 else 4 + corr * 4 + s
                tJ[i] = J
                tacc[i] = accurate
                twel[i] = wel
    for e in range(E):
        if rows is not None and not rows[c, e]:
            for m in range(N_METRICS):
                out[m, c, e, 0] = out[m, c, e, 1] = np.nan
            continue
        xc, xd, xa = x_pc[c, e], x_pd[c, e], x_a[c, e]
        both = min(xc, xd)
        joint[0] = 1 - xc - xd + both
        joint[1] = xd - both
        joint[2] = xc - both
        joint[3] = both
        for j in range(4):
            p_ep[0, j] = r * joint[j] + (1 - r) * (1.0 if j == 0 else 0.0)
            p_ep[1, j] = joint[j]
        p_ea[0, 0] = 1 - xa
        p_ea[0, 1] = xa
        p_ea[1, 0] = r * (1 - xa) + (1 - r) * 1.0
        p_ea[1, 1] = r * xa + (1 - r) * 0.0
        flag = cell_flag
        for k in range(32):
            om, corr, j, ea = (k >> 4) & 1, (k >> 3) & 1, (k >> 1) & 3, k & 1
            w[k] = p_oc[om, corr] * (p_ep[corr, j] * p_ea[corr, ea])
            if not w[k] >= 0:
                flag = True
        # Both protocols' sums side by side (independent chains; each in class order).
        a0 = ta0 = c0 = t0 = f0 = tf0 = w0 = 0.0
        a1 = ta1 = c1 = t1 = f1 = tf1 = w1 = 0.0
        for k in range(32):
            wk = w[k]
            corr = (k >> 3) & 1
            i0 = corr * 2 + ((k >> 2) & 1)  # consultancy: (correct, e_P)
            i1 = 4 + corr * 4 + (k & 3)  # debate: (correct, e_P, e_A)
            if corr == 0:
                a0 += wk * tJ[i0]
                ta0 += wk
                a1 += wk * tJ[i1]
                ta1 += wk
            else:
                f0 += wk * tJ[i0]
                tf0 += wk
                f1 += wk * tJ[i1]
                tf1 += wk
            c0 += wk * tacc[i0]
            c1 += wk * tacc[i1]
            w0 += wk * twel[i0]
            w1 += wk * twel[i1]
            t0 += wk
            t1 += wk
        nan = np.nan
        out[0, c, e, 0] = a0 / ta0 if ta0 > 0 else nan
        out[1, c, e, 0] = c0 / t0 if t0 > 0 else nan
        out[2, c, e, 0] = f0 / tf0 if tf0 > 0 else nan
        out[3, c, e, 0] = w0 / t0 if t0 > 0 else nan
        out[0, c, e, 1] = a1 / ta1 if ta1 > 0 else nan
        out[1, c, e, 1] = c1 / t1 if t1 > 0 else nan
        out[2, c, e, 1] = f1 / tf1 if tf1 > 0 else nan
        out[3, c, e, 1] = w1 / t1 if t1 > 0 else nan
        bad[c, e] = flag
