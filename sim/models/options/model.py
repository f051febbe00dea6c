"""Multi-option answers (seed 000, section 5), as a model."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from ...schema import CONSULT_DEBATE
from ...lazy import lazy
xr = lazy("xarray")

from ...registry import Model, blocks_by_cost, require_signal_stance, strategies_solved
from .config import SECTIONS
from ...layout import axis_coords, column, kernel_groups
from ...plotting import both, judge_fields, line_figure, protocol_rows
from . import core as opm


#: What the options kernel reads of a cell (with the run's instances and seed): cells
#: that agree on these share one kernel pass.
KERNEL_FIELDS = ("model.p", "model.rho", "judge.lam", "judge.mu", "judge.kappa", "options.*")


def solve_cells(base, cells) -> xr.Dataset:
    shape, dims, axes = (len(cells),), ("cell",), ()  # a block: its cells along "cell"
    eqc = base.equilibrium
    calls: list = []
    t0 = time.perf_counter()
    used = 0
    # Cells that agree on what the kernel (or the enumeration) reads share one result;
    # the metrics of the block's cells are then computed at once from their rows.
    reps, group = kernel_groups(cells, KERNEL_FIELDS)
    if eqc.payoffs == "simulated":
        # Every distinct input is played out in one pass of the random numbers per
        # number of options.
        shared = opm.simulate_cells([(c.model.p, c.model.rho, c.judge.lam, c.judge.mu,
                                      c.judge.kappa, c.options) for c in reps],
                                    base.run.n_instances, base.run.seed,
                                    base.run.n_threads, base.run.device)
        calls.extend([1] * len({c.options.K for c in reps}))
        sums = np.stack([out for out, _ in shared])[group]  # [cell, protocol, row, 2]
        used = shared[0][1] if shared else 0
        res = opm.metrics_from_rows(sums[..., 0], sums[..., 1])
    else:
        rows = np.stack([opm.exact(c.model.p, c.model.rho, c.judge.lam, c.judge.mu,
                                   c.judge.kappa, c.options)["rows"] for c in reps])
        res = opm.metrics_from_rows(rows[group])
    attack = column(cells, "options.antagonist") == "attack"  # no alternative is defended
    res["wrong_alternative"][0][attack] = np.nan
    res["wrong_alternative"][1][attack] = np.nan
    val = {k: res[k][0] for k in opm.METRICS}
    se = {k: res[k][1] for k in opm.METRICS}
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
        ["consult", "debate"], dict(CONSULT_DEBATE))}))
    ds.attrs.update({
        "title": "antiamp: multi-option answers", "payoffs": eqc.payoffs,
        "method": "exact enumeration" if eqc.payoffs == "exact" else "Monte Carlo kernel",
        "n_instances": int(used), "kernel_calls": int(len(calls)),
        "solve_seconds": float(elapsed), "solver_report": "no issues",
    })
    return ds


#: The config paths :func:`validate` reads beyond the declared ranges: the stance, c_e, the
#: judge, and the lists and k_examine against K. A grid is validated column by column, and
#: :func:`validate` once per distinct combination of the axes these cover.
VALIDATE_READS = ("model.stance", "model.c_e", "judge.kind", "judge.jury_size", "options.K",
                  "options.prior", "options.option_bias", "options.antagonist",
                  "options.k_examine")


def validate(cfg) -> None:
    """Checks of extension 'options' beyond the shared ones (ConfigError names the field)."""
    from ...evidence_game import validate_equilibrium

    require_signal_stance(cfg, "options")
    opm.validate_options(cfg.options, cfg.judge, cfg.model.c_e)
    validate_equilibrium(cfg.equilibrium)


# ------------------------------------------------------------------ table and figures
def format_options(ds: xr.Dataset) -> str:
    import yaml

    oc = yaml.safe_load(ds.attrs["config"])["options"]
    lines = [f"{oc['K']} answers, antagonist rule {oc['antagonist']} "
             f"({ds.attrs['method']})", ""]
    lines += protocol_rows(ds, [(v, v) for v in ("amp", "amp_loss", "acc", "fwc", "loss")]
                           + [("wrong_alt", "wrong_alternative")])
    lines += ["", "wrong_alt: Pr(the antagonist defends a wrong alternative | a != omega)"]
    return "\n".join(lines)


def plot_options(ds: xr.Dataset, path: Path) -> list:
    return line_figure(ds, path, [
        ("Amp = Pr(y = a | a != omega) (dashed: consultancy)", both("amp")),
        ("Amp of suboptimal answers (dashed: consultancy)", both("amp_loss")),
        ("accuracy (dashed: consultancy)", both("acc")),
        ("antagonist defends a wrong alternative | a wrong",
         [("wrong_alternative", "debate", "-o")]),
    ], "multi-option answers", _fields(ds))



def _fields(ds) -> list:
    import yaml

    cfg = yaml.safe_load(ds.attrs["config"])
    return judge_fields(cfg) + [("options", k) for k in (
        "K", "antagonist", "k_examine", "distractor_weight", "distractor_bias", "near_miss_loss")]



#: CPU ms of one cell's exact enumeration by K (the best-of-k antagonist examining 2,
#: the dearest rule measured; it grows about 5x a step in K).
_EXACT_MS = {2: 0.7, 3: 2.3, 4: 12.0, 5: 83.0, 6: 373.0}


def cells_per_block(base) -> int:
    """A grid's default block (:attr:`antiamp.registry.Model.cells_per_block`): by what a
    cell costs.  Exact payoffs are a cell's enumeration alone, whatever its instances:
    about 3 s of it a block (250 cells at K <= 4, 16 at K = 6; a K axis beyond the base
    config's makes its blocks dearer), so that a block's own cost, its Dataset and
    chunk files, is small beside its cells' (64-cell blocks spent about a fifth of a
    millisecond a cell on it).  Simulated payoffs: 64 cells."""
    if base.equilibrium.payoffs != "exact":
        return 64
    ms = _EXACT_MS.get(max(4, int(base.options.K)), max(_EXACT_MS.values()))
    return blocks_by_cost(ms, 0.0, seconds=3.0)(base)


MODEL = Model(
    name="options",
    title="multi-option answers: K candidates, examined or attacked",
    run_cells=solve_cells,
    sections=SECTIONS,
    validate=validate, validate_reads=VALIDATE_READS, prepare=strategies_solved,
    kernel_fields=KERNEL_FIELDS + ("run.n_instances", "run.seed"),
    format_table=format_options, figures=plot_options, plot_vars=("amp", "acc", "amp_loss"),
    gpu=True, cells_per_block=cells_per_block,
)
