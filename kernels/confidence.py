"""Judges that weigh stated confidence (seed 004 inside seed 000): the Monte Carlo kernel.

One instance draws, from Philox stream ``STREAM``, counters (i, c, 0, STREAM) for
c = 0..3 (16 words): five standard normals (Box-Muller on the word pairs (0, 1),
(4, 5), (8, 9)) and four uniforms (words 12-15):

* n0, n1: the outcome index beta + sqrt(info) n0 + sqrt(1 - info) n1 (the
  protagonist is right iff it is positive); the debaters' closing belief that the
  protagonist is right is B = Phi((beta + sqrt(info) n0) / sqrt(1 - info));
* n2: the debate's shared report component; n3, n4: each side's own terms;
* u12: the false side's evidence (passes with rho), the same draw in consultancy
  and debate (common random numbers); u13: whether the debate is an anchoring one
  (for each side's condition); u14, u15: anchoring of each side's report.

Consultancy and debate are judged on the same instance.  The judge's (or jury's)
endorsement probability is computed, not drawn (Rao-Blackwellised): a single
judge's q = sigma(lam (mu + kappa (e_P - e_A) + kappa_c (L_P - L_A))); a jury of n
with latent correlation icc integrates its shared latent by Gauss-Hermite and its
votes exactly (binomial tail).  Sums are kept per block of ``BLOCK`` instances and
added in order: the result does not depend on the thread count.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from .interrupt import stopped
from .rng import HI_SHIFT as _HI, INV32 as _INV32, LO_WORD as _LO, normal_cdf as _phi  # the shared word masks and normal CDF
from .rng import philox4x32_10

STREAM = 7
BLOCK = 4096
#: Accumulators per protocol: wrong (count, sum q, sum q^2), right (count, sum q,
#: sum q^2), accuracy (sum, sum of squares); the paired Amp contrast (sum and sum
#: of squares of qc - qd over wrong instances) is returned beside them.
N_ACC = 8


@nb.njit(cache=True)
def ndtri(p):
    """Phi^-1(p): Acklam's rational approximation refined by one Halley step (about
    1e-15 relative); numba has no inverse normal CDF."""
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    a0, a1, a2, a3, a4, a5 = (-3.969683028665376e+01, 2.209460984245205e+02,
                              -2.759285104469687e+02, 1.383577518672690e+02,
                              -3.066479806614716e+01, 2.506628277459239e+00)
    b0, b1, b2, b3, b4 = (-5.447609879822406e+01, 1.615858368580409e+02,
                          -1.556989798598866e+02, 6.680131188771972e+01,
                          -1.328068155288572e+01)
    c0, c1, c2, c3, c4, c5 = (-7.784894002430293e-03, -3.223964580411365e-01,
                              -2.400758277161838e+00, -2.549732539343734e+00,
                              4.374664141464968e+00, 2.938163982698783e+00)
    d0, d1, d2, d3 = (7.784695709041462e-03, 3.224671290700398e-01,
                      2.445134137142996e+00, 3.754408661907416e+00)
    if p < 0.02425:
        q = math.sqrt(-2.0 * math.log(p))
        x = (((((c0 * q + c1) * q + c2) * q + c3) * q + c4) * q + c5) / \
            ((((d0 * q + d1) * q + d2) * q + d3) * q + 1.0)
    elif p > 1.0 - 0.02425:
        q = math.sqrt(-2.0 * math.log1p(-p))
        x = -(((((c0 * q + c1) * q + c2) * q + c3) * q + c4) * q + c5) / \
            ((((d0 * q + d1) * q + d2) * q + d3) * q + 1.0)
    else:
        q = p - 0.5
        r = q * q
        x = (((((a0 * r + a1) * r + a2) * r + a3) * r + a4) * r + a5) * q / \
            (((((b0 * r + b1) * r + b2) * r + b3) * r + b4) * r + 1.0)
    # Halley refinement on Phi(x) - p.
    e = _phi(x) - p
    u = e * math.sqrt(2.0 * math.pi) * math.exp(0.5 * x * x)
    return x - u / (1.0 + 0.5 * x * u)


@nb.njit(cache=True)
def _majority(q, n, tie, lbin):
    """Pr(more than n/2 of n independent votes, each w.p. q; an even split endorses
    w.p. tie).  ``lbin[k]`` = log C(n, k), computed once per call of the kernel."""
    if q <= 0.0:
        return 0.0
    if q >= 1.0:
        return 1.0
    lq, l1q = math.log(q), math.log1p(-q)
    out = 0.0
    for k in range(n // 2 + 1, n + 1):
        out += math.exp(lbin[k] + k * lq + (n - k) * l1q)
    if n % 2 == 0:
        h = n // 2
        out += tie * math.exp(lbin[h] + h * (lq + l1q))
    return out


@nb.njit(cache=True)
def jury_prob(q, n, icc, tie, gx, gw, lbin):
    """Pr(a jury of ``n`` endorses) when one judge endorses with probability ``q``:
    a majority (ties broken with probability ``tie``), judges independent (``icc`` 0)
    or sharing a normal latent of intra-class correlation ``icc`` (Gauss-Hermite
    nodes ``gx``, weights ``gw``); ``lbin`` is :func:`log_binom_row` of ``n``."""
    if n == 1:
        return q
    if icc == 0.0:
        return _majority(q, n, tie, lbin)
    zq = ndtri(q)
    a, e = math.sqrt(icc), math.sqrt(1.0 - icc)
    out = 0.0
    for k in range(gx.shape[0]):
        out += gw[k] * _majority(_phi((zq - a * gx[k]) / e), n, tie, lbin)
    return out


#: A jury with a shared latent (icc > 0) costs a quadrature over the latent per
#: endorsement probability: hundreds of normal CDFs an instance.  Its endorsement as
#: a function of the single judge's logit argument s (q = sigma(s)) is smooth on the
#: scale of one logit unit, so big calls tabulate it on [-S_MAX, S_MAX] with step
#: S_STEP and interpolate (four-point Lagrange: error below 1e-9, tested against the
#: quadrature itself); outside the table, and in small calls, the quadrature runs.
S_MAX = 40.0
S_STEP = 0.01
TABLE_SIZE = int(round(2 * S_MAX / S_STEP)) + 1


@nb.njit(cache=True)
def log_binom_row(n):
    """log C(n, k) for k = 0..n."""
    lbin = np.empty(n + 1)
    for k in range(n + 1):
        lbin[k] = math.lgamma(n + 1.0) - math.lgamma(k + 1.0) - math.lgamma(n - k + 1.0)
    return lbin


@nb.njit(parallel=True, cache=True)
def jury_table(n, icc, tie, gx, gw):
    """The jury's endorsement at s = -S_MAX + i S_STEP, i < TABLE_SIZE (q = sigma(s))."""
    lbin = log_binom_row(n)
    out = np.empty(TABLE_SIZE)
    for i in nb.prange(TABLE_SIZE):
        s = -S_MAX + i * S_STEP
        out[i] = jury_prob(1.0 / (1.0 + math.exp(-s)), n, icc, tie, gx, gw, lbin)
    return out


@nb.njit(cache=True)
def jury_at(s, n, icc, tie, gx, gw, lbin, table):
    """The jury's endorsement at logit argument s: from ``table`` (empty: none) where
    it covers s, else by the quadrature."""
    m = table.shape[0]
    if m > 0:
        t = (s + S_MAX) / S_STEP
        if t >= 1.0 and t < m - 3.0:
            i = int(t)
            f = t - i
            return (-f * (f - 1.0) * (f - 2.0) / 6.0 * table[i - 1]
                    + (f + 1.0) * (f - 1.0) * (f - 2.0) / 2.0 * table[i]
                    - (f + 1.0) * f * (f - 2.0) / 2.0 * table[i + 1]
                    + (f + 1.0) * f * (f - 1.0) / 6.0 * table[i + 2])
    return jury_prob(1.0 / (1.0 + math.exp(-s)), n, icc, tie, gx, gw, lbin)


@nb.njit(cache=True)
def jury_at_many(s, n, icc, tie, gx, gw, table):
    """:func:`jury_at` of every element of the 1-d array ``s``."""
    lbin = log_binom_row(n)
    out = np.empty(s.shape[0])
    for i in range(s.shape[0]):
        out[i] = jury_at(s[i], n, icc, tie, gx, gw, lbin, table)
    return out


@nb.njit(inline="always", cache=True)
def _logit_report(c):
    c = min(max(c, 0.5), 99.5) / 100.0
    return math.log(c) - math.log1p(-c)


@nb.njit(inline="always", cache=True)
def _instance(i, k0, k1, stream, words, nrm, beta, s_info, s_rest, rep_p, rep_a, t_rho, t_zp,
              t_za, t_ap, t_aa, lam, mu, kappa, kappa_c, jury_n, icc, tie, gx, gw, lbin, table,
              acc, gap, b):
    """Instance ``i``: adds its terms to ``acc[b]`` [2, N_ACC] and ``gap[b]`` [2]
    (compiled for the CPU here and for the GPU by :mod:`kernels.gpu.confidence`)."""
    ii = np.uint64(i)
    for c in range(4):
        w0, w1, w2, w3 = philox4x32_10(ii & _LO, ii >> _HI, np.uint64(c), stream, k0, k1)
        words[4 * c] = np.float64(w0)
        words[4 * c + 1] = np.float64(w1)
        words[4 * c + 2] = np.float64(w2)
        words[4 * c + 3] = np.float64(w3)
    for j in range(3):  # normals from word pairs (0, 1), (4, 5), (8, 9)
        u1 = (words[4 * j] + 0.5) * _INV32
        u2 = (words[4 * j + 1] + 0.5) * _INV32
        r = math.sqrt(-2.0 * math.log(u1))
        nrm[2 * j] = r * math.cos(2.0 * math.pi * u2)
        nrm[2 * j + 1] = r * math.sin(2.0 * math.pi * u2)
    y = beta + s_info * nrm[0]
    right = y + s_rest * nrm[1] > 0.0
    B = _phi(y / s_rest)
    cp = (rep_p[0] + rep_p[1] + rep_p[2] * (100.0 * B - 50.0) + rep_p[3] * nrm[2]
          + rep_p[4] * nrm[3])
    ca = (rep_a[0] - rep_a[1] + rep_a[2] * (50.0 - 100.0 * B) + rep_a[3] * nrm[2]
          + rep_a[4] * nrm[4])
    # One uniform decides whether the debate is an anchoring one for each side.
    lp = 0.0 if (words[13] < t_ap and words[14] < t_zp) else _logit_report(cp)
    la = 0.0 if (words[13] < t_aa and words[15] < t_za) else _logit_report(ca)
    fab = words[12] < t_rho
    if right:
        ep, ea = 1.0, 1.0 if fab else 0.0
    else:
        ep, ea = 1.0 if fab else 0.0, 1.0
    qc = jury_at(lam * (mu + kappa * ep + kappa_c * lp), jury_n, icc, tie, gx, gw,
                 lbin, table)
    qd = jury_at(lam * (mu + kappa * (ep - ea) + kappa_c * (lp - la)), jury_n, icc, tie,
                 gx, gw, lbin, table)
    for p in range(2):
        q = qc if p == 0 else qd
        if right:
            acc[b, p, 3] += 1.0
            acc[b, p, 4] += q
            acc[b, p, 5] += q * q
            acc[b, p, 6] += q
            acc[b, p, 7] += q * q
        else:
            acc[b, p, 0] += 1.0
            acc[b, p, 1] += q
            acc[b, p, 2] += q * q
            acc[b, p, 6] += 1.0 - q
            acc[b, p, 7] += (1.0 - q) * (1.0 - q)
    if not right:
        d = qc - qd
        gap[b, 0] += d
        gap[b, 1] += d * d


@nb.njit(parallel=True, cache=True)
def confidence_kernel(n, k0, k1, beta, info, rho, rep_p, rep_a, lam, mu, kappa, kappa_c,
                      jury_n, icc, tie, gx, gw, table):
    """Per-block sums (n_blocks, 2 protocols, N_ACC) over ``n`` instances, and the
    paired contrast's (n_blocks, 2).

    ``rep_p``, ``rep_a``: (closing intercept a_R, side offset h, weight w, shared sd,
    own sd (side and noise combined), anchor share z, anchoring debates pi_a) of the
    protagonist (side P) and the antagonist (side O); the consultant is the protagonist.
    ``table``: :func:`jury_table` of this jury, or empty (the quadrature throughout).
    """
    n_blocks = (n + BLOCK - 1) // BLOCK
    lbin = log_binom_row(jury_n)
    acc = np.zeros((n_blocks, 2, N_ACC))
    gap = np.zeros((n_blocks, 2))
    stream = np.uint64(STREAM)
    s_info, s_rest = math.sqrt(info), math.sqrt(1.0 - info)
    t_rho = rho * 4294967296.0
    t_zp, t_za = rep_p[5] * 4294967296.0, rep_a[5] * 4294967296.0
    t_ap, t_aa = rep_p[6] * 4294967296.0, rep_a[6] * 4294967296.0
    for b in nb.prange(n_blocks):
        words = np.empty(16, np.float64)
        nrm = np.empty(6)
        for i in range(b * BLOCK, min((b + 1) * BLOCK, n)):
            if (i & 1023) == 0 and stopped():  # Ctrl-C: the caller raises KeyboardInterrupt
                break
            _instance(i, k0, k1, stream, words, nrm, beta, s_info, s_rest, rep_p, rep_a, t_rho,
                      t_zp, t_za, t_ap, t_aa, lam, mu, kappa, kappa_c, jury_n, icc, tie, gx, gw,
                      lbin, table, acc, gap, b)
    return acc, gap


# ------------------------------------------------------------------ juries of judges that lean
@nb.njit(cache=True)
def n_choose(J, n):
    """C(J, n) as a float (an exact integer below 2^53 for J <= 64, n <= J)."""
    out = 1.0
    for k in range(n):
        out = out * (J - k) / (k + 1)
    return out


@nb.njit(cache=True)
def jury_leans(q, n, icc, tie, gx, gw, leans, work):
    """Pr(the majority of a jury of n judges endorses the protagonist) when the jury is
    n of the J judges whose leans are ``leans`` (probit scale, toward the proposition),
    seated at random (all J when n == J), and the protagonist holds the proposition or
    the opposition with probability 1/2 each: judge j votes for the protagonist iff
    Phi^-1(q) + sigma l_j - sqrt(icc) Z - sqrt(1 - icc) E_j > 0, sigma = +1 (the
    protagonist holds the proposition) or -1, Z shared (nodes ``gx``, weights ``gw``),
    E_j each judge's own.  The side, the latent and the seats are integrated exactly:
    given them the votes are independent, and a dynamic programme over the judges
    (``work``: at least (n + 1)^2 floats) sums the vote counts of every n-subset, each
    subset weighted 1 / C(J, n)."""
    if q <= 0.0:
        return 0.0
    if q >= 1.0:
        return 1.0
    J = leans.shape[0]
    zq = ndtri(q)
    a, e = math.sqrt(icc), math.sqrt(1.0 - icc)
    m = n + 1
    out = 0.0
    for side in range(2):
        sg = 1.0 if side == 0 else -1.0
        for k in range(gx.shape[0]):
            for c in range(m * m):
                work[c] = 0.0
            work[0] = 1.0  # work[c m + v]: c judges seated so far, v of them voting yes
            for j in range(J):
                pj = _phi((zq + sg * leans[j] - a * gx[k]) / e)
                for c in range(min(j + 1, n), 0, -1):
                    for v in range(c, -1, -1):
                        t = work[c * m + v]
                        if v >= 1:
                            t += work[(c - 1) * m + v - 1] * pj
                        if v <= c - 1:
                            t += work[(c - 1) * m + v] * (1.0 - pj)
                        work[c * m + v] = t
            maj = 0.0
            for v in range(n // 2 + 1, n + 1):
                maj += work[n * m + v]
            if n % 2 == 0:
                maj += tie * work[n * m + n // 2]
            out += 0.5 * gw[k] * maj
    return out / n_choose(J, n)


@nb.njit(parallel=True, cache=True)
def jury_table_leans(n, icc, tie, gx, gw, leans):
    """:func:`jury_leans` at s = -S_MAX + i S_STEP, i < TABLE_SIZE (q = sigma(s)): the
    table :func:`jury_at` reads, so the Monte Carlo kernel runs a jury of judges that
    lean unchanged (the kernel's own quadrature, outside the table, is the jury without
    leans: the caller checks that no instance reaches it, see
    ``antiamp.models.confidence.core.lean_table``)."""
    out = np.empty(TABLE_SIZE)
    for i in nb.prange(TABLE_SIZE):
        work = np.empty((n + 1) * (n + 1))
        s = -S_MAX + i * S_STEP
        out[i] = jury_leans(1.0 / (1.0 + math.exp(-s)), n, icc, tie, gx, gw, leans, work)
    return out


@nb.njit(cache=True)
def jury_leans_many(s, n, icc, tie, gx, gw, leans, table):
    """The jury of judges that lean at every logit argument of the 1-d array ``s``: from
    ``table`` (:func:`jury_table_leans`) where it covers s, else by :func:`jury_leans`."""
    out = np.empty(s.shape[0])
    work = np.empty((n + 1) * (n + 1))
    lbin = np.empty(0)
    m = table.shape[0]
    for i in range(s.shape[0]):
        t = (s[i] + S_MAX) / S_STEP
        if m > 0 and t >= 1.0 and t < m - 3.0:
            out[i] = jury_at(s[i], n, icc, tie, gx, gw, lbin, table)
        else:
            out[i] = jury_leans(1.0 / (1.0 + math.exp(-s[i])), n, icc, tie, gx, gw, leans,
                                work)
    return out
