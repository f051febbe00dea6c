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
            "e_P", "e_A", "transcript_class")


def fmt(v) -> str:
    return f"{v:.3g}" if isinstance(v, (int, float, np.integer, np.floating)) else str(v)


def axes_of(ds: xr.Dataset, var: str = "amp") -> list:
    """The sweep axes of a model's dataset (the dimensions of ``var`` that are not layout)."""
    return [d for d in ds[var].dims if d not in NON_AXES and d != "cell"]


def line_figure(ds: xr.Dataset, path: Path, panels: list, title: str, fields=(), extra=None) -> list:
    """Lines against the first sweep axis, one colour per value of the second (up to 6).

    ``fields``: (section, key) pairs of fixed parameters named in the title.
    ``panels``: (title, series) with series (variable, protocol or None, line style);
    the first series of a colour carries its legend label.  ``extra(axes, x)`` may add
    reference lines.  Further axes are shown at their first value.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dims = axes_of(ds)
    if not dims:
        return []
    x = dims[0]
    sub = ds.isel({d: 0 for d in dims[2:]}) if len(dims) > 2 else ds
    hue = dims[1] if len(dims) > 1 else None
    hues = [None] if hue is None else list(range(ds.sizes[hue]))[:6]
    fig, axs = plt.subplots(1, len(panels), figsize=(4.3 * len(panels), 3.8), squeeze=False)
    cmap = plt.get_cmap("viridis")
    xv = ds[x].values
    xpos = np.arange(len(xv)) if xv.dtype.kind in "US" else xv
    for kk, h in enumerate(hues):
        d = sub if h is None else sub.isel({hue: h})
        col = "C0" if h is None else cmap(kk / max(1, len(hues) - 1))
        lab = "" if h is None else f"{hue}={fmt(ds[hue].values[h])}"
        for ax, (_, series) in zip(axs[0], panels):
            for n, (var, prot, style) in enumerate(series):
                da = d[var] if prot is None else d[var].sel(protocol=prot)
                label = (lab + (f" {prot}" if prot else "")).strip() if n == 0 else None
                ax.plot(xpos, da.values, style, ms=3, color=col, label=label or None)
    for ax, (t, series) in zip(axs[0], panels):
        ax.set_title(t, fontsize=9)
        ax.set_xlabel(axis_label(ds, x), fontsize=8)
        if xv.dtype.kind in "US":
            ax.set_xticks(xpos, xv)
        if any(v in ("amp_gap", "t_gap", "diversity_value") for v, _, _ in series):
            ax.axhline(0, color="0.6", lw=0.8)
    if extra is not None:
        extra(axs[0], x)
    axs[0][0].legend(fontsize=7, frameon=False)
    fig.suptitle(f"{title}: {describe(ds, fields)}", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return save(fig, path)


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


def axis_label(ds, d) -> str:
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    if d == "eta" and (cfg.get("signals") or {}).get("eta_mode") == "fraction":
        return "error correlation eta (fraction of its feasible extreme)"
    return ds[d].attrs.get("long_name", d)


def describe(ds, fields) -> str:
    """``key=value`` of the (section, key) ``fields`` that the figure does not sweep."""
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    swept = {ds[d].attrs.get("config_path") for d in axes_of(ds)}
    parts = [f"{k}={cfg[s][k]}" for s, k in fields
             if f"{s}.{k}" not in swept and s in cfg and cfg[s].get(k) is not None]
    return ", ".join(parts)


def judge_fields(cfg: dict, logit_keys=("lam", "mu", "kappa")) -> list:
    """The base fields every model's figure title names."""
    fields = [("model", "p"), ("model", "rho"), ("model", "c_e"), ("judge", "kind")]
    fields += [("judge", "b")] if cfg["judge"]["kind"] == "tiebreak" else [
        ("judge", k) for k in logit_keys]
    return fields


def save(fig, path: Path) -> list:
    import matplotlib.pyplot as plt

    written = []
    for fmt in ("png", "pdf"):
        p = path.with_suffix(f".{fmt}")
        fig.savefig(p, dpi=120)
        written.append(p)
    plt.close(fig)
    return written
