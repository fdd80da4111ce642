"""HyperDFS adapts its acquisitions per row (issue 33, item 9).

Planted task: x ~ N(0, I_4), y = [x1 > 0] when x0 > 0, else [x2 > 0]; x3 is noise. The context x0
says nothing about y on its own (I(y; x0) = 0) but says which of x1, x2 carries the label. With a
budget of 2 the best policy acquires x0, then x1 on rows with x0 > 0 and x2 on the others
(accuracy 1); any policy that does not branch on x0 is at most 0.75 accurate, and one that takes
the same two features on every row makes the right branch choice (x1 and not x2 when x0 > 0, x2 and
not x1 otherwise) on at most half of the rows.

Rate with the default training settings on 600 rows, 2000 held-out rows: 0.99, 0.98, 1.00 of the
rows choose the right branch for seeds 0, 1, 2 (the one-step greedy policy of the previous release:
0.42, 0.00, 0.50, picking x2 or x1 first on every row). The threshold 0.8 is well above what a
non-branching policy can reach (0.5) and leaves room for the estimator's noise."""

import numpy as np
import pytest

from featurelens.selection import HyperDFS


def planted(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4))
    y = np.where(X[:, 0] > 0, X[:, 1] > 0, X[:, 2] > 0).astype(int)
    return X, y


@pytest.fixture(scope="module")
def fitted():
    X, y = planted(600, 0)
    Xt, yt = planted(2000, 100)
    return HyperDFS(budget=2, seed=0).fit(X, y), Xt, yt  # the default training settings


def test_the_policy_branches_on_the_context_per_held_out_row(fitted):
    model, Xt, yt = fitted
    order = model.acquire(Xt)
    hi = Xt[:, 0] > 0
    has1, has2 = (order == 1).any(axis=1), (order == 2).any(axis=1)
    right = np.where(hi, has1 & ~has2, has2 & ~has1)
    assert right.mean() >= 0.8, right.mean()
    # feature 1 for most rows whose label depends on it, feature 2 for most of the others
    assert has1[hi].mean() >= 0.8 and has2[~hi].mean() >= 0.8, (has1[hi].mean(), has2[~hi].mean())
    # the context comes first, on (nearly) every row
    assert (order[:, 0] == 0).mean() >= 0.9
    # the rows differ: each of the two branches is taken on about half of the rows
    assert 0.35 < has1.mean() < 0.65


def test_branching_predicts_beyond_every_non_adaptive_policy(fitted):
    model, Xt, yt = fitted
    acc = float((model.predict(Xt) == yt).mean())
    assert acc > 0.9, acc  # a policy that does not branch on x0: at most 0.75
