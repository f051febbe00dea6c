"""``metrics.weighted`` and ``metrics.masked_weights`` against the formula written out."""

import numpy as np
import pytest

from antiamp.metrics import masked_weights, weighted


def _reference(weights, g, mask, n, se):
    """E_w[g | mask] and its standard error as ``weighted`` documents them, each step a
    plain NumPy expression (products kept by ``np.where``)."""
    g = np.asarray(g, float)
    w = np.where(mask, weights, 0).astype(float)
    tot = w.sum(axis=-1)
    pos = w > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(pos, w * g, 0.0).sum(axis=-1) / tot
        if not se:
            return np.where(tot > 0, mean, np.nan), None
        dev = np.where(pos, g - mean[..., None], 0.0)
        ss = (w * dev * dev).sum(axis=-1)
        gmax = np.where(pos, g, -np.inf).max(axis=-1, initial=-np.inf)
        gmin = np.where(pos, g, np.inf).min(axis=-1, initial=np.inf)
        ss = np.where(gmax == gmin, 0.0, ss)
        s = (np.where(tot >= 2, np.sqrt(ss / (tot - 1) / tot), np.nan) if n is None
             else np.sqrt(ss / tot / (float(n) * tot)))
    return np.where(tot > 0, mean, np.nan), np.where(tot > 0, s, np.nan)


@pytest.mark.parametrize("n, se", [(None, True), (1000, True), (1, False)])
def test_weighted_is_the_formula_bit_for_bit(n, se):
    """Counts with empty classes, values with NaN, infinities and negative zeros where
    a class carries no weight (which must not leak into the mean: +0.0 there), rows
    whose mask keeps no weight; with and without the mask's weights computed once."""
    rng = np.random.default_rng(3)
    R = 400
    W = rng.integers(0, 9, (R, 32)).astype(float)
    W[rng.random((R, 32)) < 0.4] = 0
    W[:5] = 0
    g = rng.normal(size=(R, 32))
    off = W == 0
    g[off & (rng.random((R, 32)) < 0.3)] = np.nan
    g[off & (rng.random((R, 32)) < 0.2)] = np.inf
    g[off & (rng.random((R, 32)) < 0.2)] = -0.0
    g[5:9] = -0.0  # every product a negative zero: the mean +0.0 as np.where gives
    mask = rng.random(32) < 0.6
    ref = _reference(W, g, mask, n, se)
    for masked in (None, masked_weights(W, mask)):
        got = weighted(W, g, mask, n, se=se, masked=masked)
        for a, b in zip(got, ref):
            if b is None:
                assert a is None
                continue
            assert np.array_equal(a, b, equal_nan=True)
            assert np.array_equal(np.signbit(a), np.signbit(b))
    assert np.isnan(ref[0][:5]).all() and not np.isnan(ref[0][5:]).all()
