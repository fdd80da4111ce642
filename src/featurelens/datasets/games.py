"""Sparse games with planted interactions: ground truth for interaction and attribution methods.

A :class:`SparseGame` over ``n`` players is a sum of a few planted terms ``c_T``, one per subset
``T`` of players, in one of two bases (``S`` is a coalition, ``m`` its 0/1 mask vector):

* Moebius (``basis="mobius"``): ``v(S) = sum_T c_T [T subset of S]``; the ``c_T`` are then exactly
  the Moebius transform (Harsanyi dividends) of ``v``, ``c_T = sum_{S subset of T} (-1)^{|T|-|S|} v(S)``.
* Fourier (``basis="fourier"``): ``v(m) = sum_T c_T (-1)^{<m, k_T>} = sum_T c_T (-1)^{|T & S|}``,
  with ``k_T`` the 0/1 indicator vector of ``T``; the sign convention of SPEX (J. Kang, L. Butler,
  A. Agarwal, Y. E. Erginbas, R. Pedarsani, K. Ramchandran, B. Yu, "SPEX: Scaling feature interaction
  explanations for LLMs", ICML 2025, arXiv:2502.13870), ``f(m) = sum_k F[k] (-1)^{<m, k>}``. The
  ``c_T`` are the Walsh-Hadamard coefficients of ``v``:
  ``c_T = 2^{-n} sum_S v(S) (-1)^{|T & S|}``.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse

from .._random import numpy_rng, spawn_rngs
from .._validation import check_float, check_int, check_option
from .._budgets import check_budget
from ..interactions.transforms import check_terms
from ..games import Executor, Game

__all__ = ["SparseGame", "sparse_game", "BASES"]

BASES = ("mobius", "fourier")

#: Magnitudes of planted coefficients are drawn uniformly from this interval (sign +-1 at random),
#: so every planted term is clearly nonzero.
COEFFICIENT_RANGE = (0.5, 1.5)


def _check_players(n, name: str) -> int:
    """The players of a sparse game: an int >= 1, at most
    ``featurelens._budgets.MAX_EVALUATIONS`` (one coalition is ``n`` mask entries, and the
    incidence matrix holds ``n + 1`` offsets)."""
    return check_budget(n, name, unit="mask entries", what="per coalition", nbytes=lambda v: 16 * (v + 1),
                        hint=f"lower {name}")


def _check_mobius_terms(k, name: str) -> int:
    """The exact Moebius signal std pairs every term with every other: ``k^2`` pairs, held as four
    dense ``(k, k)`` float64 arrays; refused above the evaluation bound or the memory available."""
    return check_budget(k, name, per=k, unit="term pairs", what="for the exact signal std of the Moebius basis",
                        nbytes=lambda v: 32 * v * v, hint=f"lower {name}, or use basis='fourier'")


class SparseGame(Game):
    """A game given by a few terms ``{T: c_T}`` in the Moebius or the Fourier basis (module docstring).

    Parameters
    ----------
    n_players
        The number of players ``n``.
    terms
        ``{tuple of sorted distinct player indices: coefficient}``; the empty tuple ``()`` is the
        constant term.
    basis
        ``"mobius"`` or ``"fourier"``.
    noise
        Relative noise level: each evaluation gets i.i.d. Gaussian noise of std
        ``noise * signal_std``, where ``signal_std`` is the std of the noiseless value over uniformly
        random masks (each player in ``S`` with probability 1/2), computed exactly:
        Fourier, ``signal_std^2 = sum_{T != {}} c_T^2`` (the characters are orthonormal);
        Moebius, ``signal_std^2 = sum_{T, U} c_T c_U (2^{-|T u U|} - 2^{-|T|-|U|})``.
    seed
        Seed (or numpy Generator) of the noise; the game owns its generator, so the sequence of
        noisy values is reproducible from a fresh game with the same seed. The noise is drawn in the
        calling process after the executor returns, in row order.
    batch_size, executor
        See :class:`featurelens.games.Game` (``batch_size`` mask rows per chunk; None: 1024).

    Attributes
    ----------
    terms
        A copy of the terms dict. ``basis``, ``noise``, ``n_players``, ``signal_std``, ``noise_std``.
    """

    def __init__(
        self,
        n_players: int,
        terms: dict,
        basis: str = "mobius",
        noise: float = 0.0,
        seed=0,
        batch_size: int | None = None,
        executor: Executor | None = None,
    ):
        n_players = _check_players(n_players, "n_players")
        super().__init__(n_players, chunk_size=batch_size, executor=executor)
        basis = check_option(basis, "basis", BASES)
        noise = check_float(noise, "noise", low=0)
        n = self.n_players
        clean = check_terms(terms, n, canonical=True)
        if basis == "mobius":
            _check_mobius_terms(sum(1 for t in clean if t), "len(terms)")
        self._terms = clean
        self.basis = basis
        self.noise = noise
        self.constant = clean.get((), 0.0)
        nonconst = [t for t in clean if t]
        self._coef = np.array([clean[t] for t in nonconst], dtype=np.float64)
        self._sizes = np.array([len(t) for t in nonconst], dtype=np.int64)
        rows = np.repeat(np.arange(len(nonconst)), self._sizes)
        cols = np.array([i for t in nonconst for i in t], dtype=np.int64)
        # (n_terms, n) 0/1 incidence matrix: masks @ M.T counts |T & S| for every term at once.
        self._incidence = scipy.sparse.csr_matrix(
            (np.ones(cols.size), (rows, cols)), shape=(len(nonconst), n), dtype=np.float64
        )
        self.signal_std = self._signal_std()
        self.noise_std = noise * self.signal_std
        self._rng = numpy_rng(seed)

    @property
    def terms(self) -> dict:
        return dict(self._terms)

    def _signal_std(self) -> float:
        c = self._coef
        if c.size == 0:
            return 0.0
        if self.basis == "fourier":
            return float(np.sqrt(np.sum(c**2)))
        # |T u U| = |T| + |U| - |T & U|, with |T & U| from the incidence matrix.
        inter = (self._incidence @ self._incidence.T).toarray()
        union = self._sizes[:, None] + self._sizes[None, :] - inter
        cov = np.exp2(-union) - np.exp2(-(self._sizes[:, None] + self._sizes[None, :]))
        return float(np.sqrt(max(0.0, c @ cov @ c)))

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        m = masks.shape[0]
        if self._coef.size == 0:
            return np.full(m, self.constant)
        # (n_terms, n) @ (n, m) -> (n_terms, m) overlap counts |T & S|, exact in float64.
        counts = np.asarray(self._incidence @ masks.T.astype(np.float64)).T
        if self.basis == "mobius":
            basis_values = counts == self._sizes[None, :]
        else:
            basis_values = 1.0 - 2.0 * (np.rint(counts).astype(np.int64) % 2)
        return self.constant + basis_values @ self._coef

    def __call__(self, masks) -> np.ndarray:
        values = super().__call__(masks)
        if self.noise > 0:
            values = values + self._rng.normal(0.0, self.noise_std, size=values.shape[0])
        return values

    def __repr__(self) -> str:
        return (
            f"SparseGame(n_players={self.n_players}, n_terms={len(self._coef)}, basis={self.basis!r}, "
            f"noise={self.noise}, calls={self.calls})"
        )


def sparse_game(
    n: int = 1000,
    n_terms: int = 40,
    max_degree: int = 3,
    basis: str = "mobius",
    noise: float = 0.0,
    seed=0,
    batch_size: int | None = None,
) -> SparseGame:
    """A random :class:`SparseGame` with ``n_terms`` planted terms.

    The support is ``n_terms`` distinct nonempty subsets: each subset's degree is drawn uniformly in
    ``1..max_degree`` and its players uniformly without replacement (sorted tuples); a subset drawn
    twice is drawn again. Each coefficient is ``+-1`` at random times a magnitude uniform in
    ``COEFFICIENT_RANGE`` ``= [0.5, 1.5]``. The constant term ``terms[()]`` is 0.0, so
    ``len(game.terms) == n_terms + 1``. ``seed`` fixes both the terms and the noise sequence (two
    independent streams spawned from it). See :class:`SparseGame` for the bases and the noise.

    ``n`` and ``n_terms`` are refused before any work above
    ``featurelens._budgets.MAX_EVALUATIONS`` (10^8); in the Moebius basis ``n_terms^2`` (the
    term pairs of the exact signal std) is bounded too, and its memory (``32 n_terms^2`` bytes).
    """
    n = _check_players(n, "n")
    max_degree = check_int(max_degree, "max_degree", low=1, high=n)
    basis = check_option(basis, "basis", BASES)
    n_terms = check_budget(n_terms, "n_terms", unit="planted terms")
    if basis == "mobius":
        _check_mobius_terms(n_terms, "n_terms")
    possible = sum(math.comb(n, d) for d in range(1, max_degree + 1))
    if n_terms > possible:
        raise ValueError(
            f"n_terms must be at most the number of nonempty subsets of degree <= max_degree={max_degree} "
            f"of n={n} players, {possible}; got {n_terms}"
        )
    check_float(noise, "noise", low=0)
    term_rng, noise_rng = spawn_rngs(seed, 2)

    support: list[tuple] = []
    seen: set[tuple] = set()
    while len(support) < n_terms:
        degree = int(term_rng.integers(1, max_degree + 1))
        t = tuple(sorted(int(i) for i in term_rng.choice(n, size=degree, replace=False)))
        if t not in seen:
            seen.add(t)
            support.append(t)
    low, high = COEFFICIENT_RANGE
    magnitude = term_rng.uniform(low, high, size=n_terms)
    sign = term_rng.choice(np.array([-1.0, 1.0]), size=n_terms)
    terms = {(): 0.0}
    terms.update({t: float(s * a) for t, s, a in zip(support, sign, magnitude)})
    return SparseGame(n, terms, basis=basis, noise=noise, seed=noise_rng, batch_size=batch_size)
