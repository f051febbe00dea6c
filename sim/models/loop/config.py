"""The settings of ``model=loop``: its config sections, each field declared once.

Light on purpose (dataclasses only): the registry reads every model's sections
from here to build the config schema and ``--help`` without loading numpy or
the compiled kernels."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ...config import declare

FLAGS = ("none", "no_evidence", "uncertain")
LEARNERS = ("calibrated", "majority")
ESCALATE_TO = ("debate", "jury")


@dataclass
class LoopConfig:
    """Closed-loop oversight (``loop.*``, with ``model=loop``): endorsed labels train the model."""

    #: Rounds T of answer -> oversight -> training.
    rounds: int = declare(40, 'T', 'rounds of the loop', range='int [1, 100000]')
    #: Instances per round and path (per instance type for the majority learner).
    batch: int = declare(1000, 'N', 'cases per round', range='int [1, 100000000]')
    #: Independent simulated paths (0: no simulation, the exact and mean-field paths only).
    paths: int = declare(200, range='int [0, 1000000]')
    #: Share m of each round's training targets that are the labels oversight endorsed.
    m: float = declare(0.5, 'm', 'share of endorsed training targets', range='[0, 1]')
    #: Error e_h of the other targets (ground truth or fresh data).
    e_h: float = declare(0.05, 'e_h', 'error of the other targets', range='[0, 1]')
    #: Starting error e_0 of the model; null = 1 - model.p.
    e_0: Optional[float] = declare(None, 'e_0', 'starting error', range='[0, 1]')
    #: Learning rate: the share of the way the error moves toward its targets' each round
    #: (majority learner: the probability that a type updates in a round).
    rate: float = declare(1.0, 'r', 'learning rate', range='[0, 1]')
    #: ``calibrated`` (error tracks the targets' error rate) or ``majority`` (MAP: each
    #: instance type takes the majority of its targets).
    learner: str = declare("calibrated", choices=LEARNERS)
    #: Instance types of the majority learner.
    types: int = declare(100, 'K', 'instance types', range='int [1, 100000]')
    #: The calibrated learner's own drift delta: its error is its targets' plus delta.
    bias: float = declare(0.0, 'δ', 'learner drift', range='[-1, 1]')
    #: Persuasive error rewarded: rho_{t+1} = rho_t + gain R_t (1 - rho_t), R_t the share
    #: of overseen cases whose wrong answer was endorsed.
    rho_gain: float = declare(0.0, 'g_ρ', 'gain of ρ from ratified mistakes', range='[0, 1]')
    #: Escalation policy: share of cases sent to debate at random (an audit).
    audit: float = declare(0.1, 'a', 'audit rate', range='[0, 1]')
    #: Escalation policy's flag: ``none``, ``no_evidence`` (consultancy shows no
    #: evidence) or ``uncertain`` (the consultancy judge endorses with a probability
    #: within flag_band of 1/2).
    flag: str = declare("no_evidence", choices=FLAGS)
    #: Half-width of the ``uncertain`` flag's band around 1/2.
    flag_band: float = declare(0.25, range='[0, 0.5]')
    #: Most cases that may be escalated, as a share of the overseen cases (challenger budget).
    budget: float = declare(1.0, 'B', 'challenger budget', range='(0, 1]')
    #: Where escalated cases go: ``debate`` (the configured judge) or ``jury`` (a
    #: consultancy judged by a majority of escalate_jury such judges).
    escalate_to: str = declare("debate", choices=ESCALATE_TO)
    #: Judges of the escalation jury (escalate_to=jury).
    escalate_jury: int = declare(5, 'n_e', 'judges of the escalation jury',
                                 range='int [1, 101]')
    #: Long-run error target of the cheapest escalation policy; null = no design.
    target: Optional[float] = declare(None, 'e*', 'long-run error target', range='(0, 1)')


#: The sections this model adds to the shared schema.
SECTIONS = {"loop": LoopConfig}

#: Small example configs, ``(what, config)``: ``antiamp warm`` runs each one (compiling
#: the kernels for the argument types real runs use), and the tests and docs use them.
#: The first is the model's example; ``sweep.axes`` makes one a grid, ``export`` a
#: transcript export.
EXAMPLES = [
    ('closed loop',
     {'model': {'name': 'loop'}, 'loop': {'rounds': 2, 'paths': 2, 'batch': 10}}),
    ('closed loop, majority learner',
     {'model': {'name': 'loop'},
      'loop': {'rounds': 2, 'paths': 2, 'batch': 3, 'types': 3, 'learner': 'majority'}}),
]

#: Small grids (``sweep.axes``) of this model: the conformance checks
#: (:func:`antiamp.testing.check_model`) and the figure tests run them.
GRIDS = [
    {'model': {'name': 'loop'},
     'loop': {'rounds': 5, 'paths': 12, 'batch': 200},
     'sweep': {'axes': {'model': {'rho': [0.2, 0.6]}, 'loop': {'m': [0.3, 0.9]}}}},
    {'model': {'name': 'loop'},
     'judge': {'kind': 'logit'},
     'loop': {'paths': 0},
     'sweep': {'axes': {'model': {'rho': [0.2, 0.5, 0.8]},
                        'judge': {'kappa': [0.5, 1.5, 3.0]}}}},
    {'model': {'name': 'loop'},
     'loop': {'paths': 4, 'rounds': 4, 'batch': 50},
     'sweep': {'axes': {'loop': {'rounds': [2, 3, 4]}}}},
]
