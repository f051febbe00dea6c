"""The package's conventions: one version everywhere, ``python -m antiamp``, py.typed."""

from limits import limit
import re
import subprocess
import sys
from pathlib import Path

import pytest

import antiamp

ROOT = Path(__file__).resolve().parents[1]


def test_python_m_antiamp_is_the_command():
    out = subprocess.run([sys.executable, "-m", "antiamp", "--version"], capture_output=True,
                         text=True, timeout=limit(120), check=True).stdout
    assert out.strip() == f"antiamp (antiamp {antiamp.__version__})"


def test_typed_marker_ships_with_the_package():
    assert (Path(antiamp.__file__).parent / "py.typed").is_file()


def test_version_is_recorded_in_changelog_and_citation():
    v = antiamp.__version__
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## \[?{re.escape(v)}\]? - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M), \
        f"CHANGELOG.md has no entry for {v}"
    cff = (ROOT / "CITATION.cff").read_text()
    assert re.search(rf"^version: {re.escape(v)}$", cff, re.M), f"CITATION.cff is not at {v}"


@pytest.mark.parametrize("tool", [["ruff", "check", "."], ["mypy"], ["codespell_lib"]],
                         ids=lambda t: t[0])
def test_linters_pass_with_the_projects_settings(tool):
    """ruff, mypy and codespell with pyproject.toml's settings (the dev group installs
    them; skipped where they are not installed)."""
    pytest.importorskip(tool[0])
    run = subprocess.run([sys.executable, "-m", *tool], cwd=ROOT, capture_output=True,
                         text=True, timeout=limit(600))
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
