"""The settings of ``model=signals``: its config sections, each field declared once.

Light on purpose (dataclasses only): the registry reads every model's sections
from here to build the config schema and ``--help`` without loading numpy or
the compiled kernels."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ...config import BIG, declare
from ...config import EquilibriumConfig


ETA_MODES = ("absolute", "fraction")

@dataclass
class SignalsConfig:
    """Correlated signals (``signals.*``); at the defaults the baseline is recovered."""

    #: Protagonist accuracy Pr(s_P = omega); null = model.p.
    p_P: Optional[float] = declare(None, 'p_P', 'protagonist signal accuracy', range='[0, 1]')
    #: Antagonist accuracy Pr(s_A = omega); null = p_P.
    p_A: Optional[float] = declare(None, 'p_A', 'antagonist signal accuracy', range='[0, 1]')
    #: Correlation of the two correctness indicators (see eta_mode).
    eta: float = declare(0.0, 'η', "correlation of the senders' errors", range='[-1, 1]')
    #: ``absolute``: eta is the correlation and must be feasible for (p_P, p_A);
    #: ``fraction``: eta in [-1, 1] is the fraction of the feasible maximum (eta >= 0)
    #: or minimum (eta < 0), so every accuracy pair accepts it.
    eta_mode: str = declare("absolute", choices=ETA_MODES)
    #: Full table Pr(s_P, s_A | omega) as [omega][s_P][s_A]; overrides p_P, p_A, eta.
    joint: Optional[Any] = None
    #: Search efficacy: availability for a true stance its sender does not believe.
    phi: float = declare(1.0, 'φ', 'search efficacy', range='[0, 1]')
    #: Availability for a false stance its sender does not believe; null = model.rho.
    rho_unbelieved: Optional[float] = declare(
        None, 'ρ_u', 'availability of an unbelieved false stance', range='[0, 1]')
    #: Full availability table [[true & believed, true & not], [false & believed,
    #: false & not]]; overrides phi, rho_unbelieved and model.rho.
    avail: Optional[Any] = None
    #: Weight of rhetoric in a logit judge (0 = no rhetoric): sigma(lam (mu + kappa
    #: (e_P - e_A) + kappa_r (r_P - r_A))).
    kappa_r: float = declare(0.0, 'κ_r', 'weight of rhetoric', range=f'[0, {BIG:g}]')
    #: How much weaker a sender's rhetoric is when it does not believe its stance.
    r_gap: float = declare(0.0, 'Δr', 'rhetoric gap of an unbelieved stance',
                          range=f'[-{BIG:g}, {BIG:g}]')
    #: Standard deviation of rhetoric.
    r_sd: float = declare(1.0, 'σ_r', 'rhetoric standard deviation', range=f'(0, {BIG:g}]')


@dataclass
class EffortConfig:
    """Endogenous judge attention (``effort.*``); off unless ``enabled``."""

    enabled: bool = False
    #: Largest attention level.
    t_max: float = declare(1.0, 't_max', 'largest attention', range=f'(0, {BIG:g}]')
    #: Grid points on [0, t_max] used to bracket equilibria.
    n_grid: int = declare(41, range='int [3, 10001]')
    #: Continuous attention with grid bracketing (true) or attention restricted to the grid.
    refine: bool = True
    #: Exogenous attention: null = the judge chooses; a value fixes t.
    t_fixed: Optional[float] = declare(None, 't', 'fixed attention', range=f'[0, {BIG:g}]')
    #: Attention cost scale c_J in c_J load t^gamma.
    c_J: float = declare(0.1, 'c_J', 'judge attention cost', range=f'[0, {BIG:g}]')
    #: Attention cost exponent gamma >= 1.
    gamma: float = declare(2.0, 'γ', 'attention cost exponent', range=f'[1, {BIG:g}]',
                         why=' (a convex cost)')
    #: Debate's attention-cost multiplier (consultancy's is 1).
    load: float = declare(1.0, 'L', 'debate attention load', range=f'(0, {BIG:g}]')
    #: lam(t) = judge.lam (1 + lam_gain t) (logit judge).
    lam_gain: float = declare(0.0, 'g_λ', 'attention gain of λ', range=f'[0, {BIG:g}]')
    #: kappa(t) = judge.kappa (1 + kappa_gain t) (logit judge).
    kappa_gain: float = declare(0.0, 'g_κ', 'attention gain of κ', range=f'[0, {BIG:g}]')
    #: Largest probability of checking and rejecting a false-side artifact.
    v_max: float = declare(0.0, 'v_max', 'largest check probability', range='[0, 1]')
    #: Rate of v(t) = v_max (1 - exp(-v_rate t)).
    v_rate: float = declare(3.0, 'v_rate', 'check-probability rate', range=f'[0, {BIG:g}]')


#: The sections this model adds to the shared schema.
SECTIONS = {"signals": SignalsConfig, "effort": EffortConfig, "equilibrium": EquilibriumConfig}

#: Small example configs, ``(what, config)``: ``antiamp warm`` runs each one (compiling
#: the kernels for the argument types real runs use), and the tests and docs use them.
#: The first is the model's example; ``sweep.axes`` makes one a grid, ``export`` a
#: transcript export.
EXAMPLES = [
    ('correlated signals',
     {'model': {'name': 'signals'},
      'equilibrium': {'payoffs': 'simulated'},
      'run': {'n_instances': 2_000}}),
    ('correlated signals grid',
     {'model': {'name': 'signals'},
      'equilibrium': {'payoffs': 'simulated'},
      'run': {'n_instances': 2_000},
      'sweep': {'axes': {'signals': {'eta': [0.0, 0.2]}}}}),
]

#: Small grids (``sweep.axes``) of this model: the conformance checks
#: (:func:`antiamp.testing.check_model`) and the figure tests run them.
GRIDS = [
    {'model': {'name': 'signals', 'c_e': 0.4},
     'judge': {'b': 0.7},
     'equilibrium': {'payoffs': 'simulated'},
     'run': {'n_instances': 20_000},
     'signals': {'phi': 0.3},
     'sweep': {'axes': {'signals': {'eta': [0.0, 0.3, 0.6]}, 'model': {'p': [0.7, 0.9]}}}},
    {'model': {'name': 'signals', 'c_e': 0.4},
     'judge': {'b': 0.7},
     'equilibrium': {'payoffs': 'simulated'},
     'run': {'n_instances': 4000},
     'sweep': {'axes': {'signals': {'eta': [0.0, 0.3]}, 'model': {'p': [0.7, 0.9]}}}},
]
