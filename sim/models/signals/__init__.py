"""Correlated signals, shared blind spots and endogenous judge attention (seed 000,
section 5).  Adds ``signals.*``, ``effort.*``, ``equilibrium.*``.

The package is the model: ``config`` (its settings, light: what the registry reads
to build the schema and ``--help``), ``core`` (its numerics), ``model`` (``MODEL``,
the registry entry, with its table and figures; loaded on first use).
"""
