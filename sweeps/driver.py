"""The one sweep driver: a grid's store run, resumed, verified and repaired block by block.

Every model's sweep goes through the same steps (:func:`run_store`): the store's
lock; its metadata repaired before a resume; the store's state (new, resumed,
complete, or something else, refused); then its blocks run, each written into
its chunks as it finishes, in this process, on a dask client or on a client
started for the executor (:func:`run_tasks`: one loop for the progress bar,
Ctrl-C and the dask futures); and a rerun verifies every finished block, runs
the unfinished ones and recomputes the damaged ones (:func:`verify`, the one
verification entry, which ``antiamp-check`` runs too).

What differs between models is the *block strategy*, an object that says how a
block is computed, written and checked:

- :class:`antiamp.sweeps.engine.FusedBlocks`, for a model with fused grids
  (:class:`antiamp.registry.FusedGrid`): a block is one fused kernel pass over its
  cells, returning integer counts; the store holds the counts with their
  checksum, every other variable is recomputed from them;
- :class:`antiamp.sweeps.blocks.ModelBlocks`, for any other model: a block is one
  call of the model's ``run_cells``; the store holds a checksum of each cell's
  values.

A strategy has ``fingerprint``, ``shape``, ``dims``, ``chunk``, ``label``,
``device``, ``executor``, ``temporaries`` and the methods ``state``, ``begin``,
``open``, ``checker``, ``static``, ``whole_damaged`` and ``redo`` (see
:class:`Strategy`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Callable, Protocol

from antiamp.lazy import lazy

_runner = lazy("antiamp.runner")


class EngineError(RuntimeError):
    """A grid that cannot run as asked (store in use, store of another run...); one
    class for every model (``antiamp.sweeps.engine.SweepError`` is the same)."""


class Strategy(Protocol):
    """How one model's blocks are computed, written into a store and checked."""

    fingerprint: str  # what the store's numbers depend on
    shape: tuple  # the grid's cells
    dims: tuple  # their dimension names
    chunk: tuple  # one block's cells
    label: str  # the progress bar's
    device: str  # where the blocks run (a dask worker resource)
    executor: Any  # an ExecutorConfig to start a dask client for; None: in this process
    temporaries: tuple  # kinds of temporaries of killed runs removed after a run

    def state(self, store: Path, run_dir) -> str:
        """'new', 'resume' or 'complete'; EngineError for a store of something else."""

    def begin(self, store: Path, state: str, client, progress, log) -> bool:
        """Before the blocks: True when a new store was written whole here."""

    def open(self, store: Path, repair: bool):
        """The store's zarr group."""

    def checker(self) -> Callable:
        """``check(read, slab, region)`` of :func:`antiamp.sweeps.verify.scan`."""

    def static(self, group, repair: bool) -> list:
        """Names of the damaged arrays written once (rewritten with ``repair``)."""

    def whole_damaged(self, store: Path, attrs: dict, unfinished: list) -> bool:
        """True when something grid-wide is damaged: every block is redone."""

    def redo(self, store: Path, group, unfinished: list, found: list, attrs: dict,
             client, progress, log) -> None:
        """Run the unfinished blocks, rewrite or recompute the damaged ones, finish."""


def in_process(ex, device: str) -> bool:
    """Whether an executor is one worker in this process: run the blocks here, without
    a dask client, scheduler or dashboard (on a GPU this process owns the device and
    runs every block on it)."""
    return ex.kind == "local" and ((not ex.processes and ex.n_workers == 1)
                                   or _runner.device_of(device) == "cuda")


def store_lock(store: Path, read_only: bool = False):
    """The store's lock, the same for every model's store and every command."""
    from .lockpath import lock_store

    return lock_store(store, EngineError, "sweep", read_only=read_only)


@contextlib.contextmanager
def _old_objects_frozen():
    """The objects alive before a sweep's blocks run here (the imports and the plan,
    about 10^5 of them) kept out of the garbage collector's full passes while they run
    (:func:`gc.freeze`) and handed back after (:func:`gc.unfreeze`): one full pass over
    them cost about 0.1 s of CPU, as much as solving a 65,536-cell block of the fastest
    model.  Cycles among them that die meanwhile are collected after the blocks.  Left
    alone where the process froze objects already (its own choice).  A store's run
    (:func:`run_store`) holds it from its layout to its finish: after the blocks alone,
    the next full pass fell in the finish (90-108 ms of a 1,000-cell re-deliberation
    sweep's 0.56-0.76 s beyond its solvers; about 1 ms so).  Held inside its own hold
    (``run_tasks`` in ``run_store``), it asks the collector nothing:
    :func:`gc.get_freeze_count` walks every frozen object (about 13 ms for 4 x 10^5)."""
    import gc

    global _FREEZE_HELD
    if _FREEZE_HELD or gc.get_freeze_count():
        yield
        return
    gc.freeze()
    _FREEZE_HELD = True
    try:
        yield
    finally:
        _FREEZE_HELD = False
        gc.unfreeze()


#: Whether :func:`_old_objects_frozen` holds its freeze now (the outermost hold).
_FREEZE_HELD = False


def run_tasks(todo: list, task: Callable, done: Callable, *, client=None, executor=None,
              progress: bool | None = None, label: str, device: str,
              size: Callable) -> None:
    """Run every item of ``todo`` and call ``done(item, result)`` as each finishes.

    ``task(item)`` gives ``(function, args)``; it runs on ``client``, or on a client
    started for ``executor``, or (neither) here, one after another.  ``done`` may
    return a line for the progress bar; ``size(item)`` is the item's cells.
    """
    if client is None and executor is not None:
        from .executors import dask_client

        with dask_client(executor) as cl:
            return run_tasks(todo, task, done, client=cl, progress=progress, label=label,
                             device=device, size=size)
    from .progress import Progress

    # a bar on a terminal, a line every so often in a log
    bar = Progress(len(todo), sum(size(t) for t in todo), label, progress)
    try:
        if client is None:
            with _old_objects_frozen():
                for item in todo:
                    fn, args = task(item)
                    bar.update(size(item), done(item, fn(*args)))
        else:
            from distributed import as_completed

            from .executors import task_resources

            from antiamp.runner import kernel_interrupts

            res = task_resources(client, device)
            futs = {}
            # Armed while waiting: a Ctrl-C reaches the kernels that worker threads of
            # this process run (they read the same page) and they stop within a block,
            # rather than holding the cluster's close until their cells end.
            with kernel_interrupts():
                for item in todo:
                    fn, args = task(item)
                    futs[client.submit(fn, *args, pure=False, retries=3,
                                       resources=res)] = item
                for f in as_completed(list(futs)):
                    item = futs.pop(f)
                    result = f.result()
                    f.release()
                    bar.update(size(item), done(item, result))
    finally:
        bar.close()


def run_store(s: Strategy, store: Path, *, client=None, progress=None, log=print,
              run_dir=None) -> None:
    """Run (or resume) a sweep into ``store`` with the block strategy ``s``.

    Under the store's lock: its metadata repaired before a resume, its state
    checked (a store of something else is refused), then a new store's blocks run,
    or every finished block of an existing one verified and the rest run
    (:func:`verify` with ``repair``); the temporaries of killed runs removed last.
    """
    from antiamp.output import remove_temporaries

    from .metadata import repair_before_resume

    store = Path(store)
    store.parent.mkdir(parents=True, exist_ok=True)
    lock = store_lock(store)
    try:
        with _old_objects_frozen():  # the store's layout and finish too
            repair_before_resume(store, s.fingerprint, log, EngineError)
            state = s.state(store, run_dir)
            if not s.begin(store, state, client, progress, log):
                report = verify(s, store, repair=True, client=client, progress=progress,
                                log=log, resuming=state == "resume")
                if state == "complete" and report.ok:
                    log(f"{store} is complete; its {report.n_blocks} blocks verified")
            # Temporaries of runs killed while creating or replacing the store.
            remove_temporaries(store, s.temporaries)
    finally:
        lock.release()


def verify(s: Strategy, store: Path, *, repair: bool, client=None, progress=None, log=print,
           resuming: bool = False):
    """Verify every finished block of a store; with ``repair`` run the unfinished
    ones, recompute the damaged ones and mark the store complete.

    The store's ``complete`` attribute is cleared while anything is redone, so a
    reader never takes a store under repair for a finished one.  Returns a
    :class:`~antiamp.sweeps.verify.StoreReport`.
    """
    from .chunks import blocks
    from .metadata import consolidated_complete, finish, set_attr
    from .verify import block_name, scan, summarize

    store = Path(store)
    group = s.open(store, repair)
    unfinished, found = scan(group, s.shape, s.chunk, s.checker())
    static = s.static(group, repair)
    attrs = dict(group.attrs)
    n_blocks = len(list(blocks(s.shape, s.chunk)))
    if s.whole_damaged(store, attrs, unfinished):  # every block again
        found = [(r, "coordinates or grid-wide variables damaged", False)
                 for r in blocks(s.shape, s.chunk)]
    damaged = [(block_name(s.dims, r), what,
                "not repaired" if not repair else
                "rewritten from its sound class counts" if sound else "recomputed")
               for r, what, sound in found]
    report = summarize(store, n_blocks, unfinished, damaged, static,
                       complete=bool(attrs.get("complete")), resuming=resuming,
                       repair=repair, log=log)
    if not repair:
        return report
    if unfinished or found or static or not attrs.get("complete"):
        set_attr(store, "complete", 0)
        s.redo(store, group, unfinished, found, attrs, client, progress, log)
    elif not consolidated_complete(store):  # a write of the metadata that failed
        finish(store)
    return report
