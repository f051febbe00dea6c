"""The compiled kernels (numba, cached on disk: ``antiamp warm`` fills the cache)."""


def load_cached_kernels_lightly() -> None:
    """Load a kernel from numba's on-disk cache without importing every lowering
    registry of numba.

    numba's ``FunctionCache.load_overload`` refreshes the target context before it
    reads a cached kernel, and the refresh imports every module of lowering
    implementations (``numba.np.arraymath``, ``numba.np.linalg``, the typed
    containers, ...): about 0.2 s of every process that runs a kernel, although a
    kernel read from the cache is machine code that only needs numba's runtime
    (NRT) initialised.  This loads it with the runtime initialised and nothing
    else.  A cache miss compiles as before, and compilation refreshes the context
    itself.

    Written by hand because numba offers no switch for it.  Its internals are
    checked first: with any other layout (a later numba) nothing is changed.
    """
    try:
        from numba.core import caching
        from numba.core.runtime import rtsys
    except ImportError:  # pragma: no cover - another numba layout
        return
    cls = getattr(caching, "FunctionCache", None)
    if cls is None or getattr(cls.load_overload, "_antiamp_light", False):
        return
    if not (hasattr(cls, "_load_overload") and hasattr(cls, "_guard_against_spurious_io_errors")
            and hasattr(rtsys, "initialize")):
        return  # pragma: no cover - another numba layout

    def load_overload(self, sig, target_context):
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)
        return None  # the guard swallowed an I/O error: compile instead

    load_overload._antiamp_light = True
    cls.load_overload = load_overload


load_cached_kernels_lightly()
