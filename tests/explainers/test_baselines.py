"""One baseline policy: what ``baseline=None`` means is declared once per explainer class
(``Explainer.default_baseline``, applied by ``featurelens._validation.resolve_baseline``), and the
baseline used is recorded one way, ``Explanation.params["baseline"]`` (``baseline_record``).

Parametrised over every registered explainer that takes a ``baseline``, so a new one is checked
as soon as it declares ``"baseline"`` in ``accepts``.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens._validation import BASELINE_DEFAULTS, baseline_record, default_baseline, resolve_baseline
from featurelens.explainers import Explainer, explainer_class
from featurelens.games import MaskedModel
from featurelens.parallel import ThreadExecutor

SHAPE = (1, 4, 4)
#: 2 x 2 patches of the 4 x 4 image: 4 players (exact Shapley and SPEX stay small).
PATCHES = (np.arange(16).reshape(4, 4) // 2 % 2 + 2 * (np.arange(16).reshape(4, 4) // 8)).reshape(SHAPE)

#: Settings that make each baseline-taking explainer quick on the small CNN (inputs (n, 1, 4, 4))
#: and on the small MLP (tabular rows (n, 4)); "groups" only for the image.
SETTINGS = {
    "integrated_gradients": {"n_steps": 4},
    "wam_ig": {"levels": 1, "n_steps": 3},
    "layer_integrated_gradients": {"layer": "2", "n_steps": 3},
    "layer_conductance": {"layer": "2", "n_steps": 3},
    "neuron_integrated_gradients": {"layer": "2", "neuron": (0, 1, 1), "n_steps": 3},
    "deeplift": {},
    "layer_deeplift": {"layer": "2"},
    "occlusion": {},
    "feature_ablation": {},
    "exact_shapley": {},
    "kernel_shap": {"budget": 16},
    "permutation_shap": {"budget": 16},
    "minshap": {"budget": 16},
    "lime": {"n_samples": 12},
    "spex": {"max_order": 2, "budget": 300},
}
IMAGE_ONLY = {"layer_integrated_gradients", "layer_conductance", "neuron_integrated_gradients", "layer_deeplift",
              "wam_ig"}
GROUPED = {"exact_shapley", "kernel_shap", "permutation_shap", "minshap", "lime", "spex"}

TAKES_BASELINE = [n for n in fl.list_explainers() if "baseline" in explainer_class(n).accepts]


def _cnn():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 2, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(2, 2, 3, padding=1), torch.nn.Tanh(),
        torch.nn.Flatten(), torch.nn.Linear(32, 3),
    ).double().eval()


def _mlp():
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 2)).double().eval()


def _image(n=2, seed=0):
    return np.random.default_rng(seed).normal(size=(n, *SHAPE))


def _rows(n=3, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 4))


def _build(name, model, image=True, **kw):
    settings = dict(SETTINGS[name])
    if image and name in GROUPED:
        settings["groups"] = PATCHES
    settings.update(kw)
    return fl.explainer(name, model, **settings)


def _per_call(name) -> bool:
    return "baseline" in inspect.signature(explainer_class(name)._attribute).parameters


def test_every_baseline_explainer_has_settings_here():
    assert set(TAKES_BASELINE) == set(SETTINGS), "add the new explainer's settings to SETTINGS"


@pytest.mark.parametrize("name", fl.list_explainers())
def test_the_policy_is_declared_next_to_requires(name):
    cls = explainer_class(name)
    takes = "baseline" in inspect.signature(cls.__init__).parameters
    assert takes == ("baseline" in cls.accepts), "a baseline argument must be declared in accepts"
    # Explainers declare one of the two policies that need no data (feature_means is the audit's).
    assert cls.default_baseline in ("zeros", "refuse_tabular")
    assert cls.default_baseline in BASELINE_DEFAULTS


def test_the_families_declare_their_policies():
    refuse = {"exact_shapley", "kernel_shap", "permutation_shap", "minshap", "lime", "spex", "feature_ablation"}
    for name in TAKES_BASELINE:
        want = "refuse_tabular" if name in refuse else "zeros"
        assert explainer_class(name).default_baseline == want, name
    assert Explainer.default_baseline == "zeros"
    assert MaskedModel.default_baseline == "zeros"


# ------------------------------------------------------------------------------------------------
# None means what the class declares


@pytest.mark.parametrize("name", TAKES_BASELINE)
def test_none_on_images_is_the_zero_baseline(name):
    # Both policies mean x' = 0 on images: None gives bitwise the values of an explicit zero array
    # (a different fill gives other values: checked below).
    net, x = _cnn(), _image()
    default = _build(name, net).explain(x, target=1)
    zeros = _build(name, net, baseline=np.zeros(SHAPE)).explain(x, target=1)
    np.testing.assert_array_equal(default.values, zeros.values)
    other = _build(name, net, baseline=np.random.default_rng(9).normal(size=SHAPE)).explain(x, target=1)
    assert not np.array_equal(default.values, other.values)


@pytest.mark.parametrize("name", [n for n in TAKES_BASELINE if n not in IMAGE_ONLY])
def test_none_on_tabular_rows_follows_the_declared_policy(name):
    net, x = _mlp(), _rows()
    policy = explainer_class(name).default_baseline
    if policy == "refuse_tabular":
        with pytest.raises(ValueError, match=rf"{name} on tabular data .* needs background= or baseline="):
            _build(name, net, image=False).explain(x, target=0)
        with pytest.raises(ValueError, match=rf"{name} on tabular data"):
            default_baseline(policy, x, method=name)
    else:
        default = _build(name, net, image=False).explain(x, target=0)
        zeros = _build(name, net, image=False, baseline=0.0).explain(x, target=0)
        np.testing.assert_array_equal(default.values, zeros.values)
        assert default.params["baseline"] == "zeros"


def test_integrated_gradients_default_is_the_zero_input():
    # Completeness on a linear model, f(x) = w.x + c: sum(a) = f(x) - f(x') exactly (to the
    # quadrature, exact for a linear integrand); with x' = 0 that is w.x.
    torch.manual_seed(2)
    lin = torch.nn.Linear(4, 2).double().eval()
    x = _rows(3, seed=4)
    e = fl.explainer("integrated_gradients", lin, n_steps=2).explain(x, target=1)
    w = lin.weight.detach().numpy()[1]
    np.testing.assert_allclose(e.values.sum(1), x @ w, atol=1e-12)
    np.testing.assert_allclose(e.base_values, lin.bias.detach().numpy()[1], atol=1e-12)


def test_masked_model_none_is_zeros():
    net, x = _mlp(), _rows(1)[0]
    game = MaskedModel(net, x, target=0)
    empty = game(np.zeros((1, 4), dtype=bool))[0]
    with torch.no_grad():
        f0 = float(net(torch.zeros(1, 4, dtype=torch.float64))[0, 0])
    assert empty == pytest.approx(f0, abs=1e-12)


def test_default_baseline_policies():
    x_img, x_tab = _image(), _rows(5, seed=3).astype(np.float32)
    for policy in BASELINE_DEFAULTS:
        assert default_baseline(policy, x_img) == 0.0  # images and signals: zeros under every policy
    assert default_baseline("zeros", x_tab) == 0.0
    means = default_baseline("feature_means", x_tab)
    brute = [sum(float(r[j]) for r in x_tab) / len(x_tab) for j in range(4)]
    assert means.dtype == np.float32 and means.shape == (4,)
    np.testing.assert_allclose(means, brute, rtol=1e-6)
    data = _rows(7, seed=9)
    np.testing.assert_allclose(default_baseline("feature_means", x_tab, data=data), data.sum(0) / 7, rtol=1e-12)
    with pytest.raises(ValueError, match="default_baseline must be one of"):
        default_baseline("mean", x_tab)
    with pytest.raises(ValueError, match="this method on tabular data"):
        default_baseline("refuse_tabular", x_tab)


def test_resolve_baseline_applies_the_policy():
    x = torch.as_tensor(_rows(3, seed=5))
    assert torch.equal(resolve_baseline(None, x), torch.zeros_like(x))
    means = resolve_baseline(None, x, default="feature_means")
    np.testing.assert_allclose(means.numpy(), np.broadcast_to(x.numpy().mean(0), x.shape), rtol=1e-12)
    with pytest.raises(ValueError, match="kernel_shap on tabular data"):
        resolve_baseline(None, x, default="refuse_tabular", method="kernel_shap")


def test_the_audit_fill_is_the_feature_means_policy():
    from featurelens._audit.core import _baseline

    X = _rows(6, seed=8).astype(np.float32)
    np.testing.assert_array_equal(_baseline(None, X), default_baseline("feature_means", X))
    np.testing.assert_allclose(_baseline(None, X), X.astype(np.float64).mean(0), rtol=1e-6)
    assert _baseline(None, _image(4)) == 0.0
    assert baseline_record(None, "feature_means", X) == "feature_means"
    assert baseline_record(None, "feature_means", _image(4)) == "zeros"
    assert baseline_record(np.ones(4), "feature_means", X) == "array"


# ------------------------------------------------------------------------------------------------
# one record


def test_baseline_record_forms():
    assert baseline_record(None) == "zeros" and baseline_record(None, "refuse_tabular") == "zeros"
    for number in (0, 0.5, np.float32(0.25), np.int64(2), np.array(1.5), torch.tensor(-1.0)):
        rec = baseline_record(number)
        assert type(rec) is float and rec == float(number)
    for array in (np.zeros(SHAPE), np.zeros((2, *SHAPE)), torch.zeros(SHAPE), [0.0, 1.0]):
        assert baseline_record(array) == "array"


@pytest.mark.parametrize("name", TAKES_BASELINE)
def test_the_record_is_the_one_form(name):
    net, x = _cnn(), _image()
    arr = np.random.default_rng(1).normal(size=SHAPE) * 0.1
    cases = [(None, "zeros"), (0.3, 0.3), (np.float32(0.25), 0.25), (arr, "array")]
    for given, want in cases:
        kw = {} if given is None else {"baseline": given}
        ex = _build(name, net, **kw)
        e = ex.explain(x, target=1)
        assert e.params["baseline"] == want and type(e.params["baseline"]) is type(want), (given, e.params["baseline"])
        assert ex.params()["baseline"] == want  # the constructor's provenance (and repr) agree
        # Several targets per row and rows in parts record the same.
        assert ex.explain(x, target=np.array([[0, 1], [2, 1]])).params["baseline"] == want
        assert ex.explain(x, target=1, executor=ThreadExecutor(2)).params["baseline"] == want
    if _per_call(name):
        # The baseline of one call is the one recorded (occlusion recorded its constructor's).
        ex = _build(name, net)
        assert ex.explain(x, target=1, baseline=0.3).params["baseline"] == 0.3
        assert ex.explain(x, target=1, baseline=arr).params["baseline"] == "array"
        assert ex.explain(x, target=1).params["baseline"] == "zeros"


@pytest.mark.parametrize("name", [n for n in TAKES_BASELINE if "background" in inspect.signature(
    explainer_class(n).__init__).parameters])
def test_a_background_fill_records_no_baseline(name):
    net, x = _mlp(), _rows()
    e = _build(name, net, image=False, background=_rows(4, seed=2)).explain(x, target=0)
    assert "baseline" not in e.params and e.params["fill"] == "background"


def test_deeplift_shap_records_its_background_not_a_baseline():
    net, x = _cnn(), _image()
    e = fl.explainer("deeplift_shap", net, background=_image(3, seed=5)).explain(x, target=0)
    assert "baseline" not in e.params and e.params["n_background"] == 3


# ------------------------------------------------------------------------------------------------
# bad baselines are refused, naming the argument


BAD = [
    (float("nan"), ValueError, "baseline must be a finite number"),
    (np.full(SHAPE, np.inf), ValueError, "baseline contains NaN or inf"),
    ("zeros", TypeError, "baseline must be None, a number or an array"),
    (True, TypeError, "baseline must be None, a number or an array"),
    (np.array(["a"] * 16).reshape(SHAPE), TypeError, "baseline must hold numbers"),
    (np.zeros((3, 3)), ValueError, r"baseline must be a scalar, shaped like one input \(1, 4, 4\).*got shape \(3, 3\)"),
]


@pytest.mark.parametrize("name", TAKES_BASELINE)
@pytest.mark.parametrize("bad, error, match", BAD, ids=["nan", "inf-array", "str", "bool", "str-array", "shape"])
def test_a_bad_baseline_is_refused_naming_it(name, bad, error, match):
    net, x = _cnn(), _image()
    with pytest.raises(error, match=match):
        _build(name, net, baseline=bad).explain(x, target=1)
    if _per_call(name):
        with pytest.raises(error, match=match):
            _build(name, net).explain(x, target=1, baseline=bad)


# ------------------------------------------------------------------------------------------------
# the metrics use the same resolver


def test_metrics_resolve_baselines_like_the_explainers():
    net, x = _cnn(), _image()
    a = np.random.default_rng(3).normal(size=x.shape)
    none = fl.metrics.completeness(net, x, a, target=1, baseline=None)
    zero = fl.metrics.completeness(net, x, a, target=1, baseline=np.zeros(SHAPE))
    np.testing.assert_array_equal(none, zero)
    # completeness = sum(a) - (f(x) - f(x')), computed by hand for x' = 0.5.
    with torch.no_grad():
        f = net(torch.as_tensor(x))[:, 1].numpy()
        f_b = net(torch.full((2, *SHAPE), 0.5, dtype=torch.float64))[:, 1].numpy()
    gap = fl.metrics.completeness(net, x, a, target=1, baseline=0.5)
    np.testing.assert_allclose(gap, a.reshape(2, -1).sum(1) - (f - f_b), atol=1e-10)
    with pytest.raises(ValueError, match="baseline must be a finite number"):
        fl.metrics.deletion_curve(net, x, a, target=1, baseline=float("nan"))
    with pytest.raises(ValueError, match=r"baseline must be a scalar, shaped like one input"):
        fl.metrics.completeness(net, x, a, target=1, baseline=np.zeros((3, 3)))
