"""``antiamp-solve``: every equilibrium of the evidence game, for one cell or a grid.

    antiamp-solve model.c_e=0.45 model.p=0.6 model.rho=0.5 judge.b=0.8
    antiamp-solve 'sweep.axes.model.c_e={linspace:[0,1,41]}' 'sweep.axes.judge.b={linspace:[0,1,41]}'
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

from .cli import compose_overrides, guarded_main
from .config import ConfigError
from .equilibrium import SolveConfig
from sweeps.spec import SweepSpec

log = logging.getLogger("antiamp")


@dataclass
class SolveCLIConfig(SolveConfig):
    #: Optional grid: ``sweep.axes`` with the syntax of antiamp-sweep.
    sweep: SweepSpec = field(default_factory=SweepSpec)


def _schema():
    node = OmegaConf.structured(SolveCLIConfig)
    OmegaConf.set_struct(node.sweep.axes, False)
    return node


ConfigStore.instance().store(name="antiamp_solve_schema", node=_schema())

REGIMES = ["never present", "always present", "mixes (in some equilibrium)", "several pure equilibria"]


def regimes(ds: xr.Dataset) -> dict:
    """Per sender, the regime of each cell: 0 never, 1 always, 2 mixed, 3 multiple pure."""
    out = {}
    for label, var, prot in (("P, consultancy", "x_P", "consult"), ("P, debate", "x_P", "debate"),
                             ("A, debate", "x_A", "debate")):
        x = ds[var].sel(protocol=prot)
        valid = ~np.isnan(x)
        mixed = ((x > 1e-9) & (x < 1 - 1e-9) & valid).any("equilibrium")
        ones = ((x >= 1 - 1e-9) | ~valid).all("equilibrium")
        zeros = ((x <= 1e-9) | ~valid).all("equilibrium")
        reg = xr.where(mixed, 2, xr.where(ones, 1, xr.where(zeros, 0, 3)))
        out[label] = reg
    return out


def plot_regimes(ds: xr.Dataset, path: Path) -> list:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    regs = regimes(ds)
    dims = [d for d in regs["P, debate"].dims]
    cmap = ListedColormap(["#bdbdbd", "#1b9e77", "#d95f02", "#7570b3"])
    fig, axs = plt.subplots(1, 3, figsize=(13, 3.8), squeeze=False)
    note = ""
    for ax, (label, reg) in zip(axs[0], regs.items()):
        extra = {d: 0 for d in dims[2:]}
        if extra:
            reg = reg.isel(extra)
            note = "shown at " + ", ".join(f"{d}={ds[d].values[0]}" for d in extra)
        if len(dims) >= 2:
            y, x = dims[0], dims[1]
            ax.pcolormesh(ds[x].values, ds[y].values, reg.transpose(y, x).values, cmap=cmap,
                          vmin=-0.5, vmax=3.5, shading="nearest")
            ax.set_xlabel(x)
            ax.set_ylabel(y)
        else:
            x = dims[0]
            ax.scatter(ds[x].values, reg.values, c=reg.values, cmap=cmap, vmin=-0.5, vmax=3.5)
            ax.set_yticks(range(4), REGIMES)
            ax.set_xlabel(x)
        ax.set_title(label, fontsize=9)
    handles = [plt.Rectangle((0, 0), 1, 1, color=cmap(i)) for i in range(4)]
    fig.legend(handles, REGIMES, loc="lower center", ncol=4, fontsize=8, frameon=False)
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    m, j = cfg["model"], cfg["judge"]
    fixed = (f"p={m['p']}, rho={m['rho']}, judge={j['kind']}"
             + (f", jury of {j['jury_size']}" if j["jury_size"] > 1 else ""))
    fig.suptitle("evidence-presentation regimes (presentation given available evidence); "
                 + fixed + (f"; {note}" if note else ""), fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    written = []
    for fmt in ("png", "pdf"):
        p = path.with_suffix(f".{fmt}")
        fig.savefig(p, dpi=120)
        written.append(p)
    plt.close(fig)
    return written


def format_equilibria(ds: xr.Dataset) -> str:
    lines = [f"antiamp-solve: equilibria of the evidence game ({ds.attrs['method']}, "
             f"{ds.attrs['payoffs']} payoffs)",
             f"posteriors given available evidence: mu_P = {float(ds.mu_P):.4f}, "
             f"mu_A = {float(ds.mu_A):.4f}", "",
             "protocol  #  kind         x_P       x_A       amp       acc       fwc       "
             "welfare    epsilon    stable"]
    for prot in ("consult", "debate"):
        d = ds.sel(protocol=prot)
        for e in range(int(d.n_equilibria)):
            r = d.isel(equilibrium=e)
            f = [float(r[v]) for v in ("x_P", "x_A", "amp", "acc", "fwc", "welfare", "epsilon")]
            cells = [("-" if np.isnan(v) else f"{v:.5f}").ljust(9) for v in f[:6]]
            lines.append(f"{prot:<9} {e}  {str(r.kind.values):<12} " + " ".join(cells)
                         + f" {f[6]:.2e}   {bool(r.stable)}")
    return "\n".join(lines)


def prevalidate(args: list[str]) -> None:
    from .equilibrium import _solve_config

    cfg = compose_overrides(args, "solve_config")
    if cfg is None:
        return
    base, eqc, spec = _solve_config(cfg)
    if spec is not None:
        from sweeps.spec import CellGrid

        grid = CellGrid(base, spec)
        for i in range(grid.n_cells):
            grid.cell(i)


def _run(cfg: DictConfig) -> None:
    from sim.output import write_zarr_atomic

    from .equilibrium import solve

    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    try:
        ds = solve(cfg)
    except ConfigError as exc:
        log.error("invalid configuration: %s", exc)
        raise SystemExit(2) from None
    out = Path(HydraConfig.get().runtime.output_dir)
    grid = any(d not in ("protocol", "equilibrium") for d in ds.x_P.dims)
    if grid:
        n = ds.n_equilibria
        print(f"{int(np.prod([ds.sizes[d] for d in n.dims if d != 'protocol'])):,} cells; "
              f"equilibria per cell: consult {int(n.sel(protocol='consult').min())}-"
              f"{int(n.sel(protocol='consult').max())}, debate "
              f"{int(n.sel(protocol='debate').min())}-{int(n.sel(protocol='debate').max())}; "
              f"largest certificate {float(ds.epsilon.max()):.2e}")
    else:
        print(format_equilibria(ds))
    if ds.attrs["solver_report"] != "all methods converged":
        print("\nsolver report (starts that did not reach an equilibrium):")
        print(ds.attrs["solver_report"])
    store = write_zarr_atomic(ds, out / "equilibria.zarr")
    print(f"\nwrote {store}")
    if grid:
        for p in plot_regimes(ds, out / "regimes"):
            print(f"wrote {p}")


_hydra_main = hydra.main(version_base="1.3", config_path="pkg://conf",
                         config_name="solve_config")(_run)


def main() -> None:
    guarded_main("antiamp-solve", prevalidate, _hydra_main)


if __name__ == "__main__":
    main()
