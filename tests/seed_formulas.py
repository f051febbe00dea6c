"""The closed forms of seed 000 (sections 3-4), written out literally as printed.

Deliberately independent of ``sim``: these are the oracles.
"""

from math import ceil, comb, exp


def sigma(z):
    return 1.0 / (1.0 + exp(-z))


# Result 1 (tie-break judge, gatekeeping consultancy, e = t).
def amp_consult_tiebreak(rho, b):
    return rho


def amp_debate_tiebreak(rho, b):
    return rho * b


# Result 1' (logit judge).
def amp_consult_logit(rho, lam, mu, kappa):
    return rho * sigma(lam * (mu + kappa)) + (1 - rho) * sigma(lam * mu)


def amp_debate_logit(rho, lam, mu, kappa):
    return rho * sigma(lam * mu) + (1 - rho) * sigma(lam * (mu - kappa))


# Result 2.
def fwc_consult_tiebreak(rho, b):
    return 1.0


def fwc_debate_tiebreak(rho, b):
    return 1 - rho * (1 - b)


def acc_consult_tiebreak(rho, b, p):
    return 1 - (1 - p) * rho


def acc_debate_tiebreak(rho, b, p):
    return 1 - rho * (p + b - 2 * p * b)


def acc_gap_tiebreak(rho, b, p):
    return rho * (2 * p - 1) * (1 - b)


# Result 3.
def welfare_diff_tiebreak(rho, b, p, alpha, beta, delta_c):
    return rho * (1 - b) * (beta * (1 - p) - alpha * (2 * p - 1)) - delta_c


def beta_threshold(alpha, p):
    return alpha * (2 * p - 1) / (1 - p)


# Section 4: juries.
def b_n(b, n):
    return sum(comb(n, k) * b**k * (1 - b) ** (n - k) for k in range(ceil(n / 2), n + 1))
