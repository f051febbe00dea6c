"""The evidence-presentation game of seed 000 (sections 3-4) as a model: every
equilibrium with certificates (solver: :mod:`antiamp.evidence_game`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from ...lazy import lazy
xr = lazy("xarray")

from ...evidence_game import validate_equilibrium
from ...plotting import save, wrap_columns, wrap_prose
from ...registry import Model, strategies_solved
from .config import SECTIONS
from .core import solve_cells


REGIMES = ["never present", "always present", "mixes (in some equilibrium)", "several pure equilibria"]


def regimes(ds: xr.Dataset) -> dict:
    """Per sender, the regime of each cell: 0 never, 1 always, 2 mixed, 3 multiple pure."""
    out = {}
    for label, var, prot in (("P, consultancy", "x_P", "consult"), ("P, debate", "x_P", "debate"),
                             ("A, debate", "x_A", "debate")):
        x = ds[var].sel(protocol=prot)
        valid = ~np.isnan(x)
        mixed = ((x > 1e-9) & (x < 1 - 1e-9) & valid).any("equilibrium")
        ones = ((x >= 1 - 1e-9) | ~valid).all("equilibrium")
        zeros = ((x <= 1e-9) | ~valid).all("equilibrium")
        reg = xr.where(mixed, 2, xr.where(ones, 1, xr.where(zeros, 0, 3)))
        out[label] = reg
    return out


def plot_regimes(ds: xr.Dataset, path: Path) -> list:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    from ...plotting import axis_label, cell_map, describe, integer_ticks, panel_grid

    regs = regimes(ds)
    dims = [d for d in regs["P, debate"].dims]
    cmap = ListedColormap(["#bdbdbd", "#1b9e77", "#d95f02", "#7570b3"])
    fig, flat = panel_grid(3, height=3.2)
    note = ""
    for ax, (label, reg) in zip(flat, regs.items()):
        extra = {d: 0 for d in dims[2:]}
        if extra:
            reg = reg.isel(extra)
            note = "shown at " + ", ".join(f"{d}={ds[d].values[0]}" for d in extra)
        if len(dims) >= 2:
            y, x = dims[0], dims[1]
            cell_map(ax, ds[x].values, ds[y].values, reg.transpose(y, x).values, cmap=cmap,
                     vmin=-0.5, vmax=3.5)
            ax.set_xlabel(axis_label(ds, x), fontsize=8)
            ax.set_ylabel(axis_label(ds, y), fontsize=8)
            integer_ticks(ax, ds[x].values)
            integer_ticks(ax, ds[y].values, "y")
        else:
            x = dims[0]
            ax.scatter(ds[x].values, reg.values, c=reg.values, cmap=cmap, vmin=-0.5, vmax=3.5)
            ax.set_yticks(range(4), REGIMES)
            ax.set_xlabel(axis_label(ds, x), fontsize=8)
            integer_ticks(ax, ds[x].values)
        ax.set_title(label, fontsize=9)
    handles = [plt.Rectangle((0, 0), 1, 1, color=cmap(i)) for i in range(4)]
    fig.legend(handles, REGIMES, loc="outside lower center", ncol=4, fontsize=8, frameon=False)
    fields = [("model", "p"), ("model", "rho"), ("model", "c_e"), ("judge", "kind"),
              ("judge", "b"), ("judge", "jury_size")]
    fig.suptitle("evidence-presentation regimes (presentation given available evidence): "
                 + describe(ds, fields) + (f"; {note}" if note else ""), fontsize=9)
    return save(fig, path)


def format_equilibria(ds: xr.Dataset) -> str:
    lines = [f"equilibria of the evidence game ({ds.attrs['method']}, "
             f"{ds.attrs['payoffs']} payoffs)",
             f"posteriors given available evidence: mu_P = {float(ds.mu_P):.4f}, "
             f"mu_A = {float(ds.mu_A):.4f}", "",
             "protocol  #  kind         x_P       x_A       amp       acc       fwc       "
             "welfare    epsilon    stable"]
    for prot in ("consult", "debate"):
        d = ds.sel(protocol=prot)
        for e in range(int(d.n_equilibria)):
            r = d.isel(equilibrium=e)
            f = [float(r[v]) for v in ("x_P", "x_A", "amp", "acc", "fwc", "welfare", "epsilon")]
            cells = [("-" if np.isnan(v) else f"{v:.5f}").ljust(9) for v in f[:6]]
            lines.append(f"{prot:<9} {e}  {str(r.kind.values):<12} " + " ".join(cells)
                         + f" {f[6]:.2e}   {bool(r.stable)}")
    return "\n".join(wrap_prose(lines[:3]) + wrap_columns(lines[3:], keep=3))


def validate(cfg) -> None:
    validate_equilibrium(cfg.equilibrium)



def _run_cells(base, cells):
    return solve_cells(base, base.equilibrium, cells)


#: The work bound's weight of a cell with exact payoffs, in the baseline's instances:
#: no instance is simulated, the cell is one solve of two small games (about 6.5 us a
#: cell on 10^6-cell grids on a 2-core machine, 650 instances at the bound's nominal
#: rate; taken at 1,000 to cover the slower methods and a loaded machine).
EXACT_CELL_WORK = 1000.0


def cell_work(size) -> tuple:
    """The work bound's cost of a cell (:class:`antiamp.registry.Model` ``work``): the
    baseline's ``run.n_instances`` with simulated payoffs; with exact payoffs (the
    default) no instance is simulated, whatever ``run.n_instances`` says."""
    if size("equilibrium", "payoffs", "exact") == "exact":
        return EXACT_CELL_WORK, "one exact solve (no simulated instances)"
    n = size("run", "n_instances", 0)
    return n, f"{n:,.0f} instances (simulated payoffs)"


#: Cells a block with exact payoffs (the default): a cell is one solve, about 1.5-2 us
#: of CPU, while a block has a fixed cost of about 20 ms (its Dataset, config and
#: metrics; its chunk files, about 20 of them, and their checks in the store).  At
#: 65,536 cells a block solves in about 0.1 s, the fixed cost is under a fifth of it,
#: and a float64 chunk of a variable over the two protocols is 1 MB (zarr's guidance:
#: 1 MB or more); at 4,096 (32 KB chunks) the store's writes cost as much as the
#: solving.  A grid worth spreading over workers, 10^6 cells and more (2 s of CPU),
#: still has 16 blocks or more; a smaller one is one block of under 0.2 s, less than a
#: distributed run's start.
EXACT_CELLS_PER_BLOCK = 65_536
#: Cells a block with simulated payoffs: each cell one baseline kernel pass.
SIMULATED_CELLS_PER_BLOCK = 4096


def cells_per_block(base) -> int:
    """The default block (:attr:`antiamp.registry.Model.cells_per_block`): by what a
    cell costs (:data:`EXACT_CELLS_PER_BLOCK`, :data:`SIMULATED_CELLS_PER_BLOCK`)."""
    if base.equilibrium.payoffs == "exact":
        return EXACT_CELLS_PER_BLOCK
    return SIMULATED_CELLS_PER_BLOCK


MODEL = Model(
    name="equilibrium",
    title="equilibria of the evidence-presentation game, with certificates",
    run_cells=_run_cells,
    sections=SECTIONS,
    validate=validate, validate_reads=(), prepare=strategies_solved,
    kernel_fields=("model.pi", "model.p", "model.rho", "model.stance", "model.a",
                   "run.n_instances", "run.seed"),
    format_table=format_equilibria, figures=plot_regimes, plot_vars=("x_P", "x_A", "amp"),
    cells_per_block=cells_per_block,
    gpu=True,  # simulated payoffs run the baseline's kernel
    work=cell_work,
)
