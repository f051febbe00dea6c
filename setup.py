"""The package list of ``antiamp`` (the rest of the build is in pyproject.toml).

Computed rather than listed so that adding a model touches only its own package:
every folder of ``sim/models/`` with an ``__init__.py`` is installed as
``antiamp.models.<name>``.
"""

from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
MODELS = sorted(f"antiamp.models.{p.name}" for p in (HERE / "sim" / "models").iterdir()
                if (p / "__init__.py").is_file())

setup(packages=["antiamp", "antiamp.estimation", "antiamp.kernels", "antiamp.kernels.gpu", "antiamp.sweeps",
                "antiamp.conf", "antiamp.conf.judge", "antiamp.conf.sweep", "antiamp.conf.executor",
                "antiamp.models", *MODELS])
