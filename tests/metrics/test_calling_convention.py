"""The one calling convention of ``fl.metrics``, checked on every declared metric.

- maps and masks (localisation): ``name(a, masks, *, ...)`` (``focus(a, layout)`` on mosaics);
  complexity ``name(a, *, ...)``;
- the model on perturbed copies: ``name(model, x, a, target=None, *, ...)``;
- re-explaining: ``name(explainer, x, target=None, *, model=None, explainer_params=None, ...)``,
  where ``model=`` is accepted when it is the explainer's own model (its Model, or the module the
  Model wraps: the same values as without it) and refused, naming the rule, when it is another one;
  a registered name with ``model=`` gives the values of the Explainer built from it;
- the shared options have one spelling (no ``normalize``, ``n_steps``, ``noise`` for a standard
  deviation, ``ground_truth``, ``explainer_name``).
"""

from __future__ import annotations

import copy
import inspect

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.metrics import list_metrics

SPECS = {s.name: s for s in list_metrics()}
REEXPLAIN = [n for n, s in SPECS.items() if "explainer" in s.requires]
N = 6


def _params(fn):
    return list(inspect.signature(fn).parameters.values())


def _positional(fn):
    return [p.name for p in _params(fn) if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


@pytest.mark.parametrize("name", list(SPECS))
def test_signature_follows_the_convention(name):
    s = SPECS[name]
    fn = s.function
    params = _params(fn)
    assert not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params), name
    if "explainer" in s.requires:
        expected = ["explainer", "x", "target"]
    elif "model" in s.requires:
        expected = ["model", "x", "a", "target"]
    elif s.family == "complexity":
        expected = ["a"]
    elif name == "focus":
        expected = ["a", "layout"]
    else:
        assert s.family == "localisation" and "masks" in s.requires, name
        expected = ["a", "masks"]
    assert _positional(fn) == expected, f"{name}{inspect.signature(fn)}"
    sig = inspect.signature(fn).parameters
    if "target" in expected:
        assert sig["target"].default is None
    if "explainer" in s.requires:
        for kw in ("model", "explainer_params"):
            assert kw in sig and sig[kw].kind is inspect.Parameter.KEYWORD_ONLY and sig[kw].default is None, (name, kw)


def test_one_spelling_of_the_shared_options():
    banned = {"normalize": "normalise", "n_steps": "steps", "noise": "noise_std", "ground_truth": "masks",
              "explainer_name": "explainer", "attributions_": "a"}
    found = {(n, p.name) for n, s in SPECS.items() for p in _params(s.function) if p.name in banned}
    assert not found, found
    # every seed, baseline, groups, output and executor is keyword-only
    for n, s in SPECS.items():
        for p in _params(s.function):
            if p.name in ("seed", "baseline", "groups", "output", "executor", "normalise", "steps", "layer", "k"):
                assert p.kind is inspect.Parameter.KEYWORD_ONLY, (n, p.name)


def _cnn() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 3, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(3 * 6 * 6, 3)).double()


#: Small budgets, and what a metric needs beyond (explainer, x, target).
EXTRA = {
    "relative_representation_stability": {"layer": "0", "n_samples": 3},
    "relative_input_stability": {"n_samples": 3},
    "relative_output_stability": {"n_samples": 3},
    "max_sensitivity": {"n_samples": 3},
    "avg_sensitivity": {"n_samples": 3},
    "local_lipschitz": {"n_samples": 3},
    "smooth_mprt": {"n_samples": 2},
    "continuity": {"steps": 4},
}


def _values(out):
    if isinstance(out, dict):
        return {k: np.asarray(v) for k, v in out.items() if k != "layers"}, out.get("layers")
    return np.asarray(out), None


def _same(u, v):
    (u, lu), (v, lv) = _values(u), _values(v)
    assert lu == lv
    if isinstance(u, dict):
        assert u.keys() == v.keys()
        for k in u:
            np.testing.assert_array_equal(u[k], v[k])
    else:
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("name", REEXPLAIN)
def test_the_explainers_own_model_is_accepted_and_another_refused(name):
    fn = SPECS[name].function
    net = _cnn()
    model = fl.Model(net, batch_size=4)
    x = np.random.default_rng(0).normal(size=(N, 1, 8, 8))
    t = np.arange(N) % 3
    ex = fl.explainer("saliency", model)
    kw = EXTRA.get(name, {})
    ref = fn(ex, x, t, **kw)
    _same(fn(ex, x, t, model=model, **kw), ref)  # its Model
    _same(fn(ex, x, t, model=net, **kw), ref)  # the module its Model wraps
    _same(fn("saliency", x, t, model=model, **kw), ref)  # a name, built on the model
    with pytest.raises(ValueError, match="model must be None or the explainer's own model"):
        fn(ex, x, t, model=copy.deepcopy(net), **kw)  # equal weights, another module
    with pytest.raises(ValueError, match="model must be None or the explainer's own model"):
        fn(ex, x, t, model=fl.Model(net, batch_size=4), **kw)  # another Model around the same module
    with pytest.raises(ValueError, match="is a name: pass model="):
        fn("saliency", x, t, **kw)


def test_sufficiency_takes_target_only_as_none():
    net = _cnn()
    x = np.random.default_rng(0).normal(size=(N, 1, 8, 8))
    a = np.random.default_rng(1).normal(size=x.shape)
    np.testing.assert_array_equal(fl.metrics.sufficiency(net, x, a, None), fl.metrics.sufficiency(net, x, a))
    with pytest.raises(ValueError, match="target must be None for sufficiency"):
        fl.metrics.sufficiency(net, x, a, 1)


def test_old_positional_orders_are_refused():
    net = _cnn()
    x = np.random.default_rng(0).normal(size=(N, 1, 8, 8))
    a = np.random.default_rng(1).normal(size=x.shape)
    masks = np.zeros((N, 8, 8), bool)
    masks[:, 2:6, 2:6] = True
    with pytest.raises(TypeError):
        fl.metrics.deletion_curve(net, x, a, None, 10)  # steps was the 5th positional
    with pytest.raises(TypeError):
        fl.metrics.faithfulness_correlation(net, x, a, None, 10)  # n_subsets was the 4th
    with pytest.raises(TypeError):
        fl.metrics.top_k_intersection(a, masks, 5)  # k is keyword-only
    with pytest.raises(TypeError):
        fl.metrics.precision_at_k(attributions=a[:, 0], ground_truth=masks)
