"""Every command that reads a store verifies it first, as antiamp-check does, and
refuses a damaged or foreign one with one line: never a traceback, never a figure
drawn from damaged values, never a merged copy of them.

Each kind of damage of the store-damage tests (tests/test_integrity.py and
tests/test_metadata_integrity.py) is applied to a finished store, and
antiamp-merge, antiamp-plot and antiamp-discover are run on it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from antiamp.sweeps.engine import run_sweep
from cli_runner import run_command
from test_integrity import BASELINE_DAMAGE
from test_metadata_integrity import DAMAGE, _damage

STORE = {"run": {"n_instances": 4000, "seed": 11},
         "sweep": {"axes": {"model": {"rho": [0.1, 0.4, 0.8]}, "judge": {"b": [0.2, 0.9]}},
                   "cells_per_block": 2, "store": "s.zarr", "plot": False}}

KINDS = ([("integrity", k) for k in BASELINE_DAMAGE]
         + [("metadata", k) for k in DAMAGE])


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    d = tmp_path_factory.mktemp("finished")
    run_sweep(STORE, d, progress=False, log=lambda *a, **k: None)
    return d / "s.zarr"


def _copy(finished, tmp_path) -> Path:
    dst = tmp_path / "run" / "s.zarr"
    dst.parent.mkdir()
    shutil.copytree(finished, dst)
    return dst


def _damaged(finished, tmp_path, kind) -> Path:
    store = _copy(finished, tmp_path)
    source, name = kind
    if source == "integrity":
        BASELINE_DAMAGE[name](store)
    else:
        _damage(store, "baseline", name)
    return store


def _commands(store: Path, tmp_path: Path) -> dict:
    return {
        "antiamp-merge": [store, "-o", tmp_path / "merged.zarr"],
        "antiamp-plot": [store, "--out", tmp_path / "figs", "--formats", "png"],
        "antiamp-discover": [store, "--where", "amp_gap > 0.05", "--out", tmp_path / "disc"],
    }


def _refused_in_one_line(r, prog):
    assert r.returncode in (1, 2), (r.returncode, r.stdout, r.stderr)
    err = r.stderr.strip()
    assert "Traceback" not in r.stderr and err.startswith(f"{prog}: error: "), r.stderr
    assert len(err.splitlines()) == 1, r.stderr
    return err


def test_a_sound_store_is_read_by_every_command(finished, tmp_path):
    store = _copy(finished, tmp_path)
    for prog, argv in _commands(store, tmp_path).items():
        r = run_command(prog, argv, tmp_path)
        assert r.returncode == 0, (prog, r.stdout, r.stderr)


@pytest.mark.parametrize("kind", KINDS, ids=[f"{s}:{k}" for s, k in KINDS])
def test_every_store_reading_command_refuses_every_damage_kind(finished, tmp_path, kind):
    store = _damaged(finished, tmp_path, kind)
    for prog, argv in _commands(store, tmp_path).items():
        r = run_command(prog, argv, tmp_path)
        err = _refused_in_one_line(r, prog)
        assert str(store) in err, err
    # nothing drawn or merged from the damaged store
    assert not (tmp_path / "merged.zarr").exists()
    assert not list((tmp_path / "figs").glob("*.png")) if (tmp_path / "figs").exists() else True
    assert not (tmp_path / "disc" / "discover.png").exists()


def test_a_foreign_array_dtype_is_refused_before_it_is_read(finished, tmp_path):
    """An object array (its codec would unpickle what the file names) in a store that
    otherwise is antiamp's: refused, naming the array, by every command."""
    store = _copy(finished, tmp_path)
    (store / "notes").mkdir()  # as Zarr (format 2) writes an object array with a pickle
    (store / "notes" / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [1], "chunks": [1], "dtype": "|O", "order": "C",
        "fill_value": None, "compressor": None, "filters": [{"id": "pickle", "protocol": 5}]}))
    (store / "notes" / "0").write_bytes(b"\x80\x05N.")  # pickle of None
    for prog, argv in _commands(store, tmp_path).items():
        err = _refused_in_one_line(run_command(prog, argv, tmp_path), prog)
        assert "notes" in err, err


def test_antiamp_check_of_the_root_is_refused_in_one_line(tmp_path):
    r = run_command("antiamp-check", ["/"], tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip() == "antiamp-check: error: / is not an antiamp store"
