"""Grids through a real SLURM scheduler: a single-node cluster on loopback
(``tests/slurm_cluster.py``), started once for this module.

* ``executor=slurm`` (dask-jobqueue): grids of two models on two SLURM jobs equal
  the local runs bit for bit; a ``scancel`` of one worker job mid-grid leaves the
  other to finish, identical; a cancel of every worker job stops the run with a
  message, and a rerun resumes to the same store;
* ``hydra/launcher=submitit_slurm``: a multirun of two SLURM jobs, merged;
* refusals: a partition the scheduler does not know (exit 2 before any directory),
  a job over the partition's time limit (exit 1 at once, naming the reason), a job
  that waits in the queue longer than ``executor.start_timeout``.

Skipped, with how to install the packages, where ``slurmctld`` is absent; ``.ci/run``
installs them, so CI always runs these.  All in one xdist group: one cluster.
"""

from __future__ import annotations

from limits import limit
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

import antiamp
from antiamp.sweeps.blocks import partial_dir

from slurm_cluster import SlurmCluster, missing

pytestmark = [pytest.mark.xdist_group("slurm"),
              pytest.mark.skipif(missing() is not None, reason=f"SLURM: {missing()}")]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    root = Path(tmp_path_factory.mktemp("slurm", numbered=True))
    cluster = SlurmCluster(root).start()
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(cluster.conf)
    yield cluster
    cluster.stop()
    if old is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = old


def slurm_executor(tmp_path, jobs=2, **over):
    return {"kind": "slurm", "jobs": jobs, "start_timeout": 120,
            "slurm": {"queue": "debug", "cores": 1, "processes": 1, "memory": "1GB",
                      "walltime": "00:05:00", "interface": "lo",
                      "log_directory": str(tmp_path / "slurm-logs"), **over}}


def assert_same(a: xr.Dataset, b: xr.Dataset):
    a, b = (d.drop_vars("block_digest", errors="ignore") for d in (a, b))
    assert set(a.data_vars) == set(b.data_vars)
    for v in a.data_vars:
        x, y = a[v].values, b[v].values
        if x.dtype.kind in "fc":
            assert np.array_equal(x, y, equal_nan=True), v
        else:
            assert np.array_equal(x, y), v


GRIDS = {
    "baseline": {"run": {"n_instances": 200_000},
                 "sweep": {"axes": {"model": {"rho": [0.1, 0.5, 0.9]}, "judge": {"b": [0.2, 0.8]}},
                           "cells_per_block": 1, "plot": False}},
    "loop": {"model": {"name": "loop"}, "loop": {"rounds": 5, "paths": 10, "batch": 200},
             "sweep": {"axes": {"model": {"rho": [0.2, 0.6]}, "loop": {"m": [0.3, 0.9]}},
                       "cells_per_block": 1, "plot": False}},
}


def _cli(args, cwd, env=None, timeout=600, background=False):
    argv = [sys.executable, "-m", "antiamp.sweeps.cli", *args]
    env = {**os.environ, **(env or {})}
    if background:
        return subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=limit(timeout))


# The baseline grid in the default tier; the loop model's (the generic block engine,
# which every model's LocalCluster test also runs) in the long tier.
@pytest.mark.parametrize("model", [m if m == "baseline" else
                                   pytest.param(m, marks=pytest.mark.slow) for m in GRIDS])
def test_grid_on_two_slurm_jobs_equals_the_local_run(slurm, tmp_path, model):
    cfg = GRIDS[model]
    local = antiamp.sweep(cfg, tmp_path / "local.zarr", progress=False, log=lambda *a: None)
    remote = antiamp.sweep({**cfg, "executor": slurm_executor(tmp_path)},
                           tmp_path / "slurm.zarr", progress=False, log=lambda *a: None)
    assert_same(local.load(), remote.load())
    # The workers really were SLURM jobs (their output files are there).
    assert len(list((tmp_path / "slurm-logs").glob("*.out"))) + len(
        list((tmp_path / "slurm-logs").glob("*.err"))) >= 2


def _dask_jobs(slurm):
    return [j for j in slurm.jobs() if j[2] == "RUNNING" and j[1].startswith("dask")]


@pytest.mark.slow  # 20 s; a lost worker is also tested on a LocalCluster (kill -9), and
# a cancelled SLURM job by the test below
def test_a_cancelled_worker_job_is_a_lost_worker(slurm, tmp_path):
    """scancel one of two worker jobs mid-grid: the other finishes, the store is identical."""
    args = ["executor=slurm", "executor.jobs=2", "executor.start_timeout=120",
            "executor.slurm.queue=debug", "executor.slurm.cores=1", "executor.slurm.memory=1GB",
            "executor.slurm.walltime=00:05:00",
            "executor.slurm.interface=lo", "+executor.slurm.log_directory=logs",
            "sweep.axes.model.rho={linspace:[0,1,24]}", "sweep.cells_per_block=1",
            "run.n_instances=40000000", "sweep.plot=false", "hydra.run.dir=run"]
    p = _cli(args, tmp_path, background=True)
    deadline = time.time() + 120
    while time.time() < deadline and len(_dask_jobs(slurm)) < 2:
        time.sleep(0.5)
    jobs = _dask_jobs(slurm)
    assert len(jobs) == 2, (slurm.jobs(), p.poll())
    time.sleep(3)  # some blocks done
    assert p.poll() is None, "the grid finished before a worker could be lost"
    slurm.run("scancel", jobs[0][0])
    out, err = p.communicate(timeout=limit(600))
    assert p.returncode == 0, err
    ref = antiamp.sweep({"run": {"n_instances": 40_000_000},
                         "sweep": {"axes": {"model": {"rho": {"linspace": [0, 1, 24]}}},
                                   "cells_per_block": 1, "plot": False}},
                        tmp_path / "ref.zarr", progress=False, log=lambda *a: None)
    assert_same(ref.load(), xr.open_zarr(tmp_path / "run" / "sweep.zarr").load())


def test_every_worker_job_cancelled_stops_with_a_message_and_a_rerun_resumes(slurm, tmp_path):
    args = ["model=loop", "loop.rounds=30", "loop.paths=2000", "loop.batch=2000",
            "executor=slurm", "executor.jobs=1", "executor.start_timeout=120",
            "executor.slurm.queue=debug", "executor.slurm.cores=1", "executor.slurm.memory=1GB",
            "executor.slurm.walltime=00:05:00",
            "executor.slurm.interface=lo", "sweep.axes.model.rho={linspace:[0,1,12]}",
            "sweep.cells_per_block=1", "sweep.plot=false", "hydra.run.dir=run"]
    p = _cli(args, tmp_path, background=True)
    deadline = time.time() + 120
    while time.time() < deadline and not _dask_jobs(slurm):
        time.sleep(0.5)
    jobs = _dask_jobs(slurm)
    assert jobs, (slurm.jobs(), p.poll())
    # The worker runs ahead of this probe: the run lays its store out from the first
    # block to arrive, then writes each block, and the probe reads every 0.5 s. With
    # cells of 0.12 s (400 paths) the worker had finished all 16 by the time the probe
    # saw one (1 run in 5 on an idle machine). Cells of 2,000 paths (about 0.5 s on one
    # core), 12 of them: seconds of blocks left when the cancel lands, whatever the load.
    # Cancel only once the worker has connected and finished a block (a job that
    # is cancelled before its worker connects is a worker that cannot start: a
    # different message, tested above); a loaded machine may take a while.
    from store_probe import cells_done

    store = tmp_path / "run" / "sweep.zarr"
    deadline = time.time() + 180
    while time.time() < deadline and p.poll() is None and not cells_done(store):
        time.sleep(0.5)
    assert p.poll() is None, "the grid finished before its worker could be lost"
    slurm.run("scancel", jobs[0][0])
    out, err = p.communicate(timeout=limit(300))
    assert p.returncode == 1, err
    assert "every SLURM worker job has ended" in err and "rerun" in err, err
    assert "Traceback" not in err
    assert not partial_dir(store).exists()
    assert zarr.open_group(str(store), mode="r").attrs["complete"] == 0 and cells_done(store) >= 1
    # The rerun (here on this machine) resumes and ends as an uninterrupted run.
    local = [a for a in args if not a.startswith("executor")]
    r = _cli(local, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "resum" in (r.stdout + r.stderr).lower()
    ref = antiamp.sweep({"model": {"name": "loop"}, "loop": {"rounds": 30, "paths": 2000,
                                                             "batch": 2000},
                         "sweep": {"axes": {"model": {"rho": {"linspace": [0, 1, 12]}}},
                                   "cells_per_block": 1, "plot": False}},
                        tmp_path / "ref.zarr", progress=False, log=lambda *a: None)
    assert_same(ref.load(), xr.open_zarr(store).load())


def test_submitit_multirun_of_two_slurm_jobs_is_merged(slurm, tmp_path):
    args = ["-m", "hydra/launcher=submitit_slurm", "hydra.launcher.partition=debug",
            "hydra.launcher.timeout_min=5", "hydra.launcher.cpus_per_task=1",
            "hydra.launcher.mem_gb=1", "judge.b=0.2,0.8", "sweep.axes.model.rho=[0.2,0.6]",
            "run.n_instances=20000", "sweep.plot=false", "hydra.sweep.dir=mr"]
    r = _cli(args, tmp_path, timeout=limit(600))
    assert r.returncode == 0, r.stderr[-3000:]
    merged = xr.open_zarr(tmp_path / "mr" / "merged.zarr").load()
    assert list(merged.b.values) == [0.2, 0.8]
    for b in (0.2, 0.8):
        ref = antiamp.sweep({"judge": {"b": b}, "run": {"n_instances": 20000},
                             "sweep": {"axes": {"model": {"rho": [0.2, 0.6]}}, "plot": False}},
                            tmp_path / f"ref{b}.zarr", progress=False, log=lambda *a: None)
        assert np.array_equal(merged.amp.sel(b=b).values, ref.amp.values)
    # Both jobs went through the scheduler (submitit keeps their SLURM logs).
    logs = list((tmp_path / "mr" / ".submitit").rglob("*_log.out"))
    assert len(logs) >= 2, sorted(p.name for p in (tmp_path / "mr").rglob("*"))


def test_a_partition_the_scheduler_refuses_exits_2_before_any_directory(slurm, tmp_path):
    t = time.perf_counter()
    r = _cli(["executor=slurm", "executor.slurm.queue=nonesuch", "executor.slurm.cores=1",
              "sweep.axes.judge.b=[0.2]", "run.n_instances=1000", "hydra.run.dir=run"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert "refuses the worker job" in r.stderr and "partition" in r.stderr.lower(), r.stderr
    assert not (tmp_path / "run").exists()
    assert time.perf_counter() - t < limit(60)


def test_a_job_over_the_time_limit_is_refused_at_once(slurm, tmp_path):
    # Partition "short" allows one minute; the worker asks for five: SLURM queues it
    # for ever (PartitionTimeLimit), and the command says so instead of waiting.
    t = time.perf_counter()
    r = _cli(["executor=slurm", "executor.jobs=1", "executor.start_timeout=300",
              "executor.slurm.queue=short", "executor.slurm.cores=1",
              "executor.slurm.walltime=00:05:00", "executor.slurm.interface=lo",
              "executor.slurm.memory=1GB", "sweep.axes.judge.b=[0.2]", "run.n_instances=1000",
              "hydra.run.dir=run"], tmp_path)
    assert r.returncode == 1, r.stderr
    # SLURM names it PartitionTimeLimit or, for a partition-wide limit, PartitionConfig.
    assert "no SLURM worker can start" in r.stderr, r.stderr
    assert "PartitionTimeLimit" in r.stderr or "PartitionConfig" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert time.perf_counter() - t < limit(90)


def test_a_job_stuck_in_the_queue_stops_after_the_start_timeout(slurm, tmp_path):
    t = time.perf_counter()
    r = _cli(["executor=slurm", "executor.jobs=1", "executor.start_timeout=2",
              "executor.slurm.interface=lo", "executor.slurm.cores=1", "executor.slurm.memory=1GB",
              "executor.slurm.walltime=00:05:00",
              "+executor.slurm.job_extra_directives=['--begin=now+3600']",
              "sweep.axes.judge.b=[0.2]", "run.n_instances=1000", "hydra.run.dir=run"], tmp_path)
    assert r.returncode == 1, r.stderr
    assert "no SLURM worker started within 2 s" in r.stderr and "PENDING" in r.stderr, r.stderr
    assert time.perf_counter() - t < limit(90)
    # Its queued job was cancelled on the way out.
    time.sleep(1)
    assert not [j for j in slurm.jobs() if j[2] == "PENDING"]
