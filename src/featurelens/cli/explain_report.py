"""What ``featurelens explain`` writes (:func:`write_report`): the values table, the explanation,
the bar/beeswarm/waterfall figures and ``index.html``, with the efficiency check
(``base_value + sum(values)`` against the model's ``f(x)`` in the explanation's own units,
:func:`explained_units`, :func:`explained_outputs`, :func:`efficiency_gap`). The command itself is
:mod:`featurelens.cli.explain`.
"""

from __future__ import annotations

import html
import os

import numpy as np

from .._optional import to_numpy
from .select import csv_text_cell

__all__ = ["EFFICIENCY_TOLERANCE", "TOP", "UNIT_NAMES", "explained_units", "explained_outputs", "efficiency_gap",
           "efficiency_text", "parquet_engine", "class_label", "beeswarm_groups", "target_text", "write_report"]

#: Features listed in the report's table and the printed summary.
TOP = 10
#: How the report names each output unit.
UNIT_NAMES = {"raw": "raw (the model's own outputs)", "probability": "probability",
          "log_odds": "log_odds (log(p / (1 - p)))",
          "margin": "margin (the classifier's per-class scores, its decision_function)",
          "expected_path_length": "expected path length E[h(x)] (the mean depth of x over the trees; "
                                  "decision_function = -2^(-E[h(x)] / c) - offset)"}


#: The largest gap between ``base + sum(values)`` and ``f(x)``, relative to ``max(1, |f(x)|)``,
#: that the report calls "efficiency holds"; a larger gap is printed as it is.
EFFICIENCY_TOLERANCE = 1e-6


def explained_units(e) -> str:
    """The units of an explanation's values, as the explainer recorded them: ``e.output``, or a
    unit in ``e.params["output"]`` (or ``"units"``) when the explainer recorded another one there
    (tree_shap explains a binary gradient boosting classifier's log-odds margin while the Model it
    was given returns predict_proba). Never assumed from the command line's ``--output``."""
    from ..explanation import OUTPUTS

    units = getattr(e, "output", "raw") or "raw"
    params = getattr(e, "params", None) or {}
    for key in ("units", "output"):
        recorded = params.get(key)
        if isinstance(recorded, str) and recorded in OUTPUTS and recorded != units and units == "raw":
            return recorded
    return units


def _margins(model, rows) -> np.ndarray | None:
    """The classifier's own margins, float64: class 1's log-odds ``(n,)`` for a binary one, the
    per-class scores ``(n, k)`` otherwise, computed by the estimator itself (``decision_function``;
    LightGBM's ``predict(raw_score=True)``, XGBoost's ``predict(output_margin=True)``); None when it
    has none (the log-odds read back from predict_proba lose digits where p is near 0 or 1)."""
    est = model.estimator
    classes = getattr(est, "classes_", None)
    if est is None or classes is None or len(classes) < 2:
        return None
    try:
        inputs = model.decode(model.to_tensor(rows))
        package = type(est).__module__.split(".")[0]
        if package == "lightgbm":
            out = est.predict(inputs, raw_score=True)
        elif package == "xgboost":
            out = est.predict(inputs, output_margin=True)
        elif callable(getattr(est, "decision_function", None)):
            out = est.decision_function(inputs)
        else:
            return None
    except Exception:  # a model that cannot give its margin: the probabilities' log-odds instead
        return None
    out = np.asarray(out, dtype=np.float64)
    return out.reshape(-1) if out.ndim == 1 or out.shape[1:] == (1,) else out


def explained_outputs(model, rows, targets, units: str) -> np.ndarray:
    """``f(x)`` of each row's target in ``units`` (float64): the Model's outputs when it is in those
    units already; for log-odds of a binary classifier and for ``"margin"`` (a multi-class
    booster's per-class scores) the classifier's own margins (class 1's log-odds, negated for class
    0); else the Model in those units (:meth:`~featurelens.models.Model.with_output`)."""
    targets = np.asarray(targets, dtype=np.int64).reshape(-1)
    n = len(targets)
    if hasattr(model, "with_missing_values"):  # NaN cells: the model's own routing, as explained
        model = model.with_missing_values()
    if units != model.output and units in ("log_odds", "margin"):
        margin = _margins(model, rows)
        if margin is not None and margin.shape == (n,):
            return np.where(targets == 1, margin, -margin)
        if margin is not None and units == "margin" and margin.ndim == 2 and margin.shape[0] == n:
            return margin[np.arange(n), targets]
    wrapped = model if units == model.output else model.with_output(units)
    outputs = to_numpy(wrapped.predict(rows)).astype(np.float64)
    return outputs[np.arange(n), targets]


def efficiency_gap(base, values, f_x) -> dict:
    """``{"max": max_i |base_i + sum(values_i) - f(x_i)|, "relative": the same over max(1, |f(x_i)|)}``
    (float64 sums; scaled so that a model whose outputs are 1e308 is judged like one of outputs 1)."""
    base = np.asarray(base, dtype=np.float64)
    f_x = np.asarray(f_x, dtype=np.float64)
    scale = np.maximum(1.0, np.abs(f_x))
    total = base / scale + (np.asarray(values, dtype=np.float64) / scale[:, None]).sum(axis=1)
    rel = np.abs(total - f_x / scale)
    return {"max": float(np.max(rel * scale)), "relative": float(np.max(rel))}


def efficiency_text(gap: dict, units: str) -> str:
    """How the report states the efficiency check: "holds" only for a relative gap of at most
    :data:`EFFICIENCY_TOLERANCE`; otherwise the gap itself, never called efficiency."""
    if gap["relative"] <= EFFICIENCY_TOLERANCE:
        return (f"holds: base_value + sum(values) = f(x) ({units}) to {gap['max']:.3g} "
                f"(max over the rows; relative {gap['relative']:.3g})")
    return (f"does NOT hold: base_value + sum(values) differs from f(x) ({units}) by up to {gap['max']:.6g} "
            f"(relative {gap['relative']:.3g}, more than {EFFICIENCY_TOLERANCE:g})")


def _figure(draw) -> bytes:
    from matplotlib.figure import Figure

    from ..plots._png import figure_png

    fig = Figure(figsize=(7.5, 4.8))
    ax = fig.add_subplot(1, 1, 1)
    draw(ax)
    return figure_png(fig, tight=True)


def parquet_engine() -> str | None:
    """The installed parquet writer pandas can use: "pyarrow", else "fastparquet", else None."""
    import importlib.util

    for name in ("pyarrow", "fastparquet"):
        if importlib.util.find_spec(name) is not None:
            return name
    return None


def _unique_column(name: str, taken: set) -> str:
    while name in taken:
        name = "_" + name
    return name


def class_label(t: int, classes) -> str:
    """How the report names output ``t``: ``class <label>`` (the estimator's ``classes_[t]``), else
    ``output <t>``."""
    if classes is not None and 0 <= int(t) < len(classes):
        return f"class {np.asarray(classes).tolist()[int(t)]}"
    return f"output {int(t)}"


def beeswarm_groups(targets, classes=None) -> list:
    """The beeswarm figures: ``[(file, row indices, title, caption)]``. One beeswarm of every row
    when they all explain the same output; else one per output present (``--target predicted`` on
    a classifier explains each row's predicted class, and a class's values, e.g. class 0's
    log-odds, the negatives of class 1's, must not share one plot), titled with the class, files
    ``beeswarm_target_<t>.png``."""
    targets = np.asarray(targets).reshape(-1)
    present = np.unique(targets)
    caption = "each explained row's value per feature, coloured by the feature's value"
    if len(present) <= 1:
        title = None if not len(present) else f"{class_label(present[0], classes)} (output {int(present[0])})"
        return [("beeswarm.png", np.arange(len(targets)), title, caption)]
    groups = []
    for t in present:
        rows = np.flatnonzero(targets == t)
        name = class_label(t, classes)
        groups.append((f"beeswarm_target_{int(t)}.png", rows, f"{name} (output {int(t)}): {len(rows)} rows",
                       f"{name}: the {len(rows)} explained row(s) whose target is output {int(t)}; {caption}"))
    return groups


def target_text(asked, targets, classes) -> str:
    """The report's target line: what was asked and, per output explained, its class and rows."""
    present, counts = np.unique(np.asarray(targets).reshape(-1), return_counts=True)
    per = ", ".join(f"{class_label(t, classes)}: {int(c)} row{'s' if c > 1 else ''}" for t, c in zip(present, counts))
    what = "predicted class" if asked in (None, "predicted") else str(asked)
    return f"{what} ({per})"


def write_report(args, e, values, base, targets, f_x, gap, names, data, description, method, n_data, units,
           first_row=None, classes=None) -> None:
    import pandas as pd

    from .. import plots
    from ..plots._text import plain_text
    from ..report import HTMLReport, report_folder

    taken = set(names)
    base_col = _unique_column("base_value", taken)
    target_col = _unique_column("target", taken | {base_col})
    output_col = _unique_column("output", taken | {base_col, target_col})
    table = pd.DataFrame(values, columns=names)
    if base is not None:
        table[base_col] = base
    table[target_col] = targets
    table[output_col] = units
    values_file = "values.parquet" if getattr(args, "format", "csv") == "parquet" else "values.csv"

    figures = {
        "bar.png": (_figure(lambda ax: plots.bar(values, feature_names=names, ax=ax)),
                    "mean |value| per feature over the explained rows"),
    }
    for file, rows, title, caption in beeswarm_groups(targets, classes):
        def draw_beeswarm(ax, rows=rows, title=title):
            plots.beeswarm(values[rows], data=data[rows], feature_names=names, ax=ax)
            if title:  # a class name from the data, drawn as it is (never as mathtext)
                ax.set_title(plain_text(title), fontsize=10)

        figures[file] = (_figure(draw_beeswarm), caption)
    if base is not None:
        end = float(base[0] + values[0].sum())
        if abs(end - f_x[0]) <= EFFICIENCY_TOLERANCE * max(1.0, abs(f_x[0])):
            ends = f"to f(x) = {f_x[0]:.4g}, the model's own output ({UNIT_NAMES.get(units, units)})"
        else:
            ends = (f"to base + sum = {end:.6g}, while the model's own output is f(x) = {f_x[0]:.6g} "
                    f"({UNIT_NAMES.get(units, units)}): a gap of {abs(end - f_x[0]):.3g}, efficiency does not hold")

        def draw_waterfall(ax):
            plots.waterfall(values[0], base_value=base[0], data_row=data[0] if first_row is None else first_row,
                            feature_names=names, ax=ax)
            ax.set_xlabel(plain_text(f"{class_label(targets[0], classes)} (output {targets[0]}), "
                                     f"{UNIT_NAMES.get(units, units)}"), fontsize=8)

        figures["waterfall.png"] = (_figure(draw_waterfall),
                                    f"row 0: from the base value {base[0]:.4g} {ends} "
                                    f"({class_label(targets[0], classes)}, output {targets[0]})")

    mean_abs = np.abs(values).mean(axis=0)
    order = np.argsort(-mean_abs, kind="stable")[:TOP]
    page = HTMLReport(f"featurelens explain: {method}",
                      f"{description}; data {os.path.basename(args.data)}; {len(values)} of {n_data} rows")
    settings = [("model", description), ("data", args.data), ("method", method), ("rows explained", len(values)),
                ("target", target_text(args.target, targets, classes)),
                ("output units", UNIT_NAMES.get(units, units)), ("seed", args.seed)]
    if "n_background" in e.params:
        settings.append(("background rows", e.params["n_background"]))
    if gap is not None:
        settings.append(("efficiency", efficiency_text(gap, units)))
        settings.append(("row 0", f"base {base[0]:.6g} + sum of values {values[0].sum():.6g} = "
                                  f"{base[0] + values[0].sum():.6g}; f(x) = {f_x[0]:.6g}"))
    page.add_definitions(settings)
    page.add_heading("Top features")
    page.add_table([["rank", "feature", "mean |value|", "mean value"]],
                   [[str(r + 1), names[i], f"{mean_abs[i]:.4g}", f"{values[:, i].mean():.4g}"]
                    for r, i in enumerate(order)])
    page.add_heading("Figures")
    for file, (png, caption) in figures.items():
        page.add_image(png, alt=file, caption=caption)
    page.add_heading("Files")
    links = [values_file, "explanation.npz"] + list(figures)
    page.add_html("<ul>" + "".join(f'<li><a href="{html.escape(f)}">{html.escape(f)}</a></li>' for f in links)
                  + "</ul>")

    with report_folder(args.out, "explain", args.overwrite) as tmp:
        if values_file == "values.csv":
            # a header cell such as "=HYPERLINK(...)" (a column name from the user's data) must be
            # shown as text by a spreadsheet, never run as a formula: the same escaping as select's,
            # which also quotes a leading quote, so that "=a" and "'=a" stay distinct (reversible)
            table.to_csv(os.path.join(tmp, values_file), index=False,
                         header=[csv_text_cell(c) for c in table.columns])
        else:
            table.to_parquet(os.path.join(tmp, values_file), index=False, engine=parquet_engine())
        e.save(os.path.join(tmp, "explanation.npz"))
        for file, (png, _) in figures.items():
            with open(os.path.join(tmp, file), "wb") as f:
                f.write(png)
        page.save(os.path.join(tmp, "index.html"))
