"""MinShapSelector: telescoping identity, unused features exactly 0, p-values vs scipy, planted
recovery, errors and scikit-learn's checks."""

import numpy as np
import pytest
from scipy import stats
from sklearn.datasets import make_classification, make_friedman1
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

from featurelens.approximators import antithetic_permutations as _antithetic_permutations
from featurelens.selection import MinShapSelector
from featurelens.selection.minshap import (
    _one_sided_paired_pvalues,
    _permutation_deltas,
    combine_pvalues,
)


def test_planted_classification_top5():
    X, y = make_classification(
        n_samples=1000, n_features=50, n_informative=5, n_redundant=0, shuffle=False, random_state=0
    )
    s = MinShapSelector(k=5, n_permutations=6).fit(X, y)
    assert len(set(s.get_support(indices=True).tolist()) & {0, 1, 2, 3, 4}) >= 4


@pytest.mark.slow
def test_friedman1_selects_the_true_features_by_k_and_by_pvalue():
    X, y = make_friedman1(n_samples=1000, n_features=20, random_state=0)
    s = MinShapSelector(k=5, n_permutations=6).fit(X, y)  # the default estimator
    assert type(s.estimator_).__name__ == "RandomForestRegressor"
    assert s.get_support(indices=True).tolist() == [0, 1, 2, 3, 4]
    # k=None: the combined (max-p) test at alpha=0.05 keeps exactly the true features
    auto = MinShapSelector(n_permutations=6).fit(X, y)
    assert auto.get_support(indices=True).tolist() == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(auto.pvalues_ < 0.05, auto.support_)


def test_telescoping_mean_and_min():
    X, y = make_friedman1(n_samples=200, n_features=6, random_state=1)
    s = MinShapSelector(k=2, n_permutations=5, estimator=DecisionTreeRegressor(max_depth=4, random_state=0)).fit(X, y)
    # along every ordering the contributions sum to v(N) - v({})
    np.testing.assert_allclose(s.deltas_.sum(axis=1), s.value_full_ - s.value_empty_, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(s.scores_, s.deltas_.min(axis=0))
    np.testing.assert_allclose(s.shapley_, s.deltas_.mean(axis=0))
    # v(N) is minus the fitted model's held-out squared error: check it against an independent split
    from sklearn.model_selection import train_test_split

    _, X_te, _, y_te = train_test_split(X, y, test_size=0.3, random_state=0)
    assert s.value_full_ == pytest.approx(-np.mean((s.estimator_.predict(X_te) - y_te) ** 2), rel=1e-12)
    # 5 orderings, each with 5 interior coalitions, plus the shared empty and full ones (if no repeats)
    assert s.game_calls_ <= 5 * 5 + 2
    assert s.permutations_.shape == (5, 6)


def test_features_the_model_never_uses_score_exactly_zero():
    X, y = make_classification(n_samples=300, n_features=6, n_informative=2, n_redundant=0, shuffle=False, random_state=0)
    X[:, 5] = 1.0  # a constant column: documented handling is a zero contribution, p = 1
    # a stump splits on one feature only: every other feature's contribution is 0 in every context
    s = MinShapSelector(k=1, n_permutations=4, estimator=DecisionTreeClassifier(max_depth=1, random_state=0)).fit(X, y)
    used = int(np.flatnonzero(s.estimator_.feature_importances_)[0])
    others = [j for j in range(6) if j != used]
    np.testing.assert_array_equal(s.deltas_[:, others], 0.0)
    np.testing.assert_array_equal(s.pvalues_[others], 1.0)
    assert s.get_support(indices=True).tolist() == [used]
    assert used != 5 and s.scores_[5] == 0.0


def test_antithetic_permutations():
    perms = _antithetic_permutations(5, 7, np.random.default_rng(0))
    assert perms.shape == (5, 7)
    for p in perms:
        assert sorted(p.tolist()) == list(range(7))
    np.testing.assert_array_equal(perms[1], perms[0][::-1])
    np.testing.assert_array_equal(perms[3], perms[2][::-1])


def test_same_orderings_and_contributions_as_permutation_shap():
    # featurelens's permutation_shap explainer on the same game with the same generator state
    # draws the same antithetic orderings, so the per-ordering contributions must agree exactly.
    from featurelens.explainers.shapley import PermutationShap
    from featurelens.games import Game

    w = np.random.default_rng(3).normal(size=6)

    def v(masks):
        return (masks @ w) ** 2 + masks[:, 0] * masks[:, 2]

    P = 4
    explainer = PermutationShap(lambda x: x.sum(1), budget=2 + P * 5, seed=0)
    reference, v0, vn, _ = explainer._contributions(Game.from_function(v, 6), np.random.default_rng(0))
    game = Game.from_function(v, 6)
    deltas, values, unique, *_ = _permutation_deltas(game, _antithetic_permutations(P, 6, np.random.default_rng(0)))
    np.testing.assert_allclose(deltas, reference, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(values[:, 0], v0)
    np.testing.assert_allclose(values[:, -1], vn)
    # each distinct coalition once: shared prefixes (and the empty and full sets) are not re-evaluated
    assert game.calls == len(unique) <= 2 + P * 5
    assert len({row.tobytes() for row in unique}) == len(unique)


def test_paired_pvalues_match_scipy():
    rng = np.random.default_rng(0)
    r = rng.normal(0.1, 1.0, size=(3, 4, 50))
    ref = stats.ttest_1samp(r, 0.0, axis=-1, alternative="greater").pvalue
    np.testing.assert_allclose(_one_sided_paired_pvalues(r), ref, rtol=1e-10)
    degenerate = np.array([[0.0, 0.0, 0.0], [0.2, 0.2, 0.2], [-1.0, -1.0, -1.0]])
    assert _one_sided_paired_pvalues(degenerate).tolist() == [1.0, 0.0, 1.0]


@pytest.mark.parametrize("method", ["fisher", "stouffer"])
def test_combined_pvalues_match_scipy(method):
    p = np.array([[0.01, 0.2, 0.7], [0.04, 0.5, 0.9], [0.03, 0.01, 0.6]])
    ref = [stats.combine_pvalues(p[:, j], method=method).pvalue for j in range(3)]
    np.testing.assert_allclose(combine_pvalues(p, method), ref, rtol=1e-10)


def test_max_and_bonferroni():
    p = np.array([[0.01, 0.2, 0.7], [0.04, 0.5, 0.9], [0.03, 0.01, 0.6]])
    np.testing.assert_allclose(combine_pvalues(p, "max"), [0.04, 0.5, 0.9])
    np.testing.assert_allclose(combine_pvalues(p, "bonferroni"), [0.03, 0.03, 1.0])
    with pytest.raises(ValueError, match="combine must be one of"):
        combine_pvalues(p, "mean")


def test_dataframe_round_trip():
    pd = pytest.importorskip("pandas")
    X, y = make_friedman1(n_samples=120, n_features=6, random_state=0)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(6)])
    s = MinShapSelector(k=3, n_permutations=2, estimator=DecisionTreeRegressor(max_depth=3, random_state=0)).fit(df, y)
    out = s.transform(df)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == s.get_feature_names_out().tolist()
    assert len(out.columns) == 3


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (dict(alpha=1.5), ValueError, r"alpha must be a finite number > 0.0 and < 1.0; got 1.5"),
        (dict(n_permutations=0), ValueError, "n_permutations must be an int >= 1; got 0"),
        (dict(combine="median"), ValueError, "combine must be one of"),
        (dict(test_size=1.0), ValueError, r"test_size must be a finite number > 0.0 and < 1.0; got 1.0"),
        (dict(task="survival"), ValueError, "task must be"),
        (dict(estimator="rf"), TypeError, "estimator must be a scikit-learn estimator with fit; got str"),
        (dict(seed=-1), ValueError, "seed must be None, a non-negative int or a numpy.random.Generator; got -1"),
        (dict(k=11), ValueError, "k=11 is larger than the number of features of X"),
    ],
)
def test_bad_parameters(kwargs, err, match):
    X, y = make_friedman1(n_samples=40, n_features=6, random_state=0)
    with pytest.raises(err, match=match):
        MinShapSelector(**kwargs).fit(X, y)


def test_nan_and_wrong_y_length():
    X, y = make_friedman1(n_samples=40, n_features=6, random_state=0)
    X[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MinShapSelector(k=2).fit(X, y)
    with pytest.raises(ValueError, match="y has 38 entries but X has 40 rows"):
        MinShapSelector(k=2).fit(np.nan_to_num(X), y[:-2])


@parametrize_with_checks([MinShapSelector(k=1, n_permutations=2, estimator=DecisionTreeClassifier(max_depth=2, random_state=0))])
def test_sklearn_checks(estimator, check):
    check(estimator)
