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

import contextlib
import dataclasses
import os
from pathlib import Path

from .config import ConfigError


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


def parse(args: list[str]) -> CommandLine | None:
    """The command line's flags and overrides; None for one that Hydra itself refuses
    (an unknown flag: Hydra says so and makes no directory)."""
    from hydra._internal.utils import get_args_parser

    parser = get_args_parser()

    def error(message):
        raise _Unparsed(message)

    parser.error = error
    try:
        ns = parser.parse_args(args)
    except (_Unparsed, SystemExit):
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
    return CommandLine(list(ns.overrides), multirun, runs, ns.config_name, ns.config_path,
                       ns.config_dir)


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


_DIRS = ("hydra.run.dir", "hydra.sweep.dir", "hydra.sweep.subdir")


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
            if key != "hydra.sweep.subdir" and "${" not in value:
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
