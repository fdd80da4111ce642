import numpy as np
import pytest
import torch

from featurelens.learning.gsnr import (
    GSNRResult,
    InfiniteGSNRWarning,
    gsnr,
    gsnr_monitor_metric,
)


def linear(d=3, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Linear(d, 1).double()


def np_gsnr(G):
    """G: (n, ...) per-sample gradients -> mean^2 / population variance."""
    return G.mean(0) ** 2 / G.var(0)


def test_linear_mse_closed_form_and_chunking():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((31, 3))
    y = rng.standard_normal(31)
    lin = linear()
    w = lin.weight.detach().numpy()[0]
    b = float(lin.bias.detach())
    r = X @ w + b - y  # loss_i = r_i^2: g_w = 2 r_i x_i, g_b = 2 r_i
    res = gsnr(lin, X, y, loss="mse", batch_size=7)
    assert isinstance(res, GSNRResult) and res.n_samples == 31
    np.testing.assert_allclose(res.values["weight"], np_gsnr(2 * r[:, None] * X)[None, :], rtol=1e-10)
    np.testing.assert_allclose(res.values["bias"], [np_gsnr(2 * r)], rtol=1e-10)
    np.testing.assert_allclose(res.mean["bias"], [np.mean(2 * r)], rtol=1e-12)
    np.testing.assert_allclose(res.variance["weight"][0], (2 * r[:, None] * X).var(0), rtol=1e-10)
    assert res.values["weight"].shape == (1, 3)
    assert res.summary["weight"] == pytest.approx(res.values["weight"].mean())
    assert res.infinite == {"weight": 0, "bias": 0}
    # Chunk size does not change the result.
    res2 = gsnr(lin, X, y, loss="mse", batch_size=100)
    np.testing.assert_allclose(res2.values["weight"], res.values["weight"], rtol=1e-12)


def test_identical_per_sample_gradients_are_infinite_and_flagged():
    X = np.random.default_rng(1).standard_normal((20, 3))
    lin = linear()
    # loss = output: g_b = 1 for every sample (variance 0), g_w = x_i.
    with pytest.warns(InfiniteGSNRWarning, match=r"bias \(1\)"):
        res = gsnr(lin, X, np.zeros(20), loss=lambda out, t: out.sum())
    assert res.values["bias"][0] == np.inf and res.infinite["bias"] == 1 and res.any_infinite
    assert res.summary["bias"] == np.inf
    np.testing.assert_allclose(res.values["weight"][0], np_gsnr(X), rtol=1e-10)
    metric = gsnr_monitor_metric(lin, X, np.zeros(20), loss=lambda out, t: out.sum())
    assert metric["gsnr_infinite"] == 1 and np.isnan(metric["gsnr/bias"])
    assert metric["gsnr/weight"] == pytest.approx(np_gsnr(X).mean(), rel=1e-10)
    assert metric["gsnr_mean"] == pytest.approx(np_gsnr(X).mean(), rel=1e-10)


def test_zero_mean_gradients_give_zero():
    x = np.random.default_rng(2).standard_normal((10, 3))
    X = np.vstack([x, x])
    y = np.concatenate([np.ones(10), -np.ones(10)])
    lin = linear()
    with torch.no_grad():
        lin.weight.zero_()
        lin.bias.zero_()
    # At w = b = 0: g_w = -2 y_i x_i, g_b = -2 y_i; the pairs (x, 1), (x, -1) cancel exactly.
    res = gsnr(lin, X, y, loss="mse")
    assert np.abs(res.values["weight"]).max() < 1e-20
    assert np.abs(res.values["bias"]).max() < 1e-20
    assert res.variance["bias"][0] == pytest.approx(4.0)


def _mlp():
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Dropout(0.5), torch.nn.Linear(5, 3)).double()


def test_cross_entropy_matches_a_loop_and_loader_and_eval_mode():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((17, 4))
    y = rng.integers(0, 3, 17)
    net = _mlp()
    net.train()
    res = gsnr(net, X, y, batch_size=5)
    assert net.training and net[2].training  # flags restored
    net.eval()
    grads = {k: [] for k, _ in net.named_parameters()}
    for i in range(17):
        net.zero_grad()
        out = net(torch.as_tensor(X[i : i + 1]))
        torch.nn.functional.cross_entropy(out, torch.as_tensor(y[i : i + 1])).backward()
        for k, p in net.named_parameters():
            grads[k].append(p.grad.detach().numpy().copy())
    for k, g in grads.items():
        np.testing.assert_allclose(res.values[k], np_gsnr(np.stack(g)), rtol=1e-8, err_msg=k)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.as_tensor(X), torch.as_tensor(y)), batch_size=6
    )
    res_loader = gsnr(net, loader)
    for k in grads:
        np.testing.assert_allclose(res_loader.values[k], res.values[k], rtol=1e-10)


def test_binary_single_output_cross_entropy():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((12, 3))
    y = rng.integers(0, 2, 12)
    lin = linear()
    w, b = lin.weight.detach().numpy()[0], float(lin.bias.detach())
    p = 1 / (1 + np.exp(-(X @ w + b)))
    res = gsnr(lin, X, y)  # BCE on the logit: g_w = (p - y) x, g_b = p - y
    np.testing.assert_allclose(res.values["weight"][0], np_gsnr((p - y)[:, None] * X), rtol=1e-9)
    np.testing.assert_allclose(res.values["bias"], [np_gsnr(p - y)], rtol=1e-9)


def test_errors():
    X = np.random.default_rng(6).standard_normal((8, 4))
    y = np.arange(8) % 3
    net = _mlp()
    with pytest.raises(ValueError, match="y is None but X is an array"):
        gsnr(net, X)
    with pytest.raises(ValueError, match=r"y has shape \(7,\); expected one target per row of X \(8 rows\)"):
        gsnr(net, X, y[:7])
    with pytest.raises(ValueError, match=r"y holds labels in \[0, 5\]; expected 0 <= label < 3"):
        gsnr(net, X, np.arange(8) % 6)
    with pytest.raises(TypeError, match="integer class labels"):
        gsnr(net, X, y + 0.5)
    with pytest.raises(ValueError, match="loss must be one of 'cross_entropy', 'mse'"):
        gsnr(net, X, y, loss="hinge")
    with pytest.raises(TypeError, match="gsnr needs the parameters of a torch.nn.Module"):
        gsnr(lambda a: a.sum(1), X, y)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        gsnr(net, Xn, y)
    with pytest.raises(ValueError, match="y contains NaN"):
        gsnr(linear(4), X, np.full(8, np.nan), loss="mse")
    with pytest.raises(ValueError, match="GSNR needs at least 2"):
        gsnr(net, X[:1], y[:1])
    frozen = _mlp().requires_grad_(False)
    with pytest.raises(ValueError, match="no parameters with requires_grad=True"):
        gsnr(frozen, X, y)
    with pytest.raises(TypeError, match="iterable of \\(x, y\\) batches"):
        gsnr(net, 3.0)
