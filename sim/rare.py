"""Standard errors of conditional metrics whose conditioning event is rare.

A metric conditioned on an event (Amp on the wrong first passes, fwc on the right
ones) is a mean over the instances in the event.  When only a handful fall in it, the
sample variance of their (Rao-Blackwellised) values can be near 0 while the estimate
is far from its expectation.  Below :data:`RARE_COUNT` conditioning instances the
reported standard error of a metric with values in [0, 1] is therefore at least the
Agresti-Coull (Wilson-type) binomial one, sqrt(p~ (1 - p~) / (n + 4)) with
p~ = (n m + 2) / (n + 4): a variable in [0, 1] with mean m has variance at most
m (1 - m), and the added pseudo-counts keep the bound away from 0 at m = 0 or 1.
From RARE_COUNT instances on, the standard error is the sample one, unchanged.
"""

from __future__ import annotations

import numpy as np

#: Conditioning instances below which a conditional metric's standard error is floored.
RARE_COUNT = 100


def rare_floor(mean, se, count):
    """``se``, floored where ``count`` < :data:`RARE_COUNT` at the Agresti-Coull binomial
    standard error of ``mean`` (a metric with values in [0, 1]); NaN stays NaN."""
    mean, se, count = np.broadcast_arrays(np.asarray(mean, float), np.asarray(se, float),
                                          np.asarray(count, float))
    with np.errstate(invalid="ignore"):
        pt = (np.clip(mean, 0.0, 1.0) * count + 2.0) / (count + 4.0)
        bound = np.sqrt(pt * (1.0 - pt) / (count + 4.0))
        out = np.where(count < RARE_COUNT, np.maximum(se, bound), se)
    return np.where(np.isnan(se), np.nan, out)
