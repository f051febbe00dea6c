"""Figures draw the numbers of their Dataset: every figure kind read back from its artists.

Each model's cell figure and grid figure is drawn at small n; at the moment it is
saved, every line's y values, every bar's height and every heatmap's cells are read
from the axes and looked up among the numbers of the Dataset it was drawn from (its
variables and coordinates; an error bar's ends are a value plus or minus 1.96 or 2 of
its ``_se``).  A number drawn that the Dataset does not hold is a figure showing
something other than what the run printed and stored.  The few panels that draw
references of their own (a seed's published table, a closed-form curve of the
config, a difference or a category computed from two variables) are listed in
``DERIVED`` with what they draw, and checked for those instead.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.figure  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import QuadMesh  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

import antiamp  # noqa: E402
from antiamp.registry import get  # noqa: E402
from antiamp.sweeps.blocks import run_grid  # noqa: E402
from test_figures import GRIDS, _cell_examples  # noqa: E402

#: Error bars of the figures: value +- z SE.
SE_Z = (1.96, 2.0)
def _colmad_gain(ds):
    return (ds.f1_exact.sel(protocol="colmad") - ds.f1_exact.sel(protocol="single")).values


def _regimes(ds):
    from antiamp.models.equilibrium.model import regimes

    return np.concatenate([r.values.ravel() for r in regimes(ds).values()])


#: (model, figure: "cell" or "grid", title prefix of a panel) -> (what the panel draws that
#: is not a stored number, the numbers it should draw from the Dataset, or None where the
#: panel draws references that are not the run's: those panels are not read back).
DERIVED = {
    ("mediation", "cell", "citations: exact share"):
        ("every source's citation classes (not only the cell's) and the seed's Tables 1-2",
         None),
    ("mediation", "cell", "residual flaws"):
        ("the closed form F_0 (1 - d r)^k of the config, and the cell's residual", None),
    ("mediation", "grid", "citations"):
        ("shares in percent beside the evidence quality",
         lambda ds: np.concatenate([_numbers(ds), 100 * _numbers(ds)])),
    ("colmad", "grid", "ColMAD against a single detector"):
        ("F1(ColMAD) - F1(single detector)", _colmad_gain),
    ("equilibrium", "grid", ""):
        ("the regime of each sender and protocol (a category of x_P and x_A)", _regimes),
}


@pytest.fixture
def drawn(monkeypatch):
    """(file, [(panel title, kind, values)]) of every PNG saved while the test runs."""
    records = []
    real = matplotlib.figure.Figure.savefig

    def spy(self, fname, *a, **k):
        if str(fname).endswith(".png"):
            colorbars = {id(ax) for ax in self.axes if ax.get_label() == "<colorbar>"}
            panels = []
            for ax in self.axes:
                if id(ax) in colorbars or not ax.get_visible():
                    continue
                title = ax.get_title()
                for ln in ax.lines:
                    y = np.asarray(ln.get_ydata(), float)
                    if len(y) == 2 and np.unique(y).size == 1:  # a reference line (axhline)
                        continue
                    panels.append((title, f"line {ln.get_label()}", y))
                bars = [p.get_height() for p in ax.patches if isinstance(p, Rectangle)]
                if bars:
                    panels.append((title, "bars", np.asarray(bars, float)))
                for c in ax.collections:
                    if isinstance(c, QuadMesh):
                        panels.append((title, "mesh", np.ma.filled(c.get_array(), np.nan)))
                for im in ax.images:
                    panels.append((title, "image", np.ma.filled(im.get_array(), np.nan)))
            records.append((str(fname), panels))
        return real(self, fname, *a, **k)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    return records


def _numbers(ds) -> np.ndarray:
    """Every finite number of the Dataset, with the ends of its error bars, sorted."""
    arrays = [np.asarray(v.values) for v in [*ds.data_vars.values(), *ds.coords.values()]]
    vals = [a.astype(float).ravel() for a in arrays if a.dtype.kind in "fiub"]
    for k in ds.data_vars:
        if f"{k}_se" in ds.data_vars and ds[k].dtype.kind == "f":
            v, se = np.asarray(ds[k].values, float), np.asarray(ds[f"{k}_se"].values, float)
            vals += [(v + s * z * se).ravel() for z in SE_Z for s in (1, -1)]
    a = np.concatenate(vals)
    return np.unique(a[np.isfinite(a)])


def _not_held(values, held: np.ndarray) -> np.ndarray:
    v = np.asarray(values, float).ravel()
    v = v[np.isfinite(v)]
    if not v.size:
        return v
    i = np.clip(np.searchsorted(held, v), 1, len(held) - 1)
    gap = np.minimum(np.abs(held[i] - v), np.abs(held[i - 1] - v))
    return v[gap > 1e-9 * np.maximum(1.0, np.abs(v))]


def _check(model: str, kind: str, ds, drawn) -> None:
    assert drawn, "no figure was written"
    held = _numbers(ds)
    bad, seen = [], 0
    for path, panels in drawn:
        for title, what, values in panels:
            derived = [f for (m, k, t), (_, f) in DERIVED.items()
                       if m == model and k == kind and title.startswith(t)]
            if derived and derived[0] is None:  # references of its own, not the run's
                continue
            these = np.unique(np.asarray(derived[0](ds), float).ravel()) if derived else held
            seen += np.isfinite(values).sum()
            miss = _not_held(values, these)
            if miss.size:
                bad.append(f"{path}: panel {title!r}, {what}: {miss.size} of "
                           f"{np.isfinite(values).sum()} numbers not in the Dataset, e.g. "
                           f"{miss[:3].tolist()}")
    assert seen, "nothing was read back: the check would pass on any figure"
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", sorted(_cell_examples()))
def test_a_cell_figure_draws_its_datasets_numbers(name, tmp_path, drawn):
    model = get(name)
    if model.cell_figures is None:
        pytest.skip(f"model {name} draws no figure of one cell")
    ds = antiamp.simulate(_cell_examples()[name])
    model.cell_figures(ds, tmp_path / "results")
    _check(name, "cell", ds, drawn)


@pytest.mark.parametrize("name", list(GRIDS))
def test_a_grid_figure_draws_its_datasets_numbers(name, tmp_path, drawn):
    cfg, _ = GRIDS[name]
    model = get(cfg["model"]["name"])
    if model.figures is None:
        pytest.skip(f"model {model.name} draws its grids with antiamp-plot (tested below)")
    ds = run_grid(cfg)
    model.figures(ds, tmp_path / "fig")
    _check(model.name, "grid", ds, drawn)


def test_a_sweep_heatmap_is_the_stored_grid_cell_for_cell(tmp_path, drawn):
    """antiamp-plot's heatmap: each panel's cells are the store's values at their
    coordinates (the mesh read back, its edges' centres matched to the axes)."""
    import xarray as xr

    from antiamp.sweeps.plot import plot_store

    store = tmp_path / "g.zarr"
    rho, b = [0.1, 0.4, 0.8], [0.2, 0.5, 0.9, 0.95]
    antiamp.sweep({"run": {"n_instances": 4000},
                   "sweep": {"axes": {"model": {"rho": rho}, "judge": {"b": b}}, "plot": False}},
                  store, progress=False, log=lambda *a: None)
    plot_store(store, ["amp"], out_dir=tmp_path / "f", formats=("png",))
    ds = xr.open_zarr(store)
    meshes = {title.split(" (")[0]: v for _, panels in drawn for title, what, v in panels
              if what == "mesh"}
    assert set(meshes) == {"protocol = consult", "protocol = debate"}, sorted(meshes)
    for p in ("consult", "debate"):
        want = ds.amp.sel(protocol=p)
        got = meshes[f"protocol = {p}"]
        assert got.shape in (want.shape, want.shape[::-1]), (got.shape, want.shape)
        same = (np.array_equal(got, want.values) if got.shape == want.shape else False) or \
            np.array_equal(got, want.values.T)
        assert same, (p, got, want.values)


def test_the_check_fails_on_a_number_the_dataset_does_not_hold(tmp_path, drawn):
    """A panel that draws a value the run never stored (its Amp shifted by 0.01) fails."""
    import matplotlib.pyplot as plt

    ds = antiamp.simulate({"run": {"n_instances": 4000}})
    fig, ax = plt.subplots()
    ax.bar([0, 1], ds.amp.values + np.array([0.0, 0.01]))
    ax.set_title("Amp")
    fig.savefig(tmp_path / "f.png")
    plt.close(fig)
    with pytest.raises(AssertionError, match=r"panel 'Amp', bars: 1 of 2 numbers not in"):
        _check("baseline", "cell", ds, drawn)
