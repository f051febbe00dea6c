"""The GPU launchers against the CPU kernels, run by ``tests/test_gpu_sim.py`` in a
process of its own with ``NUMBA_ENABLE_CUDASIM=1`` (numba's CUDA simulator runs the
kernels as plain Python on the CPU), so that the simulator never reaches the numba
state of the other tests.

Each check raises AssertionError on a mismatch; ``python gpu_sim_checks.py NAME``
runs one, and prints ``ok NAME`` when it passes.
"""

import os
import sys

import numpy as np

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "run under NUMBA_ENABLE_CUDASIM=1"

from antiamp.kernels import baseline as kb  # noqa: E402
from antiamp.kernels.gpu import baseline as gb  # noqa: E402
from antiamp.kernels.rng import bernoulli_thresholds, split_seed  # noqa: E402

K0, K1 = split_seed(0x1234_5678_9ABC)
RNG = np.random.default_rng(42)


def _thr(x_inside: bool):
    q = RNG.uniform(0.05, 0.95, 6)
    if not x_inside:  # presentation probabilities at 0 or 1: the kernels skip slots 4-5
        q[3:] = RNG.integers(0, 2, 3)
    return bernoulli_thresholds(q)


def check_one_cell():
    # Odd counts, offsets past 2**32 (the counter's high word), several launches and
    # grid sizes, fixed and signal stances, presentation probabilities inside and at
    # the ends.
    cases = [(0, 1, 0, True, 1, 0), (17, 1001, 3, True, 333, 1), (2**32 - 300, 777, 0, False, 0, 0),
             (5, 999, 2, True, 0, 7)]
    for start, count, blocks, x_inside, step, stream in cases:
        for fixed, af in ((0, 0), (1, 1), (1, 0)):
            thr = _thr(x_inside)
            g = gb.class_counts(thr, fixed, af, start, count, K0, K1, stream, blocks=blocks,
                                step=step)
            c = kb.class_counts(thr, fixed, af, start, count, K0, K1, np.uint64(stream), 3)
            assert g.dtype == np.int64 and g.sum() == count
            assert np.array_equal(g, c), (start, count, blocks, fixed, af, g, c)


def check_cells():
    # More cells than one pass of the GPU kernel holds (CELL_TILE), mixed stances.
    n_cells = gb.CELL_TILE + 3
    thr = np.stack([_thr(i % 3 == 0) for i in range(n_cells)])
    fixed = (np.arange(n_cells) % 4 == 1).astype(np.int64)
    af = (np.arange(n_cells) % 2).astype(np.int64)
    for start, count, blocks, step in ((11, 301, 2, 150), (2**32 - 50, 123, 0, 0)):
        g = gb.class_counts_cells(thr, fixed, af, start, count, K0, K1, 0, blocks=blocks,
                                  step=step)
        c = kb.class_counts_cells(thr, fixed, af, start, count, K0, K1, np.uint64(0), 3)
        assert np.array_equal(g, c), (start, count)
        assert (g.sum(axis=1) == count).all()


def check_floor():
    for start, count in ((0, 1000), (2**32 - 7, 333)):
        g = gb.bare_philox(start, count, K0, K1, 0, blocks=2)
        c = np.bitwise_xor.reduce(kb.bare_philox(start, count, K0, K1, np.uint64(0), 3))
        assert int(g) == int(c), (start, count, g, c)


def check_signals():
    from antiamp.kernels import correlated as kc
    from antiamp.kernels.gpu import correlated as gc

    n_cells = gc.CELL_TILE + 2
    thr = np.empty((n_cells, 11), np.uint64)
    for c in range(n_cells):
        joint = RNG.dirichlet(np.ones(4), 2)  # Pr(s_P, s_A | omega) for omega = 0, 1
        cum = np.minimum(np.cumsum(joint, axis=1)[:, :3], 1.0).ravel()
        thr[c] = bernoulli_thresholds([RNG.uniform(0.1, 0.9), *cum, *RNG.uniform(0, 1, 4)])
    for start, count, blocks, step, cells in ((3, 401, 2, 200, slice(None)),
                                              (2**32 - 9, 251, 0, 0, slice(0, 1))):
        g = gc.signal_class_counts(thr[cells], start, count, K0, K1, kc.STREAM, blocks=blocks,
                                   step=step)
        c = kc.signal_class_counts(thr[cells], start, count, K0, K1, np.uint64(kc.STREAM), 3)
        assert np.array_equal(g, c), (start, count)
        assert (g.sum(axis=1) == count).all()
    one = kc.signal_class_counts_one(thr[0], 3, 401, K0, K1, np.uint64(kc.STREAM), 3)
    assert np.array_equal(gc.signal_class_counts(thr[0], 3, 401, K0, K1, kc.STREAM)[0], one)


def check_portfolio():
    from antiamp.kernels import portfolios as kp
    from antiamp.kernels.gpu import portfolios as gp

    # Budget 4: several cells a pass, a histogram copy per warp; budget 30: one copy
    # per block; budget 0: no items.
    for budget, n_cells, start, count, blocks in ((4, 7, 5, 333, 2), (30, 2, 2**32 - 3, 97, 0),
                                                  (0, 3, 0, 55, 1)):
        t = [bernoulli_thresholds(RNG.uniform(0, 1, n_cells)) for _ in range(3)]
        g = gp.portfolio_class_counts_cells(*t, budget, start, count, K0, K1, kp.STREAM,
                                            blocks=blocks, step=count // 2 + 1)
        c = kp.portfolio_class_counts_cells(*t, budget, start, count, K0, K1,
                                            np.uint64(kp.STREAM), 3)
        assert np.array_equal(g, c), (budget, start, count)
        assert (g.sum(axis=1) == count).all()


def check_messages():
    """Counts equal; float sums within 1e-12 relative of the CPU's (the GPU adds a
    canonical block's terms in another order, and its exp/log/cos/sin are CUDA's);
    the GPU's own sums the same bits whatever its grid."""
    from antiamp.kernels import messages as km
    from antiamp.kernels.gpu import messages as gm

    C = gm.TILE + 1  # two passes of cells
    cols = [bernoulli_thresholds(RNG.uniform(0, 1, C)), bernoulli_thresholds(RNG.uniform(0, 1, C)),
            RNG.uniform(0.5, 2, C), RNG.uniform(-1, 1, C), RNG.uniform(0, 2, C),
            RNG.uniform(0, 1, C), RNG.uniform(0, 1, C), RNG.uniform(-1, 0, C),
            RNG.uniform(0.5, 1.5, C), np.arange(C) % 2 == 1, RNG.uniform(0, 0.2, C),
            RNG.uniform(0, 1, C)]
    first, n_blocks = (1 << 20) - 1, 2  # two canonical blocks across 2**32 instances
    cc, sc = np.zeros((C, 8), np.int64), np.zeros((C, 4, 8))
    km.message_sums_cells(*cols, first, n_blocks, K0, K1, np.uint64(km.STREAM), cc, sc)
    runs = []
    for blocks in (1, 2):
        cg, sg = np.zeros((C, 8), np.int64), np.zeros((C, 4, 8))
        gm.message_sums_cells(*cols, first, n_blocks, K0, K1, km.STREAM, cg, sg, blocks=blocks)
        assert np.array_equal(cg, cc)
        assert cg.sum() == C * n_blocks * km.BLOCK
        np.testing.assert_allclose(sg, sc, rtol=1e-12, atol=0)
        runs.append(sg)
    assert np.array_equal(runs[0], runs[1])


def check_options():
    """Count rows equal, other sums within 1e-12 relative of the CPU's; the GPU's own
    sums the same bits whatever its grid."""
    from antiamp.kernels.gpu import options as go
    from antiamp.models.options.config import OptionsConfig
    from antiamp.models.options.core import simulate_cells

    rows = [(0.7, 0.3, 1.5, 0.2, 2.0, OptionsConfig(K=4, antagonist="assigned")),
            (0.6, 0.5, 1.0, 0.0, 1.0, OptionsConfig(K=4, antagonist="best_of_k", k_examine=2,
                                                     distractor_weight=0.3,
                                                     distractor_bias=0.4)),
            (0.8, 0.2, 2.0, -0.3, 3.0, OptionsConfig(K=3, antagonist="attack")),
            (0.55, 0.4, 700.0, 0.1, 2.0, OptionsConfig(K=4, antagonist="best_of_k",
                                                        k_examine=3, near_miss_loss=0.5))]
    seen = []
    real = go.option_sums_cells

    def spy(*a, **k):
        seen.append(a)
        return real(*a, **k)

    go.option_sums_cells = spy
    try:
        gpu = simulate_cells(rows, 2 * 4096, 11, device="cuda")
    finally:
        go.option_sums_cells = real
    cpu = simulate_cells(rows, 2 * 4096, 11, device="cpu")
    counted = np.zeros((2, 12), bool)
    counted[:, [1, 3, 7, 11]] = True
    counted[1, [8, 9]] = True
    for (g, ng), (c, nc) in zip(gpu, cpu):
        assert ng == nc == 2 * 4096
        assert np.array_equal(g[counted], c[counted])
        np.testing.assert_allclose(g, c, rtol=1e-12, atol=0)
    assert len(seen) == 2  # one pass per number of options K
    a = seen[0]
    acc = [np.zeros_like(np.asarray(a[-1])) for _ in range(2)]
    for blocks, out in zip((1, 2), acc):
        real(*a[:-1], out, blocks=blocks)
    assert np.array_equal(acc[0], acc[1])


def check_panel():
    """The panel's Monte Carlo sums within 1e-12 relative of the CPU's (the same
    additions in the same order; only log/cos/sin/erfc and fused multiply-adds may
    differ), the same bits whatever the GPU's grid; every aggregation rule."""
    from antiamp.kernels import panel as kp
    from antiamp.kernels.gpu import panel as gpn

    q = np.array([0.0, 0.3, 0.5, 0.7, 0.95, 1.0])
    with np.errstate(divide="ignore"):
        from scipy import special

        zq = special.ndtri(q)
    for n, rule, need, icc, bias_sd in ((5, kp.RULE_MAJORITY, 3, 0.3, 0.5),
                                        (4, kp.RULE_MAJORITY, 3, 0.2, 0.0),
                                        (3, kp.RULE_UNANIMITY, 3, 1.0, 0.4),
                                        (6, kp.RULE_CONFIDENCE, 0, 0.5, 0.3)):
        args = (zq, n, rule, need, 0.5, 0.25, icc, bias_sd, 2 * kp.PANEL_BLOCK, K0, K1,
                np.uint64(kp.STREAM))
        c1, c2, cm = kp.panel_endorsement(*args)
        runs = [gpn.panel_endorsement(*args, blocks=b) for b in (1, 2)]
        for g1, g2, gm in runs:
            assert gm == cm
            np.testing.assert_allclose(g1, c1, rtol=1e-12, atol=0)
            np.testing.assert_allclose(g2, c2, rtol=1e-12, atol=0)
        assert np.array_equal(runs[0][0], runs[1][0]) and np.array_equal(runs[0][1], runs[1][1])


def check_confidence():
    """Sums within 1e-12 relative of the CPU's, a partial last block, a jury with a
    shared latent (quadrature and table) and one of judges that lean (its table), the
    same bits whatever the GPU's grid."""
    from antiamp.kernels import confidence as kf
    from antiamp.kernels.gpu import confidence as gf
    from antiamp.models.confidence.core import latent_nodes

    rep_p = np.array([0.3, 5.0, 0.6, 4.0, 6.0, 0.2, 0.3])
    rep_a = np.array([-0.2, 3.0, 0.5, 4.0, 7.0, 0.1, 0.4])
    # (The quadrature runs per instance: a few hundred instances on the simulator.)
    from antiamp.models.confidence.core import lean_table

    for jury_n, icc, tabled, n in ((1, 0.0, False, kf.BLOCK + 1001), (4, 0.3, False, 301),
                                   (5, 0.3, True, 777), (3, 0.3, "lean", 555)):
        gx, gw = latent_nodes(icc)
        table = kf.jury_table(jury_n, icc, 0.5, gx, gw) if tabled else np.empty(0)
        if tabled == "lean":
            gx, gw, table = lean_table(jury_n, icc, 0.5, [0.6, -0.2, 0.3, -0.7])
        args = (n, K0, K1, 0.4, 0.6, 0.3, rep_p, rep_a, 1.2, 0.1, 2.0, 0.05, jury_n, icc, 0.5,
                gx, gw, table)
        ca, cg = kf.confidence_kernel(*args)
        runs = [gf.confidence_kernel(*args, blocks=b) for b in ((1, 2) if jury_n == 1 else (0,))]
        for ga, gg in runs:
            np.testing.assert_allclose(ga.sum(axis=0), ca.sum(axis=0), rtol=1e-12, atol=0)
            np.testing.assert_allclose(gg.sum(axis=0), cg.sum(axis=0), rtol=1e-12, atol=0)
            assert np.array_equal(ga[..., [0, 3]], ca[..., [0, 3]])  # the counts
        assert all(np.array_equal(r[0], runs[0][0]) and np.array_equal(r[1], runs[0][1])
                   for r in runs)


def check_redeliberation():
    """Per-block sums within 1e-12 relative of the CPU's (counts exact), a partial
    last block, the same bits whatever the GPU's grid."""
    from antiamp.kernels import redeliberation as kr
    from antiamp.kernels.gpu import redeliberation as gr

    J = np.array([[0.5, 0.2], [0.8, 0.5]])
    args = (kr.BLOCK + 333, K0, K1, 0.4, 0.7, np.array([8.0, 2.0]), np.array([5.0, 9.0]), 0.5,
            1.5, 5, 0.6, 0.3, 0.2, 6, np.array([3.0, 8.0, 15.0]),
            np.array([1.0, 0.9, 0.7, 0.5]), 60.0, 10.0, 3.0, 2.0, 4, J)
    cpu = kr.redeliberation_kernel(*args)
    runs = [gr.redeliberation_kernel(*args, blocks=b) for b in (1, 2)]
    for gpu in runs:
        for g, c in zip(gpu, cpu):
            assert g.shape == c.shape
            np.testing.assert_allclose(g.sum(axis=0), c.sum(axis=0), rtol=1e-12, atol=0)
        assert np.array_equal(gpu[0][..., 0], cpu[0][..., 0])  # claims per policy and type
        assert np.array_equal(gpu[1], cpu[1])  # the spread bands' counts
    for g1, g2 in zip(*runs):
        assert np.array_equal(g1, g2)


def check_row_stack():
    """numba-cuda's modules import ``numpy.row_stack``, which newer NumPy lacks: importing
    numba.cuda through the package restores it as ``vstack``."""
    from antiamp.kernels import gpu

    saved = getattr(np, "row_stack", None)
    if saved is not None:
        del np.row_stack  # noqa: NPY201
    cached, gpu._CUDA = gpu._CUDA, None
    try:
        gpu.cuda()
        assert np.row_stack is np.vstack  # noqa: NPY201
    finally:
        gpu._CUDA = cached or gpu._CUDA
        if saved is not None:
            np.row_stack = saved  # noqa: NPY201


def check_colmad():
    """ColMAD's counts and rounds-used sums: the CPU kernel's from 0 (several launches
    and grids, one round and several); past 2**32 (the counter's high word), the
    scalar per-response function's, response by response; and through the model."""
    from antiamp.kernels import colmad as kc
    from antiamp.kernels.gpu import colmad as gcm

    for R, n, blocks, step in ((3, 901, 2, 300), (1, 257, 0, 0), (6, 333, 1, 100)):
        q = np.sort(RNG.uniform(0, 1, (2, 3)), axis=1)
        pt = np.array([[kc.threshold(v) for v in row] for row in q], np.uint64)
        t = [np.uint64(kc.threshold(v)) for v in RNG.uniform(0.05, 0.95, 4)]
        args = (t[0], pt, t[1], t[2], t[3], R)
        c = kc.colmad_counts(n, K0, K1, *args, 3)
        g = gcm.colmad_counts(n, K0, K1, *args, blocks=blocks, step=step)
        assert g.dtype == np.int64 and g[0].sum() == n and g[1].sum() > 0
        assert np.array_equal(g, c), (R, n, g, c)
    start, n = 2**32 - 100, 250
    one = np.zeros_like(c)
    for i in range(start, start + n):
        cl, u = kc.one_response(i, K0, K1, np.uint64(kc.STREAM), *args)
        one[:, cl] += (1, u, u * u)
    g = gcm.colmad_counts(n, K0, K1, *args, start=start, blocks=1, step=97)
    assert np.array_equal(g, one)
    _same_datasets({"model": {"name": "colmad"}, "judge": {"kind": "logit"},
                    "run": {"n_instances": 600, "seed": 4}},
                   gcm, "colmad_counts")


def check_mediation():
    """Mediation's integer sums: the CPU kernel's from 0 (several launches and grids,
    odd counts; the shared histograms per warp and per block, and the global adds of
    P > 21; the sequential inversions past the tables: more than M_TAB citations, a
    residual count above N_TAB); past 2**32 (the counter's high word), the scalar
    per-case function's, case by case; and through the model."""
    from antiamp.kernels import mediation as km
    from antiamp.kernels.gpu import mediation as gmd

    def args(flaws=2.0, surv=0.58, iters=3, P=3, s=0.5, fd=0.05, erase=0.8, fa=0.05, M=8,
             classes=(0.7239, 0.0381, 0.1628, 0.0752, 0.0)):
        t = km.tables(flaws, surv, iters, P, s, fd, erase, fa, M, classes)
        G_p, S_p, G_b, S_b, t_dis, t_fa, t_erase, G_c, S_c, q = t
        return (iters, P, M, surv, s, fd, G_p, S_p, G_b, S_b, t_dis, t_fa, t_erase, q, G_c,
                S_c)

    cases = ((args(), 901, 2, 300), (args(iters=0, P=1, M=1), 257, 0, 0),
             (args(P=5, M=40, classes=(0.3, 0.1, 0.2, 0.2, 0.2)), 333, 1, 100),
             (args(P=22, erase=0.3), 301, 0, 150),  # 1058 classes: global adds
             (args(M=70, classes=(0.5, 0.1, 0.2, 0.1, 0.1)), 129, 0, 0),  # past M_TAB
             (args(flaws=50.0, surv=1.0, iters=90, fa=1.0), 77, 0, 40))  # nf past N_TAB
    for a, n, blocks, step in cases:
        c = km.mediation_sums(n, K0, K1, *a, 3)
        g = gmd.mediation_sums(n, K0, K1, *a, blocks=blocks, step=step)
        assert g[0].dtype == np.int64 and g[1].dtype == np.int64
        assert g[0][0].sum() == n and g[1][:5].sum() == n * a[2]
        assert np.array_equal(g[0], c[0]) and np.array_equal(g[1], c[1]), (a[:3], n, g, c)
    # A thread's citation sums added into its block's every case, every 3 cases: the
    # same sums.
    a, n = cases[2][0], 1500
    c = km.mediation_sums(n, K0, K1, *a, 3)
    for flush in (1, 3):
        g = gmd.mediation_sums(n, K0, K1, *a, blocks=1, flush=flush)
        assert np.array_equal(g[0], c[0]) and np.array_equal(g[1], c[1]), flush
    big = args(flaws=50.0, surv=1.0, iters=90, fa=1.0)
    assert km.mediation_sums(77, K0, K1, *big, 3)[0][1].sum() > 77 * km.N_TAB
    a = args(P=4, M=12, classes=(0.4, 0.1, 0.2, 0.2, 0.1))
    iters, P, M = a[:3]
    start, n = 2**32 - 100, 250
    flaw = np.zeros((3, 2 * (P + 1) ** 2), np.int64)
    cit = np.zeros(km.N_CIT, np.int64)
    W = np.empty((4 * ((1 + 2 * iters + 2 * P + 4 + 3) // 4), 1), np.uint32)
    cnt = np.zeros(5, np.int64)
    for i in range(start, start + n):
        cl, nf = km.one_case(i, K0, K1, *a, W, cnt)
        flaw[:, cl] += (1, nf, nf * nf)
        perf = int(cnt[0] + cnt[1] == M)
        cit[:5] += cnt
        cit[5:30] += np.outer(cnt, cnt).ravel()
        cit[30] += perf
        cit[31:36] += perf * cnt
    g = gmd.mediation_sums(n, K0, K1, *a, start=start, blocks=1, step=97)
    assert np.array_equal(g[0], flaw) and np.array_equal(g[1], cit)
    _same_datasets({"model": {"name": "mediation"},
                    "mediation": {"perspectives": 4, "citations": 9, "source": "human"},
                    "run": {"n_instances": 601, "seed": 4}},
                   gmd, "mediation_sums")


def check_loop():
    """The closed loop's paths, bit for bit: both learners, a budget, a jury, rho's
    feedback, several tiles a path (a type's cases across tiles), several path chunks
    and grids; and through the model."""
    from antiamp.kernels import loop as kl
    from antiamp.kernels.gpu import loop as gl

    J_c, J_jury = np.array([0.3, 0.8]), np.array([0.25, 0.85])
    J_d, flag_c = np.array([[0.5, 0.2], [0.9, 0.6]]), np.array([0.7, 0.2])
    for learner, batch, types, budget, jury, gain, blocks, chunk, cases in (
            (kl.CALIBRATED, 700, 1, 0.3, False, 0.4, 2, 2, 1),
            (kl.MAJORITY, 37, 13, 1.0, True, 0.0, 0, 0, 16),
            (kl.MAJORITY, 300, 3, 0.5, False, 0.3, 1, 3, 1)):
        args = (learner, 4, batch, types, 5, 0.3, 0.05, 0.6, 0.7 if learner else 0.5, 0.02,
                0.2, gain, 0.9, 0.8, 0.7, J_c, J_d, 0.1, flag_c, budget,
                J_jury if jury else J_c, not jury, K0, K1)
        cpu = kl.loop_paths(*args)
        gpu = gl.loop_paths(*args, blocks=blocks, chunk=chunk, cases=cases)
        for a, b in zip(gpu, cpu):
            assert a.dtype == b.dtype and np.array_equal(a, b), (learner, a, b)
        assert np.ptp(cpu[0], axis=1).max() > 0  # the paths differ: the check can fail
    for extra in ({"loop": {"rounds": 3, "paths": 3, "batch": 300, "rho_gain": 0.5,
                            "budget": 0.4}},
                  {"loop": {"rounds": 3, "paths": 2, "batch": 20, "types": 9,
                            "learner": "majority", "target": 0.2}}):
        _same_datasets({"model": {"name": "loop"}, **extra, "run": {"seed": 6}}, gl,
                       "loop_paths")


def _same_datasets(cfg, mod, name):
    """``run.device=cuda`` and ``cpu`` give the same Dataset (every number), and the
    GPU's ``mod.name`` is the one that ran."""
    import antiamp

    real, used = getattr(mod, name), []
    setattr(mod, name, lambda *a, **k: used.append(1) or real(*a, **k))
    try:
        ds = {dev: antiamp.simulate({**cfg, "run": {**cfg["run"], "device": dev,
                                                    "progress": False}})
              for dev in ("cuda", "cpu")}
    finally:
        setattr(mod, name, real)
    assert used, name
    for k, v in ds["cpu"].data_vars.items():
        if np.issubdtype(v.dtype, np.number):
            assert np.array_equal(ds["cuda"][k].values, v.values, equal_nan=True), k


def check_models():
    """``run.device=cuda`` through the extension models with simulated payoffs: the
    same Datasets as ``run.device=cpu``."""
    import antiamp
    from antiamp.kernels.gpu import correlated as gc
    from antiamp.kernels.gpu import portfolios as gp

    from antiamp.kernels.gpu import messages as gm

    calls = []
    for mod, name in ((gc, "signal_class_counts"), (gp, "portfolio_class_counts_cells"),
                      (gm, "message_sums_cells")):
        def spy(*a, _f=getattr(mod, name), _n=name, **k):  # noqa: B008  (bound per loop)
            calls.append(_n)
            return _f(*a, **k)
        setattr(mod, name, spy)
    for model, extra in (("signals", {"equilibrium": {"payoffs": "simulated"}}),
                         ("portfolio", {"equilibrium": {"payoffs": "simulated"},
                                        "portfolio": {"budget": 3}})):
        ds = {}
        for dev in ("cuda", "cpu"):
            cfg = {"model": {"name": model}, **extra,
                   "run": {"n_instances": 700, "seed": 5, "device": dev, "progress": False}}
            ds[dev] = antiamp.simulate(cfg)
        for name, v in ds["cpu"].data_vars.items():
            if np.issubdtype(v.dtype, np.number):
                assert np.array_equal(ds["cuda"][name].values, v.values, equal_nan=True), \
                    (model, name)
    # Float sums: the metrics within 1e-12 of the CPU's (values of order 1).
    from antiamp.kernels.gpu import panel as gpn

    from antiamp.kernels.gpu import confidence as gf
    from antiamp.kernels.gpu import redeliberation as gr

    real_red = gr.redeliberation_kernel
    gr.redeliberation_kernel = lambda *a, **k: calls.append("redeliberation_kernel") or real_red(
        *a, **k)
    real_panel, real_conf = gpn.panel_endorsement, gf.confidence_kernel
    gpn.panel_endorsement = lambda *a, **k: calls.append("panel_endorsement") or real_panel(
        *a, **k)
    gf.confidence_kernel = lambda *a, **k: calls.append("confidence_kernel") or real_conf(
        *a, **k)
    for extra in ({"model": {"name": "redeliberation"}},
                  {"model": {"name": "confidence"}, "judge": {"kind": "logit"},
                   "confidence": {"ppc_draws": 0}},
                  {"model": {"name": "messages"}, "judge": {"kind": "logit"},
                   "messages": {"kappa_r": 0.8, "r_mean_false": 1.0}},
                  {"model": {"name": "panel"},
                   "panel": {"icc": 0.2, "n_panels": 256, "method": "monte_carlo"}}):
        ds = {}
        for dev in ("cuda", "cpu"):
            cfg = {"equilibrium": {"payoffs": "simulated"}, **extra,
                   "run": {"n_instances": 4096, "seed": 5, "device": dev, "progress": False}}
            if extra["model"]["name"] in ("confidence", "redeliberation"):  # no such section
                cfg.pop("equilibrium")
            ds[dev] = antiamp.simulate(cfg)
        for name, v in ds["cpu"].data_vars.items():
            if np.issubdtype(v.dtype, np.floating):
                np.testing.assert_allclose(ds["cuda"][name].values, v.values, rtol=1e-12,
                                           atol=1e-12, equal_nan=True, err_msg=name)
    assert set(calls) == {"signal_class_counts", "portfolio_class_counts_cells",
                          "message_sums_cells", "panel_endorsement", "confidence_kernel",
                          "redeliberation_kernel"}, calls


def check_engine():
    """``run.device=cuda`` through the one-cell runner and a sweep (CRN and independent
    streams): the same counts as ``run.device=cpu``."""
    import tempfile

    import antiamp
    from antiamp.sweeps.engine import run_sweep

    calls = []
    for name in ("class_counts", "class_counts_cells"):  # the GPU path must be the one taken
        def spy(*a, _f=getattr(gb, name), _n=name, **k):  # noqa: B008  (bound per loop)
            calls.append(_n)
            return _f(*a, **k)
        setattr(gb, name, spy)
    cfg = {"model": {"rho": 0.3, "x_P": 0.6, "x_A": 0.5},
           "run": {"n_instances": 901, "seed": 7, "progress": False}}
    out = {}
    for dev in ("cuda", "cpu"):
        out[dev] = antiamp.simulate({**cfg, "run": {**cfg["run"], "device": dev}})
    assert np.array_equal(out["cuda"].class_counts.values, out["cpu"].class_counts.values)
    assert calls == ["class_counts"], calls
    for crn in (True, False):
        sweeps = {}
        for dev in ("cuda", "cpu"):
            c = {"sweep": {"axes": {"model": {"rho": [0.1, 0.7]}, "judge": {"b": [0.2, 0.9]}},
                           "plot": False, "crn": crn},
                 "run": {"n_instances": 333, "seed": 3, "device": dev}}
            with tempfile.TemporaryDirectory() as d:
                sweeps[dev] = run_sweep(c, d, progress=False).load()
        assert sweeps["cuda"].class_counts.sum() == 4 * 333
        assert calls[-1] == ("class_counts_cells" if crn else "class_counts"), calls
        for name in ("class_counts", "amp", "amp_se"):
            assert np.array_equal(sweeps["cuda"][name].values, sweeps["cpu"][name].values), name
    # The fused grid's default blocks aim at a GPU's rate with run.device=cuda (2^33
    # instances a block, the CPU's 2^27): planned only, 10^4 cells at 10^7 a cell.
    from antiamp.sweeps.spec import make_plan

    big = {"sweep": {"axes": {"model": {"rho": {"linspace": [0.1, 0.9, 100]},
                                        "p": {"linspace": [0.55, 0.95, 100]}}}, "plot": False},
           "run": {"n_instances": 10**7}}
    chunks = {dev: make_plan({**big, "run": {**big["run"], "device": dev}}).chunk
              for dev in ("cuda", "cpu")}
    assert chunks == {"cuda": (8, 100), "cpu": (1, 13)}, chunks
    # A store made in the CPU's blocks (3 cells of 4 at 2^25 + 1 instances a cell; the
    # GPU's would be all 4) is the same sweep with run.device=cuda: found complete and
    # read in its own blocks, not refused as another sweep, no kernel run again.
    small = {"sweep": {"axes": {"model": {"rho": [0.1, 0.3, 0.5, 0.7]}}, "plot": False},
             "run": {"n_instances": (1 << 25) + 1, "seed": 5}}
    with tempfile.TemporaryDirectory() as d:
        made = run_sweep({**small, "run": {**small["run"], "device": "cpu"}}, d,
                         progress=False, log=lambda *a, **k: None).load()
        before = len(calls)
        again = run_sweep({**small, "run": {**small["run"], "device": "cuda"}}, d,
                          progress=False, log=lambda *a, **k: None).load()
        assert len(calls) == before, calls[before:]
        assert made.class_counts.encoding["chunks"] == (3, 32)  # the CPU's blocks, kept
        assert np.array_equal(again.class_counts.values, made.class_counts.values)
    # A model's grid on the block engine (simulated payoffs): the same store values.
    from antiamp.kernels.gpu import correlated as gc

    real, used = gc.signal_class_counts, []
    gc.signal_class_counts = lambda *a, **k: used.append(1) or real(*a, **k)
    try:
        grids = {}
        for dev in ("cuda", "cpu"):
            c = {"model": {"name": "signals"}, "equilibrium": {"payoffs": "simulated"},
                 "sweep": {"axes": {"model": {"rho": [0.2, 0.6]}}, "plot": False},
                 "run": {"n_instances": 500, "seed": 2, "device": dev}}
            with tempfile.TemporaryDirectory() as d:
                grids[dev] = run_sweep(c, d, progress=False).load()
    finally:
        gc.signal_class_counts = real
    assert used
    for name, v in grids["cpu"].data_vars.items():
        if np.issubdtype(v.dtype, np.number):
            assert np.array_equal(grids["cuda"][name].values, v.values, equal_nan=True), name


class _Launches:
    """A kernel whose launches are logged (``"launch"``) and can be interrupted: the
    spy stands in for the module's kernel object (``kernel[grid, threads](*args)``)."""

    def __init__(self, kernel, log):
        self.kernel, self.log = kernel, log

    def __getitem__(self, cfg):
        run = self.kernel[cfg]

        def call(*args):
            self.log.append("launch")
            return run(*args)

        return call


def _chunked_cases():
    """``(name, module, kernel attributes, run(step) -> arrays, units)`` of every float-sum
    and loop launcher: ``run(step)`` launches ``step`` units a piece (0: the adaptive
    pieces of :func:`kernels.gpu.launches`), ``units`` is how many there are."""
    from antiamp.kernels import loop as kl
    from antiamp.kernels import messages as km
    from antiamp.kernels import panel as kp
    from antiamp.kernels import redeliberation as kr
    from antiamp.kernels.gpu import confidence as gf
    from antiamp.kernels.gpu import loop as gl
    from antiamp.kernels.gpu import messages as gm
    from antiamp.kernels.gpu import options as go
    from antiamp.kernels.gpu import panel as gpn
    from antiamp.kernels.gpu import redeliberation as gr
    from antiamp.kernels.confidence import BLOCK as CB
    from antiamp.models.confidence.core import latent_nodes
    from antiamp.models.options.config import OptionsConfig
    from antiamp.models.options.core import simulate_cells

    cases = []
    # Messages: two cells, three canonical blocks past 2**32 instances.
    cols = [bernoulli_thresholds([0.6, 0.3]), bernoulli_thresholds([0.4, 0.8]),
            np.array([1.0, 1.5]), np.array([0.2, -0.4]), np.array([1.0, 0.5]),
            np.array([0.6, 0.2]), np.array([0.7, 0.1]), np.array([-0.5, -0.2]),
            np.array([1.0, 0.8]), np.array([False, True]), np.array([0.1, 0.0]),
            np.array([0.5, 0.3])]

    def messages(step):
        cnt, sums = np.zeros((2, 8), np.int64), np.zeros((2, 4, 8))
        gm.message_sums_cells(*cols, (1 << 20) - 1, 3, K0, K1, km.STREAM, cnt, sums, step=step)
        return cnt, sums

    cases.append(("messages", gm, ("_blocks",), messages, 3))
    # Options: the arguments of the model's call (one pass of K = 3), three blocks.
    seen = []
    real = go.option_sums_cells
    go.option_sums_cells = lambda *a, **k: seen.append(a) or real(*a, **k)
    try:
        simulate_cells([(0.8, 0.2, 2.0, -0.3, 3.0, OptionsConfig(K=3, antagonist="attack"))],
                       4096, 11, device="cuda")
    finally:
        go.option_sums_cells = real
    a = list(seen[0])
    a[-6:-4] = [0, 3]  # first block, blocks

    def options(step):
        acc = np.zeros_like(np.asarray(a[-1]))
        real(*a[:-1], acc, step=step)
        return (acc,)

    cases.append(("options", go, ("_blocks", "_blocks_tabled"), options, 3))
    # Panel: three canonical blocks of panels.
    zq = np.array([-1.0, 0.0, 0.4, 1.2])
    pargs = (zq, 3, kp.RULE_MAJORITY, 2, 0.5, 0.25, 0.3, 0.4, 3 * kp.PANEL_BLOCK, K0, K1,
             np.uint64(kp.STREAM))
    cases.append(("panel", gpn, ("_blocks",),
                  lambda step: gpn.panel_endorsement(*pargs, step=step)[:2], 3))
    # Confidence: three canonical blocks, the last partial.
    gx, gw = latent_nodes(0.0)
    cargs = (2 * CB + 17, K0, K1, 0.4, 0.6, 0.3, np.array([0.3, 5.0, 0.6, 4.0, 6.0, 0.2, 0.3]),
             np.array([-0.2, 3.0, 0.5, 4.0, 7.0, 0.1, 0.4]), 1.2, 0.1, 2.0, 0.05, 1, 0.0, 0.5,
             gx, gw, np.empty(0))
    cases.append(("confidence", gf, ("_blocks",),
                  lambda step: gf.confidence_kernel(*cargs, step=step), 3))
    # Redeliberation: two canonical blocks, the last partial.
    rargs = (kr.BLOCK + 33, K0, K1, 0.4, 0.7, np.array([8.0, 2.0]), np.array([5.0, 9.0]), 0.5,
             1.5, 5, 0.6, 0.3, 0.2, 6, np.array([3.0, 8.0, 15.0]),
             np.array([1.0, 0.9, 0.7, 0.5]), 60.0, 10.0, 3.0, 2.0, 4,
             np.array([[0.5, 0.2], [0.8, 0.5]]))
    cases.append(("redeliberation", gr, ("_blocks",),
                  lambda step: gr.redeliberation_kernel(*rargs, step=step), 2))
    # The loop (majority learner): 3 paths x 3 tiles of a round (a type's cases across
    # tiles), two rounds.
    J_c, J_d = np.array([0.3, 0.8]), np.array([[0.5, 0.2], [0.9, 0.6]])
    largs = (kl.MAJORITY, 2, 60, 11, 3, 0.3, 0.05, 0.6, 0.5, 0.02, 0.2, 0.3, 0.9, 0.8, 0.7,
             J_c, J_d, 0.1, np.array([0.7, 0.2]), 0.5, J_c, True, K0, K1)
    cases.append(("loop", gl, ("_cases",),
                  lambda step: gl.loop_paths(*largs, cases=1, step=step), 2 * 9))
    return cases


def check_chunks():
    """Every float-sum launcher and the loop's rounds launch in pieces (the adaptive
    pieces of :func:`kernels.gpu.launches` by default, the GPU synchronised after each
    but the last): the same bits whatever the pieces, one launch or one unit a launch;
    and a KeyboardInterrupt raised between pieces (where a Ctrl-C's Python handler
    runs) stops the run there, no later piece launched."""
    from antiamp.kernels import gpu

    cuda = gpu.cuda()
    real_sync, first, seconds = cuda.synchronize, gpu.FIRST_LAUNCH, gpu.LAUNCH_SECONDS
    for name, mod, kernels, run, units in _chunked_cases():
        log = []
        saved = {k: getattr(mod, k) for k in kernels}
        for k in kernels:
            setattr(mod, k, _Launches(saved[k], log))
        cuda.synchronize = lambda: log.append("sync") or real_sync()
        try:
            one = run(1 << 30)  # one launch (a round of the loop: one)
            rounds = 2 if name == "loop" else 1
            assert log.count("launch") == rounds, (name, log)
            for step in (1, 2):
                del log[:]
                got = run(step)
                assert log.count("launch") == rounds * -(-units // rounds // step), (name, log)
                assert all(np.array_equal(g, o) for g, o in zip(got, one)), \
                    (name, step, [np.abs(np.asarray(g, float) - o).max() for g, o in zip(got, one)])
            # The default: adaptive pieces (here kept at the first's size, one unit),
            # the GPU synchronised between them.
            gpu.FIRST_LAUNCH, gpu.LAUNCH_SECONDS = 1, 1e-12
            del log[:]
            got = run(0)
            assert all(np.array_equal(g, o) for g, o in zip(got, one)), (name, "adaptive")
            assert log.count("launch") == units, (name, log)
            for i, ev in enumerate(log[:-1]):
                if ev == "launch" and log[i + 1] == "launch" and name != "loop":
                    raise AssertionError(f"{name}: two launches without a sync: {log}")
            # A KeyboardInterrupt at the first sync: no later launch.
            del log[:]

            def interrupted():
                log.append("sync")
                real_sync()
                raise KeyboardInterrupt

            cuda.synchronize = interrupted
            try:
                run(0)
            except KeyboardInterrupt:
                pass
            else:
                raise AssertionError(f"{name}: the interrupt did not stop the run")
            assert log == ["launch", "sync"], (name, log)
        finally:
            gpu.FIRST_LAUNCH, gpu.LAUNCH_SECONDS = first, seconds
            cuda.synchronize = real_sync
            for k in kernels:
                setattr(mod, k, saved[k])


CHECKS = {name[len("check_"):]: f for name, f in dict(globals()).items()
          if name.startswith("check_")}

if __name__ == "__main__":
    for name in sys.argv[1:] or list(CHECKS):
        CHECKS[name]()
        print("ok", name, flush=True)
