"""Error detection by debate (seed 001): ColMAD, CopMAD and a single detector, in seed
000's primitives.

* A response contains an error (omega = 1) with probability ``p_error``.  Two
  detectors flag it or not, with their own sensitivity and specificity; their
  correctness indicators are correlated with eta in each class (the correlated-
  signals model's eta and feasible range: a same-family pair near the maximum, a
  heterogeneous pair near 0).  If they agree, their verdict stands.
* If they disagree, exactly one is right, and they debate for R rounds.  Each round
  the right side finds an authentic, relevant quote with probability x
  (``evidence``); the wrong side's quote passes verification with probability
  pi_W = 1 - (1 - rho_fab (1 - v_q)) (1 - m (1 - v_r)): a fabricated quote that
  exact match misses, or an authentic quote misinterpreted (exact match passes it;
  only a relevance check v_r catches it: the portfolio model's misleading channel).
* CopMAD (competitive): each side wants its verdict endorsed; after R rounds the
  judge sees whether each side ever showed verified evidence and weighs rhetoric:
  Pr(flag) = sigma(lam (mu + kappa (e_flag - e_clear) + kappa_r (r_flag - r_clear))),
  the wrong side's rhetoric N(hack, r_sd^2) against the right side's N(0, r_sd^2)
  (debate hacking).  The judge is Rao-Blackwellised over rhetoric (quadrature).
* ColMAD (collaborative): both want the judge right.  Per round, a debater concedes
  to verified evidence (the right side's, or the wrong side's that passed), the
  judge decides (no rhetoric) if both show some, and with no verified evidence each
  concedes to the other's bare assertion with probability delta (degenerated
  collaboration).  Unresolved after R rounds: the judge decides without evidence.
* ``single``: detector 1 alone; ``oracle``: right whenever either detector is.

Metrics on the error class: precision, recall, F1, accuracy, Amp = Pr(the error is
ratified | error present) = 1 - recall, the hacking rate Pr(wrong final | the
detectors disagree), model calls per response (2 detectors, 2 per round, 1 judge).
Exact values enumerate (omega, correctness pair, evidence) and, for ColMAD, sum the
rounds' geometric series; rhetoric is integrated by adaptive quadrature (QUADPACK, with
its error bound reported per cell as ``quad_error``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import field, fields, make_dataclass

import numpy as np

from ...config import ConfigError, require_logit_judge
from ...lazy import lazy
from ...moments import estimates
from .config import ColmadConfig
from ...games import eta_range

special = lazy("scipy.special")

PROTOCOLS = ("single", "copmad", "colmad", "oracle")
#: Per-instance vector: per protocol (tp, fp, fn, calls, wrong on a disagreement),
#: the disagreement indicator, then per protocol (detector 1 wrong and the final
#: verdict wrong) and the indicator that detector 1 is wrong.
PER = 5
DIS = PER * len(PROTOCOLS)
FIRST = DIS + 1
L = FIRST + len(PROTOCOLS) + 1
METRICS = {
    "acc": "accuracy",
    "precision": "precision on the error class",
    "recall": "recall on the error class",
    "f1": "F1 on the error class",
    "amp": "Amp = Pr(error ratified | error present) = 1 - recall",
    "hacking": "Pr(wrong final | the detectors disagree)",
    "calls": "model calls per response",
    "error_reduction": "errors removed relative to detector 1 alone: 1 - (1 - acc) / (1 - acc_single)",
}


#: The two detectors' fields of the section, read as pairs (detector 1, detector 2).
_PAIRS = {"sens": ("sens_1", "sens_2"), "spec": ("spec_1", "spec_2")}
#: The judge's weights (the shared ``judge`` section's, with ``judge=logit``): their
#: defaults here are the ones the model's functions assume when called directly.
_JUDGE = {"lam": 1.0, "mu": 0.0, "kappa": 2.0}


def _pass_wrong(self) -> float:
    """pi_W: the wrong side's quote passes verification in a round."""
    return 1.0 - (1.0 - self.fabricate * (1.0 - self.verify)) * (
        1.0 - self.mislead * (1.0 - self.relevance))


def _params_fields() -> list:
    out = []
    for f in fields(ColmadConfig):
        pair = next((k for k, v in _PAIRS.items() if f.name == v[0]), None)
        if pair:
            d = {g.name: g.default for g in fields(ColmadConfig)}
            out.append((pair, tuple, field(default=tuple(d[n] for n in _PAIRS[pair]))))
        elif not any(f.name in v for v in _PAIRS.values()):
            out.append((f.name, f.type, field(default=f.default)))
    return out + [(k, "float", field(default=v)) for k, v in _JUDGE.items()]


#: The model's parameters as its functions read them: the ``colmad`` section's fields
#: (derived from :class:`ColmadConfig`, so declared once), the detectors' as pairs
#: ``sens`` and ``spec``, and the judge's ``lam``, ``mu``, ``kappa``; frozen.
Params = make_dataclass("Params", _params_fields(), frozen=True,
                        namespace={"pass_wrong": property(_pass_wrong),
                                   "__doc__": "Parameters of model=colmad (see the module)."})
Params.__module__ = __name__


def _cast(f, v):
    t = f.type if isinstance(f.type, str) else f.type.__name__
    return {"float": float, "int": int, "str": str}.get(t, lambda x: x)(v)


def params_of(cfg) -> Params:
    """:class:`Params` of a config (its ``colmad`` and ``judge`` sections)."""
    c, j = cfg.colmad, cfg.judge
    kw = {f.name: _cast(f, getattr(c, f.name)) for f in fields(ColmadConfig)}
    for k, (a, b) in _PAIRS.items():
        kw[k] = (kw.pop(a), kw.pop(b))
    kw.update({k: float(getattr(j, k)) for k in _JUDGE})
    return Params(**kw)


def pair_table(par: Params) -> np.ndarray:
    """Pr(c_1, c_2 | omega) as [omega][c_1][c_2] (c = 1: the detector is right)."""
    out = np.zeros((2, 2, 2))
    for w in (0, 1):
        a1 = par.sens[0] if w else par.spec[0]
        a2 = par.sens[1] if w else par.spec[1]
        lo, hi = eta_range(a1, a2)
        eta = par.eta * (hi if par.eta >= 0 else -lo) if par.eta_mode == "fraction" else par.eta
        p11 = a1 * a2 + eta * math.sqrt(a1 * (1 - a1) * a2 * (1 - a2))
        out[w, 1, 1] = p11
        out[w, 1, 0] = a1 - p11
        out[w, 0, 1] = a2 - p11
        out[w, 0, 0] = 1.0 - a1 - a2 + p11
    return np.clip(out, 0.0, 1.0)


def validate_colmad(cfg) -> None:
    c = cfg.colmad
    require_logit_judge(cfg, "colmad", " (the judge weighs evidence and, in CopMAD, "
                        "rhetoric: sigma(lam (mu + kappa (e_flag - e_clear) + kappa_r "
                        "(r_flag - r_clear))))")
    if cfg.judge.jury_size != 1:
        raise ConfigError("model=colmad has one judge: judge.jury_size must be 1")
    # Ranges and choices: declared in config.py; what depends on several fields here.
    eta = float(c.eta)
    if c.eta_mode != "fraction":
        for w, (a1, a2) in ((1, (c.sens_1, c.sens_2)), (0, (c.spec_1, c.spec_2))):
            lo, hi = eta_range(float(a1), float(a2))
            if not lo - 1e-12 <= eta <= hi + 1e-12:
                cls = "error" if w else "no-error"
                raise ConfigError(f"colmad.eta={eta!r} is infeasible in the {cls} class "
                                  f"(detector accuracies {a1:g}, {a2:g}): the feasible range "
                                  f"is [{lo:.4f}, {hi:.4f}]; eta_mode=fraction scales to it")


#: The rhetoric integral's range in standard-normal units (the density below 1e-300 beyond).
_Z_MAX = 38.5


def expect_logistic_normal(a: float, s: float) -> tuple[float, float]:
    """E[sigma(a + s Z)], Z ~ N(0, 1), and a bound on its error, by adaptive
    Gauss-Kronrod quadrature (scipy.integrate.quad) on z in [-38.5, 38.5].

    The logistic steps over a width of about 1 / |s| around its centre -a / s; the
    range is split at 0, at the centre and at 1, 4, 16 and 64 widths either side of
    it, so that every piece is smooth on its own scale and QUADPACK's error estimate
    is reliable (with the centre alone it understated a 4e-12 error at |s| = 175).

    Memoised on the exact bits of ``(a, s)`` (:func:`_expect_memo`): a judge table's
    eight integrals share their arguments (e_R - e_W takes three values; with mu = 0
    omega does not matter), and so do a grid's cells wherever the judge's fields and
    the rhetoric gap agree (the hack search's ends, each cell's table at its own
    gap): the same call returns the same floats, only fewer quadratures run.
    """
    a, s = float(a), float(s)
    return _expect_memo(a, s, math.copysign(1.0, a), math.copysign(1.0, s))


@functools.lru_cache(maxsize=1 << 14)
def _expect_memo(a: float, s: float, sign_a: float, sign_s: float) -> tuple[float, float]:
    """:func:`expect_logistic_normal` computed; the signs keep -0.0 apart from 0.0 (equal
    as keys) although they give the same integral."""
    return _expect(a, s)


def _expect(a: float, s: float) -> tuple[float, float]:
    """:func:`expect_logistic_normal` by QUADPACK, without the memo."""
    from scipy import integrate

    if s == 0:
        return float(special.expit(a)), 0.0
    c = -a / s
    pts = {0.0} | {c + k / abs(s) for k in (0.0, -1.0, 1.0, -4.0, 4.0, -16.0, 16.0,
                                            -64.0, 64.0)}
    pts = sorted(p for p in pts if -_Z_MAX < p < _Z_MAX)
    expit, exp = special.expit, np.exp
    val, err = integrate.quad(lambda z: expit(a + s * z) * exp(-0.5 * z * z), -_Z_MAX,
                              _Z_MAX, points=pts, epsabs=1e-14, epsrel=1e-13, limit=500)
    cst = 1.0 / math.sqrt(2.0 * math.pi)
    return float(val * cst), float(err * cst)


def judge_right(par: Params, errors: list | None = None) -> np.ndarray:
    """CopMAD judge: Pr(the right side is endorsed) as [omega][e_R][e_W], rhetoric
    r_R - r_W ~ N(-hack, 2 r_sd^2) integrated by adaptive quadrature
    (:func:`expect_logistic_normal`, accurate for any steepness lam kappa_r r_sd);
    each integral's error bound is appended to ``errors`` if given.  The kernel reads
    this table (the judge Rao-Blackwellised over rhetoric); the tests check the table
    against 30-digit integration."""
    out = np.zeros((2, 2, 2))
    sd = math.sqrt(2.0) * par.r_sd
    for om in (0, 1):
        sgn = 1.0 if om else -1.0  # the right side flags iff the response has an error
        for eR in (0, 1):
            for eW in (0, 1):
                a = par.lam * (sgn * par.mu + par.kappa * (eR - eW) - par.kappa_r * par.hack)
                v, e = expect_logistic_normal(a, par.lam * par.kappa_r * sd)
                out[om, eR, eW] = v
                if errors is not None:
                    errors.append(e)
    return out


def quad_error(par: Params) -> float:
    """The largest error bound of the CopMAD judge table's quadratures (QUADPACK)."""
    errs: list = []
    judge_right(par, errs)
    return float(max(errs))


def tie_right(par: Params, omega: int) -> float:
    """Collaborative judge with no rhetoric and equal evidence: Pr(right endorsed)."""
    return float(special.expit(par.lam * (par.mu if omega else -par.mu)))


def conditional(par: Params) -> tuple:
    """Per protocol, Pr(the final verdict is right | omega, c_1, c_2) and the expected
    model calls, each as ``{protocol: array [omega][c_1][c_2]}`` (c = 1: the detector
    is right; the detectors debate only when c_1 != c_2)."""
    T = judge_right(par)
    x, pw, R, dl = par.evidence, par.pass_wrong, par.rounds, par.delta
    xR, wR = 1 - (1 - x) ** R, 1 - (1 - pw) ** R
    # Per round: only the right side verified (a), both (c: the judge), neither (d: bare
    # assertions); only the wrong side verified, pw (1 - x), ends the debate wrong.
    a, c, d = x * (1 - pw), x * pw, (1 - x) * (1 - pw)
    cont = d * ((1 - dl) ** 2 + dl ** 2)
    geo = sum(cont ** r for r in range(R))
    right = {p: np.zeros((2, 2, 2)) for p in PROTOCOLS}
    calls = {p: np.zeros((2, 2, 2)) for p in PROTOCOLS}
    for om in (0, 1):
        q = tie_right(par, om)
        cop = sum((xR if eR else 1 - xR) * (wR if eW else 1 - wR) * T[om, eR, eW]
                  for eR in (0, 1) for eW in (0, 1))
        col = (a + c * q + d * dl * (1 - dl)) * geo + cont ** R * q
        col_calls = 2 + 2 * geo + c * geo + cont ** R
        for c1 in (0, 1):
            for c2 in (0, 1):
                dis = c1 != c2
                for prot, r, n in (
                        ("single", float(c1), 1.0),
                        ("copmad", cop if dis else float(c1), 2.0 + (2 * R + 1 if dis else 0.0)),
                        ("colmad", col if dis else float(c1), col_calls if dis else 2.0),
                        ("oracle", float(c1 or c2), 2.0)):
                    right[prot][om, c1, c2] = r
                    calls[prot][om, c1, c2] = n
    return right, calls


def exact_means(par: Params) -> np.ndarray:
    """The exact mean of the per-instance vector (tp, fp, fn, calls, wrong on a
    disagreement per protocol; the disagreement indicator; detector 1 wrong and the
    final verdict wrong per protocol; detector 1 wrong)."""
    tab = pair_table(par)
    right, calls = conditional(par)
    m = np.zeros(L)
    for om in (0, 1):
        pom = par.p_error if om else 1 - par.p_error
        for c1 in (0, 1):
            for c2 in (0, 1):
                pr = pom * tab[om, c1, c2]
                if pr == 0:
                    continue
                dis = c1 != c2
                for p, prot in enumerate(PROTOCOLS):
                    r = right[prot][om, c1, c2]
                    v = m[p * PER:(p + 1) * PER]
                    v += pr * np.array([om * r, (1 - om) * (1 - r), om * (1 - r),
                                        calls[prot][om, c1, c2], (1 - r) if dis else 0.0])
                    m[FIRST + p] += pr * (1 - c1) * (1 - r)
                m[DIS] += pr * dis
                m[-1] += pr * (1 - c1)
    return m


def first_values(m: np.ndarray) -> dict:
    """Detector 1 read as the model under oversight, per protocol, from the mean
    vector: ``amp`` = Pr(final wrong | detector 1 wrong) (seed 000's Amp with
    detector 1's verdict as the protagonist's answer), ``fwc`` = Pr(final right |
    detector 1 right), ``acc`` and ``calls``."""
    n = len(PROTOCOLS)
    w1 = m[-1]
    out = {k: np.zeros(n) for k in ("amp", "fwc", "acc", "calls")}
    for p in range(n):
        tp, fp, fn, calls, _ = m[p * PER:(p + 1) * PER]
        both = m[FIRST + p]  # detector 1 wrong and the final verdict wrong
        with np.errstate(invalid="ignore", divide="ignore"):
            out["amp"][p] = both / w1 if w1 > 0 else np.nan
            out["fwc"][p] = 1.0 - (fp + fn - both) / (1.0 - w1) if w1 < 1 else np.nan
        out["acc"][p] = 1.0 - fp - fn
        out["calls"][p] = calls
    return out


def given_first(par: Params) -> dict:
    """:func:`first_values` in exact form."""
    return first_values(exact_means(par))


def metric_values(m: np.ndarray) -> dict:
    """Every metric (per protocol) as a function of the mean vector, and the ColMAD /
    CopMAD F1 ratio minus 1."""
    out = {k: np.zeros(len(PROTOCOLS)) for k in METRICS}
    for p in range(len(PROTOCOLS)):
        tp, fp, fn, calls, dw = m[p * PER:(p + 1) * PER]
        with np.errstate(invalid="ignore", divide="ignore"):
            out["precision"][p] = tp / (tp + fp) if tp + fp > 0 else np.nan
            out["recall"][p] = tp / (tp + fn) if tp + fn > 0 else np.nan
            out["f1"][p] = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn > 0 else np.nan
            out["amp"][p] = fn / (tp + fn) if tp + fn > 0 else np.nan
            out["hacking"][p] = dw / m[DIS] if m[DIS] > 0 else np.nan
        out["acc"][p] = 1.0 - fp - fn
        out["calls"][p] = calls
    f = out["f1"]
    out["f1_gain"] = np.array([f[2] / f[1] - 1.0 if f[1] > 0 else np.nan])
    err0 = out["acc"][0]
    with np.errstate(invalid="ignore", divide="ignore"):
        out["error_reduction"] = (1.0 - (1.0 - out["acc"]) / (1.0 - err0)
                                  if err0 < 1 else np.full(len(PROTOCOLS), np.nan))
    out["disagree"] = np.array([m[DIS]])
    return out


def metric_rows(m: np.ndarray) -> dict:
    """:func:`metric_values` of every row of ``m`` ([cells, L]) at once: each metric as
    [cells, protocols] (``f1_gain``, ``disagree`` as [cells, 1]), the same floats as
    the function row by row (the same operations in the same order, elementwise)."""
    m = np.asarray(m, np.float64)
    n_p = len(PROTOCOLS)
    v = m[:, :DIS].reshape(len(m), n_p, PER)
    tp, fp, fn, calls, dw = (v[..., i] for i in range(PER))
    dis = m[:, DIS:DIS + 1]

    def ratio(num, den, ok):  # num / den where ok, NaN elsewhere
        return np.where(ok, num / np.where(ok, den, 1.0), np.nan)

    with np.errstate(invalid="ignore", divide="ignore"):
        out = {
            "acc": 1.0 - fp - fn,
            "precision": ratio(tp, tp + fp, tp + fp > 0),
            "recall": ratio(tp, tp + fn, tp + fn > 0),
            "f1": ratio(2 * tp, 2 * tp + fp + fn, tp + fp + fn > 0),
            "amp": ratio(fn, tp + fn, tp + fn > 0),
            "hacking": ratio(dw, np.broadcast_to(dis, dw.shape), np.broadcast_to(dis > 0,
                                                                              dw.shape)),
            "calls": calls.copy(),
        }
        f = out["f1"]
        out["f1_gain"] = ratio(f[:, 2:3], f[:, 1:2], f[:, 1:2] > 0) - 1.0
        err0 = out["acc"][:, :1]
        out["error_reduction"] = np.where(err0 < 1, 1.0 - (1.0 - out["acc"]) / np.where(
            err0 < 1, 1.0 - err0, 1.0), np.nan)
    out["disagree"] = dis.copy()
    return {k: out[k] for k in (*METRICS, "f1_gain", "disagree")}


def class_vectors(par: Params) -> tuple[np.ndarray, np.ndarray]:
    """The per-response vector of every kernel class (``kernels.colmad``'s layout) as
    ``A + used * b``: ``A`` [classes, L], ``b`` [L] (ColMAD's calls, 2 per round used)."""
    from ...kernels.colmad import N_CLASSES, N_HEAD, RIGHT, TIE, WRONG

    T = judge_right(par)
    tie = (tie_right(par, 0), tie_right(par, 1))
    R = int(par.rounds)
    A = np.zeros((N_CLASSES, L))
    b = np.zeros(L)
    b[2 * PER + 3] = 2.0
    for k in range(N_CLASSES):
        if k < N_HEAD:
            om, c1, c2 = k >> 2, (k >> 1) & 1, k & 1
            if c1 != c2:
                continue
            right = (float(c1),) * 3 + (float(c1 | c2),)
            calls = (1.0, 2.0, 2.0, 2.0)
        else:
            h, state = divmod(k - N_HEAD, 16)
            om, c1 = h >> 1, h & 1
            c2 = 1 - c1
            eR, eW, out = state & 1, (state >> 1) & 1, state >> 2
            if out not in (RIGHT, WRONG, TIE):
                continue
            col = 1.0 if out == RIGHT else 0.0 if out == WRONG else tie[om]
            right = (float(c1), T[om, eR, eW], col, 1.0)
            # ColMAD: 2 detectors, 2 per round used (in b), 1 judge if it decided.
            calls = (1.0, 2.0 + 2.0 * R + 1.0, 2.0 + (1.0 if out == TIE else 0.0), 2.0)
        dis = c1 != c2
        y = A[k]
        for p in range(len(PROTOCOLS)):
            rr = right[p]
            y[p * PER:(p + 1) * PER] = (om * rr, (1 - om) * (1.0 - rr), om * (1.0 - rr),
                                        calls[p], (1.0 - rr) if dis else 0.0)
            y[FIRST + p] = (1.0 - c1) * (1.0 - rr)
        y[DIS] = 1.0 if dis else 0.0
        y[L - 1] = 1.0 - c1
    return A, b


def class_moments(par: Params, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sums of the per-response vector and of its outer product, (1, L) and
    (1, L, L), from the kernel's per-class counts and sums of rounds used (and squares)."""
    A, b = class_vectors(par)
    n, u, u2 = (np.asarray(c, np.float64) for c in counts)
    s1 = A.T @ n + b * u.sum()
    au = A.T @ u
    s2 = (A.T * n) @ A + np.outer(au, b) + np.outer(b, au) + np.outer(b, b) * u2.sum()
    return s1[None], s2[None]


def kernel_args(par: Params) -> tuple:
    """The kernel's thresholds: p_error's; per omega the cumulative correctness-pair
    table's (uint64[2, 3]); x's, pi_W's and delta's."""
    from ...kernels.colmad import threshold

    pair = pair_table(par)
    pt = np.zeros((2, 3), np.uint64)
    for om in (0, 1):
        # the same float sums as the cumulative table the per-response test reads
        t11 = pair[om, 1, 1]
        t10 = t11 + pair[om, 1, 0]
        t01 = t10 + pair[om, 0, 1]
        pt[om] = [threshold(t11), threshold(t10), threshold(t01)]
    return (np.uint64(threshold(par.p_error)), pt, np.uint64(threshold(par.evidence)),
            np.uint64(threshold(par.pass_wrong)), np.uint64(threshold(par.delta)))


def simulate(par: Params, n_instances: int, seed: int, n_threads: int = 0,
             values=None, device: str = "cpu") -> dict:
    """Metrics by the compiled kernel: ``{metric: (values, se)}`` of
    :func:`metric_values` (or of ``values``, e.g. :func:`first_values`).  ``device``:
    ``run.device``; the GPU gives the same counts (:mod:`kernels.gpu.colmad`)."""
    import numba as nb

    from ...kernels.colmad import colmad_counts
    from ...kernels.rng import split_seed
    from ...runner import device_of, kernel_threads

    k0, k1 = split_seed(seed)
    if device_of(device) == "cuda":
        from ...kernels.gpu.colmad import colmad_counts as gpu_counts

        counts = gpu_counts(int(n_instances), k0, k1, *kernel_args(par), int(par.rounds))
    else:
        with kernel_threads(n_threads):
            counts = colmad_counts(int(n_instances), k0, k1, *kernel_args(par),
                                   int(par.rounds), 4 * nb.get_num_threads())
    s1, s2 = class_moments(par, counts)
    # the delta method's shifted means at once (metric_rows: the same floats)
    return estimates(values or metric_values, s1, s2, float(n_instances),
                     rows=None if values else metric_rows)


def hack_for_gain(par: Params, gain: float) -> float:
    """The debate-hacking rhetoric gap at which ColMAD's F1 exceeds CopMAD's by ``gain``
    (exact; NaN when no gap in [0, 10] reaches it)."""
    from dataclasses import replace

    from scipy.optimize import brentq

    g = lambda h: metric_values(exact_means(replace(par, hack=h)))["f1_gain"][0] - gain  # noqa
    lo, hi = g(0.0), g(10.0)
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo * hi > 0:
        return math.nan
    return float(brentq(g, 0.0, 10.0, xtol=1e-10))
