"""Would fewer Philox rounds speed the baseline kernel?  A measurement, not a change.

    python benchmarks/bench_rounds.py [--quick] [--update BENCHMARKS.md]

Times, in the same run (one thread, medians): the baseline kernel; its floor (the
bare loop of one Philox4x32-10 block per instance, ``kernels.baseline.bare_philox``);
and the same bare loop with 7 rounds (Philox4x32-7, the fewest rounds Salmon et al.
report crush-resistant) and with 10 rounds, both written here with the same batching.
The kernel spends at most (floor's share) x (1 - 7/10) less with 7 rounds: the
table gives that bound from the measured times.
"""

from __future__ import annotations

import os
import sys

import numba as nb
import numpy as np

from antiamp.kernels import baseline as kb
from antiamp.kernels.rng import _M0, _M1, _W0, _W1, _MASK, _S32, split_seed
from antiamp.runner import baseline_thresholds, numba_threads

import bench_loop
from bench_baseline import median_time as _med

_LO = np.uint64(0xFFFFFFFF)
_HI = np.uint64(32)


def make_bare(rounds):
    """``kernels.baseline.bare_philox`` with Philox4x32-``rounds`` (a compile-time
    constant, so the rounds unroll as the library's do), same batching."""

    @nb.njit(inline="always")
    def philox(c0, c1, c2, c3, k0, k1):
        p0 = _M0 * c0
        p1 = _M1 * c2
        c0, c1, c2, c3 = (p1 >> _S32) ^ c1 ^ k0, p1 & _MASK, (p0 >> _S32) ^ c3 ^ k1, p0 & _MASK
        for _ in range(rounds - 1):
            k0 = (k0 + _W0) & _MASK
            k1 = (k1 + _W1) & _MASK
            p0 = _M0 * c0
            p1 = _M1 * c2
            c0, c1, c2, c3 = ((p1 >> _S32) ^ c1 ^ k0, p1 & _MASK, (p0 >> _S32) ^ c3 ^ k1,
                              p0 & _MASK)
        return c0, c1, c2, c3

    @nb.njit(parallel=True)
    def bare(count, k0, k1, stream, n_blocks):
        out = np.zeros(n_blocks, np.uint64)
        bsize = (count + n_blocks - 1) // n_blocks
        for b in nb.prange(n_blocks):
            lo = b * bsize
            hi = min(count, lo + bsize)
            buf = np.empty(BATCH, np.uint32)
            acc = np.uint32(0)
            for i0 in range(lo, hi, BATCH):
                m = min(BATCH, hi - i0)
                for j in range(m):
                    ii = np.uint64(i0 + j)
                    w0, w1, w2, w3 = philox(ii & _LO, ii >> _HI, np.uint64(0), stream, k0, k1)
                    buf[j] = np.uint32(w0 ^ w1 ^ w2 ^ w3)
                for j in range(m):
                    acc ^= buf[j]
            out[b] = acc
        return out

    return bare


BATCH = kb._BATCH
bare10, bare7 = make_bare(10), make_bare(7)


def run(quick=False):
    res = {"load": os.getloadavg()}
    n = 20_000_000 if quick else 100_000_000
    k0, k1 = split_seed(0)
    st = np.uint64(kb.STREAM)
    thr = baseline_thresholds(0.5, 0.8, 0.3, 1, 1, 1)
    reps = 3 if quick else 5
    with numba_threads(1):
        kb.class_counts(thr, 0, 1, 0, 1000, k0, k1, st, 4)
        kb.bare_philox(0, 1000, k0, k1, st, 4)
        bare10(1000, k0, k1, st, 4)
        bare7(1000, k0, k1, st, 4)
        # The copy with 10 rounds must be the library's generator, word for word.
        assert np.array_equal(bare10(100_000, k0, k1, st, 4), kb.bare_philox(0, 100_000, k0,
                                                                             k1, st, 4))
        res["kernel"] = _med(lambda: kb.class_counts(thr, 0, 1, 0, n, k0, k1, st, 4), reps)
        res["floor"] = _med(lambda: kb.bare_philox(0, n, k0, k1, st, 4), reps)
        res["r10"] = _med(lambda: bare10(n, k0, k1, st, 4), reps)
        res["r7"] = _med(lambda: bare7(n, k0, k1, st, 4), reps)
    res["n"] = n
    res["load_after"] = os.getloadavg()
    return res


def report(r) -> list:
    saved = r["r10"] - r["r7"]  # per call, for n instances of one block each
    return [
        "## Philox rounds: what 7 instead of 10 would buy",
        "",
        f"`python benchmarks/bench_rounds.py`, one thread, {r['n']:,} instances, medians of one "
        "run; ratio = time / the baseline kernel's.",
        "",
        "| what | ratio | seconds |",
        "|---|---:|---:|",
        f"| baseline kernel (Philox4x32-10) | 1.00 | {r['kernel']:.3f} |",
        f"| its floor: bare loop, 10 rounds (`bare_philox`) | {r['floor'] / r['kernel']:.2f} | "
        f"{r['floor']:.3f} |",
        f"| bare loop, 10 rounds (this file) | {r['r10'] / r['kernel']:.2f} | "
        f"{r['r10']:.3f} |",
        f"| bare loop, 7 rounds (this file) | {r['r7'] / r['kernel']:.2f} | {r['r7']:.3f} |",
        "",
        f"Seven rounds would save at most {saved:.3f} s of the kernel's {r['kernel']:.3f} s "
        f"({saved / r['kernel']:.0%}). Chosen: keep Philox4x32-10. Fewer rounds change every "
        "draw of every model (no stored result could be reproduced), lose the published "
        "Random123 known-answer vectors that pin the generator (`tests/test_rng.py`), for "
        "at most that share of the kernel alone (less of a sweep, where per-cell work and the "
        "store add to it). A 16-bit-draw variant would halve the words per block but round "
        "every probability to a multiple of 2^-16: a bias up to 1.5e-5, a third of the "
        "standard error of a probability near 1/2 at 10^8 instances and larger than it beyond "
        "10^9. Load "
        f"average (1 min) {r['load'][0]:.2f} before, {r['load_after'][0]:.2f} after.",
        "",
    ]


def main(argv=None):
    bench_loop.standalone(argv, __doc__, run, report, "## Philox rounds:", "Philox-rounds")


if __name__ == "__main__":
    sys.exit(main())
