"""Global sensitivity analysis of any model's metrics (SALib).

``sweep.design=saltelli`` samples the swept ranges with Saltelli's extension of a
scrambled Sobol' sequence (``n_points`` base samples N, a power of 2; N (2D + 2)
cells for D factors) and, once every cell is computed, writes first-order, total
and second-order Sobol' indices with their confidence intervals (SALib's
bootstrap) of every metric into the same store: ``S1_<metric>``, ``ST_<metric>``
over a ``factor`` dimension (named after the swept fields), ``S2_<metric>`` over
``factor`` x ``factor_2``, each with ``<name>_conf`` (half-width).
``sweep.design=morris`` samples ``n_points`` Morris trajectories (N (D + 1)
cells, ``sweep.morris_levels`` grid levels) and writes the elementary-effect
screening measures ``mu_star_<metric>`` (with ``_conf``), ``mu_<metric>`` and
``sigma_<metric>``.  A metric with another dimension (``protocol``) gets indices
per value of it.  Inputs are independent uniforms over the given ranges
(``loguniform`` ranges are uniform in the logarithm).

The sampling and the estimators are SALib's (a well-kept library; nothing here
re-implements them): this module only maps sweep axes to a SALib problem and the
store's variables to SALib's outputs.
"""

from __future__ import annotations

import warnings

import numpy as np

from .lazy import lazy

xr = lazy("xarray")

DESIGNS = ("saltelli", "morris")
#: Variables of a store that are bookkeeping, not metrics.
_SKIP_SUFFIX = ("_se", "_lo", "_hi", "_conf", "_digest", "_done", "_report")
_SKIP = ("quad_error", "epsilon", "solve_seconds")


def problem(axes) -> dict:
    """SALib's problem for sweep axes (bounds of loguniform axes in log space)."""
    names, bounds = [], []
    for a in axes:
        lo, hi = a.bounds
        names.append(a.path)
        bounds.append([np.log(lo), np.log(hi)] if a.log else [lo, hi])
    return {"num_vars": len(axes), "names": names, "bounds": bounds}


def sample(axes, design: str, n: int, seed: int, levels: int = 4) -> list:
    """The design's columns (one array per axis), in the order the analysis reads."""
    prob = problem(axes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SALib's note on convergence properties
        if design == "saltelli":
            from SALib.sample import sobol

            X = sobol.sample(prob, n, calc_second_order=True, scramble=True, seed=seed)
        else:
            from SALib.sample import morris

            X = morris.sample(prob, n, num_levels=levels, seed=seed)
    cols = []
    for k, a in enumerate(axes):
        cols.append(np.exp(X[:, k]) if a.log else X[:, k])
    return cols


def n_cells(design: str, n: int, d: int) -> int:
    return n * (2 * d + 2) if design == "saltelli" else n * (d + 1)


def metric_names(ds) -> list:
    """Float variables over ``point`` that are metrics (not SEs, bounds, checksums)."""
    out = []
    for name, da in ds.data_vars.items():
        if "point" not in da.dims or da.dtype.kind != "f" or name.endswith(_SKIP_SUFFIX) \
                or da.attrs.get("sensitivity") or name in _SKIP:
            continue
        out.append(name)
    return out


def indices(ds, axes, design: str, *, seed: int = 0, levels: int = 4,
            confidence: float = 0.95, num_resamples: int = 200):
    """Sensitivity indices of every metric of a finished design ``ds`` (SALib), as a
    Dataset over ``factor`` (and ``factor_2``); metrics that are constant or have
    NaN on some point are left out and named in the ``sensitivity_skipped``
    attribute."""
    prob = problem(axes)
    names = [a.path for a in axes]
    coords = {"factor": ("factor", names, {"long_name": "swept field (input factor)"})}
    if design == "saltelli":
        from SALib.analyze import sobol as analyze

        coords["factor_2"] = ("factor_2", names, {"long_name": "second swept field"})
    else:
        from SALib.analyze import morris as analyze

        X = np.column_stack([np.log(ds[a.dim].values) if a.log else ds[a.dim].values
                             for a in axes])
    out, skipped = {}, []
    D = len(axes)
    # SALib's Sobol' analysis draws its bootstrap unseeded (np.random) when its seed is
    # falsy: a design's default seed 0 gave other confidence intervals on every run.
    # 0 is passed as 2**32, outside the range of sweep.design_seed, so every seed is
    # reproducible and every other seed keeps its intervals (Morris seeds 0 itself).
    bootstrap_seed = seed if seed else 1 << 32
    for m in metric_names(ds):
        da = ds[m].transpose("point", ...)
        extra = da.dims[1:]
        Y = np.asarray(da.values, float).reshape(da.shape[0], -1)
        if not np.isfinite(Y).all() or np.all(np.ptp(Y, axis=0) == 0):
            skipped.append(m)
            continue
        shape = tuple(da.sizes[d] for d in extra)
        res = {}
        for j in range(Y.shape[1]):
            y = Y[:, j]
            if np.ptp(y) == 0:  # constant in this slice (one protocol): no variance to split
                r = None
            else:
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    if design == "saltelli":
                        r = analyze.analyze(prob, y, calc_second_order=True,
                                            num_resamples=num_resamples,
                                            conf_level=confidence, seed=bootstrap_seed)
                    else:
                        r = analyze.analyze(prob, X, y, num_resamples=num_resamples,
                                            conf_level=confidence, num_levels=levels,
                                            seed=seed)
            keys = (("S1", "S1_conf", "ST", "ST_conf", "S2", "S2_conf") if design == "saltelli"
                    else ("mu_star", "mu_star_conf", "mu", "sigma"))
            for k in keys:
                size = (D, D) if k.startswith("S2") else (D,)
                v = np.full(size, np.nan) if r is None else np.asarray(r[k], float)
                res.setdefault(k, []).append(v)
        cdims = tuple(extra)
        coords.update({d: ds[d] for d in extra if d in ds.coords})
        for k, vs in res.items():
            arr = np.stack(vs).reshape(shape + vs[0].shape)
            base, conf = (k[:-5], True) if k.endswith("_conf") else (k, False)
            dims = cdims + (("factor", "factor_2") if base == "S2" else ("factor",))
            name = f"{base}_{m}" + ("_conf" if conf else "")
            ln = _LONG[base] + f" of {m}"
            if conf:
                ln = f"{confidence:.0%} confidence half-width of the {ln}"
            out[name] = xr.DataArray(arr, dims=dims, attrs={"long_name": ln, "units": "1",
                                                            "sensitivity": 1})
    res_ds = xr.Dataset(out, coords=coords)
    res_ds.attrs.update({"sensitivity_design": design, "sensitivity_method":
                         "SALib " + ("Sobol' indices (Saltelli sampling)" if design == "saltelli"
                                     else "Morris elementary effects"),
                         "sensitivity_confidence": confidence,
                         "sensitivity_resamples": num_resamples,
                         "sensitivity_skipped": ", ".join(skipped)})
    return res_ds


_LONG = {"S1": "first-order Sobol' index", "ST": "total Sobol' index",
         "S2": "second-order Sobol' index", "mu_star": "Morris mu* (mean |elementary effect|)",
         "mu": "Morris mu (mean elementary effect)",
         "sigma": "Morris sigma (spread of elementary effects)"}


def with_indices(ds, axes, spec):
    """``ds`` with its sensitivity indices merged in (a design of DESIGNS)."""
    idx = indices(ds, axes, spec.design, seed=spec.design_seed,
                  levels=getattr(spec, "morris_levels", 4))
    out = ds.drop_vars([v for v in ds.data_vars if v in idx.data_vars], errors="ignore")
    out = xr.merge([out, idx], combine_attrs="override")
    out.attrs.update(idx.attrs)
    return out


def plot_indices(ds, path, metrics=None) -> list:
    """Bar chart of the indices of ``metrics`` (default: those of the first few
    metrics), one panel per metric and protocol: S1 and ST (Saltelli) or mu* and
    sigma (Morris) per factor, with confidence bars."""
    from .fields import label as field_label, symbol
    from .plotting import panel_grid, save

    sobol = any(v.startswith("S1_") for v in ds.data_vars)
    first = "S1_" if sobol else "mu_star_"
    have = [v[len(first):] for v in ds.data_vars if v.startswith(first)
            and not v.endswith("_conf")]
    metrics = [m for m in (metrics or have) if m in have][:6]
    if not metrics:
        return []
    panels = []
    for m in metrics:
        da = ds[f"{first}{m}"]
        extra = [d for d in da.dims if d != "factor"]
        if extra:
            for v in da[extra[0]].values:
                panels.append((m, {extra[0]: v}, f"{m} ({v})"))
        else:
            panels.append((m, {}, m))
    panels = panels[:8]
    fig, axs = panel_grid(len(panels), height=2.8)
    factors = list(ds["factor"].values)
    x = np.arange(len(factors))
    for ax, (m, sel, title) in zip(axs, panels):
        pairs = ((f"S1_{m}", "first order S1", -0.18), (f"ST_{m}", "total ST", 0.18)) if sobol \
            else ((f"mu_star_{m}", "μ* (mean |effect|)", -0.18), (f"sigma_{m}", "σ (spread)", 0.18))
        for k, (var, lab, off) in enumerate(pairs):
            v = ds[var].sel(sel).values
            err = ds[f"{var}_conf"].sel(sel).values if f"{var}_conf" in ds else None
            ax.bar(x + off, v, width=0.36, yerr=err, capsize=3, color=f"C{k}", label=lab)
        ax.set_xticks(x, [symbol(f) for f in factors], fontsize=9)
        ax.set_title(title, fontsize=9)
        ax.axhline(0, color="0.5", lw=0.6)
    handles, labs = axs[0].get_legend_handles_labels()
    fig.legend(handles, labs, loc="outside lower center", ncols=2, fontsize=8, frameon=False)
    fig.suptitle(("Sobol' indices" if sobol else "Morris screening")
                 + f" ({float(ds.attrs.get('sensitivity_confidence', 0.95)):.0%} confidence "
                 "bars, SALib); factors: " + ", ".join(field_label(f) for f in factors),
                 fontsize=9, wrap=True)
    return save(fig, path)
