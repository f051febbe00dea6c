"""One lock per store, whatever path names it.

A store's lock is the file ``<store>.lock`` beside the store's real path (every
symbolic link in the path resolved), so two names of one store (a linked parent
directory) share one lock.  A store path that is itself a symbolic link is refused
for writing: a run writes its store by renaming a new one into place, which would
replace the link with a second copy rather than write where it points.  A lock
file that is a symbolic link is refused as such, never followed.  Read-only
commands take the lock only when a lock file is already there (a writer always
makes one), so they leave none behind.

A writer removes the lock file when it lets go, while it still holds the lock,
if antiamp provably made it: this run created it (exclusively), or it is an empty
file beside a store that antiamp wrote.  A run that opened the old file just
before it was removed finds, once it holds the lock, that the path no longer
names the file it locked, and takes the lock again on the new one; so a finished
store has no ``.lock`` beside it.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path


def refuse_link(store: Path, error: type[Exception]) -> None:
    """``error`` if the store path is a symbolic link (a store is written in place of
    its path: through a link it would become a second copy)."""
    store = Path(store)
    if store.is_symlink():
        raise error(f"{store} is a symbolic link (to {os.readlink(store)}); a store is "
                    "written under its own name, never through a link. Name the store by "
                    f"its real path ({os.path.realpath(store)}) or choose another one")


def lock_file(store: Path) -> Path:
    """The one lock file of the store that ``store`` names."""
    real = Path(os.path.realpath(store))
    return real.with_name(real.name + ".lock")


class _NoLock:
    def release(self) -> None:
        pass


def _locked_fd(lock) -> int | None:
    """The descriptor filelock holds (its private context; None where unknown)."""
    ctx = getattr(lock, "_context", None)
    fd = getattr(ctx, "lock_file_fd", None)
    return fd if isinstance(fd, int) else None


def _names_locked_file(lock, path: Path) -> bool:
    """Whether ``path`` still names the file ``lock`` holds (not removed by the run
    that held it before, or replaced since)."""
    fd = _locked_fd(lock)
    if fd is None:
        return True
    try:
        held, now = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return held.st_nlink > 0 and (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


class StoreLock:
    """A held store lock; ``release()`` removes the lock file where antiamp provably
    made it (see the module's docstring), then lets the lock go."""

    def __init__(self, lock, path: Path, store: Path, created: bool):
        self._lock, self._path, self._store, self._created = lock, path, store, created

    def _ours(self) -> bool:
        if self._created:
            return True
        try:
            st = os.lstat(self._path)
        except OSError:
            return False
        import stat

        if not stat.S_ISREG(st.st_mode) or st.st_size:
            return False
        from antiamp.ownership import is_antiamp_store

        return is_antiamp_store(self._store)

    def release(self) -> None:
        try:
            if self._lock.is_locked and _names_locked_file(self._lock, self._path) \
                    and self._ours():
                os.unlink(self._path)
        except OSError:  # a lock file left behind is harmless; never a failure
            pass
        finally:
            self._lock.release()


def lock_store(store: Path, error: type[Exception], what: str = "run", *,
               read_only: bool = False, option: str = "sweep.store"):
    """Hold the store's lock (its ``release()`` gives it back); ``error`` naming the
    reason when it is held, when the store (for writing) or its lock file is a
    symbolic link.  ``read_only``: no lock file is created where there is none;
    ``option``: what to choose instead, named when the lock is held."""
    from filelock import FileLock, Timeout

    store = Path(store)
    if not read_only:
        refuse_link(store, error)
    path = lock_file(store)
    link = (f"the lock file {path} is a symbolic link; antiamp never follows one. "
            "Remove it (a lock file holds nothing) and rerun")
    if path.is_symlink():
        raise error(link)
    if path.exists() and (not path.is_file() or path.stat().st_size > 0):
        # antiamp's lock files are empty: taking the lock would truncate this one
        raise error(f"{path} is where {store}'s lock file goes, and it is not an (empty) "
                    "lock file antiamp made; antiamp never truncates or replaces it. Move "
                    "it away and rerun")
    if read_only and not path.exists():
        return _NoLock()
    for _ in range(5):  # again while the file locked was removed by the run before
        created = False
        if not read_only:
            try:  # exclusively: proof that this run made the file (removed on release)
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                                 | getattr(os, "O_NOFOLLOW", 0), 0o644))
                created = True
            except FileExistsError:
                pass
            except OSError as exc:
                if exc.errno == errno.ELOOP or path.is_symlink():
                    raise error(link) from None
                raise
        lock = FileLock(str(path), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise error(f"another {what} is writing to {store} (lock {path} is held); "
                        f"wait for it to finish or choose another {option}") from None
        except FileNotFoundError:
            if read_only:  # removed by the writer that finished: nothing to wait for
                return _NoLock()
            continue
        except OSError as exc:
            if exc.errno == errno.ELOOP or path.is_symlink():  # made a link since the check
                raise error(link) from None
            raise
        if _names_locked_file(lock, path):
            return lock if read_only else StoreLock(lock, path, store, created)
        lock.release()
        if read_only and not path.exists():
            return _NoLock()
    raise error(f"another {what} is writing to {store} (lock {path} keeps changing); "
                f"wait for it to finish or choose another {option}")


def probe(store: Path, error: type[Exception], what: str = "run") -> None:
    """Before anything is made: ``error`` if the store is a link, its lock file is a
    link, or its lock is held (no lock file is created)."""
    refuse_link(store, error)
    lock_store(store, error, what, read_only=True).release()
