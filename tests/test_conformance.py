"""``antiamp.testing.check_model`` over every registered model, and proof that it
catches a model that breaks the contract."""

import dataclasses

import numpy as np
import pytest

import antiamp
from antiamp.config import ConfigError, declare
from antiamp.layout import model_dataset
from antiamp.registry import Model, _MODELS, builtin_names, register
from antiamp.testing import check_model, default_grids


@pytest.mark.parametrize("name", builtin_names())
def test_every_built_in_model_passes_the_conformance_checks(name):
    ran = check_model(name, figures=False)
    assert {"registered", "help", "bad_values"} <= set(ran)
    assert sum(r.startswith("cell_in_grid") for r in ran) == len(default_grids(name)) >= 1


@pytest.mark.slow
@pytest.mark.parametrize("name", builtin_names())
def test_every_built_in_model_resumes_after_kill_9(name, tmp_path):
    assert "resume" in check_model(name, kill=True, figures=False, tmp_path=tmp_path)


def test_one_model_resumes_after_kill_9(tmp_path):
    assert "resume" in check_model("mediation", kill=True, figures=False, tmp_path=tmp_path)


# ------------------------------------------------------------- a model that breaks it
@dataclasses.dataclass
class BrokenConfig:
    #: Probability that the model is right.
    q: float = declare(0.5, "q", "accuracy")
    #: Cells per block the model (wrongly) lets leak into its values.
    leak: bool = False


def _broken_cells(base, cells):
    n = len(cells)  # a cell's value must not depend on its block: this one does
    amp = np.array([c.broken.q + (0.01 * n if c.broken.leak else 0.0) for c in cells])
    data = {"amp": (("cell",), amp, {"long_name": "Amp", "units": "1"}),
            "amp_se": (("cell",), np.full(len(cells), 1e-4), {"units": "1"}),
            "amp_exact": (("cell",), np.array([c.broken.q for c in cells]), {"units": "1"})}
    return model_dataset(data, {}, "broken", "test", 0.0)


@pytest.fixture
def broken():
    register(Model(name="broken_test_model", title="a model that breaks the contract",
                   run_cells=_broken_cells, sections={"broken": BrokenConfig},
                   uses=("model", "run", "broken"), cells_per_block=4))
    yield
    _MODELS.pop("broken_test_model", None)
    from antiamp.registry import _schema_cache

    _schema_cache.clear()


def _grid(leak: bool) -> dict:
    return {"model": {"name": "broken_test_model"}, "broken": {"leak": leak},
            "sweep": {"axes": {"broken": {"q": [0.2, 0.4, 0.6]}}}}


def test_check_model_catches_what_a_model_gets_wrong(broken):
    with pytest.raises(AssertionError) as err:
        check_model("broken_test_model", grids=[_grid(leak=True)], figures=False)
    text = str(err.value)
    # NaN and inf for broken.q are accepted: no validation names the field
    assert "bad_values: broken.q=nan accepted" in text
    # the block leaks into the values: a cell alone differs from the cell in the grid,
    # and one-cell blocks differ from the one-block grid
    assert "cell_in_grid[0]: amp: values differ" in text
    assert "blocks[0]: amp: values differ" in text
    # the simulated Amp is 0.03 = 300 SE from the exact one
    assert "exact[0]: amp differs from amp_exact" in text


def test_check_model_passes_the_same_model_once_it_validates_and_does_not_leak(broken):
    def validate(cfg):
        q = cfg.broken.q
        if not isinstance(q, float) or not 0 <= q <= 1:
            raise ConfigError(f"broken.q must lie in [0, 1], got {q!r}")

    fixed = dataclasses.replace(antiamp.models.get("broken_test_model"), validate=validate)
    register(fixed)
    ran = check_model("broken_test_model", grids=[_grid(leak=False)], figures=False)
    assert "cell_in_grid[0]" in ran and "exact[0]" in ran


def test_check_model_needs_grids_for_a_model_that_declares_none(broken):
    with pytest.raises(ValueError, match="needs grids"):
        check_model("broken_test_model")


@pytest.mark.parametrize("name", ["colmad", "mediation", "redeliberation"])
def test_a_models_kernel_threads_are_restored_after_it_runs(name):
    """run.n_threads applies to the model's kernels only: the compiled threads the
    caller had are restored afterwards (a model once set numba's global count)."""
    import numba

    from antiamp.registry import builtin_config

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two compiled threads")
    cfg = dict(builtin_config(name).EXAMPLES[0][1])
    cfg["run"] = {**cfg.get("run", {}), "n_threads": 2}
    prev = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        antiamp.simulate(cfg)
        assert numba.get_num_threads() == 1
    finally:
        numba.set_num_threads(prev)
