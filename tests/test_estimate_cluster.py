"""The judge-cluster bootstrap of antiamp-estimate (``--cluster judge``): its spread
against logs with judges drawn afresh, its exact moments, the row bootstrap left as it
was, and its refusals."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import expit

from antiamp.estimate import (LogError, EstimateOptions, estimate, main, validate_log)
from antiamp.estimation.logstats import (N_CODES, amp_of_codes, clustered_difference, clustered_mean,
                              clustered_variance,
                              design_effect_wilson, judge_code_table, percentile_interval,
                              resampled_counts, resampled_judge_counts, wilson)
from antiamp.estimation.field_metrics import field_metrics, format_field_metrics
from antiamp.oversight_metrics import roc_auc

Z = stats.norm.ppf(0.975)


def judged_log(seed, n=2000, J=12, sd=1.5, judges=None, probs=False):
    """A two-protocol log whose judges lean differently (log-odds SD ``sd``); each
    call draws its judges afresh unless ``judges`` (their leans) is given; ``probs``:
    with the judge's probability p_y (its endorsement probability, to 2 decimals)."""
    r = np.random.default_rng(seed)
    u = r.normal(0, sd, J) if judges is None else judges
    j = r.integers(0, len(u), n)
    deb = r.random(n) < 0.5
    om = r.integers(0, 2, n)
    right = r.random(n) < 0.6
    a = np.where(right, om, 1 - om)
    eP = (r.random(n) < np.where(right, 0.9, 0.3)).astype(int)
    eA = np.where(deb, (r.random(n) < np.where(right, 0.3, 0.9)).astype(int), 0)
    z = 0.3 + u[j] + 1.5 * (eP - eA)
    y = np.where(r.random(n) < expit(z), a, 1 - a)
    df = pd.DataFrame({"protocol": np.where(deb, "debate", "consult"), "a": a, "y": y,
                       "omega": om, "e_P": eP, "e_A": eA, "judge_id": j})
    if probs:
        df["p_y"] = np.round(expit(z), 2)
    return df


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


# ------------------------------------------------ judge-clustered t intervals and SEs
def test_clustered_ses_match_the_spread_over_fresh_judges():
    """Over L logs of 20 judges drawn afresh (leans with SD 1 in log-odds), the spread
    of amp_prob (the mean p_y on the wrong rows), of the AUC and of the ASD is the
    standard error a log should report: the judge-clustered ones match it (within the
    chi-square band of a sample SD over L logs), while the row t interval's is far too
    narrow on the same logs (and DeLong's for the AUC too narrow)."""
    L, J = 40, 20
    vals = {c: {m: [] for m in ("amp_prob", "auc", "asd")} for c in ("rows", "judge")}
    ses = {c: {m: [] for m in ("amp_prob", "auc", "asd")} for c in ("rows", "judge")}
    for s in range(L):
        df = validate_log(judged_log(s, J=J, sd=1.0, probs=True))
        for c in ("rows", "judge"):
            r = estimate(df, EstimateOptions(n_resamples=20, seed=s, cluster=c)).sel(
                stratum="all", protocol="consult")
            n = int(((df.protocol == "consult") & (df.a != df.omega)).sum())
            crit = stats.t.ppf(0.975, J - 1 if c == "judge" else n - 1)
            vals[c]["amp_prob"].append(float(r.amp_prob))
            ses[c]["amp_prob"].append(float(r.amp_prob_hi - r.amp_prob_lo) / (2 * crit))
            fm = field_metrics(df, cluster=c).set_index(["protocol", "metric"])
            for m in ("auc", "asd"):
                vals[c][m].append(fm.loc[("consult", m), "value"])
                ses[c][m].append(fm.loc[("consult", m), "se"])
    lo = np.sqrt(stats.chi2.ppf(0.0005, L - 1) / (L - 1))
    hi = np.sqrt(stats.chi2.ppf(0.9995, L - 1) / (L - 1))
    ratio = {c: {m: np.std(vals[c][m], ddof=1) / np.mean(ses[c][m]) for m in vals[c]}
             for c in vals}
    for m in ("amp_prob", "auc", "asd"):
        assert np.allclose(vals["rows"][m], vals["judge"][m])  # the same estimates
        assert lo < ratio["judge"][m] < hi, (m, ratio, lo, hi)
    assert ratio["rows"]["amp_prob"] > 1.5 * hi, (ratio, hi)
    assert ratio["rows"]["auc"] > hi, (ratio, hi)


def test_with_one_row_per_judge_the_clustered_se_is_the_row_se():
    """With one row per judge (G = n) the CR1 variance G / (G - 1) sum r_i^2 / n^2 is
    sum r_i^2 / (n (n - 1)) = s^2 / n, the row variance with ddof 1, and G - 1 = n - 1
    degrees of freedom: the t intervals of one stratum are the same in both modes."""
    df = judged_log(9, n=300, J=5, probs=True)
    df["judge_id"] = np.arange(len(df))
    rows, judge = (estimate(df, EstimateOptions(n_resamples=20, cluster=c)) for c in ("rows", "judge"))
    for m in ("amp_prob", "fwc_prob", "brier", "log_loss", "tie_prob"):
        for suf in ("", "_lo", "_hi"):
            np.testing.assert_allclose(judge[m + suf].values, rows[m + suf].values, rtol=1e-12)
    x = np.random.default_rng(1).random(50)
    v, G = clustered_variance(x, np.arange(50))
    assert G == 50 and np.isclose(v, x.var(ddof=1) / 50, rtol=1e-13)


def test_clustered_mean_is_the_cr1_formula():
    """statsmodels' cluster-robust OLS on a constant (clustered_mean) against the CR1
    formula by hand: V = G / (G - 1) sum_g (sum of cluster g's residuals)^2 / n^2, t
    with G - 1 df; the rows of one judge give no interval."""
    r = np.random.default_rng(3)
    g = r.integers(0, 7, 400)
    x = r.random(400) + 0.2 * g
    m, lo, hi = clustered_mean(x, g, 0.9)
    U = np.bincount(g, weights=x - x.mean())
    se = np.sqrt(7 / 6 * (U ** 2).sum() / 400 ** 2)
    t = stats.t.ppf(0.95, 6)
    assert np.isclose(m, x.mean()) and np.allclose([lo, hi], [m - t * se, m + t * se], rtol=1e-12)
    assert np.isclose(clustered_variance(x, g)[0], se ** 2, rtol=1e-12)
    assert np.isnan(clustered_mean(x, np.zeros(400), 0.9)[1])


def test_design_effect_wilson_matches_the_spread_over_fresh_judges():
    """The share of endorsements among rows of 20 judges drawn afresh each time: the
    design-effect adjusted Wilson interval's standard error matches the share's spread;
    the plain Wilson interval's is too narrow."""
    L, J, n = 60, 20, 400
    share, se_d, se_w = [], [], []
    for s in range(L):
        r = np.random.default_rng(100 + s)
        u = r.normal(0, 1.0, J)
        j = r.integers(0, J, n)
        x = (r.random(n) < expit(0.4 + u[j])).astype(float)
        share.append(x.mean())
        lo, hi = design_effect_wilson(x, j, 0.95)
        se_d.append((hi - lo) / (2 * stats.t.ppf(0.975, J - 1)))
        lo, hi = wilson(x.sum(), n, 0.95)
        se_w.append((hi - lo) / (2 * Z))
    sd = np.std(share, ddof=1)
    lo = np.sqrt(stats.chi2.ppf(0.0005, L - 1) / (L - 1))
    hi = np.sqrt(stats.chi2.ppf(0.9995, L - 1) / (L - 1))
    assert lo < sd / np.mean(se_d) < hi, (sd / np.mean(se_d), lo, hi)
    assert sd / np.mean(se_w) > 1.5 * hi, sd / np.mean(se_w)
    assert design_effect_wilson(np.ones(30), np.arange(30) % 3, 0.95)[1] == 1.0
    assert np.isnan(design_effect_wilson(np.ones(30), np.zeros(30), 0.95)[0])


def test_clustered_auc_se_with_one_row_per_judge_is_delongs_up_to_ddof():
    """One row per judge: the clustered variance G/(G-1) [sum (V10 - A)^2 / n1^2 + sum
    (V01 - A)^2 / n0^2] is DeLong's var(V10)/n1 + var(V01)/n0 (ddof 1) with each term
    rescaled by G/(G-1) (n_k - 1)/n_k."""
    r = np.random.default_rng(4)
    y = r.random(80) < 0.4
    x = np.round(r.random(80) + 0.5 * y, 1)  # (ties, as stated probabilities have)
    a, s_row = roc_auc(x, y)
    a2, s_cl = roc_auc(x, y, clusters=np.arange(80))
    n1, n0, G = int(y.sum()), int((~y).sum()), 80
    rk = stats.rankdata(np.r_[x[y], x[~y]])
    v10 = (rk[:n1] - stats.rankdata(x[y])) / n0
    v01 = 1 - (rk[n1:] - stats.rankdata(x[~y])) / n1
    exact = G / (G - 1) * (v10.var(ddof=1) / n1 * (n1 - 1) / n1 + v01.var(ddof=1) / n0 * (n0 - 1) / n0)
    assert a == a2 and np.isclose(s_cl ** 2, exact, rtol=1e-12)
    assert np.isclose(s_row ** 2, v10.var(ddof=1) / n1 + v01.var(ddof=1) / n0, rtol=1e-12)


def test_the_default_keeps_the_row_intervals_and_labels(tmp_path, capsys):
    """Without --cluster judge the probability metrics' t intervals are the stratified
    row ones (by hand), the field metrics' SEs treat rows as clusters, and nothing says
    judge-clustered; with it the store, the field table and the report say which."""
    df = judged_log(11, n=600, J=8, probs=True)
    df["stratum"] = np.where(np.arange(len(df)) % 3 == 0, "s1", "s2")
    ds = estimate(df, EstimateOptions(n_resamples=50))
    r = ds.sel(protocol="debate", stratum="all")
    d = df[(df.protocol == "debate") & (df.a != df.omega)]
    g = [d.p_y[d.stratum == k].to_numpy() for k in ("s1", "s2")]
    N = sum(map(len, g))
    se = np.sqrt(sum((len(x) / N) ** 2 * x.var(ddof=1) / len(x) for x in g))
    t = stats.t.ppf(0.975, N - 2)
    assert np.allclose([float(r.amp_prob_lo), float(r.amp_prob_hi)],
                       [d.p_y.mean() - t * se, d.p_y.mean() + t * se], rtol=1e-12)
    assert "clustered" not in ds.amp_prob_lo.attrs["long_name"]
    assert "judge_clustered" not in ds.attrs
    fm = field_metrics(df)
    assert "cluster" not in fm.attrs and "judge-clustered" not in format_field_metrics(fm)
    dj = estimate(df, EstimateOptions(n_resamples=50, cluster="judge"))
    assert "judge-clustered t interval (CR1" in dj.amp_prob_lo.attrs["long_name"]
    assert "amp_prob" in dj.attrs["judge_clustered"]
    assert float(dj.sel(protocol="debate", stratum="all").amp_prob) == float(r.amp_prob)
    fj = field_metrics(df, cluster="judge")
    assert fj.attrs["cluster"] == "judge"
    t8 = stats.t.ppf(0.975, 8 - 1)  # 8 judges: t intervals on 7 df
    np.testing.assert_allclose(fj.hi - fj.value, t8 * fj.se, rtol=1e-12)
    np.testing.assert_allclose(fm.hi - fm.value, Z * fm.se, rtol=1e-12)
    assert "judge-clustered standard errors" in format_field_metrics(fj)
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    main([str(path), "--cluster", "judge", "--n-resamples", "50", "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert "the probabilities' t intervals judge-clustered (CR1" in out
    assert "95% judge-clustered t intervals" in out
    assert "pooled over strata; judge-clustered standard errors" in out


def test_round_intervals_under_judge_are_design_effect_wilson(tmp_path, capsys):
    """A log with rounds: under --cluster judge each round's interval is the design-effect
    Wilson interval of that round's rows with a wrong protagonist, labelled so; the
    default keeps the plain Wilson interval."""
    r = np.random.default_rng(12)
    n, J = 300, 10
    u = r.normal(0, 1.5, J)
    rows = []
    for i in range(n):
        j, om = int(r.integers(0, J)), int(r.integers(0, 2))
        a = om if r.random() < 0.4 else 1 - om
        for k in (1, 2):
            y = a if r.random() < expit(u[j] - 0.3 * k) else 1 - a
            rows.append(dict(protocol="debate" if i % 2 else "consult", instance=i, round=k,
                             a=a, y=y, omega=om, e_P=0, e_A=0, judge_id=j))
    df = pd.DataFrame(rows)
    plain = estimate(df, EstimateOptions(n_resamples=20))
    ds = estimate(df, EstimateOptions(n_resamples=20, cluster="judge"))
    for pi, prot in enumerate(("consult", "debate")):
        for k in (1, 2):
            m = (df.protocol == prot) & (df["round"] == k) & (df.a != df.omega)
            x = (df.y[m] == df.a[m]).to_numpy()
            want = design_effect_wilson(x, df.judge_id[m].to_numpy(), 0.95)
            got = ds.sel(protocol=prot, round=k)
            assert (float(got.amp_round_lo), float(got.amp_round_hi)) == want
            p = plain.sel(protocol=prot, round=k)
            assert (float(p.amp_round_lo), float(p.amp_round_hi)) == wilson(x.sum(), len(x), 0.95)
            assert float(got.amp_round_hi - got.amp_round_lo) > float(p.amp_round_hi - p.amp_round_lo)
    assert "design-effect Wilson" in ds.amp_round_lo.attrs["long_name"]
    assert "design-effect" not in plain.amp_round_lo.attrs["long_name"]
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    main([str(path), "--cluster", "judge", "--n-resamples", "20", "--out", str(tmp_path / "o")])
    assert "design-effect Wilson intervals, judge-clustered" in capsys.readouterr().out


def test_clustered_difference_is_statsmodels_sandwich_with_the_means_factor():
    """mean(x1) - mean(x2) with a judge's rows in both: the jointly clustered CR1
    variance is statsmodels' cluster-robust variance of a protocol dummy's coefficient
    (OLS on a constant and the dummy) without its (N - 1) / (N - 2) factor for two
    parameters; t with G - 1 df."""
    import statsmodels.api as sm

    r = np.random.default_rng(13)
    g1, g2 = r.integers(0, 9, 150), r.integers(0, 9, 120)
    x1, x2 = r.random(150) + 0.1 * g1, r.random(120) + 0.1 * g2
    d, lo, hi = clustered_difference(x1, g1, x2, g2, 0.95)
    X = np.c_[np.ones(270), np.r_[np.zeros(150), np.ones(120)]]
    fit = sm.OLS(np.r_[x1, x2], X).fit(cov_type="cluster", cov_kwds={"groups": np.r_[g1, g2]})
    se = fit.bse[1] * np.sqrt((270 - 2) / (270 - 1))
    t = stats.t.ppf(0.975, 9 - 1)
    assert np.isclose(d, -fit.params[1], rtol=1e-12)
    assert np.allclose([lo, hi], [d - t * se, d + t * se], rtol=1e-12)


def test_the_difference_of_amp_prob_keeps_the_judges_paired():
    """Debates that repeat each consultancy (same judge, same p_y) but for a few changed
    probabilities: clustered jointly, amp_prob(consult) - amp_prob(debate) varies only
    through the changed rows, far less than either protocol's amp_prob over judges (two
    independent samples would give sqrt(2) times that); only under --cluster judge."""
    c = judged_log(8, n=800, J=10, probs=True)
    c = c[c["protocol"] == "consult"]
    d = c.assign(protocol="debate", e_A=0)
    ch = np.flatnonzero((d["a"] != d["omega"]).to_numpy())[:6]
    d.iloc[ch, d.columns.get_loc("p_y")] = 0.5
    df = pd.concat([c, d], ignore_index=True)
    ds = estimate(df, EstimateOptions(n_resamples=20, cluster="judge")).sel(stratum="all")
    one = float(ds.amp_prob_hi.sel(protocol="consult") - ds.amp_prob_lo.sel(protocol="consult"))
    width = float(ds.amp_prob_diff_hi - ds.amp_prob_diff_lo)
    assert 0 < width < one / 3, (width, one)
    assert np.isclose(float(ds.amp_prob_diff), float(ds.amp_prob.sel(protocol="consult")
                                                     - ds.amp_prob.sel(protocol="debate")))
    assert "clustered jointly" in ds.amp_prob_diff_lo.attrs["long_name"]
    assert "amp_prob_diff" not in estimate(df, EstimateOptions(n_resamples=20))
