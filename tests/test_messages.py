"""Evidence plus rhetoric: logit limits, quadrature against simulation, strategic rhetoric."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special, stats

import seed_formulas as sf
from antiamp import ConfigError
from antiamp import messages as msm
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
    ({"messages": {"r_sd": 0}}, "messages.r_sd must be > 0"),
    ({"messages": {"kappa_r": -1}}, "messages.kappa_r must be >= 0"),
    ({"model": {"c_e": 0.1}}, "set model.c_e=0"),
    ({"messages": {"r_levels": 100, "mode": "strategic"}}, "messages.r_levels must be at most 41"),
])
def test_bad_input_names_the_field(bad, match):
    cfg = {"extension": "messages", "judge": {"kind": "logit"}}
    for k, v in bad.items():
        cfg[k] = {**cfg.get(k, {}), **v}
    with pytest.raises(ConfigError, match=match):
        to_ext_config(cfg)
