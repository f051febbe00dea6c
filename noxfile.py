#!/usr/bin/env -S uv run --script
# /// script
# dependencies = ["nox>=2025.10.14"]
# ///
"""Task runner (``nox -s <session>``): the tests, the docs and the linters, each in a
fresh virtual environment.  CI itself runs ``.ci/run``."""

import nox

nox.needs_version = ">=2025.10.14"
nox.options.default_venv_backend = "uv|virtualenv"


@nox.session(default=True)
def lint(session: nox.Session) -> None:
    """ruff, codespell and mypy with the settings of pyproject.toml."""
    session.install("ruff", "codespell", "mypy")
    session.run("ruff", "check", ".")
    session.run("codespell")
    session.run("mypy")


@nox.session(default=True)
def tests(session: nox.Session) -> None:
    """The test suite, as README.md runs it (``pytest`` after ``antiamp warm``)."""
    session.install(".[test]")
    session.run("antiamp", "warm")
    session.run("pytest", *session.posargs)


@nox.session(default=False)
def docs(session: nox.Session) -> None:
    """The documentation site into docs/_build/html (warnings are errors)."""
    session.install(".[docs]")
    session.run("python", "docs/build.py", *session.posargs)


if __name__ == "__main__":
    nox.main()
