"""Brute-force enumeration of the baseline model, independent of ``sim``.

Walks every outcome of every random quantity of one instance (truth, signal,
feasibility of each side, the presentation uniform, each juror's vote) with its
probability, applies the judge rule as the seed states it, and accumulates the
exact metrics.  Small juries only (2**n vote vectors).
"""

from itertools import product
from math import exp


def _judge_vote_prob(kind, e_p, e_a, protocol, b, lam, mu, kappa, consult_default):
    """One judge's Pr(vote for a | transcript), from the rule as written in the seed."""
    if kind == "tiebreak":
        if protocol == "consult":
            return 1.0 if e_p == 1 else consult_default
        if e_p > e_a:
            return 1.0
        if e_p < e_a:
            return 0.0
        return b
    return 1.0 / (1.0 + exp(-lam * (mu + kappa * (e_p - e_a))))


def _panel_prob(q, n, jury_tie):
    """Pr(panel endorses a) by enumerating all 2**n vote vectors."""
    tot = 0.0
    for votes in product((0, 1), repeat=n):
        pr = 1.0
        for v in votes:
            pr *= q if v else 1 - q
        k = sum(votes)
        if 2 * k > n:
            tot += pr
        elif 2 * k == n:
            tot += jury_tie * pr
    return tot


def enumerate_model(pi, p, rho, x_pc, x_pd, x_a, kind="tiebreak", b=0.5, lam=1.0, mu=0.0,
                    kappa=2.0, n=1, jury_tie=0.5, consult_default=0.0, alpha=1.0, beta=1.0,
                    delta_c=0.0, fixed=False, a_fixed=1):
    """Exact metrics for both protocols: ``{protocol: {metric: value}}``."""
    # The presentation uniform u is shared by both protocols: split [0, 1] at x_pc, x_pd.
    cuts = sorted({0.0, x_pc, x_pd, 1.0})
    u_cells = [(lo, hi) for lo, hi in zip(cuts, cuts[1:]) if hi > lo]
    acc = {prot: dict.fromkeys(
        ["w", "amp_num", "wrong", "fwc_num", "right", "acc", "tie", "tie_endorse", "fab_p",
         "fab_a", "welfare"], 0.0) for prot in ("consult", "debate")}
    for omega, sig_ok, fab_p, fab_a in product((0, 1), repeat=4):
        pr = pi if omega else 1 - pi
        if fixed:
            a = a_fixed
            if sig_ok:  # the signal draw is unused: count its outcome once
                continue
        else:
            pr *= p if sig_ok else 1 - p
            a = omega if sig_ok else 1 - omega
        pr *= rho if fab_p else 1 - rho
        pr *= rho if fab_a else 1 - rho
        correct = a == omega
        t_p = 1 if correct else fab_p
        t_a = 1 if not correct else fab_a
        for (lo, hi), pres_a in product(u_cells, (0, 1)):
            u_mid = 0.5 * (lo + hi)
            pr2 = pr * (hi - lo) * (x_a if pres_a else 1 - x_a)
            if pr2 == 0:
                continue
            for prot in ("consult", "debate"):
                x_p = x_pc if prot == "consult" else x_pd
                e_p = t_p * int(u_mid < x_p)
                e_a = t_a * pres_a if prot == "debate" else 0
                q = _judge_vote_prob(kind, e_p, e_a, prot, b, lam, mu, kappa, consult_default)
                endorse = _panel_prob(q, n, jury_tie)
                r = acc[prot]
                r["w"] += pr2
                right_label = endorse if correct else 1 - endorse
                r["acc"] += pr2 * right_label
                if correct:
                    r["right"] += pr2
                    r["fwc_num"] += pr2 * endorse
                    r["fab_a"] += pr2 * e_a
                else:
                    r["wrong"] += pr2
                    r["amp_num"] += pr2 * endorse
                    r["fab_p"] += pr2 * e_p
                if e_p == e_a:
                    r["tie"] += pr2
                    r["tie_endorse"] += pr2 * endorse
                cost = delta_c if prot == "debate" else 0.0
                r["welfare"] += pr2 * (
                    -alpha * (1 - right_label) - beta * (0 if correct else endorse) - cost
                )
    out = {}
    for prot, r in acc.items():
        out[prot] = {
            "amp": r["amp_num"] / r["wrong"] if r["wrong"] > 0 else float("nan"),
            "fwc": r["fwc_num"] / r["right"] if r["right"] > 0 else float("nan"),
            "acc": r["acc"],
            "tie_rate": r["tie"],
            "b_hat": r["tie_endorse"] / r["tie"] if r["tie"] > 0 else float("nan"),
            "rho_eq_P": r["fab_p"] / r["wrong"] if r["wrong"] > 0 else float("nan"),
            "rho_eq_A": r["fab_a"] / r["right"] if (r["right"] > 0 and prot == "debate")
            else float("nan"),
            "welfare": r["welfare"],
        }
    return out
