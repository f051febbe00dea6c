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
import itertools
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import antiamp
from antiamp.config import ConfigError
from cli_runner import invoke

TALLY: Counter = Counter()
SEEN: dict = {}
_RUN = itertools.count()

BAD_NUMBERS = ["-1", "1.5", "1e30", "nan", "inf", "-inf", "abc", "true", "[0.1,0.2]", "''",
               "null", str(2 ** 64), "0x10"]


def _values(valid, bad=None):
    """(valid values, bad values) of a field, as override strings."""
    return ([str(v) for v in valid], BAD_NUMBERS if bad is None else bad)


# Fields of `antiamp` and the values tried (valid ones are kept small, so that
# every valid request runs in well under a second).
CELL_FIELDS = {
    "model.rho": _values([0.0, 0.3, 1.0]),
    "model.p": _values([0.6, 1.0]),
    "model.pi": _values([0.5]),
    "model.c_e": _values([0.0, 0.05]),
    "model.stance": (["signal", "fixed"], ["sideways", "1"]),
    "model.a": (["0", "1"], ["2", "true", "x"]),
    "model.x_P": _values([0.5]),
    "judge.b": _values([0.2, 0.7]),
    "judge.jury_size": (["1", "3"], ["0", "10002", str(2 ** 64), "2.5", "x"]),
    "judge.jury_tie": _values([0.5]),
    "protocol.consult_default": _values([0.0]),
    "welfare.beta": _values([0.0, 2.0]),
    "run.n_instances": (["1000"], ["0", "-5", "1e30", str(2 ** 64), "x", "2.5"]),
    "run.seed": (["0", "7"], ["-1", str(2 ** 64), "x"]),
    "run.n_threads": (["0", "1"], ["1000", "-1", "x"]),
    "run.progress": (["false"], ["maybe", "2"]),
    "export.n_instances": (["0", "10"], ["-1", str(10 ** 13)]),
    "export.path": (["t.csv", "t.parquet"], ["t.txt", "../../t.csv"]),
    "signals.eta": ([], ["0.3"]),
    "nosuch.field": ([], ["1"]),
    "model.nosuch": ([], ["1"]),
}
GROUPS = {
    "judge": (["tiebreak", "logit"], ["oracle"]),
    "model": (["baseline", "panel", "signals", "options", "messages", "loop"], ["telepathy"]),
}
SWEEP_FIELDS = {
    "sweep.axes.model.rho": (
        ["[0.1,0.4]", "{linspace:[0,1,3]}"],
        ["[0.1,true]", "[1,1.0]", "[0.1,abc]", "[]", "{linspace:[0,1,1e9]}",
         "{range:[0,1,1e-9]}", "{geomspace:[0,1,3]}", "{linspace:[0,1,nan]}",
         "{uniform:[0,1]}", "5", "[0.1,1.5]"]),
    "sweep.axes.judge.b": (["[0.3,0.8]", "{logspace:[-1,0,2]}"], ["[2]", "[-0.1,0.5]"]),
    "sweep.axes.signals.eta": ([], ["[0.1,0.2]"]),
    "sweep.axes.judge.jury_size": (["[1,3]"], ["[true,3]", "[0,1]"]),
    "sweep.design": (["grid"], ["spiral"]),
    "sweep.n_points": (["4"], ["0", "-3", "1e12"]),
    "sweep.design_seed": (["0"], ["-1", str(2 ** 40), "x"]),
    "sweep.cells_per_block": (["0", "1"], ["-2", "x"]),
    "sweep.plot_vars": (["[amp]"], ["[nope]"]),
    "sweep.overwrite": (["true", "false"], ["2"]),
    "sweep.crn": (["true", "false"], ["no"]),
    "executor.n_workers": (["1"], ["0", "4"]),
    "executor.address": ([], ["not-an-address", "tcp://127.0.0.1:1"]),
    "executor": (["local"], ["slurm", "distributed", "moon"]),
    "run.n_instances": (["1000"], ["0", "1e30", "x"]),
    "judge.b": _values([0.5]),
    "model.c_e": _values([0.0]),
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


def _check(kind, main, prog, overrides, tmp, outputs):
    d, foreign, store = outputs
    before = (_digest(foreign), _digest(store))
    run_dir = tmp / f"run-{next(_RUN)}"
    argv = [prog, *overrides, f"hydra.run.dir={run_dir}"]
    code, out, err = invoke(main, argv)
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
    assert _digest(foreign) == before[0], argv
    replaced = code == 0 and f"sweep.store={store}" in overrides and \
        "sweep.overwrite=true" in overrides  # our own store, replaced on request
    assert replaced or _digest(store) == before[1], argv


def _overrides(fields, groups=None, max_size=4):
    """Up to ``max_size`` field overrides (and a group choice): half the requests
    draw only valid values, the other half valid and bad ones alike."""
    @st.composite
    def draw(data):
        clean = data(st.booleans())

        def pick(pool):
            valid, bad = pool
            return data(st.sampled_from(valid if clean else valid + bad))

        usable = sorted(k for k, (v, b) in fields.items() if v or not clean)
        keys = data(st.lists(st.sampled_from(usable), min_size=1, max_size=max_size,
                                  unique=True))
        out = [f"{k}={pick(fields[k])}" for k in keys]
        for g, pool in (groups or {}).items():
            if data(st.booleans()):
                out.append(f"{g}={pick(pool)}")
        return out

    return draw()


def _fuzz(n: int):
    return settings(max_examples=n, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


# Each command runs in two tiers: the default run tries a couple of dozen generated
# requests of each (every run of the suite), ``pytest -m slow`` the same generators
# with several times as many (their first requests are the default tier's: the
# generation is derandomised).
FUZZ, THOROUGH = _fuzz(24), _fuzz(150)


def _fuzz_antiamp(ov, tmp_path, outputs):
    from antiamp.cli import main

    _check("antiamp", main, "antiamp", ov + ["run.figure=false"], tmp_path, outputs)


test_fuzz_antiamp = FUZZ(given(ov=_overrides(CELL_FIELDS, GROUPS))(_fuzz_antiamp))
test_fuzz_antiamp_thorough = pytest.mark.slow(
    THOROUGH(given(ov=_overrides(CELL_FIELDS, GROUPS))(_fuzz_antiamp)))


def _store_targets(outputs):
    d, foreign, store = outputs
    return st.sampled_from([f"sweep.store={foreign}", f"sweep.store={store}", "sweep.store=..",
                            "sweep.store=.", "sweep.store=s.zarr", "sweep.store=s.zarr",
                            "sweep.store=s.zarr"])


def _fuzz_antiamp_sweep(data, tmp_path, outputs):
    from antiamp.sweeps.cli import main

    ov = data.draw(_overrides(SWEEP_FIELDS, max_size=5))
    ov.append(data.draw(_store_targets(outputs)))
    if not any(o.startswith("sweep.axes") for o in ov):
        ov.append("sweep.axes.model.rho=[0.1,0.4]")
    if not any(o.startswith("run.n_instances") for o in ov):
        ov.append("run.n_instances=1000")
    ov.append("sweep.plot=false")
    _check("antiamp-sweep", main, "antiamp-sweep", ov, tmp_path, outputs)


test_fuzz_antiamp_sweep = FUZZ(given(data=st.data())(_fuzz_antiamp_sweep))
test_fuzz_antiamp_sweep_thorough = pytest.mark.slow(
    THOROUGH(given(data=st.data())(_fuzz_antiamp_sweep)))


API_VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2, 2 ** 70),
                       st.text(max_size=5), st.booleans(), st.none(),
                       st.lists(st.integers(0, 3), max_size=2), st.sampled_from([0.3, 1, 0.0]))


def _unit():
    import numpy as np

    return st.one_of(st.floats(0, 1), st.floats(0, 1).map(np.float64), st.sampled_from([0, 1]))


VALID_API = st.fixed_dictionaries({
    "model": st.fixed_dictionaries({}, optional={"rho": _unit(), "p": _unit(),
                                                 "pi": _unit()}),
    "judge": st.fixed_dictionaries({}, optional={"b": _unit(),
                                                 "jury_size": st.sampled_from([1, 3, 5])}),
    "run": st.fixed_dictionaries({"n_instances": st.integers(1, 2000)},
                                 optional={"seed": st.integers(0, 2 ** 63)}),
})


@_fuzz(60)
@given(cfg=st.one_of(
    VALID_API,
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


ALIAS_FIELDS = {
    "model.c_e": (["0.45"], ["-1", "x"]),
    "model.p": (["0.6"], ["1.5"]),
    "judge.b": (["0.8"], ["nan"]),
    "extension": (["panel"], ["nosuch"]),
    "study": ([], ["nosuch"]),
    "panel.size": (["3"], ["0", "x"]),
    "run.n_instances": (["1000"], ["0"]),
}


def _fuzz_aliases(data, tmp_path, outputs):
    """antiamp-solve (the equilibrium model) and antiamp-ext (the extensions)."""
    from antiamp.ext_cli import main as ext_main
    from antiamp.models.equilibrium.cli import main as solve_main

    prog = data.draw(st.sampled_from(["antiamp-solve", "antiamp-ext"]))
    fields = {k: v for k, v in ALIAS_FIELDS.items()
              if prog == "antiamp-ext" or k.split(".")[0] in ("model", "judge", "study", "run")}
    ov = data.draw(_overrides(fields, max_size=3))
    if prog == "antiamp-ext" and not any(o.startswith(("extension=", "study=")) for o in ov):
        ov.append("extension=panel")
    _check(prog, solve_main if prog == "antiamp-solve" else ext_main, prog, ov, tmp_path,
           outputs)


test_fuzz_aliases = _fuzz(12)(given(data=st.data())(_fuzz_aliases))
test_fuzz_aliases_thorough = pytest.mark.slow(THOROUGH(given(data=st.data())(_fuzz_aliases)))


def _argv_tool(main, argv):
    return invoke(lambda: main(argv[1:]), argv)


@_fuzz(60)
@given(data=st.data())
def test_fuzz_file_commands(data, tmp_path, outputs):
    """antiamp-estimate, antiamp-plot, antiamp-merge, antiamp-check: exit 0, 1 or 2,
    a message and no traceback; a foreign directory is never touched, and an
    earlier store only by a request that succeeds (merge -o replaces our own)."""
    from antiamp.estimate import main as estimate_main
    from antiamp.sweeps.check import main as check_main
    from antiamp.sweeps.merge import main as merge_main
    from antiamp.sweeps.plot import main as plot_main

    d, foreign, store = outputs
    log = d / "log.csv"
    if not log.exists():
        from antiamp.transcripts import records

        records({"judge": {"kind": "logit"}}, 300).to_csv(log, index=False)
    paths = [str(log), str(log), str(log), str(store), str(store), str(foreign),
             str(d / "missing.csv"), str(d)]
    prog = data.draw(st.sampled_from(["antiamp-estimate", "antiamp-plot", "antiamp-merge",
                                      "antiamp-check"]))
    main = {"antiamp-estimate": estimate_main, "antiamp-plot": plot_main,
            "antiamp-merge": merge_main, "antiamp-check": check_main}[prog]
    flags = {
        "antiamp-estimate": [["--seed", "-1"], ["--seed", "3"], ["--n-resamples", "0"],
                             ["--n-resamples", "200"], ["--confidence", "2"], ["--sample"],
                             ["--mislabel", "0.1"], ["--out", str(foreign)],
                             ["--out", str(tmp_path / "est")]],
        "antiamp-plot": [["--vars", "amp"], ["--vars", "nope"], ["--formats", "png"],
                         ["--formats", "gif"], ["--out", str(tmp_path / "figs")],
                         ["--allow-incomplete"]],
        "antiamp-merge": [["-o", str(foreign)], ["-o", str(tmp_path / "m.zarr")],
                          ["-o", str(store)]],
        "antiamp-check": [["--repair"]],
    }[prog]
    argv = [prog, *data.draw(st.lists(st.sampled_from(paths), max_size=2))]
    for f in data.draw(st.lists(st.sampled_from(flags), max_size=3)):
        argv += f
    before = (_digest(foreign), _digest(store))
    with contextlib.chdir(tmp_path):  # a default output directory lands here, not in the checkout
        code, out, err = _argv_tool(main, argv)
    assert "Traceback" not in err, (argv, err)
    assert code in (0, 1, 2), (argv, code, err)
    if code == 2:
        assert err.strip(), argv
    assert _digest(foreign) == before[0], argv
    if code != 0:
        assert _digest(store) == before[1], argv
    key = (prog, tuple(argv))
    if key not in SEEN:
        TALLY[f"{prog}: {'ran' if code == 0 else 'refused cleanly'}"] += 1
    SEEN[key] = code


def test_zz_report_tallies():
    """Prints how many distinct requests each part tried (run with -s)."""
    print("\nfuzz tallies (distinct requests):")
    for k, v in sorted(TALLY.items()):
        print(f"  {k}: {v}")
