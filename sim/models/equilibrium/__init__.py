"""Equilibria of the evidence-presentation game (seed 000, sections 3-4), with
certificates.  Adds ``equilibrium.*`` (method, payoffs, tol, starts).

The package is the model: ``config`` (its settings, light: what the registry reads
to build the schema and ``--help``), ``core`` (its numerics), ``model`` (``MODEL``,
the registry entry, with its table and figures; loaded on first use).
"""
