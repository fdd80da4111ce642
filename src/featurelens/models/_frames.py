"""How DataFrames travel through a Model as float64 rows: :func:`encode_frame` checks a frame's
columns against the estimator's and encodes it with the Model's :class:`FrameCodec` (integer dtypes
remembered, non-numeric columns as integer codes of :class:`CategoryCodes`), which decodes the rows
back to their values and dtypes before the estimator is called (:meth:`FrameCodec.to_model_input`).
pandas is imported only when a frame is met.
"""

from __future__ import annotations

import numpy as np

from ._estimators import renamed_columns_match


def is_dataframe(x) -> bool:
    """A pandas DataFrame, recognised without importing pandas."""
    return type(x).__module__.split(".")[0] == "pandas" and hasattr(x, "columns") and hasattr(x, "dtypes")


def column_kind(dtype) -> str:
    """``"numeric"`` (floats, integers, booleans, pandas' nullable numbers), ``"categorical"``
    (object, str, bytes, pandas ``category`` and ``string`` dtypes) or ``"other"`` (datetimes,
    durations, complex numbers, ...) for a DataFrame column's dtype."""
    if type(dtype).__name__ in ("CategoricalDtype", "StringDtype"):
        return "categorical"
    kind = getattr(dtype, "kind", "O")
    if kind in "biuf":
        return "numeric"
    if kind in "OSU":
        return "categorical"
    return "other"


def _missing_kind(value) -> str:
    """Which missing value ``value`` is (each kind is a category of its own, decoded as it was)."""
    if value is None:
        return "None"
    name = type(value).__name__
    if name in ("NAType", "NaTType"):
        return name
    return "NaN"


class CategoryCodes:
    """The values of one non-numeric DataFrame column and their integer codes.

    ``values[k]`` is the value of code ``k``. The list only grows: each frame's values not seen
    before are appended (sorted when they can be compared, else in order of first appearance;
    a pandas ``category`` column first brings its dtype's categories, in the dtype's order, so the
    codes equal pandas' ``cat.codes``), then the missing values (None, NaN, ``pd.NA``, ``NaT``:
    each kind a category of its own). Codes are exact: :meth:`decode` maps them back to the values
    and to the column's dtype (the first frame's; a ``category`` dtype gains the categories that
    later frames bring, so no value is lost).
    """

    def __init__(self, column: str, dtype):
        self.column = column
        self.dtype = dtype
        self.values: list = []
        self._index: dict = {}  # value -> code (non-missing values)
        self._missing: dict = {}  # missing kind -> code
        self._table = None  # object array of values, rebuilt after the list grows
        self._decode_dtype = None

    def __len__(self) -> int:
        return len(self.values)

    def _append(self, value, missing: str | None = None) -> None:
        if missing is None:
            self._index[value] = len(self.values)
        else:
            self._missing[missing] = len(self.values)
        self.values.append(value)
        self._table = None
        self._decode_dtype = None

    def encode(self, series, name: str) -> np.ndarray:
        """The column's codes as float64 (new values extend the list)."""
        import pandas as pd

        dtype = series.dtype
        if isinstance(dtype, pd.CategoricalDtype):
            for value in dtype.categories:
                if value not in self._index:
                    self._append(value)
        values = series.to_numpy(dtype=object)
        missing = np.asarray(pd.isna(values), dtype=bool)
        codes = np.empty(values.shape[0], dtype=np.float64)
        present = ~missing
        if present.any():
            try:
                inverse, uniques = pd.factorize(values[present])
                new = [u for u in uniques if u not in self._index]
            except TypeError as err:  # unhashable values (lists, dicts)
                raise TypeError(
                    f"{name} column {self.column!r} holds values that cannot be used as categories "
                    f"(they must be hashable, like str, int or bool): {err}"
                ) from err
            try:
                new = sorted(new)
            except TypeError:  # values of mixed types: order of first appearance
                pass
            for value in new:
                self._append(value)
            lookup = np.fromiter((self._index[u] for u in uniques), dtype=np.float64, count=len(uniques))
            codes[present] = lookup[inverse]
        for i in np.flatnonzero(missing):
            kind = _missing_kind(values[i])
            if kind not in self._missing:
                self._append(values[i], missing=kind)
            codes[i] = self._missing[kind]
        return codes

    def check_codes(self, codes: np.ndarray) -> np.ndarray:
        """``codes`` as intp indices, or a ValueError naming the column when one is not a code."""
        k = len(self.values)
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(codes) & (codes == np.round(codes)) & (codes >= 0) & (codes < k)
        if not ok.all():
            bad = codes[~ok]
            raise ValueError(
                f"column {self.column!r} is categorical: its values are coded 0..{k - 1} "
                f"(model.categories[{self.column!r}]), and the model was given {float(bad[0])!r} there "
                f"({bad.size} value(s) that are not codes). Methods that move inputs continuously "
                "(noise as in smoothgrad or the sensitivity and infidelity metrics, gradient or "
                "interpolation paths, a mean baseline, k-means background centres) need numeric "
                "columns; explain this model with a method that fills features from background rows "
                "(kernel_shap, permutation_shap or exact_shapley with background=), "
                "or encode the column first and explain the estimator on the encoded columns"
            )
        return codes.astype(np.intp)

    def decode(self, codes: np.ndarray):
        """The values of ``codes`` (float64) in the column's dtype, as a pandas Series."""
        import pandas as pd

        index = self.check_codes(codes)
        if self._table is None:
            table = np.empty(len(self.values), dtype=object)
            table[:] = self.values  # element by element: tuples stay tuples
            self._table = table
        values = self._table[index]
        dtype = self.dtype
        if isinstance(dtype, pd.CategoricalDtype):
            if self._decode_dtype is None:
                known = set(dtype.categories)
                extra = [v for v in self._index if v not in known]
                self._decode_dtype = (
                    dtype if not extra else pd.CategoricalDtype(list(dtype.categories) + extra, ordered=dtype.ordered)
                )
            return pd.Series(pd.Categorical(values, dtype=self._decode_dtype), copy=False)
        if isinstance(dtype, np.dtype) or dtype is None:
            return pd.Series(values, dtype=object, copy=False)
        try:
            return pd.Series(pd.array(values, dtype=dtype), copy=False)
        except (TypeError, ValueError):  # values a string dtype cannot hold (another frame's ints)
            return pd.Series(values, dtype=object, copy=False)


class FrameCodec:
    """How a Model turns DataFrames into float64 arrays and back (one per Model, shared by the
    Models derived from it, so ``x``, the background and later calls share the codes).

    Numeric columns become float64 (integer dtypes are remembered, so integer columns reach the
    estimator as integers again); non-numeric columns become the codes of a
    :class:`CategoryCodes` per column. :meth:`to_model_input` rebuilds what the estimator is
    called with from an array of such rows.
    """

    def __init__(self):
        self.column_dtypes: dict = {}  # numeric column -> numpy dtype it is given back in
        self.categories: dict = {}  # categorical column -> CategoryCodes
        self.columns: tuple | None = None  # the columns of the last frame seen

    def encode(self, frame, columns: list, kinds: dict, name: str) -> np.ndarray:
        """``frame`` (columns already checked: numeric or categorical) as a float64 array."""
        for c in columns:
            if kinds[c] == "numeric" and c in self.categories:
                raise ValueError(
                    f"{name} column {c!r} has dtype {frame.dtypes[c]}, but it was categorical "
                    f"(dtype {self.categories[c].dtype}) in an earlier input of this model, whose "
                    "codes it would be read as; give x and the background the same column dtypes"
                )
            if kinds[c] == "categorical" and c in self.column_dtypes:
                raise ValueError(
                    f"{name} column {c!r} has dtype {frame.dtypes[c]}, but it was numeric (dtype "
                    f"{self.column_dtypes[c]}) in an earlier input of this model; give x and the "
                    "background the same column dtypes"
                )
        self.columns = tuple(columns)
        numeric = [j for j, c in enumerate(columns) if kinds[c] == "numeric"]
        for j in numeric:
            dt = frame.dtypes.iloc[j]
            # Integer and boolean dtypes, pandas' nullable Int64/boolean too, are given back.
            self.column_dtypes[columns[j]] = dt if getattr(dt, "kind", "f") in "biu" else np.dtype(np.float64)
        if len(numeric) == len(columns):
            return frame.to_numpy(dtype=np.float64, na_value=np.nan)
        arr = np.empty((len(frame), len(columns)), dtype=np.float64)
        if numeric:
            arr[:, numeric] = frame.iloc[:, numeric].to_numpy(dtype=np.float64, na_value=np.nan)
        for j, c in enumerate(columns):
            if kinds[c] == "categorical":
                series = frame.iloc[:, j]
                codes = self.categories.get(c)
                if codes is None:
                    codes = self.categories[c] = CategoryCodes(c, series.dtype)
                arr[:, j] = codes.encode(series, name)
        return arr

    def to_model_input(self, arr: np.ndarray, feature_names):
        """What an estimator is called with for the rows ``arr`` (n, d) float64: the array itself
        (an estimator fitted on an array, no categorical columns), a DataFrame with the fitted
        columns (integer columns as integers when every value in them is whole, categorical columns
        decoded), or an object array (an estimator fitted on an array, given categorical columns)."""
        if feature_names is None and not self.categories:
            return arr
        names = feature_names if feature_names is not None else self.columns
        if names is None:
            raise ValueError(
                f"the input has {arr.shape[1]} values per row, and the model has seen no DataFrame "
                "whose columns would say which of them are categorical"
            )
        if arr.shape[1] != len(names):
            fitted = " (feature_names_in_)" if feature_names is not None else ""
            raise ValueError(
                f"the model was fitted on {len(names)} columns{fitted}, but the input has "
                f"{arr.shape[1]} values per row"
            )
        if feature_names is None:  # categorical columns for an estimator fitted on an array
            out = arr.astype(object)
            for j, c in enumerate(names):
                if c in self.categories:
                    out[:, j] = self.categories[c].decode(arr[:, j]).to_numpy(dtype=object)
            return out
        import pandas as pd  # only for estimators fitted on a DataFrame

        if not self.categories:
            frame = pd.DataFrame(arr, columns=list(names), copy=False)
            for c, dt in self.column_dtypes.items():
                if dt.kind in "biu" and c in frame.columns:
                    frame[c] = _whole(frame[c].to_numpy(), dt)
            return frame
        data = {}
        for j, c in enumerate(names):
            if c in self.categories:
                data[c] = self.categories[c].decode(arr[:, j])
                continue
            dt = self.column_dtypes.get(c)
            data[c] = arr[:, j] if dt is None or dt.kind not in "biu" else _whole(arr[:, j], dt)
        return pd.DataFrame(data, copy=False)


def _whole(col: np.ndarray, dtype):
    """``col`` in the integer or boolean ``dtype`` (numpy, or pandas' nullable Int64/boolean) when
    every value is whole, else ``col`` itself (a perturbed value keeps its float column)."""
    if not np.all(col == np.round(col)):
        return col
    if isinstance(dtype, np.dtype):
        return col.astype(dtype)
    import pandas as pd

    return pd.array(col.astype(np.int64) if dtype.kind != "b" else col.astype(bool), dtype=dtype)


def encode_frame(codec: FrameCodec, frame, name: str, estimator, feature_names, differentiable: bool) -> np.ndarray:
    """A DataFrame's values as a float64 array (categorical columns as the codes of ``codec``), its
    columns checked against the ``estimator``'s (None for a torch module or a plain callable,
    which take numeric columns only): their dtypes (numbers; categorical columns for an
    estimator), and their names and order (``feature_names``, what it was fitted on, or None).
    ``differentiable``: whether the model is a torch one (named in the refusal). Errors name
    ``name``."""
    columns = [str(c) for c in frame.columns]
    kinds = {c: column_kind(dt) for c, dt in zip(columns, frame.dtypes)}
    bad = [
        j for j, c in enumerate(columns)
        if kinds[c] == "other" or (kinds[c] == "categorical" and estimator is None)
    ]
    if bad:
        shown = ", ".join(f"{columns[j]!r} ({frame.dtypes.iloc[j]})" for j in bad[:10]) + (
            " ..." if len(bad) > 10 else ""
        )
        if estimator is not None:
            raise TypeError(
                f"{name} has columns of unsupported dtypes {shown}; expected numeric columns "
                "(floats, integers, booleans) or categorical ones (str, object, pandas category "
                "or string dtype): convert these first (e.g. a datetime to seconds since an epoch)"
            )
        if differentiable:
            how = "gradient methods need numbers: encode these columns first (e.g. one-hot)"
        else:
            how = (
                "encode these columns first (e.g. one-hot or ordinal codes), or pass a fitted "
                "scikit-learn Pipeline that encodes them itself (its own encoder is then used)"
            )
        raise TypeError(f"{name} has non-numeric columns {shown}; expected numeric columns only: {how}")
    if (feature_names is not None and tuple(columns) != feature_names
            and not renamed_columns_match(estimator, columns, feature_names)):
        missing = [c for c in feature_names if c not in columns]
        extra = [c for c in columns if c not in feature_names]
        detail = (
            f"missing {missing[:10]}" if missing else ""
        ) + ("; " if missing and extra else "") + (f"not fitted on {extra[:10]}" if extra else "")
        raise ValueError(
            f"{name}'s columns must be the ones the model was fitted on (feature_names_in_), in "
            f"that order; got {columns[:10]}{' ...' if len(columns) > 10 else ''} "
            f"({detail or 'another order'}). Use {name}[list(model.feature_names_in_)]"
        )
    return codec.encode(frame, columns, kinds, name)
