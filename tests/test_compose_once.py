"""One command composes its Hydra config once, converts it once and validates it once.

Each command's check (before Hydra makes a run directory) composes and validates the
config; the run then takes that config instead of composing, converting and
validating it again.  Counted here in the process, with the functions that do each
step wrapped wherever a module holds them:

- compose: Hydra's config loader (``ConfigLoaderImpl.load_configuration``, behind
  both ``hydra.compose`` and the run of ``hydra.main``);
- convert: :func:`antiamp.registry.to_model_config` (dict -> validated model config);
- validate: :func:`antiamp.config.validate`; a grid's cells are validated too (each
  distinct combination of the swept values once), so the check is that no config is
  validated twice, and that the command's own config is validated exactly once.
"""

from __future__ import annotations

from limits import limit
import sys

import pytest

from cli_runner import run_command


@pytest.fixture
def counted(monkeypatch):
    """Counts of compositions, conversions and the configs validated (their values,
    in order)."""
    import importlib

    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    import antiamp.config
    import antiamp.registry

    # Imported first, so that none binds a wrapper of this test at its import.
    for name in ("antiamp.cli", "antiamp.sweeps.cli", "antiamp.sweeps.spec",
                 "antiamp.models.equilibrium.cli", "antiamp.evidence_game",
                 "antiamp.sweeps.blocks", "antiamp.sweeps.engine", "antiamp.extended",
                 "antiamp.ext_cli",
                 "antiamp.models", "antiamp.testing"):
        importlib.import_module(name)

    calls = {"compose": 0, "convert": 0, "validate": []}
    load = ConfigLoaderImpl.load_configuration

    def counted_load(self, *a, **k):
        calls["compose"] += 1
        return load(self, *a, **k)

    monkeypatch.setattr(ConfigLoaderImpl, "load_configuration", counted_load)
    convert, validate = antiamp.registry.to_model_config, antiamp.config.validate

    def counted_convert(*a, **k):
        calls["convert"] += 1
        return convert(*a, **k)

    def counted_validate(cfg, only=None):
        calls["validate"].append(repr(cfg))  # every section's values
        return validate(cfg, only=only)

    # Wherever a module holds them (``from .registry import to_model_config``).
    for mod in list(sys.modules.values()):
        if not getattr(mod, "__name__", "").startswith("antiamp"):
            continue
        for name, orig, new in (("to_model_config", convert, counted_convert),
                                ("validate", validate, counted_validate)):
            if getattr(mod, name, None) is orig:
                monkeypatch.setattr(mod, name, new)
    return calls


def _assert_once(calls, cells: int = 0, converts: int = 1):
    assert calls["compose"] == 1, f"composed {calls['compose']} times"
    assert calls["convert"] == converts, f"converted {calls['convert']} times"
    seen = calls["validate"]
    twice = {v for v in seen if seen.count(v) > 1}
    assert not twice, f"a config validated {max(seen.count(v) for v in twice)} times"
    # the command's config, then each distinct judge/protocol combination of a grid
    assert len(seen) == 1 + cells, f"{len(seen)} validations, {1 + cells} expected: {seen}"


@pytest.mark.parametrize("model", [[], ["model=colmad"]])
def test_a_cell_run_composes_converts_and_validates_once(model, counted, tmp_path):
    r = run_command("antiamp", [*model, "run.n_instances=1000", "run.figure=false",
                                f"hydra.run.dir={tmp_path / 'r'}"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r" / "results.zarr").is_dir()
    _assert_once(counted)


@pytest.mark.parametrize("axes, cells", [
    (["sweep.axes.model.rho=[0.2,0.6]"], 0),
    # two judge values: each combination is validated (with the base's other values)
    (["sweep.axes.model.rho=[0.2,0.6]", "sweep.axes.judge.b=[0.2,0.6]"], 2),
    # a model on the block engine: each distinct value of an axis its validate reads
    (["model=signals", "sweep.axes.signals.eta=[0.2,0.4]"], 2),
    # ... and of none (each field's values are checked column by column)
    (["model=signals", "sweep.axes.model.c_e=[0.2,0.4]"], 0),
])
def test_a_sweep_composes_converts_and_validates_once(axes, cells, counted, tmp_path):
    r = run_command("antiamp-sweep", [*axes, "run.n_instances=1000", "sweep.plot=false",
                                      f"hydra.run.dir={tmp_path / 'r'}"], tmp_path)
    assert r.returncode == 0, r.stderr
    _assert_once(counted, cells)


@pytest.mark.parametrize("args, cells", [
    (["signals.eta=0.3"], 0),
    (["extension=portfolio"], 0),
    # a grid: the check's plan is the run's (each value of signals.eta validated once)
    (["sweep.axes.signals.eta=[0.2,0.4]", "sweep.axes.model.c_e=[0.2,0.4]"], 2),
])
def test_antiamp_ext_composes_converts_and_validates_once(args, cells, counted, tmp_path):
    r = run_command("antiamp-ext", [*args, f"hydra.run.dir={tmp_path / 'r'}"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r" / "extension.zarr").is_dir()
    _assert_once(counted, cells)


@pytest.mark.parametrize("axes, cells, converts", [
    ([], 0, 0), (["sweep.axes.model.c_e=[0,0.2]", "sweep.axes.judge.b=[0.2,0.8]"], 2, 1)])
def test_a_solve_composes_and_validates_once(axes, cells, converts, counted, tmp_path):
    """antiamp-solve reads the shared sections itself for one cell (no model
    conversion); a grid runs on the engine as the equilibrium model (one conversion)."""
    r = run_command("antiamp-solve", [*axes, f"hydra.run.dir={tmp_path / 'r'}"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r" / "equilibria.zarr").is_dir()
    _assert_once(counted, cells, converts=converts)


def test_the_run_directory_is_the_one_the_check_composed(counted, tmp_path, monkeypatch):
    """Hydra makes the run directory of the config the check composed: the default
    ``outputs/${now:...}`` is resolved once, so a second boundary between the check
    and the run cannot move it."""
    from antiamp import cmdline

    seen = []
    compose_run = cmdline.compose_run

    def kept(*a, **k):
        cfg = compose_run(*a, **k)
        from omegaconf import OmegaConf

        seen.append(OmegaConf.select(cfg, "hydra.run.dir"))
        return cfg

    monkeypatch.setattr(cmdline, "compose_run", kept)
    r = run_command("antiamp", ["run.n_instances=1000", "run.figure=false"], tmp_path)
    assert r.returncode == 0, r.stderr
    (store,) = (tmp_path / "outputs").rglob("results.zarr")
    assert seen == [str(store.parent.relative_to(tmp_path))]
    assert counted["compose"] == 1


def test_a_refused_value_composes_once_and_makes_nothing(counted, tmp_path):
    r = run_command("antiamp", ["model.p=2", f"hydra.run.dir={tmp_path / 'r'}"], tmp_path)
    assert r.returncode == 2 and "model.p" in r.stderr
    assert not (tmp_path / "r").exists()
    assert counted["compose"] == 1 and counted["convert"] == 1


def test_a_multirun_composes_each_job_itself(tmp_path):
    """Only a single run takes the check's composition; each job of a multirun is
    composed by Hydra's launcher (its own run directory, its own overrides)."""
    import subprocess
    import shutil

    r = subprocess.run([shutil.which("antiamp"), "-m", "model.rho=0.2,0.4",
                        "run.n_instances=1000", "run.figure=false",
                        f"hydra.sweep.dir={tmp_path / 'm'}"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=limit(600))
    assert r.returncode == 0, r.stderr
    assert len(list((tmp_path / "m").rglob("results.zarr"))) == 2
