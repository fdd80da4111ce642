"""Seeds and batching of the learning tools: seeds through the validation home (None, an int or
a numpy Generator), parameter checks naming the argument, the one data-chunking rule
(featurelens._batching.rows_for_bytes), and the Model's batch size read, never changed."""

import numpy as np
import pytest
import torch

import featurelens.learning as L
from featurelens import _batching
from featurelens.learning import _grokking
from featurelens.learning import collapse as collapse_module
from featurelens.models import Model

SEED_ERRORS = [("a", TypeError, "seed must be None, a non-negative int or a numpy.random.Generator; got 'a'"),
               (-1, ValueError, "seed must be None, a non-negative int or a numpy.random.Generator; got -1")]


def _regression(n=40, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2


# --------------------------------------------------------------------------------------------------
# seeds


@pytest.mark.parametrize("cls", [L.RFMRegressor, L.RFMClassifier])
def test_rfm_seed_int_and_generator(cls):
    X, y = _regression()
    if cls is L.RFMClassifier:
        y = (y > np.median(y)).astype(int)
    kw = dict(iters=1, val_size=0.25, agop_samples=20)
    by_int = cls(seed=3, **kw).fit(X, y)
    by_gen = cls(seed=np.random.default_rng(3), **kw).fit(X, y)  # was "seed must be None or an int"
    np.testing.assert_array_equal(by_gen.M_, by_int.M_)  # same split and AGOP rows as the int
    np.testing.assert_array_equal(by_gen.X_fit_, by_int.X_fit_)
    assert not np.array_equal(cls(seed=4, **kw).fit(X, y).X_fit_, by_int.X_fit_)
    for seed, err, match in SEED_ERRORS:
        with pytest.raises(err, match=match):
            cls(seed=seed, **kw).fit(X, y)


def test_linear_probe_seed_kinds():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 20)
    H = rng.normal(size=(60, 5)) + y[:, None]
    a = L.linear_probe(H, y, seed=np.random.default_rng(1))
    assert a == L.linear_probe(H, y, seed=np.random.default_rng(1))  # reproducible from a Generator
    assert 0.0 <= a <= 1.0 and 0.0 <= L.linear_probe(H, y, seed=None) <= 1.0
    for seed, err, match in SEED_ERRORS:
        with pytest.raises(err, match=match):
            L.linear_probe(H, y, seed=seed)
    with pytest.raises(ValueError, match="test_size must be a finite number > 0.0 and < 1.0; got 1.5"):
        L.linear_probe(H, y, test_size=1.5)
    with pytest.raises(ValueError, match="max_iter must be an int >= 1; got 0"):
        L.linear_probe(H, y, max_iter=0)


def _net(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def test_train_with_monitor_seed_kinds():
    rng = np.random.default_rng(0)
    X = torch.as_tensor(rng.normal(size=(30, 6)), dtype=torch.float32)
    y = torch.as_tensor(rng.integers(0, 3, 30))

    def run(seed):
        net = _net()
        mon = L.Monitor(net, X, metrics=("updates",), window=3)
        L.train_with_monitor(net, X, y, 4, batch_size=8, monitor=mon, seed=seed, progress=False)
        return net[0].weight.detach().clone()

    torch.testing.assert_close(run(np.random.default_rng(2)), run(np.random.default_rng(2)), rtol=0, atol=0)
    torch.testing.assert_close(run(5), run(5), rtol=0, atol=0)
    for seed, err, match in SEED_ERRORS:
        with pytest.raises(err, match=match):
            run(seed)


def test_grokking_data_and_network_seed_kinds():
    by_int = _grokking.modular_addition(7, 0.5, seed=3)
    by_gen = _grokking.modular_addition(7, 0.5, seed=np.random.default_rng(3))
    for u, v in zip(by_int, by_gen):
        torch.testing.assert_close(u, v, rtol=0, atol=0)
    a = _grokking.quadratic_network(5, 4, seed=np.random.default_rng(1))
    b = _grokking.quadratic_network(5, 4, seed=np.random.default_rng(1))
    torch.testing.assert_close(a[0].weight, b[0].weight, rtol=0, atol=0)
    c = _grokking.quadratic_network(5, 4, seed=1)
    torch.testing.assert_close(c[0].weight, _grokking.quadratic_network(5, 4, seed=1)[0].weight, rtol=0, atol=0)
    for seed, err, match in SEED_ERRORS:
        with pytest.raises(err, match=match):
            _grokking.modular_addition(7, 0.5, seed=seed)
        with pytest.raises(err, match=match):
            _grokking.quadratic_network(5, 4, seed=seed)


# --------------------------------------------------------------------------------------------------
# parameter checks from the validation home


def test_parameter_checks_name_the_argument():
    A = np.random.default_rng(0).normal(size=(10, 3))
    with pytest.raises(TypeError, match="debiased must be True or False; got 1"):
        L.cka(A, A, debiased=1)
    with pytest.raises(ValueError, match="kernel must be one of 'linear', 'rbf'; got 'lin'"):
        L.cka(A, A, kernel="lin")
    with pytest.raises(ValueError, match="sigma must be a finite number > 0.0 or None; got -1.0"):
        L.cka(A, A, kernel="rbf", sigma=-1.0)
    with pytest.raises(TypeError, match="debiased must be True or False; got 'yes'"):
        L.CKAAccumulator(debiased="yes")
    with pytest.raises(ValueError, match="eps must be a finite number >= 0.0; got -1"):
        L.effective_rank(A, eps=-1)
    with pytest.raises(TypeError, match="center must be True or False"):
        L.effective_rank(A, center="no")
    with pytest.raises(TypeError, match="normalize must be True or False; got 'no'"):
        L.MahalanobisOOD(normalize="no").fit(A, np.arange(10) % 2)
    with pytest.raises(ValueError, match="threshold must be a finite number > 0.0; got 0"):
        L.EigengapDetector(threshold=0)
    with pytest.raises(TypeError, match="patience must be an int >= 1; got 2.0"):
        L.EigengapDetector(patience=2.0)
    with pytest.raises(ValueError, match="measure must be one of 'pearson', 'cosine', 'pearson_offdiag'; got 'r2'"):
        L.nfa(_net(), torch.randn(4, 6), measure="r2")
    with pytest.raises(ValueError, match="loss must be one of 'cross_entropy', 'mse'; got 'l1'"):
        L.train_with_monitor(_net(), torch.randn(4, 6), torch.zeros(4, dtype=torch.long), 1, loss="l1")


# --------------------------------------------------------------------------------------------------
# chunking


def test_rows_for_bytes():
    assert _batching.rows_for_bytes(8, budget_bytes=80) == 10
    assert _batching.rows_for_bytes(10**9) == 1  # never zero rows
    assert _batching.rows_for_bytes(8 * 1024) == _batching.DEFAULT_CHUNK_BYTES // (8 * 1024)
    assert _batching.rows_for_bytes(8 * 10**6, min_rows=256) == 256
    assert _batching.rows_for_bytes(8, max_rows=100) == 100


def test_collapse_and_ood_do_not_depend_on_the_chunk_size(monkeypatch):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 50)
    H = rng.normal(size=(50, 4)) + 3 * np.eye(3, 4)[y]
    W = rng.normal(size=(3, 4))
    ref = L.neural_collapse(H, y, W=W)
    monkeypatch.setattr(collapse_module, "rows_for_bytes", lambda *a, **k: 3)  # chunks of 3 rows
    small = L.neural_collapse(H, y, W=W)
    assert small == pytest.approx(ref, rel=1e-12, nan_ok=True)
    s_ref = L.MahalanobisOOD().fit(H, y).score(H)
    np.testing.assert_allclose(L.MahalanobisOOD(batch_size=3).fit(H, y).score(H), s_ref, rtol=1e-10)
    big = L.CKAAccumulator()
    for part in np.array_split(np.arange(50), 7):
        big.update(H[part], H[part] ** 2)
    assert big.compute() == pytest.approx(L.cka(H, H**2), rel=1e-10)


# --------------------------------------------------------------------------------------------------
# the Model's batch size: read, respected, never changed


def _counting(net):
    rows = []
    net.register_forward_hook(lambda mod, inp, out: rows.append(inp[0].shape[0]))
    return rows


@pytest.mark.parametrize("name", ["nfa", "layer_agops", "monitor"])
def test_learning_tools_send_at_most_batch_size_rows_and_leave_the_model_alone(name):
    net = _net()
    X = torch.randn(7, 6)
    rows = _counting(net)
    m = Model(net, batch_size=2)
    call = {
        "nfa": lambda model: L.nfa(model, X),
        "layer_agops": lambda model: L.layer_agops(model, X),
        "monitor": lambda model: L.Monitor(model, X, metrics=("agop", "nfa"), window=2).step() and None,
    }[name]
    call(m)
    assert rows and max(rows) <= 2, sorted(set(rows))
    assert m.batch_size == 2 and not m.auto_batch


def test_nfa_refuses_a_model_that_outputs_nan():
    net = _net()
    with torch.no_grad():
        net[2].bias.fill_(float("nan"))
    with pytest.raises(ValueError, match="NaN"):
        L.nfa(net, torch.randn(4, 6))
