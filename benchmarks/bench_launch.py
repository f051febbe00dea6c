"""The generic class-count launcher beside the baseline's tuned kernel and the floor.

    python benchmarks/bench_launch.py [--n 200000000] [--repeats 5]

A model of one's own gets its CPU and GPU paths from one per-instance function and
``antiamp.runner.count_classes`` (``kernels/launch.py``).  What does that cost
against a launcher tuned by hand?  The baseline model written as such a function
(its own ``_class_index`` on the instance's Philox block, at c_e = 0 so one block an
instance) is counted three ways in one run, interleaved repeats, medians, all
threads:

* ``count_classes``, the generic launcher (a prange over blocks of instances, one
  histogram a block);
* ``kernels.baseline.class_counts``, the baseline's own (words a batch first, four
  histograms a thread so that consecutive adds do not wait on each other);
* ``kernels.baseline.bare_philox``, the vectorised floor (the same Philox blocks,
  XOR-folded, nothing else).

The counts of the first two are checked equal before anything is timed.  The first
call of ``count_classes`` in a process compiles its launcher (numba cannot cache a
closure over a function on disk): its seconds are printed too.
"""

from __future__ import annotations

import argparse
import os
import time

import numba as nb
import numpy as np

from antiamp.kernels import baseline as kb
from antiamp.kernels.rng import HI_SHIFT, LO_WORD, philox4x32_10, split_seed
from antiamp.runner import baseline_thresholds, count_classes

STREAM = np.uint64(kb.STREAM)


@nb.njit(inline="always")
def baseline_class(i, k0, k1, thr):
    """The baseline's transcript class of instance i, strategies 0 or 1 (no second
    block), a signal stance: :func:`kernels.baseline._class_index` on its words."""
    w0, w1, w2, w3 = philox4x32_10(i & LO_WORD, i >> HI_SHIFT, np.uint64(0), STREAM, k0, k1)
    return np.int64(kb._class_index(w0, w1, w2, w3, np.uint64(0), np.uint64(0),
                                    thr[kb.T_PI], thr[kb.T_P], thr[kb.T_RHO], thr[kb.T_XPC],
                                    thr[kb.T_XPD], thr[kb.T_XA], False, np.uint8(0)))


def run(quick: bool = False, n: int | None = None, repeats: int | None = None) -> dict:
    """The three launchers timed (interleaved repeats, medians), counts checked first."""
    n = n or (20_000_000 if quick else 200_000_000)
    repeats = repeats or (2 if quick else 5)
    thr = baseline_thresholds(0.5, 0.8, 0.3, 1.0, 1.0, 1.0)
    seed = 1
    k0, k1 = split_seed(seed)
    blocks = 4 * nb.get_num_threads()
    load0 = os.getloadavg()[0]
    t = time.perf_counter()
    first = count_classes(baseline_class, kb.N_CLASSES, thr, 1000, seed, progress=False)
    compile_s = time.perf_counter() - t
    kb.class_counts(thr, 0, 0, 0, 1000, k0, k1, STREAM, blocks)
    kb.bare_philox(0, 1000, k0, k1, STREAM, blocks)
    check = 2_000_000
    got = count_classes(baseline_class, kb.N_CLASSES, thr, check, seed, progress=False)
    want = kb.class_counts(thr, 0, 0, 0, check, k0, k1, STREAM, blocks)
    assert first.sum() == 1000 and np.array_equal(got, want), (got, want)

    runs = {
        "count_classes (generic launcher)": lambda: count_classes(
            baseline_class, kb.N_CLASSES, thr, n, seed, progress=False),
        "kernels.baseline.class_counts (tuned)": lambda: kb.class_counts(
            thr, 0, 0, 0, n, k0, k1, STREAM, blocks),
        FLOOR: lambda: kb.bare_philox(0, n, k0, k1, STREAM, blocks),
    }
    times: dict = {k: [] for k in runs}
    for _ in range(repeats):
        for name, fn in runs.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {"n": n, "repeats": repeats, "threads": nb.get_num_threads(),
            "compile_s": compile_s, "load": [load0, os.getloadavg()[0]],
            "seconds": {k: float(np.median(v)) for k, v in times.items()}}


FLOOR = "bare_philox (floor)"


def table(res: dict) -> list:
    floor = res["seconds"][FLOOR]
    return (["| launcher | instances/s | x the floor's time |", "|---|---:|---:|"]
            + [f"| {name} | {res['n'] / s:.3g} | {s / floor:.2f} |"
               for name, s in res["seconds"].items()])


def report(res: dict) -> list:
    """The section of BENCHMARKS.md (written by ``run_all.py``)."""
    head = [
        "## A model's own per-instance function: the generic launcher", "",
        f"`python benchmarks/bench_launch.py` ({res['n']:.3g} instances a timing, "
        f"{res['repeats']} repeats, medians, {res['threads']} threads, load average "
        f"{res['load'][0]:.2f} before and {res['load'][1]:.2f} after): the baseline model "
        "written as one per-instance function and counted by "
        "`antiamp.runner.count_classes` (what a model of one's own gets, on the CPU and, "
        "from the same source, on a GPU), beside the baseline's tuned kernel and the bare "
        "Philox floor; the first two give the same counts (checked before timing).", ""]
    tail = ["", f"The first call in a process compiles the launcher: {res['compile_s']:.1f} s "
            "here (numba cannot cache a closure over the model's function on disk).", ""]
    return head + table(res) + tail


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200_000_000, help="instances a timing")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    res = run(n=args.n, repeats=args.repeats)
    print(f"{res['n']:.3g} instances a timing, {res['repeats']} repeats (medians), "
          f"{res['threads']} threads, load {res['load'][1]:.1f}")
    print("\n".join(table(res)))
    print(f"first call of count_classes (compiling its launcher): {res['compile_s']:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
