"""The ``antiamp`` command: one scenario of the baseline model, Hydra-configured.

    antiamp model.rho=0.4 judge=logit judge.kappa=2 run.n_instances=100000000

Overrides are composed and validated *before* Hydra creates its run directory,
so a bad value exits with status 2, a message naming the field and its range,
and no output.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path

import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from .cmdline import interrupted, out_of_memory  # Ctrl-C: one line, exit 130
from .config import ConfigError
from .registry import schema

log = logging.getLogger("antiamp")

CONFIG_MODULE = "antiamp.conf"


def _plain_overrides(args: list[str]) -> list[str] | None:
    """Overrides of a single run (None when Hydra flags such as -m or --help are present)."""
    if any(a.startswith("-") for a in args):
        return None
    return [a for a in args if not a.lstrip("+~").startswith("hydra")]


def compose_overrides(args: list[str], config_name: str, extra=(), hydra_cfg: bool = False):
    """The config ``config_name`` composed with the command-line overrides, as a plain
    container, without starting a Hydra run (None when Hydra flags are present).

    ``extra`` are further overrides (``hydra.run.dir=...``); ``hydra_cfg`` keeps the
    ``hydra`` node (to know the run directory)."""
    from hydra import compose
    from omegaconf import OmegaConf

    from . import cmdline

    overrides = _plain_overrides(args)
    if overrides is None:
        return None
    # The search path and config name of the command line's flags (--config-name...).
    name = cmdline.CONFIG_NAME = cmdline.config_name(config_name)  # for "did you mean"
    if cmdline.SINGLE_RUN:  # composed once, as Hydra's run will, which then takes it
        cfg = cmdline.compose_run(CONFIG_MODULE, name, list(args))
    else:
        with cmdline.initialized(CONFIG_MODULE):
            cfg = compose(config_name=name, overrides=overrides + list(extra),
                          return_hydra_config=hydra_cfg)
    out = {k: OmegaConf.to_container(cfg[k], resolve=True) if OmegaConf.is_config(cfg[k])
           else cfg[k] for k in cfg if k != "hydra"}
    if hydra_cfg:  # the run directory only (the rest needs a running job to resolve)
        out["hydra"] = {"run": {"dir": OmegaConf.select(cfg, "hydra.run.dir")}}
    return out


def prevalidate(args: list[str], config_name: str = "config") -> None:
    """Compose the config from ``args`` and validate it, touching no file."""
    from .registry import to_model_config

    if config_name == "config":  # ``antiamp``: one cell; grids belong to antiamp-sweep
        for a in args:
            key = a.lstrip("+~").split("=", 1)[0]
            if key.split(".")[0] in ("sweep", "executor"):
                raise ConfigError(
                    f"{key}: antiamp runs one cell; grids and executors belong to "
                    f"antiamp-sweep (antiamp-sweep {a.lstrip('+~')} ...)")
    from .registry import check_inputs

    cfg = compose_overrides(args, config_name, hydra_cfg=config_name == "config")
    run_dir = ((cfg or {}).pop("hydra", None) or {}).get("run", {}).get("dir")
    if cfg is not None:
        from .sweeps.budget import check_budget

        check_budget(cfg)
        model, c = to_model_config(cfg)  # the shared checks and the model's
        check_inputs(model, c)  # what the config names (a data file)
        if run_dir and not CHECKING_MULTIRUN:  # before Hydra makes the run directory
            from .output import check_replaceable
            from .outputs_policy import OutputError

            try:
                check_replaceable(Path(run_dir) / "results.zarr")
                _probe_writers(run_dir, cfg)
            except OutputError as exc:
                raise ConfigError(str(exc)) from None
        say_estimate(cfg)
        _CHECKED[:] = [cfg, model, c]  # the run takes them (validated once)


def _outputs(run_dir, export: dict) -> list:
    """``(path, option)`` of what a run writes under a lock: its store, and its export
    file (``export.path``: relative to the run directory, or absolute)."""
    out = [(Path(run_dir) / "results.zarr", "hydra.run.dir")]
    if export.get("n_instances"):
        path = Path(str(export["path"]))
        out.append((path if path.is_absolute() else Path(run_dir) / path, "export.path"))
    return out


def _probe_writers(run_dir, cfg: dict) -> None:
    """``OutputError`` when another command holds the lock of the store or export file
    this run writes (no lock file is made: the run takes the locks when it starts)."""
    from .outputs_policy import OutputError
    from .sweeps.lockpath import lock_store

    for path, option in _outputs(run_dir, cfg.get("export") or {}):
        lock_store(path, OutputError, "antiamp run", read_only=True,
                   option=option).release()


def say_estimate(cfg: dict) -> None:
    """Print the request's estimated work before it starts, where it is long enough to
    matter (:func:`antiamp.sweeps.budget.describe`)."""
    from .sweeps.budget import describe

    from . import cmdline

    line = describe(cfg)
    if line is not None and cmdline.CURRENT is not None and cmdline.CURRENT.runs:
        print(line, flush=True)


#: The config the check of a single run composed (plain), its model and its validated
#: config: :func:`_validated` hands them to the run instead of converting it again.
_CHECKED: list = []


def _validated(cfg: dict):
    """``(model, validated config)`` of the run's config: the check's, when the run's
    config is the one it checked (a single run), else converted and validated here (a
    job of a multirun)."""
    from .registry import to_model_config

    checked, _CHECKED[:] = list(_CHECKED), []
    if checked and checked[0] == cfg:
        return checked[1], checked[2]
    return to_model_config(cfg)


def register_model_options() -> None:
    """Make every registered model, built-in or third-party, a choice of the ``model``
    config group (Hydra's ConfigStore: no file per model in ``conf/``)."""
    from .registry import group_defaults, names

    for n in names():
        # The model's own group choices as overrides in its defaults list (they need
        # the group before ``model`` in the primary config's defaults).
        node = {"name": n}
        chosen = group_defaults(n)
        if chosen:
            node = {"defaults": [{f"override /{g}@_global_.{g}": o} for g, o in chosen.items()],
                    **node}
        ConfigStore.instance().store(group="model", name=n, node=node)


def _group_option(group: str, option: str):
    """(package, content) of a config group's option, or None if it is not a group."""
    from importlib.resources import files

    import yaml

    if group == "model":  # the model group's options are the registry's (ConfigStore)
        return group, {"name": option}
    root = files(CONFIG_MODULE)
    if not root.joinpath(group).is_dir():
        return None
    path = root.joinpath(group).joinpath(f"{option}.yaml")
    if not path.is_file():
        return None
    text = path.read_text()
    content = yaml.safe_load(text) or {}
    content.pop("defaults", None)
    pkg = "_global_" if "@package _global_" in text.split("\n", 1)[0] else group
    return pkg, content


def _leaves(d: dict, prefix: str = ""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _leaves(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def check_pins(args: list[str], cfg: dict) -> None:
    """Refuse a group choice on the command line that a named sweep overrides.

    Hydra merges a named sweep after the config groups, so ``sweep=amp_gap
    judge=logit`` would silently run the sweep's own ``judge.kind``.  Value
    overrides (``judge.b=0.3``) are applied last and always win: only group
    choices (``judge=``, ``model=``, ``executor=``) can be contradicted.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    sweep = (cfg.get("sweep") or {}).get("name", "?")
    parser = OverridesParser.create()
    ovs = parser.parse_overrides([a for a in args if not a.startswith("-")])
    # Fields the command line sets itself (value overrides win over every file).
    own = {ov.key_or_group for ov in ovs if "." in ov.key_or_group}
    for ov in ovs:
        key = ov.key_or_group
        if key.startswith("hydra") or key == "sweep" or "." in key or ov.is_delete():
            continue
        value = ov.value()
        if not isinstance(value, str):
            continue
        found = _group_option(key, value)
        if found is None:
            continue
        pkg, content = found
        base = cfg if pkg == "_global_" else cfg.get(key) or {}
        for path, want in _leaves(content):
            if (path if pkg == "_global_" else f"{key}.{path}") in own:
                continue
            node = base
            for part in path.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            if node != want:
                where = path if pkg == "_global_" else f"{key}.{path}"
                raise ConfigError(
                    f"{key}={value} asks for {where}={want!r}, but sweep={sweep} pins "
                    f"{where}={node!r}; drop the choice, or run the axes as an ad hoc sweep "
                    f"(sweep.axes...) or a different named sweep")


def describe_error(exc: BaseException) -> str:
    """The exception's message followed by its causes (Hydra wraps the useful part)."""
    parts, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        msg = str(exc).strip()
        if msg and msg not in parts and "$VALUE" not in msg:
            parts.append(msg)
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    return "\n  caused by: ".join(parts)


def _run_model(model, c, out_dir: Path) -> None:
    """One cell of a model through the engine's one-cell path: its table and store."""
    from .output import write_zarr_atomic

    from . import simulate_validated

    try:
        ds = simulate_validated(model, c)
    except ConfigError as exc:
        log.error("invalid configuration: %s", exc)
        raise SystemExit(2) from None
    table = model.format_table(ds) if model.format_table is not None else None
    if table is not None:
        _show_table(table, out_dir)
    store = write_zarr_atomic(ds, out_dir / "results.zarr")
    _keep_table(table, out_dir)
    print(f"\nwrote {store}")
    if model.cell_figures is not None and c.run.figure:
        for p in model.cell_figures(ds, out_dir / "results"):
            print(f"wrote {p}")


class _Tee:
    """A stdout that also writes to the job's log file (Hydra's ``<job>.log``)."""

    def __init__(self, out, files):
        self._out, self._files = out, files

    def write(self, text):
        n = self._out.write(text)
        for f in self._files:
            try:
                f.write(text)
                f.flush()
            except (OSError, ValueError):  # a closed or full log never stops the run
                pass
        return n

    def flush(self):
        self._out.flush()

    def __getattr__(self, name):
        return getattr(self._out, name)


def recorded(task):
    """Wrap a Hydra task so that what it prints is also kept in the run directory's
    ``<job>.log`` (Hydra's job log file, otherwise empty: the commands print their
    tables and paths rather than log them); progress bars (stderr) are not."""
    import functools

    @functools.wraps(task)
    def run(cfg):
        files = [h.stream for h in logging.getLogger().handlers
                 if isinstance(h, logging.FileHandler) and getattr(h, "stream", None)]
        try:
            if not files:
                return task(cfg)
            old = sys.stdout
            sys.stdout = _Tee(old, files)
            try:
                return task(cfg)
            finally:
                sys.stdout = old
        except (MemoryError, OSError) as exc:  # said in one line by guarded_main
            raise TaskFailure(exc) from exc

    return run


class TaskFailure(BaseException):
    """A Hydra task's MemoryError or OSError, carried past Hydra's job runner (which
    catches ``Exception`` and prints "Error executing job with overrides: ..." above
    the command's own one line) to :func:`guarded_main`, which says it in one line."""

    @property
    def error(self) -> BaseException:
        return self.args[0]


def _show_table(text: str, out_dir: Path) -> None:
    """Print the run's table; :func:`_keep_table` keeps it beside the store once the store
    is written (a Ctrl-C between the two leaves no table of a store that never was)."""
    print(text)


def _keep_table(text: str | None, out_dir: Path) -> None:
    """Keep the table the terminal showed in the run directory (``results.txt``), with
    the store just written."""
    from .outputs_policy import write_file

    if text is None:
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    write_file(out_dir / "results.txt", text + "\n")  # a new temporary, renamed: no link followed


def _run(cfg: DictConfig) -> None:
    from .outputs_policy import release_outputs

    try:
        _run_cell(cfg)
    except KeyboardInterrupt:
        interrupted("\nantiamp: interrupted; a store is written only once complete, so "
                    "nothing partial was left")
    finally:
        release_outputs()  # the locks _lock_outputs took (a job of a multirun: its own)


def _lock_outputs(c, out_dir: Path) -> None:
    """Hold the locks of the run's store and export file until the run ends, as sweeps
    hold their store's: a second run writing either (the same ``hydra.run.dir``, the
    same absolute ``export.path``) is refused with one line, never replaces the first's
    output unsaid."""
    from .outputs_policy import OutputError, lock_output

    export = {"n_instances": c.export.n_instances, "path": c.export.path}
    try:
        for path, option in _outputs(out_dir, export):
            lock_output(path, "antiamp run", option=option)
    except OutputError as exc:
        log.error("%s", exc)
        raise SystemExit(2) from None


def _run_cell(cfg: DictConfig) -> None:
    from omegaconf import OmegaConf

    from . import output

    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    try:
        model, c = _validated(OmegaConf.to_container(cfg, resolve=True))
    except ConfigError as exc:
        log.error("invalid configuration: %s", exc)
        raise SystemExit(2) from None
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    _lock_outputs(c, out_dir)
    if model.run_cell is None:
        return _run_model(model, c, out_dir)
    try:  # a model with a one-cell path of its own (antiamp.simulate), and exports
        from . import simulate_validated

        ds = simulate_validated(model, c)
    except ConfigError as exc:
        log.error("invalid configuration: %s", exc)
        raise SystemExit(2) from None
    table = model.format_table(ds)
    _show_table(table, out_dir)
    store = output.write_zarr_atomic(ds, out_dir / "results.zarr")
    _keep_table(table, out_dir)
    print(f"\nwrote {store}")
    if c.run.figure and model.cell_figures is not None:
        for p in model.cell_figures(ds, out_dir / "results"):
            print(f"wrote {p}")
    if c.export.n_instances:
        from .transcripts import records, write_records

        from .outputs_policy import OutputError, check_file

        path = Path(c.export.path)
        path = path if path.is_absolute() else out_dir / path
        try:
            check_file(path, option="export.path")
        except OutputError as exc:
            log.error("invalid configuration: %s", exc)
            raise SystemExit(2) from None
        df = records(c, c.export.n_instances, n_judges=c.export.n_judges,
                     stratum=c.export.stratum)
        print(f"wrote {write_records(df, path)} ({len(df):,} rows)")


_STORED: set = set()


def register_schema(name: str, make) -> None:
    """Store a command's schema node (``make()``) in Hydra's ConfigStore, once, with
    every registered model as a ``model`` option.  Done on first need rather than at
    import: building the structured node costs tenths of a second that ``--help``
    does not pay."""
    if name in _STORED:
        return
    ConfigStore.instance().store(name=name, node=make())
    if not _STORED:
        register_model_options()
    _STORED.add(name)


def setup() -> None:
    """Register the command's schema with Hydra (on first need)."""
    register_schema("antiamp_schema", schema)


_hydra_main = hydra.main(version_base="1.3", config_path=f"pkg://{CONFIG_MODULE}", config_name="config")(recorded(_run))


#: Most jobs of a multirun that are validated one by one before any runs.
MAX_CHECKED_JOBS = 1000
#: True while the jobs of a multirun are checked (their run directories are not
#: known yet, so stores are checked when each job starts).
CHECKING_MULTIRUN = False


def expand_jobs(args: list[str]) -> list:
    """The override lists of every job of a command line: one for a single run, the
    Cartesian product of the comma sweeps for ``-m`` (as Hydra's basic sweeper), none
    for other flags (``--help``...)."""
    import itertools

    from hydra.core.override_parser.overrides_parser import OverridesParser

    from .cmdline import parse

    cmd = parse(args)  # Hydra's own reading of the flags (None: Hydra refuses them)
    if cmd is None or not (cmd.runs or cmd.overrides):
        return []  # --cfg, --info with overrides: the config they show is checked as a run's
    if not cmd.multirun:
        return [cmd.overrides]
    rest = cmd.overrides
    choices = []
    for ov, raw in zip(OverridesParser.create().parse_overrides(rest), rest):
        if ov.is_sweep_override() and ov.is_discrete_sweep():
            choices.append([f"{ov.get_key_element()}={v}" for v in ov.sweep_string_iterator()])
        else:
            choices.append([raw])
    return [list(job) for job in itertools.islice(itertools.product(*choices), MAX_CHECKED_JOBS)]


def check_flag_overrides(args: list[str]) -> None:
    """``section.flag=value`` on the command line: a yes/no field takes true or false
    only (Hydra's composition would already have read 2 as true)."""
    import dataclasses

    from hydra.core.override_parser.overrides_parser import OverridesParser

    from antiamp.sweeps.spec import run_schema

    sections = {f.name: f.type if isinstance(f.type, type) else f.default_factory
                for f in dataclasses.fields(run_schema())}
    plain = [a for a in args if not a.startswith("-") and not a.lstrip("+~").startswith("hydra")]
    for ov in OverridesParser.create().parse_overrides(plain):
        parts = ov.key_or_group.split(".")
        if len(parts) != 2 or ov.is_sweep_override() or ov.is_delete():
            continue
        typ = sections.get(parts[0])
        if not (isinstance(typ, type) and dataclasses.is_dataclass(typ)):
            continue
        kinds = {g.name: g.type for g in dataclasses.fields(typ)}
        if kinds.get(parts[1]) in ("bool", bool) and not isinstance(ov.value(), bool):
            raise ConfigError(f"{ov.key_or_group} must be true or false, got {ov.value()!r}")


def guarded_main(prog: str, check, hydra_main, errors: tuple = (), help_text=None,
                 setup=None, config_name: str = "config") -> None:
    """Validate the command line with ``check`` (no file touched), then run Hydra.

    Bad input exits with status 2 and a message, before Hydra creates its run
    directory; in a multirun every job is checked before any runs.  ``--help``
    prints ``help_text(args)`` (fast: no numerical library is loaded)."""
    from .helptext import wants_help

    args = sys.argv[1:]
    if args[:1] in (["--version"], ["-V"]):  # Hydra's own --version names Hydra's
        from ._version import __version__

        print(f"{prog} (antiamp {__version__})")
        raise SystemExit(0)
    if help_text is not None and wants_help(args):
        try:
            overrides = [a for a in args if not a.startswith("-")]
            keys = [a.lstrip("+~").split("=", 1)[0] for a in overrides]
            keys = [k for k in keys if "." in k and not k.startswith("hydra.")]
            if keys and check is not None:  # the values --help is given, checked as a run's
                if setup is not None:
                    setup()
                try:
                    check_flag_overrides(overrides)
                    check(overrides)
                except (ConfigError, HydraException, OmegaConfBaseException, *errors) as exc:
                    # a field given here out of range: refused; the help of a model whose
                    # defaults alone do not run (a model that wants another judge) still shows
                    if any(k in str(exc) for k in keys):
                        raise
            sys.stdout.write(help_text([a for a in args if a not in ("--help", "-h")]))
        except (ConfigError, HydraException, OmegaConfBaseException, *errors) as exc:
            print(f"{prog}: error: {describe_error(exc)}", file=sys.stderr)
            raise SystemExit(2) from None
        raise SystemExit(0)
    try:
        if setup is not None:
            setup()
        _checked_main(prog, check, hydra_main, errors, config_name)
    except KeyboardInterrupt:  # while checking (nothing written yet) or after the job's own
        interrupted(f"\n{prog}: interrupted")
    except TaskFailure as failure:  # the job's own (see TaskFailure)
        _failed(prog, failure.error)
    except (MemoryError, OSError) as exc:  # while checking (a check that runs a kernel)
        _failed(prog, exc)


def _failed(prog: str, exc: BaseException) -> None:
    """One line for a MemoryError or an OSError (a failed write: a full disk, a directory
    that is not writable; also the compiled kernels' cache, written during a check that
    runs a kernel), exit status 1.  Every store is written beside its target and renamed,
    so a failed write leaves no partial store behind."""
    if isinstance(exc, MemoryError):
        out_of_memory(prog, exc)
    from .output import describe_os_error

    print(f"{prog}: error: {describe_os_error(exc)}; no partial output is left (a "
          "sweep keeps its finished blocks: rerun the same command to resume)",
          file=sys.stderr)
    raise SystemExit(1) from None


def _checked_main(prog: str, check, hydra_main, errors: tuple,
                  config_name: str = "config") -> None:
    global CHECKING_MULTIRUN
    from . import cmdline

    try:
        cmd = cmdline.parse(sys.argv[1:])
        if cmd is None:  # Hydra refuses the flags: say which override was meant
            cmdline.CONFIG_NAME = config_name
            hint = cmdline.flag_hint(sys.argv[1:], prog)
            if hint is None and cmdline.UNPARSED is not None:
                hint = f"{cmdline.UNPARSED} ({prog} --help lists the flags)"
            if hint is not None:
                raise ConfigError(hint)
        cmdline.CURRENT, cmdline.TASK = cmd, getattr(hydra_main, "__wrapped__", None)
        jobs = expand_jobs(sys.argv[1:])
        CHECKING_MULTIRUN = cmd is not None and cmd.multirun
        cmdline.COMPOSED, _CHECKED[:] = None, []
        cmdline.SINGLE_RUN = (cmd is not None and cmd.runs and not cmd.multirun
                              and _mode_free(sys.argv[1:]))
        for job in jobs:
            try:
                cmdline.check_hydra_overrides(job)
                check_flag_overrides(job)
                check(job)
            except (HydraException, OmegaConfBaseException) as exc:
                hint = cmdline.explain(exc, job)
                if hint is None:
                    raise
                raise ConfigError(f"job {' '.join(job)}: {hint}" if len(jobs) > 1
                                  else hint) from None
            except (ConfigError, *errors) as exc:
                if len(jobs) > 1:
                    raise type(exc)(f"job {' '.join(job)}: {exc}") from None
                raise
            except ValueError:  # Hydra's own, bare, for a group given a number or null
                hint = cmdline.group_value_hint(job)
                if hint is None:
                    raise
                raise ConfigError(f"job {' '.join(job)}: {hint}" if len(jobs) > 1
                                  else hint) from None
    except (ConfigError, HydraException, OmegaConfBaseException, *errors) as exc:
        print(f"{prog}: error: {describe_error(exc)}", file=sys.stderr)
        raise SystemExit(2) from None
    finally:
        cmdline.CURRENT = cmdline.TASK = cmdline.CONFIG_NAME = None
        cmdline.SINGLE_RUN = False
    os.environ.setdefault("HYDRA_FULL_ERROR", "1")  # see guarded_main
    try:
        with _mode_known(sys.argv[1:]), _composed_once():
            hydra_main()
    finally:
        _CHECKED[:] = []


#: Hydra fields a command line may set without putting the run mode in question.
_MODE_FREE = ("hydra.run.", "hydra.output_subdir", "hydra.job.", "hydra.verbose")


def _mode_free(args: list[str]) -> bool:
    """The command line has no flag and sets no Hydra field beyond the run directory,
    the job and verbosity: a single run, whatever the config files say."""
    return all(not a.startswith("-") and (not a.lstrip("+~").startswith("hydra")
                                          or a.lstrip("+~").startswith(_MODE_FREE))
               for a in args)


@contextlib.contextmanager
def _composed_once():
    """Hand Hydra's run the config that the check composed (:func:`cmdline.compose_run`)
    rather than let it compose the same config again.

    Hydra's ``run`` composes the config of the command line it parsed, plus
    ``hydra.mode=RUN``; the check of a single run composed exactly that (the same
    task name, search path, overrides and mode) and validated it.  Its config loader
    is answered with that config once, for the same name, overrides and mode; any
    other composition (a multirun's jobs, another command line) is Hydra's own.  The
    run directory Hydra then makes is the one the check saw (``${now:...}`` is
    resolved once, in that config)."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.types import RunMode

    from . import cmdline

    kept, cmdline.COMPOSED = cmdline.COMPOSED, None
    orig = ConfigLoaderImpl.__dict__.get("load_configuration")
    if kept is None or orig is None:
        yield
        return
    name, checked, composed = kept

    def load_configuration(self, config_name, overrides, run_mode, *args, **kwargs):
        nonlocal composed
        if (composed is not None and run_mode == RunMode.RUN and config_name == name
                and list(overrides) == checked):
            cfg, composed = composed, None
            return cfg
        return orig(self, config_name, overrides, run_mode, *args, **kwargs)

    ConfigLoaderImpl.load_configuration = load_configuration
    try:
        yield
    finally:
        ConfigLoaderImpl.load_configuration = orig


@contextlib.contextmanager
def _mode_known(args: list[str]):
    """Answer Hydra's mode query for a plain single run without a composition.

    Before a run Hydra composes the whole config once only to read ``hydra.mode``
    (``Hydra.get_mode``), then composes it again for the run: for a small run that
    first composition is a tenth of a second of nothing.  No config file of this
    package sets ``hydra.mode`` (tested), so when the command line has no flag and
    sets no Hydra field beyond the run directory, the job and verbosity, the answer
    is None (a single run): given here.  Any other command line (``-m``, a launcher,
    ``hydra.mode=...``, a search path) is left to Hydra's own query."""
    from hydra._internal.hydra import Hydra

    orig = Hydra.__dict__.get("get_mode")
    if not _mode_free(args) or orig is None:
        yield
        return
    Hydra.get_mode = lambda self, config_name, overrides: None
    try:
        yield
    finally:
        Hydra.get_mode = orig


def help_text(args: list) -> str:
    from .helptext import model_sections, render

    return render(
        "antiamp", "one scenario (a cell) of a registered model: simulated metrics with "
        "standard errors beside the closed forms, a table, a Zarr store and a figure in the "
        "run directory.",
        ["antiamp [group=option ...] [section.field=value ...]",
         "antiamp model=signals signals.eta=0.4 judge=logit judge.kappa=2",
         "antiamp -m model.rho=0.1,0.3    (one run per value: a Hydra multirun)",
         "antiamp model=panel --help      (the fields that model reads)"],
        schema(), args, "config", model_sections(args, "config"),
        ["Bad values exit with status 2 and a message naming the field, before anything",
         "is written. Outputs go to outputs/<date>/<time>/ (hydra.run.dir=... to choose).",
         "antiamp warm compiles every model's kernels into the cache once, after install."])


def main() -> None:
    if sys.argv[1:2] == ["warm"]:  # ``antiamp warm``: compile the kernels' cache
        from .warm import main as warm_main

        return warm_main(sys.argv[2:])
    guarded_main("antiamp", prevalidate, _hydra_main, help_text=help_text, setup=setup,
                 config_name="config")


if __name__ == "__main__":
    main()
