"""The built documentation site, opened in a real browser: headless Chromium renders the index, an
API page and an executed gallery page to PNGs, and none of them is blank.

The site is built once per session by the ``docs_site`` fixture of tests/conftest.py (shared with
tests/test_docs_build.py): as ``make docs`` builds it, warnings as errors, except that
sphinx-gallery executes one quick example (``-D sphinx_gallery_conf.filename_pattern=/plot_interactions``:
the other examples' pages are written with their code but without running it), so the build takes
about a minute on 2 cores rather than the full gallery's several. Skips where Sphinx, the docs extra or Chromium is absent (CI's .ci/run
installs Debian's chromium when it can).
"""

import os
import shutil
import subprocess

import numpy as np
import pytest

pytest.importorskip("sphinx")
pytest.importorskip("numpydoc")
pytest.importorskip("sphinx_gallery")
pytest.importorskip("pydata_sphinx_theme")
pytest.importorskip("myst_parser")
Image = pytest.importorskip("PIL.Image")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
CHROMIUM = next((p for p in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser"))
                 if p and os.path.exists(p)), None)
EXAMPLE = "plot_interactions"  # the example the session build executes: DOCS_EXAMPLE in tests/conftest.py

pytestmark = [pytest.mark.slow, pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed")]


@pytest.fixture(scope="module")
def site(docs_site):
    """The site built once for the session (tests/conftest.py), with EXAMPLE executed."""
    return docs_site


def screenshot(page, shot, profile, height=1600):
    """Chromium's own render of ``page`` (a file) into the PNG ``shot``; returns it as an RGB array."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-extensions", "--hide-scrollbars", f"--user-data-dir={profile}",
           f"--window-size=1280,{height}", f"--screenshot={shot}", page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert shot.exists(), f"no screenshot of {page.name}: {proc.stderr[-2000:]}"
    with Image.open(shot) as im:
        return np.asarray(im.convert("RGB"))


def assert_not_blank(rgb, name, min_colours=40, min_ink=0.03):
    """A rendered page: many distinct colours (text antialiasing, the theme, figures) and more than
    ``min_ink`` of the pixels away from white. A blank or error page is one or two flat colours."""
    flat = rgb.reshape(-1, 3)
    colours = len(np.unique(flat, axis=0))
    ink = float((flat.astype(int).sum(1) < 3 * 235).mean())
    assert colours >= min_colours, f"{name}: {colours} distinct colours, a blank page"
    assert ink >= min_ink, f"{name}: {ink:.3f} of the pixels not white, a blank page"
    return colours, ink


def test_index_renders(site, tmp_path):
    page = site / "index.html"
    html = page.read_text(encoding="utf-8")
    assert "I use shapiq" in html and "auto_examples/index.html" in html
    assert_not_blank(screenshot(page, tmp_path / "index.png", tmp_path / "profile"), "index")


def test_api_page_renders(site, tmp_path):
    page = site / "generated" / "api" / "featurelens.explainer.html"
    html = page.read_text(encoding="utf-8")
    assert "<h1>featurelens.explainer" in html and "sig-name" in html  # the title and the signature
    assert_not_blank(screenshot(page, tmp_path / "api.png", tmp_path / "profile"), "API page")


def test_gallery_page_renders_its_figures(site, tmp_path):
    page = site / "auto_examples" / f"{EXAMPLE}.html"
    html = page.read_text(encoding="utf-8")
    # The executed example embeds its figures; their files are in the built site and not blank.
    images = [part.split('"', 1)[0] for part in html.split('src="')[1:] if "sphx_glr_" + EXAMPLE in part.split('"', 1)[0]]
    assert len(images) >= 2, images  # the heatmap and the SPEX scatter
    figures = []
    for src in images:
        with Image.open(page.parent / src) as im:
            figures.append(np.asarray(im.convert("RGB")))
        assert_not_blank(figures[-1], src, min_colours=20, min_ink=0.01)
    # The page as the browser draws it, tall enough to reach the first figure (the heatmap).
    rgb = screenshot(page, tmp_path / "gallery.png", tmp_path / "profile", height=2400)
    assert_not_blank(rgb, "gallery page")
    # The heatmap's most frequent strong colour (its planted pair's cells, the end of RdBu_r) is
    # nowhere in the theme: the browser drew the figure when thousands of pixels have it.
    flat = figures[0].reshape(-1, 3).astype(int)
    strong = flat[flat.max(1) - flat.min(1) > 80]
    colours, counts = np.unique(strong, axis=0, return_counts=True)
    colour = colours[counts.argmax()]
    near = int((np.abs(rgb.astype(int) - colour).sum(2) < 40).sum())
    assert near > 1000, f"the heatmap's colour {colour} covers {near} pixels of the screenshot"
