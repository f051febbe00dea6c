"""Sweep specifications: axes, designs and the validated plan of cells.

An axis is a config field (``model.rho``, ``judge.b``, ``judge.kind``,
``protocol.consult_default``, ``welfare.beta``...) with its values:

* an explicit list: ``[0.1, 0.4, 0.8]``
* ``{linspace: [start, stop, num]}``, ``{logspace: [start, stop, num]}`` (base-10
  exponents), ``{geomspace: [start, stop, num]}``, ``{range: [start, stop, step]}``
* for ``design: lhs`` or ``sobol`` (space-filling designs over ranges):
  ``{uniform: [low, high]}`` or ``{loguniform: [low, high]}``.

A grid gives one dimension per axis, named after the field; a design gives one
dimension ``point`` with each field as a coordinate along it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import Any, Dict, List, Optional

import numpy as np
from omegaconf import DictConfig, OmegaConf

from antiamp.config import (Config, ConfigError, check_flags, plain_values, to_config,
                            to_dataclass, validate, validate_section)
from antiamp.fields import label as field_label
from antiamp.layout import axis_coords  # noqa: F401  (re-exported)
from antiamp.layout import combos
from antiamp.lazy import lazy

_judge = lazy("antiamp.judge")

SWEEPABLE = ("model", "judge", "protocol", "welfare")
#: Most cells in one sweep (and values on one axis).
MAX_CELLS = 50_000_000
DESIGNS = ("grid", "lhs", "sobol", "saltelli", "morris")
#: Designs whose store also gets sensitivity indices (antiamp.sensitivity).
SENSITIVITY = ("saltelli", "morris")
EXECUTORS = ("local", "distributed", "slurm")


@dataclass
class SweepSpec:
    """What to sweep (``sweep.*``)."""

    #: Name of the sweep (a named sweep sets it); the default run directory uses it.
    name: str = "adhoc"
    #: Nested ``{section: {field: values}}``, e.g. ``sweep.axes.model.rho=[0.1,0.4]``.
    axes: Dict[str, Any] = field(default_factory=dict)
    #: ``grid`` (Cartesian product), ``lhs`` (Latin hypercube), ``sobol``, or a
    #: sensitivity design whose store gets the indices: ``saltelli`` (Sobol' indices)
    #: or ``morris`` (elementary effects).
    design: str = "grid"
    #: Number of design points for ``lhs`` / ``sobol``; base samples N for
    #: ``saltelli`` (a power of 2; N (2D + 2) cells); trajectories for ``morris``
    #: (N (D + 1) cells).
    n_points: int = 64
    #: Grid levels of a ``morris`` design (even, >= 2).
    morris_levels: int = 4
    #: Seed of the design's scrambling (lhs / sobol).
    design_seed: int = 0
    #: Common random numbers across cells (the same uniforms for every cell).
    crn: bool = True
    #: The Zarr store; relative paths are inside the run directory.
    store: str = "sweep.zarr"
    #: Cells per block (one task, one Zarr chunk, one resume unit); 0 = automatic.
    cells_per_block: int = 0
    #: Replace an existing store that holds a different sweep.
    overwrite: bool = False
    #: Write the figures of ``antiamp-plot`` next to the store when done.
    plot: bool = True
    #: Variables to plot (empty = amp, amp_gap, acc_gap, welfare_diff).
    plot_vars: List[str] = field(default_factory=list)


@dataclass
class ExecutorConfig:
    """Where blocks run (``executor=local|distributed|slurm``)."""

    kind: str = "local"
    #: ``distributed``: address of an existing dask scheduler, e.g. tcp://host:8786.
    address: Optional[str] = None
    #: ``local``: dask workers (threads unless ``processes``).
    n_workers: int = 1
    processes: bool = False
    #: Compiled threads per task; 0 = all cores of the worker's machine divided by
    #: the local workers.
    threads_per_task: int = 0
    #: ``slurm``: keyword arguments of dask_jobqueue.SLURMCluster (queue, account,
    #: cores, memory, walltime, ...), and the number of jobs to start.
    slurm: Dict[str, Any] = field(default_factory=dict)
    jobs: int = 1
    #: ``slurm``: seconds to wait for the first worker job to start (queued jobs)
    #: before stopping with the jobs' states; the finished blocks are kept.
    start_timeout: float = 600.0
    #: GPUs of each worker this command starts, declared as the dask resource ``GPU``
    #: (``local``: each worker; ``slurm``: each job, asked of SLURM with
    #: ``--gres=gpu:N``).  A block's task holds one GPU when its kernels run on one.
    gpus: int = 0


@dataclass
class SweepConfig(Config):
    sweep: SweepSpec = field(default_factory=SweepSpec)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)


def run_schema() -> type:
    """The root config dataclass of ``antiamp-sweep``: every model's sections plus
    ``sweep`` and ``executor``."""
    from antiamp.registry import schema

    return schema({"sweep": SweepSpec, "executor": ExecutorConfig})


def sweep_schema_node() -> DictConfig:
    """The structured schema of ``antiamp-sweep``: every registered model's sections
    plus ``sweep`` and ``executor``, with ``sweep.axes`` open to new keys (ad hoc axes)."""
    from antiamp.registry import schema

    node = OmegaConf.structured(schema({"sweep": SweepSpec, "executor": ExecutorConfig}))
    OmegaConf.set_struct(node.sweep.axes, False)
    OmegaConf.set_struct(node.executor.slurm, False)
    return node


@dataclass
class Axis:
    path: str  # "model.rho"
    dim: str  # "rho"
    values: np.ndarray
    long_name: str
    units: str = "1"
    #: A design's range (low, high) and whether it is log-uniform.
    bounds: tuple = ()
    log: bool = False


@dataclass
class Plan:
    """A validated sweep of any model: its base config, its cells and how they are
    cut into blocks; the one plan of every model's sweep (:func:`make_plan`).

    What a block computes is the block strategy's
    (:func:`antiamp.sweeps.engine.block_strategy`): ``fused`` is set for a model
    whose store holds the integer counts of one fused kernel pass a block
    (:class:`antiamp.registry.FusedGrid`), with every cell's kernel inputs
    (``columns``) and stream words (``streams``); without it a block is one call of
    the model's ``run_cells``.
    """

    model: Any  # the antiamp.registry.Model
    base: Config  # validated root config (the cells differ from it on the axes)
    spec: SweepSpec
    grid: "CellGrid"
    #: Cells a block (a model grid's fingerprint holds it); 0: as many as make
    #: about :data:`~antiamp.sweeps.fused.TARGET_BLOCK_INSTANCES` instances
    #: (``TARGET_BLOCK_INSTANCES_GPU`` with run.device=cuda).
    cells_per_block: int
    executor: Any = None  # an ExecutorConfig: where a store's blocks run
    cfg: Any = None  # the sweep's whole config as validated (a fused store records it)
    fused: Any = None  # the model's FusedGrid when the blocks run fused
    columns: Any = None  # every cell's kernel inputs (FusedGrid.columns)
    streams: Optional[np.ndarray] = None  # [C] uint64 Philox stream words

    @property
    def axes(self) -> list:
        return self.grid.axes

    @property
    def design(self) -> str:
        return self.spec.design

    @property
    def shape(self) -> tuple:
        """The grid's shape, or (n_points,) for a design."""
        return self.grid.shape

    @property
    def dims(self) -> tuple:
        return self.grid.dims

    @property
    def n_cells(self) -> int:
        return self.grid.n_cells

    @property
    def n_instances(self) -> int:
        return int(self.base.run.n_instances)

    @property
    def chunk(self) -> tuple:
        """A block's shape over the grid's cells: one chunk of every per-cell array of
        its store, trailing axes whole first (:func:`~antiamp.sweeps.chunks.chunk_shape`)."""
        from .chunks import chunk_shape

        return chunk_shape(self.shape, self.n_instances, self.cells_per_block,
                           str(self.base.run.device))

    def regions(self) -> list:
        """Each block's cells as slices over the grid's axes, in C order."""
        from .chunks import blocks

        return list(blocks(self.shape, self.chunk))

    def blocks(self) -> list:
        """(start, stop) of each block of consecutive cells (C order)."""
        from .chunks import flat_range

        return [flat_range(r, self.shape) for r in self.regions()]


_UNITS = {"c_J": "utility", "c_e": "utility", "alpha": "utility", "beta": "utility", "delta_c": "utility",
          "jury_size": "judges"}


def sections_of(schema=Config) -> tuple:
    """Sweepable sections of a config schema (extended schemas add their own)."""
    return tuple(getattr(schema, "SWEEPABLE", SWEEPABLE))


def _field_types(section: str, schema=Config) -> dict:
    """Field name -> annotation (a string, under postponed evaluation) of a config section."""
    cls = type(getattr(schema(), section))
    return {f.name: str(f.type) for f in dataclasses.fields(cls)}


def _expand(path: str, spec: Any, design: str) -> np.ndarray:
    """Values of one axis from its spec (see module docstring)."""
    if isinstance(spec, DictConfig):
        spec = OmegaConf.to_container(spec, resolve=True)
    elif not isinstance(spec, (list, tuple, dict)) and OmegaConf.is_config(spec):
        spec = OmegaConf.to_container(spec, resolve=True)
    if design != "grid":
        if not (isinstance(spec, dict) and len(spec) == 1
                and next(iter(spec)) in ("uniform", "loguniform")):
            raise ConfigError(
                f"sweep.axes.{path}: a {design} design needs a range "
                "{uniform: [low, high]} or {loguniform: [low, high]}"
            )
        kind, rng = next(iter(spec.items()))
        if not (isinstance(rng, (list, tuple)) and len(rng) == 2
                and all(isinstance(v, (int, float)) for v in rng) and rng[0] < rng[1]):
            raise ConfigError(f"sweep.axes.{path}.{kind} must be [low, high] with low < high")
        if kind == "loguniform" and rng[0] <= 0:
            raise ConfigError(f"sweep.axes.{path}.loguniform needs low > 0")
        return np.asarray(rng, dtype=float)
    if isinstance(spec, (list, tuple)):
        vals = [v.item() if isinstance(v, np.generic) else v for v in spec]
    elif isinstance(spec, dict) and len(spec) == 1:
        kind, args = next(iter(spec.items()))
        fns = {"linspace": np.linspace, "logspace": np.logspace, "geomspace": np.geomspace,
               "range": np.arange}
        if kind not in fns:
            raise ConfigError(
                f"sweep.axes.{path}: unknown range {kind!r}; use a list or one of "
                f"{', '.join(fns)}"
            )
        if not (isinstance(args, (list, tuple)) and len(args) == 3
                and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                        and math.isfinite(v) for v in args)):
            raise ConfigError(f"sweep.axes.{path}.{kind} must be three numbers [start, stop, "
                              f"{'step' if kind == 'range' else 'num'}], each finite")
        # The number of values is known before any is made: refuse before allocating.
        if kind != "range":
            if args[2] != int(args[2]) or not 1 <= args[2] <= MAX_CELLS:
                raise ConfigError(f"sweep.axes.{path}.{kind}: num must be an integer in "
                                  f"[1, {MAX_CELLS:,}], got {args[2]!r}")
            if kind == "geomspace" and (args[0] == 0 or args[1] == 0
                                        or (args[0] < 0) != (args[1] < 0)):
                raise ConfigError(f"sweep.axes.{path}.geomspace: start and stop must be "
                                  f"nonzero and of the same sign, got {args[:2]}")
            vals = list(fns[kind](args[0], args[1], int(args[2])))
        else:
            if args[2] == 0:
                raise ConfigError(f"sweep.axes.{path}.range: step must not be 0")
            count = math.ceil((args[1] - args[0]) / args[2])
            if not 1 <= count <= MAX_CELLS:
                raise ConfigError(f"sweep.axes.{path}.range {list(args)} gives {max(count, 0):,} "
                                  f"values; an axis has 1 to {MAX_CELLS:,}")
            vals = list(np.arange(*args))
    else:
        raise ConfigError(
            f"sweep.axes.{path} must be a list of values or a range such as "
            "{linspace: [0, 1, 11]}, got " + repr(spec)
        )
    if len(vals) == 0:
        raise ConfigError(f"sweep.axes.{path} is empty")
    if len(vals) > MAX_CELLS:
        raise ConfigError(f"sweep.axes.{path} has {len(vals):,} values; an axis has at most "
                          f"{MAX_CELLS:,}")
    return vals  # coerced to the field's type, then checked for repeats, by parse_axes


def _coerce(path: str, typ: str, v):
    name = typ
    try:
        if isinstance(v, (bool, np.bool_)) and typ != "bool":
            raise ValueError  # true/false is not a number (YAML would make it 1/0)
        if typ == "int":
            if isinstance(v, (str, np.str_)):
                raise ValueError
            if isinstance(v, (float, np.floating)) and float(v) != int(v):
                raise ValueError
            return int(v)
        if typ == "str":
            if not isinstance(v, (str, np.str_)):
                raise ValueError
            return str(v)
        if isinstance(v, (bool, np.bool_)) or isinstance(v, (str, np.str_)):
            raise ValueError
        return float(v)
    except (TypeError, ValueError):
        raise ConfigError(f"sweep.axes.{path}: value {v!r} is not a valid {name}") from None


def parse_axes(spec: SweepSpec, schema=Config) -> list:
    axes_cfg = spec.axes
    if isinstance(axes_cfg, DictConfig):
        axes_cfg = OmegaConf.to_container(axes_cfg, resolve=False)
    if not axes_cfg:
        raise ConfigError(
            "sweep.axes is empty: give axes such as 'sweep.axes.model.rho=[0.1,0.4,0.8]' or "
            "run a named sweep (sweep=amp_gap, sweep=logit_gap, sweep=jury, "
            "sweep=acc_tradeoff, sweep=welfare_region)"
        )
    if spec.design not in DESIGNS:
        raise ConfigError(f"sweep.design must be one of {', '.join(DESIGNS)}, got {spec.design!r}")
    k = spec.cells_per_block
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_CELLS:
        raise ConfigError(f"sweep.cells_per_block must be an integer in [0, {MAX_CELLS:,}] "
                          f"(0: the model's own block size), got {k!r}")
    axes = []
    for section, fields in axes_cfg.items():
        if section not in sections_of(schema):
            from antiamp.config import close_matches

            near = close_matches(section, sections_of(schema), 1)
            hint = f"did you mean sweep.axes.{near[0]}? " if near else ""
            raise ConfigError(
                f"sweep.axes.{section}: unknown section; {hint}axes live under "
                f"{', '.join(sections_of(schema))}"
            )
        if not isinstance(fields, dict) or not fields:
            raise ConfigError(f"sweep.axes.{section} must map field names to values")
        types = _field_types(section, schema)
        for name, values in fields.items():
            path = f"{section}.{name}"
            if path == "model.name":
                raise ConfigError("sweep.axes.model.name: the model is not an axis; run one "
                                  "sweep per model (model=<name>)")
            if name not in types:
                from antiamp.config import close_matches

                near = close_matches(name, types, 1)
                hint = f"did you mean sweep.axes.{section}.{near[0]}? " if near else ""
                raise ConfigError(
                    f"sweep.axes.{path}: unknown field; {hint}{section} has "
                    f"{', '.join(types)}"
                )
            vals = _expand(path, values, spec.design)
            if spec.design == "grid":
                vals = [_coerce(path, types[name], v) for v in vals]
                if len(set(vals)) != len(vals):  # after coercion: [1, 1.0] repeats
                    raise ConfigError(f"sweep.axes.{path} repeats a value: {vals}")
                vals = np.asarray(vals)
            axes.append(Axis(path, name, vals, field_label(path), _UNITS.get(name, "1")))
    dims = [a.dim for a in axes]
    for a in axes:  # leaf names are the dimension names unless two sections share one
        if dims.count(a.dim) > 1:
            a.dim = a.path
    return axes


def _design_values(axes: list, spec: SweepSpec) -> list:
    from scipy.stats import qmc

    d = len(axes)
    if not 1 <= spec.n_points <= MAX_CELLS:
        raise ConfigError(f"sweep.n_points must be an integer in [1, {MAX_CELLS:,}], "
                          f"got {spec.n_points}")
    if not 0 <= spec.design_seed < 2**32:
        raise ConfigError(f"sweep.design_seed must be an integer in [0, 2**32), "
                          f"got {spec.design_seed}")
    if spec.design in SENSITIVITY:
        from antiamp import sensitivity

        if spec.design == "saltelli" and (spec.n_points < 2
                                          or spec.n_points & (spec.n_points - 1)):
            raise ConfigError(f"sweep.n_points must be a power of 2 (>= 2) for "
                              f"design=saltelli (the balance of the Sobol' sequence SALib "
                              f"samples), got {spec.n_points}")
        if spec.design == "saltelli" and d < 2:
            raise ConfigError("design=saltelli needs at least two swept fields (one factor "
                              "has all the variance: S1 = ST = 1)")
        if spec.design == "morris" and (isinstance(spec.morris_levels, bool) or not isinstance(
                spec.morris_levels, int) or spec.morris_levels < 2 or spec.morris_levels % 2):
            raise ConfigError(f"sweep.morris_levels must be an even integer >= 2, got "
                              f"{spec.morris_levels!r}")
        if spec.design == "morris" and spec.n_points < 2:
            raise ConfigError(f"sweep.n_points must be >= 2 Morris trajectories, got "
                              f"{spec.n_points}")
        cells = sensitivity.n_cells(spec.design, spec.n_points, d)
        if cells > MAX_CELLS:
            raise ConfigError(f"design={spec.design} with n_points={spec.n_points} and {d} "
                              f"fields is {cells:,} cells; the limit is {MAX_CELLS:,}")
        for a in axes:
            a.log = _is_log(spec, a.path)
            a.bounds = tuple(float(v) for v in a.values)
        return sensitivity.sample(axes, spec.design, spec.n_points, spec.design_seed,
                                  spec.morris_levels)
    if spec.design == "lhs":
        u = qmc.LatinHypercube(d=d, seed=spec.design_seed).random(spec.n_points)
    else:
        u = qmc.Sobol(d=d, scramble=True, seed=spec.design_seed).random(spec.n_points)
    out = []
    for k, a in enumerate(axes):
        lo, hi = a.values
        spec_k = "loguniform" if a.path and _is_log(spec, a.path) else "uniform"
        if spec_k == "loguniform":
            out.append(np.exp(np.log(lo) + u[:, k] * (np.log(hi) - np.log(lo))))
        else:
            out.append(lo + u[:, k] * (hi - lo))
    return out


def _is_log(spec: SweepSpec, path: str) -> bool:
    section, name = path.split(".")
    axes_cfg = spec.axes
    if isinstance(axes_cfg, DictConfig):
        axes_cfg = OmegaConf.to_container(axes_cfg, resolve=True)
    return "loguniform" in axes_cfg[section][name]


def _stream_of(cell_cfg: Config) -> int:
    """Independent-streams mode: a 32-bit stream word from the cell's parameters only."""
    secs = {s: dataclasses.asdict(getattr(cell_cfg, s)) for s in SWEEPABLE}
    secs["model"].pop("name", None)  # which model reads the numbers is not a parameter
    blob = json.dumps(secs, sort_keys=True).encode()
    return int.from_bytes(hashlib.blake2b(blob, digest_size=4).digest(), "little") | 1


class CellGrid:
    """The cells of a sweep (a grid or a design) as validated configs, in C order."""

    def __init__(self, base: Config, spec: SweepSpec, validator=None):
        self.base = base
        self.sections = sections_of(type(base))
        self.validator = validator or validate
        self.axes = parse_axes(spec, type(base))
        self._columns = None
        if spec.design == "grid":
            self.shape = tuple(len(a.values) for a in self.axes)
            n = math.prod(self.shape)
            if n > MAX_CELLS:  # before the grid is laid out in memory
                raise ConfigError(f"the sweep has {n:,} cells; the limit is {MAX_CELLS:,}")
            self.dims = tuple(a.dim for a in self.axes)
            # Each axis's values as Python scalars (what ``.item()`` gives), once: a
            # cell reads its own from them without the grid's columns laid out.
            self._values = [np.asarray(a.values).tolist() for a in self.axes]
        else:
            self._columns = _design_values(self.axes, spec)
            self.shape = (len(self._columns[0]),)
            self.dims = ("point",)
            for a, col in zip(self.axes, self._columns):
                a.values = np.asarray(col)
            self._values = None
        self.n_cells = int(np.prod(self.shape))
        self._sections = {s: getattr(base, s) for s in self.sections}
        self._paths = [tuple(a.path.split(".")) for a in self.axes]

    @property
    def columns(self) -> list:
        """Every cell's value of each axis (laid out on first use)."""
        if self._columns is None:
            grids = np.meshgrid(*[a.values for a in self.axes], indexing="ij")
            self._columns = [g.ravel() for g in grids]
        return self._columns

    def where(self, i: int) -> str:
        return ", ".join(f"{a.dim}={v!r}" for a, v in zip(self.axes, self._at(i)))

    def _at(self, i: int) -> list:
        """Cell ``i``'s value of each axis, as Python scalars."""
        if self._values is None:
            return [c[i].item() if hasattr(c[i], "item") else c[i] for c in self._columns]
        out = [None] * len(self.shape)
        for k in range(len(self.shape) - 1, -1, -1):  # C order: the last axis fastest
            i, j = divmod(i, self.shape[k])
            out[k] = self._values[k][j]
        return out

    def cell(self, i: int, validate=True) -> Config:
        """The validated config of cell ``i``; ConfigError names the cell and the field.
        ``validate=False`` builds it only (a cell of a grid whose plan validated every
        distinct combination of the fields its model's checks read); a callable
        validates it instead of the grid's validator."""
        changes: dict = {}
        for (s, name), v in zip(self._paths, self._at(i)):
            changes.setdefault(s, {})[name] = v
        cell = _replace(self.base, {s: _replace(self._sections[s], ch)
                                    for s, ch in changes.items()})
        if validate:
            try:
                (validate if callable(validate) else self.validator)(cell)
            except ConfigError as exc:
                raise ConfigError(f"sweep cell ({self.where(i)}): {exc}") from None
        return cell


class CellBlock(Sequence):
    """Cells ``start..stop-1`` of a :class:`CellGrid`: a sequence of their configs (each
    built on first use, not validated again: the grid's driver validated every
    cell), with the columns a vectorised model reads instead (:meth:`field`,
    :meth:`distinct`), so that such a model's block costs no config per cell.

    What the engine hands a model's ``run_cells`` (a list of configs serves too)."""

    def __init__(self, grid: CellGrid, start: int, stop: int):
        self.grid, self.start, self.stop = grid, int(start), int(stop)
        self.n_cells = self.stop - self.start
        self._cells: dict = {}
        self._index = None

    def __len__(self) -> int:
        return self.n_cells

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self.n_cells))]
        if i < 0:
            i += self.n_cells
        if not 0 <= i < self.n_cells:
            raise IndexError(f"cell {i} of a block of {self.n_cells}")
        if i not in self._cells:  # built only: the plan validated it (see the class)
            self._cells[i] = self.grid.cell(self.start + i, validate=False)
        return self._cells[i]

    def cell(self, i: int):
        return self[i]

    def where(self, i: int) -> str:
        return self.grid.where(self.start + i)

    def _axis_index(self) -> np.ndarray:
        """[cells, axes]: each cell's position on each axis (a design: its point)."""
        if self._index is None:
            cells = np.arange(self.start, self.stop)
            if self.grid._values is None:
                self._index = np.repeat(cells[:, None], len(self.grid.axes), axis=1)
            else:
                self._index = np.stack(np.unravel_index(cells, self.grid.shape), axis=1)
        return self._index

    def field(self, path: str) -> np.ndarray:
        """Every cell's value of the config field ``path`` ("section.name"): an axis's
        values, or the base config's value repeated."""
        for k, a in enumerate(self.grid.axes):
            if a.path == path:
                values = (self.grid.columns[k] if self.grid._values is None
                          else np.asarray(self.grid._values[k]))
                return np.asarray(values)[self._axis_index()[:, k]]
        section, name = path.split(".")
        v = getattr(getattr(self.grid.base, section), name)
        return np.full(self.n_cells, v, dtype=np.asarray(v).dtype)

    def distinct(self, fields) -> tuple[list, np.ndarray]:
        """(one config for each distinct combination of the axes that ``fields`` cover
        ("section", "section.*" or "section.name"), in order of first appearance;
        each cell's combination): what depends only on those fields is computed once
        a combination."""
        first, rank = self.distinct_index(fields)
        return [self[int(i)] for i in first], rank

    def distinct_index(self, fields) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`distinct` as positions in the block: (the first cell of each distinct
        combination, in order of first appearance; each cell's combination)."""
        from antiamp.layout import covers

        ks = [k for k, a in enumerate(self.grid.axes) if any(covers(f, a.path)
                                                             for f in fields)]
        if not ks or not self.n_cells:
            return (np.zeros(min(self.n_cells, 1), np.intp),
                    np.zeros(self.n_cells, np.intp))
        idx = self._axis_index()[:, ks]
        if self.grid._values is not None:  # a grid: the combination as one integer
            idx = np.ravel_multi_index(tuple(idx.T), tuple(self.grid.shape[k] for k in ks))
        else:
            idx = idx[:, 0]  # a design: every point its own combination
        _, first, inverse = np.unique(idx, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # groups in order of first appearance
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        return first[order], rank[inverse.ravel()]


def _replace(obj, changes: dict):
    """``dataclasses.replace(obj, **changes)`` for the config's plain dataclasses (no
    ``__post_init__``, no ``init=False`` fields), a tenth of its cost: a sweep
    builds every cell's config from the base this way (about 1 us a cell instead of
    10), which is most of the engine's overhead per block for a fast model."""
    t = type(obj)
    fast = _PLAIN.get(t)
    if fast is None:  # anything else goes through dataclasses.replace
        fast = _PLAIN[t] = (not hasattr(t, "__post_init__") and "__slots__" not in vars(t)
                            and all(f.init for f in dataclasses.fields(t)))
    if not fast:
        return dataclasses.replace(obj, **changes)
    new = object.__new__(t)
    new.__dict__.update(obj.__dict__)
    new.__dict__.update(changes)
    return new


_PLAIN: dict = {}


#: Fields that the judge's tables read (validated together: judge.kind and
#: protocol.consult_default constrain each other).
_TABLE_SECTIONS = ("judge", "protocol")


def grid_columns(grid: CellGrid) -> tuple:
    """Validate every cell of a grid column by column and compute the judge's tables.

    ``validate`` checks each field on its own, except judge.kind against
    protocol.consult_default; so each distinct value of an axis is validated once
    (with the base config), and each distinct combination of the judge and
    protocol axes once, where the judge's tables are also computed.  Returns
    ``(field, tkey, J_c [C, 2], J_d [C, 2, 2], checked)``: ``field(path)`` is the
    column of any config field (an axis, or the base value repeated), ``tkey`` the
    cell's judge/protocol combination, ``checked(i, paths, fn)`` runs ``fn`` on
    cell i's config restricted to ``paths`` (errors name the cell).

    The grid's base config is validated already (every caller builds it with
    :func:`~antiamp.config.to_config` or :func:`~antiamp.registry.to_model_config`);
    only what the axes change is checked here.
    """
    n = grid.n_cells
    base = grid.base
    col = {a.path: c for a, c in zip(grid.axes, grid.columns)}

    def value(v):
        return v.item() if hasattr(v, "item") else v

    def config_at(i: int, paths) -> Config:
        changes: dict = {}
        for path in paths:
            s, name = path.split(".")
            changes.setdefault(s, {})[name] = value(col[path][i])
        return dataclasses.replace(base, **{s: dataclasses.replace(getattr(base, s), **c)
                                            for s, c in changes.items()})

    def checked(i: int, paths, what):
        try:
            return what(config_at(i, paths))
        except ConfigError as exc:
            raise ConfigError(f"sweep cell ({grid.where(i)}): {exc}") from None

    def section_checked(i: int, path: str) -> None:
        """Cell i's value of ``path`` checked with its section alone (the base config
        is valid, and no check outside the judge and protocol reads two sections)."""
        s, name = path.split(".")
        try:
            validate_section(s, dataclasses.replace(getattr(base, s),
                                                    **{name: value(col[path][i])}))
        except ConfigError as exc:
            raise ConfigError(f"sweep cell ({grid.where(i)}): {exc}") from None

    table_paths = [p for p in col if p.split(".")[0] in _TABLE_SECTIONS]
    for path in col:  # every other field's values, each once
        if path not in table_paths:
            _, first = combos([col[path]], n)
            for i in first:
                section_checked(int(i), path)
    tkey, tfirst = combos([col[p] for p in table_paths], n)
    Jc_u = np.empty((len(tfirst), 2))
    Jd_u = np.empty((len(tfirst), 2, 2))
    for k, i in enumerate(tfirst):
        def tables(cell):
            if table_paths:  # the swept judge and protocol values (the base is valid)
                validate(cell, only=_TABLE_SECTIONS)
            return _judge.judge_tables(cell.judge, cell.protocol)
        Jc_u[k], Jd_u[k] = checked(int(i), table_paths, tables)

    def field(path):
        s, name = path.split(".")
        if path in col:
            return np.asarray(col[path])
        return np.full(n, getattr(getattr(base, s), name))

    field.axes = col  # the swept paths
    field.table_paths = table_paths
    return field, tkey, Jc_u[tkey], Jd_u[tkey], checked


def validate_executor(ex: ExecutorConfig, device: str | None = None) -> None:
    """Range checks of ``executor.*`` (ConfigError names the field); with the run's
    ``device``, whether the executor can give its blocks a GPU."""
    if ex.kind not in EXECUTORS:
        raise ConfigError(f"executor.kind must be one of {', '.join(EXECUTORS)}, got {ex.kind!r}")
    if ex.kind == "distributed" and not ex.address:
        raise ConfigError("executor.address is required with executor=distributed "
                          "(e.g. executor.address=tcp://127.0.0.1:8786)")
    if ex.kind == "distributed":
        import re

        if not re.fullmatch(r"(tcp|tls|ws|wss|ucx)://[^\s/:]+(:\d{1,5})?/?|inproc://\S+",
                            ex.address):
            raise ConfigError(f"executor.address must look like tcp://host:port, got "
                              f"{ex.address!r}")
    for name in ("n_workers", "jobs"):
        if getattr(ex, name) < 1:
            raise ConfigError(f"executor.{name} must be an integer >= 1")
    if ex.kind == "local" and not ex.processes and ex.n_workers > 1:
        raise ConfigError("executor.n_workers > 1 on the local executor needs "
                          "executor.processes=true (compiled kernels each use all cores)")
    if ex.threads_per_task < 0:
        raise ConfigError("executor.threads_per_task must be an integer >= 0")
    if ex.gpus < 0:
        raise ConfigError(f"executor.gpus must be an integer >= 0, got {ex.gpus}")
    if not ex.start_timeout > 0:  # NaN too
        raise ConfigError(f"executor.start_timeout must be a number of seconds > 0, got "
                          f"{ex.start_timeout!r}")
    if device == "cuda" and ex.kind == "slurm" and ex.gpus < 1:
        # Refused here, before any store: SLURM's workers would declare no GPU and no
        # block could start (a local executor runs a GPU's blocks in this process).
        raise ConfigError("executor.gpus must be >= 1 with run.device=cuda on executor=slurm "
                          "(it asks SLURM for the GPUs with --gres=gpu:N), got 0")


_LAST_PLAN: dict = {}


def plan_key(cfg: Any, *flags) -> str | None:
    """The plan cache's key: the config as given (axis order included)."""
    try:
        if isinstance(cfg, DictConfig):
            cfg = OmegaConf.to_container(cfg, resolve=True)
        if dataclasses.is_dataclass(cfg):
            cfg = dataclasses.asdict(cfg)
        cfg = {k: v for k, v in dict(cfg or {}).items() if k != "hydra"}
        return json.dumps([cfg, flags], default=repr)
    except Exception:
        return None


def _cached(key, build) -> Plan:
    """The last plan made, when made from the same config: the command line's check
    before the run and the run itself validate a grid once."""
    if key is not None and _LAST_PLAN.get("key") == key:
        return _LAST_PLAN["plan"]
    plan = build()
    _LAST_PLAN.clear()
    _LAST_PLAN.update(key=key, plan=plan)
    return plan


def config_dict(cfg) -> dict:
    """A config (a dict, a DictConfig or a config object) as a plain dict."""
    if isinstance(cfg, DictConfig):
        return OmegaConf.to_container(cfg, resolve=True)
    if dataclasses.is_dataclass(cfg):
        return {f.name: dataclasses.asdict(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)}
    return dict(cfg or {})


def sweep_spec(sweep: Any) -> SweepSpec:
    """The ``sweep`` section (a dict, a DictConfig or a SweepSpec) as a SweepSpec;
    ConfigError names an unknown or ill-typed key."""
    if isinstance(sweep, SweepSpec):
        return sweep
    if isinstance(sweep, DictConfig):
        sweep = OmegaConf.to_container(sweep, resolve=True)
    sweep = plain_values(sweep or {})
    # The axes (Dict[str, Any]: nothing for OmegaConf to type) kept out of the merge:
    # OmegaConf wraps and validates every value of a list axis one by one (1.3 s for
    # a 1,024-value list); the grid's own checks read them.
    axes = sweep.pop("axes", {}) if isinstance(sweep, dict) else {}
    if not isinstance(axes, dict):
        raise ConfigError(f"sweep: axes must be a mapping {{section: {{field: values}}}}, "
                          f"not {type(axes).__name__} ({axes!r:.60})")
    try:
        node = OmegaConf.structured(SweepSpec)
        spec = OmegaConf.to_object(OmegaConf.merge(node, sweep or {}))
    except Exception as exc:  # OmegaConf names the key
        raise ConfigError(f"sweep: {str(exc).splitlines()[0]}") from None
    spec.axes = axes
    return spec


def make_plan(cfg: Any, *, columnar: bool = True) -> Plan:
    """The validated plan of a sweep of any model, with its executor (cached: see
    :func:`_cached`); the model's checks of what its cells name (data files) run
    on it before any directory is made."""
    def build():
        plan = _make_plan(cfg, columnar=columnar)
        from antiamp.registry import check_inputs

        check_inputs(plan.model, (plan.grid.cell(i) for i in range(plan.n_cells)))
        return plan
    return _cached(plan_key(cfg, "sweep", columnar), build)


def _make_plan(cfg: Any, *, columnar: bool = True) -> Plan:
    """Validate a sweep config and every one of its cells, before any computation.

    A model with fused grids gets its fused plan (:func:`_fused_plan`); any other
    model its grid (:func:`plan_grid`) with the sweep's executor.
    """
    from antiamp.registry import get, model_of

    if get(model_of(config_dict(cfg))).fused_grid is not None:
        return _fused_plan(cfg, columnar=columnar)
    d = config_dict(cfg)
    check_flags(d, run_schema())
    try:
        ex = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(ExecutorConfig),
                                                 d.get("executor") or {}))
    except Exception as exc:
        raise ConfigError(f"executor: {str(exc).splitlines()[0]}") from None
    plan = _plan_grid(d)
    validate_executor(ex, plan.base.run.device)
    plan.executor = ex
    return plan


def _fused_plan(cfg: Any, *, columnar: bool = True) -> Plan:
    """The plan of a model with fused grids: the sweep's whole config validated, and
    every cell's kernel inputs and stream word.

    The cells are validated and turned into the model's inputs column by column
    (:func:`grid_columns`: each distinct value or combination once, whatever the
    number of cells, then the model's ``FusedGrid.columns``); ``columnar=False``
    does it cell by cell, the reference the tests hold the columnar plan to.
    """
    if isinstance(cfg, SweepConfig):
        scfg = cfg
    else:
        try:
            if isinstance(cfg, DictConfig):
                cfg = OmegaConf.to_container(cfg, resolve=True)
            cfg = plain_values({k: v for k, v in (cfg or {}).items() if k != "hydra"})
            check_flags(cfg, run_schema())
            scfg = to_dataclass(run_schema(), cfg, sweep_schema_node)
        except ConfigError:
            raise
        except Exception as exc:  # OmegaConf's errors name the key
            key = getattr(exc, "full_key", None)
            msg = str(exc).splitlines()[0]
            raise ConfigError(f"{key}: {msg}" if key else msg) from None
    from antiamp.registry import to_model_config

    model, checked = to_model_config(scfg)  # refuses sections the model does not read
    shared = ("model", "judge", "protocol", "welfare", "run")
    if model.prepare is None:  # its shared sections are the sweep's own, validated once
        base = Config(**{s: getattr(checked, s) for s in shared})
    else:  # a model's hook changed what it validated: the sweep's own, validated here
        base = to_config({s: dataclasses.asdict(getattr(scfg, s)) for s in shared})
    spec, ex = scfg.sweep, scfg.executor
    validate_executor(ex, base.run.device)
    if spec.cells_per_block < 0:
        raise ConfigError("sweep.cells_per_block must be an integer >= 0")
    fused = model.fused_grid
    plottable = list(fused.layout(None)[1])
    names = [v for v in plottable if not v.endswith(("_se", "_exact"))]
    for v in spec.plot_vars or []:  # before the sweep, not after it
        if v not in plottable:
            raise ConfigError(f"sweep.plot_vars: {v!r} is not a variable of the store; choose "
                              f"from {', '.join(names)} (or their _se, _exact)")
    grid = CellGrid(base, spec)
    columns = fused.columns(grid, grid_columns(grid) if columnar else None)
    streams = np.zeros(grid.n_cells, np.uint64)
    if not spec.crn:  # a stream word per cell, hashed from its whole config
        for i in range(grid.n_cells):
            streams[i] = _stream_of(grid.cell(i))
    return Plan(model, base, spec, grid, spec.cells_per_block, executor=ex, cfg=scfg,
                fused=fused, columns=columns, streams=streams)


def plan_grid(cfg: Any, *, cells_per_block: int | None = None, validate_all: bool = True
              ) -> Plan:
    """:func:`_plan_grid`, cached (:func:`_cached`)."""
    return _cached(plan_key(cfg, cells_per_block, validate_all),
                   lambda: _plan_grid(cfg, cells_per_block=cells_per_block,
                                      validate_all=validate_all))


def _plan_grid(cfg: Any, *, cells_per_block: int | None = None, validate_all: bool = True
               ) -> Plan:
    """Validate a model's grid: the base config, the axes and (by default) every cell.

    ``cfg`` is the nested config with ``model.name`` and ``sweep.axes``; every bad
    value raises :class:`ConfigError` naming the field (and the cell) before any
    computation.  The plan's blocks are calls of the model's ``run_cells`` (an
    in-memory grid, or a store of any model through
    :func:`antiamp.sweeps.blocks.run_grid_store`); its executor is unset.
    """
    from antiamp.registry import to_model_config

    cfg = config_dict(cfg)
    spec = sweep_spec(cfg.get("sweep"))
    model, base = to_model_config(cfg)
    readable = set(model.uses) | set(model.sections)
    for section in (spec.axes or {}):
        if section in type(base).SWEEPABLE and section not in readable:
            raise ConfigError(f"sweep.axes.{section}: model {model.name} does not read "
                              f"{section}.*; its sections are {', '.join(sorted(readable))}")

    def check(cell):
        validate(cell)
        if model.validate is not None:
            model.validate(cell)

    grid = CellGrid(base, spec, validator=check)
    if validate_all and model.validate_reads is not None:
        # Every field's values column by column (the fused grids' check), then the
        # model's own check on one cell of each distinct combination of the axes
        # it reads (each built through ``check``: ConfigError names the cell).
        from antiamp.layout import covers

        grid_columns(grid)
        if any(covers(f, a.path) for f in model.validate_reads for a in grid.axes):
            # The sections the axes change, checked whole (a check reading two of a
            # section's fields sees the combination), and the model's check; the base
            # config's other sections are valid (to_model_config), and checking them
            # again a cell was most of a combination's cost (19 sections' memo keys).
            swept = tuple({a.path.split(".")[0]: None for a in grid.axes})

            def combination(cell):
                validate(cell, only=swept)
                if model.validate is not None:
                    model.validate(cell)

            first, _ = CellBlock(grid, 0, grid.n_cells).distinct_index(model.validate_reads)
            for i in first:
                grid.cell(int(i), validate=combination)  # a block's cells: built only
        # else the base config's own check (to_model_config) covered every cell
    elif validate_all:  # every cell, before any work (ConfigError names the cell)
        for i in range(grid.n_cells):
            grid.cell(i)
    if model.same_in_grid:  # what every cell must share, before any computation
        from antiamp.layout import covers
        from antiamp.registry import check_same_in_grid

        whole = CellBlock(grid, 0, grid.n_cells)
        cells = {}
        for path in model.same_in_grid:
            if any(covers(path, a.path) for a in grid.axes):
                first, _ = whole.distinct_index((path,))
                cells[path] = ((int(i), grid.cell(int(i))) for i in first)  # built lazily
        check_same_in_grid(model, cells, grid.where)
    own = model.cells_per_block
    own = own(base) if callable(own) else own
    k = cells_per_block or spec.cells_per_block or own or 64
    return Plan(model, base, spec, grid, max(1, min(k, grid.n_cells)))
