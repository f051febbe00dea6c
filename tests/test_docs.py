"""The documentation site builds (warnings are errors) and has the pages a reader
needs; a broken internal link fails the build.  Skipped without the docs extra."""

from limits import limit
import dataclasses
import html
import importlib
import importlib.util
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
                          cwd=docs.parent, capture_output=True, text=True, timeout=limit(900))


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
                "antiamp.testing.close", "antiamp.config.declare", "antiamp.Config",
                "antiamp.config.ConfigError", "antiamp.runner.count_classes",
                "antiamp.layout.kernel_groups", "antiamp.rare.rare_share_floor",
                "antiamp.estimate.estimate", "antiamp.estimate.EstimateOptions"):
        assert f'id="{obj}"' in api, obj
    assert "antiamp benchmarks" in _text(site / "benchmarks.html")
    nb = _text(site / "notebooks" / "getting_started.html")
    assert "CF-1.10" in nb  # the output of the last cell: the notebook ran
    # the other notebooks ran to their last cells too
    assert "redelib_adaptive" in _text(site / "notebooks" / "equilibria_and_extensions.html")
    assert "closed form" in _text(site / "notebooks" / "estimating_from_a_log.html")
    assert "verified by" in _text(site / "notebooks" / "designing_a_protocol.html")
    assert "stores.html" in (site / "guides.html").read_text()


def _sidebar_links(page: Path) -> set:
    """The targets of the links in a page's left navigation (the theme's primary
    sidebar, ``bd-docs-nav``)."""
    text = page.read_text()
    m = re.search(r'<nav[^>]*class="[^"]*bd-docs-nav[^"]*"[^>]*>(.*?)</nav>', text, re.S)
    return set(re.findall(r'href="([^"#]+)', m.group(1))) if m else set()


def test_every_page_has_its_sections_navigation_on_the_left(site):
    """A notebook page shows its section's pages on the left (the notebooks were
    top-level pages with no children, and their left navigation was empty), as a
    guide's page and a model's page do."""
    for page, sibling in (("notebooks/getting_started.html", "designing_a_protocol.html"),
                          ("notebooks/designing_a_protocol.html", "getting_started.html"),
                          ("guides/quickstart.html", "getting_started.html"),
                          ("guides/sweeps.html", "estimation.html"),
                          ("models/baseline.html", "loop.html")):
        links = _sidebar_links(site / page)
        assert any(link.endswith(sibling) for link in links), (page, sorted(links))


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
                       capture_output=True, text=True, timeout=limit(600))
    assert r.returncode == 0, r.stderr[-4000:]
    assert int(r.stdout.split()[-1]) >= len(builtin_names())


# The checks below read the Markdown sources and need no Sphinx.

def _pages() -> list:
    """The pages written by hand: README.md and docs' Markdown (the model pages are
    generated, and the build checks their links)."""
    docs = ROOT / "docs"
    return [ROOT / "README.md", *sorted(docs.glob("*.md")), *sorted(docs.glob("guides/*.md")),
            *sorted(docs.glob("notebooks/*.md"))]


def _prose(text: str) -> str:
    """The text outside fenced code blocks (a command's output may hold any bracket)."""
    return re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.S | re.M)


def _resolve(dotted: str):
    """The object a dotted name names: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            spec = importlib.util.find_spec(".".join(parts[:i]))
        except ModuleNotFoundError:  # a parent that is a module, not a package
            spec = None
        if spec is not None:
            obj = importlib.import_module(".".join(parts[:i]))
            for name in parts[i:]:
                obj = getattr(obj, name)
            return obj
    raise ModuleNotFoundError(dotted)


def test_every_antiamp_name_the_pages_mention_exists():
    """A name in backticks, `antiamp.x.y` (with or without a call after it), is a module
    or an attribute that exists today: a renamed or removed function fails here."""
    seen = set()
    for page in _pages():
        for dotted in re.findall(r"`(antiamp(?:\.\w+)+)", page.read_text()):
            if dotted in seen:
                continue
            seen.add(dotted)
            try:
                _resolve(dotted)
            except (ImportError, AttributeError) as exc:
                pytest.fail(f"{page.relative_to(ROOT)}: `{dotted}` does not exist ({exc})")
    assert len(seen) > 20, sorted(seen)


#: Functions the guides name to explain how something works inside, not to be called:
#: no entry in the API reference.
INTERNAL = {
    "antiamp.runner.kernel_interrupts": "how Ctrl-C reaches a compiled kernel (sweeps guide)",
    "antiamp.lazy.defer_dask_type_check": "an import-time optimisation (performance guide)",
    "antiamp.kernels.load_cached_kernels_lightly": "an import-time optimisation (performance "
                                                   "guide)",
    "antiamp.design.population_shifts": "how the advisor and the estimator draw a new "
                                        "population's shifts alike (design guide)",
}


def _documented() -> list:
    """The objects docs/api.md documents: each ``.. auto*::`` target, and the members of
    an ``automodule`` (the listed ones, or every public one without a list)."""
    api = (ROOT / "docs" / "api.md").read_text()
    out = []
    for kind, name, opts in re.findall(r"^\.\. auto(\w+):: (\S+)\n((?:   :.*\n)*)", api, re.M):
        obj = _resolve(name)
        out.append(obj)
        if kind != "module" or ":no-members:" in opts:
            continue
        listed = re.search(r":members:(.*)", opts)
        members = ([m.strip() for m in listed.group(1).split(",") if m.strip()]
                   if listed and listed.group(1).strip() else
                   [m for m in vars(obj) if not m.startswith("_")])
        out += [getattr(obj, m) for m in members]
    return out


def test_every_function_and_class_the_pages_name_has_an_api_entry():
    """A function or class that README.md or a page of the docs names as `antiamp.x.y` is
    in the API reference (an alias counts: the same object), or in :data:`INTERNAL`."""
    documented = _documented()
    assert len(documented) > 30, len(documented)
    missing = set()
    for page in _pages():
        for dotted in re.findall(r"`(antiamp(?:\.\w+)+)", page.read_text()):
            obj = _resolve(dotted)
            if (callable(obj) and not isinstance(obj, type(re)) and dotted not in INTERNAL
                    and not any(obj is d for d in documented)):
                missing.add(f"{page.relative_to(ROOT)}: {dotted}")
    assert not missing, sorted(missing)
    assert all(callable(_resolve(n)) for n in INTERNAL), INTERNAL


def _slug(heading: str) -> str:
    """MyST's anchor of a heading (``myst_heading_anchors``; GitHub's slugs): the text
    as rendered (code, emphasis and link markup removed), lower case, spaces to
    hyphens, other punctuation dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower().replace(" ", "-"))


def _anchors(page: Path) -> set:
    """The anchors of a page's headings down to the depth docs/conf.py gives anchors."""
    conf = (ROOT / "docs" / "conf.py").read_text()
    depth = int(re.search(r"^myst_heading_anchors\s*=\s*(\d+)", conf, re.M).group(1))
    out = set()
    for hashes, title in re.findall(r"^(#{1,6})\s+(.+?)\s*$", _prose(page.read_text()), re.M):
        if len(hashes) <= depth:
            slug = _slug(title)
            n = sum(1 for s in out if s == slug or re.fullmatch(re.escape(slug) + r"-\d+", s))
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _generated_pages() -> set:
    """The pages docs/gen_pages.py writes into docs/models/: one per built-in model and
    the fixed ones its ``generate`` names."""
    src = (ROOT / "docs" / "gen_pages.py").read_text()
    fixed = set(re.findall(r'"models/(\w+)\.md"', src))
    assert {"index", "results"} <= fixed, fixed
    return fixed | set(builtin_names())


def test_every_relative_link_of_the_pages_resolves():
    """Every relative link of README.md and the docs' Markdown points to a file that
    exists (a generated model page: one gen_pages writes; a page of the built site:
    its source) and, with ``#anchor``, to a heading of that page."""
    generated = _generated_pages()
    built = "docs/_build/html/"
    problems, n = [], 0
    for page in _pages():
        for target in re.findall(r"\]\(([^)\s]+)\)", _prose(page.read_text())):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            n += 1
            path, _, anchor = target.partition("#")
            where = f"{page.relative_to(ROOT)}: ({target})"
            if not path:
                dest = page
            else:
                rel = (page.parent / path).resolve().relative_to(ROOT).as_posix()
                if rel.startswith(built):
                    rel = "docs/" + rel[len(built):].removesuffix(".html") + ".md"
                if rel.startswith("docs/models/"):
                    if Path(rel).stem not in generated:
                        problems.append(f"{where}: no such generated page")
                    continue
                dest = ROOT / rel
                if not dest.exists():
                    problems.append(f"{where}: no such file")
                    continue
            if anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                problems.append(f"{where}: no heading with anchor #{anchor} in "
                                f"{dest.relative_to(ROOT)}")
    assert n > 50, n
    assert not problems, "\n".join(problems)


def test_the_docstrings_the_model_pages_quote_have_no_stray_emphasis():
    """The model pages quote the packages' and their sections' docstrings as Markdown, in
    which a bare ``*`` (a section's fields written model.*, judge.*) starts emphasis and
    swallows the text up to the next one: such names are written as code."""
    from antiamp.config import Config

    docs = {f"{f.name} section": f.default_factory.__doc__ for f in dataclasses.fields(Config)}
    for name in builtin_names():
        docs[f"antiamp.models.{name}"] = importlib.import_module(f"antiamp.models.{name}").__doc__
        for sec, cls in (getattr(builtin_config(name), "SECTIONS", None) or {}).items():
            docs[f"{name}: {sec} section"] = cls.__doc__
    for where, doc in docs.items():
        plain = re.sub(r"``.*?``|`[^`]*`", "", doc or "", flags=re.S)
        assert "*" not in plain, (where, doc)
