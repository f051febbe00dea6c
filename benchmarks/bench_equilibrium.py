"""Equilibrium grid: every equilibrium of the 100 x 100 grid of debate games, beside pygambit.

    python benchmarks/bench_equilibrium.py [--cells 10000] [--pairs 5] [--cli-side 1000]
                                           [--before DIR]

The grid: c_e x b, 100 x 100 by default, p = 0.6, rho = 0.5, the tie-break judge.
The reference is what a user runs with pygambit for each cell of that grid: build the
cell's debate game (its tree written in Gambit's .efg format and read by
``pygambit.read_efg``: ``gambit_debate_equilibria`` of tests/gambit_games.py) and
call ``pygambit.nash.enummixed_solve(game, rational=False)``; beside it the same with
pygambit's default ``rational=True`` (exact arithmetic).  Both must give the same
debate equilibrium sets as antiamp (to 1e-9) on every cell.  antiamp's side is
``antiamp.solve`` on the same grid, end to end (the grid's columns validated, every
equilibrium of debate and consultancy, certificates, outcomes, the Dataset), and the
compiled enumeration with certificates alone.

Paired repeats, CPU time (this process, all threads) and wall time: each pair times
``antiamp.solve`` on the whole grid and pygambit on a fifth of the cells (every cell
once over the pairs), so each pair gives a ratio per cell at the same moment; the
medians and the range of the pairs' ratios are printed, with the load before and
after.  Also printed: the reference the ratio was once quoted against (the debate
game's enummixed plus the consultancy game's ``enumpure_solve`` a cell), which a
user comparing debate equilibria does not run.

``--cli-side N`` also times ``antiamp-solve`` on an N x N grid (start-up, store and
regime map included) against pygambit's CPU time a cell measured here times N^2 (an
extrapolation: pygambit is not run on the N^2 cells).  ``--before DIR`` times the
``antiamp.solve`` of another checkout (``git worktree add DIR REV``) beside this
one's, in alternating subprocesses running the same code, to tell a slower API from
a different reference.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import antiamp as sim  # noqa: E402
from antiamp import evidence_game as eqm  # noqa: E402


def grid(cells: int):
    side = int(round(math.sqrt(cells)))
    c_e, b = np.meshgrid(np.linspace(0, 1, side), np.linspace(0, 1, cells // side), indexing="ij")
    c_e, b = c_e.ravel(), b.ravel()
    C = len(b)
    J_d = np.empty((C, 2, 2))
    J_d[:, 0, 0] = J_d[:, 1, 1] = b
    J_d[:, 1, 0], J_d[:, 0, 1] = 1.0, 0.0
    J_c = np.stack([np.zeros(C), np.ones(C)], axis=1)
    return np.full(C, 0.6), np.full(C, 0.5), c_e, J_c, J_d, side, cells // side


def grid_config(n1: int, n2: int) -> dict:
    """The same grid as ``antiamp.solve``'s config."""
    return {"model": {"p": 0.6, "rho": 0.5},
            "sweep": {"axes": {"model": {"c_e": {"linspace": [0, 1, n1]}},
                               "judge": {"b": {"linspace": [0, 1, n2]}}}}}


def ours(p_c, rho, c_e, J_c, J_d):
    g = eqm.game_from_arrays(p_c, rho, c_e, J_c, J_d)
    dP, dA, dK, dN = eqm.enumerate_debate(g)
    cP, _, cK, cN = eqm.enumerate_consult(g)
    eps = eqm.certificates(g, dP, dA, "debate")
    eqm.certificates(g, cP, np.zeros_like(cP), "consult")
    eqm.stability(g, dP, dA, dK, "debate", 1e-9)
    return dP, dA, dN, cP, cN, eps


def _clocks():
    return time.perf_counter(), time.process_time()


def _since(t0):
    t, c = _clocks()
    return t - t0[0], c - t0[1]


#: Run in a subprocess by --before: antiamp.solve of the checkout at argv[1] (its
#: packages mapped as the project's install maps them), median CPU and wall seconds.
_SOLVE_TIMER = r"""
import importlib.abc, importlib.util, json, os, sys, time
import numpy as np
root, reps, cfg = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
dirs = {"antiamp": "sim", "antiamp.kernels": "kernels", "antiamp.sweeps": "sweeps",
        "antiamp.conf": "conf"}
class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name in dirs:
            d = os.path.join(root, dirs[name])
            return importlib.util.spec_from_file_location(
                name, os.path.join(d, "__init__.py"), submodule_search_locations=[d])
        return None
sys.meta_path.insert(0, Finder())
import antiamp
assert antiamp.__file__.startswith(os.path.abspath(root)), antiamp.__file__
antiamp.solve(cfg)
cpu, wall = [], []
for _ in range(reps):
    t, c = time.perf_counter(), time.process_time()
    antiamp.solve(cfg)
    wall.append(time.perf_counter() - t)
    cpu.append(time.process_time() - c)
print(json.dumps({"cpu": float(np.median(cpu)), "wall": float(np.median(wall))}))
"""


def before_after(before: str, cfg: dict, rounds: int = 3, reps: int = 7):
    """``antiamp.solve`` of the checkout ``before`` and of this one, each in fresh
    subprocesses running :data:`_SOLVE_TIMER`, alternating ``rounds`` times; the
    medians over the rounds of each subprocess's median."""
    import json

    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    out = {"before": [], "this": []}
    for _ in range(rounds):
        for k, root in (("before", before), ("this", here)):
            r = subprocess.run([sys.executable, "-c", _SOLVE_TIMER, os.path.abspath(root),
                                str(reps), json.dumps(cfg)], check=True, capture_output=True,
                               text=True, cwd=tempfile.gettempdir())
            out[k].append(json.loads(r.stdout.strip().splitlines()[-1]))
    return {k: {m: float(np.median([x[m] for x in v])) for m in ("cpu", "wall")}
            for k, v in out.items()}


def main(argv=None):
    from gambit_games import gambit_consult_equilibria, gambit_debate_equilibria, same_sets
    from importlib.metadata import version
    gbt_version = version("pygambit")

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=10_000)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=7, help="calls of the solver alone")
    ap.add_argument("--cli-side", type=int, default=0,
                    help="also time antiamp-solve on a side x side grid (0: no)")
    ap.add_argument("--before", metavar="DIR",
                    help="a checkout whose antiamp.solve to time beside this one's")
    args = ap.parse_args(argv)
    load0 = os.getloadavg()
    p_c, rho, c_e, J_c, J_d, n1, n2 = grid(args.cells)
    C = len(c_e)
    cfg = grid_config(n1, n2)
    ours(p_c, rho, c_e, J_c, J_d)  # warm up
    ts, cs = [], []
    for _ in range(args.repeats):
        t0 = _clocks()
        dP, dA, dN, cP, cN, eps = ours(p_c, rho, c_e, J_c, J_d)
        t, c = _since(t0)
        ts.append(t)
        cs.append(c)
    t_ours, c_ours = float(np.median(ts)), float(np.median(cs))
    sim.solve(cfg)  # libraries loaded (start-up is bench_startup's)
    # gambit_debate_equilibria: the debate game written as .efg text, read by
    # pygambit.read_efg, then pygambit.nash.enummixed_solve(game, rational=...).
    refs = {"float": lambda i: gambit_debate_equilibria(p_c[i], rho[i], c_e[i], J_d[i], False),
            "rational": lambda i: gambit_debate_equilibria(p_c[i], rho[i], c_e[i], J_d[i], True),
            "consult": lambda i: gambit_consult_equilibria(c_e[i], J_c[i])}
    refs["float"](0), refs["rational"](0), refs["consult"](0)  # pygambit loaded
    sets = {k: [None] * C for k in refs}
    api, per_cell = [], {k: [] for k in refs}  # pairs: (wall, cpu) a call / a cell
    for r in range(args.pairs):
        t0 = _clocks()
        ds = sim.solve(cfg)
        api.append(_since(t0))
        cells = range(r, C, args.pairs)
        for k, f in refs.items():
            t0 = _clocks()
            for i in cells:
                sets[k][i] = f(i)
            t, c = _since(t0)
            per_cell[k].append((t / len(cells), c / len(cells)))
    load1 = os.getloadavg()
    api_t = np.array(api) / C  # a cell: wall, CPU
    mism = {k: 0 for k in refs}
    for i in range(C):
        mine = [(dP[i, e], dA[i, e]) for e in range(dN[i])]
        for k in ("float", "rational"):
            mism[k] += not same_sets(mine, sets[k][i])
        mism["consult"] += not same_sets([(cP[i, e],) for e in range(cN[i])],
                                         [(x,) for x in sets["consult"][i]])
    n_eq = {k: sum(len(s) for s in sets[k]) for k in ("float", "rational")}
    ds_debate = int(np.isfinite(ds.x_P.sel(protocol="debate")).sum())

    def ratio(ref, w):  # per pair, pygambit a cell / antiamp.solve a cell
        return np.array([p[w] for p in ref]) / api_t[:, w]

    print(f"equilibrium grid: {C:,} cells ({n1} x {n2}: c_e x b, tie-break judge, p = 0.6, "
          f"rho = 0.5); antiamp.solve: {ds_debate:,} debate equilibria; pygambit "
          f"{gbt_version} enummixed_solve: {n_eq['float']:,} (rational=False), "
          f"{n_eq['rational']:,} (rational=True)")
    print(f"debate equilibrium sets identical to pygambit's (1e-9) on "
          f"{C - mism['float']:,} (rational=False) and {C - mism['rational']:,} "
          f"(rational=True) of {C:,} cells; consultancy's to enumpure_solve's on "
          f"{C - mism['consult']:,}; largest certificate {float(np.nanmax(eps)):.1e}\n")
    print("reference, per cell: game = pygambit.read_efg(the cell's debate game as .efg "
          "text); pygambit.nash.enummixed_solve(game, rational=...)\n")
    print(f"| per cell, medians of {args.pairs} pairs | CPU | wall | pygambit / antiamp.solve, "
          f"CPU (pairs' range) | wall |")
    print("|---|---:|---:|---:|---:|")
    a_w, a_c = float(np.median(api_t[:, 0])), float(np.median(api_t[:, 1]))
    print(f"| antiamp.solve end to end (configs, every equilibrium of both protocols, "
          f"certificates, outcomes, Dataset) | {a_c * 1e6:.2f} us | {a_w * 1e6:.2f} us | 1 | 1 |")
    print(f"| antiamp compiled enumeration + certificates alone (median of {args.repeats}) | "
          f"{c_ours / C * 1e6:.2f} us | {t_ours / C * 1e6:.2f} us | | |")
    labels = {"float": "build the debate game + enummixed_solve(rational=False)",
              "rational": "build the debate game + enummixed_solve() (default rational=True)"}
    for k in ("float", "rational"):
        rc, rw = ratio(per_cell[k], 1), ratio(per_cell[k], 0)
        pc = float(np.median([p[1] for p in per_cell[k]]))
        pw = float(np.median([p[0] for p in per_cell[k]]))
        print(f"| pygambit {gbt_version}: {labels[k]} | {pc * 1e6:.0f} us | {pw * 1e6:.0f} us "
              f"| {np.median(rc):.0f}x ({rc.min():.0f}-{rc.max():.0f}x) | "
              f"{np.median(rw):.0f}x |")
    both = [(a[0] + b[0], a[1] + b[1]) for a, b in zip(per_cell["float"], per_cell["consult"])]
    rc = ratio(both, 1)
    print(f"| the reference once quoted: the row above rational=False plus the consultancy "
          f"game + enumpure_solve | {np.median([b[1] for b in both]) * 1e6:.0f} us | "
          f"{np.median([b[0] for b in both]) * 1e6:.0f} us | {np.median(rc):.0f}x "
          f"({rc.min():.0f}-{rc.max():.0f}x) | {np.median(ratio(both, 0)):.0f}x |")
    print(f"\nload average (1 min) {load0[0]:.2f} before, {load1[0]:.2f} after, on "
          f"{os.cpu_count()} cores; CPU: this process, all threads")
    if args.before:
        ba = before_after(args.before, cfg)
        print(f"antiamp.solve on the grid, alternating subprocesses (3 rounds, medians of 7 "
              f"calls): {args.before}: {ba['before']['cpu'] * 1e3:.2f} ms CPU, "
              f"{ba['before']['wall'] * 1e3:.2f} ms wall; this checkout: "
              f"{ba['this']['cpu'] * 1e3:.2f} ms CPU, {ba['this']['wall'] * 1e3:.2f} ms wall; "
              f"load average now {os.getloadavg()[0]:.2f}")
    if args.cli_side:
        n = args.cli_side
        exe = os.path.join(os.path.dirname(sys.executable), "antiamp-solve")
        work = tempfile.mkdtemp(prefix="antiamp-bench-solve-")
        try:
            ru = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run([exe, f"sweep.axes.model.c_e={{linspace:[0,1,{n}]}}",
                            f"sweep.axes.judge.b={{linspace:[0,1,{n}]}}",
                            f"hydra.run.dir={work}/run"], check=True, cwd=work,
                           stdout=subprocess.DEVNULL)
            t_cli = time.perf_counter() - t
            ru2 = resource.getrusage(resource.RUSAGE_CHILDREN)
            c_cli = (ru2.ru_utime - ru.ru_utime) + (ru2.ru_stime - ru.ru_stime)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        pc = float(np.median([p[1] for p in per_cell["float"]]))
        print(f"antiamp-solve on {n * n:,} cells (start-up, store, regime map): {t_cli:.1f} s "
              f"wall, {c_cli:.1f} s CPU; pygambit (rational=False) at {pc * 1e3:.3f} ms of CPU "
              f"a cell measured above, times {n * n:,} cells: {pc * n * n:,.0f} s; ratio "
              f"{pc * n * n / c_cli:.0f}x in CPU (an extrapolation of pygambit's time)")


if __name__ == "__main__":
    main()
