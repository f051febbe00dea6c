"""What the GPU launchers share: numba.cuda on demand, one source for two targets.

A model's per-instance logic (Philox words in, a class index or a few sums out) is
a plain Python function decorated with ``nb.njit(inline="always")`` in its kernel
module; :func:`device` compiles the *same* Python source with
``cuda.jit(device=True)``.  The functions it calls that are themselves CPU
dispatchers (the Philox rounds, say) are swapped for their device versions in a
copy of the function's globals, so one source serves both targets and nothing is
written twice.  Only the launchers differ: ``prange`` with private histograms on
the CPU; on the GPU a grid-stride loop, per-warp histograms in shared memory and
one reduction per thread block (an integer atomic add per class into the
output), so integer class counts are the same bits whatever the grid.

Integer class counts (baseline, correlated signals, portfolios, colmad) and sums
(mediation's flaw classes and citation counts; its draws past the tables aside, see
:mod:`kernels.gpu.mediation`) are the CPU's bits, and so are the closed loop's
paths: each round's cases are counted on the device and the float steps between rounds run on the host with the CPU's compiled
functions, since NVVM contracts a multiply and an add into a fused multiply-add
that rounds differently and the next round's thresholds depend on those floats
(:mod:`kernels.gpu.loop`).
Float sums (messages, options, the panel's tables, confidence, redeliberation) keep
the CPU's canonical instance blocks: one thread block sums one canonical block, its
threads' partial sums added in thread order, the blocks in block order, so a GPU
result is the same bits run to run and within 1e-12 relative of the CPU's (the
order inside a block may differ, and CUDA's libdevice ``exp``, ``log``, ``log1p``,
``cos``, ``sin`` and ``erfc`` differ from the CPU's libm in the last bits;
``sqrt`` is correctly rounded on both).  Every model whose kernel draws random
numbers has a launcher here; the one model without a kernel of its own, compare
(it calls the other models' kernels), keeps ``Model.gpu`` false, so
``run.device=cuda`` is refused for it and ``auto`` runs it on the CPU.

Where the two targets need different code for the same bits, a CPU function has a
device twin that :func:`device` compiles in its place (:func:`_twins`): the Philox
rounds, whose CPU form multiplies 64-bit words with zero upper halves, run on the GPU
in 32-bit words with PTX's ``mul.wide.u32`` (:func:`kernels.rng.philox4x32_10_w32`:
NVVM compiles the CPU form to 64-bit multiplies, which cost an add of a zero high
product each and more registers; the twin is plain Python too, so the simulator and
the CPU's tests run it).  ``python tests/gpu_ptx_checks.py --report`` prints each
kernel's registers, local and shared memory, occupancy and hot-loop instructions as
compiled for compute capability 9.0, without a GPU.

What the simulator does not check: the CUDA compiler takes a local or shared array's
shape only as integer literals (a module constant such as ``THREADS``, or a tuple of
them), not as an expression (``4 * P``), which the simulator runs without complaint;
so each launcher names its shapes as module constants.  ``tests/test_gpu_ptx.py``
compiles every launcher's kernel for compute capability 9.0 with numba-cuda (no GPU
needed), and ``tests/test_gpu.py`` runs them on a GPU.

numba.cuda is imported only when a GPU path is asked for: importing it costs
time, and a machine without the CUDA driver still runs everything on the CPU.
``NUMBA_ENABLE_CUDASIM=1`` runs the same launchers on numba's CUDA simulator
(plain Python, for the tests).
"""

from __future__ import annotations

import os
import types

#: Threads per block of every launcher, and the warps they make: each warp keeps
#: its own shared-memory histogram, so an atomic add contends within a warp only.
THREADS = 256
WARP = 32
WARPS = THREADS // WARP
#: Blocks per multiprocessor of a default grid (enough resident warps to hide the
#: latency of the multiplies; any grid gives the same counts).
BLOCKS_PER_SM = 32
#: Instances per launch: every per-warp counter is a uint32 in shared memory and a
#: warp sees at most this many instances of a launch, so none can overflow.
MAX_LAUNCH = 1 << 31

_CUDA = None
_STATUS = None


def cuda():
    """The ``numba.cuda`` module, imported on first use.

    numba-cuda's driver module imports ``numpy.row_stack``, which NumPy 2.4
    removed; the alias below restores it (``vstack`` is what it was) so that the
    import works with a current NumPy, and its deprecation warning about NumPy's
    'generic' timedelta unit (NumPy 2.5) is silenced for the import alone.
    """
    global _CUDA
    if _CUDA is None:
        import numpy as np

        if not hasattr(np, "row_stack"):
            np.row_stack = np.vstack  # noqa: NPY201 - restored for numba-cuda
        import warnings

        with warnings.catch_warnings():
            # numba-cuda 0.30 with NumPy 2.5 warns at import that the 'generic'
            # timedelta unit is deprecated (its own code, not a caller's); under
            # -W error (the tests) the import would fail and the GPU look absent.
            warnings.filterwarnings("ignore", message="The 'generic' unit for NumPy "
                                    "timedelta", category=DeprecationWarning)
            from numba import cuda as _cuda

        _CUDA = _cuda
    return _CUDA


def simulator() -> bool:
    """Whether numba's CUDA simulator stands in for a GPU (``NUMBA_ENABLE_CUDASIM=1``)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def status() -> tuple[bool, str]:
    """``(usable, why)``: whether a CUDA GPU (or the simulator) can run the kernels,
    and if not, why not (no numba.cuda, no driver, no device)."""
    global _STATUS
    if _STATUS is None:
        _STATUS = _probe()
    return _STATUS


def _probe() -> tuple[bool, str]:
    try:
        c = cuda()
    except Exception as exc:  # noqa: BLE001 - any import failure means: no GPU path
        return False, (f"numba.cuda cannot be imported ({type(exc).__name__}: {exc}); "
                       "install the GPU extra: pip install 'antiamp[gpu]'")
    if simulator():
        return True, "numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
    try:
        ok = bool(c.is_available())
    except Exception as exc:  # noqa: BLE001 - a broken driver is no GPU
        return False, f"the CUDA driver failed ({type(exc).__name__}: {exc})"
    if not ok:
        return False, ("numba finds no CUDA GPU on this machine (no NVIDIA driver or no "
                       "device; the GPU extra is pip install 'antiamp[gpu]')")
    try:
        name = c.get_current_device().name
        name = name.decode() if isinstance(name, bytes) else str(name)
    except Exception as exc:  # noqa: BLE001
        return False, f"the CUDA device cannot be opened ({type(exc).__name__}: {exc})"
    return True, name


_DEVICE: dict = {}
_TWINS = None


def _mul_wide_u32():
    """PTX's ``mul.wide.u32`` (two 32-bit words to their 64-bit product: one wide
    multiply on the GPU), as a numba intrinsic for device code: the device version of
    :func:`kernels.rng.mul_wide32`, whose plain product NVVM compiles to a 64-bit
    multiply (see there).  Inline assembly because no libdevice function or NVVM
    intrinsic is a 32x32->64 multiply."""
    cuda()
    from llvmlite import ir
    from numba.core import types

    try:
        from numba.cuda.extending import intrinsic
    except ImportError:  # numba-cuda before its own extension API
        from numba.core.extending import intrinsic  # type: ignore[assignment]

    @intrinsic
    def mul_wide_u32(typingctx, a, m):
        sig = types.uint64(types.uint32, types.uint32)

        def codegen(context, builder, sig, args):
            fnty = ir.FunctionType(ir.IntType(64), [ir.IntType(32), ir.IntType(32)])
            asm = ir.InlineAsm(fnty, "mul.wide.u32 $0, $1, $2;", "=l,r,r")
            return builder.call(asm, list(args))

        return sig, codegen

    return mul_wide_u32


def _twins():
    """``{CPU function: its device version}`` where the two targets need different
    code for the same bits: the Philox rounds in 32-bit words
    (:func:`kernels.rng.philox4x32_10_w32`, the CPU keeping its 64-bit form) and their
    32x32->64 multiply as ``mul.wide.u32`` (on the simulator the plain product runs)."""
    global _TWINS
    if _TWINS is None:
        from .. import rng

        twins: dict = {rng.philox4x32_10.py_func: lambda: device(rng.philox4x32_10_w32)}
        if not simulator():
            twins[rng.mul_wide32.py_func] = _mul_wide_u32
        _TWINS = twins
    return _TWINS


def device(fn, replace=None):
    """The ``cuda.jit(device=True)`` compilation of ``fn``'s Python source.

    ``fn`` is a numba CPU dispatcher (its ``py_func`` is the source) or a plain
    function.  Every global it names that is a CPU dispatcher is replaced, in a
    copy of its globals, by that dispatcher's device function (recursively), so
    the device code calls device code only; a function with a device twin
    (:func:`_twins`) is replaced by the twin.  ``replace`` ({CPU dispatcher's
    ``py_func``: plain function}) compiles a variant in which those functions, at any
    depth of the calls, are the given ones (a kernel for inputs that never reach a
    rare branch, say, without that branch's registers).
    """
    from numba.core.registry import CPUDispatcher

    py = getattr(fn, "py_func", fn)
    key = (py, tuple(replace.items())) if replace else py
    if key in _DEVICE:
        return _DEVICE[key]
    twin = _twins().get(py)
    if twin is not None:
        dev = _DEVICE[key] = twin()
        return dev
    glb = dict(py.__globals__)
    for name in py.__code__.co_names:
        v = glb.get(name)
        if isinstance(v, CPUDispatcher):
            sub = (replace or {}).get(v.py_func)
            glb[name] = device(sub) if sub is not None else device(v, replace)
    clone = types.FunctionType(py.__code__, glb, py.__name__, py.__defaults__, py.__closure__)
    clone.__qualname__ = py.__qualname__
    clone.__module__ = py.__module__
    dev = cuda().jit(device=True)(clone)
    _DEVICE[key] = dev
    return dev


def jit(max_registers: int = 0):
    """``cuda.jit`` for a launcher whose registers are capped at ``max_registers`` a
    thread where the CUDA compiler runs (the simulator takes no cap and needs none).

    A cap is for a kernel whose register count alone keeps its occupancy low and which,
    capped, compiles without spills to local memory (``tests/gpu_ptx_checks.py
    --report`` shows both; a cap changes the allocation of registers, not the code's
    results)."""
    c = cuda()
    if max_registers and not simulator():
        return c.jit(max_registers=int(max_registers))
    return c.jit


def grid_blocks(count: int, blocks: int = 0) -> int:
    """Thread blocks of a launch over ``count`` instances: ``blocks`` if given, else
    BLOCKS_PER_SM per multiprocessor, never more than the instances need."""
    need = max(1, -(-int(count) // THREADS))
    if blocks:
        return max(1, min(int(blocks), need))
    try:
        sms = int(cuda().get_current_device().MULTIPROCESSOR_COUNT)
    except Exception:  # noqa: BLE001 - the simulator has no such attribute
        sms = 1
    return max(1, min(sms * BLOCKS_PER_SM, need))


#: Seconds a launch aims at when the caller leaves its size to :func:`launches`: the
#: host waits for each launch before the next, so that Python's signal handlers run
#: between them and a Ctrl-C stops a GPU run within about this long.
LAUNCH_SECONDS = 0.25
#: Instances of the first such launch (its time sizes the next ones).
FIRST_LAUNCH = 1 << 20


def launches(count: int, step: int = MAX_LAUNCH, first: int = FIRST_LAUNCH):
    """``(offset, size)`` pieces of at most ``step`` instances covering ``count``.

    With the default ``step`` the pieces grow from ``first`` (:data:`FIRST_LAUNCH`
    instances; a launcher whose unit of work is a canonical block of instances, or
    costs many instances' work, passes fewer) towards
    :data:`LAUNCH_SECONDS` of GPU time each (at most eight times the last piece,
    never past :data:`MAX_LAUNCH`), the GPU synchronised after each: a kernel whose
    instance costs a thousand debate rounds is then as quick to interrupt as one
    whose instance costs one.  The counts do not depend on the pieces (every random
    number is keyed by its instance), so timing may choose them."""
    import time

    adaptive = int(step) >= MAX_LAUNCH
    step = max(1, min(int(step), MAX_LAUNCH))
    done, size = 0, min(step, max(1, int(first))) if adaptive else step
    while done < count:
        m = min(size, count - done)
        t0 = time.perf_counter()
        yield done, m
        done += m
        if adaptive and done < count:
            cuda().synchronize()  # the piece done: a pending Ctrl-C is raised here
            dt = time.perf_counter() - t0
            grow = LAUNCH_SECONDS / dt if dt > 0 else 8.0
            size = max(1, min(step, int(m * min(8.0, max(0.125, grow)))))
