"""The compiled enumeration of the signals debate's sub-games
(``antiamp.kernels.signals_equilibria``) against the NumPy code it replaced, kept
here as the oracle: the same equilibria, bit for bit, in the same order, on gains
from random games and on gains built to sit on every edge the enumeration tests
(indifference, switch points at 0 and 1, null types, zero slopes, duplicates)."""

import numpy as np
import pytest

import antiamp.models.signals.core as sg
from antiamp.models.signals.core import Gains


def _ok(x, g, tol):
    """x is a best response to gain g (NaN gains, of null types, always pass)."""
    good = np.where(x >= 1 - 1e-12, g >= -tol,
                    np.where(x <= 1e-12, g <= tol, np.abs(g) <= tol))
    return good | np.isnan(g)


def numpy_rows(G, tol=1e-10):
    """The NumPy enumeration (antiamp 2026-12-04), the oracle."""
    C = G.aP.shape[0]
    sub = []  # per s: [C, K, 3] candidate (xP, xA0, xA1) and validity
    for s in (0, 1):
        aA, BA = G.aA[:, s], G.BA[:, s]
        with np.errstate(invalid="ignore", divide="ignore"):
            sw = np.where(np.abs(BA) > 0, -aA / BA, np.nan)
        sw = np.where((sw > 0) & (sw < 1), sw, np.nan)
        xp_c = np.stack([np.zeros(C), np.ones(C), sw[:, 0], sw[:, 1]], axis=1)  # [C, 4]
        aP, BP = G.aP[:, s][:, None], G.BP[:, s]
        with np.errstate(invalid="ignore", divide="ignore"):
            # x_A0 solving P's indifference given x_A1 in {0, 1}, and vice versa.
            s0 = [np.where(BP[:, 0:1] != 0, -(aP + BP[:, 1:2] * k) / BP[:, 0:1], np.nan)
                  for k in (0, 1)]
            s1 = [np.where(BP[:, 1:2] != 0, -(aP + BP[:, 0:1] * k) / BP[:, 1:2], np.nan)
                  for k in (0, 1)]
        pairs = [(np.zeros((C, 1)) + i, np.zeros((C, 1)) + j) for i in (0, 1) for j in (0, 1)]
        pairs += [(s0[k], np.zeros((C, 1)) + k) for k in (0, 1)]
        pairs += [(np.zeros((C, 1)) + k, s1[k]) for k in (0, 1)]
        cands = []
        for a0, a1 in pairs:
            for j in range(4):
                cands.append(np.concatenate([xp_c[:, j:j + 1], a0, a1], axis=1))
        cand = np.stack(cands, axis=1)  # [C, 32, 3]
        cand = np.where(np.abs(cand) < 1e-13, 0.0, cand)
        inside = np.all((cand >= -1e-12) & (cand <= 1 + 1e-12), axis=-1) & \
            ~np.any(np.isnan(cand), axis=-1)
        cand = np.clip(np.nan_to_num(cand), 0, 1)
        # Null types present.
        cand[..., 0] = np.where(G.null_P[:, s][:, None], 1.0, cand[..., 0])
        cand[..., 1] = np.where(G.null_A[:, s, 0][:, None], 1.0, cand[..., 1])
        cand[..., 2] = np.where(G.null_A[:, s, 1][:, None], 1.0, cand[..., 2])
        gP = G.aP[:, s][:, None] + G.BP[:, s, 0][:, None] * cand[..., 1] \
            + G.BP[:, s, 1][:, None] * cand[..., 2]
        gA0 = G.aA[:, s, 0][:, None] + G.BA[:, s, 0][:, None] * cand[..., 0]
        gA1 = G.aA[:, s, 1][:, None] + G.BA[:, s, 1][:, None] * cand[..., 0]
        gP = np.where(G.null_P[:, s][:, None], np.nan, gP)
        gA0 = np.where(G.null_A[:, s, 0][:, None], np.nan, gA0)
        gA1 = np.where(G.null_A[:, s, 1][:, None], np.nan, gA1)
        valid = inside & _ok(cand[..., 0], gP, tol) & _ok(cand[..., 1], gA0, tol) \
            & _ok(cand[..., 2], gA1, tol)
        sub.append((cand, valid))
    return _rows_of(G, sub, tol)


def _rows_of(G, sub, tol):
    """The rows from each sub-game's candidates, through the model's own pairing of
    the sub-games (unchanged: what the oracle checks is the candidates, their
    validity, their uniqueness and their order)."""
    kept = [_unique_rows(cand, valid) for cand, valid in sub]  # (rows [C, 32], count [C])
    S = np.zeros((2,) + sub[0][0].shape)
    for s in (0, 1):
        got = np.take_along_axis(sub[s][0], kept[s][0][..., None], axis=1)
        S[s, :, :got.shape[1]] = got
    return sg._equilibrium_rows(G, S, np.stack([kept[0][1], kept[1][1]]), tol)


def _unique_rows(cand, valid, tol=1e-9):
    """Per row of ``cand`` [C, K, 3], the valid candidates once each (a candidate
    within ``tol`` of one kept before it is dropped), in descending lexicographic
    order: (indices [C, K], the first ``count`` [C] of them kept).  Vectorised
    over rows; the same choice and order as keeping them one by one."""
    C, K = valid.shape
    # The valid candidates of each row first, in their order (few per row).
    first = np.argsort(~valid, axis=-1, kind="stable")
    M = int(valid.sum(-1).max()) if C else 0
    first = first[:, :M]
    sel = np.take_along_axis(cand, first[..., None], axis=1)  # [C, M, 3]
    ok = np.take_along_axis(valid, first, axis=1)
    close = np.abs(sel[:, :, None, :] - sel[:, None, :, :]).max(-1) < tol  # [C, M, M]
    keep = np.zeros((C, M), bool)
    for i in range(M):
        keep[:, i] = ok[:, i] & ~(keep[:, :i] & close[:, i, :i]).any(-1)
    # Stable sort: kept first, then by -x0, -x1, -x2 (ties keep their order).
    order = np.lexsort((-sel[..., 2], -sel[..., 1], -sel[..., 0], ~keep), axis=-1)
    order = np.take_along_axis(first, order, axis=1)
    return order, keep.sum(-1)




def numpy_gains(weights, J_c, J_d, v, c_e):
    """The NumPy gains (antiamp 2026-12-04), the oracle."""
    w = np.asarray(weights, float)
    J_c = np.asarray(J_c, float)
    c_e = np.asarray(c_e, float)
    acc_P, acc_A = sg._acceptance(v)
    C = w.shape[0]
    J00, J01, J10, J11 = sg.class_tables(J_d)
    cross = J11 - J01 - J10 + J00
    aP, gPc = np.zeros((C, 2)), np.zeros((C, 2))
    BP, aA, BA = np.zeros((C, 2, 2)), np.zeros((C, 2, 2)), np.zeros((C, 2, 2))
    null_P, null_A = np.zeros((C, 2), bool), np.zeros((C, 2, 2), bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        for s in (0, 1):
            mP = (sg.SP == s) & (sg.TP == 1)
            FP = (w * mP).sum(-1)
            null_P[:, s] = FP <= 0
            FPs = np.where(FP > 0, FP, 1.0)
            aP[:, s] = (w * mP * acc_P * (J10 - J00)).sum(-1) / FPs - c_e
            gPc[:, s] = (w * mP * acc_P * (J_c[:, 1:] - J_c[:, :1])).sum(-1) / FPs - c_e
            for r in (0, 1):
                both = mP & (sg.SA == r) & (sg.TA == 1)
                BP[:, s, r] = (w * both * acc_P * acc_A * cross).sum(-1) / FPs
                mA = (sg.SP == s) & (sg.SA == r) & (sg.TA == 1)
                FA = (w * mA).sum(-1)
                null_A[:, s, r] = FA <= 0
                FAs = np.where(FA > 0, FA, 1.0)
                aA[:, s, r] = (w * mA * acc_A * (J00 - J01)).sum(-1) / FAs - c_e
                BA[:, s, r] = (w * mA * sg.TP * acc_P * acc_A * (-cross)).sum(-1) / FAs
    return Gains(aP, BP, aA, BA, gPc, null_P, null_A)


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f":
        return a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))
    return np.array_equal(a, b)


def _assert_same(G, tol=1e-10):
    (cc, xc), (dc, xp, xa) = sg.equilibrium_rows(G, tol)
    (cc0, xc0), (dc0, xp0, xa0) = numpy_rows(G, tol)
    for new, old in ((cc, cc0), (xc, xc0), (dc, dc0), (xp, xp0), (xa, xa0)):
        assert _same_bits(new, old)
    return xp, xa


def _random_gains(rng, C):
    """The gains of C random games of the model (random signals, availability and a
    tie-break judge whose evidence cost lies between b and 1 - b, where mixed
    equilibria live), each with a perturbed twin as the delta method solves."""
    W = np.empty((C, 32))
    for i in range(C):
        s = sg.SignalsConfig(p_P=rng.uniform(0.55, 0.95), p_A=rng.uniform(0.55, 0.95),
                             eta=rng.uniform(-0.5, 1.0), eta_mode="fraction",
                             phi=rng.uniform(0.1, 1.0))
        W[i] = sg.class_probabilities([rng.uniform(0.3, 0.7)], [sg.joint_table(s, s.p_P)],
                                      [sg.avail_table(s, rng.uniform(0.1, 0.9))])[0]
    k = rng.integers(0, 32, C)
    twin = W.copy()
    twin[np.arange(C), k] += rng.choice([-1.0, 1.0], C) * np.minimum(1e-5, W[np.arange(C), k] / 2)
    W = np.concatenate([W, twin])
    b = np.tile(rng.uniform(0.05, 0.95, C), 2)
    J_c = np.stack([b, np.ones(2 * C)], axis=1)
    J_d = np.stack([np.stack([b, np.zeros(2 * C)], 1), np.stack([np.ones(2 * C), b], 1)], 1)
    c_e = np.minimum(b, 1 - b) + rng.random(2 * C) * np.abs(1 - 2 * b)
    v = rng.random(2 * C) * (rng.random(2 * C) < 0.5)
    return sg.gains(W, J_c, J_d, v, c_e)


@pytest.mark.parametrize("seed", range(6))
def test_the_compiled_enumeration_is_the_numpy_one_on_random_games(seed):
    rng = np.random.default_rng(seed)
    xp, xa = _assert_same(_random_gains(rng, 1500))
    # mixed equilibria among them (the delta method's perturbed games)
    assert ((xp > 0) & (xp < 1)).any(axis=1).mean() > 0.1


def _edge_gains(rng, C):
    """Gains drawn from few values (0, +-1, +-0.5, 0.25, tiny, 1e-11 off zero), so that
    types are indifferent, switch points land on 0, 1 and each other, slopes vanish and
    candidates coincide; some types null."""
    vals = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.25, -0.25, 2.0, 1e-11, -1e-11,
                     3e-14, 1e-300])
    pick = lambda *shape: rng.choice(vals, size=shape)  # noqa: E731
    null_P = rng.random((C, 2)) < 0.15
    null_A = rng.random((C, 2, 2)) < 0.15
    return Gains(pick(C, 2), pick(C, 2, 2), pick(C, 2, 2), pick(C, 2, 2), pick(C, 2),
                 null_P, null_A)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("tol", [1e-10, 0.0, 1e-6])
def test_the_compiled_enumeration_is_the_numpy_one_on_every_edge(seed, tol):
    rng = np.random.default_rng(100 + seed)
    xp, _ = _assert_same(_edge_gains(rng, 20000), tol)
    assert len(xp) > 20000  # cells with several equilibria (segments' ends, duplicates)


def test_the_comparison_can_fail():
    """A perturbed copy of the oracle's answer is told apart (one ulp of one value)."""
    G = _random_gains(np.random.default_rng(7), 200)
    (_, _), (_, xp, _) = numpy_rows(G)
    moved = xp.copy()
    i = np.flatnonzero((moved > 0) & (moved < 1))[0]
    moved.flat[i] = np.nextafter(moved.flat[i], 2.0)
    assert not _same_bits(moved, xp)
    assert not _same_bits(np.array([0.0]), np.array([-0.0]))


def _gain_inputs(rng, C, rhetoric):
    """Random class weights (some classes empty, so some types null), judges' tables
    (a debate table per antagonist belief with ``rhetoric``), checks and costs."""
    w = rng.dirichlet(np.full(32, 0.5), size=C) * 10.0 ** rng.integers(0, 7, (C, 1))
    w[rng.random((C, 32)) < 0.25] = 0.0
    w[: C // 20] = 0.0  # cells of no weight at all
    J_d = rng.random((C, 2, 2, 2) if rhetoric else (C, 2, 2))
    return w, rng.random((C, 2)), J_d, rng.random(C) * (rng.random(C) < 0.7), rng.random(C)


@pytest.mark.parametrize("rhetoric", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_the_compiled_gains_are_the_numpy_ones(seed, rhetoric):
    args = _gain_inputs(np.random.default_rng(seed), 5000, rhetoric)
    new, old = sg.gains(*args), numpy_gains(*args)
    for name in ("aP", "BP", "aA", "BA", "gPc", "null_P", "null_A"):
        assert _same_bits(getattr(new, name), getattr(old, name)), name
    assert new.null_P.any() and new.null_A.any() and not new.null_A.all()


@pytest.mark.parametrize("seed", range(3))
def test_the_compiled_row_outcomes_are_numpys_outcomes(seed):
    """Each row's metrics at its own protocol (the delta method's perturbed equilibria)
    equal, bit for bit, what the model's NumPy ``outcomes`` gives without standard
    errors; mixed, pure and null-type profiles, both protocols, empty cells."""
    from antiamp.kernels.signals_equilibria import ROW_METRICS, row_outcomes

    rng = np.random.default_rng(seed)
    R = 4000
    w, J_c, J_d, v, _ = _gain_inputs(rng, R, rhetoric=True)
    flat = rng.random((R, 6))
    flat[rng.random((R, 6)) < 0.3] = 1.0
    flat[rng.random((R, 6)) < 0.2] = 0.0
    rp = rng.integers(0, 2, R)
    flat[rp == 0, 2:] = 0.0
    wel = tuple(rng.random(R) * 2 for _ in range(3))
    got = row_outcomes(w, flat, rp, J_c, J_d, v, *wel, sg.CLASS_BITS)
    prof = sg.Profile(np.ones((R, 2)), np.ones((R, 2)), np.ones((R, 2, 2)))
    prof.x_Pc[rp == 0] = flat[rp == 0, :2]
    prof.x_P[rp == 1] = flat[rp == 1, :2]
    prof.x_A[rp == 1] = flat[rp == 1, 2:].reshape(-1, 2, 2)
    ref = sg.outcomes(w, prof, J_c, J_d, v, wel, n=1, se=False, protocol=rp)
    for j, name in enumerate(ROW_METRICS):
        assert _same_bits(got[:, j], ref[name][0][np.arange(R), rp]), name
    assert np.isnan(got[rp == 0, 6:8]).all() and np.isfinite(got[rp == 1, 6]).any()
    assert np.isnan(got[: R // 20, 0]).all()  # no weight: NaN
