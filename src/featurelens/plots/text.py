"""The words of a text coloured by their attribution (``fl.plots.text``)."""

from __future__ import annotations

import numpy as np

from .._validation import check_int
from ._text import plain_text, plain_texts

__all__ = ["text", "text_interactions"]

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
        hint = ". Pass one row, e.g. fl.plots.text(e[i])" if v.ndim == 2 else ""
        raise ValueError(f"explanation_or_values must hold one value per player, shape (n,) or (1, n); got shape "
                         f"{v.shape}{hint}")
    if not bool(np.isfinite(v).all()):
        raise ValueError("explanation_or_values holds NaN or inf; expected finite values")
    return v


def _names_of(obj):
    """The player names an Explanation (``feature_names``) or an Interactions (``params``'
    ``player_names``, as :func:`featurelens.text.explain` records them) carries, or None."""
    if isinstance(obj, np.ndarray):
        return None
    names = getattr(obj, "feature_names", None)
    if names is None:
        names = (getattr(obj, "params", None) or {}).get("player_names") if hasattr(obj, "terms") else None
    return None if names is None or callable(names) else list(names)


def _pieces_of(players_or_names, n: int, source=None) -> list[str]:
    if players_or_names is None:
        players_or_names = _names_of(source)
        if players_or_names is None:
            raise TypeError("players_or_names is required here: these values carry no player names (an Explanation "
                            "with feature_names, or the Interactions of featurelens.text.explain, carry them); pass "
                            "players_or_names= the Players or a list of str")
    pieces = getattr(players_or_names, "pieces", players_or_names)
    if isinstance(pieces, str) or not hasattr(pieces, "__len__"):
        raise TypeError(f"players_or_names must be a Players or a list of str; got {type(players_or_names).__name__}")
    pieces = [str(p) for p in pieces]
    if len(pieces) != n:
        raise ValueError(f"players_or_names has {len(pieces)} names but there are {n} values")
    return pieces


def _alpha(v: float, scale: float) -> float:
    return 0.85 * abs(v) / scale


def _cmap():
    """The colours of :func:`text` as a colormap on ``[-scale, scale]``: shap's blue to
    transparent to shap's red, with the opacity the word boxes get (``0.85 |v| / scale``), so the
    colour bar reads as the boxes do on a white page."""
    from matplotlib.colors import ListedColormap

    x = np.linspace(-1.0, 1.0, 257)
    return ListedColormap([(*(_POS if t > 0 else _NEG), _alpha(t, 1.0)) for t in x], name="featurelens_text")


def _params_of(obj) -> dict:
    params = getattr(obj, "params", None)
    return dict(params) if isinstance(params, dict) else {}


def _explained(obj) -> tuple[str | None, str]:
    """``(what, units)`` of the values in ``obj``: what is explained (``"class 1"``, ``"continuation
    ' Paris.'"``; None when not recorded) and the units of the output (``"raw output"``,
    ``"probability"``, ``"log-probability"``, ``"log-probability (nats, summed over the
    continuation's tokens)"``), from the ``params`` that :func:`featurelens.text.explain` and
    :func:`featurelens.text.embedding_attributions` record."""
    params = _params_of(obj)
    if params.get("value") == "continuation_log_prob" or "continuation" in params:
        cont = params.get("continuation_text")
        cont = repr(cont) if isinstance(cont, str) else f"token ids {params.get('continuation')}"
        reduce = params.get("reduce", "sum")
        units = ("log-probability (nats, the mean over the continuation's tokens)" if reduce == "mean" else
                 "log-probability (nats, summed over the continuation's tokens)")
        return f"continuation {cont}", units
    target = params.get("target")
    if target is None:
        t = getattr(obj, "target", None)
        if t is not None and np.size(t) == 1:
            target = int(np.asarray(t).reshape(-1)[0])
    output = params.get("output", getattr(obj, "output", "raw") if hasattr(obj, "method") else "raw")
    from ..models._outputs import UNIT_LABELS, UNIT_SPELLINGS  # the one units vocabulary

    units = UNIT_LABELS.get(UNIT_SPELLINGS.get(output, output), "raw output")
    what = None if target is None else f"class {target}"
    if what is not None:
        units = f"{units} of class {target}"
    return what, units


def _method_of(obj) -> str | None:
    method = getattr(obj, "method", None)
    if isinstance(method, str):
        return method
    return _params_of(obj).get("method") if hasattr(obj, "terms") else None


def text(explanation_or_values, players_or_names=None, ax=None, max_chars: int = 80, colorbar: bool = True,
         title=None):
    """Draw the players' text (words, tokens or sentences) left to right, wrapped at ``max_chars``
    characters a line, each on a background coloured by its value: red for positive, blue for
    negative, the opacity proportional to ``|value| / max |value|``.

    ``explanation_or_values``: an :class:`featurelens.Explanation` (one row), an
    ``featurelens.Interactions`` (its Shapley values), or an array ``(n,)`` / ``(1, n)``.
    ``players_or_names``: a :class:`featurelens.text.Players` (its ``pieces`` are drawn) or a list
    of ``n`` str; None (``fl.plots.text(e[i])``) draws the names the explanation carries (its
    ``feature_names``, or an Interactions' ``player_names``: a piece that repeats reads
    ``the#7``; pass the Players to draw the pieces as they are).

    ``colorbar``: True (default) draws the scale under the text, from ``-max |value|`` to
    ``+max |value|``, labelled with the method and the units of the explained output (``raw
    output of class 1``, ``probability``, ``log-probability (nats, summed over the continuation's
    tokens)``, as the explanation records them; plain arrays: ``value``). ``title``: None (default)
    names the method and what is explained, ``"kernel_shap: class 1"`` or ``"spex (Shapley
    values): continuation ' Paris.'"`` (none for a plain array); a str is used as it is; False
    draws none. Every text is drawn literally, never as mathtext (a word or title ``$x^$`` is
    drawn ``$x^$``; ``Text.get_text()`` holds each ``$`` escaped as ``\\$``). Returns the Axes
    (its ``texts`` are the words, in order; the colour bar is the figure's last Axes, its label
    the units); never calls ``plt.show``.
    """
    values = _values_of(explanation_or_values)
    pieces = _pieces_of(players_or_names, values.shape[0], explanation_or_values)
    max_chars = check_int(max_chars, "max_chars", low=10)
    if not isinstance(colorbar, (bool, np.bool_)):
        raise TypeError(f"colorbar must be True or False; got {colorbar!r}")
    if not (title is None or title is False or isinstance(title, str)):
        raise TypeError(f"title must be None, False or a str; got {type(title).__name__}")
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

        extra = (0.6 if colorbar else 0.0) + (0.3 if title is not False else 0.0)
        _, ax = plt.subplots(figsize=(max(4.0, 0.1 * max_chars), 0.35 * n_rows + 0.6 + extra),
                             layout="constrained")
    else:
        from matplotlib.axes import Axes

        if not isinstance(ax, Axes):
            raise TypeError(f"ax must be a matplotlib Axes or None; got {type(ax).__name__}")
    scale = float(np.abs(values).max()) or 1.0
    for p, v, (r, c) in zip(pieces, values, lines):
        colour = _POS if v > 0 else _NEG
        alpha = _alpha(v, scale)
        ax.text(c, r, plain_text(p), family="monospace", fontsize=10, va="center", ha="left",
                bbox=dict(boxstyle="round,pad=0.15", facecolor=(*colour, alpha), edgecolor="none"))
    ax.set_xlim(-1, max_chars + 1)
    ax.set_ylim(n_rows - 0.5, -0.5)
    ax.set_axis_off()
    obj = explanation_or_values
    what, units = _explained(obj) if not isinstance(obj, np.ndarray) else (None, "value")
    method = None if isinstance(obj, np.ndarray) else _method_of(obj)
    interactions = hasattr(obj, "terms") and hasattr(obj, "to")
    if method is not None and interactions:
        method = f"{method} (Shapley values)"
    if title is None and (method is not None or what is not None):
        title = ": ".join(t for t in (method, what) if t)
    if title:
        ax.set_title(plain_text(title), fontsize=9, loc="left")
    if colorbar:
        from matplotlib.cm import ScalarMappable
        from matplotlib.colors import Normalize

        mappable = ScalarMappable(norm=Normalize(-scale, scale), cmap=_cmap())
        cb = ax.figure.colorbar(mappable, ax=ax, orientation="horizontal", fraction=0.25, aspect=40,
                                pad=0.02, shrink=0.6)
        base = None if method is None else method.split(" ")[0]
        label = (units if base is None else
                 f"Shapley value from {base} ({units})" if interactions else f"{base} value ({units})")
        cb.set_label(plain_text(f"{label}; red raises it, blue lowers it"), fontsize=8)
        cb.ax.tick_params(labelsize=7)
    return ax


def text_interactions(interactions, players_or_names=None, k: int = 8, index: str = "mobius", axes=None,
                      max_chars: int = 80, colorbar: bool = True):
    """The interaction view of a SPEX / ProxySPEX result over a text's players: on top the text
    coloured by the players' Shapley values (:func:`text`), below a bar per strongest interaction
    term of two or more players (``k`` of them, largest ``|value|`` first), labelled by its words
    joined with ``\u00d7`` (``"not \u00d7 bad"``) and coloured red (positive) or blue (negative).

    ``interactions``: a ``featurelens.Interactions`` in the ``"fourier"`` or ``"mobius"``
    basis (SPEX's terms, :func:`featurelens.text.explain`). ``index``: the terms shown,
    ``"mobius"`` (default: what the words add together beyond their parts; a pair planted as
    ``+2.0`` reads ``+2.0``), ``"fourier"`` (the raw SPEX coefficients, ``+-1`` features) or an
    interaction index such as ``"fsii"`` / ``"stii"`` (of the result's ``max_order``).
    ``players_or_names``: as in :func:`text`; None takes the ``player_names`` that
    :func:`featurelens.text.explain` records in the result's ``params``.
    ``axes``: two matplotlib Axes (text, terms) or None (a new figure). ``colorbar``: the scale of
    the Shapley values under the text, with their units (:func:`text`); the text's title names the
    class or continuation explained where the result records it. Returns ``(text_ax, terms_ax)``;
    never calls ``plt.show``.
    """
    # Duck-typed (plots sit below the interactions package): what is used is .to, .top, .index,
    # .n_players, .max_order and .params.
    if not all(hasattr(interactions, a) for a in ("to", "top", "index", "n_players", "max_order")):
        raise TypeError(f"interactions must be a featurelens.Interactions (SPEX's result); got {type(interactions).__name__}")
    k = check_int(k, "k", low=1)
    n = interactions.n_players
    pieces = _pieces_of(players_or_names, n, interactions)
    shown = interactions if index == interactions.index else interactions.to(index, max_order=interactions.max_order)
    terms = [(t, v) for t, v in shown.top(max(k * 4, k + n), order=None) if len(t) >= 2][:k]
    if axes is None:
        import matplotlib.pyplot as plt

        rows = max(1, len(terms))
        fig, axes = plt.subplots(2, 1, figsize=(max(5.0, 0.1 * max_chars), 1.4 + 0.35 * rows + 0.6 * colorbar),
                                 gridspec_kw={"height_ratios": [1.0, max(1.0, 0.45 * rows)]},
                                 layout="constrained")
    if len(axes) != 2:
        raise ValueError(f"axes must be two matplotlib Axes (text, terms); got {len(axes)}")
    text_ax, terms_ax = axes
    text(interactions, pieces, ax=text_ax, max_chars=max_chars, colorbar=colorbar, title=False)
    what, _ = _explained(interactions)
    text_ax.set_title(plain_text(f"Shapley values{'' if what is None else ' of ' + what} (red raises the output, "
                                 "blue lowers it)"), fontsize=9, loc="left")
    if not terms:
        terms_ax.text(0.5, 0.5, "no interaction terms of two or more players", ha="center", va="center",
                      transform=terms_ax.transAxes)
        terms_ax.set_axis_off()
        return text_ax, terms_ax
    labels = [" \u00d7 ".join(pieces[i] for i in t) for t, _ in terms][::-1]
    values = np.array([v for _, v in terms][::-1])
    terms_ax.barh(np.arange(len(terms)), values, color=[_POS if v > 0 else _NEG for v in values])
    terms_ax.set_yticks(np.arange(len(terms)), plain_texts(labels), fontsize=9)
    terms_ax.axvline(0.0, color="0.3", linewidth=0.8)
    terms_ax.set_xlabel(plain_text(f"{shown.index} interaction value"))
    terms_ax.set_title(plain_text(f"strongest interactions ({interactions.params.get('method', interactions.index)})"),
                       fontsize=9, loc="left")
    return text_ax, terms_ax
