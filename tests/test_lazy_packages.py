"""Packages that load their public names on first use (featurelens.learning, .selection,
.datasets): every name in __all__ is the function or class it names, even after all submodules
were imported (a submodule named like a function, learning/agop.py and ``agop``, must not
replace the function), and a torch-only name without torch raises the ImportError naming the
extra."""

import importlib
import os
import pkgutil
import subprocess
import sys
import textwrap
import types

import pytest

PACKAGES = ["featurelens.learning", "featurelens.selection", "featurelens.datasets"]


@pytest.mark.parametrize("package", PACKAGES)
def test_public_names_are_not_submodules_after_every_submodule_is_imported(package):
    pkg = importlib.import_module(package)
    for info in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"{package}.{info.name}")
    for name in pkg.__all__:
        value = getattr(pkg, name)
        assert not isinstance(value, types.ModuleType), f"{package}.{name} is a module, not the public object"
    assert set(pkg.__all__) <= set(dir(pkg))


def test_torch_only_names_raise_the_extra_without_torch():
    src = os.path.join(os.path.dirname(__file__), "..", "src")
    code = textwrap.dedent(
        """
        import sys
        class _Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "torch":
                    raise ImportError(f"No module named {name!r} (blocked by the test)")
        sys.meta_path.insert(0, _Block())
        import featurelens as fl
        from sklearn.datasets import make_classification
        X, y = make_classification(n_samples=60, n_features=6, random_state=0)
        print(fl.selection.SIOFS(k=2).fit(X, y).get_support().sum())   # numpy selectors run
        print(round(float(fl.learning.cka(X, X)), 6))
        for name in ("SparseAutoencoder", "SAND"):
            holder = fl.learning if hasattr(fl.learning, "__all__") and name in fl.learning.__all__ else fl.selection
            try:
                getattr(holder, name)(k=2) if name == "SAND" else getattr(holder, name)(n_latents=4).fit(X)
                print("no error", name)
            except ImportError as err:
                print("ImportError", name, 'featurelens[torch]' in str(err))
        print("torch" in sys.modules)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240,
                          env=dict(os.environ, PYTHONPATH=os.path.abspath(src)))
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[0] == "2" and lines[1] == "1.0"
    assert lines[2] == "ImportError SparseAutoencoder True", lines
    assert lines[3] == "ImportError SAND True", lines
    assert lines[4] == "False"
