"""The settings of ``model=options``: its config sections, each field declared once.

Light on purpose (dataclasses only): the registry reads every model's sections
from here to build the config schema and ``--help`` without loading numpy or
the compiled kernels."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ...config import BIG, declare
from ...config import EquilibriumConfig


ANTAGONISTS = ("assigned", "best_of_k", "attack")
#: The most answers (the kernel's bound; tested equal to it).
MAX_K = 16

@dataclass
class OptionsConfig:
    """Multi-option answers (``options.*``, with ``extension=options``)."""

    #: Number of answers K.
    K: int = declare(4, 'K', 'number of answers', range=f'int [2, {MAX_K}]')
    #: Prior over the true answer (K probabilities); null = uniform.
    prior: Optional[Any] = None
    #: When wrong, extra probability of picking the distractor omega + 1 (mod K).
    distractor_weight: float = declare(0.0, 'w_d', 'extra pull of the distractor',
                                      range='[0, 1]')
    #: ``assigned``, ``best_of_k`` or ``attack``.
    antagonist: str = declare("assigned", choices=ANTAGONISTS)
    #: Alternatives the antagonist examines (best_of_k).
    k_examine: int = declare(2, 'k', 'alternatives examined', range=f'int [1, {MAX_K - 1}]')
    #: Pr(a passing artifact exists for the true answer).
    q_true: float = declare(1.0, 'q_T', 'availability for the true answer', range='[0, 1]')
    #: Pr(a passing artifact exists for the distractor); null = model.rho.
    distractor_rho: Optional[float] = declare(None, 'ρ_d', 'availability for the distractor',
                                             range='[0, 1]')
    #: The judge's extra bias toward the distractor.
    distractor_bias: float = declare(0.0, 'μ_d', "judge's bias toward the distractor",
                                    range=f'[-{BIG:g}, {BIG:g}]')
    #: The judge's bias mu_j toward each answer by label (K numbers); null = none.
    option_bias: Optional[Any] = None
    #: Loss of answering the distractor (the truth costs 0, other answers 1).
    near_miss_loss: float = declare(1.0, 'ℓ', 'loss of the distractor', range='[0, 1]')
    #: An answer is suboptimal when its loss exceeds this.
    loss_tol: float = declare(0.0, range='[0, 1]')


#: The sections this model adds to the shared schema.
SECTIONS = {"options": OptionsConfig, "equilibrium": EquilibriumConfig}

#: Small example configs, ``(what, config)``: ``antiamp warm`` runs each one (compiling
#: the kernels for the argument types real runs use), and the tests and docs use them.
#: The first is the model's example; ``sweep.axes`` makes one a grid, ``export`` a
#: transcript export.
EXAMPLES = [
    ('options',
     {'model': {'name': 'options'},
      'judge': {'kind': 'logit'},
      'equilibrium': {'payoffs': 'simulated'},
      'run': {'n_instances': 2_000}}),
]

#: Small grids (``sweep.axes``) of this model: the conformance checks
#: (:func:`antiamp.testing.check_model`) and the figure tests run them.
GRIDS = [
    {'model': {'name': 'options'},
     'judge': {'kind': 'logit'},
     'equilibrium': {'payoffs': 'simulated'},
     'run': {'n_instances': 20_000},
     'sweep': {'axes': {'options': {'K': [2, 3, 4]}}}},
    {'model': {'name': 'options'},
     'judge': {'kind': 'logit'},
     'equilibrium': {'payoffs': 'simulated'},
     'run': {'n_instances': 4000},
     'sweep': {'axes': {'options': {'K': [2, 3, 4]}}}},
]
