"""The evidence-presentation games written as Gambit extensive-form games with chance moves.

Independent of sim.equilibrium: each tree is written from the model's description
(seed 000, sections 3-4, and the extensions' texts) in Gambit's own file format (.efg,
read by ``pygambit.read_efg``) and handed to Gambit's solvers.  The file format is
the interface because it is the one part of Gambit that stays put across releases:
pygambit 17 (the first with binary wheels for this Python, so the test setup no
longer compiles Gambit from source) replaced the tree-building API of 16.x.
Information sets are numbered in the order a pre-order walk first meets them, which
is the order ``Game.get_infosets`` and behaviour profiles list them in.
"""

from fractions import Fraction

import numpy as np
import pygambit as gbt


def _q(text):
    return '"' + str(text).replace('"', "'") + '"'


def _num(x):
    """A payoff or probability as Gambit reads it: an exact rational n/d.  A float is
    taken as the nearest rational with denominator at most 10^9, so that rounding
    noise (1 - 0.9 - 0.1 = -2.8e-17, rho = 0.333...3) does not break the exact ties
    of degenerate games in Gambit's exact arithmetic, while genuine differences (5e-8
    between a near-unanimous jury's entries) stay."""
    if not isinstance(x, Fraction):
        x = Fraction(float(x)).limit_denominator(10**9)
    return f"{x.numerator}/{x.denominator}" if x.denominator != 1 else str(x.numerator)


class _Efg:
    """Writes an .efg tree node by node in pre-order (Gambit's file order)."""

    def __init__(self, title, players):
        self.players = list(players)
        names = " ".join(_q(p) for p in self.players)
        self.lines = [f"EFG 2 R {_q(title)} {{ {names} }}", _q(""), ""]
        self.n_chance = 0
        self.isets = {p: {} for p in self.players}  # player -> key -> number (pre-order)
        self.outcomes = {}

    def chance(self, labels, probs):
        self.n_chance += 1
        body = " ".join(f"{_q(a)} {_num(p)}" for a, p in zip(labels, probs))
        self.lines.append(f'c "" {self.n_chance} "" {{ {body} }} 0')

    def move(self, player, key, actions):
        """A decision node of ``player`` in the information set named by ``key``."""
        sets = self.isets[player]
        if key not in sets:
            sets[key] = len(sets) + 1
        acts = " ".join(_q(a) for a in actions)
        who = self.players.index(player) + 1
        self.lines.append(f'p "" {who} {sets[key]} {_q(key)} {{ {acts} }} 0')

    def leaf(self, key, payoffs):
        if key not in self.outcomes:
            self.outcomes[key] = len(self.outcomes) + 1
        pays = ", ".join(_num(v) for v in payoffs)
        self.lines.append(f"t \"\" {self.outcomes[key]} {_q(key)} {{ {pays} }}")

    def game(self):
        return gbt.read_efg(__import__("io").StringIO("\n".join(self.lines) + "\n"))

    def order(self, player):
        """The keys of ``player``'s information sets in Gambit's order."""
        return sorted(self.isets[player], key=self.isets[player].get)


def _first_strategy(prof, player):
    """Pr(the first pure strategy): with one information set, the first action."""
    label, prob = next(iter(prof[player]))  # (strategy label, probability) pairs
    return float(prob)


def _behaviour(beh, efg, player):
    """{information-set key: [Pr(action) in the order written]} of a behaviour profile."""
    per_set = list(beh[player])  # (representative history, (action, probability) pairs)
    keys = efg.order(player)
    assert len(per_set) == len(keys), "Gambit read another number of information sets"
    return {k: [float(p) for _, p in acts] for k, (_, acts) in zip(keys, per_set)}


def _probs(q):
    q = Fraction(float(q)).limit_denominator(10**9)
    return [q, 1 - q]


def debate_game(p_c, rho, c_e, J):
    """Chance: is P correct?  Then the false side's feasibility.  P moves at t_P = 1
    (one information set), A at t_A = 1 (one information set, not seeing P's move)."""
    t = _Efg("evidence presentation, open debate", ["P", "A"])

    def leaf(eP, eA):  # one outcome per evidence pair, shared by its leaves
        j = float(J[eP][eA])
        t.leaf(f"eP={eP}, eA={eA}", [j - c_e * eP, 1 - j - c_e * eA])

    def a_moves(eP):  # A at t_A = 1, not seeing P's move
        t.move("A", "A holds evidence", ["present", "withhold"])
        for eA in (1, 0):
            leaf(eP, eA)

    def p_moves(a_can):
        t.move("P", "P holds evidence", ["present", "withhold"])
        for eP in (1, 0):
            a_moves(eP) if a_can else leaf(eP, 0)

    t.chance(["correct", "wrong"], _probs(p_c))
    t.chance(["tA=1", "tA=0"], _probs(rho))  # P correct: t_P = 1, A's evidence with rho
    p_moves(True)
    p_moves(False)
    t.chance(["tP=1", "tP=0"], _probs(rho))  # P wrong: t_A = 1, P's evidence with rho
    p_moves(True)
    a_moves(0)
    return t


def gambit_debate_equilibria(p_c, rho, c_e, J, rational=True):
    """All extreme equilibria by Gambit's enummixed, as (x_P, x_A) = Pr(present).

    In exact arithmetic by default (over the doubles the tree holds): pygambit 17's
    floating-point enummixed takes a gain of 5e-8 for indifference (a jury of five
    near unanimity) and reports a profile that is not an equilibrium."""
    res = gbt.nash.enummixed_solve(debate_game(p_c, rho, c_e, J).game(), rational=rational)
    # One information set each: strategy 1 is the first action, "present".
    return [(_first_strategy(prof, "P"), _first_strategy(prof, "A")) for prof in res.equilibria]


def consult_game(c_e, Jc):
    t = _Efg("evidence presentation, open consultancy", ["P"])
    t.move("P", "P holds evidence", ["present", "withhold"])
    for eP in (1, 0):
        t.leaf(f"eP={eP}", [float(Jc[eP]) - c_e * eP])
    return t


def gambit_consult_equilibria(c_e, Jc):
    res = gbt.nash.enumpure_solve(consult_game(c_e, Jc).game())
    return sorted(_first_strategy(prof, "P") for prof in res.equilibria)


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
    t = _Efg("correlated signals, open debate", ["P", "A"])
    keep = [k for k in range(32) if class_probs[k] > 0]
    tables = np.asarray(J, dtype=float)
    if tables.ndim == 2:  # one table for every class
        tables = np.stack([tables, tables])

    def pay(eP, eA, b):
        # b = 0 when A believes its stance, 1 when not (rhetoric-dependent judges).
        j = float(tables[b][eP][eA])
        t.leaf(f"eP={eP}, eA={eA}, b={b}", [j - c_e * eP, 1 - j - c_e * eA])

    def a_move(sp, sa, ta, eP):
        b = 0 if sa != sp else 1
        if not ta:
            pay(eP, 0, b)
            return
        t.move("A", (sp, sa), ["present", "withhold"])
        for eA in (1, 0):
            pay(eP, eA, b)

    t.chance([f"class {k}" for k in keep], _fractions([class_probs[k] for k in keep]))
    for k in keep:
        sp, sa, tp, ta = (k >> 3) & 1, (k >> 2) & 1, (k >> 1) & 1, k & 1
        if tp:
            t.move("P", sp, ["present", "withhold"])
            for eP in (1, 0):
                a_move(sp, sa, ta, eP)
        else:
            a_move(sp, sa, ta, 0)
    return t


def gambit_signals_equilibria(class_probs, c_e, J):
    """Behaviour profiles (x_P[s_P], x_A[s_P, s_A]) of every extreme equilibrium found by
    Gambit's enummixed on the strategic form."""
    t = signals_debate_game(class_probs, c_e, J)
    res = gbt.nash.enummixed_solve(t.game(), rational=False)
    out = []
    for prof in res.equilibria:
        beh = prof.as_behavior()
        bp, ba = _behaviour(beh, t, "P"), _behaviour(beh, t, "A")
        xp = np.array([bp[s][0] for s in (0, 1)])
        xa = np.array([[ba[(s, r)][0] for r in (0, 1)] for s in (0, 1)])
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
    t = _Efg("evidence portfolios, open debate", ["P", "A"])
    keep = [(i, j) for i in range(K) for j in range(K) if W[i, j] > 0]
    t.chance([f"kP={i}, kA={j}" for i, j in keep], _fractions([W[i, j] / W.sum() for i, j in keep]))
    for kp, ka in keep:
        t.move("P", kp, [f"submit {s}" for s in range(kp + 1)])
        for sp in range(kp + 1):
            t.move("A", ka, [f"submit {s}" for s in range(ka + 1)])
            for sa in range(ka + 1):
                j = float(Jd[sp][sa])
                t.leaf(f"V=({sp},{sa})", [j - c * sp, 1 - j - c * sa])
    return t


def gambit_portfolio_equilibrium(W, Jd, c):
    """One equilibrium by Gambit's sequence-form LCP, as behaviour strategies
    sigma_P[k, s], sigma_A[k, s] (NaN for types of probability zero)."""
    K = W.shape[0]
    t = portfolio_debate_game(W, Jd, c)
    res = gbt.nash.lcp_solve(t.game(), rational=False)
    beh = res.equilibrium  # Lemke's algorithm on the tree finds exactly one
    sP = np.full((K, K), np.nan)
    sA = np.full((K, K), np.nan)
    for player, out in (("P", sP), ("A", sA)):
        for k, probs in _behaviour(beh, t, player).items():
            out[k, :len(probs)] = probs
    return sP, sA
