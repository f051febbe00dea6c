"""The generic engine: any registered model's grid, in blocks, in memory or resumable.

A grid (or design) is cut into blocks of consecutive cells (C order).  Each block
is one call of the model's ``run_cells`` (kernel, solver and metrics together),
run as one dask task, so equilibrium and fixed-point grids spread over workers
like the kernels do.  A block's result depends only on its cells' configs
(common random numbers: each model draws with a fixed stream, whatever the cells
beside it), so the assembled grid does not depend on the block size, the order
in which blocks finish, the workers or interruptions.

Resumable runs keep their finished blocks in ``<store>.partial/`` beside the
store: a directory created atomically with a marker (``antiamp-partial.json``,
holding the run's fingerprint), one file per finished block written under a
temporary name and renamed, so a block file is either whole or absent.  When
every block is there the grid is assembled and written to the store atomically
(:func:`antiamp.output.write_zarr_atomic`), and only then is the partial
directory removed.  A kill at any moment leaves either a partial directory that
the same command resumes, or the finished store.

Block files hold data only (:mod:`antiamp.sweeps.blockfiles`: NumPy arrays without
pickles and a JSON header), each with a checksum computed as the block arrives and
the block's identity (its cells, the run's fingerprint); a file that fails either
is recomputed, never trusted, and nothing in the partial directory is unpickled.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from antiamp.lazy import lazy
xr = lazy("xarray")

from antiamp._version import __version__
from antiamp.config import DEFAULT_MODEL, ConfigError, plain_values
from antiamp.registry import Model, get, to_model_config

from .spec import SENSITIVITY, CellBlock, CellGrid, SweepSpec, axis_coords

MARKER = "antiamp-partial.json"
STORE_MARKER = "antiamp_store"
SUMMED_ATTRS = ("kernel_calls", "kernel_cells", "solve_seconds")
#: The run settings a grid's numbers depend on (its fingerprint's part of ``run``).
RESULT_RUN_FIELDS = ("n_instances", "seed", "device")


class EngineError(RuntimeError):
    """A grid that cannot run as asked (store in use, store of another run...); one
    class for every model (``antiamp.sweeps.engine.SweepError`` is the same)."""


# ----------------------------------------------------------------------------- plan
@dataclasses.dataclass
class GridPlan:
    """A validated grid of one model: its cells and how they are cut into blocks."""

    model: Model
    base: Any  # validated root config
    spec: SweepSpec
    grid: CellGrid
    cells_per_block: int

    @property
    def n_cells(self) -> int:
        return self.grid.n_cells

    def blocks(self) -> list:
        """(start, stop) of each block of consecutive cells."""
        n, k = self.n_cells, self.cells_per_block
        return [(s, min(s + k, n)) for s in range(0, n, k)]

    def fingerprint(self) -> str:
        """What the grid's numbers depend on: resume only into a run with the same one."""
        config = _plain(self.base)
        # Of the run's settings only those a result depends on: the threads, the
        # instances a kernel call, the progress bar and the figure change nothing, so
        # a run resumes whatever they are.
        config["run"] = {k: config["run"][k] for k in RESULT_RUN_FIELDS if k in config["run"]}
        blob = {
            "model": self.model.name, "config": config,
            "axes": [(a.path, np.asarray(a.values).tolist()) for a in self.grid.axes],
            "design": self.spec.design, "n_points": self.spec.n_points,
            **({"morris_levels": self.spec.morris_levels} if self.spec.design == "morris"
               else {}),
            "design_seed": self.spec.design_seed, "block": self.cells_per_block,
            "version": __version__,
        }
        return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()
                              ).hexdigest()[:16]


def _plain(cfg) -> dict:
    return {f.name: dataclasses.asdict(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)}


def _spec(sweep: Any) -> SweepSpec:
    from omegaconf import DictConfig, OmegaConf

    if isinstance(sweep, SweepSpec):
        return sweep
    if isinstance(sweep, DictConfig):
        sweep = OmegaConf.to_container(sweep, resolve=True)
    sweep = plain_values(sweep or {})
    try:
        node = OmegaConf.structured(SweepSpec)
        OmegaConf.set_struct(node.axes, False)
        return OmegaConf.to_object(OmegaConf.merge(node, sweep or {}))
    except Exception as exc:  # OmegaConf names the key
        raise ConfigError(f"sweep: {str(exc).splitlines()[0]}") from None


_LAST_PLAN: dict = {}


def plan_grid(cfg: Any, *, cells_per_block: int | None = None, validate_all: bool = True
              ) -> GridPlan:
    """:func:`_plan_grid`, keeping the last plan: the command line's check before
    the run and the run itself validate a grid once."""
    from .spec import _plan_key

    key = _plan_key(cfg, cells_per_block, validate_all)
    if key is not None and _LAST_PLAN.get("key") == key:
        return _LAST_PLAN["plan"]
    plan = _plan_grid(cfg, cells_per_block=cells_per_block, validate_all=validate_all)
    _LAST_PLAN.clear()
    _LAST_PLAN.update(key=key, plan=plan)
    return plan


def _plan_grid(cfg: Any, *, cells_per_block: int | None = None, validate_all: bool = True
               ) -> GridPlan:
    """Validate a model's grid: the base config, the axes and (by default) every cell.

    ``cfg`` is the nested config with ``model.name`` and ``sweep.axes``; every bad
    value raises :class:`ConfigError` naming the field (and the cell) before any
    computation.
    """
    from omegaconf import DictConfig, OmegaConf

    if isinstance(cfg, DictConfig):
        cfg = OmegaConf.to_container(cfg, resolve=True)
    cfg = dict(cfg or {})
    spec = _spec(cfg.get("sweep"))
    model, base = to_model_config(cfg)
    readable = set(model.uses) | set(model.sections)
    for section in (spec.axes or {}):
        if section in type(base).SWEEPABLE and section not in readable:
            raise ConfigError(f"sweep.axes.{section}: model {model.name} does not read "
                              f"{section}.*; its sections are {', '.join(sorted(readable))}")

    def check(cell):
        from antiamp.config import validate

        validate(cell)
        if model.validate is not None:
            model.validate(cell)

    grid = CellGrid(base, spec, validator=check)
    if validate_all and model.validate_reads is not None:
        # Every field's values column by column (the fused grids' check), then the
        # model's own check on one cell of each distinct combination of the axes
        # it reads (each built through ``check``: ConfigError names the cell).
        from antiamp.layout import covers

        from .spec import grid_columns

        grid_columns(grid)
        if any(covers(f, a.path) for f in model.validate_reads for a in grid.axes):
            CellBlock(grid, 0, grid.n_cells).distinct(model.validate_reads)
        # else the base config's own check (to_model_config) covered every cell
    elif validate_all:  # every cell, before any work (ConfigError names the cell)
        for i in range(grid.n_cells):
            grid.cell(i)
    k = cells_per_block or spec.cells_per_block or model.cells_per_block or 64
    return GridPlan(model, base, spec, grid, max(1, min(k, grid.n_cells)))


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
    grid = CellGrid(base, _spec(spec), validator=lambda c: None)
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


def _task_args(plan: GridPlan) -> tuple:
    return plan.model.name, plan.base, plan.spec


# ----------------------------------------------------------------------------- assembly
def _fill(da: xr.DataArray):
    if da.dtype.kind == "b":
        return False
    if da.dtype.kind in "iu":
        return -1
    if da.dtype.kind in "OUS":
        return ""
    return np.nan


def assemble(plan: GridPlan, parts: list, created: str | None = None) -> xr.Dataset:
    """Blocks (in cell order) -> one Dataset with the grid's dimensions.

    Dimensions that vary in length between blocks (equilibria found, items held)
    are padded: NaN for numbers, False for flags, -1 for counts, "" for labels.
    """
    first = parts[0]
    fill = {k: _fill(v) for k, v in first.data_vars.items()}
    ds = parts[0] if len(parts) == 1 else xr.concat(
        parts, dim="cell", data_vars="minimal", coords="minimal", compat="override",
        join="outer", fill_value=fill, combine_attrs="override")
    for k, v in fill.items():  # padding must not change a variable's type
        if k in ds and ds[k].dtype != first[k].dtype and first[k].dtype.kind in "biu":
            ds[k] = ds[k].fillna(v).astype(first[k].dtype)
    shape, dims = plan.grid.shape, plan.grid.dims
    data = {}
    for name, da in ds.data_vars.items():
        if "cell" in da.dims:
            da = da.transpose("cell", ...)
            rest = da.dims[1:]
            data[name] = (tuple(dims) + rest, da.values.reshape(tuple(shape) + da.shape[1:]),
                          da.attrs)
        else:
            data[name] = da
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
    plain = {k: v for k, v in _plain(cfg).items() if k in keep}
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
    if model.run_cell is not None:
        ds = model.run_cell(c, **kwargs)
    else:
        if kwargs:
            raise TypeError(f"simulate() got keyword arguments {sorted(kwargs)} that model "
                            f"{model.name} does not take")
        from antiamp.runner import kernel_interrupts

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
    args = _task_args(plan)
    parts = _compute(plan, plan.blocks(), args, client, progress,
                     lambda b, ds: None)
    return with_sensitivity(plan, label_metrics(assemble(plan, [parts[b] for b in
                                                                plan.blocks()])))


def with_sensitivity(plan: GridPlan, ds: xr.Dataset) -> xr.Dataset:
    """A sensitivity design's grid with its indices (antiamp.sensitivity), computed
    from every cell: added whenever the grid is assembled or repaired."""
    if plan.spec.design not in SENSITIVITY:
        return ds
    from antiamp.sensitivity import with_indices

    return with_indices(ds, plan.grid.axes, plan.spec)


def _compute(plan: GridPlan, todo: list, args: tuple, client, progress, done) -> dict:
    """Run blocks ``todo``; ``done(block, ds)`` as each finishes; returns {block: ds}."""
    from .progress import Progress

    # a bar on a terminal, a line every so often in a log
    bar = Progress(len(todo), sum(b - a for a, b in todo), plan.model.name, progress)
    out = {}
    try:
        if client is None:
            for blk in todo:
                ds = run_block(*args, *blk)
                done(blk, ds)
                out[blk] = ds
                bar.update(blk[1] - blk[0])
        else:
            from distributed import as_completed

            from .executors import task_resources

            res = task_resources(client, plan.base.run.device)
            futs = {client.submit(run_block, *args, *blk, pure=False, retries=3,
                                  resources=res): blk for blk in todo}
            for f in as_completed(list(futs)):
                blk = futs.pop(f)
                ds = f.result()
                f.release()
                done(blk, ds)
                out[blk] = ds
                bar.update(blk[1] - blk[0])
    finally:
        bar.close()
    return out


def _run_blocks(plan: GridPlan, todo: list, client, executor, progress, done) -> dict:
    """Blocks ``todo`` on ``client``, or on a client for ``executor``, or here."""
    if client is not None or executor is None:
        return _compute(plan, todo, _task_args(plan), client, progress, done)
    from .executors import dask_client

    with dask_client(executor) as cl:
        return _compute(plan, todo, _task_args(plan), cl, progress, done)


# ----------------------------------------------------------------------------- store
def partial_dir(store: Path) -> Path:
    return store.with_name(store.name + ".partial")


def store_state(plan: GridPlan, store: Path, overwrite: bool = False, run_dir=None) -> str:
    """'new', 'resume' or 'complete'; EngineError for a store of something else, or
    for the current or run directory or a parent of either."""
    from antiamp.output import OutputError, check_replaceable

    from .lockpath import refuse_link

    refuse_link(store, EngineError)
    try:
        check_replaceable(store, others=[run_dir] if run_dir else [])
    except OutputError as exc:
        if store.exists() and not _store_attrs(store).get(STORE_MARKER):
            raise EngineError(f"{exc} (sweep.overwrite=true does not change this)") from None
        raise EngineError(str(exc)) from None
    fp = plan.fingerprint()
    part = partial_dir(store)
    if store.exists():
        from antiamp.output import is_antiamp_store

        attrs = _store_attrs(store)
        if attrs.get("fingerprint") == fp and attrs.get(STORE_MARKER):
            return "complete"
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
        m = _read_marker(part)
        if m is None:
            raise EngineError(f"{part} is not an antiamp partial run (or holds files antiamp "
                              "did not write); antiamp never removes it. Move it away or "
                              "choose another sweep.store")
        if m.get("fingerprint") == fp:
            return "resume"
        if not overwrite:
            raise EngineError(f"{part} holds an unfinished different run; rerun that command "
                              "to finish it, or replace it with sweep.overwrite=true")
    return "new"


def _store_attrs(store: Path) -> dict:
    try:
        import zarr

        return dict(zarr.open_group(str(store), mode="r").attrs)
    except Exception:
        return {}


def _read_marker(part: Path) -> dict | None:
    """The partial run's marker, or None where ``part`` is not provably antiamp's: a
    link, no marker, or an entry antiamp never makes there (a file of someone
    else's, which nothing of antiamp's may remove with the folder)."""
    if part.is_symlink() or not part.is_dir():
        return None
    try:
        m = json.loads((part / MARKER).read_text())
    except Exception:
        return None
    if not isinstance(m, dict) or "fingerprint" not in m:
        return None
    import re

    ours = re.compile(r"\.?block-\d+-\d+\.(blk|pkl)(\.tmp-[0-9a-f]+)?$")
    with os.scandir(part) as entries:
        for e in entries:
            if e.name != MARKER and not (ours.match(e.name)
                                         and e.is_file(follow_symlinks=False)):
                return None
    return m


def _make_partial(part: Path, plan: GridPlan, created: str) -> None:
    """Create ``part`` atomically: built beside under a temporary name, then renamed."""
    tmp = part.with_name(f".{part.name}.tmp-{uuid.uuid4().hex[:8]}")
    tmp.mkdir(parents=True)
    (tmp / MARKER).write_text(json.dumps({
        "fingerprint": plan.fingerprint(), "model": plan.model.name, "created": created,
        "n_blocks": len(plan.blocks()), "antiamp_version": __version__}))
    os.replace(tmp, part)


def _block_file(part: Path, blk: tuple) -> Path:
    from .blockfiles import block_file

    return block_file(part, blk)


def _write_block(part: Path, blk: tuple, ds: xr.Dataset, plan: GridPlan) -> None:
    from .blockfiles import write_block

    write_block(part, blk, ds, fingerprint=plan.fingerprint(), model=plan.model.name)


def _read_blocks(part: Path, plan: GridPlan, log) -> dict:
    """The sound block files of ``part``; each one that is not the block it should be
    (damaged, swapped, of another run, not a block file) is named and recomputed."""
    from .blockfiles import OLD_GLOB, read_block

    old = list(part.glob(OLD_GLOB))
    if old:
        log(f"{part}: {len(old)} block files of an earlier antiamp (pickles) are never "
            "read; their blocks are recomputed")
    fp, have = plan.fingerprint(), {}
    for blk in plan.blocks():
        ds, why = read_block(part, blk, fingerprint=fp)
        if ds is not None:
            have[blk] = ds
        elif why is not None:
            log(f"block file {_block_file(part, blk).name}: {why}; recomputed")
    return have


def _lock(store: Path, read_only: bool = False):
    """The store's lock, the same for every model's store and every command."""
    from .lockpath import lock_store

    return lock_store(store, EngineError, "sweep", read_only=read_only)


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


def run_grid_store(cfg: Any, store: str | Path, *, client=None, executor=None,
                   progress: bool | None = None, overwrite: bool = False, log=print,
                   plan: GridPlan | None = None, run_dir=None,
                   dask: bool | None = None) -> xr.Dataset:
    """Run (or resume) a model's grid into the Zarr ``store``; return it opened
    (:func:`open_store`: with dask arrays for ``dask=True``, xarray's lazy arrays for
    ``False``, by the store's size for ``None``).

    Blocks run on ``client``, or on a client for ``executor`` (an
    :class:`~antiamp.sweeps.spec.ExecutorConfig`), or in this process.  Finished
    blocks survive a kill; rerunning the same call continues from them and ends
    with the same store, bit for bit, as an uninterrupted run.
    """
    plan = plan or plan_grid(cfg)
    store = Path(store)
    store.parent.mkdir(parents=True, exist_ok=True)
    part = partial_dir(store)
    lock = _lock(store)
    try:
        from .metadata import repair_before_resume

        repair_before_resume(store, plan.fingerprint(), log, EngineError)
        state = store_state(plan, store, overwrite, run_dir)
        if state == "complete":
            if part.exists() and _read_marker(part) is not None:
                shutil.rmtree(part)  # a kill after the store was finished
            log(f"verifying the {len(plan.blocks()):,} blocks of {store}...")
            report = verify_grid_store(plan, store, repair=True, client=client,
                                       executor=executor, progress=progress, log=log)
            if report.ok:
                log(f"{store} is complete; its {report.n_blocks} blocks verified")
            return open_store(store, dask)
        if state == "new" and part.exists():
            shutil.rmtree(part)  # proven ours (marker) and replaced on request
            log(f"removed the unfinished run in {part}")
        created = _now()
        if not part.exists():
            _make_partial(part, plan, created)
            log(f"{plan.model.name}: {plan.n_cells:,} cells in {len(plan.blocks())} blocks "
                f"-> {store}")
        else:
            created = _read_marker(part).get("created", created)
        blocks = plan.blocks()
        if state == "resume":  # every block file is read and checksummed
            log(f"reading the finished blocks in {part}...")
        have = _read_blocks(part, plan, log)
        todo = [b for b in blocks if b not in have]
        if state == "resume":
            log(f"resuming {store}: {len(todo)} of {len(blocks)} blocks left")
        t0 = time.perf_counter()
        if todo:
            have.update(_run_blocks(plan, todo, client, executor, progress,
                                    lambda blk, ds: _write_block(part, blk, ds, plan)))
        ds = with_sensitivity(plan, label_metrics(assemble(plan, [have[b] for b in blocks],
                                                           created)))
        ds.attrs.update({"fingerprint": plan.fingerprint(), STORE_MARKER: 1, "complete": 1,
                         "run_seconds": float(time.perf_counter() - t0)})
        add_checksums(plan, ds)
        if store.exists() and overwrite:
            log(f"replacing {store}")
        from antiamp.output import remove_temporaries, write_zarr_atomic

        write_zarr_atomic(ds, store, log=log, prepare=_record)
        shutil.rmtree(part)
        # Temporaries of runs killed while creating the partial run or writing the store.
        remove_temporaries(part, ("tmp",))
        remove_temporaries(store, ("partial",))
    finally:
        lock.release()
    return open_store(store, dask)


# ----------------------------------------------------------------------------- checksums
def _cell_rows(plan: GridPlan, da: xr.DataArray):
    """A variable's values as [cell, ...] rows, or None if it is not per cell."""
    dims = tuple(plan.grid.dims)
    if tuple(da.dims[:len(dims)]) != dims:
        return None
    v = np.asarray(da.values)
    return v.reshape((plan.n_cells,) + v.shape[len(dims):])


def _bytes(v: np.ndarray) -> bytes:
    if v.dtype.kind in "OUS":  # labels: their text, whatever the string dtype read back
        return "\0".join(map(str, v.ravel().tolist())).encode()
    return v.dtype.str.encode() + np.ascontiguousarray(v).tobytes()


def _static_digest(plan: GridPlan, ds: xr.Dataset) -> str:
    """Checksum of what is not per cell: coordinates and grid-wide variables."""
    h = hashlib.blake2b(digest_size=8)
    for name in sorted(set(ds.variables) - {"block_digest"}):
        if name in ds.data_vars and _cell_rows(plan, ds[name]) is not None:
            continue
        h.update(name.encode())
        h.update(_bytes(np.asarray(ds[name].values)))
    return h.hexdigest()


def block_digests(plan: GridPlan, ds: xr.Dataset) -> np.ndarray:
    """A 64-bit checksum of each block's values (every per-cell variable)."""
    rows = {}
    for name in sorted(ds.data_vars):
        if name != "block_digest":
            r = _cell_rows(plan, ds[name])
            if r is not None:
                rows[name] = r
    out = np.empty(len(plan.blocks()), np.uint64)
    for i, (a, b) in enumerate(plan.blocks()):
        h = hashlib.blake2b(digest_size=8)
        for name, r in rows.items():
            h.update(name.encode())
            h.update(_bytes(r[a:b]))
        out[i] = int.from_bytes(h.digest(), "little")
    return out


def add_checksums(plan: GridPlan, ds: xr.Dataset) -> None:
    """Record each block's checksum (``block_digest``), the static one, and the
    sweep that rebuilds the plan (for ``antiamp-check``)."""
    ds["block_digest"] = (("block",), block_digests(plan, ds), {
        "long_name": "checksum of each block's values",
        "description": f"blocks of {plan.cells_per_block} consecutive cells (C order); "
                       "verified by every rerun and by antiamp-check"})
    ds.attrs["static_digest"] = _static_digest(plan, ds)
    ds.attrs["sweep_json"] = json.dumps(dataclasses.asdict(plan.spec),
                                        default=str)


@dataclasses.dataclass
class GridReport:
    n_blocks: int
    damaged: list  # (block name, what is wrong)

    @property
    def ok(self) -> bool:
        return not self.damaged


def _dimension_arrays(store: Path) -> list:
    """The arrays of a (Zarr format 2) store that are its dimensions' coordinates."""
    import json

    dims, names = set(), set()
    for p in Path(store).glob("*/.zattrs"):
        try:
            dims.update(json.loads(p.read_text()).get("_ARRAY_DIMENSIONS", []))
        except (OSError, ValueError):
            continue
        names.add(p.parent.name)
    return sorted(dims & names)


def _load(store: Path):
    """The store in memory; (None, reason) when it cannot be read at all."""
    try:
        ds = open_store(store, dask=False)  # every variable is read whole below
    except Exception as exc:
        # xarray reads the dimension coordinates whole on opening: a damaged chunk of
        # one fails the opening. The store without them (named damaged: the grid is
        # then recomputed whole), else nothing.
        dims = _dimension_arrays(store)
        try:
            ds = xr.open_zarr(store, chunks=None, drop_variables=dims)
        except Exception:
            return None, f"cannot be opened ({type(exc).__name__}: {str(exc)[:80]})"
        return ds, dims
    bad = []
    for name in list(ds.variables):
        try:
            ds[name].load()
        except Exception:
            bad.append(name)
    return ds, bad


def verify_grid_store(plan: GridPlan, store: Path, *, repair: bool, client=None,
                      executor=None, progress=None, log=print) -> GridReport:
    """Verify every block of a finished grid store against its checksum; with
    ``repair``, recompute the damaged blocks and rewrite the store atomically."""
    ds, bad = _load(store)
    n = len(plan.blocks())
    if ds is None:
        raise EngineError(f"{store} {bad}; it cannot be verified or repaired. Move it away "
                          "and rerun to recompute it")
    names = [f"cells {a}..{b - 1}" for a, b in plan.blocks()]
    recorded = None
    if "block_digest" not in bad and "block_digest" in ds and ds["block_digest"].size == n:
        recorded = ds["block_digest"].values.copy()
    if recorded is None:
        damaged = list(range(n))
        why = {i: "its checksum is missing or unreadable" for i in damaged}
    elif bad or ds.attrs.get("static_digest") != _static_digest(plan, ds):
        damaged = list(range(n))
        what = ", ".join(bad) if bad else "coordinates or grid-wide variables"
        why = {i: f"{what} damaged" for i in damaged}
    else:
        have = block_digests(plan, ds)
        damaged = [i for i in range(n) if have[i] != recorded[i]]
        why = {i: "values do not match the block's checksum" for i in damaged}
    report = GridReport(n, [(names[i], why[i]) for i in damaged])
    for i in damaged:
        log(f"damaged block {names[i]}: {why[i]}; "
            + ("recomputed" if repair else "not repaired"))
    if not damaged or not repair:
        return report
    todo = [plan.blocks()[i] for i in damaged]
    new = _run_blocks(plan, todo, client, executor, progress, lambda blk, d: None)
    if len(damaged) == n:  # nothing sound to keep: the whole grid again
        fixed = label_metrics(assemble(plan, [new[b] for b in todo], ds.attrs.get("created")))
        if ds.attrs.get(STORE_MARKER):  # the run's own attributes (timings included)
            fixed.attrs = dict(ds.attrs)
        else:
            fixed.attrs.update({"fingerprint": plan.fingerprint(), STORE_MARKER: 1,
                                "complete": 1})
    else:
        fixed = ds.copy(deep=True)
        for blk, part in new.items():
            a, b = blk
            for name, da in part.data_vars.items():
                rows = _cell_rows(plan, fixed[name]) if name in fixed else None
                if rows is None or "cell" not in da.dims:
                    continue
                v = np.asarray(da.transpose("cell", ...).values)
                if any(x > y for x, y in zip(v.shape[1:], rows.shape[1:])):
                    raise EngineError(f"block cells {a}..{b - 1} recomputed larger than the "
                                      f"store's {name}; rerun with sweep.overwrite=true")
                pad = np.full((b - a,) + rows.shape[1:], _fill(fixed[name]), dtype=rows.dtype)
                pad[(slice(None),) + tuple(slice(0, x) for x in v.shape[1:])] = v
                rows[a:b] = pad
                fixed[name].values = rows.reshape(fixed[name].shape)
    for v in fixed.variables.values():
        v.encoding = {}
    fixed = with_sensitivity(plan, fixed.drop_vars("block_digest", errors="ignore"))
    add_checksums(plan, fixed)
    still = [] if recorded is None else [
        names[i] for i in damaged if fixed["block_digest"].values[i] != recorded[i]]
    if still:
        log(f"warning: recomputed blocks differ from their recorded checksums ({', '.join(still)}); "
            "the model's results are not reproducible bit for bit")
    from antiamp.output import write_zarr_atomic

    write_zarr_atomic(fixed, store, prepare=lambda tmp: _record(tmp, carry=store))
    return report


def _record(tmp: Path, carry=None) -> None:
    """The store's metadata record (sweeps/metadata.py), written into the new store
    before it is renamed into place; ``carry``: the store it replaces, whose copies
    of repaired files are kept."""
    from .metadata import record

    record(tmp, carry=carry)
