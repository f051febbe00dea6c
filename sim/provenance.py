"""What every output of antiamp says about itself: CF global attributes and provenance.

One place for the attributes that make a store found later explain how it was made
(every cell result, every grid store, the baseline sweep's store, the equilibrium
and estimation outputs):

* the CF global attributes (CF conventions 1.10, section 2.6.2): ``Conventions``,
  ``title``, ``history`` (the command line that wrote it), ``source`` (antiamp, its
  version, the model) and ``references`` (the seed papers it implements);
* provenance: the versions of antiamp, Python, numba, NumPy, xarray, zarr and dask,
  the platform, and the source revision when antiamp runs from a git checkout
  (``<commit>`` or ``<commit>+dirty`` with uncommitted changes to tracked files;
  ``unknown (not run from a git checkout)`` otherwise).

None of these enter a fingerprint, a digest or the values: they describe the run
that wrote the store, and are recorded (and repaired) with the rest of its metadata.
They are computed once per process.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import shlex
import subprocess
import sys
from pathlib import Path

from antiamp._version import __version__

CONVENTIONS = "CF-1.10"

#: The seed papers and reports the models implement, by seed number (as their own
#: texts name them; CITATION.cff has the full references).
SEEDS = {
    "000": "Lemma, L. (2026). Debate as Anti-Amplification: Competitive Persuasion with "
           "Verifiable Evidence and Weak Judges.",
    "001": "Towards Scalable Oversight with Collaborative Multi-Agent Debate in Error "
           "Detection. arXiv:2510.20963.",
    "002": "Framework for Openly Augmented Mediation (FOAM): A Pluralistic Architecture "
           "for Explainable and Contestable AI (anonymous authors).",
    "003": "FactHarbor (2026-02-21). Debate Iteration Analysis: Should FactHarbor Change "
           "Its Debate Structure?",
    "004": "Prasad, P. S. and Nguyen, M. N. (2025). When Two LLMs Debate, Both Think "
           "They'll Win.",
}

#: The libraries whose versions every output records (attribute ``<name>_version``).
LIBRARIES = ("numba", "numpy", "xarray", "zarr", "dask")

#: The source revision recorded when antiamp does not run from a git checkout.
NO_CHECKOUT = "unknown (not run from a git checkout)"


def _version_of(name: str) -> str:
    mod = sys.modules.get(name)  # loaded already: no import for a version
    v = getattr(mod, "__version__", None) if mod is not None else None
    if isinstance(v, str):
        return v
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version(name)
    except PackageNotFoundError:
        return "not installed"


def _git(args: list, cwd: Path) -> str | None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        run = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                             timeout=10, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return run.stdout.strip() if run.returncode == 0 else None


@functools.lru_cache(maxsize=4)
def source_revision(here: Path | None = None) -> str:
    """The commit of the git checkout antiamp runs from (``+dirty`` when tracked
    files differ from it); :data:`NO_CHECKOUT` for an installed copy, a checkout
    whose files are not tracked (a virtual environment inside a repository), or
    where git is missing.  ``here``: the package's folder (by default antiamp's)."""
    here = Path(here) if here is not None else Path(__file__).resolve().parent
    if _git(["ls-files", "--error-unmatch", "--", "__init__.py"], here) is None:
        return NO_CHECKOUT
    head = _git(["rev-parse", "HEAD"], here)
    if not head:
        return NO_CHECKOUT
    dirty = _git(["status", "--porcelain", "--untracked-files=no"], here)
    return head + ("+dirty" if dirty else "")


@functools.lru_cache(maxsize=1)
def provenance() -> dict:
    """The versions, platform and source revision of this process (flat, JSON-able)."""
    out = {"antiamp_version": __version__, "python_version": platform.python_version()}
    out.update({f"{name}_version": _version_of(name) for name in LIBRARIES})
    out["platform"] = platform.platform()
    out["source_revision"] = source_revision()
    return out


def command_line() -> str:
    """The command that is running, as a shell would take it (``sys.argv``): a
    console script by its name (``antiamp-sweep ...``), ``python -m antiamp ...``,
    ``python script.py ...``; no code of ``python -c`` and no folders."""
    argv = [str(a) for a in sys.argv] or [""]
    orig = [str(a) for a in getattr(sys, "orig_argv", [])]
    if argv[0] in ("-m", "") or argv[0].endswith("__main__.py"):
        if "-m" in orig[:-1]:
            return shlex.join(["python", "-m", orig[orig.index("-m") + 1], *argv[1:]])
        return "python (interactive)"
    if argv[0] == "-c":
        return shlex.join(["python", "-c", "...", *argv[1:]])
    name = Path(argv[0]).name
    if name == "ipykernel_launcher.py":  # its arguments: a connection file's path
        return "python -m ipykernel_launcher (a Jupyter kernel)"
    return shlex.join(["python", name, *argv[1:]] if name.endswith(".py") else [name, *argv[1:]])


def references(text: str | None = None) -> str:
    """The seed papers a model implements: those its description names (``seed 001``,
    ``seeds 000-003``), else seed 000's."""
    found = []
    for a, b in re.findall(r"seeds? (\d{3})(?:\s*-\s*(\d{3}))?", text or ""):
        found += [f"{i:03d}" for i in range(int(a), int(b or a) + 1)]
    keys = [k for k in dict.fromkeys(found) if k in SEEDS] or ["000"]
    return "\n".join(f"seed {k}: {SEEDS[k]}" for k in keys)


def global_attrs(title: str, source: str, *, refs: str | None = None) -> dict:
    """The CF global attributes and the provenance of an output (see the module's
    description).  ``history`` names the command line (its time is the output's
    ``created`` attribute, kept apart so that two runs of one command compare equal
    but for it)."""
    return {
        "Conventions": CONVENTIONS,
        "title": title,
        "history": f"antiamp {__version__}: {command_line()}",
        "source": source,
        "references": refs or references(),
        **provenance(),
    }


#: The attributes :func:`global_attrs` writes, in the order ``antiamp-check`` prints them.
ATTRIBUTES = ("Conventions", "title", "history", "source", "references", "antiamp_version",
              "python_version", *(f"{n}_version" for n in LIBRARIES), "platform",
              "source_revision")


def model_attrs(model, title: str | None = None) -> dict:
    """:func:`global_attrs` of an output of a registered model: its title (or the
    output's own), antiamp and the model as the source, the seeds its package names."""
    mod = getattr(model.run_cells, "__module__", None) or ""
    docs = [getattr(sys.modules.get(m), "__doc__", None) or ""
            for m in (mod, mod.rpartition(".")[0])]
    return global_attrs(title or f"antiamp: {model.title}",
                        f"antiamp {__version__}, model {model.name} ({model.title})",
                        refs=references(" ".join(docs)))


def describe(attrs: dict) -> list:
    """The CF global attributes and provenance of a store's attributes, one line each
    (``antiamp-check`` prints them); a store older than these attributes says so."""
    found = [k for k in ATTRIBUTES if k in attrs]
    if found == ["antiamp_version"] or not found:
        return [f"provenance: not recorded (written by antiamp "
                f"{attrs.get('antiamp_version', '?')}, before stores recorded it)"]
    lines = []
    for k in found:
        text = str(attrs[k]).strip().replace("\n", "; ")
        lines.append(f"{k}: {text if len(text) <= 300 else text[:297] + '...'}")
    if "created" in attrs:
        lines.append(f"created: {attrs['created']}")
    return lines
