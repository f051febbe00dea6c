"""One output policy for every command: nothing of the user's is overwritten or deleted.

- A directory given with ``--out`` is written into only if it does not exist (antiamp
  makes it), is empty, or holds antiamp's marker file :data:`MARKER` (antiamp made
  it).  An existing directory of someone else's is refused with the way out:
  ``--out NEW``, or ``--force`` to write into it anyway, which still overwrites only
  files antiamp wrote there (listed in the marker), never others.
- A file is written only if it does not exist or the marker of its directory lists
  it (antiamp wrote it); a symbolic link is never written through, whatever it
  points to: the command refuses and names it.
- A file is written into a new temporary with an unpredictable name (made with
  ``O_CREAT | O_EXCL``, so never through a link planted in its place) and renamed
  onto its name: a kill leaves the old file or the new one, never half of one.
- Temporaries left by a kill are removed only when what they hold proves they are
  antiamp's (:func:`removable_temporary`).

Every check runs before any computation, so a refused request writes nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from .ownership import OWN, PARTIAL, read_marker

#: The marker file of a directory antiamp made: its first line is :data:`HEADER`,
#: then the names of the files antiamp wrote there, one a line.
MARKER = ".antiamp-output"
HEADER = "antiamp output directory; antiamp overwrites only the files listed below"


class OutputError(RuntimeError):
    """An output that would replace or delete something antiamp did not write."""


from .ownership import ZARR_FILES as _ZARR_FILES, is_antiamp_store  # noqa: E402,F401  (re-exported)


def _link(path: Path, option: str) -> OutputError:
    return OutputError(f"{option} {path} is a symbolic link (to {os.readlink(path)}); "
                       "antiamp never writes through a link. Name the real path or another one")


def refuse_link(path, option: str = "output") -> None:
    """``OutputError`` if ``path`` is a symbolic link."""
    path = Path(path)
    if path.is_symlink():
        raise _link(path, option)


def listed(directory) -> set | None:
    """The names antiamp wrote in ``directory`` (its marker), or None if antiamp did
    not make it (no marker, or a marker that is a link or not antiamp's)."""
    m = Path(directory) / MARKER
    if m.is_symlink() or not m.is_file():
        return None
    try:
        with open(m, "rb") as f:  # bounded: a marker is a few lines
            text = f.read(1 << 20).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    lines = text.splitlines()
    if not lines or lines[0] != HEADER:
        return None
    return {x for x in lines[1:] if x}


def owned(path) -> bool:
    """Whether antiamp wrote ``path`` (listed in its directory's marker, not a link)."""
    path = Path(path)
    names = listed(path.parent)
    return not path.is_symlink() and names is not None and path.name in names


def check_out_dir(path, names=(), *, force: bool = False, option: str = "--out") -> Path:
    """Refuse, before anything is computed, an output directory antiamp may not write
    ``names`` into (see the module's rules); creates nothing."""
    path = Path(path)
    check_name_length(path, option)
    if path.is_symlink():
        raise _link(path, option)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{option} {path} exists and is not a directory; give {option} NEW "
                          "(a directory that does not exist)")
    refuse_file_above(path, option)
    if not path.exists():
        return path
    ours = listed(path)
    if ours is None:
        try:
            entries = sorted(os.listdir(path))
        except OSError as exc:
            raise OutputError(f"{option} {path}: {exc.strerror}") from None
        if entries and not force:
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            raise OutputError(
                f"{option} {path} is an existing directory that antiamp did not make "
                f"(it holds {shown}); antiamp writes only into a new directory, an empty "
                f"one or one it made. Give {option} NEW (a path that does not exist), or "
                "add --force to write into it anyway (--force overwrites only files "
                "antiamp wrote there, never others)")
        ours = set()
    for name in names:
        check_file(path / name, option=option, _names=ours)
    return path


def check_name_length(path, option: str | None = "output") -> None:
    """Refuse a path the file system cannot name (a name longer than NAME_MAX, the
    whole longer than PATH_MAX), which would otherwise fail as OSError mid-run."""
    path = Path(path)
    try:
        name_max = os.pathconf("/", "PC_NAME_MAX")
        path_max = os.pathconf("/", "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):
        name_max, path_max = 255, 4096
    where = f"{option}: " if option else ""
    for part in path.parts:
        if len(os.fsencode(part)) > name_max:
            raise OutputError(f"{where}a name in {str(path)[:60]}... has "
                              f"{len(os.fsencode(part)):,} bytes; a file name may have at "
                              f"most {name_max}. Choose a shorter path")
    n = len(os.fsencode(str(path.absolute()))) + 64  # (room for the temporaries' names)
    if n > path_max:
        raise OutputError(f"{where}the path {str(path)[:60]}... has {n - 64:,} bytes; a "
                          f"path may have at most {path_max - 64:,} here. Choose a shorter "
                          "path")


def refuse_file_above(path, option: str | None = "output") -> None:
    """Refuse a path under an existing file (``a_file/out``), which no folder can be made
    for: said before anything is computed, naming the option (if any)."""
    path = Path(path).expanduser()
    check_name_length(path, option)
    for up in path.absolute().parents:  # the nearest existing entry must be a folder
        if up.exists():
            if not up.is_dir():
                raise OutputError(f"{option + ': ' if option else ''}{path} cannot be "
                                  f"written: {up} exists and is not a directory. Choose "
                                  "another output path")
            return


def check_file(path, *, option: str = "output", _names=None) -> Path:
    """Refuse a file (or store) antiamp may not write: a link, or an existing entry
    that its directory's marker does not list."""
    path = Path(path)
    check_name_length(path, option)
    if path.is_symlink():
        raise _link(path, option)
    refuse_file_above(path, option)
    if path.exists():
        names = listed(path.parent) if _names is None else _names
        if names is None or path.name not in names:
            raise OutputError(f"{option}: {path} exists and antiamp did not write it; "
                              "antiamp never overwrites it. Move it away or choose "
                              "another output path")
    return path


def open_out_dir(path, names=(), *, force: bool = False, option: str = "--out") -> Path:
    """:func:`check_out_dir`, then make the directory (and its marker) if needed."""
    path = check_out_dir(path, names, force=force, option=option)
    path.mkdir(parents=True, exist_ok=True)
    if listed(path) is None:
        _write_marker(path, set())
    return path


def _write_marker(directory: Path, names: set) -> None:
    text = "\n".join([HEADER, *sorted(names)]) + "\n"
    _replace(directory / MARKER, lambda f: f.write(text.encode()))


def record(path) -> None:
    """Add ``path`` to its directory's marker (the proof that antiamp wrote it)."""
    path = Path(path)
    names = listed(path.parent)
    if names is None:
        names = set()
    if path.name not in names:
        _write_marker(path.parent, names | {path.name})


def temporary(path, suffix: str = ".tmp") -> Path:
    """A new empty file beside ``path`` with an unpredictable name (``O_EXCL``: never
    an existing file or link)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    return Path(tmp)


def _replace(path: Path, write, by_name: bool = False) -> Path:
    """``write`` a new temporary beside ``path`` (made with ``O_EXCL``: ours), then
    rename it onto ``path``.  ``write`` is given the open binary file, or with
    ``by_name`` the temporary's path (which ends in ``path``'s suffix)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{path.suffix}",
                               dir=path.parent)
    try:
        if by_name:
            os.close(fd)
            write(tmp)
        else:
            with os.fdopen(fd, "wb") as f:
                write(f)
        os.replace(tmp, path)  # replaces a name, never writes through a link
    except BaseException:
        try:
            os.unlink(tmp)  # made above with O_EXCL: ours
        except OSError:
            pass
        raise
    return path


def write_file(path, data, *, option: str = "output", marked: bool | None = None,
               by_name: bool = False) -> Path:
    """Write ``data`` (bytes, str, or a function given a binary file) to ``path``
    under the policy: refused if ``path`` is a link or a file antiamp did not write
    (``marked``: recorded in the directory's marker; ``marked=False``: in a directory
    antiamp's run made, where only links are refused; by default, marked where the
    directory has a marker)."""
    path = Path(path)
    if marked is None:
        marked = listed(path.parent) is not None
    if marked:
        check_file(path, option=option)
        record(path)  # before the rename: a kill between leaves a listed, absent name
    else:
        refuse_link(path, option)
    if isinstance(data, str):
        data = data.encode()
    return _replace(path, data if callable(data) else (lambda f: f.write(data)),
                    by_name and callable(data))


def save_figure(fig, path, *, option: str = "output", marked: bool | None = None,
                **kwargs) -> Path:
    """``fig.savefig(path, **kwargs)`` under :func:`write_file`'s policy."""
    path = Path(path)
    fmt = kwargs.pop("format", None) or path.suffix.lstrip(".") or None
    return write_file(path, lambda tmp: fig.savefig(tmp, format=fmt, **kwargs), option=option,
                      marked=marked, by_name=True)


def removable_temporary(path) -> bool:
    """Whether a temporary left beside a store (``.<store>.partial-*`` and the like)
    is provably antiamp's: a real directory (no link) that is an antiamp store, a
    partial run holding only antiamp's files, or what a killed Zarr write leaves
    (nothing but Zarr documents and chunks, possibly half-written).  A folder with a
    file of anyone else's in it is never one, whatever its name."""
    path = Path(path)
    if path.is_symlink() or not path.is_dir():
        return False
    if is_antiamp_store(path) or read_marker(path) is not None:
        return True
    try:
        names = {e.name for e in os.scandir(path)}
    except OSError:
        return False
    if names <= {PARTIAL} and not (path / PARTIAL).is_symlink():
        return True  # a partial run killed while it was made
    return not foreign_entries(path)


def remove_if_ours(path) -> bool:
    """Remove a temporary that :func:`removable_temporary` proves antiamp's."""
    if removable_temporary(path):
        shutil.rmtree(path, ignore_errors=True)
        return True
    return False


# ------------------------------------------------------------------ stores
def _chunk_key(name: str) -> bool:
    import re

    return re.fullmatch(r"\d+([./]\d+)*", name) is not None


def foreign_entries(store: str | os.PathLike) -> list:
    """Paths inside a Zarr store (format 2) that no Zarr writer of antiamp made: a
    file or folder at its root that is no Zarr document or node, or inside an array
    anything but its documents and chunk files (a user's notes kept in the store)."""
    store, found = Path(store), []
    if store.is_symlink() or not store.is_dir():
        return found
    for e in store.iterdir():
        if e.name in _ZARR_FILES or e.name == OWN:
            continue
        if e.is_dir() and not e.is_symlink() and any(
                (e / z).is_file() for z in (".zarray", ".zgroup", "zarr.json")):
            for f in e.iterdir():
                if not (f.name in _ZARR_FILES or (_chunk_key(f.name) and not f.is_symlink())):
                    found.append(f)
            continue
        found.append(e)
    return found


def carry_foreign(old: Path, new: Path) -> None:
    """Move what :func:`foreign_entries` finds in ``old`` to the same place in ``new``
    (the store replacing it), so that replacing a store never deletes a file antiamp
    did not write; a name the new store uses gets ``.kept`` appended."""
    for f in foreign_entries(old):
        dest = new / f.relative_to(old)
        while os.path.lexists(dest):
            dest = dest.with_name(dest.name + ".kept")
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(f, dest)


# ------------------------------------------------------------------ one writer, one run
_HELD: list = []


def lock_output(path, command: str, option: str = "--out") -> None:
    """Hold the lock of an output (a folder or a store) until the command ends, as
    sweeps hold their store's (sweeps/lockpath.py: one lock per real path, through
    symbolic links); ``OutputError`` naming the other writer when it is held.  Its
    parent folder is made if needed (the lock file lies beside the output); called
    after every check, just before the work.  The command's ``main`` is wrapped in
    :func:`one_writer`, which lets the locks go."""
    from antiamp.sweeps.lockpath import lock_store

    path = Path(path)
    for held in _HELD:
        if held[0] == os.path.realpath(path):
            return
    refuse_file_above(path, option)  # (a parent that is a file: said, not OSError)
    path.absolute().parent.mkdir(parents=True, exist_ok=True)
    _HELD.append((os.path.realpath(path),
                  lock_store(path, OutputError, command, option=option)))


def release_outputs() -> None:
    """Let go of every lock :func:`lock_output` took."""
    while _HELD:
        _HELD.pop()[1].release()


def one_writer(main):
    """``main`` with the output locks it takes let go when it ends, however it ends."""
    import functools

    @functools.wraps(main)
    def wrapped(*args, **kwargs):
        try:
            return main(*args, **kwargs)
        finally:
            release_outputs()

    return wrapped


def clear_earlier_run(directory, names, log=print, keep=()) -> list:
    """Remove what an earlier run of the same command left in ``directory``: of
    ``names`` (every file the command may write there), those the directory's marker
    lists (antiamp wrote them) that are no link, a Zarr store only if antiamp's.
    Called once the new run's work is done and before it writes, so that no file of
    the earlier run is left beside the new one's; says in one line what it replaced.
    ``keep``: names the run always writes, each replaced in one rename (a store, so
    that a kill leaves the old one or the new one, never none).  Returns the names
    removed."""
    directory = Path(directory)
    ours = listed(directory) or set()
    gone = []
    for name in names:
        p = directory / name
        if name in keep or name not in ours or p.is_symlink() or not os.path.lexists(p):
            continue
        if p.is_dir():
            if not is_antiamp_store(p):
                continue
            shutil.rmtree(p)
        else:
            p.unlink()
        gone.append(name)
    if gone:
        _write_marker(directory, ours - set(gone))
        log(f"replacing the earlier run in {directory}: removed its {len(gone)} file"
            f"{'s' * (len(gone) != 1)} ({', '.join(gone)}), all written by antiamp")
    return gone


# ------------------------------------------------------------------ CSV
#: First characters that make a spreadsheet read a cell as a formula (OWASP's list).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def escape_cells(df):
    """A copy of ``df`` whose text cells beginning with a formula character
    (:data:`FORMULA_START`) start with an apostrophe, which a spreadsheet shows
    and never runs; numbers (-0.5 in a numeric column) are left as they are."""
    import numpy as np
    import pandas as pd

    def esc(v):
        return "'" + v if isinstance(v, str) and v.startswith(FORMULA_START) else v

    out = df.copy()
    for c in out.columns:
        col = out[c]
        if isinstance(col.dtype, pd.StringDtype):  # text only: tested as a column
            vals = col.astype(object).to_numpy(copy=True)
            at = np.flatnonzero(np.asarray(col.str.startswith(FORMULA_START, na=False),
                                           dtype=bool))
            vals[at] = ["'" + v for v in vals[at]]
        elif isinstance(col.dtype, pd.CategoricalDtype):  # each category once
            cats = np.array([esc(v) for v in col.cat.categories], dtype=object)
            codes = col.cat.codes.to_numpy()
            vals = col.astype(object).to_numpy(copy=True)
            vals[codes >= 0] = cats[codes[codes >= 0]]
        elif col.dtype == object:
            vals = col.map(esc).to_numpy()
        else:
            continue
        # (two text columns of 5 million rows: 1.1-1.7 s of CPU, where each value
        # escaped through map took 4.4-4.5)
        out[c] = pd.Series(vals, index=col.index, dtype=object, name=c)
    return out


def write_csv(path, df, *, option: str = "output", marked: bool | None = None) -> Path:
    """The one writer of antiamp's CSV outputs: ``df`` (no index) with its formula
    cells escaped (:func:`escape_cells`), under :func:`write_file`'s policy."""
    return write_file(path, escape_cells(df).to_csv(index=False), option=option,
                      marked=marked)


def add_out_options(parser, default: str) -> None:
    """The ``--out`` and ``--force`` options of a command that writes a folder of
    outputs, in the same words for every command (``default``: where the outputs go
    without ``--out``); :func:`check_out_dir` enforces what they promise."""
    parser.add_argument("--out", default=None, help=f"output directory (default: {default}): "
                        "a new one, an empty one or one antiamp made")
    parser.add_argument("--force", action="store_true",
                        help="write into an existing --out directory antiamp did not make; "
                             "still overwrites only the files antiamp wrote there")
