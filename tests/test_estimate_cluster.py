"""The judge-cluster bootstrap of antiamp-estimate (``--cluster judge``): its spread
against logs with judges drawn afresh, its exact moments, the row bootstrap left as it
was, and its refusals."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import expit

from antiamp.estimate import (LogError, EstimateOptions, estimate, main, validate_log)
from antiamp.logstats import (N_CODES, amp_of_codes, judge_code_table, percentile_interval,
                              resampled_counts, resampled_judge_counts)

Z = stats.norm.ppf(0.975)


def judged_log(seed, n=2000, J=12, sd=1.5, judges=None):
    """A two-protocol log whose judges lean differently (log-odds SD ``sd``); each
    call draws its judges afresh unless ``judges`` (their leans) is given."""
    r = np.random.default_rng(seed)
    u = r.normal(0, sd, J) if judges is None else judges
    j = r.integers(0, len(u), n)
    deb = r.random(n) < 0.5
    om = r.integers(0, 2, n)
    right = r.random(n) < 0.6
    a = np.where(right, om, 1 - om)
    eP = (r.random(n) < np.where(right, 0.9, 0.3)).astype(int)
    eA = np.where(deb, (r.random(n) < np.where(right, 0.3, 0.9)).astype(int), 0)
    y = np.where(r.random(n) < expit(0.3 + u[j] + 1.5 * (eP - eA)), a, 1 - a)
    return pd.DataFrame({"protocol": np.where(deb, "debate", "consult"), "a": a, "y": y,
                         "omega": om, "e_P": eP, "e_A": eA, "judge_id": j})


def _se(ds, name, **sel):
    """A percentile interval's width over 2 z: its standard error under normality."""
    r = ds.sel(stratum="all", **sel)
    return float(r[f"{name}_hi"] - r[f"{name}_lo"]) / (2 * Z)


def test_judge_bootstrap_se_matches_the_spread_over_fresh_judges():
    """Over L logs, each with J judges drawn afresh, the spread of Amp is the standard
    error a log should report; the judge bootstrap's matches it, the row bootstrap's
    (these judges held fixed) is far too small on the same logs."""
    L, J = 40, 12
    amp, se = [], {"rows": [], "judge": []}
    for s in range(L):
        df = validate_log(judged_log(s, J=J))
        for c in se:
            ds = estimate(df, EstimateOptions(n_resamples=400, seed=s, cluster=c))
            se[c].append(_se(ds, "amp", protocol="consult"))
        amp.append(float(ds.amp.sel(stratum="all", protocol="consult")))
    spread = np.std(amp, ddof=1)
    # (L - 1) s^2 / sigma^2 is chi-square with L - 1 df: the sample SD over L logs lies
    # within these factors of the true one with probability 0.999; the bootstrap over
    # J clusters estimates a variance (J - 1) / J of the true one (plug-in), so the
    # upper factor is widened by sqrt(J / (J - 1)).
    lo = np.sqrt(stats.chi2.ppf(0.0005, L - 1) / (L - 1))
    hi = np.sqrt(stats.chi2.ppf(0.9995, L - 1) / (L - 1)) * np.sqrt(J / (J - 1))
    ratio = {c: spread / np.mean(v) for c, v in se.items()}
    assert lo < ratio["judge"] < hi, (ratio, lo, hi)
    assert ratio["rows"] > 1.5 * hi, (ratio, lo, hi)


def test_judge_bootstrap_counts_have_the_exact_moments():
    """w @ T with w ~ Multinomial(J, 1/J) has mean 1'T and covariance T1'(I - 11'/J)T2
    between two tables of the same judges: the second moments of the resampled counts
    (each table's variance and the pairing across tables) within Monte Carlo error."""
    r = np.random.default_rng(5)
    J, B = 7, 40_000
    T1 = r.integers(0, 9, (J, N_CODES)) * (r.random((J, N_CODES)) < 0.5)
    T2 = r.integers(0, 9, (J, N_CODES)) * (r.random((J, N_CODES)) < 0.5)
    c1, c2 = resampled_judge_counts([T1, T2], B, np.random.default_rng(6))
    C = np.eye(J) - 1.0 / J
    for a, b, Ta, Tb in ((c1, c1, T1, T1), (c2, c2, T2, T2), (c1, c2, T1, T2)):
        exact = Ta.T @ C @ Tb
        got = np.cov(a.T, b.T)[:N_CODES, N_CODES:]
        # the sample covariance's SE: sqrt((var_a var_b + cov^2) / B) (normal counts)
        va, vb = np.diag(Ta.T @ C @ Ta), np.diag(Tb.T @ C @ Tb)
        se = np.sqrt((np.outer(va, vb) + exact ** 2) / B)
        assert np.all(np.abs(got - exact) <= 5 * se + 1e-12), np.max(np.abs(got - exact) / (se + 1e-12))
    for a, T in ((c1, T1), (c2, T2)):
        sd = np.sqrt(np.diag(T.T @ C @ T))
        assert np.all(np.abs(a.mean(axis=0) - T.sum(axis=0)) <= 5 * sd / np.sqrt(B) + 1e-12)
    # the pairing: the same judges in both tables (a row bootstrap's protocols are
    # independent, cross-covariance 0; the exact one here is far from it)
    assert np.abs(T1.T @ C @ T2).max() > 50 * np.sqrt(np.outer(np.diag(T1.T @ C @ T1), np.diag(T2.T @ C @ T2)) / B).max()


def test_one_row_per_judge_is_the_row_bootstrap():
    """With one row per judge, drawing judges is drawing rows: the counts are
    Multinomial(n, row shares) in both, so the quantiles of Amp over many resamples
    agree within Monte Carlo error (and the moments are the multinomial's)."""
    r = np.random.default_rng(2)
    n, B = 60, 40_000
    codes = r.choice([4, 5, 6, 7, 12, 13], size=n, p=[0.1, 0.3, 0.3, 0.2, 0.05, 0.05])
    T = judge_code_table(codes, np.arange(n), n)
    cj = resampled_judge_counts([T], B, np.random.default_rng(3))[0]
    cr = resampled_counts([np.bincount(codes, minlength=N_CODES)], B, np.random.default_rng(4))
    p = np.bincount(codes, minlength=N_CODES) / n
    exact = n * (np.diag(p) - np.outer(p, p))
    se = np.sqrt((np.outer(np.diag(exact), np.diag(exact)) + exact ** 2) / B)
    for c in (cj, cr):
        assert np.all(np.abs(np.cov(c.T) - exact) <= 5 * se + 1e-12)
    aj, ar = amp_of_codes(cj), amp_of_codes(cr)
    # the SE of a sample q-quantile's difference between two independent samples:
    # sqrt(2 q (1 - q) / B) / density; the density from the resamples themselves
    for q in (0.05, 0.25, 0.5, 0.75, 0.95):
        x = np.quantile(ar, q)
        dens = np.mean(np.abs(ar - x) < 0.02) / 0.04
        tol = 5 * np.sqrt(2 * q * (1 - q) / B) / dens + 1 / n  # (a lattice of step ~1/n)
        assert abs(np.quantile(aj, q) - x) <= tol, (q, np.quantile(aj, q), x)
    assert percentile_interval(aj, 0.9) != (np.nan, np.nan)


def test_without_cluster_the_row_bootstrap_draws_as_before():
    """The default is the row bootstrap, drawing the same numbers: its Amp interval is
    the percentile interval of Multinomial(n, code shares) draws over the 16 codes
    (8 right + 4 known + 2 wrong + endorse) taken in the order of (known, wrong,
    endorse) first and right second, from a generator seeded with --seed."""
    df = judged_log(1, n=300)
    df = df[df["protocol"] == "consult"].reset_index(drop=True)
    default = estimate(df, EstimateOptions(n_resamples=500, seed=11))
    rows = estimate(df, EstimateOptions(n_resamples=500, seed=11, cluster="rows"))
    assert default.identical(rows)
    assert "bootstrap" not in default.attrs and "n_judges" not in default.attrs
    wrong = (df["a"] != df["omega"]).to_numpy()
    right = (df["y"] == df["omega"]).to_numpy()
    code = 8 * right + 4 + 2 * wrong + (df["y"] == df["a"]).to_numpy()  # truths known
    order = [0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15]
    k = np.bincount(code, minlength=16)[order]
    draws = np.random.default_rng(11).multinomial(len(df), k / len(df), size=500)
    endorse_wrong = draws[:, order.index(7)] + draws[:, order.index(15)]
    reject_wrong = draws[:, order.index(6)] + draws[:, order.index(14)]
    by_hand = percentile_interval(endorse_wrong / (endorse_wrong + reject_wrong), 0.95)
    r = default.sel(stratum="all", protocol="consult")
    assert (float(r.amp_lo), float(r.amp_hi)) == by_hand
    judge = estimate(df, EstimateOptions(n_resamples=500, seed=11, cluster="judge"))
    assert judge.identical(estimate(df, EstimateOptions(n_resamples=500, seed=11),
                                    cluster="judge"))
    rj = judge.sel(stratum="all", protocol="consult")
    assert float(rj.amp) == float(r.amp)  # the estimates are the same; the intervals not
    assert (float(rj.amp_lo), float(rj.amp_hi)) != by_hand


def test_the_store_and_report_say_which_bootstrap(tmp_path, capsys):
    df = judged_log(3, n=400, J=9)
    ds = estimate(df, EstimateOptions(n_resamples=200, cluster="judge"))
    assert ds.attrs["bootstrap"] == "judges" and ds.attrs["n_judges"] == 9
    assert "judge-cluster bootstrap (9 judges" in ds.amp_lo.attrs["long_name"]
    assert "paired judge-cluster bootstrap" in ds.amp_diff_hi.attrs["long_name"]
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    main([str(path), "--cluster", "judge", "--n-resamples", "200", "--out",
          str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert "judge-cluster bootstrap intervals (9 judges resampled" in out
    main([str(path), "--n-resamples", "200", "--out", str(tmp_path / "o2")])
    assert "judge-cluster bootstrap" not in capsys.readouterr().out


def test_rows_of_one_judge_get_no_judge_interval():
    df = judged_log(4, n=400, J=5)
    df.loc[df["protocol"] == "debate", "judge_id"] = 0  # every debate judged by judge 0
    ds = estimate(df, EstimateOptions(n_resamples=200, cluster="judge"))
    r = ds.sel(stratum="all", protocol="debate")
    assert np.isfinite(float(r.amp)) and np.isnan(float(r.amp_lo))
    assert "one judge" in str(r.notes.values)


@pytest.mark.parametrize("change, message", [
    (lambda d: d.drop(columns="judge_id"), "needs a judge_id column"),
    (lambda d: d.assign(judge_id="solo"), "at least 2 distinct judge_id values; it has 1"),
])
def test_bad_input_is_refused_before_any_output(tmp_path, capsys, change, message):
    df = change(judged_log(5, n=200))
    with pytest.raises(LogError, match=message):
        estimate(df, EstimateOptions(cluster="judge"))
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as e:
        main([str(path), "--cluster", "judge", "--out", str(out)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--cluster judge" in err and message.split(";")[0] in err
    assert not out.exists()


def test_an_unknown_cluster_is_refused():
    with pytest.raises(LogError, match="cluster must be one of rows, judge, got 'room'"):
        estimate(judged_log(6, n=100), EstimateOptions(cluster="room"))


def test_the_difference_of_amp_keeps_the_judges_paired():
    """Debates that repeat each consultancy (same judge, same verdict) but for a few
    flipped verdicts: resampling judges together, the difference of Amp varies only
    through the flipped rows' share, far less than either protocol's Amp varies over
    judges (drawing each protocol's judges apart would give the difference sqrt(2)
    times that)."""
    c = judged_log(8, n=800, J=10)
    c = c[c["protocol"] == "consult"]
    d = c.assign(protocol="debate", e_A=0)
    flip = np.flatnonzero((d["a"] != d["omega"]).to_numpy())[:6]
    d.iloc[flip, d.columns.get_loc("y")] = 1 - d["y"].to_numpy()[flip]
    df = pd.concat([c, d], ignore_index=True)
    ds = estimate(df, EstimateOptions(n_resamples=2000, seed=1, cluster="judge"))
    one = _se(ds, "amp", protocol="consult")
    assert _se(ds, "amp_diff") < one / 3, (_se(ds, "amp_diff"), one)
