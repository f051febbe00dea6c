"""Evidence portfolios: baseline limit, Gambit, the kernel against exact enumeration."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import seed_formulas as sf
from gambit_games import gambit_portfolio_equilibrium
from antiamp import ConfigError
from antiamp.models.portfolio import core as pfm
from antiamp.config import JudgeConfig, ProtocolConfig
from antiamp import solve as solve_baseline
from antiamp.extended import solve_extended, to_ext_config


def pf_solve(**kw):
    cfg = {"extension": "portfolio", "model": {}, "judge": {}, "portfolio": {}}
    for k, v in kw.items():
        if "__" in k:
            sec, name = k.split("__")
            cfg[sec][name] = v
        else:
            cfg[k] = v
    return solve_extended(cfg)


@given(p=st.floats(0.55, 0.99), rho=st.floats(0.01, 0.99), b=st.floats(0, 1))
@settings(max_examples=30, deadline=None)
def test_one_item_budget_is_the_baseline(p, rho, b):
    ds = pf_solve(model__p=p, judge__b=b, portfolio__budget=1, portfolio__q_true=1.0,
                  portfolio__q_fab=rho, portfolio__mislead=0.0)
    assert float(ds.amp.sel(protocol="consult")) == pytest.approx(sf.amp_consult_tiebreak(rho, b), abs=1e-9)
    assert float(ds.amp.sel(protocol="debate")) == pytest.approx(sf.amp_debate_tiebreak(rho, b), abs=1e-9)
    assert float(ds.acc.sel(protocol="debate")) == pytest.approx(sf.acc_debate_tiebreak(rho, b, p), abs=1e-9)
    assert float(ds.rho_B) == pytest.approx(rho, abs=1e-12)


@pytest.mark.parametrize("seed", range(15))
def test_costly_one_item_game_matches_the_baseline_solver(seed):
    rng = np.random.default_rng(seed)
    p, rho, b = rng.uniform(0.55, 0.95), rng.uniform(0.05, 0.95), rng.uniform(0, 1)
    c = rng.uniform(min(b, 1 - b), max(b, 1 - b))
    ds = pf_solve(model__p=p, judge__b=b, portfolio__budget=1, portfolio__q_true=1.0,
                  portfolio__q_fab=rho, portfolio__mislead=0.0, portfolio__c_item=c)
    base = solve_baseline({"model": {"p": p, "rho": rho, "c_e": c}, "judge": {"b": b}})
    d = base.sel(protocol="debate")
    pts = [(float(d.x_P[e]), float(d.x_A[e])) for e in range(int(d.n_equilibria))]
    xp = float(ds.sigma_P.sel(protocol="debate").values[1, 1])
    xa = float(ds.sigma_A.values[1, 1])
    assert any(abs(xp - u) < 1e-7 and abs(xa - v) < 1e-7 for u, v in pts), (xp, xa, pts)
    assert float(ds.epsilon.max()) < 1e-9
    assert float(ds.duality_gap) < 1e-9


def test_rho_of_budget_and_the_accepted_count_distribution():
    ds = pf_solve(model__p=0.8, portfolio__budget=5, portfolio__q_true=0.7, portfolio__q_fab=0.1,
                  portfolio__mislead=0.4, portfolio__cross_exam=0.25, portfolio__tau=1)
    qf = 0.1 + 0.9 * 0.4 * 0.75
    assert float(ds.q_false) == pytest.approx(qf)
    assert float(ds.rho_B) == pytest.approx(1 - (1 - qf) ** 5, abs=1e-12)
    assert float(ds.misleading_share) == pytest.approx(0.9 * 0.4 * 0.75 / qf)
    # Threshold rule, free items: one accepted item reaches the bar, more change nothing;
    # the reported strategy submits everything it holds, so V = k ~ Bin(B, q).
    from scipy import stats

    pmf = ds.accepted_pmf.sel(protocol="debate")
    np.testing.assert_allclose(pmf.sel(stance="true"), stats.binom.pmf(np.arange(6), 5, 0.7),
                               atol=1e-12)
    np.testing.assert_allclose(pmf.sel(stance="false"), stats.binom.pmf(np.arange(6), 5, qf),
                               atol=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_equilibria_match_gambit_lcp(seed):
    rng = np.random.default_rng(50 + seed)
    pf = pfm.PortfolioConfig(budget=int(rng.integers(2, 4)), q_true=rng.uniform(0.4, 0.9),
                             q_fab=rng.uniform(0.05, 0.3), mislead=rng.uniform(0, 0.5),
                             rule="logit", kappa_v=rng.uniform(0.3, 1.5),
                             c_item=rng.uniform(0.02, 0.3))
    j = JudgeConfig(kind="logit", lam=rng.uniform(0.5, 2), mu=rng.uniform(-0.5, 0.5))
    Jc, Jd = pfm.judge_tables_counts(pf, j, ProtocolConfig())
    W = pfm.class_probabilities(rng.uniform(0.55, 0.9), pf).sum(0)
    sP, sA, vP, vA = pfm.debate_equilibrium(W, Jd, pf.c_item)
    assert abs(vP - vA) < 1e-9
    assert pfm.interim_regret(W, sP, sA, Jd, pf.c_item) < 1e-9
    gP, gA = gambit_portfolio_equilibrium(W, Jd, pf.c_item)
    # Gambit's equilibrium is an equilibrium of our payoffs, and has our value
    # (equilibria of a strategically zero-sum game share the value).
    gP, gA = np.nan_to_num(gP), np.nan_to_num(gA)
    assert pfm.interim_regret(W, gP, gA, Jd, pf.c_item) < 1e-7
    K = pf.budget + 1
    U = Jd - pf.c_item * np.arange(K)[:, None] + pf.c_item * np.arange(K)[None, :]
    val = sum(W[i, k] / W.sum() * gP[i] @ U @ gA[k] for i in range(K) for k in range(K))
    assert val == pytest.approx(vP, abs=1e-8)


def test_kernel_counts_agree_with_exact_enumeration():
    pf = pfm.PortfolioConfig(budget=4, q_true=0.65, q_fab=0.15, mislead=0.3, cross_exam=0.2)
    n = 2_000_000
    cnt = pfm.class_counts(0.7, pf, n, seed=4)
    w = pfm.class_probabilities(0.7, pf)
    assert cnt.sum() == n
    z = (cnt - n * w) / np.sqrt(n * w * (1 - w))
    assert np.max(np.abs(z)) < 5
    a = pfm.class_counts(0.7, pf, 100_003, seed=4, chunk_size=999)
    b = pfm.class_counts(0.7, pf, 100_003, seed=4, n_threads=1)
    np.testing.assert_array_equal(a, b)


def test_multi_cell_kernel_gives_every_cell_its_own_counts():
    """One pass of the random numbers for many cells (common random numbers) must give
    each cell exactly the counts of its own kernel call, whatever its neighbours."""
    rng = np.random.default_rng(3)
    ps, pfs = [], []
    for B in (1, 3, 3, 5, 3, 1):
        ps.append(float(rng.uniform(0.3, 0.95)))
        pfs.append(pfm.PortfolioConfig(budget=B, q_true=float(rng.uniform(0.4, 1)),
                                       q_fab=float(rng.uniform(0, 0.4)),
                                       mislead=float(rng.uniform(0, 0.5)),
                                       cross_exam=float(rng.uniform(0, 0.5))))
    ps.append(1.0)  # the edges of the thresholds
    pfs.append(pfm.PortfolioConfig(budget=3, q_true=1.0, q_fab=0.0, mislead=0.0))
    many = pfm.class_counts_cells(ps, pfs, 60_001, seed=9, chunk_size=20_000)
    for p, pf, got in zip(ps, pfs, many):
        np.testing.assert_array_equal(got, pfm.class_counts(p, pf, 60_001, seed=9))
    # ... and a cell's counts do not depend on which cells share its pass.
    alone = pfm.class_counts_cells(ps[2:3], pfs[2:3], 60_001, seed=9)[0]
    np.testing.assert_array_equal(alone, many[2])


def test_simulated_payoffs_agree_with_exact():
    kw = dict(model__p=0.75, judge__kind="logit", judge__lam=1.5, judge__mu=0.3,
              portfolio__budget=3, portfolio__rule="logit", portfolio__kappa_v=0.8,
              portfolio__c_item=0.05)
    ex = pf_solve(**kw)
    sm = pf_solve(**kw, equilibrium={"payoffs": "simulated"}, run={"n_instances": 2_000_000})
    assert sm.attrs["kernel_calls"] == 1
    for v in ("amp", "acc", "fwc"):
        for prot in ("consult", "debate"):
            a, b = float(ex[v].sel(protocol=prot)), float(sm[v].sel(protocol=prot))
            se = float(sm[f"{v}_se"].sel(protocol=prot))
            assert abs(a - b) < 6 * se + 1e-3, (v, prot, a, b, se)


def test_cross_examination_lowers_amplification_at_large_budgets():
    ds = solve_extended({"extension": "portfolio", "model": {"p": 0.8},
                         "portfolio": {"q_true": 0.6, "q_fab": 0.05, "mislead": 0.25, "tau": 2},
                         "sweep": {"axes": {"portfolio": {"budget": [4, 8, 12],
                                                          "cross_exam": [0.0, 0.9]}}}})
    amp = ds.amp.sel(protocol="debate")
    assert np.all(amp.sel(cross_exam=0.9).values < amp.sel(cross_exam=0.0).values)
    # Without cross-examination a larger budget raises rho(B) and Amp.
    assert np.all(np.diff(ds.rho_B.sel(cross_exam=0.0).values) > 0)
    assert np.all(np.diff(amp.sel(cross_exam=0.0).values) > 0)


@pytest.mark.parametrize("bad, match", [
    ({"portfolio": {"budget": 0}}, "portfolio.budget must be an integer >= 1"),
    ({"portfolio": {"budget": 65}}, "portfolio.budget must be an integer >= 1 and <= 64"),
    ({"portfolio": {"q_true": 1.2}}, r"portfolio.q_true must lie in \[0, 1\]"),
    ({"portfolio": {"tau": 4, "budget": 3}}, r"portfolio.tau must lie in \[1, portfolio.budget=3\]"),
    ({"portfolio": {"rule": "probit"}}, "portfolio.rule must be one of threshold, logit"),
    ({"portfolio": {"rule": "logit"}}, "set judge=logit"),
    ({"portfolio": {"c_item": -0.1}}, r"portfolio.c_item must lie in \[0, 1,000,000\]"),
])
def test_bad_input_names_the_field(bad, match):
    with pytest.raises(ConfigError, match=match):
        to_ext_config({"extension": "portfolio", **bad})


def test_unknown_extension_is_refused():
    with pytest.raises(ConfigError, match="extension must be one of"):
        to_ext_config({"extension": "telepathy"})


@pytest.mark.parametrize("budget", [0, 1, 4, 7, 64])
def test_batched_kernel_counts_what_the_instance_by_instance_one_counts(budget):
    """The kernel draws a batch's words first and classifies them into interleaved
    histograms; its counts must be those of classifying the instances one by one
    (tests/reference_kernels.py), for any start, count and split into blocks."""
    import reference_kernels
    from antiamp.kernels import portfolios as kpf
    from antiamp.kernels.rng import bernoulli_threshold, split_seed

    k0, k1 = split_seed(11)
    t = [bernoulli_threshold(x) for x in (0.65, 0.8, 0.35)]
    start, count = 1000, 3 * kpf.BATCH + 37
    ref = reference_kernels.portfolio_class_counts(*t, budget, start, count, k0, k1,
                                                   np.uint64(kpf.STREAM))
    for n_blocks in (1, 3, 8):
        got = kpf.portfolio_class_counts(*t, budget, start, count, k0, k1,
                                         np.uint64(kpf.STREAM), n_blocks)
        np.testing.assert_array_equal(got, ref)


def test_block_outcome_terms_and_pmf_are_the_cells_own_bits():
    """A block's outcome terms and accepted-count laws, computed for its cells at once
    (batched matrix products), are each cell's own to the bit, at budgets 1 to 64."""
    from antiamp.models.portfolio.core import accepted_pmf, outcome_terms

    rng = np.random.default_rng(11)
    for K in (2, 4, 9, 65):
        C = 12
        W3 = rng.random((C, 2, K, K)) ** 2

        def sig():
            a = rng.random((C, K, K)) * np.tri(K)[None]
            a[a < 0.3] = 0
            a[:, :, 0] += a.sum(2) == 0
            return a / a.sum(2, keepdims=True)

        sc, sP, sA = sig(), sig(), sig()
        jc, jd = rng.random((C, K)), rng.random((C, K, K))
        pmf, terms = accepted_pmf(W3, sc, sP, sA), outcome_terms(sc, sP, sA, jc, jd)
        for c in range(C):
            one = outcome_terms(sc[c], sP[c], sA[c], jc[c], jd[c])
            assert accepted_pmf(W3[c], sc[c], sP[c], sA[c]).tobytes() == pmf[c].tobytes()
            assert [t.tobytes() for t in one] == [t[c].tobytes() for t in terms]


def test_zero_sum_lp_through_the_binding_is_linprogs_to_the_bit(monkeypatch):
    """The programmes passed to HiGHS directly give linprog(method="highs")'s strategies
    and values to the bit (random games, budgets 1 to 12)."""
    from antiamp import games

    rng = np.random.default_rng(5)
    cases = []
    for K in (2, 3, 5, 8, 13):
        for _ in range(6):
            W = rng.random((K, K)) * (rng.random((K, K)) > 0.3)
            W[0, 0] += 0.01
            U = rng.random((K, K)) - 0.2 * np.arange(K)[:, None]
            cases += [(W / W.sum(), U), ((W / W.sum()).T, -U.T)]
    assert games._highs(), "this scipy's HiGHS binding is not found: linprog runs"
    direct = [games.zero_sum_lp(*c) for c in cases]
    monkeypatch.setattr(games, "_HIGHS", {})  # as where the binding is missing
    for c, (sig, v) in zip(cases, direct):
        sig_l, v_l = games.zero_sum_lp(*c)
        assert sig.tobytes() == sig_l.tobytes() and v == v_l
