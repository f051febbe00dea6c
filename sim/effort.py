"""Endogenous judge effort and attention (seed 000, section 5).

Before reading the transcript the judge chooses attention t in [0, t_max] at a
cost c_J(t) = c_J load t^gamma, where ``load`` = 1 in consultancy and
``effort.load`` in debate (a debate transcript costs more to read).  Attention can

* raise rationality:        lam(t)   = lam   (1 + lam_gain t),
* raise evidence salience:  kappa(t) = kappa (1 + kappa_gain t),
* check evidence:           v(t)     = v_max (1 - exp(-v_rate t)), the probability
  that a presented false-side artifact is checked and rejected (so the effective
  fabrication rate is rho (1 - v(t))),

each switched off by a zero gain (lam and kappa act on the logit judge; checks act
on every judge).  The judge maximises Pr(y = omega) - c_J(t) against the senders'
strategies; the senders best-respond to t.  A joint equilibrium is a t and a
sender equilibrium x*(t) with t a best response to x*(t).

Solving.  Class weights do not depend on t or on the strategies, so one
(exact or simulated) class distribution per cell serves every t.  On a grid of
t the sender equilibria x*(t_k) are enumerated (:mod:`sim.signals`) and the
judge's best response to each is found (grid maximum, refined by bounded scalar
optimisation).  Joint equilibria are the zeros of h(t) = t_BR(x*(t)) - t, bracketed
on the grid and solved by Brent's method; each is kept only if its certificate
(the judge's and every sender type's largest deviation gain) is below tolerance.
With ``refine=false`` the judge's choice is restricted to the grid (a finite
game) and grid equilibria are reported.  The judge-as-leader optimum (attention
committed and observed) is reported beside them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from .lazy import lazy
optimize = lazy("scipy.optimize")
special = lazy("scipy.special")

from .config import ConfigError, JudgeConfig, ProtocolConfig, _int_at_least, _number
from .judge import jury_majority
from . import signals as sg


from .sections import EffortConfig  # noqa: E402,F401  (re-exported)


def validate_effort(e: EffortConfig, judge: JudgeConfig) -> None:
    if _number("effort.t_max", e.t_max) <= 0:
        raise ConfigError(f"effort.t_max must be > 0, got {e.t_max!r}")
    _int_at_least("effort.n_grid", e.n_grid, 3)
    if e.t_fixed is not None:
        t = _number("effort.t_fixed", e.t_fixed)
        if not 0 <= t <= e.t_max:
            raise ConfigError(f"effort.t_fixed must lie in [0, effort.t_max={e.t_max}], got {t!r}")
    for name in ("c_J", "lam_gain", "kappa_gain", "v_rate"):
        if _number(f"effort.{name}", getattr(e, name)) < 0:
            raise ConfigError(f"effort.{name} must be >= 0, got {getattr(e, name)!r}")
    if _number("effort.gamma", e.gamma) < 1:
        raise ConfigError(f"effort.gamma must be >= 1 (a convex cost), got {e.gamma!r}")
    if _number("effort.load", e.load) <= 0:
        raise ConfigError(f"effort.load must be > 0, got {e.load!r}")
    v = _number("effort.v_max", e.v_max)
    if not 0 <= v <= 1:
        raise ConfigError(f"effort.v_max must lie in [0, 1], got {e.v_max!r}")
    if judge.kind != "logit" and (e.lam_gain or e.kappa_gain):
        raise ConfigError("effort.lam_gain and effort.kappa_gain act on the logit judge only "
                          f"(judge.kind={judge.kind!r}); set them to 0 or use judge=logit")


def lam_kappa_v(e: EffortConfig, judge: JudgeConfig, t):
    t = np.asarray(t, float)
    lam = judge.lam * (1 + e.lam_gain * t)
    kappa = judge.kappa * (1 + e.kappa_gain * t)
    v = e.v_max * (1 - np.exp(-e.v_rate * t))
    return lam, kappa, v


def tables_at(e: EffortConfig, judge: JudgeConfig, prot: ProtocolConfig, t):
    """Judge tables at attention levels ``t`` [T]: J_c [T, 2], J_d [T, 2, 2], v [T]."""
    t = np.atleast_1d(np.asarray(t, float))
    lam, kappa, v = lam_kappa_v(e, judge, t)
    if judge.kind == "tiebreak":
        Jd = np.broadcast_to(np.array([[judge.b, 0.0], [1.0, judge.b]]), (len(t), 2, 2))
        Jc = np.broadcast_to(np.array([prot.consult_default, 1.0]), (len(t), 2))
    else:
        d = np.array([[0.0, -1.0], [1.0, 0.0]])
        Jd = special.expit(lam[:, None, None] * (judge.mu + kappa[:, None, None] * d))
        Jc = special.expit(lam[:, None] * (judge.mu + kappa[:, None] * np.arange(2.0)))
    n = judge.jury_size
    return (jury_majority(np.array(Jc), n, judge.jury_tie),
            jury_majority(np.array(Jd), n, judge.jury_tie), v)


def cost(e: EffortConfig, t, protocol: int):
    load = e.load if protocol == 1 else 1.0
    return e.c_J * load * np.asarray(t, float) ** e.gamma


@dataclass
class CellModel:
    """Everything the effort solver needs about one cell."""

    weights: np.ndarray  # [32] probabilities or counts
    judge: JudgeConfig
    protocol: ProtocolConfig
    effort: EffortConfig
    c_e: float
    welfare: tuple


def _profile_rows(prof_list, protocol):
    """Stack equilibrium profiles (of one protocol) into a Profile with N rows."""
    N = len(prof_list)
    x_Pc, x_P, x_A = np.ones((N, 2)), np.ones((N, 2)), np.ones((N, 2, 2))
    for i, pr in enumerate(prof_list):
        if protocol == 0:
            x_Pc[i] = pr
        else:
            x_P[i], x_A[i] = pr
    return sg.Profile(x_Pc, x_P, x_A)


def sender_equilibria(cm: CellModel, t, tol):
    """Sender equilibria at each attention level in ``t``: lists per t, per protocol."""
    t = np.atleast_1d(t)
    Jc, Jd, v = tables_at(cm.effort, cm.judge, cm.protocol, t)
    W = np.broadcast_to(cm.weights, (len(t), 32))
    G = sg.gains(W, Jc, Jd, v, np.full(len(t), cm.c_e))
    # Indifference is detected well inside the certificate tolerance, so that a
    # switch point located by root finding certifies.
    cons, deb = sg.enumerate_equilibria(G, tol * 1e-3)
    return cons, deb


def judge_utility(cm: CellModel, prof: sg.Profile, t, protocol: int):
    """Pr(y = omega) - c_J(t) for each (profile row i, t[i])."""
    t = np.atleast_1d(np.asarray(t, float))
    Jc, Jd, v = tables_at(cm.effort, cm.judge, cm.protocol, t)
    W = np.broadcast_to(cm.weights, (len(t), 32))
    acc = sg.accuracy(W, prof, Jc, Jd, v, protocol)
    return acc - cost(cm.effort, t, protocol)


def _repeat(prof: sg.Profile, k: int) -> sg.Profile:
    return sg.Profile(np.repeat(prof.x_Pc, k, 0), np.repeat(prof.x_P, k, 0),
                      np.repeat(prof.x_A, k, 0))


def best_attention(cm: CellModel, prof: sg.Profile, protocol: int, grid, refine=True):
    """The judge's best attention against each profile row: (t_BR [N], U_max [N])."""
    N, T = len(prof.x_P), len(grid)
    U = judge_utility(cm, _repeat(prof, T), np.tile(grid, N), protocol).reshape(N, T)
    j = U.argmax(axis=1)
    t_br, u_br = grid[j].astype(float), U[np.arange(N), j]
    if not refine:
        return t_br, u_br
    for i in range(N):
        lo, hi = grid[max(j[i] - 1, 0)], grid[min(j[i] + 1, T - 1)]
        one = sg.Profile(prof.x_Pc[i:i + 1], prof.x_P[i:i + 1], prof.x_A[i:i + 1])
        r = optimize.minimize_scalar(lambda s: -judge_utility(cm, one, [s], protocol)[0],
                                     bounds=(lo, hi), method="bounded",
                                     options={"xatol": 1e-11})
        if -r.fun > u_br[i]:
            t_br[i], u_br[i] = float(r.x), float(-r.fun)
    return t_br, u_br


@dataclass
class JointEquilibrium:
    protocol: int
    t: float
    profile: tuple  # (x_Pc,) or (x_P, x_A)
    eps_judge: float
    eps_senders: float
    judge_utility: float


def _prof_of(pr, protocol):
    return _profile_rows([pr], protocol)


def _certify(cm: CellModel, t: float, pr, protocol: int, grid, refine: bool):
    prof = _prof_of(pr, protocol)
    u_here = judge_utility(cm, prof, [t], protocol)[0]
    _, u_best = best_attention(cm, prof, protocol, grid, refine)
    Jc, Jd, v = tables_at(cm.effort, cm.judge, cm.protocol, [t])
    eps_s = sg.certificate(cm.weights[None], prof, Jc, Jd, v, np.array([cm.c_e]))[0, protocol]
    return max(0.0, float(u_best[0] - u_here)), float(eps_s), float(u_here)


def solve_cell(cm: CellModel, tol: float = 1e-9):
    """Joint (attention, senders) equilibria of one cell for both protocols.

    Returns (equilibria, commitment, report): ``equilibria`` a list of
    :class:`JointEquilibrium`; ``commitment`` per protocol the judge-as-leader
    optimum (t, profile, utility) over the grid; ``report`` notes where no
    equilibrium was found.
    """
    e = cm.effort
    report = []
    if e.t_fixed is not None:
        cons, deb = sender_equilibria(cm, [e.t_fixed], tol)
        out = []
        for protocol, lst in ((0, cons[0]), (1, deb[0])):
            for pr in lst:
                _, eps_s, u = _certify(cm, e.t_fixed, pr, protocol,
                                       np.array([e.t_fixed]), False)
                out.append(JointEquilibrium(protocol, float(e.t_fixed), pr, 0.0, eps_s, u))
        return out, {}, report
    grid = np.linspace(0.0, e.t_max, e.n_grid)
    cons, deb = sender_equilibria(cm, grid, tol)
    out, commit = [], {}
    for protocol, per_t in ((0, cons), (1, deb)):
        rows = [(k, pr) for k, lst in enumerate(per_t) for pr in lst]
        prof = _profile_rows([pr for _, pr in rows], protocol)
        ks = np.array([k for k, _ in rows])
        # Scan with the grid maximum; refine the best response only near fixed points.
        t_br, u_br = best_attention(cm, prof, protocol, grid, False)
        u_here = judge_utility(cm, prof, grid[ks], protocol)
        # Judge-as-leader: the best grid t given the senders' response to it.
        i_best = int(np.argmax(u_here))
        commit[protocol] = (float(grid[ks[i_best]]), rows[i_best][1], float(u_here[i_best]))
        if not e.refine:  # the grid game
            for i, (k, pr) in enumerate(rows):
                eps_j = max(0.0, u_br[i] - u_here[i])
                if eps_j <= tol:
                    _, eps_s, u = _certify(cm, grid[k], pr, protocol, grid, False)
                    if eps_s <= tol:
                        out.append(JointEquilibrium(protocol, float(grid[k]), pr, eps_j, eps_s, u))
            continue
        name = ("consult", "debate")[protocol]
        unique = np.array([len(lst) == 1 for lst in per_t])
        coarse = np.full(len(grid), np.nan)
        for i, (k, _) in enumerate(rows):
            if unique[k]:
                coarse[k] = t_br[i] - grid[k]
        step = grid[1] - grid[0]
        found, cands = [], []

        def h_at(z, ref=None):
            c1, d1 = sender_equilibria(cm, [z], tol)
            lst = (c1 if protocol == 0 else d1)[0]
            if len(lst) != 1:
                if ref is None:
                    raise _Ambiguous(z)
                # At a switch point: continue the branch of the reference profile.
                lst = [min(lst, key=lambda pr: _dist(pr, ref))]
            tb, _ = best_attention(cm, _prof_of(lst[0], protocol), protocol, grid, True)
            return tb[0] - z, lst[0]

        fine = {}

        def fine_h(k):
            if k not in fine:
                fine[k] = h_at(grid[k])[0]
            return fine[k]

        for k in range(len(grid)):
            if not unique[k]:
                report.append(f"{name}: several sender equilibria at t={grid[k]:.4g}; "
                              "grid equilibria only there")
                for i, (kk, pr) in enumerate(rows):
                    if kk == k and u_br[i] - u_here[i] <= tol:
                        cands.append((grid[k], pr))
                continue
            near = abs(coarse[k]) <= 2.5 * step
            cross = k + 1 < len(grid) and unique[k + 1] and coarse[k] * coarse[k + 1] <= 0
            if near or cross:
                fine_h(k)
                if k + 1 < len(grid) and unique[k + 1]:
                    fine_h(k + 1)
        for k in sorted(fine):
            hk = fine[k]
            if abs(hk) <= 1e-12:
                cands.append((grid[k], per_t[k][0]))
            elif k + 1 in fine and hk * fine[k + 1] < 0:
                lo_pr, hi_pr = per_t[k][0], per_t[k + 1][0]
                z = optimize.brentq(lambda q: h_at(q, lo_pr)[0], grid[k], grid[k + 1],
                                    xtol=1e-14)
                cands.append((z, h_at(z, lo_pr)[1]))
                # If x*(t) jumps at z, an equilibrium may blend the senders' profiles on
                # either side of the switch point (a sender type is indifferent there).
                # The profiles just either side of z: only the types switching at z differ.
                lo_z = h_at(max(grid[k], z - 1e-9), lo_pr)[1]
                hi_z = h_at(min(grid[k + 1], z + 1e-9), hi_pr)[1]
                mix = _mix_at_switch(cm, z, lo_z, hi_z, protocol, grid)
                if mix is not None:
                    cands.append((z, mix))
        for s, pr in cands:
            eps_j, eps_s, u = _certify(cm, s, pr, protocol, grid, True)
            if eps_j <= tol and eps_s <= tol:
                if not any(abs(s - f.t) < 1e-7 and _same(pr, f.profile) for f in found):
                    found.append(JointEquilibrium(protocol, float(s), pr, eps_j, eps_s, u))
        if not found:
            report.append(f"{name}: no pure-attention equilibrium (the judge's best response "
                          "and the senders' equilibrium jump past each other)")
        out += found
    return out, commit, report


class _Ambiguous(Exception):
    pass


def _dist(a, b) -> float:
    fa = np.concatenate([np.ravel(x) for x in (a if isinstance(a, tuple) else (a,))])
    fb = np.concatenate([np.ravel(x) for x in (b if isinstance(b, tuple) else (b,))])
    return float(np.max(np.abs(fa - fb)))


def _same(a, b) -> bool:
    fa = np.concatenate([np.ravel(x) for x in (a if isinstance(a, tuple) else (a,))])
    fb = np.concatenate([np.ravel(x) for x in (b if isinstance(b, tuple) else (b,))])
    return bool(np.max(np.abs(fa - fb)) < 1e-7)


def _blend(lo, hi, lam):
    if isinstance(lo, tuple):
        return tuple((1 - lam) * a + lam * b for a, b in zip(lo, hi))
    return (1 - lam) * lo + lam * hi


def _mix_at_switch(cm, z, lo_pr, hi_pr, protocol, grid):
    """At a switch point z of the senders' equilibrium, the blend of the profiles on
    either side that makes z the judge's best response, if one exists."""
    if _same(lo_pr, hi_pr):
        return None

    def g(lam):
        pr = _blend(lo_pr, hi_pr, lam)
        tb, _ = best_attention(cm, _prof_of(pr, protocol), protocol, grid, True)
        return tb[0] - z

    g0, g1 = g(0.0), g(1.0)
    if g0 * g1 > 0:
        return None
    lam = optimize.brentq(g, 0.0, 1.0, xtol=1e-14) if g0 * g1 < 0 else (0.0 if g0 == 0 else 1.0)
    return _blend(lo_pr, hi_pr, lam)


def with_attention(judge: JudgeConfig, e: EffortConfig, t: float) -> JudgeConfig:
    """The judge config at attention t (lam(t), kappa(t)); checks are not part of it."""
    lam, kappa, _ = lam_kappa_v(e, judge, t)
    return dataclasses.replace(judge, lam=float(lam), kappa=float(kappa))
