"""A bound on the total work and store size of a request, checked before anything runs.

Cells and instances per cell are each bounded on their own (``sweeps.spec.MAX_CELLS``,
``config.MAX_INSTANCES``), but not their product: 10^7 cells of 10^9 instances each
pass both.  :func:`check_budget` refuses, from the composed configuration alone (no
grid is built, no directory created), a request whose simulated instances (cells x
``run.n_instances``) exceed :data:`MAX_WORK` or whose store would exceed
:data:`MAX_STORE_BYTES`, naming the estimated time and size.  ``ANTIAMP_UNBOUNDED=1``
in the environment lifts the bound for those who mean it.

The commands that are not grids bound their work the same way, in estimated seconds
at nominal rates (:func:`check_request`): ``antiamp-design`` (its parameter draws
over every protocol, jury size and rule, and the verifying simulation) and
``antiamp-estimate`` (the structural judge's simulations and predictive draws).
"""

from __future__ import annotations

import math
import os

from antiamp.config import ConfigError

#: Most simulated instances (cells x instances of a cell, weighted by what an instance
#: of the model costs: :func:`cell_work`) of one command: about an hour at the nominal
#: throughput below (a grid estimated at ten hours, or a one-cell ColMAD run of 10^9
#: instances x 1,000 rounds, started without a word before).
MAX_WORK = 36 * 10**10
#: Most bytes of one store (estimated at :data:`BYTES_PER_CELL`).
MAX_STORE_BYTES = 20 * 2**30
#: Nominal throughput used for the time estimate (instances per second, all cores).
NOMINAL_RATE = 1e8
#: Estimated store bytes per cell (every metric with its SE and exact value, per
#: protocol, in float64, before compression).
BYTES_PER_CELL = 2048
#: Most estimated seconds of one request of a command that is not a grid: the time
#: :data:`MAX_WORK` takes at :data:`NOMINAL_RATE` (about an hour).
MAX_SECONDS = MAX_WORK / NOMINAL_RATE
#: antiamp-design: (design x parameter draw) evaluations of the closed forms a second
#: (measured 5e5 to 1.6e7/s over protocols and judges on a 2-core machine).
DESIGN_ROW_RATE = 1e6
#: antiamp-estimate --simulate: units of --n-sim a second over the structural judge's
#: and the section-6 judges' simulations together (measured about 2.3e6/s loaded).
ESTIMATE_SIM_RATE = 5e6
#: antiamp-estimate's predictive checks: (parameter draw x row) evaluations a second
#: (measured about 2.6e6/s loaded).
CHECK_DRAW_RATE = 5e6
#: The environment variable that lifts the bound.
OVERRIDE = "ANTIAMP_UNBOUNDED"
#: Most bytes of the loop's per-path arrays held in memory at once (five float64
#: series of paths x rounds per protocol).
MAX_MEMORY_BYTES = 20 * 2**30
#: Estimated seconds from which a command prints its estimate before it starts.
SAY_FROM_SECONDS = 10.0


class BudgetError(ConfigError):
    """A request over the work or store bound (exit status 2, as any bad input)."""


def _axis_count(spec) -> int | None:
    """Values of one grid axis from its spec, without making them (None: not known
    here; the sweep's own checks report a malformed spec)."""
    if isinstance(spec, (list, tuple)):
        return len(spec)
    if isinstance(spec, dict) and len(spec) == 1:
        kind, args = next(iter(spec.items()))
        if not (isinstance(args, (list, tuple)) and len(args) == 3
                and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                        and math.isfinite(v) for v in args)):
            return None
        if kind in ("linspace", "logspace", "geomspace"):
            return int(args[2]) if args[2] == int(args[2]) and args[2] >= 1 else None
        if kind == "range" and args[2] != 0:
            return max(math.ceil((args[1] - args[0]) / args[2]), 0)
    return None


def cell_count(cfg: dict) -> int | None:
    """Cells of the request in ``cfg`` (a composed configuration as a plain dict): 1 for
    a single run, the grid's product or the design's points for a sweep."""
    sweep = cfg.get("sweep")
    if not isinstance(sweep, dict):
        return 1
    axes = sweep.get("axes") or {}
    if not isinstance(axes, dict):
        return None
    specs = [v for fields in axes.values() if isinstance(fields, dict) for v in fields.values()]
    design = sweep.get("design", "grid")
    if design == "grid":
        counts = [_axis_count(v) for v in specs]
        if not counts or any(c is None for c in counts):
            return None
        return math.prod(counts)
    n = sweep.get("n_points", 64)
    if not specs or not isinstance(n, int):
        return None
    if design == "saltelli":  # as antiamp.sensitivity.n_cells
        return n * (2 * len(specs) + 2)
    if design == "morris":
        return n * (len(specs) + 1)
    return n


def _axis_mean(spec) -> float | None:
    """The mean value of one grid axis from its spec (None: not known here)."""
    import numpy as np

    try:
        if isinstance(spec, (list, tuple)):
            vals = [float(v) for v in spec]
            return sum(vals) / len(vals) if vals else None
        if isinstance(spec, dict) and len(spec) == 1:
            kind, args = next(iter(spec.items()))
            n = _axis_count(spec)
            if n is None or n < 1 or n > 10**7:
                return None
            a, b = float(args[0]), float(args[1])
            if kind == "linspace" or kind == "range":
                return (a + b) / 2 if kind == "linspace" else float(np.arange(a, b, args[2]).mean())
            if kind == "logspace":
                return float(np.logspace(a, b, n).mean())
            if kind == "geomspace":
                return float(np.geomspace(a, b, n).mean())
    except (TypeError, ValueError, OverflowError):
        return None
    return None


def _field(cfg: dict, section: str, field: str, default):
    """A size field of the request: its grid axis's mean where the grid sweeps it (a
    grid's cells take every combination, so the mean of a product of independent axes
    is the product of their means), else its value."""
    sweep = cfg.get("sweep")
    if isinstance(sweep, dict) and sweep.get("design", "grid") == "grid" \
            and not isinstance(default, str):
        axes = (sweep.get("axes") or {}) if isinstance(sweep.get("axes"), dict) else {}
        spec = (axes.get(section) or {}).get(field) if isinstance(axes.get(section), dict) \
            else None
        if spec is not None:
            m = _axis_mean(spec)
            if m is not None:
                return m
    v = (cfg.get(section) or {}).get(field, default) if isinstance(cfg.get(section), dict) \
        else default
    if isinstance(default, str):  # a choice (the loop's learner): its value, not a size
        return v if isinstance(v, str) else default
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default


def cell_work(cfg: dict) -> tuple[float, str]:
    """Instances of one cell, weighted by what an instance of the model costs against
    the baseline's (``(work, what)``, what names the sizes it counts): the model's own
    ``work`` hook (:class:`antiamp.registry.Model`; the loop's paths x rounds x
    batch, say), else ``run.n_instances``."""
    name = (cfg.get("model") or {}).get("name") if isinstance(cfg.get("model"), dict) else None
    hook = None
    if isinstance(name, str):
        from antiamp.registry import get

        try:
            hook = get(name).work
        except Exception:  # noqa: BLE001 - an unknown model: the regular checks say so
            hook = None
    if hook is not None:
        got = hook(lambda section, field, default: _field(cfg, section, field, default))
        return float(got[0]), str(got[1])
    n = _field(cfg, "run", "n_instances", 0)
    return n, f"{n:,.0f} instances"


def memory_bytes(cfg: dict) -> float:
    """Bytes a cell holds in memory beyond its store (a model's ``work`` hook may say
    so as a third value: the loop's per-path series)."""
    name = (cfg.get("model") or {}).get("name") if isinstance(cfg.get("model"), dict) else None
    if not isinstance(name, str):
        return 0.0
    from antiamp.registry import get

    try:
        hook = get(name).work
    except Exception:  # noqa: BLE001 - an unknown model: the regular checks say so
        return 0.0
    if hook is None:
        return 0.0
    got = hook(lambda section, field, default: _field(cfg, section, field, default))
    return float(got[2]) if len(got) > 2 else 0.0


def estimate(cfg: dict) -> tuple[int, float, str] | None:
    """``(cells, total work, what)`` of a request, or None where not known here."""
    cells = cell_count(cfg)
    if cells is None:
        return None
    work, what = cell_work(cfg)[:2]
    return cells, cells * work, what


def describe(cfg: dict) -> str | None:
    """One line with the request's estimated work, for requests that take more than
    :data:`SAY_FROM_SECONDS` at the nominal rate (None for the others)."""
    est = estimate(cfg)
    if est is None or est[1] / NOMINAL_RATE < SAY_FROM_SECONDS:
        return None
    cells, work, what = est
    return (f"estimated work: {cells:,} cell{'s' if cells != 1 else ''} x {what}, about "
            f"{_duration(work / NOMINAL_RATE)} at a nominal {NOMINAL_RATE:.0e} instances/s "
            f"(Ctrl-C stops it)")


def _duration(seconds: float) -> str:
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("hours", 3600),
                       ("minutes", 60)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"


def _size(b: float) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if b >= size:
            return f"{b / size:.3g} {unit}"
    return f"{b:.0f} bytes"


def check_budget(cfg: dict, env=None) -> None:
    """Refuse (BudgetError, a ConfigError) a request over the bound, unless the
    environment sets ANTIAMP_UNBOUNDED=1."""
    env = os.environ if env is None else env
    if env.get(OVERRIDE, "") not in ("", "0"):
        return
    cells = cell_count(cfg)
    n = (cfg.get("run") or {}).get("n_instances")
    if cells is None or not isinstance(n, int) or isinstance(n, bool) or n < 1:
        return  # the regular checks report a malformed request
    per, what = cell_work(cfg)[:2]
    work = cells * per
    store = cells * BYTES_PER_CELL
    memory = memory_bytes(cfg)
    if work <= MAX_WORK and store <= MAX_STORE_BYTES and memory <= MAX_MEMORY_BYTES:
        return
    raise BudgetError(
        f"the request is {cells:,} cell{'s' if cells != 1 else ''} x {what} = "
        f"{work:.3g} simulated instances (about {_duration(work / NOMINAL_RATE)} at "
        f"{NOMINAL_RATE:.0e} instances/s), a store of about {_size(store)}"
        + (f" and {_size(memory)} of paths in memory" if memory > MAX_MEMORY_BYTES else "")
        + f"; the bound is {MAX_WORK:.2g} instances (about "
        f"{_duration(MAX_WORK / NOMINAL_RATE)}) and {_size(MAX_STORE_BYTES)}: shrink the "
        f"grid or the cell's sizes, or set {OVERRIDE}=1 in the environment to run it anyway")


def check_request(parts: list, env=None) -> None:
    """Refuse (BudgetError) a request whose estimated time, the sum over ``parts``
    (``(what, seconds)`` pairs), exceeds :data:`MAX_SECONDS`, naming each part's
    estimate; unless the environment sets ANTIAMP_UNBOUNDED=1."""
    env = os.environ if env is None else env
    if env.get(OVERRIDE, "") not in ("", "0"):
        return
    total = sum(sec for _, sec in parts)
    if total <= MAX_SECONDS:
        return
    detail = "; ".join(f"{what}: about {_duration(sec)}" for what, sec in parts if sec > 0)
    raise BudgetError(
        f"the request would take about {_duration(total)} ({detail}); the bound "
        f"is about {_duration(MAX_SECONDS)}: ask for less, or set {OVERRIDE}=1 in the "
        f"environment to run it anyway")
