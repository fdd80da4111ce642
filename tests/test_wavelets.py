"""The differentiable DWT (featurelens._wavelets) against PyWavelets and linear-algebra identities."""

import sys
import warnings

import numpy as np
import pytest
import torch

from featurelens import _wavelets as wt

# (batch shape, spatial shape): even, odd and unequal sizes in 1-D, 2-D and 3-D.
SHAPES = [
    ((2, 3), (16,)),
    ((2, 1), (19,)),
    ((1, 2), (16, 12)),
    ((2, 1), (9, 14)),
    ((1, 1), (8, 6, 10)),
    ((1, 1), (5, 7, 9)),
]


def _random(shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape))


def _assert_same_as_pywt(mine, ref, ndim):
    """Compare a pyramid with pywt.wavedecn's (keys per axis, coarse to fine)."""
    np.testing.assert_allclose(mine[0], ref[0], atol=1e-12)
    assert len(mine) == len(ref)
    for level in range(1, len(ref)):
        for b, key in enumerate(wt._detail_keys(ndim)):
            got = np.take(mine[level], b, axis=-ndim - 1)
            np.testing.assert_allclose(got, ref[level][key], atol=1e-12, err_msg=f"level {level} band {key}")


@pytest.mark.parametrize("wavelet", ["haar", "db2", "sym4", "bior2.2"])
@pytest.mark.parametrize("lead,spatial", SHAPES)
def test_wavedec_equals_pywt_wavedecn_periodization(wavelet, lead, spatial):
    pywt = pytest.importorskip("pywt")
    x = _random(lead + spatial)
    ndim = len(spatial)
    levels = 2
    mine = [c.numpy() for c in wt.wavedec(x, wavelet, levels, ndim)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # pywt warns when levels > dwt_max_level
        ref = pywt.wavedecn(x.numpy(), wavelet, mode="periodization", level=levels, axes=tuple(range(-ndim, 0)))
    _assert_same_as_pywt(mine, ref, ndim)
    # The packed array is pywt.coeffs_to_array's layout, coefficient by coefficient.
    packed, _ = pywt.coeffs_to_array(ref, axes=tuple(range(-ndim, 0)))
    np.testing.assert_allclose(wt.pack(wt.wavedec(x, wavelet, levels, ndim), ndim).numpy(), packed, atol=1e-12)
    assert packed.shape[-ndim:] == wt.packed_shape(spatial, levels)


def test_wavedec_and_wavedec2_agree_with_pywt_1d_2d_functions():
    pywt = pytest.importorskip("pywt")
    x1 = _random((3, 32))
    ref1 = pywt.wavedec(x1.numpy(), "db2", mode="periodization", level=3)
    mine1 = wt.wavedec(x1, "db2", 3, ndim=1)
    for got, want in zip(mine1, ref1):
        np.testing.assert_allclose(got.squeeze(-2).numpy() if got.ndim == 3 else got.numpy(), want, atol=1e-12)
    x2 = _random((2, 1, 16, 24), seed=1)
    ref2 = pywt.wavedec2(x2.numpy(), "haar", mode="periodization", level=3)
    mine2 = wt.wavedec(x2, "haar", 3)
    np.testing.assert_allclose(mine2[0].numpy(), ref2[0], atol=1e-12)
    for got, (ch, cv, cd) in zip(mine2[1:], ref2[1:]):
        for b, want in enumerate((cv, ch, cd)):  # our bands in wavedecn key order: ad, da, dd
            np.testing.assert_allclose(got[:, :, b].numpy(), want, atol=1e-12)
    # and pywt rebuilds our coefficients into the signal
    back = pywt.waverec2([c.numpy() if i == 0 else tuple(c[:, :, b].numpy() for b in (1, 0, 2))
                          for i, c in enumerate(mine2)], "haar", mode="periodization")
    np.testing.assert_allclose(back, x2.numpy(), atol=1e-12)


@pytest.mark.parametrize("wavelet", ["haar", "db2", "bior2.2"])
@pytest.mark.parametrize("lead,spatial", SHAPES)
def test_waverec_inverts_wavedec_for_every_size(wavelet, lead, spatial):
    if wavelet != "haar":
        pytest.importorskip("pywt")
    x = _random(lead + spatial, seed=2)
    coeffs = wt.wavedec(x, wavelet, 2, len(spatial))
    np.testing.assert_allclose(wt.waverec(coeffs, wavelet, spatial, len(spatial)).numpy(), x.numpy(), atol=1e-12)


@pytest.mark.parametrize("wavelet", ["haar", "db2", "sym4"])
@pytest.mark.parametrize("spatial", [(32,), (16, 8), (8, 8, 16)])
def test_orthogonal_transform_is_an_isometry_with_dwt_of_idwt_identity(wavelet, spatial):
    if wavelet != "haar":
        pytest.importorskip("pywt")
    ndim = len(spatial)
    x = _random((2, 1) + spatial, seed=3)
    coeffs = wt.wavedec(x, wavelet, 2, ndim)
    # Parseval: the periodized orthogonal DWT preserves the energy.
    energy = sum(float(c.square().sum()) for c in coeffs)
    assert energy == pytest.approx(float(x.square().sum()), rel=1e-10)
    # DWT(IDWT(c)) == c for arbitrary coefficients when the sizes are divisible by 2**levels.
    random_coeffs = [_random(tuple(c.shape), seed=10 + i) for i, c in enumerate(coeffs)]
    again = wt.wavedec(wt.waverec(random_coeffs, wavelet, spatial, ndim), wavelet, 2, ndim)
    for a, b in zip(again, random_coeffs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-10)


@pytest.mark.parametrize("wavelet", ["haar", "db2", "bior2.2"])
@pytest.mark.parametrize("spatial", [(12,), (7,), (6, 5), (4, 3, 4)])
def test_synthesis_adjoint_is_the_transpose_of_the_explicit_synthesis_matrix(wavelet, spatial):
    if wavelet != "haar":
        pytest.importorskip("pywt")
    ndim = len(spatial)
    levels = 1 if min(spatial) < 6 else 2
    template = wt.wavedec(torch.zeros((1, 1) + spatial, dtype=torch.float64), wavelet, levels, ndim)
    sizes = [c.numel() for c in template]
    # Brute force: the synthesis matrix column by column (waverec of each unit coefficient).
    columns = []
    for i in range(sum(sizes)):
        unit = torch.zeros(sum(sizes), dtype=torch.float64)
        unit[i] = 1.0
        parts = [p.reshape(c.shape) for p, c in zip(torch.split(unit, sizes), template)]
        columns.append(wt.waverec(parts, wavelet, spatial, ndim).reshape(-1))
    S = torch.stack(columns, dim=1)
    g = _random((1, 1) + spatial, seed=4)
    want = (S.T @ g.reshape(-1)).numpy()
    for fn in (wt.synthesis_adjoint, wt.synthesis_adjoint_autograd):
        adjoint = torch.cat([a.reshape(-1) for a in fn(g, wavelet, levels, ndim)])
        np.testing.assert_allclose(adjoint.numpy(), want, atol=1e-12, err_msg=fn.__name__)


@pytest.mark.parametrize("spatial", [(16,), (8, 16), (8, 8, 8)])
@pytest.mark.parametrize("wavelet", ["haar", "db2"])
def test_synthesis_adjoint_equals_forward_dwt_for_orthogonal_wavelets(spatial, wavelet):
    if wavelet != "haar":
        pytest.importorskip("pywt")
    g = _random((2, 2) + spatial, seed=5)
    ndim = len(spatial)
    for a, b in zip(wt.synthesis_adjoint(g, wavelet, 2, ndim), wt.wavedec(g, wavelet, 2, ndim)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-12)


@pytest.mark.parametrize("lead,spatial", SHAPES)
def test_unpack_inverts_pack(lead, spatial):
    ndim = len(spatial)
    coeffs = wt.wavedec(_random(lead + spatial, seed=6), "haar", 2, ndim)
    packed = wt.pack(coeffs, ndim)
    assert tuple(packed.shape[-ndim:]) == wt.packed_shape(spatial, 2)
    for a, b in zip(wt.unpack(packed, spatial, 2, ndim), coeffs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_scale_maps_of_a_constant_gradient_put_it_in_the_haar_approximation():
    # A constant pixel gradient g0 has only an approximation coefficient per 2**J block,
    # g0 * 2**(J d / 2); the normalised maps give back |g0| there and zero detail maps.
    g0 = -0.7
    g = torch.full((1, 1, 16, 8), g0, dtype=torch.float64)
    pyramid = wt.synthesis_adjoint(g, "haar", 3, 2)
    np.testing.assert_allclose(pyramid[0].numpy(), g0 * 2.0**3, atol=1e-12)
    maps = wt.scale_maps(pyramid, 2, (16, 8))
    assert maps.shape == (1, 1, 4, 16, 8)
    np.testing.assert_allclose(maps[0, 0, :3].numpy(), 0.0, atol=1e-12)
    np.testing.assert_allclose(maps[0, 0, 3].numpy(), abs(g0), atol=1e-12)


def test_max_level_is_where_the_approximation_is_one_coefficient():
    pywt = pytest.importorskip("pywt")
    for size in (1, 2, 5, 8, 31, 64, 100):
        top = wt.max_level((size, 1000))
        assert wt.level_shapes((size,), top)[-1] == (1,)
        assert top == 0 or wt.level_shapes((size,), top - 1)[-1] != (1,)
        if size & (size - 1) == 0:  # powers of two: pywt's Haar maximum
            assert top == pywt.dwt_max_level(size, 2)


def test_hard_coded_haar_equals_pywt_haar():
    pywt = pytest.importorskip("pywt")
    w = pywt.Wavelet("haar")
    h = wt.get_wavelet("haar")
    for name in ("dec_lo", "dec_hi", "rec_lo", "rec_hi"):
        np.testing.assert_allclose(getattr(h, name), getattr(w, name), atol=1e-15)
    assert wt.get_wavelet("db1") is h


def test_unknown_or_continuous_wavelet_is_a_clear_error():
    pytest.importorskip("pywt")
    with pytest.raises(ValueError, match=r"discrete wavelet .* got 'db99'"):
        wt.get_wavelet("db99")
    with pytest.raises(ValueError, match=r"got 'morl'"):
        wt.get_wavelet("morl")
    with pytest.raises(ValueError, match=r"Did you mean 'sym4'"):
        wt.get_wavelet("sym44")
    with pytest.raises(TypeError, match="wavelet must be a wavelet name"):
        wt.get_wavelet(3)


def test_missing_pywavelets_says_how_to_install_and_haar_still_works(monkeypatch):
    monkeypatch.setitem(sys.modules, "pywt", None)  # makes `import pywt` raise ImportError
    with pytest.raises(ImportError, match=r"pip install featurelens\[wavelets\]"):
        wt.get_wavelet("db2")
    x = _random((1, 1, 8, 8))
    np.testing.assert_allclose(wt.waverec(wt.wavedec(x, "haar", 3), "haar", (8, 8)).numpy(), x.numpy(), atol=1e-12)


def test_transform_is_differentiable_end_to_end():
    x = _random((1, 1, 8, 8), seed=7).requires_grad_(True)
    coeffs = wt.wavedec(x, "haar", 2)
    loss = sum(c.square().sum() for c in coeffs)
    (grad,) = torch.autograd.grad(loss, x)
    # ||Wx||^2 = ||x||^2 for the orthogonal Haar transform, so the gradient is 2x.
    np.testing.assert_allclose(grad.numpy(), 2 * x.detach().numpy(), atol=1e-12)
