"""``antiamp-check``: verify a grid store block by block, and repair it on request.

    antiamp-check outputs/sweeps/amp_gap/sweep.zarr
    antiamp-check --repair outputs/sweeps/amp_gap/sweep.zarr

Every cell of a grid store carries a checksum written with it: of its class counts
for a model with fused grids (whose other variables must then equal what the
counts give), of all its values for any other model.  The check rebuilds the
sweep's plan from the configuration the store carries, verifies every block, and names the damaged ones; ``--repair``
recomputes just those (with the same seeds, so a repaired store is the store an
undamaged run wrote, bit for bit).  Rerunning the sweep's own command does the
same verification and repair.

The metadata is verified first (sweeps/metadata.py): every document the store's
layout declares (each array's shape, chunks, dtype, fill value, compressor and
attributes; the root attributes with the plan; the consolidated metadata) against
the record kept in the store's own folder, ``.antiamp/``, or else against the
consolidated metadata.  ``--repair`` rebuilds the damaged documents from it
(keeping a copy of each file it replaces in ``.antiamp/replaced-<time>/``) before
the blocks are verified, so that a deleted array is recomputed.

A store whose run was interrupted (blocks never finished, nothing damaged) is
called "interrupted", not damaged: rerunning the sweep finishes it.

Exit status: 0 every store sound (or repaired), 1 damage or unfinished blocks
found and not repaired, or a store whose plan is lost (nothing sound to rebuild
its metadata from: left as it is), 2 a path that is not a checkable antiamp grid
store.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import warnings
from pathlib import Path

from antiamp._version import __version__
from antiamp.cmdline import quiet_pipe

from .blocks import STORE_LAYOUT


class CheckError(RuntimeError):
    """A path that cannot be checked (not a store, not a grid, another version)."""


class Unfinished(CheckError):
    """A grid whose run was interrupted before its store was written."""


class CheckResult(tuple):
    """(blocks, blocks damaged or unfinished + metadata documents damaged), with
    ``metadata``: how many of those are metadata documents."""

    def __new__(cls, n_blocks: int, bad: int, metadata: int = 0, unfinished: int = 0):
        self = super().__new__(cls, (n_blocks, bad))
        self.metadata = metadata
        #: of ``bad``, the blocks never finished (a run interrupted, not damage)
        self.unfinished = unfinished
        return self


def _attrs(store: Path) -> dict:
    import zarr

    try:
        return dict(zarr.open_group(str(store), mode="r").attrs)
    except Exception as exc:
        raise CheckError(f"{store} cannot be opened as a Zarr store ({type(exc).__name__})"
                         ) from None


def check_store(store: str | Path, *, repair: bool = False, log=print) -> tuple[int, int]:
    """Verify (and with ``repair`` fix) one grid store: (blocks, blocks found
    damaged or unfinished)."""
    from antiamp.config import ConfigError

    from .metadata import PlanLost, inspect, plan_lost

    store = Path(store)
    if store.name in ("", ".", ".."):  # (/ or .: no name to put .partial beside)
        store = Path(os.path.abspath(store))
        if not store.name:
            raise CheckError(f"{store} is not an antiamp store")
    part = store.with_name(store.name + ".partial")
    if not store.exists() and part.is_dir() and not part.is_symlink():
        raise Unfinished(f"{store}: interrupted: the run has not finished; its finished "
                         f"blocks are in {part}: rerun the sweep's command to finish it")
    if not store.is_dir():
        raise CheckError(f"{store} does not exist or is not a directory")
    from antiamp.inputs import special_entry

    special = special_entry(store)  # before any read: a FIFO would block it forever
    if special is not None:
        raise CheckError(f"{store} is not a store antiamp wrote: {special}; antiamp reads "
                         "only regular files in a store")
    # The metadata first (sweeps/metadata.py): the layout and plan from their
    # soundest source, so that damaged metadata is named and rebuilt, not refused.
    insp = inspect(store)
    if insp.layout is not None:
        attrs = insp.attrs
    else:
        try:
            attrs = _attrs(store)
        except CheckError:
            if insp.ours:
                raise PlanLost(plan_lost(insp)) from None
            raise
        if insp.ours and "merged_from" not in attrs:
            raise PlanLost(plan_lost(insp))
    if "antiamp_version" not in attrs:
        raise CheckError(f"{store} is not an antiamp store")
    if "merged_from" in attrs:
        raise CheckError(f"{store} is a merged store; check the stores it was merged from "
                         "(its merged_from attribute lists them)")
    try:
        if insp.kind in ("fused", "cells"):
            return _check(store, attrs, repair, log, insp.kind)
        if insp.kind == "grid":
            raise CheckError(f"{store} was written whole by an antiamp before store layout "
                             f"{STORE_LAYOUT} (a checksum per block); it reads and plots as "
                             "before, but only a store of the current layout can be verified: "
                             "rerun its sweep with sweep.overwrite=true to rewrite it")
    except ConfigError as exc:
        raise CheckError(f"{store}: its recorded configuration no longer validates ({exc})"
                         ) from None
    raise CheckError(f"{store} is a single-cell result or a store written before block "
                     "checksums; only grid stores of antiamp-sweep carry them")


def _metadata(store: Path, repair: bool, log) -> int:
    """Verify (and with ``repair`` rebuild) the store's metadata, under its lock:
    how many documents were damaged."""
    from .metadata import describe, inspect
    from .metadata import repair as rebuild

    insp = inspect(store)
    if repair:
        rebuild(insp, log)
    else:
        for line in describe(insp, repair):
            log(line)
    return len(insp.damaged)


@contextlib.contextmanager
def _quietly(meta: int, repair: bool):
    """Before a repair, the blocks of a store with damaged metadata are read as they
    are: xarray's warnings about it (no consolidated metadata) say nothing more."""
    if meta and not repair:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            yield
    else:
        yield


def _unverified(store: Path, exc: Exception, log) -> None:
    log(f"{store}: its blocks cannot be verified until its metadata is rebuilt "
        f"({type(exc).__name__}); antiamp-check --repair rebuilds it")


def _strategy(attrs: dict, kind: str):
    """The block strategy of a store (:mod:`antiamp.sweeps.driver`), rebuilt from the
    plan its attributes hold: a fused sweep's (each cell's counts with their
    checksum, every other variable recomputed from them) or any other model's (a
    checksum of each cell's values)."""
    cfg = json.loads(attrs["config_json"])
    if kind == "fused":
        from .engine import block_strategy
        from .spec import make_plan

        cfg["executor"] = {"kind": "local"}  # repairs run here, whatever ran the sweep
        return block_strategy(make_plan(cfg))
    from .blocks import ModelBlocks
    from .spec import plan_grid

    from .blocks import stored_blocks

    cfg.setdefault("model", {})["name"] = attrs["model"]
    cfg["sweep"] = json.loads(attrs["sweep_json"])
    # in the store's own blocks (a model's default may have changed since)
    return ModelBlocks(stored_blocks(plan_grid(cfg), None, attrs))


def _check(store: Path, attrs: dict, repair: bool, log, kind: str) -> CheckResult:
    """Verify (and with ``repair`` fix) a grid store of either layout, under its lock."""
    from .chunks import blocks
    from .driver import store_lock, verify

    found = _strategy(attrs, kind)
    if found.fingerprint != attrs.get("fingerprint"):
        raise CheckError(f"{store} was written by another antiamp version (or its config "
                         "attribute is damaged); it cannot be verified by this one")
    lock = store_lock(store, read_only=not repair)  # read-only: no lock file left
    try:
        meta = _metadata(store, repair, log)
        try:
            with _quietly(meta, repair):
                r = verify(found, store, repair=repair, log=log, progress=False)
                n_blocks, damaged, todo = r.n_blocks, r.damaged, r.todo
        except Exception as exc:
            if repair or not meta:
                raise
            _unverified(store, exc, log)
            return CheckResult(len(list(blocks(found.shape, found.chunk))), meta, meta)
    finally:
        lock.release()
    if todo and not repair:
        log(f"{store}: {len(todo)} of {n_blocks} blocks not finished; rerun "
            "the sweep's command (or antiamp-check --repair) to finish them")
    return CheckResult(n_blocks, meta + len(todo) + len(damaged), meta, len(todo))


#: Data types a store's arrays may have (numbers, booleans, text, times): never an
#: object array, whose codec would unpickle what the file names.
SAFE_DTYPE_KINDS = set("biufcUSMm")
#: Codecs antiamp's stores are written with (and the common lossless ones).
SAFE_CODECS = {"blosc", "zstd", "zlib", "gzip", "bz2", "lzma", "lz4", "crc32", "crc32c",
               "adler32", "fletcher32", "shuffle", "delta", "vlen-utf8", "vlen-bytes",
               "bytes", "transpose", "sharding_indexed"}


def _unsafe_array(store: Path) -> str | None:
    """The first array of ``store`` whose data type or codec is not on the
    allow-list (in words), or None; each document read in bounded memory."""
    import numpy as np

    for z in sorted(store.rglob(".zarray")):
        try:
            with open(z, "rb") as f:
                meta = json.loads(f.read(1 << 20))
            kind = np.dtype(meta["dtype"] if isinstance(meta["dtype"], str)
                            else [tuple(x) for x in meta["dtype"]]).kind
        except Exception:  # noqa: BLE001 - named as unreadable
            return f"{z.parent.relative_to(store)}: its .zarray is unreadable"
        codecs = [meta.get("compressor")] + list(meta.get("filters") or [])
        ids = {c.get("id") if isinstance(c, dict) else c for c in codecs if c is not None}
        # text labels (a merged store's coordinates) are objects decoded by a text codec
        if kind not in SAFE_DTYPE_KINDS and not (kind == "O" and ids & {"vlen-utf8",
                                                                        "vlen-bytes"}):
            return f"{z.parent.relative_to(store)}: data type {meta['dtype']!r} (not a number)"
        for cid in ids:
            if cid not in SAFE_CODECS:
                return f"{z.parent.relative_to(store)}: codec {cid!r} (not one antiamp writes)"
    return None


def _not_a_grid(store: Path) -> str | None:
    """:func:`antiamp.output.not_a_grid` of the store's root attributes, where they can
    be read (else None: the checks that follow say what is wrong)."""
    from antiamp.output import not_a_grid

    try:
        import zarr

        attrs = dict(zarr.open_group(str(store), mode="r").attrs)
    except Exception:  # damaged or foreign: verification below names it
        return None
    return not_a_grid(store, attrs)


def open_for_reading(store, error, *, command: str, allow_incomplete: bool = False,
                     verify: bool = True, incomplete=None):
    """A grid store opened whole for a command that reads it (antiamp-plot,
    antiamp-discover), or ``error`` (one line) for anything else: no store, not
    antiamp's, damaged (:func:`verify_for_reading`, unless ``verify`` is off: a
    sweep's own store just verified), not a grid, or unfinished without
    ``allow_incomplete`` (raised as ``incomplete``, by default ``error``)."""
    import xarray as xr

    from antiamp.output import is_antiamp_store, not_a_grid, store_complete
    from antiamp.schema import upgrade

    if not Path(store).exists():
        raise error(f"no store at {store}")
    if not is_antiamp_store(store):
        raise error(f"{store} is not an antiamp store (a sweep.zarr or a merged store)")
    if verify:
        verify_for_reading(store, error, allow_incomplete=allow_incomplete, command=command)
    # each variable read whole on first use; a store of the former names
    # (<name>_theory) reads under the current ones
    ds = upgrade(xr.open_zarr(store, chunks=None))
    why = not_a_grid(store, ds.attrs)
    if why is not None:
        raise error(why)
    if not allow_incomplete and not store_complete(ds.attrs):
        raise (incomplete or error)(f"{store} is not complete (its sweep was interrupted); "
                                    "rerun the sweep to finish it, or pass --allow-incomplete")
    return ds


def verify_for_reading(store, error, *, allow_incomplete: bool = False,
                       command: str = "antiamp") -> None:
    """Before a command reads a store (antiamp-merge, -plot, -discover): ``error``, one
    line, unless it is an antiamp store that verifies as antiamp-check verifies it
    (its metadata against its record, every finished block against its checksums, its
    arrays' data types and codecs on the allow-list).  A merged store, which carries
    no checksums, and a store of the layout before checksums are checked for their
    metadata and data types and read whole once (a damaged chunk refused, not drawn).
    ``allow_incomplete``: unfinished blocks are no refusal."""
    from .metadata import PlanLost

    store = Path(store)
    how = f"antiamp-check --repair {store} repairs it"
    from antiamp.inputs import special_entry

    special = special_entry(store) if store.is_dir() else None  # a FIFO would block a read
    if special is not None:
        raise error(f"{store} is not a store antiamp wrote ({special}); {command} reads only "
                    "regular files in a store")
    bad = _unsafe_array(store) if store.is_dir() else None
    if bad is not None:
        raise error(f"{store} is not a store antiamp wrote ({bad}); {command} never reads it")
    why = _not_a_grid(store)
    if why is not None:  # a one-cell or estimates store: said as such, not as damage
        raise error(why)
    lines: list = []
    try:
        result = check_store(store, log=lines.append)
    except PlanLost:
        raise error(f"{store} is damaged: its plan is lost (its attributes, consolidated "
                    "metadata and metadata record); rerun its sweep to rewrite it") from None
    except Unfinished as exc:
        raise error(str(exc)) from None
    except CheckError as exc:
        msg = str(exc)
        if any(k in msg for k in ("merged store", "before store layout",
                                  "written before block checksums")):
            return _read_whole(store, error, command)
        raise error(msg) from None
    except RuntimeError as exc:  # its lock is held: a run is writing it
        raise error(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - whatever damage makes the check fail
        raise error(f"{store} cannot be verified ({type(exc).__name__}); {how}") from None
    n, n_bad = result
    unfinished = getattr(result, "unfinished", 0)
    damage = [x for x in lines if x.startswith("damaged")]
    if damage and all(x.startswith("damaged complete marker") for x in damage):
        unfinished = n_bad  # every block sound, the store not marked complete: read as
        # an interrupted run's (--allow-incomplete), as before a verification
    if n_bad and not (allow_incomplete and n_bad == unfinished):
        first = damage[0] if damage else None
        if damage and n_bad == unfinished:
            raise error(f"{store} is not complete (every block is sound, but it is not "
                        "marked complete); rerun its sweep to finish it, or pass "
                        "--allow-incomplete")
        if first is None and n_bad == unfinished:
            raise error(f"{store} is not complete ({unfinished} of {n} blocks not finished: "
                        "its sweep was interrupted); rerun the sweep to finish it, or pass "
                        "--allow-incomplete")
        raise error(f"{store} is damaged ({first or f'{n_bad} of {n} blocks'}); {how}, then "
                    "rerun")


def _read_whole(store: Path, error, command: str) -> None:
    """A store without checksums: its metadata inspected and every value read once."""
    from .metadata import inspect

    insp = inspect(store)
    if insp.damaged:
        rel, what = insp.damaged[0]
        raise error(f"{store} is damaged (metadata {rel}: {what}); rerun the command that "
                    "wrote it")
    try:
        import xarray as xr

        with xr.open_zarr(store, chunks=None) as ds:
            for v in ds.variables.values():
                v.values  # noqa: B018 - every chunk decoded once
    except Exception as exc:  # noqa: BLE001 - a damaged chunk, whatever the codec says
        raise error(f"{store} is damaged ({type(exc).__name__} reading it); rerun the "
                    "command that wrote it") from None


def _print_provenance(store: str) -> None:
    """How the store was made (its CF global attributes and provenance), indented."""
    from antiamp.provenance import describe

    try:
        attrs = _attrs(Path(store))
    except CheckError:
        return
    for line in describe(attrs):
        print(f"  {line}")


@quiet_pipe
def main(argv=None) -> None:
    from antiamp.cmdline import Parser

    ap = Parser(
        prog="antiamp-check", description=__doc__.splitlines()[0],
        epilog="Exit status: 0 sound (or repaired), 1 damage found and not repaired (or "
               "a store whose plan is lost), 2 not a checkable antiamp grid store.")
    ap.add_argument("--version", action="version", version=f"%(prog)s (antiamp {__version__})")
    ap.add_argument("stores", nargs="+", help="grid stores written by antiamp-sweep")
    ap.add_argument("--repair", action="store_true",
                    help="rebuild damaged metadata and recompute the damaged or unfinished "
                         "blocks in place")
    args = ap.parse_args(argv)
    status = 0
    from .metadata import PlanLost

    for s in args.stores:
        try:
            result = check_store(s, repair=args.repair)
            n, bad = result
        except PlanLost as exc:  # nothing sound to repair from: a failure, not a refusal
            print(f"antiamp-check: error: {exc}", file=sys.stderr)
            status = max(status, 1)
            continue
        except Unfinished as exc:
            print(exc)
            status = max(status, 1)
            continue
        except CheckError as exc:
            print(f"antiamp-check: error: {exc}", file=sys.stderr)
            status = 2
            continue
        except RuntimeError as exc:  # the store's lock is held, a repair that cannot run
            print(f"antiamp-check: error: {exc}", file=sys.stderr)
            status = 2
            continue
        except OSError as exc:  # a repair that cannot write (a full disk)
            from antiamp.output import describe_os_error

            print(f"antiamp-check: error: {describe_os_error(exc)}; {s} keeps its sound "
                  "blocks: rerun antiamp-check --repair once the cause is fixed",
                  file=sys.stderr)
            raise SystemExit(1) from None
        except KeyboardInterrupt:
            from antiamp.cli import interrupted

            interrupted("\nantiamp-check: interrupted; a repair in progress resumes when "
                        "rerun")
        if not bad:
            print(f"{s}: sound, {n} blocks verified")
            _print_provenance(s)
        elif args.repair:
            meta = getattr(result, "metadata", 0)
            done = [f"rebuilt {meta} metadata document{'s' * (meta != 1)}"] if meta else []
            if bad - meta or not meta:
                done.append(f"repaired {bad - meta} of {n} blocks")
            print(f"{s}: {' and '.join(done)}; sound now")
            _print_provenance(s)
        elif bad == getattr(result, "unfinished", 0):  # no damage: a run cut off
            print(f"{s}: interrupted, no damage found; rerun the sweep's command (or "
                  f"antiamp-check --repair {s}) to finish it")
            status = max(status, 1)
        else:
            print(f"{s}: DAMAGED; antiamp-check --repair {s} "
                  + ("rebuilds the damaged metadata and " if getattr(result, "metadata", 0)
                     else "") + "recomputes the damaged blocks")
            status = max(status, 1)
    raise SystemExit(status)


if __name__ == "__main__":
    main()
