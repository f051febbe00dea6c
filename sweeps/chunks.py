"""A grid's cells cut into blocks: each block a hyperrectangle of cells that is one
chunk of every per-cell array of its store (trailing axes whole first), so that a
block is also a run of consecutive cells in C order."""

from __future__ import annotations

import math
import weakref

import numpy as np

from .fused import MAX_CELLS_PER_BLOCK, TARGET_BLOCK_INSTANCES, TARGET_BLOCK_INSTANCES_GPU


def chunk_shape(shape: tuple, n: int, cells_per_block: int, device: str = "cpu") -> tuple:
    """Chunk (= block) shape over the cell array: whole trailing axes first.  Without
    ``cells_per_block``, about :data:`TARGET_BLOCK_INSTANCES` instances a block, or
    :data:`TARGET_BLOCK_INSTANCES_GPU` with ``device`` "cuda" (``run.device``; "auto"
    is resolved where a block runs, so it blocks as the CPU does).  A store begun on the
    other device resumes in its own blocks (:func:`antiamp.sweeps.engine.stored_plan`)."""
    aim = TARGET_BLOCK_INSTANCES_GPU if device == "cuda" else TARGET_BLOCK_INSTANCES
    target = cells_per_block or max(1, min(MAX_CELLS_PER_BLOCK, aim // n))
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


#: The one-element arrays that placeholders broadcast, by identity: a broadcast of any
#: other array (a per-cell input constant over the grid, say) is data to be written.
_FILLS: "weakref.WeakValueDictionary[int, np.ndarray]" = weakref.WeakValueDictionary()


def placeholder(shape: tuple, value, dtype=None) -> np.ndarray:
    """A store template's placeholder array: ``value`` broadcast to ``shape``, a
    read-only view of one element whatever the shape (never written: see
    :func:`antiamp.sweeps.cellstore.write_template`)."""
    fill = np.array(value, dtype=dtype)  # a new one-element array: marks the placeholder
    _FILLS[id(fill)] = fill
    return np.broadcast_to(fill, tuple(shape))


def is_placeholder(data) -> bool:
    """Whether ``data`` is a :func:`placeholder` (or a view of one)."""
    root = data
    while isinstance(root, np.ndarray) and root.base is not None:
        root = root.base
    return isinstance(data, np.ndarray) and _FILLS.get(id(root)) is root
