"""Every GPU kernel compiled for a real GPU (compute capability 9.0: H100, H200)
without one: ``tests/gpu_ptx_checks.py`` in a process of its own.

numba's CUDA simulator (``tests/test_gpu_sim.py``) runs the launchers as Python and
so cannot show what the CUDA compiler refuses: a local or shared array whose shape is
an expression (``cuda.local.array(4 * P, ...)``) runs there and fails to compile on a
GPU.  This compiles each launcher's kernel with numba-cuda for its launch's argument
types, to PTX and to machine code (NVVM and nvJitLink, from ``antiamp[gpu]``; no
driver needed), and checks that the 64-bit integer atomic adds on shared memory
(colmad's and mediation's sums of squares) are the hardware's ``atom.shared.add.u64``,
that the Philox rounds are 32-bit wide multiplies, and the report of each kernel's
registers, local memory and occupancy (``--report``): no kernel spills.
Skipped where numba-cuda or its compiler is not installed (the test extra has neither:
``pip install ".[gpu]"`` brings them).
"""

from limits import limit
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

needs_numba_cuda = pytest.mark.skipif(importlib.util.find_spec("numba_cuda") is None,
                                      reason="numba-cuda is not installed (pip install '.[gpu]')")


@needs_numba_cuda
def test_every_gpu_kernel_compiles_for_compute_capability_9(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    res = subprocess.run([sys.executable, str(HERE / "gpu_ptx_checks.py"), "--report",
                          "--json", "report.jsonl"], env=env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=limit(1200))
    if res.returncode == 3:
        pytest.skip(res.stdout.strip())
    assert res.returncode == 0, f"{res.stdout[-6000:]}\n{res.stderr[-6000:]}"
    compiled = {ln.split()[1] for ln in res.stdout.splitlines() if ln.startswith("ok ")}
    assert len(compiled) == 17, res.stdout
    assert "atom.shared.add.u64" in res.stdout
    rows = {r["kernel"]: r for r in
            map(json.loads, (tmp_path / "report.jsonl").read_text().splitlines())}
    assert set(rows) == compiled
    assert f"| baseline._floor | {rows['baseline._floor']['regs']} |" in res.stdout
    for k, r in rows.items():
        # Every kernel draws in its hot loop, each Philox block as 20 (19 where a counter
        # word is constant) 32-bit wide multiplies, none as a 64-bit multiply.
        assert r["philox_mul64"] == 0 and r["mul_wide_u32"] >= 19, (k, r)
        assert r["regs"] and r["spill_st"] == 0 and r["spill_ld"] == 0, (k, r)
        assert 0 < r["occupancy"] <= 1 and r["limit"], (k, r)
    floor = rows["baseline._floor"]
    assert floor["local"] == 0 and floor["smem"] == 0 and floor["ld_local"] == 0
    assert floor["mul_wide_u32"] == 20 and floor["libdevice"] == {}


def test_occupancy_on_compute_capability_9():
    """The occupancy arithmetic against CUDA's calculator's figures for 256 threads."""
    from gpu_ptx_report import occupancy
    assert occupancy(32, 0, 256) == (8, 1.0, "warps")
    assert occupancy(40, 0, 256) == (6, 0.75, "registers")
    assert occupancy(48, 0, 256) == (5, 0.625, "registers")
    assert occupancy(64, 0, 256) == (4, 0.5, "registers")
    assert occupancy(168, 0, 256) == (1, 0.125, "registers")
    assert occupancy(255, 0, 256) == (1, 0.125, "registers")
    assert occupancy(32, 32768, 256) == (6, 0.75, "shared memory")  # 228 KiB / 33 KiB
    assert occupancy(32, 100 * 1024, 256) == (2, 0.25, "shared memory")
