"""The one base class of featurelens's selectors.

A selector computes one score per feature (higher = more important), ranks the features by it and
keeps the ``k`` best. Subclasses implement :meth:`ScoreSelector._compute_scores` and, when they
choose a number of features themselves (``k=None``), :meth:`ScoreSelector._default_support`.

The base class gives every selector the same behaviour: scikit-learn's ``SelectorMixin`` surface
(``get_support``, ``transform``, ``inverse_transform``, ``get_feature_names_out``), numpy arrays
or pandas DataFrames in (a DataFrame in gives a DataFrame out of ``transform``), clear errors
for NaN, a ``y`` of the wrong length, a ``k`` larger than the number of features, fewer rows than
the selector can learn from (one row) and a supervised target with a single value, and a
:class:`DegenerateDataWarning` when the data cannot support the selection it returns (every
feature scored the same, or ``k`` larger than the number of non-constant columns): the selection
is then arbitrary among tied features, which a user must not mistake for a finding.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import _num_samples, check_is_fitted, validate_data

from .._validation import check_int

__all__ = ["DegenerateDataWarning", "ScoreSelector", "rank_scores", "top_k_mask"]


class DegenerateDataWarning(UserWarning):
    """The data cannot support the selection a selector returned: every feature scored the same
    (e.g. all columns constant), or ``k`` exceeds the number of columns that vary, so part of the
    selection is an arbitrary pick among tied features (the lowest column indices)."""


def rank_scores(scores: np.ndarray) -> np.ndarray:
    """Ranks 1..d with 1 for the highest score; ties keep the lower feature index first."""
    order = np.argsort(-np.asarray(scores, dtype=float), kind="stable")
    ranking = np.empty(len(order), dtype=int)
    ranking[order] = np.arange(1, len(order) + 1)
    return ranking


def top_k_mask(scores: np.ndarray, k: int) -> np.ndarray:
    """Boolean mask of the k highest scores (exactly k, ties by lower index)."""
    mask = np.zeros(len(scores), dtype=bool)
    mask[np.argsort(-np.asarray(scores, dtype=float), kind="stable")[:k]] = True
    return mask


class ScoreSelector(SelectorMixin, BaseEstimator):
    """Base class: subclasses set ``_requires_y`` and implement ``_compute_scores(X, y)``.

    Learned state after ``fit``: ``scores_`` (float, higher = more important), ``ranking_`` (1 =
    best), ``support_`` (bool mask), ``n_features_in_`` and, for DataFrames, ``feature_names_in_``.
    """

    #: Whether ``fit`` needs ``y`` (False for unsupervised selectors, which ignore it).
    _requires_y = True
    #: Fewest rows ``fit`` accepts: one row has no spread, so no feature can be told from another.
    _min_samples = 2

    # -- to implement -------------------------------------------------------------------------
    def _compute_scores(self, X: np.ndarray, y: np.ndarray | None) -> np.ndarray:
        raise NotImplementedError

    def _uses_y(self) -> bool:
        """Whether this fit learns from ``y`` (a selector that scores a given trained model does not)."""
        return self._requires_y

    def _default_support(self, scores: np.ndarray) -> np.ndarray:
        """The selection when ``k`` is None; by default every feature with a positive score."""
        return scores > 0

    # -- shared machinery ---------------------------------------------------------------------
    def _check_k(self, n_features: int) -> None:
        k = check_int(getattr(self, "k", None), "k", low=1, allow_none=True)
        if k is not None and k > n_features:
            raise ValueError(
                f"k={k} is larger than the number of features of X ({n_features}); "
                f"expected 1 <= k <= {n_features}"
            )

    def _check_y_varies(self, y: np.ndarray) -> None:
        # A target with one value leaves nothing to predict: every feature is equally useless, and
        # any selection would be arbitrary (scikit-learn's classifiers refuse one class likewise).
        if not self._uses_y():
            return
        values = np.unique(y) if y.dtype.kind != "O" else np.unique(y.astype(str))
        if len(values) < 2:
            raise ValueError(
                f"y holds a single value ({np.asarray(values[0]).tolist()!r}) in all {len(y)} rows; {type(self).__name__} needs "
                "at least 2 distinct target values (2 classes, or a varying regression target)"
            )

    def _warn_if_degenerate(self, X: np.ndarray, scores: np.ndarray, support: np.ndarray) -> None:
        name = type(self).__name__
        n_varying = int((np.ptp(X, axis=0) > 0).sum())
        n_selected, d = int(support.sum()), X.shape[1]
        if n_varying == 0:
            warnings.warn(
                f"{name}: every column of X is constant, so no feature carries information"
                + (f"; the {n_selected} selected feature(s) are an arbitrary pick (the lowest column indices)"
                   if n_selected else ""),
                DegenerateDataWarning,
                stacklevel=3,
            )
        elif n_selected > n_varying:
            warnings.warn(
                f"{name}: {n_selected} features selected but only {n_varying} of the {d} columns of X "
                f"vary; the other {n_selected - n_varying} selected are constant columns, an arbitrary "
                "pick among features that carry no information",
                DegenerateDataWarning,
                stacklevel=3,
            )
        elif 0 < n_selected < d and np.ptp(scores) == 0:
            warnings.warn(
                f"{name}: every feature got the same score ({scores[0]:.6g}); the {n_selected} selected "
                "are an arbitrary pick (the lowest column indices)",
                DegenerateDataWarning,
                stacklevel=3,
            )

    def _validate_fit_input(self, X, y):
        if self._requires_y:
            if y is None:
                raise ValueError(
                    f"{type(self).__name__} is supervised and requires y to be passed, but the target y is None"
                )
            try:  # _num_samples also reads array-likes without __len__ (sklearn's _NotAnArray)
                n_rows, y_len = _num_samples(X), _num_samples(y)
            except TypeError:
                n_rows, y_len = None, None
            if y_len is not None and n_rows is not None and y_len != n_rows:
                raise ValueError(
                    f"y has {y_len} entries but X has {n_rows} rows; expected one target per row of X"
                )
            X, y = validate_data(
                self, X, y, dtype=np.float64, y_numeric=False, ensure_min_samples=self._min_samples
            )
            self._check_y_varies(y)
            return X, y
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=self._min_samples)
        return X, None

    def fit(self, X, y=None):
        """Score the features of ``X`` (and ``y`` for supervised selectors) and select."""
        X, y = self._validate_fit_input(X, y)
        self._check_k(X.shape[1])
        scores = np.asarray(self._compute_scores(X, y), dtype=float)
        if scores.shape != (X.shape[1],):
            raise RuntimeError(f"{type(self).__name__} produced scores of shape {scores.shape}")
        self.scores_ = scores
        self.ranking_ = rank_scores(scores)
        k = getattr(self, "k", None)
        self.support_ = top_k_mask(scores, k) if k is not None else np.asarray(self._default_support(scores), bool)
        self._warn_if_degenerate(X, scores, self.support_)
        return self

    def _get_support_mask(self):
        check_is_fitted(self, "support_")
        return self.support_

    def transform(self, X):
        """Keep the selected columns; a DataFrame in gives a DataFrame with those columns out."""
        check_is_fitted(self, "support_")
        if hasattr(X, "iloc") and hasattr(X, "columns"):
            validate_data(self, X, reset=False, dtype=None, ensure_all_finite="allow-nan")
            return X.iloc[:, np.flatnonzero(self.support_)]
        return super().transform(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = self._requires_y
        return tags
