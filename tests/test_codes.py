"""Codes and combinations of sweep columns (``antiamp.layout.codes``/``combos``):
the hashed path of long columns against numpy's sorting, value for value."""

import numpy as np
import pytest

from antiamp import layout


def _reference(columns, n):
    """The sorting definition: np.unique of each column and of the combined keys."""
    key = np.zeros(n, np.int64)
    for col in columns:
        _, c = np.unique(np.asarray(col), return_inverse=True)
        key = np.unique(key * np.unique(np.asarray(col)).size + c.ravel(),
                        return_inverse=True)[1].ravel()
    _, first = np.unique(key, return_index=True)
    return key, first


def _column(kind, n, rng):
    if kind == "float":  # repeats, NaN, both zeros, infinities, negatives
        pool = np.array([0.0, -0.0, np.nan, 1.5, -2.0, np.inf, -np.inf, 1e-300, 0.1])
        return rng.choice(np.concatenate([pool, rng.normal(size=30)]), n)
    if kind == "float32":
        return rng.choice(np.array([0.25, -0.0, 0.0, np.nan, 3.0], np.float32), n)
    if kind == "int":
        return rng.integers(-5, 40, n)
    if kind == "uint":
        return rng.integers(0, 2**63, 7, dtype=np.uint64)[rng.integers(0, 7, n)]
    return rng.integers(0, 2, n).astype(bool)


@pytest.mark.parametrize("n", [1000, layout.HASHED + 17])
@pytest.mark.parametrize("kind", ["float", "float32", "int", "uint", "bool"])
def test_codes_are_numpys_sorted_codes(kind, n):
    col = _column(kind, n, np.random.default_rng(n))
    uniq, inverse = np.unique(col, return_inverse=True)
    got, count = layout.codes(col)
    assert count == len(uniq)
    assert got.dtype == np.int64 and np.array_equal(got, inverse.ravel())


@pytest.mark.parametrize("n", [0, 1, 999, layout.HASHED + 5])
def test_combos_are_numpys(n):
    rng = np.random.default_rng(3)
    cols = [_column("float", n, rng), _column("int", n, rng), _column("bool", n, rng)]
    for columns in (cols, cols[:1], []):
        key, first = layout.combos(columns, n)
        ref_key, ref_first = _reference(columns, n)
        assert np.array_equal(key, ref_key) and np.array_equal(first, ref_first)


def test_combos_first_is_the_first_cell():
    """A mutant taking any cell of a key (not the first) fails here."""
    col = np.tile(np.array([2.0, 1.0, 3.0]), layout.HASHED)
    key, first = layout.combos([col], col.size)
    assert np.array_equal(first, [1, 0, 2]) and np.array_equal(key[:3], [1, 0, 2])
