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
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from antiamp.sweeps.spec import SweepSpec

from .cli import compose_overrides, guarded_main, recorded
from .config import ConfigError
from .extended import ExtConfig
from .plotting import axes_of
from .registry import get

log = logging.getLogger("antiamp")



@dataclass
class ExtCLIConfig(ExtConfig):
    #: Which section-5 model (the older spelling of ``model=<name>``): ``signals``,
    #: ``portfolio``, ``panel``, ``messages`` or ``options``.
    extension: str = "signals"
    #: Optional grid: ``sweep.axes`` with the syntax of antiamp-sweep.
    sweep: SweepSpec = field(default_factory=SweepSpec)


def _schema():
    node = OmegaConf.structured(ExtCLIConfig)
    OmegaConf.set_struct(node.sweep.axes, False)
    return node




def setup() -> None:
    """Register the command's schema with Hydra (on first need)."""
    from .cli import register_schema

    register_schema("antiamp_ext_schema", _schema)


def prevalidate(args: list[str]) -> None:
    """Compose the config from ``args`` and validate it (a grid: every cell), touching
    no file; the run takes what this validated."""
    from .extended import check_extended

    cfg = compose_overrides(args, "ext_config")
    if cfg is not None:
        _CHECKED[:] = [cfg, check_extended(cfg)]


#: The config the check of a single run composed (plain) and, for one cell, its model
#: and validated config (a grid's plan the engine keeps): the run validates nothing again.
_CHECKED: list = []


def _run(cfg: DictConfig) -> None:
    from antiamp.output import write_zarr_atomic

    from .extended import solve_extended

    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    plain = OmegaConf.to_container(cfg, resolve=True)
    checked, _CHECKED[:] = list(_CHECKED), []
    try:  # the check's when it checked this config (a single run), else validated here
        ds = solve_extended(plain, checked=checked[1] if checked and checked[0] == plain
                            else None)
    except ConfigError as exc:
        log.error("invalid configuration: %s", exc)
        raise SystemExit(2) from None
    out = Path(HydraConfig.get().runtime.output_dir)
    dims = axes_of(ds)
    model = get(ds.attrs["model"])
    if model.name != "signals":
        fmt, plot = model.format_table, model.figures
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
        print(model.format_table(ds))
        if ds.attrs["solver_report"] != "no issues":
            print("\nsolver report:\n" + ds.attrs["solver_report"])
    store = write_zarr_atomic(ds, out / "extension.zarr")
    print(f"\nwrote {store}")
    if dims:
        for p in model.figures(ds, out / "extension"):
            print(f"wrote {p}")


_hydra_main = hydra.main(version_base="1.3", config_path="pkg://antiamp.conf",
                         config_name="ext_config")(recorded(_run))


def _study_to_sweep(args: list[str]) -> list[str]:
    """``study=<name>`` is the older spelling of ``sweep=<name>`` (the named sweeps)."""
    from importlib.resources import files

    named = sorted(p.name[:-5] for p in files("antiamp.conf").joinpath("sweep").iterdir()
                   if p.name.endswith(".yaml"))
    out = []
    for a in args:
        if a.startswith("study="):
            name = a.split("=", 1)[1]
            if name not in named:
                raise ConfigError(f"study={name}: no named study (sweep) {name!r}; the named "
                                  f"sweeps are {', '.join(named)}")
            a = f"sweep={name}"
        out.append(a)
    return out


def main() -> None:
    import sys

    try:
        sys.argv[1:] = _study_to_sweep(sys.argv[1:])
    except ConfigError as exc:
        print(f"antiamp-ext: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    guarded_main("antiamp-ext", prevalidate, _hydra_main, help_text=help_text, setup=setup)


def help_text(args: list) -> str:
    from .helptext import render

    return render(
        "antiamp-ext", "the section-5 extensions (the older command; antiamp model=<name> "
        "and antiamp-sweep run the same models): correlated signals and judge effort, or "
        "extension=portfolio|panel|messages|options.",
        ["antiamp-ext signals.eta=0.6 signals.phi=0.3 model.c_e=0.4 judge.b=0.7",
         "antiamp-ext effort.enabled=true judge=logit effort.lam_gain=3 effort.c_J=0.05",
         "antiamp-ext study=diversity          (a named study: grid, store, figures)"],
        ExtCLIConfig, args, "ext_config")


if __name__ == "__main__":
    main()
