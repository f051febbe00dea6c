"""Multi-option answers: the K = 2 logit limit, exact enumeration against the kernel."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import seed_formulas as sf
from antiamp import ConfigError
from antiamp.models.options import core as opm
from antiamp.extended import solve_extended, to_ext_config

LOGIT = {"kind": "logit", "lam": 1.2, "mu": 0.3, "kappa": 1.5}


def run(options, payoffs="exact", n=1_000_000, seed=0, p=0.7, rho=0.3, judge=LOGIT):
    return solve_extended({"extension": "options", "judge": judge, "model": {"p": p, "rho": rho},
                           "options": options, "equilibrium": {"payoffs": payoffs},
                           "run": {"n_instances": n, "seed": seed}})


@given(rho=st.floats(0.01, 0.99), lam=st.floats(0.2, 3), mu=st.floats(-1.5, 1.5),
       kappa=st.floats(0, 3), ant=st.sampled_from(["assigned", "best_of_k"]))
@settings(max_examples=30, deadline=None)
def test_two_options_give_the_logit_closed_forms(rho, lam, mu, kappa, ant):
    ds = run({"K": 2, "antagonist": ant, "k_examine": 1}, rho=rho,
             judge={"kind": "logit", "lam": lam, "mu": mu, "kappa": kappa})
    assert float(ds.amp.sel(protocol="consult")) == pytest.approx(sf.amp_consult_logit(rho, lam, mu, kappa), abs=1e-12)
    assert float(ds.amp.sel(protocol="debate")) == pytest.approx(sf.amp_debate_logit(rho, lam, mu, kappa), abs=1e-12)
    # With two options the only alternative is the truth whenever a is wrong.
    assert float(ds.wrong_alternative.sel(protocol="debate")) == 0.0


@pytest.mark.parametrize("ant", ["assigned", "best_of_k", "attack"])
@pytest.mark.parametrize("K", [3, 5])
def test_kernel_agrees_with_exact_enumeration(ant, K):
    opts = {"K": K, "antagonist": ant, "k_examine": 2, "distractor_weight": 0.4,
            "distractor_rho": 0.55, "distractor_bias": 0.6, "near_miss_loss": 0.3,
            "loss_tol": 0.5, "q_true": 0.9, "prior": (np.arange(1, K + 1) / np.arange(1, K + 1).sum()).tolist(),
            "option_bias": np.linspace(-0.5, 0.7, K).tolist()}
    ex = run(opts)
    sm = run(opts, payoffs="simulated", n=1_000_000, seed=K)
    for v in opm.METRICS:
        for prot in ("consult", "debate"):
            a, b = float(ex[v].sel(protocol=prot)), float(sm[v].sel(protocol=prot))
            if np.isnan(a):
                assert np.isnan(b)
                continue
            s = float(sm[f"{v}_se"].sel(protocol=prot))
            assert abs(a - b) <= 5 * s + 1e-12, (v, prot, a, b, s)


def test_a_common_option_bias_changes_nothing():
    a = run({"K": 4, "antagonist": "best_of_k", "k_examine": 2})
    b = run({"K": 4, "antagonist": "best_of_k", "k_examine": 2, "option_bias": [0.4] * 4})
    for v in ("amp", "acc", "wrong_alternative"):
        np.testing.assert_allclose(a[v].values, b[v].values, atol=1e-12)
    c = run({"K": 4, "antagonist": "best_of_k", "k_examine": 2, "option_bias": [1.0, 0, 0, 0]})
    assert not np.allclose(a.acc.values, c.acc.values)


def test_exact_probabilities_are_consistent():
    ds = run({"K": 4, "antagonist": "best_of_k", "k_examine": 2, "distractor_weight": 0.3})
    for prot in ("consult", "debate"):
        d = ds.sel(protocol=prot)
        # acc = p fwc + Pr(y = omega | a wrong) (1 - p) <= p fwc + (1 - p)(1 - amp)
        assert float(d.acc) <= 0.7 * float(d.fwc) + 0.3 * (1 - float(d.amp)) + 1e-12
        assert 0 <= float(d.loss) <= 1


def test_examining_more_alternatives_finds_the_truth_more_often():
    ds = solve_extended({"extension": "options", "judge": LOGIT, "model": {"p": 0.7, "rho": 0.3},
                         "options": {"K": 6, "antagonist": "best_of_k"},
                         "sweep": {"axes": {"options": {"k_examine": [1, 3, 5]}}}})
    wa = ds.wrong_alternative.sel(protocol="debate").values
    amp = ds.amp.sel(protocol="debate").values
    assert np.all(np.diff(wa) < 0) and np.all(np.diff(amp) < 0)
    assert wa[0] == pytest.approx(4 / 5)  # one alternative examined of five: the truth w.p. 1/5


@pytest.mark.parametrize("bad, match", [
    ({"options": {"K": 1}}, "options.K must be an integer >= 2"),
    ({"options": {"K": 17}}, "options.K must be an integer >= 2 and <= 16"),
    ({"options": {"K": 3, "prior": [0.5, 0.5]}}, "options.prior must have K=3 entries"),
    ({"options": {"K": 2, "prior": [0.7, 0.7]}}, "summing to 1"),
    ({"options": {"antagonist": "random"}}, "options.antagonist must be one of"),
    ({"options": {"antagonist": "best_of_k", "k_examine": 4, "K": 4}}, r"options.k_examine must lie in \[1, K - 1 = 3\]"),
    ({"judge": {"kind": "tiebreak"}}, "set judge=logit"),
    ({"options": {"K": 3, "option_bias": [1, 2]}}, "options.option_bias must be K=3 finite numbers"),
])
def test_bad_input_names_the_field(bad, match):
    cfg = {"extension": "options", "judge": {"kind": "logit"}}
    for k, v in bad.items():
        cfg[k] = {**cfg.get(k, {}), **v}
    with pytest.raises(ConfigError, match=match):
        to_ext_config(cfg)


def test_exact_path_refuses_large_K():
    with pytest.raises(ConfigError, match="use equilibrium.payoffs=simulated"):
        run({"K": 9})
    ds = run({"K": 9}, payoffs="simulated", n=100_000)
    assert 0 < float(ds.amp.sel(protocol="debate")) < 1


def test_multi_cell_kernel_gives_every_cell_its_own_sums(monkeypatch):
    """One pass of the random numbers for many cells (common random numbers) must give
    each cell the sums of its own pass to the last bit, whatever its neighbours and
    however the blocks are split."""
    from antiamp.models.options.config import OptionsConfig

    rng = np.random.default_rng(5)
    rows = []
    for k, (K, ant) in enumerate([(3, "assigned"), (4, "best_of_k"), (4, "attack"),
                                  (2, "assigned"), (4, "best_of_k"), (5, "best_of_k"),
                                  (4, "assigned")]):
        oc = OptionsConfig(K=K, antagonist=ant, k_examine=int(rng.integers(1, K)),
                           distractor_weight=float(rng.uniform(0, 1)),
                           distractor_bias=float(rng.uniform(-1, 1)),
                           near_miss_loss=float(rng.uniform(0, 1)),
                           q_true=float(rng.uniform(0.5, 1)))
        lam = 900.0 if k == 6 else float(rng.uniform(0.2, 3))  # the stable-logit fallback
        rows.append((float(rng.uniform(0.3, 1)), float(rng.uniform(0, 1)), lam,
                     float(rng.uniform(-1, 1)), float(rng.uniform(0, 3)), oc))
    n = 40_000  # 10 blocks
    own = [opm.simulate(*r, n, 3) for r in rows]
    monkeypatch.setattr(opm, "_CELL_BLOCK_BYTES", 3 * 2 * 12 * 2 * 8 * 4)  # few blocks a call
    for many in (opm.simulate_cells(rows, n, 3), opm.simulate_cells(rows[::-1], n, 3)[::-1]):
        for (a, ua), (b, ub) in zip(own, many):
            assert ua == ub
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("K", [2, 4, 7, 16])
def test_batched_kernel_counts_the_instance_by_instance_plays(monkeypatch, K):
    """The CPU launcher batches the words, counts each block's instances by their play
    and weights the per-cell tables of their terms by the counts; the sums must be
    those of playing every instance out in turn with the per-instance function the GPU
    runs and adding its terms in instance order (tests/reference_kernels.py): the
    counted rows to the integer, the others up to the rounding of the two orders of
    addition (a wrong play of one instance in 12,288 would move a sum by about 1e-4),
    for every antagonist, the stable-logit fallback (lam 900) and ties among the
    examined alternatives (no option bias)."""
    import reference_kernels
    from antiamp.kernels import options as ko
    from antiamp.models.options.config import OptionsConfig

    rng = np.random.default_rng(K)
    rows = []
    for k, ant in enumerate(["assigned", "best_of_k", "attack", "best_of_k", "assigned"]):
        oc = OptionsConfig(K=K, antagonist=ant, k_examine=int(rng.integers(1, K)),
                           distractor_weight=float(rng.uniform(0, 1)),
                           distractor_bias=float(rng.uniform(-1, 1)) if k != 3 else 0.0,
                           near_miss_loss=float(rng.uniform(0, 1)),
                           loss_tol=float(rng.uniform(0, 1)),
                           q_true=float(rng.uniform(0.5, 1)),
                           option_bias=None if k == 3 else rng.uniform(-1, 1, K).tolist())
        lam = 900.0 if k == 4 else float(rng.uniform(0.2, 3))
        rows.append((float(rng.uniform(0.3, 1)), float(rng.uniform(0, 1)), lam,
                     float(rng.uniform(-1, 1)), float(rng.uniform(0, 3)), oc))
    new = opm.simulate_cells(rows, 3 * ko.BLOCK, 4)
    monkeypatch.setattr(ko, "option_sums_cells", reference_kernels.option_sums_cells)
    old = opm.simulate_cells(rows, 3 * ko.BLOCK, 4)
    counted = np.zeros((2, ko.N_ACC), bool)
    counted[:, [1, 3, 7, 11]] = True
    counted[1, [8, 9]] = True
    for (a, ua), (b, ub) in zip(new, old):
        assert ua == ub
        np.testing.assert_array_equal(a[counted], b[counted])
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)


@pytest.mark.parametrize("K", [2, 3, 4, 9, 16])
def test_batched_antagonist_picks_the_per_instance_alternative(K):
    """The batched antagonist (integer products for the uniforms, the shuffle packed in
    one integer, the best by ranks option by option, or by the scores from a table
    where the scores have no ranks) against :func:`kernels.options._alternative`
    instance by instance on random words: the same alternative for every instance,
    every number of examined alternatives, with ties (equal scores), without, and with
    near-ties in a chain (no ranks: the scores' path)."""
    from antiamp.kernels import options as ko

    rng = np.random.default_rng(K)
    n = 4096
    n_words = 4 * ((7 + 2 * K + 3) // 4)
    W = rng.integers(0, 2 ** 32, (n_words, n), dtype=np.uint64).astype(np.uint32)
    # words at the extremes of the integer products' ranges
    W[:, :8] = np.uint32(2 ** 32 - 1)
    W[:, 8:16] = 0
    OM = rng.integers(0, K, n)
    A = rng.integers(0, K, n)
    MK = rng.integers(0, 2 ** K, n)
    Wf = np.ascontiguousarray(W).reshape(-1)
    for scores in ("distinct", "tied", "chain"):
        if scores == "tied":
            bias_j, bias_d, kappa = np.zeros((1, K)), np.array([0.0]), np.array([1.0])
        elif scores == "chain":  # each option within 1e-12 of the next, not of the one after
            bias_j, bias_d, kappa = 6e-13 * np.arange(K)[None, :], np.array([0.0]), np.array([0.0])
        else:
            bias_j, bias_d, kappa = rng.uniform(-1, 1, (1, K)), np.array([0.4]), np.array([1.3])
        SC = ko.score_table(K, bias_d, bias_j, kappa)
        RK = ko.score_ranks(K, bias_d, bias_j, kappa)
        assert (RK[0, 0, 0, 0] < 0) == (scores == "chain" and K > 2)
        for ant in (ko.ANT_ASSIGNED, ko.ANT_BEST):
            for k in sorted({1, max(1, (K - 1) // 2), K - 1}):
                AP = np.empty(n, np.int64)
                ko._alternatives(W, K, 0, OM, A, MK, ant, k, SC, RK, AP,
                                 np.empty(n, np.uint64), np.empty(n), np.empty(n, np.int64),
                                 np.empty((K, n), np.int64), np.empty((K, n)),
                                 np.empty(n, np.int64), np.empty(n, np.int64))
                cand = np.zeros(K, np.int64)
                want = [ko._alternative(Wf, j, n, K, 0, OM[j], A[j], MK[j], ant, k, bias_d[0],
                                        bias_j, kappa[0], cand) for j in range(n)]
                np.testing.assert_array_equal(AP, want, err_msg=f"ant {ant}, k {k}, {scores}")
                assert np.all(AP != A) and np.all((AP >= 0) & (AP < K))


def test_cells_split_into_groups_by_their_tables_keep_their_sums(monkeypatch):
    """Cells of one K share a pass in groups whose judge tables fit the budget; a cell's
    sums must not depend on the grouping (groups of 2 and 3 of 5 cells against one
    pass), and the kernel must be called once per group."""
    from antiamp.kernels import options as ko
    from antiamp.models.options.config import OptionsConfig

    rows = [(0.5 + 0.1 * k, 0.2 + 0.15 * k, 1.0 + 0.3 * k, 0.1 * k, 1.5,
             OptionsConfig(K=4, antagonist=("assigned", "best_of_k", "attack")[k % 3]))
            for k in range(5)]
    whole = opm.simulate_cells(rows, 2 * ko.BLOCK, 8)
    calls = []
    real = ko.option_sums_cells

    def spy(*a):
        calls.append(a[1].shape[0])
        return real(*a)

    monkeypatch.setattr(ko, "option_sums_cells", spy)
    for size in (2, 3):
        calls.clear()
        monkeypatch.setattr(opm, "_CELL_BLOCK_BYTES", size * ko.table_bytes(4) + 7)
        for (a, ua), (b, ub) in zip(whole, opm.simulate_cells(rows, 2 * ko.BLOCK, 8)):
            assert ua == ub
            np.testing.assert_array_equal(a, b)
        assert max(calls) == size and sum(calls) == 5
