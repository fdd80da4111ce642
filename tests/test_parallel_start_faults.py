"""Executors whose workers die before or between calls (issue 33, item 8).

- Ray: an actor killed while the executor starts (its process exits before it answers, as when
  the OOM killer or a crash importing torch takes it). Before: ``ActorDiedError`` out of
  ``RayExecutor(...)``, no retry. Now the actor is replaced once; when the replacement dies too, a
  ``WorkerDiedError`` says the workers died while starting and how to restart.
- Dask: every worker of the cluster died (a worker without a nanny, which nothing restarts).
  Before: each later call waited 30 s and said "... did not take them (TimeoutError: No valid
  workers found)". Now a ``WorkerDiedError`` names the dead workers and how to restart them, after
  ``worker_timeout``; once a worker joins again, the same executor runs.

Ray and Dask run locally, bound to 127.0.0.1, as in tests/test_parallel_worker_death.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

import _parallel_helpers as H
from featurelens.parallel import DaskExecutor, RayExecutor, WorkerDiedError, WorkerError
from featurelens.parallel import _ray as ray_backend


# -- Ray: actors that die while the executor starts --------------------------------------------------
def _dying_worker(marker: str | None):
    """A subclass of the executor's actor class whose process exits in ``__init__``: once (the
    first actor to claim ``marker``), or every time (``marker=None``). Defined here, so that Ray
    pickles it by value with the marker path."""

    class DiesAtStart(ray_backend._RayWorker):
        def __init__(self):
            if marker is None:
                os._exit(1)
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return
            os._exit(1)

    return DiesAtStart


def test_ray_actor_killed_at_start_is_replaced(ray_session, monkeypatch, tmp_path):
    marker = tmp_path / "died"
    monkeypatch.setattr(ray_backend, "_RayWorker", _dying_worker(str(marker)))
    with RayExecutor(num_workers=1, num_cpus=0.5, start_timeout=120) as ex:  # before: ActorDiedError here
        assert marker.exists()  # the first actor died
        assert ex.restarts == 1 and len(ex.pids) == 1 and ex.pids[0] != os.getpid()
        assert ex.map(H.square, [1, 2, 3], shared=2.0) == [2.0, 8.0, 18.0]


def test_ray_actors_dying_at_every_start_are_one_clear_error(ray_session, monkeypatch):
    monkeypatch.setattr(ray_backend, "_RayWorker", _dying_worker(None))
    with pytest.raises(WorkerDiedError, match=r"Ray actor 0 of 1 died while starting \(.+\), and so did the 1 new "
                                              r"actor started in its place \(START_RETRIES=1\).*create the executor "
                                              r"again") as info:
        RayExecutor(num_workers=1, num_cpus=0.5, start_timeout=120)
    err = info.value
    assert isinstance(err, WorkerError) and err.task is None and err.retries == 1 and err.worker == "Ray actor 0"
    assert "ActorDiedError" not in str(err) and "ray status" in str(err)


# -- Dask: every worker gone --------------------------------------------------------------------------
@pytest.fixture
def lone_worker():
    """A scheduler on 127.0.0.1 and one worker process without a nanny (nothing restarts it);
    yields (client, start_worker)."""
    distributed = pytest.importorskip("distributed")
    import logging

    cluster = distributed.LocalCluster(n_workers=0, processes=True, host="127.0.0.1", dashboard_address=None,
                                       silence_logs=logging.CRITICAL)
    client = distributed.Client(cluster)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p and os.path.isdir(p)))
    procs = []

    def start_worker():
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", cluster.scheduler_address, "--no-nanny",
             "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        client.wait_for_workers(len([p for p in procs if p.poll() is None]), timeout=60)

    start_worker()
    yield client, start_worker
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    client.close()
    cluster.close()


def test_dask_after_every_worker_died_says_so_and_runs_again_once_one_joins(lone_worker):
    client, start_worker = lone_worker
    ex = DaskExecutor(client, max_retries=1, worker_timeout=1.0)
    assert ex.map(H.square, [1, 2], shared=2.0) == [2.0, 8.0]
    worker = next(iter(client.nthreads()))
    # The worker dies running the call's task, and nothing restarts it.
    with pytest.raises(WorkerDiedError) as info:
        ex.map(H.exit_on_three, [3], shared=None)
    assert "No valid workers found" not in str(info.value)
    for _ in range(100):
        if not client.nthreads():
            break
        time.sleep(0.1)
    start = time.monotonic()
    with pytest.raises(WorkerDiedError, match=rf"every Dask worker is gone: the scheduler at tcp://127\.0\.0\.1:\d+ "
                                              rf"lists none \(this executor last ran on 1: {worker}\), and none "
                                              r"joined within worker_timeout=1 s.*dask worker tcp://.*call again") as info:
        ex.map(H.square, [1, 2], shared=2.0)  # before: 30 s, then "No valid workers found"
    assert time.monotonic() - start < 15
    assert info.value.worker == worker and "No valid workers found" not in str(info.value)
    start_worker()  # a worker joins: the same executor runs on it
    assert ex.map(H.square, [1, 2, 3], shared=2.0) == [2.0, 8.0, 18.0]


def test_dask_worker_timeout_is_checked_and_a_cluster_that_never_had_workers_is_named():
    distributed = pytest.importorskip("distributed")
    import logging

    with pytest.raises(ValueError, match=r"worker_timeout must be a finite number >= 0; got -1"):
        DaskExecutor("tcp://127.0.0.1:1", worker_timeout=-1)
    with distributed.LocalCluster(n_workers=0, processes=True, host="127.0.0.1", dashboard_address=None,
                                  silence_logs=logging.CRITICAL) as cluster, distributed.Client(cluster) as client:
        ex = DaskExecutor(client, worker_timeout=0.5)
        with pytest.raises(RuntimeError, match=r"the Dask cluster at tcp://127\.0\.0\.1:\d+ has no workers \(none "
                                               r"joined within worker_timeout=0\.5 s\); start workers") as info:
            ex.map(H.square, [1], shared=2.0)
        assert not isinstance(info.value, WorkerDiedError)
