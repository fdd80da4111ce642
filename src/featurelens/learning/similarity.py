"""Representation similarity: CKA (linear in feature space, RBF through Gram matrices, biased and
debiased, exact minibatch accumulation).

All functions take feature matrices (n samples x d features) as numpy arrays or torch tensors; a
tensor with more than two dimensions is flattened to (n, -1). Sums of outer products are
accumulated in float64.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .._batching import chunks, rows_for_bytes
from .._validation import (
    as_numpy,
    check_bool,
    check_float,
    check_floating,
    check_int,
    check_option,
    check_optional_bool,
)
from .representation_stats import feature_matrix

__all__ = ["CKAAccumulator", "cka"]

_KERNELS = ("linear", "rbf")
_LINEAR_METHODS = ("auto", "features", "gram")


def _pair(A, B, min_rows: int) -> tuple[np.ndarray, np.ndarray]:
    A = feature_matrix(A, "A")
    B = feature_matrix(B, "B")
    if A.shape[0] != B.shape[0]:
        raise ValueError(
            f"A and B must have the same number of rows (the same samples); got {A.shape[0]} and {B.shape[0]}"
        )
    if A.shape[0] < min_rows:
        raise ValueError(f"A and B need at least {min_rows} rows for this estimator; got {A.shape[0]}")
    return A, B


# ---------------------------------------------------------------------------------------------
# HSIC estimators from sufficient statistics
#
# K = X X^T and L = Y Y^T are the linear-kernel Gram matrices of the n rows of X (n x p) and
# Y (n x q). Write a_i = ||x_i||^2 = K_ii and b_i = ||y_i||^2 = L_ii, s_x = X^T 1 (column sums),
# s_y = Y^T 1, and K~ = K - diag(a), L~ = L - diag(b) (zeroed diagonals).
#
# Biased HSIC (Gretton et al. 2005), up to the factor 1/(n-1)^2 that cancels in CKA:
#     tr(K H L H) = || (X - 1 m_x^T)^T (Y - 1 m_y^T) ||_F^2 = || X^T Y - s_x s_y^T / n ||_F^2.
#
# Unbiased HSIC (Song et al. 2012), with the three Gram-matrix terms rewritten in feature space:
#     HSIC_1 = [ tr(K~ L~) + (1^T K~ 1)(1^T L~ 1) / ((n-1)(n-2)) - 2/(n-2) 1^T K~ L~ 1 ] / (n (n-3))
#   * tr(K~ L~) = tr(KL) - tr(K diag b) - tr(diag a L) + sum a_i b_i = ||X^T Y||_F^2 - sum_i a_i b_i
#     (tr(KL) = ||X^T Y||_F^2, and tr(K diag b) = sum a_i b_i = tr(diag a L)).
#   * 1^T K~ 1 = 1^T X X^T 1 - sum a_i = ||s_x||^2 - sum_i a_i.
#   * K~ 1 = X s_x - a, so 1^T K~ L~ 1 = (X s_x - a)^T (Y s_y - b)
#       = s_x^T (X^T Y) s_y - s_x^T (X^T b) - (Y^T a)^T s_y + a^T b.
# Every term is a sum over rows of per-row quantities (X^T Y, X^T X, Y^T Y, s_x, s_y, X^T a,
# X^T b, Y^T a, Y^T b, sum a, sum b, sum a b, sum a^2, sum b^2), so the estimator can be
# accumulated over minibatches exactly, and no n x n matrix is ever formed. For centred X and Y
# (s = 0) it reduces to ||X^T Y||^2 - n/(n-2) a^T b + (sum a)(sum b)/((n-1)(n-2)), the form in
# Kornblith et al.'s notebook. HSIC_1 of linear kernels is invariant to translating the rows
# (it is a U-statistic of differences), which lets the accumulator subtract any fixed shift, e.g.
# the first batch's mean, to limit cancellation; the tests check this against Gram matrices.
# ---------------------------------------------------------------------------------------------


def _hsic1(n: int, tr_kl: float, sum_ab: float, one_k_one: float, one_l_one: float, one_kl_one: float) -> float:
    """Unbiased HSIC from the feature-space terms above (tr_kl = tr(KL), undiagonalised)."""
    tr_kl_tilde = tr_kl - sum_ab
    return (
        tr_kl_tilde + one_k_one * one_l_one / ((n - 1) * (n - 2)) - 2.0 / (n - 2) * one_kl_one
    ) / (n * (n - 3))


_STAT_KEYS = ("xy", "xx", "yy", "sx", "sy", "xa", "xb", "ya", "yb", "a", "b", "ab", "aa", "bb")


def _zero_stats(p: int, q: int) -> dict:
    z = np.zeros
    return {
        "xy": z((p, q)), "xx": z((p, p)), "yy": z((q, q)), "sx": z(p), "sy": z(q),
        "xa": z(p), "xb": z(p), "ya": z(q), "yb": z(q),
        "a": 0.0, "b": 0.0, "ab": 0.0, "aa": 0.0, "bb": 0.0,
    }


def _stat_shapes(p: int, q: int) -> dict:
    return {k: np.shape(v) for k, v in _zero_stats(p, q).items()}


def _check_shift(shift):
    """None, or a pair (s_A, s_B) of finite 1-d float vectors, returned as float64 copies."""
    if shift is None:
        return None
    if not isinstance(shift, (tuple, list)) or len(shift) != 2:
        raise TypeError(
            "shift must be None or a pair (shift_A, shift_B) of vectors subtracted from the rows of A "
            f"and B (e.g. a first batch's column means); got {type(shift).__name__}"
        )
    out = []
    for vec, name in zip(shift, ("shift[0]", "shift[1]")):
        arr = as_numpy(vec, name)
        check_floating(arr, name)
        if arr.ndim != 1 or arr.shape[0] == 0:
            raise ValueError(f"{name} must be a 1-d vector with one value per feature; got shape {arr.shape}")
        out.append(np.array(arr, dtype=np.float64))
    return out[0], out[1]


class CKAAccumulator:
    """Linear CKA over data seen in minibatches, exactly equal to the full-data value, and
    mergeable across workers and processes.

    Feed the same rows of two representations batch by batch (``update(A_batch, B_batch)``), then
    ``compute()`` (or ``result()``). The accumulator keeps float64 sums over rows: A^T B (p x q), A^T A, B^T B, the
    column sums, and, for the debiased estimator, the row-norm terms derived in the module comments.
    Both estimators are *exact*: the result equals ``cka(A, B, kernel="linear", debiased=...)`` on
    the concatenated rows (up to floating-point rounding) whatever the batch sizes, including
    batches of fewer than 4 rows. This differs from the minibatch CKA of Nguyen, Raghu and Kornblith
    (2021, arXiv 2010.15327), which averages unbiased HSIC over batches and estimates a different
    (batch-size dependent) quantity. Memory is O(p q + p^2 + q^2), independent of n.

    Mergeable centring. Every row is shifted by a fixed pair of vectors before it is accumulated,
    ``x_i = a_i - s_A``, ``y_i = b_i - s_B``. Centring removes any shift exactly: with
    ``S_x = sum_i x_i``, ``S_y = sum_i y_i`` over the n rows,

        A_c^T B_c = sum_i (x_i - S_x/n)(y_i - S_y/n)^T = X^T Y - S_x S_y^T / n

    (likewise ``A_c^T A_c`` and ``B_c^T B_c``), so the biased HSIC (up to 1/(n-1)^2) is

        ||A_c^T B_c||_F^2 = ||X^T Y||_F^2 - (2/n) S_x^T (X^T Y) S_y + ||S_x||^2 ||S_y||^2 / n^2.

    The unbiased HSIC needs in addition the row-norm sums (``X^T a``, ``sum a_i b_i``, ... with
    ``a_i = ||x_i||^2``; module comments), and HSIC_1 is translation invariant. Every one of these
    is a sum over rows, so the sums of disjoint parts of the data add up to the sums of their union
    (``merge``, ``all_reduce``), and n adds. The partial sums themselves depend on the
    shift (only the centred value does not), so every accumulator that is merged must use the
    same shift, which is checked: pass ``shift=(s_A, s_B)``, e.g. the column means of a first
    batch computed once and sent to every worker. The shift only conditions the sums: anything
    near the data's mean keeps the cancellation in ``X^T Y - S_x S_y^T / n`` small.

    Kornblith, Norouzi, Lee, Hinton, "Similarity of Neural Network Representations Revisited",
    ICML 2019, arXiv 1905.00414; Song, Smola, Gretton, Bedo, Borgwardt, "Feature Selection via
    Dependence Maximization", JMLR 2012 (unbiased HSIC).

    Parameters
    ----------
    debiased : bool
        Use the unbiased HSIC estimator (needs at least 4 rows in total) in ``compute()``; both
        estimators' statistics are always kept, so ``compute(debiased=False)`` also works.
    shift : None or a pair (s_A (p,), s_B (q,))
        The vectors subtracted from the rows of A and B. None (default): the means of the first
        batch this accumulator sees, which suits a single accumulator; accumulators with different
        automatic shifts refuse to merge.
    """

    _KIND = "featurelens.CKAAccumulator"

    def __init__(self, debiased: bool = True, shift=None):
        self.debiased = check_bool(debiased, "debiased")
        self.shift = _check_shift(shift)
        self.reset()

    def reset(self) -> None:
        """Forget every row seen so far (an explicit ``shift`` is kept)."""
        self.n_samples_ = 0
        if self.shift is None:
            self._shift = None
            self._s = {}
        else:
            self._shift = (self.shift[0].copy(), self.shift[1].copy())
            self._s = _zero_stats(self.shift[0].shape[0], self.shift[1].shape[0])

    def update(self, A, B) -> CKAAccumulator:
        """Add the rows of A (n, p) and B (n, q); row i of A and row i of B are the same sample."""
        A, B = _pair(A, B, min_rows=1)
        if self._shift is None:
            self._shift = (A.mean(0), B.mean(0))
            self._s = _zero_stats(A.shape[1], B.shape[1])
        elif (A.shape[1], B.shape[1]) != (self._shift[0].shape[0], self._shift[1].shape[0]):
            raise ValueError(
                "A and B must keep their numbers of features across batches"
                + (" (and match the lengths of shift)" if self.shift is not None else "")
                + f"; expected ({self._shift[0].shape[0]}, {self._shift[1].shape[0]}), "
                f"got ({A.shape[1]}, {B.shape[1]})"
            )
        s = self._s
        p, q = A.shape[1], B.shape[1]
        # Rows in chunks: only a chunk is ever copied (shifted), within the chunk byte budget, and
        # the products keep an inner dimension (>= 256 rows) long enough for BLAS to run near full speed.
        rows = rows_for_bytes(8 * (p + q), min_rows=256)
        for sl in chunks(A.shape[0], rows):
            X = A[sl] - self._shift[0]
            Y = B[sl] - self._shift[1]
            s["xy"] += X.T @ Y
            s["xx"] += X.T @ X
            s["yy"] += Y.T @ Y
            s["sx"] += X.sum(0)
            s["sy"] += Y.sum(0)
            # The row-norm terms cost O(n (p + q)); keeping them always lets one pass give both estimators.
            a = np.einsum("ij,ij->i", X, X)
            b = np.einsum("ij,ij->i", Y, Y)
            s["xa"] += X.T @ a
            s["xb"] += X.T @ b
            s["ya"] += Y.T @ a
            s["yb"] += Y.T @ b
            s["a"] += a.sum()
            s["b"] += b.sum()
            s["ab"] += a @ b
            s["aa"] += a @ a
            s["bb"] += b @ b
        self.n_samples_ += A.shape[0]
        return self

    def _hsic_terms(self, debiased: bool) -> tuple[float, float, float]:
        """(HSIC(K, L), HSIC(K, K), HSIC(L, L)) for the rows seen."""
        s, n = self._s, self.n_samples_
        if not debiased:
            # ||M - u v^T / n||_F^2 = ||M||^2 - 2/n u^T M v + ||u||^2 ||v||^2 / n^2, without a
            # d x d temporary; the shift keeps u, v (column sums) small, so little cancels.
            def centred_sq(M, u, v):
                return float(np.vdot(M, M) - 2.0 / n * (u @ M @ v) + (u @ u) * (v @ v) / n**2)

            sx, sy = s["sx"], s["sy"]
            return centred_sq(s["xy"], sx, sy), centred_sq(s["xx"], sx, sx), centred_sq(s["yy"], sy, sy)
        sx, sy = s["sx"], s["sy"]
        hxy = _hsic1(
            n, float(np.vdot(s["xy"], s["xy"])), s["ab"], sx @ sx - s["a"], sy @ sy - s["b"],
            sx @ s["xy"] @ sy - sx @ s["xb"] - s["ya"] @ sy + s["ab"],
        )
        hxx = _hsic1(
            n, float(np.vdot(s["xx"], s["xx"])), s["aa"], sx @ sx - s["a"], sx @ sx - s["a"],
            sx @ s["xx"] @ sx - 2.0 * (sx @ s["xa"]) + s["aa"],
        )
        hyy = _hsic1(
            n, float(np.vdot(s["yy"], s["yy"])), s["bb"], sy @ sy - s["b"], sy @ sy - s["b"],
            sy @ s["yy"] @ sy - 2.0 * (sy @ s["yb"]) + s["bb"],
        )
        return float(hxy), float(hxx), float(hyy)

    def compute(self, debiased: bool | None = None) -> float:
        """CKA = HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L)) over every row added so far.

        ``debiased`` overrides the constructor's choice for this call (None: keep it), so one pass
        over the data gives both the biased and the debiased value.
        """
        debiased = check_optional_bool(debiased, "debiased")
        debiased = self.debiased if debiased is None else debiased
        need = 4 if debiased else 2
        if self.n_samples_ < need:
            raise ValueError(
                f"{'debiased' if debiased else 'biased'} CKA needs at least {need} samples; "
                f"got {self.n_samples_}"
                + (" (the unbiased HSIC divides by n - 3)" if debiased else "")
            )
        s, n = self._s, self.n_samples_
        for name, key_a, key_s, shift in (("A", "a", "sx", self._shift[0]), ("B", "b", "sy", self._shift[1])):
            # tr of the centred second moment, against the data's total energy: a relative spread
            # below 1e-10 is rounding noise around constant rows (e.g. a mean that is off by an ulp).
            spread = s[key_a] - s[key_s] @ s[key_s] / n
            if spread <= 1e-20 * (s[key_a] + n * float(shift @ shift)):
                raise ValueError(f"{name} has zero variance (every row is the same); CKA is undefined")
        hxy, hxx, hyy = self._hsic_terms(debiased)
        return _ratio(hxy, hxx, hyy, debiased)

    def result(self, debiased: bool | None = None) -> float:
        """The CKA over every row added or merged so far (the same as :meth:`compute`)."""
        return self.compute(debiased)

    # -- merging ----------------------------------------------------------------------------
    def merge(self, other: CKAAccumulator) -> CKAAccumulator:
        """Add ``other``'s sums and rows to this accumulator (in place); returns ``self``.

        Both must have the same ``debiased`` setting and, once they have seen rows, the same shift
        (bit for bit) and numbers of features; otherwise a ValueError says what differs. An empty
        accumulator merges as nothing; an empty one takes ``other``'s shift."""
        if not isinstance(other, CKAAccumulator):
            raise TypeError(f"other must be a CKAAccumulator; got {type(other).__name__}")
        if other is self:
            raise ValueError("cannot merge an accumulator into itself (its rows would count twice)")
        if self.debiased != other.debiased:
            raise ValueError(
                f"cannot merge CKA accumulators with different settings: debiased={self.debiased} here, "
                f"debiased={other.debiased} in other"
            )
        if other._shift is None:
            return self
        if self._shift is None:
            self._shift = (other._shift[0].copy(), other._shift[1].copy())
            self._s = {k: np.copy(v) if isinstance(v, np.ndarray) else v for k, v in other._s.items()}
            self.n_samples_ = other.n_samples_
            return self
        for mine, theirs, name in zip(self._shift, other._shift, ("A", "B")):
            if mine.shape != theirs.shape:
                raise ValueError(
                    f"cannot merge CKA accumulators over different numbers of features of {name}: "
                    f"{mine.shape[0]} here, {theirs.shape[0]} in other"
                )
            if not np.array_equal(mine, theirs):
                raise ValueError(
                    f"cannot merge CKA accumulators with different shifts of {name} (the vectors "
                    "subtracted from the rows before summing; largest difference "
                    f"{np.max(np.abs(mine - theirs)):.3g}): build every accumulator with the same "
                    "shift=(shift_A, shift_B), e.g. the column means of a first batch"
                )
        for k in _STAT_KEYS:
            self._s[k] = self._s[k] + other._s[k]
        self.n_samples_ += other.n_samples_
        return self

    # -- state ------------------------------------------------------------------------------
    def state(self) -> dict:
        """The accumulator as a plain dict (picklable; values are numbers, bools, None, float64
        numpy arrays and one nested dict ``sums`` of them): ``kind``, ``version``, ``debiased``,
        ``n``, ``shift`` (the shift in use, a list of two vectors, or None before any row),
        ``shift_given`` (whether it was passed to the constructor) and ``sums`` (the row sums of
        the class docstring). Arrays are copies."""
        return {
            "kind": self._KIND,
            "version": 1,
            "debiased": self.debiased,
            "n": int(self.n_samples_),
            "shift": None if self._shift is None else [self._shift[0].copy(), self._shift[1].copy()],
            "shift_given": self.shift is not None,
            "sums": {k: (np.copy(v) if isinstance(v, np.ndarray) else float(v)) for k, v in self._s.items()},
        }

    @classmethod
    def from_state(cls, state: dict) -> CKAAccumulator:
        """The accumulator a :meth:`state` describes; it can take more rows, merge and compute."""
        if not isinstance(state, dict):
            raise TypeError(f"state must be the dict returned by CKAAccumulator.state(); got {type(state).__name__}")
        missing = {"kind", "version", "debiased", "n", "shift", "shift_given", "sums"} - set(state)
        if missing or state.get("kind") != cls._KIND:
            raise ValueError(
                "state must be the dict returned by CKAAccumulator.state(); "
                + (f"missing keys {sorted(missing)}" if missing else f"got kind={state.get('kind')!r}")
            )
        if state["version"] != 1:
            raise ValueError(f"state has version {state['version']!r}; this featurelens reads version 1")
        shift = _check_shift(None if state["shift"] is None else tuple(state["shift"]))
        given = check_bool(state["shift_given"], "state['shift_given']")
        new = cls(debiased=check_bool(state["debiased"], "state['debiased']"), shift=shift if given else None)
        n = check_int(state["n"], "state['n']", low=0)
        if shift is None:
            if n:
                raise ValueError(f"state has n={n} rows but no shift; expected the shift in use")
            return new
        sums = state["sums"]
        if not isinstance(sums, dict):
            raise TypeError(f"state['sums'] must be a dict of arrays and numbers; got {type(sums).__name__}")
        shapes = _stat_shapes(shift[0].shape[0], shift[1].shape[0])
        s = {}
        for k, shape in shapes.items():
            if k not in sums:
                raise ValueError(f"state['sums'] lacks {k!r}")
            arr = as_numpy(sums[k], f"state['sums'][{k!r}]")
            check_floating(arr, f"state['sums'][{k!r}]")
            if arr.shape != shape:
                raise ValueError(f"state['sums'][{k!r}] must have shape {shape}; got {arr.shape}")
            s[k] = np.array(arr, dtype=np.float64) if shape else float(arr)
        new._shift, new._s, new.n_samples_ = shift, s, n
        return new

    # -- torch.distributed --------------------------------------------------------------------
    def all_reduce(self, group=None) -> CKAAccumulator:
        """Sum the row sums and counts of every rank of a ``torch.distributed`` process group, in
        place (one ``dist.all_reduce`` of a float64 tensor), after checking that every rank has the
        same ``debiased`` setting, numbers of features and shift (pass the same ``shift=`` on every
        rank; ranks without rows take part and adopt it). Every rank then holds the global sums, so
        ``result()`` is the CKA over all ranks' rows. Call it on every rank of ``group`` (default:
        the whole world). Raises RuntimeError when torch.distributed is not initialised."""
        import torch

        from ._distributed import dist_agree, dist_device, dist_module

        dist = dist_module("CKAAccumulator.all_reduce")
        dev = dist_device(dist, group)
        what = "CKA accumulators"
        dist_agree(dist, np.array([float(self.debiased)]), True, group, dev, "debiased", what)
        known = self._shift is not None
        dims = np.array([float(self._shift[0].shape[0]), float(self._shift[1].shape[0])]) if known else np.zeros(2)
        dims = dist_agree(dist, dims, known, group, dev, "numbers of features (p, q)", what)
        if dims is None:
            return self  # no rank has a shift, hence no rows
        p, q = int(dims[0]), int(dims[1])
        vec = np.concatenate(self._shift) if known else np.zeros(p + q)
        shift = dist_agree(dist, vec, known, group, dev, "shift (pass the same shift= on every rank)", what)
        stats = self._s if known else _zero_stats(p, q)
        flat = np.concatenate([[float(self.n_samples_)]] + [np.ravel(stats[k]) for k in _STAT_KEYS])
        t = torch.from_numpy(flat).to(dev)
        dist.all_reduce(t, op=dist.ReduceOp.SUM, group=group)
        flat = t.cpu().numpy()
        self.n_samples_ = round(float(flat[0]))
        pos, s = 1, {}
        for k, shape in _stat_shapes(p, q).items():
            size = int(np.prod(shape))
            s[k] = flat[pos : pos + size].reshape(shape).copy() if shape else float(flat[pos])
            pos += size
        self._s = s
        if not known:
            self._shift = (shift[:p].copy(), shift[p:].copy())
        return self

    def __repr__(self) -> str:
        return f"CKAAccumulator(debiased={self.debiased}, n_samples_={self.n_samples_})"


def _ratio(hxy: float, hxx: float, hyy: float, debiased: bool) -> float:
    if not debiased:
        for h, name in ((hxx, "A"), (hyy, "B")):
            if h <= 0.0:
                raise ValueError(f"{name} has zero variance (every row is the same); CKA is undefined")
        return hxy / math.sqrt(hxx * hyy)
    if hxx <= 0.0 or hyy <= 0.0:
        # The unbiased HSIC is an inner product of U-centred Gram matrices, so the self-terms are
        # >= 0; 0 means a degenerate (e.g. constant) representation, and round-off can push it below.
        warnings.warn(
            f"the unbiased HSIC of {'A' if hxx <= 0.0 else 'B'} with itself is not positive "
            f"({min(hxx, hyy):.3g}): a degenerate representation; debiased CKA is undefined (NaN)",
            RuntimeWarning,
            stacklevel=3,
        )
        return float("nan")
    return hxy / math.sqrt(hxx * hyy)


def _check_spread(raw: np.ndarray, centred: np.ndarray, name: str) -> None:
    """Refuse a representation whose rows are all equal (to rounding): CKA is 0/0 there."""
    if np.vdot(centred, centred) <= 1e-20 * np.vdot(raw, raw):
        raise ValueError(f"{name} has zero variance (every row is the same); CKA is undefined")


def _rbf_gram(X: np.ndarray, sigma, median_factor: float, name: str) -> np.ndarray:
    sq = np.einsum("ij,ij->i", X, X)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (X @ X.T), 0.0)
    np.fill_diagonal(d2, 0.0)
    if sigma is None:
        iu = np.triu_indices(X.shape[0], k=1)
        med = float(np.median(np.sqrt(d2[iu])))
        if med <= 0.0:
            raise ValueError(
                f"the median pairwise distance of {name} is 0 (most rows are identical); "
                f"pass sigma= explicitly"
            )
        sigma = median_factor * med
    return np.exp(-d2 / (2.0 * float(sigma) ** 2))


def _gram_hsic(K: np.ndarray, L: np.ndarray, debiased: bool) -> float:
    """HSIC of two Gram matrices: tr(K H L H) (biased, unnormalised) or the unbiased HSIC_1."""
    n = K.shape[0]
    if not debiased:
        Kc = K - K.mean(0, keepdims=True) - K.mean(1, keepdims=True) + K.mean()
        return float(np.sum(Kc * L))  # tr(HKH L) = tr(KHLH)
    Kt = K - np.diag(np.diag(K))
    Lt = L - np.diag(np.diag(L))
    k1, l1 = Kt.sum(1), Lt.sum(1)
    return float(_hsic1(n, float(np.sum(Kt * Lt)), 0.0, k1.sum(), l1.sum(), float(k1 @ l1)))


def cka(
    A, B, kernel: str = "linear", debiased: bool = True, sigma=None, median_factor: float = 1.0, method: str = "auto"
) -> float:
    """Centred kernel alignment between two representations of the same n samples.

        CKA(K, L) = HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L)),   K = k(A, A), L = l(B, B)

    Linear kernel (K = A A^T): with column-centred A_c, B_c the biased value is
    ``||A_c^T B_c||_F^2 / (||A_c^T A_c||_F ||B_c^T B_c||_F)``, computed in feature space
    (O(n (p^2 + q^2 + p q)) work, O(p^2 + q^2 + p q) memory; no n x n matrix). ``debiased=True``
    replaces HSIC by the unbiased estimator of Song et al. (2012), also evaluated in feature space
    through row norms and column sums (derivation in the module source); the normalising factors
    (1/(n-1)^2, 1/(n(n-3))) cancel. Biased CKA of independent data is far from 0 when d is not
    small against n; the debiased value is close to 0.

    ``method`` (linear kernel only): "features" always uses the feature-space form; "gram" the
    n x n Gram matrices (the same algebra, O(n^2 (p + q)) work, O(n^2) memory); "auto" (default)
    takes the Gram form only when it is the smaller one, n (p + q) < p^2 + q^2 + p q (few samples
    of wide features, e.g. a 500-row probe set of 2048-d features), so memory never exceeds the
    feature-space form's. Both give the same value to rounding.

    RBF kernel: K_ij = exp(-||a_i - a_j||^2 / (2 sigma^2)) through n x n Gram matrices, with
    ``sigma = median_factor * median_{i<j} ||a_i - a_j||`` chosen separately for A and B when
    ``sigma`` is None (an explicit ``sigma`` is used for both).

    Kornblith, Norouzi, Lee, Hinton, "Similarity of Neural Network Representations Revisited",
    ICML 2019, arXiv 1905.00414; Song et al., JMLR 2012 (unbiased HSIC); Nguyen, Raghu, Kornblith,
    2021, arXiv 2010.15327 (debiased CKA).

    Parameters
    ----------
    A, B : (n, p) and (n, q) arrays or tensors, rows = the same samples (extra dims are flattened).
    kernel : "linear" or "rbf".
    debiased : bool, default True. Needs n >= 4.
    sigma : float or None, RBF bandwidth (absolute); None = median heuristic.
    median_factor : float, multiplies the median distance when ``sigma`` is None.
    method : "auto", "features" or "gram" (linear kernel).

    Returns
    -------
    float in [-1, 1] (biased: [0, 1]; the unbiased HSIC is an inner product of U-centred Gram
    matrices, so Cauchy-Schwarz bounds the debiased value too); 1 for representations equal up to
    an orthogonal transform and isotropic scaling (linear kernel). A representation with zero
    variance raises ValueError; NaN with a RuntimeWarning if a debiased self-HSIC is still not
    positive (a degenerate configuration).

    For data too large for memory, feed batches to :class:`CKAAccumulator` (exact for the linear
    kernel).
    """
    kernel = check_option(kernel, "kernel", _KERNELS)
    debiased = check_bool(debiased, "debiased")
    method = check_option(method, "method", _LINEAR_METHODS)
    sigma = check_float(sigma, "sigma", low=0.0, low_inclusive=False, allow_none=True)
    median_factor = check_float(median_factor, "median_factor", low=0.0, low_inclusive=False)
    A, B = _pair(A, B, min_rows=1)
    need = 4 if debiased else 2
    if A.shape[0] < need:
        raise ValueError(
            f"{'debiased' if debiased else 'biased'} CKA needs at least {need} samples (rows of A and B); "
            f"got {A.shape[0]}"
        )
    if kernel == "linear":
        n, p, q = A.shape[0], A.shape[1], B.shape[1]
        if method == "features" or (method == "auto" and n * (p + q) >= p * p + q * q + p * q):
            acc = CKAAccumulator(debiased=debiased)
            acc.update(A, B)  # one batch: the shift is the exact column mean
            return acc.compute()
        X, Y = A - A.mean(0), B - B.mean(0)  # HSIC (both estimators) is translation invariant
        _check_spread(A, X, "A")
        _check_spread(B, Y, "B")
        K, L = X @ X.T, Y @ Y.T
        return _ratio(_gram_hsic(K, L, debiased), _gram_hsic(K, K, debiased), _gram_hsic(L, L, debiased), debiased)
    K = _rbf_gram(A, sigma, median_factor, "A")
    L = _rbf_gram(B, sigma, median_factor, "B")
    return _ratio(_gram_hsic(K, L, debiased), _gram_hsic(K, K, debiased), _gram_hsic(L, L, debiased), debiased)
