"""The settings of ``model=messages``: its config sections, each field declared once.

Light on purpose (dataclasses only): the registry reads every model's sections
from here to build the config schema and ``--help`` without loading numpy or
the compiled kernels."""

from __future__ import annotations

from dataclasses import dataclass

from ...config import BIG, declare
from ...config import EquilibriumConfig


MODES = ("exogenous", "strategic")
DECISIONS = ("sample", "favoured")

@dataclass
class MessagesConfig:
    """Evidence plus rhetoric (``messages.*``, with ``extension=messages``)."""

    #: ``exogenous`` (rhetoric drawn by stance truth) or ``strategic`` (chosen at a cost).
    mode: str = declare("exogenous", choices=MODES)
    #: Weight of verifiable evidence.
    kappa_v: float = declare(2.0, 'κ_v', 'weight of evidence', range=f'[0, {BIG:g}]')
    #: Weight of rhetoric.
    kappa_r: float = declare(0.5, 'κ_r', 'weight of rhetoric', range=f'[0, {BIG:g}]')
    #: Exogenous: mean rhetoric of a true stance.
    r_mean_true: float = declare(0.0, 'r_T', 'mean rhetoric of a true stance',
                                range=f'[-{BIG:g}, {BIG:g}]')
    #: Exogenous: mean rhetoric of a false stance.
    r_mean_false: float = declare(0.0, 'r_F', 'mean rhetoric of a false stance',
                                 range=f'[-{BIG:g}, {BIG:g}]')
    #: Exogenous: standard deviation of rhetoric.
    r_sd: float = declare(1.0, 'σ_r', 'rhetoric standard deviation', range=f'(0, {BIG:g}]')
    #: Strategic: number of rhetoric levels in [0, r_max].
    r_levels: int = declare(5, range='int [1, 41]')
    #: Strategic: largest rhetoric level.
    r_max: float = declare(2.0, 'r_max', 'largest rhetoric level', range=f'[0, {BIG:g}]')
    #: Strategic: cost per unit of rhetoric.
    c_r: float = declare(0.05, 'c_r', 'cost of rhetoric', range=f'[0, {BIG:g}]')
    #: Exogenous: the judge's label, ``sample`` (drawn with its probability, the seed's
    #: judge) or ``favoured`` (the answer its probability favours, as a judge who states
    #: a probability and answers with the likelier side).
    decision: str = declare("sample", choices=DECISIONS)
    #: Favoured decision: half-width (log-odds) of the band around even odds where the
    #: judge's recorded probability rounds to 1/2 (0: none).
    decision_band: float = declare(0.0, 'δ', 'recording band around even odds',
                                  range=f'[0, {BIG:g}]')
    #: Favoured decision: Pr(label = the protagonist's answer) inside that band.
    decision_tie: float = declare(0.5, 't', 'endorsement inside the band', range='[0, 1]')


#: The sections this model adds to the shared schema.
SECTIONS = {"messages": MessagesConfig, "equilibrium": EquilibriumConfig}

#: Small example configs, ``(what, config)``: ``antiamp warm`` runs each one (compiling
#: the kernels for the argument types real runs use), and the tests and docs use them.
#: The first is the model's example; ``sweep.axes`` makes one a grid, ``export`` a
#: transcript export.
EXAMPLES = [
    ('messages',
     {'model': {'name': 'messages'},
      'judge': {'kind': 'logit'},
      'equilibrium': {'payoffs': 'simulated'},
      'run': {'n_instances': 2_000}}),
]

#: Small grids (``sweep.axes``) of this model: the conformance checks
#: (:func:`antiamp.testing.check_model`) and the figure tests run them.
GRIDS = [
    {'model': {'name': 'messages'},
     'judge': {'kind': 'logit'},
     'equilibrium': {'payoffs': 'simulated'},
     'run': {'n_instances': 20_000},
     'sweep': {'axes': {'messages': {'r_mean_false': [0.0, 1.0]},
                        'model': {'rho': [0.2, 0.6]}}}},
    {'model': {'name': 'messages'},
     'judge': {'kind': 'logit'},
     'equilibrium': {'payoffs': 'simulated'},
     'run': {'n_instances': 4000},
     'sweep': {'axes': {'messages': {'r_mean_false': [0.0, 1.0]},
                        'model': {'rho': [0.2, 0.6]}}}},
]
