"""Juries beyond independent judges: heterogeneous, correlated panels and their rules.

Seed 000 section 4 gives the jury of n independent, identical judges: majority
endorses with b_n.  Real panels of LLM judges share blind spots and differ in
bias.  Here judge j of a panel votes for the protagonist iff

    Phi^-1(q) + beta_j - sqrt(icc) Z - sqrt(1 - icc) E_j > 0        (kernels.panel)

where q is the configured single judge's endorsement probability for the
transcript class (tie-break or logit), Z a latent shared by the panel, E_j the
judge's own noise and beta_j ~ N(0, bias_sd^2) its own bias.  Rules: ``majority``
(``tie`` decides an even split), ``supermajority`` (at least ceil(quota n) votes
to endorse), ``unanimity`` (a unanimous panel decides; a split one endorses with
probability ``default``), ``confidence`` (the sum of the judges' latent margins,
a confidence-weighted vote).

The tables are exact by default (``method=quadrature``): given the shared latent
the votes are independent and the biases average out in closed form, leaving one
integral over the latent (:func:`panel_probability_quad`).  ``method=monte_carlo``
averages the compiled kernel over Monte Carlo panels instead (the kernel is also
the independent check of the quadrature in the tests).

The effective number of independent votes is the design-effect count
n_eff = n / (1 + (n - 1) r), with r the correlation between two judges' votes
(from the bivariate normal orthant probability); it is reported for the debate
tie class, where the panel decides.  The panel's tables replace the judge's in
the baseline model, so every metric of ``antiamp`` follows.
"""

from __future__ import annotations

import math

import numpy as np
from ...lazy import lazy
integrate = lazy("scipy.integrate")
special = lazy("scipy.special")
stats = lazy("scipy.stats")

from ...config import ConfigError, JudgeConfig, ProtocolConfig  # noqa: F401
from ...judge import single_judge_tables

#: Most simulated panels per cell (each holds its judges' biases in memory).


from .config import PanelConfig  # noqa: E402,F401  (re-exported)


def validate_panel(pc: PanelConfig) -> None:
    """Every range and choice of panel.* is declared (config.py)."""


def _rule_args(pc: PanelConfig):
    from antiamp.kernels import panel as kp

    n = pc.size
    if pc.rule == "majority":
        return kp.RULE_MAJORITY, n // 2 + 1
    if pc.rule == "supermajority":
        return kp.RULE_SUPER, int(math.ceil(pc.quota * n - 1e-12))
    if pc.rule == "unanimity":
        return kp.RULE_UNANIMITY, n
    return kp.RULE_CONFIDENCE, 0


def panel_probability_mc(q, pc: PanelConfig, seed: int, device: str = "cpu"):
    """Panel endorsement probability for each single-judge probability in ``q``,
    by the compiled kernel: (mean, Monte Carlo standard error, panels)."""
    mean, cov, m = panel_probability_cov(q, pc, seed, device)
    return mean, np.sqrt(np.diag(cov)), m


def panel_probability_cov(q, pc: PanelConfig, seed: int, device: str = "cpu"):
    """:func:`panel_probability_mc` with the covariance matrix of the estimates
    (the entries share their Monte Carlo panels): (mean, cov [M, M], panels).
    ``device``: ``run.device``; the GPU's sums agree with the CPU's within 1e-12
    relative (:mod:`kernels.gpu.panel`)."""
    from antiamp.kernels import panel as kp
    from antiamp.runner import device_of
    from antiamp.kernels.rng import split_seed

    q = np.asarray(q, float)
    with np.errstate(divide="ignore"):
        zq = special.ndtri(q)
    rule, need = _rule_args(pc)
    k0, k1 = split_seed(seed)
    random = pc.icc > 0 or pc.bias_sd > 0
    n_panels = pc.n_panels if random else 1
    kernel = kp.panel_endorsement
    if device_of(device) == "cuda":
        from antiamp.kernels.gpu import panel as kp_gpu

        kernel = kp_gpu.panel_endorsement
    from antiamp.runner import kernel_interrupts

    # Armed here too: the tables are computed while the config is validated (before
    # the run's own arming), where a Ctrl-C otherwise waited for the whole kernel.
    with kernel_interrupts():
        s1, s2, m = kernel(zq, pc.size, rule, need, pc.tie, pc.default, pc.icc, pc.bias_sd,
                           n_panels, k0, k1, np.uint64(kp.STREAM))
    mean = s1 / m
    if not random:  # one deterministic panel: no Monte Carlo error
        return mean, np.zeros((len(q), len(q))), m
    cov = (s2 / m - np.outer(mean, mean)) / (m - 1)
    var = np.maximum(np.diag(s2) / m - mean ** 2, 0.0) / (m - 1)
    cov[np.diag_indices_from(cov)] = var
    return mean, cov, m


def panel_probability_quad(q, pc: PanelConfig, with_error: bool = False):
    """Panel endorsement probability for each single-judge probability in ``q``, exactly.

    Given the shared latent Z = z the judges vote independently, judge j with
    probability Phi((t + beta_j - a z) / e) (t = Phi^-1(q), a = sqrt(icc),
    e = sqrt(1 - icc)).  Every rule's endorsement is multilinear in the judges'
    vote probabilities (a Poisson-binomial), and the biases are independent, so
    averaging over them replaces each probability by its mean Phi((t - a z) / s),
    s = sqrt(1 - icc + bias_sd^2): a homogeneous panel (the confidence rule's
    normal sum likewise).  The one integral left, over z, is done by adaptive
    quadrature (``scipy.integrate.quad_vec``, the entries of ``q`` together, split
    where each entry's judges are even), to about 1e-14.  ``with_error``: also return
    the error estimate, QUADPACK's (the largest over the entries) plus the latent's
    normal tail beyond +-12 left out (0 where nothing is integrated).
    """
    from ...judge import jury_majority

    q = np.asarray(q, float)
    n = pc.size
    with np.errstate(divide="ignore"):
        t = special.ndtri(q)
    a, s = math.sqrt(pc.icc), math.sqrt(1 - pc.icc + pc.bias_sd ** 2)
    _, need = _rule_args(pc)

    def rule(x):  # the panel's endorsement when each judge votes w.p. Phi(x)
        p = special.ndtr(x)
        if pc.rule == "majority":
            return jury_majority(p, n, pc.tie)
        if pc.rule == "supermajority":
            return special.betainc(need, n - need + 1, p)  # Pr(at least `need` votes)
        if pc.rule == "unanimity":
            return p ** n + pc.default * (1 - p ** n - (1 - p) ** n)
        return special.ndtr(math.sqrt(n) * x)  # the mean margin above 0

    out = np.where(t > 0, 1.0, 0.0)  # q = 1 or 0: every judge votes alike
    fin = np.isfinite(t)
    if s == 0:  # icc = 1, no biases: the panel votes as one judge
        out = np.where(fin, q, out)
        return (out, 0.0) if with_error else out
    if a == 0 or not fin.any():
        # no shared latent: a closed form; or every q is 0 or 1 (a tie-break judge with
        # b = 0 or 1): nothing to integrate
        if a == 0:
            out[fin] = rule(t[fin] / s)
        return (out, 0.0) if with_error else out
    tf = t[fin]
    points = sorted(set(np.clip(tf / a, -11.5, 11.5).tolist()))
    val, err = integrate.quad_vec(
        lambda z: rule((tf - a * z) / s) * math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi),
        -12.0, 12.0, epsabs=1e-14, epsrel=1e-12, norm="max", points=points)
    out[fin] = val
    if with_error:
        return out, float(err) + 2.0 * float(special.ndtr(-12.0))
    return out


def panel_table_error(judge: JudgeConfig, prot: ProtocolConfig, pc: PanelConfig) -> float:
    """Error estimate of the panel's tables with ``method=quadrature`` (NaN with the Monte
    Carlo method, whose error ``amp_panel_mc_error`` bounds): every metric under the
    dominant strategies is a mixture of table entries, off by at most this (a difference
    of two, ASD, by twice)."""
    if pc.method != "quadrature":
        return math.nan
    c1, d1 = single_judge_tables(judge, prot)
    return panel_probability_quad(np.concatenate([c1, d1.ravel()]), pc, with_error=True)[1]


def panel_probability_exact(q: float, pc: PanelConfig) -> float:
    """Independent path for homogeneous panels (bias_sd = 0): integrate over the shared
    latent with scipy's adaptive quadrature; votes given Z are binomial."""
    if pc.bias_sd != 0:
        raise ValueError("the quadrature path needs bias_sd = 0")
    n = pc.size
    t = special.ndtri(q) if 0 < q < 1 else (np.inf if q >= 1 else -np.inf)
    a, e = math.sqrt(pc.icc), math.sqrt(1 - pc.icc)

    def given(z):
        if np.isinf(t):
            p = 1.0 if t > 0 else 0.0
        elif e == 0:
            p = 1.0 if t - a * z > 0 else 0.0
        else:
            p = special.ndtr((t - a * z) / e)
        if pc.rule == "confidence":
            if np.isinf(t):
                return p
            if e == 0:
                return float(t - a * z > 0)
            return special.ndtr(n * (t - a * z) / (e * math.sqrt(n)))
        if pc.rule == "unanimity":
            return p ** n + pc.default * (1 - p ** n - (1 - p) ** n)
        need = n // 2 + 1 if pc.rule == "majority" else int(math.ceil(pc.quota * n - 1e-12))
        out = stats.binom.sf(need - 1, n, p)
        if pc.rule == "majority" and n % 2 == 0:
            out += pc.tie * stats.binom.pmf(n // 2, n, p)
        return out

    if pc.icc == 0 or np.isinf(t):
        return float(given(0.0))
    if e == 0:  # all judges vote alike: the panel follows one latent draw
        return float(given(-np.inf) * special.ndtr(t / a) + given(np.inf) * special.ndtr(-t / a))
    pts = [t / a] if np.isfinite(t) else None
    val, _ = integrate.quad(lambda z: given(z) * stats.norm.pdf(z), -12, 12, points=pts,
                            limit=200, epsabs=1e-13, epsrel=1e-11)
    return float(val)


def vote_correlation(q: float, icc: float, bias_sd: float = 0.0) -> float:
    """Correlation of two judges' votes at single-judge probability q.

    Judge j's vote is 1{M_j < Phi^-1(q)} with M_j = -beta_j + sqrt(icc) Z + sqrt(1 - icc) E_j,
    normal with variance 1 + bias_sd^2 and covariance icc between judges, so a vote is
    Bernoulli(q~) with q~ = Phi(t'), t' = Phi^-1(q) / sqrt(1 + bias_sd^2), and two votes
    are both 1 with the bivariate normal probability at correlation icc / (1 + bias_sd^2).
    """
    if not 0 < q < 1 or icc == 0:
        return 0.0
    v = 1.0 + bias_sd ** 2
    t = special.ndtri(q) / math.sqrt(v)
    r = icc / v
    qt = special.ndtr(t)
    if r >= 1:
        return 1.0
    both = stats.multivariate_normal(mean=[0, 0], cov=[[1, r], [r, 1]]).cdf([t, t])
    return float((both - qt * qt) / (qt * (1 - qt)))


def effective_votes(n: int, r: float) -> float:
    """Design-effect count of independent votes: n / (1 + (n - 1) r)."""
    return n / (1 + (n - 1) * r)


_TABLES: dict = {}
_MAX_TABLES = 65536


def panel_tables(judge: JudgeConfig, prot: ProtocolConfig, pc: PanelConfig, seed: int,
                 device: str = "cpu"):
    """:func:`_panel_tables`, remembered: validation (the dominance check) and the
    run read the same tables, computed once (on ``device``, ``run.device``)."""
    import dataclasses

    key = (dataclasses.astuple(judge), dataclasses.astuple(prot), dataclasses.astuple(pc),
           int(seed), device)
    if key not in _TABLES:
        if len(_TABLES) >= _MAX_TABLES:
            _TABLES.clear()
        _TABLES[key] = _panel_tables(judge, prot, pc, seed, device)
    return _TABLES[key]


def panel_strategies(c) -> tuple:
    """Tables and dominant presentation strategies of a panel cell; ConfigError
    when presenting is not dominant against the panel (checked at validation)."""
    from ...judge import dominant_presentation

    J_c, J_d, se_c, se_d, m_eff, cov = panel_tables(c.judge, c.protocol, c.panel, c.run.seed,
                                                    c.run.device)
    c_e = c.model.c_e
    try:
        xpc, _ = dominant_presentation("x_P_consult", np.array([J_c[1] - J_c[0]]), c_e, None)
        xp, _ = dominant_presentation("x_P", J_d[1, :] - J_d[0, :], c_e, None)
        xa, _ = dominant_presentation("x_A", J_d[:, 0] - J_d[:, 1], c_e, None)
    except ConfigError:
        raise ConfigError(
            f"model.c_e={c_e}: presenting evidence is not dominant against this panel; the "
            "panel model takes dominant strategies (lower model.c_e, or solve the evidence "
            "game with antiamp-solve)") from None
    return (J_c, J_d, se_c, se_d, m_eff, cov), (xpc, xp, xa)


def _panel_tables(judge: JudgeConfig, prot: ProtocolConfig, pc: PanelConfig, seed: int,
                  device: str = "cpu"):
    """(J_c [2], J_d [2, 2], se_c, se_d, panels, cov) of the panel built on the configured
    judge; ``cov`` [6, 6] is the Monte Carlo covariance of (J_c, J_d.ravel()) (zero,
    and no panels, with ``method=quadrature``)."""
    if judge.jury_size != 1:
        raise ConfigError("extension=panel builds the jury itself (panel.size); leave "
                          "judge.jury_size at 1")
    c1, d1 = single_judge_tables(judge, prot)
    q = np.concatenate([c1, d1.ravel()])
    if pc.method == "quadrature":  # exact: no Monte Carlo error, no panels drawn
        mean, cov, m = panel_probability_quad(q, pc), np.zeros((len(q), len(q))), 0
    else:
        mean, cov, m = panel_probability_cov(q, pc, seed, device)
    se = np.sqrt(np.diag(cov))
    return mean[:2], mean[2:].reshape(2, 2), se[:2], se[2:].reshape(2, 2), m, cov


# ------------------------------------------------------------------ a grid of cells
def _table_variance(w, J_c, J_d, wel, cov, names, h=1e-6) -> dict:
    """Variance that the panel tables' Monte Carlo error adds to each metric.

    The metrics are computed from the class weights and the six table entries,
    which are estimates with covariance ``cov`` (one Monte Carlo over panels,
    independent of the instances' random numbers: the variances add).  Delta
    method: the gradient in the entries by central differences (the metrics are
    linear in them, or ratios of linear forms), then g' cov g.  The judge's AUC
    (:data:`antiamp.metrics.RANKING`) depends on the entries only through their order:
    no variance from small errors in them (a difference across a tie would be a step,
    not a gradient).
    """
    from ...metrics import RANKING, evaluate

    if not np.any(cov):
        return {k: 0.0 for k in names}
    J = np.concatenate([J_c, np.ravel(J_d)])
    steps = np.concatenate([np.eye(6) * h, -np.eye(6) * h])
    T = J[None, :] + steps  # [12, 6]; entries stay probabilities to within h
    vals = evaluate(np.broadcast_to(w, (12,) + np.shape(w)), T[:, :2], T[:, 2:].reshape(12, 2, 2),
                    *wel)
    out = {}
    for k in names:
        if k in RANKING:
            out[k] = 0.0
            continue
        v = np.asarray(vals[k][0], float)
        g = (v[:6] - v[6:]) / (2 * h)  # [6, ...]
        g = np.where(np.isfinite(g), g, 0.0)
        out[k] = np.maximum(np.einsum("i...,ij,j...->...", g, cov, g), 0.0)
    return out


#: What a panel's tables and dominant strategies read: cells that agree on these share
#: them (a grid over the model's own rho, p, pi... solves its panel once).
STRATEGY_FIELDS = ("judge", "protocol", "panel", "model.c_e", "run.seed", "run.device")


def solve_cells(cells, payoffs: str, run, calls: list) -> dict:
    """Every metric of a block of panel cells (a :class:`~antiamp.sweeps.spec.CellBlock`
    or a list of configs): the panel's tables, strategies and vote statistics once per
    distinct combination of :data:`STRATEGY_FIELDS`, the class weights and metrics of
    all cells as arrays (each cell's row computed as on its own)."""
    from ...judge import jury_majority
    from ...layout import column, kernel_groups
    from ...metrics import (CONTRAST_METRICS, CORRECT, EA_DEBATE, EP_CONSULT, EP_DEBATE,
                            PROTOCOL_METRICS, class_probabilities, evaluate)
    from ...runner import baseline_thresholds, run_baseline_counts

    names = list(PROTOCOL_METRICS) + list(CONTRAST_METRICS)
    if not len(cells):
        res = {k: [] for k in names + [f"{k}_se" for k in names]}
        res.update({k: [] for k in ("amp_mc", "J_c", "J_d", "J_c_se", "J_d_se", "n_eff",
                                    "vote_corr", "b_single", "b_panel_tie", "b_independent",
                                    "quad_error")})
        return {k: np.asarray(v) for k, v in res.items()}
    reps, group = kernel_groups(cells, STRATEGY_FIELDS)
    per = []  # each combination's tables, errors, covariance, strategies, vote statistics
    for c in reps:
        (J_c, J_d, se_c, se_d, _, cov), x = panel_strategies(c)
        pc = c.panel
        q_tie = single_judge_tables(c.judge, c.protocol)[1][1, 1]
        r = vote_correlation(q_tie, pc.icc, pc.bias_sd)
        per.append((J_c, J_d, se_c, se_d, cov, x, q_tie, r, effective_votes(pc.size, r),
                    float(jury_majority(q_tie, pc.size, pc.tie)),
                    panel_table_error(c.judge, c.protocol, pc)))

    def each(k):  # item k of every cell's combination, [cells, ...]
        return np.asarray([q[k] for q in per])[group]

    J_c, J_d, se_c, se_d, cov = (each(k) for k in range(5))
    xpc, xp, xa = (np.asarray([q[5][k] for q in per])[group] for k in range(3))
    pi, p, rho, a = (column(cells, f"model.{k}") for k in ("pi", "p", "rho", "a"))
    fixed = column(cells, "model.stance") == "fixed"
    wels = [column(cells, f) for f in ("welfare.alpha", "welfare.beta", "welfare.delta_c",
                                       "model.c_e")]
    prob = class_probabilities(pi, p, rho, xpc, xp, xa, fixed, a)  # [cells, 32]
    if payoffs == "simulated":
        counts = []
        for i in range(len(prob)):
            calls.append(1)
            thr = baseline_thresholds(pi[i], p[i], rho[i], xpc[i], xp[i], xa[i])
            counts.append(run_baseline_counts(thr, bool(fixed[i]), a[i], run.n_instances,
                                              run.seed, n_threads=run.n_threads,
                                              progress=False, device=run.device))
        w = np.asarray(counts)
        vals = evaluate(w, J_c, J_d, *wels)
    else:
        w = prob
        vals = evaluate(w, J_c, J_d, *wels, n=run.n_instances)
    res: dict = {}
    if np.any(cov):  # Monte Carlo tables: the variance their errors add, cell by cell
        wel_rows = list(zip(*wels))
        tv = [_table_variance(w[i], J_c[i], J_d[i], wel_rows[i], cov[i], names)
              for i in range(len(w))]
    for k in names:
        res[k] = np.asarray(vals[k][0])
        se = np.asarray(vals[k][1])
        res[f"{k}_se"] = (np.sqrt(se ** 2 + 0.0) if not np.any(cov) else
                          np.asarray([np.sqrt(se[i] ** 2 + t[k]) for i, t in enumerate(tv)]))
    # Panel Monte Carlo error of Amp: a bound (|weights| times the entries' errors).
    wrong = np.where(CORRECT == 0, prob, 0.0)
    pw = wrong / np.maximum(wrong.sum(axis=-1), 1e-300)[:, None]
    res["amp_mc"] = np.stack([(pw * se_c[:, EP_CONSULT]).sum(axis=-1),
                              (pw * se_d[:, EP_DEBATE, EA_DEBATE]).sum(axis=-1)], axis=-1)
    res.update(J_c=J_c, J_d=J_d, J_c_se=se_c, J_d_se=se_d, b_panel_tie=J_d[:, 1, 1])
    for key, k in (("b_single", 6), ("vote_corr", 7), ("n_eff", 8), ("b_independent", 9),
                   ("quad_error", 10)):
        res[key] = np.asarray([float(q[k]) for q in per])[group]
    return res
