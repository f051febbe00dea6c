"""antiamp-design's robust mode "for a new population of debaters" (issue 57): the
dishonest side's per-protocol shifts drawn from the store's hierarchical shift prior,
the design that meets the target over those draws, and the probability that its
protocol is the best one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from antiamp import design as dz
from cli_runner import run_command

#: A structural judge (log-odds) with a joint covariance of its free parameters.
NAMES = ("mu_c", "kappa_v", "gap", "sigma")
POINT = {"mu_c": 0.1, "kappa_v": 0.7, "gap": 2.0, "sigma": 1.5}
COV = np.diag([0.08, 0.07, 0.05, 0.02]) ** 2
COV[2, 3] = COV[3, 2] = 0.5 * 0.05 * 0.02


def _judge(prior=(0.8, 1.2, -0.3)):
    return dz.Judge("structural", p=0.5, rho=0.5, se={"rho": 0.015},
                    cov=(list(NAMES), COV), shift_prior=prior, **POINT)


def _amps(th, dc, dd, rho):
    """One juror's Amp per protocol, no verification, written out here: consultancy
    z = mu_c + kappa_v e_P + r_P with a wrong consultant's r_P ~ N(-gap/2 + dc,
    sigma^2); debate (assigned roles, mu_d = 0) z = kappa_v (e_P - e_A) + r_P - r_A with
    the honest side's evidence always shown, r_P - r_A ~ N(-gap + dd, 2 sigma^2)."""
    mu, kv, gap, s = th["mu_c"], th["kappa_v"], th["gap"], th["sigma"]
    c = rho * norm.cdf((mu + kv - gap / 2 + dc) / s) + (1 - rho) * norm.cdf(
        (mu - gap / 2 + dc) / s)
    d = rho * norm.cdf((-gap + dd) / (s * np.sqrt(2))) + (1 - rho) * norm.cdf(
        (-kv - gap + dd) / (s * np.sqrt(2)))
    return c, d


def test_new_population_amp_is_the_closed_form_with_the_shifts():
    """On the design's own draws, its Amp per protocol (jury 1, no verification) is
    the closed form written in the test with each draw's shifts; draw 0 has none."""
    j = _judge()
    P = dz.new_population_params(j, 500, 3)
    assert P["delta_c"][0] == 0 and P["delta_d"][0] == 0
    th = {k: P[k] for k in NAMES}
    c, d = _amps(th, P["delta_c"], P["delta_d"], P["rho"])
    assert np.allclose(dz.outcomes("consult", 1, 0.0, P)[0], c, atol=1e-12)
    assert np.allclose(dz.outcomes("debate", 1, 0.0, P)[0], d, atol=1e-12)
    # the shifts' law: N(0, sigma^2 Sigma) of the prior (correlation -0.3)
    z = np.column_stack([P["delta_c"], P["delta_d"]])[1:] / P["sigma"][1:, None]
    assert np.std(z[:, 0]) == pytest.approx(0.8, rel=0.1)
    assert np.std(z[:, 1]) == pytest.approx(1.2, rel=0.1)
    assert np.corrcoef(z.T)[0, 1] == pytest.approx(-0.3, abs=0.1)


def test_pr_best_against_a_direct_monte_carlo_of_the_same_law():
    """Pr(debate has the lower Amp) for a new population, from the design's draws,
    against a Monte Carlo written here (its own draws of the parameters from the joint
    normal, of rho, and of the shifts from the prior): equal within 4 combined SE; for
    the same debaters debate is the best in every draw, for a new population it is
    not."""
    j = _judge()
    lv = dz.Levers(protocols=("consult", "debate"))
    rec = {"protocol": "debate", "jury_size": 1, "verification": 0.0, "rule": "majority",
           "subsidy": 0.0}
    n = 4000
    got = dz.pr_best(rec, lv, dz.new_population_params(j, n, 11))
    rng = np.random.default_rng(2024)
    x = rng.multivariate_normal([POINT[k] for k in NAMES], COV, n)
    th = dict(zip(NAMES, x.T))
    tc, td, r = j.shift_prior
    S = np.array([[tc * tc, r * tc * td], [r * tc * td, td * td]])
    dl = rng.multivariate_normal([0, 0], S, n) * th["sigma"][:, None]
    rho = np.clip(0.5 + 0.015 * rng.standard_normal(n), 0, 1)
    c, d = _amps(th, dl[:, 0], dl[:, 1], rho)
    want = float(np.mean(d < c))
    se = np.sqrt(2 * want * (1 - want) / n)
    assert abs(got["debate"] - want) < 4 * se, (got, want)
    assert got["consult"] + got["debate"] == pytest.approx(1.0)
    assert 0.55 < want < 0.95  # the new population leaves the order in doubt
    same = dz.pr_best(rec, lv, dz._params(j, n, 11))
    assert same["debate"] == 1.0


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """An antiamp-estimate --simulate store of a log whose debate Amp is clearly below
    its consultancy Amp (0.13 against 0.36)."""
    from antiamp.estimation import structural as st

    tmp = tmp_path_factory.mktemp("newpop")
    st.simulate_log(1500, seed=3, n_judges=30, mu_consult=0.0, d=2.0, sigma=1.5,
                    kappa_v=0.8, rho=0.5).to_csv(tmp / "log.csv", index=False)
    r = run_command("antiamp-estimate", [tmp / "log.csv", "--simulate", "--n-sim", "20000",
                                         "--n-resamples", "50", "--check-draws", "400",
                                         "--structural-fit", "probabilities",
                                         "--out", tmp / "e"], tmp)
    assert r.returncode == 0, r.stderr
    return tmp


def test_design_for_a_new_population_from_a_store(store):
    """The store records its shift prior; the design prints and writes the design for
    a new population with Pr(best): a dearer design than the same debaters' (the
    target met over the populations' spread too), debate best in every draw for the
    same debaters and in fewer for a new population; and its new-population Amp at
    one juror agrees with antiamp-estimate's "a new population" prediction of the same
    store (two codings of the shifts: the fit's likelihood and the design's closed
    form), within Monte Carlo error."""
    import xarray as xr

    ds = xr.open_zarr(store / "e" / "estimates.zarr")
    assert (ds.attrs["shift_prior_consult"], ds.attrs["shift_prior_debate"],
            ds.attrs["shift_prior_corr"]) == (1.0, 1.0, 0.0)
    r = run_command("antiamp-design", ["--estimates", store / "e" / "estimates.zarr",
                                       "--max-amp", "0.2", "--n-sim", "2000",
                                       "--out", store / "d"], store)
    assert r.returncode == 0, r.stderr
    assert "for a new population of debaters (their dishonest side's shifts drawn from " \
           "the store's shift prior: sd 1 sigma in consultancy, 1 in debate" in r.stdout
    rec = pd.read_csv(store / "d" / "recommendation.csv").set_index("role")
    same, new = rec.loc["recommended"], rec.loc["new population"]
    assert new["cost"] > same["cost"]
    assert same["pr_best_debate"] == 1.0 and new["pr_best"] < 0.95
    assert new["pr_best"] == new[f"pr_best_{new['protocol']}"]
    assert f"{new['protocol']} is the best with probability {new['pr_best']:.3f}" in r.stdout
    j, _ = dz.judge_from_estimates(store / "e" / "estimates.zarr")
    P = dz.new_population_params(j, 2000, 5)
    pop = pd.read_csv(store / "e" / "predictive_populations.csv").set_index("prediction")
    want = pop.loc["a new population"]
    for prot in ("consult", "debate"):
        amp = dz.outcomes(prot, 1, 0.0, P)[0]
        # (the estimate's interval spans about 4 SD of its 400 draws)
        sd = (want[f"{prot}_amp_hi"] - want[f"{prot}_amp_lo"]) / 4
        se = np.sqrt(np.var(amp) / len(amp) + sd ** 2 / 400)
        assert abs(amp.mean() - want[f"{prot}_amp"]) < 4 * se, (prot, amp.mean(), want)


def test_the_prior_assumed_for_older_stores_is_the_estimators_default():
    """antiamp-design reads a store without a recorded shift prior with the defaults
    antiamp-estimate used when it wrote none: today's."""
    from antiamp.design import STORED_BEFORE_SHIFT_PRIOR
    from antiamp.estimation.structural import SHIFT_CORR, SHIFT_SCALE

    assert STORED_BEFORE_SHIFT_PRIOR == (SHIFT_SCALE["consult"], SHIFT_SCALE["debate"],
                                         SHIFT_CORR)


@pytest.fixture(scope="module")
def store_honest(tmp_path_factory):
    """An antiamp-estimate --simulate --debaters store of two populations whose second
    one's right consultants read a spread worse than the reference's: its fit has
    honest_consult[B]."""
    import populations_coverage as pc
    from antiamp.estimation import structural as st

    tmp = tmp_path_factory.mktemp("newpop_honest")
    s = pc.JUDGE["sigma"]
    A = pc.population_log(900, "A", 60, rho=0.4)
    B = st.simulate_log(600, rho=0.6, delta_consult=-0.5 * s, delta_debate=0.5 * s,
                        honest_consult=-1.0 * s, n_judges=30, seed=70, **pc.JUDGE)
    B["debaters"] = "B"
    B["room"] = [f"B-{i}" for i in range(len(B))]
    B["judge_id"] = "B-" + B["judge_id"].astype(str)
    pd.concat([A, B]).to_csv(tmp / "log.csv", index=False)
    r = run_command("antiamp-estimate", [tmp / "log.csv", "--simulate", "--debaters",
                                         "debaters", "--n-sim", "20000", "--n-resamples",
                                         "50", "--check-draws", "400", "--structural-fit",
                                         "probabilities", "--out", tmp / "e"], tmp)
    assert r.returncode == 0, r.stderr
    return tmp


def test_new_population_draws_the_honest_consultants_shift_as_the_estimator(store_honest):
    """Where the store's fit has an honest consultant's shift (population B), the
    design's new population draws one too, as antiamp-estimate's "a new population"
    prediction does: honest_c ~ sigma tau_consult N(0, 1) independent of the dishonest
    shifts, 0 at draw 0; a right consultant's endorsement is the closed form with it
    (written here); the design's new-population consultancy accuracy at one juror
    agrees with the estimator's within Monte Carlo error; and the output says what the
    honest shift rests on.  (Before, the design drew only the two dishonest shifts:
    its consultancy accuracy for a new population sat above the estimator's.)"""
    j, notes = dz.judge_from_estimates(store_honest / "e" / "estimates.zarr")
    assert j.honest_fitted == ("B",)
    P = dz.new_population_params(j, 4000, 5)
    h = P["honest_c"]
    assert h[0] == 0.0
    z = h[1:] / P["sigma"][1:]
    assert np.std(z) == pytest.approx(j.shift_prior[0], rel=0.06)
    assert abs(np.corrcoef(z, P["delta_c"][1:] / P["sigma"][1:])[0, 1]) < 0.06
    fwc = dz._endorse(P, "consult", True, 1, 0, 1, 1)
    want = norm.cdf((P["mu_c"] + P["kappa_v"] + P["gap"] / 2 + h) / P["sigma"])
    np.testing.assert_allclose(fwc, want, atol=1e-12)
    pop = pd.read_csv(store_honest / "e" / "predictive_populations.csv")
    new = pop[pop["prediction"] == "a new population"].iloc[0]
    assert "honest consult: the shift prior" in new["rests_on"]
    acc = dz.outcomes("consult", 1, 0.0, P)[1]
    sd = (new["consult_acc_hi"] - new["consult_acc_lo"]) / 4
    se = np.sqrt(np.var(acc) / len(acc) + sd ** 2 / 400)
    assert abs(acc.mean() - new["consult_acc"]) < 4 * se, (acc.mean(), new["consult_acc"], se)
    # the same draws without the honest shift: the accuracy the old draws gave
    P0 = {k: v for k, v in P.items() if k != "honest_c"}
    acc0 = dz.outcomes("consult", 1, 0.0, P0)[1]
    assert acc0.mean() - acc.mean() > 0.02
    r = run_command("antiamp-design", ["--estimates", store_honest / "e" / "estimates.zarr",
                                       "--max-amp", "0.2", "--n-sim", "2000",
                                       "--out", store_honest / "d"], store_honest)
    assert r.returncode == 0, r.stderr
    assert ("their honest consultant's shift: the shift prior, sd 1 sigma independent of "
            "the dishonest shifts (the store's fit has one for B)") in r.stdout
    rec = pd.read_csv(store_honest / "d" / "recommendation.csv").set_index("role")
    assert rec.loc["new population", "honest_rests_on"].startswith("the shift prior")


def test_new_population_without_an_honest_shift_in_the_store_says_0(store):
    """A store whose fit has no populations: no honest shift is drawn and the output
    says it is 0."""
    j, _ = dz.judge_from_estimates(store / "e" / "estimates.zarr")
    assert j.honest_fitted == ()
    assert "honest_c" not in dz.new_population_params(j, 50, 1)
    assert dz.honest_rests_on(j).startswith("0: the store's fit has no honest")


def test_the_design_and_the_estimator_draw_a_population_by_one_function(monkeypatch):
    """Both users draw through antiamp.design.population_shifts: replaced
    there, both see the replacement."""
    from antiamp.estimation import predictive as pr
    from antiamp.estimation import structural as st

    calls = []
    real = dz.population_shifts

    def spy(*a, **k):
        calls.append(k.get("honest", False))
        return real(*a, **k)

    monkeypatch.setattr(dz, "population_shifts", spy)
    dz.new_population_params(_judge(), 10, 0)
    f = st.fit(st.simulate_log(400, seed=1, n_judges=10))
    pr.population_predictions(f, st.simulate_log(400, seed=1, n_judges=10), n_draws=20)
    assert len(calls) == 2
