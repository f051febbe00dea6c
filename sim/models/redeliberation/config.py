"""The settings of ``model=redeliberation``: its config sections, each field declared once.

Light on purpose (dataclasses only): the registry reads every model's sections
from here to build the config schema and ``--help`` without loading numpy or
the compiled kernels."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ...config import declare


#: Bound of every field in points of the verdicts' 0-100 scale (margins, spreads,
#: sds, bias): twice the scale's width (a value of 1e308 means nothing and breaks the sums).
MAX_POINTS = 200.0

#: The most forced extra rounds a claim may get (``redeliberation.forced_rounds``).
MAX_FORCED_ROUNDS = 100


@dataclass
class RedeliberationConfig:
    """Adaptive re-deliberation of fact-check verdicts (seed 003) (``redeliberation.*``,
    with ``model=redeliberation``).  Verdicts are truth percentages (0-100); the
    advocate's runs share the claim's evidence-pool bias and add run noise."""

    #: Share of contested claims (the rest are clear).
    contested: float = declare(0.5, 'q', 'share of contested claims', range='[0, 1]')
    #: Share of true claims.
    p_true: float = declare(0.5, 'π', 'share of true claims', range='[0, 1]')
    #: Distance of a clear claim's evidence from 50, toward the truth (percentage points).
    margin_clear: float = declare(25.0, 'D_clear', "clear claims' evidence margin",
                                 range=f'[0, {MAX_POINTS:g}]', why=' (points)')
    #: Distance of a contested claim's evidence from 50, toward the truth (points).
    margin_contested: float = declare(6.0, 'D_cont', "contested claims' evidence margin",
                                     range=f'[0, {MAX_POINTS:g}]', why=' (points)')
    #: Run-to-run noise sd of a clear claim's verdict (points).
    noise_clear: float = declare(3.0, 'σ_clear', "clear claims' run noise sd",
                                range=f'(0, {MAX_POINTS:g}]', why=' (a run-to-run noise sd, points)')
    #: Run-to-run noise sd of a contested claim's verdict (points).
    noise_contested: float = declare(14.0, 'σ_cont', "contested claims' run noise sd",
                                    range=f'(0, {MAX_POINTS:g}]', why=' (a run-to-run noise sd, points)')
    #: Mean evidence-pool bias toward "true", shared by every run of a claim (points).
    bias: float = declare(0.0, 'β', 'mean evidence-pool bias',
                         range=f'[-{MAX_POINTS:g}, {MAX_POINTS:g}]', why=' (points)')
    #: Sd over claims of the evidence-pool bias (points).
    bias_sd: float = declare(8.0, 'σ_β', 'evidence-pool bias sd',
                             range=f'[0, {MAX_POINTS:g}]', why=' (points)')
    #: Advocate runs per pass: the advocate and its self-consistency samples (k).
    runs: int = declare(3, 'k', 'advocate runs per pass', range='int [2, 64]',
                       why=' (the advocate and at least one self-consistency sample)')
    #: Probability that the true side's evidence is found (the challenger's contrarian
    #: evidence when the advocate is wrong); the false side's passes with model.rho.
    evidence: float = declare(0.8, 'x', "true side's evidence found", range='[0, 1]')
    #: Per extra round (re-reconciliation or adaptive round): probability that the
    #: truth is established (the hazard h).
    hazard: float = declare(0.5, 'h', 'hazard: truth established per extra round',
                           range='[0, 1]')
    #: Most extra rounds of the adaptive policy (Climinator: 18).
    max_rounds: int = declare(18, 'R_max', 'most adaptive rounds', range='int [0, 1000]')
    #: Spread bands' upper edges (points); null = the seed's 5, 12, 20.
    bands: Optional[Any] = None
    #: Confidence multiplier per band (one more than bands); null = 1.0, 0.9, 0.7, 0.4.
    multipliers: Optional[Any] = None
    #: Adjusted confidence below which a verdict is reported INSUFFICIENT (0-100).
    insufficient_below: float = declare(40.0, 'c_min', 'INSUFFICIENT threshold',
                                       range='[0, 100]')
    #: Re-reconciliation runs when the spread exceeds this (points) and contrarian
    #: evidence is present.
    trigger_spread: float = declare(20.0, 'S_trig', 're-reconciliation spread trigger',
                                   range=f'[0, {MAX_POINTS:g}]', why=' (points)')
    #: Model calls of the fixed pipeline per claim.
    base_calls: int = declare(7, range='int [0, 10000]')
    #: Model calls per adaptive round (the k advocate runs and the mediator).
    round_calls: int = declare(4, 'calls_r', 'calls per adaptive round', range='int [0, 10000]')
    #: Extra rounds of the forced-rounds accuracy series (every claim runs them all).
    forced_rounds: int = declare(5, range=f'int [0, {MAX_FORCED_ROUNDS}]')


#: The sections this model adds to the shared schema.
SECTIONS = {"redeliberation": RedeliberationConfig}

#: Small example configs, ``(what, config)``: ``antiamp warm`` runs each one (compiling
#: the kernels for the argument types real runs use), and the tests and docs use them.
#: The first is the model's example; ``sweep.axes`` makes one a grid, ``export`` a
#: transcript export.
EXAMPLES = [
    ('re-deliberation',
     {'model': {'name': 'redeliberation'}, 'run': {'n_instances': 2_000}}),
]

#: Small grids (``sweep.axes``) of this model: the conformance checks
#: (:func:`antiamp.testing.check_model`) and the figure tests run them.
GRIDS = [
    {'model': {'name': 'redeliberation'},
     'judge': {'kind': 'logit'},
     'run': {'n_instances': 4000},
     'sweep': {'axes': {'redeliberation': {'runs': [2, 3, 5], 'hazard': [0.2, 0.6]}}}},
]
