"""Fuzzing every command and the API with generated requests, valid and bad.

Each generated command line runs in this process (the commands' own ``main``):
a bad request must exit with status 2 and one line naming a field it was given,
create no run directory, print no traceback and leave existing outputs (a
foreign directory, an earlier antiamp store) as they were; a valid one must run
to the end (exit 0).  Each generated API config either runs or raises
``ConfigError``, never another exception.  The tallies of distinct requests
are printed at the end (``pytest -s``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import antiamp
from antiamp.config import ConfigError

TALLY: Counter = Counter()
SEEN: dict = {}
_RUN = itertools.count()

BAD_NUMBERS = ["-1", "1.5", "1e30", "nan", "inf", "-inf", "abc", "true", "[0.1,0.2]", "''",
               "null", str(2 ** 64), "0x10"]


def _values(valid):
    return st.sampled_from([str(v) for v in valid] + BAD_NUMBERS)


# Fields of `antiamp` and the values tried (valid ones are kept small, so that
# every valid request runs in well under a second).
CELL_FIELDS = {
    "model.rho": _values([0.0, 0.3, 1.0]),
    "model.p": _values([0.6, 1.0]),
    "model.pi": _values([0.5]),
    "model.c_e": _values([0.0, 0.05]),
    "model.stance": st.sampled_from(["signal", "fixed", "sideways", "1"]),
    "model.a": st.sampled_from(["0", "1", "2", "true", "x"]),
    "model.x_P": _values([0.5]),
    "judge.b": _values([0.2, 0.7]),
    "judge.jury_size": st.sampled_from(["1", "3", "0", "10002", str(2 ** 64), "2.5", "x"]),
    "judge.jury_tie": _values([0.5]),
    "protocol.consult_default": _values([0.0]),
    "welfare.beta": _values([0.0, 2.0]),
    "run.n_instances": st.sampled_from(["1000", "0", "-5", "1e30", str(2 ** 64), "x", "2.5"]),
    "run.seed": st.sampled_from(["0", "7", "-1", str(2 ** 64), "x"]),
    "run.n_threads": st.sampled_from(["0", "1", "1000", "-1", "x"]),
    "run.progress": st.sampled_from(["false", "maybe", "2"]),
    "run.figure": st.sampled_from(["false", "2", "yes"]),
    "export.n_instances": st.sampled_from(["0", "10", "-1", str(10 ** 13)]),
    "export.path": st.sampled_from(["t.csv", "t.parquet", "t.txt", "../../t.csv"]),
    "signals.eta": _values([0.3]),
    "nosuch.field": st.sampled_from(["1"]),
    "model.nosuch": st.sampled_from(["1"]),
}
GROUPS = {
    "judge": st.sampled_from(["tiebreak", "logit", "oracle"]),
    "model": st.sampled_from(["baseline", "telepathy"]),
}
SWEEP_FIELDS = {
    "sweep.axes.model.rho": st.sampled_from(
        ["[0.1,0.4]", "[0.1,true]", "[1,1.0]", "[0.1,abc]", "[]", "{linspace:[0,1,3]}",
         "{linspace:[0,1,1e9]}", "{range:[0,1,1e-9]}", "{geomspace:[0,1,3]}",
         "{linspace:[0,1,nan]}", "{uniform:[0,1]}", "5"]),
    "sweep.axes.judge.b": st.sampled_from(["[0.3,0.8]", "[2]", "{logspace:[-1,0,2]}"]),
    "sweep.axes.signals.eta": st.sampled_from(["[0.1,0.2]"]),
    "sweep.axes.judge.jury_size": st.sampled_from(["[1,3]", "[true,3]", "[0,1]"]),
    "sweep.design": st.sampled_from(["grid", "lhs", "spiral"]),
    "sweep.n_points": st.sampled_from(["4", "0", "-3", "1e12"]),
    "sweep.design_seed": st.sampled_from(["0", "-1", str(2 ** 40), "x"]),
    "sweep.cells_per_block": st.sampled_from(["0", "1", "-2", "x"]),
    "sweep.plot_vars": st.sampled_from(["[amp]", "[nope]"]),
    "sweep.overwrite": st.sampled_from(["true", "false", "2"]),
    "sweep.crn": st.sampled_from(["true", "false", "no"]),
    "executor.n_workers": st.sampled_from(["1", "0", "4"]),
    "executor.address": st.sampled_from(["not-an-address", "tcp://127.0.0.1:1"]),
    "executor": st.sampled_from(["local", "slurm", "distributed", "moon"]),
    "run.n_instances": st.sampled_from(["1000", "0", "1e30", "x"]),
    "judge.b": _values([0.5]),
    "model.c_e": _values([0.0]),
    "sweep": st.sampled_from(["amp_gap", "nosuch"]),
}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """A foreign directory and an earlier antiamp store: no request may touch them."""
    d = tmp_path_factory.mktemp("outputs")
    foreign = d / "foreign"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("years of work")
    store = d / "earlier.zarr"
    antiamp.sweep({"run": {"n_instances": 500},
                   "sweep": {"axes": {"model": {"rho": [0.1, 0.2]}}, "plot": False}},
                  store, progress=False, log=lambda *a: None)
    return d, foreign, store


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        h.update(str(p.relative_to(path)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def _invoke(main, argv: list) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old = sys.argv
    sys.argv = argv
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = old
    return code, out.getvalue(), err.getvalue()


def _check(kind, main, prog, overrides, tmp, outputs):
    d, foreign, store = outputs
    before = (_digest(foreign), _digest(store))
    run_dir = tmp / f"run-{next(_RUN)}"
    argv = [prog, *overrides, f"hydra.run.dir={run_dir}"]
    code, out, err = _invoke(main, argv)
    key = (kind, tuple(sorted(overrides)))
    assert "Traceback" not in err, err
    assert code in (0, 2), (argv, code, err[-2000:])
    if code == 2:
        msg = err.strip()
        assert msg.startswith(f"{prog}: error:"), (argv, err)
        names = {o.split("=")[0].rsplit(".", 1)[-1] for o in overrides}
        names |= {o.split("=")[0] for o in overrides}
        names |= {o.split("=")[0].split(".")[0] for o in overrides}  # a section set
        names |= {o.split("=", 1)[1] for o in overrides if "=" in o}
        assert any(n and n in msg for n in names), (argv, msg)
        assert not run_dir.exists(), (argv, msg)
        if key not in SEEN:
            TALLY[f"{kind}: refused cleanly"] += 1
    elif key not in SEEN:
        TALLY[f"{kind}: valid, ran"] += 1
    SEEN[key] = code
    assert (_digest(foreign), _digest(store)) == before, argv


def _overrides(fields, groups=None, max_size=4):
    pairs = st.lists(st.sampled_from(sorted(fields)), min_size=1, max_size=max_size,
                     unique=True).flatmap(
        lambda keys: st.tuples(*[fields[k].map(lambda v, k=k: f"{k}={v}") for k in keys]))
    if not groups:
        return pairs.map(list)
    g = st.lists(st.sampled_from(sorted(groups)), max_size=1, unique=True).flatmap(
        lambda keys: st.tuples(*[groups[k].map(lambda v, k=k: f"{k}={v}") for k in keys]))
    return st.tuples(pairs, g).map(lambda t: list(t[0]) + list(t[1]))


FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


@FUZZ
@given(ov=_overrides(CELL_FIELDS, GROUPS))
def test_fuzz_antiamp(ov, tmp_path, outputs):
    from antiamp.cli import main

    _check("antiamp", main, "antiamp", ov + ["run.figure=false"] * ("run.figure" not in
                                                                   str(ov)), tmp_path, outputs)


def _store_targets(outputs):
    d, foreign, store = outputs
    return st.sampled_from([f"sweep.store={foreign}", f"sweep.store={store}", "sweep.store=..",
                            "sweep.store=.", "sweep.store=s.zarr"])


@FUZZ
@given(data=st.data())
def test_fuzz_antiamp_sweep(data, tmp_path, outputs):
    from antiamp.sweeps.cli import main

    ov = data.draw(_overrides(SWEEP_FIELDS, max_size=5))
    ov.append(data.draw(_store_targets(outputs)))
    if not any(o.startswith("sweep.axes") or o.startswith("sweep=") for o in ov):
        ov.append("sweep.axes.model.rho=[0.1,0.4]")
    if not any(o.startswith("run.n_instances") for o in ov):
        ov.append("run.n_instances=1000")
    ov.append("sweep.plot=false")
    _check("antiamp-sweep", main, "antiamp-sweep", ov, tmp_path, outputs)


API_VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2, 2 ** 70),
                       st.text(max_size=5), st.booleans(), st.none(),
                       st.lists(st.integers(0, 3), max_size=2), st.sampled_from([0.3, 1, 0.0]))


@FUZZ
@given(cfg=st.one_of(
    st.dictionaries(st.sampled_from(["model", "judge", "run", "welfare", "nosuch", "signals"]),
                    st.dictionaries(st.sampled_from(["rho", "b", "p", "n_instances", "seed",
                                                     "jury_size", "kind", "name", "eta", "x"]),
                                    API_VALUES, max_size=3), max_size=3),
    st.lists(st.integers(), max_size=2), st.text(max_size=4), st.integers(),
    st.just({"model": 5}), st.just({"run": {"n_instances": 10 ** 30}})))
def test_fuzz_api(cfg):
    run = cfg.get("run") if isinstance(cfg, dict) else None
    if isinstance(run, dict) and run.get("n_instances") not in (None,) and \
            isinstance(run.get("n_instances"), int) and 0 < run["n_instances"] <= 10 ** 14:
        run["n_instances"] = min(run["n_instances"], 2000)  # a valid size that runs fast
    elif isinstance(cfg, dict) and isinstance(run, dict) and "n_instances" not in run:
        run["n_instances"] = 2000
    elif isinstance(cfg, dict) and "run" not in cfg:
        cfg = {**cfg, "run": {"n_instances": 2000}}
    key = ("api", repr(cfg))
    try:
        antiamp.simulate(cfg)
        outcome = "valid, ran"
    except ConfigError as exc:
        assert str(exc)
        outcome = "refused cleanly"
    if key not in SEEN:
        TALLY[f"api: {outcome}"] += 1
    SEEN[key] = outcome


def test_zz_report_tallies():
    """Prints how many distinct requests each part tried (run with -s)."""
    print("\nfuzz tallies (distinct requests):")
    for k, v in sorted(TALLY.items()):
        print(f"  {k}: {v}")
