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

from antiamp.registry import builtin_config, builtin_names, get

ROOT = Path(__file__).resolve().parents[1]
# One worker builds the site once for every test that reads it (module fixture).
pytestmark = [pytest.mark.docs, pytest.mark.xdist_group("docs")]


def _build(docs: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(docs / "build.py"), "--out", str(out), "-q"],
                          cwd=docs.parent, capture_output=True, text=True, timeout=900)


def _needs_sphinx():
    for mod in ("sphinx", "myst_nb", "pydata_sphinx_theme"):
        pytest.importorskip(mod, reason="the docs extra is not installed")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    _needs_sphinx()
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
                   "notebooks/getting_started.html", "notebooks/designing_a_protocol.html"):
        assert f'href="{target}' in page, target


def test_a_page_per_model_with_its_parameters(site):
    index = (site / "models" / "index.html").read_text()
    for name in builtin_names():
        page = site / "models" / f"{name}.html"
        assert page.is_file(), name
        assert f'href="{name}.html"' in index, name
        text = _text(page)
        for sec, cls in (getattr(builtin_config(name), "SECTIONS", None) or {}).items():
            for f in dataclasses.fields(cls):
                assert f"{sec}.{f.name}" in text, (name, f.name)
        assert f"antiamp model={name}" in text, name
        assert "Metrics" in text, name  # its example cell ran at the build
        for v in get(name).plot_vars:
            assert v in text, (name, v)
    from antiamp.config import Config
    from antiamp.registry import BASE_SECTIONS

    shared = _text(site / "models" / "shared.html")
    for f in dataclasses.fields(Config):
        if f.name in BASE_SECTIONS:
            for g in dataclasses.fields(f.default_factory):
                assert f"{f.name}.{g.name}" in shared, (f.name, g.name)


def test_every_link_of_the_readme_resolves(site):
    """The README's links: a file of the repository exists; a page of the built site
    (``docs/_build/html/...``, the models' pages) is one this build wrote; and every
    model has its row linking to its page."""
    text = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)#\s]+)\)", text)
    assert links
    built = "docs/_build/html/"
    for link in links:
        if link.startswith(("http://", "https://")):
            continue
        if link.startswith(built):
            assert (site / link[len(built):]).is_file(), link
        else:
            assert (ROOT / link).exists(), link
    for name in builtin_names():
        assert f"]({built}models/{name}.html)" in text, name
    assert len(text.splitlines()) < 200  # a front page; the rest is in the guides


def test_model_pages_link_their_tutorial(site):
    """A guide that links to a model's page is linked back from it."""
    for guide in sorted((ROOT / "docs" / "guides").glob("*.md")):
        for name in re.findall(r"\]\(\.\./models/(\w+)\.md\)", guide.read_text()):
            if name not in builtin_names():  # the result schema, the gallery
                continue
            page = (site / "models" / f"{name}.html").read_text()
            assert f'href="../guides/{guide.stem}.html' in page, (name, guide.name)


def test_gallery_has_every_named_sweep(site):
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        import gen_pages
    finally:
        sys.path.remove(str(ROOT / "docs"))
    text = _text(site / "models" / "gallery.html")
    sweeps = gen_pages.named_sweeps()
    assert len(sweeps) >= len(builtin_names())
    for name in sweeps:
        assert f"antiamp-sweep sweep={name}" in text, name


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
    # the other notebooks ran to their last cells too
    assert "redelib_adaptive" in _text(site / "notebooks" / "equilibria_and_extensions.html")
    assert "closed form" in _text(site / "notebooks" / "estimating_from_a_log.html")
    assert "verified by" in _text(site / "notebooks" / "designing_a_protocol.html")
    assert "stores.html" in (site / "guides.html").read_text()


def _copy_docs(dest: Path, *skip: str) -> None:
    """The docs and what they read (README, BENCHMARKS, the named sweeps) in ``dest``."""
    for name in ("README.md", "BENCHMARKS.md"):
        shutil.copy(ROOT / name, dest / name)
    shutil.copytree(ROOT / "conf", dest / "conf")
    shutil.copytree(ROOT / "docs", dest / "docs", ignore=shutil.ignore_patterns(
        "_build", "models", "jupyter_execute", *skip))


def test_a_notebook_that_stops_working_fails_the_build(tmp_path):
    _needs_sphinx()
    _copy_docs(tmp_path)
    nb = tmp_path / "docs" / "notebooks" / "getting_started.md"
    text = nb.read_text()
    assert "assert abs(z).max() < 5, z" in text
    nb.write_text(text.replace("assert abs(z).max() < 5, z", "raise RuntimeError('broken')"))
    r = _build(tmp_path / "docs", tmp_path / "out")
    assert r.returncode != 0
    assert "getting_started" in r.stdout + r.stderr


def test_a_broken_internal_link_fails_the_build(tmp_path):
    """The build's -W: a copy of the docs with one link to a page that does not exist."""
    _needs_sphinx()
    _copy_docs(tmp_path, "notebooks")
    index = tmp_path / "docs" / "index.md"
    index.write_text(index.read_text().replace("notebooks/getting_started\n", "")
                     .replace("[getting started in Python](notebooks/getting_started.md)",
                              "[a page that is not there](no_such_page.md)"))
    r = _build(tmp_path / "docs", tmp_path / "out")
    assert r.returncode != 0
    assert "no_such_page" in r.stdout + r.stderr


VALIDATE = """
import shlex, sys
sys.path.insert(0, sys.argv[1])
import gen_pages
from antiamp.cli import prevalidate as cell, setup as cell_setup
from antiamp.sweeps.cli import prevalidate as grid, setup as grid_setup
gen_pages.generate()
cell_setup(); grid_setup()
cmds = gen_pages.commands()
assert len(cmds) >= len(gen_pages.named_sweeps()), cmds
for line in cmds:
    argv = shlex.split(line)
    try:
        (cell if argv[0] == "antiamp" else grid)(argv[1:])
    except Exception as exc:
        sys.exit(f"{line}: {type(exc).__name__}: {exc}")
print(len(cmds))
"""


def test_every_command_the_model_pages_print_validates(tmp_path):
    """The cell and grid commands of the generated pages compose and validate as
    printed (the commands' own checks before a run; nothing runs)."""
    r = subprocess.run([sys.executable, "-c", VALIDATE, str(ROOT / "docs")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    assert int(r.stdout.split()[-1]) >= len(builtin_names())
