"""A model's own defaults run; a request over the work bound is refused before anything
runs or any directory is made."""

import os

import pytest

from antiamp.sweeps import budget
from cli_runner import run_command

#: The grid of issue 39: 10^7 cells of 10^9 instances each.
HUGE = ["sweep.axes.model.rho={linspace:[0,1,1000]}", "sweep.axes.judge.b={linspace:[0,1,10000]}",
        "run.n_instances=1000000000"]


@pytest.mark.parametrize("model", ["colmad", "confidence"])
def test_model_defaults_run(model, tmp_path):
    """``antiamp model=colmad`` and ``model=confidence`` once exited 2 with "needs
    judge.kind=logit": the model's own judge is now its default."""
    r = run_command("antiamp", [f"model={model}", "run.n_instances=2000",
                                f"hydra.run.dir={tmp_path / 'out'}"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "results.zarr" in r.stdout


def test_an_explicit_judge_choice_still_wins(tmp_path):
    r = run_command("antiamp", ["model=colmad", "judge=tiebreak",
                                f"hydra.run.dir={tmp_path / 'out'}"], tmp_path)
    assert r.returncode == 2 and "judge.kind=logit" in r.stderr
    assert not (tmp_path / "out").exists()


def test_huge_sweep_is_refused_before_any_directory(tmp_path, monkeypatch):
    monkeypatch.delenv(budget.OVERRIDE, raising=False)
    r = run_command("antiamp-sweep", HUGE + [f"hydra.run.dir={tmp_path / 'out'}"], tmp_path)
    assert r.returncode == 2
    for word in ("10,000,000 cells", "years", "GiB", budget.OVERRIDE):
        assert word in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "outputs").exists()


def test_single_cell_over_the_bound_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv(budget.OVERRIDE, raising=False)
    r = run_command("antiamp", ["run.n_instances=100000000000000",
                                f"hydra.run.dir={tmp_path / 'out'}"], tmp_path)
    assert r.returncode == 2 and budget.OVERRIDE in r.stderr
    assert not (tmp_path / "out").exists()


def test_cell_count_and_override():
    axes = {"model": {"rho": {"linspace": [0, 1, 1000]}}, "judge": {"b": [0.1, 0.2, 0.3]}}
    cfg = {"sweep": {"axes": axes, "design": "grid"}, "run": {"n_instances": 10**10}}
    assert budget.cell_count(cfg) == 3000
    with pytest.raises(budget.BudgetError, match="3,000 cells"):
        budget.check_budget(cfg, env={})
    budget.check_budget(cfg, env={budget.OVERRIDE: "1"})  # the override lifts it
    cfg["run"]["n_instances"] = 10**9  # 3e12 instances: within the bound
    budget.check_budget(cfg, env={})
    sob = {"sweep": {"axes": {"model": {"rho": {"uniform": [0, 1]}}}, "design": "sobol",
                     "n_points": 1024}, "run": {"n_instances": 10**6}}
    assert budget.cell_count(sob) == 1024
    assert budget.cell_count({"run": {"n_instances": 5}}) == 1
    assert os.environ.get(budget.OVERRIDE) in (None, "", "0")
