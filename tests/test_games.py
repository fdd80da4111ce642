"""Tests for featurelens.games: the Game base, Game.from_function and MaskedModel."""

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.games import Game, MaskedModel


def _count_fn(masks):
    return masks.sum(axis=1).astype(float)


# -- Game.from_function --------------------------------------------------------------------------
def test_from_function_values_and_calls():
    g = Game.from_function(_count_fn, 5)
    masks = np.array([[1, 0, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]], dtype=bool)
    v = g(masks)
    assert v.dtype == np.float64
    np.testing.assert_array_equal(v, [2.0, 5.0, 0.0])
    assert g.calls == 3
    g(masks[:2])
    assert g.calls == 5
    assert g.grand() == 5.0 and g.empty() == 0.0
    assert g.calls == 7
    assert g.n_players == 5


def test_executor_chunks_respect_batch_size():
    sizes = []

    def fn(masks):
        sizes.append(masks.shape[0])
        return masks[:, 0].astype(float)

    g = Game.from_function(fn, 3, batch_size=4)
    masks = np.random.default_rng(0).integers(0, 2, size=(10, 3)).astype(bool)
    np.testing.assert_array_equal(g(masks), masks[:, 0].astype(float))
    assert sizes == [4, 4, 2]


def test_custom_executor_is_the_one_hook():
    seen = []

    def reversed_executor(evaluate_chunk, masks, chunk_size):
        seen.append(chunk_size)
        # Evaluate chunks out of order, return in row order: the protocol allows it.
        bounds = list(range(0, masks.shape[0], chunk_size))[::-1]
        out = np.empty(masks.shape[0])
        for b in bounds:
            out[b : b + chunk_size] = evaluate_chunk(masks[b : b + chunk_size])
        return out

    g = Game.from_function(_count_fn, 4, batch_size=3, executor=reversed_executor)
    masks = np.eye(4, dtype=bool)[[0, 1, 2, 3, 0]] | np.array([[0, 0, 0, 1]], dtype=bool)
    np.testing.assert_array_equal(g(masks), [2, 2, 2, 1, 2])
    assert seen == [3] and g.calls == 5


def test_integer_torch_and_single_row_masks():
    g = Game.from_function(lambda m: m @ np.arange(1.0, 4.0), 3)
    np.testing.assert_array_equal(g(np.array([[1, 0, 1]])), [4.0])
    np.testing.assert_array_equal(g(torch.tensor([[False, True, True]])), [5.0])
    v = g(np.array([True, True, True]))  # 1-D: one row, result shape (1,)
    assert v.shape == (1,) and v[0] == 6.0
    assert g.calls == 3


def test_mask_validation_errors():
    g = Game.from_function(_count_fn, 4)
    with pytest.raises(ValueError, match=r"masks has shape \(2, 3\).*\(q, 4\)"):
        g(np.zeros((2, 3), dtype=bool))
    with pytest.raises(TypeError, match="masks has dtype float64"):
        g(np.zeros((2, 4)))
    with pytest.raises(ValueError, match=r"masks has shape \(2, 2, 4\)"):
        g(np.zeros((2, 2, 4), dtype=bool))
    with pytest.raises(ValueError, match="masks holds the integer 2"):
        g(np.full((1, 4), 2))
    assert g.calls == 0


def test_output_validation_errors():
    short = Game.from_function(lambda m: np.zeros(m.shape[0] - 1), 3)
    with pytest.raises(ValueError, match=r"one value per mask row, shape \(2,\); got shape \(1,\)"):
        short(np.ones((2, 3), dtype=bool))
    nan = Game.from_function(lambda m: np.where(m[:, 0], np.nan, 1.0), 3)
    with pytest.raises(ValueError, match=r"NaN or inf for 1 of 2 mask rows \(first rows \[1\]\)"):
        nan(np.array([[0, 1, 1], [1, 0, 0]], dtype=bool))
    assert short.calls == 0 and nan.calls == 0
    # One validator (featurelens._validation.check_int): ValueError for a bad int, TypeError for a non-int.
    with pytest.raises(ValueError, match="n_players must be an int >= 1; got 0"):
        Game.from_function(_count_fn, 0)
    with pytest.raises(TypeError, match="n_players must be an int >= 1"):
        Game.from_function(_count_fn, 2.5)


# -- MaskedModel ---------------------------------------------------------------------------------
@pytest.fixture
def linear():
    torch.manual_seed(0)
    lin = torch.nn.Linear(5, 1).double()
    w = lin.weight.detach().numpy()[0].copy()
    b = float(lin.bias.detach().numpy()[0])
    return lin, w, b


@pytest.fixture
def masks5():
    return np.random.default_rng(1).integers(0, 2, size=(12, 5)).astype(bool)


def test_masked_linear_baselines(linear, masks5):
    lin, w, b = linear
    x = np.array([1.0, -2.0, 0.5, 3.0, -1.5])
    g = MaskedModel(lin, x)
    assert g.n_players == 5 and g.target == 0
    np.testing.assert_allclose(g(masks5), b + (masks5 * (w * x)).sum(1), rtol=1e-12, atol=1e-12)
    g = MaskedModel(lin, x, baseline=0.7)
    np.testing.assert_allclose(g(masks5), b + (np.where(masks5, x, 0.7) * w).sum(1), rtol=1e-12, atol=1e-12)
    z = np.array([0.3, -0.1, 2.0, 0.0, 1.0])
    g = MaskedModel(lin, x[None], baseline=z)  # leading batch axis of size 1
    assert g.input_shape == (5,)
    np.testing.assert_allclose(g(masks5), b + (np.where(masks5, x, z) * w).sum(1), rtol=1e-12, atol=1e-12)
    assert g.calls == 12 and g.model_calls == 12


def test_masked_linear_background(linear, masks5):
    lin, w, b = linear
    x = np.array([1.0, -2.0, 0.5, 3.0, -1.5])
    bg = np.random.default_rng(2).normal(size=(7, 5))
    g = MaskedModel(lin, x, background=bg)
    expected = b + (masks5 * w * x).sum(1) + (~masks5 * w * bg.mean(0)).sum(1)
    np.testing.assert_allclose(g(masks5), expected, rtol=1e-12, atol=1e-12)
    assert g.calls == 12 and g.model_calls == 12 * 7


def test_masked_groups_on_image():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3, padding=1), torch.nn.Tanh(), torch.nn.Flatten(), torch.nn.Linear(32, 3)).double()
    x = torch.randn(1, 4, 4, dtype=torch.float64)
    groups = np.zeros((1, 4, 4), dtype=int)
    groups[0, :2, 2:] = 1
    groups[0, 2:, :2] = 2
    groups[0, 2:, 2:] = 3
    g = MaskedModel(net, x, groups=groups, baseline=-0.5, target=2)
    assert g.n_players == 4 and g.input_shape == (1, 4, 4)
    masks = np.array([[1, 0, 0, 1], [0, 0, 0, 0], [0, 1, 1, 0]], dtype=bool)
    with torch.no_grad():
        hand = []
        for m in masks:
            keep = torch.from_numpy(m[groups])
            hand.append(net(torch.where(keep, x, torch.tensor(-0.5, dtype=torch.float64))[None])[0, 2].item())
    np.testing.assert_allclose(g(masks), hand, rtol=1e-12)


def test_masked_sklearn_predict_proba_and_target():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    clf = LogisticRegression().fit(X, y)
    x = X[3]
    masks = rng.integers(0, 2, size=(9, 4)).astype(bool)
    g = MaskedModel(clf.predict_proba, x, baseline=0.25, target=1)
    hand = clf.predict_proba(np.where(masks, x, 0.25).astype(np.float32))[:, 1]
    np.testing.assert_allclose(g(masks), hand, rtol=1e-5)
    g0 = MaskedModel(clf.predict_proba, x)
    assert g0.target == int(clf.predict(x[None])[0])
    bg = X[10:15]
    gb = MaskedModel(clf.predict_proba, x[None], background=bg, target=0)
    hand = np.array([clf.predict_proba(np.where(m, x, bg).astype(np.float32))[:, 0].mean() for m in masks])
    np.testing.assert_allclose(gb(masks), hand, rtol=1e-5)


def test_target_none_picks_predicted_class(mlp):
    x = torch.linspace(-1, 1, 6, dtype=torch.float64)
    g = MaskedModel(mlp, x)
    with torch.no_grad():
        out = mlp(x[None])[0]
    assert g.target == int(out.argmax())
    assert g.grand() == pytest.approx(float(out.max()), rel=1e-12)


def test_masked_chunking_respects_batch_size(linear):
    lin, w, b = linear
    rows = []
    lin.register_forward_hook(lambda mod, inp, out: rows.append(inp[0].shape[0]))
    x = np.arange(5.0)
    masks = np.random.default_rng(3).integers(0, 2, size=(23, 5)).astype(bool)
    g = MaskedModel(lin, x, batch_size=8)
    rows.clear()
    g(masks)
    assert max(rows) <= 8 and sum(rows) == 23 and g.model_calls == 23
    bg = np.random.default_rng(4).normal(size=(3, 5))
    g = MaskedModel(lin, x, background=bg, batch_size=8)
    assert g.chunk_size == 2  # 2 masks x 3 rows = 6 <= 8
    rows.clear()
    v = g(masks)
    assert max(rows) <= 8 and sum(rows) == 69 and g.model_calls == 69 and g.calls == 23
    expected = b + (masks * w * x).sum(1) + (~masks * w * bg.mean(0)).sum(1)
    np.testing.assert_allclose(v, expected, rtol=1e-12, atol=1e-12)
    # More background rows than batch_size: one mask per chunk, its rows still split by the Model.
    g = MaskedModel(lin, x, background=np.random.default_rng(5).normal(size=(11, 5)), batch_size=8)
    rows.clear()
    g(masks[:2])
    assert max(rows) <= 8 and sum(rows) == 22


def test_masked_model_errors(linear):
    lin, _, _ = linear
    x = np.ones(5)
    with pytest.raises(ValueError, match=r"groups must have the shape of x, \(5,\); got shape \(4,\)"):
        MaskedModel(lin, x, groups=np.arange(4))
    with pytest.raises(ValueError, match=r"labels \[1, 3\] are missing"):
        MaskedModel(lin, x, groups=np.array([0, 2, 2, 4, 0]))
    with pytest.raises(TypeError, match="groups must be an int array"):
        MaskedModel(lin, x, groups=np.zeros(5))
    with pytest.raises(ValueError, match="either baseline .* or background"):
        MaskedModel(lin, x, baseline=0.0, background=np.zeros((2, 5)))
    with pytest.raises(ValueError, match="x contains NaN"):
        MaskedModel(lin, np.array([1.0, np.nan, 0, 0, 0]))
    # The one baseline resolver (featurelens._validation.resolve_baseline) words these errors.
    with pytest.raises(ValueError, match="baseline must be a finite number"):
        MaskedModel(lin, x, baseline=np.inf)
    with pytest.raises(ValueError, match="baseline contains NaN"):
        MaskedModel(lin, x, baseline=np.full(5, np.nan))
    with pytest.raises(ValueError, match="background contains NaN"):
        MaskedModel(lin, x, background=np.full((2, 5), np.nan))
    with pytest.raises(ValueError, match=r"baseline must be a scalar, shaped like one input \(5,\).*got shape \(3,\)"):
        MaskedModel(lin, x, baseline=np.zeros(3))
    with pytest.raises(ValueError, match="target 3 is out of range"):
        MaskedModel(lin, x, target=3)


def test_games_is_public():
    assert fl.games.MaskedModel is MaskedModel and "games" in fl.__all__
