"""i-IF-Learn: unsupervised, iterative selection of the influential features and clustering.

Ma, Wang & Fan, "i-IF-Learn: Iterative Feature Selection and Unsupervised Learning for
High-Dimensional Complex Data", AISTATS 2026, arXiv 2603.24025 (algorithmic details as in the
authors' public code; deviations are named in :class:`IIFLearn`).

Only a few of many features ("influential features") carry the cluster structure. Starting from
IF-PCA (Jin & Wang, Annals of Statistics 2016, arXiv 1407.5241: Kolmogorov-Smirnov screening of
each standardised feature against N(0, 1), Higher-Criticism threshold, PCA, k-means), each round

1. scores every feature by the ANOVA F statistic against the current pseudo-labels (p-value
   ``fp_j``) and by its KS statistic (p-value ``pks_j``, label-free);
2. measures how much the pseudo-labels can be trusted: the F statistics of the selected features
   are compared with those of random feature subsets that generated their own k-means labels (a
   selection-bias-aware null); a Higher-Criticism maximum over those empirical p-values, mapped
   through its Gumbel limit, gives ``w1`` in (0, 1) and the weight ``w = 1 - (1 - w1) / (1.6 - w1)``
   in [0.375, 1];
3. combines both signals (Stouffer) ``z_j = (w Phi^-1(fp_j) + (1 - w) Phi^-1(pks_j)) /
   sqrt(w^2 + (1 - w)^2)`` (small = influential) and keeps the ``k`` smallest (or the HCT count);
4. embeds the kept features (PCA or Laplacian eigenmaps) and runs k-means for new pseudo-labels;

until fewer than ``tol`` of the kept features are new.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats
from scipy.special import ndtr, ndtri_exp

from .._batching import rows_for_bytes
from .._random import numpy_rng, parse_seed
from .._validation import check_bool, check_float, check_int, check_option
from .._budgets import check_budget, max_evaluations
from ._base import ScoreSelector, top_k_mask

__all__ = ["IIFLearn", "anova_f", "hc_threshold", "ks_statistics"]

#: Fewest non-constant features for the empirical-null recalibration: it assumes most features
#: are null, which is meaningless for a handful of columns.
_MIN_FEATURES_EMPIRICAL_NULL = 10
#: One-sided p-values are kept below 1 - 1e-12 so that Phi^-1 stays finite (z <= 7.03).
_LOG_P_MAX = math.log1p(-1e-12)


def _standardize(X: np.ndarray):
    """Columns centred and divided by their population standard deviation; constant columns 0."""
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    varying = std > 0
    Z = np.zeros_like(X, dtype=np.float64)
    Z[:, varying] = (X[:, varying] - mean[varying]) / std[varying]
    return Z, varying


def ks_statistics(Z: np.ndarray) -> np.ndarray:
    """Kolmogorov-Smirnov distance of each column of ``Z`` (n, p) to N(0, 1):
    ``D_j = max_i max(i/n - Phi(z_(i)j), Phi(z_(i)j) - (i-1)/n)`` over the sorted column."""
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2 or Z.shape[0] < 1:
        raise ValueError(f"Z must be a 2-D array with at least one row; got shape {Z.shape}")
    n = Z.shape[0]
    u = ndtr(np.sort(Z, axis=0))
    i = np.arange(1, n + 1, dtype=np.float64)[:, None]
    return np.maximum((i / n - u).max(axis=0), (u - (i - 1) / n).max(axis=0))


def _ks_null(n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    """KS statistics of ``reps`` standardised N(0, 1) samples of size n, sorted (the null of the
    KS statistic of a standardised feature; standardising changes it from Kolmogorov's law)."""
    out = np.empty(reps)
    rows = rows_for_bytes(8 * 3 * n, max_rows=reps)
    for start in range(0, reps, rows):
        stop = min(start + rows, reps)
        G = rng.standard_normal((n, stop - start))
        G = (G - G.mean(axis=0)) / G.std(axis=0)
        out[start:stop] = ks_statistics(G)
    return np.sort(out)


def _upper_pvalues(stat: np.ndarray, null_sorted: np.ndarray) -> np.ndarray:
    """Empirical upper-tail p-values ``(1 + #{null >= stat}) / (1 + N)`` (never 0)."""
    N = len(null_sorted)
    count = N - np.searchsorted(null_sorted, stat, side="left")
    return (1.0 + count) / (1.0 + N)


def anova_f(Z: np.ndarray, labels: np.ndarray):
    """One-way ANOVA F statistic of every column of ``Z`` against ``labels``.

    ``F_j = [sum_g n_g (m_gj - m_j)^2 / (G - 1)] / [sum_i (z_ij - m_{g(i)j})^2 / (n - G)]`` over the
    G groups present. Returns ``(F, df1, df2)``; F is 0 where the between-group sum is 0 (a
    constant column) and ``inf`` where only the within-group sum is 0. With fewer than two groups
    (or n = G) there is no test: F is all 0 and df1 or df2 is 0."""
    Z = np.asarray(Z, dtype=np.float64)
    labels = np.asarray(labels)
    _, codes = np.unique(labels, return_inverse=True)
    counts = np.bincount(codes)
    n, G = len(codes), len(counts)
    df1, df2 = G - 1, n - G
    if df1 < 1 or df2 < 1:
        return np.zeros(Z.shape[1]), df1, df2
    sums = np.zeros((G, Z.shape[1]))
    np.add.at(sums, codes, Z)
    means = sums / counts[:, None]
    grand = Z.mean(axis=0)
    between = (counts[:, None] * (means - grand) ** 2).sum(axis=0)
    within = ((Z - means[codes]) ** 2).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        F = (between / df1) / (within / df2)
    F[between <= 0] = 0.0
    return F, df1, df2


def hc_threshold(pvalues: np.ndarray, n: int) -> int:
    """The Higher-Criticism threshold of IF-PCA (Jin & Wang 2016, arXiv 1407.5241): how many of the
    smallest p-values to keep.

    ``HC_j = sqrt(p) (j/p - pi_(j)) / sqrt(max(sqrt(n) (j/p - pi_(j)), 0) + j/p)``, maximised over
    ``j < p/2`` with ``pi_(j) > log(p)/p``; when no j qualifies (few features, or every p-value tiny)
    the maximum is taken over ``1 <= j <= max(1, p // 2)``. Returns the maximising j (>= 1)."""
    pi = np.sort(np.asarray(pvalues, dtype=np.float64))
    p = len(pi)
    if p == 0:
        raise ValueError("pvalues is empty; expected at least one p-value")
    j = np.arange(1, p + 1)
    gap = j / p - pi
    hc = math.sqrt(p) * gap / np.sqrt(np.maximum(math.sqrt(n) * gap, 0.0) + j / p)
    valid = (pi > math.log(p) / p) & (j < p / 2)
    if not valid.any():
        valid = j <= max(1, p // 2)
    cand = np.flatnonzero(valid)
    return int(j[cand[np.argmax(hc[cand])]])


def _reliability_weight(F_selected: np.ndarray, null_sorted: np.ndarray):
    """The pseudo-label reliability weight ``w`` in [0.375, 1] and its Gumbel level ``w1``.

    Empirical p-values of the selected features' F statistics against the random-subset null, the
    HC scores ``sqrt(s) (j/s - p_(j)) / sqrt(p_(j) (1 - p_(j)))`` over the largest two thirds of the
    sorted p-values, and their maximum M mapped through the Gumbel limit of the HC maximum,
    ``w1 = exp(-exp(c - b M))`` with ``b = sqrt(2 log log S)``, ``c = 2 log log S + log log log S / 2
    - log(4 pi) / 2`` (S the number of scores, at least 16 so that log log log S is defined)."""
    N = len(null_sorted)
    pv = np.clip(_upper_pvalues(F_selected, null_sorted), 1.0 / (N + 1), N / (N + 1.0))
    pv = np.sort(pv)
    s = len(pv)
    j = np.arange(1, s + 1)
    hc = math.sqrt(s) * (j / s - pv) / np.sqrt(pv * (1.0 - pv))
    keep = int(s * 2 / 3)
    # The smallest third of the p-values is left out: there p (1 - p) -> 0 makes HC explode
    # on a single lucky feature (as in the authors' code).
    hc = hc[s - keep:] if keep > 0 else hc
    S = max(len(hc), 16)
    lls = math.log(math.log(S))
    b = math.sqrt(2.0 * lls)
    c = 2.0 * lls + 0.5 * math.log(lls) - 0.5 * math.log(4.0 * math.pi)
    w1 = math.exp(-math.exp(min(c - b * float(hc.max()), 700.0)))
    return 1.0 - (1.0 - w1) / (1.6 - w1), w1


class IIFLearn(ScoreSelector):
    """Unsupervised i-IF-Learn selector: influential features and cluster labels, found jointly.

    Ma, Wang & Fan, AISTATS 2026, arXiv 2603.24025. ``fit(X)`` ignores ``y``. Columns are
    standardised (population scale; constant columns stay 0 and rank last). Initialisation is
    IF-PCA: per-feature KS statistic against N(0, 1) with a simulated null for standardised
    samples (``n_ks_null`` draws), the Higher-Criticism count of them kept, their top
    ``max(1, n_clusters - 1)`` left singular vectors, k-means. Then, for at most ``n_iter`` rounds:

    - ``fp_j``: p-value of the ANOVA F of feature j against the pseudo-labels, on F(G-1, n-G);
    - ``pks_j``: the upper-tail empirical p-value of its KS statistic;
    - ``w``: the pseudo-label reliability (see ``_reliability_weight``), from the selected
      features' F against ``n_null`` random subsets of the same size that were embedded and
      clustered in the same way (computed once, for the initial selection size);
    - ``z_j = (w Phi^-1(fp_j) + (1 - w) Phi^-1(pks_j)) / sqrt(w^2 + (1 - w)^2)``; the ``k``
      features of smallest ``z`` are kept (``k=None``: the Higher-Criticism count of
      ``hc_threshold`` on ``Phi(z)``); they are embedded (``embedding``) and clustered anew;

    stopping when fewer than ``tol`` (a fraction) of the kept features are new.
    ``scores_ = -z`` of the last round (higher = more influential), ``support_`` its top ``k``
    (or the HCT selection), ``labels_`` the k-means labels on the final selection.

    With ``empirical_null`` (and at least 10 non-constant features) the statistics are recalibrated
    as in the authors' code, assuming most features are null: KS statistics are matched to the
    simulated null's mean and standard deviation, F statistics' median and interquartile range to
    those of F(G-1, n-G). Deviations from the authors' code: the combined statistic is divided by
    ``sqrt(w^2 + (1 - w)^2)`` (theirs omits the root; with it z is N(0, 1) under the null, which
    the HC threshold assumes; the ranking is the same), the reliability HC uses ``j/s`` (s
    selected features; theirs ``j/n``), empirical p-values are ``(1 + count) / (1 + N)``, p-values
    go to z through log-space ``ndtri_exp`` (no infinities), and k-means is seeded from ``seed``.

    Parameters
    ----------
    k
        Number of features to keep in every round; None: the HC threshold decides each round. The
        IF-PCA initialisation always keeps the HC-threshold count (a fixed small ``k`` of KS-ranked
        features is often mostly noise: KS screening is weak, the F rounds are what sharpen it).
    n_clusters
        Number of clusters K (< number of rows). ``n_clusters=1`` (no cluster structure) leaves no
        pseudo-labels to test: the selection is IF-PCA's KS screening alone and ``labels_`` all 0.
    embedding
        "pca" (top left singular vectors of the standardised kept features) or "laplacian"
        (Laplacian eigenmaps on the affinity ``exp(-cosine_distance^2)`` between rows, as in the
        authors' code).
    n_components
        Embedding dimension; None: ``max(1, K - 1)`` for "pca" (spectral clustering's K - 1),
        ``K + 2`` for "laplacian" (the authors' recommendation). Clipped to what the data allows.
    n_iter
        Most rounds after the initialisation. ``tol``: stop when the fraction of newly kept
        features is below it.
    n_null
        Random subsets for the reliability null (the authors use 200).
    n_ks_null
        Simulated standardised Gaussian samples for the KS null (the authors use 100000).

        ``n_iter``, ``n_null``, ``n_ks_null`` and ``n_init`` each cost a pass over the ``n`` rows
        (``n_ks_null``: ``n`` Gaussian draws per sample); each is refused before any work when
        ``n`` times it exceeds 100 times ``featurelens._budgets.MAX_EVALUATIONS`` (10^10
        row passes; raised by the environment variable ``FEATURELENS_MAX_EVALUATIONS``), so the
        defaults run on up to 10^6 rows.
    n_init
        k-means restarts (the authors use 30).
    empirical_null
        Recalibrate KS and F statistics to their null laws (see above).
    seed
        None, an int or a ``numpy.random.Generator``.

    Attributes
    ----------
    scores_, ranking_, support_ : the selection (``ScoreSelector``).
    labels_ : ndarray (n,) of int, the cluster labels on the final selection.
    n_iter_ : int, rounds run (0 when every column is constant). ``converged_``: whether the
        selection settled before ``n_iter`` rounds.
    initial_support_ : bool mask of IF-PCA's selection. ``reliability_`` : the weight ``w`` per round.
    ks_pvalues_, f_pvalues_ : the two p-values per feature of the last round.
    n_clusters_, n_components_ : what was used.
    """

    _requires_y = False
    _min_samples = 3

    def __init__(
        self,
        k=None,
        n_clusters: int = 2,
        embedding: str = "pca",
        n_components=None,
        n_iter: int = 10,
        tol: float = 0.1,
        n_null: int = 50,
        n_ks_null: int = 10000,
        n_init: int = 10,
        empirical_null: bool = True,
        seed=0,
    ):
        self.k = k
        self.n_clusters = n_clusters
        self.embedding = embedding
        self.n_components = n_components
        self.n_iter = n_iter
        self.tol = tol
        self.n_null = n_null
        self.n_ks_null = n_ks_null
        self.n_init = n_init
        self.empirical_null = empirical_null
        self.seed = seed

    def _check_params(self, n: int):
        K = check_int(self.n_clusters, "n_clusters", low=1)
        if K >= n:
            raise ValueError(
                f"n_clusters={K} needs more rows than clusters for the F test; X has {n} rows, "
                f"expected n_clusters <= {n - 1}"
            )
        check_option(self.embedding, "embedding", ("pca", "laplacian"))
        check_int(self.n_components, "n_components", low=1, allow_none=True)
        # Each round, null subset, null KS draw and k-means restart passes over the n rows: refused
        # before any work above 100 times the evaluation bound (featurelens._validation
        # .check_budget): a pass over a row is a vectorised numpy step, far cheaper than a model
        # evaluation, so the defaults (n_ks_null=10000) run on up to 10^6 rows.
        rows = dict(per=n, unit="row passes", what=f"({n} rows each)", limit=100 * max_evaluations(),
                    source="100 x featurelens._budgets.MAX_EVALUATIONS (FEATURELENS_MAX_EVALUATIONS)")
        check_budget(self.n_iter, "n_iter", **rows)
        check_float(self.tol, "tol", low=0.0, high=1.0)
        check_budget(self.n_null, "n_null", **rows)
        check_budget(self.n_ks_null, "n_ks_null", low=100, **rows)
        check_budget(self.n_init, "n_init", **rows)
        check_bool(self.empirical_null, "empirical_null")
        parse_seed(self.seed)
        return K

    # -- pieces ----------------------------------------------------------------------------------
    def _embed(self, Zs: np.ndarray, method: str, m: int, rs: int) -> np.ndarray:
        n = Zs.shape[0]
        if method == "pca":
            U, _, _ = np.linalg.svd(Zs, full_matrices=False)
            return U[:, : max(1, min(m, U.shape[1]))]
        from sklearn.manifold import SpectralEmbedding
        from sklearn.metrics.pairwise import cosine_distances

        A = np.exp(-cosine_distances(Zs) ** 2)
        emb = SpectralEmbedding(n_components=max(1, min(m, n - 2)), affinity="precomputed", random_state=rs)
        return emb.fit_transform(A)

    def _cluster(self, E: np.ndarray, K: int, rs: int) -> np.ndarray:
        import warnings

        from sklearn.cluster import KMeans
        from sklearn.exceptions import ConvergenceWarning

        with warnings.catch_warnings():
            # Fewer distinct embedded rows than K: k-means merges them; the F test then uses the
            # groups present (anova_f), which is the honest answer for such data.
            warnings.simplefilter("ignore", ConvergenceWarning)
            return KMeans(n_clusters=K, n_init=int(self.n_init), random_state=rs).fit_predict(E)

    def _f_log_pvalues(self, F: np.ndarray, df1: int, df2: int, varying: np.ndarray) -> np.ndarray:
        logp = np.zeros(len(F))
        if df1 < 1 or df2 < 1:
            return logp
        Fv = F[varying].copy()
        finite = np.isfinite(Fv)
        if finite.any():
            # F = inf (no within-group spread) is the strongest finite evidence seen (authors' code).
            Fv[~finite] = Fv[finite].max() if finite.any() else 0.0
        else:
            Fv[:] = 0.0
        if self.empirical_null and len(Fv) >= _MIN_FEATURES_EMPIRICAL_NULL:
            q1, q2, q3 = np.percentile(Fv, [25, 50, 75])
            if q3 > q1:
                s1, s2, s3 = stats.f.ppf([0.25, 0.5, 0.75], df1, df2)
                Fv = (Fv - q2) / (q3 - q1) * (s3 - s1) + s2
        logp[varying] = stats.f.logsf(Fv, df1, df2)
        return logp

    def _null_f(self, Z, varying_idx, size, K, m, rng, rs) -> np.ndarray:
        """F statistics of random feature subsets against the labels they generated themselves."""
        vals = []
        size = min(size, len(varying_idx))
        for _ in range(int(self.n_null)):
            cols = rng.choice(varying_idx, size=size, replace=False)
            labels = self._cluster(self._embed(Z[:, cols], self.embedding, m, rs), K, rs)
            F, _, _ = anova_f(Z[:, cols], labels)
            vals.append(F)
        null = np.concatenate(vals)
        finite = np.isfinite(null)
        if finite.any():
            null[~finite] = null[finite].max()
        return np.sort(null)

    @staticmethod
    def _scores(z: np.ndarray, varying: np.ndarray) -> np.ndarray:
        """``-z``, with constant columns (no information) ranked last whatever the clipping gave."""
        scores = -np.asarray(z, dtype=np.float64)
        scores[~varying] = scores[varying].min() - 1.0
        return scores

    def _select(self, z: np.ndarray, varying: np.ndarray, n: int, k) -> np.ndarray:
        count = k if k is not None else hc_threshold(ndtr(z), n)
        return top_k_mask(self._scores(z, varying), count)

    # -- fit -------------------------------------------------------------------------------------
    def _compute_scores(self, X, y):
        from threadpoolctl import threadpool_limits

        # Dozens of k-means fits on small embeddings: OpenMP/BLAS thread start-up in scikit-learn's
        # Lloyd loop costs ~10x the work itself there (measured: 0.31 s vs 0.026 s per KMeans fit,
        # n=120, K=3, n_init=10), so the whole fit runs single-threaded.
        with threadpool_limits(limits=1):
            return self._fit_scores(X)

    def _fit_scores(self, X):
        n, d = X.shape
        K = self._check_params(n)
        k = self.k if self.k is None else int(self.k)
        rng = numpy_rng(self.seed)
        rs = int(rng.integers(0, 2**31 - 1))
        m = self.n_components
        if m is None:
            m = max(1, K - 1) if self.embedding == "pca" else K + 2
        self.n_clusters_ = K
        self.n_components_ = int(m)
        Z, varying = _standardize(X)
        varying_idx = np.flatnonzero(varying)
        self.labels_ = np.zeros(n, dtype=int)
        self.n_iter_ = 0
        self.converged_ = True
        self.reliability_ = []
        self.ks_pvalues_ = np.ones(d)
        self.f_pvalues_ = np.ones(d)
        if len(varying_idx) == 0:
            self.initial_support_ = np.zeros(d, bool)
            self._final_support = np.zeros(d, bool) if k is None else top_k_mask(np.zeros(d), k)
            return np.zeros(d)

        # -- IF-PCA initialisation: KS screening, PCA of the kept features, k-means.
        ks = ks_statistics(Z[:, varying])
        null_ks = _ks_null(n, int(self.n_ks_null), rng)
        if self.empirical_null and len(ks) >= _MIN_FEATURES_EMPIRICAL_NULL and ks.std() > 0:
            ks = (ks - ks.mean()) / ks.std() * null_ks.std() + null_ks.mean()
        pks = np.ones(d)
        pks[varying] = _upper_pvalues(ks, null_ks)
        self.ks_pvalues_ = pks
        log_pks = np.log(np.minimum(pks, math.exp(_LOG_P_MAX)))
        z_ks = ndtri_exp(log_pks)
        support = self._select(z_ks, varying, n, None)  # IF-PCA: always the HC threshold
        self.initial_support_ = support.copy()
        labels = self._cluster(self._embed(Z[:, support], "pca", max(1, K - 1), rs), K, rs)
        null_f = self._null_f(Z, varying_idx, int(support.sum()), K, m, rng, rs) if K > 1 else None

        z = z_ks
        for it in range(int(self.n_iter)):
            F, df1, df2 = anova_f(Z, labels)
            log_fp = np.minimum(self._f_log_pvalues(F, df1, df2, varying), _LOG_P_MAX)
            self.f_pvalues_ = np.exp(log_fp)
            Fs = F[support & varying]
            if len(Fs) == 0 or df1 < 1:
                w = 0.0  # no usable pseudo-labels: the KS signal alone
            else:
                Fs = np.where(np.isfinite(Fs), Fs, null_f[-1] + 1.0)
                w, _ = _reliability_weight(Fs, null_f)
            self.reliability_.append(float(w))
            z = (w * ndtri_exp(log_fp) + (1.0 - w) * z_ks) / math.sqrt(w**2 + (1.0 - w) ** 2)
            new_support = self._select(z, varying, n, k)
            labels = self._cluster(self._embed(Z[:, new_support], self.embedding, m, rs), K, rs)
            self.n_iter_ = it + 1
            changed = np.count_nonzero(new_support & ~support) / max(1, int(support.sum()))
            support = new_support
            if changed < float(self.tol) or (self.tol == 0 and changed == 0):
                break
        else:
            self.converged_ = False
        self.labels_ = np.asarray(labels, dtype=int)
        self._final_support = support
        return self._scores(z, varying)

    def _default_support(self, scores):
        return self._final_support
