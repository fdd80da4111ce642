"""The Dask backend: :class:`DaskExecutor`, tasks on a cluster through a ``distributed.Client``
(``distributed`` is imported only when one is created); see :mod:`featurelens.parallel`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import time

from .._validation import check_float, check_int
from ._base import Executor, WorkerDiedError, import_optional, unpicklable_error, worker_error


# -- worker side (module level: it pickles by reference) -------------------------------------------
def _dask_task(payload, item):
    fn, shared = payload  # scattered once per call; each worker deserialises it once
    return fn(shared, item)


class DaskExecutor(Executor):
    """Tasks on a Dask cluster through a ``distributed.Client`` (Rocklin 2015, "Dask: Parallel
    Computation with Blocked algorithms and Task Scheduling", SciPy).

    ``shared`` is scattered to every worker once per ``map`` call (``broadcast=True``); one
    task per item is submitted and the results are gathered in the order of the items.
    ``n_workers`` is the number of worker threads of the cluster (read at each call, so a scaled
    cluster gets more tasks).

    A worker that dies: the scheduler runs its tasks again on the other workers (up to its
    ``distributed.scheduler.allowed-failures`` deaths per task, then ``KilledWorker``), and a
    nanny restarts the worker. What Dask cannot do is recompute the scattered ``shared`` object
    when every worker holding it died (a one-worker cluster, or a second death before the
    restarted workers got it): its tasks are cancelled ("already forgotten", "lost
    dependencies"). This executor then scatters ``shared`` again and submits the unfinished
    tasks again, at most ``max_retries`` times per call (tasks are pure functions of their
    inputs, so the results are those of an undisturbed run, bit for bit); past that, or on
    ``KilledWorker``, a :class:`WorkerDiedError` names the worker that died and the task. The
    executor stays usable: the next call runs on the workers the cluster has then. (Dask's
    ``retries=`` submit option re-runs tasks that *raise*, which for pure tasks only repeats the
    error, so it is not used.)

    When every worker is gone (they died and nothing restarted them, e.g. workers started without
    a nanny), a call waits ``worker_timeout`` seconds for one to join, then raises a
    :class:`WorkerDiedError` naming the workers it last ran on and how to start workers again; a
    later call runs on whatever workers have joined by then.

    Parameters
    ----------
    client
        A ``distributed.Client`` (used as it is and left open by ``close``), or a scheduler
        address string (``"tcp://host:8786"``), for which this executor opens a Client and closes
        it on ``close``.
    max_retries
        How many times one ``map`` call re-sends its tasks lost with a dead worker (>= 0).
    worker_timeout
        Seconds a call waits for a worker when the cluster has none (a nanny restarting a dead
        worker, a worker joining), before it fails saying the workers are gone (default 30, the
        time a scatter waited before; >= 0).
    """

    remote = True

    def __init__(self, client, max_retries: int = 3, worker_timeout: float = 30.0):
        self.max_retries = check_int(max_retries, "max_retries", low=0)
        self.worker_timeout = check_float(worker_timeout, "worker_timeout", low=0)
        distributed = import_optional("distributed", "dask", "DaskExecutor")
        self._owns_client = False
        if isinstance(client, str):
            client = distributed.Client(client)
            self._owns_client = True
        elif not isinstance(client, distributed.Client):
            raise TypeError(
                "client must be a distributed.Client or a scheduler address string; got "
                f"{type(client).__name__}"
            )
        self._client = client
        #: The workers seen at the last call (or at creation): named when every one of them is gone.
        self._seen = self._workers()

    @property
    def n_workers(self) -> int:
        if self._client is None:
            return 1
        return max(1, sum(self._client.nthreads().values()))

    def _scatter(self, fn, shared):
        """``(fn, shared)`` on every worker; an unpicklable payload is a TypeError saying so, any
        other failure (a cluster that lost its workers) a RuntimeError saying that."""
        try:
            return self._client.scatter([(fn, shared)], broadcast=True, hash=False)[0]
        except Exception as err:
            import cloudpickle

            try:
                cloudpickle.dumps((fn, shared))
            except Exception:
                raise unpicklable_error(err, "Dask workers", (fn, shared)) from err
            if not self._workers():  # the workers went between the check and the scatter
                raise self._no_workers(0.0) from err
            raise RuntimeError(
                f"the task's function and shared object pickle, but the Dask cluster did not take them "
                f"({type(err).__name__}: {' '.join(str(err).split())[:300]}); its workers may have died or be "
                "restarting: check client.nthreads() and the worker logs"
            ) from err

    def _workers(self) -> set:
        try:
            return set(self._client.nthreads())
        except Exception:  # pragma: no cover - a scheduler that is gone
            return set()

    def _live_workers(self) -> set:
        """The cluster's workers now, waiting up to ``worker_timeout`` seconds for one when there
        are none; the error of :meth:`_no_workers` when none joins."""
        deadline = time.monotonic() + self.worker_timeout
        workers = self._workers()
        while not workers and time.monotonic() < deadline:
            time.sleep(0.1)
            workers = self._workers()
        if not workers:
            raise self._no_workers(self.worker_timeout)
        self._seen = workers
        return workers

    def _no_workers(self, waited: float) -> RuntimeError:
        """The cluster has no worker: a :class:`WorkerDiedError` naming the workers this executor
        last saw (they died or left), or a RuntimeError for a cluster that never had any."""
        try:
            address = self._client.scheduler.address
        except Exception:  # pragma: no cover - a client without a scheduler
            address = "(unknown address)"
        start = (f"start workers (`dask worker {address}`, best under a nanny, which restarts a worker that dies; "
                 "for a LocalCluster, cluster.scale(n))")
        if not self._seen:
            return RuntimeError(f"the Dask cluster at {address} has no workers (none joined within "
                                f"worker_timeout={waited:g} s); {start}, then call again")
        seen = sorted(self._seen)
        shown = ", ".join(seen[:4]) + (", ..." if len(seen) > 4 else "")
        return WorkerDiedError(
            f"every Dask worker is gone: the scheduler at {address} lists none (this executor last ran on "
            f"{len(seen)}: {shown}), and none joined within worker_timeout={waited:g} s. They died or were "
            f"retired and nothing restarted them; {start} and call again: this executor runs on the workers the "
            "cluster has at each call",
            "a Dask worker", seen[0] if len(seen) == 1 else shown, None, 0,
        )

    def map(self, fn, items, shared=None):
        self._check_open()
        distributed = import_optional("distributed", "dask", "DaskExecutor")
        from distributed.scheduler import KilledWorker

        client = self._client
        items = list(items)
        if not items:
            return []
        lost_types = (KilledWorker, distributed.client.FutureCancelledError, concurrent.futures.CancelledError)
        out: list = [None] * len(items)
        todo = list(range(len(items)))
        for attempt in range(self.max_retries + 1):
            workers = self._live_workers()  # none: wait worker_timeout, then say the workers are gone
            payload = self._scatter(fn, shared)
            futures = [client.submit(_dask_task, payload, items[i], pure=False) for i in todo]
            try:
                for i, value in zip(todo, client.gather(futures)):
                    out[i] = value
                return out
            except lost_types as gathered:
                # A worker died: keep what finished, send the rest again with a new payload.
                with contextlib.suppress(Exception):  # it raises for the cancelled ones, once all are done
                    distributed.wait(futures)
                lost, killed = [], None
                for i, fut in zip(todo, futures):
                    if fut.status == "finished":
                        out[i] = fut.result()
                        continue
                    err = fut.exception() if fut.status == "error" else None
                    if err is not None and not isinstance(err, KilledWorker):
                        client.cancel(futures)
                        raise worker_error(err, "a Dask worker") from err
                    lost.append(i)
                    killed = killed or (err and (i, err))
                todo = lost
                if attempt == self.max_retries or killed:
                    raise self._died(lost, killed, gathered, workers, len(items), attempt) from gathered
            except Exception as err:
                client.cancel(futures)
                raise worker_error(err, "a Dask worker") from err
            finally:
                del payload, futures
        raise AssertionError("unreachable")  # pragma: no cover

    def _died(self, lost: list, killed, gathered: BaseException, workers: set, n: int,
              retries: int) -> WorkerDiedError:
        """The error of a call whose tasks ``lost`` died with a worker, past the retries."""
        if killed:  # KilledWorker: the scheduler names the last worker that died running the task
            i, err = killed
            worker = err.last_worker.address
            running = f"task {i} of {n}"
            how = (f"the scheduler ran it on {err.allowed_failures + 1} workers and each died "
                   "(distributed.scheduler.allowed-failures)")
        else:  # the scattered shared object was lost with its worker: the tasks were cancelled
            i = lost[0]
            gone = sorted(workers - self._workers())
            worker = ", ".join(gone) if gone else None
            shown = ", ".join(map(str, lost[:8])) + (", ..." if len(lost) > 8 else "")
            running = f"task{'s' if len(lost) > 1 else ''} {shown} of {n}"
            how = ("the shared object scattered to the workers was lost with it and the tasks cancelled: "
                   f"{type(gathered).__name__}: {' '.join(str(gathered).split())[:200]}")
        named = f"Dask worker {worker}" if worker else "A Dask worker (no longer listed by the scheduler)"
        return WorkerDiedError(
            f"{named} died while running {running} ({how}); {retries} retries used "
            f"(max_retries={self.max_retries}). This executor stays usable: the next call runs on the workers "
            "the cluster has then (a nanny restarts a dead worker)",
            "a Dask worker", worker, i, retries,
        )

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._owns_client:
            client.close()

    def _is_closed(self) -> bool:
        return self._client is None

    def __repr__(self) -> str:
        return (f"DaskExecutor({self._client!r}, max_retries={self.max_retries}, "
                f"worker_timeout={self.worker_timeout:g})")
