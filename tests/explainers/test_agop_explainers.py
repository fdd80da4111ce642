"""AGOP-Local, AGOP-Global and AGOP-Weighted against their definitions."""

import numpy as np
import pytest
import torch

import featurelens as fl


def test_agop_weighted_is_gradient_times_sqrt_normalised_diagonal(small_cnn):
    X_train = torch.randn(40, 1, 8, 8)
    x = torch.randn(5, 1, 8, 8)
    M = fl.learning.agop(small_cnn, X_train)
    grad = fl.explainer("saliency", small_cnn).explain(x, target=1).values
    weight = np.sqrt(np.diag(M) / np.diag(M).max()).reshape(1, 1, 8, 8)
    full = fl.explainer("agop_weighted", small_cnn, agop=M).explain(x, target=1)
    np.testing.assert_allclose(full.values, grad * weight, rtol=1e-5, atol=1e-8)
    diag = fl.explainer("agop_weighted", small_cnn, agop=np.diag(M)).explain(x, target=1)
    np.testing.assert_allclose(diag.values, full.values, rtol=1e-6)
    from_data = fl.explainer("agop_weighted", small_cnn, data=X_train).explain(x, target=1)
    np.testing.assert_allclose(from_data.values, full.values, rtol=1e-5, atol=1e-8)
    assert from_data.params["agop_source"] == "data" and from_data.params["agop_model_calls"] == 40


def test_agop_global_is_the_diagonal_for_every_sample(small_cnn):
    X_train = torch.randn(30, 1, 8, 8)
    d = fl.learning.agop(small_cnn, X_train, diag=True)
    e = fl.explainer("agop_global", small_cnn, data=X_train).explain(torch.randn(3, 1, 8, 8))
    for i in range(3):
        np.testing.assert_allclose(e.values[i, 0], d.reshape(8, 8), rtol=1e-6)
    # With a given AGOP it needs no gradients: a numpy callable works.
    e = fl.explainer("agop_global", lambda a: a.reshape(len(a), -1)[:, :2], agop=d).explain(np.ones((2, 1, 8, 8), np.float32))
    np.testing.assert_allclose(e.values[1, 0], d.reshape(8, 8), rtol=1e-6)


def test_agop_local_is_the_gradient(small_cnn):
    x = torch.randn(4, 1, 8, 8)
    a = fl.explainer("agop_local", small_cnn).explain(x, target=0).values
    b = fl.explainer("saliency", small_cnn).explain(x, target=0).values
    np.testing.assert_array_equal(a, b)


def test_agop_explainer_errors(small_cnn):
    with pytest.raises(ValueError, match="agop= .* or data="):
        fl.explainer("agop_weighted", small_cnn)
    with pytest.raises(ValueError, match="dimension 10"):
        fl.explainer("agop_weighted", small_cnn, agop=np.ones(10)).explain(torch.randn(2, 1, 8, 8))
    with pytest.raises(ValueError, match="not both"):
        fl.explainer("agop_global", small_cnn, agop=np.ones(64), data=torch.randn(3, 1, 8, 8))
    with pytest.raises(ValueError, match="negative"):
        fl.explainer("agop_weighted", small_cnn, agop=-np.ones(64))


def test_agop_from_data_follows_the_models_batch_size(small_cnn):
    sizes = []
    small_cnn.register_forward_pre_hook(lambda m, args: sizes.append(args[0].shape[0]))
    m = fl.Model(small_cnn, batch_size=6)
    X = torch.randn(40, 1, 8, 8)
    ex = fl.explainer("agop_global", m, data=X)
    assert max(sizes) <= 6  # the AGOP pass used 256 rows whatever the Model said
    np.testing.assert_allclose(ex.diag, np.diag(fl.learning.agop(small_cnn, X)), rtol=1e-5, atol=1e-12)
    assert ex.params()["agop_model_calls"] == 40 == m.calls
