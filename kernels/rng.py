"""Counter-based random numbers: Philox4x32-10 (Salmon et al., SC'11, Random123).

Every random quantity in a model is a pure function of (seed, stream, instance,
draw slot): the key is the 64-bit seed, the counter is (instance low word,
instance high word, slot block, stream).  Results therefore do not depend on
chunk size, thread count, worker count or the order in which blocks run.

Written here rather than taken from a library because the generator has to be
called *inside* numba-compiled loops, one counter per instance; NumPy's
``Philox`` bit generator is Philox4x64 and streams sequentially, so it cannot
serve keyed per-instance draws from jitted code.  Correctness is pinned by the
published Random123 known-answer vectors (``tests/test_rng.py``).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint64(0x9E3779B9)
_W1 = np.uint64(0xBB67AE85)
_MASK = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)

#: 2**32 as the integer scale of Bernoulli thresholds.
TWO32 = 1 << 32

#: A 64-bit word's low 32 bits, the shift to its high 32 bits, and 2**-32 (a 32-bit
#: word as a uniform in [0, 1)): how the kernels split one Philox output into two
#: draws.
LO_WORD = np.uint64(0xFFFFFFFF)
HI_SHIFT = np.uint64(32)
INV32 = 1.0 / 4294967296.0


@nb.njit(inline="always", cache=True)
def _round(c0, c1, c2, c3, k0, k1):
    p0 = _M0 * c0
    p1 = _M1 * c2
    return (
        (p1 >> _S32) ^ c1 ^ k0,
        p1 & _MASK,
        (p0 >> _S32) ^ c3 ^ k1,
        p0 & _MASK,
    )


@nb.njit(inline="always", cache=True)
def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Philox4x32 with 10 rounds.

    All arguments and results are ``uint64`` holding 32-bit words (the upper
    half is zero), so that the 32x32->64 products are native multiplies.
    """
    c0, c1, c2, c3 = _round(c0, c1, c2, c3, k0, k1)
    for _ in range(9):
        k0 = (k0 + _W0) & _MASK
        k1 = (k1 + _W1) & _MASK
        c0, c1, c2, c3 = _round(c0, c1, c2, c3, k0, k1)
    return c0, c1, c2, c3


@nb.njit(inline="always", cache=True)
def philox_words(w0, w1, w2, w3, i0, m, block, stream, k0, k1):
    """The four Philox words of instances ``i0 .. i0 + m - 1`` at slot block ``block``,
    into the uint32 buffers ``w0 .. w3`` (a batch drawn before it is classified, so
    that the classification loop vectorises): instance i's counter is
    (i low word, i high word, block, stream).  :func:`fill_batch` is the same for
    several blocks into the rows of one array."""
    for j in range(m):
        ii = np.uint64(i0 + j)
        a0, a1, a2, a3 = philox4x32_10(ii & LO_WORD, ii >> HI_SHIFT, np.uint64(block),
                                       stream, k0, k1)
        w0[j] = np.uint32(a0)
        w1[j] = np.uint32(a1)
        w2[j] = np.uint32(a2)
        w3[j] = np.uint32(a3)


#: The multipliers as 32-bit words (the operands of :func:`mul_wide32`).
_M0_32 = np.uint32(0xD2511F53)
_M1_32 = np.uint32(0xCD9E8D57)
_Z32 = np.uint32(0)


@nb.njit(inline="always", cache=True)
def mul_wide32(a, m):
    """The 64-bit product of two 32-bit words (``uint32``), as a ``uint64``.

    On the GPU :func:`kernels.gpu.device` replaces it with PTX's ``mul.wide.u32``: the
    CUDA compiler (NVVM) widens this zero-extended product to a 64-bit multiply of a
    masked operand (LLVM folds the zero extension of a truncation into an ``and``),
    which the assembler turns into a 32-bit wide multiply plus a 64-bit add of a zero
    high product, an add a multiply and more registers."""
    return np.uint64(a) * np.uint64(m)


@nb.njit(inline="always", cache=True)
def _round32(c0, c1, c2, c3, k0, k1, e0, e2):
    # 32-bit words in and out; e0 and e2 are added to the high words of the products
    # (what upper halves of the 64-bit form's inputs contribute; zero past round 2).
    p0 = mul_wide32(c0, _M0_32)
    p1 = mul_wide32(c2, _M1_32)
    h0 = np.uint32(((p0 >> _S32) + e0) & _MASK)
    h1 = np.uint32(((p1 >> _S32) + e2) & _MASK)
    return np.uint32(h1 ^ c1 ^ k0), np.uint32(p1 & _MASK), np.uint32(h0 ^ c3 ^ k1), \
        np.uint32(p0 & _MASK)


@nb.njit(inline="always", cache=True)
def philox4x32_10_w32(c0, c1, c2, c3, k0, k1):
    """:func:`philox4x32_10` with 32-bit words and 32x32->64 multiplies: the GPU's
    Philox (:func:`kernels.gpu.device` compiles it in place of :func:`philox4x32_10`,
    whose CPU code stays as it is).  The same arguments (``uint64``) and the same
    results, bit for bit, for every input, 32-bit words or not: where an input has an
    upper half, the 64-bit form carries it into the first two rounds' high products
    only (a round's outputs are 32-bit words but for its first and third, which keep
    the upper halves of its second and fourth inputs and of the key, and the keys are
    masked from the second round on), and so does this (``tests/test_gpu_rng.py``).
    Where the caller's words are 32-bit (``i & LO_WORD``, ``i >> HI_SHIFT``, constants)
    the compiler folds those corrections away."""
    s = np.uint64(32)
    e0 = np.uint32((_M0 * (c0 >> s)) & _MASK)
    e2 = np.uint32((_M1 * (c2 >> s)) & _MASK)
    f0 = np.uint32((_M0 * ((c1 ^ k0) >> s)) & _MASK)
    f2 = np.uint32((_M1 * ((c3 ^ k1) >> s)) & _MASK)
    a0, a1, a2, a3 = _round32(np.uint32(c0 & _MASK), np.uint32(c1 & _MASK),
                              np.uint32(c2 & _MASK), np.uint32(c3 & _MASK),
                              np.uint32(k0 & _MASK), np.uint32(k1 & _MASK), e0, e2)
    k0 = ((k0 & _MASK) + _W0) & _MASK
    k1 = ((k1 & _MASK) + _W1) & _MASK
    a0, a1, a2, a3 = _round32(a0, a1, a2, a3, np.uint32(k0), np.uint32(k1), f0, f2)
    for _ in range(8):
        k0 = (k0 + _W0) & _MASK
        k1 = (k1 + _W1) & _MASK
        a0, a1, a2, a3 = _round32(a0, a1, a2, a3, np.uint32(k0), np.uint32(k1), _Z32, _Z32)
    return np.uint64(a0), np.uint64(a1), np.uint64(a2), np.uint64(a3)


@nb.njit(cache=True)
def philox_block(ctr, key):
    """Python-callable Philox4x32-10 on one counter (4 words) and key (2 words)."""
    r0, r1, r2, r3 = philox4x32_10(
        np.uint64(ctr[0]), np.uint64(ctr[1]), np.uint64(ctr[2]), np.uint64(ctr[3]),
        np.uint64(key[0]), np.uint64(key[1]),
    )
    out = np.empty(4, dtype=np.uint32)
    out[0] = r0
    out[1] = r1
    out[2] = r2
    out[3] = r3
    return out


@nb.njit(inline="always", cache=True)
def word_below(q, half=0.5):
    """The integer T with ``w < T`` exactly when ``(w + half) 2**-32 < q``, for every
    32-bit word w: the float test of a uniform as an integer comparison.  ``half`` is
    0.5 (the uniform (w + 1/2) 2**-32, never 0 or 1) or 0.0 (w 2**-32).  Exact: q 2**32
    is exact, and so is q 2**32 - 1/2 wherever it decides the ceiling (at or above
    1/2 it is a difference of multiples of q 2**32's spacing, at most 1/2 there)."""
    # Clamped before the ceiling (the bounds are integers: the same T), so that no
    # float out of the integers' range is converted.
    return np.uint64(math.ceil(min(4294967296.0, max(0.0, q * 4294967296.0 - half))))


@nb.njit(inline="always", cache=True)
def word_above(c, half=0.5):
    """The integer G with ``w >= G`` exactly when ``(w + half) 2**-32 > c``, for every
    32-bit word w (as :func:`word_below`)."""
    g = math.floor(min(4294967296.0, max(-1.0, c * 4294967296.0 - half))) + 1.0
    return np.uint64(min(4294967296.0, g))


def bernoulli_threshold(q: float) -> np.uint64:
    """Integer threshold T with P(u < T) = T / 2**32 closest to q, for u uniform on 32 bits.

    q = 0 gives 0 (never) and q = 1 gives 2**32 (always), so the endpoints are exact.
    """
    return np.uint64(min(TWO32, max(0, int(round(float(q) * TWO32)))))


def bernoulli_thresholds(q: np.ndarray) -> np.ndarray:
    """:func:`bernoulli_threshold` of every element (the same rounding: half to even)."""
    q = np.asarray(q, np.float64)
    t = np.multiply(q, float(TWO32), out=np.empty(q.shape))  # an array, even 0-d
    np.rint(t, out=t)  # in place: a 10^7-cell plan's six columns are 480 MB a pass
    np.clip(t, 0, float(TWO32), out=t)
    return t.astype(np.uint64)


def split_seed(seed: int) -> tuple[np.uint64, np.uint64]:
    """The Philox key (two 32-bit words) of a non-negative 64-bit seed."""
    seed = int(seed)
    return np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)


@nb.njit(inline="always", cache=True)
def fill_words(words, i, n_ctr, stream, k0, k1):
    """The 4 * n_ctr 32-bit words of instance ``i``: counters (i, 0..n_ctr - 1, stream)."""
    ii = np.uint64(i)
    lo = ii & np.uint64(0xFFFFFFFF)
    hi = ii >> np.uint64(32)
    for c in range(n_ctr):
        w0, w1, w2, w3 = philox4x32_10(lo, hi, np.uint64(c), stream, k0, k1)
        words[4 * c] = np.uint32(w0)
        words[4 * c + 1] = np.uint32(w1)
        words[4 * c + 2] = np.uint32(w2)
        words[4 * c + 3] = np.uint32(w3)


@nb.njit(inline="always", cache=True)
def fill_batch(W, i0, m, n_ctr, stream, k0, k1):
    """The words of instances ``i0 .. i0 + m - 1`` into ``W[4 * n_ctr, >= m]``: word k of
    instance i0 + j at ``W[k, j]`` (counters (i, 0..n_ctr - 1, stream)).  Counter by
    counter over the batch, so the generator vectorises; the batched kernels draw this
    way and then classify the batch (:func:`fill_words` is one instance's)."""
    for q in range(n_ctr):
        for j in range(m):
            ii = np.uint64(i0 + j)
            w0, w1, w2, w3 = philox4x32_10(ii & np.uint64(0xFFFFFFFF), ii >> np.uint64(32),
                                           np.uint64(q), stream, k0, k1)
            W[4 * q, j] = np.uint32(w0)
            W[4 * q + 1, j] = np.uint32(w1)
            W[4 * q + 2, j] = np.uint32(w2)
            W[4 * q + 3, j] = np.uint32(w3)


@nb.njit(inline="always", cache=True)
def normal_cdf(x):
    """The standard normal CDF Phi(x) inside compiled kernels."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))
