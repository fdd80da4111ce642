"""Explanation indexing as shap users write it: ``e[0]``, ``e[2:5]``, ``e[[0, 3]]``, ``e[mask]``,
``e[:, "age"]``, ``e[:, ["age", "bmi"]]``, ``e[:, 3]``, ``e[0, "age"]``.

The expected values are numpy's own slicing of the arrays the Explanation was built from, the
model itself (a linear model: base + sum(values) = f(x) for exact Shapley values) and shap's
``Explanation`` indexing of the very same arrays."""

import numpy as np
import pandas as pd
import pytest
import torch

import featurelens as fl
from featurelens import load_explanation
from featurelens.explanation import Explanation

NAMES = ["age", "bmi", "bp", "s1", "s2"]


def _batch(n=7, d=5, seed=0):
    rng = np.random.default_rng(seed)
    arrays = {
        "values": rng.normal(size=(n, d)),
        "data": rng.normal(size=(n, d)),
        "base_values": rng.normal(size=n),
        "target": rng.integers(0, 3, size=n),
        "outputs": rng.normal(size=(n, 3)),  # an extra array with one entry per row
        "scale": rng.normal(size=(4,)),  # an extra array that is not per row
    }
    e = Explanation(values=arrays["values"], method="kernel_shap", params={"budget": 64, "seed": 3},
                    target=arrays["target"], model_calls=123, seconds=0.5, data=arrays["data"],
                    base_values=arrays["base_values"], feature_names=NAMES, output="probability",
                    extra={"outputs": arrays["outputs"], "scale": arrays["scale"]})
    return e, arrays


def _same_provenance(part, whole):
    assert part.method == whole.method and part.params == whole.params
    assert part.model_calls == whole.model_calls and part.seconds == whole.seconds and part.output == whole.output


def test_one_row_has_the_row_shape_and_its_scalar_base_value():
    e, a = _batch()
    r = e[3]
    assert r.values.shape == (5,)
    np.testing.assert_array_equal(r.values, a["values"][3])
    np.testing.assert_array_equal(r.data, a["data"][3])
    assert np.ndim(r.base_values) == 0 and float(r.base_values) == a["base_values"][3]
    assert int(r.target) == a["target"][3]
    np.testing.assert_array_equal(r.extra["outputs"], a["outputs"][3])
    np.testing.assert_array_equal(r.extra["scale"], a["scale"])  # not per row: kept whole
    assert r.feature_names == NAMES
    _same_provenance(r, e)
    np.testing.assert_array_equal(e[-1].values, a["values"][-1])  # negative rows count from the end


@pytest.mark.parametrize("key", [slice(2, 5), [0, 3], [4, 4, 1], np.array([6, -7]), "mask", slice(None, None, -2)])
def test_batches_of_rows_slice_every_per_row_field_alike(key):
    e, a = _batch()
    if isinstance(key, str):
        key = a["base_values"] > 0
    part = e[key]
    for name in ("values", "data", "base_values", "target"):
        np.testing.assert_array_equal(getattr(part, name), a[name][key])
    np.testing.assert_array_equal(part.extra["outputs"], a["outputs"][key])
    np.testing.assert_array_equal(part.extra["scale"], a["scale"])
    assert len(part) == len(a["values"][key]) and part.feature_names == NAMES
    _same_provenance(part, e)


def test_features_by_name_and_by_position():
    e, a = _batch()
    age = e[:, "age"]
    assert age.values.shape == (7,) and age.feature_names == ["age"]
    np.testing.assert_array_equal(age.values, a["values"][:, 0])
    np.testing.assert_array_equal(age.data, a["data"][:, 0])
    np.testing.assert_array_equal(age.base_values, a["base_values"])  # per row, untouched
    np.testing.assert_array_equal(age.target, a["target"])
    two = e[:, ["bp", "age"]]
    assert two.feature_names == ["bp", "age"]
    np.testing.assert_array_equal(two.values, a["values"][:, [2, 0]])
    np.testing.assert_array_equal(two.data, a["data"][:, [2, 0]])
    third = e[:, 3]
    assert third.feature_names == ["s1"]
    np.testing.assert_array_equal(third.values, a["values"][:, 3])
    np.testing.assert_array_equal(e[:, 1:3].values, a["values"][:, 1:3])
    np.testing.assert_array_equal(e[:, np.array([True, False, False, False, True])].data, a["data"][:, [0, 4]])
    assert e[:, -1].feature_names == ["s2"]
    _same_provenance(two, e)


def test_one_row_and_one_feature_is_one_value():
    e, a = _batch()
    v = e[2, "bmi"]
    assert np.ndim(v.values) == 0 and float(v.values) == a["values"][2, 1]
    assert float(v.data) == a["data"][2, 1] and float(v.base_values) == a["base_values"][2]
    assert v.feature_names == ["bmi"]
    assert float(e[2]["bmi"].values) == a["values"][2, 1]  # a row takes a feature index alone
    np.testing.assert_array_equal(e[2][["s2", "age"]].values, a["values"][2, [4, 0]])
    np.testing.assert_array_equal(e[1:4, "s1"].values, a["values"][1:4, 3])


def test_len_is_the_number_of_rows_and_iteration_gives_the_rows():
    e, a = _batch()
    assert len(e) == 7 and len(e[2:5]) == 3 and len(e[[True] * 7]) == 7
    rows = list(e)
    assert len(rows) == 7
    np.testing.assert_array_equal(np.stack([r.values for r in rows]), a["values"])


def test_image_explanations_index_by_rows():
    rng = np.random.default_rng(1)
    v, x = rng.normal(size=(4, 3, 5, 6)), rng.normal(size=(4, 3, 5, 6))
    e = Explanation(values=v, method="saliency", data=x, target=np.array([0, 1, 2, 1]),
                    extra={"outputs": rng.normal(size=(4, 3))})
    r = e[1]
    assert r.values.shape == (3, 5, 6) and r.data.shape == (3, 5, 6) and int(r.target) == 1
    np.testing.assert_array_equal(r.values, v[1])
    np.testing.assert_array_equal(e[[3, 0]].values, v[[3, 0]])
    np.testing.assert_array_equal(e[e.target == 1].data, x[[1, 3]])
    with pytest.raises(IndexError, match=r"needs tabular values .* inputs of shape \(3, 5, 6\)"):
        e[:, 0]
    with pytest.raises(IndexError, match="needs tabular values"):
        e[0][0]


def test_several_targets_per_sample_keep_the_target_axis():
    rng = np.random.default_rng(2)
    v, base = rng.normal(size=(5, 3, 4)), rng.normal(size=(5, 3))
    e = Explanation(values=v, method="exact_shapley", target=np.tile(np.arange(3), (5, 1)), base_values=base,
                    data=rng.normal(size=(5, 4)), feature_names=list("abcd"))
    r = e[2]
    assert r.values.shape == (3, 4) and r.base_values.shape == (3,)
    np.testing.assert_array_equal(r.base_values, base[2])
    np.testing.assert_array_equal(e[:, "c"].values, v[:, :, 2])
    np.testing.assert_array_equal(e[1, ["d", "a"]].values, v[1][:, [3, 0]])


def test_groups_follow_the_rows_and_go_with_a_feature_pick():
    rng = np.random.default_rng(3)
    v, gv = rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    e = Explanation(values=v, method="kernel_shap", group_values=gv, groups=["g0", "g1"], feature_names=list("abc"))
    np.testing.assert_array_equal(e[1:3].group_values, gv[1:3])
    assert e[1:3].groups == ["g0", "g1"]
    np.testing.assert_array_equal(e[2].group_values, gv[2])
    picked = e[:, ["a", "b"]]
    assert picked.groups is None and picked.group_values is None


def test_waterfall_identity_holds_on_a_row_of_exact_shapley_values():
    # Exact Shapley values of a linear model against a zero baseline: base + sum(row) = f(x_row).
    torch.manual_seed(0)
    net = torch.nn.Linear(5, 2).double()
    x = np.random.default_rng(4).normal(size=(6, 5))
    e = fl.explainer("exact_shapley", net, baseline=0.0).explain(pd.DataFrame(x, columns=NAMES), target=1)
    with torch.no_grad():
        f = net(torch.as_tensor(x)).numpy()[:, 1]
    for i in (0, 4):
        r = e[i]
        np.testing.assert_allclose(float(r.base_values) + r.values.sum(), f[i], atol=1e-10)
        np.testing.assert_array_equal(r.data, x[i])
    w = net.weight.detach().numpy()[1]
    np.testing.assert_allclose(e[:, "bmi"].values, w[1] * x[:, 1], atol=1e-10)  # phi_j = w_j x_j


def test_a_row_saves_as_a_batch_of_one_row(tmp_path):
    e, a = _batch()
    back = load_explanation(e[3].save(tmp_path / "row"))
    assert back.values.shape == (1, 5)
    np.testing.assert_array_equal(back.values[0], a["values"][3])
    np.testing.assert_array_equal(back.base_values, a["base_values"][[3]])
    np.testing.assert_array_equal(back.extra["outputs"], a["outputs"][[3]])
    np.testing.assert_array_equal(back.extra["scale"], a["scale"])


def test_matches_shap_explanation_indexing():
    shap = pytest.importorskip("shap")
    e, a = _batch()
    s = shap.Explanation(values=a["values"], base_values=a["base_values"], data=a["data"], feature_names=NAMES)
    for key in (0, -2, slice(1, 4), [0, 3], (slice(None), "bp"), (slice(None), ["bp", "age"]), (5, "s2"),
                (slice(None), 3)):
        ours, theirs = e[key], s[key]
        np.testing.assert_array_equal(ours.values, theirs.values)
        np.testing.assert_array_equal(ours.data, theirs.data)
        np.testing.assert_array_equal(ours.base_values, theirs.base_values)
    ours_row = e[2].to_shap()  # what shap.plots.waterfall(e[2].to_shap()) is handed
    np.testing.assert_array_equal(ours_row.values, s[2].values)
    assert float(ours_row.base_values) == float(s[2].base_values)


@pytest.mark.parametrize("key, error, words", [
    (7, IndexError, r"row 7 is out of range for an explanation of 7 rows \(valid: -7 to 6\)"),
    (-8, IndexError, "row -8 is out of range"),
    ([0, 9], IndexError, "row position 9 is out of range for 7 rows"),
    ([True, False], IndexError, "boolean mask over the rows must have 7 entries"),
    ("age", IndexError, r"rows are picked by position .* e\[:, 'age'\]"),
    (1.5, IndexError, "rows are picked by an int position"),
    ((slice(None), "agee"), KeyError, "feature 'agee' is not one of this explanation's 5 feature_names; did you mean 'age'"),
    ((slice(None), ["age", 3]), IndexError, "names or by positions, not both"),
    ((slice(None), 5), IndexError, r"feature position 5 is out of range for 5 features"),
    ((slice(None), [True] * 4), IndexError, "boolean mask over the features must have 5 entries"),
    ((slice(None), ["age", "age"]), IndexError, "each feature once"),
    ((0, 0, 0), IndexError, "at most two indices"),
])
def test_bad_indices_say_what_was_given_and_what_fits(key, error, words):
    e, _ = _batch()
    with pytest.raises(error, match=words):
        e[key]


def test_names_need_feature_names_and_a_feature_axis():
    e = Explanation(values=np.zeros((3, 4)), method="saliency")
    with pytest.raises(KeyError, match="no feature_names; pick features by position"):
        e[:, "age"]
    np.testing.assert_array_equal(e[:, 2].values, np.zeros(3))  # positions work without names
    with pytest.raises(IndexError, match="holds a single feature"):
        e[:, 2][:, 0]


def test_numpy_reads_an_explanation_as_its_values():
    e = fl.Explanation(values=np.arange(12.0).reshape(4, 3), method="m")
    np.testing.assert_array_equal(np.asarray(e), e.values)
    assert np.asarray(e).dtype == np.float64 and np.asarray(e[1]).shape == (3,)
    assert np.asarray(e, dtype=np.float32).dtype == np.float32
