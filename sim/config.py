"""Configuration schema and validation.

The schema is a tree of dataclasses; Hydra composes it (``conf/``) and the Python
API accepts the same tree as a dataclass, an OmegaConf node or a nested dict with
unspecified fields at their defaults.  Names follow seed 000 (sections 3-4):
``pi``, ``p``, ``rho``, ``c_e``, ``b``, ``lam``, ``mu``, ``kappa``.

Validation happens before any computation and raises :class:`ConfigError`, whose
message names the field and its allowed range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

JUDGE_KINDS = ("tiebreak", "logit")
STANCE_KINDS = ("signal", "fixed")
PROTOCOLS = ("consult", "debate")


class ConfigError(ValueError):
    """An invalid configuration value; the message names the field and the allowed range."""


@dataclass
class ModelConfig:
    """Primitives of the baseline persuasion game (seed 000, section 3)."""

    #: Which registered model runs (``model=<name>``): ``baseline`` (this game),
    #: ``equilibrium``, ``signals``, ``portfolio``, ``panel``, ``messages``,
    #: ``options`` or a third-party model (``antiamp.models``).
    name: str = "baseline"
    #: Prior Pr(omega = 1).
    pi: float = 0.5
    #: Protagonist accuracy Pr(s = omega) when ``stance = signal`` (endogenous mistakes).
    p: float = 0.8
    #: Fabrication rate: Pr(t_i = 1 | stance_i != omega).
    rho: float = 0.3
    #: Evidence cost c_e paid when evidence is presented.
    c_e: float = 0.0
    #: ``signal``: a = s with Pr(s = omega) = p; ``fixed``: the stance is exogenous, a = ``a``.
    stance: str = "signal"
    #: The exogenous stance when ``stance = fixed``.
    a: int = 1
    #: Pr(present | t_P = 1) in debate; null = the dominant strategy (error if none exists).
    x_P: Optional[float] = None
    #: Pr(present | t_A = 1) in debate; null = the dominant strategy.
    x_A: Optional[float] = None
    #: Pr(present | t_P = 1) in consultancy; null = the dominant strategy.
    x_P_consult: Optional[float] = None


@dataclass
class JudgeConfig:
    """The judge's decision rule (seed 000, section 3) and jury aggregation (section 4)."""

    #: ``tiebreak`` (evidence comparison, ties to the protagonist w.p. b) or ``logit``.
    kind: str = "tiebreak"
    #: Tie-break bias: Pr(y = a | e_P = e_A).
    b: float = 0.5
    #: Logit rationality lambda > 0.
    lam: float = 1.0
    #: Logit bias mu toward the protagonist.
    mu: float = 0.0
    #: Logit evidence salience kappa >= 0.
    kappa: float = 2.0
    #: Number of independent judges aggregated by majority vote.
    jury_size: int = 1
    #: With an even jury, probability that a tied vote (n/2 each) goes to the
    #: protagonist.  0.5 is a fair coin; 1.0 reproduces the seed's b_n sum from ceil(n/2).
    jury_tie: float = 0.5


@dataclass
class ProtocolConfig:
    """Institutional options of the protocols (open consultancy, open debate)."""

    #: Consultancy with a tie-break judge: Pr(y = a | e_P = 0).  0 is the seed's
    #: gatekeeping default ("require evidence to approve"); a positive value is the
    #: footnote-2 variant that endorses without evidence with this probability.
    consult_default: float = 0.0


@dataclass
class WelfareConfig:
    """Principal's objective U_D = -alpha Pr(y != omega) - beta Pr(y = a, a != omega) - C (section 3)."""

    #: Weight alpha of any wrong decision, Pr(y != omega).
    alpha: float = 1.0
    #: Extra weight beta of a ratified mistake, Pr(y = a, a != omega).
    beta: float = 1.0
    #: Delta C = C(debate) - C(consult); consultancy's cost is the zero point.
    delta_c: float = 0.0


@dataclass
class RunConfig:
    """How the Monte Carlo is run."""

    #: Simulated oversight instances (each under both protocols, common random numbers).
    n_instances: int = 10_000_000
    #: Seed of the counter-based generator (Philox): same seed, same bits, any thread count.
    seed: int = 0
    #: Compiled threads; 0 = all cores.
    n_threads: int = 0
    #: Instances per kernel call (a progress step); does not change any result.
    chunk_size: int = 1 << 25
    #: Show a progress bar: true, false, or null = on a terminal or in a notebook.
    progress: Optional[bool] = None
    #: Write the figure next to the Zarr store (CLI).
    figure: bool = True


@dataclass
class ExportConfig:
    """Per-instance transcript export (``export.*``); off unless n_instances > 0."""

    #: Instances to export (each gives one consultancy and one debate row); 0 = none.
    n_instances: int = 0
    #: Output file, .parquet or .csv (relative paths: in the run directory).
    path: str = "transcripts.parquet"
    #: Instances are assigned to this many judges in turn (judge_id).
    n_judges: int = 20
    #: Value of the stratum column.
    stratum: str = "all"


@dataclass
class Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    protocol: ProtocolConfig = field(default_factory=ProtocolConfig)
    welfare: WelfareConfig = field(default_factory=WelfareConfig)
    run: RunConfig = field(default_factory=RunConfig)
    export: ExportConfig = field(default_factory=ExportConfig)


def to_config(cfg: Any = None) -> Config:
    """Turn a dataclass, OmegaConf node, nested dict or None into a validated :class:`Config`.

    Unknown keys and values of the wrong type raise :class:`ConfigError`.
    """
    base = OmegaConf.structured(Config)
    try:
        if cfg is None:
            merged = base
        else:
            if isinstance(cfg, Config):
                other = OmegaConf.structured(cfg)
            elif isinstance(cfg, (dict, DictConfig)):
                plain = _strip_hydra(cfg)
                check_sections(plain)
                check_flags(plain, Config)
                other = OmegaConf.create(plain)
            else:
                raise ConfigError(
                    f"config must be a Config, a DictConfig or a dict, not {type(cfg).__name__}"
                )
            merged = OmegaConf.merge(base, other)
        obj = OmegaConf.to_object(merged)
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None)
        msg = str(exc).splitlines()[0]
        raise ConfigError(f"{key}: {msg}" if key else msg) from None
    validate(obj)
    return obj


def _strip_hydra(cfg: Any) -> Any:
    if isinstance(cfg, DictConfig):
        cfg = OmegaConf.to_container(cfg, resolve=True)
    return plain_values({k: v for k, v in cfg.items() if k != "hydra"})


def plain_values(x):
    """NumPy scalars and arrays (welcome in the Python API) as plain Python values."""
    import numpy as np

    if isinstance(x, dict):
        return {k: plain_values(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [plain_values(v) for v in x]
    return x.item() if isinstance(x, np.generic) else x


def check_flags(cfg: dict, schema) -> None:
    """A yes/no field takes true or false only: OmegaConf would read 2 or "yes" as true."""
    import dataclasses

    for f in dataclasses.fields(schema):
        sub = cfg.get(f.name) if isinstance(cfg, dict) else None
        if not isinstance(sub, dict):
            continue
        typ = f.type if isinstance(f.type, type) else None
        if typ is None and isinstance(f.default_factory, type):  # string annotations
            typ = f.default_factory
        if typ is None or not dataclasses.is_dataclass(typ):
            continue
        for g in dataclasses.fields(typ):
            if g.type in ("bool", bool) and g.name in sub and not isinstance(sub[g.name], bool):
                raise ConfigError(f"{f.name}.{g.name} must be true or false, got "
                                  f"{sub[g.name]!r}")


def check_sections(cfg: dict) -> None:
    """Every top-level entry of a nested config is a mapping of fields."""
    for k, v in cfg.items():
        if not isinstance(k, str):
            raise ConfigError(f"config keys are section names, got {k!r}")
        if v is not None and not isinstance(v, (dict, DictConfig)):
            raise ConfigError(f"{k} must be a mapping of its fields (e.g. {{'rho': 0.3}}), "
                              f"got {v!r}")


def _number(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(f"{name} must be a number, got {v!r}")
    if not math.isfinite(float(v)):
        raise ConfigError(f"{name} must be finite, got {v!r}")
    return float(v)


def _prob(name: str, v: Any) -> None:
    x = _number(name, v)
    if not 0.0 <= x <= 1.0:
        raise ConfigError(f"{name} must lie in [0, 1], got {v!r}")


def _int_at_least(name: str, v: Any, lo: int, hi: int | None = None, why: str = "") -> None:
    rng = f">= {lo}" if hi is None else f">= {lo} and <= {hi:,}"
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{name} must be an integer {rng}, got {v!r}")
    if v < lo or (hi is not None and v > hi):
        raise ConfigError(f"{name} must be an integer {rng}{why}, got {v!r}")


#: Upper bounds on sizes, checked before anything is allocated or run.
MAX_INSTANCES = 10**14  # about a day per cell at 10^9 instances/s
MAX_JURY = 10_001
MAX_EXPORT = 10**7  # transcript rows are held in memory before they are written


#: Sections already found valid (their field values): a grid's cells share most of
#: their sections, and the checks are a pure function of the values.
_VALID: dict = {}
_MAX_VALID = 1 << 16


def _memo_key(name: str, section) -> tuple | None:
    """A section's memo key, or None when a value is unhashable (a list): such a
    section is checked every time."""
    try:
        # With each value's type: 1, 1.0 and True are equal keys but not equally valid.
        key = (name, type(section), tuple((type(v), v) for v in vars(section).values()))
        hash(key)
    except TypeError:
        return None
    return key


def validate(cfg: Config) -> None:
    """Check every field's range; raise :class:`ConfigError` naming the first bad field."""
    for name, check in _SECTION_CHECKS:
        section = getattr(cfg, name)
        key = _memo_key(name, section)
        if key is not None and key in _VALID:
            continue
        check(section)
        if key is not None:
            if len(_VALID) >= _MAX_VALID:
                _VALID.clear()
            _VALID[key] = True
    if cfg.judge.kind == "logit" and cfg.protocol.consult_default != 0:
        raise ConfigError(
            "protocol.consult_default applies to the tie-break judge only "
            "(the logit judge's no-evidence endorsement is sigma(lam*mu)); leave it at 0"
        )


def _check_model(m) -> None:
    for name in ("pi", "p", "rho"):
        _prob(f"model.{name}", getattr(m, name))
    if _number("model.c_e", m.c_e) < 0:
        raise ConfigError(f"model.c_e must be >= 0, got {m.c_e!r}")
    if m.stance not in STANCE_KINDS:
        raise ConfigError(f"model.stance must be one of {', '.join(STANCE_KINDS)}, got {m.stance!r}")
    if m.a not in (0, 1) or isinstance(m.a, bool):
        raise ConfigError(f"model.a must be 0 or 1, got {m.a!r}")
    for name in ("x_P", "x_A", "x_P_consult"):
        v = getattr(m, name)
        if v is not None:
            _prob(f"model.{name}", v)


def _check_judge(j) -> None:
    if j.kind not in JUDGE_KINDS:
        raise ConfigError(f"judge.kind must be one of {', '.join(JUDGE_KINDS)}, got {j.kind!r}")
    _prob("judge.b", j.b)
    if _number("judge.lam", j.lam) <= 0:
        raise ConfigError(f"judge.lam must be > 0, got {j.lam!r}")
    _number("judge.mu", j.mu)
    if _number("judge.kappa", j.kappa) < 0:
        raise ConfigError(f"judge.kappa must be >= 0, got {j.kappa!r}")
    _int_at_least("judge.jury_size", j.jury_size, 1, MAX_JURY)
    _prob("judge.jury_tie", j.jury_tie)


def _check_protocol(p) -> None:
    _prob("protocol.consult_default", p.consult_default)


def _check_welfare(w) -> None:
    for name in ("alpha", "beta", "delta_c"):
        _number(f"welfare.{name}", getattr(w, name))


def _check_run(r) -> None:
    _int_at_least("run.n_instances", r.n_instances, 1, MAX_INSTANCES,
                  " (about a day per cell at 10^9 instances/s)")
    _int_at_least("run.seed", r.seed, 0)
    if r.seed >= 1 << 64:
        raise ConfigError(f"run.seed must be < 2**64, got {r.seed!r}")
    import os

    _int_at_least("run.n_threads", r.n_threads, 0, os.cpu_count() or 1,
                  " (0 = every core; at most this machine's cores)")
    _int_at_least("run.chunk_size", r.chunk_size, 1)


def _check_export(e) -> None:
    _int_at_least("export.n_instances", e.n_instances, 0, MAX_EXPORT,
                  " (transcripts are held in memory)")
    _int_at_least("export.n_judges", e.n_judges, 1)
    if not str(e.path).lower().endswith((".parquet", ".csv")):
        raise ConfigError(f"export.path must end in .parquet or .csv, got {e.path!r}")
    from pathlib import PurePath

    ep = PurePath(str(e.path))
    if not ep.is_absolute() and ".." in ep.parts:
        raise ConfigError(f"export.path must stay inside the run directory (no '..'), got "
                          f"{e.path!r}; give an absolute path to write elsewhere")


# Order: the first bad field reported is the first in this order (as before).
_SECTION_CHECKS = (("model", _check_model), ("judge", _check_judge),
                   ("protocol", _check_protocol), ("welfare", _check_welfare),
                   ("run", _check_run), ("export", _check_export))


def as_yaml(cfg: Config) -> str:
    """The resolved configuration as YAML (stored in every output's attrs)."""
    return OmegaConf.to_yaml(OmegaConf.structured(cfg))
