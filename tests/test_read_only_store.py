"""A store location that cannot be written is refused in one line before anything is
made: no run directory, no word of "finished blocks" that never were.

A folder's permission bits do not bind root (CI runs as root), so the folder is made
immutable (``chattr +i``) where the file system allows it, and read-only by its mode
otherwise; the test skips where neither stops a write here.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from cli_runner import run_command


def _read_only(path):
    """Make ``path`` unwritable for this process; the undo, or None where it cannot."""
    if os.geteuid() != 0:
        path.chmod(0o555)
        return lambda: path.chmod(0o755)
    if shutil.which("chattr") and subprocess.run(["chattr", "+i", str(path)],
                                                 capture_output=True).returncode == 0:
        return lambda: subprocess.run(["chattr", "-i", str(path)], capture_output=True)
    return None


def test_a_read_only_store_location_is_refused_before_the_run_directory(tmp_path):
    loc = tmp_path / "loc"
    loc.mkdir()
    undo = _read_only(loc)
    if undo is None:
        pytest.skip("no way to make a folder read-only for this user here")
    try:
        try:
            (loc / "probe").touch()
            writable = True
        except OSError:
            writable = False
        if writable:
            pytest.skip("a read-only folder is still writable for this user here")
        run_dir = tmp_path / "run"
        r = run_command("antiamp-sweep", ["sweep=amp_gap", f"sweep.store={loc}/s.zarr",
                                          "run.n_instances=1000", f"hydra.run.dir={run_dir}"],
                        tmp_path)
        assert r.returncode == 2, (r.stdout, r.stderr)
        text = r.stdout + r.stderr
        assert "is not writable" in text and "sweep.store" in text, text
        assert "finished blocks" not in text
        assert not run_dir.exists()
        assert list(loc.iterdir()) == []
    finally:
        undo()
