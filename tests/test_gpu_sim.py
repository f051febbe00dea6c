"""The GPU kernels on numba's CUDA simulator: the same counts as the CPU kernels.

The simulator (``NUMBA_ENABLE_CUDASIM=1``) replaces numba.cuda for the whole
process, so the checks (``tests/gpu_sim_checks.py``) run in a subprocess; the
instance counts stay in the thousands (the simulator runs each GPU thread as a
Python thread).  Without a GPU, ``run.device=cuda`` is refused here before anything
is made, and ``run.device=auto`` runs on the CPU.
"""

from limits import limit
import os
import subprocess
import sys
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


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """Every check in one simulator process (one numba.cuda import): name -> passed."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    cwd = tmp_path_factory.mktemp("gpu_sim")
    res = subprocess.run([sys.executable, str(HERE / "gpu_sim_checks.py"), *CHECKS], env=env,
                         cwd=cwd, capture_output=True, text=True, timeout=limit(900))
    passed = {ln.split()[1] for ln in res.stdout.splitlines() if ln.startswith("ok ")}
    return passed, res


@pytest.mark.parametrize("name", CHECKS)
def test_gpu_kernels_match_cpu_on_the_simulator(simulated, name):
    passed, res = simulated
    assert name in passed, f"{name} failed on the CUDA simulator:\n{res.stdout[-3000:]}\n" \
                           f"{res.stderr[-6000:]}"


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
