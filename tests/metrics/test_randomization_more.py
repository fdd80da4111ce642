"""random_logit, efficient_mprt, smooth_mprt: planted cases, errors, and parity with Quantus 0.6
(fed the same class draws, the same noise and, for sMPRT, the same explain function)."""

import copy
import warnings

import numpy as np
import pytest
import torch
from scipy.stats import entropy, spearmanr

import featurelens as fl
from featurelens.metrics import _perturb
from featurelens.metrics import randomisation as R

N = 6


@pytest.fixture
def batch(small_cnn):
    x = np.random.default_rng(0).normal(size=(N, 1, 8, 8)).astype(np.float32)
    with torch.no_grad():
        y = small_cnn(torch.from_numpy(x)).argmax(1).numpy()
    return small_cnn.eval(), x, y


def _four_class_net():
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 8), torch.nn.Tanh(),
                               torch.nn.Linear(8, 4)).eval()


# -- analytic / brute-force checks ------------------------------------------------------------------------


def test_discrete_entropy_equals_numpy_histogram():
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.normal(size=(5, 50)), np.zeros((1, 50)), np.linspace(0, 1, 50)[None]])
    for bins in (3, 10, 100):
        ref = [entropy(np.histogram(row, bins=bins)[0]) for row in a]
        np.testing.assert_allclose(R.discrete_entropy(a, bins), ref, atol=1e-12)
    assert R.discrete_entropy(np.ones((1, 9)))[0] == 0.0


def test_ssim_equals_skimage():
    skm = pytest.importorskip("skimage.metrics")
    rng = np.random.default_rng(1)
    u, v = rng.normal(size=(4, 40)), rng.normal(size=(4, 40))
    v[0] = u[0]
    ref = [skm.structural_similarity(a, b, data_range=float(np.ptp(np.concatenate([a, b])))) for a, b in zip(u, v)]
    np.testing.assert_allclose(R._ssim_1d(u, v), ref, atol=1e-10)
    assert abs(R._ssim_1d(u, v)[0] - 1) < 1e-12


def test_random_logit_of_a_linear_model_compares_weight_rows():
    # saliency of class c is W[c]: the score is sim(W[y], W[y']) with y' from the seeded draw
    torch.manual_seed(0)
    lin = torch.nn.Linear(12, 4).double()
    w = lin.weight.detach().numpy()
    x = np.random.default_rng(0).normal(size=(5, 12))
    y = np.array([0, 1, 2, 3, 0])
    got = fl.metrics.randomisation.random_logit("saliency", x, target=y, seed=3, model=lin, similarity="pearson")
    j = np.random.default_rng(3).integers(0, 3, size=5)
    off = j + (j >= y)
    assert np.all(off != y)
    np.testing.assert_allclose(got, [np.corrcoef(w[a], w[b])[0, 1] for a, b in zip(y, off)], atol=1e-12)


def test_efficient_mprt_of_a_weight_free_explainer_is_zero(small_cnn):
    x = np.random.default_rng(1).normal(size=(3, 1, 8, 8)).astype(np.float32)
    r = R.efficient_mprt("random", x, model=small_cnn, explainer_params={"seed": 0})
    np.testing.assert_allclose(r["score"], 0.0)
    assert r["layers"] == ["6"] and r["complexity"].shape == (2, 3)
    r = R.efficient_mprt("random", x, model=small_cnn, explainer_params={"seed": 0}, every_layer=True,
                         layer_order="top_down")
    assert r["layers"] == ["6", "2", "0"] and r["complexity"].shape == (4, 3)


def test_efficient_mprt_brute_force_and_model_untouched(batch):
    model, x, y = batch
    before = copy.deepcopy(model.state_dict())
    r = R.efficient_mprt("saliency", x, model=model, target=y, seed=5, n_bins=20)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k])
    ref = copy.deepcopy(model)
    for mod in (ref[0], ref[2], ref[6]):
        torch.manual_seed(6)
        mod.reset_parameters()
    a0 = fl.explainer("saliency", model).explain(x, target=y).values.reshape(N, -1)
    a1 = fl.explainer("saliency", ref).explain(x, target=y).values.reshape(N, -1)
    h0 = [entropy(np.histogram(v, 20)[0]) for v in a0.astype(np.float64)]
    h1 = [entropy(np.histogram(v, 20)[0]) for v in a1.astype(np.float64)]
    np.testing.assert_allclose(r["complexity"], [h0, h1], atol=1e-9)
    np.testing.assert_allclose(r["score"], (np.array(h1) - h0) / h0, atol=1e-9)
    # an Explainer gives the same as its name
    r2 = R.efficient_mprt(fl.explainer("saliency", model), x, target=y, seed=5, n_bins=20)
    np.testing.assert_allclose(r2["score"], r["score"])


def test_smooth_mprt_brute_force(batch):
    model, x, y = batch
    n_s = 3
    r = R.smooth_mprt("saliency", x, model=model, target=y, seed=4, n_samples=n_s, layer_order="top_down")
    std = 0.1 * (x.reshape(N, -1).max(1) - x.reshape(N, -1).min(1))
    draws = list(_perturb.gaussian_draws(4, n_s - 1, x.shape, std)) + [np.zeros(x.shape)]

    def smooth(net):
        ex = fl.explainer("saliency", net)
        return np.abs(np.mean([ex.explain((x + d).astype(np.float32), target=y).values.reshape(N, -1)
                               .astype(np.float64) for d in draws], axis=0))

    a0 = smooth(model)
    ref = copy.deepcopy(model)
    rows = []
    for mod in (ref[6], ref[2], ref[0]):
        torch.manual_seed(5)
        mod.reset_parameters()
        a = smooth(ref)
        rows.append([spearmanr(a0[i], a[i])[0] for i in range(N)])
    np.testing.assert_allclose(r["similarity"], rows, atol=1e-6)
    assert r["layers"] == ["6", "2", "0"]
    # one sample: sMPRT is MPRT on the clean input
    one = R.smooth_mprt("saliency", x, model=model, target=y, seed=4, n_samples=1, layer_order="top_down")
    mprt = fl.metrics.model_randomization("saliency", x, model=model, target=y, seed=4)
    np.testing.assert_allclose(one["similarity"], mprt["similarity"], atol=1e-12)


def test_errors(batch):
    model, x, _ = batch
    ex = fl.explainer("saliency", model)
    with pytest.raises(ValueError, match="unknown explainer name"):
        R.efficient_mprt("salincy", x, model=model)
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        R.smooth_mprt("saliency", x, model=lambda z: z)
    with pytest.raises(ValueError, match="model must be None or the explainer's own model"):
        R.smooth_mprt(ex, x, model=copy.deepcopy(model))
    with pytest.raises(TypeError, match="explainer must be a registered explainer name or a featurelens Explainer"):
        R.efficient_mprt(3, x, model=model)
    with pytest.raises(ValueError, match="layer_order must be one of"):
        R.efficient_mprt("saliency", x, model=model, layer_order="sideways")
    with pytest.raises(ValueError, match="n_bins must be"):
        R.efficient_mprt("saliency", x, model=model, n_bins=0)
    with pytest.raises(ValueError, match="noise_std must be"):
        R.smooth_mprt("saliency", x, model=model, noise_std=-1.0)
    with pytest.raises(ValueError, match="n_samples must be"):
        R.smooth_mprt("saliency", x, model=model, n_samples=0)
    with pytest.raises(ValueError, match="similarity must be one of"):
        R.random_logit(ex, x, similarity="cosine")
    with pytest.raises(ValueError, match="attributions must hold one map per sample"):
        R.random_logit(ex, x, attributions=np.zeros((2, 64)))
    with pytest.raises(ValueError, match="NaN"):
        R.random_logit(ex, x, attributions=np.full(x.shape, np.nan))
    with pytest.raises(ValueError, match="NaN"):
        R.efficient_mprt("saliency", x, model=model, attributions=np.full(x.shape, np.nan))
    with pytest.raises(ValueError, match="at least 2 outputs"):
        R.random_logit("saliency", x, model=torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 1)))
    with pytest.raises(ValueError, match="ssim' needs maps of at least 7"):
        R.random_logit("saliency", np.ones((2, 4)), model=torch.nn.Linear(4, 3))
    with pytest.raises(TypeError, match="seed must be"):
        R.random_logit(ex, x, seed="1")


# -- parity with Quantus 0.6 ----------------------------------------------------------------------------


@pytest.fixture
def quantus():
    q = pytest.importorskip("quantus")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield q


def _saliency_func(model, inputs, targets, **kwargs):
    return fl.explainer("saliency", model).explain(np.asarray(inputs, np.float32), target=np.asarray(targets)).values


def test_random_logit_matches_quantus_on_the_same_draws(quantus, monkeypatch):
    pytest.importorskip("skimage")
    net = _four_class_net()
    x = np.random.default_rng(2).normal(size=(N, 1, 8, 8)).astype(np.float32)
    ex = fl.explainer("saliency", net)
    y = ex.model.predict(ex.model.to_tensor(x)).argmax(1).numpy()
    j = np.random.default_rng(7).integers(0, 3, size=N)
    monkeypatch.setattr(np.random, "randint", lambda *a, **k: j.copy())
    a = ex.explain(x, target=y).values
    q = quantus.RandomLogit(num_classes=4, normalise=False, disable_warnings=True)(
        model=net, x_batch=x, y_batch=y, a_batch=a.copy(), device="cpu", explain_func=_saliency_func)
    ours = R.random_logit(ex, x, target=y, seed=7, normalise=False)
    np.testing.assert_allclose(ours, np.asarray(q, np.float64), atol=1e-6)
    # normalise=True: Quantus divides by the batch maximum; per sample with batches of one
    q = []
    for i in range(N):
        monkeypatch.setattr(np.random, "randint", lambda *a, _i=i, **k: j[_i:_i + 1].copy())
        q.append(quantus.RandomLogit(num_classes=4, disable_warnings=True)(
            model=net, x_batch=x[i:i + 1], y_batch=y[i:i + 1], a_batch=None, device="cpu",
            explain_func=_saliency_func)[0])
    np.testing.assert_allclose(R.random_logit(ex, x, target=y, seed=7), q, atol=1e-6)


def test_efficient_mprt_matches_quantus(batch, quantus):
    model, x, y = batch
    metric = quantus.EfficientMPRT(seed=42, disable_warnings=True)
    q = metric(model=model, x_batch=x, y_batch=y, a_batch=None, device="cpu", explain_func=_saliency_func)
    ours = R.efficient_mprt("saliency", x, model=model, target=y, seed=42)
    np.testing.assert_allclose(ours["score"], np.asarray(q, np.float64), atol=1e-6)
    by_layer = list(metric.explanation_scores_by_layer.values())
    np.testing.assert_allclose(ours["complexity"], np.array(by_layer, np.float64), atol=1e-6)
    # layer by layer, bottom up
    metric = quantus.EfficientMPRT(seed=42, skip_layers=False, disable_warnings=True)
    metric(model=model, x_batch=x, y_batch=y, a_batch=None, device="cpu", explain_func=_saliency_func)
    ours = R.efficient_mprt("saliency", x, model=model, target=y, seed=42, every_layer=True)
    assert ours["layers"] == [k for k in metric.explanation_scores_by_layer if k != "orig"]
    np.testing.assert_allclose(ours["complexity"], np.array(list(metric.explanation_scores_by_layer.values())),
                               atol=1e-6)


def test_smooth_mprt_matches_quantus_on_the_same_noise(batch, quantus, monkeypatch):
    model, x, y = batch
    n_s = 3
    z = list(_perturb.gaussian_draws(11, n_s - 1, x.shape, np.ones(N)))
    count = {"k": 0}

    def randn(*shape):
        d = z[count["k"] % (n_s - 1)]  # the same draws for every model (featurelens's rule)
        count["k"] += 1
        return d.copy()

    monkeypatch.setattr(np.random, "randn", randn)
    # Quantus's SmoothMPRT explains the noisy copies with quantus.explain, not explain_func
    monkeypatch.setattr(quantus, "explain", lambda model, inputs, targets, **kw: _saliency_func(model, inputs, targets))
    ours = R.smooth_mprt("saliency", x, model=model, target=y, seed=11, n_samples=n_s)
    a0 = np.abs(np.mean([fl.explainer("saliency", model).explain((x + d * (0.1 * np.ptp(x.reshape(N, -1), 1))[
        :, None, None, None]).astype(np.float32), target=y).values for d in z + [np.zeros(x.shape)]], axis=0))
    metric = quantus.SmoothMPRT(seed=11, nr_samples=n_s, disable_warnings=True)
    q = metric(model=model, x_batch=x, y_batch=y, a_batch=a0, device="cpu", explain_func=_saliency_func)
    layers = [k for k in q if k != "original"]
    assert layers == ours["layers"]
    np.testing.assert_allclose(ours["similarity"], np.array([q[k] for k in layers], np.float64), atol=1e-6)
    np.testing.assert_allclose(q["original"], 1.0, atol=1e-6)
    # Quantus's average takes the "original" row in (it skips a key "orig" that does not exist)
    count["k"] = 0
    q_avg = quantus.SmoothMPRT(seed=11, nr_samples=n_s, return_average_correlation=True, disable_warnings=True)(
        model=model, x_batch=x, y_batch=y, a_batch=a0, device="cpu", explain_func=_saliency_func)
    n_l = len(layers)
    np.testing.assert_allclose(q_avg, (1.0 + n_l * ours["average"]) / (n_l + 1), atol=1e-6)


def test_an_explainer_instance_is_randomised_through_its_deep_copy(batch):
    # GradCAM holds a reference to a layer of its module: the deep copy must re-point it at the
    # randomised copy's layer, so the instance route equals the name route (rebuilt per layer).
    model, x, y = batch
    for name in ("saliency", "gradcam"):
        by_name = fl.metrics.model_randomization(name, x, model=model, target=y, seed=2)
        by_instance = fl.metrics.model_randomization(fl.explainer(name, model), x, target=y, seed=2)
        assert by_instance["layers"] == by_name["layers"]
        np.testing.assert_allclose(by_instance["similarity"], by_name["similarity"], atol=1e-12)
        e1 = R.efficient_mprt(name, x, model=model, target=y, seed=2, every_layer=True)
        e2 = R.efficient_mprt(fl.explainer(name, model), x, target=y, seed=2, every_layer=True)
        np.testing.assert_allclose(e1["complexity"], e2["complexity"], atol=1e-12)
    # the instance's own model is left alone
    ex = fl.explainer("saliency", model)
    before = ex.explain(x, target=y).values
    R.smooth_mprt(ex, x, target=y, n_samples=2)
    np.testing.assert_array_equal(ex.explain(x, target=y).values, before)


def test_an_explainer_brings_its_model_to_every_mprt(batch):
    # As for every metric that re-explains (random_logit, the stabilities): an Explainer needs no
    # model; its own is randomised, and the scores equal those of the name route.
    model, x, y = batch
    ex = fl.explainer("saliency", model)
    e_name = R.efficient_mprt("saliency", x, model=model, target=y, seed=5, n_bins=20)
    e_inst = R.efficient_mprt(ex, x=x, target=y, seed=5, n_bins=20)
    assert e_inst["layers"] == e_name["layers"]
    np.testing.assert_allclose(e_inst["complexity"], e_name["complexity"], atol=1e-12)
    s_name = R.smooth_mprt("saliency", x, model=model, target=y, seed=4, n_samples=2)
    s_inst = R.smooth_mprt(ex, x=x, target=y, seed=4, n_samples=2)
    np.testing.assert_allclose(s_inst["similarity"], s_name["similarity"], atol=1e-12)
    m_inst = fl.metrics.model_randomization(ex, x=x, target=y, seed=2)
    m_name = fl.metrics.model_randomization("saliency", x, model=model, target=y, seed=2)
    np.testing.assert_allclose(m_inst["similarity"], m_name["similarity"], atol=1e-12)


def test_mprt_calls_that_mix_up_model_and_x_say_so(batch):
    # The order is (explainer, x, target=None, *, model=None, ...); the old (explainer, model, x)
    # order lands a model (or None) where the batch goes, and says so.
    model, x, y = batch
    ex = fl.explainer("saliency", model)
    with pytest.raises(TypeError, match=r"efficient_mprt: x must be the batch to explain; got None\. The call is "
                                        r"efficient_mprt\(explainer, x, target=None, \*, model=None"):
        R.efficient_mprt(ex, None, x)
    with pytest.raises(TypeError, match=r"model_randomization: x must be the batch to explain; got a model "
                                        r"\(Sequential\).*model_randomization\('saliency', x, model=net\)"):
        fl.metrics.model_randomization(ex, model, x)
    with pytest.raises(ValueError, match=r"explainer='saliency' is a name: pass model="):
        R.smooth_mprt("saliency", model, x)  # a name with the old order: model= is missing
    with pytest.raises(ValueError, match=r"model must be None or the explainer's own model when explainer is an "
                                         r"Explainer \(it explains its own"):
        R.efficient_mprt(ex, x, model=torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 3)))
    with pytest.raises(ValueError, match="explainer_params must be empty"):
        R.smooth_mprt(ex, x, explainer_params={"abs": False})
    with pytest.raises(TypeError, match=r"missing 1 required positional argument: 'x'"):
        R.smooth_mprt(ex)
