"""antiamp: a numerical laboratory for AI-oversight protocols (seed 000 and relatives).

Public API::

    import antiamp
    ds = antiamp.simulate({"model": {"rho": 0.3}, "judge": {"kind": "logit", "kappa": 2}})
    th = antiamp.theory({"model": {"rho": 0.3}})
"""

import os as _os

from ._version import __version__

# The compiled kernels' threads (numba's OpenMP layer) sleep, not spin, when they wait:
# a thread that finishes its share early, or waits for the next kernel, would
# otherwise keep its core busy while another process (a second dask worker, the
# test workers, anything else on a shared machine) needs it.  Measured on 2 cores
# (benchmarks/bench_threads.py, against the runtime's default): two processes of
# kernels at once 0.67x the wall time and 0.63x the CPU, one alone 0.98x and 0.77x.
# Set before the OpenMP runtime loads (at the first parallel kernel); a value the
# user set is kept.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Light at import (the commands answer --help and bad input before numba, xarray or
# scipy load): the config classes here, everything else on first use.
from .config import Config, ConfigError, JudgeConfig, ModelConfig, RunConfig, WelfareConfig, to_config  # noqa: E402


def theory(cfg=None):
    """Closed forms of one scenario of the config's model (default: the seed-000 game),
    for a model that declares them (``Model.theory``)."""
    from .registry import get, model_of

    model = get(model_of(cfg))
    if model.theory is None:
        raise ConfigError(f"model {model.name} has no closed forms of its own "
                          f"(antiamp.simulate gives its exact values beside the simulated ones)")
    return model.theory(cfg)


def simulate(cfg=None, **kwargs):
    """One cell of any registered model (``model.name``; default the baseline).

    Every model returns its own Dataset for the cell (see ``antiamp.models``); the
    default model's has dimension ``protocol`` and every metric with ``_se`` and
    ``_exact`` (the result schema, :mod:`antiamp.schema`).  A model with a one-cell
    path of its own (``Model.run_cell``) runs
    through it (``kwargs`` go to it); the others run one cell through the engine.
    """
    from .registry import to_model_config

    _one_cell(cfg)
    return simulate_validated(*to_model_config(cfg), **kwargs)


def _one_cell(cfg) -> None:
    """ConfigError for a config that asks :func:`simulate` for a grid (``sweep.axes``
    or a design), which one cell would silently leave out."""
    from collections.abc import Mapping

    sw = cfg.get("sweep") if isinstance(cfg, Mapping) else getattr(cfg, "sweep", None)
    if sw is None:
        return
    axes, design = ((sw.get("axes"), sw.get("design")) if isinstance(sw, Mapping)
                    else (getattr(sw, "axes", None), getattr(sw, "design", None)))
    if axes or design not in (None, "grid"):
        raise ConfigError("sweep.axes: antiamp.simulate runs one cell and would leave the "
                          "grid out; a grid is antiamp.sweep(cfg) (in memory) or "
                          "antiamp.sweep(cfg, store=PATH) (resumable)")


def simulate_validated(model, c, **kwargs):
    """One cell of ``model`` whose config ``c`` is already validated (by
    :func:`antiamp.registry.to_model_config`): through the model's one-cell path, or
    one cell of ``run_cells`` for a model without one
    (:func:`antiamp.sweeps.blocks.cell_dataset`)."""
    from .sweeps.blocks import cell_dataset

    return cell_dataset(model, c, **kwargs)


def sweep(cfg, store=None, *, client=None, progress=None, log=print):
    """A grid (``sweep.axes``) of any registered model.

    Without ``store`` the grid is computed in memory (blocks on ``client`` if
    given) and returned; with ``store`` (a path) it runs resumably into that Zarr
    store, through the executor of ``cfg['executor']`` unless ``client`` is
    given, and the opened store is returned.
    """
    import dataclasses
    from collections.abc import Mapping

    if cfg is not None and not isinstance(cfg, Mapping) and not dataclasses.is_dataclass(cfg):
        from .config import ConfigError

        raise ConfigError(f"a config is a dict of sections, a DictConfig or a config object, "
                          f"not {type(cfg).__name__} ({str(cfg)[:80]})")
    if store is None:
        from .sweeps.blocks import run_grid

        return run_grid(cfg, client=client, progress=progress)
    from pathlib import Path

    from .sweeps.blocks import config_dict
    from .sweeps.engine import run_sweep

    d = config_dict(cfg)
    d["sweep"] = {**(d.get("sweep") or {}), "store": str(Path(store).resolve())}
    return run_sweep(d, client=client, progress=progress, log=log)


def solve(cfg=None):
    """Every equilibrium of the evidence game with certificates, for one cell or a
    grid (``sweep.axes``): the equilibrium model's run, as :func:`simulate` and
    :func:`sweep` run any model."""
    import dataclasses
    from collections.abc import Mapping

    if cfg is not None and not isinstance(cfg, Mapping) and not dataclasses.is_dataclass(cfg):
        return simulate(cfg)  # the same refusal as any model's
    from .sweeps.blocks import config_dict

    d = config_dict(cfg)  # a dict, a DictConfig or a config object, as a plain dict
    d["model"] = {**(d.get("model") or {}), "name": "equilibrium"}
    return sweep(d) if (d.get("sweep") or {}).get("axes") else simulate(d)


def __getattr__(name):  # solvers, models and extensions on first use (PEP 562)
    if name in ("equilibrium", "fixedpoint", "extended", "models", "registry", "plotting",
                "estimate"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'antiamp' has no attribute {name!r}")


__all__ = [
    "Config", "ConfigError", "JudgeConfig", "ModelConfig", "RunConfig", "WelfareConfig",
    "simulate", "sweep", "solve", "theory", "to_config", "models", "estimate", "__version__",
]
