"""Executors after a worker dies mid-run: a task whose process exits (``os._exit(1)``: no exception,
no cleanup, as a crash in native code or the OOM killer does) on a Ray actor or a Dask worker.

The planted death happens once (a marker file, created atomically, tells the retry to run), so a
recovered call must equal the serial path bit for bit; a death on every try must be one clear
error naming the worker and its death; and the executor must run the next call either way.
"""

import numpy as np
import pytest

import _parallel_helpers as H
from featurelens.games import FunctionGame
from featurelens.parallel import DaskExecutor, RayExecutor, WorkerDiedError, WorkerError


def _masks(q, n, seed=0):
    masks = np.random.default_rng(seed).integers(0, 2, size=(q, n)).astype(bool)
    masks[21] = True  # chunk 3 (rows 21..27) starts with the full coalition: DieOnce's death
    return masks


def _serial(masks):
    return FunctionGame(H.weighted_sum, masks.shape[1], batch_size=7)(masks)


# -- Ray: a dead actor is replaced and its tasks run again ------------------------------------------
@pytest.fixture(scope="module")
def ray_ex(ray_session):
    # Half a CPU per actor, as in test_parallel_plumbing: a replacement actor finds its CPU free.
    with RayExecutor(num_workers=2, num_cpus=0.5, max_retries=2) as ex:
        yield ex


def test_ray_actor_death_recovered_bitwise(ray_ex, tmp_path):
    masks = _masks(60, 9)
    pids, restarts = list(ray_ex.pids), ray_ex.restarts
    game = FunctionGame(H.DieOnce(str(tmp_path / "died")), 9, batch_size=7, executor=ray_ex)
    values = game(masks)
    assert (tmp_path / "died").exists()  # the planted death happened
    assert ray_ex.restarts == restarts + 1 and len(set(ray_ex.pids) - set(pids)) == 1  # one actor replaced
    assert np.array_equal(values, _serial(masks))
    assert game.calls == 60  # counted once, in the caller, however often a task ran
    # The next call runs on the repaired pool.
    assert ray_ex.map(H.square, [1, 2, 3], shared=2.0) == [2.0, 8.0, 18.0]


def test_ray_actor_dying_every_time_is_one_clear_error(ray_ex):
    ray_ex.max_retries = 0
    try:
        with pytest.raises(WorkerDiedError, match=r"Ray actor [01] \(pid \d+\) died \(.*worker process has died.*\) "
                                                  r"while running tasks? [0-9, ]*\b3\b[0-9, ]* of 6; 0 retries used \(max_retries=0\)") as info:
            ray_ex.map(H.exit_on_three, list(range(6)), shared=None)
    finally:
        ray_ex.max_retries = 2
    assert isinstance(info.value, WorkerError) and info.value.retries == 0 and info.value.worker.startswith("Ray actor")
    # Before: ActorDiedError on this and every later call. Now the dead actor was replaced.
    assert ray_ex.map(H.exit_on_three, [0, 1, 2, 4], shared=None) == [i * i / 7.0 for i in (0, 1, 2, 4)]


# -- Dask: a one-worker cluster, so that the scattered game dies with the worker ---------------------
@pytest.fixture(scope="module")
def dask_one():
    """A LocalCluster of one single-threaded worker process (its nanny restarts it), on 127.0.0.1."""
    distributed = pytest.importorskip("distributed")
    import logging

    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None, silence_logs=logging.CRITICAL)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def test_dask_worker_death_recovered_bitwise(dask_one, tmp_path):
    """Before: FutureCancelledError '... cancelled for reason: already forgotten' (the one copy
    of the scattered game died with the worker)."""
    ex = DaskExecutor(dask_one)
    masks = _masks(60, 9)
    before = set(dask_one.nthreads())
    game = FunctionGame(H.DieOnce(str(tmp_path / "died")), 9, batch_size=7, executor=ex)
    values = game(masks)
    assert (tmp_path / "died").exists() and set(dask_one.nthreads()) != before  # the worker died, was restarted
    assert np.array_equal(values, _serial(masks))
    assert game.calls == 60
    assert ex.map(H.square, [1, 2, 3], shared=2.0) == [2.0, 8.0, 18.0]


def test_dask_worker_dying_past_retries_is_one_clear_error(dask_one):
    ex = DaskExecutor(dask_one, max_retries=0)
    worker = next(iter(dask_one.nthreads()))
    with pytest.raises(WorkerDiedError, match=rf"Dask worker {worker} died while running tasks? [0-9, ]*\b3\b[0-9, ]* of 6 .*; 0 retries "
                                              r"used \(max_retries=0\)") as info:
        ex.map(H.exit_on_three, list(range(6)), shared=None)
    assert "pickle" not in str(info.value) and info.value.worker == worker
    # The same executor runs the next call on the restarted worker (before: 'lost dependencies' or
    # a pickling message while the nanny restarted it).
    assert ex.map(H.exit_on_three, [0, 1, 2, 4], shared=None) == [i * i / 7.0 for i in (0, 1, 2, 4)]
    with pytest.raises(ValueError, match="max_retries must be an int >= 0; got -1"):
        DaskExecutor(dask_one, max_retries=-1)


def test_worker_died_error_pickles_and_bad_max_retries():
    import pickle

    err = WorkerDiedError("Ray actor 1 (pid 7) died (killed) while running task 3 of 6; 2 retries used",
                          "a Ray actor", "Ray actor 1 (pid 7)", 3, 2)
    back = pickle.loads(pickle.dumps(err))  # travels back intact from a nested executor's worker
    assert isinstance(back, WorkerError) and str(back) == str(err)
    assert (back.worker, back.task, back.retries, back.where) == ("Ray actor 1 (pid 7)", 3, 2, "a Ray actor")
    with pytest.raises(ValueError, match="max_retries must be an int >= 0; got -1"):
        RayExecutor(max_retries=-1)  # checked before Ray is imported or started
    with pytest.raises(TypeError, match="max_retries must be an int"):
        RayExecutor(max_retries=1.5)


def test_dask_cluster_failure_is_not_reported_as_pickling(dask_one, monkeypatch):
    """A scatter that fails for the cluster's sake (workers gone, a timeout) while the payload
    pickles: before, 'could not be pickled ... Model.from_factory'; now what happened."""
    ex = DaskExecutor(dask_one)

    def refuse(*args, **kwargs):
        raise TimeoutError("no workers reachable")

    monkeypatch.setattr(dask_one, "scatter", refuse)
    with pytest.raises(RuntimeError, match=r"pickle, but the Dask cluster did not take them \(TimeoutError: no "
                                           r"workers reachable\); its workers may have died") as info:
        ex.map(H.square, [1, 2], shared=2.0)
    assert not isinstance(info.value, TypeError) and "could not be pickled" not in str(info.value)
    monkeypatch.undo()
    assert ex.map(H.square, [1, 2], shared=2.0) == [2.0, 8.0]
