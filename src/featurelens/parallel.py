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

Counting stays in the caller: a game counts the coalitions (and a MaskedModel its model rows) when
the executor returns, never on the workers.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any, Callable, Sequence

import numpy as np

from ._batching import chunks
from ._validation import check_int

__all__ = ["Executor", "SerialExecutor", "ThreadExecutor", "WorkerError"]


class WorkerError(RuntimeError):
    """An exception raised by a task on a worker, re-raised in the caller.

    ``worker_type`` is the name of the worker's exception class and ``worker_message`` its
    message; the message of this error names both.
    """

    def __init__(self, worker_type: str, worker_message: str, where: str = "a worker"):
        self.worker_type = worker_type
        self.worker_message = worker_message
        super().__init__(f"{worker_type} on {where}: {worker_message}")


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
        """Release threads, processes or cluster handles (idempotent)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __reduce__(self):
        raise TypeError(f"{type(self).__name__} does not pickle: it holds threads, processes or cluster "
                        "handles of this process (a game sent to a worker travels without its executor)")


class SerialExecutor(Executor):
    """Tasks one after the other in this process (the reference the others are tested against)."""

    def map(self, fn, items, shared=None):
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
        if self._pool is None:
            raise RuntimeError("this ThreadExecutor is closed; create a new one")
        futures = [self._pool.submit(fn, shared, item) for item in items]
        out = []
        for fut in futures:
            try:
                out.append(fut.result())
            except Exception as err:
                for other in futures:
                    other.cancel()
                raise WorkerError(type(err).__name__, str(err), "a worker thread") from err
        return out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __repr__(self) -> str:
        return f"ThreadExecutor(n={self.n_workers})"
