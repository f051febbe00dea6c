"""Running compiled kernels: chunks, threads, progress.

Chunks exist for progress reporting and interruption only: every kernel returns
integer counts keyed by the global instance index, so the result does not depend
on the chunk size or the thread count.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

from .lazy import lazy

numba = lazy("numba")
import numpy as np

kb = lazy("antiamp.kernels.transcript_classes")
_kb_gpu = lazy("antiamp.kernels.gpu.baseline")  # imports numba.cuda: only when asked for
_rng = lazy("antiamp.kernels.rng")

from .config import ConfigError


class _NoBar:
    """What a disabled progress bar does (nothing), without importing tqdm (with
    asyncio: 25 ms of a small run's start-up)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False

    def update(self, n: int = 1) -> None:
        pass


NO_BAR = _NoBar()


def max_threads() -> int:
    return int(numba.config.NUMBA_NUM_THREADS)


def interactive() -> bool:
    """Whether progress bars show by default (``run.progress: null``): on a terminal
    or in a Jupyter kernel (tqdm.auto draws a widget there), not in a CI log or a
    redirected file."""
    if sys.stderr.isatty():
        return True
    ip = sys.modules.get("IPython")
    try:
        shell = ip.get_ipython() if ip is not None else None
    except Exception:  # noqa: BLE001 - any failure means: not a notebook
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def tqdm_class():
    """tqdm's notebook bar in a Jupyter kernel that has ipywidgets, its text bar
    everywhere else.  ``tqdm.auto`` imported in a kernel without ipywidgets warns
    (TqdmWarning: IProgress not found) in every first cell and falls back to the
    text bar: that fallback, taken here without importing ``tqdm.auto``, says
    nothing."""
    if "IPython" in sys.modules and not sys.stderr.isatty() and interactive():
        import importlib.util

        if importlib.util.find_spec("ipywidgets") is not None:
            from tqdm.auto import tqdm

            return tqdm
    from tqdm import tqdm

    return tqdm


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was caused by, a Ctrl-C: a SIGINT that lands while a
    parallel compiled kernel runs reaches Python as the kernel returns, which then
    raises ``SystemError: ... returned a result with an exception set`` with the
    KeyboardInterrupt as its cause."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


@contextmanager
def kernel_interrupts():
    """Around any model's kernels: a Ctrl-C during a kernel stops it within a block of
    work (:mod:`antiamp.kernels.interrupt`) and is a KeyboardInterrupt (one line and
    exit 130 in the commands), never a SystemError nor an incomplete result."""
    from antiamp.kernels.interrupt import armed

    try:
        with armed():
            yield
    except SystemError as exc:
        if interrupted(exc):
            raise KeyboardInterrupt from None
        raise


@contextmanager
def numba_threads(n: int):
    """Run with ``n`` compiled threads (0 = all), restoring the previous setting."""
    avail = max_threads()
    if n > avail:
        raise ConfigError(f"run.n_threads must be between 0 and {avail} on this machine, got {n}")
    prev = numba.get_num_threads()
    numba.set_num_threads(n or avail)
    try:
        yield numba.get_num_threads()
    finally:
        numba.set_num_threads(prev)


@contextmanager
def kernel_threads(n: int):
    """Run a model's kernels with at most ``n`` compiled threads (0: the current
    setting, e.g. one a worker chose), restoring the previous setting after."""
    prev = numba.get_num_threads()
    want = min(int(n), max_threads()) if n else prev
    if want != prev:  # a grid's cell usually asks for the count in force: nothing set
        numba.set_num_threads(want)
    try:
        yield numba.get_num_threads() if want != prev else prev
    finally:
        if numba.get_num_threads() != prev:  # changed here or by the kernels
            numba.set_num_threads(prev)


def block_ranges(n_blocks: int, bytes_per_block: int, budget: int):
    """(first, count) ranges covering ``n_blocks`` blocks, each range holding at most
    ``budget`` bytes of per-block partial sums (at least one block a range): how the
    multi-cell kernels bound their memory whatever the number of cells."""
    step = max(1, budget // max(1, bytes_per_block))
    for first in range(0, n_blocks, step):
        yield first, min(step, n_blocks - first)


def device_of(device: str) -> str:
    """``cpu`` or ``cuda``: where ``run.device`` runs the kernels (``auto``: the GPU when
    numba.cuda sees one, else the CPU; ``cuda`` was checked by the config's validation)."""
    if device == "auto":
        from antiamp.kernels.gpu import status

        return "cuda" if status()[0] else "cpu"
    return device


def count_classes(classify, n_classes: int, thr, n: int, seed: int, *, start: int = 0,
                  device: str = "cpu", n_threads: int = 0, progress: bool | None = None,
                  chunk_size: int = 1 << 25, desc: str = "simulating") -> np.ndarray:
    """How many of instances ``start .. start + n - 1`` fall in each class: int64[n_classes].

    ``classify(i, k0, k1, thr)`` is a model's per-instance function, compiled with
    ``numba.njit(inline="always")``: the instance index ``i`` (uint64), the key words of
    ``seed`` (:func:`antiamp.kernels.rng.split_seed`) and the model's parameters
    ``thr`` (a 1-D array, Bernoulli thresholds say) in, an integer class in
    ``[0, n_classes)`` out; its random numbers come from
    :func:`antiamp.kernels.rng.philox4x32_10` keyed by the instance.  ``device``
    (``run.device``: ``cpu``, ``cuda`` or ``auto``) picks the target; both run the
    same source and give the same counts, bit for bit, whatever the chunking, the
    threads or the GPU's grid (:mod:`antiamp.kernels.launch`).  A class outside the
    range is refused (ValueError) after the run.
    """
    n_classes, n, start = int(n_classes), int(n), int(start)
    if n < 0 or start < 0:
        raise ValueError(f"n and start must be >= 0, got n={n}, start={start}")
    k0, k1 = _rng.split_seed(seed)
    thr = np.ascontiguousarray(thr)
    disable = (not interactive()) if progress is None else (not progress)
    bar = NO_BAR if disable else tqdm_class()(total=n, unit="inst", unit_scale=True,
                                              desc=desc, leave=False)
    if device_of(device) == "cuda":
        from antiamp.kernels.gpu.launch import gpu_counter

        run = gpu_counter(classify, n_classes)
        with bar:
            total = run(start, n, k0, k1, thr)
            bar.update(n)
    else:
        from antiamp.kernels.launch import cpu_counter

        run = cpu_counter(classify, n_classes)
        total = np.zeros(n_classes + 1, np.int64)
        with kernel_threads(n_threads) as nt, bar:  # 0: the worker's own setting
            done = 0
            while done < n:
                m = min(int(chunk_size), n - done)
                total += run(start + done, m, k0, k1, thr, 4 * nt)
                done += m
                bar.update(m)
    if total[n_classes]:
        raise ValueError(f"the per-instance function {getattr(classify, '__name__', classify)} "
                         f"returned a class outside [0, {n_classes}) for {int(total[n_classes])} "
                         "instances")
    return total[:n_classes]


def baseline_thresholds(pi, p, rho, x_pc, x_pd, x_a) -> np.ndarray:
    return np.array(
        [_rng.bernoulli_threshold(q) for q in (pi, p, rho, x_pc, x_pd, x_a)], dtype=np.uint64
    )


def run_baseline_counts(
    thr: np.ndarray,
    fixed: bool,
    a_fixed: int,
    n: int,
    seed: int,
    *,
    start: int = 0,
    chunk_size: int = 1 << 25,
    n_threads: int = 0,
    progress: bool | None = None,
    desc: str = "simulating",
    device: str = "cpu",
) -> np.ndarray:
    """Class counts of the baseline kernel over instances [start, start + n).

    ``device="cuda"`` (or ``"auto"`` with a GPU) runs the GPU kernel: the same
    counts, in launches of up to 2**31 instances (``chunk_size`` is the CPU's step).
    """
    k0, k1 = _rng.split_seed(seed)
    total = np.zeros(kb.N_CLASSES, np.int64)
    disable = (not interactive()) if progress is None else (not progress)
    if device_of(device) == "cuda":
        with (NO_BAR if disable else tqdm_class()(
                total=n, unit="inst", unit_scale=True, desc=desc, leave=False)) as bar:
            return _kb_gpu.class_counts(thr, int(fixed), int(a_fixed), start, n, k0, k1,
                                        np.uint64(kb.STREAM),
                                        on_step=None if disable else bar.update)
    with numba_threads(n_threads) as nt, (NO_BAR if disable else tqdm_class()(
        total=n, unit="inst", unit_scale=True, desc=desc, leave=False
    )) as bar:
        n_blocks = 4 * nt
        done = 0
        while done < n:
            m = min(chunk_size, n - done)
            total += kb.class_counts(
                thr, int(fixed), int(a_fixed), start + done, m, k0, k1,
                np.uint64(kb.STREAM), n_blocks,
            )
            done += m
            bar.update(m)
    return total
