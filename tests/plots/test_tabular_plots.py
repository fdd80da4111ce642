"""Content checks of featurelens.plots (tabular attribution and interaction plots)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from featurelens.explanation import Explanation  # noqa: E402
from featurelens import plots as P  # noqa: E402
from featurelens.plots import _tabular_inputs as C  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _values(n=40, d=6, seed=0):
    rng = np.random.default_rng(seed)
    scale = rng.permutation(np.arange(1, d + 1)).astype(float)  # a known, shuffled importance
    return rng.normal(size=(n, d)) * scale, rng.normal(size=(n, d))


NAMES6 = ["age", "bmi", "bp", "s1", "s2", "s3"]


def _ytick_labels_top_down(ax):
    ticks = sorted(zip(ax.get_yticks(), ax.get_yticklabels()), key=lambda t: t[0])
    labels = [lab.get_text() for _, lab in ticks]
    return labels if ax.yaxis_inverted() else labels[::-1]


# -- bar ---------------------------------------------------------------------------------------


def test_bar_order_is_mean_abs_and_other_bar_sums_the_rest():
    v, _ = _values()
    ax = P.bar(v, feature_names=NAMES6, max_display=4)
    mean_abs = np.abs(v).mean(0)
    order = np.argsort(-mean_abs)
    bars = sorted(ax.patches, key=lambda p: p.get_y())  # y grows downwards: first = top
    labels = _ytick_labels_top_down(ax)
    assert labels == [NAMES6[i] for i in order[:3]] + ["Sum of 3 other features"]
    widths = [b.get_width() for b in bars]
    np.testing.assert_allclose(widths[:3], mean_abs[order[:3]])
    np.testing.assert_allclose(widths[3], mean_abs[order[3:]].sum())
    assert all(np.diff(widths[:3]) <= 0)


def test_bar_shows_every_feature_when_they_fit_and_takes_an_explanation():
    v, _ = _values(d=3)
    e = Explanation(values=v, method="test")
    ax = P.bar(e, max_display=3)
    order = np.argsort(-np.abs(v).mean(0))
    assert _ytick_labels_top_down(ax) == [f"feature {i}" for i in order]
    assert len(ax.patches) == 3


# -- beeswarm ----------------------------------------------------------------------------------


def test_beeswarm_rows_follow_mean_abs_and_points_are_the_values():
    v, x = _values()
    ax = P.beeswarm(v, data=x, feature_names=NAMES6, max_display=10)
    order = np.argsort(-np.abs(v).mean(0))
    assert _ytick_labels_top_down(ax) == [NAMES6[i] for i in order]
    rows = sorted(ax.collections, key=lambda c: -np.mean(c.get_offsets()[:, 1]))  # top row first
    assert len(rows) == 6
    for r, coll in enumerate(rows):
        pts = np.asarray(coll.get_offsets())
        np.testing.assert_allclose(pts[:, 0], v[:, order[r]])  # x: the attributions themselves
        assert np.all(np.abs(pts[:, 1] - (5 - r)) <= 0.4 + 1e-12)  # jitter stays inside the row
    # coloured by the feature's value: the highest-valued row is drawn with the colormap's top end
    cmap = matplotlib.colormaps["coolwarm"]
    top_row = rows[0]
    j = order[0]
    colours = top_row.get_facecolors()
    np.testing.assert_allclose(colours[np.argmax(x[:, j])][:3], cmap(1.0)[:3])
    np.testing.assert_allclose(colours[np.argmin(x[:, j])][:3], cmap(0.0)[:3])
    assert "Feature value" in [a.get_ylabel() for a in ax.figure.axes]  # the colour bar


def test_beeswarm_groups_the_rest_and_takes_dataframe_names():
    pd = pytest.importorskip("pandas")
    v, x = _values()
    frame = pd.DataFrame(x, columns=NAMES6)
    frame["s3"] = np.where(np.arange(len(frame)) % 5 == 0, np.nan, frame["s3"])  # missing values are fine
    ax = P.beeswarm(v, data=frame, max_display=3)
    order = np.argsort(-np.abs(v).mean(0))
    labels = _ytick_labels_top_down(ax)
    assert labels == [NAMES6[i] for i in order[:2]] + ["Sum of 4 other features"]
    other = min(ax.collections, key=lambda c: np.mean(c.get_offsets()[:, 1]))
    np.testing.assert_allclose(np.asarray(other.get_offsets())[:, 0], v[:, order[2:]].sum(1))


def test_beeswarm_nan_data_points_are_grey():
    v, x = _values(d=2)
    x[3, 0] = np.nan
    ax = P.beeswarm(v, data=x, feature_names=["a", "b"])
    row_a = [c for c in ax.collections if np.allclose(np.asarray(c.get_offsets())[:, 0], v[:, 0])][0]
    np.testing.assert_allclose(row_a.get_facecolors()[3][:3], C.MISSING_COLOUR[:3])


# -- waterfall and force ------------------------------------------------------------------------


def test_waterfall_ends_at_f_of_x_with_named_labels():
    rng = np.random.default_rng(1)
    phi = rng.normal(size=6)
    row = rng.normal(size=6)
    base = 0.37
    ax = P.waterfall(phi, base, data_row=row, feature_names=NAMES6, max_display=10)
    bars = sorted(ax.patches, key=lambda p: p.get_y())  # bottom bar first
    assert len(bars) == 6
    np.testing.assert_allclose(bars[0].get_x(), base)  # starts at E[f(X)]
    for lower, upper in zip(bars, bars[1:]):  # each bar starts where the one below ended
        np.testing.assert_allclose(upper.get_x(), lower.get_x() + lower.get_width())
    np.testing.assert_allclose(bars[-1].get_x() + bars[-1].get_width(), base + phi.sum())  # f(x)
    top_down = np.argsort(-np.abs(phi))
    labels = _ytick_labels_top_down(ax)
    assert labels == [f"{NAMES6[i]} = {row[i]:.4g}" for i in top_down]
    np.testing.assert_allclose([b.get_width() for b in bars[::-1]], phi[top_down])
    texts = " ".join(t.get_text() for t in ax.texts)
    assert f"f(x) = {base + phi.sum():.4g}" in texts and f"E[f(X)] = {base:.4g}" in texts


def test_waterfall_groups_the_smallest_into_other_features():
    phi = np.array([0.5, -0.01, 2.0, 0.02, -1.0, 0.03])
    ax = P.waterfall(phi, 1.0, max_display=3)
    bars = sorted(ax.patches, key=lambda p: p.get_y())
    assert len(bars) == 3
    labels = _ytick_labels_top_down(ax)
    assert labels == ["feature 2", "feature 4", "4 other features"]
    np.testing.assert_allclose(bars[0].get_width(), 0.5 - 0.01 + 0.02 + 0.03)
    np.testing.assert_allclose(bars[-1].get_x() + bars[-1].get_width(), 1.0 + phi.sum())


def test_waterfall_takes_a_numpy_base_and_series_names():
    pd = pytest.importorskip("pandas")
    phi = np.array([1.0, -2.0])
    ax = P.waterfall(phi, np.float32(0.5), data_row=pd.Series([3.0, 4.0], index=["x", "y"]))
    assert _ytick_labels_top_down(ax) == ["y = 4", "x = 3"]


def test_force_pushes_meet_at_f_of_x():
    phi = np.array([0.8, -0.3, 0.1, -0.6, 0.0])
    base = 2.0
    fx = base + phi.sum()
    ax = P.force(phi, base, data_row=np.arange(5.0), feature_names=list("abcde"), max_display=3)
    pushes = {int(p.get_gid().split(":")[1]): np.asarray(p.get_xy()) for p in ax.patches}
    assert set(pushes) == {0, 1, 2, 3}  # a zero value pushes nothing
    span = {i: (xy[:, 0].min(), xy[:, 0].max()) for i, xy in pushes.items()}
    for i in pushes:
        np.testing.assert_allclose(span[i][1] - span[i][0], abs(phi[i]))
    # red pushes end at f(x) (largest nearest), blue ones start at f(x)
    np.testing.assert_allclose(span[0][1], fx)
    np.testing.assert_allclose(span[2][1], fx - 0.8)
    np.testing.assert_allclose(span[3][0], fx)
    np.testing.assert_allclose(span[1][0], fx + 0.6)
    colour = {int(p.get_gid().split(":")[1]): p.get_facecolor() for p in ax.patches}
    for i, expected in ((0, C.POS_COLOUR), (2, C.POS_COLOUR), (1, C.NEG_COLOUR), (3, C.NEG_COLOUR)):
        np.testing.assert_allclose(colour[i], to_rgba(expected))
    texts = [t.get_text() for t in ax.texts]
    assert {"a = 0", "d = 3", "b = 1"} <= set(texts) and "c = 2" not in texts  # top 3 labelled
    assert f"f(x) = {fx:.4g}" in texts


# -- dependence --------------------------------------------------------------------------------


def _planted_interaction(n=400, seed=0):
    """The attribution of f0 is 2*x0 + x0*x1: it varies with x1 at fixed x0. x2 is a near copy of
    x0, so a naive correlation with the attribution itself picks x2, not x1."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4))
    x[:, 2] = x[:, 0] + 0.05 * rng.normal(size=n)
    v = 0.1 * rng.normal(size=(n, 4))
    v[:, 0] = 2 * x[:, 0] + x[:, 0] * x[:, 1]
    return v, x


def test_dependence_auto_picks_the_planted_interacting_feature():
    v, x = _planted_interaction()
    naive = [abs(np.corrcoef(v[:, 0], x[:, k])[0, 1]) for k in (1, 2, 3)]
    assert int(np.argmax(naive)) == 1  # the plain correlation would pick x2 (index 1 of 1..3)
    scores = P.interaction_scores(0, v, x)
    assert np.isnan(scores[0]) and np.all((scores[1:] >= 0) & (scores[1:] <= 1))
    assert int(np.nanargmax(scores)) == 1
    names = ["f0", "f1", "f2", "f3"]
    ax = P.dependence("f0", v, x, feature_names=names)
    assert [a.get_ylabel() for a in ax.figure.axes if a is not ax] == ["f1"]  # the colour bar
    pts = np.asarray(ax.collections[0].get_offsets())
    np.testing.assert_allclose(pts, np.column_stack([x[:, 0], v[:, 0]]))
    assert ax.get_xlabel() == "f0"


def test_dependence_explicit_and_no_interaction_colour():
    v, x = _planted_interaction(n=60)
    ax = P.dependence(0, v, x, interaction_index=3)
    assert [a.get_ylabel() for a in ax.figure.axes if a is not ax] == ["feature 3"]
    plt.close("all")
    ax = P.dependence(1, v, x, interaction_index=None)
    assert len(ax.figure.axes) == 1  # no colour bar
    e = Explanation(values=v, method="test")
    ax = P.dependence(0, e, x)  # an Explanation's values
    np.testing.assert_allclose(np.asarray(ax.collections[0].get_offsets())[:, 1], v[:, 0])


# -- heatmap -----------------------------------------------------------------------------------


def test_heatmap_image_is_the_value_matrix_reordered():
    v, _ = _values(n=12, d=5)
    order = np.argsort(-np.abs(v).mean(0))
    perm = np.random.default_rng(3).permutation(12)
    ax = P.heatmap(v, max_display=3, order=perm)
    image = np.asarray(ax.images[0].get_array())
    expected = np.column_stack([v[:, order[0]], v[:, order[1]], v[:, order[2:]].sum(1)])[perm].T
    np.testing.assert_allclose(image, expected)
    assert _ytick_labels_top_down(ax) == [f"feature {order[0]}", f"feature {order[1]}", "Sum of 3 other features"]
    plt.close("all")
    ax = P.heatmap(v, max_display=10, order=None)
    np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), v[:, order].T)


def test_heatmap_hclust_puts_each_cluster_together():
    rng = np.random.default_rng(0)
    centres = np.array([[3.0, 0, 0], [0, -3.0, 0], [0, 0, 3.0]])
    label = rng.permutation(np.repeat([0, 1, 2], 8))
    v = centres[label] + 0.1 * rng.normal(size=(24, 3))
    ax = P.heatmap(v, feature_names=["a", "b", "c"])
    image = np.asarray(ax.images[0].get_array())  # (features, rows), features by mean |value|
    order = np.argsort(-np.abs(v).mean(0))
    # every column is one row of v, each used once
    cols = image.T
    src = [int(np.nonzero(np.all(np.isclose(v[:, order], c), axis=1))[0][0]) for c in cols]
    assert sorted(src) == list(range(24))
    runs = label[src]
    assert np.count_nonzero(np.diff(runs)) == 2  # three contiguous blocks


# -- interactions ------------------------------------------------------------------------------


def _interaction_matrix():
    m = np.zeros((5, 5))
    m[0, 1] = m[1, 0] = 0.9
    m[2, 4] = m[4, 2] = -0.5
    m[1, 3] = m[3, 1] = 0.05
    return m


def test_interaction_heatmap_labels_every_name():
    m = _interaction_matrix()
    names = ["age", "bmi", "bp", "s1", "s2"]
    ax = P.interaction_heatmap(m, feature_names=names)
    assert [t.get_text() for t in ax.get_xticklabels()] == names
    assert [t.get_text() for t in ax.get_yticklabels()] == names
    np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), m)


def test_interaction_heatmap_keeps_its_labels_inside_the_figure_after_tight_layout():
    # The colour bar used to take space from the figure, and plt.tight_layout() then cut the y
    # labels at the left edge; every label must now lie inside the figure.
    names = [f"feature_{i}" for i in range(6)]
    ax = P.interaction_heatmap(np.eye(6), feature_names=names)
    fig = ax.figure
    fig.tight_layout()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.canvas.get_width_height()
    labels = ax.get_yticklabels() + ax.get_xticklabels()
    assert len(labels) == 12
    for label in labels:
        box = label.get_window_extent(renderer)
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= width and box.y1 <= height, (label.get_text(), box)
    plt.close(fig)


def test_interaction_network_draws_one_edge_per_pair_above_threshold():
    m = _interaction_matrix()
    names = ["age", "bmi", "bp", "s1", "s2"]
    ax = P.interaction_network(m, feature_names=names, threshold=0.1)
    edges = sorted(line.get_gid() for line in ax.lines if (line.get_gid() or "").startswith("edge:"))
    assert edges == ["edge:0-1", "edge:2-4"]
    assert set(names) <= {t.get_text() for t in ax.texts}
    colours = {line.get_gid(): to_rgba(line.get_color()) for line in ax.lines}
    assert colours["edge:0-1"][:3] == to_rgba(C.POS_COLOUR)[:3] and colours["edge:2-4"][:3] == to_rgba(C.NEG_COLOUR)[:3]
    plt.close("all")
    ax = P.interaction_network(m, feature_names=names)  # default: every non-zero pair
    assert len([ln for ln in ax.lines if (ln.get_gid() or "").startswith("edge:")]) == 3


def test_interaction_plots_take_an_interactions_object():
    from featurelens.interactions import Interactions

    inter = Interactions({(0, 1): 0.9, (2, 4): -0.5, (1, 3): 0.05, (0,): 1.0}, "mobius", 5)
    ax = P.interaction_heatmap(inter)
    np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), _interaction_matrix())
    ax = P.interaction_network(inter, threshold=0.5)
    assert [ln.get_gid() for ln in ax.lines] == ["edge:0-1"]


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda v, x: P.bar(v, max_display=0), ValueError, "max_display"),
        (lambda v, x: P.bar(v, max_display=2.5), TypeError, "max_display"),
        (lambda v, x: P.bar(np.where(v > 1, np.nan, v)), ValueError, "values contains NaN"),
        (lambda v, x: P.bar(v[..., None].repeat(2, -1)), ValueError, "several outputs"),
        (lambda v, x: P.bar(np.array(["a", "b"])), TypeError, "values must hold numbers"),
        (lambda v, x: P.bar(v, feature_names=["a"]), ValueError, "feature_names must hold 6 names"),
        (lambda v, x: P.bar(v, feature_names="abcdef"), TypeError, "feature_names"),
        (lambda v, x: P.bar(v, ax="axes"), TypeError, "ax must be a matplotlib Axes"),
        (lambda v, x: P.beeswarm(v, data=x[:, :3]), ValueError, "data must have the shape"),
        (lambda v, x: P.beeswarm(v, data=np.where(x > 1, np.inf, x)), ValueError, "data contains inf"),
        (lambda v, x: P.beeswarm(v, cmap="no_such_map"), ValueError, "cmap"),
        (lambda v, x: P.waterfall(v, 0.0), ValueError, "values_row must be one row"),
        (lambda v, x: P.waterfall(v[0]), TypeError, "base_value is required"),
        (lambda v, x: P.waterfall(v[0], "0.3"), TypeError, "base_value"),
        (lambda v, x: P.waterfall(v[0], float("nan")), ValueError, "base_value"),
        (lambda v, x: P.waterfall(v[0], 0.0, data_row=x[0, :2]), ValueError, "data_row"),
        (lambda v, x: P.force(v[0], 0.0, max_display=-1), ValueError, "max_display"),
        (lambda v, x: P.dependence("age", v, x), ValueError, "feature must be one of"),
        (lambda v, x: P.dependence(9, v, x), ValueError, "feature must be"),
        (lambda v, x: P.dependence(0, v), TypeError, "data is required"),
        (lambda v, x: P.dependence(0, v, x, interaction_index="bogus"), ValueError, "interaction_index"),
        (lambda v, x: P.heatmap(v, order="cluster"), ValueError, "order must be one of"),
        (lambda v, x: P.heatmap(v, order=[0, 0, 1]), ValueError, "permutation"),
        (lambda v, x: P.interaction_heatmap(np.ones((3, 4))), ValueError, "square"),
        (lambda v, x: P.interaction_network(np.triu(np.ones((3, 3)))), ValueError, "symmetric"),
        (lambda v, x: P.interaction_network(np.eye(3), threshold=-1), ValueError, "threshold"),
    ],
)
def test_bad_input_names_the_argument(call, error, words):
    v, x = _values()
    with pytest.raises(error, match=words):
        call(v, x)


def test_draws_into_a_given_axes():
    v, x = _values()
    fig, axes = plt.subplots(1, 3)
    assert P.bar(v, ax=axes[0]) is axes[0]
    assert P.waterfall(v[0], 0.0, ax=axes[1]) is axes[1]
    assert P.interaction_heatmap(np.eye(3), ax=axes[2]) is axes[2]
    assert len(plt.get_fignums()) == 1


# -- smoke: every plot renders to PNG ----------------------------------------------------------


def test_every_plot_saves_a_png(tmp_path):
    v, x = _planted_interaction(n=200)
    names = ["income", "age", "tenure", "balance"]
    base = 0.25
    axes = {
        "bar": P.bar(v, feature_names=names),
        "beeswarm": P.beeswarm(v, x, feature_names=names),
        "waterfall": P.waterfall(v[0], base, x[0], feature_names=names),
        "force": P.force(v[0], base, x[0], feature_names=names),
        "dependence": P.dependence("income", v, x, feature_names=names),
        "heatmap": P.heatmap(v[:60], feature_names=names),
        "interaction_heatmap": P.interaction_heatmap(_interaction_matrix()),
        "interaction_network": P.interaction_network(_interaction_matrix(), threshold=0.01),
    }
    for name, ax in axes.items():
        path = tmp_path / f"{name}.png"
        ax.figure.savefig(path, dpi=60, bbox_inches="tight")
        assert path.stat().st_size > 2000, name


def test_all_zero_row_draws_a_visible_range():
    ax = P.waterfall(np.zeros(3), 2.0)
    lo, hi = ax.get_xlim()
    assert hi - lo > 0.01 and lo < 2.0 < hi
    ax = P.force(np.zeros(3), 2.0)
    assert not ax.patches and ax.get_xlim()[1] - ax.get_xlim()[0] > 0.01


def test_torch_values_are_accepted():
    torch = pytest.importorskip("torch")
    v, _ = _values()
    ax = P.bar(torch.from_numpy(v))
    np.testing.assert_allclose(max(p.get_width() for p in ax.patches), np.abs(v).mean(0).max())


def test_waterfall_and_force_label_categories_as_they_are():
    """A decoded row (a pipeline's categorical columns) labels its bars with the category."""
    import matplotlib.pyplot as plt
    import pandas as pd

    from featurelens.plots import force, waterfall

    row = pd.Series({"age": 41.0, "city": "Paris", "plan": None}, dtype=object)
    values = np.array([0.1, -0.4, 0.2])
    ax = waterfall(values, base_value=0.5, data_row=row)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "city = Paris" in labels and "age = 41" in labels and "plan = None" in labels
    plt.close(ax.figure)
    ax = force(values, base_value=0.5, data_row=row)
    texts = [t.get_text() for t in ax.texts]
    assert any("city = Paris" in t for t in texts)
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="one value per feature"):
        waterfall(values, base_value=0.5, data_row=["a", "b"])
