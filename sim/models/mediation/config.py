"""The settings of ``model=mediation``: its config sections, each field declared once.

Light on purpose (dataclasses only): the registry reads every model's sections
from here to build the config schema and ``--help`` without loading numpy or
the compiled kernels."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ...config import BIG, declare


@dataclass
class MediationConfig:
    """Provenance-backed pluralistic mediation (seed 002, FOAM) (``mediation.*``, with
    ``model=mediation``): citations, the critic-evaluator-proposer loop, the synthesis
    that keeps or erases dissent, and escalation to a human."""

    #: Citations per case (M).
    citations: int = declare(8, 'M', 'citations per case', range='int [1, 10000]')
    #: Citation generator: ``foam`` (sentence-level provenance), ``human`` (expert),
    #: ``zeroshot`` (zero-shot AI), each calibrated to the seed's Tables 1 and 2, or
    #: ``custom`` (the five shares below).
    source: str = declare("foam", 'source', 'citation generator')
    #: Custom shares of citation classes: [exact and relevant, exact but irrelevant
    #: (a wrong pointer), partial, paraphrase, fabricated]; used with source=custom.
    classes: Optional[Any] = None
    #: Probability that a relevance check catches a verbatim-but-irrelevant citation.
    relevance: float = declare(0.0, 'v_r', 'relevance check', range='[0, 1]')
    #: Mean material flaws of a proposal before mediation (Poisson F_0).
    flaws: float = declare(2.0, 'F_0', 'initial material flaws',
                           range='[0, 50]', why=' (mean flaws per case)')
    #: Per iteration, the critic finds a remaining flaw with probability d ...
    detect: float = declare(0.6, 'd', 'critic finds a flaw', range='[0, 1]')
    #: ... and the proposer repairs a found flaw with probability r.
    repair: float = declare(0.7, 'r', 'proposer repairs a found flaw', range='[0, 1]')
    #: Critic-evaluator-proposer iterations (k).
    iterations: int = declare(3, 'k', 'critic-evaluator-proposer iterations', range='int [0, 1000]')
    #: Per iteration, a false alarm whose accepted "repair" breaks a sound part (a new flaw).
    false_alarm: float = declare(0.05, 'f_a', 'false alarm breaks a sound part', range='[0, 1]')
    #: Perspectives whose dissent the synthesis sees.
    perspectives: int = declare(3, 'P', 'perspectives', range='int [1, 64]')
    #: A perspective dissents on a residual flaw with probability s per flaw.
    dissent: float = declare(0.5, 's', 'dissent per residual flaw', range='[0, 1]')
    #: A perspective dissents on a sound recommendation (false dissent).
    false_dissent: float = declare(0.05, 'f_d', 'false dissent', range='[0, 1]')
    #: A monolithic summary erases each dissent with this probability (a dissent memo keeps it).
    erase: float = declare(0.8, 'e', 'summary erases a dissent', range='[0, 1]')
    #: Escalate to a human when at least this many dissents survive the synthesis.
    escalate_at: int = declare(1, 'T', 'dissents that escalate', range='int [1, 64]')
    #: The human's probability of deciding an escalated case correctly.
    human_accuracy: float = declare(0.9, 'h', 'human accuracy', range='[0, 1]')
    #: Cost of one human review, in model calls.
    human_cost: float = declare(20.0, 'c_h', 'human review cost', range=f'[0, {BIG:g}]')


#: The sections this model adds to the shared schema.
SECTIONS = {"mediation": MediationConfig}

#: Small example configs, ``(what, config)``: ``antiamp warm`` runs each one (compiling
#: the kernels for the argument types real runs use), and the tests and docs use them.
#: The first is the model's example; ``sweep.axes`` makes one a grid, ``export`` a
#: transcript export.
EXAMPLES = [
    ('pluralistic mediation',
     {'model': {'name': 'mediation'}, 'run': {'n_instances': 2_000}}),
]

#: Small grids (``sweep.axes``) of this model: the conformance checks
#: (:func:`antiamp.testing.check_model`) and the figure tests run them.
GRIDS = [
    {'model': {'name': 'mediation'},
     'run': {'n_instances': 4000},
     'sweep': {'axes': {'mediation': {'iterations': [0, 2, 4], 'escalate_at': [1, 2]}}}},
    {'model': {'name': 'mediation'},
     'run': {'n_instances': 4000},
     'sweep': {'axes': {'mediation': {'source': ['foam', 'human']}}}},
]
