"""The Python API as a notebook uses it: a call that cannot do what its config asks
says so, naming the field, instead of returning something else."""

import pytest

import antiamp
from antiamp.config import ConfigError

GRID = {"model": {"name": "signals"}, "sweep": {"axes": {"signals": {"eta": [0.0, 0.3]}}},
        "run": {"n_instances": 2000, "progress": False}}


@pytest.mark.parametrize("cfg", [GRID, {"sweep": {"axes": {"model": {"rho": [0.1, 0.2]}}}},
                                 {"sweep": {"design": "lhs", "n_points": 4}}])
def test_simulate_refuses_a_grid_instead_of_running_one_cell(cfg):
    with pytest.raises(ConfigError, match=r"sweep\.axes: antiamp\.simulate runs one cell.*"
                                          r"antiamp\.sweep\(cfg\)"):
        antiamp.simulate(cfg)


def test_a_grid_runs_through_sweep_and_a_cell_through_simulate():
    grid = antiamp.sweep(GRID)
    assert grid.sizes["eta"] == 2
    cell = antiamp.simulate({**GRID, "sweep": {"axes": {}}})
    assert "eta" not in cell.sizes


@pytest.mark.parametrize("cfg,msg", [
    ({"model": {"roh": 0.3}}, "model.roh: .*did you mean model.rho?"),
    ({"model": {"name": "panel"}, "panel": {"sizee": 3}}, "panel.sizee: .*did you mean panel.size?"),
])
def test_a_misspelt_field_gets_the_closest_one(cfg, msg):
    with pytest.raises(ConfigError, match=msg):
        antiamp.simulate(cfg)


@pytest.mark.parametrize("cfg,msg", [
    ({"run": {"n_instances": 1e5}},
     r"^run\.n_instances=100000\.0: not an integer; run\.n_instances must be an integer >= 1"),
    ({"model": {"rho": "abc"}}, r"^model\.rho=abc: not a number; model\.rho must lie in \[0, 1\]$"),
    ({"run": {"progress": "maybe"}}, r"^run\.progress=maybe: run\.progress must be true or false"),
])
def test_a_value_of_the_wrong_type_names_what_the_field_takes(cfg, msg):
    """As the commands say it (antiamp.cmdline.wrong_type), not OmegaConf's report."""
    with pytest.raises(ConfigError, match=msg):
        antiamp.simulate(cfg)
