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
    cfg["run"]["n_instances"] = 10**8  # 3e11 instances: within the bound
    budget.check_budget(cfg, env={})
    sob = {"sweep": {"axes": {"model": {"rho": {"uniform": [0, 1]}}}, "design": "sobol",
                     "n_points": 1024}, "run": {"n_instances": 10**6}}
    assert budget.cell_count(sob) == 1024
    assert budget.cell_count({"run": {"n_instances": 5}}) == 1
    assert os.environ.get(budget.OVERRIDE) in (None, "", "0")


@pytest.mark.parametrize("command, args, words", [
    ("antiamp-design", ["--n-sim", "1000000000", "--jury-sizes", "1,3,10001"],
     ["the verifying simulation", "10,001 jurors", "days"]),
    ("antiamp-design", ["--draws", "100000", "--n-sim", "1000000000",
                        "--jury-sizes", ",".join(str(n) for n in range(1, 10000, 2))],
     ["the optimiser", "the lever grid", "5,000"]),
    ("antiamp-estimate", ["--sample", "human_judges", "--simulate",
                          "--n-sim", "100000000000000"], ["--n-sim 100,000,000,000,000"]),
])
def test_commands_refuse_work_over_the_bound(command, args, words, tmp_path, monkeypatch):
    """antiamp-design and antiamp-estimate estimate their work before any (issue:
    "design at the largest draws", "--n-sim 1e14" ran without bound): refused, exit 2,
    each part's estimate named, nothing written."""
    monkeypatch.delenv(budget.OVERRIDE, raising=False)
    r = run_command(command, args + ["--out", str(tmp_path / "out")], tmp_path)
    assert r.returncode == 2, r.stderr
    for word in words + ["the bound is", budget.OVERRIDE]:
        assert word in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "outputs").exists()


def test_design_work_estimate_is_an_upper_bound_of_its_parts():
    """The estimate grows with each lever that adds work, and the override lifts it."""
    from antiamp.design import DesignError, Levers, Target, check_work, work_parts

    lv, tg = Levers(jury_sizes=(1, 3, 5)), Target(robust=0.9)
    base = dict((w.split(" (")[0], s) for w, s in work_parts(lv, tg, 400, 10**6))
    more = dict((w.split(" (")[0], s) for w, s in work_parts(lv, tg, 4000, 10**8))
    assert more["the optimiser"] == pytest.approx(10 * base["the optimiser"])
    assert more["the verifying simulation"] == pytest.approx(100 * base["the verifying simulation"])
    plug = dict((w.split(" (")[0], s) for w, s in work_parts(lv, Target(robust=0), 4000, 10**6))
    assert plug["the optimiser"] < base["the optimiser"]  # no draws without a robust target
    big = Levers(jury_sizes=(1, 10001))
    with pytest.raises(DesignError, match="1,000,000,000 instances"):
        check_work(big, tg, 400, 10**9, env={})
    check_work(big, tg, 400, 10**9, env={budget.OVERRIDE: "1"})
    check_work(lv, tg, 400, 10**6, env={})  # the defaults pass


def test_check_draws_have_a_finite_range(tmp_path):
    r = run_command("antiamp-estimate", ["--sample", "human_judges", "--simulate",
                                         "--n-sim", "1000", "--check-draws", "1000001",
                                         "--out", str(tmp_path / "out")], tmp_path)
    assert r.returncode == 2 and "--check-draws must be an integer in [2, 1,000,000]" \
        in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_estimate_work_grows_with_draws_rows_and_fits():
    """The predictive checks' estimate: draws x rows x fits (the full log, each fold,
    the calibration); a 5-million-row log at the most draws with 5 folds is refused."""
    import argparse

    from antiamp.estimate import check_work, work_parts
    from antiamp.estimation.logs import LogError

    def args(**kw):
        base = dict(simulate=False, n_sim=1, cv=None, calibrate=None, check_draws=1000)
        return argparse.Namespace(**{**base, **kw})

    one, fits_one = work_parts(args(cv=2), 1000)
    more, fits_more = work_parts(args(cv=5, check_draws=4000, calibrate="x.csv"), 1000)
    assert "3 fits" in one[0] and "7 fits" in more[0]
    assert more[1] == pytest.approx(one[1] * 4 * 7 / 3)
    # the structural fits: the reading chosen among 6 candidates, each fitted on the log
    # and on 5 folds of judges, for every fit the checks use; 1 each for a named reading
    assert "36 fits" not in fits_one[0] and "72 fits" in fits_one[0]
    assert fits_more[1] == pytest.approx(fits_one[1] * 6 / 2)
    (_, named) = work_parts(args(cv=2, structural_fit="labels"), 1000)
    assert "2 fits" in named[0]
    assert work_parts(args(), 10**6) == []  # no simulation, no check: nothing to bound
    with pytest.raises(LogError, match="the predictive checks .* 6 fits"):
        check_work(args(cv=5, check_draws=10**6, simulate=True), 5 * 10**6, env={})
    check_work(args(cv=5, check_draws=10**6, simulate=True), 5 * 10**6,
               env={budget.OVERRIDE: "1"})


#: Requests at the largest allowed sizes that started without a word: each model's
#: own sizes count (the loop's cases, ColMAD's rounds, mediation's citations).
ISSUE_SIZES = [
    (["model=colmad", "judge=logit", "colmad.rounds=1000", "run.n_instances=1000000000"],
     "1,000 colmad.rounds"),
    (["model=mediation", "mediation.citations=10000", "mediation.iterations=1000",
      "mediation.perspectives=64", "mediation.flaws=50", "run.n_instances=100000000"],
     "mediation.iterations"),
    (["model=loop", "loop.batch=100000000", "loop.paths=2000", "loop.rounds=100"],
     "loop cases"),
    (["model=loop", "loop.paths=1000000", "loop.rounds=100000", "loop.batch=1"],
     "of paths in memory"),
]


@pytest.mark.parametrize("args, words", ISSUE_SIZES)
def test_model_sizes_count_in_the_work_bound(args, words, tmp_path, monkeypatch):
    """One-cell runs whose cost is in the model's own sizes, not run.n_instances: refused
    before any directory, the sizes named; the override lifts the bound."""
    monkeypatch.delenv(budget.OVERRIDE, raising=False)
    r = run_command("antiamp", args + [f"hydra.run.dir={tmp_path / 'out'}"], tmp_path)
    assert r.returncode == 2 and words in r.stderr and budget.OVERRIDE in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "out").exists()


def test_a_long_loop_grid_is_refused_and_a_long_cell_says_its_estimate():
    grid = {"model": {"name": "loop"}, "run": {"n_instances": 10**6},
            "sweep": {"axes": {"model": {"rho": {"linspace": [0, 1, 1000]}},
                               "loop": {"rate": {"linspace": [0.1, 1, 1000]}}}}}
    with pytest.raises(budget.BudgetError, match="1,000,000 cells"):
        budget.check_budget(grid, env={})
    # a grid over a size field counts its mean: 3 x 200 x 40 x mean(batch) a cell
    sized = {"model": {"name": "loop"}, "run": {"n_instances": 1},
             "sweep": {"axes": {"loop": {"batch": [1000, 3000]}}}}
    cells, work, _ = budget.estimate(sized)
    assert (cells, work) == (2, 2 * 3 * 200 * 40 * 2000)
    one = {"model": {"name": "loop"}, "run": {"n_instances": 1},
           "loop": {"batch": 10**8, "paths": 2, "rounds": 100}}
    budget.check_budget(one, env={})  # about 10 minutes: within the bound
    assert "about 10 minutes" in budget.describe(one)
    assert budget.describe({"run": {"n_instances": 10**6}}) is None  # short: nothing said


@pytest.mark.parametrize("command, args, words", [
    ("antiamp-sweep", ["model=loop", "sweep.cells_per_block=-1", "sweep.axes.loop.rounds=[2,3]",
                       "loop.paths=2", "loop.batch=10"], "sweep.cells_per_block must be"),
    ("antiamp", ["--cfg", "job", "model.rho=2"], "model.rho must lie in [0, 1]"),
    ("antiamp", ["--info", "config", "model.rho=2"], "model.rho must lie in [0, 1]"),
    ("antiamp", ["model.rho=2", "--help"], "model.rho must lie in [0, 1]"),
    ("antiamp-sweep", ["--cfg", "job", "model.rho=2", "sweep.axes.judge.b=[0.1]"],
     "model.rho must lie in [0, 1]"),
    ("antiamp", ["model=confidence", "judge=logit", "confidence.intercepts=[50]"],
     "confidence.intercepts must have 3 values"),
])
def test_bad_values_refused_before_any_directory(command, args, words, tmp_path):
    """Values accepted before (a negative block size, a config shown by --cfg, --info or
    --help with rho 2, exit 0) or refused only after the run directory existed (the
    intercepts' count, known from the bets data): one line, exit 2, no directory."""
    r = run_command(command, args + [f"hydra.run.dir={tmp_path / 'out'}"], tmp_path)
    assert r.returncode == 2 and words in r.stderr, (r.stdout[-500:], r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "outputs").exists()


def test_exact_payoffs_are_not_charged_as_simulated_instances():
    """The equilibrium model with exact payoffs (its default) simulates no instance: a
    10^6-cell regime map is within the bound whatever run.n_instances says; with
    simulated payoffs the same grid is charged run.n_instances a cell and refused."""
    grid = {"model": {"name": "equilibrium"}, "run": {"n_instances": 10**6},
            "sweep": {"axes": {"model": {"c_e": {"linspace": [0, 1, 1000]}},
                               "judge": {"b": {"linspace": [0, 1, 1000]}}}}}
    budget.check_budget(grid, env={})
    cells, work, what = budget.estimate(grid)
    assert cells == 10**6 and work < 10**10 and "exact" in what
    simulated = {**grid, "equilibrium": {"payoffs": "simulated"}}
    with pytest.raises(budget.BudgetError, match="1,000,000 cells"):
        budget.check_budget(simulated, env={})
