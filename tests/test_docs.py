"""The documentation site builds (warnings are errors) and has the pages a reader
needs; a broken internal link fails the build.  Skipped without the docs extra."""

import dataclasses
import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sphinx")
pytest.importorskip("myst_nb")
pytest.importorskip("pydata_sphinx_theme")

from antiamp.registry import builtin_names, builtin_package  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.docs


def _build(docs: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(docs / "build.py"), "--out", str(out), "-q"],
                          cwd=docs.parent, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "html"
    r = _build(ROOT / "docs", out)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-6000:]
    return out


def _text(page: Path) -> str:
    """The page's text (tags removed: highlighted code reads as written)."""
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))


def test_front_page_has_commands_figure_formula_and_navigation(site):
    page = (site / "index.html").read_text()
    assert "antiamp-sweep sweep=amp_gap" in _text(site / "index.html")
    (img,) = re.findall(r'<img[^>]+src="(_images/amp_gap[^"]*)"', page)
    assert (site / img).is_file()
    assert r"\mathrm{Amp}" in page  # a formula, rendered by MathJax in the browser
    # MathJax from the site itself, nothing from a CDN.
    assert re.search(r'<script[^>]+src="_static/mathjax/tex-chtml\.js', page)
    assert (site / "_static" / "mathjax" / "tex-chtml.js").is_file()
    assert not re.search(r'<(script|link)[^>]+(src|href)="(https?:)?//', page)
    for target in ("models/index.html", "api.html", "guides.html", "benchmarks.html",
                   "notebooks/getting_started.html"):
        assert f'href="{target}' in page, target


def test_a_page_per_model_with_its_parameters(site):
    index = (site / "models" / "index.html").read_text()
    for name in builtin_names():
        page = site / "models" / f"{name}.html"
        assert page.is_file(), name
        assert f'href="{name}.html"' in index, name
        text = _text(page)
        for sec, cls in (getattr(builtin_package(name).config, "SECTIONS", None) or {}).items():
            for f in dataclasses.fields(cls):
                assert f"{sec}.{f.name}" in text, (name, f.name)
        assert f"antiamp model={name}" in text, name


def test_guides_api_benchmarks_and_executed_notebook(site):
    for page in ("quickstart", "sweeps", "estimation", "design", "own_model",
                 "reproducibility"):
        assert (site / "guides" / f"{page}.html").is_file(), page
    assert "check_model" in _text(site / "guides" / "own_model.html")
    api = (site / "api.html").read_text()
    for obj in ("antiamp.simulate", "antiamp.sweep", "antiamp.solve", "antiamp.theory",
                "antiamp.registry.Model", "antiamp.testing.check_model",
                "antiamp.config.declare"):
        assert f'id="{obj}"' in api, obj
    assert "antiamp benchmarks" in _text(site / "benchmarks.html")
    nb = _text(site / "notebooks" / "getting_started.html")
    assert "CF-1.10" in nb  # the output of the last cell: the notebook ran
    assert "stores.html" in (site / "guides.html").read_text()


def test_a_broken_internal_link_fails_the_build(tmp_path):
    """The build's -W: a copy of the docs with one link to a page that does not exist."""
    for name in ("README.md", "BENCHMARKS.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "conf", tmp_path / "conf")
    shutil.copytree(ROOT / "docs", tmp_path / "docs", ignore=shutil.ignore_patterns(
        "_build", "models", "guides", "jupyter_execute", "notebooks"))
    index = tmp_path / "docs" / "index.md"
    index.write_text(index.read_text().replace("notebooks/getting_started\n", "")
                     .replace("[getting started in Python](notebooks/getting_started.md)",
                              "[a page that is not there](no_such_page.md)"))
    r = _build(tmp_path / "docs", tmp_path / "out")
    assert r.returncode != 0
    assert "no_such_page" in r.stdout + r.stderr
