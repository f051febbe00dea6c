"""The log wing: reading oversight logs (CSV, Parquet, JSON Lines, Inspect ``.eval``)
and estimating from them.

- reading: :mod:`.logs` (the log format, validation), :mod:`.logread` (bounded
  reading), :mod:`.inspect_logs` and :mod:`.inspect` (Inspect's logs and scorers),
  :mod:`.inspect_example` (a small Inspect evaluation of one's own);
- statistics: :mod:`.logstats` (row codes, Amp, bootstrap and clustered intervals),
  :mod:`.estimators` (per protocol and stratum), :mod:`.logfit` (the logistic judge),
  :mod:`.readcorr` (correlated readings within a room), :mod:`.field_metrics` (AUC
  and ASD of a log);
- models fitted to a log and their predictions: :mod:`.structural`,
  :mod:`.predictive`;
- the command ``antiamp-estimate``: :mod:`.estimate` (also importable as
  :mod:`antiamp.estimate`), its report :mod:`.estimate_report` and its checks
  :mod:`.estimate_check`.

Nothing below the log wing imports it: the engine, the models and the sweeps do not
read logs.
"""
