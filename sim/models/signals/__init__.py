"""Correlated signals, shared blind spots and endogenous judge attention (seed 000,
section 5).  Adds signals.*, effort.*, equilibrium.*.

The package is the model: ``config`` (its settings, light), ``core`` (its
numerics), ``model`` (the registry entry, its table and figures).  Importing the
package loads only the settings; ``MODEL`` loads the rest on first use.
"""

from .config import EXAMPLES, SECTIONS  # noqa: F401


def __getattr__(name):
    if name == "MODEL":
        from .model import MODEL

        return MODEL
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
