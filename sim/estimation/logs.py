"""Reading and checking oversight logs: the schema's columns, labels, answers, rounds
and roles, read from CSV or Parquet in bounded memory (or from Inspect eval logs),
every problem a :class:`LogError` naming the column and the row.

The first job of ``antiamp-estimate``; the estimators (:mod:`antiamp.estimate`), the
structural fit (:mod:`antiamp.estimation.structural`), the predictive checks
(:mod:`antiamp.estimation.predictive`) and the field's metrics (:mod:`antiamp.oversight_metrics`)
read what it returns.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..lazy import lazy

pd = lazy("pandas")
stats = lazy("scipy.stats")

from ..transcripts import SCHEMA


BINARY = ("a", "y", "e_P", "e_A", "omega", "t_P", "t_A", "label_blind", "s")
PROTOCOLS = ("consult", "debate")
#: Other spellings of the protocols, mapped with a note in the report.
PROTOCOL_ALIASES = {"consultancy": "consult", "consultant": "consult", "debates": "debate"}
#: Answer columns that may be written as letters: A = 0, B = 1.
ANSWERS = ("a", "y", "omega", "s")
LETTERS = {chr(ord("a") + i): i for i in range(26)}
#: Most answers per question (answers are 0..K-1).
MAX_ANSWERS = 1000


class LogError(ValueError):
    """A malformed log: the message names the column and the row."""


# ------------------------------------------------------------------ reading
#: Largest Parquet log (read whole into memory; sim/inputs.py holds every bound).
MAX_PARQUET_BYTES = 1 << 30
#: Largest round number of a log (the per-round estimates are a table by round).
MAX_ROUND = 10_000


def load_log(path, mapping=None) -> pd.DataFrame:
    """Read and validate a log (CSV, Parquet, or Inspect ``.eval`` logs: a file or a
    folder of them, read by :mod:`antiamp.estimation.inspect_logs` with ``mapping``, the path of a
    mapping file); raise LogError naming column and row."""
    path = Path(path)
    if not path.exists():
        raise LogError(f"no such file: {path}")
    if not path.is_dir():  # no FIFO, device or /proc file, whatever its name
        from ..inputs import check_input

        check_input(path, "csv", LogError, path.name)
    if mapping is not None or path.suffix.lower() == ".eval" or (
            path.is_dir() and any(path.rglob("*.eval"))):
        from .inspect_logs import load_inspect, load_mapping

        return load_inspect(path, mapping and load_mapping(mapping, LogError), LogError,
                            validate_log)
    if path.is_dir():
        raise LogError(f"{path} is a directory with no Inspect .eval log under it; give a "
                       ".csv or .parquet log, an Inspect .eval log or a folder of them")
    kind = path.suffix.lower()
    if kind not in (".csv", ".parquet"):
        raise LogError(f"{path.name}: the log must be a .csv or .parquet file or an Inspect "
                       ".eval log (Inspect's .json logs: convert them with 'inspect log "
                       "convert --to eval --output-dir DIR LOG')")
    from ..inputs import check_input, csv_header, parquet_columns

    # a regular file of bounded size and columns (sim/inputs.py), before it is read
    if check_input(path, kind[1:], LogError, path.name) == 0:
        raise LogError(f"{path.name} is empty")
    if kind == ".parquet":
        parquet_columns(path, LogError, path.name)
    else:
        csv_header(path, LogError, path.name)
    try:
        if kind == ".parquet":
            df = pd.read_parquet(path)
        else:
            # In bounded memory: fields of bounded length, rows in pieces, labels as
            # categories (one string per distinct label, not per row).
            from .logread import read_csv

            df = read_csv(path, path.name, LogError)
    except LogError:  # a field too long, named
        raise
    except MemoryError:
        raise LogError(f"{path.name} does not fit in this machine's memory") from None
    except UnicodeDecodeError as exc:
        raise LogError(f"{path.name} is not UTF-8 text (byte {exc.start} cannot be decoded); "
                       "save the log as UTF-8") from None
    except pd.errors.EmptyDataError:
        raise LogError(f"{path.name} has no header and no rows") from None
    except pd.errors.ParserError as exc:
        raise LogError(f"{path.name}: {str(exc).strip().splitlines()[-1]} (every row must "
                       "have as many fields as the header)") from None
    except (OSError, ValueError) as exc:  # unreadable, or not Parquet (pyarrow's errors)
        what = "Parquet" if kind == ".parquet" else "CSV"
        raise LogError(f"{path.name} cannot be read as {what}: "
                       f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
                       ) from None
    dup = df.columns[df.columns.duplicated()]
    if len(dup):
        raise LogError(f"{path.name}: the column {str(dup[0])!r} appears twice; each column "
                       "may appear once")
    return validate_log(df)


def label_column(col: pd.Series, lower: bool = False) -> pd.Series:
    """A label column as a categorical of stripped strings (missing stays missing):
    one string per distinct label, not one per row, for logs of millions of rows."""
    codes, uniq = pd.factorize(col)  # missing -> -1
    names = [str(u).strip().lower() if lower else str(u).strip() for u in uniq]
    cats = sorted(set(names))
    where = {c: i for i, c in enumerate(cats)}
    remap = np.array([where[n] for n in names] + [-1], dtype=np.int64)
    return pd.Series(pd.Categorical.from_codes(remap[codes], categories=cats), index=col.index)


def show_value(v) -> str:
    """A cell's value as the user wrote it (0.99, 'x'), never numpy's repr."""
    return repr(v.item() if hasattr(v, "item") else v)


#: Columns other modules read beside the schema's (several judgments of one room).
OTHER_COLUMNS = ("room", "judge_role")
#: What is lost when a known column is missing, for the "did you mean" message.
_MISSING_MEANS = {
    "judge_id": "the standard errors would not be clustered by judge (every row its own "
                "cluster)",
    "stratum": "every row would be one stratum",
    "omega": "no row would have a known truth",
    "role": "every debate would be read as having open roles",
}


def check_column_names(columns) -> None:
    """LogError for a column the schema does not know that looks like one it does and
    the log lacks (``judge`` or ``judgeid`` for ``judge_id``): read as it is it would be
    ignored silently.  difflib's ratio, as argparse's and Hydra's suggestions use."""
    import difflib

    known = list(SCHEMA) + list(OTHER_COLUMNS)
    present = {str(c) for c in columns}
    absent = [k for k in known if k not in present]
    lower = {k.lower(): k for k in absent}
    for col in map(str, columns):
        if col in known:
            continue
        c = col.strip().lower()
        # close (judgeid, judge_ID), or a part of the name (judge): not merely alike
        # (mode and role are 0.75 alike, and a log may well have a mode column)
        near = [k for k in difflib.get_close_matches(c, list(lower), n=3, cutoff=0.75)
                if difflib.SequenceMatcher(None, c, k).ratio() >= 0.85
                or c.replace("_", "") in k.replace("_", "")][:1]
        if near:
            k = lower[near[0]]
            raise LogError(f"column {col!r} is not in the log schema: did you mean {k!r}? "
                           f"Rename it; left as it is it would be ignored, and "
                           f"{_MISSING_MEANS.get(k, f'{k} would not be read')}")


def validate_log(df: pd.DataFrame) -> pd.DataFrame:
    check_column_names(df.columns)
    missing = [c for c, (req, _) in SCHEMA.items() if req and c not in df.columns]
    if missing:
        one = str(df.columns[0]) if len(df.columns) == 1 else ""
        sep = next((c for c in ";\t|" if c in one), None)
        raise LogError(f"missing required column(s): {', '.join(missing)} "
                       f"(required: {', '.join(c for c, (r, _) in SCHEMA.items() if r)})"
                       + (f"; the header is one column, {one[:60]!r}: a CSV log's columns "
                          f"are separated by commas, not {sep!r} (save it as comma-separated)"
                          if sep else ""))
    if len(df) == 0:
        raise LogError("the log has no rows")
    df = df.reset_index(drop=True)  # a new frame: the caller's is left as it was
    notes = []
    prot = label_column(df["protocol"], lower=True)
    alias = {k: v for k, v in PROTOCOL_ALIASES.items() if k in set(prot.cat.categories)}
    if alias:
        prot = label_column(prot.astype(object).map(lambda c: alias.get(c, c)))
        notes.append("column 'protocol': " + ", ".join(f"{k!r} read as {v!r}"
                                                       for k, v in alias.items()))
    for col in ANSWERS:
        if col not in df.columns or df[col].dtype.kind in "biuf":
            continue
        txt = df[col].astype("string").str.strip().str.lower()
        letter = txt.isin(list(LETTERS)).fillna(False).to_numpy(bool)
        if letter.any():
            bad = txt.notna().to_numpy(bool) & ~letter
            if bad.any():
                r = int(np.flatnonzero(bad)[0])
                raise LogError(f"column {col!r}, row {r}: value {show_value(df[col][r])} is not an "
                               f"answer (the column's other answers are letters A, B, ...)")
            df[col] = txt.map(LETTERS).astype(float)
            notes.append(f"column {col!r}: answers written as letters read as 0, 1, ... "
                         f"(A = 0, B = 1)")
    df.attrs["notes"] = notes
    bad = ~prot.isin(PROTOCOLS)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise LogError(f"column 'protocol', row {r}: unknown protocol {show_value(df['protocol'][r])} "
                       f"(allowed: {', '.join(PROTOCOLS)})")
    df["protocol"] = prot
    for col in BINARY:
        if col not in df.columns:
            continue
        v = pd.to_numeric(df[col], errors="coerce")
        if col in ANSWERS:
            check_answers(df, col, v)
            if col != "s" and v.isna().any() and col != "omega":
                r = int(np.flatnonzero(v.isna())[0])
                raise LogError(f"column {col!r}, row {r}: value is missing")
            if v.dtype.kind in ("b", "u"):  # (True/False or unsigned: signed, as 1 - a needs)
                v = v.astype(float) if v.isna().any() else v.astype(np.int64)
            df[col] = v
            continue
        nonnum = v.isna() & df[col].notna()
        if nonnum.any():
            r = int(np.flatnonzero(nonnum)[0])
            raise LogError(f"column {col!r}, row {r}: value {show_value(df[col][r])} is not 0 or 1")
        bad = v.notna() & ~v.isin([0, 1])
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise LogError(f"column {col!r}, row {r}: value {show_value(df[col][r])} is not 0 or 1")
        may_miss = col in ("t_P", "t_A", "label_blind", "e_A")
        if not may_miss and v.isna().any():
            r = int(np.flatnonzero(v.isna())[0])
            raise LogError(f"column {col!r}, row {r}: value is missing")
        if v.dtype.kind in ("b", "u"):  # True/False, or unsigned: e_P - e_A of uint8 0 and 1
            # would wrap to 255 (and assigned debates swap these columns with signed ones)
            v = v.astype(float) if v.isna().any() else v.astype(np.int8)
        df[col] = v
    if "e_A" not in df.columns:
        if (df["protocol"] == "debate").any():
            r = int(np.flatnonzero(df["protocol"] == "debate")[0])
            raise LogError(f"column 'e_A' is missing but row {r} is a debate row")
        df["e_A"] = 0.0
    deb_na = (df["protocol"] == "debate") & df["e_A"].isna()
    if deb_na.any():
        r = int(np.flatnonzero(deb_na)[0])
        raise LogError(f"column 'e_A', row {r}: missing on a debate row")
    df.loc[df["protocol"] == "consult", "e_A"] = df.loc[df["protocol"] == "consult", "e_A"].fillna(0)
    if "stratum" in df.columns:
        s = df["stratum"]
        s = label_column(s)
        empty = s.isna() | (s == "")
        if empty.any():
            r = int(np.flatnonzero(empty)[0])
            raise LogError(f"column 'stratum', row {r}: empty stratum label")
        df["stratum"] = s
    else:
        df["stratum"] = "all"
    for col in ("v_P", "v_A"):
        if col in df.columns:
            v = pd.to_numeric(df[col], errors="coerce")
            bad = v.isna() & df[col].notna()
            if bad.any():
                r = int(np.flatnonzero(bad)[0])
                raise LogError(f"column {col!r}, row {r}: value {show_value(df[col][r])} is not a "
                               f"number")
            inf = np.isinf(v.to_numpy(float))
            if inf.any():
                r = int(np.flatnonzero(inf)[0])
                raise LogError(f"column {col!r}, row {r}: value {show_value(df[col][r])} is not a "
                               f"finite number (a graded evidence score)")
            # as floats: v_P - v_A of small integer (or unsigned) scores would wrap
            df[col] = v.astype(float)
    if "v_A" in df.columns:  # no antagonist in consultancy: a blank v_A is 0, as e_A is
        df.loc[df["protocol"] == "consult", "v_A"] = \
            df.loc[df["protocol"] == "consult", "v_A"].fillna(0.0)
    if "p_y" in df.columns:
        v = pd.to_numeric(df["p_y"], errors="coerce")
        bad = (v.isna() & df["p_y"].notna()) | (v.notna() & ~v.between(0.0, 1.0))
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise LogError(f"column 'p_y', row {r}: value {show_value(df['p_y'][r])} is not a "
                           f"probability in [0, 1]")
        df["p_y"] = v
    df = check_rounds(df)
    K = n_answers(df)
    df.attrs["K"] = K
    if K > 2:
        notes.append(f"{K} answers (0 to {K - 1}): Amp = Pr(y = a | a != omega), accuracy "
                     f"Pr(y = omega)")
    df = symmetric_roles(df, notes)
    judges_logged = "judge_id" in df.columns
    if not judges_logged:
        df["judge_id"] = np.arange(len(df))  # no clustering information: one per row
    else:  # a row without its judge would fall out of every judge-clustered sum
        gone = df["judge_id"].isna()
        if gone.any():
            r = int(np.flatnonzero(gone)[0])
            raise LogError(f"column 'judge_id', row {r}: value is missing (every row needs "
                           f"its judge; without the column every row is its own cluster)")
    if df["omega"].notna().sum() == 0 if "omega" in df.columns else True:
        raise LogError("column 'omega': no row has a known ground truth; Amp needs some")
    df.attrs["notes"] = list(notes)
    df.attrs["K"] = K
    df.attrs["judges_logged"] = judges_logged  # (False: judge_id filled in, one per row)
    return df


def check_answers(df: pd.DataFrame, col: str, v: pd.Series) -> None:
    """Answer columns hold answer indices 0..K-1 (two answers: 0 or 1)."""
    bad = (v.isna() & df[col].notna()) | (v.notna() & ((v < 0) | (v != np.round(v))
                                                        | (v >= MAX_ANSWERS)))
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        hint = (" (a judge's probability for the protagonist's answer belongs in column p_y, "
                "beside the label)" if col == "y" and 0 < v[r] < 1 else "")
        raise LogError(f"column {col!r}, row {r}: value {show_value(df[col][r])} is not an answer "
                       f"(0, 1, ... up to {MAX_ANSWERS - 1}, or a letter){hint}")


def n_answers(df: pd.DataFrame) -> int:
    """K: the number of answers the log uses (at least 2)."""
    m = max(float(df[c].max()) for c in ("a", "y", "omega") if c in df.columns
            and df[c].notna().any())
    return max(2, int(m) + 1)


def check_rounds(df: pd.DataFrame) -> pd.DataFrame:
    """Check the optional ``round`` column: integers >= 1, one row per (protocol,
    instance, round), an ``instance`` column beside it."""
    if "round" not in df.columns:
        return df
    if "instance" not in df.columns:
        raise LogError("column 'round' needs a column 'instance' saying which rows belong to "
                       "one oversight instance")
    r = pd.to_numeric(df["round"], errors="coerce")
    bad = r.isna() | (r < 1) | (r > MAX_ROUND) | (r != np.round(r))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise LogError(f"column 'round', row {i}: value {show_value(df['round'][i])} is not a "
                       f"round number (an integer in [1, {MAX_ROUND:,}])")
    df["round"] = r.astype(np.int64)
    dup = df.duplicated(["protocol", "instance", "round"])
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        raise LogError(f"column 'round', row {i}: instance {show_value(df['instance'][i])} already "
                       f"has a {df['protocol'][i]} row for round {int(df['round'][i])}")
    return df


def select_round(df: pd.DataFrame, which="final") -> pd.DataFrame:
    """One row per instance: its last round (``final``) or round ``which``."""
    if "round" not in df.columns:
        return df
    if which == "final":
        last = df.groupby(["protocol", "instance"], observed=True)["round"].transform("max")
        keep = df["round"] == last
    else:
        keep = df["round"] == int(which)
        if not keep.any():
            raise LogError(f"--round {which}: no row of the log has round {which} (rounds "
                           f"{int(df['round'].min())} to {int(df['round'].max())})")
    out = df[keep].reset_index(drop=True)
    out.attrs = dict(df.attrs)
    return out


def amp_by_round(df: pd.DataFrame, confidence: float, cluster: str = "rows"):
    """Per protocol and round (all rows of that round with a known truth): Amp, its
    Wilson interval (statsmodels) and the rows it rests on, ``(rounds, arrays)``.
    With ``cluster="judge"`` the Wilson interval is adjusted for the rows' judges
    (:func:`antiamp.estimation.logstats.design_effect_wilson`)."""
    from .logstats import design_effect_wilson, wilson

    rounds = np.arange(1, int(df["round"].max()) + 1)
    out = {k: np.full((len(PROTOCOLS), len(rounds)), np.nan)
           for k in ("amp_round", "amp_round_lo", "amp_round_hi", "n_round")}
    known = df["omega"].notna()
    wrong = known & (df["a"] != df["omega"])
    for i, prot in enumerate(PROTOCOLS):
        for j, r in enumerate(rounds):
            m = wrong & (df["protocol"] == prot) & (df["round"] == r)
            n = int(m.sum())
            out["n_round"][i, j] = n
            if n:
                k = int((df["y"][m] == df["a"][m]).sum())
                out["amp_round"][i, j] = k / n
                if cluster == "judge":
                    lo, hi = design_effect_wilson((df["y"][m] == df["a"][m]).to_numpy(),
                                                  df["judge_id"][m].to_numpy(), confidence)
                else:
                    lo, hi = wilson(k, n, confidence)
                out["amp_round_lo"][i, j], out["amp_round_hi"][i, j] = lo, hi
    return rounds, out


ROLES = ("open", "assigned")
SWAP = (("e_P", "e_A"), ("v_P", "v_A"), ("t_P", "t_A"))


def symmetric_roles(df: pd.DataFrame, notes: list) -> pd.DataFrame:
    """Debates with assigned roles, written role-symmetrically.

    With open roles the protagonist's answer a is its own choice and Amp = Pr(y = a |
    a wrong) is a property of the protocol.  With assigned roles which debater a log
    calls the protagonist is arbitrary, and Amp, b-hat and mu~ change with it.  Each
    assigned debate with a known truth is relabelled so that the protagonist is the
    debater assigned the wrong answer (a = 1 - omega, evidence columns and p_y
    swapped where that changes the label): Amp is then Pr(the judge sides with the
    wrong debater), which no labelling changes; follow-when-correct has no rows, and
    b-hat (a lean toward a role) is not defined.  Assigned debates without a known
    truth are left out, with a note."""
    if "role" not in df.columns:  # every role open: nothing to read differently
        return df
    role = label_column(df["role"].fillna("open"), lower=True)
    bad = ~role.isin(ROLES)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise LogError(f"column 'role', row {r}: value {show_value(df['role'][r])} is not open or "
                       f"assigned")
    df["role"] = role
    assigned = (role == "assigned") & (df["protocol"] == "debate")
    if not assigned.any():
        return df
    if df.attrs.get("K", 2) > 2:
        r = int(np.flatnonzero(assigned)[0])
        raise LogError(f"column 'role', row {r}: assigned debate roles are read "
                       f"role-symmetrically only with two answers (the log has "
                       f"{df.attrs['K']}; the antagonist's answer is not in the schema)")
    unknown = assigned & df["omega"].isna()
    if unknown.any():
        notes.append(f"{int(unknown.sum())} assigned-role debate row(s) without a known truth "
                     f"left out (the role-symmetric Amp needs the truth)")
        df = df[~unknown].reset_index(drop=True)
        assigned = assigned[~unknown].reset_index(drop=True)
    flip = assigned & (df["a"] == df["omega"])
    df.loc[flip, "a"] = 1 - df.loc[flip, "a"]
    for x, z in SWAP:
        if x in df.columns and z in df.columns:
            if df[x].dtype != df[z].dtype:  # (int8 and int64, counts and scores: pandas
                # will not write one column's values into the other's type)
                df[x], df[z] = df[x].astype(float), df[z].astype(float)
            df.loc[flip, [x, z]] = df.loc[flip, [z, x]].to_numpy()
    if "p_y" in df.columns:
        df.loc[flip, "p_y"] = 1 - df.loc[flip, "p_y"]
    notes.append(f"{int(assigned.sum())} debate row(s) with assigned roles: the protagonist "
                 f"is read as the debater assigned the wrong answer, so debate Amp is "
                 f"Pr(the judge sides with the wrong debater) whichever debater the log "
                 f"called the protagonist; b-hat and follow-when-correct are not defined "
                 f"for them")
    return df
