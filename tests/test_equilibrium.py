"""Equilibria of the evidence game: closed forms, certificates, general methods, simulation path."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import seed_formulas as sf
import antiamp as sim
from antiamp import evidence_game as eqm
from antiamp.models.equilibrium import core as eqcore
from antiamp.fixedpoint import deviation_gain, solve_general


def solve(**kw):
    cfg = {"model": {}, "judge": {}, "protocol": {}}
    eq = kw.pop("equilibrium", {})
    for k, v in kw.items():
        sec, name = k.split("__")
        cfg[sec][name] = v
    cfg["equilibrium"] = eq
    return sim.solve(cfg)


def debate_profiles(ds):
    d = ds.sel(protocol="debate")
    n = int(d.n_equilibria)
    return [(float(d.x_P[e]), float(d.x_A[e])) for e in range(n)]


@given(rho=st.floats(0.01, 0.99), b=st.floats(0.02, 0.98), p=st.floats(0.5, 0.99),
       frac=st.floats(0.0, 0.999))
def test_low_cost_region_gives_present_when_feasible_and_seed_closed_forms(rho, b, p, frac):
    c_e = frac * min(b, 1 - b)
    ds = solve(model__rho=rho, model__p=p, model__c_e=c_e, judge__b=b)
    assert debate_profiles(ds) == [(1.0, 1.0)]
    assert float(ds.x_P.sel(protocol="consult")[0]) == 1.0
    assert int(ds.n_equilibria.sel(protocol="consult")) == 1
    d = ds.sel(protocol="debate", equilibrium=0)
    assert float(d.amp) == pytest.approx(sf.amp_debate_tiebreak(rho, b), abs=1e-12)
    assert float(d.acc) == pytest.approx(sf.acc_debate_tiebreak(rho, b, p), abs=1e-12)
    c = ds.sel(protocol="consult", equilibrium=0)
    assert float(c.amp) == pytest.approx(sf.amp_consult_tiebreak(rho, b), abs=1e-12)
    assert bool(d.stable) and bool(c.stable)


def test_posteriors_are_bayes():
    ds = solve(model__rho=0.5, model__p=0.6)
    assert float(ds.mu_P) == pytest.approx(0.6 / (0.6 + 0.4 * 0.5))
    assert float(ds.mu_A) == pytest.approx(0.4 / (0.4 + 0.6 * 0.5))


def test_a_mixed_equilibrium_by_hand():
    # b = 0.8, rho = 0.5, p = 0.6, c_e = 0.45: tau_P = 0.75*0.5 + 0.25 = 0.625 and
    # tau_A = (4/7)*0.5 + 3/7 = 5/7.  P indifferent: 0.2 + 0.625*0.6 x_A = 0.45 -> x_A = 2/3;
    # A indifferent: 0.8 - (5/7)*0.6 x_P = 0.45 -> x_P = 0.35*7/3 = 49/60.
    ds = solve(model__rho=0.5, model__p=0.6, model__c_e=0.45, judge__b=0.8)
    profs = debate_profiles(ds)
    assert len(profs) == 1
    assert profs[0][0] == pytest.approx(49 / 60, abs=1e-12)
    assert profs[0][1] == pytest.approx(2 / 3, abs=1e-12)
    d = ds.sel(protocol="debate", equilibrium=0)
    assert str(d.kind.values) == "mixed" and bool(d.stable)
    assert float(d.belief_P) == pytest.approx(0.625 * 2 / 3)


def test_degenerate_game_reports_the_corners():
    # b = 1/2 and c_e = 1/2: both senders indifferent against everything.
    ds = solve(model__c_e=0.5, judge__b=0.5)
    assert sorted(debate_profiles(ds)) == [(0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0)]
    assert not ds.stable.sel(protocol="debate").any()
    assert float(ds.epsilon.max()) < 1e-12


game_params = dict(
    rho=st.floats(0.02, 0.98), p=st.floats(0.5, 0.98), c_e=st.floats(0.0, 1.0),
    kind=st.sampled_from(["tiebreak", "logit"]), b=st.floats(0.0, 1.0), mu=st.floats(-2, 2),
    kappa=st.floats(0.1, 4), lam=st.floats(0.2, 4), n=st.sampled_from([1, 2, 3, 5]),
    d=st.floats(0.0, 1.0),
)


def _cfg(rho, p, c_e, kind, b, mu, kappa, lam, n, d):
    return dict(model__rho=rho, model__p=p, model__c_e=c_e, judge__kind=kind, judge__b=b,
                judge__mu=mu, judge__kappa=kappa, judge__lam=lam, judge__jury_size=n,
                protocol__consult_default=d if kind == "tiebreak" else 0.0)


@settings(max_examples=150)
@given(**game_params)
def test_certificates_small_for_equilibria_and_large_for_perturbations(**kw):
    ds = solve(**_cfg(**kw))
    eps = ds.epsilon.values
    assert np.nanmax(eps) < 1e-9
    base, _, _ = eqcore.solve_config({"model": {"rho": kw["rho"], "p": kw["p"], "c_e": kw["c_e"]},
                                    "judge": {"kind": kw["kind"], "b": kw["b"], "mu": kw["mu"],
                                              "kappa": kw["kappa"], "lam": kw["lam"],
                                              "jury_size": kw["n"]},
                                    "protocol": {"consult_default": ds.attrs and
                                                 _cfg(**kw)["protocol__consult_default"]}})
    game = eqm.exact_game([base])
    g0P, g1P, g0A, g1A, _ = game.coefficients()
    for xp, xa in debate_profiles(ds):
        gP, gA = g0P[0] + g1P[0] * xa, g0A[0] + g1A[0] * xp
        # Move each sender 0.1 toward its worse action: the certificate must see it.
        for who, g, x in (("P", gP, xp), ("A", gA, xa)):
            if abs(g) < 1e-3:
                continue  # indifferent: every own mixture is a best response
            y = x - 0.1 if g > 0 else x + 0.1
            y = min(max(y, 0.0), 1.0)
            prof = (y, xa) if who == "P" else (xp, y)
            e = eqm.certificates(game, np.array([[prof[0]]]), np.array([[prof[1]]]), "debate")
            assert float(e[0, 0]) > 0.05 * abs(g)


def _explained(q, extreme, tol=1e-7):
    """q is an enumerated extreme equilibrium, lies on a segment between two of them
    (degenerate games have segments of equilibria; enumeration reports their ends),
    or inside a triangle of three (a game in which both senders are indifferent
    against everything has the whole square as equilibria, reported as its corners;
    the caller checks such a q's certificate, since a triangle may join components)."""
    q = np.asarray(q)
    pts = [np.asarray(e) for e in extreme]
    if any(np.max(np.abs(q - e)) < tol for e in pts):
        return True
    for i, a in enumerate(pts):
        for c in pts[i + 1:]:
            d = c - a
            t = np.dot(q - a, d) / np.dot(d, d)
            if -tol <= t <= 1 + tol and np.max(np.abs(a + t * d - q)) < tol:
                return True
    for i, a in enumerate(pts):
        for j in range(i + 1, len(pts)):
            for c in pts[j + 1:]:
                m = np.column_stack([pts[j] - a, c - a])
                if abs(np.linalg.det(m)) < 1e-12:
                    continue
                u, v = np.linalg.solve(m, q - a)
                if u >= -tol and v >= -tol and u + v <= 1 + tol:
                    return True
    return False


@settings(max_examples=25)
@given(**game_params)
def test_general_engine_finds_the_enumerated_equilibria(**kw):
    ex = solve(**_cfg(**kw))
    found = solve(**_cfg(**kw), equilibrium={"method": "all"})
    e_set = debate_profiles(ex)
    d_found = found.sel(protocol="debate")
    for e, prof in enumerate(debate_profiles(found)):  # nothing spurious
        assert _explained(prof, e_set), (prof, e_set)
        assert float(d_found.epsilon[e]) < 1e-9, (prof, float(d_found.epsilon[e]))
    # Every stable equilibrium is reached by damped best response or the QRE homotopy.
    br = debate_profiles(solve(**_cfg(**kw), equilibrium={"method": "br", "starts": 9}))
    qre = debate_profiles(solve(**_cfg(**kw), equilibrium={"method": "qre", "starts": 9}))
    d = ex.sel(protocol="debate")
    for e, prof in enumerate(e_set):
        if bool(d.stable[e]):
            assert any(max(abs(prof[0] - q[0]), abs(prof[1] - q[1])) < 1e-7
                       for q in br + qre), (prof, br, qre)


def test_general_engine_in_the_game_where_every_profile_is_an_equilibrium():
    """b = 1/2 and c_e = 1/2 (found by the hypothesis test above in CI): the general
    engine's starts stop wherever they are, inside the square whose corners the
    enumeration reports; each such profile is an equilibrium (certificate 0)."""
    kw = dict(rho=0.5, p=0.5, c_e=0.5, kind="tiebreak", b=0.5, mu=0.0, kappa=1.0, lam=1.0,
              n=1, d=0.0)
    e_set = debate_profiles(solve(**_cfg(**kw)))
    found = solve(**_cfg(**kw), equilibrium={"method": "all"})
    for e, prof in enumerate(debate_profiles(found)):
        assert _explained(prof, e_set), (prof, e_set)
        assert float(found.sel(protocol="debate").epsilon[e]) < 1e-12
    assert not _explained((1.2, 0.5), e_set)  # outside the square


def test_fixed_point_engine_on_matching_pennies():
    """A game outside the model: the engine finds the unique mixed equilibrium (1/2, 1/2)."""
    def gain(x):
        return np.array([2 * x[1] - 1, 1 - 2 * x[0]])

    res = solve_general(gain, 2)
    assert len(res.profiles) == 1
    assert np.allclose(res.profiles[0], [0.5, 0.5], atol=1e-12)
    assert deviation_gain(gain, np.array([0.5, 0.5])) == pytest.approx(0.0, abs=1e-15)
    # Moving the first player to 0.6 leaves it indifferent but gives the second a
    # gain of 1 - 2 * 0.6 = -0.2 while it still presents half the time: 0.1.
    assert deviation_gain(gain, np.array([0.6, 0.5])) == pytest.approx(0.1)


def test_damped_best_response_from_all_starts_at_once_is_each_starts_own():
    """The batched iteration (every start a row) must give each start the profile and
    convergence flag of its own iteration: pure equilibria, matching pennies (which the
    damping only approaches, running to max_iter) and indifferent types."""
    from antiamp.fixedpoint import damped_best_response, damped_best_response_rows, starts

    rng = np.random.default_rng(4)
    games = [rng.normal(size=4) for _ in range(12)]
    games += [np.array([-1.0, 2.0, 1.0, -2.0]), np.array([0.0, 0.0, 0.3, -1.0])]
    for g in games:
        def gain(x, g=g):
            return np.array([g[0] + g[1] * x[1], g[2] + g[3] * x[0]])

        def rows(X, g=g):
            return np.stack([g[0] + g[1] * X[:, 1], g[2] + g[3] * X[:, 0]], axis=1)

        X0 = starts(2, 9)
        bx, bok = damped_best_response_rows(rows, X0, tol=1e-12, max_iter=500)
        for s, x0 in enumerate(X0):
            x, ok = damped_best_response(gain, x0, tol=1e-12, max_iter=500)
            assert np.array_equal(x, bx[s]) and ok == bok[s], (g, s, x, bx[s])
    # Matching pennies never converges at tolerance 1e-12: every row runs to max_iter.
    _, ok = damped_best_response_rows(
        lambda X: np.stack([2 * X[:, 1] - 1, 1 - 2 * X[:, 0]], axis=1),
        np.array([[0.2, 0.9], [0.7, 0.1]]), tol=1e-12, max_iter=300)
    assert not ok.any()


def test_simulated_payoffs_agree_with_exact_within_standard_errors():
    cfg = {"model": {"rho": 0.5, "p": 0.6, "c_e": 0.45}, "judge": {"b": 0.8},
           "run": {"n_instances": 2_000_000, "seed": 5}}
    ex = sim.solve(cfg)
    si = sim.solve({**cfg, "equilibrium": {"payoffs": "simulated"}})
    base, _, _ = eqcore.solve_config(cfg)
    g = eqm.exact_game([base])
    gs = eqm.simulated_game([base], 2_000_000, 5)
    assert abs(gs.tau_P[0] - g.tau_P[0]) < 5 * gs.tau_P_se[0]
    assert abs(gs.tau_A[0] - g.tau_A[0]) < 5 * gs.tau_A_se[0]
    (xp, xa), = debate_profiles(ex)
    (sp, sa), = debate_profiles(si)
    # x_A* = -g0P / g1P is inversely proportional to tau_P (and x_P* to tau_A).
    assert abs(sa - xa) < 5 * xa / g.tau_P[0] * gs.tau_P_se[0]
    assert abs(sp - xp) < 5 * xp / g.tau_A[0] * gs.tau_A_se[0]
    assert float(si.epsilon.max()) < 1e-9
    # Deterministic map: the same seed gives the same equilibrium.
    again = sim.solve({**cfg, "equilibrium": {"payoffs": "simulated"}})
    assert debate_profiles(again) == debate_profiles(si)


def test_grid_solve_and_bad_input():
    ds = sim.solve({"sweep": {"axes": {"model": {"c_e": {"linspace": [0, 1, 11]}},
                                                   "judge": {"b": [0.2, 0.5, 0.8]}}}})
    assert ds.x_P.dims == ("c_e", "b", "protocol", "equilibrium")
    assert float(ds.epsilon.max()) < 1e-9
    with pytest.raises(sim.ConfigError, match="equilibrium.method"):
        sim.solve({"equilibrium": {"method": "newton"}})
    with pytest.raises(sim.ConfigError, match="equilibrium.payoffs"):
        sim.solve({"equilibrium": {"payoffs": "guess"}})
    with pytest.raises(sim.ConfigError, match="model.rho"):
        sim.solve({"model": {"rho": 3}})


def test_outcomes_in_blocks_have_the_bits_of_one_pass(monkeypatch):
    """A grid bigger than a block of outcomes gives every cell the bits it has when all
    cells are computed at once."""
    cfg = {"model": {"p": 0.6, "rho": 0.5},
           "sweep": {"axes": {"model": {"c_e": {"linspace": [0, 1, 23]}},
                              "judge": {"b": {"linspace": [0, 1, 19]}}}}}
    whole = eqcore.solve(cfg)
    monkeypatch.setattr(eqcore, "OUTCOME_BLOCK", 50)
    blocks = eqcore.solve(cfg)
    for v in ("amp", "acc", "fwc", "welfare"):
        assert np.array_equal(whole[v].values, blocks[v].values, equal_nan=True), v
    # Blocks holding a row the compiled pass flags go to the NumPy path: the same bits.
    from antiamp.kernels import outcomes

    compiled = outcomes.equilibrium_outcomes
    redone = []

    def flag_some(*args):
        vals, bad = compiled(*args)
        bad = bad.copy()
        bad[::97, 0] = True
        redone.append(int(bad.sum()))
        return vals, bad

    monkeypatch.setattr(outcomes, "equilibrium_outcomes", flag_some)
    flagged = eqcore.solve(cfg)
    assert redone and redone[0] > 1
    for v in ("amp", "acc", "fwc", "welfare"):
        assert np.array_equal(whole[v].values, flagged[v].values, equal_nan=True), v


def test_fused_outcome_kernel_has_the_numpy_paths_bits():
    """kernels.outcomes repeats class_probabilities + evaluate(se=False) operation for
    operation: the same bits on random cells (signal and fixed stances, pure, mixed
    and missing equilibria), and the rows it cannot take are flagged."""
    from antiamp.kernels.outcomes import METRICS, equilibrium_outcomes
    from antiamp.metrics import class_probabilities, evaluate

    rng = np.random.default_rng(3)
    C, E = 4000, 3
    pi, p, rho = rng.random(C), rng.random(C), rng.random(C)
    fixed, a = rng.random(C) < 0.3, rng.integers(0, 2, C)
    x = [np.where(rng.random((C, E)) < 0.5, rng.integers(0, 2, (C, E)), rng.random((C, E)))
         for _ in range(3)]
    for v in x:
        v[rng.random((C, E)) < 0.1] = np.nan  # a cell with fewer equilibria
    x = [np.nan_to_num(v) for v in x]
    J_c, J_d = rng.random((C, 2)), rng.random((C, 2, 2))
    alpha, beta, dc = rng.random(C) * 2, rng.random(C) * 2, rng.random(C) * 0.1
    vals, bad = equilibrium_outcomes(pi, p, rho, fixed, a.astype(np.int64), *x, J_c, J_d,
                                     alpha, beta, dc)
    prob = class_probabilities(pi[:, None], p[:, None], rho[:, None], *x, fixed[:, None],
                               a[:, None])
    ref = evaluate(prob, J_c[:, None, :], J_d[:, None], alpha[:, None], beta[:, None],
                   dc[:, None], np.zeros((C, 1)), names=METRICS, se=False)
    assert not bad.any()
    for k, name in enumerate(METRICS):
        assert np.array_equal(vals[k], ref[name][0], equal_nan=True), name
    # Rows asked for are the same bits; the others are NaN and never flagged.
    rows = rng.random((C, E)) < 0.6
    part, bad = equilibrium_outcomes(pi, p, rho, fixed, a.astype(np.int64), *x, J_c, J_d,
                                     alpha, beta, dc, rows)
    assert not bad.any() and np.isnan(part[:, ~rows]).all()
    assert np.array_equal(part[:, rows], vals[:, rows], equal_nan=True)
    # A negative weight (here a presentation probability above 1) is left to NumPy.
    x[0][0, 0], x[1][0, 0] = 1.5, 0.2
    _, bad = equilibrium_outcomes(pi, p, rho, fixed, a.astype(np.int64), *x, J_c, J_d,
                                  alpha, beta, dc)
    assert bad[0, 0] and bad.sum() == 1


def test_consultancy_best_responses_at_the_tolerance_edges():
    """Consultancy's sender presents (x = 1) where its gain is >= -tol and withholds
    (x = 0) where it is <= tol: both within tol of zero, listed present first; no
    equilibrium for a gain that is not a number."""
    tol = 1e-12
    gains = np.array([-1.0, -2 * tol, -tol, 0.0, tol, 2 * tol, 1.0, np.nan])
    C = len(gains)
    J_c = np.stack([np.zeros(C), gains], axis=1)  # gain = J_c[1] - J_c[0] - c_e, c_e = 0
    g = eqm.game_from_arrays(np.full(C, 0.6), np.full(C, 0.5), np.zeros(C), J_c,
                             np.full((C, 2, 2), 0.5))
    xp, xa, kind, n = eqm.enumerate_consult(g, tol)
    want = [[0.0], [0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0], [1.0], []]
    for i, w in enumerate(want):
        assert n[i] == len(w) and list(xp[i, :n[i]]) == w, i
        assert np.isnan(xp[i, n[i]:]).all() and (kind[i, :n[i]] == "pure").all()
        assert (kind[i, n[i]:] == "").all()
    assert xp.shape == (C, 2) and np.isnan(xa).all() and n.dtype == np.int64


def _numpy_columns(game, xP, xA, code, tol):
    """What the compiled ``profile_columns`` replaced: the NumPy functions it fuses."""
    cP, dP, dA = xP[:, 0], xP[:, 1], xA[:, 1]
    missing = np.isnan(xP)
    eps_c = eqm.certificates(game, cP, np.zeros_like(cP), "consult")
    eps_c[missing[:, 0]] = np.nan
    stab = np.empty(xP.shape, bool)
    coefs = game.coefficients()
    stab[:, 0] = eqm.stability(game, cP, None, code[:, 0], "consult", tol, coefs)
    stab[:, 1] = eqm.stability(game, dP, dA, code[:, 1], "debate", tol, coefs)
    stab &= ~missing
    bP = np.empty(xP.shape)
    bP[:, 0] = 0.0
    bP[:, 1] = game.tau_P[:, None] * dA
    bP[missing] = np.nan
    bA = np.empty(xP.shape)
    bA[:, 0] = np.nan
    bA[:, 1] = game.tau_A[:, None] * dP
    return (eps_c, stab, bP, bA, eqm.nan_to_zero(cP), eqm.nan_to_zero(dP), eqm.nan_to_zero(dA),
            ~(np.isnan(cP) & np.isnan(dP)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_profile_columns_has_the_bits_of_the_numpy_certificates_stability_and_beliefs(seed):
    """The compiled pass over a grid's profiles against the NumPy functions it replaced,
    bit for bit (NaN included), on games with every kind of profile: ties in the judge
    tables (np.maximum's choice), zero slopes, indifference within the tolerance,
    padding, mixed and segment-end kinds, and infinite profile entries."""
    from antiamp.kernels.evidence_game import profile_columns

    rng = np.random.default_rng(seed)
    C, E = 4000, 5
    grid = np.array([0.0, 0.25, 0.5, 1.0])
    J_c = np.where(rng.random((C, 2)) < 0.5, rng.choice(grid, (C, 2)), rng.random((C, 2)))
    J_d = np.where(rng.random((C, 2, 2)) < 0.5, rng.choice(grid, (C, 2, 2)),
                   rng.random((C, 2, 2)))
    c_e = np.where(rng.random(C) < 0.3, 0.0, rng.choice([0.25, 0.5, rng.random()], C))
    p_c, rho = rng.random(C), np.where(rng.random(C) < 0.2, 0.0, rng.random(C))
    game = eqm.game_from_arrays(p_c, rho, c_e, J_c, J_d)
    xP = np.where(rng.random((C, 2, E)) < 0.4, rng.choice([0.0, 1.0], (C, 2, E)),
                  rng.random((C, 2, E)))
    xA = np.where(rng.random((C, 2, E)) < 0.4, rng.choice([0.0, 1.0], (C, 2, E)),
                  rng.random((C, 2, E)))
    n = rng.integers(0, E + 1, (C, 2))  # equilibria a protocol: the rest padded
    pad = np.arange(E)[None, None, :] >= n[:, :, None]
    xP[pad] = np.nan
    xA[pad] = np.nan
    xA[:, 0] = np.nan
    code = np.where(pad, -1, rng.integers(0, 3, (C, 2, E))).astype(np.int8)
    xP[0, 1, 0], xA[1, 1, 0] = np.inf, -np.inf  # nan_to_zero's other branch
    code[0, 1, 0] = code[1, 1, 0] = 0
    for tol in (0.0, 1e-9, 0.3):
        with np.errstate(invalid="ignore", over="ignore"):  # the infinite entries
            want = _numpy_columns(game, xP, xA, code, tol)
        f = np.ascontiguousarray
        got = profile_columns(*(f(a, dtype=float) for a in (game.J_c, game.c_e, game.tau_P,
                                                            game.tau_A)),
                              *(f(a, dtype=float) for a in game.coefficients()), xP, xA, code,
                              tol)
        for w, g in zip(want, got):
            assert w.dtype == g.dtype and w.shape == g.shape
            assert w.tobytes() == g.tobytes()
        assert want[1].any() and not want[1].all()  # both stable and unstable rows
