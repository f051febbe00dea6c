"""Equilibria of the evidence-presentation game (seed 000, sections 3-4).

Each sender i observes only its own availability t_i and, when t_i = 1, presents
with probability x_i (t_i = 0 certifies a false stance and leaves no choice).
Its interim payoff gain from presenting, against the opponent's x, is affine:

    debate:  gain_P(x_A) = D0 + tau_P x_A (D1 - D0) - c_e,
             D_k = J(1, k) - J(0, k),   tau_P = Pr(t_A = 1 | t_P = 1),
             gain_A(x_P) = E0 + tau_A x_P (E1 - E0) - c_e,
             E_k = J(k, 0) - J(k, 1),   tau_A = Pr(t_P = 1 | t_A = 1),
    consult: gain_P = J_c(1) - J_c(0) - c_e,

with the posteriors mu_P = Pr(a = omega | t_P = 1) = p / (p + (1 - p) rho) and
mu_A = Pr(1 - a = omega | t_A = 1) = (1 - p) / ((1 - p) + p rho), so that
tau_P = mu_P rho + 1 - mu_P and tau_A = mu_A rho + 1 - mu_A.  The judge enters
only through its table J (tie-break, logit, juries; consultancy's default).

This module is the game, shared by the models that solve it: every equilibrium
exactly, by enumerating supports (pure profiles, the interior profile from the two
indifference conditions, and the extreme points of equilibrium segments in
degenerate games), vectorised over cells, or by the general fixed-point engine
(:mod:`antiamp.fixedpoint`); payoffs from the closed forms or from the simulation
kernel's class counts (the same kernel as ``simulate``, with common random
numbers); a certificate ``epsilon`` for each equilibrium from a separate
enumeration of the chance tree, and its stability.  The equilibrium model's solve
step (every equilibrium of a grid's cells as a Dataset) is in its package;
``antiamp.solve`` runs it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .judge import judge_tables

# The config section (``equilibrium.*``) is declared with the other shared sections
# in antiamp.config (the schema imports no numerical module); re-exported here.
from .config import METHODS, PAYOFFS, EquilibriumConfig  # noqa: E402,F401

KIND_PURE, KIND_MIXED, KIND_SEGMENT = "pure", "mixed", "segment end"


def nan_to_zero(x) -> np.ndarray:
    """``np.nan_to_num(x)`` (a float copy, NaN as 0), in one pass when ``x`` holds no
    infinity (probabilities never do; then nan_to_num itself)."""
    x = np.asarray(x, dtype=float)
    out = np.where(np.isnan(x), 0.0, x)
    return out if np.isfinite(out).all() else np.nan_to_num(x)


# ------------------------------------------------------------------ the game
@dataclass
class Game:
    """Gain coefficients of a batch of cells (arrays of shape [C])."""

    p_c: np.ndarray
    rho: np.ndarray
    c_e: np.ndarray
    J_c: np.ndarray  # [C, 2]
    J_d: np.ndarray  # [C, 2, 2]
    tau_P: np.ndarray
    tau_A: np.ndarray
    tau_P_se: np.ndarray | None = None
    tau_A_se: np.ndarray | None = None
    #: simulated: frequencies of (t_P t_A) = (1 1), (1 0), (0 1), (0 0) [C, 4] and n [C]
    t_freq: np.ndarray | None = None
    t_n: np.ndarray | None = None

    @property
    def mu_P(self):
        d = self.p_c + (1 - self.p_c) * self.rho
        return np.where(d > 0, self.p_c / np.where(d > 0, d, 1), np.nan)

    @property
    def mu_A(self):
        d = (1 - self.p_c) + self.p_c * self.rho
        return np.where(d > 0, (1 - self.p_c) / np.where(d > 0, d, 1), np.nan)

    def coefficients(self):
        J = self.J_d
        D0, D1 = J[:, 1, 0] - J[:, 0, 0], J[:, 1, 1] - J[:, 0, 1]
        E0, E1 = J[:, 0, 0] - J[:, 0, 1], J[:, 1, 0] - J[:, 1, 1]
        g0P, g1P = D0 - self.c_e, self.tau_P * (D1 - D0)
        g0A, g1A = E0 - self.c_e, self.tau_A * (E1 - E0)
        gc = self.J_c[:, 1] - self.J_c[:, 0] - self.c_e
        return g0P, g1P, g0A, g1A, gc



@dataclass
class CellArrays:
    """What the evidence game reads of C validated cells, as columns [C]: from
    config objects (:meth:`of_cells`) or straight from a block of a grid's columns
    (:meth:`of_block`, the engine's)."""

    pi: np.ndarray
    p: np.ndarray
    rho: np.ndarray
    c_e: np.ndarray
    fixed: np.ndarray  # bool: stance = fixed
    a: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    delta_c: np.ndarray
    J_c: np.ndarray  # [C, 2]
    J_d: np.ndarray  # [C, 2, 2]

    def __len__(self) -> int:
        return len(self.pi)

    @property
    def p_c(self) -> np.ndarray:
        """Pr(a = omega): p for the signal stance, pi or 1 - pi for a fixed one."""
        return np.where(self.fixed, np.where(self.a == 1, self.pi, 1.0 - self.pi), self.p)

    @classmethod
    def of_cells(cls, cells: list) -> "CellArrays":
        tabs = [judge_tables(c.judge, c.protocol) for c in cells]

        def col(get, dtype=float):
            return np.array([get(c) for c in cells], dtype=dtype)

        return cls(col(lambda c: c.model.pi), col(lambda c: c.model.p),
                   col(lambda c: c.model.rho), col(lambda c: c.model.c_e),
                   col(lambda c: c.model.stance == "fixed", bool), col(lambda c: c.model.a, int),
                   col(lambda c: c.welfare.alpha), col(lambda c: c.welfare.beta),
                   col(lambda c: c.welfare.delta_c),
                   np.array([t[0] for t in tabs], float), np.array([t[1] for t in tabs], float))

    @classmethod
    def of_block(cls, block) -> "CellArrays":
        """A block of a grid's cells read column by column (``field``/``distinct`` of
        :class:`antiamp.sweeps.spec.CellBlock`): no config built per cell, the judge's
        tables once for each distinct judge and protocol; the same arrays as
        :meth:`of_cells`."""
        f = block.field
        reps, inv = block.distinct(("judge", "protocol"))
        tabs = [judge_tables(c.judge, c.protocol) for c in reps]
        J_c = np.array([t[0] for t in tabs], float).reshape(-1, 2)[inv]
        J_d = np.array([t[1] for t in tabs], float).reshape(-1, 2, 2)[inv]
        return cls(*(f(k).astype(float) for k in ("model.pi", "model.p", "model.rho",
                                                  "model.c_e")),
                   f("model.stance") == "fixed", f("model.a").astype(int),
                   *(f(k).astype(float) for k in ("welfare.alpha", "welfare.beta",
                                                  "welfare.delta_c")),
                   J_c, J_d)


def cell_arrays(cells) -> CellArrays:
    if isinstance(cells, CellArrays):
        return cells
    if hasattr(cells, "distinct") and hasattr(cells, "field"):  # a block of a grid
        return CellArrays.of_block(cells)
    return CellArrays.of_cells(list(cells))


def exact_game(cells) -> Game:
    """Closed-form gain coefficients of validated configs (or :class:`CellArrays`)."""
    c = cell_arrays(cells)
    return game_from_arrays(c.p_c, c.rho, c.c_e, c.J_c, c.J_d)


def game_from_arrays(p_c, rho, c_e, J_c, J_d) -> Game:
    """The game of C cells from arrays: Pr(a = omega), rho, c_e ([C]) and judge tables
    ``J_c`` [C, 2], ``J_d`` [C, 2, 2]."""
    p_c, rho, c_e = (np.asarray(v, dtype=float) for v in (p_c, rho, c_e))
    g = Game(p_c, rho, c_e, np.asarray(J_c, float), np.asarray(J_d, float),
             np.ones_like(rho), np.ones_like(rho))
    mu_P, mu_A = g.mu_P, g.mu_A
    g.tau_P = np.where(np.isnan(mu_P), 1.0, mu_P * rho + 1 - mu_P)
    g.tau_A = np.where(np.isnan(mu_A), 1.0, mu_A * rho + 1 - mu_A)
    return g


def simulated_game(cells: list, n: int, seed: int, n_threads: int = 0,
                   device: str = "cpu") -> Game:
    """Gain coefficients estimated by the baseline kernel (one run per cell).

    With every presentation probability at 1 the kernel's evidence indicators are
    the availabilities, so its class counts give Pr(t_A = 1 | t_P = 1) and
    Pr(t_P = 1 | t_A = 1); the payoff of each action against any profile is then
    affine in the profile (the opponent's presentation draw is integrated out).
    Common random numbers make the map deterministic in the profile.
    """
    from .metrics import EA_DEBATE, EP_DEBATE
    from .runner import baseline_thresholds, run_baseline_counts

    cells = cell_arrays(cells)
    g = exact_game(cells)
    tp, ta, tps, tas, tn = (np.empty(len(cells)) for _ in range(5))
    tf = np.empty((len(cells), 4))
    shared: dict = {}  # cells with the same kernel inputs share one kernel call
    for i in range(len(cells)):
        key = (float(cells.pi[i]), float(cells.p[i]), float(cells.rho[i]), bool(cells.fixed[i]),
               int(cells.a[i]))
        if key not in shared:
            thr = baseline_thresholds(key[0], key[1], key[2], 1.0, 1.0, 1.0)
            shared[key] = run_baseline_counts(thr, key[3], key[4], n, seed,
                                              n_threads=n_threads, progress=False,
                                              device=device).astype(float)
        cnt = shared[key]
        # With x = 1 the debate evidence indicators are t_P and t_A.
        nP = cnt[EP_DEBATE == 1].sum()
        nA = cnt[EA_DEBATE == 1].sum()
        both = cnt[(EP_DEBATE == 1) & (EA_DEBATE == 1)].sum()
        tp[i] = both / nP if nP else 1.0
        ta[i] = both / nA if nA else 1.0
        tps[i] = np.sqrt(tp[i] * (1 - tp[i]) / nP) if nP else np.nan
        tas[i] = np.sqrt(ta[i] * (1 - ta[i]) / nA) if nA else np.nan
        tn[i] = cnt.sum()
        tf[i] = np.array([both, nP - both, nA - both, tn[i] - nP - nA + both]) / tn[i]
    g.tau_P, g.tau_A, g.tau_P_se, g.tau_A_se = tp, ta, tps, tas
    g.t_freq, g.t_n = tf, tn
    return g


# ------------------------------------------------------------------ exact enumeration
KIND_NAMES = np.array([KIND_PURE, KIND_MIXED, KIND_SEGMENT, ""])


def enumerate_debate(game: Game, tol: float = 1e-12):
    """All extreme equilibria of the debate evidence game, for every cell.

    Returns ``x_P``, ``x_A``, ``kind`` as arrays [C, K] padded with NaN / "" and
    the count per cell.  Candidates: the 4 pure profiles; the interior profile
    solving both indifference conditions; in degenerate games (a sender
    indifferent against a pure opponent action), the end points of the segment
    of the other sender's mixtures that keep that action a best response.  The
    loop is compiled (kernels.evidence_game).
    """
    xp, xa, kind, count = debate_codes(game, tol)
    return xp, xa, KIND_NAMES[kind], count


def debate_codes(game: Game, tol: float = 1e-12, coefs=None):
    """:func:`enumerate_debate` with the kinds as codes (0 pure, 1 mixed, 2 segment end,
    -1 none; ``KIND_NAMES[code]`` names them); ``coefs``: the game's
    :meth:`Game.coefficients` if already computed."""
    from antiamp.kernels.evidence_game import enumerate_debate_cells

    g0P, g1P, g0A, g1A, _ = game.coefficients() if coefs is None else coefs
    xp, xa, kind, count = enumerate_debate_cells(g0P, g1P, g0A, g1A, tol)
    E = max(1, int(count.max()) if len(count) else 1)
    return xp[:, :E], xa[:, :E], kind[:, :E], count


def kind_codes(kind) -> np.ndarray:
    """Kind names as the codes of :func:`debate_codes`."""
    kind = np.asarray(kind)
    return np.select([kind == KIND_PURE, kind == KIND_MIXED, kind == KIND_SEGMENT],
                     [0, 1, 2], -1).astype(np.int8)


def enumerate_consult(game: Game, tol: float = 1e-12):
    """Consultancy: one sender, present iff its gain is positive; both pure actions if zero."""
    xp, kind, count = consult_codes(game, tol)
    return xp, np.full_like(xp, np.nan), np.where(kind == 0, KIND_PURE, ""), count


def consult_codes(game: Game, tol: float = 1e-12, coefs=None):
    """:func:`enumerate_consult` as (x_P, kind codes, count): present (1) first, then
    withhold (0), each where it is a best response."""
    gc = (game.coefficients() if coefs is None else coefs)[4]
    one, zero = gc >= -tol, gc <= tol  # presenting / withholding is a best response
    count = one.astype(np.int64) + zero
    E = max(1, int(count.max()) if len(count) else 1)
    xp = np.full((len(gc), E), np.nan)
    xp[:, 0] = np.where(one, 1.0, np.where(zero, 0.0, np.nan))
    if E > 1:
        xp[:, 1] = np.where(one & zero, 0.0, np.nan)
    return xp, np.where(np.isnan(xp), -1, 0).astype(np.int8), count


# ------------------------------------------------------------------ certificates
def interim_payoffs(game: Game, x_P, x_A):
    """Interim payoffs of each action of each sender type, by enumerating the chance tree.

    Independent of :meth:`Game.coefficients`: walks (P correct?, t_P, t_A, the
    other sender's presentation) with their probabilities.  Returns
    ``(uP0, uP1, uA0, uA1, uPc0, uPc1)`` broadcast against ``x_P``, ``x_A``.
    Simulated games use their estimated Pr(t_opp = 1 | t_own = 1) in place of
    the exact chance probabilities.
    """
    x_P, x_A = np.asarray(x_P, float), np.asarray(x_A, float)
    lead = (slice(None),) + (None,) * (x_P.ndim - 1)
    p_c, rho, c_e = game.p_c[lead], game.rho[lead], game.c_e[lead]
    J = game.J_d[lead + (slice(None), slice(None))]
    Jc = game.J_c[lead + (slice(None),)]
    uP = [np.zeros(np.broadcast(x_P, p_c).shape) for _ in range(2)]
    uA = [np.zeros_like(uP[0]) for _ in range(2)]
    wP = np.zeros_like(uP[0])
    wA = np.zeros_like(uP[0])
    simulated = game.tau_P_se is not None
    for correct in (() if simulated else (0, 1)):
        pr_c = p_c if correct else 1 - p_c
        for tP in (0, 1):
            pr_tp = (1.0 if tP else 0.0) if correct else (rho if tP else 1 - rho)
            for tA in (0, 1):
                pr_ta = (rho if tA else 1 - rho) if correct else (1.0 if tA else 0.0)
                w = pr_c * pr_tp * pr_ta
                if tP:  # P's information set
                    wP = wP + w
                    for aP in (0, 1):
                        pres = tA * x_A  # Pr(e_A = 1)
                        v = pres * J[..., aP, 1] + (1 - pres) * J[..., aP, 0] - c_e * aP
                        uP[aP] = uP[aP] + w * v
                if tA:
                    wA = wA + w
                    for aA in (0, 1):
                        pres = tP * x_P
                        v = (pres * (1 - J[..., 1, aA]) + (1 - pres) * (1 - J[..., 0, aA])
                             - c_e * aA)
                        uA[aA] = uA[aA] + w * v
    with np.errstate(invalid="ignore", divide="ignore"):
        uP = [u / wP for u in uP]
        uA = [u / wA for u in uA]
    if simulated:  # replace the chance weights by the simulated conditional frequencies
        tp, ta = game.tau_P[lead], game.tau_A[lead]
        uP = [tp * x_A * J[..., a, 1] + (1 - tp * x_A) * J[..., a, 0] - c_e * a for a in (0, 1)]
        uA = [ta * x_P * (1 - J[..., 1, a]) + (1 - ta * x_P) * (1 - J[..., 0, a]) - c_e * a
              for a in (0, 1)]
    uPc = [Jc[..., a] - c_e * a for a in (0, 1)]
    return uP[0], uP[1], uA[0], uA[1], uPc[0], uPc[1]


def certificates(game: Game, x_P, x_A, protocol: str):
    """epsilon: the largest interim gain any sender type gets by deviating to a pure action."""
    if protocol == "debate" and game.tau_P_se is None and np.ndim(x_P) == 2:
        from antiamp.kernels.evidence_game import debate_certificates

        return debate_certificates(game.p_c, game.rho, game.c_e, game.J_d,
                                   np.ascontiguousarray(x_P, dtype=float),
                                   nan_to_zero(x_A))
    if protocol == "consult":  # one sender, no chance move that matters to its choice
        x_P = np.asarray(x_P, dtype=float)
        lead = (slice(None),) + (None,) * (x_P.ndim - 1)
        uPc0, uPc1 = game.J_c[:, 0][lead], game.J_c[:, 1][lead] - game.c_e[lead]
        return np.maximum(uPc0, uPc1) - (x_P * uPc1 + (1 - x_P) * uPc0)
    uP0, uP1, uA0, uA1, uPc0, uPc1 = interim_payoffs(game, x_P, np.nan_to_num(x_A))
    epsP = np.maximum(uP0, uP1) - (x_P * uP1 + (1 - x_P) * uP0)
    epsA = np.maximum(uA0, uA1) - (x_A * uA1 + (1 - x_A) * uA0)
    return np.fmax(np.nan_to_num(epsP, nan=0.0), np.nan_to_num(epsA, nan=0.0))


def stability(game: Game, x_P, x_A, kind, protocol: str, tol: float, coefs=None):
    """Asymptotic stability under smoothed best-response dynamics in the sharp limit.

    A pure profile is stable when strict (every type strictly prefers its action);
    an interior profile is stable when the two senders' incentives move in
    opposite directions (g1_P g1_A < 0: the linearisation spirals in); segment
    end points of degenerate games are not.  ``coefs``: the game's
    :meth:`Game.coefficients` if already computed.
    """
    g0P, g1P, g0A, g1A, gc = (c[:, None] for c in (game.coefficients() if coefs is None
                                                    else coefs))
    kind = np.asarray(kind)
    code = kind_codes(kind) if kind.dtype.kind in "US" else kind
    if protocol == "consult":
        return (code == 0) & (np.abs(gc) > tol)
    strictP = np.abs(g0P + g1P * nan_to_zero(x_A)) > tol
    strictA = np.abs(g0A + g1A * nan_to_zero(x_P)) > tol
    pure = (code == 0) & strictP & strictA
    mixed = (code == 1) & (g1P * g1A < 0)
    return pure | mixed


# ------------------------------------------------------------------ general engine path
def general_equilibria(game: Game, methods, n_starts: int, tol: float):
    """Per cell, the general fixed-point engine on the game's gain maps."""
    from .fixedpoint import solve_general

    g0P, g1P, g0A, g1A, gc = game.coefficients()
    C = len(g0P)
    deb_p, deb_a, reports, con_p = [], [], [], []
    for i in range(C):
        def gain(x, i=i):
            return np.array([g0P[i] + g1P[i] * x[1], g0A[i] + g1A[i] * x[0]])

        def gain_rows(X, i=i):  # the same map on profiles [S, 2]
            return np.stack([g0P[i] + g1P[i] * X[:, 1], g0A[i] + g1A[i] * X[:, 0]], axis=1)

        res = solve_general(gain, 2, methods, n_starts, tol, gain_rows=gain_rows)
        deb_p.append([p[0] for p in res.profiles])
        deb_a.append([p[1] for p in res.profiles])
        reports.append(res.report)
        resc = solve_general(lambda x, i=i: np.array([gc[i]]), 1, methods, n_starts, tol,
                             gain_rows=lambda X, i=i: np.full((len(X), 1), gc[i]))
        con_p.append([p[0] for p in resc.profiles])
    return deb_p, deb_a, con_p, reports


# ------------------------------------------------------------------ API
def validate_equilibrium(eqc: EquilibriumConfig) -> None:
    """Range checks of ``equilibrium.*`` (declared on its fields); ConfigError names the
    field.  Called also where a section was built without the config's validation."""
    from .config import check_declared

    check_declared("equilibrium", eqc)


