"""The executor of a command (``featurelens audit | explain | select --executor KIND --workers N
--address ADDR``): the flags are checked before any loading, the executor is built by
:func:`featurelens.parallel.make_executor` when the work starts and closed when it ends (a local Ray
or Dask cluster started for the run is stopped; a Ray already initialised in this process, or a
cluster joined with ``--address``, is left running).

``--workers`` is bounded before anything starts (:func:`max_workers`): on this machine (threads,
processes, a local Dask cluster) at most :data:`WORKERS_PER_CORE` per CPU core this process may use
(threads: at least :data:`MIN_THREADS`, since threads mostly wait on a model behind an API); a local
Ray cluster has one CPU per core and each actor reserves one, so at most ``os.cpu_count()``. A
cluster joined with ``--address`` has the size it has: Ray refuses more workers than its CPUs when
it is joined (before any actor starts), and a joined Dask cluster runs on its own workers, so
``--workers`` with ``--executor dask --address`` is refused.

The flags themselves are defined in :mod:`featurelens.cli` (no torch import for ``--help``).
"""

from __future__ import annotations

import contextlib

from .parallel._base import MIN_THREADS, WORKERS_PER_CORE, max_workers

__all__ = ["ExecutorUsage", "check_executor_flags", "command_executor", "max_workers", "WORKERS_PER_CORE",
           "MIN_THREADS"]

#: The engine module and extra of each kind that needs one.
_ENGINES = {"ray": ("ray", "ray", "RayExecutor"), "dask": ("distributed", "dask", "DaskExecutor")}


class ExecutorUsage(Exception):
    """A usage error of the executor flags (exit code 2), or a failure to start one (``code``)."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def _flags(args):
    return getattr(args, "executor", None), getattr(args, "workers", None), getattr(args, "address", None)


def _check_workers(kind: str, workers, address) -> None:
    """Refuse ``--workers`` above :func:`max_workers` before anything starts."""
    if workers is None:
        return
    if kind == "dask" and address is not None:
        raise ExecutorUsage(f"--workers applies to a local Dask cluster; --executor dask --address {address} runs "
                            "on the workers that cluster has (leave out --workers)")
    bound = max_workers(kind, address)
    if bound is None:
        return
    from ._validation import check_budget

    cap, why = bound
    try:
        check_budget(workers, "--workers", unit="workers", limit=cap, source=why, scope="",
                     hint=f"lower --workers (--executor {kind} on this machine)")
    except (ValueError, TypeError) as err:
        raise ExecutorUsage(str(err)) from None


def check_executor_flags(args) -> None:
    """Check ``--executor/--workers/--address`` before any work: ``--workers`` and ``--address``
    need ``--executor``, ``--address`` only for ray and dask, ``--workers`` at most
    :func:`max_workers` (and not with ``--executor dask --address``), and the engine of ray or dask
    must be importable (else the one-line ImportError message naming the extra to install). Raises
    :class:`ExecutorUsage` (exit code 2)."""
    kind, workers, address = _flags(args)
    if kind is None:
        if workers is not None:
            raise ExecutorUsage("--workers applies with --executor (threads, processes, ray or dask)")
        if address is not None:
            raise ExecutorUsage("--address applies with --executor ray or --executor dask")
        return
    if address is not None and kind not in _ENGINES:
        raise ExecutorUsage(f"--address applies to --executor ray or dask (a cluster to join); --executor {kind} "
                            "runs on this machine")
    _check_workers(kind, workers, address)  # before the engine is imported: nothing starts
    if kind in _ENGINES:
        from .parallel import _import_optional

        module, extra, what = _ENGINES[kind]
        try:
            _import_optional(module, extra, what)
        except ImportError as err:
            raise ExecutorUsage(" ".join(str(err).split())) from err


@contextlib.contextmanager
def command_executor(args):
    """The executor the flags ask for (None without ``--executor``), closed when the block ends,
    however it ends. A failure to build it is an :class:`ExecutorUsage`: exit code 2 for settings
    the cluster cannot honour (e.g. more workers than it has CPUs) or a missing engine, 1 for a
    cluster that does not start."""
    kind, workers, address = _flags(args)
    if kind is None:
        yield None
        return
    from .parallel import make_executor

    try:
        executor = make_executor(kind, workers=workers, address=address)
    except ImportError as err:
        raise ExecutorUsage(" ".join(str(err).split())) from err
    except (ValueError, TypeError) as err:
        raise ExecutorUsage(f"--executor {kind}: {err}") from err
    except Exception as err:  # a cluster that cannot be reached or does not start
        raise ExecutorUsage(f"--executor {kind} did not start: {type(err).__name__}: {err}", 1) from err
    try:
        yield executor
    finally:
        executor.close()
