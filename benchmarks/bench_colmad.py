"""Error detection by debate (model=colmad): the kernel beside its random-number floor.

    python benchmarks/bench_colmad.py [--quick] [--update BENCHMARKS.md]

Timed in the same run, medians over repeats, at the model's defaults (3 rounds):

* the kernel (``kernels/colmad.py``): four protocols per response, counted by
  response class (the per-response vector and its outer product, which the
  delta-method standard errors need, weighted in afterwards);
* its own-style floor: a compiled loop that draws the same Philox blocks (one per
  response, one per round of a disagreement, decided from the same uniform) one
  response at a time and nothing else (``bench_floors.py`` adds the vectorised floor);
* the exact enumeration of one cell (with its rhetoric quadrature).
"""

from __future__ import annotations

import sys
import time

import numba as nb
import numpy as np

from antiamp.models.colmad import core as cm
from antiamp.kernels.rng import philox4x32_10, split_seed

import bench_loop
from bench_baseline import median_time as _med


@nb.njit(parallel=True, cache=True)
def philox_floor(n, k0, k1, p_error, pair, R):
    n_blocks = (n + 4095) // 4096
    out = np.zeros(n_blocks)
    inv = 1.0 / 4294967296.0
    for b in nb.prange(n_blocks):
        s = 0.0
        for i in range(b * 4096, min((b + 1) * 4096, n)):
            ii = np.uint64(i)
            lo, hi = ii & np.uint64(0xFFFFFFFF), ii >> np.uint64(32)
            w0, w1, _, _ = philox4x32_10(lo, hi, np.uint64(0), np.uint64(9), k0, k1)
            om = 1 if (np.float64(w0) + 0.5) * inv < p_error else 0
            u = (np.float64(w1) + 0.5) * inv
            dis = pair[om, 1, 1] <= u < pair[om, 1, 1] + pair[om, 1, 0] + pair[om, 0, 1]
            s += u
            if dis:
                for r in range(1, R + 1):
                    v0, v1, v2, v3 = philox4x32_10(lo, hi, np.uint64(r), np.uint64(9), k0, k1)
                    s += np.float64(v0 ^ v1 ^ v2 ^ v3) * inv
        out[b] = s
    return out.sum()


def run(quick=False):
    n = 1_000_000 if quick else 4_000_000
    repeats = 2 if quick else 3
    par = cm.Params()
    k0, k1 = split_seed(0)
    pair = np.ascontiguousarray(cm.pair_table(par))
    t0 = time.perf_counter()
    ex = cm.metric_values(cm.exact_means(par))
    t_exact = time.perf_counter() - t0
    sim = cm.simulate(par, n, seed=0)
    z = max(abs(sim["f1"][0][i] - ex["f1"][i]) / sim["f1"][1][i] for i in range(3))
    if z > 5:
        raise AssertionError(f"kernel disagrees with the enumeration: |z| {z:.2f}")
    philox_floor(1000, k0, k1, par.p_error, pair, par.rounds)
    t_floor = _med(lambda: philox_floor(n, k0, k1, par.p_error, pair, par.rounds), repeats)
    t_kernel = _med(lambda: cm.simulate(par, n, seed=0), repeats)
    t_exact = min(t_exact, _med(lambda: cm.metric_values(cm.exact_means(par)), repeats))
    return {"n": n, "floor_s": t_floor, "kernel_s": t_kernel, "exact_s": t_exact, "z": z}


def report(r) -> list:
    n = r["n"]
    return [
        "## Error detection by debate: the kernel beside its floor",
        "",
        f"`model=colmad` at its defaults: {n:,} responses, four protocols on each. The "
        f"kernel agrees with the exact enumeration (largest |z| of F1: {r['z']:.2f}).",
        "",
        *bench_loop.timing_table("responses", [
            ("Philox floor (the same blocks, nothing else)", r["floor_s"], n),
            ("kernel (class counts; the 26 x 26 moments weighted in afterwards)", r["kernel_s"], n),
            ("exact enumeration of one cell", r["exact_s"], None)]),
        "",
        f"Kernel / floor: **{r['kernel_s'] / r['floor_s']:.2f}x** the floor's time (same run, "
        "medians).",
        "",
    ]


def main(argv=None):
    bench_loop.standalone(argv, __doc__, run, report, "## Error detection by debate:", "error-detection")


if __name__ == "__main__":
    sys.exit(main())
