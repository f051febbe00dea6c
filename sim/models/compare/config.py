"""The settings of ``model=compare``: its config sections, each field declared once.

Light on purpose (dataclasses only): the registry reads every model's sections
from here to build the config schema and ``--help`` without loading numpy or
the compiled kernels."""

from __future__ import annotations

from dataclasses import dataclass

from ...config import declare


@dataclass
class CompareConfig:
    """Every protocol on one task (``compare.*``, with ``model=compare``): the model's
    answer is right with probability model.p, the wrong side's evidence passes
    verification with probability model.rho, one logit judge (``judge.*``); the other
    models' sections (``colmad.*``, ``mediation.*``, ``redeliberation.*``) set what only their
    protocol has (rounds, rhetoric, the critique loop, the re-deliberation policy)."""

    #: Judges in each jury of the jury protocols (majority; judge.jury_tie on a tie).
    jury_size: int = declare(5, 'n', 'jurors per jury', range='int [1, 1001]')


#: The config group options this model chooses unless the command line chooses
#: another: its protocols' judges are logit judges.
GROUPS = {"judge": "logit"}

#: The sections this model adds to the shared schema.
SECTIONS = {"compare": CompareConfig}

#: Small example configs, ``(what, config)``: ``antiamp warm`` runs each one, and the
#: tests and docs use them.  The first is the model's example.
EXAMPLES = [
    ('every protocol on one task',
     {'model': {'name': 'compare'}, 'judge': {'kind': 'logit'}, 'run': {'n_instances': 2_000}}),
]

#: Small grids (``sweep.axes``) of this model: the conformance checks
#: (:func:`antiamp.testing.check_model`) and the figure tests run them.
GRIDS = [
    {'model': {'name': 'compare'},
     'judge': {'kind': 'logit'},
     'run': {'n_instances': 4000},
     'sweep': {'axes': {'model': {'rho': [0.1, 0.3]}, 'compare': {'jury_size': [3, 5]}}}},
    {'model': {'name': 'compare'},
     'judge': {'kind': 'logit'},
     'run': {'n_instances': 1},
     'sweep': {'axes': {'compare': {'jury_size': [1, 3, 5]}}}},
]
