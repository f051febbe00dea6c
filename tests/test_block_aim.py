"""The fused grids' (the baseline model's) default blocks: about 2^27 instances a
block on the CPU, 2^33 with run.device=cuda (a GPU's kernel is 60-70 times the CPU's:
the CPU's aim left an H200 a 3% kernel share of a baseline sweep, the rest each
block's work on the host)."""

from antiamp.sweeps.chunks import chunk_shape
from antiamp.sweeps.fused import (MAX_CELLS_PER_BLOCK, TARGET_BLOCK_INSTANCES,
                                  TARGET_BLOCK_INSTANCES_GPU)


def test_the_gpu_aims_at_larger_blocks_the_cpu_keeps_its_own():
    n = 10**7
    assert chunk_shape((100, 100), n, 0) == (1, TARGET_BLOCK_INSTANCES // n)  # 13 cells
    assert chunk_shape((100, 100), n, 0, "cpu") == chunk_shape((100, 100), n, 0)
    assert chunk_shape((100, 100), n, 0, "auto") == chunk_shape((100, 100), n, 0)
    # 858 cells' worth: trailing axes whole first, then as many rows as fit
    assert TARGET_BLOCK_INSTANCES_GPU // n == 858
    assert chunk_shape((100, 100), n, 0, "cuda") == (8, 100)
    # capped, as the CPU's, by the cells one kernel call holds
    assert chunk_shape((100, 100), 10**6, 0, "cuda") == (40, 100)
    assert 40 * 100 <= MAX_CELLS_PER_BLOCK
    # a block the sweep names is kept whatever the device
    assert chunk_shape((100, 100), n, 50, "cuda") == chunk_shape((100, 100), n, 50) == (1, 50)
