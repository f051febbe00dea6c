"""The Python API: ``simulate(cfg)`` and ``theory(cfg)`` for the baseline model."""

from __future__ import annotations

import datetime as _dt
from typing import Any

import numpy as np
from ...lazy import lazy
xr = lazy("xarray")

from ..._version import __version__
from ...config import PROTOCOLS, Config, as_yaml, to_config
from ...judge import judge_tables, protagonist_accuracy, resolve_strategies
from ...metrics import CONTRAST_METRICS, PROTOCOL_METRICS, class_probabilities, evaluate
from ...runner import baseline_thresholds, run_baseline_counts
from ...schema import exact_long_name, se_long_name


def _setup(cfg: Any, validated: bool = False):
    c = cfg if validated else to_config(cfg)
    strat = resolve_strategies(c)
    J_c, J_d = judge_tables(c.judge, c.protocol)
    return c, strat, J_c, J_d


def _se_attrs(spec, kind: str) -> dict:
    if kind == "simulation":
        return {"long_name": se_long_name(spec.long_name), "units": spec.units}
    return {
        "long_name": f"expected standard error of {spec.long_name} at run.n_instances",
        "units": spec.units,
    }


def _dataset(c: Config, strat, J_c, J_d, values: dict, kind: str,
             extra: dict | None = None) -> xr.Dataset:
    """The labelled cell: every variable built first and the Dataset made once
    (adding them one by one merged and copied the Dataset at every step, three
    quarters of a small cell's time).  ``extra``: further variables, last."""
    data_vars = {}
    for name, spec in PROTOCOL_METRICS.items():
        attrs = {"long_name": spec.long_name, "units": spec.units, "definition": spec.definition}
        val, se = values[name]
        data_vars[name] = (("protocol",), val, attrs)
        data_vars[f"{name}_se"] = (("protocol",), se, _se_attrs(spec, kind))
    for name, spec in CONTRAST_METRICS.items():
        attrs = {"long_name": spec.long_name, "units": spec.units, "definition": spec.definition}
        val, se = values[name]
        data_vars[name] = ((), val, attrs)
        data_vars[f"{name}_se"] = ((), se, _se_attrs(spec, kind))
    data_vars["judge_table"] = (
        ("e_P", "e_A"), np.asarray(J_d),
        {"long_name": "debate endorsement probability Pr(y = a | e_P, e_A)", "units": "1"},
    )
    data_vars["judge_table_consult"] = (
        ("e_P",), np.asarray(J_c),
        {"long_name": "consultancy endorsement probability Pr(y = a | e_P)", "units": "1"},
    )
    data_vars.update(extra or {})
    ds = xr.Dataset(
        data_vars,
        coords={
            "protocol": (
                ("protocol",), list(PROTOCOLS),
                {"long_name": "oversight protocol", "description": "open consultancy, open debate"},
            ),
            "e_P": ("e_P", [0, 1]),
            "e_A": ("e_A", [0, 1]),
        },
    )
    ds.attrs.update(
        {
            "title": f"antiamp baseline model ({kind})",
            "model": "seed 000 baseline: verifiable-evidence persuasion game",
            "kind": kind,
            "antiamp_version": __version__,
            "config": as_yaml(c),
            "seed": int(c.run.seed),
            "n_instances": int(c.run.n_instances),
            "judge": c.judge.kind,
            "jury_size": int(c.judge.jury_size),
            "strategies": str(strat.as_dict()),
            "strategy_source": str(strat.source),
            "p_correct": protagonist_accuracy(c),
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        }
    )
    return ds


def _welfare_args(c: Config):
    w = c.welfare
    return w.alpha, w.beta, w.delta_c, c.model.c_e


def simulate(cfg: Any = None, *, counts_out: dict | None = None) -> xr.Dataset:
    """Simulate the baseline model under both protocols on the same instances.

    Parameters
    ----------
    cfg : Config, DictConfig, dict or None
        The configuration (nested like ``conf/config.yaml``); missing fields take
        their defaults.  Invalid values raise :class:`sim.ConfigError` before any
        computation.
    counts_out : dict, optional
        If given, receives the raw class counts under ``"counts"`` (the kernel's
        sufficient statistic).

    Returns
    -------
    xarray.Dataset
        Dimension ``protocol`` (``consult``, ``debate``); every metric of
        :data:`sim.metrics.PROTOCOL_METRICS` with ``<name>_se``; the paired
        contrasts ``amp_gap``, ``acc_gap``, ``welfare_diff``; the closed forms as
        ``<name>_exact``; the resolved config, version and seed in ``attrs``.
    """
    return simulate_config(to_config(cfg), counts_out=counts_out)


def simulate_config(c: Config, *, counts_out: dict | None = None) -> xr.Dataset:
    """:func:`simulate` of a config already validated (the model's one-cell path: its
    config comes from :func:`antiamp.registry.to_model_config`), without validating
    it again."""
    strat, J_c, J_d, counts, values = _simulated(c)
    if counts_out is not None:
        counts_out["counts"] = counts
    th = _theory_values(c, strat, J_c, J_d)
    return _simulation_dataset(c, strat, J_c, J_d, values,
                               {f"{k}_exact": v[0] for k, v in th.items()}, counts)


def _simulated(c: Config) -> tuple:
    """A validated config's kernel pass: ``(strategies, J_c, J_d, counts, values)``,
    ``values`` the metrics ``{name: (value, se)}`` of the counts."""
    strat = resolve_strategies(c)
    J_c, J_d = judge_tables(c.judge, c.protocol)
    m = c.model
    thr = baseline_thresholds(m.pi, m.p, m.rho, strat.x_P_consult, strat.x_P, strat.x_A)
    counts = run_baseline_counts(
        thr, m.stance == "fixed", m.a, c.run.n_instances, c.run.seed,
        chunk_size=c.run.chunk_size, n_threads=c.run.n_threads, progress=c.run.progress,
        device=c.run.device,
    )
    return strat, J_c, J_d, counts, evaluate(counts, J_c, J_d, *_welfare_args(c))


def simulated_values(c: Config) -> dict:
    """The metrics :func:`simulate` reports for a validated config, ``{name: (value,
    se)}``, without its Dataset (what a model that composes this one reads: the
    Dataset's attributes, the config as YAML among them, cost more than the kernel
    pass of a small cell)."""
    return _simulated(c)[4]


def simulation_dataset(c: Config, values: dict, exact: dict, counts) -> xr.Dataset:
    """:func:`simulate`'s Dataset of a validated config from its class counts, metrics
    ``values`` (``name -> (value, se)``) and closed forms ``exact`` (``<name>_exact``)."""
    strat = resolve_strategies(c)
    J_c, J_d = judge_tables(c.judge, c.protocol)
    return _simulation_dataset(c, strat, J_c, J_d, values, exact, counts)


def _simulation_dataset(c: Config, strat, J_c, J_d, values: dict, exact: dict,
                        counts) -> xr.Dataset:
    extra = {}
    for metrics, dims in ((PROTOCOL_METRICS, ("protocol",)), (CONTRAST_METRICS, ())):
        for name, spec in metrics.items():
            extra[f"{name}_exact"] = (dims, exact[f"{name}_exact"], {
                "long_name": exact_long_name(spec.long_name), "units": spec.units})
    extra["class_counts"] = (("transcript_class",), counts, {
        "long_name": "instances per transcript class",
        "description": "index = 16 omega + 8 [a = omega] + 4 e_P(consult) + 2 e_P(debate) + e_A",
        "units": "1",
    })
    return _dataset(c, strat, J_c, J_d, values, "simulation", extra)


def cell_arrays(c: Config) -> dict:
    """The arrays :func:`simulate` puts in its Dataset, for a config already
    validated (a grid's cell): no validation, no Dataset."""
    strat, J_c, J_d, counts, values = _simulated(c)
    th = _theory_values(c, strat, J_c, J_d)
    out = {}
    for name in list(PROTOCOL_METRICS) + list(CONTRAST_METRICS):
        out[name], out[f"{name}_se"] = (np.asarray(v) for v in values[name])
        out[f"{name}_exact"] = np.asarray(th[name][0])
    out["judge_table"], out["judge_table_consult"] = np.asarray(J_d), np.asarray(J_c)
    out["class_counts"] = np.asarray(counts)
    return out


def _theory_values(c: Config, strat, J_c, J_d):
    m = c.model
    prob = class_probabilities(
        m.pi, m.p, m.rho, strat.x_P_consult, strat.x_P, strat.x_A, m.stance == "fixed", m.a
    )
    return evaluate(prob, J_c, J_d, *_welfare_args(c), n=c.run.n_instances)


def exact_values(cfg: Any, validated: bool = False) -> dict:
    """The closed forms of a config (seed 000, sections 3-4) without the Dataset:
    ``{metric: (values [consult, debate], standard error at run.n_instances)}``, the
    values :func:`theory` labels (what another model that composes this one reads).
    ``validated``: ``cfg`` is a config already validated (not checked again)."""
    c, strat, J_c, J_d = _setup(cfg, validated=validated)
    return _theory_values(c, strat, J_c, J_d)


def theory(cfg: Any = None) -> xr.Dataset:
    """Closed forms of seed 000 (sections 3-4) for the configured judge, as a Dataset.

    The values are exact expectations over the finite transcript distribution:
    with presentation when feasible and the gatekeeping consultancy they are the
    seed's Amp = rho, rho b (tie-break), the logit expressions of Result 1',
    follow-when-correct 1 and 1 - rho (1 - b), accuracy 1 - (1 - p) rho and
    1 - rho (p + b - 2 p b), and the welfare difference of Result 3; a jury
    replaces each judge probability q by its majority probability b_n(q).  Also
    holds ``beta_threshold`` = alpha (2p - 1) / (1 - p), the beta above which
    debate is welfare-preferred when Delta C = 0.  ``<name>_se`` is the standard
    error a simulation of ``run.n_instances`` instances will have.
    """
    c, strat, J_c, J_d = _setup(cfg)
    ds = _dataset(c, strat, J_c, J_d, _theory_values(c, strat, J_c, J_d), "theory")
    p = protagonist_accuracy(c)
    thr = c.welfare.alpha * (2 * p - 1) / (1 - p) if p < 1 else np.inf
    ds["beta_threshold"] = ((), thr, {
        "long_name": "welfare threshold on beta for debate",
        "definition": "alpha (2p - 1) / (1 - p)", "units": "utility",
    })
    return ds
