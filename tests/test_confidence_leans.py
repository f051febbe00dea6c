"""Judges that lean (seed 004's jury): each judge's lean toward one side, fitted to
per-judge votes, against simulated panels with known leans."""

import math

import numpy as np
import pytest

import antiamp
from antiamp.config import ConfigError
from antiamp.models.confidence import core as cf
from cli_runner import run_command


def panel_votes(a, icc, n_debates, rng):
    """Votes (debates, judges): judge j votes for the proposition iff
    a_j - sqrt(icc) Z - sqrt(1 - icc) E_j > 0, drawn directly."""
    a = np.asarray(a, float)
    z = rng.standard_normal((n_debates, 1))
    e = rng.standard_normal((n_debates, len(a)))
    return (a[None, :] - math.sqrt(icc) * z - math.sqrt(1 - icc) * e > 0).astype(float)


def test_recovers_known_leans():
    a, icc = np.array([-0.2, 0.3, 0.7, 1.1, 0.0, 0.4]), 0.35
    V = panel_votes(a, icc, 500, np.random.default_rng(5))
    V[np.random.default_rng(6).random(V.shape) < 0.05] = np.nan  # some judges missing
    f = cf.fit_judge_votes(V)
    a_hat = f["m"] + f["leans"]
    z = (a_hat - a) / (f["pr_proposition_se"] / (np.exp(-0.5 * a_hat ** 2) / math.sqrt(2 * math.pi)))
    assert np.all(np.abs(z) < 4), z
    assert abs(f["icc"] - icc) < 4 * f["icc_se"], (f["icc"], f["icc_se"])
    assert abs(f["leans"].sum()) < 1e-9
    assert f["lean_p_value"] < 1e-6  # these judges are not interchangeable


def test_interchangeable_judges_reduce_to_the_histogram_fit():
    """With every judge alike, the restricted fit is the histogram model: the unfolded
    votes' likelihood is the histogram's divided by binomial coefficients, so the two
    maximum-likelihood fits of (m, icc) agree; the LR test does not reject."""
    V = panel_votes(np.full(6, 0.4), 0.3, 400, np.random.default_rng(7))
    f = cf.fit_judge_votes(V)
    h = cf.fit_votes(np.bincount(V.sum(axis=1).astype(int), minlength=7).tolist(), 6)
    assert f["m_equal"] == pytest.approx(h["m"], abs=2e-5)
    assert f["icc_equal"] == pytest.approx(h["icc"], abs=2e-5)
    assert f["lean_p_value"] > 1e-3


def test_vote_distribution_against_direct_simulation():
    a, icc = np.array([-0.5, 0.2, 0.9, 0.1]), 0.5
    V = panel_votes(a, icc, 400_000, np.random.default_rng(8))
    obs = np.bincount(V.sum(axis=1).astype(int), minlength=5) / len(V)
    exact = cf.lean_vote_distribution(a, icc)
    se = np.sqrt(exact * (1 - exact) / len(V))
    assert np.all(np.abs(obs - exact) < 5 * se), (obs, exact)
    assert exact.sum() == pytest.approx(1.0, abs=1e-12)


def test_standard_errors_match_the_spread_over_seeds():
    a, icc = np.array([0.1, 0.6, -0.3]), 0.3
    fits = [cf.fit_judge_votes(panel_votes(a, icc, 250, np.random.default_rng(100 + s)))
            for s in range(40)]
    for key, idx in (("m", None), ("leans", 1)):
        est = np.array([f[key] if idx is None else f[key][idx] for f in fits])
        se = np.array([f[key + "_se"] if idx is None else f[key + "_se"][idx] for f in fits])
        ratio = est.std(ddof=1) / se.mean()
        assert 0.7 < ratio < 1.4, (key, ratio)


def _votes(n=60, seed=2):
    V = panel_votes([-0.1, 0.3, 0.6, 1.2, 0.0, 0.4], 0.3, n, np.random.default_rng(seed))
    return V.astype(int).tolist()


CFG = {"model": {"name": "confidence"}, "judge": {"kind": "logit", "jury_size": 6},
       "run": {"n_instances": 2000, "progress": False}}


def test_model_reports_the_leans_from_a_list_and_a_csv(tmp_path):
    from types import SimpleNamespace

    from antiamp.models.confidence.model import _lean_values

    votes = _votes()
    ds = antiamp.simulate({**CFG, "confidence": {"votes": votes, "ppc_draws": 0}})
    assert np.all(np.isfinite(ds.judge_pr_proposition.values))
    assert float(ds.lean_p_value) < 0.01
    assert ds.votes_fitted.sum() == pytest.approx(1.0)
    # The same votes as a CSV (long format, sides by name) give the same matrix.
    rows = [f"{d},judge{j},{'proposition' if v else 'opposition'}"
            for d, row in enumerate(votes) for j, v in enumerate(row)]
    path = tmp_path / "votes.csv"
    path.write_text("debate,judge,vote\n" + "\n".join(rows) + "\n")
    V = cf.votes_of(SimpleNamespace(votes=str(path), votes_judges=6))
    np.testing.assert_array_equal(V, np.asarray(votes, float))
    assert cf.votes_of(SimpleNamespace(votes=[3, 2, 1, 4], votes_judges=6)) is None
    assert all(np.isnan(v).all() for v in _lean_values(None, 6).values())


@pytest.mark.parametrize("votes,msg", [
    ([[1, 0, 1]] * 20, "confidence.votes[0] has 3 votes"),
    ([[1, 0, 1, 1, 0, 2]] * 20, r"confidence.votes[0][5] must be 1 (proposition)"),
    ([[1, 0, 1, 1, 0, 1]] * 4, "at least 10"),
])
def test_bad_per_judge_votes_are_refused(votes, msg):
    with pytest.raises(ConfigError) as exc:
        antiamp.simulate({**CFG, "confidence": {"votes": votes}})
    assert msg in str(exc.value)


def test_a_missing_votes_file_is_refused_before_any_directory(tmp_path):
    r = run_command("antiamp", ["model=confidence", "confidence.votes=nowhere.csv",
                                "judge.jury_size=6", f"hydra.run.dir={tmp_path / 'out'}"],
                    tmp_path)
    assert r.returncode == 2 and "confidence.votes: no such file 'nowhere.csv'" in r.stderr
    assert not (tmp_path / "out").exists()
