"""Deferred imports: a single-cell run and a small sweep never import dask, and
xarray still tells dask arrays and collections apart once dask is in use
(``antiamp.lazy.defer_dask_type_check``); the kernels' OpenMP threads are told to
sleep when they wait before the OpenMP runtime loads; kernels read from numba's
cache without numba's lowering registries.

Each check runs in a fresh interpreter: which modules a process has imported, and
xarray's cache of duck-array types, are per process.
"""

from limits import limit
import os
import subprocess
import sys
import textwrap


def _python(code: str, cwd, env=None) -> str:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd,
                       capture_output=True, text=True, timeout=limit(300), env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_a_single_run_and_its_store_never_import_dask(tmp_path):
    out = _python("""
        import sys
        import antiamp
        from antiamp.output import write_zarr_atomic
        ds = antiamp.simulate({"run": {"n_instances": 2000}})
        write_zarr_atomic(ds, "cell.zarr")
        print(sorted(m for m in sys.modules if m.split(".")[0] == "dask"))
        print("amp" in ds and "xarray" in sys.modules)
    """, tmp_path)
    assert out.split("\n")[:2] == ["[]", "True"]


def test_xarray_still_recognises_dask_arrays_after_the_deferral(tmp_path):
    out = _python("""
        import numpy as np
        import antiamp
        ds = antiamp.simulate({"run": {"n_instances": 2000}})   # xarray loaded, deferred
        from xarray.namedarray import pycompat
        assert type(pycompat._cached_duck_array_modules["dask"]).__name__ == "_DeferredDask"
        assert not isinstance(np.zeros(3), pycompat.array_type("dask"))
        import dask, dask.array as da
        import xarray as xr
        x = da.arange(6, chunks=2)
        assert isinstance(x, pycompat.array_type("dask"))
        from xarray.core import utils as cutils
        from xarray.namedarray import utils as nutils
        for f in (cutils.is_dask_collection, nutils.is_dask_collection):
            assert f(x) and not f(np.zeros(3)) and f._antiamp_deferred
        assert nutils.is_duck_dask_array(x)
        assert not isinstance(np.zeros(3), pycompat.array_type("dask"))
        assert str(pycompat.mod_version("dask")) == str(__import__("packaging.version").version.Version(dask.__version__))
        v = xr.Variable("i", x)                       # stays lazy, not converted to numpy
        assert v.chunks == ((2, 2, 2),), v.chunks
        ds.to_zarr("cell.zarr")
        back = xr.open_zarr("cell.zarr")              # dask-backed, printed, computed
        assert back["amp"].chunks is not None
        assert "dask.array" in repr(back["amp"].data) or "dask" in repr(back["amp"])
        assert np.array_equal(back["amp"].values, ds["amp"].values)
        print("ok")
    """, tmp_path)
    assert out.strip() == "ok"


def test_a_small_sweep_command_never_imports_dask(tmp_path):
    out = _python("""
        import sys
        sys.argv = ["antiamp-sweep", "sweep.axes.model.rho=[0.2,0.6]", "sweep.axes.judge.b=[0.2,0.6]",
                    "run.n_instances=1000", "sweep.plot=false", "hydra.run.dir=run"]
        from antiamp.sweeps.cli import main
        try:
            main()
        finally:
            print(sorted(m for m in sys.modules if m.split(".")[0] == "dask"))
    """, tmp_path)
    assert out.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "run" / "sweep.zarr").is_dir()


def test_a_sweep_opened_without_dask_holds_the_same_values(tmp_path, monkeypatch):
    import numpy as np

    from antiamp.sweeps import blocks
    from antiamp.sweeps.engine import run_sweep

    for model, axes in (("baseline", {"model": {"rho": [0.2, 0.6]}}),
                        ("signals", {"model": {"rho": [0.2, 0.6]}})):
        cfg = {"model": {"name": model}, "run": {"n_instances": 2000},
               "sweep": {"axes": axes, "plot": False}}
        a = run_sweep(cfg, tmp_path / model, progress=False, log=lambda *x: None, dask=True)
        b = run_sweep(cfg, tmp_path / model, progress=False, log=lambda *x: None, dask=False)
        assert a["amp"].chunks is not None and b["amp"].chunks is None
        for v in a.data_vars:
            assert np.array_equal(a[v].values, b[v].values, equal_nan=True), v
        # By default a store opens without dask unless it is large.
        small = run_sweep(cfg, tmp_path / model, progress=False, log=lambda *x: None)
        assert small["amp"].chunks is None
        monkeypatch.setattr(blocks, "DASK_ABOVE_BYTES", small.nbytes - 1)
        large = run_sweep(cfg, tmp_path / model, progress=False, log=lambda *x: None)
        assert large["amp"].chunks is not None
        monkeypatch.setattr(blocks, "DASK_ABOVE_BYTES", small.nbytes)
        assert run_sweep(cfg, tmp_path / model, progress=False,
                         log=lambda *x: None)["amp"].chunks is None


def test_kernel_threads_wait_passively_unless_the_user_chose(tmp_path):
    # Set at import, before numba (and with it the OpenMP runtime) has loaded; the
    # measured effect is benchmarks/bench_threads.py's.
    code = """
        import os, sys
        import antiamp
        print(os.environ["OMP_WAIT_POLICY"], "numba" in sys.modules)
    """
    # This process imported antiamp too: the children start without its setting.
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    assert _python(code, tmp_path, env).strip() == "PASSIVE False"
    assert _python(code, tmp_path, {**env, "OMP_WAIT_POLICY": "ACTIVE"}).strip() == \
        "ACTIVE False"


def test_cached_kernels_load_without_numbas_lowering_registries(tmp_path):
    """A kernel read from numba's cache needs its runtime, not the modules of lowering
    implementations that numba's loader imports first, nor those its environments
    name (numba.np.arraymath, which imports scipy.linalg to look for BLAS;
    antiamp.kernels); the results are those of numba's own loader."""
    code = """
        import hashlib, sys
        if sys.argv[1] == "numba's loader":  # antiamp's replacement left out
            from numba.core import caching
            caching.FunctionCache.load_overload._antiamp_light = True
        import antiamp
        ds = antiamp.simulate({"run": {"n_instances": 5000}, "judge": {"kind": "logit"}})
        loop = antiamp.simulate({"model": {"name": "loop"},
                                 "loop": {"rounds": 3, "paths": 4, "batch": 50}})
        print(hashlib.sha256(b"".join(d[v].values.tobytes() for d in (ds, loop)
                                      for v in sorted(d.data_vars))).hexdigest())
        print(sorted(m for m in ("numba.np.polynomial", "numba.typed.typeddict",
                                 "numba.experimental.function_type", "numba.np.arraymath")
                      if m in sys.modules))
    """

    def run(mode):
        r = subprocess.run([sys.executable, "-c", textwrap.dedent(code), mode], cwd=tmp_path,
                           capture_output=True, text=True, timeout=limit(300))
        assert r.returncode == 0, r.stderr
        return r.stdout.split("\n")

    numba_own = run("numba's loader")  # first: it fills the kernels' cache if it was not
    light = run("light")
    assert light[1] == "[]" and numba_own[1] != "[]"
    assert light[0] == numba_own[0]


def test_a_kernel_compiled_after_light_loading_runs_as_before(tmp_path):
    """A run of the default model imports neither numba.np.arraymath nor
    scipy.linalg; after kernels were read from the cache with their numba
    environments rebuilt lightly, numba still compiles and runs new code that uses the same
    implementations (np.sum, np.empty), and the module a light environment named is
    imported when that code needs it."""
    code = """
        import sys
        import numba, numpy as np
        import antiamp
        antiamp.simulate({"run": {"n_instances": 1000}})
        light = not {"numba.np.arraymath", "scipy.linalg"} & set(sys.modules)

        @numba.njit
        def f(n):
            a = np.empty(n)
            for i in range(n):
                a[i] = i
            return a.sum()

        print(light, f(10), "numba.np.arraymath" in sys.modules)
    """
    assert _python(code, tmp_path).split() == ["True", "45.0", "True"]
