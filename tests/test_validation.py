"""Bad input fails before any computation, names the field and its range, and writes nothing."""

import os

import pytest

import antiamp as sim
from cli_runner import run_command

BAD = [
    ({"model": {"rho": 1.5}}, "model.rho", "[0, 1]"),
    ({"model": {"p": -0.1}}, "model.p", "[0, 1]"),
    ({"model": {"pi": 2}}, "model.pi", "[0, 1]"),
    ({"model": {"c_e": -1}}, "model.c_e", "[0, 1,000,000]"),
    ({"model": {"x_P": 1.2}}, "model.x_P", "[0, 1]"),
    ({"model": {"stance": "oracle"}}, "model.stance", "signal, fixed"),
    ({"model": {"a": 2}}, "model.a", "an integer >= 0 and <= 1"),
    ({"judge": {"b": 1.01}}, "judge.b", "[0, 1]"),
    ({"judge": {"lam": 0}}, "judge.lam", "(0, 1,000,000]"),
    ({"judge": {"lam": -2}}, "judge.lam", "(0, 1,000,000]"),
    ({"judge": {"kappa": -1}}, "judge.kappa", "[0, 1,000,000]"),
    ({"judge": {"kappa": 1e308}}, "judge.kappa", "[0, 1,000,000]"),
    ({"judge": {"jury_size": 0}}, "judge.jury_size", ">= 1"),
    ({"judge": {"kind": "oracle"}}, "judge.kind", "tiebreak, logit"),
    ({"judge": {"kind": "logit"}, "protocol": {"consult_default": 0.3}},
     "protocol.consult_default", "tie-break"),
    ({"protocol": {"consult_default": -0.1}}, "protocol.consult_default", "[0, 1]"),
    ({"judge": {"mu": float("nan")}}, "judge.mu", "finite"),
    ({"run": {"n_instances": 0}}, "run.n_instances", ">= 1"),
    ({"run": {"n_instances": -5}}, "run.n_instances", ">= 1"),
    ({"run": {"seed": -1}}, "run.seed", ">= 0"),
    ({"model": {"rho": "abc"}}, "model.rho", "not a number; model.rho must lie in [0, 1]"),
    ({"model": {"typo": 1}}, "typo", ""),
    ({"model": {"c_e": 0.5}}, "model.x_P", "dominant"),  # b = 1/2: not dominant, not given
]


@pytest.mark.parametrize("cfg,field,allowed", BAD)
def test_api_rejects_bad_input(cfg, field, allowed):
    with pytest.raises(sim.ConfigError) as err:
        sim.simulate(cfg)
    assert field in str(err.value) and allowed in str(err.value)


def test_outside_dominance_region_explicit_strategies_are_accepted():
    ds = sim.simulate({"model": {"c_e": 0.5, "x_P": 0.3, "x_A": 0.6},
                       "run": {"n_instances": 1000, "progress": False}})
    assert ds.attrs["strategies"] == str({"x_P_consult": 1.0, "x_P": 0.3, "x_A": 0.6})


def test_low_cost_region_gives_present_when_feasible():
    """Seed section 3: c_e < min(b, 1 - b) makes e = t dominant for both senders."""
    from antiamp.judge import resolve_strategies

    for b, c_e in [(0.3, 0.29), (0.6, 0.39), (0.5, 0.0)]:
        s = resolve_strategies(sim.to_config({"model": {"c_e": c_e}, "judge": {"b": b}}))
        assert (s.x_P, s.x_A, s.x_P_consult) == (1.0, 1.0, 1.0)
    s = resolve_strategies(sim.to_config({"model": {"c_e": 0.8}, "judge": {"b": 0.3}}))
    assert (s.x_P, s.x_A, s.x_P_consult) == (0.0, 0.0, 1.0)  # consult gate still worth 1 > 0.8
    with pytest.raises(sim.ConfigError, match="model.x_P"):
        resolve_strategies(sim.to_config({"model": {"c_e": 0.5}, "judge": {"b": 0.3}}))


def _cli(args, cwd):
    return run_command("antiamp", args, cwd)


@pytest.mark.parametrize("override,field", [
    ("model.rho=1.5", "model.rho"),
    ("model.rho=abc", "model.rho"),
    ("judge.lam=0", "judge.lam"),
    ("run.n_instances=0", "run.n_instances"),
    ("judge.jury_size=-3", "judge.jury_size"),
    ("judge=oracle", "judge"),
    ("model.nope=1", "model.nope"),
])
def test_cli_rejects_bad_input_and_writes_nothing(tmp_path, override, field):
    r = _cli([override, "hydra.run.dir=out"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert field in r.stderr
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "outputs").exists()


def test_cli_bad_input_leaves_existing_output_intact(tmp_path):
    ok = _cli(["run.n_instances=1000", "hydra.run.dir=out"], tmp_path)
    assert ok.returncode == 0, ok.stderr
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "out").rglob("*")}
    bad = _cli(["model.rho=7", "hydra.run.dir=out"], tmp_path)
    assert bad.returncode == 2
    after = {p: p.stat().st_mtime_ns for p in (tmp_path / "out").rglob("*")}
    assert before == after
    assert not [p for p in os.listdir(tmp_path / "out") if "partial" in p]


def test_remembered_valid_sections_do_not_admit_equal_but_invalid_values():
    """Validation remembers sections found valid (a grid's cells share them); a value
    equal to a valid one but of another type (True == 1) is still checked."""
    import dataclasses

    from antiamp.config import ConfigError, to_config, validate

    good = to_config({"model": {"stance": "fixed", "a": 1}})
    validate(good)
    validate(good)  # remembered
    bad = dataclasses.replace(good, model=dataclasses.replace(good.model, a=True))
    with pytest.raises(ConfigError, match="model.a"):
        validate(bad)
    with pytest.raises(ConfigError, match="judge.b"):
        sim.sweep({"sweep": {"axes": {"judge": {"b": [0.2, 0.5, 2.0]}}},
                   "run": {"n_instances": 1000}})


LOGIT_MODELS = {"messages", "options", "confidence", "colmad", "compare"}


@pytest.mark.parametrize("name", ["baseline", "equilibrium", "signals", "portfolio", "panel",
                                  "messages", "options", "loop", "confidence",
                                  "redeliberation", "colmad", "mediation", "compare"])
def test_stored_config_yaml_is_omegaconfs(name):
    """as_yaml writes the configuration with PyYAML straight from the dataclasses; the
    text must be what OmegaConf writes of the same structured config."""
    from omegaconf import OmegaConf

    from antiamp import registry
    from antiamp.config import as_yaml

    raw = {"model": {"name": name, "rho": 0.4}, "judge": {"b": 0.7}}
    if name == "mediation":  # reads model, mediation and run only
        raw = {"model": {"name": name}, "run": {"seed": 3}}
    elif name in LOGIT_MODELS:
        raw["judge"] = {"kind": "logit", "lam": 1.5, "mu": 0.5}
    _, cfg = registry.to_model_config(raw)
    assert as_yaml(cfg) == OmegaConf.to_yaml(OmegaConf.structured(cfg))


def _omegaconf_object(schema, raw):
    from omegaconf import OmegaConf

    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), raw))


_ANY_VALUES = [0, 1, 3, -2, 0.25, 1.0, 7.5, True, False, None, "0.5", "3", "tie", "${model.p}",
               [0.2, 0.8], (1, 2), {"a": 1}]


def test_direct_config_build_equals_omegaconf():
    """build_direct (the fast path of config validation) gives exactly the object the
    OmegaConf merge gives, for values of every type in every field of every section,
    and steps aside (None) wherever OmegaConf converts or refuses."""
    import dataclasses
    import random

    from antiamp import registry
    from antiamp.config import build_direct

    schema = registry.schema()
    rng = random.Random(11)
    built = stepped_aside = 0
    for sec in dataclasses.fields(schema):
        typ = type(getattr(schema(), sec.name))
        names = [f.name for f in dataclasses.fields(typ)]
        for _ in range(40):
            raw = {n: rng.choice(_ANY_VALUES) for n in rng.sample(names, min(2, len(names)))}
            if rng.random() < 0.05:
                raw["no_such_field"] = 1
            direct = build_direct(typ, raw)
            try:
                via = _omegaconf_object(typ, raw)
            except Exception:
                via = None
            if direct is None:
                stepped_aside += 1
                continue
            built += 1
            assert via is not None, (sec.name, raw)
            assert direct == via, (sec.name, raw)
            # the same types, not just equal values (1 == 1.0)
            assert {k: type(v) for k, v in dataclasses.asdict(direct).items()} == \
                {k: type(v) for k, v in dataclasses.asdict(via).items()}, (sec.name, raw)
    assert built > 100 and stepped_aside > 100
    # the root: nested sections and defaults
    raw = {"model": {"name": "panel", "rho": 1, "x_P": None}, "panel": {"size": 9},
           "judge": {"kind": "logit", "lam": 2}}
    assert build_direct(schema, raw) == _omegaconf_object(schema, raw)
    assert build_direct(schema, {"model": {"rho": "0.3"}}) is None
    from antiamp.sweeps.spec import SweepSpec

    for raw, direct in (({"axes": {"model": {"rho": {"linspace": [0, 1, 3]}}},
                          "plot_vars": ["amp", "acc"], "n_points": 8}, True),
                        ({"axes": {"judge": {"b": [0.1, 0.5]}}, "crn": False}, True),
                        ({"plot_vars": [1]}, False),  # OmegaConf makes it "1"
                        ({"axes": {"model": {"rho": [0.1, "${x}"]}}}, False),
                        ({"axes": [1, 2]}, False)):
        got = build_direct(SweepSpec, raw)
        assert (got is not None) == direct, raw
        if direct:
            assert got == _omegaconf_object(SweepSpec, raw)


def test_direct_build_leaves_merged_tables_to_omegaconf():
    """A table field with a non-empty default is merged key by key by OmegaConf; the
    fast path must not replace it whole."""
    import dataclasses
    from typing import Any, Dict

    from antiamp.config import build_direct

    @dataclasses.dataclass
    class WithTable:
        table: Dict[str, Any] = dataclasses.field(default_factory=lambda: {"a": 1, "b": 2})
        x: float = 0.5

    assert build_direct(WithTable, {"table": {"a": 5}}) is None
    assert _omegaconf_object(WithTable, {"table": {"a": 5}}).table == {"a": 5, "b": 2}
    assert build_direct(WithTable, {"x": 1}) == WithTable(x=1.0)


def test_a_config_object_is_checked_like_its_dict():
    """to_config of a Config instance (what the model functions receive) takes the
    direct build when every field has its type, giving what OmegaConf's merge gives,
    a copy the caller's object does not share; a field of the wrong type still
    goes to OmegaConf and is refused naming it."""
    import dataclasses

    from omegaconf import OmegaConf

    from antiamp.config import Config, ConfigError, to_config

    for raw in ({}, {"model": {"rho": 0.7, "c_e": 0.1}, "judge": {"kind": "logit", "lam": 2}},
                {"model": {"stance": "fixed", "a": 1}, "run": {"n_instances": 5000, "seed": 3}}):
        c = to_config(raw)
        got = to_config(c)
        via = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(Config),
                                                  OmegaConf.structured(c)))
        assert got == via and got is not c and got.model is not c.model
        assert {k: type(v) for k, v in dataclasses.asdict(got.model).items()} == \
            {k: type(v) for k, v in dataclasses.asdict(via.model).items()}
    bad = to_config({})
    bad.model.rho = "lots"
    with pytest.raises(ConfigError, match="rho"):
        to_config(bad)
    bad = to_config({})
    bad.model.rho = 1.5
    with pytest.raises(ConfigError, match="rho"):
        to_config(bad)


def test_stored_config_yaml_follows_every_value():
    """as_yaml keeps the text of a config it wrote (a grid's blocks dump one config):
    a config that differs in any value, or in its type (1 against 1.0), is written anew."""
    from omegaconf import OmegaConf

    from antiamp import registry
    from antiamp.config import as_yaml

    texts = []
    for raw in ({"model": {"rho": 0.4}}, {"model": {"rho": 0.5}}, {"model": {"rho": 0.4}},
                {"model": {"rho": 1}}, {"model": {"rho": 1.0}}, {"run": {"seed": 4}}):
        _, cfg = registry.to_model_config(raw)
        texts.append(as_yaml(cfg))
        assert texts[-1] == OmegaConf.to_yaml(OmegaConf.structured(cfg))
    assert texts[0] == texts[2] and len(set(texts)) == 4
