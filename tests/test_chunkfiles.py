"""Block chunks written straight to their files (antiamp.sweeps.chunkfiles) are the
files zarr itself writes: the same bytes, the same missing (all-fill) chunks; and a
sweep's template laid out from NumPy fill arrays is the one from dask placeholders."""

import json

import os
from pathlib import Path

import numpy as np
import pytest
import zarr

from antiamp.sweeps import chunkfiles, engine
from antiamp.sweeps.engine import run_sweep
from antiamp.sweeps.metadata import read_record


def _files(store: Path) -> dict:
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*"))
            if p.is_file() and not p.name.startswith(".z")}


def _sweep(cfg, where, by_hand, monkeypatch):
    with monkeypatch.context() as m:
        if not by_hand:
            m.setattr(chunkfiles.ChunkFile, "of", classmethod(lambda cls, a: None))
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
    s = g.create_array("s", shape=(4,), chunks=(2,), dtype="<U3", fill_value="")
    assert chunkfiles.ChunkFile.of(s) is None


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


def test_a_template_from_numpy_fill_arrays_is_the_one_from_dask_placeholders(tmp_path,
                                                                             monkeypatch):
    cfg = {"sweep": {"axes": {"model": {"rho": {"linspace": [0, 1, 7]}},
                              "judge": {"b": [0.0, 0.5]}}, "cells_per_block": 3, "plot": False},
           "model": {"p": 0.0}, "run": {"n_instances": 2000}}
    stores, real = {}, engine._template
    from antiamp.sweeps import chunks

    for how, limit in (("numpy", chunks.NUMPY_TEMPLATE_BYTES), ("dask", 0)):
        monkeypatch.setattr(chunks, "NUMPY_TEMPLATE_BYTES", limit)
        seen = []

        def spy(*a, **k):
            ds, enc = real(*a, **k)
            seen.append(any(v.chunks is not None for v in ds.variables.values()))
            return ds, enc

        monkeypatch.setattr(engine, "_template", spy)
        run_sweep(cfg, tmp_path / how, progress=False, log=lambda *a: None)
        assert seen == [how == "dask"]
        store = tmp_path / how / "sweep.zarr"
        stores[how] = {str(p.relative_to(store)): p.read_bytes()
                       for p in sorted(store.rglob("*")) if p.is_file()}
    a, b = stores["numpy"], stores["dask"]
    assert a.keys() == b.keys() and len(a) > 100
    for k in a:
        if k == ".antiamp/.zattrs":  # the metadata record: the same, but for the time
            continue                 # of creation (compared below)
        if k in (".zattrs", ".zmetadata"):  # the creation time differs
            x, y = json.loads(a[k]), json.loads(b[k])
            for d in (x, y):
                (d.get("metadata", {}).get(".zattrs", d)).pop("created")
            assert x == y, k
        else:
            assert a[k] == b[k], k
    records = [read_record(tmp_path / how / "sweep.zarr")[0] for how in ("numpy", "dask")]
    for r in records:
        r[".zattrs"].pop("created")
    assert json.dumps(records[0], sort_keys=True) == json.dumps(records[1], sort_keys=True)
