"""Every model's default figures, rendered at small n: from the saved image and from the
axes objects at the moment of saving, each figure

* is at most about 1,200 pixels wide (README and page width),
* labels no axis with a raw config name (``rho``, ``size``, ``r_mean_false``...),
* puts whole-number ticks on an axis swept over an integer field (K, jury size, B),
* keeps its title within its edges,
* names no seed by its number in a legend ("(000)"), and gives no two legend entries
  one style.

and the rules a figure keeps so as not to mislead (tests below): heatmaps drawn as
cells, never interpolated, with no closed-form contours across a categorical axis or
through a grid too coarse for them; no facet per value of a field that changes
nothing; a design's points never joined by lines; contour labels within their
panels; an incomplete store says so in its title; legends and titles define their
symbols; curves drawn exactly over others are named.  And every printed table fits
a terminal's 100 columns.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.figure  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402
from matplotlib.collections import QuadMesh  # noqa: E402
from matplotlib.contour import ContourSet  # noqa: E402
from matplotlib.image import imread  # noqa: E402

import antiamp  # noqa: E402
from antiamp.registry import builtin_names, get, section_types  # noqa: E402
from antiamp.testing import default_grids  # noqa: E402
from antiamp.sweeps.blocks import run_grid  # noqa: E402

MAX_PX = 1300
SIM = {"payoffs": "simulated"}
N = 4000

def _integer_label(cfg: dict):
    """The meaning of the grid's first axis when it is an integer field (figures draw
    it along x, with whole-number ticks), or None."""
    from antiamp.fields import declared

    sec, fields = next(iter(cfg["sweep"]["axes"].items()))
    f = next(iter(fields))
    cls = section_types().get(sec) or {g.name: g.default_factory
                                       for g in dataclasses.fields(antiamp.Config)}[sec]
    if typing.get_type_hints(cls).get(f) is not int:
        return None
    return declared(f"{sec}.{f}").get("meaning") or None


#: Every registered built-in model's declared grids (``config.GRIDS``), at small n.
GRIDS = {f"{name}-{k}": ({**cfg, "run": {**(cfg.get("run") or {}), "n_instances": N}}
                         if (cfg.get("run") or {}).get("n_instances", N) > 1 else cfg,
                         _integer_label(cfg))
         for name in builtin_names() for k, cfg in enumerate(default_grids(name))}


def _raw_names() -> set:
    """Every config field's bare name (a label must say what it means instead)."""
    names = set()
    for cls in list(section_types().values()) + [f.default_factory for f in
                                                 dataclasses.fields(antiamp.Config)]:
        names |= {f.name for f in dataclasses.fields(cls)}
    return names


def _final_name(fname) -> str:
    """The name a figure ends under: antiamp saves ``path`` into a new temporary
    ``.<name>.<random>.tmp<suffix>`` beside it and renames it (sim/outputs_policy.py)."""
    import re

    p = Path(str(fname))
    m = re.fullmatch(r"\.(.+)\.[^.]+\.tmp(\.[^.]+)?", p.name)
    return str(p.with_name(m.group(1)) if m else p)


def _style(h) -> tuple:
    """What tells a legend entry's line or marker apart: colour, line style, marker."""
    from matplotlib.colors import to_hex

    try:
        return (to_hex(h.get_color()), str(h.get_linestyle()), str(h.get_marker()))
    except Exception:  # patches, collections: their face colour and marker shape
        try:
            fc = h.get_facecolor()
            paths = h.get_paths() if hasattr(h, "get_paths") else []
            shape = (np.round(paths[0].vertices, 3).tobytes().hex()[:64] if len(paths)
                     else type(h).__name__)
            return (to_hex(fc[0] if np.ndim(fc) > 1 else fc), type(h).__name__, shape)
        except Exception:
            return (repr(h), "", "")


def _inside(e, box, tol=1.0) -> bool:
    return (e.x0 >= box.x0 - tol and e.x1 <= box.x1 + tol and e.y0 >= box.y0 - tol
            and e.y1 <= box.y1 + tol)


@pytest.fixture
def saved(monkeypatch):
    """(figure, path) of every savefig while the test runs, with its axes inspected then."""
    records = []
    real = matplotlib.figure.Figure.savefig

    def spy(self, fname, *a, **k):
        out = real(self, fname, *a, **k)
        if str(fname).endswith(".png"):
            st = getattr(self, "_suptitle", None)
            cut = False
            if st is not None and st.get_text():  # the title within the figure's edges
                self.canvas.draw()
                e, f = st.get_window_extent(), self.bbox
                cut = bool(e.x0 < f.x0 - 1 or e.x1 > f.x1 + 1)
            self.canvas.draw()
            renderer = self.canvas.get_renderer()
            legends = [lg for lg in [*self.legends, *(a.get_legend() for a in self.axes)] if lg]
            records.append((_final_name(fname), [
                {"xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
                 "xticks": [t for t in ax.get_xticks()
                            if ax.get_xlim()[0] - 1e-9 <= t <= ax.get_xlim()[1] + 1e-9],
                 "yticks": [t for t in ax.get_yticks()
                            if min(ax.get_ylim()) - 1e-9 <= t <= max(ax.get_ylim()) + 1e-9],
                 "title": ax.get_title(),
                 "figtext": " ".join(t.get_text() for t in self.texts),
                 "title_cut": cut,
                 "suptitle": st.get_text() if st is not None else "",
                 "legend": [(t.get_text(), _style(h)) for lg in legends
                            for t, h in zip(lg.get_texts(), lg.legend_handles)],
                 "legend_titles": " ".join(lg.get_title().get_text() for lg in legends),
                 "shading": [getattr(c, "_shading", None) for c in ax.collections
                             if isinstance(c, QuadMesh)],
                 "interpolation": [im.get_interpolation() for im in ax.images],
                 "contours": sum(isinstance(c, ContourSet) for c in ax.collections),
                 "colorbar": hasattr(ax, "_colorbar"),
                 "texts": [t.get_text() for t in ax.texts],
                 "texts_cut": [t.get_text() for t in ax.texts if t.get_visible()
                               and not _inside(t.get_window_extent(renderer),
                                               ax.get_window_extent(renderer))],
                 "joined": [len(ln.get_xdata()) for ln in ax.lines
                            if ln.get_linestyle() not in ("None", "none", "", " ")
                            and len(ln.get_xdata()) > 2],
                 } for ax in self.axes if ax.get_visible()]))
        return out

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    return records


def _check(records, integer_label=None):
    raw = _raw_names()
    assert records, "no figure was written"
    bad = []
    for path, axes in records:
        width = imread(path).shape[1]
        if width > MAX_PX:
            bad.append(f"{path}: {width} px wide")
        if any(ax["title_cut"] for ax in axes):
            bad.append(f"{path}: the figure's title runs past its edges")
        legend = dict.fromkeys(e for ax in axes for e in ax["legend"])
        for lab, _ in legend:
            if re.search(r"\(\d{3}\)", lab):
                bad.append(f"{path}: legend entry {lab!r} names a seed by its number")
        styles = {}
        for lab, st in legend:
            styles.setdefault(st, set()).add(lab)
        for st, labs in styles.items():
            if len(labs) > 1:
                bad.append(f"{path}: legend entries {sorted(labs)} have one style {st}")
        for ax in axes:
            for which in ("xlabel", "ylabel"):
                lab = ax[which].strip()
                if lab and lab in raw:
                    bad.append(f"{path}: {which} is the raw config name {lab!r}")
            if integer_label and integer_label in ax["xlabel"]:
                ticks = np.asarray(ax["xticks"], float)
                if ticks.size and not np.allclose(ticks, np.round(ticks)):
                    bad.append(f"{path}: fractional ticks {ticks.tolist()} on {ax['xlabel']!r}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", list(GRIDS))
def test_every_models_grid_figures(name, tmp_path, saved):
    cfg, integer_label = GRIDS[name]
    model = get(cfg["model"]["name"])
    if model.figures is None:
        pytest.skip(f"model {model.name} draws its grids with antiamp-plot (tested below)")
    ds = run_grid(cfg)
    paths = model.figures(ds, tmp_path / "fig")
    assert paths
    _check(saved, integer_label)
    if integer_label:  # the integer axis was drawn
        assert any(integer_label in ax["xlabel"] for _, axes in saved for ax in axes)


def test_baseline_sweep_figures(tmp_path, saved):
    from antiamp.sweeps.plot import plot_store

    store = tmp_path / "sweep.zarr"
    antiamp.sweep({"run": {"n_instances": N},
                   "sweep": {"axes": {"judge": {"jury_size": [1, 3, 5]}, "model": {"rho": [0.2, 0.6]}},
                             "plot": False}}, store, progress=False, log=lambda *a: None)
    plot_store(store, ["amp", "amp_gap"], out_dir=tmp_path / "figs")
    _check(saved, "jury size")
    antiamp.sweep({"run": {"n_instances": N},
                   "sweep": {"axes": {"judge": {"jury_size": [1, 3, 5]}}, "plot": False}},
                  tmp_path / "one.zarr", progress=False, log=lambda *a: None)
    saved.clear()
    plot_store(tmp_path / "one.zarr", ["amp"], out_dir=tmp_path / "figs1")
    _check(saved, "jury size")
    # consultancy's Amp is rho everywhere on a (b, jury size) grid: no panel of one
    # colour, the note names it instead
    antiamp.sweep({"run": {"n_instances": N},
                   "sweep": {"axes": {"judge": {"jury_size": [1, 3, 5], "b": [0.2, 0.5, 0.8]}},
                             "plot": False}}, tmp_path / "jury.zarr", progress=False,
                  log=lambda *a: None)
    saved.clear()
    plot_store(tmp_path / "jury.zarr", ["amp"], out_dir=tmp_path / "figs2")
    (_, axes), = saved
    titles = [a["title"] for a in axes if a["title"]]
    assert titles == ["protocol = debate"], titles
    c = float(xr.open_zarr(tmp_path / "jury.zarr").amp.sel(protocol="consult").max())
    assert f"not shown: protocol = consult (constant {c:.3g} over the grid)" in axes[0]["figtext"]


def _cell_examples() -> dict:
    """Each built-in model's first example cell (no grid, no export), at small n."""
    from antiamp.registry import builtin_config

    out = {}
    for name in builtin_names():
        for _, cfg in builtin_config(name).EXAMPLES:
            if "sweep" not in cfg and "export" not in cfg:
                out[name] = {**cfg, "run": {**(cfg.get("run") or {}), "n_instances": N}}
                break
    return out


@pytest.mark.parametrize("name", sorted(_cell_examples()))
def test_cell_figures(name, tmp_path, saved):
    model = get(name)
    if model.cell_figures is None:
        pytest.skip(f"model {name} draws no figure of one cell")
    model.cell_figures(antiamp.simulate(_cell_examples()[name]), tmp_path / "results")
    _check(saved)


def test_big_meshes_are_images_in_the_pdf(tmp_path):
    """A mesh of 10^5 cells is embedded in the PDF as an image (as vector paths the
    file is megabytes and takes a minute); a small one stays vector graphics."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from antiamp.plotting import save

    fig, (a, b) = plt.subplots(1, 2)
    big = a.pcolormesh(np.random.default_rng(0).random((300, 400)))
    small = b.pcolormesh(np.arange(12.0).reshape(3, 4))
    paths = save(fig, tmp_path / "f")
    assert big.get_rasterized() and not small.get_rasterized()
    pdf = [p for p in paths if p.suffix == ".pdf"][0]
    assert pdf.stat().st_size < 2_000_000


@pytest.mark.parametrize("even", [True, False], ids=["even axes: one image", "uneven: a mesh"])
def test_cell_maps_look_like_the_nearest_mesh(even):
    """cell_map draws evenly spaced grids as one image: the same picture as the
    mesh with each value centred on its coordinates (up to anti-aliased edges)."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import QuadMesh
    from matplotlib.image import AxesImage

    from antiamp.plotting import cell_map

    rng = np.random.default_rng(1)
    x = np.linspace(0.0, 1.0, 23) if even else np.geomspace(0.01, 1.0, 23)
    y = np.linspace(-2.0, 3.0, 17)
    Z = rng.integers(0, 4, (17, 23)).astype(float)

    def render(draw):
        fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
        art = draw(ax)
        ax.set_xlim(x[0] - (x[1] - x[0]) / 2, x[-1] + (x[-1] - x[-2]) / 2)
        ax.set_ylim(y[0] - (y[1] - y[0]) / 2, y[-1] + (y[-1] - y[-2]) / 2)
        fig.canvas.draw()
        img = np.asarray(fig.canvas.buffer_rgba())[..., :3].astype(int)
        plt.close(fig)
        return art, img

    art, ours = render(lambda ax: cell_map(ax, x, y, Z, cmap="viridis", vmin=0, vmax=3))
    _, mesh = render(lambda ax: ax.pcolormesh(x, y, Z, shading="nearest", cmap="viridis",
                                              vmin=0, vmax=3))
    assert isinstance(art, AxesImage if even else QuadMesh)
    differ = np.abs(ours - mesh).max(axis=-1) > 40
    assert differ.mean() < 0.01, differ.mean()


# ----------------------------------------------------------------- the figure rules
def _store(tmp_path, name, axes, **sections):
    store = tmp_path / f"{name}.zarr"
    antiamp.sweep({"run": {"n_instances": N}, **sections,
                   "sweep": {"axes": axes, "plot": False}}, store, progress=False,
                  log=lambda *a: None)
    return store


def _panels(saved):
    return [ax for _, axes in saved for ax in axes
            if (ax["shading"] or ax["interpolation"]) and not ax["colorbar"]]


def test_a_coarse_heatmap_is_cells_with_the_closed_form_in_them(tmp_path, saved):
    """A 3 x 3 grid: each point one cell of one colour (no Gouraud shading, no image
    interpolation); the closed form printed in each cell, no contours through nine
    points."""
    from antiamp.sweeps.plot import plot_store

    store = _store(tmp_path, "g3", {"model": {"rho": [0.1, 0.4, 0.8]},
                                    "judge": {"b": [0.2, 0.5, 0.9]}})
    plot_store(store, ["amp", "welfare_diff"], out_dir=tmp_path / "f", formats=("png",))
    panels = _panels(saved)
    assert len(panels) == 3  # amp: consult and debate; welfare_diff: one
    for ax in panels:
        assert "gouraud" not in ax["shading"], ax["shading"]
        assert set(ax["interpolation"]) <= {"nearest", "none"}, ax["interpolation"]
        assert ax["contours"] == 0
        assert len(ax["texts"]) == 9 and not ax["texts_cut"]
    ds = xr.open_zarr(store)
    debate = [ax for ax in panels if ax["title"] == "protocol = debate"][0]
    want = {f"{v:.3g}" for v in ds.amp_exact.sel(protocol="debate").values.ravel()}
    assert set(debate["texts"]) == want
    assert "numbers: closed form" in debate["figtext"]
    _check(saved)


def test_contour_labels_stay_within_their_panels(tmp_path, saved):
    """A grid fine enough for contours: drawn, and no label cut at a panel's edge (on
    this grid, drawn as they were placed, a label of welfare_diff's contours ran past
    its panel's edge)."""
    from antiamp.sweeps.plot import plot_store

    v = np.linspace(0.0, 1.0, 11).round(3).tolist()
    store = _store(tmp_path, "g11", {"model": {"rho": v},
                                     "judge": {"b": v, "jury_size": [1, 3, 5]}})
    plot_store(store, ["amp", "welfare_diff"], out_dir=tmp_path / "f", formats=("png",))
    panels = _panels(saved)
    assert panels and all(ax["contours"] for ax in panels if "consult" not in ax["title"])
    assert all(ax["texts"] for ax in panels if ax["contours"])  # the labels drawn
    cut = [(ax["title"], ax["texts_cut"]) for ax in panels if ax["texts_cut"]]
    assert not cut, cut


def test_a_merged_store_keeps_categories_apart_and_drops_ignored_fields(tmp_path, saved):
    """judge.kind (tiebreak, logit) merged into one store: never an axis colours or
    contours run across, a facet; mu, which the tie-break judge ignores, gets one
    "any" panel there, not one per value."""
    from antiamp.sweeps.merge import merge_stores
    from antiamp.sweeps.plot import plot_store

    axes = {"model": {"rho": [0.1, 0.5, 0.9]}, "judge": {"b": [0.2, 0.8], "mu": [-0.5, 0.5]}}
    parts = [_store(tmp_path, k, axes, judge={"kind": k}) for k in ("tiebreak", "logit")]
    merge_stores(parts, tmp_path / "merged.zarr")
    assert "kind" in xr.open_zarr(tmp_path / "merged.zarr").amp.dims
    plot_store(tmp_path / "merged.zarr", ["amp"], out_dir=tmp_path / "f", formats=("png",))
    panels = _panels(saved)
    titles = [ax["title"].replace("\n", " ") for ax in panels]
    for ax in panels:
        assert "kind" not in ax["xlabel"] + ax["ylabel"]
        assert ax["contours"] == 0 and "gouraud" not in ax["shading"]
    tie = [t for t in titles if "kind = tiebreak" in t]
    assert len(tie) == 2 and all("mu = any" in t for t in tie), titles
    assert len([t for t in titles if "kind = logit" in t]) == 4, titles
    assert "mu does not change the values at kind = tiebreak" in panels[0]["figtext"]


def test_an_incomplete_store_says_so_in_its_title(tmp_path, saved):
    from antiamp.sweeps.engine import set_attr
    from antiamp.sweeps.plot import plot_store

    store = _store(tmp_path, "part", {"model": {"rho": [0.1, 0.5]}})
    plot_store(store, ["amp"], out_dir=tmp_path / "f", formats=("png",))
    assert not saved[-1][1][0]["suptitle"].startswith("INCOMPLETE")
    set_attr(store, "complete", 0)
    # as a sweep leaves an unfinished store: its metadata consolidated and recorded so
    # (antiamp-plot verifies a store against its record before reading it)
    from antiamp.sweeps.metadata import consolidate, record

    consolidate(store)
    record(store, final=False)
    saved.clear()
    plot_store(store, ["amp"], out_dir=tmp_path / "g", formats=("png",), allow_incomplete=True)
    assert saved[-1][1][0]["suptitle"].startswith("INCOMPLETE (2 of 2 cells done")


@pytest.mark.parametrize("model", ["baseline", "messages"])
def test_a_designs_points_are_never_joined(model, tmp_path, saved):
    """A Morris design: each metric against each swept field as points (a design's
    cells have no order), and the title lists no swept field among the fixed ones."""
    from antiamp.sweeps.plot import plot_store

    axes = {"judge": {"mu": {"uniform": [-1, 1]}}, "model": {"rho": {"uniform": [0.1, 0.9]}}}
    cfg = {"model": {"name": model}, "judge": {"kind": "logit"}, "run": {"n_instances": N},
           "sweep": {"design": "morris", "n_points": 4, "axes": axes, "plot": False}}
    if model == "baseline":
        store = tmp_path / "d.zarr"
        antiamp.sweep(cfg, store, progress=False, log=lambda *a: None)
        plot_store(store, ["amp"], out_dir=tmp_path / "f", formats=("png",))
    else:
        get(model).figures(run_grid(cfg), tmp_path / "sweep")
    axes_drawn = [ax for _, a in saved for ax in a]
    assert axes_drawn and not [ax["joined"] for ax in axes_drawn if ax["joined"]]
    xlabels = " ".join(ax["xlabel"] for ax in axes_drawn)
    assert "μ" in xlabels and "ρ" in xlabels  # drawn against each swept field
    title = axes_drawn[0]["suptitle"]
    assert "μ = " not in title and "ρ = " not in title, title
    _check(saved)


def _small(name: str, cut: int = 4) -> dict:
    """A named sweep of conf/sweep at small n, each axis cut to its first values."""
    import yaml
    from importlib.resources import files

    cfg = yaml.safe_load(files("antiamp.conf").joinpath("sweep", f"{name}.yaml").read_text())
    cfg["run"] = {"n_instances": N}
    for fields in cfg["sweep"]["axes"].values():
        for k, v in fields.items():
            if isinstance(v, dict) and "range" in v:
                fields[k] = list(range(*v["range"]))[:cut]
            elif isinstance(v, list):
                fields[k] = v[:cut]
    return cfg


def test_legends_and_titles_define_their_symbols(tmp_path, saved):
    """portfolio_budget: the hue legend says what x is, the dotted line means one thing
    (the false side), not debate too; options: k, w_d, mu_d, l defined in the title."""
    get("portfolio").figures(run_grid(_small("portfolio_budget")), tmp_path / "p")
    (_, axes), = saved
    legend = dict(axes[0]["legend"])
    assert "x = 0.5" in legend and "cross-examination" in axes[0]["legend_titles"]
    dotted = [lab for lab, st in legend.items() if st[1] == ":"]
    solid = [lab for lab, st in legend.items() if st[1] == "-" and st[0] == "#595959"]
    assert dotted == ["false side (debate)"] and solid == ["debate"], legend
    saved.clear()
    get("options").figures(run_grid(_small("options_antagonist")), tmp_path / "o")
    (_, axes), = saved
    title = axes[0]["suptitle"]
    for sym in ("k", "w_d", "μ_d", "ℓ"):
        assert f" {sym} = " in title and f"{sym}: " in title, (sym, title)


@pytest.mark.parametrize("name,hidden", [
    ("options_antagonist", "one curve for every antagonist (all the same): amp (consult)"),
    ("panel_hurts", "one curve for every rule (all the same): amp (consult)")])
def test_curves_hidden_under_identical_ones_are_named(name, hidden, tmp_path, saved):
    cfg = _small(name)
    get(cfg["model"]["name"]).figures(run_grid(cfg), tmp_path / "f")
    title = saved[0][1][0]["suptitle"].replace("\n", " ")
    assert hidden in title, title


@pytest.mark.parametrize("name", sorted(_cell_examples()))
def test_tables_fit_a_terminal(name):
    """Each model's printed table of its example cell within 100 columns."""
    model = get(name)
    text = model.format_table(antiamp.simulate(_cell_examples()[name]))
    wide = [ln for ln in text.splitlines() if len(ln) > 100]
    assert not wide, "\n".join(wide)


def test_the_design_fronts_legend_gives_each_entry_its_own_style(tmp_path, saved):
    """antiamp-design's figure with an Amp and an accuracy target: one legend entry for
    the targets' one line style (two entries of one style were indistinguishable)."""
    from cli_runner import run_command

    r = run_command("antiamp-design", ["--judge", "logit", "--lam", "1.5", "--mu", "0.5",
                                       "--min-acc", "0.6", "--jury-sizes", "1,3",
                                       "--n-sim", "20000", "--draws", "50"], tmp_path)
    assert r.returncode == 0, r.stderr
    (path, axes), = [(p, a) for p, a in saved if p.endswith("design.png")]
    assert [lab for lab, _ in dict.fromkeys(axes[0]["legend"]) if "target" in lab] == ["target"]
    _check(saved)


def _meanings(records) -> dict:
    """colour -> the legend labels it carries in one figure, for the colours that carry
    more than one meaning (greys and black, data and reference marks, left out).  A
    colour may name a family whose members its markers tell apart (compare's
    protocols); a bar or band (no marker) of a colour gives it one meaning."""
    from matplotlib.colors import to_rgb

    line_styles = {"-", "--", "-.", ":", "None", "none", "", " "}
    bad = {}
    for path, axes in records:
        seen = {}
        for lab, st in dict.fromkeys(e for ax in axes for e in ax["legend"]):
            try:
                rgb = to_rgb(st[0])
            except ValueError:
                continue
            if max(rgb) - min(rgb) >= 0.05:
                is_line = st[1] in line_styles or st[1].startswith("(")
                mark = st[2] if is_line and st[2] not in ("None", "none", "", " ") else None
                seen.setdefault(st[0], {})[lab] = mark
        for c, labs in seen.items():
            marks = list(labs.values())
            if len(labs) > 1 and (None in marks or len(set(marks)) < len(marks)):
                bad[f"{path} {c}"] = sorted(labs)
    return bad


@pytest.mark.parametrize("name", sorted(_cell_examples()))
def test_one_colour_per_meaning(name, tmp_path, saved):
    """No colour of a cell's figure names two things in its legends (the confidence
    figure's blue was "model" in one panel and "debate" in another)."""
    model = get(name)
    if model.cell_figures is None:
        pytest.skip(f"model {name} draws no figure of one cell")
    model.cell_figures(antiamp.simulate(_cell_examples()[name]), tmp_path / "results")
    bad = _meanings(saved)
    assert not bad, bad


def _title_of(fig) -> str:
    st = getattr(fig, "_suptitle", None)
    return " ".join([st.get_text() if st is not None else ""]
                    + [ax.get_title() for ax in fig.axes]).replace("\n", " ")


@pytest.fixture
def figures(monkeypatch):
    """Every figure saved while the test runs, as it was when saved."""
    out = []
    real = matplotlib.figure.Figure.savefig

    def spy(self, fname, *a, **k):
        if str(fname).endswith(".png"):
            out.append(self)
        return real(self, fname, *a, **k)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    return out


@pytest.mark.parametrize("same", [True, False])
def test_the_escalation_figure_names_a_hidden_curve(same, tmp_path, figures):
    """antiamp-design's escalation.png at rho = 1: escalating when evidence fails is
    random audit (the curves are one); the title says which curve hides which, and
    says nothing when they differ."""
    import pandas as pd

    from antiamp.design import plot_escalation

    budget = np.linspace(0, 1, 6)
    safety = 0.3 + 0.5 * budget
    curve = pd.DataFrame({"flag": ["none"] * 6 + ["no_evidence"] * 6,
                          "budget": np.r_[budget, budget],
                          "safety": np.r_[safety, safety if same else safety ** 2]})
    plot_escalation(curve, {"rule": "majority", "jury_size": 1, "verification": 0.5},
                    tmp_path / "escalation")
    title = _title_of(figures[0])
    said = ("'random audit only (audit rate 0 to 1)' hidden under 'escalate when evidence "
            "fails (audit rate 0 to 1)'")
    assert (said in title) == same, title


def test_the_loop_figures_name_hidden_curves(tmp_path, figures):
    """The loop's safety figure and the Pareto panel of results.png: flag rules with
    the same policies (no evidence to fail) are named, not drawn silently one over
    the other."""
    import yaml

    from antiamp.models.loop.model import plot_safety

    cost = np.linspace(0, 1, 5)
    ds = xr.Dataset(
        {"pareto_cost": (("flag_rule", "level"), np.stack([cost, cost, cost])),
         "pareto_safety": (("flag_rule", "level"),
                           np.stack([0.2 + cost / 2, 0.2 + cost / 2, 0.1 + cost / 3]))},
        coords={"flag_rule": ["none", "no_evidence", "uncertain"]},
        attrs={"config": yaml.safe_dump({"model": {"rho": 1.0}, "judge": {
            "kind": "tiebreak", "b": 0.5, "jury_size": 1}})})
    plot_safety(ds, tmp_path / "results_safety")
    title = _title_of(figures[0])
    assert "'flag: none (audit rate 0 to 1)' hidden under 'flag: no_evidence" in title, title
    assert "flag: uncertain (audit rate 0 to 1)' hidden" not in title


def test_hidden_curves_are_named_from_a_figure_wide_legend(tmp_path, figures):
    """Lines drawn without labels are named from the figure's legend: the colour's
    entry and the (grey) style's entry."""
    from antiamp.plotting import panel_grid, save, shared_legend

    fig, (ax,) = panel_grid(1)
    x = np.arange(4.0)
    ax.plot(x, x, "-", color="C0")
    ax.plot(x, x, "--", color="C1")
    ax.plot(x, x ** 2, "--", color="C0")
    shared_legend(fig, [("consult", "C0"), ("debate", "C1")],
                  [("simulated", "-", None), ("exact", "--", None)])
    fig.suptitle("t")
    save(fig, tmp_path / "f")
    title = _title_of(figures[0])
    assert "'consult, simulated' hidden under 'debate, exact'" in title, title
    assert title.count("hidden under") == 1, title


def test_a_heatmap_axis_that_changes_nothing_is_named(tmp_path, saved):
    """A tie-break judge's grid over rho and mu (which it ignores): every column of a
    panel along mu is the same, and its title says so (two identical mu columns were
    drawn without a word); rho changes the values, and is not named."""
    from antiamp.sweeps.plot import plot_store

    store = _store(tmp_path, "mu", {"model": {"rho": [0.1, 0.5, 0.9]},
                                    "judge": {"mu": [-0.5, 0.5]}}, judge={"kind": "tiebreak"})
    ds = xr.open_zarr(store)
    plot_store(store, ["amp"], out_dir=tmp_path / "f", formats=("png",))
    titles = [ax["title"].replace("\n", " ") for ax in _panels(saved)]
    mu, rho = ds["mu"].attrs.get("symbol", "mu"), ds["rho"].attrs.get("symbol", "rho")
    assert titles and all(f"the same at every {mu}" in t for t in titles), titles
    assert not any(f"the same at every {rho}" in t for t in titles), titles


def test_a_slow_legend_placement_warns_nobody(tmp_path, monkeypatch):
    """A sweep's line figure on a busy machine: matplotlib warns 'Creating legend with
    loc="best" can be slow' when the default placement takes over a second (it reached
    the terminal after a Saltelli sweep).  Every placement here takes two seconds by
    matplotlib's clock; the test's warnings are errors (pyproject.toml)."""
    import types

    import matplotlib.legend

    from antiamp.sweeps.plot import plot_store

    ticks = iter(range(0, 10**6, 2))
    monkeypatch.setattr(matplotlib.legend, "time",
                        types.SimpleNamespace(perf_counter=lambda: float(next(ticks))))
    store = _store(tmp_path, "line", {"model": {"rho": [0.1, 0.4, 0.8]}})
    assert plot_store(store, ["amp"], out_dir=tmp_path / "f", formats=("png",))
