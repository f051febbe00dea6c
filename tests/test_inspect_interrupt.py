"""Ctrl-C in the Inspect example (``python -m antiamp.estimation.inspect_example``): one
line and exit 130, the samples that ran kept as a log of status ``cancelled`` (it gave
a ValueError traceback: Inspect's cancelled run returns no log)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from limits import limit

pytest.importorskip("inspect_ai")


def test_ctrl_c_in_the_inspect_example_is_one_line_and_a_cancelled_log(tmp_path):
    from inspect_ai.log import read_eval_log

    logs = tmp_path / "logs"
    # far more samples than the test waits for (24 questions x 2 protocols x 400)
    p = subprocess.Popen([sys.executable, "-m", "antiamp.estimation.inspect_example", str(logs),
                          "--replicates", "400"], cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    # Inspect opens its log when the evaluation starts: the signal lands inside it
    deadline = time.monotonic() + limit(180)
    while not (logs.is_dir() and any(logs.iterdir())):
        assert p.poll() is None, p.communicate()
        assert time.monotonic() < deadline, "the evaluation did not start"
        time.sleep(0.2)
    time.sleep(1.0)
    assert p.poll() is None, f"the evaluation ended before the signal: {p.communicate()}"
    os.killpg(p.pid, signal.SIGINT)
    try:
        out, err = p.communicate(timeout=limit(120))
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        pytest.fail(f"still running after SIGINT: {p.communicate()}")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert p.returncode == 130, (out[-2000:], err[-3000:])
    assert len(lines) == 1 and "interrupted" in lines[0], err[-3000:]
    assert "Traceback" not in err
    (log,) = [read_eval_log(str(f), header_only=True) for f in logs.iterdir()]
    assert log.status == "cancelled", log.status
