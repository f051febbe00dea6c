"""Weighted means over the class axis, one pass per row (exact outcomes of grids).

``masked_mean(w, g, mask)`` is E_w[g | mask] along the last axis, broadcasting
the leading axes as NumPy does: a grid's class weights ``[cells, equilibria, 32]``
against per-cell values ``[cells, 1, 32]`` and a class mask ``[32]``, without the
temporaries of ``np.where(mask, g, 0) * w`` (three passes over the grid per
metric).  Each row is summed in class order, so a cell's value has the same bits
alone and inside any grid.  NaN where the mask carries no weight.
"""

from __future__ import annotations

import numba as nb


@nb.guvectorize(["void(float64[:], float64[:], boolean[:], float64[:])"], "(n),(n),(n)->()",
                cache=True)
def masked_mean(w, g, mask, out):
    num = 0.0
    tot = 0.0
    for k in range(w.shape[0]):
        if mask[k]:
            num += w[k] * g[k]
            tot += w[k]
    out[0] = num / tot if tot > 0 else float("nan")
