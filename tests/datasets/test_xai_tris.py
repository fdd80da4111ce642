"""Tests for the XAI-TRIS generator (Clark, Wilming & Haufe 2024, arXiv:2306.12816)."""

import numpy as np
import pytest
from scipy.ndimage import binary_dilation, gaussian_filter

from featurelens.datasets import BACKGROUNDS, SCENARIOS, XAI_TRIS_SNR, XAITrisDataset, xai_tris
from featurelens.datasets.xai_tris import _background, _blur_stack, _rngs

T_PIXELS = {(1, 1), (2, 1), (3, 1), (2, 2)}  # T = [[1,0],[1,1],[1,0]] at (1, 1)
L_PIXELS = {(4, 5), (5, 5), (6, 5), (6, 6)}  # L = [[1,0],[1,0],[1,1]] at (4, 5)
T = np.array([[1, 0], [1, 1], [1, 0]])
L = np.array([[1, 0], [1, 0], [1, 1]])


def _image(pixels, size=8):
    img = np.zeros((size, size), dtype=np.float32)
    for r, c in pixels:
        img[r, c] = 1.0
    return img


def _pixels(mask):
    return {tuple(int(v) for v in rc) for rc in np.argwhere(mask)}


# --------------------------------------------------------------------------------------------------
# placement of the patterns


def test_linear_union_mask_is_exactly_the_eight_pattern_pixels():
    ds = xai_tris("linear", "white", n_samples=40)
    assert ds.ground_truth.dtype == bool and ds.ground_truth.shape == (40, 8, 8)
    for mask in ds.ground_truth:
        assert _pixels(mask) == T_PIXELS | L_PIXELS


@pytest.mark.parametrize("scenario", ["linear", "multiplicative"])
def test_patterns_hold_t_for_class_0_and_l_for_class_1(scenario):
    ds = xai_tris(scenario, "correlated", n_samples=40)
    t_img, l_img = _image(T_PIXELS), _image(L_PIXELS)
    for pattern, label in zip(ds.patterns, ds.y):
        np.testing.assert_array_equal(pattern, t_img if label == 0 else l_img)


def test_samples_are_shuffled_and_classes_exactly_balanced():
    ds = xai_tris("linear", "white", n_samples=1000)
    assert ds.y.dtype == np.int64 and ds.y.sum() == 500
    # shuffled: both halves contain both classes in roughly equal numbers
    assert 200 < ds.y[:500].sum() < 300


def test_rotations_cover_all_orientations_and_corner_positions():
    ds = xai_tris("translations_rotations", "white", n_samples=2000, seed=3)
    np.testing.assert_array_equal(ds.ground_truth.sum(axis=(1, 2)), np.full(2000, 4))
    np.testing.assert_array_equal(ds.ground_truth, ds.patterns != 0)
    shapes = {0: {}, 1: {}}
    corners = set()
    for pattern, label in zip(ds.patterns, ds.y):
        rows, cols = np.nonzero(pattern)
        crop = pattern[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1]
        key = (crop.shape, tuple(crop.astype(int).ravel()))
        shapes[int(label)][key] = shapes[int(label)].get(key, 0) + 1
        corners.add((int(rows.min()), int(cols.min()), crop.shape))
    for label, base in ((0, T), (1, L)):
        expected = {(np.rot90(base, k).shape, tuple(np.rot90(base, k).ravel())) for k in range(4)}
        assert set(shapes[label]) == expected
        # k ~ U{0..3}: about 250 of each orientation per class
        assert min(shapes[label].values()) > 150
    for shape in ((3, 2), (2, 3)):
        assert (0, 0, shape) in corners
        assert (8 - shape[0], 8 - shape[1], shape) in corners


def test_xor_signs_follow_the_class_and_quarters_are_exact():
    ds = xai_tris("xor", "white", n_samples=400)
    assert ds.y.sum() == 200
    union = np.broadcast_to(_image(T_PIXELS | L_PIXELS), (400, 8, 8))
    np.testing.assert_array_equal(np.abs(ds.patterns), union)
    s_t = ds.patterns[:, 1, 1]
    s_l = ds.patterns[:, 4, 5]
    np.testing.assert_array_equal(s_t == s_l, ds.y == 0)
    for signs in ((1, 1), (-1, -1), (1, -1), (-1, 1)):
        assert np.sum((s_t == signs[0]) & (s_l == signs[1])) == 100
    for mask in ds.ground_truth:
        assert _pixels(mask) == T_PIXELS | L_PIXELS


# --------------------------------------------------------------------------------------------------
# backgrounds and mixing


def _expected_images(ds):
    """Rebuild X from the documented formula, with the backgrounds redrawn from the same seed."""
    n = len(ds)
    b = _background(n, ds.image_size, ds.background, _rngs(ds.seed)[0]).astype(np.float64)
    p = ds.patterns.reshape(n, -1).astype(np.float64)
    a = ds.snr
    b_t = b / np.linalg.norm(b)
    if ds.scenario == "multiplicative":
        q = 1.0 - a * p
        x = q / np.linalg.norm(q) * b_t
    else:
        x = a * p / np.linalg.norm(p) + (1.0 - a) * b_t
    return (x / np.abs(x).max()).reshape(ds.X.shape)


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("background", BACKGROUNDS)
def test_images_follow_the_mixing_formula(scenario, background):
    ds = xai_tris(scenario, background, n_samples=200, seed=5)
    assert ds.snr == XAI_TRIS_SNR[(scenario, background, 8)]
    np.testing.assert_allclose(ds.X, _expected_images(ds), rtol=0, atol=2e-6)


def test_additive_mixing_gives_the_pattern_norm_share_alpha():
    # ||alpha P~||_F / ||(1 - alpha) B~||_F = alpha / (1 - alpha) before the max-abs rescale
    ds = xai_tris("linear", "white", n_samples=400, seed=2)
    n = len(ds)
    b = _background(n, 8, "white", _rngs(2)[0]).astype(np.float64)
    x = ds.X.reshape(n, -1).astype(np.float64)
    p = ds.patterns.reshape(n, -1).astype(np.float64)
    # x = c * (alpha P/|P| + (1 - alpha) B/|B|); solve for the two coefficients by least squares
    design = np.stack([p.ravel() / np.linalg.norm(p), b.ravel() / np.linalg.norm(b)], axis=1)
    coef, *_ = np.linalg.lstsq(design, x.ravel(), rcond=None)
    assert coef[0] / coef[1] == pytest.approx(0.18 / 0.82, rel=1e-5)


def test_high_snr_images_are_nearly_the_pattern():
    ds = xai_tris("linear", "white", n_samples=200, snr=0.999)
    corr = np.corrcoef(ds.X.ravel(), ds.patterns.ravel())[0, 1]
    assert corr > 0.99
    low = xai_tris("linear", "white", n_samples=200, snr=0.01)
    assert np.corrcoef(low.X.ravel(), low.patterns.ravel())[0, 1] < 0.5


def test_multiplicative_pattern_attenuates_the_background():
    ds = xai_tris("multiplicative", "white", n_samples=2000)
    x = np.abs(ds.X[:, 0])
    on = x[ds.patterns > 0].mean()
    off = x[ds.patterns == 0].mean()
    # |x| on the pattern is scaled by (1 - 0.7) relative to the rest (reference generator: 0.054 vs 0.182)
    assert on / off == pytest.approx(0.3, abs=0.03)


def _neighbour_corr(b):
    return np.corrcoef(b[:, :, :-1].ravel(), b[:, :, 1:].ravel())[0, 1], np.corrcoef(
        b[:, :-1, :].ravel(), b[:, 1:, :].ravel()
    )[0, 1]


def test_correlated_background_is_smooth_and_white_is_not():
    white = _background(2000, 8, "white", np.random.default_rng(0)).reshape(-1, 8, 8)
    corr = _background(2000, 8, "correlated", np.random.default_rng(0)).reshape(-1, 8, 8)
    assert white.std() == pytest.approx(0.5, rel=0.02)
    # reference generator: std 0.079 after smoothing with sigma 3 on 8x8
    assert corr.std() == pytest.approx(0.079, abs=0.01)
    assert all(abs(c) < 0.05 for c in _neighbour_corr(white))
    assert all(c > 0.5 for c in _neighbour_corr(corr))


@pytest.mark.parametrize("size, sigma", [(8, 3.0), (64, 10.0), (64, 1.5)])
def test_blur_equals_scipy_gaussian_filter_reflect(size, sigma):
    images = np.random.default_rng(0).standard_normal((3, size, size)).astype(np.float32)
    expected = gaussian_filter(images.astype(np.float64), (0, sigma, sigma), mode="reflect", truncate=4.0)
    _blur_stack(images, sigma)
    np.testing.assert_allclose(images, expected, rtol=0, atol=1e-6)


def test_images_lie_in_unit_interval_with_max_one():
    for scenario in SCENARIOS:
        ds = xai_tris(scenario, "correlated", n_samples=100)
        assert ds.X.dtype == np.float32 and ds.X.shape == (100, 1, 8, 8)
        assert np.abs(ds.X).max() == 1.0
        assert np.isfinite(ds.X).all()


# --------------------------------------------------------------------------------------------------
# determinism, splits, errors, 64x64


def test_same_seed_same_data_and_other_seed_differs():
    a = xai_tris("translations_rotations", "white", n_samples=100, seed=7)
    b = xai_tris("translations_rotations", "white", n_samples=100, seed=7)
    c = xai_tris("translations_rotations", "white", n_samples=100, seed=8)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.patterns, b.patterns)
    assert not np.array_equal(a.X, c.X)
    assert not np.array_equal(a.patterns, c.patterns)


def test_split_gives_contiguous_parts():
    ds = xai_tris("xor", "white", n_samples=1000)
    train, val, test = ds.split()
    assert (len(train), len(val), len(test)) == (800, 100, 100)
    assert isinstance(test, XAITrisDataset) and test.scenario == "xor" and test.snr == ds.snr
    np.testing.assert_array_equal(train.X, ds.X[:800])
    np.testing.assert_array_equal(val.y, ds.y[800:900])
    np.testing.assert_array_equal(test.ground_truth, ds.ground_truth[900:])
    a, b = ds.split((0.9, 0.1))
    assert (len(a), len(b)) == (900, 100)
    with pytest.raises(ValueError, match="fractions"):
        ds.split((0.5, 0.3))


@pytest.mark.parametrize(
    "kwargs, name, err",
    [
        ({"scenario": "nonlinear"}, "scenario", ValueError),
        ({"background": "imagenet"}, "background", ValueError),
        ({"image_size": 32}, "image_size", ValueError),
        ({"image_size": True}, "image_size", ValueError),
        ({"n_samples": 1}, "n_samples", ValueError),
        ({"n_samples": 0}, "n_samples", ValueError),
        ({"n_samples": 8.0}, "n_samples", TypeError),  # the wrong kind of value (a float count)
        ({"snr": 1.0}, "snr", ValueError),
        ({"snr": 0}, "snr", ValueError),
        ({"snr": "high"}, "snr", TypeError),
        ({"seed": -1}, "seed", ValueError),
        ({"seed": 1.5}, "seed", TypeError),
    ],
)
def test_bad_arguments_raise_errors_naming_them(kwargs, name, err):
    args = {"scenario": "linear", "background": "white", "n_samples": 8}
    args.update(kwargs)
    with pytest.raises(err, match=name) as info:
        xai_tris(**args)
    assert repr(list(kwargs.values())[0]) in str(info.value)


@pytest.mark.parametrize("n_samples", [50, 51])
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_any_n_samples_above_the_minimum_works(scenario, n_samples):
    # Regression: every n_samples not divisible by 4 was refused, for every scenario.
    ds = xai_tris(scenario, "white", n_samples=n_samples, seed=1)
    assert len(ds) == ds.X.shape[0] == ds.patterns.shape[0] == ds.ground_truth.shape[0] == n_samples
    n1 = int(ds.y.sum())
    assert (n_samples - n1, n1) == ((n_samples + 1) // 2, n_samples // 2)  # balanced within one
    if scenario == "translations_rotations":
        # Ground truth = the sample's own pattern, whose shape (T or L, any rotation) is its class.
        for p, m, label in zip(ds.patterns, ds.ground_truth, ds.y):
            np.testing.assert_array_equal(m, p > 0)
            shape = np.argwhere(m)
            tile = m[shape[:, 0].min() : shape[:, 0].max() + 1, shape[:, 1].min() : shape[:, 1].max() + 1]
            assert any(np.array_equal(tile, np.rot90(T if label == 0 else L, q)) for q in range(4))
        return
    for mask in ds.ground_truth:
        assert _pixels(mask) == T_PIXELS | L_PIXELS
    s_t, s_l = ds.patterns[:, 1, 1], ds.patterns[:, 4, 5]
    if scenario == "xor":
        np.testing.assert_array_equal(s_t == s_l, ds.y == 0)
        counts = [int(np.sum((s_t == a) & (s_l == b))) for a, b in ((1, 1), (-1, -1), (1, -1), (-1, 1))]
        assert sum(counts) == n_samples and max(counts) - min(counts) <= 1
    else:
        np.testing.assert_array_equal(s_t == 1, ds.y == 0)  # class 0 = T, class 1 = L
        np.testing.assert_array_equal(s_l == 1, ds.y == 1)


@pytest.mark.parametrize("scenario, minimum", [("linear", 2), ("multiplicative", 2), ("translations_rotations", 2), ("xor", 4)])
def test_smallest_n_samples(scenario, minimum):
    ds = xai_tris(scenario, "white", n_samples=minimum)
    assert sorted(ds.y.tolist()) == [0] * (minimum // 2) + [1] * (minimum // 2)
    with pytest.raises(ValueError, match=f"n_samples must be >= {minimum} for scenario '{scenario}'"):
        xai_tris(scenario, "white", n_samples=minimum - 1)


def test_seed_accepts_a_generator():
    a = xai_tris("translations_rotations", "white", n_samples=20, seed=np.random.default_rng(4))
    b = xai_tris("translations_rotations", "white", n_samples=20, seed=np.random.default_rng(4))
    np.testing.assert_array_equal(a.X, b.X)
    assert a.seed == "generator"
    assert xai_tris("linear", "white", n_samples=20, seed=None).seed is None


def test_allowed_values_are_listed_in_the_error():
    with pytest.raises(ValueError, match="translations_rotations"):
        xai_tris("rigid", "white")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_64x64_shapes_and_masks(scenario):
    ds = xai_tris(scenario, "correlated", image_size=64, n_samples=8)
    assert ds.X.shape == (8, 1, 64, 64) and ds.patterns.shape == ds.ground_truth.shape == (8, 64, 64)
    assert np.abs(ds.X).max() == 1.0
    sizes = ds.ground_truth.sum(axis=(1, 2))
    if scenario == "translations_rotations":
        # a 12x8 tetromino of four 4x4 cells (64 px), blurred: the mask is a bit larger
        assert np.all((sizes >= 64) & (sizes <= 64 + 2 * 100))
        np.testing.assert_array_equal(ds.ground_truth, ds.patterns >= 0.05)
    else:
        footprint = np.zeros((64, 64), dtype=bool)
        footprint[8:32, 8:16] = footprint[16:24, 16:24] = True  # T, cells of 8x8 at (8, 8)
        footprint[32:56, 40:48] = footprint[48:56, 48:56] = True  # L at (32, 40)
        for mask in ds.ground_truth:
            np.testing.assert_array_equal(mask, ds.ground_truth[0])
        assert np.all(ds.ground_truth[0][footprint])
        assert not np.any(ds.ground_truth[0] & ~binary_dilation(footprint, iterations=3))
    if scenario == "xor":
        same_sign = np.sign(ds.patterns[:, 12, 12]) == np.sign(ds.patterns[:, 36, 44])
        np.testing.assert_array_equal(same_sign, ds.y == 0)
