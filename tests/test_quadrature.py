"""antiamp.quadrature: the Gauss-Kronrod pair's constants and the adaptive rule against
closed forms, its error estimate against the errors it makes."""

import math

import numpy as np
import pytest
from scipy import special

from antiamp.quadrature import NODES, W_GAUSS, W_KRONROD, integrate


def test_rules_integrate_polynomials_exactly():
    """K15 is exact to degree 22, G7 to degree 13 (and not 14): the constants are right."""
    for d in range(23):
        want = (1 - (-1) ** (d + 1)) / (d + 1)
        assert (W_KRONROD * NODES ** d).sum() == pytest.approx(want, abs=1e-14)
        if d <= 13:
            assert (W_GAUSS * NODES ** d).sum() == pytest.approx(want, abs=1e-14)
    assert abs((W_GAUSS * NODES ** 14).sum() - 2 / 15) > 1e-6


@pytest.mark.parametrize("c, w", [(0.3, 1e-3), (-2.0, 1e-4), (0.0, 0.5), (5.0, 1e-2)])
def test_narrow_step_against_its_closed_form(c, w):
    """E[Phi((Z - c) / w)] = Phi(-c / sqrt(1 + w^2)): a step of width w, split there."""
    def f(x):
        return special.ndtr((x - c) / w) * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)

    val, err = integrate(f, -12.0, 12.0, points=(c,))
    want = special.ndtr(-c / math.hypot(1.0, w))
    assert isinstance(val, float)
    assert abs(val - want) <= max(err, 1e-15) + 1e-15
    assert err < 1e-10


def test_components_and_an_unsplit_step():
    """Several components at once; without the step's position given, bisection still
    finds it (error estimate honest)."""
    def f(x):
        g = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
        return np.vstack([g, x * x * g, special.ndtr((x - 0.7) / 1e-3) * g])

    val, err = integrate(f, -12.0, 12.0)
    want = np.array([1.0, 1.0, special.ndtr(-0.7 / math.hypot(1.0, 1e-3))])
    assert val.shape == (3,)
    assert np.max(np.abs(val - want)) <= err + 1e-15
    assert err < 1e-9
