"""Run an installed command's ``main`` in this process, as the console script would.

The command-line tests check what a command prints, writes and exits with; a fresh
interpreter per call would add the libraries' import and the kernels' load (about
two seconds of CPU a call) to every one of them.  ``run_command`` calls the entry
point that ``pip install`` made (read from the distribution's metadata, so a renamed
command fails here) with ``sys.argv`` and the working directory set, and returns what
``subprocess.run(..., capture_output=True, text=True)`` would.  A Hydra multirun
(``-m``) runs as a process: it starts a launcher.  A handful of tests start real
processes themselves: the installed scripts (test_cli, test_help, test_warm), and
whatever needs a process of its own (kills, Ctrl-C, resource limits, environments).
"""

from __future__ import annotations

from limits import limit
import contextlib
import functools
import io
import os
import shutil
import subprocess
import sys
from importlib.metadata import entry_points


@functools.cache
def _entry(prog: str):
    (ep,) = [e for e in entry_points(group="console_scripts") if e.name == prog]
    return ep.load()


def invoke(main, argv: list) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``main()`` with ``sys.argv = argv``."""
    out, err = io.StringIO(), io.StringIO()
    old = sys.argv
    sys.argv = [str(a) for a in argv]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (
                    0 if exc.code is None else 1)
                if exc.code is not None and not isinstance(exc.code, int):
                    print(exc.code, file=sys.stderr)
    finally:
        sys.argv = old
    return code, out.getvalue(), err.getvalue()


def run_command(prog: str, args, cwd) -> subprocess.CompletedProcess:
    """``prog args`` in ``cwd``: in this process, or a multirun in a process of its own;
    (returncode, stdout, stderr) as ``subprocess.run`` gives them."""
    args = [str(a) for a in args]
    if "-m" in args or "--multirun" in args:
        return subprocess.run([shutil.which(prog), *args], cwd=cwd, capture_output=True,
                              text=True, timeout=limit(600))
    old_cwd = os.getcwd()
    os.chdir(cwd)
    try:
        code, out, err = invoke(_entry(prog), [prog, *args])
    finally:
        os.chdir(old_cwd)
    return subprocess.CompletedProcess([prog, *args], code, out, err)
