"""The command line as Hydra reads it, checked before Hydra makes any directory.

Hydra's own argument parser splits a command line into its flags and overrides, so
that every command line Hydra accepts is validated the same way: ``-m`` with other
flags, ``--config-name``, ``--config-dir`` and ``--config-path`` (the config is
composed from the same search path Hydra will use), and the ``hydra.*`` overrides
that decide where files go (``hydra.run.dir``, ``hydra.sweep.dir`` and
``hydra.sweep.subdir`` must name a directory, ``hydra.output_subdir`` a
subdirectory of the run directory or null, ``hydra.job.chdir`` true or false).
Flags that run no job (``--cfg``, ``--info``, ``--shell-completion``,
``--hydra-help``) are left to Hydra; ``--experimental-rerun``, which reruns a job
from a pickled config, is refused: nothing antiamp reads is unpickled.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import logging
import os
import re
import sys
from pathlib import Path

from .config import TYPE_ERROR, ConfigError, type_message


@dataclasses.dataclass
class CommandLine:
    overrides: list
    multirun: bool = False
    runs: bool = True  # a job runs (not --cfg, --info...)
    config_name: str | None = None
    config_path: str | None = None
    config_dir: str | None = None


#: The command line being checked (set by the command's guard, read by the
#: composition of its config): None for the command's own defaults.
CURRENT: CommandLine | None = None
#: The function Hydra runs (to place a relative --config-path as Hydra does).
TASK = None


class _Unparsed(Exception):
    pass


#: Why Hydra's parser refused the last command line :func:`parse` read (None: it did
#: not, or it ended another way).
UNPARSED: str | None = None


class Parser(argparse.ArgumentParser):
    """The parser of every command that takes --options: a refused option is one line,
    ``prog: error: ...`` and exit status 2, like every other refusal of antiamp (not
    argparse's usage block above it; ``--help`` prints that)."""

    def error(self, message):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} ({self.prog} --help lists the "
                     "options)\n")


def parse(args: list[str]) -> CommandLine | None:
    """The command line's flags and overrides; None for one that Hydra itself refuses
    (an unknown flag: Hydra says so and makes no directory)."""
    from hydra._internal.utils import get_args_parser

    parser = get_args_parser()

    def error(message):
        raise _Unparsed(message)

    global UNPARSED
    UNPARSED = None
    parser.error = error
    try:
        ns = parser.parse_args(args)
    except _Unparsed as exc:
        UNPARSED = str(exc)
        return None
    except SystemExit:
        return None
    if ns.experimental_rerun is not None:
        raise ConfigError("--experimental-rerun reruns a job from a pickled config, which "
                          "antiamp never loads (nothing it reads is unpickled); rerun the "
                          "job's command line (its .hydra/overrides.yaml) instead")
    runs = not (ns.help or ns.hydra_help or ns.cfg or ns.shell_completion
                or ns.info is not None)
    multirun = bool(ns.multirun) or any(
        o.replace(" ", "").lstrip("+") in ("hydra.mode=MULTIRUN", "hydra.mode=multirun")
        for o in ns.overrides)
    if ns.config_dir is not None and not os.path.isdir(ns.config_dir):
        raise ConfigError(f"--config-dir {ns.config_dir}: no such directory")
    for flag, folder in (("--config-dir", ns.config_dir), ("--config-path", ns.config_path)):
        if folder is not None and os.path.isdir(folder):
            check_config_files(flag, folder)
    return CommandLine(list(ns.overrides), multirun, runs, ns.config_name, ns.config_path,
                       ns.config_dir)


#: Most entries of a config folder looked at (a config folder holds tens of files).
MAX_CONFIG_ENTRIES = 10_000


def check_config_files(flag: str, folder: str) -> None:
    """Every YAML file of a user's config folder (``--config-dir``, or a
    ``--config-path`` that names a folder) passes the reader policy before Hydra reads
    any of them: a regular file (a FIFO named ``x.yaml`` would block Hydra forever)
    of at most :data:`antiamp.inputs.MAX_BYTES` ``["yaml"]`` bytes.  The folder is
    walked without following links to folders, at most :data:`MAX_CONFIG_ENTRIES`
    entries."""
    from .inputs import check_input

    seen = 0
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        seen += len(dirs) + len(files)
        if seen > MAX_CONFIG_ENTRIES:
            raise ConfigError(f"{flag} {folder}: more than {MAX_CONFIG_ENTRIES:,} entries; "
                              "a config folder holds its YAML files only")
        for f in sorted(files):
            if f.endswith((".yaml", ".yml")):
                check_input(os.path.join(root, f), "yaml", ConfigError,
                            f"{flag} {folder}: {os.path.relpath(os.path.join(root, f), folder)}")


def search_path(cmd: CommandLine, default_module: str):
    """The config search path Hydra builds for ``cmd`` (hydra._internal.utils._run_hydra)."""
    from hydra._internal.utils import (create_automatic_config_search_path,
                                       detect_calling_file_or_module_from_task_function)
    from hydra.core.config_search_path import SearchPathQuery

    if cmd.config_path is None:
        sp = create_automatic_config_search_path(None, None, f"pkg://{default_module}")
    else:
        calling_file, calling_module = (None, default_module + ".app")
        if TASK is not None:
            calling_file, calling_module = detect_calling_file_or_module_from_task_function(
                TASK)
        sp = create_automatic_config_search_path(calling_file, calling_module,
                                                 cmd.config_path)
    if cmd.config_dir is not None:
        sp.prepend(provider="command-line", path=f"file://{os.path.abspath(cmd.config_dir)}",
                   anchor=SearchPathQuery(provider="schema"))
    return sp


@contextlib.contextmanager
def initialized(default_module: str):
    """Hydra initialised for composing the current command line's config (its search
    path and flags), as ``initialize_config_module`` does for the defaults."""
    from hydra import initialize_config_module

    cmd = CURRENT
    if cmd is None or (cmd.config_path is None and cmd.config_dir is None):
        with initialize_config_module(config_module=default_module, version_base="1.3"):
            yield
        return
    from hydra import version
    from hydra._internal.hydra import Hydra
    from hydra.core.global_hydra import GlobalHydra

    version.setbase("1.3")
    GlobalHydra.instance().clear()
    Hydra.create_main_hydra2(task_name="app", config_search_path=search_path(cmd, default_module))
    try:
        yield
    finally:
        GlobalHydra.instance().clear()


def config_name(default: str) -> str:
    return CURRENT.config_name if CURRENT is not None and CURRENT.config_name else default


#: True while the command line being checked is one plain run (set by the command's
#: guard): its check composes the config as Hydra's run will (:func:`compose_run`).
SINGLE_RUN = False
#: The config :func:`compose_run` composed, kept for Hydra's run of the same command
#: line: ``(config name, overrides, DictConfig)``, or None.
COMPOSED: tuple | None = None
#: The override Hydra adds to a single run's command line before composing it
#: (``hydra._internal.utils._run_app`` when the mode query answers None).
RUN_MODE_OVERRIDE = "hydra.mode=RUN"


def compose_run(default_module: str, name: str, overrides: list):
    """The config of a single run, composed the way Hydra's ``run`` composes it (the
    same task name, search path, overrides and mode), and kept in :data:`COMPOSED` so
    that the run takes it rather than composing it a second time (the command's
    guard hands it over).  The whole config, ``hydra`` node included."""
    global COMPOSED
    from hydra import version
    from hydra._internal.hydra import Hydra
    from hydra._internal.utils import (detect_calling_file_or_module_from_task_function,
                                       detect_task_name)
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode

    calling_file, calling_module = (None, default_module + ".app")
    if TASK is not None:
        calling_file, calling_module = detect_calling_file_or_module_from_task_function(TASK)
    cmd = CURRENT if CURRENT is not None else CommandLine([])
    overrides = [*overrides, RUN_MODE_OVERRIDE]
    version.setbase("1.3")
    GlobalHydra.instance().clear()
    hydra = Hydra.create_main_hydra2(task_name=detect_task_name(calling_file, calling_module),
                                     config_search_path=search_path(cmd, default_module))
    try:
        cfg = hydra.compose_config(config_name=name, overrides=overrides,
                                   run_mode=RunMode.RUN, from_shell=True)
    finally:
        GlobalHydra.instance().clear()
    COMPOSED = (name, overrides, cfg)
    return cfg


_DIRS = ("hydra.run.dir", "hydra.sweep.dir", "hydra.sweep.subdir")


def refuse_files_on(key: str, directory: str) -> None:
    """A run directory that is, or lies under, an existing file cannot be made: refused
    here, naming the field, rather than when Hydra makes it."""
    d = Path(directory).expanduser().absolute()
    for p in (d, *d.parents):
        if p.exists() or p.is_symlink():
            if not p.is_dir():
                what = "is" if p == d else f"lies under {p}, which is"
                raise ConfigError(f"{key}={directory}: {directory} {what} an existing file, "
                                  f"not a directory; give {key} a directory")
            return


def _check_name_length(key: str, directory: str) -> None:
    """A run directory the file system cannot name (a name over NAME_MAX, a path over
    PATH_MAX): refused here in the words ``--out`` gets, not as an OSError."""
    from .outputs_policy import OutputError, check_name_length

    try:
        check_name_length(directory, key)
    except OutputError as exc:
        raise ConfigError(str(exc)) from None


def refuse_links_in(key: str, directory: str) -> None:
    """An existing run directory is written into (Hydra's ``.hydra/`` and job log,
    the run's results): refused if it is a symbolic link or holds one there, which
    the writes would follow into a place antiamp did not make."""
    d = Path(directory).expanduser()
    links = [d] if d.is_symlink() else []
    if not links and d.is_dir():
        try:
            for sub in (d, d / ".hydra"):
                if sub.is_dir() and not sub.is_symlink():
                    links += [e for e in sub.iterdir() if e.is_symlink()]
                elif sub.is_symlink():
                    links.append(sub)
        except OSError:
            pass
    if links:
        raise ConfigError(f"{key}={directory}: {links[0]} is a symbolic link; antiamp writes "
                          "its run files under their own names, never through a link. Give "
                          f"{key} a new directory")


def check_hydra_overrides(job: list[str]) -> None:
    """The ``hydra.*`` overrides of one job that decide where files go."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    mine = [a for a in job if a.lstrip("+~").startswith("hydra.")]
    if not mine:
        return
    for ov, raw in zip(OverridesParser.create().parse_overrides(mine), mine):
        key = ov.key_or_group
        if ov.is_sweep_override():
            continue  # one job's values are checked in that job
        value = None if ov.is_delete() else ov.value()
        if key in _DIRS:
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(
                    f"{key} must name a directory, got {raw.split('=', 1)[-1]!r}: an empty "
                    "or missing one would put the outputs in the current directory")
            if "${" not in value:
                _check_name_length(key, value)
            if key != "hydra.sweep.subdir" and "${" not in value:
                refuse_files_on(key, value)
                refuse_links_in(key, value)
        elif key == "hydra.output_subdir":
            if value is None:
                continue
            norm = os.path.normpath(str(value)) if str(value).strip() else ""
            if (not isinstance(value, str) or not norm or os.path.isabs(norm)
                    or norm == "." or norm.split(os.sep)[0] == ".."):
                raise ConfigError(f"hydra.output_subdir must be a subdirectory of the run "
                                  f"directory (or null for none), got {value!r}")
        elif key == "hydra.job.chdir":
            if not isinstance(value, bool):
                raise ConfigError(f"hydra.job.chdir must be true or false, got {value!r}")


# ------------------------------------------------------------------ did you mean
#: The config being composed when a composition fails (set by the command's
#: composition), so that a misspelt field is matched against that config's fields.
CONFIG_NAME: str | None = None


def _close(word: str, choices, n: int = 3) -> list:
    from .config import close_matches

    return close_matches(word, choices, n)


def _fields(config_name: str, groups: list) -> list:
    """Every field path (``model.rho``) and section of the config composed with the
    command line's group choices; empty if that composition fails too."""
    from hydra import compose
    from omegaconf import OmegaConf

    try:
        with initialized("antiamp.conf"):
            cfg = compose(config_name=config_name, overrides=groups)
        plain = OmegaConf.to_container(cfg, resolve=False)
    except Exception:  # noqa: BLE001 - no suggestion rather than a second error
        return []
    out = []

    def walk(d, prefix):
        for k, v in d.items():
            out.append(prefix + str(k))
            if isinstance(v, dict) and not str(k) == "axes":
                walk(v, f"{prefix}{k}.")

    walk(plain, "")
    return out


def explain(exc: BaseException, job: list) -> str | None:
    """A plain message for a composition error of a misspelt field or an unknown
    group option, with the closest names (None: the error's own message stands).

    Hydra's own says ``To append to your config use +model.roh=0.4`` (which would
    then fail validation) for a misspelt field, and lists the config search path
    for an unknown option."""
    text = str(exc)
    cause = exc.__cause__ or exc.__context__
    text_all = text + "\n" + (str(cause) if cause is not None else "")
    wrong = wrong_type(text_all, job)
    if wrong is not None:
        return wrong
    m = re.search(r"does not support deletion\n\s*full_key: (\S+)", text_all)
    if m is not None:
        return (f"~{m.group(1)}: a field cannot be deleted; set it ({m.group(1)}=value) or "
                "leave it out for its default (--help lists every field)")
    m = re.search(r"Invalid type assigned: .* is not a subclass of .*\n\s*full_key: (\S+)",
                  text_all)
    if m is not None:  # a value for a whole section (run=fast)
        return _section_value(m.group(1), job)
    m = re.search(r"Could not find '([^'/]+)/([^']+)'", text_all)
    if m:
        group, option = m.groups()
        opts = re.search(r"Available options in '[^']+':\n((?:\t.*\n?)*)", text_all)
        options = opts.group(1).split() if opts else []
        near = _close(option, options)
        what = {"model": "model", "sweep": "named sweep"}.get(group, f"{group} option")
        return (f"{group}={option}: no such {what}"
                + (f"; did you mean {group}={near[0]}?" if near else "")
                + (f" (choices: {', '.join(options)})" if options else ""))
    m = re.search(r"Could not override '([^']+)'", text_all)
    if m is None:
        m = re.search(r"Key '([^']+)' is not in struct", text_all)
    if m is None:
        return None
    key = m.group(1)
    groups = [a for a in job if "=" in a and "." not in a.split("=", 1)[0]
              and not a.startswith(("-", "+", "~")) and a.split("=", 1)[0] != key]
    fields = _fields(CONFIG_NAME or "config", groups) if CONFIG_NAME else []
    if not fields:
        return None
    value = next((a.split("=", 1)[1] for a in job if a.split("=", 1)[0].lstrip("+~") == key
                  and "=" in a), None)
    if "." not in key and key in fields:  # a section given a value: no group of choices here
        return _section_value(key, job)
    section = key.rsplit(".", 1)[0] if "." in key else ""
    same = [f for f in fields if "." in f and f.rsplit(".", 1)[0] == section]
    if section in fields:  # a known section: its fields, by their own names
        near = [f"{section}.{n}" for n in
                _close(key.rsplit(".", 1)[-1], [f.rsplit(".", 1)[-1] for f in same])]
    else:  # a misspelt section (or top-level name): paths of the same depth
        near = _close(key, [f for f in fields if f.count(".") == key.count(".")])
    if near:
        hint = f"did you mean {near[0]}" + (f"={value}" if value is not None else "") + "?"
    elif section in fields:
        hint = f"{section} has {', '.join(f.rsplit('.', 1)[-1] for f in same)}"
    else:
        hint = "the sections are " + ", ".join(f for f in fields if "." not in f)
    return f"{key}: no such field; {hint} (--help lists every field)"


def group_value_hint(job: list) -> str | None:
    """A plain message for a config group given a value that is not a name
    (``judge=1``, ``model=null``, ``sweep=true``) or an override with no name
    (``=1``), which Hydra's defaults list refuses with a bare ValueError; None when
    no override of ``job`` is such."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from .helptext import group_options

    args = [a for a in job if not a.startswith("-")]
    for raw in args:
        if "=" in raw and not raw.split("=", 1)[0].lstrip("+~").strip():
            return (f"{raw}: nothing before '=' names what it sets; write section.field=value "
                    "or group=option (--help lists them)")
    for ov, raw in zip(OverridesParser.create().parse_overrides(args), args):
        key = ov.key_or_group
        if "." in key or key.startswith("hydra") or ov.is_delete() or ov.is_sweep_override():
            continue
        value = ov.value()
        if isinstance(value, str) or (isinstance(value, list)
                                      and all(isinstance(v, str) for v in value)):
            continue
        try:
            options = group_options(key)
        except Exception:  # noqa: BLE001 - no list rather than a second error
            options = []
        return (f"{raw}: {key} takes the name of one of its options"
                + (f" ({', '.join(options)})" if options else " (--help lists them)"))
    return None


def _section_value(key: str, job: list) -> str:
    value = next((a.split("=", 1)[1] for a in job if a.split("=", 1)[0].lstrip("+~") == key
                  and "=" in a), "...")
    return (f"{key}={value}: this command has no {key} choice (no {key}=<option>); {key} is "
            f"a section of fields, set as {key}.<field>=value (--help lists them)")


def wrong_type(text: str, job: list) -> str | None:
    """A plain message for a value of the wrong type (``model.rho=abc``,
    ``run.n_instances=1e3``, ``run.progress=maybe``), which OmegaConf refuses while
    Hydra merges the override: the field, the value as typed and the values the field
    takes (its declared range or choices), instead of OmegaConf's report with its
    internal class names.  None when ``text`` is not such an error."""
    m = re.search(TYPE_ERROR, text)
    k = re.search(r"full_key: (\S+)", text)
    if m is None or k is None:
        return None
    key, kind = k.group(1), (m.group(2) or m.group(3)).lower()
    value = next((a.split("=", 1)[1] for a in job if "=" in a
                  and a.split("=", 1)[0].lstrip("+~") == key), m.group(1))
    from .fields import declared, field_default

    return type_message(key, value, kind, declared(key), field_default(key))


def flag_hint(args: list, prog: str) -> str | None:
    """A message for ``--option value`` arguments, which these commands do not take
    (Hydra's parser refuses them with its usage): the override they may mean."""
    from hydra._internal.utils import get_args_parser

    known = set(get_args_parser()._option_string_actions)  # noqa: SLF001 - Hydra's flags
    for i, a in enumerate(args):
        if not a.startswith("-") or a.split("=", 1)[0] in known or a in ("-", "--"):
            continue
        if re.match(r"^-\d", a):
            continue
        name = a.lstrip("-").split("=", 1)[0].replace("-", "_")
        value = a.split("=", 1)[1] if "=" in a else (
            args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("-")
            and "=" not in args[i + 1] else "VALUE")
        fields = _fields(CONFIG_NAME or "config", []) if CONFIG_NAME else []
        exact = [f for f in fields if f.rsplit(".", 1)[-1] == name]
        near = exact or _close(name, [f.rsplit(".", 1)[-1] for f in fields if "." in f])
        if near and not exact:
            near = [f for f in fields if "." in f and f.rsplit(".", 1)[-1] == near[0]]
        example = f"{near[0]}={value}" if near else "section.field=value"
        return (f"{a}: {prog} takes its settings as section.field=value overrides, not "
                f"--options; try {prog} {example} ({prog} --help lists every field)")
    return None



# ------------------------------------------------------------------ Ctrl-C
def interrupted(message: str):
    """Ctrl-C: ``message`` on stderr, one line, and exit status 130.

    Zarr reads and writes through an event loop in a thread of its own; the
    interrupted main thread leaves its tasks pending, and at exit asyncio logs each
    of them with a traceback ("Task was destroyed but it is pending!", "cannot
    schedule new futures after interpreter shutdown", and, once zarr closes its loop
    at exit, "Exception ignored in: <coroutine ...>: Event loop is closed": thousands
    of lines during a store's verification).  They say nothing about the run (a store
    is renamed into place only once complete; a sweep's finished blocks are already
    on disk), so for the rest of the process asyncio's logger is silenced and
    unraisable exceptions, warnings ("coroutine ... was never awaited") and the
    exceptions of other threads go unprinted.

    A second Ctrl-C while the process exits (a key pressed twice, or a SIGINT to the
    process group that a wrapper such as ``timeout`` forwards again) is ignored from
    here on: it would otherwise raise KeyboardInterrupt into the shutdown, replacing
    this exit by a traceback and a death by SIGINT in place of status 130."""
    import signal
    import threading
    import warnings

    # (only the main thread may set a handler; a command's main runs there)
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    warnings.simplefilter("ignore")

    logging.getLogger("asyncio").disabled = True
    sys.unraisablehook = lambda unraisable: None
    threading.excepthook = lambda args: None
    print(message, file=sys.stderr)
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    raise SystemExit(130)


def out_of_memory(prog: str, exc: MemoryError):
    """A request larger than the memory the process may take (a memory limit, or the
    machine's): one line and exit status 1, not a traceback.  Every file and store is
    written beside its target and renamed, so nothing partial is left."""
    what = " ".join(str(exc).split()) or "no detail"
    print(f"{prog}: error: out of memory ({what}); nothing partial was left: ask for "
          "less (fewer resamples, draws, instances or cells)", file=sys.stderr)
    raise SystemExit(1)


def closed_pipe():
    """Standard output closed by its reader (``antiamp-check STORE | head -1``): exit
    with status 141, as a Unix tool that SIGPIPE ends, and no traceback.  Python's own
    recipe (its ``signal`` documentation): standard output pointed at the null device,
    so that the interpreter's last flush at exit does not raise again."""
    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    raise SystemExit(141)


def quiet_pipe(main):
    """Decorate a command's ``main``: its output cut short by its reader ends it quietly
    (:func:`closed_pipe`).  Standard output is flushed as ``main`` ends, however it
    ends (``--version`` and ``--help`` end by SystemExit), so that a closed pipe is
    found here and not in the interpreter's exit."""
    @functools.wraps(main)
    def run(*args, **kwargs):
        try:
            try:
                return main(*args, **kwargs)
            finally:
                sys.stdout.flush()
        except BrokenPipeError:
            closed_pipe()
    return run


def interruptible(prog: str, saved: str = "nothing partial was left (every file and store "
                                          "is written beside its target and renamed)"):
    """Decorate a command's ``main``: Ctrl-C anywhere in it is one line and exit 130;
    a closed pipe on its output is :func:`quiet_pipe`'s."""
    def wrap(main):
        @functools.wraps(main)
        def run(*args, **kwargs):
            try:
                return main(*args, **kwargs)
            except KeyboardInterrupt:
                interrupted(f"\n{prog}: interrupted; {saved}")
            except MemoryError as exc:
                out_of_memory(prog, exc)
        return quiet_pipe(run)
    return wrap
