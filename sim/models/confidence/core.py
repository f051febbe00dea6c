"""Stated confidence in multi-round debate (seed 004): beliefs, reports, calibration.

Primitives (one debate, R rounds, two sides P and O)
----------------------------------------------------
The debate's outcome index is ``Z = beta + X_1 + ... + X_R + U`` with
``X_r ~ N(0, info / R)`` revealed by round r's speeches and ``U ~ N(0, 1 - info)``
never revealed; side P wins iff ``Z > 0``.  ``beta`` is the side bias (P's true
win probability before any speech is ``Phi(beta)``), ``info`` the share of the
outcome's variance the transcript reveals by the last round.  A rational debater
of side P holds the belief

    B_r = Pr(P wins | X_1..X_r) = Phi((beta + S_r) / sqrt(1 - info r / R)),

a martingale in r; side O's rational belief is ``1 - B_r`` (the two sum to 1).

Stated confidence is a distorted report of belief, on the 0-100 scale:

    c_{r,s} = a_r + w (100 B_{r,s} - 50) + u + v_s + eps_{r,s},

with ``a_1`` the overconfidence intercept, ``a_r = a_1 + g_2 + ... + g_r`` (the
escalation steps g_r), ``w`` the weight on belief, ``u ~ N(0, shared_sd^2)`` a
debate-level component shared by both sides, ``v_s ~ N(0, side_sd^2)`` a side's
persistent disposition and ``eps ~ N(0, noise_sd^2)`` per-report noise.  With
a_r = 50, w = 1 and no noise the report is the belief martingale (100 B_r and
100 (1 - B_r)).  Belief and report are separate quantities: the bets of the data
were paid by a rule that is not proper (+own + opponent's bet on a win, -own on
a loss), under which a risk-neutral bettor stakes 100 whenever it believes it
wins with probability above 1/2.

Calibration: given the belief path the six reports of a debate are jointly
normal, so the likelihood is a Gauss-Hermite quadrature over the path (R
dimensions) of a 2R-dimensional normal density; the parameters are fitted by
maximum likelihood per condition (scipy's L-BFGS-B with the likelihood's exact
gradient, :func:`loglik_grad`), with standard errors from the observed
information (statsmodels' central differences of that gradient).  Reports are modelled
on the 0-100 scale (the data are integers; a reported 0 or 100 is read as it
is); simulated reports are clipped to [0, 100].

Oversight: the judges of seed 000 weigh the debaters' closing confidences,
sigma(lam (mu + kappa (e_P - e_A) + kappa_c (logit c_P - logit c_A))), in debate
(c_A: the antagonist's report) and consultancy (no antagonist: logit c_A := 0).
The protagonist is right iff the outcome index is positive, with beta =
Phi^-1(p): its rational belief is the posterior that its answer is right.  Juries
of such judges share a latent (the panel model): judge j votes for the
protagonist iff Phi^-1(q) - sqrt(icc) Z - sqrt(1 - icc) E_j > 0; ``icc`` is
configured or fitted to a histogram of votes (:func:`fit_votes`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from ...config import ConfigError, check_int, check_number, require_logit_judge
from ...moments import information_rule
from ...lazy import lazy
from ...rare import rare_floor
from .config import ConfidenceConfig  # noqa: F401  (re-exported)

special = lazy("scipy.special")
stats = lazy("scipy.stats")
optimize = lazy("scipy.optimize")

#: Conditions of the published debates (Prasad and Nguyen 2025), as in the data.
CONDITIONS = ("cross_model", "self_debate", "informed_self", "public_bets",
              "self_redteam_debate")
CONDITION_LABELS = {"cross_model": "cross-model", "self_debate": "self-debate",
                    "informed_self": "informed self", "public_bets": "public bets",
                    "self_redteam_debate": "self red-team"}
SIDES = ("proposition", "opposition")
#: Joint categories of the two sides' closing bets (the paper's Table 4), as
#: (low side's class, high side's class) with classes 0: <= 50, 1: 51-75, 2: > 75.
CATEGORIES = ("both <=50", "both 51-75", "both >75", "<=50 + 51-75", "<=50 + >75",
              "51-75 + >75")
_CAT_PAIRS = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))
#: Report classes: integers <= 50, 51..75, > 75 (edges on the continuous report).
CLASS_EDGES = (50.5, 75.5)
PROTOCOLS = ("consult", "debate")


# ------------------------------------------------------------------ parameters
@dataclass(frozen=True)
class Reports:
    """Parameters of the report model of one condition (0-100 scale)."""

    intercepts: tuple  # a_1..a_R
    weight: float = 1.0  # w
    side_offset: float = 0.0  # h: P's reports exceed the pair's mean by h, O's fall short
    anchor: float = 0.0  # z: share of an anchoring debate's reports that state exactly 50
    anchor_debates: float = 1.0  # pi_a: share of debates whose debaters anchor
    shared_sd: float = 0.0
    side_sd: float = 0.0
    noise_sd: float = 0.0
    side_bias: float = 0.0  # beta (fixed, not fitted: see fit())
    info: float = 0.5

    @property
    def rounds(self) -> int:
        return len(self.intercepts)

    def info_by_round(self) -> np.ndarray:
        R = self.rounds
        return self.info * np.arange(1, R + 1) / R

    def cov(self) -> np.ndarray:
        """Covariance of the 2R reports given the belief path (side-major: P rounds, O rounds)."""
        R = self.rounds
        side = np.repeat(np.arange(2), R)
        c = self.shared_sd ** 2 + self.side_sd ** 2 * (side[:, None] == side[None, :])
        return c + self.noise_sd ** 2 * np.eye(2 * R)

    def means(self, B: np.ndarray) -> np.ndarray:
        """Mean reports (..., 2R), anchoring aside, given P's beliefs B (..., R)."""
        a = np.asarray(self.intercepts, float)
        d = self.weight * (100.0 * np.asarray(B) - 50.0)
        return np.concatenate([a + self.side_offset + d, a - self.side_offset - d], axis=-1)


#: Names of the fitted parameters (theta), in order, for R rounds.
def param_names(R: int) -> list:
    return (["intercept"] + [f"escalation_{r}" for r in range(2, R + 1)]
            + ["side_offset", "weight", "anchor", "anchor_debates", "shared_sd", "side_sd",
               "noise_sd"])


#: Smallest per-report noise sd the fit considers (the other sds and the anchor share
#: may reach 0; an estimate at a bound is reported without a standard error).
SD_FLOOR = 0.01


def _from_theta(theta: np.ndarray, R: int, info: float, side_bias: float = 0.0) -> Reports:
    a = np.cumsum(theta[:R])
    return Reports(tuple(float(x) for x in a), weight=abs(float(theta[R + 1])),
                   side_offset=float(theta[R]), anchor=min(max(float(theta[R + 2]), 0.0), 0.99),
                   anchor_debates=min(max(float(theta[R + 3]), 0.0), 1.0),
                   shared_sd=math.sqrt(max(theta[R + 4], 0.0)),
                   side_sd=math.sqrt(max(theta[R + 5], 0.0)),
                   noise_sd=math.sqrt(max(theta[R + 6], 0.0)), side_bias=side_bias, info=info)


# ------------------------------------------------------------------ data
def default_bets_path() -> Path:
    from importlib.resources import files

    return Path(str(files("antiamp") / "data" / "overconfidence2025_bets.csv"))


_ORIGINAL = {"debate_id": "debate", "experiment_type": "condition", "speech_type": "round",
             "bet_amount": "bet"}
_ROUND_NAMES = {"opening": 1, "rebuttal": 2, "closing": 3}


@functools.lru_cache(maxsize=8)
def load_bets(path: Optional[str] = None):
    """The bets as a DataFrame (debate, condition, side, round, bet).

    Reads the shipped table (``antiamp/data/overconfidence2025_bets.csv``) or a
    file in the same schema; the original ``all_bets.csv`` columns (debate_id,
    experiment_type, speech_type, bet_amount) are accepted too.
    """
    import pandas as pd

    p = Path(path) if path else default_bets_path()
    from antiamp.inputs import check_field_lengths, check_input, csv_header

    if not p.exists():
        raise ConfigError(f"confidence.data: no such file {str(p)!r}")
    # a regular file, bounded in size and columns, no column twice (sim/inputs.py)
    check_input(p, "table", ConfigError, f"confidence.data: {str(p)!r}")
    names = csv_header(p, ConfigError, f"confidence.data: {p.name}", comment="#")
    # fields bounded, no row wider than the header (pandas would index it), as a log's
    check_field_lengths(p, f"confidence.data: {p.name}", ConfigError,
                        header=len(names) or None, comment="#")
    try:
        df = pd.read_csv(p, comment="#")
    except Exception as exc:  # a parser error names the line
        raise ConfigError(f"confidence.data: {p.name} is not a readable CSV ({exc})") from None
    df = df.rename(columns=_ORIGINAL)
    missing = [c for c in ("debate", "condition", "side", "round", "bet") if c not in df]
    if missing:
        raise ConfigError(f"confidence.data: {p.name} lacks the column(s) {', '.join(missing)} "
                          "(schema: debate, condition, side, round, bet)")
    if not pd.api.types.is_numeric_dtype(df["round"]):
        # names or numbers written as text: object under pandas 2, str under pandas 3
        txt = df["round"].astype("string").str.strip().str.lower()
        num = pd.to_numeric(txt, errors="coerce")
        named = txt.map(_ROUND_NAMES)
        r = num.where(num.notna(), named)
        bad = r.isna()
        if bad.any():
            raise ConfigError(f"confidence.data: round must be 1..R or opening/rebuttal/"
                              f"closing, got {sorted(set(map(str, df['round'][bad])))[:3]}")
        df["round"] = r.astype(float)
    rnd = pd.to_numeric(df["round"], errors="coerce")
    bad = rnd.isna() | (rnd < 1) | (rnd > MAX_ROUNDS) | (rnd != np.round(rnd))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ConfigError(f"confidence.data: round must be a whole number in [1, {MAX_ROUNDS}] "
                          f"(or opening/rebuttal/closing); row {row + 2} of {p.name} has "
                          f"{str(df['round'].iloc[row])!r}")
    df["round"] = rnd.astype(np.int64)
    bad_side = set(df["side"]) - set(SIDES)
    if bad_side:
        raise ConfigError(f"confidence.data: side must be proposition or opposition, got "
                          f"{sorted(map(str, bad_side))[:3]}")
    bet = pd.to_numeric(df["bet"], errors="coerce")
    if bet.isna().any() or ((bet < 0) | (bet > 100)).any():
        row = int(np.flatnonzero(bet.isna() | (bet < 0) | (bet > 100))[0])
        raise ConfigError(f"confidence.data: bet must be a number in [0, 100]; row {row + 2} "
                          f"of {p.name} has {df['bet'].iloc[row]!r}")
    df["bet"] = bet.astype(float)
    return df


#: Largest bets file read (whole, in memory) and most rounds of a debate (the fit's
#: likelihood mixes over the 2^(2R) subsets of a debate's anchored reports).
MAX_BETS_BYTES = 256 << 20
MAX_ROUNDS = 8


@functools.lru_cache(maxsize=32)
def check_bets(path: Optional[str], condition: str, antagonist: Optional[str] = None) -> None:
    """ConfigError naming the field if the bets file cannot be read or lacks the
    conditions (the checks a run would otherwise make after its directory exists)."""
    df = load_bets(path)
    bets_array(df, condition)
    if antagonist is not None:
        bets_array(df, antagonist, "confidence.antagonist")


def bets_array(df, condition: str, field: str = "confidence.condition") -> np.ndarray:
    """Bets of one condition as (debates, 2 sides, R rounds); incomplete debates dropped."""
    g = df[df["condition"] == condition]
    if g.empty:
        raise ConfigError(f"{field} must be one of "
                          f"{', '.join(sorted(map(str, set(df['condition']))))}, got {condition!r}")
    R = int(g["round"].max())
    last = g.groupby("debate")["round"].max()
    if (last == R).sum() * 2 < len(last):
        # a later round (a fourth after closing, say) in a minority of debates: the fit
        # has one number of rounds per condition and would drop the others
        raise ConfigError(f"confidence.data: condition {condition!r}: {int((last == R).sum())} "
                          f"of {len(last)} debates have round {R}, the others end at round "
                          f"{int(last[last < R].max())}; the model fits one number of rounds "
                          f"per condition: drop rounds after {int(last[last < R].max())} or "
                          f"give a log in which every debate has {R}")
    t = g.pivot_table(index="debate", columns=["side", "round"], values="bet", aggfunc="first")
    cols = [(s, r) for s in SIDES for r in range(1, R + 1)]
    t = t.reindex(columns=cols).dropna()
    if len(t) < 5:
        raise ConfigError(f"confidence.data: condition {condition!r} has {len(t)} complete "
                          "debates (both sides, every round); at least 5 are needed")
    return t.to_numpy(float).reshape(len(t), 2, R)


# ------------------------------------------------------------------ likelihood
@functools.lru_cache(maxsize=16)
def _gh(n: int, dim: int):
    """Tensor Gauss-Hermite nodes (standard normal) and weights in ``dim`` dimensions."""
    x, w = np.polynomial.hermite_e.hermegauss(n)
    w = w / w.sum()
    grids = np.meshgrid(*([x] * dim), indexing="ij")
    nodes = np.stack([g.ravel() for g in grids], axis=-1)
    wts = np.ones(len(nodes))
    for g in np.meshgrid(*([w] * dim), indexing="ij"):
        wts = wts * g.ravel()
    return nodes, wts


def belief_paths(rep: Reports, nodes: np.ndarray) -> np.ndarray:
    """P's rational beliefs B_1..B_R at standard-normal nodes of the increments."""
    R = rep.rounds
    S = np.cumsum(math.sqrt(rep.info / R) * nodes, axis=-1)
    rem = 1.0 - rep.info_by_round()
    return special.ndtr((rep.side_bias + S) / np.sqrt(rem))


class _Design:
    """The data of one fit, grouped by which reports could be anchored (exactly 50):
    the likelihood mixes, per debate, over the subsets of its 50s that were anchored
    (point mass, probability z each) rather than drawn from the report model."""

    def __init__(self, X: np.ndarray):
        D, _, R = X.shape
        self.x = X.reshape(D, 2 * R)
        self.R = R
        at50 = self.x == 50.0
        full = (1 << (2 * R)) - 1
        keeps, elig, n_anch = [], [], []
        for keep in range(full + 1):
            drop = np.array([not (keep >> j & 1) for j in range(2 * R)])
            ok = at50[:, drop].all(axis=1) if drop.any() else np.ones(D, bool)
            if ok.any():
                keeps.append(~drop)
                elig.append(ok)
                n_anch.append(int(drop.sum()))
        self.keep = np.array(keeps)  # (G, 2R) bool: reports drawn from the model
        self.elig = np.array(elig)  # (G, D): the debate's dropped reports are all 50
        self.n_anch = np.array(n_anch)
        self.rows = [np.flatnonzero(e) for e in self.elig]
        # Every (subset, debate) pair the likelihood evaluates, subset-major.
        self.pair_g = np.concatenate([np.full(len(r), g) for g, r in enumerate(self.rows)])
        self.pair_row = np.concatenate(self.rows)
        self.any50 = bool(at50.any())


def logsumexp(a, axis: int):
    """log(sum(exp(a))) along ``axis`` (equal to ``scipy.special.logsumexp``, tested).

    By hand because scipy's array-API dispatch costs about 0.3 ms a call, more than
    half of a likelihood evaluation, and a fit evaluates the likelihood thousands of
    times.  Rows of -inf give -inf.
    """
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(np.exp(a - m), axis=axis)) + np.squeeze(m, axis=axis)


def _subset_factors(cov: np.ndarray, keep: np.ndarray):
    """Every anchoring subset's marginal covariance at once: ``cov`` padded with the
    identity on the anchored coordinates (whose residuals are set to 0).  Returns
    (keep x keep mask, Cholesky factors, their inverses), or None if one is singular.

    Singular by a stated rule, not by whether the factorisation happens to fail in
    floating point (which moves with the CPU's BLAS for a matrix at the edge): a
    Cholesky pivot L_ii^2 below :data:`PIVOT_TOL` of its diagonal entry C_ii (for unit
    variances, the share of a coordinate's variance the others leave unexplained); a
    factorisation that fails has a pivot <= 0 and is singular by the same rule."""
    kk = keep[:, :, None] * keep[:, None, :]
    cpad = cov[None] * kk + np.eye(cov.shape[0])[None] * (1.0 - keep)[:, None, :]
    try:
        L = np.linalg.cholesky(cpad)
    except np.linalg.LinAlgError:
        return None
    piv = np.diagonal(L, axis1=1, axis2=2) ** 2
    if not np.all(piv >= PIVOT_TOL * np.diagonal(cpad, axis1=1, axis2=2)):
        return None
    return kk, L, np.linalg.inv(L)


#: The singularity rule of :func:`_subset_factors`: a pivot below this share of its
#: variance (far above rounding, 1e-16, so that a few ulps never move the decision;
#: far below any covariance the fitted reports can mean).
PIVOT_TOL = 1e-12


def loglik(rep: Reports, X, n_nodes: int = 7) -> float:
    """Log-likelihood of bets X (debates, 2, R) under the report model (a report is
    an integer, its probability the model's density there: bins of width 1)."""
    des = X if isinstance(X, _Design) else _Design(np.asarray(X, float))
    R, x = des.R, des.x
    cov = rep.cov()
    if rep.weight == 0.0:
        mus, lw = rep.means(np.full((1, R), 0.5)), np.zeros(1)
    else:
        nodes, wts = _gh(n_nodes, R)
        mus, lw = rep.means(belief_paths(rep, nodes)), np.log(wts)
    z = rep.anchor
    keep = des.keep.astype(float)
    factors = _subset_factors(cov, keep)
    if factors is None:
        return -np.inf
    kk, L, Li = factors
    # Whitened node means Li (keep * mu_k), by batched matmul (half einsum's time).
    mw = (keep[:, None, :] * mus[None]) @ np.swapaxes(Li, 1, 2)  # (G, K, 2R)
    m2 = 0.5 * np.einsum("gki,gki->gk", mw, mw)  # (G, K)
    nk = des.keep.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        const = (np.where(des.n_anch > 0, des.n_anch * np.log(z), 0.0) + nk * np.log1p(-z)
                 - np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
                 - 0.5 * nk * math.log(2 * math.pi))
    parts = np.full((len(const), len(x)), -np.inf)
    full = int(np.flatnonzero(des.n_anch == 0)[0])
    # Only the debates each subset applies to, every (subset, debate) pair at once (a
    # loop over the subsets cost a dozen NumPy calls each: 43 subsets took 5 ms), in
    # slices of about 16 MB of node terms.
    # With the subset's precision P = Li' Li and y = keep * (P (keep * x)), the cross
    # term is y . mu_k for the node means mu_k shared by every subset: one product.
    use = np.isfinite(const)
    use[full] = True
    sel = use[des.pair_g]
    prec = np.einsum("gji,gjk->gik", Li, Li)  # (G, 2R, 2R)
    step = max(1, (16 << 20) // (8 * mus.shape[0]))
    pg_all, pr_all = des.pair_g[sel], des.pair_row[sel]
    for lo in range(0, len(pg_all), step):
        g, r = pg_all[lo:lo + step], pr_all[lo:lo + step]
        xk = keep[g] * x[r]  # (pairs, 2R)
        y = keep[g] * np.einsum("pij,pj->pi", prec[g], xk)
        q = y @ mus.T - 0.5 * (y * xk).sum(-1)[:, None] - m2[g] + lw[None, :]
        parts[g, r] = logsumexp(q, axis=1) + const[g]
    # A debate anchors (its reports are 50 w.p. z each) with probability pi_a;
    # otherwise every report comes from the model (the full subset, z = 0).
    anch = logsumexp(parts, axis=0)
    free = parts[full] - nk[full] * np.log1p(-z)
    pa = rep.anchor_debates
    with np.errstate(divide="ignore"):
        return float(np.logaddexp(np.log(pa) + anch, np.log1p(-pa) + free).sum())


def loglik_grad(theta: np.ndarray, X, info: float = 0.5, side_bias: float = 0.0,
                n_nodes: int = 7, w_fixed: bool = False) -> tuple:
    """The log-likelihood of :func:`loglik` at ``theta`` (the fit's parameter vector,
    :func:`param_names`) and its gradient in theta, exact (not by differences).

    Written by hand because no autodiff library is a dependency and a fit's
    finite-difference gradient costs a dozen likelihoods an iteration.  Per
    (subset g, debate d, node k) the report density is Gaussian with mean
    keep * mu_k and the subset's covariance S_g (identity on anchored coordinates);
    with u = P_g keep (x - mu_k) its derivatives are u . dmu for the means and
    (u' M u - tr(P_g M)) / 2 for a covariance direction M (all ones, same side, or
    the identity, on kept coordinates).  They are averaged over nodes with the
    posterior node weights, over subsets with the anchoring posterior, and mixed
    with the free branch as the likelihood mixes them.  ``w_fixed``: the weight is
    held (at 0 one node suffices and its derivative is not computed).
    """
    des = X if isinstance(X, _Design) else _Design(np.asarray(X, float))
    R, x = des.R, des.x
    rep = _from_theta(theta, R, info, side_bias)
    n = len(theta)
    grad = np.zeros(n)
    cov = rep.cov()
    one_node = rep.weight == 0.0 and w_fixed
    if one_node:
        mus, lw, dvec = rep.means(np.full((1, R), 0.5)), np.zeros(1), np.zeros((1, 2 * R))
    else:
        nodes, wts = _gh(n_nodes, R)
        B = belief_paths(rep, nodes)
        mus, lw = rep.means(B), np.log(wts)
        d = 100.0 * B - 50.0
        dvec = np.concatenate([d, -d], axis=-1)  # d mu_k / d w  (K, 2R)
    z, pa = rep.anchor, rep.anchor_debates
    keep = des.keep.astype(float)
    factors = _subset_factors(cov, keep)
    if factors is None:
        return -np.inf, grad
    kk, L, Li = factors
    prec = np.einsum("gji,gjk->gik", Li, Li) * kk  # P_g on kept coordinates (G, 2R, 2R)
    G = len(keep)
    # Per subset g and node k: v = P keep mu_k (the whitened mean, unwhitened back),
    # and what the gradient averages over the node posterior: 1'v, the per-side sums
    # and their squares, |v|^2, v . d mu_k / d w.
    v = mus[None] @ prec  # (G, K, 2R); P is symmetric
    side = np.repeat(np.arange(2), R)
    sideP = (side == 0).astype(float)
    m2 = 0.5 * np.einsum("gki,ki->gk", v, mus)  # v is 0 off the kept coordinates
    F = np.empty(v.shape[:2] + (8,))
    F[..., [0, 2, 4]] = v @ np.stack([np.ones(2 * R), sideP, 1.0 - sideP], axis=1)
    F[..., [1, 3, 5]] = F[..., [0, 2, 4]] ** 2
    F[..., 6] = np.einsum("gki,gki->gk", v, v)
    F[..., 7] = 0.0 if one_node else np.einsum("gki,ki->gk", v, dvec)
    N = np.concatenate([mus, dvec], axis=1)  # per node: mu_k and d mu_k / d w
    nk = des.keep.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        logz = np.log(z)
        const0 = (nk * np.log1p(-z) - np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
                  - 0.5 * nk * math.log(2 * math.pi))  # without n_anch log z
    # Mean directions: d mu / d a_r (P and O round r) and d mu / d h.
    dirs = np.zeros((R + 1, 2 * R))
    for r in range(R):
        dirs[r, r] = dirs[r, R + r] = 1.0
    dirs[R, :R], dirs[R, R:] = 1.0, -1.0
    full = int(np.flatnonzero(des.n_anch == 0)[0])
    pg, pr = des.pair_g, des.pair_row
    xk = keep[pg] * x[pr]
    y = np.einsum("pij,pj->pi", prec[pg], xk)  # P keep x (pairs, 2R)
    # Every pair's log density (over nodes) and posterior averages of F and N, in
    # slices of about 16 MB of node terms; the pairs are subset-major, so a slice's
    # averages of F are one product per subset in it.
    npairs, K = len(pg), len(mus)
    lse, EF, EN = np.empty(npairs), np.empty((npairs, F.shape[2])), np.empty((npairs, N.shape[1]))
    step = max(1, (16 << 20) // (8 * K))
    for lo in range(0, npairs, step):
        hi = min(lo + step, npairs)
        g = pg[lo:hi]
        q = y[lo:hi] @ mus.T - 0.5 * (y[lo:hi] * xk[lo:hi]).sum(-1)[:, None] - m2[g] + lw[None, :]
        m = q.max(axis=1, keepdims=True)
        e = np.exp(q - m)
        tot = e.sum(axis=1, keepdims=True)
        lse[lo:hi] = np.log(tot[:, 0]) + m[:, 0]
        e /= tot  # the node posterior
        EN[lo:hi] = e @ N
        cut = np.flatnonzero(np.diff(g)) + 1
        for a0, a1 in zip(np.r_[0, cut], np.r_[cut, hi - lo]):
            EF[lo + a0:lo + a1] = e[a0:a1] @ F[g[a0]]
    parts0 = np.full((G, len(x)), -np.inf)
    parts0[pg, pr] = lse + const0[pg]  # log densities without the n_anch log z term
    with np.errstate(invalid="ignore"):
        zterm = np.where(des.n_anch > 0, des.n_anch * logz, 0.0)
    parts = parts0 + zterm[:, None]
    anch = logsumexp(parts, axis=0)
    free = parts[full] - nk[full] * np.log1p(-z)
    with np.errstate(divide="ignore"):
        la, lf = np.log(pa) + anch, np.log1p(-pa) + free
    ll_d = np.logaddexp(la, lf)
    ll = float(ll_d.sum())
    if not np.isfinite(ll):
        return ll, grad
    omega = np.exp(la - ll_d)  # the debate anchors: posterior probability
    # Weight of every (subset, debate) pair in the gradient of the Gaussian parts.
    W = omega[None, :] * np.exp(parts - anch[None, :])
    W[full] += (1.0 - omega)
    Wp = W[pg, pr]  # (pairs,)
    Esv, Esv2, EbP, EbP2, EbO, EbO2, Evv, Evw = EF.T
    Emu, Edv = EN[:, :2 * R], EN[:, 2 * R:]
    # Means: sum_k rho_k (y - v_k) . dmu_k, with v_k . c = mu_k . (P c).
    pdirs = np.einsum("gij,cj->gci", prec, dirs)  # P c  (G, C, 2R)
    g_dirs = (Wp[:, None] * ((y @ dirs.T) - np.einsum("pi,pci->pc", Emu, pdirs[pg]))).sum(0)
    grad_a = g_dirs[:R]
    grad[R] = g_dirs[R]
    if not one_node:
        gw = (y * Edv).sum(1) - Evw
        grad[R + 1] = float((Wp * gw).sum()) * (1.0 if theta[R + 1] >= 0 else -1.0)
    # Covariance directions (all ones, same side, identity; on kept coordinates):
    # (u' M u - tr(P M)) / 2 with u = y - v_k, averaged over the node posterior.
    A, AP = y.sum(1), y @ sideP
    AO = A - AP
    py = np.einsum("pij,pj->pi", prec[pg], y)  # y . v_k = (P y) . mu_k
    quads = (A * A - 2 * A * Esv + Esv2,
             AP * AP - 2 * AP * EbP + EbP2 + AO * AO - 2 * AO * EbO + EbO2,
             (y * y).sum(1) - 2 * (py * Emu).sum(1) + Evv)
    traces = (prec.sum((1, 2)), (prec * (side[:, None] == side[None, :])).sum((1, 2)),
              np.trace(prec, axis1=1, axis2=2))
    for j, (quad, tr) in enumerate(zip(quads, traces)):
        grad[R + 4 + j] = float((Wp * 0.5 * (quad - tr[pg])).sum())
    # Anchoring share z (pairs' n_anch log z + nk log(1 - z); the free branch has none)
    # and the share of anchoring debates pa.
    # d ll_d / dz = omega_d sum_g pi_gd (n_anch_g / z - nk_g / (1 - z)), taken in logs:
    # omega_d pi_gd = pa exp(parts_gd - ll_d), and pi_gd / z = exp(parts0_gd + (n_anch_g
    # - 1) log z - anch_d) stays finite at z = 0 (only one-anchor subsets remain).
    with np.errstate(divide="ignore", invalid="ignore"):
        logpa = np.log(pa)
        extra = np.where(des.n_anch > 1, (des.n_anch - 1) * logz, 0.0)[:, None]
        up = np.where(des.n_anch[:, None] > 0,
                      des.n_anch[:, None] * np.exp(logpa + parts0 + extra - ll_d[None, :]), 0.0)
        down = nk[:, None] * np.exp(logpa + parts - ll_d[None, :]) / (1.0 - z)
    grad[R + 2] = float((up - down).sum())
    grad[R + 3] = float((np.exp(anch - ll_d) - np.exp(free - ll_d)).sum())
    grad[:R] = np.cumsum(grad_a[::-1])[::-1]  # a = cumsum(theta[:R])
    return ll, grad


def _start(X: np.ndarray) -> np.ndarray:
    m = X.mean(axis=(0, 1))
    side = X.mean(axis=2)  # (D, 2)
    s = max(float(np.std(X)), 1.0)
    shared = max(float(np.cov(side[:, 0], side[:, 1])[0, 1]), 1.0)
    z = min(max(float(np.mean(X == 50.0)), 0.01), 0.5)
    return np.concatenate([[m[0]], np.diff(m), [float(np.mean(side[:, 0] - side[:, 1])) / 2,
                                                 0.3, min(2 * z, 0.9), 0.5],
                           [shared, s * s / 4, s * s / 4]])


@dataclass
class Fit:
    """Maximum-likelihood fit of one condition."""

    condition: str
    rep: Reports
    theta: np.ndarray
    se: np.ndarray
    cov: np.ndarray
    loglik: float
    n_debates: int
    converged: bool
    message: str
    names: list = field(default_factory=list)
    at_bound: tuple = ()  # at a bound of the fit, or not identified (no SE)

    def values(self) -> dict:
        """Fitted parameters with standard errors (NaN for one at a bound of the fit:
        there the normal approximation does not hold)."""
        out = {}
        for i, n in enumerate(self.names):
            v, s = float(self.theta[i]), float(self.se[i])
            if n.endswith("_sd"):  # fitted as variances: sd and the delta method
                v = math.sqrt(max(v, 0.0))
                s = s / (2 * v) if v > 0 else math.nan
            out[n] = (v, math.nan if n in self.at_bound else s)
        return out


def fit(X: np.ndarray, condition: str = "", info: float = 0.5, side_bias: float = 0.0,
        n_nodes: int = 7) -> Fit:
    """Maximum-likelihood fit of the report model to bets X (debates, 2, R).

    Identification without outcomes: the data record no winner, so the sign of the
    belief weight w is not identified (w and -w fit alike; |w| is reported, the most
    information confidence could carry), nor is the side bias beta apart from a
    side's reporting offset h: beta is held at ``side_bias`` and h fitted.  |w| is
    identified by the martingale's covariance (a side's reports grow more alike
    over rounds, the two sides' less alike) for the configured ``info``.
    """
    from statsmodels.tools.numdiff import approx_fprime

    R = X.shape[2]
    names = param_names(R)
    des = _Design(np.asarray(X, float))

    def nll_grad(th, w_fixed=False):
        # The exact gradient (loglik_grad): one evaluation where differences cost
        # len(theta) + 1, and L-BFGS-B takes fewer steps with it.
        v, g = loglik_grad(th, des, info, side_bias, n_nodes, w_fixed)
        return (-v, -g) if np.isfinite(v) else (1e12, np.zeros_like(th))

    th0 = _start(X)
    lo = np.full(len(th0), -np.inf)
    hi = np.full(len(th0), np.inf)
    # Variances, not sds: the likelihood's gradient in a variance does not vanish at
    # 0, so a component that stage 1 set to 0 can come back in stage 2.
    lo[R + 4:] = 0.0
    lo[R + 6] = SD_FLOOR ** 2  # per-report noise keeps the covariance regular
    lo[R + 2], hi[R + 2] = 0.0, 0.99
    lo[R + 3], hi[R + 3] = 0.0, 1.0
    lo[R + 1], hi[R + 1] = 0.0, 5.0  # w >= 0: the likelihood is even in w
    if not des.any50:
        th0[R + 2], th0[R + 3] = 0.0, 1.0
    bounds = list(zip(lo, hi))
    # Stage 1 with w = 0 (no belief path to integrate: one node, fast), then w free
    # from two starting weights (a weak belief signal leaves shallow local optima).
    b0 = list(bounds)
    b0[R + 1] = (0.0, 0.0)
    th0[R + 1] = 0.0
    s1 = optimize.minimize(nll_grad, th0, args=(True,), jac=True, method="L-BFGS-B",
                           bounds=b0, options={"maxiter": 3000, "ftol": 1e-12, "gtol": 1e-7})
    best = s1
    for w0 in (0.1, 0.6):
        t0 = s1.x.copy()
        t0[R + 1] = w0
        t0[R + 4:] = np.maximum(t0[R + 4:], th0[R + 4:] / 4)
        res = optimize.minimize(nll_grad, t0, jac=True, method="L-BFGS-B", bounds=bounds,
                                options={"maxiter": 3000, "ftol": 1e-12, "gtol": 1e-7})
        if res.fun < best.fun:
            best = res
    theta = best.x
    at = tuple(n for i, n in enumerate(names)
               if (np.isfinite(lo[i]) and theta[i] - lo[i] < 1e-4)
               or (np.isfinite(hi[i]) and hi[i] - theta[i] < 1e-3))
    if theta[R + 2] < 1e-4 or theta[R + 3] < 1e-4:
        # No anchoring: the other anchoring parameter is not identified either.
        at = tuple(dict.fromkeys(at + ("anchor", "anchor_debates")))
    free = [i for i, n in enumerate(names) if n not in at]
    cov = np.full((len(theta),) * 2, np.nan)
    if free:
        def grad_free(tf):
            t = theta.copy()
            t[free] = tf
            return nll_grad(t)[1][free]

        # The Hessian by central differences of the exact gradient, symmetrised.
        H = approx_fprime(theta[free], grad_free, centered=True)
        H = (H + H.T) / 2
        # A weakly present anchoring (a few 50s) can leave its two parameters not
        # identified (a singular information): then they are reported without an SE
        # and the others' SEs are taken with them held at their estimates.
        anch = {R + 2, R + 3}
        for keep in (list(range(len(free))),
                     [k for k, i in enumerate(free) if i not in anch]):
            # identified by a stated rule (the scaled information's smallest eigenvalue,
            # antiamp.moments.information_rule), not by whether an inversion fails
            Hk = H[np.ix_(keep, keep)]
            if information_rule(Hk).identified:
                cf = np.linalg.inv((Hk + Hk.T) / 2)
                idx = [free[k] for k in keep]
                cov[np.ix_(idx, idx)] = cf
                at = at + tuple(names[i] for i in free if i not in idx)
                break
    se = np.sqrt(np.where(np.diag(cov) > 0, np.diag(cov), np.nan))
    return Fit(condition, _from_theta(theta, R, info, side_bias), theta, se, cov,
               -float(best.fun), len(X), bool(best.success), str(best.message), names, at)


@functools.lru_cache(maxsize=32)
def fit_condition(condition: str, data: Optional[str] = None, info: float = 0.5) -> Fit:
    """The fit of one condition of the shipped bets (or ``data``), cached per process."""
    return fit(bets_array(load_bets(data), condition), condition, info)


# ------------------------------------------------------------------ implied quantities
def implied_means(rep: Reports) -> np.ndarray:
    """Mean report by round over both sides (the paper's Table 3): with za = pi_a z the
    share of anchored reports, za 50 + (1 - za) a_r (the belief terms and side offsets
    of the two sides cancel)."""
    za = rep.anchor * rep.anchor_debates
    return za * 50.0 + (1 - za) * np.asarray(rep.intercepts, float)


def closing_class_probs(rep: Reports, n_nodes: int = 40) -> np.ndarray:
    """Probabilities of the six joint categories of the closing bets (Table 4)."""
    x, w = np.polynomial.hermite_e.hermegauss(n_nodes)
    w = w / w.sum()
    # The closing belief depends on the path only through S_R ~ N(0, info).
    B = special.ndtr((rep.side_bias + math.sqrt(rep.info) * x)
                     / math.sqrt(1.0 - rep.info))
    a = rep.intercepts[-1]
    var = rep.shared_sd ** 2 + rep.side_sd ** 2 + rep.noise_sd ** 2
    cv = rep.shared_sd ** 2
    edges = np.array([-np.inf, *CLASS_EDGES, np.inf])
    d = rep.weight * (100 * B - 50)
    mP, mO = a + rep.side_offset + d, a - rep.side_offset - d
    G = np.zeros((3, 3))  # both reported by the model: [class of P, class of O]
    for i in range(3):
        for j in range(3):
            G[i, j] = float(np.sum(w * _rect(mP, mO, var, cv, edges[i], edges[i + 1],
                                             edges[j], edges[j + 1])))
    # Anchored reports (exactly 50) fall in class 0.
    sd = math.sqrt(var) if var > 0 else 1e-12
    mP_cls = np.array([float(np.sum(w * (special.ndtr((edges[i + 1] - mP) / sd)
                                         - special.ndtr((edges[i] - mP) / sd))))
                       for i in range(3)])
    mO_cls = np.array([float(np.sum(w * (special.ndtr((edges[i + 1] - mO) / sd)
                                         - special.ndtr((edges[i] - mO) / sd))))
                       for i in range(3)])
    z = rep.anchor
    e0 = np.array([1.0, 0.0, 0.0])
    P_a = ((1 - z) ** 2 * G + z * (1 - z) * (np.outer(e0, mO_cls) + np.outer(mP_cls, e0))
           + z * z * np.outer(e0, e0))
    P = rep.anchor_debates * P_a + (1 - rep.anchor_debates) * G
    return np.array([P[i, j] + (P[j, i] if i != j else 0.0) for i, j in _CAT_PAIRS])


def _rect(m1, m2, var, cv, a1, b1, a2, b2):
    """Pr(a1 < X1 <= b1, a2 < X2 <= b2) for bivariate normals with means (m1, m2)."""
    if var <= 0:
        return ((m1 > a1) & (m1 <= b1) & (m2 > a2) & (m2 <= b2)).astype(float)
    sd = math.sqrt(var)
    r = cv / var

    def F(x1, x2):
        u1 = np.clip((x1 - m1) / sd, -40, 40)
        u2 = np.clip((x2 - m2) / sd, -40, 40)
        return _bvn(u1, u2, r)

    return F(b1, b2) - F(a1, b2) - F(b1, a2) + F(a1, a2)


def _bvn(h, k, r):
    """Standard bivariate normal CDF Pr(X <= h, Y <= k) with correlation r, vectorised.

    Written here because scipy's multivariate_normal.cdf evaluates one point per
    call of its integrator; this is the classical identity Pr = Phi(h) Phi(k) +
    int_0^r phi2(h, k; t) dt (Plackett) by 20-point Gauss-Legendre, accurate to
    about 1e-10 for r <= 0.95 (tested against scipy).
    """
    h, k = np.broadcast_arrays(np.asarray(h, float), np.asarray(k, float))
    base = special.ndtr(h) * special.ndtr(k)
    if r == 0:
        return base
    if abs(r) > 0.999:
        return special.ndtr(np.minimum(h, k)) if r > 0 else np.maximum(
            special.ndtr(h) + special.ndtr(k) - 1, 0.0)
    x, w = np.polynomial.legendre.leggauss(20)
    t = 0.5 * r * (x + 1.0)
    wt = 0.5 * r * w
    hh, kk = h[..., None], k[..., None]
    s = 1.0 - t ** 2
    dens = np.exp(-(hh ** 2 - 2 * t * hh * kk + kk ** 2) / (2 * s)) / (2 * math.pi * np.sqrt(s))
    return base + (dens * wt).sum(axis=-1)


def data_means(X: np.ndarray) -> tuple:
    """Mean bet by round over both sides, and its standard error (debates are the
    independent units; the two sides of a debate are averaged first)."""
    per = X.mean(axis=1)  # (D, R)
    return per.mean(axis=0), per.std(axis=0, ddof=1) / math.sqrt(len(X))


def data_classes(X: np.ndarray) -> np.ndarray:
    """Observed shares of the six closing-bet categories."""
    return class_counts(X[:, :, -1]) / len(X)


def _classes(c: np.ndarray) -> np.ndarray:
    return np.searchsorted(np.asarray(CLASS_EDGES), c, side="right")


def class_counts(closing: np.ndarray) -> np.ndarray:
    """Counts of the six categories from closing bets (debates, 2)."""
    k = _classes(closing)
    lo, hi = k.min(axis=1), k.max(axis=1)
    return np.array([np.sum((lo == i) & (hi == j)) for i, j in _CAT_PAIRS], float)


def simulate_bets(rep: Reports, n_debates: int, rng: np.random.Generator) -> np.ndarray:
    """Bets of ``n_debates`` debates (debates, 2, R) drawn from the model, rounded to
    integers and clipped to [0, 100] as stated bets are."""
    R = rep.rounds
    Z = rng.standard_normal((n_debates, R))
    S = np.cumsum(math.sqrt(rep.info / R) * Z, axis=1)
    B = special.ndtr((rep.side_bias + S) / np.sqrt(1.0 - rep.info_by_round()))
    m = rep.means(B).reshape(n_debates, 2, R)
    u = rep.shared_sd * rng.standard_normal((n_debates, 1, 1))
    v = rep.side_sd * rng.standard_normal((n_debates, 2, 1))
    e = rep.noise_sd * rng.standard_normal((n_debates, 2, R))
    c = np.clip(np.rint(m + u + v + e), 0.0, 100.0)
    kind = rng.random((n_debates, 1, 1)) < rep.anchor_debates
    return np.where(kind & (rng.random((n_debates, 2, R)) < rep.anchor), 50.0, c)


def predictive_check(f: Fit, X: np.ndarray, draws: int = 200, seed: int = 0) -> dict:
    """Posterior predictive check of the closing-bet pairs.

    Parameters are drawn from the asymptotic normal of the MLE (an approximate
    posterior under a flat prior), one replicated data set of the same size per
    draw.  Returns the predictive mean and 5-95% band of each category's share and
    the p-value of the chi-square discrepancy (replicated >= observed).
    """
    rng = np.random.default_rng(seed)
    R, D = f.rep.rounds, len(X)
    # Parameters at a bound of the fit are held at their estimate.
    free = np.isfinite(np.diag(f.cov))
    cov = np.where(np.outer(free, free), f.cov, 0.0)
    shares, disc_rep, disc_obs = [], [], []
    obs = class_counts(X[:, :, -1])
    for _ in range(draws):
        th = rng.multivariate_normal(f.theta, cov, method="eigh")
        rep = _from_theta(th, R, f.rep.info, f.rep.side_bias)
        exp_ = np.maximum(closing_class_probs(rep) * D, 0.5)
        sim = class_counts(simulate_bets(rep, D, rng)[:, :, -1])
        shares.append(sim / D)
        disc_rep.append(float(np.sum((sim - exp_) ** 2 / exp_)))
        disc_obs.append(float(np.sum((obs - exp_) ** 2 / exp_)))
    shares = np.asarray(shares)
    return {"mean": shares.mean(axis=0), "lo": np.quantile(shares, 0.05, axis=0),
            "hi": np.quantile(shares, 0.95, axis=0),
            "p_value": float(np.mean(np.asarray(disc_rep) >= np.asarray(disc_obs)))}


def brier_data(X: np.ndarray) -> dict:
    """What the closing bets alone say about calibration, with no outcome recorded.

    ``best``: the closing bets' Brier score if every debate had been won by the side
    that makes the score smallest (a lower bound on the true score, whoever won);
    ``coin``: its expectation if the winner were a fair coin independent of the
    bets (the self-debates, where both sides are the same model).  Always stating
    50% scores 0.25.
    """
    c = X[:, :, -1] / 100.0
    pw = (1 - c[:, 0]) ** 2 + c[:, 1] ** 2  # P wins
    ow = c[:, 0] ** 2 + (1 - c[:, 1]) ** 2  # O wins
    best = np.minimum(pw, ow) / 2
    coin = (pw + ow) / 4
    n = len(X)
    return {"best": float(best.mean()), "best_se": float(best.std(ddof=1) / math.sqrt(n)),
            "coin": float(coin.mean()), "coin_se": float(coin.std(ddof=1) / math.sqrt(n))}


def brier_model(rep: Reports, n_nodes: int = 40) -> dict:
    """The model's expected Brier score of the closing bets, and their information
    about the winner: the correlation between c_P - c_O and P's win (at +|w|: the
    most the data allow, since they do not identify the sign of w)."""
    x, w = np.polynomial.hermite_e.hermegauss(n_nodes)
    w = w / w.sum()
    B = special.ndtr((rep.side_bias + math.sqrt(rep.info) * x) / math.sqrt(1.0 - rep.info))
    d = rep.weight * (B - 0.5)
    var = (rep.shared_sd ** 2 + rep.side_sd ** 2 + rep.noise_sd ** 2) / 1e4
    shared = rep.shared_sd ** 2 / 1e4
    a = rep.intercepts[-1] / 100
    mP = a + rep.side_offset / 100 + d
    mO = a - rep.side_offset / 100 - d

    def given(z):
        """(E Brier, E[D], E[D^2]) given B when each report is 50 w.p. z."""
        def side(mean, win):  # E[(c - W)^2 | B]
            return ((1 - z) * (var + (mean - win) ** 2) + z * (0.5 - win) ** 2
                    + win * (1 - win))

        brier = (side(mP, B) + side(mO, 1 - B)) / 2
        EP, EO = (1 - z) * mP + z * 0.5, (1 - z) * mO + z * 0.5
        VP = (1 - z) * (var + mP ** 2) + z * 0.25 - EP ** 2
        VO = (1 - z) * (var + mO ** 2) + z * 0.25 - EO ** 2
        # The shared component enters both reports only when neither is anchored.
        ED = EP - EO
        return brier, ED, VP + VO - 2 * (1 - z) ** 2 * shared + ED ** 2

    pa = rep.anchor_debates
    bA, dA, d2A = given(rep.anchor)
    bF, dF, d2F = given(0.0)
    brier = float(np.sum(w * (pa * bA + (1 - pa) * bF)))
    ED, ED2 = pa * dA + (1 - pa) * dF, pa * d2A + (1 - pa) * d2F
    pw = float(np.sum(w * B))
    mean_D = float(np.sum(w * ED))
    var_D = float(np.sum(w * ED2)) - mean_D ** 2
    cov = float(np.sum(w * ED * B)) - mean_D * pw
    corr = cov / math.sqrt(var_D * pw * (1 - pw)) if var_D > 0 and 0 < pw < 1 else 0.0
    return {"brier": brier, "corr": corr, "win_P": pw}


# ------------------------------------------------------------------ juries: vote histograms
def vote_distribution(m: float, icc: float, n: int, n_nodes: int = 60) -> np.ndarray:
    """Pr(k of n judges vote for one side), k = 0..n, when judge j votes for it iff
    m - sqrt(icc) Z - sqrt(1 - icc) E_j > 0 (Z shared, E_j own; Phi(m) each judge's
    probability)."""
    x, w = np.polynomial.hermite_e.hermegauss(n_nodes)
    w = w / w.sum()
    if icc >= 1.0:
        q = (m - x > 0).astype(float)
    else:
        q = special.ndtr((m - math.sqrt(icc) * x) / math.sqrt(1.0 - icc))
    k = np.arange(n + 1)
    pmf = stats.binom.pmf(k[None, :], n, q[:, None])
    return w @ pmf


def fold(p: np.ndarray) -> np.ndarray:
    """Distribution over the number of dissenting judges 0..n//2 (side unknown)."""
    n = len(p) - 1
    out = np.array([p[j] + p[n - j] for j in range((n + 1) // 2)])
    return np.concatenate([out, [p[n // 2]]]) if n % 2 == 0 else out


def fit_votes(counts: Sequence[int], n: int) -> dict:
    """Fit (m, icc) of the shared-latent jury to a vote histogram by maximum likelihood.

    ``counts``: debates by the number of votes for one fixed side, k = 0..n (length
    n + 1), or by the number of dissenting judges 0..n//2 (length n//2 + 1, as
    published when the sides are not given).  Folded histograms identify |m| only;
    m >= 0 is reported.  Returns m, icc, their standard errors, the fitted
    distribution and the log-likelihood.
    """
    from statsmodels.tools.numdiff import approx_hess3

    counts = np.asarray(counts, float)
    folded = len(counts) == n // 2 + 1 and len(counts) != n + 1
    if len(counts) not in (n + 1, n // 2 + 1):
        raise ConfigError(f"confidence.votes must have {n + 1} counts (votes for one side, "
                          f"0..{n}) or {n // 2 + 1} (dissenting judges, 0..{n // 2}) for "
                          f"confidence.votes_judges = {n}, got {len(counts)}")

    def probs(th):
        m, icc = th[0], special.expit(th[1])
        p = vote_distribution(m, icc, n)
        return fold(p) if folded else p

    def nll(th):
        p = np.clip(probs(th), 1e-300, None)
        return -float(np.sum(counts * np.log(p)))

    best = None
    for m0 in (0.2, 1.0):
        for l0 in (-2.0, 0.0, 1.5):
            r = optimize.minimize(nll, [m0, l0], method="Nelder-Mead",
                                  options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 4000})
            if best is None or r.fun < best.fun:
                best = r
    th = best.x.copy()
    if folded:
        th[0] = abs(th[0])
    H = approx_hess3(th, nll)
    # no standard errors where the votes do not identify (m, icc): a stated rule
    # (antiamp.moments.information_rule), not whether an inversion happens to fail
    cov = (np.linalg.inv((H + H.T) / 2) if information_rule(H).identified
           else np.full((2, 2), np.nan))
    icc = float(special.expit(th[1]))
    se_m = math.sqrt(cov[0, 0]) if cov[0, 0] > 0 else math.nan
    se_icc = math.sqrt(cov[1, 1]) * icc * (1 - icc) if cov[1, 1] > 0 else math.nan
    return {"m": float(th[0]), "m_se": se_m, "icc": icc, "icc_se": se_icc,
            "fitted": probs(th), "observed": counts / counts.sum(), "folded": folded,
            "loglik": -float(best.fun), "n_debates": int(counts.sum())}


# ------------------------------------------------------------------ juries: judges that lean
#: Trapezoid nodes over the shared latent Z on [-9, 9] for the per-judge vote fit: fixed
#: while icc moves (Gauss-Hermite loses accuracy above icc = 0.5, see latent_nodes, and
#: nodes that moved with icc would make the likelihood jump); a step of 0.05 resolves the
#: votes' sigmoids in Z down to a width of sqrt((1 - icc) / icc) = 0.23 (icc = 0.95).
_LEAN_Z = np.linspace(-9.0, 9.0, 361)
_LEAN_W = np.exp(-0.5 * _LEAN_Z ** 2) / np.exp(-0.5 * _LEAN_Z ** 2).sum()
#: Most judges of a per-judge vote fit (one lean parameter each).
MAX_LEAN_JUDGES = 64


def is_judge_votes(votes) -> bool:
    """``confidence.votes`` given as per-judge votes (a list of debates, each a list of
    its judges' votes) rather than a histogram of counts."""
    return isinstance(votes, (list, tuple)) and bool(votes) and all(
        isinstance(v, (list, tuple)) for v in votes)


def judge_votes_matrix(votes, n_judges: int) -> np.ndarray:
    """Per-judge votes as a float array (debates, judges): 1 for the proposition, 0 for
    the opposition, NaN where a judge did not vote.  ConfigError names what is wrong."""
    rows = []
    for d, row in enumerate(votes):
        if len(row) != n_judges:
            raise ConfigError(f"confidence.votes[{d}] has {len(row)} votes; every debate lists "
                              f"one vote per judge (confidence.votes_judges = {n_judges}), "
                              f"null where a judge did not vote")
        out = []
        for j, v in enumerate(row):
            if v is None:
                out.append(math.nan)
            elif isinstance(v, str) and v.strip().lower() in SIDES:
                out.append(1.0 if v.strip().lower() == "proposition" else 0.0)
            elif not isinstance(v, bool) and v in (0, 1):
                out.append(float(v))
            else:
                raise ConfigError(f"confidence.votes[{d}][{j}] must be 1 (proposition), 0 "
                                  f"(opposition) or null, got {v!r}")
        rows.append(out)
    V = np.asarray(rows, float).reshape(len(rows), n_judges)
    if len(V) < 10:
        raise ConfigError(f"confidence.votes: per-judge votes of {len(V)} debates; a fit of "
                          "each judge's lean needs at least 10")
    per_judge = np.sum(~np.isnan(V), axis=0)
    if (per_judge < 5).any():
        raise ConfigError(f"confidence.votes: judge {int(np.argmin(per_judge))} voted in "
                          f"{int(per_judge.min())} debates; each judge needs at least 5")
    return V


def vote_patterns(V: np.ndarray) -> tuple:
    """The distinct rows of per-judge votes V (NaN missing) and how many debates have
    each: the likelihood is a sum over patterns (at most 3^J, far fewer than debates)."""
    key = np.where(np.isnan(V), 2.0, V)
    pat, counts = np.unique(key, axis=0, return_counts=True)
    return np.where(pat == 2.0, np.nan, pat), counts.astype(float)


def _vote_loglik(a: np.ndarray, icc: float, V: np.ndarray, grad: bool = False,
                 counts: np.ndarray | None = None):
    """Log-likelihood of per-judge votes V (debates, or patterns with ``counts``;
    judges; NaN missing) when judge j votes for the proposition iff a_j - sqrt(icc) Z -
    sqrt(1 - icc) E_j > 0; with ``grad``, also its gradient in (a, icc)."""
    counts = np.ones(len(V)) if counts is None else counts
    r = math.sqrt(1.0 - icc)
    s = (a[None, :] - math.sqrt(icc) * _LEAN_Z[:, None]) / r  # (Z, J)
    lp, lq = special.log_ndtr(s), special.log_ndtr(-s)
    ok = ~np.isnan(V)
    v = np.where(ok, V, 0.0)
    u = (ok & (v == 0)).astype(float)
    # (debates, Z): the sum over each debate's judges of its votes' log-probabilities
    per = v @ lp.T + u @ lq.T + np.log(_LEAN_W)[None, :]
    top = per.max(axis=1, keepdims=True)
    tot = np.exp(per - top).sum(axis=1, keepdims=True)
    ll = float(counts @ (np.log(tot) + top)[:, 0])
    if not grad:
        return ll
    post = np.exp(per - top) / tot * counts[:, None]  # each debate's posterior over the nodes
    lphi = -0.5 * s * s - 0.5 * math.log(2 * math.pi)
    mp, mq = np.exp(lphi - lp), np.exp(lphi - lq)  # Mills ratios phi/Phi(s), phi/Phi(-s)
    # d per / d s_zj = v_dj mp_zj - u_dj mq_zj: summed against the posterior
    g = (post.T @ v) * mp - (post.T @ u) * mq  # (Z, J)
    d_a = g.sum(axis=0) / r
    ds_dicc = (-_LEAN_Z[:, None] / (2 * math.sqrt(max(icc, 1e-300))) / r
               + (a[None, :] - math.sqrt(icc) * _LEAN_Z[:, None]) / (2 * r ** 3))
    return ll, d_a, float((g * ds_dicc).sum())


def lean_vote_distribution(a: np.ndarray, icc: float) -> np.ndarray:
    """Pr(k of the judges vote for the proposition), k = 0..J, for judges with latent
    means ``a`` (each judge's lean) sharing a latent with correlation icc."""
    s = (np.asarray(a, float)[None, :] - math.sqrt(icc) * _LEAN_Z[:, None]) / math.sqrt(
        1.0 - icc)
    q = special.ndtr(s)  # (Z, J)
    dist = np.zeros((len(_LEAN_Z), q.shape[1] + 1))
    dist[:, 0] = 1.0
    for j in range(q.shape[1]):  # the Poisson-binomial recursion, judge by judge
        dist[:, 1:] = dist[:, 1:] * (1 - q[:, j:j + 1]) + dist[:, :-1] * q[:, j:j + 1]
        dist[:, 0] *= 1 - q[:, j]
    return _LEAN_W @ dist


def fit_judge_votes(V: np.ndarray) -> dict:
    """Judges that lean: fit each judge's latent mean a_j = m + l_j (l summing to 0) and
    the shared correlation icc to per-judge votes by maximum likelihood, and the same
    model with interchangeable judges (l = 0); the likelihood-ratio test of l = 0
    (chi-squared, J - 1 degrees of freedom) says whether the judges lean differently.

    Returns ``m`` (the panel's mean lean toward the proposition, probit scale),
    ``leans`` (each judge's l_j), ``pr_proposition`` (each judge's marginal probability
    of voting for the proposition, Phi(a_j)), their standard errors (observed
    information, statsmodels' numerical Hessian), ``icc``, the log-likelihoods, the LR
    test's ``lean_p_value``, and the unfolded vote histograms (observed and fitted, over
    the debates where every judge voted).
    """
    from statsmodels.tools.numdiff import approx_fprime

    V = np.asarray(V, float)
    J = V.shape[1]
    if J > MAX_LEAN_JUDGES:
        raise ConfigError(f"confidence.votes: {J} judges; a per-judge lean fit takes at most "
                          f"{MAX_LEAN_JUDGES}")

    def unpack(th):
        leans = np.append(th[1:J], -np.sum(th[1:J]))
        return th[0], leans, float(special.expit(th[J]))

    P, n = vote_patterns(V)

    def nll(th, grad=False):
        m, leans, icc = unpack(th)
        icc = min(icc, 1 - 1e-9)
        if not grad:
            return -_vote_loglik(m + leans, icc, P, counts=n)
        ll, d_a, d_icc = _vote_loglik(m + leans, icc, P, grad=True, counts=n)
        d_l = d_a[:J - 1] - d_a[J - 1]  # the last lean is minus the sum of the others
        return -ll, -np.r_[d_a.sum(), d_l, d_icc * icc * (1 - icc)]

    def nll_equal(th, grad=False):
        icc = min(float(special.expit(th[1])), 1 - 1e-9)
        if not grad:
            return -_vote_loglik(np.full(J, th[0]), icc, P, counts=n)
        ll, d_a, d_icc = _vote_loglik(np.full(J, th[0]), icc, P, grad=True, counts=n)
        return -ll, -np.r_[d_a.sum(), d_icc * icc * (1 - icc)]

    def fit(f, starts):
        opts = {"maxiter": 2000, "ftol": 1e-14, "gtol": 1e-9}
        return min((optimize.minimize(f, x0, args=(True,), jac=True, method="L-BFGS-B",
                                      options=opts) for x0 in starts), key=lambda r: r.fun)

    m0 = float(special.ndtri(np.clip(np.nanmean(V), 0.02, 0.98)))
    best_eq = fit(nll_equal, [[m0, l0] for l0 in (-2.0, 0.0, 1.5)])
    per = np.clip(np.nanmean(V, axis=0), 0.02, 0.98)
    l0 = special.ndtri(per) - special.ndtri(per).mean()
    best = fit(nll, [np.r_[m0, l0[:-1], best_eq.x[1]],
                     np.r_[best_eq.x[0], np.zeros(J - 1), best_eq.x[1]]])
    th = best.x
    m, leans, icc = unpack(th)
    # The observed information: central differences of the exact gradient (2 (J + 1)
    # gradients, where differences of the likelihood itself take (J + 1)^2 evaluations).
    H = approx_fprime(th, lambda x: nll(x, True)[1], centered=True)
    H = 0.5 * (H + H.T)
    cov = (np.linalg.inv(H) if information_rule(H).identified
           else np.full((J + 1, J + 1), np.nan))
    # Every judge's lean (the last one is minus the sum of the others) and mean a_j:
    # linear maps of the parameters, their covariances by the same maps.
    L = np.zeros((J, J + 1))
    L[:J - 1, 1:J] = np.eye(J - 1)
    L[J - 1, 1:J] = -1.0
    A = L.copy()
    A[:, 0] = 1.0
    lean_se = np.sqrt(np.clip(np.diag(L @ cov @ L.T), 0, None))
    a = m + leans
    a_se = np.sqrt(np.clip(np.diag(A @ cov @ A.T), 0, None))
    ll, ll_eq = -float(best.fun), -float(best_eq.fun)
    lr = max(2.0 * (ll - ll_eq), 0.0)
    full = ~np.isnan(V).any(axis=1)
    k = V[full].sum(axis=1).astype(int)
    observed = np.bincount(k, minlength=J + 1) / max(int(full.sum()), 1)
    se = lambda v: math.sqrt(v) if v > 0 else math.nan  # noqa: E731
    return {
        "m": float(m), "m_se": se(cov[0, 0]), "leans": leans, "leans_se": lean_se,
        "pr_proposition": special.ndtr(a),
        "pr_proposition_se": np.exp(-0.5 * a ** 2) / math.sqrt(2 * math.pi) * a_se,
        "icc": icc, "icc_se": se(cov[J, J]) * icc * (1 - icc),
        "loglik": ll, "loglik_equal": ll_eq, "lr": lr,
        "lean_p_value": float(stats.chi2.sf(lr, J - 1)) if J > 1 else math.nan,
        "m_equal": float(best_eq.x[0]), "icc_equal": float(special.expit(best_eq.x[1])),
        "fitted": lean_vote_distribution(a, icc), "observed": observed,
        "fitted_equal": lean_vote_distribution(np.full(J, best_eq.x[0]),
                                               float(special.expit(best_eq.x[1]))),
        "n_debates": int(len(V)), "n_complete": int(full.sum())}


@functools.lru_cache(maxsize=8)
def _votes_csv(path: str, mtime_ns: int, n_judges: int) -> np.ndarray:
    """Per-judge votes read from a CSV (debate, judge, vote), as :func:`votes_of` gives them."""
    import pandas as pd

    from antiamp.inputs import check_field_lengths, check_input, csv_header

    p = Path(path)
    check_input(p, "table", ConfigError, f"confidence.votes: {str(p)!r}")
    names = csv_header(p, ConfigError, f"confidence.votes: {p.name}", comment="#")
    # fields bounded, no row wider than the header (pandas would index it), as a log's
    check_field_lengths(p, f"confidence.votes: {p.name}", ConfigError,
                        header=len(names) or None, comment="#")
    try:
        df = pd.read_csv(p, comment="#")
    except Exception as exc:
        raise ConfigError(f"confidence.votes: {p.name} is not a readable CSV ({exc})") \
            from None
    missing = [c for c in ("debate", "judge", "vote") if c not in df]
    if missing:
        raise ConfigError(f"confidence.votes: {p.name} lacks the column(s) "
                          f"{', '.join(missing)} (schema: debate, judge, vote)")
    judges = sorted(df["judge"].unique(), key=str)
    if len(judges) != n_judges:
        raise ConfigError(f"confidence.votes: {p.name} has {len(judges)} judges; "
                          f"confidence.votes_judges is {n_judges}")
    t = df.pivot_table(index="debate", columns="judge", values="vote", aggfunc="first")
    t = t.reindex(columns=judges)
    rows = [[None if pd.isna(v) else (v.strip().lower() if isinstance(v, str) else
                                      int(v) if float(v) in (0.0, 1.0) else v)
             for v in row] for row in t.itertuples(index=False)]
    return judge_votes_matrix(rows, int(n_judges))


def votes_of(cc) -> np.ndarray | None:
    """``confidence.votes`` as per-judge votes (debates, judges), or None when it is a
    histogram or null.  Per-judge votes are a list of debates, each a list of its judges'
    votes, or the path of a CSV with columns debate, judge, vote (proposition/opposition
    or 1/0; a judge missing from a debate did not vote)."""
    votes = cc.votes
    if isinstance(votes, str):
        p = Path(votes)
        if not p.exists():  # (a FIFO or a device is refused by the reader, by name)
            raise ConfigError(f"confidence.votes: no such file {votes!r} (a CSV of per-judge "
                              "votes: debate, judge, vote)")
        # read once per file version (a grid's cells and the input check share it)
        return _votes_csv(str(p), p.stat().st_mtime_ns, int(cc.votes_judges)).copy()
    if is_judge_votes(votes):
        return judge_votes_matrix(votes, int(cc.votes_judges))
    return None


# ------------------------------------------------------------------ oversight (exact)
def latent_nodes(icc: float, n_nodes: Optional[int] = None) -> tuple:
    """Nodes and weights over a jury's standard-normal shared latent.

    Given the latent, the majority's probability is a sigmoid in it of width about
    sqrt((1 - icc) / icc): Gauss-Hermite with 40 nodes is exact to 3e-9 up to
    icc = 0.5, but its error grows to 5e-3 at icc = 0.9.  Above 0.5 the trapezoid
    rule on [-9, 9] with a step of a sixth of that width (at most 0.1) is used:
    spectrally accurate for a smooth Gaussian-weighted integrand (error below 1e-8
    up to icc = 0.95, against a 20,001-point reference in the tests).
    """
    if n_nodes is not None or icc <= 0.5:
        x, w = np.polynomial.hermite_e.hermegauss(n_nodes or 40)
    else:
        h = min(0.1, math.sqrt((1.0 - icc) / icc) / 6.0)
        x = np.arange(-9.0, 9.0 + h / 2, h)
        w = np.exp(-0.5 * x * x)
    return x, w / w.sum()


def jury_endorse(q: np.ndarray, n: int, icc: float, tie: float = 0.5,
                 n_nodes: Optional[int] = None) -> np.ndarray:
    """Pr(the majority of n shared-latent judges endorses) given each one's q."""
    from ...judge import jury_majority

    q = np.asarray(q, float)
    if n == 1:
        return q
    if icc == 0.0:
        return jury_majority(q, n, tie)
    x, w = latent_nodes(icc, n_nodes)
    zq = special.ndtri(np.clip(q, 0.0, 1.0))
    qz = special.ndtr((zq[..., None] - math.sqrt(icc) * x) / math.sqrt(1.0 - icc))
    return (jury_majority(qz, n, tie) * w).sum(axis=-1)


@functools.lru_cache(maxsize=16)
def _jury_table(n: int, icc: float, tie: float) -> tuple:
    """(nodes, weights, table) of a shared-latent jury, built once per process: the
    kernel and the quadratures of a cell read the same one (not to be written to)."""
    from ...kernels.confidence import jury_table

    x, w = latent_nodes(icc)
    return x, w, jury_table(int(n), float(icc), float(tie), x, w)


def tabulated_jury(n: int, icc: float, tie: float = 0.5):
    """The jury's endorsement as a function of the single judge's logit argument s,
    as the compiled kernel reads it (:func:`kernels.confidence.jury_at`: its table,
    four-point Lagrange, within 1e-9 of :func:`jury_endorse`; beyond the table, the
    quadrature).  For repeated quadratures over the same jury."""
    from ...kernels.confidence import jury_at_many

    x, w, table = _jury_table(int(n), float(icc), float(tie))

    def at(s):
        s = np.ascontiguousarray(s, dtype=float)
        return jury_at_many(s.reshape(-1), int(n), float(icc), float(tie), x, w,
                            table).reshape(s.shape)

    return at


# ------------------------------------------------------------------ juries of judges that lean
#: Largest error allowed where a Monte Carlo instance falls outside the lean jury's
#: table (s < -S_MAX): the kernel's quadrature there is the jury without leans.
LEAN_TAIL_TOL = 1e-12


def jury_leans_of(fv: dict, how: str) -> Optional[np.ndarray]:
    """The leans the oversight jury uses, from a per-judge vote fit
    (:func:`fit_judge_votes`): None for ``how`` = "none"."""
    if how == "none":
        return None
    leans = np.asarray(fv["leans"], float)
    return leans + fv["m"] if how == "absolute" else leans


@functools.lru_cache(maxsize=16)
def _lean_table(n: int, icc: float, tie: float, leans: tuple) -> tuple:
    """(nodes, weights, table) of a jury of judges that lean, built once per process."""
    from ...kernels.confidence import jury_table_leans

    x, w = (np.zeros(1), np.ones(1)) if icc == 0.0 else latent_nodes(icc)
    return x, w, jury_table_leans(int(n), float(icc), float(tie), x, w,
                                  np.asarray(leans, float))


def lean_table(n: int, icc: float, tie: float, leans, s_min: float = -math.inf) -> tuple:
    """(nodes, weights, table) of a jury of n of the judges with ``leans`` (probit
    scale, toward the proposition), seated at random, sides at random
    (:func:`kernels.confidence.jury_leans`).  The Monte Carlo kernel reads it as it
    reads a shared-latent jury's table; below the table (logit argument s < -S_MAX) the
    kernel's quadrature knows no leans, so where instances can reach there (``s_min``,
    the smallest logit argument an instance can have) the endorsement at the table's
    edge, with the leans and without, must be below LEAN_TAIL_TOL (both are increasing
    in s and at least 0, so below the edge they differ by less than that): otherwise
    ConfigError."""
    from ...kernels.confidence import S_MAX, S_STEP, jury_prob, log_binom_row

    leans = tuple(float(v) for v in np.asarray(leans, float).ravel())
    if not 1 <= n <= len(leans):
        raise ConfigError(f"judge.jury_size must lie in [1, {len(leans)}] (the judges of "
                          f"confidence.votes, whose leans the jury uses), got {n}; or set "
                          "confidence.jury_leans=none")
    out = _lean_table(int(n), float(icc), float(tie), leans)
    if s_min < -S_MAX + 2 * S_STEP:
        # the table's first point read by interpolation; below it the kernel's quadrature
        q = 1.0 / (1.0 + math.exp(S_MAX - S_STEP))
        edge = max(float(out[2][1]), float(jury_prob(q, int(n), float(icc), float(tie), out[0],
                                                 out[1], log_binom_row(int(n)))))
        if edge > LEAN_TAIL_TOL:
            raise ConfigError(
                f"a jury of judges that lean: instances reach the judge's logit argument "
                f"{s_min:.1f}, below the jury table's {-S_MAX:g}, where the jury still "
                f"endorses with probability {edge:.2g}; lower judge.lam, judge.kappa or "
                "confidence.kappa_c, or set confidence.jury_leans=none")
    return out


def logit_range(lam: float, mu: float, kappa: float, kappa_c: float) -> tuple:
    """The smallest and largest logit argument lam (mu + kappa (e_P - e_A) + kappa_c
    (L_P - L_A)) of any instance (evidence differences -1..1, logit reports within the
    clipping: |L_P - L_A| <= 2 logit(REPORT_HI / 100))."""
    L = 2 * math.log(REPORT_HI / (100 - REPORT_HI))
    vals = [lam * (mu + kappa * d + kappa_c * x) for d in (-1, 0, 1) for x in (-L, L)]
    return min(vals), max(vals)


def lean_jury(n: int, icc: float, tie: float, leans):
    """A jury of judges that lean as a function of the single judge's logit argument s:
    the table (:func:`lean_table`, four-point Lagrange) where it covers s, else the
    quadrature itself (:func:`kernels.confidence.jury_leans`)."""
    from ...kernels.confidence import jury_leans_many

    x, w, table = lean_table(n, icc, tie, leans)
    la = np.asarray(leans, float)

    def at(s):
        s = np.ascontiguousarray(s, dtype=float)
        return jury_leans_many(s.reshape(-1), int(n), float(icc), float(tie), x, w, la,
                               table).reshape(s.shape)

    return at


def oversight_exact(rep_P: Reports, rep_A: Reports, p: float, rho: float, lam: float,
                    mu: float, kappa: float, kappa_c: float, n: int = 1, icc: float = 0.0,
                    tie: float = 0.5, n_nodes: int = 24, jury=None) -> dict:
    """Amp, fwc and accuracy of consultancy and debate by quadrature over the latent
    terms (closing belief, shared component, each side's own terms): the oracle of
    the Monte Carlo kernel.

    The protagonist's answer is right iff the outcome index is positive; its side
    bias is Phi^-1(p).  Both debaters see the same transcript: the antagonist's
    belief is 1 - B.  Reports are clipped to [0.5, 99.5] before the logit.
    ``jury``: the jury's endorsement as a function of the logit argument (default:
    :func:`jury_endorse` of its sigmoid; :func:`tabulated_jury` for repeated calls).
    """
    if jury is None:
        def jury(s):
            return jury_endorse(special.expit(s), n, icc, tie)
    info = rep_P.info
    beta = float(special.ndtri(p)) if 0 < p < 1 else math.copysign(40.0, p - 0.5)
    x, w = np.polynomial.hermite_e.hermegauss(n_nodes)
    w = w / w.sum()
    # Grid over (S_R, u, d_P, d_A), each standard normal at the nodes.
    S, U, DP, DA = np.meshgrid(x, x, x, x, indexing="ij", sparse=True)
    W = (w[:, None, None, None] * w[None, :, None, None] * w[None, None, :, None]
         * w[None, None, None, :])
    Y = beta + math.sqrt(info) * S
    B = special.ndtr(Y / math.sqrt(max(1.0 - info, 1e-300)))  # Pr(P right | S_R)

    def report(rep, belief, d, sign):
        own = math.sqrt(rep.side_sd ** 2 + rep.noise_sd ** 2)
        c = (rep.intercepts[-1] + sign * rep.side_offset + rep.weight * (100 * belief - 50)
             + rep.shared_sd * U + own * d)
        c = np.clip(c, 0.5, 99.5) / 100
        return np.log(c) - np.log1p(-c)

    # The protagonist reports as side P, the antagonist as side O of its condition.
    # A debate is an anchoring one for side s w.p. pi_s (one uniform for both sides:
    # the same debate), and then each report is 50 (logit 0) w.p. z_s.
    LP0 = report(rep_P, B, DP, 1.0)
    LA0 = report(rep_A, 1 - B, DA, -1.0)
    aP = rep_P.anchor_debates * rep_P.anchor
    aA = rep_A.anchor_debates * rep_A.anchor
    p11 = min(rep_P.anchor_debates, rep_A.anchor_debates) * rep_P.anchor * rep_A.anchor
    mixP = ((1 - aP, LP0), (aP, 0.0))
    joint = ((1 - aP - aA + p11, LP0, LA0), (aP - p11, 0.0, LA0), (aA - p11, LP0, 0.0),
             (p11, 0.0, 0.0))
    out = {}
    for right, wt in ((1, B), (0, 1 - B)):
        pr = float(np.sum(W * wt))
        # Evidence: the true side always has it; the false side with rho.
        if right:  # e_P = 1; e_A = 1 w.p. rho
            cons = [(1.0, 1)]
            deb = [(rho, 1, 1), (1 - rho, 1, 0)]
        else:
            cons = [(rho, 1), (1 - rho, 0)]
            deb = [(rho, 1, 1), (1 - rho, 0, 1)]
        qc = sum(pe * pz * jury(lam * (mu + kappa * eP + kappa_c * LP))
                 for pe, eP in cons for pz, LP in mixP)
        qd = sum(pe * pj * jury(lam * (mu + kappa * (eP - eA) + kappa_c * (LP - LA)))
                 for pe, eP, eA in deb for pj, LP, LA in joint if pj > 0)
        out[right] = (pr, float(np.sum(W * wt * qc)) / pr, float(np.sum(W * wt * qd)) / pr)
    res = {}
    for k, prot in enumerate(PROTOCOLS):
        amp, fwc = out[0][k + 1], out[1][k + 1]
        res[prot] = {"amp": amp, "fwc": fwc, "acc": p * fwc + (1 - p) * (1 - amp)}
    return res


#: Reports are clipped to [REPORT_LO, REPORT_HI] (0-100 scale) before the logit.
REPORT_LO, REPORT_HI = 0.5, 99.5


#: Judge-argument values at which the own terms' stretches are cut when confidence
#: weighs in (kappa_c != 0): a steep judge is a step in the reports, and Gauss-Legendre
#: converges fast on the pieces between these cuts (the endorsement within 2e-16 of 0
#: or 1 beyond +-36, its logistic scale resolved in between), not across a step.
S_CUTS = (-36.0, -18.0, -8.0, -3.0, 0.0, 3.0, 8.0, 18.0, 36.0)
#: The fine-against-coarse difference of the plain integration above which
#: :func:`oversight_exact_bounded` integrates again with the own terms cut at the
#: judge's steps.  Below it the plain integration's difference is calibrated against
#: the cut one (tests/test_bounds_confidence.py); above it a step may be hiding.
STEP_GATE = 1e-6


def _report_atoms(base, own: float, n_leg: int, cuts=None):
    """One side's own term integrated exactly at the clipping kinks.

    The report c = base + own D (D standard normal; ``base`` an array over the other
    latents) is clipped to [0.5, 99.5] before the logit, so the integrand has kinks
    where c meets a clip and is constant beyond them.  Returns (values, weights) with a
    trailing axis of n_leg + 2 atoms: the two clipped logits with their normal tail
    probabilities, then Gauss-Legendre nodes on the unclipped stretch of D (within
    +-9 sd) with weights times the normal density.  Gauss-Legendre on the smooth
    stretch between the kinks, not Gauss-Hermite over them: a kink costs
    Gauss-Hermite its convergence (0.017 off at wide spreads and steep judges).

    ``cuts``: logits of the report (an array over ``base``'s shape plus one trailing
    axis) where the integrand steps (a steep judge): the unclipped stretch is then cut
    there too, n_leg / 8 Gauss-Legendre nodes per piece (at least 6), so that no step
    falls between two nodes."""
    lo_c, hi_c = REPORT_LO / 100, REPORT_HI / 100
    L_lo, L_hi = math.log(lo_c / (1 - lo_c)), math.log(hi_c / (1 - hi_c))
    base = np.asarray(base, float)
    if own <= 0:  # no own term: one atom at the clipped report
        c = np.clip(base, REPORT_LO, REPORT_HI) / 100
        return (np.log(c) - np.log1p(-c))[..., None], np.ones(base.shape + (1,))
    lo = (REPORT_LO - base) / own  # D below lo: clipped at the bottom
    hi = (REPORT_HI - base) / own
    a, b = np.clip(lo, -9.0, 9.0), np.clip(hi, -9.0, 9.0)
    x, w = _leggauss(n_leg if cuts is None else max(6, n_leg // 8))
    if cuts is None:
        edges = np.stack([a, b], axis=-1)
    else:
        d_cut = (100.0 * special.expit(np.asarray(cuts, float)) - base[..., None]) / own
        edges = np.sort(np.concatenate([a[..., None], np.clip(d_cut, a[..., None], b[..., None]),
                                        b[..., None]], axis=-1), axis=-1)
    # every piece [edges_i, edges_i+1] with n_leg nodes: (..., pieces * n_leg)
    half = 0.5 * np.diff(edges, axis=-1)
    mid = 0.5 * (edges[..., 1:] + edges[..., :-1])
    z = (mid[..., None] + half[..., None] * x).reshape(base.shape + (-1,))
    wz = (half[..., None] * w).reshape(base.shape + (-1,))
    c = np.clip(base[..., None] + own * z, REPORT_LO, REPORT_HI) / 100
    vals = np.concatenate([np.broadcast_to(L_lo, base.shape)[..., None],
                           np.broadcast_to(L_hi, base.shape)[..., None],
                           np.log(c) - np.log1p(-c)], axis=-1)
    dens = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    wts = np.concatenate([special.ndtr(lo)[..., None], special.ndtr(-hi)[..., None],
                          wz * dens], axis=-1)
    return vals, wts


@functools.lru_cache(maxsize=8)
def _leggauss(n: int):
    return np.polynomial.legendre.leggauss(n)


def _oversight_kinks(rep_P: Reports, rep_A: Reports, p: float, rho: float, lam: float,
                     mu: float, kappa: float, kappa_c: float, jury, n_gh: int,
                     n_leg: int, steps: bool = False) -> dict:
    """:func:`oversight_exact` with each side's own term integrated exactly at the
    clipping kinks (:func:`_report_atoms`) and Gauss-Hermite over the closing belief
    and the shared component (smooth once the own terms are integrated out).
    ``steps``: also cut the own terms where a steep judge steps (the judge's
    argument crossing :data:`S_CUTS`), about five times the work."""
    info = rep_P.info
    beta = float(special.ndtri(p)) if 0 < p < 1 else math.copysign(40.0, p - 0.5)
    x, w = np.polynomial.hermite_e.hermegauss(n_gh)
    w = w / w.sum()
    own_P = math.sqrt(rep_P.side_sd ** 2 + rep_P.noise_sd ** 2)
    own_A = math.sqrt(rep_A.side_sd ** 2 + rep_A.noise_sd ** 2)
    aP = rep_P.anchor_debates * rep_P.anchor
    aA = rep_A.anchor_debates * rep_A.anchor
    p11 = min(rep_P.anchor_debates, rep_A.anchor_debates) * rep_P.anchor * rep_A.anchor
    acc = {1: np.zeros(3), 0: np.zeros(3)}  # (probability, consult, debate) sums
    for s_node, ws in zip(x, w):
        B = float(special.ndtr((beta + math.sqrt(info) * s_node)
                               / math.sqrt(max(1.0 - info, 1e-300))))
        U = x  # the shared component at the nodes (weights w)
        bP = (rep_P.intercepts[-1] + rep_P.side_offset + rep_P.weight * (100 * B - 50)
              + rep_P.shared_sd * U)
        bA = (rep_A.intercepts[-1] - rep_A.side_offset + rep_A.weight * (100 * (1 - B) - 50)
              + rep_A.shared_sd * U)
        VP, WP = _report_atoms(bP, own_P, n_leg)  # (nU, atoms)
        VA, WA = _report_atoms(bA, own_A, n_leg)
        kk = lam * kappa_c
        cut_steps = steps and kk != 0
        L_clip = np.log([REPORT_LO / (100 - REPORT_LO), REPORT_HI / (100 - REPORT_HI)])

        def cut(at, a0, sign=1.0):
            """Report logits L where the judge's argument a0 + sign kk (L - at)
            crosses S_CUTS: shape (..., cuts) for ``at`` of shape (...)."""
            return np.asarray(at)[..., None] + sign * (np.asarray(S_CUTS) - a0) / kk

        def own_P_at(a0):  # P's own term cut where jury(a0 + kk L_P) steps
            if not cut_steps:
                return VP, WP
            return _report_atoms(bP, own_P, n_leg, cut(np.zeros(len(U)), a0))

        # The judge's endorsement given the evidence shown depends on the truth only
        # through which evidence is shown: a term that both truths share (consultancy
        # with evidence, debate with both sides' evidence) is integrated once a node.
        memo: dict = {}

        def consult(eP):
            if ("c", eP) not in memo:
                a0 = lam * (mu + kappa * eP)
                V, Wt = own_P_at(a0)
                memo["c", eP] = ((1 - aP) * (Wt * jury(a0 + kk * V)).sum(-1)
                                 + aP * jury(np.full(1, a0))[0])
            return memo["c", eP]

        def both(a0):
            """Both own terms: A's cut, per node of P, where a0 + kk (L_P - L_A) steps;
            P's where it steps against A's clipped reports (A's atoms)."""
            if not cut_steps:
                WD = WP[:, :, None] * WA[:, None, :]
                return (WD * jury(a0 + kk * (VP[:, :, None] - VA[:, None, :]))).sum((-1, -2))
            cutsP = np.concatenate([cut(np.full(len(U), L), a0) for L in L_clip], axis=-1)
            Vp, Wp = _report_atoms(bP, own_P, n_leg, cutsP)  # (nU, nP)
            Va, Wa = _report_atoms(np.broadcast_to(bA[:, None], Vp.shape), own_A, n_leg,
                                   cut(Vp, a0, -1.0))  # (nU, nP, nA)
            inner = (Wa * jury(a0 + kk * (Vp[..., None] - Va))).sum(-1)
            return (Wp * inner).sum(-1)

        def anchored_A(a0):  # A states 50: jury(a0 + kk L_P)
            V, Wt = own_P_at(a0)
            return (Wt * jury(a0 + kk * V)).sum(-1)

        def anchored_P(a0):  # P states 50: jury(a0 - kk L_A)
            if not cut_steps:
                return (WA * jury(a0 - kk * VA)).sum(-1)
            V, Wt = _report_atoms(bA, own_A, n_leg, cut(np.zeros(len(U)), a0, -1.0))
            return (Wt * jury(a0 - kk * V)).sum(-1)

        def debate(d):
            if ("d", d) not in memo:
                a0 = lam * (mu + kappa * d)
                parts = ((1 - aP - aA + p11, lambda: both(a0)),
                         (aP - p11, lambda: anchored_P(a0)),
                         (aA - p11, lambda: anchored_A(a0)),
                         (p11, lambda: jury(np.full(1, a0))[0]))
                memo["d", d] = [(pj, f()) for pj, f in parts if pj > 0]
            return memo["d", d]

        for right, wt in ((1, B), (0, 1 - B)):
            if right:
                cons, deb = [(1.0, 1)], [(rho, 1, 1), (1 - rho, 1, 0)]
            else:
                cons, deb = [(rho, 1), (1 - rho, 0)], [(rho, 1, 1), (1 - rho, 0, 1)]
            qc = np.zeros(len(U))
            for pe, eP in cons:
                if pe == 0:
                    continue
                qc += pe * consult(eP)
            qd = np.zeros(len(U))
            for pe, eP, eA in deb:
                if pe == 0:
                    continue
                for pj, v in debate(eP - eA):
                    qd += pe * pj * v
            acc[right] += ws * wt * np.array([1.0, float(np.dot(w, qc)), float(np.dot(w, qd))])
    res = {}
    for k_, prot in enumerate(PROTOCOLS):
        amp = acc[0][k_ + 1] / acc[0][0]
        fwc = acc[1][k_ + 1] / acc[1][0]
        res[prot] = {"amp": amp, "fwc": fwc, "acc": p * fwc + (1 - p) * (1 - amp)}
    return res


def oversight_exact_bounded(rep_P: Reports, rep_A: Reports, p: float, rho: float,
                            lam: float, mu: float, kappa: float, kappa_c: float, n: int = 1,
                            icc: float = 0.0, tie: float = 0.5, jury=None,
                            leans=None) -> tuple:
    """Amp, fwc and accuracy of consultancy and debate (as :func:`oversight_exact`) with
    the clipping kinks integrated exactly, and an estimate of the error: the largest
    difference from the same integration at about two thirds of the nodes (Gauss-Hermite
    48 against 32 over the belief and the shared component, Gauss-Legendre 96 against 64
    over each side's own term).  ``leans``: the jury's judges lean (:func:`lean_jury`).
    Returns (values, error)."""
    if jury is None and leans is not None:
        jury = lean_jury(n, icc, tie, leans)
    if jury is None:
        def jury(s):
            return jury_endorse(special.expit(s), n, icc, tie)
    kw = dict(p=p, rho=rho, lam=lam, mu=mu, kappa=kappa, kappa_c=kappa_c, jury=jury)

    def pair(steps: bool) -> tuple:
        fine = _oversight_kinks(rep_P, rep_A, n_gh=48, n_leg=96, steps=steps, **kw)
        coarse = _oversight_kinks(rep_P, rep_A, n_gh=32, n_leg=64, steps=steps, **kw)
        return fine, max(abs(fine[pr][k] - coarse[pr][k]) for pr in PROTOCOLS
                         for k in fine[pr])

    fine, err = pair(False)
    if lam * kappa_c != 0 and err > STEP_GATE:
        # A judge that weighs confidence steeply is a step across the own report
        # terms: Gauss-Legendre across it converges like 1 / n, and the fine-coarse
        # difference then understates the error (by about 2x at kappa_c 50).  Cut the
        # own terms at the step and keep whichever integration agrees with its own
        # coarser version better (the cut one on a step, the uncut one where the judge
        # is shallow and the cuts only thin the nodes).
        fine_s, err_s = pair(True)
        if err_s < err:
            fine, err = fine_s, err_s
    return fine, float(err)


def kappa_c_thresholds(rep_P: Reports, rep_A: Reports, p: float, rho: float, lam: float,
                       mu: float, kappa: float, n: int = 1, icc: float = 0.0,
                       tie: float = 0.5, kappa_max: float = 50.0, leans=None, **_) -> dict:
    """Where weighing stated confidence turns debate's anti-amplification off.

    ``off``: the smallest kappa_c at which debate's Amp reaches consultancy's Amp
    with a judge that ignores confidence (kappa_c = 0); ``half``: the smallest at
    which debate's Amp reaches 1/2 (a wrong protagonist is endorsed more often than
    not).  By quadrature (12 nodes per latent), a scan of kappa_c on [0, kappa_max]
    and Brent's method on the first crossing; NaN where it is never reached.  A
    shared-latent jury is read from its table (:func:`tabulated_jury`: dozens of
    quadratures over the same jury), and so is a jury of judges that lean
    (``leans``: :func:`lean_jury`).
    """
    jury = (lean_jury(n, icc, tie, leans) if leans is not None else
            tabulated_jury(n, icc, tie) if n > 1 and icc > 0 else None)
    kw = dict(p=p, rho=rho, lam=lam, mu=mu, kappa=kappa, n=n, icc=icc, tie=tie, n_nodes=12,
              jury=jury)

    def amp(kc, prot="debate"):
        return oversight_exact(rep_P, rep_A, kappa_c=kc, **kw)[prot]["amp"]

    ref = amp(0.0, "consult")
    grid = np.concatenate([[0.0], np.geomspace(0.05, kappa_max, 16)])
    vals = np.array([amp(k) for k in grid])
    out = {"amp_consult_0": ref}
    for name, level in (("off", ref), ("half", 0.5)):
        hit = np.flatnonzero(vals >= level)
        if not len(hit):
            out[name] = math.nan
        elif hit[0] == 0:
            out[name] = 0.0
        else:
            i = hit[0]
            out[name] = float(optimize.brentq(lambda k: amp(k) - level, grid[i - 1], grid[i],
                                              xtol=1e-4))
    return out


# ------------------------------------------------------------------ config
def reports_of(cc, condition: Optional[str] = None) -> tuple:
    """(Reports, Fit or None) of the configured condition with its overrides."""
    fitd = fit_condition(condition or cc.condition, cc.data, float(cc.info))
    rep = fitd.rep
    over = {}
    if cc.intercepts is not None:
        if len(cc.intercepts) != rep.rounds:
            raise ConfigError(f"confidence.intercepts must have {rep.rounds} values (one per "
                              f"round of the data), got {len(cc.intercepts)}")
        over["intercepts"] = tuple(float(v) for v in cc.intercepts)
    for k in ("weight", "side_bias", "shared_sd", "side_sd", "noise_sd"):
        if getattr(cc, k) is not None:
            over[k] = float(getattr(cc, k))
    if over:
        from dataclasses import replace

        rep = replace(rep, **over)
    return rep, fitd


def validate_confidence(cfg) -> None:
    """Field checks (before any data is read or anything is computed)."""
    cc = cfg.confidence
    require_logit_judge(cfg, "confidence", " (the judge weighs stated confidence: sigma(lam "
                        "(mu + kappa (e_P - e_A) + kappa_c (logit c_P - logit c_A))))")
    if not isinstance(cc.condition, str) or not cc.condition:
        raise ConfigError(f"confidence.condition must be a condition of the bets data "
                          f"({', '.join(CONDITIONS)} in the shipped table), got {cc.condition!r}")
    if cc.antagonist is not None and not isinstance(cc.antagonist, str):
        raise ConfigError(f"confidence.antagonist must be a condition name or null, got "
                          f"{cc.antagonist!r}")
    if cc.intercepts is not None:
        if not isinstance(cc.intercepts, (list, tuple)) or not cc.intercepts:
            raise ConfigError(f"confidence.intercepts must be a list of mean reports, one per "
                              f"round, got {cc.intercepts!r}")
        for i, v in enumerate(cc.intercepts):
            if not 0 <= check_number(f"confidence.intercepts[{i}]", v) <= 100:
                raise ConfigError(f"confidence.intercepts[{i}] must lie in [0, 100], got {v!r}")
    if cc.votes is not None and (isinstance(cc.votes, str) or is_judge_votes(cc.votes)):
        if cc.icc != 0.0:
            raise ConfigError("give confidence.icc or confidence.votes (which fits icc), "
                              "not both")
        if cc.votes_judges > MAX_LEAN_JUDGES:
            raise ConfigError(f"confidence.votes_judges must be at most {MAX_LEAN_JUDGES} "
                              f"with per-judge votes (one lean each), got {cc.votes_judges}")
        if cc.jury_leans != "none" and cfg.judge.jury_size > cc.votes_judges:
            raise ConfigError(f"judge.jury_size must lie in [1, {cc.votes_judges}] "
                              f"(confidence.votes_judges: the judges whose leans the jury "
                              f"uses) with per-judge confidence.votes, got "
                              f"{cfg.judge.jury_size}; or set confidence.jury_leans=none")
        if not isinstance(cc.votes, str):
            judge_votes_matrix(cc.votes, int(cc.votes_judges))
    elif cc.votes is not None:
        n = cc.votes_judges
        if not isinstance(cc.votes, (list, tuple)) or len(cc.votes) not in (n + 1, n // 2 + 1):
            raise ConfigError(f"confidence.votes must be a list of {n + 1} counts (debates by "
                              f"votes for one side, 0..{n}) or {n // 2 + 1} (by dissenting "
                              f"judges, 0..{n // 2}) for confidence.votes_judges = {n}, got "
                              f"{cc.votes!r}")
        for i, v in enumerate(cc.votes):
            check_int(f"confidence.votes[{i}]", v, 0)
        if sum(cc.votes) < 2:
            raise ConfigError("confidence.votes must count at least 2 debates")
        if cc.icc != 0.0:
            raise ConfigError("give confidence.icc or confidence.votes (which fits icc), "
                              "not both")
    if cc.data is not None and not isinstance(cc.data, str):
        raise ConfigError(f"confidence.data must be a path to a bets CSV or null, got "
                          f"{cc.data!r}")


# ------------------------------------------------------------------ oversight (Monte Carlo)
def _rep_vector(rep: Reports) -> np.ndarray:
    return np.array([rep.intercepts[-1], rep.side_offset, rep.weight, rep.shared_sd,
                     math.sqrt(rep.side_sd ** 2 + rep.noise_sd ** 2), rep.anchor,
                     rep.anchor_debates])


def simulate_oversight(rep_P: Reports, rep_A: Reports, p: float, rho: float, lam: float,
                       mu: float, kappa: float, kappa_c: float, n_instances: int, seed: int,
                       n: int = 1, icc: float = 0.0, tie: float = 0.5,
                       n_threads: int = 0, device: str = "cpu", leans=None) -> dict:
    """Amp, fwc, accuracy (each with its standard error) of consultancy and debate,
    and the paired Amp contrast, by the compiled kernel (common random numbers).
    ``leans``: the jury's judges lean (:func:`lean_table`: the kernel reads the jury's
    endorsement from its table, whatever the number of instances)."""
    from ...kernels.confidence import TABLE_SIZE, confidence_kernel
    from ...kernels.rng import split_seed
    from ...runner import device_of, kernel_threads

    kernel = confidence_kernel
    if device_of(device) == "cuda":  # the same sums within 1e-12 (kernels.gpu.confidence)
        from ...kernels.gpu.confidence import confidence_kernel as kernel
    beta = float(special.ndtri(p)) if 0 < p < 1 else math.copysign(40.0, p - 0.5)
    # A shared-latent jury in a call big enough to pay for the table (TABLE_SIZE
    # quadratures) reads its endorsement from the table (within 1e-9 of the quadrature).
    if leans is not None:
        gx, gw, table = lean_table(int(n), float(icc), float(tie), leans,
                                   s_min=logit_range(lam, mu, kappa, kappa_c)[0])
    elif n > 1 and icc > 0 and n_instances >= 4 * TABLE_SIZE:
        gx, gw, table = _jury_table(int(n), float(icc), float(tie))
    else:
        (gx, gw), table = latent_nodes(icc), np.empty(0)
    k0, k1 = split_seed(seed)
    with kernel_threads(n_threads):
        acc, gap = kernel(int(n_instances), k0, k1, beta, float(rep_P.info), float(rho),
                          _rep_vector(rep_P), _rep_vector(rep_A), float(lam), float(mu),
                          float(kappa), float(kappa_c), int(n), float(icc), float(tie),
                          gx, gw, table)
    s = acc.sum(axis=0)  # blocks added in order
    g = gap.sum(axis=0)
    N = float(n_instances)
    out = {}
    for k, prot in enumerate(PROTOCOLS):
        nw, sw, sw2, nr, sr, sr2, sa, sa2 = s[k]

        def mean_se(cnt, s1, s2):
            if cnt < 2:
                return math.nan, math.nan
            m = s1 / cnt
            v = max(s2 / cnt - m * m, 0.0) * cnt / (cnt - 1)
            return m, math.sqrt(v / cnt)

        amp, amp_se = mean_se(nw, sw, sw2)
        fwc, fwc_se = mean_se(nr, sr, sr2)
        # Conditional on a rare event (a handful of wrong or right protagonists): a
        # count-based floor on the standard error (antiamp.rare).
        amp_se = float(rare_floor(amp, amp_se, nw))
        fwc_se = float(rare_floor(fwc, fwc_se, nr))
        acc_m, acc_se = mean_se(N, sa, sa2)
        out[prot] = {"amp": amp, "amp_se": amp_se, "fwc": fwc, "fwc_se": fwc_se,
                     "acc": acc_m, "acc_se": acc_se}
    nw = s[0, 0]
    d, d_se = ((g[0] / nw, math.sqrt(max(g[1] / nw - (g[0] / nw) ** 2, 0.0) / (nw - 1)))
               if nw > 1 else (math.nan, math.nan))
    out["amp_gap"], out["amp_gap_se"] = d, d_se
    return out
