"""A model's ``validate_reads``: what its ``validate`` reads beyond the declared ranges.

Declared, the engine validates a grid column by column and runs the model's own
``validate`` once per distinct combination of the axes the declaration covers
(:func:`antiamp.sweeps.blocks.plan_grid`); so a declaration that leaves out a field
``validate`` reads lets a bad cell through.  Checked here for every built-in model,
two ways:

- the fields ``validate`` reads (recorded on random configs, each of whose fields
  lies in its declared range) are all covered by the declaration;
- on random grids over the model's fields (bad values and bad combinations
  included), the declared (column-wise) validation refuses exactly the grids that
  validating every cell whole refuses, and a grid with one bad value on a field
  ``validate`` reads is refused with the same message, naming the same cell.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from antiamp import registry
from antiamp.config import ConfigError, check_declared, validate
from antiamp.sweeps.spec import _plan_grid
from antiamp.testing import (_recording, fields_of, random_config, reads_of, undeclared,
                             valid_configs, values_of)

MODELS = registry.builtin_names()


# The probe itself (recording what validate reads, random configs in the declared
# ranges) is antiamp.testing's: check_model runs it on every model, plugins included.
def read_fields(model, base, rng, n: int = 40) -> set:
    """The fields ``model.validate`` reads on ``base`` and ``n`` random configs."""
    out: set = set()
    for c in [base, *valid_configs(model, base, rng, n)]:
        out |= reads_of(model, c)[0]
    return out


# ----------------------------------------------------------------------------- random configs
def base_of(name: str):
    """The model's example (its first), validated: the base of the random configs."""
    example = registry.builtin_config(name).EXAMPLES[0][1]
    return registry.to_model_config({k: v for k, v in example.items()
                                     if k not in ("sweep", "export")})[1]


# ----------------------------------------------------------------------------- grids
def plain(cfg) -> dict:
    return {f.name: dataclasses.asdict(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)}


def grid_config(base, axes: dict) -> dict:
    """A sweep config over ``axes`` ({(section, name): values}) on ``base``."""
    out = plain(base)
    sweep: dict = {}
    for (s, name), vals in axes.items():
        sweep.setdefault(s, {})[name] = vals
    out["sweep"] = {"axes": sweep}
    return out


def outcome(cfg) -> str | None:
    """The ConfigError's message of planning ``cfg``'s grid, or None if accepted."""
    try:
        _plan_grid(cfg)
    except ConfigError as exc:
        return str(exc)
    return None


def both(name: str, cfg, monkeypatch) -> tuple:
    """(declared: column by column, whole: every cell validated whole) outcomes."""
    model = registry.get(name)
    declared = outcome(cfg)
    with monkeypatch.context() as m:
        m.setitem(registry._MODELS, name,
                  dataclasses.replace(model, validate_reads=None))
        whole = outcome(cfg)
    return declared, whole


# ----------------------------------------------------------------------------- tests
@pytest.mark.parametrize("name", MODELS)
def test_every_model_declares_what_validate_reads(name):
    """Every field ``validate`` reads, on random configs in the declared ranges (and
    on the example), is covered by ``validate_reads``."""
    model = registry.get(name)
    if model.validate is None:
        return
    assert model.validate_reads is not None, f"model {name} declares no validate_reads"
    base = base_of(name)
    rng = random.Random(f"reads {name}")
    read: set = set()
    accepted = 0
    for c in [base, *valid_configs(model, base, rng, 150)]:
        r, ok = reads_of(model, c)
        read |= r
        accepted += ok
    assert accepted >= 50, f"{name}: too few random configs accepted ({accepted})"
    missing = undeclared(model, read)
    assert not missing, f"model {name}'s validate reads {sorted(missing)}, not in its " \
                        f"validate_reads {model.validate_reads}"


def test_the_reads_check_can_fail():
    """A declaration without a field that validate reads is caught, and a check of
    the declared ranges alone is not counted as a read."""
    name = next(n for n in MODELS if registry.get(n).validate_reads)
    model = registry.get(name)
    base = base_of(name)
    read, ok = reads_of(model, base)
    assert ok and read
    short = dataclasses.replace(model, validate_reads=())
    assert undeclared(short, read) == read
    log: set = set()
    check_declared("model", _recording("model", base.model, log))
    assert not log


@pytest.mark.parametrize("name", MODELS)
def test_declared_validation_refuses_what_every_cell_refuses(name, monkeypatch):
    """Random two-axis grids over the model's fields, values in and out of range:
    refused column by column exactly when refused cell by cell."""
    model = registry.get(name)
    base = base_of(name)
    rng = random.Random(f"grids {name}")
    fields = fields_of(model, base, sweepable=True)
    # the fields validate reads, as recorded (not as declared: the declaration is on test)
    read = read_fields(model, base, rng) if model.validate else set()
    reads = [(s, f) for s, f in fields if f"{s}.{f.name}" in read]
    refused = 0
    for k in range(16):
        # every other grid: one axis on a field validate reads (where there is one)
        first = rng.choice(reads if reads and k % 2 else fields)
        second = rng.choice([x for x in fields if x != first])
        bad = k % 4 == 3
        axes = {}
        for s, f in (first, second):
            have = getattr(getattr(base, s), f.name)  # the example's value, and others
            vals = [v for v in dict.fromkeys(values_of(f, rng, bad)) if v != have]
            axes[(s, f.name)] = [have][:have is not None] + rng.sample(vals, min(2, len(vals)))
        cfg = grid_config(base, axes)
        declared, whole = both(name, cfg, monkeypatch)
        assert (declared is None) == (whole is None), (axes, declared, whole)
        refused += whole is not None
    assert 0 < refused < 16  # both outcomes seen


@pytest.mark.parametrize("name", MODELS)
def test_one_bad_value_is_refused_naming_the_cell(name, monkeypatch):
    """For each field validate reads: a value it refuses (within the declared range) on
    an axis, beside an axis on a field it does not read: refused before any work,
    with the message that validating every cell gives (the first bad cell, its check)."""
    model = registry.get(name)
    example = base_of(name)
    rng = random.Random(f"bad {name}")
    fields = fields_of(model, example, sweepable=True)
    recorded = read_fields(model, example, rng) if model.validate else set()
    read = [(s, f) for s, f in fields if f"{s}.{f.name}" in recorded]
    tried = 0
    for s, f in read:
        for _ in range(100):  # a config validate accepts, a value of (s, f) it refuses
            base = random_config(example, read, rng, rng.randint(0, 3))
            v = rng.choice(values_of(f, rng))
            c = dataclasses.replace(base, **{s: dataclasses.replace(getattr(base, s),
                                                                    **{f.name: v})})
            try:
                validate(base)
                validate(c)
            except ConfigError:
                continue  # a range or the judge's check: the columns' business
            good = getattr(getattr(base, s), f.name)
            if good is not None and reads_of(model, base)[1] and not reads_of(model, c)[1]:
                break
        else:
            continue
        tried += 1
        axes = {(s, f.name): [good, v]}
        other = [(s2, f2) for s2, f2 in fields if f"{s2}.{f2.name}" not in recorded
                 and s2 not in ("judge", "protocol")
                 and getattr(getattr(base, s2), f2.name) is not None]
        if other:
            s2, f2 = rng.choice(other)
            d2 = getattr(getattr(base, s2), f2.name)
            axes[(s2, f2.name)] = [d2] + [x for x in values_of(f2, rng) if x != d2][:1]
        declared, whole = both(name, grid_config(base, axes), monkeypatch)
        assert whole is not None and whole.startswith("sweep cell (") and repr(v) in whole
        assert declared == whole, axes
    if not tried:
        assert not read, f"{name}: no refused value found"
        pytest.skip(f"model {name}'s validate refuses nothing within the declared ranges")
