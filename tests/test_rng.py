"""Philox4x32-10 against Random123's published known-answer vectors (tests/kat_vectors)."""

import numpy as np
import pytest

from antiamp.kernels.rng import TWO32, bernoulli_threshold, philox_block, split_seed

KAT = [  # counter (4 words), key (2 words), expected (4 words)
    ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    (
        [0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344],
        [0xA4093822, 0x299F31D0],
        [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1],
    ),
]


@pytest.mark.parametrize("ctr,key,expected", KAT)
def test_known_answer_vectors(ctr, key, expected):
    out = philox_block(np.array(ctr, np.uint32), np.array(key, np.uint32))
    assert [int(x) for x in out] == expected


def test_uniformity_of_words():
    # 4 * 20000 words: each of 16 bins of the top 4 bits should hold ~5000 (chi-square, 15 dof).
    words = np.concatenate([
        philox_block(np.array([i, 0, 0, 0], np.uint32), np.array([7, 0], np.uint32))
        for i in range(20000)
    ])
    counts = np.bincount(words >> 28, minlength=16)
    chi2 = ((counts - counts.mean()) ** 2 / counts.mean()).sum()
    assert chi2 < 40  # p ~ 5e-4 under uniformity


def test_thresholds_are_exact_at_the_ends():
    assert bernoulli_threshold(0.0) == 0
    assert bernoulli_threshold(1.0) == TWO32
    assert bernoulli_threshold(0.5) == TWO32 // 2
    assert abs(int(bernoulli_threshold(0.3)) / TWO32 - 0.3) <= 2**-33


def test_seed_split():
    assert split_seed(0) == (0, 0)
    assert split_seed((5 << 32) | 9) == (9, 5)


@pytest.mark.parametrize("half", [0.0, 0.5])
def test_word_thresholds_are_the_float_tests(half):
    """word_below / word_above against exact rational arithmetic (the smallest word
    whose uniform reaches q; the smallest whose uniform exceeds c), and the float tests
    at the words either side."""
    import math
    from fractions import Fraction

    from antiamp.kernels.rng import word_above, word_below

    rng = np.random.default_rng(1)
    qs = list(rng.random(1000)) + [0.0, 1.0, 0.5, 2.0 ** -33, 2.0 ** -32, 3 * 2.0 ** -33,
                                   1 - 2.0 ** -33, np.nextafter(1.0, 0.0), 1e-300, -0.25,
                                   1.5, 0.1, 0.3, 0.7]
    for q in qs:
        exact = min(2 ** 32, max(0, math.ceil(Fraction(q) * 2 ** 32 - Fraction(half))))
        t = int(word_below(q, half))
        assert t == exact, (q, half)
        g = int(word_above(q, half))
        assert g == min(2 ** 32, max(0, math.floor(Fraction(q) * 2 ** 32 - Fraction(half)) + 1))
        for w in (t - 2, t - 1, t, t + 1, g - 1, g):
            if 0 <= w < 2 ** 32:
                u = (np.float64(w) + half) * (1.0 / 4294967296.0)
                assert (w < t) == (u < q), (q, w)
                assert (w >= g) == (u > q), (q, w)


def test_bernoulli_thresholds_are_the_scalar_thresholds():
    """The columnwise thresholds, element for element the scalar's (half to even at
    exact halves, clipped outside [0, 1]), in the input's shape."""
    from antiamp.kernels.rng import TWO32, bernoulli_threshold, bernoulli_thresholds

    rng = np.random.default_rng(5)
    halves = (np.arange(6) * 7 + 0.5) / TWO32  # exact halves of a unit: ties
    q = np.concatenate([rng.random(199), halves, [0.0, 1.0, -0.2, 1.3, 1 - 0.5 / TWO32]])
    q = q.reshape(35, 6)
    got = bernoulli_thresholds(q)
    assert got.dtype == np.uint64 and got.shape == q.shape
    assert [int(t) for t in got.ravel()] == [int(bernoulli_threshold(x)) for x in q.ravel()]
