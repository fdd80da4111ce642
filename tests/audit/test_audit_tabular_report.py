"""The audit's report on tabular data: the plots of featurelens.plots (method ranking side by side,
bar, beeswarm, waterfall) with the feature names, checked against numbers computed here."""

import base64
import json
import re
import shutil
import subprocess

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens._audit import report as audit_report
from featurelens.models import Model

pd = pytest.importorskip("pandas")
METHODS = ["occlusion", "exact_shapley", "kernel_shap", "random"]


@pytest.fixture(scope="module")
def tabular_audit(tmp_path_factory):
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    data = load_breast_cancer(as_frame=True)
    X = data.data.iloc[:, :6]
    y = data.target
    clf = make_pipeline(StandardScaler(), LogisticRegression()).fit(X.iloc[:120], y.iloc[:120])
    rows = X.iloc[:6]  # as many rows as n_explain: the audited rows are X's rows in order
    figures_before = plt.get_fignums()
    out = tmp_path_factory.mktemp("tabular") / "report"
    table = fl.audit(clf, rows, y.iloc[:6], methods=METHODS, out=out, n_explain=6, seed=0, progress=False,
                     as_frame=False, steps=6, n_subsets=8, robustness_samples=1)
    return {"table": table, "out": out, "clf": clf, "rows": rows, "y": y.iloc[:6].to_numpy(),
            "names": list(X.columns), "figures_before": figures_before, "figures_after": plt.get_fignums()}


def _order(values, k=None):
    """Feature indices by decreasing mean |value| (ties by index), computed independently."""
    mean_abs = np.abs(np.asarray(values, dtype=np.float64)).mean(axis=0)
    order = sorted(range(mean_abs.size), key=lambda i: (-mean_abs[i], i))
    return order if k is None else order[:k]


def _images(page):
    """{alt text: PNG bytes} of the page's embedded images."""
    return {alt: base64.b64decode(data) for data, alt in
            re.findall(r'<img src="data:image/png;base64,([^"]+)" alt="([^"]*)"', page)}


def test_the_report_has_the_tabular_figures_with_names(tabular_audit):
    out, table, names = tabular_audit["out"], tabular_audit["table"], tabular_audit["names"]
    page = (out / "index.html").read_text(encoding="utf-8")
    plotted = [r["method"] for r in table if r["status"] == "ok" and r["method"] != "random"]
    assert sorted(plotted) == sorted(METHODS[:-1])
    assert (out / "ranking.png").is_file() and not (out / "maps.png").exists()
    images = _images(page)
    for m in plotted:
        for kind in ("bar", "beeswarm"):
            assert (out / f"{m}_{kind}.png").read_bytes() in images.values()
        # The Shapley methods have base values (a waterfall of the first row); occlusion has none.
        assert (out / f"{m}_waterfall.png").is_file() == (m != "occlusion")
        # The bar chart's alt text names the three largest features by mean |value|, in order.
        top = ", ".join(names[i] for i in _order(table.explanations[m].values, 3))
        assert f'alt="{m}: mean |value| per feature; largest: {top}"' in page
    assert "no waterfall" in page  # said for occlusion
    # Every embedded image is a file of the folder, and every figure file is embedded.
    pngs = {p.name: p.read_bytes() for p in out.glob("*.png")}
    assert sorted(images.values()) == sorted(pngs.values())
    # The units of a predict_proba classifier, and what "mean |value|" means, are stated.
    assert "probability of the explained class" in page and "the average of its size over the rows" in page
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["feature_names"] == names and doc["settings"]["output_units"] == "probability of the explained class"
    for m in plotted:
        expected = np.abs(np.asarray(table.explanations[m].values, dtype=np.float64)).mean(axis=0)
        np.testing.assert_allclose(doc["mean_abs_values"][m], expected, rtol=1e-12)


def _ranks(values):
    """Ranks of the mean |value| per feature (no ties in these data): Spearman = Pearson of ranks."""
    return np.argsort(np.argsort(np.abs(np.asarray(values, dtype=np.float64)).mean(0)))


def test_the_agreement_table_counts_shared_top_features(tabular_audit):
    out, table, names = tabular_audit["out"], tabular_audit["table"], tabular_audit["names"]
    page = (out / "index.html").read_text(encoding="utf-8")
    plotted = [r["method"] for r in table if r["status"] == "ok" and r["method"] != "random"]
    lead, others = plotted[0], plotted[1:]
    lead_top = set(_order(table.explanations[lead].values, 5))
    for m in others:
        mine = _order(table.explanations[m].values, 5)
        row = re.search(rf"<td class=\"text\">{m}</td><td>(\d) of 5</td><td[^>]*>([^<]*)</td>"
                        rf"<td class=\"text\">([^<]*)</td>", page)
        assert row, m
        assert int(row.group(1)) == len(lead_top & set(mine))
        assert row.group(3) == ", ".join(names[i] for i in mine)
        a, b = _ranks(table.explanations[lead].values), _ranks(table.explanations[m].values)
        assert float(row.group(2)) == pytest.approx(np.corrcoef(a, b)[0, 1], abs=0.006)


def test_no_matplotlib_figure_is_left_open(tabular_audit):
    assert tabular_audit["figures_after"] == tabular_audit["figures_before"]


def test_the_waterfall_ends_at_the_models_output(tabular_audit):
    table, clf, rows, names = (tabular_audit[k] for k in ("table", "clf", "rows", "names"))
    e = table.explanations["exact_shapley"]
    x = np.asarray(rows, dtype=np.float32)
    figs = audit_report.method_figures("exact_shapley", e.values, x, names, base=e.base_values[0])
    ax = figs["waterfall"].axes[0]
    bars = sorted(ax.patches, key=lambda p: p.get_y())
    top_end = bars[-1].get_x() + bars[-1].get_width()  # the top bar ends at base + sum of values
    target = int(tabular_audit["y"][0])
    f_x = clf.predict_proba(rows.iloc[:1])[0, target]
    assert top_end == pytest.approx(f_x, abs=1e-5)
    assert bars[0].get_x() == pytest.approx(e.base_values[0], abs=1e-12)  # starts at the base value
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert all(" = " in lab and lab.split(" = ")[0] in names for lab in labels)
    page = (tabular_audit["out"] / "index.html").read_text(encoding="utf-8")
    assert f"f(x) = {f_x:.4g}" in page


def test_bar_and_beeswarm_order_features_by_mean_abs_value():
    rng = np.random.default_rng(3)
    d = 13  # more than the report's 10 entries: the rest are summed into the last one
    scale = rng.permutation(np.arange(1, d + 1)).astype(float)
    values = rng.normal(size=(20, d)) * scale
    x = rng.normal(size=(20, d))
    names = [f"col_{i}" for i in range(d)]
    figs = audit_report.method_figures("m", values, x, names)
    top = audit_report.TOP
    expected = [names[i] for i in _order(values, top - 1)] + [f"Sum of {d - top + 1} other features"]
    bar_labels = [t.get_text() for t in figs["bar"].axes[0].get_yticklabels()]
    assert bar_labels == expected
    widths = [p.get_width() for p in sorted(figs["bar"].axes[0].patches, key=lambda p: p.get_y())]
    mean_abs = np.abs(values).mean(0)
    np.testing.assert_allclose(widths[:-1], mean_abs[_order(values, top - 1)], rtol=1e-12)
    bees = figs["beeswarm"].axes[0]
    by_height = sorted(zip([t.get_position()[1] for t in bees.get_yticklabels()],
                           [t.get_text() for t in bees.get_yticklabels()]), reverse=True)
    assert [label for _, label in by_height] == expected
    assert "waterfall" not in figs  # no base value given


def test_ranking_figure_panels_share_colours_per_feature():
    rng = np.random.default_rng(0)
    names = ["age", "income", "debt", "score", "tenure"]
    a = rng.normal(size=(30, 5)) * np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    b = rng.normal(size=(30, 5)) * np.array([1.0, 4.0, 3.0, 2.0, 5.0])  # same features, other order
    fig = audit_report.ranking_figure({"first": a, "second": b}, names, "probability")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 2 and "first" in panels[0].get_title() and "ranked first" in panels[0].get_title()
    colour = []
    for ax, v in zip(panels, (a, b)):
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert labels == [names[i] for i in _order(v)]
        bars = sorted(ax.patches, key=lambda p: p.get_y())
        colour.append({lab: p.get_facecolor() for lab, p in zip(labels, bars)})
    assert colour[0] == colour[1] and len(set(colour[0].values())) == 5


def test_ranking_figure_shows_each_methods_top_features_only():
    rng = np.random.default_rng(5)
    d = 40
    names = [f"f{i}" for i in range(d)]
    a = rng.normal(size=(25, d)) * rng.permutation(np.arange(1, d + 1))
    b = rng.normal(size=(25, d)) * rng.permutation(np.arange(1, d + 1))
    fig = audit_report.ranking_figure({"a": a, "b": b}, names, "probability")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    top = audit_report.TOP
    lead = {names[i] for i in _order(a, top)}
    for ax, v in zip(panels, (a, b)):
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert labels == [names[i] for i in _order(v, top)]  # no "Sum of other features" bar
        widths = [p.get_width() for p in sorted(ax.patches, key=lambda p: p.get_y())]
        np.testing.assert_allclose(widths, np.abs(v).mean(0)[_order(v, top)], rtol=1e-12)
        grey = [lab for lab, p in zip(labels, sorted(ax.patches, key=lambda p: p.get_y()))
                if p.get_facecolor()[:3] == pytest.approx((200 / 255,) * 3)]
        assert set(grey) == set(labels) - lead  # coloured exactly when in the leading method's top


def test_describe_units():
    from sklearn.linear_model import LinearRegression, LogisticRegression

    X = np.random.default_rng(0).normal(size=(20, 3))
    clf = LogisticRegression().fit(X, X[:, 0] > 0)
    reg = LinearRegression().fit(X, X[:, 0])
    assert audit_report.describe_units(Model(clf)) == "probability of the explained class"
    assert audit_report.describe_units(Model(clf, output="log_odds")) == "log-odds of the explained class"
    assert audit_report.describe_units(Model(reg)) == "the model's prediction (its own units)"
    assert "raw output" in audit_report.describe_units(Model(torch.nn.Linear(3, 2)))


def test_a_numpy_regression_audit_names_features_by_index(tmp_path):
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(1)
    X = rng.normal(size=(5, 4))
    reg = LinearRegression().fit(X, X @ np.array([4.0, -3.0, 0.5, 0.0]))
    fl.audit(reg, X, methods=["exact_shapley", "random"], out=tmp_path / "r", n_explain=5, progress=False,
             steps=4, n_subsets=5, robustness_samples=0)
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    assert "the model&#x27;s prediction (its own units)" in page
    # Mean |value| of exact Shapley for a linear model: |w_i| * mean |x_i - mean x_i| (baseline: the
    # feature means), so feature 0 leads and feature 3 (weight 0) comes last.
    assert 'alt="exact_shapley: mean |value| per feature; largest: feature 0, feature 1, feature 2"' in page
    assert (tmp_path / "r" / "exact_shapley_waterfall.png").is_file()


def test_a_failing_figure_is_a_note_in_the_page_and_the_json(tabular_audit, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("cannot draw")

    monkeypatch.setattr(audit_report, "method_figures", broken)
    rows, y = tabular_audit["rows"], tabular_audit["y"]
    fl.audit(tabular_audit["clf"], rows, y, methods=["kernel_shap", "random"], out=tmp_path / "r", n_explain=6,
             progress=False, steps=4, n_subsets=5, robustness_samples=0)
    note = "tabular plots of kernel_shap failed (RuntimeError: cannot draw)"
    assert note in (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    assert note in json.loads((tmp_path / "r" / "results.json").read_text(encoding="utf-8"))["notes"]
    assert (tmp_path / "r" / "ranking.png").is_file() and not (tmp_path / "r" / "kernel_shap_bar.png").exists()


def test_a_failing_image_maps_figure_is_a_note_in_the_json(tmp_path, monkeypatch):
    # Regression: the note used to be added after results.json was written, so only the page had it.
    def broken(*args, **kwargs):
        raise RuntimeError("no maps")

    monkeypatch.setattr(audit_report, "_maps_figure", broken)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 2))
    X = np.random.default_rng(0).normal(size=(4, 1, 4, 4)).astype(np.float32)
    fl.audit(net, X, methods=["saliency", "random"], out=tmp_path / "r", n_explain=4, progress=False,
             steps=4, n_subsets=5, robustness_samples=0, randomization=False)
    doc = json.loads((tmp_path / "r" / "results.json").read_text(encoding="utf-8"))
    assert "example maps figure failed (RuntimeError: no maps)" in doc["notes"]
    assert not list((tmp_path / "r").glob("ranking.png"))  # image data: no tabular plots


def test_the_tabular_report_renders_in_headless_chromium(tabular_audit, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("no headless browser installed")
    out = tabular_audit["out"]
    # Once loaded, the page records each image's decoded size and opens the collapsed section.
    probe = (
        "<script>window.addEventListener('load', function () {"
        "document.body.setAttribute('data-images', Array.prototype.map.call(document.images,"
        " function (i) { return i.naturalWidth + 'x' + i.naturalHeight; }).join(','));});</script>"
    )
    page = (out / "index.html").read_text(encoding="utf-8").replace("</body>", probe + "</body>")
    check = out.parent / "check.html"
    check.write_text(page, encoding="utf-8")
    try:
        dom = subprocess.run(
            [browser, "--headless", "--disable-gpu", "--no-sandbox", "--virtual-time-budget=3000",
             f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", check.as_uri()],
            capture_output=True, text=True, timeout=60, check=False,
        ).stdout
    except (subprocess.TimeoutExpired, OSError) as err:
        pytest.skip(f"browser did not run: {err}")
    images = re.search(r'data-images="([^"]*)"', dom)
    assert images, dom[:500]
    sizes = [tuple(map(int, s.split("x"))) for s in images.group(1).split(",")]
    assert len(sizes) == len(list(out.glob("*.png")))
    assert all(w > 100 and h > 100 for w, h in sizes)
    table, names = tabular_audit["table"], tabular_audit["names"]
    lead = next(r["method"] for r in table if r["status"] == "ok" and r["method"] != "random")
    for i in _order(table.explanations[lead].values, 5):  # the top features are named in the rendered page
        assert names[i] in dom
