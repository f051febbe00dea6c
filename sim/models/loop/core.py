"""Closed-loop oversight (seed 000, sections 1-2 and 7, open questions (iv) and (v)):
the labels oversight endorses train the model, round after round.

The oversight of one round is seed 000's baseline transcript (the true side always
has passing evidence, the false side with probability rho) judged by the configured
judge or jury under consultancy, debate, or an escalation policy (consultancy, and
debate when a flag fires or an audit draws the case, within a challenger budget).
Its conditional endorsement rates Amp = Pr(y = a | a wrong) and
fwc = Pr(y = a | a right) drive the loop:

* calibrated learner, learning rate r, learner drift delta:
  ``e_{t+1} = (1 - r) e_t + r [(1 - m) e_h + m (e_t Amp + (1 - e_t)(1 - fwc)) + delta]``,
  linear with slope ``1 - r + r m (Amp + fwc - 1)`` when Amp and fwc do not move;
* majority learner: a type whose answer is wrong keeps it when more than half its
  n targets are wrong (ties keep the answer), each target wrong with probability
  ``q_w = m Amp + (1 - m) e_h``; a right type turns wrong with
  ``q_r = m (1 - fwc) + (1 - m) e_h``: a two-state chain per type.

This module holds the exact side (the recursion, its fixed points, stability,
thresholds, the escalation policy's Pareto front and cheapest design) and the
call of the Monte Carlo kernel (:mod:`antiamp.kernels.loop`), which simulates the
same loop with finite batches, path by path.
"""

from __future__ import annotations

import math

import numpy as np

from ...config import ConfigError
from .config import ESCALATE_TO, FLAGS, LEARNERS, LoopConfig  # noqa: F401

__all__ = ["LoopConfig", "PROTOCOLS", "FLAGS", "validate_loop", "Oversight", "oversight",
           "step", "exact_path", "meanfield_path", "expected_path", "long_run", "thresholds", "policy_front", "cheapest_policy",
           "simulate", "majority_tails", "type_tails", "is_linear"]

PROTOCOLS = ("consult", "debate", "escalate")
#: Audit rates of the escalation policy's Pareto front.
AUDIT_LEVELS = np.round(np.linspace(0.0, 1.0, 21), 10)
#: Bound on paths x rounds (memory of the per-path records) and on the instance-rounds
#: of one cell (a run of hours is a typo, not a plan).
MAX_RECORDS = 5_000_000
MAX_DRAWS = 20_000_000_000
#: Largest loop.batch for which :func:`expected_path` builds its Markov chain (a dense
#: (batch + 1)**2 transition matrix, 32 MB at 2000).
CHAIN_MAX_BATCH = 2000


def ignore_instances(cfg: dict) -> dict:
    """The loop's ``prepare`` hook: its sizes are loop.batch, loop.types and loop.paths;
    run.n_instances (which the sweep command sets for every model) is not read."""
    run = {k: v for k, v in (cfg.get("run") or {}).items() if k != "n_instances"}
    return {**cfg, "run": run}


def validate_loop(cfg) -> None:
    """What the loop's declared ranges cannot say (ConfigError names the field)."""
    lc = cfg.loop  # ranges and choices: declared in config.py
    if lc.paths == 1:
        raise ConfigError("loop.paths must be 0 (exact paths only) or at least 2 (a "
                          "standard error needs two paths), got 1")
    if lc.learner == "majority" and lc.bias != 0.0:
        raise ConfigError("loop.bias is the calibrated learner's drift; the majority learner "
                          "has none (leave loop.bias at 0 with loop.learner=majority)")
    if lc.learner == "calibrated" and lc.types != LoopConfig.types:
        raise ConfigError("loop.types counts the majority learner's instance types; the "
                          "calibrated learner has none (set loop.learner=majority)")
    if cfg.model.stance != "signal":
        raise ConfigError("model=loop needs model.stance=signal: the model answers with its "
                          "own belief, wrong with probability e_t")
    per_round = lc.batch * (lc.types if lc.learner == "majority" else 1)
    if lc.paths * (lc.rounds + 1) > MAX_RECORDS:
        raise ConfigError(f"loop.paths x (loop.rounds + 1) = {lc.paths * (lc.rounds + 1)} "
                          f"exceeds {MAX_RECORDS} (the per-path records held in memory); "
                          "use fewer paths or rounds")
    if lc.paths * lc.rounds * per_round > MAX_DRAWS:
        raise ConfigError(f"loop.paths x loop.rounds x instances per round = "
                          f"{lc.paths * lc.rounds * per_round:.3g} exceeds {MAX_DRAWS:.0e} "
                          "simulated cases in one cell; use fewer paths, rounds or a "
                          "smaller loop.batch (loop.types)")


# ----------------------------------------------------------------------------- oversight
#: Points (protocol, e, rho) whose rates an :class:`Oversight` remembers: a cell's paths
#: and long runs revisit a few hundred; an iteration that does not settle visits up to
#: 10^5 others, each once.
RATES_MEMO = 4096


class Oversight:
    """One judge's tables and the senders' presentation strategies, and the escalation
    policy's flag: everything the loop needs to evaluate oversight at any (e, rho)."""

    def __init__(self, J_c, J_d, x_pc, x_pd, x_a, audit, flag_c, budget, J_jury=None):
        self.J_c = np.asarray(J_c, float)
        self.J_d = np.asarray(J_d, float)
        #: Escalation to a jury: its consultancy table (None: escalation to debate).
        self.J_jury = None if J_jury is None else np.asarray(J_jury, float)
        self.x_pc, self.x_pd, self.x_a = float(x_pc), float(x_pd), float(x_a)
        self.audit = float(audit)
        self.flag_c = np.asarray(flag_c, float)
        self.budget = float(budget)
        # The tables as Python floats for rates(), called about 500 times a cell (by the
        # paths, the long run and the policy front): a call took 22 us with NumPy
        # scalars, 12 with Python floats (profiled); the same IEEE operations in the
        # same order, so the same bits.
        self._jc = tuple(float(v) for v in self.J_c)
        self._jd = tuple(tuple(float(v) for v in row) for row in self.J_d)
        self._jj = None if self.J_jury is None else tuple(float(v) for v in self.J_jury)
        self._fc = tuple(float(v) for v in self.flag_c)
        self._rates: dict = {}  # (protocol, e, rho) -> rates(): see rates

    def with_policy(self, audit=None, flag_c=None) -> "Oversight":
        """This oversight under another escalation policy: a copy whose tables (and
        their Python floats) are this one's, not converted again (the policy front
        and the cheapest policy make about 60 a cell); the audit rate and the flag's
        table as :meth:`__init__` converts them."""
        new = object.__new__(Oversight)
        new.__dict__.update(self.__dict__)
        if audit is not None:
            new.audit = float(audit)
        if flag_c is not None:
            new.flag_c = np.asarray(flag_c, float)
            new._fc = tuple(float(v) for v in new.flag_c)
        new._rates = {}  # another policy: its own rates
        return new

    def flag_probability(self, e, rho):
        w, r = rho * self.x_pc, self.x_pc  # Pr(e_Pc = 1 | a wrong), | a right
        f0, f1 = self._fc
        f = e * ((1 - w) * f0 + w * f1) + (1 - e) * ((1 - r) * f0 + r * f1)
        return self.audit + (1 - self.audit) * f

    def scale(self, e, rho):
        """Share of flagged cases escalated: 1, or budget / Pr(flag) when it binds."""
        f = self.flag_probability(e, rho)
        return 1.0 if f <= self.budget else self.budget / f

    def rates(self, protocol: str, e: float, rho: float) -> tuple:
        """(Amp, fwc, escalated share of overseen cases) of a protocol at (e, rho).

        Remembered by (protocol, e, rho) (:data:`RATES_MEMO` points at most): a cell
        asks for the same point about three times (the mean-field path, the expected
        path and the long run's settling all retrace the recursion from e_0), and the
        tables it reads do not change after construction (:meth:`with_policy` makes a
        copy that remembers its own).  0.0 and -0.0 share a key and give the same
        rates (the terms they enter are either skipped as zero or added to a nonzero
        sum)."""
        key = (protocol, e, rho)
        hit = self._rates.get(key)
        if hit is None:
            hit = self._rates_at(protocol, e, rho)
            if len(self._rates) < RATES_MEMO:  # a long run's 10^5 steps are not kept
                self._rates[key] = hit
        return hit

    def _rates_at(self, protocol: str, e: float, rho: float) -> tuple:
        s = self.scale(e, rho) if protocol == "escalate" else 0.0
        kind = 0 if protocol == "consult" else 1 if protocol == "debate" else 2
        x_pc, x_pd, x_a = self.x_pc, self.x_pd, self.x_a
        J_c, J_d, flag_c, J_jury, audit = self._jc, self._jd, self._fc, self._jj, self.audit
        lo, hi = min(x_pc, x_pd), max(x_pc, x_pd)
        third = (1, 0) if x_pc > x_pd else (0, 1)
        out = []
        esc_total = 0.0
        for wrong in (True, False):
            t_p = rho if wrong else 1.0  # Pr(the protagonist has passing evidence)
            t_a = 1.0 if wrong else rho
            # One presentation draw u serves both protocols (common random numbers):
            # (e_Pc, e_Pd) = (u < x_pc, u < x_pd) given evidence.
            joint = (((1, 1), t_p * lo), ((0, 0), (1 - t_p) + t_p * (1 - hi)),
                     (third, t_p * (hi - lo)))
            presented = ((1, t_a * x_a), (0, 1 - t_a * x_a))
            endorse = esc = 0.0
            for (epc, epd), pr in joint:
                if pr == 0.0:
                    continue
                jc, jd_row = J_c[epc], J_d[epd]
                if kind == 2:
                    g = (audit + (1 - audit) * flag_c[epc]) * s
                for ea, pa in presented:
                    if pa == 0.0:
                        continue
                    if kind == 0:
                        j = jc
                    elif kind == 1:
                        j = jd_row[ea]
                    else:
                        je = jd_row[ea] if J_jury is None else J_jury[epc]
                        j = g * je + (1 - g) * jc
                        esc += pr * pa * g
                    endorse += pr * pa * j
            out.append(endorse)
            esc_total += (e if wrong else 1 - e) * esc
        return out[0], out[1], esc_total


def flag_table(flag: str, band: float, J_c) -> np.ndarray:
    """Whether consultancy's evidence state e_Pc = 0, 1 raises the flag."""
    J_c = np.asarray(J_c, float)
    if flag == "none":
        return np.zeros(2)
    if flag == "no_evidence":
        return np.array([1.0, 0.0])
    return (np.abs(J_c - 0.5) <= band + 1e-12).astype(float)


def oversight(cfg) -> Oversight:
    """The configured judge (or jury), strategies and escalation policy."""
    from ...judge import judge_tables, jury_majority, resolve_strategies, single_judge_tables

    J_c, J_d = judge_tables(cfg.judge, cfg.protocol)
    st = resolve_strategies(cfg)
    lc = cfg.loop
    J_jury = None
    if lc.escalate_to == "jury":
        one, _ = single_judge_tables(cfg.judge, cfg.protocol)
        J_jury = jury_majority(one, lc.escalate_jury, cfg.judge.jury_tie)
    return Oversight(J_c, J_d, st.x_P_consult, st.x_P, st.x_A, lc.audit,
                     flag_table(lc.flag, lc.flag_band, J_c), lc.budget, J_jury)


# ----------------------------------------------------------------------------- exact
def majority_tails(n: int, q_w, q_r, rate: float = 1.0):
    """(stay, flip): Pr(a wrong type stays wrong), Pr(a right type turns wrong) in one
    round, from the binomial tails of its n targets (ties keep the answer).

    ``scipy.special.bdtrc(k, n, q)`` = Pr(W > k), the ufunc behind a binomial's survival
    function, without ``scipy.stats``' per-call argument handling (about 40x less per
    scalar call: the recursion calls this every round)."""
    from scipy.special import bdtrc

    h = n / 2.0
    stay = bdtrc(math.floor(h) - (1 if n % 2 == 0 else 0), n, q_w)  # W >= n/2 (tie keeps)
    flip = bdtrc(math.floor(h), n, q_r)  # W > n/2
    return (1 - rate) + rate * stay, rate * flip


def type_tails(lc: LoopConfig, amp: float, fwc: float, m: float | None = None) -> tuple:
    """(stay, flip) of one instance type of the majority learner when oversight endorses
    with (Amp, fwc) and a share m (default loop.m) of the targets are endorsed labels."""
    m = lc.m if m is None else m
    return majority_tails(lc.batch, m * amp + (1 - m) * lc.e_h,
                          m * (1 - fwc) + (1 - m) * lc.e_h, lc.rate)


def step(lc: LoopConfig, ov: Oversight, protocol: str, e: float, rho: float) -> tuple:
    """One round of the mean-field recursion: (e', rho', label error, Amp, fwc, escalated)."""
    amp, fwc, esc = ov.rates(protocol, e, rho)
    label = e * amp + (1 - e) * (1 - fwc)
    if lc.learner == "majority":
        stay, flip = type_tails(lc, amp, fwc)
        e_next = e * stay + (1 - e) * flip
    else:
        target = (1 - lc.m) * lc.e_h + lc.m * label
        e_next = min(1.0, max(0.0, (1 - lc.rate) * e + lc.rate * (target + lc.bias)))
    rho_next = rho + lc.rho_gain * e * amp * (1 - rho)
    return e_next, rho_next, label, amp, fwc, esc


def start_error(cfg) -> float:
    return float(cfg.loop.e_0) if cfg.loop.e_0 is not None else 1.0 - float(cfg.model.p)


def exact_path(cfg, ov: Oversight, protocol: str, rounds: int | None = None) -> dict:
    """The recursion from (e_0, rho_0) over the configured rounds: arrays per round."""
    lc = cfg.loop
    T = lc.rounds if rounds is None else rounds
    e, rho = start_error(cfg), float(cfg.model.rho)
    out = {k: np.full(T + 1, np.nan) for k in ("err", "label_err", "ratified", "rho",
                                                "escalated")}
    out["err"][0] = e
    for t in range(T):
        e2, rho2, label, amp, fwc, esc = step(lc, ov, protocol, e, rho)
        out["label_err"][t] = (1 - lc.m) * lc.e_h + lc.m * label  # all of the round's targets
        out["ratified"][t] = e * amp
        out["rho"][t], out["escalated"][t] = rho, esc
        e, rho = e2, rho2
        out["err"][t + 1] = e
    return out


#: The recursion above is the mean-field path: E[e_{t+1}] = f(E[e_t]) only where f is affine
#: on the states a path can reach; :func:`expected_path` is the expectation itself.
meanfield_path = exact_path


def _endorsed_any(lc: LoopConfig) -> float:
    """Pr(a round has at least one endorsed target): the kernel reports the ratified and
    escalated shares as counts over the endorsed targets, 0 in a round with none; given
    that count each endorsed case is ratified (escalated) independently, so the ratio's
    expectation is the per-case probability times this."""
    n = lc.batch * (lc.types if lc.learner == "majority" else 1)
    return 1.0 - (1.0 - lc.m) ** n


def expected_path(cfg, ov: Oversight, protocol: str) -> tuple:
    """The expectation over paths of the simulated process, per round, and how it was
    obtained: ``(path, method)``, ``path`` as :func:`exact_path`'s arrays (NaN where it is
    not computed exactly), ``method`` one of

    * ``"mean-field"``: the recursion is the expectation, because the map is affine on
      every state a path can reach (Amp and fwc constant: no rho feedback, no binding
      budget; calibrated learner with no drift, so the clip to [0, 1] never acts;
      majority learner: independent two-state types);
    * ``"chain"``: calibrated learner with rate 1 and no rho feedback: given e_t the round's
      wrong targets are Binomial(batch, q(e_t)) and e_{t+1} = clip(W / batch + bias), so
      the error is a Markov chain on batch + 1 states whose distribution is propagated
      round by round (the clip, which the mean-field recursion applies to the mean, is
      applied to each state: E[min(x, 1)] < min(E[x], 1));
    * ``"none"``: neither holds (a learning rate below 1 with drift or a binding budget,
      rho feedback, a majority learner under a binding budget, or a batch above the
      chain's limit):
      the path is NaN and only the mean-field recursion is reported.

    The chain's transition matrix is dense, (batch + 1)**2 numbers: it is built up to
    :data:`CHAIN_MAX_BATCH` (``"none"`` beyond). It reads the kernel's thresholds as real
    numbers (the kernel's are multiples of 2**-32, a difference of order 1e-10)."""
    lc = cfg.loop
    rho0 = float(cfg.model.rho)
    T = lc.rounds
    mf = exact_path(cfg, ov, protocol)
    scale = _endorsed_any(lc)
    linear = is_linear(lc, ov, protocol, rho0)
    if linear and (lc.learner == "majority" or lc.bias == 0.0):
        out = {k: v.copy() for k, v in mf.items()}
        out["ratified"] *= scale
        out["escalated"] *= scale
        return out, "mean-field"
    if not (lc.learner == "calibrated" and lc.rate == 1.0 and lc.rho_gain == 0.0
            and lc.batch <= CHAIN_MAX_BATCH):
        return {k: np.full(T + 1, np.nan) for k in mf}, "none"
    from scipy.stats import binom

    N = lc.batch
    k_all = np.arange(N + 1)
    # The states after a round, as round_end computes them (rate 1): clip(W / N + bias).
    states = np.minimum(1.0, np.maximum(0.0, k_all / N + lc.bias))

    def per_state(e_vals):
        """q(e) (Pr(a target is wrong)), e Amp and the escalated share, per state."""
        uniq, inv = np.unique(e_vals, return_inverse=True)
        r = np.array([ov.rates(protocol, float(e), rho0) for e in uniq])
        amp, fwc, es = r[inv, 0], r[inv, 1], r[inv, 2]
        q = (1 - lc.m) * lc.e_h + lc.m * (e_vals * amp + (1 - e_vals) * (1 - fwc))
        return np.clip(q, 0.0, 1.0), e_vals * amp, es

    q0, rat0, esc0 = per_state(np.array([start_error(cfg)]))
    q, rat, esc = per_state(states)
    # One transition matrix serves every round (rho does not move): row k is
    # Binomial(N, q_k) over the next round's wrong targets.
    K = binom.pmf(k_all[None, :], N, q[:, None])
    out = {k: np.full(T + 1, np.nan) for k in mf}
    out["rho"][:T] = rho0
    out["err"][0] = start_error(cfg)
    pi = None  # the distribution over states; None: the starting atom
    for t in range(T):
        if pi is None:
            lab_t, rat_t, esc_t = q0[0], rat0[0], esc0[0]
            pi = binom.pmf(k_all, N, q0[0])
        else:
            lab_t, rat_t, esc_t = pi @ q, pi @ rat, pi @ esc
            pi = pi @ K
        out["label_err"][t], out["ratified"][t] = lab_t, rat_t * scale
        out["escalated"][t] = esc_t * scale
        out["err"][t + 1] = float(pi @ states)
    return out, "chain"


def is_linear(lc: LoopConfig, ov: Oversight, protocol: str, rho: float) -> bool:
    """Amp and fwc stay put: no rho feedback and no binding budget (any e)."""
    if lc.rho_gain > 0:
        return False
    if protocol != "escalate":
        return True
    return max(ov.flag_probability(0.0, rho), ov.flag_probability(1.0, rho)) <= ov.budget


def long_run(cfg, ov: Oversight, protocol: str, max_iter: int = 200_000) -> dict:
    """The fixed point reached from (e_0, rho_0): ``e_star``, ``rho_star``, the map's
    ``slope`` there (its Jacobian's spectral radius), ``stable`` (slope < 1), and
    ``settle_rounds`` (rounds of the recursion until the error is within 1 % of its
    starting gap to the fixed point)."""
    lc = cfg.loop
    e0, rho0 = start_error(cfg), float(cfg.model.rho)
    if is_linear(lc, ov, protocol, rho0):
        amp, fwc, _ = ov.rates(protocol, 0.0, rho0)
        if lc.learner == "majority":
            stay, flip = type_tails(lc, amp, fwc)
            slope = stay - flip
            e_star = flip / (1 - slope) if slope < 1 else e0
        else:
            slope = 1 - lc.rate + lc.rate * lc.m * (amp + fwc - 1)
            c = lc.rate * ((1 - lc.m) * lc.e_h + lc.m * (1 - fwc) + lc.bias)
            if slope < 1:
                e_star = c / (1 - slope)
            else:  # the identity map, shifted by the learner's drift
                e_star = e0 if lc.bias == 0 else (1.0 if lc.bias > 0 else 0.0)
            if not 0.0 <= e_star <= 1.0:  # clipped: the boundary is the fixed point
                e_star = min(1.0, max(0.0, e_star))
                slope = 0.0
        rho_star = rho0
        radius = abs(slope)
        last = prev = 0.0  # closed form
    else:
        e, rho = e0, rho0
        last = prev = math.inf
        for _ in range(max_iter):
            e2, rho2, *_ = step(lc, ov, protocol, e, rho)
            prev, last = last, max(abs(e2 - e), abs(rho2 - rho))
            e, rho = e2, rho2
            if last < 1e-15:
                break
        e_star, rho_star = e, rho
        h = 1e-6
        jac = np.zeros((2, 2))
        for k, (de, dr) in enumerate(((h, 0.0), (0.0, h))):
            lo = step(lc, ov, protocol, max(0.0, e - de), max(0.0, rho - dr))
            hi = step(lc, ov, protocol, min(1.0, e + de), min(1.0, rho + dr))
            span = (min(1.0, e + de) - max(0.0, e - de)) + (min(1.0, rho + dr) - max(0.0, rho - dr))
            jac[:, k] = [(hi[0] - lo[0]) / span, (hi[1] - lo[1]) / span]
        radius = float(np.max(np.abs(np.linalg.eigvals(jac))))
    gap = abs(e0 - e_star)
    settle = 0
    if gap > 0 and radius < 1:
        e, rho = e0, rho0
        for t in range(1, max_iter):
            e, rho, *_ = step(lc, ov, protocol, e, rho)
            if abs(e - e_star) <= 0.01 * gap:
                settle = t
                break
        else:
            settle = -1
    elif gap > 0:
        settle = -1
    # The iteration's distance to its fixed point, estimated from its last step: a
    # contraction with factor r leaves at most r / (1 - r) times its last step.  r is
    # the larger of the map's slope where the iteration stopped and the ratio of its
    # last two steps, and the result is doubled: the slope is local, and in two
    # dimensions (e, rho) the error's share of the step is not fixed (tests: a fixed
    # point found by a root finder, the iteration cut early).  An estimate, not a
    # bound; 0 for the closed forms, infinite where the map does not contract.
    r_obs = last / prev if 0 < prev < math.inf else 0.0
    r = max(radius, r_obs)
    if last == 0.0:
        e_star_error = 0.0
    elif r < 1:
        e_star_error = 2.0 * last * r / (1.0 - r) + 4 * np.finfo(float).eps
    else:
        e_star_error = math.inf
    return {"e_star": float(e_star), "rho_star": float(rho_star), "slope": float(radius),
            "stable": bool(radius < 1), "settle_rounds": int(settle),
            "e_star_error": float(e_star_error)}


def _linear_fixed_point(lc: LoopConfig, amp: float, fwc: float, m: float, e0: float) -> float:
    """Long-run error from e0 with Amp, fwc held fixed (the learner's closed form).

    Where the map's slope is 1 (every target is an endorsement that follows the
    model), the error stays at e0, or drifts to a bound when the learner drifts."""
    if lc.learner == "majority":
        stay, flip = type_tails(lc, amp, fwc, m)
        return flip / (1 - stay + flip) if (1 - stay + flip) > 0 else e0
    den = 1 - m * (amp + fwc - 1)
    num = (1 - m) * lc.e_h + m * (1 - fwc) + lc.bias
    if den <= 0:
        return e0 if lc.bias == 0 else (1.0 if lc.bias > 0 else 0.0)
    return min(1.0, max(0.0, num / den))


def _threshold(f, lo: float = 0.0, hi: float = 1.0) -> float:
    """The largest x in [lo, hi] with f(x) <= 0 for increasing f: hi when f(hi) <= 0,
    lo when f(lo) > 0 (the loop drifts everywhere), else the root."""
    from scipy.optimize import brentq

    f_lo, f_hi = f(lo), f(hi)
    if not (math.isfinite(f_lo) and math.isfinite(f_hi)):
        return math.nan
    if f_hi <= 0:
        return hi
    if f_lo > 0:
        return lo
    return float(brentq(f, lo, hi, xtol=1e-13, rtol=1e-12))


def thresholds(cfg, ov: Oversight, protocol: str) -> dict:
    """Drift thresholds against the starting error e_0 (the loop corrects when its
    long-run error is at most e_0, Amp and fwc held at their values at rho_0):

    * ``amp_threshold``: the largest Amp (the protocol's fwc held) that corrects;
    * ``m_threshold``: the largest share of endorsed targets m that corrects (1 when
      m = 1 corrects; 0 when no m does);
    * ``rho_threshold``: the largest fabrication rate rho that corrects, the
      protocol's Amp(rho) and fwc(rho) moving together.

    For Amp and rho, 1 means "corrects at every value", 0 "drifts even at 0"; the
    long-run error increases in each, so the boundary is one root (scipy's brentq).
    """
    lc = cfg.loop
    e0, rho0 = start_error(cfg), float(cfg.model.rho)
    amp, fwc, _ = ov.rates(protocol, e0, rho0)

    def at_amp(a):
        return _linear_fixed_point(lc, a, fwc, lc.m, e0) - e0

    def at_m(m):
        return _linear_fixed_point(lc, amp, fwc, m, e0) - e0

    def at_rho(r):
        a, f, _ = ov.rates(protocol, e0, r)
        return _linear_fixed_point(lc, a, f, lc.m, e0) - e0

    out = {"amp_threshold": _threshold(at_amp), "rho_threshold": _threshold(at_rho)}
    # e*(m) need not be monotone in m (it moves from e_h toward the oversight's own
    # floor, so often the loop corrects only above some m): the threshold is the largest
    # m in [0, 1] that corrects, found on a grid that includes the configured m (so that
    # a loop that corrects at its m never reports a smaller threshold) and refined by
    # brentq on the crossing just above the last correcting grid point.
    from scipy.optimize import brentq

    ms = np.union1d(np.linspace(0.0, 1.0, 201), [float(lc.m)])
    vals = np.array([at_m(m) for m in ms])
    ok = vals <= 0
    if ok[-1]:
        out["m_threshold"] = 1.0
    elif not ok.any():
        out["m_threshold"] = 0.0
    else:
        k = int(np.flatnonzero(ok)[-1])
        out["m_threshold"] = float(brentq(at_m, ms[k], ms[k + 1], xtol=1e-13, rtol=1e-12)
                                   if vals[k] < 0 else ms[k])
    return out


# ----------------------------------------------------------------------------- design
def policy_front(cfg, ov: Oversight) -> dict:
    """Long-run error, cost (escalated share of overseen cases at the fixed point) and
    safety (1 - Amp: the share of the model's wrong answers that oversight does not
    ratify, at the fixed point) of the escalation policy at every audit rate of
    :data:`AUDIT_LEVELS`, per flag: safety against the audit budget."""
    lc = cfg.loop
    err = np.zeros((len(FLAGS), len(AUDIT_LEVELS)))
    cost = np.zeros_like(err)
    safety = np.zeros_like(err)
    for i, fl in enumerate(FLAGS):
        fc = ov.with_policy(flag_c=flag_table(fl, lc.flag_band, ov.J_c))  # once a flag
        for k, a in enumerate(AUDIT_LEVELS):
            o = fc.with_policy(audit=float(a))
            lr = long_run(cfg, o, "escalate")
            err[i, k] = lr["e_star"]
            amp, _, cost[i, k] = o.rates("escalate", lr["e_star"], lr["rho_star"])
            safety[i, k] = 1.0 - amp
    # point n is dominated when some point is no worse on both and better on one
    # (within 1e-12): every pair at once, [n, other]
    c, e = cost.reshape(-1, 1), err.reshape(-1, 1)
    C, E = c.T, e.T
    dominated = ((C <= c + 1e-12) & (E <= e + 1e-12)
                 & ((C < c - 1e-12) | (E < e - 1e-12))).any(axis=1)
    pareto = ~dominated.reshape(err.shape)
    return {"err": err, "cost": cost, "pareto": pareto, "safety": safety}


def cheapest_policy(cfg, ov: Oversight, target: float, front: dict | None = None) -> dict:
    """The escalation policy (flag, audit rate) of least cost whose long-run error is at
    most ``target``: per flag, the smallest audit rate that meets it (the first crossing
    on the audit grid, refined by brentq), then the flag of least cost.  ``flag`` is ""
    when no policy meets the target (even escalating every case)."""
    from scipy.optimize import brentq

    lc = cfg.loop
    front = policy_front(cfg, ov) if front is None else front
    best = {"flag": "", "audit": math.nan, "cost": math.nan, "err": math.nan}
    for i, fl in enumerate(FLAGS):
        fc = flag_table(fl, lc.flag_band, ov.J_c)

        def excess(a, fc=fc):
            return long_run(cfg, ov.with_policy(audit=float(a), flag_c=fc),
                            "escalate")["e_star"] - target

        vals = front["err"][i] - target  # the front's long-run errors on the audit grid
        if vals[0] <= 0:
            a_opt = 0.0
        else:
            k = next((k for k, v in enumerate(vals) if v <= 0), None)
            if k is None:
                continue
            a_opt = float(brentq(excess, AUDIT_LEVELS[k - 1], AUDIT_LEVELS[k], xtol=1e-12))
            # brentq returns a point within xtol of the crossing; step to its feasible side
            while excess(a_opt) > 0 and a_opt < 1:
                a_opt = min(1.0, a_opt + 1e-12)
        o = ov.with_policy(audit=a_opt, flag_c=fc)
        lr = long_run(cfg, o, "escalate")
        c = o.rates("escalate", lr["e_star"], lr["rho_star"])[2]
        if best["flag"] == "" or c < best["cost"] - 1e-12:
            best = {"flag": fl, "audit": a_opt, "cost": float(c), "err": lr["e_star"]}
    return best


# ----------------------------------------------------------------------------- simulation
def simulate(cfg, ov: Oversight, n_threads: int = 0) -> dict:
    """The kernel's paths for the three protocols (common random numbers), on
    ``cfg.run.device``: the GPU gives the same paths, bit for bit (:mod:`kernels.gpu.loop`)."""
    from antiamp.kernels.loop import CALIBRATED, MAJORITY, loop_paths
    from antiamp.kernels.rng import split_seed
    from antiamp.runner import device_of, kernel_threads

    lc = cfg.loop
    k0, k1 = split_seed(cfg.run.seed)
    types = lc.types if lc.learner == "majority" else 1
    if device_of(cfg.run.device) == "cuda":
        from antiamp.kernels.gpu.loop import loop_paths
    with kernel_threads(n_threads):
        out = loop_paths(MAJORITY if lc.learner == "majority" else CALIBRATED, lc.rounds, lc.batch,
                         types, lc.paths, start_error(cfg), lc.e_h, lc.m, lc.rate, lc.bias,
                         float(cfg.model.rho), lc.rho_gain, ov.x_pc, ov.x_pd, ov.x_a, ov.J_c, ov.J_d,
                         ov.audit, ov.flag_c, ov.budget,
                         ov.J_c if ov.J_jury is None else ov.J_jury, ov.J_jury is None, k0, k1)
    keys = ("err", "label_err", "ratified", "rho", "escalated", "locked", "start_wrong")
    return dict(zip(keys, out))
