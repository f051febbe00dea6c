"""Stated confidence in multi-round debate (seed 004): debaters' confidence reports
fitted to the published bets, and logit judges (judge=logit) that weigh them. Adds
confidence.*; model.p is the protagonist's accuracy, model.rho the false side's
evidence rate.

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
