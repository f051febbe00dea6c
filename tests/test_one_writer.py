"""A command's output is one unit with one writer.

- A second writer of an output (a second antiamp-estimate into one ``--out``) is
  refused in one line while the first holds the output's lock (sweeps/lockpath.py).
- A rerun into the same ``--out`` replaces the earlier run's files and says so: none
  of them (predicted_vs_observed.csv, predictive_strata.csv,
  structural_selection.csv) is left beside the newer store.
- Every CSV output goes through one writer that escapes cells a spreadsheet would
  run (a stratum label ``=HYPERLINK(...)``).
- Refusals come before any write (``--cv`` beyond the log's judges); bad values are
  refused (a round number past the bound).
"""

from __future__ import annotations

import csv
from importlib.resources import files

import pandas as pd
import pytest

from antiamp.outputs_policy import MARKER, escape_cells, listed, write_csv
from antiamp.sweeps.lockpath import lock_store
from cli_runner import run_command

FAST = ["--n-resamples", "50"]


def _log(tmp_path, **change):
    df = pd.read_csv(str(files("antiamp") / "data" / "sample_log.csv"))
    for col, f in change.items():
        df[col] = f(df[col])
    p = tmp_path / "log.csv"
    df.to_csv(p, index=False)
    return p


def test_a_second_writer_of_one_out_is_refused(tmp_path):
    log, out = _log(tmp_path), tmp_path / "out"
    held = lock_store(out, RuntimeError, "antiamp-estimate")  # the first writer, running
    try:
        r = run_command("antiamp-estimate", [log, "--out", out, *FAST], tmp_path)
    finally:
        held.release()
    assert r.returncode == 2, (r.stdout, r.stderr)
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "another antiamp-estimate is writing to" in err, err
    assert "choose another --out" in err
    assert not out.exists()  # nothing written by the second
    # once the first has finished, the same command runs, and leaves no lock behind
    r = run_command("antiamp-estimate", [log, "--out", out, *FAST], tmp_path)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "out.lock").exists()


@pytest.mark.parametrize("held", ["run_dir", "export"])
def test_a_second_antiamp_run_into_one_store_or_export_file_is_refused(tmp_path, held):
    """``antiamp`` holds the locks of its run directory's store and of its export file
    (an absolute ``export.path`` two runs may share): a second writer of either is
    refused in one line, before its run directory is made."""
    run_dir, export = tmp_path / "run", tmp_path / "shared" / "e.csv"
    target = run_dir / "results.zarr" if held == "run_dir" else export
    other = tmp_path / ("run" if held == "run_dir" else "run2")
    args = ["run.n_instances=1000", "run.figure=false", f"export.path={export}",
            "export.n_instances=50"]
    target.parent.mkdir(parents=True)
    first = lock_store(target, RuntimeError, "antiamp run")  # the first writer, running
    try:
        r = run_command("antiamp", [*args, f"hydra.run.dir={other}"], tmp_path)
    finally:
        first.release()
    assert r.returncode == 2, (r.stdout, r.stderr)
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "another antiamp run is writing to" in err, err
    assert f"choose another {'hydra.run.dir' if held == 'run_dir' else 'export.path'}" in err
    assert not (other / "results.zarr").exists() and not export.exists()
    assert not (other / ".hydra").exists()  # refused before Hydra made the run directory
    # the lock let go, the same run writes both, and leaves no lock file
    r = run_command("antiamp", [*args, f"hydra.run.dir={other}"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (other / "results.zarr").is_dir() and export.is_file()
    assert not list(tmp_path.rglob("*.lock"))


def test_a_second_antiamp_run_that_starts_with_the_first_is_refused(tmp_path, monkeypatch):
    """The lock taken when the run starts (not only the check before it): a second run
    whose check passed before the first took the lock is refused in one line."""
    import antiamp.cli as cli

    monkeypatch.setattr(cli, "_probe_writers", lambda run_dir, cfg: None)  # the check raced
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    held = lock_store(run_dir / "results.zarr", RuntimeError, "antiamp run")
    try:
        r = run_command("antiamp", ["run.n_instances=1000", "run.figure=false",
                                    f"hydra.run.dir={run_dir}"], tmp_path)
    finally:
        held.release()
    assert r.returncode == 2, (r.stdout, r.stderr)
    # (said in the job's log, as the run's other refusals once its directory exists)
    assert "another antiamp run is writing to" in r.stdout + r.stderr, (r.stdout, r.stderr)
    assert not (run_dir / "results.zarr").exists()


def test_a_rerun_leaves_no_file_of_the_earlier_run_and_escapes_formula_cells(tmp_path):
    labels = {"easy": "=HYPERLINK(1)", "hard": "@SUM(1)"}
    log, out = _log(tmp_path, stratum=lambda s: s.map(labels)), tmp_path / "out"
    first = [log, "--out", out, *FAST, "--simulate", "--n-sim", "2000", "--check-draws", "20"]
    r = run_command("antiamp-estimate", first, tmp_path)
    assert r.returncode == 0, r.stderr
    earlier = {"predicted_vs_observed.csv", "predictive_strata.csv"}
    assert earlier <= {p.name for p in out.iterdir()}
    # the stratum labels, escaped: a spreadsheet shows them and never runs them
    with open(out / "predictive_strata.csv", newline="") as f:
        cells = [c for row in csv.reader(f) for c in row]
    assert "'=HYPERLINK(1)" in cells and "'@SUM(1)" in cells
    assert not any(c.startswith(("=", "@")) for c in cells), cells  # (never a number)

    r = run_command("antiamp-estimate", [log, "--out", out, *FAST], tmp_path)
    assert r.returncode == 0, r.stderr
    said = [x for x in r.stdout.splitlines() if x.startswith("replacing the earlier run")]
    assert len(said) == 1 and "predictive_strata.csv" in said[0], r.stdout
    left = {p.name for p in out.iterdir()}
    assert not left & (earlier | {"structural_selection.csv"}), left
    assert left == {"estimates.zarr", "estimates.png", "field_metrics.png", MARKER}, left
    assert listed(out) == {"estimates.zarr", "estimates.png", "field_metrics.png"}


def test_a_rerun_keeps_a_file_antiamp_did_not_write(tmp_path):
    log, out = _log(tmp_path), tmp_path / "out"
    assert run_command("antiamp-estimate", [log, "--out", out, *FAST], tmp_path).returncode == 0
    (out / "notes.txt").write_text("mine")
    assert run_command("antiamp-estimate", [log, "--out", out, *FAST], tmp_path).returncode == 0
    assert (out / "notes.txt").read_text() == "mine"


def test_cv_beyond_the_logs_judges_is_refused_before_anything_is_written(tmp_path):
    log, out = _log(tmp_path, judge_id=lambda s: s.map(lambda _: "j1")), tmp_path / "out"
    r = run_command("antiamp-estimate", [log, "--out", out, "--cv", "5", *FAST], tmp_path)
    assert r.returncode == 2 and "--cv 5" in r.stderr, r.stderr
    assert not out.exists()


@pytest.mark.parametrize("value", ["99999999999999999999999", "10001", "0"])
def test_a_round_past_the_bound_is_refused(tmp_path, value):
    r = run_command("antiamp-estimate", ["--sample", "--round", value, "--out",
                                         tmp_path / "o"], tmp_path)
    assert r.returncode == 2 and "--round" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("name", ["a" * 300, "/".join(["b" * 200] * 25)])
def test_an_out_the_file_system_cannot_name_is_refused_in_one_line(tmp_path, name):
    r = run_command("antiamp-estimate", ["--sample", "--out", name], tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Choose a shorter path" in r.stderr


def test_the_csv_writer_escapes_text_cells_only(tmp_path):
    df = pd.DataFrame({"label": ["=1+1", "+x", "-x", "@x", "\tx", "ok"],
                       "value": [-0.5, 1.0, -2.0, 3.0, 0.0, 1.0]})
    assert escape_cells(df)["label"].tolist() == ["'=1+1", "'+x", "'-x", "'@x", "'\tx", "ok"]
    write_csv(tmp_path / "t.csv", df)
    back = pd.read_csv(tmp_path / "t.csv")
    assert back["value"].tolist() == df["value"].tolist()  # numbers as they were
    assert back["label"].tolist()[0] == "'=1+1"


@pytest.mark.parametrize("dtype", ["str", "category", "object"])
def test_escaping_a_column_is_escaping_each_cell(dtype):
    """Text, categorical and object columns (with missing values, a repeated
    formula, a number in the object column) escape as each cell on its own would:
    the same CSV text as the element-by-element reference."""
    from antiamp.outputs_policy import FORMULA_START

    cells = ["=1+1", "ok", None, "-x", "=1+1", "@", "\rz", "a=b", "+", "", "ok"]
    df = pd.DataFrame({"t": pd.Series(cells, dtype=dtype), "n": range(len(cells))})
    if dtype == "object":
        df.loc[1, "t"] = -0.5

    def esc(v):
        return "'" + v if isinstance(v, str) and v.startswith(FORMULA_START) else v

    ref = df.copy()
    ref["t"] = df["t"].astype(object).map(esc)
    got = escape_cells(df)
    assert got["t"].dtype == object
    assert got.to_csv(index=False) == ref.to_csv(index=False)
    assert (got["t"] == "'=1+1").sum() == 2 and df["t"].iloc[0] == "=1+1"  # df unchanged


@pytest.mark.parametrize("model", ["redeliberation", "confidence"])
def test_a_cell_past_its_block_sums_bound_is_refused_before_the_run(tmp_path, model):
    """Redeliberation's and confidence's kernels hold a row of sums per block of
    instances: a cell of 3 x 10^11 asked for 235 GB and 10.5 GB (a MemoryError, a
    traceback, after the run began); refused in one line before the run directory,
    naming the field and its bound."""
    import importlib

    MAX_BLOCK_SUMS_BYTES = importlib.import_module(
        f"antiamp.models.{model}.model").MAX_BLOCK_SUMS_BYTES
    run_dir = tmp_path / "run"
    r = run_command("antiamp", [f"model={model}", "run.n_instances=300000000000",
                                f"hydra.run.dir={run_dir}"], tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "run.n_instances must be at most" in err, err
    assert f"{MAX_BLOCK_SUMS_BYTES >> 30} GiB" in err
    assert not run_dir.exists()
