"""The extension kernels beside their random-number floors.

    python benchmarks/bench_floors.py [--quick] [--update BENCHMARKS.md]

Each kernel's floor is a compiled loop (same threads, same instance split) that
draws the same Philox blocks per instance (and the same Box-Muller normals where
the kernel draws normals) and does nothing else but fold the words together so
that they are not optimised away.  Ratio = the kernel's time / its floor's, same
run, medians.

* portfolio (B = 4): three blocks an instance (1 + 2B = 9 uniforms);
* messages (rhetoric): one block and one Box-Muller pair an instance;
* options (K = 4, best of 2 examined): four blocks an instance (7 + 2K words);
* panel (9 judges, icc 0.3, bias sd 0.5, the Monte Carlo method): five blocks and
  five Box-Muller pairs a panel (the shared latent and nine biases).
"""

from __future__ import annotations

import math
import os
import sys

import numba as nb
import numpy as np

from antiamp.kernels import portfolios as kp
from antiamp.kernels.rng import bernoulli_threshold, philox4x32_10, split_seed

import bench_loop
from bench_baseline import median_time as _med

_INV32 = 1.0 / 4294967296.0


@nb.njit(parallel=True, cache=True)
def floor(count, n_ctr, normals, k0, k1, stream, n_chunks):
    """``n_ctr`` Philox blocks an instance (with a Box-Muller pair from each block's
    first two words when ``normals``), folded into one number."""
    out = np.zeros(n_chunks)
    size = (count + n_chunks - 1) // n_chunks
    for b in nb.prange(n_chunks):
        s = 0.0
        for i in range(b * size, min(count, (b + 1) * size)):
            ii = np.uint64(i)
            for c in range(n_ctr):
                w0, w1, w2, w3 = philox4x32_10(ii & np.uint64(0xFFFFFFFF), ii >> np.uint64(32),
                                               np.uint64(c), stream, k0, k1)
                if normals:
                    r = math.sqrt(-2.0 * math.log((np.float64(w0) + 0.5) * _INV32))
                    a = 2.0 * math.pi * (np.float64(w1) + 0.5) * _INV32
                    s += r * math.cos(a) + r * math.sin(a)
                else:
                    s += np.float64(w0 ^ w1 ^ w2 ^ w3)
        out[b] = s
    return out.sum()


def run(quick=False):
    from antiamp.models.messages import core as msm
    from antiamp.models.options import core as opm
    from antiamp.models.panel import core as pnm

    res = {"load": os.getloadavg(), "threads": nb.get_num_threads()}
    k0, k1 = split_seed(0)
    st = np.uint64(9)
    chunks = 4 * nb.get_num_threads()
    n = 4_000_000 if quick else 20_000_000
    reps = 3 if quick else 5
    pf = (bernoulli_threshold(0.8), bernoulli_threshold(0.7), bernoulli_threshold(0.3), 4)
    mc = msm.MessagesConfig(kappa_r=0.8, r_mean_false=1.0)
    oc = opm.OptionsConfig(K=4, antagonist="best_of_k", k_examine=2)
    n_opt = n // 4
    n_pan = 20_000 if quick else 100_000
    pc = pnm.PanelConfig(size=9, icc=0.3, bias_sd=0.5, n_panels=n_pan, method="monte_carlo")
    cases = {
        "portfolio (B = 4)": (
            lambda m: kp.portfolio_class_counts(*pf, 0, m, k0, k1, np.uint64(kp.STREAM), chunks),
            n, 3, False),
        "messages (rhetoric)": (
            lambda m: msm.exogenous_simulated(0.8, 0.3, 1.0, 0.3, mc, m, 0), n, 1, True),
        "options (K = 4, best of 2)": (
            lambda m: opm.simulate(0.7, 0.3, 1.2, 0.3, 1.5, oc, m, 0), n_opt, 4, False),
        "panel (9 judges), per panel, 3 table entries": (
            lambda m: pnm.panel_probability_mc([0.4, 0.6, 0.9], pc, 0), n_pan, 5, True),
    }
    res["rows"] = []
    for name, (kernel, m, blocks, normals) in cases.items():
        kernel(4096)  # compile
        floor(4096, blocks, normals, k0, k1, st, chunks)
        tk = _med(lambda: kernel(m), reps)
        tf = _med(lambda: floor(m, blocks, normals, k0, k1, st, chunks), reps)
        res["rows"].append((name, m, blocks, normals, tk, tf))
    res["load_after"] = os.getloadavg()
    return res


def report(res) -> list:
    lines = [
        "## Extension kernels beside their random-number floors",
        "",
        "`python benchmarks/bench_floors.py`: each kernel against a compiled loop drawing the "
        "same Philox blocks (and Box-Muller normals) per instance and nothing else, "
        f"{res['threads']} threads, medians of the same run.",
        "",
        "| kernel | kernel / floor | blocks (normals) per instance | instances | kernel (s) | "
        "floor (s) |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for name, m, blocks, normals, tk, tf in res["rows"]:
        lines.append(f"| {name} | {tk / tf:.2f}x | {blocks}{' (+ Box-Muller)' if normals else ''}"
                     f" | {m:,} | {tk:.3f} | {tf:.3f} |")
    lines += ["", f"Load average (1 min) {res['load'][0]:.2f} before, "
              f"{res['load_after'][0]:.2f} after, on {os.cpu_count()} cores. The floor counts "
              "the blocks each kernel actually draws (and its normals): a kernel that needs "
              "several blocks an instance is compared with that many. The panel's tables are "
              "exact by default (`panel.method=quadrature`, no Monte Carlo); its kernel runs "
              "only with `method=monte_carlo`. The options kernel evaluates the K-way logit "
              "from weights computed once per call (the unargued options', and the argued "
              "ones' for every label, evidence, attack and distractor status: no exponential "
              "per instance) and counts its indicator rows; what remains above its floor is the "
              "per-instance logic (the wrong pick, the availability pattern, the antagonist's "
              "examination, the logit's normalising sum). The portfolio, messages and options "
              "kernels are the one-row case of their multi-cell kernels (see the next-but-one "
              "section).", ""]
    return lines


def main(argv=None):
    bench_loop.standalone(argv, __doc__, run, report, "## Extension kernels beside",
                          "extension-kernel floors")


if __name__ == "__main__":
    sys.exit(main())
