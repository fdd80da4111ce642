"""The two TreeSHAP engines (numpy and compiled numba kernels) against brute force on random trees.

Random trees are generated as node arrays (numerical splits with NaN routing, categorical splits
with "other value" routing, features repeated along paths) and read through ``extract_paths``,
the same route as every supported model. The reference is computed on the node arrays directly,
independent of the path representation: the path-dependent value function is Lundberg et al.'s
EXPVALUE recursion (follow x on features in S, cover-weighted average of both children
otherwise), the interventional one the mean over background rows of f(x_S, b_notS); Shapley values
and Shapley interaction indices are then enumerated over all coalitions.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from featurelens.explainers.tree import engine as tree_engine
from featurelens.explainers.tree import numba_kernels
from featurelens.explainers.tree.paths import Ensemble, extract_paths

D = 5  # features: 0-2 numerical, 3-4 categorical
N_CATS = 4


def random_tree(rng, depth=4):
    """Node arrays of a random binary tree (leaves at depth <= ``depth``)."""
    left, right, feat, thr, nan_left, cover, value = [], [], [], [], [], [], []
    cats = {}

    def grow(level, weight):
        node = len(left)
        for arr in (left, right, feat, thr, nan_left):
            arr.append(0)
        cover.append(weight)
        value.append(0.0)
        if level == depth or (level >= 2 and rng.random() < 0.25):
            left[node] = right[node] = -1
            value[node] = float(rng.normal())
            return node
        f = int(rng.integers(D))
        feat[node] = f
        nan_left[node] = int(rng.integers(2))
        if f >= 3:  # categorical: a random subset of categories goes left
            subset = {int(c) for c in np.flatnonzero(rng.random(N_CATS) < 0.5)}
            cats[node] = (subset, bool(rng.integers(2)))
        else:
            thr[node] = float(rng.choice([-0.5, 0.0, 0.5]))
        share = float(rng.uniform(0.2, 0.8))
        left[node] = grow(level + 1, weight * share)
        right[node] = grow(level + 1, weight * (1 - share))
        return node

    grow(0, 100.0)
    return dict(left=np.array(left), right=np.array(right), feature=np.array(feat),
                threshold=np.array(thr, dtype=float), nan_left=np.array(nan_left),
                cover=np.array(cover), value=np.array(value)[:, None], categorical=cats)


def goes_left(tree, node, v):
    if np.isnan(v):
        return bool(tree["nan_left"][node])
    if node in tree["categorical"]:
        subset, other_left = tree["categorical"][node]
        if v >= 0 and v == int(v) and int(v) < N_CATS:
            return int(v) in subset
        return other_left
    return v <= tree["threshold"][node]


def expvalue(tree, x, S, node=0):
    if tree["left"][node] < 0:
        return tree["value"][node, 0]
    f = tree["feature"][node]
    lo, hi = tree["left"][node], tree["right"][node]
    if f in S:
        return expvalue(tree, x, S, lo if goes_left(tree, node, x[f]) else hi)
    c = tree["cover"]
    return (c[lo] * expvalue(tree, x, S, lo) + c[hi] * expvalue(tree, x, S, hi)) / c[node]


def predict(tree, x, node=0):
    while tree["left"][node] >= 0:
        node = tree["left"][node] if goes_left(tree, node, x[tree["feature"][node]]) else tree["right"][node]
    return tree["value"][node, 0]


def shapley_and_pairs(v):
    """Shapley values and pairwise Shapley interaction indices of a game v(frozenset)."""
    table = {S: v(frozenset(S)) for r in range(D + 1) for S in itertools.combinations(range(D), r)}
    val = lambda S: table[tuple(sorted(S))]  # noqa: E731
    phi = np.zeros(D)
    pair = np.zeros((D, D))
    for i in range(D):
        rest = [j for j in range(D) if j != i]
        for r in range(D):
            for S in itertools.combinations(rest, r):
                w = math.factorial(r) * math.factorial(D - r - 1) / math.factorial(D)
                phi[i] += w * (val(S + (i,)) - val(S))
    for i, j in itertools.combinations(range(D), 2):
        rest = [k for k in range(D) if k not in (i, j)]
        for r in range(D - 1):
            for S in itertools.combinations(rest, r):
                w = math.factorial(r) * math.factorial(D - r - 2) / math.factorial(D - 1)
                pair[i, j] += w * (val(S + (i, j)) - val(S + (i,)) - val(S + (j,)) + val(S))
        pair[j, i] = pair[i, j]
    return phi, pair


def random_rows(rng, n):
    x = np.empty((n, D))
    x[:, :3] = rng.choice([-1.0, -0.5, 0.0, 0.25, 0.5, 1.0, np.nan], size=(n, 3))
    x[:, 3:] = rng.choice([0.0, 1.0, 2.0, 3.0, 7.0, -1.0, 1.5, np.nan], size=(n, 2))  # 7, -1, 1.5: other
    return x


@pytest.fixture(scope="module")
def forest():
    rng = np.random.default_rng(7)
    trees = [random_tree(rng) for _ in range(3)]
    paths = [extract_paths(t["left"], t["right"], t["feature"], t["threshold"], t["nan_left"],
                            t["cover"], t["value"], 1.0, categorical=t["categorical"]) for t in trees]
    ens = Ensemble(paths, 0.25, 1, True, False, True, D)
    return trees, ens, random_rows(rng, 6), random_rows(rng, 4)


def engines():
    out = ["numpy"]
    if numba_kernels.HAVE_NUMBA:
        out.append("numba")
    return out


@pytest.fixture(params=engines())
def engine(request, monkeypatch):
    monkeypatch.setattr(tree_engine, "ENGINE", request.param)
    return request.param


def test_categories_reach_the_path_arrays(forest):
    trees, ens, x, _ = forest
    assert any(p.has_categories for p in ens.paths)
    f = np.array([sum(predict(t, row) for t in trees) + 0.25 for row in x])
    out = sum(np.prod(tree_engine.satisfies(p, x), axis=-1) @ p.value for p in ens.paths)[:, 0] + 0.25
    np.testing.assert_allclose(out, f, atol=1e-12)


def test_path_dependent_values_and_pairs_equal_brute_force(forest, engine):
    trees, ens, x, _ = forest
    values, base = tree_engine.shap_values(ens, x, None, 4)
    inter, base2 = tree_engine.interaction_values(ens, x, None, 4)
    assert base == pytest.approx(base2)
    for r, row in enumerate(x):
        phi, pair = shapley_and_pairs(lambda S: sum(expvalue(t, row, S) for t in trees) + 0.25)
        np.testing.assert_allclose(values[r], phi, atol=1e-10)
        off = ~np.eye(D, dtype=bool)
        np.testing.assert_allclose(inter[r][off], pair[off] / 2, atol=1e-10)
        np.testing.assert_allclose(inter[r].sum(axis=1), phi, atol=1e-10)
        f = sum(predict(t, row) for t in trees) + 0.25
        assert base + values[r].sum() == pytest.approx(f, abs=1e-10)


def test_path_dependent_values_in_row_blocks_equal_brute_force(forest, engine):
    """70 rows: the compiled kernel's row blocks (64 rows, then 6; fewer than 8 rows go row by row
    in scalar code) on categorical, NaN and repeated-feature paths."""
    trees, ens, _, _ = forest
    x = random_rows(np.random.default_rng(21), 70)
    values, base = tree_engine.shap_values(ens, x, None, 16)
    for r in (0, 5, 63, 64, 69):
        phi, _ = shapley_and_pairs(lambda S: sum(expvalue(t, x[r], S) for t in trees) + 0.25)
        np.testing.assert_allclose(values[r], phi, atol=1e-10)
    few, _ = tree_engine.shap_values(ens, x[:5], None, 16)
    np.testing.assert_allclose(few, values[:5], atol=1e-13)


@pytest.mark.skipif(not numba_kernels.HAVE_NUMBA, reason="numba is not installed")
def test_one_or_two_rows_by_walking_the_trees_equal_brute_force():
    """Numerical trees read by the compiled forest walk (``forest_paths``): one and two rows go
    through the tree walk of ``numba_walk.walk_values`` (features repeated down a path, NaN, a
    stump), more rows through the row blocks; both equal brute force."""
    from featurelens.explainers.tree.paths import forest_paths

    rng = np.random.default_rng(5)
    trees = []
    while len(trees) < 4:
        t = random_tree(rng, depth=5)
        if not t["categorical"]:
            trees.append(t)
    stump = dict(left=np.array([-1]), right=np.array([-1]), feature=np.array([0]), threshold=np.array([0.0]),
                 nan_left=np.array([0]), cover=np.array([10.0]), value=np.array([[0.7]]), categorical={})
    trees.append(stump)
    parts = [(t["left"], t["right"], t["feature"], t["threshold"], t["nan_left"], t["cover"], t["value"], 1.0)
             for t in trees]
    paths, packed = forest_paths(parts)
    assert packed.nodes is not None
    ens = Ensemble(paths, 0.25, 1, True, False, True, D)
    ens.packed = packed
    x = random_rows(rng, 6)
    x[:, 3:] = rng.choice([-1.0, 0.0, 0.5, np.nan], size=(6, 2))  # numerical values on features 3, 4
    assert numba_kernels.WALK_ROWS > 2
    walked = np.concatenate([tree_engine.shap_values(ens, x[r : r + 1], None, 4)[0] for r in range(6)])
    blocks, base = tree_engine.shap_values(ens, x, None, 4)
    np.testing.assert_allclose(walked, blocks, atol=1e-13)
    for r, row in enumerate(x):
        phi, _ = shapley_and_pairs(lambda S: sum(expvalue(t, row, S) for t in trees) + 0.25)
        np.testing.assert_allclose(walked[r], phi, atol=1e-10)
        assert base + walked[r].sum() == pytest.approx(sum(predict(t, row) for t in trees) + 0.25, abs=1e-10)


@pytest.mark.skipif(not numba_kernels.HAVE_NUMBA, reason="numba is not installed")
def test_one_or_two_rows_of_shallow_trees_in_closed_form_equal_brute_force():
    """Trees of depth <= 3 (paths of at most 3 features; categorical splits and NaN): one and two
    rows take the closed-form kernel, six rows the row blocks; both equal brute force."""
    rng = np.random.default_rng(9)
    trees = [random_tree(rng, depth=3) for _ in range(6)]
    assert any(t["categorical"] for t in trees)
    paths = [extract_paths(t["left"], t["right"], t["feature"], t["threshold"], t["nan_left"],
                           t["cover"], t["value"], 1.0, categorical=t["categorical"]) for t in trees]
    ens = Ensemble(paths, -0.5, 1, True, False, True, D)
    x = random_rows(rng, 6)
    assert max(p.feature.shape[1] for p in ens.paths) <= 3
    one = np.concatenate([tree_engine.shap_values(ens, x[r : r + 1], None, 4)[0] for r in range(6)])
    two = np.concatenate([tree_engine.shap_values(ens, x[r : r + 2], None, 4)[0] for r in (0, 2, 4)])
    blocks, _ = tree_engine.shap_values(ens, x, None, 4)
    np.testing.assert_allclose(one, blocks, atol=1e-13)
    np.testing.assert_allclose(two, blocks, atol=1e-13)
    for r, row in enumerate(x):
        phi, _ = shapley_and_pairs(lambda S: sum(expvalue(t, row, S) for t in trees) - 0.5)
        np.testing.assert_allclose(one[r], phi, atol=1e-10)


def test_interventional_values_and_pairs_equal_brute_force(forest, engine):
    trees, ens, x, bg = forest
    values, base = tree_engine.shap_values(ens, x, bg, 4)
    inter, _ = tree_engine.interaction_values(ens, x, bg, 4)
    mean_f = np.mean([sum(predict(t, b) for t in trees) + 0.25 for b in bg])
    assert base == pytest.approx(mean_f, abs=1e-12)
    for r, row in enumerate(x):
        def v(S, row=row):
            total = 0.0
            for b in bg:
                z = np.where(np.isin(np.arange(D), list(S)), row, b)
                total += sum(predict(t, z) for t in trees) + 0.25
            return total / len(bg)

        phi, pair = shapley_and_pairs(v)
        np.testing.assert_allclose(values[r], phi, atol=1e-10)
        off = ~np.eye(D, dtype=bool)
        np.testing.assert_allclose(inter[r][off], pair[off] / 2, atol=1e-10)


@pytest.mark.skipif(not numba_kernels.HAVE_NUMBA, reason="numba is not installed")
def test_engines_agree_on_a_fitted_forest_with_mask_blocks(monkeypatch):
    """Both engines (and both ways of reading trees into paths) on a scikit-learn classifier
    (three outputs; 150 rows: two whole blocks of the path-dependent kernel and a partial one), with the
    interventional background and rows split into several mask blocks."""
    from sklearn.datasets import make_classification
    from sklearn.ensemble import RandomForestClassifier

    from featurelens.explainers.tree import tree_shap_values

    X, y = make_classification(n_samples=200, n_features=6, n_informative=4, n_classes=3,
                               random_state=0)
    model = RandomForestClassifier(n_estimators=5, max_depth=5, random_state=0).fit(X, y)
    results = {}
    for name in ("numpy", "numba"):
        monkeypatch.setattr(tree_engine, "ENGINE", name)
        # the numpy arm also reads the trees with the Python walk (what runs without numba)
        monkeypatch.setattr(numba_kernels, "HAVE_NUMBA", name == "numba")
        monkeypatch.setattr(tree_engine, "MASK_BYTES", 8 * 40 * 7)  # a few rows per block
        results[name] = (tree_shap_values(model, X[:150]), tree_shap_values(model, X[:30], X[150:187]))
    for (a, b), (c, e) in zip(results["numpy"], results["numba"]):
        np.testing.assert_allclose(a, c, atol=1e-12)
        np.testing.assert_allclose(b, e, atol=1e-12)


def test_numba_engine_refusal_is_clear(monkeypatch):
    """ENGINE="numba" where the kernels cannot run says why."""
    monkeypatch.setattr(numba_kernels, "HAVE_NUMBA", False)
    monkeypatch.setattr(tree_engine, "ENGINE", "numba")
    rng = np.random.default_rng(0)
    t = random_tree(rng, depth=2)
    paths = extract_paths(t["left"], t["right"], t["feature"], t["threshold"], t["nan_left"],
                           t["cover"], t["value"], 1.0, categorical=t["categorical"])
    ens = Ensemble([paths], 0.0, 1, True, False, True, D)
    with pytest.raises(RuntimeError, match="numba"):
        tree_engine.shap_values(ens, random_rows(rng, 2), None, 4)


def test_concurrent_calls_from_threads_give_the_serial_values():
    """Two Python threads explaining at once (a thread-pool executor, a web server) get the serial
    values (numba's workqueue threading layer, its fallback without OpenMP or TBB, would abort the
    process on concurrent parallel launches, so the kernels are serialised)."""
    from concurrent.futures import ThreadPoolExecutor

    from sklearn.datasets import make_regression
    from sklearn.ensemble import RandomForestRegressor

    from featurelens.explainers.tree import tree_shap_values

    X, y = make_regression(n_samples=120, n_features=5, random_state=1)
    model = RandomForestRegressor(n_estimators=4, max_depth=4, random_state=0).fit(X, y)
    serial = [tree_shap_values(model, X[i : i + 30])[0] for i in range(0, 120, 30)]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(lambda i: tree_shap_values(model, X[i : i + 30])[0], range(0, 120, 30)))
    for a, b in zip(serial, parallel):
        np.testing.assert_allclose(a, b, atol=1e-12)
