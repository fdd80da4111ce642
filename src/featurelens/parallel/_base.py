"""The executor base: :class:`Executor` (the game hook built on ``Executor.map``, the chunking
of a game's masks into tasks), the errors a worker's failure raises in the caller
(:class:`WorkerError`, :class:`WorkerDiedError`) and the helpers every backend shares (the
per-process cache of a call's shared object, the optional-engine import, the error messages).

The backends are in :mod:`._local` (serial, threads, processes), :mod:`._ray` and :mod:`._dask`;
:mod:`featurelens.parallel` describes them all.
"""

from __future__ import annotations

import collections
import importlib
import os
import threading
from typing import Any, Callable, Sequence

import numpy as np

from .._batching import chunks
from .._budgets import available_cores


#: Local workers (processes, a local Dask cluster's processes, threads) per CPU core: more only
#: oversubscribe the cores (and each process holds its own copy of the model).
WORKERS_PER_CORE = 4
#: Threads allowed whatever the cores (threads of a model behind an API mostly wait).
MIN_THREADS = 32


def max_workers(kind: str, address: str | None = None) -> tuple[int, str] | None:
    """``(the most workers, why)`` for an executor ``kind`` started on this machine; None for a
    cluster joined with ``address`` (its size is the cluster's).

    On this machine (threads, processes, a local Dask cluster) at most ``WORKERS_PER_CORE`` per
    CPU core this process may use (threads: at least ``MIN_THREADS``, since threads mostly wait
    on a model behind an API); a local Ray cluster has one CPU per core and each actor reserves one,
    so at most ``os.cpu_count()``. The executors' constructors and the commands' ``--workers`` both
    refuse more (``check_workers``)."""
    if address is not None:
        return None
    if kind == "ray":  # a local Ray cluster: os.cpu_count() CPUs, one reserved per actor
        cpus = max(1, os.cpu_count() or 1)
        return cpus, f"a local Ray cluster has one CPU per core ({cpus}) and each worker reserves one"
    cores = available_cores()
    cap = WORKERS_PER_CORE * cores
    why = f"{WORKERS_PER_CORE} per CPU core this process may use, {cores} core{'s' if cores > 1 else ''}"
    if kind == "threads" and cap < MIN_THREADS:
        return MIN_THREADS, f"threads: {MIN_THREADS}, or {why}, whichever is more"
    return cap, why


def check_workers(n: int, name: str, kind: str, hint: str) -> int:
    """Refuse ``n`` workers of a ``kind`` started on this machine above :func:`max_workers`,
    before any worker starts (the error names ``name``, the bound and why, and ``hint``)."""
    from .._budgets import check_budget

    cap, why = max_workers(kind)
    check_budget(n, name, unit="workers", limit=cap, source=why, scope="", hint=hint)
    return n


class WorkerError(RuntimeError):
    """An exception raised by a task on a worker, re-raised in the caller.

    ``worker_type`` is the name of the worker's exception class and ``worker_message`` its
    message; the message of this error names both.
    """

    def __init__(self, worker_type: str, worker_message: str, where: str = "a worker"):
        self.worker_type = worker_type
        self.worker_message = worker_message
        self.where = where
        super().__init__(f"{worker_type} on {where}: {worker_message}")

    def __reduce__(self):  # travels back intact from a nested executor's worker
        return (WorkerError, (self.worker_type, self.worker_message, self.where))


class WorkerDiedError(WorkerError):
    """A worker (a Ray actor, a Dask worker) died while running a task, and the task was not
    finished within the executor's retries; or the workers died as they started (a Ray actor and
    its replacement), or every worker of a Dask cluster is gone and none came back.

    ``worker`` names the worker (``"Ray actor 1 (pid 4242)"``, a Dask worker's address), ``task``
    is the index of the task in the ``Executor.map`` call (None when no task was running) and
    ``retries`` the retries used. After a death while running a task the executor has replaced the
    dead worker (or its cluster does) and stays usable; the message says when it is not, and how
    to restart.
    """

    def __init__(self, message: str, where: str = "a worker", worker: str | None = None, task: int | None = None,
                 retries: int = 0):
        self.worker, self.task, self.retries = worker, task, retries
        self.worker_type, self.worker_message, self.where = "WorkerDied", message, where
        RuntimeError.__init__(self, message)

    def __reduce__(self):
        return (WorkerDiedError, (self.worker_message, self.where, self.worker, self.task, self.retries))


def _evaluate_chunks(evaluate_chunk, masks_list):
    """One task: several consecutive chunks, evaluated one by one (the serial path's batches)."""
    return [np.asarray(evaluate_chunk(m), dtype=np.float64) for m in masks_list]


class Executor:
    """Base class: the game hook built on ``map`` (see the module docstring).

    Subclasses implement ``map`` (and ``close`` when they hold resources) and set
    ``n_workers`` and ``remote`` (True when tasks run outside this process, so that
    the arguments are pickled).
    """

    #: Tasks per worker when a game's chunks are grouped: enough to balance uneven chunks, few
    #: enough that each task carries several chunks.
    tasks_per_worker = 3
    n_workers: int = 1
    remote: bool = False

    # -- the primitive ----------------------------------------------------------------------
    def map(self, fn: Callable[[Any, Any], Any], items: Sequence, shared: Any = None) -> list:
        raise NotImplementedError  # pragma: no cover - abstract

    # -- the game hook ----------------------------------------------------------------------
    def __call__(self, evaluate_chunk, masks: np.ndarray, chunk_size: int) -> np.ndarray:
        bounds = list(chunks(masks.shape[0], chunk_size))
        if not bounds:
            return np.zeros(0, dtype=np.float64)
        n_tasks = max(1, min(len(bounds), self.n_workers * self.tasks_per_worker))
        groups = np.array_split(np.arange(len(bounds)), n_tasks)
        items = [[masks[bounds[i]] for i in group] for group in groups if len(group)]
        parts = self.map(_evaluate_chunks, items, shared=evaluate_chunk)
        return np.concatenate([v for part in parts for v in part])

    # -- resources --------------------------------------------------------------------------
    def close(self) -> None:
        """Release threads, processes or cluster handles (idempotent); a closed executor refuses
        further work."""
        self._closed = True

    def _is_closed(self) -> bool:
        return getattr(self, "_closed", False)

    def _check_open(self) -> None:
        if self._is_closed():
            raise RuntimeError(f"this {type(self).__name__} is closed; create a new one")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __deepcopy__(self, memo):
        # A handle to threads, processes or a cluster: copies share it (scikit-learn's clone deep-copies
        # an estimator's parameters, e.g. MinShapSelector(executor=...)).
        return self

    def __reduce__(self):
        raise TypeError(f"{type(self).__name__} does not pickle: it holds threads, processes or cluster "
                        "handles of this process (a game sent to a worker travels without its executor)")


# -- worker-side helpers (module level: they pickle by reference) ----------------------------------
#: Per-process cache of the ``shared`` objects of recent map calls, keyed by a token of the call, so
#: that a worker process unpickles a call's game (or model) once, however many of its tasks it runs.
_SHARED: "collections.OrderedDict[str, Any]" = collections.OrderedDict()
_SHARED_LOCK = threading.Lock()
_SHARED_KEEP = 4  # the last few calls' objects; older ones are dropped


def cached_shared(token: str, load: Callable[[], Any]) -> Any:
    with _SHARED_LOCK:
        if token in _SHARED:
            _SHARED.move_to_end(token)
            return _SHARED[token]
    value = load()  # outside the lock: unpickling a model may take a while
    with _SHARED_LOCK:
        value = _SHARED.setdefault(token, value)
        _SHARED.move_to_end(token)
        while len(_SHARED) > _SHARED_KEEP:
            _SHARED.popitem(last=False)
    return value


def import_optional(module: str, extra: str, what: str):
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(
            f"{what} needs the optional dependency {module.split('.')[0]!r}, which is not installed "
            f"here ({err}); install it with: pip install featurelens[{extra}]"
        ) from err


def unpicklable_error(err: BaseException, where: str, payload=None) -> TypeError:
    reason = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    if payload is not None:  # the engines' own messages run over many lines: cloudpickle's is one
        import cloudpickle

        try:
            cloudpickle.dumps(payload)
        except Exception as plain:
            reason = f"{type(plain).__name__}: {plain}"
    return TypeError(
        f"the task (its function and shared object) could not be pickled for the {where} "
        f"({reason}); a game sent to other processes must pickle with its model and "
        "data (no open files, locks or sockets); build a large or unpicklable model with "
        "fl.Model.from_factory, or use a ThreadExecutor"
    )


def worker_error(err: BaseException, where: str) -> WorkerError:
    if isinstance(err, WorkerError):
        return WorkerError(err.worker_type, err.worker_message, where)
    return WorkerError(type(err).__name__, str(err), where)
