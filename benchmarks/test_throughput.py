"""Kernel throughput under pytest-benchmark, each kernel beside its references.

    pytest benchmarks/test_throughput.py --benchmark-only [--benchmark-json out.json]
    pytest benchmarks/test_throughput.py --benchmark-only --benchmark-compare   # against a saved run

Groups put an antiamp kernel and the implementations a user would otherwise use in
one table (same session, same machine state); ``extra_info`` holds the instances
per call, so instances/s = n / median.  Every reference is checked against the
closed forms before anything is timed (module fixture).  ``run_all.py`` runs this
file and turns its JSON into the throughput table of BENCHMARKS.md.

Not part of the test suite (``testpaths = tests``); ``pytest-benchmark`` comes with
the ``bench`` extra.
"""

from __future__ import annotations

import os
import sys

import numba
import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import antiamp as sim  # noqa: E402
from antiamp.kernels import baseline as kb  # noqa: E402
from antiamp.kernels import correlated as kc  # noqa: E402
from antiamp.kernels.rng import split_seed  # noqa: E402
from antiamp.models.signals import core as sg  # noqa: E402
from antiamp.judge import judge_tables  # noqa: E402
from antiamp.runner import baseline_thresholds, numba_threads  # noqa: E402

from bench_baseline import check_references  # noqa: E402
from reference_numpy import numpy_class_counts, numpy_naive  # noqa: E402

PI, P, RHO, B = 0.5, 0.8, 0.3, 0.5
N = int(os.environ.get("ANTIAMP_BENCH_N", 100_000_000))
N_NUMPY = max(N // 20, 1_000_000)
N_MESA = int(os.environ.get("ANTIAMP_BENCH_N_MESA", 100_000))
NC = numba.config.NUMBA_NUM_THREADS
K0, K1 = split_seed(0)
THR = baseline_thresholds(PI, P, RHO, 1, 1, 1)


@pytest.fixture(scope="module", autouse=True)
def checked():
    """References agree with the closed forms before anything is timed."""
    check_references()
    kb.class_counts(THR, 0, 1, 0, 1000, K0, K1, np.uint64(kb.STREAM), 2)
    kb.bare_philox(0, 1000, K0, K1, np.uint64(kb.STREAM), 2)


def _pedantic(benchmark, fn, n, rounds=3):
    benchmark.extra_info["instances"] = n
    benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("threads", sorted({1, NC}))
def test_kernel(benchmark, threads):
    benchmark.group = "baseline model: instances per call"
    benchmark.extra_info["threads"] = threads
    with numba_threads(threads):
        _pedantic(benchmark, lambda: kb.class_counts(THR, 0, 1, 0, N, K0, K1,
                                                      np.uint64(kb.STREAM), 4 * threads), N)


@pytest.mark.parametrize("threads", sorted({1, NC}))
def test_bare_philox(benchmark, threads):
    benchmark.group = "baseline model: instances per call"
    benchmark.extra_info["threads"] = threads
    with numba_threads(threads):
        _pedantic(benchmark, lambda: kb.bare_philox(0, N, K0, K1, np.uint64(kb.STREAM),
                                                     4 * threads), N)


def test_numpy_class_counts(benchmark):
    benchmark.group = "baseline model: instances per call"
    _pedantic(benchmark, lambda: numpy_class_counts(N_NUMPY, PI, P, RHO), N_NUMPY)


def test_numpy_naive(benchmark):
    benchmark.group = "baseline model: instances per call"
    Jc, Jd = judge_tables(sim.to_config(None).judge)
    _pedantic(benchmark, lambda: numpy_naive(N_NUMPY, PI, P, RHO, Jc, Jd), N_NUMPY)


def test_mesa(benchmark):
    mesa = pytest.importorskip("mesa")
    from reference_mesa import mesa_amp

    benchmark.group = "baseline model: instances per call"
    benchmark.extra_info["mesa"] = mesa.__version__
    Jc, Jd = judge_tables(sim.to_config(None).judge)
    nw, ec, ed = mesa_amp(N_MESA, PI, P, RHO, Jc, Jd, seed=3)
    for got, want in ((ec / nw, RHO), (ed / nw, RHO * B)):
        assert abs(got - want) < 5 * np.sqrt(want * (1 - want) / nw)
    _pedantic(benchmark, lambda: mesa_amp(N_MESA, PI, P, RHO, Jc, Jd), N_MESA, rounds=1)


def test_correlated_signals_kernel(benchmark):
    benchmark.group = "correlated signals: instances per call"
    benchmark.extra_info["threads"] = NC
    s = sg.SignalsConfig(p_A=0.7, eta=0.4, phi=0.4)
    thr = sg.thresholds([0.5], [sg.joint_table(s, 0.75)], [sg.avail_table(s, 0.35)])[0]
    kc.signal_class_counts_one(thr, 0, 1000, K0, K1, np.uint64(kc.STREAM), 2)
    _pedantic(benchmark, lambda: kc.signal_class_counts_one(thr, 0, N, K0, K1,
                                                             np.uint64(kc.STREAM), 4 * NC), N)


# ------------------------------------------------------------------ extension kernels
N_EXT = max(N // 20, 1_000_000)


def test_portfolio_kernel(benchmark):
    from antiamp.kernels import portfolios as kp
    from antiamp.kernels.rng import bernoulli_threshold

    benchmark.group = "extensions: instances per call"
    benchmark.extra_info["budget"] = 4
    args = (bernoulli_threshold(0.8), bernoulli_threshold(0.7), bernoulli_threshold(0.3), 4)
    kp.portfolio_class_counts(*args, 0, 1000, K0, K1, np.uint64(kp.STREAM), 2)
    _pedantic(benchmark, lambda: kp.portfolio_class_counts(*args, 0, N_EXT, K0, K1,
                                                           np.uint64(kp.STREAM), 4 * NC), N_EXT)


def test_messages_kernel(benchmark):
    from antiamp.models.messages import core as msm

    benchmark.group = "extensions: instances per call"
    mc = msm.MessagesConfig(kappa_r=0.8, r_mean_false=1.0)
    msm.exogenous_simulated(0.8, 0.3, 1.0, 0.3, mc, 4096, 0)
    _pedantic(benchmark, lambda: msm.exogenous_simulated(0.8, 0.3, 1.0, 0.3, mc, N_EXT, 0), N_EXT)


def test_options_kernel(benchmark):
    from antiamp.models.options import core as opm

    benchmark.group = "extensions: instances per call"
    benchmark.extra_info["K"] = 4
    oc = opm.OptionsConfig(K=4, antagonist="best_of_k", k_examine=2)
    opm.simulate(0.7, 0.3, 1.2, 0.3, 1.5, oc, 4096, 0)
    n = max(N_EXT // 4, 1_000_000)
    _pedantic(benchmark, lambda: opm.simulate(0.7, 0.3, 1.2, 0.3, 1.5, oc, n, 0), n)


def test_panel_kernel(benchmark):
    from antiamp.models.panel import core as pnm

    benchmark.group = "extensions: panels (of 9 judges) per call"
    pc = pnm.PanelConfig(size=9, icc=0.3, bias_sd=0.5, n_panels=200_000)
    pnm.panel_probability_mc([0.4], pnm.PanelConfig(size=9, icc=0.3, n_panels=256), 0)
    _pedantic(benchmark, lambda: pnm.panel_probability_mc([0.4, 0.6, 0.9], pc, 0), 200_000)
