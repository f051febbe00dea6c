"""Bits of the sweep stores: a sha256 of every file of a few small sweeps' stores.

    python benchmarks/store_bits.py OUT_DIR > digests.txt

Runs the baseline model (fused grids) over two axes in several blocks, a design
(Sobol) of it, and models without fused grids (``signals`` with exact and with
simulated payoffs, ``loop``, ``panel``, ``mediation``, ``colmad``) in several blocks, each into ``OUT_DIR/<name>``; then deletes one block's chunk files
of each store and resumes it (the rerun must verify, repair and end with the same
bytes).  Prints one line per file: ``<store> <file> <sha256>``.  Two versions of
the code give the same lines when their stores are byte-identical.

The files that hold the time of the run or the command line (the root
attributes ``.zattrs``, their consolidated copy in ``.zmetadata`` and the record of
the metadata in ``.antiamp/.zattrs``: ``created``, ``history``, ``run_seconds``,
``solve_seconds``, and ``source_revision``, the code's commit, which differs
between the two versions compared) are hashed with those attributes masked (their
names listed), and the per-block statistics ``.antiamp/block_stats`` decoded, their
``solve_seconds`` column masked; every other file is compared to the byte.  The
stores lie at the same place in both runs (``OUT_DIR`` given the same), named
relative to it, so that no path differs.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

#: Root attributes that hold the time (or the duration) of a run.
TIMED = ("created", "date_created", "history", "run_seconds", "solve_seconds",
         "date_modified", "date_issued", "source_revision")

SWEEPS = {
    "baseline": {"sweep": {"axes": {"model": {"rho": {"linspace": [0.1, 0.9, 5]}},
                                    "judge": {"b": {"linspace": [0.0, 1.0, 4]}}},
                           "cells_per_block": 3, "plot": False},
                 "run": {"n_instances": 2000, "seed": 7}},
    "baseline_sobol": {"sweep": {"axes": {"model": {"rho": {"uniform": [0.1, 0.9]}},
                                          "judge": {"b": {"uniform": [0.0, 1.0]}}},
                                 "design": "sobol", "n_points": 8, "cells_per_block": 4,
                                 "plot": False},
                       "run": {"n_instances": 1000, "seed": 3}},
    "signals": {"model": {"name": "signals"},
                "sweep": {"axes": {"signals": {"eta": {"linspace": [0.1, 0.5, 3]},
                                               "phi": {"linspace": [0.0, 1.0, 3]}}},
                          "cells_per_block": 2, "plot": False},
                "run": {"n_instances": 1000, "seed": 5}},
    "loop": {"model": {"name": "loop"},
             "sweep": {"axes": {"judge": {"b": {"linspace": [0.0, 1.0, 5]}}},
                       "cells_per_block": 2, "plot": False},
             "run": {"n_instances": 1000, "seed": 11}},
    # simulated payoffs: the delta method's perturbed equilibria
    "signals_sim": {"model": {"name": "signals", "c_e": 0.4}, "judge": {"b": 0.7},
                    "equilibrium": {"payoffs": "simulated"},
                    "sweep": {"axes": {"signals": {"eta": {"linspace": [-0.2, 0.6, 3]},
                                                   "phi": {"linspace": [0.2, 1.0, 3]}}},
                              "cells_per_block": 2, "plot": False},
                    "run": {"n_instances": 2000, "seed": 13}},
    "panel": {"model": {"name": "panel"},
              "sweep": {"axes": {"model": {"rho": {"linspace": [0.1, 0.9, 5]}}},
                        "cells_per_block": 2, "plot": False},
              "run": {"n_instances": 1000, "seed": 17}},
    "mediation": {"model": {"name": "mediation"},
                  "sweep": {"axes": {"mediation": {"detect": {"linspace": [0.2, 0.8, 5]}}},
                            "cells_per_block": 2, "plot": False},
                  "run": {"n_instances": 1000, "seed": 19}},
    "colmad": {"model": {"name": "colmad"}, "judge": {"kind": "logit"},
               "sweep": {"axes": {"colmad": {"eta": {"linspace": [0.0, 1.0, 5]}}},
                         "cells_per_block": 2, "plot": False},
               "run": {"n_instances": 1000, "seed": 23}},
}


def _masked(path: Path) -> tuple[bytes, dict]:
    """A metadata file with its timed attributes masked, and what was masked."""
    import base64
    import zlib

    doc = json.loads(path.read_text())
    masked = {}
    if path.parent.name == ".antiamp" and "record" in doc:
        rec = doc["record"]
        docs = json.loads(zlib.decompress(base64.b64decode(rec.pop("metadata_zlib"))))
        rec.pop("sha256")  # of the documents, time included
        for name, d in docs.items():
            if name.endswith(".zattrs") and isinstance(d, dict):
                for k in TIMED:
                    if k in d:
                        masked[f"record:{name}:{k}"] = d[k]
                        d[k] = "<masked>"
        rec["documents"] = docs
        return json.dumps(doc, sort_keys=True).encode(), masked

    def mask(attrs, where):
        for k in TIMED:
            if k in attrs:
                masked[f"{where}{k}"] = attrs[k]
                attrs[k] = "<masked>"

    if path.name == ".zattrs":
        mask(doc, "")
    elif path.name == ".zmetadata":
        mask(doc.get("metadata", {}).get(".zattrs", {}), ".zattrs:")
    return json.dumps(doc, sort_keys=True).encode(), masked


def digests(store: Path, tag: str) -> list[str]:
    lines = []
    for f in sorted(p for p in store.rglob("*") if p.is_file()):
        rel = f.relative_to(store).as_posix()
        if (f.name in (".zattrs", ".zmetadata") and f.parent == store) or rel == ".antiamp/.zattrs":
            data, masked = _masked(f)
            lines.append(f"{tag} {rel} {hashlib.sha256(data).hexdigest()} (masked: "
                         f"{', '.join(sorted(masked))})")
        elif rel.startswith(".antiamp/block_stats/") and not f.name.startswith("."):
            lines.append(f"{tag} {rel} {_stats_digest(f)} (decoded; solve_seconds masked)")
        else:
            lines.append(f"{tag} {rel} {hashlib.sha256(f.read_bytes()).hexdigest()}")
    return lines


def _stats_digest(chunk: Path) -> str:
    """A chunk of the per-block statistics, decoded, the time column masked."""
    import numpy as np
    import zarr

    arr = zarr.open_array(str(chunk.parent), mode="r")
    names = json.loads(arr.attrs["stats"])
    i = int(chunk.name.split(".")[0])
    row = np.asarray(arr[i]).copy()
    if "solve_seconds" in names:
        row[names.index("solve_seconds")] = -1.0
    return hashlib.sha256(row.tobytes()).hexdigest()


def _cfg(name: str, store: Path) -> dict:
    cfg = json.loads(json.dumps(SWEEPS[name]))
    cfg["sweep"]["store"] = store.name  # relative to the run directory: no path
    cfg["sweep"]["name"] = name
    return cfg


def main(out: str) -> None:
    from antiamp.sweeps.engine import run_sweep

    root = Path(out)
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    lines = []
    for name in SWEEPS:
        store = root / name
        run_sweep(_cfg(name, store), root, progress=False, log=lambda *a: None)
        lines += digests(store, name)
        # Resume: one block's chunk files deleted (its cells unfinished), the same
        # sweep rerun, which verifies the others and writes that one again.
        removed = 0
        for arr in sorted(p for p in store.iterdir() if p.is_dir()):
            zarray = arr / ".zarray"
            if not zarray.exists():
                continue
            meta = json.loads(zarray.read_text())
            n_grid = 2 if name in ("baseline", "signals", "signals_sim") else 1
            if len(meta["shape"]) < n_grid or meta["chunks"][:n_grid] == meta["shape"][:n_grid]:
                continue  # not chunked over the cells
            key = ".".join(["1"] + ["0"] * (len(meta["shape"]) - 1))
            if (arr / key).exists():
                (arr / key).unlink()
                removed += 1
        assert removed, f"{name}: no chunk file removed"
        logs = []
        run_sweep(_cfg(name, store), root, progress=False, log=logs.append)
        said = " | ".join(str(m) for m in logs)
        resumed = digests(store, name + "+resumed")
        first = [ln.split(" ", 1)[1] for ln in lines if ln.startswith(name + " ")]
        again = [ln.split(" ", 1)[1] for ln in resumed]
        if first != again:
            diff = sorted(set(first) ^ set(again))
            raise SystemExit(f"{name}: the resumed store differs from the first run: {diff[:6]}")
        lines.append(f"{name} resumed after deleting {removed} chunk files: identical; "
                     f"{said[:200]}")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "store_bits_out")
