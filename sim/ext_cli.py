"""``antiamp-ext``: correlated signals and endogenous judge effort (seed 000, section 5).

    antiamp-ext signals.eta=0.6 signals.phi=0.3 model.c_e=0.4 judge.b=0.7
    antiamp-ext effort.enabled=true judge=logit effort.lam_gain=3 effort.c_J=0.05
    antiamp-ext study=diversity          # a named study: grid, Zarr store, figures

Writes ``extension.zarr`` and, for grids, ``extension.png/.pdf`` (and
``attention_map.png/.pdf`` with effort) in the run directory.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import hydra
import numpy as np
import xarray as xr
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from sweeps.spec import SweepSpec

from .cli import compose_overrides, guarded_main
from .config import ConfigError
from .extended import ExtConfig

log = logging.getLogger("antiamp")

_NON_AXES = ("protocol", "equilibrium", "s_P", "s_A", "k", "s", "v", "stance")


@dataclass
class ExtCLIConfig(ExtConfig):
    #: Optional grid: ``sweep.axes`` with the syntax of antiamp-sweep (sections model,
    #: judge, protocol, welfare, signals, effort).
    sweep: SweepSpec = field(default_factory=SweepSpec)


def _schema():
    node = OmegaConf.structured(ExtCLIConfig)
    OmegaConf.set_struct(node.sweep.axes, False)
    return node


ConfigStore.instance().store(name="antiamp_ext_schema", node=_schema())


def _fmt(v) -> str:
    return f"{v:.3g}" if isinstance(v, (int, float, np.integer, np.floating)) else str(v)


def axes_of(ds: xr.Dataset) -> list:
    return [d for d in ds.amp.dims if d not in _NON_AXES]


def format_portfolio(ds: xr.Dataset) -> str:
    lines = [f"antiamp-ext: evidence portfolios ({ds.attrs['payoffs']} payoffs, "
             f"{ds.attrs['method']})",
             f"Pr(false-side item passes) = {float(ds.q_false):.4f} "
             f"(misleading-but-authentic share {float(ds.misleading_share):.3f}); "
             f"rho(B) = Pr(V >= tau | false, all submitted) = {float(ds.rho_B):.4f}", "",
             "protocol  amp       acc       fwc       items(T)  items(F)  welfare   epsilon"]
    for prot in ("consult", "debate"):
        r = ds.sel(protocol=prot)
        vals = [float(r[v]) for v in ("amp", "acc", "fwc", "items_true", "items_false",
                                      "welfare")]
        lines.append(f"{prot:<9} " + " ".join(f"{v:.5f}".ljust(9) for v in vals)
                     + f" {float(r.epsilon):.2e}")
    K = int((~np.isnan(ds.sigma_A.values[:, 0])).sum())
    for name, sig in (("protagonist (debate)", ds.sigma_P.sel(protocol="debate")),
                      ("antagonist", ds.sigma_A)):
        lines.append("")
        lines.append(f"{name}: Pr(submit s | k passing items held), rows k = 0..{K - 1}")
        for k in range(K):
            row = sig.values[k, :k + 1]
            lines.append(f"  k={k}: " + " ".join(f"{x:.4f}" for x in row))
    return "\n".join(lines)


def _line_figure(ds: xr.Dataset, path: Path, panels: list, title: str, extra=None) -> list:
    """Lines against the first sweep axis, one colour per value of the second (up to 6).

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
        lab = "" if h is None else f"{hue}={_fmt(ds[hue].values[h])}"
        for ax, (_, series) in zip(axs[0], panels):
            for n, (var, prot, style) in enumerate(series):
                da = d[var] if prot is None else d[var].sel(protocol=prot)
                label = (lab + (f" {prot}" if prot else "")).strip() if n == 0 else None
                ax.plot(xpos, da.values, style, ms=3, color=col, label=label or None)
    for ax, (t, series) in zip(axs[0], panels):
        ax.set_title(t, fontsize=9)
        ax.set_xlabel(_axis_label(ds, x), fontsize=8)
        if xv.dtype.kind in "US":
            ax.set_xticks(xpos, xv)
        if any(v in ("amp_gap", "t_gap", "diversity_value") for v, _, _ in series):
            ax.axhline(0, color="0.6", lw=0.8)
    if extra is not None:
        extra(axs[0], x)
    axs[0][0].legend(fontsize=7, frameon=False)
    fig.suptitle(f"{title}: {_describe(ds)}", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return _save(fig, path)


def _both(var):
    return [(var, "debate", "-o"), (var, "consult", "--")]


def plot_portfolio(ds: xr.Dataset, path: Path) -> list:
    return _line_figure(ds, path, [
        ("mistake amplification Amp (dashed: consultancy)", _both("amp")),
        ("accuracy (dashed: consultancy)", _both("acc")),
        ("rho(B): Pr(V >= tau | false stance)", [("rho_B", None, "-o")]),
        ("accepted items, debate (solid: true side, dotted: false)",
         [("items_true", "debate", "-o"), ("items_false", "debate", ":")]),
    ], "evidence portfolios at the equilibrium")


def format_panel(ds: xr.Dataset) -> str:
    import yaml

    pc = yaml.safe_load(ds.attrs["config"])["panel"]
    lines = [f"antiamp-ext: a panel of {pc['size']} judges, {pc['rule']} rule, icc = {pc['icc']}, "
             f"bias sd = {pc['bias_sd']} ({ds.attrs['payoffs']} class weights)",
             f"debate tie: one judge endorses {float(ds.b_single):.4f}; the panel "
             f"{float(ds.b_panel):.4f}; independent identical judges (b_n) "
             f"{float(ds.b_independent):.4f}",
             f"correlation of two judges' votes {float(ds.vote_corr):.4f}; effective independent "
             f"votes {float(ds.n_eff):.3f} of {pc['size']}", "",
             "protocol  amp       acc       fwc       tie_rate  welfare"]
    for prot in ("consult", "debate"):
        r = ds.sel(protocol=prot)
        vals = [float(r[v]) for v in ("amp", "acc", "fwc", "tie_rate", "welfare")]
        lines.append(f"{prot:<9} " + " ".join(f"{v:.5f}".ljust(9) for v in vals))
    lines.append("")
    lines.append("panel table Pr(y = a | e_P, e_A), debate: " + str(np.round(ds.panel_table.values, 5)
                                                                  .tolist()))
    return "\n".join(lines)


def plot_panel(ds: xr.Dataset, path: Path) -> list:
    def identity(axs, x):
        if x == "size":
            axs[3].plot(ds[x].values, ds[x].values, color="0.6", lw=0.8, label="n_eff = n")
            axs[3].legend(fontsize=7, frameon=False)

    return _line_figure(ds, path, [
        ("mistake amplification Amp (dashed: consultancy)", _both("amp")),
        ("accuracy (dashed: consultancy)", _both("acc")),
        ("panel endorsement of a debate tie (dotted: b_n)",
         [("b_panel", None, "-o"), ("b_independent", None, ":")]),
        ("effective independent votes", [("n_eff", None, "-o")]),
    ], "juries", identity)


def format_messages(ds: xr.Dataset) -> str:
    strategic = ds.attrs["mode"] == "strategic"
    lines = [f"antiamp-ext: verifiable evidence and rhetoric ({ds.attrs['mode']} rhetoric, "
             f"{ds.attrs['method']})", "",
             "protocol  amp       acc       fwc       endorse   welfare"
             + ("   rhetoric  epsilon" if strategic else "")]
    for prot in ("consult", "debate"):
        r = ds.sel(protocol=prot)
        vals = [float(r[v]) for v in ("amp", "acc", "fwc", "endorse", "welfare")]
        if strategic:
            vals.append(float(r.rhetoric_P))
        line = f"{prot:<9} " + " ".join(f"{v:.5f}".ljust(9) for v in vals)
        if strategic:
            line += f" {float(r.epsilon):.2e}"
        lines.append(line)
        if "amp_se" in ds:
            lines.append("   se     " + " ".join(f"{float(r[v + '_se']):.5f}".ljust(9)
                                             for v in ("amp", "acc", "fwc", "endorse")))
    return "\n".join(lines)


def plot_messages(ds: xr.Dataset, path: Path) -> list:
    panels = [("mistake amplification Amp (dashed: consultancy)", _both("amp")),
              ("accuracy (dashed: consultancy)", _both("acc")),
              ("Amp(consult) - Amp(debate)", [("amp_gap", None, "-o")])]
    if ds.attrs["mode"] == "strategic":
        panels.append(("protagonist rhetoric (dashed: consultancy)", _both("rhetoric_P")))
    return _line_figure(ds, path, panels, "evidence and rhetoric")


def format_options(ds: xr.Dataset) -> str:
    import yaml

    oc = yaml.safe_load(ds.attrs["config"])["options"]
    lines = [f"antiamp-ext: {oc['K']} answers, antagonist rule {oc['antagonist']} "
             f"({ds.attrs['method']})", "",
             "protocol  amp       amp_loss  acc       fwc       loss      wrong_alt"]
    for prot in ("consult", "debate"):
        r = ds.sel(protocol=prot)
        vals = [float(r[v]) for v in ("amp", "amp_loss", "acc", "fwc", "loss",
                                      "wrong_alternative")]
        lines.append(f"{prot:<9} " + " ".join(("-" if np.isnan(v) else f"{v:.5f}").ljust(9)
                                              for v in vals))
    lines += ["", "wrong_alt: Pr(the antagonist defends a wrong alternative | a != omega)"]
    return "\n".join(lines)


def plot_options(ds: xr.Dataset, path: Path) -> list:
    return _line_figure(ds, path, [
        ("Amp = Pr(y = a | a != omega) (dashed: consultancy)", _both("amp")),
        ("Amp of suboptimal answers (dashed: consultancy)", _both("amp_loss")),
        ("accuracy (dashed: consultancy)", _both("acc")),
        ("antagonist defends a wrong alternative | a wrong",
         [("wrong_alternative", "debate", "-o")]),
    ], "multi-option answers")


def format_table(ds: xr.Dataset) -> str:
    eff = ds.attrs["effort"] == "on"
    lines = [f"antiamp-ext: correlated signals{' and judge attention' if eff else ''} "
             f"({ds.attrs['method']}, {ds.attrs['payoffs']} payoffs)",
             f"eta = {float(ds.eta_used):.4f} (feasible [{float(ds.eta_min):.4f}, "
             f"{float(ds.eta_max):.4f}]), Pr(antagonist shares the error | a != omega) = "
             f"{float(ds.shared_blind_spot):.4f}", ""]
    head = "protocol  #  " + ("t*        " if eff else "") + \
        "amp       acc       fwc       counter   welfare   epsilon"
    lines.append(head)
    for prot in ("consult", "debate"):
        d = ds.sel(protocol=prot)
        for e in range(int(d.n_equilibria)):
            r = d.isel(equilibrium=e)
            vals = ([float(r.t_star)] if eff else []) + [
                float(r[v]) for v in ("amp", "acc", "fwc", "counter_signal", "welfare")]
            cells = [("-" if np.isnan(v) else f"{v:.5f}").ljust(9) for v in vals]
            lines.append(f"{prot:<9} {e}  " + " ".join(cells) + f" {float(r.epsilon):.2e}")
            xs = f"    x_P by s_P: {np.round(r.x_P.values, 5).tolist()}"
            if prot == "debate":
                xs += f"; x_A by (a, s_A): {np.round(r.x_A.values, 5).tolist()}"
            lines.append(xs)
    if eff and "t_commit" in ds:
        lines.append("")
        lines.append("judge as leader (attention committed): t = " + ", ".join(
            f"{p} {float(ds.t_commit.sel(protocol=p)):.4f}" for p in ("consult", "debate")))
    lines.append("")
    lines.append(f"value of diversity Amp(eta) - Amp(0), debate: "
                 f"{float(ds.diversity_value.sel(protocol='debate')):+.5f}")
    return "\n".join(lines)


def plot_extension(ds: xr.Dataset, path: Path) -> list:
    """Outcomes at the judge-preferred equilibrium against the sweep axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dims = axes_of(ds)
    if not dims:
        return []
    d0 = ds.isel(equilibrium=0)
    x = dims[0]
    extra = {d: 0 for d in dims[2:]}
    d0 = d0.isel(extra) if extra else d0
    hue = dims[1] if len(dims) > 1 else None
    eff = ds.attrs["effort"] == "on"
    panels = [("amp", "mistake amplification Amp"), ("acc", "accuracy"),
              ("amp_gap", "Amp(consult) - Amp(debate)")]
    if eff:
        panels += [("t_star", "equilibrium attention t*"), ("t_gap", "t*(debate) - t*(consult)")]
    elif x == "eta" or hue == "eta":
        panels += [("diversity_value", "value of diversity Amp(eta) - Amp(0), debate")]
    fig, axs = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    hues = [None] if hue is None else list(range(ds.sizes[hue]))
    if len(hues) > 6:
        hues = list(np.unique(np.linspace(0, len(hues) - 1, 6).round().astype(int)))
    cmap = plt.get_cmap("viridis")
    xv = ds[x].values
    for ax, (var, title) in zip(axs[0], panels):
        for k, h in enumerate(hues):
            sub = d0 if h is None else d0.isel({hue: h})
            col = cmap(k / max(1, len(hues) - 1)) if h is not None else "C0"
            lab = "" if h is None else f"{hue}={_fmt(ds[hue].values[h])}"
            da = sub[var]
            if "protocol" in da.dims:
                if var == "diversity_value":
                    ax.plot(xv, da.sel(protocol="debate").values, "-o", ms=3, color=col, label=lab)
                    continue
                ax.plot(xv, da.sel(protocol="debate").values, "-o", ms=3, color=col,
                        label=(lab + " debate").strip())
                ax.plot(xv, da.sel(protocol="consult").values, "--", color=col,
                        label=(lab + " consult").strip() if k == 0 or h is None else None)
            else:
                ax.plot(xv, da.values, "-o", ms=3, color=col, label=lab or None)
        if var in ("amp_gap", "t_gap", "diversity_value"):
            ax.axhline(0, color="0.6", lw=0.8)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(_axis_label(ds, x), fontsize=8)
        if var != "t_star" and var != "t_gap" and var not in ("amp_gap", "diversity_value"):
            ax.set_ylim(-0.02, 1.02)
        if ds[x].attrs.get("config_path", "").endswith("c_J") and np.all(xv > 0):
            ax.set_xscale("log")
    axs[0][0].legend(fontsize=7, frameon=False)
    note = ("; shown at " + ", ".join(f"{d}={_fmt(ds[d].values[0])}" for d in extra)) if extra else ""
    fig.suptitle(f"{_describe(ds)} (solid: debate, dashed: consultancy; equilibrium preferred by "
                 f"the judge){note}", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    written = _save(fig, path)
    if eff and len(dims) >= 2:
        written += _attention_map(ds, path.with_name("attention_map"))
    return written


def _attention_map(ds, path):
    """Where debate raises (t_gap > 0) or lowers attention, faceted over a third axis."""
    import matplotlib.pyplot as plt

    dims = axes_of(ds)
    y, x = dims[1], dims[0]
    facets = list(range(ds.sizes[dims[2]])) if len(dims) > 2 else [None]
    fig, axs = plt.subplots(1, len(facets), figsize=(4 * len(facets) + 1, 3.8), squeeze=False,
                            layout="constrained")
    gap = ds.t_gap
    any_collapse = False
    lim = float(np.nanmax(np.abs(gap.values))) or 1.0
    for ax, f in zip(axs[0], facets):
        g = gap if f is None else gap.isel({dims[2]: f})
        g = g.isel({d: 0 for d in dims[3:]}) if len(dims) > 3 else g
        m = ax.pcolormesh(ds[x].values, ds[y].values, g.transpose(y, x).values, cmap="RdBu",
                          vmin=-lim, vmax=lim, shading="nearest")
        col = ds.collapse.isel(equilibrium=0).sel(protocol="debate")
        col = col if f is None else col.isel({dims[2]: f})
        col = col.isel({d: 0 for d in dims[3:]}) if len(dims) > 3 else col
        yy, xx = np.nonzero(col.transpose(y, x).values)
        if len(xx):
            any_collapse = True
            ax.scatter(ds[x].values[xx], ds[y].values[yy], marker="x", s=12, c="k",
                       label="debate attention collapses (t* = 0)")
        if ds[x].attrs.get("config_path", "").endswith("c_J"):
            ax.set_xscale("log")
        ax.set_xlabel(_axis_label(ds, x), fontsize=8)
        ax.set_ylabel(_axis_label(ds, y), fontsize=8)
        if f is not None:
            ax.set_title(f"{dims[2]} = {_fmt(ds[dims[2]].values[f])}", fontsize=9)
    fig.colorbar(m, ax=axs[0].tolist(), label="t*(debate) - t*(consult)")
    if any_collapse:
        axs[0][0].legend(fontsize=7, frameon=False, loc="lower left")
    fig.suptitle("does debate raise judge attention? (blue: raises, red: lowers)", fontsize=10)
    return _save(fig, path)


def _axis_label(ds, d) -> str:
    import yaml

    if d == "eta" and yaml.safe_load(ds.attrs["config"])["signals"]["eta_mode"] == "fraction":
        return "error correlation eta (fraction of its feasible extreme)"
    return ds[d].attrs.get("long_name", d)


def _describe(ds) -> str:
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    swept = {ds[d].attrs.get("config_path") for d in axes_of(ds)}
    fields = [("model", "p"), ("model", "rho"), ("model", "c_e"), ("judge", "kind")]
    logit_keys = ("lam", "mu") if (cfg.get("extension") == "portfolio" and
                                   cfg["portfolio"]["rule"] == "logit") else ("lam", "mu", "kappa")
    fields += [("judge", "b")] if cfg["judge"]["kind"] == "tiebreak" else [
        ("judge", k) for k in logit_keys]
    if cfg.get("extension") == "panel":
        fields += [("panel", k) for k in ("size", "rule", "icc", "bias_sd")]
    elif cfg.get("extension") == "options":
        fields += [("options", k) for k in ("K", "antagonist", "k_examine", "distractor_weight",
                                            "distractor_bias", "near_miss_loss")]
    elif cfg.get("extension") == "messages":
        keys = (("mode", "kappa_v", "kappa_r", "r_mean_true", "r_mean_false", "r_sd")
                if cfg["messages"]["mode"] == "exogenous" else
                ("mode", "kappa_v", "kappa_r", "r_max", "r_levels", "c_r"))
        fields = [f for f in fields if f != ("judge", "kappa")]
        fields += [("messages", k) for k in keys]
    elif cfg.get("extension") == "portfolio":
        fields += [("portfolio", k) for k in ("budget", "q_true", "q_fab", "mislead",
                                              "cross_exam", "tau", "rule", "c_item")]
    else:
        fields += [("signals", "phi"), ("signals", "p_A")]
    if cfg["effort"]["enabled"]:
        fields += [("effort", k) for k in ("c_J", "load", "lam_gain", "v_max")]
    parts = [f"{k}={cfg[s][k]}" for s, k in fields
             if f"{s}.{k}" not in swept and cfg[s][k] is not None]
    return ", ".join(parts)


def _save(fig, path: Path) -> list:
    import matplotlib.pyplot as plt

    written = []
    for fmt in ("png", "pdf"):
        p = path.with_suffix(f".{fmt}")
        fig.savefig(p, dpi=120)
        written.append(p)
    plt.close(fig)
    return written


def prevalidate(args: list[str]) -> None:
    from .extended import to_ext_config, validate_ext

    cfg = compose_overrides(args, "ext_config")
    if cfg is None:
        return
    base, spec = to_ext_config(cfg)
    if spec is not None:
        from sweeps.spec import CellGrid

        grid = CellGrid(base, spec, validator=validate_ext)
        for i in range(grid.n_cells):
            grid.cell(i)


def _run(cfg: DictConfig) -> None:
    from sim.output import write_zarr_atomic

    from .extended import solve_extended

    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    try:
        ds = solve_extended(cfg)
    except ConfigError as exc:
        log.error("invalid configuration: %s", exc)
        raise SystemExit(2) from None
    out = Path(HydraConfig.get().runtime.output_dir)
    dims = axes_of(ds)
    if ds.attrs.get("extension") in ("portfolio", "panel", "messages", "options"):
        fmt, plot = {"portfolio": (format_portfolio, plot_portfolio),
                     "panel": (format_panel, plot_panel),
                     "messages": (format_messages, plot_messages),
                     "options": (format_options, plot_options)}[ds.attrs["extension"]]
        if dims:
            print(f"{int(np.prod([ds.sizes[d] for d in dims])):,} cells in "
                  f"{ds.attrs['solve_seconds']:.1f} s ({ds.attrs['kernel_calls']} kernel calls); "
                  + (f"largest certificate {float(ds.epsilon.max()):.2e}" if "epsilon" in ds
                     else "strategies by dominance"))
        else:
            print(fmt(ds))
        store = write_zarr_atomic(ds, out / "extension.zarr")
        print(f"\nwrote {store}")
        for p in plot(ds, out / "extension"):
            print(f"wrote {p}")
        return
    if dims:
        n = ds.n_equilibria
        print(f"{int(np.prod([ds.sizes[d] for d in dims])):,} cells in "
              f"{ds.attrs['solve_seconds']:.1f} s ({ds.attrs['kernel_calls']} kernel calls); "
              f"equilibria per cell: consult {int(n.sel(protocol='consult').min())}-"
              f"{int(n.sel(protocol='consult').max())}, debate "
              f"{int(n.sel(protocol='debate').min())}-{int(n.sel(protocol='debate').max())}; "
              f"largest certificate {float(ds.epsilon.max()):.2e}")
        none = int((n == 0).sum())
        if none:
            print(f"{none} (cell, protocol) pairs have no pure-attention equilibrium "
                  "(see the solver report in the store's attrs)")
    else:
        print(format_table(ds))
        if ds.attrs["solver_report"] != "no issues":
            print("\nsolver report:\n" + ds.attrs["solver_report"])
    store = write_zarr_atomic(ds, out / "extension.zarr")
    print(f"\nwrote {store}")
    if dims:
        for p in plot_extension(ds, out / "extension"):
            print(f"wrote {p}")


_hydra_main = hydra.main(version_base="1.3", config_path="pkg://conf",
                         config_name="ext_config")(_run)


def main() -> None:
    guarded_main("antiamp-ext", prevalidate, _hydra_main)


if __name__ == "__main__":
    main()
