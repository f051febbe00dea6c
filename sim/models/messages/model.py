"""Verifiable evidence plus rhetoric (seed 000, section 5), as a model."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from ...schema import CONSULT_DEBATE
from ...lazy import lazy
xr = lazy("xarray")

from ...registry import Model, blocks_by_instances, require_signal_stance, strategies_solved
from .config import SECTIONS
from ...layout import axis_coords, column, kernel_groups
from ...plotting import both, judge_fields, line_figure, protocol_rows
from . import core as msm


#: What the messages kernel reads of a cell (with the run's instances and seed): cells
#: that agree on these share one kernel pass.
KERNEL_FIELDS = ("model.p", "model.rho", "judge.lam", "judge.mu", "messages.*")

def solve_cells(base, cells) -> xr.Dataset:
    shape, dims, axes = (len(cells),), ("cell",), ()  # a block: its cells along "cell"
    eqc = base.equilibrium
    calls: list = []
    t0 = time.perf_counter()
    C = len(cells)
    names = ("amp", "acc", "fwc", "endorse", "welfare")
    val = {k: np.full((C, 2), np.nan) for k in names}
    se = {k: np.full((C, 2), np.nan) for k in names}
    rhet = np.full((C, 2), np.nan)
    eps = np.full((C, 2), np.nan)
    qerr = np.full(C, np.nan)
    strategic = base.messages.mode == "strategic"
    L = max(c.messages.r_levels for c in cells) if strategic else 0
    sigP = np.full((C, 2, 2, 2 * L), np.nan) if strategic else None
    sigA = np.full((C, 2, 2 * L), np.nan) if strategic else None
    used = 0
    simulated = not strategic and eqc.payoffs == "simulated"
    if simulated:
        # Cells that differ only in c_e or welfare share their sums, and every distinct
        # kernel input is judged in one pass of the random numbers.
        reps, group = kernel_groups(cells, KERNEL_FIELDS)
        shared = msm.exogenous_simulated_cells(
            [(c.model.p, c.model.rho, c.judge.lam, c.judge.mu, c.messages) for c in reps],
            base.run.n_instances, base.run.seed, base.run.n_threads, base.run.device)
        calls.append(1)
    if not strategic:
        # Cells that agree on what the quadratures (or the kernel) read share one
        # result; the outcomes of the block's cells are computed at once from them.
        wel = tuple(column(cells, f"welfare.{k}") for k in ("alpha", "beta", "delta_c"))
        if eqc.payoffs == "simulated":
            cnt = np.stack([x[0] for x in shared])[group].astype(float)
            sums = np.stack([x[1] for x in shared])[group]  # [cell, 4, class]
            used = shared[0][2] if shared else 0
            out = msm.exogenous_outcomes(cnt, sums[:, 0], sums[:, 1], sums[:, 2], sums[:, 3],
                                         wel)
        else:
            reps, group = kernel_groups(cells, KERNEL_FIELDS)
            wq, gdq, gcq = [], [], []
            qrep = np.empty(len(reps))
            for r, c in enumerate(reps):
                errs: list = []
                w, gd, gc = msm.exogenous_exact(c.model.p, c.model.rho, c.judge.lam,
                                                c.judge.mu, c.messages, errs)
                wq.append(w)
                gdq.append(gd)
                gcq.append(gc)
                qrep[r] = max(errs)
            w, gd, gc = (np.stack(x)[group] for x in (wq, gdq, gcq))
            qerr = qrep[group]
            out = msm.exogenous_outcomes(w, w * gd, w * gd ** 2, w * gc, w * gc ** 2, wel)
            for k in out:
                out[k][1][:] = np.nan
        eps[:] = 0.0
        for k in names:
            val[k], se[k] = out[k]
    for i, c in enumerate(cells if strategic else ()):
        mc, m, j = c.messages, c.model, c.judge
        wel = (c.welfare.alpha, c.welfare.beta, c.welfare.delta_c)
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
    if eqc.payoffs == "exact" and not strategic:
        data["quad_error"] = (ax, rs(qerr), {
            "long_name": "largest error bound of the cell's quadratures (QUADPACK)",
            "units": "1"})
    coords = {"protocol": ("protocol", ["consult", "debate"],
                           dict(CONSULT_DEBATE))}
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
        "mode": base.messages.mode, "payoffs": eqc.payoffs,
        "decision": base.messages.decision,
        "method": "linear programme (HiGHS)" if strategic else (
            "adaptive quadrature (QUADPACK)" if eqc.payoffs == "exact" else "Monte Carlo kernel"),
        "n_instances": int(used), "kernel_calls": int(len(calls)),
        "solve_seconds": float(elapsed), "solver_report": "no issues",
    })
    return ds


#: The config paths :func:`validate` reads beyond the declared ranges: the stance, c_e, the
#: judge, and the decision rule against the mode. A grid is validated column by column, and
#: :func:`validate` once per distinct combination of the axes these cover.
VALIDATE_READS = ("model.stance", "model.c_e", "judge.kind", "judge.jury_size", "messages.mode",
                  "messages.decision", "messages.decision_band", "messages.decision_tie")


def validate(cfg) -> None:
    """Checks of extension 'messages' beyond the shared ones (ConfigError names the field)."""
    from ...evidence_game import validate_equilibrium

    require_signal_stance(cfg, "messages")
    msm.validate_messages(cfg.messages, cfg.judge, cfg.model.c_e)
    validate_equilibrium(cfg.equilibrium)


# ------------------------------------------------------------------ table and figures
def format_messages(ds: xr.Dataset) -> str:
    strategic = ds.attrs["mode"] == "strategic"
    lines = [f"verifiable evidence and rhetoric ({ds.attrs['mode']} rhetoric, "
             f"{ds.attrs['method']}"
             + (", the judge labels the answer its probability favours"
                if ds.attrs.get("decision") == "favoured" else "") + ")", ""]
    cols = [(v, v) for v in ("amp", "acc", "fwc", "endorse", "welfare")]
    cols += [("rhetoric", "rhetoric_P")] if strategic else []
    lines += protocol_rows(ds, cols, epsilon=strategic, se=True)
    return "\n".join(lines)


def plot_messages(ds: xr.Dataset, path: Path) -> list:
    panels = [("mistake amplification Amp (dashed: consultancy)", both("amp")),
              ("accuracy (dashed: consultancy)", both("acc")),
              ("Amp(consult) - Amp(debate)", [("amp_gap", None, "-o")])]
    if ds.attrs["mode"] == "strategic":
        panels.append(("protagonist rhetoric (dashed: consultancy)", both("rhetoric_P")))
    return line_figure(ds, path, panels, "evidence and rhetoric", _fields(ds))



def _fields(ds) -> list:
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    keys = (("mode", "kappa_v", "kappa_r", "r_mean_true", "r_mean_false", "r_sd")
            if cfg["messages"]["mode"] == "exogenous" else
            ("mode", "kappa_v", "kappa_r", "r_max", "r_levels", "c_r"))
    return judge_fields(cfg, ("lam", "mu")) + [("messages", k) for k in keys]



#: Simulated payoffs' default block: 64 cells at 10^5 instances a cell or more, more as a
#: cell's instances fall (:func:`~antiamp.registry.blocks_by_instances`).
_simulated_blocks = blocks_by_instances(64, 100_000)


def cells_per_block(base) -> int:
    """A grid's default block (:attr:`antiamp.registry.Model.cells_per_block`): by what a
    cell costs.  Exact exogenous payoffs are a cell's quadratures alone (a few milliseconds
    whatever its instances): 1,024 cells a block, whose own cost (its Dataset, the store's
    chunk files) is then small beside its cells'.  Strategic rhetoric solves a linear
    programme a cell: 64.  Simulated payoffs: by the instances a cell."""
    if base.messages.mode == "strategic":
        return 64
    if base.equilibrium.payoffs == "exact":
        return 1024
    return _simulated_blocks(base)


MODEL = Model(
    name="messages",
    title="verifiable evidence plus rhetoric (exogenous or strategic)",
    run_cells=solve_cells,
    sections=SECTIONS,
    validate=validate, validate_reads=VALIDATE_READS, prepare=strategies_solved,
    kernel_fields=KERNEL_FIELDS + ("run.n_instances", "run.seed"),
    format_table=format_messages, figures=plot_messages, plot_vars=("amp", "acc", "amp_gap"),
    gpu=True,  # the exogenous simulated path (kernels.gpu.messages)
    cells_per_block=cells_per_block,
)
