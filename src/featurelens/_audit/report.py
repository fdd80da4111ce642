"""The audit's report folder: ``index.html`` (the shared :class:`featurelens.report.HTMLReport`),
``results.csv``, ``results.json`` and the figures, built aside and moved into place
(:func:`featurelens.report.report_folder`).

Figures: image and signal inputs get example maps (``maps.png``); tabular inputs ``(n, d)`` get
the plots of :mod:`featurelens.plots` (shap-style summary plots, Lundberg & Lee 2017, arXiv
1705.07874; Lundberg et al. 2020, Nature Machine Intelligence): ``ranking.png``, the methods'
rankings of the features side by side (with a table of their agreement with the method ranked
first), and per method ``<method>_bar.png`` (mean |value| per feature), ``<method>_beeswarm.png``
(every audited row) and ``<method>_waterfall.png`` (the first audited row, where the method has
base values). Every audit has ``curves.png`` (deletion and insertion)."""

from __future__ import annotations

import csv
import math
import os
import re

import numpy as np
from featurelens._optional import torch_version

from .._version import __version__
from ..plots._png import figure_png
from ..plots._text import plain_text
from ..report import Cell, HTMLReport, report_folder, write_json
from .scoring import RANKING_RULE, audit_columns, clean_rows, format_score, is_finite, row_keys

__all__ = ["write_report", "describe_units"]

#: Entries in each tabular bar chart and beeswarm (``max_display`` of :mod:`featurelens.plots`).
TOP = 10
#: The top features compared between each method and the method ranked first.
AGREE_TOP = 5


def _maps_figure(x, masks, explanations, methods) -> bytes:
    """Example maps of image and signal inputs: the first samples, their ground truth and each
    method's map (tabular inputs get :func:`_tabular_section` instead)."""
    from matplotlib.figure import Figure

    from ..plots.maps import show_map

    def to2d(arr):
        arr = np.asarray(arr, dtype=np.float64)
        if arr.ndim == 1:
            return arr[None]
        if arr.ndim == 3:  # (C, H, W): channels summed
            return arr.sum(0)
        if arr.ndim == 4:  # (C, D, H, W): channels summed, middle slice
            return arr.sum(0)[arr.shape[1] // 2]
        return arr

    k = min(3, len(x))
    panels = ["input"] + (["ground truth"] if masks is not None else []) + list(methods)
    fig = Figure(figsize=(1.6 * len(panels), 1.8 * k + 0.4))
    axes = fig.subplots(k, len(panels), squeeze=False)
    for i in range(k):
        for c, title in enumerate(panels):
            ax = axes[i, c]
            ax.set_xticks([])
            ax.set_yticks([])
            if title == "input":
                ax.imshow(to2d(x[i]), cmap="gray", interpolation="nearest")
                ax.set_title(title, fontsize=7)
            elif title == "ground truth":
                ax.imshow(to2d(masks[i].astype(float)), cmap="gray", interpolation="nearest")
                ax.set_title(title, fontsize=7)
            else:
                show_map(ax, to2d(np.asarray(explanations[title].values)[i]), title=title)
                ax.title.set_fontsize(7)
        axes[i, 0].set_ylabel(f"sample {i}", fontsize=7)
    fig.tight_layout()
    return figure_png(fig)


def _curves_figure(curves: dict) -> bytes:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.0, 3.4))
    axes = fig.subplots(1, 2)
    for ax, key, label in ((axes[0], "deletion", "deletion (lower is better)"),
                           (axes[1], "insertion", "insertion (higher is better)")):
        for m, c in curves.items():
            if key in c:
                frac = np.linspace(0.0, 1.0, len(c[key]))
                ax.plot(frac, c[key], label=plain_text(m), lw=1.8 if m != "random" else 1.2,
                        ls="--" if m == "random" else "-")
        ax.set_title(label, fontsize=9)
        ax.set_xlabel(f"fraction of features {'removed' if key == 'deletion' else 'inserted'}, most relevant first", fontsize=8)
        ax.set_ylabel("target output (mean over samples)", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    return figure_png(fig)


# ------------------------------------------------------------------------------------------------
# tabular inputs: the plots of featurelens.plots


def describe_units(model) -> str:
    """How the report names the units of the audited output (and so of the attributions), from a
    :class:`~featurelens.models.Model`'s ``output`` and what its function ``returns``."""
    output = getattr(model, "output", "raw")
    returns = getattr(model, "returns", "logits")
    if output == "probability" or (output == "raw" and returns == "probability"):
        return "probability of the explained class"
    if output == "log_odds":
        return "log-odds of the explained class"
    return {
        "log_probability": "log-probability of the explained class",
        "margin": "the model's decision-function score",
        "regression": "the model's prediction (its own units)",
    }.get(returns, "the model's raw output (logits or scores)")


def _file_stem(method: str) -> str:
    """A file-name-safe form of a method name (registry names already are)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(method)) or "method"


def _mean_abs(values: np.ndarray) -> np.ndarray:
    return np.abs(values).mean(axis=0)


def _top_names(values: np.ndarray, names: list[str], k: int) -> list[str]:
    return [names[i] for i in np.argsort(-_mean_abs(values), kind="stable")[:k]]


def _tabular_values(explanations: dict, methods, x: np.ndarray, notes: list) -> dict:
    """``{method: (n, d) float64 attributions}`` for the methods whose maps are one value per row and
    feature (a map of another shape is noted and left out)."""
    out = {}
    for m in methods:
        v = np.asarray(explanations[m].values, dtype=np.float64)
        if v.shape != x.shape:
            notes.append(f"{m}: no tabular plots (its values have shape {v.shape}, the audited rows {x.shape})")
            continue
        if not np.isfinite(v).all():
            notes.append(f"{m}: no tabular plots (its values hold NaN or inf)")
            continue
        out[m] = v
    return out


#: Colours of the leading method's top features in the ranking figure (matplotlib's tab10 without
#: its grey, which reads as "not in the top", then further distinct colours).
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
            "#17becf", "#1a237e", "#6d4c41", "#00897b", "#f06292", "#827717", "#4a148c")


def ranking_figure(values: dict, names: list[str], units: str, top: int = TOP):
    """The methods' rankings of the features side by side: one panel per method (in ``values``'
    order, the method ranked first leading), each :func:`featurelens.plots.bar` of its ``top``
    features by mean |value|, largest at the top. A feature among the leading method's top ``top``
    has the same colour in every panel (the others are grey), so agreement reads as the same
    colours in the same places. Returns the matplotlib Figure (not registered with pyplot)."""
    from matplotlib.figure import Figure

    from .. import plots

    methods = list(values)
    d = len(names)
    ncols = min(4, len(methods))
    nrows = -(-len(methods) // ncols)
    k = min(d, top)
    fig = Figure(figsize=(3.6 * ncols + 0.4, nrows * (0.32 * k + 1.5)))
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    lead = _top_names(values[methods[0]], names, k)
    # keyed by the tick labels as drawn: names escaped from mathtext (plain_text)
    colour = {plain_text(n): _PALETTE[i % len(_PALETTE)] for i, n in enumerate(lead)}
    for r, (ax, m) in enumerate(zip(axes, methods)):
        # Only the top k: a "sum of the other features" bar would dwarf them when d is large.
        order = np.argsort(-_mean_abs(values[m]), kind="stable")[:k]
        plots.bar(values[m][:, order], feature_names=[names[i] for i in order], max_display=k, ax=ax)
        labels = [t.get_text() for t in ax.get_yticklabels()]
        for patch, label in zip(ax.patches, labels):
            patch.set_facecolor(colour.get(label, "#c8c8c8"))
        for text in list(ax.texts):  # the numbers are in each method's own bar chart
            text.remove()
        ax.set_xlim(0, ax.get_xlim()[1] / 1.15 * 1.04)
        ax.tick_params(axis="y", labelsize=7)
        ax.tick_params(axis="x", labelsize=6)
        ax.set_xlabel("mean |value|", fontsize=7)
        ax.set_title(plain_text(f"{r + 1}. {m}" + (" (ranked first)" if r == 0 else "")), fontsize=8)
    for ax in axes[len(methods):]:
        ax.set_visible(False)
    fig.suptitle(f"Which features each method finds most important (mean |value| over the audited rows; "
                 f"{units})", fontsize=8)
    fig.tight_layout()
    return fig


def method_figures(method: str, values: np.ndarray, x: np.ndarray, names: list[str], base=None,
                   top: int = TOP) -> dict:
    """One method's tabular figures: ``{"bar": Figure, "beeswarm": Figure}`` and ``"waterfall"``
    (the first audited row) when ``base`` (its base value) is given; each drawn by
    :mod:`featurelens.plots` into a Figure not registered with pyplot."""
    from matplotlib.figure import Figure

    from .. import plots

    k = min(len(names), top)
    figs = {}
    fig = Figure(figsize=(6.5, 0.4 * k + 1.3))
    plots.bar(values, feature_names=names, max_display=top, ax=fig.add_subplot(1, 1, 1))
    fig.axes[0].set_title(plain_text(f"{method}: mean |value| per feature"), fontsize=10)
    figs["bar"] = fig
    fig = Figure(figsize=(7.0, 0.45 * k + 1.5))
    plots.beeswarm(values, data=x, feature_names=names, max_display=top, ax=fig.add_subplot(1, 1, 1))
    fig.axes[0].set_title(plain_text(f"{method}: every audited row"), fontsize=10)
    figs["beeswarm"] = fig
    if base is not None:
        fig = Figure(figsize=(7.0, 0.45 * k + 1.6))
        plots.waterfall(values[0], base_value=float(base), data_row=x[0], feature_names=names, max_display=top,
                        ax=fig.add_subplot(1, 1, 1))
        fig.axes[0].set_title(plain_text(f"{method}: the first audited row"), fontsize=10)
        figs["waterfall"] = fig
    return figs


def _spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def _tabular_section(page, figures: dict, clean, explanations, x, names, units, f_x, rows, baseline,
                     notes: list, importance: dict) -> None:
    """The report's section for tabular inputs (see the module docstring); the PNGs go into
    ``figures`` (file name -> bytes) and each method's mean |value| per feature into
    ``importance``."""
    methods = [r["method"] for r in clean
               if r["status"] == "ok" and r["method"] != "random" and r["method"] in explanations]
    values = _tabular_values(explanations, methods, x, notes)
    if not values:
        return
    n, d = x.shape
    shown_names = list(names) if names is not None else [f"feature {i}" for i in range(d)]
    for m, v in values.items():
        importance[m] = _mean_abs(v).tolist()
    lead = next(iter(values))
    first = "" if rows is None else f" (row {int(rows[0])} of X)"
    page.add_heading("Feature attributions")
    page.add_paragraph(
        f"What each method says about the {n} audited rows, in the audit's ranking order (the random "
        f"map left out). An attribution (\"value\") is how much a feature moves the explained output "
        f"of one row up (positive) or down (negative), in the units of that output: {units}. "
        f"\"mean |value|\" is the average of its size over the rows, whatever the direction: how much "
        f"the feature matters overall."
        + (f" Each method's bar chart and beeswarm show its {TOP - 1} most important features and, "
           f"last, the other {d - TOP + 1} summed." if d > TOP else ""),
        "small",
    )
    try:
        fig = ranking_figure(values, shown_names, units)
        figures["ranking.png"] = figure_png(fig, tight=True)
    except Exception as err:  # a figure that cannot be drawn must not lose the report
        notes.append(f"feature ranking figure failed ({type(err).__name__}: {err})")
    page.add_heading("Do the methods agree on the most important features?", 3)
    if "ranking.png" in figures:
        page.add_image(
            figures["ranking.png"],
            alt=f"the feature rankings of {', '.join(values)} side by side; {lead} ranks "
                f"{', '.join(_top_names(values[lead], shown_names, AGREE_TOP))} highest",
            caption=f"Each panel is one method's ranking of the features: its top {min(d, TOP)} by mean "
                    f"|value|. A feature in "
                    f"{lead}'s top {min(d, TOP)} has the same colour in every panel (others grey): "
                    "methods that agree show the same colours in the same order. Bar lengths are "
                    "comparable within a panel, and across panels only where methods share units.",
        )
    if len(values) > 1:
        k = min(AGREE_TOP, d)
        ref = _mean_abs(values[lead])
        ref_top = set(_top_names(values[lead], shown_names, k))
        body = []
        for m, v in values.items():
            if m == lead:
                continue
            mine = _top_names(v, shown_names, k)
            rho = _spearman(ref, _mean_abs(v))
            body.append([Cell(m, "text"), Cell(f"{len(ref_top & set(mine))} of {k}"),
                         Cell("n/a" if rho is None else f"{rho:.2f}", "na" if rho is None else ""),
                         Cell(", ".join(mine), "text")])
        page.add_table([[Cell("method", "text"), Cell(f"top {k} shared with {lead}"),
                         Cell("rank correlation"), Cell(f"its top {k}", "text")]], body)
        page.add_paragraph(
            f"Top {k} shared: how many of {lead}'s {k} most important features (by mean |value|) are "
            f"also among the method's {k} most important. Rank correlation: Spearman's correlation of "
            "the two methods' mean |value| over all features (1: the same order; 0: unrelated).",
            "small",
        )
    rank = {r["method"]: r["rank"] for r in clean}
    for j, (m, v) in enumerate(values.items()):
        if j == 1:  # the method ranked first in full; the others one click away
            page.add_html(f"<details><summary>The same plots for the other {len(values) - 1} "
                          f"method{'s' if len(values) > 2 else ''}</summary>")
        e = explanations[m]
        base = None
        if e.base_values is not None and np.asarray(e.base_values).size == n:
            base = float(np.asarray(e.base_values, dtype=np.float64).reshape(n)[0])
        try:
            figs = method_figures(m, v, x, shown_names, base)
            pngs = {kind: figure_png(fig, tight=True) for kind, fig in figs.items()}
        except Exception as err:  # a figure that cannot be drawn must not lose the report
            notes.append(f"tabular plots of {m} failed ({type(err).__name__}: {err})")
            continue
        top = ", ".join(_top_names(v, shown_names, 3))
        page.add_heading(f"{m}" + ("" if rank.get(m) is None else f" (rank {rank[m]})"), 3)
        stem = _file_stem(m)
        figures[f"{stem}_bar.png"] = pngs["bar"]
        page.add_image(
            pngs["bar"], alt=f"{m}: mean |value| per feature; largest: {top}",
            caption=f"{m}: the average size of each feature's attribution over the {n} audited rows "
                    f"(mean |value|, in {units}), largest first: how far the feature moves the "
                    "explained output on average, up or down. The number at each bar is its length.",
        )
        figures[f"{stem}_beeswarm.png"] = pngs["beeswarm"]
        page.add_image(
            pngs["beeswarm"], alt=f"{m}: beeswarm of the attributions per feature and row; top: {top}",
            caption=f"{m}: one dot per audited row and feature. Its position is the feature's "
                    f"attribution in that row ({units}; right of 0 raises the explained output, left "
                    "lowers it), its colour the feature's value in that row (blue low, red high). "
                    "Features in the order of the bar chart; dots pile up where many rows agree.",
        )
        if "waterfall" in pngs:
            figures[f"{stem}_waterfall.png"] = pngs["waterfall"]
            end = base + float(v[0].sum())
            actual = ""
            if f_x is not None:
                fx = float(np.asarray(f_x, dtype=np.float64).reshape(-1)[0])
                actual = f" (the model's own output for this row: f(x) = {fx:.4g}, a difference of {abs(end - fx):.1e})"
            page.add_image(
                pngs["waterfall"], alt=f"{m}: waterfall of the first audited row",
                caption=f"{m}, the first audited row{first}: starting from the base value {base:.4g} "
                        f"(the output with the features removed, i.e. set to the baseline: {baseline}), "
                        "each bar adds one feature's attribution (red up, blue down), largest at the "
                        f"top, and the bars end at {end:.4g}{actual}. Labels give the row's feature values.",
            )
        else:
            page.add_paragraph(f"{m} has no base value (the output its attributions add up from), so "
                               "there is no waterfall of one row.", "small")
    if len(values) > 1:
        page.add_html("</details>")


# ------------------------------------------------------------------------------------------------
# the folder


def write_report(out, overwrite, rows, verdict, notes, settings, curves, explanations, x, masks, t, per_sample,
                 total, model, feature_names=None, units=None, f_x=None, rows_in_x=None, columns=None, metrics=None,
                 skipped_metrics=None) -> str:
    """Write the audit's report folder ``out``; returns the path of its ``index.html``.

    For tabular ``x`` ``(n, d)``: ``feature_names`` (None: "feature 0", ...), ``units`` (how the
    explained output is named, :func:`describe_units`), ``f_x`` (the explained output of each audited
    row, for the waterfall's check) and ``rows_in_x`` (each audited row's index in X). ``columns``: the
    table's metric columns (default: the default set's); ``metrics``: ``{metric: one-line reason}`` of
    the metrics run and ``skipped_metrics``: ``{metric: why not}``, listed under the table."""
    with report_folder(out, "audit", overwrite) as tmp:
        _write(tmp, rows, verdict, notes, settings, curves, explanations, x, masks, t, per_sample, total, model,
               feature_names, units, f_x, rows_in_x, columns, metrics, skipped_metrics)
    return os.path.join(os.path.abspath(os.fspath(out)), "index.html")


def _write(out, rows, verdict, notes, settings, curves, explanations, x, masks, t, per_sample, total, model,
           feature_names=None, units=None, f_x=None, rows_in_x=None, columns=None, metrics=None,
           skipped_metrics=None) -> None:
    keys = row_keys(columns)
    clean = clean_rows(rows, keys)
    with open(os.path.join(out, "results.csv"), "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(keys)
        for r in clean:
            writer.writerow(["" if v is None else (f"{v:.6g}" if isinstance(v, float) and math.isfinite(v)
                                                    else "" if isinstance(v, float) else v) for v in r.values()])
    settings_json = {k: v for k, v in settings.items() if k != "explainer_kwargs"}
    settings_json["explainer_params"] = {m: {k: v for k, v in kw.items() if k not in ("data", "groups")}
                                         for m, kw in settings["explainer_kwargs"].items()}
    tabular = x.ndim == 2
    units = units or "the model's output"
    if tabular:
        settings_json["output_units"] = units

    page = HTMLReport(
        "featurelens audit: which explanation to trust",
        f"model {type(model).__name__}, {settings['n_explain']} audited samples of shape "
        f"{tuple(x.shape[1:])}, seed {settings['seed']}; featurelens {__version__}, torch "
        f"{torch_version() or 'not installed'}; {total:.1f} s",
    )
    page.add_heading("Verdict")
    page.add_paragraph(verdict)
    page.add_heading("Ranking")
    page.add_paragraph(RANKING_RULE, "small")
    present = [c for c in audit_columns() if c[0] in keys and any(is_finite(r.get(c[0])) for r in clean)]
    header = [Cell("rank"), Cell("method", "text")] + [
        Cell(label + (" ↑" if d > 0 else " ↓" if d < 0 else "")) for _, label, d in present
    ] + [Cell("seconds")]
    best = {}
    for key, _, d in present:
        vals = [r[key] for r in clean if r["status"] == "ok" and r["method"] != "random" and is_finite(r.get(key))]
        if vals and d:
            best[key] = max(vals) if d > 0 else min(vals)
    body = []
    for r in clean:
        if r["status"] == "n/a":
            continue  # listed with the reason below the table
        row = [Cell("" if r["rank"] is None else str(r["rank"])), Cell(r["method"], "text")]
        for j, (key, _, d) in enumerate(present):
            v = r.get(key)
            if r["status"] != "ok":  # a method that failed: its reason where its scores would be
                row.append(Cell(f"{r['status']}: {r.get('reason') or 'not run'}" if j == 0 else r["status"], "na"))
            elif not is_finite(v):
                row.append(Cell("n/a", "na"))
            else:
                row.append(Cell(format_score(v), "best" if key in best and v == best[key] and r["method"] != "random" else ""))
        row.append(Cell(format_score(r.get("seconds"), 2) if r["status"] == "ok" else "", ""))
        body.append(row)
    page.add_table([header], body)
    page.add_paragraph(
        "↑ higher is better, ↓ lower is better; sparseness (Gini of |a|) and complexity (entropy of "
        "|a|) describe the maps and are not better or worse by themselves. Best value per column "
        "highlighted. Deletion/insertion AUC: the target output averaged over the curve; random. "
        "sim.: Spearman similarity of the maps before and after randomising the model's weights.",
        "small",
    )
    if metrics:
        page.add_heading("What each metric measures", 3)
        page.add_list([f"{m}: {text}" for m, text in metrics.items()])
    if skipped_metrics:
        page.add_heading("Metrics not applicable here", 3)
        page.add_list([f"{m}: {why}" for m, why in skipped_metrics.items()])
    page.add_heading("Why each method ranks where it does")
    page.add_list([f"{r['method']}: {r['reason']}" for r in clean if r["status"] != "n/a"])
    not_run = [f"{r['method']}: {r['reason']}" for r in clean if r["status"] == "n/a"]
    if not_run:
        page.add_heading("Registered explainers not run", 3)
        page.add_list(not_run)
    ok = [r["method"] for r in clean if r["status"] == "ok" and r["method"] in explanations]
    figures = {}
    importance = {}
    if tabular:
        _tabular_section(page, figures, clean, explanations, x, feature_names, units, f_x, rows_in_x,
                         settings_json.get("baseline"), notes, importance)
    elif ok:
        try:
            figures["maps.png"] = _maps_figure(x, masks, explanations, ok)
        except Exception as err:  # a figure that cannot be drawn must not lose the report
            notes.append(f"example maps figure failed ({type(err).__name__}: {err})")
    if any(curves.values()):
        figures["curves.png"] = _curves_figure(curves)
    if "maps.png" in figures:
        page.add_heading("Example maps")
        page.add_paragraph("The first audited samples (rows): the input"
                           + (", the ground truth" if masks is not None else "")
                           + " and each method's map (red positive, blue negative).", "small")
        page.add_image(figures["maps.png"], alt="example maps per method", caption="example maps")
    if "curves.png" in figures:
        page.add_heading("Deletion and insertion curves")
        page.add_paragraph("The target output as features are removed from the input (deletion) "
                           "or inserted into the baseline (insertion) in order of decreasing "
                           "attribution, averaged over the audited samples.", "small")
        page.add_image(figures["curves.png"], alt="deletion and insertion curves", caption="deletion and insertion curves")
    for name, png in figures.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(png)

    doc = {
        "verdict": verdict, "ranking_rule": RANKING_RULE, "table": clean, "per_sample": per_sample,
        "curves": {m: {k: v.tolist() for k, v in c.items()} for m, c in curves.items()},
        "targets": np.asarray(t).tolist(), "settings": settings_json, "notes": notes,
        "metrics": dict(metrics or {}), "skipped_metrics": dict(skipped_metrics or {}),
        "seconds": total, "versions": {"featurelens": __version__, "torch": torch_version()},
        "model": type(model).__name__,
    }
    if tabular:  # the numbers behind the bar charts
        doc["feature_names"] = (list(feature_names) if feature_names is not None
                                else [f"feature {i}" for i in range(x.shape[1])])
        doc["mean_abs_values"] = importance
    write_json(os.path.join(out, "results.json"), doc)

    if notes:
        page.add_heading("Notes")
        page.add_list(notes)
    page.add_heading("Settings")
    page.add_definitions([(k, v) for k, v in settings_json.items() if k != "explainer_params"])
    page.add_paragraph("Files next to this page: results.csv (the table), results.json (table, "
                       "per-sample scores, curves, settings, notes"
                       + (", each method's mean |value| per feature" if tabular else "")
                       + ") and the figures as PNG.", "small")
    page.save(os.path.join(out, "index.html"))
