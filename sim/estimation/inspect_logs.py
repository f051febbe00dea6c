"""Inspect eval logs (``.eval``) read as antiamp oversight logs.

Each sample of an Inspect eval log (one per epoch) becomes one row of the log
schema (:data:`antiamp.transcripts.SCHEMA`).  The log is read through Inspect's own
reader (``inspect_ai.log.read_eval_log``), so every log format Inspect reads is read
here, and nothing of Inspect's file format is parsed by hand.

Where a row's value comes from is a *source*:

- ``metadata.KEY``: the sample's metadata (the dataset's metadata and what solvers
  wrote into ``state.metadata``);
- ``store.KEY``: the sample's store (``state.store``);
- ``score.NAME.value``, ``score.NAME.value.KEY``, ``score.NAME.answer``,
  ``score.NAME.metadata.KEY``: a scorer's score (``NAME`` a scorer's name, or ``*``
  for the sample's only score);
- ``target``, ``id``, ``epoch``: the sample's own fields.

:data:`CONVENTIONS` gives each column its sources, tried in order (the first one a
sample has is used); a ``--mapping`` file (YAML or JSON: column -> source or list of
sources) replaces the sources of the columns it names.
"""

from __future__ import annotations

import json
import re
from pathlib import Path


from ..lazy import lazy

pd = lazy("pandas")

#: Column -> sources tried in order (see the module's docstring).  Required columns
#: must be found in every sample; optional ones where any sample has them.
CONVENTIONS: dict[str, list[str]] = {
    "protocol": ["metadata.protocol"],
    "a": ["metadata.argued"],
    "y": ["metadata.verdict", "score.*.answer"],
    "omega": ["metadata.gold", "target"],
    "e_P": ["metadata.evidence_P"],
    "e_A": ["metadata.evidence_A"],
    "p_y": ["metadata.judge_prob"],
    "v_P": ["metadata.score_P"],
    "v_A": ["metadata.score_A"],
    "role": ["metadata.role"],
    "judge_id": ["metadata.judge_id"],
    # The debater population (which models argued) stands for the stratum unless a
    # stratum is given.
    "stratum": ["metadata.stratum", "metadata.population"],
    "label_blind": ["metadata.label_blind"],
    "s": ["metadata.signal"],
    "round": ["metadata.round"],
    "instance": ["metadata.instance"],
}
#: What a team writes into each metadata key (for the error messages and the README).
MEANING = {
    "protocol": "consult or debate",
    "a": "the answer the consultant (debate: the protagonist) argued, a letter or index",
    "y": "the judge's verdict: the answer it chose, a letter or index",
    "omega": "the gold answer",
    "e_P": "1 if the protagonist quoted accepted evidence, else 0",
    "e_A": "1 if the antagonist quoted accepted evidence, else 0 (debate samples)",
}
REQUIRED = ("protocol", "a", "y", "e_P")
SOURCE = re.compile(r"^(metadata\.\S+|store\.\S+|score\.[^.\s]+\.(value(\.\S+)?|answer|"
                    r"metadata\.\S+)|target|id|epoch)$")
_MISSING = object()


def _import_inspect(error):
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise error("reading Inspect eval logs needs inspect-ai: pip install "
                    "'antiamp[inspect]'") from None
    return read_eval_log


def load_mapping(path, error=ValueError) -> dict[str, list[str]]:
    """The conventions with a mapping file's columns replaced (YAML or JSON)."""
    from ..transcripts import SCHEMA

    from ..inputs import check_input

    p = Path(path)
    check_input(p, "mapping", error, f"--mapping {path}")
    import yaml

    try:
        text = p.read_text(encoding="utf-8")
        raw = json.loads(text) if p.suffix.lower() == ".json" else yaml.safe_load(text)
    except (ValueError, UnicodeDecodeError, yaml.YAMLError) as exc:  # JSONDecodeError: ValueError
        what = "JSON" if p.suffix.lower() == ".json" else "YAML"
        raise error(f"--mapping {p.name} cannot be read as {what}: "
                    f"{str(exc).strip().splitlines()[0]}") from None
    if not isinstance(raw, dict):
        raise error(f"--mapping {p.name}: expected a mapping of column -> source "
                    f"(e.g. 'a: metadata.my_answer_key')")
    out = {k: list(v) for k, v in CONVENTIONS.items()}
    for col, src in raw.items():
        if col not in SCHEMA:
            raise error(f"--mapping {p.name}: unknown column {col!r} (columns: "
                        f"{', '.join(SCHEMA)})")
        srcs = [src] if isinstance(src, str) else src
        if not isinstance(srcs, list) or not srcs:
            raise error(f"--mapping {p.name}: column {col!r} needs a source or a list of "
                        f"sources")
        for s in srcs:
            if not isinstance(s, str) or not SOURCE.match(s):
                raise error(f"--mapping {p.name}: column {col!r}: {s!r} is not a source "
                            f"(allowed: metadata.KEY, store.KEY, score.NAME.value[.KEY], "
                            f"score.NAME.answer, score.NAME.metadata.KEY, target, id, "
                            f"epoch; NAME may be *)")
        out[col] = list(srcs)
    return out


def _get(d, keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return _MISSING
        d = d[k]
    return d


def _value(sample, source: str):
    """The value of one source in one sample, or _MISSING."""
    head, _, rest = source.partition(".")
    if head in ("target", "id", "epoch") and not rest:
        v = getattr(sample, head)
        if head == "target" and isinstance(v, list):
            v = v[0] if len(v) == 1 else _MISSING
        return v
    if head == "metadata":
        return _get(sample.metadata or {}, [rest])
    if head == "store":
        return _get(sample.store or {}, [rest])
    # score.NAME.field[.KEY]
    name, _, field = rest.partition(".")
    scores = sample.scores or {}
    if name == "*":
        if len(scores) != 1:
            return _MISSING
        score = next(iter(scores.values()))
    elif name in scores:
        score = scores[name]
    else:
        return _MISSING
    what, _, key = field.partition(".")
    if what == "answer":
        return score.answer if score.answer is not None else _MISSING
    if what == "value":
        return _get(score.value, [key]) if key else score.value
    return _get(score.metadata or {}, [key])


def _cell(v):
    if v is None or v is _MISSING:
        return None
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (dict, list)):
        return json.dumps(v)  # refused by the schema's checks with the value shown
    return v


def eval_files(path: Path, error) -> list[Path]:
    """The ``.eval`` logs a path names: the file, or a folder's (sorted, recursively)."""
    if path.is_dir():
        # (a FIFO or device so named is kept, to be refused by name: sim/inputs.py)
        files = sorted(p for p in path.rglob("*.eval") if not p.is_dir())
        if not files:
            raise error(f"{path} is a directory with no Inspect .eval log in it; give a "
                        f".csv or .parquet file, an Inspect .eval log or a folder of them")
        return files
    if path.suffix.lower() not in (".eval", ".json"):
        raise error(f"{path.name}: --mapping reads Inspect eval logs (.eval, or a folder of "
                    f"them); a .csv or .parquet log is read by its column names")
    return [path]


def read_rows(path, mapping: dict[str, list[str]] | None = None, error=ValueError):
    """The schema's rows of an Inspect log or folder of logs, and where each row came
    from (``file, sample id, epoch``): ``(DataFrame, origins)``."""
    from ..inputs import ENV_BYTES, check_input, check_zip, member_bound

    mapping = mapping or CONVENTIONS
    rows, origins, failed, seen, evaluations = [], [], [], {}, []
    files = eval_files(Path(path), error)
    for f in files:  # every file and member bounded before any is read (sim/inputs.py)
        check_input(f, "eval", error, f.name)
        # Inspect's JSON log is read whole: bounded as one member
        if f.suffix.lower() == ".json" and f.stat().st_size > (lim := member_bound()):
            raise error(f"{f.name} has {f.stat().st_size:,} bytes, over the bound of {lim:,} "
                        f"bytes for a log read whole; set {ENV_BYTES}=<bytes> to lift it")
        check_zip(f, error, f.name)
    read_eval_log = _import_inspect(error)
    for f in files:
        try:
            log = read_eval_log(str(f))
        except Exception as exc:  # Inspect's reader raises its own and zip/JSON errors
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise error(f"{f.name} cannot be read as an Inspect eval log: {msg}") from None
        if not log.samples:
            raise error(f"{f.name}: the eval log has no samples (status {log.status!r})")
        eval_id = getattr(log.eval, "eval_id", None)
        name = f.relative_to(path).as_posix() if Path(path).is_dir() else f.name
        evaluations.append(_evaluation(name, log))
        if eval_id and eval_id in seen:  # a copy of one run (a backup folder, say)
            raise error(f"{name} and {seen[eval_id]} are the same evaluation (eval id "
                        f"{eval_id}): read together, every sample would count twice; "
                        f"give one of them")
        if eval_id:
            seen[eval_id] = name
        for smp in log.samples:
            if smp.error is not None:  # a sample that failed has no verdict to read
                failed.append(f"{f.name}, sample {smp.id!r} (epoch {smp.epoch}): "
                              f"{str(smp.error.message).strip().splitlines()[0][:200]}")
                continue
            row = {}
            for col, srcs in mapping.items():
                v = _MISSING
                for s in srcs:
                    v = _value(smp, s)
                    if v is not _MISSING:
                        break
                if v is _MISSING or v is None:
                    if col in REQUIRED:
                        what = MEANING.get(col, col)
                        k = srcs[0].split(".", 1)[1] if srcs[0].startswith("metadata.") else None
                        how = (f"write it into the sample's metadata (state.metadata[{k!r}] = "
                               f"...: {what})" if k else f"make the sample carry it ({what})")
                        raise error(
                            f"{f.name}, sample {smp.id!r} (epoch {smp.epoch}): no value for "
                            f"column {col!r} (looked in {', '.join(srcs)}); {how}, or map "
                            f"{col} to the key you use in a --mapping file (e.g. "
                            f"'{col}: metadata.my_key')")
                    continue
                row[col] = _cell(v)
            rows.append(row)
            origins.append((f.name, smp.id, smp.epoch))
    if failed and not rows:
        raise error(f"every sample of the eval log failed (an error, no verdict), e.g. "
                    f"{failed[0]}")
    df = pd.DataFrame(rows)
    df.attrs["evaluations"] = evaluations
    if failed:
        df.attrs["failed_samples"] = failed
    for col in df.columns:  # a column no sample has is absent, not empty
        if df[col].isna().all():
            del df[col]
    if "round" in df.columns and "instance" not in df.columns:
        df["instance"] = [f"{o[0]}:{o[1]}:{o[2]}" for o in origins]
    return df, origins


def _evaluation(name: str, log) -> dict:
    """What the log says of its evaluation: Inspect's status (success, cancelled,
    error, started), the samples in the log and the samples the evaluation was to run
    (its dataset's size times its epochs, where recorded), and its error's first line."""
    ds = getattr(log.eval, "dataset", None)
    n_data = getattr(ds, "samples", None)
    epochs = getattr(getattr(log.eval, "config", None), "epochs", None) or 1
    err = getattr(log, "error", None)
    msg = str(getattr(err, "message", "") or "").strip()
    return {"name": name, "status": str(log.status), "samples": len(log.samples),
            "planned": None if n_data is None else int(n_data) * int(epochs),
            "error": msg.splitlines()[0][:200] if msg else ""}


def evaluation_notes(evaluations: list) -> list:
    """One note per evaluation that did not finish (Inspect status other than
    success), naming it, its status and the samples read of those planned: its
    estimates are of the samples that ran, which need not be a random part of the
    dataset; beside these, one line counting the samples of those that finished."""
    notes = []
    for e in evaluations:
        if e["status"] == "success":
            continue
        of = f" of {e['planned']:,} planned" if e["planned"] else ""
        notes.append(f"{e['name']}: the evaluation was {e['status'].upper()} (Inspect status "
                     f"{e['status']!r}): {e['samples']:,}{of} samples in the log"
                     + (f" ({e['error']})" if e["error"] else "")
                     + "; the estimates are of those samples only, which need not be a "
                       "random part of the dataset")
    done = [e for e in evaluations if e["status"] == "success"]
    if done and notes:  # beside an unfinished one: what the rest contributes
        n = sum(e["samples"] for e in done)
        notes.append(f"{len(done)} evaluation(s) finished (Inspect status 'success'), "
                     f"{n:,} samples")
    return notes


def load_inspect(path, mapping, error, validate):
    """A validated log (as :func:`antiamp.estimation.logs.load_log` returns) of Inspect logs,
    checked by ``validate`` (the log schema's :func:`antiamp.estimation.logs.validate_log`); a
    schema error names the sample the row came from."""
    mapping = mapping or CONVENTIONS
    df, origins = read_rows(path, mapping, error)
    failed = df.attrs.get("failed_samples", [])
    try:
        out = validate(df)
        out.attrs["notes"] = (list(out.attrs.get("notes", []))
                              + evaluation_notes(df.attrs.get("evaluations", [])))
        if failed:
            out.attrs["notes"] = list(out.attrs.get("notes", [])) + [
                f"{len(failed)} sample(s) that failed (an error, no verdict) left out: "
                f"{failed[0]}"
                + (f" and {len(failed) - 1} more" if len(failed) > 1 else "")]
        return out
    except error as exc:
        msg = str(exc)
        c = re.search(r"\bcolumn '(\w+)'", msg)
        if c and c.group(1) in mapping:  # where the column is read from
            msg += f" (column {c.group(1)} is read from {', '.join(mapping[c.group(1)])})"
        m = re.search(r"\brow (\d+)\b", msg)
        if m and int(m.group(1)) < len(origins):
            f, sid, ep = origins[int(m.group(1))]
            msg += f" [row {m.group(1)} is {f}, sample {sid!r}, epoch {ep}]"
        raise error(msg) from None
