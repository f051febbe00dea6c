"""The estimators from Python on a researcher's own logs: a DataFrame straight from
pandas, a judge column with gaps, infinite scores, one judge, shuffled rows and rates
on which every row agrees.  Each gives a fit with its standard errors (or says why
there are none) or a LogError naming the column and the row; never a traceback."""

from importlib.resources import files

import numpy as np
import pandas as pd
import pytest
from scipy.special import logit

from antiamp.estimate import EstimateOptions, LogError, estimate, load_log, validate_log
from antiamp.estimation.logfit import logistic_fit
from antiamp.estimation.logstats import wilson
from antiamp.estimation.field_metrics import field_metrics
from cli_runner import run_command

OPTS = EstimateOptions(n_resamples=200, seed=5)


@pytest.fixture(scope="module")
def sample():
    """The shipped simulated log as pandas reads it (no checks, no defaults)."""
    return pd.read_csv(files("antiamp.data") / "sample_log.csv")


def test_a_frame_of_ones_own_is_checked_and_estimated(sample):
    raw = sample.drop(columns=["stratum", "judge_id"]).groupby("protocol").head(200).copy()
    raw["a"] = raw["a"].map({0: "A", 1: "B"})  # letters, as a spreadsheet would have them
    before = raw.copy()
    a = estimate(raw, OPTS)
    pd.testing.assert_frame_equal(raw, before)  # the caller's frame is left as it was
    b = estimate(validate_log(raw), OPTS)
    for v in ("amp", "amp_lo", "amp_hi", "acc", "fwc", "mu_tilde", "mu_tilde_se"):
        np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=v)
    assert "letters" in a.attrs["log_notes"]
    assert set(field_metrics(raw).protocol) == {"consult", "debate"}
    bad = raw.assign(e_P="yes")
    with pytest.raises(LogError, match=r"column 'e_P', row 0: value 'yes' is not 0 or 1"):
        estimate(bad, OPTS)
    with pytest.raises(LogError, match="column 'e_P', row 0"):
        field_metrics(bad)


@pytest.mark.parametrize("where", ["every", "some"])
def test_a_missing_judge_is_refused_naming_the_row(sample, where):
    d = sample.head(300).copy()
    d["judge_id"] = d["judge_id"].astype(object)
    d.loc[d.index[2] if where == "some" else d.index, "judge_id"] = None
    with pytest.raises(LogError, match=r"column 'judge_id', row %d: value is missing"
                       % (2 if where == "some" else 0)):
        validate_log(d)


def test_an_infinite_graded_score_is_refused(sample):
    d = sample.head(50).assign(v_P=1.0, v_A=0.0)
    d.loc[d.index[7], "v_P"] = np.inf
    with pytest.raises(LogError, match=r"column 'v_P', row 7: value inf is not a finite"):
        validate_log(d)


def test_one_judge_gives_the_estimates_and_says_why_there_are_no_standard_errors(sample):
    """One judge: the consultancy fit is saturated (binary evidence), so its estimates
    are the log-odds of the two observed endorsement rates (closed form); a single
    cluster gives no judge-clustered standard error, which is said."""
    d = validate_log(sample.assign(judge_id=1))
    c = d[d["protocol"] == "consult"]
    f = logistic_fit(c)
    x, e = (c["e_P"] - c["e_A"]).to_numpy(), (c["y"] == c["a"]).to_numpy()
    mu, mu_kappa = logit(e[x == 0].mean()), logit(e[x == 1].mean())
    assert f["mu"] == pytest.approx(mu, rel=1e-8)
    assert f["kappa"] == pytest.approx(mu_kappa - mu, rel=1e-8)
    assert np.isnan(f["mu_se"]) and "(1 judge)" in f["note"]
    assert "separation" not in f["note"]


def test_the_logistic_fit_does_not_depend_on_the_order_of_the_rows(sample):
    d = validate_log(sample)
    shuffled = validate_log(sample.sample(frac=1, random_state=4))
    for prot in ("consult", "debate"):
        a = logistic_fit(d[d["protocol"] == prot])
        b = logistic_fit(shuffled[shuffled["protocol"] == prot])
        for k in ("mu", "mu_se", "kappa", "kappa_se"):
            assert a[k] == b[k], (prot, k)


def test_a_wilson_interval_holds_its_estimate():
    for n in range(1, 300):
        for k in (0, n):
            lo, hi = wilson(k, n, 0.95)
            assert lo <= k / n <= hi, (k, n, lo, hi)


def test_a_small_log_whose_rates_all_agree_is_reported_and_drawn(sample, tmp_path):
    """30 rows: debate accuracy 10 of 10; its interval holds 1 and the figure is drawn."""
    small = sample.groupby("protocol").head(15)
    small.to_csv(tmp_path / "small.csv", index=False)
    ds = estimate(load_log(tmp_path / "small.csv"), OPTS)
    for m in ("amp", "acc", "fwc"):
        ok = np.isfinite(ds[m].values)
        assert np.all(ds[f"{m}_lo"].values[ok] <= ds[m].values[ok]), m
        assert np.all(ds[m].values[ok] <= ds[f"{m}_hi"].values[ok]), m
    r = run_command("antiamp-estimate", [tmp_path / "small.csv", "--n-resamples", "200",
                                         "--out", tmp_path / "o"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "o" / "estimates.png").is_file()


@pytest.mark.parametrize("change", ["bool evidence", "integer scores"])
def test_assigned_debates_read_columns_of_any_numeric_type(tmp_path, change):
    """Assigned debates swap the two sides' columns; a Parquet or pandas log may hold
    them in two types (bool and int, int and float), which pandas would not swap."""
    raw = pd.read_csv(files("antiamp.data") / "michael2023_human_judges.csv")
    raw["v_P"] = raw["v_P"].round()  # whole scores, in both logs
    ref = estimate(raw, OPTS)
    d = (raw.assign(e_P=raw["e_P"].astype(bool)) if change == "bool evidence"
         else raw.assign(v_P=raw["v_P"].astype(int)))
    d.to_parquet(tmp_path / "log.parquet")
    got = estimate(load_log(tmp_path / "log.parquet"), OPTS)
    for v in ("amp", "amp_lo", "rho_eq_A", "rho_graded", "mu_tilde"):
        np.testing.assert_array_equal(got[v].values, ref[v].values, err_msg=v)


def test_a_semicolon_separated_log_is_named_as_such(sample, tmp_path):
    sample.head(20).to_csv(tmp_path / "log.csv", sep=";", index=False)
    with pytest.raises(LogError, match=r"missing required column.*the header is one column.*"
                                       r"separated by commas, not ';'"):
        load_log(tmp_path / "log.csv")


def test_a_log_too_small_for_the_structural_fit_says_why_for_each_reading(sample):
    from antiamp.estimation.predictive import CheckError, fit_for

    two = validate_log(sample.iloc[[0, 3000]])
    # each reading's own reason: the identification rule (two rows identify no
    # combination of mu_consult and d) or, where a reading fits, a fold of judges left out
    with pytest.raises(CheckError, match=r"failed for every reading of the log \(\w+(, fitted "
                                         r"with a fold of judges left out)?: .+\)"):
        fit_for(two, "auto", 0)


def test_the_seed_judges_say_which_parameters_the_log_does_not_identify():
    """The shipped human-judge log: debates with assigned roles (no tie bias b) and
    consultants who always quote (no endorsement rate without evidence)."""
    from antiamp.estimate import fitted_config, simulate_fitted

    ds = estimate(load_log(files("antiamp.data") / "michael2023_human_judges.csv"), OPTS)
    notes = []
    cfg = fitted_config(ds, notes)
    assert cfg["judge"]["b"] == 0.5 and cfg["protocol"]["consult_default"] == 0.0
    assert any(n.startswith("judge.b is not identified") for n in notes), notes
    assert any(n.startswith("protocol.consult_default is not identified") for n in notes)
    assert not any(n.startswith("model.rho") for n in notes)
    assert simulate_fitted(ds, 1000, 1).attrs["notes"] == notes


@pytest.mark.parametrize("k0,n0,k1,n1", [(1, 1, 13, 14), (0, 3, 5, 5), (2, 2, 9, 12)])
def test_firths_fit_of_a_binary_regressor_is_its_closed_form(k0, n0, k1, n1):
    """With x in {0, 1} the model is saturated and Firth's estimate is the log-odds of
    (k + 1/2) / (n + 1) at each x (Jeffreys' half-count); the fit of 1 of 1 and 13 of 14
    used to jump between two points and give NaN."""
    from antiamp.estimation.logfit import firth_fit

    x = np.r_[np.zeros(n0), np.ones(n1)]
    y = np.r_[np.arange(n0) < k0, np.arange(n1) < k1].astype(float)
    f = firth_fit(np.column_stack([np.ones_like(x), x]), y, np.arange(len(x)))
    mu = logit((k0 + 0.5) / (n0 + 1))
    assert f["firth_mu"] == pytest.approx(mu, abs=1e-9)
    assert f["firth_kappa"] == pytest.approx(logit((k1 + 0.5) / (n1 + 1)) - mu, abs=1e-9)
    assert np.isfinite(f["firth_mu_se"]) and np.isfinite(f["firth_kappa_se"])


def test_a_difference_on_which_every_row_agrees_gets_newcombes_interval(sample):
    """2 of 2 wrong consultants endorsed, 0 of 2 wrong protagonists in debate: every
    resample gives a difference of 1, so the bootstrap interval has no width; Newcombe's
    hybrid score interval, written out from the two Wilson intervals, is reported."""
    d = estimate(sample.groupby("protocol").head(15), OPTS).sel(stratum="all")
    assert float(d.amp_diff) == 1.0
    (l1, u1), (l2, u2) = wilson(2, 2, 0.95), wilson(0, 2, 0.95)
    p1, p2 = 1.0, 0.0
    assert float(d.amp_diff_lo) == pytest.approx(1 - np.hypot(p1 - l1, u2 - p2), rel=1e-12)
    assert float(d.amp_diff_hi) == pytest.approx(1 + np.hypot(u1 - p1, p2 - l2), rel=1e-12)
    assert "Newcombe" in str(d.amp_diff_notes.values) and np.isnan(float(d.p_value))


def test_a_split_tie_bias_that_is_not_defined_says_why(sample):
    d = estimate(sample.assign(label_blind=1), OPTS).sel(stratum="all", protocol="debate")
    assert np.isfinite(float(d.b_hat_blind)) and np.isnan(float(d.b_hat_labelled))
    assert "b_hat_labelled: no tie (e_P = e_A) with label_blind = 0" in str(d.notes.values)
    assert "b_hat_blind:" not in str(d.notes.values)


@pytest.mark.parametrize("dtype", ["uint8", "bool", "int8"])
def test_evidence_and_answers_of_any_integer_type_give_the_same_fit(sample, dtype):
    """e_P - e_A of unsigned 0 and 1 wraps to 255; int8 graded scores of 100 and -100
    would wrap too.  Every integer type reads as the numbers it holds."""
    ref = estimate(sample, OPTS)
    d = sample.assign(**{c: sample[c].astype(dtype) for c in ("e_P", "e_A", "a", "y")})
    got = estimate(d, OPTS)
    for v in ("amp", "mu_tilde", "mu_tilde_se", "kappa_tilde", "kappa_tilde_se"):
        np.testing.assert_array_equal(got[v].values, ref[v].values, err_msg=v)
    g = sample.head(400).assign(v_P=np.where(sample.head(400)["e_P"] == 1, 100, -100),
                                v_A=np.where(sample.head(400)["e_A"] == 1, 100, -100))
    small = g.assign(v_P=g["v_P"].astype("int8"), v_A=g["v_A"].astype("int8"))
    a, b = logistic_fit(validate_log(g)), logistic_fit(validate_log(small))
    assert (a["mu"], a["kappa"]) == (b["mu"], b["kappa"])


def test_an_asd_on_which_every_agent_agrees_says_its_interval_has_no_width(sample):
    from antiamp.estimation.field_metrics import format_field_metrics

    small = sample.groupby("protocol").head(15)  # debate: every agent's verdict agrees
    tab = field_metrics(small)
    row = tab[(tab.protocol == "debate") & (tab.metric == "asd")].iloc[0]
    assert row.se == 0 and row.lo == row.hi
    line = [ln for ln in format_field_metrics(tab).splitlines() if ln.lstrip().startswith("debate")]
    assert "interval has no width" in line[0], line
