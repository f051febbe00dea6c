"""The settings of ``model=panel``: its config sections, each field declared once.

Light on purpose (dataclasses only): the registry reads every model's sections
from here to build the config schema and ``--help`` without loading numpy or
the compiled kernels."""

from __future__ import annotations

from dataclasses import dataclass

from ...config import BIG, declare
from ...config import EquilibriumConfig


RULES = ("majority", "supermajority", "unanimity", "confidence")
METHODS = ("quadrature", "monte_carlo")
MAX_PANELS = 1 << 20

@dataclass
class PanelConfig:
    """A panel of judges (``panel.*``, with ``extension=panel``)."""

    #: Number of judges.
    size: int = declare(5, 'n', 'panel size', range='int [1, 501]')
    #: ``majority``, ``supermajority``, ``unanimity`` or ``confidence``.
    rule: str = declare("majority", choices=RULES)
    #: Supermajority: fraction of the panel needed to endorse the protagonist.
    quota: float = declare(2 / 3, 'q', 'supermajority quota', range='(0, 1]')
    #: Even majority panels: Pr(y = a) on a tied vote.
    tie: float = declare(0.5, 'tie', 'tied-vote rule', range='[0, 1]')
    #: Unanimity: Pr(y = a) when the panel is split.
    default: float = declare(0.0, 'd', 'split-unanimity endorsement', range='[0, 1]')
    #: Latent intra-class correlation of the judges (shared blind spot), in [0, 1].
    icc: float = declare(0.0, 'icc', "judges' latent correlation", range='[0, 1]')
    #: Standard deviation of the judges' own biases (probit scale).
    bias_sd: float = declare(0.0, 'σ_β', 'spread of judge biases', range=f'[0, {BIG:g}]')
    #: How the panel's tables are computed: ``quadrature`` (exact: the biases and the
    #: judges' noises integrated out in closed form, the shared latent by adaptive
    #: quadrature) or ``monte_carlo`` (the compiled kernel over ``n_panels`` panels).
    method: str = declare("quadrature", choices=METHODS)
    #: Monte Carlo panels per table with ``method=monte_carlo`` (rounded up to blocks
    #: of 256); exact when icc and bias_sd are 0.
    n_panels: int = declare(16384, range=f'int [1, {MAX_PANELS}]')


#: The sections this model adds to the shared schema.
SECTIONS = {"panel": PanelConfig, "equilibrium": EquilibriumConfig}

#: Small example configs, ``(what, config)``: ``antiamp warm`` runs each one (compiling
#: the kernels for the argument types real runs use), and the tests and docs use them.
#: The first is the model's example; ``sweep.axes`` makes one a grid, ``export`` a
#: transcript export.
EXAMPLES = [
    ('panels',
     {'model': {'name': 'panel'},
      'panel': {'icc': 0.2, 'n_panels': 256, 'method': 'monte_carlo'},
      'equilibrium': {'payoffs': 'simulated'},
      'run': {'n_instances': 2_000}}),
]

#: Small grids (``sweep.axes``) of this model: the conformance checks
#: (:func:`antiamp.testing.check_model`) and the figure tests run them.
GRIDS = [
    {'model': {'name': 'panel'},
     'equilibrium': {'payoffs': 'simulated'},
     'run': {'n_instances': 20_000},
     'sweep': {'axes': {'panel': {'size': [1, 3, 5]}, 'judge': {'b': [0.3, 0.7]}}}},
    {'model': {'name': 'panel'},
     'equilibrium': {'payoffs': 'simulated'},
     'run': {'n_instances': 4000},
     'panel': {'n_panels': 256},
     'sweep': {'axes': {'panel': {'size': [1, 3, 5]}, 'judge': {'b': [0.3, 0.7]}}}},
]
