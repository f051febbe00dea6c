"""No simulated share or conditional metric reports a standard error of 0 merely
because its events did not happen in the run: with no event (or no non-event) the
count-based floor of :mod:`antiamp.rare` applies (the store says so in ``se_floor``).
A metric may have SE 0 only where its exact value is 0 or 1."""

import numpy as np
import pytest

import antiamp
from antiamp.rare import rare_floor, rare_share_floor


def test_the_floor_covers_zero_events_in_many_instances():
    # 5,000 conditioning instances, none endorsed: the sample SE is 0, the floor is not
    assert rare_floor(0.0, 0.0, 5000.0) > 0
    assert rare_share_floor(0.0, 0.0, 5000.0) > 0
    # plenty of events and non-events: the sample SE stands
    assert rare_floor(0.4, 0.01, 5000.0) == 0.01


#: Means of counts, not shares (calls and rounds per claim, the spread in points).
COUNTS = ("calls_se", "rounds_se", "spread_mean_se")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_redeliberation_has_no_zero_se_off_0_and_1(seed):
    # clear claims' first passes almost never wrong: a few wrong ones, mostly unendorsed
    ds = antiamp.simulate({"model": {"name": "redeliberation"},
                           "judge": {"kind": "logit", "lam": 1.5, "mu": 1.5},
                           "redeliberation": {"margin_clear": 40.0, "bias_sd": 12.0},
                           "run": {"n_instances": 3000, "seed": seed}})
    bad = []
    for v in ds.data_vars:
        if not (v.endswith("_se") and v[:-3] + "_exact" in ds) or v in COUNTS:
            continue
        se, ex = np.asarray(ds[v], float), np.asarray(ds[v[:-3] + "_exact"], float)
        zero = (se == 0) & np.isfinite(ex) & (ex > 1e-12) & (ex < 1 - 1e-12)
        if zero.any():
            bad.append((v, ex[zero]))
    assert not bad, bad
    assert "se_floor" in ds["amp_se"].attrs
