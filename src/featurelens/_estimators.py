"""Recognising scikit-learn estimators and pandas frames for the Model adapter
(:class:`featurelens.models.Model`), without importing either library until a model needs it:
which method a fitted estimator is called through, whether it is a classifier, whether it is fitted.
"""

from __future__ import annotations

import torch

ESTIMATOR_METHODS = ("predict_proba", "decision_function", "predict", "predict_log_proba")


def is_dataframe(x) -> bool:
    """A pandas DataFrame, recognised without importing pandas."""
    return type(x).__module__.split(".")[0] == "pandas" and hasattr(x, "columns") and hasattr(x, "dtypes")


def is_classifier_model(estimator) -> bool:
    try:
        from sklearn.base import is_classifier

        if is_classifier(estimator):
            return True
    except Exception:  # no scikit-learn, or an object its tags do not understand
        pass
    return getattr(estimator, "_estimator_type", None) == "classifier" or hasattr(estimator, "classes_")


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
    if isinstance(model, torch.nn.Module):
        return None, None
    owner = getattr(model, "__self__", None)
    if (
        owner is not None
        and not isinstance(owner, torch.nn.Module)
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
