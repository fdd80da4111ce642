"""The Model adapter: chunking, targets, output checks, eval mode."""

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens._batching import chunks, default_rows, expansion_index


def test_chunks_cover_range_in_bounded_pieces():
    pieces = list(chunks(10, 4))
    assert [(s.start, s.stop) for s in pieces] == [(0, 4), (4, 8), (8, 10)]
    copy, sample = expansion_index(slice(5, 9), 3)
    assert copy.tolist() == [1, 2, 2, 2] and sample.tolist() == [2, 0, 1, 2]
    assert default_rows(64) == 1024 and default_rows(3 * 32 * 32) == 170 and default_rows(10**7) == 1


def test_predict_in_chunks_equals_one_pass():
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 2).double()
    x = torch.randn(11, 3, dtype=torch.float64)
    sizes = []
    net.register_forward_hook(lambda m, i, o: sizes.append(i[0].shape[0]))
    out = fl.Model(net, batch_size=4).predict(x)
    assert sizes == [4, 4, 3]
    np.testing.assert_allclose(out.numpy(), net(x).detach().numpy())


def test_outputs_of_shape_batch_become_one_column_and_bad_shapes_fail():
    m = fl.Model(lambda a: a.sum(axis=1))
    out = m.predict(np.ones((3, 4), np.float32))
    assert out.shape == (3, 1) and out[0, 0].item() == 4.0
    bad = fl.Model(lambda a: np.ones((len(a), 2, 2)))
    with pytest.raises(ValueError, match=r"outputs of shape \(batch,\) or \(batch, classes\); got output shape \(3, 2, 2\)"):
        bad.predict(np.ones((3, 4), np.float32))
    wrong_rows = fl.Model(lambda a: np.ones(2))
    with pytest.raises(ValueError, match="got output shape"):
        wrong_rows.predict(np.ones((3, 4), np.float32))


def test_model_arguments_are_checked():
    with pytest.raises(TypeError, match="model must be a torch.nn.Module or a callable; got int"):
        fl.Model(3)
    with pytest.raises(ValueError, match="accepts must be 'numpy' or 'torch'"):
        fl.Model(lambda a: a, accepts="jax")
    m = fl.Model(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="already a featurelens Model"):
        fl.Model(m)
    assert fl.Model.wrap(m) is m


def test_inputs_follow_the_model_dtype_and_device():
    net = torch.nn.Linear(3, 2).double()
    m = fl.Model(net)
    t = m.to_tensor(np.ones((2, 3), np.float32))
    assert t.dtype == torch.float64 and t.device == next(net.parameters()).device
