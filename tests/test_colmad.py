"""Error detection by debate (model=colmad, seed 001) against its oracles.

* exact enumeration against the kernel within 5 SE for every metric, over pair
  correlations, rounds, judges and concession rates; delta-method standard errors
  against the spread over seeds;
* with v_q = 1, no misleading channel, delta = 0 and the right side's evidence
  always found, ColMAD is the oracle OR-collaboration: error = Pr(both wrong) =
  e1 e2 + eta sqrt(e1 (1 - e1) e2 (1 - e2));
* CopMAD on a disagreement, one round, no rhetoric, is seed 000's debate: its
  hacking rate when the flagger is wrong is antiamp.theory's Amp(debate) at
  rho = pi_W with the same logit judge;
* the seed's shape at the parameters written here and in the README: ColMAD's F1
  19% above CopMAD's; a heterogeneous pair removing more than 30% of the errors
  (oracle collaboration) against 0% for a same-family pair; 2 to 5 rounds alike;
  a region where ColMAD falls below a single detector;
* clear errors for bad input.
"""

import math
from dataclasses import replace

import numpy as np
import pytest

import antiamp
from antiamp.models.colmad import core as cm
from antiamp.config import ConfigError
from antiamp.registry import to_model_config

CASES = [
    cm.Params(),
    cm.Params(eta=0.8, rounds=5, mu=0.6, delta=0.3),
    cm.Params(eta=-0.5, rounds=1, p_error=0.2, sens=(0.9, 0.6), spec=(0.7, 0.85),
              kappa_r=2.0, hack=1.5, lam=2.0),
    cm.Params(eta=0.3, eta_mode="absolute", evidence=0.4, verify=0.2, relevance=0.5,
              delta=0.0),
]


@pytest.mark.parametrize("par", CASES)
def test_kernel_matches_enumeration(par):
    ex = cm.metric_values(cm.exact_means(par))
    sim = cm.simulate(par, 300_000, seed=7)
    for k, v in ex.items():
        m, se = sim[k]
        ok = np.isfinite(v) & (se > 0)
        assert np.all(np.abs(m[ok] - v[ok]) < 5 * se[ok]), (k, m, v, se)
        const = np.isfinite(v) & (se == 0)  # degenerate (e.g. calls of `single`)
        np.testing.assert_allclose(m[const], v[const], atol=1e-12)


def test_standard_errors_match_spread_over_seeds():
    par = cm.Params()
    runs = [cm.simulate(par, 20_000, seed=s) for s in range(24)]
    for k, i in (("f1", 2), ("f1", 1), ("precision", 0), ("hacking", 1), ("f1_gain", 0),
                 ("calls", 2)):
        est = np.array([r[k][0][i] for r in runs])
        se = np.array([r[k][1][i] for r in runs])
        ratio = est.std(ddof=1) / se.mean()
        assert 0.65 < ratio < 1.45, (k, i, ratio)


@pytest.mark.parametrize("eta", [0.0, 0.4, -0.3])
def test_colmad_is_oracle_or_collaboration(eta):
    par = cm.Params(eta=eta, eta_mode="absolute", verify=1.0, mislead=0.0, delta=0.0,
                    evidence=1.0, rounds=2)
    v = cm.metric_values(cm.exact_means(par))
    err = 0.0
    for pw, (a1, a2) in ((par.p_error, par.sens), (1 - par.p_error, par.spec)):
        e1, e2 = 1 - a1, 1 - a2
        err += pw * (e1 * e2 + eta * math.sqrt(e1 * (1 - e1) * e2 * (1 - e2)))
    P = cm.PROTOCOLS.index
    assert 1 - v["acc"][P("colmad")] == pytest.approx(err, abs=1e-12)
    assert 1 - v["acc"][P("oracle")] == pytest.approx(err, abs=1e-12)


def test_copmad_on_disagreements_is_seed_000_debate():
    par = cm.Params(rounds=1, evidence=1.0, hack=0.0, kappa_r=0.0, mislead=0.0,
                    fabricate=0.6, verify=0.5, lam=1.3, mu=0.4, kappa=2.0, p_error=0.0)
    # No errors: every disagreement has the flagger wrong, the protagonist a of seed 000.
    v = cm.metric_values(cm.exact_means(par))
    th = antiamp.theory({"model": {"rho": par.pass_wrong},
                         "judge": {"kind": "logit", "lam": 1.3, "mu": 0.4, "kappa": 2.0}})
    amp = float(th.amp.sel(protocol="debate"))
    assert v["hacking"][cm.PROTOCOLS.index("copmad")] == pytest.approx(amp, abs=1e-12)


def test_seed_shape():
    par = cm.Params()  # the defaults: the README's parameters
    v = cm.metric_values(cm.exact_means(par))
    P = cm.PROTOCOLS.index
    assert v["f1_gain"][0] == pytest.approx(0.19, abs=0.005)
    m, se = cm.simulate(par, 300_000, seed=1)["f1_gain"]
    assert abs(m[0] - 0.19) < 0.005 + 3 * se[0]
    het = cm.metric_values(cm.exact_means(replace(par, eta=0.0)))
    same = cm.metric_values(cm.exact_means(replace(par, eta=1.0)))
    assert het["error_reduction"][P("oracle")] > 0.30
    assert abs(same["error_reduction"][P("oracle")]) < 1e-9
    f1 = [cm.metric_values(cm.exact_means(replace(par, rounds=r)))["f1"][P("colmad")]
          for r in range(2, 6)]
    assert max(f1) - min(f1) < 0.01  # 2 to 5 rounds perform alike
    # A same-family pair with weak verification: ColMAD below a single detector.
    weak = cm.metric_values(cm.exact_means(replace(par, eta=1.0, verify=0.3)))
    assert weak["f1"][P("colmad")] < weak["f1"][P("single")]
    assert v["f1"][P("colmad")] > v["f1"][P("single")] > v["f1"][P("copmad")]


def test_hack_for_gain_inverts_the_gain():
    par = cm.Params(eta=0.3, verify=0.5)
    h = cm.hack_for_gain(par, 0.1)
    assert cm.metric_values(cm.exact_means(replace(par, hack=h)))["f1_gain"][0] == \
        pytest.approx(0.1, abs=1e-8)


def test_model_runs_and_reports():
    from antiamp.models.colmad.model import format_colmad
    from antiamp.sweeps.blocks import run_cell

    ds = run_cell({"model": {"name": "colmad"}, "judge": {"kind": "logit"},
                   "run": {"n_instances": 50_000}})
    d = ds.sel(protocol="colmad")
    assert abs(float(d.f1) - float(d.f1_exact)) < 5 * float(d.f1_se)
    text = format_colmad(ds)
    for p in cm.PROTOCOLS:
        assert p in text


@pytest.mark.parametrize("over,field", [
    ({"judge": {"kind": "tiebreak"}}, "judge.kind=logit"),
    ({"judge": {"kind": "logit", "jury_size": 3}}, "judge.jury_size"),
    ({"colmad": {"sens_1": 1.2}}, "colmad.sens_1"),
    ({"colmad": {"rounds": 0}}, "colmad.rounds"),
    ({"colmad": {"eta": 1.5}}, "colmad.eta"),
    ({"colmad": {"eta": 0.9, "eta_mode": "absolute"}}, "infeasible"),
    ({"colmad": {"eta_mode": "scaled"}}, "colmad.eta_mode"),
    ({"colmad": {"r_sd": -1}}, "colmad.r_sd"),
])
def test_bad_input_names_the_field(over, field):
    cfg = {"model": {"name": "colmad"}, "judge": {"kind": "logit"}}
    for k, v in over.items():
        cfg[k] = {**cfg.get(k, {}), **v}
    with pytest.raises(ConfigError, match=field):
        to_model_config(cfg)


# ---------------------------------------------------------------- the class-count kernel
ORACLE_CASES = CASES + [
    cm.Params(evidence=1.0, delta=1.0, p_error=1.0),
    cm.Params(p_error=0.0, evidence=0.0, rounds=7, delta=0.5),
    cm.Params(eta=1.0, rounds=2, fabricate=1.0, verify=0.0, mislead=1.0),
]


def _class_sums(par, n, seed, n_chunks=8):
    from antiamp.kernels.colmad import colmad_counts
    from antiamp.kernels.rng import split_seed

    k0, k1 = split_seed(seed)
    return colmad_counts(n, k0, k1, *cm.kernel_args(par), int(par.rounds), n_chunks)


@pytest.mark.parametrize("par", ORACLE_CASES)
def test_class_counts_match_the_moment_matrix_kernel(par):
    """The kernel's class counts, weighted afterwards, against the first kernel (the
    vector and its outer product per response, summed in order; tests/moment_kernels.py):
    the same draws and classes, so equal to rounding (only the addition order differs),
    every integer-valued sum exactly."""
    from antiamp.kernels.rng import split_seed
    from moment_kernels import colmad_kernel

    n = 60_001
    k0, k1 = split_seed(11)
    o1, o2 = colmad_kernel(n, k0, k1, par.p_error, np.ascontiguousarray(cm.pair_table(par)),
                           cm.judge_right(par), np.array([cm.tie_right(par, 0),
                                                          cm.tie_right(par, 1)]),
                           par.evidence, par.pass_wrong, int(par.rounds), par.delta)
    s1, s2 = cm.class_moments(par, _class_sums(par, n, 11))
    o1, o2 = o1.sum(axis=0), o2.sum(axis=0)
    np.testing.assert_allclose(s1[0], o1, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(s2[0], o2, rtol=1e-12, atol=1e-9)
    whole = o1 == np.round(o1)
    assert np.array_equal(s1[0][whole], o1[whole])
    assert _class_sums(par, n, 11)[0].sum() == n


def test_class_counts_do_not_depend_on_the_split():
    par = CASES[1]
    ref = _class_sums(par, 10_007, 3, 1)
    for chunks in (2, 3, 16):
        assert np.array_equal(_class_sums(par, 10_007, 3, chunks), ref)


def test_batched_kernel_is_the_per_response_steps():
    """The launcher (words batched, the rounds by table lookup) against the per-response
    composition of the scalar steps (``one_response``) that a GPU launcher would call."""
    import numba as nb

    from antiamp.kernels import colmad as kc
    from antiamp.kernels.rng import split_seed

    @nb.njit
    def by_response(n, k0, k1, t_err, pt, t_x, t_pw, t_d, R):
        out = np.zeros((3, kc.N_CLASSES), np.int64)
        for i in range(n):
            c, u = kc.one_response(i, k0, k1, np.uint64(kc.STREAM), t_err, pt, t_x, t_pw, t_d, R)
            out[0, c] += 1
            out[1, c] += u
            out[2, c] += u * u
        return out

    for par in (CASES[0], CASES[1], ORACLE_CASES[-2]):
        k0, k1 = split_seed(5)
        ref = by_response(20_000, k0, k1, *cm.kernel_args(par), int(par.rounds))
        assert np.array_equal(_class_sums(par, 20_000, 5), ref)


def test_integer_thresholds_are_the_float_tests():
    """w < threshold(q) exactly when (w + 0.5) 2**-32 < q, at the words either side."""
    from antiamp.kernels.colmad import threshold

    rng = np.random.default_rng(0)
    qs = list(rng.random(2000)) + [0.0, 1.0, 0.5, 2.0 ** -33, 2.0 ** -32, 1 - 2.0 ** -33,
                                   np.nextafter(1.0, 0.0), 0.1, 0.3, 0.7]
    for q in qs:
        t = threshold(q)
        for w in (t - 2, t - 1, t, t + 1):
            if 0 <= w < 2 ** 32:
                assert (w < t) == ((np.float64(w) + 0.5) * (1.0 / 4294967296.0) < q), (q, w)


def test_params_derive_from_the_section():
    """Params is the colmad section (declared once) with the detectors as pairs and the
    judge's weights: a config's fields reach it without a second list."""
    from dataclasses import fields

    from antiamp.models.colmad.config import ColmadConfig

    names = {f.name for f in fields(cm.Params)}
    for f in fields(ColmadConfig):
        key = {"sens_1": "sens", "sens_2": "sens", "spec_1": "spec", "spec_2": "spec"}.get(
            f.name, f.name)
        assert key in names, f.name
    c = to_model_config({"model": {"name": "colmad"}, "judge": {"kind": "logit", "lam": 2.5},
                         "colmad": {"sens_2": 0.65, "rounds": 4, "delta": 0.2}})[1]
    par = cm.params_of(c)
    assert par == replace(cm.Params(), sens=(0.8, 0.65), rounds=4, delta=0.2, lam=2.5,
                          mu=float(c.judge.mu), kappa=float(c.judge.kappa))
    assert isinstance(par.rounds, int) and isinstance(par.delta, float)


# ------------------------------------------------------- a block's values at once
def _edge_rows():
    """Mean vectors of real cells and ones that hit every NaN branch of the metrics: no
    positives, no disagreements, CopMAD's F1 zero, a perfect single detector."""
    rows = [cm.exact_means(p) for p in CASES + ORACLE_CASES]
    z = np.zeros(cm.L)
    perfect = rows[0].copy()
    perfect[1:cm.PER] = 0.0  # single: no fp, fn, calls, wrong: accuracy 1
    nof1 = rows[1].copy()
    nof1[cm.PER] = 0.0  # CopMAD: no true positives, its F1 zero
    return np.array(rows + [z, perfect, nof1])


def test_metric_rows_are_metric_values_row_by_row():
    """The block's metrics at once (what a sweep stores) against the per-cell function,
    bit for bit (NaN where it gives NaN)."""
    m = _edge_rows()
    got = cm.metric_rows(m)
    for i, row in enumerate(m):
        ref = cm.metric_values(row)
        assert list(got) == list(ref)
        for k, v in ref.items():
            assert got[k][i].shape == v.shape
            assert np.array_equal(got[k][i], v, equal_nan=True), (i, k, got[k][i], v)
    # the NaN branches are exercised
    assert np.isnan(got["precision"]).any() and np.isnan(got["f1_gain"]).any()
    assert np.isnan(got["hacking"]).any() and np.isnan(got["error_reduction"]).any()


def test_quadrature_memo_returns_the_quadrature():
    """The memoised judge integral is QUADPACK's value and bound for the same arguments,
    signed zeros and all; a table's integrals share it."""
    cm._expect_memo.cache_clear()
    for a, s in ((0.3, 1.7), (0.3, 0.9), (-2.0, 0.5), (0.0, 3.0), (-0.0, 3.0), (1.0, 0.0),
                 (0.4, -2.2)):
        assert cm.expect_logistic_normal(a, s) == cm._expect(a, s)
        assert cm.expect_logistic_normal(np.float64(a), s) == cm._expect(a, s)
    cm._expect_memo.cache_clear()
    cm.judge_right(cm.Params())  # mu = 0: three distinct integrals of eight
    assert cm._expect_memo.cache_info().currsize == 3


def test_block_is_its_cells_one_by_one(monkeypatch):
    """A grid block's stored values against each cell solved on its own by the model's
    functions (the per-cell path the block replaced; every judge integral computed
    afresh, not read from the memo), bit for bit."""
    from antiamp.layout import cell_triplets
    from antiamp.models.colmad.model import SEED_GAIN, solve_cells
    from antiamp.sweeps.engine import make_plan
    from antiamp.sweeps.spec import CellBlock

    plan = make_plan({"model": {"name": "colmad"}, "judge": {"kind": "logit"},
                      "run": {"n_instances": 3000, "seed": 4},
                      "sweep": {"axes": {"colmad": {"eta": {"linspace": [0.0, 1.0, 3]},
                                                    "hack": [0.0, 2.5]}}}})
    cells = CellBlock(plan.grid, 0, 6)
    ds = solve_cells(plan.base, cells)
    monkeypatch.setattr(cm, "_expect_memo", lambda a, s, *_: cm._expect(a, s))
    for i in range(len(cells)):
        c = cells[i]
        par = cm.params_of(c)
        r = cell_triplets(cm.metric_values(cm.exact_means(par)),
                          cm.simulate(par, 3000, 4))
        for k in r.keys_of:
            v = ds[k].isel(cell=i).values
            assert np.array_equal(v, np.asarray(r[k]).reshape(v.shape), equal_nan=True), k
        for k, ref in (("quad_error", cm.quad_error(par)),
                       ("hack_seed_gain", cm.hack_for_gain(par, SEED_GAIN)),
                       ("pass_wrong", par.pass_wrong)):
            assert np.array_equal(ds[k].values[i], ref, equal_nan=True), k
    assert np.isfinite(ds.hack_seed_gain.values).any()


def test_simulated_standard_errors_from_rows_are_the_same_floats():
    """``simulate`` evaluates the delta method's 2 L shifted means at once
    (:func:`metric_rows`): the same values and standard errors as 2 L calls of
    :func:`metric_values`, bit for bit."""
    from antiamp import moments
    from antiamp.kernels.colmad import colmad_counts
    from antiamp.kernels.rng import split_seed

    par, n = cm.Params(), 30_000
    k0, k1 = split_seed(4)
    counts = colmad_counts(n, k0, k1, *cm.kernel_args(par), int(par.rounds), 4)
    s1, s2 = cm.class_moments(par, counts)
    ref = moments.estimates(cm.metric_values, s1, s2, float(n))
    got = cm.simulate(par, n, 4)
    assert list(got) == list(ref)
    for k, (v, se) in ref.items():
        assert np.array_equal(got[k][0], v, equal_nan=True), k
        assert np.array_equal(got[k][1], se, equal_nan=True), k
    assert np.isfinite(ref["f1"][1]).all() and (ref["f1"][1] > 0).all()
