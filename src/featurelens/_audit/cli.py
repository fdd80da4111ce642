"""The ``featurelens audit`` command: load a model file and a data file safely, run
:func:`featurelens.audit` and write its HTML report. Its options are defined in
:mod:`featurelens.cli` (no torch import for ``--help``); :func:`run` does the work.

``--metrics NAME ...`` (or ``all``) chooses the metrics (:func:`featurelens.audit`'s ``metrics=``).

``--executor threads|processes|ray|dask`` (with ``--workers N``, ``--address ADDR``) runs the audit
on an executor (:func:`featurelens.audit`'s ``executor=``), built when the audit starts and closed
when it ends (:mod:`featurelens._cli_executor`).

Exit codes: 0 success; 2 usage error (a missing option or flag, an unsupported file type, an
untrusted pickle without ``--trust-model-file``, a bad ``--target``, an unusable ``--out``, executor
flags that do not fit together or a missing engine: ``pip install featurelens[ray]``); 1 failure (a
corrupt, mismatched or non-numeric file, an audit that fails, a cluster that does not start).
Messages go to stderr.
"""

from __future__ import annotations

import os
import sys

__all__ = ["run"]


def _error(message: str, code: int) -> int:
    print(f"featurelens audit: error: {message}", file=sys.stderr)
    return code


def _format(table) -> str:
    rows = table.to_dict("records") if hasattr(table, "to_dict") else list(table)
    head = f"{'rank':>4}  {'method':<22} {'ins-del':>8} {'faithf.':>8} {'avg sens':>9}  status"
    lines = [head]
    skipped = [r["method"] for r in rows if r["status"] == "n/a"]
    for r in rows:
        if r["status"] == "n/a":
            continue
        def f(key):
            v = r.get(key)
            try:
                return f"{float(v):8.3f}" if v is not None and float(v) == float(v) else "     n/a"
            except (TypeError, ValueError):
                return "     n/a"
        rank = "" if r.get("rank") is None or str(r.get("rank")) == "<NA>" else str(r["rank"])
        lines.append(f"{rank:>4}  {r['method']:<22} {f('insertion_minus_deletion')} "
                     f"{f('faithfulness_correlation')} {f('avg_sensitivity')} "
                     f"  {r['status']}" + (f": {r.get('reason')}" if r["status"] != "ok" and r.get("reason") else ""))
    if skipped:
        lines.append(f"not applicable (reasons in the report): {', '.join(skipped)}")
    return "\n".join(lines)


def run(args) -> int:
    import numpy as np

    from .._cli_executor import ExecutorUsage, check_executor_flags, command_executor
    from .._loading import LoadError, check_model_data, load_data, load_model
    from ..report import OutError, check_out
    from .core import audit

    try:  # before loading anything: a bad --out or executor flag costs nothing
        check_out(args.out, "audit", args.overwrite, name="--out")
        check_executor_flags(args)
    except OutError as err:
        return _error(str(err), 2)
    except ExecutorUsage as err:
        return _error(str(err), err.code)

    try:
        model, description = load_model(
            args.model, architecture=args.architecture, image_size=args.image_size, trust=args.trust_model_file
        )
        X, y, names = load_data(args.data, labels=args.labels, input_shape=args.input_shape)
        check_model_data(model, X, args.data, names)
    except LoadError as err:
        return _error(str(err), err.exit_code)

    target = args.target
    if target == "labels":
        if y is None:
            return _error("--target labels needs --labels", 2)
        target = None
    elif target == "predicted":
        target, y = None, None  # explain the predicted class even when labels are given
    if isinstance(target, int):
        from ..models import Model

        n_out = int(Model(model).predict(X[:1]).shape[1])
        if target >= n_out:
            return _error(f"--target {target} is out of range: the model has {n_out} output(s)", 2)
    if y is not None and not hasattr(model, "classes_") and np.asarray(y).dtype.kind not in "iu":
        from .._loading import whole_number_labels

        as_int = whole_number_labels(y)
        if as_int is None:
            return _error(f"the labels must be integer class indices for this model; got values such as {y[0]!r}", 1)
        y = as_int

    try:
        with command_executor(args) as executor:
            table = audit(
                model, X, y, methods=args.methods, metrics=getattr(args, "metrics", None), out=args.out, n_explain=args.n_explain, seed=args.seed,
                progress=False if args.no_progress else None, target=target,
                feature_names=names if names is not None and X.ndim == 2 else None, overwrite=args.overwrite,
                executor=executor,
            )
    except ExecutorUsage as err:
        return _error(str(err), err.code)
    except (ValueError, TypeError) as err:
        return _error(str(err), 1)
    attrs = table.attrs if hasattr(table, "attrs") else {"verdict": table.verdict, "report": table.report}
    print(f"model: {description}; data: {os.path.basename(args.data)} {X.shape}")
    print(_format(table))
    print()
    print(attrs["verdict"])
    print(f"report: {os.path.abspath(attrs['report'])}")
    return 0
