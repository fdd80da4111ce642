"""The README's tabular tour as a script, for the tests that run it in another interpreter: the
clean venv of the built wheel without extras (tests/test_packaging.py) and the dev venv with torch
and the other heavy optional packages made unimportable (tests/test_torch_free.py).

    python _tabular_tour.py OUT [--block torch,transformers,...]

Steps: TreeSHAP on the README's breast-cancer GradientBoostingClassifier (100 rows, target 1), its
beeswarm and waterfall (Agg backend, saved as PNG), ``fl.audit`` of the same model on 40 rows, then
``featurelens explain`` (the command's ``main``, in this process) on a skops file of the model and a
CSV of the data. ``--block`` installs, before anything else, a ``sys.meta_path`` finder that raises
ModuleNotFoundError for those top-level names (as if they were not installed) and records each
attempt; featurelens's own imports of a heavy package are recorded in any case. The last line
printed is ``TOUR-RESULT {json}``: the values checked, the files written, the heavy modules found
in ``sys.modules`` at the end, the blocked import attempts and featurelens's heavy imports. Any failure
raises (exit code 1, traceback on stderr).
"""

import sys

# The heavy optional packages: none of them may be imported by the tabular tour.
HEAVY = ("torch", "torchvision", "transformers", "tokenizers", "ray", "dask", "distributed", "captum")
ATTEMPTS: list = []


class _Blocker:
    """A meta-path finder that makes the named top-level packages unimportable."""

    def __init__(self, names):
        self.names = frozenset(names)

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        if top in self.names:
            ATTEMPTS.append(fullname)
            raise ModuleNotFoundError(f"No module named {top!r} (blocked by the torch-free test)", name=top)
        return None


def block(names) -> None:
    for name in names:
        sys.modules.pop(name, None)
    sys.meta_path.insert(0, _Blocker(names))


def record_imports_by_featurelens() -> None:
    """Record (importer, name) each time featurelens's own code loads a heavy package (one not yet
    in ``sys.modules``), through an ``import`` statement or ``importlib.import_module``, whether or
    not the import succeeds: the heavy modules in ``sys.modules`` alone cannot say who loaded them
    (``import skops.io`` walks scikit-learn's modules, whose array-api shim imports torch and dask
    where they are installed)."""
    import builtins
    import importlib

    real_import, real_import_module = builtins.__import__, importlib.import_module

    def note(importer, name, level=0):
        top = name.partition(".")[0]
        if level == 0 and top in HEAVY and top not in sys.modules and str(importer).partition(".")[0] == "featurelens":
            FEATURELENS_IMPORTS.append(f"{importer} -> {name}")

    def hooked_import(name, globals=None, locals=None, fromlist=(), level=0):
        note((globals or {}).get("__name__"), name, level)
        return real_import(name, globals, locals, fromlist, level)

    def hooked_import_module(name, package=None):
        note(sys._getframe(1).f_globals.get("__name__"), name, 1 if name.startswith(".") else 0)
        return real_import_module(name, package)

    builtins.__import__ = hooked_import
    importlib.import_module = hooked_import_module


FEATURELENS_IMPORTS: list = []


def heavy_loaded() -> list:
    return sorted({m.partition(".")[0] for m in sys.modules} & set(HEAVY))


def main(argv) -> dict:
    import json
    import os
    import time

    out = argv[0]
    if "--block" in argv:
        block([n for n in argv[argv.index("--block") + 1].split(",") if n])
    record_imports_by_featurelens()
    seconds = {}
    t0 = time.perf_counter()

    import matplotlib

    matplotlib.use("Agg")
    import numpy as np

    import featurelens as fl

    seconds["import"] = time.perf_counter() - t0
    heavy_after_import = heavy_loaded()
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import GradientBoostingClassifier

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    gbc = GradientBoostingClassifier(n_estimators=50, random_state=0).fit(X, y)

    t = time.perf_counter()
    e = fl.explainer("tree_shap", gbc).explain(X[:100], target=1)
    seconds["tree_shap"] = time.perf_counter() - t
    additivity = float(np.abs(e.base_values + e.values.sum(1) - gbc.decision_function(X[:100])).max())
    heavy_after_tree = heavy_loaded()

    ax1 = fl.plots.beeswarm(e)
    ax1.figure.savefig(os.path.join(out, "beeswarm.png"))
    ax2 = fl.plots.waterfall(e[0])
    ax2.figure.savefig(os.path.join(out, "waterfall.png"))
    import matplotlib.pyplot as plt

    plt.close("all")

    t = time.perf_counter()
    fl.audit(gbc, X[:40], y[:40], out=os.path.join(out, "audit"))
    seconds["audit"] = time.perf_counter() - t
    import pandas as pd

    ranked = pd.read_csv(os.path.join(out, "audit", "results.csv")).dropna(subset=["rank"])

    import skops.io as sio

    sio.dump(gbc, os.path.join(out, "model.skops"))
    table = X.copy()
    table["target"] = y.to_numpy()
    table.to_csv(os.path.join(out, "data.csv"), index=False)
    from featurelens.cli import main as cli

    t = time.perf_counter()
    code = cli(["explain", "--model", os.path.join(out, "model.skops"), "--data", os.path.join(out, "data.csv"),
                "--labels", "target", "--trust-type", "sklearn.tree._tree.Tree", "--rows", "10",
                "--out", os.path.join(out, "explained")])
    seconds["explain_command"] = time.perf_counter() - t
    values = pd.read_csv(os.path.join(out, "explained", "values.csv"))
    names = list(X.columns)
    # the rows as the command reads them (float32 from the CSV); its values add up to the probability
    rows = table.drop(columns="target").to_numpy().astype(np.float32).astype(np.float64)[: len(values)]
    proba = gbc.predict_proba(pd.DataFrame(rows, columns=names))[np.arange(len(values)), values["target"].to_numpy()]
    efficiency = float(np.abs(values["base_value"] + values[names].sum(axis=1) - proba).max())

    return {
        "version": fl.__version__,
        "featurelens_file": fl.__file__,
        "values_shape": list(e.values.shape),
        "output": e.output,
        "additivity": additivity,
        "plots": sorted(f for f in os.listdir(out) if f.endswith(".png")),
        "audit_ranked": sorted(ranked["method"]),
        "audit_files": sorted(os.listdir(os.path.join(out, "audit"))),
        "explain_code": code,
        "explain_rows": len(values),
        "explain_efficiency": efficiency,
        "explain_files": sorted(os.listdir(os.path.join(out, "explained"))),
        "heavy_after_import": heavy_after_import,
        "heavy_after_tree": heavy_after_tree,
        "heavy_at_end": heavy_loaded(),
        "torch_in_sys_modules": "torch" in sys.modules,
        "blocked_attempts": sorted(set(ATTEMPTS)),
        "featurelens_heavy_imports": sorted(set(FEATURELENS_IMPORTS)),
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
    }


def result_of(stdout: str) -> dict:
    """The result dict from the script's output (its last ``TOUR-RESULT`` line)."""
    import json

    lines = [line for line in stdout.splitlines() if line.startswith("TOUR-RESULT ")]
    assert lines, f"the tour printed no TOUR-RESULT line; its output ends with:\n{stdout[-3000:]}"
    return json.loads(lines[-1][len("TOUR-RESULT "):])


if __name__ == "__main__":
    import json

    print("TOUR-RESULT " + json.dumps(main(sys.argv[1:])), flush=True)
