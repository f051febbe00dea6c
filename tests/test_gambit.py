"""Equilibria agree with Gambit (pygambit) on the same games built as extensive forms."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import antiamp as sim
from gambit_games import gambit_consult_equilibria, gambit_debate_equilibria, same_sets
from antiamp.models.equilibrium import core as eqcore
from antiamp.judge import judge_tables, protagonist_accuracy


def ours(cfg):
    ds = sim.solve(cfg)
    d, c = ds.sel(protocol="debate"), ds.sel(protocol="consult")
    deb = [(float(d.x_P[e]), float(d.x_A[e])) for e in range(int(d.n_equilibria))]
    con = sorted(float(c.x_P[e]) for e in range(int(c.n_equilibria)))
    return deb, con


def theirs(cfg):
    base, _, _ = eqcore.solve_config(cfg)
    Jc, Jd = judge_tables(base.judge, base.protocol)
    p_c = protagonist_accuracy(base)
    deb = gambit_debate_equilibria(p_c, base.model.rho, base.model.c_e, Jd)
    con = gambit_consult_equilibria(base.model.c_e, Jc)
    return deb, con


def _cfg(rho, p, c_e, kind, b, mu, kappa, lam, n, d):
    return {"model": {"rho": rho, "p": p, "c_e": c_e},
            "judge": {"kind": kind, "b": b, "mu": mu, "kappa": kappa, "lam": lam, "jury_size": n},
            "protocol": {"consult_default": d if kind == "tiebreak" else 0.0}}


@settings(max_examples=120)
@given(rho=st.floats(0.02, 0.98), p=st.floats(0.5, 0.98), c_e=st.floats(0.0, 1.2),
       kind=st.sampled_from(["tiebreak", "logit"]), b=st.floats(0.0, 1.0), mu=st.floats(-2, 2),
       kappa=st.floats(0.1, 4), lam=st.floats(0.2, 4), n=st.sampled_from([1, 2, 3, 5]),
       d=st.floats(0.0, 1.0))
def test_agreement_with_gambit_on_random_games(**kw):
    """Games where a sender's gain is within 1e-9 of c_e are left to the tie tests below:
    antiamp takes gains within 1e-12 of c_e for indifference (``enumerate_debate``'s
    ``tol``), while Gambit's exact arithmetic over the doubles sees a one-ulp rounding of
    a jury's table entry (b rounded to b + 1.1e-16) as a strict preference."""
    cfg = _cfg(**kw)
    assume(min(abs(g - kw["c_e"]) for g in _gains(cfg)) > 1e-9)
    (od, oc), (gd, gc) = ours(cfg), theirs(cfg)
    assert same_sets(od, gd, tol=1e-9), (od, gd)
    assert same_sets([(x,) for x in oc], [(x,) for x in gc], tol=1e-9), (oc, gc)
    assert same_sets([(x,) for x in oc], [(x,) for x in gc], tol=1e-9), (oc, gc)


def _gains(cfg):
    """The four marginal gains of presenting in the debate game and consultancy's one."""
    base, _, _ = eqcore.solve_config(cfg)
    Jc, Jd = judge_tables(base.judge, base.protocol)
    return [Jd[1, 0] - Jd[0, 0], Jd[1, 1] - Jd[0, 1], Jd[0, 0] - Jd[0, 1], Jd[1, 0] - Jd[1, 1],
            Jc[1] - Jc[0]]


def test_a_tie_that_a_jury_table_rounds_by_one_ulp():
    """A tie-break jury of two with b = c_e: its table entries (0, 0) and (1, 1) are
    b^2 + 2 b (1 - b) / 2 = b exactly, computed as b + 1.1e-16.  The antagonist is then
    indifferent when P withholds, so every x_A in [0, 1] with x_P = 0 is an equilibrium
    (found by the random-games test).  The oracle is Gambit on the game with those two
    entries set to b exactly, the table's exact value."""
    b = 0.5510584057781881
    cfg = _cfg(rho=0.5, p=0.5, c_e=b, kind="tiebreak", b=b, mu=0.0, kappa=1.0, lam=1.0, n=2,
               d=0.0)
    base, _, _ = eqcore.solve_config(cfg)
    _, Jd = judge_tables(base.judge, base.protocol)
    assert abs(Jd[0, 0] - b) < 1e-15 and abs(Jd[1, 1] - b) < 1e-15
    exact = np.array([[b, Jd[0, 1]], [Jd[1, 0], b]])
    gd = gambit_debate_equilibria(protagonist_accuracy(base), base.model.rho, b, exact)
    od, _ = ours(cfg)
    assert sorted(od) == [(0.0, 0.0), (0.0, 1.0)] and same_sets(od, gd, tol=1e-9), (od, gd)


def test_agreement_with_a_jury_near_unanimity():
    """Presenting gains of 5e-8 (a logit jury of five near unanimity): not indifference.
    (pygambit 17's floating-point enummixed reported (0, 1) here; the cross-check runs
    in exact arithmetic.)"""
    cfg = _cfg(rho=0.5, p=0.5, c_e=0.0, kind="logit", b=0.0, mu=1.6875, kappa=0.125, lam=4.0,
               n=5, d=0.0)
    (od, oc), (gd, gc) = ours(cfg), theirs(cfg)
    assert od == [(1.0, 1.0)] and same_sets(od, gd, tol=1e-9), (od, gd)
    assert same_sets([(x,) for x in oc], [(x,) for x in gc], tol=1e-9), (oc, gc)


def test_agreement_covers_pure_and_mixed_equilibria():
    """Draws aimed at the mixed region (c_e between the senders' smallest and largest
    marginal gains), across tie-break, logit and jury judges."""
    rng = np.random.default_rng(20261122)
    kinds = {"pure": 0, "mixed": 0}
    for i in range(150):
        kind = ["tiebreak", "logit"][i % 2]
        n = [1, 3, 2][i % 3]
        cfg = _cfg(rho=rng.uniform(0.05, 0.95), p=rng.uniform(0.5, 0.95), c_e=0.0, kind=kind,
                   b=rng.uniform(0, 1), mu=rng.uniform(-1.5, 1.5), kappa=rng.uniform(0.3, 3),
                   lam=rng.uniform(0.3, 3), n=n, d=0.0)
        base, _, _ = eqcore.solve_config(cfg)
        _, Jd = judge_tables(base.judge, base.protocol)
        gains = [Jd[1, 0] - Jd[0, 0], Jd[1, 1] - Jd[0, 1], Jd[0, 0] - Jd[0, 1], Jd[1, 0] - Jd[1, 1]]
        cfg["model"]["c_e"] = float(rng.uniform(min(gains), max(gains)))
        (od, _), (gd, _) = ours(cfg), theirs(cfg)
        assert same_sets(od, gd, tol=1e-9), (cfg, od, gd)
        for xp, xa in od:
            kinds["mixed" if 0 < xp < 1 or 0 < xa < 1 else "pure"] += 1
    assert kinds["pure"] > 30 and kinds["mixed"] > 30, kinds


@pytest.mark.parametrize("c_e", [0.0, 0.3, 0.5, 0.7, 1.0])
def test_agreement_in_degenerate_games(c_e):
    cfg = _cfg(rho=0.4, p=0.7, c_e=c_e, kind="tiebreak", b=0.5, mu=0, kappa=1, lam=1, n=1, d=0)
    (od, oc), (gd, gc) = ours(cfg), theirs(cfg)
    assert same_sets(od, gd, tol=1e-9), (od, gd)
    assert same_sets([(x,) for x in oc], [(x,) for x in gc], tol=1e-9), (oc, gc)


def test_agreement_where_rounding_noise_hides_an_exact_tie():
    """rho = 1/3 as a double with b = 0 and c_e = 1/2: the antagonist is indifferent up
    to 1e-17 (found by the random-games test in CI): a segment, for both solvers."""
    cfg = _cfg(rho=1 / 3, p=0.5, c_e=0.5, kind="tiebreak", b=0.0, mu=0.0, kappa=1.0, lam=1.0,
               n=1, d=0.0)
    (od, _), (gd, _) = ours(cfg), theirs(cfg)
    assert sorted(od) == [(1.0, 0.0), (1.0, 1.0)] and same_sets(od, gd, tol=1e-9), (od, gd)
