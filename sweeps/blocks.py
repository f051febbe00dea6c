"""The generic engine: any registered model's grid, in blocks, in memory or resumable.

A grid (or design) is cut into blocks of consecutive cells (C order).  Each block
is one call of the model's ``run_cells`` (kernel, solver and metrics together),
run as one dask task, so equilibrium and fixed-point grids spread over workers
like the kernels do.  A block's result depends only on its cells' configs
(common random numbers: each model draws with a fixed stream, whatever the cells
beside it), so the assembled grid does not depend on the block size, the order
in which blocks finish, the workers or interruptions.

A grid with a store runs through the one sweep driver (:mod:`antiamp.sweeps.driver`)
with this module's block strategy, :class:`ModelBlocks`, and is written in place
(:mod:`antiamp.sweeps.cellstore`): the
store is laid out from the first block to finish, each block is one chunk of every
per-cell array, written as it finishes with a checksum of each cell and
``cell_done`` last; the store is marked ``complete`` once every block is written
and verified.  A kill at any moment leaves a store that the same command verifies
and resumes (:func:`antiamp.sweeps.driver.verify`, the one verification entry of
every model's store), ending bit for bit as an uninterrupted run.  The fused grids' strategy
(:class:`antiamp.sweeps.engine.FusedBlocks`) writes their counts the same way.

Earlier versions kept a model's finished blocks in ``<store>.partial/`` until the
grid was done; such a folder is never read now: it is named, and removed (it is
provably antiamp's: its marker) only with ``sweep.overwrite=true``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
from antiamp.lazy import lazy
xr = lazy("xarray")

from antiamp._version import __version__
from antiamp.config import DEFAULT_MODEL
from antiamp.ownership import PARTIAL as MARKER, read_marker  # noqa: F401 (re-exported)
from antiamp.registry import Model, get, to_model_config

from .cellstore import SUMMED_ATTRS, fill_of
from .driver import EngineError, run_store, run_tasks, store_lock  # noqa: F401 (re-exported)
from .spec import (SENSITIVITY, CellBlock, CellGrid, Plan, SweepSpec, axis_coords,  # noqa: F401
                   config_dict, plan_grid, sweep_spec)  # (re-exported)

#: Version of a model grid store's layout: a cell checksum per cell (``cell_digest``)
#: and ``cell_done``, written in place block by block (4; 3 and before: written
#: whole, a checksum per block).  Part of the fingerprint.
STORE_LAYOUT = 4
STORE_MARKER = "antiamp_store"
#: The run settings a grid's numbers depend on (its fingerprint's part of ``run``).
RESULT_RUN_FIELDS = ("n_instances", "seed", "device")


# ----------------------------------------------------------------------------- plan
def grid_fingerprint(plan: Plan) -> str:
    """What a model grid store's numbers depend on: resume only into a run with the
    same one."""
    config = config_dict(plan.base)
    # Of the run's settings only those a result depends on: the threads, the
    # instances a kernel call, the progress bar and the figure change nothing, so
    # a run resumes whatever they are.
    config["run"] = {k: config["run"][k] for k in RESULT_RUN_FIELDS if k in config["run"]}
    spec = plan.spec
    blob = {
        "model": plan.model.name, "config": config,
        "axes": [(a.path, np.asarray(a.values).tolist()) for a in plan.axes],
        "design": spec.design, "n_points": spec.n_points,
        **({"morris_levels": spec.morris_levels} if spec.design == "morris" else {}),
        "design_seed": spec.design_seed, "block": plan.cells_per_block,
        "version": __version__, "layout": STORE_LAYOUT,
    }
    return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()
                          ).hexdigest()[:16]


# ----------------------------------------------------------------------------- tasks
def run_block(model_name: str, base: Any, spec: Any, start: int, stop: int) -> xr.Dataset:
    """Cells ``start..stop-1`` of a grid: the function dask workers run.

    Takes the model's name, the validated base config (or a plain dict, validated
    here) and the sweep, so that a worker rebuilds exactly the driver's cells
    (already validated by the driver); a third-party model has to be installed on
    the workers.
    """
    model = get(model_name)
    if isinstance(base, dict):
        model, base = to_model_config(base, model)
    grid = CellGrid(base, sweep_spec(spec), validator=lambda c: None)
    cells = CellBlock(grid, start, stop)
    from antiamp.runner import kernel_interrupts

    with kernel_interrupts():  # Ctrl-C in any model's kernel: a KeyboardInterrupt
        fused = model.fused_grid
        if fused is not None and fused.dataset is not None:
            ds = fused_block(fused, base, cells)
        else:
            ds = model.run_cells(base, cells)
    if "cell" not in ds.dims or ds.sizes["cell"] != len(cells):
        raise RuntimeError(f"model {model_name!r}: run_cells returned no 'cell' dimension of "
                           f"length {len(cells)}")
    return ds


def fused_block(fused, base, cells: CellBlock) -> xr.Dataset:
    """A block of a model with fused grids: one kernel pass over its cells on common
    random numbers (a call shared by the cells whose kernel inputs are equal), then
    the model's Dataset from the counts (``FusedGrid.dataset``)."""
    from .fused import MAX_CELLS_PER_BLOCK, compute_block

    cols = fused.columns(cells, None)
    # At most the store's largest block a kernel call (its memory grows with the cells).
    parts = []
    for a in range(0, len(cells), MAX_CELLS_PER_BLOCK):
        idx = np.arange(a, min(a + MAX_CELLS_PER_BLOCK, len(cells)))
        parts.append(compute_block(fused.count, fused.kernel_inputs(cols, idx, None),
                                   int(base.run.n_instances), int(base.run.seed),
                                   base.run.n_threads, base.run.device, fused.n_counts))
    return fused.dataset(cells, cols, np.concatenate(parts))


def _task_args(plan: Plan) -> tuple:
    return plan.model.name, plan.base, plan.spec


# ----------------------------------------------------------------------------- assembly
def assemble(plan: Plan, parts: list, created: str | None = None) -> xr.Dataset:
    """Blocks (in cell order) -> one Dataset with the grid's dimensions.

    Dimensions that vary in length between blocks (equilibria found, items held)
    are padded: NaN for numbers, False for flags, -1 for counts, "" for labels.
    """
    first = parts[0]
    types = {k: first.variables[k].dtype for k in first.data_vars}
    fill = {k: fill_of(t) for k, t in types.items()}
    ds = parts[0] if len(parts) == 1 else xr.concat(
        parts, dim="cell", data_vars="minimal", coords="minimal", compat="override",
        join="outer", fill_value=fill, combine_attrs="override")
    for k, v in fill.items():  # padding must not change a variable's type
        if k in ds and ds.variables[k].dtype != types[k] and types[k].kind in "biu":
            ds[k] = ds[k].fillna(v).astype(types[k])
    shape, dims = plan.grid.shape, plan.grid.dims
    data = {}
    for name in ds.data_vars:
        # The Variables, not DataArrays (each of those a construction with its
        # coordinates), and a transpose only where "cell" is not already first: for a
        # fast model's grid these were a fifth of the whole call.
        v = ds.variables[name]
        if "cell" in v.dims:
            if v.dims[0] != "cell":
                v = v.transpose("cell", ...)
            data[name] = (tuple(dims) + v.dims[1:],
                          v.values.reshape(tuple(shape) + v.shape[1:]), v.attrs)
        else:
            data[name] = v
    coords = {k: v for k, v in ds.coords.items() if "cell" not in v.dims}
    out = xr.Dataset(data, coords=axis_coords(plan.grid.axes, dims, coords))
    attrs = dict(first.attrs)
    for k in SUMMED_ATTRS:
        if k in attrs:
            attrs[k] = type(attrs[k])(sum(p.attrs.get(k, 0) for p in parts))
    reports = [f"block {b}: {p.attrs['solver_report']}" for b, p in enumerate(parts)
               if p.attrs.get("solver_report") not in (None, "no issues",
                                                         "all methods converged")]
    if "solver_report" in attrs:
        attrs["solver_report"] = "\n".join(reports) if reports else first.attrs["solver_report"]
    out.attrs = attrs
    out.attrs.update(standard_attrs(plan.model, plan.base, created, out.attrs.get("title")))
    out.attrs.update({"axes": json.dumps([a.path for a in plan.grid.axes]),
                      "design": plan.spec.design, "n_cells": int(plan.n_cells),
                      "cells_per_block": int(plan.cells_per_block)})
    return out


def standard_attrs(model: Model, cfg, created: str | None = None,
                   title: str | None = None) -> dict:
    """What every output of every model carries (cell runs and grids alike): its
    config, seed and time, the CF global attributes and the provenance
    (:mod:`antiamp.provenance`; ``title``: the output's own, if it has one)."""
    import yaml

    from antiamp.provenance import model_attrs

    # The sections this model reads (the root schema carries every model's).
    keep = set(model.uses) | set(model.sections)
    plain = {k: v for k, v in config_dict(cfg).items() if k in keep}
    key = json.dumps(plain)  # in its order: the YAML keeps it
    if key not in _YAML:  # a grid's config is dumped once, not once a call
        if len(_YAML) > 64:
            _YAML.clear()
        _YAML[key] = yaml.safe_dump(plain, sort_keys=False)
    return {
        **model_attrs(model, title),
        "model": model.name,
        "model_title": model.title,
        "antiamp_version": __version__,
        "config": _YAML[key],
        "config_json": json.dumps(plain, sort_keys=True),
        "seed": int(cfg.run.seed),
        "created": created or _now(),
    }


_YAML: dict = {}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def label_metrics(ds: xr.Dataset) -> xr.Dataset:
    """Link every metric to its standard error (CF ``ancillary_variables``) and give
    its standard error and exact value the result schema's attributes
    (:mod:`antiamp.schema`)."""
    from antiamp.schema import label

    return label(ds)


# ----------------------------------------------------------------------------- runs
def run_cell(cfg: Any) -> xr.Dataset:
    """One cell of any model: the model's Dataset without the ``cell`` dimension."""
    return cell_dataset(*to_model_config(cfg))


def cell_dataset(model: Model, c, **kwargs) -> xr.Dataset:
    """One cell of ``model`` whose config ``c`` is already validated (by
    :func:`antiamp.registry.to_model_config`): through the model's one-cell path, or
    one cell of ``run_cells`` for a model without one; labelled as every output is."""
    from antiamp.runner import kernel_interrupts

    if model.run_cell is not None:
        with kernel_interrupts():  # Ctrl-C in any model's kernel: a KeyboardInterrupt
            ds = model.run_cell(c, **kwargs)
    else:
        if kwargs:
            raise TypeError(f"simulate() got keyword arguments {sorted(kwargs)} that model "
                            f"{model.name} does not take")
        with kernel_interrupts():  # Ctrl-C in any model's kernel: a KeyboardInterrupt
            ds = model.run_cells(c, [c]).isel(cell=0, drop=True)
    ds.attrs.update(standard_attrs(model, c, title=ds.attrs.get("title")))
    return label_metrics(ds)


def run_grid(cfg: Any, *, client=None, cells_per_block: int | None = None,
             progress: bool | None = None) -> xr.Dataset:
    """A model's grid in memory (no store): blocks on ``client`` if given, else here.

    Without ``cells_per_block`` the grid is one block (one kernel call per model
    pass, as a single solve).
    """
    plan = plan_grid(cfg, cells_per_block=cells_per_block or 10**9)
    parts = _run_blocks(plan, plan.blocks(), client, None, progress, lambda b, ds: None)
    return with_sensitivity(plan, label_metrics(assemble(plan, [parts[b] for b in
                                                                plan.blocks()])))


def with_sensitivity(plan: Plan, ds: xr.Dataset) -> xr.Dataset:
    """A sensitivity design's grid with its indices (antiamp.sensitivity), computed
    from every cell: added whenever the grid is assembled or repaired."""
    if plan.spec.design not in SENSITIVITY:
        return ds
    from antiamp.sensitivity import with_indices

    return with_indices(ds, plan.grid.axes, plan.spec)


def _run_blocks(plan: Plan, todo: list, client, executor, progress, done,
                keep: bool = True) -> dict:
    """Blocks ``todo`` ((start, stop) of each) on ``client``, or on a client for
    ``executor``, or here (:func:`antiamp.sweeps.driver.run_tasks`); ``done(block,
    ds)`` as each finishes; returns {block: ds} (nothing with ``keep=False``: a
    store's blocks leave memory once written)."""
    args, out = _task_args(plan), {}

    def finished(blk, ds):
        done(blk, ds)
        if keep:
            out[blk] = ds

    # run_block looked up at each call (a test may replace it)
    run_tasks(todo, lambda blk: (run_block, (*args, *blk)), finished, client=client,
              executor=executor, progress=progress, label=plan.model.name,
              device=plan.base.run.device, size=lambda blk: blk[1] - blk[0])
    return out


# ----------------------------------------------------------------------------- store
def partial_dir(store: Path) -> Path:
    return store.with_name(store.name + ".partial")


def store_state(plan: Plan, store: Path, overwrite: bool = False, run_dir=None) -> str:
    """'new', 'resume' or 'complete'; EngineError for a store of something else, or
    for the current or run directory or a parent of either."""
    from antiamp.output import OutputError, check_replaceable

    from .lockpath import refuse_link

    refuse_link(store, EngineError)
    try:
        check_replaceable(store, others=[run_dir] if run_dir else [])
    except OutputError as exc:
        if store.exists() and not store_attrs(store).get(STORE_MARKER):
            raise EngineError(f"{exc} (sweep.overwrite=true does not change this)") from None
        raise EngineError(str(exc)) from None
    fp = grid_fingerprint(plan)
    part = partial_dir(store)
    if store.exists():
        from antiamp.output import is_antiamp_store

        attrs = store_attrs(store)
        if attrs.get("fingerprint") == fp and attrs.get(STORE_MARKER):
            return "complete" if attrs.get("complete") else "resume"
        marked = bool(attrs.get(STORE_MARKER))  # a model grid's store
        ours = marked or is_antiamp_store(store)
        if not overwrite:
            other = attrs.get("model") or DEFAULT_MODEL
            what = ("a different run" if marked else
                    f"a store of another kind (model={other}, written by another antiamp "
                    "command or engine)" if ours else "something that is not an antiamp store")
            raise EngineError(
                f"{store} holds {what}; "
                + ("rerun the same command to resume it, " if marked else "")
                + "choose another store (sweep.store=... or sweep.name=...), or replace it "
                "with sweep.overwrite=true")
        if not ours:
            raise EngineError(f"{store} is not an antiamp store; sweep.overwrite=true replaces "
                              "only stores that antiamp wrote. Choose another sweep.store")
    if part.exists():
        m = read_marker(part)
        if m is None:
            raise EngineError(f"{part} is not an antiamp partial run (or holds files antiamp "
                              "did not write); antiamp never removes it. Move it away or "
                              "choose another sweep.store")
        if not overwrite:
            raise EngineError(f"{part} holds an unfinished run of an earlier antiamp (blocks "
                              "kept beside the store, a layout this version does not resume); "
                              "replace it with sweep.overwrite=true")
    return "new"


def stored_blocks(plan: Plan, store: Path | None, attrs: dict | None = None) -> Plan:
    """``plan`` in the blocks of the store at ``store`` where they are the only thing
    that differs: a store of the same sweep written in another model default's
    blocks (the default changed since) is resumed, verified and repaired in its own
    blocks (``attrs``: the store's attributes where read already).  A block size the
    sweep names (``sweep.cells_per_block``) is kept: a
    store of other blocks is then another sweep, as before."""
    if plan.fused is not None or plan.spec.cells_per_block:
        return plan
    if attrs is None:  # else the store's attributes, already read
        if store is None or not Path(store).exists():
            return plan
        attrs = store_attrs(store)
    k = attrs.get("cells_per_block")
    if not attrs.get(STORE_MARKER) or not isinstance(k, int) or k < 1:
        return plan
    k = min(k, plan.n_cells)
    if k == plan.cells_per_block:
        return plan
    other = dataclasses.replace(plan, cells_per_block=k)
    return other if grid_fingerprint(other) == attrs.get("fingerprint") else plan


def store_attrs(store: Path) -> dict:
    """A store's group attributes ({} where there is none, or it cannot be read)."""
    try:
        import zarr

        return dict(zarr.open_group(str(store), mode="r").attrs)
    except Exception:
        return {}


#: A finished store larger than this (its variables in memory) opens with dask by default.
DASK_ABOVE_BYTES = 1 << 30


def open_store(store, dask: bool | None = None) -> xr.Dataset:
    """A finished store opened lazily: with dask arrays (``dask=True``), or with
    xarray's own lazy arrays (``dask=False``: each variable read whole on first use,
    no dask import), or (``None``) with dask only for a store whose variables would
    take more than :data:`DASK_ABOVE_BYTES` in memory.

    A store of a few thousand cells loads two to three times faster without dask
    (one read of each array instead of a task per chunk); dask is for stores that
    should be read, reduced or written out in pieces."""
    from antiamp.schema import upgrade  # a store of the former names reads as a new one

    if dask:
        return upgrade(xr.open_zarr(store))
    ds = xr.open_zarr(store, chunks=None)
    if dask is None and ds.nbytes > DASK_ABOVE_BYTES:
        return upgrade(xr.open_zarr(store))
    return upgrade(ds)


def grid_attrs(plan: Plan, first: xr.Dataset, created: str) -> dict:
    """The root attributes of a model's grid store, from its first block."""
    attrs = {k: v for k, v in first.attrs.items() if k not in SUMMED_ATTRS}
    attrs.update(standard_attrs(plan.model, plan.base, created, attrs.get("title")))
    attrs.update({"axes": json.dumps([a.path for a in plan.grid.axes]),
                  "design": plan.spec.design, "n_cells": int(plan.n_cells),
                  "cells_per_block": int(plan.cells_per_block),
                  "fingerprint": grid_fingerprint(plan), STORE_MARKER: 1, "complete": 0,
                  "store_layout": STORE_LAYOUT,
                  "sweep_json": json.dumps(dataclasses.asdict(plan.spec), default=str)})
    return attrs


#: What a block's ``solver_report`` says when it has nothing to report.
QUIET_REPORTS = (None, "no issues", "all methods converged")


def _fill_store(plan: Plan, store: Path, todo: list, client, executor, progress, log,
                created: str | None = None, new: bool = False, cs=None) -> None:
    """Run the blocks ``todo`` (regions) and write each into the store as it finishes;
    with ``new`` the store is laid out from the first block to finish (replacing,
    then, what ``store`` held: a run of something else, with sweep.overwrite)."""
    from .cellstore import CellStore, StoreShapeError, create_store
    from .chunks import flat_range
    from .metadata import update_attrs

    index = {flat_range(r, plan.grid.shape): (i, r) for i, r in enumerate(plan.regions())}
    state = {"cs": None if new else cs or CellStore(store, plan)}

    def done(blk, ds):
        i, r = index[blk]
        label_metrics(ds)  # the derived metrics of its cells
        cs = state["cs"]
        if cs is None:
            template, enc = CellStore.template(plan, ds, grid_attrs(plan, ds, created or _now()))
            create_store(template, enc, store, log)
            cs = state["cs"] = CellStore(store, plan)
            cs.knows(template)
        report = ds.attrs.get("solver_report")
        if report not in QUIET_REPORTS:  # kept with the store until it is finished
            reports = json.loads(store_attrs(store).get("block_reports", "{}"))
            reports[str(i)] = str(report)
            update_attrs(store, {"block_reports": json.dumps(reports)})
        try:
            cs.write(i, r, ds)
        except StoreShapeError as exc:  # a model's blocks that do not fit one grid
            a, b = blk
            raise EngineError(
                f"model {plan.model.name}: the block of cells {a}..{b - 1} does not fit the "
                f"store {store} laid out from the first block written ({exc}). Every block "
                "of a model must return the same variables with the same dimensions and "
                "model coordinates. The blocks already written are kept; if the store was "
                "begun by another version of the model, rerun with sweep.overwrite=true, "
                "otherwise the model's cells differ in shape (a fault of the model)") from exc

    flat = [flat_range(r, plan.grid.shape) for r in todo]
    _run_blocks(plan, sorted(flat), client, executor, progress, done, keep=False)


def _static_digest(store: Path, plan: Plan, arrays: dict | None = None) -> str:
    """Checksum of what is not per cell: coordinates and grid-wide variables.
    ``arrays``: the store's arrays listed already (name -> zarr array; listing them
    reads every array's metadata files: 12.7 against 4.4 ms for a re-deliberation
    store's 51)."""
    import zarr

    from .cellstore import LAYOUT_ARRAYS

    if arrays is None:
        arrays = dict(zarr.open_group(str(store), mode="r").arrays())
    n = len(plan.grid.dims)
    axes = set(plan.grid.dims) | {a.dim for a in plan.grid.axes}  # coordinates
    h = hashlib.blake2b(digest_size=8)
    for name, a in sorted(arrays.items()):
        dims = tuple(a.attrs.get("_ARRAY_DIMENSIONS", ()))
        if name in LAYOUT_ARRAYS or (tuple(dims[:n]) == tuple(plan.grid.dims)
                                     and name not in axes):
            continue
        v = np.asarray(a[...])
        h.update(name.encode())
        if v.dtype.kind in "OUS":
            h.update("\0".join(map(str, v.ravel().tolist())).encode())
        else:
            h.update(v.dtype.str.encode() + np.ascontiguousarray(v).tobytes())
    return h.hexdigest()


def _finish_grid(plan: Plan, store: Path, t0: float, log) -> None:
    """A grid store whose every block is written: its per-block statistics summed, its
    sensitivity indices, its static checksum, then marked complete."""
    from .cellstore import CellStore
    from .metadata import finish, update_attrs

    attrs = store_attrs(store)
    cs = CellStore(store, plan, mode="r")
    done = cs.summed_attrs()
    reports = json.loads(attrs.get("block_reports", "{}"))
    if reports:
        done["solver_report"] = "\n".join(f"block {b}: {reports[b]}"
                                          for b in sorted(reports, key=int))
    if "run_seconds" in attrs:  # a finished store repaired: its timings stay the run's
        done.pop("solve_seconds", None)
    else:
        done["run_seconds"] = float(time.perf_counter() - t0)
    update_attrs(store, done)
    arrays = cs.arrays()  # as listed when opened: the static checksum reads them
    if plan.spec.design in SENSITIVITY:  # derived from every cell: redone with any block
        ds = xr.open_zarr(store, consolidated=False, chunks=None).load()
        names = set(ds.variables)
        full = with_sensitivity(plan, ds)
        idx = full.drop_vars([v for v in full.variables if v in names])
        idx.attrs = {**ds.attrs, **{k: v for k, v in full.attrs.items()
                                    if k not in ds.attrs or ds.attrs[k] != v}}
        # xarray's append mode writes the root attributes whole: the store's own kept
        idx.to_zarr(store, mode="a", zarr_format=2, consolidated=False)
        log(f"sensitivity indices ({full.attrs.get('sensitivity_method', '')}) written "
            f"into {store}")
        arrays = None  # the indices are arrays of their own: listed again
    update_attrs(store, {"static_digest": _static_digest(store, plan, arrays)})
    finish(store)


def run_grid_store(cfg: Any, store: str | Path, *, client=None, executor=None,
                   progress: bool | None = None, overwrite: bool = False, log=print,
                   plan: Plan | None = None, run_dir=None,
                   dask: bool | None = None) -> xr.Dataset:
    """Run (or resume) a model's grid into the Zarr ``store``; return it opened
    (:func:`open_store`: with dask arrays for ``dask=True``, xarray's lazy arrays for
    ``False``, by the store's size for ``None``).

    Blocks run on ``client``, or on a client for ``executor`` (an
    :class:`~antiamp.sweeps.spec.ExecutorConfig`), or in this process, and are
    written into the store as they finish (:mod:`antiamp.sweeps.cellstore`), through
    the one sweep driver (:func:`antiamp.sweeps.driver.run_store`).  A kill leaves
    the finished blocks in the store; rerunning the same call verifies them, runs
    the rest and ends with the same store, bit for bit, as an uninterrupted run.
    """
    plan = stored_blocks(plan or plan_grid(cfg), Path(store))
    run_store(ModelBlocks(plan, executor, overwrite), Path(store), client=client,
              progress=progress, log=log, run_dir=run_dir)
    return open_store(store, dask)


class ModelBlocks:
    """The block strategy of a model without fused grids (:mod:`antiamp.sweeps.driver`):
    a block is one call of the model's ``run_cells`` (:func:`run_block`); the store
    is laid out from the first block to finish (:mod:`antiamp.sweeps.cellstore`),
    with a checksum of each cell's values."""

    temporaries = ("creating", "old", "partial")

    def __init__(self, plan: Plan, executor=None, overwrite: bool = False):
        self.plan, self.executor, self.overwrite = plan, executor, overwrite
        self.shape, self.dims, self.chunk = plan.grid.shape, plan.grid.dims, plan.chunk
        self.fingerprint = grid_fingerprint(plan)
        self.label, self.device = plan.model.name, plan.base.run.device
        self.cs = None

    def state(self, store: Path, run_dir) -> str:
        return store_state(self.plan, store, self.overwrite, run_dir)

    def begin(self, store: Path, state: str, client, progress, log) -> bool:
        """A new store run whole here: laid out from its first block, then finished."""
        plan, part = self.plan, partial_dir(store)
        if part.exists():  # an earlier antiamp's unfinished run, proven ours (its marker)
            shutil.rmtree(part)
            log(f"removed the unfinished run in {part}")
        n_blocks = len(plan.blocks())
        if state != "new":
            log(f"verifying the {n_blocks:,} blocks of {store}...")
            return False
        log(f"{plan.model.name}: {plan.n_cells:,} cells in {n_blocks} blocks -> {store}")
        t0 = time.perf_counter()
        _fill_store(plan, store, plan.regions(), client, self.executor, progress, log,
                    new=True)
        _finish_grid(plan, store, t0, log)
        return True

    def open(self, store: Path, repair: bool):
        from .cellstore import CellStore

        self.cs = CellStore(store, self.plan, mode="r+" if repair else "r")
        return self.cs.group

    def checker(self):
        """Each cell's values against its checksum."""
        from .cellstore import cell_digests, stored_rows
        from .chunks import cells_of

        cs, shape, n_grid = self.cs, self.shape, len(self.dims)

        def check(read, slab, r):
            try:
                rows = stored_rows(read, cs.names, r, cs.model_dims, n_grid)
                digest = np.asarray(read("cell_digest", r)).ravel()
            except Exception as exc:
                return False, f"values unreadable ({type(exc).__name__})"
            try:
                got = cell_digests(rows, cells_of(r, shape))
            except ValueError as exc:  # values that do not fit their metadata
                return False, f"values not checkable ({exc})"
            if not np.array_equal(got, digest):
                return False, "values do not match the cells' checksums"
            return None
        return check

    def static(self, group, repair: bool) -> list:
        from .verify import verify_static

        want = {a.dim: np.asarray(a.values) for a in self.plan.grid.axes}
        if self.plan.spec.design != "grid" and "point" in self.cs.dims:
            want["point"] = np.arange(self.shape[0])
        return verify_static(group, want, repair)

    def whole_damaged(self, store: Path, attrs: dict, unfinished: list) -> bool:
        """A model coordinate or grid-wide variable damaged (their checksum)."""
        bad = bool(not unfinished and attrs.get("complete") and "static_digest" in attrs
                   and _static_digest(store, self.plan) != attrs["static_digest"])
        if bad:
            self.cs.rewrite_coords = True
        return bad

    def redo(self, store: Path, group, unfinished: list, found: list, attrs: dict,
             client, progress, log) -> None:
        todo = [r for r, _, _ in found]
        for r in todo:
            group["cell_done"][r] = False
        t0 = time.perf_counter()
        self.cs.record_stats = "run_seconds" not in attrs
        _fill_store(self.plan, store, unfinished + todo, client, self.executor, progress,
                    log, attrs.get("created"), cs=self.cs)
        _finish_grid(self.plan, store, t0, log)
