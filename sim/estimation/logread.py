"""Reading a CSV log in bounded memory, whatever its size and its fields' lengths.

Two passes over the file, each holding one piece of it at a time:

* every field's length is checked against :data:`MAX_FIELD_BYTES` (fields of a log
  are labels and numbers): a longer one is refused naming its row and column,
  before the CSV parser sees it (pandas' parser holds a field whole, and a field
  of 100 MB took it to gigabytes or a segmentation fault);
* the rows are parsed in pieces of :data:`ROWS_PER_PIECE`, each integer column
  held in the smallest integer type that holds its values (the same values:
  answers and 0/1 flags are 1 byte a row, not 8) and the label columns as
  categories, then joined.
"""

from __future__ import annotations

import numpy as np

#: Longest field (in bytes) a log may hold.
MAX_FIELD_BYTES = 1 << 16
#: Bytes of the file examined at a time by the field check.
SCAN_BYTES = 1 << 22
#: Rows parsed at a time.
ROWS_PER_PIECE = 1 << 20
#: Label columns, held as categories.
CATEGORIES = ("protocol", "stratum")

_QUOTE, _COMMA, _NL = ord('"'), ord(","), ord("\n")


def check_field_lengths(path, name: str, error, limit: int = MAX_FIELD_BYTES) -> None:
    """``error(message)`` is raised for the first field longer than ``limit`` bytes,
    naming its row (0 the first row after the header) and its column."""
    head = b""
    quotes = 0  # quote characters so far: inside a quoted field while odd
    last = -1  # offset of the last field boundary (a comma or a newline outside quotes)
    line, col = 0, 0  # the current field's line (0: the header) and column
    header = None  # the header's number of fields
    offset = 0
    with open(path, "rb") as fh:
        while piece := fh.read(SCAN_BYTES):
            if offset == 0:
                head = piece[: limit + 2]
            a = np.frombuffer(piece, np.uint8)
            q = a == _QUOTE
            inside = ((np.cumsum(q, dtype=np.uint8) + np.uint8(quotes & 1)) & 1).astype(bool)
            quotes += int(np.count_nonzero(q))
            ends = np.flatnonzero(((a == _COMMA) | (a == _NL)) & ~inside)
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


def read_csv(path, name: str, error):
    """The log at ``path`` as a DataFrame (see the module's docstring); the errors of
    pandas' parser pass through, and ``error`` names a field that is too long."""
    import pandas as pd
    from pandas.api.types import union_categoricals

    from ..inputs import csv_header

    check_field_lengths(path, name, error)
    csv_header(path, error, name)  # bounded, and no column named twice
    pieces = []
    with pd.read_csv(path, encoding="utf-8", encoding_errors="strict",
                     dtype={c: "category" for c in CATEGORIES},
                     chunksize=ROWS_PER_PIECE) as reader:
        for piece in reader:
            for c in piece.columns:
                if piece[c].dtype.kind in "iu":
                    piece[c] = pd.to_numeric(piece[c], downcast="integer")
            pieces.append(piece)
    if len(pieces) == 1:
        return pieces[0]
    columns = list(pieces[0].columns)
    cats = {c: union_categoricals([p[c] for p in pieces])
            for c in sorted(CATEGORIES, key=lambda c: columns.index(c) if c in columns else 0)
            if c in columns
            and all(isinstance(p[c].dtype, pd.CategoricalDtype) for p in pieces)}
    df = pd.concat([p.drop(columns=list(cats)) for p in pieces], ignore_index=True)
    del pieces
    for c, v in cats.items():  # back in their place, as one categorical each
        df.insert(columns.index(c), c, pd.Series(v, index=df.index))
    return df
