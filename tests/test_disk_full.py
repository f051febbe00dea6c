"""Writes that fail for real (the kernel refuses them): a clear one-line message,
no traceback, no partial output, and a sweep that resumes to the store an
undisturbed run writes.

The failure comes from RLIMIT_FSIZE set in the child process (SIGXFSZ ignored):
every write past the limit fails with EFBIG, exactly where a full disk fails
with ENOSPC, at whichever file the command happens to be writing.
"""

from limits import limit
import resource
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

MODULES = {"antiamp": "antiamp.cli", "antiamp-sweep": "antiamp.sweeps.cli",
           "antiamp-estimate": "antiamp.estimate"}


def _limit(kib):
    def pre():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (kib * 1024, kib * 1024))
    return pre


def _run(cmd, args, cwd, kib=None):
    exe = shutil.which(cmd)
    argv = [exe] if exe else [sys.executable, "-m", MODULES[cmd]]
    return subprocess.run(argv + args, cwd=cwd, capture_output=True, text=True, timeout=limit(600),
                          preexec_fn=_limit(kib) if kib else None)


SWEEP = ["sweep.axes.model.rho={linspace:[0,1,1000]}", "sweep.cells_per_block=250",
         "run.n_instances=2000", "sweep.plot=false"]


@pytest.mark.parametrize("kib", [10, 20], ids=["during the blocks", "at the final metadata"])
def test_a_sweep_that_cannot_write_says_so_and_resumes_identically(tmp_path, kib):
    ref = _run("antiamp-sweep", SWEEP + [f"hydra.run.dir={tmp_path / 'ref'}"], tmp_path)
    assert ref.returncode == 0, ref.stderr
    run = [*SWEEP, f"hydra.run.dir={tmp_path / 'run'}"]
    failed = _run("antiamp-sweep", run, tmp_path, kib=kib)
    assert failed.returncode == 1, failed.stderr
    assert "Traceback" not in failed.stderr
    assert "antiamp-sweep: error: File too large" in failed.stderr
    assert "marked incomplete" in failed.stderr and "rerun the same command" in failed.stderr
    store = tmp_path / "run" / "sweep.zarr"
    assert not xr.open_zarr(store, consolidated=False).attrs.get("complete")  # never looks finished
    again = _run("antiamp-sweep", run, tmp_path)
    assert again.returncode == 0, again.stderr
    a = xr.open_zarr(tmp_path / "ref" / "sweep.zarr").load()
    b = xr.open_zarr(store).load()
    for v in a.data_vars:
        assert np.array_equal(a[v].values, b[v].values, equal_nan=True), v
    assert b.attrs["complete"] == 1


@pytest.mark.parametrize("cmd, args", [
    ("antiamp", ["run.n_instances=2000"]),
    ("antiamp", ["model=panel", "run.n_instances=2000"]),
    ("antiamp-sweep", ["model=panel", "sweep.axes.panel.size=[1,3]", "run.n_instances=2000",
                       "sweep.plot=false"]),
])
def test_commands_that_cannot_write_fail_in_one_line(tmp_path, cmd, args):
    r = _run(cmd, args + [f"hydra.run.dir={tmp_path / 'run'}"], tmp_path, kib=3)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert f"{cmd}: error: File too large" in r.stderr
    assert not list((tmp_path / "run").glob("*.zarr")) if (tmp_path / "run").exists() else True


def test_estimate_that_cannot_write_fails_in_one_line(tmp_path):
    r = _run("antiamp-estimate", ["--sample", "--n-resamples", "200", "--out",
                                  str(tmp_path / "o")], tmp_path, kib=3)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and "antiamp-estimate: error: File too large" in r.stderr
    assert not (tmp_path / "o" / "estimates.zarr").exists()


def test_consolidation_writes_only_the_consolidated_metadata(tmp_path, monkeypatch):
    """A failed write of ``.zmetadata`` leaves the store marked incomplete.

    zarr.consolidate_metadata rewrote the root's ``.zattrs`` concurrently with
    ``.zmetadata``: when ``.zmetadata`` failed, its ``.zattrs`` (complete = 1)
    could land after the store was marked incomplete again (found by CI, on a
    busy machine).  Here consolidation must leave ``.zattrs`` and ``.zgroup``
    untouched (same files), write what zarr writes, and a failed write must
    leave the store incomplete with no consolidated metadata.
    """
    import json
    import os

    import zarr

    from antiamp.sweeps import engine

    run_sweep = engine.run_sweep
    run_sweep({"sweep": {"axes": {"model": {"rho": [0.1, 0.3]}}, "plot": False},
               "run": {"n_instances": 1000}}, tmp_path / "a", progress=False)
    store = tmp_path / "a" / "sweep.zarr"
    copy = tmp_path / "copy.zarr"
    shutil.copytree(store, copy)
    zarr.consolidate_metadata(str(copy))
    (store / ".zmetadata").unlink()
    before = {n: os.stat(store / n).st_ino for n in (".zattrs", ".zgroup")}
    engine.consolidate(store)
    assert {n: os.stat(store / n).st_ino for n in before} == before
    theirs = json.loads((copy / ".zmetadata").read_text())
    theirs["metadata"] = {k: v for k, v in theirs["metadata"].items()  # not the store's
                          if not k.startswith(".antiamp/")}          # own folder
    assert json.loads((store / ".zmetadata").read_text()) == theirs

    from antiamp.sweeps import metadata

    real = metadata.write_json

    def full_disk(path, obj, **kw):
        if path.name == ".zmetadata":
            raise OSError(27, "File too large")
        real(path, obj, **kw)

    monkeypatch.setattr(metadata, "write_json", full_disk)
    with pytest.raises(OSError):
        metadata.finish(store)
    assert json.loads((store / ".zattrs").read_text())["complete"] == 0
    assert not (store / ".zmetadata").exists()
    monkeypatch.undo()
    assert xr.open_zarr(store, consolidated=False).attrs["complete"] == 0
