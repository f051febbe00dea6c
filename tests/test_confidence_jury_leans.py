"""The oversight jury of judges that lean (seed 004's panel inside seed 000's jury).

The oracle is a direct instance-level simulation written here from the model's
description (plain NumPy): each debate draws the protagonist's side (proposition or
opposition, 1/2 each), the jury's seats (n of the J judges, at random), the shared
latent Z and each judge's own term E_j; judge j votes for the protagonist iff
Phi^-1(q) + sigma l_j - sqrt(icc) Z - sqrt(1 - icc) E_j > 0 and the majority decides
(an even split endorses with probability ``tie``).
"""

import math

import numpy as np
import pytest
from scipy import special

import antiamp
from antiamp.config import ConfigError
from antiamp.kernels import confidence as kc
from antiamp.models.confidence import core as cf


def direct_jury(q, n, icc, tie, leans, n_draws, rng):
    """Pr(the jury endorses) for each single-judge probability in ``q``, by drawing every
    vote; returns (estimate, standard error) arrays."""
    leans = np.asarray(leans, float)
    J = len(leans)
    est, se = [], []
    for qq in np.atleast_1d(q):
        side = np.where(rng.random(n_draws) < 0.5, 1.0, -1.0)
        seats = np.argsort(rng.random((n_draws, J)), axis=1)[:, :n]
        z = rng.standard_normal((n_draws, 1))
        e = rng.standard_normal((n_draws, n))
        lat = special.ndtri(qq) + side[:, None] * leans[seats]
        votes = (lat - math.sqrt(icc) * z - math.sqrt(1 - icc) * e > 0).sum(axis=1)
        endorse = (2 * votes > n).astype(float)
        if n % 2 == 0:
            endorse += (2 * votes == n) * (rng.random(n_draws) < tie)
        est.append(endorse.mean())
        se.append(endorse.std(ddof=1) / math.sqrt(n_draws))
    return np.array(est), np.array(se)


def lean_quadrature(q, n, icc, tie, leans):
    x, w = (np.zeros(1), np.ones(1)) if icc == 0 else cf.latent_nodes(icc)
    work = np.empty((n + 1) ** 2)
    return np.array([kc.jury_leans(v, n, icc, tie, x, w, np.asarray(leans, float), work)
                     for v in np.atleast_1d(q)])


CASES = [  # (n, icc, tie, leans)
    (6, 0.3, 0.5, [-0.9, 0.4, 0.1, 0.8, -0.3, -0.1]),    # the whole panel sits
    (3, 0.6, 0.5, [-0.9, 0.4, 0.1, 0.8, -0.3, -0.1]),    # 3 of 6 seated at random
    (1, 0.0, 0.5, [1.2, -0.4, 0.3, -1.1]),               # one judge of four
    (4, 0.2, 0.3, [0.5, -0.2, 1.4, -0.6, 0.0]),          # even jury: ties at 0.3
]


@pytest.mark.parametrize("n,icc,tie,leans", CASES)
def test_lean_jury_against_direct_simulation(n, icc, tie, leans):
    q = np.array([0.05, 0.3, 0.5, 0.72, 0.97])
    sim, se = direct_jury(q, n, icc, tie, leans, 200_000, np.random.default_rng(n))
    exact = lean_quadrature(q, n, icc, tie, leans)
    assert np.all(np.abs(sim - exact) < 5 * se + 1e-12), (sim, exact, se)


def test_leans_matter_and_zero_leans_are_todays_jury():
    """Judges that lean against each other make a jury noisier than interchangeable ones
    (its endorsement moves toward 1/2); with every lean 0 the jury is today's
    shared-latent jury (any n of the J alike judges)."""
    x, w = cf.latent_nodes(0.3)
    lb = kc.log_binom_row(5)
    q = np.array([0.1, 0.35, 0.65, 0.9])
    plain = np.array([kc.jury_prob(v, 5, 0.3, 0.5, x, w, lb) for v in q])
    zero = lean_quadrature(q, 5, 0.3, 0.5, np.zeros(7))
    np.testing.assert_allclose(zero, plain, atol=1e-13)
    lean = lean_quadrature(q, 5, 0.3, 0.5, [1.0, -1.0, 0.5, -0.5, 0.0, 0.8, -0.8])
    assert np.all(np.abs(lean - 0.5) < np.abs(plain - 0.5))


def test_lean_table_interpolates_the_quadrature():
    leans = np.array([-0.9, 0.4, 0.1, 0.8, -0.3, -0.1])
    jury = cf.lean_jury(4, 0.4, 0.5, leans)
    s = np.linspace(-39.5, 39.5, 997)
    q = special.expit(s)
    np.testing.assert_allclose(jury(s), lean_quadrature(q, 4, 0.4, 0.5, leans), atol=1e-9)
    # beyond the table: the quadrature itself
    far = np.array([-45.0, -60.0])
    np.testing.assert_allclose(jury(far), lean_quadrature(special.expit(far), 4, 0.4, 0.5,
                                                          leans), rtol=1e-12, atol=0)


def _rep(other=False):
    if other:
        return cf.Reports((55.0, 56.0, 57.0), weight=0.1, anchor=0.5, anchor_debates=0.4,
                          shared_sd=3.0, side_sd=1.0, noise_sd=8.0, info=0.5)
    return cf.Reports((70.0, 76.0, 82.0), weight=0.3, side_offset=1.5, anchor=0.2,
                      anchor_debates=0.6, shared_sd=5.0, side_sd=4.0, noise_sd=6.0, info=0.5)


def direct_oversight(p, rho, lam, mu, kappa, n, icc, tie, leans, n_draws, rng):
    """Amp of consultancy and debate (kappa_c = 0: reports do not move the judge), every
    instance drawn: the protagonist right w.p. p, the false side's evidence w.p. rho,
    then the jury's votes as in :func:`direct_jury`."""
    right = rng.random(n_draws) < p
    fab = rng.random(n_draws) < rho
    ep = np.where(right, 1.0, fab)
    ea = np.where(right, fab, 1.0)
    out = {}
    for prot, s in (("consult", lam * (mu + kappa * ep)),
                    ("debate", lam * (mu + kappa * (ep - ea)))):
        wrong = ~right
        qs = special.expit(s[wrong])
        leans_ = np.asarray(leans, float)
        J = len(leans_)
        m = int(wrong.sum())
        side = np.where(rng.random(m) < 0.5, 1.0, -1.0)
        seats = np.argsort(rng.random((m, J)), axis=1)[:, :n]
        z = rng.standard_normal((m, 1))
        e = rng.standard_normal((m, n))
        lat = special.ndtri(qs)[:, None] + side[:, None] * leans_[seats]
        votes = (lat - math.sqrt(icc) * z - math.sqrt(1 - icc) * e > 0).sum(axis=1)
        endorse = (2 * votes > n).astype(float)
        if n % 2 == 0:
            endorse += (2 * votes == n) * (rng.random(m) < tie)
        out[prot] = (endorse.mean(), endorse.std(ddof=1) / math.sqrt(m))
    return out


ARGS = dict(p=0.7, rho=0.4, lam=1.3, mu=0.2, kappa=1.5, n=3, icc=0.35, tie=0.5)
LEANS = np.array([-0.8, 0.5, 0.2, 0.9, -0.4, -0.4])


def test_kernel_exact_and_direct_oversight_agree():
    """The Monte Carlo kernel (reading the lean table), the quadrature and the direct
    instance-level simulation give the same Amp within 5 standard errors."""
    rep = _rep()
    kw = dict(ARGS, kappa_c=0.0)
    ex, err = cf.oversight_exact_bounded(rep, rep, **kw, leans=LEANS)
    mc = cf.simulate_oversight(rep, rep, **kw, n_instances=400_000, seed=3, leans=LEANS)
    dr = direct_oversight(**ARGS, leans=LEANS, n_draws=400_000, rng=np.random.default_rng(9))
    for prot in cf.PROTOCOLS:
        a, a_se = mc[prot]["amp"], mc[prot]["amp_se"]
        d, d_se = dr[prot]
        assert abs(a - ex[prot]["amp"]) < 5 * a_se + err, (prot, a, ex[prot]["amp"])
        assert abs(d - ex[prot]["amp"]) < 5 * d_se + err, (prot, d, ex[prot]["amp"])
    # and the leans change the answer (beyond the noise) against interchangeable judges
    # the shared-latent jury read from its table (within 1e-9 of its quadrature), as the
    # model reads it: the quadrature at every node took six minutes
    plain, _ = cf.oversight_exact_bounded(
        rep, rep, **kw, jury=cf.tabulated_jury(ARGS["n"], ARGS["icc"], ARGS["tie"]))
    assert abs(plain["debate"]["amp"] - ex["debate"]["amp"]) > 10 * mc["debate"]["amp_se"]


def test_kernel_and_exact_agree_with_stated_confidence_weighed():
    rep_p, rep_a = _rep(), _rep(True)
    kw = dict(ARGS, kappa_c=0.7, n=6, icc=0.25)
    ex, err = cf.oversight_exact_bounded(rep_p, rep_a, **kw, leans=LEANS + 0.3)
    mc = cf.simulate_oversight(rep_p, rep_a, **kw, n_instances=300_000, seed=4,
                               leans=LEANS + 0.3)
    for prot in cf.PROTOCOLS:
        for k in ("amp", "fwc"):
            assert abs(mc[prot][k] - ex[prot][k]) < 5 * mc[prot][k + "_se"] + err, (prot, k)


def _votes(n=80, seed=2):
    a = np.array([-0.6, 0.3, 0.6, 1.2, 0.0, 0.4])
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 1))
    e = rng.standard_normal((n, 6))
    return (a - math.sqrt(0.3) * z - math.sqrt(0.7) * e > 0).astype(int).tolist()


CFG = {"model": {"name": "confidence"}, "judge": {"kind": "logit", "jury_size": 5},
       "run": {"n_instances": 20_000, "progress": False}}


def test_model_uses_the_leans_and_none_gives_todays_bits():
    votes = _votes()
    lean = antiamp.simulate({**CFG, "confidence": {"votes": votes, "ppc_draws": 0}})
    none = antiamp.simulate({**CFG, "confidence": {"votes": votes, "ppc_draws": 0,
                                                   "jury_leans": "none"}})
    assert float(lean.jury_leans_used) == 1 and float(none.jury_leans_used) == 0
    # interchangeable judges are the jury with the fitted icc configured: the same bits
    icc = float(none.icc)
    plain = antiamp.simulate({**CFG, "confidence": {"icc": icc, "ppc_draws": 0}})
    for k in ("amp", "amp_exact", "fwc", "amp_gap", "kappa_c_off"):
        np.testing.assert_array_equal(none[k].values, plain[k].values)
    # the leans move the exact Amp (its simulation agrees with it)
    assert np.all(np.abs(lean.amp.values - lean.amp_exact.values)
                  < 5 * lean.amp_se.values + float(lean.quad_error))
    assert not np.allclose(lean.amp_exact.values, none.amp_exact.values, atol=1e-3)
    from antiamp.models.confidence.model import format_confidence

    assert "seats 5 of these judges at random" in format_confidence(lean)


@pytest.mark.parametrize("over,msg", [
    ({"judge": {"kind": "logit", "jury_size": 7}}, "judge.jury_size must lie in [1, 6]"),
    ({"confidence": {"jury_leans": "sideways"}}, "confidence.jury_leans must be one of"),
])
def test_bad_lean_jury_is_refused(over, msg):
    cfg = {**CFG, "confidence": {"votes": _votes(), "ppc_draws": 0}}
    for k, v in over.items():
        cfg[k] = {**cfg[k], **v}
    with pytest.raises(ConfigError) as exc:
        antiamp.simulate(cfg)
    assert msg in str(exc.value)


def test_instances_beyond_the_table_with_strong_leans_are_refused():
    with pytest.raises(ConfigError, match="below the jury table"):
        cf.lean_table(1, 0.0, 0.5, [8.0, -8.0], s_min=-60.0)
    cf.lean_table(1, 0.0, 0.5, [0.5, -0.5], s_min=-60.0)  # negligible there: accepted


def test_cell_figure_shows_the_vote_histograms(tmp_path):
    from antiamp.models.confidence.model import plot_cell

    ds = antiamp.simulate({**CFG, "run": {"n_instances": 2000, "progress": False},
                           "confidence": {"votes": _votes(), "ppc_draws": 0}})
    files = plot_cell(ds, tmp_path / "cell.png")
    assert files and all(p.exists() and p.stat().st_size > 0 for p in files)
    import matplotlib.image

    # four panels: the figure is two panels high (three panels fit in one row)
    h, w = matplotlib.image.imread(tmp_path / "cell.png").shape[:2]
    assert h > 0.8 * w


@pytest.mark.parametrize("icc", [0.0, 0.4])
def test_one_judge_of_the_panel_in_closed_form(icc):
    """A jury of one is one of the J judges at random, on a random side: its
    endorsement is the mean over judges and sides of Phi(Phi^-1(q) +- l_j), whatever
    icc (a single judge's latent is standard normal)."""
    leans = np.array([1.1, -0.3, 0.4, -1.2])
    q = np.array([0.02, 0.3, 0.5, 0.8, 0.99])
    zq = special.ndtri(q)[:, None]
    closed = 0.5 * (special.ndtr(zq + leans) + special.ndtr(zq - leans)).mean(axis=1)
    np.testing.assert_allclose(lean_quadrature(q, 1, icc, 0.5, leans), closed, atol=1e-12)


def test_absolute_leans_add_the_panel_mean():
    fv = {"m": -0.4, "leans": np.array([0.3, -0.1, -0.2])}
    np.testing.assert_allclose(cf.jury_leans_of(fv, "relative"), fv["leans"])
    np.testing.assert_allclose(cf.jury_leans_of(fv, "absolute"), fv["leans"] - 0.4)
    assert cf.jury_leans_of(fv, "none") is None
