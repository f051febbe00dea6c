"""Stated confidence in multi-round debate (seed 004): debaters' confidence reports
fitted to the published bets, and logit judges (judge=logit) that weigh them. Adds
``confidence.*``; model.p is the protagonist's accuracy, model.rho the false side's
evidence rate.

Juries (``judge.jury_size`` > 1) share a latent with correlation ``confidence.icc``,
or fitted to ``confidence.votes``.  Given per-judge votes, the jury's judges also lean
(``confidence.jury_leans``, default relative): each of the fitted judges has a lean
toward the proposition, the jury seats ``judge.jury_size`` of them at random (all of
them when it equals ``confidence.votes_judges``), and the protagonist holds the
proposition or the opposition with probability 1/2, so a judge's lean is a shared
two-point latent of the jury on top of ``icc``: judge j votes for the protagonist iff
Phi^-1(q) + sigma l_j - sqrt(icc) Z - sqrt(1 - icc) E_j > 0 (sigma = +1 or -1 the
protagonist's side).  Side, seats and latent are integrated exactly; the Monte Carlo
kernel reads the jury's endorsement from the same table.  ``jury_leans=absolute`` adds
the panel's mean lean (a side preference the vote fit cannot tell from debates that
favour one side); ``none`` gives interchangeable judges (the jury of ``icc`` alone).

The package is the model: ``config`` (its settings, light: what the registry reads
to build the schema and ``--help``), ``core`` (its numerics), ``model`` (``MODEL``,
the registry entry, with its table and figures; loaded on first use).
"""
