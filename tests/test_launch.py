"""The generic class-count launchers (``antiamp.runner.count_classes``): a model's one
per-instance function counted on the CPU and, through numba's CUDA simulator, the GPU,
against a direct count of the same Philox words."""

from limits import limit
import os
import subprocess
import sys
import textwrap

import numba as nb
import numpy as np
import pytest

from antiamp.kernels.rng import (HI_SHIFT, LO_WORD, bernoulli_threshold, philox4x32_10,
                                 philox_block, split_seed)
from antiamp.kernels import baseline as kb
from antiamp.runner import baseline_thresholds, count_classes

STREAM = np.uint64(11)
Q = (0.3, 0.55, 0.8)


@nb.njit(inline="always")
def three_bits(i, k0, k1, thr):
    w0, w1, w2, w3 = philox4x32_10(i & LO_WORD, i >> HI_SHIFT, np.uint64(0), STREAM, k0, k1)
    return np.int64(w0 < thr[0]) + 2 * np.int64(w1 < thr[1]) + 4 * np.int64(w2 < thr[2])


@nb.njit(inline="always")
def off_by_one(i, k0, k1, thr):
    return np.int64(i % np.uint64(5)) - 1  # -1 and 3 lie outside [0, 3)


def thresholds():
    return np.array([bernoulli_threshold(q) for q in Q], np.uint64)


def direct(start, n, seed):
    """The classes counted one instance at a time from the Python-callable Philox."""
    k0, k1 = split_seed(seed)
    thr = thresholds()
    out = np.zeros(8, np.int64)
    key = np.array([k0, k1], np.uint64)
    for i in range(start, start + n):
        w = philox_block(np.array([i & 0xFFFFFFFF, i >> 32, 0, int(STREAM)], np.uint64), key)
        out[int(w[0] < thr[0]) + 2 * int(w[1] < thr[1]) + 4 * int(w[2] < thr[2])] += 1
    return out


def test_the_cpu_counts_are_the_direct_count():
    start = (1 << 32) - 1000  # instances on both sides of the counter's high word
    got = count_classes(three_bits, 8, thresholds(), 3000, 7, start=start, progress=False)
    assert got.dtype == np.int64 and got.shape == (8,)
    assert np.array_equal(got, direct(start, 3000, 7))


def test_chunks_threads_and_ranges_do_not_change_the_counts():
    thr = thresholds()
    whole = count_classes(three_bits, 8, thr, 200_000, 3, progress=False)
    assert whole.sum() == 200_000
    assert np.array_equal(whole, count_classes(three_bits, 8, thr, 200_000, 3, chunk_size=7777,
                                               n_threads=1, progress=False))
    parts = (count_classes(three_bits, 8, thr, 123_457, 3, progress=False)
             + count_classes(three_bits, 8, thr, 200_000 - 123_457, 3, start=123_457,
                             progress=False))
    assert np.array_equal(whole, parts)
    # The classes' frequencies are the products of the three Bernoulli rates.
    p = np.array([np.prod([q if (c >> b) & 1 else 1 - q for b, q in enumerate(Q)])
                  for c in range(8)])
    z = (whole / 200_000 - p) / np.sqrt(p * (1 - p) / 200_000)
    assert np.all(np.abs(z) < 5), z


@nb.njit(inline="always")
def baseline_class(i, k0, k1, thr):
    """The baseline's transcript class (signal stance, strategies 0 or 1: one block)."""
    w0, w1, w2, w3 = philox4x32_10(i & LO_WORD, i >> HI_SHIFT, np.uint64(0),
                                   np.uint64(kb.STREAM), k0, k1)
    return np.int64(kb._class_index(w0, w1, w2, w3, np.uint64(0), np.uint64(0), thr[0],
                                    thr[1], thr[2], thr[3], thr[4], thr[5], False, np.uint8(0)))


def test_the_baselines_function_counted_generically_is_its_tuned_kernel():
    thr = baseline_thresholds(0.5, 0.8, 0.3, 1.0, 0.0, 1.0)
    k0, k1 = split_seed(9)
    got = count_classes(baseline_class, kb.N_CLASSES, thr, 500_000, 9, start=12345,
                        progress=False)
    want = kb.class_counts(thr, 0, 0, 12345, 500_000, k0, k1, np.uint64(kb.STREAM), 8)
    assert np.array_equal(got, want)


def test_a_class_outside_the_range_and_bad_sizes_are_refused():
    with pytest.raises(ValueError, match=r"off_by_one returned a class outside \[0, 3\) "
                                         r"for 40 instances"):
        count_classes(off_by_one, 3, thresholds(), 100, 0, progress=False)
    with pytest.raises(ValueError, match="n_classes must be an integer >= 1"):
        count_classes(three_bits, 0, thresholds(), 100, 0, progress=False)
    with pytest.raises(ValueError, match="n and start must be >= 0"):
        count_classes(three_bits, 8, thresholds(), -1, 0, progress=False)


SIM = """
import numpy as np
import test_launch as t
from antiamp.kernels.gpu.launch import gpu_counter
from antiamp.kernels.rng import split_seed
from antiamp.kernels import baseline as kb
from antiamp.runner import baseline_thresholds, count_classes

start = (1 << 32) - 700
cpu = count_classes(t.three_bits, 8, t.thresholds(), 2000, 7, start=start, progress=False)
gpu = count_classes(t.three_bits, 8, t.thresholds(), 2000, 7, start=start, device="cuda",
                    progress=False)
k0, k1 = split_seed(7)
run = gpu_counter(t.three_bits, 8)
odd = run(start, 2000, k0, k1, t.thresholds(), blocks=3, step=601)  # another grid, 4 launches
assert np.array_equal(cpu, t.direct(start, 2000, 7)), (cpu, t.direct(start, 2000, 7))
assert np.array_equal(gpu, cpu), (gpu, cpu)
assert np.array_equal(odd[:8], cpu) and odd[8] == 0, (odd, cpu)
try:
    count_classes(t.off_by_one, 3, t.thresholds(), 100, 0, device="cuda", progress=False)
    raise SystemExit("not refused")
except ValueError as exc:
    assert "outside [0, 3) for 40 instances" in str(exc), exc
print("ok")
"""


def test_the_gpu_counts_are_the_cpu_counts_on_the_simulator(tmp_path):
    """In a process of its own (the simulator replaces numba.cuda for the process)."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1",
           "PYTHONPATH": os.pathsep.join([os.path.dirname(os.path.abspath(__file__))]
                                         + [p for p in [os.environ.get("PYTHONPATH")] if p])}
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(SIM)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=limit(900))
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


def test_the_fused_one_cell_kernels_find_no_aliases(monkeypatch):
    """``fused_counts`` inlined into the baseline's and the correlated signals' one-cell
    kernels: numba's alias analysis finds nothing in their parallel loops, so the
    loops' compiled functions keep ``noalias`` on their arrays (a bool among the
    parameters would count as a possible alias and cost them that)."""
    import numba.parfors.parfor as pf

    from antiamp.kernels import correlated as kc
    from antiamp.kernels import transcript_classes as tc

    found, real = [], pf.find_potential_aliases_parfor

    def spy(parfor, args, typemap, func_ir, alias_map, arg_aliases):
        out = real(parfor, args, typemap, func_ir, alias_map, arg_aliases)
        found.append((func_ir.func_id.func_name, dict(alias_map)))
        return out

    monkeypatch.setattr(pf, "find_potential_aliases_parfor", spy)
    k0, k1 = np.uint64(5), np.uint64(7)
    thr = np.array([2**31, 2**30, 2**29, 2**31, 2**30, 2**31], np.uint64)
    # fresh compilations of the kernels' sources (the cached ones run no analysis)
    nb.njit(parallel=True)(tc.class_counts.py_func)(thr, 0, 1, 0, 999, k0, k1,
                                                    np.uint64(0), 3)
    nb.njit(parallel=True)(kc.signal_class_counts_one.py_func)(
        np.zeros(11, np.uint64), 0, 999, k0, k1, np.uint64(0), 3)
    names = {name for name, _ in found}
    assert names == {"class_counts", "signal_class_counts_one"}, found
    assert all(not aliases for _, aliases in found), found
