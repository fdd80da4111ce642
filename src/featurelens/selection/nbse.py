"""NBSE: unsupervised selection of non-redundant features by a Bethe-Hessian spectral embedding of
the features at the Nishimori temperature.

The features are the nodes of a sparse similarity graph (built on the transposed, standardised
data); the weighted Bethe Hessian of that graph at the temperature where it becomes singular gives
a 1-D embedding in which redundant features lie close together; the features are cut into k
balanced bins and one representative is kept per bin.

Usatyuk, Sapozhnikov, Egorov, "Diffusion-Guided Feature Selection via Nishimori Temperature:
Noise-Based Spectral Embedding", 2026, arXiv 2604.24692; the Bethe Hessian at the Nishimori
temperature: Dall'Amico, Couillet, Tremblay, J. Stat. Mech. (2021) 093405, arXiv 2103.03561.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.linalg import eigh
from threadpoolctl import threadpool_limits

from .._validation import check_int
from ._base import DegenerateDataWarning, ScoreSelector

__all__ = ["NBSE", "bethe_hessian", "nishimori_embedding", "spin_glass_beta"]


def bethe_hessian(J: np.ndarray, beta: float) -> np.ndarray:
    """Weighted Bethe Hessian H(beta) = I + D(beta) - S(beta) of a graph with couplings J.

    D_ii = sum_j sinh^2(beta J_ij), S_ij = sinh(2 beta J_ij) / 2 (J_ij = 0 off the edges). With
    unit couplings and r = coth(beta), H / sinh^2(beta) = (r^2 - 1) I - r A + D_deg, the
    unweighted Bethe Hessian (Saade, Krzakala, Zdeborova, NeurIPS 2014).
    """
    S = 0.5 * np.sinh(2.0 * beta * J)
    Dg = (np.sinh(beta * J) ** 2).sum(axis=1)
    H = -S
    H[np.diag_indices_from(H)] += 1.0 + Dg
    return H


def _smallest(H: np.ndarray):
    w, v = eigh(H, subset_by_index=[0, 0])
    return float(w[0]), v[:, 0]


def spin_glass_beta(J: np.ndarray) -> float:
    """beta_SG solving c * Phi * mean_edges tanh^2(beta J_ij) = 1 (bisection; inf when no root).

    c = mean degree, Phi = E[deg^2] / E[deg]^2 (degree heterogeneity); above beta_SG the Bethe
    Hessian has negative eigenvalues (Dall'Amico, Couillet, Tremblay 2021).
    """
    M = J != 0
    deg = M.sum(axis=1).astype(float)
    if deg.sum() == 0:
        return float("inf")
    c = deg.mean()
    phi = (deg**2).mean() / c**2
    e = J[M]

    def f(b):
        return c * phi * np.mean(np.tanh(b * e) ** 2) - 1.0

    if f(1e3) <= 0:
        return float("inf")
    lo, hi = 0.0, 1.0
    while f(hi) <= 0:
        lo, hi = hi, 2 * hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) <= 0 else (lo, mid)
    return 0.5 * (lo + hi)


def nishimori_embedding(J: np.ndarray, rtol: float = 1e-4):
    """The smallest eigenvector of H(beta_N), beta_N the temperature where H(beta) turns singular.

    Following the authors' Nishimori clustering code: beta_SG from :func:`spin_glass_beta`; if
    lambda_min(H(beta_SG)) < 0, beta is stepped up by beta_SG until lambda_min > 0, and beta_N
    (lambda_min(H(beta_N)) = 0, the crossing above beta_SG) is bisected to relative width
    ``rtol``. Otherwise (no negative eigenvalue: weak or no structure) beta_N = beta_SG (or 1 when
    beta_SG does not exist). The embedding is Lam^(-1/2) x, x the smallest eigenvector of the
    normalised L(beta_N) = Lam^(-1/2) H(beta_N) Lam^(-1/2), Lam = 1 + D(beta_N) (the authors' code;
    at beta_N it is the null vector of H), with its sign fixed so that its largest entry in
    absolute value is positive. Returns (embedding, beta_N, crossed).
    """
    b_sg = spin_glass_beta(J)
    found = False
    if np.isfinite(b_sg):
        beta_n = b_sg
        lam, _ = _smallest(bethe_hessian(J, b_sg))
        if lam < 0:
            lo, hi = b_sg, 2 * b_sg
            # sinh(2 beta J) overflows float64 past 2 beta |J| ~ 710: the Hessian is then inf - inf
            # = NaN, so the search stops there (no crossing found: beta_N stays beta_SG).
            beta_max = 350.0 / max(float(np.abs(J).max()), np.finfo(float).tiny)
            for _ in range(100):
                if hi > beta_max:
                    break
                if _smallest(bethe_hessian(J, hi))[0] > 0:
                    found = True
                    break
                lo, hi = hi, hi + b_sg
            if found:
                while hi - lo > rtol * hi:
                    mid = 0.5 * (lo + hi)
                    if _smallest(bethe_hessian(J, mid))[0] > 0:
                        hi = mid
                    else:
                        lo = mid
                beta_n = 0.5 * (lo + hi)
    else:
        beta_n = 1.0
    # The authors' embedding: x = the smallest eigenvector of the normalised
    # L(beta) = I - Lam^(-1/2) S(beta) Lam^(-1/2) = Lam^(-1/2) H(beta) Lam^(-1/2), Lam = diag(H) =
    # 1 + D(beta), then Lam^(-1/2) x. At beta_N this is the null vector of H itself; correcting the
    # eigenvector of H by Lam^(-1/2) instead (featurelens before this fix) counted the degrees twice.
    Hn = bethe_hessian(J, beta_n)
    s = 1.0 / np.sqrt(np.diag(Hn))
    _, x = _smallest(s[:, None] * Hn * s[None, :])
    v = s * x
    i = int(np.argmax(np.abs(v)))
    if v[i] < 0:
        v = -v
    return v, beta_n, found


def _couplings(C: np.ndarray, n_neighbors: int) -> np.ndarray:
    """Signed couplings of the symmetrised kNN graph of the similarity matrix C (zero diagonal).

    Each feature is linked to its ``n_neighbors`` most similar features (union of both directions);
    the edge similarities are z-scored across edges (as in the authors' Nishimori clustering code),
    so strong edges couple ferromagnetically and weak ones antiferromagnetically. Equal edge
    weights (no spread) keep their raw, positive values.
    """
    d = C.shape[0]
    nn = min(int(n_neighbors), d - 1)
    if nn < 1:
        return np.zeros_like(C)
    idx = np.argsort(-C, axis=1, kind="stable")[:, :nn]
    M = np.zeros((d, d), dtype=bool)
    M[np.arange(d)[:, None], idx] = True
    M |= M.T
    np.fill_diagonal(M, False)
    e = C[M]
    sd = e.std()
    J = np.zeros_like(C)
    J[M] = (e - e.mean()) / sd if sd > 0 else e
    return J


class NBSE(ScoreSelector):
    """Noise-based spectral embedding selector: one representative per group of redundant features.

    Unsupervised (``fit(X)``; y is ignored). Steps:

    1. Standardise the columns; similarity of features f, g = |corr(f, g)| (the transposed data's
       rows compared by |Pearson|); constant columns are left out.
    2. Sparse graph: symmetrised ``n_neighbors``-nearest-neighbour graph of the features, edge
       similarities z-scored into signed couplings J.
    3. Weighted Bethe Hessian H(beta) = I + D(beta) - S(beta) (``bethe_hessian``; for unit
       couplings it is (r^2 - 1) I - r A + D with r = coth beta) at the Nishimori temperature
       beta_N: above the spin-glass point beta_SG the smallest eigenvalue is negative, and beta_N
       is where it returns to 0 (stepping up from beta_SG, then bisection on lambda_min;
       ``nishimori_embedding``, as in the authors' earlier Nishimori clustering code). Its
       smallest (degree-corrected) eigenvector is the 1-D embedding of the features
       (``embedding_``, ``beta_``, ``nishimori_found_``; when lambda_min never turns negative the
       embedding is taken at beta_SG).
    4. Balanced binning into k bins (featurelens's rule; the paper's is not published): the
       features sorted by the embedding are cut into a left part of j bins and a right part of
       k - j bins, at position round(m j / k) (m features), for the j in [k/4, 3k/4] whose cut has
       the least mean |corr| across it; each part is embedded again by steps 2-3 on its own
       features and cut recursively, down to single bins. Why: one eigenvector of the signed
       Bethe Hessian splits the features cleanly in two (a ferro/antiferromagnetic ordering) but
       does not order many groups reliably; recursive two-way cuts do (a planted-group test with
       up to 12 groups). ``bins_`` holds each feature's bin (-1 for constant columns); bin sizes
       differ by at most one.
    5. Representative of a bin: its most central feature, the one with the largest mean |corr| to
       the other members of the bin (ties: lower index).

    Identical columns (exact duplicates) are ranked as separate features; ``fit`` warns
    (:class:`DegenerateDataWarning`) naming them, and ``duplicate_groups_`` lists each group of
    identical non-constant columns (column indices), so that they can be dropped first.

    ``scores_`` (higher = more important): 3 + centrality for the k representatives, 1 +
    centrality for the other non-constant features (centrality = mean |corr| to the rest of its
    bin, in [0, 1]), 0 for constant columns (the lowest rank; they are chosen only when k exceeds
    the number of non-constant columns). So the top-k are the representatives, ordered by how much
    of their bin they stand for. ``k=None`` uses ceil(sqrt(number of non-constant features)) bins.

    Cost: the d x d correlation matrix (dense, float64) and dense symmetric eigenproblems (one
    BLAS thread) of the feature graph and its parts, O(d^3 log k) at most; about 0.6 s for
    d = 300 and 12 s for d = 1280, k = 384 on a busy 2-core machine.

    Usatyuk, Sapozhnikov, Egorov, 2026, arXiv 2604.24692 (NBSE; steps 4-5 reconstructed, the
    paper's binning rule is not published); Dall'Amico, Couillet, Tremblay, 2021, arXiv 2103.03561
    (Bethe Hessian at the Nishimori temperature).
    """

    _requires_y = False

    def __init__(self, k=None, n_neighbors: int = 10):
        self.k = k
        self.n_neighbors = n_neighbors

    def _bins(self, C: np.ndarray, members: np.ndarray, n_bins: int, out: list, v=None) -> None:
        if n_bins <= 1 or len(members) <= 1:
            out.append(members)
            return
        if v is None:
            v, _, _ = nishimori_embedding(_couplings(C[np.ix_(members, members)], self.n_neighbors))
        order = members[np.argsort(v, kind="stable")]
        m = len(order)
        # Candidate cuts: j of the n_bins bins on the left, at their proportional position; keep
        # the cut of least mean similarity across it (a ratio cut restricted to balanced positions).
        Cs = C[np.ix_(order, order)]
        P = Cs.cumsum(axis=0).cumsum(axis=1)  # P[a, b] = sum of Cs[:a+1, :b+1]
        total_rows = P[:, -1]
        # j is kept within [k/4, 3k/4] so that the recursion stays O(log k) deep.
        q = int(round(n_bins / 4))
        best = None
        for j in range(max(1, q), min(n_bins - 1, n_bins - q) + 1):
            t = int(round(m * j / n_bins))
            t = min(max(t, j), m - (n_bins - j))
            cross = total_rows[t - 1] - P[t - 1, t - 1]  # sum of Cs[:t, t:]
            score = cross / (t * (m - t))
            if best is None or score < best[0] - 1e-12:
                best = (score, j, t)
        _, j, t = best
        self._bins(C, np.sort(order[:t]), j, out)
        self._bins(C, np.sort(order[t:]), n_bins - j, out)

    def _compute_scores(self, X, y):
        nn = check_int(self.n_neighbors, "n_neighbors", low=1)
        n, d = X.shape
        varying = np.flatnonzero(np.ptp(X, axis=0) > 0)
        scores = np.zeros(d)
        self.bins_ = np.full(d, -1)
        self.embedding_ = np.zeros(d)
        self.beta_ = 0.0
        self.nishimori_found_ = False
        self.representatives_ = np.empty(0, dtype=int)
        self.duplicate_groups_ = self._duplicate_groups(X, varying)
        if len(varying) == 0:
            return scores
        Z = X[:, varying]
        Z = (Z - Z.mean(axis=0)) / Z.std(axis=0)
        C = np.abs(Z.T @ Z) / n  # |Pearson correlation|, float64
        np.clip(C, 0.0, 1.0, out=C)
        np.fill_diagonal(C, 0.0)
        m = len(varying)
        if self.k is None:
            n_bins = max(1, math.ceil(math.sqrt(m)))
        else:
            n_bins = min(int(self.k), m)

        # Many small symmetric eigenproblems: one BLAS thread is 10-300x faster than a pool
        # competing for busy cores (OpenBLAS spin-waits), and never slower at these sizes.
        with threadpool_limits(limits=1, user_api="blas"):
            v, beta_n, found = nishimori_embedding(_couplings(C, nn))
            self.embedding_[varying] = v
            self.beta_ = beta_n
            self.nishimori_found_ = bool(found)
            bins: list = []
            self._bins(C, np.arange(m), n_bins, bins, v=v)
        reps = []
        for b, mem in enumerate(bins):
            self.bins_[varying[mem]] = b
            if len(mem) > 1:
                cent = C[np.ix_(mem, mem)].sum(axis=1) / (len(mem) - 1)
            else:
                cent = np.zeros(1)
            rep = int(np.argmax(cent))  # first maximum = lower index (mem is sorted)
            s = 1.0 + cent
            s[rep] += 2.0
            scores[varying[mem]] = s
            reps.append(varying[mem[rep]])
        self.representatives_ = np.sort(np.asarray(reps, dtype=int))
        return scores

    def _duplicate_groups(self, X: np.ndarray, varying: np.ndarray) -> list:
        """Groups (sorted column indices) of identical non-constant columns, warned about by name."""
        if len(varying) < 2:
            return []
        _, inverse, counts = np.unique(X[:, varying], axis=1, return_inverse=True, return_counts=True)
        inverse = np.asarray(inverse).reshape(-1)
        groups = [varying[inverse == g] for g in np.flatnonzero(counts > 1)]
        groups.sort(key=lambda g: g[0])
        if groups:
            names = getattr(self, "feature_names_in_", None)
            label = (lambda i: repr(str(names[i]))) if names is not None else str
            shown = "; ".join("columns " + ", ".join(label(int(i)) for i in g) + " are identical" for g in groups[:10])
            more = f" (and {len(groups) - 10} more groups)" if len(groups) > 10 else ""
            warnings.warn(
                f"NBSE: {shown}{more}. NBSE ranks each copy as a separate feature "
                "(a copy correlates perfectly with its twin, crowding a bin), so the selection may keep "
                "several copies of one feature or drop a feature in favour of its copy; drop the duplicated "
                "columns first (duplicate_groups_ lists them)",
                DegenerateDataWarning,
                stacklevel=4,
            )
        return [np.asarray(g, dtype=int) for g in groups]

    def _default_support(self, scores):
        return scores >= 3.0
