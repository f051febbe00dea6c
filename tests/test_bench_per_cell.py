"""``benchmarks/bench_sweep.py --per-cell``: its accounting (the delta method's standard
errors timed apart from the solvers they call) and its table's arithmetic, on a fake
clock and a hand-made record (no timing here)."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_sweep  # noqa: E402


def test_the_delta_methods_time_excludes_the_solvers_it_calls(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(bench_sweep.time, "process_time", lambda: now[0])
    timer, se = bench_sweep._Timer(), bench_sweep._SETimer()

    def solver():
        now[0] += 5.0

    wrapped_solver = bench_sweep._wrap(solver, timer)

    def delta_method():
        now[0] += 3.0
        wrapped_solver()
        wrapped_solver()
        now[0] += 1.0

    wrapped_se = bench_sweep._wrap_se(delta_method, se, timer)
    wrapped_se()
    wrapped_solver()  # a solver call outside the delta method
    assert timer.cpu == 15.0 and timer.calls == 3
    assert se.cpu == 4.0 and se.calls == 1
    assert se.inner_calls == 2 and se.inner_nested == 0


RECORD = {
    "n": 10_000, "repeats": 1, "sides": ["this"], "names": ["baseline", "m"],
    "sizes": {"baseline": [100, 1000], "m": [100, 1000]},
    # (CPU, kernels and solvers, delta-method SEs), seconds
    "medians": {"baseline|this|100": [0.5, 0.0, 0.0], "baseline|this|1000": [0.6, 0.0, 0.0],
                "m|this|100": [1.0, 0.2, 0.1], "m|this|1000": [2.8, 1.1, 0.4]},
    "load": [0.5, 0.7], "date": "2026-12-04", "machine": "x86_64 (2 cores)",
    "command": "python benchmarks/bench_sweep.py --per-cell m --sizes 100,1000 --n 10000 "
               "--repeats 1"}


def test_the_table_gives_each_slope_and_the_overhead_against_the_baselines():
    rows = [r for r in bench_sweep.per_cell_table(RECORD) if r.startswith("| m |")]
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    # slopes in ms a cell over 900 cells: all 1.8 s, kernels 0.9 s, SEs 0.3 s; the
    # baseline's 0.1 s (all overhead): 2.0, 1.0, 0.3333, overhead 0.6667 = 6.0x 0.1111
    assert cells[4:] == ["2.0000", "18.0", "1.0000", "0.3333", "0.6667", "6.0", "33%"]


def test_the_spread_gives_each_repeats_own_slopes_against_the_same_repeats_baseline():
    rec = dict(RECORD, repeats=2, runs={
        "baseline|this|100": [[0.5, 0.0, 0.0], [0.4, 0.0, 0.0]],
        "baseline|this|1000": [[0.6, 0.0, 0.0], [0.58, 0.0, 0.0]],
        "m|this|100": [[1.0, 0.2, 0.1], [1.0, 0.2, 0.1]],
        "m|this|1000": [[2.8, 1.1, 0.4], [2.5, 1.0, 0.35]]})
    rows = [r for r in bench_sweep.per_cell_table(rec) if r.startswith("| m |")]
    assert len(rows) == 2  # the medians' table and the spread's
    cells = [c.strip() for c in rows[1].strip("|").split("|")]
    # repeat 1: (1.8 - 0.9 - 0.3) / 900 s = 0.6667 ms against 0.1111: 6.0x; repeat 2:
    # (1.5 - 0.8 - 0.25) / 900 = 0.5000 ms against (0.18 / 900) s = 0.2000 ms: 2.5x
    assert cells[2:] == ["0.6667, 0.5000", "6.0, 2.5"]
    assert not [r for r in bench_sweep.per_cell_table(RECORD) if "spread" in r]


def test_the_report_is_made_from_the_saved_record(tmp_path):
    path = tmp_path / "rec.json"
    path.write_text(json.dumps(RECORD))
    text = "\n".join(bench_sweep.per_cell_report(str(path)))
    assert text.startswith(bench_sweep.PER_CELL_HEADING)
    assert RECORD["command"] in text and "2026-12-04" in text and "0.50 before" in text
    assert "| m | this | 100 / 1,000 |" in text
    missing = bench_sweep.per_cell_report(str(tmp_path / "none.json"))
    assert "No record yet" in missing[-1]


@pytest.mark.parametrize("name", sorted(bench_sweep.SE_FUNCS))
def test_every_delta_method_named_exists_and_is_not_also_a_solver(name):
    import importlib

    for spec in bench_sweep.SE_FUNCS[name]:
        mod, fn = spec.split(":")
        assert callable(getattr(importlib.import_module(mod), fn))
        assert spec not in bench_sweep.SOLVERS[name]


def test_a_replayed_solver_is_not_run_and_gives_back_what_it_returned_and_filled():
    timer = bench_sweep._Timer()
    ran = []

    def solver(x, errs, out):
        ran.append(x)
        errs.append(x * 10)
        out[:] = x
        return {"value": [x]}

    wrapped = bench_sweep._wrap(solver, timer)
    timer.tape = "record"
    first = [wrapped(x, [], np.zeros(2)) for x in (1, 2)]
    first[0]["value"].append("changed by its caller")  # the recording keeps its own copy
    timer.tape = "replay"
    errs, out = [], np.zeros(2)
    assert wrapped(7, errs, out) == {"value": [1]} and errs == [10] and out.tolist() == [1, 1]
    assert wrapped(7, errs, out) == {"value": [2]} and errs == [20] and out.tolist() == [2, 2]
    assert ran == [1, 2]  # the replay ran nothing
    with pytest.raises(bench_sweep.ReplayError, match="more often"):
        wrapped(7, errs, out)


def test_the_table_gives_the_replayed_overhead_where_the_replay_stored_the_same_values():
    six = {k: v + [v[0] * 0.5, 0.0, v[2]] for k, v in RECORD["medians"].items()}
    rec = dict(RECORD, medians=six, replay_same={"baseline": True, "m": True})
    row = [r for r in bench_sweep.per_cell_table(rec) if r.startswith("| m |")][0]
    cells = [c.strip() for c in row.strip("|").split("|")]
    # replayed: m's (0.9 - 0 - 0.3) / 900 s = 0.6667 ms; the baseline's 0.05 / 900 s
    # = 0.0556 ms: 12.0x
    assert cells[11:] == ["0.6667", "12.0"]
    rec["replay_same"]["m"] = False
    row = [r for r in bench_sweep.per_cell_table(rec) if r.startswith("| m |")][0]
    assert "differ" in row
    old = [r for r in bench_sweep.per_cell_table(RECORD) if r.startswith("| m |")][0]
    assert "differ" not in old and len(old.strip("|").split("|")) == 11
