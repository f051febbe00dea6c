"""Merging the stores of a Hydra multirun (coarse outer sweeps) into one.

Each job of ``antiamp-sweep -m judge=tiebreak,logit ...`` writes its own
``sweep.zarr``.  The fields whose values differ between the jobs' configs become
new dimensions, and the stores are combined by coordinates:

    antiamp-merge multirun/sweeps/amp_gap -o merged.zarr

The Hydra callback :class:`antiamp.sweeps.callbacks.MergeStores` runs the same merge at
the end of every multirun, into ``<sweep dir>/merged.zarr``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from antiamp._version import __version__
from antiamp.cmdline import Parser, interruptible
from antiamp.lazy import lazy
xr = lazy("xarray")
import yaml

from antiamp.output import OutputError, write_zarr_atomic
from antiamp.outputs_policy import one_writer

#: Sections whose fields never become merge dimensions (how a run ran, not what).
NOT_MERGEABLE = ("run", "sweep", "executor", "export", "hydra")


class MergeError(ValueError):
    pass


def _flat(d: dict, prefix="") -> dict:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat(v, key + "."))
        else:
            out[key] = v
    return out


def find_stores(paths) -> list:
    stores = []
    for p in map(Path, paths):
        if (p / ".zgroup").exists() or (p / "zarr.json").exists():
            stores.append(p)
        else:
            stores.extend(sorted(q.parent for q in p.rglob(".zgroup")
                                 if q.parent.suffix == ".zarr" and q.parent.name != "merged.zarr"))
    return stores


def check_target(out, stores) -> None:
    """The merged store may replace only an earlier merged store: never one of the
    stores it merges, a store inside one, or another store of antiamp's (a sweep's,
    whose checksums and resumable blocks a merged copy would not keep)."""
    from antiamp.output import is_antiamp_store

    target = Path(out).resolve()
    for s in stores:
        s = Path(s).resolve()
        if target == s or s in target.parents:
            raise MergeError(f"-o {out} is {'one of' if target == s else 'inside one of'} the "
                             f"stores to merge ({s}); write the merged store to a new path")
    if target.exists() and is_antiamp_store(target):
        import zarr

        try:
            attrs = dict(zarr.open_group(str(target), mode="r").attrs)
        except Exception:  # noqa: BLE001 - unreadable: not known to be a merged store
            attrs = {}
        if "merged_from" not in attrs:
            raise MergeError(f"-o {out} is a store antiamp-merge did not write (a sweep's or "
                             "a single run's); antiamp-merge replaces only a merged store. "
                             "Choose another path")


def merge_stores(paths, out) -> xr.Dataset:
    stores = find_stores(paths)
    if not stores:
        raise MergeError(f"no sweep stores under {', '.join(map(str, paths))}")
    check_target(out, stores)
    from antiamp.outputs_policy import lock_output

    lock_output(out, "antiamp-merge", option="-o")  # one writer per store (let go by main)
    from .check import verify_for_reading

    for s in stores:  # as antiamp-check verifies them: damage refused, never merged
        verify_for_reading(s, MergeError, command="antiamp-merge")
    from antiamp.schema import upgrade

    # a store of the former names (<metric>_theory) merges under the current ones
    dss = [upgrade(xr.open_zarr(s)) for s in stores]
    from antiamp.output import not_a_grid, store_complete

    for s, ds in zip(stores, dss):
        why = not_a_grid(s, ds.attrs)
        if why is not None:
            raise MergeError(why)
        if not store_complete(ds.attrs):
            raise MergeError(f"{s} is not complete; rerun its sweep to finish it first")
    cfgs = [_flat(yaml.safe_load(ds.attrs["config"])) for ds in dss]
    for key in ("model.name", "run.n_instances", "run.seed", "sweep.crn"):
        if len({repr(c.get(key)) for c in cfgs}) > 1:
            raise MergeError(f"the stores differ in {key}; they cannot be merged")
    axes_paths = set()
    for ds in dss:
        axes_paths.update(yaml.safe_load(ds.attrs.get("axes", "[]")))
    varying = [k for k in cfgs[0]
               if k.split(".")[0] not in NOT_MERGEABLE and k not in axes_paths
               and len({repr(c.get(k)) for c in cfgs}) > 1]
    if not varying and len(dss) > 1:
        raise MergeError("the stores hold the same configuration; nothing to merge along")
    parts = []
    for ds, c in zip(dss, cfgs):
        ds = ds.drop_vars([v for v in ds.data_vars
                           if v in ("cell_done", "cell_digest", "block_digest")])
        for k in varying:
            dim = k.split(".")[-1]
            ds = ds.expand_dims({dim: [c[k]]})
            ds[dim].attrs.update({"config_path": k, "long_name": k})
        parts.append(ds)
    merged = xr.combine_by_coords(parts, combine_attrs="drop_conflicts").load()
    for v in merged.variables.values():
        v.encoding = {}
    merged.attrs.update({
        "merged_from": [str(s) for s in stores],
        "merged_along": [k for k in varying],
        "complete": 1,
        "config": dss[0].attrs["config"],
    })
    write_zarr_atomic(merged, out)
    return merged


@interruptible("antiamp-merge")
@one_writer  # (the -o lock is let go however the command ends)
def main(argv=None) -> None:
    ap = Parser(prog="antiamp-merge", description=__doc__.splitlines()[0])
    ap.add_argument("--version", action="version", version=f"%(prog)s (antiamp {__version__})")
    ap.add_argument("paths", nargs="+", help="stores, or directories searched for stores")
    ap.add_argument("-o", "--out", required=True, help="the merged store to write")
    args = ap.parse_args(argv)
    try:
        ds = merge_stores(args.paths, args.out)
    except (MergeError, OutputError) as exc:
        print(f"antiamp-merge: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    n, along = len(ds.attrs["merged_from"]), ds.attrs["merged_along"]
    if along:
        print(f"merged {n} stores along {', '.join(along)} -> {args.out}")
    else:  # one store: nothing varies between stores
        print(f"copied {n} store (one store: nothing to merge along) -> {args.out}")


if __name__ == "__main__":
    main()
