"""Extensions I: correlated signals and endogenous judge effort, solved as equilibria.

``solve_extended(cfg)`` takes the ``antiamp`` config plus ``signals.*``
(:mod:`sim.signals`), ``effort.*`` (:mod:`sim.effort`), ``equilibrium.*`` and an
optional ``sweep.axes`` grid, and returns every equilibrium of every cell with
certificates and outcomes.  The class distribution of each cell is exact
(``equilibrium.payoffs=exact``) or counted by one call of the compiled kernel for
the whole grid on common random numbers (``simulated``); every sender payoff,
judge utility and metric is then a function of those weights (DESIGN.md:
payoffs come from the same kernel).

At the defaults (eta = 0, phi = 1, effort off) the model is the seed's baseline.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr
from omegaconf import DictConfig, OmegaConf

from . import __version__
from . import effort as ef
from . import messages as msm
from . import options as opm
from . import panel as pnm
from . import portfolios as pfm
from . import signals as sg
from .config import Config, ConfigError, as_yaml, validate
from .equilibrium import EquilibriumConfig
from .judge import judge_tables
from sweeps.spec import axis_coords


EXTENSIONS = ("signals", "portfolio", "panel", "messages", "options")


@dataclass
class ExtConfig(Config):
    SWEEPABLE = ("model", "judge", "protocol", "welfare", "signals", "effort", "portfolio",
                 "panel", "messages", "options")

    #: Which model: ``signals`` (correlated signals, with ``effort.*`` judge
    #: attention), ``portfolio`` (evidence portfolios), ``panel`` (juries of
    #: heterogeneous, correlated judges), ``messages`` (evidence plus rhetoric) or
    #: ``options`` (multi-option answers).
    extension: str = "signals"
    signals: sg.SignalsConfig = field(default_factory=sg.SignalsConfig)
    effort: ef.EffortConfig = field(default_factory=ef.EffortConfig)
    portfolio: pfm.PortfolioConfig = field(default_factory=pfm.PortfolioConfig)
    panel: pnm.PanelConfig = field(default_factory=pnm.PanelConfig)
    messages: msm.MessagesConfig = field(default_factory=msm.MessagesConfig)
    options: opm.OptionsConfig = field(default_factory=opm.OptionsConfig)
    equilibrium: EquilibriumConfig = field(default_factory=EquilibriumConfig)


def validate_ext(cfg: ExtConfig) -> None:
    """Every field's range, the base model's first (ConfigError names the field)."""
    validate(cfg)
    if cfg.extension not in EXTENSIONS:
        raise ConfigError(f"extension must be one of {', '.join(EXTENSIONS)}, "
                          f"got {cfg.extension!r}")
    ext = cfg.extension
    if ext != "panel" and cfg.model.stance != "signal":
        raise ConfigError(f"extension={ext} needs model.stance=signal (a = s_P, Pr(a = omega) = p)")
    if ext != "signals" and cfg.effort.enabled:
        raise ConfigError("effort.enabled applies to extension=signals only")
    if ext == "signals":
        sg.validate_signals(cfg.signals, cfg.model.p, cfg.model.rho, cfg.model.stance)
        if cfg.signals.kappa_r > 0:
            if cfg.judge.kind != "logit" or cfg.judge.jury_size != 1:
                raise ConfigError("signals.kappa_r (rhetoric) needs one logit judge: set "
                                  "judge=logit and judge.jury_size=1")
            if cfg.effort.enabled:
                raise ConfigError("signals.kappa_r (rhetoric) and effort.enabled cannot be "
                                  "combined")
    elif ext == "portfolio":
        pfm.validate_portfolio(cfg.portfolio, cfg.judge)
    elif ext == "messages":
        msm.validate_messages(cfg.messages, cfg.judge, cfg.model.c_e)
    elif ext == "options":
        opm.validate_options(cfg.options, cfg.judge, cfg.model.c_e)
    elif ext == "panel":
        pnm.validate_panel(cfg.panel)
        if cfg.judge.jury_size != 1:
            raise ConfigError("extension=panel builds the jury itself (panel.size); leave "
                              "judge.jury_size at 1")
    ef.validate_effort(cfg.effort, cfg.judge)
    from .equilibrium import validate_equilibrium

    validate_equilibrium(cfg.equilibrium)


def to_ext_config(cfg: Any = None):
    """(validated ExtConfig, SweepSpec or None) from a dict, DictConfig or ExtConfig."""
    from sweeps.spec import SweepSpec

    if isinstance(cfg, ExtConfig):
        validate_ext(cfg)
        return cfg, None
    if isinstance(cfg, DictConfig):
        cfg = OmegaConf.to_container(cfg, resolve=True)
    cfg = dict(cfg or {})
    cfg.pop("hydra", None)
    sweep = cfg.pop("sweep", None)
    cfg.pop("executor", None)
    cfg.setdefault("model", {})
    # Strategies are what is solved for; the base schema's dominance check is not needed.
    cfg["model"] = {**cfg["model"], "x_P": 1.0, "x_A": 1.0, "x_P_consult": 1.0}
    try:
        node = OmegaConf.merge(OmegaConf.structured(ExtConfig), cfg)
        base = OmegaConf.to_object(node)
    except Exception as exc:  # OmegaConf names the key
        key = getattr(exc, "full_key", None)
        msg = str(exc).splitlines()[0]
        raise ConfigError(f"{key}: {msg}" if key else msg) from None
    validate_ext(base)
    spec = None
    if sweep and isinstance(sweep, dict) and sweep.get("axes"):
        try:
            spec = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(SweepSpec), sweep))
        except Exception as exc:
            raise ConfigError(f"sweep: {str(exc).splitlines()[0]}") from None
    return base, spec


# ------------------------------------------------------------------ per-cell model data
def _signal_arrays(cells):
    pi = np.array([c.model.pi for c in cells])
    joint = np.array([sg.joint_table(c.signals, c.model.p) for c in cells])
    avail = np.array([sg.avail_table(c.signals, c.model.rho) for c in cells])
    return pi, joint, avail


def _weights(cells, payoffs: str, run, calls: list):
    pi, joint, avail = _signal_arrays(cells)
    if payoffs == "exact":
        return sg.class_probabilities(pi, joint, avail)
    calls.append(len(cells))
    return sg.class_counts(pi, joint, avail, run.n_instances, run.seed, run.n_threads,
                           progress=run.progress)


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


def _fixed_attention_equilibria(cells, W, eqc, report):
    """Equilibria without endogenous effort (attention fixed or absent)."""
    C = len(cells)
    Jc, Jd, v = np.zeros((C, 2)), np.zeros((C, 2, 2, 2)), np.zeros(C)
    t = np.full(C, np.nan)
    for i, c in enumerate(cells):
        if c.effort.enabled and c.effort.t_fixed is not None:
            t[i] = c.effort.t_fixed
            a, b, vv = ef.tables_at(c.effort, c.judge, c.protocol, [t[i]])
            Jc[i], Jd[i], v[i] = a[0], np.stack([b[0], b[0]]), vv[0]
        else:
            Jc[i], Jd[i] = _signal_tables(c)
    c_e = np.array([c.model.c_e for c in cells])
    G = sg.gains(W, Jc, Jd, v, c_e)
    # Indifference is detected well inside the certificate tolerance (as in sim.effort).
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
    out = []
    for i in range(C):
        per = []
        for protocol, lst in ((0, cons[i]), (1, deb[i])):
            prof = ef._profile_rows(lst, protocol)
            n = len(lst)
            eps = sg.certificate(np.broadcast_to(W[i], (n, 32)), prof,
                                 np.broadcast_to(Jc[i], (n, 2)),
                                 np.broadcast_to(Jd[i], (n, 2, 2, 2)),
                                 np.full(n, v[i]), np.full(n, c_e[i]))[:, protocol]
            per.append([Found(t[i], pr, 0.0, float(e)) for pr, e in zip(lst, eps)])
        out.append(per)
    return out, {}


def _effort_equilibria(cells, W, eqc, report, progress):
    from tqdm.auto import tqdm

    out, commits = [], {}
    for i, c in enumerate(tqdm(cells, desc="attention equilibria", disable=not progress,
                               leave=False)):
        cm = ef.CellModel(W[i], c.judge, c.protocol, c.effort, c.model.c_e, ())
        eqs, commit, rep = ef.solve_cell(cm, eqc.tol)
        report += [f"cell {i}: {r}" for r in rep]
        out.append([[Found(e.t, e.profile, e.eps_judge, e.eps_senders) for e in eqs
                     if e.protocol == p] for p in (0, 1)])
        commits[i] = commit
    return out, commits


def _equilibria(cells, W, eqc, report, progress=False):
    if cells[0].effort.enabled and cells[0].effort.t_fixed is None:
        return _effort_equilibria(cells, W, eqc, report, progress)
    return _fixed_attention_equilibria(cells, W, eqc, report)


def _tables_for(c, t):
    if c.effort.enabled and not np.isnan(t):
        a, b, v = ef.tables_at(c.effort, c.judge, c.protocol, [t])
        return a[0], np.stack([b[0], b[0]]), v[0]
    Jc, Jd = _signal_tables(c)
    return Jc, Jd, 0.0


def _metrics(cells, W, found, simulated: bool):
    """Outcomes at every equilibrium: rows flattened over (cell, protocol, equilibrium)."""
    rows = [(i, p, f) for i in range(len(cells)) for p in (0, 1) for f in found[i][p]]
    if not rows:
        return rows, {}
    Jc, Jd, v = zip(*[_tables_for(cells[i], f.t) for i, p, f in rows])
    prof = sg.Profile(np.ones((len(rows), 2)), np.ones((len(rows), 2)), np.ones((len(rows), 2, 2)))
    for r, (i, p, f) in enumerate(rows):
        if p == 0:
            prof.x_Pc[r] = f.profile
        else:
            prof.x_P[r], prof.x_A[r] = f.profile
    weights = np.array([W[i] for i, _, _ in rows])
    wel = tuple(np.array([getattr(cells[i].welfare, k) for i, _, _ in rows])
                for k in ("alpha", "beta", "delta_c"))
    vals = sg.outcomes(weights, prof, np.array(Jc), np.array(Jd), np.array(v), wel,
                       n=None if simulated else 1)
    pick = np.array([p for _, p, _ in rows])
    r_idx = np.arange(len(rows))
    out = {k: (m[r_idx, pick], s[r_idx, pick]) for k, (m, s) in vals.items()}
    cost = np.array([0.0 if np.isnan(f.t) else float(ef.cost(cells[i].effort, f.t, p))
                     for i, p, f in rows])
    out["judge_utility"] = (out["acc"][0] - cost, out["acc"][1])
    return rows, out


def solve_extended(cfg: Any = None, progress: bool | None = None) -> xr.Dataset:
    """Every equilibrium of the extended model (correlated signals, judge effort).

    Returns
    -------
    xarray.Dataset
        Dimensions (sweep axes..., ``protocol``, ``equilibrium``); equilibrium 0 is
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
    from sweeps.spec import CellGrid

    base, spec = to_ext_config(cfg)
    if spec is not None:
        grid = CellGrid(base, spec, validator=validate_ext)
        cells = [grid.cell(i) for i in range(grid.n_cells)]  # all validated before any work
        shape, dims, axes = grid.shape, grid.dims, grid.axes
    else:
        cells, shape, dims, axes = [base], (), (), []
    eqc = base.equilibrium
    if base.extension == "portfolio":
        return _solve_portfolios(base, cells, shape, dims, axes)
    if base.extension == "panel":
        return _solve_panels(base, cells, shape, dims, axes)
    if base.extension == "messages":
        return _solve_messages(base, cells, shape, dims, axes)
    if base.extension == "options":
        return _solve_options(base, cells, shape, dims, axes)
    simulated = eqc.payoffs == "simulated"
    import sys

    show = (progress if progress is not None else
            base.run.progress if base.run.progress is not None else sys.stderr.isatty())
    calls: list = []
    t0 = time.perf_counter()
    W = _weights(cells, eqc.payoffs, base.run, calls)
    report: list = []
    found, commits = _equilibria(cells, W, eqc, report, show)
    rows, vals = _metrics(cells, W, found, simulated)
    # Twins at eta = 0 (same accuracies, independent errors): the value of diversity.
    twins = [dataclasses.replace(c, signals=dataclasses.replace(c.signals, eta=0.0))
             if c.signals.joint is None and c.signals.eta != 0 else None for c in cells]
    have_twin = [t is not None for t in twins]
    amp0 = np.full((len(cells), 2), np.nan)
    if any(have_twin):
        tc = [t for t in twins if t is not None]
        W0 = _weights(tc, eqc.payoffs, base.run, calls)
        f0, _ = _equilibria(tc, W0, eqc, [], show)
        r0, v0 = _metrics(tc, W0, f0, simulated)
        best = _best_rows(r0, v0, len(tc))
        idx = np.flatnonzero(have_twin)
        for j, i in enumerate(idx):
            for p in (0, 1):
                if best[j][p] is not None:
                    amp0[i, p] = v0["amp"][0][best[j][p]]
    best = _best_rows(rows, vals, len(cells))
    for i, c in enumerate(cells):  # eta = 0 already: the cell is its own twin
        if c.signals.joint is None and c.signals.eta == 0:
            for p in (0, 1):
                if best[i][p] is not None:
                    amp0[i, p] = vals["amp"][0][best[i][p]]
    elapsed = time.perf_counter() - t0
    return _assemble(base, cells, shape, dims, axes, rows, vals, found, commits, W, amp0,
                     simulated, report, calls, elapsed)


def _best_rows(rows, vals, C):
    """Per cell and protocol, the row of the judge-preferred equilibrium."""
    best = [[None, None] for _ in range(C)]
    for r, (i, p, f) in enumerate(rows):
        b = best[i][p]
        if b is None or vals["judge_utility"][0][r] > vals["judge_utility"][0][b] + 1e-12:
            best[i][p] = r
    return best


def _assemble(base, cells, shape, dims, axes, rows, vals, found, commits, W, amp0, simulated,
              report, calls, elapsed):
    C = len(cells)
    E = max([1] + [len(found[i][p]) for i in range(C) for p in (0, 1)])
    lead = (C, 2, E)
    arr = {k: np.full(lead, np.nan) for k in vals}
    se = {k: np.full(lead, np.nan) for k in vals}
    t_star, eps, eps_j = (np.full(lead, np.nan) for _ in range(3))
    xP = np.full(lead + (2,), np.nan)
    xA = np.full(lead + (2, 2), np.nan)
    # Order equilibria within (cell, protocol) by judge utility, best first.
    order: dict = {}
    for r, (i, p, f) in enumerate(rows):
        order.setdefault((i, p), []).append(r)
    for (i, p), rs in order.items():
        rs.sort(key=lambda r: -vals["judge_utility"][0][r])
        for e, r in enumerate(rs):
            f = rows[r][2]
            for k in vals:
                arr[k][i, p, e] = vals[k][0][r]
                se[k][i, p, e] = vals[k][1][r]
            t_star[i, p, e] = f.t
            eps[i, p, e] = max(f.eps_judge, f.eps_senders)
            eps_j[i, p, e] = f.eps_judge
            if p == 0:
                xP[i, p, e] = f.profile
            else:
                xP[i, p, e], xA[i, p, e] = f.profile
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
    info = np.array([_signal_info(c) for c in cells])  # eta, lo, hi, p_P, p_A, shared
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
        for i, com in commits.items():
            for p, (t, pr, _u) in com.items():
                tc[i, p] = t
                rr, vv = _metrics([cells[i]], W[i:i + 1],
                                  [[[Found(t, pr, 0, 0)] if q == p else [] for q in (0, 1)]],
                                  False)
                ac[i, p], cc[i, p] = vv["amp"][0][0], vv["acc"][0][0]
        data["t_commit"] = (dc, r(tc), {"long_name": "attention the judge would commit to "
                                        "(leader, grid optimum)", "units": "1"})
        data["amp_commit"] = (dc, r(ac), {"long_name": "Amp under committed attention",
                                          "units": "1"})
        data["acc_commit"] = (dc, r(cc), {"long_name": "accuracy under committed attention",
                                          "units": "1"})
        data["t_gap"] = (tuple(dims), r(t_star[:, 1, 0] - t_star[:, 0, 0]), {
            "long_name": "attention in debate minus consultancy at equilibrium 0", "units": "1"})
    coords = {"protocol": ("protocol", ["consult", "debate"]),
              "equilibrium": ("equilibrium", np.arange(E)),
              "s_P": ("s_P", [0, 1]), "s_A": ("s_A", [0, 1])}
    ds = xr.Dataset(data, coords=axis_coords(axes, dims, coords))
    eqc = base.equilibrium
    ds.attrs.update({
        "title": "antiamp: correlated signals and judge effort, equilibria",
        "model": "seed 000 section 5: correlated signals, endogenous judge attention",
        "antiamp_version": __version__,
        "config": as_yaml(base),
        "seed": int(base.run.seed),
        "n_instances": int(base.run.n_instances) if eqc.payoffs == "simulated" else 0,
        "method": eqc.method, "payoffs": eqc.payoffs, "tol": eqc.tol,
        "effort": "on" if base.effort.enabled else "off",
        "kernel_calls": int(len(calls)),
        "kernel_cells": int(sum(calls)),
        "solve_seconds": float(elapsed),
        "solver_report": "\n".join(report) if report else "no issues",
        "axes": str([a.path for a in axes]),
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


def _solve_portfolios(base, cells, shape, dims, axes) -> xr.Dataset:
    eqc = base.equilibrium
    if eqc.method != "enumerate":
        raise ConfigError("extension=portfolio solves the (strategically zero-sum) debate game "
                          "by linear programming; leave equilibrium.method at enumerate")
    calls: list = []
    t0 = time.perf_counter()
    r = pfm.solve_cells(cells, eqc.payoffs, base.run, calls)
    elapsed = time.perf_counter() - t0
    K = r["Kmax"]
    sh = tuple(shape)
    ax = tuple(dims)

    def rs(a):
        return np.asarray(a).reshape(sh + np.asarray(a).shape[1:])

    labels = {"amp": ("mistake amplification", "Pr(y = a | a != omega)"),
              "acc": ("accuracy", "Pr(y = omega)"),
              "fwc": ("follow-when-correct", "Pr(y = a | a = omega)"),
              "endorse": ("endorsement rate", "Pr(y = a)"),
              "items_true": ("accepted items of the true side", "E[V | stance true]"),
              "items_false": ("accepted items of the false side", "E[V | stance false]"),
              "welfare": ("principal welfare U_D", "-alpha Pr(y != omega) - beta Pr(y = a, a != "
                          "omega) - C(protocol)")}
    data = {}
    for k, (ln, d) in labels.items():
        units = "utility" if k == "welfare" else ("items" if k.startswith("items") else "1")
        data[k] = (ax + ("protocol",), rs(r[k]), {"long_name": f"{ln} at the equilibrium",
                                                  "definition": d, "units": units})
        if eqc.payoffs == "simulated":
            data[f"{k}_se"] = (ax + ("protocol",), rs(r[f"{k}_se"]),
                               {"long_name": f"standard error of {ln}", "units": units})
    data["value"] = (ax + ("protocol",), rs(r["value"]), {
        "long_name": "protagonist's equilibrium value (debate: of the constant-sum game "
                     "E[J - c s_P + c s_A])", "units": "utility"})
    data["epsilon"] = (ax + ("protocol",), rs(r["epsilon"]), {
        "long_name": "certificate: largest interim gain of a unilateral deviation",
        "units": "utility"})
    data["duality_gap"] = (ax, rs(r["duality_gap"]), {
        "long_name": "|value of P's programme - value of A's programme|", "units": "utility"})
    data["sigma_P"] = (ax + ("protocol", "k", "s"), rs(r["sigma_P"]), {
        "long_name": "protagonist Pr(submit s items | k passing items held)", "units": "1"})
    data["sigma_A"] = (ax + ("k", "s"), rs(r["sigma_A"]), {
        "long_name": "antagonist Pr(submit s items | k passing items held)", "units": "1"})
    data["accepted_pmf"] = (ax + ("protocol", "stance", "v"), rs(r["pmf"]), {
        "long_name": "Pr(V = v | the side's stance is false / true) at the equilibrium",
        "units": "1"})
    data["rho_B"] = (ax, rs(r["rho_B"]), {
        "long_name": "induced fabrication rate rho(B) = Pr(V >= tau | false) submitting all",
        "units": "1"})
    data["q_false"] = (ax, rs(r["q_false"]), {
        "long_name": "Pr(a false-side item passes)", "units": "1"})
    data["misleading_share"] = (ax, rs(r["misleading_share"]), {
        "long_name": "share of passing false-side items that are misleading-but-authentic",
        "units": "1"})
    data["amp_gap"] = (ax, rs(r["amp"][:, 0] - r["amp"][:, 1]), {
        "long_name": "amplification gap Amp(consult) - Amp(debate)", "units": "1"})
    coords = {"protocol": ("protocol", ["consult", "debate"]), "k": ("k", np.arange(K)),
              "s": ("s", np.arange(K)), "v": ("v", np.arange(K)),
              "stance": ("stance", ["false", "true"])}
    ds = xr.Dataset(data, coords=axis_coords(axes, dims, coords))
    ds.attrs.update({
        "title": "antiamp: evidence portfolios, equilibria",
        "model": "seed 000 section 5: evidence portfolios",
        "extension": "portfolio",
        "antiamp_version": __version__, "config": as_yaml(base), "seed": int(base.run.seed),
        "payoffs": eqc.payoffs, "method": "linear programme (HiGHS)", "tol": eqc.tol,
        "effort": "off",
        "kernel_calls": int(len(calls)), "solve_seconds": float(elapsed),
        "solver_report": "no issues" if np.nanmax(r["epsilon"]) <= eqc.tol else
        f"largest certificate {np.nanmax(r['epsilon']):.3g} exceeds equilibrium.tol",
        "axes": str([a.path for a in axes]),
    })
    return ds


def _solve_panels(base, cells, shape, dims, axes) -> xr.Dataset:
    from .metrics import CONTRAST_METRICS, PROTOCOL_METRICS

    eqc = base.equilibrium
    calls: list = []
    t0 = time.perf_counter()
    r = pnm.solve_cells(cells, eqc.payoffs, base.run, calls)
    elapsed = time.perf_counter() - t0
    sh, ax = tuple(shape), tuple(dims)

    def rs(a):
        return np.asarray(a).reshape(sh + np.asarray(a).shape[1:])

    data = {}
    for k, spec in list(PROTOCOL_METRICS.items()) + list(CONTRAST_METRICS.items()):
        d = ax + (("protocol",) if k in PROTOCOL_METRICS else ())
        data[k] = (d, rs(r[k]), {"long_name": spec.long_name, "units": spec.units,
                                 "definition": spec.definition})
        data[f"{k}_se"] = (d, rs(r[f"{k}_se"]), {
            "long_name": f"standard error of {spec.long_name}" + (
                "" if eqc.payoffs == "simulated" else " expected at run.n_instances"),
            "units": spec.units})
    data["amp_panel_mc_se"] = (ax + ("protocol",), rs(r["amp_mc"]), {
        "long_name": "bound on the error of Amp from the panel Monte Carlo", "units": "1"})
    data["panel_table"] = (ax + ("e_P", "e_A"), rs(r["J_d"]), {
        "long_name": "panel's debate endorsement probability Pr(y = a | e_P, e_A)", "units": "1"})
    data["panel_table_consult"] = (ax + ("e_P",), rs(r["J_c"]), {
        "long_name": "panel's consultancy endorsement probability", "units": "1"})
    data["panel_table_se"] = (ax + ("e_P", "e_A"), rs(r["J_d_se"]), {
        "long_name": "Monte Carlo standard error of panel_table", "units": "1"})
    data["vote_corr"] = (ax, rs(r["vote_corr"]), {
        "long_name": "correlation of two judges' votes on the debate tie",
        "units": "1"})
    data["n_eff"] = (ax, rs(r["n_eff"]), {
        "long_name": "effective number of independent votes n / (1 + (n - 1) r)",
        "units": "judges"})
    data["b_single"] = (ax, rs(r["b_single"]), {
        "long_name": "one judge's endorsement of a debate tie", "units": "1"})
    data["b_panel"] = (ax, rs(r["b_panel_tie"]), {
        "long_name": "the panel's endorsement of a debate tie", "units": "1"})
    data["b_independent"] = (ax, rs(r["b_independent"]), {
        "long_name": "b_n: the same rule by majority of independent identical judges",
        "units": "1"})
    coords = axis_coords(axes, dims, {"protocol": ("protocol", ["consult", "debate"]),
                                  "e_P": ("e_P", [0, 1]), "e_A": ("e_A", [0, 1])})
    ds = xr.Dataset(data, coords=coords)
    ds.attrs.update({
        "title": "antiamp: juries of heterogeneous, correlated judges",
        "model": "seed 000 section 4 juries, extended",
        "extension": "panel", "antiamp_version": __version__, "config": as_yaml(base),
        "seed": int(base.run.seed), "payoffs": eqc.payoffs, "method": "dominant strategies",
        "effort": "off", "kernel_calls": int(len(calls)), "solve_seconds": float(elapsed),
        "solver_report": "no issues", "axes": str([a.path for a in axes]),
    })
    return ds


def _solve_messages(base, cells, shape, dims, axes) -> xr.Dataset:
    eqc = base.equilibrium
    calls: list = []
    t0 = time.perf_counter()
    C = len(cells)
    names = ("amp", "acc", "fwc", "endorse", "welfare")
    val = {k: np.full((C, 2), np.nan) for k in names}
    se = {k: np.full((C, 2), np.nan) for k in names}
    rhet = np.full((C, 2), np.nan)
    eps = np.full((C, 2), np.nan)
    strategic = base.messages.mode == "strategic"
    L = max(c.messages.r_levels for c in cells) if strategic else 0
    sigP = np.full((C, 2, 2, 2 * L), np.nan) if strategic else None
    sigA = np.full((C, 2, 2 * L), np.nan) if strategic else None
    used = 0
    for i, c in enumerate(cells):
        mc, m, j = c.messages, c.model, c.judge
        wel = (c.welfare.alpha, c.welfare.beta, c.welfare.delta_c)
        if not strategic:
            if eqc.payoffs == "simulated":
                calls.append(1)
                cnt, sums, used = msm.exogenous_simulated(m.p, m.rho, j.lam, j.mu, mc,
                                                          base.run.n_instances, base.run.seed,
                                                          base.run.n_threads)
                out = msm.exogenous_outcomes(cnt.astype(float), sums[0], sums[1], sums[2],
                                             sums[3], wel)
            else:
                w, gd, gc = msm.exogenous_exact(m.p, m.rho, j.lam, j.mu, mc)
                out = msm.exogenous_outcomes(w, w * gd, w * gd ** 2, w * gc, w * gc ** 2, wel)
                for k in out:
                    out[k][1][:] = np.nan
            eps[i] = 0.0
        else:
            sc, sp, sa, _, ep, (Jc, Jd, e, rr) = msm.strategic_equilibrium(
                m.p, m.rho, j.lam, j.mu, m.c_e, mc)
            out = msm.strategic_outcomes(m.p, m.rho, sc, sp, sa, Jc, Jd, e, rr, wel)
            rhet[i] = out["rhetoric_P"][0]
            eps[i] = ep
            A = sc.shape[1]
            sigP[i, 0, :, :A], sigP[i, 1, :, :A], sigA[i, :, :A] = sc, sp, sa
        for k in names:
            val[k][i], se[k][i] = out[k]
    elapsed = time.perf_counter() - t0
    sh, ax = tuple(shape), tuple(dims)

    def rs(a):
        return np.asarray(a).reshape(sh + np.asarray(a).shape[1:])

    labels = {"amp": "mistake amplification", "acc": "accuracy", "fwc": "follow-when-correct",
              "endorse": "endorsement rate", "welfare": "principal welfare U_D"}
    data = {}
    for k, ln in labels.items():
        u = "utility" if k == "welfare" else "1"
        data[k] = (ax + ("protocol",), rs(val[k]), {"long_name": ln, "units": u})
        if eqc.payoffs == "simulated" and not strategic:
            data[f"{k}_se"] = (ax + ("protocol",), rs(se[k]),
                               {"long_name": f"standard error of {ln}", "units": u})
    data["amp_gap"] = (ax, rs(val["amp"][:, 0] - val["amp"][:, 1]), {
        "long_name": "amplification gap Amp(consult) - Amp(debate)", "units": "1"})
    data["epsilon"] = (ax + ("protocol",), rs(eps), {
        "long_name": "certificate: largest interim gain of a unilateral deviation",
        "units": "utility"})
    coords = {"protocol": ("protocol", ["consult", "debate"])}
    if strategic:
        data["rhetoric_P"] = (ax + ("protocol",), rs(rhet), {
            "long_name": "protagonist's mean rhetoric at the equilibrium", "units": "1"})
        data["sigma_P"] = (ax + ("protocol", "t", "action"), rs(sigP), {
            "long_name": "protagonist Pr(action | t_P); action = present * levels + level",
            "units": "1"})
        data["sigma_A"] = (ax + ("t", "action"), rs(sigA), {
            "long_name": "antagonist Pr(action | t_A)", "units": "1"})
        coords["t"] = ("t", [0, 1])
        coords["action"] = ("action", np.arange(2 * L))
    ds = xr.Dataset(data, coords=axis_coords(axes, dims, coords))
    ds.attrs.update({
        "title": "antiamp: verifiable evidence and rhetoric",
        "model": "seed 000 section 5: richer message spaces", "extension": "messages",
        "mode": base.messages.mode, "antiamp_version": __version__, "config": as_yaml(base),
        "seed": int(base.run.seed), "payoffs": eqc.payoffs,
        "method": "linear programme (HiGHS)" if strategic else (
            "Gauss-Hermite quadrature" if eqc.payoffs == "exact" else "Monte Carlo kernel"),
        "n_instances": int(used), "effort": "off", "kernel_calls": int(len(calls)),
        "solve_seconds": float(elapsed), "solver_report": "no issues",
        "axes": str([a.path for a in axes]),
    })
    return ds


def _solve_options(base, cells, shape, dims, axes) -> xr.Dataset:
    eqc = base.equilibrium
    calls: list = []
    t0 = time.perf_counter()
    C = len(cells)
    val = {k: np.full((C, 2), np.nan) for k in opm.METRICS}
    se = {k: np.full((C, 2), np.nan) for k in opm.METRICS}
    used = 0
    for i, c in enumerate(cells):
        m, j, oc = c.model, c.judge, c.options
        if eqc.payoffs == "simulated":
            calls.append(1)
            out, used = opm.simulate(m.p, m.rho, j.lam, j.mu, j.kappa, oc, base.run.n_instances,
                                     base.run.seed, base.run.n_threads)
            res = opm.metrics_from_rows(out[..., 0], out[..., 1])
        else:
            res = opm.metrics_from_rows(opm.exact(m.p, m.rho, j.lam, j.mu, j.kappa, oc)["rows"])
        if oc.antagonist == "attack":  # no alternative is defended
            res["wrong_alternative"][0][:] = np.nan
            res["wrong_alternative"][1][:] = np.nan
        for k in opm.METRICS:
            val[k][i], se[k][i] = res[k]
    elapsed = time.perf_counter() - t0
    sh, ax = tuple(shape), tuple(dims)

    def rs(a):
        return np.asarray(a).reshape(sh + np.asarray(a).shape[1:])

    data = {}
    for k, (ln, d) in opm.METRICS.items():
        data[k] = (ax + ("protocol",), rs(val[k]), {"long_name": ln, "definition": d,
                                                    "units": "1"})
        if eqc.payoffs == "simulated":
            data[f"{k}_se"] = (ax + ("protocol",), rs(se[k]),
                               {"long_name": f"standard error of {ln}", "units": "1"})
    data["amp_gap"] = (ax, rs(val["amp"][:, 0] - val["amp"][:, 1]), {
        "long_name": "amplification gap Amp(consult) - Amp(debate)", "units": "1"})
    ds = xr.Dataset(data, coords=axis_coords(axes, dims, {"protocol": ("protocol",
                                                                   ["consult", "debate"])}))
    ds.attrs.update({
        "title": "antiamp: multi-option answers", "model": "seed 000 section 5: K options",
        "extension": "options", "antiamp_version": __version__, "config": as_yaml(base),
        "seed": int(base.run.seed), "payoffs": eqc.payoffs,
        "method": "exact enumeration" if eqc.payoffs == "exact" else "Monte Carlo kernel",
        "n_instances": int(used), "effort": "off", "kernel_calls": int(len(calls)),
        "solve_seconds": float(elapsed), "solver_report": "no issues",
        "axes": str([a.path for a in axes]),
    })
    return ds
