"""Start-up: what a user waits for before and around the kernels.

    python benchmarks/bench_startup.py [--quick] [--update BENCHMARKS.md]
    python benchmarks/bench_startup.py --paired 16

Every figure is the median wall time of fresh processes (the commands as a user
types them).  References in the same run: the interpreter alone; importing
numpy, numba and xarray (what no simulating command can avoid); and importing
exactly the third-party modules that a 1,000-instance cell run loads (every module
of an installed package other than antiamp, in the order the run loads them:
numpy, numba, xarray, Hydra, zarr and what they pull in), found by running it
first.  A command's ratio to the last is what antiamp itself adds: its own
modules, the config, the kernel call, the store and the table.  Runs are measured warm (the kernels' cache filled by
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

#: (label, argv, kind): kind "ref" (a floor), "fast" (no kernel), "run" (cold and warm),
#: "warm" (warm only: a cold start compiles the same kernels as the "run" case before it,
#: so it would time the compiler again; left out to keep ``run_all.py`` short).
LIBS = "import numpy, numba, xarray"
#: The reference that imports what a cell run imports (its argv is filled in by
#: :func:`run_imports`, measured in the same run).
RUN_IMPORTS = "import the run's third-party modules"
CELL_RUN = ["antiamp", "run.n_instances=1000", "run.figure=false"]

#: A child that runs ``argv`` (an antiamp command) in-process and prints, as JSON, the
#: modules it loaded from installed packages other than antiamp, in load order.
_LIST_IMPORTS = """
import json, sys, sysconfig
argv = json.loads(sys.argv[1])
before = set(sys.modules)
sys.argv = argv
from antiamp.cli import main
try:
    main()
except SystemExit:
    pass
purelib, platlib = sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]
out = []
for name, mod in list(sys.modules.items()):
    f = getattr(mod, "__file__", None) or ""
    if name in before or name.split(".")[0] == "antiamp" or not f:
        continue
    if f.startswith(purelib) or f.startswith(platlib):
        out.append(name)
print(json.dumps(out))
"""


def run_imports(argv: list, cwd: Path, env: dict) -> list:
    """The installed third-party modules (not antiamp's) that ``argv`` loads, in order."""
    run_dir = cwd / f"r{time.monotonic_ns()}"
    r = subprocess.run([sys.executable, "-c", _LIST_IMPORTS,
                        json.dumps(argv + [f"hydra.run.dir={run_dir}"])],
                       cwd=cwd, env=env, capture_output=True, text=True, check=True)
    shutil.rmtree(run_dir, ignore_errors=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def imports_argv(modules: list) -> list:
    """A process that imports ``modules`` in order (one that cannot be imported alone, a
    private extension loaded by its package, is skipped: its package loads it)."""
    code = ("import importlib\nfor m in " + repr(modules) + ":\n    try:\n"
            "        importlib.import_module(m)\n    except Exception:\n        pass\n")
    return [sys.executable, "-c", code]


CASES = [
    ("python -c pass", [sys.executable, "-c", "pass"], "ref"),
    (LIBS, [sys.executable, "-c", LIBS], "ref"),
    # ... and everything else a cell run loads from installed packages: Hydra (its
    # config), zarr (its store) and what they import
    (RUN_IMPORTS, None, "ref"),
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
    ("antiamp, 1,000 instances, figure", ["antiamp", "run.n_instances=1000"], "warm"),
    ("antiamp-sweep, 4 cells, no figures", ["antiamp-sweep"] + SMALL_SWEEP, "run"),
    # a store of many blocks (its template is laid out as one block, resized)
    # (60 blocks: the per-block cost shows as well as at 120, in half the section's time)
    ("antiamp-sweep, 60 one-cell blocks, no figures",
     ["antiamp-sweep", "sweep.axes.model.rho=[0.1,0.4,0.8]", "sweep.axes.judge.b={linspace:[0,1,20]}",
      "sweep.cells_per_block=1", "run.n_instances=1000", "sweep.plot=false"], "warm"),
]


#: Seconds of a command's untimed first run above which it is timed fewer times.
SLOW = 2.5

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
    k = 3 if quick else 5
    work = Path(tempfile.mkdtemp(prefix="antiamp-startup-"))
    # Python's bytecode caches on, as in any installed package (pip compiles them at
    # install): a shell with PYTHONDONTWRITEBYTECODE set would otherwise measure the
    # compilation of every module of an editable checkout at every start.  One untimed
    # pass of every command writes them.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([str(BIN / "antiamp"), "warm"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    modules = run_imports(CELL_RUN, work, env)
    cases = [(label, imports_argv(modules) if argv is None else argv, kind)
             for label, argv, kind in CASES]
    first = [_time(argv, env, work, 1) for _, argv, _ in cases]
    rows = []
    for (label, argv, kind), once in zip(cases, first):
        # medians of 5 for the commands of a second or two, of 3 for the longer ones
        # (their spread is a smaller part of them; 5 made them half the section)
        reps = k if once < SLOW else max(3, k - 2)
        warm = _time(argv, env, work, reps)
        cold = None
        if kind == "run":
            # one cold process a command: the compiler's time is what it measures, and it
            # varies little between processes (each is 15-40 s here, so more would be most
            # of the section's time)
            cache = work / f"cache{time.monotonic_ns()}"
            cold = _time(argv, {**env, "NUMBA_CACHE_DIR": str(cache)}, work, 1)
            shutil.rmtree(cache, ignore_errors=True)
        rows.append({"label": label, "kind": kind, "warm": warm, "cold": cold,
                     "repeats": reps})
    shutil.rmtree(work, ignore_errors=True)
    return {"rows": rows, "repeats": k, "load": os.getloadavg(), "run_modules": modules}


def report(res: dict) -> list:
    rows = {r["label"]: r for r in res["rows"]}
    floor = rows["python -c pass"]["warm"]
    libs = rows[RUN_IMPORTS]["warm"]
    fewer = sorted({r.get("repeats", res["repeats"]) for r in res["rows"]} - {res["repeats"]})
    some = (f" ({' or '.join(map(str, fewer))} for a command whose first run took over "
            f"{SLOW} s)") if fewer else ""
    L = [f"Median wall time of {res['repeats']} fresh processes per command{some} (load average "
         f"{res['load'][0]:.2f} at the end; absolute seconds are this machine's, ratios are "
         "to the references measured in the same run). Cold: one process with an empty numba "
         "cache, a new user's first run without `antiamp warm` (for one run of each "
         "kind: the others compile the same kernels).", "",
         "| command | warm / the run's imports | warm (s) | cold (s) |", "|---|---:|---:|---:|"]
    for r in res["rows"]:
        cold = f"{r['cold']:.2f}" if r["cold"] is not None else ""
        L.append(f"| {r['label']} | {r['warm'] / libs:.2f} | {r['warm']:.2f} | {cold} |")
    core = rows[LIBS]["warm"]
    tops = sorted({m.split(".")[0] for m in res["run_modules"]})
    L += ["", f"References: the interpreter starts in {floor:.3f} s; `{LIBS}` takes "
          f"{core:.2f} s; importing the {len(res['run_modules'])} third-party modules a "
          f"1,000-instance cell run loads ({', '.join(tops)}), in its order, takes "
          f"{libs:.2f} s ({libs / core:.2f}x). `--help` and refused input load none of the "
          "heavy ones (they answer from the config classes and Hydra's composition)."]
    return L


#: ``--paired``: a cell run beside the references, run by run in turn.
PAIRED = [
    (LIBS, [sys.executable, "-c", LIBS]),
    (RUN_IMPORTS, None),
    (" ".join(CELL_RUN), CELL_RUN),
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
    modules = run_imports(CELL_RUN, work, env)
    pairs = [(label, imports_argv(modules) if argv is None else argv) for label, argv in PAIRED]
    for _, argv in pairs:
        _rusage_run(argv, env, work)
    times: dict = {label: [] for label, _ in pairs}
    for _ in range(n):
        for label, argv in pairs:
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
