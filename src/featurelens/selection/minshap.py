"""MinShap feature selection: the minimum, over sampled permutations, of each feature's marginal
contribution to a fitted model's held-out loss, with per-permutation tests combined into p-values.

Zheng & Raskutti, "MinShap: A Modified Shapley Value Approach for Feature Selection", 2026,
arXiv 2604.15107. No code was released; the procedure here is reconstructed from the abstract (see
:class:`MinShapSelector` for what is reconstructed).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats
from sklearn.base import clone, is_classifier
from sklearn.model_selection import train_test_split
from sklearn.utils.multiclass import type_of_target

from .._batching import chunks
from .._random import numpy_rng, parse_seed, root_seed
from .._validation import check_executor, check_float, check_int, check_option
from .._budgets import check_budget
from ..approximators import antithetic_permutations
from ._base import ScoreSelector

__all__ = ["MinShapSelector"]

_COMBINE = ("max", "bonferroni", "fisher", "stouffer")


def _permutation_deltas(game, perms: np.ndarray):
    """Marginal contributions along orderings: ``deltas[p, j] = v(S_p(j) + j) - v(S_p(j))``.

    ``game(masks (q, d) bool) -> values (q,)``. Each distinct coalition of the chains is evaluated
    once (the empty and the full coalition are shared by every ordering). Returns ``(deltas (P, d),
    values (P, d + 1), unique coalitions, inverse index into them, position)`` where ``values[p, t]``
    is the value of the first ``t`` features of ordering ``p`` and ``position[p, j]`` is where
    feature ``j`` stands in it.
    """
    P, d = perms.shape
    position = np.argsort(perms, axis=1)
    chain = position[:, None, :] < np.arange(d + 1)[None, :, None]  # (P, d + 1, d)
    unique, inverse = np.unique(chain.reshape(-1, d), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    values = np.asarray(game(unique), dtype=np.float64)[inverse].reshape(P, d + 1)
    gains = np.diff(values, axis=1)  # gains[p, t]: contribution of the feature at position t
    return np.take_along_axis(gains, position, axis=1), values, unique, inverse, position


#: Most predicted rows (coalitions x held-out rows) per chunk: bounds memory whatever the held-out size.
_MAX_CHUNK_ROWS = 1 << 17
#: Fewest predicted rows per chunk when the coalitions are split for parallel workers: a predict call
#: of this many rows dwarfs its fixed cost (a forest's per-tree loop), so the split costs the serial
#: path little.
_MIN_CHUNK_ROWS = 1 << 14
#: Chunks the coalitions are split into at most (when the rows allow): enough for a few workers.
_MAX_CHUNKS = 24


def _chunk_size(q: int, m: int) -> int:
    """Coalitions per chunk for ``q`` coalitions of ``m`` held-out rows each. It depends on the
    data only, never on the executor, so serial and parallel runs predict the same batches (bitwise
    equal scores for any estimator, even one whose products depend on the batch)."""
    m = max(m, 1)
    most = max(1, _MAX_CHUNK_ROWS // m)
    least = max(1, _MIN_CHUNK_ROWS // m)
    return max(1, min(most, max(least, math.ceil(q / _MAX_CHUNKS))))


def _per_row_loss(task: str, est, X, y):
    """Per-row loss of ``est`` on ``(X, y)``: squared error (regression), log loss
    (``predict_proba``) or 0-1 loss (classification)."""
    if task == "regression":
        return (est.predict(X).astype(np.float64) - y) ** 2
    if hasattr(est, "predict_proba"):
        proba = est.predict_proba(X)
        col = np.searchsorted(est.classes_, y)
        col = np.clip(col, 0, proba.shape[1] - 1)
        hit = est.classes_[col] == y  # a held-out class the model never saw: probability 0
        p = np.where(hit, proba[np.arange(len(y)), col], 0.0)
        return -np.log(np.clip(p, 1e-15, 1.0))
    return (est.predict(X) != y).astype(np.float64)


def _coalition_losses(problem, masks: np.ndarray) -> np.ndarray:
    """Per-row held-out losses ``(q, m)`` of the coalitions ``masks`` (q, d): one predict call. A
    module-level function of ``problem = (task, est, X_te, background, y_te)``, so that it pickles by
    reference and the problem travels to a worker once per call."""
    task, est, X_te, background, y_te = problem
    q, d = masks.shape
    m = X_te.shape[0]
    rows = np.where(masks[:, None, :], X_te[None], background[None]).reshape(-1, d)
    return np.asarray(_per_row_loss(task, est, rows, np.tile(y_te, q)), dtype=np.float64).reshape(q, m)


def _chunk_losses(problem, masks_list) -> list:
    """One task: several consecutive chunks, each its own predict call (the serial path's batches)."""
    return [_coalition_losses(problem, masks) for masks in masks_list]


def _one_sided_paired_pvalues(r: np.ndarray) -> np.ndarray:
    """p-values of the one-sided paired t-test of ``H0: E[r] <= 0`` along the last axis.

    A degenerate row (all differences equal) gets p = 0 when its mean is positive and 1 otherwise:
    a feature whose replacement never changes any prediction cannot be declared relevant."""
    m = r.shape[-1]
    mean = r.mean(axis=-1)
    sd = r.std(axis=-1, ddof=1) if m > 1 else np.zeros_like(mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / (sd / math.sqrt(m))
    p = stats.t.sf(t, df=max(m - 1, 1))
    degenerate = ~(sd > 1e-12 * (np.abs(mean) + 1e-300))
    return np.where(degenerate, np.where(mean > 0, 0.0, 1.0), p)


def combine_pvalues(p: np.ndarray, method: str) -> np.ndarray:
    """Combine per-permutation p-values ``p`` (K, d) into one per feature (d,).

    ``max``: max_k p_k, the intersection-union test of "relevant given every sampled context"
    (valid under any dependence); ``bonferroni``: min(1, K min_k p_k); ``fisher``: chi2 survival of
    -2 sum_k log p_k with 2K degrees of freedom; ``stouffer``: Phi-bar(sum_k Phi-bar^{-1}(p_k) / sqrt K).
    Fisher and Stouffer assume independent tests; the permutations share the data, so they are
    anti-conservative here and are offered for comparison with the paper's variants.
    """
    if method not in _COMBINE:
        raise ValueError(f"combine must be one of {_COMBINE}; got {method!r}")
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-300, 1.0)
    K = p.shape[0]
    if method == "max":
        return p.max(axis=0)
    if method == "bonferroni":
        return np.minimum(1.0, K * p.min(axis=0))
    if method == "fisher":
        return stats.chi2.sf(-2.0 * np.log(p).sum(axis=0), df=2 * K)
    z = stats.norm.isf(np.clip(p, 1e-300, 1 - 1e-16))
    return stats.norm.sf(z.sum(axis=0) / math.sqrt(K))


class MinShapSelector(ScoreSelector):
    """Select the features whose marginal contribution to a fitted model stays positive in every
    sampled context (MinShap; Zheng & Raskutti 2026, arXiv 2604.15107).

    1. Fit ``estimator`` on a training split (``1 - test_size`` of the rows).
    2. The global game on the held-out rows: ``v(S) = -(1/m) sum_i loss(f(x_i,S, b_i,notS), y_i)``,
       where each held-out row ``i`` is paired once with a background row ``b_i`` drawn from the
       training rows, and the features outside ``S`` take ``b_i``'s values (interventional /
       marginal imputation: one draw per row, the same for every coalition, so contributions are
       paired differences). Loss: log loss (``predict_proba``; 0-1 loss without it) for
       classification, squared error for regression. Each distinct coalition is evaluated once (one
       prediction of the held-out rows), here or on ``executor``; ``game_calls_`` counts them.
    3. ``n_permutations`` orderings in antithetic pairs; ``deltas_[p, j] = v(S_p(j) + j) - v(S_p(j))``
       with ``S_p(j)`` the features before ``j`` in ordering ``p``.
    4. ``scores_[j] = min_p deltas_[p, j]`` (MinShap; ``shapley_`` = the mean, the usual Shapley
       estimate). Higher = more important; a feature whose contribution vanishes in some context
       (a dummy, or one whose effect runs only through other features) scores <= 0 (up to noise).
    5. p-values: per (p, j) a one-sided paired t-test over the held-out rows of the per-row loss
       reductions ``loss_i(S) - loss_i(S + j)`` (H0: mean <= 0), combined over permutations by
       ``combine`` (``"max"``, the intersection-union test, by default). ``k=None`` selects the
       features with combined p < ``alpha``; with ``k`` given, the ``k`` highest scores.

    By design MinShap misses features that act only in pure interactions without any marginal
    effect (e.g. ``y = [x_0 x_1 > 0]``): without its partner such a feature contributes nothing, so
    its minimum is 0. Such distributions violate the faithfulness assumption behind the method;
    use :class:`featurelens.selection.SAND` or :class:`featurelens.selection.AGOPSelector` there.

    What comes from the paper's abstract: the score (the minimum, instead of the mean, of a
    feature's marginal contributions over orderings), its motivation (a feature relevant in every
    context, under faithfulness), and the claims (selection accuracy and stability better than
    LOCO, GCM and the Lasso, with type I error control). Reconstructed, not from the paper's text
    (no code or full text was available): the value function (held-out loss with interventional
    imputation rather than refitting), the one-draw background pairing, the per-permutation paired
    t-test as the test of each contribution, the antithetic permutations, and the combination of
    the per-ordering p-values (``combine="max"``, the intersection-union test, by default: valid
    under any dependence between orderings but conservative, so it trades power for type I error;
    the paper's rule is unknown). Its p-value is conditional on the fitted model and the held-out
    split, not a conditional-independence test of the data distribution. A case study of this class
    (``benchmarks/bench_minshap_inference.py``) tests this reconstruction, not necessarily the
    paper's procedure. A spouse of ``y`` (a parent of ``y``'s child, independent of ``y``) is
    invisible to MinShap by construction: it changes the loss only in contexts that contain the
    child, so its minimum is ~0; the case study scores F1 against the parents and children as well
    as against the full Markov blanket.

    Parameters
    ----------
    k
        Number of features to select, or None to select by p-value.
    alpha
        Level of the combined test when ``k`` is None.
    n_permutations
        Number of sampled orderings (the game costs about ``n_permutations * (d - 1) + 2``
        coalitions, each a prediction over the held-out rows).
    estimator
        An unfitted scikit-learn estimator (cloned). Default: ``RandomForestClassifier`` /
        ``RandomForestRegressor`` (100 trees, ``min_samples_leaf=2``, ``n_jobs=1``,
        ``random_state=seed``): it fits interactions and predicts fast, which matters because
        the game predicts about ``n_permutations * d`` times the held-out rows.
    combine
        ``"max"``, ``"bonferroni"``, ``"fisher"`` or ``"stouffer"`` (see ``combine_pvalues`` in this module).
    test_size
        Fraction of the rows held out for the game.
    task
        "auto", "classification" or "regression".
    seed
        None, an int or a ``numpy.random.Generator``; seeds the split, the background pairing, the
        permutations and the default estimator.
    executor
        None (this process), or a :mod:`featurelens.parallel` executor (``ThreadExecutor(4)``,
        ``ProcessExecutor``, ``RayExecutor``, ``DaskExecutor``) on which the coalitions' predictions
        run: the distinct coalitions are cut into the same chunks as without an executor (at most
        2^17 and, where there are enough, at least 2^14 predicted rows each; up to 24 chunks), a few
        chunks per task, and the fitted estimator and held-out rows travel once per fit. Scores,
        p-values and ``game_calls_`` are bitwise those of the serial fit. The estimator is fitted
        here; a process or cluster executor pickles it (scikit-learn estimators pickle).

    Attributes
    ----------
    scores_, shapley_ : ndarray (d,)
    deltas_ : ndarray (n_permutations, d)
    pvalues_ : ndarray (d,)
        The combined p-values.
    pvalues_per_permutation_ : ndarray (n_permutations, d)
    permutations_ : ndarray (n_permutations, d)
    estimator_ : the fitted estimator
    game_calls_ : int
        Coalitions evaluated (each shared coalition, e.g. the empty and the full one, once): one
        prediction of the held-out rows each.
    value_empty_, value_full_ : float
        ``v({})`` and ``v(all features)``; every row of ``deltas_`` sums to their difference.
    """

    def __init__(
        self,
        k=None,
        alpha: float = 0.05,
        n_permutations: int = 20,
        estimator=None,
        combine: str = "max",
        test_size: float = 0.3,
        task: str = "auto",
        seed: int = 0,
        executor=None,
    ):
        self.k = k
        self.alpha = alpha
        self.n_permutations = n_permutations
        self.estimator = estimator
        self.combine = combine
        self.test_size = test_size
        self.task = task
        self.seed = seed
        self.executor = executor

    def _check_params(self):
        check_float(self.alpha, "alpha", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        check_budget(self.n_permutations, "n_permutations", unit="orderings")
        check_option(self.combine, "combine", _COMBINE)
        check_float(self.test_size, "test_size", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        check_option(self.task, "task", ("auto", "classification", "regression"))
        if self.estimator is not None and not hasattr(self.estimator, "fit"):
            raise TypeError(f"estimator must be a scikit-learn estimator with fit; got {type(self.estimator).__name__}")
        parse_seed(self.seed)
        check_executor(self.executor, "executor", rows=True)

    def _resolve_task(self, y) -> str:
        if self.task != "auto":
            return self.task
        if self.estimator is not None:
            return "classification" if is_classifier(self.estimator) else "regression"
        kind = type_of_target(y, input_name="y", raise_unknown=True)
        if kind in ("binary", "multiclass"):
            return "classification"
        if kind == "continuous":
            return "regression"
        raise ValueError(f"y must be a 1-D vector of class labels or of real values; got type_of_target(y)={kind!r}")

    def _make_estimator(self):
        if self.estimator is not None:
            return clone(self.estimator)
        from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

        # A forest rather than gradient boosting: the game predicts ~n_permutations * d times the
        # held-out rows, and a 100-tree forest predicts 10-20x faster than a 100-round boosted
        # model on multiclass data (one tree per class per round); n_jobs=1 avoids
        # oversubscription when several fits run side by side.
        cls = RandomForestClassifier if self.task_ == "classification" else RandomForestRegressor
        return cls(n_estimators=100, min_samples_leaf=2, n_jobs=1, random_state=self._state)

    def _per_row_loss(self, est, X, y):
        return _per_row_loss(self.task_, est, X, y)

    def _losses(self, problem, unique: np.ndarray) -> np.ndarray:
        """Per-row losses ``(q, m)`` of the distinct coalitions ``unique``, in chunks fixed by the
        data (:func:`_chunk_size`), evaluated here or on ``self.executor`` (a few consecutive chunks
        per task, results in order)."""
        q, m = unique.shape[0], problem[2].shape[0]
        bounds = list(chunks(q, _chunk_size(q, m)))
        executor = self.executor
        if executor is None or not bounds:
            parts = [_coalition_losses(problem, unique[b]) for b in bounds]
        else:
            n_tasks = max(1, min(len(bounds), int(getattr(executor, "n_workers", 1))
                                 * int(getattr(executor, "tasks_per_worker", 3))))
            groups = [g for g in np.array_split(np.arange(len(bounds)), n_tasks) if len(g)]
            items = [[unique[bounds[i]] for i in g] for g in groups]
            parts = [p for task in executor.map(_chunk_losses, items, shared=problem) for p in task]
        return np.concatenate(parts) if parts else np.zeros((0, m))

    def _compute_scores(self, X, y):
        self._check_params()
        n, d = X.shape
        self.task_ = self._resolve_task(y)
        seed = parse_seed(self.seed)
        # scikit-learn's split and forest take an int (not a numpy Generator): an int seed is used
        # as it is; a Generator (or None) gives one int drawn from its stream.
        self._state = root_seed(seed, high=2**31 - 1)
        rng = numpy_rng(seed)
        stratify = None
        if self.task_ == "classification":
            _, counts = np.unique(y, return_counts=True)
            n_test = math.ceil(self.test_size * n)
            if counts.min() >= 2 and n_test >= len(counts) and n - n_test >= len(counts):
                stratify = y
        if n < 4:
            raise ValueError(f"X has n_samples={n} rows; MinShapSelector needs at least 4 (a training and a held-out split)")
        X_tr, X_te, y_tr, y_te = train_test_split(
            X, y, test_size=self.test_size, random_state=self._state, stratify=stratify
        )
        est = self._make_estimator().fit(X_tr, y_tr)
        self.estimator_ = est
        if self.task_ == "regression":
            y_te = y_te.astype(np.float64)
        background = X_tr[rng.integers(0, X_tr.shape[0], size=X_te.shape[0])]
        m = X_te.shape[0]
        problem = (self.task_, est, X_te, background, y_te)
        unique_losses = {}

        def game(unique: np.ndarray) -> np.ndarray:
            # The global game's values are the mean held-out losses; the per-row losses are kept
            # for the tests below.
            unique_losses["losses"] = self._losses(problem, unique)
            return -unique_losses["losses"].mean(axis=1)

        P = int(self.n_permutations)
        perms = antithetic_permutations(P, d, rng)
        deltas, values, unique, inverse, position = _permutation_deltas(game, perms)
        if not np.isfinite(values).all():
            raise ValueError("the estimator's held-out losses are NaN or inf for some coalitions; expected finite "
                             "predictions (check the estimator and the data)")
        losses = unique_losses["losses"][inverse].reshape(P, d + 1, m)
        reductions = losses[:, :-1, :] - losses[:, 1:, :]  # per-row loss drop at position t
        p_pos = _one_sided_paired_pvalues(reductions)  # (P, d) by position
        p_feat = np.take_along_axis(p_pos, position, axis=1)

        self.permutations_ = perms
        self.deltas_ = deltas
        self.shapley_ = deltas.mean(axis=0)
        self.pvalues_per_permutation_ = p_feat
        self.pvalues_ = combine_pvalues(p_feat, self.combine)
        self.game_calls_ = int(unique.shape[0])
        self.value_empty_, self.value_full_ = float(values[0, 0]), float(values[0, -1])
        return deltas.min(axis=0)

    def _default_support(self, scores):
        return self.pvalues_ < self.alpha
