"""The Explanation knows its features: feature names, the explained rows, the
base values the attributions add up from, the output units and one value per group, all saved and
loaded through the schema check.

Expected numbers come from the model itself (a linear model: f(x) = W x + b), never from the code
under test: base + sum(values) = f(x) (efficiency / completeness), v(empty) = f(baseline) or the
mean of f over the background, and group values add up the same way."""

import json

import numpy as np
import pandas as pd
import pytest
import torch

import featurelens as fl
from featurelens._serialization import SavedFileError


def _linear(d=4, k=3, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Linear(d, k).double()


def _f(net, x):
    with torch.no_grad():
        return net(torch.as_tensor(np.asarray(x, dtype=np.float64))).numpy()


X = np.random.default_rng(1).normal(size=(5, 4))
NAMES = ["age", "income", "height", "weight"]


def test_feature_names_from_dataframe_columns_and_from_the_argument():
    net = _linear()
    e = fl.explainer("exact_shapley", net, baseline=0.0).explain(pd.DataFrame(X, columns=NAMES))
    assert e.feature_names == NAMES
    np.testing.assert_array_equal(e.data, X)
    e = fl.explainer("saliency", net).explain(X, feature_names=NAMES)
    assert e.feature_names == NAMES and e.base_values is None and e.output == "raw"
    np.testing.assert_array_equal(e.data, X)
    # Given names win over the columns.
    e = fl.explainer("saliency", net).explain(pd.DataFrame(X, columns=NAMES), feature_names=list("abcd"))
    assert e.feature_names == list("abcd")
    assert fl.explainer("saliency", net).explain(X).feature_names is None


def test_feature_names_of_the_wrong_length_or_kind_are_refused():
    ex = fl.explainer("saliency", _linear())
    with pytest.raises(ValueError, match="feature_names must name each of the 4 elements"):
        ex.explain(X, feature_names=["a", "b"])
    with pytest.raises(TypeError, match="feature_names"):
        ex.explain(X, feature_names="abcd")
    with pytest.raises(TypeError, match="feature_names must hold str"):
        ex.explain(X, feature_names=[0, 1, 2, 3])
    with pytest.raises(ValueError, match="distinct"):
        ex.explain(X, feature_names=["a", "a", "b", "c"])


@pytest.mark.parametrize("name", ["exact_shapley", "kernel_shap", "permutation_shap", "spex"])
def test_shapley_base_values_are_the_empty_coalition_and_add_up_to_f_x(name):
    net = _linear()
    background = np.random.default_rng(2).normal(size=(6, 4))
    e = fl.explainer(name, net, background=background).explain(X)
    rows = np.arange(len(X))
    # v(empty) with a background: the mean model output over the background rows.
    np.testing.assert_allclose(e.base_values, _f(net, background).mean(0)[e.target], atol=1e-10)
    np.testing.assert_allclose(e.base_values + e.values.sum(1), _f(net, X)[rows, e.target], atol=1e-9)
    assert e.params["base_values"] == e.base_values.tolist()  # still where it has always been


def test_integrated_gradients_base_value_is_f_of_the_baseline():
    net = _linear()
    baseline = np.full(4, 0.5)
    e = fl.explainer("integrated_gradients", net, baseline=baseline).explain(X)
    np.testing.assert_allclose(e.base_values, _f(net, baseline[None])[0][e.target], atol=1e-12)
    np.testing.assert_allclose(e.base_values + e.values.sum(1), _f(net, X)[np.arange(5), e.target], atol=1e-9)


def test_several_targets_per_sample_give_base_values_per_pair():
    net = _linear()
    target = np.array([[0, 2]] * len(X))
    e = fl.explainer("exact_shapley", net, baseline=0.0).explain(X, target=target)
    assert e.values.shape == (5, 2, 4) and e.base_values.shape == (5, 2) and e.data.shape == (5, 4)
    f = _f(net, X)
    np.testing.assert_allclose(e.base_values + e.values.sum(-1), f[:, [0, 2]], atol=1e-9)
    np.testing.assert_allclose(e.base_values, np.tile(_f(net, np.zeros((1, 4)))[0, [0, 2]], (5, 1)), atol=1e-12)


def test_groups_carry_one_value_per_group_with_names():
    # A grouped explanation used to repeat only each group's value over its columns, so
    # summing values counted a two-column group twice; group_values holds it once.
    net = _linear()
    groups = np.array([1, 1, 0, 2])
    ex = fl.explainer("exact_shapley", net, baseline=0.0, groups=groups)
    e = ex.explain(pd.DataFrame(X, columns=NAMES), group_names=["height", "age+income", "weight"])
    assert e.groups == ["height", "age+income", "weight"] and e.group_values.shape == (5, 3)
    assert e.values.shape == X.shape  # backward compatible: shaped like x
    np.testing.assert_array_equal(e.group_values[:, 1], e.values[:, 0])
    np.testing.assert_array_equal(e.values[:, 0], e.values[:, 1])
    f = _f(net, X)[np.arange(5), e.target]
    np.testing.assert_allclose(e.base_values + e.group_values.sum(1), f, atol=1e-10)
    assert not np.allclose(e.base_values + e.values.sum(1), f)  # the spread map double-counts
    # A group's value is the Shapley value of a 3-player game: for a linear model (zero baseline)
    # it is the group's own contribution, sum over its columns of W[t, j] x_j.
    w = net.weight.detach().numpy()
    contrib = w[e.target] * X
    np.testing.assert_allclose(e.group_values[:, 1], contrib[:, 0] + contrib[:, 1], atol=1e-10)
    # Without names: the sorted labels.
    assert ex.explain(X).groups == [0, 1, 2]
    with pytest.raises(ValueError, match="group_names must name each of the 3 groups"):
        ex.explain(X, group_names=["a", "b"])
    with pytest.raises(ValueError, match="group_names is for explainers built with groups"):
        fl.explainer("exact_shapley", net, baseline=0.0).explain(X, group_names=["a"])


def test_occlusion_groups_give_group_values_too():
    net = _linear()
    e = fl.explainer("occlusion", net, groups=np.array([0, 0, 1, 1])).explain(X)
    assert e.groups == [0, 1]
    np.testing.assert_array_equal(e.group_values, e.values[:, [0, 2]])


def test_all_fields_round_trip_through_a_saved_file(tmp_path):
    net = _linear()
    ex = fl.explainer("exact_shapley", net, baseline=0.0, groups=np.array([0, 0, 1, 2]))
    e = ex.explain(pd.DataFrame(X, columns=NAMES), group_names=["a", "b", "c"])
    back = fl.load_explanation(e.save(tmp_path / "e"))
    assert back.feature_names == NAMES and back.groups == ["a", "b", "c"] and back.output == "raw"
    for name in ("values", "data", "base_values", "group_values", "target"):
        np.testing.assert_array_equal(getattr(back, name), getattr(e, name))
    ints = fl.load_explanation(ex.explain(X).save(tmp_path / "ints"))
    assert ints.groups == [0, 1, 2] and ints.feature_names is None


def test_files_without_the_new_fields_still_load(tmp_path):
    # A file as written by older versions: meta without feature_names/output/groups, no new arrays.
    meta = {"format": "featurelens.explanation/1", "method": "saliency", "params": {}, "model_calls": 3,
            "seconds": 0.1}
    path = tmp_path / "old.npz"
    np.savez(path, values=np.ones((2, 3)), target=np.array([0, 1]), meta=np.array(json.dumps(meta)))
    e = fl.load_explanation(path)
    assert e.feature_names is None and e.data is None and e.base_values is None
    assert e.output == "raw" and e.groups is None and e.group_values is None


def _tamper(tmp_path, meta_edit=None, array_edit=None):
    net = _linear()
    e = fl.explainer("exact_shapley", net, baseline=0.0, groups=np.array([0, 0, 1, 2])).explain(X, feature_names=NAMES)
    good = e.save(tmp_path / "good")
    with np.load(good, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(str(arrays["meta"]))
    if meta_edit:
        meta_edit(meta)
    if array_edit:
        array_edit(arrays)
    arrays["meta"] = np.array(json.dumps(meta))
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("meta_edit, array_edit, words", [
    (lambda m: m.update(feature_names="age"), None, "'feature_names'"),
    (lambda m: m.update(feature_names=["a", 1, "b", "c"]), None, "'feature_names'"),
    (lambda m: m.update(feature_names=["a", "b"]), None, "'feature_names'"),
    (lambda m: m.update(feature_names=["a", "a", "b", "c"]), None, "'feature_names'"),
    (lambda m: m.update(output="probabilities"), None, "'output'"),
    (lambda m: m.update(groups=[0, "b", 2]), None, "'groups'"),
    (lambda m: m.update(groups=[0, 1]), None, "'group_values'"),
    (lambda m: m.update(groups=None), None, "'group_values'"),
    (None, lambda a: a.update(base_values=np.zeros(3)), "'base_values'"),
    (None, lambda a: a.update(base_values=np.array(["x"] * 5)), "'base_values'"),
    (None, lambda a: a.update(data=np.zeros((2, 4))), "'data'"),
    (None, lambda a: a.pop("group_values"), "'groups'"),
    (None, lambda a: a.update(group_values=np.zeros((5, 4))), "'group_values'"),
])
def test_tampered_fields_raise_saved_file_error_naming_the_field(tmp_path, meta_edit, array_edit, words):
    path = _tamper(tmp_path, meta_edit, array_edit)
    with pytest.raises(SavedFileError) as info:
        fl.load_explanation(path)
    assert words in str(info.value) and "bad.npz" in str(info.value)


def test_constructor_checks_the_fields():
    with pytest.raises(ValueError, match="output"):
        fl.Explanation(np.zeros((2, 3)), "m", output="probabilities")
    with pytest.raises(ValueError, match="base_values"):
        fl.Explanation(np.zeros((2, 3)), "m", base_values=np.zeros(3))
    with pytest.raises(ValueError, match="feature_names must name each of the 3"):
        fl.Explanation(np.zeros((2, 3)), "m", data=np.zeros((2, 3)), feature_names=["a"])
    with pytest.raises(ValueError, match="together"):
        fl.Explanation(np.zeros((2, 3)), "m", groups=["a"])
    e = fl.Explanation(np.zeros((2, 3)), "m")
    assert (e.feature_names, e.data, e.base_values, e.output, e.groups, e.group_values) == (
        None, None, None, "raw", None, None)
