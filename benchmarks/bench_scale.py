"""Scale: validating big grids, verifying stores, estimating from big logs.

    python benchmarks/bench_scale.py [--quick]

1. The baseline sweep plan (every cell validated, kernel inputs built): column by
   column against cell by cell, same grids, same run (and the same bits: checked).
2. A rerun of a finished sweep, which verifies every block against its checksum,
   against the sweep that wrote the store.
3. The bootstrap of antiamp-estimate (multinomial counts of the row codes) against
   scipy.stats.bootstrap resampling rows, on the same log: time, peak memory of
   each in a fresh process, and the two intervals.
4. The whole antiamp-estimate on a CSV log of 5 million rows, and on a log with one
   field of 100 MB (refused, naming its row and column): wall time and peak memory
   (VmHWM) of the command in a fresh process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def plan(quick: bool) -> list:
    from antiamp.sweeps import spec

    rows = []
    for side in ((30, 100) if quick else (100, 316)):
        cfg = {"sweep": {"axes": {"model": {"rho": {"linspace": [0, 1, side]}},
                                  "judge": {"b": {"linspace": [0.01, 0.99, side]}}}}}
        t = time.perf_counter()
        ref = spec._make_plan(cfg, columnar=False)
        t_cells = time.perf_counter() - t
        t = time.perf_counter()
        col = spec._make_plan(cfg, columnar=True)
        t_cols = time.perf_counter() - t
        same = all(np.array_equal(getattr(ref.columns, f), getattr(col.columns, f))
                   for f in ("thr", "J_consult", "J_debate", "strategies"))
        rows.append((side * side, t_cells, t_cols, same))
    big = []
    for side in ((1000,) if quick else (1000, 3163)):
        cfg = {"sweep": {"axes": {"model": {"rho": {"linspace": [0, 1, side]}},
                                  "judge": {"b": {"linspace": [0.01, 0.99, side]}}}}}
        t = time.perf_counter()
        spec._make_plan(cfg)
        big.append((side * side, time.perf_counter() - t))
    return rows, big


def verify(quick: bool) -> tuple:
    from antiamp.sweeps.engine import run_sweep

    side = 30 if quick else 100
    cfg = {"run": {"n_instances": 100_000},
           "sweep": {"axes": {"model": {"rho": {"linspace": [0, 1, side]}},
                              "judge": {"b": {"linspace": [0.01, 0.99, side]}}},
                     "cells_per_block": 100, "store": "s.zarr", "plot": False}}
    with tempfile.TemporaryDirectory() as tmp:
        quiet = {"progress": False, "log": lambda *a: None}
        small = {"model": {"rho": {"linspace": [0, 1, 10]}},  # the same code paths, warm
                 "judge": {"b": {"linspace": [0.01, 0.99, 10]}}}
        run_sweep({**cfg, "sweep": {**cfg["sweep"], "axes": small, "store": "warm.zarr"}},
                  tmp, **quiet)
        t = time.perf_counter()
        run_sweep(cfg, tmp, **quiet)
        t_run = time.perf_counter() - t
        t = time.perf_counter()
        run_sweep(cfg, tmp, **quiet)  # complete: every block verified
        t_verify = time.perf_counter() - t
    return side * side, side * side // 100, t_run, t_verify


_BOOT = """
import json, sys, time
import numpy as np, pandas as pd
from antiamp.estimate import amp_of_codes, boot_interval, row_codes, validate_log
df = validate_log(pd.read_parquet(sys.argv[1]))
d = df[df.protocol == "debate"]
samples = [row_codes(g) for _, g in d.groupby("stratum", observed=True)]
known = [s[s >= 4] for s in samples]
t = time.perf_counter()
if sys.argv[2] == "counts":
    _, lo, hi = boot_interval(known, amp_of_codes, 0.95, 2000, np.random.default_rng(0))
else:
    from scipy import stats
    def amp(*smp, axis=-1):
        c = np.concatenate(smp, axis=axis) % 8  # codes fold over the "right" bit (+8)
        return np.sum(c == 7, axis=axis) / np.sum((c == 6) | (c == 7), axis=axis)
    ci = stats.bootstrap(known, amp, n_resamples=2000, confidence_level=0.95,
                         method="percentile", vectorized=True,
                         random_state=np.random.default_rng(0)).confidence_interval
    lo, hi = ci.low, ci.high
# VmHWM: this process's own peak (ru_maxrss would carry the parent's over exec).
hwm = [int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM")][0]
print(json.dumps({"seconds": time.perf_counter() - t, "lo": float(lo), "hi": float(hi),
                  "peak_mb": hwm / 1024}))
"""


def bootstrap(quick: bool) -> list:
    from antiamp.transcripts import records

    rows = []
    sizes = (20_000,) if quick else (20_000, 100_000)
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = Path(tmp) / f"log{n}.parquet"
            records({"judge": {"kind": "logit", "mu": 0.3, "kappa": 1.5},
                     "model": {"rho": 0.4, "p": 0.75}}, n // 2).to_parquet(path)
            res = {}
            for how in ("counts", "rows"):
                out = subprocess.run([sys.executable, "-c", _BOOT, str(path), how],
                                     capture_output=True, text=True, check=True,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)})
                res[how] = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append((n, res["counts"], res["rows"]))
    return rows


_ESTIMATE = """
import json, sys
from antiamp.estimate import main
try:
    main(sys.argv[2:])
finally:  # the command's own peak, however it ends (VmHWM: not the parent's)
    hwm = [int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM")][0]
    open(sys.argv[1], "w").write(json.dumps({"peak_mb": hwm / 1024}))
"""

_LOG = """
import sys
import pandas as pd
from antiamp.transcripts import records, write_records
n = int(sys.argv[2])  # rows: n / 4 instances per stratum, both protocols
parts = [records({"model": {"rho": 0.3 + 0.3 * i}, "judge": {"kind": "logit"},
                  "run": {"seed": i}}, n // 4, n_judges=200, stratum=s)
         for i, s in enumerate(("low", "high"))]
write_records(pd.concat(parts, ignore_index=True), sys.argv[1])
"""


def estimate_log(quick: bool) -> dict:
    """antiamp-estimate on a big CSV log and on one with a 100 MB field."""
    rows = 500_000 if quick else 5_000_000
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        big = tmp / "log.csv"
        subprocess.run([sys.executable, "-c", _LOG, str(big), str(rows)], check=True, env=env)
        wide = tmp / "wide.csv"
        with open(wide, "w") as fh:  # a log whose row 2 holds a 100 MB judge_id
            fh.write("instance,protocol,stratum,judge_id,omega,a,y,e_P,e_A\n")
            fh.write("0,consult,all,1,1,0,0,0,0\n1,debate,all,2,1,1,1,1,0\n")
            fh.write("2,debate,all,")
            for _ in range(100):
                fh.write("x" * (1 << 20))
            fh.write(",1,1,1,1,0\n")
        for name, log in (("rows", big), ("wide_field", wide)):
            peak = tmp / f"{name}.json"
            t = time.perf_counter()
            r = subprocess.run([sys.executable, "-c", _ESTIMATE, str(peak), str(log), "--out",
                                str(tmp / f"out-{name}")], capture_output=True, text=True,
                               env=env)
            out[name] = {"rows": rows if name == "rows" else 3, "exit": r.returncode,
                         "seconds": time.perf_counter() - t,
                         "bytes": log.stat().st_size,
                         "message": r.stderr.strip().splitlines()[-1] if r.stderr.strip()
                         else "", **json.loads(peak.read_text())}
    return out


def run(quick: bool = False) -> dict:
    return {"plan": plan(quick), "verify": verify(quick), "bootstrap": bootstrap(quick),
            "estimate": estimate_log(quick)}


def report(res: dict) -> list:
    rows, big = res["plan"]
    L = ["Validating a baseline grid and building its kernel inputs (the sweep plan): "
         "column by column (each distinct value of an axis, and each distinct combination "
         "of the judge and protocol axes, once) against cell by cell, same grids in the "
         "same run.", "",
         "| cells | cell by cell / column by column | cell by cell (s) | column by column (s) "
         "| same bits |", "|---:|---:|---:|---:|---|"]
    for n, tc, tk, same in rows:
        L.append(f"| {n:,} | {tc / tk:,.0f}x | {tc:.2f} | {tk:.3f} | {'yes' if same else 'NO'} |")
    L += ["", "Column by column alone: " + "; ".join(
        f"{n:,} cells in {t:.1f} s ({1e6 * t / n:.2f} us per cell)" for n, t in big) + ".", ""]
    cells, blocks, t_run, t_verify = res["verify"]
    L += [f"Rerunning a finished sweep ({cells:,} cells in {blocks} blocks, 10^5 instances per "
          f"cell) verifies every block against its checksum and the metrics against the "
          f"counts: {t_verify:.2f} s, against {t_run:.2f} s for the sweep that wrote it "
          f"({100 * t_verify / t_run:.0f}%).", "",
          "The bootstrap of `antiamp-estimate` (2,000 stratified resamples of debate Amp): "
          "multinomial counts of the row codes against scipy.stats.bootstrap resampling "
          "rows, each in a fresh process on the same log.", "",
          "| rows | rows, scipy / counts | counts (s) | rows, scipy (s) | peak MB counts / scipy | "
          "interval counts | interval scipy |", "|---:|---:|---:|---:|---:|---|---|"]
    for n, c, r in res["bootstrap"]:
        L.append(f"| {n:,} | {r['seconds'] / c['seconds']:,.0f}x | {c['seconds']:.3f} | "
                 f"{r['seconds']:.2f} | {c['peak_mb']:.0f} / {r['peak_mb']:.0f} "
                 f"| [{c['lo']:.4f}, {c['hi']:.4f}] | [{r['lo']:.4f}, {r['hi']:.4f}] |")
    if "estimate" in res:
        e = res["estimate"]
        L += ["", "The whole `antiamp-estimate` on a CSV log, in a fresh process (peak: the "
              "command's VmHWM).", "",
              "| log | size | exit | time (s) | peak MB |", "|---|---:|---:|---:|---:|"]
        for name, what in (("rows", f"{e['rows']['rows']:,} rows"),
                           ("wide_field", "3 rows, one field of 100 MB")):
            r = e[name]
            L.append(f"| {what} | {r['bytes'] / 2**20:,.0f} MB | {r['exit']} | "
                     f"{r['seconds']:.1f} | {r['peak_mb']:,.0f} |")
        L += ["", f"The 100 MB field: `{e['wide_field']['message']}`"]
    return L


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes")
    args = ap.parse_args(argv)
    print("\n".join(report(run(args.quick))))


if __name__ == "__main__":
    main()
