"""The command line: ``featurelens benchmark | diagnose | select | audit`` (also ``python -m featurelens``).

``main(argv=None)`` returns the exit code: 0 on success, 2 for a usage error (an unknown
scenario, background, model or method name, a bad number, an unusable ``--out``), 1 when the run
itself fails, 130 when it is interrupted (Ctrl-C: one line "interrupted" on stderr, no traceback;
an earlier report in ``--out`` stays as it was).

Every size option is bounded before any file is read or written and before any worker starts
(exit code 2, one line on stderr naming the option, the estimate and the bound): the rows and
samples explained (:data:`ROW_OPTIONS`, at most ``featurelens._validation.MAX_EVALUATIONS``),
``--workers`` and ``--jobs`` (:func:`featurelens._cli_executor.max_workers`: 4 per CPU core on this
machine), the benchmark's ``--n-samples``/``--epochs`` and diagnose's ``--steps``/``--p``/``--width``
(by the functions they are given to, before any training), select's ``-k`` (the CSV's columns).

Every command's options are defined here, from modules that do not import torch, and each
command's work is imported only when it runs: ``featurelens --help`` and ``featurelens COMMAND
--help`` stay instant. A few names and defaults shown by ``--help`` live in modules that import
torch (the XAI-TRIS scenarios, the grokking defaults, the selectors): :data:`HELP_NAMES` holds them,
and tests/test_cli.py checks each against its source.
"""

from __future__ import annotations

import argparse
import os
import sys

from ._argtypes import Choices, fraction, non_negative_float, non_negative_int, output_target, positive_int, shape
from ._version import __version__
from .groundtruth.settings import DEFAULT_SETTINGS, MODEL_NAMES, QUICK_SETTINGS

__all__ = ["main", "build_parser"]

DEFAULT_OUT = "featurelens-report"
AUDIT_OUT = "featurelens-audit"
DIAGNOSE_OUT = "featurelens-diagnose"

#: Names and defaults shown by --help whose home imports torch; each is checked against it by a test.
HELP_NAMES = {
    "scenarios": ("linear", "multiplicative", "translations_rotations", "xor"),  # datasets.SCENARIOS
    "backgrounds": ("white", "correlated"),  # datasets.BACKGROUNDS
    "grokking": dict(p=31, width=256, train_fraction=0.5, lr=3e-3, weight_decay=1.0, steps=3000),  # learning._grokking.DEFAULTS
    "selectors": ("agop", "iif_learn", "minkowski", "minshap", "nbse", "sand", "siofs"),  # selection._cli.METHODS
}


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


def _explainer_names():
    from .explainers import list_explainers

    return list_explainers()


def _audit_metric_names():
    from ._audit.scoring import audit_specs

    return (*audit_specs(), "all")


def _overwrite(parser, what: str) -> None:
    parser.add_argument("--overwrite", action="store_true",
                        help=f"write into --out even when it holds other files ({what}); without it such a "
                             "place is refused before any work")


#: ``--executor`` choices (featurelens.parallel.make_executor's kinds, less "serial", the default).
EXECUTORS = ("threads", "processes", "ray", "dask")


def _add_executor(parser, what: str) -> None:
    """``--executor/--workers/--address``: where ``what`` runs (built and closed by
    :mod:`featurelens._cli_executor`)."""
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


def _add_benchmark(sub) -> None:
    scenarios, backgrounds = HELP_NAMES["scenarios"], HELP_NAMES["backgrounds"]
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
    _overwrite(bench, "an earlier benchmark report is always replaced")
    bench.add_argument("--scenarios", nargs="+", action=Choices, valid=scenarios, metavar="NAME",
                       help=f"subset of: {', '.join(scenarios)} (default: all)")
    bench.add_argument("--backgrounds", nargs="+", action=Choices, valid=backgrounds, metavar="NAME",
                       help=f"subset of: {', '.join(backgrounds)} (default: all)")
    bench.add_argument("--methods", nargs="+", action=Choices, valid=_explainer_names, metavar="NAME",
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


def _add_audit(sub) -> None:
    parser = sub.add_parser(
        "audit",
        help="score every applicable explainer on a model and data and write a report",
        description="Load a model (a torch state dict with --architecture or a scikit-learn model from a "
        "skops file, which load without running code; a TorchScript or joblib/pickle file only with "
        "--trust-model-file, since they contain code that runs at load) and data (.npy, .npz, .csv, .parquet), run every applicable explainer, score the "
        "maps for faithfulness (deletion/insertion, faithfulness correlation), robustness "
        "(sensitivity), complexity and randomisation, rank them and write a self-contained HTML "
        "report with results.json and results.csv. Exit codes: 0 ok, 2 usage error, 1 failure.",
    )
    parser.add_argument("--model", required=True, metavar="FILE",
                        help="torch state dict (.pt, with --architecture), skops (.skops), or TorchScript "
                             "(.pt) or joblib/pickle (.joblib, .pkl), which need --trust-model-file")
    parser.add_argument("--data", required=True, metavar="FILE", help="inputs: .npy, .npz, .csv or .parquet (rows = samples)")
    parser.add_argument("--labels", default=None, metavar="FILE|COLUMN",
                        help="labels: a column of the CSV/parquet data, an array name in the .npz, or a .npy/.csv file")
    parser.add_argument("--target", type=output_target, default=None, metavar="INT|predicted|labels",
                        help="the explained output: an index, the predicted class, or the labels "
                             "(default: the labels when given, else the predicted class)")
    parser.add_argument("--out", default=AUDIT_OUT, metavar="DIR", help=f"report folder (default: {AUDIT_OUT})")
    _overwrite(parser, "an earlier audit report is always replaced")
    parser.add_argument("--trust-model-file", action="store_true",
                        help="allow a TorchScript or pickle/joblib model file (both run code from the file at "
                             "load: only for files you trust)")
    parser.add_argument("--architecture", default=None, choices=MODEL_NAMES, metavar="NAME",
                        help=f"built-in architecture of a state dict: {', '.join(MODEL_NAMES)}")
    parser.add_argument("--image-size", type=int, choices=(8, 64), default=None,
                        help="input size of the built-in architecture (default: the one the weights fit)")
    parser.add_argument("--input-shape", type=shape, default=None, metavar="SHAPE",
                        help="shape of one sample to reshape flat rows into, e.g. 1,8,8")
    parser.add_argument("--methods", nargs="+", action=Choices, valid=_explainer_names, metavar="NAME",
                        help="explainer names (default: every applicable one, and random)")
    parser.add_argument("--metrics", nargs="+", action=Choices, valid=_audit_metric_names, metavar="NAME",
                        help="metric names, or all (default: deletion, insertion, faithfulness_correlation, "
                             "avg/max_sensitivity, sparseness, complexity, model_randomization); also road, irof, "
                             "selectivity, region_perturbation, sensitivity_n, monotonicity, continuity, "
                             "random_logit, efficient_mprt, completeness, ... (a wrong name lists them all)")
    parser.add_argument("--n-explain", type=positive_int, default=32, metavar="N",
                        help="samples audited (a seeded subset; default 32; at most 10^8, the evaluation bound)")
    parser.add_argument("--seed", type=non_negative_int, default=0, metavar="N", help="random seed (default 0)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_executor(parser, "On it: each method's explanation of the audited rows (in parts), their noisy and "
                          "randomised re-explanations, and the metrics' forward passes; the scores are the serial "
                          "run's (a gradient method's maps up to the last bit: its batches differ)")


def _add_diagnose(sub) -> None:
    d = HELP_NAMES["grokking"]
    parser = sub.add_parser(
        "diagnose",
        help="train a small network on modular addition with the training monitor and write a report",
        description="Train a two-layer network with quadratic activation, f(x) = V (W x)^2, on (a + b) mod p "
        "(one-hot operands, full-batch AdamW, MSE on one-hot labels) on the CPU until it groks or the "
        "step budget ends, with featurelens.learning.Monitor recording the NFA correlation, effective "
        "ranks, neural collapse and the rolling-window spectrum of the weight updates, whose eigengap "
        "detector announces grokking. Writes PNG curves, the first-layer Gram matrix W^T W and its "
        "AGOP as images, results.json and index.html into --out, and prints a summary. "
        f"Defaults: p={d['p']}, width {d['width']}, training fraction {d['train_fraction']}, lr {d['lr']}, "
        f"weight decay {d['weight_decay']}, at most {d['steps']} steps (about 15 seconds on 2 cores).",
    )
    parser.add_argument("--out", default=DIAGNOSE_OUT, metavar="DIR", help=f"report folder (default: {DIAGNOSE_OUT})")
    _overwrite(parser, "an earlier diagnose report is always replaced")
    parser.add_argument("--seed", type=non_negative_int, default=0, metavar="N", help="random seed (default 0)")
    parser.add_argument("--steps", type=positive_int, default=d["steps"], metavar="N",
                        help=f"most training steps (default {d['steps']}; training stops "
                        "300 steps after test accuracy reaches 99%%)")
    parser.add_argument("--weight-decay", type=non_negative_float, default=d["weight_decay"], metavar="F",
                        help=f"AdamW weight decay (default {d['weight_decay']}; 0 gives the no-grokking control)")
    parser.add_argument("--p", type=positive_int, default=d["p"], metavar="P", help=f"the modulus (default {d['p']})")
    parser.add_argument("--width", type=positive_int, default=d["width"], metavar="N",
                        help=f"hidden units (default {d['width']})")
    parser.add_argument("--train-fraction", type=fraction, default=d["train_fraction"], metavar="F",
                        help=f"fraction of the p^2 pairs used for training (default {d['train_fraction']})")
    parser.add_argument("--lr", type=non_negative_float, default=d["lr"], metavar="F",
                        help=f"AdamW learning rate (default {d['lr']})")
    parser.add_argument("--probe-every", type=positive_int, default=100, metavar="N",
                        help="steps between AGOP/NFA/rank/collapse measurements (default 100)")
    parser.add_argument("--grokalign", type=non_negative_float, default=None, metavar="WEIGHT",
                        help="add the GrokAlign Jacobian penalty WEIGHT * mean ||df/dx||_F (Walker et al. 2025) to "
                        "the training loss and record the Jacobian alignment (default: off; e.g. 0.01)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _add_select(sub) -> None:
    methods = HELP_NAMES["selectors"]
    parser = sub.add_parser(
        "select",
        help="select the columns of a CSV file that predict a target column",
        description="Fit one of featurelens's feature selectors on the numeric columns of DATA.csv (all "
        "but the target column), print the selected columns with their scores (higher = more "
        "important) and ranks, and optionally write them to a CSV file.",
    )
    parser.add_argument("data", metavar="DATA.csv", help="a CSV file with a header row")
    parser.add_argument("--target", required=True, metavar="COLUMN", help="the column to predict")
    parser.add_argument("-k", type=positive_int, default=None, metavar="K",
                        help="number of columns to select (default: the method's own rule; sand needs K)")
    parser.add_argument("--method", required=True, choices=methods, metavar="NAME",
                        help=f"the selector: {', '.join(methods)}")
    parser.add_argument("--out", default=None, metavar="FILE",
                        help="write column,score,rank of the selection here (an existing file is replaced only "
                             "when an earlier select wrote it, or with --overwrite)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace --out even when it is a file select did not write")
    parser.add_argument("--seed", type=non_negative_int, default=0, metavar="N", help="random seed (default 0)")
    _add_executor(parser, "On it: minshap's coalitions (the fitted model's held-out predictions; --method "
                          "minshap only); the selection and scores are the serial run's, bitwise")


EXPLAIN_OUT = "featurelens-explain"


def _background_spec(text: str):
    """``--background``: a number of rows (int >= 1) or a data file."""
    if text.strip().lstrip("+-").isdigit():
        n = int(text)
        if n < 1:
            raise argparse.ArgumentTypeError(f"expected a number of rows >= 1 or a data file, got {text!r}")
        return n
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a number of rows or a data file, got ''")
    return text


def _explain_method(text: str) -> str:
    names = _explainer_names()
    if text not in names:
        raise argparse.ArgumentTypeError(f"unknown value {text!r}; valid choices: {', '.join(names)}")
    return text


def _add_explain(sub) -> None:
    parser = sub.add_parser(
        "explain",
        help="explain a model's predictions on a data file and write values, plots and an HTML page",
        description="Load a model (as for audit: skops; a TorchScript or joblib/pickle file only with "
        "--trust-model-file, since they run code from the file) and data (.npy, .npz, .csv, .parquet), explain the first rows with one "
        "explainer and write into --out: values.csv or .parquet (one row per explained row, one column "
        "per feature, base_value, target, output units), explanation.npz, bar/beeswarm/waterfall PNGs "
        "and index.html. Exit codes: 0 ok, 2 usage error, 1 failure.",
    )
    parser.add_argument("--model", required=True, metavar="FILE",
                        help="skops (.skops), or TorchScript (.pt) or joblib/pickle (.joblib, .pkl), which "
                             "need --trust-model-file")
    parser.add_argument("--data", required=True, metavar="FILE", help="inputs: .npy, .npz, .csv or .parquet (rows = samples)")
    parser.add_argument("--labels", default=None, metavar="FILE|COLUMN",
                        help="labels: a column of the CSV/parquet data (left out of the features), an array "
                             "name in the .npz, or a .npy/.csv file")
    parser.add_argument("--method", type=_explain_method, default=None, metavar="NAME",
                        help="the explainer (default: kernel_shap for black-box models such as scikit-learn "
                             "estimators, integrated_gradients for torch models)")
    parser.add_argument("--background", type=_background_spec, default=None, metavar="FILE|N",
                        help="rows that dropped features are averaged over (methods that take a background): "
                             "a data file, or N rows sampled from the data with --seed (default 50; at most 10^8, "
                             "the evaluation bound)")
    parser.add_argument("--rows", type=positive_int, default=None, metavar="N",
                        help="explain the first N rows (default: all, up to 200; at most 10^8, the evaluation "
                             "bound)")
    parser.add_argument("--target", type=output_target, default=None, metavar="INT|predicted",
                        help="the explained output: an index, or the predicted class (default); "
                             "'labels' explains each row's label (with --labels)")
    parser.add_argument("--out", default=EXPLAIN_OUT, metavar="DIR", help=f"report folder (default: {EXPLAIN_OUT})")
    _overwrite(parser, "an earlier explain report is always replaced")
    parser.add_argument("--seed", type=non_negative_int, default=0, metavar="N", help="random seed (default 0)")
    parser.add_argument("--trust-model-file", action="store_true",
                        help="allow a TorchScript or pickle/joblib model file (both run code from the file at "
                             "load: only for files you trust); for a skops file, trust every type in it")
    parser.add_argument("--trust-type", action="append", default=[], metavar="NAME", dest="trust_type",
                        help="for a skops file: trust the type NAME (e.g. sklearn.tree._tree.Tree) on top of "
                             "skops' default trusted types; repeatable. A refused file prints the flags it needs")
    parser.add_argument("--output", choices=("raw", "probability", "log_odds"), default=None,
                        help="units of the explained output: raw (the model's own: predict_proba for "
                             "classifiers, logits for torch models; the default), probability (softmax / "
                             "predict_proba) or log_odds (log(p / (1 - p))); tree_shap: the trees' own sum by default (a binary booster's "
                             "log-odds), probability for a binary booster or a tree's class fractions")
    parser.add_argument("--format", choices=("csv", "parquet"), default="csv", dest="format",
                        help="file format of the values table: csv (values.csv, default) or parquet "
                             "(values.parquet; needs pyarrow or fastparquet)")
    _add_executor(parser, "On it: the rows, in parts (with fewer rows than workers, a black-box method's "
                          "coalitions); the values are the serial run's (a gradient method's up to the last "
                          "bit: its batches differ)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="featurelens",
        description="featurelens: which features drive a model, can the explanation be trusted, "
        "and which features did the network learn.",
    )
    parser.add_argument("--version", action="version", version=f"featurelens {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _add_benchmark(sub)
    _add_diagnose(sub)
    _add_select(sub)
    _add_audit(sub)
    _add_explain(sub)
    return parser


def _plus_minus() -> str:
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        "±".encode(encoding)
        return "±"
    except (UnicodeEncodeError, LookupError):
        return "+-"


def _benchmark(args) -> int:
    from .groundtruth.runner import run_benchmark

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


#: The row counts of each command that are bounded before any work (attribute, option, what one
#: unit costs at least): every explained row or sample is at least one model evaluation, and every
#: coalition of a background method averages the model over the background rows, so each is
#: refused above featurelens._validation.MAX_EVALUATIONS (10^8). The other size options are bounded
#: elsewhere, before any work too: --n-samples and --epochs by the benchmark runner, --steps, --p
#: and --width by the grokking run, --workers by featurelens._cli_executor (4 per CPU core),
#: --jobs here (as --workers: processes on this machine), -k by the CSV's columns (select).
ROW_OPTIONS = {
    "benchmark": (("n_explain", "--n-explain", "(at least one per explained test sample of a data set)"),),
    "audit": (("n_explain", "--n-explain", "(at least one per audited row)"),),
    "explain": (("rows", "--rows", "(at least one per explained row)"),
                ("background", "--background", "per coalition (the model on every background row)")),
}


def _check_sizes(command: str, args) -> str | None:
    """The message refusing a size option of ``command`` (None when every one is within its bound),
    before any file is read or written and before any worker starts."""
    from ._validation import check_budget

    try:
        for attr, option, what in ROW_OPTIONS.get(command, ()):
            value = getattr(args, attr, None)
            if isinstance(value, int):  # --background FILE is a file
                check_budget(value, option, unit="model evaluations", what=what, hint=f"lower {option}")
        if command == "benchmark" and args.jobs is not None:
            from ._cli_executor import max_workers

            cap, why = max_workers("processes")
            check_budget(args.jobs, "--jobs", unit="worker processes", limit=cap, source=why, scope="",
                         hint="lower --jobs (at most one per data set runs anyway)")
    except (ValueError, TypeError) as err:
        return str(err)
    return None


def _run(command: str, args) -> int:
    refused = _check_sizes(command, args)
    if refused is not None:
        print(f"featurelens {command}: error: {refused}", file=sys.stderr)
        return 2
    if command in ("benchmark", "audit", "diagnose", "explain"):
        from .report import OutError, check_out

        try:  # before importing torch, loading or training: a bad --out costs nothing
            check_out(args.out, command, args.overwrite, name="--out")
        except OutError as err:
            print(f"featurelens {command}: error: {err}", file=sys.stderr)
            return 2
    if command == "benchmark":
        return _benchmark(args)
    if command == "audit":
        from ._audit.cli import run
    elif command == "diagnose":
        from .learning._diagnose_cli import run
    elif command == "explain":
        from ._explain_cli import run
    else:
        from .selection._cli import run
    return run(args)


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
