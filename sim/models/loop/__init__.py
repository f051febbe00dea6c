"""Closed-loop oversight: the labels oversight endorses train the model, round after
round (seed 000, sections 1-2 and 7).  Adds loop.*; model.p sets e_0 = 1 - p and
model.rho the starting fabrication rate.

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
