"""model=loop: the drift threshold m* and the long-run error against independent
references.

* ``m_threshold`` is what the README and the table say: the largest m in [0, 1] whose
  long-run error is at most e_0, against a brute-force scan (10,001 values of m) of the
  calibrated learner's closed form written here from the README, at the command of
  issue 39 and at 60 random seed-000 (tie-break judge) parameter points;
* a loop that corrects at its configured m never reports m* below it;
* ``e_star`` against a plain iteration of the README's recursion (closed forms of
  Amp and fwc for the tie-break judge: Amp = rho b, fwc = 1 - rho (1 - b)).
"""

import numpy as np
import pytest

from antiamp.models.loop import core as lp
from antiamp.registry import to_model_config


def config(**over):
    return to_model_config({**over, "model": {**over.get("model", {}), "name": "loop"}})[1]


def rates(protocol, rho, b):
    """Seed 000's tie-break judge: (Amp, fwc) in consultancy and debate."""
    if protocol == "consult":
        return rho, 1.0
    return rho * b, 1 - rho * (1 - b)


def fixed_point(m, e_h, amp, fwc, e0):
    """The calibrated learner's long-run error (README: e = (1 - m) e_h + m (e Amp +
    (1 - e)(1 - fwc)), solved for e), clipped to [0, 1]; where the map is the identity
    (every target an endorsement that follows the model) the error stays at e_0."""
    m = np.asarray(m, float)
    den = 1 - m * (amp + fwc - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        e = np.clip(((1 - m) * e_h + m * (1 - fwc)) / den, 0.0, 1.0)
    return np.where(den <= 1e-15, e0, e)


def brute_m_star(e_h, amp, fwc, e0):
    ms = np.linspace(0.0, 1.0, 10_001)
    ok = fixed_point(ms, e_h, amp, fwc, e0) <= e0
    return float(ms[ok][-1]) if ok.any() else 0.0


def _points():
    rng = np.random.default_rng(39)
    pts = [dict(m=0.9, e_h=0.3, p=0.9, rho=0.1, b=0.5)]  # the issue's command
    pts += [dict(m=0.6, e_h=0.1, p=0.75, rho=0.5, b=0.3),
            dict(m=0.0, e_h=0.05, p=0.9, rho=0.9, b=0.9),
            dict(m=1.0, e_h=0.5, p=0.55, rho=1.0, b=1.0),
            dict(m=0.5, e_h=0.0, p=0.99, rho=0.0, b=0.0)]
    for _ in range(60):
        pts.append(dict(m=float(rng.uniform(0, 1)), e_h=float(rng.uniform(0, 0.5)),
                        p=float(rng.uniform(0.5, 0.99)), rho=float(rng.uniform(0, 1)),
                        b=float(rng.uniform(0, 1))))
    return pts


@pytest.mark.parametrize("pt", _points())
def test_m_threshold_against_brute_force(pt):
    c = config(model={"rho": pt["rho"], "p": pt["p"]}, judge={"b": pt["b"]},
               loop={"m": pt["m"], "e_h": pt["e_h"], "paths": 0})
    ov = lp.oversight(c)
    e0 = 1 - pt["p"]
    for prot in ("consult", "debate"):
        amp, fwc = rates(prot, pt["rho"], pt["b"])
        got = lp.thresholds(c, ov, prot)["m_threshold"]
        want = brute_m_star(pt["e_h"], amp, fwc, e0)
        assert abs(got - want) <= 1e-4 + 1e-9, (prot, got, want)
        # Corrects at its own m: the threshold is at least that m.
        if fixed_point(pt["m"], pt["e_h"], amp, fwc, e0) <= e0:
            assert got >= pt["m"] - 1e-12, (prot, got)
        # The long-run error against a plain iteration of the recursion.
        e = e0
        for _ in range(20_000):
            e = min(1.0, max(0.0, (1 - pt["m"]) * pt["e_h"]
                             + pt["m"] * (e * amp + (1 - e) * (1 - fwc))))
        assert lp.long_run(c, ov, prot)["e_star"] == pytest.approx(e, abs=1e-9)


def test_issue_command_m_threshold():
    """antiamp model=loop loop.m=0.9 loop.e_h=0.3 model.p=0.9 model.rho=0.1 loop.paths=0:
    every protocol corrects at m = 0.9 (long-run errors 0.033, 0.075, 0.0375 < e_0 =
    0.1), so m* is at least 0.9 (here 1: m = 1 corrects too), never 0."""
    c = config(model={"rho": 0.1, "p": 0.9}, loop={"m": 0.9, "e_h": 0.3, "paths": 0})
    ov = lp.oversight(c)
    for prot in ("consult", "debate", "escalate"):
        assert lp.long_run(c, ov, prot)["e_star"] < 0.1
        assert lp.thresholds(c, ov, prot)["m_threshold"] == 1.0


@pytest.mark.parametrize("prot", ["consult", "debate", "escalate"])
def test_long_run_error_estimate_covers_the_iteration(prot):
    """With rho feedback the long-run error is iterated, not solved: its reported
    ``e_star_error`` must cover the distance to the fixed point found by a root
    finder (scipy's hybrid method on map(x) - x), at the default stop and when the
    iteration is cut after a few rounds (the estimate then grows with the last step)."""
    from scipy import optimize

    c = config(loop={"rho_gain": 0.5, "m": 0.9, "e_h": 0.1}, model={"rho": 0.3})
    ov = lp.oversight(c)
    full = lp.long_run(c, ov, prot)
    assert full["stable"]

    def gap(x):
        e2, rho2, *_ = lp.step(c.loop, ov, prot, float(x[0]), float(x[1]))
        return [e2 - x[0], rho2 - x[1]]

    root = optimize.root(gap, [full["e_star"], full["rho_star"]], method="hybr",
                         options={"xtol": 1e-15})
    assert root.success
    assert abs(full["e_star"] - root.x[0]) <= full["e_star_error"] + 1e-15
    finite = 0
    for cut in (3, 30, 100, 200, 400):
        early = lp.long_run(c, ov, prot, max_iter=cut)
        dist = abs(early["e_star"] - root.x[0])
        assert dist <= early["e_star_error"], (cut, dist, early["e_star_error"])
        # infinite while the map does not contract where the iteration stands
        assert early["stable"] or early["e_star_error"] == np.inf
        finite += bool(dist > 1e-9 and early["e_star_error"] < 1.0)
    assert finite >= 1  # some cut far from the fixed point with an informative estimate
