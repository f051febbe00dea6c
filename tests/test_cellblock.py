"""A block of a grid's cells as the engine hands it to a model (``CellBlock``): the same
configs as the grid's cells one by one, columns of any field, distinct combinations;
and the equilibrium model read column by column gives the arrays it reads from configs."""

import dataclasses

import numpy as np
import pytest

from antiamp.evidence_game import CellArrays
from antiamp.sweeps.blocks import plan_grid
from antiamp.sweeps.spec import CellBlock, _replace

GRIDS = {
    "grid": {"model": {"name": "equilibrium", "p": 0.6},
             "sweep": {"axes": {"model": {"c_e": [0.0, 0.25, 0.5], "stance": ["signal", "fixed"]},
                                "judge": {"b": [0.2, 0.8], "kind": ["tiebreak", "logit"]},
                                "welfare": {"alpha": [1.0, 2.0]}}}},
    "sobol": {"model": {"name": "equilibrium", "p": 0.6},
              "sweep": {"design": "sobol", "n_points": 16,
                        "axes": {"model": {"c_e": {"uniform": [0.0, 0.5]}},
                                 "judge": {"b": {"uniform": [0.1, 0.9]}}}}},
}


def _slow_cell(plan, i):
    """Cell ``i`` built as dataclasses.replace would, from the grid's columns."""
    changes: dict = {}
    for a, col in zip(plan.grid.axes, plan.grid.columns):
        s, name = a.path.split(".")
        v = col[i]
        changes.setdefault(s, {})[name] = v.item() if hasattr(v, "item") else v
    return dataclasses.replace(plan.base, **{s: dataclasses.replace(getattr(plan.base, s), **c)
                                             for s, c in changes.items()})


@pytest.mark.parametrize("kind", sorted(GRIDS))
@pytest.mark.parametrize("start, stop", [(0, 5), (7, 16), (3, 4)])
def test_block_cells_and_columns(kind, start, stop):
    plan = plan_grid(GRIDS[kind])
    blk = CellBlock(plan.grid, start, stop)
    assert len(blk) == stop - start
    for i in range(len(blk)):
        want = _slow_cell(plan, start + i)
        assert blk[i] == want == plan.grid.cell(start + i)
        assert blk.where(i) == plan.grid.where(start + i)
    assert blk[-1] == blk[len(blk) - 1]
    assert blk[1:3] == [blk[i] for i in range(1, min(3, len(blk)))]
    with pytest.raises(IndexError):
        blk[len(blk)]
    for path in ("model.c_e", "judge.b", "model.p", "run.seed", "judge.kind"):
        s, name = path.split(".")
        want = [getattr(getattr(blk[i], s), name) for i in range(len(blk))]
        got = blk.field(path)
        assert got.tolist() == want
    reps, inv = blk.distinct(("judge", "protocol"))
    for i in range(len(blk)):
        assert (reps[inv[i]].judge, reps[inv[i]].protocol) == (blk[i].judge, blk[i].protocol)
    keys = {repr((c.judge, c.protocol)) for c in reps}
    assert len(keys) == len(reps)  # each combination once


def test_fast_replace_is_dataclasses_replace():
    plan = plan_grid(GRIDS["grid"])
    for s in ("model", "judge", "welfare", "run"):
        sec = getattr(plan.base, s)
        f = dataclasses.fields(sec)[0]
        new = _replace(sec, {f.name: getattr(sec, f.name)})
        assert new == dataclasses.replace(sec) and new is not sec

    @dataclasses.dataclass
    class Checked:
        x: int = 0

        def __post_init__(self):
            if self.x < 0:
                raise ValueError("x")

    with pytest.raises(ValueError):  # a dataclass with __post_init__: the real replace
        _replace(Checked(), {"x": -1})


@pytest.mark.parametrize("start, stop", [(0, 48), (10, 40)])
def test_equilibrium_reads_a_block_as_its_configs(start, stop):
    plan = plan_grid(GRIDS["grid"])
    blk = CellBlock(plan.grid, start, stop)
    a = CellArrays.of_block(blk)
    b = CellArrays.of_cells([plan.grid.cell(i) for i in range(start, stop)])
    for f in dataclasses.fields(CellArrays):
        x, y = getattr(a, f.name), getattr(b, f.name)
        assert x.dtype == y.dtype and np.array_equal(x, y), f.name


@pytest.mark.parametrize("fields", [("model.c_e",), ("judge.*",), ("judge", "welfare.alpha"),
                                    ("model.p",), ("model.stance", "judge.b")])
@pytest.mark.parametrize("start, stop", [(0, 48), (5, 29)])
def test_kernel_groups_of_a_block_and_of_configs_agree(fields, start, stop):
    """The engine's block answers from its axes; a list of configs is keyed field by
    field: the same groups, in the same order, each group's cells agreeing on the
    fields and two groups never agreeing."""
    from antiamp.layout import kernel_groups

    plan = plan_grid(GRIDS["grid"])
    blk = CellBlock(plan.grid, start, stop)
    configs = [plan.grid.cell(i) for i in range(start, stop)]
    reps_b, inv_b = kernel_groups(blk, fields)
    reps_l, inv_l = kernel_groups(configs, fields)
    assert inv_b.tolist() == inv_l.tolist() and reps_b == reps_l

    def key(c):
        out = []
        for f in fields:
            s, _, name = f.partition(".")
            sec = getattr(c, s)
            out.append(repr(sec) if name in ("", "*") else getattr(sec, name))
        return tuple(out)

    for i, c in enumerate(configs):
        assert key(c) == key(reps_l[inv_l[i]])
    assert len({key(r) for r in reps_l}) == len(reps_l)
    assert inv_l[0] == 0 and all(inv_l[:i].max() + 1 >= inv_l[i] for i in range(1, len(inv_l)))


def test_a_grid_store_resumes_whatever_the_threads(tmp_path):
    """Threads, the instances a kernel call and the progress bar change no number:
    a store written with one setting is the same run for another (a different seed
    is not)."""
    from antiamp.sweeps.blocks import EngineError, run_grid_store

    cfg = {"model": {"name": "colmad"}, "judge": {"kind": "logit"},
           "run": {"n_instances": 2000, "n_threads": 1},
           "sweep": {"axes": {"colmad": {"rounds": [1, 2]}}}}
    store = tmp_path / "g.zarr"
    a = run_grid_store(cfg, store, progress=False, log=lambda *x: None).load()
    msgs: list = []
    other = {**cfg, "run": {"n_instances": 2000, "n_threads": 2, "chunk_size": 999,
                            "progress": False}}
    b = run_grid_store(other, store, progress=False, log=msgs.append).load()
    assert any("is complete" in m for m in msgs), msgs
    assert a.identical(b)
    with pytest.raises(EngineError, match="different run"):
        run_grid_store({**cfg, "run": {"n_instances": 2000, "seed": 7}}, store,
                       progress=False, log=lambda *x: None)
