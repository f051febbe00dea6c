"""``antiamp-sweep``: a Hydra-configured grid of any registered model, one Zarr store.

    antiamp-sweep sweep=amp_gap
    antiamp-sweep 'sweep.axes.model.rho=[0.1,0.4,0.8]' 'sweep.axes.judge.b=[0.2,0.5,0.9]'
    antiamp-sweep model=signals 'sweep.axes.signals.eta=[0,0.3,0.6]' judge.b=0.7
    antiamp-sweep sweep=diversity executor=distributed executor.address=tcp://host:8786

The whole sweep (every cell) is validated, and the target store checked, before
Hydra creates its run directory: bad input exits with status 2 and writes
nothing.  Rerunning the same command resumes an interrupted sweep.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from antiamp import cli as antiamp_cli
from antiamp.cli import check_pins, compose_overrides, guarded_main, recorded
from antiamp.config import ConfigError
from antiamp.output import OutputError, describe_os_error

from .driver import EngineError
from .executors import ExecutorError, check_reachable
from .engine import SweepError, block_strategy, resolve_store, run_sweep, store_path, stored_plan
from .spec import make_plan, sweep_schema_node

log = logging.getLogger("antiamp")


def setup() -> None:
    """Register the command's schema with Hydra (on first need)."""
    antiamp_cli.register_schema("antiamp_sweep_schema", sweep_schema_node)


def prevalidate(args: list[str]) -> None:
    run_dir_override = [a for a in args if a.startswith("hydra.run.dir=")]
    cfg = compose_overrides(args, "sweep_config", extra=run_dir_override, hydra_cfg=True)
    if cfg is None:
        return
    check_pins(args, cfg)
    from .budget import check_budget

    check_budget(cfg)  # before the grid is built
    antiamp_cli.say_estimate(cfg)
    run_dir = Path(cfg["hydra"]["run"]["dir"])
    cfg = {k: v for k, v in cfg.items() if k != "hydra"}
    multirun = antiamp_cli.CHECKING_MULTIRUN  # job directories are known only per job
    from .metadata import rebuildable

    # every cell, and what the cells' configs name (data files): before a run directory
    plan = make_plan(cfg)
    store = resolve_store(plan, run_dir)
    plan = stored_plan(plan, store)  # an earlier default's blocks: the store's kept
    s = block_strategy(plan)
    # A store of this sweep whose metadata the run will rebuild is checked then.
    if not multirun and not rebuildable(store, s.fingerprint):
        s.state(store, run_dir)
    if not multirun:  # one lock per store: not a link, and not held by another run
        from .lockpath import probe

        probe(store_path(cfg["sweep"]["store"], run_dir), SweepError, "sweep")
        writable(store_path(cfg["sweep"]["store"], run_dir))
    check_reachable(plan.executor)


def writable(store: Path) -> None:
    """SweepError, before a run directory is made, when the store's folder (or the
    nearest one that exists) cannot be written: a read-only location."""
    up = Path(os.path.abspath(store)).parent
    while not up.exists() and up != up.parent:
        up = up.parent
    if up.is_dir() and not os.access(up, os.W_OK | os.X_OK):
        raise SweepError(f"sweep.store {store}: {up} is not writable (permission denied); "
                         "choose a store in a folder you may write")


def _run(cfg: DictConfig) -> None:
    for noisy in ("matplotlib", "distributed", "distributed.scheduler", "distributed.worker",
                  "distributed.core", "distributed.nanny", "distributed.http.proxy"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    plain = OmegaConf.to_container(cfg, resolve=True)
    try:
        if HydraConfig.get().mode.name == "MULTIRUN":  # each job checks its own overrides
            check_pins(list(HydraConfig.get().overrides.task), plain)
        store = store_path(plain["sweep"]["store"], out_dir)  # run_sweep validates the grid
        ds = run_sweep(cfg, out_dir, log=print, dask=False)  # sizes and figures only
    except (ConfigError, SweepError, EngineError, OutputError) as exc:
        log.error("%s", exc)
        raise SystemExit(2) from None
    except ExecutorError as exc:  # no workers to be had: the finished blocks stay
        print(f"antiamp-sweep: error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        antiamp_cli.interrupted(
            f"\nantiamp-sweep: interrupted; the finished blocks are saved ({store}); "
            "rerun the same command to resume")
    except OSError as exc:  # disk full, permissions: the finished blocks stay resumable
        kept = any(os.path.lexists(p) for p in (store, f"{store}.partial"))
        print(f"antiamp-sweep: error: {describe_os_error(exc)}; "
              + (f"{store} is marked incomplete and keeps its finished blocks: rerun the same "
                 "command to resume once the cause is fixed" if kept else
                 "nothing of the store was written"), file=sys.stderr)
        raise SystemExit(1) from None
    print(f"wrote {store}")
    print(f"dimensions: {dict(ds.sizes)}")
    if not cfg.sweep.plot:
        return
    if cfg.sweep.design in ("saltelli", "morris"):
        from antiamp.sensitivity import plot_indices

        for p in plot_indices(ds, out_dir / "sensitivity",
                              list(cfg.sweep.plot_vars) or ["amp", "acc", "amp_gap", "welfare"]):
            print(f"wrote {p}")
    from .plot import sweep_figures

    # the plan of the run (kept): its model's figures
    for p in sweep_figures(make_plan(plain).model, ds, store, out_dir,
                           list(cfg.sweep.plot_vars)):
        print(f"wrote {p}")


_hydra_main = hydra.main(version_base="1.3", config_path="pkg://antiamp.conf",
                         config_name="sweep_config")(recorded(_run))


def help_text(args: list) -> str:
    from antiamp.helptext import model_sections, render

    from .spec import run_schema

    return render(
        "antiamp-sweep", "a grid (or a design) of cells of a registered model, run in blocks "
        "(in this process, on local workers, a dask cluster or SLURM) into one resumable, "
        "checksummed Zarr store, with figures.",
        ["antiamp-sweep sweep=amp_gap                      (a named sweep)",
         "antiamp-sweep 'sweep.axes.model.rho=[0.1,0.4,0.8]' 'sweep.axes.judge.b=[0.2,0.9]'",
         "antiamp-sweep model=signals 'sweep.axes.signals.eta=[0,0.3,0.6]'",
         "antiamp-sweep sweep=jury executor=local executor.n_workers=2",
         "antiamp-sweep model=panel --help                 (the fields that model reads)"],
        run_schema(), args, "sweep_config",
        model_sections(args, "sweep_config", ("sweep", "executor")),
        ["Every cell is validated and the target store checked before anything is written;",
         "rerunning the same command resumes an interrupted sweep (antiamp-check STORE",
         "verifies a store)."])


def main() -> None:
    guarded_main("antiamp-sweep", prevalidate, _hydra_main, (SweepError, EngineError, OutputError),
                 help_text=help_text, setup=setup, config_name="sweep_config")


if __name__ == "__main__":
    main()
