"""A grid's cells cut into blocks: each block a hyperrectangle of cells that is one
chunk of every per-cell array of its store (trailing axes whole first), so that a
block is also a run of consecutive cells in C order."""

from __future__ import annotations

import itertools
import math

import numpy as np

from .fused import MAX_CELLS_PER_BLOCK, TARGET_BLOCK_INSTANCES


def chunk_shape(shape: tuple, n: int, cells_per_block: int) -> tuple:
    """Chunk (= block) shape over the cell array: whole trailing axes first."""
    target = cells_per_block or max(1, min(MAX_CELLS_PER_BLOCK, TARGET_BLOCK_INSTANCES // n))
    chunk = []
    room = target
    for size in reversed(shape):
        c = max(1, min(size, room))
        chunk.append(c)
        room = max(1, room // c)
    return tuple(reversed(chunk))


def blocks(shape: tuple, chunk: tuple):
    """Each block as a tuple of slices over the cell array, in C order."""
    counts = [math.ceil(s / c) for s, c in zip(shape, chunk)]
    for idx in np.ndindex(*counts):
        yield tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, chunk, shape))


def cells_of(region: tuple, shape: tuple) -> np.ndarray:
    """The flat (C order) indices of a region's cells."""
    grids = np.meshgrid(*[np.arange(s.start, s.stop) for s in region], indexing="ij")
    return np.ravel_multi_index([g.ravel() for g in grids], shape)


def flat_range(region: tuple, shape: tuple) -> tuple:
    """(start, stop) of a block's cells, consecutive in C order (see the module)."""
    first = np.ravel_multi_index([s.start for s in region], shape)
    last = np.ravel_multi_index([s.stop - 1 for s in region], shape)
    return int(first), int(last) + 1


#: Templates of at most this many blocks (chunks an array) and bytes of placeholders
#: are laid out from NumPy arrays of the fill values (zarr writes no chunk that is
#: all fill, but looks at each: about 0.2 ms a chunk), the others from dask
#: placeholders whose metadata alone is written: the same files either way, and a
#: small sweep spares the dask graph (a quarter of a second).
NUMPY_TEMPLATE_BLOCKS = 8
NUMPY_TEMPLATE_BYTES = 64 << 20


def placeholders(n_blocks: int, nbytes: int):
    """``full(shape, value, dtype)`` and ``zeros(shape, dtype)`` making a store
    template's placeholder arrays: NumPy for a small store, dask (never computed:
    only their metadata is written) for a large one."""
    if n_blocks <= NUMPY_TEMPLATE_BLOCKS and nbytes <= NUMPY_TEMPLATE_BYTES:
        def full(shape, value, dtype=None):
            return np.full(shape, value, dtype=dtype)

        def zeros(shape, dtype):
            return np.zeros(shape, dtype=dtype)
        return full, zeros
    import dask.array as da

    # One dask chunk an array (the store's chunks are the encoding's): the graph
    # that to_zarr builds, though it never runs, has a task per dask chunk (0.25
    # ms each; 200 one-cell blocks cost 2.8 s).  Named here, since dask would
    # otherwise tokenize each one's arguments (a tenth of a second a store).
    names = itertools.count()

    def full(shape, value, dtype=None):
        return da.full(shape, value, dtype=dtype, chunks=shape,
                       name=f"antiamp-template-{next(names)}")

    def zeros(shape, dtype):
        return da.zeros(shape, dtype=dtype, chunks=shape,
                        name=f"antiamp-template-{next(names)}")
    return full, zeros
