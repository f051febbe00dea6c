"""Metrics of the baseline model as weighted class averages.

A metric is E[g(class) | class in S] for a per-class value g and a class subset S.
Weighting the 32 transcript classes by simulated *counts* gives the Monte Carlo
estimate (with its standard error); weighting them by exact class *probabilities*
gives the closed form (seed 000, sections 3-4).  Both paths share the definitions
below, so the table's two columns mean the same thing by construction; the seed's
literal formulas are checked against both in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Class coordinates, each an int array over the 32 classes (see kernels.transcript_classes).
_K = np.arange(32)
CORRECT = (_K >> 3) & 1
EP_CONSULT = (_K >> 2) & 1
EP_DEBATE = (_K >> 1) & 1
EA_DEBATE = _K & 1


@dataclass(frozen=True)
class MetricSpec:
    long_name: str
    units: str
    definition: str


#: Per-protocol metrics: name -> description (order = table order).
PROTOCOL_METRICS: dict[str, MetricSpec] = {
    "amp": MetricSpec("mistake amplification", "1", "Pr(y = a | a != omega)"),
    "acc": MetricSpec("accuracy", "1", "Pr(y = omega)"),
    "fwc": MetricSpec("follow-when-correct", "1", "Pr(y = a | a = omega)"),
    "asd": MetricSpec(
        "Agent Score Difference", "1",
        "fwc - Amp: the judge's verdict earned arguing the truth minus arguing a falsehood",
    ),
    "auc": MetricSpec(
        "judge AUC against ground truth", "1",
        "Pr(J of a right argument > J of a wrong one) + ties / 2; J = Pr(y = a | evidence)",
    ),
    "endorse": MetricSpec("endorsement rate", "1", "Pr(y = a)"),
    "wrong_follow": MetricSpec("ratified mistakes", "1", "Pr(y = a, a != omega)"),
    "tie_rate": MetricSpec("evidence tie rate", "1", "Pr(e_P = e_A)"),
    "imbalance_rate": MetricSpec("evidence imbalance rate", "1", "Pr(e_P != e_A)"),
    "b_hat": MetricSpec("tie bias", "1", "Pr(y = a | e_P = e_A)"),
    "rho_eq_P": MetricSpec(
        "equilibrium fabrication rate, protagonist", "1", "Pr(e_P = 1 | a != omega)"
    ),
    "rho_eq_A": MetricSpec(
        "equilibrium fabrication rate, antagonist", "1", "Pr(e_A = 1 | 1 - a != omega)"
    ),
    "evidence_P": MetricSpec("protagonist evidence rate", "1", "Pr(e_P = 1)"),
    "evidence_A": MetricSpec("antagonist evidence rate", "1", "Pr(e_A = 1)"),
    "welfare": MetricSpec(
        "principal welfare U_D", "utility",
        "-alpha Pr(y != omega) - beta Pr(y = a, a != omega) - C(protocol)",
    ),
    "payoff_P": MetricSpec("protagonist payoff", "utility", "Pr(y = a) - c_e Pr(e_P = 1)"),
    "payoff_A": MetricSpec("antagonist payoff", "utility", "Pr(y = 1 - a) - c_e Pr(e_A = 1)"),
}

#: Per-protocol metrics derived from two others of the same protocol (not a class
#: average): name -> the metrics it is computed from (see :func:`derived`).
DERIVED = {"asd": ("fwc", "amp")}
#: Per-protocol metrics of the judge's reading of each transcript class against the
#: truth (not a class average): computed by :func:`judge_auc`.
RANKING = ("auc",)

#: Paired debate-versus-consultancy contrasts on the same instances.
CONTRAST_METRICS: dict[str, MetricSpec] = {
    "amp_gap": MetricSpec(
        "amplification gap", "1", "Amp(consult) - Amp(debate); seed: rho (1 - b)"
    ),
    "acc_gap": MetricSpec(
        "accuracy cost of debate", "1", "Acc(consult) - Acc(debate); seed: rho (2p - 1)(1 - b)"
    ),
    "welfare_diff": MetricSpec(
        "welfare advantage of debate", "utility",
        "U_D(debate) - U_D(consult); seed: rho (1 - b)[beta (1 - p) - alpha (2p - 1)] - Delta C",
    ),
}


def _protocol_values(protocol: str, J_consult, J_debate, alpha, beta, delta_c, c_e,
                     names=None):
    """Per-class values g and conditioning masks S of every metric of one protocol
    (of ``names`` only, when given).

    Judge tables may carry leading cell axes (``J_consult[..., 2]``,
    ``J_debate[..., 2, 2]``) and the scalars matching leading shapes; values come
    out as ``[..., 32]``.
    """
    corr = CORRECT
    J_consult = np.asarray(J_consult, dtype=float)
    J_debate = np.asarray(J_debate, dtype=float)
    lead = J_consult.shape[:-1]
    alpha, beta, delta_c, c_e = (np.asarray(v, dtype=float)[..., None]
                                 for v in (alpha, beta, delta_c, c_e))
    if protocol == "consult":
        ep = EP_CONSULT
        ea = np.zeros_like(ep)
        J = J_consult[..., ep]
        cost = 0.0
    else:
        ep, ea = EP_DEBATE, EA_DEBATE
        J = J_debate[..., ep, ea]
        cost = delta_c
    every = np.ones(32, bool)
    right = corr == 1
    wrong = ~right
    tie = ep == ea
    accurate = corr * J + (1 - corr) * (1 - J)
    has_a = protocol == "debate"

    def nan():
        return np.full(lead + (32,), np.nan)

    def full(x):
        return np.broadcast_to(np.asarray(x, dtype=float), lead + (32,))

    lazy = {  # built on demand: a grid of equilibria keeps four of them
        "amp": lambda: (J, wrong),
        "acc": lambda: (accurate, every),
        "fwc": lambda: (J, right),
        "endorse": lambda: (J, every),
        "wrong_follow": lambda: ((1 - corr) * J, every),
        "tie_rate": lambda: (full(tie), every),
        "imbalance_rate": lambda: (full(~tie), every),
        "b_hat": lambda: (J, tie),
        "rho_eq_P": lambda: (full(ep), wrong),
        "rho_eq_A": lambda: (full(ea) if has_a else nan(), right),
        "evidence_P": lambda: (full(ep), every),
        "evidence_A": lambda: (full(ea) if has_a else nan(), every),
        "welfare": lambda: (-alpha * (1 - accurate) - beta * (1 - corr) * J - cost, every),
        "payoff_P": lambda: (J - c_e * ep, every),
        "payoff_A": lambda: ((1 - J) - c_e * ea if has_a else nan(), every),
    }
    return {k: f() for k, f in lazy.items() if names is None or k in names}


def _contrast_values(vals_c, vals_d):
    return {
        "amp_gap": (vals_c["amp"][0] - vals_d["amp"][0], vals_c["amp"][1]),
        "acc_gap": (vals_c["acc"][0] - vals_d["acc"][0], vals_c["acc"][1]),
        "welfare_diff": (vals_d["welfare"][0] - vals_c["welfare"][0], vals_c["welfare"][1]),
    }


def masked_weights(weights: np.ndarray, mask: np.ndarray) -> tuple:
    """``(w, tot, pos)``: the weights kept by ``mask`` (floats, 0 elsewhere), their sum
    over the class axis and where they are positive, what :func:`weighted` reads of a
    mask: computed once for the metrics that share a mask (``weighted(...,
    masked=...)``), the same values as each call's own."""
    w = np.where(mask, weights, 0).astype(float)
    return w, w.sum(axis=-1), w > 0


def _kept_products(w, g, pos) -> np.ndarray:
    """``np.where(pos, w * g, 0.0)`` with one temporary fewer (the products, then 0.0
    written where ``pos`` is False): the same values, +0.0 where a class carries no
    weight whatever ``g`` holds there (NaN, infinities)."""
    p = w * g
    np.copyto(p, 0.0, where=~pos)
    return p


def weighted(weights: np.ndarray, g: np.ndarray, mask: np.ndarray, n=None, se: bool = True,
             masked: tuple | None = None):
    """E_w[g | mask] over the last (class) axis and the standard error of its estimate.

    With integer class *counts* (``n=None``) the standard error is the sample one
    of a mean of i.i.d. per-instance values (for a conditional metric, given the
    number of instances in the conditioning event).  With exact class
    *probabilities* and ``n`` instances it is the standard error that a run of
    ``n`` instances will have, which is what to plan a run with.  Leading axes
    are cells.  An empty conditioning event gives NaN.  ``se=False`` computes the
    mean alone (standard error None): what exact outcomes at equilibria need.
    ``masked``: :func:`masked_weights` of these weights and this mask, computed once
    for several metrics.
    """
    g = np.asarray(g, dtype=float)
    w, tot, pos = masked_weights(weights, mask) if masked is None else masked
    if not se:  # a value undefined where it carries no weight
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = _kept_products(w, g, pos).sum(axis=-1) / tot
        return np.where(tot > 0, mean, np.nan), None
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = _kept_products(w, g, pos).sum(axis=-1) / tot
        dev = np.where(pos, g - mean[..., None], 0.0)
        ss = (w * dev * dev).sum(axis=-1)
        # A value that is constant on its conditioning event has no spread: exactly
        # zero, not the ~1e-38 that the rounding of its mean leaves in ``dev``.
        gmax = np.where(pos, g, -np.inf).max(axis=-1, initial=-np.inf)
        gmin = np.where(pos, g, np.inf).min(axis=-1, initial=np.inf)
        ss = np.where(gmax == gmin, 0.0, ss)
        if n is None:  # counts
            se = np.where(tot >= 2, np.sqrt(ss / (tot - 1) / tot), np.nan)
        else:  # probabilities: Var(g | mask) / (n Pr(mask))
            se = np.sqrt(ss / tot / (np.asarray(n, dtype=float) * tot))
    mean = np.where(tot > 0, mean, np.nan)
    se = np.where(tot > 0, se, np.nan)
    return mean, se


def delta_se(freq: np.ndarray, grad: np.ndarray, n: float) -> float:
    """Standard error of a smooth function M of multinomial class frequencies.

    ``freq`` [K] the observed frequencies of n instances, ``grad`` [K] the partial
    derivatives of M in them: Var(M) = (sum f_k g_k^2 - (sum f_k g_k)^2) / n (the
    delta method; with M a weighted mean it is the usual standard error).  Used for
    outcomes at equilibria solved from the same counts, whose gradient includes how
    the equilibrium moves.
    """
    g = np.where(np.isfinite(grad), grad, 0.0)
    var = float((freq * g * g).sum() - (freq * g).sum() ** 2)
    return float(np.sqrt(max(var, 0.0) / n))


def delta_ses(freq: np.ndarray, grad: np.ndarray, n: np.ndarray) -> np.ndarray:
    """:func:`delta_se` of many rows at once: ``freq`` and ``grad`` [R, K], ``n`` [R];
    the same operations row by row (the same bits as :func:`delta_se` of each row)."""
    g = np.where(np.isfinite(grad), grad, 0.0)
    var = (freq * g * g).sum(axis=-1) - (freq * g).sum(axis=-1) ** 2
    return np.sqrt(np.maximum(var, 0.0) / np.asarray(n, float))


def means_from_sums(total, n, squares) -> tuple[np.ndarray, np.ndarray]:
    """Means of ``n`` per-instance values and their standard errors, from their sums
    and the sums of their squares (what the compiled kernels accumulate), elementwise
    over arrays (a cell or a protocol a row); NaN where ``n`` is 0.

    The sums carry rounding of up to about ``n`` ulp and E[v^2] - E[v]^2 cancels: a
    variance below that bound is not resolved by the sums and is reported as zero
    (a value constant over the instances has no standard error, not one of 1e-10).
    """
    total, n, squares = np.broadcast_arrays(*(np.asarray(x, dtype=float)
                                              for x in (total, n, squares)))
    with np.errstate(invalid="ignore", divide="ignore"):
        m = total / n
        var = squares / n - m * m
        var = np.where(var <= np.maximum(4.0, n) * np.finfo(float).eps * np.abs(squares / n),
                       0.0, var)
        se = np.sqrt(var / np.maximum(n - 1, 1))
    live = n > 0
    return np.where(live, m, np.nan), np.where(live, se, np.nan)


def evaluate(weights, J_consult, J_debate, alpha, beta, delta_c, c_e, n=None, names=None,
             se: bool = True):
    """All metrics from class weights: ``{name: (values, ses)}``.

    ``weights`` are class counts (``n=None``) or exact class probabilities with
    ``n`` the number of instances the standard errors refer to; either may have
    leading cell axes ``[..., 32]`` matching the judge tables'.  Per-protocol
    metrics get a trailing protocol axis (consult, debate); contrasts do not.
    ``names`` limits the work to those metrics (default: every one); ``se=False``
    computes the values alone (standard errors None).
    """
    need = None
    if names is not None:  # the contrasts read amp, acc and welfare
        need = set(names) | ({"amp", "acc", "welfare"} if set(names) & set(CONTRAST_METRICS)
                             else set())
    if need is not None:  # a derived metric reads the metrics it is computed from
        need |= {m for k in names if k in DERIVED for m in DERIVED[k]}
    vc = _protocol_values("consult", J_consult, J_debate, alpha, beta, delta_c, c_e, need)
    vd = _protocol_values("debate", J_consult, J_debate, alpha, beta, delta_c, c_e, need)
    one = (lambda g, mask: weighted(weights, g, mask, n, se)) if se else _means(weights, n)
    res = {}

    def protocol_metric(name):
        if name not in res:
            rc = one(*vc[name])
            rd = one(*vd[name])
            res[name] = (np.stack([rc[0], rd[0]], axis=-1),
                         np.stack([rc[1], rd[1]], axis=-1) if se else None)
        return res[name]

    out = {}
    for name in PROTOCOL_METRICS:
        if names is not None and name not in names:
            continue
        if name in RANKING:
            parts = [judge_auc(weights, J, n=n, se=se, groups=g) for J, g in
                     zip(judge_scores(J_consult, J_debate), READING_GROUPS)]
            out[name] = (np.stack([parts[0][0], parts[1][0]], axis=-1),
                         np.stack([parts[0][1], parts[1][1]], axis=-1) if se else None)
        elif name in DERIVED:
            out[name] = derived(name, *(protocol_metric(m) for m in DERIVED[name]))
        else:
            out[name] = protocol_metric(name)
    if names is None or any(k in CONTRAST_METRICS for k in names):
        for name, (g, mask) in _contrast_values(vc, vd).items():
            if names is None or name in names:
                out[name] = one(g, mask)
    return out


def derived(name: str, *parts):
    """A :data:`DERIVED` metric from ``(values, ses)`` of the metrics it reads.

    ``asd`` = fwc - Amp (:func:`antiamp.oversight_metrics.asd_from_rates`): the two
    condition on the disjoint events a = omega and a != omega of independent
    instances (class counts or class probabilities alike), so their estimates are
    uncorrelated and the standard errors add in quadrature."""
    from .oversight_metrics import asd_from_rates

    if name != "asd":
        raise KeyError(f"no derived metric {name!r}; derived metrics: {', '.join(DERIVED)}")
    (fwc, fwc_se), (amp, amp_se) = parts
    return asd_from_rates(fwc, amp, fwc_se, amp_se)


def judge_scores(J_consult, J_debate):
    """The judge's probability of endorsing the argued answer per transcript class,
    ``[..., 32]``, in consultancy and in debate (it reads the evidence shown only)."""
    J_consult = np.asarray(J_consult, dtype=float)
    J_debate = np.asarray(J_debate, dtype=float)
    return J_consult[..., EP_CONSULT], J_debate[..., EP_DEBATE, EA_DEBATE]


#: Classes the judge reads alike (it reads the evidence shown only): e_P in
#: consultancy, (e_P, e_A) in debate.
READING_GROUPS = (EP_CONSULT, 2 * EP_DEBATE + EA_DEBATE)


def judge_auc(weights, score, right=None, n=None, se: bool = True, groups=None):
    """The judge's ROC AUC against ground truth from class weights: the probability
    that a right argument (a = omega) gets a higher ``score`` than a wrong one, ties
    counting one half (the Mann-Whitney statistic over the instances the weights
    stand for), and its standard error.

    ``weights`` ``[..., C]`` are class counts (``n=None``) or class probabilities with
    ``n`` instances; ``score`` ``[..., C]`` the judge's reading of each class (here its
    endorsement probability, broadcast over the weights' leading axes), ``right``
    ``[C]`` which classes argue the truth (default: :data:`CORRECT`).  The standard
    error is the delta method on the multinomial class frequencies f (Var =
    (sum f g^2 - (sum f g)^2) / n, g the gradient of AUC in f; asymptotically DeLong's
    variance): written here because it runs on class counts over a grid's cells at
    once, which scikit-learn's and scipy's per-sample functions do not.  NaN where no
    right or no wrong argument carries weight.  ``groups`` ``[C]`` (optional): classes of
    one group have one score (:data:`READING_GROUPS`), so the pairs are counted over
    (group, truth) cells instead of classes: the same value and standard error (the
    gradient is constant on a cell), a fraction of the work.
    """
    w = np.ascontiguousarray(weights, dtype=float)
    right = (CORRECT == 1) if right is None else np.asarray(right, dtype=bool)
    s = np.broadcast_to(np.asarray(score, dtype=float), w.shape)
    # Every sum below runs along the last axis of a C-contiguous array, so that a cell's
    # value has the same bits alone and inside a grid of any shape (a matrix product's
    # or einsum's contraction does not: its blocking depends on how many cells there
    # are, and a sweep's verification recomputes a block's cells in another batch).
    if groups is not None:
        cell = np.asarray(groups) * 2 + right  # (group, truth)
        keys, rep = np.unique(cell, return_index=True)
        w = np.stack([np.ascontiguousarray(w[..., cell == k]).sum(axis=-1) for k in keys],
                     axis=-1)
        s, right = s[..., rep], right[rep]
    tot = w.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        f = w / tot
    fR, fW = np.where(right, f, 0.0), np.where(right, 0.0, f)
    # K[i, j] = [s_i > s_j] + [s_i = s_j] / 2 over pairs of classes
    K = (s[..., :, None] > s[..., None, :]) + 0.5 * (s[..., :, None] == s[..., None, :])
    KW = np.ascontiguousarray(K * fW[..., None, :]).sum(axis=-1)  # per class: its wins
    # over wrong ones; and per class, right ones' wins over it (K transposed)
    KR = np.ascontiguousarray(np.swapaxes(K, -1, -2) * fR[..., None, :]).sum(axis=-1)
    R, W = fR.sum(axis=-1), fW.sum(axis=-1)
    A = (fR * KW).sum(axis=-1)
    # (over: where R W is subnormal, at a prior such as pi = 2e-309, the gradient
    # overflows and the standard error is inf or NaN: no information, said so)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        auc = np.where((R > 0) & (W > 0), A / (R * W), np.nan)
        if not se:
            return auc, None
        g = np.where(right, KW / (R * W)[..., None] - (auc / R)[..., None],
                     KR / (R * W)[..., None] - (auc / W)[..., None])
        g = np.where(f > 0, g, 0.0)
        m = (f * g).sum(axis=-1)
        var = np.maximum((f * g * g).sum(axis=-1) - m * m, 0.0)
        N = tot[..., 0] if n is None else np.asarray(n, dtype=float)
        out_se = np.where(np.isfinite(auc), np.sqrt(var / N), np.nan)
    return auc, out_se


def _means(weights, n):
    """``weighted(..., se=False)`` for many metrics over the same weights: the
    weights' sign checked once, each mean one compiled pass per row
    (:func:`antiamp.kernels.means.masked_mean`, broadcasting g and mask, which
    often lack the weights' leading equilibrium axes; a cell's value has the same
    bits alone and inside a grid, as einsum's contraction would not).  Values that
    are not finite, or negative weights, go through :func:`weighted`."""
    from antiamp.kernels.means import masked_mean

    weights = np.asarray(weights, dtype=float)
    nonneg = bool(np.all(weights >= 0))

    def mean(g, mask):
        mask = np.asarray(mask)
        g = np.asarray(g, dtype=float)
        if mask.ndim != 1 or not nonneg or not np.isfinite(np.where(mask, g, 0.0)).all():
            return weighted(weights, g, mask, n, se=False)
        return masked_mean(weights, g, mask.astype(bool)), None

    return mean


def class_probabilities(pi, p_correct, rho, x_pc, x_pd, x_a, fixed, a_fixed):
    """Exact probability of each of the 32 transcript classes, ``[..., 32]``.

    Arguments may be arrays over cells.  The two protocols present with the same
    uniform (common random numbers), so
    Pr(e_P consult = 1, e_P debate = 1 | t_P = 1) = min(x_Pc, x_Pd).

    Class k = 16 omega + 8 correct + 4 e_P(consult) + 2 e_P(debate) + e_A factors as
    Pr(omega, correct) x Pr(evidence | correct): two small tables multiplied once
    into the 32 classes (a grid of 10^4 cells x equilibria is one product, not a
    dozen passes over [..., 32]).
    """
    pi, p_correct, rho, x_pc, x_pd, x_a = (
        np.asarray(v, dtype=float) for v in (pi, p_correct, rho, x_pc, x_pd, x_a))
    fixed = np.asarray(fixed, dtype=bool)[..., None, None]
    a_fixed = np.asarray(a_fixed)[..., None, None]
    om, corr = np.array([[0], [1]]), np.array([[0, 1]])  # [omega, correct]
    p_om = np.where(om == 1, pi[..., None, None], 1 - pi[..., None, None])
    p_corr = np.where(fixed, (corr == (om == a_fixed)).astype(float),
                      np.where(corr == 1, p_correct[..., None, None],
                               1 - p_correct[..., None, None]))
    p_oc = p_om * p_corr  # [..., omega, correct]
    # Pr(e_Pc, e_Pd | t_P = 1), in the order (e_Pc, e_Pd) = 00, 01, 10, 11.
    both = np.minimum(x_pc, x_pd)
    joint = np.stack(np.broadcast_arrays(1 - x_pc - x_pd + both, x_pd - both, x_pc - both, both),
                     axis=-1)
    r = rho[..., None]
    none = np.array([1.0, 0.0, 0.0, 0.0])  # no evidence: neither presents
    # [..., correct, (e_Pc, e_Pd)]: t_P = 1 surely when P is correct, with rho when not.
    p_ep = np.stack(np.broadcast_arrays(r * joint + (1 - r) * none, joint), axis=-2)
    ea1 = np.stack(np.broadcast_arrays(1 - x_a, x_a), axis=-1)  # Pr(e_A | t_A = 1)
    # [..., correct, e_A]: t_A = 1 surely when P is wrong (A is right), with rho when not.
    p_ea = np.stack(np.broadcast_arrays(ea1, r * ea1 + (1 - r) * np.array([1.0, 0.0])), axis=-2)
    lead = np.broadcast_shapes(p_ep.shape[:-2], p_ea.shape[:-2])
    evid = (p_ep[..., :, :, None] * p_ea[..., :, None, :]).reshape(lead + (2, 8))
    out = p_oc[..., :, :, None] * evid[..., None, :, :]  # [..., omega, correct, 8]
    return out.reshape(out.shape[:-3] + (32,))
