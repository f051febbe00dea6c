"""Figures of a sweep store: lines for one axis, heatmaps for two, facets beyond.

The closed form is overlaid wherever the store has ``<name>_theory``: dashed
curves on line plots, labelled contour lines on heatmaps (for ``welfare_diff``
its zero contour is the seed's threshold beta = alpha (2p - 1) / (1 - p)).

Why these heatmaps are drawn with matplotlib directly rather than xarray's
``DataArray.plot(col=...)`` facet grids (used where they serve, as in the colmad
region figure): xarray's pcolormesh infers cell edges around the grid points, so
on a coarse grid the colours fill cells stretched to the axis limits while the
closed-form contours, drawn through the points, end at the outermost points: the
two disagree (issue seen on a 3 x 3 sweep).  Gouraud shading through the points,
one colour scale shared across facets with a diverging map only where the closed
form changes sign, the closed form's contours and zero line on every facet, and
facets left out when constant need per-axes control that the facet grid's
``map_dataarray`` does not give in one call.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from antiamp._version import __version__
from antiamp.cmdline import interruptible
from antiamp.lazy import lazy
xr = lazy("xarray")

DEFAULT_VARS = ("amp", "amp_gap", "acc_gap", "welfare_diff")
COLORS = {"consult": "#d95f02", "debate": "#1b9e77"}


def _label(da: xr.DataArray) -> str:
    ln = da.attrs.get("long_name", da.name)
    u = da.attrs.get("units", "")
    return f"{ln} [{u}]" if u and u != "1" else ln


def _coord_label(ds, dim) -> str:
    c = ds[dim]
    return c.attrs.get("long_name", dim)


class PlotError(ValueError):
    """A store, variable, format or output directory that cannot be plotted."""


class IncompleteStore(PlotError):
    """A store whose sweep has not finished (its ``complete`` flag is not set)."""


def plot_store(store, variables=None, out_dir=None, formats=("png", "pdf"),
               allow_incomplete: bool = False, force: bool = False,
               run_dir: bool = False) -> list:
    """Write one figure per variable; return the paths written.  A store whose sweep
    has not finished is refused unless ``allow_incomplete`` (its unfinished cells
    would be drawn as missing or as zero counts).  ``out_dir`` is written under the
    output policy (sim/outputs_policy.py: a new directory, an empty one or one
    antiamp made; ``force``: any directory, overwriting only antiamp's files).
    ``run_dir``: ``out_dir`` is the run directory of antiamp's own command (as the
    default, beside the store: only links are refused)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from antiamp.output import is_antiamp_store

    if not Path(store).exists():
        raise PlotError(f"no store at {store}")
    if not is_antiamp_store(store):
        raise PlotError(f"{store} is not an antiamp store (a sweep.zarr or a merged store)")
    supported = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    for f in formats:
        if f not in supported:
            raise PlotError(f"--formats: {f!r} is not a figure format; choose from "
                            f"{', '.join(sorted(supported))}")
    ds = xr.open_zarr(store, chunks=None)  # a figure reads each variable it draws whole
    if not allow_incomplete and not ds.attrs.get("complete"):
        raise IncompleteStore(f"{store} is not complete (its sweep was interrupted); rerun the "
                              "sweep to finish it, or pass --allow-incomplete")
    variables = list(variables or [v for v in DEFAULT_VARS if v in ds])
    for v in variables:
        if v not in ds:
            raise PlotError(f"--vars: {store} has no variable {v!r}; it has "
                            f"{', '.join(k for k in ds.data_vars if not k.endswith(('_se', '_theory')))}")
    from antiamp.outputs_policy import OutputError, check_out_dir, open_out_dir, refuse_link

    names = [f"{v}.{fmt}" for v in variables for fmt in formats]
    try:
        own = run_dir or not out_dir
        out_dir = Path(out_dir) if out_dir else Path(store).parent
        if not own:
            check_out_dir(out_dir, names, force=force)
        else:  # the sweep's own directory: links are never followed
            for n in names:
                refuse_link(out_dir / n)
    except OutputError as exc:
        raise PlotError(str(exc)) from None
    if own:
        out_dir.mkdir(parents=True, exist_ok=True)
    else:
        open_out_dir(out_dir, names, force=force)
    from antiamp.plotting import rasterize_big

    written = []
    for v in variables:
        da = ds[v].load()
        se = ds[f"{v}_se"].load() if f"{v}_se" in ds else None
        th = ds[f"{v}_theory"].load() if f"{v}_theory" in ds else None
        axes = [d for d in da.dims if d != "protocol"]
        if "point" in da.dims:
            fig = _design(ds, da, th, plt)
        elif len(axes) == 1:
            fig = _lines(ds, da, se, th, axes[0], plt)
        else:
            fig = _heatmaps(ds, da, th, axes, plt)
        n = ds.attrs.get("n_instances")
        n = f"{n:,}" if isinstance(n, (int, np.integer)) else "?"  # a model grid has none
        fig.suptitle(f"{ds.attrs.get('title', '')}\n{_label(da)}; n = "
                     f"{n} per cell, seed {ds.attrs.get('seed')}",
                     fontsize=9, y=1.04)
        rasterize_big(fig)
        for fmt in formats:
            p = out_dir / f"{v}.{fmt}"
            from antiamp.outputs_policy import save_figure

            save_figure(fig, p, option="--out", dpi=120, bbox_inches="tight")
            written.append(p)
        plt.close(fig)
    return written


def _lines(ds, da, se, th, x, plt):
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = ds[x].values
    prots = list(da.protocol.values) if "protocol" in da.dims else [None]
    for prot in prots:
        sel = (lambda a: a.sel(protocol=prot)) if prot is not None else (lambda a: a)
        y = sel(da).values
        color = COLORS.get(str(prot), "#1f78b4")
        ax.plot(xs, y, "o-", ms=3, color=color, label=f"{prot or da.name} (simulated)")
        if se is not None:
            s = np.nan_to_num(sel(se).values)
            ax.fill_between(xs, y - 1.96 * s, y + 1.96 * s, color=color, alpha=0.25, lw=0)
        if th is not None:
            ax.plot(xs, sel(th).values, "--", color="black", lw=1,
                    label="closed form" if prot == prots[0] else None)
    ax.set_xlabel(_coord_label(ds, x))
    from antiamp.plotting import integer_ticks

    integer_ticks(ax, xs)
    ax.set_ylabel(_label(da))
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def _heatmaps(ds, da, th, axes, plt):
    x, y = axes[1], axes[0]
    facet_dims = (["protocol"] if "protocol" in da.dims else []) + axes[2:]
    fixed = {}
    if len(facet_dims) > 2:
        for d in facet_dims[2:]:
            fixed[d] = da[d].values[0]
        facet_dims = facet_dims[:2]
    da = da.sel(fixed) if fixed else da
    th = th.sel(fixed) if (th is not None and fixed) else th
    # Facets: every combination of the facet dimensions, wrapped four to a row.
    if len(facet_dims) == 2:
        cols, rows = list(da[facet_dims[0]].values), list(da[facet_dims[1]].values)
        panels = [{facet_dims[0]: c, facet_dims[1]: r} for r in rows for c in cols]
        ncol = len(cols)
    elif facet_dims:
        panels = [{facet_dims[0]: c} for c in da[facet_dims[0]].values]
        ncol = min(4, len(panels))
    else:
        panels, ncol = [{}], 1
    # A facet constant over the whole grid says nothing a panel of one colour would
    # (consultancy's Amp over jury size and b, say): named in the note instead,
    # where some other facet varies.
    constant = []
    if len(facet_dims) == 1 and len(panels) > 1:
        def flat(sel):
            v = da.sel(sel).values
            return not np.isnan(v).all() and np.nanmax(v) == np.nanmin(v)

        is_flat = [flat(p) for p in panels]
        if not all(is_flat):
            constant = [p for p, f in zip(panels, is_flat) if f]
            panels = [p for p, f in zip(panels, is_flat) if not f]
            ncol = min(4, len(panels))
    nrow = math.ceil(len(panels) / ncol)
    fig, axs = plt.subplots(nrow, ncol, figsize=(3.4 * ncol + 1.2, 2.9 * nrow + 0.8),
                            squeeze=False, sharex=True, sharey=True)
    vmin, vmax = float(np.nanmin(da.values)), float(np.nanmax(da.values))
    # A diverging map only for values that change sign: where the closed form exists,
    # it decides (simulated noise around a positive gap is not a sign change).
    signed = vmin < 0 < vmax and (th is None or float(np.nanmin(th.values)) < 0
                                  < float(np.nanmax(th.values)))
    if signed:
        m = max(-vmin, vmax)
        vmin, vmax, cmap = -m, m, "RdBu_r"
    else:
        cmap = "viridis"
    xs, ys = ds[x].values, ds[y].values
    # Colours interpolated between the cell centres (Gouraud), as the closed-form
    # contours are: both then cover the same square and agree where they meet;
    # discrete cells ("nearest") where a value is missing or an axis is not numeric.
    smooth = (xs.dtype.kind in "iuf" and ys.dtype.kind in "iuf" and len(xs) > 1 and len(ys) > 1
              and not np.isnan(da.values).any())
    mesh = None
    for k, ax in enumerate(axs.flat):
        if k >= len(panels):
            ax.set_visible(False)
            continue
        sel = panels[k]
        a = da.sel(sel).transpose(y, x)
        title = ", ".join(f"{_sym(ds, d)} = {_fmt(v)}" for d, v in sel.items())
        if np.isnan(a.values).all():
            ax.text(0.5, 0.5, "undefined here\n(no instance in the\nconditioning event)",
                    ha="center", va="center", fontsize=8, transform=ax.transAxes, color="0.4")
            ax.set_title(title, fontsize=8)
            continue
        if np.nanmax(a.values) == np.nanmin(a.values):
            title += f" (constant {_fmt(float(np.nanmax(a.values)))})"
        mesh = ax.pcolormesh(xs, ys, a.values, shading="gouraud" if smooth else "nearest",
                             vmin=vmin, vmax=vmax, cmap=cmap)
        if th is not None:
            t = th.sel(sel).transpose(y, x).values
            if np.nanmax(t) > np.nanmin(t) and min(t.shape) > 1:
                cs = ax.contour(ds[x].values, ds[y].values, t, levels=7, colors="black",
                                linewidths=0.7, linestyles="--")
                ax.clabel(cs, fontsize=6)
                if np.nanmin(t) < 0 < np.nanmax(t):  # the sign change: where debate wins
                    ax.contour(ds[x].values, ds[y].values, t, levels=[0.0], colors="black",
                               linewidths=2.0)
        ax.set_title(title, fontsize=8)
        if k // ncol == nrow - 1 or k + ncol >= len(panels):
            ax.set_xlabel(_coord_label(ds, x), fontsize=8)
        if k % ncol == 0:
            ax.set_ylabel(_coord_label(ds, y), fontsize=8)
    if mesh is not None:
        fig.colorbar(mesh, ax=axs, label=_label(da), shrink=0.9)
    note = ("colour: simulated" + (" (interpolated between grid points)" if smooth else "")
            + "; dashed contours: closed form")
    if th is not None and np.nanmin(th.values) < 0 < np.nanmax(th.values):
        note += "; thick line: closed form = 0"
    if fixed:
        note += "; shown at " + ", ".join(f"{d}={_fmt(v)}" for d, v in fixed.items())
    for sel in constant:
        note += "; not shown: " + ", ".join(f"{_sym(ds, d)} = {_fmt(v)}" for d, v in sel.items()) \
            + f" (constant {_fmt(float(np.nanmax(da.sel(sel).values)))} over the grid)"
    fig.text(0.5, -0.02 if nrow == 1 else 0.0, note, fontsize=7, ha="center", va="top")
    return fig


def _design(ds, da, th, plt):
    coords = [c for c in ds.coords if ds[c].dims == ("point",) and c != "point"]
    fig, axs = plt.subplots(1, len(coords), figsize=(4 * len(coords), 3.5), squeeze=False)
    for ax, c in zip(axs[0], coords):
        prots = list(da.protocol.values) if "protocol" in da.dims else [None]
        for prot in prots:
            a = da.sel(protocol=prot) if prot is not None else da
            # Closed forms as hollow rings under the simulated points, so that
            # both stay visible where they agree.
            if th is not None:
                t = th.sel(protocol=prot) if prot is not None else th
                ax.scatter(ds[c].values, t.values, s=30, marker="o", facecolors="none",
                           edgecolors="black", linewidths=0.6, zorder=2,
                           label="closed form" if prot == prots[0] else None)
            ax.scatter(ds[c].values, a.values, s=6, color=COLORS.get(str(prot), "#1f78b4"),
                       label=f"{prot or da.name} (simulated)", zorder=3)
        ax.set_xlabel(_coord_label(ds, c), fontsize=8)
        ax.set_ylabel(_label(da), fontsize=8)
    axs[0][0].legend(fontsize=7)
    return fig


def _sym(ds, d) -> str:
    return ds[d].attrs.get("symbol", d) if d in ds.coords else d


def _fmt(v):
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.3g}"
    return str(v)


@interruptible("antiamp-plot")
def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="antiamp-plot", description="Figures of a sweep store.")
    ap.add_argument("--version", action="version", version=f"%(prog)s (antiamp {__version__})")
    ap.add_argument("store", help="a sweep.zarr (or merged) store")
    ap.add_argument("--vars", nargs="+", default=None,
                    help=f"variables to plot (default: {' '.join(DEFAULT_VARS)})")
    ap.add_argument("--out", default=None, help="output directory (default: beside the "
                    "store): a new one, an empty one or one antiamp made")
    ap.add_argument("--force", action="store_true",
                    help="write into an existing --out directory antiamp did not make; "
                         "still overwrites only the files antiamp wrote there")
    ap.add_argument("--formats", nargs="+", default=["png", "pdf"])
    ap.add_argument("--allow-incomplete", action="store_true",
                    help="plot a store whose sweep has not finished")
    args = ap.parse_args(argv)
    try:
        paths = plot_store(args.store, args.vars, args.out, args.formats, args.allow_incomplete,
                           args.force)
    except PlotError as exc:
        print(f"antiamp-plot: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except OSError as exc:  # the machine's failure (a full disk), not a refusal
        from antiamp.output import describe_os_error

        print(f"antiamp-plot: error: {describe_os_error(exc)}", file=sys.stderr)
        raise SystemExit(1) from None
    for p in paths:
        print(f"wrote {p}")


if __name__ == "__main__":
    main()
