"""Richer message spaces (seed 000, section 5): verifiable evidence and rhetoric.

Each sender's message is m_i = (v_i, r_i): v_i = e_i, the baseline's verifiable
evidence indicator, and r_i an unverified rhetorical score.  The judge is the
seed's

    Pr(y = a | m_P, m_A) = sigma(lam (mu + kappa_v (v_P - v_A) + kappa_r (r_P - r_A)))

(consultancy: sigma(lam (mu + kappa_v v_P + kappa_r r_P))), with lam and mu from
the logit judge.

``mode=exogenous``: rhetoric is drawn, r_i ~ N(r_mean_true, r_sd) when the stance
argued is true and N(r_mean_false, r_sd) when false, and evidence is presented
when feasible (model.c_e = 0).  The seed's monotonicity conditions are (i) v
first-order dominant under truth (here by construction) and (ii) r independent of
truth (r_mean_true = r_mean_false); sweeps over r_mean_false - r_mean_true show
what happens to Amp when (ii) fails.  Exact path: adaptive quadrature (QUADPACK)
over r_P - r_A (normal), with its error bound; simulated path: the compiled kernel, which draws rhetoric per
instance (Rao-Blackwellised over the judge's coin only).

``mode=strategic``: each sender chooses its rhetoric from ``r_levels`` values in
[0, r_max] at cost c_r r (overconfident claims, "debate hacking"), and whether to
present available evidence at c_e.  Knowing only its availability t_i, it mixes
over (present?, r); the debate game is strategically zero-sum (costs are each
sender's own), so its equilibria come from the linear programmes of
:mod:`sim.portfolios`, with certificates.
"""

from __future__ import annotations


import numpy as np
from ...lazy import lazy
special = lazy("scipy.special")

from ...config import ConfigError
from ...metrics import means_from_sums



from .config import MessagesConfig  # noqa: E402,F401  (re-exported)


def validate_messages(mc: MessagesConfig, judge, c_e: float) -> None:
    """What the declared ranges (config.py) cannot say."""
    if judge.kind != "logit":
        raise ConfigError("extension=messages uses the logit judge's lam and mu; set judge=logit")
    if judge.jury_size != 1:
        raise ConfigError("extension=messages takes one judge; leave judge.jury_size at 1")
    if mc.decision == "favoured" and mc.mode != "exogenous":
        raise ConfigError("messages.decision=favoured applies to messages.mode=exogenous "
                          "(the strategic game is solved for the seed's sampling judge)")
    if mc.decision != "favoured" and (mc.decision_band != 0 or mc.decision_tie != 0.5):
        raise ConfigError("messages.decision_band and decision_tie apply to "
                          "messages.decision=favoured")
    if mc.mode == "exogenous" and c_e != 0:
        raise ConfigError("messages.mode=exogenous presents evidence when feasible; set "
                          "model.c_e=0 (costly evidence: messages.mode=strategic)")


# ------------------------------------------------------------------ class weights
def type_weights(p: float, rho: float) -> np.ndarray:
    """Pr(correct, t_P, t_A) as [2, 2, 2]."""
    w = np.zeros((2, 2, 2))
    w[1, 1, 1], w[1, 1, 0] = p * rho, p * (1 - rho)
    w[0, 1, 1], w[0, 0, 1] = (1 - p) * rho, (1 - p) * (1 - rho)
    return w


#: The normal mass beyond |z| = 38.5 is below 1e-320: the integrals stop there.
_Z_MAX = 38.5
#: Absolute error asked of each integral (QUADPACK's estimate is reported).
QUAD_EPSABS = 1e-13


def expect_step(lam, base, kappa, mean, var, band=0.0, tie=0.5) -> tuple[float, float]:
    """E[step(lam (base + kappa X))], X ~ N(mean, var), where step(x) = 1 above
    ``band``, 0 below -band and ``tie`` in between: the judge who labels the answer
    its probability favours (a recorded probability rounds to 1/2 in the band).
    Closed form Phi((a - band) / s) + tie (Phi((a + band) / s) - Phi((a - band) / s)),
    error 0."""
    a = lam * (base + kappa * mean)
    s = lam * kappa * np.sqrt(var)
    if s == 0:
        return (1.0 if a > band else 0.0 if a < -band else tie), 0.0
    above, above_low = special.ndtr((a - band) / s), special.ndtr((a + band) / s)
    return float(above + tie * (above_low - above)), 0.0


def expect_sigmoid(lam, base, kappa, mean, var) -> tuple[float, float]:
    """E[sigma(lam (base + kappa X))], X ~ N(mean, var), and a bound on its error.

    With a = lam (base + kappa mean) and s = lam kappa sd(X) this is the
    logistic-normal integral E[sigma(a + s Z)].  Gauss-Hermite converges slowly
    when s is large (the logistic's poles at i pi (2k + 1) / s approach the real
    axis), so this is adaptive Gauss-Kronrod quadrature (scipy.integrate.quad)
    over z in [-38.5, 38.5], split at 0 and at the logistic's centre -a/s where
    it is steep: accurate to about 1e-15 for any steepness (tests compare with
    30-digit integration up to lam kappa = 50), with QUADPACK's error estimate.
    """
    from scipy import integrate

    a = lam * (base + kappa * mean)
    s = lam * kappa * np.sqrt(var)
    if s == 0:
        return float(special.expit(a)), 0.0
    pts = [0.0] + ([-a / s] if abs(a / s) < _Z_MAX else [])
    expit, exp = special.expit, np.exp  # bound once: the integrand runs ~500 times a call
    val, err = integrate.quad(lambda z: expit(a + s * z) * exp(-0.5 * z * z),
                              -_Z_MAX, _Z_MAX, points=pts, epsabs=QUAD_EPSABS * 2.5066,
                              epsrel=1e-12, limit=400)
    c = 1.0 / np.sqrt(2.0 * np.pi)
    return float(val * c), float(err * c)


def exogenous_exact(p, rho, lam, mu, mc: MessagesConfig, errors: list | None = None):
    """Class probabilities [8] and conditional endorsements (debate, consult) [8]
    (class = 4 correct + 2 e_P + e_A), by quadrature; each integral's error bound
    is appended to ``errors`` if given."""
    w = type_weights(p, rho).reshape(-1)
    gd, gc = np.zeros(8), np.zeros(8)
    errs = []
    if mc.decision == "favoured":
        def expect(*a):
            return expect_step(*a, band=mc.decision_band, tie=mc.decision_tie)
    else:
        expect = expect_sigmoid
    for corr in (0, 1):
        mP = mc.r_mean_true if corr else mc.r_mean_false
        mA = mc.r_mean_false if corr else mc.r_mean_true
        for ep in (0, 1):
            for ea in (0, 1):
                k = 4 * corr + 2 * ep + ea
                gd[k], e1 = expect(lam, mu + mc.kappa_v * (ep - ea), mc.kappa_r,
                                           mP - mA, 2 * mc.r_sd ** 2)
                gc[k], e2 = expect(lam, mu + mc.kappa_v * ep, mc.kappa_r, mP,
                                           mc.r_sd ** 2)
                errs += [e1, e2]
    if errors is not None:
        errors.extend(errs)
    return w, gd, gc


def exogenous_simulated(p, rho, lam, mu, mc: MessagesConfig, n, seed, n_threads=0):
    """Kernel sums: counts [8], sums [4, 8] and the instances used (whole blocks)."""
    return exogenous_simulated_cells([(p, rho, lam, mu, mc)], n, seed, n_threads)[0]


#: Blocks per multi-cell kernel call: its per-block partial sums (blocks x cells x 40
#: numbers) stay within about 64 MB.
_CELL_BLOCK_BYTES = 64 << 20


def exogenous_simulated_cells(rows: list, n, seed, n_threads=0, device="cpu") -> list:
    """:func:`exogenous_simulated` of many cells, ``rows`` of (p, rho, lam, mu,
    MessagesConfig), in one pass of the random numbers
    (:func:`kernels.messages.message_sums_cells`): each cell's counts and sums are those
    of a pass of its own to the last bit (the same words, the same terms added in the
    same order), whatever cells share the call.  ``device``: ``run.device``; on the GPU
    the counts are the same and the sums agree to about 1e-15 relative
    (:mod:`kernels.gpu.messages`), the same bits run to run."""
    from antiamp.kernels import messages as km
    from antiamp.kernels.rng import bernoulli_threshold, split_seed

    from ...runner import block_ranges, device_of, numba_threads

    if not rows:
        return []
    C = len(rows)
    k0, k1 = split_seed(seed)
    n_blocks = max(1, -(-n // km.BLOCK))
    col = [np.array(v) for v in zip(*[
        (bernoulli_threshold(p), bernoulli_threshold(rho), float(lam), float(mu),
         float(mc.kappa_v), float(mc.kappa_r), float(mc.r_mean_true), float(mc.r_mean_false),
         float(mc.r_sd), mc.decision == "favoured", float(mc.decision_band),
         float(mc.decision_tie)) for p, rho, lam, mu, mc in rows])]
    col[0], col[1] = col[0].astype(np.uint64), col[1].astype(np.uint64)
    cnt = np.zeros((C, km.N_CLASSES), np.int64)
    sums = np.zeros((C, 4, km.N_CLASSES))
    if device_of(device) == "cuda":
        from antiamp.kernels.gpu import messages as km_gpu

        for first, count in block_ranges(n_blocks, C * 5 * km.N_CLASSES * 8,
                                         _CELL_BLOCK_BYTES):
            km_gpu.message_sums_cells(*col, first, count, k0, k1, np.uint64(km.STREAM), cnt,
                                      sums)
        return [(cnt[c], sums[c], n_blocks * km.BLOCK) for c in range(C)]
    with numba_threads(n_threads):
        for first, count in block_ranges(n_blocks, C * 5 * km.N_CLASSES * 8,
                                         _CELL_BLOCK_BYTES):
            km.message_sums_cells(*col, first, count, k0, k1, np.uint64(km.STREAM), cnt, sums)
    return [(cnt[c], sums[c], n_blocks * km.BLOCK) for c in range(C)]


def exogenous_outcomes(w_or_cnt, gd_sum, gd_sq, gc_sum, gc_sq, welfare=(1.0, 1.0, 0.0)):
    """{name: (value [..., 2], se [..., 2])} from per-class counts and sums [..., 8]
    (exact: weights and per-class expectations, sums = weight * expectation, squares
    unused -> se NaN).  Leading axes are cells, with ``welfare`` (alpha, beta,
    delta_c) scalars or a value per cell: a block's outcomes at once, each element by
    the same operations as cell by cell (sums over the class axis, contiguous)."""
    k = np.arange(8)
    right = (k >> 2) & 1 == 1
    ep, ea = (k >> 1) & 1, k & 1
    N = np.asarray(w_or_cnt, dtype=float)
    lead = N.shape[:-1]
    alpha, beta, delta_c = (np.broadcast_to(np.asarray(x, dtype=float), lead)
                            for x in welfare)
    # squares as the scalar code took them (Python's float power), element by element
    sq = [np.array([v ** 2 for v in x.ravel().tolist()]).reshape(lead)
          for x in (alpha, delta_c)]
    alpha_sq, dc_sq = sq
    a_b = alpha + beta
    a_b_sq = np.array([v ** 2 for v in a_b.ravel().tolist()]).reshape(lead)

    def tot(x, mask=None):
        x = np.asarray(x, dtype=float)
        return np.ascontiguousarray(x if mask is None else x[..., mask]).sum(axis=-1)

    out = {}
    for p, (s1, s2) in enumerate(((gc_sum, gc_sq), (gd_sum, gd_sq))):
        amp = means_from_sums(tot(s1, ~right), tot(N, ~right), tot(s2, ~right))
        fwc = means_from_sums(tot(s1, right), tot(N, right), tot(s2, right))
        endorse = means_from_sums(tot(s1), tot(N), tot(s2))
        # Accuracy and welfare are means over every instance of per-instance values
        # (v = g when the protagonist is right, 1 - g when wrong; u = -alpha (1 - v)
        # - beta [wrong] g - delta_c), so their standard errors come from the sums of
        # v and u and of their squares over all instances: the spread between right
        # and wrong instances included, not only the spread within each.
        Nr, Nw = tot(N, right), tot(N, ~right)
        s1r, s1w, s2r, s2w = tot(s1, right), tot(s1, ~right), tot(s2, right), tot(s2, ~right)
        acc = means_from_sums(s1r + (Nw - s1w), Nr + Nw, s2r + (Nw - 2 * s1w + s2w))
        dc = delta_c if p == 1 else np.zeros(lead)
        dc2 = dc_sq if p == 1 else np.zeros(lead)
        u_sum = -alpha * (Nr - s1r) - a_b * s1w - dc * (Nr + Nw)
        u_sq = (alpha_sq * (Nr - 2 * s1r + s2r) + 2 * alpha * dc * (Nr - s1r) + dc2 * Nr
                + a_b_sq * s2w + 2 * a_b * dc * s1w + dc2 * Nw)
        wel = means_from_sums(u_sum, Nr + Nw, u_sq)
        e_P = (ep if p == 1 else ep)  # consultancy presents the same evidence
        tie_n = tot(N * (e_P == (ea if p == 1 else 0)))
        tie = means_from_sums(tie_n, tot(N), tie_n)  # a 0/1 value: its square is itself
        for name, v in (("amp", amp), ("fwc", fwc), ("endorse", endorse), ("acc", acc),
                        ("tie_rate", tie), ("welfare", wel)):
            out.setdefault(name, (np.full(lead + (2,), np.nan), np.full(lead + (2,), np.nan)))
            out[name][0][..., p], out[name][1][..., p] = v
    return out


# ------------------------------------------------------------------ strategic rhetoric
def levels(mc: MessagesConfig) -> np.ndarray:
    return np.linspace(0.0, mc.r_max, mc.r_levels) if mc.r_levels > 1 else np.zeros(1)


def strategic_tables(lam, mu, mc: MessagesConfig):
    """Action a = e * L + j (present?, rhetoric level j): J_d[a_P, a_A], J_c[a_P]."""
    r = levels(mc)
    L = len(r)
    e = np.repeat([0, 1], L)
    rr = np.tile(r, 2)
    Jd = special.expit(lam * (mu + mc.kappa_v * (e[:, None] - e[None, :])
                              + mc.kappa_r * (rr[:, None] - rr[None, :])))
    Jc = special.expit(lam * (mu + mc.kappa_v * e + mc.kappa_r * rr))
    return Jc, Jd, e, rr


def strategic_equilibrium(p, rho, lam, mu, c_e, mc: MessagesConfig):
    """(sigma_c [2, A], sigma_P [2, A], sigma_A [2, A], values, epsilons) by type t."""
    from ...games import zero_sum_lp

    Jc, Jd, e, rr = strategic_tables(lam, mu, mc)
    A = len(e)
    cost = c_e * e + mc.c_r * rr
    allowed = np.stack([e == 0, np.ones(A, bool)])  # t = 0 cannot present
    W = type_weights(p, rho).sum(axis=0)  # [t_P, t_A]
    U = Jd - cost[:, None] + cost[None, :]
    size = e * 1000.0 + rr  # selection on the optimal face: present, then more rhetoric
    sig_P, vP = zero_sum_lp(W, U, allowed, allowed, size)
    sig_A, vA = zero_sum_lp(W.T, -U.T, allowed, allowed, size)
    uc = Jc - cost
    sig_c = np.zeros((2, A))
    for t in (0, 1):
        ok = np.flatnonzero(allowed[t])
        best = ok[np.isclose(uc[ok], uc[ok].max(), atol=1e-12)]
        sig_c[t, best[np.argmax(size[best])]] = 1.0
    eps_d = _regret(W, sig_P, sig_A, Jd, cost, allowed)
    wt = W.sum(1)
    eps_c = max(float(uc[allowed[t]].max() - sig_c[t] @ uc) for t in (0, 1) if wt[t] > 0)
    return sig_c, sig_P, sig_A, (vP, -vA), (eps_c, eps_d), (Jc, Jd, e, rr)


def _regret(W, sig_P, sig_A, Jd, cost, allowed):
    eps = 0.0
    wr, wc = W.sum(1), W.sum(0)
    for t in (0, 1):
        if wr[t] > 0:
            pA = (W[t][:, None] * sig_A).sum(0) / wr[t]
            u = Jd @ pA - cost
            eps = max(eps, u[allowed[t]].max() - sig_P[t] @ u)
        if wc[t] > 0:
            pP = (W[:, t][:, None] * sig_P).sum(0) / wc[t]
            u = (1 - Jd).T @ pP - cost
            eps = max(eps, u[allowed[t]].max() - sig_A[t] @ u)
    return float(eps)


def strategic_outcomes(p, rho, sig_c, sig_P, sig_A, Jc, Jd, e, rr, welfare=(1.0, 1.0, 0.0)):
    w = type_weights(p, rho)
    alpha, beta, delta_c = welfare
    out = {}
    for prot in (0, 1):
        num_w = den_w = num_r = den_r = end = 0.0
        rhet = 0.0
        for corr in (0, 1):
            for tP in (0, 1):
                for tA in (0, 1):
                    wt = w[corr, tP, tA]
                    if wt == 0:
                        continue
                    if prot == 0:
                        g = sig_c[tP] @ Jc
                        rh = sig_c[tP] @ rr
                    else:
                        g = sig_P[tP] @ Jd @ sig_A[tA]
                        rh = sig_P[tP] @ rr
                    end += wt * g
                    rhet += wt * rh
                    if corr:
                        num_r += wt * g
                        den_r += wt
                    else:
                        num_w += wt * g
                        den_w += wt
        amp, fwc = num_w / den_w, num_r / den_r
        acc = num_r + (den_w - num_w)
        wel = -alpha * (1 - acc) - beta * num_w - (delta_c if prot == 1 else 0.0)
        for name, v in (("amp", amp), ("fwc", fwc), ("acc", acc), ("endorse", end),
                        ("rhetoric_P", rhet), ("welfare", wel)):
            out.setdefault(name, (np.full(2, np.nan), np.full(2, np.nan)))
            out[name][0][prot] = v
    return out
