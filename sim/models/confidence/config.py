"""The settings of ``model=confidence``: its config sections, each field declared once.

Light on purpose (dataclasses only): the registry reads every model's sections
from here to build the config schema and ``--help`` without loading numpy or
the compiled kernels."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ...config import BIG, declare


@dataclass
class ConfidenceConfig:
    """Stated confidence in multi-round debate (``confidence.*``, with ``model=confidence``)."""

    #: Condition of the bets data whose fitted report model the debaters follow
    #: (shipped: cross_model, self_debate, informed_self, public_bets, self_redteam_debate).
    condition: str = declare("cross_model", 'condition', 'debate condition')
    #: Condition of the antagonist's reports in debate; null = the same condition.
    antagonist: Optional[str] = declare(None, 'condition_A', "antagonist's condition")
    #: Bets CSV (debate, condition, side, round, bet); null = the shipped published bets.
    data: Optional[str] = None
    #: Share of the outcome's variance the transcript reveals by the last round (0, 1).
    info: float = declare(0.5, 'π_R', 'share of the outcome the transcript reveals',
                         range='(0, 1)')
    #: Judge's weight on stated confidence: kappa_c (logit c_P - logit c_A) in the logit judge.
    kappa_c: float = declare(0.0, 'κ_c', 'weight of stated confidence', range=f'[-{BIG:g}, {BIG:g}]')
    #: Latent correlation of a jury's judges (judge.jury_size > 1); 0 = independent judges.
    icc: float = declare(0.0, 'icc', 'jury latent correlation', range='[0, 1)')
    #: Votes that calibrate icc: a histogram, debates by votes for one side (votes_judges +
    #: 1 counts) or by dissenting judges (votes_judges // 2 + 1 counts); or per-judge votes
    #: (a list per debate of its judges' votes, 1 proposition, 0 opposition, null none; or
    #: a CSV path with columns debate, judge, vote), which also fit each judge's lean;
    #: null = use icc.
    votes: Optional[Any] = None
    #: Whose leans the oversight jury has when confidence.votes gives per-judge votes:
    #: relative (each judge's fitted lean around the panel), absolute (plus the panel's
    #: mean lean toward the proposition), none (interchangeable judges: icc only).  The
    #: jury seats judge.jury_size of those judges at random (all when it equals
    #: votes_judges), and the protagonist holds either side with probability 1/2.
    jury_leans: str = declare("relative", choices=("relative", "absolute", "none"))
    #: Judges per debate in the vote histogram.
    votes_judges: int = declare(6, range='int [1, 1001]')
    #: Override of the fitted mean report by round (0-100); null = fitted.
    intercepts: Optional[Any] = None
    #: Override of the fitted weight on belief w; null = fitted.
    weight: Optional[float] = declare(None, 'w', 'weight of reports on belief',
                                      range=f'[-{BIG:g}, {BIG:g}]')
    #: Override of the fitted side bias beta (calibration only; oversight uses Phi^-1(p)).
    side_bias: Optional[float] = declare(None, range=f'[-{BIG:g}, {BIG:g}]')
    #: Override of the fitted sd of the debate-level component shared by both sides.
    shared_sd: Optional[float] = declare(None, 'σ_u', 'shared report component sd',
                                         range=f'[0, {BIG:g}]')
    #: Override of the fitted sd of a side's persistent disposition.
    side_sd: Optional[float] = declare(None, 'σ_v', 'side disposition sd', range=f'[0, {BIG:g}]')
    #: Override of the fitted sd of per-report noise.
    noise_sd: Optional[float] = declare(None, 'σ_ε', 'report noise sd', range=f'[0, {BIG:g}]')
    #: Replicated data sets of the posterior predictive check (0 = no check).
    ppc_draws: int = declare(200, range='int [0, 100000]')


#: The config group options this model chooses unless the command line chooses
#: another (``judge=tiebreak`` on the command line still wins, and is refused with
#: the reason): its own defaults run.
GROUPS = {"judge": "logit"}

#: The sections this model adds to the shared schema.
SECTIONS = {"confidence": ConfidenceConfig}

#: Small example configs, ``(what, config)``: ``antiamp warm`` runs each one (compiling
#: the kernels for the argument types real runs use), and the tests and docs use them.
#: The first is the model's example; ``sweep.axes`` makes one a grid, ``export`` a
#: transcript export.
EXAMPLES = [
    ('stated confidence',
     {'model': {'name': 'confidence'},
      'judge': {'kind': 'logit'},
      'confidence': {'ppc_draws': 0},
      'run': {'n_instances': 2_000}}),
    ('stated confidence, shared-latent jury (tabulated)',
     {'model': {'name': 'confidence'},
      'judge': {'kind': 'logit', 'jury_size': 3},
      'confidence': {'ppc_draws': 0, 'icc': 0.3},
      'run': {'n_instances': 40_000}}),
]

#: Small grids (``sweep.axes``) of this model: the conformance checks
#: (:func:`antiamp.testing.check_model`) and the figure tests run them.
GRIDS = [
    {'model': {'name': 'confidence'},
     'judge': {'kind': 'logit'},
     'run': {'n_instances': 4000},
     'confidence': {'ppc_draws': 0},
     'sweep': {'axes': {'confidence': {'condition': ['cross_model', 'public_bets'],
                                       'kappa_c': [0.0, 1.0]}}}},
]
