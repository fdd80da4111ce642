"""Names that matplotlib would read as mathtext are drawn as they are (issue 33, item 2).

Before: a feature named ``$\\undefinedmacro$`` or ``$x^$`` (or a class named ``$\\badmacro$``) made
``fl.plots.bar/beeswarm/waterfall`` and ``featurelens explain`` end in matplotlib's
``ParseFatalException`` (explain wrote no report), and ``$x$`` was silently drawn as an italic x.
Every public plot of ``fl.plots`` (and ``Explanation.plot``, the audit's and explain's figures) is
drawn here with hostile names and rendered (``fig.canvas.draw()`` and ``savefig``); each text that
carries a name must hold no math and read back as the name."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.cbook import is_math_text  # noqa: E402

import featurelens as fl  # noqa: E402

HOSTILE = ["$\\undefinedmacro$", "$x^$", "$\\badmacro$", "$x$", "a $b$ c", "50$ and 20$", "\\$y$", "$"]


def _render(fig):
    fig.canvas.draw()  # before: ParseFatalException here
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    assert buf.getvalue().startswith(b"\x89PNG")
    plt.close(fig)


def _drawn(fig) -> list[str]:
    """Every text of the figure as matplotlib draws it (tick labels, titles, labels, texts,
    legend entries): what a user reads, after matplotlib's own un-escaping."""
    out = []
    for t in fig.findobj(matplotlib.text.Text):
        s = t.get_text()
        if not s:
            continue
        assert not is_math_text(s), f"{s!r} would be drawn as mathtext"
        out.append(s.replace("\\$", "$"))  # what the non-math text path draws
    for ax in fig.axes:
        for artist in ax.collections:
            label = artist.get_label()
            if label and not label.startswith("_"):
                assert not is_math_text(label), label
                out.append(label.replace("\\$", "$"))
    return out


def _names(d):
    return [HOSTILE[i % len(HOSTILE)] + ("" if i < len(HOSTILE) else f" {i}") for i in range(d)]


@pytest.fixture(scope="module")
def tabular():
    rng = np.random.default_rng(0)
    n, d = 40, 9
    values = rng.normal(size=(n, d)) * np.linspace(2.0, 0.2, d)
    data = rng.normal(size=(n, d))
    return values, data, _names(d)


def _has_every(texts, names):
    for name in names:
        assert any(name in t for t in texts), f"{name!r} was not drawn; drawn: {texts}"


def test_bar_beeswarm_heatmap(tabular):
    values, data, names = tabular
    for draw in (lambda: fl.plots.bar(values, feature_names=names, max_display=6),
                 lambda: fl.plots.beeswarm(values, data=data, feature_names=names, max_display=20),
                 lambda: fl.plots.heatmap(values, feature_names=names, max_display=20)):
        ax = draw()
        texts = _drawn(ax.figure)
        _has_every(texts, names[:5])
        _render(ax.figure)


def test_waterfall_and_force_with_hostile_names_and_categories(tabular):
    values, data, names = tabular
    row = ["$\\badmacro$", "$x^$"] + [float(v) for v in data[0, 2:]]
    for draw in (fl.plots.waterfall, fl.plots.force):
        ax = draw(values[0], base_value=0.5, data_row=row, feature_names=names, max_display=20)
        texts = _drawn(ax.figure)
        assert f"{names[0]} = $\\badmacro$" in texts and f"{names[1]} = $x^$" in texts
        _render(ax.figure)


def test_dependence_and_the_interaction_plots(tabular):
    values, data, names = tabular
    ax = fl.plots.dependence(names[1], values, data, feature_names=names, interaction_index=names[0])
    texts = _drawn(ax.figure)
    assert names[1] in texts and f"attribution of {names[1]}" in texts
    _render(ax.figure)
    assert fl.plots.interaction_scores(names[2], values, data, feature_names=names).shape == (9,)
    m = np.random.default_rng(1).normal(size=(5, 5))
    m = m + m.T
    for draw in (fl.plots.interaction_heatmap, fl.plots.interaction_network):
        ax = draw(m, feature_names=names[:5])
        _has_every(_drawn(ax.figure), names[:5])
        _render(ax.figure)


def test_text_and_text_interactions():
    from featurelens.interactions import Interactions

    words = ["$\\undefinedmacro$", "$x^$", "film", "$"]
    ax = fl.plots.text(np.array([0.5, -1.0, 0.2, 0.1]), words, title="$\\badmacro$ title")
    texts = _drawn(ax.figure)
    assert texts[:4] == words and "$\\badmacro$ title" in texts
    _render(ax.figure)
    inter = Interactions({(0, 1): 2.0, (1,): -0.5, (2,): 0.3}, "mobius", 3,
                         params={"player_names": words[:3], "method": "$m^$"})
    text_ax, terms_ax = fl.plots.text_interactions(inter)
    texts = _drawn(text_ax.figure)
    assert "$\\undefinedmacro$ \u00d7 $x^$" in texts and any("$m^$" in t for t in texts)
    _render(text_ax.figure)


def test_explanation_plot_with_hostile_names_and_method():
    rng = np.random.default_rng(2)
    e = fl.Explanation(values=rng.normal(size=(3, 4)), method="$m^$", feature_names=_names(4))
    fig = e.plot(index=1)
    texts = _drawn(fig)
    _has_every(texts, _names(4))
    assert "$m^$, sample 1" in texts
    _render(fig)
    images = fl.Explanation(values=rng.normal(size=(2, 1, 4, 4)), method="$\\badmacro$").plot()
    assert "$\\badmacro$ #0" in _drawn(images)
    _render(images)


def test_every_public_plot_is_covered():
    """A new plot in fl.plots must be added to this file."""
    covered = {"bar", "beeswarm", "heatmap", "waterfall", "force", "dependence", "interaction_heatmap",
               "interaction_network", "interaction_scores", "text", "text_interactions"}
    assert set(fl.plots.__all__) == covered


def test_the_audit_figures(tabular):
    from featurelens._audit.report import method_figures, ranking_figure

    values, data, names = tabular
    fig = ranking_figure({"$m^$": values, "kernel_shap": values[:, ::-1]}, names, "raw output", top=4)
    texts = _drawn(fig)
    assert "1. $m^$ (ranked first)" in texts
    _has_every(texts, names[:4])
    # a feature among the leader's top keeps its colour although its label is escaped
    ax = fig.axes[0]
    grey = matplotlib.colors.to_rgba("#c8c8c8")
    assert all(p.get_facecolor() != grey for p in ax.patches)
    _render(fig)
    for name, f in method_figures("$m^$", values, data, names, base=0.1).items():
        assert any("$m^$" in t for t in _drawn(f)), name
        _render(f)


def test_featurelens_explain_writes_its_report_with_hostile_columns_and_classes(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    sio = pytest.importorskip("skops.io")
    from sklearn.linear_model import LogisticRegression

    from featurelens.cli import main

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, "$\\badmacro$", "$x^$")
    columns = ["$\\undefinedmacro$", "$x^$", "plain"]
    pd.DataFrame(X, columns=columns).to_csv(tmp_path / "d.csv", index=False)
    sio.dump(LogisticRegression().fit(X, y), tmp_path / "clf.skops")
    rc = main(["explain", "--model", str(tmp_path / "clf.skops"), "--data", str(tmp_path / "d.csv"), "--method",
               "exact_shapley", "--background", "4", "--rows", "8", "--out", str(tmp_path / "rep")])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "Traceback" not in captured.err and "ParseFatalException" not in captured.err
    out = tmp_path / "rep"
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert "bar.png" in pngs and "waterfall.png" in pngs and any(p.startswith("beeswarm") for p in pngs)
    assert len(pngs) >= 4  # the rows' predicted classes differ: one beeswarm per class
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "$\\undefinedmacro$" in page
