"""The executors of this machine: :class:`SerialExecutor` (the reference), :class:`ThreadExecutor`
(threads of this process) and :class:`ProcessExecutor` (loky's reusable worker processes); see
:mod:`featurelens.parallel`.
"""

from __future__ import annotations

import concurrent.futures
import os
import uuid

from .._validation import check_int
from ._base import Executor, WorkerError, cached_shared, unpicklable_error, worker_error, check_workers


class SerialExecutor(Executor):
    """Tasks one after the other in this process (the reference the others are tested against)."""

    def map(self, fn, items, shared=None):
        self._check_open()
        out = []
        for item in items:
            try:
                out.append(fn(shared, item))
            except Exception as err:
                raise WorkerError(type(err).__name__, str(err), "the serial executor") from err
        return out


class ThreadExecutor(Executor):
    """Tasks on ``n`` threads of this process: for models behind an API (the time is spent
    waiting) and models that release the GIL (torch, numpy, most compiled code). Nothing is
    pickled. ``n``: the number of threads (16 suits a model behind an API; at most
    :func:`featurelens.parallel.max_workers` ``("threads")``)."""

    def __init__(self, n: int = 4):
        self.n_workers = check_workers(check_int(n, "n", low=1), "n", "threads",
                                       hint="lower n (the threads of this ThreadExecutor)")
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=self.n_workers,
                                                           thread_name_prefix="featurelens")

    def map(self, fn, items, shared=None):
        self._check_open()
        futures = [self._pool.submit(fn, shared, item) for item in items]
        return _gather(futures, "a worker thread")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def _is_closed(self) -> bool:
        return self._pool is None

    def __repr__(self) -> str:
        return f"ThreadExecutor(n={self.n_workers})"


def _gather(futures: list, where: str) -> list:
    """The results of ``concurrent.futures`` futures in order; the first failure cancels the rest
    and re-raises as a :class:`WorkerError` naming ``where``."""
    out = []
    for fut in futures:
        try:
            out.append(fut.result())
        except Exception as err:
            for other in futures:
                other.cancel()
            raise worker_error(err, where) from err
    return out


# -- worker-side helper (module level: it pickles by reference) --------------------------------------
def _process_task(token: str, blob: bytes, item):
    """One task of a :class:`ProcessExecutor`: ``fn(shared, item)`` with ``(fn, shared)``
    unpickled once per worker process and call."""
    import cloudpickle

    fn, shared = cached_shared(token, lambda: cloudpickle.loads(blob))
    return fn(shared, item)


class ProcessExecutor(Executor):
    """Tasks on ``n`` worker processes of this machine (loky's reusable process pool, the one
    joblib uses): for CPU-bound pure-Python games and models that hold the GIL.

    Functions, games and ``shared`` objects are pickled with cloudpickle, so lambdas and closures
    work; ``shared`` is pickled once per ``map`` call and unpickled once per worker process.
    The pool is loky's reusable one: later executors with the same ``n`` reuse its warm processes
    (and the models they built with ``featurelens.models.Model.from_factory``); ``close``
    releases this executor, and idle workers exit after ``idle_timeout`` seconds (or with this
    process). Two ProcessExecutors with different ``n`` used at the same time resize the one pool.

    Parameters
    ----------
    n
        The number of worker processes (>= 1, at most :func:`featurelens.parallel.max_workers`
        ``("processes")``, 4 per core); None: ``os.cpu_count()``.
    threads_per_worker
        Threads each worker's numerical libraries (torch, BLAS, OpenMP) may use; None:
        ``max(1, os.cpu_count() // n)``, so ``n`` workers do not oversubscribe the cores.
    idle_timeout
        Seconds an idle worker process waits for work before it exits (>= 1).
    """

    remote = True

    def __init__(self, n: int | None = None, threads_per_worker: int | None = None, idle_timeout: int = 300):
        n = check_int(n, "n", low=1, allow_none=True)
        if n is not None:  # refused before any process starts
            check_workers(n, "n", "processes", hint="lower n (the worker processes of this ProcessExecutor)")
        self.n_workers = n if n is not None else (os.cpu_count() or 1)
        threads = check_int(threads_per_worker, "threads_per_worker", low=1, allow_none=True)
        self.threads_per_worker = threads if threads is not None else max(1, (os.cpu_count() or 1) // self.n_workers)
        self.idle_timeout = check_int(idle_timeout, "idle_timeout", low=1)
        self._closed = False
        # Start the workers now (about a second each), so start-up is not charged to the first call.
        pool = self._pool()
        for fut in [pool.submit(os.getpid) for _ in range(self.n_workers)]:
            fut.result()

    def _pool(self):
        from joblib.externals.loky import get_reusable_executor

        t = str(self.threads_per_worker)
        env = {name: t for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
        # The same arguments give back the same warm pool; a broken or resized one is replaced.
        return get_reusable_executor(max_workers=self.n_workers, timeout=self.idle_timeout, env=env)

    def map(self, fn, items, shared=None):
        self._check_open()
        import cloudpickle

        items = list(items)
        if not items:
            return []
        try:
            blob = cloudpickle.dumps((fn, shared))
        except Exception as err:
            raise unpicklable_error(err, "worker processes") from err
        token = uuid.uuid4().hex
        pool = self._pool()
        futures = [pool.submit(_process_task, token, blob, item) for item in items]
        return _gather(futures, "a worker process")

    def close(self) -> None:
        self._closed = True

    def __repr__(self) -> str:
        return f"ProcessExecutor(n={self.n_workers}, threads_per_worker={self.threads_per_worker})"
