"""The GPU's Philox (kernels.rng.philox4x32_10_w32: 32-bit words, 32x32->64 multiplies)
against the CPU's (kernels.rng.philox4x32_10), Random123's known answers and a plain
integer Philox, on the CPU: compiled by numba, and as plain Python (what numba's CUDA
simulator runs).  On the GPU its multiply is PTX's mul.wide.u32
(tests/test_gpu_ptx.py checks the PTX; tests/test_gpu_sim.py and tests/test_gpu.py the
kernels' counts)."""

import numba as nb
import numpy as np
import pytest

from antiamp.kernels.rng import mul_wide32, philox4x32_10, philox4x32_10_w32

from test_rng import KAT

M = (0xD2511F53, 0xCD9E8D57)
W = (0x9E3779B9, 0xBB67AE85)


def philox_ints(ctr, key):
    """Philox4x32-10 in Python integers (Salmon et al. 2011), the oracle."""
    c, k = list(ctr), list(key)
    for r in range(10):
        if r:
            k = [(k[0] + W[0]) & 0xFFFFFFFF, (k[1] + W[1]) & 0xFFFFFFFF]
        p0, p1 = M[0] * c[0], M[1] * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & 0xFFFFFFFF, (p0 >> 32) ^ c[3] ^ k[1],
             p0 & 0xFFFFFFFF]
    return c


@nb.njit(cache=True)
def _both(x):
    """Each row's six inputs through both forms: (CPU's words, GPU form's words)."""
    n = x.shape[0]
    a = np.empty((n, 4), np.uint64)
    b = np.empty((n, 4), np.uint64)
    for i in range(n):
        r = philox4x32_10(x[i, 0], x[i, 1], x[i, 2], x[i, 3], x[i, 4], x[i, 5])
        s = philox4x32_10_w32(x[i, 0], x[i, 1], x[i, 2], x[i, 3], x[i, 4], x[i, 5])
        for j in range(4):
            a[i, j] = r[j]
            b[i, j] = s[j]
    return a, b


@pytest.mark.parametrize("ctr,key,expected", KAT)
def test_known_answers_compiled_and_as_python(ctr, key, expected):
    args = [np.uint64(v) for v in (*ctr, *key)]
    assert [int(w) for w in philox4x32_10_w32(*args)] == expected
    assert [int(w) for w in philox4x32_10_w32.py_func(*args)] == expected
    assert philox_ints(ctr, key) == expected


def test_the_same_words_as_the_cpu_for_32_bit_inputs():
    rng = np.random.default_rng(7)
    x = rng.integers(0, 1 << 32, (200_000, 6), dtype=np.uint64)
    x[:1000, :4] = 0  # the counters the kernels use: small instance, slot and stream words
    x[1000:2000] = 0xFFFFFFFF
    a, b = _both(x)
    assert np.array_equal(a, b)
    for i in range(0, 200_000, 20_000):  # the oracle on a sample
        assert [int(w) for w in b[i]] == philox_ints([int(v) for v in x[i, :4]],
                                                     [int(v) for v in x[i, 4:]])


def test_the_same_words_as_the_cpu_when_inputs_have_upper_halves():
    """Outside the 32-bit contract the CPU's 64-bit form still gives some words; the GPU's
    are the same (a counter passed unsplit, say)."""
    rng = np.random.default_rng(8)
    x = rng.integers(0, np.iinfo(np.uint64).max, (200_000, 6), dtype=np.uint64,
                     endpoint=True)
    for j in range(6):  # one word at a time with an upper half, the others 32-bit
        x[j * 10_000:(j + 1) * 10_000, [k for k in range(6) if k != j]] &= 0xFFFFFFFF
    a, b = _both(x)
    assert np.array_equal(a, b)
    for i in (0, 10_000, 30_000, 50_000, 150_000):  # plain Python (the simulator's code)
        args = [np.uint64(v) for v in x[i]]
        assert [int(w) for w in philox4x32_10_w32.py_func(*args)] == [int(w) for w in a[i]]


def test_the_wide_multiply():
    for a, m in [(0, 0), (1, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0xD2511F53, 0x12345678)]:
        assert int(mul_wide32(np.uint32(a), np.uint32(m))) == a * m
        assert int(mul_wide32.py_func(np.uint32(a), np.uint32(m))) == a * m
