"""Which folders antiamp can prove it made: the marks a store and a partial run carry.

A ground-floor module (it imports nothing of antiamp's), so that the output policy
(:mod:`antiamp.outputs_policy`), which every command imports, can recognise a store
or a partial run without importing the sweep engine that writes them; the engine
(:mod:`antiamp.sweeps.blocks`, :mod:`antiamp.sweeps.metadata`) takes these names
from here.

- A grid store's own folder, ``<store>/.antiamp/`` (:data:`OWN`): a Zarr group
  whose attributes say it is antiamp's (:data:`OWNED`: :data:`OWN_TEXT`); it holds
  the store's metadata record (:mod:`antiamp.sweeps.metadata`).
- A partial run's folder holds the marker :data:`PARTIAL` (a JSON object with the
  run's ``fingerprint``) and nothing but its block files.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

#: A store's own folder (a Zarr group marked as antiamp's, holding the record).
OWN = ".antiamp"
OWNED = "antiamp_owned"
OWN_TEXT = ("the store's metadata record and copies of the metadata files that a "
            "repair replaced (antiamp-check)")
#: The marker file of a partial run (a resumable sweep's blocks on their way to a store).
PARTIAL = "antiamp-partial.json"
_BLOCK_FILE = re.compile(r"\.?block-\d+-\d+\.(blk|pkl)(\.tmp-[0-9a-f]+)?$")


def _json_object(path: Path):
    """The JSON object in ``path``; None if absent; False if unreadable or not an object."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > 16 << 20:  # a FIFO would block
            return False  # the read; antiamp's records are a few kilobytes
        doc = json.loads(path.read_bytes())
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return doc if isinstance(doc, dict) else False


def owns(store: str | os.PathLike) -> bool:
    """Whether the store's own folder is antiamp's: its attributes say so, or (where
    they are damaged) it is a Zarr group holding nothing but what antiamp puts there."""
    own = Path(store) / OWN
    attrs = _json_object(own / ".zattrs")
    if isinstance(attrs, dict):
        return attrs.get(OWNED) == OWN_TEXT
    if _json_object(own / ".zgroup") != {"zarr_format": 2}:
        return False
    return all(p.name in (".zgroup", ".zattrs") or p.name.startswith(".zattrs.tmp-")
               or (p.name.startswith("replaced-") and p.is_dir())
               or (p.name == "block_stats" and p.is_dir()) for p in own.iterdir())


def read_marker(part: Path) -> dict | None:
    """The partial run's marker, or None where ``part`` is not provably antiamp's: a
    link, no marker, or an entry antiamp never makes there (a file of someone
    else's, which nothing of antiamp's may remove with the folder)."""
    part = Path(part)
    if part.is_symlink() or not part.is_dir():
        return None
    try:
        m = json.loads((part / PARTIAL).read_text())
    except Exception:
        return None
    if not isinstance(m, dict) or "fingerprint" not in m:
        return None
    with os.scandir(part) as entries:
        for e in entries:
            if e.name != PARTIAL and not (_BLOCK_FILE.match(e.name)
                                          and e.is_file(follow_symlinks=False)):
                return None
    return m


def is_antiamp_store(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a Zarr store that antiamp wrote (its root carries
    ``antiamp_version``, written with the store, or, where its root's metadata is
    damaged, its own folder is marked as antiamp's: this module)."""
    path = Path(path)
    if not path.is_dir():
        return False
    from .inputs import special_entry

    if special_entry(path, top_only=True) is not None:  # (a FIFO would block the read)
        return False
    try:
        import zarr

        if "antiamp_version" in zarr.open_group(str(path), mode="r").attrs:
            return True
    except Exception:
        pass
    return owns(path)


ZARR_FILES = (".zgroup", ".zattrs", ".zmetadata", ".zarray", "zarr.json")
