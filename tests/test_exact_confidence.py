"""model=confidence: the exact oversight values against an independent reference.

The reference is a plain NumPy simulation written from the module's docstring (the
outcome index, the belief, the reports with their shared and own terms, anchoring with
one uniform per debate, clipping to [0.5, 99.5], the logit judge Rao-Blackwellised):
the exact values lie within 5 SE of it at the command of issue 39 (where the 24-node
Gauss-Hermite grid over the clipping kinks gave 0.4635 for a true 0.4807) and at 50
random and extreme points (wide spreads, steep judges, anchoring, belief weight); the
compiled kernel lies within 5 SE of the exact values; the reported error estimate is
small.
"""

import math
from dataclasses import replace

import numpy as np
from scipy import special

from antiamp.models.confidence import core as cf

ISSUE = dict(p=0.5, rho=1.0, lam=3.0, mu=0.0, kappa=2.0, kappa_c=5.0)


def numpy_oversight(rep_P, rep_A, p, rho, lam, mu, kappa, kappa_c, n, seed):
    """{protocol: (amp, amp_se, fwc, fwc_se)} by plain simulation (single judge)."""
    rng = np.random.default_rng(seed)
    info = rep_P.info
    beta = special.ndtri(p)
    Y = beta + math.sqrt(info) * rng.standard_normal(n)
    B = special.ndtr(Y / math.sqrt(1 - info))
    right = Y + math.sqrt(1 - info) * rng.standard_normal(n) > 0
    U = rng.standard_normal(n)

    def report(rep, belief, sign):
        own = math.sqrt(rep.side_sd ** 2 + rep.noise_sd ** 2)
        c = (rep.intercepts[-1] + sign * rep.side_offset + rep.weight * (100 * belief - 50)
             + rep.shared_sd * U + own * rng.standard_normal(n))
        return c

    cP, cA = report(rep_P, B, 1.0), report(rep_A, 1 - B, -1.0)
    V = rng.random(n)  # one uniform per debate: anchoring debates for each side
    cP = np.where((V < rep_P.anchor_debates) & (rng.random(n) < rep_P.anchor), 50.0, cP)
    cA = np.where((V < rep_A.anchor_debates) & (rng.random(n) < rep_A.anchor), 50.0, cA)
    LP, LA = (special.logit(np.clip(c, 0.5, 99.5) / 100) for c in (cP, cA))
    fal = rng.random(n) < rho
    eP = np.where(right, 1.0, fal)
    eA = np.where(right, fal, 1.0)
    q = {"consult": special.expit(lam * (mu + kappa * eP + kappa_c * LP)),
         "debate": special.expit(lam * (mu + kappa * (eP - eA) + kappa_c * (LP - LA)))}
    out = {}
    for prot, v in q.items():
        w, r = v[~right], v[right]
        out[prot] = (w.mean(), w.std(ddof=1) / math.sqrt(len(w)),
                     r.mean(), r.std(ddof=1) / math.sqrt(len(r)))
    return out


def _reports(condition):
    return cf.fit_condition(condition).rep


def _points():
    rng = np.random.default_rng(39)
    base = [_reports(c) for c in ("self_debate", "cross_model")]
    pts = [(base[0], base[0], ISSUE)]
    extremes = [dict(p=0.5, rho=1.0, lam=3.0, mu=0.0, kappa=2.0, kappa_c=10.0),
                dict(p=0.9, rho=0.2, lam=5.0, mu=-1.0, kappa=3.0, kappa_c=8.0),
                dict(p=0.6, rho=0.7, lam=0.5, mu=0.5, kappa=1.0, kappa_c=0.0)]
    for ex in extremes:
        pts.append((replace(base[0], shared_sd=25.0, side_sd=20.0), base[1], ex))
    while len(pts) < 50:
        rP = replace(base[int(rng.integers(2))], shared_sd=float(rng.uniform(0, 25)),
                     side_sd=float(rng.uniform(0, 20)), noise_sd=float(rng.uniform(1, 20)),
                     weight=float(rng.uniform(-1, 1)),
                     intercepts=(50.0, 60.0, float(rng.uniform(30, 99))),
                     anchor=float(rng.uniform(0, 1)), anchor_debates=float(rng.uniform(0, 1)))
        rA = replace(rP, side_offset=float(rng.uniform(-5, 5)),
                     noise_sd=float(rng.uniform(1, 20)))
        pts.append((rP, rA, dict(p=float(rng.uniform(0.3, 0.95)), rho=float(rng.uniform(0, 1)),
                                 lam=float(rng.uniform(0.2, 5)), mu=float(rng.uniform(-1, 1)),
                                 kappa=float(rng.uniform(0, 3)),
                                 kappa_c=float(rng.uniform(0, 8)))))
    return pts


def test_issue_command_value():
    rep = _reports("self_debate")
    ex, err = cf.oversight_exact_bounded(rep, rep, **ISSUE)
    assert abs(ex["debate"]["amp"] - 0.4807) < 5e-4, ex
    assert err < 1e-5
    ref = numpy_oversight(rep, rep, **ISSUE, n=2_000_000, seed=1)
    for prot in cf.PROTOCOLS:
        amp, amp_se, fwc, fwc_se = ref[prot]
        assert abs(ex[prot]["amp"] - amp) < 5 * amp_se, (prot, ex[prot], ref[prot])
        assert abs(ex[prot]["fwc"] - fwc) < 5 * fwc_se, (prot, ex[prot], ref[prot])


def test_exact_against_numpy_simulation_at_50_points():
    bad = []
    for i, (rP, rA, kw) in enumerate(_points()):
        ex, err = cf.oversight_exact_bounded(rP, rA, **kw)
        ref = numpy_oversight(rP, rA, **kw, n=300_000, seed=100 + i)
        for prot in cf.PROTOCOLS:
            amp, amp_se, fwc, fwc_se = ref[prot]
            for k, v, se in (("amp", amp, amp_se), ("fwc", fwc, fwc_se)):
                if not abs(ex[prot][k] - v) <= 5 * se + err:
                    bad.append((i, prot, k, ex[prot][k], v, se))
    assert not bad, bad


def test_kernel_within_5se_of_exact():
    rep = _reports("self_debate")
    for kw in (ISSUE, dict(p=0.7, rho=0.4, lam=2.0, mu=0.3, kappa=1.5, kappa_c=3.0)):
        ex, _ = cf.oversight_exact_bounded(rep, rep, **kw)
        sim = cf.simulate_oversight(rep, rep, **kw, n_instances=400_000, seed=5)
        for prot in cf.PROTOCOLS:
            for k in ("amp", "fwc", "acc"):
                assert abs(sim[prot][k] - ex[prot][k]) < 5 * sim[prot][f"{k}_se"], (
                    prot, k, sim[prot], ex[prot])
