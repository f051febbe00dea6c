"""Judges' shared reading errors (antiamp.estimation.readcorr): read_corr from several
judgments of one room, and its use by antiamp-design."""

from __future__ import annotations

from importlib.resources import files

import pandas as pd
import pytest
from scipy.stats import multivariate_normal

from antiamp.estimation import readcorr as rc
from antiamp.estimate import load_log
from cli_runner import run_command


@pytest.mark.parametrize("h, k, r", [(0.3, -0.5, 0.7), (1.2, 0.4, -0.4), (2.0, 2.0, 0.97),
                                     (-1.0, 3.0, 0.5), (0.0, 0.0, 0.0), (-2.5, 1.0, -0.6)])
def test_bivariate_normal_cdf(h, k, r):
    want = multivariate_normal([0, 0], [[1, r], [r, 1]]).cdf([h, k])
    assert rc.bvn_cdf(h, k, r) == pytest.approx(want, abs=1e-7)


@pytest.mark.parametrize("truth, seed", [(0.0, 3), (0.5, 4)])
def test_read_corr_recovered_from_simulated_two_judge_logs(truth, seed):
    """Rooms judged by one to three judges sharing `truth` of their reading: the
    estimate within 3 bootstrap SEs of the truth, the interval covering it, and an
    independent-readings log distinguishable from a shared-readings one."""
    log = rc.simulate_judgments(300, truth, seed=seed)
    r = rc.estimate(log, n_boot=60, seed=seed)
    assert abs(r["read_corr"] - truth) < 3 * r["se"], r
    assert r["lo"] - 0.05 <= truth <= r["hi"] + 0.05, r
    assert 0.02 < r["se"] < 0.15


def test_read_corr_on_the_shipped_judgments_file():
    """108 rooms with two judges (123 pairs); the same value from the judgments'
    probabilities on the right answer and from the estimator schema's p_y."""
    path = files("antiamp") / "data" / "michael2023_judgments.csv"
    raw = pd.read_csv(path)
    r1 = rc.estimate(raw, n_boot=50)
    r2 = rc.estimate(load_log(path).drop(columns=["p_correct", "consultant"]), n_boot=50)
    assert (r1["n_pairs"], r1["n_rooms_paired"], r1["n_judgments"]) == (123, 108, 365)
    assert r1["read_corr"] == r2["read_corr"]
    assert r1["se"] > 0.03 and r1["lo"] < r1["read_corr"] < r1["hi"]
    assert not r1["at_grid_edge"]


def test_one_judge_a_room_identifies_nothing():
    log = rc.simulate_judgments(50, 0.3, judges=(1, 1))
    assert not rc.applies(log.assign(judge_role="online"))
    with pytest.raises(rc.ReadCorrError, match="pair"):
        rc.estimate(log)
    bad = rc.simulate_judgments(20, 0.3, seed=1)
    bad.loc[bad["protocol"] == "consult", "consultant"] = "sly"
    with pytest.raises(rc.ReadCorrError, match="column 'consultant'.*honest, dishonest"):
        rc.estimate(bad)


def test_design_reads_read_corr_from_the_store(tmp_path):
    """antiamp-estimate on the two-judge sample stores read_corr with its SE;
    antiamp-design --estimates uses it (not the default 0)."""
    from antiamp.design import judge_from_estimates

    r = run_command("antiamp-estimate", ["--sample", "two_judges", "--simulate", "--n-sim",
                                         "20000", "--n-resamples", "200", "--check-draws",
                                         "200", "--out", tmp_path / "o"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "judges' shared reading (read_corr" in r.stdout
    import xarray as xr

    ds = xr.open_zarr(tmp_path / "o" / "estimates.zarr")
    assert float(ds.read_corr_se) > 0
    j, notes = judge_from_estimates(tmp_path / "o" / "estimates.zarr")
    assert j.read_corr == pytest.approx(max(float(ds.read_corr), 0.0))
    assert j.se["read_corr"] == pytest.approx(float(ds.read_corr_se))
    assert any("estimated by the store" in n for n in notes)


def test_labels_only_pairs_give_a_tetrachoric_read_corr():
    """Without probabilities the right/wrong labels of two judges of one room still
    identify read_corr (two categories)."""
    log = rc.simulate_judgments(400, 0.5, seed=6)
    lab = log.assign(omega=1, y=(log["p_correct"] > 0.5).astype(int)).drop(
        columns="p_correct")
    r = rc.estimate(lab, n_boot=60, seed=6)
    assert r["cuts"] == [0.5]
    assert abs(r["read_corr"] - 0.5) < 3 * r["se"], r
