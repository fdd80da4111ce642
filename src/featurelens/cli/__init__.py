"""The command line: ``featurelens benchmark | diagnose | select | audit`` (also ``python -m featurelens``).

``main(argv=None)`` returns the exit code: 0 on success, 2 for a usage error (an unknown
scenario, background, model or method name, a bad number, an unusable ``--out``), 1 when the run
itself fails, 130 when it is interrupted (Ctrl-C: one line "interrupted" on stderr, no traceback;
an earlier report in ``--out`` stays as it was).

Every size option is bounded before any file is read or written and before any worker starts
(exit code 2, one line on stderr naming the option, the estimate and the bound): the rows and
samples explained (:data:`ROW_OPTIONS`, at most ``featurelens._budgets.MAX_EVALUATIONS``),
``--workers`` and ``--jobs`` (``featurelens.cli.executor.max_workers``: 4 per CPU core on this
machine), the benchmark's ``--n-samples``/``--epochs`` and diagnose's ``--steps``/``--p``/``--width``
(by the functions they are given to, before any training), select's ``-k`` (the CSV's columns).

One module per command, each holding its parser (``add_parser(sub)``) and its work (``run(args)``
returning the exit code): ``featurelens.cli.benchmark``, ``featurelens.cli.diagnose``,
``featurelens.cli.select``, ``featurelens.cli.audit``, ``featurelens.cli.explain``
(whose report is ``featurelens.cli.explain_report``); the shared value types and the
``--overwrite`` flag are ``featurelens.cli.options``, the ``--executor/--workers/--address``
flags and the executor they build ``featurelens.cli.executor``. The command modules import
nothing that imports torch, and each command's work is imported only when it runs:
``featurelens --help`` and ``featurelens COMMAND --help`` stay instant. A few names and defaults
shown by ``--help`` live in modules that import torch (the XAI-TRIS scenarios, the grokking
defaults): :data:`HELP_NAMES` collects the commands' copies, and tests/test_cli_out.py checks each
against its source.
"""

from __future__ import annotations

import argparse
import sys

from .._version import __version__
from . import audit, benchmark, diagnose, explain, select

__all__ = ["main", "build_parser", "COMMANDS", "HELP_NAMES", "ROW_OPTIONS"]

#: The commands, in the order ``--help`` lists them: name -> module (``add_parser``, ``run``).
COMMANDS = {"benchmark": benchmark, "diagnose": diagnose, "select": select, "audit": audit, "explain": explain}

#: Names and defaults shown by --help whose home imports torch; each is checked against it by a test.
HELP_NAMES = {
    "scenarios": benchmark.SCENARIOS,  # datasets.SCENARIOS
    "backgrounds": benchmark.BACKGROUNDS,  # datasets.BACKGROUNDS
    "grokking": diagnose.GROKKING_DEFAULTS,  # learning._grokking.DEFAULTS
}

#: The row counts of each command that are bounded before any work (attribute, option, what one
#: unit costs at least): every explained row or sample is at least one model evaluation, and every
#: coalition of a background method averages the model over the background rows, so each is
#: refused above featurelens._budgets.MAX_EVALUATIONS (10^8). The other size options are bounded
#: elsewhere, before any work too: --n-samples and --epochs by the benchmark runner, --steps, --p
#: and --width by the grokking run, --workers by ``featurelens.cli.executor`` (4 per CPU core),
#: --jobs by ``featurelens.cli.benchmark.check_jobs`` (as --workers: processes on this
#: machine), -k by the CSV's columns (select).
ROW_OPTIONS = {name: module.ROW_OPTIONS for name, module in COMMANDS.items() if hasattr(module, "ROW_OPTIONS")}

#: The commands that write a report folder ``--out`` (checked before any work).
REPORT_COMMANDS = ("benchmark", "audit", "diagnose", "explain")


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors raise instead of exiting, so that :func:`main` returns the
    exit code (argparse's convention: 2 for usage errors)."""

    def exit(self, status=0, message=None):
        if message:
            self._print_message(message, sys.stderr)
        raise _Exit(status)

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


class _Exit(Exception):
    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


def build_parser() -> argparse.ArgumentParser:
    """The ``featurelens`` parser, one subcommand per module of :data:`COMMANDS`."""
    parser = _Parser(
        prog="featurelens",
        description="featurelens: which features drive a model, can the explanation be trusted, "
        "and which features did the network learn.",
    )
    parser.add_argument("--version", action="version", version=f"featurelens {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in COMMANDS.values():
        module.add_parser(sub)
    return parser


def _check_sizes(command: str, args) -> str | None:
    """The message refusing a size option of ``command`` (None when every one is within its bound),
    before any file is read or written and before any worker starts."""
    from .._budgets import check_budget

    try:
        for attr, option, what in ROW_OPTIONS.get(command, ()):
            value = getattr(args, attr, None)
            if isinstance(value, int):  # --background FILE is a file
                check_budget(value, option, unit="model evaluations", what=what, hint=f"lower {option}")
        if command == "benchmark":
            benchmark.check_jobs(args)
    except (ValueError, TypeError) as err:
        return str(err)
    return None


def _run(command: str, args) -> int:
    refused = _check_sizes(command, args)
    if refused is not None:
        print(f"featurelens {command}: error: {refused}", file=sys.stderr)
        return 2
    if command in REPORT_COMMANDS:
        from ..report import OutError, check_out

        try:  # before importing torch, loading or training: a bad --out costs nothing
            check_out(args.out, command, args.overwrite, name="--out")
        except OutError as err:
            print(f"featurelens {command}: error: {err}", file=sys.stderr)
            return 2
    return COMMANDS[command].run(args)


def main(argv=None) -> int:
    """Entry point of the ``featurelens`` command; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except _Exit as stop:
        return stop.status
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return _run(args.command, args)
    except KeyboardInterrupt:
        # Ctrl-C: one line, no traceback, the shell's exit status for SIGINT (128 + 2). Reports are
        # built beside --out and moved into place at the end, so an earlier report stays whole.
        print(f"featurelens {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
