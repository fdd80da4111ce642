"""AGOP and the AGOP tracker against closed forms."""

import numpy as np
import pytest
import torch

import featurelens as fl


def linear(d=6, k=3):
    torch.manual_seed(1)
    lin = torch.nn.Linear(d, k).double()
    return lin, lin.weight.detach().numpy(), lin.bias.detach().numpy()


def test_agop_of_linear_model_is_w_wT():
    net, W, b = linear()
    X = torch.randn(40, 6, dtype=torch.float64)
    M = fl.learning.agop(net, X, target=2)
    np.testing.assert_allclose(M, np.outer(W[2], W[2]), atol=1e-12)
    # target="all" sums over outputs: J^T J = W^T W
    np.testing.assert_allclose(fl.learning.agop(net, X, target="all"), W.T @ W, atol=1e-12)
    # target=None uses each sample's predicted class
    pred = (X.numpy() @ W.T + b).argmax(1)
    expected = np.mean([np.outer(W[c], W[c]) for c in pred], axis=0)
    np.testing.assert_allclose(fl.learning.agop(net, X), expected, atol=1e-12)


def test_agop_of_one_hidden_layer_net_matches_closed_form():
    torch.manual_seed(2)
    hidden = torch.nn.Linear(5, 7).double()
    out = torch.nn.Linear(7, 1).double()
    net = torch.nn.Sequential(hidden, torch.nn.Tanh(), out)
    X = np.random.default_rng(0).normal(size=(30, 5))
    B, c = hidden.weight.detach().numpy(), hidden.bias.detach().numpy()
    a = out.weight.detach().numpy()[0]
    # f(x) = a . tanh(Bx + c) + b0  =>  grad f(x) = B^T (a * (1 - tanh(Bx + c)^2))
    G = (a * (1 - np.tanh(X @ B.T + c) ** 2)) @ B
    expected = G.T @ G / len(X)
    np.testing.assert_allclose(fl.learning.agop(net, X, batch_size=8), expected, atol=1e-12)


def test_agop_diag_equals_diagonal_of_full(small_cnn):
    X = torch.randn(37, 1, 8, 8)
    full = fl.learning.agop(small_cnn, X, target="all", batch_size=10)
    diag = fl.learning.agop(small_cnn, X, target="all", batch_size=10, diag=True)
    assert full.shape == (64, 64) and diag.shape == (64,)
    assert full.dtype == np.float64
    np.testing.assert_allclose(diag, np.diag(full), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(full, full.T, atol=1e-14)
    assert np.linalg.eigvalsh(full).min() > -1e-10


def test_agop_per_sample_targets_match_per_sample_loop(small_cnn):
    X = torch.randn(12, 1, 8, 8)
    t = np.arange(12) % 2
    M = fl.learning.agop(small_cnn, X, target=t, batch_size=5)
    G = []
    for i in range(12):
        xi = X[i : i + 1].clone().requires_grad_(True)
        small_cnn(xi)[0, t[i]].backward()
        G.append(xi.grad.flatten().double().numpy())
    G = np.array(G)
    np.testing.assert_allclose(M, G.T @ G / 12, rtol=1e-5, atol=1e-9)


def test_tracker_over_batches_equals_agop_on_union(small_cnn):
    batches = [torch.randn(n, 1, 8, 8) for n in (5, 11, 3)]
    small_cnn.train()
    tracker = fl.learning.AGOPTracker(small_cnn)
    for xb in batches:
        tracker.update(xb)
    union = torch.cat(batches)
    np.testing.assert_allclose(tracker.agop(), fl.learning.agop(small_cnn, union), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(tracker.diag(), fl.learning.agop(small_cnn, union, diag=True), rtol=1e-10, atol=1e-14)
    assert tracker.n_samples == 19
    assert small_cnn.training  # mode restored
    assert all(p.grad is None for p in small_cnn.parameters())  # training gradients untouched
    tracker.reset()
    with pytest.raises(ValueError, match="no samples"):
        tracker.diag()
    tracker.update(batches[0], target=1)
    np.testing.assert_allclose(tracker.agop(), fl.learning.agop(small_cnn, batches[0], target=1), rtol=1e-10, atol=1e-14)


def test_tracker_keeps_only_diagonal_when_asked(small_cnn):
    tracker = fl.learning.AGOPTracker(small_cnn, full=False)
    tracker.update(torch.randn(4, 1, 8, 8))
    assert tracker.diag().shape == (64,)
    with pytest.raises(ValueError, match="diagonal"):
        tracker.agop()


def test_agop_rejects_bad_target_and_numpy_callable():
    net, _, _ = linear()
    X = torch.randn(4, 6, dtype=torch.float64)
    with pytest.raises(ValueError, match="'all'"):
        fl.learning.agop(net, X, target="every")
    with pytest.raises(ValueError, match="out of range"):
        fl.learning.agop(net, X, target=3)
    with pytest.raises(TypeError, match="gradients"):
        fl.learning.agop(lambda a: a.sum(1), X.numpy())


# -- a Model's batch size is read, never changed ----------------------------------------------


def _counted(net):
    sizes = []
    net.register_forward_pre_hook(lambda m, args: sizes.append(args[0].shape[0]))
    return sizes


def test_tracker_keeps_the_models_batch_size():
    net, W, _ = linear()
    sizes = _counted(net)
    m = fl.Model(net, batch_size=8)
    tracker = fl.learning.AGOPTracker(m)
    assert m.batch_size == 8  # was reset to 256
    X = torch.randn(30, 6, dtype=torch.float64)
    tracker.update(X, target=1)
    assert max(sizes) <= 8 and sum(s for s in sizes if s > 1) == 30
    np.testing.assert_allclose(tracker.agop(), np.outer(W[1], W[1]), atol=1e-12)
    sizes.clear()
    fl.learning.AGOPTracker(m, batch_size=5).update(X, target=1)
    assert max(sizes) <= 5 and m.batch_size == 8


def test_agop_follows_the_models_batch_size_and_leaves_it_alone():
    net, W, _ = linear()
    sizes = _counted(net)
    m = fl.Model(net, batch_size=7)
    X = torch.randn(30, 6, dtype=torch.float64)
    M = fl.learning.agop(m, X, target="all")
    assert max(sizes) <= 7  # was 256 rows at once
    np.testing.assert_allclose(M, W.T @ W, atol=1e-12)
    sizes.clear()
    fl.learning.agop(m, X, target="all", batch_size=4)
    assert max(sizes) <= 4 and m.batch_size == 7
    assert m.calls == 60  # the rows of the call with batch_size=4 are counted by m too
