"""The settings of ``model=equilibrium``: the evidence game's solver settings
(``equilibrium.*``), shared with the models that solve for presentation strategies."""

from __future__ import annotations

from ...config import EquilibriumConfig

#: The sections this model adds to the shared schema.
SECTIONS = {"equilibrium": EquilibriumConfig}

#: Small example configs, ``(what, config)``: ``antiamp warm`` runs each one (compiling
#: the kernels for the argument types real runs use), and the tests and docs use them.
#: The first is the model's example; ``sweep.axes`` makes one a grid, ``export`` a
#: transcript export.
EXAMPLES = [
    ('evidence game',
     {'model': {'name': 'equilibrium'}}),
]

#: Small grids (``sweep.axes``) of this model: the conformance checks
#: (:func:`antiamp.testing.check_model`) and the figure tests run them.
GRIDS = [
    {'model': {'name': 'equilibrium', 'c_e': 0.45, 'p': 0.6},
     'equilibrium': {'payoffs': 'simulated'},
     'run': {'n_instances': 20_000},
     'sweep': {'axes': {'judge': {'b': [0.3, 0.8]}, 'model': {'rho': [0.2, 0.5, 0.8]}}}},
    {'model': {'name': 'equilibrium', 'c_e': 0.45, 'p': 0.6},
     'sweep': {'axes': {'judge': {'b': [0.3, 0.8]}, 'model': {'rho': [0.2, 0.5, 0.8]}}}},
]
