"""Every config field declares the values it may take (``antiamp.config.declare``:
``range`` or ``choices``), and validation refuses a value outside them with a message
that names the field and the range, whichever model reads the section."""

import dataclasses
import math

import pytest

from antiamp import registry
from antiamp.config import Config, ConfigError, Interval, describe_values
from cli_runner import run_command

#: Fields without a declared range or choice list, and why.
FREE = {
    "model.name": "a registered model's name; the registry checks it",
    "run.progress": "a bool or null",
    "run.figure": "a bool",
    "export.path": "a file path; its suffix and location are checked",
    "export.stratum": "a free label written into every exported row",
    "confidence.condition": "a condition of the bets data (checked against the data)",
    "confidence.antagonist": "a condition of the bets data, or null",
    "confidence.data": "a path to a bets CSV, or null (checked before it is read)",
    "confidence.votes": "a list of counts (checked entry by entry)",
    "confidence.intercepts": "a list of mean reports (checked entry by entry)",
    "mediation.source": "a citation generator of the shipped table, or custom",
    "mediation.classes": "a list of shares (checked entry by entry)",
    "options.prior": "a list of K probabilities (checked as a whole)",
    "options.option_bias": "a list of K numbers (checked as a whole)",
    "redeliberation.bands": "a list of increasing spreads (checked as a whole)",
    "redeliberation.multipliers": "a list of multipliers, one per band",
    "signals.joint": "a 2 x 2 x 2 table (checked as a whole)",
    "signals.avail": "a 2 x 2 table (checked as a whole)",
    "effort.enabled": "a bool",
    "effort.refine": "a bool",
}


def _sections():
    """{section: (dataclass, a model that reads it)} for every section of every model."""
    out = {f.name: (f.default_factory, None) for f in dataclasses.fields(Config)}
    for name in registry.builtin_names():
        for sec, cls in registry.get(name).sections.items():
            out.setdefault(sec, (cls, name))
    return out


def _fields():
    for sec, (cls, model) in _sections().items():
        for f in dataclasses.fields(cls):
            yield sec, f, model


def test_every_field_declares_its_values_or_says_why_not():
    missing = [f"{s}.{f.name}" for s, f, _ in _fields()
               if not describe_values(f) and f"{s}.{f.name}" not in FREE]
    assert not missing, f"declare a range or choices for: {missing}"
    stale = [k for k in FREE if k not in {f"{s}.{f.name}" for s, f, _ in _fields()}
             or describe_values(next(f for s, f, _ in _fields() if f"{s}.{f.name}" == k))]
    assert not stale, f"FREE lists fields that are gone or declared: {stale}"


def test_every_declared_range_is_finite():
    """No field accepts 1e308 or an infinite cost: every range has finite ends."""
    infinite = [f"{s}.{f.name}" for s, f, _ in _fields() if "range" in f.metadata
                and not all(map(math.isfinite, (Interval.parse(f.metadata["range"]).lo,
                                                Interval.parse(f.metadata["range"]).hi)))]
    assert not infinite, infinite


def test_integer_bounds_are_exact():
    """2**64 - 1 is not a float: integer ranges compare as integers."""
    r = Interval.parse(f"int [0, {2**64 - 1}]")
    r.check("run.seed", 2**64 - 1)
    with pytest.raises(ConfigError, match="run.seed must be an integer"):
        r.check("run.seed", 2**64)


def test_every_default_lies_in_its_declared_range():
    for sec, f, _ in _fields():
        if "range" in f.metadata and f.default is not None:
            Interval.parse(f.metadata["range"]).check(f"{sec}.{f.name}", f.default)
        if "choices" in f.metadata:
            assert f.default in f.metadata["choices"], (sec, f.name)


def _bad_values(f):
    """Values just outside a declared range (or choice list), and values of the wrong type."""
    if "choices" in f.metadata:
        return ["no-such-choice"]
    r = Interval.parse(f.metadata["range"])
    out = ["seven"]
    step = 1 if r.integer else max(1e-9, 1e-9 * abs(r.lo if math.isfinite(r.lo) else 1))
    if math.isfinite(r.lo):
        out.append(int(r.lo) - 1 if r.integer else (r.lo if r.lo_open else r.lo - step))
    if math.isfinite(r.hi):
        out.append(int(r.hi) + 1 if r.integer else (r.hi if r.hi_open else r.hi + step))
    if r.integer:
        out.append(float(r.lo if math.isfinite(r.lo) else 0) + 0.5)
    else:
        out.append(float("nan"))
    return out


CASES = [(f"{s}.{f.name}", model, bad) for s, f, model in _fields() if describe_values(f)
         for bad in _bad_values(f)]


@pytest.mark.parametrize("path,model,bad", CASES, ids=[f"{p}={b!r}" for p, _, b in CASES])
def test_a_value_outside_the_declared_range_is_refused(path, model, bad):
    section, name = path.split(".")
    cfg = {"run": {"n_instances": 100}}
    cfg.setdefault(section, {})[name] = bad
    if model is not None:
        cfg["model"] = {"name": model}
    with pytest.raises(ConfigError) as exc:
        registry.to_model_config(cfg)
    assert path in str(exc.value), (path, bad, str(exc.value))


def test_messages_name_the_range():
    with pytest.raises(ConfigError, match=r"loop\.budget must lie in \(0, 1\], got 0"):
        registry.to_model_config({"model": {"name": "loop"}, "loop": {"budget": 0}})
    with pytest.raises(ConfigError, match=r"panel\.size must be an integer >= 1 and <= 501"):
        registry.to_model_config({"model": {"name": "panel"}, "panel": {"size": 502}})
    with pytest.raises(ConfigError, match=r"messages\.mode must be one of exogenous, strategic"):
        registry.to_model_config({"model": {"name": "messages"}, "judge": {"kind": "logit"},
                                  "messages": {"mode": "both"}})
    with pytest.raises(ConfigError,
                       match=r"effort\.gamma must lie in \[1, 1,000,000\] \(a convex cost\)"):
        registry.to_model_config({"model": {"name": "signals"}, "effort": {"gamma": 0.5}})


def test_interval_texts():
    assert Interval.parse("[0, 1]").describe() == "[0, 1]"
    assert Interval.parse("(0, 1]").describe() == "(0, 1]"
    assert Interval.parse("(0, inf)").describe() == "> 0"
    assert Interval.parse("[0, inf)").describe() == ">= 0"
    assert Interval.parse("(-inf, inf)").describe() == "a finite number"
    assert Interval.parse("int [1, 10001]").describe() == "an integer >= 1 and <= 10,001"
    assert Interval.parse("int [0, inf)").describe() == "an integer >= 0"
    with pytest.raises(ValueError, match="not a range"):
        Interval.parse("0..1")


def test_bounds_that_mirror_a_kernel_agree_with_it():
    from antiamp.kernels.options import MAX_K as kernel_k
    from antiamp.kernels.portfolios import MAX_BUDGET as kernel_budget
    from antiamp.models.options.config import MAX_K
    from antiamp.models.portfolio.config import MAX_BUDGET

    assert (MAX_K, MAX_BUDGET) == (kernel_k, kernel_budget)


def test_help_prints_the_declared_values(tmp_path):
    r = run_command("antiamp", ["model=loop", "--help"], tmp_path)
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "loop.budget = 1.0" in text and "(0, 1]" in text
    assert "one of calibrated, majority" in text


def test_the_command_refuses_before_any_directory(tmp_path):
    r = run_command("antiamp", ["model=mediation", "mediation.flaws=51",
                                f"hydra.run.dir={tmp_path / 'out'}"], tmp_path)
    assert r.returncode == 2
    assert "mediation.flaws must lie in [0, 50] (mean flaws per case), got 51" in r.stderr
    assert not (tmp_path / "out").exists()
