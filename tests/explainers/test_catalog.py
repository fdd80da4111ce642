"""The explainer catalog (featurelens.explainers._catalog) against the registry, and each entry's
extra checked with torch made unimportable: torch-only explainers raise the ImportError naming
``featurelens[torch]``, the others explain a scikit-learn model without ever importing torch."""

import importlib
import json
import os
import subprocess
import sys
import textwrap

import pytest

from featurelens.explainers import _base
from featurelens.explainers._catalog import CATALOG

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "src")

#: A meta-path finder that makes torch (and the other heavy optional packages) unimportable.
BLOCK = textwrap.dedent(
    """
    import sys
    class _Block:
        BLOCKED = {"torch", "torchvision", "transformers", "ray", "dask", "distributed"}
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in self.BLOCKED:
                raise ImportError(f"No module named {name!r} (blocked by the test)")
            return None
    sys.meta_path.insert(0, _Block())
    """
)


def _run(code: str, timeout: int = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC))
    return subprocess.run([sys.executable, "-c", BLOCK + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_catalog_names_the_module_that_registers_each_explainer():
    for module in sorted({m for m, _ in CATALOG.values()}):
        importlib.import_module(f"featurelens.explainers.{module}")
    for name, (module, _) in CATALOG.items():
        assert name in _base._REGISTRY, f"{name!r} is in the catalog but no module registers it"
        # the module, or a submodule of the package it names (tree -> tree.explainer)
        registered_in = _base._REGISTRY[name].__module__
        assert registered_in.startswith(f"featurelens.explainers.{module}"), (name, registered_in)
    shipped = {n for n, cls in _base._REGISTRY.items() if cls.__module__.startswith("featurelens.explainers.")}
    assert shipped <= set(CATALOG), f"registered but not in the catalog: {sorted(shipped - set(CATALOG))}"


def test_numpy_explainers_declare_numpy_inputs_and_torch_ones_do_not():
    for name, (_, extra) in CATALOG.items():
        cls = _base.explainer_class(name)
        if extra is None:
            assert cls.numpy_inputs, f"{name!r} runs without torch, so it must take numpy inputs"


def test_list_explainers_details():
    rows = {d["name"]: d for d in _base.list_explainers(details=True)}
    assert set(rows) >= set(CATALOG)
    assert rows["saliency"]["needs"] == "torch" and rows["tree_shap"]["needs"] is None
    assert rows["saliency"]["available"] is True  # torch is installed for the suite


def test_without_torch_each_entry_raises_or_runs():
    names = sorted(CATALOG)
    code = f"""
    import json, sys
    import numpy as np
    import featurelens as fl
    from sklearn.datasets import make_classification
    from sklearn.ensemble import GradientBoostingClassifier
    X, y = make_classification(n_samples=80, n_features=6, n_informative=4, random_state=0)
    gbc = GradientBoostingClassifier(n_estimators=10, random_state=0).fit(X, y)
    options = {{"tree_shap": {{}}, "random": {{}}, "occlusion": {{"baseline": X.mean(0)}},
               "kernel_shap": {{"background": X[:10], "budget": 64}},
               "permutation_shap": {{"background": X[:10], "budget": 64}},
               "minshap": {{"background": X[:10], "budget": 64}},
               "exact_shapley": {{"background": X[:10]}},
               "spex": {{"background": X[:10], "budget": 512, "max_order": 2}},
               "feature_ablation": {{"baseline": X.mean(0)}}, "feature_permutation": {{}},
               "lime": {{"baseline": X.mean(0), "n_samples": 64}}}}
    out = {{"listed": fl.list_explainers(), "details": fl.list_explainers(details=True), "results": {{}}}}
    for name in {names!r}:
        try:
            e = fl.explainer(name, gbc, **options.get(name, {{}})).explain(X[:2], target=1)
            out["results"][name] = ["ran", list(e.values.shape), bool(np.isfinite(e.values).all())]
        except ImportError as err:
            out["results"][name] = ["ImportError", str(err)]
    out["torch_imported"] = "torch" in sys.modules
    print(json.dumps(out))
    """
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["torch_imported"] is False
    assert set(out["listed"]) == set(CATALOG)  # listing needs no import
    available = {d["name"]: d["available"] for d in out["details"]}
    for name, (_, extra) in CATALOG.items():
        result = out["results"][name]
        if extra == "torch":
            assert result[0] == "ImportError", (name, result)
            assert 'featurelens[torch]' in result[1] and name in result[1], result[1]
            assert available[name] is False
        else:
            assert result == ["ran", [2, 6], True], (name, result)
            assert available[name] is True


def test_explanation_values_equal_with_and_without_torch():
    """The numpy mode is the path of a numpy model whether torch is installed or not: the same
    values in a process without torch as here."""
    import numpy as np
    from sklearn.datasets import make_classification
    from sklearn.ensemble import GradientBoostingClassifier

    import featurelens as fl

    X, y = make_classification(n_samples=80, n_features=6, n_informative=4, random_state=0)
    gbc = GradientBoostingClassifier(n_estimators=10, random_state=0).fit(X, y)
    here = fl.explainer("kernel_shap", gbc, background=X[:10], budget=64).explain(X[:3], target=1).values
    code = """
    import json
    import featurelens as fl
    from sklearn.datasets import make_classification
    from sklearn.ensemble import GradientBoostingClassifier
    X, y = make_classification(n_samples=80, n_features=6, n_informative=4, random_state=0)
    gbc = GradientBoostingClassifier(n_estimators=10, random_state=0).fit(X, y)
    e = fl.explainer("kernel_shap", gbc, background=X[:10], budget=64).explain(X[:3], target=1)
    print(json.dumps(e.values.tolist()))
    """
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    there = np.array(json.loads(proc.stdout.strip().splitlines()[-1]))
    np.testing.assert_allclose(there, here, rtol=0, atol=1e-12)


def test_unknown_name_still_lists_the_catalog():
    with pytest.raises(ValueError, match="Did you mean 'tree_shap'"):
        _base.explainer_class("tree_sahp")


class _TorchWrapper:
    """The estimator's predict_proba as a float64 torch module (a dummy float64 parameter sets
    the Model's dtype): the tensor path over the very same function."""

    @staticmethod
    def build(est):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.dtype_anchor = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))

            def forward(self, x):
                return torch.as_tensor(est.predict_proba(x.detach().cpu().numpy()), dtype=torch.float64)

        return Wrapped()


NUMPY_CASES = {
    "kernel_shap": lambda X: {"background": X[:8], "budget": 64},
    "permutation_shap": lambda X: {"background": X[:8], "budget": 64},
    "exact_shapley": lambda X: {"background": X[:8]},
    "minshap": lambda X: {"background": X[:8], "budget": 64},
    "spex": lambda X: {"background": X[:8], "budget": 512, "max_order": 2},
    "occlusion": lambda X: {"baseline": X.mean(0)},
    "feature_ablation": lambda X: {"baseline": X.mean(0)},
    "feature_permutation": lambda X: {},
    "lime": lambda X: {"baseline": X.mean(0), "n_samples": 64},
}


@pytest.mark.parametrize("name", sorted(NUMPY_CASES))
def test_numpy_mode_equals_the_tensor_path(name):
    """A scikit-learn model explained in numpy mode gives the values of the same function as a
    float64 torch module (tensor mode), to float64 rounding."""
    import numpy as np
    from sklearn.datasets import make_classification
    from sklearn.ensemble import GradientBoostingClassifier

    import featurelens as fl

    X, y = make_classification(n_samples=80, n_features=6, n_informative=4, random_state=1)
    gbc = GradientBoostingClassifier(n_estimators=10, random_state=0).fit(X, y)
    options = NUMPY_CASES[name](X)
    numpy_ex = fl.explainer(name, gbc, **options)
    assert numpy_ex.model.numpy_mode
    torch_ex = fl.explainer(name, _TorchWrapper.build(gbc), **options)
    assert not torch_ex.model.numpy_mode
    a = numpy_ex.explain(X[:4], target=1)
    b = torch_ex.explain(X[:4], target=1)
    assert isinstance(a.values, np.ndarray) and a.values.shape == (4, 6)
    np.testing.assert_allclose(a.values, b.values, rtol=0, atol=1e-10)
    assert a.model_calls == b.model_calls
