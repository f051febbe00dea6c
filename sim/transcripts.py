"""Transcript export: per-instance records of a run, to Parquet or CSV.

One row per (instance, protocol), in the column schema that ``antiamp-estimate``
reads (see :data:`SCHEMA`).  The records are drawn from the same random numbers
as the accumulator kernels, so their transcript classes are exactly the
kernel's counts on the same instances; the judge's label is drawn from its rule.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from .lazy import lazy
pd = lazy("pandas")

kb = lazy("antiamp.kernels.transcript_classes")
_rng = lazy("antiamp.kernels.rng")
_kt = lazy("antiamp.kernels.transcripts")

from .config import ConfigError, to_config
from .judge import judge_tables, resolve_strategies
from .runner import baseline_thresholds

#: Version of the log schema below (1: labels only, open roles, two answers, one row
#: per instance; 2 added p_y, role, answers 0..K-1 and letters, round/instance, graded
#: evidence read without a threshold).  Estimate stores record it as ``log_schema``.
SCHEMA_VERSION = 2

#: Column -> (required?, meaning).  Binary columns hold 0/1; omega may be missing.
SCHEMA = {
    "protocol": (True, "consult or debate"),
    "a": (True, "the protagonist's stance (0/1)"),
    "y": (True, "the judge's label (0/1)"),
    "e_P": (True, "protagonist showed accepted evidence (0/1)"),
    "e_A": (False, "antagonist showed accepted evidence (0/1); required on debate rows; "
                   "blank on consultancy rows: 0 (no antagonist)"),
    "omega": (False, "ground truth (0/1); empty where unknown"),
    "t_P": (False, "forced-attempt verifier outcome for the protagonist (0/1)"),
    "t_A": (False, "forced-attempt verifier outcome for the antagonist (0/1)"),
    "v_P": (False, "graded evidence score of the protagonist (real)"),
    "v_A": (False, "graded evidence score of the antagonist (real); blank on "
                   "consultancy rows: 0, as e_A"),
    "judge_id": (False, "judge identifier (clusters for standard errors)"),
    "stratum": (False, "task family / difficulty stratum"),
    "label_blind": (False, "1 if the judge was not told which side is the protagonist"),
    "s": (False, "the protagonist's signal (0/1)"),
    "role": (False, "open (the protagonist chose its answer) or assigned (debate sides "
                    "assigned by the experimenter); default open"),
    "p_y": (False, "the judge's probability for the protagonist's answer a, in [0, 1]"),
    "p_endorse": (False, "the simulated judge's exact Pr(y = a | transcript)"),
    "instance": (False, "instance index (with round: the rows of one oversight instance)"),
    "round": (False, "the round after which the judge's label and belief were recorded "
                     "(integer >= 1); several rows per instance"),
}


def records(cfg: Any, n: int, start: int = 0, n_judges: int = 20,
            stratum: str = "all") -> pd.DataFrame:
    """Per-instance records of instances [start, start + n) of the configured run."""
    c = to_config(cfg)
    if n < 1:
        raise ConfigError(f"export.n_instances must be an integer >= 1, got {n}")
    if n_judges < 1:
        raise ConfigError(f"export.n_judges must be an integer >= 1, got {n_judges}")
    st = resolve_strategies(c)
    J_c, J_d = judge_tables(c.judge, c.protocol)
    m = c.model
    thr = baseline_thresholds(m.pi, m.p, m.rho, st.x_P_consult, st.x_P, st.x_A)
    k0, k1 = _rng.split_seed(c.run.seed)
    cols = _kt.instance_records(thr, m.stance == "fixed", m.a, start, n, k0, k1,
                            np.uint64(kb.STREAM), np.asarray(J_c, float), np.asarray(J_d, float))
    om, corr, tp, ta, epc, epd, ea, yc, yd = (cols[i].astype(np.int8) for i in range(9))
    a = np.where(corr == 1, om, 1 - om)
    inst = np.arange(start, start + n)
    frames = []
    for prot, ep, eA, yy, pe in (
        ("consult", epc, np.zeros(n, np.int8), yc, np.asarray(J_c)[epc]),
        ("debate", epd, ea, yd, np.asarray(J_d)[epd, ea]),
    ):
        frames.append(pd.DataFrame({
            "instance": inst, "protocol": prot, "stratum": stratum,
            "judge_id": inst % n_judges, "omega": om, "s": a, "a": a,
            "t_P": tp, "t_A": ta if prot == "debate" else np.zeros(n, np.int8),
            "e_P": ep, "e_A": eA,
            "y": np.where(yy == 1, a, 1 - a).astype(np.int8),
            "p_endorse": pe,
        }))
    return pd.concat(frames, ignore_index=True)


def write_records(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write to Parquet (``.parquet``) or CSV (``.csv``), atomically."""
    path = Path(path)
    fmt = path.suffix.lower()
    if fmt not in (".parquet", ".csv"):
        raise ConfigError(f"export.path must end in .parquet or .csv, got {path.name!r}")
    from .outputs_policy import check_file, write_csv, write_file

    check_file(path, option="export.path")  # a file antiamp did not write is never replaced
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == ".parquet":
        return write_file(path, lambda f: df.to_parquet(f, index=False), option="export.path")
    return write_csv(path, df, option="export.path")  # (formula cells escaped)
