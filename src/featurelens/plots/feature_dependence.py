"""Dependence and interaction plots: ``dependence`` (shap's dependence / scatter plot, coloured by
the feature chosen by ``interaction_scores``, in the spirit of shap's ``approximate_interactions``),
``interaction_heatmap`` and ``interaction_network`` (a ``(d, d)`` pairwise interaction matrix drawn
as a heatmap or as a network on a circle). The dependence plot with an interaction colour and the
interaction plots are those of Lundberg et al. 2020, "From local explanations to global
understanding with explainable AI for trees", Nature Machine Intelligence, arXiv 1905.04610.

Written on matplotlib only; nothing is taken from shap. The conventions shared by the tabular plots
(inputs, feature names, ``ax``, errors) are stated in :mod:`featurelens.plots.tabular`.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_float, check_int
from ._text import plain_text, plain_texts
from ._tabular_inputs import (
    NEG_COLOUR,
    POS_COLOUR,
    attached,
    axes_for,
    resolve_cmap,
    add_colorbar,
    value_colours,
    check_data,
    feature_index,
    resolve_feature_names,
    float_array,
    check_values,
)

__all__ = ["interaction_scores", "dependence", "interaction_heatmap", "interaction_network"]


# --------------------------------------------------------------------------------------------------
# dependence


def interaction_scores(feature, values, data, feature_names=None, n_bins=None) -> np.ndarray:
    """How strongly the attribution of ``feature`` varies with each other feature (the rule behind
    ``dependence(..., interaction_index="auto")``).

    The rows are sorted by the feature's own value and cut into ``n_bins`` bins of equal count
    (default ``clip(n // 20, 1, 10)``). Within a bin the feature's own value is nearly fixed, so
    what is left of its attribution after removing the bin mean (the residual) is what other
    features drive. The score of feature ``k`` is the pooled absolute within-bin correlation
    ``sum_b |<r_b, s_b>| / sqrt(sum_b |r_b|^2 * sum_b |s_b|^2)``, with ``r_b`` the residual
    attribution and ``s_b`` feature ``k``'s value centred in bin ``b``; it lies in [0, 1] (Cauchy-
    Schwarz), and taking ``|.|`` per bin keeps an interaction whose sign flips with the feature's
    value (``x_j * x_k``). In the spirit of shap's ``approximate_interactions`` (Lundberg et al.
    2020). Rows missing (NaN) either value are left out. Returns ``(d,)`` scores, NaN for the
    feature itself.
    """
    v = check_values(values, allow_row=False)
    n, d = v.shape
    x = check_data(data, (n, d), "data")
    names = resolve_feature_names(feature_names, d, data, values)
    j = feature_index(feature, names, "feature")
    keep = np.nonzero(np.isfinite(x[:, j]))[0]
    idx = keep[np.argsort(x[keep, j], kind="stable")]
    n_bins = check_int(n_bins, "n_bins", low=1, allow_none=True)
    if n_bins is None:
        n_bins = int(np.clip(len(idx) // 20, 1, 10))
    bins = [b for b in np.array_split(idx, min(n_bins, max(len(idx), 1))) if len(b)]
    scores = np.full(d, np.nan)
    for k in range(d):
        if k == j:
            continue
        num = rr = ss = 0.0
        for b in bins:
            xb = x[b, k]
            ok = np.isfinite(xb)
            if ok.sum() < 2:
                continue
            r = v[b, j][ok]
            s = xb[ok]
            r = r - r.mean()
            s = s - s.mean()
            num += abs(float(r @ s))
            rr += float(r @ r)
            ss += float(s @ s)
        scores[k] = num / np.sqrt(rr * ss) if rr > 0 and ss > 0 else 0.0
    return scores


def dependence(feature, values, data=None, feature_names=None, interaction_index="auto", ax=None, cmap="coolwarm"):
    """Scatter of a feature's value (x) against its attribution (y), coloured by a second feature
    (shap's dependence / scatter plot).

    ``feature``: a name or an index. ``interaction_index``: ``"auto"`` colours by the feature with
    the highest :func:`interaction_scores` (the largest absolute within-bin correlation with the
    attribution's residual once the feature's own value is held nearly fixed); None draws one
    colour; a name or an index picks the feature. ``data`` ``(n, d)`` holds the feature values
    (numpy or a DataFrame); an Explanation's ``data`` is used when None. The colour bar is labelled
    with the colouring feature's name. Returns the Axes.
    """
    v = check_values(values, allow_row=False)
    n, d = v.shape
    if data is None:
        data = attached(values, "data")
    if data is None:
        raise TypeError("data is required: the feature values (n, d) the attributions were computed for")
    x = check_data(data, (n, d), "data")
    names = resolve_feature_names(feature_names, d, data, values)
    j = feature_index(feature, names, "feature")
    k = None
    if isinstance(interaction_index, str) and interaction_index == "auto":
        if d > 1:
            scores = interaction_scores(j, v, x)
            scores[j] = -np.inf
            k = int(np.argmax(scores))
    elif interaction_index is not None:
        k = feature_index(interaction_index, names, "interaction_index")
    cm = resolve_cmap(cmap)
    ax = axes_for(ax, (6.0, 4.5))
    colour = "#1e88e5" if k is None else value_colours(x[:, k], cm)
    ax.scatter(x[:, j], v[:, j], s=14, c=colour, linewidths=0, alpha=0.9, rasterized=n > 500)
    ax.axhline(0.0, color="#999999", lw=0.6, zorder=0)
    ax.set_xlabel(plain_text(names[j]))
    ax.set_ylabel(plain_text(f"attribution of {names[j]}"))
    if k is not None:
        add_colorbar(ax, cm, plain_text(names[k]))
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


# --------------------------------------------------------------------------------------------------
# interactions


def _matrix(matrix) -> np.ndarray:
    if matrix is not None and not isinstance(matrix, np.ndarray) and callable(getattr(matrix, "dense", None)):
        matrix = matrix.dense(order=2)  # an Interactions object
    m = float_array(matrix, "matrix", allow_nan=False)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] == 0:
        hint = " (one matrix per row: average first, e.g. np.abs(m).mean(0))" if m.ndim == 3 else ""
        raise ValueError(f"matrix must be a square (d, d) pairwise interaction matrix; got shape {m.shape}{hint}")
    return m


def interaction_heatmap(matrix, feature_names=None, ax=None, cmap="RdBu_r"):
    """A ``(d, d)`` pairwise interaction matrix (for example ``Interactions.dense(order=2)``, or an
    Interactions object itself) as a heatmap with the feature names on both axes and a colour scale
    symmetric around 0. Returns the Axes."""
    m = _matrix(matrix)
    d = m.shape[0]
    names = resolve_feature_names(feature_names, d, matrix)
    ax = axes_for(ax, (0.35 * d + 3.0, 0.35 * d + 2.4))
    top = float(np.abs(m).max()) or 1.0
    # aspect="auto": square cells come from the figure size; an equal-aspect image would shrink
    # after tight_layout() has placed it, which then cuts the labels.
    im = ax.imshow(m, cmap=resolve_cmap(cmap), vmin=-top, vmax=top, interpolation="nearest", aspect="auto")
    ax.set_xticks(np.arange(d), plain_texts(names), rotation=90)
    ax.set_yticks(np.arange(d), plain_texts(names))
    # The colour bar is an inset of the heatmap's own Axes (not space taken from the figure), so
    # plt.tight_layout() sees the two as one box and does not clip the y labels.
    cb = ax.figure.colorbar(im, cax=ax.inset_axes([1.03, 0.0, 0.046, 1.0]))
    cb.set_label("interaction")
    cb.outline.set_visible(False)
    return ax


def interaction_network(matrix, feature_names=None, threshold=None, ax=None):
    """A symmetric ``(d, d)`` pairwise interaction matrix as a network: the features on a circle,
    labelled with their names, and one edge per pair ``i < j`` with ``|matrix[i, j]| > threshold``
    (default 0: every non-zero pair), red for positive and blue for negative interactions, wider
    and darker for larger ones. Node size follows ``|matrix[i, i]|`` when the diagonal is non-zero
    (a main effect placed there). Each edge is a line whose ``gid`` is ``"edge:i-j"``.
    Returns the Axes."""
    m = _matrix(matrix)
    d = m.shape[0]
    names = resolve_feature_names(feature_names, d, matrix)
    threshold = check_float(threshold, "threshold", low=0.0, allow_none=True)
    threshold = 0.0 if threshold is None else threshold
    asym = float(np.abs(m - m.T).max())
    if asym > 1e-9 * max(float(np.abs(m).max()), 1e-300):
        raise ValueError(f"matrix must be symmetric for a network; max |matrix - matrix.T| = {asym:.3g}")
    ax = axes_for(ax, (6.5, 6.5))
    angle = np.pi / 2 - 2 * np.pi * np.arange(d) / d
    px, py = np.cos(angle), np.sin(angle)
    iu, ju = np.triu_indices(d, k=1)
    w = m[iu, ju]
    keep = np.abs(w) > threshold
    wmax = float(np.abs(w[keep]).max()) if keep.any() else 1.0
    for i, j, val in zip(iu[keep], ju[keep], w[keep]):
        s = abs(val) / wmax
        ax.plot([px[i], px[j]], [py[i], py[j]], color=POS_COLOUR if val > 0 else NEG_COLOUR, lw=0.5 + 5.0 * s,
                alpha=0.25 + 0.65 * s, solid_capstyle="round", zorder=1, gid=f"edge:{i}-{j}")
    diag = np.abs(np.diag(m))
    sizes = 150 + 650 * diag / diag.max() if diag.max() > 0 else np.full(d, 300.0)
    ax.scatter(px, py, s=sizes, color="#f3f3f3", edgecolors="#444444", zorder=2)
    for i in range(d):
        ha = "left" if px[i] > 0.1 else "right" if px[i] < -0.1 else "center"
        ax.text(1.14 * px[i], 1.14 * py[i], plain_text(names[i]), ha=ha, va="center", fontsize=9)
    ax.set_xlim(-1.6, 1.6)
    ax.set_ylim(-1.35, 1.35)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax
