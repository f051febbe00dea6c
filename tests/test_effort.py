"""Endogenous judge attention: limits, a closed-form first-order condition, certificates."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

import seed_formulas as sf
from antiamp.models.signals import effort as ef
from antiamp.models.signals import core as sg
from antiamp.extended import solve_extended, to_ext_config


def at(ds, var, prot, e=0):
    return float(ds[var].sel(protocol=prot).isel(equilibrium=e))


@given(t=st.floats(0, 1), rho=st.floats(0.01, 0.99), lam=st.floats(0.2, 3), mu=st.floats(-1.5, 1.5),
       kappa=st.floats(0.1, 3), lg=st.floats(0, 4), kg=st.floats(0, 2))
@settings(max_examples=30, deadline=None)
def test_fixed_attention_gives_the_logit_closed_forms(t, rho, lam, mu, kappa, lg, kg):
    ds = solve_extended({"model": {"p": 0.8, "rho": rho},
                         "judge": {"kind": "logit", "lam": lam, "mu": mu, "kappa": kappa},
                         "effort": {"enabled": True, "t_fixed": t, "lam_gain": lg,
                                    "kappa_gain": kg}})
    lt, kt = lam * (1 + lg * t), kappa * (1 + kg * t)
    assert at(ds, "amp", "debate") == pytest.approx(sf.amp_debate_logit(rho, lt, mu, kt), abs=1e-12)
    assert at(ds, "amp", "consult") == pytest.approx(sf.amp_consult_logit(rho, lt, mu, kt), abs=1e-12)
    assert at(ds, "t_star", "debate") == t


@given(t=st.floats(0, 2), rho=st.floats(0.01, 0.99), b=st.floats(0, 1), vmax=st.floats(0, 1))
@settings(max_examples=30, deadline=None)
def test_checks_scale_the_fabrication_rate(t, rho, b, vmax):
    # A presented false artifact survives the check w.p. 1 - v(t): rho -> rho (1 - v(t)).
    ds = solve_extended({"model": {"p": 0.7, "rho": rho}, "judge": {"b": b},
                         "effort": {"enabled": True, "t_fixed": t, "t_max": 2.0, "v_max": vmax,
                                    "v_rate": 1.5}})
    r = rho * (1 - vmax * (1 - np.exp(-1.5 * t)))
    assert at(ds, "amp", "consult") == pytest.approx(sf.amp_consult_tiebreak(r, b), abs=1e-12)
    assert at(ds, "amp", "debate") == pytest.approx(sf.amp_debate_tiebreak(r, b), abs=1e-12)
    assert at(ds, "acc", "debate") == pytest.approx(sf.acc_debate_tiebreak(r, b, 0.7), abs=1e-12)


def foc_attention(p, rho, b, v_max, v_rate, c_J, gamma, load, protocol):
    """Independent solution of the judge's first-order condition with presenting dominant:
    Acc(t) = 1 - rho (1 - v(t)) K, K = 1 - p (consult) or p + b - 2 p b (debate),
    so d Acc/dt = rho K v_max v_rate exp(-v_rate t) = c_J load gamma t^(gamma - 1)."""
    K = (1 - p) if protocol == "consult" else (p + b - 2 * p * b)
    L = 1.0 if protocol == "consult" else load

    def foc(t):
        return rho * K * v_max * v_rate * np.exp(-v_rate * t) - c_J * L * gamma * t ** (gamma - 1)

    if foc(1.0) > 0:
        return 1.0
    return optimize.brentq(foc, 1e-12, 1.0, xtol=1e-14)


@pytest.mark.parametrize("c_J, load, b", [(0.02, 1.0, 0.5), (0.05, 2.0, 0.3), (0.1, 1.5, 0.7),
                                          (0.01, 3.0, 0.6)])
def test_equilibrium_attention_solves_the_first_order_condition(c_J, load, b):
    p, rho = 0.75, 0.4
    ds = solve_extended({"model": {"p": p, "rho": rho}, "judge": {"b": b},
                         "effort": {"enabled": True, "v_max": 0.9, "v_rate": 3.0, "c_J": c_J,
                                    "gamma": 2.0, "load": load}})
    for prot in ("consult", "debate"):
        assert int(ds.n_equilibria.sel(protocol=prot)) == 1
        ref = foc_attention(p, rho, b, 0.9, 3.0, c_J, 2.0, load, prot)
        assert at(ds, "t_star", prot) == pytest.approx(ref, abs=1e-7)
        assert at(ds, "epsilon", prot) < 1e-9


def test_free_attention_is_maximal_and_costly_attention_collapses():
    base = {"model": {"p": 0.75, "rho": 0.4}, "judge": {"b": 0.5}}
    cheap = solve_extended({**base, "effort": {"enabled": True, "v_max": 0.9, "c_J": 1e-9}})
    dear = solve_extended({**base, "effort": {"enabled": True, "v_max": 0.9, "c_J": 5.0,
                                              "gamma": 1.0}})
    for prot in ("consult", "debate"):
        assert at(cheap, "t_star", prot) == pytest.approx(1.0, abs=1e-9)
        assert at(dear, "t_star", prot) == 0.0
        assert bool(dear.collapse.sel(protocol=prot).isel(equilibrium=0))


@pytest.mark.parametrize("cfg", [
    {"model": {"p": 0.7, "rho": 0.45, "c_e": 0.1}, "judge": {"kind": "logit", "lam": 1.0,
                                                            "mu": 0.4, "kappa": 1.2},
     "signals": {"eta": 0.3, "phi": 0.5},
     "effort": {"enabled": True, "lam_gain": 2.0, "kappa_gain": 0.5, "v_max": 0.5,
                "c_J": 0.08, "load": 1.7}},
    # Debate's best response lies between the last two grid points (0.9967), with a
    # grid maximum at t_max: the refinement must look inside the grid's last step.
    {"model": {"p": 0.75, "rho": 0.4, "c_e": 0.2}, "judge": {"b": 0.6},
     "effort": {"enabled": True, "v_max": 0.9, "c_J": float(np.geomspace(0.005, 1.0, 100)[2]),
                "load": float(np.linspace(1.0, 3.0, 100)[2])}},
], ids=["logit judge, correlated signals", "best response inside the grid's last step"])
def test_judge_best_response_by_brute_force(cfg):
    ds = solve_extended(cfg)
    c, _ = to_ext_config(cfg)
    w = sg.class_probabilities([c.model.pi], [sg.joint_table(c.signals, c.model.p)],
                               [sg.avail_table(c.signals, c.model.rho)])
    ts = np.linspace(0, 1, 20001)
    for k, prot in enumerate(("consult", "debate")):
        d = ds.sel(protocol=prot).isel(equilibrium=0)
        t_star = float(d.t_star)
        prof = sg.Profile(np.tile(d.x_P.values, (len(ts), 1)), np.tile(d.x_P.values, (len(ts), 1)),
                          np.tile(np.nan_to_num(d.x_A.values, nan=1.0), (len(ts), 1, 1)))
        Jc, Jd, v = ef.tables_at(c.effort, c.judge, c.protocol, ts)
        acc = sg.outcomes(np.repeat(w, len(ts), 0), prof, Jc, Jd, v, n=1)["acc"][0][:, k]
        U = acc - c.effort.c_J * (c.effort.load if k else 1.0) * ts ** c.effort.gamma
        assert U.max() <= float(d.judge_utility) + 1e-9
        assert abs(ts[U.argmax()] - t_star) < 2e-4
        # The senders' strategies are an equilibrium at t*: interim payoffs by direct sums.
        Jc1, Jd1, v1 = ef.tables_at(c.effort, c.judge, c.protocol, [t_star])
        eps = sg.certificate(w, sg.Profile(d.x_P.values[None], d.x_P.values[None],
                                           np.nan_to_num(d.x_A.values, nan=1.0)[None]),
                             Jc1, Jd1, v1, np.array([c.model.c_e]))[0, k]
        assert eps < 1e-9


def test_senders_mix_at_the_switch_point_when_attention_would_jump():
    # At this cell the antagonists who do not believe their stance stop presenting
    # as checks grow; the judge's best response jumps across that switch, and the
    # equilibrium has them mixing exactly at it.
    cfg = {"model": {"p": 0.75, "rho": 0.4, "c_e": 0.2}, "judge": {"b": 0.6},
           "effort": {"enabled": True, "v_max": 0.9, "v_rate": 3.0,
                      "c_J": float(np.geomspace(0.005, 1.0, 12)[4]), "load": 1.5}}
    ds = solve_extended(cfg)
    d = ds.sel(protocol="debate").isel(equilibrium=0)
    x = np.concatenate([d.x_P.values.ravel(), d.x_A.values.ravel()])
    assert np.any((x > 1e-6) & (x < 1 - 1e-6))
    assert float(d.epsilon) < 1e-9
    c, _ = to_ext_config(cfg)
    w = sg.class_probabilities([c.model.pi], [sg.joint_table(c.signals, c.model.p)],
                               [sg.avail_table(c.signals, c.model.rho)])
    Jc, Jd, v = ef.tables_at(c.effort, c.judge, c.protocol, [float(d.t_star)])
    _, uP, uA = sg.interim_payoffs(w, sg.Profile(np.ones((1, 2)), d.x_P.values[None],
                                                 d.x_A.values[None]), Jc, Jd, v, np.array([0.2]))
    inside = (d.x_A.values > 1e-6) & (d.x_A.values < 1 - 1e-6)
    assert np.all(np.abs(uA[0][..., 1] - uA[0][..., 0])[inside] < 1e-9)


def test_grid_game_equilibria_are_grid_points_with_grid_certificates():
    cfg = {"model": {"p": 0.75, "rho": 0.4}, "judge": {"b": 0.5},
           "effort": {"enabled": True, "v_max": 0.9, "c_J": 0.03, "refine": False, "n_grid": 21}}
    ds = solve_extended(cfg)
    grid = np.linspace(0, 1, 21)
    for prot in ("consult", "debate"):
        n = int(ds.n_equilibria.sel(protocol=prot))
        for e in range(n):
            t = at(ds, "t_star", prot, e)
            assert np.min(np.abs(grid - t)) < 1e-12
            assert at(ds, "epsilon", prot, e) < 1e-9
        ref = foc_attention(0.75, 0.4, 0.5, 0.9, 3.0, 0.03, 2.0, 1.0, prot)
        if n:
            assert abs(at(ds, "t_star", prot) - ref) <= 0.05 + 1e-12


def test_simulated_payoffs_give_the_exact_attention_within_sampling_error():
    cfg = {"model": {"p": 0.75, "rho": 0.4}, "judge": {"b": 0.5},
           "effort": {"enabled": True, "v_max": 0.9, "c_J": 0.05, "load": 2.0}}
    ex = solve_extended(cfg)
    sm = solve_extended({**cfg, "equilibrium": {"payoffs": "simulated"},
                         "run": {"n_instances": 2_000_000, "seed": 11}})
    for prot in ("consult", "debate"):
        assert at(sm, "t_star", prot) == pytest.approx(at(ex, "t_star", prot), abs=0.01)
        assert at(sm, "amp", prot) == pytest.approx(at(ex, "amp", prot),
                                                    abs=6 * at(sm, "amp_se", prot) + 2e-3)
    assert sm.attrs["kernel_calls"] == 1  # eta = 0: the cell is its own twin


def test_attention_grid_over_cost_and_load():
    ds = solve_extended({"model": {"p": 0.75, "rho": 0.4}, "judge": {"b": 0.5},
                         "effort": {"enabled": True, "v_max": 0.9},
                         "sweep": {"axes": {"effort": {"c_J": [0.01, 0.1, 1.0],
                                                       "load": [1.0, 3.0]}}}})
    assert ds.t_star.dims == ("c_J", "load", "protocol", "equilibrium")
    t = ds.t_star.isel(equilibrium=0)
    # Attention falls with its cost; debate's falls with its load, consultancy's does not.
    assert np.all(np.diff(t.sel(protocol="debate").values, axis=0) <= 1e-12)
    assert np.all(t.sel(protocol="debate", load=3.0) <= t.sel(protocol="debate", load=1.0) + 1e-12)
    np.testing.assert_allclose(t.sel(protocol="consult", load=3.0), t.sel(protocol="consult", load=1.0))
    assert "t_gap" in ds and "t_commit" in ds
    assert float(ds.epsilon.max()) < 1e-9
