"""Every code block of the documentation's guides runs (docs/guides/*.md).

The ```python blocks of each guide are run in order in one namespace, as a reader would paste
them; the guides' own ``assert`` lines check the values they state (additivity, completeness,
summation-to-delta, exit codes). Nothing is skipped: a guide without a block fails, so that a
guide cannot silently lose its code.
"""

import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

GUIDES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "guides")
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
NAMES = sorted(f for f in os.listdir(GUIDES) if f.endswith(".md")) if os.path.isdir(GUIDES) else []


def blocks(name: str) -> list[str]:
    with open(os.path.join(GUIDES, name), encoding="utf-8") as f:
        return BLOCK.findall(f.read())


def test_guides_exist():
    assert {"shap.md", "captum.md", "quantus.md", "trust.md", "model_files.md", "reproducibility.md"} <= set(NAMES)


def test_block_extraction():
    """The extraction itself: fenced python blocks only, in order, other fences left out."""
    text = "a\n```python\nx = 1\n```\n```text\nno\n```\n```python\ny = x + 1\n```\n"
    assert BLOCK.findall(text) == ["x = 1\n", "y = x + 1\n"]


@pytest.mark.parametrize("name", NAMES)
def test_guide_code_runs(name, monkeypatch, tmp_path):
    code = blocks(name)
    assert code, f"{name} has no ```python block"
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": f"guide_{name[:-3]}"}
    try:
        for i, block in enumerate(code):
            exec(compile(block, f"docs/guides/{name}[block {i}]", "exec"), namespace)
    finally:
        plt.close("all")


def test_which_explainer_code_runs():
    """The code block of the generated "Which explainer should I use?" page."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_generate", os.path.join(os.path.dirname(GUIDES), "_generate.py"))
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    namespace = {}
    exec(compile(generate.WHICH_CODE, "docs/_generate.py[WHICH_CODE]", "exec"), namespace)
    assert "gradcam" not in namespace["applicable"] and "saliency" in namespace["applicable"]
