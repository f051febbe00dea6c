"""Sweep engine: a 10,000-cell grid at 10^6 instances per cell, time and peak memory.

    python benchmarks/bench_sweep.py [--cells 10000] [--n 1000000]
    python benchmarks/bench_sweep.py --against OTHER_CHECKOUT [--cells 10000] [--n 10000]
        [--repeats 5]
    python benchmarks/bench_sweep.py --per-cell signals,signals_sim [--against OTHER_CHECKOUT]
        [--this CHECKOUT] [--sizes 100,10000] [--n 10000] [--repeats 3] [--save JSON]
    python benchmarks/bench_sweep.py --store-split equilibrium,baseline,signals
        [--against OTHER_CHECKOUT] [--repeats 3]

Each grid size runs in a fresh process so that its peak resident memory is its
own.  The reference, in the same run, is what a user would otherwise write: a
Python loop calling ``antiamp.simulate`` once per cell (timed on a 1,000-cell grid,
both ways, and in memory through ``antiamp.sweep`` without a store).

``--against`` times the same store sweep side by side with another checkout of
the project (a git worktree of an earlier commit: its ``sim/``, ``sweeps/``,
``kernels/`` and ``conf/`` imported in place of this one's), alternating the two
``--repeats`` times, each run in a fresh process, compiled outside the timing;
it prints each run's CPU and wall time, the medians, their ratio, and the load
average before and after.

``--per-cell MODEL[,MODEL...]`` measures each model's marginal CPU per cell: its
two-axis grid (``MODEL_GRIDS``: every model's, such as the baseline's rho x b and
signals' eta x phi with exact or simulated payoffs) swept into a store at each of
``--sizes`` cells (default 100 and 10,000; solver-bound grids at most
``SIZE_CAP``), each run in a fresh process, CPU time of the sweep alone (imports and
compilation outside it); the marginal CPU per cell is the slope between the
smallest and the largest size, what a cell costs beyond the sweep's fixed cost,
and is printed beside the baseline's (measured in the same run, on the same
checkout) with their ratio.  Each run also times the CPU inside the grid's kernels
and solvers (``KERNEL_FUNCS``, ``SOLVERS``: wrappers installed after compilation,
their own cost taken out), and apart the delta method's standard errors at
equilibria solved from simulated counts (``SE_FUNCS``, less the solvers they call);
the rest is the grid's overhead (planning, per-cell plumbing, metrics, the Dataset,
the store), printed beside the baseline's.  Each run then sweeps the same grid again,
in the same process, into a second store with every kernel and solver call replayed
(answered with the result, and the arguments it filled, that the first sweep recorded;
the delta method's own work run): the overhead without the solvers' CPU and without
their use of the caches, whose noise (1% of a solver-bound grid's solvers is several
times the baseline's whole overhead) the first measure carries; the stores' values are
checked equal.  ``ANTIAMP_BENCH_NO_REPLAY=1`` skips it.  ``--save JSON`` keeps the record;
``benchmarks/per_cell_results.json`` is what BENCHMARKS.md's section is made from
(by ``run_all.py``, which does not rerun it).  With ``--against`` both checkouts run, the runs
alternating (model by model, size by size), and the table gives both and the ratio
of this checkout's slope to the other's.

``--store-split`` measures, per block, the store's CPU beside the model's solving:
the equilibrium grid (c_e x b), the baseline's fused grid (rho x b) and a signals
grid (eta x phi, exact payoffs), each 64 x 1,024 cells in the model's default blocks
(or ``--cells-per-block``), in a fresh process, compiled outside the timing.  Direct timers (``time.process_time``)
wrap the functions of each step: solving (a block's ``run_block`` or fused kernel
pass), the metrics derived from a fused block's counts, and, inside the store's
write of a block, the checks that a block fits the store (``fit``), the per-cell
checksums, encoding and compression, the chunk files, chunks written through zarr
and the per-block statistics.  The store's per-block CPU is everything the write
of a block costs but the derived metrics (counted as the model's solving), beside
solving per block and their ratio; with ``--against`` both checkouts, alternating,
``--repeats`` times.

Every store is written under the temporary directory (``TMPDIR``): on a virtual
machine's disk a new file can cost 0.1-0.5 ms (a block writes one a variable), so
``TMPDIR=/dev/shm`` (a memory file system) separates the store's own CPU from its file
system's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time


def _grid(cells: int) -> dict:
    side = int(round(math.sqrt(cells)))
    return {"model": {"rho": {"linspace": [0.0, 1.0, side]}},
            "judge": {"b": {"linspace": [0.0, 1.0, cells // side]}}}


def _use_checkout(src: str) -> None:
    """Import ``antiamp`` from the checkout ``src`` instead of the installed one (an
    editable install's finder, its package folders moved to ``src``)."""
    import os

    for mod in list(sys.modules.values()):
        mapping = getattr(mod, "MAPPING", None)
        if getattr(mod, "__name__", "").startswith("__editable__") and isinstance(mapping, dict):
            for name, path in mapping.items():
                if name.startswith("antiamp"):
                    mapping[name] = os.path.join(src, os.path.basename(path))
            return
    raise SystemExit("--against needs an editable install of antiamp (pip install -e .)")


def _side(cells: int) -> tuple[int, int]:
    side = int(round(math.sqrt(cells)))
    return side, cells // side


def _signals(payoffs: str):
    def grid(cells: int, n: int) -> dict:
        a, b = _side(cells)
        return {"model": {"name": "signals", "p": 0.8, "rho": 0.3, "c_e": 0.4},
                "signals": {"eta_mode": "fraction"}, "judge": {"kind": "tiebreak", "b": 0.7},
                "equilibrium": {"payoffs": payoffs}, "run": {"n_instances": n},
                "sweep": {"axes": {"signals": {"eta": {"linspace": [-1.0, 1.0, a]},
                                               "phi": {"linspace": [0.05, 1.0, b]}}}}}
    return grid


def _two(name: str, a: tuple, b: tuple, **fixed):
    """A grid of model ``name`` over the axes ``a`` and ``b`` ((section, field, lo, hi)
    each, evenly spaced), ``fixed`` the rest of its config."""
    def grid(cells: int, n: int) -> dict:
        na, nb_ = _side(cells)
        axes: dict = {}
        for (sec, key, lo, hi), k in ((a, na), (b, nb_)):
            axes.setdefault(sec, {})[key] = {"linspace": [lo, hi, k]}
        cfg = {k: dict(v) for k, v in fixed.items()}
        cfg.setdefault("model", {})["name"] = name
        cfg["run"] = {**cfg.get("run", {}), "n_instances": n}
        cfg["sweep"] = {"axes": axes}
        return cfg
    return grid


_LOGIT = {"judge": {"kind": "logit"}}

#: The grids of --per-cell: a config of ``cells`` cells and ``n`` instances a cell, two
#: axes over parameters that change per cell (each model's own payoffs by default).
MODEL_GRIDS = {
    "baseline": lambda cells, n: {"sweep": {"axes": _grid(cells)}, "run": {"n_instances": n}},
    "signals": _signals("exact"),  # the model's default: no kernel, equilibria alone
    "signals_sim": _signals("simulated"),  # class counts from the kernel, delta-method SEs
    "panel": lambda cells, n: {  # exact payoffs (the default): a judge panel's tables a cell
        "model": {"name": "panel"}, "run": {"n_instances": n},
        "sweep": {"axes": {"model": {"rho": {"linspace": [0.05, 0.95, _side(cells)[0]]},
                                     "p": {"linspace": [0.55, 0.95, _side(cells)[1]]}}}}},
    "portfolio": _two("portfolio", ("model", "p", 0.55, 0.95),
                      ("portfolio", "q_fab", 0.0, 0.5)),
    "messages": _two("messages", ("messages", "r_mean_false", 0.0, 1.0),
                     ("model", "rho", 0.05, 0.95), **_LOGIT),
    "options": _two("options", ("model", "rho", 0.05, 0.95), ("model", "p", 0.55, 0.95),
                    **_LOGIT),
    "confidence": _two("confidence", ("model", "rho", 0.05, 0.95),
                       ("confidence", "kappa_c", 0.0, 3.0), **_LOGIT,
                       confidence={"ppc_draws": 0}),
    "redeliberation": _two("redeliberation", ("redeliberation", "hazard", 0.05, 0.95),
                           ("model", "rho", 0.05, 0.95), **_LOGIT),
    "colmad": _two("colmad", ("colmad", "eta", 0.0, 1.0), ("colmad", "verify", 0.2, 0.8),
                   **_LOGIT),
    "mediation": _two("mediation", ("mediation", "detect", 0.1, 0.9),
                      ("mediation", "repair", 0.1, 0.9)),
    "loop": _two("loop", ("model", "rho", 0.05, 0.95), ("judge", "kappa", 0.5, 3.0),
                 **_LOGIT, loop={"paths": 0}),
    "compare": _two("compare", ("model", "rho", 0.05, 0.6), ("model", "p", 0.6, 0.95),
                    **_LOGIT),
    "equilibrium": _two("equilibrium", ("judge", "b", 0.1, 0.9), ("model", "rho", 0.05, 0.95),
                        model={"c_e": 0.45, "p": 0.6}),
}

#: What counts as a grid's kernels and solvers (the rest of its CPU is overhead: planning,
#: per-cell plumbing, metrics, the Dataset, the store): every Python function of the
#: kernel modules (the compiled kernels' entry points; ``digest`` is the store's) and the
#: fused grids' kernel pass, and each model's solver functions ("module:*": every function
#: the module defines).  Metrics computed from solved profiles are overhead, as the issue
#: counts them.
KERNEL_FUNCS = ("antiamp.sweeps.fused:compute_block", "antiamp.runner:run_baseline_counts",
                "antiamp.runner:count_classes")
KERNEL_MODULES = ("antiamp.kernels.", )
KERNEL_SKIP = ("antiamp.kernels.digest", "antiamp.kernels.interrupt", "antiamp.kernels.gpu")
_M = "antiamp.models."
SOLVERS = {
    "baseline": (),
    "signals": tuple(f"{_M}signals.core:{f}" for f in (
        "class_probabilities", "class_counts", "joint_table", "avail_table", "rhetoric_tables",
        "gains", "equilibrium_rows", "certificate", "enumerate_equilibria", "general_debate"))
    + (f"{_M}signals.effort:solve_cells", f"{_M}signals.effort:tables_at",
       "antiamp.judge:judge_tables"),
    "panel": (f"{_M}panel.core:panel_strategies", f"{_M}panel.core:panel_table_error",
              "antiamp.metrics:class_probabilities"),
    "portfolio": tuple(f"{_M}portfolio.core:{f}" for f in (
        "judge_tables_counts", "class_probabilities", "class_counts_cells", "consult_strategy",
        "debate_equilibrium", "interim_regret", "consult_regret")),
    "messages": tuple(f"{_M}messages.core:{f}" for f in (
        "exogenous_exact", "exogenous_simulated_cells", "strategic_equilibrium")),
    "options": (f"{_M}options.core:exact", f"{_M}options.core:simulate_cells"),
    "confidence": (f"{_M}confidence.core:*",),
    "redeliberation": tuple(f"{_M}redeliberation.core:{f}" for f in (
        "exact_with_error", "simulate", "hazard_for")) + ("antiamp.judge:judge_tables",),
    "colmad": tuple(f"{_M}colmad.core:{f}" for f in (
        "exact_means", "simulate", "quad_error", "hack_for_gain")),
    "mediation": tuple(f"{_M}mediation.core:{f}" for f in (
        "exact", "simulate", "exact_error", "mean_residual")),
    # the solvers the model calls, not every function of the module: those call each
    # other 1,300 times a cell (Oversight.rates, start_error and is_linear inside the
    # paths and the policy front), and the wrappers' own cost inside them, estimated
    # and subtracted, moved by more than the overhead measured; with these, 66 nested
    # calls a cell (long_run inside policy_front)
    "loop": tuple(f"{_M}loop.core:{f}" for f in (
        "oversight", "meanfield_path", "expected_path", "long_run", "thresholds",
        "type_tails", "policy_front", "cheapest_policy", "simulate")),
    # margin_scale: the root (Brent's method) that maps the task onto re-deliberation's
    # evidence margins, the model's own numerics
    "compare": (f"{_M}compare.core:exact_with_error", f"{_M}compare.core:simulate",
                f"{_M}compare.core:margin_scale"),
    "equilibrium": (f"{_M}equilibrium.core:_solve_game", f"{_M}equilibrium.core:_simulated_se",
                    "antiamp.evidence_game:*"),
}
SOLVERS["signals_sim"] = SOLVERS["signals"]
#: The delta method's standard errors at equilibria solved from simulated counts: each
#: mixed equilibrium re-solved at 2 L perturbed class frequencies and every metric
#: evaluated there (the numerical derivative of the estimator, not per-cell plumbing).
#: Timed apart, less the solvers and kernels they call: a column of its own, neither
#: hidden in the solvers nor in the overhead.
SE_FUNCS = {"signals_sim": (f"{_M}signals.model:_equilibrium_se",),
            "portfolio": (f"{_M}portfolio.core:_equilibrium_se",)}


class _Timer:
    """CPU time inside the outermost calls of the functions :func:`_instrument` wraps.

    With ``tape`` = "record" each outermost call's result is kept (a deep copy, its
    CPU in ``copy_cpu``, outside the timing), by function, in order; with "replay"
    the function is not called: its next kept result is returned (the replay of a
    sweep: every value as computed, the kernels and solvers not run)."""

    def __init__(self):
        self.cpu, self.calls, self.depth, self.nested = 0.0, 0, 0, 0
        self.tape, self.results, self.copy_cpu = None, {}, 0.0


class ReplayError(RuntimeError):
    """A replayed sweep asked a solver for more results than its recording kept."""


def _fillable(v) -> bool:
    """An argument a solver may fill in place: a list, a dict or a writeable array."""
    import numpy as np

    return (isinstance(v, (list, dict))
            or (isinstance(v, np.ndarray) and v.flags.writeable and v.dtype != object))


def _put_back(target, value) -> None:
    """A recorded argument's state after its call, put back in place."""
    if isinstance(target, list):
        target[:] = value
    elif isinstance(target, dict):
        target.clear()
        target.update(value)
    else:
        target[...] = value


def _wrap(fn, timer: _Timer):
    import collections
    import copy
    import functools

    clock = time.process_time
    key = f"{getattr(fn, '__module__', '')}:{getattr(fn, '__qualname__', repr(fn))}"

    @functools.wraps(fn)
    def timed(*a, **k):
        timer.calls += 1
        if timer.depth:
            timer.nested += 1
            return fn(*a, **k)
        timer.depth = 1
        t = clock()
        try:
            if timer.tape == "replay":
                kept = timer.results.get(key)
                if not kept:
                    raise ReplayError(f"{key}: called more often than in the recording")
                out, after = kept.popleft()
                for i, v in after:  # what the call left in its arguments, put back
                    _put_back(a[i] if isinstance(i, int) else k[i], v)
                return out
            out = fn(*a, **k)
        finally:
            timer.cpu += clock() - t
            timer.depth = 0
        if timer.tape == "record":
            t = clock()
            # the result, and the arguments a solver may fill (lists, dicts, arrays)
            after = [(i, copy.deepcopy(v)) for i, v in list(enumerate(a)) + list(k.items())
                     if _fillable(v)]
            timer.results.setdefault(key, collections.deque()).append(
                (copy.deepcopy(out), after))
            timer.copy_cpu += clock() - t
        return out
    timed.__wrapped_by_bench__ = True
    return timed


class _SETimer:
    """CPU time inside the delta method's functions (:data:`SE_FUNCS`) less what the
    kernel and solver timer counted inside them, and that timer's wrapped calls there
    (their own cost, subtracted by the caller)."""

    def __init__(self):
        self.cpu, self.calls, self.inner_calls, self.inner_nested = 0.0, 0, 0, 0


def _wrap_se(fn, se: _SETimer, timer: _Timer):
    import functools

    clock = time.process_time

    @functools.wraps(fn)
    def timed(*a, **k):
        se.calls += 1
        c0, k0, n0, m0 = clock(), timer.cpu, timer.calls, timer.nested
        try:
            return fn(*a, **k)
        finally:
            se.cpu += (clock() - c0) - (timer.cpu - k0)
            se.inner_calls += timer.calls - n0
            se.inner_nested += timer.nested - m0
    timed.__wrapped_by_bench__ = True
    return timed


def _instrument(name: str) -> tuple:
    """Wrap the kernel and solver functions of grid ``name`` (:data:`KERNEL_FUNCS`,
    :data:`SOLVERS`) and its delta method's (:data:`SE_FUNCS`), wherever a loaded module
    of the package binds them: ``(timer, se_timer)``."""
    import importlib
    import inspect

    timer = _Timer()
    se = _SETimer()
    targets: dict = {}

    def add_module(mod):
        for v in vars(mod).values():
            if inspect.isfunction(v) and v.__module__ == mod.__name__:
                targets[id(v)] = v

    mods = [m for n, m in list(sys.modules.items()) if m is not None
            and n.startswith(KERNEL_MODULES) and not n.startswith(KERNEL_SKIP)]
    for mod in mods:
        add_module(mod)
    for spec in KERNEL_FUNCS + SOLVERS[name]:
        modname, fn = spec.split(":")
        mod = importlib.import_module(modname)
        if fn == "*":
            add_module(mod)
        else:
            targets[id(getattr(mod, fn))] = getattr(mod, fn)
    wrapped = {k: _wrap(v, timer) for k, v in targets.items()}
    for spec in SE_FUNCS.get(name, ()):
        modname, fn = spec.split(":")
        f = getattr(importlib.import_module(modname), fn)
        targets[id(f)] = f
        wrapped[id(f)] = _wrap_se(f, se, timer)
    for modname, mod in list(sys.modules.items()):
        if mod is None or not modname.startswith("antiamp"):
            continue
        d = vars(mod)
        for key, v in list(d.items()):
            if id(v) in wrapped and v is targets[id(v)]:
                d[key] = wrapped[id(v)]
    return timer, se


def _call_cost(nested: bool = False) -> float:
    """CPU seconds one outermost wrapped call adds (subtracted from the overhead), or
    with ``nested`` one call inside another's timing (subtracted from the kernels' and
    solvers' CPU, which hold it: a solver's module whose functions call each other,
    such as loop's, makes a million of them)."""
    t = _Timer()
    f = _wrap(lambda: None, t)
    t.depth = int(nested)
    n = 20000
    c0 = time.process_time()
    for _ in range(n):
        f()
    c1 = time.process_time()
    g = (lambda: None)
    for _ in range(n):
        g()
    return max(0.0, ((c1 - c0) - (time.process_time() - c1)) / n)


def _same_values(a, b) -> bool:
    """Whether two opened stores hold the same data variables, value for value."""
    import numpy as np

    if set(a.data_vars) != set(b.data_vars):
        return False
    for k in a.data_vars:
        x, y = np.asarray(a[k].values), np.asarray(b[k].values)
        if x.shape != y.shape:
            return False
        nan = x.dtype.kind in "fc" and y.dtype.kind in "fc"
        if not np.array_equal(x, y, equal_nan=nan):
            return False
    return True


def _counted(timer: _Timer, se: _SETimer) -> tuple:
    """The timers' running totals, read before and after a sweep (:func:`_accounted`)."""
    return (timer.cpu, timer.calls, timer.nested, se.cpu, se.calls, se.inner_calls,
            se.inner_nested)


def _accounted(now: tuple, before: tuple, cost: float, inner: float) -> dict:
    """A sweep's CPU in its kernels and solvers, in the delta method's own work and in
    the wrappers themselves, from the timers' totals (:func:`_counted`) around it;
    ``cost`` and ``inner`` a wrapped call's own cost (:func:`_call_cost`)."""
    k_cpu, calls, nested, s_cpu, s_calls, s_inner, s_nested = (
        x - y for x, y in zip(now, before))
    return {"kernel_cpu": k_cpu - nested * inner,
            # the solvers' outermost wrappers inside the delta method's timing are
            # counted in timer_cpu: not in se_cpu too
            "se_cpu": s_cpu - (s_inner - s_nested) * cost,
            "timer_cpu": (calls - nested + s_calls) * cost + nested * inner}


def child_model(name: str, cells: int, n: int) -> None:
    """One sweep of ``MODEL_GRIDS[name]`` into a store: its CPU time, and the CPU time
    inside its kernels and solvers (:func:`_instrument`), as JSON; then the same sweep
    into a second store with every kernel and solver replayed (their results as the
    first sweep computed them, :class:`_Timer`): the grid's own CPU with the solvers
    out of the way (not run, so neither their time nor their use of the caches is in
    it), and whether the replay stored the same values."""
    import os

    if os.environ.get("ANTIAMP_BENCH_SRC"):
        _use_checkout(os.environ["ANTIAMP_BENCH_SRC"])
    import antiamp as sim
    from antiamp.sweeps.engine import run_sweep

    with tempfile.TemporaryDirectory() as tmp:
        warm = MODEL_GRIDS[name](4, 1000)  # compile outside the timing
        warm["sweep"]["plot"] = False
        run_sweep(warm, tmp + "/warm", progress=False, log=lambda *a: None)
        timer, se = _instrument(name)  # after the compilation: no kernel compiled wrapped
        cost, inner = _call_cost(), _call_cost(nested=True)
        cfg = MODEL_GRIDS[name](cells, n)
        cfg["sweep"]["plot"] = False
        replay = not os.environ.get("ANTIAMP_BENCH_NO_REPLAY")  # the replay's check
        timer.tape = "record" if replay else None
        t, cpu = time.perf_counter(), time.process_time()
        ds = run_sweep(cfg, tmp, progress=False, log=lambda *a: None)
        dt, dcpu = time.perf_counter() - t, time.process_time() - cpu
        ncells = int(ds["cell_done"].size)
        counted = _counted(timer, se)
        rec = {"mode": name, "cells": ncells, "n": n, "seconds": dt,
               "cpu": dcpu - timer.copy_cpu,  # the recording's copies are no part of it
               **_accounted(counted, (0,) * len(counted), cost, inner),
               "calls": timer.calls, "se_calls": se.calls,
               "antiamp": os.path.dirname(sim.__file__)}
        if not replay:
            print(json.dumps(rec))
            return
        # The replay: the delta method's functions run (they perturb the solved
        # equilibria in place), their solvers replayed like every other call.
        timer.tape = "replay"
        from antiamp.sweeps import spec

        # planned again, as the recorded sweep was (a model's checks call its solvers)
        getattr(spec, "_LAST_PLAN", {}).clear()
        cpu = time.process_time()
        ds2 = run_sweep(cfg, tmp + "/replay", progress=False, log=lambda *a: None)
        rcpu = time.process_time() - cpu
        rec.update({"replay_cpu": rcpu,
                    **{f"replay_{k}": v for k, v in
                       _accounted(_counted(timer, se), counted, cost, inner).items()},
                    "replay_left": sum(len(v) for v in timer.results.values()),
                    "replay_same": _same_values(ds.load(), ds2.load())})
        print(json.dumps(rec))


#: Grids whose cells cost their solvers milliseconds to seconds: the largest of --sizes
#: each runs (a 10^4-cell grid of them takes minutes to hours), and the sizes it runs
#: when fewer than two of --sizes fit.
SIZE_CAP = {"options": 1000, "colmad": 1000, "redeliberation": 1000, "compare": 1000,
            "confidence": 16, "loop": 1000, "mediation": 1000, "portfolio": 10_000,
            "messages": 10_000, "panel": 10_000, "signals_sim": 10_000}
SMALL_SIZES = {"confidence": (4, 16)}


def sizes_of(name: str, sizes: list) -> list:
    """The grid sizes --per-cell runs for ``name`` (:data:`SIZE_CAP`)."""
    cap = SIZE_CAP.get(name)
    if cap is None:
        return sorted(sizes)
    fit = sorted(s for s in sizes if s <= cap)
    return fit if len(fit) >= 2 else list(SMALL_SIZES.get(name, (max(4, cap // 10), cap)))


def per_cell(models: list, sizes: list, n: int, repeats: int, other: str | None,
             this: str | None = None, save: str | None = None) -> None:
    """Marginal CPU per cell of each model's grid (and the baseline's), and its part
    inside kernels and solvers, this checkout (or ``this``, another one) and
    ``other``'s alternating; see the module docstring.  ``save``: the record as JSON
    (:func:`per_cell_report` makes BENCHMARKS.md's section from it)."""
    import os
    import platform
    import statistics

    names = ["baseline"] + [m for m in models if m != "baseline"]
    sides = ["this"] + (["other"] if other else [])
    load0 = os.getloadavg()
    runs: dict = {}
    same: dict = {}  # name -> whether each replay stored the values of its sweep
    for k in range(repeats):
        for name in names:
            for cells in sizes_of(name, sizes):
                for side in (sides if k % 2 == 0 else sides[::-1]):
                    r = run_child(name, cells, n, other if side == "other" else this)
                    # the wrappers' own cost taken out of the total (it is no overhead)
                    row = (r["cpu"] - r.get("timer_cpu", 0.0), r.get("kernel_cpu", 0.0),
                           r.get("se_cpu", 0.0))
                    if "replay_cpu" in r:  # the same sweep, its solvers replayed
                        row += (r["replay_cpu"] - r["replay_timer_cpu"],
                                r["replay_kernel_cpu"], r["replay_se_cpu"])
                        same.setdefault(name, []).append(bool(r["replay_same"]))
                    runs.setdefault((name, side, cells), []).append(row)
                    print(f"repeat {k + 1} {name} {side:5s} {r['cells']:,} cells: cpu "
                          f"{r['cpu']:.2f} s (kernels+solvers {r.get('kernel_cpu', 0):.2f} s, "
                          f"{r.get('calls', 0):,} calls; delta-method SEs "
                          f"{r.get('se_cpu', 0):.2f} s), wall {r['seconds']:.2f} s"
                          + (f"; replayed: cpu {r['replay_cpu']:.2f} s, the same values "
                             f"{r['replay_same']}" if "replay_cpu" in r else ""),
                          flush=True)
    load1 = os.getloadavg()
    rec = {"n": n, "repeats": repeats, "sides": sides, "names": names,
           "sizes": {name: sizes_of(name, sizes) for name in names},
           "medians": {f"{name}|{side}|{cells}": [statistics.median(x[i] for x in v)
                                                  for i in range(len(v[0]))]
                       for (name, side, cells), v in runs.items()},
           "replay_same": {name: all(v) for name, v in same.items()},
           "runs": {f"{name}|{side}|{cells}": v for (name, side, cells), v in runs.items()},
           "load": [load0[0], load1[0]], "date": time.strftime("%Y-%m-%d"),
           "machine": f"{platform.machine()} ({os.cpu_count()} cores)",
           # where the stores were written (TMPDIR=/dev/shm: a memory file system)
           "command": (f"TMPDIR={os.environ['TMPDIR']} " if os.environ.get("TMPDIR") else "")
           + "python benchmarks/bench_sweep.py --per-cell " + ",".join(names[1:])
           + f" --sizes {','.join(str(c) for c in sorted(set(sizes)))} --n {n}"
           f" --repeats {repeats}" + (" --against OTHER" if other else "")}
    print()
    print("\n".join(per_cell_table(rec)))
    print(f"load average (1, 5, 15 min) before {load0}, after {load1}")
    if save:
        with open(save, "w") as f:
            json.dump(rec, f, indent=1)
        print(f"wrote {save}")


def per_cell_table(rec: dict) -> list:
    """The --per-cell tables of a record (:func:`per_cell`) as Markdown lines."""
    names, sides, n = rec["names"], rec["sides"], rec["n"]
    med = {tuple(k.split("|")[:2]) + (int(k.split("|")[2]),): v
           for k, v in rec["medians"].items()}
    # records with the replayed sweeps (six numbers a run); older ones have three
    replayed = all(len(v) >= 6 for v in med.values())
    same = rec.get("replay_same", {})

    def slope(name, side, a, b, i=0, t=med):  # ms of CPU a cell between a and b cells
        return (t[(name, side, b)][i] - t[(name, side, a)][i]) / (b - a) * 1e3

    def over(name, side, a, b, t=med, at=0):  # the overhead's slope: less kernels,
        # solvers and SEs (the numbers from ``at``: 0 the sweep's, 3 its replay's)
        return (slope(name, side, a, b, at, t) - slope(name, side, a, b, at + 1, t)
                - slope(name, side, a, b, at + 2, t))

    def over_r(name, side, a, b, t=med):  # the same of the replayed sweeps
        return over(name, side, a, b, t, 3)

    def fair(name):  # the replay stored the sweep's values in every run
        return same.get(name, False)

    base = rec["sizes"]["baseline"]
    blo, bhi = base[0], base[-1]
    L = [f"Marginal CPU per cell (ms), {n:,} instances a cell, between the smallest and the "
         f"largest grid of each (medians of {rec['repeats']} runs"
         f"{', the checkouts alternating' if len(sides) > 1 else ''}); overhead = all less "
         f"the CPU inside kernels and solvers and the delta method's standard errors; ratios "
         f"to the baseline's slope between {blo:,} and {bhi:,} cells."
         + (" Replayed: the same sweep again in the same process, into a second store, "
            "every kernel and solver call answered with the result the first sweep "
            "recorded (and the arguments it filled), the delta method's own work run: the "
            "grid's own CPU with the solvers neither run nor using the caches (the stored "
            "values checked equal to the first sweep's; 'differ' where they were not), "
            "its ratio to the baseline's replayed overhead." if replayed else ""), "",
         "| grid | checkout | cells | CPU (s) | ms a cell | x baseline | kernels+solvers "
         "ms a cell | delta-method SEs ms a cell | overhead ms a cell "
         "| overhead x baseline's | overhead / all |"
         + (" overhead replayed ms a cell | replayed x baseline's |" if replayed else ""),
         "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
         + ("---:|---:|" if replayed else "")]
    for name in names:
        ss = rec["sizes"][name]
        lo, hi = ss[0], ss[-1]
        for side in sides:
            tot, ker, se = (slope(name, side, lo, hi, i) for i in range(3))
            line = (f"| {name} | {side} | " + " / ".join(f"{c:,}" for c in ss) + " | "
                    + " / ".join(f"{med[(name, side, c)][0]:.2f}" for c in ss)
                    + f" | {tot:.4f} | {tot / slope('baseline', side, blo, bhi):.1f}"
                    f" | {ker:.4f} | {se:.4f} | {tot - ker - se:.4f}"
                    f" | {(tot - ker - se) / over('baseline', side, blo, bhi):.1f}"
                    f" | {(tot - ker - se) / tot:.0%} |")
            if replayed and fair(name) and fair("baseline"):
                ro = over_r(name, side, lo, hi)
                line += f" {ro:.4f} | {ro / over_r('baseline', side, blo, bhi):.1f} |"
            elif replayed:
                line += " differ | |"
            L.append(line)
    if len(base) > 2:  # between consecutive sizes: is the overhead per cell flat?
        pairs = list(zip(base[:-1], base[1:]))
        L += ["", "Overhead ms a cell between consecutive sizes (x the baseline's there):", "",
              "| grid | checkout | " + " | ".join(f"{a:,}-{b:,}" for a, b in pairs) + " |",
              "|---|---|" + "---:|" * len(pairs)]
        for name in names:
            if rec["sizes"][name] != base:
                continue
            for side in sides:
                L.append(f"| {name} | {side} | " + " | ".join(
                    f"{over(name, side, a, b):.4f} "
                    f"({over(name, side, a, b) / over('baseline', side, a, b):.1f})"
                    for a, b in pairs) + " |")
    if "runs" in rec and rec["repeats"] > 1:  # each repeat's own slopes: the spread
        runs = [{tuple(key.split("|")[:2]) + (int(key.split("|")[2]),): v[k]
                 for key, v in rec["runs"].items()} for k in range(rec["repeats"])]

        L += ["", "The overhead's spread: each repeat's own slope (its smallest and largest "
              "grid), and its ratio to the baseline's slope in the same repeat (a difference "
              "of two CPU times each: where the overhead is a few percent of a cell, runs "
              "differ by tens of percent):", "",
              "| grid | checkout | overhead ms a cell, each repeat | x the baseline's, each "
              "repeat |" + (" replayed ms a cell, each repeat | replayed x the baseline's, "
                            "each repeat |" if replayed else ""),
              "|---|---|---|---|" + ("---|---|" if replayed else "")]
        for name in names:
            lo, hi = rec["sizes"][name][0], rec["sizes"][name][-1]
            for side in sides:
                ov = [over(name, side, lo, hi, runs[k]) for k in range(rec["repeats"])]
                bo = [over("baseline", side, blo, bhi, runs[k]) for k in range(rec["repeats"])]
                line = (f"| {name} | {side} | " + ", ".join(f"{v:.4f}" for v in ov) + " | "
                        + ", ".join(f"{v / b:.1f}" for v, b in zip(ov, bo)) + " |")
                if replayed and fair(name) and fair("baseline"):
                    rv = [over_r(name, side, lo, hi, runs[k]) for k in range(rec["repeats"])]
                    rb = [over_r("baseline", side, blo, bhi, runs[k])
                          for k in range(rec["repeats"])]
                    line += (" " + ", ".join(f"{v:.4f}" for v in rv) + " | "
                             + ", ".join(f"{v / b:.1f}" for v, b in zip(rv, rb)) + " |")
                elif replayed:
                    line += " differ | |"
                L.append(line)
    if len(sides) > 1:
        def ends(name):
            ss = rec["sizes"][name]
            return ss[0], ss[-1]
        L += ["", "this / other, marginal CPU per cell: " + ", ".join(
            f"{name} {slope(name, 'this', *ends(name)) / slope(name, 'other', *ends(name)):.2f}"
            for name in names),
            "", "this / other, overhead per cell: " + ", ".join(
            f"{name} {over(name, 'this', *ends(name)) / over(name, 'other', *ends(name)):.2f}"
            for name in names)]
    return L


#: Where ``--per-cell ... --save`` keeps its record for BENCHMARKS.md.
PER_CELL_RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "per_cell_results.json")
PER_CELL_HEADING = "## Grids: every model's per-cell overhead beside the baseline's"


def per_cell_report(path: str = PER_CELL_RESULTS) -> list:
    """BENCHMARKS.md's per-cell section from a saved --per-cell record (its own command,
    date, machine and load: ``run_all.py`` does not rerun it, 3 minutes of its 15)."""
    L = [PER_CELL_HEADING, ""]
    if not os.path.exists(path):
        return L + ["No record yet: `python benchmarks/bench_sweep.py --per-cell MODELS "
                    "--save benchmarks/per_cell_results.json` makes one."]
    with open(path) as f:
        rec = json.load(f)
    L += [f"`{rec['command']} --save benchmarks/per_cell_results.json`, {rec['date']}, "
          f"{rec['machine']}: each grid (`MODEL_GRIDS`: two axes over the model's own "
          "parameters, each model's default payoffs) swept into a store in a fresh process, "
          "compiled outside the timing. Kernels and solvers are timed by wrappers on their "
          "functions (`KERNEL_FUNCS`, `SOLVERS`), the delta method's standard errors at "
          "equilibria solved from simulated counts apart (`SE_FUNCS`: each mixed "
          "equilibrium re-solved at 2 L perturbed class frequencies and every metric "
          "evaluated there, less the solvers they call); the overhead is the rest "
          "(planning, per-cell plumbing, metrics, the Dataset, the store). Not rerun by "
          "`run_all.py`; its own date is above."
          + (" The stores were written to a memory file system (`TMPDIR=/dev/shm`): the "
             "grids' own CPU without a disk's cost of a new file (each block writes one a "
             "variable), which on a virtual machine's disk moves from run to run "
             "(docs/guides/performance.md)." if rec["command"].startswith("TMPDIR=/dev/shm")
             else ""), ""]
    L += per_cell_table(rec)
    L += ["", f"Load average (1 min) {rec['load'][0]:.2f} before, {rec['load'][1]:.2f} after."]
    return L


#: The grids of --store-split: 64 x 1,024 cells, in each model's default blocks (or
#: ``--cells-per-block``).
SPLIT_GRIDS = {
    "equilibrium": {"model": {"name": "equilibrium", "p": 0.6},
                    "sweep": {"axes": {"model": {"c_e": {"linspace": [0.0, 1.0, 64]}},
                                       "judge": {"b": {"linspace": [0.0, 1.0, 1024]}}}}},
    "baseline": {"run": {"n_instances": 10_000},
                 "sweep": {"axes": {"model": {"rho": {"linspace": [0.0, 1.0, 64]}},
                                    "judge": {"b": {"linspace": [0.0, 1.0, 1024]}}}}},
    "signals": {"model": {"name": "signals", "p": 0.8, "rho": 0.3, "c_e": 0.4},
                "signals": {"eta_mode": "fraction"}, "judge": {"kind": "tiebreak", "b": 0.7},
                "equilibrium": {"payoffs": "exact"}, "run": {"n_instances": 10_000},
                "sweep": {"axes": {"signals": {"eta": {"linspace": [-1.0, 1.0, 64]},
                                               "phi": {"linspace": [0.05, 1.0, 1024]}}}}},
}
#: The steps of --store-split: (key, module, attribute), wrapped by a CPU timer.
SPLIT_STEPS = (
    ("solve", "antiamp.sweeps.blocks", "run_block"),
    ("solve", "antiamp.sweeps.engine", "compute_block"),
    ("store", "antiamp.sweeps.cellstore", "CellStore.write"),
    ("store", "antiamp.sweeps.engine", "write_block"),
    ("derive", "antiamp.sweeps.engine", "block_values"),
    ("fit", "antiamp.sweeps.cellstore", "CellStore.fit"),
    ("grow", "antiamp.sweeps.cellstore", "CellStore._grow"),
    ("checksum", "antiamp.sweeps.cellstore", "cell_digests"),
    ("checksum", "antiamp.sweeps.engine", "cell_digests"),
    ("chunk files", "antiamp.sweeps.chunkfiles", "ChunkFile.write"),
    ("zarr", "zarr.core.array", "Array.__setitem__"),
    ("stats", "antiamp.sweeps.cellstore", "CellStore._stats"),
    ("stats", "antiamp.sweeps.cellstore", "CellStore._stats_row"),
    ("encode", "numcodecs.blosc", "Blosc.encode"),
    ("encode", "numcodecs.zstd", "Zstd.encode"),
)


def _wrap_steps(totals: dict, counts: dict) -> None:
    """Wrap every step of SPLIT_STEPS with a CPU timer (inclusive; a step called
    inside another of the same key is counted once)."""
    import importlib

    active: dict = {}
    for key, mod, attr in SPLIT_STEPS:
        try:
            m = importlib.import_module(mod)
        except ImportError:
            continue
        owner, _, name = attr.rpartition(".")
        obj = getattr(m, owner) if owner else m
        fn = getattr(obj, name, None)
        if fn is None:
            continue

        def timed(*a, _fn=fn, _key=key, **k):
            if active.get(_key) or (_key == "zarr" and not active.get("store")):
                return _fn(*a, **k)  # nested, or a zarr write outside a block's
            active[_key] = True
            t = time.process_time()
            try:
                return _fn(*a, **k)
            finally:
                totals[_key] = totals.get(_key, 0.0) + time.process_time() - t
                counts[_key] = counts.get(_key, 0) + 1
                active[_key] = False

        setattr(obj, name, timed)


def child_split(name: str) -> None:
    """One sweep of ``SPLIT_GRIDS[name]`` into a store, its steps timed: JSON."""
    import os

    if os.environ.get("ANTIAMP_BENCH_SRC"):
        _use_checkout(os.environ["ANTIAMP_BENCH_SRC"])
    import copy

    import antiamp as sim
    from antiamp.sweeps.engine import run_sweep

    totals: dict = {}
    counts: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        warm = copy.deepcopy(SPLIT_GRIDS[name])  # compile outside the timing
        for sec in warm["sweep"]["axes"].values():
            for k in sec:
                sec[k] = {"linspace": sec[k]["linspace"][:2] + [2]}
        warm["sweep"]["plot"] = False
        run_sweep(warm, tmp + "/warm", progress=False, log=lambda *a: None)
        _wrap_steps(totals, counts)
        cfg = copy.deepcopy(SPLIT_GRIDS[name])
        cfg["sweep"]["plot"] = False
        if os.environ.get("ANTIAMP_BENCH_BLOCK"):  # --cells-per-block: not the model's own
            cfg["sweep"]["cells_per_block"] = int(os.environ["ANTIAMP_BENCH_BLOCK"])
        cpu = time.process_time()
        ds = run_sweep(cfg, tmp + "/s", progress=False, log=lambda *a: None)
        dcpu = time.process_time() - cpu
        print(json.dumps({"mode": name, "cells": int(ds["cell_done"].size), "cpu": dcpu,
                          "blocks": counts.get("store", 0), "totals": totals,
                          "antiamp": os.path.dirname(sim.__file__)}))


def store_split(models: list, repeats: int, other: str | None, block: int = 0) -> None:
    """The store's CPU per block beside solving per block (see the module); ``block``:
    cells a block (``sweep.cells_per_block``), 0 each model's own."""
    import os
    import statistics

    load0 = os.getloadavg()
    sides = ("this", "other") if other else ("this",)
    runs: dict = {}
    for k in range(repeats):
        for name in models:
            for side in (sides if k % 2 == 0 else sides[::-1]):
                env = dict(os.environ)
                env.pop("ANTIAMP_BENCH_SRC", None)
                env.pop("ANTIAMP_BENCH_BLOCK", None)
                if side == "other":
                    env["ANTIAMP_BENCH_SRC"] = other
                if block:
                    env["ANTIAMP_BENCH_BLOCK"] = str(block)
                out = subprocess.run([sys.executable, __file__, "--child-split", name],
                                     capture_output=True, text=True, check=True, env=env)
                r = json.loads(out.stdout.strip().splitlines()[-1])
                runs.setdefault((name, side), []).append(r)
                print(f"repeat {k + 1} {name} {side}: cpu {r['cpu']:.2f} s, {r['blocks']} "
                      f"blocks, " + ", ".join(f"{key} {v:.3f}" for key, v in
                                              sorted(r["totals"].items())), flush=True)
    load1 = os.getloadavg()
    keys = ("solve", "derive", "store", "fit", "grow", "checksum", "encode", "chunk files", "zarr",
            "stats")
    print(f"\nCPU ms per block, medians of {repeats} runs (64 x 1,024 cells; blocks: "
          + ", ".join(f"{name} {runs[(name, sides[0])][0]['blocks']}" for name in models)
          + f"{' of ' + format(block, ',') + ' cells' if block else ', each model its own'}). "
          "'solve': the model's own work on a block (a fused grid's kernel pass "
          "and 'derive', the metrics from its counts); 'store': the whole write of a "
          "block into the store but 'derive', of which fit .. stats ('grow', in 'fit': "
          "resizing along a model dimension; 'chunk files' include their encoding; 'zarr': "
          "arrays written through zarr within a block's write)\n")
    print("| model | checkout | " + " | ".join(keys) + " | store / solve |")
    print("|---|---|" + "---:|" * (len(keys) + 1))
    fastest = {}
    for name in models:
        for side in sides:
            rs = runs[(name, side)]

            def part(r, key):
                t = r["totals"]
                if key == "solve":
                    return t.get("solve", 0.0) + t.get("derive", 0.0)
                if key == "store":
                    return t.get("store", 0.0) - t.get("derive", 0.0)
                return t.get(key, 0.0)

            per = {key: statistics.median(part(r, key) / max(r["blocks"], 1) for r in rs) * 1e3
                   for key in keys}
            ratio = statistics.median(part(r, "store") / part(r, "solve") for r in rs)
            fastest.setdefault(side, []).append((per["solve"], name))
            print(f"| {name} | {side} | " + " | ".join(f"{per[key]:.1f}" for key in keys)
                  + f" | {ratio:.2f} |")
    for side in sides:
        t, name = min(fastest[side])
        print(f"fastest solving per block ({side}): {name}, {t:.1f} ms")
    print(f"load average (1, 5, 15 min) before {load0}, after {load1}")


def child(mode: str, cells: int, n: int) -> None:
    import os
    import resource

    if os.environ.get("ANTIAMP_BENCH_SRC"):
        _use_checkout(os.environ["ANTIAMP_BENCH_SRC"])
    import numpy as np

    import antiamp as sim
    from antiamp.sweeps.engine import run_sweep

    axes = _grid(cells)
    with tempfile.TemporaryDirectory() as tmp:
        # compile outside the timing
        run_sweep({"sweep": {"axes": {"model": {"rho": [0.5]}}, "plot": False},
                   "run": {"n_instances": 1000}}, tmp + "/warm", progress=False)
        t, cpu = time.perf_counter(), time.process_time()
        if mode == "engine":
            ds = run_sweep({"sweep": {"axes": axes, "plot": False},
                            "run": {"n_instances": n}}, tmp, progress=False)
            ncells = int(np.prod([ds.sizes["rho"], ds.sizes["b"]]))
        elif mode == "memory":  # the same grid in memory (antiamp.sweep, no store)
            ds = sim.sweep({"sweep": {"axes": axes}, "run": {"n_instances": n}}, progress=False)
            ncells = int(np.prod([ds.sizes["rho"], ds.sizes["b"]]))
        else:
            rhos = np.linspace(0, 1, len(np.linspace(0, 1, int(round(math.sqrt(cells))))))
            bs = np.linspace(0, 1, cells // len(rhos))
            ncells = 0
            for r in rhos:
                for b in bs:
                    sim.simulate({"model": {"rho": float(r)}, "judge": {"b": float(b)},
                                  "run": {"n_instances": n, "progress": False}})
                    ncells += 1
        dt, dcpu = time.perf_counter() - t, time.process_time() - cpu
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps({"mode": mode, "cells": ncells, "n": n, "seconds": dt, "cpu": dcpu,
                          "peak_mb": peak, "antiamp": os.path.dirname(sim.__file__)}))


def run_child(mode, cells, n, src=None):
    import os

    env = dict(os.environ)
    env.pop("ANTIAMP_BENCH_SRC", None)
    if src:
        env["ANTIAMP_BENCH_SRC"] = src
    out = subprocess.run([sys.executable, __file__, "--child", mode, "--cells", str(cells),
                          "--n", str(n)], capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def against(other: str, cells: int, n: int, repeats: int) -> None:
    """This checkout's store sweep against ``other``'s, alternating, CPU and wall time."""
    import os
    import statistics

    load0 = os.getloadavg()
    runs: dict = {"this": [], "other": []}
    for k in range(repeats):
        order = ("this", "other") if k % 2 == 0 else ("other", "this")
        for side in order:
            r = run_child("engine", cells, n, other if side == "other" else None)
            runs[side].append(r)
            print(f"repeat {k + 1} {side:5s} ({r['antiamp']}): cpu {r['cpu']:.2f} s, "
                  f"wall {r['seconds']:.2f} s", flush=True)
    load1 = os.getloadavg()
    med = {s: (statistics.median(r["cpu"] for r in v), statistics.median(r["seconds"] for r in v))
           for s, v in runs.items()}
    print(f"\n{cells:,} cells x {n:,} instances, {repeats} runs each, alternating")
    print(f"median CPU: this {med['this'][0]:.2f} s, other {med['other'][0]:.2f} s, "
          f"ratio {med['this'][0] / med['other'][0]:.3f}")
    print(f"median wall: this {med['this'][1]:.2f} s, other {med['other'][1]:.2f} s, "
          f"ratio {med['this'][1] / med['other'][1]:.3f}")
    print(f"load average (1, 5, 15 min) before {load0}, after {load1}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=10_000)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--child", default=None)
    ap.add_argument("--child-split", default=None)
    ap.add_argument("--store-split", default=None,
                    help="models of SPLIT_GRIDS (comma-separated): the store's CPU per block")
    ap.add_argument("--against", default=None, help="another checkout to time beside this one")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cells-per-block", type=int, default=0,
                    help="--store-split: sweep.cells_per_block (default: each model's own)")
    ap.add_argument("--per-cell", default=None,
                    help="grids of MODEL_GRIDS (comma-separated): marginal CPU per cell")
    ap.add_argument("--sizes", default="100,10000", help="cells of the --per-cell grids")
    ap.add_argument("--this", default=None,
                    help="--per-cell: a checkout to time in place of the installed one")
    ap.add_argument("--save", default=None, metavar="JSON",
                    help="--per-cell: the record, for BENCHMARKS.md (benchmarks/"
                         "per_cell_results.json: run_all.py makes its section from it)")
    args = ap.parse_args(argv)
    if args.child_split:
        child_split(args.child_split)
        return
    if args.store_split:
        store_split(args.store_split.split(","), args.repeats, args.against,
                    args.cells_per_block)
        return
    if args.child in MODEL_GRIDS:
        child_model(args.child, args.cells, args.n)
        return
    if args.child:
        child(args.child, args.cells, args.n)
        return
    if args.per_cell:
        per_cell(args.per_cell.split(","), [int(c) for c in args.sizes.split(",")], args.n,
                 args.repeats, args.against, args.this, args.save)
        return
    if args.against:
        against(args.against, args.cells, args.n, args.repeats)
        return
    rows = [run_child("engine", c, args.n) for c in (100, 1_000, args.cells)]
    loop = run_child("loop", 1_000, args.n)
    memory = run_child("memory", 1_000, args.n)
    print(f"sweep engine, {args.n:,} instances per cell (tie-break judge, rho x b grid)\n")
    print("| cells | engine time (s) | cell-instances/s | peak RSS (MB) |")
    print("|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['cells']:,} | {r['seconds']:.1f} | {r['cells'] * r['n'] / r['seconds'] / 1e9:.2f} G "
              f"| {r['peak_mb']:.0f} |")
    e1k = rows[1]
    print(f"\n1,000 cells: engine {e1k['seconds']:.2f} s, loop of antiamp.simulate "
          f"{loop['seconds']:.2f} s: {loop['seconds'] / e1k['seconds']:.1f}x")
    print(f"1,000 cells in memory (antiamp.sweep without a store, fused blocks): "
          f"{memory['seconds']:.2f} s: {loop['seconds'] / memory['seconds']:.1f}x the loop")
    big = rows[-1]
    print(f"{big['cells']:,} cells: {big['seconds']:.1f} s (target < 120 s); peak memory "
          f"{big['peak_mb']:.0f} MB against {rows[0]['peak_mb']:.0f} MB at 100 cells")


if __name__ == "__main__":
    main()
