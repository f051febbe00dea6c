"""Stated confidence in multi-round debate (seed 004): debaters' confidence reports
fitted to the published bets, and logit judges (judge=logit) that weigh them. Adds
confidence.*; model.p is the protagonist's accuracy, model.rho the false side's
evidence rate.

The package is the model: ``config`` (its settings, light: what the registry reads
to build the schema and ``--help``), ``core`` (its numerics), ``model`` (``MODEL``,
the registry entry, with its table and figures; loaded on first use).
"""
