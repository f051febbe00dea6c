"""Provenance-backed pluralistic mediation (seed 002, FOAM): citations by class, the
critic-evaluator-proposer loop, a synthesis that keeps (memo) or erases (summary)
dissent, escalation to a human.  Adds ``mediation.*``.

The package is the model: ``config`` (its settings, light: what the registry reads
to build the schema and ``--help``), ``core`` (its numerics), ``model`` (``MODEL``,
the registry entry, with its table and figures; loaded on first use).
"""
