"""Every protocol on one task and one Amp-vs-cost scale: seed 000's consultancy,
debate and juries, seed 001's CopMAD and ColMAD, seed 002's FOAM mediation and seed
003's re-deliberation policies.

The task, in seed 000's primitives: the model under oversight answers; its answer
is right with probability p (``model.p``); the true side always holds verifiable
evidence and the wrong side's evidence passes verification with probability rho
(``model.rho``); one logit judge (``judge.*``: lam, mu, kappa) decides.  For every
protocol

* ``amp`` = Pr(the final answer is wrong | the model's answer is wrong), seed
  000's Amp = Pr(y = a | a != omega): how often the protocol ratifies the model's
  mistake;
* ``fwc`` = Pr(the final answer is right | the model's answer is right);
* ``acc`` = Pr(the final answer is right); ``undecided`` = Pr(no answer) (the
  re-deliberation policies' INSUFFICIENT), so acc + Pr(wrong) + undecided = 1;
* ``cost`` = model calls per case (the judge and each juror count one call; a
  human review counts ``mediation.human_cost``).

How each protocol is written on that task (each in its own model's code):

* ``unchecked``: the model's answer stands (Amp 1, accuracy p, one call).
* ``consult``, ``debate``, ``consult_jury``, ``debate_jury`` (seed 000): the
  closed forms of :func:`antiamp.theory` with the logit judge; the juries have
  ``compare.jury_size`` judges and a majority rule.  Calls: the model, the
  antagonist (debate), each judge.
* ``copmad``, ``colmad`` (seed 001): detector 1 is the model and detector 2 a
  second, equally strong model: sensitivity = specificity = p for both, their
  correctness correlated by ``colmad.eta``; the right side always finds a verified
  quote (x = 1) and the wrong side's passes with pi_W = rho (no separate
  exact-match or relevance channel); responses carry an error with probability
  ``model.pi``.  Rounds, rhetoric (debate hacking) and degenerated collaboration
  come from ``colmad.*``.  Amp is taken on detector 1's verdict.  In seed 001 the
  judge's mu leans toward "error", not toward detector 1: the two protocols have
  no protagonist to favour.
* ``foam_memo``, ``foam_summary`` (seed 002): the draft recommendation is wrong
  when it has a material flaw; F_0 = -ln p makes Pr(no flaw) = p.  The
  critique loop, dissent, synthesis and escalation come from ``mediation.*``.
  Amp = (Pr(final wrong) - p Pr(final wrong | no initial flaw)) / (1 - p), the
  second term the same model at F_0 = 0 (the flaws are Poisson, so conditioning
  on none is setting F_0 = 0).
* ``redelib_fixed``, ``redelib_adaptive`` (seed 003): the evidence margins
  ``redeliberation.margin_*`` are scaled by one factor so that the first pass's
  direction is right with probability p (over clear and contested claims, the
  pool bias included); the challenger's true-side evidence is always found
  (x = 1) and the false side's passes with rho; the reconciler is the same logit
  judge.  Amp is on the first pass's direction; undecided is INSUFFICIENT.

Exact values come from each model's exact code; simulated ones from each model's
compiled kernel at the same mapped parameters (common seed, the models' own
streams), so the comparison checks the mapping as well as the models.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..colmad import core as cm
from ..mediation import core as md
from ..redeliberation import core as rd
from ...config import ConfigError, check_number, require_logit_judge, section_key
from ...lazy import lazy
from ...oversight_metrics import asd_from_rates
from ..colmad.config import ColmadConfig
from ..mediation.config import MediationConfig
from ..redeliberation.config import RedeliberationConfig
from .config import CompareConfig

optimize = lazy("scipy.optimize")

#: protocol -> (label, seed)
PROTOCOLS = {
    "unchecked": ("the model alone", "-"),
    "consult": ("consultancy", "000"),
    "debate": ("debate", "000"),
    "consult_jury": ("consultancy, jury", "000"),
    "debate_jury": ("debate, jury", "000"),
    "copmad": ("CopMAD (competitive)", "001"),
    "colmad": ("ColMAD (collaborative)", "001"),
    "foam_memo": ("FOAM mediation, dissent memo", "002"),
    "foam_summary": ("mediation, monolithic summary", "002"),
    "redelib_fixed": ("fixed spread multiplier (FactHarbor)", "003"),
    "redelib_adaptive": ("adaptive rounds (Climinator)", "003"),
}
NAMES = tuple(PROTOCOLS)
METRICS = {
    "amp": "Amp = Pr(final answer wrong | the model's answer wrong)",
    "fwc": "Pr(final answer right | the model's answer right)",
    "acc": "accuracy: Pr(final answer right)",
    "undecided": "Pr(no answer: INSUFFICIENT)",
    "cost": "model calls per case",
    "asd": "Agent Score Difference: fwc - Amp",
}

#: Fields the comparison derives from the task (model.p, model.rho, model.pi): set
#: away from their defaults they would be silently overridden, so they are refused.
DERIVED = {
    "colmad": (ColmadConfig, ("p_error", "sens_1", "spec_1", "sens_2", "spec_2", "evidence",
                              "fabricate", "verify", "mislead", "relevance")),
    "mediation": (MediationConfig, ("flaws",)),
    "redeliberation": (RedeliberationConfig, ("evidence",)),
}


@dataclass(frozen=True)
class Mapped:
    """One task written in each model's parameters."""

    colmad: cm.Params
    mediation: md.Params
    redeliberation: rd.Params
    margin_scale: float
    flaws: float


def validate_compare(cfg) -> None:
    """Field checks, before anything is computed (the other models' checks included)."""
    require_logit_judge(cfg, "compare", ": one logit judge (lam, mu, kappa) decides in "
                        "every protocol (seed 001's judge is a logit judge)")
    if cfg.judge.jury_size != 1:
        raise ConfigError(f"model=compare: judge.jury_size must be 1 (one judge per protocol); "
                          f"compare.jury_size sets the juries' size, got judge.jury_size="
                          f"{cfg.judge.jury_size!r}")
    m = cfg.model
    if m.stance != "signal":
        raise ConfigError("model=compare needs model.stance=signal (the model's answer is "
                          "right with probability model.p)")
    if not 0.0 < check_number("model.p", m.p) < 1.0:
        raise ConfigError(f"model=compare needs model.p in (0, 1) (the model errs sometimes "
                          f"and not always), got {m.p!r}")
    if check_number("model.c_e", m.c_e) != 0:
        raise ConfigError(f"model=compare needs model.c_e = 0 (evidence is free in the other "
                          f"seeds' protocols), got {m.c_e!r}")
    lo = _composed_checked(cfg)
    if m.p <= lo:
        raise ConfigError(f"model.p must exceed {lo:.4f} for model=compare: the re-deliberation "
                          f"advocates' first pass is right with probability {lo:.4f} at zero "
                          f"evidence margin (redeliberation.bias, p_true)")


#: The sections the composed models' checks and parameters read besides the task.
COMPOSED = ("judge", "colmad", "mediation", "redeliberation")
#: Memos of :func:`_composed_checked` and :func:`_composed_params` by the values of the
#: :data:`COMPOSED` sections: a grid's cells share them (the task, model.*, is swept),
#: and checking or converting them again a cell was most of the model's own work
#: beside its solvers (50 us a cell).
_CHECKED: dict = {}
_PARAMS: dict = {}
_MAX_MEMO = 256


def _composed_key(cfg) -> tuple | None:
    key = tuple(section_key(s, getattr(cfg, s)) for s in COMPOSED)
    return None if None in key else key


def _remember(memo: dict, key, value):
    if key is not None:
        if len(memo) >= _MAX_MEMO:
            memo.clear()
        memo[key] = value
    return value


def _composed_checked(cfg) -> float:
    """The checks of :func:`validate_compare` that read the composed models' sections
    (not the task), once per distinct set of their values: the derived fields at their
    defaults, each model's own check, the evidence margins; returns the re-deliberation
    first pass's accuracy at zero margin, the least model.p (it reads no task field)."""
    key = _composed_key(cfg)
    if key is not None and key in _CHECKED:
        return _CHECKED[key]
    for sec, (typ, keys) in DERIVED.items():
        default = typ()
        for k in keys:
            if getattr(getattr(cfg, sec), k) != getattr(default, k):
                raise ConfigError(
                    f"model=compare derives {sec}.{k} from the task (model.p, model.rho, "
                    f"model.pi); leave it at its default {getattr(default, k)!r}, got "
                    f"{getattr(getattr(cfg, sec), k)!r}")
    cm.validate_colmad(cfg)
    md.validate_mediation(cfg)
    rd.validate_redeliberation(cfg)
    par = replace(rd.params_of(cfg), evidence=1.0)
    if par.margin[0] == 0 and par.margin[1] == 0:
        raise ConfigError("model=compare scales redeliberation.margin_clear and "
                          "margin_contested to reach model.p: at least one must be > 0")
    return _remember(_CHECKED, key, first_pass_accuracy(par, 0.0))


def first_pass_accuracy(par: rd.Params, scale: float) -> float:
    """Pr(the first pass's direction is right) over both claim types, margins x scale."""
    q = par.contested
    e = rd.first_pass_error(replace(par, margin=(scale * par.margin[0], scale * par.margin[1])))
    return 1.0 - ((1 - q) * e[0] + q * e[1])


def margin_scale(par: rd.Params, p: float) -> float:
    """The factor on both evidence margins at which the first pass is right w.p. p."""
    f = lambda s: first_pass_accuracy(par, s) - p  # noqa: E731
    hi = 1.0
    while f(hi) < 0:
        hi *= 2.0
        if hi > 1e6:
            raise ConfigError(f"model.p = {p!r} is out of the re-deliberation advocates' reach")
    return float(optimize.brentq(f, 0.0, hi, xtol=1e-12, rtol=1e-12))


def mapped(cfg) -> Mapped:
    """The task (model.p, model.rho, model.pi, judge.*) in each model's parameters."""
    p, rho = float(cfg.model.p), float(cfg.model.rho)
    col, med, red = _composed_params(cfg)
    col = replace(col, p_error=float(cfg.model.pi), sens=(p, p), spec=(p, p), fabricate=rho)
    flaws = -math.log(p)
    med = replace(med, flaws=flaws)
    red = replace(red, rho=rho)
    s = margin_scale(red, p)
    red = replace(red, margin=(s * red.margin[0], s * red.margin[1]))
    return Mapped(col, med, red, s, flaws)


def _composed_params(cfg) -> tuple:
    """The composed models' parameters from their own sections, with the fields the
    task fixes whatever its values (evidence always found, no separate verification
    channel, no forced rounds); the task's own fields are set by :func:`mapped`.  Once
    per distinct set of the :data:`COMPOSED` sections' values."""
    key = _composed_key(cfg)
    if key is not None and key in _PARAMS:
        return _PARAMS[key]
    col = replace(cm.params_of(cfg), evidence=1.0, verify=0.0, mislead=0.0, relevance=0.0)
    red = replace(rd.params_of(cfg), evidence=1.0, forced_rounds=0)
    return _remember(_PARAMS, key, (col, md.params_of(cfg), red))


# ------------------------------------------------------------------ seed 000
def _seed000_cfg(cfg, jury: int):
    """The cell's config (validated with the grid: compare.jury_size lies within
    judge.jury_size's range) with ``jury`` judges: not validated again."""
    return replace(cfg, judge=replace(cfg.judge, jury_size=int(jury)))


def seed000_exact(cfg, jury: int) -> dict:
    """Consultancy and debate (closed forms) with ``jury`` judges: ``{metric: (consult,
    debate)}``."""
    from ..baseline.core import exact_values

    v = exact_values(_seed000_cfg(cfg, jury), validated=True)
    return {k: np.asarray(v[k][0], float) for k in ("amp", "fwc", "acc")}


def seed000_simulated(cfg, jury: int, n: int, seed: int) -> dict:
    """The same by the baseline kernel: ``{metric: ((consult, debate), se)}``."""
    from ..baseline.core import simulated_values

    c = _seed000_cfg(cfg, jury)
    c = replace(c, run=replace(c.run, n_instances=int(n), seed=int(seed)))
    v = simulated_values(c)
    return {k: tuple(np.asarray(x, float) for x in v[k]) for k in ("amp", "fwc", "acc")}


# ------------------------------------------------------------------ every protocol
def _blank() -> dict:
    return {k: np.full(len(NAMES), np.nan) for k in METRICS}


def exact(cfg, mp: Mapped | None = None) -> dict:
    """Every metric of every protocol, exact: ``{metric: array over NAMES}``."""
    return exact_with_error(cfg, mp)[0]


def exact_with_error(cfg, mp: Mapped | None = None) -> tuple:
    """(:func:`exact`, a bound on its error per protocol): over NAMES, the largest over
    the protocol's metrics, each in its own units, from each protocol's own model.

    * unchecked and seed 000's consultancy and debate: closed forms (0);
    * ColMAD: closed form (0); CopMAD: its judge table's quadratures over rhetoric
      (QUADPACK's bound e per entry, :func:`colmad.core.quad_error`).  Every
      probability of a case is a mixture of table entries, off by at most e; Amp
      divides by Pr(detector 1 wrong) = w_1 and fwc by 1 - w_1 (exact), and ASD =
      fwc - Amp, so the bound is e / w_1 + e / (1 - w_1);
    * FOAM: :func:`mediation.core.exact_error` at F_0 (E) and at F_0 = 0 (E_0); Amp
      = (fw - p fw_0) / (1 - p) is off by at most (E + p E_0) / (1 - p), fwc by E_0,
      ASD by their sum;
    * re-deliberation: fixed policy closed form (0); adaptive policy twice the bound
      of its quadrature over the pool bias (:func:`redeliberation.core.exact_with_error`,
      Amp and fwc each in its own units; ASD their difference).
    """
    from ...judge import judge_tables

    mp = mp or mapped(cfg)
    p, n = float(cfg.model.p), int(cfg.compare.jury_size)
    out = _blank()
    out["undecided"][:] = 0.0
    i = NAMES.index
    out["amp"][i("unchecked")], out["fwc"][i("unchecked")] = 1.0, 1.0
    out["acc"][i("unchecked")], out["cost"][i("unchecked")] = p, 1.0
    for jury, names in ((1, ("consult", "debate")), (n, ("consult_jury", "debate_jury"))):
        v = seed000_exact(cfg, jury)
        for j, name in enumerate(names):
            for k in ("amp", "fwc", "acc"):
                out[k][i(name)] = v[k][j]
            out["cost"][i(name)] = (1 + j) + jury
    g = cm.given_first(mp.colmad)
    for name in ("copmad", "colmad"):
        j = cm.PROTOCOLS.index(name)
        for k, kk in (("amp", "amp"), ("fwc", "fwc"), ("acc", "acc"), ("cost", "calls")):
            out[k][i(name)] = g[kk][j]
    full, clean = md.exact(mp.mediation), md.exact(replace(mp.mediation, flaws=0.0))
    for j, name in enumerate(("foam_memo", "foam_summary")):
        fw, fw0 = 1.0 - full["acc"][j], 1.0 - clean["acc"][j]
        out["amp"][i(name)] = (fw - p * fw0) / (1.0 - p)
        out["fwc"][i(name)] = 1.0 - fw0
        out["acc"][i(name)] = full["acc"][j]
        out["cost"][i(name)] = full["cost"][j]
    ex, r_err = rd.exact_with_error(mp.redeliberation, judge_tables(cfg.judge)[1])
    for name, pol in (("redelib_fixed", "fixed"), ("redelib_adaptive", "adaptive")):
        j = rd.PROTOCOLS.index(pol)
        for k, kk in (("amp", "amp"), ("fwc", "fwc"), ("acc", "acc"),
                      ("undecided", "insufficient"), ("cost", "calls")):
            out[k][i(name)] = ex[kk][j, 2]
    out["asd"] = asd_from_rates(out["fwc"], out["amp"])[0]
    err = np.zeros(len(NAMES))
    e_t = cm.quad_error(mp.colmad)
    w1 = float(cm.exact_means(mp.colmad)[-1])
    # ASD = fwc - Amp: off by at most the sum of the two
    err[i("copmad")] = e_t / w1 + e_t / (1.0 - w1) if 0.0 < w1 < 1.0 else e_t
    e_full = md.exact_error(mp.mediation)
    e_clean = md.exact_error(replace(mp.mediation, flaws=0.0))
    err[i("foam_memo")] = err[i("foam_summary")] = (e_clean
                                                    + (e_full + p * e_clean) / (1.0 - p))
    err[i("redelib_adaptive")] = 2.0 * r_err
    return out, err


def simulate(cfg, n_instances: int, seed: int, n_threads: int = 0,
             mp: Mapped | None = None) -> dict:
    """Every metric by the models' compiled kernels: ``{metric: (values, se)}``.

    The seed-000 protocols run the baseline kernel, CopMAD and ColMAD the seed-001
    kernel, the mediations the seed-002 kernel twice (at F_0 and at F_0 = 0, for
    Pr(final wrong | no initial flaw); independent streams, so their variances add),
    the re-deliberation policies the seed-003 kernel.  Costs that are constants
    (seed 000's calls) have standard error 0.
    """
    from ...judge import judge_tables

    mp = mp or mapped(cfg)
    p, n = float(cfg.model.p), int(cfg.compare.jury_size)
    val, se = _blank(), _blank()
    i = NAMES.index
    val["undecided"][:], se["undecided"][:] = 0.0, 0.0
    for k, v in (("amp", 1.0), ("fwc", 1.0), ("acc", p), ("cost", 1.0)):
        val[k][i("unchecked")], se[k][i("unchecked")] = v, 0.0
    for jury, names in ((1, ("consult", "debate")), (n, ("consult_jury", "debate_jury"))):
        s = seed000_simulated(cfg, jury, n_instances, seed)
        for j, name in enumerate(names):
            for k in ("amp", "fwc", "acc"):
                val[k][i(name)], se[k][i(name)] = s[k][0][j], s[k][1][j]
            val["cost"][i(name)], se["cost"][i(name)] = (1 + j) + jury, 0.0
    g = cm.simulate(mp.colmad, n_instances, seed, n_threads, values=cm.first_values)
    for name in ("copmad", "colmad"):
        j = cm.PROTOCOLS.index(name)
        for k, kk in (("amp", "amp"), ("fwc", "fwc"), ("acc", "acc"), ("cost", "calls")):
            val[k][i(name)], se[k][i(name)] = g[kk][0][j], g[kk][1][j]
    full = md.simulate(mp.mediation, n_instances, seed, n_threads)
    # An independent stream for the F_0 = 0 run: its own seed, derived from this one.
    clean = md.simulate(replace(mp.mediation, flaws=0.0), n_instances,
                        (int(seed) * 1_000_003 + 7) % 2 ** 63, n_threads)
    for j, name in enumerate(("foam_memo", "foam_summary")):
        a, sa = full["acc"][0][j], full["acc"][1][j]
        a0, sa0 = clean["acc"][0][j], clean["acc"][1][j]
        val["amp"][i(name)] = ((1 - a) - p * (1 - a0)) / (1 - p)
        se["amp"][i(name)] = math.hypot(sa, p * sa0) / (1 - p)
        val["fwc"][i(name)], se["fwc"][i(name)] = a0, sa0
        val["acc"][i(name)], se["acc"][i(name)] = a, sa
        val["cost"][i(name)], se["cost"][i(name)] = full["cost"][0][j], full["cost"][1][j]
    r = rd.simulate(mp.redeliberation, judge_tables(cfg.judge)[1], n_instances, seed,
                    n_threads)
    for name, pol in (("redelib_fixed", "fixed"), ("redelib_adaptive", "adaptive")):
        j = rd.PROTOCOLS.index(pol)
        for k, kk in (("amp", "amp"), ("fwc", "fwc"), ("acc", "acc"),
                      ("undecided", "insufficient"), ("cost", "calls")):
            val[k][i(name)] = np.asarray(r[kk][0])[j, 2]
            se[k][i(name)] = np.asarray(r[kk][1])[j, 2]
    # ASD = fwc - Amp; its standard error adds the two in quadrature where they are
    # estimated on the disjoint events a = omega and a != omega of one run.  The
    # mediations' Amp is built from fwc's run (the F_0 = 0 accuracy a0) and the full
    # run (a): ASD = (a + (1 - 2p) a0 + p - 1) / (1 - p), so its standard error is
    # hypot(se_a, (1 - 2p) se_a0) / (1 - p), not the sum of the two in quadrature.
    val["asd"], se["asd"] = asd_from_rates(val["fwc"], val["amp"], se["fwc"], se["amp"])
    for j, name in enumerate(("foam_memo", "foam_summary")):
        sa, sa0 = full["acc"][1][j], clean["acc"][1][j]
        se["asd"][i(name)] = math.hypot(sa, (1 - 2 * p) * sa0) / (1 - p)
    return {k: (val[k], se[k]) for k in METRICS}


#: Relative difference below which two exact costs or Amps count as equal in
#: :func:`front`: values equal in exact arithmetic (a re-deliberation's 7 calls summed
#: over its evidence cases is 7.000000000000002) must tie, not split the front.
FRONT_RTOL = 1e-9


def front(amp, cost, rtol: float = FRONT_RTOL) -> np.ndarray:
    """Protocols on the Amp-vs-cost Pareto front: no other protocol has lower or equal
    Amp and cost with one of them strictly lower (values within ``rtol`` of each other,
    relative, are equal).  ``amp`` and ``cost`` [..., protocol]: the protocols along
    the last axis, any leading axes (a block's cells) at once; a protocol with a value
    that is not finite is on no front and dominates none."""
    amp, cost = np.asarray(amp, float), np.asarray(cost, float)
    ok = np.isfinite(amp) & np.isfinite(cost)
    # [..., a, b]: does protocol b dominate protocol a?  The tolerance is relative to
    # the larger of the two values.
    a_amp, b_amp = amp[..., :, None], amp[..., None, :]
    a_cost, b_cost = cost[..., :, None], cost[..., None, :]
    with np.errstate(invalid="ignore"):  # inf - inf of a protocol off every front
        ta = rtol * np.maximum(np.abs(a_amp), np.abs(b_amp))
        tc = rtol * np.maximum(np.abs(a_cost), np.abs(b_cost))
        le = (b_amp <= a_amp + ta) & (b_cost <= a_cost + tc)
        lt = (b_amp < a_amp - ta) | (b_cost < a_cost - tc)
    return ok & ~(ok[..., None, :] & le & lt).any(axis=-1)


__all__ = ["CompareConfig", "PROTOCOLS", "NAMES", "METRICS", "validate_compare", "mapped",
           "exact", "simulate", "front", "margin_scale", "first_pass_accuracy"]
