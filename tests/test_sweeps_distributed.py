"""Sweeps on a dask LocalCluster of worker processes on loopback, lost workers, SLURM setup."""

import os
import signal
import threading
import time

import numpy as np
import pytest
import zarr
from distributed import Client, LocalCluster

from antiamp.sweeps.engine import run_sweep
from antiamp.sweeps.executors import SCHEDULER_QUIET, make_slurm_cluster
from antiamp.sweeps.spec import ExecutorConfig


def cfg(n, cells_per_block=1, **run):
    return {
        "sweep": {"axes": {"model": {"rho": {"linspace": [0.0, 1.0, 6]}},
                           "judge": {"b": [0.1, 0.5, 0.9]}},
                  "plot": False, "cells_per_block": cells_per_block},
        "model": {"x_P": 0.7, "x_A": 0.9},
        "run": {"n_instances": n, **run},
    }


def same(a, b):
    for v in a.data_vars:
        assert np.array_equal(a[v].values, b[v].values, equal_nan=True), v


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, scheduler_kwargs=SCHEDULER_QUIET) as cl, \
            Client(cl) as client:
        yield cl, client


def test_local_cluster_matches_one_thread(tmp_path, cluster):
    _, client = cluster
    ref = run_sweep(cfg(100_000, n_threads=1), tmp_path / "one", progress=False).load()
    c = cfg(100_000)
    c["executor"] = {"kind": "distributed", "address": client.scheduler.address,
                     "threads_per_task": 1}
    dist = run_sweep(c, tmp_path / "dist", progress=False).load()
    same(ref, dist)


def test_lost_worker_still_completes_identically(tmp_path, cluster):
    cl, client = cluster
    n = 4_000_000  # about 10 ms of work per one-cell block on one thread
    ref = run_sweep(cfg(n, n_threads=1), tmp_path / "ref", progress=False).load()
    c = cfg(n)
    c["executor"] = {"threads_per_task": 1}
    result = {}

    def go():
        result["ds"] = run_sweep(c, tmp_path / "dist", client=client, progress=False)

    t = threading.Thread(target=go)
    t.start()
    store = tmp_path / "dist" / "sweep.zarr"
    killed = False
    deadline = time.time() + 60
    while t.is_alive() and time.time() < deadline and not killed:
        time.sleep(0.005)
        try:
            done = int(np.asarray(zarr.open_group(str(store), mode="r")["cell_done"][...]).sum())
        except Exception:
            continue
        if 0 < done < 18:
            pid = next(iter(client.run(os.getpid).values()))
            os.kill(pid, signal.SIGKILL)
            killed = True
    t.join(120)
    assert killed, "the sweep ended before a worker could be killed"
    same(ref, result["ds"].load())


def test_slurm_executor_builds_a_job_script():
    ex = ExecutorConfig(kind="slurm", slurm={"queue": "short", "account": "oversight",
                                             "cores": 4, "memory": "8GB",
                                             "walltime": "00:30:00"})
    cluster = make_slurm_cluster(ex)
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    assert "#SBATCH -p short" in script and "#SBATCH -A oversight" in script
    assert "#SBATCH -t 00:30:00" in script
