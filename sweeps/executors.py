"""dask clients for the three executors: local, an existing scheduler, SLURM."""

from __future__ import annotations

import os
from contextlib import contextmanager

from antiamp.config import ConfigError

from .spec import ExecutorConfig


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
        cluster = make_slurm_cluster(ex)
        cluster.scale(jobs=ex.jobs)
    else:
        from distributed import LocalCluster

        # In-process workers talk over inproc://; worker processes over loopback TCP.
        where = {"host": "127.0.0.1"} if ex.processes else {}
        cluster = LocalCluster(
            n_workers=ex.n_workers, threads_per_worker=1, processes=ex.processes,
            dashboard_address=None, **where,
        )
    client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def check_reachable(ex: ExecutorConfig, timeout: float = 3.0) -> None:
    """Fail fast, with a clear message, where the executor cannot start: no scheduler
    answering at ``executor.address``, or no ``sbatch`` for ``executor=slurm``."""
    import shutil
    import socket
    from urllib.parse import urlparse

    if ex.kind == "slurm" and shutil.which("sbatch") is None:
        raise ConfigError("executor=slurm needs SLURM's sbatch on PATH (run the sweep on a "
                          "cluster's login node), or use executor=local / executor=distributed")
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


def make_slurm_cluster(ex: ExecutorConfig):
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise ConfigError(
            "executor=slurm needs dask-jobqueue: pip install 'antiamp[slurm]'"
        ) from None
    kwargs = {"cores": 1, "memory": "4GB", "processes": 1}
    kwargs.update(dict(ex.slurm))
    return SLURMCluster(**kwargs)


def threads_per_task(ex: ExecutorConfig, run_threads: int) -> int:
    """Compiled threads for one task (0 lets the kernel use every core of its worker)."""
    if ex.threads_per_task:
        return ex.threads_per_task
    if ex.kind == "local":
        if not ex.processes and ex.n_workers == 1:
            return run_threads
        return max(1, (os.cpu_count() or 1) // ex.n_workers)
    return 0
