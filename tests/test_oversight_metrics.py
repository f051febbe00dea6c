"""The field's metrics beside Amp: the judge's ROC/AUC against scikit-learn's, the
Agent Score Difference against its closed forms in Amp and fwc."""

import math

import numpy as np
import pandas as pd
import pytest

from antiamp.estimate import EstimateOptions, estimate, validate_log
from antiamp.estimation.field_metrics import asd, field_metrics
from antiamp.oversight_metrics import roc_auc, roc_curve
from cli_runner import run_command

metrics = pytest.importorskip("sklearn.metrics")


def _log(n=3000, seed=0, role="open", p_y=True):
    rng = np.random.default_rng(seed)
    om = rng.integers(0, 2, n)
    right = rng.random(n) < 0.7
    a = np.where(right, om, 1 - om)
    e = (rng.random(n) < np.where(right, 0.8, 0.3)).astype(int)
    pe = np.where(e == 1, 0.85, 0.25)
    y = np.where(rng.random(n) < pe, a, 1 - a)
    df = pd.DataFrame({"protocol": np.where(np.arange(n) % 2, "debate", "consult"),
                       "a": a, "y": y, "omega": om, "e_P": e, "e_A": 1 - e, "role": role})
    if p_y:  # a noisy probability, rounded so that ties occur
        df["p_y"] = np.clip(np.round(pe + rng.normal(0, 0.15, n), 2), 0, 1)
    return df


def test_auc_and_roc_equal_scikit_learns():
    rng = np.random.default_rng(1)
    for n1, n0 in ((50, 70), (400, 30), (3, 2)):
        x = np.r_[rng.normal(1, 1, n1), rng.normal(0, 1, n0)].round(1)  # with ties
        y = np.r_[np.ones(n1), np.zeros(n0)]
        auc, se = roc_auc(x, y)
        assert auc == pytest.approx(metrics.roc_auc_score(y, x), rel=1e-12)
        fpr, tpr, _ = metrics.roc_curve(y, x, drop_intermediate=False)
        f, t = roc_curve(x, y)
        np.testing.assert_allclose(f, fpr, rtol=0, atol=1e-15)
        np.testing.assert_allclose(t, tpr, rtol=0, atol=1e-15)
        assert se > 0


def test_delong_se_matches_the_spread_of_auc_over_replications():
    # DeLong's variance against the AUC's variance over 400 fresh samples (no ties;
    # classes of unequal sizes and spreads, so that each term of the variance counts).
    rng = np.random.default_rng(2)
    aucs, ses = [], []
    for _ in range(400):
        x = np.r_[rng.normal(1.0, 0.7, 40), rng.normal(0, 1.2, 200)]
        a, s = roc_auc(x, np.r_[np.ones(40), np.zeros(200)])
        aucs.append(a)
        ses.append(s)
    # sd of 400 draws: relative error about 1/sqrt(800) = 3.5%; 15% is 4 sd
    assert np.std(aucs, ddof=1) == pytest.approx(np.mean(ses), rel=0.15)


def test_auc_of_a_log_equals_scikit_learns_on_the_same_rows():
    df = validate_log(_log())
    tab = field_metrics(df).set_index(["protocol", "metric"])
    for prot in ("consult", "debate"):
        d = df[df.protocol == prot]
        want = metrics.roc_auc_score((d.a == d.omega).astype(int), d.p_y)
        assert tab.loc[(prot, "auc"), "value"] == pytest.approx(want, rel=1e-12)


def test_asd_is_its_closed_form_in_amp_and_fwc():
    df = validate_log(_log())
    ds = estimate(df, EstimateOptions(n_resamples=10))
    for prot in ("consult", "debate"):
        r = ds.sel(protocol=prot, stratum="all")
        d = df[df.protocol == prot]
        out = asd(d, payoffs=(3.0, -1.0))
        amp, fwc = float(r.amp), float(r.fwc)
        assert out["asd"][0] == pytest.approx(4.0 * (fwc - amp), rel=1e-12)
        nr, nw = int((d.a == d.omega).sum()), int((d.a != d.omega).sum())
        N = nr + nw
        se = math.sqrt(N / (N - 1) * (fwc * (1 - fwc) / nr + amp * (1 - amp) / nw))
        assert out["asd"][1] == pytest.approx(4.0 * se, rel=1e-12)
        right = d.a == d.omega
        assert out["asd_prob"][0] == pytest.approx(d.p_y[right].mean() - d.p_y[~right].mean(),
                                                   rel=1e-12)


def test_asd_of_assigned_debates_is_one_minus_twice_amp():
    df = validate_log(_log(role="assigned"))
    ds = estimate(df, EstimateOptions(n_resamples=10))
    d = df[df.protocol == "debate"]
    amp = float(ds.amp.sel(protocol="debate", stratum="all"))
    v, se, n_t, n_d = asd(d)["asd"]
    assert v == pytest.approx(1 - 2 * amp, rel=1e-12) and n_t == n_d == len(d)
    n = len(d)
    assert se == pytest.approx(2 * math.sqrt(n / (n - 1) * amp * (1 - amp) / n), rel=1e-12)


def test_the_cli_prints_the_field_metrics_and_draws_them(tmp_path):
    path = tmp_path / "log.csv"
    _log(400).to_csv(path, index=False)
    r = run_command("antiamp-estimate", [path, "--out", tmp_path / "o", "--n-resamples", "50"],
                    tmp_path)
    assert r.returncode == 0, r.stderr
    assert "judge AUC (p_y vs truth)" in r.stdout and "ASD (verdict reward)" in r.stdout
    assert (tmp_path / "o" / "field_metrics.png").stat().st_size > 0


def test_intervals_stay_within_each_metrics_range():
    """A 60-row log whose truthful protagonists always win and whose deceptive ones
    win 1 in 3: ASD (verdict) 0.667 with a normal interval reaching past 1 is clipped
    at 1, the metric's largest value (it printed [0.1241, 1.0092] and the bar crossed
    1); the clipped side only."""
    from antiamp.estimation.field_metrics import format_field_metrics
    from antiamp.oversight_metrics import metric_range

    n = 60
    om = np.zeros(n, int)
    right = np.ones(n, bool)
    right[:6] = False  # three deceptive protagonists per protocol
    a = np.where(right, om, 1 - om)
    y = a.copy()
    y[2:6] = 1 - a[2:6]  # one of them wins in each protocol
    df = pd.DataFrame({"protocol": np.where(np.arange(n) % 2, "debate", "consult"), "a": a,
                       "y": y, "omega": om, "e_P": 1, "e_A": 0, "role": "open"})
    tab = field_metrics(df)
    r = tab[(tab.protocol == "consult") & (tab.metric == "asd")].iloc[0]
    assert r.value == pytest.approx(2 / 3)
    assert r.value + 1.959964 * r.se > 1  # the normal interval would cross 1
    assert r.hi == 1.0 and r.lo == pytest.approx(r.value - 1.959964 * r.se, rel=1e-6)
    for _, r in tab.dropna().iterrows():
        lo, hi = metric_range(r.metric)
        assert lo <= r.lo <= r.value <= r.hi <= hi
    assert "clipped to each metric's range" in format_field_metrics(tab)
