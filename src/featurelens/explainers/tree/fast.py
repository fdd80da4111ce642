"""The short path of ``tree_shap``'s ``explain``: rows of numbers with a given target.

:meth:`featurelens.explainers.Explainer.explain` serves every explainer: it turns ``x`` into the
Model's input (a DataFrame column by column), evaluates the model on one row to count its outputs
before checking ``target``, and then calls ``_attribute``. TreeSHAP reads the trees and never
needs the model's outputs when the target is given, so for the common call (a float array or a
DataFrame of numeric columns, an int or one int per row as target, no executor, no groups) this
module builds the same :class:`~featurelens.Explanation` directly: the rows are read once
(``DataFrame.to_numpy``), the number of outputs comes from the trees (the layout
``TreeShap._select`` picks from), and no model call is made (``model_calls`` 0). Everything
else (``target=None``, which needs the predicted class; category or text columns, which the
Model codes; tensors; an executor; (n, k) targets) goes through the general path, as do inputs
that would be refused there (wrong shapes or dtypes, inf), so its messages are unchanged.
"""

from __future__ import annotations

import time

import numpy as np

from featurelens._validation import check_int, resolve_target

__all__ = ["fast_explanation", "n_model_outputs"]

_SHORT_KWARGS = frozenset({"executor", "first_row", "group_names"})


def n_model_outputs(ex) -> int:
    """The number of outputs ``ex.model`` has, from the trees (no model call): one per tree
    output, or for a single-output ensemble 2 when the Model calls a binary classifier's
    ``predict_proba`` (class 0 and class 1; ``TreeShap._select`` explains class 0 as the negative
    margin) and 1 otherwise (a regressor, a ``decision_function``, an IsolationForest)."""
    ens = ex._ensemble
    if not ens.squeeze:
        return ens.n_out
    est = ex.model.estimator
    through = getattr(ex.model.function, "__name__", "")
    return 2 if len(getattr(est, "classes_", ())) == 2 and through != "decision_function" else 1


def _numbers(ex, x):
    """``(data, columns)``: ``x`` as a new float array (float64, or float32 for a float32 array, as
    the Model keeps it) and a DataFrame's columns (else None); None when ``x`` is anything the
    general path must read (see the module docstring)."""
    if ex._ensemble.preprocess is not None or ex.model.categories:
        return None
    columns = None
    if isinstance(x, np.ndarray):
        if x.dtype not in (np.float64, np.float32):
            return None
        # Column-major: the compiled kernels read the rows transposed (d, n), which is then this
        # copy's own memory rather than a second copy of the rows.
        data = np.array(x, copy=True, order="F")
    elif type(x).__module__.split(".")[0] == "pandas" and getattr(x, "ndim", 0) == 2:
        columns = x.columns.tolist()
        fitted = ex.model.feature_names
        if fitted is not None and tuple(str(c) for c in columns) != fitted:
            return None  # the Model says which columns differ
        if not all(isinstance(dt, np.dtype) and dt.kind in "biuf" for dt in set(x.dtypes.tolist())):
            return None  # category, text or nullable columns: the Model codes them
        data = x.to_numpy(dtype=np.float64, copy=True)
    else:
        return None
    if data.ndim != 2 or data.shape[0] == 0 or data.shape[1] != ex._ensemble.n_features:
        return None
    if np.isinf(data).any():
        return None
    return data, columns


def fast_explanation(ex, x, target, feature_names, args, kwargs):
    """The :class:`~featurelens.Explanation` of ``ex.explain(x, target, feature_names, *args,
    **kwargs)`` computed without the general path, or None where that path must run.

    Parameters
    ----------
    ex : TreeShap
        The explainer (not a Pipeline's).
    x : array-like or DataFrame
        The rows, as given to ``explain``.
    target : None, int or array-like of int
        As given to ``explain``.
    feature_names : list of str or None
        As given to ``explain``.
    args : tuple
        ``explain``'s other positional arguments.
    kwargs : dict
        ``explain``'s other keyword arguments.

    Returns
    -------
    Explanation or None
        The same explanation as the general path (values, base values, params, names, data,
        units), with ``model_calls`` 0.
    """
    start = time.perf_counter()
    if args or target is None or ex._pipeline is not None or not _SHORT_KWARGS.issuperset(kwargs):
        return None
    if kwargs.get("executor") is not None or kwargs.get("group_names") is not None:
        return None
    if hasattr(target, "detach") or np.ndim(target) > 1:
        return None  # a tensor, or several targets per row
    if "first_row" in kwargs:
        check_int(kwargs["first_row"], "first_row", low=0)
    got = _numbers(ex, x)
    if got is None:
        return None
    data, columns = got
    n, d = data.shape
    names = ex._feature_names(feature_names, columns, (d,))
    rows = ex._rows(data, "x")  # float32 rows stay float32 (prepare_rows)
    t = resolve_target(target, n, n_model_outputs(ex), "target")
    step = 256 if ex.model.auto_batch else int(ex.model.batch_size)
    values, base, inter = ex._compute(rows, ex.background, step)
    values, base, inter = ex._select(values, base, inter, t, n)
    params = ex.params()
    params["base_values"] = np.asarray(base, dtype=np.float64).tolist()
    from featurelens.explanation import Explanation

    return Explanation(values=values, method=ex.name, params=params, target=t, model_calls=0,
                       seconds=time.perf_counter() - start,
                       extra={} if inter is None else {"interactions": inter}, feature_names=names,
                       data=data, base_values=np.asarray(base, dtype=np.float64), output=ex._units)
