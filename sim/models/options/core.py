"""Multi-option answers (seed 000, section 5).

K answers with a prior over the true one.  The protagonist is right with
probability p; otherwise it picks a wrong answer, the distractor d = omega + 1
(mod K) with extra weight ``distractor_weight`` and the others uniformly.  A
passing artifact exists for the true answer with probability ``q_true``, for the
distractor with ``distractor_rho`` and for any other wrong answer with rho
(model.rho); both senders draw on the same availability.  The antagonist rule:

* ``assigned``: it defends a competitor drawn uniformly from the other K - 1;
* ``best_of_k``: it examines ``k_examine`` alternatives and defends the most
  persuasive (highest judge score kappa V_j plus the judge's bias toward the
  distractor; ties at random) - not necessarily the most correct;
* ``attack``: it argues against a without defending an alternative; its case
  passes when a is wrong, and with probability rho when a is right.

The judge (logit judge's lam, mu, kappa) chooses among all K options,
Pr(y = j) proportional to exp(lam (mu [j = a] + distractor_bias [j = d] + mu_j +
kappa V_j - kappa X [j = a])), V_j the evidence shown for j, X the attack and mu_j
(``option_bias``) the judge's bias toward answer j by label.  With K = 2 this
is the seed's logit judge sigma(lam (mu + kappa (e_P - e_A))).

Metrics: the K-option Amp = Pr(y = a | a != omega); its loss version
Pr(y = a | L(a, omega) > loss_tol) with the loss matrix L(omega, omega) = 0,
L(d, omega) = near_miss_loss, 1 otherwise; accuracy; follow-when-correct; the
expected loss; and Pr(the antagonist defends a wrong alternative | a != omega).
Exact enumeration (K <= 6) and the compiled Monte Carlo kernel give the same
quantities.
"""

from __future__ import annotations

import itertools

import numpy as np

from ...config import ConfigError

EXACT_MAX_K = 6
METRICS = {
    "amp": ("mistake amplification", "Pr(y = a | a != omega)"),
    "amp_loss": ("amplification of suboptimal answers", "Pr(y = a | L(a, omega) > loss_tol)"),
    "acc": ("accuracy", "Pr(y = omega)"),
    "fwc": ("follow-when-correct", "Pr(y = a | a = omega)"),
    "endorse": ("endorsement rate", "Pr(y = a)"),
    "loss": ("expected loss", "E[L(y, omega)]"),
    "wrong_alternative": ("antagonist defends a wrong alternative",
                          "Pr(a' != omega | a != omega) (debate)"),
}


from .config import OptionsConfig  # noqa: E402,F401  (re-exported)


def validate_options(oc: OptionsConfig, judge, c_e: float) -> None:
    """What the declared ranges (config.py) cannot say."""
    if oc.prior is not None:
        try:
            pr = np.asarray(oc.prior, dtype=float)
        except (TypeError, ValueError):
            raise ConfigError("options.prior must be a list of K numbers") from None
        if pr.shape != (oc.K,):
            raise ConfigError(f"options.prior must have K={oc.K} entries, got shape {pr.shape}")
        if np.any(pr < 0) or not np.all(np.isfinite(pr)) or abs(pr.sum() - 1) > 1e-9:
            raise ConfigError(f"options.prior must be probabilities summing to 1, got {pr.tolist()}")
    if oc.option_bias is not None:
        try:
            ob = np.asarray(oc.option_bias, dtype=float)
        except (TypeError, ValueError):
            raise ConfigError("options.option_bias must be a list of K numbers") from None
        if ob.shape != (oc.K,) or not np.all(np.isfinite(ob)):
            raise ConfigError(f"options.option_bias must be K={oc.K} finite numbers, got "
                              f"{np.asarray(oc.option_bias).tolist()}")
    if oc.antagonist == "best_of_k" and oc.k_examine > oc.K - 1:
        raise ConfigError(f"options.k_examine must lie in [1, K - 1 = {oc.K - 1}], "
                          f"got {oc.k_examine!r}")
    if judge.kind != "logit":
        raise ConfigError("extension=options uses the logit judge's lam, mu, kappa; set judge=logit")
    if judge.jury_size != 1:
        raise ConfigError("extension=options takes one judge; leave judge.jury_size at 1")
    if c_e != 0:
        raise ConfigError("extension=options presents evidence when available; set model.c_e=0")


def _prior(oc):
    return np.full(oc.K, 1 / oc.K) if oc.prior is None else np.asarray(oc.prior, float)


def _option_bias(oc):
    return np.zeros(oc.K) if oc.option_bias is None else np.asarray(oc.option_bias, float)


def _wrong_probs(oc):
    """Pr(wrong pick = omega + offset), offsets 1..K-1 (offset 1 is the distractor)."""
    K = oc.K
    w = np.full(K - 1, (1 - oc.distractor_weight) / (K - 1))
    w[0] += oc.distractor_weight
    return w


def _avail(oc, rho):
    return (oc.q_true, rho if oc.distractor_rho is None else oc.distractor_rho, rho)


# ------------------------------------------------------------------ exact enumeration
def _judge(K, a, d, v, attack, lam, mu, bias_d, kappa, bias_j):
    s = np.array([kappa * v[j] + (mu - kappa * attack if j == a else 0.0)
                  + (bias_d if j == d else 0.0) + bias_j[j] for j in range(K)])
    e = np.exp(lam * (s - s.max()))
    return e / e.sum()


def exact(p, rho, lam, mu, kappa, oc: OptionsConfig) -> dict:
    """Expectations of the accumulator rows (per protocol), by enumerating omega, a,
    the availability vector, the attack evidence and the antagonist's choice."""
    K = oc.K
    if K > EXACT_MAX_K:
        raise ConfigError(f"exact enumeration of options handles K <= {EXACT_MAX_K} (got "
                          f"{K}); use equilibrium.payoffs=simulated")
    prior, wrong = _prior(oc), _wrong_probs(oc)
    thr = _avail(oc, rho)
    bias_j = _option_bias(oc)
    rows = np.zeros((2, 12))
    for om in range(K):
        d = (om + 1) % K
        roles = [0 if j == om else (1 if j == d else 2) for j in range(K)]
        picks = [(om, p)] + [((om + off) % K, (1 - p) * wrong[off - 1]) for off in range(1, K)]
        for a, pa_pr in picks:
            if pa_pr == 0 or prior[om] == 0:
                continue
            corr = a == om
            loss_a = 0.0 if corr else (oc.near_miss_loss if a == d else 1.0)
            for v in itertools.product((0, 1), repeat=K):
                pv = np.prod([thr[roles[j]] if v[j] else 1 - thr[roles[j]] for j in range(K)])
                if pv == 0:
                    continue
                for x_att, px in (((1, 1.0),) if not corr else ((1, rho), (0, 1 - rho))):
                    if px == 0:
                        continue
                    for ap, pap in _antagonist_choices(K, a, d, v, oc, kappa, bias_j):
                        w = prior[om] * pa_pr * pv * px * pap
                        for prot in (0, 1):
                            vv = np.zeros(K)
                            vv[a] = v[a]
                            attack = 0.0
                            if prot == 1:
                                if oc.antagonist == "attack":
                                    attack = x_att
                                else:
                                    vv[ap] = v[ap]
                            pr = _judge(K, a, d, vv, attack, lam, mu, oc.distractor_bias, kappa,
                                        bias_j)
                            exp_loss = sum(pr[j] * (oc.near_miss_loss if j == d else 1.0)
                                           for j in range(K) if j != om)
                            wrong_alt = prot == 1 and ap >= 0 and ap != om
                            vals = (pr[a] * (not corr), not corr, pr[a] * corr, corr, pr[om],
                                    exp_loss, pr[a] * (loss_a > oc.loss_tol),
                                    loss_a > oc.loss_tol, wrong_alt and not corr, wrong_alt,
                                    pr[a], 1.0)
                            rows[prot] += w * np.asarray(vals, dtype=float)
    return {"rows": rows}


def _antagonist_choices(K, a, d, v, oc, kappa, bias_j):
    """[(alternative, probability)] of the antagonist's alternative (-1: none)."""
    if oc.antagonist == "attack":
        return [(-1, 1.0)]
    others = [j for j in range(K) if j != a]
    if oc.antagonist == "assigned":
        return [(j, 1 / (K - 1)) for j in others]
    out: dict = {}
    subsets = list(itertools.combinations(others, oc.k_examine))
    for sub in subsets:
        scores = [kappa * v[j] + (oc.distractor_bias if j == d else 0.0) + bias_j[j] for j in sub]
        best = max(scores)
        tops = [j for j, s in zip(sub, scores) if abs(s - best) <= 1e-12]
        for j in tops:
            out[j] = out.get(j, 0.0) + 1 / (len(subsets) * len(tops))
    return list(out.items())


# ------------------------------------------------------------------ simulation
def simulate(p, rho, lam, mu, kappa, oc: OptionsConfig, n, seed, n_threads=0):
    """Kernel sums [2, 12, 2] (protocol, row, [sum, sum of squares]) of one cell and the
    instances used (whole blocks)."""
    return simulate_cells([(p, rho, lam, mu, kappa, oc)], n, seed, n_threads)[0]


#: Blocks per multi-cell kernel call: its per-block partial sums stay within about 64 MB.
_CELL_BLOCK_BYTES = 64 << 20


def simulate_cells(rows: list, n, seed, n_threads=0, device="cpu") -> list:
    """:func:`simulate` of many cells, ``rows`` of (p, rho, lam, mu, kappa,
    OptionsConfig), in one pass of the random numbers per number of options K (per
    group of cells whose tables of the judge's terms fit in 64 MB;
    :func:`kernels.options.option_sums_cells`): each cell's sums are those of a pass of
    its own to the last bit (the same words, each block's plays counted and weighted
    in the same order), whatever cells share the call.  ``device``: ``run.device``; on the GPU the counts
    are the same and the sums agree to about 1e-15 relative
    (:mod:`kernels.gpu.options`), the same bits run to run."""
    from antiamp.kernels import options as ko
    from antiamp.kernels.rng import bernoulli_threshold, split_seed

    from ...runner import block_ranges, device_of, numba_threads

    kernel = ko.option_sums_cells
    if device_of(device) == "cuda":
        from antiamp.kernels.gpu import options as ko_gpu

        kernel = ko_gpu.option_sums_cells
    ant = {"assigned": ko.ANT_ASSIGNED, "best_of_k": ko.ANT_BEST, "attack": ko.ANT_ATTACK}
    k0, k1 = split_seed(seed)
    n_blocks = max(1, -(-n // ko.BLOCK))
    by_k: dict = {}
    for i, row in enumerate(rows):
        by_k.setdefault(row[-1].K, []).append(i)
    out: list = [None] * len(rows)
    # Cells of one K share a pass, in groups whose judge tables stay within the budget
    # (each cell's sums are its own pass's whatever its group).
    groups = []
    for K, idx in by_k.items():
        size = max(1, _CELL_BLOCK_BYTES // ko.table_bytes(K))
        groups += [(K, idx[g:g + size]) for g in range(0, len(idx), size)]
    for K, idx in groups:
        cols = {k: [] for k in ("prior", "t_p", "wrong", "avail", "t_att", "ant", "k_ex", "lam",
                                "mu", "b_d", "b_j", "kappa", "near", "tol")}
        for i in idx:
            p, rho, lam, mu, kappa, oc = rows[i]
            cols["prior"].append([bernoulli_threshold(min(1.0, x))
                                  for x in np.cumsum(_prior(oc))])
            cols["wrong"].append([bernoulli_threshold(min(1.0, x))
                                  for x in np.cumsum(_wrong_probs(oc))])
            cols["avail"].append([bernoulli_threshold(x) for x in _avail(oc, rho)])
            cols["t_p"].append(bernoulli_threshold(p))
            cols["t_att"].append(bernoulli_threshold(rho))
            cols["ant"].append(ant[oc.antagonist])
            cols["k_ex"].append(oc.k_examine)
            cols["b_j"].append(_option_bias(oc))
            for k, v in (("lam", lam), ("mu", mu), ("b_d", oc.distractor_bias),
                         ("kappa", kappa), ("near", oc.near_miss_loss), ("tol", oc.loss_tol)):
                cols[k].append(float(v))
        u64 = {k: np.array(cols[k], np.uint64).reshape(len(idx), -1)
               for k in ("prior", "wrong", "avail")}
        sums = np.zeros((len(idx), 2, ko.N_ACC, 2))
        with numba_threads(n_threads):
            for first, count in block_ranges(n_blocks, len(idx) * 2 * ko.N_ACC * 2 * 8,
                                             _CELL_BLOCK_BYTES):
                kernel(
                    K, u64["prior"], np.array(cols["t_p"], np.uint64), u64["wrong"],
                    u64["avail"], np.array(cols["t_att"], np.uint64),
                    np.array(cols["ant"], np.int64), np.array(cols["k_ex"], np.int64),
                    *(np.array(cols[k]) for k in ("lam", "mu", "b_d")),
                    np.array(cols["b_j"], float).reshape(len(idx), K),
                    *(np.array(cols[k]) for k in ("kappa", "near", "tol")),
                    first, count, k0, k1, np.uint64(ko.STREAM), sums)
        for r, i in enumerate(idx):
            out[i] = (sums[r], n_blocks * ko.BLOCK)
    return out


def metrics_from_rows(rows, sq=None, n=None) -> dict:
    """{name: (value [..., 2], se [..., 2])}; ``rows`` [..., 2, 12] expectations (exact)
    or sums, with ``sq`` sums of squares and ``n`` instances (simulated); leading axes
    are cells (a block's metrics at once, elementwise: the same bits as cell by cell)."""
    from ...metrics import means_from_sums

    rows = np.asarray(rows, dtype=float)
    nan = np.full(rows.shape[:-1], np.nan)

    def ratio(num, den):
        if sq is None:
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(rows[..., den] > 0, rows[..., num] / rows[..., den], np.nan), nan
        m, s = means_from_sums(rows[..., num], rows[..., den], sq[..., num])
        live = rows[..., den] > 0
        return np.where(live, m, np.nan), np.where(live, s, np.nan)

    def mean(num):
        if sq is None:
            with np.errstate(invalid="ignore", divide="ignore"):
                return rows[..., num] / rows[..., 11], nan
        return means_from_sums(rows[..., num], rows[..., 11], sq[..., num])

    out = {"amp": ratio(0, 1), "fwc": ratio(2, 3), "acc": mean(4), "loss": mean(5),
           "amp_loss": ratio(6, 7), "endorse": mean(10)}
    wa, wa_se = (x.copy() for x in ratio(8, 1))
    wa[..., 0], wa_se[..., 0] = np.nan, np.nan  # defined in debate only
    out["wrong_alternative"] = (wa, wa_se)
    return {k: (np.array(v), np.array(s)) for k, (v, s) in out.items()}
