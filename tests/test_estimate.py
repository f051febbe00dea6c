"""Estimating parameters and Amp from logs: recovery, coverage, equality with the
accumulators, bad files."""

from limits import limit
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
from cli_runner import run_command

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
        assert float(r.amp_lo) <= float(ds.amp_exact.values[i]) <= float(r.amp_hi)


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
    # a judge's probability where a label belongs: the value as written, not numpy's repr
    (lambda d: d.assign(y=d.y.astype(float).where(d.index != 9, 0.99)),
     "column 'y', row 9: value 0.99 is not an answer"),
    (lambda d: d.assign(p_y=np.where(d.index == 4, 1.5, 0.5)),
     "column 'p_y', row 4: value 1.5 is not a probability in [0, 1]"),
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
                       text=True, timeout=limit(120))
    assert r.returncode == 2 and msg in r.stderr
    assert not (tmp_path / "out").exists()


def test_cli_on_the_shipped_sample(tmp_path):
    exe = shutil.which("antiamp-estimate")
    cmd = [exe] if exe else [sys.executable, "-m", "antiamp.estimate"]
    r = subprocess.run(cmd + ["--sample", "--simulate", "--n-sim", "200000", "--mislabel",
                              "0.02", "--n-resamples", "500", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=limit(300))
    assert r.returncode == 0, r.stderr
    assert "stratum easy" in r.stdout and "stratum hard" in r.stdout
    ds = xr.open_zarr(tmp_path / "o" / "estimates.zarr")
    assert list(ds.stratum.values) == ["easy", "hard", "all"]
    assert 1.0 < float(ds.kappa_tilde.sel(fit="pooled")) < 2.0  # the sample's kappa is 1.5
    assert (tmp_path / "o" / "estimates.png").stat().st_size > 1000
    pred = pd.read_csv(tmp_path / "o" / "predicted_vs_observed.csv")
    assert {"observed", "logit (mu~, kappa~)"} <= set(pred.columns)


def test_default_output_goes_under_outputs(tmp_path):
    r = _cli(["--sample", "--n-resamples", "200"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "outputs" / "estimates" / "sample_log" / "estimates.zarr").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outputs"]


# ------------------------------------------------------------------ unreadable files, bad options
def _cli(args, tmp_path, timeout=120):
    return run_command("antiamp-estimate", args, tmp_path)


def _good_csv(tmp_path):
    path = tmp_path / "good.csv"
    records(LOGIT, 300).to_csv(path, index=False)
    return path


def _w(d, name, data):
    p = d / name
    if isinstance(data, str):
        data = data.encode()
    p.write_bytes(data)
    return p


def _mkdir(d, name):
    (d / name).mkdir()
    return d / name


BAD_FILES = {
    "empty file": (lambda d: _w(d, "e.csv", b""), "is empty"),
    "a directory": (lambda d: _mkdir(d, "dir.csv"), "is a directory"),
    "CSV named .parquet": (lambda d: _w(d, "x.parquet", "protocol,a\nconsult,1\n"),
                           "cannot be read as Parquet"),
    "random bytes": (lambda d: _w(d, "r.csv", np.random.default_rng(1).integers(
        0, 256, 4000, dtype=np.uint8).tobytes()), "r.csv"),
    "Latin-1 text": (lambda d: _w(d, "l.csv", "protocol,a,y,e_P,e_A,omega,stratum\n"
                                  "consult,1,1,0,0,1,caf\xe9\n".encode("latin-1")),
                     "is not UTF-8 text"),
    "UTF-16 text": (lambda d: _w(d, "u.csv", "protocol,a,y,e_P,e_A,omega\nconsult,1,1,0,0,1\n"
                                 .encode("utf-16")), "is not UTF-8 text"),
    "ragged rows": (lambda d: _w(d, "g.csv", "protocol,a,y,e_P,e_A,omega\nconsult,1,1,0,0,1\n"
                                 "debate,1,0,1,1,0,7,8\n"),
                    "row 1: 8 fields, more than the header's 6 (g.csv, line 3)"),
    "header only": (lambda d: _w(d, "h.csv", "protocol,a,y,e_P,e_A,omega\n"), "no rows"),
    "missing file": (lambda d: d / "nope.csv", "no such file"),
    "wrong suffix": (lambda d: _w(d, "log.txt", "x"),
                     "must be a .csv or .parquet file or an Inspect .eval log"),
    "Inspect .json log": (lambda d: _w(d, "log.json", "not json"), "convert them with"),
}


@pytest.mark.parametrize("kind", list(BAD_FILES))
def test_unreadable_logs_exit_2_with_a_message_and_write_nothing(tmp_path, kind):
    make, msg = BAD_FILES[kind]
    path = make(tmp_path)
    r = _cli([path, "--out", tmp_path / "out"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert msg in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


BAD_OPTIONS = [
    (["--seed", "-1"], "seed must be an integer in [0, 2**63)"),
    (["--n-resamples", "0"], "n_resamples must be an integer in [1, 10,000,000]"),
    (["--n-resamples", "-5"], "n_resamples must be an integer in [1, 10,000,000]"),
    (["--n-resamples", "100000000"], "n_resamples must be an integer in [1, 10,000,000]"),
    (["--simulate", "--n-sim", "0"], "--n-sim must lie in [1, 1e+14]"),
    (["--confidence", "1.5"], "confidence must lie in (0, 1)"),
    (["--confidence", "nan"], "confidence must lie in (0, 1)"),
    (["--mislabel", "0.5"], "mislabel rate must lie in [0, 0.5)"),
    (["--sample"], "give a log file or --sample, not both"),
    (["--n-resamples", "many"], "invalid int value"),
    (["--round", "0"], "must be final or a round number in [1, "),
    (["--sample", "nonesuch"], "invalid choice"),
]


@pytest.mark.parametrize("extra, msg", BAD_OPTIONS)
def test_bad_options_exit_2_before_reading_or_writing(tmp_path, extra, msg):
    r = _cli([_good_csv(tmp_path), "--out", tmp_path / "out", *extra], tmp_path)
    assert r.returncode == 2, r.stderr
    assert msg in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_an_out_path_that_is_a_file_or_a_foreign_store_is_refused(tmp_path):
    (tmp_path / "file").write_text("keep me")
    r = _cli([_good_csv(tmp_path), "--out", tmp_path / "file"], tmp_path)
    assert r.returncode == 2 and "is not a directory" in r.stderr
    (tmp_path / "o" / "estimates.zarr").mkdir(parents=True)
    (tmp_path / "o" / "estimates.zarr" / "mine.txt").write_text("keep me")
    r = _cli([_good_csv(tmp_path), "--out", tmp_path / "o"], tmp_path)
    assert r.returncode == 2 and "not an antiamp store" in r.stderr
    assert (tmp_path / "o" / "estimates.zarr" / "mine.txt").read_text() == "keep me"
    assert (tmp_path / "file").read_text() == "keep me"


# ------------------------------------------------------------------ the scalable estimators
def test_count_bootstrap_matches_scipy_row_bootstrap():
    """Resampling code counts (multinomial) is resampling rows: its percentile
    interval agrees with scipy.stats.bootstrap's on the same stratified sample to
    within the Monte Carlo error of the two."""
    from scipy import stats

    from antiamp.estimate import amp_of_codes, boot_interval, row_codes

    df = validate_log(records(LOGIT, 3000))
    d = df[df.protocol == "consult"]
    samples = [row_codes(g) for _, g in d.groupby("stratum", observed=True)]
    known = [s[s >= 4] for s in samples]
    _, lo, hi = boot_interval(known, amp_of_codes, 0.9, 20000, np.random.default_rng(0))

    def rows_amp(*smp, axis=-1):
        c = np.concatenate(smp, axis=axis)
        c = c % 8  # the y = omega bit is not read by Amp
        return np.sum(c == 7, axis=axis) / np.sum((c == 6) | (c == 7), axis=axis)

    ref = stats.bootstrap(known, rows_amp, n_resamples=20000, confidence_level=0.9,
                          method="percentile", vectorized=True,
                          random_state=np.random.default_rng(1)).confidence_interval
    width = ref.high - ref.low
    assert abs(lo - ref.low) < 0.05 * width and abs(hi - ref.high) < 0.05 * width, \
        (lo, hi, ref)


def test_aggregated_logistic_fit_equals_the_row_level_fit():
    """The fit on rows aggregated by (judge, evidence difference) gives the
    estimates and judge-clustered standard errors of statsmodels' row-level fit."""
    import statsmodels.api as sm

    from antiamp.estimate import logistic_fit

    df = validate_log(records(LOGIT, 4000).assign(
        judge_id=lambda d: np.random.default_rng(3).integers(0, 37, len(d))))
    got = logistic_fit(df)
    x = (df.e_P - df.e_A).to_numpy(float)
    y = (df.y == df.a).to_numpy(float)
    ref = sm.GLM(y, sm.add_constant(x), family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(df.judge_id)[0]})
    np.testing.assert_allclose([got["mu"], got["kappa"]], ref.params, rtol=1e-8)
    np.testing.assert_allclose([got["mu_se"], got["kappa_se"]], ref.bse, rtol=1e-8)


@pytest.mark.slow
def test_five_million_rows_stay_under_two_gigabytes(tmp_path):
    """The issue's target: a 5-million-row log estimated in bounded memory."""
    n = 5_000_000
    rng = np.random.default_rng(0)
    om = rng.integers(0, 2, n)
    a = np.where(rng.random(n) < 0.7, om, 1 - om)
    prot = np.where(rng.random(n) < 0.5, "consult", "debate")
    e_P = (rng.random(n) < np.where(a == om, 0.9, 0.3)).astype(int)
    e_A = np.where(prot == "debate", (rng.random(n) < np.where(a == om, 0.3, 0.9)), 0)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-(0.2 + 1.5 * (e_P - e_A)))), a, 1 - a)
    pd.DataFrame(dict(protocol=prot, a=a, y=y, e_P=e_P, e_A=e_A.astype(int), omega=om,
                      judge_id=rng.integers(0, 500, n))).to_csv(tmp_path / "big.csv", index=False)
    # VmHWM is this process's own peak (ru_maxrss would carry pytest's over exec).
    script = ("import sys\nfrom antiamp.estimate import main\n"
              "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    assert not e.code\n"
              "print('peak', [int(x.split()[1]) for x in open('/proc/self/status')"
              " if x.startswith('VmHWM')][0])\n")
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path / "big.csv"), "--out",
                        str(tmp_path / "o")], capture_output=True, text=True, timeout=limit(900))
    assert r.returncode == 0, r.stderr
    peak_kib = int(r.stdout.rsplit("peak", 1)[1])
    assert peak_kib < 2 * 1024 ** 2, peak_kib
    ds = xr.open_zarr(tmp_path / "o" / "estimates.zarr")
    assert abs(float(ds.kappa_tilde.sel(fit="pooled")) - 1.5) < 0.02


def test_each_fit_names_its_regressor_and_a_protocol_dummy_is_refused():
    """Graded scores on debate rows only: the debate fit uses v_P - v_A and says so;
    the pooled fit's x = e_P - e_A is 1 on every consultancy row and 0 on every debate
    row (a protocol dummy), so it is refused with a message, never fitted or simulated."""
    rng = np.random.default_rng(3)
    n = 400
    prot = np.where(np.arange(n) < n // 2, "consult", "debate")
    deb = prot == "debate"
    vP, vA = rng.normal(1.0, 1.0, n), rng.normal(1.0, 1.0, n)
    a, omega = rng.integers(0, 2, n), rng.integers(0, 2, n)
    pr = 1 / (1 + np.exp(-(0.2 + 1.2 * (vP - vA))))
    y = np.where(rng.random(n) < pr, a, 1 - a)
    # (no scores at all on the consultancy rows: a blank v_A alone is read as 0 there,
    # as a blank e_A is, and would not disable the graded fits)
    df = pd.DataFrame({"protocol": prot, "a": a, "y": y, "omega": omega, "e_P": 1,
                       "e_A": np.where(deb, 1.0, np.nan), "v_P": np.where(deb, vP, np.nan),
                       "v_A": np.where(deb, vA, np.nan), "judge_id": np.arange(n) % 20})
    est = estimate(validate_log(df), EstimateOptions(n_resamples=200))
    assert est.regressor.sel(fit="debate").item() == "v_P - v_A"
    assert est.regressor.sel(fit="pooled").item() == "e_P - e_A"
    assert np.isnan(est.kappa_tilde.sel(fit="pooled").item())
    assert "collinear with the protocol" in est.attrs["fit_notes"]
    k = est.sel(fit="debate")
    assert float(k.kappa_tilde_lo) <= 1.2 <= float(k.kappa_tilde_hi)
    from antiamp.estimate import format_report, simulate_fitted

    text = format_report(est, "log.csv")
    assert "debate   x = v_P - v_A" in text and "pooled   x = e_P - e_A" in text
    pred = simulate_fitted(est, n=20_000)
    assert not any("logit" in c for c in pred.columns)  # the refused fit is not simulated


def test_judge_probabilities_estimate_amp_and_calibration():
    """With p_y the judge's exact probability (the simulator's p_endorse), the mean
    p_y on wrong answers is Amp itself: its t interval covers the theory value at the
    nominal rate; Brier and log loss are the stated means, per protocol."""
    th = sim.theory(LOGIT)
    hits, reps = np.zeros(2), 30
    for seed in range(reps):
        df = records({**LOGIT, "run": {"seed": 500 + seed}}, 2000, n_judges=25)
        df["p_y"] = df["p_endorse"]
        df["stratum"] = np.where(df.index % 3 == 0, "hard", "easy")
        est = estimate(validate_log(df), EstimateOptions(n_resamples=100, seed=seed))
        for i, prot in enumerate(("consult", "debate")):
            r = est.sel(protocol=prot, stratum="all")
            hits[i] += float(r.amp_prob_lo) <= float(th.amp.values[i]) <= float(r.amp_prob_hi)
    assert (hits / reps >= 0.8).all(), hits / reps
    d = df[df.protocol == "debate"]
    right = (d.a == d.omega).to_numpy(float)
    r = est.sel(protocol="debate", stratum="all")
    assert float(r.brier) == pytest.approx(np.mean((d.p_y - right) ** 2), rel=1e-12)
    q = np.clip(np.where(right == 1, d.p_y, 1 - d.p_y), 1e-6, 1 - 1e-6)
    assert float(r.log_loss) == pytest.approx(-np.mean(np.log(q)), rel=1e-12)
    assert int(est.reliability_n.sel(protocol="debate").sum()) == len(d)


def test_cli_writes_the_calibration_figure(tmp_path):
    df = records(LOGIT, 400)
    df["p_y"] = df["p_endorse"]
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    exe = shutil.which("antiamp-estimate")
    cmd = [exe] if exe else [sys.executable, "-m", "antiamp.estimate"]
    r = subprocess.run(cmd + [str(path), "--out", str(tmp_path / "out"), "--n-resamples", "100"],
                       capture_output=True, text=True, timeout=limit(300))
    assert r.returncode == 0, r.stderr
    assert "judge probabilities p_y" in r.stdout
    assert (tmp_path / "out" / "calibration.png").exists()


def test_shipped_human_judges_reproduce_the_published_accuracies(tmp_path):
    """Michael et al. (2023), the rooms with human debaters and judges: judge accuracy
    84% in debate and 74% in consultancy; in consultancy 88% with an honest consultant
    (follow-when-correct) and 60% with a dishonest one (1 - Amp)."""
    from importlib.resources import files

    from antiamp.estimate import SAMPLES, load_log

    df = load_log(files("antiamp") / "data" / SAMPLES["human_judges"])
    est = estimate(df, EstimateOptions(n_resamples=200)).sel(stratum="all")
    c, d = est.sel(protocol="consult"), est.sel(protocol="debate")
    assert round(float(d.acc), 2) == 0.84 and round(float(c.acc), 2) == 0.74
    assert round(float(c.fwc), 2) == 0.88 and round(1 - float(c.amp), 2) == 0.60
    assert int(c.n_rows) == 96 and int(d.n_rows) == 154
    # the judges' probabilities: debate judges less misled and better calibrated
    assert float(d.amp_prob_hi) < float(c.amp_prob)
    assert float(d.brier) < float(c.brier)
    exe = shutil.which("antiamp-estimate")
    cmd = [exe] if exe else [sys.executable, "-m", "antiamp.estimate"]
    r = subprocess.run(cmd + ["--sample", "human_judges", "--out", str(tmp_path / "o"),
                              "--n-resamples", "100"], capture_output=True, text=True,
                       timeout=limit(300))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "o" / "calibration.png").exists()


def test_aliases_and_letter_answers_are_read_with_a_note():
    df = records(LOGIT, 600)
    plain = estimate(validate_log(df), EstimateOptions(n_resamples=100))
    alt = df.copy()
    alt["protocol"] = alt["protocol"].map({"consult": "Consultancy", "debate": "debate"})
    for col in ("a", "y", "omega"):
        alt[col] = alt[col].map({0: "A", 1: "b"})
    v = validate_log(alt)
    assert any("'consultancy' read as 'consult'" in n for n in v.attrs["notes"])
    assert any("column 'a': answers written as letters" in n for n in v.attrs["notes"])
    est = estimate(v, EstimateOptions(n_resamples=100))
    for k in ("amp", "acc", "fwc", "b_hat"):
        np.testing.assert_array_equal(est[k].values, plain[k].values)
    from antiamp.estimate import format_report

    assert "read: column 'protocol'" in format_report(est, "log.csv")
    # a letter outside A/B is still refused, naming the column and row
    bad = alt.copy()
    bad.loc[5, "y"] = "maybe"
    with pytest.raises(LogError, match="column 'y', row 5"):
        validate_log(bad)


def test_assigned_roles_give_the_same_debate_amp_whichever_debater_is_called_protagonist():
    """The shipped human-judge debates have assigned roles; calling debater A or B the
    protagonist changes the open-role Amp (the issue's 0.141 / 0.177) but not the
    role-symmetric one, which is the share of debates the judge gave to the wrong side."""
    from importlib.resources import files

    from antiamp.estimate import SAMPLES

    raw = pd.read_csv(files("antiamp") / "data" / SAMPLES["human_judges"]).drop(columns="role")
    deb = raw["protocol"] == "debate"
    swapped = raw.copy()
    swapped.loc[deb, "a"] = 1 - raw.loc[deb, "a"]
    for x, z in (("e_P", "e_A"), ("v_P", "v_A")):
        swapped.loc[deb, [x, z]] = raw.loc[deb, [z, x]].to_numpy()
    swapped.loc[deb, "p_y"] = 1 - raw.loc[deb, "p_y"]
    opts = EstimateOptions(n_resamples=300)
    open_a = estimate(validate_log(raw), opts).sel(stratum="all", protocol="debate")
    open_b = estimate(validate_log(swapped), opts).sel(stratum="all", protocol="debate")
    assert abs(float(open_a.amp) - float(open_b.amp)) > 0.02  # the labelling matters
    res = []
    for df in (raw, swapped):
        df = df.assign(role=np.where(df["protocol"] == "debate", "assigned", "open"))
        v = validate_log(df)
        assert any("assigned roles" in n for n in v.attrs["notes"])
        res.append(estimate(v, opts).sel(stratum="all"))
    for k in ("amp", "acc", "amp_prob", "brier"):
        assert float(res[0][k].sel(protocol="debate")) == pytest.approx(
            float(res[1][k].sel(protocol="debate")), abs=1e-12), k
    d = res[0].sel(protocol="debate")
    assert float(d.amp) == pytest.approx(1 - float(d.acc), abs=1e-12)
    assert np.isnan(float(d.b_hat)) and np.isnan(float(d.fwc))
    # the consultancy rows are untouched
    assert float(res[0].amp.sel(protocol="consult")) == pytest.approx(
        float(estimate(validate_log(raw), opts).sel(stratum="all", protocol="consult").amp))
    with pytest.raises(LogError, match="column 'role', row 3"):
        validate_log(raw.assign(role=np.where(raw.index == 3, "chosen", "open")))


def _rounds_log(seed=2, n=800):
    """Rounds 1..3 per instance: the round-r row is the simulated log of its own seed,
    so the final-round estimate must equal the estimate of the round-3 log alone."""
    parts = []
    for r in (1, 2, 3):
        d = records({**LOGIT, "run": {"seed": seed + r}}, n)
        parts.append(d.assign(round=r))
    return pd.concat(parts, ignore_index=True).sample(frac=1.0, random_state=0)


def test_rounds_final_by_default_and_amp_per_round():
    log = _rounds_log()
    opts = EstimateOptions(n_resamples=200)
    est = estimate(validate_log(log), opts)
    third = estimate(validate_log(log[log["round"] == 3].drop(columns="round")), opts)
    for k in ("amp", "acc", "fwc", "b_hat"):
        np.testing.assert_array_equal(est[k].values, third[k].values)
    first = estimate(validate_log(log), EstimateOptions(n_resamples=200, round=1))
    one = estimate(validate_log(log[log["round"] == 1].drop(columns="round")), opts)
    np.testing.assert_array_equal(first.amp.values, one.amp.values)
    # Amp after each round, by hand
    d = log[(log.protocol == "debate") & (log.a != log.omega) & (log["round"] == 2)]
    assert float(est.amp_round.sel(protocol="debate", round=2)) == pytest.approx(
        float((d.y == d.a).mean()), abs=1e-15)
    from antiamp.estimate import format_report

    text = format_report(est, "log.csv")
    assert "Amp after each round" in text and "every estimate reads round final" in text


@pytest.mark.parametrize("mutate,msg", [
    (lambda d: d.drop(columns="instance"), "column 'round' needs a column 'instance'"),
    (lambda d: d.assign(round=np.where(np.arange(len(d)) == 4, 0, d["round"])),
     "column 'round', row 4"),
    (lambda d: pd.concat([d, d.iloc[[7]]], ignore_index=True), "already has"),
])
def test_bad_rounds_name_the_column_and_row(mutate, msg):
    with pytest.raises(LogError, match=msg):
        validate_log(mutate(_rounds_log(n=50).reset_index(drop=True)))
    with pytest.raises(LogError, match="no row of the log has round 9"):
        estimate(validate_log(_rounds_log(n=50)), EstimateOptions(n_resamples=50, round=9))


def test_more_than_two_answers():
    """K = 4 answers: Amp = Pr(y = a | a != omega) and accuracy Pr(y = omega), where a
    judge who rejects a wrong answer may still pick another wrong one; by hand."""
    rng = np.random.default_rng(5)
    n = 3000
    omega = rng.integers(0, 4, n)
    a = np.where(rng.random(n) < 0.6, omega, (omega + rng.integers(1, 4, n)) % 4)
    follow = rng.random(n) < np.where(a == omega, 0.9, 0.4)
    other = (a + rng.integers(1, 4, n)) % 4
    y = np.where(follow, a, other)
    df = pd.DataFrame({"protocol": np.where(np.arange(n) % 2, "debate", "consult"), "a": a,
                       "y": y, "omega": omega, "e_P": rng.integers(0, 2, n),
                       "e_A": rng.integers(0, 2, n)})
    df.loc[df.protocol == "consult", "e_A"] = 0
    v = validate_log(df)
    assert v.attrs["K"] == 4 and any("4 answers" in t for t in v.attrs["notes"])
    est = estimate(v, EstimateOptions(n_resamples=300)).sel(stratum="all")
    for prot in ("consult", "debate"):
        d = df[df.protocol == prot]
        r = est.sel(protocol=prot)
        w = d.a != d.omega
        assert float(r.amp) == pytest.approx(float((d.y[w] == d.a[w]).mean()), abs=1e-15)
        assert float(r.acc) == pytest.approx(float((d.y == d.omega).mean()), abs=1e-15)
        assert float(r.fwc) == pytest.approx(float((d.y[~w] == d.a[~w]).mean()), abs=1e-15)
        assert float(r.acc_lo) < float(r.acc) < float(r.acc_hi)
    with pytest.raises(LogError, match="assumes two answers"):
        estimate(v, EstimateOptions(n_resamples=50, mislabel=0.05))
    with pytest.raises(LogError, match="only with two answers"):
        validate_log(df.assign(role="assigned"))
    letters = df.assign(a=df.a.map(dict(enumerate("ABCD"))), y=df.y.map(dict(enumerate("abcd"))))
    np.testing.assert_array_equal(validate_log(letters)["a"].to_numpy(), df.a.to_numpy())


def _known_amp_log(kind, n, rng, amp=0.3, fwc=0.85):
    """A log whose true Amp is ``amp``: K = 4 open roles, assigned debates (K = 2,
    debater A called the protagonist), or three rounds per instance (the final
    round's Amp is ``amp``; earlier rounds follow more often)."""
    K = 4 if kind == "k4" else 2
    omega = rng.integers(0, K, n)
    right = rng.random(n) < 0.6
    a = np.where(right, omega, (omega + rng.integers(1, K, n)) % K)
    if kind == "assigned":  # the judge sides with the wrong debater w.p. amp
        wrong_wins = rng.random(n) < amp
        a = rng.integers(0, 2, n)  # debater A's assigned answer
        y = np.where(wrong_wins, 1 - omega, omega)
        return pd.DataFrame({"protocol": "debate", "a": a, "y": y, "omega": omega, "e_P": 1,
                             "e_A": 1, "role": "assigned", "judge_id": np.arange(n) % 20})
    if kind == "rounds":
        rows = []
        for r, amp_r in ((1, 0.6), (2, 0.45), (3, amp)):
            follow = rng.random(n) < np.where(right, fwc, amp_r)
            y = np.where(follow, a, 1 - a)
            rows.append(pd.DataFrame({"protocol": "consult", "a": a, "y": y, "omega": omega,
                                      "e_P": 1, "instance": np.arange(n), "round": r}))
        return pd.concat(rows, ignore_index=True)
    follow = rng.random(n) < np.where(right, fwc, amp)
    y = np.where(follow, a, (a + rng.integers(1, K, n)) % K)
    return pd.DataFrame({"protocol": "consult", "a": a, "y": y, "omega": omega, "e_P": 1,
                         "judge_id": np.arange(n) % 20})


@pytest.mark.parametrize("kind", ["k4", "assigned", "rounds"])
def test_amp_intervals_cover_with_k_answers_assigned_roles_and_rounds(kind):
    """The Amp interval covers the true Amp (0.3) in 40 replications at least 34 times
    (Pr(Binomial(40, 0.95) <= 33) = 0.014) for K = 4 answers, assigned debate roles
    read role-symmetrically, and the final round of three."""
    rng = np.random.default_rng({"k4": 1, "assigned": 2, "rounds": 3}[kind])
    hits = 0
    for _ in range(40):
        prot = "debate" if kind == "assigned" else "consult"
        est = estimate(validate_log(_known_amp_log(kind, 600, rng)),
                       EstimateOptions(n_resamples=400, seed=int(rng.integers(1 << 30))))
        r = est.sel(stratum="all", protocol=prot)
        hits += float(r.amp_lo) <= 0.3 <= float(r.amp_hi)
    assert hits >= 34, hits


def test_graded_evidence_without_a_threshold():
    """rho_graded = wrong sides' mean score / right sides': with 0/1 scores and right
    sides that always show evidence it is rho_eq exactly; with counts (Poisson 3 on
    right sides, 1.2 on wrong ones, so 0.4) its interval covers 0.4 in at least 68
    of 80 cases (40 replications x two protocols), judges clustered."""
    rng = np.random.default_rng(8)
    n = 2000
    right = rng.random(n) < 0.6
    omega = rng.integers(0, 2, n)
    a = np.where(right, omega, 1 - omega)
    eP = np.where(right | (rng.random(n) < 0.3), 1, 0)
    eA = np.where(~right | (rng.random(n) < 0.3), 1, 0)
    deb = np.arange(n) % 2 == 1
    df = pd.DataFrame({"protocol": np.where(deb, "debate", "consult"), "a": a,
                       "y": rng.integers(0, 2, n), "omega": omega, "e_P": eP,
                       "e_A": np.where(deb, eA, 0), "v_P": eP.astype(float),
                       "v_A": np.where(deb, eA, 0.0)})
    est = estimate(validate_log(df), EstimateOptions(n_resamples=100)).sel(stratum="all")
    r = est.sel(protocol="consult")
    assert float(r.rho_graded) == pytest.approx(float(r.rho_eq_P), abs=1e-14)
    d = df[deb]
    wrong_sides = np.concatenate([d.e_P[d.a != d.omega], d.e_A[d.a == d.omega]])
    assert float(est.rho_graded.sel(protocol="debate")) == pytest.approx(wrong_sides.mean(),
                                                                         abs=1e-14)
    hits = 0
    for rep in range(40):
        right = rng.random(n) < 0.6
        vP = rng.poisson(np.where(right, 3.0, 1.2))
        vA = rng.poisson(np.where(right, 1.2, 3.0))
        g = df.assign(a=np.where(right, omega, 1 - omega), v_P=vP.astype(float),
                      v_A=np.where(deb, vA, 0.0), judge_id=rng.integers(0, 25, n))
        e = estimate(validate_log(g), EstimateOptions(n_resamples=50)).sel(stratum="all")
        for prot in ("consult", "debate"):
            x = e.sel(protocol=prot)
            hits += float(x.rho_graded_lo) <= 0.4 <= float(x.rho_graded_hi)
    assert hits >= 2 * 34, hits


@pytest.mark.slow
def test_five_million_rows_with_probabilities_roles_and_simulate_stay_under_two_gigabytes(
        tmp_path):
    """A 5-million-row log with p_y and assigned debate roles, drawn from the structural
    judge, estimated and checked (--simulate at 10^6 instances) under 2 GB; the check
    calls none of the label metrics a poor fit of the model that drew the log."""
    from antiamp.estimation import structural as st

    st.simulate_log(5_000_000, seed=3, n_judges=500).to_csv(tmp_path / "big.csv", index=False)
    script = ("import sys\nfrom antiamp.estimate import main\n"
              "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    assert not e.code\n"
              "print('peak', [int(x.split()[1]) for x in open('/proc/self/status')"
              " if x.startswith('VmHWM')][0])\n")
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path / "big.csv"), "--simulate",
                        "--n-sim", "1000000", "--n-resamples", "500", "--out",
                        str(tmp_path / "o")], capture_output=True, text=True, timeout=limit(1800))
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.rsplit("peak", 1)[1]) < 2 * 1024 ** 2
    assert "POOR FIT" not in r.stdout
