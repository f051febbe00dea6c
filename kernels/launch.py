"""Class-count launchers built around a model's per-instance function (the CPU side).

A model whose every instance falls in one of ``C`` classes (the baseline's
transcript classes, say) writes one function, the per-instance logic::

    @numba.njit(inline="always")
    def classify(i, k0, k1, thr):      # i: uint64 instance index; k0, k1: the key
        w0, w1, w2, w3 = philox4x32_10(i & LO_WORD, i >> HI_SHIFT, 0, STREAM, k0, k1)
        return ...                     # an integer class in [0, C)

and :func:`antiamp.runner.count_classes` counts the classes of instances
``start .. start + n - 1`` with it on either target: :func:`cpu_counter` here (a
``prange`` over fixed blocks of instances, a private histogram each) or
:func:`antiamp.kernels.gpu.launch.gpu_counter` (the same source compiled with
``cuda.jit(device=True)``, a grid-stride loop with per-warp histograms in shared
memory).  Every random number is a pure function of (seed, instance, slot), and
integer adds commute, so both give the same counts, bit for bit, for any thread
count, grid or split of the range (DESIGN, "One kernel, two targets").

The CPU launcher computes a batch of instances' classes first (a loop LLVM
vectorises) and counts them into four histograms: :func:`fused_counts`, the loop
of the baseline's and the correlated signals' one-cell kernels too:
on the baseline's own per-instance function it runs at about 1.7 times the time of
the bare Philox floor against the tuned kernel's 1.45 (``benchmarks/bench_launch.py``).
The built-in models keep launchers of their own (several cells a pass, word
buffers shared between protocols, batched draws past one block): what their speed
needs beyond this.  Written here rather than taken from a library because no
library launches numba functions on both targets.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .interrupt import stopped

_CPU: dict = {}
#: Instances whose classes a thread computes before it counts them (the baseline's
#: batch: its words and classes stay in the first-level cache).
BATCH = 256


# The one-cell class-count loop, written once: the baseline's and the correlated
# signals' fused kernels (``kernels.transcript_classes.class_counts``,
# ``kernels.correlated.signal_class_counts_one``) and ``cpu_counter`` run it.  Why an
# inlined function that takes the per-instance function as an
# argument, rather than a factory or a first-class function: numba inlines it into
# each model's own ``njit(parallel=True, cache=True)`` kernel before it looks for
# ``prange`` loops, so the kernel compiles to the loop it had when written out by
# hand (same speed, the per-instance function inlined in the batch loop), and stays
# cached on disk (a factory's closure is not: see ``cpu_counter``), whereas a
# first-class function argument is an indirect call that LLVM cannot inline or vectorise.
@nb.njit(inline="always", cache=True)
def fused_counts(classify, params, start, count, k0, k1, stream, n_blocks, n_classes,
                 index=np.uint8):
    """int64[n_classes]: the classes ``classify(i, k0, k1, stream, params)`` (an
    ``inline="always"`` function returning a class in [0, n_classes), unchecked) gives
    instances ``start .. start + count - 1``, in ``n_blocks`` blocks of consecutive
    instances run in parallel.  ``params``: what ``classify`` reads besides the
    instance (the built-in kernels: a tuple of the thresholds, taken out of their
    arrays once; numbers only, no bools: numba's alias analysis takes any value read
    out of the tuple in the parallel loop that is not a number for a possible alias,
    and the loop's compiled function then loses ``noalias`` on all its arrays);
    ``index``: the integer type that holds a batch's classes (``uint8``
    up to 256 classes).  Called from an ``njit(parallel=True)`` kernel."""
    out = np.zeros((n_blocks, n_classes), np.int64)
    bsize = (count + n_blocks - 1) // n_blocks
    for b in nb.prange(n_blocks):
        lo = start + b * bsize
        hi = min(start + count, lo + bsize)
        # A batch's classes first (a loop LLVM vectorises), then four interleaved
        # histograms, so that consecutive adds to one class do not wait on each other.
        local = np.zeros((4, n_classes), np.int64)
        idx = np.empty(BATCH, index)
        for i0 in range(lo, hi, BATCH):
            if stopped():  # Ctrl-C: the caller raises KeyboardInterrupt
                break
            m = min(BATCH, hi - i0)
            for j in range(m):
                idx[j] = classify(np.uint64(i0 + j), k0, k1, stream, params)
            for j in range(m):
                local[j & 3, idx[j]] += 1
        for r in range(4):
            for c in range(n_classes):
                out[b, c] += local[r, c]
    return out.sum(axis=0)


def cpu_counter(classify, n_classes: int):
    """A compiled ``run(start, count, k0, k1, thr, n_blocks) -> int64[n_classes + 1]``:
    the classes ``classify`` gives instances ``start .. start + count - 1``, in
    ``n_blocks`` blocks of consecutive instances run in parallel; the last entry
    counts the instances whose class fell outside [0, n_classes) (the caller refuses
    a result where it is not 0).  Built once for each (function, n_classes)."""
    key = (getattr(classify, "py_func", classify), int(n_classes))
    run = _CPU.get(key)
    if run is not None:
        return run
    C = int(n_classes)
    if C < 1:
        raise ValueError(f"n_classes must be an integer >= 1, got {n_classes!r}")

    @nb.njit(inline="always")
    def classify_or_last(i, k0, k1, stream, thr):
        c = classify(i, k0, k1, thr)
        return c if 0 <= c < C else C  # never an index outside the histogram

    # Not cached on disk: numba keys a closure's cache by its pickled cells, and a
    # dispatcher pickles with a new identity in every process, so each process
    # compiles its launchers once (seconds), as numba does any uncached function.
    @nb.njit(parallel=True)
    def run(start, count, k0, k1, thr, n_blocks):
        # int32 classes in a batch: any n_classes, and none wrapped to a smaller type
        return fused_counts(classify_or_last, thr, start, count, k0, k1, np.uint64(0),
                            n_blocks, C + 1, np.int32)

    _CPU[key] = run
    return run
