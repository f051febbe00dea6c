"""Whole-chunk writes of a sweep block, straight to the chunk files.

A block of a fused sweep is exactly one chunk of each of its ~60 arrays.  Zarr 3
writes a chunk through its event loop in a few dozen scheduled steps (a selection,
a codec pipeline, a thread for the compressor, another for the file): about 1.2 ms
a chunk of a few bytes, 70-85 ms a block, which in a grid of small or one-cell
blocks costs more than the simulation.  Written by hand because zarr has no batched
whole-chunk write: this encodes each chunk with the array's own compressor and
metadata (format 2: dtype, order, fill value, chunk key) and writes the file the
way zarr's local store does (a temporary beside it, then renamed over it), so the
store holds the same bytes (tested file by file against zarr's own writes).

Only what it can write exactly is written this way: a format-2 array of a local
store with no filters, C order and a plain numeric dtype or a fixed-width label
(``<U``: its code points, as zarr encodes them), and a region that is one whole chunk
(clipped at the array's end).  Anything else goes through zarr.
"""

from __future__ import annotations

import itertools
import os
import uuid
from pathlib import Path

import numpy as np


#: Elements of a chunk tested against the fill before the whole chunk
#: (:meth:`ChunkFile.all_fill`).
SAMPLE = 64


def v2_metadata(path: Path, attrs: dict | None = None):
    """The format-2 metadata of the array in the folder ``path``, from its ``.zarray``
    file alone, parsed by zarr's own class (``attrs``: its attributes, where read);
    FileNotFoundError where the folder holds no array."""
    import json

    from zarr.core.metadata.v2 import ArrayV2Metadata

    doc = json.loads((Path(path) / ".zarray").read_bytes())
    return ArrayV2Metadata.from_dict(doc if attrs is None else {**doc, "attributes": attrs})


class ChunkFile:
    """Writes whole chunks of one zarr array (see the module's docstring)."""

    __slots__ = ("root", "meta", "dtype", "fill", "chunks", "shape")

    def __init__(self, root: Path, meta, dtype, fill):
        self.root, self.meta = root, meta
        self.dtype, self.fill = dtype, fill
        self.chunks, self.shape = tuple(meta.chunks), tuple(meta.shape)

    @classmethod
    def of(cls, array) -> "ChunkFile | None":
        """A writer for ``array``, or None if its chunks are not ours to write by hand."""
        try:
            from zarr.storage import LocalStore

            if not isinstance(array.store, LocalStore):
                return None
            return cls._of_meta(Path(array.store.root) / array.path, array.metadata)
        except Exception:  # another zarr layout: leave it to zarr
            return None

    @classmethod
    def at(cls, path: Path) -> "ChunkFile | None":
        """A writer for the array in the folder ``path`` of a local store, from its
        ``.zarray`` file alone (parsed by zarr's own format-2 metadata class), without
        opening it through zarr: about 0.5 ms an array through a group, its metadata
        files read through zarr's event loop, which a fused sweep paid for each of its
        ~60 arrays before its first block's writes.  None where the folder holds no
        format-2 array or its chunks are not ours to write (see the module)."""
        try:
            path = Path(path)
            return cls._of_meta(path, v2_metadata(path))
        except Exception:  # no such array, or another layout: leave it to zarr
            return None

    @classmethod
    def _of_meta(cls, path: Path, meta) -> "ChunkFile | None":
        if meta.zarr_format != 2 or meta.filters or meta.order != "C":
            return None
        dtype = np.dtype(meta.dtype.to_native_dtype())
        if dtype.kind not in "biufU":
            return None
        fill = meta.fill_value
        if fill is None:  # format 2 allows none: zarr reads the dtype's default
            fill = meta.dtype.default_scalar()
        meta.encode_chunk_key((0,) * len(meta.shape))
        return cls(path, meta, dtype, fill)

    def coords(self, region: tuple) -> tuple | None:
        """The chunk's coordinates if ``region`` (slices over the leading axes) is one
        whole chunk, trailing axes whole; else None."""
        out = []
        for k, (c, n) in enumerate(zip(self.chunks, self.shape)):
            s = region[k] if k < len(region) else slice(0, n)
            start, stop = s.start or 0, n if s.stop is None else s.stop
            if start % c or not (stop - start == c or (stop == n and stop - start < c)):
                return None
            out.append(start // c)
        return tuple(out)

    def pieces(self, region: tuple) -> list | None:
        """``(chunk coordinates, slices of the region's values)`` of every chunk that
        ``region`` covers, if ``region`` is one whole chunk over its (leading) axes and
        the trailing axes are whole (any number of chunks along them, as an array
        resized along a trailing axis has); else None."""
        lead = []
        for k, s in enumerate(region):
            c, n = self.chunks[k], self.shape[k]
            start, stop = s.start or 0, n if s.stop is None else s.stop
            if start % c or not (stop - start == c or (stop == n and stop - start < c)):
                return None
            lead.append(start // c)
        trail = [range(-(-n // c)) for c, n in zip(self.chunks[len(region):],
                                                    self.shape[len(region):])]
        out = []
        for idx in itertools.product(*trail):
            sl = tuple(slice(None) for _ in region) + tuple(
                slice(i * c, min((i + 1) * c, n))
                for i, c, n in zip(idx, self.chunks[len(region):], self.shape[len(region):]))
            out.append((tuple(lead) + tuple(idx), sl))
        return out

    def all_fill(self, values: np.ndarray) -> bool:
        """Whether a whole chunk of ``values`` is all the fill: zarr's own test (it
        writes no file for such a chunk), on :data:`SAMPLE` elements spread over the
        chunk before the whole chunk (elementwise either way: a chunk with an element
        that is not the fill is not all fill; most chunks hold data, and the whole
        test costs more: 2 ms a 65,536-cell block of the equilibrium model, whose
        first elements are often padding)."""
        from zarr.core.buffer.cpu import NDBuffer

        flat = values.reshape(-1)
        sample = flat[::max(1, flat.size // SAMPLE)]
        return (NDBuffer.from_ndarray_like(sample).all_equal(self.fill)
                and NDBuffer.from_ndarray_like(values).all_equal(self.fill))

    def write(self, coords: tuple, values: np.ndarray) -> None:
        """Encode ``values`` as the chunk at ``coords`` and write (or, all fill, delete)
        its file, as zarr does with ``write_empty_chunks`` off (its default)."""
        from numcodecs.compat import ensure_bytes

        values = np.asarray(values)
        if values.shape != self.chunks:  # the array's last chunk: padded with the fill
            full = np.full(self.chunks, self.fill, dtype=self.dtype)
            full[tuple(slice(0, n) for n in values.shape)] = values
            values = full
        path = self.root / self.meta.encode_chunk_key(coords)
        if self.all_fill(values):
            path.unlink(missing_ok=True)
            return
        chunk = values.astype(self.dtype, order="C", copy=False)
        comp = self.meta.compressor
        data = ensure_bytes(comp.encode(chunk) if comp is not None else chunk)
        tmp = path.with_suffix(f".{uuid.uuid4().hex}.partial")
        try:
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
