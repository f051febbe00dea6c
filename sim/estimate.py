"""``antiamp-estimate`` and its API under its first name: :mod:`antiamp.estimation.estimate`
(the log wing, :mod:`antiamp.estimation`).  Every name of that module is importable
from here (``from antiamp.estimate import load_log, estimate``)."""

from __future__ import annotations

from .estimation import estimate as _impl
from .estimation.estimate import *  # noqa: F401,F403  (the public names)


def __getattr__(name: str):
    # the module's other names too (a moved module keeps its first import path)
    return getattr(_impl, name)


if __name__ == "__main__":  # python -m antiamp.estimate
    _impl.main()
