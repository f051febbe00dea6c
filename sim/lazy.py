"""Modules loaded on first use, so that the commands start fast.

``xr = lazy("xarray")`` at the top of a module stands for ``import xarray as xr``
but imports xarray only when an attribute (``xr.Dataset``) is first read.  The
commands answer ``--help`` and bad input from the composed config alone; numba,
xarray, scipy and matplotlib then load only for a run that needs them.

A proxy object rather than :class:`importlib.util.LazyLoader`: it never puts a
half-initialised module into ``sys.modules`` (what other importers would see) and
it is safe when worker threads touch it first (the import lock serialises the
one real import).
"""

from __future__ import annotations

import importlib


class _LazyModule:
    __slots__ = ("_name", "_module")

    def __init__(self, name: str):
        self._name = name
        self._module = None

    def _load(self):
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return self._module

    def __getattr__(self, attr: str):
        return getattr(self._load(), attr)

    def __dir__(self):
        return dir(self._load())

    def __repr__(self) -> str:
        state = "loaded" if self._module is not None else "not loaded yet"
        return f"<lazy module {self._name!r} ({state})>"


def lazy(name: str):
    """A stand-in for the module ``name`` that imports it on first attribute access."""
    return _LazyModule(name)
