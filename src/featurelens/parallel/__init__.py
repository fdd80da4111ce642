"""Executors: evaluate a game's coalitions, or any list of tasks, on threads, processes or a cluster.

Every game evaluates through one hook (see :mod:`featurelens.games`)::

    executor(evaluate_chunk, masks, chunk_size) -> values

An :class:`Executor` is such a callable. It cuts ``masks`` at exactly the chunk boundaries the
serial path uses (``featurelens._batching.chunks``), groups consecutive chunks into a few tasks
per worker, evaluates the tasks with ``Executor.map`` and concatenates the values in row order,
so every batch the model sees and every value are those of the serial path (bitwise equal for a
deterministic model).

``Executor.map`` is the one primitive a backend implements::

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
  keeps what it built (a ``featurelens.models.Model.from_factory`` model) across calls, and
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

import os

from .._validation import check_int
# _base: the Executor base, the errors and the shared helpers; _local: serial, threads, processes;
# _ray: RayExecutor; _dask: DaskExecutor (ray and distributed are imported only inside them).
from ._base import Executor, WorkerDiedError, WorkerError, import_optional, check_workers, max_workers
from ._dask import DaskExecutor
from ._local import ProcessExecutor, SerialExecutor, ThreadExecutor
from ._ray import RayExecutor

__all__ = [
    "Executor", "SerialExecutor", "ThreadExecutor", "ProcessExecutor", "RayExecutor", "DaskExecutor", "WorkerError",
    "WorkerDiedError",
    "make_executor", "EXECUTOR_KINDS", "max_workers",
]


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
    from .._validation import check_option

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
    distributed = import_optional("distributed", "dask", "DaskExecutor")
    if address is not None:
        return DaskExecutor(address)  # opens a Client to the scheduler and closes it on close()
    import logging

    if workers is not None:  # a local cluster's processes, refused before any starts
        check_workers(workers, "workers", "dask", hint="lower workers (the processes of a local Dask cluster)")
    # A Client without an address starts its own LocalCluster and closes it with itself.
    client = distributed.Client(n_workers=workers or (os.cpu_count() or 1), threads_per_worker=1, processes=True,
                                dashboard_address=None, silence_logs=logging.ERROR)
    executor = DaskExecutor(client)
    executor._owns_client = True
    return executor
