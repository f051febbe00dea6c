"""Damage to a grid store's metadata and whole arrays, as well as to its chunks, is
detected, rebuilt from what is sound, and leaves the undamaged store, bit for bit.

Fifteen kinds of damage (five to chunks and values, ten to metadata and arrays)
on finished grids of three models (the baseline engine's, and the generic engine's
signals and loop grids): ``antiamp-check`` must find each, ``--repair`` (or a rerun
of the sweep) must give back the store an undamaged run wrote: every variable's
bytes, every chunk file, every metadata document (parsed) and every attribute.
What legitimately differs is named: ``.antiamp/replaced-*/``, the copies of the
files a repair replaced.  A store whose plan has no sound source left is refused
with the reason and left untouched, file for file.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

from antiamp.sweeps.check import check_store
from antiamp.sweeps.engine import run_sweep
from antiamp.sweeps.metadata import OWN, PlanLost, read_record
from cli_runner import run_command

MODELS = {
    "baseline": {"run": {"n_instances": 4000, "seed": 11},
                 "sweep": {"axes": {"model": {"rho": [0.1, 0.4, 0.8]}, "judge": {"b": [0.2, 0.9]}},
                           "cells_per_block": 2, "store": "baseline.zarr", "plot": False}},
    "signals": {"model": {"name": "signals"}, "run": {"n_instances": 2000, "seed": 5},
                "sweep": {"axes": {"signals": {"eta": [0.0, 0.3, 0.6]}}, "cells_per_block": 1,
                          "store": "signals.zarr", "plot": False}},
    "loop": {"model": {"name": "loop"}, "loop": {"paths": 4, "batch": 50, "rounds": 3},
             "sweep": {"axes": {"loop": {"rounds": [2, 3]}}, "cells_per_block": 1,
                       "store": "loop.zarr", "plot": False}},
}
#: A second array to delete: one with no chunk file (all its values are the fill, so
#: deleting it loses only metadata) where the model's store has one, else a coordinate.
OTHER_ARRAY = {"baseline": "rho", "signals": "collapse", "loop": "lock_in"}


def _quiet(*a, **k):
    pass


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    d = tmp_path_factory.mktemp("finished")
    out = {}
    for name, cfg in MODELS.items():
        run_sweep(cfg, d, progress=False, log=_quiet)
        out[name] = d / cfg["sweep"]["store"]
    return out


def _copy(finished, model, tmp_path) -> Path:
    dst = tmp_path / finished[model].name
    shutil.copytree(finished[model], dst)
    return dst


# ----------------------------------------------------------------------------- damage
def _chunk(store: Path, var: str = "amp") -> Path:
    return sorted(p for p in (store / var).iterdir() if not p.name.startswith("."))[0]


def _flip(p: Path):
    b = bytearray(p.read_bytes())
    b[len(b) // 2] ^= 0x5A
    p.write_bytes(bytes(b))


def _truncate(p: Path):
    p.write_bytes(p.read_bytes()[: max(1, p.stat().st_size // 2)])


def _zero(p: Path):
    p.write_bytes(bytes(p.stat().st_size))


def _garble(p: Path):
    b = bytearray(p.read_bytes())
    b[len(b) // 3: len(b) // 3 + 8] = b"\x00#garbl"
    p.write_bytes(bytes(b))


def _edit_value(store: Path):
    a = zarr.open_group(str(store), mode="r+")["amp"]
    a[(0,) * a.ndim] = 0.123


def _cut_dims(p: Path):
    attrs = json.loads(p.read_text())
    attrs["_ARRAY_DIMENSIONS"] = attrs["_ARRAY_DIMENSIONS"][:-1]
    p.write_text(json.dumps(attrs))


def _attrs_update(store: Path, **kw):
    zarr.open_group(str(store), mode="r+").attrs.update(**kw)


DAMAGE = {
    # chunks and values
    "chunk deleted": lambda s: _chunk(s).unlink(),
    "chunk bytes flipped": lambda s: _flip(_chunk(s)),
    "chunk truncated": lambda s: _truncate(_chunk(s)),
    "chunk zeroed": lambda s: _zero(_chunk(s)),
    "value edited": _edit_value,
    # metadata and whole arrays
    "root .zattrs emptied": lambda s: (s / ".zattrs").write_bytes(b""),
    "root .zattrs truncated": lambda s: _truncate(s / ".zattrs"),
    ".zmetadata garbled": lambda s: _garble(s / ".zmetadata"),
    ".zmetadata deleted": lambda s: (s / ".zmetadata").unlink(),
    "array .zarray garbled": lambda s: _garble(s / "amp" / ".zarray"),
    "array .zattrs garbled": lambda s: _garble(s / "amp" / ".zattrs"),
    # well-formed, but one dimension name short of the array's axes
    "array dimensions cut": lambda s: _cut_dims(s / "amp" / ".zattrs"),
    "complete=0 in the attributes": lambda s: _attrs_update(s, complete=0),
    "array deleted": lambda s: shutil.rmtree(s / "amp"),
    "another array deleted": None,  # per model: OTHER_ARRAY
}
METADATA_KINDS = list(DAMAGE)[5:]


def _damage(store: Path, model: str, kind: str):
    if kind == "another array deleted":
        a = store / OTHER_ARRAY[model]
        if model != "baseline":
            assert not [p for p in a.iterdir() if not p.name.startswith(".")]
        shutil.rmtree(a)
    else:
        DAMAGE[kind](store)


# ----------------------------------------------------------------------------- comparison
def _snapshot(store: Path) -> dict:
    """Everything an undamaged run wrote: chunk files byte for byte, metadata
    documents parsed, the metadata record's contents (not the copies a repair keeps)."""
    snap = {}
    for p in sorted(store.rglob("*")):
        rel = p.relative_to(store)
        if p.is_dir() or rel.parts[0] == OWN:  # the record: compared below
            continue
        if p.name.startswith(".z"):
            snap[rel.as_posix()] = json.dumps(json.loads(p.read_text()), sort_keys=True)
        else:
            snap[rel.as_posix()] = p.read_bytes()
    rec = read_record(store)
    assert isinstance(rec, tuple) and rec[1], rec  # a sound record of the finished store
    snap["record"] = json.dumps(rec[0], sort_keys=True)
    return snap


def _assert_undamaged(store: Path, ref: Path):
    have, want = _snapshot(store), _snapshot(ref)
    assert set(have) == set(want), set(have) ^ set(want)
    assert [k for k in want if have[k] != want[k]] == []
    for consolidated in (True, False):
        a = xr.open_zarr(store, consolidated=consolidated).load()
        b = xr.open_zarr(ref, consolidated=consolidated).load()
        xr.testing.assert_identical(a, b)  # values, coordinates, every attribute
        for name in b.variables:
            assert a[name].dtype == b[name].dtype
            assert np.asarray(a[name].values).tobytes() == np.asarray(b[name].values).tobytes()
    # What a repair may add: only copies of what it replaced, in its own folder.
    extra = {p.name for p in (store / OWN).iterdir()} - {p.name for p in (ref / OWN).iterdir()}
    assert all(x.startswith("replaced-") for x in extra), extra


def _hashes(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# ----------------------------------------------------------------------------- tests
CASES = [(m, k) for m in MODELS for k in DAMAGE]
#: The default tier: every kind on the signals grid, the metadata kinds on every
#: grid; the chunk kinds on the baseline and loop grids (which test_integrity.py
#: covers on the baseline and panel grids) under ``slow``.
FAST = [pytest.param(m, k, marks=[pytest.mark.slow] if m != "signals" and k not in METADATA_KINDS
                     else []) for m, k in CASES]


@pytest.mark.parametrize("model, kind", FAST)
def test_damage_is_detected_and_repaired_bit_for_bit(finished, tmp_path, model, kind):
    store = _copy(finished, model, tmp_path)
    assert check_store(store, log=_quiet)[1] == 0
    _damage(store, model, kind)
    lines = []
    n, bad = check_store(store, log=lines.append)
    assert bad >= 1, lines
    assert any("damaged" in x or "not repaired" in x for x in lines), lines
    lines = []
    check_store(store, repair=True, log=lines.append)
    if kind == "complete=0 in the attributes":  # every store is written in place
        assert "damaged complete marker: 0 although every block is finished; marked complete" \
            in lines, lines
    elif kind in METADATA_KINDS:  # the repair says what it rebuilt
        assert any(x.startswith("rebuilt ") for x in lines), lines
    _assert_undamaged(store, finished[model])
    assert check_store(store, log=_quiet)[1] == 0


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("kind", ["root .zattrs emptied", ".zmetadata garbled", "array deleted",
                                  "array .zarray garbled", "complete=0 in the attributes"])
def test_a_rerun_of_the_sweep_repairs_the_metadata_before_resuming(finished, tmp_path,
                                                                   model, kind):
    store = _copy(finished, model, tmp_path)
    _damage(store, model, kind)
    log = []
    run_sweep(MODELS[model], tmp_path, progress=False, log=log.append)
    _assert_undamaged(store, finished[model])
    if kind == "complete=0 in the attributes":  # every store is written in place
        assert any("resuming" in x for x in log), log  # the blocks' marker: a resume
    else:
        assert any(x.startswith("rebuilt") for x in log), log


@pytest.mark.parametrize("model", list(MODELS))
def test_the_record_rebuilds_a_store_whose_attributes_and_consolidated_metadata_are_both_lost(
        finished, tmp_path, model):
    store = _copy(finished, model, tmp_path)
    (store / ".zattrs").write_bytes(b"")
    _garble(store / ".zmetadata")
    _garble(store / "amp" / ".zattrs")
    damaged = {rel: (store / rel).read_bytes() for rel in (".zattrs", ".zmetadata", "amp/.zattrs")}
    lines = []
    assert check_store(store, log=lines.append)[1] >= 3
    check_store(store, repair=True, log=lines.append)
    rebuilt = [x for x in lines if x.startswith("rebuilt")]
    assert any(x.startswith("rebuilt .zattrs") and "metadata record" in x for x in rebuilt), lines
    _assert_undamaged(store, finished[model])
    # The files replaced, kept byte for byte in the store's own folder (a Zarr group).
    (kept,) = (store / OWN).glob("replaced-*")
    copies = zarr.open_group(str(kept), mode="r").attrs["replaced"]
    assert {k: v["text"].encode() for k, v in copies.items()} == damaged


@pytest.mark.parametrize("model", list(MODELS))
def test_a_store_whose_plan_is_lost_is_refused_and_left_untouched(finished, tmp_path, model):
    store = _copy(finished, model, tmp_path)
    (store / ".zattrs").write_bytes(b"")
    _garble(store / ".zmetadata")
    _garble(store / OWN / ".zattrs")
    before = _hashes(tmp_path)
    with pytest.raises(PlanLost, match="plan is lost"):
        check_store(store, log=_quiet)
    with pytest.raises(PlanLost, match="plan is lost"):
        check_store(store, repair=True, log=_quiet)
    r = run_command("antiamp-check", ["--repair", str(store)], tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "plan is lost" in r.stderr and "left as it is" in r.stderr
    assert "Traceback" not in r.stderr
    assert _hashes(tmp_path) == before


def test_antiamp_check_command_names_and_rebuilds_damaged_metadata(finished, tmp_path):
    store = _copy(finished, "signals", tmp_path)
    (store / ".zattrs").write_bytes(b"")
    shutil.rmtree(store / "amp_gap")

    def check(*args):
        return run_command("antiamp-check", [*args, str(store)], tmp_path)

    bad = check()
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "damaged metadata .zattrs: unreadable; not repaired" in bad.stdout
    assert "damaged metadata amp_gap/.zarray: missing; not repaired" in bad.stdout
    fixed = check("--repair")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "rebuilt .zattrs (unreadable) from the store's metadata record" in fixed.stdout
    assert "sound now" in fixed.stdout
    _assert_undamaged(store, finished["signals"])
    again = check()
    assert again.returncode == 0 and "sound" in again.stdout


def test_antiamp_check_cut_short_by_its_reader_ends_quietly(finished, tmp_path):
    """``antiamp-check STORE | head -1``: the output closed by its reader ends the
    command with status 141 (as SIGPIPE ends a Unix tool), without a traceback."""
    import subprocess

    from limits import limit

    store = _copy(finished, "signals", tmp_path)
    p = subprocess.Popen([shutil.which("antiamp-check"), str(store)], cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # before the command has written anything
    with p.stderr:
        err = p.stderr.read().decode()
    assert p.wait(timeout=limit(300)) == 141, err
    assert "Traceback" not in err and "Exception ignored" not in err, err


def test_a_store_written_before_records_is_rebuilt_from_its_consolidated_metadata(
        finished, tmp_path):
    store = _copy(finished, "loop", tmp_path)
    shutil.rmtree(store / OWN)  # as an earlier version wrote it
    _truncate(store / ".zattrs")
    _garble(store / "amp" / ".zarray")
    lines = []
    assert check_store(store, log=lines.append)[1] >= 2
    check_store(store, repair=True, log=lines.append)
    assert "rebuilt .zattrs (unreadable) from the consolidated metadata" in " ".join(lines)
    _assert_undamaged(store, finished["loop"])  # the record written since included


def test_a_folder_of_that_name_that_antiamp_did_not_write_is_never_written_into(
        finished, tmp_path):
    store = _copy(finished, "signals", tmp_path)
    shutil.rmtree(store / OWN)
    (store / OWN).mkdir()
    (store / OWN / "notes.txt").write_text("mine")
    (store / ".zattrs").write_bytes(b"")
    before = _hashes(store)
    r = run_command("antiamp-check", ["--repair", str(store)], tmp_path)
    assert r.returncode == 2 and "is not antiamp's" in r.stderr, r.stdout + r.stderr
    assert _hashes(store) == before


def test_a_damaged_store_of_ours_can_still_be_replaced_on_request(finished, tmp_path):
    store = _copy(finished, "signals", tmp_path)
    (store / ".zattrs").write_bytes(b"")
    _garble(store / ".zmetadata")
    _garble(store / OWN / ".zattrs")  # its plan lost: only sweep.overwrite helps
    cfg = {**MODELS["signals"], "sweep": {**MODELS["signals"]["sweep"], "overwrite": True}}
    run_sweep(cfg, tmp_path, progress=False, log=_quiet)
    assert check_store(store, log=_quiet)[1] == 0


def test_an_interrupted_baseline_sweep_with_damaged_attributes_resumes_to_the_same_store(
        tmp_path, monkeypatch):
    """Before the sweep finishes its store has only the record written at creation
    (and no consolidated metadata): that is what rebuilds its attributes."""
    from antiamp.sweeps import engine

    real, calls = engine.write_block, []

    def cut(*a, **k):
        if len(calls) == 1:
            raise KeyboardInterrupt
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(engine, "write_block", cut)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(MODELS["baseline"], tmp_path, progress=False, log=_quiet)
    monkeypatch.setattr(engine, "write_block", real)
    store = tmp_path / "baseline.zarr"
    assert not (store / ".zmetadata").exists() and read_record(store)[1] is False
    # The same interrupted run, undamaged, resumed: the store to end with (the
    # finished fixture's was created at another time).
    shutil.copytree(store, tmp_path / "undamaged" / store.name)
    run_sweep(MODELS["baseline"], tmp_path / "undamaged", progress=False, log=_quiet)
    (store / ".zattrs").write_bytes(b"")
    lines = []
    assert check_store(store, log=lines.append)[1] >= 1
    assert "damaged metadata .zattrs: unreadable; not repaired" in lines
    log = []
    run_sweep(MODELS["baseline"], tmp_path, progress=False, log=log.append)
    assert any(x.startswith("rebuilt .zattrs") for x in log), log
    assert any(x.startswith("resuming") and "2 of 3 blocks left" in x for x in log), log
    _assert_undamaged(store, tmp_path / "undamaged" / store.name)


@pytest.mark.parametrize("model, args", [
    ("baseline", ["sweep.axes.model.rho=[0.1,0.4]", "sweep.axes.judge.b=[0.2,0.9]",
                  "sweep.cells_per_block=2"]),
    ("signals", ["model=signals", "sweep.axes.signals.eta=[0.0,0.3,0.6]",
                 "sweep.cells_per_block=1"]),
])
def test_the_sweep_command_rerun_on_damaged_metadata_rebuilds_it_and_resumes(tmp_path, model,
                                                                            args):
    store = tmp_path / "s.zarr"
    argv = [*args, "run.n_instances=2000", "sweep.plot=false", f"sweep.store={store}",
            "hydra.run.dir=run"]
    first = run_command("antiamp-sweep", argv, tmp_path)
    assert first.returncode == 0, first.stderr
    shutil.copytree(store, tmp_path / "undamaged" / store.name)
    (store / ".zattrs").write_bytes(b"")
    shutil.rmtree(store / "amp")
    again = run_command("antiamp-sweep", argv, tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "rebuilt .zattrs (unreadable) from the store's metadata record" in again.stdout
    _assert_undamaged(store, tmp_path / "undamaged" / store.name)
