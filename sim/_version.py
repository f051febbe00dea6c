"""The version of antiamp (one place that every module may import, and the one that
``pyproject.toml`` reads at build time: a literal, since asking the installed
distribution's metadata costs an import of ``importlib.metadata`` on every start)."""

__version__ = "0.2.0"
