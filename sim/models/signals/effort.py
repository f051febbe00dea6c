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
judge's best response to each is found (grid maximum, refined by bracketed
scalar minimisation).  Joint equilibria are the zeros of h(t) = t_BR(x*(t)) - t,
bracketed on the grid and solved by Chandrupatla's method; each is kept only if
its certificate (the judge's and every sender type's largest deviation gain) is
below tolerance.  Cells are solved together: every step is one vectorised call
over the rows (cell, attention level, profile) of a batch of cells, with
scipy's elementwise root finder and minimiser (``scipy.optimize.elementwise``),
so a grid costs about as many NumPy calls as one cell.  With ``refine=false``
the judge's choice is restricted to the grid (a finite game) and grid
equilibria are reported.  The judge-as-leader optimum (attention committed and
observed) is reported beside them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ...lazy import lazy
special = lazy("scipy.special")

from ...config import ConfigError, JudgeConfig, ProtocolConfig
from ...judge import jury_majority
from . import core as sg


from .config import EffortConfig  # noqa: E402,F401  (re-exported)


def validate_effort(e: EffortConfig, judge: JudgeConfig) -> None:
    """What the declared ranges (config.py) cannot say."""
    if e.t_fixed is not None and e.t_fixed > e.t_max:
        raise ConfigError(f"effort.t_fixed must lie in [0, effort.t_max={e.t_max}], "
                          f"got {e.t_fixed!r}")
    if judge.kind != "logit" and (e.lam_gain or e.kappa_gain):
        raise ConfigError("effort.lam_gain and effort.kappa_gain act on the logit judge only "
                          f"(judge.kind={judge.kind!r}); set them to 0 or use judge=logit")


def _effects(lam, kappa, lam_gain, kappa_gain, v_max, v_rate, t):
    """lam(t), kappa(t) and v(t) (the module docstring's forms), for scalars or columns."""
    return (lam * (1 + lam_gain * t), kappa * (1 + kappa_gain * t),
            v_max * (1 - np.exp(-v_rate * t)))


def _cost(c_J, load, gamma, t, protocol: int):
    """c_J load t^gamma, the load in debate only (scalars or columns)."""
    return c_J * (load if protocol == 1 else 1.0) * t ** gamma


def tables_at(e: EffortConfig, judge: JudgeConfig, prot: ProtocolConfig, t):
    """Judge tables at attention levels ``t`` [T]: J_c [T, 2], J_d [T, 2, 2], v [T]."""
    t = np.atleast_1d(np.asarray(t, float))
    return _Cells([CellModel(np.zeros(32), judge, prot, e, 0.0, ())]).tables(
        np.zeros(len(t), int), t)


def cost(e: EffortConfig, t, protocol: int):
    return _cost(e.c_J, e.load, e.gamma, np.asarray(t, float), protocol)


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


def _take(prof: sg.Profile, rows) -> sg.Profile:
    return sg.Profile(prof.x_Pc[rows], prof.x_P[rows], prof.x_A[rows])


def _blend_rows(lo: sg.Profile, hi: sg.Profile, lam) -> sg.Profile:
    lam = np.asarray(lam, float)
    return sg.Profile(*((1 - lam).reshape((-1,) + (1,) * (a.ndim - 1)) * a
                        + lam.reshape((-1,) + (1,) * (a.ndim - 1)) * b
                        for a, b in ((lo.x_Pc, hi.x_Pc), (lo.x_P, hi.x_P), (lo.x_A, hi.x_A))))


def _row_profile(prof: sg.Profile, r: int, protocol: int):
    """Row ``r`` of a stacked Profile as the tuple form of :func:`sg.enumerate_equilibria`."""
    if protocol == 0:
        return prof.x_Pc[r].copy()
    return prof.x_P[r].copy(), prof.x_A[r].copy()


@dataclass
class JointEquilibrium:
    protocol: int
    t: float
    profile: tuple  # (x_Pc,) or (x_P, x_A)
    eps_judge: float
    eps_senders: float
    judge_utility: float


class _Ambiguous(Exception):
    pass


# Cells solved together (bounded so that a batch's arrays stay small: the grid
# scan of a batch holds about BATCH x n_grid^2 rows of 32 classes in ROWS blocks).
BATCH = 2048
ROWS = 1 << 16


def _batch_key(cm: CellModel):
    """What the cells of one batch share: the jury and the attention grid."""
    j, e = cm.judge, cm.effort
    return (j.kind, j.jury_size, j.jury_tie, float(e.t_max), int(e.n_grid), bool(e.refine),
            e.t_fixed is None)


class _Cells:
    """A batch of cells as columns; every method is vectorised over rows, each
    row naming its cell (``idx``)."""

    def __init__(self, cms):
        j, e = cms[0].judge, cms[0].effort
        self.kind, self.n, self.tie = j.kind, j.jury_size, j.jury_tie
        self.refine = e.refine
        self.grid = np.linspace(0.0, e.t_max, e.n_grid)
        self.W = np.array([c.weights for c in cms], float)

        def col(get):
            return np.array([get(c) for c in cms], float)

        self.c_e = col(lambda c: c.c_e)
        for name in ("lam", "mu", "kappa", "b"):
            setattr(self, name, col(lambda c, n=name: getattr(c.judge, n)))
        self.default = col(lambda c: c.protocol.consult_default)
        for name in ("lam_gain", "kappa_gain", "v_max", "v_rate", "c_J", "gamma", "load"):
            setattr(self, name, col(lambda c, n=name: getattr(c.effort, n)))
        self.t_fixed = col(lambda c: np.nan if c.effort.t_fixed is None else c.effort.t_fixed)
        self._grid: dict = {}

    def tables(self, idx, t):
        """J_c [N, 2], J_d [N, 2, 2], v [N] at attention ``t`` [N] of cells ``idx``."""
        lam, kappa, v = _effects(self.lam[idx], self.kappa[idx], self.lam_gain[idx],
                                 self.kappa_gain[idx], self.v_max[idx], self.v_rate[idx], t)
        if self.kind == "tiebreak":
            b = self.b[idx]
            Jd = np.stack([np.stack([b, np.zeros_like(b)], -1),
                           np.stack([np.ones_like(b), b], -1)], -2)
            Jc = np.stack([self.default[idx], np.ones_like(b)], -1)
        else:
            d = np.array([[0.0, -1.0], [1.0, 0.0]])
            mu = self.mu[idx]
            Jd = special.expit(lam[:, None, None] * (mu[:, None, None]
                                                     + kappa[:, None, None] * d))
            Jc = special.expit(lam[:, None] * (mu[:, None] + kappa[:, None] * np.arange(2.0)))
        return jury_majority(Jc, self.n, self.tie), jury_majority(Jd, self.n, self.tie), v

    def terms(self, idx, t, protocol: int):
        """The judge's utility Pr(y = omega) - c_J(t) per row as ``a0 + monomials @ a``
        (:func:`sg.accuracy_terms`, the attention cost in ``a0``)."""
        t = np.asarray(t, float)
        Jc, Jd, v = self.tables(idx, t)
        a0, a = sg.accuracy_terms(self.W[idx], Jc, Jd, v, protocol)
        return a0 - _cost(self.c_J[idx], self.load[idx], self.gamma[idx], t, protocol), a

    def utility(self, idx, prof: sg.Profile, t, protocol: int):
        """The judge's Pr(y = omega) - c_J(t) per row."""
        a0, a = self.terms(idx, t, protocol)
        return a0 + (sg.monomials(prof, protocol) * a).sum(-1)

    def grid_terms(self, protocol: int):
        """:meth:`terms` of every cell at every grid point ([C, T], [C, T, K]), once."""
        if protocol not in self._grid:
            C, T = len(self.W), len(self.grid)
            a0, a = self.terms(np.repeat(np.arange(C), T), np.tile(self.grid, C), protocol)
            self._grid[protocol] = (a0.reshape(C, T), a.reshape(C, T, -1))
        return self._grid[protocol]

    def equilibria(self, idx, t, tol):
        """Sender equilibria of cells ``idx`` at attention ``t``: lists per row, per protocol."""
        Jc, Jd, v = self.tables(idx, t)
        G = sg.gains(self.W[idx], Jc, Jd, v, self.c_e[idx])
        # Indifference is detected well inside the certificate tolerance, so that a
        # switch point located by root finding certifies.
        return sg.enumerate_equilibria(G, tol * 1e-3)

    def branch(self, idx, t, protocol, tol, ref=None):
        """The senders' equilibrium at ``t`` per row: the unique one, or (at a switch
        point) the one closest to the row's reference profile ``ref``."""
        cons, deb = self.equilibria(idx, t, tol)
        out = []
        for r, lst in enumerate(cons if protocol == 0 else deb):
            if len(lst) != 1:
                if ref is None:
                    raise _Ambiguous(t[r])
                lst = [min(lst, key=lambda pr, r=r: _dist(pr, ref[r]))]
            out.append(lst[0])
        return out

    def best(self, idx, prof: sg.Profile, protocol: int, refine: bool):
        """The judge's best attention against each row's profile: (t_BR, U_max).

        The grid maximum, then (``refine``) the maximum between its grid
        neighbours, kept where it is higher: a three-point bracket found by
        ``bracket_minimum`` (immediate at an interior grid maximum), then
        ``find_minimum``.  (``bracket_minimum`` cannot move a starting point
        that lies on its limit, hence the inner start at the grid's ends.)"""
        from scipy.optimize import elementwise

        grid = self.grid
        N, T = len(idx), len(grid)
        a0, a = self.grid_terms(protocol)
        mono = sg.monomials(prof, protocol)
        U = np.empty((N, T))
        step = max(1, ROWS // T)
        for s in range(0, N, step):
            r = slice(s, min(N, s + step))
            U[r] = a0[idx[r]] + np.einsum("nk,ntk->nt", mono[r], a[idx[r]])
        j = U.argmax(axis=1)
        t_br, u_br = grid[j].astype(float), U[np.arange(N), j]
        if not refine or T < 2 or N == 0:
            return t_br, u_br
        lo, hi = grid[np.maximum(j - 1, 0)], grid[np.minimum(j + 1, T - 1)]
        # An interior grid maximum and its neighbours bracket a maximum already; at
        # either end of the grid the search starts inside [lo, hi] and walks uphill
        # (to the end itself when the utility is monotone there: no bracket, the grid
        # value stays).
        inner = (j > 0) & (j < T - 1)
        xl = np.where(inner, lo, lo + 0.25 * (hi - lo))
        mid = np.where(inner, t_br, lo + 0.5 * (hi - lo))
        xr = np.where(inner, hi, lo + 0.75 * (hi - lo))

        def f(x, r):
            r = r.astype(int)
            return -self.utility(idx[r], _take(prof, r), x, protocol)

        rows = np.arange(N, dtype=float)
        with np.errstate(all="ignore"):
            br = elementwise.bracket_minimum(f, mid, xl0=xl, xr0=xr, xmin=lo, xmax=hi,
                                             args=(rows,), maxiter=60)
        ok = br.status == 0
        if ok.any():
            with np.errstate(all="ignore"):
                m = elementwise.find_minimum(f, tuple(b[ok] for b in br.bracket),
                                             args=(rows[ok],), tolerances={"xatol": 1e-11})
            x, u = m.x, -m.f_x
            better = np.isfinite(u) & (u > u_br[ok])
            sel = np.flatnonzero(ok)[better]
            t_br[sel], u_br[sel] = x[better], u[better]
        return t_br, u_br

    def h(self, idx, t, protocol, tol, ref=None):
        """t_BR(x*(t)) - t per row, and the senders' profiles x*(t)."""
        chosen = self.branch(idx, t, protocol, tol, ref)
        tb, _ = self.best(idx, _profile_rows(chosen, protocol), protocol, True)
        return tb - t, chosen

    def certify(self, idx, t, prof: sg.Profile, protocol: int, refine: bool):
        """(judge's deviation gain, senders' largest deviation gain, judge utility) per row."""
        u_here = self.utility(idx, prof, t, protocol)
        _, u_best = self.best(idx, prof, protocol, refine)
        Jc, Jd, v = self.tables(idx, t)
        eps_s = sg.certificate(self.W[idx], prof, Jc, Jd, v, self.c_e[idx])[:, protocol]
        return np.maximum(0.0, u_best - u_here), eps_s, u_here


def solve_cell(cm: CellModel, tol: float = 1e-9):
    """Joint (attention, senders) equilibria of one cell for both protocols.

    Returns (equilibria, commitment, report): ``equilibria`` a list of
    :class:`JointEquilibrium`; ``commitment`` per protocol the judge-as-leader
    optimum (t, profile, utility) over the grid; ``report`` notes where no
    equilibrium was found.
    """
    return solve_cells([cm], tol)[0]


def solve_cells(cms, tol: float = 1e-9, progress=None):
    """:func:`solve_cell` for many cells, solved together in batches of cells that
    share their jury and attention grid; ``progress`` (a tqdm bar or None) advances
    by each batch's cells."""
    results = [None] * len(cms)
    groups: dict = {}
    for i, cm in enumerate(cms):
        groups.setdefault(_batch_key(cm), []).append(i)
    for members in groups.values():
        for a in range(0, len(members), BATCH):
            part = members[a:a + BATCH]
            cells = _Cells([cms[i] for i in part])
            solved = _solve_fixed(cells, tol) if cms[part[0]].effort.t_fixed is not None \
                else _solve_batch(cells, tol)
            for i, r in zip(part, solved):
                results[i] = r
            if progress is not None:
                progress.update(len(part))
    return results


def _solve_fixed(B: _Cells, tol):
    """Exogenous attention: the senders' equilibria at each cell's t, certified."""
    C = len(B.W)
    idx = np.arange(C)
    cons, deb = B.equilibria(idx, B.t_fixed, tol)
    out = [[] for _ in range(C)]
    for protocol, per in ((0, cons), (1, deb)):
        ri = np.array([i for i in range(C) for _ in per[i]], int)
        prs = [pr for i in range(C) for pr in per[i]]
        if not prs:
            continue
        prof = _profile_rows(prs, protocol)
        t = B.t_fixed[ri]
        u = B.utility(ri, prof, t, protocol)
        Jc, Jd, v = B.tables(ri, t)
        eps_s = sg.certificate(B.W[ri], prof, Jc, Jd, v, B.c_e[ri])[:, protocol]
        for r, (i, pr) in enumerate(zip(ri, prs)):
            out[i].append(JointEquilibrium(protocol, float(t[r]), pr, 0.0, float(eps_s[r]),
                                           float(u[r])))
    return [(o, {}, []) for o in out]


def _solve_batch(B: _Cells, tol):
    """Free attention for a batch of cells (one grid)."""
    from scipy.optimize import elementwise

    grid = B.grid
    C, T = len(B.W), len(grid)
    cons, deb = B.equilibria(np.repeat(np.arange(C), T), np.tile(grid, C), tol)
    out = [[] for _ in range(C)]
    commit = [{} for _ in range(C)]
    report = [[] for _ in range(C)]
    for protocol, flat in ((0, cons), (1, deb)):
        name = ("consult", "debate")[protocol]
        per = [flat[i * T:(i + 1) * T] for i in range(C)]
        rows = [(i, k, pr) for i in range(C) for k in range(T) for pr in per[i][k]]
        ri = np.array([r[0] for r in rows], int)
        rk = np.array([r[1] for r in rows], int)
        prof = _profile_rows([r[2] for r in rows], protocol)
        # Scan with the grid maximum; refine the best response only near fixed points.
        t_br, u_br = B.best(ri, prof, protocol, False)
        u_here = B.utility(ri, prof, grid[rk], protocol)
        bounds = np.searchsorted(ri, np.arange(C + 1))
        for i in range(C):  # judge-as-leader: the best grid t given the senders' response
            a, b = bounds[i], bounds[i + 1]
            if b > a:
                ib = a + int(np.argmax(u_here[a:b]))
                commit[i][protocol] = (float(grid[rk[ib]]), rows[ib][2], float(u_here[ib]))
        cands = [[] for _ in range(C)]
        if not B.refine:  # the grid game
            ok = np.flatnonzero(np.maximum(0.0, u_br - u_here) <= tol)
            for r in ok:
                cands[ri[r]].append((grid[rk[r]], rows[r][2]))
            _keep(B, cands, protocol, tol, False, out, report, name, dedupe=False)
            continue
        n_eq = np.array([len(per[i][k]) for i in range(C) for k in range(T)]).reshape(C, T)
        unique = n_eq == 1
        coarse = np.full((C, T), np.nan)
        u1 = unique[ri, rk]
        coarse[ri[u1], rk[u1]] = t_br[u1] - grid[rk[u1]]
        for i, k in zip(*np.nonzero(~unique)):
            report[i].append(f"{name}: several sender equilibria at t={grid[k]:.4g}; "
                             "grid equilibria only there")
        for r in np.flatnonzero(~u1 & (u_br - u_here <= tol)):
            cands[ri[r]].append((grid[rk[r]], rows[r][2]))
        step = grid[1] - grid[0]
        with np.errstate(invalid="ignore"):
            near = np.abs(coarse) <= 2.5 * step
            cross = np.zeros((C, T), bool)
            cross[:, :-1] = unique[:, 1:] & (coarse[:, :-1] * coarse[:, 1:] <= 0)
        trig = unique & (near | cross)
        need = trig.copy()
        need[:, 1:] |= trig[:, :-1] & unique[:, 1:]
        fi, fk = np.nonzero(need)
        fine = np.full((C, T), np.nan)
        if len(fi):
            fine[fi, fk] = B.h(fi, grid[fk], protocol, tol)[0]
        brackets = []
        for i, k in zip(fi, fk):
            hk = fine[i, k]
            if abs(hk) <= 1e-12:
                cands[i].append((grid[k], per[i][k][0]))
            elif k + 1 < T and need[i, k + 1] and hk * fine[i, k + 1] < 0:
                cands[i].append(len(brackets))  # filled in below, in this order
                brackets.append((i, k))
        if brackets:
            bi, bk = (np.array(x, int) for x in zip(*brackets))
            lo, hi = grid[bk], grid[bk + 1]
            lo_ref = [per[i][k][0] for i, k in brackets]
            hi_ref = [per[i][k + 1][0] for i, k in brackets]

            def f(z, b):
                b = b.astype(int)
                return B.h(bi[b], z, protocol, tol, [lo_ref[j] for j in b])[0]

            with np.errstate(all="ignore"):
                z = elementwise.find_root(f, (lo, hi), args=(np.arange(len(bi), dtype=float),),
                                          tolerances={"xatol": 1e-14}).x
            at_z = B.branch(bi, z, protocol, tol, lo_ref)
            # If x*(t) jumps at z, an equilibrium may blend the senders' profiles on
            # either side of the switch point (a sender type is indifferent there).
            # The profiles just either side of z: only the types switching at z differ.
            lo_z = B.branch(bi, np.maximum(lo, z - 1e-9), protocol, tol, lo_ref)
            hi_z = B.branch(bi, np.minimum(hi, z + 1e-9), protocol, tol, hi_ref)
            mixes = _mix_at_switch(B, bi, z, lo_z, hi_z, protocol)
            found = {}
            for j in range(len(bi)):
                found[j] = [(z[j], at_z[j])] + ([(z[j], mixes[j])] if mixes[j] is not None
                                                else [])
            for i in range(C):
                cands[i] = [c for x in cands[i]
                            for c in (found[x] if isinstance(x, int) else [x])]
        _keep(B, cands, protocol, tol, True, out, report, name, dedupe=True)
    return [(out[i], commit[i], report[i]) for i in range(C)]


def _keep(B: _Cells, cands, protocol, tol, refine, out, report, name, dedupe):
    """Certify every candidate (t, profile) of every cell in one call; keep those
    within tolerance (once each, with ``dedupe``) in the cells' lists."""
    flat = [(i, t, pr) for i, lst in enumerate(cands) for t, pr in lst]
    res = None
    if flat:
        ci = np.array([x[0] for x in flat], int)
        ct = np.array([x[1] for x in flat], float)
        res = B.certify(ci, ct, _profile_rows([x[2] for x in flat], protocol), protocol, refine)
    r = 0
    for i, lst in enumerate(cands):
        found = []
        for t, pr in lst:
            eps_j, eps_s, u = (float(a[r]) for a in res)
            r += 1
            if eps_j <= tol and eps_s <= tol:
                if not dedupe or not any(abs(t - f.t) < 1e-7 and _same(pr, f.profile)
                                         for f in found):
                    found.append(JointEquilibrium(protocol, float(t), pr, eps_j, eps_s, u))
        if dedupe and not found:
            report[i].append(f"{name}: no pure-attention equilibrium (the judge's best response "
                             "and the senders' equilibrium jump past each other)")
        out[i] += found


def _dist(a, b) -> float:
    fa = np.concatenate([np.ravel(x) for x in (a if isinstance(a, tuple) else (a,))])
    fb = np.concatenate([np.ravel(x) for x in (b if isinstance(b, tuple) else (b,))])
    return float(np.max(np.abs(fa - fb)))


def _same(a, b) -> bool:
    return _dist(a, b) < 1e-7


def _mix_at_switch(B: _Cells, idx, z, lo, hi, protocol):
    """At a switch point z of the senders' equilibrium (per row), the blend of the
    profiles on either side that makes z the judge's best response, if one exists."""
    from scipy.optimize import elementwise

    out = [None] * len(idx)
    rows = np.array([r for r in range(len(idx)) if not _same(lo[r], hi[r])], int)
    if not len(rows):
        return out
    P_lo, P_hi = _profile_rows([lo[r] for r in rows], protocol), \
        _profile_rows([hi[r] for r in rows], protocol)

    def g(lam, b):
        b = b.astype(int)
        prof = _blend_rows(_take(P_lo, b), _take(P_hi, b), lam)
        return B.best(idx[rows[b]], prof, protocol, True)[0] - z[rows[b]]

    every = np.arange(len(rows), dtype=float)
    g0, g1 = g(np.zeros(len(rows)), every), g(np.ones(len(rows)), every)
    lam = np.where(g0 == 0, 0.0, 1.0)
    inside = g0 * g1 < 0
    if inside.any():
        with np.errstate(all="ignore"):
            lam[inside] = elementwise.find_root(g, (np.zeros(inside.sum()), np.ones(inside.sum())),
                                                args=(every[inside],),
                                                tolerances={"xatol": 1e-14}).x
    blend = _blend_rows(P_lo, P_hi, lam)
    for b, r in enumerate(rows):
        if g0[b] * g1[b] <= 0:
            out[r] = _row_profile(blend, b, protocol)
    return out
