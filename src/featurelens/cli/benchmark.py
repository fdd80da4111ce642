"""The ``featurelens benchmark`` command: the XAI-TRIS ground-truth benchmark
(:func:`featurelens.groundtruth.run_benchmark`) and its HTML report.

:func:`add_parser` defines the options (no torch import: the scenario and background names shown
by ``--help`` are :data:`SCENARIOS` and :data:`BACKGROUNDS`, checked against
:mod:`featurelens.datasets` by a test); :func:`run` does the work and returns the exit code (2 for
settings the runner refuses, e.g. ``--n-samples`` not a multiple of 4).
"""

from __future__ import annotations

import os
import sys

from ..groundtruth.settings import DEFAULT_SETTINGS, MODEL_NAMES, QUICK_SETTINGS
from .options import Choices, add_overwrite, explainer_names, non_negative_int, positive_int

__all__ = ["add_parser", "run", "DEFAULT_OUT", "SCENARIOS", "BACKGROUNDS", "ROW_OPTIONS"]

DEFAULT_OUT = "featurelens-report"

#: The XAI-TRIS scenarios and backgrounds shown by --help (featurelens.datasets.SCENARIOS and
#: BACKGROUNDS, whose module imports torch; a test checks they are equal).
SCENARIOS = ("linear", "multiplicative", "translations_rotations", "xor")
BACKGROUNDS = ("white", "correlated")

#: The row counts bounded before any work (attribute, option, what one unit costs at least).
ROW_OPTIONS = (("n_explain", "--n-explain", "(at least one per explained test sample of a data set)"),)


def add_parser(sub) -> None:
    """The ``benchmark`` subcommand and its options."""
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
    add_overwrite(bench, "an earlier benchmark report is always replaced")
    bench.add_argument("--scenarios", nargs="+", action=Choices, valid=SCENARIOS, metavar="NAME",
                       help=f"subset of: {', '.join(SCENARIOS)} (default: all)")
    bench.add_argument("--backgrounds", nargs="+", action=Choices, valid=BACKGROUNDS, metavar="NAME",
                       help=f"subset of: {', '.join(BACKGROUNDS)} (default: all)")
    bench.add_argument("--methods", nargs="+", action=Choices, valid=explainer_names, metavar="NAME",
                       help="explainer names (default: every gradient and AGOP explainer, and random)")
    bench.add_argument("--models", nargs="+", action=Choices, valid=MODEL_NAMES, metavar="NAME",
                       help=f"subset of: {', '.join(MODEL_NAMES)} (default: all; llr only on linear)")
    bench.add_argument("--image-size", type=int, choices=(8, 64), default=8, help="8 (default) or 64")
    bench.add_argument("--n-samples", type=positive_int, default=None, metavar="N",
                       help="samples per data set, a multiple of 4 (split 80/10/10)")
    bench.add_argument("--n-explain", type=positive_int, default=None, metavar="N",
                       help="most test samples explained per data set (at most 10^8, the evaluation bound)")
    bench.add_argument("--epochs", type=positive_int, default=None, metavar="N", help="most training epochs")
    bench.add_argument("--seed", type=non_negative_int, default=0, metavar="N", help="random seed (default 0)")
    bench.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                       help="data sets run in parallel (default: one per CPU core; at most 4 per core)")
    bench.add_argument("--no-progress", action="store_true", help="no progress bars")


def check_jobs(args) -> None:
    """Refuse ``--jobs`` above the processes this machine allows (ValueError), before any work."""
    if args.jobs is None:
        return
    from .._budgets import check_budget
    from .executor import max_workers

    cap, why = max_workers("processes")
    check_budget(args.jobs, "--jobs", unit="worker processes", limit=cap, source=why, scope="",
                 hint="lower --jobs (at most one per data set runs anyway)")


def _plus_minus() -> str:
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        "±".encode(encoding)
        return "±"
    except (UnicodeEncodeError, LookupError):
        return "+-"


def run(args) -> int:
    """Run the benchmark the options ask for, print its tables and the report's path; the exit code."""
    from ..groundtruth.runner import run_benchmark

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
            overwrite=args.overwrite,
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
