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
                         beta, delta_c):
    """Values [4, C, E, 2 protocols] and a flag [C, E] for rows to recompute."""
    C, E = x_pc.shape
    out = np.empty((N_METRICS, C, E, 2))
    bad = np.zeros((C, E), np.bool_)
    for c in nb.prange(C):
        w = np.empty(32)
        p_oc = np.empty((2, 2))
        p_ep = np.empty((2, 4))
        p_ea = np.empty((2, 2))
        joint = np.empty(4)
        r = rho[c]
        for om in range(2):
            p_om = pi[c] if om == 1 else 1 - pi[c]
            for corr in range(2):
                if fixed[c]:
                    pcor = 1.0 if (corr == 1) == (om == a_fixed[c]) else 0.0
                else:
                    pcor = p_correct[c] if corr == 1 else 1 - p_correct[c]
                p_oc[om, corr] = p_om * pcor
        for e in range(E):
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
            flag = False
            for k in range(32):
                om, corr, j, ea = (k >> 4) & 1, (k >> 3) & 1, (k >> 1) & 3, k & 1
                w[k] = p_oc[om, corr] * (p_ep[corr, j] * p_ea[corr, ea])
                if not w[k] >= 0:
                    flag = True
            for prot in range(2):
                cost = 0.0 if prot == 0 else delta_c[c]
                n_amp = t_amp = n_acc = t_all = n_fwc = t_fwc = n_wel = 0.0
                for k in range(32):
                    corr = (k >> 3) & 1
                    if prot == 0:
                        J = J_c[c, (k >> 2) & 1]
                    else:
                        J = J_d[c, (k >> 1) & 1, k & 1]
                    fc = float(corr)
                    accurate = fc * J + (1 - fc) * (1 - J)
                    wel = -alpha[c] * (1 - accurate) - beta[c] * (1 - fc) * J - cost
                    wk = w[k]
                    if corr == 0:
                        n_amp += wk * J
                        t_amp += wk
                    else:
                        n_fwc += wk * J
                        t_fwc += wk
                    n_acc += wk * accurate
                    n_wel += wk * wel
                    t_all += wk
                    if not np.isfinite(wel) or not np.isfinite(accurate):
                        flag = True
                nan = np.nan
                out[0, c, e, prot] = n_amp / t_amp if t_amp > 0 else nan
                out[1, c, e, prot] = n_acc / t_all if t_all > 0 else nan
                out[2, c, e, prot] = n_fwc / t_fwc if t_fwc > 0 else nan
                out[3, c, e, prot] = n_wel / t_all if t_all > 0 else nan
            bad[c, e] = flag
    return out, bad
