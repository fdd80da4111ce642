"""Plots of tabular attributions a SHAP user recognises: bar, beeswarm, waterfall, force,
dependence, heatmap, and the interaction heatmap and network.

The designs follow the plots of the ``shap`` package (the summary, waterfall, force and dependence
plots of Lundberg & Lee 2017, "A Unified Approach to Interpreting Model Predictions", NeurIPS; and
Lundberg et al. 2020, "From local explanations to global understanding with explainable AI for
trees", Nature Machine Intelligence, which introduced the beeswarm/summary, dependence with an
interaction colour, and interaction plots). The code is written here, on matplotlib only; nothing
is taken from shap.

Conventions shared by every function:

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
* Attribution values must be finite. Feature values (``data``, ``data_row``) may hold NaN (a
  missing value, which tree models accept): such points are drawn grey. The one row of
  ``waterfall`` and ``force`` may also hold categories (strings), shown as they are: pass
  ``model.decode(e.data).iloc[i]`` for a pipeline with categorical columns.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_numpy, check_float, check_floating, check_int, check_option

__all__ = [
    "bar",
    "beeswarm",
    "waterfall",
    "force",
    "dependence",
    "interaction_scores",
    "heatmap",
    "interaction_heatmap",
    "interaction_network",
]

_POS = "#ff0051"  # pushes the output up (shap's red)
_NEG = "#008bfb"  # pushes the output down (shap's blue)
_OTHER = "#9a9a9a"
_MISSING = (0.6, 0.6, 0.6, 1.0)
_HCLUST_LIMIT = 5000


# --------------------------------------------------------------------------------------------------
# input handling


def _is_frame(x) -> bool:
    return hasattr(x, "columns") and hasattr(x, "iloc") and hasattr(x, "to_numpy")


def _is_series(x) -> bool:
    return getattr(x, "ndim", None) == 1 and hasattr(x, "index") and hasattr(x, "iloc") and hasattr(x, "to_numpy")


def _frame_to_float(frame, name: str) -> np.ndarray:
    """A DataFrame's columns as float64: numbers and bools as they are, categoricals by their codes
    (missing -> NaN); any other column is refused, naming it."""
    cols = []
    for col in frame.columns:
        s = frame[col]
        dtype = s.dtype
        if str(dtype) == "category":
            codes = s.cat.codes.to_numpy().astype(np.float64)
            codes[codes < 0] = np.nan
            cols.append(codes)
            continue
        try:
            arr = s.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            raise TypeError(
                f"{name} column {col!r} must hold numbers (or be categorical); got dtype {dtype}"
            ) from None
        cols.append(arr)
    if not cols:
        return np.zeros((len(frame), 0))
    return np.column_stack(cols)


def _float_array(a, name: str, *, allow_nan: bool) -> np.ndarray:
    if _is_frame(a):
        arr = _frame_to_float(a, name)
    elif _is_series(a):
        try:
            arr = a.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must hold numbers; got dtype {a.dtype}") from None
    else:
        arr = as_numpy(a, name)
    if arr.dtype.kind in "biu":
        arr = arr.astype(np.float64)
    if arr.dtype.kind != "f":
        raise TypeError(f"{name} must hold numbers; got an array of dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if allow_nan:
        if np.isinf(arr).any():
            raise ValueError(f"{name} contains inf values; expected finite numbers (NaN marks a missing value)")
    else:
        check_floating(arr, name)
    return arr


def _values(values, name: str = "values", *, allow_row: bool = True) -> np.ndarray:
    """Attribution values as a float64 (n, d) array."""
    if values is None:
        raise TypeError(f"{name} must be an (n, d) array of attributions or an Explanation; got None")
    v = _float_array(values, name, allow_nan=False)
    if v.ndim == 1 and allow_row:
        v = v[None, :]
    if v.ndim == 3:
        raise ValueError(
            f"{name} has shape {v.shape}: several outputs per feature; expected (n, d). "
            f"Pick one output first, e.g. {name}[..., 0]"
        )
    if v.ndim != 2:
        raise ValueError(f"{name} must have shape (n, d){' or (d,)' if allow_row else ''}; got shape {v.shape}")
    if v.shape[0] == 0 or v.shape[1] == 0:
        raise ValueError(f"{name} must hold at least one row and one feature; got shape {v.shape}")
    return v


def _row(values_row, name: str) -> np.ndarray:
    """One row of attributions (d,): a 1-d array or a 2-d array with a single row."""
    v = _values(values_row, name)
    if v.shape[0] != 1:
        raise ValueError(
            f"{name} must be one row of attributions, shape (d,) or (1, d); got shape {v.shape}. "
            f"Pass a single row, e.g. {name}[i]"
        )
    return v[0]


def _data(data, shape: tuple, name: str) -> np.ndarray:
    """Feature values shaped like the attributions (NaN allowed)."""
    x = _float_array(data, name, allow_nan=True)
    if len(shape) == 1 and x.ndim == 2 and x.shape[0] == 1:
        x = x[0]
    if x.shape != tuple(shape):
        raise ValueError(f"{name} must have the shape of the attributions {tuple(shape)}; got shape {x.shape}")
    return x


def _attached(values, attr: str):
    """An attribute an Explanation may carry (``data``, ``feature_names``, ``base_values``)."""
    if isinstance(values, np.ndarray):
        return None
    out = getattr(values, attr, None)
    return None if callable(out) else out


def _feature_names(feature_names, d: int, *sources) -> list[str]:
    if feature_names is None:
        for s in sources:
            if s is None:
                continue
            if _is_frame(s):
                feature_names = list(s.columns)
                break
            if _is_series(s):
                feature_names = list(s.index)
                break
            fn = _attached(s, "feature_names")
            if fn is not None:
                feature_names = fn
                break
    if feature_names is None:
        return [f"feature {i}" for i in range(d)]
    if isinstance(feature_names, (str, bytes)) or not hasattr(feature_names, "__iter__"):
        raise TypeError(
            f"feature_names must be a list of {d} names (one per feature); got {feature_names!r}"
        )
    names = [str(n) for n in feature_names]
    if len(names) != d:
        raise ValueError(f"feature_names must hold {d} names (one per feature); got {len(names)}")
    return names


def _max_display(max_display) -> int:
    return check_int(max_display, "max_display", low=1)


def _axes(ax, size):
    from matplotlib.axes import Axes

    if ax is None:
        import matplotlib.pyplot as plt  # headless machines fall back to Agg on their own

        _, ax = plt.subplots(figsize=size)
        return ax
    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None; got {type(ax).__name__}")
    return ax


def _rank(mean_abs: np.ndarray, max_display: int):
    """Features by decreasing importance (ties by index); the shown ones and the grouped rest."""
    order = np.argsort(-mean_abs, kind="stable")
    if len(order) <= max_display:
        return order, order[:0]
    return order[: max_display - 1], order[max_display - 1 :]


def _other_label(k: int) -> str:
    return f"Sum of {k} other features"


def _fmt(x: float) -> str:
    if not np.isfinite(x):
        return "nan"
    return f"{x:.4g}"


def _span(lo: float, hi: float) -> float:
    """The width of an axis range; a visible width when every value is the same."""
    return hi - lo if hi > lo else max(abs(lo), 1.0) * 0.1


def _feature_index(feature, names: list[str], name: str) -> int:
    d = len(names)
    if isinstance(feature, str):
        return names.index(check_option(feature, name, names))
    if isinstance(feature, (int, np.integer)) and not isinstance(feature, (bool, np.bool_)):
        return check_int(feature, name, low=0, high=d - 1)
    raise TypeError(f"{name} must be a feature name or an index in [0, {d - 1}]; got {feature!r}")


def _colours(x: np.ndarray, cmap) -> np.ndarray:
    """RGBA colours for feature values: scaled between their 5th and 95th percentiles (so that an
    outlier does not wash out the rest), NaN grey."""
    out = np.tile(np.array(_MISSING), (len(x), 1))
    ok = np.isfinite(x)
    if ok.any():
        lo, hi = np.percentile(x[ok], [5, 95])
        if hi <= lo:
            lo, hi = float(x[ok].min()), float(x[ok].max())
        t = np.full(ok.sum(), 0.5) if hi <= lo else np.clip((x[ok] - lo) / (hi - lo), 0.0, 1.0)
        out[ok] = cmap(t)
    return out


def _colorbar(ax, cmap, label: str, low_high: bool = True):
    import matplotlib as mpl

    sm = mpl.cm.ScalarMappable(cmap=cmap, norm=mpl.colors.Normalize(0, 1))
    sm.set_array([])
    cb = ax.figure.colorbar(sm, ax=ax, ticks=[0, 1] if low_high else None, aspect=40, pad=0.02)
    if low_high:
        cb.ax.set_yticklabels(["Low", "High"])
    cb.set_label(label)
    cb.outline.set_visible(False)
    return cb


def _cmap(cmap):
    import matplotlib as mpl

    if isinstance(cmap, str):
        try:
            return mpl.colormaps[cmap]
        except KeyError:
            raise ValueError(f"cmap must be a matplotlib colormap name; got {cmap!r}") from None
    if isinstance(cmap, mpl.colors.Colormap):
        return cmap
    raise TypeError(f"cmap must be a matplotlib colormap or its name; got {type(cmap).__name__}")


# --------------------------------------------------------------------------------------------------
# global plots


def bar(values, feature_names=None, max_display: int = 10, ax=None):
    """Mean absolute attribution per feature, largest at the top (shap's bar plot).

    ``values`` ``(n, d)`` (or one row ``(d,)``). Bar ``i`` is ``mean_r |values[r, i]|``; with more
    than ``max_display`` features the top ``max_display - 1`` get a bar each and the last bar,
    "Sum of N other features", is the sum of the remaining features' means.
    Returns the Axes.
    """
    v = _values(values)
    max_display = _max_display(max_display)
    d = v.shape[1]
    names = _feature_names(feature_names, d, values)
    mean_abs = np.abs(v).mean(axis=0)
    shown, rest = _rank(mean_abs, max_display)
    heights = [float(mean_abs[i]) for i in shown]
    labels = [names[i] for i in shown]
    colours = [_POS] * len(shown)
    if len(rest):
        heights.append(float(mean_abs[rest].sum()))
        labels.append(_other_label(len(rest)))
        colours.append(_OTHER)
    ax = _axes(ax, (6.5, 0.45 * len(heights) + 1.3))
    y = np.arange(len(heights))
    ax.barh(y, heights, height=0.7, color=colours)
    ax.set_yticks(y, labels)
    ax.set_ylim(len(heights) - 0.5, -0.5)  # the first (largest) bar on top
    top = max(heights) or 1.0
    for yi, h in zip(y, heights):
        ax.text(h + 0.01 * top, yi, f"+{_fmt(h)}", va="center", fontsize=8, color=_POS if h else _OTHER)
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
    tie = np.random.default_rng(0).permutation(n)  # a fixed shuffle within each bin
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
    v = _values(values, allow_row=False)
    max_display = _max_display(max_display)
    n, d = v.shape
    if data is None:
        data = _attached(values, "data")
    x = None if data is None else _data(data, (n, d), "data")
    names = _feature_names(feature_names, d, data, values)
    cm = _cmap(cmap)
    shown, rest = _rank(np.abs(v).mean(axis=0), max_display)
    rows = [(names[i], v[:, i], None if x is None else x[:, i]) for i in shown]
    if len(rest):
        rows.append((_other_label(len(rest)), v[:, rest].sum(axis=1), None))
    k = len(rows)
    ax = _axes(ax, (7.0, 0.5 * k + 1.5))
    ax.axvline(0.0, color="#999999", lw=0.8, zorder=0)
    for r, (label, vals, xs) in enumerate(rows):
        yc = k - 1 - r
        ax.axhline(yc, color="#cccccc", lw=0.5, ls=":", zorder=0)
        if xs is not None:
            colour = _colours(xs, cm)
        else:  # no data: one colour; the grouped rest grey
            colour = "#1e88e5" if r < len(shown) else _OTHER
        ax.scatter(vals, yc + 0.4 * _swarm_offsets(vals), s=12, c=colour, linewidths=0, alpha=0.9,
                   zorder=2, rasterized=n > 500, label=label)
    ax.set_yticks([k - 1 - r for r in range(k)], [row[0] for row in rows])
    ax.set_ylim(-0.6, k - 0.4)
    ax.set_xlabel("attribution (impact on model output)")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="y", length=0)
    if x is not None:
        _colorbar(ax, cm, "Feature value")
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
    v = _values(values, allow_row=False)
    max_display = _max_display(max_display)
    n, d = v.shape
    names = _feature_names(feature_names, d, values)
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
    shown, rest = _rank(np.abs(v).mean(axis=0), max_display)
    cols = [v[:, i] for i in shown]
    labels = [names[i] for i in shown]
    if len(rest):
        cols.append(v[:, rest].sum(axis=1))
        labels.append(_other_label(len(rest)))
    image = np.column_stack(cols)[row_order].T
    k = len(labels)
    ax = _axes(ax, (8.0, 0.4 * k + 1.6))
    top = float(np.abs(image).max()) or 1.0
    im = ax.imshow(image, aspect="auto", cmap=_cmap(cmap), vmin=-top, vmax=top, interpolation="nearest")
    ax.set_yticks(np.arange(k), labels)
    ax.set_xlabel("rows" + (" (clustered)" if isinstance(order, str) else ""))
    cb = ax.figure.colorbar(im, ax=ax, aspect=40, pad=0.02)
    cb.set_label("attribution")
    cb.outline.set_visible(False)
    return ax


# --------------------------------------------------------------------------------------------------
# local plots (one row)


def _local(values_row, base_value, data_row, feature_names):
    v = _row(values_row, "values_row")
    d = v.size
    if base_value is None:
        base_value = _attached(values_row, "base_values")
        if base_value is None:
            raise TypeError("base_value is required: the expected model output E[f(X)] the values add up from")
        b = np.asarray(base_value, dtype=np.float64).reshape(-1)
        if b.size != 1:
            raise ValueError(f"the explanation holds {b.size} base values; pass base_value for the row you plot")
        base_value = b[0]
    base = check_float(base_value, "base_value")
    if data_row is None:
        data_row = _attached(values_row, "data")
    x = None if data_row is None else _row_texts(data_row, d)
    names = _feature_names(feature_names, d, data_row, values_row)
    return v, base, x, names


def _row_texts(data_row, d: int) -> list[str]:
    """The explained row's feature values as label texts: numbers formatted, and the values of a
    row with categories (a pandas Series or a list holding strings, e.g. ``model.decode(e.data)``'s
    row) shown as they are."""
    if _is_series(data_row) and data_row.dtype.kind not in "biuf":
        items = list(data_row.to_numpy())
    elif isinstance(data_row, (list, tuple)) and any(isinstance(v, (str, bytes)) for v in data_row):
        items = list(data_row)
    elif isinstance(data_row, np.ndarray) and data_row.dtype.kind in "OUS":
        items = list(data_row.reshape(-1))
    else:
        return [_fmt(float(v)) for v in _data(data_row, (d,), "data_row")]
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
                texts.append(_fmt(float(v)))
            except (TypeError, ValueError):
                texts.append(str(v))
    return texts


def _label(names, x, i) -> str:
    return names[i] if x is None else f"{names[i]} = {x[i]}"


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
    max_display = _max_display(max_display)
    shown, rest = _rank(np.abs(v), max_display)
    items = [(_label(names, x, i), float(v[i])) for i in shown]  # top to bottom
    if len(rest):
        items.append((f"{len(rest)} other features", float(v[rest].sum())))
    k = len(items)
    fx = base + float(v.sum())
    ax = _axes(ax, (7.0, 0.5 * k + 1.6))
    start = base
    lefts = []
    for r in range(k - 1, -1, -1):  # accumulate from the bottom bar (y = 0) up
        lefts.append(start)
        start += items[r][1]
    ends = []
    for j, r in enumerate(range(k - 1, -1, -1)):
        label, val = items[r]
        y = j
        ax.barh(y, val, left=lefts[j], height=0.65, color=_POS if val >= 0 else _NEG)
        end = lefts[j] + val
        ends.append(end)
        ax.text(end, y, f" {'+' if val >= 0 else '-'}{_fmt(abs(val))} ",
                va="center", ha="left" if val >= 0 else "right", fontsize=8,
                color=_POS if val >= 0 else _NEG)
        if j + 1 < k:  # connector to the next bar
            ax.plot([end, end], [y + 0.33, y + 0.67], color="#888888", lw=0.6)
    ax.set_yticks(np.arange(k), [items[r][0] for r in range(k - 1, -1, -1)])
    ax.axvline(base, color="#888888", lw=0.8, ls="--", zorder=0)
    ax.axvline(fx, color="#888888", lw=0.8, ls="--", zorder=0)
    lo, hi = min(lefts + ends + [fx, base]), max(lefts + ends + [fx, base])
    span = _span(lo, hi)
    ax.set_xlim(lo - 0.12 * span, hi + 0.12 * span)
    ax.set_ylim(-0.9, k - 0.1)
    ax.text(base, -0.75, f"E[f(X)] = {_fmt(base)}", ha="center", va="center", fontsize=8)
    ax.text(fx, k - 0.3, f"f(x) = {_fmt(fx)}", ha="center", va="center", fontsize=9, fontweight="bold")
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
    max_display = _max_display(max_display)
    fx = base + float(v.sum())
    pos = [i for i in np.argsort(-v, kind="stable") if v[i] > 0]
    neg = [i for i in np.argsort(v, kind="stable") if v[i] < 0]
    total = float(np.abs(v).sum()) or 1.0
    tip = 0.012 * total
    labelled = set(np.argsort(-np.abs(v), kind="stable")[:max_display].tolist()) & set(np.nonzero(v)[0].tolist())
    ax = _axes(ax, (10.0, 2.6))
    h = 0.18
    segs = []
    end = fx
    for i in pos:  # red, right-pointing, stacked leftwards from f(x)
        a, b = end - v[i], end
        segs.append((i, a, b, _POS, 1.0))
        end = a
    start = fx
    for i in neg:  # blue, left-pointing, stacked rightwards from f(x)
        a, b = start, start - v[i]
        segs.append((i, a, b, _NEG, -1.0))
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
    span = _span(lo, hi)
    ax.set_xlim(lo - 0.06 * span, hi + 0.06 * span)
    ax.set_ylim(-1.1, 0.75)
    ax.axvline(fx, ymin=0.5, ymax=0.8, color="#333333", lw=1.0)
    ax.text(fx, 0.5, f"f(x) = {_fmt(fx)}", ha="center", va="bottom", fontsize=10, fontweight="bold")
    ax.plot([base, base], [h + 0.02, 0.38], color="#888888", lw=1.0)
    ax.text(base, 0.38, f"base value = {_fmt(base)}", ha="center", va="bottom", fontsize=8, color="#555555")
    ax.text(0.0, 1.0, "higher", color=_POS, transform=ax.transAxes, fontsize=9, va="top")
    ax.text(0.08, 1.0, "\u21c4", color="#555555", transform=ax.transAxes, fontsize=9, va="top")
    ax.text(0.12, 1.0, "lower", color=_NEG, transform=ax.transAxes, fontsize=9, va="top")
    ax.set_yticks([])
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    return ax


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
    v = _values(values, allow_row=False)
    n, d = v.shape
    x = _data(data, (n, d), "data")
    names = _feature_names(feature_names, d, data, values)
    j = _feature_index(feature, names, "feature")
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
    v = _values(values, allow_row=False)
    n, d = v.shape
    if data is None:
        data = _attached(values, "data")
    if data is None:
        raise TypeError("data is required: the feature values (n, d) the attributions were computed for")
    x = _data(data, (n, d), "data")
    names = _feature_names(feature_names, d, data, values)
    j = _feature_index(feature, names, "feature")
    k = None
    if isinstance(interaction_index, str) and interaction_index == "auto":
        if d > 1:
            scores = interaction_scores(j, v, x)
            scores[j] = -np.inf
            k = int(np.argmax(scores))
    elif interaction_index is not None:
        k = _feature_index(interaction_index, names, "interaction_index")
    cm = _cmap(cmap)
    ax = _axes(ax, (6.0, 4.5))
    colour = "#1e88e5" if k is None else _colours(x[:, k], cm)
    ax.scatter(x[:, j], v[:, j], s=14, c=colour, linewidths=0, alpha=0.9, rasterized=n > 500)
    ax.axhline(0.0, color="#999999", lw=0.6, zorder=0)
    ax.set_xlabel(names[j])
    ax.set_ylabel(f"attribution of {names[j]}")
    if k is not None:
        _colorbar(ax, cm, names[k])
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


# --------------------------------------------------------------------------------------------------
# interactions


def _matrix(matrix) -> np.ndarray:
    if matrix is not None and not isinstance(matrix, np.ndarray) and callable(getattr(matrix, "dense", None)):
        matrix = matrix.dense(order=2)  # an Interactions object
    m = _float_array(matrix, "matrix", allow_nan=False)
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
    names = _feature_names(feature_names, d, matrix)
    ax = _axes(ax, (0.35 * d + 3.0, 0.35 * d + 2.4))
    top = float(np.abs(m).max()) or 1.0
    im = ax.imshow(m, cmap=_cmap(cmap), vmin=-top, vmax=top, interpolation="nearest")
    ax.set_xticks(np.arange(d), names, rotation=90)
    ax.set_yticks(np.arange(d), names)
    cb = ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.03)
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
    names = _feature_names(feature_names, d, matrix)
    threshold = check_float(threshold, "threshold", low=0.0, allow_none=True)
    threshold = 0.0 if threshold is None else threshold
    asym = float(np.abs(m - m.T).max())
    if asym > 1e-9 * max(float(np.abs(m).max()), 1e-300):
        raise ValueError(f"matrix must be symmetric for a network; max |matrix - matrix.T| = {asym:.3g}")
    ax = _axes(ax, (6.5, 6.5))
    angle = np.pi / 2 - 2 * np.pi * np.arange(d) / d
    px, py = np.cos(angle), np.sin(angle)
    iu, ju = np.triu_indices(d, k=1)
    w = m[iu, ju]
    keep = np.abs(w) > threshold
    wmax = float(np.abs(w[keep]).max()) if keep.any() else 1.0
    for i, j, val in zip(iu[keep], ju[keep], w[keep]):
        s = abs(val) / wmax
        ax.plot([px[i], px[j]], [py[i], py[j]], color=_POS if val > 0 else _NEG, lw=0.5 + 5.0 * s,
                alpha=0.25 + 0.65 * s, solid_capstyle="round", zorder=1, gid=f"edge:{i}-{j}")
    diag = np.abs(np.diag(m))
    sizes = 150 + 650 * diag / diag.max() if diag.max() > 0 else np.full(d, 300.0)
    ax.scatter(px, py, s=sizes, color="#f3f3f3", edgecolors="#444444", zorder=2)
    for i in range(d):
        ha = "left" if px[i] > 0.1 else "right" if px[i] < -0.1 else "center"
        ax.text(1.14 * px[i], 1.14 * py[i], names[i], ha=ha, va="center", fontsize=9)
    ax.set_xlim(-1.6, 1.6)
    ax.set_ylim(-1.35, 1.35)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax
