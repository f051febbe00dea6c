"""sim.theory against the seed's closed forms as printed, and against brute-force enumeration."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import seed_formulas as sf
import antiamp as sim
from oracle import enumerate_model, _panel_prob
from antiamp.judge import jury_majority

prob = st.floats(0.0, 1.0)
inner = st.floats(0.01, 0.99)
acc_p = st.floats(0.5, 0.99)


def th(**kw):
    cfg = {"model": {}, "judge": {}, "welfare": {}}
    for k, v in kw.items():
        sec, name = k.split("__")
        cfg[sec][name] = v
    return sim.theory(cfg)


@given(rho=prob, b=prob, p=acc_p)
def test_tiebreak_results_1_2_and_accuracy(rho, b, p):
    t = th(model__rho=rho, model__p=p, judge__b=b)
    amp_c, amp_d = t.amp.values
    assert amp_c == pytest.approx(sf.amp_consult_tiebreak(rho, b), abs=1e-12)
    assert amp_d == pytest.approx(sf.amp_debate_tiebreak(rho, b), abs=1e-12)
    assert t.fwc.values[0] == pytest.approx(sf.fwc_consult_tiebreak(rho, b), abs=1e-12)
    assert t.fwc.values[1] == pytest.approx(sf.fwc_debate_tiebreak(rho, b), abs=1e-12)
    assert t.acc.values[0] == pytest.approx(sf.acc_consult_tiebreak(rho, b, p), abs=1e-12)
    assert t.acc.values[1] == pytest.approx(sf.acc_debate_tiebreak(rho, b, p), abs=1e-12)
    assert float(t.amp_gap) == pytest.approx(rho * (1 - b), abs=1e-12)
    assert float(t.acc_gap) == pytest.approx(sf.acc_gap_tiebreak(rho, b, p), abs=1e-12)
    # Seed: in debate ties happen only when the false side fabricates.
    assert t.tie_rate.values[1] == pytest.approx(rho, abs=1e-12)
    assert t.rho_eq_P.values[1] == pytest.approx(rho, abs=1e-12)
    assert t.rho_eq_A.values[1] == pytest.approx(rho, abs=1e-12)
    if rho > 1e-9:
        assert t.b_hat.values[1] == pytest.approx(b, abs=1e-12)


@given(rho=prob, b=prob, p=acc_p, alpha=st.floats(0, 5), beta=st.floats(0, 20),
       dc=st.floats(-1, 1))
def test_welfare_result_3(rho, b, p, alpha, beta, dc):
    t = th(model__rho=rho, model__p=p, judge__b=b, welfare__alpha=alpha, welfare__beta=beta,
           welfare__delta_c=dc)
    expected = sf.welfare_diff_tiebreak(rho, b, p, alpha, beta, dc)
    assert float(t.welfare_diff) == pytest.approx(expected, abs=1e-9)
    assert float(t.welfare.values[1] - t.welfare.values[0]) == pytest.approx(expected, abs=1e-9)
    assert float(t.beta_threshold) == pytest.approx(sf.beta_threshold(alpha, p), rel=1e-12)
    # Debate is preferred exactly above the threshold (Delta C = 0, rho (1 - b) > 0).
    if dc == 0 and rho * (1 - b) > 1e-6 and abs(beta - sf.beta_threshold(alpha, p)) > 1e-6:
        assert (expected > 0) == (beta > sf.beta_threshold(alpha, p))


@given(rho=prob, lam=st.floats(0.05, 10), mu=st.floats(-3, 3), kappa=st.floats(0, 5))
def test_logit_result_1_prime(rho, lam, mu, kappa):
    t = th(model__rho=rho, judge__kind="logit", judge__lam=lam, judge__mu=mu, judge__kappa=kappa)
    assert t.amp.values[0] == pytest.approx(sf.amp_consult_logit(rho, lam, mu, kappa), abs=1e-12)
    assert t.amp.values[1] == pytest.approx(sf.amp_debate_logit(rho, lam, mu, kappa), abs=1e-12)
    if kappa > 0.01 and 0.01 < rho < 0.99:
        assert t.amp.values[1] < t.amp.values[0]


@given(b=prob, n=st.integers(1, 9))
def test_jury_b_n_seed_sum_and_enumeration(b, n):
    # The seed's sum counts k = n/2 for the protagonist: jury_tie = 1.
    assert float(jury_majority(b, n, tie=1.0)) == pytest.approx(sf.b_n(b, n), abs=1e-12)
    for tie in (0.0, 0.5, 1.0):
        assert float(jury_majority(b, n, tie)) == pytest.approx(_panel_prob(b, n, tie), abs=1e-12)
    if n % 2:  # odd juries have no vote ties: the rule for even n does not matter
        assert float(jury_majority(b, n, 0.0)) == pytest.approx(sf.b_n(b, n), abs=1e-12)


@given(rho=inner, b=prob, n=st.sampled_from([1, 3, 5, 7]))
def test_jury_amp_is_rho_b_n(rho, b, n):
    t = th(model__rho=rho, judge__b=b, judge__jury_size=n)
    assert t.amp.values[1] == pytest.approx(rho * sf.b_n(b, n), abs=1e-12)


def test_jury_direction_matches_seed():
    """b < 1/2: b_n falls with n; b > 1/2: it rises (seed, section 4)."""
    lo = [float(jury_majority(0.3, n)) for n in (1, 3, 5, 9, 15)]
    hi = [float(jury_majority(0.7, n)) for n in (1, 3, 5, 9, 15)]
    assert all(np.diff(lo) < 0) and all(np.diff(hi) > 0)


# The prior: the edges exactly, else away from floating-point underflow.  With a fixed
# stance the conditioning event of Amp has probability pi or 1 - pi, and at a
# subnormal pi (hypothesis found pi = 5e-324) the closed form and the enumeration
# divide different underflowed products; the comparison is then meaningless.
prior = st.one_of(st.sampled_from([0.0, 1.0]), st.floats(1e-9, 1 - 1e-9))

general = dict(
    pi=prior, p=acc_p, rho=prob, x_pc=prob, x_pd=prob, x_a=prob,
    kind=st.sampled_from(["tiebreak", "logit"]), b=prob, lam=st.floats(0.1, 5),
    mu=st.floats(-2, 2), kappa=st.floats(0, 4), n=st.integers(1, 6), jury_tie=prob,
    d=prob, alpha=st.floats(0, 3), beta=st.floats(0, 3), dc=st.floats(-1, 1),
    fixed=st.booleans(), a_fixed=st.integers(0, 1),
)


@given(**general)
def test_theory_matches_enumeration_everywhere(pi, p, rho, x_pc, x_pd, x_a, kind, b, lam, mu,
                                               kappa, n, jury_tie, d, alpha, beta, dc, fixed,
                                               a_fixed):
    d = d if kind == "tiebreak" else 0.0
    cfg = {
        "model": {"pi": pi, "p": p, "rho": rho, "x_P_consult": x_pc, "x_P": x_pd, "x_A": x_a,
                  "stance": "fixed" if fixed else "signal", "a": a_fixed},
        "judge": {"kind": kind, "b": b, "lam": lam, "mu": mu, "kappa": kappa, "jury_size": n,
                  "jury_tie": jury_tie},
        "protocol": {"consult_default": d},
        "welfare": {"alpha": alpha, "beta": beta, "delta_c": dc},
    }
    t = sim.theory(cfg)
    ref = enumerate_model(pi, p, rho, x_pc, x_pd, x_a, kind, b, lam, mu, kappa, n, jury_tie, d,
                          alpha, beta, dc, fixed, a_fixed)
    for i, prot in enumerate(("consult", "debate")):
        for name, want in ref[prot].items():
            got = float(t[name].values[i])
            if math.isnan(want):
                assert math.isnan(got) or name == "b_hat", (prot, name)
            else:
                assert got == pytest.approx(want, abs=1e-9), (prot, name)


def _class_probability_by_hand(pi, p, rho, x_pc, x_pd, x_a, fixed, a):
    """The 32 class probabilities of one cell, one class at a time from the model's
    description: omega, whether the stance is correct, the protagonist's evidence
    (t_P, then one uniform for both protocols' presentation), the antagonist's."""
    out = np.zeros(32)
    for k in range(32):
        om, corr, epc, epd, ea = (k >> 4) & 1, (k >> 3) & 1, (k >> 2) & 1, (k >> 1) & 1, k & 1
        pr = pi if om else 1 - pi
        if fixed:
            pr *= 1.0 if corr == (om == a) else 0.0
        else:
            pr *= p if corr else 1 - p
        tp = 1.0 if corr else rho
        lo, hi = min(x_pc, x_pd), max(x_pc, x_pd)
        # u < x presents: both when u < lo, exactly the larger one's protocol in [lo, hi)
        if epc and epd:
            given = lo
        elif epc:
            given = hi - lo if x_pc > x_pd else 0.0
        elif epd:
            given = hi - lo if x_pd > x_pc else 0.0
        else:
            given = 1 - hi
        pr *= tp * given + (1 - tp) * (epc == 0 and epd == 0)
        ta = rho if corr else 1.0
        pr *= ta * (x_a if ea else 1 - x_a) + (1 - ta) * (ea == 0)
        out[k] = pr
    return out


def test_class_probabilities_equal_the_classes_written_out():
    from antiamp.metrics import class_probabilities

    rng = np.random.default_rng(7)
    C, E = 40, 3
    pi, p, rho = rng.uniform(size=(3, C, 1))
    xs = rng.uniform(size=(3, C, E))
    xs[:, :5] = np.round(xs[:, :5])  # pure strategies and ties between the protocols
    xs[0, 5:8] = xs[1, 5:8]
    fixed = rng.uniform(size=(C, 1)) < 0.3
    a = rng.integers(0, 2, size=(C, 1))
    got = class_probabilities(pi, p, rho, xs[0], xs[1], xs[2], fixed, a)
    assert got.shape == (C, E, 32)
    for i in range(C):
        for e in range(E):
            want = _class_probability_by_hand(pi[i, 0], p[i, 0], rho[i, 0], xs[0, i, e],
                                              xs[1, i, e], xs[2, i, e], fixed[i, 0], a[i, 0])
            np.testing.assert_allclose(got[i, e], want, rtol=0, atol=1e-15)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-14)
    # scalars in, [32] out
    one = class_probabilities(0.3, 0.8, 0.4, 1.0, 0.5, 0.2, False, 1)
    assert one.shape == (32,)
    np.testing.assert_allclose(one, _class_probability_by_hand(0.3, 0.8, 0.4, 1.0, 0.5, 0.2,
                                                                False, 1), atol=1e-15)
