"""The generic engine: overhead per block, kernel-input sharing, a 10^4-cell
equilibrium grid on two local workers.

    python benchmarks/bench_engine.py [--quick]

1. Overhead of the engine: a grid of blocks of the default size run through the
   engine into a store (cells rebuilt from the validated base config, ``run_cells``,
   each block written into the store in place with its cells' checksums, the store
   laid out and finished), against calling the model's ``run_cells`` directly on
   prebuilt cells, in the same run.
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
    # one block of the model's default size (4,096 cells)
    "equilibrium": {"model": {"name": "equilibrium", "p": 0.6},
                    "sweep": {"axes": {"model": {"c_e": list(np.linspace(0, 1, 64).round(4))},
                                       "judge": {"b": list(np.linspace(0, 1, 64).round(4))}}}},
    # sixteen blocks: what a block costs beyond a run's fixed cost
    "equilibrium x16": {"model": {"name": "equilibrium", "p": 0.6},
                        "sweep": {"axes": {"model": {"c_e": list(np.linspace(0, 1, 64).round(4))},
                                           "judge": {"b": list(np.linspace(0, 1, 1024).round(4))}}}},
    "portfolio": {"model": {"name": "portfolio"}, "portfolio": {"c_item": 0.02, "tau": 2},
                  "sweep": {"axes": {"portfolio": {"budget": list(range(2, 10))},
                                     "model": {"p": [0.6, 0.7, 0.8, 0.9]}}}},
}


def overhead(quick: bool) -> list:
    """The engine's run of a grid into a store (cells rebuilt from the base config and
    the sweep, ``run_cells``, each block written into the store in place, the store
    laid out and finished) against ``run_cells`` on prebuilt cells; and validating
    every cell, per run."""
    import shutil

    from antiamp.sweeps.blocks import plan_grid, run_grid_store

    rows = []
    for name, cfg in MODELS.items():
        plan = plan_grid(cfg)
        blocks = plan.blocks()
        cells = [plan.grid.cell(i) for i in range(plan.n_cells)]
        model = plan.model
        model.run_cells(plan.base, cells[:1])  # compile outside the timing
        reps = 1 if quick else 5

        def direct():
            for a, b in blocks:
                model.run_cells(plan.base, cells[a:b])

        with tempfile.TemporaryDirectory() as tmp:
            store = Path(tmp) / "s.zarr"

            def engine():
                shutil.rmtree(store, ignore_errors=True)
                run_grid_store(cfg, store, plan=plan, progress=False, log=lambda *a: None)

            t_direct, t_engine = _med(direct, reps), _med(engine, reps)
            from antiamp.sweeps.spec import _plan_grid

            t_plan = _med(lambda: _plan_grid(cfg), reps)  # uncached
        rows.append((name, plan.n_cells, plan.cells_per_block, len(blocks), t_direct, t_engine,
                     t_plan))
    return rows


def sharing(quick: bool) -> list:
    """Named baseline sweeps: one kernel pass per distinct kernel input vs per cell."""
    from antiamp.sweeps.cli import setup

    setup()  # the sweep schema into Hydra's ConfigStore (registered on first need)
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
        fused, cols = plan.fused, plan.columns
        inputs = fused.kernel_inputs(cols, np.arange(plan.n_cells), None)
        eng.compute_block(fused.count, fused.kernel_inputs(cols, np.arange(1), None), 1000,
                          seed, 0)  # compile
        t0 = time.perf_counter()
        all_cells = fused.count(inputs, n, seed, 0)
        t_all = time.perf_counter() - t0
        t0 = time.perf_counter()
        shared = eng.compute_block(fused.count, inputs, n, seed, 0)
        t_shared = time.perf_counter() - t0
        assert np.array_equal(all_cells, shared)
        distinct = len(np.unique(np.concatenate(
            [cols.thr, cols.fixed[:, None].astype(np.uint64),
             cols.a_fixed[:, None].astype(np.uint64)], axis=1), axis=0))
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


def run(quick: bool = False) -> dict:
    rows, cells, same = big_grid(quick)
    return {"overhead": overhead(quick), "sharing": sharing(quick), "big": rows,
            "big_cells": cells, "big_same": same}


def report(res: dict) -> list:
    """Markdown lines (the BENCHMARKS.md section)."""
    L = ["Overhead of the engine: a grid run into a store (cells rebuilt from the "
         "validated base config and the sweep, the model's `run_cells`, each block written "
         "into the store in place with its cells' checksums, the store laid out from the "
         "first block and finished) against `run_cells` on prebuilt cells; and the cost of "
         "validating every cell up front, per run.", "",
         "| model | engine run into a store / run_cells direct | cells | cells/block | "
         "blocks | run_cells direct (s) | engine run into a store (s) | per run: validate "
         "all cells (s) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, n, k, b, td, te, tp in res["overhead"]:
        L.append(f"| {name} | {te / td:.2f} | {n} | {k} | {b} | {td:.3f} | {te:.3f} | "
                 f"{tp:.3f} |")
    L += ["", "Kernel-input sharing in the baseline's named sweeps (10^6 instances per cell): "
          "cells whose kernel inputs are identical (axes over the judge, c_e or the welfare "
          "weights) share one kernel pass; the counts are the same bits either way (checked).",
          "", "| sweep | one pass per cell / shared | cells | distinct kernel inputs | "
          "one pass per cell (s) | shared (s) |", "|---|---:|---:|---:|---:|---:|"]
    for name, n, d, ta, ts in res["sharing"]:
        L.append(f"| {name} | {ta / ts:.1f}x | {n} | {d} | {ta:.2f} | {ts:.2f} |")
    cells, rows = res["big_cells"], res["big"]
    L += ["", f"A {cells:,}-cell signals equilibrium grid (eta x phi x c_e, exact payoffs, "
          "250 cells per block), written to a store:", "",
          "| where | time / this process's | seconds | ms per cell |", "|---|---:|---:|---:|"]
    for where, t in rows:
        L.append(f"| {where} | {t / rows[0][1]:.2f} | {t:.1f} | {1000 * t / cells:.2f} |")
    L += ["", f"Two workers: {rows[0][1] / rows[1][1]:.2f}x faster; the two stores are "
          f"{'identical' if res['big_same'] else 'NOT identical'}."]
    return L


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one repetition")
    args = ap.parse_args(argv)
    print("\n".join(report(run(args.quick))))


if __name__ == "__main__":
    main()
