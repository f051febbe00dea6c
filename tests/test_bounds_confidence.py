"""Confidence in debate: the exact oversight values within their reported error of
independent references where the judge weighs stated confidence steeply.

At kappa_c = 50 (lam 8: the judge's argument moves by 400 per unit of the logit
difference of the two closing reports) the endorsement is a step across the two
sides' own report terms; Gauss-Legendre across that step converged like 1/n and
its fine-against-coarse difference (8.0e-3) understated the error (0.0138).  The
published-condition reference, 0.52731, is the debate Amp of two independent
high-precision integrations (mpmath, scipy adaptive quadrature), written from the
seed's report model without the code; the model's own simulation of 2,000,000
debates gives 0.52759 +/- 0.0005.

The other points are checked against :func:`reference`, written here another way: the
judge's majority from the binomial law (not the model's jury), each own term
integrated in the clipped report's own coordinate with Gauss-Legendre on pieces split
where the judge's argument leaves [-T, T] (so that every piece is analytic and
resolved: convergence like (1 + pi / T)^-2N), the second side's term nested around
the first's clip boundaries, and Gauss-Hermite over the belief and the shared
component.  Each reference is computed at two resolutions; their difference is its
own error, added to the model's reported ``quad_error`` in the check.
"""

import math

import numpy as np
import pytest
from scipy import special

from antiamp.models.confidence import core as cf
from antiamp.registry import to_model_config

ISSUE = {"model": {"name": "confidence", "p": 0.5, "rho": 1.0},
         "judge": {"kind": "logit", "lam": 8, "mu": -0.3, "kappa": 2, "jury_size": 3},
         "confidence": {"condition": "public_bets", "kappa_c": 50, "ppc_draws": 0}}
#: The reference, to the digits given (half a unit of the last one is added to the bound).
REFERENCE, REF_DIGITS = 0.52731, 0.5e-5


@pytest.mark.slow
def test_steep_confidence_weight_within_its_bound():
    _, c = to_model_config(ISSUE)
    rep, _ = cf.reports_of(c.confidence)
    j = c.judge
    ex, err = cf.oversight_exact_bounded(rep, rep, p=0.5, rho=1.0, lam=j.lam, mu=j.mu,
                                         kappa=j.kappa, kappa_c=50.0, n=j.jury_size,
                                         icc=float(c.confidence.icc), tie=j.jury_tie)
    amp = ex["debate"]["amp"]
    assert abs(amp - REFERENCE) <= err + REF_DIGITS, (amp, err)
    # with rho = 1 both sides always show evidence and the reports do not depend on
    # the truth (public bets: weight 0): debate cannot tell right from wrong
    assert abs(ex["debate"]["amp"] - ex["debate"]["fwc"]) <= 2 * err


# --- an independent reference ------------------------------------------------------

LO, HI = 0.5, 99.5
L_LO, L_HI = math.log(LO / (100 - LO)), math.log(HI / (100 - HI))


def majority(s, n, tie):
    """Pr(a majority of n independent judges endorses), each with logit argument s."""
    q = special.expit(s)
    out = np.zeros_like(q)
    for k in range((n + 1) // 2, n + 1):
        term = math.comb(n, k) * q ** k * (1 - q) ** (n - k)
        out = out + (tie * term if 2 * k == n else term)
    return out


def _gl_pieces(edges, n):
    """Gauss-Legendre nodes and weights on consecutive pieces: edges (..., m) sorted."""
    x, w = np.polynomial.legendre.leggauss(n)
    half = 0.5 * np.diff(edges, axis=-1)
    mid = 0.5 * (edges[..., 1:] + edges[..., :-1])
    z = (mid[..., None] + half[..., None] * x).reshape(edges.shape[:-1] + (-1,))
    wz = (half[..., None] * w).reshape(edges.shape[:-1] + (-1,))
    return z, wz


def own_term(base, own, breaks_L, n):
    """Values L (logit of the clipped report base + own D) and weights of D ~ N(0, 1):
    the two clipped atoms, then Gauss-Legendre on the unclipped stretch of D (within
    +-12) split where L crosses ``breaks_L`` (..., k)."""
    base = np.asarray(base, float)
    lo, hi = (LO - base) / own, (HI - base) / own
    a, b = np.clip(lo, -12, 12), np.clip(hi, -12, 12)
    d_br = (100 * special.expit(breaks_L) - base[..., None]) / own
    edges = np.sort(np.concatenate([a[..., None], np.clip(d_br, a[..., None], b[..., None]),
                                    b[..., None]], -1), -1)
    z, wz = _gl_pieces(edges, n)
    c = np.clip(base[..., None] + own * z, LO, HI) / 100
    L = np.concatenate([np.full(base.shape + (1,), L_LO), np.full(base.shape + (1,), L_HI),
                        np.log(c / (1 - c))], -1)
    W = np.concatenate([special.ndtr(lo)[..., None], special.ndtr(-hi)[..., None],
                        wz * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)], -1)
    return L, W


def reference(rep, p, rho, lam, mu, kappa, kappa_c, n, tie, n_gh=32, n_gl=90, n_s=24, T=25.0):
    """Consultancy's and debate's Amp and fwc (the model's definitions) by nested
    quadrature; the antagonist reports like the protagonist, as side O."""
    beta = special.ndtri(p)
    xs, ws = np.polynomial.hermite_e.hermegauss(n_gh)  # the shared component
    ws = ws / ws.sum()
    xb, wb = np.polynomial.hermite_e.hermegauss(n_s)  # the closing belief
    wb = wb / wb.sum()
    own = math.hypot(rep.side_sd, rep.noise_sd)
    kk = lam * kappa_c
    aP = aA = rep.anchor_debates * rep.anchor
    p11 = rep.anchor_debates * rep.anchor ** 2

    def window(a0, shift=0.0):
        """Logits L where a0 + kk (L - shift) = -T and T."""
        return np.sort(np.stack([shift + (-T - a0) / kk, shift + (T - a0) / kk], -1), -1)

    memo: dict = {}

    def one(base, a0, sign):
        """E jury(a0 + sign kk L) over one side's own term (shape of base)."""
        key = ("one", a0, sign, base.tobytes())
        if key in memo:
            return memo[key]
        L, W = own_term(base, own, window(sign * a0), n_gl)
        memo[key] = (W * majority(a0 + sign * kk * L, n, tie)).sum(-1)
        return memo[key]

    def two(bP, bA, a0):
        """E jury(a0 + kk (L_P - L_A)) over both own terms."""
        key = ("two", a0, bP.tobytes(), bA.tobytes())
        if key in memo:
            return memo[key]
        # the inner (P) integral varies fast where its window meets P's clip logits
        edges = np.concatenate([window(-a0, L) for L in (L_LO, L_HI)], -1)
        LA, WA = own_term(bA, own, np.broadcast_to(edges, bA.shape + (4,)), n_gl)
        LP, WP = own_term(np.broadcast_to(bP[..., None], LA.shape), own,
                          window(a0, LA), n_gl)
        inner = (WP * majority(a0 + kk * (LP - LA[..., None]), n, tie)).sum(-1)
        memo[key] = (WA * inner).sum(-1)
        return memo[key]

    tot = {r: np.zeros(3) for r in (0, 1)}
    for s, w_s in zip(xb, wb):
        B = special.ndtr((beta + math.sqrt(rep.info) * s) / math.sqrt(1 - rep.info))
        a = rep.intercepts[-1]
        bP = a + rep.side_offset + rep.weight * (100 * B - 50) + rep.shared_sd * xs
        bA = a - rep.side_offset + rep.weight * (100 * (1 - B) - 50) + rep.shared_sd * xs
        for right, pr in ((1, B), (0, 1 - B)):
            cons = [(1.0, 1)] if right else [(rho, 1), (1 - rho, 0)]
            deb = [(rho, 1, 1), (1 - rho, 1, 0)] if right else [(rho, 1, 1), (1 - rho, 0, 1)]
            qc = sum(pe * ((1 - aP) * one(bP, lam * (mu + kappa * e), 1.0)
                           + aP * majority(lam * (mu + kappa * e), n, tie))
                     for pe, e in cons if pe > 0)
            qd = 0.0
            for pe, eP, eA in deb:
                if pe == 0:
                    continue
                a0 = lam * (mu + kappa * (eP - eA))
                qd = qd + pe * ((1 - aP - aA + p11) * two(bP, bA, a0)
                                + (aP - p11) * one(bA, a0, -1.0)
                                + (aA - p11) * one(bP, a0, 1.0)
                                + p11 * majority(a0, n, tie))
            tot[right] += w_s * pr * np.array([1.0, ws @ qc, ws @ qd])
    return {prot: {"amp": tot[0][k + 1] / tot[0][0], "fwc": tot[1][k + 1] / tot[1][0]}
            for k, prot in enumerate(cf.PROTOCOLS)}


#: Steep and tail points: (report model, p, rho, lam, mu, kappa, kappa_c, n).
STEEP = [
    (dict(intercepts=(70.0,), weight=0.0, side_offset=5.0, anchor=0.3, anchor_debates=0.5,
          shared_sd=8.0, side_sd=10.0, noise_sd=5.0, info=0.5), 0.5, 1.0, 8, -0.3, 2, 20, 3),
    (dict(intercepts=(75.0,), weight=0.6, side_offset=3.0, anchor=0.2, anchor_debates=1.0,
          shared_sd=6.0, side_sd=12.0, noise_sd=4.0, info=0.6), 0.7, 0.4, 6, 0.2, 1.5, 30, 1),
    (dict(intercepts=(60.0,), weight=0.0, side_offset=0.0, anchor=0.0, anchor_debates=1.0,
          shared_sd=15.0, side_sd=20.0, noise_sd=10.0, info=0.4), 0.4, 0.7, 4, -0.5, 3, 10, 5),
    (dict(intercepts=(85.0,), weight=0.8, side_offset=8.0, anchor=0.5, anchor_debates=0.3,
          shared_sd=3.0, side_sd=4.0, noise_sd=2.0, info=0.7), 0.6, 0.2, 10, 0.0, 1, 50, 3),
    (dict(intercepts=(50.0,), weight=1.0, side_offset=-4.0, anchor=0.1, anchor_debates=1.0,
          shared_sd=10.0, side_sd=6.0, noise_sd=6.0, info=0.3), 0.55, 0.9, 8, 0.5, 2, -25, 3),
    (dict(intercepts=(95.0,), weight=0.0, side_offset=2.0, anchor=0.0, anchor_debates=1.0,
          shared_sd=2.0, side_sd=3.0, noise_sd=1.0, info=0.5), 0.5, 0.5, 8, -0.3, 2, 5, 3),
]


#: Reports that move with the belief need ~100 belief nodes in the reference: those
#: points run with ``-m slow``; the others (a minute together) in the default suite.
@pytest.mark.parametrize("point", [pytest.param(pt, marks=[pytest.mark.slow] if pt[0]["weight"]
                                                else [], id=f"kc{pt[6]}-w{pt[0]['weight']}")
                                   for pt in STEEP])
def test_steep_points_within_their_error(point):
    kw, p, rho, lam, mu, kappa, kappa_c, n = point
    rep = cf.Reports(**kw)
    ex, err = cf.oversight_exact_bounded(rep, rep, p=p, rho=rho, lam=lam, mu=mu,
                                         kappa=kappa, kappa_c=kappa_c, n=n, icc=0.0,
                                         tie=0.5)
    # The closing belief moves the reports by weight x 100 over its range: with a
    # steep judge the integrand in it is steep too, and Gauss-Hermite needs hundreds of
    # nodes (at lam kappa_c = 500, weight 0.8, debate Amp moves by 0.013 from 96 to 144
    # nodes, by 0.004 from 200 to 300; the model reports 0.042 there).
    n_s = (24, 36) if kw["weight"] == 0 else (200, 300)
    ref = reference(rep, p, rho, lam, mu, kappa, kappa_c, n, 0.5, n_s=n_s[0])
    ref2 = reference(rep, p, rho, lam, mu, kappa, kappa_c, n, 0.5, n_gh=48, n_gl=135,
                     n_s=n_s[1])
    for prot in cf.PROTOCOLS:
        for k in ("amp", "fwc"):
            own_err = abs(ref[prot][k] - ref2[prot][k])
            # the reference is sharp enough to judge the reported error
            assert own_err < max(1e-8, 0.2 * err), (prot, k, own_err, err)
            assert abs(ex[prot][k] - ref2[prot][k]) <= err + own_err, (
                prot, k, ex[prot][k], ref2[prot][k], err)
