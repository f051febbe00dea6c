"""The columnar sweep plan equals the cell-by-cell one, bit for bit, on random grids
(valid or not), and validates a 10^6-cell grid in well under a cell-by-cell pass."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from antiamp.config import ConfigError
from antiamp.sweeps.spec import make_plan

# Values of each sweepable field, valid ones and a few that break a rule alone
# (rho = 1.5, b = -0.1, jury_size = 0) or together (logit with consult_default,
# c_e outside the dominance region without strategies).
POOL = {
    "model.rho": [0.0, 0.1, 0.4, 1.0, 1.5],
    "model.p": [0.6, 0.75, 1.0],
    "model.pi": [0.3, 0.5],
    "model.c_e": [0.0, 0.05, 0.3],
    "model.x_P": [None, 0.5, 1.0],
    "model.stance": ["signal", "fixed"],
    "model.a": [0, 1],
    "judge.kind": ["tiebreak", "logit"],
    "judge.b": [0.2, 0.5, 0.9, -0.1],
    "judge.kappa": [0.5, 2.0],
    "judge.jury_size": [1, 3, 0],
    "protocol.consult_default": [0.0, 0.5],
    "welfare.beta": [0.0, 1.0, 2.5],
}


@st.composite
def sweeps(draw):
    paths = draw(st.lists(st.sampled_from(sorted(POOL)), min_size=1, max_size=4, unique=True))
    axes: dict = {}
    for path in paths:
        section, name = path.split(".")
        vals = draw(st.lists(st.sampled_from(POOL[path]), min_size=1, max_size=3, unique=True))
        if path == "model.x_P" and None in vals:
            vals = [v for v in vals if v is not None] or [0.5]
        axes.setdefault(section, {})[name] = vals
    design = draw(st.sampled_from(["grid", "grid", "lhs"]))
    if design == "lhs":
        axes = {"model": {"rho": {"uniform": [0.0, 1.0]}},
                "judge": {"b": {"uniform": [0.05, 0.95]}}}
    return {"model": {"c_e": draw(st.sampled_from([0.0, 0.05]))},
            "sweep": {"axes": axes, "design": design, "n_points": 17,
                      "crn": draw(st.booleans())}}


FIELDS = ("thr", "fixed", "a_fixed", "J_consult", "J_debate", "strategies", "streams", "shape")


def _field(plan, f):
    """A cell input (the model's columns) or a plan's own field."""
    return getattr(plan.columns, f) if hasattr(plan.columns, f) else getattr(plan, f)


@settings(max_examples=80, deadline=None)
@given(sweeps())
def test_columnar_plan_is_the_cell_by_cell_plan(cfg):
    try:
        ref = make_plan(cfg, columnar=False)
    except ConfigError as exc:
        with pytest.raises(ConfigError) as got:
            make_plan(cfg)
        # The same kind of fault is named (the cell may differ when several are bad).
        field = str(exc).split("): ", 1)[-1].split(" ")[0]
        assert field.split("=")[0] in str(got.value) or "sweep" in str(got.value), \
            (str(exc), str(got.value))
        return
    plan = make_plan(cfg)
    for f in FIELDS:
        assert np.array_equal(np.asarray(_field(plan, f)), np.asarray(_field(ref, f))), f
    for a, b in zip(plan.columns.welfare + plan.columns.theory_args,
                    ref.columns.welfare + ref.columns.theory_args):
        assert np.array_equal(np.asarray(a), np.asarray(b))


def test_a_million_cell_grid_is_validated_column_by_column():
    """10^6 cells: the columnar plan validates each distinct value once; a bad value
    anywhere in it is still found and named."""
    axes = {"model": {"rho": {"linspace": [0, 1, 1000]}}, "judge": {"b": {"linspace": [0.01, 0.99, 1000]}}}
    plan = make_plan({"sweep": {"axes": axes}})
    assert plan.n_cells == 10**6
    # Spot-check cells against the cell-by-cell construction of the same cells.
    small = make_plan({"sweep": {"axes": {"model": {"rho": [float(plan.axes[0].values[k]) for k in (3, 500, 999)]},
                                          "judge": {"b": [float(plan.axes[1].values[k]) for k in (0, 777)]}}}},
                      columnar=False)
    idx = np.ravel_multi_index(np.meshgrid([3, 500, 999], [0, 777], indexing="ij"), (1000, 1000)).ravel()
    assert np.array_equal(plan.columns.thr[idx], small.columns.thr)
    assert np.array_equal(plan.columns.J_debate[idx], small.columns.J_debate)
    bad = {"model": {"rho": {"linspace": [0, 1, 1000]}},
           "judge": {"b": [*np.linspace(0.01, 0.99, 999).tolist(), 1.2]}}
    with pytest.raises(ConfigError, match=r"b=1\.2\): judge.b"):
        make_plan({"sweep": {"axes": bad}})
