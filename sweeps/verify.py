"""Verifying a grid store block by block: the one path of every model's store.

A store is read in slabs of whole blocks (each variable of a slab in one read), and
each finished block (``cell_done`` everywhere) is handed to the layout's check: a
model with fused grids recomputes every variable from its class counts and checks
the counts against their checksums; any other model recomputes its cells'
checksums from the values stored (:mod:`antiamp.sweeps.cellstore`).  What is
unfinished and what is damaged is returned for the caller to run or repair.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from .chunks import blocks

#: Most cells read at once while verifying (a slab of blocks per variable).
VERIFY_SLAB_CELLS = 1 << 18


@dataclasses.dataclass
class StoreReport:
    """What a verification of a store found (and, with ``repair``, redid)."""

    n_blocks: int
    todo: list  # blocks never finished
    damaged: list  # (block name, what is wrong, how it was repaired)

    @property
    def ok(self) -> bool:
        return not self.todo and not self.damaged


def block_name(dims: tuple, region: tuple) -> str:
    return ", ".join(f"{d}[{r.start}:{r.stop}]" for d, r in zip(dims, region))


def slabs(shape: tuple, chunk: tuple):
    """Regions of whole blocks, each at most VERIFY_SLAB_CELLS cells (or one block):
    chunk extents on the leading axes, the full extent on the trailing ones."""
    lead = len(shape)
    for k in range(len(shape) + 1):
        if math.prod(chunk[:k]) * math.prod(shape[k:]) <= VERIFY_SLAB_CELLS:
            lead = k
            break
    sub = tuple(chunk[:lead]) + tuple(shape[lead:])
    return list(blocks(shape, sub))


def blocks_in(slab: tuple, chunk: tuple):
    """The blocks inside a slab (slabs are made of whole blocks), in C order."""
    ranges = [range(s.start, s.stop, c) for s, c in zip(slab, chunk)]
    for starts in itertools.product(*ranges):
        yield tuple(slice(a, min(a + c, s.stop)) for a, c, s in zip(starts, chunk, slab))


def stored(group, name: str):
    """``group[name]``, or the array of its former name in a store written before the
    result schema's names (antiamp.schema.LEGACY: ``<metric>_theory``), so that such a
    store is verified, repaired and resumed as it is."""
    try:
        return group[name]
    except KeyError:
        from antiamp.schema import legacy_name

        old = legacy_name(name, group.array_keys())
        if old == name:
            raise
        return group[old]


class SlabReader:
    """Reads each variable of one slab in a single call (zarr fetches its chunks
    together), then serves the blocks inside it from memory; a variable that
    cannot be read whole is read block by block, so that only the damaged block
    is blamed."""

    def __init__(self, group, slab: tuple):
        self.group, self.slab, self.cache, self.arrays = group, slab, {}, {}

    def rel(self, region: tuple) -> tuple:
        return tuple(slice(r.start - s.start, r.stop - s.start)
                     for r, s in zip(region, self.slab))

    def _array(self, name):
        if name not in self.arrays:
            self.arrays[name] = stored(self.group, name)
        return self.arrays[name]

    def __call__(self, name: str, region: tuple):
        if name not in self.cache:
            try:
                self.cache[name] = np.asarray(self._array(name)[self.slab])
            except Exception:
                self.cache[name] = None
        whole = self.cache[name]
        if whole is None:
            return self._array(name)[region]
        return whole[self.rel(region)]


def scan(group, shape: tuple, chunk: tuple, check) -> tuple[list, list]:
    """Every block of the store: (unfinished blocks, damaged blocks as (region, what,
    whether the block's primary values are sound)).  ``check(read, slab, region)``
    returns None for a sound block, else (primary sound, what is wrong)."""
    unfinished, damaged = [], []
    for slab in slabs(shape, chunk):
        read = SlabReader(group, slab)
        for r in blocks_in(slab, chunk):
            try:
                done = bool(np.asarray(read("cell_done", r)).all())
            except Exception:  # a chunk left unreadable by a kill counts as not done
                done = False
            if not done:
                unfinished.append(r)
                continue
            found = check(read, slab, r)
            if found is not None:
                damaged.append((r, found[1], found[0]))
    return unfinished, damaged


def verify_static(group, want: dict, fix: bool) -> list:
    """Arrays written once (coordinates of the grid's axes, a model's static arrays)
    against what they must be; names the damaged ones (and with ``fix`` rewrites
    them)."""
    bad = []
    for name, v in want.items():
        v = np.asarray(v)
        try:
            ok = np.array_equal(np.asarray(group[name][...]), v,
                                equal_nan=v.dtype.kind == "f")
        except Exception:
            ok = False
        if not ok:
            if fix:
                group[name][...] = v
            bad.append(name)
    return bad


def summarize(store, n_blocks: int, unfinished: list, damaged: list, static: list, *,
              complete: bool, resuming: bool, repair: bool, log) -> StoreReport:
    """Name what a verification found, one line each, and report it. ``damaged``:
    (block name, what is wrong, how it is repaired); ``static``: damaged arrays
    written once; a store whose every block is finished and sound but not marked
    ``complete`` has its marker named (reset, or the run cut off before it)."""
    unmarked = [("complete marker", "0 although every block is finished",
                 "marked complete" if repair else "not repaired")] if not (
        unfinished or damaged or static or resuming or complete) else []
    how = "rewritten from the sweep's config" if repair else "not repaired"
    report = StoreReport(n_blocks, unfinished,
                         damaged + unmarked + [(name, "damaged", how) for name in static])
    for name, what, fix in unmarked:
        log(f"damaged {name}: {what}; {fix}")
    if resuming:
        log(f"resuming {store}: {len(unfinished)} of {n_blocks} blocks left")
    for name, what, fix in damaged:
        log(f"damaged block {name}: {what}; {fix}")
    for name in static:
        log(f"damaged {name}: {how}")
    return report
