"""Standard errors of conditional metrics whose conditioning event is rare.

A metric conditioned on an event (Amp on the wrong first passes, fwc on the right
ones) is a mean over the instances in the event.  When only a handful fall in it, the
sample variance of their (Rao-Blackwellised) values can be near 0 while the estimate
is far from its expectation.  Below :data:`RARE_COUNT` conditioning instances the
reported standard error of a metric with values in [0, 1] is therefore at least the
Agresti-Coull (Wilson-type) binomial one, sqrt(p~ (1 - p~) / (n + 4)) with
p~ = (n m + 2) / (n + 4): a variable in [0, 1] with mean m has variance at most
m (1 - m), and the added pseudo-counts keep the bound away from 0 at m = 0 or 1.
The same floor applies, whatever the conditioning count, where the sample standard
error is 0: a conditional metric none of whose thousands of instances happens to
endorse reports a sample SE of 0 while its expectation is not 0.  (Not wherever its
events are few: a Rao-Blackwellised metric averages probabilities, whose sample SE is
well below the binomial one and right; flooring it there doubled confidence's.)
Otherwise, from RARE_COUNT instances on, the standard error is the sample one, unchanged.

A share of indicators (the fraction of instances in which something happens) has the
same trouble when the events, or the non-events, are few: with none in a run the
binomial standard error is 0 whatever the share's expectation.  Where either count is
below :data:`RARE_COUNT`, :func:`rare_share_floor` floors it at the same Agresti-Coull
standard error, with the instances as the count.
"""

from __future__ import annotations

import numpy as np

#: Conditioning instances below which a conditional metric's standard error is floored
#: (and, whatever the count, a sample standard error of 0).
RARE_COUNT = 100
#: What a store says of the standard errors the floor applies to (``se_floor``).
SE_FLOOR = ("Agresti-Coull binomial standard error, sqrt(p (1 - p) / (n + 4)) with "
            "p = (n m + 2) / (n + 4), where fewer than 100 instances or a sample "
            "standard error of 0 (antiamp.rare)")


def _agresti_coull(mean, count):
    """The Agresti-Coull binomial standard error of a mean in [0, 1] over ``count``."""
    pt = (np.clip(mean, 0.0, 1.0) * count + 2.0) / (count + 4.0)
    return np.sqrt(pt * (1.0 - pt) / (count + 4.0))


def rare_floor(mean, se, count):
    """``se``, floored where ``count`` < :data:`RARE_COUNT`, or where ``se`` is 0 (no
    event, or no non-event, in the run), at the Agresti-Coull binomial standard error of
    ``mean`` (a metric with values in [0, 1]); NaN stays NaN."""
    mean, se, count = np.broadcast_arrays(np.asarray(mean, float), np.asarray(se, float),
                                          np.asarray(count, float))
    with np.errstate(invalid="ignore"):
        few = (count < RARE_COUNT) | ((se == 0) & (count > 0))
        out = np.where(few, np.maximum(se, _agresti_coull(mean, count)), se)
    return np.where(np.isnan(se), np.nan, out)


def rare_share_floor(share, se, n):
    """``se`` of a share of ``n`` indicators, floored where the events (``share * n``)
    or the non-events number fewer than :data:`RARE_COUNT` at the Agresti-Coull
    binomial standard error of the share; NaN stays NaN."""
    share, se, n = np.broadcast_arrays(np.asarray(share, float), np.asarray(se, float),
                                       np.asarray(n, float))
    with np.errstate(invalid="ignore"):
        events = np.clip(share, 0.0, 1.0) * n
        few = np.minimum(events, n - events) < RARE_COUNT
        out = np.where(few, np.maximum(se, _agresti_coull(share, n)), se)
    return np.where(np.isnan(se), np.nan, out)
