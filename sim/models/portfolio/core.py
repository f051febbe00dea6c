"""Evidence portfolios (seed 000, section 5, "from binary e to evidence portfolios").

Each sender has a budget of B candidate items.  An item for a true stance passes
verification with probability ``q_true``.  For a false stance an item is a
fabrication that passes with probability ``q_fab``; failing that, with
probability ``mislead`` the sender finds a misleading-but-authentic item (a true
but irrelevant statement) that passes the authenticity check and is caught only
by a relevance check (cross-examination) with probability ``cross_exam``.  So a
false-side item passes with

    q_false = q_fab + (1 - q_fab) mislead (1 - cross_exam),

and the induced fabrication rate of the baseline is rho(B) = Pr(V >= tau | false)
= 1 - (1 - q_false)^B at tau = 1.  A sender knows how many passing items it holds
(k, its type) and submits s <= k of them at a cost ``c_item`` each; the judge sees
the accepted counts V_P = s_P, V_A = s_A and applies either the baseline rule to
e_i = 1{V_i >= tau} (``rule=threshold``) or a logit on the difference,
Pr(y = a) = sigma(lam (mu + kappa_v (V_P - V_A))) (``rule=logit``); juries
aggregate either by majority.

Equilibria.  The debate game is strategically zero-sum for any judge: P's payoff
J - c s_P and A's 1 - J - c s_A differ from the constant-sum pair
(J - c s_P + c s_A, 1 - J + c s_P - c s_A) by terms in the other player's own
action, which change no best response.  Its equilibria (mixed over counts) are
therefore the solutions of a linear program over each player's realisation
weights, solved by HiGHS (scipy.optimize.linprog); the two players' programmes
have the same value (the duality check) and every equilibrium gets a certificate
from a direct computation of each type's interim payoffs.  Zero-sum equilibria
are exchangeable, so the equilibrium set is the product of the two programmes'
optimal faces; where a face is not a point, the strategy reported is the one on
it that submits the most items (a second programme), the analogue of the
baseline's presenting free evidence.  With B = 1,
q_true = 1, q_fab = rho, tau = 1 the model is the baseline.
"""

from __future__ import annotations

import functools

import numpy as np
from ...lazy import lazy
optimize = lazy("scipy.optimize")
special = lazy("scipy.special")
stats = lazy("scipy.stats")

from ...config import ConfigError, JudgeConfig, ProtocolConfig
from ...judge import judge_tables, jury_majority
from ...layout import kernel_groups



from .config import PortfolioConfig  # noqa: E402,F401  (re-exported)
from ...games import zero_sum_lp  # noqa: E402


def validate_portfolio(pf: PortfolioConfig, judge: JudgeConfig) -> None:
    """What the declared ranges (config.py) cannot say."""
    if pf.tau > pf.budget:
        raise ConfigError(f"portfolio.tau must lie in [1, portfolio.budget={pf.budget}], "
                          f"got {pf.tau!r}")
    if pf.rule == "logit" and judge.kind != "logit":
        raise ConfigError("portfolio.rule=logit takes lam and mu from a logit judge; "
                          "set judge=logit (or portfolio.rule=threshold)")


def q_false(pf: PortfolioConfig) -> float:
    return pf.q_fab + (1 - pf.q_fab) * pf.mislead * (1 - pf.cross_exam)


def rho_of_budget(pf: PortfolioConfig) -> float:
    """Pr(V >= tau | false stance) when every passing item is submitted."""
    return float(stats.binom.sf(pf.tau - 1, pf.budget, q_false(pf)))


def judge_tables_counts(pf: PortfolioConfig, judge: JudgeConfig, prot: ProtocolConfig):
    """Endorsement tables on accepted counts: J_c[V_P] and J_d[V_P, V_A]."""
    v = np.arange(pf.budget + 1)
    if pf.rule == "threshold":
        Jc, Jd = judge_tables(judge, prot)
        e = (v >= pf.tau).astype(int)
        return Jc[e], Jd[e[:, None], e[None, :]]
    Jd = special.expit(judge.lam * (judge.mu + pf.kappa_v * (v[:, None] - v[None, :])))
    Jc = special.expit(judge.lam * (judge.mu + pf.kappa_v * v))
    n = judge.jury_size
    return jury_majority(Jc, n, judge.jury_tie), jury_majority(Jd, n, judge.jury_tie)


# ------------------------------------------------------------------ class distribution
def class_probabilities(p: float, pf: PortfolioConfig) -> np.ndarray:
    """Exact Pr(correct, k_P, k_A) as an array [2, B + 1, B + 1]."""
    B = pf.budget
    k = np.arange(B + 1)
    bt = stats.binom.pmf(k, B, pf.q_true)
    bf = stats.binom.pmf(k, B, q_false(pf))
    out = np.empty((2, B + 1, B + 1))
    out[1] = p * bt[:, None] * bf[None, :]  # P right: P's items true, A's false
    out[0] = (1 - p) * bf[:, None] * bt[None, :]
    return out


def class_counts(p: float, pf: PortfolioConfig, n: int, seed: int, n_threads: int = 0,
                 chunk_size: int = 1 << 24, device: str = "cpu") -> np.ndarray:
    """Simulated counts [2, B + 1, B + 1] from :mod:`kernels.portfolios` (one cell)."""
    return class_counts_cells([p], [pf], n, seed, n_threads, chunk_size, device)[0]


def class_counts_cells(ps, pfs: list, n: int, seed: int, n_threads: int = 0,
                       chunk_size: int = 1 << 24, device: str = "cpu") -> list:
    """:func:`class_counts` of many cells (model.p, portfolio section) in one pass of
    the random numbers per budget (:func:`kernels.portfolios.portfolio_class_counts_cells`):
    each cell's counts are those of a pass of its own, the Philox words drawn once
    (``device``: ``run.device``; the GPU gives the same counts)."""
    from antiamp.kernels import portfolios as kp
    from antiamp.kernels.rng import bernoulli_threshold, split_seed

    from ...runner import device_of, numba_threads

    k0, k1 = split_seed(seed)
    gpu = device_of(device) == "cuda"
    out: list = [None] * len(pfs)
    by_budget: dict = {}
    for i, pf in enumerate(pfs):
        by_budget.setdefault(pf.budget, []).append(i)
    with numba_threads(n_threads) as nt:
        for B, idx in by_budget.items():
            t_p = np.array([bernoulli_threshold(ps[i]) for i in idx], np.uint64)
            t_true = np.array([bernoulli_threshold(pfs[i].q_true) for i in idx], np.uint64)
            t_false = np.array([bernoulli_threshold(q_false(pfs[i])) for i in idx], np.uint64)
            tot = np.zeros((len(idx), 2 * (B + 1) ** 2), np.int64)
            done = 0
            if gpu:
                from antiamp.kernels.gpu import portfolios as kp_gpu

                tot = kp_gpu.portfolio_class_counts_cells(t_p, t_true, t_false, B, 0, n, k0, k1,
                                                          np.uint64(kp.STREAM))
                done = n
            while done < n:
                m = min(chunk_size, n - done)
                tot += kp.portfolio_class_counts_cells(t_p, t_true, t_false, B, done, m, k0, k1,
                                                       np.uint64(kp.STREAM), 4 * nt)
                done += m
            for r, i in enumerate(idx):
                out[i] = tot[r].reshape(2, B + 1, B + 1)
    return out


# ------------------------------------------------------------------ equilibria
def consult_strategy(Jc: np.ndarray, c: float, tol: float = 1e-12) -> np.ndarray:
    """sigma[k, s]: each type submits the count maximising J_c(s) - c s (the largest
    such count when several tie: free evidence is presented)."""
    B = len(Jc) - 1
    sig = np.zeros((B + 1, B + 1))
    u = Jc - c * np.arange(B + 1)
    for k in range(B + 1):
        best = u[:k + 1].max()
        s = int(np.flatnonzero(u[:k + 1] >= best - tol).max())
        sig[k, s] = 1.0
    return sig


def debate_equilibrium(W: np.ndarray, Jd: np.ndarray, c: float):
    """An equilibrium (sigma_P, sigma_A) of the debate portfolio game and its value.

    ``W[k_P, k_A]`` joint type weights (probabilities or counts).  P maximises
    E[J - c s_P + c s_A]; A minimises it (the same game up to terms in the other's
    own action).  Returns (sigma_P, sigma_A, value_P, value_A); the two values
    agree at an equilibrium (normalised by the total weight).
    """
    K = Jd.shape[0]
    s = np.arange(K)
    U = Jd - c * s[:, None] + c * s[None, :]
    tot = W.sum()
    sig_P, vP = zero_sum_lp(W / tot, U)
    # A's programme: A is the row player of the transposed game with payoff -U.
    sig_A, vA = zero_sum_lp((W / tot).T, -U.T)
    return sig_P, sig_A, vP, -vA


def interim_regret(W, sig_P, sig_A, Jd, c):
    """Largest interim deviation gain of any type (original payoffs), both players."""
    K = Jd.shape[0]
    s = np.arange(K)
    wr, wc = W.sum(1), W.sum(0)
    eps = 0.0
    for k in range(K):
        if wr[k] > 0:  # P of type k against A's mixture
            pA = (W[k][:, None] * sig_A).sum(0) / wr[k]  # Pr(s_A) given k_P
            u = Jd[:k + 1] @ pA - c * s[:k + 1]
            eps = max(eps, u.max() - sig_P[k, :k + 1] @ u)
        if wc[k] > 0:
            pP = (W[:, k][:, None] * sig_P).sum(0) / wc[k]
            u = (1 - Jd[:, :k + 1]).T @ pP - c * s[:k + 1]
            eps = max(eps, u.max() - sig_A[k, :k + 1] @ u)
    return float(eps)


def consult_regret(W, sig, Jc, c):
    K = len(Jc)
    wr = W.sum(1)
    u_all = Jc - c * np.arange(K)
    eps = 0.0
    for k in range(K):
        if wr[k] > 0:
            u = u_all[:k + 1]
            eps = max(eps, u.max() - sig[k, :k + 1] @ u)
    return float(eps)


# ------------------------------------------------------------------ outcomes
def outcomes(weights3, sig_c, sig_P, sig_A, Jc, Jd, welfare=(1.0, 1.0, 0.0), counts=False):
    """Metrics per protocol from class weights [2, K, K]: {name: (value[2], se[2])}."""
    return outcomes_from_terms(np.asarray(weights3, float).reshape(-1),
                               outcome_terms(sig_c, sig_P, sig_A, Jc, Jd), welfare, counts)


def outcome_terms(sig_c, sig_P, sig_A, Jc, Jd) -> tuple:
    """What a profile gives each class (correct, k_P, k_A), each [..., 2 K^2]: the
    endorsement in consultancy and in debate, and the items submitted (P in
    consultancy, P and A in debate).  Leading axes are cells of one budget (the matrix
    products batched, the debate's endorsement cell by cell: the same bits as one cell
    at a time)."""
    kP, kA, s = _class_index(Jc.shape[-1])
    cP, dP, dA = sig_c[..., kP, :], sig_P[..., kP, :], sig_A[..., kA, :]
    g_c = (cP * Jc[..., None, :]).sum(-1)
    if cP.ndim == 2:
        g_d = np.einsum("ns,nt,st->n", dP, dA, Jd)
    else:
        g_d = np.stack([np.einsum("ns,nt,st->n", a, b, j) for a, b, j in zip(dP, dA, Jd)])
    return g_c, g_d, cP @ s, dP @ s, dA @ s


@functools.lru_cache(maxsize=None)
def _class_index(K: int) -> tuple:
    """Each class's (correct, k_P, k_A) row: its k_P and k_A, and the counts 0..K-1
    (read-only; built once per budget, not once per cell)."""
    kP = np.tile(np.repeat(np.arange(K), K), 2)
    kA = np.tile(np.arange(K), 2 * K)
    s = np.arange(K)
    for a in (kP, kA, s):
        a.flags.writeable = False
    return kP, kA, s


def outcomes_from_terms(w, terms, welfare=(1.0, 1.0, 0.0), counts=False) -> dict:
    """:func:`outcomes` from class weights ``w`` [..., 2 K^2] and :func:`outcome_terms`
    (each [..., 2 K^2]); leading axes are cells of one budget, with ``welfare`` (alpha,
    beta, delta_c) scalars or a value per cell: {name: (value [..., 2], se [..., 2])}, a
    block's metrics at once (elementwise and over the class axis: the same bits as
    cell by cell)."""
    from ...metrics import weighted

    w = np.asarray(w, float)
    g_c, g_d, vP_c, vP_d, vA_d = (np.asarray(t, float) for t in terms)
    lead = w.shape[:-1]
    K = int(round(np.sqrt(w.shape[-1] / 2)))
    corr = np.repeat([0, 1], K * K)
    alpha, beta, delta_c = (np.asarray(x, float)[..., None] if np.ndim(x) else x
                            for x in welfare)
    right = corr == 1
    every = np.ones_like(right)
    n = None if counts else 1
    out = {}
    for p, (g, vp, va, cost) in enumerate(((g_c, vP_c, np.zeros_like(vP_c), 0.0),
                                          (g_d, vP_d, vA_d, delta_c))):
        accurate = np.where(right, g, 1 - g)
        vals = {"amp": (g, ~right), "acc": (accurate, every), "fwc": (g, right),
                "endorse": (g, every),
                "items_true": (np.where(right, vp, va), every),
                "items_false": (np.where(right, va, vp), every if p == 1 else ~right),
                "welfare": (-alpha * (1 - accurate) - beta * np.where(right, 0.0, g) - cost,
                            every)}
        for name, (val, mask) in vals.items():
            m, s = weighted(w, val, mask, n)
            out.setdefault(name, (np.full(lead + (2,), np.nan),
                                  np.full(lead + (2,), np.nan)))
            out[name][0][..., p], out[name][1][..., p] = m, s
    # Consultancy has no antagonist: its true-side items exist only when P is right.
    m, s = weighted(w, vP_c, right, n)
    out["items_true"][0][..., 0], out["items_true"][1][..., 0] = m, s
    return out


def accepted_pmf(weights3, sig_c, sig_P, sig_A):
    """Pr(V = v | the side's stance is true / false), consultancy and debate: [..., 2, 2,
    K]; leading axes are cells of one budget (batched matrix products: the same bits as
    cell by cell)."""
    w = np.asarray(weights3, float)
    K = w.shape[-2]
    out = np.zeros(w.shape[:-3] + (2, 2, K))  # protocol, stance (0 false, 1 true), v
    wP = w.sum(axis=-1)  # [..., corr, kP]
    wA = w.sum(axis=-2)  # [..., corr, kA]

    def vm(v, m):  # v [..., K] @ m [..., K, K]
        return (v[..., None, :] @ m)[..., 0, :]

    for p, sig in ((0, sig_c), (1, sig_P)):
        out[..., p, 1, :] += vm(wP[..., 1, :], sig)  # P right: its stance true
        out[..., p, 0, :] += vm(wP[..., 0, :], sig)
    out[..., 1, 1, :] += vm(wA[..., 0, :], sig_A)  # P wrong: A's stance true
    out[..., 1, 0, :] += vm(wA[..., 1, :], sig_A)
    return out / out.sum(axis=-1, keepdims=True)


# ------------------------------------------------------------------ a grid of cells
def _mixed(W, sig) -> bool:
    """Whether a type of positive weight mixes (W [k_own, k_other], sig [k, s])."""
    live = W.sum(axis=1) > 0
    return bool(np.any((sig[live] > 1e-9) & (sig[live] < 1 - 1e-9)))


def _equilibrium_se(W3, sig_c, sig_P, sig_A, Jc, Jd, c, wel, out, step=1e-5,
                    match=1e-3) -> bool:
    """Standard errors of the debate outcomes at a mixed equilibrium solved from the
    same simulated counts (the mixing probabilities carry the counts' sampling error).

    Delta method over the class frequencies (:func:`sim.metrics.delta_se`), the
    equilibrium re-solved at f +- h e_k.  Returns False, and leaves the standard
    errors that hold the equilibrium fixed, where the solution does not continue (a
    knife edge: the equilibrium's support changes within h).
    """
    from ...metrics import delta_se

    w = np.asarray(W3, float)
    n = w.sum()
    f = w / n
    grad = {k: np.zeros(w.size) for k in out}
    solved: dict = {}
    for idx in np.flatnonzero(f.ravel() > 0):
        corr, kP, kA = np.unravel_index(idx, w.shape)
        h = min(step, f.ravel()[idx] / 2)
        for sgn in (1, -1):
            g = f.copy()
            g[corr, kP, kA] += sgn * h
            key = (kP, kA, sgn, h)  # the game sees only the types' joint weights
            if key not in solved:
                sP, sA, _, _ = debate_equilibrium(g.sum(axis=0), Jd, c)
                if max(np.max(np.abs(sP - sig_P)), np.max(np.abs(sA - sig_A))) > match:
                    return False
                solved[key] = (sP, sA)
            sP, sA = solved[key]
            vals = outcomes(g, sig_c, sP, sA, Jc, Jd, wel)
            for k in out:
                grad[k][idx] += sgn * vals[k][0][1] / (2 * h)
    for k in out:
        if np.isfinite(out[k][1][1]):
            out[k][1][1] = delta_se(f.ravel(), grad[k], n)
    return True


#: What the class-count kernel reads of a cell (with the run's instances and seed):
#: cells that agree on these share one kernel pass.
KERNEL_FIELDS = ("model.p", "portfolio.budget", "portfolio.q_true", "portfolio.q_fab",
                 "portfolio.mislead")


def solve_cells(cells, payoffs: str, run, calls: list) -> dict:
    """Equilibria and outcomes of every cell; arrays padded to the largest budget."""
    C = len(cells)
    Kmax = max(c.portfolio.budget for c in cells) + 1
    names = ("amp", "acc", "fwc", "endorse", "items_true", "items_false", "welfare")
    res = {k: np.full((C, 2), np.nan) for k in names}
    res.update({f"{k}_se": np.full((C, 2), np.nan) for k in names})
    res["value"] = np.full((C, 2), np.nan)
    res["epsilon"] = np.full((C, 2), np.nan)
    res["duality_gap"] = np.full(C, np.nan)
    res["sigma_P"] = np.full((C, 2, Kmax, Kmax), np.nan)
    res["sigma_A"] = np.full((C, Kmax, Kmax), np.nan)
    res["pmf"] = np.full((C, 2, 2, Kmax), np.nan)
    res["rho_B"] = np.full(C, np.nan)
    res["q_false"] = np.full(C, np.nan)
    res["misleading_share"] = np.full(C, np.nan)
    res["knife_edge"] = np.zeros(C, bool)
    if payoffs == "simulated":
        # Cells that differ only in what the kernel does not read (the judge, welfare,
        # costs) share their counts, and every distinct kernel input is counted in one
        # pass of the random numbers per budget.
        reps, group = kernel_groups(cells, KERNEL_FIELDS)
        shared = class_counts_cells([c.model.p for c in reps], [c.portfolio for c in reps],
                                    run.n_instances, run.seed, run.n_threads,
                                    device=run.device)
        calls.extend([1] * len({c.portfolio.budget for c in reps}))
    # Each cell's equilibria (the solvers), then the block's outcomes at once per budget.
    W3s, terms, wel = [], [], np.empty((C, 3))
    pf_cols = np.empty((C, 6))  # budget, tau, q_fab, mislead, cross_exam, c_item
    for i, c in enumerate(cells):
        pf = c.portfolio
        K = pf.budget + 1
        if payoffs == "simulated":
            W3 = shared[group[i]]
        else:
            W3 = class_probabilities(c.model.p, pf)
        Jc, Jd = judge_tables_counts(pf, c.judge, c.protocol)
        W = W3.sum(axis=0).astype(float)
        sig_c = consult_strategy(Jc, pf.c_item)
        sig_P, sig_A, vP, vA = debate_equilibrium(W, Jd, pf.c_item)
        res["duality_gap"][i] = abs(vP - vA)
        tot = W.sum()
        u_c = Jc - pf.c_item * _class_index(K)[2]
        res["value"][i] = [float((W.sum(1) / tot) @ (sig_c @ u_c)), vP]
        Wn = W / tot
        res["epsilon"][i] = [consult_regret(Wn, sig_c, Jc, pf.c_item),
                             interim_regret(Wn, sig_P, sig_A, Jd, pf.c_item)]
        W3s.append(W3)
        terms.append((sig_c, sig_P, sig_A, Jc, Jd, W))
        wel[i] = (c.welfare.alpha, c.welfare.beta, c.welfare.delta_c)
        pf_cols[i] = (pf.budget, pf.tau, pf.q_fab, pf.mislead, pf.cross_exam, pf.c_item)
    budget = pf_cols[:, 0].astype(int)
    for B in np.unique(budget):  # the cells of each budget as arrays
        idx = np.flatnonzero(budget == B)
        K = int(B) + 1
        W3b = np.stack([np.asarray(W3s[i], float) for i in idx])
        sc, sP, sA, jc, jd = (np.stack([terms[i][q] for i in idx]) for q in range(5))
        res["sigma_P"][idx, 0, :K, :K] = sc
        res["sigma_P"][idx, 1, :K, :K] = sP
        res["sigma_A"][idx, :K, :K] = sA
        res["pmf"][idx, :, :, :K] = accepted_pmf(W3b, sc, sP, sA)
        out = outcomes_from_terms(W3b.reshape(len(idx), -1),
                                  list(outcome_terms(sc, sP, sA, jc, jd)),
                                  tuple(wel[idx].T), counts=payoffs == "simulated")
        for k in names:  # the block's values, then the mixed equilibria's own errors
            res[k][idx], res[f"{k}_se"][idx] = out[k][0], out[k][1]
        for r, i in enumerate(idx if payoffs == "simulated" else ()):
            sig_c, sig_P, sig_A, Jc, Jd, W = terms[i]
            if _mixed(W, sig_P) or _mixed(W.T, sig_A):
                one = {k: (out[k][0][r].copy(), out[k][1][r].copy()) for k in names}
                if not _equilibrium_se(W3s[i], sig_c, sig_P, sig_A, Jc, Jd, pf_cols[i, 5],
                                       tuple(wel[i].tolist()), one):
                    res["knife_edge"][i] = True
                for k in names:
                    res[k][i], res[f"{k}_se"][i] = one[k]
    # The induced fabrication rate and the share of misleading items, as columns.
    tau, q_fab, mislead, cross = pf_cols[:, 1], pf_cols[:, 2], pf_cols[:, 3], pf_cols[:, 4]
    qf = q_fab + (1 - q_fab) * mislead * (1 - cross)
    res["rho_B"] = np.asarray(stats.binom.sf(tau.astype(int) - 1, budget, qf), float)
    res["q_false"] = qf
    with np.errstate(invalid="ignore", divide="ignore"):
        res["misleading_share"] = np.where(qf > 0, (1 - q_fab) * mislead * (1 - cross) / qf,
                                           np.nan)
    res["Kmax"] = Kmax
    return res
