"""The GPU kernels at full size on a real CUDA GPU: the same counts as the CPU kernels.

Skipped where numba.cuda finds no GPU (CI, laptops); ``tests/test_gpu_sim.py`` runs
the same launchers on numba's CUDA simulator there.  Sizes are large enough that
every thread of a full grid loops several times and launches split.
"""

import numpy as np
import pytest

from antiamp.kernels.gpu import simulator, status

_ok, _why = status()
pytestmark = pytest.mark.skipif(not _ok or simulator(),
                                reason=f"needs a CUDA GPU: {_why}" if not _ok
                                else "numba's CUDA simulator: tests/test_gpu_sim.py runs it")

N = 1 << 24


@pytest.fixture(scope="module")
def key():
    from antiamp.kernels.rng import split_seed

    return split_seed(20240917)


def test_baseline_one_cell_and_cells(key):
    from antiamp.kernels import baseline as kb
    from antiamp.kernels.gpu import baseline as gb
    from antiamp.kernels.rng import bernoulli_thresholds

    thr = bernoulli_thresholds([0.5, 0.8, 0.3, 0.6, 0.4, 0.7])
    start = (1 << 32) - N // 3  # across the counter's high word
    cpu = kb.class_counts(thr, 0, 0, start, N + 7, *key, np.uint64(kb.STREAM), 64)
    for blocks, step in ((0, 0), (97, N // 3)):
        gpu = gb.class_counts(thr, 0, 0, start, N + 7, *key, kb.STREAM, blocks=blocks, step=step)
        assert np.array_equal(gpu, cpu)
    rng = np.random.default_rng(1)
    cells = np.stack([bernoulli_thresholds(rng.uniform(0, 1, 6)) for _ in range(45)])
    fixed = (np.arange(45) % 3 == 0).astype(np.int64)
    af = (np.arange(45) % 2).astype(np.int64)
    cpu = kb.class_counts_cells(cells, fixed, af, 11, N // 4, *key, np.uint64(0), 64)
    assert np.array_equal(gb.class_counts_cells(cells, fixed, af, 11, N // 4, *key, 0), cpu)


def test_philox_floor(key):
    from antiamp.kernels import baseline as kb
    from antiamp.kernels.gpu import baseline as gb

    cpu = np.bitwise_xor.reduce(kb.bare_philox(5, N, *key, np.uint64(3), 64))
    assert int(gb.bare_philox(5, N, *key, 3)) == int(cpu)


def test_signals_and_portfolio(key):
    from antiamp.kernels import correlated as kc
    from antiamp.kernels import portfolios as kp
    from antiamp.kernels.gpu import correlated as gc
    from antiamp.kernels.gpu import portfolios as gp
    from antiamp.kernels.rng import bernoulli_thresholds

    rng = np.random.default_rng(2)
    thr = np.empty((40, 11), np.uint64)
    for c in range(40):
        cum = np.minimum(np.cumsum(rng.dirichlet(np.ones(4), 2), axis=1)[:, :3], 1).ravel()
        thr[c] = bernoulli_thresholds([rng.uniform(), *cum, *rng.uniform(0, 1, 4)])
    cpu = kc.signal_class_counts(thr, 3, N // 4, *key, np.uint64(kc.STREAM), 64)
    assert np.array_equal(gc.signal_class_counts(thr, 3, N // 4, *key, kc.STREAM), cpu)
    for budget in (4, 40):
        t = [bernoulli_thresholds(rng.uniform(0, 1, 5)) for _ in range(3)]
        cpu = kp.portfolio_class_counts_cells(*t, budget, 0, N // 16, *key, np.uint64(kp.STREAM),
                                              64)
        gpu = gp.portfolio_class_counts_cells(*t, budget, 0, N // 16, *key, kp.STREAM)
        assert np.array_equal(gpu, cpu), budget
