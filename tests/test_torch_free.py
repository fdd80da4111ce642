"""The tabular user's paths need no torch (issue 32): ``import featurelens``, the command line's
``--help``, the tree path and ``featurelens explain`` on a tree model import none of torch,
transformers, tokenizers, ray or dask; the README's tabular tour runs with those packages made
unimportable; ``fl.list_explainers()`` still lists every explainer there.

Each check runs in a fresh interpreter of this venv (this process has torch loaded by conftest).
The installed-wheel version of the tour, in a clean venv without extras, is in
tests/test_packaging.py.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest
from _tabular_tour import result_of  # tests/ is on sys.path (conftest.py)

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
TOUR = os.path.join(HERE, "_tabular_tour.py")
# what "torch-free" means here: none of these is imported (_tabular_tour.HEAVY)
BLOCKED = ("torch", "torchvision", "transformers", "tokenizers", "ray", "dask", "distributed", "captum")

def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC  # this checkout's package, as the tests import it
    env["MPLBACKEND"] = "Agg"
    return env


def _run(code: str, cwd, timeout: float = 120) -> dict:
    """Run ``code`` in a fresh interpreter; it must print one JSON line last, which is returned."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=cwd, env=_env(), timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-6000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


HEAVY_LOADED = f"sorted({{m.partition('.')[0] for m in sys.modules}} & set({BLOCKED!r}))"


def test_import_featurelens_imports_no_heavy_package(tmp_path):
    got = _run(f"""
        import sys
        import featurelens as fl
        print(__import__("json").dumps({{"version": fl.__version__, "heavy": {HEAVY_LOADED}}}))
    """, tmp_path)
    assert got["heavy"] == [], f"import featurelens loaded {got['heavy']}"
    assert got["version"] == "0.2.0"


@pytest.mark.parametrize("argv", [["--help"], ["explain", "--help"], ["audit", "--help"], ["--version"]])
def test_command_line_help_imports_no_heavy_package(tmp_path, argv):
    got = _run(f"""
        import contextlib, io, json, sys
        from featurelens.cli import main
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            try:
                code = main({argv!r})
            except SystemExit as stop:
                code = stop.code
        print(json.dumps({{"code": code or 0, "out": buf.getvalue(), "heavy": {HEAVY_LOADED}}}))
    """, tmp_path)
    assert got["code"] == 0
    assert ("featurelens 0.2.0" in got["out"]) if argv == ["--version"] else ("usage:" in got["out"])
    assert got["heavy"] == [], f"featurelens {' '.join(argv)} loaded {got['heavy']}"


def test_tree_path_imports_no_heavy_package(tmp_path):
    """Building the README's tree explainer and explaining 100 rows, with torch installed: still
    no torch in sys.modules (the registry does not import the neural-network modules)."""
    got = _run(f"""
        import json, sys
        import numpy as np
        import featurelens as fl
        from sklearn.datasets import load_breast_cancer
        from sklearn.ensemble import GradientBoostingClassifier
        X, y = load_breast_cancer(return_X_y=True, as_frame=True)
        gbc = GradientBoostingClassifier(n_estimators=50, random_state=0).fit(X, y)
        e = fl.explainer("tree_shap", gbc).explain(X[:100], target=1)
        err = float(np.abs(e.base_values + e.values.sum(1) - gbc.decision_function(X[:100])).max())
        print(json.dumps({{"shape": list(e.values.shape), "err": err, "heavy": {HEAVY_LOADED}}}))
    """, tmp_path)
    assert got["shape"] == [100, 30] and got["err"] < 1e-8
    assert got["heavy"] == [], f"the tree path loaded {got['heavy']}"


def test_explain_command_on_a_tree_model_imports_no_heavy_package(tmp_path):
    """``featurelens explain --method tree_shap`` on a skops GradientBoosting file, with torch
    installed: the command writes its report and loads none of the heavy packages.

    ``import skops.io`` by itself loads torch and dask where they are installed: skops lists
    scikit-learn's estimators, which imports every scikit-learn module, among them its array-api
    shims for torch and dask (``sklearn.externals.array_api_compat.torch`` / ``.dask``). Those two
    shims are made unimportable here, as they are where torch and dask are not installed (the
    module walk skips them), so that any heavy package left in ``sys.modules`` was loaded by
    featurelens; featurelens's own imports of one are listed in the message."""
    skops_io = pytest.importorskip("skops.io")
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import GradientBoostingClassifier

    d = load_breast_cancer(as_frame=True)
    gbc = GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0).fit(d.data, d.target)
    skops_io.dump(gbc, tmp_path / "model.skops")
    table = d.data.copy()
    table["target"] = d.target.to_numpy()
    table.to_csv(tmp_path / "data.csv", index=False)
    got = _run(f"""
        import json, sys
        sys.path.insert(0, {HERE!r})
        import _tabular_tour as tour

        class Shims:
            names = ("sklearn.externals.array_api_compat.torch", "sklearn.externals.array_api_compat.dask")
            def find_spec(self, name, path=None, target=None):
                if name in self.names:
                    raise ModuleNotFoundError(f"No module named {{name!r}} (blocked by the test)", name=name)
        sys.meta_path.insert(0, Shims())
        tour.record_imports_by_featurelens()
        from featurelens.cli import main
        before = {HEAVY_LOADED}
        code = main(["explain", "--model", "model.skops", "--data", "data.csv", "--labels", "target",
                     "--trust-type", "sklearn.tree._tree.Tree", "--method", "tree_shap", "--rows", "5",
                     "--out", "explained"])
        print(json.dumps({{"code": code, "before": before, "heavy": {HEAVY_LOADED},
                          "by_featurelens": sorted(set(tour.FEATURELENS_IMPORTS))}}))
    """, tmp_path)
    assert got["code"] == 0
    values = pd_read(tmp_path / "explained" / "values.csv")
    assert len(values) == 5 and set(values["output"]) == {"log_odds"}
    assert got["before"] == [], f"importing the command line loaded {got['before']}"
    assert got["heavy"] == [], (f"featurelens explain on a tree model loaded {got['heavy']}; "
                                f"featurelens's own imports: {got['by_featurelens']}")


def pd_read(path):
    import pandas as pd

    return pd.read_csv(path)


def test_tabular_tour_runs_with_torch_unimportable(tmp_path):
    """The README's tabular tour (tests/_tabular_tour.py) with torch, transformers, tokenizers,
    ray, dask and captum unimportable: every value, plot and report as with them."""
    out = tmp_path / "tour"
    out.mkdir()
    proc = subprocess.run([sys.executable, TOUR, str(out), "--block", ",".join(BLOCKED)], capture_output=True,
                          text=True, cwd=tmp_path, env=_env(), timeout=300)
    assert proc.returncode == 0, f"the tour failed:\n{proc.stderr[-6000:]}"
    got = result_of(proc.stdout)
    print("torch-free tour:", json.dumps(got["seconds"]), "blocked attempts:", got["blocked_attempts"])
    assert got["values_shape"] == [100, 30] and got["output"] == "log_odds"
    assert got["additivity"] < 1e-8
    assert got["plots"] == ["beeswarm.png", "waterfall.png"]
    assert {"kernel_shap", "occlusion", "permutation_shap"} <= set(got["audit_ranked"])
    assert {"index.html", "results.csv"} <= set(got["audit_files"])
    assert got["explain_code"] == 0 and got["explain_rows"] == 10 and got["explain_efficiency"] < 1e-6
    assert {"index.html", "values.csv", "explanation.npz"} <= set(got["explain_files"])
    assert got["heavy_at_end"] == [] and not got["torch_in_sys_modules"]
    assert got["featurelens_heavy_imports"] == []  # the blocked attempts came from elsewhere (skops' walk)


def test_list_explainers_lists_every_explainer_without_torch(tmp_path):
    """``fl.list_explainers()`` with torch unimportable names the same explainers as with it (the
    neural-network ones too: they say what they need when used)."""
    import featurelens as fl

    everything = sorted(fl.list_explainers())
    got = _run(f"""
        import json, sys
        sys.path.insert(0, {HERE!r})
        from _tabular_tour import block
        block({list(BLOCKED)!r})
        import featurelens as fl
        print(json.dumps({{"names": sorted(fl.list_explainers()), "heavy": {HEAVY_LOADED}}}))
    """, tmp_path)
    assert got["names"] == everything
    assert {"tree_shap", "kernel_shap", "integrated_gradients", "saliency"} <= set(got["names"])
    assert got["heavy"] == []
