"""The GPU kernels on numba's CUDA simulator: the same counts as the CPU kernels.

The simulator (``NUMBA_ENABLE_CUDASIM=1``) replaces numba.cuda for the whole
process, so the checks (``tests/gpu_sim_checks.py``) run in a subprocess; the
instance counts stay in the thousands (the simulator runs each GPU thread as a
Python thread).  Without a GPU, ``run.device=cuda`` is refused here before anything
is made, and ``run.device=auto`` runs on the CPU.
"""

from limits import limit
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from antiamp.config import ConfigError
from antiamp.kernels.gpu import status

# The module's tests share a module fixture: the simulator's subprocess (minutes) runs once, on one worker, not once
# per xdist worker (pyproject's --dist loadgroup).
pytestmark = pytest.mark.xdist_group("gpu_sim")

HERE = Path(__file__).resolve().parent
CHECKS = ("one_cell", "cells", "floor", "engine", "signals", "portfolio", "messages", "options",
          "panel", "confidence", "redeliberation", "colmad", "mediation",
          "loop", "row_stack", "models", "chunks")


# A guard against a hang, per check: the slowest check (chunks) took 430 s, the next (loop) 130 s, all
# seventeen 840 s, on a 2-core machine at load 2-5.
# Each check's limit is taken when it starts, so it follows the load of the moment (one limit for the whole
# process, taken at its start, ran out at 900 s in a run whose load rose after it began).
PER_CHECK = 900


def _read_lines(stream, out: queue.Queue) -> None:
    for line in stream:
        out.put(line)
    out.put(None)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """Every check in one simulator process (one numba.cuda import): name -> passed, and what it printed."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    cwd = tmp_path_factory.mktemp("gpu_sim")
    passed: set[str] = set()
    printed: list[str] = []
    with open(cwd / "stderr.txt", "w+") as err:
        proc = subprocess.Popen([sys.executable, str(HERE / "gpu_sim_checks.py"), *CHECKS], env=env,
                                cwd=cwd, stdout=subprocess.PIPE, stderr=err, text=True)
        lines: queue.Queue = queue.Queue()
        reader = threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True)
        reader.start()
        try:
            for name in CHECKS:
                seconds = limit(PER_CHECK)
                deadline = None if seconds is None else time.monotonic() + seconds
                while True:
                    try:
                        line = lines.get(timeout=None if deadline is None
                                         else max(0.0, deadline - time.monotonic()))
                    except queue.Empty:
                        printed.append(f"(check {name} still running after {seconds:.0f} s: stopped)")
                        break
                    if line is None:  # the process ended (a check raised: its traceback is in stderr)
                        break
                    printed.append(line.rstrip("\n"))
                    if line.split()[:2] == ["ok", name]:
                        passed.add(name)
                        break
                if name not in passed:
                    break
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            reader.join(timeout=30)  # at the end of the output once the process is gone
            proc.stdout.close()
        err.seek(0)
        stderr = err.read()
    return passed, "\n".join(printed), stderr


@pytest.mark.parametrize("name", CHECKS)
def test_gpu_kernels_match_cpu_on_the_simulator(simulated, name):
    passed, printed, stderr = simulated
    assert name in passed, f"{name} failed on the CUDA simulator:\n{printed[-3000:]}\n{stderr[-6000:]}"


no_gpu = pytest.mark.skipif(status()[0], reason="this machine has a CUDA GPU (or the simulator)")


@no_gpu
def test_cuda_is_refused_without_a_gpu_before_anything_is_made(tmp_path):
    from cli_runner import run_command

    for prog, extra in (("antiamp", []), ("antiamp-sweep", ["sweep.axes.model.rho=[0.1,0.5]"])):
        r = run_command(prog, ["run.device=cuda", "run.n_instances=1000", "hydra.run.dir=out",
                               *extra], tmp_path)
        assert r.returncode == 2, (prog, r.stdout, r.stderr)
        assert "run.device=cuda needs a CUDA GPU" in r.stderr, (prog, r.stderr)
        assert list(tmp_path.iterdir()) == [], prog

    import antiamp

    with pytest.raises(ConfigError, match=r"run\.device=cuda needs a CUDA GPU: .*(no CUDA GPU|"
                                          r"cannot be imported)"):
        antiamp.simulate({"run": {"device": "cuda", "n_instances": 100}})


def test_bad_device_names_the_field():
    import antiamp

    with pytest.raises(ConfigError, match=r"run\.device must be one of cpu, cuda, auto, got 'gpu'"):
        antiamp.simulate({"run": {"device": "gpu", "n_instances": 100}})


@no_gpu
def test_auto_runs_on_the_cpu_without_a_gpu():
    import antiamp

    a = antiamp.simulate({"run": {"device": "auto", "n_instances": 5000, "progress": False}})
    b = antiamp.simulate({"run": {"device": "cpu", "n_instances": 5000, "progress": False}})
    assert np.array_equal(a.class_counts.values, b.class_counts.values)


def test_cuda_is_refused_for_a_model_without_gpu_kernels(monkeypatch):
    from antiamp import config as cfgmod
    from antiamp.kernels import gpu
    from antiamp.registry import to_model_config

    monkeypatch.setattr(gpu, "_STATUS", (True, "a GPU"))  # as if one were present
    monkeypatch.setattr(cfgmod, "_VALID", {})
    with pytest.raises(ConfigError, match=r"run\.device=cuda: model compare's kernels run on "
                                          r"the CPU only \(models with GPU kernels: .*baseline"):
        to_model_config({"model": {"name": "compare"}, "judge": {"kind": "logit"},
                         "run": {"device": "cuda"}})
    to_model_config({"model": {"name": "compare"}, "judge": {"kind": "logit"},
                     "run": {"device": "auto"}})
