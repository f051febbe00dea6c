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


def test_float_kernels_within_1e12(key):
    """messages, options, the panel's tables, confidence, redeliberation: counts equal,
    sums within 1e-12 relative of the CPU's, the same bits on a second run."""
    from antiamp.kernels import confidence as kf
    from antiamp.kernels import messages as km
    from antiamp.kernels import panel as kpn
    from antiamp.kernels import redeliberation as kr
    from antiamp.kernels.gpu import confidence as gf
    from antiamp.kernels.gpu import messages as gm
    from antiamp.kernels.gpu import panel as gpn
    from antiamp.kernels.gpu import redeliberation as gr
    from antiamp.kernels.rng import bernoulli_thresholds
    from antiamp.models.options.config import OptionsConfig
    from antiamp.models.options.core import simulate_cells

    rng = np.random.default_rng(3)
    C = 6
    cols = [bernoulli_thresholds(rng.uniform(0, 1, C)), bernoulli_thresholds(rng.uniform(0, 1, C)),
            rng.uniform(0.5, 2, C), rng.uniform(-1, 1, C), rng.uniform(0, 2, C),
            rng.uniform(0, 1, C), rng.uniform(0, 1, C), rng.uniform(-1, 0, C),
            rng.uniform(0.5, 1.5, C), np.arange(C) % 2 == 1, rng.uniform(0, 0.2, C),
            rng.uniform(0, 1, C)]
    n_blocks = max(1, N // 16 // km.BLOCK)
    cc, sc = np.zeros((C, 8), np.int64), np.zeros((C, 4, 8))
    km.message_sums_cells(*cols, 3, n_blocks, *key, np.uint64(km.STREAM), cc, sc)
    runs = []
    for _ in range(2):
        cg, sg = np.zeros((C, 8), np.int64), np.zeros((C, 4, 8))
        gm.message_sums_cells(*cols, 3, n_blocks, *key, km.STREAM, cg, sg)
        assert np.array_equal(cg, cc)
        np.testing.assert_allclose(sg, sc, rtol=1e-12, atol=0)
        runs.append(sg)
    assert np.array_equal(runs[0], runs[1])

    rows = [(0.7, 0.3, 1.5, 0.2, 2.0, OptionsConfig(K=4, antagonist="best_of_k", k_examine=2)),
            (0.8, 0.2, 2.0, -0.3, 3.0, OptionsConfig(K=3, antagonist="attack"))]
    gpu = simulate_cells(rows, N // 64, 11, device="cuda")
    cpu = simulate_cells(rows, N // 64, 11, device="cpu")
    for (g, _), (c, _) in zip(gpu, cpu):
        np.testing.assert_allclose(g, c, rtol=1e-12, atol=0)

    from scipy import special

    with np.errstate(divide="ignore"):
        zq = special.ndtri(np.array([0.0, 0.3, 0.7, 1.0]))
    args = (zq, 9, kpn.RULE_MAJORITY, 5, 0.5, 0.25, 0.3, 0.5, N // 256, *key,
            np.uint64(kpn.STREAM))
    c1, c2, _ = kpn.panel_endorsement(*args)
    g1, g2, _ = gpn.panel_endorsement(*args)
    np.testing.assert_allclose(g1, c1, rtol=1e-12, atol=0)
    np.testing.assert_allclose(g2, c2, rtol=1e-12, atol=0)

    rep_p = np.array([0.3, 5.0, 0.6, 4.0, 6.0, 0.2, 0.3])
    rep_a = np.array([-0.2, 3.0, 0.5, 4.0, 7.0, 0.1, 0.4])
    args = (N // 16 + 5, *key, 0.4, 0.6, 0.3, rep_p, rep_a, 1.2, 0.1, 2.0, 0.05, 1, 0.0, 0.5,
            np.ones(1), np.ones(1), np.empty(0))
    for g, c in zip(gf.confidence_kernel(*args), kf.confidence_kernel(*args)):
        np.testing.assert_allclose(g.sum(axis=0), c.sum(axis=0), rtol=1e-12, atol=0)

    args = (N // 64 + 7, *key, 0.4, 0.7, np.array([8.0, 2.0]), np.array([5.0, 9.0]), 0.5, 1.5,
            5, 0.6, 0.3, 0.2, 18, np.array([3.0, 8.0, 15.0]), np.array([1.0, 0.9, 0.7, 0.4]),
            60.0, 10.0, 3.0, 2.0, 5, np.array([[0.5, 0.2], [0.8, 0.5]]))
    for g, c in zip(gr.redeliberation_kernel(*args), kr.redeliberation_kernel(*args)):
        np.testing.assert_allclose(g.sum(axis=0), c.sum(axis=0), rtol=1e-12, atol=0)


def test_colmad_counts(key):
    """ColMAD's class counts and rounds-used sums, every launch split and grid."""
    from antiamp.kernels import colmad as kc
    from antiamp.kernels.gpu import colmad as gcm

    pt = np.array([[kc.threshold(q) for q in row] for row in ((0.4, 0.5, 0.9), (0.1, 0.3, 0.6))],
                  np.uint64)
    args = tuple(np.uint64(kc.threshold(q)) for q in (0.3, 0.6, 0.4))
    for R in (1, 5):
        a = (np.uint64(kc.threshold(0.2)), pt, *args, R)
        cpu = kc.colmad_counts(N + 3, *key, *a, 64)
        for blocks, step in ((0, 0), (97, N // 3)):
            assert np.array_equal(gcm.colmad_counts(N + 3, *key, *a, blocks=blocks, step=step),
                                  cpu), (R, blocks)


def test_mediation_sums(key):
    """Mediation's integer sums, every launch split and grid: the shared histograms
    (per warp, per block) and the global adds of P > 21 classes, and the sequential
    inversions past the tables (many citations; residual counts past N_TAB)."""
    from antiamp.kernels import mediation as km
    from antiamp.kernels.gpu import mediation as gmd

    for flaws, surv, iters, P, fa, M, classes, n in (
            (2.0, 0.58, 3, 3, 0.05, 8, (0.7239, 0.0381, 0.1628, 0.0752, 0.0), N + 3),
            (4.0, 0.7, 5, 12, 0.1, 40, (0.3, 0.1, 0.2, 0.2, 0.2), N // 4 + 5),
            (3.0, 0.6, 2, 30, 0.05, 5, (0.5, 0.1, 0.2, 0.1, 0.1), N // 16 + 1),
            (2.0, 0.58, 3, 3, 0.05, 200, (0.5, 0.1, 0.2, 0.1, 0.1), N // 16 + 9),
            (50.0, 1.0, 90, 3, 1.0, 8, (0.5, 0.1, 0.2, 0.1, 0.1), N // 64 + 7)):
        t = km.tables(flaws, surv, iters, P, 0.5, 0.05, 0.8, fa, M, classes)
        G_p, S_p, G_b, S_b, t_dis, t_fa, t_erase, G_c, S_c, q = t
        a = (iters, P, M, surv, 0.5, 0.05, G_p, S_p, G_b, S_b, t_dis, t_fa, t_erase, q, G_c,
             S_c)
        cpu = km.mediation_sums(n, *key, *a, 64)
        for blocks, step in ((0, 0), (97, n // 3)):
            gpu = gmd.mediation_sums(n, *key, *a, blocks=blocks, step=step)
            assert np.array_equal(gpu[0], cpu[0]) and np.array_equal(gpu[1], cpu[1]), \
                (P, M, blocks)


def test_loop_paths(key):
    """The closed loop's paths, bit for bit: both learners, with a budget and rho's
    feedback, several tiles a path and path chunks."""
    from antiamp.kernels import loop as kl
    from antiamp.kernels.gpu import loop as gl

    J_c, J_d = np.array([0.3, 0.8]), np.array([[0.5, 0.2], [0.9, 0.6]])
    flag_c = np.array([0.7, 0.2])
    paths = max(2, N >> 15)
    for learner, batch, types, chunk in ((kl.CALIBRATED, N >> 7, 1, 0),
                                         (kl.MAJORITY, N >> 15, 300, paths // 7)):
        args = (learner, 20, batch, types, paths, 0.3, 0.05, 0.6, 0.7, 0.02, 0.2, 0.3, 0.9, 0.8,
                0.7, J_c, J_d, 0.1, flag_c, 0.4, J_c, True, *key)
        cpu = kl.loop_paths(*args)
        for gpu in (gl.loop_paths(*args), gl.loop_paths(*args, blocks=7, chunk=chunk, cases=3)):
            for g, c in zip(gpu, cpu):
                assert np.array_equal(g, c), learner
