"""The executor of a command (``featurelens audit | explain | select --executor KIND --workers N
--address ADDR``): the flags are checked before any loading, the executor is built by
:func:`featurelens.parallel.make_executor` when the work starts and closed when it ends (a local Ray
or Dask cluster started for the run is stopped; a Ray already initialised in this process, or a
cluster joined with ``--address``, is left running).

The flags themselves are defined in :mod:`featurelens.cli` (no torch import for ``--help``).
"""

from __future__ import annotations

import contextlib

__all__ = ["ExecutorUsage", "check_executor_flags", "command_executor"]

#: The engine module and extra of each kind that needs one.
_ENGINES = {"ray": ("ray", "ray", "RayExecutor"), "dask": ("distributed", "dask", "DaskExecutor")}


class ExecutorUsage(Exception):
    """A usage error of the executor flags (exit code 2), or a failure to start one (``code``)."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def _flags(args):
    return getattr(args, "executor", None), getattr(args, "workers", None), getattr(args, "address", None)


def check_executor_flags(args) -> None:
    """Check ``--executor/--workers/--address`` before any work: ``--workers`` and ``--address``
    need ``--executor``, ``--address`` only for ray and dask, and the engine of ray or dask must be
    importable (else the one-line ImportError message naming the extra to install). Raises
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
