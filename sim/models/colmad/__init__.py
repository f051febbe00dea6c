"""Error detection by debate (seed 001): collaborative (ColMAD) against competitive
(CopMAD) debate and a single detector.  Adds colmad.*; needs judge=logit (the judge
of disagreements; judge.mu > 0 leans toward "error").

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
