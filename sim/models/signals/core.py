"""Correlated signals and shared blind spots (seed 000, section 5).

The protagonist P and the antagonist A each hold a private signal about omega,
Pr(s_P = omega) = p_P, Pr(s_A = omega) = p_A, with correlation eta between the
correctness indicators 1{s_P = omega} and 1{s_A = omega} (or a full table
Pr(s_P, s_A | omega)).  P argues a = s_P; A is assigned 1 - a and *believes* it
when s_A = 1 - a.  Evidence availability depends on whether the stance argued is
true and whether its sender believes it:

    avail[true, believed] = 1,       avail[true, not believed] = phi,
    avail[false, believed] = rho,    avail[false, not believed] = rho_unbelieved (= rho),

(the seed's feasibility asymmetry plus a search efficacy phi), or any table.

A sender's type is what it knows when it decides to present: P knows s_P (= a)
and t_P; A knows a, s_A and t_A.  With ``v`` the probability that the judge
checks a presented false-side artifact and rejects it (judge effort,
:mod:`sim.effort`; 0 otherwise), the evidence the judge sees is
e_i = t_i x_i(type) accepted_i.  Everything is computed from the 32-class
distribution of (omega, s_P, s_A, t_P, t_A), exact or counted by
:mod:`kernels.correlated`, with presentation, checks and the judge integrated
out exactly.  The debate game splits into two independent games, one per value
of s_P: A sees a = s_P, so A's types only ever meet the P type with that signal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...config import ConfigError


# Class coordinates over the 32 classes (kernels.correlated).
_K = np.arange(32)
OM = (_K >> 4) & 1
SP = (_K >> 3) & 1
SA = (_K >> 2) & 1
TP = (_K >> 1) & 1
TA = _K & 1
P_TRUE = (SP == OM).astype(int)  # P's stance a = s_P is true
A_TRUE = 1 - P_TRUE
A_BELIEVES = (SA != SP).astype(int)


from .config import SignalsConfig  # noqa: E402,F401  (re-exported)
from ...games import eta_range  # noqa: E402,F401  (re-exported)


# ------------------------------------------------------------------ signal structure
def resolved_eta(s: SignalsConfig, p_P: float, p_A: float) -> float:
    lo, hi = eta_range(p_P, p_A)
    if s.eta_mode == "fraction":
        return s.eta * (hi if s.eta >= 0 else -lo)
    return float(s.eta)


def accuracies(s: SignalsConfig, p: float) -> tuple[float, float]:
    p_P = p if s.p_P is None else float(s.p_P)
    p_A = p_P if s.p_A is None else float(s.p_A)
    return p_P, p_A


def joint_table(s: SignalsConfig, p: float) -> np.ndarray:
    """Pr(s_P, s_A | omega) as an array [omega, s_P, s_A]."""
    if s.joint is not None:
        return np.asarray(s.joint, dtype=float)
    p_P, p_A = accuracies(s, p)
    eta = resolved_eta(s, p_P, p_A)
    both = p_P * p_A + eta * math.sqrt(p_P * (1 - p_P) * p_A * (1 - p_A))
    # Pr(correctness of P, correctness of A), then placed by omega.
    c = np.array([[1 - p_P - p_A + both, p_A - both], [p_P - both, both]])
    c = np.clip(c, 0.0, 1.0)  # rounding at the Frechet bounds
    out = np.zeros((2, 2, 2))
    for om in (0, 1):
        for cp in (0, 1):
            for ca in (0, 1):
                sp = om if cp else 1 - om
                sa = om if ca else 1 - om
                out[om, sp, sa] = c[cp, ca]
    return out


def avail_table(s: SignalsConfig, rho: float) -> np.ndarray:
    """Availability [stance true?  0 = true, 1 = false][0 = believed, 1 = not]."""
    if s.avail is not None:
        return np.asarray(s.avail, dtype=float)
    ru = rho if s.rho_unbelieved is None else float(s.rho_unbelieved)
    return np.array([[1.0, float(s.phi)], [float(rho), ru]])


def validate_signals(s: SignalsConfig, p: float, rho: float, stance: str) -> None:
    """Range checks naming the field; an infeasible eta names the feasible range."""
    if stance != "signal":
        raise ConfigError("signals: the correlated-signals model needs model.stance=signal "
                          f"(a = s_P), got {stance!r}")
    eta = float(s.eta)  # ranges and choices: declared in config.py
    if s.joint is not None:
        t = np.asarray(s.joint, dtype=float) if _is_numeric(s.joint) else None
        if t is None or t.shape != (2, 2, 2):
            raise ConfigError("signals.joint must be a 2 x 2 x 2 table [omega][s_P][s_A] of numbers")
        if np.any(t < 0) or np.any(t > 1):
            raise ConfigError("signals.joint entries must lie in [0, 1]")
        for om in (0, 1):
            tot = float(t[om].sum())
            if abs(tot - 1) > 1e-9:
                raise ConfigError(f"signals.joint[{om}] (Pr(s_P, s_A | omega = {om})) must sum "
                                  f"to 1, got {tot:.12g}")
    else:
        p_P, p_A = accuracies(s, p)
        if s.eta_mode != "fraction":
            lo, hi = eta_range(p_P, p_A)
            if not lo - 1e-12 <= eta <= hi + 1e-12:
                raise ConfigError(
                    f"signals.eta={eta!r} is infeasible for p_P={p_P:g}, p_A={p_A:g}: the "
                    f"correlation of the correctness indicators must lie in [{lo:.6g}, {hi:.6g}]"
                    " (or use signals.eta_mode=fraction)")
    if s.avail is not None:
        t = np.asarray(s.avail, dtype=float) if _is_numeric(s.avail) else None
        if t is None or t.shape != (2, 2):
            raise ConfigError("signals.avail must be a 2 x 2 table [[true & believed, true & not "
                              "believed], [false & believed, false & not believed]]")
        if np.any(t < 0) or np.any(t > 1):
            raise ConfigError("signals.avail entries must lie in [0, 1]")


def _is_numeric(x) -> bool:
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        return False
    return bool(np.all(np.isfinite(a)))


# ------------------------------------------------------------------ class distribution
def class_probabilities(pi, joint, avail) -> np.ndarray:
    """Exact probabilities of the 32 classes, ``[C, 32]`` from ``pi`` [C], ``joint``
    [C, 2, 2, 2] and ``avail`` [C, 2, 2]."""
    pi = np.asarray(pi, float)[:, None]
    joint = np.asarray(joint, float)
    avail = np.asarray(avail, float)
    pr_om = np.where(OM == 1, pi, 1 - pi)
    pr_sig = joint[:, OM, SP, SA]
    ap = avail[:, 1 - P_TRUE, 0]
    aa = avail[:, 1 - A_TRUE, 1 - A_BELIEVES]
    pr_tp = np.where(TP == 1, ap, 1 - ap)
    pr_ta = np.where(TA == 1, aa, 1 - aa)
    return pr_om * pr_sig * pr_tp * pr_ta


def thresholds(pi, joint, avail) -> np.ndarray:
    """uint64[C, 11] kernel thresholds (kernels.correlated layout)."""
    from antiamp.kernels.rng import bernoulli_thresholds

    pi = np.asarray(pi, float)
    joint = np.asarray(joint, float)
    avail = np.asarray(avail, float)
    C = len(pi)
    # each omega's joint table flattened (00, 01, 10, 11), its first three cumulative sums
    cum = np.minimum(np.cumsum(joint.reshape(C, 2, -1), axis=-1)[..., :3], 1.0)
    rows = np.concatenate([pi.reshape(C, 1), cum.reshape(C, 6), avail.reshape(C, -1)], axis=1)
    return bernoulli_thresholds(rows)


def class_counts(pi, joint, avail, n: int, seed: int, n_threads: int = 0,
                 progress: bool | None = False, chunk_size: int = 1 << 24,
                 device: str = "cpu") -> np.ndarray:
    """Simulated class counts ``int64[C, 32]`` of C cells on common random numbers
    (``device``: ``run.device``; the GPU gives the same counts)."""
    from antiamp.runner import tqdm_class

    tqdm = tqdm_class()

    from antiamp.kernels import correlated as kc
    from antiamp.kernels.rng import split_seed

    from ...runner import device_of, numba_threads

    thr = thresholds(pi, joint, avail)
    # Cells with the same kernel inputs share one pass (common random numbers: the
    # same counts); an axis over the judge or c_e then costs one kernel cell.
    thr, inverse = np.unique(thr, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    k0, k1 = split_seed(seed)
    total = np.zeros((thr.shape[0], kc.N_CLASSES), np.int64)
    from antiamp.runner import interactive

    disable = (not interactive()) if progress is None else (not progress)
    if device_of(device) == "cuda":
        from antiamp.kernels.gpu import correlated as kc_gpu

        with tqdm(total=n, unit="inst", unit_scale=True, desc="simulating signals",
                  disable=disable, leave=False) as bar:
            total = kc_gpu.signal_class_counts(thr, 0, n, k0, k1, np.uint64(kc.STREAM),
                                               on_step=None if disable else bar.update)
        return total[inverse]
    with numba_threads(n_threads) as nt, tqdm(total=n, unit="inst", unit_scale=True,
                                              desc="simulating signals", disable=disable,
                                              leave=False) as bar:
        done = 0
        while done < n:
            m = min(chunk_size, n - done)
            if len(thr) == 1:  # the fused single-cell kernel: same draws, same classes
                total[0] += kc.signal_class_counts_one(thr[0], done, m, k0, k1,
                                                       np.uint64(kc.STREAM), 4 * nt)
            else:
                total += kc.signal_class_counts(thr, done, m, k0, k1, np.uint64(kc.STREAM), 4 * nt)
            done += m
            bar.update(m)
    return total[inverse]


# ------------------------------------------------------------------ profiles and outcomes
@dataclass
class Profile:
    """Presentation probabilities given available evidence, per type.

    ``x_Pc`` [C, 2] (consultancy, by s_P), ``x_P`` [C, 2] (debate, by s_P),
    ``x_A`` [C, 2, 2] (debate, by s_P = a and s_A).
    """

    x_Pc: np.ndarray
    x_P: np.ndarray
    x_A: np.ndarray


def _acceptance(v):
    """Pr(a presented artifact is accepted) per class, for P and for A ([C, 32])."""
    v = np.asarray(v, float)[:, None]
    acc_P = np.where(P_TRUE == 1, 1.0, 1 - v)
    acc_A = np.where(A_TRUE == 1, 1.0, 1 - v)
    return acc_P, acc_A


def class_tables(J_d):
    """Per-class debate tables J00, J01, J10, J11 as [C, 32] arrays.

    ``J_d`` is [C, 2, 2] (one table) or [C, 2, 2, 2] indexed [belief of A (0 believes,
    1 does not), e_P, e_A] when the judge's table depends on whether the antagonist
    believes its stance (rhetoric, :func:`rhetoric_tables`).
    """
    J_d = np.asarray(J_d, float)
    if J_d.ndim == 3:
        return tuple(np.broadcast_to(J_d[:, i, j][:, None], (J_d.shape[0], 32))
                     for i, j in ((0, 0), (0, 1), (1, 0), (1, 1)))
    b = 1 - A_BELIEVES
    return tuple(J_d[:, b, i, j] for i, j in ((0, 0), (0, 1), (1, 0), (1, 1)))


def rhetoric_tables(lam, mu, kappa, kappa_r, r_gap, r_sd, nodes=96):
    """Tables of a logit judge that also weighs rhetoric, integrated over it.

    Rhetoric r_i ~ N(0, r_sd) for a sender who believes its stance and
    N(-r_gap, r_sd) for one who does not (the protagonist always believes), judged by
    sigma(lam (mu + kappa (e_P - e_A) + kappa_r (r_P - r_A))).  Returns (J_c [2],
    J_d [2 belief of A, 2, 2]) by Gauss-Hermite quadrature.
    """
    from scipy import special

    x, w = np.polynomial.hermite.hermgauss(nodes)
    e = np.arange(2.0)

    def expect(base, mean, var):
        z = base[..., None] + kappa_r * (mean + np.sqrt(2 * var) * x)
        return (w * special.expit(lam * z)).sum(-1) / np.sqrt(np.pi)

    J_c = expect(mu + kappa * e, 0.0, r_sd ** 2)
    diff = mu + kappa * (e[:, None] - e[None, :])
    J_d = np.stack([expect(diff, 0.0, 2 * r_sd ** 2), expect(diff, r_gap, 2 * r_sd ** 2)])
    return J_c, J_d


def evidence_probs(prof: Profile, v):
    """Pr(e_P = 1) in consultancy and debate and Pr(e_A = 1), per class ([C, 32] each)."""
    acc_P, acc_A = _acceptance(v)
    q_c = TP * prof.x_Pc[:, SP] * acc_P
    q_P = TP * prof.x_P[:, SP] * acc_P
    q_A = TA * prof.x_A[:, SP, SA] * acc_A
    return q_c, q_P, q_A


def endorsement(prof: Profile, J_c, J_d, v):
    """Pr(y = a | class) under consultancy and debate ([C, 32] each)."""
    J_c = np.asarray(J_c, float)
    q_c, q_P, q_A = evidence_probs(prof, v)
    g_c = (1 - q_c) * J_c[:, :1] + q_c * J_c[:, 1:]
    J00, J01, J10, J11 = class_tables(J_d)
    g_d = ((1 - q_P) * ((1 - q_A) * J00 + q_A * J01) + q_P * ((1 - q_A) * J10 + q_A * J11))
    return g_c, g_d, (q_c, q_P, q_A)


def accuracy(weights, prof: Profile, J_c, J_d, v, protocol: int):
    """Pr(y = omega) per row for one protocol (0 consult, 1 debate): the judge's
    objective, without the standard-error work of :func:`outcomes`."""
    w = np.asarray(weights, float)
    acc_P, acc_A = _acceptance(v)
    if protocol == 0:  # only this protocol's endorsement (as in :func:`endorsement`)
        q_c = TP * prof.x_Pc[:, SP] * acc_P
        J_c = np.asarray(J_c, float)
        g = (1 - q_c) * J_c[:, :1] + q_c * J_c[:, 1:]
    else:
        q_P = TP * prof.x_P[:, SP] * acc_P
        q_A = TA * prof.x_A[:, SP, SA] * acc_A
        J00, J01, J10, J11 = class_tables(J_d)
        g = (1 - q_P) * ((1 - q_A) * J00 + q_A * J01) + q_P * ((1 - q_A) * J10 + q_A * J11)
    accurate = np.where(P_TRUE == 1, g, 1 - g)
    return (w * accurate).sum(-1) / w.sum(-1)


def accuracy_terms(weights, J_c, J_d, v, protocol: int):
    """:func:`accuracy` as a polynomial in the profile: ``a0 + monomials(prof) @ a``.

    Pr(y = a | class) is affine in P's and in A's evidence probabilities, each the
    presentation probability of the class's type times a per-class constant; so
    accuracy is multilinear in the profile, with coefficients (per row: ``a0``
    [C], ``a`` [C, K]) that depend on the tables and the weights only.  Lets the
    judge's utility be evaluated for many profiles at the same tables at the cost
    of K products (K = 2 in consultancy, 10 in debate; see :func:`monomials`).
    """
    w = np.asarray(weights, float)
    w = w / w.sum(-1, keepdims=True)
    right = P_TRUE == 1
    sw = np.where(right, w, -w)  # accuracy is g where P is right, 1 - g elsewhere
    acc_P, acc_A = _acceptance(v)
    aP = TP * acc_P
    if protocol == 0:
        J_c = np.asarray(J_c, float)
        a0 = (w * ~right).sum(-1) + (sw * J_c[:, :1]).sum(-1)
        d = sw * aP * (J_c[:, 1:] - J_c[:, :1])
        return a0, np.stack([(d * (SP == s)).sum(-1) for s in (0, 1)], -1)
    J00, J01, J10, J11 = class_tables(J_d)
    aA = TA * acc_A
    a0 = (w * ~right).sum(-1) + (sw * J00).sum(-1)
    dP, dA = sw * aP * (J10 - J00), sw * aA * (J01 - J00)
    dPA = sw * aP * aA * (J11 - J01 - J10 + J00)
    cols = [(dP * (SP == s)).sum(-1) for s in (0, 1)]
    cols += [(dA * ((SP == s) & (SA == r))).sum(-1) for s in (0, 1) for r in (0, 1)]
    cols += [(dPA * ((SP == s) & (SA == r))).sum(-1) for s in (0, 1) for r in (0, 1)]
    return a0, np.stack(cols, -1)


def monomials(prof: Profile, protocol: int):
    """The profile's monomials that :func:`accuracy_terms` multiplies ([N, K])."""
    if protocol == 0:
        return prof.x_Pc
    x_A = prof.x_A.reshape(-1, 4)
    return np.concatenate([prof.x_P, x_A, np.repeat(prof.x_P, 2, axis=1) * x_A], axis=1)


OUTCOME_METRICS = {
    "amp": ("mistake amplification", "Pr(y = a | a != omega)"),
    "acc": ("accuracy", "Pr(y = omega)"),
    "fwc": ("follow-when-correct", "Pr(y = a | a = omega)"),
    "endorse": ("endorsement rate", "Pr(y = a)"),
    "tie_rate": ("evidence tie rate", "Pr(e_P = e_A)"),
    "evidence_P": ("protagonist evidence rate", "Pr(e_P = 1)"),
    "evidence_A": ("antagonist evidence rate", "Pr(e_A = 1)"),
    "counter_signal": ("antagonist evidence when the protagonist is wrong",
                       "Pr(e_A = 1 | a != omega)"),
    "welfare": ("principal welfare U_D",
                "-alpha Pr(y != omega) - beta Pr(y = a, a != omega) - C(protocol)"),
}


def endorsement_of(prof: Profile, J_c, J_d, v, protocol: int):
    """:func:`endorsement` of one protocol (0 consult, 1 debate): ``(g, q_P, q_A)``,
    Pr(y = a | class) and the evidence probabilities ([C, 32] each; consultancy's
    q_A zeros), the same values as :func:`endorsement`'s for that protocol."""
    acc_P, acc_A = _acceptance(v)
    if protocol == 0:
        J_c = np.asarray(J_c, float)
        q_c = TP * prof.x_Pc[:, SP] * acc_P
        return (1 - q_c) * J_c[:, :1] + q_c * J_c[:, 1:], q_c, np.zeros_like(q_c)
    q_P = TP * prof.x_P[:, SP] * acc_P
    q_A = TA * prof.x_A[:, SP, SA] * acc_A
    J00, J01, J10, J11 = class_tables(J_d)
    g = ((1 - q_P) * ((1 - q_A) * J00 + q_A * J01) + q_P * ((1 - q_A) * J10 + q_A * J11))
    return g, q_P, q_A


def outcomes(weights, prof: Profile, J_c, J_d, v, welfare=(1.0, 1.0, 0.0), n=None,
             se: bool = True, protocol=None):
    """Metrics ``{name: (value [C, 2], se [C, 2])}`` (protocol axis: consult, debate).

    ``weights`` are class counts (``n=None``: standard errors of the simulation) or
    exact probabilities (``n``: the standard error a run of n instances will have);
    ``se=False``: the values alone (standard errors NaN), what exact outcomes at
    equilibria need.  ``protocol`` ([C] of 0 and 1, optional): each row's values at
    its own protocol alone (the other's NaN), what a row solved for one protocol
    needs: half the work, the same values.  Each mask's weights are computed once
    (:func:`antiamp.metrics.masked_weights`), not once a metric.
    """
    from ...metrics import masked_weights, weighted

    alpha, beta, delta_c = (np.asarray(w, float)[..., None] for w in welfare)
    right = P_TRUE == 1
    every = np.ones(32, bool)
    wrong = ~right
    out: dict = {}
    sels = ((None, None) if protocol is None else
            tuple(np.flatnonzero(np.asarray(protocol) == k) for k in (0, 1)))
    masked: dict = {}  # the three masks' weights (shared by both protocols without rows)
    for k, sel in enumerate(sels):
        if sel is None:
            w, pr, jc, jd, vk, al, be, dc = weights, prof, J_c, J_d, v, alpha, beta, delta_c
        elif not len(sel):
            continue
        else:
            masked = {}
            w = np.asarray(weights)[sel]
            pr = Profile(prof.x_Pc[sel], prof.x_P[sel], prof.x_A[sel])
            jc, jd, vk = (np.asarray(a)[sel] for a in (J_c, J_d, v))
            al, be, dc = (np.broadcast_to(a, (len(protocol), 1))[sel]  # scalars or rows
                          for a in (alpha, beta, delta_c))
        g, qp, qa = endorsement_of(pr, jc, jd, vk, k)
        cost = dc if k else 0.0
        accurate = np.where(right, g, 1 - g)
        vals = {
            "amp": (g, wrong), "acc": (accurate, every), "fwc": (g, right),
            "endorse": (g, every), "tie_rate": (qp * qa + (1 - qp) * (1 - qa), every),
            "evidence_P": (qp, every), "evidence_A": (qa, every),
            "counter_signal": (qa, wrong),
            "welfare": (-al * (1 - accurate) - be * np.where(right, 0.0, g) - cost, every),
        }
        for name, (val, mask) in vals.items():
            if not k and name in NO_ANTAGONIST:
                continue  # NaN in consultancy (below)
            if id(mask) not in masked:
                masked[id(mask)] = masked_weights(w, mask)
            m, s = weighted(w, val, mask, n, se=se, masked=masked[id(mask)])
            if name not in out:
                shape = m.shape if sel is None else (len(protocol),) + m.shape[1:]
                out[name] = ((np.empty(shape + (2,)), np.empty(shape + (2,)))
                             if sel is None else
                             (np.full(shape + (2,), np.nan), np.full(shape + (2,), np.nan)))
            if sel is None:
                out[name][0][..., k] = m
                out[name][1][..., k] = np.nan if s is None else s
            else:
                out[name][0][sel, k] = m
                out[name][1][sel, k] = np.nan if s is None else s
    if not out:  # no rows
        return {name: (np.full((0, 2), np.nan), np.full((0, 2), np.nan))
                for name in OUTCOME_METRICS}
    for name in NO_ANTAGONIST:  # no antagonist in consultancy
        if name not in out:  # no row at debate
            out[name] = tuple(np.full_like(out["amp"][0], np.nan) for _ in (0, 1))
        out[name][0][..., 0] = np.nan
        out[name][1][..., 0] = np.nan
    return out


#: The outcomes of the antagonist's evidence, undefined in consultancy (NaN there).
NO_ANTAGONIST = ("evidence_A", "counter_signal")


# ------------------------------------------------------------------ the sender game
@dataclass
class Gains:
    """Affine gain maps of the sender types (per cell).

    debate, for each s in {0, 1}:  gain_P[s] = aP[s] + BP[s, r] . x_A[s, r]  (sum over r),
                                   gain_A[s, r] = aA[s, r] + BA[s, r] x_P[s];
    consultancy: gain_Pc[s] (no opponent).  ``null_*`` marks types of probability 0.
    """

    aP: np.ndarray  # [C, 2]
    BP: np.ndarray  # [C, 2, 2]
    aA: np.ndarray  # [C, 2, 2]
    BA: np.ndarray  # [C, 2, 2]
    gPc: np.ndarray  # [C, 2]
    null_P: np.ndarray
    null_A: np.ndarray

    def debate(self, x_P, x_A):
        gP = self.aP + (self.BP * x_A).sum(axis=-1)
        gA = self.aA + self.BA * x_P[..., None]
        return gP, gA


def gains(weights, J_c, J_d, v, c_e) -> Gains:
    """Coefficients of every sender type's gain from presenting (interim, per type).

    P's gain at type s: E[acc_P ((1 - q_A)(J10 - J00) + q_A (J11 - J01)) | s, t_P = 1] - c_e,
    A's gain at type (s, r): E[acc_A ((1 - q_P)(J00 - J01) + q_P (J10 - J11)) | s, r, t_A = 1] - c_e,
    with q the opponent's evidence probability, affine in the opponent's x; the
    cost is paid on presenting, whether or not the judge's check rejects it.  The
    class sums of a cell a compiled loop
    (:func:`antiamp.kernels.signals_equilibria.gain_coefficients`).
    """
    from ...kernels.signals_equilibria import gain_coefficients

    w = np.ascontiguousarray(weights, float)
    C = w.shape[0]
    J_d = np.asarray(J_d, float)
    if J_d.ndim == 3:  # one table whatever the antagonist believes
        J_d = np.broadcast_to(J_d[:, None], (J_d.shape[0], 2, 2, 2))
    f = np.ascontiguousarray
    return Gains(*gain_coefficients(
        w, f(np.broadcast_to(np.asarray(J_c, float), (C, 2))), f(J_d),
        f(np.broadcast_to(np.asarray(v, float), (C,))),
        f(np.broadcast_to(np.asarray(c_e, float), (C,))), CLASS_BITS))


#: Each class's s_P, s_A, t_P, t_A, whether P's stance is true, whether A believes its
#: own (:func:`antiamp.kernels.signals_equilibria.gain_coefficients`).
CLASS_BITS = np.ascontiguousarray(np.stack([SP, SA, TP, TA, P_TRUE, A_BELIEVES]), np.int64)


def interim_payoffs(weights, prof: Profile, J_c, J_d, v, c_e):
    """Interim payoff of each action of each type against ``prof``, by direct summation.

    Independent of :func:`gains`: for each type and action, the expected payoff
    E[1{y = own side} - c_e x] over the classes of that type, with the opponent's
    evidence and the judge's check integrated out.  Returns (uPc [C, 2, 2],
    uP [C, 2, 2], uA [C, 2, 2, 2]) with the action (withhold, present) last.
    """
    w = np.asarray(weights, float)
    J_c = np.asarray(J_c, float)
    Jcls = dict(zip(((0, 0), (0, 1), (1, 0), (1, 1)), class_tables(J_d)))
    c_e = np.asarray(c_e, float)[:, None]
    acc_P, acc_A = _acceptance(v)
    _, q_P, q_A = evidence_probs(prof, v)
    C = w.shape[0]
    uPc, uP, uA = np.zeros((C, 2, 2)), np.zeros((C, 2, 2)), np.zeros((C, 2, 2, 2))

    def judge(eP_prob, eA_prob):  # Pr(y = a) with independent evidence draws
        out = 0.0
        for eP in (0, 1):
            pP = eP_prob if eP else 1 - eP_prob
            for eA in (0, 1):
                pA = eA_prob if eA else 1 - eA_prob
                out = out + pP * pA * Jcls[eP, eA]
        return out

    with np.errstate(invalid="ignore", divide="ignore"):
        for s in (0, 1):
            mP = ((SP == s) & (TP == 1)).astype(float)
            FP = (w * mP).sum(-1)
            for act in (0, 1):
                ep = act * acc_P
                uP[:, s, act] = (w * mP * judge(ep, q_A)).sum(-1) / FP - c_e[:, 0] * act
                endorse_c = (1 - ep) * J_c[:, :1] + ep * J_c[:, 1:]
                uPc[:, s, act] = (w * mP * endorse_c).sum(-1) / FP - c_e[:, 0] * act
            for r in (0, 1):
                mA = ((SP == s) & (SA == r) & (TA == 1)).astype(float)
                FA = (w * mA).sum(-1)
                for act in (0, 1):
                    ea = act * acc_A
                    uA[:, s, r, act] = (w * mA * (1 - judge(q_P, ea))).sum(-1) / FA \
                        - c_e[:, 0] * act
    return uPc, uP, uA


def certificate(weights, prof: Profile, J_c, J_d, v, c_e):
    """Largest interim gain of a unilateral deviation to a pure action, per cell and
    protocol ([C, 2]); types of probability zero are skipped."""
    uPc, uP, uA = interim_payoffs(weights, prof, J_c, J_d, v, c_e)

    def regret(u, x):
        cur = x * u[..., 1] + (1 - x) * u[..., 0]
        return np.nan_to_num(np.maximum(u[..., 0], u[..., 1]) - cur, nan=0.0)

    eps_c = regret(uPc, prof.x_Pc).max(axis=-1)
    eps_d = np.maximum(regret(uP, prof.x_P).max(axis=-1),
                       regret(uA, prof.x_A).reshape(len(uA), 4).max(axis=-1))
    return np.stack([eps_c, eps_d], axis=1)


def equilibrium_rows(G: Gains, tol: float = 1e-10):
    """Extreme equilibria of both protocols, cell by cell (vectorised over cells).

    Consultancy: each type presents iff its gain is positive (both pure actions when
    it is zero).  Debate, per sub-game s (one P type, two A types): the P type's
    candidates are 0, 1 and the switch points of the A types (where an A type is
    indifferent); the A types' candidates are 0, 1 and the mixture that makes P
    indifferent given the other A type's pure action.  Every candidate is kept iff
    each type best-responds; this finds every equilibrium of a generic game and
    the end points of equilibrium segments when one type is indifferent.  Types of
    probability zero present (their action changes nothing).  The sub-games'
    candidates are enumerated by a compiled loop
    (:func:`antiamp.kernels.signals_equilibria.debate_subgames`).

    Returns the equilibria as rows, ordered by cell: ``(cell [Rc], x_Pc [Rc, 2])`` of
    consultancy and ``(cell [Rd], x_P [Rd, 2], x_A [Rd, 2, 2])`` of debate
    (:func:`enumerate_equilibria`: the same as lists per cell).
    """
    from ...kernels.signals_equilibria import debate_subgames

    f = np.ascontiguousarray
    S, count = debate_subgames(f(G.aP, float), f(G.BP, float), f(G.aA, float),
                               f(G.BA, float), f(G.null_P, np.bool_), f(G.null_A, np.bool_),
                               float(tol), SAME_CANDIDATE)
    return _equilibrium_rows(G, S, count, tol)


#: Candidates of a sub-game this close (the largest coordinate difference) to one
#: kept before them are the same equilibrium.
SAME_CANDIDATE = 1e-9


def enumerate_equilibria(G: Gains, tol: float = 1e-10):
    """:func:`equilibrium_rows` as lists per cell: (consult list, debate list), each
    cell's list of profiles as tuples ``(x_Pc[2],)`` and ``(x_P[2], x_A[2, 2])``, in
    the rows' order."""
    (cc, x_Pc), (dc, x_P, x_A) = equilibrium_rows(G, tol)
    C = G.aP.shape[0]
    consult, debate = _split(cc, list(x_Pc), C), _split(dc, list(zip(x_P, x_A)), C)
    return consult, debate


def _split(cell: np.ndarray, items: list, C: int) -> list:
    """Rows (ordered by cell) as a list per cell."""
    ends = np.searchsorted(cell, np.arange(1, C + 1)).tolist()
    return [items[a:b] for a, b in zip([0] + ends[:-1], ends)]


def _product_rows(n0: np.ndarray, n1: np.ndarray):
    """Each cell's pairs (a < n0, b < n1), a outer, b inner, cell by cell: (cell, a, b)."""
    nd = n0 * n1
    cell = np.repeat(np.arange(len(nd)), nd)
    k = np.arange(int(nd.sum())) - np.repeat(np.cumsum(nd) - nd, nd)
    return cell, k // n1[cell], k % n1[cell]


def _equilibrium_rows(G: Gains, S: np.ndarray, count: np.ndarray, tol: float):
    """The equilibria of :func:`equilibrium_rows` from each sub-game's ([2, C, 32, 3]
    and their counts [2, C])."""
    # Debate: every pair of the sub-games' equilibria, as the cell's list in its order.
    cell, a, b = _product_rows(count[0], count[1])
    u, w = S[0][cell, a], S[1][cell, b]
    x_P = np.stack([u[:, 0], w[:, 0]], axis=1)
    x_A = np.stack([u[:, 1:3], w[:, 1:3]], axis=1)
    nulls = G.null_P
    pres = nulls | (G.gPc >= -tol)  # consultancy: presenting, withholding best responses
    withh = ~nulls & (G.gPc <= tol)
    # Consultancy: per type, presenting (1) if a best response, then withholding (0).
    n = pres.astype(np.intp) + withh
    cc, a, b = _product_rows(n[:, 0], n[:, 1])
    x_Pc = np.stack([np.where(pres[cc, 0] & (a == 0), 1.0, 0.0),
                     np.where(pres[cc, 1] & (b == 0), 1.0, 0.0)], axis=1)
    return (cc, x_Pc), (cell, x_P, x_A)


def general_debate(G: Gains, c: int, methods=("br", "qre", "root"), n_starts=9, tol=1e-9):
    """Debate equilibria of cell ``c`` by the general fixed-point engine (6 types)."""
    from ...fixedpoint import solve_general

    Gc = Gains(G.aP[c:c + 1], G.BP[c:c + 1], G.aA[c:c + 1], G.BA[c:c + 1], G.gPc[c:c + 1],
               G.null_P[c:c + 1], G.null_A[c:c + 1])

    def gain_c(x):
        gP, gA = Gc.debate(x[:2][None], x[2:].reshape(1, 2, 2))
        g = np.concatenate([gP[0], gA[0].ravel()])
        null = np.concatenate([Gc.null_P[0], Gc.null_A[0].ravel()])
        return np.where(null, 1.0, g)

    res = solve_general(gain_c, 6, methods, n_starts, tol)
    return [(p[:2].copy(), p[2:].reshape(2, 2).copy()) for p in res.profiles], res.report
