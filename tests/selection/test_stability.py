import zlib

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_blobs, make_classification

from featurelens.selection import SIOFS, MinkowskiWeightedSelector, stability
from featurelens.selection._base import ScoreSelector
from featurelens.selection.stability import mean_pairwise_jaccard, nogueira_index


class FirstColumns(ScoreSelector):
    """Always the first k columns: a perfectly stable selector."""

    _requires_y = False

    def __init__(self, k=3):
        self.k = k

    def _compute_scores(self, X, y):
        return -np.arange(X.shape[1], dtype=float)


class RandomColumns(ScoreSelector):
    """Random columns, the random stream seeded by the data's bytes (so each resample differs)."""

    _requires_y = False

    def __init__(self, k=None):
        self.k = k

    def _compute_scores(self, X, y):
        rng = np.random.default_rng(zlib.crc32(np.ascontiguousarray(X).tobytes()))
        return rng.uniform(-1.0, 1.0, X.shape[1])


def test_nogueira_hand_computed_example():
    # M = 2, d = 3: p = (1, 1/2, 1/2), s^2 = 2 * p (1 - p) = (0, 1/2, 1/2), kbar = 2:
    # Phi = 1 - (1/3) / ((2/3)(1/3)) = -1/2; Jaccard = |{0}| / |{0, 1, 2}| = 1/3.
    Z = np.array([[1, 1, 0], [1, 0, 1]])
    assert nogueira_index(Z) == pytest.approx(-0.5)
    assert mean_pairwise_jaccard(Z) == pytest.approx(1 / 3)


def test_nogueira_matches_direct_formula_on_planted_matrix():
    rng = np.random.default_rng(3)
    Z = rng.random((12, 9)) < np.linspace(0.05, 0.95, 9)  # selection sizes vary by row
    M, d = Z.shape
    s2 = np.array([np.var(Z[:, f].astype(float), ddof=1) for f in range(d)])
    kbar = np.mean([row.sum() for row in Z])
    expected = 1 - s2.mean() / ((kbar / d) * (1 - kbar / d))
    assert nogueira_index(Z) == pytest.approx(expected, rel=1e-12)
    pairs = [
        (Z[i] & Z[j]).sum() / max((Z[i] | Z[j]).sum(), 1) for i in range(M) for j in range(i + 1, M)
    ]
    assert mean_pairwise_jaccard(Z) == pytest.approx(np.mean(pairs), rel=1e-12)


def test_identical_selections_give_one():
    X = np.random.default_rng(0).normal(size=(40, 6))
    res = stability(FirstColumns(k=3), X, n_bootstrap=5, seed=1)
    assert res["nogueira"] == 1.0
    assert res["jaccard"] == 1.0
    assert res["supports"].shape == (5, 6)
    np.testing.assert_array_equal(res["frequency"], [1, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(res["n_selected"], [3] * 5)


@pytest.mark.parametrize("k", [3, None])  # None: the number selected varies between resamples
def test_random_selector_scores_about_zero(k):
    X = np.random.default_rng(0).normal(size=(30, 10))
    vals = np.array([stability(RandomColumns(k=k), X, n_bootstrap=10, seed=s)["nogueira"] for s in range(40)])
    # Nogueira's index is corrected for chance: its mean over random selections is 0. Tolerance:
    # four standard errors of the mean of the 40 replicates.
    sem = vals.std(ddof=1) / np.sqrt(len(vals))
    assert abs(vals.mean()) < 4 * sem + 1e-3
    assert vals.std() > 0  # the selections really were random


def test_stability_supervised_and_dataframe():
    X, y = make_classification(n_samples=200, n_features=10, n_informative=3, n_redundant=0, shuffle=False, random_state=0)
    df = pd.DataFrame(X, columns=[f"c{i}" for i in range(10)])
    res = stability(SIOFS(k=3), df, pd.Series(y), n_bootstrap=6, seed=0)
    res2 = stability(SIOFS(k=3), X, y, n_bootstrap=6, seed=0)
    np.testing.assert_array_equal(res["supports"], res2["supports"])  # same resamples, same fits
    assert (res["n_selected"] == 3).all()
    assert -1.0 <= res["nogueira"] <= 1.0 and 0.0 <= res["jaccard"] <= 1.0


def test_stability_unsupervised_selector_y_none():
    X, _ = make_blobs(n_samples=150, centers=[[0, 0, 0], [5, -5, 5], [-5, 5, 5]], random_state=0)
    noise = np.random.default_rng(0).uniform(X.min(), X.max(), size=(150, 3))
    sel = MinkowskiWeightedSelector(k=3, p_grid=(1.5, 2.0), n_init=2, n_clusters=3, seed=0)
    res = stability(sel, np.hstack([X, noise]), n_bootstrap=4, seed=0)
    # The three blob features are chosen on every resample.
    np.testing.assert_array_equal(res["frequency"], [1, 1, 1, 0, 0, 0])
    assert res["nogueira"] == 1.0


def test_stability_errors():
    X = np.zeros((10, 3))
    with pytest.raises(ValueError, match="n_bootstrap must be an int >= 2"):
        stability(FirstColumns(), X, n_bootstrap=1)
    with pytest.raises(ValueError, match="y has 9 entries but X has 10 rows"):
        stability(SIOFS(k=1), X, np.arange(9))
    with pytest.raises(TypeError, match="selector must be a scikit-learn selector"):
        stability(object(), X)
    with pytest.raises(ValueError, match="X must be 2-D"):
        stability(FirstColumns(), np.zeros(5))
    with pytest.raises(ValueError, match="0/1 or boolean"):
        nogueira_index(np.array([[0, 2], [1, 0]]))
    with pytest.raises(ValueError, match="at least 2 rows"):
        nogueira_index(np.ones((1, 3)))
