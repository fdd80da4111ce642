"""executor= through MinShapSelector, the audit, the robustness and randomisation metrics and the
command line (``--executor/--workers/--address``), and the row-parallel explainers on Ray and Dask.

The reference of every executor is the serial path (no executor), which the existing tests check
against brute force and planted truth; here each parallel run must reproduce it bitwise (the
Shapley explainers, SPEX, MinShap, the perturbation metrics) or, where gradient explainers batch
other rows together, to 1e-6 relative (see tests/explainers/test_executors_rows.py).
"""

import sys

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

import featurelens as fl
from featurelens import metrics
from featurelens.cli import main
from featurelens.parallel import DaskExecutor, RayExecutor, SerialExecutor, ThreadExecutor, make_executor
from featurelens.selection import MinShapSelector
from featurelens.selection import minshap as minshap_module

pd = pytest.importorskip("pandas")


# -- shared small problems --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(5, 12), torch.nn.Tanh(), torch.nn.Linear(12, 3)).double()


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(0).normal(size=(7, 5))


@pytest.fixture(scope="module")
def background():
    return np.random.default_rng(1).normal(size=(3, 5))


@pytest.fixture(scope="module")
def threads():
    with ThreadExecutor(2) as ex:
        yield ex


@pytest.fixture(scope="module")
def ray_ex(ray_session):
    # Half a CPU per actor: the pool holds 1 of the session's 2 CPUs, so that the command line's
    # own RayExecutor (--workers 1) can start beside it.
    with RayExecutor(num_workers=2, num_cpus=0.5) as ex:
        yield ex


@pytest.fixture(scope="module")
def dask_ex(dask_client):
    with DaskExecutor(dask_client) as ex:
        yield ex


@pytest.fixture(params=["ray", "dask"])
def cluster(request):
    return request.getfixturevalue(f"{request.param}_ex")


#: Row-parallel explainers of Acceptance 1 (small budgets; seeded).
ROW_EXPLAINERS = {
    "kernel_shap": {"budget": 24},
    "permutation_shap": {"budget": 20},
    "spex": {"budget": 300, "max_order": 2},
}


# -- Acceptance 1: row-parallel explain on Ray and Dask ----------------------------------------------
@pytest.mark.parametrize("name", list(ROW_EXPLAINERS))
def test_row_parallel_explain_on_clusters_bitwise_equal_to_serial(name, cluster, net, X, background):
    ex = fl.explainer(name, net, background=background, seed=5, **ROW_EXPLAINERS[name])
    serial = ex.explain(X, target=1)
    par = ex.explain(X, target=1, executor=cluster)
    np.testing.assert_array_equal(par.values, serial.values)
    np.testing.assert_array_equal(par.target, serial.target)
    assert par.model_calls == serial.model_calls > 0
    if serial.base_values is not None:
        np.testing.assert_array_equal(par.base_values, serial.base_values)


def test_kernel_shap_games_on_ray_bitwise_equal_to_serial(ray_ex, net, X, background):
    # The game level: each row's coalitions go to the actors in the serial chunks (batch_size=6
    # model rows, 3 background rows per coalition: 2 coalitions per chunk, many chunks per row).
    kw = dict(background=background, seed=5, budget=24, batch_size=6)
    serial = fl.explainer("kernel_shap", net, **kw).explain(X[:3], target=0)
    par = fl.explainer("kernel_shap", net, executor=ray_ex, **kw).explain(X[:3], target=0)
    np.testing.assert_array_equal(par.values, serial.values)
    assert par.model_calls == serial.model_calls > 0


# -- MinShapSelector ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def planted():
    rng = np.random.default_rng(3)
    Xp = rng.normal(size=(160, 6))
    y = (Xp[:, 0] + 0.8 * Xp[:, 1] + 0.2 * rng.normal(size=160) > 0).astype(int)
    return Xp, y


def _minshap(executor=None, **kw):
    return MinShapSelector(k=2, n_permutations=4, estimator=LogisticRegression(), executor=executor, seed=1, **kw)


def _assert_same_fit(a, b):
    for attr in ("scores_", "shapley_", "deltas_", "pvalues_", "pvalues_per_permutation_", "permutations_"):
        np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr), err_msg=attr)
    assert a.game_calls_ == b.game_calls_
    np.testing.assert_array_equal(a.get_support(), b.get_support())


def test_minshap_executors_bitwise_equal_to_serial(planted, threads, monkeypatch):
    Xp, y = planted
    # One coalition per chunk, so the executor gets many tasks (the chunks are the serial ones).
    monkeypatch.setattr(minshap_module, "_MIN_CHUNK_ROWS", 1)
    serial = _minshap().fit(Xp, y)
    # one evaluation per distinct prefix set of the orderings (counted here by brute force)
    prefixes = {frozenset(perm[:t].tolist()) for perm in serial.permutations_ for t in range(7)}
    assert serial.game_calls_ == len(prefixes) > 7
    assert sorted(np.flatnonzero(serial.get_support())) == [0, 1]  # the planted features
    for executor in (threads, SerialExecutor()):
        _assert_same_fit(_minshap(executor).fit(Xp, y), serial)


def test_minshap_on_clusters_bitwise_equal_to_serial(planted, cluster, monkeypatch):
    Xp, y = planted
    monkeypatch.setattr(minshap_module, "_MIN_CHUNK_ROWS", 1)
    _assert_same_fit(_minshap(cluster).fit(Xp, y), _minshap().fit(Xp, y))


def test_minshap_chunks_depend_on_the_data_only():
    size = minshap_module._chunk_size
    # at least 2^14 predicted rows per chunk: 22 coalitions x 48 rows (1,056 rows) are one chunk
    assert size(22, 48) >= 22
    # 2,000 coalitions x 100 rows: 2^14 // 100 = 163 coalitions (more than 2,000 / 24 = 84)
    assert size(2000, 100) == 163
    # 10,000 coalitions x 10 rows: 10,000 / 24 -> 417 coalitions (4,170 rows: between the bounds)
    assert size(10_000, 10) == 1638  # 2^14 // 10 = 1,638 > 417: the lower bound wins
    assert size(100_000, 10) == 4167  # ceil(100,000 / 24): 24 chunks of 41,670 rows
    assert size(10_000, 1000) == 131  # 24 chunks would hold 417,000 rows each: capped at 2^17 // 1000
    assert size(3, 200_000) == 1  # one coalition is over 2^17 rows: one per chunk
    for q, m in ((5, 1), (1000, 3), (50_000, 7), (3, 200_000), (10**6, 50)):
        c = size(q, m)
        assert c >= 1 and (c * m <= 1 << 17 or c == 1)
        assert -(-q // c) <= max(24, -(-q * m // (1 << 17)))  # 24 chunks unless memory needs more


def test_minshap_with_an_executor_clones_and_checks_it(threads, planted):
    # Regression: an executor refused to be deep-copied, so scikit-learn's clone (cross-validation,
    # pipelines) failed on MinShapSelector(executor=...). Copies now share the executor.
    sel = _minshap(threads)
    copy = clone(sel)
    assert copy.executor is threads and copy.get_params()["executor"] is threads
    with pytest.raises(TypeError, match="executor must be None or an executor with map"):
        _minshap(executor="threads").fit(*planted)


# -- the audit ---------------------------------------------------------------------------------------
AUDIT_KW = dict(n_explain=6, steps=4, n_subsets=4, robustness_samples=2, as_frame=False, progress=False, seed=2)
#: Columns that are exact functions of the maps and the model (the timing columns are not).
SCORES = ("insertion_minus_deletion", "deletion_auc", "insertion_auc", "faithfulness_correlation",
          "avg_sensitivity", "max_sensitivity", "sparseness", "complexity", "randomization_similarity")


def _audit_rows(table):
    return {r["method"]: r for r in table}


@pytest.fixture(scope="module")
def audit_data():
    return np.random.default_rng(4).normal(size=(10, 5))


def test_audit_with_an_executor_equals_serial(net, audit_data, threads):
    Xa = audit_data
    methods = ["kernel_shap", "saliency", "integrated_gradients", "random"]
    serial = _audit_rows(fl.audit(net, Xa, methods=methods, **AUDIT_KW))
    par = _audit_rows(fl.audit(net, Xa, methods=methods, executor=threads, **AUDIT_KW))
    assert serial.keys() == par.keys()
    for name in methods:
        s, p = serial[name], par[name]
        assert s["status"] == p["status"] == "ok", (s, p)
        if name == "integrated_gradients":  # its one baseline pass per call is made once per part
            assert s["model_calls"] < p["model_calls"] <= s["model_calls"] + 5 + 1, name  # + the target check
        else:  # + the caller's one-row check of the given targets where serial leaves it to the passes
            in_pass = fl.explainers.explainer_class(name).target_in_pass
            assert s["model_calls"] + in_pass == p["model_calls"], name
        for key in SCORES:
            assert key in s, (name, key)
            if name in ("kernel_shap", "random"):  # one game (or one random stream) per row: bitwise
                assert p[key] == s[key] or (np.isnan(p[key]) and np.isnan(s[key])), (name, key)
            else:  # gradient maps of parts batched apart: equal up to the last bits
                np.testing.assert_allclose(p[key], s[key], rtol=1e-6, atol=1e-12, err_msg=f"{name} {key}")
    assert fl.audit(net, Xa, methods=["kernel_shap"], executor=threads, **AUDIT_KW).explanations["kernel_shap"] \
        .values.shape == (6, 5)


def test_audit_refuses_a_non_executor(net, audit_data):
    with pytest.raises(TypeError, match="executor must be None or an executor with map"):
        fl.audit(net, audit_data, methods=["saliency"], executor=4, **AUDIT_KW)


def test_audit_on_ray_equals_serial(net, audit_data, ray_ex):
    Xa = audit_data
    kw = dict(AUDIT_KW, randomization=False)
    serial = _audit_rows(fl.audit(net, Xa, methods=["permutation_shap"], **kw))["permutation_shap"]
    par = _audit_rows(fl.audit(net, Xa, methods=["permutation_shap"], executor=ray_ex, **kw))["permutation_shap"]
    assert par["model_calls"] == serial["model_calls"]
    for key in SCORES[:-1]:
        assert par[key] == serial[key], key


# -- robustness and randomisation re-explanations ------------------------------------------------------
def test_robustness_metrics_with_an_executor_bitwise_equal(net, X, background, threads):
    ex = fl.explainer("kernel_shap", net, background=background, seed=3, budget=24)
    for fn in (metrics.max_sensitivity, metrics.avg_sensitivity, metrics.local_lipschitz):
        serial = fn(ex, X, target=1, n_samples=3, seed=4)
        par = fn(ex, X, target=1, n_samples=3, seed=4, executor=threads)
        np.testing.assert_array_equal(par, serial)
        assert np.isfinite(serial).all() and (serial > 0).all()
    with pytest.raises(TypeError, match="executor must be None or an executor with map"):
        metrics.max_sensitivity(ex, X, executor=lambda *a: None)


def test_model_randomization_with_an_executor_bitwise_equal(net, X, background, threads):
    params = dict(background=background, seed=3, budget=24)
    serial = metrics.model_randomization("kernel_shap", X, model=net, target=1, explainer_params=params)
    par = metrics.model_randomization("kernel_shap", X, model=net, target=1, explainer_params=params, executor=threads)
    assert par["layers"] == serial["layers"]
    np.testing.assert_array_equal(par["similarity"], serial["similarity"])


# -- make_executor -----------------------------------------------------------------------------------
def test_make_executor_kinds_and_errors():
    with make_executor("threads", workers=3) as ex:
        assert isinstance(ex, ThreadExecutor) and ex.n_workers == 3
    assert ex._is_closed()
    assert isinstance(make_executor("serial"), SerialExecutor)
    with pytest.raises(ValueError, match="kind must be one of"):
        make_executor("gpu")
    with pytest.raises(ValueError, match="address applies to the ray and dask executors"):
        make_executor("threads", address="auto")
    with pytest.raises(ValueError, match="workers must be"):
        make_executor("threads", workers=0)


def test_make_executor_dask_joins_an_address_and_leaves_the_cluster(dask_client, X):
    with make_executor("dask", address=dask_client.scheduler.address) as ex:
        assert ex.map(lambda s, i: s * i, [1, 2, 3], shared=2) == [2, 4, 6]
    assert ex._is_closed() and dask_client.status == "running"


# -- the command line --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cli_files(tmp_path_factory):
    import joblib
    from sklearn.ensemble import GradientBoostingClassifier

    folder = tmp_path_factory.mktemp("plumbing")
    rng = np.random.default_rng(0)
    data = rng.normal(size=(40, 4))
    y = (data[:, 0] - data[:, 2] > 0).astype(int)
    frame = pd.DataFrame(data, columns=["a", "b", "c", "d"])
    frame["label"] = y
    frame.to_csv(folder / "data.csv", index=False)
    joblib.dump(GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0).fit(data, y),
                folder / "gb.joblib")
    frame.drop(columns=["label"]).assign(target=(data[:, 1] > 0).astype(int)).to_csv(folder / "sel.csv", index=False)
    return folder


def _explain_args(folder, out, *extra):
    return ["explain", "--model", str(folder / "gb.joblib"), "--trust-model-file", "--data", str(folder / "data.csv"),
            "--labels", "label", "--rows", "8", "--background", "6", "--method", "permutation_shap",
            "--out", str(out), *extra]


@pytest.fixture(scope="module")
def serial_values(cli_files, tmp_path_factory):
    out = tmp_path_factory.mktemp("serial") / "rep"
    assert main(_explain_args(cli_files, out)) == 0
    return (out / "values.csv").read_bytes()


@pytest.mark.parametrize("flags", [["--executor", "threads", "--workers", "2"],
                                   # 3 threads > 2 rows: the coalitions of each row are split instead
                                   ["--executor", "threads", "--workers", "3", "--rows", "2"]])
def test_cli_explain_threads_writes_the_serial_values(cli_files, serial_values, tmp_path, capsys, flags):
    out = tmp_path / "rep"
    code = main(_explain_args(cli_files, out, *flags))
    assert code == 0, capsys.readouterr().err
    written = (out / "values.csv").read_bytes()
    if "--rows" in flags:
        assert written.splitlines() == serial_values.splitlines()[:3]  # header + the first 2 rows
        assert fl.load_explanation(out / "explanation.npz").params["executor"] == "ThreadExecutor(n=3)"
    else:
        assert written == serial_values


def test_cli_explain_closes_the_executor(cli_files, tmp_path, capsys, monkeypatch):
    from featurelens import parallel

    made = []

    def spy(kind, workers=None, address=None):
        made.append(parallel.ThreadExecutor(workers))
        return made[-1]

    monkeypatch.setattr(parallel, "make_executor", spy)
    assert main(_explain_args(cli_files, tmp_path / "rep", "--executor", "threads", "--workers", "2")) == 0
    assert len(made) == 1 and made[0]._is_closed()


@pytest.mark.slow  # about 6 s: the Ray actor and the Dask workers import torch and sklearn first
def test_cli_explain_on_ray_and_dask_writes_the_serial_values(cli_files, serial_values, tmp_path, capsys,
                                                              ray_ex, dask_client):
    # ray: the Ray of this process (initialised by the session) is reused, and left running.
    assert main(_explain_args(cli_files, tmp_path / "r", "--executor", "ray", "--workers", "1")) == 0, \
        capsys.readouterr().err
    assert (tmp_path / "r" / "values.csv").read_bytes() == serial_values
    assert ray_ex.map(lambda s, i: i + s, [1], shared=1) == [2]  # the session's Ray still serves
    # dask: the session's scheduler joined by its address, left running.
    assert main(_explain_args(cli_files, tmp_path / "d", "--executor", "dask", "--address",
                              dask_client.scheduler.address)) == 0, capsys.readouterr().err
    assert (tmp_path / "d" / "values.csv").read_bytes() == serial_values
    assert dask_client.status == "running"


@pytest.mark.parametrize("command", ["explain", "audit", "select"])
def test_cli_missing_engine_is_one_line_exit_2(command, cli_files, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    if command == "select":
        args = ["select", str(cli_files / "sel.csv"), "--target", "target", "--method", "minshap"]
    elif command == "audit":
        args = ["audit", "--model", str(cli_files / "gb.joblib"), "--trust-model-file", "--data",
                str(cli_files / "data.csv"), "--labels", "label", "--out", str(tmp_path / "a")]
    else:
        args = _explain_args(cli_files, tmp_path / "e")
    code = main(args + ["--executor", "ray"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "pip install featurelens[ray]" in err and f"featurelens {command}: error" in err


def test_cli_executor_flag_usage_errors(cli_files, tmp_path, capsys):
    cases = [
        (_explain_args(cli_files, tmp_path / "x", "--workers", "2"), "--workers applies with --executor"),
        (_explain_args(cli_files, tmp_path / "x", "--address", "auto"), "--address applies with --executor ray"),
        (_explain_args(cli_files, tmp_path / "x", "--executor", "threads", "--address", "auto"),
         "--address applies to --executor ray or dask"),
        (_explain_args(cli_files, tmp_path / "x", "--executor", "threads", "--workers", "0"), "positive integer"),
        (["select", str(cli_files / "sel.csv"), "--target", "target", "--method", "nbse", "--executor", "threads"],
         "--executor applies to --method minshap"),
    ]
    for args, message in cases:
        assert main(args) == 2, args
        assert message in capsys.readouterr().err, args
    assert not (tmp_path / "x").exists()


def test_cli_select_minshap_threads_equals_serial(cli_files, tmp_path, capsys):
    base = ["select", str(cli_files / "sel.csv"), "--target", "target", "--method", "minshap", "-k", "2"]
    assert main(base + ["--out", str(tmp_path / "s.csv")]) == 0
    assert main(base + ["--out", str(tmp_path / "t.csv"), "--executor", "threads", "--workers", "2"]) == 0
    assert pd.read_csv(tmp_path / "s.csv")["column"].tolist()[0] == "b"  # the planted column: target = [b > 0]
    assert (tmp_path / "s.csv").read_bytes() == (tmp_path / "t.csv").read_bytes()


def test_cli_audit_threads_prints_the_serial_table(cli_files, tmp_path, capsys):
    base = ["audit", "--model", str(cli_files / "gb.joblib"), "--trust-model-file", "--data",
            str(cli_files / "data.csv"), "--labels", "label", "--methods", "kernel_shap,random", "--n-explain", "5",
            "--no-progress"]
    assert main(base + ["--out", str(tmp_path / "s")]) == 0
    serial = capsys.readouterr().out
    assert main(base + ["--out", str(tmp_path / "t"), "--executor", "threads", "--workers", "2"]) == 0
    par = capsys.readouterr().out
    def drop(text):
        return [line for line in text.splitlines() if not line.startswith("report:")]

    assert drop(par) == drop(serial) and "kernel_shap" in serial
    import json

    settings = json.loads((tmp_path / "t" / "results.json").read_text())["settings"]
    assert settings["executor"] == "ThreadExecutor(n=2)"
