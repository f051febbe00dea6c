"""Juries of heterogeneous, correlated judges: closed forms, quadrature, direct simulation."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

import seed_formulas as sf
from antiamp import ConfigError
from antiamp.models.panel import core as pnm
from antiamp.extended import solve_extended, to_ext_config
from antiamp.runner import numba_threads


def independent_closed_form(q, n, rule, quota=2 / 3, tie=0.5, default=0.0):
    if rule == "majority":
        out = stats.binom.sf(n // 2, n, q)
        return out + (tie * stats.binom.pmf(n // 2, n, q) if n % 2 == 0 else 0.0)
    if rule == "supermajority":
        return stats.binom.sf(math.ceil(quota * n - 1e-12) - 1, n, q)
    if rule == "unanimity":
        return q ** n + default * (1 - q ** n - (1 - q) ** n)
    return special.ndtr(math.sqrt(n) * special.ndtri(q))  # mean of n noises below t


@given(q=st.floats(0.01, 0.99), n=st.integers(1, 30),
       rule=st.sampled_from(["majority", "supermajority", "unanimity", "confidence"]),
       default=st.floats(0, 1))
@settings(max_examples=80, deadline=None)
def test_independent_identical_judges_have_the_closed_forms(q, n, rule, default):
    pc = pnm.PanelConfig(size=n, rule=rule, default=default)
    m, se, _ = pnm.panel_probability_mc([q], pc, seed=0)
    assert se[0] == 0
    assert m[0] == pytest.approx(independent_closed_form(q, n, rule, default=default), abs=1e-10)
    if rule == "majority":
        assert m[0] == pytest.approx(sf.b_n(q, n) if n % 2 else m[0], abs=1e-10)


@pytest.mark.parametrize("rule", ["majority", "supermajority", "unanimity", "confidence"])
@pytest.mark.parametrize("icc", [0.2, 0.6, 0.95])
def test_correlated_panels_match_adaptive_quadrature(rule, icc):
    pc = pnm.PanelConfig(size=8, rule=rule, icc=icc, default=0.25, n_panels=40_000)
    qs = [0.2, 0.55, 0.8]
    m, se, _ = pnm.panel_probability_mc(qs, pc, seed=3)
    for q, mm, s in zip(qs, m, se):
        ref = pnm.panel_probability_exact(q, pc)
        assert abs(mm - ref) < 5 * s + 1e-12, (q, mm, ref, s)


@pytest.mark.parametrize("rule", ["majority", "supermajority", "unanimity", "confidence"])
@pytest.mark.parametrize("icc", [0.0, 0.2, 0.6, 0.95, 1.0])
def test_the_models_quadrature_matches_the_independent_one(rule, icc):
    qs = [0.0, 0.1, 0.45, 0.8, 1.0]
    for n in (1, 4, 9, 25):
        pc = pnm.PanelConfig(size=n, rule=rule, icc=icc, default=0.25)
        got = pnm.panel_probability_quad(qs, pc)
        for q, g in zip(qs, got):
            assert g == pytest.approx(pnm.panel_probability_exact(q, pc), abs=1e-11), (n, q)


@pytest.mark.parametrize("rule", ["majority", "supermajority", "unanimity", "confidence"])
def test_quadrature_when_every_judge_probability_is_0_or_1(rule):
    """Nothing to integrate (a tie-break judge at b = 0 or 1): every judge votes alike."""
    qs = [0.0, 1.0, 1.0, 0.0]
    pc = pnm.PanelConfig(size=5, rule=rule, icc=0.2, default=0.25)
    got = pnm.panel_probability_quad(qs, pc)
    assert got.tolist() == [pnm.panel_probability_exact(q, pc) for q in qs] == qs
    ds = solve_extended({"extension": "panel", "judge": {"b": 0.0},
                         "panel": {"method": "quadrature", "icc": 0.2}})
    assert float(ds.panel_table_se.max()) == 0


@pytest.mark.parametrize("rule", ["majority", "supermajority", "unanimity", "confidence"])
def test_quadrature_with_biased_judges_matches_the_kernel_and_direct_votes(rule):
    # The biases are integrated out in closed form: check against the kernel (which
    # draws them) and against votes drawn one by one.
    pc = pnm.PanelConfig(size=6, rule=rule, icc=0.3, bias_sd=0.7, default=0.4, n_panels=40_000)
    q = 0.62
    got = pnm.panel_probability_quad([q], pc)[0]
    m, se, _ = pnm.panel_probability_mc([q], pc, seed=9)
    assert abs(got - m[0]) < 5 * se[0]
    _, y = direct_votes(q, pc, 400_000, np.random.default_rng(4))
    assert abs(got - y.mean()) < 5 * y.std() / math.sqrt(len(y))


def test_both_methods_give_the_same_model_within_the_monte_carlo_error():
    cfg = {"extension": "panel", "judge": {"b": 0.4},
           "panel": {"size": 7, "icc": 0.4, "bias_sd": 0.5, "n_panels": 40_000}}
    ex = solve_extended(cfg)
    mc = solve_extended({**cfg, "panel": {**cfg["panel"], "method": "monte_carlo"}})
    assert float(ex.panel_table_se.max()) == 0 and float(mc.panel_table_se.max()) > 0
    assert np.all(np.abs(ex.panel_table - mc.panel_table) < 5 * mc.panel_table_se + 1e-12)
    amp = ex.amp.sel(protocol="debate")
    assert abs(float(amp - mc.amp.sel(protocol="debate"))) < 5 * float(
        mc.amp_panel_mc_error.sel(protocol="debate")) + 1e-12


@pytest.mark.parametrize("rule", ["majority", "unanimity", "confidence"])
def test_perfectly_correlated_judges_vote_as_one(rule):
    pc = pnm.PanelConfig(size=9, rule=rule, icc=1.0)
    for q in (0.3, 0.7):
        assert pnm.panel_probability_exact(q, pc) == pytest.approx(q, abs=1e-12)
    m, se, _ = pnm.panel_probability_mc([0.3, 0.7], pc, seed=5)
    assert np.all(np.abs(m - [0.3, 0.7]) < 5 * se)


def direct_votes(q, pc, draws, rng):
    """Votes drawn one by one from the latent model (no Rao-Blackwellisation)."""
    n = pc.size
    t = special.ndtri(q)
    z = rng.standard_normal((draws, 1))
    beta = pc.bias_sd * rng.standard_normal((draws, n))
    e = rng.standard_normal((draws, n))
    lat = t + beta - math.sqrt(pc.icc) * z - math.sqrt(1 - pc.icc) * e
    votes = lat > 0
    k = votes.sum(axis=1)
    if pc.rule == "majority":
        y = (k > n / 2) + (pc.tie * (k == n / 2))
    elif pc.rule == "unanimity":
        y = (k == n) + pc.default * ((k > 0) & (k < n))
    elif pc.rule == "supermajority":
        y = k >= math.ceil(pc.quota * n - 1e-12)
    else:
        y = lat.sum(axis=1) > 0
    return votes, y.astype(float)


@pytest.mark.parametrize("rule", ["majority", "supermajority", "unanimity", "confidence"])
def test_heterogeneous_panels_match_direct_simulation(rule):
    pc = pnm.PanelConfig(size=6, rule=rule, icc=0.3, bias_sd=0.7, default=0.4, n_panels=40_000)
    q = 0.62
    m, se, _ = pnm.panel_probability_mc([q], pc, seed=9)
    _, y = direct_votes(q, pc, 400_000, np.random.default_rng(1))
    se_direct = y.std() / math.sqrt(len(y))
    assert abs(m[0] - y.mean()) < 5 * math.hypot(se[0], se_direct)


@pytest.mark.parametrize("icc, bias_sd", [(0.3, 0.0), (0.6, 0.5), (0.9, 1.0)])
def test_vote_correlation_matches_direct_simulation(icc, bias_sd):
    pc = pnm.PanelConfig(size=2, icc=icc, bias_sd=bias_sd)
    votes, _ = direct_votes(0.4, pc, 400_000, np.random.default_rng(2))
    r = np.corrcoef(votes[:, 0], votes[:, 1])[0, 1]
    assert pnm.vote_correlation(0.4, icc, bias_sd) == pytest.approx(r, abs=0.01)


def test_effective_votes_limits():
    assert pnm.effective_votes(9, pnm.vote_correlation(0.4, 0.0)) == 9
    assert pnm.effective_votes(9, pnm.vote_correlation(0.4, 1.0)) == pytest.approx(1.0)
    assert 1 < pnm.effective_votes(9, pnm.vote_correlation(0.4, 0.3)) < 9


def test_results_do_not_depend_on_threads():
    pc = pnm.PanelConfig(size=7, icc=0.4, bias_sd=0.3, n_panels=5000)
    with numba_threads(1):
        a = pnm.panel_probability_mc([0.3, 0.6], pc, seed=11)
    b = pnm.panel_probability_mc([0.3, 0.6], pc, seed=11)
    np.testing.assert_array_equal(a[0], b[0])


@given(rho=st.floats(0.01, 0.99), b=st.floats(0.01, 0.99), n=st.integers(1, 15))
@settings(max_examples=25, deadline=None)
def test_independent_panel_in_the_model_gives_rho_b_n(rho, b, n):
    ds = solve_extended({"extension": "panel", "model": {"rho": rho}, "judge": {"b": b},
                         "panel": {"size": n}})
    bn = independent_closed_form(b, n, "majority")
    assert float(ds.amp.sel(protocol="debate")) == pytest.approx(rho * bn, abs=1e-10)
    assert float(ds.amp.sel(protocol="consult")) == pytest.approx(rho, abs=1e-12)
    assert float(ds.n_eff) == pytest.approx(n)


def test_shared_blind_spots_cap_what_a_jury_buys():
    ds = solve_extended({"extension": "panel", "judge": {"b": 0.4},
                         "sweep": {"axes": {"panel": {"size": [1, 5, 25], "icc": [0.0, 0.6]}}}})
    amp = ds.amp.sel(protocol="debate")
    # Independent judges: Amp keeps falling with size; correlated ones stall above it.
    assert float(amp.sel(size=25, icc=0.0)) < float(amp.sel(size=5, icc=0.0)) < float(amp.sel(size=1, icc=0.0))
    assert float(amp.sel(size=25, icc=0.6)) > 2 * float(amp.sel(size=25, icc=0.0))
    assert float(ds.n_eff.sel(size=25, icc=0.6)) < 3


@pytest.mark.parametrize("bad, match", [
    ({"panel": {"size": 0}}, "panel.size must be an integer >= 1"),
    ({"panel": {"rule": "plurality"}}, "panel.rule must be one of"),
    ({"panel": {"icc": 1.5}}, r"panel.icc must lie in \[0, 1\]"),
    ({"panel": {"quota": 0}}, r"panel.quota must lie in \(0, 1\]"),
    ({"panel": {"bias_sd": -1}}, r"panel.bias_sd must lie in \[0, 1,000,000\]"),
    ({"panel": {"method": "exact"}}, "panel.method must be one of quadrature, monte_carlo"),
    ({"judge": {"jury_size": 3}}, "leave judge.jury_size at 1"),
])
def test_bad_input_names_the_field(bad, match):
    with pytest.raises(ConfigError, match=match):
        to_ext_config({"extension": "panel", **bad})


@pytest.mark.parametrize("rule", ["majority", "supermajority", "unanimity", "confidence"])
@pytest.mark.parametrize("n, icc, bias_sd", [(9, 0.3, 0.5), (4, 0.0, 0.8), (6, 1.0, 0.4),
                                             (1, 0.6, 0.0), (12, 0.95, 1.5)])
def test_batched_kernel_is_the_panel_by_panel_one_to_the_bit(rule, n, icc, bias_sd):
    """The CPU launcher draws a block's words first and plays its panels side by side;
    its sums must be those of :func:`kernels.panel._panel` (the GPU's per-panel step)
    run panel by panel (tests/reference_kernels.py), to the last bit: every rule, odd
    and even panels (the majority's tie), icc 0 and 1 (no judge noise), q of 0 and 1
    (infinite thresholds) and a panel count that is not a whole number of blocks."""
    import reference_kernels
    from antiamp.kernels import panel as kp

    pc = pnm.PanelConfig(size=n, rule=rule, icc=icc, bias_sd=bias_sd, default=0.3, tie=0.4)
    need = pnm._rule_args(pc)[1]
    zq = special.ndtri(np.array([0.0, 0.2, 0.5, 0.77, 1.0]))
    args = (zq, n, pnm._rule_args(pc)[0], need, pc.tie, pc.default, icc, bias_sd,
            3 * kp.PANEL_BLOCK + 17, np.uint64(5), np.uint64(7), np.uint64(kp.STREAM))
    new = kp.panel_endorsement(*args)
    old = reference_kernels.panel_endorsement(*args)
    assert new[2] == old[2] == 4 * kp.PANEL_BLOCK
    np.testing.assert_array_equal(new[0], old[0])
    np.testing.assert_array_equal(new[1], old[1])
    assert np.all(np.isfinite(new[0])) and new[0].min() >= 0 and new[0].max() <= new[2]
