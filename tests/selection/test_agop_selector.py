"""AGOPSelector: closed-form AGOP of a linear network, unit invariance, planted recovery (RFM),
XOR where f_classif fails, errors and scikit-learn's checks."""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification, make_friedman1
from sklearn.feature_selection import f_classif
from sklearn.utils.estimator_checks import parametrize_with_checks

from featurelens.selection import AGOPSelector


def test_linear_network_closed_form():
    # f(x) = W x + b: the Jacobian is W at every x, so diag(AGOP)_j = sum_o W_oj^2, and in
    # standardised coordinates it is multiplied by var(x_j).
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 4)) * np.array([1.0, 10.0, 0.1, 3.0])
    net = torch.nn.Linear(4, 2).double()
    with torch.no_grad():
        net.weight.copy_(torch.tensor([[3.0, 0.0, 1.0, -2.0], [0.0, 0.5, 0.0, 1.0]], dtype=torch.float64))
    s = AGOPSelector(k=2, estimator=net).fit(X, np.zeros(300, dtype=int))
    W = net.weight.detach().numpy()
    np.testing.assert_allclose(s.scores_, (W**2).sum(0) * X.var(0), rtol=1e-10)
    assert s.estimator_ is net


def test_planted_classification_top5():
    X, y = make_classification(
        n_samples=1000, n_features=50, n_informative=5, n_redundant=0, shuffle=False, random_state=0
    )
    s = AGOPSelector(k=5, iters=3).fit(X, y)
    assert len(set(s.get_support(indices=True).tolist()) & {0, 1, 2, 3, 4}) >= 4


def test_friedman1_selects_the_five_true_features():
    X, y = make_friedman1(n_samples=1000, n_features=20, random_state=0)
    s = AGOPSelector(k=5).fit(X, y)
    assert s.get_support(indices=True).tolist() == [0, 1, 2, 3, 4]


def test_xor_found_where_f_classif_fails():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1000, 20))
    y = (X[:, 3] * X[:, 7] > 0).astype(int)
    assert set(np.argsort(-f_classif(X, y)[0])[:2].tolist()) != {3, 7}
    s = AGOPSelector(k=2).fit(X, y)
    assert set(s.get_support(indices=True).tolist()) == {3, 7}


def test_scores_do_not_depend_on_units():
    X, y = make_friedman1(n_samples=150, n_features=6, random_state=0)
    a = AGOPSelector(k=2, iters=2).fit(X, y).scores_
    b = AGOPSelector(k=2, iters=2).fit(X * np.array([1, 100, 0.01, 1, 5, 1]) + 7.0, y).scores_
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12)


def test_constant_feature_scores_zero():
    X, y = make_friedman1(n_samples=150, n_features=6, random_state=0)
    X[:, 5] = 2.5
    s = AGOPSelector(k=2, iters=2).fit(X, y)
    assert s.scores_[5] == pytest.approx(0.0, abs=1e-12)
    assert s.ranking_[5] == 6


def test_dataframe_round_trip():
    pd = pytest.importorskip("pandas")
    X, y = make_friedman1(n_samples=120, n_features=6, random_state=0)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(6)])
    s = AGOPSelector(k=3, iters=1).fit(df, y)
    out = s.transform(df)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == s.get_feature_names_out().tolist()
    assert len(out.columns) == 3


def test_bad_inputs():
    X, y = make_friedman1(n_samples=40, n_features=6, random_state=0)
    with pytest.raises(TypeError, match="estimator must be None, an unfitted estimator with fit"):
        AGOPSelector(k=2, estimator="rfm").fit(X, y)
    with pytest.raises(ValueError, match="iters must be an int >= 0"):
        AGOPSelector(k=2, iters=-1).fit(X, y)
    with pytest.raises(ValueError, match="k=7 is larger than the number of features of X"):
        AGOPSelector(k=7).fit(X, y)
    with pytest.raises(ValueError, match="y has 39 entries but X has 40 rows"):
        AGOPSelector(k=2).fit(X, y[:-1])
    X[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        AGOPSelector(k=2).fit(X, y)


@parametrize_with_checks([AGOPSelector(k=1, iters=1)])
def test_sklearn_checks(estimator, check):
    check(estimator)
