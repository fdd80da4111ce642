"""Input handling shared by the tabular plots (:mod:`featurelens.plots.tabular`,
:mod:`featurelens.plots.local`, :mod:`featurelens.plots.feature_dependence`): attributions and feature
values as float arrays, feature names, the ranking by mean absolute value with its grouped "Sum of N
other features" entry, the Axes, colours and colour bars. Private; the conventions these helpers
implement are stated in :mod:`featurelens.plots.tabular`.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_numpy, check_floating, check_int, check_option

POS_COLOUR = "#ff0051"  # pushes the output up (shap's red)
NEG_COLOUR = "#008bfb"  # pushes the output down (shap's blue)
OTHER_COLOUR = "#9a9a9a"
MISSING_COLOUR = (0.6, 0.6, 0.6, 1.0)


def is_frame(x) -> bool:
    return hasattr(x, "columns") and hasattr(x, "iloc") and hasattr(x, "to_numpy")


def is_series(x) -> bool:
    return getattr(x, "ndim", None) == 1 and hasattr(x, "index") and hasattr(x, "iloc") and hasattr(x, "to_numpy")


def frame_to_float(frame, name: str) -> np.ndarray:
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


def float_array(a, name: str, *, allow_nan: bool) -> np.ndarray:
    if is_frame(a):
        arr = frame_to_float(a, name)
    elif is_series(a):
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


def check_values(values, name: str = "values", *, allow_row: bool = True) -> np.ndarray:
    """Attribution values as a float64 (n, d) array."""
    if values is None:
        raise TypeError(f"{name} must be an (n, d) array of attributions or an Explanation; got None")
    v = float_array(values, name, allow_nan=False)
    if v.ndim == 1 and allow_row:
        v = v[None, :]
    if v.ndim == 3 and not isinstance(values, np.ndarray) and hasattr(values, "method"):
        raise ValueError(
            f"{name} is an Explanation with {v.shape[1]} targets per sample, values of shape {v.shape}; plot "
            f"one target's values, e.g. {name}.values[:, 0] with feature_names={name}.feature_names"
        )
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


def check_row(values_row, name: str) -> np.ndarray:
    """One row of attributions (d,): a 1-d array or a 2-d array with a single row."""
    v = check_values(values_row, name)
    if v.shape[0] != 1:
        raise ValueError(
            f"{name} must be one row of attributions, shape (d,) or (1, d); got shape {v.shape}. "
            f"Pass a single row, e.g. {name}[i]"
        )
    return v[0]


def check_data(data, shape: tuple, name: str) -> np.ndarray:
    """Feature values shaped like the attributions (NaN allowed)."""
    x = float_array(data, name, allow_nan=True)
    if len(shape) == 1 and x.ndim == 2 and x.shape[0] == 1:
        x = x[0]
    if x.shape != tuple(shape):
        raise ValueError(f"{name} must have the shape of the attributions {tuple(shape)}; got shape {x.shape}")
    return x


def attached(values, attr: str):
    """An attribute an Explanation may carry (``data``, ``feature_names``, ``base_values``)."""
    if isinstance(values, np.ndarray):
        return None
    out = getattr(values, attr, None)
    return None if callable(out) else out


def resolve_feature_names(feature_names, d: int, *sources) -> list[str]:
    if feature_names is None:
        for s in sources:
            if s is None:
                continue
            if is_frame(s):
                feature_names = list(s.columns)
                break
            if is_series(s):
                feature_names = list(s.index)
                break
            fn = attached(s, "feature_names")
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


def check_max_display(max_display) -> int:
    return check_int(max_display, "max_display", low=1)


def axes_for(ax, size):
    from matplotlib.axes import Axes

    if ax is None:
        import matplotlib.pyplot as plt  # headless machines fall back to Agg on their own

        _, ax = plt.subplots(figsize=size)
        return ax
    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None; got {type(ax).__name__}")
    return ax


def rank_features(mean_abs: np.ndarray, max_display: int):
    """Features by decreasing importance (ties by index); the shown ones and the grouped rest."""
    order = np.argsort(-mean_abs, kind="stable")
    if len(order) <= max_display:
        return order, order[:0]
    return order[: max_display - 1], order[max_display - 1 :]


def other_label(k: int) -> str:
    return f"Sum of {k} other features"


def format_value(x: float) -> str:
    if not np.isfinite(x):
        return "nan"
    return f"{x:.4g}"


def axis_span(lo: float, hi: float) -> float:
    """The width of an axis range; a visible width when every value is the same."""
    return hi - lo if hi > lo else max(abs(lo), 1.0) * 0.1


def feature_index(feature, names: list[str], name: str) -> int:
    d = len(names)
    if isinstance(feature, str):
        return names.index(check_option(feature, name, names))
    if isinstance(feature, (int, np.integer)) and not isinstance(feature, (bool, np.bool_)):
        return check_int(feature, name, low=0, high=d - 1)
    raise TypeError(f"{name} must be a feature name or an index in [0, {d - 1}]; got {feature!r}")


def value_colours(x: np.ndarray, cmap) -> np.ndarray:
    """RGBA colours for feature values: scaled between their 5th and 95th percentiles (so that an
    outlier does not wash out the rest), NaN grey."""
    out = np.tile(np.array(MISSING_COLOUR), (len(x), 1))
    ok = np.isfinite(x)
    if ok.any():
        lo, hi = np.percentile(x[ok], [5, 95])
        if hi <= lo:
            lo, hi = float(x[ok].min()), float(x[ok].max())
        t = np.full(ok.sum(), 0.5) if hi <= lo else np.clip((x[ok] - lo) / (hi - lo), 0.0, 1.0)
        out[ok] = cmap(t)
    return out


def add_colorbar(ax, cmap, label: str, low_high: bool = True):
    import matplotlib as mpl

    sm = mpl.cm.ScalarMappable(cmap=cmap, norm=mpl.colors.Normalize(0, 1))
    sm.set_array([])
    cb = ax.figure.colorbar(sm, ax=ax, ticks=[0, 1] if low_high else None, aspect=40, pad=0.02)
    if low_high:
        cb.ax.set_yticklabels(["Low", "High"])
    cb.set_label(label)
    cb.outline.set_visible(False)
    return cb


def resolve_cmap(cmap):
    import matplotlib as mpl

    if isinstance(cmap, str):
        try:
            return mpl.colormaps[cmap]
        except KeyError:
            raise ValueError(f"cmap must be a matplotlib colormap name; got {cmap!r}") from None
    if isinstance(cmap, mpl.colors.Colormap):
        return cmap
    raise TypeError(f"cmap must be a matplotlib colormap or its name; got {type(cmap).__name__}")
