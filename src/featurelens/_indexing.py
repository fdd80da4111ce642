"""How an :class:`~featurelens.Explanation` is indexed (``e[rows]``, ``e[rows, features]``): row
keys (an int, a slice, a list or array of ints, a boolean mask) and feature keys (positions, or
names of ``feature_names``), each checked with an error naming the key and what was expected; and
the fields of the explanation a key picks (:func:`row_fields`, :func:`feature_fields`,
:func:`batch_fields`: keyword arguments of ``Explanation``, which ``Explanation.__getitem__``
builds)."""

from __future__ import annotations

import difflib

import numpy as np

__all__ = ["is_position", "positions", "row_index", "feature_position", "feature_index", "row_fields",
           "input_ndim", "feature_fields", "batch_fields"]


def is_position(key) -> bool:
    return isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_))


def positions(key, size: int, what: str) -> np.ndarray:
    """An int array of positions in ``range(size)`` from a list/array of ints (negative ones count
    from the end) or a boolean mask of ``size`` entries; IndexError otherwise."""
    try:
        arr = np.asarray(key.detach().cpu().numpy() if hasattr(key, "detach") else key)
    except Exception:  # ragged lists and other exotic keys
        arr = np.asarray(None)
    if arr.dtype == bool:
        if arr.shape != (size,):
            raise IndexError(f"a boolean mask over the {what}s must have {size} entries (one per {what}); got shape "
                             f"{arr.shape}")
        return np.flatnonzero(arr)
    if arr.ndim == 1 and arr.size == 0:
        return np.zeros(0, dtype=np.intp)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise IndexError(f"{what}s are picked by an int position, a slice, a list of positions or a boolean mask; "
                         f"got {key!r}")
    bad = arr[(arr < -size) | (arr >= size)]
    if bad.size:
        raise IndexError(f"{what} position {int(bad[0])} is out of range for {size} {what}s (valid: {-size} to "
                         f"{size - 1})")
    return arr % size


def row_index(key, n: int):
    """``(rows, one_row)``: a slice or an int array of rows, and whether ``key`` named one row."""
    if is_position(key):
        i = int(key)
        if not -n <= i < n:
            raise IndexError(f"row {i} is out of range for an explanation of {n} rows (valid: {-n} to {n - 1})")
        return np.array([i % n]), True
    if isinstance(key, slice):
        return key, False
    if key is Ellipsis:
        return slice(None), False
    if isinstance(key, (str, np.str_)):
        raise IndexError(f"rows are picked by position (e[0], e[2:5], e[[0, 3]], e[mask]); got {key!r}. Features "
                         f"by name go second: e[:, {key!r}]")
    return positions(key, n, "row"), False


def feature_position(name: str, names) -> int:
    if names is None:
        raise KeyError(f"feature {name!r}: this explanation has no feature_names; pick features by position, "
                       f"e.g. e[:, 3]")
    if name not in names:
        close = difflib.get_close_matches(name, names, n=2)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise KeyError(f"feature {name!r} is not one of this explanation's {len(names)} feature_names{hint}")
    return names.index(name)


def feature_index(key, d: int, names):
    """The features ``key`` names: an int (one feature, its axis dropped), a slice or an int array."""
    if isinstance(key, (str, np.str_)):
        return feature_position(str(key), names)
    if is_position(key):
        j = int(key)
        if not -d <= j < d:
            raise IndexError(f"feature position {j} is out of range for {d} features (valid: {-d} to {d - 1})")
        return j % d
    if isinstance(key, slice):
        return key
    items = list(key) if isinstance(key, (list, tuple)) else None
    if items is None and isinstance(key, np.ndarray) and key.dtype.kind == "U":
        items = key.tolist()
    if items is not None and any(isinstance(k, (str, np.str_)) for k in items):
        if not all(isinstance(k, (str, np.str_)) for k in items):
            raise IndexError(f"pick features by names or by positions, not both; got {key!r}")
        cols = np.array([feature_position(str(k), names) for k in items], dtype=np.intp)
    else:
        cols = positions(key, d, "feature")
    if len(set(cols.tolist())) != len(cols):
        raise IndexError(f"a feature selection must name each feature once (feature_names are distinct); got {key!r}")
    return cols


# --------------------------------------------------------------------------------------------------
# the fields of the explanation an index picks (keyword arguments of Explanation)


def row_fields(e, rows, per_row: frozenset) -> dict:
    """The fields of the batch of the rows ``rows`` (a slice or an int array) of the explanation
    ``e``: every per-row field sliced (``extra`` arrays named in ``per_row``), the provenance kept."""
    def cut(a):
        return None if a is None else a[rows]

    return dict(
        values=e.values[rows], method=e.method, params=dict(e.params), target=cut(e.target),
        model_calls=e.model_calls, seconds=e.seconds,
        extra={k: (v[rows] if k in per_row else v) for k, v in e.extra.items()},
        feature_names=None if e.feature_names is None else list(e.feature_names), data=cut(e.data),
        base_values=cut(e.base_values), output=e.output, group_values=cut(e.group_values),
        groups=None if e.groups is None else list(e.groups),
    )


def input_ndim(e) -> int:
    """The number of axes of one input of the explanation ``e``: 1 for tabular rows, 3 for
    (c, h, w) images, 0 after a single feature was picked."""
    if e.data is not None:
        return e.data.ndim - 1
    several = (e.base_values is not None and e.base_values.ndim == 2) or (
        e.target is not None and e.target.ndim == 2)
    return e.values.ndim - (2 if several else 1)


def feature_fields(e, key) -> dict:
    """The fields of the features ``key`` of the tabular batch ``e``: the last axis of ``values``
    and ``data``; ``groups`` and ``group_values`` dropped (they describe all the features)."""
    ndim = input_ndim(e)
    if ndim != 1:
        held = "a single feature" if ndim == 0 else f"inputs of shape {e.values.shape[-ndim:]}"
        raise IndexError(f"a feature index needs tabular values (one input of shape (d,)); this explanation holds "
                         f"{held}. Index its rows only, e.g. e[0] or e[mask]")
    cols = feature_index(key, e.values.shape[-1], e.feature_names)
    picked = np.atleast_1d(np.arange(e.values.shape[-1])[cols])
    names = None if e.feature_names is None else [e.feature_names[j] for j in picked]
    return dict(
        values=e.values[..., cols], method=e.method, params=e.params, target=e.target,
        model_calls=e.model_calls, seconds=e.seconds, extra=e.extra, feature_names=names,
        data=None if e.data is None else e.data[..., cols], base_values=e.base_values,
        output=e.output,
    )


def batch_fields(row, row_extras: frozenset) -> dict:
    """The fields of the batch of one row ``row`` (``e[i]``, whose fields lost their row axis):
    every per-row field (``extra`` arrays named in ``row_extras``) given its row axis back."""
    def up(a):
        return None if a is None else np.asarray(a)[None]

    return dict(
        values=up(row.values), method=row.method, params=dict(row.params), target=up(row.target),
        model_calls=row.model_calls, seconds=row.seconds,
        extra={k: (up(v) if k in row_extras else v) for k, v in row.extra.items()},
        feature_names=row.feature_names, data=up(row.data), base_values=up(row.base_values),
        output=row.output, group_values=up(row.group_values), groups=row.groups,
    )
