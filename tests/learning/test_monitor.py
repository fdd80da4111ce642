"""The training monitor: window spectra against numpy's SVD, probe metrics against the direct
functions, the eigengap detector on planted and stationary series, the tidy history and errors."""

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.learning.eigengap import EigengapDetector
from featurelens.learning.monitor import Monitor, train_with_monitor
from featurelens.learning.nfa import nfa


def _net(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3)).double()


def _data(n=60, seed=0):
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 5, generator=gen, dtype=torch.float64)
    y = (X[:, 0] > 0).long() + (X[:, 1] > 0.5).long()
    return X, y


def _train(net, mon, X, y, steps, lr=0.05):
    """Plain SGD; returns the first-layer and last-layer weights before each recorded step, and the gradients."""
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    weights, grads = [net[0].weight.detach().clone().double()], []
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(X), y).backward()
        opt.step()
        if mon.step():
            weights.append(net[0].weight.detach().clone().double())
            grads.append(net[0].weight.grad.detach().clone().double())
    return weights, grads


def test_update_and_gradient_window_spectra_equal_numpy_svd():
    X, y = _data()
    net = _net()
    mon = Monitor(net, X, y, every=2, window=4, k=2, metrics=("updates", "gradients"), detector=None)
    weights, grads = _train(net, mon, X, y, steps=20)
    # every=2: the window holds the last 4 differences between consecutive recorded snapshots
    ups = np.stack([(b - a).numpy().ravel() for a, b in zip(weights[:-1], weights[1:])][-4:])
    ref = np.linalg.svd(ups, compute_uv=False)
    steps, sv_list = zip(*mon.spectra["update:0"])
    assert steps[-1] == 20 and steps[0] == 8  # first full window after 4 records (steps 2, 4, 6, 8)
    np.testing.assert_allclose(sv_list[-1], ref, rtol=1e-7, atol=1e-9 * ref[0])
    s, gap = mon.series("update_gap", "0")
    assert gap[-1] == pytest.approx(ref[1] / ref[2], rel=1e-6)
    _, kstar = mon.series("update_kstar", "0")
    assert kstar[-1] == np.argmax(ref[:-1] / ref[1:]) + 1
    g_ref = np.linalg.svd(np.stack([g.numpy().ravel() for g in grads[-4:]]), compute_uv=False)
    np.testing.assert_allclose(mon.spectra["grad:0"][-1][1], g_ref, rtol=1e-7, atol=1e-9 * g_ref[0])
    # the pseudo-layer "all" stacks both layers' flattened weights side by side
    assert mon.series("update_sv1", "all")[1][-1] >= mon.series("update_sv1", "0")[1][-1]


def test_probe_metrics_equal_the_direct_functions():
    X, y = _data()
    net = _net(1)
    mon = Monitor(net, X, y.numpy(), every=1, probe_every=5, metrics=("agop", "nfa", "rank", "collapse"))
    _train(net, mon, X, y, steps=10)
    direct = nfa(net, X)
    off = nfa(net, X, measure="pearson_offdiag")
    for layer in ("0", "2"):
        steps, values = mon.series("nfa", layer)
        assert list(steps) == [5, 10]
        assert values[-1] == pytest.approx(direct[layer], abs=1e-10)
        assert mon.series("nfa_offdiag", layer)[1][-1] == pytest.approx(off[layer], abs=1e-10)
        A = fl.learning.layer_agops(net, X, layers=[layer])[layer]
        assert mon.series("agop_trace", layer)[1][-1] == pytest.approx(np.trace(A), rel=1e-10)
    W = net[0].weight.detach().numpy()
    expected = fl.learning.effective_rank(W)
    assert mon.series("erank_weights", "0")[1][-1] == pytest.approx(expected, rel=1e-10)
    H = torch.tanh(net[0](X)).detach().numpy()  # the input of the last layer: penultimate features
    nc = fl.learning.neural_collapse(H, y.numpy(), W=net[2].weight.detach().numpy())
    assert mon.series("nc1", "2")[1][-1] == pytest.approx(nc["nc1"], rel=1e-8)


def test_manifold_and_alignment_metrics_equal_the_direct_functions():
    X, y = _data()
    net = _net(2)
    mon = Monitor(net, X, y.numpy(), every=1, probe_every=4, metrics=("manifold", "alignment"), detector=None)
    _train(net, mon, X, y, steps=8)
    H = {"0": X.numpy(), "2": torch.tanh(net[0](X)).detach().numpy()}  # each layer's input
    for layer, feats in H.items():
        geo = fl.learning.manifold_geometry(feats, y.numpy())
        steps, radius = mon.series("manifold_radius", layer)
        assert list(steps) == [4, 8]
        assert radius[-1] == pytest.approx(geo.mean_radius, rel=1e-10)
        assert mon.series("manifold_dimension", layer)[1][-1] == pytest.approx(geo.mean_dimension, rel=1e-10)
        onehot = np.eye(3)[y.numpy()]
        lin = fl.learning.target_linearity(feats, onehot)
        assert mon.series("target_linearity", layer)[1][-1] == pytest.approx(lin, rel=1e-10)
    aligned = fl.learning.jacobian_alignment(net, X)
    assert mon.metrics == ("manifold", "jacobian_alignment")  # "alignment" is its short name
    assert mon.series("jacobian_cosine", "model")[1][-1] == pytest.approx(float(np.mean(aligned.mean_cosine)), rel=1e-10)
    assert mon.series("jacobian_rank_one_share", "model")[1][-1] == pytest.approx(aligned.mean_rank_one_share, rel=1e-10)
    assert mon.series("jacobian_centroid_cosine", "model")[1][-1] == pytest.approx(aligned.mean_centroid_cosine,
                                                                                    rel=1e-10)
    # "target_linearity" alone: the same values as within "manifold", and no manifold series
    alone = Monitor(net, X, y.numpy(), every=1, metrics=("target_linearity",), detector=None)
    alone.step()
    for layer, feats in H.items():
        lin = fl.learning.target_linearity(feats, np.eye(3)[y.numpy()])
        assert alone.series("target_linearity", layer)[1][-1] == pytest.approx(lin, rel=1e-10)
    assert "manifold_radius" not in set(alone.history["metric"])
    # GSNR on the probe rows: the function's values
    g_mon = Monitor(net, X, y.numpy(), every=1, metrics=("gsnr",), detector=None)
    g_mon.step()
    direct_g = fl.learning.gsnr_monitor_metric(net, X, y)
    assert g_mon.series("gsnr_mean", "model")[1][-1] == pytest.approx(direct_g["gsnr_mean"], rel=1e-10)
    assert g_mon.series("gsnr", "0.weight")[1][-1] == pytest.approx(direct_g["gsnr/0.weight"], rel=1e-10)
    # the simulated capacity on the Monitor's fixed subsample: the function on the same rows
    from featurelens.learning.monitor import CAPACITY_DICHOTOMIES, CAPACITY_LOADS

    cap_mon = Monitor(net, X, y.numpy(), every=1, metrics=("manifold_capacity",), layers=["2"], detector=None)
    cap_mon.step()
    dims = sorted({min(7, max(1, round(3 / a))) for a in CAPACITY_LOADS})
    rng = np.random.default_rng(0)  # the Monitor's subsample: 20 rows of each class, drawn once
    rows = np.concatenate([rng.permutation(np.flatnonzero(y.numpy() == c))[:20] for c in range(3)])
    direct = fl.learning.manifold_capacity(H["2"][rows], y.numpy()[rows], n_dichotomies=CAPACITY_DICHOTOMIES,
                                           n_projections=dims, seed=0)
    steps, value = cap_mon.series("manifold_capacity_mean_field", "2")
    assert value[-1] == pytest.approx(direct.mean_field_capacity, rel=1e-10)
    if np.isfinite(direct.critical_load):
        assert cap_mon.series("manifold_capacity", "2")[1][-1] == pytest.approx(direct.critical_load, rel=1e-10)
    # the input layer's linearity is that of X itself: a fixed number across steps
    assert np.ptp(mon.series("target_linearity", "0")[1]) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="y_probe"):
        Monitor(net, X, metrics=("manifold",))


def test_conv_layers_and_a_cadence_above_one():
    torch.manual_seed(4)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 3, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(3 * 4 * 4, 2))
    X = torch.randn(12, 1, 6, 6, generator=torch.Generator().manual_seed(5))
    y = torch.arange(12) % 2
    mon = Monitor(net, X, y, every=3, probe_every=6, window=2, metrics=("nfa", "updates"))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    snapshots = [net[0].weight.detach().clone().double()]
    for t in range(1, 7):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(X), y).backward()
        opt.step()
        mon.step()
        if t % 3 == 0:
            snapshots.append(net[0].weight.detach().clone().double())
    assert mon.series("nfa", "0")[0].tolist() == [6]
    assert mon.series("nfa", "0")[1][0] == pytest.approx(nfa(net, X, layers=["0"])["0"], abs=1e-6)
    # the window holds the two updates 3 steps apart: w3 - w0 and w6 - w3 (the kernel, flattened)
    ups = np.stack([(snapshots[1] - snapshots[0]).numpy().ravel(), (snapshots[2] - snapshots[1]).numpy().ravel()])
    ref = np.linalg.svd(ups, compute_uv=False)
    (step, sv), = mon.spectra["update:0"]
    assert step == 6
    np.testing.assert_allclose(sv, ref, rtol=1e-6)


def test_the_detector_reads_the_watched_layers_update_gap():
    X, y = _data()
    for layer in (None, "2", "all"):
        net = _net()
        mon = Monitor(net, X, y, window=3, metrics=("updates",), detect_layer=layer,
                      detector=EigengapDetector(warmup=2, baseline=3, patience=1))
        _train(net, mon, X, y, steps=12)
        steps, gap = mon.series("update_gap", layer or "0")
        assert mon.detector.steps == steps.tolist()
        np.testing.assert_allclose(mon.detector.values, np.log(gap))
        # the detector's own run() on the recorded series reaches the same decision
        assert EigengapDetector(warmup=2, baseline=3, patience=1).run(gap, steps) == mon.fired_step


def test_history_is_tidy_and_plot_returns_one_figure():
    X, y = _data()
    net = _net()
    mon = Monitor(net, X, y, every=1, window=3, probe_every=4, metrics=("nfa", "updates"))
    _train(net, mon, X, y, steps=8)
    h = mon.history
    rows = h.to_dict("records") if hasattr(h, "to_dict") else h
    assert set(rows[0]) == {"step", "layer", "metric", "value"}
    assert {r["metric"] for r in rows} >= {"nfa", "update_gap", "update_sv1"}
    assert sum(1 for r in rows if r["metric"] == "nfa") == 2 * 2  # two layers at steps 4 and 8
    fig = mon.plot()
    assert len(fig.axes) >= 2


def test_detector_fires_on_a_planted_regime_change_and_not_on_stationary_noise():
    rng = np.random.default_rng(0)
    n, change = 600, 300
    base = np.exp(np.log(2.0) + 0.15 * rng.standard_normal(n))
    shifted = base.copy()
    shifted[change:] *= 4.0  # the gap jumps to a new regime
    det = EigengapDetector()
    fired = det.run(shifted)
    assert fired is not None and change <= fired <= change + det.patience + 5
    for seed in range(5):  # stationary log-normal noise: no false alarm
        noise = np.exp(np.log(2.0) + 0.3 * np.random.default_rng(seed + 1).standard_normal(1000))
        assert EigengapDetector().run(noise) is None
    # one outlying update stays in a window of 20 updates for 20 steps: a plateau shorter than
    # the patience does not fire
    spike = base.copy()
    spike[400:420] *= 10.0
    assert EigengapDetector(patience=25).run(spike) is None
    down = base.copy()
    down[change:] /= 4.0
    assert EigengapDetector().run(down) is None  # direction "up" ignores a drop
    assert EigengapDetector(direction="down").run(down) is not None


def test_train_with_monitor_logs_accuracy_and_matches_a_manual_loop():
    X, y = _data(80)
    net = _net(2)
    mon = train_with_monitor(net, X[:60], y[:60], steps=12, X_test=X[60:], y_test=y[60:], lr=1e-2,
                             monitor=Monitor(net, X[:60], y[:60], metrics=("updates",), window=3), eval_every=4)
    s, acc = mon.series("test_accuracy")
    assert list(s) == [4, 8, 12]
    with torch.no_grad():
        assert acc[-1] == pytest.approx(float((net(X[60:]).argmax(1) == y[60:]).double().mean()))
    # the same loop by hand (full-batch AdamW from the same init) reaches the same weights
    ref = _net(2)
    opt = torch.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=0.0)
    for _ in range(12):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ref(X[:60]), y[:60]).backward()
        opt.step()
    np.testing.assert_allclose(net[0].weight.detach().numpy(), ref[0].weight.detach().numpy(), atol=1e-12)


def test_errors_name_the_argument():
    X, y = _data()
    net = _net()
    with pytest.raises(ValueError, match="every must be an int >= 1; got 0"):
        Monitor(net, X, every=0)
    with pytest.raises(ValueError, match=r"y_probe must hold one label per row of X_probe \(60\); got shape \(59,\)"):
        Monitor(net, X, y[:-1])
    bad = X.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="X_probe contains NaN"):
        Monitor(net, bad)
    with pytest.raises(ValueError, match="no Linear or Conv2d layer named 'conv1'"):
        Monitor(net, X, layers=["conv1"])
    with pytest.raises(ValueError, match="each entry of metrics must be one of .*; got 'cka'"):
        Monitor(net, X, metrics=("nfa", "cka"))
    with pytest.raises(ValueError, match="window must be an int >= k"):
        Monitor(net, X, window=2, k=2)
    with pytest.raises(ValueError, match="probe_every must be a positive multiple of every"):
        Monitor(net, X, every=2, probe_every=3)
    with pytest.raises(ValueError, match=r"detect_layer must be one of '0', '2', 'all'; got 'fc'"):
        Monitor(net, X, detect_layer="fc")
    with pytest.raises(ValueError, match="needs y_probe"):
        Monitor(net, X, metrics=("collapse",))
    with pytest.raises(ValueError, match=r"value \(a ratio of singular values\) must be a finite number > 0.0; got nan"):
        EigengapDetector().update(0, float("nan"))
    with pytest.raises(ValueError, match="direction must be"):
        EigengapDetector(direction="sideways")
    with pytest.raises(ValueError, match="patience must be an int >= 1"):
        EigengapDetector(patience=0)
    with pytest.raises(ValueError, match="metric 'nfa' has not been recorded"):
        Monitor(net, X).series("nfa")


def _tanh_net(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3)).double()


def test_monitor_nc4_uses_the_classifier_bias():
    # NC4 compares the network's own decision argmax(W h + b) with the nearest class mean; a large
    # bias changes the decision, so dropping it gives the agreement of a different classifier.
    net = _tanh_net(0)
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
    net = _tanh_net(1)
    gen = torch.Generator().manual_seed(2)
    X = torch.randn(40, 5, generator=gen, dtype=torch.float64)
    y = np.where(X[:, 0].numpy() > 0, 2, 0)
    mon = Monitor(net, X, y, metrics=("collapse",))
    mon.step()
    H = torch.tanh(net[0](X)).detach().numpy()
    assert mon.series("nc1", "2")[1][-1] == pytest.approx(fl.learning.neural_collapse(H, y)["nc1"], rel=1e-10)
