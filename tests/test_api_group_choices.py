"""The Python API honours a model's own group choices (``config.GROUPS``) as the
command line composes them: a model whose judge is a logit judge runs with
``antiamp.simulate({"model": {"name": ...}})`` alone, and a judge the config names
itself still wins (and is refused with its reason)."""

import pytest

import antiamp
from antiamp.registry import group_defaults, to_model_config


@pytest.mark.parametrize("name", ["colmad", "confidence", "compare"])
def test_a_model_runs_at_its_own_group_choices(name):
    assert group_defaults(name) == {"judge": "logit"}
    _, c = to_model_config({"model": {"name": name}})
    assert c.judge.kind == "logit"
    # a judge field given beside it keeps the model's choice of judge
    _, c = to_model_config({"model": {"name": name}, "judge": {"lam": 2.0}})
    assert (c.judge.kind, c.judge.lam) == ("logit", 2.0)


def test_the_configs_own_judge_still_wins():
    with pytest.raises(antiamp.ConfigError, match="needs judge.kind=logit"):
        to_model_config({"model": {"name": "colmad"}, "judge": {"kind": "tiebreak"}})


def test_a_model_without_group_choices_keeps_the_shared_default():
    _, c = to_model_config({"model": {"name": "baseline"}})
    assert c.judge.kind == "tiebreak"
