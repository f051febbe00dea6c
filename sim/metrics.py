"""Metrics of the baseline model as weighted class averages.

A metric is E[g(class) | class in S] for a per-class value g and a class subset S.
Weighting the 32 transcript classes by simulated *counts* gives the Monte Carlo
estimate (with its standard error); weighting them by exact class *probabilities*
gives the closed form (seed 000, sections 3-4).  Both paths share the definitions
below, so the table's two columns mean the same thing by construction; the seed's
literal formulas are checked against both in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Class coordinates, each an int array over the 32 classes (see kernels.baseline).
_K = np.arange(32)
OMEGA = (_K >> 4) & 1
CORRECT = (_K >> 3) & 1
EP_CONSULT = (_K >> 2) & 1
EP_DEBATE = (_K >> 1) & 1
EA_DEBATE = _K & 1


@dataclass(frozen=True)
class MetricSpec:
    long_name: str
    units: str
    definition: str


#: Per-protocol metrics: name -> description (order = table order).
PROTOCOL_METRICS: dict[str, MetricSpec] = {
    "amp": MetricSpec("mistake amplification", "1", "Pr(y = a | a != omega)"),
    "acc": MetricSpec("accuracy", "1", "Pr(y = omega)"),
    "fwc": MetricSpec("follow-when-correct", "1", "Pr(y = a | a = omega)"),
    "endorse": MetricSpec("endorsement rate", "1", "Pr(y = a)"),
    "wrong_follow": MetricSpec("ratified mistakes", "1", "Pr(y = a, a != omega)"),
    "tie_rate": MetricSpec("evidence tie rate", "1", "Pr(e_P = e_A)"),
    "imbalance_rate": MetricSpec("evidence imbalance rate", "1", "Pr(e_P != e_A)"),
    "b_hat": MetricSpec("tie bias", "1", "Pr(y = a | e_P = e_A)"),
    "rho_eq_P": MetricSpec(
        "equilibrium fabrication rate, protagonist", "1", "Pr(e_P = 1 | a != omega)"
    ),
    "rho_eq_A": MetricSpec(
        "equilibrium fabrication rate, antagonist", "1", "Pr(e_A = 1 | 1 - a != omega)"
    ),
    "evidence_P": MetricSpec("protagonist evidence rate", "1", "Pr(e_P = 1)"),
    "evidence_A": MetricSpec("antagonist evidence rate", "1", "Pr(e_A = 1)"),
    "welfare": MetricSpec(
        "principal welfare U_D", "utility",
        "-alpha Pr(y != omega) - beta Pr(y = a, a != omega) - C(protocol)",
    ),
    "payoff_P": MetricSpec("protagonist payoff", "utility", "Pr(y = a) - c_e Pr(e_P = 1)"),
    "payoff_A": MetricSpec("antagonist payoff", "utility", "Pr(y = 1 - a) - c_e Pr(e_A = 1)"),
}

#: Paired debate-versus-consultancy contrasts on the same instances.
CONTRAST_METRICS: dict[str, MetricSpec] = {
    "amp_gap": MetricSpec(
        "amplification gap", "1", "Amp(consult) - Amp(debate); seed: rho (1 - b)"
    ),
    "acc_gap": MetricSpec(
        "accuracy cost of debate", "1", "Acc(consult) - Acc(debate); seed: rho (2p - 1)(1 - b)"
    ),
    "welfare_diff": MetricSpec(
        "welfare advantage of debate", "utility",
        "U_D(debate) - U_D(consult); seed: rho (1 - b)[beta (1 - p) - alpha (2p - 1)] - Delta C",
    ),
}


def _protocol_values(protocol: str, J_consult, J_debate, alpha, beta, delta_c, c_e):
    """Per-class values g and conditioning masks S of every metric of one protocol."""
    corr = CORRECT
    if protocol == "consult":
        ep = EP_CONSULT
        ea = np.zeros_like(ep)
        J = np.asarray(J_consult)[ep]
        cost = 0.0
    else:
        ep, ea = EP_DEBATE, EA_DEBATE
        J = np.asarray(J_debate)[ep, ea]
        cost = delta_c
    every = np.ones(32, bool)
    right = corr == 1
    wrong = ~right
    tie = ep == ea
    accurate = corr * J + (1 - corr) * (1 - J)
    nan = np.full(32, np.nan)
    has_a = protocol == "debate"
    return {
        "amp": (J, wrong),
        "acc": (accurate, every),
        "fwc": (J, right),
        "endorse": (J, every),
        "wrong_follow": ((1 - corr) * J, every),
        "tie_rate": (tie.astype(float), every),
        "imbalance_rate": ((~tie).astype(float), every),
        "b_hat": (J, tie),
        "rho_eq_P": (ep.astype(float), wrong),
        "rho_eq_A": (ea.astype(float) if has_a else nan, right),
        "evidence_P": (ep.astype(float), every),
        "evidence_A": (ea.astype(float) if has_a else nan, every),
        "welfare": (-alpha * (1 - accurate) - beta * (1 - corr) * J - cost, every),
        "payoff_P": (J - c_e * ep, every),
        "payoff_A": ((1 - J) - c_e * ea if has_a else nan, every),
    }


def _contrast_values(vals_c, vals_d):
    return {
        "amp_gap": (vals_c["amp"][0] - vals_d["amp"][0], vals_c["amp"][1]),
        "acc_gap": (vals_c["acc"][0] - vals_d["acc"][0], vals_c["acc"][1]),
        "welfare_diff": (vals_d["welfare"][0] - vals_c["welfare"][0], vals_c["welfare"][1]),
    }


def weighted(weights: np.ndarray, g: np.ndarray, mask: np.ndarray, n: float | None = None):
    """E_w[g | mask] and the standard error of its Monte Carlo estimate.

    With integer class *counts* (``n=None``) the standard error is the sample one
    of a mean of i.i.d. per-instance values (for a conditional metric, given the
    number of instances in the conditioning event).  With exact class
    *probabilities* and ``n`` instances it is the standard error that a run of
    ``n`` instances will have, which is what to plan a run with.
    """
    w = np.where(mask, weights, 0).astype(float)
    tot = w.sum()
    if tot <= 0:
        return np.nan, np.nan
    sel = w > 0
    mean = float((w[sel] * g[sel]).sum() / tot)
    ss = float((w[sel] * (g[sel] - mean) ** 2).sum())
    if n is None:  # counts
        se = np.sqrt(ss / (tot - 1) / tot) if tot >= 2 else np.nan
    else:  # probabilities: Var(g | mask) / (n Pr(mask))
        se = np.sqrt(ss / tot / (n * tot))
    return mean, float(se)


def evaluate(weights, J_consult, J_debate, alpha, beta, delta_c, c_e, n: float | None = None):
    """All metrics from class weights: ``{name: (values, ses)}``.

    ``weights`` are class counts (``n=None``) or exact class probabilities with
    ``n`` the number of instances the standard errors refer to.  Per-protocol
    metrics give arrays over (consult, debate); contrasts give scalars.
    """
    vc = _protocol_values("consult", J_consult, J_debate, alpha, beta, delta_c, c_e)
    vd = _protocol_values("debate", J_consult, J_debate, alpha, beta, delta_c, c_e)
    out = {}
    for name in PROTOCOL_METRICS:
        rc = weighted(weights, *vc[name], n)
        rd = weighted(weights, *vd[name], n)
        out[name] = (np.array([rc[0], rd[0]]), np.array([rc[1], rd[1]]))
    for name, (g, mask) in _contrast_values(vc, vd).items():
        m, s = weighted(weights, g, mask, n)
        out[name] = (np.float64(m), np.float64(s))
    return out


def class_probabilities(pi, p_correct, rho, x_pc, x_pd, x_a, fixed: bool, a_fixed: int):
    """Exact probability of each of the 32 transcript classes.

    The two protocols present with the same uniform (common random numbers), so
    Pr(e_P consult = 1, e_P debate = 1 | t_P = 1) = min(x_Pc, x_Pd).
    """
    prob = np.zeros(32)
    for k in range(32):
        om, corr = OMEGA[k], CORRECT[k]
        epc, epd, ea = EP_CONSULT[k], EP_DEBATE[k], EA_DEBATE[k]
        p_om = pi if om else 1 - pi
        if fixed:
            p_corr = float(corr == (om == a_fixed))
        else:
            p_corr = p_correct if corr else 1 - p_correct
        tp1 = 1.0 if corr else rho  # Pr(t_P = 1)
        ta1 = rho if corr else 1.0  # Pr(t_A = 1)
        both = min(x_pc, x_pd)
        joint_given_t = {  # Pr(e_Pc, e_Pd | t_P = 1)
            (1, 1): both,
            (1, 0): x_pc - both,
            (0, 1): x_pd - both,
            (0, 0): 1 - x_pc - x_pd + both,
        }
        p_ep = tp1 * joint_given_t[(epc, epd)] + (1 - tp1) * float(epc == 0 and epd == 0)
        p_ea = ta1 * (x_a if ea else 1 - x_a) + (1 - ta1) * float(ea == 0)
        prob[k] = p_om * p_corr * p_ep * p_ea
    return prob
