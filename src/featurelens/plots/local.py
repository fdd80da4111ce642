"""Local plots of one prediction: ``waterfall`` and ``force``, shap's waterfall and (static) force
plots (Lundberg & Lee 2017, "A Unified Approach to Interpreting Model Predictions", NeurIPS,
arXiv 1705.07874).

Both draw one row of attributions ``(d,)`` as pushes that add up from ``base_value`` (E[f(X)]) to
``f(x) = base_value + sum(values_row)``, labelled ``"name = value"`` when the row's feature values
``data_row`` are given (numbers, or categories shown as they are). Written on matplotlib only;
nothing is taken from shap. The conventions shared by the tabular plots (inputs, feature names,
``max_display``, ``ax``, errors) are stated in :mod:`featurelens.plots.tabular`.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_float
from ._text import plain_text
from ._tabular_inputs import (
    NEG_COLOUR,
    POS_COLOUR,
    attached,
    axes_for,
    check_data,
    resolve_feature_names,
    format_value,
    is_series,
    check_max_display,
    rank_features,
    check_row,
    axis_span,
)

__all__ = ["waterfall", "force"]


def _local(values_row, base_value, data_row, feature_names):
    v = check_row(values_row, "values_row")
    d = v.size
    if base_value is None:
        base_value = attached(values_row, "base_values")
        if base_value is None:
            raise TypeError("base_value is required: the expected model output E[f(X)] the values add up from")
        b = np.asarray(base_value, dtype=np.float64).reshape(-1)
        if b.size != 1:
            raise ValueError(f"the explanation holds {b.size} base values; pass base_value for the row you plot")
        base_value = b[0]
    base = check_float(base_value, "base_value")
    if data_row is None:
        data_row = attached(values_row, "data")
    x = None if data_row is None else _row_texts(data_row, d)
    names = resolve_feature_names(feature_names, d, data_row, values_row)
    return v, base, x, names


def _row_texts(data_row, d: int) -> list[str]:
    """The explained row's feature values as label texts: numbers formatted, and the values of a
    row with categories (a pandas Series or a list holding strings, e.g. ``model.decode(e.data)``'s
    row) shown as they are."""
    if is_series(data_row) and data_row.dtype.kind not in "biuf":
        items = list(data_row.to_numpy())
    elif isinstance(data_row, (list, tuple)) and any(isinstance(v, (str, bytes)) for v in data_row):
        items = list(data_row)
    elif isinstance(data_row, np.ndarray) and data_row.dtype.kind in "OUS":
        items = list(data_row.reshape(-1))
    else:
        return [format_value(float(v)) for v in check_data(data_row, (d,), "data_row")]
    if len(items) != d:
        raise ValueError(f"data_row must hold one value per feature ({d}); got {len(items)}")
    texts = []
    for v in items:
        if isinstance(v, (str, bytes)):
            texts.append(v.decode() if isinstance(v, bytes) else v)
        elif v is None:
            texts.append("None")
        else:
            try:
                texts.append(format_value(float(v)))
            except (TypeError, ValueError):
                texts.append(str(v))
    return texts


def _label(names, x, i) -> str:
    """The label of feature ``i``, escaped from mathtext (a name or a category such as ``$x^$``
    is drawn as it is)."""
    return plain_text(names[i] if x is None else f"{names[i]} = {x[i]}")


def waterfall(values_row, base_value=None, data_row=None, feature_names=None, max_display: int = 10, ax=None):
    """How one prediction is built from the expected output (shap's waterfall plot).

    Starts at ``base_value`` (E[f(X)]) at the bottom; each bar moves the running total by one
    feature's attribution (red up, blue down), largest ``|value|`` at the top, so the last bar ends
    at ``f(x) = base_value + sum(values_row)``. With more than ``max_display`` features the
    smallest are grouped into one bar, "N other features", drawn first. Labels read
    ``"name = value"`` when ``data_row`` (the explained row's feature values) is given.
    ``base_value`` may be omitted for an Explanation that carries ``base_values``. Returns the Axes.
    """
    v, base, x, names = _local(values_row, base_value, data_row, feature_names)
    max_display = check_max_display(max_display)
    shown, rest = rank_features(np.abs(v), max_display)
    items = [(_label(names, x, i), float(v[i])) for i in shown]  # top to bottom
    if len(rest):
        items.append((f"{len(rest)} other features", float(v[rest].sum())))
    k = len(items)
    fx = base + float(v.sum())
    ax = axes_for(ax, (7.0, 0.5 * k + 1.6))
    start = base
    lefts = []
    for r in range(k - 1, -1, -1):  # accumulate from the bottom bar (y = 0) up
        lefts.append(start)
        start += items[r][1]
    ends = []
    for j, r in enumerate(range(k - 1, -1, -1)):
        label, val = items[r]
        y = j
        ax.barh(y, val, left=lefts[j], height=0.65, color=POS_COLOUR if val >= 0 else NEG_COLOUR)
        end = lefts[j] + val
        ends.append(end)
        ax.text(end, y, f" {'+' if val >= 0 else '-'}{format_value(abs(val))} ",
                va="center", ha="left" if val >= 0 else "right", fontsize=8,
                color=POS_COLOUR if val >= 0 else NEG_COLOUR)
        if j + 1 < k:  # connector to the next bar
            ax.plot([end, end], [y + 0.33, y + 0.67], color="#888888", lw=0.6)
    ax.set_yticks(np.arange(k), [items[r][0] for r in range(k - 1, -1, -1)])
    ax.axvline(base, color="#888888", lw=0.8, ls="--", zorder=0)
    ax.axvline(fx, color="#888888", lw=0.8, ls="--", zorder=0)
    lo, hi = min(lefts + ends + [fx, base]), max(lefts + ends + [fx, base])
    span = axis_span(lo, hi)
    ax.set_xlim(lo - 0.12 * span, hi + 0.12 * span)
    ax.set_ylim(-0.9, k - 0.1)
    ax.text(base, -0.75, f"E[f(X)] = {format_value(base)}", ha="center", va="center", fontsize=8)
    ax.text(fx, k - 0.3, f"f(x) = {format_value(fx)}", ha="center", va="center", fontsize=9, fontweight="bold")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="y", length=0)
    return ax


def force(values_row, base_value=None, data_row=None, feature_names=None, max_display: int = 10, ax=None):
    """A static force plot of one prediction (shap's force plot, one row).

    On one horizontal axis the features that raise the output (red) push right and end at
    ``f(x) = base_value + sum(values_row)``, the largest nearest f(x), covering
    ``[f(x) - sum(positive), f(x)]``; the features that lower it (blue) push left from the other
    side, covering ``[f(x), f(x) + sum(|negative|)]``. The ``max_display`` largest pushes are
    labelled (``"name = value"`` with ``data_row``). Every push is a patch whose ``gid`` is
    ``"feature:<index>"``. Returns the Axes.
    """
    from matplotlib.patches import Polygon

    v, base, x, names = _local(values_row, base_value, data_row, feature_names)
    max_display = check_max_display(max_display)
    fx = base + float(v.sum())
    pos = [i for i in np.argsort(-v, kind="stable") if v[i] > 0]
    neg = [i for i in np.argsort(v, kind="stable") if v[i] < 0]
    total = float(np.abs(v).sum()) or 1.0
    tip = 0.012 * total
    labelled = set(np.argsort(-np.abs(v), kind="stable")[:max_display].tolist()) & set(np.nonzero(v)[0].tolist())
    ax = axes_for(ax, (10.0, 2.6))
    h = 0.18
    segs = []
    end = fx
    for i in pos:  # red, right-pointing, stacked leftwards from f(x)
        a, b = end - v[i], end
        segs.append((i, a, b, POS_COLOUR, 1.0))
        end = a
    start = fx
    for i in neg:  # blue, left-pointing, stacked rightwards from f(x)
        a, b = start, start - v[i]
        segs.append((i, a, b, NEG_COLOUR, -1.0))
        start = b
    for i, a, b, colour, direction in segs:
        t = min(tip, 0.5 * (b - a))
        if direction > 0:
            pts = [(a, -h), (b - t, -h), (b, 0), (b - t, h), (a, h), (a + t, 0)]
        else:
            pts = [(a + t, -h), (b, -h), (b - t, 0), (b, h), (a + t, h), (a, 0)]
        ax.add_patch(Polygon(pts, closed=True, facecolor=colour, edgecolor="white", lw=1.0, gid=f"feature:{i}"))
        if i in labelled:
            ax.text(0.5 * (a + b), -h - 0.06, _label(names, x, i), rotation=35, ha="right", va="top",
                    fontsize=8, color=colour)
    lo = min(fx - sum(v[i] for i in pos), base, fx)
    hi = max(fx + sum(-v[i] for i in neg), base, fx)
    span = axis_span(lo, hi)
    ax.set_xlim(lo - 0.06 * span, hi + 0.06 * span)
    ax.set_ylim(-1.1, 0.75)
    ax.axvline(fx, ymin=0.5, ymax=0.8, color="#333333", lw=1.0)
    ax.text(fx, 0.5, f"f(x) = {format_value(fx)}", ha="center", va="bottom", fontsize=10, fontweight="bold")
    ax.plot([base, base], [h + 0.02, 0.38], color="#888888", lw=1.0)
    ax.text(base, 0.38, f"base value = {format_value(base)}", ha="center", va="bottom", fontsize=8, color="#555555")
    ax.text(0.0, 1.0, "higher", color=POS_COLOUR, transform=ax.transAxes, fontsize=9, va="top")
    ax.text(0.08, 1.0, "\u21c4", color="#555555", transform=ax.transAxes, fontsize=9, va="top")
    ax.text(0.12, 1.0, "lower", color=NEG_COLOUR, transform=ax.transAxes, fontsize=9, va="top")
    ax.set_yticks([])
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    return ax
