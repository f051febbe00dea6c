"""The field's metrics beside Amp in the models: the Agent Score Difference of every
protocol of every model that has Amp and follow-when-correct, the judge's ROC AUC where
the judge reads each transcript class with a probability, and the design command's
escalation curve (safety against the audit budget).

Oracles: the seed's closed forms (tie-break judge: Amp rho and rho b, fwc 1 and
1 - rho (1 - b), so ASD = 1 - rho in both protocols; the judge's reading ranks right
above wrong arguments with AUC 1 - rho / 2 in consultancy and 1 - rho^2 / 2 in
debate), scikit-learn's ``roc_auc_score`` on the instances the class counts stand
for, the spread of the estimates over independent seeds, and the design's own
protocols at the curve's end points.
"""

from __future__ import annotations

import numpy as np
import pytest

import antiamp
from antiamp import design as dz
from antiamp.metrics import CORRECT, judge_auc, judge_scores
from antiamp.registry import builtin_config, builtin_names

N = 20_000


def _example(name):
    return next(c for _, c in builtin_config(name).EXAMPLES
                if "sweep" not in c and "export" not in c)


@pytest.fixture(scope="module")
def cells():
    """One example cell of every built-in model."""
    return {name: antiamp.simulate(_example(name)) for name in builtin_names()}


# ------------------------------------------------------------------ ASD
@pytest.mark.parametrize("rho, b", [(0.3, 0.6), (0.7, 0.2), (0.5, 1.0)])
def test_asd_is_one_minus_rho_in_the_seeds_tiebreak_game(rho, b):
    """Seed 000 (presentation when feasible, gatekeeping consultancy): fwc - Amp =
    1 - rho in consultancy (1 - rho) and in debate ((1 - rho (1 - b)) - rho b); the
    simulated value within 5 standard errors of it."""
    cfg = {"model": {"rho": rho}, "judge": {"b": b}, "run": {"n_instances": N, "seed": 7}}
    ds = antiamp.simulate(cfg)
    np.testing.assert_allclose(ds.asd_exact.values, [1 - rho, 1 - rho], atol=1e-12)
    np.testing.assert_allclose(antiamp.theory(cfg).asd.values, [1 - rho, 1 - rho], atol=1e-12)
    z = (ds.asd.values - (1 - rho)) / ds.asd_se.values
    assert np.all(np.abs(z) < 5), z


def test_every_model_with_amp_and_fwc_carries_asd(cells):
    """ASD = fwc - Amp (value and exact value) in every model that reports both, with a
    standard error of the two in quadrature where they are estimated on the disjoint
    events a = omega and a != omega; the models without follow-when-correct carry none."""
    with_asd = []
    for name, ds in cells.items():
        if not {"amp", "fwc"} <= set(ds.data_vars):
            assert "asd" not in ds.data_vars, name
            continue
        with_asd.append(name)
        np.testing.assert_array_equal(ds.asd.values, ds.fwc.values - ds.amp.values,
                                      err_msg=name)
        assert ds.asd.attrs["units"] == "1"
        if "fwc_exact" in ds and "amp_exact" in ds:
            np.testing.assert_array_equal(ds.asd_exact.values,
                                          ds.fwc_exact.values - ds.amp_exact.values, name)
        if "fwc_se" in ds and "amp_se" in ds:
            want = np.hypot(ds.fwc_se.values, ds.amp_se.values)
            got = ds.asd_se.values
            if name == "compare":  # the mediations' Amp and fwc share a run: their own
                j = [i for i, p in enumerate(ds.protocol.values) if not p.startswith("foam")]
                want, got = want[j], got[j]
            if name != "panel":  # the panel's tables move both (test_standard_errors)
                np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=name)
        assert not antiamp.schema.problems(ds), (name, antiamp.schema.problems(ds))
    assert {"baseline", "compare", "confidence", "mediation", "redeliberation",
            "signals", "panel"} <= set(with_asd)


@pytest.mark.parametrize("name", ["confidence", "mediation", "redeliberation"])
def test_asd_se_matches_its_spread_in_the_models_outside_the_se_suite(name):
    """The models whose standard errors tests/test_standard_errors.py does not cover:
    ASD's (fwc and Amp in quadrature) matches the spread of ASD over 30 seeds (0.6 to
    1.5, as there); entries not estimated in every seed (a claim type never seen wrong)
    are left out."""
    ex = _example(name)
    vals, ses = [], []
    for s in range(30):
        ds = antiamp.simulate({**ex, "run": {**ex.get("run", {}), "seed": 100 + s}})
        vals.append(ds.asd.values)
        ses.append(ds.asd_se.values)
    vals, ses = np.array(vals), np.array(ses)
    ok = np.isfinite(vals).all(axis=0) & np.isfinite(ses).all(axis=0) & (ses.mean(axis=0) > 0)
    assert ok.sum() >= 2, name
    ratio = vals.std(axis=0, ddof=1)[ok] / ses.mean(axis=0)[ok]
    assert np.all((ratio > 0.6) & (ratio < 1.5)), (name, ratio)


def test_compare_mediation_asd_se_matches_its_spread():
    """compare's mediations: Amp = ((1 - a) - p (1 - a0)) / (1 - p) and fwc = a0 from
    two runs, so ASD = (a + (1 - 2p) a0 + p - 1) / (1 - p) and its standard error is
    hypot(se_a, (1 - 2p) se_a0) / (1 - p) (the delta method by central differences of
    that expression agrees); it matches the spread of ASD over 40 seeds.  (The
    quadrature of fwc's and Amp's errors overstates it by about 10% here, too little
    for 40 seeds to tell apart.)"""
    from antiamp.models.compare import core as cmp
    from antiamp.registry import to_model_config

    _, c = to_model_config({**_example("compare"), "model": {"name": "compare", "p": 0.8}})
    mp = cmp.mapped(c)
    j = list(cmp.NAMES).index("foam_memo")
    runs = [cmp.simulate(c, 4000, s, mp=mp) for s in range(40)]
    asd = np.array([r["asd"][0][j] for r in runs])
    se = np.mean([r["asd"][1][j] for r in runs])
    ratio = asd.std(ddof=1) / se
    assert 0.6 < ratio < 1.5, ratio
    # the value and its delta-method error from the two accuracies by differences
    from dataclasses import replace

    from antiamp.models.mediation import core as md

    p, r = 0.8, runs[0]
    full = md.simulate(mp.mediation, 4000, 0)
    clean = md.simulate(replace(mp.mediation, flaws=0.0), 4000, (0 * 1_000_003 + 7) % 2 ** 63)
    a, sa = full["acc"][0][0], full["acc"][1][0]
    a0, sa0 = clean["acc"][0][0], clean["acc"][1][0]

    def f(a, a0):
        return a0 - ((1 - a) - p * (1 - a0)) / (1 - p)  # fwc - Amp

    h = 1e-6
    g = np.array([(f(a + h, a0) - f(a - h, a0)) / (2 * h),
                  (f(a, a0 + h) - f(a, a0 - h)) / (2 * h)])
    assert r["asd"][0][j] == pytest.approx(f(a, a0), abs=1e-12)
    assert r["asd"][1][j] == pytest.approx(np.sqrt((g ** 2 * [sa ** 2, sa0 ** 2]).sum()),
                                           rel=1e-6)


# ------------------------------------------------------------------ AUC
@pytest.mark.parametrize("rho, b", [(0.3, 0.6), (0.6, 0.3)])
def test_auc_closed_forms_of_the_tiebreak_judge(rho, b):
    """Right arguments always show evidence, wrong ones with rho: consultancy's
    reading J_c(1) = 1 > J_c(0) = 0 ties on rho of the wrong ones (AUC 1 - rho / 2),
    debate's J(1, 0) = 1 > b > J(0, 1) = 0 ties when both sides show evidence (rho^2:
    AUC 1 - rho^2 / 2)."""
    cfg = {"model": {"rho": rho}, "judge": {"b": b}, "run": {"n_instances": N, "seed": 3}}
    ds = antiamp.simulate(cfg)
    want = [1 - rho / 2, 1 - rho ** 2 / 2]
    np.testing.assert_allclose(ds.auc_exact.values, want, atol=1e-12)
    z = (ds.auc.values - want) / ds.auc_se.values
    assert np.all(np.abs(z) < 5), z


@pytest.mark.parametrize("cfg", [
    {"model": {"rho": 0.4}, "judge": {"b": 0.6}},
    {"model": {"rho": 0.5, "p": 0.7, "pi": 0.3}, "judge": {"kind": "logit", "mu": 0.3,
                                                           "kappa": 1.5}},
    {"model": {"rho": 0.6, "stance": "fixed", "a": 1, "pi": 0.4},
     "judge": {"kind": "logit", "jury_size": 3}},
], ids=["tiebreak", "logit", "fixed-jury"])
def test_auc_is_scikit_learns_on_the_instances_the_counts_stand_for(cfg):
    """The simulated AUC equals scikit-learn's roc_auc_score over the instances (each
    class's count of copies of its reading J and its truth label)."""
    from sklearn.metrics import roc_auc_score

    ds = antiamp.simulate({**cfg, "run": {"n_instances": 5000, "seed": 11}})
    counts = ds.class_counts.values
    for k, J in enumerate(judge_scores(ds.judge_table_consult.values, ds.judge_table.values)):
        y = np.repeat(CORRECT, counts)
        s = np.repeat(J, counts)
        assert float(ds.auc.values[k]) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
        # the same with the counts as sample weights (no expansion)
        assert float(ds.auc.values[k]) == pytest.approx(
            roc_auc_score(CORRECT, J, sample_weight=counts), abs=1e-12)


def test_auc_se_matches_its_spread_over_seeds():
    """The delta-method standard error of the AUC matches the standard deviation of the
    estimate over 60 independent seeds (0.6 to 1.5: the sample SD's own error at K = 60
    is about 9%), and that of independent samples drawn from the exact class
    probabilities directly (another 400 multinomial draws: 0.8 to 1.25)."""
    cfg = {"model": {"rho": 0.5, "p": 0.7}, "judge": {"kind": "logit", "mu": 0.2}}
    runs = [antiamp.simulate({**cfg, "run": {"n_instances": 5000, "seed": s}})
            for s in range(60)]
    auc = np.array([r.auc.values for r in runs])
    se = np.array([r.auc_se.values for r in runs]).mean(axis=0)
    ratio = auc.std(axis=0, ddof=1) / se
    assert np.all((ratio > 0.6) & (ratio < 1.5)), ratio
    # multinomial draws from the exact probabilities: the planning SE at n
    r0 = runs[0]
    th = antiamp.theory({**cfg, "run": {"n_instances": 5000}})
    rng = np.random.default_rng(5)
    prob = None
    from antiamp.metrics import class_probabilities

    prob = class_probabilities(0.5, 0.7, 0.5, 1.0, 1.0, 1.0, False, 1)
    scores = judge_scores(r0.judge_table_consult.values, r0.judge_table.values)
    draws = rng.multinomial(5000, prob, size=400)
    for k, J in enumerate(scores):
        vals = judge_auc(draws, J)[0]
        assert 0.8 < vals.std(ddof=1) / float(th.auc_se.values[k]) < 1.25
        assert float(th.auc.values[k]) == pytest.approx(float(judge_auc(prob, J, n=5000)[0]))


def test_auc_over_reading_groups_is_the_auc_over_classes():
    """Counting pairs over (group, truth) cells gives the per-class value and error."""
    from antiamp.metrics import READING_GROUPS

    rng = np.random.default_rng(2)
    w = rng.integers(0, 50, (40, 32)).astype(float)
    J = judge_scores(rng.random((40, 2)), rng.random((40, 2, 2)))
    for s, g in zip(J, READING_GROUPS):
        a, b = judge_auc(w, s), judge_auc(w, s, groups=g)
        np.testing.assert_allclose(b[0], a[0], atol=1e-14)
        np.testing.assert_allclose(b[1], a[1], atol=1e-14)


@pytest.mark.parametrize("shape", [(60,), (7, 9), (3, 4, 5)])
def test_auc_of_a_cell_has_the_same_bits_alone_and_inside_any_grid(shape):
    """A sweep writes a block's AUC computed over one batch of cells and its
    verification recomputes it over another, so each cell's value and standard error
    must not depend on the cells beside it: every cell of a grid equals, bit for bit,
    the same cell computed alone (per class and over reading groups)."""
    from antiamp.metrics import READING_GROUPS

    rng = np.random.default_rng(3)
    w = rng.random((*shape, 32))
    w /= w.sum(axis=-1, keepdims=True)
    s = rng.random((*shape, 32))
    for g in (None, *READING_GROUPS):
        auc, se = judge_auc(w, s, n=1000, groups=g)
        for idx in np.ndindex(*shape):
            one = judge_auc(w[idx], s[idx], n=1000, groups=g)
            assert (one[0], one[1]) == (auc[idx], se[idx]), (idx, g)
        # and a non-contiguous view of the same weights
        auc_t, se_t = judge_auc(np.swapaxes(w, 0, -2) if len(shape) > 1 else w[::1],
                                np.swapaxes(s, 0, -2) if len(shape) > 1 else s, n=1000,
                                groups=g)
        if len(shape) > 1:
            auc_t, se_t = np.swapaxes(auc_t, 0, -1), np.swapaxes(se_t, 0, -1)
        np.testing.assert_array_equal(auc_t, auc)
        np.testing.assert_array_equal(se_t, se)


def test_auc_is_nan_without_right_or_wrong_arguments():
    w = np.zeros(32)
    w[CORRECT == 1] = 3.0
    auc, se = judge_auc(w, np.linspace(0, 1, 32))
    assert np.isnan(auc) and np.isnan(se)


# ------------------------------------------------------------------ escalation curve
TIE = dz.Judge("tiebreak", b=0.4, p=0.7, rho=0.5)
LOGIT = dz.Judge("logit", lam=1.3, mu=0.4, kappa=1.8, p=0.75, rho=0.6)
STRUCT = dz.Judge("structural", mu_c=0.5, mu_d=0.1, kappa_v=1.0, gap=2.2, sigma=1.4,
                  p=0.7, rho=0.4)


@pytest.mark.parametrize("v", [0.0, 0.3])
def test_escalation_curve_of_the_tiebreak_judge_is_its_closed_form(v):
    """Tie-break judge (d = 0): escalating on failed evidence ratifies a wrong answer
    only when its evidence passes (rho') and, audited, the tie goes its way (b):
    safety 1 - rho' (1 - a (1 - b)) at budget a + (1 - a)(1 - p)(1 - rho'); random
    audits alone mix consultancy (Amp rho') and debate (rho' b)."""
    P = dz._params(TIE, 1, 0)
    a = np.linspace(0, 1, 11)
    c = dz.escalation_curve(1, v, P, audit=a)
    r = TIE.rho * (1 - v)
    e = c[c.flag == "no_evidence"]
    np.testing.assert_allclose(e.safety, 1 - r * (1 - a * (1 - TIE.b)), atol=1e-14)
    np.testing.assert_allclose(e.budget, a + (1 - a) * (1 - TIE.p) * (1 - r), atol=1e-14)
    n_ = c[c.flag == "none"]
    np.testing.assert_allclose(n_.safety, 1 - ((1 - a) * r + a * r * TIE.b), atol=1e-14)
    np.testing.assert_allclose(n_.budget, a, atol=0)


@pytest.mark.parametrize("judge", [TIE, LOGIT, STRUCT], ids=["tiebreak", "logit", "structural"])
@pytest.mark.parametrize("n, rule", [(1, "majority"), (3, "majority"), (5, "two_thirds")])
def test_escalation_curve_ends_at_the_designs_protocols(judge, n, rule):
    """No audit: random audits alone are consultancy, escalation on failed evidence is
    the ``escalate`` design (its Amp, accuracy and escalated share); every case
    audited: both are debate (:func:`outcomes`, an independent code path)."""
    P = dz._params(judge, 1, 0)
    v = 0.2
    c = dz.escalation_curve(n, v, P, rule)
    ends = {(f, a): r for f in dz.FLAGS for a, r in
            ((0, c[c.flag == f].iloc[0]), (1, c[c.flag == f].iloc[-1]))}
    for (flag, a), prot in {("none", 0): "consult", ("no_evidence", 0): "escalate",
                            ("none", 1): "debate", ("no_evidence", 1): "debate"}.items():
        amp, acc = dz.outcomes(prot, n, v, P, rule)
        row = ends[(flag, a)]
        assert row.safety == pytest.approx(1 - amp[0], abs=1e-12), (flag, a, prot)
        assert row.acc == pytest.approx(acc[0], abs=1e-12), (flag, a, prot)
    assert ends[("no_evidence", 0)].budget == pytest.approx(
        dz.escalated_share("escalate", v, P)[0], abs=1e-15)
    assert ends[("none", 0)].budget == 0 and ends[("none", 1)].budget == 1
    assert ends[("no_evidence", 1)].budget == 1
    # safety moves monotonically with the budget along each curve (audits add debate)
    for f in dz.FLAGS:
        s = c[c.flag == f].safety.to_numpy()
        d = np.diff(s)
        assert np.all(d >= -1e-12) or np.all(d <= 1e-12), f


def test_escalation_curve_refuses_audit_rates_outside_0_1():
    with pytest.raises(dz.DesignError, match=r"audit rates must lie in \[0, 1\]"):
        dz.escalation_curve(1, 0.0, dz._params(TIE, 1, 0), audit=[0.5, 1.2])
