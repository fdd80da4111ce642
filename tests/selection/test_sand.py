"""SAND and its noise-gain layer: the constraint, the noise law, planted recovery, errors."""

import math

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification, make_friedman1
from sklearn.feature_selection import f_classif
from sklearn.utils.estimator_checks import parametrize_with_checks

from featurelens.selection import SAND, NoiseGainLayer


def xor_data(n=1000, d=20, pair=(3, 7), seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (X[:, pair[0]] * X[:, pair[1]] > 0).astype(int)
    return X, y


@pytest.fixture(scope="module")
def planted_fit():
    X, y = make_classification(
        n_samples=1000, n_features=50, n_informative=5, n_redundant=0, shuffle=False, random_state=0
    )
    return SAND(k=5, seed=0).fit(X, y)


# -- the layer ---------------------------------------------------------------------------------
def test_layer_constraint_holds_for_any_parameters():
    layer = NoiseGainLayer(7, 3)
    np.testing.assert_allclose(layer.gains().detach().numpy(), np.full(7, math.sqrt(3 / 7)), rtol=1e-6)
    with torch.no_grad():
        layer.w.copy_(torch.tensor([5.0, -0.2, 0.0, 0.7, -3.0, 0.01, 0.4]))
    a = layer.gains().detach().double()
    assert float((a**2).sum()) == pytest.approx(3.0, rel=1e-6)
    # clip |w| at 1, then normalise: entries 5 and -3 both become 1 before normalisation
    c = torch.tensor([1.0, 0.2, 0.0, 0.7, 1.0, 0.01, 0.4], dtype=torch.float64)
    np.testing.assert_allclose(a.numpy(), (math.sqrt(3) * c / c.norm()).numpy(), rtol=1e-6)
    layer.project_()
    np.testing.assert_allclose(layer.w.detach().double().numpy(), a.numpy(), rtol=1e-6)


def test_layer_eval_is_a_scale_and_train_adds_the_stated_noise():
    torch.manual_seed(0)
    layer = NoiseGainLayer(3, 1, sigma=1.5)
    with torch.no_grad():
        layer.w.copy_(torch.tensor([0.9, 0.3, 0.1]))
    a = layer.gains().detach()
    x = torch.randn(50_000, 3)
    layer.eval()
    torch.testing.assert_close(layer(x), x * a)
    layer.train()
    noise = (layer(x) - x * a).detach().double()
    # z ~ N(0, sigma^2) times (1 - a): zero mean, standard deviation 1.5 |1 - a_i|
    np.testing.assert_allclose(noise.mean(0).numpy(), 0.0, atol=0.02)
    np.testing.assert_allclose(noise.std(0).numpy(), 1.5 * (1 - a.double()).abs().numpy(), rtol=0.02)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_features=0, k=1), "n_features must be an int >= 1; got 0"),
        (dict(n_features=4, k=5), "k must be an int >= 1 and <= 4; got 5"),
        (dict(n_features=4, k=2, sigma=-1.0), "sigma must be a finite number >= 0"),
        (dict(n_features=4, k=2, sigma=float("nan")), "sigma must be a finite number >= 0"),
    ],
)
def test_layer_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        NoiseGainLayer(**kwargs)


def test_layer_wrong_width():
    with pytest.raises(ValueError, match="x has 3 features on its last axis; expected 4"):
        NoiseGainLayer(4, 2)(torch.zeros(2, 3))


# -- the selector: acceptance on planted data ---------------------------------------------------
def test_planted_classification_exact_k_polarised(planted_fit):
    s = planted_fit
    assert s.get_support(indices=True).tolist() == [0, 1, 2, 3, 4]
    # Acceptance 2: exactly k gains above 0.9, all others below 0.1
    assert int((s.gains_ > 0.9).sum()) == 5
    assert int((s.gains_ < 0.1).sum()) == 45
    assert float((s.gains_**2).sum()) == pytest.approx(5.0, rel=1e-5)
    np.testing.assert_array_equal(s.scores_, s.gains_)
    assert s.history_["gains"].shape == (s.epochs, 50)
    # the loss went down over training
    assert s.history_["loss"][-1] < s.history_["loss"][0]


def test_friedman1_selects_the_five_true_features():
    X, y = make_friedman1(n_samples=1000, n_features=20, random_state=0)
    s = SAND(k=5, seed=0).fit(X, y)
    assert s.task_ == "regression"
    assert s.get_support(indices=True).tolist() == [0, 1, 2, 3, 4]


def test_xor_found_where_f_classif_fails():
    X, y = xor_data()
    top_f = set(np.argsort(-f_classif(X, y)[0])[:2].tolist())
    assert top_f != {3, 7}  # the pair has no marginal signal: a univariate filter misses it
    s = SAND(k=2, seed=0).fit(X, y)
    assert set(s.get_support(indices=True).tolist()) == {3, 7}


def test_seed_determinism_and_custom_module():
    X, y = xor_data(n=120, d=6, pair=(1, 2))
    a = SAND(k=2, epochs=3, seed=1).fit(X, y).gains_
    b = SAND(k=2, epochs=3, seed=1).fit(X, y).gains_
    c = SAND(k=2, epochs=3, seed=2).fit(X, y).gains_
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    module = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    before = [p.detach().clone() for p in module.parameters()]
    s = SAND(k=2, epochs=2, module=module).fit(X, y)
    assert isinstance(s.network_[0], NoiseGainLayer) and s.network_[1] is not module
    for p, q in zip(before, module.parameters()):  # the given module was copied, not trained
        torch.testing.assert_close(p, q)


def test_module_with_wrong_output_width():
    X, y = xor_data(n=60, d=6, pair=(1, 2))
    module = torch.nn.Linear(6, 3)  # 3 logits for a 2-class target
    with pytest.raises(ValueError, match=r"module maps a \(2, 6\) input to shape \(2, 3\); expected \(batch, 2\) class logits"):
        SAND(k=2, epochs=1, module=module).fit(X, y)


def test_constant_feature_gets_no_gain():
    X, y = make_classification(n_samples=300, n_features=8, n_informative=2, n_redundant=0, shuffle=False, random_state=1)
    X[:, 5] = 3.0
    s = SAND(k=2, epochs=60, seed=0).fit(X, y)
    assert s.mean_[5] == 3.0 and s.scale_[5] == 1.0
    assert s.ranking_[5] > 2
    assert s.gains_[5] < s.gains_[s.support_].min()


def test_dataframe_round_trip():
    pd = pytest.importorskip("pandas")
    X, y = xor_data(n=200, d=5, pair=(1, 2))
    df = pd.DataFrame(X, columns=list("abcde"))
    s = SAND(k=2, epochs=5, seed=0).fit(df, y)
    out = s.transform(df)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(s.get_feature_names_out())
    assert len(out.columns) == 2


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (dict(k=None), ValueError, "k must be a positive integer for SAND"),
        (dict(k=9), ValueError, "k=9 is larger than the number of features of X"),
        (dict(k=2, epochs=0), ValueError, "epochs must be an int >= 1; got 0"),
        (dict(k=2, lr=-1.0), ValueError, "lr must be a finite number > 0"),
        (dict(k=2, sigma=-0.5), ValueError, "sigma must be a finite number >= 0"),
        (dict(k=2, weight_decay=float("inf")), ValueError, "weight_decay must be a finite number >= 0"),
        (dict(k=2, hidden=(4, 0)), ValueError, "each width in hidden must be an int >= 1; got 0"),
        (dict(k=2, task="ranking"), ValueError, "task must be one of 'auto', 'classification', 'regression'; got 'ranking'"),
        (dict(k=2, module="mlp"), TypeError, "module must be a torch.nn.Module or None; got str"),
        (dict(k=2, seed=-3), ValueError, "seed must be None, a non-negative int or a numpy.random.Generator; got -3"),
        (dict(k=2, device="gpu0"), ValueError, "device must name a torch device such as 'cpu' or 'cuda:0'; got 'gpu0'"),
    ],
)
def test_bad_parameters(kwargs, err, match):
    X, y = xor_data(n=40, d=8)
    with pytest.raises(err, match=match):
        SAND(**kwargs).fit(X, y)


def test_nan_and_wrong_y_length():
    X, y = xor_data(n=40, d=8)
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SAND(k=2).fit(X, y)
    with pytest.raises(ValueError, match="y has 39 entries but X has 40 rows"):
        SAND(k=2).fit(np.nan_to_num(X), y[:-1])


@parametrize_with_checks([SAND(k=1, epochs=2, hidden=(4,), batch_size=32)])
def test_sklearn_checks(estimator, check):
    check(estimator)
