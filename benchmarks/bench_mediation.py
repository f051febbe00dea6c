"""Pluralistic mediation (model=mediation): the kernel beside its random-number floor.

    python benchmarks/bench_mediation.py [--quick] [--update BENCHMARKS.md]

Timed in the same run, medians over repeats, at the model's defaults: the kernel
(``kernels/mediation.py``: both syntheses per case, as class counts and integer sums
from which the per-case vector's moments for the delta-method standard errors are
weighted in afterwards), its own-style floor (a compiled loop drawing the same Philox
words case by case and nothing else; ``bench_floors.py`` adds the vectorised floor),
and the exact values of one cell.
"""

from __future__ import annotations

import sys
import time

import numba as nb
import numpy as np

from antiamp.models.mediation import core as md
from antiamp.kernels.rng import fill_words, split_seed

import bench_loop
from bench_baseline import median_time as _med


@nb.njit(parallel=True, cache=True)
def philox_floor(n, k0, k1, n_ctr):
    n_blocks = (n + 4095) // 4096
    out = np.zeros(n_blocks)
    for b in nb.prange(n_blocks):
        words = np.empty(4 * n_ctr, np.uint32)
        s = 0.0
        for i in range(b * 4096, min((b + 1) * 4096, n)):
            fill_words(words, i, n_ctr, np.uint64(10), k0, k1)
            for w in words:
                s += np.float64(w)
        out[b] = s
    return out.sum()


def run(quick=False):
    n = 1_000_000 if quick else 4_000_000
    repeats = 2 if quick else 3
    par = md.Params()
    k0, k1 = split_seed(0)
    n_ctr = (1 + 2 * par.iterations + 2 * par.perspectives + 4 + 3) // 4
    t0 = time.perf_counter()
    ex = md.exact(par)
    t_exact = time.perf_counter() - t0
    sim = md.simulate(par, n, seed=0)
    z = max(abs(sim["amp"][0][i] - ex["amp"][i]) / sim["amp"][1][i] for i in range(2))
    if z > 5:
        raise AssertionError(f"kernel disagrees with the exact values: |z| {z:.2f}")
    philox_floor(1000, k0, k1, n_ctr)
    t_floor = _med(lambda: philox_floor(n, k0, k1, n_ctr), repeats)
    t_kernel = _med(lambda: md.simulate(par, n, seed=0), repeats)
    t_exact = min(t_exact, _med(lambda: md.exact(par), repeats))
    return {"n": n, "floor_s": t_floor, "kernel_s": t_kernel, "exact_s": t_exact, "z": z}


def report(r) -> list:
    n = r["n"]
    return [
        "## Pluralistic mediation: the kernel beside its floor",
        "",
        f"`model=mediation` at its defaults: {n:,} cases, both syntheses on each. The kernel "
        f"agrees with the exact values (largest |z| of Amp: {r['z']:.2f}).",
        "",
        *bench_loop.timing_table("cases", [
            ("Philox floor (the same words, nothing else)", r["floor_s"], n),
            ("kernel (class sums; the 16 x 16 moments weighted in afterwards)", r["kernel_s"], n),
            ("exact values of one cell", r["exact_s"], None)]),
        "",
        f"Kernel / floor: **{r['kernel_s'] / r['floor_s']:.2f}x** the floor's time (same run, "
        "medians).",
        "",
    ]


def main(argv=None):
    bench_loop.standalone(argv, __doc__, run, report, "## Pluralistic mediation:", "mediation")


if __name__ == "__main__":
    sys.exit(main())
