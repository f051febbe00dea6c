"""A grid's blocks on GPU workers: each task holds the dask resource GPU, SLURM is asked
for the GPUs (``executor.gpus``).

On a loopback LocalCluster whose worker declares a GPU, with ``run.device=auto``: this
machine may have no GPU, so the kernels run on the CPU there, but the tasks carry
the resource as they would on GPU workers (a scheduler plugin records every task's
restrictions) and the stores equal a run on the CPU.
"""

import numpy as np
import pytest
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import SchedulerPlugin

from antiamp.config import ConfigError
from antiamp.kernels.gpu import status
from antiamp.sweeps.engine import run_sweep
from antiamp.sweeps.executors import (SCHEDULER_QUIET, ExecutorError, dask_client,
                                      slurm_job_script, task_resources)
from antiamp.sweeps.spec import ExecutorConfig, validate_executor

BLOCK_TASKS = ("run_block", "compute_block")


class Restrictions(SchedulerPlugin):
    """Each block task's resource restrictions as the scheduler sends it to a worker."""

    name = "antiamp-test-restrictions"

    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.seen = {}

    def transition(self, key, start, finish, *args, **kwargs):
        if finish == "processing" and str(key).startswith(BLOCK_TASKS):
            ts = self.scheduler.tasks[key]
            self.seen[str(key)] = dict(ts.resource_restrictions or {})


def _cluster(resources):
    return LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                        dashboard_address=None, scheduler_kwargs=SCHEDULER_QUIET,
                        resources=resources)


@pytest.fixture(scope="module")
def gpu_worker():
    with _cluster({"GPU": 1}) as cl, Client(cl) as client:
        yield cl, client


@pytest.fixture(scope="module")
def plain_worker():
    with _cluster(None) as cl, Client(cl) as client:
        yield cl, client


GRIDS = {
    "baseline": {"sweep": {"axes": {"model": {"rho": [0.1, 0.5, 0.9]}}, "plot": False,
                           "cells_per_block": 1},
                 "run": {"n_instances": 20_000, "seed": 3}},
    "colmad": {"model": {"name": "colmad"}, "judge": {"kind": "logit"},
               "sweep": {"axes": {"colmad": {"rounds": [1, 2, 3]}}, "plot": False},
               "run": {"n_instances": 2_000, "seed": 3}},
}


def _run(cfg, device, path, client=None):
    c = {**cfg, "run": {**cfg["run"], "device": device}}
    return run_sweep(c, path, client=client, progress=False).load()


@pytest.mark.skipif(status()[0], reason="run.device=auto runs on this machine's GPU")
@pytest.mark.parametrize("model", list(GRIDS))
def test_blocks_hold_a_gpu_on_workers_that_declare_one(tmp_path, gpu_worker, model):
    cl, client = gpu_worker
    rec = Restrictions(cl.scheduler)
    cl.scheduler.add_plugin(rec, name=f"{rec.name}-{model}")
    try:
        auto = _run(GRIDS[model], "auto", tmp_path / "auto", client)
    finally:
        cl.scheduler.remove_plugin(name=f"{rec.name}-{model}")
    assert rec.seen and all(r == {"GPU": 1} for r in rec.seen.values()), rec.seen
    cpu = _run(GRIDS[model], "cpu", tmp_path / "cpu")
    for name, v in cpu.data_vars.items():
        if np.issubdtype(v.dtype, np.number):
            assert np.array_equal(auto[name].values, v.values, equal_nan=True), name


def test_cpu_blocks_hold_no_gpu(tmp_path, gpu_worker):
    cl, client = gpu_worker
    rec = Restrictions(cl.scheduler)
    cl.scheduler.add_plugin(rec, name=f"{rec.name}-cpu")
    try:
        _run(GRIDS["baseline"], "cpu", tmp_path, client)
    finally:
        cl.scheduler.remove_plugin(name=f"{rec.name}-cpu")
    assert rec.seen and all(r == {} for r in rec.seen.values()), rec.seen


def test_task_resources(gpu_worker, plain_worker):
    gpu, plain = gpu_worker[1], plain_worker[1]
    assert task_resources(gpu, "cuda") == task_resources(gpu, "auto") == {"GPU": 1}
    assert task_resources(gpu, "cpu") is None
    assert task_resources(plain, "auto") is None and task_resources(plain, "cpu") is None
    # No worker could ever start a block that holds a GPU: stop, rather than wait.
    with pytest.raises(ExecutorError, match=r"run\.device=cuda: no dask worker declares a GPU"
                                            r".*executor\.gpus=1"):
        task_resources(plain, "cuda")


def test_local_executor_declares_its_gpus():
    with dask_client(ExecutorConfig(kind="local", gpus=2)) as client:
        workers = client.scheduler_info(n_workers=-1)["workers"].values()
        assert [w["resources"] for w in workers] == [{"GPU": 2}]
    with dask_client(ExecutorConfig(kind="local")) as client:
        workers = client.scheduler_info(n_workers=-1)["workers"].values()
        assert [w.get("resources") or {} for w in workers] == [{}]


def test_slurm_job_asks_for_the_gpus():
    ex = ExecutorConfig(kind="slurm", gpus=2,
                        slurm={"cores": 4, "memory": "8GB",
                               "job_extra_directives": ["--constraint=a100"]})
    script = slurm_job_script(ex)
    assert "#SBATCH --gres=gpu:2" in script
    assert "#SBATCH --constraint=a100" in script  # the user's directives are kept
    assert "--resources GPU=2" in script
    plain = slurm_job_script(ExecutorConfig(kind="slurm", slurm={"cores": 4, "memory": "8GB"}))
    assert "--gres" not in plain and "--resources" not in plain


def test_negative_gpus_names_the_field():
    with pytest.raises(ConfigError, match=r"executor\.gpus must be an integer >= 0, got -1"):
        validate_executor(ExecutorConfig(gpus=-1))


def test_slurm_without_gpus_is_refused_for_a_gpu_run_before_any_work():
    """run.device=cuda on executor=slurm with executor.gpus=0: no worker would hold a
    GPU, so no block could start; refused while validating, naming the field."""
    with pytest.raises(ConfigError, match=r"executor\.gpus must be >= 1 with run\.device=cuda"):
        validate_executor(ExecutorConfig(kind="slurm", gpus=0), "cuda")
    validate_executor(ExecutorConfig(kind="slurm", gpus=1), "cuda")
    validate_executor(ExecutorConfig(kind="slurm", gpus=0), "cpu")
    validate_executor(ExecutorConfig(kind="local", gpus=0), "cuda")  # blocks run here


def test_a_worker_killed_at_close_does_not_warn_the_user(monkeypatch, caplog):
    """The nanny's "Worker process still alive after 4.0 seconds, killing", logged while
    a local cluster closes (a loaded machine, a plugin sweep's worker processes), does
    not reach the terminal: the blocks are all in by then.  A warning at any other
    time still does."""
    import logging

    import distributed

    nanny = logging.getLogger("distributed.nanny")

    class Slow:
        def __init__(self, *a, **k):
            pass

        def close(self):
            nanny.warning("Worker process still alive after 4.0 seconds, killing")

    class FakeClient:
        def __init__(self, cluster):
            pass

        def close(self):
            pass

    monkeypatch.setattr(distributed, "LocalCluster", Slow)
    monkeypatch.setattr(distributed, "Client", FakeClient)
    with dask_client(ExecutorConfig(kind="local", n_workers=1, processes=True)):
        pass
    assert not [r for r in caplog.records if "still alive" in r.getMessage()]
    nanny.warning("a warning outside the close")
    assert [r for r in caplog.records if "outside the close" in r.getMessage()]
