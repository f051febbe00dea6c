"""The GPU kernels (run.device=cuda) beside the GPU's Philox floor, the CPU and JAX.

    python benchmarks/bench_gpu.py [--n-gpu 4294967296] [--n-cpu 268435456]
                                   [--min-time 0.25] [--sweep-cells 10000]
                                   [--sweep-n 10000000] [--sweep-n-cpu 1000000]
                                   [--only kernels|sweeps] [--json results.jsonl]
    python benchmarks/bench_gpu.py --report-from results.jsonl   # BENCHMARKS.md's tables
    NUMBA_ENABLE_CUDASIM=1 python benchmarks/bench_gpu.py --smoke   # runs, times nothing real

``benchmarks/gpu_check.sh`` runs it (after ``tests/test_gpu.py``) within a time limit on
a machine with a GPU and no network.

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
``--repeats``; every GPU figure is timed after a synchronize.  With ``--min-time`` the
instance counts adapt to each device's speed (a timing's instances grow until a call
lasts that long; ``--n-*`` cap them), so the whole run's length is known in advance
whatever the kernels' rates.  A kernel or sweep that fails (a compile error, results
that differ from the CPU's) is reported in its row and the others still run (exit
status 1).  ``--json`` appends every result as a JSON line as soon as it is known.
"""

from __future__ import annotations

import argparse
import json
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


def timed(fn, m0, cap, min_time, repeats):
    """``(m, seconds)``: the median time of ``fn(m)`` over ``repeats`` calls, ``m``
    grown from ``m0`` (by the measured rate, 2x to 8x a step) until one call lasts
    ``min_time`` or ``m`` reaches ``cap``, after one untimed call at ``m0`` (compilation);
    the call that reached it is the first repeat.  Should the median still fall short
    of half of ``min_time`` (one slow call stopped the growth: a clock ramping up, a
    hiccup of the host), ``m`` grows again from the median, at most 4 times.
    A rate is then ``m / seconds`` whatever the device's speed, and the time spent
    stays near ``repeats x min_time`` (with ``min_time`` 0, ``m = min(m0, cap)``)."""
    m = max(1, min(int(m0), int(cap)))
    # One untimed call first: it compiles (a kernel's first call on a fresh machine lasts
    # seconds, which would otherwise end the growth at m0 and time launches, not work).
    fn(m)
    for _ in range(5):
        while True:
            t = time.perf_counter()
            fn(m)
            t = time.perf_counter() - t
            if t >= min_time or m >= cap:
                break
            m = _grown(m, t, cap, min_time)
        ts = [t]
        for _ in range(repeats - 1):
            t = time.perf_counter()
            fn(m)
            ts.append(time.perf_counter() - t)
        med = statistics.median(ts)
        if med >= min_time / 2 or m >= cap:
            break
        m = _grown(m, med, cap, min_time)
    return m, med


def _grown(m, t, cap, min_time):
    grow = min(8.0, max(2.0, 1.5 * min_time / max(t, 1e-6)))
    return int(min(cap, m * grow))


class Log:
    """The results as JSON lines, each written and flushed when it is known (a run cut
    short by a time limit keeps what finished); ``None``: nothing written."""

    def __init__(self, path):
        self.path = path

    def __call__(self, **rec):
        if self.path:
            with open(self.path, "a") as f:
                f.write(json.dumps(rec, default=str) + "\n")


def machine(why) -> dict:
    import numba as nb

    out = {"gpu": why, "cpu": platform.processor() or platform.machine(),
           "threads": nb.get_num_threads(), "python": platform.python_version(),
           "numba": nb.__version__, "numpy": np.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    for pkg in ("numba-cuda", "jax"):
        try:
            from importlib.metadata import version

            out[pkg] = version(pkg)
        except Exception:  # noqa: BLE001 - not installed
            out[pkg] = None
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-gpu", type=int, default=1 << 32,
                    help="instances a GPU timing (with --min-time: at most)")
    ap.add_argument("--n-cpu", type=int, default=1 << 28,
                    help="instances a CPU timing (with --min-time: at most)")
    ap.add_argument("--n-jax", type=int, default=1 << 28,
                    help="instances a JAX timing (with --min-time: at most)")
    ap.add_argument("--min-time", type=float, default=0.0,
                    help="grow each timing's instances until a call lasts this many seconds "
                         "(the --n-* options are then caps); 0: the --n-* sizes as given")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--grid-cells", type=int, default=32,
                    help="cells of the baseline's multi-cell (CRN) kernel case")
    ap.add_argument("--sweep-cells", type=int, default=10_000)
    ap.add_argument("--sweep-n", type=int, default=10_000_000,
                    help="instances a cell of the GPU's sweeps")
    ap.add_argument("--sweep-n-cpu", type=int, default=0,
                    help="instances a cell of the CPU's sweeps (0: --sweep-n); when smaller, "
                         "the GPU runs that size too, for a like-for-like ratio")
    ap.add_argument("--sweep-models", default="baseline,signals,colmad",
                    help="comma-separated: baseline, signals (simulated payoffs), colmad")
    ap.add_argument("--kernels", default="",
                    help="comma-separated parts of kernel names to run (default: every kernel)")
    ap.add_argument("--only", choices=("kernels", "sweeps"),
                    help="the kernels' table or the sweeps only (default: both)")
    ap.add_argument("--json", help="append each result to this file as a JSON line")
    ap.add_argument("--report-from", metavar="JSONL",
                    help="print the Markdown tables of a --json file (no GPU needed) and exit")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes, one repeat: check that it runs (e.g. on the simulator)")
    args = ap.parse_args(argv)
    if args.report_from:
        print("\n".join(render(load_records(args.report_from))))
        return 0
    if args.smoke:
        args.n_gpu = args.n_cpu = args.n_jax = 4096
        args.repeats, args.grid_cells, args.sweep_cells, args.sweep_n = 1, 3, 4, 1024
        args.min_time, args.sweep_n_cpu = 0.0, 512

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
    log = Log(args.json)
    info = machine(why)
    log(kind="machine", simulator=simulator(), args=vars(args), **info)
    print(f"GPU: {why}; CPU: {info['cpu']}, {info['threads']} threads; numba {info['numba']}, "
          f"numba-cuda {info['numba-cuda']}, JAX {info['jax']}", flush=True)
    if simulator():
        print("(numba's CUDA simulator: the figures below are not GPU timings)")
    failed = 0
    if args.only in (None, "kernels"):
        failed += run_kernels(args, log)
    if args.only in (None, "sweeps"):
        failed += sweeps(args, log)
    return 1 if failed else 0


def run_kernels(args, log) -> int:
    """Each kernel: the GPU's results against the CPU's, then GPU, CPU and JAX timings;
    a row printed and logged as each finishes.  The number of kernels that failed."""
    spec, bare = build_spec(args)
    pick = [p.strip() for p in args.kernels.split(",") if p.strip()]
    if pick:
        spec = {k: v for k, v in spec.items() if any(p in k for p in pick)}
    models = jax_models()
    if models is None:
        print("JAX: not installed (pip install 'jax[cuda12]'); JAX columns skipped")
    else:
        print(f"JAX: {models['device']}")
    m, t = timed(bare, 1 << 20, args.n_gpu, args.min_time, args.repeats)
    floor = rate(m, t)
    log(kind="floor", n=m, seconds=t, rate=floor)
    print(f"GPU floor (bare Philox4x32-10, one block an instance): {fmt(floor)} inst/s\n")
    print(f"{'kernel':<28}{'GPU inst/s':>12}{'/floor':>8}{'CPU inst/s':>12}{'GPU/CPU':>9}"
          f"{'JAX inst/s':>12}{'GPU/JAX':>9}", flush=True)
    failed = 0
    for name, (g, c, j, d) in spec.items():
        rec = {"kind": "kernel", "name": name, "floor_rate": floor}
        try:
            # The same counts (float means: within 1e-12 relative) first, at a size the
            # CPU does quickly (this compiles both), then the timings.
            n_check = max(1, min(args.n_cpu, 1 << 22) // d)
            t0 = time.perf_counter()
            a = np.asarray(g(n_check))
            t1 = time.perf_counter()
            b = np.asarray(c(n_check))
            t2 = time.perf_counter()
            rec["same"] = bool(np.allclose(a, b, rtol=1e-12, atol=0) if a.dtype.kind == "f"
                               else np.array_equal(a, b))
            if not rec["same"]:
                raise AssertionError("the GPU's results differ from the CPU's")
            if args.smoke:  # the check's calls are the timings (compilation included)
                (gn, gt), (cn, ct) = (n_check, t1 - t0), (n_check, t2 - t1)
            else:
                gn, gt = timed(g, n_check, max(1, args.n_gpu // d), args.min_time,
                               args.repeats)
                cn, ct = timed(c, n_check, max(1, args.n_cpu // d), args.min_time,
                               args.repeats)
            rec.update(gpu_n=gn, gpu_s=gt, gpu_rate=rate(gn, gt))
            rec.update(cpu_n=cn, cpu_s=ct, cpu_rate=rate(cn, ct))
            if models is not None and j is not None:
                # The same estimator: JAX's class frequencies agree with the kernel's
                # within sampling error (6 standard errors a class) before it is timed.
                mj = 1 << 20
                fj = j(models, mj).ravel() / mj
                fc = np.asarray(c(mj)).ravel() / mj
                se = np.sqrt(np.maximum(fc * (1 - fc), 1.0 / mj) * 2 / mj)
                if np.any(np.abs(fj - fc) > 6 * se):
                    raise AssertionError("JAX's class frequencies disagree with the kernel's")
                j(models, min(1 << 24, args.n_jax))  # compiled before it is timed
                jn, jt = timed(lambda n: j(models, n), 1 << 24, args.n_jax, args.min_time,
                               args.repeats)
                rec.update(jax_n=jn, jax_s=jt, jax_rate=rate(jn, jt))
        except Exception as exc:  # noqa: BLE001 - one kernel's failure does not stop the rest
            rec["error"] = f"{type(exc).__name__}: {exc}"
            failed += 1
        log(**rec)
        print(row(rec), flush=True)
    print()
    return failed


def row(rec) -> str:
    g, cp, jr = rec.get("gpu_rate"), rec.get("cpu_rate"), rec.get("jax_rate")
    ratio = (lambda x, y: None if x is None or y is None else x / y)
    line = (f"{rec['name']:<28}{fmt(g):>12}{fmt(ratio(g, rec.get('floor_rate'))):>8}"
            f"{fmt(cp):>12}{fmt(ratio(g, cp)):>9}{fmt(jr):>12}{fmt(ratio(g, jr)):>9}")
    return line + (f"   FAILED: {rec['error']}" if "error" in rec else "")


def build_spec(args):
    """``(spec, floor)``: name -> (gpu(n), cpu(n), JAX or None, d) of every kernel with a
    GPU launcher, and the GPU floor ``floor(n)``."""
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
    # (the simulator runs a GPU thread as a Python thread: a few paths for --smoke)
    loop_paths, loop_rounds = (4, 3) if getattr(args, "smoke", False) else (256, 10)

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
    return spec, lambda n: gb.bare_philox(0, n, k0, k1, sb)


def sweeps(args, log) -> int:
    """End-to-end grids of ``--sweep-cells`` cells, run.device=cuda against
    run.device=cpu; each model compiled first on a tiny grid (not timed).  The number
    of sweeps that failed."""
    from antiamp.sweeps.engine import run_sweep

    side = max(1, int(round(args.sweep_cells ** 0.5)))
    axes = {"model": {"rho": {"linspace": [0.05, 0.95, side]},
                      "p": {"linspace": [0.55, 0.95, side]}}}
    grids = {"baseline": {}, "signals": {"equilibrium": {"payoffs": "simulated"}},
             "colmad": {"judge": {"kind": "logit"}}}
    # colmad reads its own section: the same grid over its error share and evidence.
    own = {"colmad": lambda ax: {"colmad": {"p_error": ax["model"]["rho"],
                                            "evidence": ax["model"]["p"]}}}
    n_cpu = args.sweep_n_cpu or args.sweep_n
    runs = [("cuda", args.sweep_n)] + ([("cuda", n_cpu)] if n_cpu != args.sweep_n else []) \
        + [("cpu", n_cpu)]
    print(f"sweeps: {side * side} cells; GPU at {args.sweep_n:.3g} instances a cell, CPU at "
          f"{n_cpu:.3g}", flush=True)
    failed = 0
    for model in [m.strip() for m in args.sweep_models.split(",") if m.strip()]:
        times = {}
        for dev, n in runs:
            rec = {"kind": "sweep", "model": model, "device": dev, "cells": side * side, "n": n}
            try:
                if model not in grids:
                    raise ValueError(f"no sweep case for model {model!r} "
                                     f"(one of {', '.join(grids)})")

                def cfg(ax, n_inst):
                    return {"model": {"name": model}, **grids[model],
                            "sweep": {"axes": own[model](ax) if model in own else ax,
                                      "plot": False},
                            "run": {"n_instances": n_inst, "seed": 1, "device": dev,
                                    "progress": False}}

                tiny = {"model": {k: {"linspace": [0.2, 0.8, 2]} for k in ("rho", "p")}}
                with tempfile.TemporaryDirectory() as d:  # compiles, not timed
                    run_sweep(cfg(tiny, 1000), d, progress=False, log=lambda *a, **k: None)
                with tempfile.TemporaryDirectory() as d:
                    t = time.perf_counter()
                    run_sweep(cfg(axes, n), d, progress=False, log=lambda *a, **k: None)
                    rec["seconds"] = times[dev, n] = time.perf_counter() - t
            except Exception as exc:  # noqa: BLE001 - one sweep's failure does not stop the rest
                rec["error"] = f"{type(exc).__name__}: {exc}"
                failed += 1
            log(**rec)
            print(f"  {model:<10} {'GPU' if dev == 'cuda' else 'CPU'} at {n:.3g} a cell: "
                  + (f"{rec['seconds']:8.2f} s" if "seconds" in rec else
                     f"FAILED: {rec['error']}"), flush=True)
        if ("cuda", n_cpu) in times and ("cpu", n_cpu) in times:
            print(f"  {model:<10} CPU / GPU at {n_cpu:.3g} a cell: "
                  f"{times['cpu', n_cpu] / times['cuda', n_cpu]:.3g}", flush=True)
    return failed


def load_records(path) -> list:
    """The records of a ``--json`` file (a line cut short by a time limit is skipped)."""
    out = []
    with open(path) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def timing(args) -> str:
    """How a run's timings were taken, from its arguments."""
    if args.get("min_time"):
        return (f"medians of {args.get('repeats')} calls, each call's instances grown until "
                f"it lasts {args.get('min_time')} s")
    return f"medians of {args.get('repeats')} calls at fixed sizes"


def render(records) -> list:
    """Markdown (BENCHMARKS.md's GPU section) of a run's records; a failed or
    unfinished case says so."""
    mach = next((r for r in records if r.get("kind") == "machine"), {})
    # "note" records: how records of several runs were put together (said, not hidden)
    notes = [r for r in records if r.get("kind") == "note" and r.get("text")]
    L = ["## GPU: run.device=cuda beside the GPU's Philox floor, the CPU and JAX", ""]
    if mach:
        how = timing(mach.get("args") or {})
        L += [f"{mach.get('gpu')} ({mach.get('date')}): CPU {mach.get('cpu')}, "
              f"{mach.get('threads')} threads; Python {mach.get('python')}, numba "
              f"{mach.get('numba')}, numba-cuda {mach.get('numba-cuda')}, NumPy "
              f"{mach.get('numpy')}, JAX {mach.get('jax')}"
              + (" (numba's CUDA simulator: not GPU timings)" if mach.get("simulator") else "")
              + ". " + ("One run, " + how if not notes else how[:1].upper() + how[1:])
              + "; every kernel's "
              "results checked equal to the CPU kernel's first (float sums within 1e-12 "
              "relative).", ""]
    L += [n["text"] for n in notes] + ([""] if notes else [])
    floor = next((r for r in records if r.get("kind") == "floor"), None)
    kernels = [r for r in records if r.get("kind") == "kernel"]
    if floor or kernels:
        L += [f"GPU floor (one Philox4x32-10 block an instance, XOR-folded): "
              f"{fmt(floor['rate']) if floor else '-'} instances/s.", "",
              "| kernel | GPU inst/s | / floor | CPU inst/s (all cores) | GPU / CPU | "
              "JAX inst/s | GPU / JAX |", "|---|---:|---:|---:|---:|---:|---:|"]
        for r in kernels:
            g, c, j, f = (r.get(k) for k in ("gpu_rate", "cpu_rate", "jax_rate", "floor_rate"))
            q = (lambda x, y: "-" if x is None or y is None else f"{x / y:.3g}")
            name = r["name"] + (f" ({r['note']})" if r.get("note") else "")
            L.append(f"| {name} | {fmt(g)} | {q(g, f)} | {fmt(c)} | {q(g, c)} | "
                     f"{fmt(j)} | {q(g, j)} |" + (f" failed: {r['error']}" if "error" in r
                                                  else ""))
        L.append("")
    sw = [r for r in records if r.get("kind") == "sweep"]
    if sw:
        L += ["End to end (`antiamp.sweeps.engine.run_sweep`, the local executor, the store "
              "written):", "", "| model | cells | instances a cell | device | seconds | "
              "cell-instances/s |", "|---|---:|---:|---|---:|---:|"]
        for r in sw:
            s = r.get("seconds")
            L.append(f"| {r['model']} | {r['cells']} | {r['n']:.3g} | "
                     f"{'GPU' if r['device'] == 'cuda' else 'CPU'} | "
                     + (f"{s:.2f} | {fmt(r['cells'] * r['n'] / s)} |" if s else
                        f"failed: {r.get('error')} | - |"))
        L.append("")
        secs = {(r["model"], r["device"], r["n"]): r["seconds"] for r in sw if r.get("seconds")}
        for (model, dev, n), s in secs.items():
            if dev == "cpu" and (model, "cuda", n) in secs:
                L.append(f"{model}: the CPU's time / the GPU's at {n:.3g} instances a cell "
                         f"(same grid): {s / secs[model, 'cuda', n]:.3g}.")
        L.append("")
        # How much of a GPU sweep its kernel explains: the cells' instances at the
        # one-cell kernel's rate above, against the sweep's time (the rest is per-cell
        # work on the host: planning, launches, the model's metrics, the store).
        rates = {}
        for r in kernels:  # a model's kernel by its first word; its one-cell case first
            key = r["name"].split(" ")[0].rstrip(",")
            if r.get("gpu_rate") and (key not in rates or "one cell" in r["name"]):
                rates[key] = r["gpu_rate"]
        share = []
        for r in sw:
            g = rates.get(r["model"])
            if r["device"] == "cuda" and r.get("seconds") and g:
                k = r["cells"] * r["n"] / g
                share.append(f"{r['model']} at {r['n']:.3g} a cell: {k:.2f} s of kernel at "
                             f"{fmt(g)}/s, {100 * k / r['seconds']:.0f}% of its "
                             f"{r['seconds']:.2f} s")
        if share:
            L += ["On the GPU, the kernel's share of each sweep (the rest is per-cell work on "
                  "the host): " + "; ".join(share) + ".", ""]
    return L


#: Where a GPU run's records are kept for BENCHMARKS.md (``benchmarks/gpu_check.sh``
#: writes them into its output folder as ``bench.jsonl``; copy that file here).
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu_results.jsonl")


def report(path=RESULTS) -> list:
    """The GPU section of BENCHMARKS.md (``benchmarks/run_all.py`` runs on the CPU):
    the tables of a GPU run's records where ``path`` exists, else how to make them."""
    if path and os.path.exists(path):
        return render(load_records(path))
    return [
        "## GPU: run.device=cuda beside the GPU's Philox floor, the CPU and JAX",
        "",
        "No GPU figures yet: they are pending a run on a machine with an NVIDIA GPU. There, "
        "one command prints, for every kernel with a GPU launcher (the baseline, one cell "
        "and the multi-cell CRN kernel; signals; portfolio; messages; options; the panel's "
        "Monte Carlo tables; confidence; redeliberation; colmad; mediation; the loop's paths): "
        "GPU instances/s, the ratio to the bare Philox4x32-10 floor on the same GPU, the CPU "
        "kernel on all cores, JAX on the same GPU (baseline, signals, portfolio; skipped when "
        "JAX is absent), and the end-to-end time of a 10^4-cell sweep (baseline, signals and "
        "colmad, 10^7 instances a cell) on the GPU and on the CPU, all in the same run:",
        "",
        "```bash",
        "pip install '.[gpu]' && python benchmarks/bench_gpu.py",
        "```",
        "",
        "Without a GPU it says why and exits; `NUMBA_ENABLE_CUDASIM=1 python "
        "benchmarks/bench_gpu.py --smoke` runs it on numba's CUDA simulator at a tiny size "
        "(which checks that it runs; the simulator's figures are not GPU timings). Before "
        "timing, each GPU kernel's counts are checked equal to the CPU kernel's (float sums "
        "within 1e-12 relative) and JAX's class frequencies against the kernel's. On a "
        "machine without a network, `bash benchmarks/gpu_check.sh` installs what is missing "
        "from a wheelhouse (`benchmarks/gpu_offline.py`), runs `tests/test_gpu.py` and this "
        "benchmark within 8 minutes, and writes the records (`bench.jsonl`: copy it to "
        "`benchmarks/gpu_results.jsonl` and these tables are made from it) and this "
        "section's Markdown into its output folder.",
    ]


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    sys.exit(main())
