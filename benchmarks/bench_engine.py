"""The generic engine: overhead per block, kernel-input sharing, a 10^4-cell
equilibrium grid on two local workers.

    python benchmarks/bench_engine.py [--quick]

1. Overhead per block: a block of the default size run through the engine (cells
   rebuilt from the plain config, validated, ``run_cells``, the block written to
   the partial run, then the store assembled and written), against calling the
   model's ``run_cells`` directly on prebuilt cells, in the same run.
2. The baseline's named sweeps with and without sharing one kernel pass between
   cells whose kernel inputs are identical (same bits either way; checked).
3. A 10^4-cell signals equilibrium grid (eta x phi x c_e, exact payoffs): in this
   process and on two local worker processes.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np


def _med(f, k=3):
    ts = []
    for _ in range(k):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


MODELS = {
    "signals": {"model": {"name": "signals", "c_e": 0.4}, "judge": {"b": 0.7},
                "signals": {"phi": 0.3}, "equilibrium": {"payoffs": "simulated"},
                "run": {"n_instances": 1_000_000},
                "sweep": {"axes": {"signals": {"eta": [round(0.05 * k, 3) for k in range(8)]},
                                   "model": {"p": [0.6, 0.7, 0.8, 0.9]}}}},
    "equilibrium": {"model": {"name": "equilibrium", "p": 0.6},
                    "sweep": {"axes": {"model": {"c_e": list(np.linspace(0, 1, 32).round(4))},
                                       "judge": {"b": list(np.linspace(0, 1, 32).round(4))}}}},
    "portfolio": {"model": {"name": "portfolio"}, "portfolio": {"c_item": 0.02, "tau": 2},
                  "sweep": {"axes": {"portfolio": {"budget": list(range(2, 10))},
                                     "model": {"p": [0.6, 0.7, 0.8, 0.9]}}}},
}


def overhead(quick: bool) -> list:
    from antiamp.sweeps.blocks import plan_grid, run_grid_store

    rows = []
    for name, cfg in MODELS.items():
        plan = plan_grid(cfg)
        k = plan.cells_per_block
        blocks = plan.blocks()
        cells = [plan.grid.cell(i) for i in range(plan.n_cells)]
        model = plan.model
        model.run_cells(plan.base, cells[:1])  # compile outside the timing

        def direct():
            for a, b in blocks:
                model.run_cells(plan.base, cells[a:b])

        def engine():
            with tempfile.TemporaryDirectory() as tmp:
                run_grid_store(cfg, Path(tmp) / "s.zarr", progress=False, log=lambda *a: None)

        reps = 1 if quick else 3
        t_direct, t_engine = _med(direct, reps), _med(engine, reps)
        rows.append((name, plan.n_cells, k, len(blocks), t_direct, t_engine))
    return rows


def sharing(quick: bool) -> list:
    """Named baseline sweeps: one kernel pass per distinct kernel input vs per cell."""
    from antiamp.sweeps import engine as eng
    from antiamp.sweeps.spec import make_plan

    rows = []
    for name in ("amp_gap", "jury", "logit_gap", "acc_tradeoff", "welfare_region"):
        from hydra import compose, initialize_config_module
        from omegaconf import OmegaConf

        with initialize_config_module(config_module="antiamp.conf", version_base="1.3"):
            c = compose(config_name="sweep_config", overrides=[f"sweep={name}"])
        cfg = OmegaConf.to_container(c, resolve=True)
        cfg["run"]["n_instances"] = 200_000 if quick else 1_000_000
        plan = make_plan(cfg)
        n, seed = plan.base.run.n_instances, plan.base.run.seed
        args = (plan.thr, plan.fixed, plan.a_fixed, n, seed, plan.streams, True, 0)
        eng.compute_block(plan.thr[:1], plan.fixed[:1], plan.a_fixed[:1], 1000, seed,
                          plan.streams[:1], True, 0)  # compile
        t0 = time.perf_counter()
        all_cells = eng._compute_unique(*args)
        t_all = time.perf_counter() - t0
        t0 = time.perf_counter()
        shared = eng.compute_block(*args)
        t_shared = time.perf_counter() - t0
        assert np.array_equal(all_cells, shared)
        distinct = len(np.unique(np.concatenate(
            [plan.thr, plan.fixed[:, None].astype(np.uint64),
             plan.a_fixed[:, None].astype(np.uint64)], axis=1), axis=0))
        rows.append((name, plan.n_cells, distinct, t_all, t_shared))
    return rows


def big_grid(quick: bool) -> list:
    from distributed import Client, LocalCluster

    from antiamp.sweeps.blocks import run_grid, run_grid_store

    side = (6, 5, 5) if quick else (25, 20, 20)
    cfg = {"model": {"name": "signals", "c_e": 0.4}, "judge": {"b": 0.7},
           "signals": {"eta_mode": "fraction"},
           "sweep": {"axes": {"signals": {"eta": list(np.linspace(-1, 1, side[0]).round(4)),
                                          "phi": list(np.linspace(0.05, 1, side[1]).round(4))},
                              "model": {"c_e": list(np.linspace(0, 0.9, side[2]).round(4))}},
                     "cells_per_block": 250}}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        local = run_grid_store(cfg, Path(tmp) / "local.zarr", progress=False,
                               log=lambda *a: None).load()
        rows.append(("this process", time.perf_counter() - t))
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=":0") as lc, Client(lc) as cl:
            cl.run(lambda: run_grid({**cfg, "sweep": {**cfg["sweep"], "axes": {
                "signals": {"eta": [0.0]}}}}, progress=False))  # warm the workers
            t = time.perf_counter()
            dist = run_grid_store(cfg, Path(tmp) / "dist.zarr", client=cl, progress=False,
                                  log=lambda *a: None).load()
            rows.append(("two local worker processes", time.perf_counter() - t))
        same = all(np.array_equal(local[v].values, dist[v].values, equal_nan=True)
                   for v in local.data_vars if local[v].dtype.kind == "f")
    return rows, int(np.prod(side)), same


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one repetition")
    args = ap.parse_args(argv)
    print("## Engine overhead per block (median, same run)\n")
    print("| model | cells | cells/block | blocks | run_cells direct (s) | engine, store "
          "written (s) | overhead |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, n, k, b, td, te in overhead(args.quick):
        print(f"| {name} | {n} | {k} | {b} | {td:.3f} | {te:.3f} | {100 * (te / td - 1):+.1f}% |")
    print("\n## Kernel-input sharing in the baseline's named sweeps\n")
    print("| sweep | cells | distinct kernel inputs | one pass per cell (s) | shared (s) | "
          "speed-up |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, n, d, ta, ts in sharing(args.quick):
        print(f"| {name} | {n} | {d} | {ta:.2f} | {ts:.2f} | {ta / ts:.1f}x |")
    rows, cells, same = big_grid(args.quick)
    print(f"\n## A {cells:,}-cell signals equilibrium grid (exact payoffs, 250 cells per "
          "block)\n")
    print("| where | seconds | ms per cell |")
    print("|---|---:|---:|")
    for where, t in rows:
        print(f"| {where} | {t:.1f} | {1000 * t / cells:.2f} |")
    print(f"\nspeed-up on two workers: {rows[0][1] / rows[1][1]:.2f}x; stores identical: {same}")


if __name__ == "__main__":
    main()
