"""The baseline persuasion game of seed 000 (sections 3-4) as a model.

Both protocols on the same instances, each metric with its standard error and its
closed form.  A cell's result is its transcript-class counts, so its grids run
fused (:mod:`.grid`, the model's :class:`~antiamp.registry.FusedGrid`): the
sweep engine passes every cell of a block through one kernel call on common
random numbers and writes the store chunk by chunk.
"""

from __future__ import annotations

from ...lazy import lazy
xr = lazy("xarray")

from ...config import Config
from ...registry import BASE_SECTIONS, FusedGrid, Model
from . import grid as _grid


def plain(cfg) -> Config:
    """The shared sections of a config as a plain :class:`~antiamp.config.Config`."""
    return Config(**{s: getattr(cfg, s) for s in BASE_SECTIONS})


def _run_cells(base, cells) -> xr.Dataset:
    """Every cell's :func:`antiamp.models.baseline.core.simulate` Dataset, stacked over ``cell``.

    The first cell's Dataset is the template (names, dimensions, attributes); each
    cell's arrays come from :func:`antiamp.models.baseline.core.cell_arrays` on its validated
    config, so a grid does not build, validate and merge one Dataset per cell
    (about 0.3 s a cell, 40 variable assignments each)."""
    import numpy as np

    from .core import cell_arrays, simulate

    first = simulate(plain(cells[0]))
    names = list(first.data_vars)
    rows = [cell_arrays(plain(c)) for c in cells]
    if set(rows[0]) != set(names):  # the two paths must describe the same variables
        raise AssertionError(f"cell_arrays and simulate disagree: {sorted(set(rows[0]) ^ set(names))}")
    data = {n: (("cell",) + first[n].dims, np.stack([r[n] for r in rows]), first[n].attrs)
            for n in names}
    return xr.Dataset(data, coords={k: v for k, v in first.coords.items()})


def _run_cell(cfg, **kwargs) -> xr.Dataset:
    from .core import simulate_config

    return simulate_config(plain(cfg), **kwargs)


def _theory(cfg) -> xr.Dataset:
    from .core import theory

    return theory(cfg)


#: The config paths :func:`_validate` reads beyond the declared ranges: the dominance check:
#: the judge's tables, c_e and the given strategies. A grid is validated column by column, and
#: :func:`_validate` once per distinct combination of the axes these cover.
VALIDATE_READS = ("model.c_e", "model.x_P", "model.x_A", "model.x_P_consult", "judge", "protocol")


def _validate(cfg) -> None:
    """Unset presentation strategies need a dominant strategy (ConfigError if none)."""
    from ...judge import resolve_strategies

    resolve_strategies(plain(cfg))


def _format(ds: xr.Dataset) -> str:
    from ...output import format_table

    return format_table(ds)


def _cell_figures(ds: xr.Dataset, path) -> list:
    from pathlib import Path

    from ...output import plot_results

    return [plot_results(ds, Path(path).with_suffix(".png"))]


MODEL = Model(
    name="baseline",
    title="the seed-000 persuasion game: consultancy and debate on the same instances",
    run_cells=_run_cells,
    kernel_fields=("model.pi", "model.p", "model.rho", "model.stance", "model.a", "model.x_P",
                   "model.x_A", "model.x_P_consult", "model.c_e", "run.n_instances", "run.seed"),
    format_table=_format, cell_figures=_cell_figures,
    plot_vars=("amp", "amp_gap"),
    cells_per_block=0,
    run_cell=_run_cell,
    theory=_theory,
    validate=_validate, validate_reads=VALIDATE_READS,
    fused_grid=FusedGrid(
        n_counts=_grid.N_CLASSES, columns=_grid.columns, kernel_inputs=_grid.kernel_inputs,
        count=_grid.count, values=_grid.values, layout=_grid.layout,
        counts_name="class_counts", counts_dim="transcript_class",
        counts_attrs={"long_name": "instances per transcript class", "units": "1"},
        dataset=_grid.dataset),
    gpu=True,
)
