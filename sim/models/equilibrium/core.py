"""The equilibrium model's solve step: every equilibrium of a cell's (or a block of
cells') evidence-presentation game, with certificates, stability, beliefs and the
outcomes at each equilibrium, as one Dataset (the game itself, its enumeration and
certificates: :mod:`antiamp.evidence_game`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from ...config import Config, ConfigError, as_yaml, to_config, to_dataclass
from ...evidence_game import (KIND_MIXED, KIND_NAMES, KIND_PURE, Game, cell_arrays,
                            certificates, consult_codes, debate_codes, enumerate_consult,
                            enumerate_debate, exact_game, general_equilibria, kind_codes,
                            nan_to_zero, simulated_game, validate_equilibrium)
from ...lazy import lazy
from ...metrics import class_probabilities, evaluate
from ...schema import CONSULT_DEBATE
from ...config import EquilibriumConfig
from ..._version import __version__

xr = lazy("xarray")

#: The outcomes reported at each equilibrium, with their long names.
OUTCOMES = {"amp": "mistake amplification", "acc": "accuracy", "fwc": "follow-when-correct",
            "welfare": "principal welfare U_D"}


@dataclass
class SolveConfig(Config):
    equilibrium: EquilibriumConfig = field(default_factory=EquilibriumConfig)



def solve_config(cfg: Any) -> tuple:
    """(base Config, EquilibriumConfig, sweep spec or None) from any accepted form of
    :func:`solve`'s config."""
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


def grid_config(cfg: Any) -> dict:
    """``cfg`` (a dict or DictConfig) as a plain dict of a grid of this model."""
    if isinstance(cfg, DictConfig):
        cfg = OmegaConf.to_container(cfg, resolve=True)
    cfg = dict(cfg)
    cfg["model"] = {**(cfg.get("model") or {}), "name": "equilibrium"}
    return cfg


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
    base, eqc, spec = solve_config(cfg)
    if spec is not None:  # a grid: the engine's, as every model's (one block, in memory)
        from antiamp.sweeps.blocks import run_grid

        return run_grid(grid_config(cfg))
    return solve_cells(base, eqc, [base], (), (), [])


def solve_cells(base, eqc: EquilibriumConfig, cells: list, shape=None, dims=("cell",),
                axes=()) -> xr.Dataset:
    """Every equilibrium of each of ``cells`` (validated configs) as one Dataset.

    ``shape``/``dims``/``axes`` lay the cells out (default: one ``cell`` dimension);
    a cell's numbers depend only on its own config.
    """
    cells = cell_arrays(cells)
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
    kinds as codes (:func:`debate_codes`) from the enumeration, as names from the
    general engine."""
    tol = eqc.tol
    report = []
    if eqc.method == "enumerate":
        coefs = game.coefficients()
        dP, dA, dK, dN = debate_codes(game, coefs=coefs)
        cP, cK, cN = consult_codes(game, coefs=coefs)
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


def _outcomes(game, cells, cP, dP, dA, zeroed=None):
    """Outcomes at each equilibrium (exact, from the closed forms): {name: (values
    [C, E, protocol], ...)}.  One compiled pass over every cell; a block of cells
    holding a row the pass flags is computed again by the NumPy path (in blocks of
    ``OUTCOME_BLOCK`` cells, its memory bound).  ``zeroed``: the profiles with NaN as
    0 and the rows holding an equilibrium, ``(cP, dP, dA, rows)``, if already made."""
    from antiamp.kernels.outcomes import METRICS, equilibrium_outcomes

    c = cell_arrays(cells)
    C = len(c)
    if set(METRICS) == set(OUTCOMES):
        if zeroed is None:  # rows without equilibria: NaN either way
            zeroed = (nan_to_zero(cP), nan_to_zero(dP), nan_to_zero(dA),
                      ~(np.isnan(cP) & np.isnan(dP)))
        cP0, dP0, dA0, rows = zeroed
        vals, bad = equilibrium_outcomes(
            c.pi.astype(float), c.p.astype(float), game.rho.astype(float),
            c.fixed.astype(bool), c.a.astype(np.int64), cP0, dP0, dA0, game.J_c, game.J_d,
            c.alpha.astype(float), c.beta.astype(float), c.delta_c.astype(float), rows)
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
    from ...metrics import delta_se

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
        cK, dK = kind_codes(cK), kind_codes(dK)
    # Every variable [C, protocol, E] filled in place (consultancy, then debate),
    # padded with NaN / kind code -1 (named "").
    xP = np.full((C, 2, E), np.nan)
    xA = np.full((C, 2, E), np.nan)
    code = np.full((C, 2, E), -1, np.int8)
    xP[:, 0, :cP.shape[1]], xP[:, 1, :dP.shape[1]], xA[:, 1, :dA.shape[1]] = cP, dP, dA
    code[:, 0, :cK.shape[1]], code[:, 1, :dK.shape[1]] = cK, dK
    cP, dP, dA = xP[:, 0], xP[:, 1], xA[:, 1]
    missing = np.isnan(xP)
    kind = KIND_NAMES[code] if names is None else KIND_NAMES[code].astype(names)
    n_eq = np.stack([cN, dN], axis=1)
    # Consultancy's certificates, both protocols' stability, the beliefs and the
    # profiles as the outcome kernel reads them in one compiled pass (the same bits as
    # certificates(..., "consult"), stability(...) and nan_to_zero: tests/test_equilibrium).
    from ...kernels.evidence_game import profile_columns

    f = np.ascontiguousarray
    eps_c, stab, belief_P, belief_A, cP0, dP0, dA0, rows = profile_columns(
        *(f(a, dtype=float) for a in (game.J_c, game.c_e, game.tau_P, game.tau_A)),
        *(f(a, dtype=float) for a in game.coefficients()), xP, xA, code, float(eqc.tol))
    eps = np.empty((C, 2, E))
    eps[:, 0] = eps_c
    eps[:, 1] = certificates(game, dP, dA, "debate")
    eps[:, 1][missing[:, 1]] = np.nan
    vals = _outcomes(game, cells, cP, dP, dA, zeroed=(cP0, dP0, dA0, rows))
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
        from ...metrics import PROTOCOL_METRICS

        spec = PROTOCOL_METRICS["asd"]
        asd = np.moveaxis(vals["fwc"][0] - vals["amp"][0], -1, 1)
        data["asd"] = (dd, r(np.where(missing, np.nan, asd)), {
            "long_name": spec.long_name, "units": spec.units, "definition": spec.definition})
        data["asd_se"] = (dd, r(np.where(missing, np.nan, ses["asd"])), {
            "long_name": f"standard error of {spec.long_name} (through the simulated "
                         "equilibrium)", "units": spec.units})
    from ...layout import axis_coords

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
