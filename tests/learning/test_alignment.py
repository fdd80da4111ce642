"""Jacobian alignment and the GrokAlign penalty against closed forms and brute force."""

import numpy as np
import pytest
import torch

from featurelens.learning.alignment import (
    GrokAlign,
    JacobianAlignment,
    jacobian_alignment,
)
from featurelens.models import Model


def mlp(d=4, h=6, c=3, bias=True, act=torch.nn.Tanh, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(d, h, bias=bias), act(), torch.nn.Linear(h, c, bias=bias)
    ).double()


def brute_jacobians(net, X, create_graph=False):
    """(n, C, d) Jacobians, one sample at a time with torch.autograd.functional.jacobian
    (``create_graph``: differentiable with respect to the parameters)."""
    return torch.stack([
        torch.autograd.functional.jacobian(lambda z: net(z[None])[0], x, create_graph=create_graph) for x in X
    ])


def val(t):
    """A scalar tensor's value, detached (float() of a tensor in a graph warns)."""
    return t.detach().item()


# ------------------------------------------------------------------------------------------------
# jacobian_alignment


def test_linear_model_matches_closed_form():
    torch.manual_seed(1)
    lin = torch.nn.Linear(5, 3).double()
    W = lin.weight.detach().numpy()
    X = np.random.default_rng(0).normal(size=(20, 5))
    res = jacobian_alignment(lin, X, batch_size=7)
    assert isinstance(res, JacobianAlignment)
    expected = (X @ W.T) / (np.linalg.norm(W, axis=1)[None] * np.linalg.norm(X, axis=1)[:, None])
    np.testing.assert_allclose(res.cosine, expected, atol=1e-12)
    s = np.linalg.svd(W, compute_uv=False)
    np.testing.assert_allclose(res.rank_one_share, np.full(20, s[0] ** 2 / (s**2).sum()), atol=1e-12)
    centroid = X @ W.sum(0) / (np.linalg.norm(W.sum(0)) * np.linalg.norm(X, axis=1))
    np.testing.assert_allclose(res.centroid_cosine, centroid, atol=1e-12)
    v1 = np.linalg.svd(W)[2][0]
    np.testing.assert_allclose(res.top_singular_cosine, np.abs(X @ v1) / np.linalg.norm(X, axis=1), atol=1e-12)
    np.testing.assert_allclose(res.mean_cosine, expected.mean(0), atol=1e-12)
    assert res.mean_rank_one_share == pytest.approx(s[0] ** 2 / (s**2).sum(), abs=1e-12)
    assert set(res.as_dict()) >= {"cosine", "rank_one_share", "mean_cosine", "mean_rank_one_share"}


def test_normal_aligned_model_scores_one():
    # f(x) = c * ||x||^2 / 2 * u (per output u_k): J = u x^T, rank one and aligned with x.
    u = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    fn = Model(lambda x: 0.5 * (x * x).sum(1, keepdim=True) * u, accepts="torch")
    X = torch.randn(6, 4, dtype=torch.float64)
    res = jacobian_alignment(fn, X)
    np.testing.assert_allclose(res.rank_one_share, 1.0, atol=1e-12)
    np.testing.assert_allclose(res.top_singular_cosine, 1.0, atol=1e-12)
    np.testing.assert_allclose(res.cosine, np.sign(u.numpy())[None].repeat(6, 0), atol=1e-12)


def test_homogeneous_relu_net_satisfies_euler():
    net = mlp(d=5, h=16, c=3, bias=False, act=torch.nn.ReLU, seed=3)
    X = torch.randn(25, 5, dtype=torch.float64)
    res = jacobian_alignment(net, X)
    J = brute_jacobians(net, X)
    f = net(X).detach()
    expected = f / (J.norm(dim=2) * X.norm(dim=1, keepdim=True))
    np.testing.assert_allclose(res.cosine, expected.numpy(), atol=1e-10)
    # rank-one share from the brute-force Jacobians
    s = torch.linalg.svdvals(J)
    np.testing.assert_allclose(res.rank_one_share, (s[:, 0] ** 2 / (s**2).sum(1)).numpy(), atol=1e-10)


def test_single_output_and_image_shaped_input():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 1)).double()
    X = torch.randn(4, 3, 2, 2, dtype=torch.float64)
    res = jacobian_alignment(net, X)
    w = net[1].weight.detach()[0]
    expected = X.flatten(1) @ w / (w.norm() * X.flatten(1).norm(dim=1))
    assert res.cosine.shape == (4, 1)
    np.testing.assert_allclose(res.cosine[:, 0], expected.numpy(), atol=1e-12)
    np.testing.assert_allclose(res.rank_one_share, 1.0)


def test_model_left_unchanged():
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Dropout(0.5), torch.nn.Linear(6, 2)).double()
    net.train()
    net[0].weight.requires_grad_(False)
    flags = [p.requires_grad for p in net.parameters()]
    X = torch.randn(8, 4, dtype=torch.float64)
    a = jacobian_alignment(net, X)
    b = jacobian_alignment(net, X)  # eval mode inside: dropout off, so repeatable
    np.testing.assert_array_equal(a.cosine, b.cosine)
    assert net.training and all(m.training for m in net.modules())
    assert [p.requires_grad for p in net.parameters()] == flags
    assert all(p.grad is None for p in net.parameters())
    assert not X.requires_grad


def test_zero_input_gives_zero_cosine_not_nan():
    lin = torch.nn.Linear(3, 2).double()
    res = jacobian_alignment(lin, torch.zeros(2, 3, dtype=torch.float64))
    np.testing.assert_array_equal(res.cosine, 0.0)


def test_jacobian_alignment_errors():
    net = mlp()
    with pytest.raises(ValueError, match="NaN"):
        jacobian_alignment(net, np.array([[np.nan, 0, 0, 0.0]]))
    with pytest.raises(ValueError, match="shape"):
        jacobian_alignment(net, np.zeros(4))  # not a batch
    with pytest.raises(ValueError, match="shape"):
        jacobian_alignment(net, np.zeros((3, 5)))  # wrong number of features
    with pytest.raises(TypeError, match="gradients"):
        jacobian_alignment(lambda x: np.sin(x).sum(1), np.zeros((3, 4)))  # numpy callable
    with pytest.raises(TypeError, match="gradients"):
        jacobian_alignment(np.sin, np.zeros((3, 4)))
    detached = Model(lambda x: net(x.double()).detach(), accepts="torch")
    with pytest.raises(TypeError, match="autograd"):
        jacobian_alignment(detached, torch.zeros(3, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="batch_size"):
        jacobian_alignment(net, np.zeros((3, 4)), batch_size=0)


# ------------------------------------------------------------------------------------------------
# GrokAlign


def brute_penalty(net, X, V, weight):
    """weight * mean_i sqrt((C/p) sum_j ||J_i^T v_ij||^2) from full per-sample Jacobians."""
    J = brute_jacobians(net, X, create_graph=True)  # (n, C, d), one sample at a time
    p, c = V.shape[0], V.shape[2]
    jtv = torch.einsum("pnc,ncd->pnd", V, J)
    return weight * torch.sqrt(c / p * jtv.pow(2).sum((0, 2))).mean()


@pytest.mark.parametrize("p", [1, 3])
def test_grokalign_matches_brute_force_and_gradients(p):
    net = mlp(d=4, h=5, c=3, seed=2)
    X = torch.randn(7, 4, dtype=torch.float64)
    pen = GrokAlign(0.3, n_projections=p, seed=1)
    value = pen(net, X)
    V = pen.projections_
    assert V.shape == (p, 7, 3)
    np.testing.assert_allclose(V.norm(dim=2).numpy(), 1.0, atol=1e-12)
    grads = torch.autograd.grad(value, list(net.parameters()), allow_unused=True)
    ref = brute_penalty(net, X, V, 0.3)
    ref_grads = torch.autograd.grad(ref, list(net.parameters()), allow_unused=True)
    assert value.item() == pytest.approx(ref.item(), abs=1e-6)
    for g, r in zip(grads[:3], ref_grads[:3]):  # the last bias does not enter the Jacobian
        assert g is not None and g.abs().sum() > 0
        np.testing.assert_allclose(g.numpy(), r.numpy(), atol=1e-8)
    assert grads[3] is None or val(grads[3].abs().sum()) == 0.0


def test_grokalign_exact_norm_and_seeding():
    net = mlp(d=4, h=5, c=3, seed=4)
    X = torch.randn(6, 4, dtype=torch.float64)
    exact = GrokAlign(2.0, n_projections=None)(net, X)
    J = brute_jacobians(net, X)
    assert val(exact) == pytest.approx(2.0 * val(J.norm(dim=(1, 2)).mean()), abs=1e-10)
    a, b = GrokAlign(1.0, seed=5), GrokAlign(1.0, seed=5)
    first = a(net, X)
    assert val(first) == val(b(net, X))  # same seed, same draw
    assert val(a(net, X)) != val(first)  # fresh projections on every call
    assert val(GrokAlign(0.0)(net, X)) == 0.0
    # many projections: the estimate of ||J||_F^2 is unbiased, so it approaches the exact norm
    many = GrokAlign(2.0, n_projections=2000, seed=0)(net, X)
    assert val(many) == pytest.approx(val(exact), rel=0.05)


def test_grokalign_training_step_lowers_penalty():
    net = mlp(d=4, h=8, c=3, seed=5)
    X = torch.randn(16, 4, dtype=torch.float64)
    pen = GrokAlign(1.0, n_projections=None)
    before = pen(net, X)
    before.backward()
    with torch.no_grad():  # one plain gradient step (torch.optim's first import costs seconds)
        for param in net.parameters():
            if param.grad is not None:
                param -= 0.05 * param.grad
    after = pen(net, X)
    assert val(after) < val(before)


def test_grokalign_keeps_train_mode_and_zero_jacobian_is_finite():
    net = mlp()
    net.train()
    GrokAlign(1.0)(net, torch.randn(3, 4, dtype=torch.float64))
    assert net.training
    zero = torch.nn.Linear(4, 2).double()
    torch.nn.init.zeros_(zero.weight)
    value = GrokAlign(1.0)(zero, torch.randn(3, 4, dtype=torch.float64))
    value.backward()
    assert val(value) == 0.0 and torch.isfinite(zero.weight.grad).all()


def test_grokalign_errors():
    net = mlp()
    with pytest.raises(ValueError, match="weight"):
        GrokAlign(-1.0)
    with pytest.raises(TypeError, match="weight"):
        GrokAlign("big")
    with pytest.raises(ValueError, match="n_projections"):
        GrokAlign(1.0, n_projections=0)
    with pytest.raises(ValueError, match="seed"):
        GrokAlign(1.0, seed=-1)
    pen = GrokAlign(1.0)
    with pytest.raises(ValueError, match="NaN"):
        pen(net, torch.tensor([[float("nan"), 0, 0, 0]], dtype=torch.float64))
    with pytest.raises(ValueError, match="shape"):
        pen(net, torch.zeros(4, dtype=torch.float64))
    with pytest.raises(ValueError, match="shape"):
        pen(net, torch.zeros(2, 7, dtype=torch.float64))
    with pytest.raises(TypeError, match="gradients"):
        pen(lambda x: np.tanh(x), np.zeros((2, 4)))
    with pytest.raises(TypeError, match="autograd"):
        pen(Model(lambda x: net(x.double()).detach(), accepts="torch"), torch.zeros(2, 4, dtype=torch.float64))
