"""Closed-loop oversight (model=loop) against its oracles.

* the simulated mean path equals the exact recursion within 5 SE at every round
  (calibrated and majority learners, consultancy, debate and the escalation policy);
* where the learner's drift clips the error at 1 or 0 (E[min(x, 1)] < min(E[x], 1)),
  the simulated mean path equals the exact expectation (the error's Markov chain)
  within 5 SE at every round, and the chain equals a brute-force enumeration of every
  sequence of a small batch's counts; the mean-field recursion is kept beside it;
* m = 0 leaves the error at e_h;
* the closed-form fixed points of the issue, written here from the formulas:
  gatekeeping consultancy (1 - m) e_h / (1 - m rho), tie-break debate
  ((1 - m) e_h + m rho (1 - b)) / (1 - m rho (2b - 1)), a positive floor at m = 1;
* the majority learner's lock-in probability equals its binomial tail;
* data feedback loops (Taori and Hashimoto, ICML 2023): a calibrated learner with a
  per-round drift delta trained on its own outputs ends delta / (1 - m) above e_h,
  and oversight that never rejects a right answer keeps it within that bound;
* iterated learning (Griffiths and Kalish 2007; Kirby, Dowman and Griffiths 2007):
  a sampling (calibrated) learner converges to the data's bias e_h, a MAP (majority)
  learner exaggerates it (toward 0 when e_h < 1/2, toward 1 when e_h > 1/2);
* standard errors match the spread over 50 seeds; common random numbers make the
  escalation policy identical to consultancy (audit 0, no flag) and to debate
  (audit 1) path by path; the cheapest policy meets its target and a cheaper one does not.
"""


import numpy as np
import pytest
from scipy.stats import binom

import antiamp
from antiamp.models.loop import core as lp
from antiamp.config import ConfigError
from antiamp.registry import to_model_config
from antiamp.sweeps.blocks import run_cell
from cli_runner import run_command


def _cfg(over):
    return {**over, "model": {**over.get("model", {}), "name": "loop"}}


def cell(**over):
    return run_cell(_cfg(over))


def config(**over):
    return to_model_config(_cfg(over))[1]


def within_5se(ds, var="err"):
    mean, se, ex = (ds[f"{var}_{k}"].values for k in ("mean", "mean_se", "mean_exact"))
    ok = np.isfinite(ex)
    diff = np.abs(mean - ex)[ok]
    return np.all(diff <= 5 * se[ok] + 1e-12), float(np.max(diff / np.maximum(se[ok], 1e-300)))


@pytest.mark.parametrize("over", [
    {"judge": {"b": 0.3}, "model": {"rho": 0.5},
     "loop": {"m": 0.7, "e_h": 0.1, "rate": 0.6, "rounds": 15, "paths": 400, "batch": 300}},
    {"judge": {"kind": "logit", "mu": 0.4, "kappa": 1.5}, "model": {"rho": 0.4, "p": 0.7},
     "loop": {"m": 0.8, "e_h": 0.2, "rounds": 12, "paths": 400, "batch": 200, "bias": 0.01,
              "audit": 0.3, "flag": "uncertain", "flag_band": 0.3}},
    {"judge": {"b": 0.7, "jury_size": 3}, "model": {"rho": 0.6, "p": 0.6},
     "loop": {"m": 0.9, "e_h": 0.3, "rounds": 12, "paths": 400, "batch": 200}},
])
def test_calibrated_mean_path_equals_the_recursion(over):
    ds = cell(**over)
    assert "none" not in ds.exact_method.values  # within_5se skips a NaN exact path
    for p in lp.PROTOCOLS:
        for var in ("err", "label_err", "ratified", "escalated"):
            ok, worst = within_5se(ds.sel(protocol=p), var)
            assert ok, f"{p} {var}: worst |mean - exact| = {worst:.2f} SE"


#: Cells whose drift drives the mean-field recursion into the clip: the cell of the
#: report (tie-break, rho = 1, escalation to a jury), a drift down to the clip at 0,
#: and a drift up to 1 under a binding budget (the escalated share moves with e_t).
CLIPPED = [
    ({"model": {"p": 0.51, "rho": 1.0}, "judge": {"kind": "tiebreak", "b": 1.0},
      "loop": {"m": 1.0, "e_h": 0.0254, "rate": 1.0, "audit": 1.0, "flag": "uncertain",
               "flag_band": 0.21, "escalate_to": "jury", "escalate_jury": 5, "rounds": 25,
               "paths": 2000, "batch": 200, "bias": 0.0445}, "run": {"seed": 7}}, 1.0),
    ({"model": {"p": 0.9, "rho": 0.6}, "judge": {"b": 0.7},
      "loop": {"m": 0.8, "e_h": 0.1, "rounds": 15, "paths": 600, "batch": 30,
               "bias": -0.025}, "run": {"seed": 3}}, 0.0),
    ({"model": {"p": 0.5, "rho": 1.0}, "judge": {"b": 0.9},
      "loop": {"m": 0.95, "e_h": 0.05, "rounds": 25, "paths": 600, "batch": 100,
               "bias": 0.06, "audit": 0.3, "flag": "no_evidence", "budget": 0.2},
      "run": {"seed": 11}}, 1.0),
]


@pytest.mark.parametrize("over, bound", CLIPPED)
def test_clipped_mean_path_equals_the_expected_path(over, bound):
    ds = cell(**over)
    assert list(ds.exact_method.values) == ["chain"] * 3
    mf = ds.err_meanfield.values
    # The sweep reaches the clip: the mean-field recursion sits on it at some round.
    assert np.any(mf == bound, axis=-1).any()
    for p in lp.PROTOCOLS:
        for var in ("err", "label_err", "ratified", "escalated"):
            ok, worst = within_5se(ds.sel(protocol=p), var)
            assert ok, f"{p} {var}: worst |mean - exact| = {worst:.2f} SE"


def test_expected_path_equals_an_enumeration_of_every_count_sequence():
    """rho = 1: consultancy endorses every answer (Amp = fwc = 1), so a target is wrong
    with q(e) = (1 - m) e_h + m e; with a batch of N the next error is
    clip(W / N + bias), W ~ Binomial(N, q(e)). Every sequence of counts, enumerated."""
    import itertools

    N, T, m, e_h, bias, e0 = 3, 4, 0.9, 0.1, 0.3, 0.4
    c = config(model={"rho": 1.0, "p": 1 - e0},
               loop={"m": m, "e_h": e_h, "bias": bias, "batch": N, "rounds": T, "paths": 0})
    path, method = lp.expected_path(c, lp.oversight(c), "consult")
    assert method == "chain"
    want = np.zeros(T + 1)
    for ws in itertools.product(range(N + 1), repeat=T):
        pr, e, es = 1.0, e0, [e0]
        for w in ws:
            pr *= binom.pmf(w, N, (1 - m) * e_h + m * e)
            e = min(1.0, max(0.0, w / N + bias))
            es.append(e)
        want += pr * np.array(es)
    assert np.allclose(path["err"], want, rtol=0, atol=1e-14)
    mf = lp.meanfield_path(c, lp.oversight(c), "consult")["err"]
    assert mf[-1] == 1.0 and want[-1] < 1.0 - 1e-3  # the recursion clips its mean


def test_no_expected_path_where_it_is_not_exact():
    """A learning rate below 1 with drift: the error's states do not stay finite; the
    store reports the mean-field recursion and no exact path."""
    ds = cell(loop={"rate": 0.5, "bias": 0.02, "rounds": 3, "paths": 0, "batch": 10})
    assert list(ds.exact_method.values) == ["none"] * 3
    assert np.isnan(ds.err_mean_exact.values).all()
    assert np.isfinite(ds.err_meanfield.values).all()


def test_majority_mean_path_and_lock_in_equal_the_binomial_chain():
    n, T = 10, 4
    ds = cell(model={"rho": 0.7, "p": 0.5}, judge={"b": 0.6},
              loop={"learner": "majority", "types": 100, "batch": n, "m": 0.8, "e_h": 0.3,
                    "rounds": T, "paths": 300})
    for p in lp.PROTOCOLS:
        d = ds.sel(protocol=p)
        ok, worst = within_5se(d)
        assert ok, f"{p}: worst {worst:.2f} SE"
        # The binomial tail, written here: a wrong type keeps its answer when at least
        # n/2 of its n targets are wrong (ties keep), each wrong w.p. m Amp + (1 - m) e_h.
        q_w = 0.8 * float(d.amp) + 0.2 * 0.3
        stay = binom.sf(n // 2 - 1, n, q_w)
        assert float(d.lock_in_exact) == pytest.approx(stay ** T, rel=1e-12)
        assert 0.01 < stay ** T < 0.99
        assert abs(float(d.lock_in) - stay ** T) <= 5 * float(d.lock_in_se), p


def test_no_endorsed_targets_leave_the_error_at_e_h():
    ds = cell(model={"rho": 0.8, "p": 0.6}, loop={"m": 0.0, "e_h": 0.12, "rate": 0.5,
                                                  "rounds": 60, "paths": 100})
    assert np.allclose(ds.e_star.values, 0.12, atol=1e-15)
    assert np.allclose(ds.err_mean_exact.values[:, -1], 0.12, atol=1e-12)
    assert np.all(np.abs(ds.final_err.values - 0.12) <= 5 * ds.final_err_se.values)
    # Starting at e_h, the error stays there in expectation at every round.
    ds = cell(model={"rho": 0.8}, loop={"m": 0.0, "e_h": 0.2, "e_0": 0.2, "rounds": 10,
                                        "paths": 100})
    assert np.allclose(ds.err_mean_exact.values, 0.2, atol=1e-15)
    assert within_5se(ds.sel(protocol="debate"))[0]


@pytest.mark.parametrize("m, rho, b, e_h", [(0.5, 0.3, 0.5, 0.05), (0.9, 0.7, 0.2, 0.1),
                                            (1.0, 0.6, 0.7, 0.05), (0.3, 0.95, 0.9, 0.4)])
def test_fixed_points_equal_the_closed_forms(m, rho, b, e_h):
    c = config(model={"rho": rho}, judge={"b": b}, loop={"m": m, "e_h": e_h, "paths": 0})
    ov = lp.oversight(c)
    consult = (1 - m) * e_h / (1 - m * rho)
    debate = ((1 - m) * e_h + m * rho * (1 - b)) / (1 - m * rho * (2 * b - 1))
    assert lp.long_run(c, ov, "consult")["e_star"] == pytest.approx(consult, abs=1e-14)
    assert lp.long_run(c, ov, "debate")["e_star"] == pytest.approx(debate, abs=1e-14)
    # ... and the recursion iterated long enough reaches them.
    path = lp.exact_path(c, ov, "debate", rounds=3000)
    assert path["err"][-1] == pytest.approx(debate, abs=1e-10)
    if m == 1.0:  # tie-break debate keeps a positive floor with no ground truth at all
        assert debate > 0.1 and consult == 0.0


def test_data_feedback_loop_bound():
    """Taori and Hashimoto (2023): with its own outputs as a share m of its data, a
    learner whose outputs drift by delta per round ends delta / (1 - m) from the data."""
    m, e_h, delta = 0.7, 0.1, 0.02
    ds = cell(model={"rho": 1.0}, loop={"m": m, "e_h": e_h, "bias": delta, "rounds": 60,
                                        "paths": 100})
    # rho = 1: consultancy endorses every answer (Amp = fwc = 1): pure self-training.
    d = ds.sel(protocol="consult")
    assert float(d.amp) == 1.0 and float(d.fwc) == 1.0
    assert float(d.e_star) == pytest.approx(e_h + delta / (1 - m), abs=1e-14)
    assert abs(float(d.final_err) - (e_h + delta / (1 - m))) <= 5 * float(d.final_err_se)
    # Oversight that never rejects a right answer (gatekeeping consultancy, fwc = 1)
    # stays within the bound at every rho.
    for rho in np.linspace(0.0, 1.0, 11):
        c = config(model={"rho": float(rho)}, loop={"m": m, "e_h": e_h, "bias": delta,
                                                    "paths": 0})
        assert lp.long_run(c, lp.oversight(c), "consult")["e_star"] <= e_h + delta / (1 - m) + 1e-15


@pytest.mark.parametrize("e_h", [0.4, 0.6])
def test_iterated_learning_map_amplifies_sampling_converges(e_h):
    """Griffiths and Kalish (2007); Kirby, Dowman and Griffiths (2007): with a judge
    that endorses everything, the sampling learner's error converges to the data's
    bias e_h and the MAP learner's exaggerates it."""
    common = {"model": {"rho": 1.0, "p": 0.5}}
    cal = cell(**common, loop={"m": 0.5, "e_h": e_h, "rounds": 40, "paths": 100})
    d = cal.sel(protocol="consult")
    assert float(d.e_star) == pytest.approx(e_h, abs=1e-14)
    assert abs(float(d.final_err) - e_h) <= 5 * float(d.final_err_se)
    maj = cell(**common, loop={"m": 0.5, "e_h": e_h, "rounds": 40, "paths": 60,
                               "learner": "majority", "batch": 11, "types": 100})
    d = maj.sel(protocol="consult")
    w = float(d.e_star)
    assert (w < e_h - 0.2) if e_h < 0.5 else (w > e_h + 0.2)
    assert abs(float(d.final_err) - float(d.err_mean_exact[-1])) <= 5 * float(d.final_err_se)


def test_thresholds_equal_the_linear_formula():
    m, e_h, rho, b, p = 0.6, 0.1, 0.5, 0.3, 0.75
    c = config(model={"rho": rho, "p": p}, judge={"b": b}, loop={"m": m, "e_h": e_h,
                                                                 "paths": 0})
    ov = lp.oversight(c)
    e0 = 1 - p
    fwc = 1 - rho * (1 - b)
    # e* = N / (1 - m (Amp + fwc - 1)) = e0  <=>  Amp* = 1 - fwc + (1 - N / e0) / m
    N = (1 - m) * e_h + m * (1 - fwc)
    want = 1 - fwc + (1 - N / e0) / m
    thr = lp.thresholds(c, ov, "debate")
    assert 0 < want < 1
    assert thr["amp_threshold"] == pytest.approx(want, abs=1e-10)
    # At rho_threshold the protocol's long-run error is e0 (debate: Amp, fwc move with rho).
    r = thr["rho_threshold"]
    assert 0 < r < 1
    amp_r, fwc_r = r * b, 1 - r * (1 - b)
    e_r = ((1 - m) * e_h + m * (1 - fwc_r)) / (1 - m * (amp_r + fwc_r - 1))
    assert e_r == pytest.approx(e0, abs=1e-9)


def test_common_random_numbers_make_policies_identical_to_their_protocols():
    base = {"model": {"rho": 0.5}, "judge": {"b": 0.4},
            "loop": {"rounds": 6, "paths": 20, "batch": 200, "m": 0.8}}
    none = cell(**{**base, "loop": {**base["loop"], "audit": 0.0, "flag": "none"}})
    assert np.array_equal(none.err_quantile.sel(protocol="escalate").values,
                          none.err_quantile.sel(protocol="consult").values)
    assert np.array_equal(none.err_mean.sel(protocol="escalate").values,
                          none.err_mean.sel(protocol="consult").values)
    every = cell(**{**base, "loop": {**base["loop"], "audit": 1.0}})
    assert np.array_equal(every.err_mean.sel(protocol="escalate").values,
                          every.err_mean.sel(protocol="debate").values)
    assert np.all(every.escalated_mean.sel(protocol="escalate").values[:-1] == 1.0)


def test_escalation_to_a_jury_equals_its_tables():
    """Escalating every case to a jury of 5 is consultancy judged by the majority of 5
    (the seed's b_n): the escalate protocol's Amp equals the jury's, and the mean path
    its recursion."""
    over = {"model": {"rho": 0.5}, "judge": {"kind": "logit", "mu": 0.3},
            "loop": {"audit": 1.0, "escalate_to": "jury", "escalate_jury": 5, "rounds": 10,
                     "paths": 300, "batch": 300, "m": 0.8, "e_h": 0.2}}
    ds = cell(**over)
    jury = cell(model={"rho": 0.5}, judge={"kind": "logit", "mu": 0.3, "jury_size": 5},
                loop={**over["loop"], "paths": 0, "escalate_to": "debate"})
    assert float(ds.amp.sel(protocol="escalate")) == pytest.approx(
        float(jury.amp.sel(protocol="consult")), abs=1e-14)
    assert float(ds.e_star.sel(protocol="escalate")) == pytest.approx(
        float(jury.e_star.sel(protocol="consult")), abs=1e-14)
    ok, worst = within_5se(ds.sel(protocol="escalate"))
    assert ok, worst


def test_cheapest_policy_meets_the_target_and_nothing_cheaper_does():
    # A logit judge: consultancy alone drifts above the target; escalating helps.
    over = {"model": {"rho": 0.3, "p": 0.7}, "judge": {"kind": "logit", "mu": 0.5,
                                                      "kappa": 2.0},
            "loop": {"m": 0.9, "e_h": 0.3, "rounds": 80, "paths": 60, "batch": 500,
                     "target": 0.19}}
    ds = cell(**over)
    c = config(**over)
    ov = lp.oversight(c)
    assert float(ds.e_star.sel(protocol="consult")) > 0.19
    flag = str(ds.policy_flag.values)
    assert flag in lp.FLAGS
    a, cost = float(ds.policy_audit), float(ds.policy_cost)
    assert float(ds.policy_err) <= 0.19 + 1e-12
    # A little less audit misses the target, for the chosen flag.
    fc = lp.flag_table(flag, c.loop.flag_band, ov.J_c)
    if a > 1e-6:
        less = lp.long_run(c, ov.with_policy(audit=a - 1e-6, flag_c=fc), "escalate")["e_star"]
        assert less > 0.19
    # No point of the front is cheaper and meets the target.
    err, cst = ds.pareto_err.values, ds.pareto_cost.values
    assert not np.any((err <= 0.19) & (cst < cost - 1e-9))
    # The optimum checked by a fresh simulation.
    assert abs(float(ds.policy_err_sim) - float(ds.policy_err)) <= 5 * float(ds.policy_err_sim_se)


def test_standard_errors_match_the_spread_over_50_seeds():
    cfgs = {"calibrated": {"loop": {"rounds": 6, "paths": 20, "batch": 100, "m": 0.8,
                                    "audit": 0.3}},
            # Lock-in common enough that every seed sees some (the plug-in SE of a
            # ratio is unreliable when fewer than about ten types lock in).
            "majority": {"model": {"rho": 0.8, "p": 0.5}, "judge": {"b": 0.7},
                         "loop": {"learner": "majority", "rounds": 4, "paths": 20, "batch": 10,
                                  "types": 20, "m": 0.8, "e_h": 0.3}}}
    for name, cfg in cfgs.items():
        vals, ses = {}, {}
        for seed in range(50):
            ds = antiamp.simulate({**cfg, "model": {"name": "loop", **cfg.get("model", {})},
                                   "run": {"seed": 500 + seed}})
            for v in ds.data_vars:
                if v.endswith("_se"):
                    est = v[:-3] if v[:-3] in ds.data_vars else v[:-3] + "_mean"
                    if est in ds.data_vars:
                        vals.setdefault(est, []).append(ds[est].values.astype(float))
                        ses.setdefault(est, []).append(ds[v].values.astype(float))
        assert "final_err" in vals and "err_mean" in vals
        bad = []
        for k in vals:
            sd = np.std(vals[k], axis=0, ddof=1)
            se = np.mean(ses[k], axis=0)
            for i in np.ndindex(sd.shape):
                s, e = float(sd[i]), float(se[i])
                if not np.isfinite(e) or (name == "calibrated" and k == "lock_in"):
                    continue
                if e == 0:
                    if s > 1e-12:
                        bad.append(f"{k}{list(i)}: se 0 but sd {s:.3g}")
                elif not 0.6 <= s / e <= 1.5:
                    bad.append(f"{k}{list(i)}: sd/se = {s / e:.2f}")
        assert not bad, f"{name}: " + "; ".join(bad[:10])


@pytest.mark.parametrize("over, field", [
    ({"loop": {"m": 1.5}}, "loop.m"),
    ({"loop": {"paths": 1}}, "loop.paths"),
    ({"loop": {"learner": "bayes"}}, "loop.learner"),
    ({"loop": {"flag": "loud"}}, "loop.flag"),
    ({"loop": {"escalate_to": "court"}}, "loop.escalate_to"),
    ({"loop": {"escalate_jury": 0}}, "loop.escalate_jury"),
    ({"loop": {"budget": 0.0}}, "loop.budget"),
    ({"loop": {"target": 1.0}}, "loop.target"),
    ({"loop": {"learner": "majority", "bias": 0.1}}, "loop.bias"),
    ({"loop": {"types": 5}}, "loop.types"),
    ({"loop": {"rounds": 0}}, "loop.rounds"),
    ({"loop": {"paths": 100000, "rounds": 1000}}, "loop.paths"),
    ({"model": {"stance": "fixed"}}, "model.stance"),
    ({"welfare": {"beta": 2.0}}, "welfare"),
    ({"export": {"n_instances": 10}}, "export"),
])
def test_bad_input_names_the_field(over, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        config(**over)


def test_command_refuses_before_creating_a_directory(tmp_path):
    r = run_command("antiamp", ["model=loop", "loop.m=2", f"hydra.run.dir={tmp_path / 'run'}"],
                    tmp_path)
    assert r.returncode == 2
    assert "loop.m must lie in [0, 1]" in r.stdout + r.stderr
    assert not (tmp_path / "run").exists()


def test_command_writes_table_store_and_figure(tmp_path):
    r = run_command("antiamp", ["model=loop", "loop.rounds=5", "loop.paths=10",
                                "loop.batch=100", "loop.target=0.1",
                                f"hydra.run.dir={tmp_path / 'run'}"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "cheapest policy" in r.stdout and "e_star" in r.stdout
    for f in ("results.zarr", "results.png", "results.pdf", "results.txt"):
        assert (tmp_path / "run" / f).exists(), f


def test_an_axis_over_rounds_pads_the_shorter_paths(tmp_path):
    cfg = {"model": {"name": "loop"}, "loop": {"paths": 4, "batch": 50},
           "sweep": {"axes": {"loop": {"rounds": [2, 4]}}, "cells_per_block": 1, "plot": False}}
    ds = antiamp.sweep(cfg, tmp_path / "s.zarr", progress=False, log=lambda *a: None).load()
    assert ds.sizes["round"] == 5
    short = ds.err_mean.sel(rounds=2)
    assert np.all(np.isfinite(short.isel(round=slice(0, 3))))
    assert np.all(np.isnan(short.isel(round=slice(3, None))))
    assert np.all(np.isfinite(ds.err_mean.sel(rounds=4)))
    # Each cell equals its own single run.
    one = cell(loop={"paths": 4, "batch": 50, "rounds": 2})
    assert np.array_equal(one.err_mean.values, short.isel(round=slice(0, 3)).values)


def test_safety_against_the_audit_budget_runs_from_consultancy_to_debate(tmp_path):
    """Escalation's safety (1 - Amp at each policy's fixed point): with no flag, audit
    rate 0 is consultancy and audit rate 1 is debate (rho fixed, so Amp does not move
    with the error); in between it rises with the budget, linearly in the audit rate."""
    ds = cell(judge={"kind": "logit", "mu": 0.5, "kappa": 2.0}, loop={"paths": 0})
    d = ds.sel(flag_rule="none")
    s = d.pareto_safety.values
    assert s[0] == pytest.approx(1 - float(ds.amp.sel(protocol="consult")), abs=1e-12)
    assert s[-1] == pytest.approx(1 - float(ds.amp.sel(protocol="debate")), abs=1e-12)
    np.testing.assert_allclose(s, s[0] + (s[-1] - s[0]) * lp.AUDIT_LEVELS, atol=1e-12)
    assert np.all(np.diff(d.pareto_cost.values) >= -1e-12)
    assert np.all((ds.pareto_safety.values >= 0) & (ds.pareto_safety.values <= 1))


def test_command_draws_the_safety_curve(tmp_path):
    r = run_command("antiamp", ["model=loop", "loop.rounds=3", "loop.paths=0",
                                f"hydra.run.dir={tmp_path / 'run'}"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "run" / "results_safety.png").stat().st_size > 10_000


@pytest.mark.parametrize("over", [
    {"model": {"rho": 0.5}, "judge": {"kind": "logit", "mu": 0.3, "kappa": 1.2},
     "loop": {"m": 0.8, "e_h": 0.2, "rounds": 8, "paths": 6, "batch": 700, "bias": 0.02,
              "audit": 0.3, "flag": "uncertain", "flag_band": 0.3, "budget": 0.2,
              "rho_gain": 0.5}},
    {"model": {"rho": 0.4, "p": 0.7}, "judge": {"b": 0.3},
     "loop": {"m": 0.9, "e_h": 0.3, "rounds": 6, "paths": 5, "batch": 37, "types": 9,
              "learner": "majority", "audit": 0.5, "rate": 0.7}},
    {"model": {"rho": 0.5}, "judge": {"kind": "logit", "mu": 0.3},
     "loop": {"audit": 0.6, "escalate_to": "jury", "escalate_jury": 5, "rounds": 5,
              "paths": 4, "batch": 300, "m": 0.8, "e_h": 0.2, "budget": 0.5}},
])
def test_batched_kernel_counts_what_the_case_by_case_one_counts(monkeypatch, over):
    """The kernel classifies a batch of cases from integer thresholds; every output must
    be that of playing the cases one by one with the float tests (the kernel as first
    written, tests/reference_kernels.py), to the bit: calibrated and majority learners,
    a challenger budget, flags, a jury and a growing rho."""
    import reference_kernels
    from antiamp.kernels import loop as kl

    cfg = config(**over)
    ov = lp.oversight(cfg)
    new = lp.simulate(cfg, ov)
    monkeypatch.setattr(kl, "loop_paths", reference_kernels.loop_paths)
    old = lp.simulate(cfg, ov)
    for k in new:
        np.testing.assert_array_equal(new[k], old[k], err_msg=k)


@pytest.mark.parametrize("esc_debate", [True, False])
def test_one_pass_counts_equal_each_protocols_cases_one_by_one(esc_debate):
    """The kernel counts a batch's cases under the three protocols in one pass
    (``count_cases``), reading the thresholds the protocols share from one row; its
    counts must be those of ``case_code`` called case by case on each protocol's own
    row (as the GPU kernel calls it), with rows that differ in rho and the escalation
    share, thresholds at 0 and 2^32 and a short last batch."""
    from antiamp.kernels import loop as kl

    rng = np.random.default_rng(60)
    ends = np.array([0, 2**32], np.uint64)
    seen = np.zeros((kl.N_PROTOCOLS, 4), np.int64)
    for trial in range(12):
        W = rng.integers(0, 2**32, (8, kl.BATCH), dtype=np.uint64).astype(np.uint32)
        T = np.empty((kl.N_PROTOCOLS, kl.N_THR), np.uint64)
        T[0] = rng.integers(0, 2**32 + 1, kl.N_THR, dtype=np.uint64)
        T[0, rng.integers(0, 16, 3)] = rng.choice(ends, 3)  # never, always
        T[0, 16:] = rng.integers(0, 2, 2)  # the consultancy flags: 0 or 1
        T[1:] = T[0]
        for p in range(kl.N_PROTOCOLS):  # rho and the share escalated: per protocol
            T[p, 2], T[p, 7] = rng.integers(0, 2**32 + 1, 2, dtype=np.uint64)
        t_err = rng.integers(0, 2**32 + 1, kl.N_PROTOCOLS, dtype=np.uint64)
        if trial % 3 == 0:  # the majority learner's answers: always or never wrong
            t_err = rng.choice(ends, kl.N_PROTOCOLS)
        n_b = kl.BATCH if trial % 2 else int(rng.integers(1, kl.BATCH))
        n = np.empty((kl.N_PROTOCOLS, 4), np.int64)
        kl.count_cases(W, n_b, t_err, T, esc_debate, n)
        want = np.zeros((kl.N_PROTOCOLS, 4), np.int64)
        for p in range(kl.N_PROTOCOLS):
            for q in range(n_b):
                wrong = np.int64(np.uint64(W[0, q]) < t_err[p])
                code = int(kl.case_code.py_func(p, wrong, *W[1:, q], T[p], esc_debate))
                want[p] += [code & 1, (code >> 1) & 1, (code >> 2) & 1, code >> 3]
        np.testing.assert_array_equal(n, want, err_msg=f"trial {trial}")
        seen += want
    assert seen[:2, :3].min() > 0 and seen[2].min() > 0  # every count reached (escalated: p = 2)


@pytest.mark.parametrize("paths", [[0, 20], [0]])
def test_block_is_its_cells_one_by_one(paths):
    """A block's variables (stacked at once; the NaN of cells without paths made a block
    at once) against each cell run as a block of its own, padded to the block's longest
    rounds: the same values and dtypes, with cells simulated or not and of unequal
    rounds in one block."""
    from antiamp.models.loop.model import solve_cells
    from antiamp.sweeps.engine import make_plan
    from antiamp.sweeps.spec import CellBlock

    plan = make_plan({"model": {"name": "loop"}, "judge": {"kind": "logit"},
                      "loop": {"batch": 40},
                      "sweep": {"axes": {"loop": {"paths": paths, "rounds": [3, 6]}}}})
    n = len(paths) * 2
    block = solve_cells(plan.base, CellBlock(plan.grid, 0, n))
    assert block.sizes["round"] == 7
    for i in range(n):
        one = solve_cells(plan.base, CellBlock(plan.grid, i, i + 1))
        for k, v in block.data_vars.items():
            got, ref = v.isel(cell=i), one[k].isel(cell=0)
            assert got.dtype == ref.dtype, k
            if "round" in ref.dims and ref.sizes["round"] < 7:
                ref = ref.pad(round=(0, 7 - ref.sizes["round"]),
                              constant_values=np.nan if ref.dtype.kind == "f" else 0)
            assert np.array_equal(got.values, ref.values,
                                  equal_nan=got.dtype.kind == "f"), (k, i)
    assert np.isnan(block.err_mean.values[0]).all()  # paths = 0: NaN
    if 20 in paths:
        assert np.isfinite(block.err_mean.values[-1][:, :7]).all()


def test_with_policy_is_a_fresh_oversight_of_that_policy():
    """``with_policy`` (a copy sharing the converted tables) against an ``Oversight``
    built afresh with the new policy: every attribute and every protocol's rates the
    same, and the original unchanged."""
    _, c = to_model_config(_cfg({"judge": {"kind": "logit"}, "loop": {"escalate_to": "jury"}}))
    ov = lp.oversight(c)
    for p in lp.PROTOCOLS:  # the original's remembered rates (Oversight.rates) at hand
        for e, rho in ((0.1, 0.2), (0.6, 0.9)):
            ov.rates(p, e, rho)
    before = dict(vars(ov))
    for audit, flag_c in ((0.3, None), (None, np.array([1.0, 0.0])), (0.05, [0.0, 1.0])):
        got = ov.with_policy(audit=audit, flag_c=flag_c)
        ref = lp.Oversight(ov.J_c, ov.J_d, ov.x_pc, ov.x_pd, ov.x_a,
                           ov.audit if audit is None else audit,
                           ov.flag_c if flag_c is None else flag_c, ov.budget, ov.J_jury)
        assert vars(got).keys() == vars(ref).keys()
        for k, v in vars(ref).items():
            if k == "_rates":  # the copy remembers none of the original's
                assert got._rates == {} and got._rates is not ov._rates
                continue
            assert np.array_equal(vars(got)[k], v) and type(vars(got)[k]) is type(v), k
        for p in lp.PROTOCOLS:
            for e, rho in ((0.1, 0.2), (0.6, 0.9)):
                assert got.rates(p, e, rho) == ref.rates(p, e, rho)
    assert vars(ov).keys() == before.keys()
    assert all(vars(ov)[k] is v for k, v in before.items())


def test_remembered_rates_are_the_computed_ones_and_bounded():
    """``Oversight.rates`` remembers each point: a second call returns what the first
    computed (the same as a fresh Oversight's, bit for bit, at 0.0 and -0.0 alike),
    and an iteration visiting more points than :data:`RATES_MEMO` keeps no more."""
    _, c = to_model_config(_cfg({"judge": {"kind": "logit"},
                                 "loop": {"budget": 0.3, "flag": "uncertain"}}))
    ov = lp.oversight(c)
    fresh = lambda: lp.oversight(c)  # noqa: E731
    rng = np.random.default_rng(2)
    points = [(float(e), float(r)) for e, r in rng.uniform(0, 1, (50, 2))]
    points += [(0.0, 0.3), (-0.0, 0.3), (0.4, 0.0), (0.4, -0.0)]
    for p in lp.PROTOCOLS:
        for e, rho in points:
            first = ov.rates(p, e, rho)
            assert ov.rates(p, e, rho) == first
            want = fresh()._rates_at(p, e, rho)
            assert [np.float64(x).tobytes() for x in first] == \
                [np.float64(x).tobytes() for x in want], (p, e, rho)
    for k in range(lp.RATES_MEMO + 100):
        ov.rates("escalate", k / (lp.RATES_MEMO + 100), 0.5)
    assert len(ov._rates) == lp.RATES_MEMO


def test_policy_front_pareto_is_each_points_own_check():
    """The front's Pareto flags (every pair at once) against each point checked on its
    own, on points with ties and near-ties within the 1e-12 tolerance."""
    rng = np.random.default_rng(5)
    _, c = to_model_config(_cfg({"judge": {"kind": "logit"}}))
    front = lp.policy_front(c, lp.oversight(c))
    cases = [(front["cost"], front["err"])]
    for _ in range(20):
        cost = rng.choice([0.0, 0.1, 0.1 + 5e-13, 0.3, 0.5], size=front["err"].shape)
        err = rng.choice([0.0, 0.2, 0.2 - 5e-13, 0.4], size=cost.shape)
        cases.append((cost, err))
    import unittest.mock as mock

    seen = 0
    for cost, err in cases:
        pts = np.column_stack([cost.ravel(), err.ravel()])
        ref = np.array([not np.any((pts[:, 0] <= ci + 1e-12) & (pts[:, 1] <= ei + 1e-12)
                                   & ((pts[:, 0] < ci - 1e-12) | (pts[:, 1] < ei - 1e-12)))
                        for ci, ei in pts]).reshape(err.shape)
        lr = iter([{"e_star": e, "rho_star": 0.5} for e in err.ravel()])
        rates = iter([(0.0, 0.0, x) for x in cost.ravel()])
        with mock.patch.object(lp, "long_run", lambda *a, **k: next(lr)), \
                mock.patch.object(lp.Oversight, "rates", lambda *a, **k: next(rates)):
            got = lp.policy_front(c, lp.oversight(c))
        assert np.array_equal(got["pareto"], ref)
        seen += int(ref.all() != ref.any())
    assert seen  # some cases have dominated points and some not
