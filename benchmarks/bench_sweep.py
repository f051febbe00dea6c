"""Sweep engine: a 10,000-cell grid at 10^6 instances per cell, time and peak memory.

    python benchmarks/bench_sweep.py [--cells 10000] [--n 1000000]
    python benchmarks/bench_sweep.py --against OTHER_CHECKOUT [--cells 10000] [--n 10000]
        [--repeats 5]
    python benchmarks/bench_sweep.py --per-cell signals,signals_sim [--against OTHER_CHECKOUT]
        [--this CHECKOUT] [--sizes 100,10000] [--n 10000] [--repeats 3]
    python benchmarks/bench_sweep.py --store-split equilibrium,baseline,signals
        [--against OTHER_CHECKOUT] [--repeats 3]

Each grid size runs in a fresh process so that its peak resident memory is its
own.  The reference, in the same run, is what a user would otherwise write: a
Python loop calling ``antiamp.simulate`` once per cell (timed on a 1,000-cell grid,
both ways, and in memory through ``antiamp.sweep`` without a store).

``--against`` times the same store sweep side by side with another checkout of
the project (a git worktree of an earlier commit: its ``sim/``, ``sweeps/``,
``kernels/`` and ``conf/`` imported in place of this one's), alternating the two
``--repeats`` times, each run in a fresh process, compiled outside the timing;
it prints each run's CPU and wall time, the medians, their ratio, and the load
average before and after.

``--per-cell MODEL[,MODEL...]`` measures each model's marginal CPU per cell: its
two-axis grid (``MODEL_GRIDS``: the baseline's rho x b, signals' eta x phi with
exact or simulated payoffs) swept into a store at each of ``--sizes`` cells
(default 100 and 10,000), each run in a fresh process, CPU time of the sweep alone
(imports and compilation outside it); the marginal CPU per cell is the slope
between the smallest and the largest size, what a cell costs beyond the sweep's
fixed cost, and is printed beside the baseline's (measured in the same run, on the
same checkout) with their ratio.  With ``--against`` both checkouts run, the runs
alternating (model by model, size by size), and the table gives both and the ratio
of this checkout's slope to the other's.

``--store-split`` measures, per block, the store's CPU beside the model's solving:
the equilibrium grid (c_e x b), the baseline's fused grid (rho x b) and a signals
grid (eta x phi, exact payoffs), each 64 x 1,024 cells in 16 blocks of 4,096, in a
fresh process, compiled outside the timing.  Direct timers (``time.process_time``)
wrap the functions of each step: solving (a block's ``run_block`` or fused kernel
pass), the metrics derived from a fused block's counts, and, inside the store's
write of a block, the checks that a block fits the store (``fit``), the per-cell
checksums, encoding and compression, the chunk files, chunks written through zarr
and the per-block statistics.  The store's per-block CPU is everything the write
of a block costs but the derived metrics (counted as the model's solving), beside
solving per block and their ratio; with ``--against`` both checkouts, alternating,
``--repeats`` times.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time


def _grid(cells: int) -> dict:
    side = int(round(math.sqrt(cells)))
    return {"model": {"rho": {"linspace": [0.0, 1.0, side]}},
            "judge": {"b": {"linspace": [0.0, 1.0, cells // side]}}}


def _use_checkout(src: str) -> None:
    """Import ``antiamp`` from the checkout ``src`` instead of the installed one (an
    editable install's finder, its package folders moved to ``src``)."""
    import os

    for mod in list(sys.modules.values()):
        mapping = getattr(mod, "MAPPING", None)
        if getattr(mod, "__name__", "").startswith("__editable__") and isinstance(mapping, dict):
            for name, path in mapping.items():
                if name.startswith("antiamp"):
                    mapping[name] = os.path.join(src, os.path.basename(path))
            return
    raise SystemExit("--against needs an editable install of antiamp (pip install -e .)")


def _side(cells: int) -> tuple[int, int]:
    side = int(round(math.sqrt(cells)))
    return side, cells // side


def _signals(payoffs: str):
    def grid(cells: int, n: int) -> dict:
        a, b = _side(cells)
        return {"model": {"name": "signals", "p": 0.8, "rho": 0.3, "c_e": 0.4},
                "signals": {"eta_mode": "fraction"}, "judge": {"kind": "tiebreak", "b": 0.7},
                "equilibrium": {"payoffs": payoffs}, "run": {"n_instances": n},
                "sweep": {"axes": {"signals": {"eta": {"linspace": [-1.0, 1.0, a]},
                                               "phi": {"linspace": [0.05, 1.0, b]}}}}}
    return grid


#: The grids of --per-cell: a config of ``cells`` cells and ``n`` instances a cell.
MODEL_GRIDS = {
    "baseline": lambda cells, n: {"sweep": {"axes": _grid(cells)}, "run": {"n_instances": n}},
    "signals": _signals("exact"),  # the model's default: no kernel, equilibria alone
    "signals_sim": _signals("simulated"),  # class counts from the kernel, delta-method SEs
    "panel": lambda cells, n: {  # exact payoffs (the default): a judge panel's tables a cell
        "model": {"name": "panel"}, "run": {"n_instances": n},
        "sweep": {"axes": {"model": {"rho": {"linspace": [0.05, 0.95, _side(cells)[0]]},
                                     "p": {"linspace": [0.55, 0.95, _side(cells)[1]]}}}}},
}


def child_model(name: str, cells: int, n: int) -> None:
    """One sweep of ``MODEL_GRIDS[name]`` into a store: its CPU time, as JSON."""
    import os

    if os.environ.get("ANTIAMP_BENCH_SRC"):
        _use_checkout(os.environ["ANTIAMP_BENCH_SRC"])
    import antiamp as sim
    from antiamp.sweeps.engine import run_sweep

    with tempfile.TemporaryDirectory() as tmp:
        warm = MODEL_GRIDS[name](4, 1000)  # compile outside the timing
        warm["sweep"]["plot"] = False
        run_sweep(warm, tmp + "/warm", progress=False, log=lambda *a: None)
        cfg = MODEL_GRIDS[name](cells, n)
        cfg["sweep"]["plot"] = False
        t, cpu = time.perf_counter(), time.process_time()
        ds = run_sweep(cfg, tmp, progress=False, log=lambda *a: None)
        dt, dcpu = time.perf_counter() - t, time.process_time() - cpu
        ncells = int(ds["cell_done"].size)
        print(json.dumps({"mode": name, "cells": ncells, "n": n, "seconds": dt, "cpu": dcpu,
                          "antiamp": os.path.dirname(sim.__file__)}))


def per_cell(models: list, sizes: list, n: int, repeats: int, other: str | None,
             this: str | None = None) -> None:
    """Marginal CPU per cell of each model's grid (and the baseline's), this checkout
    (or ``this``, another one) and ``other``'s alternating; see the module docstring."""
    import os
    import statistics

    names = ["baseline"] + [m for m in models if m != "baseline"]
    sides = ["this"] + (["other"] if other else [])
    load0 = os.getloadavg()
    cpu: dict = {}
    for k in range(repeats):
        for name in names:
            for cells in sizes:
                for side in (sides if k % 2 == 0 else sides[::-1]):
                    r = run_child(name, cells, n, other if side == "other" else this)
                    cpu.setdefault((name, side, cells), []).append(r["cpu"])
                    print(f"repeat {k + 1} {name} {side:5s} {r['cells']:,} cells: cpu "
                          f"{r['cpu']:.2f} s, wall {r['seconds']:.2f} s", flush=True)
    load1 = os.getloadavg()
    med = {key: statistics.median(v) for key, v in cpu.items()}
    lo, hi = min(sizes), max(sizes)

    def slope(name, side):  # ms of CPU a cell
        return (med[(name, side, hi)] - med[(name, side, lo)]) / (hi - lo) * 1e3

    print(f"\nmarginal CPU per cell, {n:,} instances a cell, between {lo:,} and {hi:,} cells "
          f"(medians of {repeats} runs{', the checkouts alternating' if other else ''})\n")
    head = "| grid | checkout | " + " | ".join(f"CPU at {c:,} cells (s)" for c in sizes)
    print(head + " | ms a cell | x baseline |")
    print("|---|---|" + "---:|" * (len(sizes) + 2))
    for name in names:
        for side in sides:
            print(f"| {name} | {side} | " + " | ".join(f"{med[(name, side, c)]:.2f}"
                                                      for c in sizes)
                  + f" | {slope(name, side):.3f} | {slope(name, side) / slope('baseline', side):.1f} |")
    if other:
        print("\nthis / other, marginal CPU per cell: " + ", ".join(
            f"{name} {slope(name, 'this') / slope(name, 'other'):.2f}" for name in names))
    print(f"load average (1, 5, 15 min) before {load0}, after {load1}")


#: The grids of --store-split: 64 x 1,024 cells, 16 blocks of 4,096 (each model's default).
SPLIT_GRIDS = {
    "equilibrium": {"model": {"name": "equilibrium", "p": 0.6},
                    "sweep": {"axes": {"model": {"c_e": {"linspace": [0.0, 1.0, 64]}},
                                       "judge": {"b": {"linspace": [0.0, 1.0, 1024]}}}}},
    "baseline": {"run": {"n_instances": 10_000},
                 "sweep": {"axes": {"model": {"rho": {"linspace": [0.0, 1.0, 64]}},
                                    "judge": {"b": {"linspace": [0.0, 1.0, 1024]}}}}},
    "signals": {"model": {"name": "signals", "p": 0.8, "rho": 0.3, "c_e": 0.4},
                "signals": {"eta_mode": "fraction"}, "judge": {"kind": "tiebreak", "b": 0.7},
                "equilibrium": {"payoffs": "exact"}, "run": {"n_instances": 10_000},
                "sweep": {"axes": {"signals": {"eta": {"linspace": [-1.0, 1.0, 64]},
                                               "phi": {"linspace": [0.05, 1.0, 1024]}}}}},
}
#: The steps of --store-split: (key, module, attribute), wrapped by a CPU timer.
SPLIT_STEPS = (
    ("solve", "antiamp.sweeps.blocks", "run_block"),
    ("solve", "antiamp.sweeps.engine", "compute_block"),
    ("store", "antiamp.sweeps.cellstore", "CellStore.write"),
    ("store", "antiamp.sweeps.engine", "write_block"),
    ("derive", "antiamp.sweeps.engine", "block_values"),
    ("fit", "antiamp.sweeps.cellstore", "CellStore.fit"),
    ("grow", "antiamp.sweeps.cellstore", "CellStore._grow"),
    ("checksum", "antiamp.sweeps.cellstore", "cell_digests"),
    ("checksum", "antiamp.sweeps.engine", "cell_digests"),
    ("chunk files", "antiamp.sweeps.chunkfiles", "ChunkFile.write"),
    ("zarr", "zarr.core.array", "Array.__setitem__"),
    ("stats", "antiamp.sweeps.cellstore", "CellStore._stats"),
    ("stats", "antiamp.sweeps.cellstore", "CellStore._stats_row"),
    ("encode", "numcodecs.blosc", "Blosc.encode"),
    ("encode", "numcodecs.zstd", "Zstd.encode"),
)


def _wrap_steps(totals: dict, counts: dict) -> None:
    """Wrap every step of SPLIT_STEPS with a CPU timer (inclusive; a step called
    inside another of the same key is counted once)."""
    import importlib

    active: dict = {}
    for key, mod, attr in SPLIT_STEPS:
        try:
            m = importlib.import_module(mod)
        except ImportError:
            continue
        owner, _, name = attr.rpartition(".")
        obj = getattr(m, owner) if owner else m
        fn = getattr(obj, name, None)
        if fn is None:
            continue

        def timed(*a, _fn=fn, _key=key, **k):
            if active.get(_key) or (_key == "zarr" and not active.get("store")):
                return _fn(*a, **k)  # nested, or a zarr write outside a block's
            active[_key] = True
            t = time.process_time()
            try:
                return _fn(*a, **k)
            finally:
                totals[_key] = totals.get(_key, 0.0) + time.process_time() - t
                counts[_key] = counts.get(_key, 0) + 1
                active[_key] = False

        setattr(obj, name, timed)


def child_split(name: str) -> None:
    """One sweep of ``SPLIT_GRIDS[name]`` into a store, its steps timed: JSON."""
    import os

    if os.environ.get("ANTIAMP_BENCH_SRC"):
        _use_checkout(os.environ["ANTIAMP_BENCH_SRC"])
    import copy

    import antiamp as sim
    from antiamp.sweeps.engine import run_sweep

    totals: dict = {}
    counts: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        warm = copy.deepcopy(SPLIT_GRIDS[name])  # compile outside the timing
        for sec in warm["sweep"]["axes"].values():
            for k in sec:
                sec[k] = {"linspace": sec[k]["linspace"][:2] + [2]}
        warm["sweep"]["plot"] = False
        run_sweep(warm, tmp + "/warm", progress=False, log=lambda *a: None)
        _wrap_steps(totals, counts)
        cfg = copy.deepcopy(SPLIT_GRIDS[name])
        cfg["sweep"]["plot"] = False
        cpu = time.process_time()
        ds = run_sweep(cfg, tmp + "/s", progress=False, log=lambda *a: None)
        dcpu = time.process_time() - cpu
        print(json.dumps({"mode": name, "cells": int(ds["cell_done"].size), "cpu": dcpu,
                          "blocks": counts.get("store", 0), "totals": totals,
                          "antiamp": os.path.dirname(sim.__file__)}))


def store_split(models: list, repeats: int, other: str | None) -> None:
    """The store's CPU per block beside solving per block (see the module)."""
    import os
    import statistics

    load0 = os.getloadavg()
    sides = ("this", "other") if other else ("this",)
    runs: dict = {}
    for k in range(repeats):
        for name in models:
            for side in (sides if k % 2 == 0 else sides[::-1]):
                env = dict(os.environ)
                env.pop("ANTIAMP_BENCH_SRC", None)
                if side == "other":
                    env["ANTIAMP_BENCH_SRC"] = other
                out = subprocess.run([sys.executable, __file__, "--child-split", name],
                                     capture_output=True, text=True, check=True, env=env)
                r = json.loads(out.stdout.strip().splitlines()[-1])
                runs.setdefault((name, side), []).append(r)
                print(f"repeat {k + 1} {name} {side}: cpu {r['cpu']:.2f} s, {r['blocks']} "
                      f"blocks, " + ", ".join(f"{key} {v:.3f}" for key, v in
                                              sorted(r["totals"].items())), flush=True)
    load1 = os.getloadavg()
    keys = ("solve", "derive", "store", "fit", "grow", "checksum", "encode", "chunk files", "zarr",
            "stats")
    print(f"\nCPU ms per block, medians of {repeats} runs (64 x 1,024 cells, 16 blocks of "
          "4,096). 'solve': the model's own work on a block (a fused grid's kernel pass "
          "and 'derive', the metrics from its counts); 'store': the whole write of a "
          "block into the store but 'derive', of which fit .. stats ('grow', in 'fit': "
          "resizing along a model dimension; 'chunk files' include their encoding; 'zarr': "
          "arrays written through zarr within a block's write)\n")
    print("| model | checkout | " + " | ".join(keys) + " | store / solve |")
    print("|---|---|" + "---:|" * (len(keys) + 1))
    fastest = {}
    for name in models:
        for side in sides:
            rs = runs[(name, side)]

            def part(r, key):
                t = r["totals"]
                if key == "solve":
                    return t.get("solve", 0.0) + t.get("derive", 0.0)
                if key == "store":
                    return t.get("store", 0.0) - t.get("derive", 0.0)
                return t.get(key, 0.0)

            per = {key: statistics.median(part(r, key) / max(r["blocks"], 1) for r in rs) * 1e3
                   for key in keys}
            ratio = statistics.median(part(r, "store") / part(r, "solve") for r in rs)
            fastest.setdefault(side, []).append((per["solve"], name))
            print(f"| {name} | {side} | " + " | ".join(f"{per[key]:.1f}" for key in keys)
                  + f" | {ratio:.2f} |")
    for side in sides:
        t, name = min(fastest[side])
        print(f"fastest solving per block ({side}): {name}, {t:.1f} ms")
    print(f"load average (1, 5, 15 min) before {load0}, after {load1}")


def child(mode: str, cells: int, n: int) -> None:
    import os
    import resource

    if os.environ.get("ANTIAMP_BENCH_SRC"):
        _use_checkout(os.environ["ANTIAMP_BENCH_SRC"])
    import numpy as np

    import antiamp as sim
    from antiamp.sweeps.engine import run_sweep

    axes = _grid(cells)
    with tempfile.TemporaryDirectory() as tmp:
        # compile outside the timing
        run_sweep({"sweep": {"axes": {"model": {"rho": [0.5]}}, "plot": False},
                   "run": {"n_instances": 1000}}, tmp + "/warm", progress=False)
        t, cpu = time.perf_counter(), time.process_time()
        if mode == "engine":
            ds = run_sweep({"sweep": {"axes": axes, "plot": False},
                            "run": {"n_instances": n}}, tmp, progress=False)
            ncells = int(np.prod([ds.sizes["rho"], ds.sizes["b"]]))
        elif mode == "memory":  # the same grid in memory (antiamp.sweep, no store)
            ds = sim.sweep({"sweep": {"axes": axes}, "run": {"n_instances": n}}, progress=False)
            ncells = int(np.prod([ds.sizes["rho"], ds.sizes["b"]]))
        else:
            rhos = np.linspace(0, 1, len(np.linspace(0, 1, int(round(math.sqrt(cells))))))
            bs = np.linspace(0, 1, cells // len(rhos))
            ncells = 0
            for r in rhos:
                for b in bs:
                    sim.simulate({"model": {"rho": float(r)}, "judge": {"b": float(b)},
                                  "run": {"n_instances": n, "progress": False}})
                    ncells += 1
        dt, dcpu = time.perf_counter() - t, time.process_time() - cpu
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps({"mode": mode, "cells": ncells, "n": n, "seconds": dt, "cpu": dcpu,
                          "peak_mb": peak, "antiamp": os.path.dirname(sim.__file__)}))


def run_child(mode, cells, n, src=None):
    import os

    env = dict(os.environ)
    env.pop("ANTIAMP_BENCH_SRC", None)
    if src:
        env["ANTIAMP_BENCH_SRC"] = src
    out = subprocess.run([sys.executable, __file__, "--child", mode, "--cells", str(cells),
                          "--n", str(n)], capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def against(other: str, cells: int, n: int, repeats: int) -> None:
    """This checkout's store sweep against ``other``'s, alternating, CPU and wall time."""
    import os
    import statistics

    load0 = os.getloadavg()
    runs: dict = {"this": [], "other": []}
    for k in range(repeats):
        order = ("this", "other") if k % 2 == 0 else ("other", "this")
        for side in order:
            r = run_child("engine", cells, n, other if side == "other" else None)
            runs[side].append(r)
            print(f"repeat {k + 1} {side:5s} ({r['antiamp']}): cpu {r['cpu']:.2f} s, "
                  f"wall {r['seconds']:.2f} s", flush=True)
    load1 = os.getloadavg()
    med = {s: (statistics.median(r["cpu"] for r in v), statistics.median(r["seconds"] for r in v))
           for s, v in runs.items()}
    print(f"\n{cells:,} cells x {n:,} instances, {repeats} runs each, alternating")
    print(f"median CPU: this {med['this'][0]:.2f} s, other {med['other'][0]:.2f} s, "
          f"ratio {med['this'][0] / med['other'][0]:.3f}")
    print(f"median wall: this {med['this'][1]:.2f} s, other {med['other'][1]:.2f} s, "
          f"ratio {med['this'][1] / med['other'][1]:.3f}")
    print(f"load average (1, 5, 15 min) before {load0}, after {load1}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=10_000)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--child", default=None)
    ap.add_argument("--child-split", default=None)
    ap.add_argument("--store-split", default=None,
                    help="models of SPLIT_GRIDS (comma-separated): the store's CPU per block")
    ap.add_argument("--against", default=None, help="another checkout to time beside this one")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--per-cell", default=None,
                    help="grids of MODEL_GRIDS (comma-separated): marginal CPU per cell")
    ap.add_argument("--sizes", default="100,10000", help="cells of the --per-cell grids")
    ap.add_argument("--this", default=None,
                    help="--per-cell: a checkout to time in place of the installed one")
    args = ap.parse_args(argv)
    if args.child_split:
        child_split(args.child_split)
        return
    if args.store_split:
        store_split(args.store_split.split(","), args.repeats, args.against)
        return
    if args.child in MODEL_GRIDS:
        child_model(args.child, args.cells, args.n)
        return
    if args.child:
        child(args.child, args.cells, args.n)
        return
    if args.per_cell:
        per_cell(args.per_cell.split(","), [int(c) for c in args.sizes.split(",")], args.n,
                 args.repeats, args.against, args.this)
        return
    if args.against:
        against(args.against, args.cells, args.n, args.repeats)
        return
    rows = [run_child("engine", c, args.n) for c in (100, 1_000, args.cells)]
    loop = run_child("loop", 1_000, args.n)
    memory = run_child("memory", 1_000, args.n)
    print(f"sweep engine, {args.n:,} instances per cell (tie-break judge, rho x b grid)\n")
    print("| cells | engine time (s) | cell-instances/s | peak RSS (MB) |")
    print("|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['cells']:,} | {r['seconds']:.1f} | {r['cells'] * r['n'] / r['seconds'] / 1e9:.2f} G "
              f"| {r['peak_mb']:.0f} |")
    e1k = rows[1]
    print(f"\n1,000 cells: engine {e1k['seconds']:.2f} s, loop of antiamp.simulate "
          f"{loop['seconds']:.2f} s: {loop['seconds'] / e1k['seconds']:.1f}x")
    print(f"1,000 cells in memory (antiamp.sweep without a store, fused blocks): "
          f"{memory['seconds']:.2f} s: {loop['seconds'] / memory['seconds']:.1f}x the loop")
    big = rows[-1]
    print(f"{big['cells']:,} cells: {big['seconds']:.1f} s (target < 120 s); peak memory "
          f"{big['peak_mb']:.0f} MB against {rows[0]['peak_mb']:.0f} MB at 100 cells")


if __name__ == "__main__":
    main()
