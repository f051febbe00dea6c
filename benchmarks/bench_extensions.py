"""Extensions I (correlated signals, judge attention): kernel throughput and fixed points.

    python benchmarks/bench_extensions.py [--quick]

* The correlated-signals kernel beside the baseline kernel, same instances, same run.
* The simulated-payoff equilibrium of one cell and of a 1,000-cell grid (eta x phi
  x c_e): wall time, kernel calls, equilibria, time per equilibrium; beside
  pygambit's enummixed on the same games cell by cell (whose equilibrium sets must
  equal ours with exact payoffs on every cell), and beside the general fixed-point
  engine (QRE homotopy) on the same cell.
* Judge attention: the joint (attention, senders) equilibrium on a 10^4-cell grid
  over (c_J, load) with exact payoffs, beside the per-cell nested-scalar reference
  (``reference_attention.py``) on 100 cells of the same grid (and their equilibria
  compared); one cell with simulated payoffs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from antiamp.kernels import baseline as kb  # noqa: E402
from antiamp.kernels import correlated as kc  # noqa: E402
from antiamp.kernels.rng import split_seed  # noqa: E402
from antiamp.models.signals import core as sg  # noqa: E402
from antiamp.extended import solve_extended, to_ext_config  # noqa: E402
from antiamp.models.signals import effort as ef  # noqa: E402

import reference_attention  # noqa: E402
from antiamp.judge import judge_tables  # noqa: E402
from antiamp.runner import baseline_thresholds  # noqa: E402

CELL = {"model": {"p": 0.75, "rho": 0.35, "c_e": 0.45}, "judge": {"b": 0.7},
        "signals": {"p_A": 0.7, "eta": 0.4, "phi": 0.4}}


def _med(f, repeats):
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def kernel_throughput(n=200_000_000, repeats=3):
    c, _ = to_ext_config(CELL)
    thr_s = sg.thresholds([0.5], [sg.joint_table(c.signals, 0.75)], [sg.avail_table(c.signals, 0.35)])
    thr_b = baseline_thresholds(0.5, 0.75, 0.35, 1, 1, 1)
    k0, k1 = split_seed(0)
    import numba

    nb_ = 4 * numba.get_num_threads()
    kc.signal_class_counts_one(thr_s[0], 0, 10_000, k0, k1, np.uint64(kc.STREAM), nb_)
    kb.class_counts(thr_b, 0, 0, 0, 10_000, k0, k1, np.uint64(kb.STREAM), nb_)
    ts = _med(lambda: kc.signal_class_counts_one(thr_s[0], 0, n, k0, k1, np.uint64(kc.STREAM),
                                                 nb_), repeats)
    tb = _med(lambda: kb.class_counts(thr_b, 0, 0, 0, n, k0, k1, np.uint64(kb.STREAM), nb_),
              repeats)
    return {"n": n, "signals_rate": n / ts, "baseline_rate": n / tb, "ratio": tb / ts,
            "threads": numba.get_num_threads()}


def _gambit_cell(cfg):
    from gambit_games import gambit_signals_equilibria

    c, _ = to_ext_config(cfg)
    w = sg.class_probabilities([c.model.pi], [sg.joint_table(c.signals, c.model.p)],
                               [sg.avail_table(c.signals, c.model.rho)])[0]
    _, J = judge_tables(c.judge, c.protocol)
    return gambit_signals_equilibria(w, c.model.c_e, J)


def one_cell(n=10_000_000, repeats=3):
    sim_cfg = {**CELL, "equilibrium": {"payoffs": "simulated"}, "run": {"n_instances": n}}
    solve_extended(sim_cfg)  # compile
    t_sim = _med(lambda: solve_extended(sim_cfg), repeats)
    ds = solve_extended(sim_cfg)
    t_exact = _med(lambda: solve_extended(CELL), repeats)
    t_qre = _med(lambda: solve_extended({**CELL, "equilibrium": {"method": "qre"}}), 1)
    t_gbt = _med(lambda: _gambit_cell(CELL), repeats)
    n_eq = int(ds.n_equilibria.sum())
    return {"n": n, "t_simulated": t_sim, "t_exact": t_exact, "t_qre": t_qre, "t_gambit": t_gbt,
            "kernel_calls": ds.attrs["kernel_calls"], "equilibria": n_eq,
            "eps": float(ds.epsilon.max())}


def grid_cfg(side):
    return {**CELL, "signals": {**CELL["signals"], "eta_mode": "fraction"},
            "sweep": {"axes": {"signals": {"eta": {"linspace": [0.0, 1.0, side]},
                                           "phi": {"linspace": [0.1, 1.0, side]}},
                               "model": {"c_e": {"linspace": [0.3, 0.7, side]}}}}}


def grid(side=10, n=1_000_000):
    cfg = grid_cfg(side)
    t = time.perf_counter()
    ds_sim = solve_extended({**cfg, "equilibrium": {"payoffs": "simulated"},
                             "run": {"n_instances": n}})
    t_sim = time.perf_counter() - t
    t = time.perf_counter()
    ds_ex = solve_extended(cfg)
    t_ex = time.perf_counter() - t
    # pygambit, cell by cell, on the exact games; the sets must equal ours.
    etas = ds_ex.eta.values
    phis = ds_ex.phi.values
    ces = ds_ex.c_e.values
    t = time.perf_counter()
    agree = 0
    cells = 0
    for i, eta in enumerate(etas):
        for j, phi in enumerate(phis):
            for k, ce in enumerate(ces):
                cell = {**CELL, "model": {**CELL["model"], "c_e": float(ce)},
                        "signals": {**CELL["signals"], "eta": float(eta), "eta_mode": "fraction",
                                    "phi": float(phi)}}
                ref = _gambit_cell(cell)
                d = ds_ex.isel(eta=i, phi=j, c_e=k).sel(protocol="debate")
                m = int(d.n_equilibria)
                ours = [(d.x_P.values[e], d.x_A.values[e]) for e in range(m)]
                ok = len(ours) == len(ref) and all(
                    any(np.max(np.abs(a - u)) < 1e-7 and np.max(np.abs(b - v)) < 1e-7
                        for u, v in ours) for a, b in ref)
                agree += ok
                cells += 1
    t_gbt = time.perf_counter() - t
    n_eq = int(ds_sim.n_equilibria.sum())
    return {"cells": cells, "n": n, "t_simulated": t_sim, "t_exact": t_ex, "t_gambit": t_gbt,
            "kernel_calls": ds_sim.attrs["kernel_calls"], "equilibria": n_eq,
            "agree": agree, "eps": float(ds_sim.epsilon.max())}


ATT = {"model": {"p": 0.75, "rho": 0.4, "c_e": 0.2}, "judge": {"b": 0.6},
       "effort": {"enabled": True, "v_max": 0.9, "c_J": 0.05, "load": 1.5}}


def _attention_cell(cfg):
    """The solver's view of one cell (class probabilities, sections), for the reference."""
    c, _ = to_ext_config(cfg)
    w = sg.class_probabilities([c.model.pi], [sg.joint_table(c.signals, c.model.p)],
                               [sg.avail_table(c.signals, c.model.rho)])
    return ef.CellModel(w[0], c.judge, c.protocol, c.effort, c.model.c_e, ())


def attention(side=100, sample=100, n=1_000_000):
    """Judge attention on a side x side grid over (c_J, load), exact payoffs, beside
    the per-cell reference (nested scalar solvers, benchmarks/reference_attention.py)
    on ``sample`` cells of the same grid; and simulated payoffs on one cell."""
    c_J, load = np.geomspace(0.005, 1.0, side), np.linspace(1.0, 3.0, side)
    cfg = {**ATT, "equilibrium": {"payoffs": "exact"}}
    solve_extended(cfg)
    g = {**cfg, "sweep": {"axes": {"effort": {"c_J": {"geomspace": [0.005, 1.0, side]},
                                              "load": {"linspace": [1.0, 3.0, side]}}}}}
    t = time.perf_counter()
    ds = solve_extended(g)
    t_grid = time.perf_counter() - t
    cells = [divmod(int(k), side) for k in np.linspace(0, side * side - 1, sample)]
    cms = [_attention_cell({**ATT, "effort": {**ATT["effort"], "c_J": float(c_J[i]),
                                              "load": float(load[j])}}) for i, j in cells]
    t = time.perf_counter()
    ref = [reference_attention.solve_cell(cm) for cm in cms]
    t_ref = time.perf_counter() - t
    diff, same_count = 0.0, True
    for (i, j), eqs in zip(cells, ref):
        d = ds.isel(c_J=i, load=j)
        for p, prot in enumerate(("consult", "debate")):
            ours = np.sort(d.t_star.sel(protocol=prot).values[:int(d.n_equilibria.sel(
                protocol=prot))])
            theirs = np.sort([t for q, t, _ in eqs if q == p])
            same_count &= len(ours) == len(theirs)
            if len(ours) == len(theirs) and len(ours):
                diff = max(diff, float(np.max(np.abs(ours - theirs))))
    sim = {**ATT, "equilibrium": {"payoffs": "simulated"}, "run": {"n_instances": n}}
    solve_extended(sim)
    t_sim = _med(lambda: solve_extended(sim), 3)
    return {"cells": side * side, "t_grid": t_grid, "sample": sample, "t_ref": t_ref,
            "per_cell": t_grid / (side * side), "ref_per_cell": t_ref / sample,
            "equilibria": int(ds.n_equilibria.sum()), "eps": float(ds.epsilon.max()),
            "same_count": bool(same_count), "t_diff": diff, "t_sim_cell": t_sim, "n": n}


def run(quick=False):
    res = {"load": os.getloadavg()}
    res["kernel"] = kernel_throughput(50_000_000 if quick else 200_000_000)
    res["one_cell"] = one_cell(2_000_000 if quick else 10_000_000)
    res["grid"] = grid(5 if quick else 10)
    res["attention"] = attention(*((20, 20) if quick else (100, 100)))
    res["load_after"] = os.getloadavg()
    return res


def report(res) -> list:
    """Markdown rows, the ratio (reference time / antiamp's, same run) first."""
    k, o, g, a = res["kernel"], res["one_cell"], res["grid"], res["attention"]
    rows = [
        (f"correlated-signals kernel, {k['threads']} threads (rate / baseline kernel's)",
         f"{k['ratio']:.2f}x", f"{k['signals_rate'] / 1e6:,.0f} M inst/s",
         f"baseline kernel {k['baseline_rate'] / 1e6:,.0f} M inst/s"),
        (f"one cell, simulated payoffs ({o['n']:,} instances)",
         f"{o['t_gambit'] / o['t_simulated']:.2f}x",
         f"{o['t_simulated'] * 1e3:,.1f} ms, {o['kernel_calls']} kernel call(s), "
         f"{o['equilibria']} equilibria", f"pygambit enummixed (exact game) "
         f"{o['t_gambit'] * 1e3:,.1f} ms"),
        ("one cell, exact payoffs", f"{o['t_qre'] / o['t_exact']:.0f}x",
         f"{o['t_exact'] * 1e3:,.1f} ms", f"general engine (QRE homotopy) {o['t_qre'] * 1e3:,.0f} ms"),
        (f"{g['cells']:,}-cell grid, simulated payoffs ({g['n']:,} instances/cell)",
         f"{g['t_gambit'] / g['t_simulated']:.1f}x",
         f"{g['t_simulated']:.2f} s, {g['kernel_calls']} kernel calls, {g['equilibria']:,} "
         f"equilibria ({g['t_simulated'] / max(1, g['equilibria']) * 1e3:.2f} ms each)",
         f"pygambit cell by cell {g['t_gambit']:.1f} s"),
        (f"{g['cells']:,}-cell grid, exact payoffs", f"{g['t_gambit'] / g['t_exact']:.0f}x",
         f"{g['t_exact']:.2f} s; sets equal to pygambit's on {g['agree']:,}/{g['cells']:,} cells",
         f"pygambit {g['t_gambit']:.1f} s"),
        (f"judge attention, {a['cells']:,}-cell grid, exact payoffs (per cell)",
         f"{a['ref_per_cell'] / a['per_cell']:.1f}x",
         f"{a['per_cell'] * 1e3:.1f} ms a cell ({a['t_grid']:.1f} s, {a['equilibria']:,} "
         "equilibria)", f"per-cell nested scalar solvers {a['ref_per_cell'] * 1e3:.0f} ms a cell "
         f"({a['sample']} cells of the grid)"),
        (f"judge attention, one cell, simulated payoffs ({a['n']:,} instances)", "-",
         f"{a['t_sim_cell'] * 1e3:,.0f} ms", "-"),
    ]
    lines = ["| measurement | ratio | antiamp | reference |", "|---|---:|---|---|"]
    lines += [f"| {m} | {r} | {x} | {y} |" for m, r, x, y in rows]
    lines.append("")
    lines.append(f"Largest certificate: {max(o['eps'], g['eps'], a['eps']):.1e}. Attention "
                 f"equilibria on the reference's {a['sample']} cells: "
                 f"{'the same number' if a['same_count'] else 'DIFFERENT numbers'}, "
                 f"largest difference in t* {a['t_diff']:.1e}. Load average (1 min) "
                 f"{res.get('load', [float('nan')])[0]:.2f} before, "
                 f"{res.get('load_after', [float('nan')])[0]:.2f} after, on {os.cpu_count()} cores.")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    print("\n".join(report(run(args.quick))))


if __name__ == "__main__":
    main()
