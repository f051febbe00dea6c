"""Ctrl-C in a long cell of every model: exit 130, one line, nothing partial.

A SIGINT that lands while a compiled kernel runs used to wait for the kernel to end
(minutes) and then crash the process (SIGSEGV, no message): the kernels now poll
for it between blocks of work (:mod:`antiamp.kernels.interrupt`).  Each test starts
``antiamp`` on a cell far longer than the test (a process group of its own, SIGINT
at its default disposition, as at a terminal) and sends SIGINT to the group at a
random moment.  The time from the signal to the exit is printed (``-s`` shows it)
and bounded only generously: the machine's load can stretch it, never to minutes.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

#: A cell of each model that runs far longer than the test (its own sizes, or up to
#: 10^11 instances: within the work bound, minutes of kernel time).
LONG = 10**11
LONG_CELLS = {
    "baseline": [f"run.n_instances={LONG}"],
    "signals": [f"run.n_instances={LONG}", "equilibrium.payoffs=simulated"],
    "portfolio": [f"run.n_instances={LONG}"],
    "messages": [f"run.n_instances={LONG}", "judge=logit"],
    "options": [f"run.n_instances={LONG}", "judge=logit"],
    "panel": [f"run.n_instances={LONG}", "panel.method=monte_carlo"],
    "confidence": [f"run.n_instances={LONG}"],
    "redeliberation": [f"run.n_instances={LONG}"],
    "colmad": [f"run.n_instances={LONG // 10}"],
    "mediation": [f"run.n_instances={LONG // 100}"],
    "loop": ["loop.paths=2000", "loop.rounds=100", "loop.batch=100000"],
    "compare": [f"run.n_instances={LONG}"],
    "equilibrium": [f"run.n_instances={LONG}"],
}
#: Seconds after the start at which the signal may land (the command's start-up, its
#: checks and the kernels' load from the cache come first on a loaded machine).
WINDOW = (4.0, 20.0)
#: A bound far above what the exit takes (under 2 s on an idle machine), below the
#: cells' own minutes.
GENEROUS = 60.0


def _argv():
    exe = shutil.which("antiamp")
    return [exe] if exe else [sys.executable, "-m", "antiamp"]


@pytest.mark.slow
@pytest.mark.parametrize("model", sorted(LONG_CELLS))
def test_ctrl_c_in_a_long_cell_exits_130_with_one_line(model, tmp_path):
    run_dir = tmp_path / "run"
    args = [f"model={model}", *LONG_CELLS[model], "run.figure=false",
            f"hydra.run.dir={run_dir}"]
    env = {k: v for k, v in os.environ.items() if k != "ANTIAMP_UNBOUNDED"}
    p = subprocess.Popen(_argv() + args, cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    delay = random.uniform(*WINDOW)
    try:
        p.wait(delay)
    except subprocess.TimeoutExpired:
        pass
    assert p.poll() is None, f"the cell ended before the signal: {p.communicate()}"
    sent = time.monotonic()
    os.killpg(p.pid, signal.SIGINT)
    try:
        out, err = p.communicate(timeout=GENEROUS)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        pytest.fail(f"{model}: still running {GENEROUS:.0f} s after SIGINT: {err[-2000:]}")
    latency = time.monotonic() - sent
    print(f"{model}: SIGINT {delay:.1f} s after the start, exit {p.returncode} "
          f"{latency:.2f} s after the signal")
    assert p.returncode == 130, (model, out[-2000:], err[-2000:])
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "interrupted" in lines[0], (model, err[-2000:])
    left = sorted(q.name for q in run_dir.iterdir()) if run_dir.exists() else []
    assert set(left) <= {".hydra", "antiamp.log"}, (model, left)
