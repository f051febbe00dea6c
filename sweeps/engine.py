"""Running a sweep (:func:`run_sweep`, every model's) and the fused block strategy.

Every sweep has one plan (:class:`antiamp.sweeps.spec.Plan`, :func:`make_plan`)
and runs through the one driver (:mod:`antiamp.sweeps.driver`: lock, resume,
verification, repair, the blocks on dask or here); the plan's model decides the
block strategy (:func:`block_strategy`).  This module holds the block strategy of
a model whose cells reduce to integer counts from one kernel (its
:class:`antiamp.registry.FusedGrid`): :class:`FusedBlocks`.  Its store is laid out as the final Dataset
from the start (dimensions named after the axes, then the model's own, such as
``protocol`` or ``transcript_class``); each block of cells is one Zarr chunk of
every per-cell variable.  A block's task returns the kernel's counts, one kernel
call shared by the cells whose kernel inputs are equal; the driver process turns
counts into the model's variables and writes the block's chunks,
with a checksum of each cell's counts, marking ``cell_done`` last.  A rerun of the same sweep skips the
blocks already done; since counts are integers keyed only by (seed, cell
parameters, instance), the finished store does not depend on interruptions,
block order, workers or threads.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
from antiamp.lazy import lazy
xr = lazy("xarray")

from antiamp._version import __version__
from antiamp.config import as_yaml
from antiamp.provenance import global_attrs

from .blocks import EngineError, config_dict  # noqa: F401
from .chunks import blocks, cells_of as _cells_of, chunk_shape  # noqa: F401
from .fused import MAX_CELLS_PER_BLOCK, TARGET_BLOCK_INSTANCES, compute_block  # noqa: F401
from .verify import StoreReport, SlabReader, block_name, scan, stored as _stored, summarize, verify_static  # noqa: F401
from .metadata import consolidate, consolidated_complete, finish, record, repair_before_resume, set_attr  # noqa: F401
from .spec import SENSITIVITY, Plan, make_plan  # noqa: F401 (re-exported)
from .driver import in_process, run_store, run_tasks
from .executors import threads_per_task

#: Version of the store's layout (variables, checksums); part of the fingerprint.
STORE_LAYOUT = 3


#: A sweep that cannot run as asked (store in use, store of another sweep...): the
#: engine's one error class, whatever the model.
SweepError = EngineError


# ----------------------------------------------------------------------------- layout
def fingerprint(plan: Plan, chunk: tuple) -> str:
    """What a store's numbers depend on: resume only into a store with the same one."""
    blob = {
        "base": {s: asdict(getattr(plan.base, s)) for s in ("model", "judge", "protocol", "welfare")},
        "n": plan.base.run.n_instances, "seed": plan.base.run.seed,
        "axes": [(a.path, np.asarray(a.values).tolist()) for a in plan.axes],
        "design": plan.design, "crn": plan.spec.crn, "chunk": list(chunk),
        "version": __version__, "layout": STORE_LAYOUT,
    }
    return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()).hexdigest()[:16]


def stored_plan(plan: Plan, store: Path | None) -> Plan:
    """``plan`` in the blocks of the store at ``store`` where they are the only thing
    that differs (:func:`antiamp.sweeps.blocks.stored_blocks` for a model's grid).  A
    fused grid's store begun on the other device's default blocks (``run.device=cuda``
    blocks by a GPU's rate, :func:`~antiamp.sweeps.chunks.chunk_shape`) resumes in its
    own: the device changes no result.  A block size the sweep names is kept."""
    import math

    from .blocks import store_attrs, stored_blocks

    if plan.fused is None:
        return stored_blocks(plan, store)
    if plan.spec.cells_per_block or store is None or not Path(store).exists():
        return plan
    fp = store_attrs(store).get("fingerprint")
    if not fp or fp == fingerprint(plan, plan.chunk):
        return plan
    device = "cpu" if str(plan.base.run.device) == "cuda" else "cuda"
    chunk = chunk_shape(plan.shape, plan.n_instances, 0, device)
    other = replace(plan, cells_per_block=math.prod(chunk))
    return other if other.chunk == chunk and fingerprint(other, chunk) == fp else plan


def _template(plan: Plan, chunk: tuple, fp: str, created: str) -> tuple[xr.Dataset, dict]:
    shape, dims = plan.shape, plan.dims
    cdims = dims
    fused = plan.fused
    model_coords, variables, static = fused.layout(plan)
    from .chunks import placeholder

    coords = dict(model_coords)
    if plan.design == "grid":
        for a in plan.axes:
            coords[a.dim] = ((a.dim,), a.values, {"long_name": a.long_name, "units": a.units,
                                                  "config_path": a.path})
    else:
        coords["point"] = (("point",), np.arange(shape[0]), {"long_name": f"{plan.design} design point"})
        for a in plan.axes:
            coords[a.dim] = (("point",), a.values, {"long_name": a.long_name, "units": a.units,
                                                    "config_path": a.path})
    data_vars, numpy_vars = {}, {}
    for name, (tdims, tshape, attrs) in variables.items():
        data_vars[name] = (cdims + tuple(tdims), placeholder(shape + tuple(tshape), np.nan, float), dict(attrs))
    data_vars[fused.counts_name] = (cdims + (fused.counts_dim,),
                                    placeholder(shape + (fused.n_counts,), 0, np.int64),
                                    dict(fused.counts_attrs))
    data_vars["cell_done"] = (cdims, placeholder(shape, False, bool),
                              {"long_name": "cell simulated", "units": "1"})
    data_vars["cell_digest"] = (cdims, placeholder(shape, 0, np.uint64), {
        "long_name": f"checksum of the cell's {fused.counts_name.replace('_', ' ')}",
        "description": "verified by every rerun and by antiamp-check"})
    for name, (value, attrs) in static.items():
        numpy_vars[name] = (cdims, np.asarray(value).reshape(shape), dict(attrs))
    for name in list(data_vars):
        if f"{name}_se" in data_vars:
            data_vars[name][2]["ancillary_variables"] = f"{name}_se"
    ds = xr.Dataset({**data_vars, **numpy_vars}, coords=coords)
    ds.attrs.update({
        **global_attrs(f"antiamp sweep '{plan.spec.name}' of the {plan.cfg.model.name} model",
                       f"antiamp {__version__}, model {plan.cfg.model.name}"),
        "model": plan.cfg.model.name,
        "antiamp_version": __version__,
        "config": as_yaml(plan.cfg),
        "config_json": json.dumps(config_dict(plan.cfg), default=str),
        "seed": int(plan.base.run.seed),
        "n_instances": int(plan.base.run.n_instances),
        "design": plan.design,
        "axes": json.dumps([a.path for a in plan.axes]),
        "common_random_numbers": int(plan.spec.crn),
        "created": created,
        "fingerprint": fp,
        "complete": 0,
    })
    # The store's chunks: a block's cells, trailing axes whole.
    encoding = {name: {"chunks": chunk + ds[name].shape[len(cdims):]}
                for name in list(data_vars) + list(numpy_vars)}
    return ds, encoding


# ----------------------------------------------------------------------------- store
def store_path(setting: str, out_dir: str | Path | None) -> Path:
    """``sweep.store``: absolute as given, relative inside the run directory."""
    store = Path(setting).expanduser()
    return store if store.is_absolute() else Path(out_dir or ".") / store


def resolve_store(plan: Plan, out_dir: str | Path | None) -> Path:
    return store_path(plan.spec.store, out_dir)


def check_store(plan: Plan, store: Path, run_dir=None) -> str:
    """'new', 'resume' or 'complete'; raise SweepError for a store of another sweep,
    and for a target that is not ours to replace (a directory antiamp did not
    write, the current or run directory or a parent of either)."""
    from antiamp.output import OutputError, check_replaceable

    from .lockpath import refuse_link

    refuse_link(store, SweepError)
    try:
        check_replaceable(store, others=[run_dir] if run_dir else [])
    except OutputError as exc:
        if store.exists() and not _is_ours(store):
            raise SweepError(f"{exc} (sweep.overwrite=true does not change this)") from None
        raise SweepError(str(exc)) from None
    if not store.exists():
        return "new"
    fp = fingerprint(plan, plan.chunk)
    try:
        import zarr
        attrs = dict(zarr.open_group(str(store), mode="r").attrs)
    except Exception:
        attrs = {}
    if attrs.get("fingerprint") == fp:
        return "complete" if attrs.get("complete") else "resume"
    if plan.spec.overwrite:
        return "new"
    what = "a different sweep" if "fingerprint" in attrs else "something that is not a sweep store"
    raise SweepError(
        f"{store} holds {what}; rerun the same sweep to resume it, choose another store "
        "(sweep.store=... or sweep.name=...), or replace it with sweep.overwrite=true"
    )


def _is_ours(store: Path) -> bool:
    from antiamp.output import is_antiamp_store

    return is_antiamp_store(store)


def _create_store(plan: Plan, chunk: tuple, fp: str, store: Path, log) -> None:
    """Lay out a new store (:func:`antiamp.sweeps.cellstore.create_store`)."""
    from .cellstore import create_store

    created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    ds, enc = _template(plan, chunk, fp, created)
    create_store(ds, enc, store, log)


def run_sweep(cfg, out_dir=None, *, client=None, progress=None, log=print,
              dask: bool | None = None) -> xr.Dataset:
    """Run (or resume) a sweep and return the finished store opened with xarray.

    Every model's sweep runs through the one driver (:func:`antiamp.sweeps.driver.run_store`);
    only its block strategy differs: one fused kernel pass a block for a model with
    fused grids (:class:`FusedBlocks`), the model's ``run_cells`` a block for any
    other (:class:`antiamp.sweeps.blocks.ModelBlocks`).

    Parameters
    ----------
    cfg : SweepConfig, DictConfig or dict
        Base config plus ``sweep`` and ``executor`` nodes.
    out_dir : path, optional
        Directory of a relative ``sweep.store`` (the Hydra run directory in the CLI).
    client : distributed.Client, optional
        Use this dask client instead of starting one from ``executor``.
    progress : bool, optional
        Progress bar (default: on a terminal).
    log : callable, optional
        Called with each message of the run (the sweep's size, the verification of
        a resumed store's finished blocks); default ``print``.
    dask : bool, optional
        Open the finished store with dask arrays (True) or without dask (False:
        xarray's lazy arrays, each variable read on first use; no dask import); by
        default with dask only for a store larger than
        :data:`~antiamp.sweeps.blocks.DASK_ABOVE_BYTES` in memory.
    """
    from .blocks import open_store

    plan = make_plan(cfg)
    store = resolve_store(plan, out_dir)
    plan = stored_plan(plan, store)  # an earlier default's blocks: the store's kept
    strategy = block_strategy(plan)
    run_store(strategy, store, client=client, progress=progress, log=log, run_dir=out_dir)
    return open_store(store, dask)


def block_strategy(plan: Plan):
    """The block strategy of a sweep's plan (:mod:`antiamp.sweeps.driver`): one fused
    kernel pass a block for a plan with fused grids (:class:`FusedBlocks`), the
    model's ``run_cells`` a block for any other
    (:class:`antiamp.sweeps.blocks.ModelBlocks`)."""
    ex = plan.executor  # None: the blocks run in this process
    if ex is not None and in_process(ex, plan.base.run.device):
        ex = None
    if plan.fused is not None:
        return FusedBlocks(plan, ex)
    from .blocks import ModelBlocks

    return ModelBlocks(plan, ex, plan.spec.overwrite)


class FusedBlocks:
    """The block strategy of a model with fused grids (:mod:`antiamp.sweeps.driver`):
    a block is one fused kernel pass over its cells on common random numbers
    (:func:`~antiamp.sweeps.fused.compute_block`), returning each cell's counts; the
    store is laid out whole before the first block, each block's counts written
    with their checksum and every other variable computed from them
    (:func:`write_block`), and a damaged block whose counts are sound is rewritten
    from them without the kernel."""

    label = "sweep"
    temporaries = ("creating", "old")

    def __init__(self, plan: Plan, executor=None):
        """``executor``: an ExecutorConfig to start a dask client for; None: run the
        blocks in this process."""
        self.plan, self.executor = plan, executor
        self.shape, self.dims = plan.shape, plan.dims
        self.chunk = plan.chunk
        self.fingerprint = fingerprint(plan, self.chunk)
        self.device = plan.base.run.device

    def state(self, store: Path, run_dir) -> str:
        return check_store(self.plan, store, run_dir)

    def begin(self, store: Path, state: str, client, progress, log) -> bool:
        """A new store laid out whole (its blocks then run as unfinished ones)."""
        plan = self.plan
        if state == "new":
            _create_store(plan, self.chunk, self.fingerprint, store, log)
            log(f"sweep '{plan.spec.name}': {plan.n_cells:,} cells x "
                f"{plan.n_instances:,} instances -> {store}")
        else:  # reading every finished block takes a while on a large store
            log(f"verifying the finished blocks of {store} "
                f"({len(list(blocks(plan.shape, self.chunk))):,} blocks in all)...")
        return False

    def open(self, store: Path, repair: bool):
        import zarr

        from antiamp.inputs import special_entry
        from antiamp.output import OutputError

        special = special_entry(store)  # a FIFO in the store would block its reading
        if special is not None:
            raise OutputError(f"{store} is not a store antiamp wrote: {special}; antiamp "
                              "reads only regular files in a store. Move it away or choose "
                              "another sweep.store")
        return zarr.open_group(str(store), mode="r+" if repair else "r")

    def checker(self):
        """The block's counts against their checksum, every other variable against
        what its slab's counts give (computed once a slab)."""
        plan = self.plan
        cname, nc = plan.fused.counts_name, plan.fused.n_counts
        slab_values: dict = {}

        def check(read, slab, r):
            def want():
                if slab_values.get("slab") != slab:
                    slab_values.clear()
                    slab_values["slab"] = slab
                    try:
                        counts = np.asarray(read(cname, slab)).reshape(-1, nc)
                    except Exception:  # a damaged chunk elsewhere in the slab: this block alone
                        counts = np.asarray(read(cname, r)).reshape(-1, nc)
                        return block_values(plan, r, _cells_of(r, plan.shape), counts)
                    with np.errstate(all="ignore"):
                        slab_values["values"] = block_values(
                            plan, slab, _cells_of(slab, plan.shape), counts)
                rel = read.rel(r)
                return {k: v[rel] for k, v in slab_values["values"].items()}
            return verify_block(plan, read, r, want)
        return check

    def static(self, group, repair: bool) -> list:
        return _verify_static(self.plan, group, repair)

    def whole_damaged(self, store: Path, attrs: dict, unfinished: list) -> bool:
        return False  # the static arrays are verified one by one

    def redo(self, store: Path, group, unfinished: list, found: list, attrs: dict,
             client, progress, log) -> None:
        plan = self.plan
        cname, nc = plan.fused.counts_name, plan.fused.n_counts
        todo = [r for r, _, sound in found if not sound]
        for r in (r for r, _, sound in found if sound):  # from their sound counts
            cells = _cells_of(r, plan.shape)
            counts = np.asarray(_stored(group, cname)[r]).reshape(-1, nc)
            write_block(plan, group, r, cells, counts)
        for r in todo:
            group["cell_done"][r] = False
        self.run(unfinished + todo, group, client, progress)
        if plan.design in SENSITIVITY:  # derived from every cell: redone with any block
            _add_sensitivity(plan, store, log)
        finish(store)

    def run(self, todo: list, group, client, progress) -> None:
        """The blocks ``todo`` (regions), each written as it finishes."""
        plan = self.plan
        n, seed, crn = plan.base.run.n_instances, plan.base.run.seed, plan.spec.crn
        nt = threads_per_task(plan.executor, plan.base.run.n_threads)
        device, fused = self.device, plan.fused
        arrays: dict = {}
        t0, written = time.perf_counter(), [0]

        def task(r):
            cells = _cells_of(r, plan.shape)
            inputs = fused.kernel_inputs(plan.columns, cells,
                                         None if crn else plan.streams[cells])
            return compute_block, (fused.count, inputs, n, seed, nt, device, fused.n_counts)

        def finished(r, counts):
            cells = _cells_of(r, plan.shape)
            write_block(plan, group, r, cells, counts, arrays)
            written[0] += len(cells)
            rate = written[0] * n / max(time.perf_counter() - t0, 1e-9)
            return f"{rate / 1e6:,.0f} M instances/s"

        run_tasks(todo, task, finished, client=client, executor=self.executor,
                  progress=progress, label=self.label, device=device,
                  size=lambda r: int(np.prod([s.stop - s.start for s in r])))


def verify_block(plan: Plan, read, region: tuple, want=None) -> tuple[bool, str] | None:
    """None if a finished block is sound; else (whether its class counts are
    sound, what is wrong).  ``read(name, region)`` reads a variable; ``want()``,
    if given, returns what the block's variables must be (computed for a whole
    slab at once).

    The class counts must sum to n in every cell and match the checksum written
    with them; every other variable must equal what the counts give (metrics,
    standard errors and closed forms are recomputed and compared, NaN = NaN).
    """
    fused = plan.fused
    what = fused.counts_name.replace("_", " ")
    cells = _cells_of(region, plan.shape)
    try:
        counts = np.asarray(read(fused.counts_name, region)).reshape(-1, fused.n_counts)
        digest = np.asarray(read("cell_digest", region)).ravel()
    except Exception as exc:
        return False, f"{what} unreadable ({type(exc).__name__})"
    if fused.counts_total and not (counts.sum(axis=1) == plan.base.run.n_instances).all():
        return False, f"{what} do not sum to the instances"
    if not np.array_equal(cell_digests(counts, cells), digest):
        return False, f"{what} do not match their checksum"
    expected = want() if want is not None else block_values(plan, region, cells, counts)
    for name, value in expected.items():
        try:
            have = np.asarray(read(name, region))
        except Exception as exc:
            return True, f"{name} unreadable ({type(exc).__name__})"
        if not np.array_equal(have, value, equal_nan=True):
            return True, f"{name} differs from what the {what} give"
    return None


def _verify_static(plan: Plan, group, fix: bool) -> list:
    """Coordinates and the model's static arrays (written at creation) against the
    plan; names the damaged ones (and with ``fix`` rewrites them)."""
    want = {name: np.asarray(value).reshape(plan.shape)
            for name, (value, _) in plan.fused.layout(plan)[2].items()}
    for a in plan.axes:
        want[a.dim] = np.asarray(a.values)
    if plan.design != "grid":
        want["point"] = np.arange(plan.shape[0])
    return verify_static(group, want, fix)


def _add_sensitivity(plan: Plan, store: Path, log=print) -> None:
    """Write the design's sensitivity indices (antiamp.sensitivity) into the store."""
    from antiamp import sensitivity

    ds = xr.open_zarr(store, consolidated=False)
    idx = sensitivity.indices(ds, plan.axes, plan.design, seed=plan.spec.design_seed,
                              levels=plan.spec.morris_levels)
    attrs = dict(idx.attrs)
    idx = idx.drop_vars([c for c in idx.coords if c in ds.coords])
    # xarray's append mode writes the root attributes whole: keep the store's own
    idx.attrs = {**ds.attrs, **attrs}
    idx.to_zarr(store, mode="a", zarr_format=2, consolidated=False)
    log(f"sensitivity indices ({attrs['sensitivity_method']}) written into {store}")


def block_values(plan: Plan, region: tuple, cells: np.ndarray, counts: np.ndarray) -> dict:
    """Every derived per-cell variable of one block, computed from its counts."""
    shape = tuple(s.stop - s.start for s in region)
    vals = plan.fused.values(plan.columns, cells, counts, plan.n_instances)
    variables = _variables(plan.fused)
    return {name: np.asarray(v).reshape(shape + tuple(variables[name][1]))
            for name, v in vals.items()}


def _variables(fused) -> dict:
    """The model's derived variables (its layout without a plan), kept per model."""
    key = id(fused)
    if key not in _VARIABLES or _VARIABLES[key][0] is not fused:
        _VARIABLES[key] = (fused, fused.layout(None)[1])
    return _VARIABLES[key][1]


_VARIABLES: dict = {}


def cell_digests(counts: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """A 64-bit checksum of each cell's class counts (and its index in the grid).

    Written by hand because it must be vectorised: hashlib hashes one buffer per
    call, about 1 us per cell, which a 10^7-cell sweep would feel; this is a
    multiply-xorshift mix over the 32 counts, for detecting damage (deleted or
    altered chunks), not for security.  Never 0, the fill of a missing chunk.
    """
    h = np.asarray(cells, np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x632BE59BD9B4E019)
    with np.errstate(over="ignore"):
        for j in range(counts.shape[1]):
            h ^= counts[:, j].astype(np.uint64)
            h *= np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(31)
    return h | np.uint64(1)


def write_block(plan: Plan, group, region: tuple, cells: np.ndarray, counts: np.ndarray,
                arrays: dict | None = None):
    """Metrics of one block's cells into its chunks; the counts' checksum, then
    ``cell_done`` last.  ``arrays`` caches, between blocks, each array's chunk-file
    writer and (where one was needed) its zarr handle: the writer is made from the
    array's metadata file alone (:meth:`ChunkFile.at`); until the store is
    consolidated, opening an array through zarr reads its metadata files again (about
    0.5 ms an array, 60 arrays a block), so a handle is opened only for a chunk the
    writer cannot take, or an array it cannot make a writer for (not ours to write by
    hand, or under a store's former name)."""
    from zarr.storage import LocalStore

    from .chunkfiles import ChunkFile

    arrays = {} if arrays is None else arrays
    root = (Path(group.store.root) / group.path if isinstance(group.store, LocalStore)
            else None)

    def arr(name):
        if name not in arrays:
            cf = ChunkFile.at(root / name) if root is not None else None
            if cf is None:  # not ours, or under a former name: opened through zarr
                a = _stored(group, name)
                arrays[name] = [a, ChunkFile.of(a)]
            else:
                arrays[name] = [None, cf]
        return arrays[name]

    shape = tuple(s.stop - s.start for s in region)
    values = block_values(plan, region, cells, counts)
    values[plan.fused.counts_name] = counts.reshape(shape + (plan.fused.n_counts,))
    values["cell_digest"] = cell_digests(counts, cells).reshape(shape)
    values["cell_done"] = np.ones(shape, bool)  # last (dicts keep their order)
    # A block is one chunk of every array: written straight to the chunk files (about
    # 0.2 ms each, against zarr's 1.2 ms: sweeps/chunkfiles.py), one
    # after another, so that an error stops the block before cell_done.  A chunk
    # that cannot be written that way goes through zarr.
    for name, v in values.items():
        entry = arr(name)
        cf = entry[1]
        at = cf.coords(region) if cf is not None else None
        if at is not None:
            cf.write(at, v)
        else:
            if entry[0] is None:
                entry[0] = _stored(group, name)
            entry[0][region] = v
