"""Every plot takes an Explanation: one row (``e[i]``) for waterfall, force and text, many rows for
bar, beeswarm, heatmap and dependence, with the names, data and base values it carries; the old
call style (arrays passed apart) draws the same figure.

The plotted numbers are read back from the figure's artists and compared with the model itself
(exact Shapley values of a linear model add up to f(x)) or with numpy on the explanation's arrays."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import featurelens as fl  # noqa: E402
from featurelens.explanation import Explanation  # noqa: E402

NAMES = ["age", "bmi", "bp", "s1", "s2", "s3"]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def shapley():
    """Exact Shapley values of a linear model (zero baseline), its rows and f(x) for the target."""
    torch.manual_seed(0)
    net = torch.nn.Linear(6, 2).double()
    x = np.random.default_rng(5).normal(size=(12, 6))
    e = fl.explainer("exact_shapley", net, baseline=0.0).explain(pd.DataFrame(x, columns=NAMES), target=0)
    with torch.no_grad():
        f = net(torch.as_tensor(x)).numpy()[:, 0]
    return e, x, f


def _labels_top_down(ax):
    ticks = sorted(zip(ax.get_yticks(), ax.get_yticklabels()), key=lambda t: t[0])
    labels = [lab.get_text() for _, lab in ticks]
    return labels if ax.yaxis_inverted() else labels[::-1]


def test_waterfall_of_a_row_ends_at_f_of_x_with_its_names_and_values(shapley):
    e, x, f = shapley
    i = 3
    ax = fl.plots.waterfall(e[i])
    bars = sorted(ax.patches, key=lambda p: p.get_y())  # bottom bar first
    np.testing.assert_allclose(bars[0].get_x(), float(e.base_values[i]), atol=1e-12)  # starts at E[f(X)]
    end = bars[-1].get_x() + bars[-1].get_width()
    np.testing.assert_allclose(end, f[i], atol=1e-10)  # ends at the model's own output
    order = np.argsort(-np.abs(e.values[i]))
    assert _labels_top_down(ax) == [f"{NAMES[j]} = {x[i, j]:.4g}" for j in order]
    texts = [t.get_text() for t in ax.texts]
    assert f"f(x) = {f[i]:.4g}" in texts and f"E[f(X)] = {float(e.base_values[i]):.4g}" in texts
    # the same figure as the arrays passed apart
    old = fl.plots.waterfall(e.values[i], e.base_values[i], data_row=x[i], feature_names=NAMES)
    assert _labels_top_down(old) == _labels_top_down(ax)
    np.testing.assert_allclose([b.get_width() for b in sorted(old.patches, key=lambda p: p.get_y())],
                               [b.get_width() for b in bars])


def test_force_of_a_row_meets_at_f_of_x(shapley):
    e, x, f = shapley
    i = 7
    ax = fl.plots.force(e[i], max_display=6)
    v = e.values[i]
    pushes = {int(p.get_gid().split(":")[1]): np.asarray(p.get_xy())[:, 0] for p in ax.patches}
    assert set(pushes) == set(np.flatnonzero(v).tolist())
    for j, xs in pushes.items():
        np.testing.assert_allclose(xs.max() - xs.min(), abs(v[j]), atol=1e-12)
    red = [xs.max() for j, xs in pushes.items() if v[j] > 0]
    blue = [xs.min() for j, xs in pushes.items() if v[j] < 0]
    np.testing.assert_allclose(max(red), f[i], atol=1e-10)  # red pushes end at f(x)
    np.testing.assert_allclose(min(blue), f[i], atol=1e-10)  # blue ones start there
    labels = {t.get_text() for t in ax.texts}
    assert {f"{NAMES[j]} = {x[i, j]:.4g}" for j in pushes} <= labels


def test_one_row_of_many_is_asked_for_by_name(shapley):
    e, _, _ = shapley
    with pytest.raises(ValueError, match=r"one row of attributions.*got shape \(12, 6\).*values_row\[i\]"):
        fl.plots.waterfall(e)


def test_summary_plots_take_an_explanation_of_many_rows(shapley):
    e, x, _ = shapley
    mean_abs = np.abs(e.values).mean(0)
    order = np.argsort(-mean_abs, kind="stable")
    ax = fl.plots.bar(e, max_display=4)
    assert _labels_top_down(ax) == [NAMES[j] for j in order[:3]] + ["Sum of 3 other features"]
    widths = [b.get_width() for b in sorted(ax.patches, key=lambda p: p.get_y())]
    np.testing.assert_allclose(widths, list(mean_abs[order[:3]]) + [mean_abs[order[3:]].sum()])

    ax = fl.plots.beeswarm(e)  # data from e.data: coloured, with a colour bar
    assert _labels_top_down(ax) == [NAMES[j] for j in order]
    top = max(ax.collections, key=lambda c: np.mean(c.get_offsets()[:, 1]))
    np.testing.assert_allclose(np.asarray(top.get_offsets())[:, 0], e.values[:, order[0]])
    cmap = matplotlib.colormaps["coolwarm"]
    np.testing.assert_allclose(top.get_facecolors()[np.argmax(x[:, order[0]])][:3], cmap(1.0)[:3])
    assert "Feature value" in [a.get_ylabel() for a in ax.figure.axes]

    ax = fl.plots.heatmap(e, order=None)
    np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), e.values[:, order].T)
    assert _labels_top_down(ax) == [NAMES[j] for j in order]


def test_dependence_takes_an_explanation_and_its_data(shapley):
    e, x, _ = shapley
    ax = fl.plots.dependence("bmi", e, interaction_index="s2")
    pts = np.asarray(ax.collections[0].get_offsets())
    np.testing.assert_allclose(pts[:, 0], x[:, 1])
    np.testing.assert_allclose(pts[:, 1], e.values[:, 1])
    assert ax.get_xlabel() == "bmi" and "s2" in [a.get_ylabel() for a in ax.figure.axes]


def test_a_part_of_an_explanation_plots_like_the_whole(shapley):
    e, _, _ = shapley
    ax = fl.plots.bar(e[:, ["bp", "age"]])
    assert set(_labels_top_down(ax)) == {"bp", "age"}
    np.testing.assert_allclose(sorted(b.get_width() for b in ax.patches),
                               sorted(np.abs(e.values[:, [2, 0]]).mean(0)))


def test_text_of_a_row_draws_its_feature_names():
    values = np.array([[0.5, -1.0, 0.25], [1.0, 0.0, -2.0]])
    e = Explanation(values=values, method="exact", feature_names=["not", "bad", "film"])
    ax = fl.plots.text(e[1])
    assert [t.get_text() for t in ax.texts] == ["not", "bad", "film"]
    alphas = [t.get_bbox_patch().get_facecolor()[3] for t in ax.texts]
    np.testing.assert_allclose(alphas, 0.85 * np.abs(values[1]) / 2.0)  # opacity ~ |value| / max |value|
    with pytest.raises(ValueError, match=r"Pass one row, e.g. fl.plots.text\(e\[i\]\)"):
        fl.plots.text(e)
    with pytest.raises(TypeError, match="players_or_names is required"):
        fl.plots.text(values[0])


def test_text_interactions_take_the_player_names_the_result_carries():
    from featurelens.interactions import Interactions

    inter = Interactions({(0, 1): 2.0, (1,): -0.5, (2,): 0.3}, "mobius", 3,
                         params={"player_names": ["not", "bad", "film"]})
    text_ax, terms_ax = fl.plots.text_interactions(inter)
    assert [t.get_text() for t in text_ax.texts] == ["not", "bad", "film"]
    assert [t.get_text() for t in terms_ax.get_yticklabels()] == ["not \u00d7 bad"]
    np.testing.assert_allclose([p.get_width() for p in terms_ax.patches], [2.0])


def test_explanation_plot_labels_tabular_bars_by_feature_names(shapley):
    e, _, _ = shapley
    fig = e.plot(index=2)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == NAMES
    np.testing.assert_allclose(sorted(p.get_height() for p in ax.patches), sorted(e.values[2]))
    row_fig = e[2].plot()  # a single row draws that row
    np.testing.assert_allclose([p.get_height() for p in row_fig.axes[0].patches],
                               [p.get_height() for p in ax.patches])
    plain = Explanation(values=e.values, method="exact_shapley").plot()  # no names: positions
    assert [t.get_text() for t in plain.axes[0].get_xticklabels()] != NAMES


def test_an_image_row_plots_as_its_map():
    v = np.random.default_rng(0).normal(size=(3, 2, 4, 5))
    fig = Explanation(values=v, method="saliency")[1].plot()
    np.testing.assert_allclose(np.asarray(fig.axes[0].images[0].get_array()), v[1].sum(0))


def test_several_targets_are_refused_with_the_explanation_layout():
    e = Explanation(values=np.zeros((4, 3, 5)), method="exact_shapley", base_values=np.zeros((4, 3)))
    with pytest.raises(ValueError, match=r"3 targets per sample.*values\.values\[:, 0\]"):
        fl.plots.bar(e)
