"""Backgrounds on tabular data: weighted backgrounds in MaskedModel, the
k-means / sample summary, and the refusal of a silent zero fill on tabular inputs."""

import numpy as np
import pandas as pd
import pytest
import torch

import featurelens as fl
from featurelens.games import Background, MaskedModel, all_masks, summarize_background

SHAPLEY = ["exact_shapley", "kernel_shap", "permutation_shap", "minshap", "spex"]
OPTIONS = {"kernel_shap": {"budget": 40}, "permutation_shap": {"budget": 40}, "minshap": {"budget": 40},
           "spex": {"budget": 600, "max_order": 2}}


def _mlp(d=4, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(d, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3)).double().eval()


def test_weighted_background_is_the_weighted_mean_of_the_one_row_games():
    net = _mlp()
    rng = np.random.default_rng(0)
    x, rows = rng.normal(size=4), rng.normal(size=(5, 4))
    w = np.array([1.0, 3.0, 0.5, 2.0, 3.5])  # not normalised: the game normalises them
    masks = all_masks(4)
    one_row = np.stack([MaskedModel(net, x, background=rows[j:j + 1], target=2)(masks) for j in range(5)])
    expected = (w / w.sum()) @ one_row
    for background in ((rows, w), Background(rows, w)):
        game = MaskedModel(net, x, background=background, target=2)
        np.testing.assert_allclose(game(masks), expected, rtol=0, atol=1e-13)
    # Equal weights give the plain (unweighted) background's game.
    plain = MaskedModel(net, x, background=rows, target=2)(masks)
    np.testing.assert_allclose(MaskedModel(net, x, background=(rows, np.ones(5)), target=2)(masks), plain,
                               rtol=0, atol=1e-14)
    np.testing.assert_allclose(plain, one_row.mean(0), rtol=0, atol=1e-14)


def test_kmeans_summary_of_few_distinct_rows_reproduces_the_full_background():
    rng = np.random.default_rng(1)
    distinct = rng.normal(size=(4, 5))
    X = distinct[rng.integers(0, 4, size=30)]  # 30 rows, 4 distinct
    bg = summarize_background(X, k=4)
    assert len(bg) == 4 and bg.rows.shape == (4, 5)
    counts = {tuple(r): int((X == r).all(1).sum()) for r in distinct}
    for row, weight in zip(bg.rows, bg.weights):
        assert weight == pytest.approx(counts[tuple(row)] / 30, abs=1e-15)
    net, x = _mlp(5), rng.normal(size=(3, 5))
    full = fl.explainer("exact_shapley", net, background=X).explain(x, target=1)
    summary = fl.explainer("exact_shapley", net, background=bg).explain(x, target=1)
    np.testing.assert_allclose(summary.values, full.values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(summary.base_values, full.base_values, rtol=0, atol=1e-12)
    assert summary.params["n_background"] == 4 and summary.params["background_weighted"] is True
    # k larger than the number of rows: every distinct row, with its count.
    assert len(summarize_background(X, k=50)) == 4


def test_kmeans_summary_finds_planted_clusters_with_their_sizes():
    rng = np.random.default_rng(2)
    centres = np.array([[0.0, 0.0, 0.0], [10.0, 0.0, 5.0], [0.0, 20.0, -5.0]])
    sizes = np.array([10, 25, 5])
    X = np.concatenate([c + 0.01 * rng.normal(size=(s, 3)) for c, s in zip(centres, sizes)])
    bg = summarize_background(X, k=3, seed=0)
    order = np.argsort([np.argmin(np.linalg.norm(centres - r, axis=1)) for r in bg.rows])
    np.testing.assert_allclose(bg.rows[order], centres, atol=0.02)
    np.testing.assert_allclose(bg.weights[order], sizes / 40, atol=1e-15)
    # Centres are cluster means: their weighted mean is the mean of X.
    np.testing.assert_allclose(bg.weights @ bg.rows, X.mean(0), atol=1e-10)
    again = summarize_background(X, k=3, seed=0)
    np.testing.assert_array_equal(again.rows, bg.rows)


def test_sample_summary_and_dataframes_keep_columns():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"age": rng.integers(20, 70, size=40), "income": rng.normal(5e4, 1e4, size=40),
                          "score": rng.normal(size=40)})
    bg = summarize_background(frame, k=7, method="sample", seed=4)
    assert list(bg.rows.columns) == ["age", "income", "score"]
    assert bg.rows.dtypes["age"].kind == "i"  # sampled rows keep their dtypes
    assert len(bg) == 7 and len(set(bg.rows.index)) == 7 and set(bg.rows.index) <= set(frame.index)
    np.testing.assert_allclose(bg.weights, np.full(7, 1 / 7))
    pd.testing.assert_frame_equal(summarize_background(frame, k=7, method="sample", seed=4).rows, bg.rows)
    assert len(summarize_background(frame, k=100, method="sample")) == 40
    km = summarize_background(frame, k=5)
    assert list(km.rows.columns) == ["age", "income", "score"] and km.weights.sum() == pytest.approx(1.0)
    rows, weights = km  # unpacks as a pair
    assert rows is km.rows and weights is km.weights


def test_estimator_on_a_dataframe_with_a_summarised_background_adds_up():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(5)
    X = pd.DataFrame(rng.normal(size=(60, 4)) * [1, 100, 0.1, 10] + [0, 500, 0, 50], columns=list("abcd"))
    y = (X["a"] + X["b"] / 100 > 5).astype(int)
    clf = LogisticRegression(max_iter=2000).fit(X, y)
    bg = summarize_background(X, k=8)
    e = fl.explainer("kernel_shap", clf, background=bg, budget=64).explain(X.iloc[:3], target=1)
    p = clf.predict_proba(X.iloc[:3])[:, 1]
    np.testing.assert_allclose(e.base_values + e.values.sum(1), p, atol=1e-9)
    p_bg = clf.predict_proba(bg.rows)[:, 1]
    np.testing.assert_allclose(e.base_values, bg.weights @ p_bg, atol=1e-12)
    assert e.feature_names == list("abcd")


@pytest.mark.parametrize("name", SHAPLEY)
def test_tabular_without_background_or_baseline_is_refused(name):
    net = _mlp()
    x = np.random.default_rng(6).normal(size=(2, 4))
    with pytest.raises(ValueError, match=r"background=.*baseline=") as info:
        fl.explainer(name, net, **OPTIONS.get(name, {})).explain(x, target=0)
    assert "summarize_background" in str(info.value) and "baseline=0.0" in str(info.value)
    # An explicit baseline or a background runs.
    fl.explainer(name, net, baseline=0.0, **OPTIONS.get(name, {})).explain(x, target=0)
    fl.explainer(name, net, background=x, **OPTIONS.get(name, {})).explain(x, target=0)


@pytest.mark.parametrize("name", ["exact_shapley", "kernel_shap"])
def test_images_keep_the_zero_default(name):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 2)).double().eval()
    x = np.random.default_rng(7).normal(size=(2, 1, 4, 4))
    groups = (np.arange(16).reshape(1, 4, 4) // 4).astype(int)
    kw = {"groups": groups, **OPTIONS.get(name, {})}
    default = fl.explainer(name, net, **kw).explain(x, target=1)
    explicit = fl.explainer(name, net, baseline=0.0, **kw).explain(x, target=1)
    np.testing.assert_array_equal(default.values, explicit.values)
    assert default.params["baseline"] == "zeros"  # the one record of None (Explainer docstring)


def test_bad_backgrounds_and_summaries_are_refused():
    net, x = _mlp(), np.zeros(4)
    rows = np.ones((3, 4))
    with pytest.raises(ValueError, match="weights"):
        MaskedModel(net, x, background=(rows, np.array([1.0, -1.0, 1.0])))
    with pytest.raises(ValueError, match="weights"):
        MaskedModel(net, x, background=(rows, np.zeros(3)))
    with pytest.raises(ValueError, match="weights"):
        Background(rows, np.ones(2))
    with pytest.raises(ValueError, match="weights"):
        fl.explainer("kernel_shap", net, background=(rows, np.array([np.nan, 1.0, 1.0])))
    with pytest.raises(ValueError, match="k"):
        summarize_background(rows, k=0)
    with pytest.raises(ValueError, match="method"):
        summarize_background(rows, method="median")
    with pytest.raises(ValueError, match="X"):
        summarize_background(np.ones(4))
    with pytest.raises(ValueError, match="non-numeric"):
        summarize_background(pd.DataFrame({"a": ["x", "y"]}))
