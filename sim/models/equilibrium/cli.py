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
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from ...cli import compose_overrides, guarded_main, recorded
from ...config import ConfigError
from ...equilibrium import SolveConfig
from .model import REGIMES, format_equilibria, plot_regimes, regimes  # noqa: F401
from antiamp.sweeps.spec import SweepSpec

log = logging.getLogger("antiamp")


@dataclass
class SolveCLIConfig(SolveConfig):
    #: Optional grid: ``sweep.axes`` with the syntax of antiamp-sweep.
    sweep: SweepSpec = field(default_factory=SweepSpec)


def _schema():
    node = OmegaConf.structured(SolveCLIConfig)
    OmegaConf.set_struct(node.sweep.axes, False)
    return node




def setup() -> None:
    """Register the command's schema with Hydra (on first need)."""
    from ...cli import register_schema

    register_schema("antiamp_solve_schema", _schema)


def prevalidate(args: list[str]) -> None:
    from ...equilibrium import solve_inputs

    cfg = compose_overrides(args, "solve_config")
    if cfg is None:
        return
    # every cell, column by column; the run takes them (validated once)
    _CHECKED[:] = [cfg, solve_inputs(cfg)]


#: The config the check of a single run composed (plain) and its validated inputs.
_CHECKED: list = []


def _run(cfg: DictConfig) -> None:
    from antiamp.output import write_zarr_atomic

    from ...equilibrium import solve_cells, solve_inputs

    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    plain = OmegaConf.to_container(cfg, resolve=True)
    checked, _CHECKED[:] = list(_CHECKED), []
    try:  # the check's inputs when they are this run's (a single run), else validated here
        ds = solve_cells(*(checked[1] if checked and checked[0] == plain
                           else solve_inputs(plain)))
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


_hydra_main = hydra.main(version_base="1.3", config_path="pkg://antiamp.conf",
                         config_name="solve_config")(recorded(_run))


def help_text(args: list) -> str:
    from ...helptext import render

    return render(
        "antiamp-solve", "every equilibrium of the evidence-presentation game (seed 000, "
        "sections 3-4) with certificates, for one cell or a grid (sweep.axes), with a table, "
        "a Zarr store and, for grids, the regime map.",
        ["antiamp-solve model.c_e=0.3 judge.b=0.2",
         "antiamp-solve equilibrium.method=all judge=logit",
         "antiamp-solve 'sweep.axes.model.c_e=[0,0.2,0.4]' 'sweep.axes.judge.b=[0.2,0.8]'"],
        SolveCLIConfig, args, "solve_config",
        ["model", "judge", "protocol", "welfare", "run", "equilibrium", "sweep"])


def main() -> None:
    guarded_main("antiamp-solve", prevalidate, _hydra_main, help_text=help_text, setup=setup)


if __name__ == "__main__":
    main()
