"""Executors: evaluate a game's coalitions, or any list of tasks, on threads, processes or a cluster.

Every game evaluates through one hook (see :mod:`featurelens.games`)::

    executor(evaluate_chunk, masks, chunk_size) -> values

An :class:`Executor` is such a callable. It cuts ``masks`` at exactly the chunk boundaries the
serial path uses (:func:`featurelens._batching.chunks`), groups consecutive chunks into a few tasks
per worker, evaluates the tasks with :meth:`Executor.map` and concatenates the values in row order,
so every batch the model sees and every value are those of the serial path (bitwise equal for a
deterministic model).

:meth:`Executor.map` is the one primitive a backend implements::

    executor.map(fn, items, shared=None) -> [fn(shared, item) for item in items]

in the order of ``items``; ``shared`` (a game, a model) is sent to the workers once per call, not
once per item. An exception on a worker re-raises in the caller as a :class:`WorkerError` carrying
the worker's exception type and message. Executors are context managers: ``with
fl.parallel.ThreadExecutor(8) as ex: ...`` releases their threads, processes or cluster handles.

A worker that dies mid-call (its process exits or is killed: a crash in native code, the OOM
killer) is not a task's exception: :class:`RayExecutor` replaces the dead actor and runs its tasks
again, :class:`DaskExecutor` re-sends the tasks (and the shared object) the cluster lost, each at
most ``max_retries`` times per call; tasks are pure functions of their inputs, so a recovered call
returns the values of an undisturbed one, bit for bit. Past the retries a :class:`WorkerDiedError`
names the worker, why it died and the task, and the executor stays usable for the next call.
(:class:`ProcessExecutor`: loky raises ``TerminatedWorkerError`` for the call and replaces its pool.)

Counting stays in the caller: a game counts the coalitions (and a MaskedModel its model rows) when
the executor returns, never on the workers.

The backends (``n_workers``: how many tasks run at once; ``remote``: whether tasks are pickled):

- :class:`SerialExecutor`: this thread, one task after the other (the reference).
- :class:`ThreadExecutor`: threads of this process; nothing pickled. Models behind an API (the
  time is spent waiting) and models that release the GIL.
- :class:`ProcessExecutor`: loky's reusable worker processes on this machine (cloudpickle: lambdas
  and closures work).
- :class:`RayExecutor`: an actor pool on a Ray cluster (local or ``address="auto"``); each actor
  keeps what it built (a :meth:`featurelens.models.Model.from_factory` model) across calls, and
  ``num_gpus`` pins GPUs.
- :class:`DaskExecutor`: a Dask cluster through a ``distributed.Client``.

Ray and Dask are optional (``pip install featurelens[ray]`` / ``featurelens[dask]``) and imported
only when their executor is created. Measured on a 2-core machine (issue 12): ``ray.init`` 3-12 s
and a RayExecutor's 2 actors 2-3 s more, a Dask LocalCluster 2-3 s, the first task of a new loky
pool 2-4 s (the workers import torch); per call once warm, about 5 ms (Ray actors), 20 ms
(loky), 70 ms (Dask). A game whose model is large should hold a ``Model.from_factory`` model,
so that it pickles as the recipe (kilobytes) and each worker builds the model once.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import importlib
import os
import sys
import threading
import uuid
from typing import Any, Callable, Sequence

import numpy as np

from ._batching import chunks
from ._validation import check_float, check_int

__all__ = [
    "Executor", "SerialExecutor", "ThreadExecutor", "ProcessExecutor", "RayExecutor", "DaskExecutor", "WorkerError",
    "WorkerDiedError",
    "make_executor", "EXECUTOR_KINDS",
]


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
    finished within the executor's retries.

    ``worker`` names the worker (``"Ray actor 1 (pid 4242)"``, a Dask worker's address), ``task``
    is the index of the task in the :meth:`Executor.map` call and ``retries`` the retries used. The
    executor has replaced the dead worker (or its cluster does) and stays usable.
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
    """Base class: the game hook built on :meth:`map` (see the module docstring).

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
    pickled. ``n``: the number of threads (16 suits a model behind an API)."""

    def __init__(self, n: int = 4):
        self.n_workers = check_int(n, "n", low=1)
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


# -- worker-side helpers (module level: they pickle by reference) ----------------------------------
#: Per-process cache of the ``shared`` objects of recent map calls, keyed by a token of the call, so
#: that a worker process unpickles a call's game (or model) once, however many of its tasks it runs.
_SHARED: "collections.OrderedDict[str, Any]" = collections.OrderedDict()
_SHARED_LOCK = threading.Lock()
_SHARED_KEEP = 4  # the last few calls' objects; older ones are dropped


def _cached_shared(token: str, load: Callable[[], Any]) -> Any:
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


def _process_task(token: str, blob: bytes, item):
    """One task of a :class:`ProcessExecutor`: ``fn(shared, item)`` with ``(fn, shared)``
    unpickled once per worker process and call."""
    import cloudpickle

    fn, shared = _cached_shared(token, lambda: cloudpickle.loads(blob))
    return fn(shared, item)


class _RayWorker:
    """The actor of a :class:`RayExecutor` (one per worker, so one model per process)."""

    def run(self, boxed_ref, item):
        import ray

        ref = boxed_ref[0]  # boxed, so Ray hands over the reference and the actor caches the value
        fn, shared = _cached_shared(ref.hex(), lambda: ray.get(ref))
        return fn(shared, item)

    def pid(self) -> int:
        return os.getpid()


def _ray_death_reason(err: BaseException) -> str:
    """Why a Ray actor died, in one line, from Ray's long ActorDiedError message."""
    text = " ".join(str(err).split())
    if "because" in text:
        text = text.split("because", 1)[1].strip()
    text = text.split(" Some common causes")[0].strip()
    return text[:300] or type(err).__name__


def _dask_task(payload, item):
    fn, shared = payload  # scattered once per call; each worker deserialises it once
    return fn(shared, item)


def _import_optional(module: str, extra: str, what: str):
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(
            f"{what} needs the optional dependency {module.split('.')[0]!r}, which is not installed "
            f"here ({err}); install it with: pip install featurelens[{extra}]"
        ) from err


def _unpicklable(err: BaseException, where: str, payload=None) -> TypeError:
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


def _worker_error(err: BaseException, where: str) -> WorkerError:
    if isinstance(err, WorkerError):
        return WorkerError(err.worker_type, err.worker_message, where)
    return WorkerError(type(err).__name__, str(err), where)


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
            raise _worker_error(err, where) from err
    return out


class ProcessExecutor(Executor):
    """Tasks on ``n`` worker processes of this machine (loky's reusable process pool, the one
    joblib uses): for CPU-bound pure-Python games and models that hold the GIL.

    Functions, games and ``shared`` objects are pickled with cloudpickle, so lambdas and closures
    work; ``shared`` is pickled once per :meth:`map` call and unpickled once per worker process.
    The pool is loky's reusable one: later executors with the same ``n`` reuse its warm processes
    (and the models they built with :meth:`featurelens.models.Model.from_factory`); :meth:`close`
    releases this executor, and idle workers exit after ``idle_timeout`` seconds (or with this
    process). Two ProcessExecutors with different ``n`` used at the same time resize the one pool.

    Parameters
    ----------
    n
        The number of worker processes (>= 1); None: ``os.cpu_count()``.
    threads_per_worker
        Threads each worker's numerical libraries (torch, BLAS, OpenMP) may use; None:
        ``max(1, os.cpu_count() // n)``, so ``n`` workers do not oversubscribe the cores.
    idle_timeout
        Seconds an idle worker process waits for work before it exits (>= 1).
    """

    remote = True

    def __init__(self, n: int | None = None, threads_per_worker: int | None = None, idle_timeout: int = 300):
        n = check_int(n, "n", low=1, allow_none=True)
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
            raise _unpicklable(err, "worker processes") from err
        token = uuid.uuid4().hex
        pool = self._pool()
        futures = [pool.submit(_process_task, token, blob, item) for item in items]
        return _gather(futures, "a worker process")

    def close(self) -> None:
        self._closed = True

    def __repr__(self) -> str:
        return f"ProcessExecutor(n={self.n_workers}, threads_per_worker={self.threads_per_worker})"


class RayExecutor(Executor):
    """Tasks on a pool of Ray actors (Moritz et al. 2018, "Ray: A Distributed Framework for Emerging
    AI Applications", arXiv:1712.05889): one actor per worker, each a long-lived process that keeps
    what it built (a :meth:`featurelens.models.Model.from_factory` model is built once per actor).

    ``shared`` goes into Ray's object store once per :meth:`map` call (``ray.put``) and each actor
    reads it once per call; tasks go to the actors as they become free (two in flight per actor),
    and results come back in the order of the items.

    Parameters
    ----------
    address
        None: this process's Ray (started here when ``ray.is_initialized()`` is False, a local
        cluster on this machine, and shut down by :meth:`close`). ``"auto"`` joins the cluster
        running on this node (``ray start --head`` / a Ray job); ``"ray://host:10001"`` connects a
        client. When Ray is already initialised here, that connection is used as it is.
    num_workers
        Actors to start; None: as many as the cluster's CPUs (GPUs when ``num_gpus > 0``) allow
        at ``num_cpus`` (``num_gpus``) each, at least one.
    num_cpus, num_gpus
        Ray resources reserved per actor (fractions allowed); ``num_gpus=1`` pins one GPU per
        actor (Ray sets ``CUDA_VISIBLE_DEVICES`` in the actor, so ``"cuda"`` there is its GPU).
    start_timeout
        Seconds to wait for the actors to start (they wait for free resources: another executor's
        actors hold theirs until it is closed); then a RuntimeError says what is free.
    max_retries
        How many times one task of a :meth:`map` call is run again after the actor running it
        died (its process exited or was killed). A dead actor is replaced by a new one (which
        rebuilds what it held, e.g. a ``Model.from_factory`` model) and the tasks it held are
        run again; tasks are pure functions of their inputs, so the results are those of an
        undisturbed run, bit for bit. Past ``max_retries`` a :class:`WorkerDiedError` names the
        actor, why it died and the task; the executor stays usable (its dead actor replaced).
    **init_kwargs
        Passed to ``ray.init`` when this executor starts Ray (e.g. ``runtime_env=``,
        ``log_to_driver=``). By default the dashboard is off and a local cluster's workers get
        this process's ``sys.path`` as ``PYTHONPATH`` (so they import the same modules); a real
        cluster needs featurelens and the caller's modules installed on its nodes (or a
        ``runtime_env``).
    """

    remote = True

    def __init__(self, address: str | None = None, num_workers: int | None = None, num_cpus: float = 1,
                 num_gpus: float = 0, start_timeout: float = 120.0, max_retries: int = 3, **init_kwargs):
        if address is not None and not isinstance(address, str):
            raise TypeError(f"address must be None, 'auto' or a Ray address string; got {type(address).__name__}")
        num_workers = check_int(num_workers, "num_workers", low=1, allow_none=True)
        start_timeout = check_float(start_timeout, "start_timeout", low=0, low_inclusive=False)
        self.start_timeout = start_timeout
        self.max_retries = check_int(max_retries, "max_retries", low=0)
        self.num_cpus = check_float(num_cpus, "num_cpus", low=0)
        self.num_gpus = check_float(num_gpus, "num_gpus", low=0)
        if self.num_cpus == 0 and self.num_gpus == 0 and num_workers is None:
            raise ValueError("num_cpus and num_gpus are both 0, so num_workers cannot be derived from the "
                             "cluster's resources; give num_workers")
        ray = _import_optional("ray", "ray", "RayExecutor")
        self._ray = ray
        self._started_ray = False
        self._actors: list = []
        if not ray.is_initialized():
            init_kwargs.setdefault("include_dashboard", False)
            if address is None and "runtime_env" not in init_kwargs:
                # A local cluster's workers import what this process imports (as loky's and
                # multiprocessing's do): functions of the caller's modules pickle by reference.
                path = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
                init_kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": path}}
            ray.init(address=address, **init_kwargs)
            self._started_ray = True
        try:
            resources = ray.cluster_resources()
            if num_workers is None:
                if self.num_gpus > 0:
                    num_workers = int(resources.get("GPU", 0) // self.num_gpus)
                else:
                    num_workers = int(resources.get("CPU", 0) // self.num_cpus)
                num_workers = max(1, num_workers)
            self.n_workers = num_workers
            for kind, each in (("CPU", self.num_cpus), ("GPU", self.num_gpus)):
                have = resources.get(kind, 0)
                if each * num_workers > have + 1e-9:
                    raise ValueError(
                        f"{num_workers} workers x {each:g} {kind}s each need {each * num_workers:g} {kind}s, "
                        f"and the Ray cluster has {have:g}; lower num_workers or num_{kind.lower()}s"
                    )
            self._actor_cls = ray.remote(num_cpus=self.num_cpus, num_gpus=self.num_gpus)(_RayWorker)
            self._actors = [self._actor_cls.remote() for _ in range(num_workers)]
            # Wait for the actors here, so start-up fails (or is paid) now, not in the first call.
            #: The process ids of the actors, in order (a replaced actor's is its successor's).
            self.pids = self._wait_started(self._actors)
            #: How many dead actors this executor replaced, over its life.
            self.restarts = 0
        except BaseException:
            self.close()
            raise

    def _wait_started(self, actors: list) -> list:
        """The pids of ``actors``, once they run; a RuntimeError saying what the cluster has free
        when they do not start within ``start_timeout``."""
        ray = self._ray
        refs = [a.pid.remote() for a in actors]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=self.start_timeout)
        if len(ready) < len(refs):
            free, resources = ray.available_resources(), ray.cluster_resources()
            raise RuntimeError(
                f"{len(refs) - len(ready)} of {len(refs)} Ray actors ({self.num_cpus:g} CPUs, "
                f"{self.num_gpus:g} GPUs each) did not start within start_timeout={self.start_timeout:g} s; "
                f"the cluster has {free.get('CPU', 0):g} CPUs and {free.get('GPU', 0):g} GPUs free "
                f"of {resources.get('CPU', 0):g} and {resources.get('GPU', 0):g}: other executors "
                "or tasks may hold them (close them), or lower num_workers, or raise start_timeout"
            )
        return ray.get(refs)

    def _replace(self, k: int) -> None:
        """Actor ``k`` died: a new actor takes its place (and its resources, freed by the death)."""
        ray = self._ray
        try:
            ray.kill(self._actors[k], no_restart=True)
        except Exception:  # already gone
            pass
        actor = self._actor_cls.remote()
        self._actors[k] = actor
        self.pids[k] = self._wait_started([actor])[0]
        self.restarts += 1

    def map(self, fn, items, shared=None):
        self._check_open()
        ray = self._ray
        items = list(items)
        if not items:
            return []
        try:
            ref = ray.put((fn, shared))
        except Exception as err:
            raise _unpicklable(err, "Ray actors", (fn, shared)) from err
        dead = ray.exceptions.RayActorError  # ActorDiedError, ActorUnavailableError
        out: list = [None] * len(items)
        retries = [0] * len(items)
        queue = collections.deque(range(len(items)))
        pending: dict = {}  # ref -> (item index, actor index, actor)
        try:
            while queue or pending:
                # Two tasks in flight per actor: the next task goes to the least busy live actor.
                load = [0] * len(self._actors)
                for _, k, actor in pending.values():
                    if self._actors[k] is actor:
                        load[k] += 1
                while queue and min(load) < 2:
                    k = int(np.argmin(load))
                    i = queue.popleft()
                    pending[self._actors[k].run.remote([ref], items[i])] = (i, k, self._actors[k])
                    load[k] += 1
                done, _ = ray.wait(list(pending), num_returns=1)
                for r in done:
                    i, k, actor = pending.pop(r)
                    try:
                        out[i] = ray.get(r)
                    except dead as err:
                        pid = self.pids[k]
                        # Its tasks in flight die with it (one may have finished, its reply lost).
                        held = sorted([i] + [j for j, _, a in pending.values() if a is actor])
                        if self._actors[k] is actor:  # the first of its tasks to report the death
                            self._replace(k)
                        if retries[i] >= self.max_retries:
                            raise WorkerDiedError(
                                f"Ray actor {k} (pid {pid}) died ({_ray_death_reason(err)}) while running "
                                f"task{'s' if len(held) > 1 else ''} {', '.join(map(str, held))} of {len(items)}; "
                                f"{retries[i]} retries used (max_retries={self.max_retries}). "
                                f"The actor was replaced, so this executor stays usable; a task that kills its "
                                "worker each time (a crash in native code, running out of memory) fails so again",
                                "a Ray actor", f"Ray actor {k} (pid {pid})", i, retries[i],
                            ) from None
                        retries[i] += 1
                        queue.appendleft(i)  # run again, on the new actor or another
        except WorkerDiedError:
            self._drain(pending)
            raise
        except Exception as err:
            self._drain(pending)
            cause = getattr(err, "cause", None)
            raise _worker_error(cause if isinstance(cause, BaseException) else err, "a Ray actor") from err
        return out

    def _drain(self, pending: dict) -> None:
        """After a failed task: cancel the tasks still queued and collect the others, so that no
        result is left behind (Ray prints an 'unhandled error' for each one never read)."""
        ray = self._ray
        refs = list(pending)
        for r in refs:
            try:
                ray.cancel(r)
            except Exception:  # pragma: no cover - best effort
                pass
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=30) if refs else ([], [])
        for r in ready:
            try:
                ray.get(r)
            except ray.exceptions.RayActorError:
                # Its actor died too: replace it (once), so that the next call runs.
                _, k, actor = pending[r]
                if self._actors[k] is actor:
                    self._replace(k)
            except Exception:
                pass

    def close(self) -> None:
        if self._ray is None:
            return
        ray, self._ray = self._ray, None
        for actor in self._actors:
            try:
                ray.kill(actor)
            except Exception:  # pragma: no cover - the cluster may be gone already
                pass
        self._actors = []
        if self._started_ray and ray.is_initialized():
            ray.shutdown()

    def _is_closed(self) -> bool:
        return self._ray is None

    def __repr__(self) -> str:
        return (f"RayExecutor(num_workers={self.n_workers}, num_cpus={self.num_cpus:g}, num_gpus={self.num_gpus:g}, "
                f"max_retries={self.max_retries})")


class DaskExecutor(Executor):
    """Tasks on a Dask cluster through a ``distributed.Client`` (Rocklin 2015, "Dask: Parallel
    Computation with Blocked algorithms and Task Scheduling", SciPy).

    ``shared`` is scattered to every worker once per :meth:`map` call (``broadcast=True``); one
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

    Parameters
    ----------
    client
        A ``distributed.Client`` (used as it is and left open by :meth:`close`), or a scheduler
        address string (``"tcp://host:8786"``), for which this executor opens a Client and closes
        it on :meth:`close`.
    max_retries
        How many times one :meth:`map` call re-sends its tasks lost with a dead worker (>= 0).
    """

    remote = True

    def __init__(self, client, max_retries: int = 3):
        self.max_retries = check_int(max_retries, "max_retries", low=0)
        distributed = _import_optional("distributed", "dask", "DaskExecutor")
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
                raise _unpicklable(err, "Dask workers", (fn, shared)) from err
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

    def map(self, fn, items, shared=None):
        self._check_open()
        distributed = _import_optional("distributed", "dask", "DaskExecutor")
        from distributed.scheduler import KilledWorker

        client = self._client
        items = list(items)
        if not items:
            return []
        lost_types = (KilledWorker, distributed.client.FutureCancelledError, concurrent.futures.CancelledError)
        out: list = [None] * len(items)
        todo = list(range(len(items)))
        for attempt in range(self.max_retries + 1):
            workers = self._workers()
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
                        raise _worker_error(err, "a Dask worker") from err
                    lost.append(i)
                    killed = killed or (err and (i, err))
                todo = lost
                if attempt == self.max_retries or killed:
                    raise self._died(lost, killed, gathered, workers, len(items), attempt) from gathered
            except Exception as err:
                client.cancel(futures)
                raise _worker_error(err, "a Dask worker") from err
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
        return f"DaskExecutor({self._client!r}, max_retries={self.max_retries})"


#: The kinds :func:`make_executor` builds (the command line's ``--executor`` choices, plus "serial").
EXECUTOR_KINDS = ("serial", "threads", "processes", "ray", "dask")


def make_executor(kind: str, workers: int | None = None, address: str | None = None) -> Executor:
    """An executor from a kind name, as the command line's ``--executor KIND --workers N --address
    ADDR`` builds it; close it (or use it as a context manager) when done.

    - ``"serial"``: :class:`SerialExecutor` (``workers`` and ``address`` must be None).
    - ``"threads"``: :class:`ThreadExecutor` with ``workers`` threads (default 4).
    - ``"processes"``: :class:`ProcessExecutor` with ``workers`` processes (default: one per core).
    - ``"ray"``: :class:`RayExecutor` with ``num_workers=workers`` (default: the cluster's CPUs) on
      ``address`` (None: the Ray already initialised in this process, else a local cluster started
      here and shut down on close; ``"auto"``: the cluster of this node; ``"ray://host:10001"``).
    - ``"dask"``: :class:`DaskExecutor` on the scheduler at ``address`` (``"tcp://host:8786"``), or
      without one on a local cluster of ``workers`` single-threaded processes (default: one per
      core) started here; either Client (and a local cluster) is closed with the executor.

    A missing engine raises ImportError naming the extra to install (``featurelens[ray]``,
    ``featurelens[dask]``); ``address`` with a kind that runs on this machine only is a ValueError.
    """
    from ._validation import check_option

    kind = check_option(kind, "kind", EXECUTOR_KINDS)
    workers = check_int(workers, "workers", low=1, allow_none=True)
    if address is not None and not isinstance(address, str):
        raise TypeError(f"address must be None or a string (a Ray or Dask address); got {type(address).__name__}")
    if address is not None and kind not in ("ray", "dask"):
        raise ValueError(f"address applies to the ray and dask executors (a cluster to join); got address={address!r} "
                         f"with kind={kind!r}, which runs on this machine")
    if kind == "serial":
        if workers is not None:
            raise ValueError(f"workers applies to parallel executors; got workers={workers} with kind='serial'")
        return SerialExecutor()
    if kind == "threads":
        return ThreadExecutor(4 if workers is None else workers)
    if kind == "processes":
        return ProcessExecutor(workers)
    if kind == "ray":
        return RayExecutor(address=address, num_workers=workers)
    distributed = _import_optional("distributed", "dask", "DaskExecutor")
    if address is not None:
        return DaskExecutor(address)  # opens a Client to the scheduler and closes it on close()
    import logging

    # A Client without an address starts its own LocalCluster and closes it with itself.
    client = distributed.Client(n_workers=workers or (os.cpu_count() or 1), threads_per_worker=1, processes=True,
                                dashboard_address=None, silence_logs=logging.ERROR)
    executor = DaskExecutor(client)
    executor._owns_client = True
    return executor
