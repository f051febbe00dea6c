"""Block chunks written straight to their files (antiamp.sweeps.chunkfiles) are the
files zarr itself writes: the same bytes, the same missing (all-fill) chunks; and a
sweep's template written as one block and resized is the one xarray writes whole."""

from limits import limit as wall_limit
import json

import os
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

from antiamp.sweeps import chunkfiles
from antiamp.sweeps.engine import run_sweep
from antiamp.sweeps.metadata import read_record


def _files(store: Path) -> dict:
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*"))
            if p.is_file() and not p.name.startswith(".z")}


def _sweep(cfg, where, by_hand, monkeypatch):
    with monkeypatch.context() as m:
        if not by_hand:
            m.setattr(chunkfiles.ChunkFile, "of", classmethod(lambda cls, a: None))
            m.setattr(chunkfiles.ChunkFile, "at", classmethod(lambda cls, path: None))
        return run_sweep(cfg, where, progress=False, log=lambda *a: None)


@pytest.mark.parametrize("axes,per_block", [
    ({"model": {"rho": {"linspace": [0, 1, 7]}}}, 3),                # a clipped last chunk
    ({"model": {"rho": [0.0, 0.5, 1.0]}, "judge": {"b": [0.0, 0.3, 1.0]}}, 2),
    ({"model": {"rho": [0.2, 0.9]}, "judge": {"b": [0.5]}}, 1),
])
def test_block_chunks_by_hand_are_the_bytes_zarr_writes(tmp_path, monkeypatch, axes, per_block):
    # p = 0 and b = 0 leave whole chunks of fill (NaN metrics, zero counts): zarr
    # writes no file for those, and neither may the hand-written path.
    cfg = {"sweep": {"axes": axes, "cells_per_block": per_block, "plot": False},
           "model": {"p": 0.0}, "run": {"n_instances": 3000}}
    zarr_ds = _sweep(cfg, tmp_path / "zarr", False, monkeypatch)
    hand_ds = _sweep(cfg, tmp_path / "hand", True, monkeypatch)
    a, b = (_files(tmp_path / w / "sweep.zarr") for w in ("zarr", "hand"))
    chunks = [k for k in a if "/" in k]
    assert len(chunks) > 20 and a.keys() == b.keys()
    missing = [k for k in zarr.open_group(str(tmp_path / "zarr" / "sweep.zarr")).array_keys()
               if not any(c.startswith(k + "/") for c in chunks)]
    assert missing, "no all-fill array in this grid: the deletion path went untested"
    for k in a:
        assert a[k] == b[k], k
    for v in zarr_ds.data_vars:
        assert np.array_equal(zarr_ds[v].values, hand_ds[v].values, equal_nan=True), v


def test_a_rewritten_chunk_replaces_the_file_and_an_all_fill_one_removes_it(tmp_path):
    g = zarr.open_group(str(tmp_path / "s.zarr"), mode="w", zarr_format=2)
    a = g.create_array("x", shape=(5, 2), chunks=(2, 2), dtype="f8", fill_value=np.nan)
    cf = chunkfiles.ChunkFile.of(a)
    at = cf.coords((slice(4, 5),))  # the clipped last chunk
    assert at == (2, 0)
    cf.write(at, np.array([[1.0, 2.0]]))
    cf.write((0, 0), np.arange(4.0).reshape(2, 2))
    cf.write((0, 0), np.arange(4.0).reshape(2, 2) + 10)
    assert np.array_equal(a[...], [[10, 11], [12, 13], [np.nan] * 2, [np.nan] * 2, [1, 2]],
                          equal_nan=True)
    cf.write((0, 0), np.full((2, 2), np.nan))
    assert not (tmp_path / "s.zarr" / "x" / "0.0").exists()
    assert not [p for p in (tmp_path / "s.zarr" / "x").iterdir() if "partial" in p.name]


@pytest.mark.parametrize("dtype,fill,value", [("f8", np.nan, 1.5), ("<U3", "", "a"),
                                              ("bool", False, True), ("i8", -1, 0)])
def test_a_chunk_with_one_value_off_the_sample_is_not_all_fill(tmp_path, dtype, fill, value):
    """The sample tested first only shortcuts "not all fill": a chunk whose one value
    lies between the sampled elements is written, and its value read back."""
    g = zarr.open_group(str(tmp_path / "s.zarr"), mode="w", zarr_format=2)
    a = g.create_array("x", shape=(1000, 3), chunks=(1000, 3), dtype=dtype, fill_value=fill)
    cf = chunkfiles.ChunkFile.of(a)
    step = max(1, a.size // chunkfiles.SAMPLE)
    chunk = np.full((1000, 3), fill, dtype=dtype)
    assert cf.all_fill(chunk)
    chunk.reshape(-1)[step + 1] = value  # not on the sample's grid
    assert not cf.all_fill(chunk)
    cf.write((0, 0), chunk)
    assert a[...].reshape(-1)[step + 1] == chunk.reshape(-1)[step + 1]
    assert (tmp_path / "s.zarr" / "x" / "0.0").exists()


def test_what_is_not_one_whole_chunk_is_left_to_zarr(tmp_path):
    g = zarr.open_group(str(tmp_path / "s.zarr"), mode="w", zarr_format=2)
    a = g.create_array("x", shape=(6, 2), chunks=(3, 2), dtype="i8")
    cf = chunkfiles.ChunkFile.of(a)
    assert cf.coords((slice(0, 3),)) == (0, 0)
    assert cf.coords((slice(1, 4),)) is None      # across two chunks
    assert cf.coords((slice(0, 2),)) is None      # part of one
    assert cf.coords((slice(0, 3), slice(0, 1))) is None
    v3 = zarr.open_group(str(tmp_path / "v3.zarr"), mode="w", zarr_format=3)
    assert chunkfiles.ChunkFile.of(v3.create_array("y", shape=(4,), chunks=(2,), dtype="f8")) is None
    o = g.create_array("o", shape=(4,), chunks=(2,), dtype="c16")
    assert chunkfiles.ChunkFile.of(o) is None


@pytest.mark.parametrize("dtype,fill", [("f8", np.nan), ("<U5", ""), ("bool", False),
                                        ("i8", -1), ("u8", 0), ("f4", None)])
def test_a_writer_from_the_metadata_file_alone_writes_what_the_arrays_writer_does(
        tmp_path, dtype, fill):
    """:meth:`ChunkFile.at` reads only the array's ``.zarray``: the same chunks, fill and
    file bytes as the writer of the array opened through zarr; None where there is no
    format-2 array or its chunks are not ours to write."""
    rng = np.random.default_rng(3)
    chunks = [((0, 0), rng.integers(0, 9, (2, 3)).astype(dtype)),  # a whole chunk
              ((2, 0), rng.integers(0, 9, (1, 3)).astype(dtype))]  # the clipped last one
    files = {}
    for how in ("of", "at"):
        g = zarr.open_group(str(tmp_path / f"{how}.zarr"), mode="w", zarr_format=2)
        a = g.create_array("x", shape=(5, 3), chunks=(2, 3), dtype=dtype, fill_value=fill)
        cf = (chunkfiles.ChunkFile.of(a) if how == "of"
              else chunkfiles.ChunkFile.at(tmp_path / f"{how}.zarr" / "x"))
        assert cf is not None and cf.chunks == (2, 3) and cf.shape == (5, 3)
        assert cf.dtype == np.dtype(dtype)
        for at, v in chunks:
            cf.write(at, v)
            assert np.array_equal(a[2 * at[0]:2 * at[0] + len(v)], v)
        files[how] = {p.name: p.read_bytes() for p in (tmp_path / f"{how}.zarr" / "x").iterdir()
                      if not p.name.startswith(".z")}
    assert files["of"] == files["at"] and len(files["at"]) == 2
    assert chunkfiles.ChunkFile.at(tmp_path / "at.zarr" / "missing") is None
    v3 = zarr.open_group(str(tmp_path / "v3.zarr"), mode="w", zarr_format=3)
    v3.create_array("y", shape=(4,), chunks=(2,), dtype="f8")
    assert chunkfiles.ChunkFile.at(tmp_path / "v3.zarr" / "y") is None
    g = zarr.open_group(str(tmp_path / "of.zarr"), mode="r+", zarr_format=2)
    g.create_array("c", shape=(4,), chunks=(2,), dtype="c16")
    assert chunkfiles.ChunkFile.at(tmp_path / "of.zarr" / "c") is None


def test_a_fused_sweep_opens_no_array_through_zarr_for_its_blocks(tmp_path, monkeypatch):
    """Every block of a fused grid is one whole chunk of each array: written by writers
    made from the metadata files, no array opened through zarr (0.5 ms each, ~60 a
    sweep); the same values as the arrays written through zarr."""
    from antiamp.sweeps import engine

    opened = []
    real = engine._stored

    def counted(group, name):
        opened.append(name)
        return real(group, name)

    cfg = {"sweep": {"axes": {"model": {"rho": [0.2, 0.5, 0.9]}, "judge": {"b": [0.3, 0.7]}},
                     "cells_per_block": 2, "plot": False}, "run": {"n_instances": 2000}}
    with monkeypatch.context() as m:
        m.setattr(engine, "_stored", counted)
        hand = run_sweep(cfg, tmp_path / "hand", progress=False, log=lambda *a: None)
    assert opened == []
    zarr_ds = _sweep(cfg, tmp_path / "zarr", False, monkeypatch)
    for v in zarr_ds.data_vars:
        assert np.array_equal(zarr_ds[v].values, hand[v].values, equal_nan=True), v


@pytest.mark.parametrize("fill", ["", None, "x"])
def test_label_chunks_by_hand_are_the_bytes_zarr_writes(tmp_path, fill):
    # Fixed-width labels: their code points compressed, as zarr encodes them; a chunk of
    # the fill (an empty label, or "x") leaves no file; a narrower label is widened.
    values = [((0, 0), np.array([["pure", "mixed"], ["", "a"]])),
              ((1, 0), np.array([["x", "x"], ["x", "x"]])),
              ((1, 0), np.array([["", ""], ["", ""]])),
              ((2, 0), np.array([["\u00e9\u6f22", ""]]))]  # the clipped last chunk
    files = {}
    for how in ("zarr", "hand"):
        g = zarr.open_group(str(tmp_path / f"{how}.zarr"), mode="w", zarr_format=2)
        a = g.create_array("s", shape=(5, 2), chunks=(2, 2), dtype="<U7", fill_value=fill)
        cf = chunkfiles.ChunkFile.of(a)
        assert cf is not None
        for at, v in values:
            if how == "hand":
                cf.write(at, v)
            else:
                a[2 * at[0]:2 * at[0] + len(v)] = v
        files[how] = {p.name: p.read_bytes() for p in (tmp_path / f"{how}.zarr" / "s").iterdir()}
        assert (zarr.open_array(str(tmp_path / f"{how}.zarr" / "s"))[4, 0]) == "\u00e9\u6f22"
    assert files["hand"] == files["zarr"]
    assert ("1.0" in files["hand"]) == (fill == "x")  # the last write: all empty labels


def test_a_model_grid_by_hand_is_the_bytes_zarr_writes(tmp_path, monkeypatch):
    # The equilibrium model's store: labels, a model dimension that grows (the padding
    # of the chunks beyond the old length), cells where it did not grow.
    cfg = {"model": {"name": "equilibrium", "p": 0.6},
           "sweep": {"axes": {"model": {"c_e": [0.0, 0.2, 0.6, 0.9]},  # 2 equilibria at 0.6, 0.4
                              "judge": {"b": [0.0, 0.4, 0.8, 1.0]}},
                     "cells_per_block": 3, "plot": False}}
    zarr_ds = _sweep(cfg, tmp_path / "zarr", False, monkeypatch)
    hand_ds = _sweep(cfg, tmp_path / "hand", True, monkeypatch)
    a, b = (_files(tmp_path / w / "sweep.zarr") for w in ("zarr", "hand"))
    assert a.keys() == b.keys() and any(k.startswith("kind/") for k in a)
    kind = json.loads((tmp_path / "hand" / "sweep.zarr" / "kind" / ".zarray").read_text())
    assert kind["chunks"][-1] < kind["shape"][-1], "no block grew the store: padding untested"
    for k in a:
        assert a[k] == b[k], k
    for v in zarr_ds.data_vars:
        assert zarr_ds[v].equals(hand_ds[v]), v


def test_a_failed_chunk_write_leaves_no_file_and_no_temporary(tmp_path, monkeypatch):
    g = zarr.open_group(str(tmp_path / "s.zarr"), mode="w", zarr_format=2)
    a = g.create_array("x", shape=(4,), chunks=(2,), dtype="f8", fill_value=np.nan)
    cf = chunkfiles.ChunkFile.of(a)

    def full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(chunkfiles.os, "replace", full)
    with pytest.raises(OSError):
        cf.write((1,), np.array([1.0, 2.0]))
    assert [f for f in os.listdir(tmp_path / "s.zarr" / "x") if not f.startswith(".z")] == []
    assert np.isnan(a[...]).all()


def _store_bytes(store: Path) -> dict:
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*"))
            if p.is_file()}


def _same_but_creation(a: dict, b: dict) -> None:
    """The files of two stores: the same bytes, but for the times they record."""
    assert a.keys() == b.keys() and len(a) > 20
    for k in a:
        if k == ".antiamp/.zattrs":  # the metadata record: compared below
            continue
        if k.startswith(".antiamp/block_stats/") and "/.z" not in k:
            continue  # the blocks' statistics hold their solvers' times
        if k in (".zattrs", ".zmetadata"):
            x, y = json.loads(a[k]), json.loads(b[k])
            for d in (x, y):
                for t in ("created", "solve_seconds", "run_seconds"):  # times
                    (d.get("metadata", {}).get(".zattrs", d)).pop(t, None)
            assert x == y, k
        else:
            assert a[k] == b[k], k


_GRID = {"sweep": {"axes": {"model": {"rho": {"linspace": [0, 1, 7]}},
                            "judge": {"b": [0.0, 0.5]}}, "cells_per_block": 3, "plot": False},
         "model": {"p": 0.0}, "run": {"n_instances": 2000}}
_DESIGN = {"sweep": {"axes": {"model": {"rho": {"uniform": [0, 1]}, "p": {"uniform": [0.5, 1]}}},
                     "design": "sobol", "n_points": 16, "cells_per_block": 7, "plot": False},
           "run": {"n_instances": 1000}}
_BLOCKS = {"model": {"name": "messages"}, "judge": {"kind": "logit"},
           "run": {"n_instances": 2000},
           "sweep": {"axes": {"judge": {"mu": [-1.0, 0.0, 1.0]},
                              "messages": {"kappa_r": [0.0, 0.4, 0.8]}},
                     "cells_per_block": 1, "plot": False}}


@pytest.mark.parametrize("cfg", [_GRID, _DESIGN, _BLOCKS], ids=["grid", "design", "blocks"])
def test_a_template_written_as_one_block_resized_is_the_whole_template(tmp_path, monkeypatch,
                                                                       cfg):
    """A store's template of many blocks (written as one block, resized: no dask) is
    the template xarray writes whole, byte for byte; and so is the finished sweep."""
    from antiamp.sweeps import cellstore
    from antiamp.sweeps.chunks import is_placeholder

    templates = []
    real = cellstore.write_template

    def spy(ds, enc, target):
        templates.append((ds, enc))
        real(ds, enc, target)

    monkeypatch.setattr(cellstore, "write_template", spy)
    stores = {}
    for how, limit in (("whole", 10**9), ("block", 0)):
        monkeypatch.setattr(cellstore, "DIRECT_TEMPLATE_CHUNKS", limit)
        run_sweep(cfg, tmp_path / how, progress=False, log=lambda *a: None)
        stores[how] = _store_bytes(tmp_path / how / "sweep.zarr")
    _same_but_creation(stores["whole"], stores["block"])
    records = [read_record(tmp_path / how / "sweep.zarr")[0] for how in ("whole", "block")]
    for r in records:
        for t in ("created", "solve_seconds", "run_seconds"):
            r[".zattrs"].pop(t, None)
    assert json.dumps(records[0], sort_keys=True) == json.dumps(records[1], sort_keys=True)
    # The templates themselves (before any block is written), both ways.
    ds, enc = templates[0]
    assert any(is_placeholder(v.data) for v in ds.variables.values())
    for how, limit in (("t-whole", 10**9), ("t-block", 0)):
        monkeypatch.setattr(cellstore, "DIRECT_TEMPLATE_CHUNKS", limit)
        real(ds, enc, tmp_path / how)
    a, b = _store_bytes(tmp_path / "t-whole"), _store_bytes(tmp_path / "t-block")
    assert a == b
    # Only the coordinates and per-cell inputs hold chunks: no placeholder's fill.
    held = [k for k, v in ds.variables.items() if is_placeholder(v.data)]
    assert held and not [k for k in a if k.split("/")[0] in held and "/.z" not in f"/{k}"]
    # Read back, the template is the fill everywhere, with the grid's shape.
    back = xr.open_zarr(tmp_path / "t-block", chunks=None, consolidated=False)
    for k in held:
        assert back[k].shape == ds[k].shape
        np.testing.assert_array_equal(np.asarray(back[k].values), np.asarray(ds[k].values))


def test_a_large_sweep_lays_out_its_store_without_dask(tmp_path):
    """A grid of many blocks is laid out without importing dask (a fresh process)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from antiamp.sweeps.engine import run_sweep\n"
        "cfg = {'sweep': {'axes': {'model': {'rho': {'linspace': [0, 1, 12]}}},"
        " 'cells_per_block': 1, 'plot': False}, 'run': {'n_instances': 1000}}\n"
        f"run_sweep(cfg, {str(tmp_path)!r}, progress=False, log=lambda *a: None)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=wall_limit(600))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
    assert int(np.asarray(zarr.open_group(str(tmp_path / "sweep.zarr"))["cell_done"][...]).sum()) == 12


def test_only_placeholders_are_left_unwritten(tmp_path, monkeypatch):
    """A per-cell input constant over the grid (a broadcast of another array) is data:
    written whole by the one-block layout, read back everywhere; the placeholder beside
    it reads back as its fill; the files are those of the whole template."""
    from antiamp.sweeps import cellstore
    from antiamp.sweeps.chunks import is_placeholder, placeholder

    shape = (6, 4)
    const = np.broadcast_to(np.array(0.5), shape)
    held = placeholder(shape + (3,), np.nan, float)
    assert is_placeholder(held) and not is_placeholder(const)
    ds = xr.Dataset({"x": (("a", "b", "k"), held), "c": (("a", "b"), const),
                     "d": (("a", "b"), np.arange(24.0).reshape(shape))},
                    coords={"a": np.arange(6) * 0.1, "b": list("pqrs"), "k": [1, 2, 3]})
    enc = {"x": {"chunks": (1, 4, 3)}, "c": {"chunks": (1, 4)}, "d": {"chunks": (1, 4)}}
    for how, limit in (("whole", 10**9), ("block", 0)):
        monkeypatch.setattr(cellstore, "DIRECT_TEMPLATE_CHUNKS", limit)
        cellstore.write_template(ds, enc, tmp_path / how)
    assert _store_bytes(tmp_path / "whole") == _store_bytes(tmp_path / "block")
    back = xr.open_zarr(tmp_path / "block", chunks=None, consolidated=False)
    np.testing.assert_array_equal(back["c"].values, 0.5)
    np.testing.assert_array_equal(back["d"].values, ds["d"].values)
    assert back["x"].shape == (6, 4, 3) and np.isnan(back["x"].values).all()
    assert not [k for k in _store_bytes(tmp_path / "block") if k.startswith("x/") and "/.z" not in f"/{k}"]
