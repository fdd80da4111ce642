"""Options accepted and ignored or misread, and degenerate numbers (issue 33, items 5 and 7): a
(rows, weights) background whose lengths differ, a metric scored without what it needs, a
NeuralFeatureKernel length scale given as text, RFRBoost on values near 1e200, NeuralFeatureKernel
on features near 1e200 and feature maps that return a tuple, a dict or None."""

import numpy as np
import pytest
import torch
from sklearn.ensemble import RandomForestRegressor

import featurelens as fl
from featurelens.learning import NeuralFeatureKernel, RandomFeatureRidge, RFRBoostClassifier, RFRBoostRegressor
from featurelens.metrics._spec import ScoreContext

rng = np.random.default_rng(0)
X = rng.standard_normal((60, 3))
y = X[:, 0] - 0.5 * X[:, 1]


# -- item 5: options -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["tree_shap", "kernel_shap"])
def test_a_background_pair_whose_lengths_differ_says_so(name):
    # before (tree_shap): "must be array-like (numpy or torch); got tuple (setting an array element ...)"
    forest = RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(X, y)
    model = forest if name == "tree_shap" else forest.predict
    with pytest.raises(ValueError, match=r"background=\(rows, weights\) needs one weight per row; got 4 rows "
                                         r"\(shape \(4, 3\)\) and 3 weights"):
        fl.explainer(name, model, background=(X[:4], np.ones(3))).explain(X[:2])
    e = fl.explainer(name, model, background=(X[:4], np.ones(4))).explain(X[:2])  # equal lengths: weighted rows
    assert e.values.shape == (2, 3)


@pytest.mark.parametrize("metric, field", [("relevance_mass", "masks"), ("pointing_game", "masks"),
                                           ("deletion", "model"), ("focus", "layout")])
def test_a_metric_scored_without_what_it_needs_names_the_field(metric, field):
    # before (relevance_mass): AttributeError: 'NoneType' object has no attribute ...
    a = np.random.default_rng(1).random((2, 8))
    with pytest.raises(ValueError, match=rf"metric '{metric}' needs ScoreContext\({field}=\.\.\.\), .*; got {field}=None"):
        fl.metrics.spec(metric).score(ScoreContext(a=a))


def test_relevance_mass_with_masks_is_the_share_inside():
    a = np.array([[1.0, 3.0, 0.0, 0.0]])
    masks = np.array([[False, True, False, False]])
    np.testing.assert_allclose(fl.metrics.spec("relevance_mass").score(ScoreContext(a=a, masks=masks)), [0.75])


@pytest.mark.parametrize("kind", ["linear", "rbf"])
@pytest.mark.parametrize("bad", ["1", True, float("nan"), 0.0, -1.0])
def test_a_length_scale_that_is_not_a_positive_number_is_refused(kind, bad):
    # before: length_scale="1" was read as 1.0 (rbf) or never looked at (linear)
    with pytest.raises((TypeError, ValueError), match=rf"length_scale must be a finite number > 0.0; got {bad!r}"):
        NeuralFeatureKernel(lambda x: x, kind=kind, length_scale=bad)(X[:3])


def test_a_numpy_length_scale_as_set_by_the_gp_optimiser_is_accepted():
    K = NeuralFeatureKernel(lambda x: x, kind="rbf", length_scale=np.float64(2.0))(X[:3])
    d2 = ((X[0] - X[1]) ** 2).sum()
    assert K[0, 1] == pytest.approx(np.exp(-d2 / 8.0), rel=1e-12)


# -- item 7: degenerate numbers --------------------------------------------------------------------

@pytest.mark.parametrize("features", ["swim", "gaussian"])
def test_rfrboost_refuses_values_whose_squares_overflow_by_name(features):
    # before: "array must not contain infs or NaNs" from scipy, deep inside the ridge
    with pytest.raises(ValueError, match=r"^X holds values up to \|X\| = 2.4e\+200; RFRBoostRegressor squares them "
                                         r"and sums over the 60 rows .* overflows float64 above \|X\| = 8.65e\+152: "
                                         r"expected \|X\| <= 8.65e\+152; rescale X first"):
        RFRBoostRegressor(features=features).fit(X * 1e200, y)
    with pytest.raises(ValueError, match=r"^y holds values up to \|y\| = .*e\+200; .*rescale y first"):
        RFRBoostRegressor(features=features).fit(X, y * 1e200)
    with pytest.raises(ValueError, match=r"^X holds values .* RFRBoostClassifier"):
        RFRBoostClassifier(features=features).fit(X * 1e200, y > 0)


def test_rfrboost_fits_large_values_that_fit_float64():
    model = RFRBoostRegressor(features="swim").fit(X * 1e100, y)
    pred = model.predict(X * 1e100)
    assert np.isfinite(pred).all() and np.corrcoef(pred, y)[0, 1] > 0.99


def test_swim_random_features_refuse_values_whose_squares_overflow():
    # before: accepted, every prediction the same number
    with pytest.raises(ValueError, match=r"X holds values up to .*RandomFeatureRidge\(features='swim'\)"):
        RandomFeatureRidge(features="swim").fit(X * 1e200, y)


def big(x):
    return x * 1e200


def test_rbf_kernel_of_features_near_1e200_is_computed_stably():
    # before: NaN (the squared norms overflowed)
    K = NeuralFeatureKernel(big, kind="rbf", length_scale=1e200)(X[:5])
    ref = NeuralFeatureKernel(lambda x: x, kind="rbf", length_scale=1.0)(X[:5])
    np.testing.assert_allclose(K, ref, rtol=1e-10, atol=1e-14)
    K1, grad = NeuralFeatureKernel(big, kind="rbf", length_scale=1.0)(X[:5], eval_gradient=True)
    np.testing.assert_array_equal(K1, np.eye(5))  # distances of 1e200 against a length scale of 1: exp(-huge)
    np.testing.assert_array_equal(grad, 0.0)  # the limit of K D / l^2 where K underflows, not 0 * inf
    _, grad_ref = NeuralFeatureKernel(lambda x: x, kind="rbf")(X[:5], eval_gradient=True)
    _, grad_big = NeuralFeatureKernel(big, kind="rbf", length_scale=1e200)(X[:5], eval_gradient=True)
    np.testing.assert_allclose(grad_big, grad_ref, rtol=1e-9, atol=1e-14)


def test_linear_kernel_whose_products_overflow_is_refused_and_cosine_is_stable():
    # before: inf
    with pytest.raises(ValueError, match=r"the linear kernel overflows float64: features reach \|phi\(x\)\| = "
                                         r".*e\+200.*use normalize=True \(the cosine kernel\) or kind='rbf'"):
        NeuralFeatureKernel(big)(X[:5])
    with pytest.raises(ValueError, match="the linear kernel overflows float64"):
        NeuralFeatureKernel(big).diag(X[:5])
    cos = NeuralFeatureKernel(big, normalize=True)(X[:5])
    np.testing.assert_allclose(cos, NeuralFeatureKernel(lambda x: x, normalize=True)(X[:5]), rtol=1e-12)
    np.testing.assert_allclose(np.diag(cos), 1.0)


class DictModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)

    def forward(self, x):
        return {"features": self.lin(x)}


@pytest.mark.parametrize("feature_map, match", [
    (torch.nn.LSTM(3, 4), r"feature_map returned a tuple of 2 \(an LSTM or GRU returns \(output, state\)\); it must "
                          r"return a tensor or array of shape \(5, p\) \(or \(5,\)\): wrap it .*lstm\(x\)\[0\]"),
    (DictModule(), r"feature_map returned a dict \(keys \['features'\]\); it must return a tensor or array of shape "
                   r"\(5, p\)"),
    (lambda x: None, r"feature_map returned None for a \(5, 3\) input; it must return a tensor or array of shape "
                     r"\(5, p\)"),
])
def test_a_feature_map_returning_something_else_says_what_it_must_return(feature_map, match):
    # before: AttributeError: 'tuple' object has no attribute 'detach' (LSTM), 'dict' ... (dict);
    # "zero-dimensional arrays cannot be concatenated" (None)
    with pytest.raises(TypeError, match=match):
        NeuralFeatureKernel(feature_map)(X[:5])


def test_a_wrapped_lstm_gives_its_kernel():
    lstm = torch.nn.LSTM(3, 4)
    K = NeuralFeatureKernel(lambda x: lstm(torch.as_tensor(x, dtype=torch.float32))[0].detach())(X[:5])
    assert K.shape == (5, 5) and np.isfinite(K).all()
