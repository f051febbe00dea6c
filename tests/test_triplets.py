"""A block's metric triplets (value, standard error, exact value) stacked at once
(``antiamp.layout.stacker`` over ``cell_triplets``) hold the same arrays, to the bit, as
each cell's triplets converted on their own and stacked; and a panel block solved at
once gives every cell's values as solved alone."""

import numpy as np
import pytest

from antiamp.layout import cell_triplets, stacker


def _one_by_one(res, shape, k):
    """The reference: each cell's value of ``k`` converted on its own, then stacked."""
    a = np.stack([np.asarray(r[k]) for r in res])
    return a.reshape(tuple(shape) + a.shape[1:])


def _cells(rng, n, simulated=True):
    res = []
    for _ in range(n):
        ex = {"amp": rng.random(2).tolist(), "cost": float(rng.random()),
              "calls": int(rng.integers(1, 9))}  # lists, floats and ints, as models give
        sim = ({k: (np.asarray(v, float) + rng.normal(size=np.shape(v)) * 1e-3,
                    np.full(np.shape(v), 1e-3) * rng.random())
                for k, v in ex.items()} if simulated else None)
        r = cell_triplets(ex, sim)
        r["extra"] = np.float64(rng.random())
        res.append(r)
    return res


@pytest.mark.parametrize("simulated", [True, False, "mixed"])
def test_stacked_triplets_match_cell_by_cell(simulated):
    rng = np.random.default_rng(3)
    res = _cells(rng, 6, simulated is True)
    if simulated == "mixed":  # some cells simulated, some not: read one by one
        res[:3] = _cells(rng, 3, True)
    shape = (2, 3)
    st = stacker(res, shape)
    for k in ("amp", "amp_se", "amp_exact", "cost", "cost_se", "cost_exact", "calls",
              "calls_exact", "extra"):
        got, want = st(k), _one_by_one(res, shape, k)
        assert got.dtype == want.dtype and got.shape == want.shape, k
        assert np.array_equal(got, want, equal_nan=True), k
    if simulated is False:
        assert np.isnan(st("amp")).all() and np.isnan(st("cost_se")).all()


def test_a_triplet_set_by_the_model_wins():
    rng = np.random.default_rng(4)
    res = _cells(rng, 3)
    res[1]["cost"] = np.float64(-1.0)  # a model's own value replaces the simulated one
    st = stacker(res, (3,))
    assert st("cost")[1] == -1.0
    assert st("cost")[0] == res[0]["cost"] and st("cost")[2] == res[2]["cost"]


def test_panel_block_matches_cells_alone():
    """The panel's block solves its tables once per distinct judge/protocol/panel
    combination: every cell's values as when it is solved alone."""
    from antiamp.models.panel import core as pnm
    from antiamp.sweeps.blocks import plan_grid

    plan = plan_grid({"model": {"name": "panel"},
                      "sweep": {"axes": {"model": {"rho": [0.1, 0.5, 0.9], "p": [0.6, 0.9]},
                                         "judge": {"b": [0.3, 0.7]}}},
                      "run": {"n_instances": 1000}})
    cells = [plan.grid.cell(i) for i in range(plan.grid.n_cells)]
    run = plan.base.run
    block = pnm.solve_cells(cells, "exact", run, [])
    for i, c in enumerate(cells):
        alone = pnm.solve_cells([c], "exact", run, [])
        for k, v in alone.items():
            assert np.array_equal(np.asarray(block[k])[i], np.asarray(v)[0], equal_nan=True), k


def test_simulated_pairs_are_each_cells_triplets_with_unsimulated_cells_nan():
    """``simulated_pairs`` (a block's simulated values and standard errors from its
    cells') against each cell's own triplets, cells simulated and not in one block."""
    from antiamp.layout import simulated_pairs

    rng = np.random.default_rng(7)
    res = _cells(rng, 3) + _cells(rng, 2, simulated=False) + _cells(rng, 2)
    exact = {k: np.array([np.asarray(r.exact[k], float) for r in res])
             for k in res[0].exact}
    got = simulated_pairs([r.sim for r in res], exact)
    assert sorted(got) == sorted(f"{k}{s}" for k in exact for s in ("", "_se"))
    for k, a in got.items():
        ref = _one_by_one(res, (len(res),), k)
        assert a.shape == ref.shape and a.dtype == np.float64, k
        assert np.array_equal(a, ref, equal_nan=True), k
    assert np.isnan(got["amp"][3:5]).all() and np.isfinite(got["amp"][:3]).all()
