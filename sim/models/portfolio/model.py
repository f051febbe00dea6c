"""Evidence portfolios (seed 000, section 5), as a model: zero-sum LP equilibria."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from ...schema import CONSULT_DEBATE
from ...lazy import lazy
xr = lazy("xarray")

from ...config import ConfigError
from ...registry import Model, require_signal_stance, strategies_solved
from .config import SECTIONS
from ...layout import axis_coords
from ...plotting import both, judge_fields, line_figure, protocol_rows, wrap_prose
from . import core as pfm


def solve_cells(base, cells) -> xr.Dataset:
    shape, dims, axes = (len(cells),), ("cell",), ()  # a block: its cells along "cell"
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
    coords = {"protocol": ("protocol", ["consult", "debate"],
                           dict(CONSULT_DEBATE)),
              "k": ("k", np.arange(K)),
              "s": ("s", np.arange(K)), "v": ("v", np.arange(K)),
              "stance": ("stance", ["false", "true"])}
    ds = xr.Dataset(data, coords=axis_coords(axes, dims, coords))
    ds.attrs.update({
        "title": "antiamp: evidence portfolios, equilibria",
        "payoffs": eqc.payoffs, "method": "linear programme (HiGHS)", "tol": eqc.tol,
        "effort": "off",
        "kernel_calls": int(len(calls)), "solve_seconds": float(elapsed),
        "solver_report": _report(r, eqc.tol),
    })
    return ds


def _report(r, tol) -> str:
    notes = []
    if np.nanmax(r["epsilon"]) > tol:
        notes.append(f"largest certificate {np.nanmax(r['epsilon']):.3g} exceeds equilibrium.tol")
    edge = np.flatnonzero(r["knife_edge"])
    if len(edge):
        notes.append(f"cells {edge.tolist()[:20]}: the debate equilibrium does not continue when "
                     "the class frequencies move (a knife edge); their standard errors hold "
                     "the strategies fixed")
    return "\n".join(notes) if notes else "no issues"


#: The config paths :func:`validate` reads beyond the declared ranges: the stance, the judge's
#: kind, tau against the budget. A grid is validated column by column, and :func:`validate`
#: once per distinct combination of the axes these cover.
VALIDATE_READS = ("model.stance", "judge.kind", "portfolio.tau", "portfolio.budget",
                  "portfolio.rule")


def validate(cfg) -> None:
    """Checks of extension 'portfolio' beyond the shared ones (ConfigError names the field)."""
    from ...evidence_game import validate_equilibrium

    require_signal_stance(cfg, "portfolio")
    pfm.validate_portfolio(cfg.portfolio, cfg.judge)
    validate_equilibrium(cfg.equilibrium)


# ------------------------------------------------------------------ table and figures
def format_portfolio(ds: xr.Dataset) -> str:
    lines = [f"evidence portfolios ({ds.attrs['payoffs']} payoffs, "
             f"{ds.attrs['method']})",
             f"Pr(false-side item passes) = {float(ds.q_false):.4f} "
             f"(misleading-but-authentic share {float(ds.misleading_share):.3f}); "
             f"rho(B) = Pr(V >= tau | false, all submitted) = {float(ds.rho_B):.4f}", ""]
    lines += protocol_rows(ds, [("amp", "amp"), ("acc", "acc"), ("fwc", "fwc"),
                                ("items(T)", "items_true"), ("items(F)", "items_false"),
                                ("welfare", "welfare")], epsilon=True)
    K = int((~np.isnan(ds.sigma_A.values[:, 0])).sum())
    for name, sig in (("protagonist (debate)", ds.sigma_P.sel(protocol="debate")),
                      ("antagonist", ds.sigma_A)):
        lines.append("")
        lines.append(f"{name}: Pr(submit s | k passing items held), rows k = 0..{K - 1}")
        for k in range(K):
            row = sig.values[k, :k + 1]
            lines.append(f"  k={k}: " + " ".join(f"{x:.4f}" for x in row))
    return "\n".join(wrap_prose(lines))


def plot_portfolio(ds: xr.Dataset, path: Path) -> list:
    return line_figure(ds, path, [
        ("mistake amplification Amp (dashed: consultancy)", both("amp")),
        ("accuracy (dashed: consultancy)", both("acc")),
        ("rho(B): Pr(V >= tau | false stance)", [("rho_B", None, "-o")]),
        ("accepted items, debate (solid: true side, dotted: false)",
         [("items_true", "debate", "-o"),
          ("items_false", "debate", ":", "false side (debate)")]),
    ], "evidence portfolios at the equilibrium", _fields(ds))



def _fields(ds) -> list:
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    logit = ("lam", "mu") if cfg["portfolio"]["rule"] == "logit" else ("lam", "mu", "kappa")
    return judge_fields(cfg, logit) + [("portfolio", k) for k in (
        "budget", "q_true", "q_fab", "mislead", "cross_exam", "tau", "rule", "c_item")]



def cells_per_block(base) -> int:
    """A grid's default block (:attr:`antiamp.registry.Model.cells_per_block`): by what a
    cell costs.  With exact payoffs a cell is its two linear programmes, a few milliseconds
    at the default budget, whatever its instances: 512 cells a block (a block's own cost,
    its Dataset and the store's chunk files, is then small beside its cells'), fewer as
    the programmes grow with the budget (their variables with its square).  Simulated
    payoffs re-solve each mixed equilibrium at perturbed class frequencies for the delta
    method: 64."""
    if base.equilibrium.payoffs != "exact":
        return 64
    return int(max(8, min(512, 512 * 16 // (int(base.portfolio.budget) + 1) ** 2)))


MODEL = Model(
    name="portfolio",
    title="evidence portfolios: budgets of items, verification and cross-examination",
    run_cells=solve_cells,
    sections=SECTIONS,
    validate=validate, validate_reads=VALIDATE_READS, prepare=strategies_solved,
    kernel_fields=pfm.KERNEL_FIELDS + ("run.n_instances", "run.seed"),
    format_table=format_portfolio, figures=plot_portfolio, plot_vars=("amp", "acc", "rho_B"),
    gpu=True, cells_per_block=cells_per_block,
)
