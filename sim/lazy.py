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
import sys


class _LazyModule:
    __slots__ = ("_name", "_module")

    def __init__(self, name: str):
        self._name = name
        self._module = None

    def _load(self):
        if self._module is None:
            module = importlib.import_module(self._name)
            if self._name == "xarray":
                defer_dask_type_check()
            self._module = module
        return self._module

    def __getattr__(self, attr: str):
        # Read on every use of an attribute (``special.ndtr`` in a solver's inner loop:
        # hundreds a cell), so the loaded module is taken without a further call.
        module = self._module
        return getattr(module if module is not None else self._load(), attr)

    def __dir__(self):
        return dir(self._load())

    def __repr__(self) -> str:
        state = "loaded" if self._module is not None else "not loaded yet"
        return f"<lazy module {self._name!r} ({state})>"


def lazy(name: str):
    """A stand-in for the module ``name`` that imports it on first attribute access."""
    return _LazyModule(name)


class _DaskArrayIfLoaded(type):
    """``isinstance(x, DaskArray)`` without importing dask: an object can only be a
    dask array once ``dask.array`` has been imported (by whoever made it)."""

    def __instancecheck__(cls, obj) -> bool:
        da = sys.modules.get("dask.array")
        return da is not None and isinstance(obj, da.Array)

    def __subclasscheck__(cls, sub) -> bool:
        da = sys.modules.get("dask.array")
        return da is not None and issubclass(sub, da.Array)


class DaskArray(metaclass=_DaskArrayIfLoaded):
    """Stands for ``dask.array.Array`` in xarray's duck-array checks (see below)."""


def defer_dask_type_check() -> None:
    """Keep xarray from importing dask for a run that never uses dask.

    xarray checks every new Variable's data against dask's array type
    (``as_compatible_data`` -> ``array_type("dask")``), and finding that type
    imports ``dask.array`` (with scipy.fft): about 0.35 s of a single-cell run that
    never touches dask.  xarray caches what it found per module name; this fills
    that cache for "dask" with an entry whose type answers the same isinstance
    checks (true exactly for dask arrays, which cannot exist before dask.array is
    imported) and whose module and version are looked up when first asked for.
    xarray's ``is_dask_collection`` (which imports ``dask.base``) is likewise
    answered False while dask is not imported.

    Written by hand because xarray offers no switch for it.  Its internals are
    checked first: with any other layout (a later xarray) nothing is changed and
    xarray finds dask as before.  An entry already there (dask already looked up)
    is kept.
    """
    try:
        from xarray.namedarray import pycompat
    except ImportError:  # pragma: no cover - another xarray layout
        return
    cache = getattr(pycompat, "_cached_duck_array_modules", None)
    base = getattr(pycompat, "DuckArrayModule", None)
    if not isinstance(cache, dict) or base is None or "dask" in cache:
        return

    class _DeferredDask(base):
        type = (DaskArray,)

        def __init__(self):  # no import here: what the base class's would do
            pass

        @property
        def module(self):
            try:
                return importlib.import_module("dask")
            except ImportError:
                return None

        @property
        def available(self) -> bool:
            return self.module is not None

        @property
        def version(self):
            from packaging.version import Version

            m = self.module
            return Version(m.__version__ if m is not None else "0.0.0")

    cache.setdefault("dask", _DeferredDask())
    # The same for xarray's is_dask_collection, which imports dask.base (with dask's
    # config, widgets and psutil, about 0.1 s) to answer it: no object is a dask
    # collection before dask is imported.  Replaced wherever xarray holds it.
    try:
        from xarray.namedarray import utils as nutils
    except ImportError:  # pragma: no cover - another xarray layout
        return
    original = getattr(nutils, "is_dask_collection", None)
    if original is None or getattr(original, "_antiamp_deferred", False):
        return

    def is_dask_collection(x):
        return "dask" in sys.modules and original(x)

    is_dask_collection._antiamp_deferred = True
    is_dask_collection.__doc__ = original.__doc__
    for name, mod in list(sys.modules.items()):
        if name.split(".")[0] == "xarray" and getattr(mod, "is_dask_collection", None) is original:
            mod.is_dask_collection = is_dask_collection
