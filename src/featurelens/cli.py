"""The command line: ``featurelens benchmark | diagnose | select | audit`` (also ``python -m featurelens``).

``main(argv=None)`` returns the exit code: 0 on success, 2 for a usage error (an unknown
scenario, background, model or method name, a bad number), 1 when the run itself fails.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import __version__
from ._argtypes import non_negative_int as _non_negative_int
from ._argtypes import positive_int as _positive_int

__all__ = ["main", "build_parser"]

DEFAULT_OUT = "featurelens-report"


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


class _Choices(argparse.Action):
    """``nargs="+"`` names, also accepted comma-separated (``--methods saliency,random``),
    each checked against ``choices`` with a message naming the option, the value and the valid
    choices."""

    def __init__(self, option_strings, dest, valid=(), **kwargs):
        self.valid = tuple(valid)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        names = [v for value in values for v in value.split(",") if v]
        for name in names:
            if name not in self.valid:
                parser.error(
                    f"argument {option_string}: unknown value {name!r}; valid choices: {', '.join(self.valid)}"
                )
        setattr(namespace, self.dest, list(dict.fromkeys(names)))


def build_parser() -> argparse.ArgumentParser:
    from .bench.models import MODELS
    from .bench.runner import DEFAULT_SETTINGS, QUICK_SETTINGS
    from .datasets import BACKGROUNDS, SCENARIOS
    from .explainers import list_explainers

    parser = _Parser(
        prog="featurelens",
        description="featurelens: which features drive a model, can the explanation be trusted, "
        "and which features did the network learn.",
    )
    parser.add_argument("--version", action="version", version=f"featurelens {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    bench = sub.add_parser(
        "benchmark",
        help="run the XAI-TRIS ground-truth benchmark and write an HTML report",
        description="Train the XAI-TRIS reference models on every scenario and background, explain "
        "correctly classified test samples with every gradient and AGOP method (plus a random map), "
        "score the maps against the planted patterns (top-k precision, IoU, EMD) and write a report. "
        f"Default: n_samples {DEFAULT_SETTINGS['n_samples']}, n_explain {DEFAULT_SETTINGS['n_explain']}, "
        f"at most {DEFAULT_SETTINGS['epochs']} epochs; --quick: n_samples {QUICK_SETTINGS['n_samples']}, "
        f"n_explain {QUICK_SETTINGS['n_explain']}, at most {QUICK_SETTINGS['epochs']} epochs.",
    )
    bench.add_argument("--quick", action="store_true", help="small data sets and short training (about a minute)")
    bench.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help=f"report folder (default: {DEFAULT_OUT})")
    bench.add_argument("--scenarios", nargs="+", action=_Choices, valid=SCENARIOS, metavar="NAME",
                       help=f"subset of: {', '.join(SCENARIOS)} (default: all)")
    bench.add_argument("--backgrounds", nargs="+", action=_Choices, valid=BACKGROUNDS, metavar="NAME",
                       help=f"subset of: {', '.join(BACKGROUNDS)} (default: all)")
    bench.add_argument("--methods", nargs="+", action=_Choices, valid=list_explainers(), metavar="NAME",
                       help="explainer names (default: every gradient and AGOP explainer, and random)")
    bench.add_argument("--models", nargs="+", action=_Choices, valid=tuple(MODELS), metavar="NAME",
                       help=f"subset of: {', '.join(MODELS)} (default: all; llr only on linear)")
    bench.add_argument("--image-size", type=int, choices=(8, 64), default=8, help="8 (default) or 64")
    bench.add_argument("--n-samples", type=_positive_int, default=None, metavar="N",
                       help="samples per data set, a multiple of 4 (split 80/10/10)")
    bench.add_argument("--n-explain", type=_positive_int, default=None, metavar="N",
                       help="most test samples explained per data set")
    bench.add_argument("--epochs", type=_positive_int, default=None, metavar="N", help="most training epochs")
    bench.add_argument("--seed", type=_non_negative_int, default=0, metavar="N", help="random seed (default 0)")
    bench.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                       help="data sets run in parallel (default: one per CPU core)")
    bench.add_argument("--no-progress", action="store_true", help="no progress bars")

    # The other commands live beside the code they drive: each module has
    # add_arguments(parser) and run(args) -> exit code.
    for name, module in _COMMANDS.items():
        command = _command_module(module)
        command.add_arguments(sub.add_parser(name, help=command.HELP, description=command.DESCRIPTION))
    return parser


# command name -> module (relative to featurelens) with HELP, DESCRIPTION, add_arguments, run
_COMMANDS = {
    "diagnose": "learning._diagnose_cli",
    "select": "selection._cli",
    "audit": "_audit_cli",
}


def _command_module(module: str):
    import importlib

    return importlib.import_module(f"featurelens.{module}")


def _plus_minus() -> str:
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        "±".encode(encoding)
        return "±"
    except (UnicodeEncodeError, LookupError):
        return "+-"


def _benchmark(args) -> int:
    from .bench.runner import run_benchmark

    try:
        result = run_benchmark(
            scenarios=args.scenarios,
            backgrounds=args.backgrounds,
            methods=args.methods,
            models=args.models,
            image_size=args.image_size,
            n_samples=args.n_samples,
            n_explain=args.n_explain,
            seed=args.seed,
            quick=args.quick,
            out=args.out,
            progress=False if args.no_progress else None,
            epochs=args.epochs,
            n_jobs=args.jobs,
        )
    except ValueError as err:  # settings the parser cannot check alone (e.g. n_samples % 4)
        print(f"featurelens benchmark: error: {err}", file=sys.stderr)
        return 2
    print(result.format_table(plus_minus=_plus_minus()))
    print()
    print(result.format_models())
    print()
    print(f"finished in {result.timings['total_seconds']:.0f} s")
    print(f"report: {os.path.abspath(result.report_path)}")
    return 0


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
    if args.command == "benchmark":
        return _benchmark(args)
    if args.command in _COMMANDS:
        return _command_module(_COMMANDS[args.command]).run(args)
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
