"""Sphinx configuration of antiamp's documentation (build: ``python docs/build.py``)."""

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS))

import antiamp  # noqa: E402
from gen_pages import generate  # noqa: E402

generate()  # the pages of every model, from the code

project = "antiamp"
author = "The antiamp authors"
copyright = "2026, The antiamp authors"
release = version = antiamp.__version__

extensions = [
    "myst_nb",  # Markdown (MyST) pages and notebooks executed during the build
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax 3 served from the site itself: no CDN
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "README.md", "figures/README*", "**.ipynb_checkpoints",
                    "jupyter_execute"]
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# Notebooks run at every build (a notebook that stops working fails the build).
nb_execution_mode = "force"
nb_execution_timeout = 300
nb_execution_raise_on_error = True
nb_execution_show_tb = True

autodoc_default_options = {"members": True, "undoc-members": False}
autodoc_typehints = "description"
autodoc_preserve_defaults = True  # signatures show defaults as written (log=print)
autodoc_member_order = "bysource"
napoleon_numpy_docstring = True
napoleon_google_docstring = False

html_theme = "pydata_sphinx_theme"
html_title = f"antiamp {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    # Nothing fetched at build or view time.
    "icon_links": [],
}
html_static_path = ["_static"]
# code cells and their outputs scroll sideways, never cut at the right edge
html_css_files = ["antiamp.css"]
html_last_updated_fmt = None

# Every warning is an error (python docs/build.py passes -W --keep-going); the
# tables of generated pages use headings only within a page.
suppress_warnings = ["myst.header"]
