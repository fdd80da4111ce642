"""Compiled once per machine, and the numpy path where numba is missing.

Each case runs a fresh Python process on the README's kind of model (a GradientBoostingClassifier
fitted here and saved with joblib): with ``NUMBA_CACHE_DIR`` set to an empty folder, the first
process compiles the kernels and writes them there and the second only loads them (numba's own
counts of cache hits and misses per kernel); a read-only copy of the package run by a user who can
write no cache folder still explains (numba drops ``cache=True`` and compiles in memory); and
with numba made unimportable the numpy engine gives the same values.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")
joblib = pytest.importorskip("joblib")

SRC = Path(__file__).resolve().parents[2] / "src"

SCRIPT = r"""
import json, sys
if sys.argv[1] == "no-numba":
    sys.modules["numba"] = None  # import numba raises ImportError
import joblib, numpy as np
import featurelens as fl
from featurelens.explainers.tree import numba_kernels, numba_walk
model = joblib.load(sys.argv[2])
X = np.load(sys.argv[3])
e = fl.explainer("tree_shap", model).explain(X, target=1)
stats = {}
if numba_kernels.HAVE_NUMBA:
    for mod, name in ((numba_kernels, "_pd_serial"), (numba_walk, "_walk_forest")):
        s = getattr(mod, name).stats
        stats[name] = [sum(s.cache_hits.values()), sum(s.cache_misses.values())]
print(json.dumps({"values": e.values.tolist(), "base": e.base_values.tolist(), "numba": numba_kernels.HAVE_NUMBA,
                  "stats": stats, "file": fl.__file__}))
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import GradientBoostingClassifier

    X, y = load_breast_cancer(return_X_y=True)
    folder = tmp_path_factory.mktemp("compiled")
    model = GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0).fit(X, y)
    joblib.dump(model, folder / "model.joblib")
    np.save(folder / "rows.npy", X[:20])
    (folder / "run.py").write_text(SCRIPT)
    os.chmod(folder, 0o755)
    for f in folder.iterdir():
        os.chmod(f, 0o644)
    return folder, model, X[:20]


def _run(folder, mode, env, user=None):
    cmd = [sys.executable, str(folder / "run.py"), mode, str(folder / "model.joblib"), str(folder / "rows.npy")]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] + cmd
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _env(**changes):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update(changes)
    return env


def _reference(model, X):
    from featurelens.explainers.tree import tree_shap_values

    return tree_shap_values(model, X)


@pytest.mark.slow
def test_kernels_compile_once_and_later_processes_load_them(files, tmp_path):
    folder, model, X = files
    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    first = _run(folder, "numba", env)
    second = _run(folder, "numba", env)
    assert first["numba"] and second["numba"]
    for name in ("_pd_serial", "_walk_forest"):
        assert first["stats"][name][1] >= 1, (name, first["stats"])  # compiled (a cache miss)
        assert second["stats"][name] == [second["stats"][name][0], 0] and second["stats"][name][0] >= 1, \
            (name, second["stats"])  # loaded from the cache, nothing compiled
    assert any(p.suffix == ".nbi" for p in (tmp_path / "cache").rglob("*"))
    values, base = _reference(model, X)
    np.testing.assert_allclose(second["values"], values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(second["base"], base, rtol=0, atol=1e-12)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_a_read_only_install_without_a_writable_cache_folder_still_explains(files):
    """The package copied to a folder its user cannot write, no writable home folder and no
    NUMBA_CACHE_DIR: every cache locator of numba fails, ``cache=True`` is dropped, the kernels
    compile in memory and the values are the same."""
    import tempfile

    source, model, X = files
    user = None
    if os.geteuid() == 0:  # root writes anywhere: run as nobody
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv to drop privileges")
        user = 65534
    # a folder the other user can read (pytest's own are private to this one)
    base = Path(tempfile.mkdtemp(prefix="featurelens-readonly-"))
    try:
        folder = base / "files"
        shutil.copytree(source, folder)
        install = base / "site"
        shutil.copytree(SRC / "featurelens", install / "featurelens",
                        ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
        home = base / "home"
        home.mkdir()
        tree = [base, *base.rglob("*")]
        for path in tree:
            os.chmod(path, 0o555 if path.is_dir() else 0o444)
        env = _env(PYTHONPATH=str(install), HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"),
                   PYTHONDONTWRITEBYTECODE="1")
        out = _run(folder, "numba", env, user=user)
        assert out["file"].startswith(str(install)), out["file"]  # the read-only copy ran
        assert out["numba"]
        assert not any(p.suffix in (".nbi", ".nbc") for p in install.rglob("*"))
        assert not (home / ".cache").exists()
    finally:
        for path in [base, *base.rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        shutil.rmtree(base, ignore_errors=True)
    values, base_value = _reference(model, X)
    np.testing.assert_allclose(out["values"], values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(out["base"], base_value, rtol=0, atol=1e-12)


def test_without_numba_the_numpy_path_gives_the_same_values(files):
    folder, model, X = files
    out = _run(folder, "no-numba", _env())
    assert out["numba"] is False
    values, base = _reference(model, X)
    np.testing.assert_allclose(out["values"], values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(out["base"], base, rtol=0, atol=1e-12)


NO_TORCH = r"""
import sys

class _Block:  # torch and the other heavy extras cannot be imported in this process
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "transformers", "ray", "dask"):
            raise ImportError(f"{name} is blocked")
        return None

sys.meta_path.insert(0, _Block())
import numpy as np, pandas as pd
import featurelens as fl
from sklearn.ensemble import GradientBoostingClassifier
import lightgbm as lgb

rng = np.random.default_rng(0)
X = pd.DataFrame(rng.normal(size=(200, 4)), columns=list("abcd"))
y = (X["a"] + X["b"] > 0).astype(int)
gbc = GradientBoostingClassifier(n_estimators=8, random_state=0).fit(X, y)
fl.explainer("tree_shap", gbc, interactions=True).explain(X[:5], target=1)
fl.explainer("tree_shap", gbc).explain(X[:5])                              # target None: a model call
fl.explainer("tree_shap", gbc, background=X[:20]).explain(X[:5], target=1)  # interventional
booster = lgb.train({"objective": "binary", "verbose": -1}, lgb.Dataset(X.to_numpy(), y), 5)
fl.explainer("tree_shap", booster).explain(X.to_numpy()[:5], target=1)      # a raw Booster
booster.save_model(sys.argv[1] + "/model.txt")
X.to_csv(sys.argv[1] + "/data.csv", index=False)
from featurelens.cli import main
assert main(["explain", "--model", sys.argv[1] + "/model.txt", "--data", sys.argv[1] + "/data.csv",
             "--method", "tree_shap", "--rows", "5", "--out", sys.argv[1] + "/report"]) == 0
print(sorted(k for k in sys.modules if k.split(".")[0] in ("torch", "transformers", "ray", "dask")))
"""


def test_the_tree_path_never_imports_torch(tmp_path):
    """TreeSHAP (values, interactions, the predicted class, interventional), a raw Booster and
    ``featurelens explain`` of a LightGBM model file, in a process where torch (and transformers,
    ray, dask) cannot be imported."""
    pytest.importorskip("lightgbm")
    pytest.importorskip("pandas")
    script = tmp_path / "no_torch.py"
    script.write_text(NO_TORCH)
    out = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=600,
                         env=_env())
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
