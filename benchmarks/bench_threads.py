"""The kernels' OpenMP threads waiting passively (antiamp's default) or as the OpenMP
runtime would by default (spinning for a while before sleeping).

    python benchmarks/bench_threads.py [--quick] [--update BENCHMARKS.md]

The same work (``antiamp.simulate`` at 10^6 instances in a loop, then a sweep of
one-cell blocks) in fresh processes, one alone and two at once (as two dask worker
processes, two test workers or two users of one machine would run), under each
waiting policy, alternating, medians.  Wall time (until every process has ended) and
CPU time (user + system of the processes) are reported as ratios of the two
policies measured in the same run; the machine's load beside the absolute figures.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time

import bench_loop

WORK = """
import os, sys, tempfile
policy = sys.argv[1]
import antiamp
# antiamp sets OMP_WAIT_POLICY=PASSIVE at import unless it was set: for the runtime's
# own default the variable is removed again before the first kernel loads OpenMP.
if policy == "runtime default":
    os.environ.pop("OMP_WAIT_POLICY", None)
from antiamp.sweeps.engine import run_sweep
for i in range({n_sim}):
    antiamp.simulate({{"model": {{"rho": 0.3}}, "run": {{"n_instances": 1_000_000, "seed": i}}}})
axes = {{"model": {{"rho": {{"linspace": [0, 1, {n_rho}]}}}}, "judge": {{"b": [0.2, 0.5, 0.8]}}}}
run_sweep({{"sweep": {{"axes": axes, "cells_per_block": 1, "plot": False}},
           "run": {{"n_instances": 100_000}}}}, tempfile.mkdtemp(), progress=False,
          log=lambda *a: None)
"""

POLICIES = ("PASSIVE", "runtime default")


def _once(code: str, policy: str, n_proc: int) -> tuple:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy != "runtime default":
        env["OMP_WAIT_POLICY"] = policy
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", code, policy], env=env,
                              stdout=subprocess.DEVNULL) for _ in range(n_proc)]
    for p in procs:
        if p.wait() != 0:
            raise RuntimeError(f"the workload failed under {policy}")
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def run(quick: bool = False) -> dict:
    n_sim, n_rho = (40, 20) if quick else (50, 20)
    code = WORK.format(n_sim=n_sim, n_rho=n_rho)
    reps = 3
    res = {"load": os.getloadavg(), "cores": os.cpu_count(), "rows": [], "n_sim": n_sim,
           "n_cells": 3 * n_rho}
    subprocess.run([sys.executable, "-c", "import antiamp; antiamp.simulate({})"],
                   check=True, stdout=subprocess.DEVNULL)  # the kernels' cache
    for n_proc in (1, 2):
        times = {p: [] for p in POLICIES}
        for k in range(reps):
            for policy in (POLICIES if k % 2 == 0 else POLICIES[::-1]):
                times[policy].append(_once(code, policy, n_proc))
        med = {p: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
               for p, v in times.items()}
        res["rows"].append((n_proc, med["PASSIVE"], med["runtime default"]))
    res["load_after"] = os.getloadavg()
    return res


def report(res) -> list:
    lines = [
        "## Kernel threads: waiting passively",
        "",
        f"`python benchmarks/bench_threads.py`: the same work ({res['n_sim']} calls of "
        f"`antiamp.simulate` at 10^6 instances, then a {res['n_cells']}-cell sweep of "
        "one-cell blocks at 10^5 instances) "
        "in fresh processes under antiamp's `OMP_WAIT_POLICY=PASSIVE` and under the OpenMP "
        "runtime's default (threads spin a while before they sleep), alternating, medians; "
        "ratios passive / default of the same run.",
        "",
        "| processes at once | wall, passive / default | CPU, passive / default | "
        "wall passive (s) | wall default (s) | CPU passive (s) | CPU default (s) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n_proc, (wp, cp), (wd, cd) in res["rows"]:
        lines.append(f"| {n_proc} | {wp / wd:.2f} | {cp / cd:.2f} | {wp:.2f} | {wd:.2f} | "
                     f"{cp:.1f} | {cd:.1f} |")
    lines += ["", f"Load average (1 min) {res['load'][0]:.2f} before, "
              f"{res['load_after'][0]:.2f} after, on {res['cores']} cores. antiamp sets "
              "`OMP_WAIT_POLICY=PASSIVE` when it is imported (unless the variable is set): a "
              "kernel thread that finishes its share early, or waits for the next kernel, "
              "then sleeps instead of keeping its core busy while another process needs it.",
              ""]
    return lines


def main(argv=None):
    bench_loop.standalone(argv, __doc__, run, report, "## Kernel threads:", "kernel-threads")


if __name__ == "__main__":
    sys.exit(main())
