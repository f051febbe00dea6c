"""Verifiable evidence plus rhetoric, exogenous or strategic (seed 000, section 5).
Needs judge=logit.  Adds ``messages.*``, equilibrium.payoffs.

The package is the model: ``config`` (its settings, light: what the registry reads
to build the schema and ``--help``), ``core`` (its numerics), ``model`` (``MODEL``,
the registry entry, with its table and figures; loaded on first use).
"""
