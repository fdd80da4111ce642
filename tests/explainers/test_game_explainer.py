"""featurelens.explainers.GameExplainer: the black-box explainers are approximators of
fl.approximators run on one MaskedModel game per row, and a new one is a few lines."""

import ast
import pathlib

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens import approximators as ap
from featurelens._random import row_rng
from featurelens.explainers import GameExplainer
from featurelens.explainers._base import explainer_class
from featurelens.games import MaskedModel

BLACK_BOX = {"exact_shapley": ap.exact_shapley, "kernel_shap": ap.kernel_shap,
             "permutation_shap": ap.permutation_shap, "minshap": ap.minshap, "lime": ap.lime,
             "feature_ablation": ap.leave_one_out, "feature_permutation": ap.leave_one_out, "spex": ap.spex}
SRC = pathlib.Path(fl.__file__).resolve().parent


@pytest.fixture
def net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 8), torch.nn.Tanh(),
                               torch.nn.Linear(8, 3)).double()


@pytest.fixture
def images():
    return torch.randn(3, 1, 4, 4, dtype=torch.float64)


GROUPS = np.arange(16).reshape(1, 4, 4) // 4  # 4 players: the rows of the image


@pytest.mark.parametrize("name", sorted(BLACK_BOX))
def test_black_box_explainers_are_game_explainers_of_their_approximator(name):
    cls = explainer_class(name)
    assert issubclass(cls, GameExplainer)
    assert cls.approximator is BLACK_BOX[name] and cls.approximator in ap.APPROXIMATORS.values()


def test_no_private_base_is_imported_across_explainer_modules():
    """The old _ShapleyExplainer is gone; the black-box modules import the public base."""
    assert not hasattr(fl.explainers.shapley, "_ShapleyExplainer")
    for module in ("shapley", "surrogate", "ablation", "spex"):
        tree = ast.parse((SRC / "explainers" / f"{module}.py").read_text())
        imported = [a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for a in node.names]
        assert "GameExplainer" in imported, module
        assert not [n for n in imported if n.startswith("_") and n[1:2].isupper()], (module, imported)


def test_a_new_black_box_explainer_is_a_subclass_naming_its_approximator(net, images):
    class Banzhaf(GameExplainer):  # not registered: a test class
        approximator = staticmethod(ap.spex)

        def approximator_options(self, row):
            return {"budget": 900, "max_order": 2, "index": "banzhaf", "seed": 3}

        def row_record(self, result):
            return {"n_terms": result.info["n_terms"]}

    e = Banzhaf(net, groups=GROUPS).explain(images, target=1)
    assert e.values.shape == images.shape and e.params["n_players"] == 4
    for i in range(3):
        r = ap.spex(MaskedModel(net, images[i], groups=GROUPS, target=1), budget=900, max_order=2,
                    index="banzhaf", seed=3)
        np.testing.assert_array_equal(e.values[i], r.values[GROUPS])  # each element: its player's value
        assert e.base_values[i] == r.base_value and e.params["full_values"][i] == r.full_value
        assert e.params["n_terms"][i] == r.info["n_terms"]
        assert e.params["game_evaluations"][i] == r.game_evaluations
    players = Banzhaf(net, groups=GROUPS).explain_players(images, target=1)
    np.testing.assert_array_equal(players, e.values.reshape(3, -1)[:, [0, 4, 8, 12]])


def test_records_leave_out_a_base_value_the_method_does_not_have(net, images):
    class Drops(GameExplainer):
        approximator = staticmethod(ap.leave_one_out)
        records = ("full_values",)
        row_params = frozenset({"full_values"})

    e = Drops(net, groups=GROUPS, baseline=0.5).explain(images, target=0)
    assert e.base_values is None and "game_evaluations" not in e.params
    ref = fl.explainer("feature_ablation", net, groups=GROUPS, baseline=0.5).explain(images, target=0)
    np.testing.assert_allclose(e.values, ref.values, atol=1e-12)  # the one game per row vs the batched rows


@pytest.mark.parametrize("name", ["kernel_shap", "permutation_shap", "minshap"])
def test_each_row_runs_the_approximator_with_its_own_stream(name, net, images):
    e = fl.explainer(name, net, groups=GROUPS, budget=40, seed=9).explain(images, target=2)
    for i in range(3):
        r = BLACK_BOX[name](MaskedModel(net, images[i], groups=GROUPS, target=2), budget=40, seed=row_rng(9, i))
        np.testing.assert_array_equal(e.values[i], r.values[GROUPS])
        assert e.base_values[i] == r.base_value
        if name == "minshap":  # the per-player side results reach extra, spread like the values
            np.testing.assert_array_equal(e.extra["shapley"][i], r.info["mean"][GROUPS])


def test_game_explainer_refusals_name_the_argument(net, images):
    with pytest.raises(ValueError, match="give either baseline .* or background"):
        fl.explainer("kernel_shap", net, baseline=0.0, background=images)
    with pytest.raises(ValueError, match=r"groups must be shaped like one input \(1, 4, 4\)"):
        fl.explainer("exact_shapley", net, groups=np.zeros((4, 4), dtype=int)).explain(images)
    tabular = torch.nn.Linear(3, 2).double()
    with pytest.raises(ValueError, match="needs background= or baseline="):
        fl.explainer("lime", tabular).explain(torch.zeros(2, 3, dtype=torch.float64))
