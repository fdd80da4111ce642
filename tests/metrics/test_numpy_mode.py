"""The metrics in numpy mode (issue 32): on a numpy model (a scikit-learn estimator, a numpy
function) every metric that needs only forward passes runs on numpy arrays and never imports torch;
its values equal those of the torch path.

Two references for each case of tests/_numpy_mode_cases.py:

- the tensor path of the same numpy model (``Model.with_numpy`` patched to keep the Model in tensor
  mode: the rows are built as tensors and handed to the model as numpy, as before numpy mode);
- a torch module around the same numpy function (float64, its outputs those of the function on the
  same rows), a real torch model through every torch branch of the metrics.

Values agree to 1e-10 (they differ only in the order of a few float64 sums). A subprocess with
torch made unimportable computes every case again and the audit's default metrics; torch-only
metrics refuse there with an ImportError naming the ``featurelens[torch]`` extra.
"""

import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens import metrics as M
from featurelens.metrics import _perturb as P
from featurelens.models import Model

from _numpy_mode_cases import CASES, data, estimator, image_function  # tests/ is on sys.path (conftest.py)

TOL = 1e-10
HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
SRC = os.path.join(os.path.dirname(TESTS), "src")
#: Cases whose units (log-odds of predict_proba) a torch module that returns probabilities as its
#: "logits" does not have: compared with the tensor path only.
ESTIMATOR_UNITS = {"deletion_log_odds"}


class Wrapped(torch.nn.Module):
    """A torch module computing ``fn`` on the numpy rows of its input tensor; its one float64
    parameter makes the Model evaluate it in float64 (the dtype of the numpy path)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn
        self.dtype_anchor = torch.nn.Parameter(torch.zeros((), dtype=torch.float64))

    def forward(self, t):
        return torch.as_tensor(np.asarray(self.fn(t.detach().cpu().numpy()), dtype=np.float64))


@pytest.fixture(scope="module")
def setup():
    est = estimator()
    return {
        "data": data(),
        "numpy": {"rows": est, "images": image_function},
        "torch": {"rows": Wrapped(est.predict_proba), "images": Wrapped(image_function)},
    }


def _assert_same(got: dict, want: dict, name: str):
    assert set(got) == set(want)
    for key in want:
        g, w = np.asarray(got[key]), np.asarray(want[key])
        assert g.shape == w.shape, f"{name} {key}: shape {g.shape} != {w.shape}"
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"{name} {key}: NaN where the reference has none")
        np.testing.assert_allclose(g, w, rtol=TOL, atol=TOL, equal_nan=True, err_msg=f"{name} {key}")


def _informative(values: dict, name: str):
    """A comparison can fail only if the values say something: finite values that are not all equal
    somewhere (a metric returning NaN or a constant everywhere would match any reference)."""
    assert any(np.isfinite(v).any() and np.ptp(v[np.isfinite(v)]) > 0 for v in values.values()), \
        f"{name}: every value is NaN or the same ({values})"


@pytest.fixture
def tensor_path(monkeypatch):
    """Keep every Model in tensor mode (numpy models evaluated from tensors, as before numpy mode)."""
    monkeypatch.setattr(Model, "with_numpy", lambda self: self)


@pytest.mark.parametrize("name,kind,call", CASES, ids=[c[0] for c in CASES])
def test_numpy_mode_equals_torch_module(setup, name, kind, call):
    got = call(setup["numpy"][kind], setup["data"][kind])
    _informative(got, name)
    if name in ESTIMATOR_UNITS:
        pytest.skip("units of predict_proba (compared with the tensor path)")
    _assert_same(got, call(setup["torch"][kind], setup["data"][kind]), name)


@pytest.mark.parametrize("name,kind,call", CASES, ids=[c[0] for c in CASES])
def test_numpy_mode_equals_tensor_path(setup, request, name, kind, call):
    got = call(setup["numpy"][kind], setup["data"][kind])
    request.getfixturevalue("tensor_path")
    _assert_same(got, call(setup["numpy"][kind], setup["data"][kind]), name)


def test_prepare_gives_numpy_for_a_numpy_model_and_tensors_for_a_torch_model(setup):
    d = setup["data"]["rows"]
    m, xt, at, t, f0 = P.prepare(setup["numpy"]["rows"], d["x"], d["a"], None)
    assert m.numpy_mode and all(isinstance(v, np.ndarray) for v in (xt, at, t, f0))
    assert xt.dtype == np.float64 and t.dtype == np.int64 and f0.dtype == np.float64
    np.testing.assert_array_equal(t, setup["numpy"]["rows"].predict_proba(d["x"]).argmax(1))
    np.testing.assert_array_equal(at, d["a"])
    m2, xt2, at2, t2, f02 = P.prepare(setup["torch"]["rows"], d["x"], d["a"], None)
    assert not m2.numpy_mode and all(isinstance(v, torch.Tensor) for v in (xt2, at2, t2, f02))
    np.testing.assert_allclose(f0, f02.numpy(), rtol=0, atol=1e-15)


@pytest.mark.parametrize("sigma", [0.7, 1.5, 4.0])  # 4.0: radius 12 > 6 pixels, replicate padding
def test_numpy_gaussian_blur_equals_torch(sigma):
    x = np.random.default_rng(0).normal(size=(3, 2, 6, 7))
    got = P.gaussian_blur(x, sigma)
    want = P.gaussian_blur(torch.from_numpy(x), sigma).numpy()
    assert isinstance(got, np.ndarray) and got.shape == x.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)
    assert np.abs(got - x).max() > 1e-3  # it does blur


@pytest.mark.parametrize("baseline", ["mean", "min", 0.25])
def test_baseline_tensor_numpy_equals_torch(baseline):
    x = np.random.default_rng(1).normal(size=(3, 2, 4, 4))
    got = P.baseline_tensor(baseline, x)
    want = P.baseline_tensor(baseline, torch.from_numpy(x)).numpy()
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)


def test_region_helpers_numpy_equal_torch():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(4, 12))
    a[:, 5] = a[:, 7]  # ties: the smaller index ranks first on both backends
    region_of = np.array([0, 2, 1, 1, 3, 2, 0, 3, 3, 1, 2, 0])
    s_np, s_t = P.region_scores(a, region_of, 4), P.region_scores(torch.from_numpy(a), region_of, 4).numpy()
    np.testing.assert_array_equal(s_np, s_t)  # element by element, in order: bit for bit
    np.testing.assert_allclose(s_np[:, 2], a[:, [1, 5, 10]].sum(1), rtol=1e-14)
    r_np, r_t = P.descending_ranks(a), P.descending_ranks(torch.from_numpy(a)).numpy()
    np.testing.assert_array_equal(r_np, r_t)
    np.testing.assert_array_equal(np.sort(r_np, axis=1), np.broadcast_to(np.arange(12), (4, 12)))
    np.testing.assert_array_equal(P.element_view(r_np, region_of, (4, 12)),
                                  P.element_view(torch.from_numpy(r_np), region_of, (4, 12)).numpy())


@pytest.mark.parametrize("reduce", [None, "sum", "mean", "max", "min"])
@pytest.mark.parametrize("batch_size", [None, 4, 10])  # 4 < n rows: chunks that cut a copy
def test_expanded_forward_numpy_equals_tensor_path(setup, reduce, batch_size):
    est, x = setup["numpy"]["rows"], setup["data"]["rows"]["x"]
    noise = np.random.default_rng(3).normal(size=(5,) + x.shape)

    def run(m):
        xt = m.to_tensor(x)
        as_rows = (lambda v: v) if isinstance(xt, np.ndarray) else torch.from_numpy

        def make_rows(c, s):
            return xt[s] + as_rows(noise[np.asarray(c), np.asarray(s)])

        return m.expanded_forward(xt, 5, make_rows, target=m.resolve_target(1, xt), reduce=reduce)

    m = Model(est, batch_size=batch_size)
    got, want = run(m.with_numpy()), run(m)
    assert isinstance(got, np.ndarray) and isinstance(want, torch.Tensor)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-14, atol=1e-15)
    rows = (x[None] + noise).reshape(-1, x.shape[1])
    direct = est.predict_proba(rows)[:, 1].reshape(5, -1)
    expect = {None: direct, "sum": direct.sum(0), "mean": direct.mean(0), "max": direct.max(0), "min": direct.min(0)}
    np.testing.assert_allclose(got, expect[reduce], rtol=1e-13)
    # both Models count in m (numpy mode: a derived Model); per path one row checks the target
    assert m.calls == 2 * (5 * len(x) + 1)


def test_executor_in_numpy_mode_equals_serial(setup):
    d = setup["data"]["images"]
    serial = M.deletion_curve(image_function, d["x"], d["a"], steps=5, baseline="blur")
    with fl.parallel.ThreadExecutor(2) as ex:
        par = M.deletion_curve(Model(image_function, batch_size=3), d["x"], d["a"], steps=5, baseline="blur",
                               executor=ex)
    np.testing.assert_allclose(par[0], serial[0], rtol=1e-13, atol=1e-15)


def test_dataframe_estimator_in_numpy_mode_equals_tensor_path(monkeypatch):
    """An estimator fitted on a DataFrame is called with its columns in numpy mode too."""
    import pandas as pd
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(4)
    X = pd.DataFrame(rng.normal(size=(80, 5)), columns=list("abcde"))
    y = (X["a"] - X["c"] > 0).astype(int)
    rf = RandomForestClassifier(n_estimators=8, max_depth=3, random_state=0).fit(X, y)
    a = rng.normal(size=(6, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # e.g. "X does not have valid feature names"
        got = M.deletion_curve(rf, X.iloc[:6], a, steps=5, baseline="mean")
    monkeypatch.setattr(Model, "with_numpy", lambda self: self)
    want = M.deletion_curve(rf, X.iloc[:6], a, steps=5, baseline="mean")
    np.testing.assert_allclose(got[0], want[0], rtol=TOL, atol=TOL)
    assert np.ptp(got[1]) > 0


@pytest.mark.parametrize("call", [
    lambda est, x: M.model_randomization("occlusion", x, model=est, explainer_params={"baseline": 0.0}),
    lambda est, x: M.efficient_mprt(fl.explainer("occlusion", est, baseline=0.0), x),
    lambda est, x: M.smooth_mprt("occlusion", x, model=fl.Model(est), explainer_params={"baseline": 0.0}),
    lambda est, x: M.input_invariance(fl.explainer("occlusion", est, baseline=0.0), x),
    lambda est, x: M.relative_representation_stability(fl.explainer("occlusion", est, baseline=0.0), x, layer="0"),
], ids=["model_randomization", "efficient_mprt", "smooth_mprt", "input_invariance", "relative_representation_stability"])
def test_torch_only_metrics_refuse_a_numpy_model_naming_the_extra(setup, call):
    with pytest.raises(TypeError, match=r'torch.nn.Module .*pip install "featurelens\[torch\]"'):
        call(setup["numpy"]["rows"], setup["data"]["rows"]["x"])


def test_torch_only_metrics_are_declared_for_the_audit():
    """The audit skips a metric whose spec needs "parameters" or "layer" on a numpy model (see the
    subprocess test below): every torch-only metric declares one of them."""
    for name in ("model_randomization", "efficient_mprt", "smooth_mprt", "input_invariance",
                 "relative_representation_stability"):
        assert M.spec(name).requires & {"parameters", "layer"}, name


# --------------------------------------------------------------------------------------------------
# without torch


_BLOCK = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("torch", "torchvision", "transformers", "ray", "dask", "distributed"):
            raise ImportError(f"No module named {name!r} (blocked: torch-free test)")
        return None
sys.meta_path.insert(0, _Block())
"""


def _run(code: str, cwd, timeout: float = 300) -> dict:
    """Run ``code`` (after the import blocker) in a fresh interpreter; the last line it prints is JSON."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, TESTS]), MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, "-c", _BLOCK + textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-6000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_every_case_runs_without_torch_and_equals_the_torch_module(setup, tmp_path):
    got = _run("""
        import json, sys
        import numpy as np
        import featurelens.metrics
        imported_with_metrics = "torch" in sys.modules
        from _numpy_mode_cases import CASES, data, estimator, image_function
        models, d = {"rows": estimator(), "images": image_function}, data()
        out = {}
        for name, kind, call in CASES:
            for key, value in call(models[kind], d[kind]).items():
                out[f"{name}/{key}"] = np.asarray(value, dtype=np.float64)
        np.savez("values.npz", **out)
        print(json.dumps({"torch": "torch" in sys.modules, "with_metrics": imported_with_metrics, "n": len(out)}))
    """, tmp_path)
    assert got == {"torch": False, "with_metrics": False, "n": got["n"]} and got["n"] >= len(CASES)
    saved = np.load(tmp_path / "values.npz")
    for name, kind, call in CASES:
        ref_model = setup["numpy" if name in ESTIMATOR_UNITS else "torch"][kind]
        want = call(ref_model, setup["data"][kind])
        _assert_same({k: saved[f"{name}/{k}"] for k in want}, want, name)


@pytest.mark.slow
def test_audit_default_metrics_on_an_estimator_import_no_torch(tmp_path):
    got = _run("""
        import json, sys
        import numpy as np
        import featurelens as fl
        from featurelens import metrics as M
        from featurelens._audit.scoring import default_metrics
        from sklearn.ensemble import GradientBoostingClassifier
        rng = np.random.default_rng(0)
        X = rng.normal(size=(120, 6))
        y = (X[:, 0] + X[:, 1] > 0).astype(int)
        gbc = GradientBoostingClassifier(n_estimators=20, max_depth=2, random_state=0).fit(X, y)
        table = fl.audit(gbc, X, y, n_explain=8, steps=5, n_subsets=10, robustness_samples=2, progress=False)
        refusals = {}
        for name in ("model_randomization", "input_invariance"):
            try:
                M.spec(name).function("occlusion", X[:4], model=gbc, explainer_params={"baseline": 0.0})
            except ImportError as err:
                refusals[name] = str(err)
        print(json.dumps({
            "torch": sorted({m.partition(".")[0] for m in sys.modules} & {"torch", "transformers", "ray", "dask"}),
            "defaults": list(default_metrics()),
            "columns": {M.spec(m).column: table[M.spec(m).column].tolist() for m in default_metrics()},
            "methods": table["method"].tolist(), "status": table["status"].tolist(),
            "notes": table.attrs["notes"], "skipped": table.attrs["skipped_metrics"], "refusals": refusals,
        }))
    """, tmp_path)
    assert got["torch"] == [], f"the audit imported {got['torch']}"
    assert got["notes"] == [], got["notes"]  # no metric failed
    assert "torch" in got["skipped"]["model_randomization"]
    assert all("ground_truth masks" in why for m, why in got["skipped"].items() if m != "model_randomization")
    ran = [i for i, s in enumerate(got["status"]) if s == "ok"]
    assert {"occlusion", "random"} <= {got["methods"][i] for i in ran}
    for name in set(got["defaults"]) - set(got["skipped"]):
        column = M.spec(name).column
        values = [got["columns"][column][i] for i in ran]
        assert all(np.isfinite(v) for v in values), f"{name}: {values}"
    assert set(got["refusals"]) == {"model_randomization", "input_invariance"}
    for msg in got["refusals"].values():
        assert 'pip install "featurelens[torch]"' in msg and "not installed" in msg
