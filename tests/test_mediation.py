"""Provenance-backed pluralistic mediation (model=mediation, seed 002) against its oracles.

* residual flaws: F_0 (1 - d r)^k exactly (no false alarms), and the residual law's
  mean against the closed form with them; the kernel against the exact law;
* perfect validation q^M and the evidence-quality score against exact enumeration
  of the multinomial citation counts (small M), and against the kernel;
* every metric of both syntheses by the kernel within 5 SE of the exact values;
  delta-method standard errors against the spread over seeds;
* the seed's Tables 1 and 2 by the calibrated sources (the shares written in
  mediation.SOURCES and the README): exact-match shares 76.2%, 8.7%, 0% and
  evidence quality 86.7, 56.9, 27.1, checked by simulation;
* a memo never erases dissent; a summary that erases everything never escalates;
* clear errors for bad input.
"""

import math
from dataclasses import replace

import numpy as np
import pytest

from antiamp.models.mediation import core as md
from antiamp.config import ConfigError
from antiamp.registry import to_model_config


@pytest.mark.parametrize("k", [0, 1, 3, 7])
def test_residual_flaws_closed_form(k):
    par = md.Params(iterations=k, false_alarm=0.0, flaws=2.5, detect=0.55, repair=0.8)
    pmf = md.residual_pmf(par)
    lam = 2.5 * (1 - 0.55 * 0.8) ** k
    assert float(np.dot(np.arange(len(pmf)), pmf)) == pytest.approx(lam, abs=1e-12)
    assert pmf[0] == pytest.approx(math.exp(-lam), abs=1e-14)
    with_fa = replace(par, false_alarm=0.3)
    pmf = md.residual_pmf(with_fa)
    assert float(np.dot(np.arange(len(pmf)), pmf)) == pytest.approx(md.mean_residual(with_fa),
                                                                    abs=1e-12)


@pytest.mark.parametrize("M,source", [(1, "foam"), (3, "human"), (4, "zeroshot"), (5, "foam")])
def test_citations_against_enumeration(M, source):
    par = md.Params(citations=M, classes=md.SOURCES[source], relevance=0.4)
    enum, closed = md.citation_enumeration(par), md.citation_exact(par)
    for k in closed:
        assert enum[k] == pytest.approx(closed[k], abs=1e-12), k
    assert closed["perfect_case"] == pytest.approx(closed["exact_share"] ** M, abs=1e-15)


CASES = [
    md.Params(),
    md.Params(citations=3, classes=md.SOURCES["human"], relevance=0.5, iterations=5,
              erase=0.5, escalate_at=2, perspectives=4, flaws=4.0, false_alarm=0.2),
    md.Params(iterations=0, perspectives=1, dissent=0.9, false_dissent=0.2, human_accuracy=0.6,
              classes=(0.5, 0.1, 0.2, 0.1, 0.1), relevance=1.0),
]


@pytest.mark.parametrize("par", CASES)
def test_kernel_matches_exact(par):
    ex = md.exact(par)
    sim = md.simulate(par, 300_000, seed=5)
    for k, v in ex.items():
        v = np.atleast_1d(v)
        m, se = sim[k]
        ok = np.isfinite(v) & (se > 0)
        assert np.all(np.abs(m[ok] - v[ok]) < 5 * se[ok]), (k, m, v, se)
        const = np.isfinite(v) & (se == 0)
        np.testing.assert_allclose(m[const], v[const], atol=1e-9)


def test_standard_errors_match_spread_over_seeds():
    par = md.Params()
    runs = [md.simulate(par, 20_000, seed=s) for s in range(24)]
    for k, i in (("amp", 0), ("amp", 1), ("err_unescalated", 0), ("erased", 1), ("cost", 0),
                 ("eq_score", 0)):
        est = np.array([r[k][0][i] for r in runs])
        se = np.array([r[k][1][i] for r in runs])
        ratio = est.std(ddof=1) / se.mean()
        assert 0.65 < ratio < 1.45, (k, i, ratio)


@pytest.mark.parametrize("source", ["foam", "human", "zeroshot"])
def test_seed_tables_reproduced(source):
    pv, eq = md.SEED_TABLES[source]
    par = md.Params(classes=md.SOURCES[source])
    ex = md.exact(par)
    assert 100 * ex["exact_share"] == pytest.approx(pv, abs=0.05)
    assert ex["eq_score"] == pytest.approx(eq, abs=0.05)
    sim = md.simulate(par, 200_000, seed=8)
    for k, target in (("exact_share", pv / 100), ("eq_score", eq)):
        m, se = sim[k]
        assert abs(m[0] - target) < 5 * se[0] + (0.0005 if k == "exact_share" else 0.05), k
    if source == "foam":
        assert md.SOURCES["foam"][4] == 0.0  # provenance: nothing fabricated


def test_memo_keeps_dissent_and_full_erasure_never_escalates():
    ex = md.exact(md.Params(erase=1.0))
    assert ex["erased"][0] == 0.0 and ex["erased"][1] == pytest.approx(1.0)
    assert ex["escalated"][1] == 0.0
    assert ex["amp"][1] == pytest.approx(1.0)
    assert ex["amp"][0] < 0.5


def test_model_runs_and_reports():
    from antiamp.models.mediation.model import format_mediation
    from antiamp.sweeps.blocks import run_cell

    ds = run_cell({"model": {"name": "mediation"}, "run": {"n_instances": 50_000}})
    d = ds.sel(protocol="summary")
    assert abs(float(d.amp) - float(d.amp_exact)) < 5 * float(d.amp_se)
    text = format_mediation(ds)
    assert "memo" in text and "summary" in text


@pytest.mark.parametrize("over,field", [
    ({"citations": 0}, "mediation.citations"),
    ({"source": "oracle"}, "mediation.source"),
    ({"source": "custom"}, "mediation.classes"),
    ({"source": "custom", "classes": [0.5, 0.5, 0.5, 0.0, 0.0]}, "sum to 1"),
    ({"classes": [1, 0, 0, 0, 0]}, "source=custom"),
    ({"escalate_at": 5}, "mediation.escalate_at"),
    ({"erase": 1.5}, "mediation.erase"),
    ({"flaws": -1}, "mediation.flaws"),
])
def test_bad_input_names_the_field(over, field):
    with pytest.raises(ConfigError, match=field):
        to_model_config({"model": {"name": "mediation"}, "mediation": over})


# ---------------------------------------------------------------- the class-sum kernel
ORACLE_CASES = CASES + [
    md.Params(classes=md.SOURCES["zeroshot"], flaws=45.0, detect=0.1, repair=0.1,
              iterations=4),  # flaw counts beyond the binomial tables
    md.Params(citations=100, flaws=0.0, false_alarm=1.0, iterations=2),  # beyond M_TAB
    md.Params(citations=40, detect=1.0, repair=1.0, erase=1.0, perspectives=6,
              escalate_at=3),  # a shared-row inversion looked up (M > BROADCAST)
]


def _sums(par, n, seed, n_chunks=8):
    from antiamp.kernels import mediation as km
    from antiamp.kernels.rng import split_seed

    k0, k1 = split_seed(seed)
    surv = 1.0 - par.detect * par.repair
    tb = km.tables(par.flaws, surv, int(par.iterations), int(par.perspectives), par.dissent,
                   par.false_dissent, par.erase, par.false_alarm, int(par.citations),
                   par.classes)
    G_p, S_p, G_b, S_b, t_dis, t_fa, t_erase, G_c, S_c, q = tb
    return km.mediation_sums(n, k0, k1, int(par.iterations), int(par.perspectives),
                             int(par.citations), surv, float(par.dissent),
                             float(par.false_dissent), G_p, S_p, G_b, S_b, t_dis, t_fa,
                             t_erase, q, G_c, S_c, n_chunks)


@pytest.mark.parametrize("par", ORACLE_CASES)
def test_class_sums_match_the_moment_matrix_kernel(par):
    """The kernel's integer sums, weighted afterwards, against the first kernel (the
    vector and its outer product per case, summed in order; tests/moment_kernels.py):
    the same draws (table inversions equal to the sequential ones), so equal to
    rounding; the citation-flaw cross moments, which no metric reads, are not kept."""
    from antiamp.kernels.rng import split_seed
    from moment_kernels import mediation_kernel

    n = 40_001
    k0, k1 = split_seed(13)
    surv = 1.0 - par.detect * par.repair
    o1, o2 = mediation_kernel(n, k0, k1, par.flaws, surv, int(par.iterations),
                              par.false_alarm, int(par.perspectives), par.dissent,
                              par.false_dissent, par.erase, int(par.escalate_at),
                              par.human_accuracy, int(par.citations),
                              np.asarray(par.classes, float), np.asarray(md.EQ_WEIGHTS),
                              par.relevance)
    o1, o2 = o1.sum(axis=0), o2.sum(axis=0)
    flaw, cit = _sums(par, n, 13)
    s1, s2 = md.class_moments(par, flaw, cit, float(n))
    np.testing.assert_allclose(s1[0], o1, rtol=1e-12, atol=1e-9)
    for part in (md.FLAW_PART, md.CITATION_PART):
        ix = np.ix_(part, part)
        np.testing.assert_allclose(s2[0][ix], o2[ix], rtol=1e-12, atol=1e-9)
    whole = o1 == np.round(o1)
    assert np.array_equal(s1[0][whole], o1[whole])


def test_class_sums_do_not_depend_on_the_split():
    par = CASES[1]
    ref = _sums(par, 10_007, 3, 1)
    for chunks in (2, 3, 16):
        got = _sums(par, 10_007, 3, chunks)
        assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])


def test_integer_thresholds_are_the_float_tests():
    """w < below(q) exactly when u < q, and w >= above(c) exactly when u > c, for
    u = (w + 0.5) 2**-32, at the words either side of each threshold."""
    from antiamp.kernels.mediation import above, below

    rng = np.random.default_rng(1)
    qs = list(rng.random(2000)) + [0.0, 1.0, 0.5, 2.0 ** -33, 2.0 ** -32, 1 - 2.0 ** -33,
                                   np.nextafter(1.0, 0.0), 1.0 + 1e-15, 0.1, 0.3]
    for q in qs:
        t, g = int(below(q)), int(above(q))
        for w in range(max(0, min(t, g) - 2), min(2 ** 32, max(t, g) + 2)):
            u = (np.float64(w) + 0.5) * (1.0 / 4294967296.0)
            assert (w < t) == (u < q), (q, w)
            assert (w >= g) == (u > q), (q, w)


def test_params_derive_from_the_section():
    """Params is the mediation section (declared once) with the source read as shares."""
    from dataclasses import fields

    from antiamp.models.mediation.config import MediationConfig

    names = {f.name for f in fields(md.Params)}
    assert {f.name for f in fields(MediationConfig)} - {"source"} <= names
    c = to_model_config({"model": {"name": "mediation"},
                         "mediation": {"source": "human", "iterations": 5, "erase": 0.3}})[1]
    assert md.params_of(c) == replace(md.Params(), classes=md.SOURCES["human"], iterations=5,
                                      erase=0.3)
    c = to_model_config({"model": {"name": "mediation"},
                         "mediation": {"source": "custom", "classes": [0.5, 0.1, 0.2, 0.1, 0.1]}})[1]
    assert md.params_of(c).classes == (0.5, 0.1, 0.2, 0.1, 0.1)


def test_batched_kernel_is_the_per_case_steps():
    """The launcher (words batched, shared-row inversions by comparison over the batch,
    the other inversions stage by stage and by a word's top byte, cases counted by
    class and residual flaw count, citation splits counted by their digits where
    M <= 10) against the per-case composition of the scalar steps (``one_case``) that
    a GPU launcher would call: the same sums, the citation products among them."""
    import numba as nb

    from antiamp.kernels import mediation as km
    from antiamp.kernels.rng import split_seed

    @nb.njit
    def by_case(n, k0, k1, iters, P, M, surv, s, fd, G_p, S_p, G_b, S_b, t_dis, t_fa, t_er, q,
                G_c, S_c):
        n_ctr = (1 + 2 * iters + 2 * P + 4 + 3) // 4
        W = np.empty((4 * n_ctr, 1), np.uint32)
        counts = np.zeros(5, np.int64)
        out = np.zeros((3, 2 * (P + 1) ** 2), np.int64)
        cit = np.zeros(km.N_CIT, np.int64)
        for i in range(n):
            k, nf = km.one_case(i, k0, k1, iters, P, M, surv, s, fd, G_p, S_p, G_b, S_b, t_dis,
                                t_fa, t_er, q, G_c, S_c, W, counts)
            out[0, k] += 1
            out[1, k] += nf
            out[2, k] += nf * nf
            perfect = np.int64(counts[0] + counts[1] == M)
            cit[30] += perfect
            for a in range(5):
                cit[a] += counts[a]
                cit[31 + a] += perfect * counts[a]
                for c in range(5):
                    cit[5 + 5 * a + c] += counts[a] * counts[c]
        return out, cit

    splits = [md.Params(citations=10), md.Params(citations=11, classes=md.SOURCES["human"])]
    for par in ORACLE_CASES + splits:  # residual flaws past the per-class counts' cap too
        k0, k1 = split_seed(9)
        surv = 1.0 - par.detect * par.repair
        tb = km.tables(par.flaws, surv, int(par.iterations), int(par.perspectives),
                       par.dissent, par.false_dissent, par.erase, par.false_alarm,
                       int(par.citations), par.classes)
        ref, cit = by_case(5_000, k0, k1, int(par.iterations), int(par.perspectives),
                           int(par.citations), surv, float(par.dissent),
                           float(par.false_dissent), *tb[:7], tb[9], tb[7], tb[8])
        flaw, sums = _sums(par, 5_000, 9)
        assert np.array_equal(flaw, ref)
        assert np.array_equal(sums, cit)


# ------------------------------------------------------------------ the SEs' rows
@pytest.mark.parametrize("par", [md.Params(), md.Params(perspectives=1, human_accuracy=0.6,
                                                        human_cost=7.0, iterations=4)])
def test_value_rows_are_values_row_by_row(par):
    """The metrics of many mean vectors at once are :func:`_values` of each, the same
    floats, NaN where a denominator is zero (no wrong case, every case escalated or
    wrong, no dissent raised)."""
    rng = np.random.default_rng(5)
    M = rng.uniform(0, 1, (40, md.L))
    M[0, 0] = 0.0  # no wrong case: Amp undefined
    M[1, 0] = 1.0  # every case wrong: follow-when-correct undefined
    M[2, md.N_SHARED + 1] = 1.0  # every case escalated (memo)
    M[3, md.N_SHARED + md.PER + 4] = 0.0  # no dissent raised (summary)
    rows = md._value_rows(M, par)
    for r, m in enumerate(M):
        one = md._values(m, par)
        assert list(rows) == list(one)
        for k, v in one.items():
            np.testing.assert_array_equal(rows[k][r], np.ravel(v), err_msg=f"row {r} {k}")
    assert np.isnan(rows["amp"][0]).all() and np.isnan(rows["fwc"][1]).all()
    assert np.isnan(rows["err_unescalated"][2, 0]) and np.isnan(rows["erased"][3, 1])


def test_standard_errors_from_rows_are_the_same_floats():
    """``simulate``'s delta method evaluated on the 2 L shifted means at once gives the
    standard errors of 2 L calls, bit for bit (their agreement with the spread over
    seeds is tested above)."""
    from antiamp import moments

    par = md.Params(citations=6, classes=md.SOURCES["human"])
    n = 20_000
    s1, s2 = md.class_moments(par, *md.kernel_sums(par, n, 3), float(n))
    m, cov = moments.mean_cov(s1, s2, float(n))
    one = moments.delta_method(lambda v: md._values(v, par), m, cov, float(n))
    rows = moments.delta_method(None, m, cov, float(n), rows=lambda R: md._value_rows(R, par))
    assert list(one) == list(rows)
    for k in one:
        np.testing.assert_array_equal(rows[k], one[k], err_msg=k)
    assert all(np.isfinite(one[k]).all() for k in ("acc", "escalated", "wrong"))
    sim = md.simulate(par, n, 3)
    for k in one:
        np.testing.assert_array_equal(sim[k][1], one[k], err_msg=k)


@pytest.mark.parametrize("par", CASES)
def test_exact_error_with_the_callers_exact_values(par):
    """A cell passes its own exact values (the default cut) to the error bound: the
    same bound as computed afresh."""
    assert md.exact_error(par, ex=md.exact(par)) == md.exact_error(par)
