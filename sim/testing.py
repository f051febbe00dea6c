"""Conformance checks every model passes: :func:`check_model`.

What Gymnasium's ``check_env`` is for environments, this is for antiamp models: the
contract of :class:`antiamp.registry.Model` checked on a model's own small grids.
The test suite runs it over every registered model; a third-party model's author
runs it on theirs::

    from antiamp.testing import check_model
    check_model("toy")  # on the model's own grids (Model.grids)
    check_model("toy", grids=[{"model": {"name": "toy"},
                               "sweep": {"axes": {"toy": {"q": [0.2, 0.5]}}}}])

Every check that fails is reported (one ``AssertionError`` listing them all), and
the names of the checks that ran are returned.  In a plugin's own test suite,
:func:`parametrize_with_checks` makes each check a test of its own::

    from antiamp.testing import parametrize_with_checks

    @parametrize_with_checks(["toy"])
    def test_toy_conforms(check):
        check()

The checks:

``registered``
    the registry returns the model under its name, with a title and dataclass sections.
``help``
    ``antiamp model=<name> --help`` lists every field of the model's own sections.
``bad_values``
    every numeric or boolean field of its own sections refuses a value of the wrong
    type, a non-finite value (floats) and an absurd size (integers) with a
    :class:`~antiamp.config.ConfigError` that names the field.
``validate_reads`` (for a model that declares ``validate_reads``)
    every field the model's ``validate`` reads, on the model's first config and on
    random configs within the declared ranges, is covered by ``validate_reads``: a
    grid is validated column by column from that declaration, so a field left out
    lets cells through that ``validate`` would refuse.
``kernel_fields`` (for a model that declares ``kernel_fields``)
    every declared kernel field names a config field the model reads
    (``section.name``, ``section.*`` or ``section`` of its sections, ``run``
    included): cells are grouped for one kernel pass by these fields
    (:func:`antiamp.layout.kernel_groups`), so a misspelt one fails at the first
    block or, naming a section only, groups cells whose inputs differ.
``table`` (for a model with ``format_table``)
    the printed table of one cell fits a terminal: at most :data:`TABLE_COLUMNS`
    characters a line.
``schema``
    the grid's Dataset and one cell's follow the result schema (:mod:`antiamp.schema`):
    every metric's standard error is ``<metric>_se`` and its exact value
    ``<metric>_exact`` (never ``_theory``), beside the metric, with its dimensions
    and units; ``long_name`` and ``units`` on the metric, the companions' long names
    derived from it, ``ancillary_variables`` linking the metric to its standard
    error; a ``protocol`` coordinate with a ``long_name``.
``cell_in_grid``
    one cell run on its own equals the same cell inside a grid, bit for bit.
``blocks``
    the grid in one block equals the grid in blocks of one cell (a cell's values
    depend only on its own config).
``exact``
    where the model reports a value beside its exact value and standard error
    (``x``, ``x_se``, ``x_exact``), they agree within 5 SE.
``distributed`` (with ``client``)
    a grid run resumably on the dask ``client`` is bit-identical to the local run.
``resume`` (with ``kill=True``)
    a grid killed with SIGKILL while it runs, then rerun, is bit-identical to an
    uninterrupted run (the model must be importable in a fresh process: a built-in
    or an installed entry point).
``figures``
    the model's grid figures are written, non-empty, at most 1300 px wide.
``gpu`` (with ``gpu=True``, for a model whose ``gpu`` is true)
    the first grid run with ``run.device=cuda`` on numba's CUDA simulator (a fresh
    process with ``NUMBA_ENABLE_CUDASIM=1``: no GPU needed) equals the CPU's run:
    integers, booleans and labels bit for bit, floats within ``gpu_rtol`` relative
    (the two targets' ``exp``, ``log``, ``erfc``... differ in the last bits; a model
    whose per-instance function gives integer counts, as
    :func:`antiamp.runner.count_classes` does, is the same bits).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import typing
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

#: Agreement of a simulated value with its exact value, in standard errors.
EXACT_SE = 5.0
#: Widest figure in pixels.
MAX_FIGURE_PX = 1300
#: Widest line of a model's printed table (``format_table``), in characters.
TABLE_COLUMNS = 100
#: Random configs (within the declared ranges) on which the ``validate_reads`` probe
#: records what ``validate`` reads.
READS_CONFIGS = 150
#: Relative agreement of a float computed on the GPU with the CPU's (``gpu`` check).
GPU_RTOL = 1e-12
#: Instances a cell of the ``gpu`` check's grids (the simulator runs each GPU thread
#: as Python: thousands of instances a second).
GPU_N = 4096
#: Arrays of a store's layout (checksums, progress), not of the model's results.
_VOLATILE = ("block_digest", "cell_done", "cell_digest")


def _model(model):
    from .registry import Model, get

    return model if isinstance(model, Model) else get(str(model))


def default_grids(name: str) -> list:
    """A model's declared grids (``Model.grids``; a built-in's default is its
    ``config.GRIDS``)."""
    from .registry import get

    return list(get(name).grids)


def same(a, b, what: str = "") -> list:
    """The differences between two Datasets' values and coordinates (bit for bit,
    NaN equal to NaN), as messages; [] when they are the same."""
    return close(a, b, 0.0, what)


def close(a, b, rtol: float = GPU_RTOL, what: str = "") -> list:
    """The differences between two Datasets, as messages ([] when none): integers,
    booleans and labels bit for bit, floats within ``rtol`` relative (NaN equal to
    NaN, infinities equal only to themselves; ``rtol=0``: bit for bit)."""
    import numpy as np

    out = []
    a = a.drop_vars([v for v in _VOLATILE if v in a.variables])
    b = b.drop_vars([v for v in _VOLATILE if v in b.variables])
    if set(a.data_vars) != set(b.data_vars):
        return [f"{what}variables differ: {sorted(set(a.data_vars) ^ set(b.data_vars))}"]
    for v in list(a.data_vars) + list(a.coords):
        x, y = np.asarray(a[v].values), np.asarray(b[v].values)
        if x.shape != y.shape:
            out.append(f"{what}{v}: shape {x.shape} != {y.shape}")
        elif rtol == 0.0 or not (x.dtype.kind in "fc" and y.dtype.kind in "fc"):
            if not np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"):
                out.append(f"{what}{v}: values differ")
        else:
            ok = np.isclose(x, y, rtol=rtol, atol=0.0, equal_nan=True)
            if not ok.all():
                k = np.flatnonzero(~ok.ravel())[0]
                out.append(f"{what}{v}: {int((~ok).sum())} values differ by more than "
                           f"{rtol:g} relative (first: {x.ravel()[k]!r} vs {y.ravel()[k]!r})")
    return out


def _with_n(cfg: dict, n: Optional[int]) -> dict:
    cfg = copy.deepcopy(cfg)
    if n is not None:
        cfg["run"] = {**(cfg.get("run") or {}), "n_instances": int(n)}
    cfg["run"] = {**(cfg.get("run") or {}), "progress": False}
    return cfg


def _own_fields(model) -> list:
    """``(section, field, type)`` of the fields of the sections the model declares and
    owns (a section another model also declares is shared and checked there)."""
    out = []
    for sec, cls in model.sections.items():
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            h = hints.get(f.name)
            args = [a for a in typing.get_args(h) if a is not type(None)]
            out.append((sec, f.name, args[0] if len(args) == 1 else h))
    return out


def _bad_values(typ) -> list:
    if typ is bool:
        return ["maybe"]
    if typ is int:
        return [1.5, "many", 10**15]
    if typ is float:
        return [math.nan, math.inf, "many"]
    return []


def _check_registered(model, problems):
    from .registry import get, names

    if model.name not in names():
        problems.append(f"registered: {model.name!r} is not among antiamp.models.names()")
    elif get(model.name) is not model:
        problems.append(f"registered: antiamp.models.get({model.name!r}) is another object")
    if not model.title:
        problems.append("registered: the model has no title")
    for sec, cls in model.sections.items():
        if not dataclasses.is_dataclass(cls):
            problems.append(f"registered: section {sec!r} is not a dataclass")


def _check_help(model, problems):
    from .cli import help_text

    text = help_text([f"model={model.name}"])
    missing = [f"{s}.{f}" for s, f, _ in _own_fields(model) if f"{s}.{f} =" not in text]
    if missing:
        problems.append(f"help: antiamp model={model.name} --help omits {missing}")


def _check_bad_values(model, base: dict, problems):
    from .config import ConfigError
    from .registry import to_model_config

    for sec, name, typ in _own_fields(model):
        for v in _bad_values(typ):
            cfg = copy.deepcopy(base)
            cfg.pop("sweep", None)
            cfg[sec] = {**(cfg.get(sec) or {}), name: v}
            try:
                to_model_config(cfg)
            except ConfigError as exc:
                if f"{sec}.{name}" not in str(exc):
                    problems.append(f"bad_values: {sec}.{name}={v!r} refused without naming the "
                                    f"field: {exc}")
            except Exception as exc:  # noqa: BLE001 (reported, not raised)
                problems.append(f"bad_values: {sec}.{name}={v!r} raised "
                                f"{type(exc).__name__}: {exc}"[:300])
            else:
                problems.append(f"bad_values: {sec}.{name}={v!r} accepted")


def _one_cell(grid: dict) -> tuple[dict, dict]:
    """(the config of one cell of ``grid``: each axis at its second value, or its
    only one; the coordinates that select it)."""
    cell = {k: copy.deepcopy(v) for k, v in grid.items() if k != "sweep"}
    sel = {}
    for sec, fields in grid["sweep"]["axes"].items():
        for f, values in fields.items():
            v = values[1] if len(values) > 1 else values[0]
            cell[sec] = {**(cell.get(sec) or {}), f: v}
            sel[f] = v
    return cell, sel


def _check_schema(ds, problems, tag: str = ""):
    from .schema import problems as departures

    problems += [f"schema{tag}: {p}" for p in departures(ds)]


def _check_cell_in_grid(grid_ds, grid: dict, problems, tag: str = ""):
    import antiamp

    cell, sel = _one_cell(grid)
    one = antiamp.simulate(cell)
    _check_schema(one, problems, f"{tag} (one cell)")
    g = grid_ds.sel(sel)
    for d, n in one.sizes.items():  # a grid pads e.g. equilibria to its largest cell
        if d in g.sizes and g.sizes[d] != n:
            g = g.isel({d: slice(0, n)})
    problems += same(one, g[list(one.data_vars)], f"cell_in_grid{tag}: ")


def _check_exact(ds, problems, tag: str = ""):
    import numpy as np

    for v in ds.data_vars:
        se = f"{v}_se"
        ref = f"{v}_exact" if f"{v}_exact" in ds else None
        if se not in ds or ref is None:
            continue
        x, s, e = (np.asarray(ds[k].values, float) for k in (v, se, ref))
        try:
            x, s, e = np.broadcast_arrays(x, s, e)
        except ValueError:
            continue
        ok = np.isfinite(x) & np.isfinite(s) & np.isfinite(e) & (s > 0)
        z = np.abs(x[ok] - e[ok]) / s[ok]
        if z.size and z.max() > EXACT_SE:
            problems.append(f"exact{tag}: {v} differs from {ref} by {z.max():.1f} SE "
                            f"({int((z > EXACT_SE).sum())} of {z.size} values beyond {EXACT_SE})")


def _check_figures(model, ds, tmp: Path, problems):
    if model.figures is None:
        return
    from matplotlib.image import imread

    paths = model.figures(ds, tmp / f"{model.name}-fig") or []
    if not paths:
        problems.append("figures: the model's figures wrote nothing")
    for p in paths:
        p = Path(p)
        if not p.is_file() or p.stat().st_size == 0:
            problems.append(f"figures: {p.name} is missing or empty")
        elif p.suffix == ".png" and imread(p).shape[1] > MAX_FIGURE_PX:
            problems.append(f"figures: {p.name} is {imread(p).shape[1]} px wide")


# ------------------------------------------------------------- the validate_reads probe
_RECORDING: dict = {}


def _recording(section_name: str, section, log: set):
    """``section`` as an instance of a subclass of its dataclass that adds
    "section.field" to ``log`` on every field read (but the declared range checks',
    :func:`antiamp.config.check_declared`, which the engine runs column by column).
    Hand-written: a subclass keeps ``isinstance``, ``dataclasses.fields`` and
    ``replace`` working where a generic proxy (``unittest.mock``) would not."""
    import sys

    from .config import check_declared

    cls = type(section)
    sub = _RECORDING.get(cls)
    if sub is None:
        names = frozenset(f.name for f in dataclasses.fields(cls))

        def getattribute(self, name):
            if name in names and sys._getframe(1).f_code is not check_declared.__code__:
                get = object.__getattribute__
                get(self, "_reads").add(f"{get(self, '_section')}.{name}")
            return object.__getattribute__(self, name)

        sub = _RECORDING[cls] = type(cls.__name__, (cls,), {"__getattribute__": getattribute})
    obj = object.__new__(sub)
    obj.__dict__.update(section.__dict__, _reads=log, _section=section_name)
    return obj


def reads_of(model, cfg) -> tuple[set, bool]:
    """(the fields ``model.validate`` reads on the validated config ``cfg``, whether it
    accepts ``cfg``)."""
    from .config import ConfigError

    log: set = set()
    rec = dataclasses.replace(cfg)
    for f in dataclasses.fields(cfg):
        section = getattr(cfg, f.name)
        if dataclasses.is_dataclass(section):
            object.__setattr__(rec, f.name, _recording(f.name, section, log))
    try:
        model.validate(rec)
    except ConfigError:
        return log, False
    return log, True


def undeclared(model, reads) -> set:
    """The fields of ``reads`` that the model's ``validate_reads`` does not cover."""
    from .layout import covers

    return {r for r in reads if not any(covers(f, r) for f in model.validate_reads or ())}


def fields_of(model, base, sweepable: bool = False) -> list:
    """(section, field) of every declared field the model reads (its sections and the
    shared ones it uses); ``sweepable``: those a grid's axes may take."""
    secs = set(model.uses) | set(model.sections)
    if sweepable:
        secs &= set(type(base).SWEEPABLE)
    return [(s, f) for s in sorted(secs) if dataclasses.is_dataclass(getattr(base, s, None))
            for f in dataclasses.fields(getattr(base, s))
            if f.name != "name" and ("range" in f.metadata or "choices" in f.metadata)]


def values_of(f, rng, bad: bool = False) -> list:
    """Values in the field's declared range or choices (its ends, its default and
    near it, random ones); ``bad``: one outside them too."""
    from .config import Interval

    meta, d = f.metadata, f.default
    if "choices" in meta:
        return list(meta["choices"]) + (["no-such-choice"] if bad else [])
    iv = Interval.parse(meta["range"])
    lo = iv.lo if math.isfinite(iv.lo) else -5
    hi = iv.hi if math.isfinite(iv.hi) else lo + 10
    if iv.integer:  # small integers: a huge size is a slow config, not a different check
        ints = [lo, lo + 1, lo + 2, lo + 3, hi if hi - lo < 100 else lo + 8]
        ints += [] if d is None else [d - 1, d + 1, 2 * d]
        out: list[Any] = [int(v) for v in ints if iv.contains(v)]
    else:
        hi = min(hi, lo + 20)
        got = [lo, hi, (lo + hi) / 2, lo + (hi - lo) * rng.random(),
               lo + (hi - lo) * rng.random(), lo + rng.random(), lo + rng.random()]
        got += [] if d is None else [d * 0.5, d * 1.5, d + 0.1]
        out = [float(v) for v in got if iv.contains(v)]
    out = ([] if d is None else [d]) + out
    if bad and math.isfinite(iv.lo):
        out.append(type(out[-1])(iv.lo - 1))
    return out


def random_config(base, fields, rng, k: int):
    """``base`` with ``k`` random fields set to random values of their ranges."""
    changes: dict = {}
    for s, f in rng.sample(fields, min(k, len(fields))):
        changes.setdefault(s, {})[f.name] = rng.choice(values_of(f, rng))
    return dataclasses.replace(base, **{s: dataclasses.replace(getattr(base, s), **c)
                                        for s, c in changes.items()})


def valid_configs(model, base, rng, n: int, tries: int = 100):
    """``n`` random configs that pass the shared checks (what the engine checks column
    by column before a model's own ``validate``); fewer where ``tries`` a config find
    none."""
    from .config import ConfigError, validate

    fields = fields_of(model, base)
    out: list = []
    for _ in range(n * tries):
        if len(out) >= n or not fields:
            break
        c = random_config(base, fields, rng, rng.randint(0, 3))
        try:
            validate(c)
        except ConfigError:
            continue
        out.append(c)
    return out


def _base_config(model, grids: list):
    """The model's first config (its first example without a grid or an export, else
    its first grid's config without the grid), validated."""
    from .registry import to_model_config

    cell = next((c for _, c in model.examples if "sweep" not in c and "export" not in c),
                None)
    if cell is None:
        cell = _one_cell(grids[0])[0]
    return to_model_config({k: v for k, v in cell.items() if k not in ("sweep", "export")},
                           model)[1]


def _check_validate_reads(model, grids: list, problems, n: int = READS_CONFIGS):
    """Every field ``validate`` reads (on the model's first config and on ``n`` random
    configs within the declared ranges) is covered by ``validate_reads``."""
    import random

    if model.validate is None or model.validate_reads is None:
        return
    base = _base_config(model, grids)
    rng = random.Random(f"reads {model.name}")
    read: set = set()
    for c in [base, *valid_configs(model, base, rng, n)]:
        read |= reads_of(model, c)[0]
    missing = undeclared(model, read)
    if missing:
        problems.append(f"validate_reads: {model.name}'s validate reads {sorted(missing)}, "
                        f"not in its validate_reads {tuple(model.validate_reads)} (a grid "
                        "over them is validated column by column from that declaration and "
                        "lets through cells that validate refuses)")


def _check_kernel_fields(model, grids: list, problems):
    """Every ``kernel_fields`` entry names a section the model reads and, unless it is
    a whole section, a field of it."""
    cfg = _base_config(model, grids)
    readable = set(model.uses) | set(model.sections) | {"run"}
    for f in model.kernel_fields:
        section, _, name = f.partition(".")
        if section not in readable or not hasattr(cfg, section):
            problems.append(f"kernel_fields: {f!r} names no section {model.name} reads "
                            f"({', '.join(sorted(readable))})")
        elif name not in ("", "*") and name not in {
                x.name for x in dataclasses.fields(getattr(cfg, section))}:
            problems.append(f"kernel_fields: {f!r}: {section} has no field {name!r}")


def _check_table(model, grids: list, problems):
    """The printed table of one cell: at most :data:`TABLE_COLUMNS` characters a line."""
    import antiamp

    if model.format_table is None:
        return
    cell = next((c for _, c in model.examples if "sweep" not in c and "export" not in c),
                None)
    cell = _one_cell(grids[0])[0] if cell is None else _with_n(cell, None)
    text = model.format_table(antiamp.simulate(cell))
    wide = [ln for ln in text.splitlines() if len(ln) > TABLE_COLUMNS]
    if wide:
        problems.append(f"table: {len(wide)} line(s) of the printed table wider than "
                        f"{TABLE_COLUMNS} characters (first: {wide[0][:120]!r})")


_KILL_SCRIPT = """
import sys, antiamp
antiamp.sweep({cfg!r}, sys.argv[1], progress=False, log=lambda *a: None)
"""


def _check_resume(grid: dict, ref, tmp: Path, problems, kills: int = 3):
    """Run ``grid`` into a store in a fresh process, SIGKILL it at ``kills`` moments
    (as it starts, once one block is written, once two are), then rerun."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import xarray as xr

    cfg = copy.deepcopy(grid)
    cfg["sweep"] = {**cfg["sweep"], "cells_per_block": 1}
    store = tmp / f"resume-{os.getpid()}-{time.monotonic_ns()}.zarr"
    script = store.with_suffix(".py")
    script.write_text(_KILL_SCRIPT.format(cfg=cfg))

    def start():
        return subprocess.Popen([sys.executable, str(script), str(store)], cwd=tmp,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def blocks_done():  # one cell a block: the cells marked done
        try:
            import numpy as np
            import zarr

            done = zarr.open_array(str(store / "cell_done"), mode="r")
            return int(np.asarray(done[...]).sum())
        except Exception:  # no store yet, or one being laid out
            return 0

    moments = [lambda: True, lambda: blocks_done() >= 1, lambda: blocks_done() >= 2][:kills]
    for ready in moments:
        p = start()
        t0 = time.monotonic()
        while p.poll() is None and time.monotonic() - t0 < 300 and not ready():
            time.sleep(0.005)
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
        p.wait()
        p.stderr.close()  # the killed run's pipe (else left to the garbage collector)
    p = start()
    _, err = p.communicate(timeout=900)
    if p.returncode != 0:
        problems.append(f"resume: the rerun after kill -9 failed: {err.decode()[-300:]}")
        return
    problems += same(ref, xr.open_zarr(store).load(), "resume: ")


_GPU_SCRIPT = """
import sys
from antiamp.sweeps.blocks import run_grid
run_grid({cfg!r}, progress=False).to_netcdf(sys.argv[1])
"""


def _check_gpu(model, grid: dict, tmp: Path, problems, rtol: float, n: int):
    """The grid on numba's CUDA simulator (``run.device=cuda``) in a fresh process,
    against the same grid on the CPU here."""
    import os
    import subprocess
    import sys
    import time

    import xarray as xr

    from .sweeps.blocks import run_grid

    if not model.gpu:
        problems.append(f"gpu: model {model.name!r} declares no GPU kernels (Model.gpu is "
                        "false), so run.device=cuda is refused for it")
        return
    cpu = _with_n(grid, n)
    cpu["run"] = {**cpu["run"], "device": "cpu"}
    gpu = copy.deepcopy(cpu)
    gpu["run"]["device"] = "cuda"
    out = tmp / f"gpu-{os.getpid()}-{time.monotonic_ns()}.nc"
    script = out.with_suffix(".py")
    script.write_text(_GPU_SCRIPT.format(cfg=gpu))
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    r = subprocess.run([sys.executable, str(script), str(out)], cwd=tmp, env=env,
                       capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        problems.append(f"gpu: the grid with run.device=cuda on the CUDA simulator failed: "
                        f"{r.stderr[-400:]}")
        return
    ref = run_grid(cpu, progress=False)
    with xr.open_dataset(out) as ds:
        problems += close(ref, ds.load(), rtol, "gpu: ")


def check_model(model: Any, *, grids: Optional[Iterable[dict]] = None, client=None,
                kill: bool = False, figures: bool = True, n_instances: Optional[int] = None,
                tmp_path: Optional[Path] = None, gpu: bool = False,
                gpu_rtol: float = GPU_RTOL, gpu_n: int = GPU_N) -> list:
    """Run the conformance checks on ``model`` (a :class:`~antiamp.registry.Model` or
    a registered name); raise ``AssertionError`` listing every failure.

    Parameters
    ----------
    model : Model or str
        The model, registered (``antiamp.models.register`` or an entry point).
    grids : list of dict, optional
        Small grids of the model (configs with ``sweep.axes``; each axis with at
        least two values is best).  Default: the model's own (``Model.grids``; a
        built-in model's ``config.GRIDS``).
    client : dask.distributed.Client, optional
        Also run the first grid on this client and compare (``distributed``).
    kill : bool
        Also kill a run of the first grid with SIGKILL and resume it (``resume``).
    figures : bool
        Also draw the model's grid figures (``figures``).
    n_instances : int, optional
        Instances per cell for the grids (default: each grid's own).
    tmp_path : Path, optional
        Where stores and figures go (default: a temporary folder, removed after).
    gpu : bool
        Also run the first grid with ``run.device=cuda`` on numba's CUDA simulator
        and compare it with the CPU's run (``gpu``; the model must be importable in a
        fresh process).
    gpu_rtol : float
        The ``gpu`` check's relative tolerance for floats (integers are exact).
    gpu_n : int
        Instances a cell in the ``gpu`` check (the simulator is slow).

    Returns
    -------
    list of str
        The names of the checks that ran.
    """
    import tempfile

    problems: list = []
    ran: list = []
    with tempfile.TemporaryDirectory(prefix="antiamp-check-") as scratch:
        tmp = Path(tmp_path) if tmp_path is not None else Path(scratch)
        for name, check in _checks(model, grids=grids, client=client, kill=kill,
                                   figures=figures, n_instances=n_instances, tmp=tmp,
                                   gpu=gpu, gpu_rtol=gpu_rtol, gpu_n=gpu_n):
            ran.append(name)
            check(problems)
    if problems:
        raise AssertionError(f"model {_model(model).name!r} fails {len(problems)} conformance "
                             "check(s):\n  " + "\n  ".join(problems))
    return ran


def _checks(model, *, grids, client, kill, figures, n_instances, tmp: Path, gpu,
            gpu_rtol, gpu_n) -> list:
    """``(name, check)`` of every check :func:`check_model` runs, in its order; each
    ``check(problems)`` appends what it finds.  The grids' Datasets are computed once,
    on first use, and shared between the checks."""
    import antiamp

    from .sweeps.blocks import run_grid

    model = _model(model)
    grids = [_with_n(g, n_instances) for g in (grids if grids is not None
                                               else model.grids)]
    if not grids:
        raise ValueError(f"check_model({model.name!r}) needs grids: configs of the model "
                         "with sweep.axes (declare them as Model.grids, or pass grids=)")
    done: dict = {}

    def grid_ds(k):
        if k not in done:
            done[k] = run_grid(grids[k], progress=False)
        return done[k]

    out: list[tuple[str, Callable[..., object]]] = [
           ("registered", lambda p: _check_registered(model, p)),
           ("help", lambda p: _check_help(model, p)),
           ("bad_values", lambda p: _check_bad_values(model, grids[0], p))]
    if model.validate is not None and model.validate_reads is not None:
        out.append(("validate_reads", lambda p: _check_validate_reads(model, grids, p)))
    if model.kernel_fields:
        out.append(("kernel_fields", lambda p: _check_kernel_fields(model, grids, p)))
    if model.format_table is not None:
        out.append(("table", lambda p: _check_table(model, grids, p)))

    def figures_of(k, p):
        (tmp / f"g{k}").mkdir(parents=True, exist_ok=True)
        _check_figures(model, grid_ds(k), tmp / f"g{k}", p)

    for k, grid in enumerate(grids):
        out += [
            (f"schema[{k}]", lambda p, k=k: _check_schema(grid_ds(k), p, f"[{k}]")),
            (f"cell_in_grid[{k}]",
             lambda p, k=k, g=grid: _check_cell_in_grid(grid_ds(k), g, p, f"[{k}]")),
            (f"blocks[{k}]", lambda p, k=k, g=grid: p.extend(same(
                grid_ds(k), run_grid(g, cells_per_block=1, progress=False), f"blocks[{k}]: "))),
            (f"exact[{k}]", lambda p, k=k: _check_exact(grid_ds(k), p, f"[{k}]"))]
        if figures:
            out.append((f"figures[{k}]", lambda p, k=k: figures_of(k, p)))
    first = grids[0]

    def distributed(p):
        log = lambda *a: None  # noqa: E731
        local = antiamp.sweep(first, tmp / "local.zarr", progress=False, log=log).load()
        dist = antiamp.sweep(first, tmp / "dist.zarr", client=client, progress=False,
                             log=log).load()
        p += same(local, dist, "distributed: ")
        p += same(grid_ds(0), local, "distributed (store vs memory): ")

    if client is not None:
        out.append(("distributed", distributed))
    if kill:
        out.append(("resume", lambda p: _check_resume(first, grid_ds(0), tmp, p)))
    if gpu:
        out.append(("gpu", lambda p: _check_gpu(model, first, tmp, p, gpu_rtol, gpu_n)))
    return out


def parametrize_with_checks(models, **options):
    """A pytest decorator that makes each conformance check of each of ``models`` (names
    or :class:`~antiamp.registry.Model` objects) a test of its own, as scikit-learn's
    ``parametrize_with_checks`` does for estimators: the test takes one argument,
    ``check``, and calls it; it fails with that check's findings alone.  ``options``
    are :func:`check_model`'s (``grids``, ``figures``, ``kill``, ...).

    The checks of one model share its grids' Datasets (computed by the first check
    that needs them, in the test process).  Each check's test id is
    ``<model>-<check>``."""
    import tempfile

    import pytest

    params, ids = [], []
    root = options.pop("tmp_path", None)
    for m in models:
        model = _model(m)
        tmp = Path(tempfile.mkdtemp(prefix=f"antiamp-check-{model.name}-", dir=root))
        for name, check in _checks(model, tmp=tmp, **{**_CHECK_DEFAULTS, **options}):
            params.append(_OneCheck(model.name, name, check))
            ids.append(f"{model.name}-{name}")
    return pytest.mark.parametrize("check", params, ids=ids)


class _OneCheck:
    """One check of one model, called by a test: ``AssertionError`` with its findings."""

    def __init__(self, model: str, name: str, check):
        self.model, self.name, self._check = model, name, check

    def __call__(self) -> None:
        problems: list = []
        self._check(problems)
        if problems:
            raise AssertionError(f"model {self.model!r} fails the {self.name} check:\n  "
                                 + "\n  ".join(problems))

    def __repr__(self) -> str:
        return f"<check {self.name} of model {self.model!r}>"


_CHECK_DEFAULTS = dict(grids=None, client=None, kill=False, figures=True, n_instances=None,
                       gpu=False, gpu_rtol=GPU_RTOL, gpu_n=GPU_N)
