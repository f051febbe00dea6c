"""Running a sweep: blocks of cells on dask, one Zarr store, resume, a lock.

For a model whose cells reduce to integer counts from one kernel (its
:class:`antiamp.registry.FusedGrid`).  The store is laid out as the final Dataset
from the start (dimensions named after the axes, then the model's own, such as
``protocol`` or ``transcript_class``); each block of cells is one Zarr chunk of
every per-cell variable.  Blocks run as dask tasks that return the kernel's
counts, one kernel call shared by the cells whose kernel inputs are equal; the
driver turns counts into the model's variables and writes the block's chunks,
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
from dataclasses import asdict
from pathlib import Path

import numpy as np
from antiamp.lazy import lazy
xr = lazy("xarray")

from antiamp._version import __version__
from antiamp.config import ConfigError, as_yaml, check_flags
from antiamp.output import remove_temporaries
from antiamp.provenance import global_attrs
_runner = lazy("antiamp.runner")

from .blocks import EngineError, config_dict, store_lock
from .chunks import blocks, cells_of as _cells_of, chunk_shape  # noqa: F401
from .fused import MAX_CELLS_PER_BLOCK, TARGET_BLOCK_INSTANCES, compute_block  # noqa: F401
from .verify import StoreReport, SlabReader, block_name, scan, stored as _stored, summarize, verify_static  # noqa: F401
from .metadata import consolidate, consolidated_complete, finish, record, repair_before_resume, set_attr  # noqa: F401
from .spec import SENSITIVITY, Plan, make_plan

#: Version of the store's layout (variables, checksums); part of the fingerprint.
STORE_LAYOUT = 3


#: A sweep that cannot run as asked (store in use, store of another sweep...): the
#: engine's one error class, whatever the model.
SweepError = EngineError


# ----------------------------------------------------------------------------- layout
def fingerprint(plan: Plan, chunk: tuple) -> str:
    """What a store's numbers depend on: resume only into a store with the same one."""
    c = plan.cfg
    blob = {
        "base": {s: asdict(getattr(plan.base, s)) for s in ("model", "judge", "protocol", "welfare")},
        "n": plan.base.run.n_instances, "seed": plan.base.run.seed,
        "axes": [(a.path, np.asarray(a.values).tolist()) for a in plan.axes],
        "design": plan.design, "crn": c.sweep.crn, "chunk": list(chunk),
        "version": __version__, "layout": STORE_LAYOUT,
    }
    return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()).hexdigest()[:16]


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
        **global_attrs(f"antiamp sweep '{plan.cfg.sweep.name}' of the {plan.cfg.model.name} model",
                       f"antiamp {__version__}, model {plan.cfg.model.name}"),
        "model": plan.cfg.model.name,
        "antiamp_version": __version__,
        "config": as_yaml(plan.cfg),
        "config_json": json.dumps(config_dict(plan.cfg), default=str),
        "seed": int(plan.base.run.seed),
        "n_instances": int(plan.base.run.n_instances),
        "design": plan.design,
        "axes": json.dumps([a.path for a in plan.axes]),
        "common_random_numbers": int(plan.cfg.sweep.crn),
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
    return store_path(plan.cfg.sweep.store, out_dir)


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
    fp = fingerprint(plan, chunk_shape(plan.shape, plan.base.run.n_instances,
                                       plan.cfg.sweep.cells_per_block))
    try:
        import zarr
        attrs = dict(zarr.open_group(str(store), mode="r").attrs)
    except Exception:
        attrs = {}
    if attrs.get("fingerprint") == fp:
        return "complete" if attrs.get("complete") else "resume"
    if plan.cfg.sweep.overwrite:
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
    from antiamp.registry import model_of

    from .blocks import open_store

    from antiamp.registry import get

    if not get(model_of(config_dict(cfg))).fused_grid:
        return _run_model_grid(cfg, out_dir, client=client, progress=progress, log=log,
                               dask=dask)
    plan = make_plan(cfg)
    n = plan.base.run.n_instances
    chunk = chunk_shape(plan.shape, n, plan.cfg.sweep.cells_per_block)
    fp = fingerprint(plan, chunk)
    store = resolve_store(plan, out_dir)
    store.parent.mkdir(parents=True, exist_ok=True)
    lock = store_lock(store)
    try:
        repair_before_resume(store, fp, log, SweepError)
        state = check_store(plan, store, out_dir)
        if state == "new":
            _create_store(plan, chunk, fp, store, log)
            log(f"sweep '{plan.cfg.sweep.name}': {plan.n_cells:,} cells x {n:,} instances "
                f"-> {store}")
        else:  # reading every finished block takes a while on a large store
            log(f"verifying the finished blocks of {store} "
                f"({len(list(blocks(plan.shape, chunk))):,} blocks in all)...")
        report = verify_store(plan, store, chunk, repair=True, client=client,
                              progress=progress, log=log,
                              resuming=state == "resume")
        if state == "complete" and not report.damaged:
            log(f"{store} is complete; its {report.n_blocks} blocks verified")
        # Temporaries of runs killed while creating or replacing this store.
        remove_temporaries(store, ("creating", "old"))
    finally:
        lock.release()
    return open_store(store, dask)


def _block_name(plan: Plan, region: tuple) -> str:
    return block_name(plan.dims, region)


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


def verify_store(plan: Plan, store: Path, chunk: tuple, *, repair: bool, client=None,
                 progress=None, log=print, resuming: bool = False) -> StoreReport:
    """Verify every finished block of a sweep store; with ``repair`` run the
    unfinished ones, recompute damaged ones (from their counts when the counts
    are sound, else with the kernel) and mark the store complete.

    The store's ``complete`` attribute is cleared while anything is redone, so a
    reader never takes a store under repair for a finished one.
    """
    import zarr

    group = zarr.open_group(str(store), mode="r+" if repair else "r")
    all_blocks = list(blocks(plan.shape, chunk))
    cname, nc = plan.fused.counts_name, plan.fused.n_counts
    slab_values: dict = {}

    def check(read, slab, r):
        """The block's counts against their checksum, every other variable against
        what its slab's counts give (computed once a slab)."""
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

    unfinished, found = scan(group, plan.shape, chunk, check)
    damaged, todo, from_counts = [], [], []
    for r, what, counts_sound in found:
        how = ("not repaired" if not repair else "rewritten from its sound class counts"
               if counts_sound else "recomputed")
        damaged.append((_block_name(plan, r), what, how))
        (from_counts if counts_sound else todo).append(r)
    static = _verify_static(plan, group, repair)
    report = summarize(store, len(all_blocks), unfinished, damaged, static,
                       complete=bool(group.attrs.get("complete")), resuming=resuming,
                       repair=repair, log=log)
    if not repair:
        return report
    if unfinished or todo or from_counts or static or not group.attrs.get("complete"):
        set_attr(store, "complete", 0)
        for r in from_counts:
            cells = _cells_of(r, plan.shape)
            counts = np.asarray(_stored(group, cname)[r]).reshape(-1, nc)
            write_block(plan, group, r, cells, counts)
        for r in todo:
            group["cell_done"][r] = False
        _execute(plan, unfinished + todo, group, client, progress)
        if plan.design in SENSITIVITY:  # derived from every cell: redone with any block
            _add_sensitivity(plan, store, log)
        finish(store)
    elif not consolidated_complete(store):  # a write of the metadata that failed
        finish(store)
    return report


def _add_sensitivity(plan: Plan, store: Path, log=print) -> None:
    """Write the design's sensitivity indices (antiamp.sensitivity) into the store."""
    from antiamp import sensitivity

    ds = xr.open_zarr(store, consolidated=False)
    idx = sensitivity.indices(ds, plan.axes, plan.design, seed=plan.cfg.sweep.design_seed,
                              levels=plan.cfg.sweep.morris_levels)
    attrs = dict(idx.attrs)
    idx = idx.drop_vars([c for c in idx.coords if c in ds.coords])
    # xarray's append mode writes the root attributes whole: keep the store's own
    idx.attrs = {**ds.attrs, **attrs}
    idx.to_zarr(store, mode="a", zarr_format=2, consolidated=False)
    log(f"sensitivity indices ({attrs['sensitivity_method']}) written into {store}")


def model_plan(cfg):
    """(GridPlan, ExecutorConfig) of the grid of a model without fused grids, validated."""
    from omegaconf import OmegaConf

    from .blocks import plan_grid
    from .spec import ExecutorConfig, run_schema, validate_executor

    d = config_dict(cfg)
    check_flags(d, run_schema())
    try:
        ex = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(ExecutorConfig),
                                                 d.get("executor") or {}))
    except Exception as exc:
        raise ConfigError(f"executor: {str(exc).splitlines()[0]}") from None
    plan = plan_grid(d)
    validate_executor(ex, plan.base.run.device)
    return plan, ex


def model_store(plan, out_dir) -> Path:
    return store_path(plan.spec.store, out_dir)


def _run_model_grid(cfg, out_dir, *, client=None, progress=None, log=print,
                    dask: bool | None = None) -> xr.Dataset:
    """Any registered model's grid through the generic block engine."""
    from .blocks import run_grid_store

    plan, ex = model_plan(cfg)
    # One in-process worker: run the blocks here, without a dask client (on a GPU
    # this process owns the device and runs every block on it).
    inproc = ex.kind == "local" and ((not ex.processes and ex.n_workers == 1)
                                     or _runner.device_of(plan.base.run.device) == "cuda")
    return run_grid_store(cfg, model_store(plan, out_dir), client=client,
                          executor=None if inproc else ex, progress=progress,
                          overwrite=plan.spec.overwrite, log=log, plan=plan, run_dir=out_dir,
                          dask=dask)


def _execute(plan: Plan, todo: list, group, client, progress) -> None:
    from .executors import dask_client, threads_per_task
    from .progress import Progress

    if not todo:
        return
    ex = plan.cfg.executor
    n, seed, crn = plan.base.run.n_instances, plan.base.run.seed, plan.cfg.sweep.crn
    nt = threads_per_task(ex, plan.base.run.n_threads)
    device = plan.base.run.device
    fused = plan.fused

    def inputs(cells):
        return fused.kernel_inputs(plan.columns, cells, None if crn else plan.streams[cells])
    total = sum(int(np.prod([s.stop - s.start for s in r])) for r in todo)
    # a bar on a terminal, a line every so often in a log
    bar = Progress(len(todo), total, "sweep", progress)
    t0 = time.perf_counter()

    arrays: dict = {}

    def finished(r, cells, counts):
        write_block(plan, group, r, cells, counts, arrays)
        rate = (bar.n_cells + len(cells)) * n / max(time.perf_counter() - t0, 1e-9)
        bar.update(len(cells), f"{rate / 1e6:,.0f} M instances/s")

    def submit_all(cl):
        from distributed import as_completed

        from .executors import task_resources

        futs, res = {}, task_resources(cl, device)
        for r in todo:
            cells = _cells_of(r, plan.shape)
            f = cl.submit(compute_block, fused.count, inputs(cells), n, seed, nt, device,
                          fused.n_counts, pure=False, retries=3, resources=res)
            futs[f] = (r, cells)
        for f in as_completed(list(futs)):
            r, cells = futs.pop(f)
            counts = f.result()
            f.release()
            finished(r, cells, counts)

    try:
        if client is not None:
            submit_all(client)
        elif ex.kind == "local" and ((not ex.processes and ex.n_workers == 1)
                                     or _runner.device_of(device) == "cuda"):
            # One in-process worker (on a GPU: this process owns the device and
            # runs every block on it; the kernel inputs go in, the counts come out):
            # the blocks run here, without a dask client, scheduler or dashboard.
            for r in todo:
                cells = _cells_of(r, plan.shape)
                finished(r, cells, compute_block(fused.count, inputs(cells), n, seed, nt,
                                                 device, fused.n_counts))
        else:
            with dask_client(ex) as cl:
                submit_all(cl)
    finally:
        bar.close()


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
    ``cell_done`` last.  ``arrays`` caches, between blocks, each array's handle and
    its chunk-file writer: until the store is consolidated, opening an array reads
    its metadata files again (about 1 ms an array, 60 arrays a block)."""
    from .chunkfiles import ChunkFile

    arrays = {} if arrays is None else arrays

    def arr(name):
        if name not in arrays:
            a = _stored(group, name)
            arrays[name] = (a, ChunkFile.of(a))
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
        a, cf = arr(name)
        at = cf.coords(region) if cf is not None else None
        if at is not None:
            cf.write(at, v)
        else:
            a[region] = v
