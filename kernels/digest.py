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


#: Cells a tile of :func:`_mix_tiled` and :func:`held_extents`: the loops run over a
#: tile's cells innermost, each of a cell's elements in turn, so that a tile's words
#: (a few KB) stay in the first-level cache while its elements are visited (over a
#: whole block, every element's pass read the block's words from memory again).
TILE = 256


@nb.njit(cache=True, nogil=True)
def add_mixed_within(words, key, at, ext, cols, skip_zero, acc):
    """``acc[i] +=`` the sum over the elements ``e`` inside cell ``i`` and their words
    ``w`` of ``fmix(words[i, e, w] ^ key[e, w])`` (a word 0 left out where
    ``skip_zero``: the code points that pad a label).  ``words`` [cell, element, word]
    of any unsigned type, read as uint64.  Element ``e`` is inside cell ``i`` when
    ``at[e, k] < ext[cols[k], i]`` along each of the variable's model dimensions ``k``
    (``at`` [element, dimension]: its index along each; ``ext`` [dimension, cell]: each
    cell's extent along each of the block's model dimensions, ``cols`` the variable's
    among them), found here rather than from a block-sized array of flags a variable
    (most of a checksum's cost in NumPy calls).

    One element at a time over all the cells, branch-free, so that LLVM vectorises
    the mixing (64-bit multiplies in AVX-512): a number of up to two model dimensions
    (nearly every variable) by :func:`_mix_few`, whose loop reads the extents' rows
    itself (3-4x faster than the tiled loop with an array of flags it replaced, which
    is kept for labels and more dimensions, :func:`_mix_tiled`)."""
    if words.shape[2] == 1 and at.shape[1] == 0:
        _mix_all(words, key, skip_zero, acc)
    elif words.shape[2] == 1 and at.shape[1] <= 2:
        _mix_few(words, key, at, ext, cols, skip_zero, acc)
    else:
        _mix_tiled(words, key, at, ext, cols, skip_zero, acc)


@nb.njit(cache=True, nogil=True)
def _mix_all(words, key, skip_zero, acc):
    """:func:`add_mixed_within` of a one-word variable with no model dimension."""
    zero = np.uint64(0)
    keep_zero = not skip_zero
    for e in range(words.shape[1]):
        kw = key[e, 0]
        for i in range(words.shape[0]):
            x = np.uint64(words[i, e, 0])
            h = fmix(x ^ kw)
            acc[i] += h if (x != zero) | keep_zero else zero


@nb.njit(cache=True, nogil=True)
def _mix_few(words, key, at, ext, cols, skip_zero, acc):
    """:func:`add_mixed_within` of a one-word variable along one or two model
    dimensions (a second one absent is read as the first again)."""
    zero = np.uint64(0)
    keep_zero = not skip_zero
    two = at.shape[1] > 1
    for e in range(words.shape[1]):
        a0, r0 = at[e, 0], ext[cols[0]]
        a1, r1 = (at[e, 1], ext[cols[1]]) if two else (a0, r0)
        kw = key[e, 0]
        for i in range(words.shape[0]):
            x = np.uint64(words[i, e, 0])
            h = fmix(x ^ kw)
            ok = (a0 < r0[i]) & (a1 < r1[i]) & ((x != zero) | keep_zero)
            acc[i] += h if ok else zero


@nb.njit(cache=True, nogil=True)
def _mix_tiled(words, key, at, ext, cols, skip_zero, acc):
    """:func:`add_mixed_within` in tiles of :data:`TILE` cells: the cells innermost,
    each element's flags (inside the cell) in an array first; a label's many words a
    cell read a cell at a time."""
    n, n_el, n_w = words.shape
    inside = np.empty(TILE, np.bool_)
    zero = np.uint64(0)
    for i0 in range(0, n, TILE):
        m = min(TILE, n - i0)
        for e in range(n_el):
            inside[:m] = True
            for k in range(at.shape[1]):
                a, row = at[e, k], ext[cols[k], i0:i0 + m]
                for j in range(m):
                    inside[j] = inside[j] & (a < row[j])
            if n_w == 1:
                kw = key[e, 0]
                for j in range(m):
                    x = np.uint64(words[i0 + j, e, 0])
                    keep = inside[j] and not (skip_zero and x == zero)
                    h = fmix(x ^ kw)
                    acc[i0 + j] += h if keep else zero
            else:
                for j in range(m):
                    if inside[j]:
                        s = zero
                        for w in range(n_w):
                            x = np.uint64(words[i0 + j, e, w])
                            if skip_zero and x == zero:
                                continue
                            s += fmix(x ^ key[e, w])
                        acc[i0 + j] += s


@nb.njit(cache=True, nogil=True)
def held_extents(words, at, cols, mode, mask, bits, ext):
    """``ext[cols[k], i] = max(ext[cols[k], i], at[e, k] + 1)`` over the elements ``e``
    of cell ``i`` that hold something other than padding: a cell's extent along each
    model dimension of a variable in one pass over its words (``words`` [cell, element,
    word] as :func:`add_mixed_within` reads them; ``ext`` [dimension, cell]).  An
    element is padding by ``mode``: 0 a NaN (``word & mask > bits``: ``mask`` the
    float's bits but its sign, ``bits`` its infinity's), 1 a word equal to ``mask`` (-1
    of a signed integer: every bit set), 2 every word 0 (False, an empty label), 3
    never (unsigned integers).  Tiles of cells, as in :func:`add_mixed_within`."""
    n, n_el, n_w = words.shape
    held = np.empty(TILE, np.bool_)
    for i0 in range(0, n, TILE):
        m = min(TILE, n - i0)
        for e in range(n_el):
            if mode == 3:
                held[:m] = True
            elif mode == 2 and n_w > 1:
                for j in range(m):
                    held[j] = False
                    for w in range(n_w):
                        if words[i0 + j, e, w] != 0:
                            held[j] = True
                            break
            elif mode == 2:
                for j in range(m):
                    held[j] = words[i0 + j, e, 0] != 0
            elif mode == 0:
                for j in range(m):
                    held[j] = (np.uint64(words[i0 + j, e, 0]) & mask) <= bits
            else:
                for j in range(m):
                    held[j] = np.uint64(words[i0 + j, e, 0]) != mask
            for k in range(at.shape[1]):
                v, row = at[e, k] + 1, ext[cols[k], i0:i0 + m]
                for j in range(m):
                    if held[j] and v > row[j]:
                        row[j] = v


#: Cells a tile of :func:`mix_held`.
TILE_HELD = 2048


def held_test(mode, mask, bits) -> tuple:
    """:func:`held_extents`' padding test as ``(mask, bits, invert)``: a word ``x``
    holds something other than padding when ``((x & mask) <= bits) != invert``: one
    expression for every mode, so that :func:`mix_held`'s loop has no branch on it."""
    if mode == 0:  # not a NaN
        return np.uint64(mask), np.uint64(bits), False
    if mode == 1:  # not every bit set (x <= mask - 1)
        return np.uint64(mask), np.uint64(mask) - np.uint64(1), False
    if mode == 2:  # not 0 (x <= 0 inverted)
        return np.uint64(0xFFFFFFFFFFFFFFFF), np.uint64(0), True
    return np.uint64(0), np.uint64(0), False  # always (0 <= 0)


@nb.njit(cache=True, nogil=True)
def mix_held(words, key, at, cols, mask, bits, invert, padw, acc, ext, pad):
    """One pass over a variable of one-word elements along model dimensions:
    ``acc[i] +=`` the mixed words (as :func:`add_mixed_within`) of cell ``i``'s
    elements that hold something other than padding (``(mask, bits, invert)`` of
    :func:`held_test`); the extents ``ext`` raised by them (as
    :func:`held_extents`); and the padding elements marked for
    :func:`add_padding_within`, which adds those inside the final extents: bit ``e``
    of ``pad[i]`` where the element's word is ``padw`` (the fill's bits).  Returns
    the number of other padding elements (NaNs of another sign or payload), which
    :func:`add_padding_within` finds again, and the number of the fill's words (where
    both are 0, no padding waits for it).

    A held element is inside its cell's extents (it raised them), so only padding
    waits for the extents of every variable: a block's words are read once (the
    extents and then the mixing had read them twice).  Up to 64 elements (the bits
    of ``pad``: uint8 for up to 8 elements, uint64 beyond); the first two dimensions'
    extents in the loop that mixes, any further ones in a loop of their own.

    In tiles of :data:`TILE_HELD` cells, one element over a tile's cells a loop: the
    running sums, extents and flags of a tile stay in the cache while its elements
    are visited (a loop over all the cells sent four block-sized arrays to memory and
    back an element).  The index runs unsigned: with a signed one from a tile's start,
    numba's wraparound of negative indices kept LLVM from vectorising the loop (2.5x
    slower)."""
    n, n_el, _ = words.shape
    nk = at.shape[1]
    zero, one = np.uint64(0), np.uint64(1)
    other = 0
    padded = 0
    flat = words.reshape(n * n_el)  # C-contiguous, as _words gives them
    width = np.uint64(n_el)
    for t in range(-(-n // TILE_HELD)):
        i0, i1 = np.uint64(t * TILE_HELD), np.uint64(min(n, (t + 1) * TILE_HELD))
        # The fill's words counted in one pass over the tile's words in memory order
        # (none: nothing for add_padding_within to add).  This pass also brings the
        # tile into the cache ahead of the loops below, which read an element's words
        # across the cells with a stride (gathered), which the hardware's prefetcher
        # does not follow: a tile read that way from memory took twice as long.
        j = i0 * width
        while j < i1 * width:
            padded += np.uint64(flat[j]) == padw
            j += one
        for e in range(n_el):
            kw = key[e, 0]
            bit = one << np.uint64(e)
            v0, r0 = at[e, 0] + 1, ext[cols[0]]
            i = i0
            if nk > 1:
                v1, r1 = at[e, 1] + 1, ext[cols[1]]
                while i < i1:
                    x = np.uint64(words[i, e, 0])
                    held = ((x & mask) <= bits) != invert
                    h = fmix(x ^ kw)
                    acc[i] += h if held else zero
                    r0[i] = max(r0[i], v0 if held else 0)
                    r1[i] = max(r1[i], v1 if held else 0)
                    pad[i] |= bit if (not held) & (x == padw) else zero
                    other += (not held) & (x != padw)
                    i += one
            else:  # a loop of its own: the second row read as the first, the two
                # stores to one row kept LLVM from vectorising (3x slower)
                while i < i1:
                    x = np.uint64(words[i, e, 0])
                    held = ((x & mask) <= bits) != invert
                    h = fmix(x ^ kw)
                    acc[i] += h if held else zero
                    r0[i] = max(r0[i], v0 if held else 0)
                    pad[i] |= bit if (not held) & (x == padw) else zero
                    other += (not held) & (x != padw)
                    i += one
            for k in range(2, nk):
                v, row = at[e, k] + 1, ext[cols[k]]
                i = i0
                while i < i1:
                    held = ((np.uint64(words[i, e, 0]) & mask) <= bits) != invert
                    row[i] = max(row[i], v if held else 0)
                    i += one
    return other, padded


@nb.njit(cache=True, nogil=True)
def mix_held_labels(words, key, at, cols, acc, ext):
    """:func:`mix_held` of labels (many code points an element): a label is held
    when any code point is not 0, and its non-zero code points are mixed; an empty
    label mixes to nothing, inside its cell or not, so nothing waits.  A label equal
    to the previous cell's (most are: a block's labels take a few values) takes its
    sum: comparing code points costs less than mixing them.  A cell whose labels are
    all the previous cell's (most cells) takes that cell's sum and extents whole: its
    code points compared in one loop without a branch, which LLVM vectorises (3x
    faster than comparing label by label, which stops at the first difference).
    ``words`` C-contiguous, as :func:`antiamp.sweeps.cellstore._words` gives them."""
    n, n_el, n_w = words.shape
    nk = at.shape[1]
    zero = np.uint64(0)
    sums = np.zeros(n_el, np.uint64)
    held = np.zeros(n_el, np.bool_)
    cell_ext = np.zeros(nk, np.int64)  # the last cell's extents, from its labels
    cell_sum = zero  # the last cell's sum
    flat = words.reshape(n, n_el * n_w)
    for i in range(n):  # a cell's labels after the previous cell's: one pass in order
        if i > 0:
            d = np.uint32(0)
            for w in range(n_el * n_w):
                d |= flat[i, w] ^ flat[i - 1, w]
            if d == 0:
                acc[i] += cell_sum
                for k in range(nk):
                    ext[cols[k], i] = max(ext[cols[k], i], cell_ext[k])
                continue
        cell_sum = zero
        cell_ext[:] = 0
        for e in range(n_el):
            same = i > 0
            if same:
                for w in range(n_w):
                    if words[i, e, w] != words[i - 1, e, w]:
                        same = False
                        break
            if not same:
                s = zero
                h = False
                for w in range(n_w):
                    x = np.uint64(words[i, e, w])
                    if x != zero:
                        h = True
                        s += fmix(x ^ key[e, w])
                sums[e], held[e] = s, h
            if held[e]:
                cell_sum += sums[e]
                for k in range(nk):
                    cell_ext[k] = max(cell_ext[k], at[e, k] + 1)
        acc[i] += cell_sum
        for k in range(nk):
            ext[cols[k], i] = max(ext[cols[k], i], cell_ext[k])


@nb.njit(cache=True, nogil=True)
def add_padding_within(words, key, at, ext, cols, mask, bits, invert, padw, padh, pad,
                       other, acc):
    """``acc[i] +=`` the mixed words of the padding elements of cell ``i`` that lie
    inside its final extents (``ext``): ``padh[e]`` for an element that
    :func:`mix_held` marked in ``pad[i]`` (the fill's bits); where it counted
    ``other`` padding (a NaN of another sign or payload), those elements are found
    again and their own words mixed (rare)."""
    n, n_el, _ = words.shape
    nk = at.shape[1]
    zero, one = np.uint64(0), np.uint64(1)
    for e in range(n_el):
        ph = padh[e]
        a0, r0 = at[e, 0], ext[cols[0]]
        a1, r1 = (at[e, 1], ext[cols[1]]) if nk > 1 else (a0, r0)
        if nk <= 2:
            for i in range(n):
                ok = (((pad[i] >> np.uint64(e)) & one) != zero) & (a0 < r0[i]) & (a1 < r1[i])
                acc[i] += ph if ok else zero
        else:
            for i in range(n):
                ok = (((pad[i] >> np.uint64(e)) & one) != zero) & (a0 < r0[i]) & (a1 < r1[i])
                for k in range(2, nk):
                    ok &= at[e, k] < ext[cols[k], i]
                acc[i] += ph if ok else zero
    if other == 0:
        return
    for e in range(n_el):
        for i in range(n):
            x = np.uint64(words[i, e, 0])
            if (((x & mask) <= bits) != invert) or x == padw:
                continue
            inside = True
            for k in range(nk):
                inside &= at[e, k] < ext[cols[k], i]
            if inside:
                acc[i] += fmix(x ^ key[e, 0])


def warm() -> None:
    """Compile the functions for every argument type a store's blocks give them
    (``antiamp warm``): the words of labels (uint32), flags (uint8), 4- and 8-byte
    numbers."""
    acc = np.zeros(1, np.uint64)
    key = np.zeros((1, 1), np.uint64)
    at, ext = np.zeros((1, 1), np.int64), np.ones((1, 1), np.int64)
    cols, held = np.zeros(1, np.int64), np.zeros((1, 1), np.int64)
    test = held_test(0, np.uint64(0), np.uint64(0))
    for t in (np.uint8, np.uint16, np.uint32, np.uint64):
        words = np.zeros((1, 1, 1), t)
        add_mixed_within(words, key, at, ext, cols, False, acc)
        held_extents(words, at, cols, 0, np.uint64(0), np.uint64(0), held)
        for pt in (np.uint8, np.uint64):  # the padding flags: a byte or a word a cell
            pad = np.zeros(1, pt)
            other, _ = mix_held(words, key, at, cols, *test, np.uint64(0), acc, ext, pad)
            add_padding_within(words, key, at, ext, cols, *test, np.uint64(0),
                               key[:, 0].copy(), pad, other, acc)
    mix_held_labels(np.zeros((1, 1, 2), np.uint32), np.zeros((1, 2), np.uint64), at, cols,
                    acc, ext)
