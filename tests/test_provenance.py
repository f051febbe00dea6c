"""Every output explains itself: CF global attributes and provenance
(antiamp.provenance), in cell results and grid stores, printed by antiamp-check."""

import shutil
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

import antiamp
from antiamp import provenance
from cli_runner import run_command

N = 4000


def _assert_explains_itself(attrs):
    assert attrs["Conventions"] == "CF-1.10"
    for k in provenance.ATTRIBUTES:
        assert isinstance(attrs.get(k), str) and attrs[k], k
    assert attrs["antiamp_version"] == antiamp.__version__
    assert attrs["python_version"] == ".".join(map(str, sys.version_info[:3]))
    import dask
    import numba
    import zarr

    for mod in (numba, np, xr, zarr, dask):
        assert attrs[f"{mod.__name__}_version"] == mod.__version__, mod.__name__
    assert attrs["references"].startswith("seed ")


def test_cell_result_has_cf_attributes_and_provenance():
    ds = antiamp.simulate({"run": {"n_instances": N, "progress": False}})
    _assert_explains_itself(ds.attrs)
    assert ds.attrs["title"] == "antiamp baseline model (simulation)"  # the model's own kept
    assert "seed 000" in ds.attrs["references"]


def test_a_model_cites_the_seed_its_package_names():
    ds = antiamp.simulate({"model": {"name": "colmad"}, "judge": {"kind": "logit"},
                           "run": {"n_instances": N, "progress": False}})
    _assert_explains_itself(ds.attrs)
    assert ds.attrs["references"].startswith("seed 001: ")
    assert "colmad" in ds.attrs["source"]


def test_provenance_leaves_the_values_unchanged():
    """Two cells with one config: the same bits, and the same attributes but the time."""
    c = {"run": {"n_instances": N, "progress": False, "seed": 5}}
    a, b = antiamp.simulate(c), antiamp.simulate(c)
    xr.testing.assert_equal(a, b)  # values and coordinates (attributes below)
    assert {k: v for k, v in a.attrs.items() if k != "created"} == \
        {k: v for k, v in b.attrs.items() if k != "created"}


def test_command_line_names_commands_not_folders(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/some/venv/bin/antiamp-sweep", "sweep=amp_gap"])
    assert provenance.command_line() == "antiamp-sweep sweep=amp_gap"
    monkeypatch.setattr(sys, "argv", ["/home/someone/study/run.py", "a b"])
    assert provenance.command_line() == "python run.py 'a b'"
    monkeypatch.setattr(sys, "argv", ["-c", "x"])
    assert provenance.command_line() == "python -c ... x"
    monkeypatch.setattr(sys, "argv", ["/x/ipykernel_launcher.py", "-f", "/x/kernel-1.json"])
    assert "/x" not in provenance.command_line()


def test_references_read_seed_ranges():
    refs = provenance.references("every protocol on one task (seeds 000-003)").splitlines()
    assert [r[:8] for r in refs] == ["seed 000", "seed 001", "seed 002", "seed 003"]
    assert provenance.references("nothing named").startswith("seed 000: ")


def test_source_revision_outside_and_inside_a_checkout(tmp_path):
    assert provenance.source_revision(tmp_path) == provenance.NO_CHECKOUT
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "__init__.py").write_text("x = 1\n")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for args in (["init", "-q"], ["add", "__init__.py"], ["commit", "-qm", "x"]):
        subprocess.run([git, *args], cwd=repo, check=True, env=env, capture_output=True)
    head = subprocess.run([git, "rev-parse", "HEAD"], cwd=repo, env=env, capture_output=True,
                          text=True, check=True).stdout.strip()
    assert provenance.source_revision(repo) == head
    (repo / "__init__.py").write_text("x = 2\n")
    provenance.source_revision.cache_clear()
    assert provenance.source_revision(repo) == head + "+dirty"
    # Untracked: an installed copy inside someone's repository is not a checkout.
    (repo / "sub").mkdir()
    (repo / "sub" / "__init__.py").write_text("")
    assert provenance.source_revision(repo / "sub") == provenance.NO_CHECKOUT
    provenance.source_revision.cache_clear()


def test_grid_store_records_and_antiamp_check_prints_provenance(tmp_path):
    r = run_command("antiamp-sweep", ["sweep.axes.judge.b=[0.2,0.6]", f"run.n_instances={N}",
                                      "sweep.plot=false", "hydra.run.dir=run"], tmp_path)
    assert r.returncode == 0, r.stderr
    store = tmp_path / "run" / "sweep.zarr"
    attrs = xr.open_zarr(store).attrs
    _assert_explains_itself(attrs)
    assert attrs["history"].startswith(f"antiamp {antiamp.__version__}: antiamp-sweep ")
    r = run_command("antiamp-check", [store], tmp_path)
    assert r.returncode == 0, r.stderr
    for k in provenance.ATTRIBUTES:
        assert f"\n  {k}: " in r.stdout, k
    assert "  Conventions: CF-1.10\n" in r.stdout
