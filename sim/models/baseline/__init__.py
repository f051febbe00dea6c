"""The seed-000 persuasion game (sections 3-4): consultancy and debate on the same
instances, every metric with its closed form.  Fields: ``model.*``, ``judge.*``, ``protocol.*``,
``welfare.*``, ``run.*`` (:mod:`antiamp.config`).

The package is the model: ``config`` (its settings, light: what the registry reads
to build the schema and ``--help``), ``core`` (its numerics), ``grid`` (its fused
grids: kernel inputs, kernel and variables for the sweep engine), ``model``
(``MODEL``, the registry entry, with its table and figures; loaded on first use).
"""
