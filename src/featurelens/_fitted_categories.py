"""The columns a fitted tree model takes, read from the model itself: which are pandas category
columns and with which categories, in the model's order (LightGBM's ``pandas_categorical``,
XGBoost's stored categories, HistGradientBoosting's own encoder), and a data table typed to match
(category cells as the model's categories, True/False text as bools). The CSV loader
(:mod:`featurelens._loading`) types a file's columns with it; the tree explainers
(:mod:`featurelens.explainers.tree.boosters`) read XGBoost's stored categories through
:func:`xgboost_stored_categories`.
"""

from __future__ import annotations

import warnings

import numpy as np

from ._loading_errors import LoadError, LoadWarning

__all__ = ["fitted_categories", "type_columns", "category_positions", "xgboost_stored_categories"]




def _owner(model):
    """The estimator itself (a bound method's owner, ``estimator.predict_proba``), else ``model``."""
    owner = getattr(model, "__self__", None)
    return owner if owner is not None and hasattr(owner, "predict") else model


def _package(est) -> str:
    return type(est).__module__.split(".")[0]


def _lightgbm_categories(est) -> dict:
    """LightGBM: ``booster_.pandas_categorical`` holds the category lists of the frame's category
    columns in their order; the categorical features are those ``dump_model()["feature_infos"]``
    lists values for (explicit integer categorical features are listed too, so when there are more
    of them than lists, the columns stay unassigned here and :func:`_assign_lightgbm` picks the
    text ones)."""
    booster = getattr(est, "booster_", None)
    lists = getattr(booster, "pandas_categorical", None) if booster is not None else None
    if not lists:
        return {}
    infos = booster.dump_model(num_iteration=1).get("feature_infos", {})
    names = booster.feature_name()
    candidates = [j for j, n in enumerate(names) if (infos.get(n) or {}).get("values")]
    return {"lightgbm": ([list(c) for c in lists], candidates)}


def xgboost_stored_categories(booster) -> dict | None:
    """The categories an XGBoost ``Booster`` stores for its category features, ``{feature index:
    categories in the model's order}`` (XGBoost 3.1 and later re-code a frame's categories to
    these); None when this XGBoost (before 3.1, or without pyarrow) stores or exports none."""
    try:
        table = booster.get_categories(export_to_arrow=True).to_arrow()
    except Exception:  # an XGBoost before 3.1 (or no pyarrow): no stored categories
        return None
    return {j: list(cats.to_pylist()) for j, (_, cats) in enumerate(table or []) if cats is not None}


def _xgboost_categories(est) -> dict:
    """XGBoost (``enable_categorical=True``): the features typed ``"c"`` in ``feature_types``, with
    the categories the booster stores (:func:`xgboost_stored_categories`; None where it stores
    none, when XGBoost coded the frame's own categories)."""
    booster = est.get_booster()
    types = list(booster.feature_types or [])
    columns = [j for j, t in enumerate(types) if t == "c"]
    if not columns:
        return {}
    stored = xgboost_stored_categories(booster) or {}
    return {j: stored.get(j) for j in columns}


def _hist_gradient_boosting_categories(est) -> dict:
    """HistGradientBoosting fitted with ``categorical_features="from_dtype"`` on pandas category
    columns: ``is_categorical_`` and its own ordinal encoder's ``categories_`` (NaN dropped)."""
    mask = getattr(est, "is_categorical_", None)
    if getattr(est, "categorical_features", None) != "from_dtype" or mask is None or not np.any(mask):
        return {}
    try:
        encoder = est._preprocessor.named_transformers_["encoder"]
        lists = encoder.categories_
    except (AttributeError, KeyError):  # another scikit-learn layout: the model encodes values itself
        return {}
    columns = np.flatnonzero(mask)
    out = {}
    for j, cats in zip(columns, lists):
        out[int(j)] = [c for c in np.asarray(cats, dtype=object).tolist()
                       if not (isinstance(c, float) and np.isnan(c))]
    return out


def fitted_categories(model) -> dict:
    """The pandas category columns ``model`` was fitted on: ``{column index: categories in the
    model's order}`` (categories None where the model stores none), read from the model itself
    (LightGBM ``booster_.pandas_categorical``, XGBoost ``Booster.get_categories`` and
    ``feature_types``, HistGradientBoosting's ordinal encoder); LightGBM's entry is
    ``{"lightgbm": (category lists in order, candidate column indices)}``. Empty for a model fitted
    without categories (and for anything that is not one of these estimators)."""
    est = _owner(model)
    package, name = _package(est), type(est).__name__
    try:
        if package == "lightgbm":
            return _lightgbm_categories(est)
        if package == "xgboost" and hasattr(est, "get_booster"):
            return _xgboost_categories(est)
        if package == "sklearn" and name.startswith("HistGradientBoosting"):
            return _hist_gradient_boosting_categories(est)
    except Exception as err:  # an unfitted or unusual model: it says so itself when called
        if "not fitted" in str(err).lower() or type(err).__name__ == "NotFittedError":
            return {}
        raise LoadError(f"cannot read the categories {name} was fitted with: {err}") from err
    return {}


def _bool_like(series) -> bool:
    """A text column whose filled cells are all True/False (any case; bools in a parquet file)."""
    filled = series[series.notna()]
    if filled.empty:
        return False
    text = filled.astype(str).str.strip().str.lower()
    return bool(text.isin(("true", "false")).all())


def _as_bool(series):
    """A True/False column: bool when every cell is filled, else float64 1.0 / 0.0 / NaN (a model
    that routes missing values gets NaN where the cell is empty)."""
    text = series.astype(str).str.strip().str.lower()
    values = np.where(series.isna().to_numpy(), np.nan, np.where(text.to_numpy() == "true", 1.0, 0.0))
    if not np.isnan(values).any():
        return values.astype(bool)
    return values


def _category_lookup(categories) -> dict:
    """Each category by its text (a CSV cell is text: "2" is the integer category 2, "2.0" too)."""
    lookup = {}
    for c in categories:
        lookup.setdefault(str(c), c)
        if isinstance(c, (int, np.integer)) and not isinstance(c, (bool, np.bool_)):
            lookup.setdefault(f"{float(c)}", c)
        elif isinstance(c, (float, np.floating)) and float(c).is_integer():
            lookup.setdefault(str(int(c)), c)
    return lookup


def _as_category(series, categories, column, path):
    """``series`` as a pandas Categorical with ``categories`` (the model's, in its order): a cell is
    its category when equal to one or when its text is one's text; a filled cell that is no
    category becomes NaN, with a :class:`LoadWarning` naming the column and the values."""
    import pandas as pd

    if categories is None:  # the model stores none: the column's own values, sorted (as pandas does)
        filled = series[series.notna()]
        categories = sorted(set(filled.astype(str).tolist())) if filled.dtype == object else sorted(set(filled))
    categories = list(categories)
    direct = series.isin(categories).to_numpy()
    lookup = _category_lookup(categories)
    mapped = series.astype(object).where(direct, series.astype(str).str.strip().map(lookup))
    mapped = mapped.where(series.notna(), None)
    unknown = series.notna().to_numpy() & mapped.isna().to_numpy()
    if unknown.any():
        values = series[unknown]
        counts = values.astype(str).value_counts()
        shown = ", ".join(f"{v!r} ({k} cell{'s' if k > 1 else ''})" for v, k in list(counts.items())[:5])
        more = f" and {len(counts) - 5} more" if len(counts) > 5 else ""
        known = ", ".join(repr(c) for c in categories[:10]) + (" ..." if len(categories) > 10 else "")
        warnings.warn(
            f"{path}: column {str(column)!r} holds {int(unknown.sum())} value(s) the model was not fitted on: "
            f"{shown}{more}; they are read as missing (NaN), which the model routes as a missing value "
            f"(its categories: {known})", LoadWarning, stacklevel=3)
    return pd.Categorical(mapped.where(~unknown, None), categories=categories)


def _assign_lightgbm(spec, table) -> dict:
    """``{column index: categories}`` for LightGBM: its category lists go, in order, to its
    categorical features (the text ones among them when it also has integer categorical ones)."""
    lists, candidates = spec
    if len(candidates) != len(lists):
        candidates = [j for j in candidates if j < table.shape[1] and table.dtypes.iloc[j].kind not in "biuf"]
    if len(candidates) != len(lists):
        return {}  # cannot tell which columns hold categories: the model itself then refuses clearly
    return dict(zip(candidates, lists))


def type_columns(table, model, path):
    """The table's columns typed as ``model`` takes them: its pandas category columns (see
    :func:`fitted_categories`) as pandas Categoricals with the model's own categories, and text
    columns of True/False as bools (float64 with NaN where a cell is empty). Returns the table and
    the indices of its category columns. Other columns are left as they are; a table with another
    number of columns than the model takes is left for :func:`check_model_data` to refuse."""
    categories = fitted_categories(model) if model is not None else {}
    if "lightgbm" in categories:
        categories = _assign_lightgbm(categories["lightgbm"], table)
    n_in = getattr(_owner(model), "n_features_in_", None)
    if categories and n_in is not None and int(n_in) != table.shape[1]:
        categories = {}
    table = table.copy()
    for j in range(table.shape[1]):
        column = table.columns[j]
        series = table.iloc[:, j]
        if j in categories:
            table.isetitem(j, _as_category(series, categories[j], column, path))
        elif series.dtype == object and _bool_like(series):
            table.isetitem(j, _as_bool(series))
    return table, sorted(categories)


def category_positions(path: str, suffix: str, labels, model) -> list[int]:
    """The positions in a CSV file (its label column counted) of the model's category columns, to
    read them as text; empty when the model has none or the header does not fit it."""
    if suffix != ".csv" or model is None:
        return []
    categories = fitted_categories(model)
    if not categories or "lightgbm" in categories and not categories["lightgbm"][1]:
        return []
    positions = categories["lightgbm"][1] if "lightgbm" in categories else sorted(categories)
    import pandas as pd

    try:
        header = [str(c) for c in pd.read_csv(path, nrows=0).columns]
    except Exception:  # the full read names the problem
        return []
    features = [i for i, c in enumerate(header) if c != labels]
    n_in = getattr(_owner(model), "n_features_in_", None)
    if n_in is not None and int(n_in) != len(features):
        return []
    return [features[j] for j in positions if j < len(features)]
