"""Provenance-backed pluralistic mediation (seed 002, FOAM) in seed 000's primitives.

* Citations: each of a case's M citations is, independently, exact and relevant,
  exact but irrelevant (a wrong pointer: verbatim, so exact match passes it; only a
  relevance check catches it), partial, paraphrased or fabricated.  Sentence-level
  provenance (``foam``) sets fabrication to zero but keeps wrong pointers.  Perfect
  validation of a case: every citation an exact match, q^M with q the exact share;
  the evidence-quality score is 100 x the mean citation weight (:data:`EQ_WEIGHTS`).
* The critic-evaluator-proposer loop: a proposal starts with Poisson(F_0) material
  flaws; each of k iterations the critic finds each remaining flaw with probability
  d and the proposer repairs a found one with probability r; with probability
  ``false_alarm`` an iteration's accepted false alarm breaks a sound part (one new
  flaw, exposed to the later iterations).  Residual flaws: F_0 (1 - d r)^k plus the
  false alarms' survivors.  The recommendation a is wrong iff a flaw remains.
* Dissent and synthesis: each of P perspectives dissents with probability
  1 - (1 - s)^n on n residual flaws (``false_dissent`` on a sound recommendation).
  A dissent memo keeps every dissent; a monolithic summary erases each with
  probability ``erase``.  At least ``escalate_at`` surviving dissents escalate the
  case to a human, right with probability ``human_accuracy``; otherwise a stands.

Per synthesis (the ``protocol`` dimension: memo, summary): Amp = Pr(final = a | a
wrong), follow-when-correct, accuracy, the escalation rate, the error rate of what
passes without review, the erasure rate (a wrong recommendation whose every dissent
was erased) and the cost (3 model calls per iteration, 1 synthesis, human reviews at
``human_cost``).  Exact values: the residual count's law is a Poisson convolved with
the false alarms' Bernoullis (a short dynamic programme), dissents are binomial.
"""

from __future__ import annotations

import math
from dataclasses import field, fields, make_dataclass

import numpy as np

from ...config import ConfigError, check_prob
from ...lazy import lazy
from ...moments import estimates
from .config import MediationConfig

special = lazy("scipy.special")
stats = lazy("scipy.stats")

PROTOCOLS = ("memo", "summary")
CLASSES = ("exact", "exact_irrelevant", "partial", "paraphrase", "fabricated")
#: Evidence-quality weight of each citation class (the rubric this model states; the
#: seed gives only the scores): exact 1, a wrong pointer 0.5, partial 0.6, paraphrase
#: 0.35, fabricated 0.
EQ_WEIGHTS = (1.0, 0.5, 0.6, 0.35, 0.0)
#: Citation class shares of the seed's three sources, chosen so that the share of
#: exact matches is Table 2's perfect validation (76.2%, 8.7%, 0%) and the evidence
#: quality Table 1's (86.7, 56.9, 27.1) under EQ_WEIGHTS; provenance fabricates
#: nothing but keeps 5% wrong pointers.
SOURCES = {
    "foam": (0.7239, 0.0381, 0.1628, 0.0752, 0.0),
    "human": (0.087, 0.0, 0.6778, 0.2152, 0.02),
    "zeroshot": (0.0, 0.0, 0.16, 0.5, 0.34),
}
SEED_TABLES = {"foam": (76.2, 86.7), "human": (8.7, 56.9), "zeroshot": (0.0, 27.1)}
CALLS_PER_ITERATION = 3  # critic, evaluator, proposer
METRICS = {
    "amp": "Amp = Pr(final = a | a wrong)",
    "fwc": "follow-when-correct Pr(final = a | a right)",
    "acc": "accuracy of the final decision",
    "escalated": "escalation rate",
    "err_unescalated": "Pr(a wrong | not escalated): what passes without review",
    "erased": "Pr(every dissent erased | a wrong, some dissent raised)",
    "cost": "cost per case (model calls; a human review at human_cost)",
}
SHARED = {
    "wrong": "Pr(the recommendation is wrong): a material flaw remains",
    "residual": "mean residual material flaws",
    "perfect_case": "perfect validation of a case: every citation an exact match",
    "exact_share": "share of citations that are exact matches",
    "eq_score": "evidence-quality score (0-100)",
    "caught_irrelevant": "share of citations flagged by the relevance check",
}


def _params_fields() -> list:
    out = []
    for f in fields(MediationConfig):
        if f.name == "source":  # the source and custom shares are read as the shares
            out.append(("classes", tuple, field(default=SOURCES[f.default])))
        elif f.name != "classes":
            out.append((f.name, f.type, field(default=f.default)))
    return out


#: The model's parameters as its functions read them: the ``mediation`` section's
#: fields (derived from :class:`MediationConfig`, so declared once) with the citation
#: source read as its five class shares (``classes``); frozen.
Params = make_dataclass("Params", _params_fields(), frozen=True,
                        namespace={"__doc__": "Parameters of model=mediation (see the module)."})
Params.__module__ = __name__


def _cast(f, v):
    t = f.type if isinstance(f.type, str) else f.type.__name__
    return {"float": float, "int": int, "str": str}.get(t, lambda x: x)(v)


def params_of(cfg) -> Params:
    """:class:`Params` of a config (its ``mediation`` section)."""
    m = cfg.mediation
    kw = {f.name: _cast(f, getattr(m, f.name)) for f in fields(MediationConfig)
          if f.name not in ("source", "classes")}
    classes = SOURCES[m.source] if m.source in SOURCES else tuple(float(v) for v in m.classes)
    return Params(classes=tuple(classes), **kw)


def validate_mediation(cfg) -> None:
    m = cfg.mediation
    # Ranges: declared in config.py; what depends on several fields or the data here.
    if m.escalate_at > m.perspectives:
        raise ConfigError(f"mediation.escalate_at must be at most mediation.perspectives "
                          f"({m.perspectives}), got {m.escalate_at}")
    if m.source not in tuple(SOURCES) + ("custom",):
        raise ConfigError(f"mediation.source must be one of {', '.join(SOURCES)}, custom; got "
                          f"{m.source!r}")
    if m.source == "custom":
        c = m.classes
        if not isinstance(c, (list, tuple)) or len(c) != len(CLASSES):
            raise ConfigError(f"mediation.classes must be {len(CLASSES)} shares "
                              f"({', '.join(CLASSES)}) with source=custom, got {c!r}")
        for i, v in enumerate(c):
            check_prob(f"mediation.classes[{i}]", v)
        if abs(sum(float(v) for v in c) - 1.0) > 1e-9:
            raise ConfigError(f"mediation.classes must sum to 1, got {sum(c)!r}")
    elif m.classes is not None:
        raise ConfigError("mediation.classes is read only with mediation.source=custom")


# ------------------------------------------------------------------ exact values
def residual_pmf(par: Params, n_max: int | None = None) -> np.ndarray:
    """Law of the residual flaw count: Poisson(F_0 (1 - d r)^k) plus, for each
    iteration j, a false alarm's new flaw surviving the k - j later iterations."""
    surv = 1.0 - par.detect * par.repair
    lam = par.flaws * surv ** par.iterations
    n_max = n_max or _default_n_max(par)
    pmf = stats.poisson.pmf(np.arange(n_max + 1), lam)
    for j in range(1, par.iterations + 1):
        b = par.false_alarm * surv ** (par.iterations - j)
        pmf = np.concatenate([pmf * (1 - b), [0.0]]) + np.concatenate([[0.0], pmf * b])
    return pmf


def mean_residual(par: Params) -> float:
    """F_0 (1 - d r)^k + false_alarm sum_j (1 - d r)^(k - j)."""
    surv = 1.0 - par.detect * par.repair
    k = par.iterations
    return par.flaws * surv ** k + par.false_alarm * sum(surv ** (k - j) for j in range(1, k + 1))


def _default_n_max(par: Params) -> int:
    lam = par.flaws * (1.0 - par.detect * par.repair) ** par.iterations
    return int(lam + 12 * math.sqrt(lam + 1) + par.iterations + 12)


#: Rounding allowance of every exact metric (about 64 units in the last place of a value
#: of order 1): the sums run over at most a few thousand terms of the residual law.
ROUNDING = 2.0 ** -46


def exact_error(par: Params, n_max: int | None = None, ex: dict | None = None) -> float:
    """A bound on the error of :func:`exact`'s metrics, each in its own units (the
    largest), the citation metrics aside (closed forms).

    The residual law is the one approximation: the initial flaws' Poisson law is cut at
    ``n_max``, so that every probability sum misses at most the tail mass
    t = Pr(Poisson(F_0 (1 - d r)^k) > n_max) (the false alarms' convolutions keep all
    mass).  A share of every case (acc, escalated, wrong) is then off by at most t, the
    cost by ``human_cost`` t, the mean residual by the tail's mean sum_{n > n_max} n
    pmf(n) = lambda Pr(Poisson > n_max - 1); a conditional share a / b (Amp, fwc, the
    unescalated error, the erased dissent) by at most (t + (a / b) t) / (b - t).  Plus
    :data:`ROUNDING`.  ``ex``: :func:`exact`'s values at the same ``n_max``, if the
    caller has them (else computed here)."""
    lam = par.flaws * (1.0 - par.detect * par.repair) ** par.iterations
    n_max = n_max or _default_n_max(par)
    t = float(stats.poisson.sf(n_max, lam))
    if t == 0.0:
        return ROUNDING
    ex = exact(par, n_max) if ex is None else ex
    p_wrong = ex["wrong"]
    bounds = [t, par.human_cost * t, lam * float(stats.poisson.sf(n_max - 1, lam))]

    def ratio(r, den):
        r, den = np.asarray(r, float), np.asarray(den, float)
        with np.errstate(invalid="ignore", divide="ignore"):
            b = np.where(den > t, (t + np.abs(r) * t) / (den - t), np.inf)
        return [float(v) for v, ok in zip(b.ravel(), np.isfinite(r).ravel()) if ok]

    bounds += ratio(ex["amp"], np.full(len(PROTOCOLS), p_wrong))
    bounds += ratio(ex["fwc"], np.full(len(PROTOCOLS), 1.0 - p_wrong))
    bounds += ratio(ex["err_unescalated"], 1.0 - ex["escalated"])
    # the erased share's denominator: Pr(a wrong case, some dissent raised), as exact()
    # sums it (the same for both syntheses)
    pmf = residual_pmf(par, n_max)
    n = np.arange(len(pmf))
    p_dis = np.where(n >= 1, 1.0 - (1.0 - par.dissent) ** n, par.false_dissent)
    some = float(np.sum(pmf * (n >= 1) * (1 - (1 - p_dis) ** par.perspectives)))
    bounds += ratio(ex["erased"], np.full(len(PROTOCOLS), some))
    return float(max(bounds)) + ROUNDING


def citation_exact(par: Params) -> dict:
    """Citation metrics in closed form: perfect validation q^M, the exact share q,
    the evidence-quality score and the relevance check's catch rate."""
    c = np.asarray(par.classes)
    q = c[0] + c[1]
    return {"perfect_case": q ** par.citations, "exact_share": q,
            "eq_score": 100.0 * float(np.dot(c, EQ_WEIGHTS)),
            "caught_irrelevant": c[1] * par.relevance}


def citation_enumeration(par: Params) -> dict:
    """The same by enumerating every multinomial count vector of M citations (small M)."""
    from itertools import product

    M, c = par.citations, np.asarray(par.classes)
    out = {"perfect_case": 0.0, "exact_share": 0.0, "eq_score": 0.0, "caught_irrelevant": 0.0}
    for counts in product(range(M + 1), repeat=len(CLASSES) - 1):
        last = M - sum(counts)
        if last < 0:
            continue
        n = np.array(counts + (last,))
        p = math.factorial(M) / np.prod([math.factorial(int(x)) for x in n]) * np.prod(c ** n)
        out["perfect_case"] += p * (n[0] + n[1] == M)
        out["exact_share"] += p * (n[0] + n[1]) / M
        out["eq_score"] += p * 100 * float(np.dot(n, EQ_WEIGHTS)) / M
        out["caught_irrelevant"] += p * n[1] * par.relevance / M
    return out


def exact(par: Params, n_max: int | None = None) -> dict:
    """Every metric: ``{name: value}`` for the shared ones, ``(memo, summary)`` arrays
    for the per-synthesis ones.  ``n_max``: where the residual law is cut
    (:func:`residual_pmf`'s default; :func:`exact_error` bounds what the cut loses)."""
    pmf = residual_pmf(par, n_max)
    n = np.arange(len(pmf))
    P, T, h = par.perspectives, par.escalate_at, par.human_accuracy
    p_dis = np.where(n >= 1, 1.0 - (1.0 - par.dissent) ** n, par.false_dissent)
    wrong_n = n >= 1
    out = {k: np.zeros(len(PROTOCOLS)) for k in METRICS}
    p_wrong = float(pmf[wrong_n].sum())
    for i, prot in enumerate(PROTOCOLS):
        keep = 1.0 if prot == "memo" else 1.0 - par.erase
        esc = stats.binom.sf(T - 1, P, p_dis * keep)  # Pr(at least T surviving dissents)
        esc_w = float(np.sum(pmf * esc * wrong_n))
        esc_r = float(np.sum(pmf * esc * ~wrong_n))
        out["amp"][i] = ((p_wrong - esc_w) + esc_w * (1 - h)) / p_wrong if p_wrong else np.nan
        pr = 1 - p_wrong
        out["fwc"][i] = ((pr - esc_r) + esc_r * h) / pr if pr else np.nan
        out["acc"][i] = (pr - esc_r) + esc_r * h + esc_w * h
        out["escalated"][i] = esc_w + esc_r
        noesc = 1 - esc_w - esc_r
        out["err_unescalated"][i] = (p_wrong - esc_w) / noesc if noesc > 0 else np.nan
        # Some dissent raised, none survives: Pr(D >= 1) - Pr(S >= 1) given n.
        raised = 1 - (1 - p_dis) ** P
        survive = 1 - (1 - p_dis * keep) ** P
        lost = float(np.sum(pmf * wrong_n * (raised - survive)))
        some = float(np.sum(pmf * wrong_n * raised))
        out["erased"][i] = lost / some if some > 0 else np.nan
        out["cost"][i] = (CALLS_PER_ITERATION * par.iterations + 1
                          + par.human_cost * out["escalated"][i])
    shared = {"wrong": p_wrong, "residual": float(np.sum(n * pmf)), **citation_exact(par)}
    return {**out, **shared}


def simulate(par: Params, n_instances: int, seed: int, n_threads: int = 0,
             device: str = "cpu") -> dict:
    """Metrics by the compiled kernel: ``{name: (value, se)}``.  ``device``:
    ``run.device``; the GPU gives the same integer sums (:mod:`kernels.gpu.mediation`)."""
    flaw, cit = kernel_sums(par, n_instances, seed, n_threads, device)
    s1, s2 = class_moments(par, flaw, cit, float(n_instances))
    return estimates(lambda m: _values(m, par), s1, s2, float(n_instances),
                     rows=lambda rows: _value_rows(rows, par))


def kernel_sums(par: Params, n_instances: int, seed: int, n_threads: int = 0,
                device: str = "cpu") -> tuple:
    """The kernel's integer sums ``(flaw, citations)`` of ``n_instances`` cases
    (:func:`kernels.mediation.mediation_sums`, or its GPU twin)."""
    import numba as nb

    from ...kernels import mediation as km
    from ...kernels.rng import split_seed
    from ...runner import device_of, kernel_threads

    k0, k1 = split_seed(seed)
    surv = 1.0 - par.detect * par.repair
    G_p, S_p, G_b, S_b, t_dis, t_fa, t_erase, G_c, S_c, q = km.tables(
        par.flaws, surv, int(par.iterations), int(par.perspectives), par.dissent,
        par.false_dissent, par.erase, par.false_alarm, int(par.citations), par.classes)
    args = (int(n_instances), k0, k1, int(par.iterations), int(par.perspectives),
            int(par.citations), surv, float(par.dissent), float(par.false_dissent), G_p, S_p,
            G_b, S_b, t_dis, t_fa, t_erase, q, G_c, S_c)
    if device_of(device) == "cuda":
        from ...kernels.gpu.mediation import mediation_sums as gpu_sums

        flaw, cit = gpu_sums(*args)
    else:
        with kernel_threads(n_threads):
            flaw, cit = km.mediation_sums(*args, 4 * nb.get_num_threads())
    return flaw, cit


#: The kernel's per-case vector: wrong, residual, perfect, exact share, eq, caught;
#: then per protocol: final right, escalated, wrong and escalated, erased-and-wrong,
#: raised-and-wrong.
N_SHARED = 6
PER = 5
L = N_SHARED + PER * len(PROTOCOLS)
#: The flaw part's entries of the vector (the rest, 2..5, are the citation part's).
FLAW_PART = [0, 1] + list(range(N_SHARED, L))
CITATION_PART = [2, 3, 4, 5]


def class_moments(par: Params, flaw: np.ndarray, cit: np.ndarray, n: float) -> tuple:
    """The sums of the per-case vector and of its outer product, (1, L) and (1, L, L),
    from the kernel's integer sums (``kernels.mediation``): the flaw classes' vectors
    weighted by their counts (linear in the residual flaw count, whose sums come with
    them), the citation part from the sums of the class counts and their products.
    The cross sums of the two parts are not accumulated (no metric combines them):
    they are set to the product of the parts' sums / n, a zero covariance."""
    P, T, h = int(par.perspectives), int(par.escalate_at), par.human_accuracy
    n_cls = 2 * (P + 1) ** 2
    A = np.zeros((n_cls, L))
    b = np.zeros(L)
    b[1] = 1.0  # the residual flaw count
    for k in range(n_cls):
        rest, kept_sum = divmod(k, P + 1)
        wrong, raised = divmod(rest, P + 1)
        y = A[k]
        y[0] = float(wrong)
        for pr, kept in enumerate((raised, kept_sum)):  # a memo keeps every dissent
            esc = kept >= T
            base = N_SHARED + PER * pr
            y[base] = h if esc else (0.0 if wrong else 1.0)
            y[base + 1] = float(esc)
            y[base + 2] = float(esc and wrong)
            y[base + 3] = float(wrong and raised > 0 and kept == 0)
            y[base + 4] = float(wrong and raised > 0)
    cnt, u, u2 = (np.asarray(v, np.float64) for v in flaw)
    s1 = A.T @ cnt + b * u.sum()
    au = A.T @ u
    s2 = (A.T * cnt) @ A + np.outer(au, b) + np.outer(b, au) + np.outer(b, b) * u2.sum()
    # Citation part: y = (perfect, G counts) with G's rows the exact share, the
    # evidence-quality score and the relevance check's catch, per citation.
    M = float(par.citations)
    sc = np.asarray(cit[:5], np.float64)
    scc = np.asarray(cit[5:30], np.float64).reshape(5, 5)
    sp, spc = float(cit[30]), np.asarray(cit[31:36], np.float64)
    G = np.array([[1.0, 1.0, 0.0, 0.0, 0.0], 100.0 * np.asarray(EQ_WEIGHTS),
                  [0.0, par.relevance, 0.0, 0.0, 0.0]]) / M
    c1 = np.concatenate([[sp], G @ sc])
    c2 = np.zeros((4, 4))
    c2[0, 0] = sp
    c2[0, 1:] = c2[1:, 0] = G @ spc
    c2[1:, 1:] = G @ scc @ G.T
    ci, fi = np.array(CITATION_PART), np.array(FLAW_PART)
    s1[ci] = c1
    s2[np.ix_(ci, ci)] = c2
    s2[np.ix_(ci, fi)] = np.outer(c1, s1[fi]) / n
    s2[np.ix_(fi, ci)] = np.outer(s1[fi], c1) / n
    return s1[None], s2[None]


def _value_rows(M, par: Params) -> dict:
    """:func:`_values` of every row of ``M`` ([K, L]) at once: each metric [K, protocols],
    each shared value [K, 1]; the same floats as row by row (the same operations in the
    same order, elementwise; NaN where the row's function gives NaN)."""
    M = np.asarray(M, np.float64)
    K, h = len(M), par.human_accuracy
    wrong = M[:, 0]
    out = {k: np.zeros((K, len(PROTOCOLS))) for k in METRICS}
    with np.errstate(invalid="ignore", divide="ignore"):
        for i in range(len(PROTOCOLS)):
            right_final, esc, esc_w, lost, raised = (
                M[:, N_SHARED + PER * i + j] for j in range(PER))
            out["amp"][:, i] = np.where(wrong > 0, (wrong - esc_w * h) / wrong, np.nan)
            esc_r = esc - esc_w
            out["fwc"][:, i] = np.where(wrong < 1, ((1 - wrong) - esc_r * (1 - h))
                                        / (1 - wrong), np.nan)
            out["err_unescalated"][:, i] = np.where(esc < 1, (wrong - esc_w) / (1 - esc),
                                                    np.nan)
            out["erased"][:, i] = np.where(raised > 0, lost / raised, np.nan)
            out["acc"][:, i] = right_final
            out["escalated"][:, i] = esc
            out["cost"][:, i] = CALLS_PER_ITERATION * par.iterations + 1 + par.human_cost * esc
    for j, k in enumerate(("wrong", "residual", "perfect_case", "exact_share", "eq_score",
                           "caught_irrelevant")):
        out[k] = M[:, j:j + 1].copy()
    return out


def _values(m, par: Params) -> dict:
    out = {k: np.zeros(len(PROTOCOLS)) for k in METRICS}
    wrong = m[0]
    for i in range(len(PROTOCOLS)):
        right_final, esc, esc_w, lost, raised = m[N_SHARED + PER * i:N_SHARED + PER * (i + 1)]
        h = par.human_accuracy
        with np.errstate(invalid="ignore", divide="ignore"):
            out["amp"][i] = (wrong - esc_w * h) / wrong if wrong > 0 else np.nan
            esc_r = esc - esc_w
            out["fwc"][i] = ((1 - wrong) - esc_r * (1 - h)) / (1 - wrong) if wrong < 1 else np.nan
            out["err_unescalated"][i] = (wrong - esc_w) / (1 - esc) if esc < 1 else np.nan
            out["erased"][i] = lost / raised if raised > 0 else np.nan
        out["acc"][i] = right_final
        out["escalated"][i] = esc
        out["cost"][i] = CALLS_PER_ITERATION * par.iterations + 1 + par.human_cost * esc
    out["wrong"] = np.array([m[0]])
    out["residual"] = np.array([m[1]])
    out["perfect_case"] = np.array([m[2]])
    out["exact_share"] = np.array([m[3]])
    out["eq_score"] = np.array([m[4]])
    out["caught_irrelevant"] = np.array([m[5]])
    return out
