"""The documentation site builds with no warnings, and every public name has its page.

Runs Sphinx (``-W --keep-going``, warnings are errors) on ``docs/`` into a temporary folder, once
per session (the ``docs_site`` fixture of tests/conftest.py, shared with the browser test): the
API reference, the generated explainer / metric / CLI / benchmark pages and the guides, with one
gallery example executed (``make docs`` executes them all). Skips when Sphinx or
the docs extra is not installed (``pip install -e ".[docs]"``).
"""

import os

import pytest

pytest.importorskip("sphinx")
pytest.importorskip("numpydoc")
pytest.importorskip("sphinx_gallery")
pytest.importorskip("pydata_sphinx_theme")
pytest.importorskip("myst_parser")

import featurelens as fl  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")


@pytest.fixture(scope="module")
def site(docs_site):
    """The site built once for the session (tests/conftest.py: ``-W --keep-going``, one gallery
    example executed)."""
    return docs_site


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


@pytest.mark.slow
def test_site_builds_with_no_warnings(site):
    assert (site / "index.html").is_file()
    assert "featurelens" in _read(site / "index.html")


@pytest.mark.slow
def test_every_explainer_has_a_page(site):
    for name in fl.list_explainers():
        page = site / "generated" / "explainers" / f"{name}.html"
        assert page.is_file(), name
        html = _read(page)
        assert f"fl.explainer(&quot;{name}&quot;" in html or f'fl.explainer("{name}"' in html, name


@pytest.mark.slow
def test_every_metric_and_public_name_is_in_the_reference(site):
    metrics = _read(site / "generated" / "metrics.html")
    for s in fl.metrics.list_metrics():
        assert s.name in metrics, s.name
    pages = set(os.listdir(site / "generated" / "api"))
    for name in fl.metrics.__all__:
        assert f"featurelens.metrics.{name}.html" in pages, name
    reference = _read(site / "api.html")
    for name in fl.__all__:
        assert f"featurelens.{name}" in reference or f">{name}<" in reference, name
    for module in ("explainers", "games", "approximators", "interactions", "learning", "selection",
                   "datasets", "plots", "parallel", "text", "cli", "models"):
        assert f"featurelens.{module}.html" in pages, module
        for name in getattr(__import__(f"featurelens.{module}", fromlist=["x"]), "__all__", []):
            assert any(p.startswith(f"featurelens.{module}.") and name in p for p in pages) or name in _read(
                site / "generated" / "api" / f"featurelens.{module}.html"), (module, name)


@pytest.mark.slow
def test_cli_and_benchmark_pages(site):
    from featurelens.cli import COMMANDS

    cli = _read(site / "generated" / "cli.html")
    for command in COMMANDS:
        assert f"featurelens {command}" in cli, command
    results = os.path.join(ROOT, "benchmarks", "results")
    for name in (f[:-5] for f in os.listdir(results) if f.endswith(".json")):
        assert (site / "generated" / "benchmarks" / f"{name}.html").is_file(), name
    for guide in ("shap", "captum", "quantus", "trust", "model_files", "reproducibility",
                  "tour", "text", "metrics", "learned", "cluster", "commands"):
        assert (site / "guides" / f"{guide}.html").is_file(), guide
    assert (site / "results.html").is_file() and (site / "layout.html").is_file()
    # each benchmark page shows the summary the benchmark wrote beside its JSON (rendered Markdown)
    for name in (f[:-3] for f in os.listdir(results) if f.endswith(".md")):
        if os.path.exists(os.path.join(results, f"{name}.json")):
            assert f"benchmarks/results/{name}.md" in _read(site / "generated" / "benchmarks" / f"{name}.html"), name
    gradients = _read(site / "generated" / "benchmarks" / "gradients.html")
    assert "Floor: plain torch" in gradients and "<table" in gradients.split("Floor: plain torch")[0]
