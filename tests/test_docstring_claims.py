"""Every docstring sentence that claims equality with a peer library is backed by a named test.

The walk imports every module of featurelens (pkgutil.walk_packages), reads the docstrings of the
modules and of their public classes, functions and methods, and finds the claims (``equals
Captum's``, ``equal to Captum 0.9's``, ``reproduces Quantus's``, ``same as shap``, ``as Captum's
``X```` ...). Each (object, library) pair must appear in CLAIMS with the test that checks it
(``file::function``, found by parsing the test files with ast, so a renamed or removed test
fails here too). A new claim without a row fails with the object and the sentence.

The second half holds the tests that back claims no other file tested: the Quantus units of the
metrics' docstrings (Quantus applies a softmax by default; ``output="probability"`` is its units).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import featurelens

TESTS = Path(__file__).resolve().parent

LIBS = r"(Captum|shapiq|shap|Quantus|xrfm|scikit-learn|sklearn)"
_WORDS = r"(?:[\w.'`]+\s+){0,3}?"
CLAIM = re.compile(
    r"(?:\bequals?(?:\s+to)?|\bsame\s+as|\breproduces?|\bidentical\s+to|\bmatch(?:es|ing)?|\bagrees?\s+with)\s+"
    + _WORDS + LIBS + r"\b"
    r"|(?<!such )\b(?:as|like)\s+" + LIBS + r"(?:\s+\d+(?:\.\d+)*)?'s\s+``",
    re.I,
)
_CANON = {"captum": "Captum", "shap": "shap", "shapiq": "shapiq", "quantus": "Quantus", "xrfm": "xrfm",
          "scikit-learn": "scikit-learn", "sklearn": "scikit-learn"}

#: (object, library) -> the tests that check the claim (file under tests/ :: function name).
CLAIMS: dict[tuple[str, str], tuple[str, ...]] = {
    ("featurelens.learning._rf_solvers.fit_logistic", "scikit-learn"):
        ("learning/test_random_features.py::test_classifier_zero_layers_is_logistic_regression",),
    ("featurelens.explainers._layer_hooks.NeuronSelector", "Captum"):
        ("explainers/test_layer_deeplift.py::test_neuron_selectors_equal_captum",
         "explainers/test_layer.py::test_neuron_methods_equal_captum"),
    ("featurelens.explainers.ablation", "Captum"):
        ("explainers/test_ablation.py::test_permutation_equals_captum_fed_the_same_permutations",),
    ("featurelens.explainers.ablation.FeatureAblation", "Captum"):
        ("explainers/test_ablation.py::test_feature_ablation_equals_captum_on_a_cnn",
         "explainers/test_ablation.py::test_feature_ablation_equals_captum_on_a_tabular_mlp_in_float32"),
    ("featurelens.explainers.backprop.GuidedBackprop", "Captum"):
        ("explainers/test_backprop.py::test_modified_backprop_equals_captum",),
    ("featurelens.explainers.backprop.Deconvolution", "Captum"):
        ("explainers/test_backprop.py::test_modified_backprop_equals_captum",),
    ("featurelens.explainers.backprop.GradientShap", "Captum"):
        ("explainers/test_backprop.py::test_gradient_shap_equals_captum_on_the_same_draws",),
    ("featurelens.explainers.layer", "Captum"):
        ("explainers/test_layer.py::test_neuron_methods_equal_captum",
         "explainers/test_layer_deeplift.py::test_neuron_selectors_equal_captum"),
    ("featurelens.explainers.layer.LayerConductance", "Captum"):
        ("explainers/test_layer.py::test_layer_methods_equal_captum",),
    ("featurelens.explainers.layer.LayerGradientXActivation", "Captum"):
        ("explainers/test_layer.py::test_layer_methods_equal_captum",),
    ("featurelens.explainers.layer.LayerIntegratedGradients", "Captum"):
        ("explainers/test_layer.py::test_layer_methods_equal_captum",),
    ("featurelens.explainers.layer.NeuronGradient", "Captum"):
        ("explainers/test_layer.py::test_neuron_methods_equal_captum",),
    ("featurelens.explainers.layer.NeuronIntegratedGradients", "Captum"):
        ("explainers/test_layer.py::test_neuron_methods_equal_captum",),
    ("featurelens.explainers.tree.functions.tree_shap_interaction_values", "shap"):
        ("explainers/test_tree_shap.py::test_interaction_values_match_shap",),
    ("featurelens.interactions._interactions.Interactions.r2", "scikit-learn"):
        ("test_docstring_claims.py::test_r2_of_a_constant_game_is_scikit_learns_r2_score",),
    ("featurelens.metrics.axiomatic.non_sensitivity", "Quantus"):
        ("metrics/test_axioms.py::test_quantus_non_sensitivity_parity",),
    ("featurelens.metrics.localisation._pointing.focus", "Quantus"):
        ("metrics/test_pointing.py::test_quantus_focus_parity_on_our_mosaics",),
    ("featurelens.selection.minkowski.MinkowskiWeightedSelector", "scikit-learn"):
        ("selection/test_degenerate.py::test_minkowski_more_clusters_than_rows",
         "test_docstring_claims.py::test_scikit_learns_kmeans_warns_on_fewer_distinct_rows_than_clusters"),
    ("featurelens.text._explain.explain", "Captum"):
        ("explainers/test_lime.py::test_lime_agrees_with_captums_own_sampling_in_expectation",),
    ("featurelens.explainers.deeplift", "Captum"):
        ("explainers/test_deeplift.py::test_deeplift_equals_captum",
         "explainers/test_deeplift.py::test_captum_max_pool_after_relu_misses_summation_to_delta_and_ours_does_not"),
    ("featurelens.explainers.deeplift.DeepLift", "Captum"):
        ("explainers/test_deeplift.py::test_deeplift_equals_captum",
         "explainers/test_deeplift.py::test_captum_max_pool_after_relu_misses_summation_to_delta_and_ours_does_not",
         "explainers/test_deeplift.py::test_two_activations_in_a_row_differ_from_captum_and_ours_are_exact"),
    ("featurelens.explainers.deeplift.DeepLiftShap", "Captum"):
        ("explainers/test_deeplift.py::test_deeplift_shap_equals_captum",
         "explainers/test_deeplift.py::"
         "test_deeplift_shap_on_conv_relu_maxpool_exact_by_default_and_captum_with_gradient_pooling"),
    ("featurelens.explainers.deeplift.LayerDeepLift", "Captum"):
        ("explainers/test_layer_deeplift.py::test_layer_deeplift_equals_captum",
         "explainers/test_layer_deeplift.py::"
         "test_captum_max_pool_after_relu_misses_summation_to_delta_at_the_layer_and_ours_does_not"),
    ("featurelens.explainers.deeplift.LayerDeepLiftShap", "Captum"):
        ("explainers/test_layer_deeplift.py::test_layer_deeplift_shap_equals_captum_and_the_mean_over_baselines",),
    ("featurelens.explainers.lrp.LRP", "Captum"):
        ("explainers/test_lrp.py::test_equals_captum_lrp_with_its_default_epsilon_rules",),
    ("featurelens.metrics.complexity", "Quantus"):
        ("metrics/test_quantus_parity.py::test_sparseness_and_complexity",),
    ("featurelens.metrics.faithfulness._curves.deletion_curve", "Quantus"):
        ("metrics/test_quantus_parity.py::test_pixel_flipping_is_the_full_deletion_curve",
         "test_docstring_claims.py::test_quantus_default_softmax_is_output_probability"),
    ("featurelens.metrics.ood.auroc", "scikit-learn"):
        ("metrics/test_ood_metrics.py::test_auroc_equals_sklearn_with_ties",),
    ("featurelens.metrics.localisation._pointing.top_k_intersection", "Quantus"):
        ("metrics/test_pointing.py::test_quantus_localisation_parity",),
    ("featurelens.metrics.randomisation.model_randomization", "Quantus"):
        ("metrics/test_quantus_parity.py::test_mprt_layer_by_layer",),
}


def _documented():
    """(qualified name, docstring) of every module of featurelens and of its public classes,
    functions and methods (objects defined in that module, so each is read once)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in pkgutil.walk_packages(featurelens.__path__, "featurelens."):
            if info.name.endswith("__main__"):
                continue
            mod = importlib.import_module(info.name)
            yield info.name, mod.__doc__
            for name, obj in vars(mod).items():
                if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
                    continue
                if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                    continue
                yield f"{info.name}.{name}", obj.__doc__
                if inspect.isclass(obj):
                    for attr, member in vars(obj).items():
                        if attr.startswith("_"):
                            continue
                        fn = getattr(member, "__func__", getattr(member, "fget", member))
                        if inspect.isfunction(fn):
                            yield f"{info.name}.{name}.{attr}", fn.__doc__


def claims() -> dict:
    """(object, library) -> the claim sentences found in its docstring."""
    found: dict = {}
    for qualname, doc in _documented():
        if not doc:
            continue
        text = " ".join(doc.split())
        for m in CLAIM.finditer(text):
            lib = _CANON[next(g for g in m.groups() if g).lower()]
            found.setdefault((qualname, lib), []).append(text[max(0, m.start() - 80): m.end() + 60])
    return found


def _test_functions(path: Path) -> set:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")}


def test_the_claim_pattern_finds_what_it_should_and_nothing_else():
    hits = ["equals Captum's ``DeepLift``", "equal to Captum 0.9's ``LRP``", "reproduces Quantus's ``MPRT``",
            "the same as shap's KernelExplainer", "as Captum 0.9's ``DeepLift``", "as sklearn's ``roc_auc_score``",
            "matches scikit-learn"]
    misses = ["as in shap: max_display", "a callable such as sklearn's ``predict_proba``", "as scikit-learn selectors", "Captum does the same silently",
              "Quantus computes another quantity", "with equal weights"]
    assert all(CLAIM.search(t) for t in hits)
    assert not any(CLAIM.search(t) for t in misses)


def test_every_claim_of_equality_with_a_peer_library_is_backed_by_a_named_test():
    found = claims()
    unbacked = {k: v for k, v in found.items() if k not in CLAIMS}
    assert not unbacked, "docstring claims of equality with a peer library without a backing test in CLAIMS:\n" + \
        "\n".join(f"- {obj} ({lib}): ...{sentences[0]}..." for (obj, lib), sentences in sorted(unbacked.items()))
    stale = sorted(set(CLAIMS) - set(found))
    assert not stale, f"CLAIMS rows whose docstring no longer makes the claim (remove them): {stale}"


@pytest.mark.parametrize("key", sorted(CLAIMS), ids=lambda k: f"{k[0].rsplit('.', 1)[-1]}-{k[1]}")
def test_each_backing_test_exists(key):
    for ref in CLAIMS[key]:
        file, _, name = ref.partition("::")
        path = TESTS / file
        assert path.is_file(), f"{key}: backing test file tests/{file} does not exist"
        assert name in _test_functions(path), f"{key}: tests/{file} has no test function {name!r}"


# -- claims backed here: the metrics' units against Quantus ---------------------------------------
def test_quantus_default_softmax_is_output_probability(small_cnn):
    """Quantus 0.6's PixelFlipping, Selectivity and RegionPerturbation apply a softmax by default
    (``softmax=True``); featurelens scores raw outputs by default. The curves differ until
    ``output="probability"``, and then they are Quantus's (the metric docstrings' units note)."""
    quantus = pytest.importorskip("quantus")
    torch = pytest.importorskip("torch")
    from featurelens.metrics import deletion_curve, region_perturbation, selectivity

    model = small_cnn.eval()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 1, 8, 8)).astype(np.float32)
    a = rng.normal(size=(4, 1, 8, 8))
    with torch.no_grad():
        y = model(torch.from_numpy(x)).argmax(1).numpy()

    def q(metric):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(metric(model=model, x_batch=x, y_batch=y, a_batch=a.copy(), device="cpu"),
                              dtype=np.float64)

    cases = [
        (quantus.PixelFlipping(features_in_step=1, disable_warnings=True),
         lambda out: deletion_curve(model, x, a, target=y, steps=64, baseline="min", output=out)[0][:, 1:]),
        (quantus.Selectivity(patch_size=3, normalise=False, disable_warnings=True),
         lambda out: selectivity(model, x, a, target=y, patch_size=3, output=out)[0]),
        (quantus.RegionPerturbation(patch_size=3, regions_evaluation=5, normalise=False, disable_warnings=True),
         lambda out: region_perturbation(model, x, a, target=y, patch_size=3, steps=5, output=out)[0]),
    ]
    for metric, ours in cases:
        ref = q(metric)  # Quantus's defaults: softmax=True
        np.testing.assert_allclose(ours("probability"), ref, atol=1e-6)
        assert np.abs(ours(None) - ref).max() > 0.05  # raw logits are not Quantus's default units


def test_r2_of_a_constant_game_is_scikit_learns_r2_score():
    """Interactions.r2 on a constant game: 1.0 when predicted exactly, else 0.0, as r2_score."""
    metrics = pytest.importorskip("sklearn.metrics")
    from featurelens.games import Game
    from featurelens.interactions import Interactions, exact

    game = Game.from_function(lambda masks: np.full(len(masks), 3.0), 4)
    y = np.full(50, 3.0)
    assert exact(game, "mobius").r2(game, n_masks=50) == metrics.r2_score(y, y) == 1.0
    off = Interactions({(): 2.0}, "mobius", 4)  # predicts 2 everywhere
    assert off.r2(game, n_masks=50) == metrics.r2_score(y, np.full(50, 2.0)) == 0.0


def test_scikit_learns_kmeans_warns_on_fewer_distinct_rows_than_clusters():
    """MinkowskiWeightedSelector's docstring: it warns on fewer distinct rows than clusters "as
    scikit-learn's KMeans does"; here KMeans itself does (ConvergenceWarning)."""
    cluster = pytest.importorskip("sklearn.cluster")
    from sklearn.exceptions import ConvergenceWarning

    rows = np.repeat(np.random.default_rng(0).normal(size=(2, 3)), 3, axis=0)  # 6 rows, 2 distinct
    with pytest.warns(ConvergenceWarning, match="distinct clusters"):
        cluster.KMeans(n_clusters=4, n_init=1, random_state=0).fit(rows)
