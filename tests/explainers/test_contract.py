"""The contract every registered explainer keeps, parametrised over ``fl.list_explainers()``.

- rows per model call never exceed ``batch_size`` (a forward pre-hook counts them);
- the same seed gives identical results; an int seed and a numpy Generator are both accepted;
- NaN input and NaN model output raise a clear ValueError;
- frozen weights (``requires_grad=False``) work;
- the model's parameters, requires_grad flags and train/eval modes are unchanged afterwards.

A newly registered explainer fails ``test_every_explainer_has_contract_settings`` until it gets an
entry in ``SETTINGS`` below: the settings that make it run on the small CNN of these tests.
Explainers whose ``requires.why_not`` refuses the CNN (tree_shap reads the trees of a scikit-learn
model) run the same checks on a model they apply to, from ``CASES``: rows per call are counted on
the estimator's ``predict_proba``, "unchanged" compares the pickled estimator, NaN output comes
from a ``predict_proba`` returning NaN and "frozen weights" (none in a tree model) just runs.
"""

from __future__ import annotations

import contextlib
import inspect
import pickle

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.explainers import explainer_class
from featurelens.explainers.sop import SumOfParts

SHAPE = (1, 8, 8)
# 2 x 2 patches: 16 players; 4 x 2 patches: 8 players (2^8 coalitions keep exact Shapley quick when
# batch_size=4 splits its table into many model calls).
_PIXEL = np.arange(64).reshape(8, 8)
PATCHES = (_PIXEL // 2 % 4 + 4 * (_PIXEL // 16)).reshape(SHAPE)
PATCHES8 = (_PIXEL % 8 // 2 + 4 * (_PIXEL // 32)).reshape(SHAPE)

#: Constructor settings per registered explainer, for the CNN below (inputs (n, 1, 8, 8)).
SETTINGS = {
    "saliency": {},
    "input_x_gradient": {},
    "integrated_gradients": {"n_steps": 8},
    "smoothgrad": {"n_samples": 5},
    "gradcam": {},
    "agop_local": {},
    "agop_global": {"data": "DATA"},
    "agop_weighted": {"data": "DATA"},
    "random": {},
    "wam": {"levels": 2},
    "wam_smoothgrad": {"levels": 2, "n_samples": 3},
    "wam_ig": {"levels": 2, "n_steps": 4},
    "occlusion": {"window": (1, 2, 2), "strides": (1, 2, 2)},
    "exact_shapley": {"groups": PATCHES8},
    "kernel_shap": {"groups": PATCHES, "budget": 40},
    "permutation_shap": {"groups": PATCHES, "budget": 64},
    "minshap": {"groups": PATCHES, "budget": 64},
    "spex": {"groups": PATCHES, "max_order": 2, "budget": 600},
    "tree_shap": {},
    # the DeepLift, layer and neuron families
    "deeplift": {}, "deeplift_shap": {"background": "DATA"}, "layer_deeplift": {"layer": "4"}, "layer_deeplift_shap": {"layer": "4", "background": "DATA"},
    "guided_backprop": {}, "deconvolution": {}, "gradient_shap": {"background": "DATA", "n_samples": 3, "stdevs": 0.1},
    "lrp": {"composite": "epsilon_plus_flat"},
    "feature_ablation": {}, "feature_permutation": {"groups": PATCHES}, "lime": {"groups": PATCHES, "n_samples": 40},
    "layer_integrated_gradients": {"layer": "4", "n_steps": 6}, "layer_gradient_x_activation": {"layer": "4"}, "layer_conductance": {"layer": "4", "n_steps": 5}, "neuron_gradient": {"layer": "4", "neuron": (1, 2, 3)}, "neuron_integrated_gradients": {"layer": "4", "neuron": (1, 2, 3), "n_steps": 6},
    "sop": {},  # runs on SopCase, a SumOfParts around the CNN
}

BATCH_SIZE = 4


def make_cnn() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 3, 3, padding=1),
        torch.nn.BatchNorm2d(3),
        torch.nn.ReLU(),
        torch.nn.Dropout(0.5),
        torch.nn.Conv2d(3, 4, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(16, 3),
    ).double()


def make_x(n: int = 3, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, *SHAPE))


def build(name: str, model, **overrides):
    kwargs = dict(SETTINGS[name])
    for key in ("data", "background"):  # "DATA": rows like the inputs, built for the case
        if isinstance(kwargs.get(key), str) and kwargs[key] == "DATA":
            kwargs[key] = case(name).make_x(6, seed=1)
    kwargs.update(overrides)
    return fl.explainer(name, model, **kwargs)


def accepts(name: str, param: str) -> bool:
    return param in inspect.signature(explainer_class(name).__init__).parameters


def snapshot(model: torch.nn.Module):
    return (
        {k: v.detach().clone() for k, v in model.state_dict().items()},
        [(n, p.requires_grad) for n, p in model.named_parameters()],
        [(n, m.training) for n, m in model.named_modules()],
    )


def assert_unchanged(model, before):
    state, flags, modes = before
    after_state, after_flags, after_modes = snapshot(model)
    assert after_flags == flags
    assert after_modes == modes
    for key, value in state.items():
        assert torch.equal(after_state[key], value), f"{key} changed"


class CnnCase:
    """The small CNN on (n, 1, 8, 8) inputs: the model of every explainer that applies to it."""

    make_model = staticmethod(make_cnn)
    make_x = staticmethod(make_x)
    snapshot = staticmethod(snapshot)
    assert_unchanged = staticmethod(assert_unchanged)

    @staticmethod
    @contextlib.contextmanager
    def count_rows(model, rows):
        handle = model.register_forward_pre_hook(lambda module, args: rows.append(args[0].shape[0]))
        try:
            yield
        finally:
            handle.remove()

    @staticmethod
    def nan_model():
        return _NaNHead().double()

    @staticmethod
    def freeze(model):
        for p in model.parameters():
            p.requires_grad_(False)


class TreeCase:
    """A GradientBoostingClassifier (3 classes, 5 features) fitted on a DataFrame, DataFrame rows."""

    columns = [f"x{i}" for i in range(5)]

    @classmethod
    def make_x(cls, n: int = 3, seed: int = 0):
        import pandas as pd

        return pd.DataFrame(np.random.default_rng(seed).normal(size=(n, 5)), columns=cls.columns)

    @classmethod
    def make_model(cls):
        from sklearn.ensemble import GradientBoostingClassifier

        x = cls.make_x(60, seed=7)
        y = np.digitize(x["x0"] + x["x1"] * x["x2"], [-0.5, 0.5])
        return GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0).fit(x, y)

    @staticmethod
    def snapshot(model):
        return pickle.dumps(model)

    @staticmethod
    def assert_unchanged(model, before):
        assert pickle.dumps(model) == before, "the estimator changed"

    @staticmethod
    @contextlib.contextmanager
    def count_rows(model, rows):
        method = model.predict_proba

        def counted(x):
            rows.append(len(x))
            return method(x)

        model.predict_proba = counted  # an instance attribute: the Model calls it
        try:
            yield
        finally:
            del model.predict_proba

    @classmethod
    def nan_model(cls):
        model = cls.make_model()
        model.predict_proba = lambda x: np.full((len(x), 3), np.nan)
        return model

    @staticmethod
    def freeze(model):
        pass  # a tree model has no weights to freeze


class SopCase(CnnCase):
    """A SumOfParts (3 groups) around the CNN: "sop" explains only models that explain themselves."""

    make_model = staticmethod(lambda: SumOfParts(make_cnn(), 3, input_shape=SHAPE))
    nan_model = staticmethod(lambda: SumOfParts(_NaNHead().double(), 3, input_shape=SHAPE))


#: The model each explainer is checked on: the CNN unless its ``requires`` refuses the CNN.
CASES = {"tree_shap": TreeCase, "sop": SopCase}


def case(name: str):
    return CASES.get(name, CnnCase)


def test_explainers_with_a_case_are_refused_on_the_cnn_and_apply_to_their_case():
    model = fl.Model(make_cnn())
    for name in CASES:
        assert explainer_class(name).requires.why_not(model, SHAPE) is not None, name
        model_here = fl.Model(CASES[name].make_model())
        assert explainer_class(name).requires.why_not(model_here, (5,)) is None, name


def test_every_explainer_has_contract_settings():
    missing = sorted(set(fl.list_explainers()) - set(SETTINGS))
    assert not missing, f"add contract settings for {missing} to SETTINGS in {__file__}"


NAMES = sorted(SETTINGS)

#: Explainers that read the model's structure and, for a given target, make no model call
#: (tree_shap reads the trees; the predicted class, target=None, costs one pass): the tests of
#: model calls ask them for the predicted class.
STRUCTURE_READERS = {"tree_shap"}


def call_target(name: str, target: int):
    return None if name in STRUCTURE_READERS else target


@pytest.mark.parametrize("name", NAMES)
def test_rows_per_call_within_batch_size_and_model_untouched(name):
    c = case(name)
    net = c.make_model()
    if isinstance(net, torch.nn.Module):
        net.train()  # the explainers must evaluate in eval mode and restore training mode afterwards
    before = c.snapshot(net)
    rows = []
    with c.count_rows(net, rows):
        e = build(name, net, batch_size=BATCH_SIZE).explain(c.make_x(5), target=call_target(name, 1))
    assert rows, "the model was never called"
    assert max(rows) <= BATCH_SIZE, f"{name} sent {max(rows)} rows in one call (batch_size={BATCH_SIZE})"
    assert e.values.shape[0] == 5 and np.isfinite(e.values).all()
    assert e.model_calls >= 1
    c.assert_unchanged(net, before)


@pytest.mark.parametrize("name", NAMES)
def test_a_model_keeps_its_batch_size(name):
    c = case(name)
    net = c.make_model()
    rows = []
    with c.count_rows(net, rows):
        model = fl.Model(net, batch_size=2)
        build(name, model).explain(c.make_x(3), target=call_target(name, 0))
    assert model.batch_size == 2 and max(rows) <= 2


@pytest.mark.parametrize("name", [n for n in NAMES if accepts(n, "seed")])
def test_same_seed_same_values_int_or_generator(name):
    net = case(name).make_model()
    x = case(name).make_x(2)
    a = build(name, net, seed=3).explain(x, target=2).values
    b = build(name, net, seed=3).explain(x, target=2).values
    np.testing.assert_array_equal(a, b)
    g1 = build(name, net, seed=np.random.default_rng(5)).explain(x, target=2).values
    g2 = build(name, net, seed=np.random.default_rng(5)).explain(x, target=2).values
    np.testing.assert_array_equal(g1, g2)
    assert np.isfinite(g1).all()


@pytest.mark.parametrize("name", [n for n in NAMES if accepts(n, "seed")])
@pytest.mark.parametrize("seed", ["0", -1, 1.5, True])
def test_bad_seed_is_refused_naming_seed(name, seed):
    with pytest.raises((TypeError, ValueError), match="seed"):
        build(name, case(name).make_model(), seed=seed).explain(case(name).make_x(1), target=0)


@pytest.mark.parametrize("name", NAMES)
def test_nan_input_is_refused(name):
    c = case(name)
    x = np.array(c.make_x(2))  # NaN is refused for every model, HistGradientBoosting included
    x.reshape(2, -1)[1, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        build(name, c.make_model()).explain(x, target=0)


class _NaNHead(torch.nn.Module):
    """The CNN with NaN added to its outputs (the convolutions stay, for Grad-CAM)."""

    def __init__(self):
        super().__init__()
        self.net = make_cnn()

    def forward(self, x):
        return self.net(x) + float("nan")


@pytest.mark.parametrize("name", NAMES)
def test_nan_model_output_is_refused(name):
    c = case(name)
    with pytest.raises(ValueError, match="NaN"):
        build(name, c.nan_model()).explain(c.make_x(2), target=call_target(name, 0))


@pytest.mark.parametrize("name", NAMES)
def test_frozen_weights_work(name):
    c = case(name)
    net = c.make_model()
    c.freeze(net)
    before = c.snapshot(net)
    e = build(name, net).explain(c.make_x(2), target=1)
    assert np.isfinite(e.values).all()
    c.assert_unchanged(net, before)


@pytest.mark.parametrize("name", NAMES)
def test_explain_refuses_output_and_unknown_keywords_naming_where_they_go(name):
    # Before: explain(x, output=...) surfaced "_ShapleyExplainer._attribute() got an unexpected
    # keyword argument 'output'" (and the like for every explainer).
    c = case(name)
    ex = build(name, c.make_model())
    x = c.make_x(2)
    if name == "tree_shap":  # its own explain() checks its keywords, with its own message
        with pytest.raises(TypeError, match=r"tree_shap's explain got unknown argument\(s\) output"):
            ex.explain(x, target=0, output="probability")
        return
    with pytest.raises(TypeError, match=rf"^explainer {name!r}: explain\(\) got unknown keyword argument\(s\) "
                                        r"output; it takes target, .*fl.explainer\(.*output=\.\.\.\)"):
        ex.explain(x, target=0, output="probability")
    with pytest.raises(TypeError, match=r"unknown keyword argument\(s\) nope; it takes target"):
        ex.explain(x, target=0, nope=1)
