"""Reading a CSV log in bounded memory, whatever its size and its fields' lengths.

Two passes over the file, each holding one piece of it at a time:

* every field's length is checked against :data:`antiamp.inputs.MAX_FIELD_BYTES`
  (fields of a log are labels and numbers): a longer one is refused naming its row
  and column, before the CSV parser sees it (pandas' parser holds a field whole, and
  a field of 100 MB took it to gigabytes or a segmentation fault), and so is a row
  with more fields than the header;
* the rows are parsed in pieces of :data:`ROWS_PER_PIECE`, each integer column
  held in the smallest integer type that holds its values (the same values:
  answers and 0/1 flags are 1 byte a row, not 8) and the label columns as
  categories, then joined.
"""

from __future__ import annotations

#: Rows parsed at a time.
ROWS_PER_PIECE = 1 << 20
#: Label columns, held as categories.
CATEGORIES = ("protocol", "stratum")


def read_csv(path, name: str, error):
    """The log at ``path`` as a DataFrame (see the module's docstring); the errors of
    pandas' parser pass through, and ``error`` names a field that is too long."""
    import pandas as pd
    from pandas.api.types import union_categoricals

    from ..inputs import check_field_lengths, csv_header

    names = csv_header(path, error, name)  # bounded, and no column named twice
    check_field_lengths(path, name, error, header=len(names) or None)
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
