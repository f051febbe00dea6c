"""The model registry: ``antiamp.models.names()``, ``get(name)``, ``register(model)``.

Built-in models (one module each in this package): ``baseline``, ``equilibrium``,
``signals`` (with judge attention, ``effort.*``), ``portfolio``, ``panel``,
``messages``, ``options``.  Third-party packages add theirs through the
``antiamp.models`` entry-point group (see :mod:`antiamp.registry`).
"""

from ..registry import Model, get, names, register, to_model_config

__all__ = ["Model", "get", "names", "register", "to_model_config"]
