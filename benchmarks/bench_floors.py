"""The extension kernels beside their random-number floors, two floors each.

    python benchmarks/bench_floors.py [--quick] [--update BENCHMARKS.md]
    python benchmarks/bench_floors.py --loop [--before FILE] [--quick]

Each kernel is timed in the same run, interleaved repeats and medians, beside two
compiled loops (same threads) that draw the same Philox blocks per instance (and
the same Box-Muller normals where the kernel draws normals) and do nothing else:

* its own-style floor (the one each kernel's benchmark has reported): instance by
  instance, scalar Philox calls folded into a float sum, which does not vectorise;
* the vectorised floor: ``kernels.baseline.bare_philox``'s loop (a batch of
  instances' words first, XOR-folded), the footing the baseline kernel is judged
  on, run over the kernel's total blocks; with normals, the same batched loop with
  a Box-Muller pair from the first two words of as many blocks as the kernel draws
  pairs (numba's ``log``, ``cos`` and ``sin`` vectorise only with Intel SVML, so
  the normals' part is scalar where SVML is absent: the line under the table says).

Kernels, at their models' defaults unless stated, blocks (and pairs) per instance:

* portfolio (B = 4): three blocks an instance (1 + 2B = 9 uniforms);
* messages (rhetoric): one block and one Box-Muller pair an instance;
* options (K = 4, best of 2 examined): four blocks an instance (7 + 2K words);
* panel (9 judges, icc 0.3, bias sd 0.5, the Monte Carlo method): five blocks and
  five Box-Muller pairs a panel (the shared latent and nine biases); beyond them the
  kernel evaluates 27 normal CDFs a panel (one a judge and table entry), which no
  floor counts: a third reference times those calls alone (:func:`cdf_calls`);
* signals: one block an instance (the correlated-signals class counts);
* loop: two blocks a case-round (the three protocols share them); a third floor,
  drawn with its own counters (:func:`loop_floor`), is timed beside it in CPU time
  (:func:`loop_run`; alone with ``--loop``, and with ``--before FILE`` a previous
  ``kernels/loop.py``, e.g. ``git show REV:kernels/loop.py > FILE``, in the same run);
* colmad: one block a response and one per round of a disagreement (1 + R Pr(dis));
* mediation: five blocks a case (17 words at the defaults);
* confidence: four blocks and three Box-Muller pairs an instance;
* redeliberation: the forced-rounds path's blocks and pairs (2 claim blocks, then
  per round the runs' normals and a hazard word).
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time

import numba as nb
import numpy as np

from antiamp.kernels import portfolios as kp
from antiamp.kernels.rng import bernoulli_threshold, philox4x32_10, split_seed

import bench_loop

_INV32 = 1.0 / 4294967296.0


@nb.njit(parallel=True, cache=True)
def floor(count, n_ctr, normals, k0, k1, stream, n_chunks):
    """``n_ctr`` Philox blocks an instance (with a Box-Muller pair from each block's
    first two words when ``normals``), folded into one number."""
    out = np.zeros(n_chunks)
    size = (count + n_chunks - 1) // n_chunks
    for b in nb.prange(n_chunks):
        s = 0.0
        for i in range(b * size, min(count, (b + 1) * size)):
            ii = np.uint64(i)
            for c in range(n_ctr):
                w0, w1, w2, w3 = philox4x32_10(ii & np.uint64(0xFFFFFFFF), ii >> np.uint64(32),
                                               np.uint64(c), stream, k0, k1)
                if normals:
                    r = math.sqrt(-2.0 * math.log((np.float64(w0) + 0.5) * _INV32))
                    a = 2.0 * math.pi * (np.float64(w1) + 0.5) * _INV32
                    s += r * math.cos(a) + r * math.sin(a)
                else:
                    s += np.float64(w0 ^ w1 ^ w2 ^ w3)
        out[b] = s
    return out.sum()


@nb.njit(parallel=True, cache=True)
def vector_floor(count, pairs, k0, k1, stream, n_chunks):
    """``count`` Philox blocks batched like ``bare_philox`` (words of a batch first),
    the first ``pairs`` of them also turned into a Box-Muller pair, all folded into one
    number."""
    out = np.zeros(n_chunks)
    size = (count + n_chunks - 1) // n_chunks
    for b in nb.prange(n_chunks):
        lo = b * size
        hi = min(count, lo + size)
        a = np.empty(256, np.uint32)
        c = np.empty(256, np.uint32)
        x = np.empty(256, np.uint32)
        acc = np.uint32(0)
        s = 0.0
        for i0 in range(lo, hi, 256):
            m = min(256, hi - i0)
            for j in range(m):
                ii = np.uint64(i0 + j)
                w0, w1, w2, w3 = philox4x32_10(ii & np.uint64(0xFFFFFFFF), ii >> np.uint64(32),
                                               np.uint64(0), stream, k0, k1)
                a[j] = np.uint32(w0)
                c[j] = np.uint32(w1)
                x[j] = np.uint32(w0 ^ w1 ^ w2 ^ w3)
            for j in range(m):
                acc ^= x[j]
            mp = min(m, max(0, pairs - i0))
            for j in range(mp):
                r = math.sqrt(-2.0 * math.log((np.float64(a[j]) + 0.5) * _INV32))
                t = 2.0 * math.pi * (np.float64(c[j]) + 0.5) * _INV32
                s += r * math.cos(t) + r * math.sin(t)
        out[b] = s + np.float64(acc)
    return out.sum()



@nb.njit(parallel=True, cache=True)
def loop_floor(paths, rounds, batch, k0, k1, stream):
    """The loop kernel's Philox blocks at its own counters and in its order, and nothing
    else: per path (its parallel loop) and round, each case's two blocks ``(i, j, 3 t)``
    and ``(i, j, 3 t + 1)``, a batch of cases' words first as ``bare_philox`` draws
    them, XOR-folded into one number."""
    out = np.zeros(paths)
    for j in nb.prange(paths):
        jj = np.uint64(j)
        x = np.empty(256, np.uint32)
        acc = np.uint32(0)
        for t in range(rounds):
            tt = np.uint64(3 * t)
            for i0 in range(0, batch, 256):
                m = min(256, batch - i0)
                for q in range(m):
                    ii = np.uint64(i0 + q)
                    a0, a1, a2, a3 = philox4x32_10(ii, jj, tt, stream, k0, k1)
                    b0, b1, b2, b3 = philox4x32_10(ii, jj, tt + np.uint64(1), stream, k0, k1)
                    x[q] = np.uint32(a0 ^ a1 ^ a2 ^ a3 ^ b0 ^ b1 ^ b2 ^ b3)
                for q in range(m):
                    acc ^= x[q]
        out[j] = np.float64(acc)
    return out.sum()

@nb.njit(parallel=True, cache=True)
def cdf_calls(count, n_chunks):
    """``count`` normal CDFs (the kernels' ``erfc``) and nothing else, at arguments
    spread over [-1.5, 1.5) (a Weyl sequence, no random numbers: about the share of
    arguments beyond 1.25 in absolute value, where ``erfc`` calls ``exp``, that the
    panel's benchmark case meets), folded into one number."""
    out = np.zeros(n_chunks)
    size = (count + n_chunks - 1) // n_chunks
    for b in nb.prange(n_chunks):
        s = 0.0
        for i in range(b * size, min(count, (b + 1) * size)):
            h = (np.uint64(i) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(11)
            s += math.erfc(-1.5 + 3.0 * np.float64(h) * 2.0 ** -53)
        out[b] = s
    return out.sum()


def cases(quick, k0, k1, chunks):
    """(name, kernel(m), m, blocks per instance, pairs per instance, own floor(m))."""
    import bench_colmad
    import bench_confidence
    import bench_mediation
    import bench_redeliberation
    from antiamp.judge import judge_tables
    from antiamp.kernels import correlated as kcor
    from antiamp.models.colmad import core as cm
    from antiamp.models.confidence import core as cf
    from antiamp.models.loop import core as lp
    from antiamp.models.mediation import core as md
    from antiamp.models.messages import core as msm
    from antiamp.models.options import core as opm
    from antiamp.models.panel import core as pnm
    from antiamp.models.redeliberation import core as rd
    from antiamp.models.signals import core as sg
    from antiamp.extended import to_ext_config

    st = np.uint64(9)
    n = 2_000_000 if quick else 10_000_000
    own = lambda blocks, normals: (lambda m: floor(m, blocks, normals, k0, k1, st, chunks))
    out = []
    pf = (bernoulli_threshold(0.8), bernoulli_threshold(0.7), bernoulli_threshold(0.3), 4)
    out.append(("portfolio (B = 4)",
                lambda m: kp.portfolio_class_counts(*pf, 0, m, k0, k1, np.uint64(kp.STREAM),
                                                    chunks), n, 3, 0, own(3, False)))
    mc = msm.MessagesConfig(kappa_r=0.8, r_mean_false=1.0)
    out.append(("messages (rhetoric)", lambda m: msm.exogenous_simulated(0.8, 0.3, 1.0, 0.3, mc, m, 0),
                n, 1, 1, own(1, True)))
    oc = opm.OptionsConfig(K=4, antagonist="best_of_k", k_examine=2)
    out.append(("options (K = 4, best of 2)", lambda m: opm.simulate(0.7, 0.3, 1.2, 0.3, 1.5, oc, m, 0),
                n // 4, 4, 0, own(4, False)))
    n_pan = 20_000 if quick else 100_000
    pc = pnm.PanelConfig(size=9, icc=0.3, bias_sd=0.5, n_panels=n_pan, method="monte_carlo")
    out.append(("panel (9 judges), per panel, 3 table entries",
                lambda m: pnm.panel_probability_mc([0.4, 0.6, 0.9],
                                                   dataclasses.replace(pc, n_panels=m), 0),
                n_pan, 5, 5,
                own(5, True)))
    c, _ = to_ext_config({"model": {"p": 0.75, "rho": 0.35, "c_e": 0.45}, "judge": {"b": 0.7},
                          "signals": {"p_A": 0.7, "eta": 0.4, "phi": 0.4}})
    thr = sg.thresholds([0.5], [sg.joint_table(c.signals, 0.75)],
                        [sg.avail_table(c.signals, 0.35)])[0]
    out.append(("signals", lambda m: kcor.signal_class_counts_one(
        thr, 0, m, k0, k1, np.uint64(kcor.STREAM), chunks), n, 1, 0, own(1, False)))
    lc = _loop_config(quick)
    ov = lp.oversight(lc)
    per_batch = lc.loop.paths * lc.loop.rounds  # m case-rounds: m / per_batch a batch

    def loop_run(m):
        loop = dataclasses.replace(lc.loop, batch=max(1, m // per_batch))
        return lp.simulate(dataclasses.replace(lc, loop=loop), ov)

    out.append(("loop, per case-round", loop_run,
                lc.loop.paths * lc.loop.rounds * lc.loop.batch, 2, 0, own(2, False)))
    par = cm.Params()
    blocks = 1.0 + par.rounds * float(cm.exact_means(par)[cm.DIS])
    out.append(("colmad (R = 3)", lambda m: cm.simulate(par, m, 0), n, blocks, 0,
                lambda m: bench_colmad.philox_floor(m, k0, k1, par.p_error,
                                                    np.ascontiguousarray(cm.pair_table(par)),
                                                    par.rounds)))
    mp = md.Params()
    n_ctr = (1 + 2 * mp.iterations + 2 * mp.perspectives + 4 + 3) // 4
    out.append(("mediation", lambda m: md.simulate(mp, m, 0), n // 2, n_ctr, 0,
                lambda m: bench_mediation.philox_floor(m, k0, k1, n_ctr)))
    rep = cf.fit_condition("cross_model").rep
    out.append(("confidence", lambda m: cf.simulate_oversight(rep, rep, n_instances=m, seed=0,
                                                               **bench_confidence.ARGS),
                n // 4, 4, 3, lambda m: bench_confidence.philox_floor(m, k0, k1)))
    rp = rd.Params()
    J = judge_tables(bench_redeliberation.JUDGE)[1]
    M = (rp.runs + 3) // 4
    r_blocks = 2 + (rp.forced_rounds + 1) * M + rp.forced_rounds
    r_pairs = (rp.forced_rounds + 1) * M * 2
    out.append(("redeliberation", lambda m: rd.simulate(rp, J, m, seed=0), n // 8, r_blocks,
                r_pairs, lambda m: bench_redeliberation.philox_floor(m, k0, k1, rp.runs,
                                                                     rp.forced_rounds)))
    return out


def _loop_config(quick):
    from antiamp.registry import to_model_config

    return to_model_config({"model": {"name": "loop", "rho": 0.4, "p": 0.75},
                            "judge": {"b": 0.3},
                            "loop": {"m": 0.8, "e_h": 0.1, "rounds": 40, "batch": 1000,
                                     "paths": 20 if quick else 100, "audit": 0.2}})[1]


def _load_kernel(path):
    """A ``kernels/loop.py`` from a file, as a module of ``antiamp.kernels`` (its
    relative imports resolve there)."""
    import importlib.util

    # Named after the file: numba's disk cache records the module's name.
    name = "antiamp.kernels._before_" + "".join(c if c.isalnum() else "_"
                                                for c in os.path.basename(path)[:-3])
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def loop_run(quick=False, before=None):
    """The loop kernel beside its two vectorised floors, in CPU time (this process, all
    threads: on a shared machine wall time counts the others' load), interleaved
    repeats, medians: the vectorised floor over its total blocks (:func:`vector_floor`)
    and the floor drawn with its own counters (:func:`loop_floor`).  With ``before``
    (a file holding a previous ``kernels/loop.py``) that kernel too, after checking
    that both give the same outputs, bit for bit."""
    from antiamp.kernels import loop as kl
    from antiamp.models.loop import core as lp

    lc = _loop_config(quick)
    ov = lp.oversight(lc)
    L = lc.loop
    k0, k1 = split_seed(lc.run.seed)
    chunks = 4 * nb.get_num_threads()
    st = np.uint64(9)
    reps = 3 if quick else 7

    def args(batch):  # the call lp.simulate makes (calibrated learner)
        return (kl.CALIBRATED, L.rounds, batch, 1, L.paths, lp.start_error(lc), L.e_h, L.m,
                L.rate, L.bias, float(lc.model.rho), L.rho_gain, ov.x_pc, ov.x_pd, ov.x_a,
                ov.J_c, ov.J_d, ov.audit, ov.flag_c, ov.budget,
                ov.J_c if ov.J_jury is None else ov.J_jury, ov.J_jury is None, k0, k1)

    kernels = {"kernel": kl.loop_paths}
    if before:
        kernels = {"before": _load_kernel(before).loop_paths, "kernel": kl.loop_paths}
        a, b = (f(*args(300)) for f in kernels.values())
        if not all(np.array_equal(x, y) for x, y in zip(a, b)):
            raise SystemExit(f"{before}: its loop_paths gives other outputs than this one")
    batch = L.batch
    for f in kernels.values():
        f(*args(8))  # compile or load
    loop_floor(1, 1, 8, k0, k1, np.uint64(kl.STREAM))
    vector_floor(4096, 0, k0, k1, st, chunks)
    if not quick:  # at least MIN_FLOOR_SECONDS of floor a timing
        t = _cpu(lambda: vector_floor(2 * L.paths * L.rounds * batch, 0, k0, k1, st, chunks))
        batch *= max(1, math.ceil(MIN_FLOOR_SECONDS / max(t, 1e-6)))
    m = L.paths * L.rounds * batch
    calls = {k: (lambda f=f: f(*args(batch))) for k, f in kernels.items()}
    calls["vectorised floor"] = lambda: vector_floor(2 * m, 0, k0, k1, st, chunks)
    calls["own-counters floor"] = lambda: loop_floor(L.paths, L.rounds, batch, k0, k1,
                                                     np.uint64(kl.STREAM))
    res = {"load": os.getloadavg(), "threads": nb.get_num_threads(), "case_rounds": m,
           "paths": L.paths, "rounds": L.rounds, "batch": batch}
    times = {k: [] for k in calls}
    for _ in range(reps):  # interleaved repeats
        for k, f in calls.items():
            times[k].append(_cpu(f))
    res["cpu"] = {k: float(np.median(v)) for k, v in times.items()}
    res["load_after"] = os.getloadavg()
    return res


def loop_report(res) -> list:
    c = res["cpu"]
    lines = [f"The loop kernel in CPU time (all {res['threads']} threads), medians of "
             f"interleaved repeats: {res['paths']} paths x {res['rounds']} rounds x "
             f"{res['batch']:,} cases ({res['case_rounds']:,} case-rounds, two blocks "
             "each); `python benchmarks/bench_floors.py --loop`.", "",
             "| kernel | kernel / vectorised floor | kernel / floor with its own counters | "
             "kernel CPU (s) |", "|---|---:|---:|---:|"]
    for k in ("before", "kernel"):
        if k in c:
            lines.append(f"| {'previous kernel (--before)' if k == 'before' else 'loop'} | "
                         f"{c[k] / c['vectorised floor']:.2f}x | "
                         f"{c[k] / c['own-counters floor']:.2f}x | {c[k]:.3f} |")
    lines += ["", f"Floors: vectorised {c['vectorised floor']:.3f} s, with its own counters "
              f"{c['own-counters floor']:.3f} s of CPU. Load average (1 min) "
              f"{res['load'][0]:.2f} before, {res['load_after'][0]:.2f} after, on "
              f"{os.cpu_count()} cores.", ""]
    return lines


#: Each timing's vectorised floor is made to last at least this long (the instance
#: counts grow by a whole factor): on a fast, quiet machine the default counts take a
#: few milliseconds, where the ratios are noise.
MIN_FLOOR_SECONDS = 0.15


def run(quick=False):
    from numba.core.config import USING_SVML

    res = {"load": os.getloadavg(), "threads": nb.get_num_threads(), "svml": bool(USING_SVML)}
    k0, k1 = split_seed(0)
    st = np.uint64(9)
    chunks = 4 * nb.get_num_threads()
    reps = 3 if quick else 5
    res["rows"] = []
    for name, kernel, m, blocks, pairs, own in cases(quick, k0, k1, chunks):
        nbk, npr = int(round(m * blocks)), int(round(m * pairs))
        kernel(4096)  # compile or load
        own(4096)
        vector_floor(4096, 4096, k0, k1, st, chunks)
        if not quick:  # at least MIN_FLOOR_SECONDS of floor a timing: a few ms is noise
            grow = math.ceil(MIN_FLOOR_SECONDS / max(
                _time(lambda: vector_floor(nbk, npr, k0, k1, st, chunks)), 1e-6))
            if grow > 1:
                m *= grow
                nbk, npr = int(round(m * blocks)), int(round(m * pairs))
        tk, to, tv = [], [], []
        for _ in range(reps):  # interleaved repeats
            tk.append(_time(lambda: kernel(m)))
            to.append(_time(lambda: own(m)))
            tv.append(_time(lambda: vector_floor(nbk, npr, k0, k1, st, chunks)))
        res["rows"].append((name, m, blocks, pairs, float(np.median(tk)), float(np.median(to)),
                            float(np.median(tv))))
        if name.startswith("panel"):  # its normal CDFs alone, beside its vectorised floor
            n_cdf = 27 * m
            cdf_calls(4096, chunks)
            tc = []
            for _ in range(reps):
                tc.append(_time(lambda: cdf_calls(n_cdf, chunks)))
            res["panel_cdf"] = (float(np.median(tc)) / float(np.median(tv)),
                                float(np.median(tk)) / float(np.median(tv)))
    res["load_after"] = os.getloadavg()
    res["loop_cpu"] = loop_run(quick)  # the loop beside its floor with its own counters
    return res


def _time(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def _cpu(f):
    t = time.process_time()
    f()
    return time.process_time() - t


def report(res) -> list:
    svml = ("present: the normals vectorise" if res["svml"] else
            "absent: the floors' normals are scalar calls")
    lines = [
        "## Extension kernels beside their random-number floors",
        "",
        "`python benchmarks/bench_floors.py`: each kernel beside two compiled loops that "
        "draw the same Philox blocks (and Box-Muller normals) per instance and nothing else: "
        "its **own-style floor** (instance by instance, scalar calls folded into a float "
        "sum, as each kernel's benchmark reports it) and the **vectorised floor** (the "
        "baseline's `bare_philox` loop, a batch's words first, over the kernel's total "
        f"blocks). {res['threads']} threads, medians of interleaved repeats, same run.",
        "",
        "| kernel | kernel / vectorised floor | kernel / own-style floor | blocks (pairs) per "
        "instance | instances | kernel (s) | own-style floor (s) | vectorised floor (s) |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for name, m, blocks, pairs, tk, to, tv in res["rows"]:
        bp = f"{blocks:.3g}" + (f" ({pairs:g})" if pairs else "")
        lines.append(f"| {name} | {tk / tv:.2f}x | {tk / to:.2f}x | {bp} | {m:,} | {tk:.3f} | "
                     f"{to:.3f} | {tv:.3f} |")
    lines += ["", f"Load average (1 min) {res['load'][0]:.2f} before, "
              f"{res['load_after'][0]:.2f} after, on {os.cpu_count()} cores; Intel SVML "
              f"{svml}. "
              "The floors count the blocks each kernel actually draws (colmad: 1 + R Pr(disagreement), "
              "from the exact disagreement rate) and its normals. The panel's tables are "
              "exact by default (`panel.method=quadrature`, no Monte Carlo); its kernel runs "
              "only with `method=monte_carlo`; beyond its floor's draws it evaluates a normal "
              "CDF (`erfc`) per judge and table entry (27 a panel here, scalar library calls "
              "without SVML) and a Poisson-binomial recursion per entry (a block's panels "
              "side by side)"
              + (f"; those 27 CDFs a panel alone took {res['panel_cdf'][0]:.2f}x the panel's "
                 f"vectorised floor in this run (the kernel {res['panel_cdf'][1]:.2f}x), so "
                 f"the floor that applies to the panel is its draws plus its CDFs"
                 if "panel_cdf" in res else "")
              + ". The colmad and mediation kernels count classes "
              "and integer sums (no moment matrix per instance; the moments are weighted in "
              "afterwards); the loop classifies a batch of cases from integer thresholds and "
              "counts them; the options kernel counts each block's plays (its antagonist's "
              "choice batched branch-free) and weights per-cell tables of their terms by the "
              "counts (the sums equal to rounding, the counted rows to the integer); the "
              "portfolio, messages and options kernels are the one-row case "
              "of their multi-cell kernels.", ""]
    if "loop_cpu" in res:
        lines += loop_report(res["loop_cpu"])
    return lines


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--loop", action="store_true")
    ap.add_argument("--before")
    known, rest = ap.parse_known_args(argv)
    if known.loop:
        print("\n".join(loop_report(loop_run("--quick" in rest, known.before))))
        return
    if known.before:
        raise SystemExit("--before FILE: with --loop only")
    bench_loop.standalone(rest, __doc__, run, report, "## Extension kernels beside",
                          "extension-kernel floors")


if __name__ == "__main__":
    sys.exit(main())
