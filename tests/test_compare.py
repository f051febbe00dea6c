"""Every protocol on one task (model=compare): the mapping of one task into each
seed's model, checked against closed forms written here independently, and every
protocol's simulated values against its exact ones.

* seed 000 with a logit judge: consultancy Amp = rho s(mu + kappa) + (1 - rho) s(mu)
  and debate Amp = rho s(mu) + (1 - rho) s(mu - kappa) (s(z) = sigmoid(lam z)); a
  jury of n replaces each probability q by Pr(Bin(n, q) > n / 2);
* seed 001 with x = 1: detector 1 wrong, detector 2 (independent, eta = 0) right
  with probability p; ColMAD then loses only when the wrong side's quote passes
  (rho) and the judge errs; CopMAD after R rounds loses when the judge errs with
  or without the wrong side's passed quote (rhetoric off);
* seed 002: with no false alarms, no false dissent, a perfect human and escalation
  at one dissent, Amp(memo) = e^-L (e^(L q) - 1) / (1 - p), L = -ln(p) (1 - d r)^k,
  q = (1 - s)^P, and the summary's Amp a series summed here;
* seed 003: the first pass is right with probability p (an independent integral
  over the pool bias);
* every metric of every protocol by the models' kernels within 5 SE of the exact
  values, and the combined standard errors against the spread over seeds.
"""

import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import expit

from antiamp.models.compare import core as cmp
from antiamp.config import ConfigError
from antiamp.registry import to_model_config

TASK = {"model": {"name": "compare", "p": 0.75, "rho": 0.35, "pi": 0.4},
        "judge": {"kind": "logit", "lam": 1.3, "mu": 0.4, "kappa": 1.8},
        "compare": {"jury_size": 5}}


def _cfg(**over):
    cfg = {k: dict(v) for k, v in TASK.items()}
    for sec, vals in over.items():
        cfg.setdefault(sec, {}).update(vals)
    return to_model_config(cfg)[1]


def _jury(q, n):
    return float(stats.binom.sf(n // 2, n, q)) if n > 1 else q


def test_seed000_protocols_match_closed_forms():
    c = _cfg()
    ex = cmp.exact(c)
    i = cmp.NAMES.index
    lam, mu, ka, rho = 1.3, 0.4, 1.8, 0.35
    s = lambda z: float(expit(lam * z))  # noqa: E731
    for n, cons, deb in ((1, "consult", "debate"), (5, "consult_jury", "debate_jury")):
        amp_c = rho * _jury(s(mu + ka), n) + (1 - rho) * _jury(s(mu), n)
        amp_d = rho * _jury(s(mu), n) + (1 - rho) * _jury(s(mu - ka), n)
        assert ex["amp"][i(cons)] == pytest.approx(amp_c, abs=1e-12)
        assert ex["amp"][i(deb)] == pytest.approx(amp_d, abs=1e-12)
        # debate, the model right: the truth side holds evidence, the antagonist's passes w.p. rho
        fwc_d = rho * _jury(s(mu), n) + (1 - rho) * _jury(s(mu + ka), n)
        assert ex["fwc"][i(deb)] == pytest.approx(fwc_d, abs=1e-12)
        assert ex["acc"][i(deb)] == pytest.approx(0.75 * fwc_d + 0.25 * (1 - amp_d), abs=1e-12)
        assert ex["cost"][i(cons)] == 1 + n and ex["cost"][i(deb)] == 2 + n
    assert ex["amp"][i("unchecked")] == 1.0 and ex["acc"][i("unchecked")] == 0.75


@pytest.mark.parametrize("rounds", [1, 3])
def test_seed001_protocols_match_closed_forms(rounds):
    c = _cfg(colmad={"hack": 0.0, "r_sd": 0.0, "rounds": rounds, "delta": 0.3})
    ex = cmp.exact(c)
    i = cmp.NAMES.index
    p, rho, pi, lam, mu, ka = 0.75, 0.35, 0.4, 1.3, 0.4, 1.8
    w = {1: pi, 0: 1 - pi}  # Pr(omega), independent of detector 1's correctness
    sgn = {1: 1.0, 0: -1.0}  # the judge's mu leans toward "error" (omega = 1)
    lose_col = sum(w[o] * rho * (1 - expit(lam * sgn[o] * mu)) for o in (0, 1))
    rR = 1 - (1 - rho) ** rounds
    lose_cop = sum(w[o] * (rR * (1 - expit(lam * sgn[o] * mu))
                           + (1 - rR) * (1 - expit(lam * (sgn[o] * mu + ka)))) for o in (0, 1))
    assert ex["amp"][i("colmad")] == pytest.approx((1 - p) + p * lose_col, abs=1e-12)
    assert ex["amp"][i("copmad")] == pytest.approx((1 - p) + p * lose_cop, abs=1e-12)
    # the model right: it loses only on disagreement (detector 2 wrong, w.p. 1 - p), and
    # then the roles swap (detector 1 is the right side)
    assert ex["fwc"][i("colmad")] == pytest.approx(1 - (1 - p) * lose_col, abs=1e-12)
    # calls: two detectors, and on a disagreement (w.p. 2 p (1 - p)) two per round used
    # plus the judge; with x = 1 ColMAD's debate ends in its first round
    dis = 2 * p * (1 - p)
    assert ex["cost"][i("colmad")] == pytest.approx(2 + dis * (2 + rho), abs=1e-12)
    assert ex["cost"][i("copmad")] == pytest.approx(2 + dis * (2 * rounds + 1), abs=1e-12)


def test_seed002_mediation_matches_closed_forms():
    med = {"false_alarm": 0.0, "false_dissent": 0.0, "human_accuracy": 1.0, "escalate_at": 1,
           "perspectives": 3, "dissent": 0.4, "detect": 0.5, "repair": 0.6, "iterations": 2,
           "erase": 0.7}
    c = _cfg(mediation=med)
    ex = cmp.exact(c)
    i = cmp.NAMES.index
    p = 0.75
    L = -math.log(p) * (1 - 0.5 * 0.6) ** 2
    q = (1 - 0.4) ** 3
    assert ex["amp"][i("foam_memo")] == pytest.approx(
        math.exp(-L) * (math.exp(L * q) - 1) / (1 - p), abs=1e-12)
    # summary: no escalation when no perspective's dissent survives erasure
    n = np.arange(1, 80)
    keep = 1 - (1 - (1 - 0.4) ** n) * (1 - 0.7)
    series = float(np.sum(stats.poisson.pmf(n, L) * keep ** 3))
    assert ex["amp"][i("foam_summary")] == pytest.approx(series / (1 - p), abs=1e-12)
    assert ex["fwc"][i("foam_memo")] == pytest.approx(1.0, abs=1e-15)
    # escalated = a residual flaw and a dissent: Pr(residual >= 1) - Pr(wrong, unescalated)
    esc = (1 - math.exp(-L)) - math.exp(-L) * (math.exp(L * q) - 1)
    assert ex["cost"][i("foam_memo")] == pytest.approx(3 * 2 + 1 + 20.0 * esc, abs=1e-12)


def test_seed003_first_pass_is_right_with_probability_p():
    c = _cfg(redeliberation={"bias": 2.0, "bias_sd": 6.0, "contested": 0.4})
    mp = cmp.mapped(c)
    par = mp.redeliberation
    acc = 0.0
    for t, share in ((0, 0.6), (1, 0.4)):
        sd = par.noise[t] / math.sqrt(par.runs)
        for s, ps in ((1, par.p_true), (-1, 1 - par.p_true)):
            f = lambda b: stats.norm.pdf(b, 2.0, 6.0) * stats.norm.cdf(  # noqa: E731
                (par.margin[t] + s * b) / sd)
            acc += share * ps * integrate.quad(f, -60, 60, epsabs=1e-13, limit=200)[0]
    assert acc == pytest.approx(0.75, abs=1e-9)
    assert par.margin[0] / par.margin[1] == pytest.approx(25.0 / 6.0)  # one factor on both
    assert par.evidence == 1.0 and par.rho == 0.35


SIM_CASES = [
    {},
    {"model": {"p": 0.9, "rho": 0.1}, "judge": {"mu": -0.3, "lam": 2.0},
     "colmad": {"eta": 0.6, "rounds": 2}, "mediation": {"erase": 0.5, "escalate_at": 2},
     "redeliberation": {"bias_sd": 12.0, "hazard": 0.3}, "compare": {"jury_size": 3}},
]


@pytest.mark.parametrize("over", SIM_CASES)
def test_every_protocol_simulated_within_5_se_of_exact(over):
    c = _cfg(**over)
    mp = cmp.mapped(c)
    ex = cmp.exact(c, mp)
    n = 150_000
    sim = cmp.simulate(c, n, 11, mp=mp)
    for k in cmp.METRICS:
        v, se = sim[k]
        for j, name in enumerate(cmp.NAMES):
            if se[j] == 0:  # a constant, or an event too rare to be seen in n (rule of three)
                assert abs(v[j] - ex[k][j]) <= max(1e-12, 3 / n), (k, name, v[j], ex[k][j])
            else:
                assert abs(v[j] - ex[k][j]) < 5 * se[j], (k, name, v[j], ex[k][j], se[j])


def test_standard_errors_match_spread_over_seeds():
    c = _cfg()
    mp = cmp.mapped(c)
    runs = [cmp.simulate(c, 4000, s, mp=mp) for s in range(24)]
    for k in ("amp", "acc", "cost"):
        vals = np.array([r[k][0] for r in runs])
        ses = np.array([r[k][1] for r in runs])
        for j, name in enumerate(cmp.NAMES):
            if np.all(ses[:, j] == 0):
                continue
            ratio = vals[:, j].std(ddof=1) / ses[:, j].mean()
            assert 0.55 < ratio < 1.6, (k, name, ratio)


def test_front():
    amp = np.array([1.0, 0.5, 0.6, 0.2, 0.2, np.nan])
    cost = np.array([1.0, 2.0, 3.0, 5.0, 6.0, 1.0])
    assert cmp.front(amp, cost).tolist() == [True, True, False, True, False, False]


def test_front_ties_values_equal_up_to_rounding():
    """Two protocols at cost 7 (one summed as 7.000000000000002): the one with the lower
    Amp dominates; a genuine difference of 1e-6 still counts."""
    amp = np.array([0.16, 0.08, 0.3])
    assert cmp.front(amp, np.array([7.0, 7.000000000000002, 1.0])).tolist() == \
        [False, True, True]
    assert cmp.front(amp, np.array([7.0, 7.000001, 1.0])).tolist() == [True, True, True]


def _front_one_by_one(amp, cost, rtol=cmp.FRONT_RTOL):
    """The front's definition, protocol by protocol (the reference of the vectorised
    :func:`front`)."""
    out = []
    for a in range(len(amp)):
        if not (np.isfinite(amp[a]) and np.isfinite(cost[a])):
            out.append(False)
            continue
        dominated = False
        for b in range(len(amp)):
            if not (np.isfinite(amp[b]) and np.isfinite(cost[b])):
                continue
            ta = rtol * max(abs(amp[a]), abs(amp[b]))
            tc = rtol * max(abs(cost[a]), abs(cost[b]))
            if (amp[b] <= amp[a] + ta and cost[b] <= cost[a] + tc
                    and (amp[b] < amp[a] - ta or cost[b] < cost[a] - tc)):
                dominated = True
        out.append(not dominated)
    return out


def test_front_of_a_block_is_each_cells_front():
    """A block's fronts at once ([cell, protocol]) agree with the definition applied to
    each cell alone: ties (exact and within the tolerance), NaN and infinities."""
    rng = np.random.default_rng(7)
    amp = rng.choice([0.0, 0.1, 0.2, 0.2 + 1e-12, 0.5, np.nan, np.inf, -np.inf], (400, 11))
    cost = rng.choice([1.0, 2.0, 7.0, 7.000000000000002, 7.000001, np.nan, np.inf], (400, 11))
    got = cmp.front(amp, cost)
    assert got.shape == (400, 11)
    for i in range(400):
        assert got[i].tolist() == _front_one_by_one(amp[i], cost[i]), i
        assert cmp.front(amp[i], cost[i]).tolist() == got[i].tolist()
    assert got.any() and not got.all()


def test_model_runs_and_reports():
    from antiamp.models.compare.model import format_compare
    from antiamp.sweeps.blocks import run_cell

    ds = run_cell({**TASK, "run": {"n_instances": 20_000}})
    assert list(ds.protocol.values) == list(cmp.NAMES)
    d = ds.sel(protocol="debate")
    assert abs(float(d.amp) - float(d.amp_exact)) < 5 * float(d.amp_se)
    assert bool(ds.on_front.sel(protocol="unchecked"))
    text = format_compare(ds)
    for label, _ in cmp.PROTOCOLS.values():
        assert label in text


@pytest.mark.parametrize("over,field", [
    ({"judge": {"kind": "tiebreak"}}, "judge.kind"),
    ({"judge": {"jury_size": 3}}, "judge.jury_size"),
    ({"compare": {"jury_size": 0}}, "compare.jury_size"),
    ({"model": {"p": 1.0}}, "model.p"),
    ({"model": {"c_e": 0.1}}, "model.c_e"),
    ({"colmad": {"sens_1": 0.9}}, "colmad.sens_1"),
    ({"mediation": {"flaws": 3.0}}, "mediation.flaws"),
    ({"redeliberation": {"evidence": 0.5}}, "redeliberation.evidence"),
    ({"redeliberation": {"bias": 30.0, "p_true": 0.9}, "model": {"p": 0.6}}, "model.p must exceed"),
    ({"colmad": {"rounds": 0}}, "colmad.rounds"),
])
def test_bad_input_names_the_field(over, field):
    with pytest.raises(ConfigError, match=field):
        _cfg(**over)
