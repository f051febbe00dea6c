"""Closed-loop oversight: the labels oversight endorses train the model, round after
round (seed 000, sections 1-2 and 7).  Adds ``loop.*``; model.p sets e_0 = 1 - p and
model.rho the starting fabrication rate.

The package is the model: ``config`` (its settings, light: what the registry reads
to build the schema and ``--help``), ``core`` (its numerics), ``model`` (``MODEL``,
the registry entry, with its table and figures; loaded on first use).
"""
