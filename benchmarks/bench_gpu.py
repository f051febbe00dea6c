"""The GPU kernels (run.device=cuda) beside the GPU's Philox floor, the CPU and JAX.

    python benchmarks/bench_gpu.py [--n-gpu 4294967296] [--n-cpu 268435456]
                                   [--sweep-cells 10000] [--sweep-n 10000000]
    NUMBA_ENABLE_CUDASIM=1 python benchmarks/bench_gpu.py --smoke   # runs, times nothing real

For every kernel with a GPU launcher (baseline, signals, portfolio, messages, options,
the panel's Monte Carlo tables, confidence, redeliberation, colmad, mediation, the loop's
paths), in one run on one machine:

* GPU instances/s (numba.cuda, the project's Philox counters, the same counts as the
  CPU: checked before timing);
* the GPU floor measured in the same run: one Philox4x32-10 block per instance,
  XOR-folded (:func:`kernels.gpu.baseline.bare_philox`), and the ratio to it (the
  portfolio draws 1 + 2B uniforms, ceil((1 + 2B) / 4) blocks an instance; options
  4 blocks; messages one block and a Box-Muller pair; colmad one block, and one a
  round on a disagreement; mediation 1 + 2k + 2P + 4 words, 5 blocks at its defaults;
  the loop two blocks a case, its instances the cases of
  every path and round, and its time includes the host's float steps between rounds);
* the CPU kernel on all cores (same run) and the ratio GPU / CPU (the multi-cell
  case counts cell-instances: instances x cells);
* JAX on the same GPU (its own generator, ``bincount``; the same class-count
  estimator: its class frequencies are checked against the kernel's first) for the
  baseline, signals and portfolio, and the ratio; skipped with a message when JAX
  is not installed;
* the end-to-end time of a ``--sweep-cells`` grid at ``--sweep-n`` instances a cell
  (the baseline on the fused sweep engine, and the signals model's simulated
  payoffs and colmad on the block engine), ``run.device=cuda`` against
  ``run.device=cpu``.

Without a GPU (and without the simulator) it prints why and exits 0.  Medians over
``--repeats``; every GPU figure is timed after a synchronize.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np


def median_time(fn, repeats):
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def rate(n, seconds):
    return n / seconds if seconds > 0 else float("inf")


def fmt(x):
    return "-" if x is None else f"{x:.3g}"


# ----------------------------------------------------------------------------- JAX
def jax_models():
    """JAX versions of the three class-count kernels (JAX's own generator): ``name ->
    counts(key, m, params)``, or None when JAX is not installed."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    from functools import partial

    @partial(jax.jit, static_argnums=(1,))
    def baseline(key, m, q):  # q: pi, p, rho, x_P consult, x_P debate, x_A
        u = jax.random.uniform(key, (6, m))
        om = u[0] < q[0]
        corr = u[1] < q[1]
        tp = corr | (u[2] < q[2])
        ta = (~corr) | (u[3] < q[2])
        epc = tp & (u[4] < q[3])
        epd = tp & (u[4] < q[4])
        ea = ta & (u[5] < q[5])
        idx = (16 * om + 8 * corr + 4 * epc + 2 * epd + ea).astype(jnp.int32)
        return jnp.bincount(idx, length=32)

    @partial(jax.jit, static_argnums=(1,))
    def signals(key, m, q):  # q: pi, 3 cumulative joint thresholds per omega, 4 avail
        u = jax.random.uniform(key, (4, m))
        om = (u[0] < q[0]).astype(jnp.int32)
        base = 1 + 3 * om
        k = ((u[1] >= q[base]).astype(jnp.int32) + (u[1] >= q[base + 1]).astype(jnp.int32)
             + (u[1] >= q[base + 2]).astype(jnp.int32))
        sp, sa = k >> 1, k & 1
        p_false = (sp != om).astype(jnp.int32)
        a_unbel = (sa == sp).astype(jnp.int32)
        tp = (u[2] < q[7 + 2 * p_false]).astype(jnp.int32)
        ta = (u[3] < q[7 + 2 * (1 - p_false) + a_unbel]).astype(jnp.int32)
        return jnp.bincount(16 * om + 8 * sp + 4 * sa + 2 * tp + ta, length=32)

    @partial(jax.jit, static_argnums=(1, 3))
    def portfolio(key, m, q, budget):  # q: p, q_true, q_false
        u = jax.random.uniform(key, (1 + 2 * budget, m))
        corr = u[0] < q[0]
        tP = jnp.where(corr, q[1], q[2])
        tA = jnp.where(corr, q[2], q[1])
        kp = (u[1:1 + budget] < tP).sum(axis=0)
        ka = (u[1 + budget:] < tA).sum(axis=0)
        nb1 = budget + 1
        idx = (corr * nb1 * nb1 + kp * nb1 + ka).astype(jnp.int32)
        return jnp.bincount(idx, length=2 * nb1 * nb1)

    def run(fn, n, chunk, *args):
        key = jax.random.PRNGKey(0)
        total = None
        for j in range(max(1, n // chunk)):
            c = fn(jax.random.fold_in(key, j), chunk, *args)
            total = c if total is None else total + c
        return np.asarray(total.block_until_ready())

    return {"run": run, "baseline": baseline, "signals": signals, "portfolio": portfolio,
            "device": str(jax.devices()[0])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-gpu", type=int, default=1 << 32, help="instances a GPU timing")
    ap.add_argument("--n-cpu", type=int, default=1 << 28, help="instances a CPU timing")
    ap.add_argument("--n-jax", type=int, default=1 << 28, help="instances a JAX timing")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--grid-cells", type=int, default=32,
                    help="cells of the baseline's multi-cell (CRN) kernel case")
    ap.add_argument("--sweep-cells", type=int, default=10_000)
    ap.add_argument("--sweep-n", type=int, default=10_000_000)
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes, one repeat: check that it runs (e.g. on the simulator)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.n_gpu = args.n_cpu = args.n_jax = 4096
        args.repeats, args.grid_cells, args.sweep_cells, args.sweep_n = 1, 3, 4, 1024

    from antiamp.kernels.gpu import simulator, status

    ok, why = status()
    if not ok:
        print(f"bench_gpu: no GPU to time: {why}.\n  On a machine with an NVIDIA GPU: pip install "
              "'antiamp[gpu]', then python benchmarks/bench_gpu.py; to check that this script "
              "runs: NUMBA_ENABLE_CUDASIM=1 python benchmarks/bench_gpu.py --smoke")
        return 0
    if simulator() and not args.smoke:
        print("bench_gpu: numba's CUDA simulator times nothing real; use --smoke with it")
        return 0
    import numba as nb

    print(f"GPU: {why}; CPU: {platform.processor() or platform.machine()}, "
          f"{nb.get_num_threads()} threads; numba {nb.__version__}")
    if simulator():
        print("(numba's CUDA simulator: the figures below are not GPU timings)")
    table = run_cases(args)
    models = jax_models()
    if models is None:
        print("JAX: not installed (pip install 'jax[cuda12]'); JAX columns skipped")
    else:
        print(f"JAX: {models['device']}")
    print()
    print(f"{'kernel':<28}{'GPU inst/s':>12}{'floor inst/s':>14}{'/floor':>8}"
          f"{'CPU inst/s':>12}{'GPU/CPU':>9}{'JAX inst/s':>12}{'GPU/JAX':>9}")
    for name, c in table.items():
        g = rate(args.n_gpu, c["gpu"])
        fl = c["floor"]
        cp = rate(args.n_cpu, c["cpu"])
        jr = None
        if models is not None and c["jax"] is not None:
            # The same estimator: JAX's class frequencies agree with the kernel's
            # within sampling error (6 standard errors a class) before it is timed.
            m = 1 << 20
            fj = c["jax"](models, m).ravel() / m
            fc = np.asarray(c["cpu_counts"](m)).ravel() / m
            se = np.sqrt(np.maximum(fc * (1 - fc), 1.0 / m) * 2 / m)
            if np.any(np.abs(fj - fc) > 6 * se):
                raise SystemExit(f"bench_gpu: {name}: JAX's class frequencies disagree")
            c["jax"](models, args.n_jax)  # compiled before it is timed
            jr = rate(args.n_jax, median_time(lambda: c["jax"](models, args.n_jax),
                                              args.repeats))
        print(f"{name:<28}{fmt(g):>12}{fmt(fl):>14}{fmt(g / fl):>8}{fmt(cp):>12}"
              f"{fmt(g / cp):>9}{fmt(jr):>12}{fmt(None if jr is None else g / jr):>9}")
    print()
    sweeps(args)
    return 0


def run_cases(args) -> dict:
    import numba as nb

    from antiamp.kernels import baseline as kb
    from antiamp.kernels import correlated as kc
    from antiamp.kernels import portfolios as kp
    from antiamp.kernels.gpu import baseline as gb
    from antiamp.kernels.gpu import correlated as gc
    from antiamp.kernels.gpu import portfolios as gp
    from antiamp.kernels.rng import bernoulli_thresholds, split_seed

    k0, k1 = split_seed(0)
    nt = 4 * nb.get_num_threads()
    q_base = [0.5, 0.8, 0.3, 1.0, 1.0, 1.0]  # the defaults: every presentation certain
    thr = bernoulli_thresholds(q_base)
    rng = np.random.default_rng(0)
    C = args.grid_cells
    grid = np.stack([bernoulli_thresholds([0.5, p, r, 1, 1, 1])
                     for p, r in zip(rng.uniform(0.5, 1, C), rng.uniform(0, 1, C))])
    zeros = np.zeros(C, np.int64)
    joint = np.array([[0.64, 0.16, 0.16, 0.04], [0.04, 0.16, 0.16, 0.64]])  # p = 0.8, indep.
    q_sig = [0.5, *np.minimum(np.cumsum(joint, axis=1)[:, :3], 1).ravel(), 1.0, 1.0, 0.3, 0.3]
    t_sig = bernoulli_thresholds(q_sig)
    B, q_pf = 4, [0.8, 0.7, 0.3]
    t_pf = [bernoulli_thresholds([q]) for q in q_pf]
    sb, ss, sp = np.uint64(kb.STREAM), np.uint64(kc.STREAM), np.uint64(kp.STREAM)
    from antiamp.models.messages import core as msm
    from antiamp.models.options import core as opm

    mc = msm.MessagesConfig(kappa_r=0.8, r_mean_false=1.0)
    oc = opm.OptionsConfig(K=4, antagonist="best_of_k", k_examine=2)
    counted = np.zeros((2, 12), bool)
    counted[:, [1, 3, 7, 11]] = True

    def messages(n, dev):  # the counts (the sums agree within 1e-12 relative)
        return msm.exogenous_simulated_cells([(0.8, 0.3, 1.0, 0.3, mc)], n, 0, 0, dev)[0][0]

    def options(n, dev):  # the count rows
        return opm.simulate_cells([(0.7, 0.3, 1.2, 0.3, 1.5, oc)], n, 0, 0, dev)[0][0][counted]

    from antiamp.kernels import confidence as kf
    from antiamp.kernels.gpu import confidence as gf
    from antiamp.models.panel import core as pnm

    rep_p = np.array([0.3, 5.0, 0.6, 4.0, 6.0, 0.2, 0.3])
    rep_a = np.array([-0.2, 3.0, 0.5, 4.0, 7.0, 0.1, 0.4])
    conf_args = (0.4, 0.6, 0.3, rep_p, rep_a, 1.2, 0.1, 2.0, 0.05, 1, 0.0, 0.5,
                 np.ones(1), np.ones(1), np.empty(0))

    from antiamp.kernels import redeliberation as kr
    from antiamp.kernels.gpu import redeliberation as gr

    red_args = (0.4, 0.7, np.array([8.0, 2.0]), np.array([5.0, 9.0]), 0.5, 1.5, 5, 0.6, 0.3,
                0.2, 18, np.array([3.0, 8.0, 15.0]), np.array([1.0, 0.9, 0.7, 0.4]), 60.0,
                10.0, 3.0, 2.0, 5, np.array([[0.5, 0.2], [0.8, 0.5]]))

    from antiamp.kernels import colmad as kcm
    from antiamp.kernels import loop as kl
    from antiamp.kernels.gpu import colmad as gcm
    from antiamp.kernels.gpu import loop as gl

    cm_pt = np.array([[kcm.threshold(q) for q in row] for row in ((0.56, 0.6, 0.64),
                                                                  (0.36, 0.5, 0.64))], np.uint64)
    cm_args = (np.uint64(kcm.threshold(0.4)), cm_pt,
               *(np.uint64(kcm.threshold(q)) for q in (0.8, 0.4, 0.1)), 3)
    J_c, J_d = np.array([0.3, 0.8]), np.array([[0.5, 0.2], [0.9, 0.6]])
    loop_paths, loop_rounds = 256, 10

    from antiamp.kernels import mediation as kmd
    from antiamp.kernels.gpu import mediation as gmd

    # The model's defaults: F_0 2, d r 0.42, k 3, P 3, 8 citations from source foam.
    G_p, S_p, G_b, S_b, t_dis, t_fa, t_erase, G_c, S_c, q_md = kmd.tables(
        2.0, 0.58, 3, 3, 0.5, 0.05, 0.8, 0.05, 8, (0.7239, 0.0381, 0.1628, 0.0752, 0.0))
    md_args = (3, 3, 8, 0.58, 0.5, 0.05, G_p, S_p, G_b, S_b, t_dis, t_fa, t_erase, q_md, G_c,
               S_c)

    def mediation(n, kernel, *extra):  # the flaw classes' sums, then the citation sums
        flaw, cit = kernel(n, k0, k1, *md_args, *extra)
        return np.concatenate([flaw.ravel(), cit])

    def loop(n, kernel):  # calibrated learner, a budget, rho's feedback: every output
        batch = max(1, n // (loop_paths * loop_rounds))
        out = kernel(kl.CALIBRATED, loop_rounds, batch, 1, loop_paths, 0.3, 0.05, 0.6, 0.5,
                     0.0, 0.2, 0.3, 0.9, 0.8, 0.7, J_c, J_d, 0.1, np.array([0.7, 0.2]), 0.4,
                     J_c, True, k0, k1)
        return np.concatenate([a.ravel().astype(np.float64) for a in out])

    def redeliberation(n, kernel):  # the per-block sums added over the blocks
        return np.concatenate([a.sum(axis=0).ravel() for a in kernel(n, k0, k1, *red_args)])

    def confidence(n, kernel):  # a single judge; the sums over the blocks
        acc, gap = kernel(n, k0, k1, *conf_args)
        return np.concatenate([acc.sum(axis=0).ravel(), gap.sum(axis=0)])

    def panel(n, dev):  # n panels of 9 judges, three table entries: the means
        pc = pnm.PanelConfig(size=9, icc=0.3, bias_sd=0.5, n_panels=n, method="monte_carlo")
        return pnm.panel_probability_mc([0.4, 0.6, 0.9], pc, 0, dev)[0]

    def jx(name, *extra):
        def f(models, n):
            return models["run"](models[name], n, min(n, 1 << 24), *extra)
        return f

    # name: (gpu(n), cpu(n), JAX or None, d): timed at n / d instances (the panel's
    # panels cost a few hundred instances each); a grid case counts instances x cells.
    spec = {
        "baseline (one cell)": (
            lambda n: gb.class_counts(thr, 0, 0, 0, n, k0, k1, sb),
            lambda n: kb.class_counts(thr, 0, 0, 0, n, k0, k1, sb, nt),
            jx("baseline", np.float32(q_base)), 1),
        f"baseline ({C} cells, CRN)": (
            lambda n: gb.class_counts_cells(grid, zeros, zeros, 0, n // C, k0, k1, sb),
            lambda n: kb.class_counts_cells(grid, zeros, zeros, 0, n // C, k0, k1, sb, nt),
            None, C),
        "signals (one cell)": (
            lambda n: gc.signal_class_counts(t_sig, 0, n, k0, k1, ss)[0],
            lambda n: kc.signal_class_counts_one(t_sig, 0, n, k0, k1, ss, nt),
            jx("signals", np.float32(q_sig)), 1),
        f"portfolio (B = {B})": (
            lambda n: gp.portfolio_class_counts_cells(*t_pf, B, 0, n, k0, k1, sp),
            lambda n: kp.portfolio_class_counts_cells(*t_pf, B, 0, n, k0, k1, sp, nt),
            jx("portfolio", np.float32(q_pf), B), 1),
        "messages (rhetoric)": (lambda n: messages(n, "cuda"), lambda n: messages(n, "cpu"),
                                None, 1),
        "options (K = 4, best of 2)": (lambda n: options(n, "cuda"), lambda n: options(n, "cpu"),
                                       None, 1),
        "panel (9 judges), per panel": (lambda n: panel(n, "cuda"), lambda n: panel(n, "cpu"),
                                        None, 256),
        "confidence (one judge)": (lambda n: confidence(n, gf.confidence_kernel),
                                   lambda n: confidence(n, kf.confidence_kernel), None, 1),
        "redeliberation, per claim": (lambda n: redeliberation(n, gr.redeliberation_kernel),
                                      lambda n: redeliberation(n, kr.redeliberation_kernel),
                                      None, 16),
        "colmad (R = 3)": (lambda n: gcm.colmad_counts(n, k0, k1, *cm_args),
                           lambda n: kcm.colmad_counts(n, k0, k1, *cm_args, nt), None, 1),
        "mediation (P = 3, M = 8)": (lambda n: mediation(n, gmd.mediation_sums),
                                     lambda n: mediation(n, kmd.mediation_sums, nt), None, 1),
        f"loop ({loop_paths} paths), per case": (lambda n: loop(n, gl.loop_paths),
                                                lambda n: loop(n, kl.loop_paths), None, 1),
    }
    # Same counts (float means: within 1e-12 relative) first, at a size the CPU does
    # quickly, then the timings.
    for name, (g, c, _, d) in spec.items():
        n_check = max(1, min(args.n_cpu, 1 << 22) // d)
        a, b = np.asarray(g(n_check)), np.asarray(c(n_check))
        same = (np.allclose(a, b, rtol=1e-12, atol=0) if a.dtype.kind == "f"
                else np.array_equal(a, b))
        if not same:
            raise SystemExit(f"bench_gpu: {name}: the GPU's results differ from the CPU's")
    floor = rate(args.n_gpu, median_time(lambda: gb.bare_philox(0, args.n_gpu, k0, k1, sb),
                                         args.repeats))
    out = {}
    for name, (g, c, j, d) in spec.items():
        ng, nc = max(1, args.n_gpu // d), max(1, args.n_cpu // d)
        out[name] = {
            "gpu": median_time(lambda: g(ng), args.repeats) * d,  # time per n instances
            "cpu": median_time(lambda: c(nc), args.repeats) * d,
            "floor": floor, "jax": j, "cpu_counts": c,
        }
    return out


def sweeps(args) -> None:
    """End-to-end ``--sweep-cells`` grids, run.device=cuda against run.device=cpu."""
    from antiamp.sweeps.engine import run_sweep

    side = max(1, int(round(args.sweep_cells ** 0.5)))
    axes = {"model": {"rho": {"linspace": [0.05, 0.95, side]},
                      "p": {"linspace": [0.55, 0.95, side]}}}
    grids = {"baseline": {}, "signals": {"equilibrium": {"payoffs": "simulated"}},
             "colmad": {"judge": {"kind": "logit"}}}
    # colmad reads its own section: the same grid over its error share and evidence.
    own = {"colmad": {"colmad": {"p_error": axes["model"]["rho"],
                                 "evidence": axes["model"]["p"]}}}
    print(f"sweeps: {side * side} cells x {args.sweep_n:.3g} instances a cell")
    for model, extra in grids.items():
        times = {}
        for dev in ("cuda", "cpu"):
            cfg = {"model": {"name": model}, **extra,
                   "sweep": {"axes": own.get(model, axes), "plot": False},
                   "run": {"n_instances": args.sweep_n, "seed": 1, "device": dev,
                           "progress": False}}
            with tempfile.TemporaryDirectory() as d:
                t = time.perf_counter()
                run_sweep(cfg, d, progress=False, log=lambda *a, **k: None)
                times[dev] = time.perf_counter() - t
        print(f"  {model:<10} GPU {times['cuda']:8.2f} s   CPU {times['cpu']:8.2f} s   "
              f"CPU/GPU {times['cpu'] / times['cuda']:.3g}")


def report() -> list:
    """The GPU section of BENCHMARKS.md (``benchmarks/run_all.py`` runs on the CPU)."""
    return [
        "## GPU: run.device=cuda beside the GPU's Philox floor, the CPU and JAX",
        "",
        "No GPU figures yet: they are pending a run on a machine with an NVIDIA GPU. There, "
        "one command prints, for every kernel with a GPU launcher (the baseline, one cell "
        "and the multi-cell CRN kernel; signals; portfolio; messages; options; the panel's "
        "Monte Carlo tables; confidence; redeliberation; colmad; mediation; the loop's paths): "
        "GPU "
        "instances/s, the ratio to the "
        "bare Philox4x32-10 floor "
        "on the same GPU, the CPU kernel on all cores, JAX on the same GPU (baseline, "
        "signals, portfolio; skipped when JAX is absent), and the end-to-end time of a "
        "10^4-cell sweep (baseline, signals and colmad, 10^7 instances a cell) on the GPU "
        "and on "
        "the CPU, all in the same run:",
        "",
        "```bash",
        "pip install '.[gpu]' && python benchmarks/bench_gpu.py",
        "```",
        "",
        "Without a GPU it says why and exits; `NUMBA_ENABLE_CUDASIM=1 python "
        "benchmarks/bench_gpu.py --smoke` runs it on numba's CUDA simulator at a tiny size "
        "(which checks that it runs; the simulator's figures are not GPU timings). Before "
        "timing, each GPU kernel's counts are checked equal to the CPU kernel's (float sums "
        "within 1e-12 relative) and JAX's class frequencies against the kernel's.",
    ]


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    sys.exit(main())
