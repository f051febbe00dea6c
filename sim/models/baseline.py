"""The baseline persuasion game of seed 000 (sections 3-4) as a model.

Both protocols on the same instances, each metric with its standard error and its
closed form.  Grids of this model run on the streaming sweep engine
(:mod:`antiamp.sweeps.engine`), which fuses every cell of a block into one
kernel pass on common random numbers and writes the store chunk by chunk.
"""

from __future__ import annotations

from ..lazy import lazy
xr = lazy("xarray")

from ..config import Config
from ..registry import BASE_SECTIONS, Model


def plain(cfg) -> Config:
    """The shared sections of a config as a plain :class:`~antiamp.config.Config`."""
    return Config(**{s: getattr(cfg, s) for s in BASE_SECTIONS})


def _run_cells(base, cells) -> xr.Dataset:
    from ..core import simulate

    parts = []
    for c in cells:
        ds = simulate(plain(c))
        ds.attrs = {}
        parts.append(ds)
    return xr.concat(parts, dim="cell", data_vars="all", coords="minimal", compat="override")


def _format(ds: xr.Dataset) -> str:
    from ..output import format_table

    return format_table(ds)


MODEL = Model(
    name="baseline",
    title="the seed-000 persuasion game: consultancy and debate on the same instances",
    run_cells=_run_cells,
    kernel_fields=("model.pi", "model.p", "model.rho", "model.stance", "model.a", "model.x_P",
                   "model.x_A", "model.x_P_consult", "model.c_e", "run.n_instances", "run.seed"),
    format_table=_format,
    plot_vars=("amp", "amp_gap"),
    cells_per_block=0,
)
