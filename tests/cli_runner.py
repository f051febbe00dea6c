"""Run an installed command's ``main`` in this process, as the console script would.

The command-line tests check what a command prints, writes and exits with; a fresh
interpreter per call would add the libraries' import and the kernels' load (about
two seconds of CPU a call) to every one of them.  ``run_command`` calls the entry
point that ``pip install`` made (read from the distribution's metadata, so a renamed
command fails here) with ``sys.argv`` and the working directory set, and returns what
``subprocess.run(..., capture_output=True, text=True)`` would.  A handful of tests
still start real processes: the installed scripts themselves (test_cli, test_help,
test_warm), and whatever needs a process of its own (kills, Ctrl-C, resource limits,
environment variables, Hydra multiruns, which start launchers).
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import subprocess
import sys
from importlib.metadata import entry_points


@functools.cache
def _entry(prog: str):
    (ep,) = [e for e in entry_points(group="console_scripts") if e.name == prog]
    return ep.load()


def run_command(prog: str, args, cwd) -> subprocess.CompletedProcess:
    """``prog args`` in ``cwd``, in this process: (returncode, stdout, stderr)."""
    args = [str(a) for a in args]
    main = _entry(prog)
    out, err = io.StringIO(), io.StringIO()
    old_argv, old_cwd = sys.argv, os.getcwd()
    sys.argv = [prog, *args]
    os.chdir(cwd)
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (
                    0 if exc.code is None else 1)
                if not isinstance(exc.code, int) and exc.code is not None:
                    print(exc.code, file=sys.stderr)
    finally:
        sys.argv = old_argv
        os.chdir(old_cwd)
    return subprocess.CompletedProcess([prog, *args], code, out.getvalue(), err.getvalue())
