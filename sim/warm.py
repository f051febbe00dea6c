"""``antiamp warm``: compile every kernel into numba's on-disk cache, once, after install.

The kernels are compiled on their first call and cached beside their source (or
in ``NUMBA_CACHE_DIR``); without this step a new user's first run of each model
pays 5 to 20 seconds of compilation.  Warming runs one tiny cell of every model
(and the multi-cell and transcript paths), each in its own process, on all
cores: each call compiles the kernel for exactly the argument types that real
runs use, so later runs load it from the cache.  Results are not kept.
"""

from __future__ import annotations

import os
import sys
import time


def runs(models=None) -> list:
    """``(what, config)`` of the runs that reach every kernel with real argument types:
    the examples (``Model.examples``) of every registered model, built-in or
    installed, or of the ``models`` named."""
    from .registry import get, names

    return [run for name in (names() if models is None else models)
            for run in get(name).examples]


def _one(item) -> tuple:
    """(what, seconds, error or None) of one warming run."""
    what, cfg = item
    t0 = time.perf_counter()
    if cfg is None:  # the store's checksum (kernels/digest.py), not a model's kernel
        from antiamp.kernels import digest

        digest.warm()
        return what, time.perf_counter() - t0, None
    cfg = {**cfg, "run": {**cfg.get("run", {}), "progress": False}}
    try:
        import antiamp

        if "sweep" in cfg:
            antiamp.sweep(cfg, progress=False)
        elif "export" in cfg:
            from antiamp.transcripts import records

            c = antiamp.to_config({k: v for k, v in cfg.items() if k != "export"})
            records(c, cfg["export"]["n_instances"])
        else:
            antiamp.simulate(cfg)
    except OSError:
        raise
    except Exception as exc:  # reported, and the other kernels still warm
        return what, time.perf_counter() - t0, f"{type(exc).__name__}: {exc}"
    return what, time.perf_counter() - t0, None


def warm(workers: int | None = None, log=print, models=None) -> float:
    """Compile every kernel (in ``workers`` processes; default all cores) of every
    model, or of the ``models`` named; the wall time."""
    from concurrent.futures import ProcessPoolExecutor

    workers = workers or os.cpu_count() or 1
    t0 = time.perf_counter()
    todo = runs(models) + ([("store checksums", None)] if models is None else [])
    which = "every model" if models is None else f"model {', '.join(models)}"
    log(f"antiamp warm: compiling the kernels of {which} ({len(todo)} runs, "
        f"{workers} processes); later runs load them from the cache")
    failed = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for what, dt, err in pool.map(_one, todo):
            log(f"  {what:<26} {dt:6.1f} s" + (f"  FAILED: {err}" if err else ""))
            if err:
                failed.append(what)
    total = time.perf_counter() - t0
    if failed:
        raise RuntimeError(f"could not compile: {', '.join(failed)}")
    log(f"antiamp warm: done in {total:.1f} s")
    return total


def main(argv: list) -> None:
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.strip().split("\n\n")[0] + "\n\nusage: antiamp warm [MODEL ...]\n\n"
              "Without MODEL, every registered model (built-in or installed); a model "
              "without examples (Model.examples) has nothing to warm.")
        return
    from .registry import names

    unknown = [a for a in argv if a not in names()]
    if unknown:
        print(f"antiamp warm: error: MODEL must be a registered model ({', '.join(names())}), "
              f"got {' '.join(unknown)}", file=sys.stderr)
        raise SystemExit(2)
    try:
        warm(models=argv or None)
    except RuntimeError as exc:
        print(f"antiamp warm: error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    except OSError as exc:
        from .output import describe_os_error

        print(f"antiamp warm: error: {describe_os_error(exc)} (the kernels' cache could not be "
              "written; runs still work and compile on first use)", file=sys.stderr)
        raise SystemExit(1) from None
