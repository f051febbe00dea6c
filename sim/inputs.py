"""One reader policy for every input file antiamp reads.

Every input (a CSV or Parquet log, an Inspect ``.eval`` log and its members, a
``--mapping`` file, a bets or votes file) passes :func:`check_input` before a byte
of it is read:

- a regular file only: a FIFO would block the reader forever, a device
  (``/dev/zero``) or a ``/proc`` file has no size to bound and never ends;
- its size (``os.stat``) at most the bound of its kind (:data:`MAX_BYTES`);
- a zip archive (an Inspect ``.eval`` log): its number of members at most
  :data:`MAX_MEMBERS`, from its end record before its directory is parsed; each
  member's size, as the archive's directory declares it, at most :data:`MAX_MEMBER_BYTES`, and all of them
  together at most the log's bound, before anything is decompressed (Python's
  zipfile never returns more than the directory declares, so a member cannot
  decompress past it);
- a table's columns at most :data:`MAX_COLUMNS` (read from the CSV header or the
  Parquet footer alone), and no column named twice (pandas would read the second
  as ``<name>.1`` and the file's meaning would silently change);
- a CSV's fields at most :data:`MAX_FIELD_BYTES` each and no row with more fields
  than the header (:func:`check_field_lengths`, one pass in pieces: pandas took the
  extra fields of a row as an index, shifting its columns or, for 10^6 of them,
  running for minutes).

Each refusal is one line naming the file, the bound, and the environment variable
that lifts it (:data:`ENV_BYTES`, :data:`ENV_COLUMNS`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: Largest file of each kind (bytes).  CSV logs are read in pieces in bounded
#: memory, so their bound is generous; the others are read whole.
MAX_BYTES = {
    "csv": 16 << 30,
    "parquet": 1 << 30,
    "eval": 4 << 30,
    "mapping": 1 << 20,
    "table": 256 << 20,  # bets and votes files
    "yaml": 1 << 20,
}
#: Largest member of a zip archive (an Inspect log's header or one sample), bytes
#: once decompressed.
MAX_MEMBER_BYTES = 256 << 20
#: Most members of a zip archive (an Inspect log holds about two a sample: 100,000
#: samples), read from the archive's end record before its directory is parsed (a
#: directory of 300,000 empty members took zipfile 5-9 s and 340 MB).
MAX_MEMBERS = 200_000
#: Most columns of a table (a log has about twenty).
MAX_COLUMNS = 4096
#: Environment variables that lift the bounds: a number of bytes (every size bound,
#: members included, becomes that number) and a number of columns.
ENV_BYTES = "ANTIAMP_MAX_INPUT_BYTES"
ENV_COLUMNS = "ANTIAMP_MAX_COLUMNS"
#: ... and a number of members of a zip archive.
ENV_MEMBERS = "ANTIAMP_MAX_MEMBERS"


def _lifted(env: str, default: int) -> int:
    v = os.environ.get(env, "").strip()
    try:
        return max(int(v), 0) if v else default
    except ValueError:
        return default


def byte_bound(kind: str) -> int:
    """The size bound of a kind of input (lifted by :data:`ENV_BYTES`)."""
    return _lifted(ENV_BYTES, MAX_BYTES[kind])


def member_bound() -> int:
    return _lifted(ENV_BYTES, MAX_MEMBER_BYTES)


def column_bound() -> int:
    return _lifted(ENV_COLUMNS, MAX_COLUMNS)


def _what(st_mode: int) -> str:
    if stat.S_ISFIFO(st_mode):
        return "a FIFO (a named pipe)"
    if stat.S_ISCHR(st_mode) or stat.S_ISBLK(st_mode):
        return "a device"
    if stat.S_ISSOCK(st_mode):
        return "a socket"
    if stat.S_ISDIR(st_mode):
        return "a directory"
    return "not a regular file"


def check_input(path, kind: str, error, name: str | None = None) -> int:
    """``error`` (one line naming the file and the bound) unless ``path`` is a regular
    file of at most the kind's bound; returns its size.  Nothing is opened: a FIFO
    is refused before a reader could block on it."""
    path = Path(path)
    name = name or str(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error(f"{name}: no such file") from None
    except OSError as exc:
        raise error(f"{name} cannot be read: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{name} is {_what(st.st_mode)}; antiamp reads only regular files")
    if str(os.path.realpath(path)).startswith("/proc/"):  # sizes of 0 that never end
        raise error(f"{name} is a /proc file; antiamp reads only regular files")
    bound = byte_bound(kind)
    if st.st_size > bound:
        raise error(f"{name} has {st.st_size:,} bytes, over the bound of {bound:,} bytes "
                    f"for this input; set {ENV_BYTES}=<bytes> to lift it")
    return st.st_size


def special_entry(store, top_only: bool = False) -> str | None:
    """The first entry of a store (a folder of files: Zarr) that is neither a regular
    file nor a folder, once links are followed (a FIFO, a device, a socket: a reader
    of the store would block on it or never finish), as ``"<path> is a FIFO ..."``;
    None if there is none.  ``top_only``: the store's own entries only (its root
    metadata, all that telling whether it is antiamp's reads).  The entries are
    listed, never opened."""
    stack = [Path(store)]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue  # unreadable: left to the reader, which says so
        for e in entries:
            try:
                mode = os.stat(e.path).st_mode
            except OSError:
                continue  # a dangling link: a missing file to the reader
            if stat.S_ISDIR(mode):
                if not top_only and not e.is_symlink():
                    stack.append(Path(e.path))
            elif not stat.S_ISREG(mode):
                return f"{e.path} is {_what(mode)}"
    return None


def zip_members(path) -> int | None:
    """The number of members a zip archive's end record declares (its zip64 record's
    where it has one), read from the file's last 64 KiB; None where there is none (no
    zip archive, or a damaged one: its reader says what is wrong).  By hand because
    zipfile reads the end record only as it parses the whole directory."""
    import struct

    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - (22 + 0xFFFF)))
            tail = f.read()
            at = tail.rfind(b"PK\x05\x06")
            if at < 0 or len(tail) - at < 22:
                return None
            n = struct.unpack("<H", tail[at + 10:at + 12])[0]
            loc = at - 20  # the zip64 end record's locator, just before
            if n == 0xFFFF and loc >= 0 and tail[loc:loc + 4] == b"PK\x06\x07":
                f.seek(struct.unpack("<Q", tail[loc + 8:loc + 16])[0])
                rec = f.read(40)
                if rec[:4] == b"PK\x06\x06" and len(rec) == 40:
                    n = struct.unpack("<Q", rec[32:40])[0]
            return int(n)
    except (OSError, struct.error, ValueError):
        return None


def check_zip(path, error, name: str | None = None) -> None:
    """``error`` for a zip archive a member of which (or all of which together)
    declares more bytes than the bounds, read from the archive's directory before
    anything is decompressed; a file that is no zip archive is left to its reader
    (which names what is wrong)."""
    import zipfile

    name = name or str(path)
    members, most = zip_members(path), _lifted(ENV_MEMBERS, MAX_MEMBERS)
    if members is not None and members > most:
        raise error(f"{name}: the archive declares {members:,} members, over the bound of "
                    f"{most:,}; set {ENV_MEMBERS}=<members> to lift it")
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return
    bound, total_bound = member_bound(), byte_bound("eval")
    total = 0
    for info in infos:
        if info.file_size > bound:
            raise error(f"{name}: member {info.filename!r} has {info.file_size:,} bytes once "
                        f"decompressed, over the bound of {bound:,} bytes for one member; "
                        f"set {ENV_BYTES}=<bytes> to lift it")
        total += info.file_size
    if total > total_bound:
        raise error(f"{name}: its members have {total:,} bytes once decompressed, over the "
                    f"bound of {total_bound:,} bytes; set {ENV_BYTES}=<bytes> to lift it")


def check_columns(names, error, name: str) -> None:
    """``error`` for more than :func:`column_bound` columns or a column named twice."""
    names = list(names)
    bound = column_bound()
    if len(names) > bound:
        raise error(f"{name} has {len(names):,} columns, over the bound of {bound:,}; set "
                    f"{ENV_COLUMNS}=<columns> to lift it")
    seen = set()
    for n in names:
        if n in seen:
            raise error(f"{name}: the header names the column {n!r} twice; each column may "
                        "appear once")
        seen.add(n)


def csv_header(path, error, name: str, comment: str | None = None) -> list:
    """The names of a CSV file's header (its first line that is not a ``comment``
    line), read in bounded memory: ``error`` when the header is longer than the
    column bound allows (a field of up to 64 KiB per column), has too many columns,
    or names a column twice."""
    import csv
    import io

    limit = column_bound() * 64 + (1 << 16)  # bytes: the header of the most columns
    with open(path, "rb") as f:
        while True:
            line = f.readline(limit + 1)
            if comment is None or not line.lstrip().startswith(comment.encode()):
                break
    if len(line) > limit and not line.endswith(b"\n"):
        raise error(f"{name}: its header is longer than {limit:,} bytes (more than "
                    f"{column_bound():,} columns); set {ENV_COLUMNS}=<columns> to lift it")
    try:
        names = next(csv.reader(io.StringIO(line.decode("utf-8-sig"))), [])
    except (UnicodeDecodeError, csv.Error):
        return []  # the reader names what is wrong
    check_columns(names, error, name)
    return names


def parquet_columns(path, error, name: str) -> None:
    """The column bound of a Parquet file, read from its footer alone."""
    try:
        import pyarrow.parquet as pq

        n = pq.ParquetFile(path).metadata.num_columns
        if n > column_bound():
            check_columns(range(n), error, name)
        names = pq.read_schema(path).names
    except Exception as exc:  # noqa: BLE001 - not Parquet: the reader says so
        if isinstance(exc, error):
            raise
        return
    check_columns(names, error, name)


# ------------------------------------------------------------------ CSV rows
#: Longest field (in bytes) a log may hold.
MAX_FIELD_BYTES = 1 << 16
#: Bytes of the file examined at a time by the field check.
SCAN_BYTES = 1 << 22
_QUOTE, _COMMA, _NL = ord('"'), ord(","), ord("\n")


def check_field_lengths(path, name: str, error, limit: int = MAX_FIELD_BYTES,
                        header: int | None = None, comment: str | None = None) -> None:
    """``error(message)`` is raised for the first field longer than ``limit`` bytes,
    naming its row (0 the first row after the header) and its column, and for the
    first row with more fields than the header (``header`` fields; by default those
    of the first line).  With ``comment``, what follows that character on a line (a
    comment, as pandas reads it) holds no field boundary."""
    import numpy as np

    hash_ = ord(comment) if comment else None
    in_comment = False  # the line open at a piece's start is in a comment
    head = b""
    quotes = 0  # quote characters so far: inside a quoted field while odd
    last = -1  # offset of the last field boundary (a comma or a newline outside quotes)
    line, col = 0, 0  # the current field's line (0: the header) and column
    offset = 0
    with open(path, "rb") as fh:
        while piece := fh.read(SCAN_BYTES):
            if offset == 0:
                head = piece[: limit + 2]
            a = np.frombuffer(piece, np.uint8)
            q = a == _QUOTE
            inside = ((np.cumsum(q, dtype=np.uint8) + np.uint8(quotes & 1)) & 1).astype(bool)
            quotes += int(np.count_nonzero(q))
            nl_at = (a == _NL) & ~inside
            comma = (a == _COMMA) & ~inside
            if hash_ is not None:  # commas after a comment character on its line
                line_of = np.cumsum(nl_at) - nl_at  # each byte's line within the piece
                first = np.full(int(line_of[-1]) + 1, len(a), np.int64)
                hashes = np.flatnonzero((a == hash_) & ~inside)
                np.minimum.at(first, line_of[hashes], hashes)
                if in_comment:
                    first[0] = -1
                comma &= np.arange(len(a)) < first[line_of]
                in_comment = bool(first[-1] < len(a)) and not nl_at[-1]
            ends = np.flatnonzero(comma | nl_at)
            lengths = np.diff(np.concatenate(([last - offset], ends))) - 1
            long_ = np.flatnonzero(lengths > limit)
            open_ = offset + len(a) - 1 - (offset + int(ends[-1]) if len(ends) else last)
            k = int(long_[0]) if len(long_) else len(ends)
            nl = np.flatnonzero(a[ends[:k]] == _NL)
            line_k = line + len(nl)
            col_k = k - 1 - int(nl[-1]) if len(nl) else col + k
            if len(long_) or open_ > limit:
                _refuse(error, name, head, line_k, col_k, limit)
            # each row ended in this piece: its number of fields (the first one's
            # continues the row open at the piece's start, ``col`` fields in)
            rows = np.flatnonzero(a[ends] == _NL)
            if len(rows):
                widths = np.diff(np.concatenate(([-1], rows)))
                widths[0] += col
                if header is None:
                    header = int(widths[0])
                _check_widths(error, name, head, widths, line, header)
            if header is not None and col_k + 1 > header:  # the row still open
                _refuse_width(error, name, head, line_k, col_k + 1, header, exact=False)
            line, col = line_k, col_k
            if len(ends):
                last = offset + int(ends[-1])
            offset += len(a)


def _check_widths(error, name, head, widths, line, header) -> None:
    """A row with more fields than the header, refused: pandas would take the extra
    fields of a first such row as an index (shifting every column: a silent misreading)
    and a row of 10^6 fields as an index of 10^6 levels (minutes, gigabytes)."""
    import numpy as np

    over = np.flatnonzero(widths > header)
    if len(over):
        i = int(over[0])
        _refuse_width(error, name, head, line + i, int(widths[i]), header)


def _refuse_width(error, name, head, line, fields, header, exact=True) -> None:
    many = f"{fields:,}" if exact else f"{fields:,} or more"
    raise error(f"row {line - 1}: {many} fields, more than the header's {header} ({name}, "
                f"line {line + 1}); each row has one field per column of the header")


def _header_names(head: bytes) -> list:
    import csv
    import io

    first = head.split(b"\n", 1)[0].decode("utf-8", "replace")
    try:
        return next(csv.reader(io.StringIO(first)))
    except Exception:  # noqa: BLE001 - names are for the message only
        return []


def _refuse(error, name, head, line, col, limit):
    if line == 0:
        raise error(f"{name}: field {col + 1} of the header is longer than {limit:,} bytes; "
                    "a log's fields are labels and numbers")
    names = _header_names(head)
    what = repr(names[col]) if col < len(names) else f"{col + 1} (beyond the header)"
    raise error(f"column {what}, row {line - 1}: a field longer than {limit:,} bytes (a log's "
                f"fields are labels and numbers; {name}, line {line + 1})")
