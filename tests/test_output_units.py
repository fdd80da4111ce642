"""Output units: ``Model(..., output="raw"|"probability"|"log_odds")`` is the one
place outputs become units; explainers and the model-calling metrics take ``output=`` and the
Explanation records it. Expected values are analytic (softmax, its Jacobian, the linear log-odds of
logistic regression), never outputs of the code under test."""

import math

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.explainers import explainer
from featurelens.metrics._perturb import prepare
from featurelens.models._outputs import log_odds_from_logits
from featurelens.models import Model


def _linear(d=4, k=3, seed=0):
    torch.manual_seed(seed)
    net = torch.nn.Linear(d, k).double()
    return net


def _x(n=5, d=4, seed=1):
    return np.random.default_rng(seed).normal(size=(n, d))


def _softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


# -- the Model adapter ------------------------------------------------------------------------


def test_probability_is_softmax_and_log_odds_is_logit_of_it():
    net, x = _linear(), _x()
    z = net(torch.from_numpy(x)).detach().numpy()
    p = _softmax(z)
    m = Model(net, output="probability")
    np.testing.assert_allclose(m.predict(x).numpy(), p, atol=1e-14)
    lo = Model(net, output="log_odds").predict(x).numpy()
    np.testing.assert_allclose(lo, np.log(p / (1 - p)), atol=1e-12)
    np.testing.assert_allclose(Model(net).predict(x).numpy(), z, atol=0)  # raw as today


def test_single_output_probability_is_sigmoid_and_log_odds_the_logit():
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 1).double()
    x = _x(6, 3)
    z = net(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(Model(net, output="probability").predict(x).numpy(), 1 / (1 + np.exp(-z)), atol=1e-15)
    np.testing.assert_allclose(Model(net, output="log_odds").predict(x).numpy(), z, atol=0)


def test_log_odds_from_logits_is_stable_where_the_naive_formula_fails():
    # p_top = 1 - ~2e-22 in float64 is 1.0: the naive log(p / (1 - p)) is inf; exactly it is
    # z_top - logsumexp(others) = 50 - log(2).
    z = torch.tensor([[50.0, 0.0, 0.0], [-800.0, 0.0, 1.0]], dtype=torch.float64, requires_grad=True)
    lo = log_odds_from_logits(z)
    expected_row0 = [50.0 - math.log(2.0), 0.0 - np.logaddexp(50.0, 0.0), 0.0 - np.logaddexp(50.0, 0.0)]
    np.testing.assert_allclose(lo[0].detach().numpy(), expected_row0, rtol=1e-15)
    np.testing.assert_allclose(lo[1, 0].item(), -800.0 - np.logaddexp(0.0, 1.0), rtol=1e-15)
    lo.sum().backward()
    assert torch.isfinite(z.grad).all()
    # two classes: the difference of the logits
    z2 = torch.tensor([[3.0, -1.5]], dtype=torch.float64)
    np.testing.assert_allclose(log_odds_from_logits(z2).numpy(), [[4.5, -4.5]], atol=0)


def test_with_output_shares_the_function_and_counts_calls():
    net, x = _linear(), _x()
    m = Model(net)
    p = m.with_output("probability")
    assert p is not m and p.function is m.function and p.output == "probability" and m.output == "raw"
    assert m.with_output("raw") is m and p.with_output("probability") is p
    before = m.calls
    p.predict(x)
    assert p.calls == len(x) and m.calls == before + len(x)
    assert Model.wrap(p) is p  # a Model passed on keeps its units
    assert Model.wrap(p, output="log_odds").output == "log_odds"
    assert "probability" in repr(p)


@pytest.mark.parametrize("bad", ["prob", "logit", None, 1])
def test_bad_output_is_refused_naming_output(bad):
    net = _linear()
    err = ValueError  # check_option: a ValueError naming the argument and the options
    with pytest.raises(err, match="output"):
        Model(net, output=bad)
    with pytest.raises((TypeError, ValueError), match="output"):
        Model(net).with_output(bad)
    if bad is not None:  # None means "the Model's own units" for explainers
        with pytest.raises(err, match="output"):
            explainer("saliency", net, output=bad)


def test_gradients_flow_through_the_transform_saliency_is_the_softmax_jacobian_row():
    net, x = _linear(), _x()
    W = net.weight.detach().numpy()  # (k, d)
    p = _softmax(net(torch.from_numpy(x)).detach().numpy())
    target = np.array([0, 1, 2, 0, 1])
    e = explainer("saliency", net, output="probability").explain(x, target=target)
    # d p_t / d x = p_t (W_t - sum_j p_j W_j)
    expected = np.stack([p[i, t] * (W[t] - p[i] @ W) for i, t in enumerate(target)])
    np.testing.assert_allclose(e.values, expected, atol=1e-14)
    assert e.output == "probability" and e.params["output"] == "probability"
    # log-odds: d/dx [z_t - logsumexp_{j != t} z_j] = W_t - sum_{j != t} q_j W_j, q = softmax over j != t
    lo = explainer("saliency", net, output="log_odds").explain(x, target=target)
    z = net(torch.from_numpy(x)).detach().numpy()
    exp_lo = []
    for i, t in enumerate(target):
        others = [j for j in range(3) if j != t]
        q = _softmax(z[i, others][None])[0]
        exp_lo.append(W[t] - q @ W[others])
    np.testing.assert_allclose(lo.values, np.stack(exp_lo), atol=1e-13)


def test_integrated_gradients_completeness_in_probability_units():
    torch.manual_seed(3)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()
    x = _x(4, 4, seed=2)
    base = np.zeros((1, 4))
    e = explainer("integrated_gradients", net, n_steps=64, output="probability").explain(x, target=1)
    p = _softmax(net(torch.from_numpy(x)).detach().numpy())[:, 1]
    p0 = _softmax(net(torch.from_numpy(base)).detach().numpy())[0, 1]
    np.testing.assert_allclose(e.values.sum(1), p - p0, atol=1e-8)
    assert e.output == "probability"


def test_default_is_raw_and_recorded():
    net, x = _linear(), _x()
    e = explainer("saliency", net).explain(x, target=0)
    assert e.output == "raw" and e.params["output"] == "raw"
    np.testing.assert_allclose(e.values, np.broadcast_to(net.weight.detach().numpy()[0], x.shape), atol=0)
    # a Model in probability units passed to an explainer keeps them (output=None)
    e2 = explainer("saliency", Model(net, output="probability")).explain(x, target=0)
    assert e2.output == "probability"


def test_every_explainer_takes_output_through_the_factory(monkeypatch):
    # The factory wraps the model in the asked units before the class sees it, for every name.
    from featurelens.explainers import _base

    seen = {}

    class Probe:
        def __init__(self, model):
            seen["output"] = model.output

    net = torch.nn.Linear(3, 2).double()
    for name in fl.list_explainers():
        monkeypatch.setitem(_base._REGISTRY, name, Probe)
        explainer(name, net, output="log_odds")
        assert seen.pop("output") == "log_odds", name
    # A class built directly keeps the units of the Model it is given.
    from featurelens.explainers.gradient import Saliency

    assert Saliency(Model(net, output="probability")).output == "probability"


def test_tree_shap_refuses_units_it_cannot_compute():
    pytest.importorskip("sklearn")
    from sklearn.tree import DecisionTreeClassifier

    X = _x(40, 3)
    tree = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, (X[:, 0] > 0).astype(int))
    # a tree's class fractions are predict_proba itself; their log-odds are no sum over trees
    with pytest.raises(ValueError, match="output='log_odds'"):
        explainer("tree_shap", tree, output="log_odds")
    e = explainer("tree_shap", tree, output="probability").explain(X[:5], target=1)
    assert e.output == "probability"
    np.testing.assert_allclose(e.base_values + e.values.sum(axis=1), tree.predict_proba(X[:5])[:, 1], atol=1e-12)


# -- scikit-learn estimators ---------------------------------------------------------------------


def test_kernel_shap_log_odds_of_logistic_regression_is_linear():
    pytest.importorskip("sklearn")
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = (X @ [1.0, -2.0, 0.5, 0.0] + 0.3 * rng.normal(size=200) > 0).astype(int)
    lr = LogisticRegression().fit(X, y)
    bg = X[:30]
    x = X[100:105]
    e = explainer("kernel_shap", lr, background=bg, output="log_odds").explain(x, target=1)
    # log p1 / (1 - p1) = w . x + b: Shapley values over the background are w_i (x_i - E x_i)
    expected = lr.coef_[0] * (x - bg.mean(0))
    np.testing.assert_allclose(e.values, expected, atol=1e-8)
    assert e.output == "log_odds"
    # the same model in probability units is predict_proba itself
    np.testing.assert_allclose(Model(lr, output="probability").predict(x).numpy(), lr.predict_proba(x), atol=0)


def test_regressor_has_no_probability_units():
    pytest.importorskip("sklearn")
    from sklearn.linear_model import LinearRegression

    X = _x(20, 3)
    reg = LinearRegression().fit(X, X[:, 0])
    with pytest.raises(ValueError, match="output='probability'.*regressor"):
        Model(reg, output="probability")
    assert Model(reg).output == "raw"


def test_probability_clip_keeps_log_odds_finite():
    # a callable-free check of the documented clip: predict_proba values of exactly 0 and 1
    class Hard:
        classes_ = np.array([0, 1])
        _estimator_type = "classifier"

        def predict(self, X):
            return (X[:, 0] > 0).astype(int)

        def predict_proba(self, X):
            p = (X[:, 0] > 0).astype(float)
            return np.stack([1 - p, p], axis=1)

    lo = Model(Hard(), output="log_odds").predict(np.array([[1.0], [-1.0]])).numpy()
    eps = np.finfo(np.float64).eps
    bound = math.log((1 - eps) / eps)
    np.testing.assert_allclose(lo, [[-bound, bound], [bound, -bound]], rtol=1e-12)


# -- metrics ------------------------------------------------------------------------------------


def test_deletion_curve_in_probability_units_stays_in_unit_interval():
    torch.manual_seed(0)
    net = torch.nn.Linear(6, 3).double()
    with torch.no_grad():
        net.weight.mul_(20.0)  # large logits: raw outputs far outside [0, 1]
    x = _x(5, 6, seed=4)
    a = np.random.default_rng(5).normal(size=x.shape)
    raw, _ = fl.metrics.deletion_curve(net, x, a, target=0)
    assert raw.min() < 0 or raw.max() > 1  # the raw curve is not in probability units
    curves, auc = fl.metrics.deletion_curve(net, x, a, target=0, output="probability")
    assert curves.min() >= 0 and curves.max() <= 1 and auc.min() >= 0 and auc.max() <= 1
    same, _ = fl.metrics.deletion_curve(Model(net, output="probability"), x, a, target=0)
    np.testing.assert_array_equal(same, curves)
    # the first point is p_0(x), analytically
    np.testing.assert_allclose(curves[:, 0], _softmax(net(torch.from_numpy(x)).detach().numpy())[:, 0], atol=1e-14)


def test_prepare_takes_output():
    net, x = _linear(), _x()
    a = np.ones_like(x)
    m, xt, at, t, f0 = prepare(net, x, a, 2, output="probability")
    assert m.output == "probability"
    np.testing.assert_allclose(f0.numpy(), _softmax(net(torch.from_numpy(x)).detach().numpy())[:, 2], atol=1e-14)
    with pytest.raises(ValueError, match="output"):
        prepare(net, x, a, 2, output="probs")


def test_model_calling_metrics_take_output():
    net, x = _linear(), _x()
    a = np.random.default_rng(6).normal(size=x.shape)
    zero = np.zeros((1, 4))
    p0 = _softmax(net(torch.from_numpy(zero)).detach().numpy())[0, 1]
    curves, _ = fl.metrics.insertion_curve(net, x, a, target=1, output="probability")
    np.testing.assert_allclose(curves[:, 0], p0, atol=1e-14)  # the all-baseline start is p_1(0)
    fc_raw = fl.metrics.faithfulness_correlation(net, x, a, n_subsets=8, target=1)
    fc_p = fl.metrics.faithfulness_correlation(net, x, a, n_subsets=8, target=1, output="probability")
    assert fc_p.shape == fc_raw.shape and not np.allclose(fc_p, fc_raw)
    # infidelity in log-odds units: finite per sample
    inf_p = fl.metrics.infidelity(net, x, a, target=1, n_perturbations=4, output="log_odds")
    assert inf_p.shape == (len(x),) and np.all(np.isfinite(inf_p))
    with pytest.raises(ValueError, match="output"):
        fl.metrics.deletion_curve(net, x, a, target=0, output="proba")


def test_model_randomization_keeps_the_models_units():
    # Regression: the randomised copies were wrapped in a raw-unit Model, so a Model in probability
    # units was compared with raw-unit maps of its randomised copies.
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3)).double()
    x = _x(6, 4, seed=7)
    via_model = fl.metrics.model_randomization("saliency", x, model=Model(net, output="probability"), target=0)
    via_params = fl.metrics.model_randomization("saliency", x, model=net, target=0,
                                                explainer_params={"output": "probability"})
    raw = fl.metrics.model_randomization("saliency", x, model=net, target=0)
    np.testing.assert_allclose(via_model["similarity"], via_params["similarity"], atol=1e-12)
    assert not np.allclose(via_model["similarity"], raw["similarity"])
