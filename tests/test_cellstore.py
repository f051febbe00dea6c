"""A model's grid store written in place: model dimensions that grow as longer blocks
arrive and labels that widen give the store an in-memory assembly of the same blocks
gives (xarray's outer join, the oracle), and each cell's checksum does not change
as the store grows."""

import numpy as np
import pytest
import xarray as xr
import zarr

from antiamp.sweeps import blocks
from antiamp.sweeps.driver import verify
from antiamp.sweeps.cellstore import cell_digests, extents, fill_of

GRID = {"model": {"name": "panel"}, "run": {"n_instances": 1000},
        "sweep": {"axes": {"judge": {"b": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]}},
                  "cells_per_block": 2}}
#: Each block's length along the model dimension ``item`` and width of its labels:
#: the second block is longer and wider than the first, the third shorter.
LENGTHS = [2, 4, 3, 1]
WIDTHS = [1, 5, 3, 2]


def _interrupted_after_two_blocks(cfg, store, monkeypatch):
    """Run ``cfg``'s grid into ``store`` and interrupt it (Ctrl-C) as its third block
    starts."""
    real, calls = blocks.run_block, {"n": 0}

    def dying(*a, **k):
        calls["n"] += 1
        if calls["n"] > 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(blocks, "run_block", dying)
    with pytest.raises(KeyboardInterrupt):
        blocks.run_grid_store(cfg, store, progress=False, log=lambda *a: None)
    monkeypatch.setattr(blocks, "run_block", real)


def _block(start: int, stop: int) -> xr.Dataset:
    k = start // 2
    n, m = stop - start, LENGTHS[k]
    rng = np.random.default_rng(start)
    cells = np.arange(start, stop)
    label = np.array(["abcde"[:WIDTHS[k]] + str(c) for c in cells]).astype(f"<U{WIDTHS[k] + 1}")
    ds = xr.Dataset({
        "x": (("cell", "item"), rng.normal(size=(n, m))),
        "flag": (("cell", "item"), rng.random((n, m)) < 0.5),
        "count": (("cell", "item"), rng.integers(0, 9, (n, m))),
        "label": (("cell",), label),
        "total": (("cell",), rng.normal(size=n), {"long_name": "a total", "units": "1"}),
    }, coords={"item": np.arange(m)})
    ds.attrs = {"title": "a test grid", "kernel_calls": 1}
    return ds


@pytest.fixture
def fake_model(monkeypatch):
    monkeypatch.setattr(blocks, "run_block", lambda name, base, spec, a, b: _block(a, b))


def test_a_store_that_grows_and_widens_is_the_in_memory_assembly(fake_model, tmp_path):
    plan = blocks.plan_grid(GRID)
    assert [b - a for a, b in plan.blocks()] == [2, 2, 2, 1]
    store = tmp_path / "s.zarr"
    ds = blocks.run_grid_store(GRID, store, progress=False, log=lambda *a: None,
                               plan=plan).load()
    want = blocks.assemble(plan, [_block(a, b) for a, b in plan.blocks()])
    for name in want.variables:
        x, y = want[name].values, ds[name].values
        assert x.shape == y.shape and x.dtype == y.dtype, (name, x.dtype, y.dtype)
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name
    assert ds.sizes["item"] == 4 and ds["label"].dtype == np.dtype("<U6")
    # labels without Blosc's byte shuffle (also once widened), numbers with it
    group = zarr.open_group(str(store), mode="r")
    assert [c.shuffle for c in group["label"].compressors] == [0]
    assert [c.shuffle for c in group["x"].compressors] == [1]
    assert ds.attrs["kernel_calls"] == 4 and ds.attrs["complete"] == 1
    # The checksums written before the store grew still hold, and a rerun finds it sound.
    assert verify(blocks.ModelBlocks(plan), store, repair=False, log=lambda *a: None).ok
    msgs = []
    blocks.run_grid_store(GRID, store, progress=False, log=msgs.append, plan=plan)
    assert any("is complete; its 4 blocks verified" in m for m in msgs), msgs


def test_a_padded_value_altered_in_a_grown_store_is_found(fake_model, tmp_path):
    plan = blocks.plan_grid(GRID)
    store = tmp_path / "s.zarr"
    blocks.run_grid_store(GRID, store, progress=False, log=lambda *a: None, plan=plan)
    ref = xr.open_zarr(store).load()
    zarr.open_group(str(store), mode="r+")["x"][0, 3] = 1.0  # cell 0 had 2 items
    report = verify(blocks.ModelBlocks(plan), store, repair=False, log=lambda *a: None)
    assert [d[0] for d in report.damaged] == ["b[0:2]"]
    blocks.run_grid_store(GRID, store, progress=False, log=lambda *a: None, plan=plan)
    xr.testing.assert_identical(xr.open_zarr(store).load().drop_attrs(),
                                ref.drop_attrs())


def _rows(x, label):
    return {"x": (x, ("item",)), "label": (label, ())}


def test_cell_checksums_ignore_padding_and_label_width_not_values():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(5, 3))
    x[1, 2] = np.nan  # a cell whose own extent is 2
    x[2] = np.nan  # a cell with nothing along the dimension
    label = np.array(["a", "bb", "", "ccc", "d"])
    cells = np.arange(10, 15)
    d = cell_digests(_rows(x, label), cells)
    wider = np.full((5, 6), np.nan)
    wider[:, :3] = x
    assert np.array_equal(cell_digests(_rows(wider, label.astype("<U9")), cells), d)
    assert list(extents(_rows(x, label))["item"]) == [3, 2, 0, 3, 3]
    assert d.dtype == np.uint64 and (d & np.uint64(1)).all()  # never 0, the fill
    # Any value inside a cell's extent, and the cell's place in the grid, count.
    for k, change in enumerate([lambda a, s: a.__setitem__((0, 0), 0.5),
                                lambda a, s: a.__setitem__((1, 2), 0.0),
                                lambda a, s: s.__setitem__(3, "ccd")]):
        a, s = x.copy(), label.copy()
        change(a, s)
        e = cell_digests(_rows(a, s), cells)
        assert (e != d).sum() == 1, k
    assert not np.array_equal(cell_digests(_rows(x, label), cells + 1), d)
    # Two labels that join to the same text are still told apart.
    two = {"a": (np.array([["ab", "c"]]), ("k",)), }
    other = {"a": (np.array([["a", "bc"]]), ("k",)), }
    assert cell_digests(two, np.arange(1)) != cell_digests(other, np.arange(1))


def test_an_interrupted_design_resumes_to_the_in_memory_design(tmp_path, monkeypatch):
    """A sensitivity design (cells along ``point``) of a model without fused grids:
    killed after two blocks, resumed, it is the design computed in memory, indices
    included."""
    from antiamp.testing import same

    cfg = {"model": {"name": "messages"}, "judge": {"kind": "logit"},
           "run": {"n_instances": 2000},
           "sweep": {"design": "saltelli", "n_points": 4, "cells_per_block": 5,
                     "axes": {"judge": {"mu": {"uniform": [-1, 1]}},
                              "messages": {"kappa_r": {"uniform": [0, 1]}}}}}
    store = tmp_path / "d.zarr"
    _interrupted_after_two_blocks(cfg, store, monkeypatch)
    assert int(np.asarray(zarr.open_group(str(store))["cell_done"][...]).sum()) == 10
    msgs = []
    ds = blocks.run_grid_store(cfg, store, progress=False, log=msgs.append).load()
    assert any("resuming" in m for m in msgs), msgs
    mem = blocks.run_grid(cfg, progress=False)
    assert "S1_amp" in ds and not same(mem, ds)


def test_a_block_that_does_not_fit_the_store_is_named_and_the_store_kept(monkeypatch,
                                                                        tmp_path):
    """A model whose cells differ in shape (one block without a variable) stops the
    grid with the engine's error naming the model, the cells and the variable, and the
    blocks already written stay in the store."""
    def run_block(name, base, spec, a, b):
        ds = _block(a, b)
        return ds.drop_vars("total") if a == 4 else ds

    monkeypatch.setattr(blocks, "run_block", run_block)
    plan = blocks.plan_grid(GRID)
    store = tmp_path / "s.zarr"
    with pytest.raises(blocks.EngineError) as err:
        blocks.run_grid_store(GRID, store, progress=False, log=lambda *a: None, plan=plan)
    msg = str(err.value)
    assert "model panel" in msg and "cells 4..5" in msg and "total" in msg, msg
    assert "sweep.overwrite=true" in msg
    done = np.asarray(zarr.open_group(str(store), mode="r")["cell_done"][...])
    assert done[:4].all() and not done[4:].any()


# ------------------------------------------------------------ the NumPy reference
# The checksum as it was first written, in NumPy (about ten passes over a block): the
# compiled one (kernels/digest.py) must give the same bits, or every store written
# before would fail its verification.
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _ref_fmix(x):
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def _ref_words(a):
    n = a.shape[0]
    if a.dtype.kind == "U":
        w = max(1, a.dtype.itemsize // 4)
        return np.ascontiguousarray(a).view(np.uint32).reshape(n, -1, w).astype(np.uint64)
    if a.dtype.kind == "b":
        return a.reshape(n, -1, 1).astype(np.uint64)
    u = np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")
    return u.reshape(n, -1, 1).astype(np.uint64)


def _ref_extents(rows):
    from antiamp.sweeps.cellstore import fill_of

    ext = {}
    for a, dims in rows.values():
        if not dims:
            continue
        held = ~(np.isnan(a) if a.dtype.kind == "f" else a == fill_of(a.dtype))
        for j, d in enumerate(dims):
            other = tuple(k for k in range(1, a.ndim) if k != j + 1)
            m = held.any(axis=other) if other else held
            last = np.where(m.any(axis=1), m.shape[1] - np.argmax(m[:, ::-1], axis=1), 0)
            ext[d] = np.maximum(ext.get(d, 0), last)
    return ext


def _ref_digests(rows, cells):
    from antiamp.sweeps.cellstore import _name_word

    n = len(cells)
    acc = np.zeros(n, np.uint64)
    ext = _ref_extents(rows)
    with np.errstate(over="ignore"):
        for name in sorted(rows):
            a, dims = rows[name]
            rest = a.shape[1:]
            pos = np.zeros(rest, np.uint64)
            inside = np.ones((n,) + rest, bool)
            for j, d in enumerate(dims):
                shape = (1,) * j + (rest[j],) + (1,) * (len(rest) - j - 1)
                pos = (pos << np.uint64(20)) + np.arange(rest[j], dtype=np.uint64).reshape(shape)
                inside &= (np.arange(rest[j]).reshape((1,) + shape)
                           < ext[d].reshape((n,) + (1,) * len(rest)))
            words = _ref_words(a)
            key = ((pos.reshape(-1, 1) << np.uint64(12))
                   + np.arange(words.shape[2], dtype=np.uint64).reshape(1, -1))
            key = _ref_fmix(key ^ _name_word(name))
            keep = inside.reshape(n, -1, 1)
            if a.dtype.kind == "U":
                keep = keep & (words != 0)
            acc += np.where(keep, _ref_fmix(words ^ key), np.uint64(0)).sum(
                axis=(1, 2), dtype=np.uint64)
        h = _ref_fmix(np.asarray(cells, np.uint64) * np.uint64(0x9E3779B97F4A7C15)
                      + np.uint64(0x632BE59BD9B4E019))
        h = _ref_fmix(acc ^ h)
    return h | np.uint64(1)


@pytest.mark.parametrize("seed", range(5))
def test_the_compiled_checksum_is_the_numpy_one_bit_for_bit(seed):
    """Every dtype a store holds (float64/32, int64/32, bool, labels of one and more
    code points), variables along zero to three model dimensions and of more than 64
    elements a cell, padding (NaN of any payload, -1,
    False, "") at the ends of some cells and in the middle of others; labels that change
    from cell to cell and labels in runs of equal cells; a block of more cells than a
    tile of the compiled loops (the last seed)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60)) if seed < 4 else 700
    x = rng.normal(size=(n, 4, 3))
    x[rng.random((n, 4, 3)) < 0.3] = np.nan
    x[: n // 3, 2:] = np.nan  # shorter cells along "item"
    bits = x.view(np.uint64)  # NaNs of the other sign and of other payloads are padding
    bits[rng.random((n, 4, 3)) < 0.1] = np.uint64(0xFFF8000000000001)
    bits[rng.random((n, 4, 3)) < 0.1] = np.uint64(0x7FF0000000000002)
    x[rng.random((n, 4, 3)) < 0.05] = -np.inf  # infinities are not
    count = rng.integers(-1, 9, (n, 4)).astype(np.int32)
    flag = rng.random((n, 3)) < 0.4
    label = np.array([["", "a", "bcd", "ef"][k] for k in rng.integers(0, 4, n * 4)]
                     ).reshape(n, 4).astype("<U7")
    with np.errstate(invalid="ignore"):  # a signalling NaN's cast
        xf, half = x[:, :, 0].astype(np.float32), x[:, 0, :].astype(np.float16)
    cube = rng.normal(size=(n, 4, 3, 5))
    cube[rng.random(cube.shape) < 0.3] = np.nan
    cube[: n // 2, :, :, 3:] = np.nan  # shorter cells along "rank"
    initial = np.array([["", "a", "b"][k] for k in rng.integers(0, 3, n * 4)]
                       ).reshape(n, 4).astype("<U1")
    rows = {"x": (x, ("item", "side")), "xf": (xf, ("item",)),
            "count": (count, ("item",)), "n": (rng.integers(0, 1 << 40, n), ()),
            "flag": (flag, ("side",)), "label": (label, ("item",)),
            "total": (rng.normal(size=n), ()),
            "half": (half, ("side",)),
            "code": (rng.integers(0, 3, (n, 5)).astype(np.uint16), ("slot",)),
            "cube": (cube, ("item", "side", "rank")), "initial": (initial, ("item",)),
            "long": (rng.normal(size=(n, 5, 14)), ("rank", "step"))}  # > 64 elements
    # labels in runs of equal cells (as a block's are: a few values, in grid order), so
    # that most cells take the previous cell's sum and extents whole
    kinds = np.array(["", "pure", "mixed P"])[rng.integers(0, 3, (4, 2, 2))]
    rows["kind"] = (kinds[np.sort(rng.integers(0, 4, n))].astype("<U7"), ("item", "side"))
    rows["whole"] = (rng.normal(size=(n, 3)), ("whole",))  # no padding anywhere
    # Cells shorter along each dimension: every variable padded beyond a length drawn
    # for the cell (NaNs of any payload), so that the extents vary by cell and the
    # padding beyond them must be left out.
    length = {"item": rng.integers(0, 5, n), "side": rng.integers(0, 4, n),
              "rank": rng.integers(0, 6, n), "step": rng.integers(0, 15, n),
              "whole": np.full(n, 3)}
    for name, (a, dims) in rows.items():
        if a.dtype.kind == "u":  # unsigned integers have no padding
            continue
        beyond = np.zeros(a.shape, bool)
        for j, d in enumerate(dims):
            idx = np.arange(a.shape[j + 1]).reshape((1,) * (j + 1) + (-1,)
                                                   + (1,) * (a.ndim - j - 2))
            beyond |= idx >= length[d].reshape((n,) + (1,) * (a.ndim - 1))
        a[beyond] = fill_of(a.dtype)
        if a.dtype == np.float64:
            odd = beyond & (rng.random(a.shape) < 0.3)
            a.view(np.uint64)[odd] = np.uint64(0xFFF8000000000003)
    ext = _ref_extents(rows)
    assert any((ext[d] < rows["cube"][0].shape[1 + j]).any() for j, d in
               enumerate(("item", "side", "rank"))), "no cell shorter than the block"
    cells = rng.integers(0, 1 << 30, n)
    want = _ref_digests(rows, cells)
    assert np.array_equal(cell_digests(rows, cells), want)
    for d, e in ext.items():
        assert np.array_equal(extents(rows)[d], e), d


def _padded_files(root, pad, *, dtype, fill, chunk, old, new, stale):
    """The files of arrays [cell, item] (7 cells in chunks of 3, ``chunk`` items a
    chunk) holding data up to ``old`` items, resized to ``new`` and padded by ``pad``."""
    g = zarr.open_group(str(root), mode="w", zarr_format=2)
    a = g.create_array("v", shape=(7, old), chunks=(3, chunk), dtype=dtype, fill_value=fill)
    rng = np.random.default_rng(1)
    a[...] = rng.integers(1, 9, (7, old)).astype(dtype)
    if stale:  # a chunk file beyond ``old`` that a killed run left
        (root / "v" / f"0.{-(-new // chunk) - 1}").write_bytes((root / "v" / "0.0").read_bytes())
    a.resize((7, new))
    pad(a, 1, old, new)
    return {p.name: p.read_bytes() for p in sorted((root / "v").iterdir())}, np.asarray(a[...])


@pytest.mark.parametrize("dtype,fill", [("f8", np.nan), ("i8", None), ("i8", -1), ("bool", None),
                                        ("<U3", "")])
@pytest.mark.parametrize("chunk,old,new,stale", [(1, 1, 3, False), (2, 2, 5, True),
                                                 (2, 3, 6, True), (3, 4, 5, False)])
def test_padding_a_grown_array_gives_the_files_of_one_zarr_write(tmp_path, dtype, fill, chunk,
                                                                 old, new, stale):
    # The reference: the padding written through zarr as one selection over the grid.
    from antiamp.sweeps.cellstore import CellStore, fill_of

    def through_zarr(a, j, old, new):
        part = (a.shape[0], new - old)
        a[:, old:new] = np.full(part, fill_of(a.dtype), dtype=a.dtype)

    want = _padded_files(tmp_path / "zarr", through_zarr, dtype=dtype, fill=fill,
                         chunk=chunk, old=old, new=new, stale=stale)
    got = _padded_files(tmp_path / "pad", CellStore._pad, dtype=dtype, fill=fill,
                        chunk=chunk, old=old, new=new, stale=stale)
    assert got[0] == want[0]
    assert np.array_equal(got[1], want[1], equal_nan=dtype == "f8")
    assert (got[1][:, old:] == fill_of(np.dtype(dtype))).all() or np.isnan(got[1][:, old:]).all()


def test_a_store_in_an_earlier_default_s_blocks_is_resumed_and_checked_in_its_own(
        tmp_path, monkeypatch):
    """A model's default block changed since a store was written (the equilibrium
    model's exact payoffs: 4,096 cells, now more): the store, killed after two blocks,
    resumes in its own blocks to the grid computed in memory, antiamp-check verifies
    and repairs it in them; a block size the sweep names is another sweep, refused."""
    from antiamp.models.equilibrium import model as eq
    from antiamp.sweeps import spec
    from antiamp.sweeps.check import check_store

    cfg = {"model": {"name": "equilibrium", "p": 0.6},
           "sweep": {"axes": {"model": {"c_e": {"linspace": [0.0, 1.0, 4]}},
                              "judge": {"b": {"linspace": [0.0, 1.0, 5]}}}}}
    store = tmp_path / "e.zarr"
    monkeypatch.setattr(eq, "EXACT_CELLS_PER_BLOCK", 5)  # the earlier default
    spec._LAST_PLAN.clear()
    assert blocks.plan_grid(cfg).cells_per_block == 5
    _interrupted_after_two_blocks(cfg, store, monkeypatch)
    monkeypatch.setattr(eq, "EXACT_CELLS_PER_BLOCK", 65_536)  # today's
    spec._LAST_PLAN.clear()
    assert blocks.plan_grid(cfg).cells_per_block == 20
    msgs = []
    ds = blocks.run_grid_store(cfg, store, progress=False, log=msgs.append).load()
    assert any("resuming" in m for m in msgs), msgs
    assert ds.attrs["cells_per_block"] == 5
    assert zarr.open_group(str(store), mode="r")["cell_done"].chunks == (1, 5)
    mem = blocks.run_grid(cfg, progress=False)
    for k in mem.data_vars:
        assert np.array_equal(mem[k].values, ds[k].values, equal_nan=mem[k].dtype.kind == "f"
                              ), k
    n, bad = check_store(store, log=lambda *a: None)
    assert (n, bad) == (4, 0)
    x = zarr.open_group(str(store), mode="r+")["x_P"]
    x[2, 0, 0, 0] = x[2, 0, 0, 0] + 1.0  # a cell of the third block damaged
    assert check_store(store, log=lambda *a: None)[1] == 1
    check_store(store, repair=True, log=lambda *a: None)
    assert check_store(store, log=lambda *a: None)[1] == 0
    named = {**cfg, "sweep": {**cfg["sweep"], "cells_per_block": 10}}
    spec._LAST_PLAN.clear()
    with pytest.raises(blocks.EngineError, match="different run"):
        blocks.run_grid_store(named, store, progress=False, log=lambda *a: None)


def test_the_first_block_reads_no_coordinate_back_from_its_file(fake_model, tmp_path,
                                                                monkeypatch):
    """The store just laid out from the first block knows its model coordinates: its
    first write compares the block's with them without opening a coordinate's file."""
    from antiamp.sweeps.cellstore import CellStore

    read, writing = [], {"on": False}
    real_get, real_write = zarr.Array.__getitem__, CellStore.write

    def get(self, key):
        if writing["on"]:
            read.append(self.path)
        return real_get(self, key)

    def write(self, *a, **k):
        writing["on"] = True
        try:
            return real_write(self, *a, **k)
        finally:
            writing["on"] = False

    monkeypatch.setattr(zarr.Array, "__getitem__", get)
    monkeypatch.setattr(CellStore, "write", write)
    grid = {**GRID, "sweep": {**GRID["sweep"], "axes": {"judge": {"b": [0.1, 0.2]}}}}
    store = tmp_path / "s.zarr"
    blocks.run_grid_store(grid, store, progress=False, log=lambda *a: None)
    assert "item" not in read, read
    assert np.array_equal(xr.open_zarr(store)["item"].values, [0, 1])


# ------------------------------------------------------------ arrays from their files
def _meta_json(a):
    import json

    return json.dumps(a.metadata.to_dict(), sort_keys=True, default=str)


def test_arrays_listed_from_their_files_are_zarrs_listing(tmp_path):
    """A group's arrays read from their metadata files: the names zarr lists (not its
    sub-groups, nor folders and files of other kinds), each with zarr's shape, dtype,
    chunks, path, attributes and metadata; reads, writes and resizes through the
    listed array are the zarr array's; a store zarr does not keep in local files is
    listed by zarr."""
    import copy
    import pickle
    import warnings

    from antiamp.sweeps.cellstore import ListedArray

    g = zarr.open_group(str(tmp_path / "g.zarr"), mode="w", zarr_format=2)
    g.create_array("x", shape=(5, 3), chunks=(2, 3), dtype="f8", fill_value=np.nan,
                   attributes={"_ARRAY_DIMENSIONS": ["cell", "item"], "units": "1"})
    g.create_array("label", shape=(5,), chunks=(5,), dtype="<U7", fill_value="")
    g.create_array("flag", shape=(4, 2), chunks=(4, 1), dtype=bool, fill_value=False)
    g.create_array("count", shape=(3,), chunks=(2,), dtype="i4", fill_value=-1)
    g.create_group("sub").create_array("inner", shape=(2,), dtype="f8")
    (tmp_path / "g.zarr" / ".ours").mkdir()
    (tmp_path / "g.zarr" / ".ours" / "notes").write_text("not an array")
    (tmp_path / "g.zarr" / "loose").write_text("a file")
    g = zarr.open_group(str(tmp_path / "g.zarr"), mode="r+")
    listed = ListedArray.listing(g)
    with warnings.catch_warnings():  # zarr names what is not of its hierarchy, and passes
        warnings.simplefilter("ignore")
        want = dict(g.arrays())
    assert sorted(listed) == sorted(want) == ["count", "flag", "label", "x"]
    for name, a in want.items():
        b = listed[name]
        assert isinstance(b, ListedArray) and b._array is None
        assert (b.shape, b.dtype, b.chunks, b.path, b.ndim) == (a.shape, a.dtype, a.chunks,
                                                                 a.path, a.ndim), name
        assert dict(b.attrs) == dict(a.attrs) and _meta_json(b) == _meta_json(a), name
        assert b._array is None, name  # none of that opened it
    x = listed["x"]
    with pytest.raises(TypeError):  # not written silently into a copy
        x.attrs["units"] = "2"
    x[1:3] = np.arange(6.0).reshape(2, 3)
    assert np.array_equal(zarr.open_array(str(tmp_path / "g.zarr" / "x"))[1:3],
                          np.arange(6.0).reshape(2, 3))
    x.resize((7, 3))
    assert x.shape == (7, 3) == zarr.open_array(str(tmp_path / "g.zarr" / "x")).shape
    assert x.metadata.shape == (7, 3)  # the opened array's from then on
    assert np.isnan(x[6]).all() and x.fill_value != x.fill_value
    assert np.asarray(x).shape == (7, 3)
    x.attrs["units"] = "2"  # opened: zarr's attributes, written
    assert zarr.open_array(str(tmp_path / "g.zarr" / "x")).attrs["units"] == "2"
    back = pickle.loads(pickle.dumps(listed["count"]))
    assert back.shape == (3,) and list(back[...]) == [-1, -1, -1]
    assert copy.copy(listed["label"]).dtype == np.dtype("<U7")
    mem = zarr.open_group(zarr.storage.MemoryStore(), mode="w", zarr_format=2)
    mem.create_array("x", shape=(2,), dtype="f8")
    assert ListedArray.listing(mem) is None


def test_a_listed_array_is_its_files_not_stale_consolidated_metadata(tmp_path):
    """An array resized since the group's metadata were consolidated (a finished store
    being repaired) is listed and opened as its own files say, as zarr's listing of
    the group would not."""
    from antiamp.sweeps.cellstore import ListedArray

    g = zarr.open_group(str(tmp_path / "g.zarr"), mode="w", zarr_format=2)
    g.create_array("x", shape=(4, 3), chunks=(2, 3), dtype="f8", fill_value=np.nan)
    zarr.consolidate_metadata(str(tmp_path / "g.zarr"))
    zarr.open_array(str(tmp_path / "g.zarr" / "x"), mode="r+").resize((6, 3))
    g = zarr.open_group(str(tmp_path / "g.zarr"), mode="r+")
    assert dict(g.arrays())["x"].shape == (4, 3)  # zarr: the consolidated, stale
    x = ListedArray.listing(g)["x"]
    assert x.shape == (6, 3) and x.opened().shape == (6, 3)
    x[4:6] = 1.0
    assert np.array_equal(zarr.open_array(str(tmp_path / "g.zarr" / "x"))[4:6], np.ones((2, 3)))


def test_a_model_store_lists_its_arrays_from_their_files(fake_model, tmp_path, monkeypatch):
    """A store that grows and widens (its arrays listed again after each) lists them
    from their files every time, and holds what the same grid written with zarr's own
    listing holds."""
    from antiamp.sweeps.cellstore import ListedArray

    real, got = ListedArray.listing.__func__, []

    def listing(cls, group):
        got.append(real(cls, group))
        return got[-1]

    monkeypatch.setattr(ListedArray, "listing", classmethod(listing))
    plan = blocks.plan_grid(GRID)
    a = blocks.run_grid_store(GRID, tmp_path / "a.zarr", progress=False,
                              log=lambda *a: None, plan=plan).load()
    assert len(got) >= 3 and all(x is not None for x in got), got
    monkeypatch.setattr(ListedArray, "listing", classmethod(lambda cls, group: None))
    b = blocks.run_grid_store(GRID, tmp_path / "b.zarr", progress=False,
                              log=lambda *a: None, plan=plan).load()
    for name in b.variables:
        x, y = a[name].values, b[name].values
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name


def test_values_with_fewer_dimension_names_than_axes_are_refused_by_name():
    """Rows whose dimension names do not match their axes (a store's damaged
    ``_ARRAY_DIMENSIONS``) are refused with the variable named: the compiled loops
    would read the extents out of bounds (it crashed the process)."""
    with pytest.raises(ValueError, match=r"v: 1 axes beyond the cells' but 0 dimension"):
        cell_digests({"v": (np.zeros((5, 2), "f4"), ())}, np.arange(5))
    with pytest.raises(ValueError, match=r"w: 1 axes beyond the cells' but 2 dimension"):
        extents({"w": (np.zeros((5, 2)), ("a", "b"))})
