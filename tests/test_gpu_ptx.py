"""Every GPU kernel compiled for a real GPU (compute capability 9.0: H100, H200)
without one: ``tests/gpu_ptx_checks.py`` in a process of its own.

numba's CUDA simulator (``tests/test_gpu_sim.py``) runs the launchers as Python and
so cannot show what the CUDA compiler refuses: a local or shared array whose shape is
an expression (``cuda.local.array(4 * P, ...)``) runs there and fails to compile on a
GPU.  This compiles each launcher's kernel with numba-cuda for its launch's argument
types, to PTX and to machine code (NVVM and nvJitLink, from ``antiamp[gpu]``; no
driver needed), and checks that the 64-bit integer atomic adds on shared memory
(colmad's and mediation's sums of squares) are the hardware's ``atom.shared.add.u64``.
Skipped where numba-cuda or its compiler is not installed (the test extra has neither:
``pip install ".[gpu]"`` brings them).
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

pytestmark = pytest.mark.skipif(importlib.util.find_spec("numba_cuda") is None,
                                reason="numba-cuda is not installed (pip install '.[gpu]')")


def test_every_gpu_kernel_compiles_for_compute_capability_9(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    res = subprocess.run([sys.executable, str(HERE / "gpu_ptx_checks.py")], env=env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    if res.returncode == 3:
        pytest.skip(res.stdout.strip())
    assert res.returncode == 0, f"{res.stdout[-6000:]}\n{res.stderr[-6000:]}"
    compiled = {ln.split()[1] for ln in res.stdout.splitlines() if ln.startswith("ok ")}
    assert len(compiled) == 15, res.stdout
    assert "atom.shared.add.u64" in res.stdout
