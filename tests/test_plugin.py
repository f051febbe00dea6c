"""A third-party model, installed with pip, runs through every command and on workers."""

from limits import limit
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import xarray as xr

# The module's tests share a module fixture: the plugin is installed once, on one worker, not once
# per xdist worker (pyproject's --dist loadgroup).
pytestmark = pytest.mark.xdist_group("plugin")

PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "antiamp-toy-plugin"
version = "0.0.1"

[project.entry-points."antiamp.models"]
toy = "antiamp_toy:MODEL"
toygpu = "antiamp_toygpu:MODEL"
toygpu_bad = "antiamp_toygpu:BAD"

[tool.setuptools]
py-modules = ["antiamp_toy", "antiamp_toygpu"]
"""

# The small model of README.md's "Write your own model": a judge who checks each
# false-side artifact with probability q (so Amp(debate) = rho (1 - q) b), simulated.
MODULE = '''
from dataclasses import dataclass

import numpy as np
import xarray as xr

from antiamp.config import ConfigError
from antiamp.models import Model


@dataclass
class ToyConfig:
    #: Probability that the judge checks a presented false-side artifact.
    q: float = 0.5


def validate(cfg):
    if not 0 <= cfg.toy.q <= 1:
        raise ConfigError(f"toy.q must lie in [0, 1], got {cfg.toy.q!r}")


def run_cells(base, cells):
    amp = np.empty((len(cells), 2))
    se = np.empty((len(cells), 2))
    for i, c in enumerate(cells):
        n = c.run.n_instances
        u = np.random.default_rng([c.run.seed, 2024]).random((n, 3))
        fab = u[:, 0] < c.model.rho
        passed = fab & (u[:, 1] >= c.toy.q)
        amp[i, 0] = passed.mean()                                  # consultancy
        amp[i, 1] = (passed & (u[:, 2] < c.judge.b)).mean()        # debate: a tie
        se[i] = np.sqrt(amp[i] * (1 - amp[i]) / n)
    return xr.Dataset(
        {"amp": (("cell", "protocol"), amp, {"long_name": "mistake amplification", "units": "1"}),
         "amp_se": (("cell", "protocol"), se, {"long_name": "standard error of amp", "units": "1"})},
        coords={"protocol": ("protocol", ["consult", "debate"], {"long_name": "oversight protocol"})})


def format_table(ds):
    return "toy: " + ", ".join(f"{p} Amp {float(ds.amp.sel(protocol=p)):.4f}"
                               for p in ("consult", "debate"))


MODEL = Model(name="toy", title="a judge who checks artifacts", run_cells=run_cells,
              sections={"toy": ToyConfig}, validate=validate, format_table=format_table,
              kernel_fields=("model.rho", "toy.q", "judge.b", "run.n_instances", "run.seed"),
              examples=(("toy", {"model": {"name": "toy"}, "run": {"n_instances": 2000}}),),
              grids=({"model": {"name": "toy"}, "run": {"n_instances": 20000},
                      "sweep": {"axes": {"toy": {"q": [0.0, 0.5]}, "model": {"rho": [0.2, 0.4]}}}},))
'''


# The same judge on either target (docs/guides/own_model.md, "A GPU path"): one
# per-instance function of the instance's Philox words, counted by antiamp's launchers.
# BAD is the same model with a GPU path that draws another Philox block: the
# conformance check's ``gpu`` comparison must catch it.
MODULE_GPU = '''
from dataclasses import dataclass

import numba as nb
import numpy as np
import xarray as xr

from antiamp.config import ConfigError
from antiamp.kernels.rng import HI_SHIFT, LO_WORD, bernoulli_threshold, philox4x32_10
from antiamp.models import Model
from antiamp.runner import count_classes


STREAM = np.uint64(2024)


@dataclass
class ToyGpuConfig:
    #: Probability that the judge checks a presented false-side artifact.
    q: float = 0.5


@nb.njit(inline="always")
def classify(i, k0, k1, thr):
    """Bit 0: a false-side artifact (rho); bit 1: it passes the check (1 - q);
    bit 2: the debate judge's tie goes its way (b)."""
    w0, w1, w2, w3 = philox4x32_10(i & LO_WORD, i >> HI_SHIFT, np.uint64(0), STREAM, k0, k1)
    return np.int64(w0 < thr[0]) + 2 * np.int64(w1 >= thr[1]) + 4 * np.int64(w2 < thr[2])


@nb.njit(inline="always")
def classify_other_block(i, k0, k1, thr):
    w0, w1, w2, w3 = philox4x32_10(i & LO_WORD, i >> HI_SHIFT, np.uint64(1), STREAM, k0, k1)
    return np.int64(w0 < thr[0]) + 2 * np.int64(w1 >= thr[1]) + 4 * np.int64(w2 < thr[2])


def validate(cfg):
    if not 0 <= cfg.toygpu.q <= 1:
        raise ConfigError(f"toygpu.q must lie in [0, 1], got {cfg.toygpu.q!r}")


def simulate(cells, gpu_classify):
    amp = np.empty((len(cells), 2))
    se = np.empty((len(cells), 2))
    for i, c in enumerate(cells):
        n = c.run.n_instances
        thr = np.array([bernoulli_threshold(v) for v in (c.model.rho, c.toygpu.q, c.judge.b)],
                       np.uint64)
        fn = gpu_classify if c.run.device == "cuda" else classify
        k = count_classes(fn, 8, thr, n, c.run.seed, device=c.run.device,
                          n_threads=c.run.n_threads, progress=False)
        amp[i] = (k[3] + k[7]) / n, k[7] / n                # consultancy, debate
        se[i] = np.sqrt(amp[i] * (1 - amp[i]) / n)
    return xr.Dataset(
        {"amp": (("cell", "protocol"), amp, {"long_name": "mistake amplification", "units": "1"}),
         "amp_se": (("cell", "protocol"), se, {"long_name": "standard error of amp", "units": "1"})},
        coords={"protocol": ("protocol", ["consult", "debate"], {"long_name": "oversight protocol"})})


def run_cells(base, cells):
    return simulate(cells, classify)


def run_cells_bad(base, cells):
    return simulate(cells, classify_other_block)


FIELDS = ("model.rho", "toygpu.q", "judge.b", "run.n_instances", "run.seed", "run.device")
MODEL = Model(name="toygpu", title="a judge who checks artifacts, on the CPU or a GPU",
              run_cells=run_cells, sections={"toygpu": ToyGpuConfig}, validate=validate,
              validate_reads=("toygpu.q",), kernel_fields=FIELDS, gpu=True)
BAD = Model(name="toygpu_bad", title="the same, with a GPU path that draws other numbers",
            run_cells=run_cells_bad, sections={"toygpu": ToyGpuConfig}, validate=validate,
            validate_reads=("toygpu.q",), kernel_fields=FIELDS, gpu=True)
'''


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    pkg = tmp_path_factory.mktemp("plugin")
    (pkg / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
    (pkg / "antiamp_toy.py").write_text(MODULE)
    (pkg / "antiamp_toygpu.py").write_text(MODULE_GPU)
    # Installed with pip into a directory of its own, put on the path of every process
    # the test starts (commands and their dask workers): the environment running the
    # tests is never changed, so tests running beside this one never see the plugin.
    site = tmp_path_factory.mktemp("site")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                        "--target", str(site), str(pkg)],
                       capture_output=True, text=True, timeout=limit(600))
    assert r.returncode == 0, r.stderr
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(site)] + [p for p in [os.environ.get("PYTHONPATH")]
                                                        if p])}
    yield env


def _run(cmd, args, cwd, env):
    exe = shutil.which(cmd)
    mod = {"antiamp": "antiamp.cli", "antiamp-sweep": "antiamp.sweeps.cli"}[cmd]
    argv = [exe] if exe else [sys.executable, "-m", mod]
    return subprocess.run(argv + args, cwd=cwd, capture_output=True, text=True, timeout=limit(600),
                          env=env)


def test_an_installed_plugin_runs_a_distributed_grid(plugin, tmp_path):
    env = plugin
    r = subprocess.run([sys.executable, "-c", "import antiamp; print(antiamp.models.names())"],
                       capture_output=True, text=True, cwd=tmp_path, env=env)
    assert "'toy'" in r.stdout, r.stderr
    r = _run("antiamp", ["model=toy", "toy.q=0.25", "model.rho=0.4", "run.n_instances=20000",
                         "hydra.run.dir=one"], tmp_path, env)
    assert r.returncode == 0, r.stderr
    assert "toy: consult Amp" in r.stdout
    cell = xr.open_zarr(tmp_path / "one" / "results.zarr")
    assert cell.attrs["model"] == "toy" and "toy:" in cell.attrs["config"]
    args = ["model=toy", "sweep.axes.toy.q=[0.0,0.25,0.5,0.75]", "sweep.axes.model.rho=[0.2,0.4]",
            "run.n_instances=20000", "sweep.cells_per_block=2", "sweep.plot=false"]
    r = _run("antiamp-sweep", args + ["executor.processes=true", "executor.n_workers=2",
                                      "hydra.run.dir=dist"], tmp_path, env)
    assert r.returncode == 0, r.stderr
    r = _run("antiamp-sweep", args + ["hydra.run.dir=local"], tmp_path, env)
    assert r.returncode == 0, r.stderr
    dist = xr.open_zarr(tmp_path / "dist" / "sweep.zarr").load()
    local = xr.open_zarr(tmp_path / "local" / "sweep.zarr").load()
    assert dist.amp.dims == ("q", "rho", "protocol")
    assert np.array_equal(dist.amp.values, local.amp.values)
    # The simulation agrees with its closed form within a few standard errors.
    q, rho = np.meshgrid(dist.q.values, dist.rho.values, indexing="ij")
    exact = rho * (1 - q)
    z = (dist.amp.sel(protocol="consult").values - exact) / np.maximum(
        dist.amp_se.sel(protocol="consult").values, 1e-12)
    assert np.all(np.abs(z[q < 1]) < 5)
    assert dist.amp.attrs["ancillary_variables"] == "amp_se"
    # The plugin's own validation names its field, before any output.
    r = _run("antiamp-sweep", ["model=toy", "sweep.axes.toy.q=[0.5,1.5]", "hydra.run.dir=bad"],
             tmp_path, env)
    assert r.returncode == 2 and "toy.q must lie in [0, 1]" in r.stderr, r.stderr
    assert not (tmp_path / "bad").exists()


def test_the_installed_plugin_passes_the_conformance_checks(plugin, tmp_path):
    """``antiamp.testing.check_model`` as a plugin's author runs it: with the plugin's own
    grid, a resume after kill -9 included (the plugin is importable in a fresh process)."""
    code = textwrap.dedent("""
        from antiamp.testing import check_model
        print(",".join(check_model("toy", kill=True)))  # on the plugin's own Model.grids
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=tmp_path, env=plugin, timeout=limit(900))
    assert r.returncode == 0, r.stderr
    ran = r.stdout.strip().splitlines()[-1].split(",")
    assert {"registered", "help", "bad_values", "cell_in_grid[0]", "blocks[0]", "exact[0]",
            "resume", "table"} <= set(ran)


def test_antiamp_warm_runs_an_installed_plugins_examples(plugin, tmp_path):
    """``antiamp warm`` treats an installed model as a built-in one: its examples
    (``Model.examples``) are among the warming runs, and ``antiamp warm toy`` runs them."""
    r = subprocess.run([sys.executable, "-c", "from antiamp.warm import runs; "
                        "print(sorted({c['model']['name'] for _, c in runs()}))"],
                       capture_output=True, text=True, cwd=tmp_path, env=plugin, timeout=600)
    assert r.returncode == 0 and "'toy'" in r.stdout and "'baseline'" in r.stdout, r.stderr
    r = subprocess.run([sys.executable, "-c", "from antiamp.cli import main; main()", "warm",
                        "toy"], capture_output=True, text=True, cwd=tmp_path, env=plugin,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    assert "model toy (1 runs" in r.stdout and "done in" in r.stdout, r.stdout


def test_a_plugins_gpu_path_matches_its_cpu_path_on_the_simulator(plugin, tmp_path):
    """A third-party model's one per-instance function, counted by antiamp's launchers
    on the CPU and (numba's CUDA simulator) the GPU: ``check_model(gpu=True)`` finds the
    same counts; a GPU path that draws other numbers fails the check, named."""
    code = textwrap.dedent("""
        from antiamp.testing import check_model
        def grid(name):
            return {"model": {"name": name, "rho": 0.4}, "run": {"n_instances": 20000},
                    "sweep": {"axes": {"toygpu": {"q": [0.0, 0.5]}, "judge": {"b": [0.3, 0.7]}}}}
        print(",".join(check_model("toygpu", grids=[grid("toygpu")], figures=False, gpu=True,
                                   gpu_n=3000)))
        try:
            check_model("toygpu_bad", grids=[grid("toygpu_bad")], figures=False, gpu=True,
                        gpu_n=3000)
        except AssertionError as exc:
            print("BAD", " ".join(str(exc).split()))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=tmp_path, env=plugin, timeout=limit(1800))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert "gpu" in lines[-2].split(","), r.stdout
    assert lines[-1].startswith("BAD") and "gpu: amp: 8 values differ" in lines[-1], r.stdout


def test_the_guides_gpu_model_prints_a_table():
    """docs/guides/own_model.md's GPU example (antiamp_toygpu.py, as printed) has a
    table function: ``antiamp model=toygpu`` printed nothing without one."""
    import re

    import xarray as xr

    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "guides" / "own_model.md"
            ).read_text()
    (code,) = re.findall(r"^```python\n# antiamp_toygpu\.py\n(.*?)^```", text, re.S | re.M)
    ns: dict = {}
    exec(compile(code, "antiamp_toygpu.py", "exec"), ns)
    model = ns["MODEL"]
    assert model.format_table is not None
    ds = xr.Dataset({"amp": ("protocol", [0.25, 0.125]), "amp_se": ("protocol", [0.01, 0.02])},
                    coords={"protocol": ["consult", "debate"]})
    assert model.format_table(ds) == ("toygpu: consult Amp 0.2500 (SE 0.0100), debate Amp "
                                      "0.1250 (SE 0.0200)")
