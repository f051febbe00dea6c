"""The section-5 models through one entry point (kept for the Python API and
``antiamp-ext``): ``solve_extended(cfg)`` runs the model named by ``model.name``
(or the older key ``extension``; default ``signals``) for one cell or, with
``sweep.axes``, a grid, through the generic engine (:mod:`antiamp.sweeps.blocks`).

The models themselves live in :mod:`antiamp.models` (``signals``, ``portfolio``,
``panel``, ``messages``, ``options``); nothing here switches on their names.
"""

from __future__ import annotations

from typing import Any

from .lazy import lazy
xr = lazy("xarray")
from omegaconf import DictConfig, OmegaConf

from .config import DEFAULT_MODEL, ConfigError
from .registry import schema, to_model_config



def extensions() -> tuple:
    """The section-5 models: those that declare the shared ``equilibrium.*`` section
    beside a section of their own (found in the registry, not listed)."""
    from .registry import builtin_config, builtin_names

    return tuple(n for n in builtin_names()
                 if "equilibrium" in builtin_config(n).SECTIONS
                 and set(builtin_config(n).SECTIONS) - {"equilibrium"})


def __getattr__(name):  # the root schema includes third-party sections: built on demand
    if name == "ExtConfig":
        return schema()
    raise AttributeError(f"module 'antiamp.extended' has no attribute {name!r}")


def _normalise(cfg: Any) -> dict:
    if isinstance(cfg, DictConfig):
        cfg = OmegaConf.to_container(cfg, resolve=True)
    cfg = dict(cfg or {})
    cfg.pop("hydra", None)
    model = dict(cfg.get("model") or {})
    ext = cfg.pop("extension", None)
    name = model.get("name")
    if name in (None, DEFAULT_MODEL):
        name = ext or "signals"
    if name not in extensions():
        raise ConfigError(f"extension must be one of {', '.join(extensions())}, got {name!r}")
    cfg["model"] = {**model, "name": name}
    return cfg


#: A grid runs in memory as one block (one kernel call serves every cell of a model
#: pass); the check of a grid and its run name the same block size, so that the run
#: takes the check's plan (the engine keeps the last one) rather than validating again.
ONE_BLOCK = 10**9


def _is_grid(cfg: dict) -> bool:
    sweep = cfg.get("sweep")
    return bool(sweep and isinstance(sweep, dict) and sweep.get("axes"))


def check_extended(cfg: Any):
    """Validate a config of :func:`solve_extended` once, before anything is computed: a
    grid's plan (every cell, column by column; kept for the run), or one cell's
    ``(model, validated config)``, which :func:`solve_extended` takes as ``checked``."""
    from .registry import check_inputs

    cfg = _normalise(cfg)
    if _is_grid(cfg):
        from antiamp.sweeps.blocks import plan_grid

        plan_grid(cfg, cells_per_block=ONE_BLOCK)
        return None
    cfg.pop("sweep", None)
    cfg.pop("executor", None)
    model, c = to_model_config(cfg)
    check_inputs(model, c)
    return model, c


def to_ext_config(cfg: Any = None):
    """(validated config, SweepSpec or None) from a dict, DictConfig or config object."""
    from antiamp.sweeps.blocks import sweep_spec

    if not isinstance(cfg, (dict, DictConfig)) and cfg is not None:
        return to_model_config(cfg)[1], None
    cfg = _normalise(cfg)
    _, base = to_model_config(cfg)
    return base, (sweep_spec(cfg["sweep"]) if _is_grid(cfg) else None)


def solve_extended(cfg: Any = None, progress: bool | None = None,
                   checked: tuple | None = None) -> xr.Dataset:
    """Every equilibrium (or outcome) of a section-5 model for one cell or a grid.

    The Dataset is the model's (see :mod:`antiamp.models`): with ``sweep.axes`` its
    dimensions are the axes followed by the model's own (``protocol``,
    ``equilibrium``...).  The grid runs in memory as one block, so one kernel call
    serves every cell of a model pass.  ``checked``: one cell's ``(model, validated
    config)`` from :func:`check_extended` of this ``cfg`` (not validated again).
    """
    from antiamp.sweeps.blocks import run_cell, run_grid

    if cfg is not None and not isinstance(cfg, (dict, DictConfig)):
        from dataclasses import asdict, fields

        cfg = {f.name: asdict(getattr(cfg, f.name)) for f in fields(cfg)}
    cfg = _normalise(cfg)
    if _is_grid(cfg):
        return run_grid(cfg, progress=progress, cells_per_block=ONE_BLOCK)
    if checked is not None:
        from . import simulate_validated

        return simulate_validated(*checked)
    cfg.pop("sweep", None)
    cfg.pop("executor", None)
    return run_cell(cfg)
