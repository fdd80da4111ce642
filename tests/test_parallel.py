"""Tests for featurelens.parallel: every executor (serial, threads, processes, Ray, Dask) against
the serial path, counts kept in the caller, worker errors, games that pickle without their
executor, and Model.from_factory (the model travels as its recipe, built once per worker)."""

import collections
import pickle
import sys
import threading

import numpy as np
import pytest
import torch

import _parallel_helpers as H
import featurelens as fl
from featurelens.games import FunctionGame, MaskedModel, local_executor
from featurelens.parallel import (
    DaskExecutor, ProcessExecutor, RayExecutor, SerialExecutor, ThreadExecutor, WorkerError,
)

KINDS = ["serial", "threads", "processes", "ray", "dask"]


@pytest.fixture(scope="module", params=KINDS)
def executor(request):
    """One executor of each kind for the module (the clusters are the session's)."""
    kind = request.param
    if kind == "serial":
        ex = SerialExecutor()
    elif kind == "threads":
        ex = ThreadExecutor(3)
    elif kind == "processes":
        # One thread per worker, like the caller (conftest): the same BLAS reductions, bitwise.
        ex = ProcessExecutor(2, threads_per_worker=1)
    elif kind == "ray":
        request.getfixturevalue("ray_session")
        ex = RayExecutor(num_workers=2)
    else:
        ex = DaskExecutor(request.getfixturevalue("dask_client"))
    yield ex
    ex.close()


def _masks(q, n, seed=0):
    return np.random.default_rng(seed).integers(0, 2, size=(q, n)).astype(bool)


def _mlp_model():
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.Tanh(), torch.nn.Linear(12, 3)).double()


# -- every executor against the serial path ---------------------------------------------------------
def test_function_game_bitwise_equal_to_serial(executor):
    masks = _masks(103, 9)
    serial = FunctionGame(H.weighted_sum, 9, batch_size=7)
    game = FunctionGame(H.weighted_sum, 9, batch_size=7, executor=executor)
    expected = serial(masks)
    # The planted value, computed here: sum of (i + 1) / 7 over the coalition plus 0.1 |S|^2.
    np.testing.assert_allclose(expected, masks @ (np.arange(1, 10) / 7) + 0.1 * masks.sum(1) ** 2, rtol=1e-15)
    values = game(masks)
    assert np.array_equal(values, expected)
    assert game.calls == serial.calls == 103


def test_masked_model_bitwise_equal_and_counts(executor):
    module = _mlp_model()
    rng = np.random.default_rng(1)
    x, background = rng.normal(size=6), rng.normal(size=(5, 6))
    serial_model, model = fl.Model(module), fl.Model(module)
    serial = MaskedModel(serial_model, x, background=background, batch_size=20)
    game = MaskedModel(model, x, background=background, batch_size=20, executor=executor)
    masks = _masks(37, 6, seed=2)  # chunks of 20 // 5 = 4 masks: 10 chunks
    expected = serial(masks)
    values = game(masks)
    assert np.array_equal(values, expected)
    # 37 coalitions x 5 background rows, counted in the caller, plus the one target pass each.
    assert game.calls == serial.calls == 37
    assert game.model_calls == serial.model_calls == 37 * 5
    assert model.calls == serial_model.calls == 37 * 5 + 1
    # The same game again: counts add up, values do not change.
    assert np.array_equal(game(masks[:9]), expected[:9])
    assert game.model_calls == 46 * 5 and model.calls == 46 * 5 + 1


def test_perturbation_metrics_bitwise_equal_with_an_executor(executor):
    """The model-calling metrics build their perturbed copies here, in the serial chunks, and run
    the forward passes on the executor: the same values, bit for bit, and the same row counts."""
    module = _mlp_model()
    rng = np.random.default_rng(4)
    x, a = rng.normal(size=(7, 6)), rng.normal(size=(7, 6))
    cases = [
        (fl.metrics.deletion_curve, {"steps": 6}),
        (fl.metrics.insertion_curve, {"steps": 6}),
        (fl.metrics.faithfulness_correlation, {"n_subsets": 9, "seed": 3}),
        (fl.metrics.infidelity, {"n_perturbations": 11, "seed": 4}),
    ]
    for metric, kwargs in cases:
        serial_model, model = fl.Model(module, batch_size=8), fl.Model(module, batch_size=8)
        expected = metric(serial_model, x, a, **kwargs)
        got = metric(model, x, a, executor=executor, **kwargs)
        for e, g in zip(expected if isinstance(expected, tuple) else (expected,),
                        got if isinstance(got, tuple) else (got,)):
            assert np.array_equal(e, g, equal_nan=True), metric.__name__
        assert model.calls == serial_model.calls > 8, metric.__name__


def test_worker_exception_reraised_with_its_message(executor):
    game = FunctionGame(H.failing, 4, batch_size=3, executor=executor)
    masks = _masks(20, 4, seed=3)
    masks[7] = True  # the chunk holding row 7 fails
    with pytest.raises(WorkerError, match="ZeroDivisionError.*planted failure in the game") as info:
        game(masks)
    assert info.value.worker_type == "ZeroDivisionError"
    assert info.value.worker_message == "planted failure in the game"
    assert game.calls == 0
    # The executor still works after a failed call.
    assert executor.map(H.square, [1, 2, 3], shared=2.0) == [2.0, 8.0, 18.0]


def test_map_keeps_order_and_takes_closures(executor):
    offset = 0.5
    out = executor.map(lambda shared, item: shared * item + offset, list(range(17)), shared=3)
    assert out == [3 * i + 0.5 for i in range(17)]
    assert executor.map(H.square, [], shared=1) == []


def test_unpicklable_task_is_a_clear_error(executor):
    if not executor.remote:
        pytest.skip("nothing is pickled in this process")
    with pytest.raises(TypeError, match="could not be pickled for the .*Model.from_factory"):
        executor.map(H.square, [1, 2], shared=threading.Lock())
    assert executor.map(H.square, [3], shared=1) == [9]


def test_shared_unpickled_once_per_worker_and_call(executor):
    if not executor.remote:
        pytest.skip("nothing is pickled in this process")
    out = executor.map(H.read_counted, list(range(8)), shared=H.Counted(2.0))
    assert [v for _, _, v in out] == [2.0 * i for i in range(8)]
    loads = collections.defaultdict(set)
    for pid, n_loads, _ in out:
        loads[pid].add(n_loads)
    # Within one call every task of a process saw the same count: the object was unpickled once there.
    assert all(len(seen) == 1 for seen in loads.values()), dict(loads)


# -- Model.from_factory -----------------------------------------------------------------------------
def _factory_game(**kwargs):
    model = fl.Model.from_factory(H.build_mlp)
    rng = np.random.default_rng(4)
    return MaskedModel(model, rng.normal(size=8), background=rng.normal(size=(4, 8)), **kwargs)


def test_factory_game_pickles_small_and_equal():
    import cloudpickle

    game = _factory_game()
    n_params = sum(p.numel() for p in game.model.module.parameters())
    assert n_params >= 100_000
    blob = cloudpickle.dumps(game)
    assert len(blob) < 100_000, len(blob)
    # The same game around the module itself carries the weights (float64: 8 bytes each).
    plain = MaskedModel(fl.Model(game.model.module), game.x, background=game.background)
    assert len(cloudpickle.dumps(plain)) > 8 * n_params
    clone = pickle.loads(pickle.dumps(game))
    assert clone.model.module is game.model.module  # this process's cache: built once here
    masks = _masks(12, 8, seed=5)
    assert np.array_equal(clone(masks), game(masks))


def test_factory_model_cached_per_key():
    before = H.BUILDS["mlp"]
    a = fl.Model.from_factory(H.build_mlp)
    b = fl.Model.from_factory(H.build_mlp, output="probability")
    assert a.module is b.module and H.BUILDS["mlp"] - before <= 1
    assert a.factory_key == "_parallel_helpers.build_mlp"
    import functools

    c = fl.Model.from_factory(functools.partial(H.build_mlp, seed=1))
    assert c.module is not a.module and "seed=1" in c.factory_key
    d = pickle.loads(pickle.dumps(b.with_batch_size(7)))
    assert d.module is a.module and d.output == "probability" and d.batch_size == 7
    with pytest.raises(ValueError, match="lambda.*give key="):
        fl.Model.from_factory(lambda: torch.nn.Linear(2, 1))
    e = fl.Model.from_factory(lambda: torch.nn.Linear(2, 1), key="test-linear")
    assert e.factory_key == "test-linear"
    with pytest.raises(TypeError, match="factory must be a callable"):
        fl.Model.from_factory(torch.nn.Linear(2, 1)(torch.zeros(1, 2)))
    with pytest.raises(TypeError, match="key must be a non-empty string"):
        fl.Model.from_factory(H.build_mlp, key=3)


def test_factory_built_once_per_worker_process(executor):
    if not executor.remote:
        pytest.skip("nothing is pickled in this process")
    game = _factory_game(executor=executor)
    masks = _masks(30, 8, seed=6)
    serial = _factory_game()
    assert np.array_equal(game(masks), serial(masks))
    assert game.model_calls == serial.model_calls == 30 * 4
    builds = collections.defaultdict(set)
    for _ in range(2):  # two calls: the second finds the model built
        for pid, n_builds, values in executor.map(H.report_builds, [masks[:3]] * 6, shared=game):
            builds[pid].add(n_builds)
            assert np.array_equal(values, serial(masks[:3]))
    assert all(seen == {1} for seen in builds.values()), dict(builds)


# -- the hook: games travel without their executor --------------------------------------------------
def test_game_pickles_without_its_executor():
    with ThreadExecutor(2) as ex:
        game = FunctionGame(H.weighted_sum, 5, executor=ex)
        game(_masks(4, 5))
        with pytest.raises(TypeError, match="does not pickle"):
            pickle.dumps(ex)
        clone = pickle.loads(pickle.dumps(game))  # failed before: the executor's pool went along
        assert clone.executor is local_executor and game.executor is ex
        assert clone.calls == 4
        assert np.array_equal(clone(_masks(6, 5, 1)), game(_masks(6, 5, 1)))


def test_threads_keep_eval_mode_for_the_whole_evaluation():
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(6, 32), torch.nn.Dropout(0.5), torch.nn.Linear(32, 2)).double()
    module.train()
    x, masks = np.linspace(-1, 1, 6), _masks(64, 6, seed=7)
    serial = MaskedModel(module, x, baseline=0.0, batch_size=2)(masks)
    with ThreadExecutor(4) as ex:
        values = MaskedModel(module, x, baseline=0.0, batch_size=2, executor=ex)(masks)
    assert np.array_equal(values, serial)  # dropout off in every chunk
    assert module.training and module[1].training  # the train flags come back


def test_evaluating_is_shared_by_concurrent_threads():
    # Thread A enters, B enters, A leaves while B is still inside: B must still be in eval mode.
    # Before the fix A restored the train flags on leaving, under B's feet.
    module = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5))
    module.train()
    model = fl.Model(module)
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def thread_a():
        with model.evaluating():
            a_in.set()
            b_in.wait(5)
        a_out.set()

    def thread_b():
        a_in.wait(5)
        with model.evaluating():
            b_in.set()
            a_out.wait(5)
            seen["training_inside"] = module.training

    threads = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"training_inside": False}
    assert module.training and module[1].training and model._eval_depth == 0


# -- construction errors and optional dependencies --------------------------------------------------
def test_bad_arguments_and_closed_executors():
    for cls in (ThreadExecutor, ProcessExecutor):
        with pytest.raises(ValueError, match=r"n must be an int >= 1.*got 0"):
            cls(0)
        with pytest.raises(TypeError, match="n must be an int"):
            cls("2")
    with pytest.raises(TypeError, match="threads_per_worker"):
        ProcessExecutor(1, threads_per_worker=1.5)
    # ProcessExecutor(2, threads_per_worker=1): the module's warm loky pool, not a resized one.
    for ex in (SerialExecutor(), ThreadExecutor(1), ProcessExecutor(2, threads_per_worker=1)):
        ex.close()
        ex.close()  # idempotent
        with pytest.raises(RuntimeError, match=f"this {type(ex).__name__} is closed"):
            ex.map(H.square, [1])
    with pytest.raises(TypeError, match="client must be a distributed.Client"):
        DaskExecutor(42)
    err = pickle.loads(pickle.dumps(WorkerError("KeyError", "'a'", "a Ray actor")))
    assert (err.worker_type, err.worker_message, str(err)) == ("KeyError", "'a'", "KeyError on a Ray actor: 'a'")


def test_missing_engines_name_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r"pip install featurelens\[ray\]"):
        RayExecutor()
    with pytest.raises(ImportError, match=r"pip install featurelens\[dask\]"):
        DaskExecutor("tcp://127.0.0.1:1")


def test_ray_resources_checked(ray_session):
    with pytest.raises(ValueError, match="5 workers x 1 CPUs each need 5 CPUs, and the Ray cluster has 2"):
        RayExecutor(num_workers=5)
    with pytest.raises(ValueError, match="GPUs each need 1 GPUs, and the Ray cluster has 0"):
        RayExecutor(num_workers=1, num_gpus=1)
    with pytest.raises(ValueError, match="num_cpus must be"):
        RayExecutor(num_cpus=-1)
    assert ray_session.is_initialized()  # the session's Ray was not shut down by these


def test_ray_actors_waiting_for_resources_time_out(executor):
    if not isinstance(executor, RayExecutor):
        pytest.skip("the Ray case: the module's executor holds the session's 2 CPUs")
    with pytest.raises(RuntimeError, match=r"1 of 1 Ray actors .* did not start within start_timeout=1 s; "
                       r"the cluster has 0 CPUs .* free of 2"):
        RayExecutor(num_workers=1, start_timeout=1)
    with pytest.MonkeyPatch.context() as mp:  # the environment variable reaches the wait too
        mp.setenv("FEATURELENS_RAY_START_TIMEOUT", "1")
        with pytest.raises(RuntimeError, match=r"start_timeout=1 s \(from FEATURELENS_RAY_START_TIMEOUT\)"):
            RayExecutor(num_workers=1)
    assert executor.map(H.square, [2], shared=1) == [4]


def test_ray_start_timeout_message_says_how_to_wait_longer():
    """The message builder alone (no Ray started): what is free, and the two ways to wait longer."""
    from featurelens.parallel._ray import _start_timeout_message

    msg = _start_timeout_message(2, 2, 1, 0, 120, "default", {"CPU": 2.0}, {"CPU": 2.0, "GPU": 0.0})
    assert msg.startswith("2 of 2 Ray actors (1 CPUs, 0 GPUs each) did not start within start_timeout=120 s "
                          "(the default); the cluster has 2 CPUs and 0 GPUs free of 2 and 0.")
    assert "busy or loaded machine" in msg
    assert "RayExecutor(start_timeout=600)" in msg and "FEATURELENS_RAY_START_TIMEOUT=600" in msg
    assert "--executor ray" in msg and "close them" in msg and "lower num_workers" in msg
    env = _start_timeout_message(1, 3, 0.5, 1, 400, "env", {}, {})
    assert "start_timeout=400 s (from FEATURELENS_RAY_START_TIMEOUT)" in env
    assert "start_timeout=800)" in env  # twice the timeout when that exceeds 600 s
    assert "start_timeout=5 s;" in _start_timeout_message(1, 1, 1, 0, 5, "argument", {}, {})


def test_ray_start_timeout_argument_environment_and_default(monkeypatch):
    from featurelens.parallel._ray import DEFAULT_START_TIMEOUT, _resolve_start_timeout

    assert _resolve_start_timeout(None, {}) == (DEFAULT_START_TIMEOUT, "default") == (120.0, "default")
    assert _resolve_start_timeout(None, {"FEATURELENS_RAY_START_TIMEOUT": " 450 "}) == (450.0, "env")
    assert _resolve_start_timeout(30, {"FEATURELENS_RAY_START_TIMEOUT": "450"}) == (30.0, "argument")
    for bad in ("soon", "0", "-5", "nan", "inf"):
        with pytest.raises(ValueError, match=f"FEATURELENS_RAY_START_TIMEOUT must be a number of seconds > 0 "
                                             f".*got '{bad}'"):
            _resolve_start_timeout(None, {"FEATURELENS_RAY_START_TIMEOUT": bad})
    with pytest.raises(ValueError, match="start_timeout must be"):
        _resolve_start_timeout(0, {})
    # refused before Ray is imported or started
    monkeypatch.setenv("FEATURELENS_RAY_START_TIMEOUT", "soon")
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ValueError, match="FEATURELENS_RAY_START_TIMEOUT"):
        RayExecutor(num_workers=1)


def test_the_test_clusters_listen_on_loopback_only(ray_session, dask_client):
    """Every node of the tests' Ray and every Dask worker are on 127.0.0.1 (conftest sets
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0; without it Ray takes the machine's outside address)."""
    assert {node["NodeManagerAddress"] for node in ray_session.nodes()} == {"127.0.0.1"}

    @ray_session.remote
    def worker_address():
        import ray

        return ray.util.get_node_ip_address()

    assert ray_session.get(worker_address.remote()) == "127.0.0.1"
    workers = dask_client.scheduler_info()["workers"]
    assert workers and all(address.startswith("tcp://127.0.0.1:") for address in workers)
