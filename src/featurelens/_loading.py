"""Loading a model file and a data file for ``featurelens audit``, without running untrusted code.

Models
------
These formats are data, and load without running anything from the file:

- **A torch state dict** (``torch.save(model.state_dict(), f)``): read with
  ``torch.load(weights_only=True)`` (tensors and plain containers only) into a built-in
  architecture named by ``architecture`` (:data:`featurelens.groundtruth.models.MODELS`).
- **skops** (``skops.io.dump``): ``skops.io.load`` with skops' default trusted types plus the
  types listed in ``trusted_types`` (``--trust-type NAME``); a file holding other types is refused
  unless ``trust=True``, and the refusal lists them.
- **LightGBM text models** (``booster.save_model("model.txt")``) and **XGBoost models**
  (``booster.save_model("model.json")`` or ``"model.ubj"``): the library parses the trees, nothing
  runs; the Booster comes back as a scikit-learn-style estimator
  (:func:`featurelens.explainers.tree.booster_estimator`). They need lightgbm / xgboost installed.

Three formats are code, and load only with ``trust=True`` (``--trust-model-file``), for files
whose source you trust:

- **joblib / pickle** (and a whole torch module saved with ``torch.save(model)``): unpickling runs
  whatever code the file names.
- **TorchScript** (``torch.jit.save``; a zip archive with a ``code/`` folder): the archive holds
  TorchScript programs that ``torch.jit.load`` runs at load (a module's ``__setstate__``) and
  that run again in every forward pass; they can read and write files (``torch.from_file(...,
  shared=True)`` writes any path), so a crafted file acts on this machine just like a pickle.
  ``--trust-type`` never unlocks it.

Data
----
``.npy`` and ``.npz`` (``allow_pickle=False``), ``.csv`` and ``.parquet`` (pandas; parquet needs
pyarrow or fastparquet). Rows are samples; the data must be numeric, finite and non-empty.

Every problem raises :class:`LoadError`, whose ``exit_code`` is 2 for a usage problem (a missing
flag or option, an unsupported file type) and 1 for a file that cannot be used (corrupt,
mismatched, non-numeric).
"""

from __future__ import annotations

import os

import numpy as np

from ._fitted_categories import category_positions, fitted_categories, type_columns
from ._loading_errors import LoadError, LoadWarning
from ._model_files import (is_torch_save, is_torchscript, load_lightgbm, load_pickle, load_skops, load_torch,
                           load_xgboost, zip_names)
from ._validation import check_bool

__all__ = ["LoadError", "LoadWarning", "load_model", "load_data", "load_labels", "check_model_data",
           "whole_number_labels", "fitted_categories"]

TORCH_SUFFIXES = (".pt", ".pth", ".ts", ".torchscript", ".jit")
PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle", ".sav")
SKOPS_SUFFIXES = (".skops",)
LIGHTGBM_SUFFIXES = (".txt",)
XGBOOST_SUFFIXES = (".json", ".ubj")
DATA_SUFFIXES = (".npy", ".npz", ".csv", ".parquet", ".pq")

# ------------------------------------------------------------------------------------------------
# models


def _regular_file(path, what: str) -> str:
    """``path`` as a string when it names a regular file; else a :class:`LoadError` (exit code 2)
    saying what it is instead: missing, a folder, or not a regular file (a FIFO, a device such as
    ``/dev/zero``, a socket), which is never opened, so that reading it can neither block nor run
    forever."""
    import stat

    path = os.fspath(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise LoadError(f"{what} {path} does not exist", exit_code=2) from None
    except OSError as err:
        raise LoadError(f"cannot read {what} {path}: {err.strerror or err}", exit_code=2) from None
    if stat.S_ISDIR(mode):
        raise LoadError(f"{what} {path} is a directory; expected a file", exit_code=2)
    if not stat.S_ISREG(mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        raise LoadError(f"{what} {path} is not a regular file (it is {kind}); expected a file saved on disk",
                        exit_code=2)
    return path


def _suffix(path: str) -> str:
    return os.path.splitext(path)[1].lower()


def load_model(path, architecture: str | None = None, image_size: int | None = None, trust: bool = False,
               trusted_types=()):
    """Load a model file; returns ``(model, description)``.

    The format comes from the content where it can (TorchScript and torch.save archives are zip
    files with known entries) and from the extension otherwise: ``.skops`` for skops,
    ``.joblib``/``.pkl``/``.pickle``/``.sav`` for pickles, ``.txt`` for a LightGBM text model and
    ``.json``/``.ubj`` for an XGBoost model (both data, returned as a scikit-learn-style estimator). See the module docstring for what is
    refused and why: a state dict (``weights_only=True``) and a skops file with trusted types load
    without running code from the file; pickle, joblib and TorchScript files are code and need
    ``trust=True`` (``trusted_types`` only ever widens what skops trusts). A path that is missing,
    a folder or not a regular file (a FIFO, ``/dev/zero``) is refused before it is opened. ``image_size`` (8 or 64) picks the built-in architecture's input size;
    None tries both. ``trust`` must be True or False: anything else (``"false"``, ``"0"``, ``""``,
    None, 0) is a TypeError, never read by its truth value (``featurelens._validation.check_bool``).
    """
    trust = check_bool(trust, "trust")
    path = _regular_file(path, "model file")
    suffix = _suffix(path)
    names = zip_names(path)
    if suffix in SKOPS_SUFFIXES:
        return load_skops(path, trust, trusted_types)
    if suffix in LIGHTGBM_SUFFIXES:
        return load_lightgbm(path)
    if suffix in XGBOOST_SUFFIXES:
        return load_xgboost(path)
    if is_torchscript(names) or is_torch_save(names) or suffix in TORCH_SUFFIXES:
        return load_torch(path, names, architecture, image_size, trust)
    if suffix in PICKLE_SUFFIXES:
        return load_pickle(path, trust)
    with open(path, "rb") as f:
        head = f.read(2)
    if head[:1] == b"\x80":  # pickle protocol 2+ opcode PROTO
        return load_pickle(path, trust)
    raise LoadError(
        f"cannot tell the format of model file {path}; expected a torch state dict "
        f"({', '.join(TORCH_SUFFIXES)}), skops (.skops), a LightGBM text model (.txt), an XGBoost "
        f"model ({', '.join(XGBOOST_SUFFIXES)}) or, with --trust-model-file, TorchScript or "
        f"joblib/pickle ({', '.join(PICKLE_SUFFIXES)})",
        exit_code=2,
    )


def whole_number_labels(y) -> np.ndarray | None:
    """``y`` as int64 when every label is a whole number (a CSV column of 0.0/1.0 included), else
    None: 1.5 must not be truncated to class 1."""
    try:
        as_int = np.asarray(y).astype(np.int64)
        whole = bool(np.all(as_int == np.asarray(y, dtype=np.float64)))
    except (TypeError, ValueError):
        return None
    return as_int if whole else None


def check_model_data(model, X: np.ndarray, data_path: str = "the data", names=None) -> None:
    """Raise :class:`LoadError` when the model cannot take rows shaped like ``X``'s. With one
    feature too many, the message suggests ``--labels`` (naming likely label columns among
    ``names``, the data's column names)."""
    n_in = getattr(model, "n_features_in_", None)
    if n_in is not None:
        d = int(np.prod(X.shape[1:]))
        if d != int(n_in):
            hint = _label_hint(X, names) if d == int(n_in) + 1 else ""
            raise LoadError(
                f"the model expects {int(n_in)} features per row (n_features_in_), but {data_path} "
                f"has {d} per row (shape {X.shape}){hint}"
            )
    from .models import Model

    probe = Model(model).with_numpy()  # numpy models: no torch on this path
    if hasattr(probe, "with_missing_values"):  # NaN reaches the model, which accepts or refuses it
        probe = probe.with_missing_values()
    try:
        probe.predict(X[: min(2, len(X))])
    except (ValueError, TypeError, RuntimeError) as err:
        text = [str(c) for c, dt in X.dtypes.items() if dt.kind not in "biuf"] if hasattr(X, "dtypes") else []
        if text:
            raise LoadError(
                f"the model cannot take the rows of {data_path}: its non-numeric column(s) {text[:5]} "
                f"need a model that encodes them (a pipeline with e.g. a OneHotEncoder) ({err})"
            ) from err
        raise LoadError(
            f"the model cannot take the rows of {data_path} (each of shape {X.shape[1:]}): {err}. "
            "Check that the data file belongs to this model (number of features, --input-shape)."
        ) from err


def _label_hint(X: np.ndarray, names) -> str:
    """The hint for data with exactly one column more than the model takes: pass ``--labels``,
    naming the columns that look like labels (whole numbers with at most 20 distinct values)."""
    hint = "; if one column is the label, pass --labels NAME"
    if not isinstance(X, np.ndarray) or X.ndim != 2 or not names or len(names) != X.shape[1]:
        return hint
    likely = [n for n, col in zip(names, X.T)
              if np.all(col == np.round(col)) and len(np.unique(col)) <= 20]
    if likely:
        shown = ", ".join(repr(n) for n in likely[:3]) + (" ..." if len(likely) > 3 else "")
        hint += f" (column{'s' if len(likely) > 1 else ''} {shown} look{'' if len(likely) > 1 else 's'} like labels)"
    return hint


# ------------------------------------------------------------------------------------------------
# data


def _float_dtype(dtype) -> type:
    """The float type data of ``dtype`` load as: float64 for float64 (a CSV or parquet column) and
    for integers wider than 16 bits (Unix timestamps, ids), which float32 would round (by up to 64 s
    for today's timestamps); float32 for float16/float32 and for small integers and booleans, which
    it holds exactly. A model then gets its own precision: scikit-learn and numpy models the
    float64 as it is, torch models their parameters' dtype (:meth:`featurelens.models.Model.to_tensor`)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.float64 if dtype.itemsize >= 8 else np.float32
    return np.float64 if dtype.itemsize > 2 else np.float32


def _finite_float(X: np.ndarray, path: str, allow_missing: bool = False) -> np.ndarray:
    if X.dtype == object or X.dtype.kind not in "biuf":
        raise LoadError(f"{path} must hold numbers; got an array of dtype {X.dtype}")
    if X.ndim < 2:
        if X.ndim == 1:
            raise LoadError(
                f"{path} holds a 1-D array of shape {X.shape}; expected rows of samples, shape (n, features) "
                "or (n, channels, ...). For one feature per sample reshape it to (n, 1)"
            )
        raise LoadError(f"{path} holds a scalar; expected rows of samples, shape (n, features)")
    if X.shape[0] == 0 or X.size == 0:
        raise LoadError(f"{path} is empty (shape {X.shape}); expected at least one row with features")
    X = X.astype(_float_dtype(X.dtype), copy=False)
    bad = np.isinf(X) if allow_missing else ~np.isfinite(X)
    if bad.any():
        if allow_missing:
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise LoadError(f"{path} contains {int(bad.sum())} inf value(s) (the first at index {where}); "
                            "expected finite numbers or NaN for a missing value")
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise LoadError(
            f"{path} contains {int(bad.sum())} NaN or inf value(s) (the first at index {where}); "
            "expected finite numbers (impute or drop those rows first)"
        )
    return X


def _read_table(path: str, suffix: str, text_columns=None):
    """The CSV or parquet file as a DataFrame; ``text_columns``: CSV column positions read as text
    (category columns, whose cells are matched to the model's categories by their text)."""
    try:
        import pandas as pd
    except ImportError as err:
        raise LoadError(
            f"reading {path} needs pandas: pip install pandas (or save the data as .npy or .npz)"
        ) from err

    if suffix == ".csv":
        try:
            return pd.read_csv(path, dtype={int(j): str for j in text_columns} if text_columns else None)
        except pd.errors.EmptyDataError as err:
            raise LoadError(f"{path} is empty; expected a header row and at least one data row") from err
        except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as err:
            raise LoadError(f"cannot parse {path} as CSV: {err}") from err
    try:
        return pd.read_parquet(path)
    except ImportError as err:
        raise LoadError(
            f"reading {path} needs a parquet engine, and neither pyarrow nor fastparquet is installed: "
            "pip install pyarrow (or save the data as .npy, .npz or .csv)"
        ) from err
    except Exception as err:
        raise LoadError(f"cannot read {path} as a parquet file: {err}") from err


#: A text column is taken for a numeric column with stray text when at most this fraction of its
#: filled cells are not numbers (and at least one is).
STRAY_TEXT_FRACTION = 0.1


def _refuse_stray_text(table, path: str) -> None:
    """Refuse a column of numbers with a few text cells (``"1.5"``, ``"2.0"``, ``"n/a?"``, ...),
    which pandas reads as a text column: the message names the column, the first offending row
    (0-based among the data rows, and its line in a CSV file counting the header as line 1) and
    its value, at load, before any work. A column of mostly text (a real categorical column) is
    left alone."""
    import pandas as pd

    for column in table.columns:
        col = table[column]
        if col.dtype != object and type(col.dtype).__name__ != "StringDtype":
            continue
        filled = col[col.notna()]
        if filled.empty:
            continue
        as_text = filled.astype(str).str.strip()
        numbers = pd.to_numeric(as_text, errors="coerce")
        bad = numbers.isna() & ~as_text.str.lower().isin(("nan", ""))
        n_bad = int(bad.sum())
        if n_bad == 0 or n_bad == len(filled) or n_bad > STRAY_TEXT_FRACTION * len(filled):
            continue
        position = int(np.flatnonzero(table.index.isin(bad[bad].index[:1]))[0])
        value = filled[bad].iloc[0]
        line = f" (line {position + 2} of the file)" if _suffix(path) == ".csv" else ""
        raise LoadError(
            f"{path}: column {str(column)!r} holds numbers but row {position}{line} holds {value!r}, "
            f"which is not a number ({n_bad} such cell{'s' if n_bad > 1 else ''} of {len(filled)}); "
            "expected a number in every cell (fix or blank those cells, or encode the column)"
        )


def _np_load(path: str, what: str):
    """``np.load(path, allow_pickle=False)`` with every failure a :class:`LoadError` that never
    repeats numpy's advice to load the file unsafely; ``.npz`` members are read here, not lazily,
    after their sizes are checked against the bound of
    :func:`featurelens._serialization.npz_size_problem` (1 GiB decompressed by default; the
    environment variable ``FEATURELENS_MAX_NPZ_BYTES`` raises it), so a small file that inflates
    to gigabytes is refused before it is decompressed."""
    from ._serialization import describe_load_error

    try:
        with open(path, "rb") as f:
            head = f.read(6)
        if head.startswith(b"PK"):
            from ._serialization import npz_size_problem

            too_big = npz_size_problem(path)
            if too_big is not None:
                raise LoadError(f"refusing to read {path}: {too_big}")
            with np.load(path, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        if not head.startswith(b"\x93NUMPY"):
            raise LoadError(f"cannot read {path} as {what}: it is not a .npy or .npz file (it starts with {head!r})")
        return np.load(path, allow_pickle=False)
    except LoadError:
        raise
    except Exception as err:  # zipfile, zlib and numpy raise many types for broken files
        raise LoadError(f"cannot read {path} as {what}: {describe_load_error(err)}") from None


def _npz_arrays(path: str) -> dict:
    arrays = _np_load(path, "a .npz archive")
    if not isinstance(arrays, dict):
        raise LoadError(f"{path} is a .npy array, not a .npz archive; rename it to .npy")
    bad = [k for k, v in arrays.items() if not isinstance(v, np.ndarray)]
    if bad:
        raise LoadError(f"{path} has member(s) {', '.join(bad)} that are not .npy arrays")
    return arrays


def load_data(path, labels: str | None = None, input_shape=None, keep_text: bool = False,
              allow_missing: bool = False, model=None):
    """Load a data file; returns ``(X (n, ...), y or None, feature names or None)``.

    ``X`` is float64 where the file holds float64 or wide integers (CSV and parquet columns are
    float64), float32 where it holds float32, float16, small integers or booleans: the values are
    never rounded on the way (a Unix timestamp, 1e308 stay what they are); NaN and inf are refused.

    ``labels``: a column name (CSV, parquet: removed from the features), an array name inside a
    ``.npz``, or the path of a ``.npy``/``.csv`` file with one label per row. ``input_shape``: the
    shape of one sample (e.g. ``(1, 8, 8)``) to reshape flat rows into. ``keep_text``: a CSV or
    parquet table with non-numeric columns comes back as the DataFrame itself (for a scikit-learn
    pipeline that encodes them), its numeric columns checked to be finite; else such a table is
    refused. ``allow_missing``: NaN cells (missing values) are kept for a model that routes them
    itself (inf is still refused); else they are refused.

    ``model``: a CSV or parquet table is typed as this model was fitted (with ``keep_text``): the
    columns it took as pandas ``category`` columns (LightGBM, XGBoost with
    ``enable_categorical=True``, HistGradientBoosting with ``categorical_features="from_dtype"``;
    :func:`fitted_categories`) become pandas Categoricals with the model's own categories, in its
    order (a CSV cell matched by its text, so "2" is the category 2); a value the model was not
    fitted on becomes NaN with a :class:`LoadWarning` naming the column and the values. Text
    columns of True/False become bool columns (float64 1.0/0.0 with NaN where a cell is empty).
    A table with category columns always comes back as a DataFrame.
    """
    path = _regular_file(path, "data file")
    suffix = _suffix(path)
    y = None
    names = None
    if suffix not in DATA_SUFFIXES:
        raise LoadError(
            f"unsupported data file type {suffix or '(no extension)'!r} for {path}; expected one of "
            f"{', '.join(DATA_SUFFIXES)}",
            exit_code=2,
        )
    if suffix == ".npy":
        X = _np_load(path, "a .npy array")
        if isinstance(X, dict):
            raise LoadError(f"{path} is a .npz archive, not a .npy array; rename it to .npz")
    elif suffix == ".npz":
        arrays = _npz_arrays(path)
        if labels is not None and labels in arrays:
            y = arrays.pop(labels)
            labels = None
        if not arrays:
            raise LoadError(f"{path} holds no arrays (besides the labels); expected the inputs")
        key = next((k for k in ("X", "x", "data", "inputs") if k in arrays), None)
        if key is None:
            if len(arrays) > 1:
                raise LoadError(
                    f"{path} holds several arrays ({', '.join(arrays)}); name the inputs 'X' (and pass "
                    "the labels' name with --labels)"
                )
            key = next(iter(arrays))
        X = arrays[key]
    else:
        table = _read_table(path, suffix, category_positions(path, suffix, labels, model))
        if labels is not None and labels in table.columns:
            y = table.pop(labels).to_numpy()
            labels = None
        if table.shape[0] == 0 or table.shape[1] == 0:
            raise LoadError(f"{path} is empty (rows x columns = {table.shape[0]} x {table.shape[1]}); expected data")
        if model is not None and keep_text:
            table, _ = type_columns(table, model, path)
        _refuse_stray_text(table, path)
        numeric = table.select_dtypes(include="number")
        other = [str(c) for c in table.columns if c not in numeric.columns]
        if other and keep_text:
            if numeric.shape[1]:
                _finite_float(numeric.to_numpy(), path, allow_missing)
            if labels is not None:
                y = load_labels(labels, path, [str(c) for c in table.columns])
                if y.ndim != 1 or y.shape[0] != table.shape[0]:
                    raise LoadError(f"the labels must be one per row of {path} ({table.shape[0]}); got shape {y.shape}")
            table.columns = [str(c) for c in table.columns]
            return table, y, list(table.columns)
        if other:
            shown = ", ".join(repr(c) for c in other[:5]) + (" ..." if len(other) > 5 else "")
            raise LoadError(
                f"{path} has non-numeric column(s) {shown}; expected numbers only (encode categorical "
                "columns first, or name the label column with --labels; a scikit-learn pipeline that "
                "encodes them itself takes them as they are)"
            )
        names = [str(c) for c in table.columns]
        X = table.to_numpy()
    X = _finite_float(np.asarray(X), path, allow_missing)
    if input_shape is not None:
        shape = tuple(int(s) for s in input_shape)
        if int(np.prod(shape)) != int(np.prod(X.shape[1:])):
            raise LoadError(
                f"--input-shape {'x'.join(map(str, shape))} has {int(np.prod(shape))} elements, but each row of "
                f"{path} has {int(np.prod(X.shape[1:]))} (shape {X.shape[1:]})",
                exit_code=2,
            )
        X = X.reshape((X.shape[0],) + shape)
    if labels is not None:
        y = load_labels(labels, path, names)
    if y is not None:
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise LoadError(f"the labels must be one per row of {path} ({X.shape[0]}); got shape {y.shape}")
    return X, y, names


def load_labels(labels: str, data_path: str, columns=None) -> np.ndarray:
    """Labels from a ``.npy`` file or a one-column ``.csv`` file (``labels`` is a path)."""
    if not os.path.isfile(labels):
        where = f" (columns: {', '.join(columns[:10])}{' ...' if len(columns) > 10 else ''})" if columns else ""
        raise LoadError(
            f"--labels {labels!r} is neither a file nor a column/array of {data_path}{where}", exit_code=2
        )
    suffix = _suffix(labels)
    if suffix == ".npy":
        y = _np_load(labels, "a labels .npy array")
        if isinstance(y, dict):
            raise LoadError(f"labels file {labels} is a .npz archive, not a .npy array")
    elif suffix == ".csv":
        table = _read_table(labels, ".csv")
        if table.shape[1] != 1:
            raise LoadError(f"labels file {labels} must have one column; got {table.shape[1]}")
        y = table.iloc[:, 0].to_numpy()
    else:
        raise LoadError(f"labels file {labels} must be .npy or .csv; got {suffix!r}", exit_code=2)
    return np.asarray(y).reshape(-1) if np.ndim(y) == 2 and 1 in np.shape(y) else np.asarray(y)
