"""The model interface and the registry: names -> models, built-in and third-party.

A model is one module that builds a :class:`Model`: its name, the config
sections it adds to the shared schema (``model``, ``judge``, ``protocol``,
``welfare``, ``run`` are everyone's), its validation, and ``run_cells``, which
turns a list of validated cell configs into a Dataset with a leading ``cell``
dimension (values and standard errors, solved strategies, certificates).  The
sweep engine (:mod:`antiamp.sweeps.blocks`: one cell, an in-memory grid, or a
resumable grid on dask) only ever calls that interface, so every command runs every
registered model.

Third-party packages add models through the ``antiamp.models`` entry-point
group; the entry point names a :class:`Model` object (or a module with a
``MODEL`` attribute)::

    [project.entry-points."antiamp.models"]
    mymodel = "mypackage.model:MODEL"

The registry imports a model's module only when the model is first asked for,
and the schema only imports the (light) config dataclasses.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Union

from .config import (DEFAULT_MODEL, Config, ConfigError, check_flags, check_sections, plain_values,
                     to_dataclass)

#: Section names every model shares (defined in :mod:`antiamp.config`).
BASE_SECTIONS = ("model", "judge", "protocol", "welfare", "run", "export")

#: The package whose subpackages are the built-in models (each one a package with
#: ``config.SECTIONS``, ``config.EXAMPLES`` and a lazily loaded ``MODEL``).
BUILTIN_PACKAGE = "antiamp.models"

ENTRY_POINT_GROUP = "antiamp.models"


def blocks_by_instances(small: int, at: int, most: int = 1024) -> Callable[[Any], int]:
    """A model's default block (:attr:`Model.cells_per_block`) that grows as a cell's
    instances fall: ``small`` cells at ``at`` instances a cell or more (a cell's kernel
    pass and exact values, tens of milliseconds or more: blocks small enough to spread
    over workers and to resume), about as many instances a block below that, at most
    ``most`` cells, so that a block's own cost, its Dataset and chunk files, stays small
    beside its cells'."""

    def cells_per_block(base) -> int:
        return int(max(small, min(most, small * at // max(1, int(base.run.n_instances)))))

    return cells_per_block


def blocks_by_cost(fixed_ms: float, ms_per_million: float, seconds: float = 6.0,
                   least: int = 16, most: int = 1024) -> Callable[[Any], int]:
    """A model's default block (:attr:`Model.cells_per_block`) by what a default cell
    costs: ``fixed_ms`` of CPU whatever its instances (exact values, solvers) plus
    ``ms_per_million`` a million instances, about ``seconds`` of it a block, between
    ``least`` and ``most`` cells: a block's own cost, its Dataset and chunk files (tens of
    milliseconds), stays small beside its cells', and blocks still spread over workers
    and resume finely.  For models whose cells cost milliseconds whatever their
    instances, where :func:`blocks_by_instances` left blocks of under a second."""

    def cells_per_block(base) -> int:
        ms = fixed_ms + ms_per_million * int(base.run.n_instances) / 1e6
        return int(max(least, min(most, seconds * 1e3 / max(ms, 1e-9))))

    return cells_per_block


@dataclass(frozen=True)
class FusedGrid:
    """What the sweep engine needs to run a model's grids fused: each cell's result
    is a row of integer counts (how many instances fell in each class) drawn by one
    kernel, and every other per-cell variable is a function of the counts.

    The engine owns the rest (blocks as dask tasks, sharing one kernel call between
    cells whose kernel inputs are equal, the store, its checksums, resume, lock,
    verification and repair); every callable is a module-level function, so that a
    block's task pickles by reference.

    Attributes
    ----------
    n_counts : int
        Counts per cell (the classes of an instance).
    counts_name, counts_dim, counts_attrs
        The counts' variable in the store, its trailing dimension and attributes.
    columns : callable ``(grid, table_columns) -> object``
        Every cell's inputs, validated: ``grid`` is the sweep's
        :class:`~antiamp.sweeps.spec.CellGrid`, ``table_columns`` the result of
        :func:`~antiamp.sweeps.spec.grid_columns` (each field validated once per
        distinct value), or None to build the inputs one cell at a time.
    kernel_inputs : callable ``(columns, cells, streams) -> dict``
        The kernel's inputs of the given cells, each an array with a row per cell
        (``streams``: each cell's stream word, or None on common random numbers).
        Cells whose rows are equal in every input share one kernel call.
    count : callable ``(inputs, n, seed, n_threads, device) -> int64 [cells, n_counts]``
        The kernel: counts of ``n`` instances per cell (``device``: ``run.device``).
    values : callable ``(columns, cells, counts, n) -> dict``
        Every derived variable of the given cells, ``name -> [cells, ...]`` (the
        counts alone decide them: a store is verified by recomputing them).
    layout : callable ``(plan) -> (coords, variables, static)``
        The store's layout: extra ``coords`` (``name -> (dims, values, attrs)``),
        the derived ``variables`` (``name -> (trailing dims, trailing shape,
        attrs)``, float, NaN until written) in the order ``values`` gives them, and
        ``static`` per-cell variables known from the plan (``name -> (array over
        the cells, attrs)``), written when the store is created.
    counts_total : bool
        Every cell's counts sum to its instances (checked when a store is verified).
    dataset : callable ``(cells, columns, counts) -> xarray.Dataset``, optional
        A block's Dataset as ``run_cells`` returns it (``cells``: the validated
        cell configs), from its counts: with it, in-memory grids and the cells of
        any block run the fused kernel pass too.
    """

    n_counts: int
    columns: Callable[[Any, Any], Any]
    kernel_inputs: Callable[[Any, Any, Any], dict]
    count: Callable[..., Any]
    values: Callable[..., dict]
    layout: Callable[[Any], tuple]
    counts_name: str = "class_counts"
    counts_dim: str = "class"
    counts_attrs: Mapping[str, Any] = field(default_factory=dict)
    counts_total: bool = True
    dataset: Optional[Callable[..., Any]] = None


@dataclass(frozen=True)
class Model:
    """What a model declares; the engines need nothing else.

    Parameters
    ----------
    name : str
        Registry name, the value of ``model=<name>`` (``model.name``).
    title : str
        One line for help and dataset titles.
    run_cells : callable ``(base, cells) -> xarray.Dataset``
        ``base`` is the validated config of the whole run, ``cells`` the
        validated configs of the cells to compute (a block of a grid, or one
        cell).  Returns a Dataset whose per-cell variables lead with a ``cell``
        dimension of length ``len(cells)``.  A cell's values must depend only on
        its own config (seed and n included), never on the other cells of the
        call: that is what makes blocks, workers and resumes give the same bits.
    sections : mapping
        Config sections the model adds, ``name -> dataclass``.
    uses : tuple
        Every section the model reads (its own and shared ones); axes over other
        sections are refused.
    validate : callable ``(cfg) -> None``, optional
        Model-specific checks after the shared ones; raise
        :class:`~antiamp.config.ConfigError` naming the field and its range.
    validate_reads : tuple, optional
        The config paths ("section.name", "section.*" or "section") that
        ``validate`` reads.  Declared, a grid is validated column by column (each
        field's values once, as the fused grids are) and ``validate`` once for each
        distinct combination of the axes it reads; not declared, every cell is
        validated whole.
    check_inputs : callable ``(cfg) -> None``, optional
        The checks that read what a config names (a data file, a table): run by
        every command's check before anything is made (:func:`check_inputs`), so
        that a bad input is refused before a run directory exists.
    same_in_grid : mapping, optional
        ``{"section.name": (what, key)}``: what every cell of a grid must share (its
        Dataset's dimensions), ``key(cfg)`` the value compared.  A grid whose axes
        cover a field is refused at planning, before any computation, when two of
        its cells' keys differ (:func:`check_same_in_grid`); the field names the
        error.
    work : callable ``(size) -> (float, str)``, optional
        What one cell costs, in baseline instances (the unit of
        :data:`antiamp.sweeps.budget.NOMINAL_RATE`), and the sizes that say so, for
        the work bound every command checks first; ``size(section, field, default)``
        reads a size field of the request (a grid axis's mean).  Not declared: a
        cell costs ``run.n_instances``.
    prepare : callable ``(dict) -> dict``, optional
        Adjust the plain config before validation (e.g. strategies that the
        model solves for are not inputs).
    kernel_fields : tuple
        Config paths the compiled kernel reads ("section.name" or "section.*");
        cells that agree on them share one kernel call:
        :func:`antiamp.layout.kernel_groups` groups a block's cells by them (from
        the block's axes when the engine hands the block).
    format_table, figures : callable, optional
        ``format_table(ds) -> str`` for one cell; ``figures(ds, path) -> [paths]``
        for a grid.
    cell_figures : callable, optional
        ``cell_figures(ds, path) -> [paths]``: the figures of one cell (written by
        ``antiamp`` beside the cell's store when ``run.figure`` is true).
    plot_vars : tuple
        Default variables of generic figures.
    cells_per_block : int or callable
        Default block size of grid runs (one dask task, one resume unit), or
        ``cells_per_block(base) -> int`` of the grid's validated base config (a model
        whose cells are cheap together and dear alone chooses by its settings).
    run_cell : callable ``(cfg, **kwargs) -> xarray.Dataset``, optional
        A one-cell path of the model's own (``antiamp.simulate`` and ``antiamp``
        use it); without it one cell runs through ``run_cells``.
    theory : callable ``(cfg) -> xarray.Dataset``, optional
        The model's closed forms for one scenario (``antiamp.theory``).
    groups : mapping
        Config group options the model chooses unless the command line chooses
        another (``{"judge": "logit"}``); a built-in model declares them as
        ``GROUPS`` in its ``config.py``.
    gpu : bool
        Its kernels run on a GPU with ``run.device=cuda`` (``auto`` runs the
        others on the CPU; ``cuda`` is refused for them).
    fused_grid : FusedGrid, optional
        The model's cells reduce to integer counts from one kernel: its grids run
        fused (:mod:`antiamp.sweeps.engine`: one kernel pass per block on common
        random numbers, kernel calls shared between cells with identical inputs,
        a store written chunk by chunk with a checksum per cell) rather than a
        ``run_cells`` call per block.
    examples : tuple of ``(what, config)``
        Small runs of the model that reach every one of its kernels with the
        argument types real runs use (a config with ``sweep`` runs as a grid, one
        with ``export`` as a transcript export): ``antiamp warm`` runs them to
        compile the kernels into numba's cache.  A built-in model's default: the
        ``EXAMPLES`` of its ``config.py``.
    grids : tuple of dict
        Small grids of the model (configs with ``sweep.axes``, each axis with at
        least two values): what :func:`antiamp.testing.check_model` checks the
        model on.  A built-in model's default: the ``GRIDS`` of its ``config.py``.
    """

    name: str
    title: str
    run_cells: Callable[[Any, list], Any]
    sections: Mapping[str, type] = field(default_factory=dict)
    uses: tuple = BASE_SECTIONS
    validate: Optional[Callable[[Any], None]] = None
    validate_reads: Optional[tuple] = None
    check_inputs: Optional[Callable[[Any], None]] = None
    same_in_grid: Mapping[str, tuple] = field(default_factory=dict)
    work: Optional[Callable[..., tuple]] = None
    prepare: Optional[Callable[[dict], dict]] = None
    kernel_fields: tuple = ()
    format_table: Optional[Callable[[Any], str]] = None
    figures: Optional[Callable[[Any, Any], list]] = None
    cell_figures: Optional[Callable[[Any, Any], list]] = None
    plot_vars: tuple = ("amp",)
    cells_per_block: Union[int, Callable[[Any], int]] = 64
    run_cell: Optional[Callable[..., Any]] = None
    theory: Optional[Callable[[Any], Any]] = None
    fused_grid: Optional[FusedGrid] = None
    gpu: bool = False
    groups: Mapping[str, str] = field(default_factory=dict)
    examples: tuple = ()
    grids: tuple = ()


def strategies_solved(cfg: dict) -> dict:
    """A ``prepare`` hook for models that solve for (or fix) the presentation
    strategies: ``model.x_*`` are not inputs, so the dominance check is skipped."""
    return {**cfg, "model": {**(cfg.get("model") or {}), "x_P": 1.0, "x_A": 1.0,
                             "x_P_consult": 1.0}}


def require_signal_stance(cfg, name: str) -> None:
    """Models where the protagonist argues its signal (a = s_P)."""
    if cfg.model.stance != "signal":
        raise ConfigError(f"model={name} needs model.stance=signal (a = s_P, Pr(a = omega) = p)")


_MODELS: dict = {}
_PLUGINS: Optional[dict] = None


def _entry_points() -> dict:
    """Third-party models: entry-point name -> EntryPoint (loaded on first use)."""
    global _PLUGINS
    if _PLUGINS is None:
        from importlib.metadata import entry_points

        _PLUGINS = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return _PLUGINS


_BUILTIN: Optional[tuple] = None


def builtin_names() -> tuple:
    """The built-in models: the subpackages of :mod:`antiamp.models`, found the way a
    scan finds any package (no table of names), the default model first."""
    global _BUILTIN
    if _BUILTIN is None:
        import pkgutil

        pkg = importlib.import_module(BUILTIN_PACKAGE)
        found = sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if m.ispkg)
        _BUILTIN = tuple(sorted(found, key=lambda n: n != DEFAULT_MODEL))
    return _BUILTIN


def builtin_config(name: str):
    """The settings of a built-in model (its ``config`` module: ``SECTIONS``,
    ``EXAMPLES``, ``GRIDS``), light: not its numerics."""
    return importlib.import_module(f"{BUILTIN_PACKAGE}.{name}.config")


def group_defaults(name: str) -> dict:
    """The config group options a model chooses by default (``{"judge": "logit"}``):
    a built-in model's ``config.GROUPS``, a registered model's ``Model.groups``."""
    if name in builtin_names():
        return dict(getattr(builtin_config(name), "GROUPS", None) or {})
    return dict(get(name).groups)


def _apply_group_defaults(cfg: dict, name: str) -> None:
    """The model's own group choices (:func:`group_defaults`) under a dict config, as
    the command line composes them: each option's file (``conf/<group>/<option>.yaml``)
    sets what the config's section leaves unset; a value the config gives wins (so
    ``{"judge": {"kind": "tiebreak"}}`` is the user's choice, refused with its reason
    by a model that needs another)."""
    from importlib.resources import files

    import yaml

    for group, option in group_defaults(name).items():
        path = files("antiamp.conf").joinpath(group).joinpath(f"{option}.yaml")
        if not path.is_file():
            continue
        content = yaml.safe_load(path.read_text()) or {}
        content.pop("defaults", None)
        given = cfg.get(group)
        given = dict(given) if isinstance(given, Mapping) else given
        if given is None or isinstance(given, dict):
            cfg[group] = {**content, **(given or {})}


def summary(name: str) -> str:
    """The first sentence of a model's description: a built-in package's docstring, or
    a registered model's title."""
    if name in builtin_names():
        doc = (importlib.import_module(f"{BUILTIN_PACKAGE}.{name}").__doc__ or "")
        doc = doc.strip().split("\n\n")[0]
        return " ".join(doc.split()).split(". ")[0].rstrip(".")
    return get(name).title


def names() -> list:
    """Every registered model name: the built-ins, then third-party ones."""
    out = list(builtin_names())
    out += [n for n in _MODELS if n not in out]
    out += [n for n in _entry_points() if n not in out]
    return out


def register(model: Model) -> Model:
    """Register a model object (also how entry points and tests add models)."""
    if not isinstance(model, Model):
        raise TypeError(f"register() takes an antiamp Model, not {type(model).__name__}")
    _MODELS[model.name] = model
    _schema_cache.clear()
    return model


def get(name: str) -> Model:
    """The model registered as ``name``; ConfigError lists the known names."""
    if name in _MODELS:
        return _MODELS[name]
    obj = None
    if name in builtin_names():
        obj = importlib.import_module(f"{BUILTIN_PACKAGE}.{name}.model").MODEL
    elif name in _entry_points():
        obj = _entry_points()[name].load()
        obj = getattr(obj, "MODEL", obj)
    if obj is None:
        raise ConfigError(f"model.name must be one of {', '.join(names())}, got {name!r}")
    if not isinstance(obj, Model) or obj.name != name:
        raise ConfigError(f"model {name!r} does not provide an antiamp Model named {name!r}")
    if name in builtin_names():  # a built-in's examples and grids: its config.py's
        settings = builtin_config(name)
        obj = dataclasses.replace(
            obj, examples=obj.examples or tuple(getattr(settings, "EXAMPLES", ())),
            grids=obj.grids or tuple(getattr(settings, "GRIDS", ())))
    _MODELS[name] = obj
    return obj


_schema_cache: dict = {}


def section_types(include_plugins: bool = True) -> dict:
    """Every model section ``name -> dataclass`` (built-in ones without importing models)."""
    declared = [(n, builtin_config(n).SECTIONS) for n in builtin_names()]
    declared += [(m.name, m.sections) for m in _MODELS.values()]
    if include_plugins:
        declared += [(n, get(n).sections) for n in _entry_points() if n not in builtin_names()]
    out: dict = {}
    for name, sections in declared:
        for k, typ in sections.items():
            if k in BASE_SECTIONS:
                raise ConfigError(f"model {name!r} redefines the shared section {k!r}")
            if k in out and out[k] is not typ:
                raise ConfigError(f"models disagree on the type of config section {k!r}")
            out[k] = typ
    return out


def schema(extra: Mapping[str, type] | None = None) -> type:
    """The root config dataclass: the shared sections plus every model's sections.

    ``extra`` adds command sections (``sweep``, ``executor``).  One class per set of
    sections, built once: every model's config is an instance of it.
    """
    secs = section_types()
    key = (tuple(sorted((k, id(v)) for k, v in secs.items())),
           tuple(sorted((k, id(v)) for k, v in (extra or {}).items())))
    if key not in _schema_cache:
        fields = [(k, typ, dataclasses.field(default_factory=typ))
                  for k, typ in {**secs, **(extra or {})}.items()]
        name = "AntiampConfig" if not extra else "AntiampRunConfig"
        cls = dataclasses.make_dataclass(name, fields, bases=(Config,))
        cls.SWEEPABLE = ("model", "judge", "protocol", "welfare", *secs)
        if not extra:  # picklable by name (blocks send validated configs to workers)
            cls.__module__, cls.__qualname__ = __name__, name
        _schema_cache[key] = cls
    return _schema_cache[key]


def __getattr__(name):  # the root schema by name, for pickle in worker processes
    if name == "AntiampConfig":
        return schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def model_of(cfg: Any) -> str:
    """The model name of a config (dict, DictConfig or dataclass); ``extension`` is
    the older spelling of ``model.name``."""
    if dataclasses.is_dataclass(cfg):
        return cfg.model.name
    if cfg is not None and not hasattr(cfg, "get"):
        raise ConfigError(f"a config is a dict of sections, a DictConfig or a config object, "
                          f"not {type(cfg).__name__}")
    m = (cfg or {}).get("model") or {}
    name = m.get("name") if hasattr(m, "get") else None
    return name or (cfg or {}).get("extension") or DEFAULT_MODEL


def to_model_config(cfg: Any, model: Model | None = None):
    """``(model, validated config)`` from a dict, DictConfig or dataclass.

    Sections other than the model's (``sweep``, ``executor``, ``hydra``) are left
    out; the model's ``prepare`` hook runs first, then the shared checks, then the
    model's own.
    """
    from omegaconf import DictConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from .config import validate

    if dataclasses.is_dataclass(cfg):
        cfg = {f.name: dataclasses.asdict(getattr(cfg, f.name))
               for f in dataclasses.fields(cfg) if f.name in _all_sections()}
    if isinstance(cfg, DictConfig):
        cfg = OmegaConf.to_container(cfg, resolve=True)
    if cfg is not None and not isinstance(cfg, dict):
        raise ConfigError(f"a config is a dict of sections, a DictConfig or a config object, "
                          f"not {type(cfg).__name__}")
    cfg = plain_values(dict(cfg or {}))
    check_sections(cfg)
    name = model_of(cfg)
    if not isinstance(name, str):
        raise ConfigError(f"model.name must be one of {', '.join(names())}, got {name!r}")
    model = model or get(name)
    cfg.pop("extension", None)
    cfg["model"] = {**(cfg.get("model") or {}), "name": model.name}
    _apply_group_defaults(cfg, model.name)
    keep = set(model.uses) | set(model.sections)
    types = section_types()
    for k, v in cfg.items():
        if k in keep or k in ("hydra", "sweep", "executor"):
            continue
        if k not in types and k not in BASE_SECTIONS:
            raise ConfigError(f"unknown config section {k!r}")
        # A composed config carries every model's sections at their defaults; a
        # section set away from them that this model does not read is a mistake.
        default = (types[k] if k in types else
                   {f.name: f.default_factory for f in dataclasses.fields(Config)}[k])
        if v not in (None, {}) and v != dataclasses.asdict(default()):
            raise ConfigError(f"model {model.name} does not read {k}.*; it reads "
                              f"{', '.join(sorted(keep))} (choose the model with model=<name>)")
    cfg = {k: v for k, v in cfg.items() if k in keep}
    check_flags(cfg, schema())
    if model.prepare is not None:
        cfg = model.prepare(cfg)
    try:  # OmegaConf, where needed, converts what it can and names the key of what it cannot
        obj = to_dataclass(schema(), cfg, lambda: _structured(schema()))
    except OmegaConfBaseException as exc:
        from .config import omegaconf_error

        raise omegaconf_error(exc) from None
    validate(obj)
    if obj.run.device == "cuda" and not model.gpu:
        raise ConfigError(f"run.device=cuda: model {model.name}'s kernels run on the CPU only "
                          f"(models with GPU kernels: {', '.join(gpu_models())}); use "
                          "run.device=cpu or run.device=auto")
    if model.validate is not None:
        model.validate(obj)
    return model, obj


def gpu_models() -> list:
    """The registered models whose kernels run on a GPU (``run.device=cuda``)."""
    out = []
    for n in names():
        try:
            if get(n).gpu:
                out.append(n)
        except Exception:  # noqa: BLE001 - a model that does not load runs nowhere
            continue
    return out


def check_inputs(model: Model, cfgs) -> None:
    """The model's checks of what its configs name (``model.check_inputs``), on each
    of ``cfgs`` (one validated config or an iterable of them)."""
    if model.check_inputs is None:
        return
    for c in ([cfgs] if dataclasses.is_dataclass(cfgs) else cfgs):
        model.check_inputs(c)


def check_same_in_grid(model: Model, cells, where) -> None:
    """Refuse a grid whose cells differ in what ``model.same_in_grid`` names: ``cells``
    maps field -> the configs of the distinct combinations of the axes that cover it
    (an iterable of ``(position, config)``, read up to the first that differs), ``where(i)`` names cell ``i``.  One line naming the
    field and both cells' values, before any computation."""
    for path, (what, key) in model.same_in_grid.items():
        seen: dict = {}
        for i, c in cells.get(path, ()):
            seen.setdefault(key(c), i)
            if len(seen) > 1:
                (a, ia), (b, ib) = list(seen.items())[:2]
                raise ConfigError(f"{path}: every cell of a grid must have the same {what}; "
                                  f"cell ({where(ia)}) has {a!r}, cell ({where(ib)}) {b!r}")


_structured_cache: dict = {}


def _structured(cls):
    """The schema as an OmegaConf node, built once per schema class (building it costs
    about 40 ms; ``OmegaConf.merge`` copies its first argument, so it is never changed)."""
    from omegaconf import OmegaConf

    if cls not in _structured_cache:
        _structured_cache.clear()
        _structured_cache[cls] = OmegaConf.structured(cls)
    return _structured_cache[cls]


def _all_sections() -> set:
    return set(BASE_SECTIONS) | set(section_types())
