"""Raw LightGBM and XGBoost Boosters as scikit-learn-style estimators.

``lgb.train`` and ``xgb.train`` return a ``lightgbm.Booster`` / ``xgboost.Booster``, and a saved model
file (LightGBM text from ``booster.save_model``, XGBoost JSON or UBJSON from ``save_model``) loads
into one. A Booster has no ``predict_proba`` and no ``n_features_in_``, and XGBoost's ``predict``
takes a ``DMatrix``, so the :class:`~featurelens.models.Model` adapter, the explainer ``tree_shap``
and the command line see a Booster through :func:`booster_estimator`: a
:class:`BoosterClassifier` (binary logistic and multi-class objectives) or a
:class:`BoosterRegressor` (every other objective) that calls the Booster as the library's own
``predict`` does, reads nothing but the Booster's documented dumps, and keeps the Booster itself
(``.booster``) for the trees (:func:`featurelens.explainers.tree.ensemble.build_ensemble`).

Outputs, in the units the trees sum to (what ``tree_shap`` explains by default):

- ``BoosterClassifier``, binary (LightGBM ``binary`` / ``cross_entropy`` with ``sigmoid:1``, XGBoost
  ``binary:logistic`` / ``reg:logistic``): ``decision_function`` is the log-odds margin
  (``raw_score=True`` / ``output_margin=True``), ``predict_proba`` the library's own probability
  of class 1 beside one minus it, ``classes_ = [0, 1]``;
- ``BoosterClassifier``, k classes (LightGBM ``multiclass`` / ``multiclassova``, XGBoost
  ``multi:softprob`` / ``multi:softmax``): ``decision_function`` the k margins, ``predict_proba``
  their softmax (LightGBM: the library's own ``predict``, which is the softmax for ``multiclass``
  and one sigmoid per class for ``multiclassova``), ``classes_ = [0, ..., k - 1]``;
- ``BoosterRegressor``: ``predict`` is the raw margin (``raw_score=True`` / ``output_margin=True``):
  the prediction itself for squared-error objectives, its logarithm for Poisson, gamma and
  Tweedie objectives, the ranking score for ranking objectives.

Rows are numbers (category codes as numbers, as the Booster's own ``predict`` takes them); NaN is
a missing value.
"""

from __future__ import annotations

import json

import numpy as np

__all__ = ["RawBooster", "BoosterClassifier", "BoosterRegressor", "booster_estimator", "is_raw_booster"]

_LGBM_BINARY = ("binary", "cross_entropy", "xentropy")
_LGBM_MULTI = ("multiclass", "softmax", "multiclassova", "multiclass_ova", "ova", "ovr")
_XGB_BINARY = ("binary:logistic", "reg:logistic")
_XGB_MULTI = ("multi:softprob", "multi:softmax")


def is_raw_booster(model) -> bool:
    """Whether ``model`` is a ``lightgbm.Booster`` or an ``xgboost.Booster`` (not a wrapper).

    Parameters
    ----------
    model : object
        Anything.

    Returns
    -------
    bool
        True for the two libraries' ``Booster`` classes.
    """
    kind = type(model)
    return kind.__name__ == "Booster" and kind.__module__.split(".")[0] in ("lightgbm", "xgboost")


def _library(booster) -> str:
    return type(booster).__module__.split(".")[0]


def _objective(booster) -> tuple[str, int, int]:
    """``(objective, classes, features)`` of a raw Booster, from its documented dumps: LightGBM's
    ``dump_model`` of one iteration (``objective`` as ``"binary sigmoid:1"``; the class count
    ``num_tree_per_iteration``), XGBoost's ``save_config`` (``objective.name``, ``num_class``)."""
    if _library(booster) == "lightgbm":
        dump = booster.dump_model(num_iteration=1)
        words = str(dump.get("objective", "")).split()
        objective = words[0] if words else ""
        sigmoid = [w.split(":", 1)[1] for w in words[1:] if w.startswith("sigmoid:")]
        if objective in _LGBM_BINARY and sigmoid not in ([], ["1"], ["1.0"]):
            objective += " (sigmoid:" + sigmoid[0] + ")"  # not the plain logistic link
        return objective, int(dump.get("num_tree_per_iteration", 1)), int(dump["max_feature_idx"]) + 1
    learner = json.loads(booster.save_config())["learner"]
    params = learner["learner_model_param"]
    return (learner["objective"]["name"], max(1, int(params.get("num_class", "0"))),
            int(params["num_feature"]))


class RawBooster:
    """A raw LightGBM / XGBoost Booster as a scikit-learn-style estimator (see the module docstring).

    Parameters
    ----------
    booster : lightgbm.Booster or xgboost.Booster
        The trained Booster (``lgb.train`` / ``xgb.train``, or a loaded model file).

    Attributes
    ----------
    booster : lightgbm.Booster or xgboost.Booster
        The Booster itself (its trees are what ``tree_shap`` reads).
    library : str
        ``"lightgbm"`` or ``"xgboost"``.
    objective : str
        The Booster's objective (``"binary"``, ``"multi:softprob"``, ``"regression"``, ...).
    n_features_in_ : int
        The number of features the Booster takes.
    """

    def __init__(self, booster):
        if not is_raw_booster(booster):
            raise TypeError(f"booster must be a lightgbm.Booster or an xgboost.Booster; got "
                            f"{type(booster).__module__}.{type(booster).__name__}")
        self.booster = booster
        self.library = _library(booster)
        self.objective, self._classes, self.n_features_in_ = _objective(booster)

    def _rows(self, X):
        dtypes = getattr(X, "dtypes", None)
        if dtypes is not None and getattr(X, "ndim", 0) == 2:
            odd = [str(c) for c, dt in zip(X.columns, dtypes) if getattr(dt, "kind", "O") not in "biuf"]
            if odd:
                raise TypeError(f"X column(s) {odd[:5]} are not numbers; a raw {self.library} Booster "
                                "takes numbers (category codes as numbers, as booster.predict takes "
                                "them): give their codes, or fit the library's scikit-learn wrapper")
        try:
            arr = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise TypeError(f"X must hold numbers (a raw {self.library} Booster takes numbers, category "
                            f"codes as numbers); got {type(X).__name__} that does not convert ({err})") from err
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have shape (n_rows, {self.n_features_in_}) (the Booster takes "
                             f"{self.n_features_in_} features); got shape {arr.shape}")
        return arr

    def _margin(self, X) -> np.ndarray:
        """The raw margin: (n,) for one output, (n, k) for k classes."""
        arr = self._rows(X)
        if self.library == "lightgbm":
            out = self.booster.predict(arr, raw_score=True)
        else:
            out = self.booster.predict(self._dmatrix(arr), output_margin=True)
        return np.asarray(out, dtype=np.float64)

    def _dmatrix(self, arr):
        """XGBoost's input for rows of numbers, with the Booster's feature names and types (a
        Booster trained on named or categorical columns refuses a DMatrix without them)."""
        import xgboost

        types = self.booster.feature_types
        return xgboost.DMatrix(arr, missing=np.nan, feature_names=self.booster.feature_names,
                               feature_types=types, enable_categorical=bool(types) and "c" in types)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.library}.Booster, objective={self.objective!r})"


class BoosterClassifier(RawBooster):
    """A raw Booster with a binary logistic or multi-class objective, as a classifier (the module
    docstring says what each method returns).

    Parameters
    ----------
    booster : lightgbm.Booster or xgboost.Booster
        The trained Booster.
    """

    _estimator_type = "classifier"

    @property
    def classes_(self) -> np.ndarray:
        """The class indices, ``[0, 1]`` for binary objectives, ``0 .. k - 1`` for k classes."""
        return np.arange(max(2, self._classes))

    def decision_function(self, X) -> np.ndarray:
        """The margin: the log-odds of class 1 (n,) for binary objectives, (n, k) for k classes.

        Parameters
        ----------
        X : array-like, (n, d)
            Rows of numbers (NaN: missing).

        Returns
        -------
        ndarray of float64
        """
        return self._margin(X)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, (n, 2) or (n, k): the library's own probabilities (XGBoost
        ``multi:softmax``, whose ``predict`` gives labels: the softmax of the margins).

        Parameters
        ----------
        X : array-like, (n, d)
            Rows of numbers (NaN: missing).

        Returns
        -------
        ndarray of float64
        """
        arr = self._rows(X)
        if self.library == "lightgbm":
            p = np.asarray(self.booster.predict(arr), dtype=np.float64)
        elif self.objective == "multi:softmax":
            z = self._margin(arr)
            z = np.exp(z - z.max(axis=1, keepdims=True))
            p = z / z.sum(axis=1, keepdims=True)
        else:
            p = np.asarray(self.booster.predict(self._dmatrix(arr)), dtype=np.float64)
        if p.ndim == 1:
            p = np.column_stack([1.0 - p, p])
        return p

    def predict(self, X) -> np.ndarray:
        """The most probable class of each row.

        Parameters
        ----------
        X : array-like, (n, d)
            Rows of numbers (NaN: missing).

        Returns
        -------
        ndarray of int64, (n,)
        """
        return self.predict_proba(X).argmax(axis=1)


class BoosterRegressor(RawBooster):
    """A raw Booster with a regression, ranking or other objective, as a regressor whose
    ``predict`` is the raw margin.

    Parameters
    ----------
    booster : lightgbm.Booster or xgboost.Booster
        The trained Booster.
    """

    _estimator_type = "regressor"

    def predict(self, X) -> np.ndarray:
        """The raw margin (``raw_score=True`` / ``output_margin=True``), (n,).

        Parameters
        ----------
        X : array-like, (n, d)
            Rows of numbers (NaN: missing).

        Returns
        -------
        ndarray of float64
        """
        return self._margin(X)


def booster_estimator(booster) -> RawBooster:
    """A raw LightGBM / XGBoost Booster as a :class:`BoosterClassifier` or :class:`BoosterRegressor`.

    Parameters
    ----------
    booster : lightgbm.Booster or xgboost.Booster
        What ``lgb.train`` / ``xgb.train`` return or a saved model file loads into.

    Returns
    -------
    RawBooster
        A classifier for binary logistic and multi-class objectives, else a regressor (see the
        module docstring for the outputs).

    Raises
    ------
    TypeError
        ``booster`` is not a raw Booster.
    """
    if not is_raw_booster(booster):
        raise TypeError(f"booster must be a lightgbm.Booster or an xgboost.Booster; got "
                        f"{type(booster).__module__}.{type(booster).__name__}")
    objective, _, _ = _objective(booster)
    library = _library(booster)
    classifier = (objective in (_LGBM_BINARY + _LGBM_MULTI) if library == "lightgbm"
                  else objective in (_XGB_BINARY + _XGB_MULTI))
    return (BoosterClassifier if classifier else BoosterRegressor)(booster)
