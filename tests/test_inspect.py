"""Inspect eval logs in, antiamp's metrics out: the example task run offline with the
scripted players, its log read back, the metrics inside the run, foreign and
malformed logs refused."""

import math

import numpy as np
import pandas as pd
import pytest

# The module's tests share a module fixture: the example evaluation runs once, on one worker, not once
# per xdist worker (pyproject's --dist loadgroup).
pytestmark = pytest.mark.xdist_group("inspect")

pytest.importorskip("inspect_ai")
# (Inspect's own warnings are filtered in pyproject.toml, by message.)

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.solver import solver

from antiamp.estimate import EstimateOptions, LogError, estimate, load_log
from antiamp.estimation.inspect_example import Rules, known_metrics, run_example
from antiamp.estimation.field_metrics import asd
from cli_runner import run_command


OPTS = EstimateOptions(n_resamples=300, seed=3)


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The example task's eval log (6 replicates of 24 questions per protocol)."""
    d = tmp_path_factory.mktemp("inspect")
    log = run_example(d / "logs", replicates=6, seed=1)
    assert log.status == "success", log.error
    return d, log


def _rows_by_hand(log) -> pd.DataFrame:
    """The log's rows written from the samples' metadata directly (no mapping code)."""
    return pd.DataFrame([{
        "protocol": s.metadata["protocol"], "a": "AB".index(s.metadata["argued"]),
        "y": "AB".index(s.metadata["verdict"]), "omega": "AB".index(s.target),
        "e_P": s.metadata["evidence_P"], "e_A": s.metadata["evidence_A"],
        "p_y": s.metadata["judge_prob"]} for s in log.samples])


def test_eval_log_estimates_equal_those_of_the_same_rows_as_csv(example):
    d, log = example
    from inspect_ai.log import read_eval_log

    full = read_eval_log(log.location)
    csv = d / "same.csv"
    _rows_by_hand(full).to_csv(csv, index=False)
    a = estimate(load_log(d / "logs"), OPTS)
    b = estimate(load_log(csv), OPTS)
    for v in ("amp", "amp_lo", "amp_hi", "acc", "fwc", "fwc_lo", "fwc_hi", "b_hat",
              "rho_eq_P", "rho_eq_A", "amp_prob", "brier", "n_rows"):
        np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=v)
    assert int(a.n_rows.sel(protocol="debate", stratum="all")) == 144


def test_example_recovers_the_known_amp(example):
    d, _ = example
    ds = estimate(load_log(d / "logs"), OPTS)
    known = known_metrics(Rules())
    for prot in ("consult", "debate"):
        r = ds.sel(protocol=prot, stratum="all")
        for k in ("amp", "fwc"):
            assert float(r[f"{k}_lo"]) <= known[f"{k}_{prot}"] <= float(r[f"{k}_hi"]), (prot, k)
    # the Agent Score Difference, fwc - Amp in closed form, within 1.96 standard errors
    df = load_log(d / "logs")
    for prot in ("consult", "debate"):
        v, se, *_ = asd(df[df.protocol == prot])["asd"]
        assert abs(v - (known[f"fwc_{prot}"] - known[f"amp_{prot}"])) <= 1.96 * se, prot
    # ... and a judge with other rules is told apart: its Amp is outside the interval.
    other = known_metrics(Rules(j_consult=(0.5, 0.99)))["amp_consult"]
    r = ds.sel(protocol="consult", stratum="all")
    assert not float(r.amp_lo) <= other <= float(r.amp_hi)


def test_the_metric_inside_the_run_equals_antiamps_estimate(example):
    d, log = example
    m = {k: v.value for k, v in log.results.scores[0].metrics.items()}
    log_df = load_log(d / "logs")
    ds = estimate(log_df, OPTS)
    from inspect_ai.log import read_eval_log

    rows = _rows_by_hand(read_eval_log(log.location))
    for prot in ("consult", "debate"):
        r = ds.sel(protocol=prot, stratum="all")
        for k in ("amp", "fwc", "acc"):
            assert m[f"{k}_{prot}"] == pytest.approx(float(r[k]), rel=1e-12, abs=1e-15)
        v, se, *_ = asd(log_df[log_df.protocol == prot])["asd"]
        assert m[f"asd_{prot}"] == pytest.approx(v, rel=1e-12)
        assert m[f"asd_{prot}_stderr"] == pytest.approx(se, rel=1e-12)
        wrong = rows[(rows.protocol == prot) & (rows.a != rows.omega)]
        n, amp = len(wrong), float((wrong.y == wrong.a).mean())
        assert m[f"amp_{prot}_stderr"] == pytest.approx(math.sqrt(amp * (1 - amp) / (n - 1)),
                                                        rel=1e-12)


def test_cli_reads_an_eval_folder(example, tmp_path):
    d, _ = example
    r = run_command("antiamp-estimate", [d / "logs", "--out", tmp_path / "o",
                                         "--n-resamples", "100"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "consult  n=144" in r.stdout and (tmp_path / "o" / "estimates.zarr").is_dir()


@solver
def _foreign(keys: dict):
    async def solve(state, generate):
        state.metadata.update(keys)
        return state
    return solve


def _foreign_log(path, keys: dict, n=4):
    """An eval log of a task that does not follow the conventions (no model called)."""
    samples = [Sample(input=f"q{i}", target="AB"[i % 2], id=i) for i in range(n)]
    (log,) = inspect_eval(Task(dataset=samples, solver=_foreign(keys)),
                          model="scripted/players", log_dir=str(path), display="none")
    return log


def test_a_foreign_log_is_refused_naming_the_key_and_read_with_a_mapping(tmp_path):
    _foreign_log(tmp_path / "logs", {"proto": "consultancy", "claim": "A", "decision": "B",
                                     "quoted": True})
    r = run_command("antiamp-estimate", [tmp_path / "logs", "--out", tmp_path / "o"], tmp_path)
    assert r.returncode == 2
    assert "column 'protocol'" in r.stderr and "metadata.protocol" in r.stderr
    assert "--mapping" in r.stderr and not (tmp_path / "o").exists()
    mapping = tmp_path / "map.yaml"
    mapping.write_text("protocol: metadata.proto\na: metadata.claim\ny: metadata.decision\n"
                       "e_P: metadata.quoted\n")
    r = run_command("antiamp-estimate", [tmp_path / "logs", "--mapping", mapping, "--out",
                                         tmp_path / "o", "--n-resamples", "50"], tmp_path)
    assert r.returncode == 0, r.stderr
    df = load_log(tmp_path / "logs", mapping)
    assert df.a.tolist() == [0] * 4 and df.y.tolist() == [1] * 4
    assert df.omega.tolist() == [0, 1, 0, 1] and df.e_P.tolist() == [1] * 4


def test_a_bad_value_names_the_sample(tmp_path):
    _foreign_log(tmp_path / "logs", {"protocol": "consult", "argued": "A", "verdict": "maybe",
                                     "evidence_P": 0})
    with pytest.raises(LogError, match=r"column 'y'.*'maybe'.*is read from metadata.verdict, "
                                        r"score.\*.answer\) \[row 0 is .*sample 0"):
        load_log(tmp_path / "logs")


@pytest.mark.parametrize("text,msg", [
    ("nope: metadata.x\n", "unknown column 'nope'"),
    ("a: metadata\n", "'metadata' is not a source"),
    ("a: [1, 2]\n", "is not a source"),
    ("- a\n", "expected a mapping of column -> source"),
    ("a: [unclosed\n", "cannot be read as YAML"),
])
def test_bad_mapping_files_are_refused(tmp_path, text, msg):
    (tmp_path / "x.eval").write_bytes(b"not a zip")
    m = tmp_path / "m.yaml"
    m.write_text(text)
    r = run_command("antiamp-estimate", [tmp_path / "x.eval", "--mapping", m, "--out",
                                         tmp_path / "o"], tmp_path)
    assert r.returncode == 2 and msg in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


def test_a_malformed_eval_file_is_refused(tmp_path):
    (tmp_path / "x.eval").write_bytes(b"not a zip")
    r = run_command("antiamp-estimate", [tmp_path / "x.eval", "--out", tmp_path / "o"], tmp_path)
    assert r.returncode == 2 and "x.eval cannot be read as an Inspect eval log" in r.stderr
    (tmp_path / "d").mkdir()
    r = run_command("antiamp-estimate", [tmp_path / "d", "--out", tmp_path / "o"], tmp_path)
    assert r.returncode == 2 and "is a directory with no Inspect .eval log" in r.stderr
    assert not (tmp_path / "o").exists()


def test_a_mapping_reads_scores_and_lists_of_sources(example, tmp_path):
    d, _ = example
    m = tmp_path / "m.json"
    m.write_text('{"a": ["metadata.nothing_here", "score.*.value.a"], '
                 '"y": "score.oversight_scorer.answer", "omega": "score.oversight_scorer.value.omega"}')
    got, want = load_log(d / "logs", m), load_log(d / "logs")
    for c in ("protocol", "a", "y", "omega", "e_P", "e_A", "p_y"):
        np.testing.assert_array_equal(got[c].to_numpy(), want[c].to_numpy(), err_msg=c)


def _scores(n=300, judges=7, seed=11):
    """Scores of simulated samples whose verdicts share a judge effect (so clustering
    by judge matters), with the judge in each sample's metadata."""
    from inspect_ai.scorer import SampleScore, Score

    rng = np.random.default_rng(seed)
    lean = rng.normal(0, 1.2, judges)
    out = []
    for i in range(n):
        j = int(rng.integers(judges))
        prot = ("consult", "debate")[i % 2]
        om = int(rng.integers(2))
        a = om if rng.random() < 0.7 else 1 - om
        p_follow = 1 / (1 + math.exp(-(0.5 + lean[j] + (0.8 if a == om else -0.6))))
        y = a if rng.random() < p_follow else 1 - a
        out.append(SampleScore(score=Score(value={"a": a, "y": y, "omega": om},
                                           metadata={"protocol": prot, "role": "open"}),
                               sample_id=i, sample_metadata={"judge_id": f"j{j}"}))
    return out


def test_clustered_standard_errors_equal_inspects_own():
    """amplification(cluster=...) and the others: the clustered standard error Inspect's
    stderr(cluster=...) gives on the same rows (the oracle), and larger than the
    unclustered one where judges lean."""
    from inspect_ai.scorer import SampleScore, Score, stderr

    from antiamp.estimation.inspect import per_protocol, rows

    scores = _scores()
    for which in ("amp", "fwc", "acc"):
        ours = per_protocol(scores, which, cluster="judge_id")
        plain = per_protocol(scores, which)
        for prot in ("consult", "debate"):
            subset = []
            for s, (p, a, y, om) in zip(scores, rows(scores)):
                if p != prot or (which == "amp" and a == om) or (which == "fwc" and a != om):
                    continue
                x = float(y == om) if which == "acc" else float(y == a)
                subset.append(SampleScore(score=Score(value=x), sample_id=s.sample_id,
                                          sample_metadata=s.sample_metadata))
            theirs = stderr(cluster="judge_id")(subset)
            assert ours[f"{which}_{prot}_stderr"] == pytest.approx(theirs, rel=1e-12)
            assert ours[f"{which}_{prot}"] == plain[f"{which}_{prot}"]
        assert ours[f"{which}_consult_stderr"] != plain[f"{which}_consult_stderr"]


def test_clustered_asd_with_one_sample_per_cluster_is_the_unclustered_one():
    from inspect_ai.scorer import SampleScore

    from antiamp.estimation.inspect import asd_per_protocol

    scores = _scores(n=120)
    own = [SampleScore(score=s.score, sample_id=s.sample_id,
                       sample_metadata={"judge_id": f"s{s.sample_id}"}) for s in scores]
    plain, single = asd_per_protocol(scores), asd_per_protocol(own, cluster="judge_id")
    by_judge = asd_per_protocol(scores, cluster="judge_id")
    for prot in ("consult", "debate"):
        assert single[f"asd_{prot}_stderr"] == pytest.approx(plain[f"asd_{prot}_stderr"],
                                                             rel=1e-12)
        assert by_judge[f"asd_{prot}"] == plain[f"asd_{prot}"]
        assert by_judge[f"asd_{prot}_stderr"] != plain[f"asd_{prot}_stderr"]


def test_a_missing_cluster_key_is_named():
    from antiamp.estimation.inspect import per_protocol

    with pytest.raises(ValueError, match="has no metadata 'question_id'"):
        per_protocol(_scores(n=10), "amp", cluster="question_id")


@solver
def _failing(fail: tuple):
    async def solve(state, generate):
        i = int(state.sample_id)
        if i in fail:
            raise RuntimeError("the judge model timed out")
        state.metadata.update({"protocol": "consult", "argued": "A", "verdict": "AB"[i % 2],
                               "evidence_P": i % 3 == 0})
        return state
    return solve


def test_failed_samples_are_left_out_with_a_note(tmp_path):
    samples = [Sample(input=f"q{i}", target="AB"[i % 3 % 2], id=i) for i in range(8)]
    (log,) = inspect_eval(Task(dataset=samples, solver=_failing((3, 5))),
                          model="scripted/players", log_dir=str(tmp_path / "logs"),
                          display="none", fail_on_error=False)
    assert sum(s.error is not None for s in log.samples) == 2
    df = load_log(tmp_path / "logs")
    assert len(df) == 6
    assert any("2 sample(s) that failed" in n and "sample 3" in n and "timed out" in n
               for n in df.attrs["notes"]), df.attrs["notes"]
    assert df["y"].tolist() == [i % 2 for i in range(8) if i not in (3, 5)]
    samples = [Sample(input="q", target="A", id=i) for i in range(2)]
    inspect_eval(Task(dataset=samples, solver=_failing((0, 1))), model="scripted/players",
                 log_dir=str(tmp_path / "all"), display="none", fail_on_error=False)
    with pytest.raises(LogError, match=r"every sample of the eval log failed.*sample 0.*timed out"):
        load_log(tmp_path / "all")


def test_a_copy_of_the_same_evaluation_is_refused(example, tmp_path):
    import shutil

    d, log = example
    (tmp_path / "logs" / "backup").mkdir(parents=True)
    for to in (tmp_path / "logs", tmp_path / "logs" / "backup"):
        shutil.copy(log.location, to)
    with pytest.raises(LogError, match=r"backup/.*\.eval and .*\.eval are the same evaluation "
                                       r"\(eval id .*every sample would count twice"):
        load_log(tmp_path / "logs")


def test_a_cancelled_evaluation_is_reported_as_cancelled(example, tmp_path):
    """An evaluation stopped part-way (Inspect status 'cancelled', only consultancy's
    samples had run): the report names it cancelled with the samples read of those
    planned, and says plainly that debate has no rows (it printed consultancy's
    metrics as if the evaluation were whole)."""
    from inspect_ai.log import read_eval_log, write_eval_log

    from antiamp.estimation.estimate_report import format_report

    _, log = example
    full = read_eval_log(log.location)
    planned = len(full.samples)
    full.samples = [s for s in full.samples if s.metadata["protocol"] == "consult"][:100]
    full.status = "cancelled"
    full.results = None
    path = tmp_path / "cancelled.eval"
    write_eval_log(full, str(path))
    df = load_log(path)
    report = format_report(estimate(df, OPTS), str(path))
    assert (f"cancelled.eval: the evaluation was CANCELLED (Inspect status 'cancelled'): "
            f"100 of {planned:,} planned samples in the log") in report, report
    assert "debate: no rows in the log; nothing is estimated for it" in report, report
    # a finished evaluation's report says neither
    whole = format_report(estimate(load_log(log.location), OPTS), "whole")
    assert "CANCELLED" not in whole and "no rows" not in whole


def test_the_guides_mapping_file_is_the_one_its_command_reads(tmp_path):
    """estimation.md's ``--mapping our_keys.yaml`` names the YAML block the guide shows
    under that name (it named a file no example wrote), and that block is a mapping
    antiamp reads: the columns it maps, from the sources it lists."""
    import re
    from pathlib import Path

    from antiamp.estimation.inspect_logs import CONVENTIONS, load_mapping

    text = (Path(__file__).resolve().parents[1] / "docs" / "guides" / "estimation.md"
            ).read_text()
    blocks = re.findall(r"^```yaml\n# our_keys\.yaml\n(.*?)^```", text, re.S | re.M)
    assert len(blocks) == 1, "the guide shows no our_keys.yaml"
    assert "--mapping our_keys.yaml" in text
    (tmp_path / "our_keys.yaml").write_text(blocks[0])
    m = load_mapping(tmp_path / "our_keys.yaml")
    assert m["protocol"] == ["metadata.proto"] and m["e_P"] == ["store.quoted"]
    assert m["a"] == ["metadata.claim", "score.judge_scorer.metadata.claim"]
    assert m["omega"] == CONVENTIONS["omega"]  # a column not mapped keeps its convention
