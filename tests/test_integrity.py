"""Damaged stores are detected, named and repaired to the undamaged store, bit for bit.

Each kind of damage a disk, a copy or a careless hand does to a finished grid
store (a chunk deleted, bytes flipped, a value altered, the ``complete`` flag
reset, a coordinate overwritten, a checksum lost) is applied to a finished
store; ``antiamp-check`` must report it (exit 1) and its ``--repair``, or a
rerun of the sweep, must give back exactly the store an undamaged run wrote.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

from antiamp.sweeps.check import CheckError, check_store
from antiamp.sweeps.engine import run_sweep
from cli_runner import run_command

BASELINE = {"run": {"n_instances": 4000, "seed": 11},
            "sweep": {"axes": {"model": {"rho": [0.1, 0.4, 0.8]}, "judge": {"b": [0.2, 0.9]}},
                      "cells_per_block": 2, "store": "s.zarr", "plot": False}}
PANEL = {"model": {"name": "panel"}, "run": {"n_instances": 2000, "seed": 5},
         "sweep": {"axes": {"panel": {"size": [1, 3]}, "judge": {"b": [0.3, 0.8]}},
                   "cells_per_block": 1, "store": "p.zarr", "plot": False}}


def _quiet(*a, **k):
    pass


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """Finished stores and their loaded reference copies."""
    d = tmp_path_factory.mktemp("finished")
    out = {}
    for name, cfg in (("baseline", BASELINE), ("panel", PANEL)):
        ref = run_sweep(cfg, d, progress=False, log=_quiet).load()
        out[name] = (d / cfg["sweep"]["store"], ref, cfg)
    return out


def _copy(finished, name, tmp_path):
    src, ref, cfg = finished[name]
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return dst, ref, cfg


def _chunks(store: Path, var: str) -> list:
    return sorted(p for p in (store / var).iterdir() if not p.name.startswith("."))


def _delete(store, var, k=0):
    _chunks(store, var)[k].unlink()


def _flip(store, var, k=0):
    p = _chunks(store, var)[k]
    b = bytearray(p.read_bytes())
    b[len(b) // 2] ^= 0x5A
    p.write_bytes(b)


def _set(store, var, index, value):
    zarr.open_group(str(store), mode="r+")[var][index] = value


BASELINE_DAMAGE = {
    "amp chunk deleted": lambda s: _delete(s, "amp", 1),
    "class_counts chunk deleted": lambda s: _delete(s, "class_counts", 2),
    "cell_done chunk deleted": lambda s: _delete(s, "cell_done", 0),
    "checksum chunk deleted": lambda s: _delete(s, "cell_digest", 1),
    "bytes flipped in a count chunk": lambda s: _flip(s, "class_counts", 1),
    "bytes flipped in a metric chunk": lambda s: _flip(s, "welfare_se", 0),
    "a count altered": lambda s: _set(s, "class_counts", (2, 1, 7), 3),
    "a metric altered": lambda s: _set(s, "acc_gap", (0, 1), 0.123),
    "a closed form altered": lambda s: _set(s, "amp_exact", (1, 0, 1), 0.5),
    "a coordinate altered": lambda s: _set(s, "rho", 1, 0.45),
    "a strategy altered": lambda s: _set(s, "strategy_x_A", (0, 0), 0.3),
    "complete flag reset": lambda s: zarr.open_group(str(s), mode="r+").attrs.update(complete=0),
}


@pytest.mark.parametrize("damage", list(BASELINE_DAMAGE))
def test_damaged_baseline_store_is_detected_and_repaired(finished, tmp_path, damage):
    store, ref, cfg = _copy(finished, "baseline", tmp_path)
    assert check_store(store, log=_quiet)[1] == 0
    BASELINE_DAMAGE[damage](store)
    lines = []
    n, bad = check_store(store, log=lines.append)
    if damage == "complete flag reset":  # the values are sound; the marker is named
        assert bad == 1 and "damaged complete marker" in " ".join(lines), lines
    else:
        assert bad >= 1, lines
        assert any("damaged" in x or "not finished" in x for x in lines), lines
    # A rerun of the sweep verifies, repairs and ends with the undamaged store.
    log = []
    again = run_sweep(cfg, tmp_path, progress=False, log=log.append).load()
    xr.testing.assert_identical(again, ref)
    assert check_store(store, log=_quiet)[1] == 0


@pytest.mark.parametrize("damage", ["a count altered", "a metric altered",
                                    "bytes flipped in a count chunk", "a coordinate altered"])
def test_check_repair_gives_back_the_undamaged_store(finished, tmp_path, damage):
    store, ref, _ = _copy(finished, "baseline", tmp_path)
    BASELINE_DAMAGE[damage](store)
    assert check_store(store, repair=True, log=_quiet)[1] >= 1
    xr.testing.assert_identical(xr.open_zarr(store).load(), ref)


PANEL_DAMAGE = {
    "a value of one block altered": lambda s: _set(s, "amp", (1, 0, 0), 0.77),
    "a chunk deleted": lambda s: _delete(s, "acc", 0),
    "bytes flipped": lambda s: _flip(s, "welfare", 0),
    "checksums deleted": lambda s: _delete(s, "cell_digest", 0),
    "a protocol label altered": lambda s: _set(s, "protocol", 0, "x"),
    "a coordinate altered": lambda s: _set(s, "b", 0, 0.31),
}


@pytest.mark.parametrize("damage", list(PANEL_DAMAGE))
def test_damaged_model_store_is_detected_and_repaired(finished, tmp_path, damage):
    store, ref, cfg = _copy(finished, "panel", tmp_path)
    assert check_store(store, log=_quiet)[1] == 0
    PANEL_DAMAGE[damage](store)
    lines = []
    assert check_store(store, log=lines.append)[1] >= 1
    assert all("not repaired" in x for x in lines if "damaged" in x)
    if damage == "a value of one block altered":  # only that block is named
        assert [x for x in lines if "damaged" in x] == [
            "damaged block size[1:2], b[0:1]: values do not match the cells' checksums; "
            "not repaired"]
    again = run_sweep(cfg, tmp_path, progress=False, log=_quiet).load()
    xr.testing.assert_identical(again, ref)


def test_random_damage_to_chunks_never_survives_a_rerun(finished, tmp_path):
    """Seeded random damage (delete or flip bytes in any chunk of any array): the
    check either finds it or the values are intact, and a rerun restores the store."""
    rng = random.Random(20261122)
    for name in ("baseline", "panel"):
        src, ref, cfg = finished[name]
        for trial in range(6):
            store = tmp_path / f"{name}-{trial}" / src.name
            shutil.copytree(src, store)
            files = [p for p in store.rglob("*") if p.is_file() and not p.name.startswith(".")
                     and p.parent != store]
            for p in rng.sample(files, 2):
                if rng.random() < 0.5:
                    p.unlink()
                else:
                    b = bytearray(p.read_bytes())
                    b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
                    p.write_bytes(b)
            _, bad = check_store(store, log=_quiet)
            if bad == 0:
                xr.testing.assert_identical(xr.open_zarr(store).load(), ref)
            again = run_sweep(cfg, store.parent, progress=False, log=_quiet).load()
            xr.testing.assert_identical(again, ref)


def test_check_refuses_what_it_cannot_check(tmp_path, finished):
    with pytest.raises(CheckError, match="does not exist"):
        check_store(tmp_path / "nope.zarr")
    (tmp_path / "plain").mkdir()
    with pytest.raises(CheckError, match="cannot be opened"):
        check_store(tmp_path / "plain")
    ds = xr.Dataset({"a": ("x", np.arange(3))})
    ds.to_zarr(tmp_path / "foreign.zarr", zarr_format=2)
    with pytest.raises(CheckError, match="not an antiamp store"):
        check_store(tmp_path / "foreign.zarr")


def test_antiamp_check_command_exit_statuses(finished, tmp_path):
    store, ref, _ = _copy(finished, "baseline", tmp_path)
    def check(*args):
        return run_command("antiamp-check", list(args), tmp_path)

    ok = check(store)
    assert ok.returncode == 0 and "sound" in ok.stdout, ok.stderr
    _set(store, "amp", (2, 0, 1), 0.0)
    bad = check(store)
    assert bad.returncode == 1 and "damaged block rho[2:3], b[0:2]: amp" in bad.stdout
    fixed = check("--repair", store)
    assert fixed.returncode == 0 and "repaired 1 of 3 blocks" in fixed.stdout
    xr.testing.assert_identical(xr.open_zarr(store).load(), ref)
    nope = check(tmp_path / "missing.zarr")
    assert nope.returncode == 2 and "does not exist" in nope.stderr
    assert "Traceback" not in nope.stderr + bad.stderr


@pytest.mark.parametrize("cells_per_block", [1, 3])
def test_a_fresh_store_verifies_sound_whatever_its_blocks(tmp_path, cells_per_block):
    """Every variable a block writes must have the bits its verification recomputes
    over another batch of cells: the judge's AUC closed form at rho 0.2 and b near 1
    once came out one ulp apart, and antiamp-check called a fresh store damaged."""
    cfg = {"run": {"n_instances": 1000, "seed": 0},
           "sweep": {"axes": {"model": {"rho": [0.2, 0.3]}, "judge": {"b": [0.9, 0.95, 1.0]}},
                     "cells_per_block": cells_per_block, "store": "f.zarr", "plot": False}}
    run_sweep(cfg, tmp_path, progress=False, log=_quiet)
    lines = []
    assert check_store(tmp_path / "f.zarr", log=lines.append)[1] == 0, lines


@pytest.mark.parametrize("target", ["itself", "inside", "another sweep"])
def test_merge_never_replaces_a_sweep_store(finished, tmp_path, target):
    """antiamp-merge -o onto one of its inputs, into one, or onto another sweep's store
    once replaced that store by a merged copy without its checksums (antiamp-check then
    refused it and its sweep could not resume): refused, the store left as it was."""
    store, _, _ = _copy(finished, "baseline", tmp_path)
    other, _, _ = _copy(finished, "panel", tmp_path)
    out = {"itself": store, "inside": store / "m.zarr", "another sweep": other}[target]
    before = {p: p.read_bytes() for s in (store, other) for p in sorted(s.rglob("*"))
              if p.is_file()}
    r = run_command("antiamp-merge", ["-o", out, store], tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"-o {out} is " in r.stderr and "Traceback" not in r.stderr, r.stderr
    after = {p: p.read_bytes() for s in (store, other) for p in sorted(s.rglob("*"))
             if p.is_file()}
    assert after == before
    assert check_store(store, log=_quiet)[1] == 0


def test_merge_replaces_its_own_merged_store(finished, tmp_path):
    store, _, _ = _copy(finished, "baseline", tmp_path)
    for _ in range(2):
        r = run_command("antiamp-merge", ["-o", tmp_path / "m.zarr", store], tmp_path)
        assert r.returncode == 0, r.stderr
