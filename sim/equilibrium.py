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

``solve`` finds every equilibrium: exactly, by enumerating supports (pure
profiles, the interior profile from the two indifference conditions, and the
extreme points of equilibrium segments in degenerate games), vectorised over
cells; or by the general fixed-point engine (:mod:`sim.fixedpoint`).  Payoffs come
from the closed forms or from the simulation kernel's class counts (the same
kernel as ``simulate``, with common random numbers).  Each equilibrium gets a
certificate ``epsilon`` computed by a separate enumeration of the chance tree.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from .schema import CONSULT_DEBATE
from .lazy import lazy
xr = lazy("xarray")
from omegaconf import DictConfig, OmegaConf

from ._version import __version__
from .config import Config, ConfigError, as_yaml, to_config, to_dataclass
from .judge import judge_tables
from .metrics import class_probabilities, evaluate

from .sections import METHODS, PAYOFFS  # noqa: E402,F401  (declared with the section; re-exported)
KIND_PURE, KIND_MIXED, KIND_SEGMENT = "pure", "mixed", "segment end"
#: The outcomes reported at each equilibrium, with their long names.
OUTCOMES = {"amp": "mistake amplification", "acc": "accuracy", "fwc": "follow-when-correct",
            "welfare": "principal welfare U_D"}


from .sections import EquilibriumConfig  # noqa: E402,F401  (re-exported)


@dataclass
class SolveConfig(Config):
    equilibrium: EquilibriumConfig = field(default_factory=EquilibriumConfig)


def _nan_to_zero(x) -> np.ndarray:
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
    config objects (:meth:`of_cells`) or straight from a grid's columns
    (:meth:`of_grid`, validating each distinct value once)."""

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
    def of_grid(cls, grid) -> "CellArrays":
        from antiamp.sweeps.spec import grid_columns

        field, _, J_c, J_d, _ = grid_columns(grid)
        f = {k: field(k) for k in ("model.pi", "model.p", "model.rho", "model.c_e", "model.a",
                                   "welfare.alpha", "welfare.beta", "welfare.delta_c")}
        return cls(*(f[k].astype(float) for k in ("model.pi", "model.p", "model.rho",
                                                  "model.c_e")),
                   field("model.stance") == "fixed", f["model.a"].astype(int),
                   *(f[k].astype(float) for k in ("welfare.alpha", "welfare.beta",
                                                  "welfare.delta_c")),
                   np.asarray(J_c, float), np.asarray(J_d, float))


def _arrays(cells) -> CellArrays:
    return cells if isinstance(cells, CellArrays) else CellArrays.of_cells(list(cells))


def exact_game(cells) -> Game:
    """Closed-form gain coefficients of validated configs (or :class:`CellArrays`)."""
    c = _arrays(cells)
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

    cells = _arrays(cells)
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
_KIND_NAMES = np.array([KIND_PURE, KIND_MIXED, KIND_SEGMENT, ""])


def enumerate_debate(game: Game, tol: float = 1e-12):
    """All extreme equilibria of the debate evidence game, for every cell.

    Returns ``x_P``, ``x_A``, ``kind`` as arrays [C, K] padded with NaN / "" and
    the count per cell.  Candidates: the 4 pure profiles; the interior profile
    solving both indifference conditions; in degenerate games (a sender
    indifferent against a pure opponent action), the end points of the segment
    of the other sender's mixtures that keep that action a best response.  The
    loop is compiled (kernels.evidence_game).
    """
    xp, xa, kind, count = _debate_codes(game, tol)
    return xp, xa, _KIND_NAMES[kind], count


def _debate_codes(game: Game, tol: float = 1e-12, coefs=None):
    """:func:`enumerate_debate` with the kinds as codes (0 pure, 1 mixed, 2 segment end,
    -1 none; ``_KIND_NAMES[code]`` names them); ``coefs``: the game's
    :meth:`Game.coefficients` if already computed."""
    from antiamp.kernels.evidence_game import enumerate_debate_cells

    g0P, g1P, g0A, g1A, _ = game.coefficients() if coefs is None else coefs
    xp, xa, kind, count = enumerate_debate_cells(g0P, g1P, g0A, g1A, tol)
    E = max(1, int(count.max()) if len(count) else 1)
    return xp[:, :E], xa[:, :E], kind[:, :E], count


def _kind_codes(kind) -> np.ndarray:
    """Kind names as the codes of :func:`_debate_codes`."""
    kind = np.asarray(kind)
    return np.select([kind == KIND_PURE, kind == KIND_MIXED, kind == KIND_SEGMENT],
                     [0, 1, 2], -1).astype(np.int8)


def enumerate_consult(game: Game, tol: float = 1e-12):
    """Consultancy: one sender, present iff its gain is positive; both pure actions if zero."""
    xp, kind, count = _consult_codes(game, tol)
    return xp, np.full_like(xp, np.nan), np.where(kind == 0, KIND_PURE, ""), count


def _consult_codes(game: Game, tol: float = 1e-12, coefs=None):
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
                                   _nan_to_zero(x_A))
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
    code = _kind_codes(kind) if kind.dtype.kind in "US" else kind
    if protocol == "consult":
        return (code == 0) & (np.abs(gc) > tol)
    strictP = np.abs(g0P + g1P * _nan_to_zero(x_A)) > tol
    strictA = np.abs(g0A + g1A * _nan_to_zero(x_P)) > tol
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


def _solve_config(cfg: Any) -> tuple:
    """(base Config, EquilibriumConfig, sweep spec or None) from any accepted form."""
    from antiamp.sweeps.spec import SweepSpec

    if isinstance(cfg, DictConfig):
        cfg = OmegaConf.to_container(cfg, resolve=True)
    cfg = dict(cfg or {})
    cfg.pop("hydra", None)
    eq = cfg.pop("equilibrium", {}) or {}
    sweep = cfg.pop("sweep", None)
    cfg.pop("executor", None)
    base_cfg = dict(cfg)
    base_cfg.setdefault("model", {})
    # Strategies are the unknowns here: dominance is not required of the base config.
    base_cfg["model"] = {**base_cfg["model"], "x_P": 1.0, "x_A": 1.0, "x_P_consult": 1.0}
    base = to_config(base_cfg)
    try:
        eqc = to_dataclass(EquilibriumConfig, eq)
    except Exception as exc:
        raise ConfigError(f"equilibrium: {str(exc).splitlines()[0]}") from None
    validate_equilibrium(eqc)
    spec = None
    if sweep and (sweep.get("axes") if isinstance(sweep, dict) else None):
        spec = to_dataclass(SweepSpec, sweep)
    return base, eqc, spec


def solve(cfg: Any = None) -> xr.Dataset:
    """Every equilibrium of the evidence-presentation game, with certificates.

    Parameters
    ----------
    cfg : dict, DictConfig or Config
        The ``antiamp`` config (model, judge, protocol, welfare, run) plus
        optional ``equilibrium`` (method, payoffs, tol, starts) and ``sweep.axes``
        (same syntax as ``antiamp-sweep``) for a grid of cells.  ``model.x_*``
        are ignored: the strategies are what is solved for.

    Returns
    -------
    xarray.Dataset
        Dimensions (sweep axes...,) ``protocol``, ``equilibrium`` (padded with
        NaN).  ``x_P``, ``x_A``: presentation probabilities given evidence;
        ``belief_P`` = Pr(e_A = 1 | t_P = 1) and ``belief_A`` = Pr(e_P = 1 | t_A =
        1) at the equilibrium; ``mu_P``, ``mu_A``: posterior that one's own stance
        is true given t = 1; ``amp``, ``acc``, ``fwc``, ``welfare``;
        ``epsilon`` (certificate), ``stable``, ``kind``; ``n_equilibria``.
    """
    return solve_cells(*solve_inputs(cfg))


def solve_inputs(cfg: Any = None) -> tuple:
    """:func:`solve`'s validated inputs, ``(base, eqc, cells, shape, dims, axes)``:
    what :func:`solve_cells` takes (a command validates them once, before its run)."""
    from antiamp.sweeps.spec import CellGrid

    base, eqc, spec = _solve_config(cfg)
    if spec is not None:
        grid = CellGrid(base, spec)
        # Validated and read column by column: each distinct value of an axis once.
        cells = CellArrays.of_grid(grid)
        shape, dims, axes = grid.shape, grid.dims, grid.axes
    else:
        cells, shape, dims, axes = [base], (), (), []
    return base, eqc, cells, shape, dims, axes


def solve_cells(base, eqc: EquilibriumConfig, cells: list, shape=None, dims=("cell",),
                axes=()) -> xr.Dataset:
    """Every equilibrium of each of ``cells`` (validated configs) as one Dataset.

    ``shape``/``dims``/``axes`` lay the cells out (default: one ``cell`` dimension);
    a cell's numbers depend only on its own config.
    """
    cells = _arrays(cells)
    shape = (len(cells),) if shape is None else shape
    if eqc.payoffs == "simulated":
        game = simulated_game(cells, base.run.n_instances, base.run.seed, base.run.n_threads,
                              base.run.device)
    else:
        game = exact_game(cells)
    consult, debate, report = _solve_game(game, eqc, len(cells))
    return _assemble(base, eqc, game, cells, shape, dims, axes, consult, debate, report)


def _solve_game(game: Game, eqc: EquilibriumConfig, n_cells: int):
    """Every equilibrium of C cells' games: (consult, debate, report) with consult =
    (x_P, kind, count) and debate = (x_P, x_A, kind, count), padded arrays [C, E]; the
    kinds as codes (:func:`_debate_codes`) from the enumeration, as names from the
    general engine."""
    tol = eqc.tol
    report = []
    if eqc.method == "enumerate":
        coefs = game.coefficients()
        dP, dA, dK, dN = _debate_codes(game, coefs=coefs)
        cP, cK, cN = _consult_codes(game, coefs=coefs)
    else:
        methods = ("br", "qre", "root") if eqc.method == "all" else (eqc.method,)
        gp, ga, gcp, reports = general_equilibria(game, methods, eqc.starts, tol)
        if eqc.method == "all":
            eP, eA, _, _ = enumerate_debate(game)
            eC, _, _, _ = enumerate_consult(game)
            for i in range(n_cells):
                for xp, xa in zip(eP[i], eA[i]):
                    if not np.isnan(xp) and not any(
                            abs(xp - u) < 1e-7 and abs(xa - v) < 1e-7 for u, v in zip(gp[i], ga[i])):
                        gp[i].append(xp)
                        ga[i].append(xa)
                for xc in eC[i]:
                    if not np.isnan(xc) and not any(abs(xc - u) < 1e-7 for u in gcp[i]):
                        gcp[i].append(xc)
        report = [f"cell {i}: " + "; ".join(f"{m}#{s}: {st}" for m, s, st in r)
                  for i, r in enumerate(reports) if any("no equilibrium" in x[2] for x in r)]
        dP, dA, dK, dN = _lists_to_padded(game, gp, ga)
        cP, _, cK, cN = _lists_to_padded(game, gcp, [[np.nan] * len(v) for v in gcp],
                                         consult=True)
    return (cP, cK, cN), (dP, dA, dK, dN), report


def _lists_to_padded(game, lp, la, consult=False):
    C = len(lp)
    E = max(1, max((len(v) for v in lp), default=1))
    P = np.full((C, E), np.nan)
    A = np.full((C, E), np.nan)
    for i in range(C):
        order = np.lexsort((np.asarray(la[i], float), np.asarray(lp[i], float))) if lp[i] else []
        for j, k in enumerate(order):
            P[i, j], A[i, j] = lp[i][k], la[i][k]
    n = np.array([len(v) for v in lp])
    interior = (P > 1e-9) & (P < 1 - 1e-9)
    if not consult:
        interior |= (A > 1e-9) & (A < 1 - 1e-9)
    K = np.where(np.isnan(P), "", np.where(interior, KIND_MIXED, KIND_PURE))
    return P, A, K, n


#: Cells whose outcomes are computed at once: the class probabilities of a block are
#: [cells, equilibria, 32] doubles, so a grid of 10^6 cells goes in blocks (the same
#: sums row by row, so the same bits).
OUTCOME_BLOCK = 65536


def _outcomes(game, cells, cP, dP, dA):
    """Outcomes at each equilibrium (exact, from the closed forms): {name: (values
    [C, E, protocol], ...)}.  One compiled pass over every cell; a block of cells
    holding a row the pass flags is computed again by the NumPy path (in blocks of
    ``OUTCOME_BLOCK`` cells, its memory bound)."""
    from antiamp.kernels.outcomes import METRICS, equilibrium_outcomes

    c = _arrays(cells)
    C = len(c)
    if set(METRICS) == set(OUTCOMES):
        vals, bad = equilibrium_outcomes(
            c.pi.astype(float), c.p.astype(float), game.rho.astype(float),
            c.fixed.astype(bool), c.a.astype(np.int64), _nan_to_zero(cP), _nan_to_zero(dP),
            _nan_to_zero(dA), game.J_c, game.J_d, c.alpha.astype(float), c.beta.astype(float),
            c.delta_c.astype(float),
            ~(np.isnan(cP) & np.isnan(dP)))  # rows without equilibria: NaN either way
        out = dict(zip(METRICS, vals))
        redo = [lo for lo in range(0, C, OUTCOME_BLOCK) if bad[lo:lo + OUTCOME_BLOCK].any()]
    else:  # pragma: no cover - the kernel computes every outcome reported
        out = {k: np.empty((C,) + cP.shape[1:] + (2,)) for k in OUTCOMES}
        redo = range(0, C, OUTCOME_BLOCK)
    for lo in redo:  # the NumPy path, which handles what the kernel flags
        s = slice(lo, min(lo + OUTCOME_BLOCK, C))
        wel = [c.alpha[s, None], c.beta[s, None], c.delta_c[s, None]]
        prob = class_probabilities(c.pi[s, None], c.p[s, None], game.rho[s, None],
                                   np.nan_to_num(cP[s]), np.nan_to_num(dP[s]),
                                   np.nan_to_num(dA[s]), c.fixed[s, None], c.a[s, None])
        part = evaluate(prob, game.J_c[s, None, :], game.J_d[s, None, :, :], *wel,
                        game.c_e[s, None], names=tuple(OUTCOMES), se=False)
        for k, (v, _) in part.items():
            out[k][s] = v
    return {k: (out[k], None) for k in OUTCOMES}


def _simulated_se(game, eqc, cells, cP, dP, dA, vals, report, h=1e-6, match=1e-3):
    """Standard errors of the outcomes of a simulated game: {name: [C, protocol, E]}.

    The outcomes are exact at the equilibrium profile, and the profile is solved
    from the simulated tau_P = f11 / (f11 + f10) and tau_A = f11 / (f11 + f01), so
    a mixed debate equilibrium (x_P = -g0A / g1A, x_A = -g0P / g1P) carries their
    sampling error; pure equilibria and consultancy (no tau) carry none (0).  Delta
    method over the frequencies of (t_P, t_A) (:func:`sim.metrics.delta_se`), the
    derivatives in tau by re-solving at tau +- h (the same solver; each equilibrium
    continued as the nearest one).
    """
    from .metrics import delta_se

    C, E = dP.shape
    moved = {}
    for which in ("tau_P", "tau_A"):
        for sgn in (1, -1):
            g2 = dataclasses.replace(game, **{which: getattr(game, which) + sgn * h})
            _, (p2, a2, _, _), _ = _solve_game(g2, eqc, C)
            moved[which, sgn] = (p2, a2, _outcomes(g2, cells, np.zeros_like(p2), p2, a2))
    f = game.t_freq
    fP, fA = f[:, 0] + f[:, 1], f[:, 0] + f[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        dtauP = np.stack([f[:, 1] / fP ** 2, -f[:, 0] / fP ** 2, 0 * fP, 0 * fP], axis=1)
        dtauA = np.stack([f[:, 2] / fA ** 2, 0 * fA, -f[:, 0] / fA ** 2, 0 * fA], axis=1)
    names = tuple(OUTCOMES)
    # The Agent Score Difference fwc - Amp moves with both through the equilibrium: its
    # gradient is the difference of theirs (their covariance included).
    out = {k: np.zeros((C, 2, E)) for k in names + ("asd",)}
    edges = []
    for i in range(C):
        for e in range(E):
            if np.isnan(dP[i, e]):
                continue
            deriv = {}
            for (which, sgn), (p2, a2, v2) in moved.items():
                d = np.maximum(np.abs(p2[i] - dP[i, e]), np.abs(a2[i] - dA[i, e]))
                d = np.where(np.isnan(d), np.inf, d)
                j = int(np.argmin(d))
                if d[j] > match:
                    deriv = None
                    break
                for k in names:
                    deriv[k, which] = deriv.get((k, which), 0.0) + sgn * v2[k][0][i, j, 1] / (2 * h)
            if deriv is None:
                edges.append(i)
                for k in out:
                    out[k][i, 1, e] = np.nan
                continue
            grads = {}
            for k in names:
                grads[k] = deriv[(k, "tau_P")] * dtauP[i] + deriv[(k, "tau_A")] * dtauA[i]
                out[k][i, 1, e] = delta_se(f[i], grads[k], game.t_n[i])
            out["asd"][i, 1, e] = delta_se(f[i], grads["fwc"] - grads["amp"], game.t_n[i])
    if edges:
        report.append(f"cells {sorted(set(edges))[:20]}: a debate equilibrium does not continue "
                      "when tau moves (a knife edge); its standard errors are NaN")
    return out


def _assemble(base, eqc, game, cells, shape, dims, axes, consult, debate, report):
    cP, cK, cN = consult
    dP, dA, dK, dN = debate
    C = len(cells)
    E = max(cP.shape[1], dP.shape[1])
    # Kind names (the general engine's) as codes, kept in their string width.
    names = np.result_type(cK, dK) if cK.dtype.kind == "U" else None
    if names is not None:
        cK, dK = _kind_codes(cK), _kind_codes(dK)
    # Every variable [C, protocol, E] filled in place (consultancy, then debate),
    # padded with NaN / kind code -1 (named "").
    xP = np.full((C, 2, E), np.nan)
    xA = np.full((C, 2, E), np.nan)
    code = np.full((C, 2, E), -1, np.int8)
    xP[:, 0, :cP.shape[1]], xP[:, 1, :dP.shape[1]], xA[:, 1, :dA.shape[1]] = cP, dP, dA
    code[:, 0, :cK.shape[1]], code[:, 1, :dK.shape[1]] = cK, dK
    cP, dP, dA = xP[:, 0], xP[:, 1], xA[:, 1]
    missing = np.isnan(xP)
    kind = _KIND_NAMES[code] if names is None else _KIND_NAMES[code].astype(names)
    n_eq = np.stack([cN, dN], axis=1)
    eps = np.empty((C, 2, E))
    eps[:, 0] = certificates(game, cP, np.zeros_like(cP), "consult")
    eps[:, 1] = certificates(game, dP, dA, "debate")
    eps[missing] = np.nan
    stab = np.empty((C, 2, E), bool)
    coefs = game.coefficients()
    stab[:, 0] = stability(game, cP, None, code[:, 0], "consult", eqc.tol, coefs)
    stab[:, 1] = stability(game, dP, dA, code[:, 1], "debate", eqc.tol, coefs)
    stab &= ~missing
    belief_P = np.empty((C, 2, E))
    belief_P[:, 0] = 0.0
    belief_P[:, 1] = game.tau_P[:, None] * dA
    belief_P[missing] = np.nan
    belief_A = np.empty((C, 2, E))
    belief_A[:, 0] = np.nan
    belief_A[:, 1] = game.tau_A[:, None] * dP
    vals = _outcomes(game, cells, cP, dP, dA)
    ses = _simulated_se(game, eqc, cells, cP, dP, dA, vals, report) \
        if game.t_freq is not None else None
    out_shape = tuple(shape) + (2, E)
    dd = tuple(dims) + ("protocol", "equilibrium")

    def r(a):
        return np.asarray(a).reshape(out_shape)

    data = {
        "x_P": (dd, r(xP), {"long_name": "protagonist presentation probability given t_P = 1",
                            "units": "1"}),
        "x_A": (dd, r(xA), {"long_name": "antagonist presentation probability given t_A = 1",
                            "units": "1"}),
        "belief_P": (dd, r(belief_P), {"long_name": "Pr(e_A = 1 | t_P = 1) at the equilibrium",
                                       "units": "1"}),
        "belief_A": (dd, r(belief_A), {"long_name": "Pr(e_P = 1 | t_A = 1) at the equilibrium",
                                       "units": "1"}),
        "epsilon": (dd, r(eps), {"long_name": "certificate: largest interim gain from a "
                                 "unilateral deviation", "units": "utility"}),
        "stable": (dd, r(stab), {"long_name": "asymptotically stable "
                                                 "(sharp smoothed best-response dynamics)"}),
        "kind": (dd, r(kind), {"long_name": "pure, mixed, or end point of an equilibrium segment"}),
        "n_equilibria": (tuple(dims) + ("protocol",), n_eq.reshape(tuple(shape) + (2,)),
                         {"long_name": "number of (extreme) equilibria"}),
        "mu_P": (tuple(dims), game.mu_P.reshape(shape), {
            "long_name": "Pr(a = omega | t_P = 1)", "units": "1"}),
        "mu_A": (tuple(dims), game.mu_A.reshape(shape), {
            "long_name": "Pr(1 - a = omega | t_A = 1)", "units": "1"}),
    }
    for name, ln in OUTCOMES.items():
        v = vals[name][0]  # [C, E, protocol]
        v = np.moveaxis(v, -1, 1)  # [C, E, protocol] -> [C, protocol, E]
        data[name] = (dd, r(np.where(missing, np.nan, v)),
                      {"long_name": f"{ln} at the equilibrium",
                       "units": "utility" if name == "welfare" else "1"})
        if ses is not None:
            data[f"{name}_se"] = (dd, r(np.where(missing, np.nan, ses[name])), {
                "long_name": f"standard error of {ln} (through the simulated equilibrium)",
                "units": "utility" if name == "welfare" else "1"})
    if ses is not None:  # ASD with its own standard error (antiamp.schema.derive: the rest)
        from .metrics import PROTOCOL_METRICS

        spec = PROTOCOL_METRICS["asd"]
        asd = np.moveaxis(vals["fwc"][0] - vals["amp"][0], -1, 1)
        data["asd"] = (dd, r(np.where(missing, np.nan, asd)), {
            "long_name": spec.long_name, "units": spec.units, "definition": spec.definition})
        data["asd_se"] = (dd, r(np.where(missing, np.nan, ses["asd"])), {
            "long_name": f"standard error of {spec.long_name} (through the simulated "
                         "equilibrium)", "units": spec.units})
    from antiamp.sweeps.spec import axis_coords

    coords = axis_coords(axes, dims, {"protocol": ("protocol", ["consult", "debate"],
                                                   dict(CONSULT_DEBATE)),
                                      "equilibrium": ("equilibrium", np.arange(E))})
    if game.tau_P_se is not None:
        data["tau_P"] = (tuple(dims), game.tau_P.reshape(shape),
                         {"long_name": "simulated Pr(t_A = 1 | t_P = 1)", "units": "1"})
        data["tau_A"] = (tuple(dims), game.tau_A.reshape(shape),
                         {"long_name": "simulated Pr(t_P = 1 | t_A = 1)", "units": "1"})
        data["tau_P_se"] = (tuple(dims), game.tau_P_se.reshape(shape),
                            {"long_name": "standard error of simulated Pr(t_A = 1 | t_P = 1)"})
        data["tau_A_se"] = (tuple(dims), game.tau_A_se.reshape(shape),
                            {"long_name": "standard error of simulated Pr(t_P = 1 | t_A = 1)"})
    ds = xr.Dataset(data, coords=coords)
    cfg_obj = SolveConfig(**{f.name: getattr(base, f.name) for f in dataclasses.fields(Config)},
                          equilibrium=eqc)
    from antiamp.provenance import global_attrs

    ds.attrs.update({
        **global_attrs("antiamp: equilibria of the evidence-presentation game",
                       f"antiamp {__version__}, equilibrium solver (antiamp-solve)"),
        "antiamp_version": __version__,
        "config": as_yaml(cfg_obj),
        "seed": int(base.run.seed),
        "method": eqc.method, "payoffs": eqc.payoffs, "tol": eqc.tol,
        "solver_report": "\n".join(report) if report else "all methods converged",
        "axes": str([a.path for a in axes]),
    })
    return ds
