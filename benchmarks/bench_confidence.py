"""Judges that weigh stated confidence (model=confidence): the kernel beside its floors.

    python benchmarks/bench_confidence.py [--quick] [--update BENCHMARKS.md]

Timed in the same run, medians over repeats:

* the oversight kernel (``kernels/confidence.py``), a single judge and a jury of six
  with a shared latent: its endorsement read from the table in the logit argument
  (what big calls do) and by the quadrature over the latent at every instance (what
  they did before; votes exact in both);
* its random-number floor: a compiled loop that draws the same four Philox blocks per
  instance and the same five Box-Muller normals, and does nothing else;
* what a user would otherwise write: the same single-judge model vectorised with
  NumPy (``numpy.random.Generator``), checked against the quadrature oracle first;
* the report model's maximum-likelihood fit of one condition (cross-model, 60 debates).
"""

from __future__ import annotations

import math
import os
import sys

import numba as nb
import numpy as np
from scipy import special

from antiamp.models.confidence import core as cf
from antiamp.kernels.rng import philox4x32_10, split_seed

import bench_loop
from bench_baseline import median_time as _med

ARGS = dict(p=0.7, rho=0.3, lam=1.5, mu=0.2, kappa=2.0, kappa_c=1.0)


@nb.njit(parallel=True, cache=True)
def philox_floor(n, k0, k1):
    """Four Philox blocks and five Box-Muller normals per instance, summed."""
    n_blocks = (n + 4095) // 4096
    out = np.zeros(n_blocks)
    inv = 1.0 / 4294967296.0
    for b in nb.prange(n_blocks):
        s = 0.0
        for i in range(b * 4096, min((b + 1) * 4096, n)):
            ii = np.uint64(i)
            for c in range(4):
                w0, w1, w2, w3 = philox4x32_10(ii & np.uint64(0xFFFFFFFF), ii >> np.uint64(32),
                                               np.uint64(c), np.uint64(7), k0, k1)
                if c < 3:
                    r = math.sqrt(-2.0 * math.log((np.float64(w0) + 0.5) * inv))
                    a = 2.0 * math.pi * (np.float64(w1) + 0.5) * inv
                    s += r * math.cos(a) + r * math.sin(a)
                else:
                    s += np.float64(w0 ^ w2 ^ w3) * inv
        out[b] = s
    return out.sum()


def numpy_reference(rep, n, seed=0, p=0.7, rho=0.3, lam=1.5, mu=0.2, kappa=2.0, kappa_c=1.0):
    """The single-judge oversight model with NumPy, vectorised over instances."""
    rng = np.random.default_rng(seed)
    beta = special.ndtri(p)
    z = rng.standard_normal((5, n))
    u = rng.random((4, n))
    y = beta + math.sqrt(rep.info) * z[0]
    right = y + math.sqrt(1 - rep.info) * z[1] > 0
    B = special.ndtr(y / math.sqrt(1 - rep.info))
    own = math.sqrt(rep.side_sd ** 2 + rep.noise_sd ** 2)
    a = rep.intercepts[-1]
    cp = a + rep.side_offset + rep.weight * (100 * B - 50) + rep.shared_sd * z[2] + own * z[3]
    ca = a - rep.side_offset + rep.weight * (50 - 100 * B) + rep.shared_sd * z[2] + own * z[4]
    kind = u[3] < rep.anchor_debates
    lp = np.where(kind & (u[1] < rep.anchor), 0.0, special.logit(np.clip(cp, 0.5, 99.5) / 100))
    la = np.where(kind & (u[2] < rep.anchor), 0.0, special.logit(np.clip(ca, 0.5, 99.5) / 100))
    fab = u[0] < rho
    ep = np.where(right, 1.0, fab)
    ea = np.where(right, fab, 1.0)
    qc = special.expit(lam * (mu + kappa * ep + kappa_c * lp))
    qd = special.expit(lam * (mu + kappa * (ep - ea) + kappa_c * (lp - la)))
    w = ~right
    return {"consult": qc[w].mean(), "debate": qd[w].mean(),
            "se": max(qc[w].std(), qd[w].std()) / math.sqrt(w.sum())}


#: Leans of a jury of six (probit, toward the proposition; summing to 0) for the timing.
LEANS = (-0.8, 0.5, 0.2, 0.9, -0.4, -0.4)


def _jury_by_quadrature(rep, n):
    """The kernel on the jury of six without its table (the quadrature per instance)."""
    from antiamp.kernels.confidence import confidence_kernel

    gx, gw = cf.latent_nodes(0.6)
    k0, k1 = split_seed(0)
    beta = float(special.ndtri(ARGS["p"]))
    v = cf._rep_vector(rep)
    a = ARGS

    def call():
        return confidence_kernel(n, k0, k1, beta, float(rep.info), a["rho"], v, v, a["lam"],
                                 a["mu"], a["kappa"], a["kappa_c"], 6, 0.6, 0.5, gx, gw,
                                 np.empty(0))
    return call


def run(quick=False):
    n = 1_000_000 if quick else 4_000_000
    repeats = 2 if quick else 3
    rep = cf.fit_condition("cross_model").rep
    k0, k1 = split_seed(0)
    ex = cf.oversight_exact(rep, rep, **ARGS)
    ref = numpy_reference(rep, n, **ARGS)
    z_numpy = max(abs(ref[p] - ex[p]["amp"]) / ref["se"] for p in cf.PROTOCOLS)
    sim = cf.simulate_oversight(rep, rep, n_instances=n, seed=0, **ARGS)
    z_kernel = max(abs(sim[p]["amp"] - ex[p]["amp"]) / sim[p]["amp_se"] for p in cf.PROTOCOLS)
    if max(z_numpy, z_kernel) > 5:
        raise AssertionError(f"disagreement with the quadrature: |z| numpy {z_numpy:.2f}, "
                             f"kernel {z_kernel:.2f}")
    philox_floor(1000, k0, k1)
    t_floor = _med(lambda: philox_floor(n, k0, k1), repeats)
    t_kernel = _med(lambda: cf.simulate_oversight(rep, rep, n_instances=n, seed=0, **ARGS),
                    repeats)
    cf.simulate_oversight(rep, rep, n_instances=1000, seed=0, n=6, icc=0.6, **ARGS)
    n_j = n // 10
    t_jury = _med(lambda: cf.simulate_oversight(rep, rep, n_instances=n_j, seed=0, n=6,
                                                icc=0.6, **ARGS), repeats)
    jury_quad = _jury_by_quadrature(rep, n_j)
    t_jury_quad = _med(jury_quad, 1 if quick else 2)
    # a jury of 6 of the same judges that lean (sides and seats at random): its table
    # built once per process (timed apart), then read by the same kernel
    leans = LEANS
    cf.simulate_oversight(rep, rep, n_instances=1000, seed=0, n=6, icc=0.6, leans=leans,
                          **ARGS)
    t_lean = _med(lambda: cf.simulate_oversight(rep, rep, n_instances=n_j, seed=0, n=6,
                                                icc=0.6, leans=leans, **ARGS), repeats)

    def lean_table():
        cf._lean_table.cache_clear()
        cf.lean_table(6, 0.6, 0.5, leans)

    def plain_table():
        cf._jury_table.cache_clear()
        cf._jury_table(6, 0.6, 0.5)
    t_lean_table = _med(lean_table, repeats)
    t_plain_table = _med(plain_table, repeats)
    t_numpy = _med(lambda: numpy_reference(rep, n, **ARGS), repeats)
    X = cf.bets_array(cf.load_bets(), "cross_model")
    t_fit = _med(lambda: cf.fit(X, "cross_model"), 1 if quick else 2)
    return {"n": n, "n_jury": n_j, "floor_s": t_floor, "kernel_s": t_kernel,
            "jury_s": t_jury, "jury_quad_s": t_jury_quad, "numpy_s": t_numpy, "fit_s": t_fit,
            "lean_s": t_lean, "lean_table_s": t_lean_table, "plain_table_s": t_plain_table,
            "z_kernel": z_kernel, "z_numpy": z_numpy,
            "load": os.getloadavg()[0], "cores": os.cpu_count()}


def report(r) -> list:
    n, nj, fl = r["n"], r["n_jury"], r["floor_s"]

    def row(what, t, m):  # ratio first: to the floor's time per instance, same run
        return f"| {what} | {t / m / (fl / n):.2f} | {t:.3f} | {m / t:.3g} |"

    return [
        "## Stated confidence: the oversight kernel beside its floors",
        "",
        f"`model=confidence`, cross-model reports as fitted, kappa_c = 1: {n:,} instances "
        "(consultancy and debate on each). Both implementations agree with the quadrature "
        f"oracle (largest |z| of Amp: kernel {r['z_kernel']:.2f}, NumPy {r['z_numpy']:.2f}). "
        f"Load average {r['load']:.2f} on {r['cores']} cores during the run: the seconds are "
        "this machine's at that load, the ratios (same run) are what compare.",
        "",
        "| what | time per instance / floor's | seconds | instances per second |",
        "|---|---:|---:|---:|",
        row("Philox floor (same blocks and normals, nothing else)", fl, n),
        row("kernel, single judge", r["kernel_s"], n),
        row(f"kernel, jury of 6 with icc 0.6, tabulated ({nj:,} instances)", r["jury_s"], nj),
        row("kernel, the same jury by quadrature at every instance", r["jury_quad_s"], nj),
        row(f"kernel, jury of 6 of 6 judges that lean, icc 0.6, tabulated ({nj:,} "
            "instances)", r["lean_s"], nj),
        row("NumPy reference, single judge", r["numpy_s"], n),
        f"| maximum-likelihood fit of one condition (60 debates) | | {r['fit_s']:.2f} | |",
        "",
        f"Kernel / floor: **{r['kernel_s'] / fl:.2f}x** the floor's time; NumPy / "
        f"kernel: **{r['numpy_s'] / r['kernel_s']:.1f}x**; the jury's table / its quadrature: "
        f"**{r['jury_quad_s'] / r['jury_s']:.0f}x** faster (same run, medians). The jury "
        f"that leans, its table built, costs **{r['lean_s'] / nj / (r['kernel_s'] / n):.2f}x**"
        f" the single judge's time per instance; building its table (once per process: "
        f"both sides, every seating) takes "
        f"{r['lean_table_s']:.2f} s, **{r['lean_table_s'] / r['plain_table_s']:.1f}x** the "
        "shared-latent table's.",
        "",
    ]


def main(argv=None):
    bench_loop.standalone(argv, __doc__, run, report, "## Stated confidence:", "stated-confidence")


if __name__ == "__main__":
    sys.exit(main())
