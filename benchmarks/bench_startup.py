"""Start-up: what a user waits for before and around the kernels.

    python benchmarks/bench_startup.py [--quick] [--update BENCHMARKS.md]
    python benchmarks/bench_startup.py --paired 16

Every figure is the median wall time of fresh processes (the commands as a user
types them).  References in the same run: the interpreter alone, and importing
the libraries a run needs (numpy, numba, xarray, scipy.stats: what no command
that simulates can avoid).  Runs are measured warm (the kernels' cache filled by
``antiamp warm``) and cold (an empty ``NUMBA_CACHE_DIR``: a new user's first run
without ``antiamp warm``).  The machine's load average is printed beside the
absolute figures: on a shared machine only the ratios are comparable.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
SMALL_SWEEP = ["sweep.axes.model.rho=[0.2,0.6]", "sweep.axes.judge.b=[0.2,0.6]",
               "run.n_instances=1000", "sweep.plot=false"]

#: (label, argv, kind): kind "ref" (a floor), "fast" (no kernel), "run" (cold and warm).
CASES = [
    ("python -c pass", [sys.executable, "-c", "pass"], "ref"),
    ("import numpy, numba, xarray, scipy.stats",
     [sys.executable, "-c", "import numpy, numba, xarray, scipy.stats"], "ref"),
    # ... and what a cell run adds to them: Hydra (its config) and zarr (its store)
    ("import numpy, numba, xarray, scipy.stats, hydra, zarr",
     [sys.executable, "-c", "import numpy, numba, xarray, scipy.stats, hydra, zarr"], "ref"),
    ("antiamp --help", ["antiamp", "--help"], "fast"),
    ("antiamp-sweep --help", ["antiamp-sweep", "--help"], "fast"),
    ("antiamp-solve --help", ["antiamp-solve", "--help"], "fast"),
    ("antiamp model.p=2 (refused)", ["antiamp", "model.p=2"], "fast"),
    ("antiamp-sweep model.p=2 (refused)", ["antiamp-sweep", "model.p=2"], "fast"),
    # a typo in an override (a field no section has): refused with "did you mean"
    ("antiamp modle.rho=0.5 (typo, refused)", ["antiamp", "modle.rho=0.5"], "fast"),
    ("antiamp-sweep judge.bb=0.3 (typo, refused)", ["antiamp-sweep", "judge.bb=0.3"], "fast"),
    ("antiamp.simulate, 1,000 instances (Python API)",
     [sys.executable, "-c", "import antiamp; antiamp.simulate({'run': {'n_instances': 1000}})"],
     "run"),
    ("antiamp, 1,000 instances, no figure",
     ["antiamp", "run.n_instances=1000", "run.figure=false"], "run"),
    ("antiamp, 1,000 instances, figure", ["antiamp", "run.n_instances=1000"], "run"),
    ("antiamp-sweep, 4 cells, no figures", ["antiamp-sweep"] + SMALL_SWEEP, "run"),
    # a store of many blocks (its template is laid out as one block, resized)
    ("antiamp-sweep, 120 one-cell blocks, no figures",
     ["antiamp-sweep", "sweep.axes.model.rho=[0.1,0.4,0.8]", "sweep.axes.judge.b={linspace:[0,1,40]}",
      "sweep.cells_per_block=1", "run.n_instances=1000", "sweep.plot=false"], "run"),
]


#: The overrides of the refused cases (they make no run directory).
REFUSED = ("model.p=2", "modle.rho=0.5", "judge.bb=0.3")


def _cmd(argv: list) -> list:
    if argv[0].startswith("antiamp"):
        return [str(BIN / argv[0])] + argv[1:]
    return argv


def _time(argv: list, env: dict, cwd: Path, k: int) -> float:
    times = []
    for i in range(k):
        run_dir = cwd / f"r{time.monotonic_ns()}"
        extra = [f"hydra.run.dir={run_dir}"] if argv[0].startswith("antiamp") and \
            "--help" not in argv and not any(a in argv for a in REFUSED) else []
        t = time.perf_counter()
        subprocess.run(_cmd(argv) + extra, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
        shutil.rmtree(run_dir, ignore_errors=True)
    return statistics.median(times)


def run(quick: bool = False) -> dict:
    k = 3 if quick else 7
    work = Path(tempfile.mkdtemp(prefix="antiamp-startup-"))
    # Python's bytecode caches on, as in any installed package (pip compiles them at
    # install): a shell with PYTHONDONTWRITEBYTECODE set would otherwise measure the
    # compilation of every module of an editable checkout at every start.  One untimed
    # pass of every command writes them.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([str(BIN / "antiamp"), "warm"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    for _, argv, _ in CASES:
        _time(argv, env, work, 1)
    rows = []
    for label, argv, kind in CASES:
        warm = _time(argv, env, work, k)
        cold = None
        if kind == "run":
            cold_times = []
            for _ in range(max(1, k // 3)):
                cache = work / f"cache{time.monotonic_ns()}"
                cold_times.append(_time(argv, {**env, "NUMBA_CACHE_DIR": str(cache)}, work, 1))
                shutil.rmtree(cache, ignore_errors=True)
            cold = statistics.median(cold_times)
        rows.append({"label": label, "kind": kind, "warm": warm, "cold": cold})
    shutil.rmtree(work, ignore_errors=True)
    return {"rows": rows, "repeats": k, "load": os.getloadavg()}


def report(res: dict) -> list:
    rows = {r["label"]: r for r in res["rows"]}
    floor = rows["python -c pass"]["warm"]
    libs = rows["import numpy, numba, xarray, scipy.stats"]["warm"]
    L = [f"Median wall time of {res['repeats']} fresh processes per command (load average "
         f"{res['load'][0]:.2f} at the end; absolute seconds are this machine's, ratios are "
         "to the references measured in the same run). Cold: an empty numba cache, a new "
         "user's first run without `antiamp warm`.", "",
         "| command | warm / libraries | warm (s) | cold (s) |", "|---|---:|---:|---:|"]
    for r in res["rows"]:
        cold = f"{r['cold']:.2f}" if r["cold"] is not None else ""
        L.append(f"| {r['label']} | {r['warm'] / libs:.2f} | {r['warm']:.2f} | {cold} |")
    full = rows["import numpy, numba, xarray, scipy.stats, hydra, zarr"]["warm"]
    L += ["", f"References: the interpreter starts in {floor:.3f} s; importing the libraries "
          f"a simulating run needs takes {libs:.2f} s ({full:.2f} s, {full / libs:.2f}x, with "
          "Hydra and zarr, which a command adds to compose its config and write its store). "
          "`--help` and refused input load none of them (they answer from the config "
          "classes and Hydra's composition)."]
    return L


#: ``--paired``: a cell run beside the references, run by run in turn.
PAIRED = [
    ("import numpy, numba, xarray, scipy.stats",
     [sys.executable, "-c", "import numpy, numba, xarray, scipy.stats"]),
    ("import numpy, numba, xarray, scipy.stats, hydra, zarr",
     [sys.executable, "-c", "import numpy, numba, xarray, scipy.stats, hydra, zarr"]),
    ("antiamp run.n_instances=1000 run.figure=false",
     ["antiamp", "run.n_instances=1000", "run.figure=false"]),
]


def _rusage_run(argv: list, env: dict, cwd: Path) -> tuple:
    """(wall s, CPU s of the child) of one fresh process; its run directory is made and
    removed outside the timing."""
    run_dir = cwd / f"r{time.monotonic_ns()}"
    extra = [f"hydra.run.dir={run_dir}"] if argv[0].startswith("antiamp") else []
    t = time.perf_counter()
    p = subprocess.Popen(_cmd(argv) + extra, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    shutil.rmtree(run_dir, ignore_errors=True)
    if status != 0:
        raise RuntimeError(f"{' '.join(argv)} failed (status {status})")
    return wall, ru.ru_utime + ru.ru_stime


def paired(n: int) -> list:
    """Each command of :data:`PAIRED` in turn, ``n`` rounds (after one untimed round):
    medians of the per-round ratios of the cell run to each reference, wall and CPU
    (pairing keeps a ratio meaningful while a shared machine's speed drifts)."""
    work = Path(tempfile.mkdtemp(prefix="antiamp-startup-"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([str(BIN / "antiamp"), "warm"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    for _, argv in PAIRED:
        _rusage_run(argv, env, work)
    times: dict = {label: [] for label, _ in PAIRED}
    for _ in range(n):
        for label, argv in PAIRED:
            times[label].append(_rusage_run(argv, env, work))
    shutil.rmtree(work, ignore_errors=True)
    run = times[PAIRED[-1][0]]
    L = [f"{PAIRED[-1][0]}, {n} rounds in turn with the references (load average "
         f"{os.getloadavg()[0]:.2f} at the end); medians of the per-round ratios:", "",
         "| reference | CPU | wall |", "|---|---:|---:|"]
    for label, _ in PAIRED[:-1]:
        ref = times[label]
        L.append(f"| {label} | {statistics.median(a[1] / b[1] for a, b in zip(run, ref)):.2f} "
                 f"| {statistics.median(a[0] / b[0] for a, b in zip(run, ref)):.2f} |")
    return L


HEADING = "## Start-up: help, refused input, a small run, a small sweep"


def main(argv=None):
    from bench_loop import replace_section

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--update", help="a BENCHMARKS.md whose start-up section to rewrite")
    ap.add_argument("--paired", type=int, metavar="N", default=0,
                    help="only a 1,000-instance cell run beside the references, N rounds "
                         "in turn (medians of the per-round ratios)")
    args = ap.parse_args(argv)
    if args.paired:
        print("\n".join(paired(args.paired)))
        return
    res = run(args.quick)
    print(json.dumps(res, indent=2))
    lines = report(res)
    print("\n".join(lines))
    if args.update:
        replace_section(Path(args.update), HEADING, [
            HEADING, "", f"(`python benchmarks/bench_startup.py`, also a section of "
            f"`run_all.py`; this table was rerun on its own on {time.strftime('%Y-%m-%d')}.)",
            "", *lines, ""])


if __name__ == "__main__":
    main()
