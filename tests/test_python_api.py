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
