"""Scenario discovery (antiamp-discover): PRIM boxes recover a region planted in a
synthetic store, printed in the fields' own names; bad conditions refused."""

import json

import numpy as np
import pytest
import xarray as xr

pytest.importorskip("ema_workbench")

from antiamp._version import __version__
from antiamp.sweeps.discover import DiscoverError, discover
from cli_runner import run_command


def _store(path, region=lambda rho, b, p: (rho > 0.625) & (b < 0.275)):
    """A store of the layout sweeps write (axes, config paths, protocol) with amp_gap
    negative in ``region`` of a 21 x 21 x 3 grid."""
    rho, b, p = np.linspace(0, 1, 21), np.linspace(0, 1, 21), np.array([0.6, 0.8, 1.0])
    R, B, P = np.meshgrid(rho, b, p, indexing="ij")
    rng = np.random.default_rng(0)
    gap = np.where(region(R, B, P), -0.1, 0.1) + rng.normal(0, 0.01, R.shape)
    amp_d = 0.3 + 0 * R
    ds = xr.Dataset(
        {"amp_gap": (("rho", "b", "p"), gap),
         "amp": (("rho", "b", "p", "protocol"), np.stack([amp_d + gap, amp_d], axis=-1))},
        coords={"rho": ("rho", rho, {"config_path": "model.rho"}),
                "b": ("b", b, {"config_path": "judge.b"}),
                "p": ("p", p, {"config_path": "model.p"}),
                "protocol": ["consult", "debate"]},
        attrs={"antiamp_version": __version__, "complete": 1,
               "axes": json.dumps(["model.rho", "judge.b", "model.p"])})
    ds.to_zarr(path, zarr_format=2)  # the format sweeps write
    return path


def test_prim_recovers_a_planted_region(tmp_path):
    store = _store(tmp_path / "s.zarr")
    (box,), inputs, holds, _ = discover(store, "amp_gap < 0")
    assert holds.sum() == 8 * 6 * 3  # rho 0.65 ... 1, b 0 ... 0.25
    assert set(box.limits) == {"model.rho", "judge.b"}  # p plays no part
    # the planted edges within half a grid step (0.025): between the last value
    # outside and the first inside
    assert box.limits["model.rho"][0] == pytest.approx(0.625, abs=0.025)
    assert box.limits["model.rho"][1] >= 1.0
    assert box.limits["judge.b"][0] <= 0.0
    assert box.limits["judge.b"][1] == pytest.approx(0.275, abs=0.025)
    assert box.coverage == 1.0 and box.density == 1.0
    # the same condition written per protocol
    (box2,), *_ = discover(store, "amp_consult < amp_debate")
    assert box2.limits == box.limits


def test_a_store_of_one_axis_is_read(tmp_path):
    """A sweep over one parameter (its axis the store's only case dimension): PRIM on that
    axis, not a KeyError for the coordinate (renaming the dimension renamed it too)."""
    rho = np.linspace(0, 1, 21)
    gap = np.where(rho > 0.625, -0.1, 0.1)
    ds = xr.Dataset({"amp_gap": (("rho",), gap)},
                    coords={"rho": ("rho", rho, {"config_path": "model.rho"})},
                    attrs={"antiamp_version": __version__, "complete": 1,
                           "axes": json.dumps(["model.rho"])})
    ds.to_zarr(tmp_path / "s.zarr", zarr_format=2)
    (box,), inputs, holds, paths = discover(tmp_path / "s.zarr", "amp_gap < 0")
    assert paths == ["model.rho"] and holds.sum() == 8
    assert inputs["model.rho"].tolist() == rho.tolist()
    assert box.limits["model.rho"][0] == pytest.approx(0.625, abs=0.025)


def test_the_cli_prints_the_box_in_the_fields_names(tmp_path):
    store = _store(tmp_path / "s.zarr", lambda rho, b, p: (b > 0.525) & (p < 0.7))
    r = run_command("antiamp-discover", [store, "--where", "amp_gap < 0", "--out",
                                         tmp_path / "o"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "coverage 1.000, density 1.000" in r.stdout
    assert "tie-break bias b (judge.b) in [0.525, 1]" in r.stdout
    assert "protagonist accuracy p (model.p) in [0.6, 0.7]" in r.stdout
    assert "model.rho" not in r.stdout
    assert (tmp_path / "o" / "discover.png").stat().st_size > 0


@pytest.mark.parametrize("where,msg", [
    ("nope < 0", "name 'nope' is not defined; the store's variables are amp_consult, "
                 "amp_debate, amp_gap"),
    ("amp_gap + 1", "is not a condition"),
    ("amp_gap < -5", "the condition holds in 0 of 1323 cases"),
    ("amp_gap <", "cannot be evaluated"),
])
def test_bad_conditions_are_refused(tmp_path, where, msg):
    store = _store(tmp_path / "s.zarr")
    r = run_command("antiamp-discover", [store, "--where", where, "--out", tmp_path / "o"],
                    tmp_path)
    assert r.returncode == 2 and msg in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


def test_not_a_store_is_refused(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(DiscoverError, match="is not an antiamp store"):
        discover(tmp_path / "d", "amp_gap < 0")


def _printed_limits(text: str) -> list:
    """The boxes' limits as ``format_boxes`` prints them: [{path: (lo, hi)}, ...]."""
    import re

    boxes = []
    for line in text.splitlines():
        if line.startswith("box "):
            boxes.append({})
        m = re.search(r"\((\S+)\) in \[(\S+), (\S+)\]$", line)
        if m:
            boxes[-1][m.group(1)] = (float(m.group(2)), float(m.group(3)))
    return boxes


def test_the_figure_draws_every_box_at_its_printed_limits(tmp_path):
    """The sweeps guide's example (amp_gap = rho (1 - b) on a 6 x 6 grid, two boxes):
    the rectangles read back from the figure have the printed edges, one per box."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from antiamp.sweeps.discover import draw_boxes, format_boxes

    rho, b = np.linspace(0, 1, 6), np.linspace(0, 1, 6)
    gap = rho[:, None] * (1 - b[None, :])
    ds = xr.Dataset(
        {"amp_gap": (("rho", "b"), gap)},
        coords={"rho": ("rho", rho, {"config_path": "model.rho"}),
                "b": ("b", b, {"config_path": "judge.b"})},
        attrs={"antiamp_version": __version__, "complete": 1,
               "axes": json.dumps(["model.rho", "judge.b"])})
    ds.to_zarr(tmp_path / "s.zarr", zarr_format=2)
    boxes, inputs, holds, paths = discover(tmp_path / "s.zarr", "amp_gap < 0.1", n_boxes=2)
    printed = _printed_limits(format_boxes(boxes, "amp_gap < 0.1", int(holds.sum()),
                                           len(holds)))
    assert len(printed) == 2
    fig, dims = draw_boxes(inputs, holds, boxes, paths)
    ax = fig.axes[0]
    rects = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(rects) == len(printed)
    for r, lim in zip(rects, printed):
        drawn = {dims[0]: (r.get_x(), r.get_x() + r.get_width()),
                 dims[1]: (r.get_y(), r.get_y() + r.get_height())}
        for d in dims:
            if d in lim:  # printed to 4 significant digits
                assert drawn[d] == pytest.approx(lim[d], rel=5e-4, abs=5e-5), (d, drawn, lim)
            else:  # unrestricted: the whole grid
                assert drawn[d][0] <= inputs[d].min() and drawn[d][1] >= inputs[d].max()
    plt.close(fig)
