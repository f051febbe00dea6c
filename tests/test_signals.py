"""Correlated signals: limits, exact enumeration against simulation, Gambit, bad input."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import seed_formulas as sf
from gambit_games import gambit_signals_equilibria
from antiamp import ConfigError
from antiamp.models.signals import core as sg
from antiamp.registry import to_model_config
from antiamp import solve as solve_baseline
from antiamp.extended import solve_extended, to_ext_config
from antiamp.judge import judge_tables


def cell_weights(cfg):
    c, _ = to_ext_config(cfg)
    pi, joint, avail = c.model.pi, sg.joint_table(c.signals, c.model.p), \
        sg.avail_table(c.signals, c.model.rho)
    return c, sg.class_probabilities([pi], [joint], [avail])[0]


# ------------------------------------------------------------------ signal structure
@given(p_P=st.floats(0.01, 0.99), p_A=st.floats(0.01, 0.99), frac=st.floats(-1, 1))
@settings(max_examples=60, deadline=None)
def test_joint_table_has_the_requested_margins_and_correlation(p_P, p_A, frac):
    s = sg.SignalsConfig(p_P=p_P, p_A=p_A, eta=frac, eta_mode="fraction")
    t = sg.joint_table(s, 0.8)
    eta = sg.resolved_eta(s, p_P, p_A)
    for om in (0, 1):
        assert t[om].sum() == pytest.approx(1, abs=1e-12)
        assert t[om][om, :].sum() == pytest.approx(p_P, abs=1e-12)  # Pr(s_P = omega)
        assert t[om][:, om].sum() == pytest.approx(p_A, abs=1e-12)
        both = t[om][om, om]
        corr = (both - p_P * p_A) / math.sqrt(p_P * (1 - p_P) * p_A * (1 - p_A))
        assert corr == pytest.approx(eta, abs=1e-9)
    lo, hi = sg.eta_range(p_P, p_A)
    assert lo - 1e-12 <= eta <= hi + 1e-12


def test_infeasible_eta_is_refused_with_the_feasible_range():
    with pytest.raises(ConfigError, match=r"signals.eta=0.9 is infeasible.*\[-0.408248, 0.612372\]"):
        to_ext_config({"model": {"p": 0.8}, "signals": {"eta": 0.9, "p_A": 0.6}})
    lo, hi = sg.eta_range(0.8, 0.6)
    assert (lo, hi) == pytest.approx((-0.4082483, 0.6123724), abs=1e-6)


@pytest.mark.parametrize("bad, match", [
    ({"signals": {"phi": 1.5}}, r"signals.phi must lie in \[0, 1\]"),
    ({"signals": {"eta_mode": "relative"}}, "signals.eta_mode must be one of absolute, fraction"),
    ({"signals": {"joint": [[[0.5, 0.5], [0, 0]], [[0.2, 0.2], [0.2, 0.2]]]}},
     r"signals.joint\[1\].*must sum to 1"),
    ({"signals": {"joint": [[0.5, 0.5], [0.5, 0.5]]}}, "2 x 2 x 2 table"),
    ({"signals": {"avail": [[1, 1.2], [0.3, 0.3]]}}, r"signals.avail entries must lie in \[0, 1\]"),
    ({"model": {"stance": "fixed"}}, "needs model.stance=signal"),
    ({"signals": {"eta": 2.0, "eta_mode": "fraction"}}, r"signals.eta must lie in \[-1, 1\]"),
    ({"signals": {"p_A": -0.1}}, r"signals.p_A must lie in \[0, 1\]"),
    ({"effort": {"gamma": 0.5}}, r"effort.gamma must lie in \[1, 1,000,000\]"),
    ({"effort": {"lam_gain": 1.0}}, "logit judge only"),
    ({"effort": {"n_grid": 2}}, "effort.n_grid must be an integer >= 3"),
    ({"signals": {"nope": 1}}, "nope"),
])
def test_bad_input_names_the_field(bad, match):
    with pytest.raises(ConfigError, match=match):
        to_ext_config(bad)


def test_class_probabilities_match_an_independent_enumeration():
    cfg = {"model": {"p": 0.7, "rho": 0.35, "pi": 0.4},
           "signals": {"p_A": 0.6, "eta": 0.25, "phi": 0.45, "rho_unbelieved": 0.2}}
    c, w = cell_weights(cfg)
    p_P, p_A, rho, phi, ru = 0.7, 0.6, 0.35, 0.45, 0.2
    both = p_P * p_A + 0.25 * math.sqrt(p_P * (1 - p_P) * p_A * (1 - p_A))
    ref = np.zeros(32)
    for om, cp, ca, tp, ta in itertools.product((0, 1), repeat=5):
        pc = {(1, 1): both, (1, 0): p_P - both, (0, 1): p_A - both,
              (0, 0): 1 - p_P - p_A + both}[cp, ca]
        sp, sa = (om if cp else 1 - om), (om if ca else 1 - om)
        a = sp
        avail_P = 1.0 if a == om else rho  # P always believes its stance
        a_stance_true = (1 - a) == om
        believes = sa == 1 - a
        avail_A = (1.0 if believes else phi) if a_stance_true else (rho if believes else ru)
        pr = (0.4 if om else 0.6) * pc * (avail_P if tp else 1 - avail_P) * \
            (avail_A if ta else 1 - avail_A)
        ref[16 * om + 8 * sp + 4 * sa + 2 * tp + ta] += pr
    np.testing.assert_allclose(w, ref, atol=1e-15)


def test_kernel_counts_agree_with_exact_class_probabilities():
    cfg = {"model": {"p": 0.7, "rho": 0.35, "pi": 0.4}, "signals": {"p_A": 0.6, "eta": 0.25,
                                                                    "phi": 0.45}}
    c, w = cell_weights(cfg)
    n = 2_000_000
    cnt = sg.class_counts([0.4], [sg.joint_table(c.signals, 0.7)],
                          [sg.avail_table(c.signals, 0.35)], n, seed=7)[0]
    assert cnt.sum() == n
    se = np.sqrt(n * w * (1 - w))
    z = (cnt - n * w) / np.where(se > 0, se, 1)
    assert np.all(cnt[w == 0] == 0)
    assert np.max(np.abs(z)) < 5, z
    # Chunking and threads do not change a bit.
    a = sg.class_counts([0.4], [sg.joint_table(c.signals, 0.7)],
                        [sg.avail_table(c.signals, 0.35)], 300_001, seed=7, chunk_size=4097)
    b = sg.class_counts([0.4], [sg.joint_table(c.signals, 0.7)],
                        [sg.avail_table(c.signals, 0.35)], 300_001, seed=7, n_threads=1)
    np.testing.assert_array_equal(a, b)


def test_fused_single_cell_kernel_equals_the_multi_cell_kernel():
    import numba

    from antiamp.kernels import correlated as kc
    from antiamp.kernels.rng import split_seed

    k0, k1 = split_seed(12345)
    tables = [sg.SignalsConfig(p_A=0.7, eta=0.4, phi=0.4, rho_unbelieved=0.2),
              sg.SignalsConfig(joint=[[[0.1, 0.2], [0.3, 0.4]], [[0.25, 0.25], [0.4, 0.1]]],
                               avail=[[0.9, 0.3], [0.6, 0.05]])]
    thr = sg.thresholds([0.45, 0.6], [sg.joint_table(s, 0.75) for s in tables],
                        [sg.avail_table(s, 0.35) for s in tables])
    nb_ = 4 * numba.get_num_threads()
    multi = kc.signal_class_counts(thr, 17, 500_003, k0, k1, np.uint64(kc.STREAM), nb_)
    for c in range(2):
        one = kc.signal_class_counts_one(thr[c], 17, 500_003, k0, k1, np.uint64(kc.STREAM), nb_)
        np.testing.assert_array_equal(one, multi[c])


# ------------------------------------------------------------------ limits
@given(p=st.floats(0.55, 0.99), rho=st.floats(0.01, 0.99), b=st.floats(0.0, 1.0),
       frac=st.floats(-1, 1))
@settings(max_examples=40, deadline=None)
def test_free_evidence_with_full_efficacy_gives_the_baseline_closed_forms(p, rho, b, frac):
    # With phi = 1 the antagonist's belief does not matter and c_e = 0 makes
    # presenting weakly dominant: every eta gives the seed's Result 1 and accuracy.
    ds = solve_extended({"model": {"p": p, "rho": rho}, "judge": {"b": b},
                         "signals": {"eta": frac, "eta_mode": "fraction"}})
    d = ds.isel(equilibrium=0)
    assert float(d.amp.sel(protocol="consult")) == pytest.approx(sf.amp_consult_tiebreak(rho, b), abs=1e-12)
    assert float(d.amp.sel(protocol="debate")) == pytest.approx(sf.amp_debate_tiebreak(rho, b), abs=1e-12)
    assert float(d.acc.sel(protocol="debate")) == pytest.approx(sf.acc_debate_tiebreak(rho, b, p), abs=1e-12)
    assert float(d.acc.sel(protocol="consult")) == pytest.approx(sf.acc_consult_tiebreak(rho, b, p), abs=1e-12)
    assert float(ds.diversity_value.sel(protocol="debate")) == pytest.approx(0, abs=1e-12)


@given(rho=st.floats(0.01, 0.99), lam=st.floats(0.1, 5), mu=st.floats(-2, 2),
       kappa=st.floats(0, 4))
@settings(max_examples=30, deadline=None)
def test_logit_judge_limit(rho, lam, mu, kappa):
    ds = solve_extended({"model": {"p": 0.8, "rho": rho}, "judge": {"kind": "logit", "lam": lam,
                                                                    "mu": mu, "kappa": kappa},
                         "signals": {"eta": 0.0}, "equilibrium": {"tol": 1e-9}})
    d = ds.isel(equilibrium=0)
    assert float(d.amp.sel(protocol="debate")) == pytest.approx(
        sf.amp_debate_logit(rho, lam, mu, kappa), abs=1e-12)
    assert float(d.amp.sel(protocol="consult")) == pytest.approx(
        sf.amp_consult_logit(rho, lam, mu, kappa), abs=1e-12)


def test_perfectly_shared_blind_spots_leave_debate_no_better_than_consultancy():
    # eta = 1: when P is wrong A is wrong too and argues a true stance it does not
    # believe; with phi = 0 it never finds evidence, so debate's counter-signal vanishes.
    ds = solve_extended({"model": {"p": 0.8, "rho": 0.3}, "judge": {"b": 0.0},
                         "signals": {"eta": 1.0, "phi": 0.0}})
    d = ds.isel(equilibrium=0)
    assert float(ds.shared_blind_spot) == pytest.approx(1.0)
    assert float(d.counter_signal.sel(protocol="debate")) == pytest.approx(0.0, abs=1e-12)
    assert float(d.amp.sel(protocol="debate")) == pytest.approx(
        float(d.amp.sel(protocol="consult")), abs=1e-12)
    # Independent errors restore it: at eta = 0 A has the truth's evidence whenever
    # its own signal is right (probability p_A), so the gap is rho p_A with b = 0.
    assert float(ds.amp_eta0.sel(protocol="consult") - ds.amp_eta0.sel(protocol="debate")) == \
        pytest.approx(0.3 * 0.8, abs=1e-12)


def test_amp_grows_with_error_correlation_when_efficacy_is_low():
    ds = solve_extended({"model": {"p": 0.8, "rho": 0.3}, "judge": {"b": 0.5},
                         "signals": {"phi": 0.2, "eta_mode": "fraction"},
                         "sweep": {"axes": {"signals": {"eta": {"linspace": [0, 1, 11]}}}}})
    amp = ds.amp.isel(equilibrium=0).sel(protocol="debate").values
    assert np.all(np.diff(amp) > 0)
    assert np.all(ds.diversity_value.sel(protocol="debate").values[1:] > 0)


def test_full_joint_table_equals_the_eta_parametrisation():
    s = sg.SignalsConfig(p_A=0.7, eta=0.3)
    joint = sg.joint_table(s, 0.8).tolist()
    common = {"model": {"p": 0.8, "rho": 0.4, "c_e": 0.45}, "judge": {"b": 0.75}}
    a = solve_extended({**common, "signals": {"p_A": 0.7, "eta": 0.3, "phi": 0.5}})
    b = solve_extended({**common, "signals": {"joint": joint, "phi": 0.5}})
    for v in ("amp", "acc", "x_P", "x_A"):
        np.testing.assert_allclose(a[v].values, b[v].values, atol=1e-12)
    assert float(b.eta_used) == pytest.approx(0.3, abs=1e-9)


# ------------------------------------------------------------------ equilibria
def random_game(seed):
    rng = np.random.default_rng(seed)
    b = rng.uniform(0.05, 0.95)
    return {"model": {"p": rng.uniform(0.55, 0.95), "rho": rng.uniform(0.1, 0.9),
                      "pi": rng.uniform(0.3, 0.7),
                      "c_e": rng.uniform(min(b, 1 - b), max(b, 1 - b))},
            "judge": {"b": b},
            "signals": {"p_A": rng.uniform(0.55, 0.95), "eta": rng.uniform(-0.2, 0.6) * 0.5,
                        "phi": rng.uniform(0.1, 1.0)}}


@pytest.mark.parametrize("seed", range(12))
def test_equilibria_match_gambit(seed):
    cfg = random_game(seed)
    c, w = cell_weights(cfg)
    _, J = judge_tables(c.judge, c.protocol)
    ref = gambit_signals_equilibria(w, c.model.c_e, J)
    ds = solve_extended(cfg).sel(protocol="debate")
    n = int(ds.n_equilibria)
    ours = [(ds.x_P.values[e], ds.x_A.values[e]) for e in range(n)]
    assert len(ours) == len(ref)
    for xp, xa in ref:
        assert any(np.max(np.abs(xp - u)) < 1e-7 and np.max(np.abs(xa - v)) < 1e-7
                   for u, v in ours), (xp, xa, ours)
    assert float(ds.epsilon.max()) < 1e-9


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("method", ["br", "qre", "root"])
def test_general_engine_finds_only_enumerated_equilibria(seed, method):
    # The general engine is an independent path: what it certifies must be in the
    # enumerated set.  (Damped best response cannot reach an unstable mixed
    # equilibrium; it then reports the starts that failed.)
    cfg = random_game(100 + seed)
    a = solve_extended(cfg).sel(protocol="debate")
    g = solve_extended({**cfg, "equilibrium": {"method": method}})
    ours = [(a.x_P.values[e], a.x_A.values[e]) for e in range(int(a.n_equilibria))]
    gd = g.sel(protocol="debate")
    if method == "qre":
        assert int(gd.n_equilibria) >= 1
    if int(gd.n_equilibria) == 0:
        assert "no equilibrium reached" in g.attrs["solver_report"]
    for e in range(int(gd.n_equilibria)):
        xp, xa = gd.x_P.values[e], gd.x_A.values[e]
        assert any(np.max(np.abs(xp - u)) < 1e-6 and np.max(np.abs(xa - v)) < 1e-6
                   for u, v in ours)


@pytest.mark.parametrize("seed", range(6))
def test_uninformative_antagonist_signal_reduces_to_the_baseline_game(seed):
    # p_A = 1/2 and eta = 0: A's signal says nothing, its two types are payoff-identical
    # and its pooled presentation rate must be the baseline solver's x_A (segment end
    # points average to it); pi = 1/2 makes P's two types identical too.
    rng = np.random.default_rng(seed)
    b = rng.uniform(0.05, 0.95)
    common = {"model": {"p": rng.uniform(0.55, 0.95), "rho": rng.uniform(0.1, 0.9),
                        "c_e": rng.uniform(min(b, 1 - b), max(b, 1 - b))}, "judge": {"b": b}}
    base = solve_baseline(common).sel(protocol="debate")
    ext = solve_extended({**common, "signals": {"p_A": 0.5}}).sel(protocol="debate")
    nb = int(base.n_equilibria)
    ref = {(round(float(base.x_P[e]), 7), round(float(base.x_A[e]), 7)) for e in range(nb)}
    pooled = {(round(float(ext.x_P.values[e, 0]), 7), round(float(ext.x_A.values[e, 0].mean()), 7))
              for e in range(int(ext.n_equilibria))}
    assert pooled == ref
    np.testing.assert_allclose(ext.x_P.values[:int(ext.n_equilibria), 0],
                               ext.x_P.values[:int(ext.n_equilibria), 1], atol=1e-9)


def test_simulated_payoffs_agree_with_exact_within_standard_errors():
    cfg = {"model": {"p": 0.75, "rho": 0.35, "c_e": 0.45, "pi": 0.5}, "judge": {"b": 0.7},
           "signals": {"p_A": 0.7, "eta": 0.4, "phi": 0.4}}
    ex = solve_extended(cfg)
    sim_ = solve_extended({**cfg, "equilibrium": {"payoffs": "simulated"},
                           "run": {"n_instances": 2_000_000, "seed": 3}})
    assert sim_.attrs["kernel_calls"] >= 1
    assert int(ex.n_equilibria.sel(protocol="debate")) == int(sim_.n_equilibria.sel(protocol="debate"))
    for v in ("amp", "acc", "fwc", "counter_signal"):
        a = ex[v].isel(equilibrium=0).sel(protocol="debate").values
        b = sim_[v].isel(equilibrium=0).sel(protocol="debate").values
        se = sim_[f"{v}_se"].isel(equilibrium=0).sel(protocol="debate").values
        # Strategies are re-solved on the simulated payoffs: allow their error too.
        assert abs(a - b) < 6 * se + 2e-3, (v, a, b, se)
    # Outcomes of the *exact* equilibrium profile from counts: within 5 SE.
    c, w = cell_weights(cfg)
    cnt = sg.class_counts([0.5], [sg.joint_table(c.signals, 0.75)],
                          [sg.avail_table(c.signals, 0.35)], 2_000_000, seed=3)
    d = ex.sel(protocol="debate").isel(equilibrium=0)
    prof = sg.Profile(np.ones((1, 2)), d.x_P.values[None], d.x_A.values[None])
    Jc, Jd = judge_tables(c.judge, c.protocol)
    o_sim = sg.outcomes(cnt, prof, Jc[None], Jd[None], np.zeros(1))
    o_ex = sg.outcomes(w[None], prof, Jc[None], Jd[None], np.zeros(1), n=1)
    for v in ("amp", "acc", "fwc", "tie_rate", "counter_signal"):
        m, s = o_sim[v][0][0, 1], o_sim[v][1][0, 1]
        assert abs(m - o_ex[v][0][0, 1]) < 5 * s, (v, m, o_ex[v][0][0, 1], s)


def test_grid_with_simulated_payoffs_uses_one_kernel_call():
    ds = solve_extended({"model": {"p": 0.8, "rho": 0.3},
                         "signals": {"eta_mode": "fraction", "phi": 0.5},
                         "sweep": {"axes": {"signals": {"eta": [0.0, 0.5, 1.0]}}},
                         "equilibrium": {"payoffs": "simulated"},
                         "run": {"n_instances": 200_000}})
    # One call for the grid, one for its eta = 0 twins.
    assert ds.attrs["kernel_calls"] == 2
    assert ds.amp.dims == ("eta", "protocol", "equilibrium")
    assert float(ds.epsilon.max()) < 1e-9


def test_sweep_cell_errors_name_the_cell():
    with pytest.raises(ConfigError, match=r"sweep cell \(eta=.*signals.eta=.*infeasible"):
        solve_extended({"model": {"p": 0.8}, "signals": {"p_A": 0.6},
                        "sweep": {"axes": {"signals": {"eta": [0.0, 0.9]}}}})


# ------------------------------------------------------------------ rhetoric
def test_rhetoric_without_belief_effects_matches_the_messages_model():
    common = {"model": {"p": 0.8, "rho": 0.3}, "judge": {"kind": "logit", "lam": 1.1, "mu": 0.2,
                                                         "kappa": 1.7}}
    a = solve_extended({**common, "signals": {"p_A": 0.5, "kappa_r": 0.9, "r_sd": 1.3}})
    b = solve_extended({**common, "extension": "messages",
                        "messages": {"kappa_v": 1.7, "kappa_r": 0.9, "r_sd": 1.3}})
    for prot in ("consult", "debate"):
        assert float(a.amp.sel(protocol=prot).isel(equilibrium=0)) == pytest.approx(
            float(b.amp.sel(protocol=prot)), abs=1e-10)
        assert float(a.acc.sel(protocol=prot).isel(equilibrium=0)) == pytest.approx(
            float(b.acc.sel(protocol=prot)), abs=1e-10)


def test_an_antagonist_arguing_against_its_belief_persuades_less():
    ds = solve_extended({"model": {"p": 0.8, "rho": 0.3},
                         "judge": {"kind": "logit", "mu": 0.2, "kappa": 1.5},
                         "signals": {"eta": 1.0, "kappa_r": 1.0},
                         "sweep": {"axes": {"signals": {"r_gap": [0.0, 0.5, 1.0, 2.0]}}}})
    amp = ds.amp.isel(equilibrium=0).sel(protocol="debate").values
    assert np.all(np.diff(amp) > 0)
    np.testing.assert_allclose(ds.amp.isel(equilibrium=0).sel(protocol="consult").values,
                               ds.amp.isel(equilibrium=0).sel(protocol="consult").values[0])


@pytest.mark.parametrize("seed", range(4))
def test_rhetoric_equilibria_match_gambit(seed):
    cfg = random_game(300 + seed)
    cfg["judge"] = {"kind": "logit", "lam": 1.5, "mu": 0.2, "kappa": 0.6}
    cfg["model"]["c_e"] = 0.25
    cfg["signals"].update({"kappa_r": 0.8, "r_gap": 1.0})
    c, w = cell_weights(cfg)
    _, J = sg.rhetoric_tables(1.5, 0.2, 0.6, 0.8, 1.0, 1.0)
    ref = gambit_signals_equilibria(w, c.model.c_e, J)
    ds = solve_extended(cfg).sel(protocol="debate")
    n = int(ds.n_equilibria)
    ours = [(ds.x_P.values[e], ds.x_A.values[e]) for e in range(n)]
    assert len(ours) == len(ref)
    for xp, xa in ref:
        assert any(np.max(np.abs(xp - u)) < 1e-7 and np.max(np.abs(xa - v)) < 1e-7
                   for u, v in ours)
    assert float(ds.epsilon.max()) < 1e-9


def test_rhetoric_needs_a_logit_judge():
    with pytest.raises(ConfigError, match="signals.kappa_r .* needs one logit judge"):
        to_ext_config({"signals": {"kappa_r": 0.5}})
    with pytest.raises(ConfigError, match=r"signals.r_sd must lie in \(0, 1,000,000\]"):
        to_ext_config({"judge": {"kind": "logit"}, "signals": {"kappa_r": 0.5, "r_sd": 0}})


# ------------------------------------------------------------------ a grid's blocks
BLOCK_GRIDS = {
    "simulated": {"model": {"name": "signals", "c_e": 0.4}, "judge": {"b": 0.7},
                  "signals": {"eta_mode": "fraction"},
                  "equilibrium": {"payoffs": "simulated"}, "run": {"n_instances": 4000},
                  "sweep": {"axes": {"signals": {"eta": [-0.5, 0.0, 0.6], "phi": [0.2, 1.0]},
                                     "model": {"p": [0.7, 0.85]},
                                     "welfare": {"alpha": [0.5, 1.0]}}}},
    "fixed attention": {"model": {"name": "signals", "c_e": 0.2},
                        "judge": {"kind": "logit", "mu": 0.3},
                        "effort": {"enabled": True, "v_max": 0.6, "lam_gain": 1.0},
                        "sweep": {"axes": {"effort": {"t_fixed": [0.0, 0.4]},
                                           "judge": {"lam": [0.5, 2.0]},
                                           "signals": {"eta": [0.0, 0.3], "p_A": [0.6, 0.9]}}}},
    "rhetoric": {"model": {"name": "signals"}, "judge": {"kind": "logit", "mu": 0.3},
                 "sweep": {"axes": {"signals": {"kappa_r": [0.0, 1.0], "r_gap": [0.0, 0.7],
                                                "eta": [0.0, 0.5]},
                                    "model": {"rho": [0.2, 0.6]}}}},
}


@pytest.mark.parametrize("name", list(BLOCK_GRIDS))
def test_a_block_from_its_columns_equals_its_cells_each_on_its_own(name):
    """A grid's block is solved from its columns, each input (signal tables, judge
    tables, class distribution) once per distinct combination of the fields it reads;
    the same cells as a list of configs, each computed on its own, give the same
    Dataset value for value."""
    import xarray as xr

    from antiamp.models.signals.model import solve_cells
    from antiamp.sweeps.spec import CellBlock, plan_grid

    plan = plan_grid(BLOCK_GRIDS[name])
    block = solve_cells(plan.base, CellBlock(plan.grid, 0, plan.n_cells), progress=False)
    one_by_one = solve_cells(plan.base, [plan.grid.cell(i) for i in range(plan.n_cells)],
                             progress=False)
    for ds in (block, one_by_one):
        ds.attrs.pop("solve_seconds")
    assert block.sizes["cell"] == plan.n_cells
    xr.testing.assert_identical(block, one_by_one)


def test_blocks_of_4096_cells_unless_the_judge_chooses_its_attention():
    """Cells solved together cost a fraction of a block's own cost: signals' grids run
    in blocks of 4096 cells, those of chosen attention (a solve per cell) in 64."""
    from antiamp.sweeps.spec import plan_grid

    axes = {"sweep": {"axes": {"model": {"c_e": [0.0, 0.1]}}}}
    assert plan_grid({"model": {"name": "signals"}, **axes}).cells_per_block == 2
    grid = {"model": {"name": "signals"},
            "sweep": {"axes": {"signals": {"eta": {"linspace": [0, 0.5, 100]}},
                               "model": {"c_e": {"linspace": [0, 0.2, 50]}}}}}
    assert plan_grid(grid).cells_per_block == 4096
    assert plan_grid({**grid, "effort": {"enabled": True}}).cells_per_block == 64
    assert plan_grid({**grid, "effort": {"enabled": True, "t_fixed": 0.5}}).cells_per_block == 4096


# ------------------------------------------------------------- the delta method's rows
CONTINUED_GRIDS = {
    "simulated": BLOCK_GRIDS["simulated"],
    "wide": {"model": {"name": "signals", "p": 0.8, "rho": 0.3, "c_e": 0.4},
             "signals": {"eta_mode": "fraction"}, "judge": {"kind": "tiebreak", "b": 0.7},
             "equilibrium": {"payoffs": "simulated"}, "run": {"n_instances": 3000},
             "sweep": {"axes": {"signals": {"eta": {"linspace": [-1.0, 1.0, 9]},
                                            "phi": {"linspace": [0.05, 1.0, 9]}}}}},
    "chosen attention": {"model": {"name": "signals", "p": 0.75, "rho": 0.4},
                         "judge": {"b": 0.5}, "equilibrium": {"payoffs": "simulated"},
                         "effort": {"enabled": True, "v_max": 0.9, "c_J": 0.05},
                         "run": {"n_instances": 20_000},
                         "sweep": {"axes": {"effort": {"load": [1.0, 2.0, 3.0]},
                                            "signals": {"eta": [0.0, 0.4]}}}},
}


@pytest.mark.parametrize("name", list(CONTINUED_GRIDS))
def test_equilibria_continued_together_are_those_continued_one_by_one(name, monkeypatch):
    """The delta method continues each moving equilibrium along its cell's perturbations:
    :func:`_continued_rows` (every equilibrium of a protocol at once) picks the rows
    that :func:`_continued` picks for each on its own, knife edges (none) included."""
    from antiamp.models.signals import model as sm
    from antiamp.sweeps.spec import CellBlock, plan_grid

    seen = {"rows": 0, "picked": 0}
    together = sm._continued_rows

    def checked(fs, spans, rows, jp, flat_p, t_p, match, jp_rows):
        got = together(fs, spans, rows, jp, flat_p, t_p, match, jp_rows)
        for f, (j0, j1), g in zip(fs, spans, got):
            one = sm._continued(f, j0, j1, rows, jp, flat_p, t_p, match, jp_rows)
            assert (g is None) == (one is None)
            if g is not None:
                assert np.array_equal(g, one)
                seen["picked"] += 1
            seen["rows"] += 1
        return got

    monkeypatch.setattr(sm, "_continued_rows", checked)
    plan = plan_grid(CONTINUED_GRIDS[name])
    sm.solve_cells(plan.base, CellBlock(plan.grid, 0, plan.n_cells), progress=False)
    assert seen["picked"] > 0, seen


@pytest.mark.parametrize("seed", range(6))
def test_equilibria_continued_together_on_made_up_rows(seed):
    """:func:`_continued_rows` against :func:`_continued` on made-up perturbed rows:
    perturbations without a row of the protocol, candidates beyond ``match``, ties,
    NaNs in profiles and attention, consultancy's 2 numbers and debate's 6."""
    from antiamp.models.signals import model as sm

    rng = np.random.default_rng(seed)
    n_j = 60
    jp = np.sort(rng.integers(0, n_j, 400))
    flat_p = np.round(rng.random((len(jp), 6)), 1)  # rounded: ties
    flat_p[rng.random(flat_p.shape) < 0.02] = np.nan
    t_p = np.where(rng.random(len(jp)) < 0.5, np.nan, np.round(rng.random(len(jp)), 1))
    rows = np.arange(len(jp))
    fs, spans = [], []
    for _ in range(40):
        j0 = int(rng.integers(0, n_j - 4))
        j1 = j0 + int(rng.integers(1, 5))
        base = flat_p[rng.integers(0, len(jp))]
        x = np.where(np.isnan(base), 0.5, base) + rng.normal(0, 0.05, 6)
        if rng.random() < 0.1:
            x[rng.integers(0, 6)] = np.nan
        t = np.nan if rng.random() < 0.5 else float(np.round(rng.random(), 1))
        profile = x[:2].copy() if rng.random() < 0.5 else (x[:2].copy(), x[2:].reshape(2, 2))
        fs.append(sm.Found(t, profile, 0, 0))
        spans.append((j0, j1))
    for match in (0.05, 0.3, 2.0):
        got = sm._continued_rows(fs, spans, rows, jp, flat_p, t_p, match, jp)
        kinds = set()
        for f, (j0, j1), g in zip(fs, spans, got):
            one = sm._continued(f, j0, j1, rows, jp, flat_p, t_p, match, jp)
            assert (g is None) == (one is None)
            assert g is None or np.array_equal(g, one)
            kinds.add(g is None)
        if match == 0.3:
            assert kinds == {True, False}  # both outcomes tried


def _outcomes_metric_by_metric(W, prof, Jc, Jd, v, wel, n, se):
    """The reference: every metric of both protocols through its own
    ``metrics.weighted`` call (its masked weights rebuilt each time), from
    :func:`sg.endorsement`, as :func:`sg.outcomes` computed them before it shared a
    mask's weights and took rows one protocol at a time."""
    from antiamp.metrics import weighted

    alpha, beta, delta_c = (np.asarray(w, float)[..., None] for w in wel)
    g_c, g_d, (q_c, q_P, q_A) = sg.endorsement(prof, Jc, Jd, v)
    right = sg.P_TRUE == 1
    every = np.ones(32, bool)
    out = {}
    for k, (g, qp, qa, cost) in enumerate(((g_c, q_c, np.zeros_like(q_c), 0.0),
                                          (g_d, q_P, q_A, delta_c))):
        acc = np.where(right, g, 1 - g)
        for name, (val, mask) in {
                "amp": (g, ~right), "acc": (acc, every), "fwc": (g, right),
                "endorse": (g, every), "tie_rate": (qp * qa + (1 - qp) * (1 - qa), every),
                "evidence_P": (qp, every), "evidence_A": (qa, every),
                "counter_signal": (qa, ~right),
                "welfare": (-alpha * (1 - acc) - beta * np.where(right, 0.0, g) - cost,
                            every)}.items():
            m, s = weighted(W, val, mask, n, se=se)
            out.setdefault(name, (np.empty(m.shape + (2,)), np.empty(m.shape + (2,))))
            out[name][0][..., k] = m
            out[name][1][..., k] = np.nan if s is None else s
    for name in ("evidence_A", "counter_signal"):
        out[name][0][..., 0] = out[name][1][..., 0] = np.nan
    return out


@pytest.mark.parametrize("se", [False, True])
def test_outcomes_share_masks_and_take_rows_one_protocol_at_a_time(se):
    """``outcomes`` (each mask's weights once; with ``protocol``, each row at its own
    protocol alone) against every metric computed on its own, bit for bit, on rows
    of random counts with empty classes, one and two debate tables a row; the other
    protocol of a row NaN."""
    rng = np.random.default_rng(11)
    R = 301
    W = rng.integers(0, 40, (R, 32)).astype(float)
    W[rng.random((R, 32)) < 0.3] = 0
    W[:3, sg.P_TRUE == 1] = 0  # rows whose P is never right: fwc undefined (NaN)
    prof = sg.Profile(rng.random((R, 2)), rng.random((R, 2)), rng.random((R, 2, 2)))
    Jc = rng.random((R, 2))
    v = rng.random(R)
    wel = (rng.random(R), rng.random(R), rng.random(R))
    rp = rng.integers(0, 2, R)
    rows = np.arange(R)
    for Jd in (rng.random((R, 2, 2)), rng.random((R, 2, 2, 2))):
        n = None if se else 1
        ref = _outcomes_metric_by_metric(W, prof, Jc, Jd, v, wel, n, se)
        got = sg.outcomes(W, prof, Jc, Jd, v, wel, n=n, se=se)
        one = sg.outcomes(W, prof, Jc, Jd, v, wel, n=n, se=se, protocol=rp)
        assert set(got) == set(ref) == set(one) == set(sg.OUTCOME_METRICS)
        for k in ref:
            for j in (0, 1):
                assert np.array_equal(got[k][j], ref[k][j], equal_nan=True), (k, j)
                assert np.array_equal(one[k][j][rows, rp], ref[k][j][rows, rp],
                                      equal_nan=True), (k, j)
                assert np.isnan(one[k][j][rows, 1 - rp]).all(), (k, j)
    # a protocol no row takes leaves its column NaN; scalar welfare broadcasts
    zero = sg.outcomes(W, prof, Jc, Jd, v, n=1, se=False, protocol=np.zeros(R, int))
    full = sg.outcomes(W, prof, Jc, Jd, v, n=1, se=False)
    assert np.array_equal(zero["welfare"][0][:, 0], full["welfare"][0][:, 0])
    assert np.isnan(zero["acc"][0][:, 1]).all()
    assert set(zero) == set(sg.OUTCOME_METRICS) and np.isnan(zero["evidence_A"][0]).all()
    none = sg.outcomes(W[:0], sg.Profile(prof.x_Pc[:0], prof.x_P[:0], prof.x_A[:0]), Jc[:0],
                       Jd[:0], v[:0], n=1, se=False, protocol=rp[:0])
    assert set(none) == set(sg.OUTCOME_METRICS) and none["acc"][0].shape == (0, 2)


@pytest.mark.parametrize("payoffs", ["exact", "simulated"])
def test_twins_at_eta_zero_solved_once_each_give_the_same_bits_as_one_a_cell(payoffs,
                                                                            monkeypatch):
    """A grid over eta and phi: the cells of one phi share their twin at eta = 0, which
    is solved once (``_distinct_rows``); every variable is the same, bit for bit, as
    with a twin solved for every cell, and the kernel simulates fewer rows."""
    import antiamp
    from antiamp.models.signals import model as sm

    cfg = {"model": {"name": "signals", "p": 0.8, "rho": 0.3, "c_e": 0.4},
           "signals": {"eta_mode": "fraction"}, "judge": {"kind": "tiebreak", "b": 0.7},
           "equilibrium": {"payoffs": payoffs}, "run": {"n_instances": 5000},
           "sweep": {"axes": {"signals": {"eta": {"linspace": [-1.0, 1.0, 7]},
                                          "phi": {"linspace": [0.05, 1.0, 4]}}}}}
    shared = antiamp.sweep(cfg, progress=False)
    with monkeypatch.context() as m:
        m.setattr(sm, "_distinct_rows", lambda b: (np.arange(len(b)), np.arange(len(b))))
        each = antiamp.sweep(cfg, progress=False)
    assert set(shared.variables) == set(each.variables)
    for k in each.variables:
        assert shared[k].values.tobytes() == each[k].values.tobytes(), k
    assert np.isfinite(shared["amp_eta0"].values).any()
    if payoffs == "simulated":  # 28 cells and their 24 twins (eta != 0), 4 distinct
        assert each.attrs["kernel_cells"] == 28 + 24
        assert shared.attrs["kernel_cells"] == 28 + 4


def test_distinct_rows_keeps_a_fixed_attentions_rows_apart():
    """Rows whose solution reads their cell's config beyond the columns (a fixed
    attention's cost) are never merged, even when their columns are equal."""
    from antiamp.models.signals import model as sm

    cells = [to_model_config({"model": {"name": "signals"}, "effort": {
        "enabled": True, "t_fixed": 0.5, "c_J": c}}, None)[1] for c in (0.1, 0.2)]
    block = sm._block(cells)
    first, which = sm._distinct_rows(block)
    assert list(first) == [0, 1] and list(which) == [0, 1]
    plain = sm._block([to_model_config({"model": {"name": "signals"}}, None)[1]] * 3)
    first, which = sm._distinct_rows(plain)
    assert list(first) == [0] and list(which) == [0, 0, 0]
