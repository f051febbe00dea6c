"""Correlated signals and endogenous judge attention (seed 000, section 5), as a model.

Every equilibrium of every cell with certificates and outcomes.  The class
distribution of each cell is exact (``equilibrium.payoffs=exact``) or counted by
one call of the compiled kernel (:mod:`antiamp.kernels.correlated`) for a block
of cells on common random numbers (``simulated``); every sender payoff, judge
utility and metric is a function of those weights.  At the defaults (eta = 0,
phi = 1, effort off) the model is the seed's baseline.  The solvers live in the
libraries :mod:`.core` and :mod:`.effort` of this package.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from dataclasses import dataclass
from typing import Any

import numpy as np
from ...schema import CONSULT_DEBATE
from ...lazy import lazy
xr = lazy("xarray")

from ...config import ConfigError
from ...registry import Model, require_signal_stance, strategies_solved
from .config import SECTIONS
from ...layout import axis_coords
from ...plotting import (axes_of, axis_label, axis_symbol, describe, fmt, integer_ticks,
                        judge_fields, panel_grid, save, shared_legend)
from . import effort as ef
from . import core as sg
from ...judge import judge_tables
from ...runner import interactive


#: The fields each per-cell input of a block reads: it is computed once per distinct
#: combination of them (a grid's block answers from its axes, :func:`_per_cell`), not
#: once a cell.
_JOINT_FIELDS = ("model.p", "signals.joint", "signals.p_P", "signals.p_A", "signals.eta",
                 "signals.eta_mode")
_AVAIL_FIELDS = ("model.rho", "signals.avail", "signals.phi", "signals.rho_unbelieved")
_TABLE_FIELDS = ("judge", "protocol", "effort", "signals.kappa_r", "signals.r_gap",
                 "signals.r_sd")
_INFO_FIELDS = _JOINT_FIELDS + ("model.pi",)


def _per_cell(cells, fields, fn) -> tuple[list, np.ndarray]:
    """``fn(config)`` once per distinct combination of ``fields`` (what ``fn`` reads):
    (its results, each cell's combination).  A block of a grid
    (:class:`antiamp.sweeps.spec.CellBlock`) groups its cells from its axes' columns
    without a config per cell; a list of configs is grouped by identity (configs
    that are not hashable, such as a ``signals.joint`` table, need no key)."""
    if hasattr(cells, "distinct"):
        reps, inverse = cells.distinct(fields)
    else:
        seen: dict = {}
        inverse = np.array([seen.setdefault(id(c), len(seen)) for c in cells], np.intp)
        reps = list({id(c): c for c in cells}.values())
    return [fn(c) for c in reps], inverse


def _column(cells, path: str) -> np.ndarray:
    """Every cell's value of the config field ``path`` ("section.name")."""
    if hasattr(cells, "field"):
        return cells.field(path)
    section, name = path.split(".")
    return np.array([getattr(getattr(c, section), name) for c in cells])


def _stacked(results: list, inverse: np.ndarray, k: int) -> np.ndarray:
    """Item ``k`` of each distinct combination's result, a row per cell."""
    return np.array([r[k] for r in results])[inverse]


def _cell_tables(c):
    """(J_c, J_d [belief of A, 2, 2], v, t) of a cell at its fixed attention, or
    without attention (t NaN)."""
    if c.effort.enabled and c.effort.t_fixed is not None:
        t = np.float64(c.effort.t_fixed)
        a, b, vv = ef.tables_at(c.effort, c.judge, c.protocol, [t])
        return a[0], np.stack([b[0], b[0]]), vv[0], t
    Jc, Jd = _signal_tables(c)
    return Jc, Jd, 0.0, np.nan


@dataclass
class _Block:
    """What the solvers read of a block's cells, as columns (a row a cell), each
    computed once per distinct combination of the fields it reads: a grid's block
    costs no config per cell (the configs, ``cells``, are read only by the attention
    solver, a cell at a time).  ``of`` is each row's cell: the rows of a block's
    twins at eta = 0 and of its delta-method perturbations repeat cells."""

    cells: Any
    of: np.ndarray  # [R] the cell of each row
    pi: np.ndarray  # [R]
    joint: np.ndarray  # [R, 2, 2, 2]
    avail: np.ndarray  # [R, 2, 2]
    Jc: np.ndarray  # [R, 2] judge tables at the fixed attention (or none)
    Jd: np.ndarray  # [R, 2, 2, 2]
    v: np.ndarray  # [R] check probability
    t: np.ndarray  # [R] fixed attention (NaN: none)
    c_e: np.ndarray  # [R]
    welfare: tuple  # alpha, beta, delta_c [R] each

    def __len__(self) -> int:
        return len(self.of)

    def cell(self, r: int):
        """The config of row ``r``'s cell."""
        return self.cells[int(self.of[r])]

    def take(self, rows, **changes) -> "_Block":
        """Rows ``rows`` of this block (with ``changes`` to its columns)."""
        rows = np.asarray(rows, np.intp)
        cols = {f.name: getattr(self, f.name)[rows] for f in dataclasses.fields(self)
                if f.name not in ("cells", "welfare")}
        return _Block(self.cells, welfare=tuple(w[rows] for w in self.welfare),
                      **{**cols, **changes})

    @property
    def endogenous(self) -> bool:
        """Whether the judge chooses its attention (read from the first row's cell, as
        the block's solver is chosen)."""
        e = self.cell(0).effort
        return bool(e.enabled and e.t_fixed is None)


def _block(cells) -> _Block:
    """A block's cells as columns (:class:`_Block`)."""
    joint, ij = _per_cell(cells, _JOINT_FIELDS, lambda c: sg.joint_table(c.signals, c.model.p))
    avail, ia = _per_cell(cells, _AVAIL_FIELDS, lambda c: sg.avail_table(c.signals, c.model.rho))
    tables, it = _per_cell(cells, _TABLE_FIELDS, _cell_tables)
    return _Block(cells, np.arange(len(cells)), _column(cells, "model.pi"),
                  np.array(joint)[ij], np.array(avail)[ia],
                  *(_stacked(tables, it, k) for k in range(4)), _column(cells, "model.c_e"),
                  tuple(_column(cells, f"welfare.{k}") for k in ("alpha", "beta", "delta_c")))


def _weights(block: _Block, payoffs: str, run, calls: list):
    if payoffs == "exact":
        return sg.class_probabilities(block.pi, block.joint, block.avail)
    calls.append(len(block))
    return sg.class_counts(block.pi, block.joint, block.avail, run.n_instances, run.seed,
                           run.n_threads, progress=run.progress, device=run.device)


@dataclass
class Found:
    """One equilibrium of one cell and protocol."""

    t: float
    profile: Any
    eps_judge: float
    eps_senders: float


def _signal_tables(c):
    """(J_c [2], J_d [2 belief of A, 2, 2]) of a cell without attention."""
    s, j = c.signals, c.judge
    if s.kappa_r > 0:
        return sg.rhetoric_tables(j.lam, j.mu, j.kappa, s.kappa_r, s.r_gap, s.r_sd)
    Jc, Jd = judge_tables(j, c.protocol)
    return Jc, np.stack([Jd, Jd])


def _fixed_attention_equilibria(block: _Block, W, eqc, report, certify: bool = True):
    """Equilibria without endogenous effort (attention fixed or absent); ``certify``:
    with their certificates (without, ``eps_senders`` is NaN: the delta method's
    perturbed solves read only the profiles)."""
    C = len(block)
    Jc, Jd, v, t, c_e = block.Jc, block.Jd, block.v, block.t, block.c_e
    G = sg.gains(W, Jc, Jd, v, c_e)
    out = [[[], []] for _ in range(C)]
    if eqc.method == "enumerate":  # every cell's equilibria as rows, certified at once
        # Indifference is detected well inside the certificate tolerance (as in sim.effort).
        (cc, x_Pc), (dc, x_P, x_A) = sg.equilibrium_rows(G, eqc.tol * 1e-3)
        for protocol, idx, prof, prs in (
                (0, cc, sg.Profile(x_Pc, np.ones((len(cc), 2)), np.ones((len(cc), 2, 2))),
                 list(x_Pc)),
                (1, dc, sg.Profile(np.ones((len(dc), 2)), x_P, x_A), list(zip(x_P, x_A)))):
            if not len(idx):
                continue
            eps = (sg.certificate(W[idx], prof, Jc[idx], Jd[idx], v[idx], c_e[idx])[:, protocol]
                   if certify else np.full(len(idx), np.nan))
            for i, pr, e in zip(idx.tolist(), prs, eps.tolist()):
                out[i][protocol].append(Found(t[i], pr, 0.0, e))
        return out, {}
    cons, deb = sg.enumerate_equilibria(G, eqc.tol * 1e-3)
    if eqc.method != "enumerate":
        methods = ("br", "qre", "root") if eqc.method == "all" else (eqc.method,)
        for i in range(C):
            gen, rep = sg.general_debate(G, i, methods, eqc.starts, eqc.tol)
            bad = [r for r in rep if "no equilibrium" in r[2]]
            if bad:
                report.append(f"cell {i}: " + "; ".join(f"{m}#{s}: {st}" for m, s, st in bad))
            merged = list(gen) if eqc.method != "all" else list(deb[i])
            for xp, xa in gen:
                if not any(np.max(np.abs(xp - u)) < 1e-7 and np.max(np.abs(xa - w)) < 1e-7
                           for u, w in merged):
                    merged.append((xp, xa))
            deb[i] = merged
    for protocol, per in ((0, cons), (1, deb)):  # every cell's equilibria in one call
        idx = np.array([i for i in range(C) for _ in per[i]], int)
        prs = [pr for i in range(C) for pr in per[i]]
        if not prs:
            continue
        eps = (sg.certificate(W[idx], ef._profile_rows(prs, protocol), Jc[idx], Jd[idx], v[idx],
                              c_e[idx])[:, protocol] if certify else np.full(len(idx), np.nan))
        for i, pr, e in zip(idx, prs, eps):
            out[i][protocol].append(Found(t[i], pr, 0.0, float(e)))
    return out, {}


def _effort_equilibria(block: _Block, W, eqc, report, progress):
    from antiamp.runner import tqdm_class

    tqdm = tqdm_class()

    cms = []
    for i in range(len(block)):
        c = block.cell(i)
        cms.append(ef.CellModel(W[i], c.judge, c.protocol, c.effort, c.model.c_e, ()))
    with tqdm(total=len(cms), desc="attention equilibria", disable=not progress,
              leave=False) as bar:
        solved = ef.solve_cells(cms, eqc.tol, progress=bar)
    out, commits = [], {}
    for i, (eqs, commit, rep) in enumerate(solved):
        report += [f"cell {i}: {r}" for r in rep]
        out.append([[Found(e.t, e.profile, e.eps_judge, e.eps_senders) for e in eqs
                     if e.protocol == p] for p in (0, 1)])
        commits[i] = commit
    return out, commits


def _equilibria(block: _Block, W, eqc, report, progress=False, certify: bool = True):
    if block.endogenous:
        return _effort_equilibria(block, W, eqc, report, progress)
    return _fixed_attention_equilibria(block, W, eqc, report, certify)


def _tables_for(c, t):
    if c.effort.enabled and not np.isnan(t):
        a, b, v = ef.tables_at(c.effort, c.judge, c.protocol, [t])
        return a[0], np.stack([b[0], b[0]]), v[0]
    Jc, Jd = _signal_tables(c)
    return Jc, Jd, 0.0


def _metrics(block: _Block, W, found, simulated: bool):
    """Outcomes at every equilibrium: rows flattened over (cell, protocol, equilibrium)."""
    rows = [(i, p, f) for i in range(len(block)) for p in (0, 1) for f in found[i][p]]
    if not rows:
        return rows, {}
    ri = np.array([i for i, _, _ in rows], np.intp)
    if block.endogenous:  # each equilibrium's tables at its own attention
        Jc, Jd, v = (np.array(a) for a in zip(*[_tables_for(block.cell(i), f.t)
                                                 for i, p, f in rows]))
    else:  # the cell's tables (at its fixed attention, if any)
        Jc, Jd, v = block.Jc[ri], block.Jd[ri], block.v[ri]
    prof = sg.Profile(np.ones((len(rows), 2)), np.ones((len(rows), 2)), np.ones((len(rows), 2, 2)))
    for r, (i, p, f) in enumerate(rows):
        if p == 0:
            prof.x_Pc[r] = f.profile
        else:
            prof.x_P[r], prof.x_A[r] = f.profile
    weights = W[ri]
    wel = tuple(w[ri] for w in block.welfare)
    # Standard errors of simulated payoffs only (exact ones have none to store).
    vals = sg.outcomes(weights, prof, Jc, Jd, v, wel, n=None if simulated else 1, se=simulated)
    pick = np.array([p for _, p, _ in rows])
    r_idx = np.arange(len(rows))
    out = {k: (m[r_idx, pick], s[r_idx, pick]) for k, (m, s) in vals.items()}
    cost = np.array([0.0 if np.isnan(f.t) else float(ef.cost(block.cell(i).effort, f.t, p))
                     for i, p, f in rows])
    out["judge_utility"] = (out["acc"][0] - cost, out["acc"][1])
    return rows, out

def _moves(f: Found, e) -> bool:
    """Whether an equilibrium moves with the class frequencies: a mixed strategy (an
    indifference condition pins it) or an interior attention level chosen by the
    judge on the continuum (at a corner or on the grid it stays put).  ``e``: the
    cell's ``effort`` section, None where the judge chooses no attention (a block
    solved at fixed attention)."""
    x = np.concatenate([np.ravel(a) for a in (f.profile if isinstance(f.profile, tuple)
                                             else (f.profile,))])
    chosen = (e is not None and e.enabled and e.t_fixed is None and e.refine
              and np.isfinite(f.t) and 1e-9 < f.t < e.t_max - 1e-9)
    return chosen or bool(np.any((x > 1e-9) & (x < 1 - 1e-9)))


def _distance(f: Found, g: Found) -> float:
    a = f.profile if isinstance(f.profile, tuple) else (f.profile,)
    b = g.profile if isinstance(g.profile, tuple) else (g.profile,)
    d = max(float(np.max(np.abs(np.asarray(u) - np.asarray(w)))) for u, w in zip(a, b))
    if not (np.isnan(f.t) and np.isnan(g.t)):
        d = max(d, abs(f.t - g.t)) if np.isfinite(f.t - g.t) else np.inf
    return d


def _equilibrium_se(block: _Block, W, eqc, rows, vals, report, step=1e-5, match=1e-3):
    """Standard errors of simulated outcomes at equilibria that move with the sample.

    A mixed equilibrium (or an attention level) is solved from the same class counts
    that the outcomes average, so it carries their sampling error too: holding the
    profile fixed misstates the spread over seeds (it doubled it for the antagonist's
    evidence rate).  Delta method over the multinomial class frequencies f: each
    outcome M(f), with the equilibrium re-solved at f +- h e_k (central differences,
    the equilibrium continued as the nearest one), has gradient g and variance
    (sum_k f_k g_k^2 - (sum_k f_k g_k)^2) / n.  Pure-strategy equilibria with strict
    incentives do not move: their standard errors are already the exact ones.
    Re-solving is done numerically, not by implicit differentiation, so that the
    same code serves every solver (enumeration, the general debate solver, effort).
    """
    from ...metrics import delta_ses

    if block.endogenous:  # the attention the judge chooses moves too
        moving = [r for r, (i, p, f) in enumerate(rows) if _moves(f, block.cell(i).effort)]
    else:  # a mixed strategy: :func:`_moves` without effort, every row at once
        flat = _flat_rows([f for _, _, f in rows], np.array([p for _, p, _ in rows], np.intp))
        moving = np.flatnonzero(((flat > 1e-9) & (flat < 1 - 1e-9)).any(axis=1)).tolist()
    need = sorted({rows[r][0] for r in moving})
    if not need:
        return
    W = np.asarray(W, float)
    # Each needed cell's perturbations (cell, class, sign, h), in the order of the loops
    # over cells, their classes of positive weight and the signs +, -: built as arrays.
    need_a = np.asarray(need, np.intp)
    Wn = W[need_a]
    Fn = Wn / np.array([W[i].sum() for i in need])[:, None]  # each cell's as f = W[i] / n
    ci, kk = np.nonzero(Wn > 0)  # row-major: by cell, then class
    hk = np.minimum(step, Fn[ci, kk] / 2)
    pc = np.repeat(need_a[ci], 2)
    ks = np.repeat(kk, 2)
    scale = np.tile([1.0, -1.0], len(ci))  # sgn / (2 h) times the continuation's value
    hh = np.repeat(hk, 2)
    pw = Fn[np.repeat(ci, 2)]
    pw[np.arange(len(pw)), ks] += scale * hh
    two_h = 2 * hh
    jp, pp, flat_p, t_p, values_at = _perturbed(block.take(pc), pw, eqc)
    # Each cell's perturbations are consecutive (j0..j1), and so are the perturbed rows
    # of each perturbation and protocol: segments found once, by sorting (stable).
    first = np.searchsorted(pc, need_a)
    last = np.searchsorted(pc, need_a, side="right")
    span = {int(i): (int(a), int(b)) for i, a, b in zip(need_a, first, last)}
    order = {p: np.flatnonzero(pp == p) for p in (0, 1)}  # rows_p of a protocol, by j
    j_of = {p: jp[order[p]] for p in (0, 1)}  # their perturbations, searched by cell
    # The equilibrium continued along each perturbation of its cell, a row at a time;
    # then every row's gradients and standard errors at once (they had been a row and
    # a metric at a time: most of a simulated grid's time beyond its solving).
    found = {}
    for p in (0, 1):
        rs = [r for r in moving if rows[r][1] == p]
        got = _continued_rows([rows[r][2] for r in rs], [span[rows[r][0]] for r in rs],
                              order[p], jp, flat_p, t_p, match, j_of[p])
        found.update(zip(rs, got))
    done, picks, spans = [], [], []
    for r in moving:
        i, p, f = rows[r]
        j0, j1 = span[i]
        picked = found[r]
        if picked is None:
            report.append(f"cell {i}, {('consult', 'debate')[p]}: an equilibrium does not "
                          "continue when the class frequencies move (a knife edge); its "
                          "standard errors hold the strategy profile fixed")
            continue
        done.append(r)
        picks.append(picked)
        spans.append(np.arange(j0, j1))
    if not done:
        return
    done_a = np.asarray(done, np.intp)
    cell = np.array([rows[r][0] for r in done], np.intp)
    n = np.array([W[i].sum() for i in cell])  # as each row's own sum
    freq = W[cell] / n[:, None]
    jj, picked = np.concatenate(spans), np.concatenate(picks)
    at = (np.repeat(np.arange(len(done)), [len(s) for s in spans]), ks[jj])
    vp = values_at(picked)  # the metrics of the continued equilibria alone
    for m in vals:
        grad = np.zeros((len(done), W.shape[1]))
        # in the perturbations' order, as the sum of their central differences
        np.add.at(grad, at, scale[jj] * vp[m] / two_h[jj])
        se = vals[m][1]
        keep = np.isfinite(se[done_a])
        se[done_a[keep]] = delta_ses(freq[keep], grad[keep], n[keep])


def _flat_rows(found: list, protocol: np.ndarray) -> np.ndarray:
    """:func:`_flat` of many equilibria at once ([R, 6])."""
    out = np.zeros((len(found), 6))
    for p in (0, 1):
        at = np.flatnonzero(protocol == p)
        if not len(at):
            continue
        if p == 0:
            out[at, :2] = np.array([found[r].profile for r in at], float).reshape(-1, 2)
        else:
            out[at, :2] = np.array([found[r].profile[0] for r in at], float).reshape(-1, 2)
            out[at, 2:] = np.array([found[r].profile[1] for r in at], float).reshape(-1, 4)
    return out


def _flat(f: Found) -> np.ndarray:
    """An equilibrium's profile as 6 numbers (consultancy's 2, then zeros)."""
    if isinstance(f.profile, tuple):
        return np.concatenate([np.ravel(f.profile[0]), np.ravel(f.profile[1])])
    return np.concatenate([np.ravel(f.profile), np.zeros(4)])


def _continued(f: Found, j0: int, j1: int, rows: np.ndarray, jp, flat_p, t_p, match,
               jp_rows=None):
    """The perturbed rows (one for each perturbation j0..j1-1) that continue the
    equilibrium ``f``: among each perturbation's equilibria of the protocol (``rows``,
    ordered by perturbation), the nearest (:func:`_distance`: the largest difference of
    a presentation probability or of attention; the first of equals); None when a
    perturbation has none within ``match`` (a knife edge)."""
    lo, hi = np.searchsorted(jp[rows], [j0, j1])
    cand = rows[lo:hi]
    if not len(cand):
        return None
    x = _flat(f)
    width = 2 if not isinstance(f.profile, tuple) else 6  # consultancy: x_Pc alone
    seg = jp[cand]
    starts = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])
    if len(starts) != j1 - j0:  # a perturbation without an equilibrium of this protocol
        return None
    if np.isnan(flat_p[cand]).any() or np.isnan(x).any():  # _distance's order, one by one
        picked = []
        for a, b in zip(starts, np.r_[starts[1:], len(cand)]):
            d = [_distance(f, Found(t_p[c], _unflat(flat_p[c], width), 0, 0))
                 for c in cand[a:b]]
            if min(d) > match:
                return None
            picked.append(cand[a + int(np.argmin(d))])
        return np.array(picked, np.intp)
    d = np.abs(flat_p[cand, :width] - x[:width]).max(axis=1)
    with np.errstate(invalid="ignore"):
        dt = f.t - t_p[cand]
    both = np.isnan(f.t) & np.isnan(t_p[cand])  # no attention on either side
    d = np.where(both, d, np.where(np.isfinite(dt), np.maximum(d, np.abs(dt)), np.inf))
    best = np.minimum.reduceat(d, starts)
    if (best > match).any():
        return None
    # the first row of each segment at its minimum
    at = np.flatnonzero(d == np.repeat(best, np.diff(np.r_[starts, len(d)])))
    first = at[np.r_[True, seg[at][1:] != seg[at][:-1]]]
    return cand[first]


def _continued_rows(fs: list, spans: list, rows: np.ndarray, jp, flat_p, t_p, match,
                    jp_rows) -> list:
    """:func:`_continued` of many equilibria of one protocol (``fs``, their cells'
    perturbations ``spans`` (j0, j1)), the same rows picked: the distances of every
    equilibrium's candidates at once, each perturbation's nearest by a segmented
    minimum.  An equilibrium or candidate with a NaN (compared one by one) goes to
    :func:`_continued` itself."""
    out: list = [None] * len(fs)
    if not fs:
        return out
    X = np.array([_flat(f) for f in fs])
    T = np.array([f.t for f in fs], float)
    width = np.array([6 if isinstance(f.profile, tuple) else 2 for f in fs])
    j0, j1 = np.array(spans, np.intp).reshape(-1, 2).T
    lo, hi = np.searchsorted(jp_rows, j0), np.searchsorted(jp_rows, j1)
    L = hi - lo
    row = np.repeat(np.arange(len(fs)), L)  # each candidate's equilibrium
    cand = rows[np.arange(L.sum()) - np.repeat(np.cumsum(L) - L, L) + np.repeat(lo, L)]
    seg = jp[cand]
    nan = np.isnan(X).any(axis=1)
    np.logical_or.at(nan, row, np.isnan(flat_p[cand]).any(axis=1))
    w6 = width[row] == 6
    with np.errstate(invalid="ignore"):
        diff = np.abs(flat_p[cand] - X[row])
        d = np.where(w6, diff.max(axis=1), diff[:, :2].max(axis=1))
        dt = T[row] - t_p[cand]
    both = np.isnan(T[row]) & np.isnan(t_p[cand])  # no attention on either side
    d = np.where(both, d, np.where(np.isfinite(dt), np.maximum(d, np.abs(dt)), np.inf))
    # segments: an equilibrium's candidates of one perturbation (consecutive)
    new = np.r_[True, (row[1:] != row[:-1]) | (seg[1:] != seg[:-1])] if len(row) else \
        np.zeros(0, bool)
    starts = np.flatnonzero(new)
    n_seg = np.bincount(row[starts], minlength=len(fs))
    best = np.minimum.reduceat(d, starts) if len(starts) else np.zeros(0)
    seg_row = row[starts]
    far = np.zeros(len(fs), bool)
    np.logical_or.at(far, seg_row, best > match)
    segid = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(d)]))
    at = np.flatnonzero(d == best[segid])  # the first candidate of each at its minimum
    first = at[np.r_[True, segid[at][1:] != segid[at][:-1]]] if len(at) else at
    pick_row = seg_row[segid[first]]
    bounds = np.searchsorted(pick_row, np.arange(len(fs) + 1))
    for k, f in enumerate(fs):
        if nan[k]:  # _distance's order, one by one
            out[k] = _continued(f, int(j0[k]), int(j1[k]), rows, jp, flat_p, t_p, match,
                                jp_rows)
        elif L[k] and n_seg[k] == j1[k] - j0[k] and not far[k]:
            out[k] = cand[first[bounds[k]:bounds[k + 1]]]
    return out


def _unflat(x: np.ndarray, width: int):
    return x[:2].copy() if width == 2 else (x[:2].copy(), x[2:].reshape(2, 2).copy())


#: Rows of perturbed cells solved together (the delta method's 64 a mixed
#: equilibrium's cell): bounds the memory of a large block's solve.
PERTURBED_ROWS = 1 << 13


def _perturbed(block: _Block, W, eqc):
    """:func:`_equilibria` of the perturbed rows, at most :data:`PERTURBED_ROWS` at a
    time (each row's equilibria depend on its own row alone): ``(jp, pp, flat_p, t_p,
    values_at)``, each equilibrium found as a row (its perturbed row, protocol, profile
    as :func:`_flat_rows`, attention), in :func:`_metrics`' order; ``values_at(rows)``
    ``{metric: values}`` at those of them (the delta method reads the metrics of
    the equilibria that continue a cell's, about half of those found: each is
    evaluated on its own row alone, so a subset has the same values as all)."""
    parts, evals = [], []
    for a in range(0, len(block), PERTURBED_ROWS):
        part = np.arange(a, min(a + PERTURBED_ROWS, len(block)))
        sub = block.take(part)
        if not sub.endogenous and eqc.method == "enumerate":
            j, p, flat, t = _enumerated_rows(sub, W[part], eqc)
            evals.append(lambda idx, sub=sub, Wp=W[part], j=j, p=p, flat=flat, t=t:
                         _enumerated_values(sub, Wp, j[idx], p[idx], flat[idx], t[idx]))
        else:
            found, _ = _equilibria(sub, W[part], eqc, [], False, certify=False)
            r, v = _metrics(sub, W[part], found, False)
            j = np.array([i for i, _, _ in r], np.intp)
            p = np.array([q for _, q, _ in r], np.intp)
            flat = _flat_rows([f for _, _, f in r], p)
            t = np.array([f.t for _, _, f in r], float)
            evals.append(lambda idx, v=v: {k: m[idx] for k, (m, _) in v.items()})
        parts.append((j + a, p, flat, t))
    jp, pp, flat_p, t_p = (np.concatenate(x) for x in zip(*parts))
    starts = np.cumsum([0] + [len(x[0]) for x in parts])

    def values_at(rows) -> dict:
        """``{metric: values}`` at the rows ``rows`` of ``jp`` (in that order)."""
        uniq, inv = np.unique(np.asarray(rows, np.intp), return_inverse=True)
        got: dict = {}
        for q, ev in enumerate(evals):
            lo, hi = np.searchsorted(uniq, starts[q:q + 2])
            if hi > lo:
                for k, m in ev(uniq[lo:hi] - starts[q]).items():
                    got.setdefault(k, []).append(m)
        return {k: np.concatenate(m)[inv] for k, m in got.items()}

    return jp, pp, flat_p, t_p, values_at


def _enumerated_rows(block: _Block, W, eqc):
    """What :func:`_perturbed` takes of :func:`_fixed_attention_equilibria` (enumerated,
    uncertified), as arrays: ``(ri, rp, flat, t)``, the same rows in the same order as
    :func:`_metrics`', without an object per equilibrium (a block's perturbed rows are
    64 a mixed equilibrium's cell); :func:`_enumerated_values` their metrics."""
    G = sg.gains(W, block.Jc, block.Jd, block.v, block.c_e)
    (cc, x_Pc), (dc, x_P, x_A) = sg.equilibrium_rows(G, eqc.tol * 1e-3)
    cc, dc = np.asarray(cc, np.intp), np.asarray(dc, np.intp)
    # _metrics' order: by cell, consultancy before debate, each in the order found
    ri = np.concatenate([cc, dc])
    rp = np.concatenate([np.zeros(len(cc), np.intp), np.ones(len(dc), np.intp)])
    order = np.lexsort((rp, ri))
    ri, rp = ri[order], rp[order]
    R = len(ri)
    flat = np.zeros((R, 6))
    flat[:, :2] = np.concatenate([np.asarray(x_Pc, float).reshape(-1, 2),
                                  np.asarray(x_P, float).reshape(-1, 2)])[order]
    flat[:, 2:] = np.concatenate([np.zeros((len(cc), 4)),
                                  np.asarray(x_A, float).reshape(-1, 4)])[order]
    return ri, rp, flat, block.t[ri].astype(float)


def _enumerated_values(block: _Block, W, ri, rp, flat, t) -> dict:
    """:func:`_metrics`' exact-style values of enumerated equilibria (rows of
    :func:`_enumerated_rows`, any of them): ``{metric: values}``, each row at its
    own protocol, evaluated on its own row alone by a compiled loop
    (:func:`antiamp.kernels.signals_equilibria.row_outcomes`: the operations of
    :func:`antiamp.models.signals.core.outcomes` without standard errors, in its
    order, without its [rows, 32] temporaries a metric)."""
    from ...kernels.signals_equilibria import ROW_METRICS, row_outcomes

    R = len(ri)
    if not R:
        return {}
    f = np.ascontiguousarray  # a block's columns: a row each, Jd [R, 2, 2, 2] (_Block)
    vals = row_outcomes(f(np.asarray(W, float)[ri]), f(flat, float), f(rp, np.int64),
                        f(block.Jc[ri], float), f(block.Jd[ri], float), f(block.v[ri], float),
                        *(f(w[ri], float) for w in block.welfare), sg.CLASS_BITS)
    out = {k: vals[:, j] for j, k in enumerate(ROW_METRICS)}
    cost = np.zeros(R)
    for r in np.flatnonzero(~np.isnan(t)):  # a fixed attention's cost (as _metrics)
        cost[r] = float(ef.cost(block.cell(int(ri[r])).effort, t[r], int(rp[r])))
    out["judge_utility"] = out["acc"] - cost
    return out


def solve_cells(base, cells, progress=None) -> xr.Dataset:
    """Every equilibrium of the extended model (correlated signals, judge effort).

    Returns
    -------
    xarray.Dataset
        Dimensions (``cell``, ``protocol``, ``equilibrium``); equilibrium 0 is
        the one the judge prefers (highest accuracy net of attention cost).
        ``t_star`` (attention; NaN without effort), ``x_P`` [s_P] and ``x_A``
        [s_P, s_A] (presentation probabilities given available evidence, by
        type), the outcomes of :data:`sim.signals.OUTCOME_METRICS` (with ``_se``
        for simulated payoffs), ``judge_utility``, ``epsilon`` (largest deviation
        gain of any player), ``epsilon_judge``, ``collapse`` (t* = 0); per cell
        ``n_equilibria``, ``eta`` (the correlation used), ``eta_min``/``eta_max``
        (its feasible range), ``shared_blind_spot`` = Pr(s_A = s_P | a != omega),
        ``amp_gap`` (consultancy minus debate), ``amp_eta0`` and
        ``diversity_value`` = Amp(eta) - Amp(0), and with effort ``t_gap`` (debate
        minus consultancy attention) and the judge-as-leader optimum
        ``t_commit``/``amp_commit``/``acc_commit``.
    """
    shape, dims, axes = (len(cells),), ("cell",), ()  # a block: its cells along "cell"
    eqc = base.equilibrium
    simulated = eqc.payoffs == "simulated"
    show = (progress if progress is not None else
            base.run.progress if base.run.progress is not None else interactive())
    calls: list = []
    t0 = time.perf_counter()
    block = _block(cells)
    W = _weights(block, eqc.payoffs, base.run, calls)
    report: list = []
    found, commits = _equilibria(block, W, eqc, report, show)
    rows, vals = _metrics(block, W, found, simulated)
    if simulated:
        _equilibrium_se(block, W, eqc, rows, vals, report)
    # Twins at eta = 0 (same accuracies, independent errors): the value of diversity.
    kind, ik = _per_cell(cells, ("signals.joint", "signals.eta"), _twin_kind)
    kind = np.array(kind, int)[ik]
    amp0 = np.full((len(block), 2), np.nan)
    idx = np.flatnonzero(kind == 1)
    if len(idx):
        joint0, i0 = _per_cell(cells, _JOINT_FIELDS, lambda c: sg.joint_table(
            dataclasses.replace(c.signals, eta=0.0), c.model.p))
        twins = block.take(idx, joint=np.array(joint0)[i0][idx])
        # Cells that differ in eta alone have the same twin (a grid over eta and
        # another field: one twin a value of the other): each distinct twin is solved
        # once.  Its numbers are a function of its row alone (common random numbers:
        # the same counts for the same inputs), so the same bits as one a cell.
        first, which = _distinct_rows(twins)
        twins = twins.take(first)
        W0 = _weights(twins, eqc.payoffs, base.run, calls)
        f0, _ = _equilibria(twins, W0, eqc, [], show)
        r0, v0 = _metrics(twins, W0, f0, simulated)
        best = _best_rows(r0, v0, len(twins))
        for j, i in zip(which, idx):
            for p in (0, 1):
                if best[j][p] is not None:
                    amp0[i, p] = v0["amp"][0][best[j][p]]
    best = _best_rows(rows, vals, len(block))
    for i in np.flatnonzero(kind == 0):  # eta = 0 already: the cell is its own twin
        for p in (0, 1):
            if best[i][p] is not None:
                amp0[i, p] = vals["amp"][0][best[i][p]]
    elapsed = time.perf_counter() - t0
    return _assemble(base, block, shape, dims, axes, rows, vals, found, commits, W, amp0,
                     simulated, report, calls, elapsed)


def _distinct_rows(block: _Block) -> tuple:
    """``(first, which)``: the first row of each distinct row of ``block`` (its columns
    equal bit for bit; in the order of their bytes: each row is solved on its own, so
    any order serves) and each row's among them.  A row whose solution reads its cell's
    config beyond the columns (endogenous attention; a fixed attention's cost) is its
    own."""
    R = len(block)
    if block.endogenous:
        return np.arange(R), np.arange(R)
    cols = [block.pi, block.joint, block.avail, block.Jc, block.Jd, block.v, block.t,
            block.c_e, *block.welfare]
    key = np.concatenate([np.asarray(c, np.float64).reshape(R, -1) for c in cols]
                         + [np.where(np.isnan(block.t), -1.0, np.arange(R))[:, None]], axis=1)
    key = np.ascontiguousarray(key).view(np.dtype((np.void, key.shape[1] * 8))).ravel()
    _, first, which = np.unique(key, return_index=True, return_inverse=True)
    return first, which.ravel()


def _twin_kind(c) -> int:
    """1: the cell has a twin at eta = 0; 0: it is its own (eta = 0); -1: none (a
    joint table)."""
    if c.signals.joint is not None:
        return -1
    return 1 if c.signals.eta != 0 else 0


def _best_rows(rows, vals, C):
    """Per cell and protocol, the row of the judge-preferred equilibrium."""
    best = [[None, None] for _ in range(C)]
    for r, (i, p, f) in enumerate(rows):
        b = best[i][p]
        if b is None or vals["judge_utility"][0][r] > vals["judge_utility"][0][b] + 1e-12:
            best[i][p] = r
    return best


def _assemble(base, block, shape, dims, axes, rows, vals, found, commits, W, amp0, simulated,
              report, calls, elapsed):
    C = len(block)
    E = max([1] + [len(found[i][p]) for i in range(C) for p in (0, 1)])
    lead = (C, 2, E)
    arr = {k: np.full(lead, np.nan) for k in vals}
    se = {k: np.full(lead, np.nan) for k in vals}
    t_star, eps, eps_j = (np.full(lead, np.nan) for _ in range(3))
    xP = np.full(lead + (2,), np.nan)
    xA = np.full(lead + (2, 2), np.nan)
    # Order equilibria within (cell, protocol) by judge utility, best first (a stable
    # sort: ties keep the order found), every row placed at once.
    if rows:
        R = len(rows)
        ri = np.array([i for i, _, _ in rows], np.intp)
        rp = np.array([p for _, p, _ in rows], np.intp)
        ju = vals["judge_utility"][0]
        if np.isnan(ju).any():  # (never: a utility is a mean over every class) as sorted()
            groups: dict = {}
            for r in range(R):
                groups.setdefault((ri[r], rp[r]), []).append(r)
            order = np.array([r for rs in groups.values()
                              for r in sorted(rs, key=lambda r: -ju[r])], np.intp)
        else:
            order = np.lexsort((np.arange(R), -ju, rp, ri))
        i_s, p_s = ri[order], rp[order]
        new_group = np.ones(R, bool)
        new_group[1:] = (i_s[1:] != i_s[:-1]) | (p_s[1:] != p_s[:-1])
        start = np.maximum.accumulate(np.where(new_group, np.arange(R), 0))
        e_s = np.arange(R) - start
        at = (i_s, p_s, e_s)
        for k in vals:
            arr[k][at] = vals[k][0][order]
            se[k][at] = vals[k][1][order]
        found_s = [rows[r][2] for r in order]
        ej = np.array([f.eps_judge for f in found_s], float)
        es = np.array([f.eps_senders for f in found_s], float)
        t_star[at] = np.array([f.t for f in found_s], float)
        eps[at] = np.where(es > ej, es, ej)  # max(eps_judge, eps_senders), as max() picks
        eps_j[at] = ej
        consult = p_s == 0
        if consult.any():
            xP[i_s[consult], 0, e_s[consult]] = np.array(
                [f.profile for f, c in zip(found_s, consult) if c], float)
        if (~consult).any():
            deb = [f.profile for f, c in zip(found_s, consult) if not c]
            xP[i_s[~consult], 1, e_s[~consult]] = np.array([x for x, _ in deb], float)
            xA[i_s[~consult], 1, e_s[~consult]] = np.array([a for _, a in deb], float)
    n_eq = np.array([[len(found[i][p]) for p in (0, 1)] for i in range(C)])
    out_shape = tuple(shape)
    dd = tuple(dims) + ("protocol", "equilibrium")
    dc = tuple(dims) + ("protocol",)

    def r(a, tail=()):
        return np.asarray(a).reshape(out_shape + a.shape[1:])

    data = {}
    for k, (ln, definition) in sg.OUTCOME_METRICS.items():
        data[k] = (dd, r(arr[k]), {"long_name": f"{ln} at the equilibrium", "definition": definition,
                                   "units": "utility" if k == "welfare" else "1"})
        if simulated:
            data[f"{k}_se"] = (dd, r(se[k]), {"long_name": f"standard error of {ln}",
                                              "units": "utility" if k == "welfare" else "1"})
    data["judge_utility"] = (dd, r(arr["judge_utility"]), {
        "long_name": "judge utility Pr(y = omega) - c_J(t)", "units": "utility"})
    data["t_star"] = (dd, r(t_star), {"long_name": "judge attention t at the equilibrium",
                                      "units": "1"})
    data["collapse"] = (dd, r(np.where(np.isnan(t_star), False, t_star <= 1e-12)),
                        {"long_name": "attention collapses (t* = 0)"})
    data["x_P"] = (dd + ("s_P",), r(xP), {
        "long_name": "protagonist presentation probability given t_P = 1, by its signal",
        "units": "1"})
    data["x_A"] = (dd + ("s_P", "s_A"), r(xA), {
        "long_name": "antagonist presentation probability given t_A = 1, by a = s_P and s_A",
        "units": "1"})
    data["epsilon"] = (dd, r(eps), {"long_name": "certificate: largest gain of a unilateral "
                                    "deviation (judge or any sender type)", "units": "utility"})
    data["epsilon_judge"] = (dd, r(eps_j), {"long_name": "judge's largest attention-deviation "
                                            "gain", "units": "utility"})
    data["n_equilibria"] = (dc, n_eq.reshape(out_shape + (2,)),
                            {"long_name": "number of equilibria found"})
    amp_best = arr["amp"][:, :, 0]
    data["amp_gap"] = (tuple(dims), r(amp_best[:, 0] - amp_best[:, 1]), {
        "long_name": "amplification gap Amp(consult) - Amp(debate) at equilibrium 0",
        "units": "1"})
    data["amp_eta0"] = (dc, r(amp0), {"long_name": "Amp at eta = 0 (same accuracies)",
                                      "units": "1"})
    data["diversity_value"] = (dc, r(amp_best - amp0), {
        "long_name": "value of diversity Amp(eta) - Amp(0) at equilibrium 0", "units": "1"})
    # Signal structure per cell.
    info, ii = _per_cell(block.cells, _INFO_FIELDS, _signal_info)
    info = np.array(info)[ii]  # eta, lo, hi, p_P, p_A, shared
    for k, (name, ln) in enumerate((("eta_used", "correlation of the senders' errors"),
                                    ("eta_min", "smallest feasible eta"),
                                    ("eta_max", "largest feasible eta"),
                                    ("p_P_used", "protagonist accuracy Pr(s_P = omega)"),
                                    ("p_A_used", "antagonist accuracy Pr(s_A = omega)"),
                                    ("shared_blind_spot",
                                     "Pr(s_A = s_P | a != omega): the antagonist shares the error"))):
        data[name] = (tuple(dims), r(info[:, k]), {"long_name": ln, "units": "1"})
    if commits:
        tc, ac, cc = (np.full((C, 2), np.nan) for _ in range(3))
        ci = sorted(commits)
        led = [[[Found(*commits[i][q][:2], 0, 0)] if q in commits[i] else [] for q in (0, 1)]
               for i in ci]
        rr, vv = _metrics(block.take(ci), W[ci], led, False)  # every cell at once
        for row, (j, p, f) in enumerate(rr):
            i = ci[j]
            tc[i, p], ac[i, p], cc[i, p] = f.t, vv["amp"][0][row], vv["acc"][0][row]
        data["t_commit"] = (dc, r(tc), {"long_name": "attention the judge would commit to "
                                        "(leader, grid optimum)", "units": "1"})
        data["amp_commit"] = (dc, r(ac), {"long_name": "Amp under committed attention",
                                          "units": "1"})
        data["acc_commit"] = (dc, r(cc), {"long_name": "accuracy under committed attention",
                                          "units": "1"})
        data["t_gap"] = (tuple(dims), r(t_star[:, 1, 0] - t_star[:, 0, 0]), {
            "long_name": "attention in debate minus consultancy at equilibrium 0", "units": "1"})
    coords = {"protocol": ("protocol", ["consult", "debate"],
                           dict(CONSULT_DEBATE)),
              "equilibrium": ("equilibrium", np.arange(E)),
              "s_P": ("s_P", [0, 1]), "s_A": ("s_A", [0, 1])}
    ds = xr.Dataset(data, coords=axis_coords(axes, dims, coords))
    eqc = base.equilibrium
    ds.attrs.update({
        "title": "antiamp: correlated signals and judge effort, equilibria",
        "n_instances": int(base.run.n_instances) if eqc.payoffs == "simulated" else 0,
        "method": eqc.method, "payoffs": eqc.payoffs, "tol": eqc.tol,
        "effort": "on" if base.effort.enabled else "off",
        "kernel_calls": int(len(calls)),
        "kernel_cells": int(sum(calls)),
        "solve_seconds": float(elapsed),
        "solver_report": "\n".join(report) if report else "no issues",
        "equilibrium_order": "equilibrium 0 is the judge-preferred one",
    })
    return ds


def _signal_info(c) -> tuple:
    joint = sg.joint_table(c.signals, c.model.p)
    pi = c.model.pi
    pr_om = np.array([1 - pi, pi])
    # Pr(s_P != omega) and Pr(s_A = s_P, s_P != omega).
    wrong = sum(pr_om[om] * joint[om, 1 - om, :].sum() for om in (0, 1))
    shared = sum(pr_om[om] * joint[om, 1 - om, 1 - om] for om in (0, 1))
    p_P = sum(pr_om[om] * joint[om, om, :].sum() for om in (0, 1))
    p_A = sum(pr_om[om] * joint[om, :, om].sum() for om in (0, 1))
    if c.signals.joint is None:
        lo, hi = sg.eta_range(*sg.accuracies(c.signals, c.model.p))
        eta = sg.resolved_eta(c.signals, *sg.accuracies(c.signals, c.model.p))
    else:
        lo = hi = np.nan
        cp = np.array([[sum(pr_om[om] * joint[om, om if a else 1 - om, om if b else 1 - om]
                            for om in (0, 1)) for b in (0, 1)] for a in (0, 1)])
        sd = np.sqrt(p_P * (1 - p_P) * p_A * (1 - p_A))
        eta = (cp[1, 1] - p_P * p_A) / sd if sd > 0 else np.nan
    return (eta, lo, hi, p_P, p_A, shared / wrong if wrong > 0 else np.nan)


#: The config paths :func:`validate` reads beyond the declared ranges: the stance, the
#: accuracies eta's range depends on, the judge, the signal structure (not phi,
#: rho_unbelieved nor the rhetoric's spread: declared ranges alone) and the attention
#: limits. A grid is validated column by column, and :func:`validate` once per distinct
#: combination of the axes these cover (an eta x phi grid: once per eta).
VALIDATE_READS = ("model.stance", "model.p", "model.rho", "judge.kind", "judge.jury_size",
                  "signals.eta", "signals.eta_mode", "signals.joint", "signals.p_P",
                  "signals.p_A", "signals.avail", "signals.kappa_r", "effort.enabled",
                  "effort.t_fixed", "effort.t_max", "effort.lam_gain", "effort.kappa_gain")


def validate(cfg) -> None:
    """Checks of extension 'signals' beyond the shared ones (ConfigError names the field)."""
    from ...evidence_game import validate_equilibrium

    require_signal_stance(cfg, "signals")
    sg.validate_signals(cfg.signals, cfg.model.p, cfg.model.rho, cfg.model.stance)
    if cfg.signals.kappa_r > 0:
        if cfg.judge.kind != "logit" or cfg.judge.jury_size != 1:
            raise ConfigError("signals.kappa_r (rhetoric) needs one logit judge: set "
                              "judge=logit and judge.jury_size=1")
        if cfg.effort.enabled:
            raise ConfigError("signals.kappa_r (rhetoric) and effort.enabled cannot be "
                              "combined")
    ef.validate_effort(cfg.effort, cfg.judge)
    validate_equilibrium(cfg.equilibrium)


# ------------------------------------------------------------------ table and figures
def format_table(ds: xr.Dataset) -> str:
    eff = ds.attrs["effort"] == "on"
    lines = [f"correlated signals{' and judge attention' if eff else ''} "
             f"({ds.attrs['method']}, {ds.attrs['payoffs']} payoffs)",
             f"eta = {float(ds.eta_used):.4f} (feasible [{float(ds.eta_min):.4f}, "
             f"{float(ds.eta_max):.4f}]), Pr(antagonist shares the error | a != omega) = "
             f"{float(ds.shared_blind_spot):.4f}", ""]
    head = "protocol  #  " + ("t*        " if eff else "") + \
        "amp       acc       fwc       counter   welfare   epsilon"
    lines.append(head)
    for prot in ("consult", "debate"):
        d = ds.sel(protocol=prot)
        for e in range(int(d.n_equilibria)):
            r = d.isel(equilibrium=e)
            vals = ([float(r.t_star)] if eff else []) + [
                float(r[v]) for v in ("amp", "acc", "fwc", "counter_signal", "welfare")]
            cells = [("-" if np.isnan(v) else f"{v:.5f}").ljust(9) for v in vals]
            lines.append(f"{prot:<9} {e}  " + " ".join(cells) + f" {float(r.epsilon):.2e}")
            xs = f"    x_P by s_P: {np.round(r.x_P.values, 5).tolist()}"
            if prot == "debate":
                xs += f"; x_A by (a, s_A): {np.round(r.x_A.values, 5).tolist()}"
            lines.append(xs)
    if eff and "t_commit" in ds:
        lines.append("")
        lines.append("judge as leader (attention committed): t = " + ", ".join(
            f"{p} {float(ds.t_commit.sel(protocol=p)):.4f}" for p in ("consult", "debate")))
    lines.append("")
    lines.append(f"value of diversity Amp(eta) - Amp(0), debate: "
                 f"{float(ds.diversity_value.sel(protocol='debate')):+.5f}")
    return "\n".join(lines)


def _labelled(ds: xr.Dataset) -> xr.Dataset:
    """The grid with its eta axis labelled as signals.eta_mode reads it."""
    import yaml

    mode = (yaml.safe_load(ds.attrs["config"]).get("signals") or {}).get("eta_mode")
    if "eta" not in ds.coords or mode != "fraction":
        return ds
    return ds.assign_coords(eta=ds.eta.assign_attrs(
        long_name="error correlation eta (fraction of its feasible extreme)"))


def plot_extension(ds: xr.Dataset, path: Path) -> list:
    """Outcomes at the judge-preferred equilibrium against the sweep axes."""
    ds = _labelled(ds)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dims = axes_of(ds)
    if not dims:
        return []
    d0 = ds.isel(equilibrium=0)
    x = dims[0]
    extra = {d: 0 for d in dims[2:]}
    d0 = d0.isel(extra) if extra else d0
    hue = dims[1] if len(dims) > 1 else None
    eff = ds.attrs["effort"] == "on"
    panels = [("amp", "mistake amplification Amp"), ("acc", "accuracy"),
              ("amp_gap", "Amp(consult) - Amp(debate)")]
    if eff:
        panels += [("t_star", "equilibrium attention t*"), ("t_gap", "t*(debate) - t*(consult)")]
    elif x == "eta" or hue == "eta":
        panels += [("diversity_value", "value of diversity Amp(eta) - Amp(0), debate")]
    fig, axs = panel_grid(len(panels))
    hues = [None] if hue is None else list(range(ds.sizes[hue]))
    if len(hues) > 6:
        hues = list(np.unique(np.linspace(0, len(hues) - 1, 6).round().astype(int)))
    cmap = plt.get_cmap("viridis")
    xv = ds[x].values
    colours = []
    for k, h in enumerate(hues):
        col = cmap(k / max(1, len(hues) - 1)) if h is not None else "C0"
        colours.append(("" if h is None else f"{axis_symbol(ds, hue)} = {fmt(ds[hue].values[h])}",
                        col))
    for ax, (var, title) in zip(axs, panels):
        for (lab, col), h in zip(colours, hues):
            sub = d0 if h is None else d0.isel({hue: h})
            da = sub[var]
            if "protocol" in da.dims:
                ax.plot(xv, da.sel(protocol="debate").values, "-o", ms=3, color=col)
                if var != "diversity_value":
                    ax.plot(xv, da.sel(protocol="consult").values, "--", color=col)
            else:
                ax.plot(xv, da.values, "-o", ms=3, color=col)
        if var in ("amp_gap", "t_gap", "diversity_value"):
            ax.axhline(0, color="0.6", lw=0.8)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(axis_label(ds, x), fontsize=8)
        integer_ticks(ax, xv)
        if var != "t_star" and var != "t_gap" and var not in ("amp_gap", "diversity_value"):
            ax.set_ylim(-0.02, 1.02)
        if ds[x].attrs.get("config_path", "").endswith("c_J") and np.all(xv > 0):
            ax.set_xscale("log")
    switches = _regime_switches(d0, x, hue, hues, [c for _, c in colours])
    for xs_, col in switches:
        for ax in axs:
            ax.axvline(xs_, color=col, ls=":", lw=1.0)
    shared_legend(fig, colours if hue is not None else [],
                  [("debate", "-", "o"), ("consultancy", "--", None)]
                  + ([("debate equilibrium changes", ":", None)] if switches else []))
    note = ("; shown at " + ", ".join(f"{d}={fmt(ds[d].values[0])}" for d in extra)) if extra else ""
    fig.suptitle(f"{describe(ds, _fields(ds))} (equilibrium preferred by the judge){note}",
                 fontsize=9)
    written = save(fig, path)
    if eff and len(dims) >= 2:
        written += _attention_map(ds, path.with_name("attention_map"))
    return written


def _regime_switches(d0, x, hue, hues, colours) -> list:
    """(x, colour) midway between neighbouring grid points where the judge-preferred
    debate equilibrium changes its support (which sender types mix, present or
    withhold): the figures' jumps are changes of equilibrium, not noise.  ``colours``
    are the hues' line colours."""
    xv = np.asarray(d0[x].values, float) if d0[x].dtype.kind in "iuf" else None
    if xv is None or len(xv) < 2:
        return []
    out = []
    for h, col in zip(hues, colours):
        sub = d0 if h is None else d0.isel({hue: h})
        prof = np.concatenate([
            sub.x_P.sel(protocol="debate").transpose(x, ...).values.reshape(len(xv), -1),
            sub.x_A.sel(protocol="debate").transpose(x, ...).values.reshape(len(xv), -1)], axis=1)
        sig = np.where(np.isnan(prof), -1, np.where(prof < 1e-9, 0, np.where(prof > 1 - 1e-9, 2, 1)))
        for i in range(len(xv) - 1):
            if not np.array_equal(sig[i], sig[i + 1]):
                out.append((0.5 * (xv[i] + xv[i + 1]), col))
    return out


def _attention_map(ds, path):
    """Where debate raises (t_gap > 0) or lowers attention, faceted over a third axis."""
    import matplotlib.pyplot as plt

    dims = axes_of(ds)
    y, x = dims[1], dims[0]
    facets = list(range(ds.sizes[dims[2]])) if len(dims) > 2 else [None]
    fig, axs = plt.subplots(1, len(facets), figsize=(4 * len(facets) + 1, 3.8), squeeze=False,
                            layout="constrained")
    gap = ds.t_gap
    any_collapse = False
    lim = float(np.nanmax(np.abs(gap.values))) or 1.0
    for ax, f in zip(axs[0], facets):
        g = gap if f is None else gap.isel({dims[2]: f})
        g = g.isel({d: 0 for d in dims[3:]}) if len(dims) > 3 else g
        m = ax.pcolormesh(ds[x].values, ds[y].values, g.transpose(y, x).values, cmap="RdBu",
                          vmin=-lim, vmax=lim, shading="nearest")
        col = ds.collapse.isel(equilibrium=0).sel(protocol="debate")
        col = col if f is None else col.isel({dims[2]: f})
        col = col.isel({d: 0 for d in dims[3:]}) if len(dims) > 3 else col
        yy, xx = np.nonzero(col.transpose(y, x).values)
        if len(xx):
            any_collapse = True
            ax.scatter(ds[x].values[xx], ds[y].values[yy], marker="x", s=12, c="k",
                       label="debate attention collapses (t* = 0)")
        if ds[x].attrs.get("config_path", "").endswith("c_J"):
            ax.set_xscale("log")
        ax.set_xlabel(axis_label(ds, x), fontsize=8)
        ax.set_ylabel(axis_label(ds, y), fontsize=8)
        if f is not None:
            ax.set_title(f"{dims[2]} = {fmt(ds[dims[2]].values[f])}", fontsize=9)
    fig.colorbar(m, ax=axs[0].tolist(), label="t*(debate) - t*(consult)")
    if any_collapse:
        axs[0][0].legend(fontsize=7, frameon=False, loc="lower left")
    fig.suptitle("does debate raise judge attention? (blue: raises, red: lowers)", fontsize=10)
    return save(fig, path)



def _fields(ds) -> list:
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    fields = judge_fields(cfg) + [("signals", "phi"), ("signals", "p_A")]
    if cfg["effort"]["enabled"]:
        fields += [("effort", k) for k in ("c_J", "load", "lam_gain", "v_max")]
    return fields



def cells_per_block(base) -> int:
    """A grid's default block: 4096 cells, solved together (below that a block's cost
    is mostly its own: the Dataset, the store's chunk files), or 64 where the judge
    chooses its attention (each cell its own solve, tens of milliseconds: blocks small
    enough to spread over workers and to resume)."""
    e = base.effort
    return 64 if e.enabled and e.t_fixed is None else 4096


MODEL = Model(
    name="signals",
    title="correlated signals, shared blind spots and endogenous judge attention",
    run_cells=solve_cells,
    sections=SECTIONS,
    validate=validate, validate_reads=VALIDATE_READS, prepare=strategies_solved,
    kernel_fields=("model.pi", "model.p", "model.rho", "signals.p_P", "signals.p_A",
                   "signals.eta", "signals.eta_mode", "signals.joint", "signals.phi",
                   "signals.rho_unbelieved", "signals.avail", "run.n_instances", "run.seed"),
    format_table=format_table, figures=plot_extension,
    plot_vars=("amp", "acc", "amp_gap", "diversity_value"),
    gpu=True, cells_per_block=cells_per_block,
)
