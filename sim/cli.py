"""The ``antiamp`` command: one scenario of the baseline model, Hydra-configured.

    antiamp model.rho=0.4 judge=logit judge.kappa=2 run.n_instances=100000000

Overrides are composed and validated *before* Hydra creates its run directory,
so a bad value exits with status 2, a message naming the field and its range,
and no output.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from .config import Config, ConfigError, to_config

log = logging.getLogger("antiamp")

CONFIG_MODULE = "conf"
ConfigStore.instance().store(name="antiamp_schema", node=Config)


def _plain_overrides(args: list[str]) -> list[str] | None:
    """Overrides of a single run (None when Hydra flags such as -m or --help are present)."""
    if any(a.startswith("-") for a in args):
        return None
    return [a for a in args if not a.lstrip("+~").startswith("hydra")]


def compose_overrides(args: list[str], config_name: str):
    """The config ``config_name`` composed with the command-line overrides, as a plain
    container, without starting a Hydra run (None when Hydra flags are present)."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    overrides = _plain_overrides(args)
    if overrides is None:
        return None
    with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3"):
        cfg = compose(config_name=config_name, overrides=overrides)
    return OmegaConf.to_container(cfg, resolve=True)


def prevalidate(args: list[str], config_name: str = "config") -> None:
    """Compose the config from ``args`` and validate it, touching no file."""
    cfg = compose_overrides(args, config_name)
    if cfg is not None:
        to_config(cfg)


def describe_error(exc: BaseException) -> str:
    """The exception's message followed by its causes (Hydra wraps the useful part)."""
    parts, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        msg = str(exc).strip()
        if msg and msg not in parts and "$VALUE" not in msg:
            parts.append(msg)
        exc = exc.__cause__ or exc.__context__
    return "\n  caused by: ".join(parts)


def _run(cfg: DictConfig) -> None:
    from . import core, output

    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    try:
        c = to_config(cfg)
        ds = core.simulate(c)
    except ConfigError as exc:
        log.error("invalid configuration: %s", exc)
        raise SystemExit(2) from None
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    print(output.format_table(ds))
    store = output.write_zarr_atomic(ds, out_dir / "results.zarr")
    print(f"\nwrote {store}")
    if c.run.figure:
        fig = output.plot_results(ds, out_dir / "results.png")
        print(f"wrote {fig}")
    if c.export.n_instances:
        from .transcripts import records, write_records

        path = Path(c.export.path)
        path = path if path.is_absolute() else out_dir / path
        df = records(c, c.export.n_instances, n_judges=c.export.n_judges,
                     stratum=c.export.stratum)
        print(f"wrote {write_records(df, path)} ({len(df):,} rows)")


_hydra_main = hydra.main(version_base="1.3", config_path=f"pkg://{CONFIG_MODULE}", config_name="config")(_run)


def guarded_main(prog: str, check, hydra_main, errors: tuple = ()) -> None:
    """Validate the command line with ``check`` (no file touched), then run Hydra.

    Bad input exits with status 2 and a message, before Hydra creates its run
    directory."""
    try:
        check(sys.argv[1:])
    except (ConfigError, HydraException, OmegaConfBaseException, *errors) as exc:
        print(f"{prog}: error: {describe_error(exc)}", file=sys.stderr)
        raise SystemExit(2) from None
    hydra_main()


def main() -> None:
    guarded_main("antiamp", prevalidate, _hydra_main)


if __name__ == "__main__":
    main()
