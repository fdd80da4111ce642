"""The executor of a command (``featurelens audit | explain | select --executor KIND --workers N
--address ADDR``): the flags are checked before any loading, the executor is built by
:func:`featurelens.parallel.make_executor` when the work starts and closed when it ends (a local Ray
or Dask cluster started for the run is stopped; a Ray already initialised in this process, or a
cluster joined with ``--address``, is left running).

``--workers`` is bounded before anything starts (:func:`max_workers`): on this machine (threads,
processes, a local Dask cluster) at most ``featurelens.parallel._base.WORKERS_PER_CORE`` (4) per CPU core this process may use
(threads: at least ``MIN_THREADS`` (32), since threads mostly wait on a model behind an API); a local
Ray cluster has one CPU per core and each actor reserves one, so at most ``os.cpu_count()``. A
cluster joined with ``--address`` has the size it has: Ray refuses more workers than its CPUs when
it is joined (before any actor starts), and a joined Dask cluster runs on its own workers, so
``--workers`` with ``--executor dask --address`` is refused.

The flags are defined by :func:`add_executor_flags`; nothing here imports torch until the flags
are checked (``featurelens --help`` stays instant).
"""

from __future__ import annotations

import contextlib

from .options import positive_int

__all__ = ["EXECUTORS", "add_executor_flags", "ExecutorUsage", "check_executor_flags", "command_executor",
           "max_workers"]

#: ``--executor`` choices (featurelens.parallel.make_executor's kinds, less "serial", the default).
EXECUTORS = ("threads", "processes", "ray", "dask")

#: The engine module and extra of each kind that needs one.
_ENGINES = {"ray": ("ray", "ray", "RayExecutor"), "dask": ("distributed", "dask", "DaskExecutor")}


def add_executor_flags(parser, what: str) -> None:
    """``--executor/--workers/--address``: where ``what`` runs (checked by
    :func:`check_executor_flags`, built and closed by :func:`command_executor`)."""
    group = parser.add_argument_group("parallel execution (default: this process only)")
    group.add_argument("--executor", choices=EXECUTORS, default=None,
                       help="the parallel backend: threads (this process; for models behind an API or that "
                            "release the GIL), processes (worker processes on this machine), ray (a Ray cluster: "
                            "a local one started for this run, or --address), dask (a Dask cluster: a local one "
                            f"started for this run, or --address). {what}. ray and dask need pip install "
                            "featurelens[ray] or featurelens[dask]")
    group.add_argument("--workers", type=positive_int, default=None, metavar="N",
                       help="number of threads, processes or cluster workers (default: 4 threads; one process "
                            "per CPU core; ray: as many as the cluster's CPUs; a local dask cluster: one per "
                            "CPU core); on this machine at most 4 per CPU core (threads: at least 32 allowed; a "
                            "local ray cluster: one per core); a cluster joined with --address has its own size")
    group.add_argument("--address", default=None, metavar="ADDR",
                       help="the cluster to join instead of starting one: ray 'auto' (the cluster of this node) "
                            "or ray://HOST:10001, dask tcp://HOST:8786; it is left running at the end")


def max_workers(kind: str, address: str | None = None):
    """:func:`featurelens.parallel.max_workers` (imported when called: it imports torch)."""
    from ..parallel import max_workers as bound

    return bound(kind, address)


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
    from .._budgets import check_budget

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
        from ..parallel import import_optional

        module, extra, what = _ENGINES[kind]
        try:
            import_optional(module, extra, what)
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
    from ..parallel import make_executor

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


def check_out_and_executor(args, command: str) -> int | None:
    """Before loading anything (a bad ``--out`` or executor flag costs nothing): check the report
    folder and the executor flags of ``featurelens <command>``. None when both are fine, else the
    exit code (2 for ``--out``, the usage error's own code) after printing the error."""
    import sys

    from ..report import OutError, check_out

    try:
        check_out(args.out, command, args.overwrite, name="--out")
        check_executor_flags(args)
    except OutError as err:
        code, message = 2, str(err)
    except ExecutorUsage as err:
        code, message = err.code, str(err)
    else:
        return None
    print(f"featurelens {command}: error: {message}", file=sys.stderr)
    return code
