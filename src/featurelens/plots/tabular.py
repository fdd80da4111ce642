"""Plots of tabular attributions a SHAP user recognises: bar, beeswarm, waterfall, force,
dependence, heatmap, and the interaction heatmap and network.

This module draws the summary plots ``bar``, ``beeswarm`` and ``heatmap``; the local plots of one
row (``waterfall``, ``force``) live in :mod:`featurelens.plots.local` and the dependence and
interaction plots (``interaction_scores``, ``dependence``, ``interaction_heatmap``,
``interaction_network``) in :mod:`featurelens.plots.feature_dependence`. All of them are importable from
here too.

The designs follow the plots of the ``shap`` package (the summary, waterfall, force and dependence
plots of Lundberg & Lee 2017, "A Unified Approach to Interpreting Model Predictions", NeurIPS,
arXiv 1705.07874; and Lundberg et al. 2020, "From local explanations to global understanding with
explainable AI for trees", Nature Machine Intelligence, arXiv 1905.04610, which introduced the
beeswarm/summary, dependence with an interaction colour, and interaction plots). The code is written
here, on matplotlib only; nothing is taken from shap.

Conventions shared by every function of the three modules:

* ``values`` is a numpy array (or torch tensor, or anything with ``.values`` such as an
  :class:`~featurelens.Explanation`) of shape ``(n, d)``: one attribution per row and feature.
  Several outputs ``(n, d, k)`` are refused: pick one output first (``values[..., k]``).
* Feature names come from ``feature_names``; else from the columns of a pandas DataFrame ``data``
  (or the index of a pandas Series ``data_row``); else from an explanation's ``feature_names``;
  else ``"feature 0" .. "feature d-1"``.
* Features are ranked by mean absolute value over the rows (``|value|`` for one row). With more
  than ``max_display`` features, the top ``max_display - 1`` are shown and the rest are summed into
  one last entry ("Sum of N other features"), as in shap: ``max_display`` is the number of entries.
* Each function draws into ``ax`` (a new figure when None), returns that Axes and never calls
  ``plt.show``. Bad input raises a TypeError/ValueError naming the argument.
* Names are drawn as they are, never as mathtext: a feature named ``$x^$`` is drawn ``$x^$``
  (``featurelens.plots._text.plain_text``; the Axes' ``Text.get_text()`` holds each ``$``
  escaped as ``\\$``).
* Attribution values must be finite. Feature values (``data``, ``data_row``) may hold NaN (a
  missing value, which tree models accept): such points are drawn grey. The one row of
  ``waterfall`` and ``force`` may also hold categories (strings), shown as they are: pass
  ``model.decode(e.data).iloc[i]`` for a pipeline with categorical columns.
"""

from __future__ import annotations

import numpy as np

from .._random import numpy_rng
from .._validation import as_numpy, check_option
from ._text import plain_text, plain_texts
from ._tabular_inputs import (
    OTHER_COLOUR,
    POS_COLOUR,
    attached,
    axes_for,
    resolve_cmap,
    add_colorbar,
    value_colours,
    check_data,
    resolve_feature_names,
    format_value,
    check_max_display,
    other_label,
    rank_features,
    check_values,
)

__all__ = [
    "bar",
    "beeswarm",
    "heatmap",
]

_HCLUST_LIMIT = 5000


# --------------------------------------------------------------------------------------------------
# summary plots


def bar(values, feature_names=None, max_display: int = 10, ax=None):
    """Mean absolute attribution per feature, largest at the top (shap's bar plot).

    ``values`` ``(n, d)`` (or one row ``(d,)``). Bar ``i`` is ``mean_r |values[r, i]|``; with more
    than ``max_display`` features the top ``max_display - 1`` get a bar each and the last bar,
    "Sum of N other features", is the sum of the remaining features' means.
    Returns the Axes.
    """
    v = check_values(values)
    max_display = check_max_display(max_display)
    d = v.shape[1]
    names = resolve_feature_names(feature_names, d, values)
    mean_abs = np.abs(v).mean(axis=0)
    shown, rest = rank_features(mean_abs, max_display)
    heights = [float(mean_abs[i]) for i in shown]
    labels = [names[i] for i in shown]
    colours = [POS_COLOUR] * len(shown)
    if len(rest):
        heights.append(float(mean_abs[rest].sum()))
        labels.append(other_label(len(rest)))
        colours.append(OTHER_COLOUR)
    ax = axes_for(ax, (6.5, 0.45 * len(heights) + 1.3))
    y = np.arange(len(heights))
    ax.barh(y, heights, height=0.7, color=colours)
    ax.set_yticks(y, plain_texts(labels))
    ax.set_ylim(len(heights) - 0.5, -0.5)  # the first (largest) bar on top
    top = max(heights) or 1.0
    for yi, h in zip(y, heights):
        ax.text(h + 0.01 * top, yi, f"+{format_value(h)}", va="center", fontsize=8, color=POS_COLOUR if h else OTHER_COLOUR)
    ax.set_xlim(0, top * 1.15)
    ax.set_xlabel("mean(|attribution|)")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


def _swarm_offsets(x: np.ndarray, n_bins: int = 100) -> np.ndarray:
    """Vertical offsets in [-1, 1] that spread points by density: the values are cut into
    ``n_bins`` equal-width bins and the points of a bin stack alternately above and below the
    centre line (0, +1, -1, +2, ...), so a row is as thick as its data are dense. Deterministic."""
    n = len(x)
    lo, hi = float(x.min()), float(x.max())
    if hi > lo:
        bins = np.minimum(((x - lo) / (hi - lo) * n_bins).astype(np.int64), n_bins - 1)
    else:
        bins = np.zeros(n, dtype=np.int64)
    tie = numpy_rng(0).permutation(n)  # a fixed shuffle within each bin
    idx = np.lexsort((tie, bins))
    sb = bins[idx]
    starts = np.r_[0, np.nonzero(np.diff(sb))[0] + 1]
    run_start = np.repeat(starts, np.diff(np.r_[starts, n]))
    rank = np.arange(n) - run_start
    off = np.empty(n)
    off[idx] = ((rank + 1) // 2) * np.where(rank % 2 == 1, 1.0, -1.0)
    top = np.abs(off).max()
    return off / (top + 1.0) if top > 0 else off


def beeswarm(values, data=None, feature_names=None, max_display: int = 10, ax=None, cmap="coolwarm"):
    """One row of points per feature, ordered by mean |attribution| (largest at the top): each
    point is one row's attribution, stacked vertically where the points are dense, and coloured by
    the feature's value (low to high, with a colour bar) when ``data`` is given (shap's beeswarm /
    summary plot). With more than ``max_display`` features the last row is the per-row sum of the
    remaining features (grey). ``data`` ``(n, d)``, numpy or a DataFrame (whose columns name the
    features); an Explanation's ``data`` is used when ``data`` is None. Returns the Axes.
    """
    v = check_values(values, allow_row=False)
    max_display = check_max_display(max_display)
    n, d = v.shape
    if data is None:
        data = attached(values, "data")
    x = None if data is None else check_data(data, (n, d), "data")
    names = resolve_feature_names(feature_names, d, data, values)
    cm = resolve_cmap(cmap)
    shown, rest = rank_features(np.abs(v).mean(axis=0), max_display)
    rows = [(names[i], v[:, i], None if x is None else x[:, i]) for i in shown]
    if len(rest):
        rows.append((other_label(len(rest)), v[:, rest].sum(axis=1), None))
    k = len(rows)
    ax = axes_for(ax, (7.0, 0.5 * k + 1.5))
    ax.axvline(0.0, color="#999999", lw=0.8, zorder=0)
    for r, (label, vals, xs) in enumerate(rows):
        yc = k - 1 - r
        ax.axhline(yc, color="#cccccc", lw=0.5, ls=":", zorder=0)
        if xs is not None:
            colour = value_colours(xs, cm)
        else:  # no data: one colour; the grouped rest grey
            colour = "#1e88e5" if r < len(shown) else OTHER_COLOUR
        ax.scatter(vals, yc + 0.4 * _swarm_offsets(vals), s=12, c=colour, linewidths=0, alpha=0.9,
                   zorder=2, rasterized=n > 500, label=plain_text(label))
    ax.set_yticks([k - 1 - r for r in range(k)], plain_texts(row[0] for row in rows))
    ax.set_ylim(-0.6, k - 0.4)
    ax.set_xlabel("attribution (impact on model output)")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="y", length=0)
    if x is not None:
        add_colorbar(ax, cm, "Feature value")
    return ax


def heatmap(values, feature_names=None, max_display: int = 10, order="hclust", ax=None, cmap="RdBu_r"):
    """Rows x features heatmap of the attributions (shap's heatmap plot).

    The image has one line per feature (ordered by mean |attribution|, largest at the top; with more
    than ``max_display`` features the last line is the per-row sum of the rest) and one column per
    row of ``values``, so ``image = values[row_order][:, shown].T``. ``order``: ``"hclust"`` orders
    the rows by the leaves of an average-linkage hierarchical clustering of their full attribution
    vectors (Euclidean, optimal leaf ordering, scipy), so rows explained alike sit together;
    None keeps the given order; or a permutation of ``range(n)``. The colour scale is symmetric
    around 0. Returns the Axes.
    """
    v = check_values(values, allow_row=False)
    max_display = check_max_display(max_display)
    n, d = v.shape
    names = resolve_feature_names(feature_names, d, values)
    if isinstance(order, str):
        order = check_option(order, "order", ("hclust",))
        if n > _HCLUST_LIMIT:
            raise ValueError(
                f"order='hclust' clusters at most {_HCLUST_LIMIT} rows; got {n}. Pass order=None, "
                "a permutation of the rows, or a sample of the rows"
            )
        if n > 2:
            from scipy.cluster.hierarchy import leaves_list, linkage, optimal_leaf_ordering

            z = linkage(v, method="average", metric="euclidean")
            row_order = leaves_list(optimal_leaf_ordering(z, v))
        else:
            row_order = np.arange(n)
    elif order is None:
        row_order = np.arange(n)
    else:
        row_order = as_numpy(order, "order")
        if row_order.dtype.kind not in "iu" or row_order.shape != (n,) or not np.array_equal(
            np.sort(row_order), np.arange(n)
        ):
            raise ValueError(f"order must be 'hclust', None or a permutation of range({n}); got {order!r}")
    shown, rest = rank_features(np.abs(v).mean(axis=0), max_display)
    cols = [v[:, i] for i in shown]
    labels = [names[i] for i in shown]
    if len(rest):
        cols.append(v[:, rest].sum(axis=1))
        labels.append(other_label(len(rest)))
    image = np.column_stack(cols)[row_order].T
    k = len(labels)
    ax = axes_for(ax, (8.0, 0.4 * k + 1.6))
    top = float(np.abs(image).max()) or 1.0
    im = ax.imshow(image, aspect="auto", cmap=resolve_cmap(cmap), vmin=-top, vmax=top, interpolation="nearest")
    ax.set_yticks(np.arange(k), plain_texts(labels))
    ax.set_xlabel("rows" + (" (clustered)" if isinstance(order, str) else ""))
    cb = ax.figure.colorbar(im, ax=ax, aspect=40, pad=0.02)
    cb.set_label("attribution")
    cb.outline.set_visible(False)
    return ax
