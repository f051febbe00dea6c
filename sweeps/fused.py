"""The task of a fused block: one kernel call over a block of cells on common random
numbers, shared by the cells whose kernel inputs are equal.

Below both the store engine (:mod:`antiamp.sweeps.engine`) and the in-memory grid
(:mod:`antiamp.sweeps.blocks`), which both run it.
"""

from __future__ import annotations

import numpy as np

#: Instances per block at which automatic blocking aims (about 0.1-0.3 s of work).
TARGET_BLOCK_INSTANCES = 1 << 27
#: The same aim for ``run.device=cuda``: about 40 ms of a GPU's kernel at 2e11
#: instances/s.  On an H200 the CPU's aim left the kernel 3% of a 10^4-cell baseline
#: sweep at 10^7 instances a cell (770 blocks of 13 cells, 14.8 s): each block's work
#: on the host (its metrics, its store write) outweighed its kernel 30 times over.
TARGET_BLOCK_INSTANCES_GPU = 1 << 33
#: Most cells of one block (and of one kernel call: its memory grows with the cells).
MAX_CELLS_PER_BLOCK = 4096


def compute_block(count, inputs: dict, n, seed, n_threads, device="cpu", n_counts=None):
    """Counts ``[cells, n_counts]`` of one block; the function dask workers run.

    ``count`` is the model's kernel (:attr:`antiamp.registry.FusedGrid.count`),
    ``inputs`` its kernel inputs, a row per cell.  Cells whose rows are equal in
    every input (an axis over the judge, the welfare weights or c_e moves no
    kernel input) share one kernel call: with common random numbers their counts
    are identical anyway, so the result is the same bits.
    """
    # Each cell's inputs as one opaque byte string: equal bytes, equal inputs (NumPy
    # sorts such strings with memcmp, several times faster than rows of columns).
    rows = [np.ascontiguousarray(v).reshape(len(v), -1) for v in inputs.values()]
    key = np.ascontiguousarray(np.concatenate([r.view(np.uint8).reshape(len(r), -1)
                                               for r in rows], axis=1))
    key = key.view(np.dtype((np.void, key.shape[1]))).ravel()
    uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    if len(uniq) < len(key):
        sub = count({k: v[first] for k, v in inputs.items()}, n, seed, n_threads, device)
        out = sub[inverse.ravel()]
    else:
        out = count(inputs, n, seed, n_threads, device)
    out = np.asarray(out)
    if out.shape != (len(key), n_counts or out.shape[1]):
        raise RuntimeError(f"the model's kernel returned counts of shape {out.shape}, not "
                           f"({len(key)}, {n_counts})")
    return out
