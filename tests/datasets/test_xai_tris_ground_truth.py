"""xai_tris(ground_truth="union" | "own"): each image's own pattern mask against the union of both
tetromino positions, checked on the planted layout."""

import importlib

import numpy as np
import pytest

import featurelens as fl

xt = importlib.import_module("featurelens.datasets.xai_tris")


def _own_reference(data):
    """Each image's own pattern, from first principles: the unsigned pattern of the image >= 0.05
    (the mask threshold of the generator), built from |patterns| (signs only appear in xor)."""
    return np.abs(data.patterns) >= 0.05


@pytest.mark.parametrize("scenario", ["linear", "multiplicative", "xor", "translations_rotations"])
@pytest.mark.parametrize("size", [8, 64])
def test_own_is_the_images_pattern_and_inside_the_union(scenario, size):
    n = 40 if size == 8 else 8
    union = fl.datasets.xai_tris(scenario, "white", image_size=size, n_samples=n, seed=3)
    own = fl.datasets.xai_tris(scenario, "white", image_size=size, n_samples=n, seed=3, ground_truth="own")
    assert own.ground_truth.shape == union.ground_truth.shape == (n, size, size)
    assert own.ground_truth.dtype == bool
    assert union.ground_truth_kind == "union" and own.ground_truth_kind == "own"
    # The data do not depend on the mask kind.
    np.testing.assert_array_equal(own.X, union.X)
    np.testing.assert_array_equal(own.y, union.y)
    np.testing.assert_array_equal(own.patterns, union.patterns)
    # own covers exactly the pixels of the image's pattern, and lies inside the union.
    np.testing.assert_array_equal(own.ground_truth, _own_reference(own))
    assert not np.any(own.ground_truth & ~union.ground_truth)


def test_own_on_8x8_linear_is_the_t_or_the_l():
    """8x8 linear: the T (4 cells at rows 1-3, col 1; row 2, col 2) for class 0, the L (rows 4-6,
    col 5; row 6, col 6) for class 1; the union holds both, 8 pixels."""
    data = fl.datasets.xai_tris("linear", "white", image_size=8, n_samples=20, seed=0, ground_truth="own")
    t = np.zeros((8, 8), bool)
    t[1:4, 1] = True
    t[2, 2] = True
    l_ = np.zeros((8, 8), bool)
    l_[4:7, 5] = True
    l_[6, 6] = True
    for mask, label in zip(data.ground_truth, data.y):
        np.testing.assert_array_equal(mask, t if label == 0 else l_)
    union = fl.datasets.xai_tris("linear", "white", image_size=8, n_samples=20, seed=0).ground_truth
    assert np.all(union == (t | l_)) and union[0].sum() == 8


def test_union_and_own_differ_where_they_should():
    """linear / multiplicative: own is strictly smaller than the union in every image; xor and
    translations_rotations: identical."""
    for scenario, same in (("linear", False), ("multiplicative", False), ("xor", True),
                           ("translations_rotations", True)):
        u = fl.datasets.xai_tris(scenario, "correlated", n_samples=12, seed=1).ground_truth
        o = fl.datasets.xai_tris(scenario, "correlated", n_samples=12, seed=1, ground_truth="own").ground_truth
        if same:
            np.testing.assert_array_equal(o, u)
        else:
            assert np.all(o.sum(axis=(1, 2)) < u.sum(axis=(1, 2)))


def test_own_seeds_reproduce_and_split_keeps_the_kind():
    a = fl.datasets.xai_tris("multiplicative", "white", n_samples=30, seed=7, ground_truth="own")
    b = fl.datasets.xai_tris("multiplicative", "white", n_samples=30, seed=7, ground_truth="own")
    np.testing.assert_array_equal(a.ground_truth, b.ground_truth)
    np.testing.assert_array_equal(a.X, b.X)
    c = fl.datasets.xai_tris("multiplicative", "white", n_samples=30, seed=8, ground_truth="own")
    assert not np.array_equal(a.y, c.y) or not np.array_equal(a.X, c.X)
    parts = a.split((0.5, 0.5))
    assert all(p.ground_truth_kind == "own" for p in parts)
    np.testing.assert_array_equal(parts[1].ground_truth, a.ground_truth[15:])


def test_ground_truth_argument_is_checked():
    with pytest.raises(ValueError, match="ground_truth"):
        fl.datasets.xai_tris("linear", "white", n_samples=4, ground_truth="mine")
    assert xt.GROUND_TRUTHS == ("union", "own")
