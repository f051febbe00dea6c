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



def test_kernel_threads_at_the_current_count_still_restores_what_the_kernels_changed():
    """Asked for the count in force (or 0), ``kernel_threads`` sets nothing; a change
    made inside is still undone after."""
    import numba

    from antiamp.runner import kernel_threads

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two compiled threads")
    prev = numba.get_num_threads()
    try:
        for n in (prev, 0):
            with kernel_threads(n) as got:
                assert got == prev
                numba.set_num_threads(1 if prev > 1 else 2)
            assert numba.get_num_threads() == prev
    finally:
        numba.set_num_threads(prev)

# ------------------------------------------------- a model's own examples and grids
@dataclasses.dataclass
class SplitConfig:
    #: Probability of the first branch.
    q: float = declare(0.5, "q", "first branch", range="[0, 1]")
    #: Probability of the second branch; q + r at most 1.
    r: float = declare(0.25, "r", "second branch", range="[0, 1]")


def _split_validate(cfg):
    if cfg.split.q + cfg.split.r > 1:
        raise ConfigError(f"split.q + split.r must be at most 1, got "
                          f"{cfg.split.q} + {cfg.split.r}")


def _split_cells(base, cells):
    amp = np.array([c.split.q * c.split.r for c in cells])
    data = {"amp": (("cell",), amp, {"long_name": "Amp", "units": "1"}),
            "amp_se": (("cell",), np.full(len(cells), 1e-4), {"units": "1"})}
    return model_dataset(data, {}, "split", "test", 0.0)


def _split_model(validate_reads) -> Model:
    """A model with its own examples and grids, as a plugin declares them, whose
    ``validate`` reads split.q and split.r."""
    grid = {"model": {"name": "split_test_model"},
            "sweep": {"axes": {"split": {"q": [0.2, 0.4], "r": [0.1, 0.3]}}}}
    return Model(name="split_test_model", title="two branches", run_cells=_split_cells,
                 sections={"split": SplitConfig}, uses=("model", "run", "split"),
                 validate=_split_validate, validate_reads=validate_reads,
                 format_table=lambda ds: f"split: Amp {float(ds.amp):.4f}",
                 examples=(("split", {"model": {"name": "split_test_model"}}),),
                 grids=(grid,))


@pytest.fixture
def split():
    yield lambda reads: register(_split_model(reads))
    _MODELS.pop("split_test_model", None)
    from antiamp.registry import _schema_cache

    _schema_cache.clear()


def test_a_model_with_its_own_grids_is_checked_without_arguments(split):
    split(("split.q", "split.r"))
    ran = check_model("split_test_model", figures=False)
    assert {"validate_reads", "table", "cell_in_grid[0]", "blocks[0]"} <= set(ran)


def test_check_model_fails_a_model_whose_validate_reads_leaves_a_field_out(split):
    """validate reads split.r too; declared without it, a grid over split.r would be
    validated once for every split.r (column by column) and let q + r > 1 through."""
    split(("split.q",))
    with pytest.raises(AssertionError, match=r"validate_reads: .*\['split\.r'\], not in "
                                             r"its validate_reads \('split\.q',\)"):
        check_model("split_test_model", figures=False)


def test_check_model_fails_a_table_too_wide_for_a_terminal(split):
    wide = dataclasses.replace(_split_model(("split.q", "split.r")),
                               format_table=lambda ds: "split: " + "Amp " * 40)
    register(wide)
    with pytest.raises(AssertionError, match="table: 1 line.* wider than 100"):
        check_model("split_test_model", figures=False)


def test_built_in_models_examples_and_grids_come_from_their_config():
    from antiamp.registry import builtin_config, get

    for name in builtin_names():
        model = get(name)
        assert model.examples == tuple(builtin_config(name).EXAMPLES), name
        assert model.grids == tuple(builtin_config(name).GRIDS), name


def test_parametrize_with_checks_makes_one_test_per_check(split):
    """The pytest generator a plugin's own suite uses: one parameter per check, each
    failing with its own check's findings alone."""
    from antiamp.testing import parametrize_with_checks

    split(("split.q",))
    mark = parametrize_with_checks(["split_test_model"], figures=False)
    (argname, checks), ids = mark.args, mark.kwargs["ids"]
    assert argname == "check" and len(checks) == len(ids)
    assert "split_test_model-validate_reads" in ids and "split_test_model-blocks[0]" in ids
    by_id = dict(zip(ids, checks))
    by_id["split_test_model-registered"]()
    with pytest.raises(AssertionError, match="fails the validate_reads check"):
        by_id["split_test_model-validate_reads"]()


def test_check_model_catches_a_kernel_field_that_names_nothing(broken):
    from antiamp.registry import get

    register(dataclasses.replace(get("broken_test_model"), kernel_fields=(
        "broken.qq", "brokn.*", "broken.q", "run.seed")))
    with pytest.raises(AssertionError) as err:
        check_model("broken_test_model", grids=[_grid(leak=False)], figures=False)
    said = [line.strip() for line in str(err.value).splitlines() if "kernel_fields" in line]
    assert any("'broken.qq': broken has no field 'qq'" in line for line in said), said
    assert any("'brokn.*' names no section" in line for line in said), said
    assert len(said) == 2, said  # broken.q and run.seed are fields it reads
