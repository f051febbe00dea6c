"""Figures of a sweep store: lines for one axis, heatmaps for two, facets beyond.

The closed form is overlaid wherever the store has ``<name>_exact`` (a store of
the former names, ``<name>_theory``, is read under the current ones): dashed
curves on line plots; on heatmaps labelled contour lines where both axes are
numeric with at least ``MIN_CONTOUR_POINTS`` values on a map of more than
``MAX_ANNOTATED_CELLS`` cells (for ``welfare_diff`` its zero contour is the seed's
threshold beta = alpha (2p - 1) / (1 - p)); on a smaller map the value printed in
each cell.

The rules the figures keep (each checked in tests/test_figures.py): each grid
point is one cell of one colour (nothing interpolated, so a coarse grid looks
coarse); a categorical axis (``judge.kind`` in a merged store) is a facet or a row
of cells, never interpolated across; a field that does not change a panel (``mu``
for a tie-break judge) gets one panel, "any", not a facet per value; a design's
points are drawn against each swept field, unjoined; contour labels that would be
cut at a panel's edge are left out; a store plotted with ``--allow-incomplete`` says
"INCOMPLETE" in its title.

Why these heatmaps are drawn with matplotlib directly rather than xarray's
``DataArray.plot(col=...)`` facet grids (used where they serve, as in the colmad
region figure): one colour scale shared across facets with a diverging map only
where the closed form changes sign, the closed form on every facet, and facets
merged or left out when constant need per-axes control that the facet grid's
``map_dataarray`` does not give in one call.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from antiamp._version import __version__
from antiamp.cmdline import Parser, interruptible
from antiamp.outputs_policy import add_out_options, one_writer
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


def sweep_figures(model, ds, store, out_dir, plot_vars=None) -> list:
    """The figures of a sweep's finished store, as its model declares them; the paths.

    A model with fused grids (:class:`antiamp.registry.FusedGrid`: its store is laid
    out as its variables' maps) gets a figure of each variable (:func:`plot_store`,
    named after a store not of the default name); any other its own
    (``Model.figures``; a design's points against each field), or none.
    """
    out_dir, stem = Path(out_dir), Path(store).stem
    if model.fused_grid is not None:
        from .spec import SweepSpec

        # A store not of the default name (sweep.store=a.zarr) gets figures of its own
        # name, so that two such stores in one run directory keep their own figures.
        own = stem != Path(SweepSpec.store).stem
        return plot_store(store, plot_vars or None, out_dir=out_dir, run_dir=True,
                          prefix=f"{stem}-" if own else "")
    if model.figures is None:
        return []
    ds = ds.load()
    if "point" in ds.dims:  # a design: its points against each field, never joined
        from antiamp.plotting import design_figure

        return design_figure(ds, out_dir / stem, plot_vars or list(model.plot_vars),
                             f"antiamp-sweep model={model.name}")
    return model.figures(ds, out_dir / stem)


def plot_store(store, variables=None, out_dir=None, formats=("png", "pdf"),
               allow_incomplete: bool = False, force: bool = False,
               run_dir: bool = False, prefix: str = "") -> list:
    """Write one figure per variable; return the paths written.  A store whose sweep
    has not finished is refused unless ``allow_incomplete`` (its unfinished cells
    would be drawn as missing or as zero counts).  ``out_dir`` is written under the
    output policy (sim/outputs_policy.py: a new directory, an empty one or one
    antiamp made; ``force``: any directory, overwriting only antiamp's files).
    ``run_dir``: ``out_dir`` is the run directory of antiamp's own command (as the
    default, beside the store: only links are refused).  ``prefix`` starts every
    figure's name (``<prefix><variable>.<format>``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .check import open_for_reading

    supported = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    for f in formats:
        if f not in supported:
            raise PlotError(f"--formats: {f!r} is not a figure format; choose from "
                            f"{', '.join(sorted(supported))}")
    # (a sweep's own store, just verified, is drawn as it is)
    ds = open_for_reading(store, PlotError, command="antiamp-plot",
                          allow_incomplete=allow_incomplete, verify=not run_dir,
                          incomplete=IncompleteStore)
    variables = list(variables or [v for v in DEFAULT_VARS if v in ds])
    for v in variables:
        if v not in ds:
            have = [k for k in ds.data_vars if not k.endswith(("_se", "_exact"))]
            raise PlotError(f"--vars: {store} has no variable {v!r}; it has {', '.join(have)}")
    from antiamp.outputs_policy import (OutputError, check_file, check_out_dir, open_out_dir,
                                        record, refuse_link)

    names = [f"{prefix}{v}.{fmt}" for v in variables for fmt in formats]
    beside = not run_dir and not out_dir  # the default: the store's own folder
    try:
        out_dir = Path(out_dir) if out_dir else Path(store).parent
        if run_dir:  # the sweep's own run directory: links are never followed
            for n in names:
                refuse_link(out_dir / n)
        elif beside:  # someone's folder, perhaps: only files antiamp wrote are replaced
            for n in names:
                check_file(out_dir / n, option="antiamp-plot (without --out, beside the "
                           "store; give --out NEW to write elsewhere)")
        else:
            check_out_dir(out_dir, names, force=force)
    except OutputError as exc:
        raise PlotError(str(exc)) from None
    if not run_dir:  # one writer per folder of figures, as sweeps hold their store's
        from antiamp.outputs_policy import lock_output

        try:
            lock_output(out_dir, "antiamp-plot")
        except OutputError as exc:
            raise PlotError(str(exc)) from None
    if run_dir:
        out_dir.mkdir(parents=True, exist_ok=True)
    elif not beside:
        open_out_dir(out_dir, names, force=force)
    from antiamp.plotting import note_coinciding, rasterize_big

    written = []
    for v in variables:
        da = ds[v].load()
        se = ds[f"{v}_se"].load() if f"{v}_se" in ds else None
        th = ds[f"{v}_exact"].load() if f"{v}_exact" in ds else None
        axes = [d for d in da.dims if d != "protocol"]
        if "point" in da.dims:
            fig = _design(ds, da, th, plt)
        elif len(axes) == 1:
            fig = _lines(ds, da, se, th, axes[0], plt)
        else:
            fig = _heatmaps(ds, da, th, axes, plt)
        n = ds.attrs.get("n_instances")
        n = f"{n:,}" if isinstance(n, (int, np.integer)) else "?"  # a model grid has none
        fig.suptitle(f"{_incomplete(ds)}{ds.attrs.get('title', '')}\n{_label(da)}; n = "
                     f"{n} per cell, seed {ds.attrs.get('seed')}",
                     fontsize=9, y=1.04)
        note_coinciding(fig)  # a curve hidden under another is said in the title
        rasterize_big(fig)
        for fmt in formats:
            p = out_dir / f"{prefix}{v}.{fmt}"
            from antiamp.outputs_policy import save_figure

            if run_dir:  # recorded, so that antiamp-plot may redraw it later
                record(p)
            save_figure(fig, p, option="--out", marked=not run_dir, dpi=120,
                        bbox_inches="tight")
            written.append(p)
        plt.close(fig)
    return written


def _incomplete(ds) -> str:
    """The title's first words for a store whose sweep has not finished."""
    from antiamp.output import store_complete

    if store_complete(ds.attrs):
        return ""
    if "cell_done" in ds:
        done = np.asarray(ds["cell_done"].values)
        return f"INCOMPLETE ({int(done.sum()):,} of {done.size:,} cells done; the rest blank): "
    return "INCOMPLETE (its sweep has not finished; unfinished cells blank): "


def _lines(ds, da, se, th, x, plt):
    fig, ax = plt.subplots(figsize=(6, 4))
    xs, ticks = _positions(ds, x)
    # points of a categorical axis are not joined: nothing lies between them
    style = "o-" if ticks is None else "o"
    prots = list(da.protocol.values) if "protocol" in da.dims else [None]
    for prot in prots:
        sel = (lambda a: a.sel(protocol=prot)) if prot is not None else (lambda a: a)
        y = sel(da).values
        color = COLORS.get(str(prot), "#1f78b4")
        ax.plot(xs, y, style, ms=3, color=color, label=f"{prot or da.name} (simulated)")
        if se is not None:
            s = np.nan_to_num(sel(se).values)
            if ticks is None:
                ax.fill_between(xs, y - 1.96 * s, y + 1.96 * s, color=color, alpha=0.25, lw=0)
            else:
                ax.errorbar(xs, y, yerr=1.96 * s, fmt="none", color=color, capsize=2)
        if th is not None:
            ax.plot(xs, sel(th).values, "--" if ticks is None else "D", color="black", lw=1,
                    mfc="none", ms=5, label="closed form" if prot == prots[0] else None)
    ax.set_xlabel(_coord_label(ds, x))
    from antiamp.plotting import integer_ticks

    if ticks is not None:
        ax.set_xticks(xs, ticks)
    else:
        integer_ticks(ax, xs)
    ax.set_ylabel(_label(da))
    # loc named: matplotlib warns 'Creating legend with loc="best" can be slow' when
    # the default placement takes over a second (a Saltelli sweep's many points on a
    # busy machine); the same placement asked for by name says nothing
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3)
    return fig


#: Most cells of a heatmap panel that get the closed form printed in them (contours
#: through so few points would be polylines that only look like level sets).
MAX_ANNOTATED_CELLS = 64
#: Fewest grid points on each axis of a larger map for the closed form's contours.
MIN_CONTOUR_POINTS = 5
#: Most facet panels of one figure; further facet dimensions are shown at their first value.
MAX_PANELS = 16


def _numeric(ds, d) -> bool:
    return ds[d].dtype.kind in "iuf"


def _positions(ds, d):
    """(positions, tick labels or None) of a heatmap axis: a categorical axis sits at
    0, 1, ... with its values as tick labels."""
    v = ds[d].values
    if _numeric(ds, d):
        return v.astype(float), None
    return np.arange(len(v), dtype=float), [str(x) for x in v]


def _same(a, b) -> bool:
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


def _panels(ds, da, th, facet_dims):
    """The facet panels (dicts of facet coordinates; a coordinate of None: any value,
    the panels along it being the same), and notes on what was merged or fixed."""
    import itertools

    notes, fixed = [], {}
    dims = list(facet_dims)
    while dims and math.prod(da.sizes[d] for d in dims) > MAX_PANELS:
        d = dims.pop()
        fixed[d] = da[d].values[0]
    panels = [dict(zip(dims, vals)) for vals in itertools.product(*(da[d].values for d in dims))]

    def arrays(sel):
        sel = {k: (da[k].values[0] if v is None else v) for k, v in sel.items()}
        out = [da.sel(sel).values]
        if th is not None:
            out.append(th.sel(sel).values)
        return out

    # A field the rest of a panel's coordinates make irrelevant (mu for a tie-break
    # judge, b for a logit one) repeats the same panel along it: one panel, "any".
    for d in dims:
        if d == "protocol":
            continue
        groups: dict = {}
        for p in panels:
            groups.setdefault(tuple((k, repr(v)) for k, v in p.items() if k != d), []).append(p)
        merged = []
        for key, ps in groups.items():
            ref = arrays(ps[0])
            if len(ps) > 1 and all(all(_same(a, b) for a, b in zip(ref, arrays(p)))
                                   for p in ps[1:]):
                merged.append({**ps[0], d: None})
                where = ", ".join(f"{_sym(ds, k)} = {_fmt(v)}" for k, v in ps[0].items()
                                  if k not in (d, "protocol") and v is not None)
                note = (f"{_sym(ds, d)} does not change the values"
                        + (f" at {where}" if where else "") + ": one panel for all its values")
                if note not in notes:
                    notes.append(note)
            else:
                merged.extend(ps)
        panels = merged
    return panels, fixed, notes


def _panel_title(ds, sel) -> str:
    import textwrap

    parts = [f"{_sym(ds, d)} = {'any' if v is None else _fmt(v)}".replace(" ", "\x01")
             for d, v in sel.items()]
    return "\n".join(w.replace("\x01", " ") for w in textwrap.wrap(", ".join(parts), 34))


def _keep_labels_inside(fig, labelled) -> None:
    """Remove contour labels that would be cut at an edge of their panel (the
    labels of the other contours stay)."""
    renderer = fig.canvas.get_renderer()
    for ax, cs in labelled:
        box = ax.get_window_extent(renderer)
        for t in list(cs.labelTexts):
            e = t.get_window_extent(renderer)
            if e.x0 < box.x0 or e.x1 > box.x1 or e.y0 < box.y0 or e.y1 > box.y1:
                t.remove()
                cs.labelTexts.remove(t)


def _lines_of(parts, width: int) -> str:
    """``parts`` joined by "; " into lines of at most ``width`` characters, never
    breaking a part (a part longer than a line gets a line of its own)."""
    lines = [""]
    for p in parts:
        if lines[-1] and len(lines[-1]) + 2 + len(p) > width:
            lines[-1] += ";"
            lines.append(p)
        else:
            lines[-1] = f"{lines[-1]}; {p}" if lines[-1] else p
    return "\n".join(lines)


def _heatmaps(ds, da, th, axes, plt):
    from antiamp.plotting import cell_map

    # The map's axes are numeric fields where there are two (a categorical one, such as
    # judge.kind in a merged store, becomes a facet: nothing is interpolated across it).
    num = [d for d in axes if _numeric(ds, d) and ds.sizes[d] > 1]
    order = num + [d for d in axes if d not in num]
    y, x = order[0], order[1]
    facet_dims = (["protocol"] if "protocol" in da.dims else []) + [d for d in axes
                                                                   if d not in (x, y)]
    panels, fixed, notes = _panels(ds, da, th, facet_dims)
    da = da.sel(fixed) if fixed else da
    th = th.sel(fixed) if (th is not None and fixed) else th

    def sel_of(p):  # "any" value: the first (the panels along it are the same)
        return {k: (da[k].values[0] if v is None else v) for k, v in p.items()}

    # A facet constant over the whole grid says nothing a panel of one colour would
    # (consultancy's Amp over jury size and b, say): named in the note instead,
    # where some other facet varies.
    constant = []
    if len(panels) > 1:
        def flat(p):
            v = da.sel(sel_of(p)).values
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
    xs, xlab = _positions(ds, x)
    ys, ylab = _positions(ds, y)
    # Each grid point is one cell of one colour (nothing interpolated between points,
    # so the grid's coarseness shows). The closed form: its value printed in each cell
    # of a small grid, else contours where both axes are numeric and fine enough.
    printed = len(xs) * len(ys) <= MAX_ANNOTATED_CELLS
    contours = (not printed and xlab is None and ylab is None
                and min(len(xs), len(ys)) >= MIN_CONTOUR_POINTS)
    mesh, labelled, zero_line = None, [], False
    for k, ax in enumerate(axs.flat):
        if k >= len(panels):
            ax.set_visible(False)
            continue
        sel = sel_of(panels[k])
        a = da.sel(sel).transpose(y, x)
        title = _panel_title(ds, panels[k])
        if np.isnan(a.values).all():
            ax.text(0.5, 0.5, "undefined here\n(no instance in the\nconditioning event)",
                    ha="center", va="center", fontsize=8, transform=ax.transAxes, color="0.4")
            ax.set_title(title, fontsize=8)
            continue
        if np.nanmax(a.values) == np.nanmin(a.values):
            title += f" (constant {_fmt(float(np.nanmax(a.values)))})"
        else:  # columns (or rows) of one value each: the axis changes nothing here
            title += "".join(f" (the same at every {_sym(ds, d)})" for d, axis in ((x, 1), (y, 0))
                             if a.sizes[d] > 1 and np.allclose(
                                 a.values, np.take(a.values, [0], axis=axis), rtol=1e-12,
                                 atol=0, equal_nan=True))
        mesh = cell_map(ax, xs, ys, a.values, vmin=vmin, vmax=vmax, cmap=cmap)
        if th is not None:
            t = th.sel(sel).transpose(y, x).values
            if contours and np.nanmax(t) > np.nanmin(t):
                cs = ax.contour(xs, ys, t, levels=7, colors="black", linewidths=0.7,
                                linestyles="--")
                ax.clabel(cs, fontsize=6)
                labelled.append((ax, cs))
                if np.nanmin(t) < 0 < np.nanmax(t):  # the sign change: where debate wins
                    ax.contour(xs, ys, t, levels=[0.0], colors="black", linewidths=2.0)
                    zero_line = True
            elif printed:
                for i, yy in enumerate(ys):
                    for j, xx in enumerate(xs):
                        if np.isfinite(t[i, j]):
                            ax.text(xx, yy, f"{t[i, j]:.3g}", ha="center", va="center",
                                    fontsize=6, color="black",
                                    bbox={"boxstyle": "round,pad=0.15", "fc": "white",
                                          "ec": "none", "alpha": 0.7})
        ax.set_title(title, fontsize=8)
        # ticks at the grid's values where there are few (a cell is centred on its value)
        if xlab is not None or len(xs) <= 8:
            ax.set_xticks(xs, xlab or [_fmt(v) for v in ds[x].values])
        if ylab is not None or len(ys) <= 8:
            ax.set_yticks(ys, ylab or [_fmt(v) for v in ds[y].values])
        if k // ncol == nrow - 1 or k + ncol >= len(panels):
            ax.set_xlabel(_coord_label(ds, x), fontsize=8)
        if k % ncol == 0:
            ax.set_ylabel(_coord_label(ds, y), fontsize=8)
    if mesh is not None:
        fig.colorbar(mesh, ax=axs, label=_label(da), shrink=0.9)
    note = "colour: simulated, one cell per grid point"
    if th is not None:
        note += ("; dashed contours: closed form" if contours else
                 "; numbers: closed form in each cell"
                 if printed else "; closed form not drawn (too many cells to label, too "
                 "few points or a categorical axis for contours)")
    if zero_line:
        note += "; thick line: closed form = 0"
    if fixed:
        note += "; shown at " + ", ".join(f"{_sym(ds, d)} = {_fmt(v)}" for d, v in fixed.items())
    for n in notes:
        note += "; " + n
    for p in constant:
        note += "; not shown: " + _panel_title(ds, p) \
            + f" (constant {_fmt(float(np.nanmax(da.sel(sel_of(p)).values)))} over the grid)"
    fig.text(0.5, -0.02 if nrow == 1 else 0.0, _lines_of(note.split("; "), 40 * ncol + 60),
             fontsize=7, ha="center", va="top")
    _keep_labels_inside(fig, labelled)
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
    # below the panels: matplotlib's "best" place is searched point by point (slow, and
    # it warns so, over a design's thousands of points)
    fig.legend(*axs[0][0].get_legend_handles_labels(), loc="upper center",
               bbox_to_anchor=(0.5, 0.0), ncols=len(prots) + (th is not None), fontsize=7,
               frameon=False)
    return fig


def _sym(ds, d) -> str:
    return ds[d].attrs.get("symbol", d) if d in ds.coords else d


def _fmt(v):
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.3g}"
    return str(v)


@interruptible("antiamp-plot")
@one_writer  # (the --out lock is let go however the command ends)
def main(argv=None) -> None:
    ap = Parser(prog="antiamp-plot", description="Figures of a sweep store.")
    ap.add_argument("--version", action="version", version=f"%(prog)s (antiamp {__version__})")
    ap.add_argument("store", help="a sweep.zarr (or merged) store")
    ap.add_argument("--vars", nargs="+", default=None,
                    help=f"variables to plot (default: {' '.join(DEFAULT_VARS)})")
    add_out_options(ap, "beside the store")
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
