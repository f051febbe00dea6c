"""Adaptive re-deliberation of fact-check verdicts (seed 003): FactHarbor's fixed
spread multiplier against a conditional re-reconciliation and Climinator's adaptive
rounds.  Adds ``redeliberation.*``; model.rho is the rate at which the false side's
evidence passes verification; the judge (``judge.*``) is the reconciler (judge=logit
judge.mu=1.5 makes it defer to the advocates).

The package is the model: ``config`` (its settings, light: what the registry reads
to build the schema and ``--help``), ``core`` (its numerics), ``model`` (``MODEL``,
the registry entry, with its table and figures; loaded on first use).
"""
