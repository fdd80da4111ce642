"""Review fixes (reviewer A): each test failed before its fix."""

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.learning.monitor import Monitor
from featurelens.learning.nfa import layer_agops


def _net(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3)).double()


def test_monitor_nc4_uses_the_classifier_bias():
    # NC4 compares the network's own decision argmax(W h + b) with the nearest class mean; a large
    # bias changes the decision, so dropping it gives the agreement of a different classifier.
    net = _net(0)
    with torch.no_grad():
        net[2].bias.copy_(torch.tensor([0.0, 5.0, -5.0], dtype=torch.float64))
    gen = torch.Generator().manual_seed(1)
    X = torch.randn(60, 5, generator=gen, dtype=torch.float64)
    y = ((X[:, 0] > 0).long() + (X[:, 1] > 0.5).long()).numpy()
    mon = Monitor(net, X, y, metrics=("collapse",))
    mon.step()
    H = torch.tanh(net[0](X)).detach().numpy()
    W, b = net[2].weight.detach().numpy(), net[2].bias.detach().numpy()
    expected = fl.learning.neural_collapse(H, y, W=W, b=b)["nc4"]
    without_bias = fl.learning.neural_collapse(H, y, W=W)["nc4"]
    assert expected != pytest.approx(without_bias)  # the bias matters in this setting
    assert mon.series("nc4", "2")[1][-1] == pytest.approx(expected, abs=1e-12)


def test_monitor_collapse_when_the_probe_misses_a_class():
    # Labels {0, 2} of a 3-class head: W has 3 rows but only 2 classes are present. The monitor
    # used to pass W anyway (3 == max label + 1) and neural_collapse raised on its shape.
    net = _net(1)
    gen = torch.Generator().manual_seed(2)
    X = torch.randn(40, 5, generator=gen, dtype=torch.float64)
    y = np.where(X[:, 0].numpy() > 0, 2, 0)
    mon = Monitor(net, X, y, metrics=("collapse",))
    mon.step()
    H = torch.tanh(net[0](X)).detach().numpy()
    assert mon.series("nc1", "2")[1][-1] == pytest.approx(fl.learning.neural_collapse(H, y)["nc1"], rel=1e-10)


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


def test_mahalanobis_parameters_numpy_scalars_and_bad_batch_size():
    from featurelens.learning import MahalanobisOOD

    rng = np.random.default_rng(0)
    H, y = rng.normal(size=(50, 4)), rng.integers(0, 3, 50)
    # a numpy float ridge is a number like any other (it was refused)
    a = MahalanobisOOD(ridge=np.float32(1e-3)).fit(H, y).score(H)
    b = MahalanobisOOD(ridge=float(np.float32(1e-3))).fit(H, y).score(H)
    np.testing.assert_allclose(a, b, rtol=1e-12)
    # batch_size=0 and ridge=True were silently replaced by the defaults
    with pytest.raises(ValueError, match="batch_size"):
        MahalanobisOOD(batch_size=0).fit(H, y)
    with pytest.raises(TypeError, match="ridge must be a finite number >= 0.0; got True"):
        MahalanobisOOD(ridge=True).fit(H, y)


@pytest.mark.slow
def test_diagnose_writes_history_csv_without_pandas(tmp_path, monkeypatch):
    # results.json lists history.csv; without pandas (an optional dependency) it was not written.
    import builtins
    import csv
    import json

    from featurelens.learning._diagnose_cli import diagnose

    real_import = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("no pandas here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    out = tmp_path / "diag"
    summary = diagnose(out=str(out), steps=20, p=5, width=8, probe_every=10, progress=False)
    monkeypatch.setattr(builtins, "__import__", real_import)
    assert json.load(open(out / "results.json"))["files"]["history"] == "history.csv"
    rows = list(csv.DictReader(open(out / "history.csv")))
    acc = [float(r["value"]) for r in rows if r["metric"] == "test_accuracy"]
    assert acc and acc[-1] == pytest.approx(summary["final_test_accuracy"])
