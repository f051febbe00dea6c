"""Evidence plus rhetoric: logit limits, quadrature against simulation, strategic rhetoric."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special, stats

import antiamp as sim
import seed_formulas as sf
from antiamp import ConfigError
from antiamp.models.messages import core as msm
from antiamp.extended import solve_extended, to_ext_config


def run(messages, lam=1.0, mu=0.3, p=0.8, rho=0.3, c_e=0.0, **extra):
    return solve_extended({"extension": "messages", "judge": {"kind": "logit", "lam": lam, "mu": mu},
                           "model": {"p": p, "rho": rho, "c_e": c_e}, "messages": messages, **extra})


@given(rho=st.floats(0.01, 0.99), lam=st.floats(0.2, 3), mu=st.floats(-1.5, 1.5),
       kv=st.floats(0, 3), m_false=st.floats(-2, 2), mode=st.sampled_from(["exogenous", "strategic"]))
@settings(max_examples=30, deadline=None)
def test_no_weight_on_rhetoric_gives_the_logit_closed_forms(rho, lam, mu, kv, m_false, mode):
    ds = run({"mode": mode, "kappa_r": 0.0, "kappa_v": kv, "r_mean_false": m_false, "c_r": 0.1},
             lam=lam, mu=mu, rho=rho)
    assert float(ds.amp.sel(protocol="debate")) == pytest.approx(sf.amp_debate_logit(rho, lam, mu, kv), abs=1e-9)
    assert float(ds.amp.sel(protocol="consult")) == pytest.approx(sf.amp_consult_logit(rho, lam, mu, kv), abs=1e-9)


def test_quadrature_matches_adaptive_integration():
    mc = msm.MessagesConfig(kappa_r=0.9, r_mean_true=0.2, r_mean_false=1.1, r_sd=0.8)
    w, gd, gc = msm.exogenous_exact(0.7, 0.4, 1.3, 0.2, mc)
    # Class 0b011 (P wrong, e_P = 1, e_A = 1): r_P - r_A ~ N(1.1 - 0.2, 2 * 0.8^2).
    d = stats.norm(0.9, np.sqrt(2) * 0.8)
    ref, _ = integrate.quad(lambda x: special.expit(1.3 * (0.2 + 0.9 * x)) * d.pdf(x), -20, 20,
                            epsabs=1e-13)
    assert gd[3] == pytest.approx(ref, abs=1e-10)
    np.testing.assert_allclose(w.sum(), 1.0)


def _reference(a, s):
    """E[sigma(a + s Z)] by mpmath's 20-digit integration, split where it bends."""
    import mpmath as mp

    with mp.workdps(20):  # 20 digits: within 1e-21 of 30-digit integration (checked)
        f = lambda z: 1 / (1 + mp.e ** (-(a + s * z))) * mp.npdf(z)  # noqa: E731
        pts = sorted({-mp.inf, mp.mpf(-8), mp.mpf(0), mp.mpf(8), mp.inf, -mp.mpf(a) / s})
        return float(mp.quad(f, pts))


def test_quadrature_is_exact_at_any_steepness():
    """The exact path's integrals against 20-digit integration at random parameters,
    lam kappa up to 50 (Gauss-Hermite with 96 nodes erred by 2.4e-4 at lam kappa 3.5)."""
    rng = np.random.default_rng(2026)
    worst = 0.0
    for _ in range(150):
        lam, kappa = rng.uniform(0.1, 5), rng.uniform(0, 10)
        base, mean, var = rng.uniform(-3, 3), rng.uniform(-2, 2), rng.uniform(0.01, 8)
        got, bound = msm.expect_sigmoid(lam, base, kappa, mean, var)
        a, s = lam * (base + kappa * mean), lam * kappa * np.sqrt(var)
        want = float(special.expit(a)) if s == 0 else _reference(a, s)
        worst = max(worst, abs(got - want))
        assert bound < 1e-12
    assert worst < 1e-12, worst


def test_the_steep_case_of_the_issue():
    """debate follow-when-correct at a steep logistic: 0.510498, not Gauss-Hermite's 0.510260."""
    cfg = {"model": {"name": "messages", "p": 0.9078759580761534, "rho": 0.9751044295580812},
           "judge": {"kind": "logit", "lam": 2.578978019935161, "mu": 1.2740725486151123},
           "messages": {"mode": "exogenous", "kappa_v": 2.0312482853750824,
                        "kappa_r": 1.3632802588584416, "r_mean_true": 0.3123881208577879,
                        "r_mean_false": 1.2077091971083114, "r_sd": 1.9704448375614463}}
    ds = sim.simulate(cfg)
    # Reference: the same class mixture with every integral at 20 digits.
    mc = msm.MessagesConfig(kappa_v=2.0312482853750824, kappa_r=1.3632802588584416,
                            r_mean_true=0.3123881208577879, r_mean_false=1.2077091971083114,
                            r_sd=1.9704448375614463)
    lam, mu = 2.578978019935161, 1.2740725486151123
    w = msm.type_weights(0.9078759580761534, 0.9751044295580812).reshape(-1)
    num = den = 0.0
    for k in range(4, 8):  # the protagonist is right
        ep, ea = (k >> 1) & 1, k & 1
        a = lam * (mu + mc.kappa_v * (ep - ea) + mc.kappa_r * (mc.r_mean_true - mc.r_mean_false))
        s = lam * mc.kappa_r * np.sqrt(2) * mc.r_sd
        num += w[k] * _reference(a, s)
        den += w[k]
    assert float(ds.fwc.sel(protocol="debate")) == pytest.approx(num / den, abs=1e-12)
    assert abs(num / den - 0.510498) < 1e-6
    assert float(ds.quad_error.max()) < 1e-12


def test_the_quad_field_is_gone_with_a_clear_message():
    with pytest.raises(ConfigError, match="quad"):
        sim.simulate({"model": {"name": "messages"}, "judge": {"kind": "logit"},
                      "messages": {"quad": 400}})


@pytest.mark.parametrize("seed", [0, 1])
def test_simulation_agrees_with_quadrature(seed):
    msg = {"kappa_r": 0.8, "r_mean_false": 1.0, "r_sd": 1.2}
    ex = run(msg)
    sm = run(msg, equilibrium={"payoffs": "simulated"}, run={"n_instances": 2_000_000, "seed": seed})
    assert sm.attrs["n_instances"] >= 2_000_000
    for v in ("amp", "fwc", "acc", "endorse"):
        for prot in ("consult", "debate"):
            a, b = float(ex[v].sel(protocol=prot)), float(sm[v].sel(protocol=prot))
            s = float(sm[f"{v}_se"].sel(protocol=prot))
            assert abs(a - b) < 5 * s, (v, prot, a, b, s)


def test_simulation_is_thread_independent():
    from antiamp.runner import numba_threads

    mc = msm.MessagesConfig(kappa_r=0.8, r_mean_false=1.0)
    with numba_threads(1):
        a = msm.exogenous_simulated(0.8, 0.3, 1.0, 0.3, mc, 100_000, 5)
    b = msm.exogenous_simulated(0.8, 0.3, 1.0, 0.3, mc, 100_000, 5)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_multi_cell_kernel_gives_every_cell_its_own_sums(monkeypatch):
    """One pass of the random numbers for many cells must give each cell the counts and
    float sums of its own kernel call to the last bit, however the blocks are split."""
    rng = np.random.default_rng(11)
    rows = []
    for k in range(7):
        mc = msm.MessagesConfig(kappa_v=float(rng.uniform(0, 3)), kappa_r=float(rng.uniform(0, 1)),
                                r_mean_true=float(rng.uniform(-1, 1)),
                                r_mean_false=float(rng.uniform(-1, 1)),
                                r_sd=float(rng.uniform(0.2, 2)),
                                decision="favoured" if k % 3 == 2 else "sample",
                                decision_band=0.3 if k == 5 else 0.0)
        rows.append((float(rng.uniform(0.3, 1)), float(rng.uniform(0, 1)),
                     float(rng.uniform(0.2, 3)), float(rng.uniform(-1, 1)), mc))
    n = 50_000  # 13 blocks
    own = [msm.exogenous_simulated(*r, n, 7) for r in rows]
    monkeypatch.setattr(msm, "_CELL_BLOCK_BYTES", 7 * 40 * 8 * 3)  # 3 blocks a call
    for many in (msm.exogenous_simulated_cells(rows, n, 7),
                 msm.exogenous_simulated_cells(rows[::-1], n, 7)[::-1]):
        for (c1, s1, u1), (c2, s2, u2) in zip(own, many):
            np.testing.assert_array_equal(c1, c2)
            np.testing.assert_array_equal(s1, s2)
            assert u1 == u2


def test_rhetoric_favouring_falsehood_raises_amplification():
    ds = solve_extended({"extension": "messages", "judge": {"kind": "logit", "mu": 0.3},
                         "messages": {"kappa_r": 1.0},
                         "sweep": {"axes": {"messages": {"r_mean_false": [-1.0, 0.0, 1.0, 2.0]}}}})
    for prot in ("consult", "debate"):
        assert np.all(np.diff(ds.amp.sel(protocol=prot).values) > 0)


def test_strategic_rhetoric_is_an_equilibrium_with_equal_values():
    rng = np.random.default_rng(3)
    for _ in range(8):
        mc = msm.MessagesConfig(mode="strategic", kappa_v=rng.uniform(0.5, 3),
                                kappa_r=rng.uniform(0.1, 2), r_levels=int(rng.integers(2, 8)),
                                r_max=rng.uniform(0.5, 3), c_r=rng.uniform(0, 0.4))
        sc, sp, sa, (vP, vA), (ec, ed), _ = msm.strategic_equilibrium(
            rng.uniform(0.55, 0.95), rng.uniform(0.05, 0.9), rng.uniform(0.5, 2),
            rng.uniform(-1, 1), rng.uniform(0, 0.3), mc)
        assert abs(vP - vA) < 1e-9
        assert ec < 1e-9 and ed < 1e-9
        for sig in (sc, sp, sa):
            np.testing.assert_allclose(sig.sum(axis=1), 1.0)
        # A sender without evidence cannot present it.
        L = mc.r_levels
        assert np.all(sp[0, L:] == 0) and np.all(sa[0, L:] == 0)


def test_costly_rhetoric_is_not_used():
    ds = run({"mode": "strategic", "kappa_r": 0.5, "c_r": 10.0, "kappa_v": 2.0})
    assert np.all(ds.rhetoric_P.values == 0)
    assert float(ds.amp.sel(protocol="debate")) == pytest.approx(sf.amp_debate_logit(0.3, 1.0, 0.3, 2.0), abs=1e-9)


@pytest.mark.parametrize("bad, match", [
    ({"judge": {"kind": "tiebreak"}}, "set judge=logit"),
    ({"messages": {"mode": "chatty"}}, "messages.mode must be one of"),
    ({"messages": {"r_sd": 0}}, r"messages.r_sd must lie in \(0, 1,000,000\]"),
    ({"messages": {"kappa_r": -1}}, r"messages.kappa_r must lie in \[0, 1,000,000\]"),
    ({"model": {"c_e": 0.1}}, "set model.c_e=0"),
    ({"messages": {"r_levels": 100, "mode": "strategic"}}, "messages.r_levels must be an integer >= 1 and <= 41"),
])
def test_bad_input_names_the_field(bad, match):
    cfg = {"extension": "messages", "judge": {"kind": "logit"}}
    for k, v in bad.items():
        cfg[k] = {**cfg.get(k, {}), **v}
    with pytest.raises(ConfigError, match=match):
        to_ext_config(cfg)
