"""The baseline model as a Mesa agent-based model: what users reach for first.

Each step is one oversight instance: Nature draws the truth, the protagonist
agent forms its signal and stance and searches for evidence, the antagonist
argues the other side, and the judge agent draws its label under both protocols.
"""

from __future__ import annotations

import mesa


class Protagonist(mesa.Agent):
    def step(self):
        m = self.model
        correct = self.random.random() < m.p
        m.a = m.omega if correct else 1 - m.omega
        m.correct = correct
        m.e_P = 1 if correct else int(self.random.random() < m.rho)


class Antagonist(mesa.Agent):
    def step(self):
        m = self.model
        m.e_A = 1 if not m.correct else int(self.random.random() < m.rho)


class Judge(mesa.Agent):
    def step(self):
        m = self.model
        jc = m.J_c[m.e_P]
        jd = m.J_d[m.e_P][m.e_A]
        y_c = self.random.random() < jc  # endorse the protagonist?
        y_d = self.random.random() < jd
        if not m.correct:
            m.n_wrong += 1
            m.endorse_wrong_c += y_c
            m.endorse_wrong_d += y_d


class OversightModel(mesa.Model):
    def __init__(self, pi, p, rho, J_c, J_d, seed=None):
        super().__init__(seed=seed)
        self.pi, self.p, self.rho = pi, p, rho
        self.J_c, self.J_d = [float(v) for v in J_c], [[float(v) for v in r] for r in J_d]
        self.n_wrong = self.endorse_wrong_c = self.endorse_wrong_d = 0
        # Created in the protocol's order of moves; AgentSet.do keeps that order.
        Protagonist(self)
        Antagonist(self)
        Judge(self)

    def step(self):
        self.omega = int(self.random.random() < self.pi)
        self.agents.do("step")


def mesa_amp(n, pi, p, rho, J_c, J_d, seed=0):
    """(n_wrong, endorsed wrong consult, endorsed wrong debate) after n instances."""
    model = OversightModel(pi, p, rho, J_c, J_d, seed=seed)
    for _ in range(n):
        model.step()
    return model.n_wrong, model.endorse_wrong_c, model.endorse_wrong_d
