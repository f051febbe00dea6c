"""Adaptive re-deliberation of fact-check verdicts (seed 003): FactHarbor's fixed
spread multiplier against a conditional re-reconciliation and Climinator's adaptive
rounds.  Adds redeliberation.*; model.rho is the rate at which the false side's
evidence passes verification; the judge (judge.*) is the reconciler (judge=logit
judge.mu=1.5 makes it defer to the advocates).

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
