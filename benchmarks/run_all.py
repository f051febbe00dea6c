"""The whole benchmark suite: writes BENCHMARKS.md and figures.

    pip install ".[test,bench]" && python benchmarks/run_all.py [--quick]

Every reference implements the same model and is checked against the closed
forms (or against our answers) before it is timed; every comparison is a ratio of
two figures measured in this run; figures are medians over repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numba
import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))

import antiamp as sim  # noqa: E402
from antiamp.kernels import baseline as kb  # noqa: E402
from antiamp.kernels.rng import split_seed  # noqa: E402
from antiamp.judge import judge_tables  # noqa: E402
from antiamp.runner import baseline_thresholds, run_baseline_counts  # noqa: E402

import bench_engine  # noqa: E402
import bench_scale  # noqa: E402
import bench_startup  # noqa: E402
import bench_extensions  # noqa: E402
import bench_loop  # noqa: E402
import bench_confidence  # noqa: E402
import bench_redeliberation  # noqa: E402
import bench_colmad  # noqa: E402
import bench_mediation  # noqa: E402
import bench_panel  # noqa: E402
import bench_gpu  # noqa: E402
import bench_floors  # noqa: E402
import bench_threads  # noqa: E402
import bench_rounds  # noqa: E402
import bench_crn  # noqa: E402
import bench_launch  # noqa: E402
import bench_sweep  # noqa: E402
from mdsections import keep_sections  # noqa: E402
from bench_baseline import median_time  # noqa: E402
from reference_numpy import numpy_class_counts, numpy_naive  # noqa: E402

PI, P, RHO, B = 0.5, 0.8, 0.3, 0.5
NC = numba.config.NUMBA_NUM_THREADS


def _child_peak(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints a JSON dict; add its peak RSS (MB)."""
    wrapper = (
        "import json, resource, sys\n" + code +
        "\nres['peak_mb'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "print(json.dumps(res))\n"
    )
    out = subprocess.run([sys.executable, "-c", wrapper], capture_output=True, text=True,
                         check=True, cwd=str(HERE), env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(out.stdout.strip().splitlines()[-1])


def throughput(n, repeats):
    """Kernel and reference throughput from a pytest-benchmark session (same run)."""
    import tempfile

    out = Path(tempfile.mkdtemp()) / "bench.json"
    env = {**os.environ, "ANTIAMP_BENCH_N": str(n), "PYTHONPATH": str(ROOT),
           "ANTIAMP_BENCH_N_MESA": str(200_000 if n >= 10 ** 8 else 50_000)}
    subprocess.run([sys.executable, "-m", "pytest", str(HERE / "test_throughput.py"), "-q",
                    "-p", "no:cacheprovider", "--benchmark-only",
                    f"--benchmark-json={out}", "-o", "addopts=", "-o", "testpaths="],
                   check=True, cwd=str(ROOT), env=env)
    data = json.loads(out.read_text())
    r = {"pytest_benchmark": data["version"] if "version" in data else "",
         "rows": []}
    names = {"test_kernel": "kernel", "test_bare_philox": "bare", "test_numpy_class_counts":
             "numpy_counts", "test_numpy_naive": "numpy_naive", "test_mesa": "mesa",
             "test_correlated_signals_kernel": "signals", "test_portfolio_kernel": "portfolio",
             "test_messages_kernel": "messages", "test_options_kernel": "options",
             "test_panel_kernel": "panel"}
    for b in data["benchmarks"]:
        base = b["name"].split("[")[0]
        key = names[base]
        if "threads" in b["extra_info"] and key in ("kernel", "bare"):
            key = f"{key}_{b['extra_info']['threads']}"
        med = b["stats"]["median"]
        r[key] = b["extra_info"]["instances"] / med
        r["rows"].append({"name": b["name"], "median": med, "iqr": b["stats"]["iqr"],
                          "rounds": b["stats"]["rounds"], "instances": b["extra_info"]["instances"]})
    return r


def cores_memory(n):
    """Peak RSS of one kernel call of n instances on 1 and on all cores (fresh processes)."""
    rows = []
    for nt in sorted({1, NC}):
        code = (
            "import time\n"
            "from antiamp.runner import baseline_thresholds, run_baseline_counts\n"
            "thr = baseline_thresholds(0.5, 0.8, 0.3, 1, 1, 1)\n"
            f"run_baseline_counts(thr, False, 1, 1000, 0, n_threads={nt}, progress=False)\n"
            "t = time.perf_counter()\n"
            f"run_baseline_counts(thr, False, 1, {n}, 0, n_threads={nt}, progress=False)\n"
            f"res = {{'threads': {nt}, 'seconds': time.perf_counter() - t}}\n"
        )
        rows.append(_child_peak(code))
    return rows


def scaling_instances(quick):
    ns = [10 ** k for k in range(3, 9 if quick else 10)]
    rows = []
    for n in ns:
        code = (
            "import time, numpy as np\n"
            "from antiamp.runner import baseline_thresholds, run_baseline_counts\n"
            "thr = baseline_thresholds(0.5, 0.8, 0.3, 1, 1, 1)\n"
            "run_baseline_counts(thr, False, 1, 1000, 0, progress=False)\n"
            f"n = {n}; reps = max(1, min(1000, 10**7 // n))\n"
            "t = time.perf_counter()\n"
            "for _ in range(reps): run_baseline_counts(thr, False, 1, n, 0, progress=False)\n"
            "dt = (time.perf_counter() - t) / reps\n"
            "res = {'n': n, 'seconds': dt}\n"
        )
        rows.append(_child_peak(code))
    return rows


def precision(target, repeats):
    """Seconds to a standard error of ``target`` on debate Amp, per method."""
    cfg = sim.to_config(None)
    Jc, Jd = judge_tables(cfg.judge)
    thr = baseline_thresholds(PI, P, RHO, 1, 1, 1)
    from antiamp.metrics import evaluate

    def rb_se(counts):
        return evaluate(counts, Jc, Jd, 1, 1, 0, 0)["amp"][1][1]

    def until(step, se_of):
        t0 = time.perf_counter()
        state, m = None, 1 << 20
        while True:
            state = step(state, m)
            if se_of(state) <= target:
                return time.perf_counter() - t0
            m = state[0]  # doubling

    def ours(nt):
        def step(state, m):
            k, c = state or (0, np.zeros(32, np.int64))
            return k + m, c + run_baseline_counts(thr, False, 1, m, 0, start=k, n_threads=nt,
                                                  progress=False)
        return until(step, lambda s: rb_se(s[1]))

    def np_rb():
        def step(state, m):
            k, c = state or (0, np.zeros(32, np.int64))
            return k + m, c + numpy_class_counts(m, PI, P, RHO, seed=k)
        return until(step, lambda s: rb_se(s[1]))

    def np_naive():
        def step(state, m):
            k, w, e = state or (0, 0, 0)
            a, _, b = numpy_naive(m, PI, P, RHO, Jc, Jd, seed=k)
            return k + m, w + a, e + b

        def se(s):
            a = s[2] / s[1]
            return np.sqrt(a * (1 - a) / s[1])
        return until(step, se)

    out = {f"ours_rb_{nt}": statistics.median(ours(nt) for _ in range(repeats))
           for nt in sorted({1, NC})}
    out["numpy_rb"] = statistics.median(np_rb() for _ in range(max(1, repeats // 2)))
    out["numpy_naive"] = statistics.median(np_naive() for _ in range(max(1, repeats // 2)))
    out.update(crn_difference(target))
    return out


def crn_difference(target, n=1_000_000, reps=30):
    """Debate Amp at rho = 0.30 minus at rho = 0.32: spread of the difference over
    replicate seeds with common random numbers and with independent streams, and the
    time each needs to reach the target standard error."""
    from antiamp.metrics import evaluate

    Jc, Jd = judge_tables(sim.to_config(None).judge)
    thr = np.stack([baseline_thresholds(PI, P, r, 1, 1, 1) for r in (0.30, 0.32)])
    z = np.zeros(2, np.int64)
    diffs = {"crn": [], "independent": []}
    t_crn = t_ind = 0.0
    for rep in range(reps):
        k0, k1 = split_seed(rep)
        t = time.perf_counter()
        c = kb.class_counts_cells(thr, z, z, 0, n, k0, k1, np.uint64(kb.STREAM), 4 * NC)
        t_crn += time.perf_counter() - t
        t = time.perf_counter()
        ci = np.stack([kb.class_counts(thr[i], 0, 0, 0, n, k0, k1, np.uint64(11 + i), 4 * NC)
                       for i in range(2)])
        t_ind += time.perf_counter() - t
        for key, cc in (("crn", c), ("independent", ci)):
            a = [evaluate(cc[i], Jc, Jd, 1, 1, 0, 0)["amp"][0][1] for i in range(2)]
            diffs[key].append(a[0] - a[1])
    out = {}
    for key, tt in (("crn", t_crn), ("independent", t_ind)):
        sd = float(np.std(diffs[key], ddof=1))
        out[f"diff_sd_{key}"] = sd
        out[f"diff_time_{key}"] = tt / reps * (sd / target) ** 2
    return out


def grid_scaling(quick):
    rows = []
    for cells in ([1, 100, 1000] if quick else [1, 10, 100, 1000, 10_000]):
        side = max(1, int(round(cells ** 0.5)))
        code = (
            "import time, tempfile\n"
            "from antiamp.sweeps.engine import run_sweep\n"
            "tmp = tempfile.mkdtemp()\n"
            "run_sweep({'sweep': {'axes': {'model': {'rho': [0.5]}}, 'plot': False},"
            " 'run': {'n_instances': 1000}}, tmp + '/w', progress=False)\n"
            f"axes = {{'model': {{'rho': {{'linspace': [0, 1, {side}]}}}},"
            f" 'judge': {{'b': {{'linspace': [0, 1, {max(1, cells // side)}]}}}}}}\n"
            "t = time.perf_counter()\n"
            "ds = run_sweep({'sweep': {'axes': axes, 'plot': False}, 'run': {'n_instances': 1000000}},"
            " tmp, progress=False)\n"
            "res = {'cells': int(ds.sizes['rho'] * ds.sizes['b']), 'seconds': time.perf_counter() - t}\n"
        )
        rows.append(_child_peak(code))
    return {"rows": rows, "blocks": block_writes()}


def block_writes(cells: int = 50, n: int = 10_000, repeats: int = 3) -> dict:
    """A sweep of small cells in one-cell blocks (the per-block overhead): chunks written
    straight to their files against the same sweep through zarr's array writes (the
    chunk-file writer switched off), alternating, medians; the two stores compared.
    50 blocks: the ratio is per block, and 200 made this a tenth of the whole run."""
    code = (
        "import time, tempfile, pathlib, statistics\n"
        "import numpy as np, xarray as xr\n"
        "from antiamp.sweeps import chunkfiles\n"
        "from antiamp.sweeps.engine import run_sweep\n"
        "tmp = pathlib.Path(tempfile.mkdtemp())\n"
        f"cfg = {{'sweep': {{'axes': {{'model': {{'rho': {{'linspace': [0, 1, {cells}]}}}}}},"
        f" 'plot': False, 'cells_per_block': 1}}, 'run': {{'n_instances': {n}}}}}\n"
        "of = chunkfiles.ChunkFile.__dict__['of']\n"
        "times = {'files': [], 'zarr': []}\n"
        f"for i in range({repeats} + 1):\n"
        "    for how in ('files', 'zarr'):\n"
        "        chunkfiles.ChunkFile.of = of if how == 'files' else classmethod(lambda c, a: None)\n"
        "        t = time.perf_counter()\n"
        "        run_sweep(cfg, tmp / f'{how}{i}', progress=False, log=lambda *a: None)\n"
        "        if i:  # the first round warms up\n"
        "            times[how].append(time.perf_counter() - t)\n"
        "a, b = (xr.open_zarr(tmp / f'{h}1' / 'sweep.zarr').load() for h in ('files', 'zarr'))\n"
        "same = all(np.array_equal(a[v].values, b[v].values, equal_nan=True) for v in a.data_vars)\n"
        "res = {k: statistics.median(v) for k, v in times.items()}\n"
        f"res.update(same=same, cells={cells}, n={n})\n"
    )
    return _child_peak(code)


_DASK_BASE = (
    "import time, tempfile, numpy as np\n"
    "from antiamp.sweeps.engine import run_sweep\n"
    "axes = {'model': {'rho': {'linspace': [0, 1, 40]}}, 'judge': {'b': {'linspace': [0, 1, 25]}}}\n"
    "base = {'sweep': {'axes': axes, 'plot': False, 'cells_per_block': 25},"
    " 'run': {'n_instances': 1_000_000}}\n"
    "tmp = tempfile.mkdtemp()\n"
)


def dask_compare():
    """A 1,000-cell sweep: the default local executor against a two-worker LocalCluster.

    Each in a fresh process; peak RSS of the driver and, for the cluster, of each
    worker (their sum is the sweep's footprint).  The stores must be bit-identical.
    """
    local = _child_peak(
        _DASK_BASE
        + "run_sweep({**base, 'run': {'n_instances': 1000}}, tmp + '/warm', progress=False)\n"
        "t = time.perf_counter()\n"
        "a = run_sweep(base, tmp + '/local', progress=False)\n"
        "np.save(tmp + '/local.npy', a.class_counts.values)\n"
        "res = {'seconds': time.perf_counter() - t, 'counts': tmp + '/local.npy'}\n")
    cluster = _child_peak(
        _DASK_BASE
        + "from distributed import Client, LocalCluster\n"
        "def worker_peak():\n"
        "    import resource\n"
        "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host='127.0.0.1',"
        " dashboard_address=None) as cl, Client(cl) as client:\n"
        "    c2 = {**base, 'executor': {'threads_per_task': 1}}\n"
        "    run_sweep({**c2, 'run': {'n_instances': 1000}}, tmp + '/warm2', client=client,"
        " progress=False)\n"
        "    t = time.perf_counter()\n"
        "    b = run_sweep(c2, tmp + '/cluster', client=client, progress=False)\n"
        "    dt = time.perf_counter() - t\n"
        "    workers = sorted(client.run(worker_peak).values())\n"
        "np.save(tmp + '/cluster.npy', b.class_counts.values)\n"
        "res = {'seconds': dt, 'workers_mb': workers, 'counts': tmp + '/cluster.npy'}\n")
    assert np.array_equal(np.load(local["counts"]), np.load(cluster["counts"]))
    return {"local": local["seconds"], "cluster": cluster["seconds"], "cells": 1000,
            "local_peak_mb": local["peak_mb"], "driver_peak_mb": cluster["peak_mb"],
            "workers_mb": cluster["workers_mb"]}


def equilibrium_compare():
    """The 100 x 100 grid beside pygambit on the same grid, the reference what a user runs
    for a cell: build the debate game, ``enummixed_solve`` it (bench_equilibrium.py has
    the paired repeats and pygambit's default exact arithmetic)."""
    from bench_equilibrium import grid, grid_config, ours
    from gambit_games import gambit_debate_equilibria, same_sets

    p_c, rho, c_e, J_c, J_d, n1, n2 = grid(10_000)
    ours(p_c, rho, c_e, J_c, J_d)
    t_ours = median_time(lambda: ours(p_c, rho, c_e, J_c, J_d), 5)
    dP, dA, dN, cP, cN, _ = ours(p_c, rho, c_e, J_c, J_d)
    t, c = time.perf_counter(), time.process_time()
    gam = [gambit_debate_equilibria(p_c[i], rho[i], c_e[i], J_d[i], rational=False)
           for i in range(len(c_e))]
    t_g, c_g = time.perf_counter() - t, time.process_time() - c
    agree = sum(same_sets([(dP[i, e], dA[i, e]) for e in range(dN[i])], gam[i])
                for i in range(len(c_e)))
    # End to end: the public solve on the same grid (configs, outcomes, Dataset).
    cfg = grid_config(n1, n2)
    sim.solve(cfg)
    t_e2e = median_time(lambda: sim.solve(cfg), 5)
    cs = []
    for _ in range(5):
        c = time.process_time()
        sim.solve(cfg)
        cs.append(time.process_time() - c)
    return {"ours": t_ours, "pygambit": t_g, "pygambit_cpu": c_g, "cells": len(c_e),
            "agree": agree, "e2e": t_e2e, "e2e_cpu": float(np.median(cs)),
            "equilibria": sum(len(g) for g in gam), "load": os.getloadavg()}


def _load(res, name: str) -> str:
    """The machine's load while a section ran: its absolute figures are this machine's
    at that load; the ratios (same run) are what compare."""
    before, after = res.get("load", {}).get(name, (float("nan"),) * 2)
    return (f"Load average (1 min) {before:.2f} before, {after:.2f} after, on "
            f"{os.cpu_count()} cores.")


def verdict(ok) -> str:
    return "met" if ok else "**missed**"


def equilibrium_report(eq) -> list:
    """The Equilibria section's lines, ratios first."""
    return [
        "## Equilibria", "",
        f"The 100 x 100 grid of debate games ({eq['cells']:,} cells, c_e x b, tie-break "
        f"judge), pygambit {_gbt_version()} on the same grid as the reference, what a user "
        "runs for a cell: the debate game built (written as .efg text, read by "
        "`pygambit.read_efg`) and `pygambit.nash.enummixed_solve(game, rational=False)`; "
        f"the same {eq['equilibria']:,} debate equilibria, identical sets on "
        f"{eq['agree']:,} of {eq['cells']:,} cells. `python benchmarks/bench_equilibrium.py` "
        "adds paired repeats and pygambit's default `rational=True`.", "",
        "| antiamp | pygambit / antiamp, wall | CPU | antiamp (s) | pygambit (s) |",
        "|---|---:|---:|---:|---:|",
        f"| compiled enumeration + certificates | {eq['pygambit'] / eq['ours']:,.0f}x "
        f"(target >= 1,000x, {verdict(eq['pygambit'] / eq['ours'] >= 1000)}) | | "
        f"{eq['ours']:.4f} | {eq['pygambit']:.2f} |",
        f"| `antiamp.solve` end to end | {eq['pygambit'] / eq['e2e']:,.0f}x "
        f"(target >= 500x, {verdict(eq['pygambit'] / eq['e2e'] >= 500)}) | "
        f"{eq['pygambit_cpu'] / eq['e2e_cpu']:,.0f}x | {eq['e2e']:.4f} wall, "
        f"{eq['e2e_cpu']:.4f} CPU | {eq['pygambit']:.2f} wall, {eq['pygambit_cpu']:.2f} CPU |",
        "",
        f"Medians of 5 calls; load average (1 min) {eq['load'][0]:.2f} on {os.cpu_count()} "
        "cores.", ""]


def _gbt_version() -> str:
    from importlib.metadata import version

    return version("pygambit")


def estimator_compare():
    """antiamp-estimate's stratified bootstrap of Amp against a plain pandas loop."""
    import pandas as pd
    from importlib.resources import files

    from antiamp.estimate import EstimateOptions, estimate, load_log

    df = load_log(files("antiamp") / "data" / "sample_log.csv")
    t = time.perf_counter()
    ds = estimate(df, EstimateOptions(n_resamples=2000))
    t_ours = time.perf_counter() - t
    rng = np.random.default_rng(0)
    d = df[(df.protocol == "debate") & df.omega.notna()]
    t = time.perf_counter()
    stats_ = []
    for _ in range(2000):  # the plain path: resample rows within strata, recompute
        res = pd.concat([g.sample(len(g), replace=True, random_state=rng)
                         for _, g in d.groupby("stratum")])
        w = res[res.a != res.omega]
        stats_.append((w.y == w.a).mean())
    lo, hi = np.percentile(stats_, [2.5, 97.5])
    t_plain = time.perf_counter() - t
    r = ds.sel(protocol="debate", stratum="all")
    assert abs(lo - float(r.amp_lo)) < 0.02 and abs(hi - float(r.amp_hi)) < 0.02
    return {"ours_all_metrics": t_ours, "plain_amp_only": t_plain}


def figures(res, outdir: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir.mkdir(parents=True, exist_ok=True)
    fig, axs = plt.subplots(1, 3, figsize=(14, 3.8))
    sc = res["scaling_instances"]
    ns = [r["n"] for r in sc]
    axs[0].loglog(ns, [r["n"] / r["seconds"] for r in sc], "o-")
    axs[0].set_xlabel("instances per call")
    axs[0].set_ylabel("instances / s (all cores)")
    axs[0].set_title("kernel throughput against work")
    axs[1].semilogx(ns, [r["peak_mb"] for r in sc], "o-")
    axs[1].set_ylim(0, max(r["peak_mb"] for r in sc) * 1.3)
    axs[1].set_xlabel("instances per call")
    axs[1].set_ylabel("peak RSS (MB)")
    axs[1].set_title("memory against instances")
    gs = res["grid_scaling"]
    gs = gs["rows"] if isinstance(gs, dict) else gs
    axs[2].loglog([r["cells"] for r in gs], [r["seconds"] for r in gs], "o-", label="time (s)")
    ax2 = axs[2].twinx()
    ax2.semilogx([r["cells"] for r in gs], [r["peak_mb"] for r in gs], "s--", color="grey",
                 label="peak RSS (MB)")
    ax2.set_ylim(0, max(r["peak_mb"] for r in gs) * 1.3)
    axs[2].set_xlabel("grid cells (10^6 instances each)")
    axs[2].set_ylabel("seconds")
    ax2.set_ylabel("peak RSS (MB)")
    axs[2].set_title("sweeps against grid size")
    h1, l1 = axs[2].get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    axs[2].legend(h1 + h2, l1 + l2, fontsize=7, frameon=False, loc="upper left")
    fig.tight_layout()
    fig.savefig(outdir / "bench_scaling.png", dpi=110)
    plt.close(fig)
    pr = res["precision"]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    labels = ["NumPy naive", "NumPy, class counts", "antiamp, 1 core", f"antiamp, {NC} cores"]
    vals = [pr["numpy_naive"], pr["numpy_rb"], pr["ours_rb_1"], pr[f"ours_rb_{NC}"]]
    ax.barh(labels, vals, color=["#999999", "#bbbbbb", "#66c2a5", "#1b9e77"])
    ax.set_xscale("log")
    ax.set_xlabel("seconds to a standard error of 1e-4 on debate Amp")
    fig.tight_layout()
    fig.savefig(outdir / "bench_precision.png", dpi=110)
    plt.close(fig)


def write_md(res, path: Path):
    t = res["throughput"]
    m = 1e6
    k1, kn = t["kernel_1"], t[f"kernel_{NC}"]
    pr, eq, dk, es = res["precision"], res["equilibrium"], res["dask"], res["estimator"]
    L = [
        "# antiamp benchmarks",
        "",
        f"Written by `python benchmarks/run_all.py` on {res['machine']} ({NC} cores), "
        f"numba {numba.__version__}, NumPy {np.__version__}, Python {platform.python_version()}, "
        f"{res['date']}. Medians over repeats; every ratio compares two figures from this run.",
        "",
    ]
    secs = res.get("seconds", {})
    if secs:  # what the whole run took, and its longest sections
        top = sorted(secs.items(), key=lambda kv: -kv[1])[:5]
        L += [f"The run took {sum(secs.values()) / 60:.1f} min (load average (1 min) "
              f"{min(v[0] for v in res['load'].values()):.2f}-"
              f"{max(max(v) for v in res['load'].values()):.2f}); its longest sections: "
              + ", ".join(f"{k} {v:.0f} s" for k, v in top) + ".", ""]
    L += [
        "## Kernel throughput (defaults: pi = 0.5, p = 0.8, rho = 0.3, b = 0.5)",
        "",
        "Ratio: time per instance / the antiamp kernel's on 1 core (same run).",
        "",
        "| implementation | time per instance / antiamp 1 core | instances/s |",
        "|---|---:|---:|",
    ]
    for name, v in (("antiamp kernel, 1 core", k1), (f"antiamp kernel, {NC} cores", kn),
                    ("bare Philox4x32-10 loop, 1 core", t["bare_1"]),
                    (f"bare Philox4x32-10 loop, {NC} cores", t[f"bare_{NC}"]),
                    ("NumPy, same class-count estimator", t["numpy_counts"]),
                    ("NumPy, naive (drawn labels)", t["numpy_naive"]),
                    ("Mesa 3.3 agent-based model", t["mesa"]),
                    (f"antiamp correlated-signals kernel, {NC} cores", t["signals"]),
                    (f"antiamp portfolio kernel (B = 4), {NC} cores", t["portfolio"]),
                    (f"antiamp rhetoric kernel, {NC} cores", t["messages"]),
                    (f"antiamp multi-option kernel (K = 4, best of 2), {NC} cores",
                     t["options"])):
        L.append(f"| {name} | {k1 / v:,.2f} | {v / m:,.2f} M |")
    L += ["", f"Panel kernel (juries of 9 correlated, heterogeneous judges, three table "
          f"entries per panel): {t['panel'] / m:,.2f} M panels/s. {_load(res, 'throughput')}",
          ""]
    L += ["", "Timed by pytest-benchmark (`benchmarks/test_throughput.py`, run by this script; "
          "median of the rounds, interquartile range beside it):", "",
          "| benchmark | time per instance / `test_kernel[1]` | instances/call | median | IQR "
          "| rounds |", "|---|---:|---:|---:|---:|---:|"]
    per1 = next(r["median"] / r["instances"] for r in t["rows"] if r["name"] == "test_kernel[1]")
    for row in t["rows"]:
        L.append(f"| `{row['name']}` | {row['median'] / row['instances'] / per1:,.2f} | "
                 f"{row['instances']:,} | {row['median'] * 1e3:,.1f} ms | "
                 f"{row['iqr'] * 1e3:,.1f} ms | {row['rounds']} |")
    L += ["", "Peak memory of one call of 10^8 instances, each in a fresh process:", "",
          "| cores | time / 1 core's | time | peak RSS |", "|---:|---:|---:|---:|"]
    t1 = res["cores_memory"][0]["seconds"]
    for row in res["cores_memory"]:
        L.append(f"| {row['threads']} | {row['seconds'] / t1:.2f} | {row['seconds']:.3f} s | "
                 f"{row['peak_mb']:.0f} MB |")
    L += ["", _load(res, "cores_memory")]

    L += ["", "| target | measured | |", "|---|---:|---|",
          f"| >= 120 M instances/s per core | {k1 / m:,.0f} M | {verdict(k1 >= 120e6)} |",
          f"| >= 7x the NumPy version | {k1 / t['numpy_counts']:.1f}x | "
          f"{verdict(k1 / t['numpy_counts'] >= 7)} |",
          f"| >= 2,000x the Mesa model | {k1 / t['mesa']:,.0f}x | "
          f"{verdict(k1 / t['mesa'] >= 2000)} |",
          f"| within 1.5x of the bare random-number loop | bare / kernel = "
          f"{t['bare_1'] / k1:.2f} | {verdict(t['bare_1'] / k1 <= 1.5)} |",
          f"| 1 -> {NC} cores | {kn / k1:.2f}x | |", ""]
    if k1 / t["mesa"] < 2000:
        L += [f"The Mesa target is missed by a factor {2000 / (k1 / t['mesa']):.1f}. The Mesa "
              "model here is as lean as Mesa allows (three agents stepped through an AgentSet, "
              "no space, no data collector), so its cost is Python's own: about "
              f"{1e6 / t['mesa']:.1f} us per instance of interpreted calls and Mersenne-Twister "
              f"draws, against {1e9 / k1:.2f} ns for the compiled kernel, whose own bound is "
              "the Philox generator (the bare loop runs at "
              f"{t['bare_1'] / m:,.0f} M/s).", ""]
    L += ["## Scaling with instances (one call, all cores; each n in a fresh process)", "",
          "| instances | rate / the largest call's | time per call | instances/s | peak RSS |",
          "|---:|---:|---:|---:|---:|"]
    top = res["scaling_instances"][-1]
    for r in res["scaling_instances"]:
        rate = r["n"] / r["seconds"]
        L.append(f"| {r['n']:,} | {rate / (top['n'] / top['seconds']):.2f} | "
                 f"{r['seconds'] * 1e3:,.3f} ms | {rate / m:,.1f} M | {r['peak_mb']:.0f} MB |")
    L += ["", "Peak memory is flat in the number of instances (the kernel keeps 32 counters "
          f"per thread); per-call overhead dominates below about 10^5 instances. "
          f"{_load(res, 'scaling_instances')}", "",
          "## Sweeps: grid cells (10^6 instances per cell, local executor)", "",
          "| cells | time per cell / the 1-cell sweep's | time | peak RSS |",
          "|---:|---:|---:|---:|"]
    gs = res["grid_scaling"]
    rows = gs["rows"] if isinstance(gs, dict) else gs  # results.json of earlier runs: rows only
    one = rows[0]["seconds"] / rows[0]["cells"]
    for r in rows:
        L.append(f"| {r['cells']:,} | {r['seconds'] / r['cells'] / one:.4f} | "
                 f"{r['seconds']:.2f} s | {r['peak_mb']:.0f} MB |")
    if isinstance(gs, dict):
        bw = gs["blocks"]
        L += ["", f"Per-block overhead: {bw['cells']} cells of {bw['n']:,} instances in one-cell "
              f"blocks (each block one chunk of every array). Chunks written straight to their "
              f"files {bw['files']:.2f} s, through zarr's array writes {bw['zarr']:.2f} s: "
              f"**{bw['zarr'] / bw['files']:.1f}x** (({bw['zarr'] - bw['files']:.2f} s) / "
              f"{bw['cells']} blocks = {(bw['zarr'] - bw['files']) / bw['cells'] * 1e3:.0f} ms a "
              f"block saved; stores identical: {'yes' if bw['same'] else 'NO'}; medians of 3, "
              f"alternating)."]
    L += ["", _load(res, "grid_scaling")]
    L += ["", f"dask: the same {dk['cells']:,}-cell sweep takes {dk['local']:.2f} s on the default "
          f"local executor (one in-process worker, compiled threads on every core; peak RSS "
          f"{dk['local_peak_mb']:.0f} MB) and {dk['cluster']:.2f} s on a two-worker LocalCluster "
          f"of processes (one thread each; driver {dk['driver_peak_mb']:.0f} MB, workers "
          + ", ".join(f"{w:.0f}" for w in dk["workers_mb"]) + " MB), with bit-identical stores "
          f"(cluster / local: {dk['cluster'] / dk['local']:.2f}). {_load(res, 'dask')}",
          "",
          "## Precision per second: time to a standard error of 1e-4 on debate Amp", "",
          "| method | naive NumPy / this | seconds |", "|---|---:|---:|"]
    for name, key in (("NumPy, naive Monte Carlo (drawn labels)", "numpy_naive"),
                      ("NumPy, Rao-Blackwellised (class counts)", "numpy_rb"),
                      ("antiamp, Rao-Blackwellised, 1 core", "ours_rb_1"),
                      (f"antiamp, Rao-Blackwellised, {NC} cores", f"ours_rb_{NC}")):
        L.append(f"| {name} | {pr['numpy_naive'] / pr[key]:,.1f} | {pr[key]:.3f} |")
    L += ["", f"Target >= 20x shorter than naive NumPy: {pr['numpy_naive'] / pr['ours_rb_1']:.0f}x "
          f"on 1 core, {pr['numpy_naive'] / pr[f'ours_rb_{NC}']:.0f}x on {NC} "
          f"({verdict(pr['numpy_naive'] / pr['ours_rb_1'] >= 20)}).", "",
          "Common random numbers, for a comparative static: debate Amp at rho = 0.30 minus at "
          f"rho = 0.32 has a replicate standard deviation of {pr['diff_sd_crn']:.2e} with common "
          f"random numbers and {pr['diff_sd_independent']:.2e} with independent streams "
          "(10^6 instances per cell, 30 seeds), so a standard error of 1e-4 on the difference "
          f"takes {pr['diff_time_crn']:.3f} s against {pr['diff_time_independent']:.3f} s "
          f"({pr['diff_time_independent'] / pr['diff_time_crn']:.0f}x). {_load(res, 'precision')}",
          "",
          *equilibrium_report(eq),
          "## Estimators", "",
          f"The shipped sample log (6,000 rows, two strata): `estimate` computes every metric "
          f"with 2,000 stratified bootstrap resamples (multinomial counts of the row codes) "
          f"and three clustered "
          f"logistic fits (statsmodels) in {es['ours_all_metrics']:.2f} s; a plain pandas loop "
          f"resampling rows within strata takes {es['plain_amp_only']:.2f} s for the debate Amp "
          f"interval alone ({es['plain_amp_only'] / es['ours_all_metrics']:.0f}x), with the same "
          f"interval to 0.02. {_load(res, 'estimator')}", "",
          "## Extensions I: correlated signals and judge attention", "",
          "Kernel calls per equilibrium computation: the class distribution of every cell of a "
          "grid comes from one call of the compiled kernel on common random numbers (plus one "
          "for the eta = 0 twins that give the value of diversity); every payoff, best response "
          "and certificate of the fixed point is then a function of those counts.", ""]
    L += bench_extensions.report(res["extensions"])
    L += ["", "## The generic engine: every model's grid", ""]
    L += bench_engine.report(res["engine"]) + ["", _load(res, "engine")]
    L += [""] + bench_sweep.per_cell_report()  # a saved record: not rerun here
    L += ["", "## Scale: big grids, store verification, big logs", ""]
    L += bench_scale.report(res["scale"]) + [_load(res, "scale")]
    L += ["", "## Start-up: help, refused input, a small run, a small sweep", ""]
    L += bench_startup.report(res["startup"])
    L += [""] + bench_loop.report(res["loop"]) + [_load(res, "loop"), ""]
    for key, bench in (("confidence", bench_confidence), ("redeliberation", bench_redeliberation),
                       ("colmad", bench_colmad), ("mediation", bench_mediation),
                       ("panel", bench_panel), ("floors", bench_floors), ("rounds", bench_rounds),
                       ("crn", bench_crn), ("launch", bench_launch), ("threads", bench_threads)):
        if key in res:  # sections with their own headings
            L += [""] + bench.report(res[key])
            if key in ("redeliberation", "colmad", "mediation"):  # no load line of their own
                L += [_load(res, key), ""]
    L += [""] + bench_gpu.report()
    L += ["",
          "![scaling](docs/figures/bench_scaling.png)", "",
          "![precision](docs/figures/bench_precision.png)", ""]
    text = "\n".join(L)
    if path.exists():  # sections other commands write (the GPU reports) carried over
        text, kept = keep_sections(text, path.read_text())
        for h in kept:
            print(f"kept from {path.name} as it was: {h.lstrip('# ')}")
    path.write_text(text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    ap.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    ap.add_argument("--resume-from", metavar="SECTION",
                    help="take the sections before SECTION from benchmarks/results.json "
                         "(written after every section) and run the rest")
    args = ap.parse_args(argv)
    n = 20_000_000 if args.quick else 200_000_000
    reps = 2 if args.quick else 3
    res = {"machine": platform.processor() or platform.machine(),
           "date": time.strftime("%Y-%m-%d")}
    steps = [("throughput", lambda: throughput(n, reps)),
             ("cores_memory", lambda: cores_memory(n)),
             ("scaling_instances", lambda: scaling_instances(args.quick)),
             ("precision", lambda: precision(1e-4, reps)),
             ("grid_scaling", lambda: grid_scaling(args.quick)),
             ("dask", dask_compare), ("equilibrium", equilibrium_compare),
             ("estimator", estimator_compare),
             ("extensions", lambda: bench_extensions.run(args.quick)),
             ("engine", lambda: bench_engine.run(args.quick)),
             ("scale", lambda: bench_scale.run(args.quick)),
             ("startup", lambda: bench_startup.run(args.quick)),
             ("loop", lambda: bench_loop.run(args.quick)),
             ("confidence", lambda: bench_confidence.run(args.quick)),
             ("redeliberation", lambda: bench_redeliberation.run(args.quick)),
             ("colmad", lambda: bench_colmad.run(args.quick)),
             ("mediation", lambda: bench_mediation.run(args.quick)),
             ("panel", lambda: bench_panel.run(args.quick)),
             ("floors", lambda: bench_floors.run(args.quick)),
             ("rounds", lambda: bench_rounds.run(args.quick)),
             ("crn", lambda: bench_crn.run(args.quick)),
             ("threads", lambda: bench_threads.run(args.quick)),
             ("launch", lambda: bench_launch.run(args.quick))]
    res["load"] = {}
    names = [name for name, _ in steps]
    if args.resume_from:  # the sections before it from the last run's results.json
        if args.resume_from not in names:
            ap.error(f"--resume-from must be one of {', '.join(names)}")
        done = json.loads((HERE / "results.json").read_text())
        keep = names[:names.index(args.resume_from)]
        missing = [k for k in keep if k not in done]
        if missing:
            ap.error(f"results.json lacks {', '.join(missing)}: run without --resume-from")
        res.update({k: done[k] for k in keep})
        res["load"].update({k: v for k, v in done.get("load", {}).items() if k in keep})
        res["seconds"] = {k: v for k, v in done.get("seconds", {}).items() if k in keep}
        res["date"] = done.get("date", res["date"])
        steps = steps[len(keep):]
    res.setdefault("seconds", {})
    for name, fn in steps:
        t = time.perf_counter()
        before = os.getloadavg()[0]
        res[name] = fn()
        res["load"][name] = [before, os.getloadavg()[0]]
        res["seconds"][name] = time.perf_counter() - t
        print(f"{name}: {res['seconds'][name]:.1f} s", flush=True)
        # after every section: a crash later loses nothing (--resume-from goes on)
        (HERE / "results.json").write_text(json.dumps(res, indent=2, default=float))
    figures(res, ROOT / "docs" / "figures")
    write_md(res, Path(args.out))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
