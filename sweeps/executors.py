"""dask clients for the three executors: local, an existing scheduler, SLURM."""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
from contextlib import contextmanager

from antiamp.config import ConfigError

from .spec import ExecutorConfig


class ExecutorError(RuntimeError):
    """The executor has no workers to give: SLURM worker jobs stuck in the queue, or
    every worker job ended.  Reported in one line (exit 1); a grid keeps its finished
    blocks, so rerunning the command resumes it."""


#: Pending reasons that the scheduler will not resolve by waiting (squeue %r).
SLURM_HOPELESS = ("PartitionTimeLimit", "PartitionNodeLimit", "PartitionConfig",
                  "AccountNotAllowed", "InvalidAccount", "InvalidQOS",
                  "QOSMaxWallDurationPerJobLimit",
                  "QOSMaxCpuPerJobLimit", "QOSMaxMemoryPerJob", "BadConstraints",
                  "ReqNodeNotAvail", "PartitionInactive", "JobHeldAdmin", "JobHeldUser",
                  "DependencyNeverSatisfied")
#: Job states in which a worker job may still connect.
SLURM_ALIVE = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "RESIZING", "SUSPENDED",
               "REQUEUED")


@contextmanager
def dask_client(ex: ExecutorConfig):
    """A ``distributed.Client`` for the configured executor, closed on exit.

    * ``local``: a LocalCluster on loopback (threads by default; ``processes``
      for separate worker processes), no dashboard.
    * ``distributed``: attach to the scheduler at ``executor.address``.
    * ``slurm``: a dask_jobqueue.SLURMCluster built from ``executor.slurm`` and
      scaled to ``executor.jobs`` jobs.
    """
    from distributed import Client

    if ex.kind == "distributed":
        client = Client(ex.address, timeout="30s")
        try:
            yield client
        finally:
            client.close()
        return
    if ex.kind == "slurm":
        with slurm_client(ex) as client:
            yield client
        return
    else:
        from distributed import LocalCluster

        # In-process workers talk over inproc://; worker processes over loopback TCP.
        where = {"host": "127.0.0.1"} if ex.processes else {}
        if ex.gpus:
            where["resources"] = {"GPU": ex.gpus}
        cluster = LocalCluster(
            n_workers=ex.n_workers, threads_per_worker=1, processes=ex.processes,
            dashboard_address=None, scheduler_kwargs=dict(SCHEDULER_QUIET), **where,
        )
    client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        # A worker process slow to exit (a loaded machine, a plugin's imports) is killed
        # by its nanny, which warns "Worker process still alive after 4.0 seconds,
        # killing": the blocks are all in by now, so nothing for the user to act on.
        nanny = logging.getLogger("distributed.nanny")
        level = nanny.level
        nanny.setLevel(logging.ERROR)
        try:
            cluster.close()
        finally:
            nanny.setLevel(level)


def check_reachable(ex: ExecutorConfig, timeout: float = 3.0) -> None:
    """Fail fast, with a clear message, where the executor cannot start: no scheduler
    answering at ``executor.address``, or no ``sbatch`` for ``executor=slurm``."""
    import shutil
    import socket
    from urllib.parse import urlparse

    if ex.kind == "slurm" and shutil.which("sbatch") is None:
        raise ConfigError("executor=slurm needs SLURM's sbatch on PATH (run the sweep on a "
                          "cluster's login node), or use executor=local / executor=distributed")
    if ex.kind == "slurm":
        if not ex.jobs >= 1:
            raise ConfigError(f"executor.jobs must be at least 1, got {ex.jobs}")
        if not ex.start_timeout > 0:
            raise ConfigError(f"executor.start_timeout must be positive (seconds), "
                              f"got {ex.start_timeout}")
        check_slurm_job(ex)
    if ex.kind != "distributed":
        return
    u = urlparse(ex.address)
    if u.scheme == "tcp" and u.hostname:
        try:
            socket.create_connection((u.hostname, u.port or 8786), timeout=timeout).close()
        except OSError as exc:
            raise ConfigError(f"executor.address: no dask scheduler answers at {ex.address} "
                              f"({exc.strerror or exc}); start one (`dask scheduler`) or fix "
                              "the address") from None


#: The scheduler's options: no dashboard, and its HTTP server (health checks, which
#: a scheduler always starts) on a free port of loopback.  Without an address it
#: takes port 8787 and, where another dask scheduler holds it (a shared login node,
#: a second sweep), warns "Port 8787 is already in use" and moves anyway.
SCHEDULER_QUIET = {"dashboard": False, "dashboard_address": "127.0.0.1:0"}


def _slurm_kwargs(ex: ExecutorConfig) -> dict:
    # No dashboard unless asked (executor.slurm.scheduler_options).
    kwargs = {"cores": 1, "memory": "4GB", "processes": 1,
              "scheduler_options": dict(SCHEDULER_QUIET)}
    kwargs.update(dict(ex.slurm))
    if ex.gpus:  # ask SLURM for the GPUs, and declare them to dask on the worker
        kwargs["job_extra_directives"] = [*(kwargs.get("job_extra_directives") or []),
                                          f"--gres=gpu:{ex.gpus}"]
        kwargs["worker_extra_args"] = [*(kwargs.get("worker_extra_args") or []),
                                       "--resources", f"GPU={ex.gpus}"]
    return kwargs


def task_resources(client, device: str):
    """The dask resources a block's task holds: one GPU (``{"GPU": 1}``) where its
    kernels run on a GPU, so that a worker runs one block per GPU at a time; else None.

    ``run.device=cuda`` needs a worker that declares a GPU (``executor.gpus``, or
    ``dask worker --resources GPU=1``): without one no block could start, so it
    stops here.  ``run.device=auto`` holds a GPU where the workers declare any (the
    submitting machine, a login node say, may have none) and runs anywhere otherwise.
    """
    if device == "cpu":
        return None
    workers = client.scheduler_info(n_workers=-1).get("workers", {}).values()
    if any((w.get("resources") or {}).get("GPU", 0) >= 1 for w in workers):
        return {"GPU": 1}
    if device == "cuda":
        raise ExecutorError("run.device=cuda: no dask worker declares a GPU (the dask "
                            "resource GPU), so no block could start; set executor.gpus=1 "
                            "(executor=slurm asks SLURM for it with --gres=gpu:1) or start "
                            "the workers with `dask worker ADDRESS --resources GPU=1`")
    return None


def make_slurm_cluster(ex: ExecutorConfig):
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise ConfigError(
            "executor=slurm needs dask-jobqueue: pip install 'antiamp[slurm]'"
        ) from None
    try:
        return SLURMCluster(**_slurm_kwargs(ex))
    except TypeError as exc:  # an unknown key under executor.slurm
        raise ConfigError(f"executor.slurm: {exc} (every key goes to "
                          "dask_jobqueue.SLURMCluster)") from None


def slurm_job_script(ex: ExecutorConfig) -> str:
    """The worker job script that ``executor=slurm`` submits, without starting a scheduler."""
    import inspect

    try:
        from dask_jobqueue.core import JobQueueCluster
        from dask_jobqueue.slurm import SLURMJob
    except ImportError:
        raise ConfigError(
            "executor=slurm needs dask-jobqueue: pip install 'antiamp[slurm]'"
        ) from None
    cluster_only = set(inspect.signature(JobQueueCluster.__init__).parameters) - {
        "interface", "protocol", "security", "config_name"}
    job = {k: v for k, v in _slurm_kwargs(ex).items() if k not in cluster_only}
    try:
        return SLURMJob(scheduler="tcp://127.0.0.1:8786", name="antiamp-check",
                        **job).job_script()
    except TypeError as exc:
        raise ConfigError(f"executor.slurm: {exc} (every key goes to "
                          "dask_jobqueue.SLURMCluster)") from None


def check_slurm_job(ex: ExecutorConfig, timeout: float = 30.0) -> None:
    """Ask the scheduler whether it would accept the worker job (``sbatch --test-only``:
    nothing is submitted): a bad partition, account or QOS, or a request the cluster
    cannot hold, is refused here, before any work, with SLURM's own words."""
    import tempfile

    script = slurm_job_script(ex)
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
        f.write(script)
    try:
        r = subprocess.run(["sbatch", "--test-only", f.name], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ConfigError(f"executor=slurm: sbatch --test-only did not answer within "
                          f"{timeout:.0f} s (is slurmctld up? squeue should list the queue)"
                          ) from None
    finally:
        os.unlink(f.name)
    if r.returncode != 0:
        why = " ".join(ln.strip() for ln in (r.stderr or r.stdout).splitlines() if ln.strip())
        raise ConfigError(f"executor.slurm: the SLURM scheduler refuses the worker job: {why} "
                          f"(check executor.slurm.queue (the partition), account, walltime, "
                          f"memory and cores against `sinfo` and your allocation)")


def _job_ids(cluster) -> list:
    return [str(j.job_id) for j in list(cluster.workers.values())
            if getattr(j, "job_id", None)]


def slurm_states(ids: list) -> dict:
    """Job id -> (state, reason) from squeue (jobs it no longer lists are left out)."""
    if not ids:
        return {}
    r = subprocess.run(["squeue", "-h", "-t", "all", "-j", ",".join(ids), "-o", "%i|%T|%r"],
                       capture_output=True, text=True, timeout=30)
    out = {}
    for ln in r.stdout.split():
        parts = ln.split("|")
        if len(parts) == 3:
            out[parts[0]] = (parts[1], parts[2])
    return out


def _describe(states: dict, ids: list) -> str:
    return ", ".join(f"job {i} {states[i][0]}" + (f" ({states[i][1]})" if states[i][1] not in
                                                  ("None", "") else "")
                     if i in states else f"job {i} ended" for i in ids) or "no job submitted"


def wait_for_slurm_workers(cluster, client, timeout: float, poll: float = 1.0) -> None:
    """Until one worker has connected; ExecutorError, fast, when the queue says no worker
    will (every job pending for a reason that waiting does not resolve, or ended), or
    after ``timeout`` seconds with the jobs' states and reasons."""
    deadline = time.monotonic() + timeout
    while True:
        if client.nthreads():
            return
        ids = _job_ids(cluster)
        states = slurm_states(ids)
        if ids:
            alive = [i for i in ids if i in states and states[i][0] in SLURM_ALIVE]
            hopeless = [i for i in alive if states[i][0] == "PENDING"
                        and states[i][1].split(",")[0] in SLURM_HOPELESS]
            if not alive or len(hopeless) == len(alive):
                raise ExecutorError(
                    f"no SLURM worker can start: {_describe(states, ids)}; "
                    "check executor.slurm (partition, walltime, account) against `sinfo`; "
                    "the job output (executor.slurm.log_directory) says more")
        if time.monotonic() > deadline:
            raise ExecutorError(
                f"no SLURM worker started within {timeout:g} s (executor.start_timeout): "
                f"{_describe(states, ids)}; rerun when the queue allows, or raise "
                "executor.start_timeout (finished blocks are kept: the rerun resumes)")
        time.sleep(poll)


class _SlurmWatch(threading.Thread):
    """While a grid runs: when no worker is connected and none of the worker jobs can
    still connect (cancelled, timed out, failed), record why and close the client, so
    that the run stops with that message instead of waiting forever."""

    def __init__(self, cluster, client, poll: float = 2.0):
        super().__init__(daemon=True, name="antiamp-slurm-watch")
        self.cluster, self.client, self.poll = cluster, client, poll
        self.error: str | None = None
        self._stop = threading.Event()

    def run(self) -> None:
        while not self._stop.wait(self.poll):
            try:
                if self.client.nthreads():
                    continue
                ids = _job_ids(self.cluster)
                states = slurm_states(ids)
                if ids and not any(states.get(i, ("",))[0] in SLURM_ALIVE for i in ids):
                    self.error = (f"every SLURM worker job has ended ({_describe(states, ids)}) "
                                  "and none is left to run the grid; the finished blocks are "
                                  "kept: rerun the same command to resume")
                    self.client.close()
                    return
            except Exception:  # the client is closing: nothing to watch
                return

    def stop(self) -> None:
        self._stop.set()


@contextmanager
def slurm_client(ex: ExecutorConfig):
    """A client of a SLURMCluster scaled to ``executor.jobs`` jobs, returned once one
    worker has connected (see :func:`wait_for_slurm_workers`); its jobs are cancelled
    on exit."""
    from distributed import Client

    check_slurm_job(ex)
    cluster = make_slurm_cluster(ex)
    client = None
    try:
        cluster.scale(jobs=ex.jobs)
        client = Client(cluster)
        wait_for_slurm_workers(cluster, client, ex.start_timeout)
    except BaseException:
        if client is not None:
            client.close()
        cluster.close()
        raise
    watch = _SlurmWatch(cluster, client)
    watch.start()
    try:
        yield client
    except Exception:
        if watch.error:
            raise ExecutorError(watch.error) from None
        raise
    finally:
        watch.stop()
        client.close()
        cluster.close()


def threads_per_task(ex: ExecutorConfig, run_threads: int) -> int:
    """Compiled threads for one task (0 lets the kernel use every core of its worker)."""
    if ex.threads_per_task:
        return ex.threads_per_task
    if ex.kind == "local":
        if not ex.processes and ex.n_workers == 1:
            return run_threads
        return max(1, (os.cpu_count() or 1) // ex.n_workers)
    return 0
