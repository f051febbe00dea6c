"""``antiamp-check``: verify a grid store block by block, and repair it on request.

    antiamp-check outputs/sweeps/amp_gap/sweep.zarr
    antiamp-check --repair outputs/sweeps/amp_gap/sweep.zarr

Every block of a grid store carries a checksum written with it: the class counts
of each cell of a baseline sweep (whose metrics, standard errors and closed forms
must then equal what the counts give), the values of each block of any other
model.  The check rebuilds the sweep's plan from the configuration the store
carries, verifies every block, and names the damaged ones; ``--repair``
recomputes just those (with the same seeds, so a repaired store is the store an
undamaged run wrote, bit for bit).  Rerunning the sweep's own command does the
same verification and repair.

Exit status: 0 every store sound (or repaired), 1 damage or unfinished blocks
found and not repaired, 2 a path that is not a checkable antiamp grid store.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from antiamp._version import __version__


class CheckError(RuntimeError):
    """A path that cannot be checked (not a store, not a grid, another version)."""


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

    store = Path(store)
    if not store.is_dir():
        raise CheckError(f"{store} does not exist or is not a directory")
    attrs = _attrs(store)
    if "antiamp_version" not in attrs:
        raise CheckError(f"{store} is not an antiamp store")
    if "merged_from" in attrs:
        raise CheckError(f"{store} is a merged store; check the stores it was merged from "
                         "(its merged_from attribute lists them)")
    try:
        if attrs.get("model") == "baseline" and "class_counts" in _members(store):
            return _check_baseline(store, attrs, repair, log)
        if "sweep_json" in attrs:
            return _check_grid(store, attrs, repair, log)
    except ConfigError as exc:
        raise CheckError(f"{store}: its recorded configuration no longer validates ({exc})"
                         ) from None
    raise CheckError(f"{store} is a single-cell result or a store written before block "
                     "checksums; only grid stores of antiamp-sweep carry them")


def _members(store: Path) -> set:
    import zarr

    return set(zarr.open_group(str(store), mode="r").array_keys())


def _check_baseline(store: Path, attrs: dict, repair: bool, log) -> bool:
    from .engine import _lock, chunk_shape, fingerprint, verify_store
    from .spec import make_plan

    cfg = json.loads(attrs["config_json"])
    cfg["executor"] = {"kind": "local"}  # repairs run here, whatever ran the sweep
    plan = make_plan(cfg)
    chunk = chunk_shape(plan.shape, plan.base.run.n_instances, plan.cfg.sweep.cells_per_block)
    if fingerprint(plan, chunk) != attrs.get("fingerprint"):
        raise CheckError(f"{store} was written by another antiamp version (or its config "
                         "attribute is damaged); it cannot be verified by this one")
    lock = _lock(store, read_only=not repair)  # read-only: no lock file left
    try:
        report = verify_store(plan, store, chunk, repair=repair, log=log, progress=False)
    finally:
        lock.release()
    if report.todo and not repair:
        log(f"{store}: {len(report.todo)} of {report.n_blocks} blocks not finished; rerun "
            "the sweep's command (or antiamp-check --repair) to finish them")
    return report.n_blocks, len(report.todo) + len(report.damaged)


def _check_grid(store: Path, attrs: dict, repair: bool, log) -> bool:
    from .blocks import _lock, plan_grid, verify_grid_store

    cfg = json.loads(attrs["config_json"])
    cfg.setdefault("model", {})["name"] = attrs["model"]
    cfg["sweep"] = json.loads(attrs["sweep_json"])
    plan = plan_grid(cfg)
    if plan.fingerprint() != attrs.get("fingerprint"):
        raise CheckError(f"{store} was written by another antiamp version (or its config "
                         "attribute is damaged); it cannot be verified by this one")
    lock = _lock(store, read_only=not repair)  # read-only: no lock file left
    try:
        report = verify_grid_store(plan, store, repair=repair, log=log)
    finally:
        lock.release()
    return report.n_blocks, len(report.damaged)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(
        prog="antiamp-check", description=__doc__.splitlines()[0],
        epilog="Exit status: 0 sound (or repaired), 1 damage found and not repaired, "
               "2 not a checkable antiamp grid store.")
    ap.add_argument("--version", action="version", version=f"%(prog)s (antiamp {__version__})")
    ap.add_argument("stores", nargs="+", help="grid stores written by antiamp-sweep")
    ap.add_argument("--repair", action="store_true",
                    help="recompute the damaged or unfinished blocks in place")
    args = ap.parse_args(argv)
    status = 0
    for s in args.stores:
        try:
            n, bad = check_store(s, repair=args.repair)
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
            print("\nantiamp-check: interrupted; a repair in progress resumes when rerun",
                  file=sys.stderr)
            raise SystemExit(130) from None
        if not bad:
            print(f"{s}: sound, {n} blocks verified")
        elif args.repair:
            print(f"{s}: repaired {bad} of {n} blocks; sound now")
        else:
            print(f"{s}: DAMAGED; antiamp-check --repair {s} recomputes the damaged blocks")
            status = max(status, 1)
    raise SystemExit(status)


if __name__ == "__main__":
    main()
