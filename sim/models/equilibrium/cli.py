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
from .core import SolveConfig
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




#: A grid is one block (the model's numerics are vectorised over its cells).
GRID_BLOCK = 10**9


def grid_config(cfg) -> dict:
    """The command's config as the engine's grid of this model."""
    from .core import grid_config as of

    return of(cfg)


def setup() -> None:
    """Register the command's schema with Hydra (on first need)."""
    from ...cli import register_schema

    register_schema("antiamp_solve_schema", _schema)


def prevalidate(args: list[str]) -> None:
    from .core import solve_config

    cfg = compose_overrides(args, "solve_config")
    if cfg is None:
        return
    if _is_grid(cfg):  # every cell, column by column, into the engine's plan (which
        from antiamp.sweeps.blocks import plan_grid  # the run reuses: validated once)

        plan_grid(grid_config(cfg), cells_per_block=GRID_BLOCK)
        _CHECKED[:] = [cfg, None]
    else:
        _CHECKED[:] = [cfg, solve_config(cfg)]  # the run takes them (validated once)


def _is_grid(cfg: dict) -> bool:
    return bool((cfg.get("sweep") or {}).get("axes"))


#: The config the check of a single run composed (plain) and its validated inputs.
_CHECKED: list = []


def _run(cfg: DictConfig) -> None:
    from antiamp.output import write_zarr_atomic

    from .core import solve_cells, solve_config

    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    plain = OmegaConf.to_container(cfg, resolve=True)
    checked, _CHECKED[:] = list(_CHECKED), []
    try:  # the check's inputs when they are this run's (a single run), else validated here
        if _is_grid(plain):  # the engine's, in memory (the check's plan)
            from antiamp.sweeps.blocks import run_grid

            ds = run_grid(grid_config(plain), cells_per_block=GRID_BLOCK)
        else:
            base, eqc, _ = (checked[1] if checked and checked[0] == plain
                            else solve_config(plain))
            ds = solve_cells(base, eqc, [base], (), (), [])
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
