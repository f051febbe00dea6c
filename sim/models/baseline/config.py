"""The settings of ``model=baseline``: only the shared sections (``model``, ``judge``,
``protocol``, ``welfare``, ``run``, ``export``; :mod:`antiamp.config`)."""

#: The sections this model adds to the shared schema: none.
SECTIONS: dict = {}

#: Small example configs, ``(what, config)``: ``antiamp warm`` runs each one (compiling
#: the kernels for the argument types real runs use), and the tests and docs use them.
#: The first is the model's example; ``sweep.axes`` makes one a grid, ``export`` a
#: transcript export.
EXAMPLES = [
    ('baseline kernel',
     {'model': {'name': 'baseline'}, 'run': {'n_instances': 2_000}}),
    ('baseline grid kernel',
     {'model': {'name': 'baseline'},
      'run': {'n_instances': 2_000},
      'sweep': {'axes': {'model': {'rho': [0.2, 0.4]}}}}),
    ('transcript kernel',
     {'model': {'name': 'baseline'}, 'export': {'n_instances': 10}}),
]

#: Small grids (``sweep.axes``) of this model: the conformance checks
#: (:func:`antiamp.testing.check_model`) and the figure tests run them.
GRIDS = [
    {'model': {'name': 'baseline'},
     'run': {'n_instances': 20_000},
     'sweep': {'axes': {'model': {'rho': [0.1, 0.5, 0.9]}, 'judge': {'b': [0.2, 0.8]}}}},
]
