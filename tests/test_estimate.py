"""Estimating parameters and Amp from logs: recovery, coverage, equality with the
accumulators, bad files."""

import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import antiamp as sim
from antiamp.estimate import EstimateOptions, LogError, corrected_amp, estimate, validate_log
from antiamp.transcripts import records

LOGIT = {"model": {"rho": 0.4, "p": 0.75}, "judge": {"kind": "logit", "mu": 0.3, "kappa": 1.5}}


def test_records_reproduce_the_accumulators_exactly():
    cfg = {**LOGIT, "model": {**LOGIT["model"], "x_P": 0.7}, "run": {"n_instances": 30_000,
                                                                     "seed": 4}}
    out = {}
    ds = sim.simulate(cfg, counts_out=out)
    df = records(cfg, 30_000)
    c, d = df[df.protocol == "consult"], df[df.protocol == "debate"]
    idx = ((d.omega.values << 4) | ((d.a.values == d.omega.values).astype(int) << 3)
           | (c.e_P.values << 2) | (d.e_P.values << 1) | d.e_A.values)
    assert np.array_equal(np.bincount(idx, minlength=32), out["counts"])
    for i, sub in enumerate((c, d)):
        wrong = sub[sub.a != sub.omega]
        assert wrong.p_endorse.mean() == pytest.approx(float(ds.amp.values[i]), rel=1e-12)
    # The section-6 estimator on the drawn labels is within its interval of the value.
    est = estimate(validate_log(df), EstimateOptions(n_resamples=500))
    for i, prot in enumerate(("consult", "debate")):
        r = est.sel(protocol=prot, stratum="all")
        assert float(r.amp_lo) <= float(ds.amp_theory.values[i]) <= float(r.amp_hi)


def _coverage(reps, n, n_resamples):
    th = sim.theory(LOGIT)
    hits = {"amp_c": 0, "amp_d": 0, "kappa": 0, "mu": 0}
    for seed in range(reps):
        df = records({**LOGIT, "run": {"seed": 1000 + seed}}, n, n_judges=25)
        est = estimate(validate_log(df), EstimateOptions(n_resamples=n_resamples, seed=seed))
        for i, k in enumerate(("amp_c", "amp_d")):
            r = est.isel(protocol=i).sel(stratum="all")
            hits[k] += float(r.amp_lo) <= float(th.amp.values[i]) <= float(r.amp_hi)
        f = est.sel(fit="pooled")
        hits["kappa"] += float(f.kappa_tilde_lo) <= 1.5 <= float(f.kappa_tilde_hi)
        hits["mu"] += float(f.mu_tilde_lo) <= 0.3 <= float(f.mu_tilde_hi)
    return {k: v / reps for k, v in hits.items()}


def test_intervals_cover_the_truth_fast():
    cov = _coverage(reps=30, n=3000, n_resamples=400)
    # nominal 0.95; 30 replications: a binomial sd of 0.04
    assert all(v >= 0.8 for v in cov.values()), cov


@pytest.mark.slow
def test_intervals_cover_the_truth_at_nominal_rate():
    cov = _coverage(reps=300, n=3000, n_resamples=1000)
    # nominal 0.95; 300 replications: a binomial sd of 0.0126, so +-3 sd
    assert all(0.912 <= v <= 0.988 for v in cov.values()), cov


def test_tie_bias_rho_and_strata():
    parts = []
    for stratum, b, rho in (("a", 0.8, 0.3), ("b", 0.2, 0.6)):
        df = records({"model": {"rho": rho}, "judge": {"b": b}, "run": {"seed": 9}}, 20_000,
                     stratum=stratum)
        parts.append(df)
    df = pd.concat(parts, ignore_index=True)
    est = estimate(validate_log(df), EstimateOptions(n_resamples=300))
    deb = est.sel(protocol="debate")
    assert float(deb.b_hat.sel(stratum="a")) == pytest.approx(0.8, abs=0.03)
    assert float(deb.b_hat.sel(stratum="b")) == pytest.approx(0.2, abs=0.03)
    assert float(deb.rho_feas_P.sel(stratum="b")) == pytest.approx(0.6, abs=0.02)
    assert float(est.sel(protocol="consult").rho_eq_P.sel(stratum="a")) == pytest.approx(0.3, abs=0.02)
    assert float(est.p_value.sel(stratum="all")) < 1e-6  # debate anti-amplifies
    assert "separation" in est.attrs["fit_notes"]  # a tie-break judge has no finite kappa


def test_label_blind_split():
    df = records({"judge": {"b": 0.8}, "model": {"rho": 0.5}, "run": {"seed": 2}}, 20_000)
    blind = records({"judge": {"b": 0.5}, "model": {"rho": 0.5}, "run": {"seed": 3}}, 20_000)
    df["label_blind"], blind["label_blind"] = 0, 1
    est = estimate(validate_log(pd.concat([df, blind], ignore_index=True)),
                   EstimateOptions(n_resamples=200))
    r = est.sel(protocol="debate", stratum="all")
    assert float(r.b_hat_labelled) == pytest.approx(0.8, abs=0.03)
    assert float(r.b_hat_blind) == pytest.approx(0.5, abs=0.03)


def test_mislabel_correction_undoes_flipped_truth():
    df = records({**LOGIT, "run": {"seed": 5}}, 200_000)
    true_amp = sim.theory(LOGIT).amp.values
    rng = np.random.default_rng(1)
    flip = rng.random(len(df)) < 0.05
    df.loc[flip, "omega"] = 1 - df.loc[flip, "omega"]
    for i, prot in enumerate(("consult", "debate")):
        sub = df[df.protocol == prot]
        known = np.ones(len(sub), bool)
        wrong = sub.a.values != sub.omega.values
        codes = (4 * known + 2 * wrong + (sub.y.values == sub.a.values)).astype(float)
        naive = corrected_amp(codes, 0.0)
        fixed = corrected_amp(codes, 0.05)
        assert abs(fixed - true_amp[i]) < 0.01 < abs(naive - true_amp[i]), (naive, fixed)


BAD = [
    (lambda d: d.drop(columns=["y"]), "missing required column(s): y"),
    (lambda d: d.assign(e_P=d.e_P.where(d.index != 7, 2)), "column 'e_P', row 7"),
    (lambda d: d.assign(a=d.a.astype(object).where(d.index != 3, "yes")), "column 'a', row 3"),
    (lambda d: d.assign(protocol=d.protocol.where(d.index != 5, "jury")), "column 'protocol', row 5"),
    (lambda d: d.assign(stratum=d.stratum.where(d.index != 11, "")), "column 'stratum', row 11"),
    (lambda d: d.assign(e_A=d.e_A.astype(float).where(d.index != d.index[-1], np.nan)),
     "column 'e_A', row"),
    (lambda d: d.assign(omega=np.nan), "no row has a known ground truth"),
    (lambda d: d.iloc[0:0], "no rows"),
]


@pytest.mark.parametrize("mutate,msg", BAD)
def test_bad_logs_name_the_column_and_row(tmp_path, mutate, msg):
    df = mutate(records({}, 200))
    with pytest.raises(LogError) as err:
        validate_log(df)
    assert msg in str(err.value)
    path = tmp_path / "bad.csv"
    df.to_csv(path, index=False)
    exe = shutil.which("antiamp-estimate")
    cmd = [exe] if exe else [sys.executable, "-m", "antiamp.estimate"]
    r = subprocess.run(cmd + [str(path), "--out", str(tmp_path / "out")], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and msg in r.stderr
    assert not (tmp_path / "out").exists()


def test_cli_on_the_shipped_sample(tmp_path):
    exe = shutil.which("antiamp-estimate")
    cmd = [exe] if exe else [sys.executable, "-m", "antiamp.estimate"]
    r = subprocess.run(cmd + ["--sample", "--simulate", "--n-sim", "200000", "--mislabel",
                              "0.02", "--n-resamples", "500", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "stratum easy" in r.stdout and "stratum hard" in r.stdout
    ds = xr.open_zarr(tmp_path / "o" / "estimates.zarr")
    assert list(ds.stratum.values) == ["easy", "hard", "all"]
    assert 1.0 < float(ds.kappa_tilde.sel(fit="pooled")) < 2.0  # the sample's kappa is 1.5
    assert (tmp_path / "o" / "estimates.png").stat().st_size > 1000
    pred = pd.read_csv(tmp_path / "o" / "predicted_vs_observed.csv")
    assert {"observed", "logit (mu~, kappa~)"} <= set(pred.columns)
