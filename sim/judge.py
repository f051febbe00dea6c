"""Judge rules as endorsement tables, jury aggregation and the senders' dominant strategies.

Every judge of the baseline reacts to the transcript only through (e_P, e_A), so a
judge *is* its table ``J[e_P, e_A] = Pr(y = a | e_P, e_A)``.  The kernels count
transcript classes; estimators and closed forms weight those classes by ``J``
(the Rao-Blackwellised judge, DESIGN.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from .lazy import lazy
special = lazy("scipy.special")

from .config import Config, ConfigError, JudgeConfig, ProtocolConfig


def jury_majority(q, n: int, tie: float = 0.5):
    """Pr(majority of n independent judges endorses a) when each does w.p. ``q``.

    b_n = sum_{k > n/2} C(n, k) q^k (1-q)^(n-k) + tie * C(n, n/2) q^(n/2) (1-q)^(n/2),
    the last term only for even n (seed 000, section 4).  ``q`` may be an array.
    """
    q = np.asarray(q, dtype=float)
    if n == 1:
        return q
    h = n // 2
    # Pr(K > n/2) = Pr(K >= h + 1) = I_q(h + 1, n - h), the regularised incomplete beta.
    out = special.betainc(h + 1, n - h, q)
    if n % 2 == 0:
        # Pr(K = n/2) in log space: exact for any n and for q at or near 0 and 1
        # (scipy.stats.binom.pmf overflows for subnormal q).
        with np.errstate(divide="ignore"):
            log_pmf = (special.gammaln(n + 1) - 2 * special.gammaln(h + 1)
                       + h * (np.log(q) + np.log1p(-q)))
        out = out + tie * np.exp(log_pmf)
    return out


def single_judge_tables(
    j: JudgeConfig, prot: ProtocolConfig | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """One judge's endorsement tables (consult[e_P], debate[e_P, e_A])."""
    prot = prot or ProtocolConfig()
    if j.kind == "tiebreak":
        debate = np.array([[j.b, 0.0], [1.0, j.b]])
        consult = np.array([prot.consult_default, 1.0])
    elif j.kind == "logit":
        e = np.arange(2)
        debate = special.expit(j.lam * (j.mu + j.kappa * (e[:, None] - e[None, :])))
        consult = special.expit(j.lam * (j.mu + j.kappa * e))
    else:  # validated upstream; kept for direct callers
        raise ConfigError(f"judge.kind must be tiebreak or logit, got {j.kind!r}")
    return consult, debate


def judge_tables(
    j: JudgeConfig, prot: ProtocolConfig | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Endorsement tables of the configured judge or jury (majority of ``jury_size``)."""
    consult, debate = single_judge_tables(j, prot)
    return (
        jury_majority(consult, j.jury_size, j.jury_tie),
        jury_majority(debate, j.jury_size, j.jury_tie),
    )


@dataclass(frozen=True)
class Strategies:
    """Presentation probabilities given available evidence, and where they came from."""

    x_P_consult: float
    x_P: float
    x_A: float
    source: dict

    def as_dict(self) -> dict:
        return {"x_P_consult": self.x_P_consult, "x_P": self.x_P, "x_A": self.x_A}


def dominant_presentation(name: str, gains: np.ndarray, c_e: float, given) -> tuple[float, str]:
    """Dominant presentation probability of a sender whose marginal win gains from
    presenting (one per opponent evidence state) are ``gains``."""
    if given is not None:
        return float(given), "given"
    lo, hi = float(np.min(gains)), float(np.max(gains))
    # Weak dominance: never worse against any opponent state, better against some.
    # Free evidence (c_e = 0) is presented even when it changes nothing (e = t).
    if c_e <= lo and (c_e < hi or c_e == 0):
        return 1.0, "dominant: present (c_e below every marginal gain)"
    if c_e >= hi and c_e > lo:
        return 0.0, "dominant: withhold (c_e above every marginal gain)"
    raise ConfigError(
        f"model.c_e={c_e} lies in [{lo:.6g}, {hi:.6g}], where presenting evidence is not a "
        f"dominant strategy for {name}; set model.{name} to a presentation probability in "
        "[0, 1] (equilibrium strategies come from the equilibrium solver)"
    )


def resolve_strategies(cfg: Config) -> Strategies:
    """Presentation probabilities x given t = 1, from the config or by dominance.

    Seed 000 section 3: with tie-break judges presenting is dominant when
    c_e < min(b, 1 - b); in general it is (weakly) dominant when c_e is at most the
    marginal win gain against every opponent evidence state and below it against
    one, and withholding is dominant in the mirror case.  Elsewhere the strategies
    are equilibrium objects and must be given.
    """
    consult, debate = judge_tables(cfg.judge, cfg.protocol)
    c_e = cfg.model.c_e
    gain_pc = np.array([consult[1] - consult[0]])
    gain_p = debate[1, :] - debate[0, :]  # P's gain, against e_A = 0, 1
    gain_a = debate[:, 0] - debate[:, 1]  # A's gain (A wins with 1 - J), against e_P = 0, 1
    xpc, spc = dominant_presentation("x_P_consult", gain_pc, c_e, cfg.model.x_P_consult)
    xp, sp = dominant_presentation("x_P", gain_p, c_e, cfg.model.x_P)
    xa, sa = dominant_presentation("x_A", gain_a, c_e, cfg.model.x_A)
    return Strategies(xpc, xp, xa, {"x_P_consult": spc, "x_P": sp, "x_A": sa})


def protagonist_accuracy(cfg: Config) -> float:
    """Pr(a = omega): p for the signal stance, pi or 1 - pi for a fixed stance."""
    m = cfg.model
    if m.stance == "signal":
        return m.p
    return m.pi if m.a == 1 else 1.0 - m.pi
