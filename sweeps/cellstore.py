"""A model's grid written in place: the store laid out from the first finished block,
each block one chunk of every per-cell variable, a checksum of each cell, ``cell_done``
last.

The one store layout of every model (the fused grids write the same arrays, from
their counts: :mod:`antiamp.sweeps.engine`).  A model whose cells are not counts
returns each block as a Dataset (``run_cells``); the first block to finish gives
the store its variables, their dtypes and the sizes of the model's own dimensions
(``protocol``, ``equilibrium``, ...).  Two things can only be known later, and the
store follows them as blocks arrive:

* a model dimension whose length varies by cell (equilibria found, items held):
  the arrays along it are resized when a longer block arrives, the new part padded
  as an in-memory grid pads it (NaN for numbers, False for flags, -1 for counts,
  "" for labels);
* a label wider than the first block's: the array is rewritten with the wider type.

Each cell's checksum (``cell_digest``) covers every per-cell variable of the cell,
up to the cell's own extent along each model dimension (the padding beyond it does
not count), so that a store that grows keeps its checksums; a block is verified by
recomputing them.  Per-block statistics (kernel calls, solver time) are kept in
the store's own folder (``.antiamp/block_stats``) and summed into the store's
attributes when it is finished.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from antiamp.lazy import lazy
xr = lazy("xarray")

#: Attributes of a block's Dataset that are summed over the blocks of a grid.
SUMMED_ATTRS = ("kernel_calls", "kernel_cells", "solve_seconds")
#: Arrays of the layout itself (not the model's variables).
LAYOUT_ARRAYS = ("cell_done", "cell_digest")
#: The per-block statistics, in the store's own folder.
STATS = "block_stats"

#: The compressor of label arrays (fixed-width Unicode: four bytes a code point, mostly
#: zeros): Blosc's byte shuffle over a 44-byte element gains nothing there, and
#: without it lz4 encodes a 65,536-cell block of the equilibrium model's kinds in 1.0 ms
#: against 2.5 (58 kB against 49: the same values, a few more bytes).  Numeric arrays keep
#: zarr's default (lz4 with the shuffle, which their bytes need).
LABEL_COMPRESSOR = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 0, "blocksize": 0}


def fill_of(dtype) -> object:
    """The padding of a variable of this dtype (what an in-memory grid pads with)."""
    kind = np.dtype(dtype).kind
    if kind == "b":
        return False
    if kind in "iu":
        return -1
    if kind in "OUS":
        return ""
    return np.nan


def _words(a: np.ndarray) -> np.ndarray:
    """Each element's bits as unsigned words: shape (n, elements, words), a view where
    the dtype allows (read as uint64 by the checksum)."""
    n = a.shape[0]
    if a.dtype.kind == "U":  # code points; zeros (the fixed width's padding) skipped
        w = max(1, a.dtype.itemsize // 4)
        return np.ascontiguousarray(a).view(np.uint32).reshape(n, -1, w)
    if a.dtype.kind == "b":
        return np.ascontiguousarray(a).view(np.uint8).reshape(n, -1, 1)
    if a.dtype.kind in "iuf":
        u = np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")
        return u.reshape(n, -1, 1)
    raise TypeError(f"variables of dtype {a.dtype} cannot be checksummed")


_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
#: An element's position word: its index along each model dimension in 20 bits, then
#: the code point's index in a label in 12 (fixed strides: a store that grows or a
#: label array that widens leaves every element's position as it was).
_DIM_BITS, _CHAR_BITS = np.uint64(20), np.uint64(12)


def _fmix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: every bit of ``x`` moves every bit of the result."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def _name_word(name: str) -> np.uint64:
    import hashlib

    return np.uint64(int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(),
                                    "little"))


def _padding_test(dtype) -> tuple:
    """How :func:`antiamp.kernels.digest.held_extents` tells this dtype's padding
    (:func:`fill_of`) from its words: (mode, mask, bits) as it documents."""
    dtype = np.dtype(dtype)
    width = 8 * dtype.itemsize
    if dtype.kind == "f":  # NaN, of any sign or payload (np.isnan)
        inf = int(np.array(np.inf, dtype).view(f"u{dtype.itemsize}"))
        return 0, np.uint64((1 << (width - 1)) - 1), np.uint64(inf)
    if dtype.kind == "i":  # -1: every bit set
        return 1, np.uint64((1 << width) - 1), np.uint64(0)
    if dtype.kind == "u":  # -1 is no unsigned value: never padding (as a == -1)
        return 3, np.uint64(0), np.uint64(0)
    return 2, np.uint64(0), np.uint64(0)  # False, "": every word 0


def _prepared(rows: dict) -> tuple:
    """The block's model dimensions in order of first appearance (name -> row of the
    extents), and each variable's (values, words, element keys, element positions,
    its dimensions' rows): what the extents and the checksums both read."""
    order: dict = {}
    for _, dims in rows.values():
        for d in dims:
            order.setdefault(d, len(order))
    out = {}
    for name, (a, dims) in rows.items():
        if len(dims) != a.ndim - 1:  # the compiled loops index the extents by dimension
            raise ValueError(f"{name}: {a.ndim - 1} axes beyond the cells' but "
                             f"{len(dims)} dimension names {tuple(dims)}")
        words = _words(a)  # (cell, element, word)
        key, at = _element_keys(name, a.shape[1:], words.shape[2])
        out[name] = (a, words, key, at, np.array([order[d] for d in dims], np.int64))
    return order, out


def _extent_matrix(order: dict, variables: dict, n: int) -> np.ndarray:
    """[dimension, cell] extents (see :func:`extents`) of :func:`_prepared`'s variables."""
    # one compiled pass a variable over its words, no temporary (a NumPy mask of
    # padding a variable and a reduction a dimension cost as much as the checksum)
    from antiamp.kernels.digest import held_extents

    ext = np.zeros((len(order), n), np.int64)
    for a, words, _, at, cols in variables.values():
        if len(cols):
            mode, mask, bits = _padding_test(a.dtype)
            held_extents(words, at, cols, mode, mask, bits, ext)
    return ext


def extents(rows: dict) -> dict:
    """Each model dimension's extent in each cell: one past the last index at which
    any variable along it holds something other than padding. ``rows``: name ->
    (values [cell, ...], the model dimensions)."""
    order, variables = _prepared(rows)
    n = next(iter(rows.values()))[0].shape[0] if rows else 0
    ext = _extent_matrix(order, variables, n)
    return {d: ext[j] for d, j in order.items()}


def _element_keys(name: str, rest: tuple, n_words: int) -> tuple:
    """A variable's key of each element word (its name and position mixed) and each
    element's index along each model dimension (``[element, dimension]``), kept
    by variable and shape: the same for every block of a grid."""
    k = (name, rest, n_words)
    if k not in _KEYS:
        if len(_KEYS) > 1024:
            _KEYS.clear()
        pos = np.zeros(rest, np.uint64)
        for j, r in enumerate(rest):
            shape = (1,) * j + (r,) + (1,) * (len(rest) - j - 1)
            pos = (pos << _DIM_BITS) + np.arange(r, dtype=np.uint64).reshape(shape)
        key = ((pos.reshape(-1, 1) << _CHAR_BITS)
               + np.arange(n_words, dtype=np.uint64).reshape(1, -1))
        with np.errstate(over="ignore"):
            key = _fmix(key ^ _name_word(name))
        at = (np.indices(rest, dtype=np.int64).reshape(len(rest), -1).T.copy() if rest
              else np.zeros((1, 0), np.int64))
        _KEYS[k] = (key, at)
    return _KEYS[k]


_KEYS: dict = {}


def cell_digests(rows: dict, cells: np.ndarray) -> np.ndarray:
    """A 64-bit checksum of each cell's values (and its index in the grid).

    ``rows``: name -> (values [cell, ...], the model dimensions of its trailing axes).
    Each element's bits are mixed with its variable's name and its position (its
    index along each model dimension, and a code point's index in a label) and the
    mixed words of a cell are summed: an element beyond the cell's extent along a
    model dimension (padding) is left out, and so are the zero code points that pad a
    fixed-width label, so the checksum does not change when the store grows or a
    label array widens.  Written by hand because it must be vectorised over cells
    and elements (hashlib hashes one buffer a call); SplitMix64's mixing for
    detecting damage, not for security; never 0, the fill of a missing chunk.
    """
    # numba: where a block is summed (kernels/digest.py).  Every element beyond a
    # cell's extents is padding (the extents are where the last held element of any
    # variable lies), so the held elements are summed in the one pass that finds the
    # extents, and the padding inside them is added after (mix_held); the sum wraps
    # modulo 2^64, in any order the same.
    from antiamp.kernels import digest

    n = len(cells)
    acc = np.zeros(n, np.uint64)
    order, variables = _prepared(rows)
    ext = np.zeros((len(order), n), np.int64)  # [dimension, cell]
    waiting, later = [], []
    with np.errstate(over="ignore"):
        for a, words, key, at, cols in variables.values():
            skip_zero = a.dtype.kind == "U"
            if not len(cols):  # every element inside
                digest.add_mixed_within(words, key, at, ext, cols, skip_zero, acc)
            elif words.shape[2] > 1:
                digest.mix_held_labels(words, key, at, cols, acc, ext)
            elif words.shape[1] <= 64:
                mode, mask, bits = _padding_test(a.dtype)
                test = digest.held_test(mode, mask, bits) + (_fill_word(a.dtype),)
                # a byte a cell where the elements fit its bits: an eighth of the
                # memory, which fresh (its pages first touched) cost more than the mixing
                pad = np.zeros(n, np.uint8 if words.shape[1] <= 8 else np.uint64)
                other, padded = digest.mix_held(words, key, at, cols, *test, acc, ext, pad)
                # an empty label's zero code point mixes to nothing; unsigned integers
                # have no padding; a variable without padding has none to add: nothing
                # waits
                if a.dtype.kind not in "Uu" and (other or padded):
                    waiting.append((words, key, at, cols, test, _fmix(key[:, 0] ^ test[3]),
                                    pad, other))
            else:  # more elements than pad's bits: the extents first, the mixing after
                mode, mask, bits = _padding_test(a.dtype)
                digest.held_extents(words, at, cols, mode, mask, bits, ext)
                later.append((words, key, at, cols, skip_zero))
        for words, key, at, cols, test, padh, pad, other in waiting:
            digest.add_padding_within(words, key, at, ext, cols, *test, padh, pad, other, acc)
        for words, key, at, cols, skip_zero in later:
            digest.add_mixed_within(words, key, at, ext, cols, skip_zero, acc)
        h = _fmix(np.asarray(cells, np.uint64) * np.uint64(0x9E3779B97F4A7C15)
                  + np.uint64(0x632BE59BD9B4E019))
        h = _fmix(acc ^ h)
    return h | np.uint64(1)


def _fill_word(dtype) -> np.uint64:
    """The bits of the padding :func:`fill_of` a one-word dtype, as a word."""
    dtype = np.dtype(dtype)
    if dtype.kind in "Uu":  # "" (every code point 0); unsigned integers have no padding
        return np.uint64(0)
    fill = np.array(fill_of(dtype), dtype)
    return np.uint64(int(fill.view(f"u{dtype.itemsize}")))


def block_rows(ds, names=None) -> dict:
    """A block Dataset's (``cell`` first) per-cell variables as rows."""
    out = {}
    for k in ds.data_vars:
        v = ds.variables[k]  # a Variable: no coordinates to build
        if "cell" in v.dims and (names is None or k in names):
            if v.dims[0] != "cell":
                v = v.transpose("cell", ...)
            out[k] = (np.asarray(v.values), tuple(v.dims[1:]))
    return out


def stored_rows(read, names: list, region: tuple, model_dims: dict, n_grid: int) -> dict:
    """Rows [cell, ...] of the stored variables ``names`` over ``region``."""
    out = {}
    n = math.prod(s.stop - s.start for s in region)
    for name in names:
        v = np.asarray(read(name, region))
        out[name] = (v.reshape((n,) + v.shape[n_grid:]), model_dims[name])
    return out


class StoreShapeError(RuntimeError):
    """A block that does not fit the store laid out from the first one (another set
    of variables, dimensions in another order, another model coordinate)."""


class ListedArray:
    """An array of a local format-2 store known from its metadata files alone (its
    ``.zarray`` parsed by zarr's own format-2 metadata class, its ``.zattrs`` as
    JSON): shape, dtype, chunks, attributes and metadata without opening it through
    zarr.  Anything else (reading, writing, resizing) opens it, once, and from then
    on every attribute is the opened array's.

    Written by hand because zarr lists a group's arrays through its event loop, each
    array's metadata files read in round trips: 16-25 ms for a store's 35 arrays
    before its first block (no consolidated metadata yet), twice a sweep, against
    about 3 ms for the files read here."""

    __slots__ = ("group", "path", "_meta", "_attrs", "_array")

    def __init__(self, group, name: str, metadata, attrs: dict):
        from types import MappingProxyType

        self.group, self.path, self._meta = group, name, metadata
        self._attrs = MappingProxyType(attrs)  # read-only: a write goes to the opened array
        self._array = None

    @classmethod
    def listing(cls, group) -> dict | None:
        """name -> ListedArray for the arrays of ``group``, as zarr's
        ``group.arrays()`` lists them (the folders holding a ``.zarray``); None where
        that is not certain (not a local format-2 group, a file unreadable): zarr
        lists them then."""
        import os

        from zarr.storage import LocalStore

        from .chunkfiles import v2_metadata

        try:
            if (not isinstance(group.store, LocalStore) or group.metadata.zarr_format != 2
                    or group.path):
                return None
            root = Path(group.store.root)
            if (root / "zarr.json").exists():
                return None
            out = {}
            with os.scandir(root) as entries:
                for e in entries:
                    if not e.is_dir():
                        continue
                    if not os.path.exists(os.path.join(e.path, ".zarray")):
                        continue  # a group, or a folder of our own
                    try:
                        attrs = json.loads((Path(e.path) / ".zattrs").read_bytes())
                    except FileNotFoundError:
                        attrs = {}
                    out[e.name] = cls(group, e.name, v2_metadata(Path(e.path), attrs), attrs)
            return out
        except Exception:  # anything unexpected: zarr's own listing
            return None

    def opened(self):
        """The zarr array itself (opened on first use) from its own metadata files, as
        it was listed: not from a group's consolidated metadata, which a resize or a
        widening since the store was finished leaves behind."""
        if self._array is None:
            import zarr

            store = self.group.store
            self._array = zarr.open_array(store=store, path=self.path, zarr_format=2,
                                          mode="r" if store.read_only else "r+")
        return self._array

    @property
    def store(self):
        return self.group.store

    @property
    def metadata(self):
        return self._array.metadata if self._array is not None else self._meta

    @property
    def attrs(self):
        return self._array.attrs if self._array is not None else self._attrs

    @property
    def shape(self) -> tuple:
        return self._array.shape if self._array is not None else tuple(self._meta.shape)

    @property
    def chunks(self) -> tuple:
        return self._array.chunks if self._array is not None else tuple(self._meta.chunks)

    @property
    def dtype(self):
        if self._array is not None:
            return self._array.dtype
        return np.dtype(self._meta.dtype.to_native_dtype())

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getattr__(self, name):
        if name.startswith("_"):  # not the array's (copying, pickling, an unset slot)
            raise AttributeError(name)
        return getattr(self.opened(), name)

    def __getitem__(self, key):
        return self.opened()[key]

    def __setitem__(self, key, value):
        self.opened()[key] = value

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.opened()[...], dtype=dtype)

    def __reduce__(self):  # pickled as listed (the opened array is opened again)
        return (ListedArray, (self.group, self.path, self._meta, dict(self._attrs)))


class CellStore:
    """The zarr group of a model's grid store, and what writes blocks into it."""

    def __init__(self, path: Path, plan, mode: str = "r+"):
        import zarr

        self.path, self.plan = Path(path), plan
        self.group = zarr.open_group(str(self.path), mode=mode)
        #: Rewrite a model coordinate that differs from a block's (a repair of a
        #: damaged coordinate) instead of refusing the block.
        self.rewrite_coords = False
        #: Keep each block's statistics (not while repairing a finished store, whose
        #: timings stay those of the run that made it).
        self.record_stats = True
        self._arrays: dict = {}
        #: The group's arrays, listed once: an array opened by name reads its
        #: metadata files again (about 2 ms each, every array of the first block and
        #: again after each growth).
        self._handles = self._listed()
        self.dims = {name: tuple(a.attrs.get("_ARRAY_DIMENSIONS", ()))
                     for name, a in self._handles.items()}
        n = len(plan.grid.dims)
        axes = set(plan.grid.dims) | {a.dim for a in plan.grid.axes}  # coordinates
        self.names = sorted(k for k, d in self.dims.items()
                            if tuple(d[:n]) == tuple(plan.grid.dims) and k not in LAYOUT_ARRAYS
                            and k not in axes)
        self.model_dims = {k: self.dims[k][n:] for k in self.names}
        self._lengths: dict = {}  # model dimension -> its length in the store
        self._coords: dict = {}  # model dimension -> its coordinate's values
        self._stats_writer = None  # (block_stats, its chunk writer, its columns)

    def _listed(self) -> dict:
        """The group's arrays (name -> array): from their metadata files where it can
        (:class:`ListedArray`), else through zarr."""
        listed = ListedArray.listing(self.group)
        return listed if listed is not None else dict(self.group.arrays())

    # ------------------------------------------------------------------ creation
    @staticmethod
    def template(plan, first, attrs: dict) -> tuple:
        """The store's Dataset of placeholders laid out from the first block, and its
        encoding (a block's cells a chunk, the model dimensions whole)."""
        from antiamp.layout import axis_coords

        from .chunks import placeholder

        shape, dims, chunk = plan.grid.shape, plan.grid.dims, plan.chunk
        data, enc = {}, {}
        for name, v in first.data_vars.items():
            if "cell" in v.dims:
                v = v.transpose("cell", ...)
                rest = v.shape[1:]
                data[name] = (tuple(dims) + v.dims[1:],
                              placeholder(tuple(shape) + rest, fill_of(v.dtype), v.dtype),
                              dict(v.attrs))
                enc[name] = {"chunks": tuple(chunk) + tuple(max(1, r) for r in rest)}
                if v.dtype.kind == "U":
                    from numcodecs import get_codec

                    enc[name]["compressors"] = (get_codec(dict(LABEL_COMPRESSOR)),)
            else:
                data[name] = v
        data["cell_done"] = (tuple(dims), placeholder(tuple(shape), False, bool),
                             {"long_name": "cell computed", "units": "1"})
        data["cell_digest"] = (tuple(dims), placeholder(tuple(shape), 0, np.uint64), {
            "long_name": "checksum of the cell's values",
            "description": "verified by every rerun and by antiamp-check"})
        for k in ("cell_done", "cell_digest"):
            enc[k] = {"chunks": tuple(chunk)}
        coords = {k: v for k, v in first.coords.items() if "cell" not in v.dims}
        ds = xr.Dataset(data, coords=axis_coords(plan.grid.axes, dims, coords))
        ds.attrs = attrs
        return ds, enc

    # ------------------------------------------------------------------ writing
    def _array(self, name):
        from .chunkfiles import ChunkFile

        if name not in self._arrays:
            a = self._handle(name)
            self._arrays[name] = (a, ChunkFile.of(a))
        return self._arrays[name]

    def _handle(self, name: str):
        """The array ``name`` as listed (listed again after a resize or a rewrite), or
        opened by name where the listing does not hold it."""
        if self._handles is None:
            self._handles = self._listed()
        return self._handles[name] if name in self._handles else self.group[name]

    def _put(self, name: str, region: tuple, values: np.ndarray) -> None:
        a, cf = self._array(name)
        pieces = cf.pieces(region) if cf is not None else None
        if pieces is not None and values.shape[len(region):] == tuple(a.shape[len(region):]):
            for at, sl in pieces:  # one chunk file each: a block's chunk(s)
                cf.write(at, values[sl])
        else:
            a[region] = values

    def fit(self, ds) -> None:
        """Grow the store's model dimensions and widen its labels so that the block
        ``ds`` fits (rare: a block longer or wider than every earlier one)."""
        from .metadata import record

        changed = False
        # The block's Variables, not its DataArrays: building a DataArray (its
        # coordinates) for each variable cost more than every check here.
        variables = ds.variables
        have = set(self.names)
        got = {k for k in ds.data_vars if "cell" in variables[k].dims}
        if got != have:
            raise StoreShapeError(f"a block's variables ({', '.join(sorted(got ^ have))} "
                                  "differ) do not match the store's first block")
        sizes: dict = {}
        for name in self.names:
            v = variables[name]
            dims = tuple(d for d in v.dims if d != "cell")
            if dims != self.model_dims[name]:
                raise StoreShapeError(f"{name}: dimensions {dims} in a block, "
                                      f"{self.model_dims[name]} in the store")
            for d, n in zip(v.dims, v.shape):
                if d != "cell" and n > sizes.get(d, 0):
                    sizes[d] = n
        for d, s in sizes.items():
            now = self._length(d)
            if s > now:
                self._grow(d, now, s, ds)
                changed = True
            elif d in variables and d in ds.coords and d in self.dims:
                values = np.asarray(variables[d].values)[:s]
                if not np.array_equal(self._coord(d)[:s], values):
                    if not self.rewrite_coords:
                        raise StoreShapeError(f"coordinate {d} of a block differs from the "
                                              "store's")
                    self._handle(d)[:s] = values
                    self._coords.pop(d, None)
        for name in self.names:
            v = ds.variables[name]
            if v.dtype.kind == "U":
                a, _ = self._array(name)
                if v.dtype.itemsize > a.dtype.itemsize:
                    self._widen(name, v.dtype)
                    changed = True
        if changed:
            self._arrays.clear()
            self._handles = None
            self._lengths.clear()
            self._coords.clear()
            record(self.path, final=False)

    def knows(self, template) -> None:
        """Take the model coordinates from ``template``, the Dataset this store was
        just laid out from (:meth:`template`): the first block would read each from
        its file again, about 1 ms a coordinate."""
        for d in {d for dims in self.model_dims.values() for d in dims}:
            if d in template.coords:
                self._coords[d] = np.asarray(template.variables[d].values)

    def _coord(self, d: str) -> np.ndarray:
        if d not in self._coords:
            # the listed array where there is one: opened by name it reads its
            # metadata again (about 5 ms a coordinate, the first block of each run)
            self._coords[d] = np.asarray(self._handle(d)[...])
        return self._coords[d]

    def _length(self, d: str) -> int:
        if d not in self._lengths:
            self._lengths[d] = 0
            for name in self.names:
                if d in self.model_dims[name]:
                    a, _ = self._array(name)
                    self._lengths[d] = a.shape[len(self.plan.grid.dims)
                                               + self.model_dims[name].index(d)]
                    break
        return self._lengths[d]

    def _grow(self, d: str, old: int, new: int, ds) -> None:
        """Resize every array along model dimension ``d`` from ``old`` to ``new``,
        padding the new part of every cell, and extend its coordinate."""
        n = len(self.plan.grid.dims)
        for name in self.names:
            if d not in self.model_dims[name]:
                continue
            a, _ = self._array(name)
            j = n + self.model_dims[name].index(d)
            shape = list(a.shape)
            shape[j] = new
            a.resize(tuple(shape))
            self._pad(a, j, old, new)
        if d in self.dims:
            c = self._handle(d)
            values = np.asarray(ds[d].values)
            if not np.array_equal(np.asarray(c[:old]), values[:old]):
                raise StoreShapeError(f"coordinate {d} of a block differs from the store's")
            c.resize((new,))
            c[:] = values[:new]
        self._arrays.clear()
        self._handles = None
        self._lengths.clear()
        self._coords.clear()

    @staticmethod
    def _pad(a, j: int, old: int, new: int) -> None:
        """Every cell's part ``old:new`` along axis ``j`` of the array ``a`` (just
        resized from ``old`` to ``new`` there) set to the padding.

        Written through zarr as one selection, zarr visits every chunk of the grid,
        each through its event loop (about 0.5 ms a chunk, paid again at each growth:
        7 ms a block of an equilibrium grid); the same files here with less: the
        chunks that hold indices on both sides of ``old`` through zarr, the chunks
        wholly beyond it straight to their files (:mod:`.chunkfiles`), and where
        those are all fill (no file, as zarr writes none) one listing of the array's
        folder removes any file they have (none, unless a killed run left one)."""
        import itertools
        import os

        from .chunkfiles import ChunkFile

        fill = fill_of(a.dtype)
        # chunk files named by one flat key (format 2's "." separator) or else zarr
        cf = ChunkFile.of(a) if (a.metadata.dimension_separator or ".") == "." else None
        c = a.chunks[j]
        edge = new if cf is None else min(new, -(-old // c) * c)  # end of old's chunk
        if edge > old:
            sel = [slice(None)] * a.ndim
            sel[j] = slice(old, edge)
            part = tuple(n if k != j else edge - old for k, n in enumerate(a.shape))
            a[tuple(sel)] = np.full(part, fill, dtype=a.dtype)
        if cf is None or edge == new:
            return
        first = edge // c  # the first chunk index along ``j`` wholly beyond ``old``
        if cf.all_fill(np.full(cf.chunks, fill, dtype=a.dtype)):
            with os.scandir(cf.root) as entries:
                for e in entries:
                    key = e.name.split(".")
                    if (len(key) == a.ndim and all(k.isdigit() for k in key)
                            and int(key[j]) >= first):
                        os.unlink(e.path)
            return
        ranges = [range(-(-n // k)) for n, k in zip(a.shape, a.chunks)]
        ranges[j] = range(first, -(-new // c))
        for at in itertools.product(*ranges):
            shape = tuple(min(k, n - i * k) for i, k, n in zip(at, a.chunks, a.shape))
            cf.write(at, np.full(shape, fill, dtype=a.dtype))

    def _widen(self, name: str, dtype) -> None:
        """Rewrite a label array with a wider fixed-width type (zarr cannot change an
        array's type in place)."""
        import zarr

        a = self._handle(name)
        values = np.asarray(a[...]).astype(dtype)
        attrs = dict(a.attrs)
        new = zarr.create_array(store=self.group.store, name=a.path, shape=a.shape,
                                chunks=a.chunks, dtype=dtype, fill_value=a.fill_value,
                                compressors=a.compressors, zarr_format=2, overwrite=True,
                                attributes=attrs)
        new[...] = values
        self._arrays.pop(name, None)
        self._handles = None

    def write(self, index: int, region: tuple, ds) -> None:
        """Block number ``index`` (cells ``region``) into its chunks; its checksums,
        then ``cell_done`` last."""
        self.fit(ds)
        shape = tuple(s.stop - s.start for s in region)
        rows = {}
        for name, (v, dims) in block_rows(ds, set(self.names)).items():
            a, _ = self._array(name)
            want = tuple(a.shape[len(region):])
            if v.shape[1:] != want:  # shorter than the store: padded
                full = np.full((v.shape[0],) + want, fill_of(a.dtype), dtype=a.dtype)
                full[(slice(None),) + tuple(slice(0, s) for s in v.shape[1:])] = v
                v = full
            elif v.dtype != a.dtype:
                v = v.astype(a.dtype)
            rows[name] = (v, dims)  # as stored: the checksum reads it back this way
            self._put(name, region, v.reshape(shape + want))
        stats = [k for k in SUMMED_ATTRS if k in ds.attrs]
        if stats and self.record_stats:
            self._stats_row(index, stats, ds.attrs)
        from .chunks import cells_of

        cells = cells_of(region, self.plan.grid.shape)
        self._put("cell_digest", region, cell_digests(rows, cells).reshape(shape))
        self._put("cell_done", region, np.ones(shape, bool))

    def _stats_row(self, index: int, stats: list, attrs) -> None:
        """Block ``index``'s statistics into its row of ``block_stats``: the array
        opened once a store (opening it read its metadata files again, each block),
        the row, one whole chunk, straight to its file."""
        from .chunkfiles import ChunkFile

        if self._stats_writer is None:
            a = self._stats(stats)
            self._stats_writer = (a, ChunkFile.of(a), json.loads(a.attrs["stats"]))
        a, cf, names = self._stats_writer
        row = [float(attrs[k]) if k in attrs else 0.0 for k in names]
        at = cf.coords((slice(index, index + 1),)) if cf is not None else None
        if at is not None:
            cf.write(at, np.asarray([row]))
        else:
            a[index] = row

    def _stats(self, stats: list | None = None):
        """The per-block statistics (``.antiamp/block_stats``: the store's own folder,
        which readers pass by); created for ``stats`` where missing, else None."""
        import zarr

        from .metadata import OWN, own_dir

        path = self.path / OWN / STATS
        if (path / ".zarray").exists():
            return zarr.open_array(str(path), mode="r+" if stats else "r")
        if stats is None:
            return None
        own_dir(self.path)
        a = zarr.create_array(str(path), shape=(len(self.plan.blocks()), len(stats)),
                              chunks=(1, len(stats)), dtype=float, fill_value=0.0,
                              zarr_format=2, attributes={"stats": json.dumps(stats)})
        return a

    def arrays(self) -> dict:
        """The store's arrays as listed when it was opened (name -> zarr array)."""
        return dict(self._handles)

    def summed_attrs(self) -> dict:
        """The per-block statistics summed over the grid (attributes of its Dataset)."""
        a = self._stats()
        if a is None:
            return {}
        stats = json.loads(a.attrs.get("stats", "[]"))
        total = np.asarray(a[...]).sum(axis=0)
        return {k: (int(round(t)) if k != "solve_seconds" else float(t))
                for k, t in zip(stats, total)}


#: Templates of at most this many chunks an array are written by xarray as they are
#: (zarr looks at each chunk of a placeholder, about 0.2 ms a chunk, and writes
#: none); larger ones as one block resized (:func:`write_template`).
DIRECT_TEMPLATE_CHUNKS = 8


def write_template(ds, encoding: dict, target: Path) -> None:
    """Write a store template into the new directory ``target``: its placeholder
    variables (:func:`antiamp.sweeps.chunks.placeholder`, the fill everywhere) as
    metadata alone, every other variable whole.

    A template of many chunks is written as one block: xarray encodes the Dataset
    cut to the first chunk along the grid's dimensions, the variables along them
    that are not placeholders (coordinates, per-cell inputs) are encoded whole
    beside it, and zarr resizes each placeholder array to the grid (its metadata
    alone: no chunk of the fill is written).  The files are those xarray writes of
    the whole template (tested byte for byte), in a fraction of the time and
    without dask: xarray writes only dask arrays lazily, and a dask placeholder per
    variable cost the dask import and a graph (0.5-0.6 s a sweep); NumPy
    placeholders make zarr look at every chunk.
    """
    import zarr
    from antiamp.output import to_zarr_files, write_objects
    from zarr.storage import MemoryStore

    from .chunks import is_placeholder

    held = [k for k, v in ds.variables.items() if is_placeholder(v.data)]
    cut: dict = {}  # the grid's dimensions: chunked shorter than their length
    for k in held:
        for d, n, c in zip(ds[k].dims, ds[k].shape, encoding[k]["chunks"]):
            if c < n:
                cut[d] = c
    n_chunks = math.prod(-(-ds.sizes[d] // c) for d, c in cut.items())
    if n_chunks <= DIRECT_TEMPLATE_CHUNKS:
        to_zarr_files(ds, target, consolidated=False, encoding=encoding)
        return
    objects: dict = {}
    ds.isel({d: slice(0, c) for d, c in cut.items()}).to_zarr(
        MemoryStore(objects), mode="w", zarr_format=2, consolidated=False, encoding=encoding)
    whole = [k for k, v in ds.variables.items() if k not in held and set(v.dims) & cut.keys()]
    if whole:
        rest = xr.Dataset({k: ds.variables[k] for k in whole if k in ds.data_vars},
                          coords=ds.coords, attrs=ds.attrs)
        more: dict = {}
        rest.to_zarr(MemoryStore(more), mode="w", zarr_format=2, consolidated=False,
                     encoding={k: e for k, e in encoding.items() if k in rest.data_vars})
        for k in whole:
            for key in [key for key in objects if key.startswith(f"{k}/")]:
                del objects[key]
            objects.update((key, b) for key, b in more.items() if key.startswith(f"{k}/"))
    group = zarr.open_group(MemoryStore(objects), mode="r+", zarr_format=2)
    for k in held:
        if set(ds[k].dims) & cut.keys():
            group[k].resize(ds[k].shape)
    write_objects(objects, target)


def create_store(ds, encoding: dict, store: Path, log) -> None:
    """Write the template ``ds`` (placeholders: only metadata and fill) beside the
    target and rename it into place, so that a kill during creation leaves no
    half-made store (only a temporary that the next finished run removes); an
    earlier store of ours is replaced only then."""
    import os
    import shutil
    import uuid

    from .metadata import record

    store = Path(store)
    tmp = store.with_name(f".{store.name}.creating-{uuid.uuid4().hex[:8]}")
    write_template(ds, encoding, tmp)
    record(tmp, final=False)  # the plan's second copy (sweeps/metadata.py)
    if store.exists():
        from antiamp.output import carry_foreign

        old = store.with_name(f".{store.name}.old-{uuid.uuid4().hex[:8]}")
        carry_foreign(store, tmp)  # what is not antiamp's stays in the store
        os.replace(store, old)
        os.replace(tmp, store)
        shutil.rmtree(old)
        log(f"replaced {store}, which held a different sweep (sweep.overwrite=true)")
    else:
        os.replace(tmp, store)
