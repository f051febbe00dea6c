"""antiamp: a numerical laboratory for AI-oversight protocols (seed 000 and relatives).

Public API::

    import sim
    ds = sim.simulate({"model": {"rho": 0.3}, "judge": {"kind": "logit", "kappa": 2}})
    th = sim.theory({"model": {"rho": 0.3}})
"""

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("antiamp")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

from .config import Config, ConfigError, JudgeConfig, ModelConfig, RunConfig, WelfareConfig, to_config  # noqa: E402
from .core import simulate, theory  # noqa: E402


def __getattr__(name):  # solvers and extensions on first use (PEP 562)
    if name in ("equilibrium", "fixedpoint", "extended", "signals", "effort", "portfolios",
                "panel", "messages", "options"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'sim' has no attribute {name!r}")


__all__ = [
    "Config", "ConfigError", "JudgeConfig", "ModelConfig", "RunConfig", "WelfareConfig",
    "simulate", "theory", "to_config", "__version__",
]
