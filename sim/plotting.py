"""Figure and table helpers every model uses (no model imports, no command imports).

Figures are written as PNG and PDF; labels come from the coordinates'
``long_name`` attributes, and the fixed parameters of a figure are listed in its
title (``describe``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from .lazy import lazy
xr = lazy("xarray")

#: Dimensions that are not sweep axes.
NON_AXES = ("protocol", "equilibrium", "s_P", "s_A", "k", "s", "v", "stance", "t", "action",
            "e_P", "e_A", "transcript_class", "round", "quantile", "flag_rule", "audit_level",
            "claim_type", "band")


def fmt(v) -> str:
    return f"{v:.3g}" if isinstance(v, (int, float, np.integer, np.floating)) else str(v)


def axes_of(ds: xr.Dataset, var: str = "amp") -> list:
    """The sweep axes of a model's dataset (the dimensions of ``var`` that are not layout)."""
    return [d for d in ds[var].dims if d not in NON_AXES and d != "cell"]


#: Width of a figure in pixels at ``save``'s resolution: fits a README column or a page.
FIGURE_PX = 1200
DPI = 120


def panel_grid(n: int, height: float = 3.0, max_cols: int = 3):
    """A figure of ``n`` panels in a grid of at most ``max_cols`` columns, about
    :data:`FIGURE_PX` wide, with constrained layout (room for a legend outside the
    data).  Returns (figure, list of the n axes); unused cells are removed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = 2 if n == 4 else min(n, max_cols)
    rows = -(-n // cols)
    width = FIGURE_PX / DPI * (0.55 + 0.45 * min(cols / max_cols, 1.0))
    fig, axs = plt.subplots(rows, cols, figsize=(width, height * rows + 0.9), squeeze=False,
                            layout="constrained")
    flat = list(axs.ravel())
    for ax in flat[n:]:
        ax.remove()
    for ax in flat[:n]:
        ax.tick_params(labelsize=8)
    return fig, flat[:n]


def integer_ticks(ax, values, axis: str = "x") -> None:
    """Whole-number ticks on an axis whose values are integers (K, a jury size, B)."""
    from matplotlib.ticker import MaxNLocator

    v = np.asarray(values)
    if v.dtype.kind in "iu" or (v.dtype.kind == "f" and np.all(np.isfinite(v))
                                 and np.all(v == np.round(v))):
        getattr(ax, f"{axis}axis").set_major_locator(MaxNLocator(integer=True))


def shared_legend(fig, colours: list, styles: list, title: str | None = None) -> None:
    """One legend for the whole figure, below the panels: ``colours`` are (label,
    colour) of the hues, ``styles`` (label, line style) of the protocols, drawn in
    grey so that no colour is tied to a protocol.  ``title`` defines the symbol the
    hue labels use ("cross-examination strength x")."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=c, marker="o", ms=4, lw=1.5, label=lab)
               for lab, c in colours if lab]
    handles += [Line2D([], [], color="0.35", ls=ls, marker=mk or None, ms=3, lw=1.2, label=lab)
                for lab, ls, mk in styles]
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 6),
                   fontsize=8, frameon=False, title=title, title_fontsize=8)


def glossary(ds, fields) -> str:
    """"symbol: meaning" of the (section, key) ``fields`` a figure's title names with
    their symbols (``describe``), so that the figure defines every symbol it uses."""
    import yaml

    from .fields import declared, symbol

    cfg = yaml.safe_load(ds.attrs["config"])
    swept = {ds[d].attrs.get("config_path") for d in list(axes_of(ds)) + list(ds.coords)}
    out = []
    for s, k in fields:
        path = f"{s}.{k}"
        if path in swept or s not in cfg or cfg[s].get(k) is None:
            continue
        meaning = declared(path).get("meaning")
        sym = symbol(path)
        if meaning and sym != meaning:
            out.append(f"{sym}: {meaning}")
    return "; ".join(dict.fromkeys(out))


def line_figure(ds: xr.Dataset, path: Path, panels: list, title: str, fields=(), extra=None) -> list:
    """Lines against the first sweep axis, one colour per value of the second (up to 6).

    ``fields``: (section, key) pairs of fixed parameters named in the title (their
    symbols are defined below the legend).  ``panels``: (title, series) with series
    (variable, protocol or None, line style[, legend label]); a line style means one
    thing in the whole figure: the protocol, or the series' own label where given
    (the first use of a style names it).  ``extra(axes, x)`` may add reference
    lines.  Further axes are shown at their first value.  A curve drawn exactly under
    another of the same panel (two hues with the same values) is named in a note.
    """
    import matplotlib.pyplot as plt

    dims = axes_of(ds)
    if not dims:
        return []
    if dims == ["point"]:  # a design: its points have no order to draw lines along
        return design_figure(ds, path, [s[0] for _, series in panels for s in series],
                             title, fields)
    x = dims[0]
    sub = ds.isel({d: 0 for d in dims[2:]}) if len(dims) > 2 else ds
    hue = dims[1] if len(dims) > 1 else None
    hues = [None] if hue is None else list(range(ds.sizes[hue]))[:6]
    fig, axs = panel_grid(len(panels))
    cmap = plt.get_cmap("viridis")
    xv = ds[x].values
    xpos = np.arange(len(xv)) if xv.dtype.kind in "US" else xv
    colours, styles, drawn = [], {}, {}
    for kk, h in enumerate(hues):
        d = sub if h is None else sub.isel({hue: h})
        col = "C0" if h is None else cmap(kk / max(1, len(hues) - 1))
        colours.append(("" if h is None else f"{axis_symbol(ds, hue)} = {fmt(ds[hue].values[h])}",
                        col))
        for k, (ax, (_, series)) in enumerate(zip(axs, panels)):
            for var, prot, style, *lab in series:
                da = d[var] if prot is None else d[var].sel(protocol=prot)
                ax.plot(xpos, da.values, style, ms=3, color=col)
                drawn.setdefault((k, var, prot), []).append((h, np.asarray(da.values, float)))
                name = lab[0] if lab else prot
                if name:
                    ls = "--" if "--" in style else ":" if ":" in style else "-"
                    styles.setdefault(ls, (name, ls, "o" if "o" in style else None))
    for ax, (t, series) in zip(axs, panels):
        ax.set_title(t, fontsize=9)
        ax.set_xlabel(axis_label(ds, x), fontsize=8)
        if xv.dtype.kind in "US":
            ax.set_xticks(xpos, xv)
        else:
            integer_ticks(ax, xv)
        if any(s[0] in ("amp_gap", "t_gap", "diversity_value") for s in series):
            ax.axhline(0, color="0.6", lw=0.8)
    if extra is not None:
        extra(axs, x)
    shared_legend(fig, colours if hue is not None else [], list(styles.values()),
                  axis_label(ds, hue) if hue is not None else None)
    note = ("; shown at " + ", ".join(f"{d} = {fmt(ds[d].values[0])}" for d in dims[2:])
            if len(dims) > 2 else "")
    hidden = _hidden_curves(ds, hue, panels, drawn)
    foot = "; ".join(x for x in (glossary(ds, fields), hidden) if x)
    fig.suptitle(f"{title}: {describe(ds, fields)}{note}" + (f"\n({foot})" if foot else ""),
                 fontsize=9)
    return save(fig, path, coinciding=False)


def _hidden_curves(ds, hue, panels, drawn) -> str:
    """A note naming the curves drawn exactly over others of the same panel (only the
    last drawn shows)."""
    if hue is None:
        return ""

    def equal(y, y0):  # to drawing precision (sums in another order differ in the last bits)
        return np.isfinite(y).any() and np.allclose(y, y0, rtol=1e-9, atol=1e-12, equal_nan=True)

    sym, vals = axis_symbol(ds, hue), ds[hue].values
    every, pairs = [], {}
    for (_, var, prot), curves in drawn.items():
        lab = f"{var} ({prot})" if prot else var
        if len(curves) > 1 and all(equal(y, curves[0][1]) for _, y in curves[1:]):
            every.append(lab)
            continue
        for i, (h, y) in enumerate(curves):
            h0 = next((h0 for h0, y0 in curves[:i] if equal(y, y0)), None)
            if h0 is not None:
                pairs.setdefault((h, h0), []).append(lab)
    parts = []
    if every:
        parts.append(f"one curve for every {sym} (all the same): "
                     + ", ".join(dict.fromkeys(every)))
    for (h, h0), labs in pairs.items():
        parts.append(f"{sym} = {fmt(vals[h])} hidden under {fmt(vals[h0])}: "
                     + ", ".join(dict.fromkeys(labs)))
    return "; ".join(parts)


def design_figure(ds: xr.Dataset, path: Path, variables, title: str = "", fields=()) -> list:
    """A design's cells (``sweep.design`` = lhs, sobol, saltelli or morris: one
    dimension ``point``) against each swept field: one row of panels per variable,
    one column per field, each cell a point (a design's points have no order, so
    none are joined), one colour per protocol.  Variables with dimensions other than
    ``point`` and ``protocol`` are left out."""
    fields_swept = [c for c in ds.coords if ds[c].dims == ("point",) and c != "point"]
    seen, names = set(), []
    for v in variables:
        if v in ds.data_vars and v not in seen and "point" in ds[v].dims \
                and set(ds[v].dims) <= {"point", "protocol"} \
                and np.isfinite(np.asarray(ds[v].values, float)).any():
            seen.add(v)
            names.append(v)
    names = names[:3]
    if not names or not fields_swept:
        return []
    import matplotlib.pyplot as plt

    ncol = min(len(fields_swept), 4)
    fields_swept = fields_swept[:ncol]
    fig, axs = plt.subplots(len(names), ncol, figsize=(FIGURE_PX / DPI, 2.6 * len(names) + 1.2),
                            squeeze=False, layout="constrained")
    prots = [str(p) for p in ds.protocol.values] if "protocol" in ds.coords else []
    colours = {p: f"C{k}" for k, p in enumerate(prots)}
    for r, v in enumerate(names):
        da = ds[v]
        for c, f in enumerate(fields_swept):
            ax = axs[r][c]
            ax.tick_params(labelsize=8)
            for p in (prots if "protocol" in da.dims else [None]):
                y = da.sel(protocol=p).values if p is not None else da.values
                ax.plot(ds[f].values, y, "o", ls="none", ms=3, alpha=0.8,
                        color=colours.get(p, "0.3"))
            if r == len(names) - 1:
                ax.set_xlabel(axis_label(ds, f), fontsize=8)
            if c == 0:
                ax.set_ylabel(da.attrs.get("long_name", v), fontsize=8)
    if "protocol" in ds.coords and any("protocol" in ds[v].dims for v in names):
        from matplotlib.lines import Line2D

        fig.legend(handles=[Line2D([], [], color=colours[p], marker="o", ls="none", ms=4,
                                   label=p) for p in prots],
                   loc="outside lower center", ncols=min(len(prots), 6), fontsize=8,
                   frameon=False)
    fixed = describe(ds, fields)
    fig.suptitle(f"{title}: {ds.sizes['point']} design points, each drawn against each "
                 f"swept field (the others vary too)" + (f"; {fixed}" if fixed else ""),
                 fontsize=9)
    return save(fig, path)


#: Widest line of a printed table: a terminal's 100 columns.
TABLE_WIDTH = 100


def wrap_columns(rows: list, width: int = TABLE_WIDTH, keep: int = 1) -> list:
    """Aligned table ``rows`` (a header and its rows) at most ``width`` wide: columns
    that do not fit go into further blocks below, each block repeating the first
    ``keep`` columns (the row names).  A column boundary is a run of at least two
    spaces at the same place in every row; a table within ``width`` comes back as it
    is.  (Hand-written: tabulate and textwrap wrap cells or lines, not column sets.)"""
    if not rows or max(len(r) for r in rows) <= width:
        return list(rows)
    n = max(len(r) for r in rows)
    pad = [r.ljust(n) for r in rows]
    blank = [all(r[i] == " " for r in pad) for i in range(n)]
    # fields: spans between gutters of >= 2 blank columns (a gutter joins the field after it)
    cuts, i = [0], 0
    while i < n:
        if blank[i]:
            j = i
            while j < n and blank[j]:
                j += 1
            if j - i >= 2 and i > 0 and j < n:
                cuts.append(i)
            i = j
        else:
            i += 1
    cuts.append(n)
    fields = list(zip(cuts[:-1], cuts[1:]))
    if len(fields) <= keep:
        return list(rows)
    key = (fields[0][0], fields[keep - 1][1])
    blocks, cur, used = [], [], key[1] - key[0]
    for a, b in fields[keep:]:
        if cur and used + (b - a) > width:
            blocks.append(cur)
            cur, used = [], key[1] - key[0]
        cur.append((a, b))
        used += b - a
    blocks.append(cur)
    out = []
    for k, blk in enumerate(blocks):
        if k:
            out.append("")
        for r in pad:
            out.append((r[key[0]:key[1]] + "".join(r[a:b] for a, b in blk)).rstrip())
    return out


def wrap_prose(lines, width: int = TABLE_WIDTH, indent: str = "  ") -> list:
    """Lines of prose at most ``width`` wide, broken between words; a continued line
    is indented by ``indent`` (and keeps the line's own leading spaces)."""
    import textwrap

    out = []
    for ln in lines:
        if len(ln) <= width:
            out.append(ln)
            continue
        lead = ln[:len(ln) - len(ln.lstrip())]
        out += textwrap.wrap(ln, width, initial_indent="", subsequent_indent=lead + indent,
                             break_long_words=False, break_on_hyphens=False) or [ln]
    return out


def protocol_rows(ds: xr.Dataset, columns, epsilon: bool = False, se: bool = False) -> list:
    """A table with one row per protocol: ``columns`` are (header, variable) pairs;
    ``epsilon`` appends the certificate, ``se`` a row of standard errors where the
    Dataset has them.  NaN prints as ``-``."""
    def cell(v):
        return ("-" if np.isnan(v) else f"{v:.5f}").ljust(9)

    lines = ["protocol  " + " ".join(h.ljust(9) for h, _ in columns)
             + (" epsilon" if epsilon else "")]
    for prot in ("consult", "debate"):
        r = ds.sel(protocol=prot)
        line = f"{prot:<9} " + " ".join(cell(float(r[v])) for _, v in columns)
        lines.append(line + (f" {float(r.epsilon):.2e}" if epsilon else ""))
        if se and all(f"{v}_se" in ds for _, v in columns[:1]):
            lines.append("   se     " + " ".join(
                cell(float(r[f"{v}_se"])) if f"{v}_se" in ds else " " * 9 for _, v in columns))
    return lines


def both(var):
    """Series of ``var`` for debate (solid) and consultancy (dashed)."""
    return [(var, "debate", "-o"), (var, "consult", "--")]


def axis_symbol(ds, d) -> str:
    """A dimension's short name for legends (its ``symbol`` attribute, else its name)."""
    return ds[d].attrs.get("symbol", d)


def axis_label(ds, d) -> str:
    """A dimension's axis label: its ``long_name`` (a model relabels a coordinate
    whose meaning depends on its config before drawing)."""
    return ds[d].attrs.get("long_name", d)


def describe(ds, fields) -> str:
    """``key=value`` of the (section, key) ``fields`` that the figure does not sweep."""
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    # a design's fields are coordinates along its points, not dimensions
    swept = {ds[d].attrs.get("config_path") for d in list(axes_of(ds)) + list(ds.coords)}
    from .fields import symbol

    parts = [f"{symbol(f'{s}.{k}')} = {fmt(cfg[s][k])}" for s, k in fields
             if f"{s}.{k}" not in swept and s in cfg and cfg[s].get(k) is not None]
    return ", ".join(parts)


def judge_fields(cfg: dict, logit_keys=("lam", "mu", "kappa")) -> list:
    """The base fields every model's figure title names."""
    fields = [("model", "p"), ("model", "rho"), ("model", "c_e"), ("judge", "kind")]
    fields += [("judge", "b")] if cfg["judge"]["kind"] == "tiebreak" else [
        ("judge", k) for k in logit_keys]
    return fields


def fit_suptitle(fig) -> None:
    """Wrap a figure title wider than the figure (a long parameter description was
    cut at both edges) onto as many lines as it needs, between words."""
    import textwrap

    st = getattr(fig, "_suptitle", None)
    if st is None or not st.get_text():
        return
    # The text's extent from the renderer alone (drawing the whole figure to measure
    # one title cost a second on a 10^6-cell map).
    width = st.get_window_extent(renderer=fig.canvas.get_renderer()).width
    avail = 0.97 * fig.get_figwidth() * fig.dpi
    if width <= avail:
        return
    lines = st.get_text().split("\n")
    longest = max(len(ln) for ln in lines)
    chars = max(20, int(longest * avail / width) - 2)
    wrapped = []
    for ln in lines:
        # break between words, never inside "p = 0.7"
        parts = textwrap.wrap(ln.replace(" = ", "\x01=\x01"), chars,
                              break_long_words=False, break_on_hyphens=False)
        wrapped += [w.replace("\x01", " ") for w in parts] if parts else [""]
    st.set_text("\n".join(wrapped))


def cell_map(ax, x, y, Z, **kw):
    """A heatmap of ``Z`` [len(y), len(x)] with each value centred on its (x, y).

    Evenly spaced increasing axes (linspace grids) are drawn as one image
    (``imshow``: drawing costs the figure's pixels, not the cells; a 10^6-cell map
    drew in seconds as a mesh); other axes as a mesh (``pcolormesh``, nearest
    shading), which places uneven cells correctly.  Both look the same."""
    x, y = np.asarray(x, float), np.asarray(y, float)

    def even(v):
        d = np.diff(v)
        return len(v) >= 2 and np.all(d > 0) and np.allclose(d, d[0], rtol=1e-9, atol=0)

    if even(x) and even(y):
        dx, dy = x[1] - x[0], y[1] - y[0]
        return ax.imshow(Z, origin="lower", aspect="auto", interpolation="nearest",
                         extent=(x[0] - dx / 2, x[-1] + dx / 2, y[0] - dy / 2, y[-1] + dy / 2),
                         **kw)
    return ax.pcolormesh(x, y, Z, shading="nearest", **kw)


#: Meshes and scatters with more elements than this are drawn as images inside the
#: PDF (each cell as a vector path made a 10^6-cell regime map's PDF take 50 s a
#: panel); smaller ones stay vector graphics.
RASTER_ABOVE = 10_000


def rasterize_big(fig) -> None:
    """Mark every mesh or scatter of more than RASTER_ABOVE elements for rasterizing."""
    from matplotlib.collections import PathCollection, QuadMesh

    for ax in fig.axes:
        for coll in ax.collections:
            if isinstance(coll, QuadMesh):
                size = np.size(coll.get_array())
            elif isinstance(coll, PathCollection):
                size = len(coll.get_offsets())
            else:
                continue
            if size > RASTER_ABOVE:
                coll.set_rasterized(True)


def _legend_names(fig) -> dict:
    """(colour, line style, marker) -> label of every legend entry of the figure (its
    axes' legends and its own), to name a line drawn without a label."""
    from matplotlib.colors import to_rgba
    from matplotlib.lines import Line2D

    out = {}
    legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
    for leg in legends:
        if leg is None:
            continue
        for h, t in zip(leg.legend_handles, leg.get_texts()):
            if isinstance(h, Line2D):
                key = (to_rgba(h.get_color()), h.get_linestyle(), h.get_marker())
                out.setdefault(key, t.get_text())
                out.setdefault((key[0], None, None), t.get_text())
                out.setdefault((None, key[1], key[2]), t.get_text())
    return out


def _line_name(line, names: dict) -> str:
    from matplotlib.colors import to_hex, to_rgba

    lab = line.get_gid() or line.get_label()  # a gid names a line kept out of the legend
    if lab and not lab.startswith("_"):
        return lab
    c, ls, mk = to_rgba(line.get_color()), line.get_linestyle(), line.get_marker()
    if (c, ls, mk) in names:
        return names[(c, ls, mk)]
    # a figure-wide legend: the colour names one thing, the (grey) style another
    parts = [names.get((c, None, None)), names.get((None, ls, mk))]
    return ", ".join(p for p in parts if p) or f"the {to_hex(c)} line"


def coinciding_curves(fig) -> list:
    """"panel: A under B" for every pair of lines of a panel drawn at the same points
    (the later drawn hides the earlier): a curve the reader cannot see must be said,
    so :func:`save` writes these into the figure's title.  Lines of one name (a
    curve and its markers) and lines placed in axes coordinates (reference lines)
    are not compared."""
    names = _legend_names(fig)
    notes = []
    several = len([ax for ax in fig.axes if ax.get_lines()]) > 1
    for ax in fig.axes:
        lines = [ln for ln in ax.get_lines() if ln.get_visible()
                 and ln.get_transform() == ax.transData and len(ln.get_xdata()) > 1]
        data = [(np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float))
                for ln in lines]
        for j in range(len(lines)):
            for i in range(j):
                (xi, yi), (xj, yj) = data[i], data[j]
                if xi.shape != xj.shape or yi.shape != yj.shape \
                        or not np.isfinite(yi).any():
                    continue
                # to drawing precision (sums in another order differ in the last bits)
                if not (np.allclose(xi, xj, rtol=1e-9, atol=1e-12, equal_nan=True)
                        and np.allclose(yi, yj, rtol=1e-9, atol=1e-12, equal_nan=True)):
                    continue
                a, b = _line_name(lines[i], names), _line_name(lines[j], names)
                if a == b:
                    continue
                where = f"{ax.get_title().splitlines()[0]}: " if several and ax.get_title() \
                    else ""
                note = f"{where}{a!r} hidden under {b!r}"
                if note not in notes:
                    notes.append(note)
    return notes


def colour_meanings(fig) -> dict:
    """colour -> the different legend labels given to it in one figure (only the
    colours that carry more than one meaning; greys and black, the colour of data
    and reference marks, are left out)."""
    from matplotlib.colors import to_hex, to_rgb

    seen: dict = {}
    legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
    for leg in legends:
        if leg is None:
            continue
        for h, t in zip(leg.legend_handles, leg.get_texts()):
            try:
                c = h.get_facecolor() if not hasattr(h, "get_color") else h.get_color()
                rgb = to_rgb(c if not (hasattr(c, "ndim") and c.ndim == 2) else c[0])
            except (ValueError, TypeError, IndexError):
                continue
            if max(rgb) - min(rgb) < 0.05:  # achromatic
                continue
            seen.setdefault(to_hex(rgb), set()).add(t.get_text())
    return {c: labs for c, labs in seen.items() if len(labs) > 1}


def note_coinciding(fig) -> None:
    """Append :func:`coinciding_curves` to the figure's title (or its only panel's)."""
    notes = coinciding_curves(fig)
    if not notes:
        return
    text = "drawn one over the other: " + "; ".join(notes)
    st = getattr(fig, "_suptitle", None)
    if st is not None and st.get_text():
        st.set_text(f"{st.get_text()}\n({text})")
    elif fig.axes:
        ax = fig.axes[0]
        ax.set_title(f"{ax.get_title()}\n({text})" if ax.get_title() else f"({text})",
                     fontsize=8)


def save(fig, path: Path, coinciding: bool = True) -> list:
    """``path``.png and .pdf, under the output policy (sim/outputs_policy.py).
    ``coinciding``: name the curves hidden under others in the title
    (:func:`note_coinciding`; false where the figure names them itself)."""
    import matplotlib.pyplot as plt

    from .outputs_policy import save_figure

    if coinciding:
        note_coinciding(fig)
    fit_suptitle(fig)
    rasterize_big(fig)
    written = []
    for fmt in ("png", "pdf"):
        p = path.with_suffix(f".{fmt}")
        save_figure(fig, p, dpi=DPI)
        written.append(p)
    plt.close(fig)
    return written


def exact_and_simulated(ax, d, var: str, xpos, colour, se_var: str | None = None) -> None:
    """One series of a grid figure: ``<var>_exact`` as a line, the simulated ``var``
    as points with 1.96-SE bars (when the grid was simulated)."""
    ax.plot(xpos, d[f"{var}_exact"].values, "-", color=colour, lw=1.2)
    if np.isfinite(d[var].values).any():
        ax.errorbar(xpos, d[var].values, yerr=1.96 * d[se_var or f"{var}_se"].values, fmt="o",
                    ms=2.5, color=colour, capsize=1.5)


def x_positions(ds, x: str) -> tuple:
    """(values, positions, categorical) of a sweep axis: strings sit at 0, 1, ..."""
    xv = ds[x].values
    cat = xv.dtype.kind in "US"
    return xv, (np.arange(len(xv)) if cat else xv.astype(float)), cat


def line_axis(ds, var: str):
    """A line figure's x axis over a sweep: ``(dims, x, sub, (values, positions,
    categorical))`` with ``x`` the first sweep axis of ``var`` and ``sub`` the dataset at
    the first value of the others (:func:`shown_at` names them), or None without one."""
    dims = axes_of(ds, var)
    if not dims:
        return None
    sub = ds.isel({d: 0 for d in dims[1:]})
    return dims, dims[0], sub, x_positions(sub, dims[0])


def label_x(axs, ds, x: str) -> None:
    """The shared x axis of a grid figure's panels: the field's label, category names
    or whole-number ticks where the axis is an integer field."""
    xv, xpos, cat = x_positions(ds, x)
    for ax in axs:
        ax.set_xlabel(axis_label(ds, x), fontsize=8)
        if cat:
            ax.set_xticks(xpos, xv)
        else:
            integer_ticks(ax, xv)


def shown_at(ds, dims) -> str:
    """'; shown at a = 1, b = 2' for the sweep axes a figure fixes at their first value."""
    return ("; shown at " + ", ".join(f"{d} = {fmt(ds[d].values[0])}" for d in dims)
            if len(dims) else "")
