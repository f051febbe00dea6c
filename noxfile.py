"""Task runner (``nox -s <session>``): the tests, the docs and the linters, each in a
fresh virtual environment.  CI itself runs ``.ci/run``."""

import nox

nox.options.sessions = ["lint", "tests"]


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, codespell and mypy with the settings of pyproject.toml."""
    session.install("ruff", "codespell", "mypy")
    session.run("ruff", "check", ".")
    session.run("codespell")
    session.run("mypy")


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite, as README.md runs it (``pytest`` after ``antiamp warm``)."""
    session.install(".[test]")
    session.run("antiamp", "warm")
    session.run("pytest", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site into docs/_build/html (warnings are errors)."""
    session.install(".[docs]")
    session.run("python", "docs/build.py", *session.posargs)
