"""The compiled kernels (numba, cached on disk: ``antiamp warm`` fills the cache)."""

import weakref


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
    _rebuild_environments_lightly()


def _rebuild_environments_lightly() -> None:
    """Read a cached kernel's environments without importing numba's implementation
    modules for them.

    A cached kernel carries an environment (its module's globals and constants) for
    every function compiled into it, numba's own implementations included (``np.sum``
    from ``numba.np.arraymath``, ``np.empty`` from ``numba.np.arrayobj``); numba
    rebuilds each by importing its module for the globals.  Importing
    ``numba.np.arraymath`` checks for BLAS by importing ``scipy.linalg`` (with
    ``numpy.testing`` and ``numpy.f2py``): about a third of a second of CPU in a
    process that only runs a cached kernel.  Compiled code in nopython mode, which
    every numba implementation is, reads only an environment's constants, never its
    globals (object mode does, and no kernel here uses it), so for a numba module not
    imported yet the environment is rebuilt with its constants and a globals dict
    naming the module (what caching reads of it); the module is imported when
    something first needs it, as before.  Environments of any other module are
    rebuilt as numba does.

    Written by hand because numba offers no switch for it; its internals are checked
    first, and with any other layout nothing is changed.
    """
    import sys

    try:
        from numba.core import environment
    except ImportError:  # pragma: no cover - another numba layout
        return
    original = getattr(environment, "_rebuild_env", None)
    if original is None or getattr(original, "_antiamp_light", False) or not (
            hasattr(environment, "lookup_environment")
            and isinstance(getattr(environment.Environment, "_memo", None),
                           weakref.WeakValueDictionary)):
        return  # pragma: no cover - another numba layout

    def _rebuild_env(modname, consts, env_name):
        env = environment.lookup_environment(env_name)
        if env is not None:
            return env
        if modname in sys.modules or not str(modname).startswith("numba."):
            return original(modname, consts, env_name)
        env = environment.Environment({"__name__": modname})
        env.consts[:] = consts
        env.env_name = env_name
        environment.Environment._memo[env_name] = env
        return env

    _rebuild_env._antiamp_light = True
    environment._rebuild_env = _rebuild_env


load_cached_kernels_lightly()
