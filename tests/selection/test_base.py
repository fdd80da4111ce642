"""The shared selector base: ranking, exact k, DataFrames, errors, scikit-learn's checks."""

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from featurelens.selection._base import ScoreSelector, rank_scores, top_k_mask


class AbsCorrSelector(ScoreSelector):
    """|Pearson correlation| with y: a score whose right answer is known in closed form."""

    def __init__(self, k=None):
        self.k = k

    def _compute_scores(self, X, y):
        Xc = X - X.mean(0)
        yc = y - y.mean()
        denom = np.sqrt((Xc**2).sum(0) * (yc**2).sum())
        return np.abs(Xc.T @ yc) / np.where(denom > 0, denom, 1.0)


class VarianceSelector(ScoreSelector):
    """Unsupervised: the column variances."""

    _requires_y = False

    def __init__(self, k=None):
        self.k = k

    def _compute_scores(self, X, y):
        return X.var(0)


def _data(n=200, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = 3 * X[:, 4] - 2 * X[:, 1] + 0.5 * X[:, 2] + 0.1 * rng.standard_normal(n)
    return X, y


def test_rank_scores_and_top_k():
    scores = np.array([0.5, 2.0, 0.5, -1.0, 3.0])
    assert rank_scores(scores).tolist() == [3, 2, 4, 5, 1]  # the tie keeps the lower index first
    assert top_k_mask(scores, 3).tolist() == [True, True, False, False, True]
    assert top_k_mask(np.zeros(4), 2).sum() == 2  # exactly k, even with all scores tied


def test_scores_ranking_support_against_numpy():
    X, y = _data()
    s = AbsCorrSelector(k=2).fit(X, y)
    expected = np.abs([np.corrcoef(X[:, j], y)[0, 1] for j in range(X.shape[1])])
    np.testing.assert_allclose(s.scores_, expected, rtol=1e-10)
    assert s.ranking_[4] == 1 and s.ranking_[1] == 2 and s.ranking_[2] == 3
    assert s.get_support(indices=True).tolist() == [1, 4]
    np.testing.assert_array_equal(s.transform(X), X[:, [1, 4]])


def test_k_none_uses_default_support():
    X, y = _data()
    s = AbsCorrSelector().fit(X, y)
    np.testing.assert_array_equal(s.support_, s.scores_ > 0)


def test_dataframe_in_dataframe_out():
    pd = pytest.importorskip("pandas")
    X, y = _data()
    cols = [f"c{j}" for j in range(X.shape[1])]
    df = pd.DataFrame(X, columns=cols)
    s = AbsCorrSelector(k=2).fit(df, pd.Series(y))
    out = s.transform(df)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["c1", "c4"]
    assert s.get_feature_names_out().tolist() == ["c1", "c4"]
    np.testing.assert_array_equal(out.to_numpy(), X[:, [1, 4]])


def test_unsupervised_ignores_y():
    X, _ = _data()
    X[:, 3] *= 10
    s = VarianceSelector(k=1).fit(X)
    assert s.get_support(indices=True).tolist() == [3]
    assert VarianceSelector(k=1).fit(X, np.zeros(3)).get_support(indices=True).tolist() == [3]


@pytest.mark.parametrize("k, err", [(0, ValueError), (-1, ValueError), (2.5, TypeError), (True, TypeError), ("3", TypeError)])
def test_bad_k(k, err):
    # The shared validator: a wrong value is a ValueError, a wrong kind of value a TypeError.
    X, y = _data()
    with pytest.raises(err, match=r"k must be an int >= 1 or None; got"):
        AbsCorrSelector(k=k).fit(X, y)


def test_k_larger_than_features():
    X, y = _data(d=6)
    with pytest.raises(ValueError, match=r"k=7 is larger than the number of features of X \(6\)"):
        AbsCorrSelector(k=7).fit(X, y)


def test_nan_and_y_length_and_missing_y():
    X, y = _data()
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        AbsCorrSelector(k=2).fit(Xn, y)
    with pytest.raises(ValueError, match="y has 199 entries but X has 200 rows"):
        AbsCorrSelector(k=2).fit(X, y[:-1])
    with pytest.raises(ValueError, match="requires y"):
        AbsCorrSelector(k=2).fit(X)


def test_transform_checks_width():
    X, y = _data()
    s = AbsCorrSelector(k=2).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        s.transform(X[:, :4])


@parametrize_with_checks([AbsCorrSelector(k=1), VarianceSelector(k=1)])
def test_sklearn_checks(estimator, check):
    check(estimator)
