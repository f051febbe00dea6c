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

import numpy as np
import pytest

#: A cell of each model that runs far longer than the test (its own sizes, or up to
#: 10^11 instances: within the work bound, minutes of kernel time).
LONG = 10**11
LONG_CELLS = {
    "baseline": [f"run.n_instances={LONG}"],
    "signals": [f"run.n_instances={LONG}", "equilibrium.payoffs=simulated"],
    "portfolio": [f"run.n_instances={LONG}", "equilibrium.payoffs=simulated"],
    "messages": [f"run.n_instances={LONG}", "judge=logit", "equilibrium.payoffs=simulated"],
    "options": [f"run.n_instances={LONG}", "judge=logit", "equilibrium.payoffs=simulated"],
    # (the panel's Monte Carlo runs panel.n_panels panels, not run.n_instances: its
    # largest, of its largest panels, a correlated jury so that the kernel runs)
    "panel": ["panel.method=monte_carlo", "panel.icc=0.2", f"panel.n_panels={1 << 20}",
              "panel.size=501"],
    "confidence": [f"run.n_instances={LONG // 10}"],  # (its per-block sums' bound)
    "redeliberation": [f"run.n_instances={LONG // 100}"],  # (its per-block sums' bound)
    "colmad": [f"run.n_instances={LONG // 10}"],
    "mediation": [f"run.n_instances={LONG // 100}"],
    "loop": ["loop.paths=2000", "loop.rounds=100", "loop.batch=100000"],
    "compare": [f"run.n_instances={LONG}"],
    "equilibrium": [f"run.n_instances={LONG}", "equilibrium.payoffs=simulated"],
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


def _start(argv, cwd):
    """``argv`` in a process group of its own, SIGINT at its default disposition (as at
    a terminal), the variable that lifts the work bound removed."""
    env = {k: v for k, v in os.environ.items() if k != "ANTIAMP_UNBOUNDED"}
    return subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _interrupt(p, after: float, what: str) -> tuple:
    """SIGINT to ``p``'s group ``after`` seconds on (``p`` must still run then); its
    (stdout, stderr, seconds from the signal to the exit), failing the test if it runs
    :data:`GENEROUS` seconds past the signal."""
    try:
        p.wait(after)
    except subprocess.TimeoutExpired:
        pass
    assert p.poll() is None, f"{what} ended before the signal: {p.communicate()}"
    sent = time.monotonic()
    os.killpg(p.pid, signal.SIGINT)
    try:
        out, err = p.communicate(timeout=GENEROUS)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        pytest.fail(f"{what}: still running {GENEROUS:.0f} s after SIGINT: {out[-500:]} "
                    f"{err[-2000:]}")
    return out, err, time.monotonic() - sent


@pytest.mark.slow
@pytest.mark.parametrize("model", sorted(LONG_CELLS))
def test_ctrl_c_in_a_long_cell_exits_130_with_one_line(model, tmp_path):
    run_dir = tmp_path / "run"
    args = [f"model={model}", *LONG_CELLS[model], "run.figure=false",
            f"hydra.run.dir={run_dir}"]
    p = _start(_argv() + args, tmp_path)
    delay = random.uniform(*WINDOW)
    out, err, latency = _interrupt(p, delay, f"{model}: the cell")
    print(f"{model}: SIGINT {delay:.1f} s after the start, exit {p.returncode} "
          f"{latency:.2f} s after the signal")
    assert p.returncode == 130, (model, out[-2000:], err[-2000:])
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "interrupted" in lines[0], (model, err[-2000:])
    left = sorted(q.name for q in run_dir.iterdir()) if run_dir.exists() else []
    assert set(left) <= {".hydra", "antiamp.log"}, (model, left)


@pytest.mark.slow
@pytest.mark.parametrize("gap", [0.05, 0.2])
def test_a_second_ctrl_c_while_exiting_still_exits_130_with_one_line(gap, tmp_path):
    """Ctrl-C pressed twice (or SIGINT to the group forwarded again by a wrapper such
    as ``timeout``): the second, landing while the process exits, used to kill it by
    SIGINT (status -2, not 130) after the message."""
    run_dir = tmp_path / "run"
    p = _start(_argv() + ["model=mediation", *LONG_CELLS["mediation"], "run.figure=false",
                          f"hydra.run.dir={run_dir}"], tmp_path)
    try:
        p.wait(random.uniform(*WINDOW))
    except subprocess.TimeoutExpired:
        pass
    assert p.poll() is None, p.communicate()
    os.killpg(p.pid, signal.SIGINT)
    time.sleep(gap)
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=GENEROUS)
    assert p.returncode == 130, (p.returncode, err[-2000:])
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "interrupted" in lines[0], err[-2000:]


def test_a_sigint_during_the_exit_of_an_interrupted_command_is_ignored():
    """What the test above does, in a second: :func:`interrupted` has printed its line
    and is unwinding when another SIGINT lands.  It must not replace exit status 130
    by a KeyboardInterrupt (a traceback, and a death by SIGINT)."""
    code = ("import os, signal, time\n"
            "from antiamp.cmdline import interrupted\n"
            "try:\n"
            "    interrupted('prog: interrupted')\n"
            "finally:\n"
            "    os.kill(os.getpid(), signal.SIGINT)\n"
            "    time.sleep(0.2)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60, preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                                    signal.SIG_DFL))
    assert r.returncode == 130, (r.returncode, r.stderr)
    assert r.stderr.strip() == "prog: interrupted", r.stderr


def test_out_of_memory_is_one_line_and_exit_1_not_a_traceback(capsys):
    """A request over the memory the process may take (a memory limit, or the
    machine's) in any command: one line naming it, exit status 1."""
    from antiamp.cmdline import interruptible

    @interruptible("prog")
    def main():
        raise MemoryError("Unable to allocate 1.19 GiB for an array with shape (16, 10000000)")

    with pytest.raises(SystemExit) as e:
        main()
    assert e.value.code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("prog: error: out of memory (Unable to allocate 1.19 GiB")
    assert len(err.splitlines()) == 1


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux",
                    reason="an address-space limit")
def test_an_estimate_over_a_memory_limit_says_so_in_one_line(tmp_path):
    """antiamp-estimate --n-resamples 10^7 (allowed) under a 3 GB address-space limit:
    its bootstrap's arrays do not fit; a MemoryError traceback (26 lines) before."""
    import resource

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    exe = shutil.which("antiamp-estimate")
    argv = [exe] if exe else [sys.executable, "-m", "antiamp.estimate"]
    r = subprocess.run(argv + ["--sample", "--n-resamples", "10000000", "--out",
                               str(tmp_path / "o")], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300, preexec_fn=cap)
    assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
    err = r.stderr.strip()
    assert err.startswith("antiamp-estimate: error: out of memory"), err[-2000:]
    assert len(err.splitlines()) == 1 and not (tmp_path / "o").exists()


#: A Hydra job that fails inside (the model's run replaced by one that raises), run as
#: the command line runs it: guarded_main, Hydra's job runner, the task.
FAILING_JOB = """
import sys
import antiamp.cli as cli
def fail(cfg):
    raise {exc}
cli._run_cell = fail
sys.argv = ["antiamp", "run.n_instances=1000", "hydra.run.dir=" + sys.argv[1]]
cli.main()
"""


@pytest.mark.parametrize("exc, words", [
    ("MemoryError('Unable to allocate 12.0 GiB')", "antiamp: error: out of memory"),
    ("OSError(28, 'No space left on device')", "antiamp: error: "),
])
def test_a_job_failing_inside_hydra_is_one_line_without_hydras_line(exc, words, tmp_path):
    """A MemoryError or OSError raised inside the Hydra job (a run's arrays over the
    memory the process may take; a full disk): one line, exit status 1. Hydra printed
    its own "Error executing job with overrides: [...]" line above ours before."""
    r = subprocess.run([sys.executable, "-c", FAILING_JOB.format(exc=exc), str(tmp_path / "o")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
    err = r.stderr.strip()
    assert err.startswith(words) and "Error executing job" not in err, err[-2000:]
    assert len(err.splitlines()) == 1, err[-2000:]


def test_a_kernel_stops_within_a_block_once_the_page_shows_a_sigint():
    """What the signal does, without a signal: the byte CPython's handler writes to the
    wakeup fd, written by hand.  The kernel returns with fewer instances counted than
    asked (it stopped), leaving the armed block raises KeyboardInterrupt (the result
    is never used), and once disarmed the same call counts every instance."""
    from antiamp.kernels import baseline as kb
    from antiamp.kernels import interrupt
    from antiamp.kernels.rng import split_seed
    from antiamp.runner import baseline_thresholds

    thr = baseline_thresholds(0.5, 0.7, 0.3, 0.8, 0.8, 0.8)
    k0, k1 = split_seed(1)
    n = 1 << 22
    args = (thr, 0, 0, 0, n, k0, k1, np.uint64(kb.STREAM), 8)
    with pytest.raises(KeyboardInterrupt):
        with interrupt.armed():
            os.write(interrupt._fd, bytes([signal.SIGINT]))
            stopped = kb.class_counts(*args)
    assert 0 <= stopped.sum() < n
    full = kb.class_counts(*args)
    assert full.sum() == n
    with interrupt.armed():  # armed, no signal: the same counts
        assert (kb.class_counts(*args) == full).all()


def test_other_signals_do_not_stop_a_kernel():
    """A signal with a Python handler other than SIGINT is written too: it must not stop
    a kernel (its result would be incomplete with no KeyboardInterrupt)."""
    from antiamp.kernels import baseline as kb
    from antiamp.kernels import interrupt
    from antiamp.kernels.rng import split_seed
    from antiamp.runner import baseline_thresholds

    thr = baseline_thresholds(0.5, 0.7, 0.3, 0.8, 0.8, 0.8)
    k0, k1 = split_seed(2)
    args = (thr, 0, 0, 0, 1 << 20, k0, k1, np.uint64(kb.STREAM), 4)
    with interrupt.armed():
        os.write(interrupt._fd, bytes([signal.SIGTERM, signal.SIGUSR1]))
        got = kb.class_counts(*args)
    assert got.sum() == 1 << 20


def test_gpu_launches_grow_towards_a_bounded_time_and_cover_the_range(monkeypatch):
    """The GPU's launch pieces: contiguous, covering the count, starting small and
    growing at most eightfold (the host waits for each, so a Ctrl-C lands between
    them); an explicit step keeps its fixed pieces."""
    import antiamp.kernels.gpu as g

    synced = []

    class Stub:
        @staticmethod
        def synchronize():
            synced.append(1)

    monkeypatch.setattr(g, "cuda", lambda: Stub)
    count = 3 * 10**9 + 7
    pieces = list(g.launches(count))
    assert pieces[0] == (0, g.FIRST_LAUNCH)
    assert [o for o, _ in pieces] == [sum(m for _, m in pieces[:i]) for i in range(len(pieces))]
    assert sum(m for _, m in pieces) == count
    assert all(m <= g.MAX_LAUNCH for _, m in pieces)
    assert all(b <= 8 * a for (_, a), (_, b) in zip(pieces, pieces[1:-1]))
    assert len(synced) == len(pieces) - 1
    fixed = list(g.launches(2000, 601))
    assert fixed == [(0, 601), (601, 601), (1202, 601), (1803, 197)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_has_a_page_of_its_own():
    """A child made by fork (a process pool, say) shares no page with its parent: its
    SIGINT must not stop the parent's kernels, nor the parent's its own."""
    from antiamp.kernels import interrupt

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(interrupt._fd, bytes([signal.SIGINT]))
        os._exit(0 if interrupt._buf[0] == signal.SIGINT else 3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0  # the child saw its own byte
    assert interrupt._buf[0] == 0  # and the parent's page is untouched



_THREADED = """
import sys, time
import antiamp
from distributed import Client

cfg = {"model": {"name": "loop"}, "loop": {"paths": 2000, "rounds": 100, "batch": 100000},
       "sweep": {"axes": {"model": {"rho": [0.2, 0.6]}}, "cells_per_block": 1,
                 "plot": False}}
with Client(processes=False, n_workers=2, threads_per_worker=1,
            dashboard_address=None) as client:
    print("RUNNING", flush=True)
    try:
        antiamp.sweep(cfg, sys.argv[1], client=client, progress=False, log=lambda *a: None)
    except KeyboardInterrupt:
        t = time.monotonic()
        print("INTERRUPTED", flush=True)
        client.close()  # waits for the worker threads' tasks
        print(f"CLOSED {time.monotonic() - t:.2f}", flush=True)
        sys.exit(130)
"""


def test_ctrl_c_stops_the_kernels_of_threaded_dask_workers(tmp_path):
    """A sweep on a user's dask client whose two workers are threads of the same
    process: a Ctrl-C stops the kernels those threads run (they read the page the
    main thread arms while it waits for them), so the client closes at once, not
    when the cells end (minutes)."""
    from limits import limit

    script = tmp_path / "threaded.py"
    script.write_text(_THREADED)
    p = _start([sys.executable, str(script), str(tmp_path / "s.zarr")], tmp_path)
    assert p.stdout.readline().strip() == "RUNNING"
    # both cells' kernels running on the worker threads by then
    out, err, latency = _interrupt(p, limit(10.0), "the sweep")
    print(f"threaded workers: exit {p.returncode} {latency:.2f} s after SIGINT; "
          f"{out.strip()}")
    assert p.returncode == 130 and "CLOSED" in out, (out[-2000:], err[-2000:])


@pytest.mark.parametrize("model", ["baseline", "portfolio"])
def test_ctrl_c_while_the_store_is_written_leaves_no_table_of_it(model, tmp_path, monkeypatch):
    """A Ctrl-C after the table is shown and before the store is written leaves no
    ``results.txt`` (the table of a store that never was): it is kept once the store is."""
    import antiamp.output as output
    from cli_runner import run_command

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(output, "write_zarr_atomic", interrupted)
    run_dir = tmp_path / "run"
    r = run_command("antiamp", [f"model={model}", "run.n_instances=1000", "run.figure=false",
                                f"hydra.run.dir={run_dir}"], tmp_path)
    assert r.returncode == 130, (r.stdout, r.stderr)
    assert "protocol" in r.stdout  # the table was shown
    left = sorted(q.name for q in run_dir.iterdir())
    assert set(left) <= {".hydra", "antiamp.log"}, left
    monkeypatch.undo()
    r = run_command("antiamp", [f"model={model}", "run.n_instances=1000", "run.figure=false",
                                f"hydra.run.dir={run_dir}"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert {"results.zarr", "results.txt"} <= {q.name for q in run_dir.iterdir()}
