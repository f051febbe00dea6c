"""Bad input fails before any computation, names the field and its range, and writes nothing."""

import os
import shutil
import subprocess
import sys

import pytest

import antiamp as sim

BAD = [
    ({"model": {"rho": 1.5}}, "model.rho", "[0, 1]"),
    ({"model": {"p": -0.1}}, "model.p", "[0, 1]"),
    ({"model": {"pi": 2}}, "model.pi", "[0, 1]"),
    ({"model": {"c_e": -1}}, "model.c_e", ">= 0"),
    ({"model": {"x_P": 1.2}}, "model.x_P", "[0, 1]"),
    ({"model": {"stance": "oracle"}}, "model.stance", "signal, fixed"),
    ({"model": {"a": 2}}, "model.a", "0 or 1"),
    ({"judge": {"b": 1.01}}, "judge.b", "[0, 1]"),
    ({"judge": {"lam": 0}}, "judge.lam", "> 0"),
    ({"judge": {"lam": -2}}, "judge.lam", "> 0"),
    ({"judge": {"kappa": -1}}, "judge.kappa", ">= 0"),
    ({"judge": {"jury_size": 0}}, "judge.jury_size", ">= 1"),
    ({"judge": {"kind": "oracle"}}, "judge.kind", "tiebreak, logit"),
    ({"judge": {"kind": "logit"}, "protocol": {"consult_default": 0.3}},
     "protocol.consult_default", "tie-break"),
    ({"protocol": {"consult_default": -0.1}}, "protocol.consult_default", "[0, 1]"),
    ({"judge": {"mu": float("nan")}}, "judge.mu", "finite"),
    ({"run": {"n_instances": 0}}, "run.n_instances", ">= 1"),
    ({"run": {"n_instances": -5}}, "run.n_instances", ">= 1"),
    ({"run": {"seed": -1}}, "run.seed", ">= 0"),
    ({"model": {"rho": "abc"}}, "model.rho", "Float"),
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
    exe = shutil.which("antiamp")
    cmd = [exe] if exe else [sys.executable, "-m", "antiamp.cli"]
    return subprocess.run(cmd + args, cwd=cwd, capture_output=True, text=True, timeout=300)


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
