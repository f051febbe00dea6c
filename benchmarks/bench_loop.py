"""Closed-loop oversight (model=loop): the path kernel beside a vectorised NumPy loop.

    python benchmarks/bench_loop.py [--quick] [--update BENCHMARKS.md]

The reference is what a user would otherwise write: the same loop (calibrated
learner, three protocols, per-case evidence, verdicts and targets) with NumPy,
vectorised over paths x cases within each round.  Both are checked against the
exact expected path (mean error after the last round within 5 standard errors) before
they are timed; the figures are medians over repeats, measured in the same run.
Also timed: a whole cell (exact paths, thresholds, the policy front, and the
simulation) and the mean-field recursion alone.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

import numpy as np

from antiamp.models.loop import core as lp
from antiamp.registry import to_model_config
from antiamp.sweeps.blocks import run_cell

from bench_baseline import median_time as _med

CELL = {"model": {"name": "loop", "rho": 0.4, "p": 0.75}, "judge": {"b": 0.3},
        "loop": {"m": 0.8, "e_h": 0.1, "rounds": 40, "batch": 1000, "paths": 200,
                 "audit": 0.2}}


def numpy_loop(c, ov, seed=0):
    """The loop of :mod:`antiamp.kernels.loop` (calibrated learner) in NumPy; returns
    the error after the last round per protocol and path, ``[3, paths]``."""
    lc = c.loop
    rng = np.random.default_rng(seed)
    P, n, N = 3, lc.paths, lc.batch
    e = np.full((P, n), lp.start_error(c))
    for _ in range(lc.rounds):
        u = rng.random((8, n, N))  # the same eight draws per case as the kernel
        endorsed = u[1] < lc.m
        fresh_wrong = u[5] < lc.e_h
        for p in range(P):
            wrong = u[0] < e[p][:, None]
            t_p = ~wrong | (u[2] < c.model.rho)
            t_a = wrong | (u[2] < c.model.rho)
            e_pc = (t_p & (u[3] < ov.x_pc)).astype(int)
            e_pd = (t_p & (u[3] < ov.x_pd)).astype(int)
            e_a = (t_a & (u[4] < ov.x_a)).astype(int)
            jc, jd = ov.J_c[e_pc], ov.J_d[e_pd, e_a]
            if p == 0:
                J = jc
            elif p == 1:
                J = jd
            else:
                esc = (u[6] < ov.audit) | (ov.flag_c[e_pc] > 0.5)
                J = np.where(esc, jd, jc)
            follows = u[5] < J
            lab_wrong = np.where(endorsed, follows == wrong, fresh_wrong)
            target = lab_wrong.mean(axis=1)
            e[p] = np.clip((1 - lc.rate) * e[p] + lc.rate * (target + lc.bias), 0, 1)
    return e


def _check(final, exact, name):
    se = final.std(axis=1, ddof=1) / math.sqrt(final.shape[1])
    z = np.abs(final.mean(axis=1) - exact) / se
    if np.any(z > 5):
        raise AssertionError(f"{name} disagrees with the exact expected path: z = {z}")
    return float(np.max(z))


def run(quick=False):
    cfg = CELL if not quick else {**CELL, "loop": {**CELL["loop"], "paths": 50}}
    c = to_model_config(cfg)[1]
    ov = lp.oversight(c)
    repeats = 2 if quick else 3
    exact = np.array([lp.expected_path(c, ov, p)[0]["err"][-1] for p in lp.PROTOCOLS])
    lp.simulate(c, ov)  # compile or load the kernel
    z_kernel = _check(lp.simulate(c, ov)["err"][..., -1], exact, "the kernel")
    z_numpy = _check(numpy_loop(c, ov), exact, "the NumPy reference")
    t_kernel = _med(lambda: lp.simulate(c, ov), repeats)
    t_numpy = _med(lambda: numpy_loop(c, ov), repeats)
    run_cell(cfg)
    t_cell = _med(lambda: run_cell(cfg), repeats)
    t_exact = _med(lambda: [lp.meanfield_path(c, ov, p) for p in lp.PROTOCOLS], repeats)
    lc = c.loop
    cases = lc.paths * lc.rounds * lc.batch * 3
    return {"paths": lc.paths, "rounds": lc.rounds, "batch": lc.batch, "cases": cases,
            "kernel_s": t_kernel, "numpy_s": t_numpy, "ratio": t_numpy / t_kernel,
            "cell_s": t_cell, "exact_s": t_exact, "z_kernel": z_kernel, "z_numpy": z_numpy}


def report(r) -> list:
    return [
        "## Closed loop: the path kernel beside NumPy",
        "",
        f"One cell of `model=loop` ({r['paths']} paths x {r['rounds']} rounds x {r['batch']} "
        f"cases, three protocols on common random numbers: {r['cases']:.3g} simulated "
        "cases). The reference is the same loop vectorised with NumPy over paths x cases "
        "per round. Both agree with the exact expected path (largest |z| of the final mean "
        f"error: kernel {r['z_kernel']:.2f}, NumPy {r['z_numpy']:.2f}).",
        "",
        *timing_table("cases", [
            ("path kernel (`kernels/loop.py`)", r["kernel_s"], r["cases"]),
            ("NumPy reference", r["numpy_s"], r["cases"]),
            ("whole cell (exact paths, thresholds, policy front, simulation)", r["cell_s"],
             None),
            ("mean-field recursion alone, three protocols", r["exact_s"], None)]),
        "",
        f"Kernel / NumPy: **{r['ratio']:.1f}x** faster (same run, medians).",
        "",
    ]


def replace_section(path: Path, heading: str, lines: list) -> None:
    """Replace the section of BENCHMARKS.md that starts with ``heading`` (or append it)."""
    text = path.read_text() if path.exists() else ""
    block = "\n".join(lines)
    pat = re.compile(re.escape(heading) + r".*?(?=\n## |\Z)", re.S)
    text = pat.sub(lambda _: block.rstrip() + "\n", text) if pat.search(text) else (
        text.rstrip() + "\n\n" + block)
    path.write_text(text)


def timing_table(unit: str, rows: list) -> list:
    """Markdown rows of (what, seconds, items or None), led by the time per item as a
    ratio to the first row's (same run), then seconds and items per second."""
    per0 = rows[0][1] / rows[0][2]
    out = [f"| what | time per item / the first row's | seconds | {unit} per second |",
           "|---|---:|---:|---:|"]
    for what, sec, items in rows:
        rate = f"{items / sec:.3g}" if items else ""
        ratio = f"{sec / items / per0:.2f}" if items else ""
        out.append(f"| {what} | {ratio} | {sec:.4f} | {rate} |" if sec < 0.1 else
                   f"| {what} | {ratio} | {sec:.3f} | {rate} |")
    return out


def standalone(argv, doc: str, run, report, heading: str, what: str):
    """The command line every model benchmark shares: run, print the section and,
    with --update, rewrite that section of a BENCHMARKS.md."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    ap.add_argument("--update", help=f"a BENCHMARKS.md whose {what} section to rewrite")
    args = ap.parse_args(argv)
    lines = report(run(args.quick))
    print("\n".join(lines))
    if args.update:
        replace_section(Path(args.update), heading, lines)


def main(argv=None):
    standalone(argv, __doc__, run, report, "## Closed loop:", "closed-loop")


if __name__ == "__main__":
    sys.exit(main())
