"""Every protocol on one task (seeds 000-003): consultancy, debate and juries, CopMAD
and ColMAD, FOAM mediation (dissent memo against a monolithic summary), FactHarbor's
fixed multiplier and Climinator's adaptive rounds, each run by its own model at the
task's mapped parameters (model.p, model.rho, model.pi, one logit judge), placed on
one Amp-vs-cost scale.  Adds compare.jury_size; reads colmad.*, mediation.* and
redeliberation.* for what only their protocols have.

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
