"""The documentation site as a reader sees it: the front page and one model page
opened in a headless Chromium (Selenium), after MathJax and the images have loaded,
have a title, navigation, rendered figures, a formula typeset by MathJax (the front
page) or the parameters table (the model page), no MathJax error, and the
screenshot shows a page (not a blank one).  Skipped where no Chromium and
chromedriver are installed (`.ci/run` installs them where it can: Debian's
``chromium`` and ``chromium-driver``)."""

import io
import shutil
import time

import numpy as np
import pytest

from test_docs import _needs_sphinx, site  # noqa: F401  (the site, built once per module)

pytestmark = [pytest.mark.docs, pytest.mark.xdist_group("docs")]


def _browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    driver_path = shutil.which("chromedriver")
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if not (driver_path and binary):
        pytest.skip("no Chromium and chromedriver on this machine (apt install chromium "
                    "chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1600",
              "--disable-dev-shm-usage", "--allow-file-access-from-files"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(driver_path), options=opts)


@pytest.fixture(scope="module")
def browser():
    b = _browser()
    yield b
    b.quit()


def _rendered(browser, url, formula: bool, timeout=30.0) -> dict:
    """What the page shows once loaded: title, navigation links, images drawn, formulas
    typeset by MathJax, and the screenshot."""
    browser.get(url)
    state = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = browser.execute_script("""
            const imgs = Array.from(document.images);
            return {
              title: document.title,
              h1: (document.querySelector('h1') || {}).textContent || '',
              nav_links: document.querySelectorAll('nav a[href]').length,
              images: imgs.length,
              drawn: imgs.filter(i => i.complete && i.naturalWidth > 0).map(i => i.src),
              formulas: document.querySelectorAll('mjx-container').length,
              tables: document.querySelectorAll('table').length,
              typeset_errors: document.querySelectorAll('mjx-merror').length,
              ready: document.readyState,
            };""")
        if state["ready"] == "complete" and (state["formulas"] or not formula) and \
                len(state["drawn"]) == state["images"]:
            break
        time.sleep(0.25)
    state["png"] = browser.get_screenshot_as_png()
    return state


def _not_blank(png: bytes) -> None:
    import matplotlib.image as mpimg

    px = mpimg.imread(io.BytesIO(png), format="png")[..., :3]
    assert px.shape[0] >= 800 and px.shape[1] >= 1000
    # a page of text, figures and navigation: many distinct shades, not one colour
    assert px.std() > 0.05
    assert len(np.unique((px * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 50


@pytest.mark.parametrize("page, words, formula", [
    ("index.html", ["antiamp"], True),
    ("models/baseline.html", ["baseline"], False),  # its parameters table, its figures
])
def test_page_renders_title_navigation_figure_and_formula(site, browser, page,  # noqa: F811
                                                           words, formula):
    s = _rendered(browser, (site / page).as_uri(), formula)
    assert "antiamp" in s["title"], s["title"]
    assert any(w in (s["h1"] + s["title"]).lower() for w in words), (s["h1"], s["title"])
    assert s["nav_links"] >= 5, s["nav_links"]
    assert s["images"] >= 1 and len(s["drawn"]) == s["images"], (s["images"], s["drawn"])
    assert s["typeset_errors"] == 0, s
    if formula:
        assert s["formulas"] >= 1, s
    else:
        assert s["tables"] >= 1, s
    _not_blank(s["png"])
