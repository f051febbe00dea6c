"""The model registry: ``antiamp.models.names()``, ``get(name)``, ``register(model)``.

Each built-in model is a package of its own in this folder (``<name>/``: its
settings in ``config.py``, its numerics in ``core.py``, its registry entry, table
and figures in ``model.py``), found by a scan; ``antiamp --help`` lists them.
Third-party packages add theirs through the ``antiamp.models`` entry-point group
(see :mod:`antiamp.registry`); :func:`antiamp.testing.check_model` is the
conformance check every model passes.
"""

from ..registry import Model, get, names, register, to_model_config

__all__ = ["Model", "get", "names", "register", "to_model_config"]
