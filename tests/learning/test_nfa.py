"""Layer AGOPs and the Neural Feature Ansatz: closed forms, brute-force Jacobians, the measures
against direct numpy correlations, and the NFA emerging on a single-index target."""

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.learning.nfa import correlation, layer_agops, matrix_power_psd, nfa


def _data(n=40, d=6, seed=0):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_linear_network_agops_equal_the_closed_form():
    # f(x) = V W x: d f / d x = V W for every x, d f / d h = V at the hidden layer's input.
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 5, bias=False), torch.nn.Linear(5, 3, bias=False)).double()
    X = _data()
    W, V = net[0].weight.detach().numpy(), net[1].weight.detach().numpy()
    A = layer_agops(net, X)
    np.testing.assert_allclose(A["0"], W.T @ V.T @ V @ W, atol=1e-12)
    np.testing.assert_allclose(A["1"], V.T @ V, atol=1e-12)
    # the second layer: W^T W of V against (V^T V)^1 is an exact match, correlation 1
    assert nfa(net, X, power=1.0)["1"] == pytest.approx(1.0, abs=1e-12)
    expected = np.corrcoef((W.T @ W).ravel(), (W.T @ V.T @ V @ W).ravel())[0, 1]
    assert nfa(net, X, power=1.0, layers=["0"])["0"] == pytest.approx(expected, abs=1e-10)


def test_one_hidden_layer_agop_matches_the_hand_formula():
    # AGOP_0 = (1/n) sum_x W^T D(x) V^T V D(x) W with D = diag(tanh'(W x + b))
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()
    X = _data(30)
    W, b = net[0].weight.detach().numpy(), net[0].bias.detach().numpy()
    V = net[2].weight.detach().numpy()
    Xn = X.numpy()
    D = 1 - np.tanh(Xn @ W.T + b) ** 2  # (n, 8)
    ref = sum(W.T @ np.diag(D[i]) @ V.T @ V @ np.diag(D[i]) @ W for i in range(len(Xn))) / len(Xn)
    A = layer_agops(net, X, batch_size=7)  # several chunks accumulate to the same mean
    np.testing.assert_allclose(A["0"], ref, rtol=1e-10, atol=1e-12)
    # the first layer's input is X itself: the same as the input AGOP over all outputs
    np.testing.assert_allclose(A["0"], fl.learning.agop(net, X, target="all"), rtol=1e-10, atol=1e-13)
    # the last layer's input is the tanh features: J = V, so AGOP = V^T V
    np.testing.assert_allclose(A["2"], V.T @ V, atol=1e-12)


def test_conv_patch_agop_matches_brute_force_jacobians():
    torch.manual_seed(2)
    conv = torch.nn.Conv2d(2, 3, 3, padding=1, stride=1)
    head = torch.nn.Linear(3 * 5 * 5, 2)
    net = torch.nn.Sequential(conv, torch.nn.ReLU(), torch.nn.Flatten(), head).double()
    X = torch.randn(4, 2, 5, 5, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    A = layer_agops(net, X, layers=["0"])["0"]
    # brute force: treat the unfolded patches as independent inputs of the rest of the network
    Wf = conv.weight.detach().reshape(3, -1)
    ref = np.zeros((18, 18))
    for i in range(4):
        patches = torch.nn.functional.unfold(X[i : i + 1], 3, padding=1)[0].T  # (25, 18)

        def f(p):
            o = (p @ Wf.T + conv.bias.detach()).T.reshape(1, 3, 5, 5)
            return net[3](torch.relu(o).flatten(1))[0]

        J = torch.autograd.functional.jacobian(f, patches)  # (2, 25, 18)
        J = J.reshape(-1, 18).numpy()
        ref += J.T @ J
    ref /= 4
    np.testing.assert_allclose(A, ref, rtol=1e-10, atol=1e-12)
    W = Wf.numpy()
    expected = np.corrcoef((W.T @ W).ravel(), matrix_power_psd(ref, 0.5).ravel())[0, 1]
    assert nfa(net, X, layers=["0"])["0"] == pytest.approx(expected, abs=1e-9)


def test_measures_equal_direct_numpy_correlations():
    rng = np.random.default_rng(0)
    B1, B2 = rng.normal(size=(5, 5)), rng.normal(size=(5, 5))
    A, B = B1 @ B1.T, B2 @ B2.T + B1 @ B1.T
    assert correlation(A, B, "pearson") == pytest.approx(np.corrcoef(A.ravel(), B.ravel())[0, 1], abs=1e-12)
    cos = (A * B).sum() / np.linalg.norm(A) / np.linalg.norm(B)
    assert correlation(A, B, "cosine") == pytest.approx(cos, abs=1e-12)
    off = ~np.eye(5, dtype=bool)
    assert correlation(A, B, "pearson_offdiag") == pytest.approx(np.corrcoef(A[off], B[off])[0, 1], abs=1e-12)


def test_matrix_power_matches_scipy_and_clips_negative_eigenvalues():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    rng = np.random.default_rng(1)
    B = rng.normal(size=(6, 4))
    A = B @ B.T  # PSD of rank 4: eigh gives tiny negative eigenvalues that must be clipped
    R = matrix_power_psd(A, 0.5)
    np.testing.assert_allclose(R @ R, A, atol=1e-10)
    np.testing.assert_allclose(R, np.real(scipy_linalg.sqrtm(A)), atol=1e-6)
    assert np.all(np.linalg.eigvalsh(R) > -1e-12)


def test_nfa_variants_agree_with_layer_agops_and_numpy():
    torch.manual_seed(3)
    net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Softplus(), torch.nn.Linear(8, 2)).double()
    X = _data(25)
    A = layer_agops(net, X)["0"]
    W = net[0].weight.detach().numpy()
    G = W.T @ W
    vals, vecs = np.linalg.eigh(A)
    for power in (0.5, 1.0):
        P = (vecs * np.clip(vals, 0, None) ** power) @ vecs.T
        off = ~np.eye(6, dtype=bool)
        expected = {
            "pearson": np.corrcoef(G.ravel(), P.ravel())[0, 1],
            "cosine": (G * P).sum() / np.linalg.norm(G) / np.linalg.norm(P),
            "pearson_offdiag": np.corrcoef(G[off], P[off])[0, 1],
        }
        for measure, value in expected.items():
            got = nfa(net, X, power=power, measure=measure)
            assert list(got) == ["0", "2"]
            assert got["0"] == pytest.approx(value, abs=1e-10)


def test_nfa_emerges_on_a_single_index_target():
    # y = <w*, x>^2 depends on x only through one direction; after short training from a small
    # init, W^T W of the first layer lines up with AGOP^(1/2) (Acceptance 1) and with w* w*^T.
    gen = torch.Generator().manual_seed(0)
    d, n = 10, 256
    X = torch.randn(n, d, generator=gen, dtype=torch.float64)
    w_star = torch.zeros(d, dtype=torch.float64)
    w_star[:2] = 2**-0.5
    y = (X @ w_star)[:, None] ** 2
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(d, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)).double()
    with torch.no_grad():
        net[0].weight.mul_(0.1)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    for _ in range(300):
        opt.zero_grad()
        loss = ((net(X) - y) ** 2).mean()
        loss.backward()
        opt.step()
    assert float(loss.detach()) < 0.05 * float(y.var())
    corr = fl.learning.nfa(net, X)
    assert corr["0"] > 0.9
    assert nfa(net, X, measure="pearson_offdiag")["0"] > 0.9
    W = net[0].weight.detach().numpy()
    top = np.linalg.eigh(W.T @ W)[1][:, -1]
    assert abs(top @ w_star.numpy()) > 0.95


def test_errors_name_the_argument():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    X = torch.randn(10, 6)
    with pytest.raises(ValueError, match=r"no Linear or Conv2d layer named 'fc9'.*valid names: '0', '2'"):
        nfa(net, X, layers=["fc9"])
    with pytest.raises(ValueError, match="layers is empty"):
        layer_agops(net, X, layers=[])
    bad = X.clone()
    bad[3, 1] = float("nan")
    with pytest.raises(ValueError, match="X contains NaN"):
        nfa(net, bad)
    with pytest.raises(ValueError, match="measure must be one of"):
        nfa(net, X, measure="spearman")
    with pytest.raises(ValueError, match="power must be a finite number > 0.0; got 0"):
        nfa(net, X, power=0)
    with pytest.raises(TypeError, match="must be a torch.nn.Module"):
        nfa(lambda x: x.sum(1), X.numpy())
    with pytest.raises(ValueError, match="no torch.nn.Linear or torch.nn.Conv2d"):
        nfa(torch.nn.Tanh(), X)
    with pytest.raises(ValueError, match="grouped convolution"):
        layer_agops(torch.nn.Sequential(torch.nn.Conv2d(2, 2, 3, groups=2)), torch.randn(2, 2, 5, 5), layers=["0"])


def test_layer_agops_skips_grouped_convolutions_when_layers_is_none():
    # A grouped convolution's weight (out, c/groups*kh*kw) does not match the full patch AGOP; with
    # layers=None it used to be included with a silently wrong (c/groups*kh*kw) matrix.
    torch.manual_seed(3)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(2, 4, 3, groups=2), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(4 * 3 * 3, 2)
    ).double()
    X = torch.randn(5, 2, 5, 5, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    A = layer_agops(net, X)
    assert list(A) == ["3"]
    assert list(fl.learning.nfa(net, X)) == ["3"]
