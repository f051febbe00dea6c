"""Small logs: intervals that are finite or say why not, separation said and handled,
a misspelt column named, one stratum reported once, the calibration figure of
assigned debates, and antiamp-design's check that a store's judge reproduces its log."""

from limits import limit
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from antiamp.estimate import EstimateOptions, estimate, validate_log
from antiamp.estimation.logfit import firth_fit, separation
from cli_runner import run_command


def small_log() -> pd.DataFrame:
    """60 rows: 30 consultancy (24 right consultants, 20 of them endorsed; 6 wrong, one
    endorsed: Amp 1/6, accuracy 25/30; the judge never endorses a consultant without
    evidence, so the consultancy fit is quasi-separated) and 30 debates."""
    rows = []

    def add(n, **kw):
        rows.extend(dict(kw) for _ in range(n))

    add(20, protocol="consult", a=1, y=1, e_P=1, omega=1, judge_id=0)
    add(4, protocol="consult", a=1, y=0, e_P=1, omega=1, judge_id=1)
    add(1, protocol="consult", a=0, y=0, e_P=1, omega=1, judge_id=2)
    add(5, protocol="consult", a=0, y=1, e_P=0, omega=1, judge_id=3)
    add(10, protocol="debate", a=1, y=1, e_P=1, e_A=0, omega=1, judge_id=0)
    add(3, protocol="debate", a=1, y=1, e_P=1, e_A=1, omega=1, judge_id=1)
    add(2, protocol="debate", a=1, y=0, e_P=1, e_A=1, omega=1, judge_id=2)
    add(10, protocol="debate", a=0, y=1, e_P=0, e_A=1, omega=1, judge_id=3)
    add(3, protocol="debate", a=0, y=0, e_P=1, e_A=1, omega=1, judge_id=0)
    add(2, protocol="debate", a=0, y=1, e_P=1, e_A=1, omega=1, judge_id=1)
    df = pd.DataFrame(rows)
    df["e_A"] = df["e_A"].astype("Int64")
    return df


def _cli_subprocess(args, cwd):
    exe = shutil.which("antiamp-estimate")
    cmd = [exe] if exe else [sys.executable, "-m", "antiamp.estimate"]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True,
                          timeout=limit(300), cwd=cwd)


def test_the_60_row_log_has_finite_intervals_or_a_stated_reason(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning (sqrt of a negative variance...)
        ds = estimate(validate_log(small_log()), EstimateOptions(n_resamples=2000))
    c = ds.sel(protocol="consult", stratum="all")
    assert float(c.amp) == pytest.approx(1 / 6) and float(c.acc) == pytest.approx(25 / 30)
    # (24/30)^30 = 0.12%: a few of 2000 resamples have no wrong consultant
    assert 0 < float(c.amp_undefined) < 0.01
    assert np.isfinite(float(c.amp_lo)) and np.isfinite(float(c.amp_hi))
    assert float(c.amp_lo) <= 1 / 6 <= float(c.amp_hi)
    assert "no row with a wrong protagonist in" in str(c["notes"].item())
    a = ds.sel(stratum="all")
    assert np.isfinite(float(a.amp_diff_lo)) and np.isfinite(float(a.p_value))
    # every printed statistic of the protocol lines is finite or has a reason
    for prot in ("consult", "debate"):
        r = ds.sel(protocol=prot, stratum="all")
        for m in ("amp", "acc", "fwc", "rho_eq_P", "b_hat"):
            for k in (m, f"{m}_lo", f"{m}_hi"):
                if k in ds and not np.isfinite(float(r[k])):
                    assert m in str(r["notes"].item()), (prot, k)
    # the consultancy fit is quasi-separated: said, and Firth's estimate given beside it
    f = ds.sel(fit="consult")
    assert np.isnan(float(f.kappa_tilde)) and "separation" in ds.attrs["fit_notes"]
    assert np.isfinite(float(f.kappa_tilde_firth)) and float(f.kappa_tilde_firth_se) > 0
    # the CLI: exit 0, no "[nan, nan]" without a note, no warnings on stderr
    path = tmp_path / "small.csv"
    small_log().to_csv(path, index=False)
    r = _cli_subprocess([path, "--out", tmp_path / "o"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Warning" not in r.stderr, r.stderr
    assert "Amp 0.1667 [nan, nan]" not in r.stdout and "p = nan" not in r.stdout
    lines = r.stdout.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(("  consult ", "  debate ")) and "nan" in line and "n=" in line:
            block = "\n".join(lines[i + 1:i + 5])
            assert "notes:" in block, line
    assert "separated: Firth" in r.stdout


def test_separation_is_detected_exactly():
    """Albert and Anderson's condition, against the cases written out: separated at one
    level, a tie-break judge, and a log whose extreme level never varies but whose
    labels overlap elsewhere (the maximum-likelihood estimate exists)."""
    assert separation(np.array([0, 0, 1, 1, 1]), np.array([0, 0, 1, 0, 1]))  # x = 0: never
    assert separation(np.array([-1, 0, 0, 1]), np.array([0, 0, 1, 1]))  # tie-break judge
    assert separation(np.array([0, 1, 2]), np.array([1, 0, 0]))  # reversed
    # never at x = -1, both labels at 0 and at 1: not separated
    assert separation(np.array([-1, -1, 0, 0, 1, 1]), np.array([0, 0, 1, 0, 1, 0])) == ""


def test_firth_equals_its_closed_form_and_the_penalised_maximum():
    """Two evidence levels: the model is saturated and Firth's estimate is Jeffreys'
    (k + 1/2) / (n + 1) at each level; three levels: the maximum of the penalised
    log-likelihood l + log|I|/2 found by scipy."""
    from scipy.optimize import minimize

    d = small_log()
    c = d[d.protocol == "consult"]
    x = (c.e_P - c.e_A.fillna(0)).to_numpy(float)
    y = (c.y == c.a).to_numpy(float)
    X = np.column_stack([np.ones_like(x), x])
    f = firth_fit(X, y, np.zeros(len(y), int))
    for level in (0.0, 1.0):
        k, n = y[x == level].sum(), (x == level).sum()
        p = 1 / (1 + np.exp(-(f["firth_mu"] + f["firth_kappa"] * level)))
        assert p == pytest.approx((k + 0.5) / (n + 1), abs=1e-9)
    deb = d[d.protocol == "debate"]
    x = (deb.e_P - deb.e_A).to_numpy(float)
    y = (deb.y == deb.a).to_numpy(float)
    X = np.column_stack([np.ones_like(x), x])
    assert separation(x, y)

    def neg(b):
        eta = X @ b
        p = 1 / (1 + np.exp(-eta))
        info = X.T @ ((p * (1 - p))[:, None] * X)
        return -(np.sum(y * eta - np.logaddexp(0, eta)) + 0.5 * np.linalg.slogdet(info)[1])

    opt = minimize(neg, np.zeros(2), method="Nelder-Mead",
                   options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000})
    f = firth_fit(X, y, deb.judge_id.to_numpy())
    assert [f["firth_mu"], f["firth_kappa"]] == pytest.approx(opt.x, abs=1e-5)


def test_a_rate_every_row_agrees_on_gets_a_wilson_interval():
    """The debate's right protagonists: 13 endorsed of 15 in the log; make all 15
    endorsed and the bootstrap has no spread: the Wilson interval, as written out."""
    d = small_log()
    d.loc[(d.protocol == "debate") & (d.a == d.omega), "y"] = 1
    ds = estimate(validate_log(d), EstimateOptions(n_resamples=500))
    r = ds.sel(protocol="debate", stratum="all")
    n, z = 15, 1.959963984540054
    centre, half = (1 + z * z / (2 * n)) / (1 + z * z / n), \
        z * np.sqrt(z * z / (4 * n * n)) / (1 + z * z / n)
    assert float(r.fwc) == 1.0
    assert float(r.fwc_lo) == pytest.approx(centre - half, abs=1e-12)
    assert float(r.fwc_hi) == pytest.approx(1.0, abs=1e-12)
    assert "Wilson" in str(r["notes"].item())


def test_one_stratum_is_reported_once_with_one_interval():
    d = small_log()
    d["stratum"] = "only"
    ds = estimate(validate_log(d), EstimateOptions(n_resamples=300))
    assert list(ds.stratum.values) == ["only", "all"]
    for k in ("amp", "amp_lo", "amp_hi", "acc_lo", "fwc_hi", "b_hat"):
        a, b = ds[k].sel(stratum="only").values, ds[k].sel(stratum="all").values
        assert np.array_equal(a, b, equal_nan=True), k
    assert float(ds.amp_diff_lo.sel(stratum="only")) == float(ds.amp_diff_lo.sel(stratum="all"))
    from antiamp.estimate import format_report

    text = format_report(ds, "x.csv")
    assert text.count("stratum ") == 1 and "stratum only" in text


@pytest.mark.parametrize("name", ["judge", "judgeid", "Judge_ID"])
def test_a_misspelt_cluster_column_is_named_not_ignored(tmp_path, name):
    path = tmp_path / "log.csv"
    small_log().rename(columns={"judge_id": name}).to_csv(path, index=False)
    r = run_command("antiamp-estimate", [path, "--out", tmp_path / "o"], tmp_path)
    assert r.returncode == 2
    assert f"column {name!r}" in r.stderr and "did you mean 'judge_id'" in r.stderr
    assert "clustered" in r.stderr
    assert not (tmp_path / "o").exists()


def test_an_unrelated_extra_column_is_read():
    d = small_log()
    d["mode"] = "online"  # as alike to 'role' as 'judge' is to 'judge_id', but not a part
    d["judge_tie"] = 0
    validate_log(d)


def test_calibration_of_assigned_debates_reads_both_debaters(tmp_path):
    """The shipped human-judge log (debaters assigned): the debate panel is not all
    zeros, and it equals the table computed here from the file as written (each
    debate once for debater A with p_y, once for debater B with 1 - p_y), which does not
    depend on which debater the log calls the protagonist."""
    from importlib.resources import files

    from antiamp.estimate import SAMPLES, load_log

    path = files("antiamp") / "data" / SAMPLES["human_judges"]
    ds = estimate(load_log(path), EstimateOptions(n_resamples=50))
    freq = ds.reliability_freq.sel(protocol="debate").values
    n = ds.reliability_n.sel(protocol="debate").values
    assert np.nanmax(freq) > 0.5 and int(ds.reliability_both_sides.sel(protocol="debate"))
    raw = pd.read_csv(path)
    deb = raw[(raw.protocol == "debate") & raw.p_y.notna() & raw.omega.notna()]
    p = np.concatenate([deb.p_y, 1 - deb.p_y])
    right = np.concatenate([deb.a == deb.omega, deb.a != deb.omega]).astype(float)
    b = np.minimum(np.floor(np.round(p * 10, 9)).astype(int), 9)  # 1 - 0.8 is in [0.2, 0.3)
    n_exp = np.bincount(b, minlength=10)
    assert np.array_equal(n, n_exp)
    with np.errstate(invalid="ignore"):
        assert np.allclose(freq, np.bincount(b, weights=right, minlength=10) / n_exp,
                           equal_nan=True)
    from antiamp.estimate import plot_reliability

    plot_reliability(ds, tmp_path / "calibration.png")
    assert (tmp_path / "calibration.png").stat().st_size > 1000


# ------------------------------------------------------------------ antiamp-design
def test_design_refuses_a_judge_its_log_contradicts(tmp_path):
    """Every consultant and debater shows evidence, so the logistic fit is not
    identified and the store gives the tie-break judge of debate's b-hat, which endorses
    every consultant with evidence: consultancy Amp 1 against the log's 1/6.  Refused
    before anything is written; with --accept-misfit designed, the misses printed."""
    d = small_log()
    d["e_P"] = 1
    d.loc[d.protocol == "debate", "e_A"] = 1
    path = tmp_path / "failed.csv"
    d.to_csv(path, index=False)
    r = run_command("antiamp-estimate", [path, "--n-resamples", "200", "--out",
                                         tmp_path / "est"], tmp_path)
    assert r.returncode == 0, r.stderr
    store = tmp_path / "est" / "estimates.zarr"
    from antiamp import design as dz

    judge, _ = dz.judge_from_estimates(store)
    assert judge.kind == "tiebreak"
    lines, misses = dz.fit_check(judge, store)
    assert any(m.startswith("consult Amp: log 0.167 (1/6), judge 1.000") for m in misses)
    assert any(line.split()[:2] == ["consult", "accuracy"] and "log 0.833" in line
               for line in lines)
    r = run_command("antiamp-design", ["--estimates", store, "--out", tmp_path / "d"],
                    tmp_path)
    assert r.returncode == 2 and "does not reproduce its log" in r.stderr
    assert "tie-break" in r.stderr and "--accept-misfit" in r.stderr
    assert not (tmp_path / "d").exists()
    r = run_command("antiamp-design", ["--estimates", store, "--out", tmp_path / "d",
                                       "--accept-misfit", "--n-sim", "10000", "--draws",
                                       "50"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "WARNING: the judge does not reproduce the log" in r.stdout
    assert "MISSES" in (tmp_path / "d" / "design.txt").read_text()


def test_design_from_a_judge_that_reproduces_its_log_runs(tmp_path):
    """The 60-row log's pooled logistic fit (not separated) reproduces the log within
    what 60 rows tell apart: the check prints, and the design runs."""
    path = tmp_path / "small.csv"
    small_log().to_csv(path, index=False)
    r = run_command("antiamp-estimate", [path, "--n-resamples", "200", "--out",
                                         tmp_path / "est"], tmp_path)
    assert r.returncode == 0, r.stderr
    from antiamp import design as dz

    store = tmp_path / "est" / "estimates.zarr"
    judge, _ = dz.judge_from_estimates(store)
    lines, misses = dz.fit_check(judge, store)
    assert judge.kind == "logit" and not misses
    ds = xr.open_zarr(store)
    assert int(ds.n_wrong.sel(protocol="consult", stratum="all")) == 6


def test_the_structural_fit_says_when_consultancy_labels_are_separated():
    from antiamp.estimation import structural as st

    f = st.fit(validate_log(small_log()))
    assert any(n.startswith("separation in consultancy") for n in f.notes), f.notes
    d = small_log()
    i = d.index[(d.protocol == "consult") & (d.e_P == 0)][0]
    d.loc[i, "y"] = d.loc[i, "a"]  # one consultant endorsed without evidence
    f = st.fit(validate_log(d))
    assert not any(n.startswith("separation") for n in f.notes), f.notes
