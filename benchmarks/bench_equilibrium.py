"""Equilibrium grid: every equilibrium of 10,000 cells, beside pygambit cell by cell.

    python benchmarks/bench_equilibrium.py [--cells 10000] [--cli-side 1000]

Both solvers get the same games (prior, fabrication rate, evidence cost, the
judge's endorsement table per cell) and must return the same equilibrium sets
(to 1e-9) on every cell; the ratio of their times is reported.  pygambit builds
each cell's extensive-form game and runs enummixed (debate) and enumpure
(consultancy); antiamp enumerates supports vectorised over cells and computes
every certificate.  The end-to-end ``antiamp.solve`` on the same grid
(the grid's columns validated, every equilibrium, certificate and outcome, the
Dataset) is timed too: the API's ratio to pygambit (target >= 500x).  With
``--cli-side N`` the command line on an N x N grid (start-up, store and regime map
included) is timed as a user runs it, against pygambit's time per cell measured here
times N^2 cells.
"""

from __future__ import annotations

import argparse
import math
import os
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


def ours(p_c, rho, c_e, J_c, J_d):
    g = eqm.game_from_arrays(p_c, rho, c_e, J_c, J_d)
    dP, dA, dK, dN = eqm.enumerate_debate(g)
    cP, _, cK, cN = eqm.enumerate_consult(g)
    eps = eqm.certificates(g, dP, dA, "debate")
    eqm.certificates(g, cP, np.zeros_like(cP), "consult")
    eqm.stability(g, dP, dA, dK, "debate", 1e-9)
    return dP, dA, dN, cP, cN, eps


def main(argv=None):
    from gambit_games import gambit_consult_equilibria, gambit_debate_equilibria, same_sets
    from importlib.metadata import version
    gbt_version = version("pygambit")

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--cli-side", type=int, default=0,
                    help="also time antiamp-solve on a side x side grid (0: no)")
    args = ap.parse_args(argv)
    p_c, rho, c_e, J_c, J_d, n1, n2 = grid(args.cells)
    C = len(c_e)
    ours(p_c, rho, c_e, J_c, J_d)  # warm up
    ts, cs = [], []
    for _ in range(args.repeats):
        t, c = time.perf_counter(), time.process_time()
        dP, dA, dN, cP, cN, eps = ours(p_c, rho, c_e, J_c, J_d)
        ts.append(time.perf_counter() - t)
        cs.append(time.process_time() - c)
    t_ours, c_ours = float(np.median(ts)), float(np.median(cs))
    t, c = time.perf_counter(), time.process_time()
    gam = [(gambit_debate_equilibria(p_c[i], rho[i], c_e[i], J_d[i], rational=False),
            gambit_consult_equilibria(c_e[i], J_c[i])) for i in range(C)]
    t_gambit, c_gambit = time.perf_counter() - t, time.process_time() - c
    mism = 0
    for i in range(C):
        mine = [(dP[i, e], dA[i, e]) for e in range(dN[i])]
        con = [(cP[i, e],) for e in range(cN[i])]
        if not (same_sets(mine, gam[i][0]) and same_sets(con, [(x,) for x in gam[i][1]])):
            mism += 1
    grid_cfg = {"model": {"p": 0.6, "rho": 0.5},
                "sweep": {"axes": {"model": {"c_e": {"linspace": [0, 1, n1]}},
                                   "judge": {"b": {"linspace": [0, 1, n2]}}}}}
    sim.solve(grid_cfg)  # libraries loaded (start-up is bench_startup's)
    e2e, e2c = [], []
    for _ in range(args.repeats):
        t, c = time.perf_counter(), time.process_time()
        ds = sim.solve(grid_cfg)
        e2e.append(time.perf_counter() - t)
        e2c.append(time.process_time() - c)
    t_e2e, c_e2e = float(np.median(e2e)), float(np.median(e2c))
    kinds = {k: int((ds.kind == k).sum()) for k in ("pure", "mixed", "segment end")}
    print(f"equilibrium grid: {C:,} cells (c_e x b, tie-break judge, p = 0.6, rho = 0.5); "
          f"equilibria by kind {kinds}")
    print(f"equilibrium sets identical to pygambit's (1e-9) on {C - mism:,} of {C:,} cells; "
          f"largest certificate {float(np.nanmax(eps)):.1e}\n")
    print("| solver | time (s) | per cell | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| antiamp, vectorised enumeration + certificates | {t_ours:.4f} | "
          f"{t_ours / C * 1e6:.2f} us | 1 |")
    print(f"| antiamp, antiamp.solve end to end (configs, outcomes, Dataset) | "
          f"{t_e2e:.2f} | {t_e2e / C * 1e6:.0f} us | {t_e2e / t_ours:.0f} |")
    print(f"| pygambit {gbt_version}, cell by cell (build + enummixed / enumpure) | {t_gambit:.2f} | "
          f"{t_gambit / C * 1e6:.0f} us | {t_gambit / t_ours:.0f} |")
    print(f"\npygambit / antiamp solver: {t_gambit / t_ours:,.0f}x (target >= 1,000x); "
          f"pygambit / antiamp.solve end to end: {t_gambit / t_e2e:.0f}x "
          f"(target >= 500x); medians of {args.repeats} calls, load average (1 min) "
          f"{os.getloadavg()[0]:.2f}")
    print(f"in CPU time (this process, all threads): pygambit {c_gambit:.2f} s, solver "
          f"{c_ours * 1e3:.2f} ms ({c_gambit / c_ours:,.0f}x), antiamp.solve "
          f"{c_e2e * 1e3:.2f} ms ({c_gambit / c_e2e:,.0f}x)")
    if args.cli_side:
        n = args.cli_side
        exe = os.path.join(os.path.dirname(sys.executable), "antiamp-solve")
        work = tempfile.mkdtemp(prefix="antiamp-bench-solve-")
        try:
            t = time.perf_counter()
            subprocess.run([exe, f"sweep.axes.model.c_e={{linspace:[0,1,{n}]}}",
                            f"sweep.axes.judge.b={{linspace:[0,1,{n}]}}",
                            f"hydra.run.dir={work}/run"], check=True, cwd=work,
                           stdout=subprocess.DEVNULL)
            t_cli = time.perf_counter() - t
        finally:
            shutil.rmtree(work, ignore_errors=True)
        gam_cli = t_gambit / C * n * n
        print(f"antiamp-solve on {n * n:,} cells (start-up, store, regime map): {t_cli:.1f} s; "
              f"pygambit at {t_gambit / C * 1e3:.2f} ms a cell: {gam_cli:,.0f} s; "
              f"ratio {gam_cli / t_cli:.0f}x")


if __name__ == "__main__":
    main()
