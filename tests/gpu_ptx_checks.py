"""Every GPU kernel compiled to PTX for a real GPU, on a machine without one.

numba's CUDA simulator runs the launchers as Python and never compiles them, so it
cannot show what the CUDA compiler refuses.  Here the launchers run with numba-cuda's
compiler (NVVM from the ``nvidia-cuda-nvcc`` wheel of ``antiamp[gpu]``) for a
compute-capability-9.0 device (an H100 or H200) that is not there: each launch
compiles its kernel for the launch's argument types and records the PTX instead of
running it (device arrays stand in as host arrays of zeros, so the launchers' host
steps run on zeros).  Run by ``tests/test_gpu_ptx.py`` in a process of its own (it
replaces numba-cuda's device query and launch); ``python gpu_ptx_checks.py`` prints
``ok NAME`` a kernel compiled and ``ptx NAME: ...`` for each construct checked.

``python gpu_ptx_checks.py --report [--json FILE]`` also prints, per kernel, what
makes a kernel slow on the card, read from its machine code (the PTX linked for
sm_90a by the linker numba-cuda loads kernels with, nvJitLink, verbose; no driver):
registers a thread, local memory (stack) and spills, static shared memory a block,
hence the theoretical occupancy at ``THREADS`` a block on compute capability 9.0;
and, in the hot loop (the PTX's largest loop: the grid-stride loop), the 64-bit
multiplies by the Philox constants against 32-bit wide multiplies, double-precision
divisions and local loads and stores, with the libdevice functions the kernel calls.
Where ``nvdisasm`` is on the PATH (or named by ``NVDISASM``), the hot loop's machine
instructions are counted too.  ``benchmarks/gpu_check.sh`` runs it on a GPU machine
beside the timings.
"""

import os
import sys
from types import SimpleNamespace

import numpy as np

assert os.environ.get("NUMBA_ENABLE_CUDASIM", "0") in ("", "0"), "not on the simulator"

try:  # numba-cuda's compiler needs NVVM (antiamp[gpu] brings it), not a GPU
    from numba.cuda.cudadrv import nvvm as _nvvm

    _nvvm.NVVM()
except Exception as exc:  # noqa: BLE001 - no numba-cuda, or no NVVM
    print(f"skip: numba-cuda's CUDA compiler is not available ({type(exc).__name__}: "
          f"{' '.join(str(exc).split())[:300]}); pip install '.[gpu]'")
    sys.exit(3)

from numba.cuda import codegen as _codegen  # noqa: E402
from numba.cuda import dispatcher as _disp  # noqa: E402

CC = (9, 0)
_disp.get_current_device = lambda: SimpleNamespace(compute_capability=CC,
                                                    MULTIPROCESSOR_COUNT=132)
_cc = _codegen.CUDACodeLibrary._ensure_cc
_codegen.CUDACodeLibrary._ensure_cc = lambda self, cc: _cc(self, cc or (*CC, "a"))
_disp._Kernel.bind = lambda self: None  # loading into a context needs the driver
PTX = {}  # "module.kernel" -> PTX of its first launch's signature
CUBIN = {}  # "module.kernel" -> the size of its machine code for CC
LIB = {}  # "module.kernel" -> numba-cuda's code library of that signature


class _Host(np.ndarray):
    """A host array standing for a device array (the launch is only compiled)."""

    def copy_to_host(self, *a, **k):
        return np.asarray(self).copy()


def _to_device(a, *args, **kw):
    return np.ascontiguousarray(a).view(_Host)


def _device_array(shape, dtype=np.float64, *args, **kw):
    return np.zeros(shape, dtype).view(_Host)


def _launch(self, griddim, blockdim, *rest):
    def run(*args):
        sig = tuple(self.typeof_pyval(a) for a in args)
        key = f"{self.py_func.__module__.rsplit('.', 1)[-1]}.{self.py_func.__name__}"
        if key not in PTX:
            self.compile(sig)
            PTX[key] = self.inspect_asm(sig)
            # PTX to machine code for the device (nvJitLink, no driver): ptxas's limits
            # (registers, static shared memory) are checked here.
            LIB[key] = self.overloads[sig]._codelibrary
            cubin = LIB[key].get_cubin(cc=(*CC, "a"))
            code = getattr(cubin, "code", cubin)  # bytes, or cuda.core's ObjectCode
            CUBIN[key] = len(code) if isinstance(code, (bytes, bytearray)) else -1
    return run


from numba import cuda  # noqa: E402

cuda.to_device = _to_device
cuda.device_array = _device_array
cuda.synchronize = lambda: None
_disp.CUDADispatcher.__getitem__ = lambda self, a: _launch(self, *a)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_gpu  # noqa: E402
from gpu_ptx_report import ptx_counts, render, report_rows  # noqa: E402

from antiamp.kernels import loop as kl  # noqa: E402
from antiamp.kernels.gpu import loop as gl  # noqa: E402
from antiamp.kernels.gpu import portfolios as gp  # noqa: E402
from antiamp.kernels.rng import bernoulli_thresholds, split_seed  # noqa: E402


def launchers():
    """``(name, call)`` of every launcher: the benchmark's cases (each kernel family at
    its defaults), the loop's majority learner (its own two kernels), a portfolio
    past 21 items (one histogram copy a block) and the generic class-count launcher."""
    spec, bare = bench_gpu.build_spec(SimpleNamespace(n_cpu=4096, grid_cells=3))
    out = [("floor", lambda: bare(4096))]
    out += [(name, lambda g=g, d=d: g(max(1, 4096 // d))) for name, (g, _, _, d) in spec.items()]
    k0, k1 = split_seed(1)
    J_c, J_d = np.array([0.3, 0.8]), np.array([[0.5, 0.2], [0.9, 0.6]])
    out.append(("loop, majority learner", lambda: gl.loop_paths(
        kl.MAJORITY, 3, 8, 30, 4, 0.3, 0.05, 0.6, 0.7, 0.02, 0.2, 0.3, 0.9, 0.8, 0.7, J_c, J_d,
        0.1, np.array([0.7, 0.2]), 0.4, J_c, True, k0, k1)))
    # Options whose exponents pass the doubles' range: the kernel with the stable-logit
    # fallback (the benchmark's cell never needs it: the kernel without).
    from antiamp.models.options.config import OptionsConfig
    from antiamp.models.options.core import simulate_cells

    out.append(("options, lam = 700 (the fallback's kernel)", lambda: simulate_cells(
        [(0.55, 0.4, 700.0, 0.1, 2.0, OptionsConfig(K=4, antagonist="best_of_k", k_examine=3))],
        4096, 0, 0, "cuda")))
    t = [bernoulli_thresholds([q]) for q in (0.8, 0.7, 0.3)]
    out.append(("portfolio (B = 30)",
                lambda: gp.portfolio_class_counts_cells(*t, 30, 0, 4096, k0, k1, 0)))
    # The generic launcher (antiamp.runner.count_classes) on the baseline's function.
    import test_launch

    from antiamp.runner import baseline_thresholds, count_classes
    thr = baseline_thresholds(0.5, 0.8, 0.3, 1.0, 0.0, 1.0)
    out.append(("generic launcher (baseline's function)", lambda: count_classes(
        test_launch.baseline_class, 32, thr, 4096, 1, device="cuda", progress=False)))
    return out


#: Kernels that must have compiled (module.kernel).
KERNELS = ("baseline._one", "baseline._cells", "baseline._floor", "correlated._cells",
           "portfolios._cells", "messages._blocks", "options._blocks",
           "options._blocks_tabled", "panel._blocks",
           "confidence._blocks", "redeliberation._blocks", "colmad._counts",
           "mediation._sums", "loop._cases", "loop._start", "loop._types", "launch.kern")


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report", action="store_true",
                    help="print each kernel's registers, local and shared memory, "
                         "occupancy and hot-loop instructions")
    ap.add_argument("--json", metavar="FILE",
                    help="with --report: also write a JSON line a kernel to FILE")
    args = ap.parse_args(argv)
    failed = []
    for name, call in launchers():
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - every launcher is tried
            msg = " ".join(str(exc).split())
            failed.append(name)
            print(f"FAILED {name}: {type(exc).__name__}: {msg[:1500]}")
    for k in sorted(PTX):
        print(f"ok {k} (sm_{CC[0]}{CC[1]}a: {len(PTX[k])} characters of PTX, a "
              f"{CUBIN.get(k, 0)}-byte cubin)")
    failed += [k for k in KERNELS if k not in PTX]
    # 64-bit integer atomic adds on shared memory (colmad's and mediation's sums of
    # squares): PTX's atom/red .shared .add .u64 (sm_20 and later), not a CAS loop.
    for k in ("colmad._counts", "mediation._sums"):
        ptx = PTX.get(k, "")
        shared64 = [ln.strip() for ln in ptx.splitlines()
                    if (".shared.add.u64" in ln or ".shared.add.s64" in ln)
                    and ("atom" in ln or "red" in ln)]
        print(f"ptx {k}: {len(shared64)} 64-bit shared atomic adds, e.g. "
              f"{shared64[0] if shared64 else '-'}")
        if not shared64:
            failed.append(f"{k} (no 64-bit shared atomic add)")
    # The Philox rounds as 32-bit wide multiplies (kernels.rng.philox4x32_10_w32), not
    # 64-bit multiplies by the Philox constants.
    wide = {k: ptx_counts(PTX[k]) for k in sorted(PTX)}
    mul64 = [k for k, c in wide.items() if c["philox_mul64"] or not c["mul_wide_u32"]]
    print(f"ptx Philox: {sum(c['mul_wide_u32'] for c in wide.values())} mul.wide.u32 and "
          f"{sum(c['philox_mul64'] for c in wide.values())} 64-bit multiplies by its "
          f"constants in {len(wide)} kernels' hot loops")
    failed += [f"{k} (64-bit Philox multiplies)" for k in mul64]
    if args.report:
        from antiamp.kernels.gpu import THREADS

        rows = report_rows(PTX, LIB, THREADS, CC)
        print("\n".join(render(rows)))
        if args.json:
            import json

            with open(args.json, "w") as f:
                for r in rows:
                    f.write(json.dumps(r) + "\n")
    if failed:
        print(f"FAILED: {failed}")
        sys.exit(1)


if __name__ == "__main__":
    main()
