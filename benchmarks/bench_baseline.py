"""Baseline kernel throughput and time-to-precision, beside NumPy and the bare RNG loop.

    python benchmarks/bench_baseline.py [--n 200000000] [--repeats 5] [--json out.json]

Every figure is a median over repeats taken in this run, and every comparison is
a ratio of two figures from this run (the machines are shared and noisy).
Before timing, each reference is checked against the closed forms.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import numba
import numpy as np

import antiamp as sim
from antiamp.kernels import baseline as kb
from antiamp.kernels.rng import split_seed
from antiamp.judge import judge_tables
from antiamp.runner import baseline_thresholds, numba_threads, run_baseline_counts

from reference_numpy import numpy_class_counts, numpy_naive

PI, P, RHO, B = 0.5, 0.8, 0.3, 0.5  # the defaults of conf/config.yaml


def median_time(fn, repeats):
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def check_references():
    """Each implementation must reproduce the seed's closed forms before it is timed."""
    cfg = sim.to_config(None)
    Jc, Jd = judge_tables(cfg.judge)
    n = 2_000_000
    c = numpy_class_counts(n, PI, P, RHO, seed=1)
    ours = run_baseline_counts(baseline_thresholds(PI, P, RHO, 1, 1, 1), False, 1, n, 1,
                               progress=False)
    for counts in (c, ours):
        wrong = counts[((np.arange(32) >> 3) & 1) == 0].sum()
        fabricated = counts[(((np.arange(32) >> 3) & 1) == 0) & (((np.arange(32) >> 2) & 1) == 1)]
        rho_hat = fabricated.sum() / wrong
        assert abs(rho_hat - RHO) < 5 * np.sqrt(RHO * (1 - RHO) / wrong), rho_hat
    nw, ec, ed = numpy_naive(n, PI, P, RHO, Jc, Jd, seed=2)
    for got, want in ((ec / nw, RHO), (ed / nw, RHO * B)):
        assert abs(got - want) < 5 * np.sqrt(want * (1 - want) / nw), (got, want)


def time_to_se(target, step_fn, se_fn, max_seconds=600):
    """Run ``step_fn`` repeatedly until ``se_fn`` (of the accumulated state) <= target."""
    t0 = time.perf_counter()
    state = None
    while True:
        state = step_fn(state)
        if se_fn(state) <= target:
            return time.perf_counter() - t0, state
        if time.perf_counter() - t0 > max_seconds:
            raise RuntimeError("did not reach the target standard error")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000_000, help="instances per timed call")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--target-se", type=float, default=1e-4)
    ap.add_argument("--json", default=None, help="write the figures here as JSON")
    args = ap.parse_args(argv)

    check_references()
    thr = baseline_thresholds(PI, P, RHO, 1, 1, 1)
    k0, k1 = split_seed(0)
    stream = np.uint64(kb.STREAM)
    ncores = numba.config.NUMBA_NUM_THREADS
    n = args.n
    res = {"machine": platform.processor() or platform.machine(), "cores": ncores,
           "numba": numba.__version__, "numpy": np.__version__, "n": n}

    kb.class_counts(thr, 0, 1, 0, 1000, k0, k1, stream, 2)  # compile
    kb.bare_philox(0, 1000, k0, k1, stream, 2)
    for nt in sorted({1, ncores}):
        with numba_threads(nt):
            t = median_time(lambda: kb.class_counts(thr, 0, 1, 0, n, k0, k1, stream, 4 * nt),
                            args.repeats)
            tb = median_time(lambda: kb.bare_philox(0, n, k0, k1, stream, 4 * nt), args.repeats)
        res[f"kernel_{nt}"] = n / t
        res[f"bare_{nt}"] = n / tb
    n_np = max(n // 20, 1_000_000)
    res["numpy_counts"] = n_np / median_time(lambda: numpy_class_counts(n_np, PI, P, RHO),
                                             args.repeats)
    Jc, Jd = judge_tables(sim.to_config(None).judge)
    res["numpy_naive"] = n_np / median_time(lambda: numpy_naive(n_np, PI, P, RHO, Jc, Jd),
                                            args.repeats)

    # Time to reach the target standard error on debate Amp at the defaults.
    target = args.target_se
    cfg = sim.to_config(None)

    def ours_step(state, nt):
        k, counts = state or (0, np.zeros(32, np.int64))
        m = 1 << 22 if k == 0 else k  # doubling
        counts = counts + run_baseline_counts(thr, False, 1, m, 0, start=k, n_threads=nt,
                                              progress=False)
        return k + m, counts

    def ours_se(state):
        from antiamp.metrics import evaluate
        return evaluate(state[1], Jc, Jd, 1, 1, 0, 0)["amp"][1][1]

    def naive_step(state):
        k, nw, ed = state or (0, 0, 0)
        m = 1 << 22 if k == 0 else k
        w, _, e = numpy_naive(m, PI, P, RHO, Jc, Jd, seed=k)
        return k + m, nw + w, ed + e

    def naive_se(state):
        _, nw, ed = state
        a = ed / nw
        return np.sqrt(a * (1 - a) / nw)

    for nt in sorted({1, ncores}):
        ts = [time_to_se(target, lambda s: ours_step(s, nt), ours_se)[0]
              for _ in range(args.repeats)]
        res[f"tts_ours_{nt}"] = statistics.median(ts)
    ts = [time_to_se(target, naive_step, naive_se)[0] for _ in range(max(1, args.repeats // 2))]
    res["tts_numpy_naive"] = statistics.median(ts)
    del cfg

    report(res, ncores)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=2)


def report(r, nc):
    m = 1e6
    print(f"baseline kernel, n = {r['n']:,} per call, median of repeats; "
          f"numba {r['numba']}, numpy {r['numpy']}, {nc} cores\n")
    print("| implementation | instances/s | antiamp 1 core / this |")
    print("|---|---:|---:|")
    base = r["kernel_1"]
    rows = [("antiamp kernel, 1 core", r["kernel_1"]),
            (f"antiamp kernel, {nc} cores", r[f"kernel_{nc}"]),
            ("bare Philox loop, 1 core", r["bare_1"]),
            (f"bare Philox loop, {nc} cores", r[f"bare_{nc}"]),
            ("NumPy class counts (same estimator)", r["numpy_counts"]),
            ("NumPy naive (drawn labels)", r["numpy_naive"])]
    for name, v in rows:
        print(f"| {name} | {v / m:,.1f} M | {base / v:,.2f} |")
    print(f"\nper core: {r['kernel_1'] / m:,.1f} M/s (target >= 120 M/s)")
    print(f"kernel / NumPy (same estimator), 1 core: {r['kernel_1'] / r['numpy_counts']:.1f}x "
          f"(target >= 7x)")
    print(f"speed-up 1 -> {nc} cores: {r[f'kernel_{nc}'] / r['kernel_1']:.2f}x (target >= 1.7x)")
    print(f"kernel / bare Philox loop, 1 core: {r['kernel_1'] / r['bare_1']:.2f}")
    print(f"\ntime to se <= 1e-4 on debate Amp: ours {r['tts_ours_1']:.3f} s on 1 core, "
          f"{r[f'tts_ours_{nc}']:.3f} s on {nc}; naive NumPy {r['tts_numpy_naive']:.2f} s")
    print(f"ratio (naive NumPy / ours): {r['tts_numpy_naive'] / r['tts_ours_1']:.0f}x on 1 core, "
          f"{r['tts_numpy_naive'] / r[f'tts_ours_{nc}']:.0f}x on {nc} (target >= 20x)")


if __name__ == "__main__":
    main()
