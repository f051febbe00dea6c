"""The settings of ``model=portfolio``: its config sections, each field declared once.

Light on purpose (dataclasses only): the registry reads every model's sections
from here to build the config schema and ``--help`` without loading numpy or
the compiled kernels."""

from __future__ import annotations

from dataclasses import dataclass

from ...config import BIG, declare
from ...config import EquilibriumConfig


RULES = ("threshold", "logit")
#: The most items per sender (the kernel's bound; tested equal to it).
MAX_BUDGET = 64

@dataclass
class PortfolioConfig:
    """Evidence portfolios (``portfolio.*``, with ``extension=portfolio``)."""

    #: Budget B: candidate items per sender.
    budget: int = declare(3, 'B', 'evidence budget (items)', range=f'int [1, {MAX_BUDGET}]')
    #: Pr(an item for a true stance passes verification).
    q_true: float = declare(0.8, 'q_T', 'pass rate of a true-side item', range='[0, 1]')
    #: Pr(a fabricated item for a false stance passes verification).
    q_fab: float = declare(0.1, 'q_F', 'pass rate of a fabricated item', range='[0, 1]')
    #: Pr(a false side finds a misleading-but-authentic item when its fabrication fails).
    mislead: float = declare(0.3, 'm', 'misleading-item rate', range='[0, 1]')
    #: Pr(the relevance check, cross-examination, catches a misleading item).
    cross_exam: float = declare(0.0, 'x', 'cross-examination catch rate', range='[0, 1]')
    #: Threshold tau: e_i = 1{V_i >= tau} (rule = threshold).
    tau: int = declare(1, 'τ', 'accepted items needed', range=f'int [1, {MAX_BUDGET}]')
    #: ``threshold`` (baseline judge on e_i) or ``logit`` on kappa_v (V_P - V_A) (logit judge).
    rule: str = declare("threshold", choices=RULES)
    #: Salience of one accepted item (rule = logit).
    kappa_v: float = declare(1.0, 'κ_v', 'salience of an accepted item', range=f'[0, {BIG:g}]')
    #: Cost of submitting one item.
    c_item: float = declare(0.0, 'c_item', 'cost of an item', range=f'[0, {BIG:g}]')


#: The sections this model adds to the shared schema.
SECTIONS = {"portfolio": PortfolioConfig, "equilibrium": EquilibriumConfig}

#: Small example configs, ``(what, config)``: ``antiamp warm`` runs each one (compiling
#: the kernels for the argument types real runs use), and the tests and docs use them.
#: The first is the model's example; ``sweep.axes`` makes one a grid, ``export`` a
#: transcript export.
EXAMPLES = [
    ('portfolios',
     {'model': {'name': 'portfolio'},
      'equilibrium': {'payoffs': 'simulated'},
      'run': {'n_instances': 2_000}}),
]

#: Small grids (``sweep.axes``) of this model: the conformance checks
#: (:func:`antiamp.testing.check_model`) and the figure tests run them.
GRIDS = [
    {'model': {'name': 'portfolio'},
     'equilibrium': {'payoffs': 'simulated'},
     'run': {'n_instances': 20_000},
     'portfolio': {'c_item': 0.02, 'tau': 2},
     'sweep': {'axes': {'portfolio': {'budget': [2, 3, 4]}}}},
    {'model': {'name': 'portfolio'},
     'equilibrium': {'payoffs': 'simulated'},
     'run': {'n_instances': 4000},
     'sweep': {'axes': {'portfolio': {'budget': [1, 2, 3]}}}},
]
