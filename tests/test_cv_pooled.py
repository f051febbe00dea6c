"""Cross-validation with power: the statistic pooled over the folds (issue 57).

The per-fold check of ``--cv`` cannot fail for a mild bias (each fold's interval is
wide); the pooled statistic of :mod:`antiamp.estimation.cvpool` sums the folds'
residuals and calibrates the sum on logs simulated from the fitted judge.  Proof in
simulated worlds with a known truth (``tests/cv_power.py``): a reading that predicts
debate Amp 0.06 too high is rejected, a correct one keeps its size.  The default tier
runs a few replicates; ``-m slow`` the full study.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from antiamp.estimate import validate_log
from antiamp.estimation import cvpool as cp
from antiamp.estimation import predictive as pr
from antiamp.estimation import structural as st

sys.path.insert(0, str(Path(__file__).parent))
import cv_power  # noqa: E402


def test_hotelling_prediction_test_is_exact_under_normality():
    """r and the B reference vectors drawn from one correlated normal: the p-values are
    uniform (Kolmogorov-Smirnov), and with one statistic the test is the t prediction
    test written here."""
    rng = np.random.default_rng(1)
    L = np.linalg.cholesky(np.array([[1.0, 0.6, -0.3], [0.6, 2.0, 0.2], [-0.3, 0.2, 0.5]]))
    ps = []
    for _ in range(1500):
        x = rng.standard_normal((13, 3)) @ L.T + [0.3, -1.0, 2.0]
        ps.append(cp.hotelling(x[0], x[1:])[2])
    assert stats.kstest(ps, "uniform").pvalue > 0.01
    assert 0.03 < np.mean(np.array(ps) < 0.05) < 0.07
    x = rng.standard_normal(21)
    T2, F, p, m, dfd = cp.hotelling(x[:1], x[1:, None])
    B = 20
    t = (x[0] - x[1:].mean()) / (x[1:].std(ddof=1) * np.sqrt(1 + 1 / B))
    assert (m, dfd) == (1, B - 1)
    assert F == pytest.approx(t ** 2) and p == pytest.approx(2 * stats.t.sf(abs(t), B - 1))
    # a statistic that is a linear combination of the others adds no degree of freedom
    y = rng.standard_normal((30, 2))
    y = np.column_stack([y, y[:, 0] + y[:, 1]])
    assert cp.hotelling(y[0], y[1:])[3] == 2


@pytest.mark.parametrize("reading", ["probabilities", "labels"])
def test_simulated_logs_are_drawn_from_the_fitted_judge(reading):
    """A log simulated from a fit: refitted, its parameters lie within 4 SE of the fit
    it was drawn from; its label rates per protocol and side match the fit's
    probabilities (binomial z < 4); rows, judges and evidence are the log's; stated
    probabilities on the log's grid and within its bounds."""
    df = validate_log(st.simulate_log(3000, seed=5, n_judges=30, kappa_v=0.8, rho=0.5,
                                      mu_consult=0.5, d=2.0, sigma=1.5))
    f = pr.fit_named(df, reading)
    sim = cp.simulate_from_fit(f, df, np.random.default_rng(0))
    keep = ["protocol", "a", "omega", "e_P", "e_A", "judge_id"]
    pd.testing.assert_frame_equal(sim[keep], df[keep])
    if reading == "probabilities":
        p = sim["p_y"].to_numpy()
        assert np.allclose(p, np.round(p, 2)) and p.min() >= 0.01 and p.max() <= 0.99
        off = np.abs(p - 0.5) > 1e-9  # (a recorded 1/2 is labelled at the tie share)
        assert ((p > 0.5) == (sim["y"] == sim["a"]))[off].all()
    else:
        assert "p_y" not in sim.columns
    g = pr.fit_named(sim, reading)
    se = np.sqrt(np.diag(f.cov))
    assert np.all(np.abs(g.params - f.params) < 4 * se * np.sqrt(2)), (g.params, f.params)
    agg = pr.row_types(f, sim)
    q = pr.endorse_prob(f, agg, f.params[None, :])[0]
    for deb in (False, True):
        for right in (False, True):
            m = ((agg["debate"] == deb) & (agg["right"] == right)).to_numpy()
            w = agg["w"].to_numpy(float)[m]
            if not w.sum():
                continue
            k = float(w @ agg["endorse"].to_numpy(float)[m])
            e, v = float(w @ q[m]), float(w @ (q[m] * (1 - q[m])))
            assert abs(k - e) < 4 * np.sqrt(v), (deb, right, k, e)


def test_simulated_logs_record_probabilities_as_the_world_does():
    """At the world's own parameters, a log simulated by the reference's simulator and a
    fresh log of the world generator (``tests/cv_power.py``'s correct world, 20,000
    rooms) record the same distribution of stated probabilities (beyond and at each
    bound, at 1/2, in tenths between: chi-square two-sample p > 0.001), label the
    same share of rows at 1/2 with the protagonist's answer per protocol, and their
    label rates per protocol and side agree (binomial z < 4): nothing in the
    generator the reference cannot see.  (A tie share, grid or bounds other than the
    world's fails it.)"""
    from scipy import stats

    world = cv_power.world_log(20_000, 901, "correct")
    f = pr.fit_named(world, "probabilities")
    truth = {"mu_consult": cv_power.JUDGE["mu_consult"], "d": cv_power.JUDGE["d"],
             "log_sigma": np.log(cv_power.WORLDS["correct"][0])}
    assert sorted(f.names) == sorted(truth)
    f.params = np.array([truth[n] for n in f.names])
    sim = cp.simulate_from_fit(f, world, np.random.default_rng(4))
    fresh = cv_power.world_log(20_000, 902, "correct")

    def bins(d):
        p = d["p_y"].to_numpy()
        # (beyond each bound alone: a probability recorded past the log's bounds)
        edges = [0.0, 0.005, 0.0101, 0.1, 0.2, 0.3, 0.4, 0.4999, 0.5001, 0.6, 0.7, 0.8,
                 0.9, 0.9899, 0.995, 1.0]
        return np.histogram(p, edges)[0]

    table = np.array([bins(sim), bins(fresh)])
    table = table[:, table.sum(axis=0) > 0]  # (no row beyond the bounds in either)
    assert stats.chi2_contingency(table)[1] > 1e-3, table

    def agree(masks):  # the share of rows endorsed, in each log: binomial z < 4
        (k1, n1), (k2, n2) = [(int((d.loc[m, "y"] == d.loc[m, "a"]).sum()), int(m.sum()))
                              for d, m in zip((sim, fresh), masks)]
        pbar = (k1 + k2) / (n1 + n2)
        se = np.sqrt(pbar * (1 - pbar) * (1 / n1 + 1 / n2))
        return n1 > 0 and n2 > 0 and abs(k1 / n1 - k2 / n2) <= 4 * se, (k1, n1, k2, n2)

    for prot in ("consult", "debate"):
        # a recorded 1/2 labelled with the protagonist's answer at the same share (the
        # world never endorses a consultant there; in an assigned debate the
        # protagonist read as the wrong debater takes about half of them)
        ok, got = agree([(d["protocol"] == prot) & (np.abs(d["p_y"] - 0.5) < 1e-9)
                         for d in (sim, fresh)])
        assert ok, (prot, "at 1/2", got)
        for right in (False, True):
            masks = [(d["protocol"] == prot) & ((d["a"] == d["omega"]) == right)
                     for d in (sim, fresh)]
            if masks[0].any() or masks[1].any():
                ok, got = agree(masks)
                assert ok, (prot, right, got)


def test_pooled_statistic_rejects_the_probabilities_reading_of_the_shipped_log():
    """The shipped human-judge log read from its stated probabilities: every one of the
    15 held-out rates of 5 judge folds lies inside its 95% interval (the per-fold check
    cannot fail), while pooled over the folds that reading over-predicts debate Amp
    (0.21 against 0.156) and is rejected at 5% all at once against 40 simulated logs;
    the labels reading, which the selection uses, is not."""
    from importlib.resources import files

    from antiamp.estimate import load_log

    df = load_log(str(files("antiamp") / "data" / "michael2023_human_judges.csv"))
    cv = pr.cross_validate(df, 5, n_draws=300, choice="probabilities")
    assert cv["inside"].all(), cv
    f = pr.fit_named(df, "probabilities")
    tab = cp.pooled_check(df, f, 5, n_boot=40).set_index(["protocol", "metric"])
    assert tab.loc[("debate", "amp"), "predicted"] > 0.2
    assert tab.loc[("debate", "amp"), "observed"] == pytest.approx(24 / 154)
    assert tab.loc[("all", "all"), "p_value"] < 0.05, tab
    g = pr.fit_named(df, "labels")
    assert cp.pooled_check(df, g, 5, n_boot=40)["p_value"].iloc[-1] > 0.05


def test_pooled_statistic_power_and_size_at_reduced_counts():
    """The simulated worlds of ``tests/cv_power.py`` at reduced counts (B = 20
    simulated logs): the biased reading (debate Amp about +0.06) rejected in at least 2
    of 3 logs of 1,200 rooms, with debate Amp's pooled residual below -0.04 in each;
    the correct one in neither of 2 logs of 330 rooms.  The full study (power >= 80%,
    size about 5%) runs under -m slow."""
    hits = 0
    for rep in range(3):
        tab = cv_power.replicate(1200, rep, "biased", n_boot=20)
        deb = tab[(tab["protocol"] == "debate") & (tab["metric"] == "amp")].iloc[0]
        assert deb["residual"] < -0.04, tab
        hits += tab["p_value"].iloc[-1] < 0.05
    assert hits >= 2
    for rep in range(2):
        tab = cv_power.replicate(330, rep, "correct", n_boot=20)
        assert tab["p_value"].iloc[-1] > 0.05, tab


@pytest.mark.slow
def test_pooled_statistic_power_and_size_full_study():
    """Issue 57's proof at full counts: rejects the biased reading in >= 80% of 40 logs
    of 1,200 rooms; rejects the correct one in at most 5% + 2.5 binomial SE (of 40
    logs at 5%: at most 5)."""
    r, _, _ = cv_power.rejection_rate(1200, 40, "biased")
    assert r >= 0.8
    r0, _, ps = cv_power.rejection_rate(1200, 40, "correct")
    assert np.sum(ps < 0.05) <= 5, ps


def test_several_fold_seeds_average_the_residuals():
    """Two fold seeds: the pooled counts are the mean of each seed's, and the table
    says which seeds it pooled."""
    df = cv_power.world_log(400, 3, "correct")
    f = pr.fit_named(df, "labels")
    keys = cp.statistics(df)
    units = pr.fold_units(df, "judge")
    folds = [cp.assign_folds(units, 4, np.random.default_rng(s)) for s in (7, 8)]
    both = cp.pooled_counts(df, folds, "labels", {}, keys)
    each = [cp.pooled_counts(df, [one], "labels", {}, keys) for one in folds]
    assert np.allclose(both, (each[0] + each[1]) / 2)
    tab = cp.pooled_check(df, f, 4, seeds=(7, 8), n_boot=3)
    assert tab.attrs["seeds"] == [7, 8] and tab.attrs["n_boot"] + tab.attrs["failed"] == 3
    assert np.allclose(tab["residual"].iloc[:-1],
                       (both[:, 0] - both[:, 1]) / both[:, 2])


def _cli(tmp_path, *argv):
    from antiamp.estimate import main

    out = tmp_path / "out"
    main([*argv, "--out", str(out), "--n-resamples", "50", "--check-draws", "100"])
    return out


def test_cli_prints_and_writes_the_pooled_statistic(tmp_path, capsys):
    log = tmp_path / "log.csv"
    cv_power.world_log(300, 1, "correct").to_csv(log, index=False)
    out = _cli(tmp_path, str(log), "--cv", "3", "--cv-boot", "10", "--cv-seeds", "2",
               "--structural-fit", "labels")
    text = capsys.readouterr().out
    assert "pooled over the 3 folds and 2 fold seeds (0, 1) (reading labels" in text
    assert "at once: Hotelling T^2" in text
    cv = pd.read_csv(out / "predictive_cv.csv")
    assert sorted(cv["fold_seed"].unique()) == [0, 1]
    pooled = pd.read_csv(out / "predictive_cv_pooled.csv")
    assert list(pooled["metric"]) == ["amp", "fwc", "amp", "all"]
    import zarr

    attrs = zarr.open_group(str(out / "estimates.zarr"), mode="r").attrs
    stored = pd.DataFrame(json.loads(attrs["cv_pooled"]))
    assert np.allclose(stored["p_value"], pooled["p_value"])
    assert attrs["cv_pooled_reading"] == "labels" and attrs["cv_fold_seeds"] == [0, 1]


@pytest.mark.parametrize("argv, msg", [
    (["--cv-boot", "5"], "--cv-boot must be 0 (no pooled statistic) or an integer in "
                         "[10, 10,000], got 5"),
    (["--cv-boot", "-1"], "--cv-boot must be 0"),
    (["--cv-seeds", "0"], "--cv-seeds must be an integer in [1, 100], got 0"),
    (["--cv-seeds", "101"], "--cv-seeds must be an integer in [1, 100], got 101"),
])
def test_cli_bad_pooled_options_exit_2_before_any_output(tmp_path, capsys, argv, msg):
    from antiamp.estimate import main

    log = tmp_path / "log.csv"
    cv_power.world_log(200, 1, "correct").to_csv(log, index=False)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as e:
        main([str(log), "--out", str(out), "--cv", "3", *argv])
    err = capsys.readouterr()
    assert e.value.code == 2 and msg in err.err and len(err.err.strip().splitlines()) == 1
    assert err.out == "" and not out.exists()



def test_auto_selects_the_reading_within_each_fold_in_the_log_and_the_reference():
    """Under ``auto`` the pooled statistic selects each fold's reading on that fold's
    training rows alone (the held-out fold plays no part in the selection either):
    each fold's reading and its observed and predicted counts are those of
    :func:`select_fit` on the other folds, written out here; the simulated logs' folds
    are selected alike (counted in ``ref_readings``); both are printed.  A log without
    stated probabilities names its selections by the label readings they are."""
    df = validate_log(st.simulate_log(240, seed=2, n_judges=12, kappa_v=0.8, rho=0.5,
                                      mu_consult=0.5, d=2.0, sigma=1.5))
    keys = cp.statistics(df)
    fold = cp.assign_folds(pr.fold_units(df, "judge"), 3, np.random.default_rng(0))
    whole, _ = pr.select_fit(df)
    tab = cp.pooled_check(df, whole, 3, n_boot=2, seed=4, reading="auto")
    chosen = [x["reading"] for x in tab.attrs["fold_readings"]]
    want = np.zeros((len(keys), 3))
    for j in range(3):
        train, test = df[fold != j], df[fold == j]
        train.attrs, test.attrs = dict(df.attrs), dict(df.attrs)
        f, sel = pr.select_fit(train, seed=4)
        assert chosen[j] == f.reading == sel.loc[sel["chosen"], "fit"].iloc[0]
        want += cp._counts(f, test, keys)
    np.testing.assert_allclose(tab["predicted"].to_numpy()[:-1], want[:, 1] / want[:, 2])
    np.testing.assert_allclose(tab["observed"].to_numpy()[:-1], want[:, 0] / want[:, 2])
    assert sum(tab.attrs["ref_readings"].values()) == 3 * (2 - tab.attrs["failed"])
    text = cp.format_pooled(tab, 0.95)
    assert "reading auto, selected within each fold" in text
    assert "reading selected in each fold on its training rows alone: 1 " + chosen[0] in text
    # labels alone: the probabilities readings are the labels' and named so
    lab = df.drop(columns="p_y")
    lab.attrs = dict(df.attrs)
    g, sel = pr.select_fit(lab)
    assert set(sel["fit"]) <= {"labels", "labels+gap"} and g.reading in set(sel["fit"])
