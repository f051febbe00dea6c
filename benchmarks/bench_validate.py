"""Validating a 10^5-cell grid before any work: each cell whole against column by
column (``Model.validate_reads``), in the same run.

    python benchmarks/bench_validate.py [--quick]

For each model a grid of 10^5 cells (10^4 with ``--quick``) over three axes, one of
which its ``validate`` reads: the engine's plan (:func:`antiamp.sweeps.blocks.plan_grid`)
with the model as registered (each field's values checked once, the model's
``validate`` once per distinct combination of the axes it reads) against the same
model without its declaration (every cell built and validated whole, as every model
but one was before).  Both must accept the grid.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import numpy as np


def _grids(n_side: int) -> dict:
    big = [round(float(v), 6) for v in np.linspace(0.05, 0.95, n_side)]
    return {
        "colmad": {"model": {"name": "colmad"}, "judge": {"kind": "logit"},
                   "sweep": {"axes": {"colmad": {"eta": [0.0, 0.1, 0.2, 0.3, 0.4],
                                                 "verify": big},
                                      "judge": {"mu": big}}}},
        "signals": {"model": {"name": "signals", "c_e": 0.4}, "judge": {"b": 0.7},
                    "sweep": {"axes": {"signals": {"eta": [0.0, 0.1, 0.2, 0.3, 0.4]},
                                       "model": {"c_e": big, "rho": big}}}},
        "loop": {"model": {"name": "loop"},
                 "sweep": {"axes": {"judge": {"b": [0.3, 0.4, 0.5, 0.6, 0.7]},
                                    "loop": {"m": big, "e_h": big}}}},
    }


def _time(f, reps: int) -> float:
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def run(quick: bool) -> list:
    from antiamp import registry
    from antiamp.sweeps.spec import _plan_grid  # uncached: each call validates

    n_side = 45 if quick else 142  # 5 x n_side^2 cells: 10^4 or 10^5
    rows = []
    for name, cfg in _grids(n_side).items():
        model = registry.get(name)
        whole = dataclasses.replace(model, validate_reads=None)

        def declared():
            return _plan_grid(cfg)

        def every_cell():
            registry._MODELS[name] = whole
            try:
                return _plan_grid(cfg)
            finally:
                registry._MODELS[name] = model

        n = declared().grid.n_cells  # warm (imports, judge tables) and accepted
        assert every_cell().grid.n_cells == n
        t_cols = _time(declared, 3)
        t_cells = _time(every_cell, 1 if not quick else 2)
        rows.append((name, n, t_cells, t_cols))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rows = run(args.quick)
    print(f"{'model':<10} {'cells':>8} {'every cell (s)':>15} {'column-wise (s)':>16} "
          f"{'ratio':>8}")
    for name, n, t_cells, t_cols in rows:
        print(f"{name:<10} {n:>8,} {t_cells:>15.3f} {t_cols:>16.3f} {t_cells / t_cols:>7.1f}x")


if __name__ == "__main__":
    main()
