"""antiamp-design --estimates refuses a judge that orders the protocols against its
log or misses a protocol's Amp before any multiple-testing correction, from a small
Inspect log (150 consultancy, 150 debate samples)."""

from __future__ import annotations

import re

import numpy as np
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.solver import solver

import antiamp.estimation.inspect_example  # noqa: F401  (registers the scripted/ model provider)
from antiamp import design as dz
from cli_runner import run_command

#: (protocol, protagonist right, e_P, e_A, samples, endorsed): a logit judge of
#: evidence (mu -0.5, kappa 0.5, rho 0.6) with the wrong consultant endorsed 0.15 less
#: often than it would be and the wrong debater 0.2 more, so the log's consultancy Amp
#: (23/75) is below its debate Amp (40/75) while the pooled fit's judge puts it above.
CELLS = (("consult", 1, 1, 0, 75, 38), ("consult", 0, 1, 0, 45, 16),
         ("consult", 0, 0, 0, 30, 7), ("debate", 1, 1, 1, 45, 17),
         ("debate", 1, 1, 0, 30, 15), ("debate", 0, 1, 1, 45, 26),
         ("debate", 0, 0, 1, 30, 14))


@solver
def _as_logged():
    async def solve(state, generate):
        return state
    return solve


def _inspect_log(path):
    samples, i = [], 0
    for prot, right, ep, ea, n, k in CELLS:
        for j in range(n):
            gold = "AB"[i % 2]
            argued = gold if right else "AB"[1 - i % 2]
            verdict = argued if j < k else ("B" if argued == "A" else "A")
            samples.append(Sample(input=f"q{i}", target=gold, id=i, metadata={
                "protocol": prot, "gold": gold, "argued": argued, "verdict": verdict,
                "evidence_P": ep, "evidence_A": ea, "judge_id": f"j{i % 15}"}))
            i += 1
    inspect_eval(Task(dataset=samples, solver=_as_logged()), model="scripted/players",
                 log_dir=str(path), display="none")


def test_design_refuses_a_judge_that_orders_the_protocols_against_its_log(tmp_path):
    _inspect_log(tmp_path / "logs")
    r = run_command("antiamp-estimate", [tmp_path / "logs", "--n-resamples", "100",
                                         "--out", tmp_path / "est"], tmp_path)
    assert r.returncode == 0, r.stderr
    store = tmp_path / "est" / "estimates.zarr"
    judge, _ = dz.judge_from_estimates(store)
    assert judge.kind == "logit"
    lines, misses = dz.fit_check(judge, store)
    text = "\n".join(lines)
    # every check passes after a Bonferroni correction (the gate before this one) ...
    corrected = [float(x) for x in re.findall(r"corrected ([0-9.e-]+)\)", text)]
    assert len(corrected) == 4 and min(corrected) >= dz.FIT_ALPHA, text
    # ... but consultancy Amp misses uncorrected, and the judge reverses the log's order
    assert any(m.startswith("consult Amp: log 0.307 (23/75)") for m in misses), misses
    gap = next(m for m in misses if m.startswith("the judge orders the protocols"))
    judge_gap, log_gap, lo, hi = (float(x) for x in re.findall(r"[+-][0-9.]+", gap))
    assert judge_gap > 0 and hi < 0 and log_gap == round(23 / 75 - 40 / 75, 3)
    r = run_command("antiamp-design", ["--estimates", store, "--out", tmp_path / "d"],
                    tmp_path)
    assert r.returncode == 2, r.stdout
    assert "consult Amp: log 0.307 (23/75)" in r.stderr and "--accept-misfit" in r.stderr
    assert "orders the protocols against the log" in r.stderr
    assert not (tmp_path / "d").exists()
    r = run_command("antiamp-design", ["--estimates", store, "--out", tmp_path / "d",
                                       "--accept-misfit", "--n-sim", "10000", "--draws",
                                       "50"], tmp_path)
    assert r.returncode == 0, r.stderr
    out = (tmp_path / "d" / "design.txt").read_text()
    assert "WARNING: the judge does not reproduce the log" in out
    # the summary prints each p as tested and corrected, under a header that says which
    assert re.search(r"consult +Amp .* p [0-9.e-]+ \(corrected [0-9.e-]+\)  MISSES", out)
    assert "Amp at p < 0.05 uncorrected" in out
    assert np.isfinite(judge.mu)
