"""Matplotlib figures for explanations. Imported lazily, so that importing featurelens never pulls
in a plotting backend."""

from __future__ import annotations

import numpy as np

from .._validation import as_numpy, check_int
from ._text import plain_text, plain_texts


def subplot_grid(ncols: int, nrows: int = 1, size: float = 2.2):
    """A pyplot figure of ``nrows x ncols`` square panels ``size`` inches wide: ``(fig, axes)``,
    ``axes`` always 2-D."""
    import matplotlib.pyplot as plt  # headless machines fall back to Agg on their own

    fig, axes = plt.subplots(nrows, ncols, figsize=(size * ncols, size * nrows), squeeze=False)
    return fig, axes


def image_map(values: np.ndarray) -> np.ndarray:
    """Reduce an attribution batch to (n, h, w) maps: channels summed for (n, c, h, w); for volumes
    (n, c, d, h, w) channels summed and the middle depth slice shown."""
    v = np.asarray(values)
    if v.ndim == 5:
        return v.sum(axis=1)[:, v.shape[2] // 2]
    if v.ndim == 4:
        return v.sum(axis=1)
    if v.ndim == 3:
        return v
    raise ValueError(f"expected image-like values (n, h, w), (n, c, h, w) or (n, c, d, h, w); got shape {v.shape}")


def show_map(ax, m: np.ndarray, cmap: str = "RdBu_r", title: str | None = None):
    """One heatmap with a symmetric colour scale for signed maps, [0, max] for non-negative ones."""
    top = float(np.abs(m).max()) or 1.0
    lo = -top if (m < 0).any() else 0.0
    ax.imshow(m, cmap=cmap if lo < 0 else "magma", vmin=lo, vmax=top, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(plain_text(title), fontsize=8)


def plot_explanation(explanation, index=None, inputs=None, cmap="RdBu_r", ax=None, max_samples=8):
    """Figure of an explanation: heatmaps for image-like values, a bar chart for tabular rows (its
    bars labelled by the explanation's ``feature_names`` when it has them). A single row
    (``e[i]``) is drawn as the batch of that one row."""
    if getattr(explanation, "_row_extras", None) is not None:
        explanation = explanation._as_batch()
    values = np.asarray(explanation.values)
    max_samples = check_int(max_samples, "max_samples", low=1)
    if values.ndim == 2:
        i = check_int(0 if index is None else index, "index", low=0, high=len(values) - 1)
        if ax is None:
            fig, axes = subplot_grid(1, size=4.0)
            ax = axes[0, 0]
        fig = ax.figure
        row = values[i]
        ax.bar(np.arange(row.size), row, color=np.where(row >= 0, "#c0392b", "#2e86c1"))
        names = getattr(explanation, "feature_names", None)
        if names is not None and len(names) == row.size:
            long = row.size > 8 or max(len(str(name)) for name in names) > 6
            ax.set_xticks(np.arange(row.size), plain_texts(names), rotation=90 if long else 0, fontsize=8)
        ax.set_xlabel("feature")
        ax.set_ylabel("attribution")
        ax.set_title(plain_text(f"{explanation.method}, sample {i}"), fontsize=9)
        return fig
    maps = image_map(values)
    if index is None:
        picks = np.arange(min(len(maps), max_samples))
    else:
        picks = [check_int(i, "index", low=0, high=len(maps) - 1) for i in np.atleast_1d(index).tolist()]
    rows = 2 if inputs is not None else 1
    fig, axes = subplot_grid(len(picks), rows)
    for col, i in enumerate(picks):
        show_map(axes[-1, col], maps[i], cmap, f"{explanation.method} #{i}")
        if inputs is not None:
            x = image_map(as_numpy(inputs, "inputs"))[i]
            axes[0, col].imshow(x, cmap="gray", interpolation="nearest")
            axes[0, col].set_xticks([])
            axes[0, col].set_yticks([])
            axes[0, col].set_title(f"input #{i}", fontsize=8)
    fig.tight_layout()
    return fig
