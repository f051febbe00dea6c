"""``antiamp-sweep``: a Hydra-configured sweep written to one Zarr store.

    antiamp-sweep sweep=amp_gap
    antiamp-sweep 'sweep.axes.model.rho=[0.1,0.4,0.8]' 'sweep.axes.judge.b=[0.2,0.5,0.9]'
    antiamp-sweep sweep=jury executor=distributed executor.address=tcp://host:8786

The whole sweep (every cell) is validated, and the target store checked, before
Hydra creates its run directory: bad input exits with status 2 and writes
nothing.  Rerunning the same command resumes an interrupted sweep.
"""

from __future__ import annotations

import logging
from pathlib import Path

import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from sim.cli import _plain_overrides, guarded_main
from sim.config import ConfigError

from .engine import SweepError, check_store, resolve_store, run_sweep
from .spec import make_plan, sweep_schema_node

log = logging.getLogger("antiamp")
ConfigStore.instance().store(name="antiamp_sweep_schema", node=sweep_schema_node())


def prevalidate(args: list[str]) -> None:
    from hydra import compose, initialize_config_module

    overrides = _plain_overrides(args)
    if overrides is None:
        return
    run_dir_override = [a for a in args if a.startswith("hydra.run.dir=")]
    with initialize_config_module(config_module="conf", version_base="1.3"):
        cfg = compose(config_name="sweep_config", overrides=overrides + run_dir_override,
                      return_hydra_config=True)
    run_dir = Path(OmegaConf.select(cfg, "hydra.run.dir"))
    plan = make_plan({k: OmegaConf.to_container(cfg[k], resolve=True)
                      for k in cfg if k != "hydra"})
    check_store(plan, resolve_store(plan, run_dir))


def _run(cfg: DictConfig) -> None:
    for noisy in ("matplotlib", "distributed"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        ds = run_sweep(cfg, out_dir, log=print)
    except (ConfigError, SweepError) as exc:
        log.error("%s", exc)
        raise SystemExit(2) from None
    store = resolve_store(make_plan(cfg), out_dir)
    print(f"wrote {store}")
    print(f"dimensions: {dict(ds.sizes)}")
    if cfg.sweep.plot:
        from .plot import plot_store

        for p in plot_store(store, list(cfg.sweep.plot_vars) or None, out_dir=out_dir):
            print(f"wrote {p}")


_hydra_main = hydra.main(version_base="1.3", config_path="pkg://conf",
                         config_name="sweep_config")(_run)


def main() -> None:
    guarded_main("antiamp-sweep", prevalidate, _hydra_main, (SweepError,))


if __name__ == "__main__":
    main()
