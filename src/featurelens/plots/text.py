"""The words of a text coloured by their attribution (``fl.plots.text``)."""

from __future__ import annotations

import numpy as np

from .._validation import check_int

__all__ = ["text"]

_POS = (1.0, 0.0, 0.318)  # shap's red: pushes the output up
_NEG = (0.0, 0.545, 0.984)  # shap's blue: pushes the output down


def _values_of(explanation_or_values) -> np.ndarray:
    obj = explanation_or_values
    if hasattr(obj, "values") and hasattr(obj, "method") and not isinstance(obj, np.ndarray):
        obj = obj.values  # an Explanation
    elif hasattr(obj, "to") and hasattr(obj, "index") and hasattr(obj, "terms"):
        obj = obj.to("shapley").dense(order=1)  # Interactions: their Shapley values
    if hasattr(obj, "detach"):
        obj = obj.detach().cpu().numpy()
    v = np.asarray(obj, dtype=np.float64)
    if v.ndim == 2 and v.shape[0] == 1:
        v = v[0]
    if v.ndim != 1:
        raise ValueError(f"explanation_or_values must hold one value per player, shape (n,) or (1, n); got shape {v.shape}")
    if not bool(np.isfinite(v).all()):
        raise ValueError("explanation_or_values holds NaN or inf; expected finite values")
    return v


def text(explanation_or_values, players_or_names, ax=None, max_chars: int = 80):
    """Draw the players' text (words, tokens or sentences) left to right, wrapped at ``max_chars``
    characters a line, each on a background coloured by its value: red for positive, blue for
    negative, the opacity proportional to ``|value| / max |value|``.

    ``explanation_or_values``: an :class:`featurelens.Explanation` (one row), an
    :class:`featurelens.Interactions` (its Shapley values), or an array ``(n,)`` / ``(1, n)``.
    ``players_or_names``: a :class:`featurelens.text.Players` (its ``pieces`` are drawn) or a list
    of ``n`` str. Returns the Axes (its ``texts`` are the words, in order); never calls ``plt.show``.
    """
    values = _values_of(explanation_or_values)
    pieces = getattr(players_or_names, "pieces", players_or_names)
    if isinstance(pieces, str) or not hasattr(pieces, "__len__"):
        raise TypeError(f"players_or_names must be a Players or a list of str; got {type(players_or_names).__name__}")
    pieces = [str(p) for p in pieces]
    if len(pieces) != values.shape[0]:
        raise ValueError(f"players_or_names has {len(pieces)} names but there are {values.shape[0]} values")
    max_chars = check_int(max_chars, "max_chars", low=10)
    # Lay out in character cells (monospace), so the layout needs no renderer.
    lines, col, row = [], 0, 0
    for p in pieces:
        width = len(p)
        if col and col + width > max_chars:
            row, col = row + 1, 0
        lines.append((row, col))
        col += width + 1
    n_rows = row + 1
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(max(4.0, 0.1 * max_chars), 0.35 * n_rows + 0.6))
    else:
        from matplotlib.axes import Axes

        if not isinstance(ax, Axes):
            raise TypeError(f"ax must be a matplotlib Axes or None; got {type(ax).__name__}")
    scale = float(np.abs(values).max()) or 1.0
    for p, v, (r, c) in zip(pieces, values, lines):
        colour = _POS if v > 0 else _NEG
        alpha = 0.85 * abs(v) / scale
        ax.text(c, r, p, family="monospace", fontsize=10, va="center", ha="left",
                bbox=dict(boxstyle="round,pad=0.15", facecolor=(*colour, alpha), edgecolor="none"))
    ax.set_xlim(-1, max_chars + 1)
    ax.set_ylim(n_rows - 0.5, -0.5)
    ax.set_axis_off()
    return ax
