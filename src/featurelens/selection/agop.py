"""Feature selection by the diagonal of the Average Gradient Outer Product (AGOP).

Radhakrishnan, Beaglehole, Pandit & Belkin, "Mechanism for feature learning in neural networks and
backpropagation-free machine learning models", Science 2024, arXiv 2212.13881: the AGOP
``M = (1/n) sum_i J(x_i)^T J(x_i)`` of a trained predictor concentrates on the input directions the
predictor uses; its diagonal ``M_jj = (1/n) sum_i ||d f(x_i) / d x_j||^2`` scores input ``j``.
"""

from __future__ import annotations

import numpy as np
from featurelens._optional import torch
from sklearn.base import clone
from sklearn.utils.multiclass import type_of_target

from .._random import parse_seed
from .._budgets import check_budget
from ._base import ScoreSelector

__all__ = ["AGOPSelector"]


class AGOPSelector(ScoreSelector):
    """Select the ``k`` inputs with the largest AGOP diagonal of a Recursive Feature Machine or of
    a given trained network.

    ``scores_[j] = (1/n) sum_i sum_o (d f_o(x~_i) / d x~_j)^2`` over the rows of ``X`` in
    standardised coordinates ``x~ = (x - mean) / std`` (so the score does not depend on each
    feature's units; a constant feature is only centred and scores 0 for an RFM). Higher = more
    important.

    * ``estimator=None`` (default): a :class:`featurelens.learning.RFMClassifier` (class labels) or
      :class:`featurelens.learning.RFMRegressor` (continuous y) with ``diag=True`` (a diagonal
      Mahalanobis metric, d numbers, enough to rank features and robust on small n) is fitted on
      the standardised X; the scores are the AGOP diagonal of the fitted predictor (its
      ``gradients`` over the rows of X; all outputs). Radhakrishnan et al., Science 2024,
      arXiv 2212.13881.
    * ``estimator`` an unfitted RFM (or any estimator with ``gradients(X) -> (n, outputs, d)``, or
      with ``feature_importances_``): it is cloned and fitted on the standardised X the same way.
    * ``estimator`` a trained ``torch.nn.Module``: nothing is trained; the AGOP diagonal comes from
      :func:`featurelens.learning.agop` (``target="all"``: ``J^T J`` over every output) on X as given
      (the network's own input scale), multiplied by ``var(x_j)``, which is the AGOP diagonal with
      respect to the standardised inputs (chain rule).

    Parameters
    ----------
    k
        Number of features to select (None: every feature whose score exceeds the mean score).
    estimator
        None, an unfitted RFM-like estimator, or a trained torch module (see above).
    iters, bandwidth, reg
        Passed to the default RFM (number of AGOP updates, kernel bandwidth, ridge).
    seed
        None, an int or a ``numpy.random.Generator``; seeds the default RFM's validation split.

    Attributes
    ----------
    estimator_ : the fitted estimator (or the given network)
    mean_, scale_ : ndarray (d,), the standardisation
    """

    def __init__(self, k=None, estimator=None, iters: int = 5, bandwidth: float = 10.0, reg: float = 1e-3, seed: int = 0):
        self.k = k
        self.estimator = estimator
        self.iters = iters
        self.bandwidth = bandwidth
        self.reg = reg
        self.seed = seed

    def _uses_y(self) -> bool:
        return not isinstance(self.estimator, torch.nn.Module)  # a trained network needs no y

    def _default_support(self, scores):
        return scores > scores.mean()

    def _compute_scores(self, X, y):
        est = self.estimator
        self.mean_ = X.mean(axis=0)
        std = X.std(axis=0)
        self.scale_ = np.where(std > 0, std, 1.0)
        if isinstance(est, torch.nn.Module):
            from ..learning import agop

            self.estimator_ = est
            diag = np.asarray(agop(est, X.astype(np.float32) if _is_float32(est) else X, target="all", diag=True))
            # d f / d x~_j = std_j * d f / d x_j, so the standardised-coordinate AGOP is diag * var.
            return diag * std**2
        if est is not None and not hasattr(est, "fit"):
            raise TypeError(
                f"estimator must be None, an unfitted estimator with fit (e.g. an RFM) or a trained "
                f"torch.nn.Module; got {type(est).__name__}"
            )
        Xs = (X - self.mean_) / self.scale_
        if est is None:
            from ..learning import RFMClassifier, RFMRegressor

            check_budget(self.iters, "iters", low=0, per=X.shape[0], unit="row passes",
                         what=f"({X.shape[0]} rows per iteration)")
            parse_seed(self.seed)
            kind = type_of_target(y, input_name="y", raise_unknown=True)
            if kind in ("binary", "multiclass"):
                cls = RFMClassifier
            elif kind == "continuous":
                cls = RFMRegressor
            else:
                raise ValueError(f"y must be a 1-D vector of class labels or of real values; got type_of_target(y)={kind!r}")
            model = cls(bandwidth=self.bandwidth, reg=self.reg, iters=self.iters, diag=True, seed=self.seed)
        else:
            model = clone(est)
        if type_of_target(y) == "continuous":
            y = np.asarray(y, dtype=np.float64)
        model.fit(Xs, y)
        self.estimator_ = model
        if hasattr(model, "gradients"):
            G = np.asarray(model.gradients(Xs), dtype=np.float64)
            G = G.reshape(G.shape[0], -1, G.shape[-1])
            return (G**2).sum(axis=1).mean(axis=0)
        if hasattr(model, "feature_importances_"):
            return np.asarray(model.feature_importances_, dtype=np.float64)
        raise TypeError(
            f"the fitted {type(model).__name__} has neither gradients(X) nor feature_importances_; "
            "expected an RFM-like estimator"
        )


def _is_float32(module: torch.nn.Module) -> bool:
    p = next(iter(module.parameters()), None)
    return p is not None and p.dtype == torch.float32
