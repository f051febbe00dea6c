"""Adaptive re-deliberation of fact-check verdicts (seed 003) in seed 000's primitives.

The seed describes FactHarbor's verdict stage (an advocate, k - 1 self-consistency
samples, a challenger, a reconciler; a confidence multiplier by the samples'
spread) and two alternatives: a conditional re-reconciliation and Climinator's
adaptive rounds until the advocates agree.  The model:

* A claim is true or false (share ``p_true``) and clear or contested (share
  ``contested``).  Its evidence points toward the truth by a margin D (points of
  truth percentage; small for contested claims).  The evidence pool carries a bias B
  ~ N(bias, bias_sd) toward "true", shared by every run and every round of the
  claim: self-consistency cannot see it (the seed's C9 concern).
* The advocate's k runs state truth percentages V_j = 50 + s (D + s B) + sigma Z_j
  (s = +1 for a true claim, -1 for a false one; sigma larger on contested claims).
  The verdict is their mean V, its direction (above or below 50) the advocate's
  answer a; the spread is their range S; the stated confidence is C = 50 + |V - 50|
  (at most 100).
* The challenger argues the other answer.  The true side's evidence is found with
  probability ``evidence`` (x), the false side's passes verification with model.rho;
  the reconciler is seed 000's judge (judge.*: tie-break, logit, or a jury) over
  (e_P, e_A), upholding the verdict's direction or reversing it.
* An extra round (a re-reconciliation, an adaptive round) establishes the truth
  with probability ``hazard`` (h); otherwise an adaptive round redraws the runs
  (same bias B).  A zero-hazard round carries no information.

Policies (the ``protocol`` dimension):

* ``raw``: one pass, the reconciled verdict reported whatever the spread;
* ``fixed``: FactHarbor today: confidence times the band multiplier of S, and
  INSUFFICIENT below ``insufficient_below``;
* ``rereconcile``: as fixed, plus one re-reconciliation when S > trigger_spread and
  the challenger shows evidence (contrarian evidence present): with probability h
  the truth is established and the verdict is unpenalised;
* ``adaptive``: Climinator: no multiplier; while the k runs disagree on the
  direction, another round (up to max_rounds), then the reconciler; INSUFFICIENT if
  they never agree.

Amp = Pr(a decided final verdict endorses a | a wrong), with a the first pass's
direction: the rate at which the pipeline ratifies the advocate's mistakes.

Exact values average over the pool bias B: the one-pass policies in closed form, the
adaptive policy by adaptive Gauss-Kronrod quadrature with its error estimate
(:mod:`antiamp.quadrature`, reported as ``quad_error``): for normal runs the
mean V is independent of the range S (so the spread bands enter through the exact
distribution of the range of k normals), agreement is Phi(m / sigma)^k, and the
adaptive rounds are a geometric series.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ... import quadrature
from ...config import ConfigError, ModelConfig, check_number
from ...lazy import lazy
from ...rare import rare_floor, rare_share_floor
from .config import MAX_POINTS, RedeliberationConfig  # noqa: F401  (re-exported for the model)

special = lazy("scipy.special")
integrate = lazy("scipy.integrate")
optimize = lazy("scipy.optimize")

PROTOCOLS = ("raw", "fixed", "rereconcile", "adaptive")
TYPES = ("clear", "contested")
SEED_BANDS = (5.0, 12.0, 20.0)
SEED_MULTIPLIERS = (1.0, 0.9, 0.7, 0.4)
#: Per-claim metrics: name -> meaning.
METRICS = {
    "acc": "accuracy: decided and correct",
    "err": "decided and wrong",
    "insufficient": "INSUFFICIENT rate",
    "hidden": "INSUFFICIENT although the one-pass verdict was correct (information destroyed)",
    "amp": "Amp = Pr(decided and y = a | a wrong)",
    "fwc": "follow-when-correct Pr(decided and y = a | a right)",
    "calls": "model calls per claim",
    "trigger": "share of claims given extra deliberation",
    "rounds": "extra rounds per claim",
}


#: The section's declared defaults (config.py): the one place they are written.
_D = RedeliberationConfig()


@dataclass(frozen=True)
class Params:
    """Resolved parameters of one cell: the ``redeliberation`` section's fields (their
    defaults its declarations, config.py), per claim type as (clear, contested) pairs,
    the seed's bands and multipliers where the section says null, and ``model.rho``
    (the false side's evidence passing)."""

    contested: float = _D.contested
    p_true: float = _D.p_true
    margin: tuple = (_D.margin_clear, _D.margin_contested)
    noise: tuple = (_D.noise_clear, _D.noise_contested)
    bias: float = _D.bias
    bias_sd: float = _D.bias_sd
    runs: int = _D.runs
    evidence: float = _D.evidence
    rho: float = ModelConfig().rho
    hazard: float = _D.hazard
    max_rounds: int = _D.max_rounds
    bands: tuple = SEED_BANDS
    multipliers: tuple = SEED_MULTIPLIERS
    threshold: float = _D.insufficient_below
    trigger_spread: float = _D.trigger_spread
    base_calls: int = _D.base_calls
    round_calls: int = _D.round_calls
    forced_rounds: int = _D.forced_rounds


def params_of(cfg) -> Params:
    rc = cfg.redeliberation
    return Params(
        contested=float(rc.contested), p_true=float(rc.p_true),
        margin=(float(rc.margin_clear), float(rc.margin_contested)),
        noise=(float(rc.noise_clear), float(rc.noise_contested)),
        bias=float(rc.bias), bias_sd=float(rc.bias_sd), runs=int(rc.runs),
        evidence=float(rc.evidence), rho=float(cfg.model.rho), hazard=float(rc.hazard),
        max_rounds=int(rc.max_rounds),
        bands=tuple(float(b) for b in (SEED_BANDS if rc.bands is None else rc.bands)),
        multipliers=tuple(float(m) for m in (SEED_MULTIPLIERS if rc.multipliers is None
                                             else rc.multipliers)),
        threshold=float(rc.insufficient_below), trigger_spread=float(rc.trigger_spread),
        base_calls=int(rc.base_calls), round_calls=int(rc.round_calls),
        forced_rounds=int(rc.forced_rounds))




def validate_redeliberation(cfg) -> None:
    """What the declared ranges (config.py) cannot say, before anything is computed."""
    rc = cfg.redeliberation
    bands = SEED_BANDS if rc.bands is None else rc.bands
    mults = SEED_MULTIPLIERS if rc.multipliers is None else rc.multipliers
    if not isinstance(bands, (list, tuple)) or not isinstance(mults, (list, tuple)):
        raise ConfigError("redeliberation.bands and redeliberation.multipliers must be lists "
                          f"(or null for the seed's), got {rc.bands!r} and {rc.multipliers!r}")
    for i, b in enumerate(bands):
        if (not 0 < check_number(f"redeliberation.bands[{i}]", b) <= MAX_POINTS
                or (i and b <= bands[i - 1])):
            raise ConfigError(f"redeliberation.bands must be increasing, in (0, {MAX_POINTS:g}] "
                              f"(spread points), got {list(bands)!r}")
    if len(mults) != len(bands) + 1:
        raise ConfigError(f"redeliberation.multipliers must have one value per band, "
                          f"len(bands) + 1 = {len(bands) + 1}, got {list(mults)!r}")
    for i, m in enumerate(mults):
        if not 0 < check_number(f"redeliberation.multipliers[{i}]", m) <= 1:
            raise ConfigError(f"redeliberation.multipliers[{i}] must lie in (0, 1], got {m!r}")


# ------------------------------------------------------------------ exact pieces
def multiplier(spread, par: Params = Params()):
    """The band multiplier of a spread (points): 1.0 up to 5, 0.9 up to 12, 0.7 up to
    20, 0.4 above, at the seed's bands."""
    idx = np.searchsorted(np.asarray(par.bands), np.asarray(spread, float), side="left")
    return np.asarray(par.multipliers)[idx]


#: range_cdf and range_mean depend only on their arguments (the bands, the trigger, the
#: noise and the runs): memoised (exact arguments, typed), a grid's cells that share
#: them reuse the quadrature's floats instead of repeating it.
@functools.lru_cache(maxsize=1 << 12, typed=True)
def range_cdf(w: float, k: int) -> float:
    """Pr(range of k standard normals <= w) = k int phi(z) [Phi(z + w) - Phi(z)]^(k-1) dz."""
    if w <= 0:
        return 0.0
    if not math.isfinite(w):
        return 1.0
    f = lambda z: math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) * (  # noqa: E731
        special.ndtr(z + w) - special.ndtr(z)) ** (k - 1)
    return float(min(k * integrate.quad(f, -12.0, 12.0, limit=200, epsabs=1e-13)[0], 1.0))


@functools.lru_cache(maxsize=64, typed=True)
def range_mean(k: int) -> float:
    """E[range of k standard normals] = int_0^inf (1 - F(w)) dw (3 / sqrt(pi) for k = 3)."""
    # E[max - min] = 2 E[max] by symmetry; E[max] = k int z phi(z) Phi(z)^(k-1) dz.
    g = lambda z: k * z * math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) * special.ndtr(  # noqa
        z) ** (k - 1)
    return float(2 * integrate.quad(g, -12.0, 12.0, limit=200, epsabs=1e-13)[0])


def _intervals(par: Params):
    """Spread intervals cut at every band edge and the trigger: (lo, hi, band, trigger)."""
    edges = sorted(set(par.bands) | ({par.trigger_spread} if par.trigger_spread > 0 else set()))
    lo = [0.0] + edges
    hi = edges + [math.inf]
    out = []
    for a, b in zip(lo, hi):
        band = int(np.searchsorted(np.asarray(par.bands), b if math.isfinite(b) else a + 1.0,
                                   side="left"))
        out.append((a, b, band, a >= par.trigger_spread))
    return out


def _judge_uphold(J: np.ndarray, par: Params):
    """Evidence combinations (E_T, E_F) with their probabilities and the reconciler's
    probability of upholding the verdict's direction when it is right (J[E_T, E_F])
    and when it is wrong (J[E_F, E_T])."""
    x, r = par.evidence, par.rho
    combos = []
    for eT in (0, 1):
        for eF in (0, 1):
            w = (x if eT else 1 - x) * (r if eF else 1 - r)
            combos.append((eT, eF, w, float(J[eT, eF]), float(J[eF, eT])))
    return combos


def over_bias(par: Params, mean: float, sd: float, cut: float = 0.0, sign: int = 1) -> float:
    """E[Phi((sign M - cut) / sd)] over the pool bias, M = mean + s B the runs' mean
    distance toward the truth (sign = -1: the wrong direction), in closed form: with B
    normal, sign M is normal with sd bias_sd and E[Phi((X - c) / sd)] =
    Phi((E X - c) / sqrt(sd^2 + bias_sd^2)) (the upper tail directly when sign M falls
    short of the cut, so that no digit is lost)."""
    return float(special.ndtr((sign * mean - cut) / math.hypot(sd, par.bias_sd)))


def first_pass_error(par: Params) -> np.ndarray:
    """eps0 per claim type: Pr(the first pass's direction is wrong), in closed form."""
    out = np.zeros(2)
    for t in range(2):
        sd_bar = par.noise[t] / math.sqrt(par.runs)
        for s, ps in ((1, par.p_true), (-1, 1 - par.p_true)):
            out[t] += ps * over_bias(par, par.margin[t] + s * par.bias, sd_bar, sign=-1)
    return out


#: Truncation of each bias integral: the normal-tail mass left out, relative to the
#: integral's own conditioning mass (added to the reported error bound).
TAIL_EPS = 1e-17
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
#: The adaptive policy's integrands, in the order :func:`_adaptive_rows` returns them
#: (the conditioning masses n_right and n_wrong are closed forms, :func:`over_bias`).
_ROWS = ("acc", "err", "hidden", "amp", "fwc", "calls", "trigger", "rounds")


def _adaptive_rows(par: Params, combos, sig: float):
    """The adaptive policy's terms at the runs' mean distance m toward the truth (an
    array of nodes) of one claim type: a function (m, wrong) -> [len(_ROWS), len(m)]
    of the terms whose first pass is wrong (``wrong``) or right, each divided by that
    first pass's probability a = Pr(direction wrong | m) (or right), so that every
    row lies within [0, max(1, calls, rounds)] per unit of a however small a is; the
    evidence combinations are summed with their weights (the side's probability and
    the bias density are the caller's)."""
    k, h, R = par.runs, par.hazard, par.max_rounds
    sd_bar = sig / math.sqrt(k)

    def rows(m, wrong: bool):
        sgn = -1.0 if wrong else 1.0
        log_a = special.log_ndtr(sgn * m / sd_bar)
        # agreement of all k runs on this direction, relative to a: in logs, so that
        # neither underflows in the far tail (all k runs on a side imply their mean is)
        ag_rel = np.minimum(np.exp(k * special.log_ndtr(sgn * m / sig) - log_a), 1.0)
        dis_rel = 1.0 - ag_rel
        agR, agW = special.ndtr(m / sig) ** k, special.ndtr(-m / sig) ** k
        g = (1 - h) * (1 - agR - agW)
        Sg = np.where(np.abs(1 - g) > 1e-15, (1 - g ** R) / np.where(
            np.abs(1 - g) > 1e-15, 1 - g, 1.0), float(R))
        end_res, end_R, end_W = h * Sg, (1 - h) * agR * Sg, (1 - h) * agW * Sg
        unconv = g ** R
        out = np.zeros((len(_ROWS), np.size(m)))
        # What no evidence combination changes, once; each combination's rows added in
        # place, row by row: the same floats as adding the weighted stack of all eight
        # (every element pe * row added to the running sum, in the same order; the
        # rows a side never ratifies or follows stay at their zeros, as adding pe * 0
        # left them), without the stack's and the zeros' arrays a combination.
        dec = ag_rel + dis_rel * (1 - unconv)
        hid = dis_rel * unconv
        calls = par.base_calls + dis_rel * par.round_calls * Sg
        rounds = dis_rel * Sg
        for eT, eF, pe, jR, jW in combos:
            later = dis_rel * (end_res + end_R * jR + end_W * (1 - jW))
            if wrong:  # ratified when the final verdict is the wrong answer
                corr = ag_rel * (1 - jW) + later
                raw = 1 - jW
            else:
                corr = ag_rel * jR + later
                raw = jR
            bad = dec - corr
            out[0] += pe * corr                 # acc
            out[1] += pe * bad                  # err
            out[2] += pe * (hid * raw)          # hidden
            if wrong:
                out[3] += pe * bad              # amp (ratified)
            else:
                out[4] += pe * corr             # fwc (followed)
            out[5] += pe * calls                # calls
            out[6] += pe * dis_rel              # trigger
            out[7] += pe * rounds               # rounds
        return out

    return rows


def _bias_integral(rows, m_of, alpha: float, beta: float, scale: float):
    """E over the bias, z ~ N(0, 1), of Phi(alpha z + beta) rows(m_of(z)), divided by
    its mass P = E[Phi(alpha z + beta)] = Phi(beta / sqrt(1 + alpha^2)) (closed form),
    with a bound on its error.

    The integrand lives where the log-concave envelope phi(z) Phi(alpha z + beta)
    does, which in a far tail (a first pass wrong 12 bias sds out) is nowhere near
    z = 0: the range is centred on the envelope's mode z* and reaches t sds either
    side, t from the envelope's strong concavity (its log's second derivative is at
    most -1, so it is at most its peak times exp(-(z - z*)^2 / 2)), such that the
    mass left out is below :data:`TAIL_EPS` of P.  Returns (values [rows], error):
    the quadrature's estimate (:func:`antiamp.quadrature.integrate`) plus the
    truncation bound, ``scale`` bounding every row (per unit of the envelope).
    """
    log_p = float(special.log_ndtr(beta / math.hypot(1.0, alpha)))

    def h(z):  # log of the envelope, minus log P
        return -0.5 * z * z - _LOG_SQRT_2PI + special.log_ndtr(alpha * z + beta) - log_p

    def dh(z):
        y = alpha * z + beta
        return -z + alpha * math.exp(-0.5 * y * y - _LOG_SQRT_2PI - float(special.log_ndtr(y)))

    # The mode: dh decreases (by at least 1 per unit of z); bracket it by doubling.
    d0 = dh(0.0)
    if d0 == 0:
        z_star = 0.0
    else:
        lo, hi = (0.0, 1.0) if d0 > 0 else (-1.0, 0.0)
        while dh(hi) > 0:
            lo, hi = hi, 2.0 * hi
        while dh(lo) < 0:
            lo, hi = 2.0 * lo, lo
        z_star = float(optimize.brentq(dh, lo, hi, xtol=1e-12))
    peak = float(h(z_star))
    # exp(peak) sqrt(2 pi) Phi(-t) per side <= TAIL_EPS
    t = max(-float(special.ndtri(TAIL_EPS * math.exp(-peak - _LOG_SQRT_2PI))), 1.0)
    left_out = 2.0 * math.exp(peak + _LOG_SQRT_2PI) * float(special.ndtr(-t))

    def f(z):
        return np.exp(h(z)) * rows(m_of(z))

    pts = [z_star] + ([-beta / alpha] if alpha != 0 else [])
    val, err = quadrature.integrate(f, z_star - t, z_star + t, points=pts,
                                    atol=1e-16, rtol=1e-13)
    return np.atleast_1d(val), err + scale * left_out


def exact(par: Params, J: np.ndarray) -> dict:
    """Every metric of every policy and claim type, averaged over the bias B
    (:func:`exact_with_error` without the quadrature's error estimate)."""
    return exact_with_error(par, J)[0]


def exact_with_error(par: Params, J: np.ndarray) -> tuple:
    """(every metric of every policy and claim type, averaged over the bias B; the
    error estimate of the adaptive policy's quadrature).

    Returns ``{metric: array (protocol, type)}`` plus ``band_share`` (type, bands),
    ``spread_mean`` (type) and ``acc_round`` (type, forced_rounds + 1).
    """
    k, h = par.runs, par.hazard
    P = len(PROTOCOLS)
    out = {m: np.zeros((P, 2)) for m in METRICS}
    n_wrong, n_right = np.zeros((P, 2)), np.zeros((P, 2))
    band = np.zeros((2, len(par.multipliers)))
    acc_round = np.zeros((2, par.forced_rounds + 1))
    spread_mean = np.zeros(2)
    combos = _judge_uphold(J, par)
    ints = _intervals(par)
    # error bounds of the adaptive policy's integrals: (right, wrong) by claim type
    err_part = np.zeros((2, 2))
    scale = max(1.0, par.base_calls + par.round_calls * par.max_rounds, par.max_rounds)
    for t in range(2):
        D, sig = par.margin[t], par.noise[t]
        sd_bar = sig / math.sqrt(k)
        rows = _adaptive_rows(par, combos, sig)
        cdf = [range_cdf(b / sig, k) for _, b, _, _ in ints]
        p_int = np.diff([0.0] + cdf)
        for (a, b, bnd, _), p in zip(ints, p_int):
            band[t, bnd] += p
        spread_mean[t] = sig * range_mean(k)
        # The one-pass policies' sums (of _ROWS, in that order) as Python floats,
        # added in the order of the pieces and written into ``out`` once a claim type:
        # the same floats as adding each piece into ``out`` (its element starts at 0.0
        # as they do), without a NumPy element's read and write a piece.
        one = [[0.0] * len(_ROWS) for _ in PROTOCOLS[:3]]
        for s, ps in ((1, par.p_true), (-1, 1 - par.p_true)):
            if ps == 0:
                continue
            # The one-pass policies' terms are each linear in one normal probability of
            # M: their expectations over the bias are closed forms (over_bias), so raw,
            # fixed and rereconcile are exact; the adaptive policy below (powers of
            # normal probabilities) is integrated by adaptive quadrature.
            mean = D + s * par.bias
            e_right = over_bias(par, mean, sd_bar)
            e_wrong = over_bias(par, mean, sd_bar, sign=-1)
            eps = ps * e_wrong
            for r in range(par.forced_rounds + 1):
                acc_round[t, r] += ps - eps * (1 - h) ** r
            # --- raw, fixed, rereconcile: one pass, enumerated over spread intervals
            # and evidence (the trigger depends on the challenger's evidence).
            for (lo_, hi_, bnd, trig), p in zip(ints, p_int):
                mult = par.multipliers[bnd]
                raw_dec = _decided_mean(par, mean, sd_bar, 0.0)
                pen_dec = _decided_mean(par, mean, sd_bar, par.threshold / mult - 50.0)
                # unpenalised (a resolved re-reconciliation)
                res_R, res_W = _decided_mean(par, mean, sd_bar, par.threshold - 50.0)
                for pi, prot in enumerate(PROTOCOLS[:3]):
                    dec_R, dec_W = raw_dec if prot == "raw" else pen_dec
                    for eT, eF, pe, jR, jW in combos:
                        w = float(ps * p * pe)  # closed forms: one weight
                        tr_R = prot == "rereconcile" and trig and eF == 1
                        tr_W = prot == "rereconcile" and trig and eT == 1
                        v = one[pi]
                        # direction right
                        hr = h if tr_R else 0.0
                        dR = (1 - hr) * dec_R
                        corr_R = dR * jR + hr * res_R
                        v[0] += w * corr_R                                    # acc
                        v[1] += w * (dR * (1 - jR))                           # err
                        v[2] += w * ((e_right - dR - hr * res_R) * jR)        # hidden
                        v[3] += w * 0.0                                       # amp
                        v[4] += w * (dR * jR + hr * res_R)                    # fwc
                        v[5] += w * (e_right * (par.base_calls + (1 if tr_R else 0)))
                        v[6] += w * (e_right if tr_R else 0.0)                # trigger
                        v[7] += w * 0.0                                       # rounds
                        # direction wrong
                        hw = h if tr_W else 0.0
                        dW = (1 - hw) * dec_W
                        v[0] += w * (dW * (1 - jW) + hw * res_W)
                        v[1] += w * (dW * jW)
                        v[2] += w * ((e_wrong - dW - hw * res_W) * (1 - jW))
                        v[3] += w * (dW * jW)                                 # ratified
                        v[4] += w * 0.0
                        v[5] += w * (e_wrong * (par.base_calls + (1 if tr_W else 0)))
                        v[6] += w * (e_wrong if tr_W else 0.0)
                        v[7] += w * 0.0
                        n_right[pi, t] += w * e_right
                        n_wrong[pi, t] += w * e_wrong
            # --- adaptive rounds: powers of normal probabilities of M, integrated over
            # the bias, the terms of a right and of a wrong first pass apart: each
            # where it lives (its own range, on its own scale, antiamp.quadrature),
            # its error bounded relative to its own mass (Amp divides by the wrong
            # first passes' mass, which may be 1e-60 of the claims).
            pi = PROTOCOLS.index("adaptive")
            for wrong, mass in ((False, e_right), (True, e_wrong)):
                if mass <= 0:
                    continue
                if par.bias_sd > 0:
                    sgn = -1.0 if wrong else 1.0
                    val, e = _bias_integral(
                        lambda m, w=wrong: rows(m, w),
                        lambda z, s=s: D + s * (par.bias + par.bias_sd * z),
                        sgn * s * par.bias_sd / sd_bar, sgn * mean / sd_bar, scale)
                else:
                    val, e = rows(np.array([mean]), wrong)[:, 0], 0.0
                for j, mname in enumerate(_ROWS):
                    out[mname][pi, t] += ps * mass * val[j]
                err_part[int(wrong), t] += ps * mass * e
            n_right[pi, t] += ps * e_right
            n_wrong[pi, t] += ps * e_wrong
        for pi, v in enumerate(one):
            for mname, x in zip(_ROWS, v):
                out[mname][pi, t] = x
    typ = np.array([1 - par.contested, par.contested])
    res = {}
    out["insufficient"] = np.maximum((n_right + n_wrong) - out["acc"] - out["err"], 0.0)
    for mname in METRICS:
        v = out[mname]
        if mname == "amp":
            per, nn = v, n_wrong
        elif mname == "fwc":
            per, nn = v, n_right
        else:
            per, nn = v, None
        if nn is None:
            res[mname] = np.concatenate([per, (per * typ).sum(axis=1, keepdims=True)], axis=1)
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                res[mname] = np.concatenate([per / nn, ((per * typ).sum(axis=1) / (
                    nn * typ).sum(axis=1))[:, None]], axis=1)
    res["band_share"] = np.vstack([band, (band * typ[:, None]).sum(axis=0)])
    res["spread_mean"] = np.append(spread_mean, (spread_mean * typ).sum())
    res["acc_round"] = np.vstack([acc_round, (acc_round * typ[:, None]).sum(axis=0)])
    # The bound of every adaptive metric in its own units: the unconditional ones per
    # claim, Amp and fwc per wrong and per right first pass (their closed-form masses).
    pi = PROTOCOLS.index("adaptive")
    with np.errstate(invalid="ignore", divide="ignore"):
        bounds = [err_part.sum(axis=0).max(initial=0.0)]
        for side, nn in ((0, n_right[pi]), (1, n_wrong[pi])):
            per = err_part[side] / nn
            pooled = float((err_part[side] * typ).sum() / (nn * typ).sum())
            bounds += [v for v in np.append(per, pooled) if np.isfinite(v)]
    quad_error = float(max(bounds))
    return res, quad_error


def _decided_mean(par: Params, mean: float, sd_bar: float, cut: float) -> tuple:
    """:func:`_decided` averaged over the pool bias, in closed form (:func:`over_bias`)."""
    if cut > 50.0:
        return 0.0, 0.0
    cut = max(cut, 0.0)
    return over_bias(par, mean, sd_bar, cut), over_bias(par, mean, sd_bar, cut, sign=-1)


def hazard_for(par: Params, accuracy: float, rounds: int, claim_type: str = "contested") -> float:
    """The hazard h at which the advocates' direction is right with probability
    ``accuracy`` after ``rounds`` forced extra rounds on ``claim_type`` claims:
    1 - eps0 (1 - h)^rounds = accuracy, eps0 the first pass's error (exact)."""
    eps0 = first_pass_error(par)[TYPES.index(claim_type)]
    if accuracy <= 1.0 - eps0:
        return 0.0
    if rounds < 1 or accuracy >= 1.0:
        raise ValueError(f"accuracy {accuracy} is out of reach in {rounds} rounds "
                         f"(first-pass accuracy {1 - eps0:.4f})")
    return 1.0 - ((1.0 - accuracy) / eps0) ** (1.0 / rounds)


def _mean_se(cnt, s1, s2):
    cnt = np.asarray(cnt, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = s1 / cnt
        v = np.maximum(s2 / cnt - m * m, 0.0) * cnt / (cnt - 1)
        se = np.sqrt(v / cnt)
    return np.where(cnt >= 2, m, np.nan), np.where(cnt >= 2, se, np.nan)


def simulate(par: Params, J: np.ndarray, n_instances: int, seed: int,
             n_threads: int = 0, device: str = "cpu") -> dict:
    """Every metric by the compiled kernel: ``{metric: (mean, se)}`` with arrays over
    (protocol, type) where type is clear, contested, all; ``band_share``, ``spread_mean``
    and ``acc_round`` over (type, ...)."""
    from ...kernels.redeliberation import redeliberation_kernel
    from ...kernels.rng import split_seed
    from ...runner import device_of, kernel_threads

    kernel = redeliberation_kernel
    if device_of(device) == "cuda":  # the same sums within 1e-12 (kernels.gpu.redeliberation)
        from ...kernels.gpu.redeliberation import redeliberation_kernel as kernel
    k0, k1 = split_seed(seed)
    with kernel_threads(n_threads):
        acc, band, spread, fser = kernel(
            int(n_instances), k0, k1, par.contested, par.p_true, np.asarray(par.margin, float),
            np.asarray(par.noise, float), par.bias, par.bias_sd, int(par.runs), par.evidence,
            par.rho, par.hazard, int(par.max_rounds), np.asarray(par.bands, float),
            np.asarray(par.multipliers, float), par.threshold, par.trigger_spread,
            float(par.base_calls), float(par.round_calls), int(par.forced_rounds),
            np.ascontiguousarray(J, dtype=np.float64))
    a = acc.sum(axis=0)  # blocks added in order
    a = np.concatenate([a, a.sum(axis=1, keepdims=True)], axis=1)  # (P, 3, N_ACC)
    n = a[..., 0]
    out = {}
    # Shares of claims: a share with few events (or non-events), none at all
    # included, gets the count-based floor (antiamp.rare), not a plain SE of 0.
    def share(j):
        m, se = _mean_se(n, a[..., j], a[..., j + 1])
        return m, rare_share_floor(m, se, n)

    out["acc"] = share(3)
    out["err"] = share(5)
    dm, dse = share(1)
    out["insufficient"] = (1.0 - dm, dse)
    # Conditional metrics: a rare conditioning event (a handful of wrong first passes)
    # gets a count-based floor on its standard error (see :mod:`antiamp.rare`).
    for key, j in (("amp", 7), ("fwc", 10)):
        mean, se = _mean_se(a[..., j], a[..., j + 1], a[..., j + 2])
        out[key] = (mean, rare_floor(mean, se, a[..., j]))
    out["hidden"] = share(13)
    out["calls"] = _mean_se(n, a[..., 15], a[..., 16])
    out["trigger"] = share(17)
    out["rounds"] = _mean_se(n, a[..., 19], a[..., 20])
    bc = band.sum(axis=0)
    bc = np.vstack([bc, bc.sum(axis=0)])  # (3, bands)
    nt = bc.sum(axis=1, keepdims=True)
    # Shares of indicators (sum of squares = sum); few events (or non-events): the same
    # kind of floor (a share of 7e-6 of 10^4 claims is mostly 0 events, a plain SE of 0).
    m, se = _mean_se(nt, bc, bc)
    out["band_share"] = (m, rare_share_floor(m, se, nt))
    sp = spread.sum(axis=0)
    sp = np.vstack([sp, sp.sum(axis=0)])
    out["spread_mean"] = _mean_se(nt[:, 0], sp[:, 0], sp[:, 1])
    fs = fser.sum(axis=0)
    fs = np.vstack([fs, fs.sum(axis=0)])
    m, se = _mean_se(nt, fs, fs)
    out["acc_round"] = (m, rare_share_floor(m, se, nt))
    return out
