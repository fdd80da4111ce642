"""The one result type of every explainer: :class:`Explanation`.

An explanation carries its values and its provenance (method, parameters, targets, model calls,
seconds). It is saved as a single ``.npz`` file holding the arrays and a JSON document with the
provenance; loading never unpickles anything (``allow_pickle=False``) and checks the file
against its schema (:func:`load_explanation`).
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field

import numpy as np

from . import _serialization as _ser
from ._serialization import SavedFileError, to_jsonable
from ._indexing import batch_fields, feature_fields, row_fields, row_index
from ._validation import check_bool, check_float, check_int, check_option

_FORMAT = "featurelens.explanation/1"
#: The units an explanation's output may be in (``Explanation.output``); "margin": a multi-class
#: booster's per-class margins (softmax logits, its decision_function), what tree_shap explains.
OUTPUTS = ("raw", "probability", "log_odds", "margin")


def _names(names, what: str, ints: bool) -> list:
    """``names`` as a list of distinct str (or, with ``ints``, of distinct ints or of distinct str)."""
    if isinstance(names, (str, bytes)) or not hasattr(names, "__iter__"):
        raise TypeError(f"{what} must be a list of names; got {type(names).__name__}")
    out = []
    for name in names:
        if isinstance(name, (np.str_, str)):
            out.append(str(name))
        elif ints and isinstance(name, (int, np.integer)) and not isinstance(name, (bool, np.bool_)):
            out.append(int(name))
        else:
            allowed = "str or int" if ints else "str"
            raise TypeError(f"{what} must hold {allowed} names; got {name!r} ({type(name).__name__})")
    if len({type(n) for n in out}) > 1:
        raise TypeError(f"{what} must be all str or all int; got {out!r}")
    if len(set(out)) != len(out):
        raise ValueError(f"{what} must be distinct; got {out!r}")
    return out


@dataclass
class Explanation:
    """Attribution values with their provenance.

    Attributes
    ----------
    values
        numpy array; for input attributions the same shape as the explained batch ``x``.
    method
        Registered explainer name.
    params
        The explainer's parameters and diagnostics (for example IG's completeness gap).
    target
        The output index explained for each sample (numpy int array) or None.
    model_calls
        Rows sent through the model to produce this explanation.
    seconds
        Wall-clock time of the explanation.
    extra
        Further named arrays a method returns beside ``values`` (for example WAM's wavelet
        coefficient gradients, or MinShap's per-permutation contributions); saved with the
        explanation. ``saliency`` and ``input_x_gradient`` keep ``extra["outputs"]``: the model's
        outputs on the explained rows, (n, n_outputs), from the forward pass their gradient came
        from (so the predictions cost no second pass).
    feature_names
        One name (str) per input element (the columns of a tabular batch), or None. Taken from a
        DataFrame's columns or ``feature_names=`` given to ``explain``.
    data
        The explained rows (numpy, shape ``(n, *input_shape)``), or None.
    base_values
        Per sample (shape ``values.shape[:1]``, or ``(n, k)`` for ``k`` targets per sample): the
        value the attributions add up from: ``v(empty)`` (the expected output over the background,
        or the output at the baseline) for the Shapley explainers and SPEX, ``f(baseline)`` for
        integrated gradients; None where a method has none.
    output
        The units of the explained output: ``"raw"`` (the model's outputs as they are, for example
        logits), ``"probability"`` or ``"log_odds"``.
    group_values
        With ``groups=``: one value per group, shape ``(n, n_groups)`` (``(n, k, n_groups)``);
        ``values`` then holds each group's value at every element of the group (shaped like ``x``,
        so summing ``values`` over a group counts the group's value once per element).
    groups
        With ``groups=``: the group names (str, from ``group_names=``) or labels (int), one per
        column of ``group_values``; else None.
    """

    values: np.ndarray
    method: str
    params: dict = field(default_factory=dict)
    target: np.ndarray | None = None
    model_calls: int = 0
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)
    feature_names: list | None = None
    data: np.ndarray | None = None
    base_values: np.ndarray | None = None
    output: str = "raw"
    group_values: np.ndarray | None = None
    groups: list | None = None

    def __post_init__(self):
        self.values = np.asarray(self.values)
        if self.values.ndim == 0:
            raise ValueError(f"values must have a samples axis, shape (n, ...); got a 0-d array ({self.values!r}): "
                             "pass values[None] for one sample")
        shape = self.values.shape
        self.extra = {str(k): np.asarray(v) for k, v in (self.extra or {}).items()}
        if self.target is not None:
            self.target = np.asarray(self.target)
            if self.target.ndim not in (1, 2) or self.target.shape != shape[: self.target.ndim]:
                raise ValueError(f"target must hold one output index per sample, shape {shape[:1]} (or (n, k) = "
                                 f"{shape[:2]} for k targets per sample), for values of shape {shape}; got shape "
                                 f"{self.target.shape}")
        self.output = check_option(self.output, "output", OUTPUTS)
        if self.base_values is not None:
            base = self.base_values = np.asarray(self.base_values, dtype=np.float64)
            if self.target is not None:
                ok = base.shape == self.target.shape
                want = (f"one value per (sample, target), shape {self.target.shape} like target"
                        if self.target.ndim == 2 else f"one value per sample, shape {shape[:1]} like target")
            else:
                ok = base.ndim in (1, 2) and base.shape == shape[: base.ndim]
                want = f"one value per sample, shape {shape[:1]}" + (
                    f" (or {shape[:2]} for several targets per sample, values (n, k, ...))" if len(shape) >= 2 else "")
            if not ok:
                raise ValueError(f"base_values must hold {want}, for values of shape {shape}; got shape {base.shape}")
        lead = self.target.ndim if self.target is not None else (
            self.base_values.ndim if self.base_values is not None else 1)
        if self.feature_names is not None:
            self.feature_names = _names(self.feature_names, "feature_names", ints=False)
            size = int(np.prod(shape[lead:]))
            if len(self.feature_names) != size:
                per = f"{shape[lead:]}" if len(shape) > lead else "() (a single feature)"
                raise ValueError(f"feature_names must name each of the {size} elements of one input: values of "
                                 f"shape {shape} hold inputs of shape {per}; got {len(self.feature_names)} names")
        if self.data is not None:
            self.data = np.asarray(self.data)
            if self.data.ndim < 1 or self.data.shape[0] != shape[0]:
                raise ValueError(f"data must hold the {shape[0]} explained rows (one per sample of values of shape "
                                 f"{shape}), shape ({shape[0]}, ...); got shape {self.data.shape}")
            if self.feature_names is not None and self.data.shape[1:] != shape[lead:]:
                raise ValueError(f"data must hold the inputs that feature_names name, shape "
                                 f"{(shape[0],) + shape[lead:]} for values of shape {shape}; got shape "
                                 f"{self.data.shape}")
        if (self.group_values is None) != (self.groups is None):
            raise ValueError("give group_values and groups together (one value per group and the group names), or neither")
        if self.groups is not None:
            self.groups = _names(self.groups, "groups", ints=True)
            self.group_values = np.asarray(self.group_values)
            expected = shape[:lead] + (len(self.groups),)
            if self.group_values.shape != expected:
                raise ValueError(f"group_values must hold one value per group and {'(sample, target)' if lead == 2 else 'sample'}, "
                                 f"shape {expected} for values of shape {shape} and {len(self.groups)} groups; got shape "
                                 f"{self.group_values.shape}")

    @property
    def shape(self) -> tuple:
        return self.values.shape

    def __len__(self) -> int:
        return len(self.values)

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(e)`` is ``e.values`` (not an object array of rows, which indexing and
        ``len`` would otherwise make of it)."""
        values = np.asarray(self.values, dtype=dtype)
        return values.copy() if copy else values

    def __repr__(self) -> str:
        return (
            f"Explanation(method={self.method!r}, shape={self.values.shape}, "
            f"model_calls={self.model_calls}, seconds={self.seconds:.3g})"
        )

    # -- indexing (shap's ``sv[0]``, ``sv[:, "age"]``) ----------------------------------------
    #: None on a batch. On a single row (``e[i]``): the names of the ``extra`` arrays that lost
    #: their row axis with it, so that :meth:`_as_batch` can give the row its axis back.
    _row_extras = None

    def __getitem__(self, key) -> "Explanation":
        """Rows and (for tabular explanations) features, indexed as shap's ``Explanation``.

        ``e[i]`` is one row: an Explanation whose ``values`` have the row's shape (``(d,)``, or
        ``(c, h, w)`` for an image), ``base_values`` the row's scalar (``(k,)`` with ``k`` targets
        per sample), ``data`` the row and ``target`` the row's target: what
        ``fl.plots.waterfall(e[i])`` draws. ``e[2:5]``, ``e[[0, 3]]`` and ``e[mask]`` (a boolean
        mask over the rows) are batches. A second index picks features of a tabular explanation
        (one input of shape ``(d,)``): by name (``e[:, "age"]``, ``e[:, ["age", "bmi"]]``; needs
        ``feature_names``), by position (``e[:, 3]``, ``e[:, [0, 3]]``, ``e[:, 1:4]``) or by a
        boolean mask over the features. One name or position drops the feature axis (``values``
        ``(n,)``, ``feature_names`` that one name), as in shap; ``e[0, "age"]`` is one value. A
        single row takes a feature index alone: ``e[0]["age"]`` is ``e[0, "age"]``.

        Every per-row field is sliced alike: ``values``, ``data``, ``target``, ``base_values``,
        ``group_values`` and each ``extra`` array whose first axis has one entry per row (extra
        arrays are sliced by rows only). Picking features drops ``groups`` and ``group_values``
        (they describe all the features). The provenance (``method``, ``params``,
        ``model_calls``, ``seconds``, ``output``) is kept as it is. A single row saves as a batch
        of that one row.

        Raises
        ------
        IndexError
            A row or feature position out of range, a boolean mask of the wrong length, an index
            of the wrong kind, a feature index on non-tabular values, or more than two indices.
        KeyError
            A feature name this explanation does not have, or a name where there are no
            ``feature_names``.
        """
        key = key if isinstance(key, tuple) else (key,)
        if self._row_extras is not None:  # one row: its index picks features
            return self._as_batch()[(0,) + key]
        if len(key) > 2:
            raise IndexError(f"an Explanation takes at most two indices (rows, features); got {len(key)}: {key!r}")
        n = len(self.values)
        rows, one_row = row_index(key[0], n)
        per_row = frozenset(k for k, v in self.extra.items() if v.ndim >= 1 and v.shape[0] == n)
        out = Explanation(**row_fields(self, rows, per_row))
        if len(key) == 2 and not (isinstance(key[1], slice) and key[1] == slice(None)):
            out = Explanation(**feature_fields(out, key[1]))
        return out._single_row(per_row) if one_row else out

    def _single_row(self, per_row: frozenset) -> "Explanation":
        """This one-row batch as the row itself: every per-row field without its row axis."""
        row = copy.copy(self)
        row.values = np.asarray(self.values[0])
        for name in ("target", "data", "base_values", "group_values"):
            if getattr(self, name) is not None:
                setattr(row, name, getattr(self, name)[0])
        row.extra = {k: (v[0] if k in per_row else v) for k, v in self.extra.items()}
        row._row_extras = per_row
        row.__class__ = _Row
        return row

    def _as_batch(self) -> "Explanation":
        """A single row (``e[i]``) as the batch of that one row (``e[[i]]``); a batch as it is."""
        return self if self._row_extras is None else Explanation(**batch_fields(self, self._row_extras))

    # -- bridges ----------------------------------------------------------------------------
    def to_shap(self):
        """This explanation as a ``shap.Explanation(values, base_values, data, feature_names)``,
        for shap's plots and pipelines (needs the optional package ``shap``).

        With groups, shap gets one column per group (``group_values``, names from ``groups``, no
        data). With ``k`` targets per sample, the target axis moves last, shap's layout for
        several outputs: values ``(n, d, k)``, base values ``(n, k)``.
        """
        shap = _optional("shap", "Explanation.to_shap()")
        if self.groups is not None:
            values, data, names = self.group_values, None, [str(g) for g in self.groups]
        else:
            values, data, names = self.values, self.data, self.feature_names
        if self.base_values is not None and self.base_values.ndim == 2:
            values = np.moveaxis(values, 1, -1)
        return shap.Explanation(
            values=np.array(values),
            base_values=None if self.base_values is None else np.array(self.base_values),
            data=None if data is None else np.array(data),
            feature_names=None if names is None else list(names),
        )

    def to_frame(self, data: bool = False, *, target=None, flatten: bool = False):
        """The values as a pandas DataFrame: one row per sample, one column per feature (needs the
        optional package ``pandas``).

        Layout: the index is ``0..n-1`` named ``"sample"``; the columns are the feature names
        (``feature_names``, else the positions ``0..d-1``), then ``"base_value"`` when the
        explanation has base values. With ``groups=`` the columns are the groups (``group_values``).

        ``data=True`` adds the explained rows beside the values under a two-level column index
        ``(kind, feature)``: ``df["value"]`` is the values table, ``df["data"]`` the inputs with
        the same columns, ``df["base_value"]`` the base values (a Series). It needs ``data`` (set
        when ``explain`` was given the rows; groups have no per-group data).

        ``target``: for an explanation of several outputs per sample (values ``(n, k, d)``), the
        output whose values to take: one of the explained output indices (``e.target``), which
        every sample must have explained. Without it such an explanation is refused, as it does not
        fit one table. ``target`` is an int or None: a bool, a float or a class label is a
        TypeError (``target=True`` is not read as output 1). ``flatten=True``: inputs of more than
        one axis (images ``(c, h, w)``) get one column per element, in ``np.ravel`` order, named by
        ``feature_names`` when they name every element, else by the flat position; without it they
        are refused.

        Every indexing result has a table: one feature (``e[:, "age"]``, ``e[0, "age"]``) is one
        column named by the feature; a single row (``e[0]``) a table of one row; no rows
        (``e[[]]``) an empty table with the columns.
        """
        pd = _optional("pandas", "Explanation.to_frame()")
        check_bool(data, "data")
        check_bool(flatten, "flatten")
        if target is not None and (not isinstance(target, (int, np.integer)) or isinstance(target, (bool, np.bool_))):
            raise TypeError(f"to_frame: target must be an int (an output index, one of those in e.target) or None; "
                            f"got {target!r} ({type(target).__name__})"
                            + ("; True is not read as output 1" if isinstance(target, (bool, np.bool_)) else ""))
        target = None if target is None else int(target)
        e = self._as_batch()
        n = len(e.values)
        several = (e.base_values is not None and e.base_values.ndim == 2) or (
            e.target is not None and e.target.ndim == 2)
        values = e.group_values if e.groups is not None else e.values
        base = e.base_values
        if several:
            if target is None:
                held = ("" if e.target is None or e.target.ndim != 2
                        else f" (outputs {sorted(set(np.unique(e.target).tolist()))})")
                raise ValueError(f"to_frame: this explanation holds {values.shape[1]} outputs per sample{held}, "
                                 f"values of shape {values.shape}, which do not fit one table; pass target= one of "
                                 "the explained outputs, e.g. e.to_frame(target=...)")
            values, base = e._pick_target(values, base, target)
        elif target is not None:
            explained = None if e.target is None else np.unique(e.target).tolist()
            if explained is None or explained != [target]:
                raise ValueError(f"to_frame: target={target!r} was given, but this explanation holds one output per "
                                 f"sample (explained targets: {explained}); leave target=None")
        shape = values.shape[1:]
        if e.groups is not None:
            if data:
                raise ValueError("to_frame(data=True): an explanation with groups has one value per group and no "
                                 "data per group; call to_frame() for the group values, or index e.data yourself")
            names = [g for g in e.groups]
        elif len(shape) <= 1:  # (d,) features, or () after one feature was picked (e[:, "age"])
            names = list(e.feature_names) if e.feature_names is not None else list(range(int(np.prod(shape))))
        else:
            if not flatten:
                raise ValueError(f"to_frame: one input has shape {shape} (values of shape {values.shape}), which "
                                 "does not flatten to one column per feature on its own; pass flatten=True for one "
                                 "column per element (np.ravel order), or reduce the values first")
            size = int(np.prod(shape))
            names = (list(e.feature_names) if e.feature_names is not None and len(e.feature_names) == size
                     else list(range(size)))
        table = np.asarray(values).reshape(n, int(np.prod(shape)))  # explicit: n may be 0 (e[[]])
        index = pd.RangeIndex(n, name="sample")
        if not data:
            if base is not None and "base_value" in names:
                raise ValueError("to_frame: a feature is named 'base_value', the column the base values take; "
                                 "call to_frame(data=True), whose columns are (kind, feature) pairs")
            frame = pd.DataFrame(table, index=index, columns=names)
            if base is not None:
                frame["base_value"] = base
            return frame
        if e.data is None:
            raise ValueError("to_frame(data=True) needs the explained rows, and this explanation has data=None "
                             "(explain them again with the rows, or call to_frame() for the values alone)")
        rows = np.asarray(e.data).reshape(n, int(np.prod(e.data.shape[1:])))
        if rows.shape[1] != table.shape[1]:
            raise ValueError(f"to_frame(data=True): the values have {table.shape[1]} elements per sample and the data "
                             f"{rows.shape[1]} (inputs of shape {e.data.shape[1:]}; a layer's attributions are not "
                             "shaped like the inputs), so they share no columns; call to_frame() for the values")
        parts = {"value": pd.DataFrame(table, index=index, columns=names),
                 "data": pd.DataFrame(rows, index=index, columns=names)}
        frame = pd.concat(parts, axis=1, names=["kind", "feature"])
        if base is not None:
            frame[("base_value", "")] = base
        return frame

    def _pick_target(self, values, base, target):
        """The values (n, d...) and base values (n,) of output ``target`` of an explanation of
        several outputs per sample (values (n, k, ...))."""
        if self.target is None or self.target.ndim != 2:
            k = values.shape[1]
            pos = check_int(target, "target", low=0, high=k - 1)
            cols = np.full(len(values), pos)
        else:
            hits = self.target == target
            missing = np.flatnonzero(~hits.any(1))
            if missing.size:
                raise ValueError(f"to_frame: target={target!r} is not among the outputs explained for sample(s) "
                                 f"{missing[:5].tolist()}; explained outputs: "
                                 f"{sorted(set(np.unique(self.target).tolist()))}")
            cols = hits.argmax(1)
        rows = np.arange(len(values))
        return values[rows, cols], None if base is None else base[rows, cols]

    @classmethod
    def from_shap(cls, explanation, method: str = "shap", output: str = "raw") -> "Explanation":
        """An :class:`Explanation` from a ``shap.Explanation`` (values, base values, data and
        feature names are kept; ``method`` names where the values came from).

        Base values of shape ``(n, k)`` mean ``k`` outputs per sample: the values' last axis (shap's
        output axis) moves to axis 1, featurelens's layout for several targets, and ``target`` is
        ``0..k-1`` for each sample. A scalar base value is repeated for each sample.
        """
        values = np.array(getattr(explanation, "values", None))
        if values.dtype.kind not in "biuf" or values.ndim < 1:
            raise TypeError(f"from_shap needs a shap.Explanation with numeric values; got "
                            f"{type(explanation).__name__} with values of dtype {values.dtype}")
        base = getattr(explanation, "base_values", None)
        target = None
        if base is not None:
            base = np.array(base, dtype=np.float64)
            if base.ndim == 0:
                base = np.full(values.shape[:1], float(base))
            if base.ndim == 2:
                values = np.moveaxis(values, -1, 1)
                target = np.tile(np.arange(base.shape[1]), (base.shape[0], 1))
        data = getattr(explanation, "data", None)
        data = None if data is None else np.array(data)
        names = getattr(explanation, "feature_names", None)
        return cls(values=values, method=method, target=target, base_values=base, data=data,
                   feature_names=None if names is None else list(names), output=output)

    # -- persistence ------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> str:
        """Write the explanation to ``path`` (``.npz`` is appended when missing); returns the path.

        The file is written beside ``path`` and moved into place; a folder that does not exist
        raises ``FileNotFoundError`` naming that folder."""
        meta = {
            "format": _FORMAT,
            "method": self.method,
            "params": to_jsonable(self.params),
            "model_calls": int(self.model_calls),
            "seconds": float(self.seconds),
        }
        meta.update({"feature_names": self.feature_names, "output": self.output, "groups": self.groups})
        arrays = {"values": self.values}
        if self.target is not None:
            arrays["target"] = self.target
        for name in ("data", "base_values", "group_values"):
            if getattr(self, name) is not None:
                arrays[name] = getattr(self, name)
        for name, array in self.extra.items():
            arrays[f"extra/{name}"] = array
        return _ser.write_npz(path, arrays, meta)

    # -- plotting ---------------------------------------------------------------------------
    def plot(self, index=None, inputs=None, cmap: str = "RdBu_r", ax=None, max_samples: int = 8):
        """Plot attribution maps; returns the matplotlib Figure.

        Image-like values ``(n, c, h, w)`` or ``(n, h, w)`` are summed over channels and shown as
        heatmaps with a symmetric colour scale (signed maps) next to the inputs when given.
        Tabular values ``(n, d)`` are shown as a bar chart of the first sample (or ``index``).
        """
        from .plots.maps import plot_explanation

        return plot_explanation(self, index=index, inputs=inputs, cmap=cmap, ax=ax, max_samples=max_samples)


class _Row(Explanation):
    """One row of an :class:`Explanation` (``e[i]``): the fields hold the row without its row axis
    (``values`` ``(d,)``, ``base_values`` a scalar). It is indexed, plotted and saved as the batch
    of that one row (``e[[i]]``), so a saved row loads as a batch of one row."""

    def save(self, path: str | os.PathLike) -> str:
        return self._as_batch().save(path)

    def to_shap(self):
        return self._as_batch().to_shap()[0]  # shap's own single row

    def __repr__(self) -> str:
        return (f"Explanation(method={self.method!r}, one row of shape {np.shape(self.values)}, "
                f"model_calls={self.model_calls}, seconds={self.seconds:.3g})")


_KIND = "explanation"
_META_KEYS = ("format", "method", "params", "model_calls", "seconds")
#: Fields added by issue 11; files written before them lack them and still load.
_META_OPTIONAL = ("feature_names", "output", "groups")


def _optional(package: str, what: str):
    import importlib

    try:
        return importlib.import_module(package)
    except ImportError:
        raise ImportError(f"{what} needs the optional package {package!r}, which is not installed; "
                          f"install it with `pip install {package}`") from None


def load_explanation(path: str | os.PathLike, max_bytes: int | None = None) -> Explanation:
    """Read an explanation written by ``Explanation.save``.

    No pickle is ever loaded, and the file is checked against the format: the arrays ``values``
    (numbers), ``meta`` (a JSON object with exactly ``format``, ``method`` (a non-empty string),
    ``params`` (an object), ``model_calls`` (an int >= 0) and ``seconds`` (a number >= 0)),
    optionally ``target`` (ints shaped like the leading axes of ``values``: one per sample, or
    ``(n, k)`` for ``k`` targets per sample) and ``extra/NAME`` (numbers); since issue 11 also the
    optional meta fields ``feature_names`` (null or a list of distinct strings, one per input
    element), ``output`` (one of ``OUTPUTS``) and ``groups`` (null or a list of distinct names,
    all strings or all ints) and the optional arrays ``data`` (numbers, one row per sample),
    ``base_values`` (floats, one per sample or per (sample, target)) and ``group_values`` (numbers,
    ``(n, n_groups)``, present exactly when ``groups`` is); files without them load with the
    defaults (None, ``"raw"``). Anything else (a corrupt
    or truncated archive, an object array, broken JSON, a missing, unknown or mistyped field)
    raises ``featurelens._serialization.SavedFileError``, a ``ValueError`` naming the file,
    the field, what was found and what was expected; a missing file raises ``FileNotFoundError``,
    and a path that is not a regular file (a FIFO, a device such as ``/dev/zero``) a
    ``SavedFileError`` saying what it is, without opening it (reading a FIFO blocks).
    ``values`` must have a samples axis (at least one dimension) and ``feature_names`` one name per
    input element (of ``data``, or of ``values`` less its sample and target axes).

    ``max_bytes``: the most bytes the archive may decompress to (default: the environment
    variable ``FEATURELENS_MAX_NPZ_BYTES``, else 1 GiB); a larger archive is refused from its zip
    directory and ``.npy`` headers, before anything is decompressed.
    """
    path, arrays = _ser.read_npz(path, _KIND, ("values", "meta"), ("target", "data", "base_values", "group_values"),
                                 ("extra/",), max_bytes=max_bytes)
    meta = _ser.read_meta(path, _KIND, arrays.pop("meta"), _FORMAT)
    _ser.check_keys(path, _KIND, meta, _META_KEYS, _META_OPTIONAL)
    method = meta["method"]
    if not isinstance(method, str) or not method:
        raise SavedFileError(path, _KIND, "meta field 'method'",
                             f"found {method!r} ({type(method).__name__}); expected the explainer's name (a non-empty string)")
    if not isinstance(meta["params"], dict):
        raise SavedFileError(path, _KIND, "meta field 'params'",
                             f"found a {type(meta['params']).__name__}; expected a JSON object")
    model_calls = _ser.meta_field(path, _KIND, meta, "model_calls", check_int, low=0)
    seconds = _ser.meta_field(path, _KIND, meta, "seconds", check_float, low=0.0)
    values = _ser.array_field(path, _KIND, arrays, "values", "biuf")
    if values.ndim == 0:
        raise SavedFileError(path, _KIND, "array 'values'",
                             f"found a 0-d array (a single number, {values.item()!r}); expected one row per "
                             "sample, shape (n, ...)")
    target = None
    if "target" in arrays:
        target = _ser.array_field(path, _KIND, arrays, "target", "iu", ndim=(1, 2))
        if values.ndim < target.ndim or target.shape != values.shape[: target.ndim]:
            raise SavedFileError(
                path, _KIND, "array 'target'",
                f"found shape {target.shape} for values of shape {values.shape}; expected one target per "
                f"sample, shape {values.shape[:1]} (or {values.shape[:2]} for several targets per sample)",
            )
    output = _ser.meta_field(path, _KIND, meta, "output", check_option, OUTPUTS) if "output" in meta else "raw"
    feature_names = _ser.names_field(path, _KIND, meta, "feature_names", ints=False)
    groups = _ser.names_field(path, _KIND, meta, "groups", ints=True)
    data = base_values = group_values = None
    if "data" in arrays:
        data = _ser.array_field(path, _KIND, arrays, "data", "biuf")
        if data.ndim < 1 or data.shape[0] != values.shape[0]:
            raise SavedFileError(path, _KIND, "array 'data'",
                                 f"found shape {data.shape} for values of shape {values.shape}; expected one row per sample")
    if feature_names is not None and data is not None and len(feature_names) != int(np.prod(data.shape[1:])):
        raise SavedFileError(path, _KIND, "meta field 'feature_names'",
                             f"found {len(feature_names)} names for inputs of shape {data.shape[1:]}; expected one per element")
    if feature_names is not None:
        lead = 2 if target is not None and target.ndim == 2 else 1  # (n, k, ...) for k targets per sample
        elements = int(np.prod(values.shape[lead:]))
        if len(feature_names) != elements:
            raise SavedFileError(path, _KIND, "meta field 'feature_names'",
                                 f"found {len(feature_names)} names for values of shape {values.shape} "
                                 f"({elements} input element(s) per sample); expected one name per element")
    if "base_values" in arrays:
        base_values = _ser.array_field(path, _KIND, arrays, "base_values", "iuf", ndim=(1, 2))
        if base_values.shape != values.shape[: base_values.ndim]:
            raise SavedFileError(path, _KIND, "array 'base_values'",
                                 f"found shape {base_values.shape} for values of shape {values.shape}; expected one per "
                                 f"sample, shape {values.shape[:1]} (or {values.shape[:2]} for several targets per sample)")
    if ("group_values" in arrays) != (groups is not None):
        field_name = "meta field 'groups'" if "group_values" in arrays else "array 'group_values'"
        raise SavedFileError(path, _KIND, field_name, "found one of 'groups' and 'group_values' without the other; "
                             "expected both (the group names and one value per group) or neither")
    if groups is not None:
        group_values = _ser.array_field(path, _KIND, arrays, "group_values", "biuf")
        if group_values.ndim < 2 or group_values.shape[-1] != len(groups) \
                or group_values.shape[:-1] != values.shape[: group_values.ndim - 1]:
            raise SavedFileError(path, _KIND, "array 'group_values'",
                                 f"found shape {group_values.shape} for values of shape {values.shape} and "
                                 f"{len(groups)} groups; expected (n, n_groups) or (n, k, n_groups)")
    extra = {}
    for key in [k for k in arrays if k.startswith("extra/")]:
        name = key[len("extra/"):]
        if not name:
            raise SavedFileError(path, _KIND, f"array {key!r}", "found an empty name; expected extra/NAME")
        extra[name] = _ser.array_field(path, _KIND, arrays, key, "biuf")
    try:
        return Explanation(
            values=values,
            method=method,
            params=meta["params"],
            target=target,
            model_calls=model_calls,
            seconds=seconds,
            extra=extra,
            feature_names=feature_names,
            data=data,
            base_values=base_values,
            output=output,
            group_values=group_values,
            groups=groups,
        )
    except ValueError as err:  # fields that fit the schema one by one but not together
        raise SavedFileError(path, _KIND, None, str(err)) from None
