"""A grid store's metadata: recorded when written, verified, rebuilt from what is sound.

A Zarr (format 2) store describes itself in small JSON documents: the root's
``.zgroup`` and ``.zattrs`` (the sweep's plan: its config, ``sweep_json``, the
fingerprint, the ``complete`` marker), each array's ``.zarray`` (shape, chunks,
dtype, fill value, compressor) and ``.zattrs``, and ``.zmetadata``, which gathers
them all for readers.  Every chunk can be intact while one of these is damaged,
and then the store cannot be read, checked or resumed.

So every grid store keeps a record of its metadata in its own folder,
``<store>/.antiamp/``: a Zarr group (so that Zarr and xarray pass it by) whose
attributes mark it as antiamp's and hold the record, every document the model's
layout declares (zlib-compressed JSON, a few kB) with its checksum.  It is written
with the store (a fused sweep's at creation, then again when the sweep
finishes; any other model's with the store, which is written whole).
:func:`inspect` finds the soundest source of the layout (the record; else the
consolidated metadata; else the documents themselves) and every document that is
missing, unreadable or disagrees with it; :func:`repair` rewrites those from that
source, first keeping a copy of each file it replaces in
``<store>/.antiamp/replaced-<time>/`` (a Zarr group too: the files' contents in
its attributes).  It never deletes anything.  A store whose plan has no sound
source is refused as it is.

A fused sweep's store's ``complete`` marker is the blocks' to set (it is 1 only once
every block is written and verified): here it is only required to agree between
``.zattrs`` and ``.zmetadata``, and a rebuilt ``.zattrs`` starts incomplete.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import hashlib
import json
import os
import shutil
import stat
import uuid
import zlib
from pathlib import Path

from antiamp._version import __version__
from antiamp.ownership import OWN, OWN_TEXT, OWNED, owns  # noqa: F401 (re-exported)

RECORD_FORMAT = 1
_DOCS = (".zgroup", ".zattrs", ".zarray")
#: Arrays whose presence shows a grid store of antiamp's even when its plan is lost.
_OUR_ARRAYS = ("cell_digest", "block_digest")
#: Layouts written in place, block by block (their ``complete`` marker is the
#: blocks' to set; their record is written at creation and again when finished).
IN_PLACE = ("fused", "cells")


class MetadataError(RuntimeError):
    """Metadata that cannot be recorded or rebuilt (the store's own folder is not
    antiamp's, or nothing sound remains to rebuild it from)."""


class PlanLost(MetadataError):
    """An antiamp grid store whose plan has no sound source left."""


class _Damaged:
    """A document that exists but cannot be read as a JSON object."""

    def __repr__(self):
        return "<damaged>"


DAMAGED = _Damaged()


def _canon(doc) -> str:
    return json.dumps(doc, sort_keys=True, allow_nan=True)


def _checksum(metadata: dict) -> str:
    return hashlib.sha256(_canon(metadata).encode()).hexdigest()


def _read_json(path: Path):
    """The JSON object in ``path``; None if it does not exist; DAMAGED if unreadable."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO: read, it would block forever
            return DAMAGED
        text = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except IsADirectoryError:
        return DAMAGED
    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        return DAMAGED
    return doc if isinstance(doc, dict) else DAMAGED


def write_json(path: Path, obj, **dump) -> None:
    """Through a temporary file beside ``path``, renamed over it once whole."""
    tmp = path.with_name(f"{path.name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        with open(tmp, "w") as fh:
            json.dump(obj, fh, allow_nan=True, **dump)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_documents(store: Path) -> dict:
    """Every metadata document of the store's hierarchy (not of its own folder):
    relative path -> JSON object, or DAMAGED."""
    out = {}
    for path in sorted(Path(store).rglob(".z*")):
        rel = path.relative_to(store)
        if path.name in _DOCS and not rel.parts[0].startswith(OWN) and not path.is_dir():
            out[rel.as_posix()] = _read_json(path)
    return out


def own_dir(store: Path) -> Path:
    """The store's own folder, created if absent (MetadataError if something else
    holds its name)."""
    return _own_dir(store, create=True)


def _own_dir(store: Path, create: bool) -> Path | None:
    """The store's own folder: None if absent (and not created), MetadataError if
    something else holds its name."""
    own = Path(store) / OWN
    if own.exists() or own.is_symlink():
        if own.is_dir() and not own.is_symlink() and owns(store):
            return own
        raise MetadataError(f"{own} exists and is not antiamp's; antiamp writes nothing "
                            "into it. Move it away and rerun")
    if not create:
        return None
    for stale in Path(store).glob(f"{OWN}.tmp-*"):  # ours (by name), left by a kill
        shutil.rmtree(stale, ignore_errors=True)
    _zarr_group(own, {OWNED: OWN_TEXT})
    return own


def _zarr_group(path: Path, attrs: dict) -> None:
    """A new Zarr (format 2) group at ``path`` with ``attrs``, made beside it and
    renamed into place."""
    tmp = path.with_name(f"{path.name}.tmp-{uuid.uuid4().hex[:8]}")
    tmp.mkdir()
    try:
        write_json(tmp / ".zgroup", {"zarr_format": 2}, indent=4)
        write_json(tmp / ".zattrs", attrs, indent=1)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)  # our temporary, never renamed into place


def _write_record(own: Path, docs: dict, final: bool) -> None:
    packed = zlib.compress(_canon(docs).encode(), 9)
    write_json(own / ".zattrs", {OWNED: OWN_TEXT, "record": {
        "format": RECORD_FORMAT, "antiamp_version": __version__, "final": bool(final),
        "sha256": _checksum(docs), "metadata_zlib": base64.b64encode(packed).decode()}},
        indent=1)


def record(store: str | os.PathLike, *, final: bool = True, carry=None) -> None:
    """Record the store's metadata in its own folder (see the module's docstring).

    ``final``: the store's layout is whole (a finished store); a fused sweep's store's
    record at creation is not (a sensitivity design adds arrays and attributes at
    the end).  ``carry``: an earlier store that this one replaces, whose copies of
    replaced files are kept."""
    store = Path(store)
    docs = read_documents(store)
    bad = [k for k, v in docs.items() if v is DAMAGED]
    if bad:
        raise MetadataError(f"{store}: cannot record damaged metadata ({', '.join(bad)})")
    own = _own_dir(store, create=True)
    _write_record(own, docs, final)
    if carry is not None:
        try:
            old = _own_dir(Path(carry), create=False)
        except MetadataError:
            old = None
        for d in sorted(old.glob("replaced-*")) if old is not None else ():
            if d.is_dir() and not (own / d.name).exists():
                shutil.copytree(d, own / d.name)


def read_record(store: str | os.PathLike):
    """(metadata, final) of the store's record, None if it has none, DAMAGED if its
    record cannot be read or does not match its checksum."""
    store = Path(store)
    if not (store / OWN).is_dir() or not owns(store):
        return None
    attrs = _read_json(store / OWN / ".zattrs")
    if not isinstance(attrs, dict):
        return DAMAGED
    rec = attrs.get("record")
    if rec is None:
        return None
    try:
        meta = json.loads(zlib.decompress(base64.b64decode(rec["metadata_zlib"])))
    except Exception:
        return DAMAGED
    if (not isinstance(meta, dict) or rec.get("sha256") != _checksum(meta)
            or any(not isinstance(v, dict) for v in meta.values())):
        return DAMAGED
    return meta, bool(rec.get("final", True))


def _read_consolidated(store: Path):
    doc = _read_json(Path(store) / ".zmetadata")
    if doc is None or doc is DAMAGED:
        return doc
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or any(not isinstance(v, dict) for v in meta.values()):
        return DAMAGED
    # zarr.consolidate_metadata, run by hand, gathers the store's own folder too
    return {k: v for k, v in meta.items() if not k.split("/")[0].startswith(OWN)}


def _fused(name):
    """The model ``name``'s FusedGrid if it writes its grids with the fused engine's
    layout, else None."""
    from antiamp.config import ConfigError
    from antiamp.registry import get

    try:
        return get(str(name)).fused_grid if name else None
    except ConfigError:
        return None


def _kind(meta: dict) -> str | None:
    """'fused' (a fused grid's store), 'cells' (any other model's, written in place
    since store layout 4) or 'grid' (written whole, before) if ``meta`` is an antiamp
    grid store's whose plan parses, else None."""
    attrs = meta.get(".zattrs")
    if not isinstance(attrs, dict) or "antiamp_version" not in attrs:
        return None
    try:
        if not isinstance(json.loads(attrs["config_json"]), dict):
            return None
        fused = _fused(attrs.get("model"))
        if fused is not None and f"{fused.counts_name}/.zarray" in meta:
            return "fused"
        if isinstance(json.loads(attrs["sweep_json"]), dict):
            return "cells" if "cell_digest/.zarray" in meta else "grid"
    except (KeyError, TypeError, ValueError):
        return None
    return None


@dataclasses.dataclass
class Inspection:
    """What :func:`inspect` found."""

    store: Path
    layout: dict | None  # relative path -> document, from the soundest source
    source: str  # which source it is, in words
    kind: str | None  # 'fused', 'cells', 'grid' or None (not a grid store / plan lost)
    final: bool  # the layout is the whole store's
    damaged: list  # (relative path, what is wrong)
    ours: bool  # evidence that antiamp wrote the store (when its plan is lost)
    files: dict  # the documents as found
    record_state: str  # 'sound', 'missing' or 'damaged'

    @property
    def attrs(self) -> dict:
        """The store's root attributes (fused: with the ``complete`` marker found)."""
        attrs = dict(self.layout[".zattrs"])
        if self.kind in IN_PLACE:
            found = self.files.get(".zattrs")
            attrs["complete"] = found.get("complete", 0) if isinstance(found, dict) else 0
        return attrs


def _differs(kind: str, final: bool, rel: str, have: dict, want: dict) -> bool:
    if kind in IN_PLACE and rel == ".zattrs":
        keys = set(want) - {"complete"} if not final else (set(want) | set(have)) - {"complete"}
        return any(_canon(have.get(k)) != _canon(want.get(k)) or (k in have) != (k in want)
                   for k in keys)
    return _canon(have) != _canon(want)


def inspect(store: str | os.PathLike) -> Inspection:
    """Find the store's layout and every metadata document that departs from it."""
    store = Path(store)
    if not any((store / n).exists() for n in (".zgroup", ".zattrs", ".zmetadata", OWN)):
        # Not a Zarr group's directory (no need to walk it): nothing to inspect.
        return Inspection(store, None, "", None, True, [], False, {}, "missing")
    files = read_documents(store)
    rec = read_record(store)
    cons = _read_consolidated(store)
    record_state = ("missing" if rec is None else "damaged" if rec is DAMAGED else "sound")
    candidates = []
    if isinstance(rec, tuple):
        candidates.append((rec[0], rec[1], "the store's metadata record"))
    if isinstance(cons, dict):
        candidates.append((cons, True, "the consolidated metadata"))
    sound_files = {k: v for k, v in files.items() if isinstance(v, dict)}
    candidates.append((sound_files, False, "the metadata files"))
    layout = kind = None
    source, final = "", True
    for meta, fin, src in candidates:
        kind = _kind(meta)
        if kind is not None:
            layout, final, source = meta, fin, src
            break
    if layout is None:
        ours = owns(store) or any(f"{a}/.zarray" in files for a in _OUR_ARRAYS)
        return Inspection(store, None, "", None, True, [], ours, files, record_state)
    damaged = []
    for rel, want in layout.items():
        have = files.get(rel)
        if have is None:
            damaged.append((rel, "missing"))
        elif have is DAMAGED:
            damaged.append((rel, "unreadable"))
        elif _differs(kind, final, rel, have, want):
            damaged.append((rel, f"differs from {source}"))
    need_cons = kind == "grid" or (
        isinstance(files.get(".zattrs"), dict) and bool(files[".zattrs"].get("complete")))
    if cons is None:
        if need_cons:
            damaged.append((".zmetadata", "missing"))
    elif cons is DAMAGED:
        damaged.append((".zmetadata", "unreadable"))
    else:
        wrong = [rel for rel, want in layout.items()
                 if not isinstance(cons.get(rel), dict)
                 or _differs(kind, final, rel, cons[rel], want)]
        if final and kind == "grid" and set(cons) != set(layout):
            wrong.append("its list of documents")
        root = files.get(".zattrs")
        if (kind in IN_PLACE and isinstance(root, dict) and isinstance(cons.get(".zattrs"), dict)
                and bool(root.get("complete")) != bool(cons[".zattrs"].get("complete"))):
            wrong.append("the complete marker")
        if wrong:
            damaged.append((".zmetadata", f"disagrees with {source} ({', '.join(wrong[:3])}"
                                          + (", ..." if len(wrong) > 3 else "") + ")"))
    if record_state == "damaged":
        damaged.append((f"{OWN}/.zattrs", "the metadata record in it is unreadable or does "
                                          "not match its checksum"))
    return Inspection(store, layout, source, kind, final, damaged, True, files, record_state)


def plan_lost(insp: Inspection) -> str:
    return (f"{insp.store}: its plan is lost (the root .zattrs, the consolidated metadata "
            f"and the metadata record in {OWN}/ are all missing or damaged), so nothing "
            "sound remains to rebuild its metadata from; it was left as it is")


def repair(insp: Inspection, log=print) -> list:
    """Rewrite every damaged document of ``insp`` from its layout, having first kept
    a copy of each file it replaces; returns what was rebuilt (relative paths)."""
    store = insp.store
    if insp.layout is None:
        raise PlanLost(plan_lost(insp))
    if not insp.damaged and insp.record_state == "sound":
        return []
    why = dict(insp.damaged)
    docs = [rel for rel in insp.layout if rel in why]
    consolidated = ".zmetadata" in why or (insp.kind in IN_PLACE and bool(docs)
                                           and (store / ".zmetadata").exists())
    own_record = f"{OWN}/.zattrs"
    # Copies of every file about to be replaced, written before any of them is.
    copies = {}
    for rel in docs + [".zmetadata", own_record]:
        if rel in why and (store / rel).is_file():
            data = (store / rel).read_bytes()
            try:
                kept = {"text": data.decode()}
            except UnicodeDecodeError:
                kept = {"base64": base64.b64encode(data).decode()}
            copies[rel] = {"why": why[rel], "sha256": hashlib.sha256(data).hexdigest(), **kept}
    own = _own_dir(store, create=True)
    note = ""
    if copies:
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        keep = own / f"replaced-{stamp}-{uuid.uuid4().hex[:6]}"
        _zarr_group(keep, {OWNED: OWN_TEXT, "replaced": copies})
        note = f" (a copy of the damaged file kept in the attributes of {OWN}/{keep.name}/)"
    rebuilt = []
    for rel in docs:
        doc = dict(insp.layout[rel])
        if insp.kind in IN_PLACE and rel == ".zattrs":
            doc["complete"] = 0  # the blocks' verification marks it complete again
            found = insp.files.get(".zattrs")
            if not insp.final and isinstance(found, dict):  # attributes added since
                doc = {**found, **doc}
        path = store / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, doc, indent=4)
        rebuilt.append(rel)
        log(f"rebuilt {rel} ({why[rel]}) from {insp.source}" + (note if rel in copies else ""))
    if consolidated:
        if insp.kind in IN_PLACE:
            consolidate(store)
        else:
            write_json(store / ".zmetadata", {"metadata": insp.layout,
                                               "zarr_consolidated_format": 1}, indent=4)
        rebuilt.append(".zmetadata")
        log(f"rebuilt .zmetadata ({why.get('.zmetadata', 'to agree with the rebuilt files')}) "
            f"from {insp.source}" + (note if ".zmetadata" in copies else ""))
    if insp.record_state != "sound":
        _write_record(own, insp.layout, insp.final)
        log(f"{'rebuilt' if insp.record_state == 'damaged' else 'wrote'} the metadata record "
            f"in {OWN}/.zattrs from {insp.source}" + (note if own_record in copies else ""))
    return rebuilt


def describe(insp: Inspection, repair: bool) -> list:
    """One line per damaged document."""
    return [f"damaged metadata {rel}: {what}; "
            + ("rebuilt" if repair else "not repaired") for rel, what in insp.damaged]


def rebuildable(store: str | os.PathLike, fingerprint: str) -> bool:
    """Whether ``store`` is a store of the sweep with this fingerprint whose damaged
    metadata a rerun rebuilds (:func:`repair_before_resume`); reads only."""
    store = Path(store)
    if not store.is_dir():
        return False
    insp = inspect(store)
    return (insp.layout is not None and bool(insp.damaged)
            and insp.layout[".zattrs"].get("fingerprint") == fingerprint)


def repair_before_resume(store: Path, fingerprint: str, log=print, error=RuntimeError) -> None:
    """On a rerun of the sweep that wrote ``store``: rebuild its damaged metadata
    (as ``antiamp-check --repair`` does) so that it can be verified and resumed.
    A store of another sweep, or one whose plan is lost, is left to the refusals
    that follow; a repair that cannot run raises ``error``."""
    store = Path(store)
    if not store.is_dir():
        return
    insp = inspect(store)
    if insp.layout is None or insp.layout[".zattrs"].get("fingerprint") != fingerprint:
        return
    if insp.damaged:
        log(f"{store}: its metadata is damaged; rebuilding it before resuming")
        try:
            repair(insp, log)
        except MetadataError as exc:
            raise error(str(exc)) from None


_METADATA_FILES = (".zgroup", ".zattrs", ".zarray")


def consolidate(store: Path) -> None:
    """Write a (Zarr format 2) store's consolidated metadata, atomically.

    Written by hand (the format's ``.zmetadata``: every ``.zgroup``, ``.zattrs``
    and ``.zarray`` document of the store under its path) because
    ``zarr.consolidate_metadata`` also rewrites the root's ``.zattrs`` and
    ``.zgroup``, in writes that run concurrently with that of ``.zmetadata``:
    when the ``.zmetadata`` write fails (a full disk) its ``.zattrs`` write can
    still land after the store has been marked incomplete again, and the store
    would look finished.
    """
    meta = {}
    for path in sorted(store.rglob(".z*")):
        if (path.name in _METADATA_FILES and path.is_file()
                and not path.relative_to(store).parts[0].startswith(OWN)):
            meta[path.relative_to(store).as_posix()] = json.loads(path.read_text())
    write_json(store / ".zmetadata", {"metadata": meta, "zarr_consolidated_format": 1})


def set_attr(store: Path, key: str, value) -> None:
    """Set one attribute of a (Zarr format 2) store's root, atomically."""
    update_attrs(store, {key: value})


def update_attrs(store: Path, values: dict) -> None:
    """Set attributes of a (Zarr format 2) store's root, atomically.

    Written by hand because zarr rewrites ``.zattrs`` in place: a write that
    fails half-way (a full disk, a kill) would leave the store's configuration
    and fingerprint unreadable, and the store with them.
    """
    path = Path(store) / ".zattrs"
    attrs = json.loads(path.read_text())
    attrs.update(values)
    write_json(path, attrs, indent=4, sort_keys=True)


def consolidated_complete(store: Path) -> bool:
    """Whether the consolidated metadata (what readers open) is whole and says complete."""
    try:
        meta = json.loads((Path(store) / ".zmetadata").read_text())
        return bool(meta["metadata"][".zattrs"].get("complete"))
    except Exception:
        return False


def finish(store: Path) -> None:
    """Mark a store written in place complete and consolidate its metadata; if that
    write fails (a full disk), leave no half-written metadata and the store marked
    incomplete."""
    store = Path(store)
    try:
        set_attr(store, "complete", 1)
        consolidate(store)
        record(store)
    except BaseException:
        (store / ".zmetadata").unlink(missing_ok=True)
        set_attr(store, "complete", 0)
        raise
