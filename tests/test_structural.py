"""The structural judge of real logs (antiamp.estimation.structural) and the messages model's
favoured-answer judge it runs on."""

from __future__ import annotations


import numpy as np
import pytest
import xarray as xr
from scipy.stats import norm

import antiamp as sim
from antiamp.estimation import structural as st
from antiamp.estimate import EstimateOptions, LogError, estimate, validate_log
from cli_runner import run_command

TRUTH = {"mu_consult": 0.5, "d": 2.0, "sigma": 1.5}


def _fit(log):
    return st.fit(validate_log(log))


# ------------------------------------------------------------------ the engine's judge
def _messages(decision, payoffs, n=400_000, **mc):
    cfg = {"model": {"name": "messages", "p": 0.6, "rho": 1.0, "c_e": 0.0},
           "judge": {"kind": "logit", "lam": 1.3, "mu": 0.4},
           "messages": {"kappa_v": 0.7, "kappa_r": 0.9, "r_mean_true": 0.8,
                        "r_mean_false": -0.5, "r_sd": 1.2, "decision": decision, **mc},
           "equilibrium": {"payoffs": payoffs},
           "run": {"n_instances": n, "seed": 3, "progress": False, "figure": False}}
    return sim.simulate(cfg)


def test_favoured_judge_is_the_normal_cdf_exactly_and_simulated():
    """With evidence on both sides (rho = 1), a judge who labels the answer its
    probability favours endorses a wrong consultant w.p. Phi((mu + kv + kr rF) /
    (kr sd)) and a wrong debater w.p. Phi((mu + kr (rF - rT)) / (kr sd sqrt 2))
    (lam > 0 drops out); a right one with rT and rF exchanged."""
    mu, kv, kr, rT, rF, sd = 0.4, 0.7, 0.9, 0.8, -0.5, 1.2
    amp_c = norm.cdf((mu + kv + kr * rF) / (kr * sd))
    fwc_c = norm.cdf((mu + kv + kr * rT) / (kr * sd))
    amp_d = norm.cdf((mu + kr * (rF - rT)) / (kr * sd * np.sqrt(2)))
    fwc_d = norm.cdf((mu + kr * (rT - rF)) / (kr * sd * np.sqrt(2)))
    ex = _messages("favoured", "exact")
    assert ex.amp.values == pytest.approx([amp_c, amp_d], abs=1e-12)
    assert ex.fwc.values == pytest.approx([fwc_c, fwc_d], abs=1e-12)
    assert ex.acc.values == pytest.approx([0.6 * fwc_c + 0.4 * (1 - amp_c),
                                           0.6 * fwc_d + 0.4 * (1 - amp_d)], abs=1e-12)
    mc = _messages("favoured", "simulated")
    for m in ("amp", "fwc", "acc"):
        z = (mc[m].values - ex[m].values) / mc[f"{m}_se"].values
        assert np.all(np.abs(z) < 5), (m, z)
    # the sampling judge is another model: its Amp differs
    assert abs(float(_messages("sample", "exact").amp[1]) - amp_d) > 0.01


def test_favoured_judge_with_a_recording_band():
    """Log-odds within +-band are recorded as even odds and labelled with the
    protagonist's answer w.p. tie: Amp = Phi((m - band) / s) + tie (Phi((m + band) / s)
    - Phi((m - band) / s)) with m, s the wrong side's index mean and spread."""
    mu, kv, kr, rT, rF, sd, band, tie = 0.4, 0.7, 0.9, 0.8, -0.5, 1.2, 0.3, 0.2
    m_c, s_c = 1.3 * (mu + kv + kr * rF), 1.3 * kr * sd
    m_d, s_d = 1.3 * (mu + kr * (rF - rT)), 1.3 * kr * sd * np.sqrt(2)

    def rec(m, s):
        above = norm.cdf((m - band) / s)
        return above + tie * (norm.cdf((m + band) / s) - above)

    ex = _messages("favoured", "exact", decision_band=band, decision_tie=tie)
    assert ex.amp.values == pytest.approx([rec(m_c, s_c), rec(m_d, s_d)], abs=1e-12)
    mc = _messages("favoured", "simulated", decision_band=band, decision_tie=tie)
    z = (mc.amp.values - ex.amp.values) / mc.amp_se.values
    assert np.all(np.abs(z) < 5), z
    with pytest.raises(Exception, match="apply to messages.decision=favoured"):
        _messages("sample", "exact", decision_band=band)


def test_labels_read_from_recorded_probabilities_fit_a_large_log():
    """300,000 rows recorded on a 0.01 grid with ties at 0.5 labelled against the
    protagonist: without the recording band the check flagged consultancy Amp as a
    poor fit at 5 million rows although the parameters were recovered; with it the
    label metrics are within what the fit predicts."""
    log = st.simulate_log(300_000, seed=1, n_judges=200)
    f = _fit(log)
    assert f.grid == 0.01 and f.band == pytest.approx(np.log(0.505 / 0.495))
    assert f.tie["consult"] == 0.0  # the generator labels 0.5 against the consultant
    pc = _check(log, n=1_000_000)
    lab = pc[pc.metric.isin(["amp", "acc", "fwc"])]
    assert not lab.poor.any(), lab


def test_favoured_decision_refused_for_strategic_rhetoric():
    with pytest.raises(Exception, match="messages.decision=favoured applies"):
        _messages("favoured", "exact", mode="strategic")
    with pytest.raises(Exception, match="messages.decision must be one of"):
        _messages("coin", "exact")


def test_draws_match_the_exact_path():
    """The vectorised evaluation used for the prediction intervals equals the messages
    model's exact path (normal cdf; adaptive quadrature for the sampling judge)."""
    f = _fit(st.simulate_log(3000, seed=4, roles="open", mu_debate=0.3, kappa_v=0.8,
                             rho=0.4))
    for prot in ("consult", "debate"):
        for dec in ("favoured", "sample"):
            cfg = st.engine_config(f, prot, 0.55, 0.4, decision=dec)
            cfg["equilibrium"]["payoffs"] = "exact"
            ex = sim.simulate(cfg)
            got = st.draw_metrics(f, prot, 0.55, 0.4, f.params[None, :], dec)
            i = 1 if prot == "debate" else 0
            for m in ("amp", "acc", "fwc"):
                assert got[m][0] == pytest.approx(float(ex[m][i]), abs=1e-10), (prot, dec, m)


# ------------------------------------------------------------------ the fit
def _covers(f, truth, conf=0.95):
    tab = f.table(conf)
    return {k: bool(tab.loc[k, "lo"] <= v <= tab.loc[k, "hi"]) for k, v in truth.items()}


def _coverage(reps, n_rows, **kw):
    truth = {k: kw.get(k, v) for k, v in TRUTH.items()}
    hits = {k: 0 for k in truth}
    for r in range(reps):
        f = _fit(st.simulate_log(n_rows, seed=1000 + r, **kw))
        for k, ok in _covers(f, truth).items():
            hits[k] += ok
    return hits


def test_intervals_cover_the_truth():
    """Judge-clustered t intervals (20 judges) cover the true parameters of simulated
    logs with probabilities censored at 0.01 / 0.99 and assigned debate roles:
    40 replications, at least 34 covering (Pr(Binomial(40, 0.95) <= 33) = 0.014)."""
    hits = _coverage(40, 1500)
    assert all(h >= 34 for h in hits.values()), hits


@pytest.mark.slow
def test_intervals_cover_the_truth_at_the_nominal_rate():
    reps = 300
    hits = _coverage(reps, 1500)
    assert all(0.92 <= h / reps <= 0.98 for h in hits.values()), hits


def test_recovery_with_open_roles_evidence_and_labels_only():
    truth = {"mu_consult": 0.5, "mu_debate": 0.4, "kappa_v": 1.0, "d": 2.0, "sigma": 1.5}
    f = _fit(st.simulate_log(8000, seed=5, roles="open", mu_debate=0.4, kappa_v=1.0,
                             rho=0.4))
    tab = f.table(0.95)
    for k, v in truth.items():
        assert abs(tab.loc[k, "value"] - v) < 4 * tab.loc[k, "se"], (k, tab.loc[k])
    # labels only: sigma is not identified; mu / sigma and d / sigma are (a probit)
    f = _fit(st.simulate_log(8000, seed=6, probabilities=False))
    tab = f.table(0.95)
    assert tab.loc["sigma", "value"] == 1.0 and tab.loc["sigma", "se"] == 0.0
    assert any("labels only" in n for n in f.notes)
    for k, v in (("mu_consult", 0.5 / 1.5), ("d", 2.0 / 1.5)):
        assert abs(tab.loc[k, "value"] - v) < 4 * tab.loc[k, "se"], (k, tab.loc[k])


def test_identification_notes_and_refusals():
    f = _fit(st.simulate_log(2000, seed=7))  # every side shows evidence: x constant
    assert "kappa_v" not in f.names and f.fixed["kappa_v"] == 0.0
    assert any("kappa_v not identified" in n for n in f.notes)
    assert "mu_debate" not in f.names and any("assigned debates" in n for n in f.notes)
    log = st.simulate_log(500, seed=8, probabilities=False, mu_consult=30.0, d=0.0,
                          share_debate=0.0)
    with pytest.raises(st.FitError, match="never varies"):
        _fit(log)
    log = st.simulate_log(300, seed=9, roles="open")
    log.loc[0, "a"] = 2
    log.loc[0, "omega"] = 2
    with pytest.raises(st.FitError, match="two-answer"):
        st.fit(validate_log(log))


def test_relabelling_assigned_debaters_changes_nothing():
    """Which debater an assigned debate calls the protagonist is arbitrary: swapping it
    on a random half of the debates leaves every structural estimate unchanged."""
    log = st.simulate_log(2000, seed=10)
    f0 = _fit(log)
    rng = np.random.default_rng(0)
    sw = (log["protocol"] == "debate") & (rng.random(len(log)) < 0.5)
    log2 = log.copy()
    log2.loc[sw, "a"] = 1 - log2.loc[sw, "a"]
    log2.loc[sw, ["e_P", "e_A"]] = log2.loc[sw, ["e_A", "e_P"]].to_numpy()
    log2.loc[sw, "p_y"] = 1 - log2.loc[sw, "p_y"]
    f1 = _fit(log2)
    assert sw.sum() > 300
    np.testing.assert_allclose(f1.params, f0.params, atol=1e-7)
    np.testing.assert_allclose(f1.cov, f0.cov, rtol=1e-4, atol=1e-10)


# ------------------------------------------------------------------ the predictive check
def _check(log, n=200_000):
    df = validate_log(log)
    ds = estimate(df, EstimateOptions(n_resamples=400))
    return st.predictive_check(st.fit(df), df, ds, n=n, seed=1)


def test_check_passes_on_the_model_and_flags_a_misfit():
    """On a log drawn from the structural judge every observed metric lies within what
    the fit predicts; on a log whose debate judges read arguments far better than the
    consultancy judges (d 4 against 0.5), one (d, sigma) cannot fit both and the
    check says so, in numbers."""
    pc = _check(st.simulate_log(3000, seed=11))
    assert set(pc.metric) == {"amp", "acc", "fwc", "amp_prob"}
    assert not pc.poor.any(), pc
    assert (pc.predicted_lo <= pc.predicted).all() and (pc.predicted <= pc.predicted_hi).all()
    a = st.simulate_log(3000, seed=12, d=0.5, share_debate=0.0)
    b = st.simulate_log(3000, seed=13, d=4.0, share_debate=1.0)
    b["judge_id"] += 20
    import pandas as pd

    pc = _check(pd.concat([a, b], ignore_index=True))
    assert pc.poor.any(), pc
    assert pc.loc[pc.poor, "p_value"].min() < 1e-4


def test_cli_simulate_on_the_real_sample(tmp_path):
    """--structural-fit probabilities: the fit of the stated probabilities, stored with
    its reading (by default the reading the checks select is stored: the labels here)."""
    r = run_command("antiamp-estimate", ["--sample", "human_judges", "--simulate", "--n-sim",
                                         "100000", "--n-resamples", "300", "--out",
                                         tmp_path / "o", "--structural-fit", "probabilities"],
                    tmp_path)
    assert r.returncode == 0, r.stderr
    assert "structural judge" in r.stdout and "predicted" in r.stdout
    ds = xr.open_zarr(tmp_path / "o" / "estimates.zarr")
    assert ds.attrs["structural_reading"] == "probabilities"
    for m in ("amp", "acc", "amp_prob"):
        for suf in ("", "_lo", "_hi", "_se"):
            assert f"predicted_{m}{suf}" in ds, (m, suf)
        assert f"ppc_p_{m}" in ds
    assert list(ds.param.values)[:3] == ["mu_consult", "d", "sigma"]
    assert float(ds.structural_se.sel(param="mu_debate")) == 0.0  # fixed: assigned roles
    # the published accuracies are the observed values the prediction is checked against
    assert float(ds.acc.sel(protocol="consult", stratum="all")) == pytest.approx(0.740, abs=5e-4)
    assert float(ds.acc.sel(protocol="debate", stratum="all")) == pytest.approx(0.844, abs=5e-4)


def test_simulate_refuses_mixed_debate_roles(tmp_path):
    log = st.simulate_log(600, seed=14)
    log.loc[log.index[log.protocol == "debate"][:5], "role"] = "open"
    df = validate_log(log)
    ds = estimate(df, EstimateOptions(n_resamples=200))
    from antiamp.estimate import structural_check

    with pytest.raises(LogError, match="mix open and assigned"):
        structural_check(df, ds, 1000, 0)


def _small_separated_log(tmp_path):
    import pandas as pd
    from importlib.resources import files

    from antiamp.estimate import load_log

    raw = pd.read_csv(files("antiamp.data") / "sample_log.csv")
    small = raw.groupby("protocol").head(15).reset_index(drop=True).assign(judge_id=range(30))
    small.to_csv(tmp_path / "log.csv", index=False)
    return load_log(tmp_path / "log.csv")


def test_a_separated_log_fits_with_the_stated_prior(tmp_path):
    """Fifteen rows a protocol, each of its own judge: from labels alone the gap
    reading's maximum-likelihood fit runs off (separation; its Hessian singular at the
    point BFGS stops, or not quite, by the CPU).  It is fitted with the stated Cauchy
    prior, says so, and reports finite, positive standard errors: never NaN."""
    f = st.fit(_small_separated_log(tmp_path), protocol_gap=True)
    assert f.prior.startswith("independent Cauchy(0, s)")
    assert any("runs off" in n and "weakly informative prior" in n for n in f.notes)
    se = f.table(0.95)["se"].to_numpy()[:len(f.names)]
    assert np.all(np.isfinite(se)) and np.all(se > 0)
    assert np.all(np.abs(f.params) < st.RUNOFF)


def test_a_log_that_does_not_identify_the_fit_says_so():
    """A population of debaters seen only as right consultants (who have no dishonest
    side): its shift moves no row's likelihood.  The prior would bound it, but the rule
    reads the rows' information, so the fit refuses with the log's reason."""
    log = st.simulate_log(400, probabilities=False, seed=3)
    log["debaters"] = "A"
    right_consult = (log["protocol"] == "consult") & (log["a"] == log["omega"])
    log.loc[right_consult[right_consult].index[:20], "debaters"] = "B"
    with pytest.raises(st.FitError, match=r"singular Hessian\), so the log does not identify "
                                          r"all of mu_consult, d, delta\[B\].*"
                                          r"flattest combination 1.00 delta\[B\]"):
        st.fit(validate_log(log), debaters="debaters")


def _ulps(M, k, rng):
    """M with every entry moved k ulps up or down at random (symmetric kept)."""
    out = M.copy()
    for _ in range(k):
        up = rng.random(M.shape) < 0.5
        out = np.where(up, np.nextafter(out, np.inf), np.nextafter(out, -np.inf))
    return (out + out.T) / 2


def test_the_identification_rule_does_not_move_with_a_few_ulps():
    """The decision is a stated rule on the scaled information (smallest eigenvalue
    against IDENT_TOL), not whether a factorisation fails: an exactly singular
    information matrix (a flat combination) stays refused and a near-collinear but
    identified one stays accepted, with every entry moved a few ulps either way."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((40, 4))
    A[:, 3] = A[:, 0] - 2 * A[:, 1]  # exactly collinear: the fourth is not identified
    J_flat = A.T @ A
    B = A.copy()
    B[:, 3] += 1e-2 * rng.standard_normal(40)  # nearly collinear, still measured
    J_weak = B.T @ B
    assert not st.information_rule(J_flat).identified
    assert st.information_rule(J_weak).identified
    for k in (1, 2, 4, 8):
        for _ in range(20):
            assert not st.information_rule(_ulps(J_flat, k, rng)).identified
            assert st.information_rule(_ulps(J_weak, k, rng)).identified
    J0 = J_flat.copy()
    J0[:, 2] = J0[2, :] = 0.0  # a parameter the rows say nothing about
    assert not st.information_rule(J0).identified
