"""Every command that reads a store verifies it first, as antiamp-check does, and
refuses a damaged or foreign one with one line: never a traceback, never a figure
drawn from damaged values, never a merged copy of them.

Each kind of damage of the store-damage tests (tests/test_integrity.py and
tests/test_metadata_integrity.py) is applied to a finished store, and
antiamp-merge, antiamp-plot and antiamp-discover are run on it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from antiamp.sweeps.engine import run_sweep
from cli_runner import run_command
from limits import limit
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


def _fifo(store: Path, member: str) -> Path:
    """``member`` of ``store`` (a chunk, the root's attributes) replaced by a FIFO, which
    a reader that opened it would wait on forever (nothing writes to it)."""
    path = store / member
    path.unlink()
    os.mkfifo(path)
    return path


def _within(prog, argv, cwd, seconds=60):
    """``prog argv`` as a process (a reader blocked on a FIFO never returns: in-process it
    would hang the test), killed after ``seconds``: a failure, not a hang."""
    try:
        return subprocess.run([shutil.which(prog), *map(str, argv)], cwd=cwd,
                              capture_output=True, text=True, timeout=limit(seconds))
    except subprocess.TimeoutExpired:
        pytest.fail(f"{prog} still reading after {seconds} s (a FIFO in the store)")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("member", ["amp/1.0.0", ".zattrs"])
def test_a_fifo_in_a_store_is_refused_by_every_reader_not_waited_on(finished, tmp_path,
                                                                     member):
    """A store entry that is no regular file (a FIFO: its reader would block forever) is
    refused in one line by antiamp-check, -merge, -plot and -discover, naming it or
    the store; a run directory's results.zarr holding one is refused before the run;
    antiamp-sweep into such a store never blocks on it."""
    store = _copy(finished, tmp_path)
    assert (store / member).is_file()  # (the layout these names assume)
    _fifo(store, member)
    cmds = {"antiamp-check": [store], **_commands(store, tmp_path)}
    for prog, argv in cmds.items():
        err = _refused_in_one_line(_within(prog, argv, tmp_path), prog)
        assert str(store) in err, err
    assert not (tmp_path / "merged.zarr").exists()
    # a run into a run directory whose results.zarr has a FIFO at its root or in a chunk
    run_dir = tmp_path / "rd"
    run_dir.mkdir()
    shutil.copytree(finished, run_dir / "results.zarr")
    _fifo(run_dir / "results.zarr", member)
    r = _within("antiamp", ["run.n_instances=100", f"hydra.run.dir={run_dir}"], tmp_path)
    if member == ".zattrs":  # not provably antiamp's: never replaced
        err = _refused_in_one_line(r, "antiamp")
        assert "results.zarr" in err, err
    # a sweep resuming the store: refused, or the metadata rebuilt from its record
    r = _within("antiamp-sweep", ["sweep.axes.model.rho=[0.1,0.4,0.8]",
                                  "sweep.axes.judge.b=[0.2,0.9]", "run.n_instances=4000",
                                  "run.seed=11", "sweep.cells_per_block=2",
                                  f"sweep.store={store}", "sweep.plot=false"], tmp_path)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 0 or "is a FIFO" in r.stdout + r.stderr, (r.stdout, r.stderr)
