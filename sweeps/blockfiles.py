"""Block files of a resumable run: data only, checksummed, and naming their block.

A finished block of a model's grid (an ``xarray.Dataset`` from the model's
``run_cells``) is kept in ``<store>.partial/`` as one file that holds data only:

* a first line ``ANTIAMP-BLOCK 1``;
* the SHA-256 of everything after the next line (hexadecimal, one line);
* the length of the header (decimal, one line);
* the header: JSON naming the block (its first and last cell, the grid's
  fingerprint, the model) and describing the Dataset (variables, dimensions,
  attributes, encodings) with every array as a reference to a segment;
* the segments: NumPy ``.npy`` arrays, written and read without pickles.

The checksum is computed as the block is received from the worker that made it,
before the file is written; a file is read back only if its checksum, its block
and its fingerprint all match what the run expects, so a damaged, swapped or
foreign file is recomputed, never trusted.  Nothing is ever unpickled: arrays of
Python objects (labels) are kept as JSON lists of strings, numbers, booleans and
nulls, and attributes as tagged JSON that restores their exact types.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import uuid
from pathlib import Path

import numpy as np

MAGIC = b"ANTIAMP-BLOCK 1\n"
SUFFIX = ".blk"
GLOB = "block-*" + SUFFIX
#: Block files of earlier versions (pickles): never read, their blocks recomputed.
OLD_GLOB = "block-*.pkl"
#: Array kinds a segment may hold: numbers, booleans, fixed-width text, dates.
_KINDS = "biufcUSmM"


class BlockFormatError(ValueError):
    """A block file (or a block) that is not what it claims to be."""


def block_file(part: Path, blk: tuple) -> Path:
    return Path(part) / f"block-{blk[0]:012d}-{blk[1]:012d}{SUFFIX}"


# ----------------------------------------------------------------------------- encoding
class _Encoder:
    def __init__(self):
        self.segments: list[bytes] = []

    def array(self, a: np.ndarray) -> dict:
        a = np.asarray(a)
        if a.dtype.kind == "O":  # labels held as Python objects: a JSON list
            flat = a.ravel(order="C").tolist()
            for x in flat:
                if not (x is None or isinstance(x, (str, bool, int, float))):
                    raise BlockFormatError(f"an object array holds a {type(x).__name__}")
            return {"$obj": flat, "shape": list(a.shape)}
        if a.dtype.kind not in _KINDS or a.dtype.fields is not None:
            raise BlockFormatError(f"arrays of dtype {a.dtype} are not kept")
        buf = io.BytesIO()
        np.lib.format.write_array(buf, a, allow_pickle=False)
        self.segments.append(buf.getvalue())
        return {"$nd": len(self.segments) - 1}

    def value(self, v):
        """Tagged JSON for an attribute or encoding value, restoring its exact type."""
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, int) and type(v) is int:
            return v
        if isinstance(v, float) and type(v) is float:
            return {"$f": repr(v)} if not np.isfinite(v) else v
        if isinstance(v, np.generic):
            return {"$np": self.array(np.asarray(v))}
        if isinstance(v, np.ndarray):
            return {"$arr": self.array(v)}
        if isinstance(v, np.dtype):
            if v.kind not in _KINDS or v.fields is not None:
                raise BlockFormatError(f"dtype {v} is not kept")
            return {"$dtype": v.str}
        if isinstance(v, (list, tuple)):
            return {"$list" if isinstance(v, list) else "$tuple": [self.value(x) for x in v]}
        if isinstance(v, dict):
            if not all(isinstance(k, str) for k in v):
                raise BlockFormatError("a mapping with keys that are not strings")
            return {"$dict": {k: self.value(x) for k, x in v.items()}}
        raise BlockFormatError(f"an attribute of type {type(v).__name__} is not kept")


def encode_block(ds, *, start: int, stop: int, fingerprint: str, model: str) -> bytes:
    """The bytes of a block file holding ``ds`` (cells ``start..stop-1``)."""
    import xarray as xr

    for name, index in ds.xindexes.items():
        if type(index) is not xr.indexes.PandasIndex:
            raise BlockFormatError(f"index {name} of type {type(index).__name__} is not kept")
    enc = _Encoder()

    def variable(name, v):
        return {"name": name, "dims": list(v.dims), "data": enc.array(v.values),
                "attrs": enc.value(dict(v.attrs)), "encoding": enc.value(dict(v.encoding))}

    header = {
        "block": {"start": int(start), "stop": int(stop), "fingerprint": fingerprint,
                  "model": model},
        "coords": [variable(k, ds.coords[k].variable) for k in ds.coords],
        "data_vars": [variable(k, ds[k].variable) for k in ds.data_vars],
        "attrs": enc.value(dict(ds.attrs)),
        "encoding": enc.value(dict(ds.encoding)),
    }
    offsets, at = [], 0
    for s in enc.segments:
        offsets.append([at, len(s)])
        at += len(s)
    header["segments"] = offsets
    head = json.dumps(header, allow_nan=False, separators=(",", ":")).encode()
    body = b"%d\n" % len(head) + head + b"".join(enc.segments)
    return MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


# ----------------------------------------------------------------------------- decoding
class _Decoder:
    def __init__(self, payload: memoryview, segments: list):
        self.payload, self.segments = payload, segments

    def array(self, ref) -> np.ndarray:
        if not isinstance(ref, dict):
            raise BlockFormatError("an array reference is malformed")
        if "$obj" in ref:
            flat, shape = ref["$obj"], ref.get("shape")
            if (not isinstance(flat, list) or not isinstance(shape, list)
                    or not all(isinstance(n, int) and n >= 0 for n in shape)
                    or int(np.prod(shape, dtype=np.int64)) != len(flat)
                    or not all(x is None or isinstance(x, (str, bool, int, float))
                               for x in flat)):
                raise BlockFormatError("an object array is malformed")
            out = np.empty(len(flat), dtype=object)
            out[:] = flat if flat else []
            return out.reshape(shape)
        i = ref.get("$nd")
        if not isinstance(i, int) or not 0 <= i < len(self.segments):
            raise BlockFormatError("an array reference is malformed")
        off, n = self.segments[i]
        seg = io.BytesIO(self.payload[off:off + n])
        try:
            version = np.lib.format.read_magic(seg)
            read = {(1, 0): np.lib.format.read_array_header_1_0,
                    (2, 0): np.lib.format.read_array_header_2_0}[version]
            shape, fortran, dtype = read(seg)
        except Exception as exc:
            raise BlockFormatError(f"segment {i} is not an .npy array ({exc})") from None
        if dtype.kind not in _KINDS or dtype.fields is not None or dtype.hasobject:
            raise BlockFormatError(f"segment {i} holds dtype {dtype}, which is not kept")
        count = int(np.prod(shape, dtype=np.int64))
        if n - seg.tell() != count * dtype.itemsize:
            raise BlockFormatError(f"segment {i} does not hold its shape's bytes")
        data = np.frombuffer(self.payload[off + seg.tell():off + n], dtype=dtype, count=count)
        return data.reshape(shape, order="F" if fortran else "C").copy(
            order="F" if fortran else "C")

    def value(self, v):
        if v is None or isinstance(v, (bool, str, int, float)):
            return v
        if isinstance(v, dict) and len(v) == 1:
            (tag, x), = v.items()
            if tag == "$f" and x in ("nan", "inf", "-inf"):
                return float(x)
            if tag == "$np":
                a = self.array(x)
                if a.ndim or a.dtype.kind == "O":
                    raise BlockFormatError("a scalar is malformed")
                return a[()]
            if tag == "$arr":
                return self.array(x)
            if tag == "$dtype" and isinstance(x, str):
                d = np.dtype(x)
                if d.kind not in _KINDS or d.fields is not None:
                    raise BlockFormatError(f"dtype {d} is not kept")
                return d
            if tag in ("$list", "$tuple") and isinstance(x, list):
                out = [self.value(y) for y in x]
                return out if tag == "$list" else tuple(out)
            if tag == "$dict" and isinstance(x, dict):
                return {k: self.value(y) for k, y in x.items()}
        raise BlockFormatError("an attribute is malformed")


def decode_block(raw: bytes, *, start: int, stop: int, fingerprint: str):
    """The Dataset in a block file's bytes, if they are whole and are the block
    ``start..stop-1`` of the run ``fingerprint``; else BlockFormatError saying why."""
    import xarray as xr

    if not raw.startswith(MAGIC):
        raise BlockFormatError("not a block file of this antiamp version")
    rest = memoryview(raw)[len(MAGIC):]
    digest, body = bytes(rest[:64]), rest[65:]
    if bytes(rest[64:65]) != b"\n" or hashlib.sha256(body).hexdigest().encode() != digest:
        raise BlockFormatError("its checksum does not match its contents")
    nl = bytes(body[:24]).find(b"\n")
    if nl < 1 or not bytes(body[:nl]).isdigit():
        raise BlockFormatError("its header is malformed")
    n = int(bytes(body[:nl]))
    if nl + 1 + n > len(body):
        raise BlockFormatError("its header is cut short")
    try:
        header = json.loads(bytes(body[nl + 1:nl + 1 + n]))
        who = header["block"]
        segments = header["segments"]
    except Exception:
        raise BlockFormatError("its header is malformed") from None
    if who.get("fingerprint") != fingerprint:
        raise BlockFormatError("it belongs to another run (its fingerprint differs)")
    if (who.get("start"), who.get("stop")) != (start, stop):
        raise BlockFormatError(f"it holds cells {who.get('start')}..{who.get('stop', 1) - 1}"
                               f", not {start}..{stop - 1}")
    payload = body[nl + 1 + n:]
    if (not isinstance(segments, list)
            or not all(isinstance(s, list) and len(s) == 2
                       and all(isinstance(x, int) and x >= 0 for x in s)
                       and s[0] + s[1] <= len(payload) for s in segments)):
        raise BlockFormatError("its segment table is malformed")
    dec = _Decoder(payload, segments)
    try:
        def variable(v):
            return v["name"], xr.Variable(tuple(v["dims"]), dec.array(v["data"]),
                                          attrs=dec.value(v["attrs"]),
                                          encoding=dec.value(v["encoding"]))

        coords = dict(variable(v) for v in header["coords"])
        data = dict(variable(v) for v in header["data_vars"])
        ds = xr.Dataset(data, coords=coords, attrs=dec.value(header["attrs"]))
        ds.encoding = dec.value(header["encoding"])
    except BlockFormatError:
        raise
    except Exception as exc:
        raise BlockFormatError(f"its contents are malformed ({type(exc).__name__})") from None
    if ds.sizes.get("cell") != stop - start:
        raise BlockFormatError(f"it holds no 'cell' dimension of length {stop - start}")
    return ds


# ----------------------------------------------------------------------------- files
def write_block(part: Path, blk: tuple, ds, *, fingerprint: str, model: str) -> bool:
    """Keep a finished block in ``part``: written under a temporary name, synced and
    renamed, so that the file is whole or absent.  False (nothing written) for a
    Dataset this format cannot hold exactly: that block is recomputed on resume."""
    try:
        raw = encode_block(ds, start=blk[0], stop=blk[1], fingerprint=fingerprint,
                           model=model)
    except BlockFormatError:
        return False
    path = block_file(part, blk)
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex[:8]}")
    # Not synced to disk before the rename: the file carries its own checksum, so one
    # that an operating-system crash left empty or torn is recomputed on resume like
    # any damaged block, and a kill of this process loses nothing already written
    # (a sync costs more than a fast model's whole block).
    with open(tmp, "xb") as fh:  # O_EXCL: a new file, never an existing one or a link
        try:
            fh.write(raw)
            fh.close()
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)  # ours (made above); absent once renamed
    return True


def read_block(part: Path, blk: tuple, *, fingerprint: str):
    """(Dataset, None) for a sound block file; (None, None) when there is none;
    (None, why) for a file that is not the block it should be (to be recomputed)."""
    path = block_file(part, blk)
    try:
        if path.is_symlink() or not path.is_file():
            return None, (None if not path.is_symlink() and not path.exists()
                          else "it is not a regular file")
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"it cannot be read ({exc.strerror or type(exc).__name__})"
    try:
        return decode_block(raw, start=blk[0], stop=blk[1], fingerprint=fingerprint), None
    except BlockFormatError as exc:
        return None, str(exc)
