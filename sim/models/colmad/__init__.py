"""Error detection by debate (seed 001): collaborative (ColMAD) against competitive
(CopMAD) debate and a single detector.  Adds ``colmad.*``; needs judge=logit (the judge
of disagreements; judge.mu > 0 leans toward "error").

The package is the model: ``config`` (its settings, light: what the registry reads
to build the schema and ``--help``), ``core`` (its numerics), ``model`` (``MODEL``,
the registry entry, with its table and figures; loaded on first use).
"""
