"""The evidence-presentation game built as a pygambit extensive-form game with chance moves.

Independent of sim.equilibrium: the tree is written from the model's description
(seed 000, sections 3-4) and handed to Gambit's own solvers.
"""

from fractions import Fraction

import numpy as np
import pygambit as gbt


def _probs(q):
    q = Fraction(q)
    return [q, 1 - q]


def debate_game(p_c, rho, c_e, J):
    """Chance: is P correct?  Then the false side's feasibility.  P moves at t_P = 1
    (one information set), A at t_A = 1 (one information set, not seeing P's move)."""
    g = gbt.Game.new_tree(players=["P", "A"], title="evidence presentation, open debate")
    P, A = g.players["P"], g.players["A"]
    g.append_move(g.root, g.players.chance, ["correct", "wrong"])
    g.set_chance_probs(g.root.infoset, _probs(p_c))
    correct, wrong = list(g.root.children)
    g.append_move(correct, g.players.chance, ["tA=1", "tA=0"])
    g.set_chance_probs(correct.infoset, _probs(rho))
    g.append_move(wrong, g.players.chance, ["tP=1", "tP=0"])
    g.set_chance_probs(wrong.infoset, _probs(rho))
    c_t1, c_t0 = list(correct.children)  # t_P = 1 in both; t_A = 1 / 0
    w_t1, w_t0 = list(wrong.children)  # t_A = 1 in both; t_P = 1 / 0
    g.append_move(c_t1, P, ["present", "withhold"])
    ip = c_t1.infoset
    g.append_infoset([c_t0, w_t1], ip)
    # A's information set: after P's move where t_A = 1, and where t_P = 0.
    c_pres, c_with = list(c_t1.children)
    w_pres, w_with = list(w_t1.children)
    g.append_move(c_pres, A, ["present", "withhold"])
    ia = c_pres.infoset
    g.append_infoset([c_with, w_pres, w_with, w_t0], ia)

    made = {}

    def pay(node, eP, eA):  # one outcome per evidence pair, shared by its leaves
        if (eP, eA) not in made:
            j = float(J[eP][eA])
            made[eP, eA] = g.add_outcome(f"eP={eP}, eA={eA}",
                                         [j - c_e * eP, 1 - j - c_e * eA])
        g.set_outcome(node, made[eP, eA])

    for pnode in (c_t1, w_t1):  # both senders have evidence: 2 x 2 outcomes
        for anode, eP in zip(pnode.children, (1, 0)):
            for leaf, eA in zip(anode.children, (1, 0)):
                pay(leaf, eP, eA)
    for leaf, eP in zip(c_t0.children, (1, 0)):  # correct, t_A = 0: A cannot present
        pay(leaf, eP, 0)
    for leaf, eA in zip(w_t0.children, (1, 0)):  # wrong, t_P = 0: P cannot present
        pay(leaf, 0, eA)
    return g


def gambit_debate_equilibria(p_c, rho, c_e, J):
    """All extreme equilibria by Gambit's enummixed, as (x_P, x_A) = Pr(present)."""
    g = debate_game(p_c, rho, c_e, J)
    res = gbt.nash.enummixed_solve(g, rational=False)
    out = []
    for prof in res.equilibria:
        # One information set each: strategy 1 is the first action, "present".
        xp = float(prof[list(g.players["P"].strategies)[0]])
        xa = float(prof[list(g.players["A"].strategies)[0]])
        out.append((xp, xa))
    return out


def consult_game(c_e, Jc):
    g = gbt.Game.new_tree(players=["P"], title="evidence presentation, open consultancy")
    g.append_move(g.root, g.players["P"], ["present", "withhold"])
    for leaf, eP in zip(g.root.children, (1, 0)):
        g.set_outcome(leaf, g.add_outcome(f"eP={eP}", [float(Jc[eP]) - c_e * eP]))
    return g


def gambit_consult_equilibria(c_e, Jc):
    g = consult_game(c_e, Jc)
    res = gbt.nash.enumpure_solve(g)
    return sorted(float(prof[list(g.players["P"].strategies)[0]]) for prof in res.equilibria)


def same_sets(a, b, tol=1e-9):
    a, b = sorted(a), sorted(b)
    return len(a) == len(b) and all(np.max(np.abs(np.subtract(x, y))) <= tol for x, y in zip(a, b))


# ---------------------------------------------------------------- correlated signals
def _fractions(probs):
    """Exact chance probabilities summing to one (Gambit requires it)."""
    fr = [Fraction(float(q)).limit_denominator(10**12) for q in probs]
    fr[-1] = 1 - sum(fr[:-1])
    return fr


def signals_debate_game(class_probs, c_e, J):
    """The correlated-signals debate game as a Gambit tree, built from the model's text.

    Chance draws the class (omega, s_P, s_A, t_P, t_A) (index 16 omega + 8 s_P +
    4 s_A + 2 t_P + t_A).  P moves when t_P = 1 in an information set per s_P;
    then A, when t_A = 1, in an information set per (s_P, s_A), not seeing P's move.
    """
    g = gbt.Game.new_tree(players=["P", "A"], title="correlated signals, open debate")
    P, A = g.players["P"], g.players["A"]
    keep = [k for k in range(32) if class_probs[k] > 0]
    g.append_move(g.root, g.players.chance, [f"class {k}" for k in keep])
    g.set_chance_probs(g.root.infoset, _fractions([class_probs[k] for k in keep]))
    p_sets, a_sets = {}, {}
    made = {}

    tables = np.asarray(J, dtype=float)
    if tables.ndim == 2:  # one table for every class
        tables = np.stack([tables, tables])

    def pay(node, eP, eA, b):
        # b = 0 when A believes its stance, 1 when not (rhetoric-dependent judges).
        if (eP, eA, b) not in made:
            j = float(tables[b][eP][eA])
            made[eP, eA, b] = g.add_outcome(f"eP={eP}, eA={eA}, b={b}",
                                            [j - c_e * eP, 1 - j - c_e * eA])
        g.set_outcome(node, made[eP, eA, b])

    def a_move(node, sp, sa, ta, eP, _):
        b = 0 if sa != sp else 1
        if not ta:
            pay(node, eP, 0, b)
            return
        key = (sp, sa)
        if key in a_sets:
            g.append_infoset(node, a_sets[key])
        else:
            g.append_move(node, A, ["present", "withhold"])
            a_sets[key] = node.infoset
        for leaf, eA in zip(node.children, (1, 0)):
            pay(leaf, eP, eA, b)

    for branch, k in zip(g.root.children, keep):
        sp, sa, tp, ta = (k >> 3) & 1, (k >> 2) & 1, (k >> 1) & 1, k & 1
        if tp:
            if sp in p_sets:
                g.append_infoset(branch, p_sets[sp])
            else:
                g.append_move(branch, P, ["present", "withhold"])
                p_sets[sp] = branch.infoset
            for node, eP in zip(branch.children, (1, 0)):
                a_move(node, sp, sa, ta, eP, 0)
        else:
            a_move(branch, sp, sa, ta, 0, 0)
    return g, p_sets, a_sets


def gambit_signals_equilibria(class_probs, c_e, J):
    """Behaviour profiles (x_P[s_P], x_A[s_P, s_A]) of every extreme equilibrium found by
    Gambit's enummixed on the strategic form."""
    g, p_sets, a_sets = signals_debate_game(class_probs, c_e, J)
    res = gbt.nash.enummixed_solve(g, rational=False)
    out = []
    for prof in res.equilibria:
        beh = prof.as_behavior()
        xp = np.array([float(beh[list(p_sets[s].actions)[0]]) for s in (0, 1)])
        xa = np.array([[float(beh[list(a_sets[(s, r)].actions)[0]]) for r in (0, 1)] for s in (0, 1)])
        if not any(np.max(np.abs(xp - u)) < 1e-9 and np.max(np.abs(xa - w)) < 1e-9
                   for u, w in out):
            out.append((xp, xa))
    return out


# ---------------------------------------------------------------- evidence portfolios
def portfolio_debate_game(W, Jd, c):
    """The portfolio debate game as a Gambit tree: chance draws (k_P, k_A) with weights
    W; P chooses how many of its k_P passing items to submit (one information set per
    k_P), then A (one per k_A, not seeing P's choice)."""
    K = W.shape[0]
    g = gbt.Game.new_tree(players=["P", "A"], title="evidence portfolios, open debate")
    P, A = g.players["P"], g.players["A"]
    keep = [(i, j) for i in range(K) for j in range(K) if W[i, j] > 0]
    g.append_move(g.root, g.players.chance, [f"kP={i}, kA={j}" for i, j in keep])
    g.set_chance_probs(g.root.infoset, _fractions([W[i, j] / W.sum() for i, j in keep]))
    p_sets, a_sets, made = {}, {}, {}

    def pay(node, sp, sa):
        if (sp, sa) not in made:
            j = float(Jd[sp][sa])
            made[sp, sa] = g.add_outcome(f"V=({sp},{sa})", [j - c * sp, 1 - j - c * sa])
        g.set_outcome(node, made[sp, sa])

    def a_move(node, ka, sp):
        if ka in a_sets:
            g.append_infoset(node, a_sets[ka])
        else:
            g.append_move(node, A, [f"submit {s}" for s in range(ka + 1)])
            a_sets[ka] = node.infoset
        for leaf, sa in zip(node.children, range(ka + 1)):
            pay(leaf, sp, sa)

    for branch, (kp, ka) in zip(g.root.children, keep):
        if kp in p_sets:
            g.append_infoset(branch, p_sets[kp])
        else:
            g.append_move(branch, P, [f"submit {s}" for s in range(kp + 1)])
            p_sets[kp] = branch.infoset
        for node, sp in zip(branch.children, range(kp + 1)):
            a_move(node, ka, sp)
    return g, p_sets, a_sets


def gambit_portfolio_equilibrium(W, Jd, c):
    """One equilibrium by Gambit's sequence-form LCP, as behaviour strategies
    sigma_P[k, s], sigma_A[k, s] (NaN for types of probability zero)."""
    K = W.shape[0]
    g, p_sets, a_sets = portfolio_debate_game(W, Jd, c)
    res = gbt.nash.lcp_solve(g, rational=False)
    beh = res.equilibria[0]
    sP = np.full((K, K), np.nan)
    sA = np.full((K, K), np.nan)
    for sets, out in ((p_sets, sP), (a_sets, sA)):
        for k, iset in sets.items():
            for s, act in enumerate(iset.actions):
                out[k, s] = float(beh[act])
    return sP, sA
