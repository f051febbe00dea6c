"""Evidence portfolios: budgets of items, verification, cross-examination (seed 000,
section 5).  Adds ``portfolio.*``, equilibrium.payoffs.

The package is the model: ``config`` (its settings, light: what the registry reads
to build the schema and ``--help``), ``core`` (its numerics), ``model`` (``MODEL``,
the registry entry, with its table and figures; loaded on first use).
"""
