"""Tests for featurelens.selection.HyperDFS: on a planted case where a context feature says which of
two feature groups carries the label, the dynamic policy acquires the context and then the right
group, and beats every static subset of the same size (the exact Bayes optimum of static
selection, an exhaustive search with a separately trained classifier, and the model's own
classifier on fixed subsets); the acquisition's contract; errors; scikit-learn's estimator checks."""

import itertools

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from featurelens.selection import HyperDFS

D = 7
BUDGET = 3


def planted(n, seed):
    """x ~ N(0, I_7). y = 2 [x0 > 0] + [x1 + x2 > 0] when x0 > 0, else 2 [x0 > 0] + [x3 + x4 > 0];
    x5, x6 are noise. The context x0 gives the high bit itself (so a one-step greedy policy values
    it) and says which pair gives the low bit: the best rows acquire {x0, x1, x2} or {x0, x3, x4}.

    Every *static* 3-subset is at most 0.75 accurate (Bayes): without x0 the high bit is a coin
    (<= 0.5); with x0 and two others, the low bit is known from a complete pair in at most half the
    rows and is a coin otherwise ({0, 1, 2}: 0.5 * 1 + 0.5 * 0.5), or is guessed from one feature of
    each pair ({0, 1, 3}: P(sign x1 = sign(x1 + x2)) = 0.75 in both halves)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D))
    hi = X[:, 0] > 0
    lo = np.where(hi, X[:, 1] + X[:, 2] > 0, X[:, 3] + X[:, 4] > 0)
    return X, 2 * hi.astype(int) + lo.astype(int)


STATIC_BAYES = 0.75


@pytest.fixture(scope="module")
def fitted():
    X, y = planted(1200, 0)
    Xt, yt = planted(2000, 1)
    model = HyperDFS(budget=BUDGET, epochs=25, value_epochs=12, seed=0).fit(X, y)
    return model, X, y, Xt, yt


def test_dynamic_selection_beats_the_best_static_subset_on_a_planted_case(fitted):
    model, X, y, Xt, yt = fitted
    acc = float((model.predict(Xt) == yt).mean())
    # exhaustive static selection: a classifier trained on each fixed 3-subset, the best one kept
    static = max(float((KNeighborsClassifier(25).fit(X[:, S], y).predict(Xt[:, S]) == yt).mean())
                 for S in itertools.combinations(range(D), BUDGET))
    assert static <= STATIC_BAYES + 0.02  # the search is near the Bayes optimum of static selection
    own_static = max(float((model.predict_proba_subset(Xt, list(S)).argmax(1) == yt).mean())
                     for S in itertools.combinations(range(D), BUDGET))
    assert acc > STATIC_BAYES + 0.12, acc
    assert acc > static + 0.12 and acc > own_static + 0.12, (acc, static, own_static)
    # budget 2: the context and one feature of its pair (0.75 at best) against any static pair
    # (Bayes 0.625: x0 and one feature, 0.5 * 0.75 + 0.5 * 0.5)
    acc2 = float((model.predict(Xt, budget=2) == yt).mean())
    static2 = max(float((KNeighborsClassifier(25).fit(X[:, S], y).predict(Xt[:, S]) == yt).mean())
                  for S in itertools.combinations(range(D), 2))
    assert acc2 > 0.7 and acc2 > static2 + 0.07, (acc2, static2)


def test_each_row_acquires_the_context_then_its_own_group(fitted):
    model, _, _, Xt, _ = fitted
    order = model.acquire(Xt)
    assert order.shape == (len(Xt), BUDGET) and order.dtype.kind == "i"
    assert (order[:, 0] == 0).mean() > 0.95
    hi = Xt[:, 0] > 0
    right = np.array([set(r[1:]) == ({1, 2} if h else {3, 4}) for r, h in zip(order, hi)])
    assert right.mean() > 0.8
    # both groups are used: the selection differs between rows
    assert 0.3 < np.mean([set(r[1:]) == {1, 2} for r in order]) < 0.7


def test_acquisition_contract(fitted):
    model, _, _, Xt, _ = fitted
    order = model.acquire(Xt[:300])
    assert all(len(set(r)) == BUDGET for r in order)  # never the same feature twice
    mask = model.acquisition_mask(Xt[:300])
    assert mask.shape == (300, D) and (mask.sum(1) == BUDGET).all()
    np.testing.assert_array_equal(np.sort(np.flatnonzero(mask[0])), np.sort(order[0]))
    # the greedy policy: a smaller budget acquires a prefix of the same order
    np.testing.assert_array_equal(model.acquire(Xt[:300], budget=1), order[:, :1])
    np.testing.assert_array_equal(model.acquire(Xt[:300], budget=D)[:, :BUDGET], order)
    assert model.acquire(Xt[:5], budget=0).shape == (5, 0)
    # rows are independent of each other: a subset of rows gives the same acquisitions and outputs
    np.testing.assert_array_equal(model.acquire(Xt[:7]), order[:7])
    p = model.predict_proba(Xt[:300])
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-12)
    np.testing.assert_allclose(model.predict_proba(Xt[:7]), p[:7], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(model.predict(Xt[:300]), model.classes_[p.argmax(1)])
    # the prediction at the final subset is the classifier on that fixed subset
    rows = np.flatnonzero((np.sort(order, axis=1) == [0, 1, 2]).all(1))[:20]
    np.testing.assert_allclose(model.predict_proba(Xt[rows]), model.predict_proba_subset(Xt[rows], [0, 1, 2]),
                               rtol=1e-10, atol=1e-12)
    assert set(model.history_) == {"loss", "value_loss"} and len(model.history_["loss"]) == 25


def test_seeded_fit_is_reproducible_and_string_labels():
    X, y = planted(200, 3)
    labels = np.array(["a", "b", "c", "d"])[y]
    kw = dict(budget=2, epochs=3, value_epochs=2, width=8, hyper_hidden=16, classifier_hidden=4)
    a = HyperDFS(seed=5, **kw).fit(X, labels)
    b = HyperDFS(seed=5, **kw).fit(X, labels)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    np.testing.assert_array_equal(a.acquire(X), b.acquire(X))
    assert set(a.predict(X)) <= set("abcd")
    c = HyperDFS(seed=6, **kw).fit(X, labels)
    assert not np.array_equal(a.predict_proba(X), c.predict_proba(X))
    linear = HyperDFS(seed=5, **{**kw, "classifier_hidden": 0}).fit(X, labels)
    assert linear.predict_proba(X).shape == (200, 4)


@pytest.mark.parametrize("params, exc, match", [
    (dict(budget=0), ValueError, "budget must be an int >= 1"),
    (dict(budget=2.5), TypeError, "budget must be an int"),
    (dict(budget=8), ValueError, r"budget=8 is larger than the number of features of X \(7 feature\(s\)\)"),
    (dict(n_heads=3), ValueError, "n_heads=3 must divide width=32"),
    (dict(classifier_hidden=-1), ValueError, "classifier_hidden"),
    (dict(lr=0), ValueError, "lr must be"),
    (dict(epochs=0), ValueError, "epochs"),
    (dict(seed=-1), ValueError, "seed"),
])
def test_bad_parameters_are_refused_by_name(params, exc, match):
    X, y = planted(40, 0)
    with pytest.raises(exc, match=match):
        HyperDFS(**{"epochs": 1, "value_epochs": 1, **params}).fit(X, y)


def test_bad_inputs_are_refused(fitted):
    model, _, _, Xt, _ = fitted
    X, y = planted(40, 0)
    with pytest.raises(ValueError, match="single class"):
        HyperDFS(epochs=1, value_epochs=1).fit(X, np.zeros(40, dtype=int))
    with pytest.raises(ValueError, match="Unknown label type"):
        HyperDFS(epochs=1, value_epochs=1).fit(X, np.linspace(0, 1, 40))
    with pytest.raises(NotFittedError):
        HyperDFS().predict(X)
    with pytest.raises(ValueError, match=r"budget=8 is larger than the number of features of X"):
        model.acquire(Xt[:3], budget=8)
    with pytest.raises(ValueError, match="budget must be an int >= 0"):
        model.predict(Xt[:3], budget=-1)
    with pytest.raises(ValueError, match="features"):
        model.predict_proba_subset(Xt[:3], [0, 9])
    with pytest.raises(ValueError, match="7 features"):
        model.predict(Xt[:3, :5])


@parametrize_with_checks([HyperDFS(budget=2, epochs=10, value_epochs=1, batch_size=64, width=8, hyper_hidden=16,
                                   classifier_hidden=8, lr=1e-2)])
def test_sklearn_compatible(estimator, check):
    check(estimator)
