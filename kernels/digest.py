"""The per-cell checksum of a grid store's block, compiled: one pass over a variable.

:func:`antiamp.sweeps.cellstore.cell_digests` mixes each element word of a cell
with its key (the variable's name and the element's position) through SplitMix64's
finaliser and sums the mixed words of the cell.  Written in NumPy it made about ten
passes over a block, each a temporary of the block's size (30 ms a 4,096-cell block
of the equilibrium model, twice its solving time); here one pass, no temporary.  The
sums wrap modulo 2^64 exactly as NumPy's uint64 sums do, so the checksums are the
same bits (tests/test_cellstore.py keeps the NumPy reference).
"""

from __future__ import annotations

import numba as nb
import numpy as np

_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


@nb.njit(cache=True, nogil=True, inline="always")
def fmix(x):
    """SplitMix64's finaliser: every bit of ``x`` moves every bit of the result."""
    x = x ^ (x >> _S30)
    x = x * _M1
    x = x ^ (x >> _S27)
    x = x * _M2
    return x ^ (x >> _S31)


@nb.njit(cache=True, nogil=True)
def add_mixed_within(words, key, at, ext, skip_zero, acc):
    """``acc[i] +=`` the sum over the elements ``e`` inside cell ``i`` and their words
    ``w`` of ``fmix(words[i, e, w] ^ key[e, w])`` (a word 0 left out where
    ``skip_zero``: the code points that pad a label).  ``words`` [cell, element, word]
    of any unsigned type, read as uint64.  Element ``e`` is inside cell ``i`` when
    ``at[e, k] < ext[i, k]`` along each of the variable's model dimensions ``k``
    (``at`` [element, dimension]: its index along each; ``ext`` [cell, dimension]: the
    cell's extent along each), found here rather than from a block-sized array of
    flags a variable (most of a checksum's cost in NumPy calls)."""
    n, n_el, n_w = words.shape
    n_d = at.shape[1]
    for i in range(n):
        s = np.uint64(0)
        for e in range(n_el):
            inside = True
            for k in range(n_d):
                if at[e, k] >= ext[i, k]:
                    inside = False
                    break
            if inside:
                for w in range(n_w):
                    x = np.uint64(words[i, e, w])
                    if skip_zero and x == 0:
                        continue
                    s += fmix(x ^ key[e, w])
        acc[i] += s


@nb.njit(cache=True, nogil=True)
def last_held(held, out):
    """``out[i] = max(out[i], one past the last l with held[i, :, l, :] anywhere)``:
    a cell's extent along one model dimension (``held`` [cell, before, along, after])."""
    n, pre, length, post = held.shape
    for i in range(n):
        last = 0
        for j in range(length - 1, -1, -1):
            for a in range(pre):
                for b in range(post):
                    if held[i, a, j, b]:
                        last = j + 1
                        break
                if last:
                    break
            if last:
                break
        if last > out[i]:
            out[i] = last


def warm() -> None:
    """Compile the functions for every argument type a store's blocks give them
    (``antiamp warm``): the words of labels (uint32), flags (uint8), 4- and 8-byte
    numbers."""
    acc = np.zeros(1, np.uint64)
    key = np.zeros((1, 1), np.uint64)
    at, ext = np.zeros((1, 1), np.int64), np.ones((1, 1), np.int64)
    for t in (np.uint8, np.uint16, np.uint32, np.uint64):
        add_mixed_within(np.zeros((1, 1, 1), t), key, at, ext, False, acc)
    last_held(np.ones((1, 1, 1, 1), np.bool_), np.zeros(1, np.int64))
