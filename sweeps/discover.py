"""Scenario discovery on a store: where in the parameter space does a condition hold?

    antiamp-discover outputs/sweeps/amp_gap/sweep.zarr --where "amp_gap < 0"
    antiamp-discover STORE --where "amp_debate > amp_consult" --threshold 0.9

Every cell of the store (a grid's cells, a design's points) is one case: its inputs
are the store's axes (the config paths in its ``axes`` attribute), and the condition
is a pandas expression (``DataFrame.eval``) over the store's variables, a variable
with a ``protocol`` dimension named per protocol (``amp_consult``, ``amp_debate``).
PRIM (the Patient Rule Induction Method of Friedman and Fisher 1999, through the EMA
Workbench's implementation, ``ema_workbench.analysis.prim``) finds boxes of the
inputs where the condition holds: each box is reported with its coverage (the
share of the cases where the condition holds that the box holds), its density (the
share of the box's cases where it holds) and its mass (the share of all cases in
the box), and with its limits in the fields' own names and symbols
(:func:`antiamp.fields.label`); the box of the peeling trajectory reported is the
one of largest coverage whose density reaches ``--threshold``.  A figure draws every
box at its printed limits over the share of cases where the condition holds, on the
first box's two most restricted inputs (or the store's first two axes).  Needs the ``discover`` extra
(``pip install 'antiamp[discover]'``).
"""

from __future__ import annotations

import json
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from antiamp.lazy import lazy

pd = lazy("pandas")

from antiamp._version import __version__
from antiamp.cmdline import Parser, interruptible
from antiamp.outputs_policy import one_writer

SKIP_DIMS = ("transcript_class",)


class DiscoverError(ValueError):
    """A store, condition or option that scenario discovery cannot use."""


@dataclass
class Box:
    coverage: float
    density: float
    mass: float
    #: restricted input (config path) -> (low, high)
    limits: dict


def cases(ds) -> tuple:
    """``(inputs, variables, paths)``: one row per case of the store: the axes'
    values (columns named by config path), the variables (per protocol where they
    have one), and the axes' config paths."""
    try:
        paths = json.loads(ds.attrs.get("axes", "[]"))
    except ValueError:
        paths = []
    if not paths:
        raise DiscoverError("the store records no axes (attribute 'axes'); scenario discovery "
                            "needs a sweep over at least one parameter")
    coord_of = {str(ds[c].attrs.get("config_path", c)): c for c in ds.coords}
    missing = [p for p in paths if p not in coord_of]
    if missing:
        raise DiscoverError(f"the store has no coordinate for axis {missing[0]!r}")
    coords = [coord_of[p] for p in paths]
    case_dims = sorted({d for c in coords for d in ds[c].dims})
    # One axis: its dimension renamed, its coordinate kept under its own name (``rename``
    # renamed both, and the axis's values were then read under a name that had gone).
    flat = (ds.stack(case=case_dims) if len(case_dims) > 1
            else ds.rename_dims({case_dims[0]: "case"}))
    inputs = pd.DataFrame({p: np.asarray(flat[c].values, float) for p, c in zip(paths, coords)})
    cols = {}
    for v in flat.data_vars:
        da = flat[v]
        if "case" not in da.dims or any(d in SKIP_DIMS for d in da.dims):
            continue
        other = [d for d in da.dims if d != "case"]
        if not other:
            cols[v] = np.asarray(da.values, float)
        elif other == ["protocol"]:
            for prot in da.protocol.values:
                cols[f"{v}_{prot}"] = np.asarray(da.sel(protocol=prot).values, float)
    return inputs, pd.DataFrame(cols), paths


def condition(variables, where: str) -> np.ndarray:
    """The cases where ``where`` holds (a case with a missing value never does)."""
    try:
        res = variables.eval(where, engine="python")
    except pd.errors.UndefinedVariableError as exc:
        names = [c for c in variables.columns if not ("_se" in c or "_exact" in c
                                                      or c.startswith("cell_"))]
        raise DiscoverError(f"--where {where!r}: {exc}; the store's variables are "
                            f"{', '.join(names)} (and their _se and _exact where "
                            f"recorded)") from None
    except Exception as exc:  # a syntax or type error of the expression
        raise DiscoverError(f"--where {where!r} cannot be evaluated: "
                            f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                            ) from None
    res = np.asarray(res)
    if res.shape != (len(variables),) or res.dtype != bool:
        raise DiscoverError(f"--where {where!r} is not a condition (a comparison such as "
                            f"'amp_gap < 0', joined with & and |)")
    return res


def find_boxes(inputs, holds: np.ndarray, threshold: float = 0.8, n_boxes: int = 1) -> list:
    """PRIM boxes (ema_workbench) of ``inputs`` where ``holds``."""
    with warnings.catch_warnings():  # its import warns of optional parallel back ends
        warnings.simplefilter("ignore")
        try:
            from ema_workbench.analysis import prim
        except ImportError:
            raise DiscoverError("scenario discovery needs the EMA Workbench: pip install "
                                "'antiamp[discover]'") from None
    n = int(holds.sum())
    if n == 0 or n == len(holds):
        raise DiscoverError(f"the condition holds in {n} of {len(holds)} cases; PRIM needs "
                            f"cases where it holds and cases where it does not")
    x = inputs.loc[:, inputs.nunique() > 1]
    if x.shape[1] == 0:
        raise DiscoverError("every axis of the store has a single value")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = prim.Prim(x, holds, threshold=threshold)
        out = []
        for _ in range(n_boxes):
            box = p.find_box()
            traj = box.peeling_trajectory
            ok = traj[traj.density >= threshold]
            if ok.empty:
                break
            i = int(ok.sort_values(["coverage", "density"], ascending=False).index[0])
            box.select(i)
            stats, lims = box.inspect(i, style="data")[0]
            lims = lims.copy()
            lims.columns = lims.columns.droplevel(0)
            out.append(Box(float(stats["coverage"]), float(stats["density"]),
                           float(stats["mass"]),
                           {str(k): (float(r["min"]), float(r["max"])) for k, r in lims.iterrows()}))
    return out


def _label(path: str) -> str:
    from antiamp.fields import label

    try:
        return label(path)
    except Exception:  # a path no section declares (a third-party model's): its name
        return path


def format_boxes(boxes: list, where: str, n_holds: int, n: int) -> str:
    lines = [f"condition {where!r} holds in {n_holds} of {n} cases ({n_holds / n:.1%})"]
    if not boxes:
        lines.append("  no box reaches the density threshold")
    for k, b in enumerate(boxes, 1):
        lines.append(f"box {k}: coverage {b.coverage:.3f}, density {b.density:.3f}, "
                     f"mass {b.mass:.3f}")
        for path, (lo, hi) in b.limits.items():
            lines.append(f"  {_label(path)} ({path}) in [{lo:.4g}, {hi:.4g}]")
    return "\n".join(lines)


def draw_boxes(inputs, holds, boxes: list, paths: list):
    """The figure of :func:`plot_box`: the share of cases where the condition holds
    on two inputs (the first box's two most restricted, or the store's first axes),
    each case a dot at its inputs' values, and every box drawn at the limits printed
    for it (:func:`format_boxes`; an input a box does not restrict spans the whole
    grid).  A box's edge between two grid values is drawn there: the cells are
    centred on the cases, so an edge may cross a cell, and the dots show which cases
    the box holds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    varying = [p for p in paths if inputs[p].nunique() > 1]
    first = boxes[0] if boxes else None
    dims = list(first.limits)[:2] if first and len(first.limits) >= 2 else []
    dims += [p for p in varying if p not in dims][: 2 - len(dims)]
    fig, ax = plt.subplots(figsize=(5.5, 4.5))

    def label(k, b):
        off = [_label(p) for p in b.limits if p not in dims]
        return (f"box {k} (coverage {b.coverage:.2f}, density {b.density:.2f})"
                + (f"; also restricts {', '.join(off)} (not drawn)" if off else ""))

    if len(dims) == 1:
        g = pd.DataFrame({"x": inputs[dims[0]], "h": holds}).groupby("x")["h"].mean()
        ax.plot(g.index, g.values, "o-")
        ax.set(xlabel=_label(dims[0]), ylabel="share of cases where the condition holds")
        lo, hi = float(inputs[dims[0]].min()), float(inputs[dims[0]].max())
        for k, b in enumerate(boxes, 1):
            x0, x1 = b.limits.get(dims[0], (lo, hi))
            ax.axvspan(x0, x1, color=f"C{k}", alpha=0.25, label=label(k, b))
        if boxes:
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), fontsize=8)
    else:
        g = pd.DataFrame({"x": inputs[dims[0]], "y": inputs[dims[1]], "h": holds})
        share = g.groupby(["y", "x"])["h"].mean().unstack("x")
        xs, ys = share.columns.to_numpy(float), share.index.to_numpy(float)
        m = ax.pcolormesh(xs, ys, share.to_numpy(float), shading="nearest", cmap="Blues",
                          vmin=0, vmax=1)
        fig.colorbar(m, ax=ax, label="share of cases where the condition holds")
        gx, gy = np.meshgrid(xs, ys)
        ax.plot(gx.ravel(), gy.ravel(), ".", color="0.4", ms=2, label="_cases")
        # an unrestricted input: the box spans the grid (the cells' outer edges)
        hx, hy = (np.diff(v).min() / 2 if len(v) > 1 else 0 for v in (xs, ys))
        full = {dims[0]: (xs.min() - hx, xs.max() + hx), dims[1]: (ys.min() - hy, ys.max() + hy)}
        for k, b in enumerate(boxes, 1):
            (x0, x1), (y0, y1) = (b.limits.get(d, full[d]) for d in dims)
            ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, ec=f"C{k + 2}",
                                   lw=2, ls="-" if k == 1 else "--", label=label(k, b)))
        if boxes:
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), fontsize=8)
        ax.set(xlabel=_label(dims[0]), ylabel=_label(dims[1]))
    fig.tight_layout()
    return fig, dims


def plot_box(inputs, holds, boxes: list, paths: list, path, option: str = "--out") -> Path:
    """``discover.png``: :func:`draw_boxes`, saved under the output policy."""
    import matplotlib.pyplot as plt

    from antiamp.outputs_policy import save_figure

    fig, _ = draw_boxes(inputs, holds, boxes, paths)
    path = Path(path)
    # recorded in its folder's marker, so that only a figure antiamp wrote is replaced
    save_figure(fig, path, option=option, marked=True, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def discover(store, where: str, threshold: float = 0.8, n_boxes: int = 1,
             allow_incomplete: bool = False):
    """``(boxes, inputs, holds, paths)`` of a store and a condition."""
    from .check import open_for_reading

    if not 0 < threshold <= 1:
        raise DiscoverError(f"--threshold must lie in (0, 1], got {threshold}")
    if n_boxes < 1:
        raise DiscoverError(f"--boxes must be an integer >= 1, got {n_boxes}")
    ds = open_for_reading(store, DiscoverError, command="antiamp-discover",
                          allow_incomplete=allow_incomplete)
    inputs, variables, paths = cases(ds)
    holds = condition(variables, where)
    return find_boxes(inputs, holds, threshold, n_boxes), inputs, holds, paths


@interruptible("antiamp-discover")
@one_writer  # (the --out lock is let go however the command ends)
def main(argv=None) -> None:
    ap = Parser(prog="antiamp-discover", description=__doc__.splitlines()[0])
    ap.add_argument("--version", action="version", version=f"%(prog)s (antiamp {__version__})")
    ap.add_argument("store", help="a sweep.zarr (or merged) store")
    ap.add_argument("--where", required=True,
                    help="a condition over the store's variables, e.g. 'amp_gap < 0' or "
                         "'amp_debate > amp_consult'")
    ap.add_argument("--threshold", type=float, default=0.8,
                    help="the least density of a reported box, in (0, 1]; default 0.8")
    ap.add_argument("--boxes", type=int, default=1, help="boxes to find, one after another")
    ap.add_argument("--out", default=None,
                    help="directory of the figure discover.png (default: beside the store)")
    ap.add_argument("--allow-incomplete", action="store_true",
                    help="use a store whose sweep has not finished")
    args = ap.parse_args(argv)
    from antiamp.outputs_policy import OutputError, check_file

    option = "--out" if args.out else ("antiamp-discover (without --out, beside the store; "
                                       "give --out NEW to write elsewhere)")
    try:
        out = Path(args.out) if args.out else Path(args.store).parent
        if out.exists() and not out.is_dir():
            raise DiscoverError(f"--out: {out} exists and is not a directory")
        try:  # never replaces a discover.png antiamp did not write
            check_file(out / "discover.png", option=option)
        except OutputError as exc:
            raise DiscoverError(str(exc)) from None
        boxes, inputs, holds, paths = discover(args.store, args.where, args.threshold,
                                               args.boxes, args.allow_incomplete)
        from antiamp.outputs_policy import lock_output

        try:  # one writer per folder of figures, as sweeps hold their store's
            lock_output(out, "antiamp-discover", option="--out")
        except OutputError as exc:
            raise DiscoverError(str(exc)) from None
    except DiscoverError as exc:
        print(f"antiamp-discover: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    print(format_boxes(boxes, args.where, int(holds.sum()), len(holds)))
    out.mkdir(parents=True, exist_ok=True)
    try:
        path = plot_box(inputs, holds, boxes, paths,
                        out / "discover.png", option)
    except OutputError as exc:  # made meanwhile by someone else
        print(f"antiamp-discover: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
