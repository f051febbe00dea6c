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
#: Where the Monte Carlo kernels run (``run.device``).
DEVICES = ("cpu", "cuda", "auto")
PROTOCOLS = ("consult", "debate")
#: The model a config runs when it names none: the command's default (the one place
#: outside its package where a built-in model is named).
DEFAULT_MODEL = "baseline"

#: Upper bounds on sizes, checked before anything is allocated or run.
MAX_INSTANCES = 10**14  # about a day per cell at 10^9 instances/s
MAX_JURY = 10_001
MAX_EXPORT = 10**7  # transcript rows are held in memory before they are written
#: The largest magnitude of a weight, cost, gain, bias or scale a field may take: far
#: beyond where a logistic or normal term saturates to the last bit, and a finite bound
#: (a value of 1e308 means nothing and breaks sums).
BIG = 1e6


class ConfigError(ValueError):
    """An invalid configuration value; the message names the field and the allowed range."""


def declare(default: Any, symbol: str = "", meaning: str = "", unit: str = "1", *,
            range: str | None = None, choices: tuple | None = None, why: str = ""):
    """A config field, declared once: its default, its symbol in the seed and its meaning
    (with the ``#:`` comment above it, which ``--help`` shows), and the values it may
    take: ``range`` (an interval, ``"[0, 1]"``, ``"(0, inf)"``, ``"int [1, 101]"``,
    ``"int [0, inf)"``) or ``choices`` (the allowed strings).  Axis labels, the store's
    ``long_name``/``symbol`` attributes and the figures read the symbol and meaning
    (:mod:`antiamp.fields`); :func:`validate` checks every declared range and choice,
    ``--help`` prints them, and the fuzz tests draw bad values from them; ``why`` is
    added to the error message.  A field whose default is None may also be null."""
    meta = {"symbol": symbol, "meaning": meaning, "unit": unit}
    if range is not None:
        meta["range"] = range
    if choices is not None:
        meta["choices"] = tuple(choices)
    if why:
        meta["why"] = why
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Interval:
    """The values a numeric field may take: ``[lo, hi]``, either end open or infinite,
    integers only when ``integer``."""

    lo: float
    hi: float
    lo_open: bool = False
    hi_open: bool = False
    integer: bool = False

    @staticmethod
    def parse(spec: str) -> "Interval":
        """``"[0, 1]"``, ``"(0, inf)"``, ``"int [1, 101]"``: see :func:`declare`."""
        return _interval(spec)

    def describe(self) -> str:
        """The range as ``--help`` and the error messages say it."""
        lo, hi = _num_text(self.lo), _num_text(self.hi)
        if self.integer:
            if math.isinf(self.hi):
                return f"an integer >= {lo}"
            return f"an integer >= {lo} and <= {hi}"
        if math.isinf(self.hi) and math.isinf(self.lo):
            return "a finite number"
        if math.isinf(self.hi):
            return f"> {lo}" if self.lo_open else f">= {lo}"
        if math.isinf(self.lo):
            return f"< {hi}" if self.hi_open else f"<= {hi}"
        return f"{'(' if self.lo_open else '['}{lo}, {hi}{')' if self.hi_open else ']'}"

    def contains(self, x: float) -> bool:
        return ((x > self.lo if self.lo_open else x >= self.lo)
                and (x < self.hi if self.hi_open else x <= self.hi))

    def check(self, name: str, v: Any, why: str = "") -> None:
        """ConfigError naming the field ``name`` and this range unless ``v`` lies in it."""
        if self.integer:
            if isinstance(v, bool) or not isinstance(v, int) or not self.contains(v):
                raise ConfigError(f"{name} must be {self.describe()}{why}, got {v!r}")
            return
        x = check_number(name, v)
        if not self.contains(x):  # the range's text only for the message
            what = self.describe()
            lie = "lie in " if what[0] in "[(" else "be "
            raise ConfigError(f"{name} must {lie}{what}{why}, got {v!r}")


def _num_text(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if float(x).is_integer():
        return f"{int(x):,}"
    return repr(float(x))


_INTERVALS: dict = {}


def _interval(spec: str) -> Interval:
    """Parsed once per spec (declarations are read on every validation)."""
    out = _INTERVALS.get(spec)
    if out is None:
        import re

        m = re.fullmatch(r"\s*(int\s+)?([\[(])\s*([^,\s]+)\s*,\s*([^,\s\])]+)\s*([\])])\s*",
                         spec)
        if m is None:
            raise ValueError(f"not a range: {spec!r} (write e.g. '[0, 1]', '(0, inf)', "
                             "'int [1, 101]')")
        integer, lb, lo, hi, rb = m.groups()

        def num(t):  # integers exactly (2**64 - 1 is not a float)
            return int(t) if integer and t.lstrip("-").isdigit() else float(t)

        out = Interval(num(lo), num(hi), lb == "(", rb == ")", bool(integer))
        _INTERVALS[spec] = out
    return out


def describe_values(f) -> str:
    """The values a declared field (a dataclass field) may take, or ""."""
    meta = f.metadata
    if "choices" in meta:
        text = "one of " + ", ".join(str(c) for c in meta["choices"])
    elif "range" in meta:
        text = _interval(meta["range"]).describe()
    else:
        return ""
    return text + (", or null" if f.default is None else "")


def check_declared(section_name: str, section) -> None:
    """Every declared range and choice of one section (ConfigError names the field)."""
    import dataclasses

    for f in dataclasses.fields(section):
        meta = f.metadata
        if "range" not in meta and "choices" not in meta:
            continue
        v = getattr(section, f.name)
        if v is None and f.default is None:
            continue
        name = f"{section_name}.{f.name}"
        if "choices" in meta:
            if isinstance(v, bool) or v not in meta["choices"]:
                raise ConfigError(f"{name} must be one of "
                                  f"{', '.join(str(c) for c in meta['choices'])}, got {v!r}")
        else:
            _interval(meta["range"]).check(name, v, meta.get("why", ""))


@dataclass
class ModelConfig:
    """Primitives of the baseline persuasion game (seed 000, section 3)."""

    #: Which registered model runs (``model=<name>``; ``antiamp --help`` lists them):
    #: the seed-000 game by default, or a built-in or third-party model (``antiamp.models``).
    name: str = DEFAULT_MODEL
    #: Prior Pr(omega = 1).
    pi: float = declare(0.5, 'π', 'prior Pr(ω = 1)', range='[0, 1]')
    #: Protagonist accuracy Pr(s = omega) when ``stance = signal`` (endogenous mistakes).
    p: float = declare(0.8, 'p', 'protagonist accuracy', range='[0, 1]')
    #: Fabrication rate: Pr(t_i = 1 | stance_i != omega).
    rho: float = declare(0.3, 'ρ', 'fabrication rate', range='[0, 1]')
    #: Evidence cost c_e paid when evidence is presented.
    c_e: float = declare(0.0, 'c_e', 'evidence cost', range=f'[0, {BIG:g}]')
    #: ``signal``: a = s with Pr(s = omega) = p; ``fixed``: the stance is exogenous, a = ``a``.
    stance: str = declare("signal", choices=STANCE_KINDS)
    #: The exogenous stance when ``stance = fixed``.
    a: int = declare(1, range='int [0, 1]')
    #: Pr(present | t_P = 1) in debate; null = the dominant strategy (error if none exists).
    x_P: Optional[float] = declare(None, 'x_P', 'protagonist presentation probability (debate)',
                                   range='[0, 1]')
    #: Pr(present | t_A = 1) in debate; null = the dominant strategy.
    x_A: Optional[float] = declare(None, 'x_A', 'antagonist presentation probability',
                                   range='[0, 1]')
    #: Pr(present | t_P = 1) in consultancy; null = the dominant strategy.
    x_P_consult: Optional[float] = declare(
        None, 'x_P', 'protagonist presentation probability (consultancy)', range='[0, 1]')


@dataclass
class JudgeConfig:
    """The judge's decision rule (seed 000, section 3) and jury aggregation (section 4)."""

    #: ``tiebreak`` (evidence comparison, ties to the protagonist w.p. b) or ``logit``.
    kind: str = declare("tiebreak", 'judge', 'judge rule', choices=JUDGE_KINDS)
    #: Tie-break bias: Pr(y = a | e_P = e_A).
    b: float = declare(0.5, 'b', 'tie-break bias', range='[0, 1]')
    #: Logit rationality lambda > 0.
    lam: float = declare(1.0, 'λ', 'logit rationality', range=f'(0, {BIG:g}]')
    #: Logit bias mu toward the protagonist.
    mu: float = declare(0.0, 'μ', 'logit bias toward the protagonist', range=f'[-{BIG:g}, {BIG:g}]')
    #: Logit evidence salience kappa >= 0.
    kappa: float = declare(2.0, 'κ', 'evidence salience', range=f'[0, {BIG:g}]')
    #: Number of independent judges aggregated by majority vote.
    jury_size: int = declare(1, 'n', 'jury size', range=f'int [1, {MAX_JURY}]')
    #: With an even jury, probability that a tied vote (n/2 each) goes to the
    #: protagonist.  0.5 is a fair coin; 1.0 reproduces the seed's b_n sum from ceil(n/2).
    jury_tie: float = declare(0.5, 'tie', 'tied-vote rule of even juries', range='[0, 1]')


@dataclass
class ProtocolConfig:
    """Institutional options of the protocols (open consultancy, open debate)."""

    #: Consultancy with a tie-break judge: Pr(y = a | e_P = 0).  0 is the seed's
    #: gatekeeping default ("require evidence to approve"); a positive value is the
    #: footnote-2 variant that endorses without evidence with this probability.
    consult_default: float = declare(0.0, 'd', 'consultancy endorsement without evidence',
                                     range='[0, 1]')


@dataclass
class WelfareConfig:
    """Principal's objective U_D = -alpha Pr(y != omega) - beta Pr(y = a, a != omega) - C (section 3)."""

    #: Weight alpha of any wrong decision, Pr(y != omega).
    alpha: float = declare(1.0, 'α', 'welfare weight on errors', range=f'[-{BIG:g}, {BIG:g}]')
    #: Extra weight beta of a ratified mistake, Pr(y = a, a != omega).
    beta: float = declare(1.0, 'β', 'welfare weight on ratified mistakes', range=f'[-{BIG:g}, {BIG:g}]')
    #: Delta C = C(debate) - C(consult); consultancy's cost is the zero point.
    delta_c: float = declare(0.0, 'ΔC', 'extra cost of debate', range=f'[-{BIG:g}, {BIG:g}]')


@dataclass
class RunConfig:
    """How the Monte Carlo is run."""

    #: Simulated oversight instances (each under both protocols, common random numbers).
    n_instances: int = declare(10_000_000, range=f'int [1, {MAX_INSTANCES}]',
                               why=' (about a day per cell at 10^9 instances/s)')
    #: Seed of the counter-based generator (Philox): same seed, same bits, any thread count.
    seed: int = declare(0, range=f'int [0, {2**64 - 1}]')
    #: Compiled threads; 0 = all cores.
    n_threads: int = declare(0, range='int [0, 4096]')
    #: Instances per kernel call (a progress step); does not change any result.
    chunk_size: int = declare(1 << 25, range=f'int [1, {1 << 40}]')
    #: Show a progress bar: true, false, or null = on a terminal or in a notebook.
    progress: Optional[bool] = None
    #: Write the figure next to the Zarr store (CLI).
    figure: bool = True
    #: Where the kernels run: cpu, cuda (an NVIDIA GPU through numba.cuda; the same
    #: class counts, bit for bit) or auto (the GPU when numba sees one, else the CPU).
    device: str = declare("cpu", choices=DEVICES)


@dataclass
class ExportConfig:
    """Per-instance transcript export (``export.*``); off unless n_instances > 0."""

    #: Instances to export (each gives one consultancy and one debate row); 0 = none.
    n_instances: int = declare(0, range=f'int [0, {MAX_EXPORT}]', why=' (transcripts are held in memory)')
    #: Output file, .parquet or .csv (relative paths: in the run directory).
    path: str = "transcripts.parquet"
    #: Instances are assigned to this many judges in turn (judge_id).
    n_judges: int = declare(20, range='int [1, 1000000]')
    #: Value of the stratum column.
    stratum: str = "all"


# ``equilibrium.*``: how evidence-game equilibria are computed, read by every model
# that solves for presentation strategies (the solver is antiamp.evidence_game).
METHODS = ("enumerate", "br", "qre", "root", "all")
PAYOFFS = ("exact", "simulated")


@dataclass
class EquilibriumConfig:
    """How equilibria are computed (``equilibrium.*``)."""

    #: ``enumerate`` (exact support enumeration), ``br``, ``qre``, ``root`` (general
    #: engine) or ``all`` (enumeration plus every general method, merged).
    method: str = declare("enumerate", choices=METHODS)
    #: ``exact`` (closed-form payoffs) or ``simulated`` (kernel class counts, CRN).
    payoffs: str = declare("exact", choices=PAYOFFS)
    #: Certificate tolerance: a reported equilibrium's deviation gain is below it.
    tol: float = declare(1e-9, 'tol', 'certificate tolerance', range='(0, 1)')
    #: Starting profiles for the general methods.
    starts: int = declare(9, range='int [1, 10000]')


@dataclass
class Config:
    """The configuration of a run: a dataclass per shared section (``model``,
    ``judge``, ``protocol``, ``welfare``, ``run``, ``export``), as Hydra composes it
    from ``conf/``; the registry subclasses it with a model's own sections.
    :func:`antiamp.config.validate` checks it."""

    model: ModelConfig = field(default_factory=ModelConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    protocol: ProtocolConfig = field(default_factory=ProtocolConfig)
    welfare: WelfareConfig = field(default_factory=WelfareConfig)
    run: RunConfig = field(default_factory=RunConfig)
    export: ExportConfig = field(default_factory=ExportConfig)


_PLAIN_TYPES: dict = {}


def _plain_fields(schema) -> dict | None:
    """``{field: (type, optional)}`` of a dataclass whose fields are all float, int,
    bool, str (optionally None) or nested such dataclasses; None if any is not."""
    import dataclasses
    import typing

    if schema in _PLAIN_TYPES:
        return _PLAIN_TYPES[schema]
    out = {}
    fields = {f.name: f for f in dataclasses.fields(schema)}
    for name, t in typing.get_type_hints(schema).items():
        if name not in fields:
            continue
        f = fields[name]
        default = (f.default if f.default is not dataclasses.MISSING else
                   f.default_factory() if f.default_factory is not dataclasses.MISSING
                   else None)
        if isinstance(default, dict) and default:
            # OmegaConf merges a table into a non-empty default table key by key:
            # leave such fields to it (here a value would replace the whole table).
            t = "merged"
            out[name] = (t, False)
            continue
        optional = False
        if typing.get_origin(t) is typing.Union:
            args = [a for a in typing.get_args(t) if a is not type(None)]
            optional = len(args) == 1 and len(typing.get_args(t)) == 2
            t = args[0] if optional else t
        if typing.get_origin(t) in (dict, list):
            t = {(dict, (str, Any)): "dict", (list, (str,)): "list"}.get(
                (typing.get_origin(t), typing.get_args(t)))
            if t is None:
                out = None
                break
        elif not (t in (float, int, bool, str, Any)
                  or (dataclasses.is_dataclass(t) and not optional
                      and _plain_fields(t) is not None)):
            out = None
            break
        out[name] = (t, optional)
    _PLAIN_TYPES[schema] = out
    return out


_NOT_PLAIN = object()


def _plain_any(v):
    if v is None or type(v) in (int, float, bool):
        return v
    if type(v) is str:
        return _NOT_PLAIN if "${" in v else v
    if isinstance(v, (list, tuple)):
        out = [_plain_any(x) for x in v]
        return _NOT_PLAIN if any(x is _NOT_PLAIN for x in out) else out
    if isinstance(v, dict) and all(type(k) is str for k in v):
        out = {k: _plain_any(x) for k, x in v.items()}
        return _NOT_PLAIN if any(x is _NOT_PLAIN for x in out.values()) else out
    return _NOT_PLAIN


def build_direct(schema, values: dict):
    """The dataclass ``schema`` built straight from the nested dict ``values`` when every
    value already has its field's type (an int for a float field is widened, as
    OmegaConf widens it); None whenever OmegaConf has anything to do (an unknown key,
    a string to convert, an interpolation, a wrong type to report), so that the
    caller's OmegaConf merge gives the same object or the same error.

    Why by hand: OmegaConf's structured merge costs 20 to 40 ms a config, more than
    solving a grid of 10^4 equilibrium cells or than a small simulation; the result is
    the same object (tested against the OmegaConf path).
    """
    fields = _plain_fields(schema)
    if fields is None or not isinstance(values, dict):
        return None
    kwargs = {}
    for k, v in values.items():
        if k not in fields:
            return None
        t, optional = fields[k]
        if t == "merged":
            return None
        if v is None:
            if not optional:
                return None
        elif t is float:
            if type(v) is int:
                v = float(v)
            elif type(v) is not float:
                return None
        elif t is str:
            if type(v) is not str or "${" in v:
                return None
        elif t in (int, bool):
            if type(v) is not t:
                return None
        elif t is Any or t == "dict":  # lists and tables of plain values, as OmegaConf
            v = _plain_any(v)            # returns them
            if v is _NOT_PLAIN or (t == "dict" and not isinstance(v, dict)):
                return None
        elif t == "list":  # of strings
            if not isinstance(v, (list, tuple)) or any(type(x) is not str or "${" in x
                                                       for x in v):
                return None
            v = list(v)
        else:  # a nested section
            v = build_direct(t, v)
            if v is None:
                return None
        kwargs[k] = v
    return schema(**kwargs)


def to_dataclass(schema, values: dict, node=None):
    """The dataclass ``schema`` from the plain dict ``values``: :func:`build_direct`
    where it applies, else OmegaConf's merge into ``node()`` (a function giving the
    structured schema, called only then; default ``OmegaConf.structured(schema)``),
    whose errors (naming the key) the caller reports."""
    obj = build_direct(schema, values)
    if obj is None:
        base = node() if node is not None else OmegaConf.structured(schema)
        obj = OmegaConf.to_object(OmegaConf.merge(base, values))
    return obj


def to_config(cfg: Any = None) -> Config:
    """Turn a dataclass, OmegaConf node, nested dict or None into a validated :class:`Config`.

    Unknown keys and values of the wrong type raise :class:`ConfigError`.
    """
    if cfg is None:
        cfg = {}
    try:
        if isinstance(cfg, Config):  # checked as its fields' plain values are (a copy)
            import dataclasses

            obj = build_direct(Config, plain_values(dataclasses.asdict(cfg)))
            if obj is None:  # a field of the wrong type: OmegaConf says which
                obj = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(Config),
                                                          OmegaConf.structured(cfg)))
        elif isinstance(cfg, (dict, DictConfig)):
            plain = _strip_hydra(cfg)
            check_sections(plain)
            check_flags(plain, Config)
            obj = to_dataclass(Config, plain)
        else:
            raise ConfigError(
                f"config must be a Config, a DictConfig or a dict, not {type(cfg).__name__}"
            )
    except OmegaConfBaseException as exc:
        raise omegaconf_error(exc) from None
    validate(obj)
    return obj


#: OmegaConf's message for a value of the wrong type: (value, type) or (value, "bool").
TYPE_ERROR = (r"Value '(.*?)'(?: of type '\w+')? (?:could not be converted to (\w+)"
              r"|is not a valid (bool))")


def type_message(key: str, value: str, kind: str, decl: dict, default=None) -> str:
    """A plain message for a value of the wrong type (``kind``: "integer", "float",
    "bool"...): the field, the value as given and the values the field takes (its
    declaration ``decl``: range or choices; a bool field whose ``default`` is None
    takes null too), instead of OmegaConf's report."""
    if kind == "bool":
        allowed = "true or false" + (" (or null)" if default is None else "")
        return f"{key}={value}: {key} must be {allowed}"
    if "range" in decl:
        what = Interval.parse(decl["range"]).describe()
        allowed = ("lie in " if what[0] in "[(" else "be ") + what + decl.get("why", "")
    elif "choices" in decl:
        allowed = "be one of " + ", ".join(map(str, decl["choices"]))
    else:
        allowed = {"integer": "be an integer", "float": "be a number"}.get(kind, f"be a {kind}")
    return f"{key}={value}: not {'an integer' if kind == 'integer' else 'a number'}; " \
           f"{key} must {allowed}"


def omegaconf_error(exc: Exception) -> ConfigError:
    """OmegaConf's error as a ConfigError naming the key, with the closest field of its
    section where the key is not one ("did you mean", as the commands say)."""
    import dataclasses
    import re

    key = getattr(exc, "full_key", None)
    msg = str(exc).splitlines()[0]
    kind = getattr(exc, "object_type", None)
    wrong = re.search(TYPE_ERROR, msg)
    if key and wrong:  # the message the commands give (antiamp.cmdline.wrong_type)
        name = str(key).rsplit(".", 1)[-1]
        f = next((f for f in dataclasses.fields(kind) if f.name == name), None) \
            if dataclasses.is_dataclass(kind) else None
        default = None
        if f is not None and f.default is not dataclasses.MISSING:
            default = f.default
        return ConfigError(type_message(str(key), wrong.group(1),
                                        (wrong.group(2) or wrong.group(3)).lower(),
                                        dict(f.metadata) if f is not None else {}, default))
    if key and "." in str(key) and "not in" in msg and dataclasses.is_dataclass(kind):
        section, field = str(key).rsplit(".", 1)
        near = close_matches(field, [f.name for f in dataclasses.fields(kind)], n=1)
        if near:
            msg += f"; did you mean {section}.{near[0]}?"
    return ConfigError(f"{key}: {msg}" if key else msg)


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


def close_matches(word: str, choices, n: int = 3) -> list:
    """The choices that look like ``word`` (difflib's ratio, as argparse's own
    suggestions in Python 3.12+; case and ``-``/``_`` ignored): for "did you mean"."""
    import difflib

    norm = {str(c).lower().replace("-", "_"): c for c in choices}
    got = difflib.get_close_matches(str(word).lower().replace("-", "_"), list(norm), n=n,
                                    cutoff=0.6)
    return [norm[g] for g in got]


def check_number(name: str, v: Any) -> float:
    """``v`` as a finite float; ConfigError naming the field ``name`` otherwise."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(f"{name} must be a number, got {v!r}")
    if not math.isfinite(float(v)):
        raise ConfigError(f"{name} must be finite, got {v!r}")
    return float(v)


def require_logit_judge(cfg, model: str, why: str) -> None:
    """ConfigError unless the judge is the logit judge: ``why`` says what the model's
    judge weighs (one message shape for every model that needs it)."""
    if cfg.judge.kind != "logit":
        raise ConfigError(f"model={model} needs judge.kind=logit{why}")


#: Bytes a kernel's per-block sums may take (a row of sums per block of instances, all
#: held until the blocks are added): beyond, the run is refused before it starts.
MAX_BLOCK_SUMS_BYTES = 2 << 30


def check_block_sums(cfg, model: str, per_block: int, block: int, unit: str) -> None:
    """ConfigError when ``run.n_instances`` would make the kernel's per-block sums
    (``per_block`` bytes per ``block`` instances) exceed :data:`MAX_BLOCK_SUMS_BYTES`:
    a MemoryError, a traceback, after the run began, otherwise."""
    most = MAX_BLOCK_SUMS_BYTES // per_block * block
    n = int(cfg.run.n_instances)
    if n > most:
        raise ConfigError(f"run.n_instances must be at most {most:,} for {model}, got {n:,}: "
                          f"its kernel holds a row of sums per {block:,} {unit} "
                          f"({per_block:,} bytes), at most {MAX_BLOCK_SUMS_BYTES >> 30} GiB; "
                          "run several seeds instead")


def check_prob(name: str, v: Any) -> None:
    """A probability in [0, 1]; ConfigError naming the field ``name`` otherwise."""
    x = check_number(name, v)
    if not 0.0 <= x <= 1.0:
        raise ConfigError(f"{name} must lie in [0, 1], got {v!r}")


def check_int(name: str, v: Any, lo: int, hi: int | None = None, why: str = "") -> None:
    """An integer in [lo, hi] (no upper bound when ``hi`` is None); ConfigError naming
    the field ``name`` and the range otherwise."""
    rng = f">= {lo}" if hi is None else f">= {lo} and <= {hi:,}"
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{name} must be an integer {rng}, got {v!r}")
    if v < lo or (hi is not None and v > hi):
        raise ConfigError(f"{name} must be an integer {rng}{why}, got {v!r}")




#: Sections already found valid (their field values): a grid's cells share most of
#: their sections, and the checks are a pure function of the values.
_VALID: dict = {}
_MAX_VALID = 1 << 16


def section_key(name: str, section) -> tuple | None:
    """A section's memo key (its name, type and field values), or None when a value is
    unhashable (a list): such a section is checked every time."""
    try:
        # With each value's type: 1, 1.0 and True are equal keys but not equally valid.
        key = (name, type(section), tuple((type(v), v) for v in vars(section).values()))
        hash(key)
    except TypeError:
        return None
    return key


def validate(cfg: Config, only: tuple | None = None) -> None:
    """Check every field's range; raise :class:`ConfigError` naming the first bad field:
    the shared sections in their order, then a model's sections (their declared ranges
    and choices; a model's ``validate`` checks what depends on several fields).
    ``only``: the sections to check (of a config that differs from a valid one in
    those alone: a sweep's cells), with the one check across sections."""
    import dataclasses

    first = [name for name, _ in _SECTION_CHECKS]
    for name in first:
        if only is None or name in only:
            validate_section(name, getattr(cfg, name))
    for f in dataclasses.fields(cfg):
        if f.name not in first and (only is None or f.name in only):
            section = getattr(cfg, f.name)
            if dataclasses.is_dataclass(section):
                validate_section(f.name, section)
    if cfg.judge.kind == "logit" and cfg.protocol.consult_default != 0:
        raise ConfigError(
            "protocol.consult_default applies to the tie-break judge only "
            "(the logit judge's no-evidence endorsement is sigma(lam*mu)); leave it at 0"
        )


def validate_section(name: str, section) -> None:
    """The checks of one section on its own (every section's checks but one, judge.kind
    against protocol.consult_default, read their own section only; see :func:`validate`)."""
    key = section_key(name, section)
    if key is not None and key in _VALID:
        return
    check_declared(name, section)
    if name in _CHECKS:
        _CHECKS[name](section)
    if key is not None:
        if len(_VALID) >= _MAX_VALID:
            _VALID.clear()
        _VALID[key] = True


# The ranges and choices of the shared sections are declared on their fields
# (:func:`declare`, checked by :func:`check_declared`); what remains here depends on
# this machine or on the file system.
def _check_run(r) -> None:
    import os

    check_int("run.n_threads", r.n_threads, 0, os.cpu_count() or 1,
              " (0 = every core; at most this machine's cores)")
    if r.device == "cuda":
        from antiamp.kernels.gpu import status

        ok, why = status()
        if not ok:
            raise ConfigError(f"run.device=cuda needs a CUDA GPU: {why}; "
                              "use run.device=cpu or run.device=auto")


def _check_export(e) -> None:
    if not str(e.path).lower().endswith((".parquet", ".csv")):
        raise ConfigError(f"export.path must end in .parquet or .csv, got {e.path!r}")
    from pathlib import PurePath

    ep = PurePath(str(e.path))
    if not ep.is_absolute() and ".." in ep.parts:
        raise ConfigError(f"export.path must stay inside the run directory (no '..'), got "
                          f"{e.path!r}; give an absolute path to write elsewhere")
    if e.n_instances and ep.is_absolute():  # before anything is computed or made
        from .outputs_policy import OutputError, check_file

        try:
            check_file(ep, option="export.path")
        except OutputError as exc:
            raise ConfigError(str(exc)) from None


# Order: the first bad field reported is the first in this order (as before).
_SECTION_CHECKS = (("model", None), ("judge", None), ("protocol", None), ("welfare", None),
                   ("run", _check_run), ("export", _check_export))
_CHECKS = {k: f for k, f in _SECTION_CHECKS if f is not None}



def _yaml_plain(x):
    import dataclasses
    import enum

    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: _yaml_plain(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if isinstance(x, dict):
        return {k: _yaml_plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_yaml_plain(v) for v in x]
    if isinstance(x, enum.Enum):
        return x.name
    return x


def as_yaml(cfg: Config) -> str:
    """The resolved configuration as YAML (stored in every output's attrs).

    The same text as ``OmegaConf.to_yaml(OmegaConf.structured(cfg))`` (tested), written
    by PyYAML straight from the dataclasses: building the structured node took 25 ms
    a call, more than solving 10^4 equilibrium cells.
    """
    plain = _yaml_plain(cfg)
    # The text kept by the values it writes (a grid's blocks dump one config once):
    # ``repr`` tells 1 from 1.0, True and "1", and keeps the order the YAML keeps.
    key = repr(plain)
    if key not in _YAML:
        if len(_YAML) > 64:
            _YAML.clear()
        _YAML[key] = _dump_yaml(plain)
    return _YAML[key]


_YAML: dict = {}


def _dump_yaml(plain) -> str:
    import yaml

    return yaml.dump(plain, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),
                     default_flow_style=False, allow_unicode=True, sort_keys=False)
