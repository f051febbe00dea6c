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

#: Most simulated instances (cells x run.n_instances) of one command: about 28 hours at
#: the nominal throughput below.
MAX_WORK = 10**13
#: Most bytes of one store (estimated at :data:`BYTES_PER_CELL`).
MAX_STORE_BYTES = 20 * 2**30
#: Nominal throughput used for the time estimate (instances per second, all cores).
NOMINAL_RATE = 1e8
#: Estimated store bytes per cell (every metric with its SE and exact value, per
#: protocol, in float64, before compression).
BYTES_PER_CELL = 2048
#: Most estimated seconds of one request of a command that is not a grid: the time
#: :data:`MAX_WORK` takes at :data:`NOMINAL_RATE` (about 28 hours).
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
    work = cells * n
    store = cells * BYTES_PER_CELL
    if work <= MAX_WORK and store <= MAX_STORE_BYTES:
        return
    raise BudgetError(
        f"the request is {cells:,} cell{'s' if cells != 1 else ''} x {n:,} instances = "
        f"{work:.3g} simulated instances (about {_duration(work / NOMINAL_RATE)} at "
        f"{NOMINAL_RATE:.0e} instances/s) and a store of about {_size(store)}; the bound is "
        f"{MAX_WORK:.0e} instances (about {_duration(MAX_WORK / NOMINAL_RATE)}) and "
        f"{_size(MAX_STORE_BYTES)}: shrink the grid or run.n_instances, or set "
        f"{OVERRIDE}=1 in the environment to run it anyway")


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
