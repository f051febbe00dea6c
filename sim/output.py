"""Writing results: atomic Zarr stores, the printed table and the figure."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import numpy as np
from .lazy import lazy
xr = lazy("xarray")

from .metrics import CONTRAST_METRICS, PROTOCOL_METRICS


from .outputs_policy import (  # noqa: F401  (the policy's, re-exported)
    OutputError, carry_foreign, foreign_entries, is_antiamp_store, refuse_file_above)


def describe_os_error(exc: OSError) -> str:
    """One line for a failed read or write: what, where and the likely cause."""
    import errno

    where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
    hint = {errno.ENOSPC: "the disk is full", errno.EFBIG: "a file size limit was reached",
            errno.EDQUOT: "the disk quota is exhausted", errno.EACCES: "no permission",
            errno.EROFS: "the file system is read-only"}.get(exc.errno)
    return f"{exc.strerror or exc}{where}" + (f": {hint}" if hint else "")


def store_complete(attrs) -> bool:
    """Whether a grid store is finished: the ``complete`` flag of a sweep's (or a merged)
    store, or a grid that antiamp-solve or antiamp-ext computed in memory and wrote whole
    once done (its axes and config, no sweep fingerprint, no flag)."""
    if "complete" in attrs:
        return bool(attrs["complete"])
    return "axes" in attrs and "config" in attrs and "fingerprint" not in attrs


def not_a_grid(store, attrs) -> str | None:
    """Why a store that antiamp wrote is not a grid of ``antiamp-sweep`` (the one
    cell of ``antiamp``, or the estimates of ``antiamp-estimate``), for the commands
    that read grids; None for a grid or merged store (every one carries ``complete``,
    finished or not) and for a store whose root attributes are lost."""
    if "complete" in attrs:
        return None
    if "log_schema" in attrs:
        what = "the estimates of antiamp-estimate"
    elif "config" in attrs and "axes" not in attrs and "fingerprint" not in attrs:
        what = f"one cell of antiamp (model {attrs.get('model', '?')})"
    else:
        return None
    return (f"{store} holds {what}, not a grid; give a store that antiamp-sweep wrote "
            "(sweep.zarr) or a merged one")


def check_replaceable(path: str | os.PathLike, *, others=()) -> None:
    """Refuse a target that antiamp may not replace: an existing directory or file
    that is not an antiamp store, or the current directory, or a parent of it or of
    ``others`` (the run directory)."""
    path = Path(path).expanduser()
    if path.is_symlink():
        raise OutputError(f"{path} is a symbolic link (to {os.readlink(path)}); antiamp "
                          "never writes a store through a link. Name the real path or "
                          "another one")
    target = path.resolve()
    for p in (Path.cwd(), *map(Path, others)):
        p = p.resolve()
        if target == p or target in p.parents:
            raise OutputError(f"{path} is {'the' if target == p else 'a parent of the'} "
                              f"{'current' if p == Path.cwd().resolve() else 'run'} directory; "
                              "antiamp never writes a store over it. Choose another path")
    if path.exists() and not is_antiamp_store(path):
        raise OutputError(f"{path} exists and is not an antiamp store; antiamp replaces only "
                          "stores it wrote. Choose another path or move it away")
    refuse_file_above(path, None)


def remove_temporaries(path: str | os.PathLike, kinds=("partial", "old")) -> None:
    """Remove ``.<name>.<kind>-*`` beside ``path``: what a kill left of earlier writes
    of this store (callers hold the store's lock).  The name is no proof: one is
    removed only when it is an antiamp store (its attributes or its own folder), never
    a link or a folder of someone else's that happens to carry such a name."""
    from .outputs_policy import remove_if_ours

    path = Path(path)
    for kind in kinds:
        for stale in path.parent.glob(f".{path.name}.{kind}-*"):
            remove_if_ours(stale)


#: Datasets up to this size are encoded in memory and written file by file (below).
MEMORY_WRITE_BYTES = 256 << 20


def to_zarr_files(ds: xr.Dataset, target: str | os.PathLike, **kwargs):
    """``ds.to_zarr(target, zarr_format=2, **kwargs)`` into a new directory ``target``.

    Zarr 3 sends every object of a store (each array's ``.zarray``, ``.zattrs`` and
    chunks: about 180 for one cell) through its event loop one at a time, which costs
    more than the bytes: a cell's store took 0.29 s.  A dataset that fits in memory is
    encoded into a ``zarr.storage.MemoryStore`` (the same codecs and keys) and its
    objects are then written as the files a ``LocalStore`` would make (the format-2
    key is the file's relative path): 0.13 s, the same bytes.  Larger datasets, and
    datasets with dask variables (dask would tokenize the memory store's contents
    to name its graph), go to the directory directly.  Returns what ``to_zarr``
    returns.
    """
    target = Path(target)
    kwargs.setdefault("zarr_format", 2)
    lazy = any(v.chunks is not None for v in ds.variables.values())
    if not lazy:  # compute=False defers only dask writes; for NumPy data xarray would
        kwargs.pop("compute", None)  # import dask just to wrap them in a delayed object
    if lazy or ds.nbytes > MEMORY_WRITE_BYTES or kwargs["zarr_format"] != 2:
        return ds.to_zarr(target, mode="w-", **kwargs)
    from zarr.storage import MemoryStore

    objects: dict = {}
    kwargs["mode"] = "w"  # a new, empty memory store; the target is checked below
    out = ds.to_zarr(MemoryStore(objects), **kwargs)
    write_objects(objects, target)
    return out


def write_objects(objects: dict, target: Path) -> None:
    """The objects of a format-2 ``zarr.storage.MemoryStore`` (key: buffer) as the
    files a ``LocalStore`` would make of them, into a new directory ``target``."""
    target.mkdir()  # never into an existing directory
    for key in sorted(objects):
        f = target.joinpath(*key.split("/"))
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(objects[key].to_bytes())


def write_zarr_atomic(ds: xr.Dataset, path: str | os.PathLike, log=None, prepare=None
                      ) -> Path:
    """Write ``ds`` to ``path`` so that a reader never sees a half-written store.

    The store is written beside the target under a temporary name and renamed
    into place; an existing store at ``path`` is only replaced once the new one is
    complete, and only if antiamp wrote it (:func:`check_replaceable`).
    ``prepare(tmp)``, if given, adds to the new store before it is renamed into place.
    """
    path = Path(path)
    check_replaceable(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.partial-{uuid.uuid4().hex}")
    if os.path.lexists(tmp):  # never ours to remove below
        raise OutputError(f"{tmp} exists; antiamp does not write over it")
    try:
        # Zarr format 2: stable string coordinates and consolidated metadata that any
        # zarr reader opens (format 3 still flags both as unstable).
        to_zarr_files(ds, tmp, consolidated=True)
        if prepare is not None:
            prepare(tmp)
        if path.exists():
            old = path.with_name(f".{path.name}.old-{uuid.uuid4().hex[:8]}")
            carry_foreign(path, tmp)  # what is not antiamp's stays in the store
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
            if log is not None:
                log(f"replaced the earlier store {path}")
        else:
            os.replace(tmp, path)
    finally:
        if tmp.exists() and not foreign_entries(tmp):  # never with carried files in it
            shutil.rmtree(tmp, ignore_errors=True)
    remove_temporaries(path)  # what kills left beside this store in earlier writes
    return path


def _seed_forms_apply(ds) -> bool:
    """Whether the seed's closed forms of the contrasts (rho (1 - b), ...) are this
    cell's: one tie-break judge, gatekeeping consultancy, every sender presenting."""
    import yaml

    try:  # the C parser where PyYAML has one (a config's YAML is a few hundred lines)
        cfg = yaml.load(ds.attrs["config"], Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (KeyError, yaml.YAMLError):
        return False
    j, m = cfg.get("judge", {}), cfg.get("model", {})
    return (j.get("kind") == "tiebreak" and j.get("jury_size", 1) == 1
            and cfg.get("protocol", {}).get("consult_default", 0) == 0
            and all(m.get(k) in (None, 1, 1.0) for k in ("x_P", "x_A", "x_P_consult"))
            and m.get("c_e", 0) == 0)


def _strategies_line(st) -> str:
    """``Pr(present | evidence)`` of each sender, in words (the attribute is a dict, or
    its string form in a store written by an older version)."""
    if isinstance(st, str):
        import ast

        try:
            st = ast.literal_eval(st)
        except (ValueError, SyntaxError):
            return st
    names = {"x_P_consult": "protagonist in consultancy", "x_P": "protagonist in debate",
             "x_A": "antagonist in debate"}
    return ", ".join(f"{names.get(k, k)} {float(v):g}" for k, v in dict(st).items())


def _fmt(v: float, se: float | None = None) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "-"
    if se is None or np.isnan(se):
        return f"{v:.5f}"
    return f"{v:.5f} ± {se:.5f}"


def format_table(ds: xr.Dataset) -> str:
    """The run's table: each metric per protocol with its standard error and closed form."""
    w = [16, 21, 9, 21, 9]
    head = ["metric", "consult (± se)", "exact", "debate (± se)", "exact"]
    lines = [
        f"antiamp {ds.attrs['antiamp_version']}  baseline model, judge={ds.attrs['judge']}"
        f" (jury of {ds.attrs['jury_size']}), n={ds.attrs['n_instances']:,}, seed={ds.attrs['seed']}",
        "presentation given evidence: " + _strategies_line(ds.attrs["strategies"]),
        "",
    ]
    from .plotting import wrap_columns, wrap_prose

    rows = ["  ".join(h.ljust(x) for h, x in zip(head, w)) + "  definition"]
    for name, spec in PROTOCOL_METRICS.items():
        cells = [name]
        for i in range(2):
            v = float(ds[name].values[i])
            cells.append(_fmt(v, float(ds[f"{name}_se"].values[i])))
            cells.append(_fmt(float(ds[f"{name}_exact"].values[i])))
        rows.append("  ".join(c.ljust(x) for c, x in zip(cells, w)) + "  " + spec.definition)
    # within a terminal's 100 columns: the definitions that do not fit in a block below
    lines = wrap_prose(lines) + wrap_columns(rows)
    lines += ["", "paired contrasts on the same instances:"]
    rows = []
    seed_forms = _seed_forms_apply(ds)
    for name, spec in CONTRAST_METRICS.items():
        v, se, th = (float(ds[k].values) for k in (name, f"{name}_se", f"{name}_exact"))
        definition = spec.definition
        if not seed_forms:  # the seed's expression is the tie-break judge's
            definition = definition.split("; seed:")[0]
        rows.append(
            f"  {name.ljust(13)} {_fmt(v, se).ljust(21)} exact {_fmt(th).ljust(9)}  {definition}"
        )
    return "\n".join(lines + wrap_prose(wrap_columns(rows), indent="    "))


def _caption(ds: xr.Dataset) -> str:
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    m, j = cfg["model"], cfg["judge"]
    judge = (f"tie-break b={j['b']}" if j["kind"] == "tiebreak"
             else f"logit λ={j['lam']} μ={j['mu']} κ={j['kappa']}")
    if j["jury_size"] > 1:
        judge += f", jury of {j['jury_size']}"
    return (f"ρ={m['rho']}, p={m['p']}, π={m['pi']}, c_e={m['c_e']}; {judge}; "
            f"n={ds.attrs['n_instances']:,}, seed={ds.attrs['seed']}")


def plot_results(ds: xr.Dataset, path: str | os.PathLike) -> Path:
    """Bar chart of the safety and accuracy metrics per protocol, 95% intervals, closed forms marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["amp", "fwc", "acc", "tie_rate", "b_hat", "asd", "auc"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [3, 1]})
    ax = axes[0]
    width = 0.38
    x = np.arange(len(names))
    colors = {"consult": "#d95f02", "debate": "#1b9e77"}
    for i, prot in enumerate(ds.protocol.values):
        vals = np.array([float(ds[n].values[i]) for n in names])
        ses = np.array([float(ds[f"{n}_se"].values[i]) for n in names])
        th = np.array([float(ds[f"{n}_exact"].values[i]) for n in names])
        xs = x + (i - 0.5) * width
        ax.bar(xs, vals, width, yerr=1.96 * np.nan_to_num(ses), color=colors[str(prot)],
               label=f"{prot} (simulated, 95% interval)", capsize=3,
               error_kw={"ecolor": "0.35", "lw": 1})
        # The closed form as a hollow diamond above the interval's cap, not a tick
        # that the cap hides.
        ax.scatter(xs, th, marker="D", s=28, facecolors="white", edgecolors="black",
                   linewidths=1.0, zorder=4, label="closed form" if i == 0 else None)
    short = {"fwc": "follow-\nwhen-correct", "asd": "ASD\n(fwc − Amp)",
             "auc": "judge AUC\n(vs truth)"}
    ax.set_xticks(x, [short.get(n) or PROTOCOL_METRICS[n].long_name.replace(" ", "\n", 1)
                      for n in names], fontsize=8)
    # ASD = fwc - Amp is negative where the judge favours the wrong side
    low = np.nanmin([float((ds[n] - 1.96 * ds[f"{n}_se"].fillna(0)).min()) for n in names])
    bottom = min(0.0, np.floor(low * 5) / 5)
    ax.set_ylim(bottom, 1.25)
    ax.set_yticks(np.arange(round(bottom * 5), 6) / 5)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_ylabel("probability (ASD: difference of two)")
    ax.legend(fontsize=8, loc="upper center", ncol=3, frameon=False)
    ax.set_title("consultancy vs debate: Amp = Pr(y = a | a ≠ ω), fwc, accuracy, ties, "
                 "b-hat, ASD, judge AUC", fontsize=9)
    ax2 = axes[1]
    wv = ds["welfare"].values
    ax2.bar([0, 1], wv, yerr=1.96 * ds["welfare_se"].values,
            color=[colors["consult"], colors["debate"]], capsize=3)
    ax2.scatter([0, 1], ds["welfare_exact"].values, marker="D", s=28, facecolors="white",
                edgecolors="black", linewidths=1.0, zorder=4)
    ax2.set_xticks([0, 1], list(ds.protocol.values))
    ax2.set_ylabel("principal welfare $U_D$")
    ax2.axhline(0, color="grey", lw=0.5)
    fig.suptitle(_caption(ds), fontsize=9)
    fig.tight_layout()
    from .outputs_policy import save_figure

    path = Path(path)
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path
