"""The Ray backend: :class:`RayExecutor`, a pool of Ray actors (``ray`` is imported only when one
is created); see :mod:`featurelens.parallel`.
"""

from __future__ import annotations

import collections
import os
import sys

import numpy as np

from .._validation import check_float, check_int
from ._base import (Executor, WorkerDiedError, cached_shared, import_optional, unpicklable_error, worker_error,
                    check_workers)


# -- worker side (module level: it pickles by reference) -------------------------------------------
class _RayWorker:
    """The actor of a :class:`RayExecutor` (one per worker, so one model per process)."""

    def run(self, boxed_ref, item):
        import ray

        ref = boxed_ref[0]  # boxed, so Ray hands over the reference and the actor caches the value
        fn, shared = cached_shared(ref.hex(), lambda: ray.get(ref))
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


#: How many times an actor that dies while it starts (its process killed or crashing before it
#: answers) is replaced by a new one before the executor gives up with a :class:`WorkerDiedError`.
START_RETRIES = 1

#: The environment variable that sets :class:`RayExecutor`'s ``start_timeout`` when it is not given.
START_TIMEOUT_ENV = "FEATURELENS_RAY_START_TIMEOUT"
#: ``start_timeout`` when neither the argument nor :data:`START_TIMEOUT_ENV` gives one (seconds).
DEFAULT_START_TIMEOUT = 120.0


def _resolve_start_timeout(start_timeout, environ=None) -> tuple[float, str]:
    """``(seconds, source)``: ``start_timeout`` when given, else :data:`START_TIMEOUT_ENV` when set,
    else :data:`DEFAULT_START_TIMEOUT`; ``source`` says which, for the timeout message."""
    if start_timeout is not None:
        return check_float(start_timeout, "start_timeout", low=0, low_inclusive=False), "argument"
    text = (os.environ if environ is None else environ).get(START_TIMEOUT_ENV)
    if text is None or not text.strip():
        return DEFAULT_START_TIMEOUT, "default"
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{START_TIMEOUT_ENV} must be a number of seconds > 0 (RayExecutor's start_timeout); "
                         f"got {text!r}")
    return value, "env"


def _start_timeout_message(missing: int, total: int, num_cpus: float, num_gpus: float, timeout: float,
                           source: str, free: dict, resources: dict) -> str:
    """Why ``missing`` of ``total`` actors did not start, and what to do: free resources (close
    other executors, fewer workers), or, on a busy machine where starting a worker process just
    takes longer, a longer ``start_timeout`` (the argument or :data:`START_TIMEOUT_ENV`)."""
    given = {"argument": "", "env": f" (from {START_TIMEOUT_ENV})", "default": " (the default)"}[source]
    longer = max(2 * timeout, 600.0)
    return (
        f"{missing} of {total} Ray actors ({num_cpus:g} CPUs, {num_gpus:g} GPUs each) did not start within "
        f"start_timeout={timeout:g} s{given}; the cluster has {free.get('CPU', 0):g} CPUs and "
        f"{free.get('GPU', 0):g} GPUs free of {resources.get('CPU', 0):g} and {resources.get('GPU', 0):g}. "
        "If nothing is free, other executors or tasks may hold them (close them), or lower num_workers. "
        "If resources are free, the actors' processes are still starting, as on a busy or loaded machine "
        f"(each one imports torch): give them longer with RayExecutor(start_timeout={longer:g}) or, for "
        f"make_executor and the command line's --executor ray, the environment variable "
        f"{START_TIMEOUT_ENV}={longer:g}"
    )


class RayExecutor(Executor):
    """Tasks on a pool of Ray actors (Moritz et al. 2018, "Ray: A Distributed Framework for Emerging
    AI Applications", arXiv:1712.05889): one actor per worker, each a long-lived process that keeps
    what it built (a ``featurelens.models.Model.from_factory`` model is built once per actor).

    ``shared`` goes into Ray's object store once per ``map`` call (``ray.put``) and each actor
    reads it once per call; tasks go to the actors as they become free (two in flight per actor),
    and results come back in the order of the items.

    Parameters
    ----------
    address
        None: this process's Ray (started here when ``ray.is_initialized()`` is False, a local
        cluster on this machine, and shut down by ``close``). ``"auto"`` joins the cluster
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
        actors hold theirs until it is closed; on a busy machine each actor's process, which imports
        torch, may also take long to start); then a RuntimeError says what is free and how to wait
        longer. None (the default): the environment variable ``FEATURELENS_RAY_START_TIMEOUT``
        (seconds, > 0) when it is set, else 120 s. The variable also reaches the executors that
        :func:`featurelens.parallel.make_executor` and the command line's ``--executor ray`` create.
        An actor that dies while it starts (its process killed, out of memory, a crash importing
        torch) is replaced by a new one, ``START_RETRIES`` (1) time; when the replacement dies
        too, a :class:`WorkerDiedError` says so and how to restart (the executor is closed).
    max_retries
        How many times one task of a ``map`` call is run again after the actor running it
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
                 num_gpus: float = 0, start_timeout: float | None = None, max_retries: int = 3, **init_kwargs):
        if address is not None and not isinstance(address, str):
            raise TypeError(f"address must be None, 'auto' or a Ray address string; got {type(address).__name__}")
        num_workers = check_int(num_workers, "num_workers", low=1, allow_none=True)
        self.start_timeout, self._start_timeout_source = _resolve_start_timeout(start_timeout)
        self.max_retries = check_int(max_retries, "max_retries", low=0)
        self.num_cpus = check_float(num_cpus, "num_cpus", low=0)
        self.num_gpus = check_float(num_gpus, "num_gpus", low=0)
        if self.num_cpus == 0 and self.num_gpus == 0 and num_workers is None:
            raise ValueError("num_cpus and num_gpus are both 0, so num_workers cannot be derived from the "
                             "cluster's resources; give num_workers")
        ray = import_optional("ray", "ray", "RayExecutor")
        self._ray = ray
        self._started_ray = False
        self._actors: list = []
        if not ray.is_initialized():
            if address is None and num_workers is not None:
                # A local cluster started here: each actor is a process on this machine, and with
                # num_cpus=0 the cluster's CPU count would not stop 10**9 of them.
                check_workers(num_workers, "num_workers", "processes",
                              hint="each Ray actor of a local cluster is a process on this machine; "
                                   "join a cluster with address= for more")
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
            self._actors = [None] * num_workers
            #: The process ids of the actors, in order (a replaced actor's is its successor's).
            self.pids = [None] * num_workers
            #: How many dead actors this executor replaced, over its life (at start-up too).
            self.restarts = 0
            # Wait for the actors here, so start-up fails (or is paid) now, not in the first call.
            self._start(range(num_workers))
        except BaseException:
            self.close()
            raise

    def _start(self, positions) -> None:
        """New actors at ``positions`` (of ``self._actors``), waited for until they run; their pids
        go to ``self.pids``. An actor that dies before it answers (its process killed or crashing
        as it starts) is replaced, ``START_RETRIES`` times; then a :class:`WorkerDiedError`
        says the workers died and how to restart. A RuntimeError says what the cluster has free
        when the actors do not start within ``start_timeout``."""
        ray = self._ray
        dead = ray.exceptions.RayActorError  # ActorDiedError, ActorUnavailableError
        tries = dict.fromkeys(positions, 0)
        todo = list(tries)
        while todo:
            for k in todo:
                self._actors[k] = self._actor_cls.remote()
            refs = {k: self._actors[k].pid.remote() for k in todo}
            ready, _ = ray.wait(list(refs.values()), num_returns=len(refs), timeout=self.start_timeout)
            if len(ready) < len(refs):
                free, resources = ray.available_resources(), ray.cluster_resources()
                raise RuntimeError(_start_timeout_message(
                    len(refs) - len(ready), len(refs), self.num_cpus, self.num_gpus, self.start_timeout,
                    self._start_timeout_source, free, resources))
            again = []
            for k, ref in refs.items():
                try:
                    self.pids[k] = ray.get(ref)
                except dead as err:
                    if tries[k] >= START_RETRIES:
                        raise self._start_died(k, err, tries[k]) from None
                    tries[k] += 1
                    self.restarts += 1
                    self._kill(k)
                    again.append(k)
            todo = again

    def _start_died(self, k: int, err: BaseException, retries: int) -> WorkerDiedError:
        """The error when actor ``k`` and each of its ``retries`` replacements died as they started."""
        n = len(self._actors)
        replaced = (f"and so did the {retries} new actor{'s' if retries > 1 else ''} started in its place "
                    f"(START_RETRIES={START_RETRIES})" if retries else "(no retry left)")
        return WorkerDiedError(
            f"Ray actor {k} of {n} died while starting ({_ray_death_reason(err)}), {replaced}: the workers' "
            "processes are killed or crash as they start (out of memory, each one importing torch and your "
            "modules; a crash in that import; a node that went away). Check `ray status` and the worker logs "
            "(/tmp/ray/session_latest/logs on the node), free memory or lower num_workers, then create the "
            "executor again (RayExecutor(...); make_executor and --executor ray create a new one on each run)",
            "a Ray actor", f"Ray actor {k}", None, retries,
        )

    def _kill(self, k: int) -> None:
        try:
            self._ray.kill(self._actors[k], no_restart=True)
        except Exception:  # already gone
            pass

    def _replace(self, k: int) -> None:
        """Actor ``k`` died: a new actor takes its place (and its resources, freed by the death)."""
        self._kill(k)
        self._start([k])
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
            raise unpicklable_error(err, "Ray actors", (fn, shared)) from err
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
            raise worker_error(cause if isinstance(cause, BaseException) else err, "a Ray actor") from err
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
