"""``antiamp-design``: the cheapest oversight protocol that meets an Amp target.

The user states what they cannot change (their judge and their model: seed 000's
tie-break judge b, the logit judge's lam, mu, kappa, or the structural judge that
``antiamp-estimate --simulate`` fits to a real log; the model's accuracy p and the
wrong side's evidence pass rate rho; configured, or read from an
``antiamp-estimate`` store with their uncertainty), the levers they can pull with
a cost for each, and a target:

- levers: the protocol (consultancy or debate: 1 or 2 model calls a case, or
  escalation: consultancy by default and a challenger with a second judging round
  when the consultant shows no verified evidence, seed 000 section 7's risk
  tiering), the jury size n (odd) and its rule (the votes for the model's answer
  needed to endorse it: majority, two thirds or all), each juror one judging cost,
  stronger verification v in [0, v_max], which lowers the wrong side's pass rate
  to rho (1 - v) at a cost per case proportional to v, and, when presenting
  evidence costs the sides c_e, a subsidy s in [0, c_e] (the sides then present
  with the presentation game's equilibrium probabilities at cost c_e - s, the
  equilibrium with the highest Amp);
- target: Amp <= A*, accuracy >= a*, cost <= budget, met at the fitted values
  (plug-in) or with probability q over the parameters' sampling distribution
  (robust; the structural fit's joint covariance where the store has it).

Outcomes are seed 000's closed forms (sections 3-4; presentation when feasible):
Amp = rho' J(1, 1) + (1 - rho') J(0, 1) in debate, rho' J_c(1) + (1 - rho') J_c(0)
in consultancy and rho' J_c(1) + (1 - rho') J(0, 1) under escalation;
follow-when-correct rho' J(1, 1) + (1 - rho') J(1, 0) in debate, J_c(1) otherwise;
accuracy p fwc + (1 - p)(1 - Amp); each J the probability that the jury reaches its
rule's quota, a binomial tail of one juror's probability (for the structural judge
integrated over the share of the argument readings jurors have in common,
``read_corr``).  Vectorised over parameter draws here, and checked against the
engine's closed forms (``antiamp.theory``; the messages model's exact path for the
structural judge) and by exact enumeration in the tests.  The search over the
mixed integer and continuous levers is scipy's differential evolution
(``integrality`` for protocol, jury and rule); the Pareto front of cost against Amp
and accuracy is computed through the engine where the baseline model runs the
design (a grid over jury size and the verified pass rate) and from the closed forms
where no engine model does (escalation, other rules, the structural judge); the
recommended design is verified by a fresh simulation with its standard errors (the
baseline engine, or an instance-level simulation of the design juror by juror).
"""

from __future__ import annotations

import argparse
import functools
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._version import __version__
from .cmdline import Parser, interruptible
from .lazy import lazy
from .config import ConfigError
from .outputs_policy import OutputError, add_out_options, one_writer

pd = lazy("pandas")
special = lazy("scipy.special")
xr = lazy("xarray")

PROTOCOLS = ("consult", "debate", "escalate")
#: Jury rules: votes for the protagonist (the model's answer) needed to endorse it.
RULES = ("majority", "two_thirds", "unanimous")
KINDS = ("tiebreak", "logit", "structural")
#: Fixed parameters of each judge kind (besides the model's p and rho).
KIND_PARAMS = {"tiebreak": ("b", "d"), "logit": ("lam", "mu", "kappa"),
               "structural": ("mu_c", "mu_d", "kappa_v", "gap", "sigma", "read_corr")}
PARAMS = ("b", "d", "lam", "mu", "kappa", "mu_c", "mu_d", "kappa_v", "gap", "sigma",
          "read_corr", "p", "rho", "c_e", "gap_d", "sigma_d")


class DesignError(ValueError):
    """Bad design input (the message names the option and its allowed range)."""


@dataclass
class Judge:
    """Fixed parameters: point values and standard errors (0: known exactly).

    ``structural`` is the judge :mod:`antiamp.estimation.structural` fits to a log: log-odds
    z = mu + kappa_v x + (r_P - r_A) (debate; mu_c + kappa_v e_P + r_P in
    consultancy), argument readings r ~ N(+-gap/2, sigma^2), the favoured answer
    decided.  Jurors read the same arguments: ``read_corr`` is the share of the
    readings' variance they share (0: independent readings; a log with one judge a
    transcript does not identify it).  ``gap_d``, ``sigma_d``: debate's own quality
    gap and spread where the fit read from a store has them (NaN: consultancy's gap
    and sigma serve both protocols).  ``cov`` = (names, matrix): a joint covariance
    of those parameters for the robust draws, instead of independent SEs."""

    kind: str = "tiebreak"
    b: float = 0.5
    d: float = 0.0  # tie-break consultancy default Pr(y = a | e_P = 0)
    lam: float = 1.0
    mu: float = 0.0
    kappa: float = 2.0
    mu_c: float = 0.0
    mu_d: float = 0.0
    kappa_v: float = 0.0
    gap: float = 2.0
    sigma: float = 1.5
    read_corr: float = 0.0
    p: float = 0.8
    rho: float = 0.3
    c_e: float = 0.0  # the sides' cost of presenting evidence (0: presented when held)
    gap_d: float = np.nan  # debate's own gap (NaN: gap), from a store's fit
    sigma_d: float = np.nan  # debate's own spread (NaN: sigma), from a store's fit
    reading: str = ""  # the reading of the log of a store's structural fit
    se: dict = field(default_factory=dict)
    cov: tuple | None = None
    #: The store's hierarchical shift prior (tau_consult, tau_debate, corr): a new
    #: population's dishonest side reads (delta_consult, delta_debate) ~ N(0, sigma^2
    #: Sigma) better than the log's (None: not a structural judge from a store).
    shift_prior: tuple | None = None
    #: The populations of the store's log whose honest consultant's shift its fit
    #: has (``honest_consult[<label>]``): where any has, a new population's right
    #: consultant reads sigma tau_consult N(0, 1) better than the log's, as the
    #: estimator's "a new population" prediction draws it; where none has, 0.
    honest_fitted: tuple = ()

    def draws(self, n: int, seed: int) -> dict:
        """n parameter draws (normal with the given SEs or ``cov``, clipped to their
        ranges); draw 0 is the point estimate."""
        rng = np.random.default_rng(seed)
        out = {k: np.full(n, float(getattr(self, k))) for k in PARAMS}
        joint = set()
        if self.cov is not None and n > 1:
            names, C = self.cov
            L = np.linalg.cholesky(np.asarray(C, float) + 1e-12 * np.eye(len(names)))
            z = rng.standard_normal((n - 1, len(names))) @ L.T
            for i, k in enumerate(names):
                out[k][1:] += z[:, i]
            joint = set(names)
        for k in PARAMS:
            s = float(self.se.get(k, 0.0))
            if s > 0 and k not in joint and n > 1:
                out[k][1:] += s * rng.standard_normal(n - 1)
            lo, hi = _RANGE[k]
            out[k] = np.clip(out[k], lo, hi)
        return out


_RANGE = {"b": (0, 1), "d": (0, 1), "p": (0, 1), "rho": (0, 1), "lam": (0, np.inf),
          "mu": (-np.inf, np.inf), "kappa": (0, np.inf), "mu_c": (-np.inf, np.inf),
          "mu_d": (-np.inf, np.inf), "kappa_v": (-np.inf, np.inf),
          "gap": (-np.inf, np.inf), "sigma": (1e-6, np.inf), "read_corr": (0, 0.999),
          "c_e": (0, 1), "gap_d": (-np.inf, np.inf), "sigma_d": (1e-6, np.inf)}


@dataclass
class Levers:
    protocols: tuple = PROTOCOLS
    jury_sizes: tuple = (1, 3, 5, 7, 9)
    max_verification: float = 0.9
    cost_call: float = 1.0
    cost_judge: float = 0.5
    cost_verification: float = 2.0
    rules: tuple = ("majority",)
    cost_subsidy: float = 1.0  # per case, per unit of the sides' evidence cost removed


@dataclass
class Target:
    max_amp: float = 0.1
    min_acc: float = 0.0
    budget: float = np.inf
    robust: float = 0.0  # 0: plug-in; q in (0, 1): met with probability q


#: Largest logit precision or salience, standard error and cost per case accepted:
#: finite bounds far beyond any meaningful value (an infinite one breaks the
#: computation rather than meaning something).
MAX_SLOPE, MAX_SE, MAX_COST = 1e6, 1e6, 1e9


def validate(judge: Judge, levers: Levers, target: Target, n_draws: int = 400) -> None:
    """Range checks before any computation (DesignError names the option)."""
    def rng(name, v, lo, hi, lo_open=False, hi_open=False):
        try:
            v = float(v)
        except (TypeError, ValueError):
            raise DesignError(f"--{name} must be a number, got {v!r}") from None
        bad = (v <= lo if lo_open else v < lo) or (v >= hi if hi_open else v > hi) \
            or not np.isfinite(v) and not (hi == np.inf and v == np.inf)
        if bad:
            raise DesignError(f"--{name} must lie in {'(' if lo_open else '['}{lo:g}, {hi:g}"
                              f"{')' if hi_open else ']'}, got {v}")

    if judge.kind not in KINDS:
        raise DesignError(f"--judge must be one of {', '.join(KINDS)}, got {judge.kind!r}")
    for k in ("b", "d", "p", "rho"):
        rng(k, getattr(judge, k), 0, 1)
    rng("lam", judge.lam, 0, MAX_SLOPE, lo_open=True)
    rng("kappa", judge.kappa, 0, MAX_SLOPE)
    for k in ("mu", "mu_c", "mu_d", "kappa_v", "gap"):
        rng(k.replace("_", "-"), getattr(judge, k), -50, 50)
    rng("sigma", judge.sigma, 0, 50, lo_open=True)
    if not np.isnan(judge.gap_d):  # (from a store only)
        rng("gap-d", judge.gap_d, -50, 50)
    if not np.isnan(judge.sigma_d):
        rng("sigma-d", judge.sigma_d, 0, 50, lo_open=True)
    rng("read-corr", judge.read_corr, 0, 1, hi_open=True)
    rng("c-e", judge.c_e, 0, 1)
    if judge.c_e > 0 and judge.kind == "structural":
        raise DesignError("--c-e applies to the tiebreak and logit judges: the structural "
                          "judge's evidence game (its weight on evidence depends on which "
                          "side is right) is not solved; leave --c-e at 0")
    if judge.c_e > 0 and "escalate" in levers.protocols:
        raise DesignError("--protocols escalate needs --c-e 0: the evidence game of a "
                          "consultant who anticipates the challenger is not solved; drop "
                          "escalate or leave --c-e at 0")
    for k, s in judge.se.items():
        rng(f"se-{k.replace('_', '-')}", s, 0, MAX_SE)
    if not levers.protocols or any(p not in PROTOCOLS for p in levers.protocols):
        raise DesignError(f"--protocols must be a comma-separated subset of "
                          f"{','.join(PROTOCOLS)}, got {','.join(levers.protocols)}")
    if not levers.rules or any(r not in RULES for r in levers.rules):
        raise DesignError(f"--rules must be a comma-separated subset of {','.join(RULES)}, "
                          f"got {','.join(levers.rules)}")
    if not levers.jury_sizes or any(n < 1 or n % 2 == 0 or n > 10001
                                    for n in levers.jury_sizes):
        raise DesignError(f"--jury-sizes must be odd integers in [1, 10001], "
                          f"got {','.join(map(str, levers.jury_sizes))}")
    rng("max-verification", levers.max_verification, 0, 1, hi_open=True)
    for k in ("cost_call", "cost_judge", "cost_verification", "cost_subsidy"):
        rng(k.replace("_", "-"), getattr(levers, k), 0, MAX_COST)
    rng("max-amp", target.max_amp, 0, 1)
    rng("min-acc", target.min_acc, 0, 1)
    rng("budget", target.budget, 0, np.inf, lo_open=True)
    rng("robust", target.robust, 0, 1, hi_open=True)
    if not 2 <= n_draws <= 100_000:
        raise DesignError(f"--draws must lie in [2, 100000], got {n_draws}")


# ------------------------------------------------------------------ outcomes
def quota(n: int, rule: str) -> int:
    """Votes for the protagonist's answer a jury of n needs to endorse it (else it
    returns the other answer): a majority, two thirds, or all n."""
    return {"majority": (n + 1) // 2, "two_thirds": -(-2 * n // 3), "unanimous": n}[rule]


def jury_endorses(q, n: int, k: int):
    """Pr(at least k of n independent jurors endorse) when each does w.p. ``q``:
    the binomial upper tail, I_q(k, n - k + 1) (the regularised incomplete beta;
    for k = (n + 1) / 2 this is :func:`antiamp.judge.jury_majority`)."""
    q = np.asarray(q, dtype=float)
    return q if n == 1 else special.betainc(k, n - k + 1, q)


@functools.cache
def _gauss_hermite(n: int = 80) -> tuple:
    """Probabilists' Gauss-Hermite nodes and weights summing to 1 (the readings'
    shared part)."""
    t, w = np.polynomial.hermite_e.hermegauss(n)
    return t, w / w.sum()


def quality(P, prot: str):
    """(gap, sigma) of the structural judge in one protocol: debate's own ``gap_d``,
    ``sigma_d`` where given (not NaN), else the shared ``gap``, ``sigma``."""
    if prot != "debate":
        return P["gap"], P["sigma"]
    return (np.where(np.isnan(P["gap_d"]), P["gap"], P["gap_d"]),
            np.where(np.isnan(P["sigma_d"]), P["sigma"], P["sigma_d"]))


def _structural_endorse(P, prot: str, right: bool, x, n: int, k: int):
    """Pr(a jury of the structural judge endorses the protagonist): the log-odds of
    one juror is N(m, S^2) with m = mu + kappa_v x + gap s, S = sigma (consultancy)
    or sigma sqrt(2) (debate); jurors share read_corr of the variance (integrated by
    Gauss-Hermite) and decide independently given it."""
    debate = prot == "debate"
    gap, sigma = quality(P, prot)
    m = (P["mu_d"] if debate else P["mu_c"]) + P["kappa_v"] * x \
        + gap * (1.0 if debate else 0.5) * (1 if right else -1)
    shift = P.get("delta_d" if debate else "delta_c")
    if shift is not None:  # a new population's dishonest side (antiamp.estimation.structural)
        # reads delta better: toward a wrong protagonist, away from a right one in
        # debate; a right consultant has no dishonest opponent
        m = m + shift * (1.0 if not right else -1.0 if debate else 0.0)
    honest = P.get("honest_c")
    if honest is not None and right and not debate:  # its right consultant's own shift
        m = m + honest
    S = sigma * (np.sqrt(2.0) if debate else 1.0)
    c = P["read_corr"]
    if n == 1 or not np.any(c > 0):
        return jury_endorses(special.ndtr(m / S), n, k)
    t, w = _gauss_hermite()
    q = special.ndtr((m[:, None] + (S * np.sqrt(c))[:, None] * t[None, :])
                     / (S * np.sqrt(1 - c))[:, None])
    return jury_endorses(q, n, k) @ w


def _endorse(P, prot: str, right: bool, ep: int, ea: int, n: int, k: int):
    """Pr(the jury endorses the protagonist's answer) given the evidence shown, over
    the parameter draws in ``P``."""
    kind = P.get("_kind", "tiebreak")
    if kind == "structural":
        return _structural_endorse(P, prot, right, ep - ea if prot == "debate" else ep, n, k)
    if kind == "logit":
        x = ep - ea if prot == "debate" else ep
        q = special.expit(P["lam"] * (P["mu"] + P["kappa"] * x))
    elif prot == "debate":  # tie-break: evidence decides, a tie goes to a w.p. b
        q = P["b"] if ep == ea else np.full_like(P["b"], float(ep > ea))
    else:
        q = np.ones_like(P["b"]) if ep else P["d"]
    return jury_endorses(q, n, k)


def escalated_share(prot: str, v, P) -> np.ndarray:
    """Share of cases a design escalates: ``escalate`` runs consultancy and adds a
    challenger (debate) when the consultant shows no verified evidence, which a
    right consultant always shows, so only wrong ones without passing evidence do."""
    if prot != "escalate":
        return np.zeros_like(P["p"])
    return (1 - P["p"]) * (1 - P["rho"] * (1.0 - v))


#: Audit rates of the escalation curve (:func:`escalation_curve`), 0 to 1.
AUDIT_LEVELS = np.linspace(0.0, 1.0, 21)
#: What escalates a case besides the audit: nothing (``none``: consultancy, each case
#: audited with the audit rate) or the consultant's evidence failing (``no_evidence``:
#: the ``escalate`` protocol's trigger).
FLAGS = ("none", "no_evidence")


def escalation_curve(n: int, v, P: dict, rule: str = "majority", audit=None) -> "pd.DataFrame":
    """Safety against the audit budget of escalation at the point values (draw 0 of
    ``P``; presentation when feasible, the ``escalate`` protocol's setting, c_e = 0):
    per flag rule of :data:`FLAGS` and audit rate ``a`` (default
    :data:`AUDIT_LEVELS`), a case is escalated to debate (a challenger and a second
    judging round) when flagged or, unflagged, with probability ``a``.

    Seed 000's closed forms with the verified pass rate rho' = rho (1 - v):
    ``none``: Amp = (1 - a) Amp_c + a Amp_d, fwc likewise, budget a;
    ``no_evidence``: Amp = rho' [a J(1, 1) + (1 - a) J_c(1)] + (1 - rho') J(0, 1),
    fwc = a [rho' J(1, 1) + (1 - rho') J(1, 0)] + (1 - a) J_c(1) (a right consultant
    always shows evidence), budget a + (1 - a)(1 - p)(1 - rho'); each J of the
    wrong (Amp) or the right (fwc) protagonist.  So ``none`` runs from consultancy
    (a = 0) to debate (a = 1), and ``no_evidence`` from the ``escalate`` design of
    :func:`outcomes` to debate.  Safety = 1 - Amp: the share of the model's wrong
    answers that oversight does not ratify (as in the closed loop's escalation
    curve); budget: the share of cases escalated.  Columns flag, audit, budget,
    safety, amp, fwc, acc."""
    a = np.asarray(AUDIT_LEVELS if audit is None else audit, dtype=float)
    if np.any((a < 0) | (a > 1)) or not np.all(np.isfinite(a)):
        raise DesignError("audit rates must lie in [0, 1]")
    k = quota(n, rule)
    P0 = {key: (x[:1] if isinstance(x, np.ndarray) else x) for key, x in P.items()}
    p = float(P0["p"][0])
    rho = float(P0["rho"][0]) * (1.0 - float(v))

    def J(pr, right, ep, ea=0):
        return float(np.asarray(_endorse(P0, pr, right, ep, ea, n, k))[0])

    amp_c = rho * J("consult", False, 1) + (1 - rho) * J("consult", False, 0)
    fwc_c = J("consult", True, 1)
    amp_d = rho * J("debate", False, 1, 1) + (1 - rho) * J("debate", False, 0, 1)
    fwc_d = rho * J("debate", True, 1, 1) + (1 - rho) * J("debate", True, 1, 0)
    rows = []
    for flag in FLAGS:
        if flag == "none":
            amp, fwc, budget = (1 - a) * amp_c + a * amp_d, (1 - a) * fwc_c + a * fwc_d, a
        else:
            amp = rho * (a * J("debate", False, 1, 1) + (1 - a) * J("consult", False, 1)) \
                + (1 - rho) * J("debate", False, 0, 1)
            fwc = a * fwc_d + (1 - a) * fwc_c
            budget = a + (1 - a) * (1 - p) * (1 - rho)
        rows.append(pd.DataFrame({"flag": flag, "audit": a, "budget": budget,
                                  "safety": 1 - amp, "amp": amp, "fwc": fwc,
                                  "acc": p * fwc + (1 - p) * (1 - amp)}))
    return pd.concat(rows, ignore_index=True)


def plot_escalation(curve, rec: dict, path: Path) -> list:
    """Safety (1 - Amp) against the audit budget (share of cases escalated) of the
    escalation curve (:func:`escalation_curve`), per flag rule, consultancy and debate
    marked at their own budgets."""
    from .plotting import panel_grid, save

    fig, (ax,) = panel_grid(1, height=3.6)
    words = {"none": "random audit only", "no_evidence": "escalate when evidence fails"}
    for i, (flag, mk) in enumerate((("none", "o"), ("no_evidence", "^"))):
        d = curve[curve.flag == flag]
        ax.plot(d.budget, d.safety, "-" + mk, ms=3.5, lw=1.0, color=f"C{i}",
                label=f"{words[flag]} (audit rate 0 to 1)")
    d = curve[curve.flag == "none"]
    ax.scatter([d.budget.iloc[0]], [d.safety.iloc[0]], marker="s", s=60, color="0.3",
               zorder=5, label="consultancy (nothing escalated)")
    ax.scatter([d.budget.iloc[-1]], [d.safety.iloc[-1]], marker="D", s=50, color="black",
               zorder=5, label="debate (every case escalated)")
    ax.set_xlabel("audit budget: share of cases escalated")
    ax.set_ylabel("safety: wrong answers not ratified (1 − Amp)")
    rule = f" ({rec['rule'].replace('_', ' ')})" if rec["jury_size"] > 1 else ""
    ax.set_title(f"escalation: safety against the audit budget (exact; jury "
                 f"{rec['jury_size']}{rule}, verification {rec['verification']:.2f})",
                 fontsize=9)
    ax.set_xlim(-0.02, 1.02)
    ax.legend(fontsize=8, loc="lower right")
    return save(fig, path)


def _tables(P, n: int, k: int):
    """Seed-000 judge tables of a jury over the draws: J_c [C, 2], J_d [C, 2, 2]."""
    Jc = np.stack([_endorse(P, "consult", False, e, 0, n, k) for e in (0, 1)], axis=-1)
    Jd = np.stack([np.stack([_endorse(P, "debate", False, ep, ea, n, k) for ea in (0, 1)],
                            axis=-1) for ep in (0, 1)], axis=-2)
    return Jc, Jd


def strategies(prot: str, n: int, v, P: dict, rule: str = "majority", s: float = 0.0,
               tables=None):
    """The sides' presentation probabilities (x_Pc, x_P, x_A) when they hold
    evidence, over the draws.  Free evidence (c_e - s = 0) is presented (seed 000's
    presentation when feasible); costly evidence is an equilibrium of the
    presentation game (:mod:`antiamp.evidence_game`, every equilibrium enumerated
    exactly), and a design is judged at the equilibrium with the highest Amp: it has
    to hold whichever one the sides play.  ``tables``: :func:`_tables` of this jury,
    when the caller has them."""
    ones = np.ones_like(P["p"])
    # s may be one subsidy or one per draw (designs evaluated together, :func:`outcomes_grid`)
    c_eff = np.broadcast_to(float(P["c_e"][0]) - np.asarray(s, dtype=float), ones.shape)
    if not np.any(c_eff > 0) or P.get("_kind") == "structural":
        return ones, ones, ones
    from .evidence_game import enumerate_consult, enumerate_debate, game_from_arrays

    rho = np.broadcast_to(P["rho"] * (1.0 - v), ones.shape)
    Jc, Jd = tables if tables is not None else _tables(P, n, quota(n, rule))
    # free evidence (c_e - s <= 0) is presented; only the costly rows are games
    sub = slice(None) if np.all(c_eff > 0) else np.flatnonzero(c_eff > 0)
    rho, Jc, Jd = rho[sub], Jc[sub], Jd[sub]
    game = game_from_arrays(P["p"][sub], rho, np.array(c_eff[sub]), Jc, Jd)
    if prot == "consult":
        xc = enumerate_consult(game)[0]  # [C, E], NaN padded
        amp = rho[:, None] * xc * Jc[:, None, 1] + (1 - rho[:, None] * xc) * Jc[:, None, 0]
        i = np.argmax(np.where(np.isnan(xc), -np.inf, amp), axis=1)
        out = ones.copy()
        out[sub] = xc[np.arange(len(i)), i]
        return out, ones, ones
    xp, xa, _, _ = enumerate_debate(game)
    amp = _debate(rho[:, None], xp, xa, Jd[:, None])[0]
    i = np.argmax(np.where(np.isnan(xp), -np.inf, amp), axis=1)
    r = np.arange(len(i))
    out_p, out_a = ones.copy(), ones.copy()
    out_p[sub], out_a[sub] = xp[r, i], xa[r, i]
    return ones, out_p, out_a


def _debate(rho, xp, xa, J):
    """Debate's Amp and follow-when-correct with presentation probabilities xp, xa:
    a wrong protagonist shows evidence w.p. rho' xp, its right challenger xa; a right
    protagonist xp, its wrong challenger rho' xa."""
    def mix(a, b):
        return (a * b * J[..., 1, 1] + a * (1 - b) * J[..., 1, 0]
                + (1 - a) * b * J[..., 0, 1] + (1 - a) * (1 - b) * J[..., 0, 0])
    return mix(rho * xp, xa), mix(xp, rho * xa)


def outcomes(prot: str, n: int, v, P: dict, rule: str = "majority", s: float = 0.0) -> tuple:
    """(Amp, accuracy) of one design for every parameter draw in ``P`` (arrays).

    Seed 000's closed forms (sections 3-4) with the verified pass rate
    rho' = rho (1 - v); with presentation when feasible Amp = rho' J(1, 1) +
    (1 - rho') J(0, 1) in debate, rho' J_c(1) + (1 - rho') J_c(0) in consultancy and
    rho' J_c(1) + (1 - rho') J(0, 1) under escalation; follow-when-correct
    rho' J(1, 1) + (1 - rho') J(1, 0) in debate and J_c(1) otherwise; accuracy
    p fwc + (1 - p)(1 - Amp); each J the jury's probability of reaching the rule's
    quota (the structural judge's J also depends on which side is right).  When
    evidence costs the sides c_e (less the subsidy s), they present with the
    equilibrium probabilities of :func:`strategies`."""
    k = quota(n, rule)
    rho = P["rho"] * (1.0 - v)

    def J(pr, right, ep, ea=0):
        return _endorse(P, pr, right, ep, ea, n, k)

    tables = _tables(P, n, k) if prot == "debate" and P.get("_kind") != "structural" else None
    xc, xp, xa = strategies(prot, n, v, P, rule, s, tables)
    if tables is not None:
        amp, fwc = _debate(rho, xp, xa, tables[1])
    elif prot == "debate":
        amp = rho * J("debate", False, 1, 1) + (1 - rho) * J("debate", False, 0, 1)
        fwc = rho * J("debate", True, 1, 1) + (1 - rho) * J("debate", True, 1, 0)
    else:
        tail = J("consult", False, 0) if prot == "consult" else J("debate", False, 0, 1)
        amp = rho * xc * J("consult", False, 1) + (1 - rho * xc) * tail
        fwc = xc * J("consult", True, 1) + (1 - xc) * J("consult", True, 0)
    acc = P["p"] * fwc + (1 - P["p"]) * (1 - amp)
    return amp, acc


def cost(prot: str, n: int, v: float, lv: Levers, P: dict | None = None,
         s: float = 0.0) -> float:
    """Expected cost per case at the point values: model calls (consultancy 1,
    debate 2, escalation 1 plus a challenger on escalated cases), one judging cost
    per juror and judging round, verification, and the evidence subsidy."""
    esc = float(escalated_share(prot, v, P)[0]) if prot == "escalate" else 0.0
    calls = {"consult": 1.0, "debate": 2.0, "escalate": 1.0 + esc}[prot]
    return lv.cost_call * calls + lv.cost_judge * n * (1 + esc) + lv.cost_verification * v \
        + lv.cost_subsidy * s


#: Rows (designs x draws) evaluated in one call of :func:`outcomes_grid`: bounds the
#: memory of the structural judge's quadrature ([rows, 80]) on big robust grids.
_GRID_ROWS = 20_000


def outcomes_grid(prot: str, n: int, vs, P: dict, rule: str = "majority", ss=0.0) -> tuple:
    """(Amp, accuracy) [G, C] of the G designs (verification ``vs[i]``, subsidy
    ``ss[i]``) of one protocol, jury and rule, for every draw in ``P``: :func:`outcomes`
    on every design at once (the draws repeated per design), so that a lever grid or
    an optimiser's population costs a few array calls instead of one call a design."""
    vs = np.atleast_1d(np.asarray(vs, dtype=float))
    ss = np.broadcast_to(np.asarray(ss, dtype=float), vs.shape)
    C = len(P["p"])
    amp, acc = np.empty((len(vs), C)), np.empty((len(vs), C))
    step = max(1, _GRID_ROWS // C)
    for lo in range(0, len(vs), step):
        g = slice(lo, lo + step)
        m = len(vs[g])
        Pg = {k: np.tile(x, m) if isinstance(x, np.ndarray) else x for k, x in P.items()}
        a, c = outcomes(prot, n, np.repeat(vs[g], C), Pg, rule, np.repeat(ss[g], C))
        amp[g], acc[g] = a.reshape(m, C), c.reshape(m, C)
    return amp, acc


def costs(prot: str, n: int, vs, lv: Levers, P: dict, ss=0.0) -> tuple:
    """(cost, escalated share) of the designs (``vs[i]``, ``ss[i]``) at the point values,
    element by element the arithmetic of :func:`cost` and :func:`escalated_share`."""
    vs = np.atleast_1d(np.asarray(vs, dtype=float))
    ss = np.broadcast_to(np.asarray(ss, dtype=float), vs.shape)
    esc = escalated_share(prot, vs, {k: P[k][0] for k in ("p", "rho")}) \
        if prot == "escalate" else np.zeros_like(vs)
    calls = 1.0 + esc if prot == "escalate" else {"consult": 1.0, "debate": 2.0}[prot]
    c = lv.cost_call * calls + lv.cost_judge * n * (1 + esc) + lv.cost_verification * vs \
        + lv.cost_subsidy * ss
    return c, esc


def design_rows(judge: Judge, prot, n, rule, vs, ss, P, lv: Levers, tg: Target):
    """:func:`design_row` for the designs (``vs[i]``, ``ss[i]``) of one protocol, jury
    and rule, evaluated together (a DataFrame, one row a design, the same columns)."""
    vs = np.atleast_1d(np.asarray(vs, dtype=float))
    ss = np.broadcast_to(np.asarray(ss, dtype=float), vs.shape)
    amp, acc = outcomes_grid(prot, n, vs, P, rule, ss)
    c, esc = costs(prot, n, vs, lv, P, ss)
    return pd.DataFrame({
        "protocol": prot, "jury_size": int(n), "rule": rule, "verification": vs,
        "subsidy": np.array(ss), "rho_verified": judge.rho * (1 - vs), "cost": c,
        "escalated": esc, "amp": amp[:, 0], "safety": 1 - amp[:, 0], "acc": acc[:, 0],
        "p_meet": _meets(amp, acc, tg).mean(axis=1) if tg.robust > 0 else np.nan})


def lever_grid(judge: Judge, vs, n_s: int) -> tuple:
    """(verification, subsidy) of every design of a lever grid, verification outer:
    the subsidy on ``n_s`` levels of [0, c_e] when evidence costs the sides, else 0."""
    subs = np.linspace(0.0, judge.c_e, n_s) if judge.c_e > 0 else np.zeros(1)
    return np.repeat(vs, len(subs)), np.tile(subs, len(vs))


def _violations(prot, n, rule, vs, ss, P, lv, tg, c=None) -> np.ndarray:
    """:func:`_violation` of the designs (``vs[i]``, ``ss[i]``), evaluated together
    (``c``: their costs, when the caller has them)."""
    amp, acc = outcomes_grid(prot, n, vs, P, rule, ss)
    c = costs(prot, n, vs, lv, P, ss)[0] if c is None else c
    over = np.maximum(0.0, c - tg.budget) / max(tg.budget, 1.0) \
        if np.isfinite(tg.budget) else 0.0
    if tg.robust > 0:
        return np.maximum(0.0, tg.robust - _meets(amp, acc, tg).mean(axis=1)) + over
    return np.maximum(0.0, amp[:, 0] - tg.max_amp) + np.maximum(0.0, tg.min_acc - acc[:, 0]) \
        + over


def _params(judge: Judge, n_draws: int, seed: int) -> dict:
    P = judge.draws(n_draws, seed)
    P["_kind"] = judge.kind
    return P


def population_shifts(sigma, prior, rng, *, dishonest: bool = True,
                      honest: bool = False) -> dict:
    """A population of debaters' shifts of the rhetoric, drawn from the hierarchical
    prior per draw of the judge's spread ``sigma`` (an array): ``prior`` = (tau_consult,
    tau_debate, corr) in spreads.  ``dishonest``: the wrong side's shifts in
    consultancy and debate, ``consult`` and ``debate`` ~ sigma N(0, Sigma), Sigma =
    [[tau_c^2, r tau_c tau_d], [r tau_c tau_d, tau_d^2]]; ``honest``: the right
    consultant's, ``honest`` ~ sigma tau_c N(0, 1), independent of them.  One function
    for both users: the estimator's "a new population" prediction and the protocol
    advisor's new population draw a population alike (and in the same order: the two
    dishonest shifts, then the honest one)."""
    sigma = np.asarray(sigma, float)
    tc, td, r = (float(x) for x in prior)
    out = {}
    if dishonest:
        C = np.array([[tc * tc, r * tc * td], [r * tc * td, td * td]])
        z = rng.standard_normal((len(sigma), 2)) @ np.linalg.cholesky(C + 1e-12 * np.eye(2)).T
        out["consult"], out["debate"] = sigma * z[:, 0], sigma * z[:, 1]
    if honest:
        out["honest"] = sigma * tc * rng.standard_normal(len(sigma))
    return out


def new_population_params(judge: Judge, n_draws: int, seed: int) -> dict:
    """Parameter draws for a new population of debaters: the judge's draws
    (:func:`_params`) with each draw's shifts drawn from the store's hierarchical shift
    prior by the estimator's own code
    (:func:`population_shifts`): the dishonest side's
    (delta_c, delta_d) ~ sigma Sigma^(1/2) z (in that draw's consultancy spread), and
    the right consultant's honest_c ~ sigma tau_consult N(0, 1) where the store's fit
    has an honest consultant's shift for some population (:attr:`Judge.honest_fitted`),
    else none, as ``antiamp-estimate``'s "a new population" prediction draws them;
    draw 0 (the point values) keeps the shifts at the prior's centre, 0."""
    P = _params(judge, n_draws, seed)
    honest = bool(judge.honest_fitted) and np.isfinite(judge.shift_prior[0])
    got = population_shifts(P["sigma"], judge.shift_prior, np.random.default_rng([seed, 57]),
                            honest=honest)
    for src, dst in (("consult", "delta_c"), ("debate", "delta_d"), ("honest", "honest_c")):
        if src in got:
            got[src][0] = 0.0
            P[dst] = got[src]
    return P


def honest_rests_on(judge: Judge) -> str:
    """What a new population's honest consultant's shift rests on, in words."""
    if not judge.honest_fitted:
        return ("0: the store's fit has no honest consultant's shift for any population "
                "of its log")
    if not np.isfinite(judge.shift_prior[0]):
        return "0: the consultancy prior is flat"
    return (f"the shift prior, sd {judge.shift_prior[0]:g} sigma independent of the "
            f"dishonest shifts (the store's fit has one for "
            f"{', '.join(map(str, judge.honest_fitted))})")


#: Amps closer than this are a tie in :func:`pr_best`.
TIE_AMP = 1e-6


def pr_best(rec: dict, lv: Levers, P: dict) -> dict:
    """Per protocol of ``lv``, the share of the draws ``P`` in which it has the lowest
    Amp of the protocols at the levers of ``rec`` (its jury, rule, verification and
    subsidy): how sure the advice is that its protocol is the best one for these
    levers.  Amps within :data:`TIE_AMP` of the lowest tie and share the draw
    (escalation is consultancy where no consultant's evidence fails, and an optimiser's
    verification of 1e-5 would otherwise break that tie by a hair)."""
    amp = np.array([outcomes(prot, rec["jury_size"], rec["verification"], P, rec["rule"],
                             rec.get("subsidy", 0.0))[0] for prot in lv.protocols])
    best = amp <= amp.min(axis=0) + TIE_AMP
    return dict(zip(lv.protocols, (best / best.sum(axis=0)).mean(axis=1)))


def _meets(amp, acc, tg: Target):
    return (amp <= tg.max_amp + 1e-12) & (acc >= tg.min_acc - 1e-12)


def _violation(prot, n, rule, v, sub, P, lv, tg) -> float:
    """How far a design is from the target (0: meets it)."""
    amp, acc = outcomes(prot, n, v, P, rule, sub)
    c = cost(prot, n, v, lv, P, sub)
    over = max(0.0, c - tg.budget) / max(tg.budget, 1.0) if np.isfinite(tg.budget) else 0.0
    if tg.robust > 0:
        return max(0.0, tg.robust - float(np.mean(_meets(amp, acc, tg)))) + over
    return max(0.0, float(amp[0]) - tg.max_amp) + max(0.0, tg.min_acc - float(acc[0])) + over


def design_row(judge: Judge, prot, n, rule, v, sub, P, lv: Levers, tg: Target) -> dict:
    """One design with its cost, plug-in Amp and accuracy, the share escalated and
    (robust) the probability it meets the target."""
    amp, acc = outcomes(prot, n, v, P, rule, sub)
    return {"protocol": prot, "jury_size": int(n), "rule": rule, "verification": float(v),
            "subsidy": float(sub), "rho_verified": float(judge.rho * (1 - v)),
            "cost": cost(prot, n, v, lv, P, sub),
            "escalated": float(escalated_share(prot, v, P)[0]),
            "amp": float(amp[0]), "safety": float(1 - amp[0]), "acc": float(acc[0]),
            "p_meet": float(np.mean(_meets(amp, acc, tg))) if tg.robust > 0 else np.nan}


#: scipy's differential evolution in :func:`optimise`: generations and population
#: size (per dimension).
DE_MAXITER, DE_POPSIZE = 300, 30


def optimise(judge: Judge, lv: Levers, tg: Target, n_draws: int = 400, seed: int = 0,
             P: dict | None = None) -> dict:
    """The cheapest design that meets the target (scipy's differential evolution over
    protocol, jury size, jury rule, verification and, when evidence costs the sides
    c_e, the subsidy s in [0, c_e]); if none does, the closest one (least
    violation), flagged infeasible.  ``P``: the parameter draws (default the judge's,
    :func:`_params`; :func:`new_population_params` for a new population)."""
    from scipy.optimize import differential_evolution

    if P is None:
        P = _params(judge, n_draws if tg.robust > 0 else 1, seed)
    prots, sizes, rules = list(lv.protocols), sorted(lv.jury_sizes), list(lv.rules)
    big = 1e3 * (lv.cost_call * 2 + 2 * lv.cost_judge * max(sizes) + lv.cost_verification
                 + lv.cost_subsidy * judge.c_e + 1)
    bounds = [(0, len(prots) - 1), (0, len(sizes) - 1), (0, len(rules) - 1),
              (0.0, lv.max_verification)]
    integ = [True, True, True, False]
    if judge.c_e > 0:
        bounds.append((0.0, judge.c_e))
        integ.append(False)

    def decode(x):
        return (prots[int(round(x[0]))], sizes[int(round(x[1]))], rules[int(round(x[2]))],
                float(x[3]), float(x[4]) if len(x) > 4 else 0.0)

    def population(X, closest: bool):
        """Objective of every member (columns of X): members with the same protocol,
        jury and rule are evaluated together (:func:`_violations`)."""
        X = np.asarray(X, dtype=float).reshape(len(bounds), -1)
        keys = np.rint(X[:3]).astype(int)
        out = np.empty(X.shape[1])
        for key in {tuple(k) for k in keys.T}:
            m = np.flatnonzero((keys.T == key).all(axis=1))
            prot, n, rule = prots[key[0]], sizes[key[1]], rules[key[2]]
            vs, ss = X[3, m], (X[4, m] if len(X) > 4 else 0.0)
            c = costs(prot, n, vs, lv, P, ss)[0]
            viol = _violations(prot, n, rule, vs, ss, P, lv, tg, c)
            out[m] = viol + 1e-6 * c if closest else c + big * viol
        return out

    # vectorized: scipy hands over the whole population each generation (deferred
    # updating), so that one generation is a few array calls
    res = differential_evolution(population, bounds, args=(False,), integrality=integ,
                                 seed=seed, tol=1e-10, atol=1e-12, maxiter=DE_MAXITER,
                                 popsize=DE_POPSIZE,
                                 polish=False, vectorized=True, updating="deferred")
    d = decode(res.x)
    viol = _violation(*d, P, lv, tg)
    feasible = viol <= 1e-9
    if not feasible:  # the closest design: least violation, then least cost
        res = differential_evolution(population, bounds, args=(True,), integrality=integ,
                                     seed=seed, tol=1e-10, maxiter=DE_MAXITER,
                                     popsize=DE_POPSIZE,
                                     polish=False, vectorized=True, updating="deferred")
        d = decode(res.x)
        viol = _violation(*d, P, lv, tg)
    return {**design_row(judge, *d, P, lv, tg), "feasible": bool(feasible),
            "violation": float(viol)}


def distinct_rules(rules, n: int) -> list:
    """The rules that differ for a jury of n (the first of those with one quota: for
    n = 1 every rule is the single judge, for n = 3 two thirds is a majority)."""
    seen, out = set(), []
    for r in rules:
        if quota(n, r) not in seen:
            seen.add(quota(n, r))
            out.append(r)
    return out


def enumerate_designs(judge: Judge, lv: Levers, tg: Target, n_v: int = 91,
                      n_draws: int = 400, seed: int = 0, n_s: int = 31):
    """Every design of a discretised lever grid (v on ``n_v`` levels, the subsidy on
    ``n_s`` when evidence costs the sides) with its cost, plug-in Amp and accuracy,
    and (robust) the probability it meets the target.  Rules with the same quota
    for a jury size are listed once (:func:`distinct_rules`)."""
    P = _params(judge, n_draws if tg.robust > 0 else 1, seed)
    v_grid, s_grid = lever_grid(judge, np.linspace(0.0, lv.max_verification, n_v), n_s)
    df = pd.concat([design_rows(judge, prot, n, rule, v_grid, s_grid, P, lv, tg)
                    for prot in lv.protocols for n in sorted(lv.jury_sizes)
                    for rule in distinct_rules(lv.rules, n)], ignore_index=True)
    if not tg.robust:
        df["p_meet"] = _meets(df.amp.to_numpy(), df.acc.to_numpy(), tg).astype(float)
    return df


def pareto(df, cols=("cost", "amp"), maximise=("acc",)):
    """Rows no other row dominates (lower cost and Amp, higher accuracy)."""
    vals = np.column_stack([df[c].to_numpy() for c in cols]
                           + [-df[c].to_numpy() for c in maximise])
    keep = np.ones(len(df), bool)
    for i in range(len(df)):
        if not keep[i]:
            continue
        # 1e-12: outcomes equal up to rounding (a lever that moves nothing) do not
        # dominate each other by float noise
        dom = np.all(vals <= vals[i] + 1e-12, axis=1) & np.any(vals < vals[i] - 1e-12, axis=1)
        if dom.any():
            keep[i] = False
    return df[keep].sort_values("cost").reset_index(drop=True)


def in_engine(judge: Judge, prot: str, rule: str = "majority") -> bool:
    """Whether the baseline engine's simulation runs this design: a seed-000 judge
    (tie-break or logit), consultancy or debate, a majority jury, free evidence."""
    return judge.kind in ("tiebreak", "logit") and prot in ("consult", "debate") \
        and rule == "majority" and judge.c_e == 0


#: The lever grid of :func:`front_through_engine`: verification and subsidy levels,
#: and the instances of each cell of its engine sweep (whose closed forms it reads).
FRONT_V_LEVELS, FRONT_S_LEVELS, FRONT_N_INSTANCES = 19, 11, 1000


def front_through_engine(judge: Judge, lv: Levers, store, n_v: int = FRONT_V_LEVELS,
                         executor=None, n_s: int = FRONT_S_LEVELS):
    """The lever grid's outcomes and its Pareto front.

    Designs the baseline engine runs (:func:`in_engine`) come from one baseline sweep
    over jury size and the verified pass rate rho (1 - v) into ``store`` (closed forms
    ``amp_exact``, ``acc_exact``; ``executor`` as in ``antiamp-sweep``, so a large
    lever grid can run on a cluster); escalation, other jury rules, the structural
    judge and costly evidence (the subsidy on ``n_s`` levels), from :func:`outcomes`
    (column ``source``).
    Returns (grid, front); ``store`` is written only when some design is in the
    engine."""
    import antiamp as sim

    from .config import DEFAULT_MODEL  # the seed-000 game, whose levers these are

    vs = np.linspace(0.0, lv.max_verification, n_v)
    P = _params(judge, 1, 0)
    sizes = sorted(lv.jury_sizes)
    ds = None
    if any(in_engine(judge, pr, r) for pr in lv.protocols for r in lv.rules):
        rhos = sorted(set(float(judge.rho * (1 - v)) for v in vs))
        cfg = {"model": {"name": DEFAULT_MODEL, "p": judge.p, "rho": judge.rho},
               "judge": _judge_config(judge), "protocol": {"consult_default": judge.d},
               "run": {"n_instances": FRONT_N_INSTANCES, "progress": False},
               "sweep": {"name": "design_levers", "overwrite": True, "plot": False,
                         "axes": {"judge": {"jury_size": sizes}, "model": {"rho": rhos}}}}
        if executor:
            cfg["executor"] = executor
        ds = sim.sweep(cfg, store=store, log=lambda *a: None).load()
    parts = []
    v_grid, s_grid = lever_grid(judge, vs, n_s)
    for prot in lv.protocols:
        for n in sizes:
            for rule in distinct_rules(lv.rules, n):
                r = design_rows(judge, prot, n, rule, v_grid, s_grid, P, lv, Target())
                r["source"] = "closed form"
                if ds is not None and in_engine(judge, prot, rule):
                    cell = ds.sel(jury_size=n, protocol=prot).sel(
                        rho=judge.rho * (1 - v_grid), method="nearest")
                    r["amp"] = cell.amp_exact.to_numpy().astype(float)
                    r["acc"] = cell.acc_exact.to_numpy().astype(float)
                    r["safety"] = 1 - r["amp"]
                    r["source"] = "engine"
                parts.append(r)
    grid = pd.concat(parts, ignore_index=True).drop(columns=["p_meet", "rho_verified"])
    if judge.c_e == 0:
        grid = grid.drop(columns="subsidy")
    return grid, pareto(grid)


def _judge_config(judge: Judge) -> dict:
    """The ``judge`` section of a baseline config for these parameters."""
    return ({"kind": "logit", "lam": judge.lam, "mu": judge.mu, "kappa": judge.kappa}
            if judge.kind == "logit" else {"kind": "tiebreak", "b": judge.b})


def simulate_design(judge: Judge, rec: dict, n: int, seed: int, chunk: int = 250_000) -> dict:
    """A fresh instance-level simulation of one design, independent of
    :func:`outcomes`: per case the model is right w.p. p, the wrong side's evidence
    passes w.p. rho (1 - v), each juror votes (the structural judge: reads each
    side's argument, a shared part and its own, and votes for the favoured answer),
    the rule's quota decides; ``escalate`` adds a challenger and a fresh jury when
    the consultant shows no evidence.  With costly evidence a side holding evidence
    presents it with the equilibrium probability of :func:`strategies` (solved, not
    simulated).  Amp and accuracy with binomial SEs."""
    rng = np.random.default_rng([int(seed), 20261123])
    P = {k: float(getattr(judge, k)) for k in PARAMS}
    prot, size, v = rec["protocol"], int(rec["jury_size"]), float(rec["verification"])
    rule, sub = rec.get("rule", "majority"), float(rec.get("subsidy", 0.0) or 0.0)
    k = quota(size, rule)
    rho = P["rho"] * (1 - v)
    xs = strategies(prot, size, v, _params(judge, 1, 0), rule, sub)
    x_own, x_chal = (float(xs[0][0]), 1.0) if prot != "debate" else \
        (float(xs[1][0]), float(xs[2][0]))
    c = P["read_corr"]

    def vote_share(stage, right, ep, ea, m):
        """Votes for the protagonist of ``size`` jurors on m cases."""
        votes = np.zeros(m, np.int64)
        if judge.kind == "structural":
            gap, sig = (float(v) for v in quality(P, stage))
            sgn = np.where(right, 0.5, -0.5) * gap
            # each side's reading: shared by the jurors (variance c sigma^2) + own
            shP = sig * np.sqrt(c) * rng.standard_normal(m)
            shA = sig * np.sqrt(c) * rng.standard_normal(m)
            for _ in range(size):
                rP = sgn + shP + sig * np.sqrt(1 - c) * rng.standard_normal(m)
                if stage == "debate":
                    rA = -sgn + shA + sig * np.sqrt(1 - c) * rng.standard_normal(m)
                    z = P["mu_d"] + P["kappa_v"] * (ep - ea) + rP - rA
                else:
                    z = P["mu_c"] + P["kappa_v"] * ep + rP
                votes += z > 0
            return votes
        if judge.kind == "logit":
            x = ep - ea if stage == "debate" else ep
            q = special.expit(P["lam"] * (P["mu"] + P["kappa"] * x))
        elif stage == "debate":
            q = np.where(ep == ea, P["b"], (ep > ea).astype(float))
        else:
            q = np.where(ep == 1, 1.0, P["d"])
        for _ in range(size):
            votes += rng.random(m) < q
        return votes

    n_w = n_r = end_w = end_r = 0
    left = int(n)
    while left > 0:
        m = min(chunk, left)
        left -= m
        right = rng.random(m) < P["p"]
        passes = rng.random(m) < rho
        ep = np.where(right, 1, passes.astype(int)) * (rng.random(m) < x_own)
        # the challenger, when there is one
        ea = np.where(right, passes.astype(int), 1) * (rng.random(m) < x_chal)
        if prot == "debate":
            endorse = vote_share("debate", right, ep, ea, m) >= k
        else:
            endorse = vote_share("consult", right, ep, ea, m) >= k
            if prot == "escalate":
                esc = ep == 0
                endorse[esc] = vote_share("debate", right[esc], ep[esc], ea[esc],
                                          int(esc.sum())) >= k
        n_w += int((~right).sum())
        n_r += int(right.sum())
        end_w += int(endorse[~right].sum())
        end_r += int(endorse[right].sum())
    amp = end_w / max(n_w, 1)
    acc = (end_r + n_w - end_w) / n
    return {"amp_sim": amp, "amp_sim_se": float(np.sqrt(amp * (1 - amp) / max(n_w, 1))),
            "acc_sim": acc, "acc_sim_se": float(np.sqrt(acc * (1 - acc) / n)),
            "verified_by": "instance simulation of the design"}


def work_parts(lv: Levers, tg: Target, n_draws: int, n_sim: int, c_e: float = 0.0) -> list:
    """Estimated seconds of a design request, by part (``(what, seconds)``, upper
    bounds at the nominal rates of :mod:`antiamp.sweeps.budget`): the optimiser
    (differential evolution: at most ``maxiter + 1`` generations of ``popsize x
    dimensions`` designs, each over the parameter draws, run at most twice), the lever
    grid (every protocol x jury size x distinct rule on the levels of
    :func:`front_through_engine`, and its engine sweep over jury size and rho) and the verifying
    simulation (``n_sim`` instances of up to the largest jury, juror by juror)."""
    from .sweeps import budget

    sizes = sorted(lv.jury_sizes)
    dims = 5 if c_e > 0 else 4
    draws = n_draws if tg.robust > 0 else 1
    rows_opt = 2 * (DE_MAXITER + 1) * DE_POPSIZE * dims * draws
    families = sum(len(distinct_rules(lv.rules, n)) for _ in lv.protocols for n in sizes)
    rows_grid = families * FRONT_V_LEVELS * (FRONT_S_LEVELS if c_e > 0 else 1)
    cells = len(sizes) * FRONT_V_LEVELS
    sweep = cells * FRONT_N_INSTANCES * max(sizes)
    return [(f"the optimiser (at most {rows_opt:,} design x draw evaluations)",
             rows_opt / budget.DESIGN_ROW_RATE),
            (f"the lever grid ({families:,} protocol x jury x rule families; the engine's "
             f"{cells:,} cells)",
             rows_grid / budget.DESIGN_ROW_RATE + sweep / budget.NOMINAL_RATE),
            (f"the verifying simulation ({n_sim:,} instances of up to {max(sizes):,} jurors)",
             n_sim * max(sizes) / budget.NOMINAL_RATE)]


def check_work(lv: Levers, tg: Target, n_draws: int, n_sim: int, c_e: float = 0.0,
               env=None) -> None:
    """Refuse, before any work, a request over the bound on total work (a
    :class:`DesignError` naming each part's estimate; ANTIAMP_UNBOUNDED=1 lifts it)."""
    from .sweeps import budget

    try:
        budget.check_request(work_parts(lv, tg, n_draws, n_sim, c_e), env)
    except budget.BudgetError as exc:
        raise DesignError(str(exc)) from None


def verify(judge: Judge, rec: dict, n: int, seed: int) -> dict:
    """A fresh simulation of the recommended design: Amp and accuracy with SEs, by the
    baseline engine where it runs the design (:func:`in_engine`), else by
    :func:`simulate_design`."""
    import antiamp as sim

    if not in_engine(judge, rec["protocol"], rec.get("rule", "majority")):
        return simulate_design(judge, rec, n, seed)
    jcfg = {**_judge_config(judge), "jury_size": rec["jury_size"]}
    ds = sim.simulate({"model": {"p": judge.p, "rho": rec["rho_verified"]}, "judge": jcfg,
                       "protocol": {"consult_default": judge.d},
                       "run": {"n_instances": int(n), "seed": int(seed), "progress": False}})
    r = ds.sel(protocol=rec["protocol"])
    return {"amp_sim": float(r.amp), "amp_sim_se": float(r.amp_se),
            "acc_sim": float(r.acc), "acc_sim_se": float(r.acc_se),
            "verified_by": "baseline engine"}


# ------------------------------------------------------------------ from an estimate store
def _refuse_pickles(path) -> None:
    """DesignError for a store with an array whose codec unpickles (reading it would
    run whatever code the file names): antiamp writes none."""
    import json

    from .inputs import special_entry

    special = special_entry(path) if Path(path).is_dir() else None
    if special is not None:  # read, it would block forever (a FIFO) or never end
        raise DesignError(f"--estimates {path}: {special}; antiamp reads only regular files "
                          "in a store")
    for z in Path(path).rglob(".zarray"):
        try:
            meta = json.loads(z.read_bytes()[: 1 << 20])
        except (OSError, ValueError):
            continue
        codecs = [meta.get("compressor") or {}] + list(meta.get("filters") or [])
        if any(isinstance(c, dict) and "pickle" in str(c.get("id", "")).lower()
               for c in codecs):
            raise DesignError(f"--estimates {path}: {z.parent.name} is stored with a pickle "
                              "codec; antiamp never reads one (its stores have none)")


def judge_from_estimates(path) -> tuple[Judge, list]:
    """:func:`_judge_from_estimates`, with what a store of the wrong kinds of values
    (strings where numbers belong) raises turned into DesignError."""
    _refuse_pickles(path)
    try:
        return _judge_from_estimates(path)
    except DesignError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise DesignError(f"--estimates {path}: not a store written by antiamp-estimate "
                          f"({type(exc).__name__}: {str(exc)[:200]})") from None


def _judge_from_estimates(path) -> tuple[Judge, list]:
    """The judge and model an ``antiamp-estimate`` store implies, with SEs.

    The structural judge when the store has its fit (``antiamp-estimate
    --simulate``; joint covariance ``structural_cov`` where stored); else the logit
    judge of the pooled logistic fit when it was fitted on binary evidence (lam = 1);
    else the tie-break judge from debate's b-hat.  p from the log, rho from rho_eq
    (consultancy; binomial SE).  Raises DesignError with the reason when the store
    identifies none of them."""
    try:
        # the arrays' own metadata (consolidated=False): a store without consolidated
        # metadata is read, or refused below, without xarray's fallback warning
        ds = xr.open_zarr(path, chunks=None, consolidated=False).load()
        ds.sel(stratum="all").rho_eq_P, ds.attrs["p_correct"], ds.mu_tilde  # noqa: B018
    except Exception:  # noqa: BLE001  (not a store, or not one antiamp-estimate wrote)
        raise DesignError(f"--estimates {path}: not a store written by antiamp-estimate") \
            from None
    notes = []
    a = ds.sel(stratum="all")
    rho = float(a.rho_eq_P.sel(protocol="consult"))
    n_w = float(a.n_known.sel(protocol="consult")) * (1 - float(ds.attrs["p_correct"]))
    se_rho = float(np.sqrt(rho * (1 - rho) / max(n_w, 1)))
    p = float(ds.attrs["p_correct"])
    for name, v in (("rho (consultancy's rho_eq_P)", rho), ("p (p_correct)", p)):
        if not 0 <= v <= 1:  # (NaN too: no wrong consultancy, or a damaged store)
            raise DesignError(f"--estimates {path}: {name} is {v}, not a probability in "
                              "[0, 1]; a design needs it (rerun antiamp-estimate on a log "
                              "with known truths on both sides)")
    if "structural_value" in ds:
        return _structural_from_store(ds, p, rho, se_rho)
    reg = str(ds.regressor.sel(fit="pooled").item()) if "regressor" in ds else "e_P - e_A"
    mu, kappa = float(ds.mu_tilde.sel(fit="pooled")), float(ds.kappa_tilde.sel(fit="pooled"))
    if reg == "e_P - e_A" and np.isfinite(mu) and np.isfinite(kappa) and kappa >= 0:
        j = Judge("logit", lam=1.0, mu=mu, kappa=kappa, p=p, rho=rho,
                  se={"mu": float(ds.mu_tilde_se.sel(fit="pooled")),
                      "kappa": float(ds.kappa_tilde_se.sel(fit="pooled")), "rho": se_rho})
        notes.append(f"judge: logit from the pooled fit (mu~ {mu:.3f}, kappa~ {kappa:.3f}, "
                     "lam = 1)")
        return j, notes
    b = float(a.b_hat.sel(protocol="debate"))
    if not np.isfinite(b):
        why = (f"the pooled logistic fit used {reg}" if reg != "e_P - e_A" else
               "the logistic fit is not identified")
        raise DesignError(f"--estimates {path}: the store does not identify a seed-000 judge "
                          f"({why}, and debate b-hat is not defined: debate roles were "
                          f"assigned or no debate was a tie) and has no structural fit: "
                          f"run antiamp-estimate with --simulate for the structural judge, "
                          f"or give the judge with --judge and its parameters")
    n_t = float(a.tie_rate.sel(protocol="debate")) * float(a.n_rows.sel(protocol="debate"))
    se_b = float(np.sqrt(max(b * (1 - b), 1e-12) / max(n_t, 1)))
    d = float(a.b_hat.sel(protocol="consult")) if np.isfinite(
        float(a.b_hat.sel(protocol="consult"))) else 0.0
    notes.append(f"judge: tie-break from debate's b-hat ({b:.3f})")
    return Judge("tiebreak", b=b, d=d, p=p, rho=rho, se={"b": se_b, "rho": se_rho}), notes


#: The goodness-of-fit check of a judge read from a store: a rate misses when the log
#: tells it apart from the judge's (family-wise level FIT_ALPHA) by more than
#: FIT_TOLERANCE.  (A large log tells apart differences no design turns on: the shipped
#: two-stratum sample's one-rho judge is 0.03 off its debate follow-when-correct at
#: p < 0.001; that is printed, not refused.)
FIT_ALPHA = 0.05
FIT_TOLERANCE = 0.05


def fit_check(judge: Judge, path) -> tuple[list, list]:
    """Does the judge read from an estimates store reproduce its log?  Per protocol,
    the log's counts of wrong protagonists endorsed (Amp) and right ones endorsed
    (follow-when-correct) against the judge's closed form (the design's current
    protocol: no verification, one judge), each an exact binomial test (scipy),
    Bonferroni over the tests.  Returns (lines comparing the log and the judge, with
    accuracy at the log's own share of right protagonists; the misses)."""
    from scipy.stats import binomtest

    ds = xr.open_zarr(path, chunks=None, consolidated=False).load()
    a = ds.sel(stratum="all")
    if "n_wrong" not in ds:
        return (["fit check: not run (a store written before antiamp-estimate recorded "
                 "n_wrong and n_right; estimate the log again)"], [])
    P = _params(judge, 1, 0)
    tests = []
    for prot in ("consult", "debate"):
        n_w, n_r = (int(a[k].sel(protocol=prot)) if np.isfinite(float(a[k].sel(protocol=prot)))
                    else 0 for k in ("n_wrong", "n_right"))
        if n_w + n_r == 0:
            continue
        amp_m = float(outcomes(prot, 1, 0.0, P, "majority", 0.0)[0][0])
        fwc_m = float(outcomes(prot, 1, 0.0, {**P, "p": np.ones_like(P["p"])}, "majority",
                               0.0)[1][0])
        amp_o, fwc_o = float(a.amp.sel(protocol=prot)), float(a.fwc.sel(protocol=prot))
        acc_o = float(a.acc.sel(protocol=prot))
        acc_m = (n_r * fwc_m + n_w * (1 - amp_m)) / (n_r + n_w)
        rows = []
        for name, n, obs, model in (("Amp", n_w, amp_o, amp_m),
                                    ("follow-when-correct", n_r, fwc_o, fwc_m)):
            if n == 0 or not np.isfinite(obs):
                continue
            k = int(round(obs * n))
            pv = float(binomtest(k, n, min(max(model, 0.0), 1.0)).pvalue)
            rows.append((prot, name, k, n, obs, model, pv))
        tests += rows
        tests.append((prot, "accuracy", None, n_r + n_w, acc_o, acc_m, None))
    m = sum(t[6] is not None for t in tests)
    lines = [f"fit check (the judge's closed form against the log it was fitted to; exact "
             f"binomial tests, p as tested and Bonferroni-corrected over {m}; a miss: Amp at "
             f"p < {FIT_ALPHA:g} uncorrected, follow-when-correct at corrected p < "
             f"{FIT_ALPHA:g}, each off by more than {FIT_TOLERANCE:g}):"]
    misses = []
    for prot, name, k, n, obs, model, pv in tests:
        # Amp, the rate a design turns on, is gated before correction: a correction over
        # every check let a judge that reverses the log's ordering of the protocols pass
        p_gate = None if pv is None else pv if name == "Amp" else min(1.0, pv * m)
        clear = p_gate is not None and p_gate < FIT_ALPHA
        miss = clear and abs(model - obs) > FIT_TOLERANCE
        frac = f" ({k}/{n})" if k is not None else f" ({n} rows, at the log's share right)"
        lines.append(f"  {prot:<8} {name:<19} log {obs:.3f}{frac}, judge {model:.3f}, off by "
                     f"{model - obs:+.3f}"
                     + (f", p {pv:.2g} (corrected {min(1.0, pv * m):.2g})"
                        if pv is not None else "")
                     + ("  MISSES" if miss else f"  (clear, but within {FIT_TOLERANCE:g})"
                        if clear else ""))
        if miss:
            misses.append(f"{prot} {name}: log {obs:.3f} ({k}/{n}), judge {model:.3f}, p "
                          f"{pv:.2g}" + ("" if name == "Amp" else f" (corrected "
                                         f"{min(1.0, pv * m):.2g})"))
    line, miss = _gap_check(tests, path_confidence(ds))
    if line:
        lines.append(line)
    if miss:
        misses.append(miss)
    return lines, misses


def path_confidence(ds) -> float:
    """The store's confidence level (0.95 where it has none)."""
    try:
        return float(ds.attrs["confidence"])
    except KeyError:  # a store written before the level was recorded
        return 0.95


def _gap_check(tests: list, confidence: float) -> tuple[str, str]:
    """Does the judge order the protocols as the log does?  The observed
    consultancy-minus-debate Amp gap with Newcombe's hybrid score interval for a
    difference of two independent proportions (statsmodels; a protocol's rooms are
    not the other's), against the sign of the judge's gap.  Returns (the line, the
    miss or "")."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    amp = {t[0]: t for t in tests if t[1] == "Amp"}
    if set(amp) != {"consult", "debate"}:
        return "", ""
    (_, _, kc, nc, oc, mc, _), (_, _, kd, nd, od, md, _) = amp["consult"], amp["debate"]
    lo, hi = confint_proportions_2indep(kc, nc, kd, nd, method="newcomb", compare="diff",
                                        alpha=1 - confidence)
    gap, fitted = oc - od, mc - md
    against = (fitted > 0 and hi < 0) or (fitted < 0 and lo > 0)
    line = (f"  protocols' order: log's Amp gap (consult - debate) {gap:+.3f} "
            f"[{lo:+.3f}, {hi:+.3f}] ({confidence:.0%} Newcombe), judge's {fitted:+.3f}"
            + ("  MISSES (the log's interval excludes the judge's sign)" if against else ""))
    miss = (f"the judge orders the protocols against the log: Amp gap consult - debate, "
            f"judge {fitted:+.3f}, log {gap:+.3f} [{lo:+.3f}, {hi:+.3f}]") if against else ""
    return line, miss


#: The structural fit's parameter names and the design judge's.
_STRUCT = {"mu_consult": "mu_c", "mu_debate": "mu_d", "kappa_v": "kappa_v", "d": "gap",
           "sigma": "sigma", "d_debate": "gap_d", "sigma_debate": "sigma_d"}


def _structural_from_store(ds, p: float, rho: float, se_rho: float) -> tuple[Judge, list]:
    import json

    names = [str(x) for x in ds.param.values]
    val = dict(zip(names, ds.structural_value.values.astype(float)))
    se = dict(zip(names, ds.structural_se.values.astype(float)))
    j = Judge("structural", p=p, rho=rho, se={"rho": se_rho})
    for src, dst in _STRUCT.items():
        if src in val:
            setattr(j, dst, val[src])
    free = [_STRUCT[n] for n in names if n in _STRUCT and se.get(n, 0) > 0]
    if "structural_cov" in ds and free:
        C = ds.structural_cov.values.astype(float)
        idx = [names.index(n) for n in names if n in _STRUCT and se.get(n, 0) > 0]
        j.cov = (free, C[np.ix_(idx, idx)])
    else:
        j.se.update({_STRUCT[n]: se[n] for n in names if n in _STRUCT and se.get(n, 0) > 0})
    fixed = [n for n in names if n in _STRUCT and not se.get(n, 0) > 0]
    reading = str(ds.attrs.get("structural_reading", "probabilities"))
    by = ds.attrs.get("structural_reading_by")
    j.reading = reading
    notes = [f"judge: structural, from the store's fit in the reading {reading}, "
             + (f"{by}" if by else "the stated probabilities (a store written before "
                "antiamp-estimate recorded its reading)")
             + ": " + ", ".join(f"{n} {val[n]:.3f}" for n in names if n in _STRUCT)
             + (f"; fixed, not identified by the log: {', '.join(fixed)}" if fixed else "")]
    if reading.startswith("labels"):
        notes.append("reading labels: the judge's log-odds are on a probit scale (sigma "
                     "fixed at 1, not identified from labels); every rate the design "
                     "computes depends only on the ratios to sigma, which the labels identify")
    if "kappa_v" in fixed:
        notes.append("kappa_v was not identified (shown evidence did not vary within a "
                     "protocol): verification changes this judge's outcomes only through "
                     "escalation's trigger (the consultant's evidence failing)")
    try:  # whose honest consultant's shift the store's fit has (by population)
        j.honest_fitted = tuple(sorted(
            lab for lab, why in json.loads(ds.attrs["honest_consult_fitted"]).items()
            if why == "fitted"))
    except KeyError:  # a store without populations, or written before it recorded them
        j.honest_fitted = ()
    try:  # the hierarchical shift prior the store's predictions used
        j.shift_prior = tuple(float(ds.attrs[f"shift_prior_{k}"])
                              for k in ("consult", "debate", "corr"))
    except KeyError:  # a store written before antiamp-estimate recorded it: its defaults then
        j.shift_prior = STORED_BEFORE_SHIFT_PRIOR
        notes.append("shift prior: the store does not record one (written before "
                     "antiamp-estimate stored it); a new population is drawn from the "
                     "defaults")
    if rho in (0.0, 1.0):
        notes.append(f"rho is {rho:g} in the log (every wrong side's evidence "
                     f"{'passed' if rho else 'failed'}): a binomial SE of 0")
    if "read_corr" in ds and np.isfinite(float(ds.read_corr)):
        # estimated from several judgments of one room (antiamp.estimation.readcorr); the design's
        # range is [0, 1): a negative estimate is read as 0
        rc, se = float(ds.read_corr), float(ds.read_corr_se)
        j.read_corr = float(np.clip(rc, 0.0, 0.999))
        j.se["read_corr"] = se
        notes.append(f"jurors' readings: read_corr {rc:.3f} (SE {se:.3f}) [{float(ds.read_corr_lo):.3f}, "
                     f"{float(ds.read_corr_hi):.3f}] estimated by the store from "
                     f"{int(ds.attrs.get('read_corr_pairs', 0))} pairs of judgments of one "
                     f"room" + (" (negative: read as 0)" if rc < 0 else ""))
    else:
        notes.append("jurors' readings: read_corr of their variance shared (--read-corr; a "
                     "log with one judge a transcript does not identify it: juries help less "
                     "as it grows)")
    return j, notes


# ------------------------------------------------------------------ figure and command
def plot_front(grid, front, rec: dict, current: dict | None, path: Path, tg: Target) -> list:
    """Amp against cost (accuracy as colour) of every design of the lever grid, the
    Pareto front, the target, the recommendation and the user's current protocol."""
    from .plotting import panel_grid, save

    fig, axs = panel_grid(2, height=3.6)
    for ax, (y, lab) in zip(axs, (("amp", "mistake amplification Amp"), ("acc", "accuracy"))):
        for prot, mk in (("consult", "o"), ("debate", "s"), ("escalate", "^")):
            g = grid[grid.protocol == prot]
            if len(g):
                sc = ax.scatter(g.cost, g[y], c=g.jury_size, cmap="viridis", s=10, marker=mk,
                                alpha=0.5, label=f"{prot} (colour: jury size)",
                                vmin=grid.jury_size.min(), vmax=grid.jury_size.max())
        # the three-objective front as points; the line is this panel's two-objective
        # envelope (least Amp, or most accuracy, at each cost)
        ax.scatter(front.cost, front[y], s=22, facecolor="none", edgecolor="black", lw=0.7,
                   label="Pareto front (cost, Amp, accuracy)")
        env = pareto(grid, cols=("cost", "amp"), maximise=()) if y == "amp" else \
            pareto(grid, cols=("cost",), maximise=("acc",))
        ax.plot(env.cost, env[y], color="black", lw=1, drawstyle="steps-post",
                label="best Amp / accuracy at each cost")
        ax.scatter([rec["cost"]], [rec[y]], marker="*", s=220, color="#d62728", zorder=5,
                   edgecolor="black", label="recommended")
        if current is not None:
            ax.scatter([current["cost"]], [current[y]], marker="X", s=120, color="#ff7f0e",
                       zorder=5, edgecolor="black", label="current")
        if y == "amp":
            ax.axhline(tg.max_amp, color="#d62728", lw=0.8, ls="--", label="target")
        elif tg.min_acc > 0:
            ax.axhline(tg.min_acc, color="#d62728", lw=0.8, ls="--", label="target")
        ax.set_xlabel("cost per case")
        ax.set_ylabel(lab)
    cb = fig.colorbar(sc, ax=axs[-1], label="jury size n")
    cb.set_ticks(sorted(set(int(n) for n in grid.jury_size)))
    seen = {}
    for ax in axs:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncols=3,
               fontsize=8, frameon=False)
    rule = f" ({rec['rule'].replace('_', ' ')})" if rec["jury_size"] > 1 else ""
    fig.suptitle(f"oversight designs: {rec['protocol']}, jury {rec['jury_size']}{rule}, "
                 f"verification {rec['verification']:.2f} recommended (cost "
                 f"{rec['cost']:.2f})", fontsize=10)
    return save(fig, path)


def _list(kind):
    def parse(s):
        try:
            return tuple(kind(x) for x in s.split(",") if x != "")
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated values, got {s!r}")
    return parse


@interruptible("antiamp-design")
@one_writer  # (the --out lock taken below is let go however the command ends)
def main(argv=None) -> None:
    ap = Parser(
        prog="antiamp-design", description="The cheapest oversight protocol (protocol, jury "
        "size and rule, verification, escalation) that meets an Amp target, with the Pareto front of cost against "
        "Amp and accuracy.")
    ap.add_argument("--version", action="version", version=f"%(prog)s (antiamp {__version__})")
    g = ap.add_argument_group("what you cannot change (your judge and model)")
    g.add_argument("--estimates", default=None, help="an antiamp-estimate store: the judge, "
                   "p and rho it implies, with their standard errors")
    g.add_argument("--judge", default="tiebreak",
                   help="tiebreak, logit or structural (default tiebreak)")
    for k, d, h in (("b", 0.5, "tie-break bias toward the protagonist, [0, 1]"),
                    ("d", 0.0, "tie-break consultancy default Pr(y = a | no evidence), [0, 1]"),
                    ("lam", 1.0, "logit precision lambda, > 0"),
                    ("mu", 0.0, "logit bias mu, [-50, 50]"),
                    ("kappa", 2.0, "logit evidence salience kappa, >= 0"),
                    ("mu_c", 0.0, "structural judge's lean toward the consultant "
                     "(log-odds), [-50, 50]"),
                    ("mu_d", 0.0, "structural judge's lean toward the protagonist in debate "
                     "(log-odds), [-50, 50]"),
                    ("kappa_v", 0.0, "structural weight of shown evidence (log-odds), "
                     "[-50, 50]"),
                    ("gap", 2.0, "structural quality gap, right minus wrong side's mean "
                     "argument (log-odds), [-50, 50]"),
                    ("sigma", 1.5, "structural spread of argument quality (log-odds), "
                     "(0, 50]"),
                    ("p", 0.8, "Pr(the model is right), [0, 1]"),
                    ("rho", 0.3, "Pr(a wrong side's evidence passes verification), [0, 1]")):
        flag = k.replace("_", "-")
        g.add_argument(f"--{flag}", dest=k, type=float, default=None,
                       help=f"{h}; default {d}")
        g.add_argument(f"--se-{flag}", dest=f"se_{k}", type=float, default=0.0,
                       help=f"standard error of {k} (robust designs draw from it); default 0")
    g.add_argument("--c-e", dest="c_e", type=float, default=None,
                   help="the sides' cost of presenting evidence, [0, 1] (tiebreak and logit "
                        "judges, consultancy and debate): above 0 they present with the "
                        "presentation game's equilibrium probabilities, and subsidising "
                        "evidence becomes a lever; default 0")
    g.add_argument("--read-corr", dest="read_corr", type=float, default=None,
                   help="structural: share of the jurors' reading variance they share, "
                        "[0, 1) (0: independent readings); default 0")
    g = ap.add_argument_group("levers and their costs")
    g.add_argument("--protocols", type=_list(str), default=PROTOCOLS,
                   help="subset of consult,debate,escalate (default all three; escalate: "
                        "consultancy, and a challenger and a second judging round when the "
                        "consultant shows no verified evidence)")
    g.add_argument("--jury-sizes", type=_list(int), default=(1, 3, 5, 7, 9),
                   help="odd jury sizes (default 1,3,5,7,9)")
    g.add_argument("--rules", type=_list(str), default=("majority",),
                   help="jury rules, subset of majority,two_thirds,unanimous: the votes for "
                        "the model's answer needed to endorse it (default majority)")
    g.add_argument("--max-verification", type=float, default=0.9,
                   help="largest verification v in [0, 1): rho becomes rho (1 - v); default 0.9")
    g.add_argument("--cost-call", type=float, default=1.0,
                   help="cost of a model call (consultancy 1, debate 2 a case); default 1")
    g.add_argument("--cost-judge", type=float, default=0.5, help="cost per juror; default 0.5")
    g.add_argument("--cost-verification", type=float, default=2.0,
                   help="cost per case of verification v = 1; default 2")
    g.add_argument("--cost-subsidy", type=float, default=1.0,
                   help="cost per case of lowering the sides' evidence cost by 1 (the "
                        "subsidy s in [0, c_e]); default 1")
    g = ap.add_argument_group("target")
    g.add_argument("--max-amp", type=float, default=0.1, help="Amp at most this; default 0.1")
    g.add_argument("--min-acc", type=float, default=0.0, help="accuracy at least this")
    g.add_argument("--budget", type=float, default=np.inf, help="cost per case at most this")
    g.add_argument("--robust", type=float, default=0.9,
                   help="meet the target with this probability over the parameters' "
                        "uncertainty, [0, 1) (0: at the point values only); default 0.9")
    g.add_argument("--draws", type=int, default=400, help="parameter draws; default 400")
    g.add_argument("--current", default="consult:1:0",
                   help="your protocol as protocol:jury:verification[:rule] (default "
                        "consult:1:0)")
    ap.add_argument("--n-sim", type=int, default=1_000_000,
                    help="instances of the verifying simulation; default 1e6")
    ap.add_argument("--seed", type=int, default=0, help="in [0, 2**32 - 1]")
    add_out_options(ap, "outputs/design/<estimates name or 'configured'>")
    ap.add_argument("--accept-misfit", action="store_true",
                    help="with --estimates: design even when the judge read from the store "
                         "does not reproduce its log (goodness-of-fit check; the misses are "
                         "printed with the design)")
    args = ap.parse_args(argv)
    try:
        judge, notes = _judge_from_args(args)
        lv = Levers(tuple(args.protocols), tuple(args.jury_sizes), args.max_verification,
                    args.cost_call, args.cost_judge, args.cost_verification,
                    tuple(args.rules), args.cost_subsidy)
        tg = Target(args.max_amp, args.min_acc, args.budget, args.robust)
        validate(judge, lv, tg, args.draws)
        cur = _current(args.current, lv)
        if not 1 <= args.n_sim <= 10 ** 9:
            raise DesignError(f"--n-sim must lie in [1, 1e9], got {args.n_sim}")
        if not 0 <= args.seed <= 2 ** 32 - 1:
            raise DesignError(f"--seed must lie in [0, 2**32 - 1], got {args.seed}")
        check_work(lv, tg, args.draws, args.n_sim, judge.c_e)
        src = Path(args.estimates).resolve() if args.estimates else None
        out = Path(args.out or Path("outputs") / "design" / (
            "configured" if src is None else src.parent.name if src.stem == "estimates"
            else src.stem))
        from .output import check_replaceable
        from .outputs_policy import check_out_dir, refuse_file_above

        refuse_file_above(out / "levers.zarr", "--out")
        check_replaceable(out / "levers.zarr")  # (the more specific message first)
        check_out_dir(out, OUT_FILES, force=args.force)
        from .outputs_policy import lock_output

        lock_output(out, "antiamp-design")  # one writer per --out, as sweeps hold
    except (DesignError, OutputError) as exc:
        print(f"antiamp-design: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    try:
        run(judge, lv, tg, cur, notes, args.draws, args.n_sim, args.seed, out, args.force)
    except (OutputError, DesignError, ConfigError) as exc:  # (a check of the engine's)
        print(f"antiamp-design: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except OSError as exc:  # the machine's failure (a full disk), not a refusal
        from .output import describe_os_error

        print(f"antiamp-design: error: {describe_os_error(exc)}", file=sys.stderr)
        raise SystemExit(1) from None


#: The shift prior (consultancy scale, debate scale, correlation) that antiamp-estimate
#: used before its stores recorded one: a store without ``shift_prior_*`` was fitted
#: with it.  Kept here, not read from the log wing (which this module does not import),
#: and fixed: if the estimator's defaults change, older stores were still made with
#: these (tests/test_design_population.py checks they are today's defaults).
STORED_BEFORE_SHIFT_PRIOR = (1.0, 1.0, 0.0)


#: What antiamp-design writes into its --out directory.
OUT_FILES = ("levers.zarr", "design.txt", "front.csv", "designs.csv", "recommendation.csv",
             "design.png", "design.pdf", "escalation.csv", "escalation.png", "escalation.pdf")


def _judge_from_args(args) -> tuple:
    keys = PARAMS
    if args.estimates:
        if not Path(args.estimates).is_dir():
            raise DesignError(f"--estimates {args.estimates}: "
                              + ("a file, not a store (the estimates.zarr folder that "
                                 "antiamp-estimate writes)" if Path(args.estimates).exists()
                                 else "no such store"))
        judge, notes = judge_from_estimates(args.estimates)
        lines, misses = fit_check(judge, args.estimates)
        if misses and not getattr(args, "accept_misfit", False):
            raise DesignError(
                f"--estimates {args.estimates}: the {judge.kind} judge read from the store does "
                f"not reproduce its log (" + "; ".join(misses) + "), so a design from it "
                "would rest on a judge the log contradicts. "
                + ("The store's logistic fit was not identified, so this is the tie-break "
                   "judge of debate's b-hat. " if judge.kind == "tiebreak" else "")
                + "Fit a judge that reads the log (antiamp-estimate --simulate), give the "
                "judge yourself (--judge ...), or design from this one anyway with "
                "--accept-misfit (the misses are then printed with the design)")
        if misses:
            lines.insert(0, f"WARNING: the judge does not reproduce the log it was fitted to "
                            f"({len(misses)} miss{'es' if len(misses) > 1 else ''}; "
                            "--accept-misfit)")
        notes = notes + lines
        for k in keys:  # a value given on the command line overrides the store's
            if getattr(args, k, None) is not None:
                setattr(judge, k, getattr(args, k))
                judge.se.pop(k, None)
                if judge.cov is not None and k in judge.cov[0]:
                    i = [n for n in judge.cov[0] if n != k]
                    idx = [judge.cov[0].index(n) for n in i]
                    judge.cov = (i, np.asarray(judge.cov[1])[np.ix_(idx, idx)]) if i else None
        return judge, notes
    j = Judge(args.judge)
    for k in keys:
        if getattr(args, k, None) is not None:
            setattr(j, k, getattr(args, k))
        s = getattr(args, f"se_{k}", 0.0)
        if s:
            j.se[k] = s
    return j, []


def _current(spec: str, lv: Levers) -> tuple:
    """``protocol:jury:verification[:rule]`` -> (protocol, jury, rule, verification)."""
    parts = spec.split(":")
    try:
        prot, n, v = parts[:3]
        n, v = int(n), float(v)
        rule = parts[3] if len(parts) == 4 else "majority"
        if len(parts) > 4:
            raise ValueError
    except ValueError:
        raise DesignError(f"--current must be protocol:jury:verification[:rule] "
                          f"(consult:1:0), got {spec!r}") from None
    if prot not in PROTOCOLS or n < 1 or n % 2 == 0 or not 0 <= v < 1 or rule not in RULES:
        raise DesignError(f"--current {spec!r}: protocol one of {', '.join(PROTOCOLS)}, odd "
                          f"jury >= 1, verification in [0, 1), rule one of {', '.join(RULES)}")
    return prot, n, rule, v


def new_population(judge: Judge, lv: Levers, tg: Target, rec: dict, n_draws: int,
                   seed: int) -> dict | None:
    """Robust design "for a new population of debaters": the cheapest design that
    meets the target with probability q when the debaters' dishonest-side shifts are
    drawn from the store's hierarchical prior on top of the parameter draws
    (:func:`new_population_params`), and, for it and for ``rec`` (the design for the
    same debaters), how often each protocol has the lowest Amp at its levers
    (:func:`pr_best`).  None where it does not apply (a plug-in design, a judge
    without a store's shift prior); a dict with the design row (``rec``, with
    ``pr_best`` of its protocol, per protocol ``pr_best_<protocol>`` and the Amp's
    mean and central interval over the draws) and the printed ``lines``."""
    if not tg.robust > 0 or judge.kind != "structural" or judge.shift_prior is None:
        return None
    tc, td, r = judge.shift_prior
    head = (f"for a new population of debaters (their dishonest side's shifts drawn from "
            f"the store's shift prior: sd {tc:g} sigma in consultancy, {td:g} in debate, "
            f"correlation {r:g}; their honest consultant's shift: {honest_rests_on(judge)}; "
            f"{n_draws} draws; rho the log's):")
    if not (np.isfinite(tc) and np.isfinite(td)):
        return {"rec": None, "lines": ["", head, "  not predicted: the shift prior is flat "
                                       "(an infinite scale) and draws no population"]}
    Pn = new_population_params(judge, n_draws, seed)
    same = pr_best(rec, lv, _params(judge, n_draws, seed))
    r_new = optimise(judge, lv, tg, n_draws, seed, P=Pn)
    best = pr_best(r_new, lv, Pn)
    amp = outcomes(r_new["protocol"], r_new["jury_size"], r_new["verification"], Pn,
                   r_new["rule"], r_new["subsidy"])[0]
    a = (1 - tg.robust) / 2
    lo, hi = np.quantile(amp, [a, 1 - a])
    r_new.update({"pr_best": best[r_new["protocol"]], "amp_mean": float(np.mean(amp)),
                  "honest_rests_on": honest_rests_on(judge),
                  "amp_lo": float(lo), "amp_hi": float(hi),
                  **{f"pr_best_{k}": v for k, v in best.items()}})
    rec.update({"pr_best": same[rec["protocol"]],
                **{f"pr_best_{k}": v for k, v in same.items()}})
    state = "" if r_new["feasible"] else "  INFEASIBLE: no design meets the target; closest"
    lines = ["", head,
             f"  {'recommended':<22} {_describe(r_new, judge)}: cost {r_new['cost']:.3f}, "
             f"Pr(meets) {r_new['p_meet']:.3f}, Amp {r_new['amp_mean']:.4f} [{lo:.4f}, "
             f"{hi:.4f}] ({tg.robust:.0%} of draws){state}",
             f"  {'best protocol':<22} at these levers the lowest Amp in "
             + ", ".join(f"{k} {v:.3f}" for k, v in best.items())
             + f" of the draws: {r_new['protocol']} is the best with probability "
             f"{best[r_new['protocol']]:.3f}",
             f"  {'the same debaters':<22} at the levers of the design recommended for "
             f"them, the lowest Amp in " + ", ".join(f"{k} {v:.3f}" for k, v in same.items())
             + " of the parameter draws"]
    if r_new["protocol"] != rec["protocol"]:
        lines.append(f"  the protocols differ: {rec['protocol']} for the same debaters, "
                     f"{r_new['protocol']} for a new population")
    return {"rec": r_new, "lines": lines}


def _describe(r: dict, judge: Judge) -> str:
    """One design in words: protocol, jury and rule, verification, escalation."""
    jury = f"jury {r['jury_size']}" + (f" ({r['rule'].replace('_', ' ')})"
                                        if r["jury_size"] > 1 else "")
    esc = (f", {r['escalated']:.1%} escalated" if r["protocol"] == "escalate" else "")
    sub = (f", evidence subsidy {r.get('subsidy', 0.0):.3f} (c_e {judge.c_e:g} -> "
           f"{judge.c_e - r.get('subsidy', 0.0):.3g})" if judge.c_e > 0 else "")
    return (f"{r['protocol']}, {jury}, verification {r['verification']:.3f} (rho "
            f"{judge.rho:.3g} -> {judge.rho * (1 - r['verification']):.3g}){esc}{sub}")


def run(judge: Judge, lv: Levers, tg: Target, current, notes, n_draws, n_sim, seed,
        out: Path, force: bool = False) -> dict:
    import time

    t0 = time.perf_counter()
    rec = optimise(judge, lv, tg, n_draws, seed)
    plug = optimise(judge, lv, Target(tg.max_amp, tg.min_acc, tg.budget, 0.0), n_draws, seed) \
        if tg.robust > 0 else rec
    rec.update(verify(judge, rec, n_sim, seed))
    new = new_population(judge, lv, tg, rec, n_draws, seed)
    P = _params(judge, 1, seed)
    prot, n, rule, v = current
    cur = design_row(judge, prot, n, rule, v, 0.0, P, lv, Target())
    from .outputs_policy import clear_earlier_run, open_out_dir, record, write_csv, write_file

    open_out_dir(out, OUT_FILES, force=force)
    # one unit: nothing of an earlier run left beside this one's (the store replaced whole)
    clear_earlier_run(out, OUT_FILES, keep=("levers.zarr",))
    record(out / "levers.zarr")
    grid, front = front_through_engine(judge, lv, out / "levers.zarr")
    shown = KIND_PARAMS[judge.kind] + tuple(k for k in ("gap_d", "sigma_d") if
                                            not np.isnan(getattr(judge, k))) \
        + ("p", "rho") + (("c_e",) if judge.c_e > 0 else ())
    sd = dict(judge.se)
    if judge.cov is not None:
        sd.update({k: float(np.sqrt(judge.cov[1][i, i])) for i, k in enumerate(judge.cov[0])})
    lines = [f"antiamp-design {__version__}: judge {judge.kind}"
             + (f", reading {judge.reading}" if judge.reading else "") + " ("
             + ", ".join(f"{k} {getattr(judge, k):.4g}" + (f" ± {sd[k]:.3g}" if sd.get(k)
                                                           else "") for k in shown) + ")"]
    lines += notes
    lines.append(f"target: Amp <= {tg.max_amp:g}" + (f", accuracy >= {tg.min_acc:g}"
                                                      if tg.min_acc else "")
                 + (f", cost <= {tg.budget:g}" if np.isfinite(tg.budget) else "")
                 + (f", met with probability {tg.robust:g} over {n_draws} parameter draws"
                    + (" (joint covariance of the fit)" if judge.cov is not None else "")
                    if tg.robust else " at the point values"))
    lines.append("")
    for name, r in (("recommended", rec),) + ((("plug-in (point values)", plug),)
                                              if tg.robust > 0 else ()):
        state = "" if r["feasible"] else "  INFEASIBLE: no design meets the target; closest"
        lines.append(f"{name:<24} {_describe(r, judge)}: cost {r['cost']:.3f}, Amp "
                     f"{r['amp']:.4f}, accuracy {r['acc']:.4f}"
                     + (f", Pr(meets) {r['p_meet']:.3f}" if np.isfinite(r["p_meet"]) else "")
                     + state)
    lines.append(f"{'  simulated (' + format(n_sim, ',') + ')':<24} Amp {rec['amp_sim']:.4f} "
                 f"({rec['amp_sim_se']:.4f}), accuracy {rec['acc_sim']:.4f} "
                 f"({rec['acc_sim_se']:.4f}): {rec['verified_by']}")
    lines.append(f"{'current':<24} {_describe(cur, judge)}: cost {cur['cost']:.3f}, Amp "
                 f"{cur['amp']:.4f}, accuracy {cur['acc']:.4f}")
    if new is not None:
        lines += new["lines"]
    src = sorted(set(grid.source))
    lines += ["", f"Pareto front (cost, Amp, accuracy) of {len(grid)} designs on the lever "
              f"grid (from the {' and the '.join(src)}): {len(front)} designs"]
    show = front if len(front) <= 12 else front.iloc[np.linspace(0, len(front) - 1, 12)
                                                     .round().astype(int)]
    lines.append(show.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    curve = None
    if judge.c_e == 0:  # escalation is defined with presentation when feasible
        curve = escalation_curve(rec["jury_size"], rec["verification"], P, rec["rule"])
        lines += ["", f"escalation: safety (1 - Amp) against the audit budget (share of cases "
                      f"escalated), jury {rec['jury_size']}, verification "
                      f"{rec['verification']:.3f} (escalation.csv, escalation.png):"]
        show_c = curve[np.isin(np.round(curve.audit, 9), [0.0, 0.25, 0.5, 0.75, 1.0])]
        lines.append(show_c.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    text = "\n".join(lines)
    print(text)
    write_file(out / "design.txt", text + "\n")
    if curve is not None:
        write_csv(out / "escalation.csv", curve)
    write_csv(out / "front.csv", front)
    write_csv(out / "designs.csv", grid)
    extra = [new["rec"]] if new is not None and new["rec"] is not None else []
    write_csv(out / "recommendation.csv", pd.DataFrame(
        [rec, cur] + ([plug] if tg.robust > 0 else []) + extra).assign(
        role=["recommended", "current"] + (["plug-in"] if tg.robust > 0 else [])
        + (["new population"] if extra else [])))
    paths = plot_front(grid, front, rec, cur, out / "design", tg)
    if curve is not None:
        paths += plot_escalation(curve, rec, out / "escalation")
    print(f"\nwrote {out / 'design.txt'}, recommendation.csv, front.csv, designs.csv, "
          + ("escalation.csv, " if curve is not None else "")
          + ("levers.zarr, " if (out / "levers.zarr").exists() else "")
          + f"{', '.join(p.name for p in paths)} ({time.perf_counter() - t0:.1f} s)")
    return rec


if __name__ == "__main__":
    main()
