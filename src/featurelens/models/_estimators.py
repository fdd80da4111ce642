"""Recognising scikit-learn estimators for the Model adapter (:class:`featurelens.models.Model`),
without importing scikit-learn until a model needs it: which method a fitted estimator is called
through (:func:`estimator_method`), whether it is a classifier, its estimator type, whether it is
fitted, and LightGBM's renamed feature names.
"""

from __future__ import annotations

from featurelens._optional import is_torch_module, torch

ESTIMATOR_METHODS = ("predict_proba", "decision_function", "predict", "predict_log_proba")


def is_classifier_model(estimator) -> bool:
    try:
        from sklearn.base import is_classifier

        if is_classifier(estimator):
            return True
    except Exception:  # no scikit-learn, or an object its tags do not understand
        pass
    return getattr(estimator, "_estimator_type", None) == "classifier" or hasattr(estimator, "classes_")


def estimator_type(estimator):
    """scikit-learn's estimator type ("classifier", "regressor", "clusterer",
    "outlier_detector", ...) from its tags, else ``_estimator_type``, else None."""
    try:
        from sklearn.utils import get_tags

        kind = get_tags(estimator).estimator_type
        if kind is not None:
            return kind
    except Exception:  # no scikit-learn, an older one, or an object its tags do not understand
        pass
    return getattr(estimator, "_estimator_type", None)


def check_fitted(estimator) -> None:
    try:
        from sklearn.base import BaseEstimator
        from sklearn.exceptions import NotFittedError
        from sklearn.utils.validation import check_is_fitted
    except ImportError:
        return
    if not isinstance(estimator, BaseEstimator):
        return
    try:
        check_is_fitted(estimator)
    except NotFittedError as err:
        raise ValueError(
            f"model {type(estimator).__name__} is not fitted; call its fit(X, y) before explaining it ({err})"
        ) from err
    except TypeError:  # an object check_is_fitted does not know how to inspect
        pass


def estimator_method(model):
    """``(estimator, bound method)`` for a scikit-learn-style estimator or Pipeline (any object
    with ``predict_proba`` or ``predict``) or a bound ``predict*`` method of one; ``(None, None)``
    for torch modules and other callables.

    Classifiers: ``predict_proba`` (every class an output), else ``decision_function`` (margins);
    a classifier with only ``predict`` (class labels, no gradation) is refused. Regressors and
    other estimators: ``predict``.
    """
    if is_torch_module(model):
        return None, None
    owner = getattr(model, "__self__", None)
    if (
        owner is not None
        and not is_torch_module(owner)
        and getattr(model, "__name__", None) in ESTIMATOR_METHODS
        and hasattr(owner, "predict")
    ):
        return owner, model  # estimator.predict_proba passed as a callable

    def has(name):
        try:
            return callable(getattr(model, name, None))
        except Exception:  # a property that raises (scikit-learn's available_if raises AttributeError)
            return False

    if not (has("predict_proba") or has("predict")):
        return None, None
    check_fitted(model)
    kind = estimator_type(model)
    if kind == "clusterer":
        raise TypeError(
            f"model {type(model).__name__} is a clusterer: its predict returns cluster labels, which "
            "attributions cannot grade. Pass the score to explain as a callable, e.g. "
            f"fl.Model({type(model).__name__.lower()}.transform) (the distances to the centres, one "
            "output per cluster) or fl.Model(lambda X: -model.transform(X)[:, k])"
        )
    if kind == "outlier_detector":
        if has("decision_function"):
            # the anomaly score (IsolationForest: score_samples - offset_, negative for outliers),
            # explained in its own units (no probabilities); predict only thresholds it into +-1
            return model, model.decision_function
        raise TypeError(
            f"model {type(model).__name__} is an outlier detector without decision_function: its "
            "predict returns +-1 labels, which attributions cannot grade; pass its score_samples "
            "as a callable, e.g. fl.Model(model.score_samples)"
        )
    if has("predict_proba"):
        return model, model.predict_proba
    if is_classifier_model(model):
        if has("decision_function"):
            return model, model.decision_function
        raise TypeError(
            f"model {type(model).__name__} is a classifier with neither predict_proba nor "
            "decision_function; its predict returns class labels, which attributions cannot grade. "
            "Use a classifier with predict_proba (e.g. SVC(probability=True)) or pass a callable "
            "returning scores"
        )
    return model, model.predict


def renamed_columns_match(estimator, columns, fitted) -> bool:
    """Whether a DataFrame's ``columns`` are the ``fitted`` feature names of a LightGBM model as
    LightGBM renamed them: its native library replaces every space in a feature name by ``_``
    (``load_breast_cancer(as_frame=True)``'s "mean radius" becomes "mean_radius"), while its own
    ``predict`` takes the frame with the original names. False for any other estimator."""
    if estimator is None or type(estimator).__module__.split(".")[0] != "lightgbm":
        return False
    fitted = tuple(str(c) for c in fitted)
    return len(columns) == len(fitted) and all(
        str(c).replace(" ", "_") == f for c, f in zip(columns, fitted)
    )
