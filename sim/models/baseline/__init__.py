"""The seed-000 persuasion game (sections 3-4): consultancy and debate on the same
instances, every metric with its closed form.  Fields: model.*, judge.*, protocol.*,
welfare.*, run.* (:mod:`antiamp.config`).

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
