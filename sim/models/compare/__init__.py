"""Every protocol on one task (seeds 000-003): consultancy, debate and juries, CopMAD
and ColMAD, FOAM mediation (dissent memo against a monolithic summary), FactHarbor's
fixed multiplier and Climinator's adaptive rounds, each run by its own model at the
task's mapped parameters (model.p, model.rho, model.pi, one logit judge), placed on
one Amp-vs-cost scale.  Adds compare.jury_size; reads ``colmad.*``, ``mediation.*`` and
``redeliberation.*`` for what only their protocols have.

The package is the model: ``config`` (its settings, light: what the registry reads
to build the schema and ``--help``), ``core`` (its numerics), ``model`` (``MODEL``,
the registry entry, with its table and figures; loaded on first use).
"""
