"""Exact transforms of set functions and conversions between interaction representations.

Conventions
-----------
Players are ``0..n-1``; a coalition ``S`` is a subset of them.

*Tables* hold a set function on all ``2^n`` coalitions, indexed by bitmask: player ``i`` is bit
``i``, so coalition ``S`` sits at index ``sum_{i in S} 2^i`` (see :func:`featurelens.games.all_masks`). The dense
transforms act on the last axis of an array whose last axis has length ``2^n``.

*Terms* are sparse representations: dicts ``{tuple of sorted player indices: float}``; the empty
tuple ``()`` is the constant (order-0) term.

Bases
-----
Möbius transform (Grabisch 1997, "k-order additive discrete fuzzy measures and their
representation", Fuzzy Sets and Systems 92): ``v(S) = sum_{T subset S} a(T)``, equivalently
``a(S) = sum_{T subset S} (-1)^{|S|-|T|} v(T)``.

Fourier (Walsh-Hadamard) transform with the sign convention of SPEX (Kang, Butler, Agarwal,
Erginbas, Pedarsani, Ramchandran, Yu 2025, "SPEX: Scaling Feature Interaction Explanations for
LLMs", arXiv:2502.13870): ``f(S) = sum_K F(K) (-1)^{|K cap S|}``, so
``F(K) = 2^{-n} sum_S (-1)^{|K cap S|} f(S)``. The two bases are related by (SPEX, Appendix C)::

    a(S) = (-2)^{|S|} sum_{K superset S} F(K)
    F(K) = (-1)^{|K|} sum_{S superset K} a(S) / 2^{|S|}

Interaction indices from Möbius coefficients ``a`` (``s = |S|``, ``t = |T|``, sums over ``T``
superset ``S``):

* Shapley value ``SV_i = sum_{T ni i} a(T) / t`` and Banzhaf value
  ``BV_i = sum_{T ni i} a(T) / 2^{t-1}`` (order-1 terms ``{(i,): value}``, no constant term).
* Shapley interaction index (Grabisch 1997) ``SII(S) = sum_T a(T) / (t - s + 1)`` and Banzhaf
  interaction index ``BII(S) = sum_T a(T) / 2^{t-s}`` (Grabisch & Roubens 1999, "An axiomatic
  approach to the concept of interaction among players in cooperative games"), for
  ``1 <= s <= max_order`` (no constant term).
* k-SII of order ``k`` (Bord, Lopez-Paz et al. / Fumagalli, Muschalik, Kolpaczki, Hüllermeier,
  Hammer 2023, "SHAP-IQ: Unified Approximation of any-order Shapley Interactions",
  arXiv:2303.01179): the SII aggregated with the Bernoulli numbers ``B_0 = 1, B_1 = -1/2, ...``,
  ``kSII(S) = sum_{j=0}^{k-s} B_j sum_{U superset S, |U| = s+j} SII(U)`` for ``1 <= s <= k``,
  plus the constant ``() : v(empty)``, so that all terms sum to ``v(N)``.
* Shapley-Taylor interaction index of order ``l`` (Sundararajan, Dhamdhere, Agarwal 2020, "The
  Shapley Taylor Interaction Index", ICML): ``a(S)`` for ``s < l`` (including ``()``) and
  ``sum_T a(T) / C(t, l)`` for ``s = l``.
* Faithful Shapley and Banzhaf interaction indices of order ``l`` (Tsai, Yeh, Ravikumar 2023,
  "Faith-Shap: The Faithful Shapley Interaction Index", JMLR 24, eqs. 13 and 16), for
  ``0 <= s <= l`` (including ``()``)::

      FBII(S) = a(S) + (-1)^{l-s} sum_{T, t > l} a(T) 2^{-(t-s)} C(t-s-1, l-s)
      FSII(S) = a(S) + (-1)^{l-s} s/(s+l) C(l, s) sum_{T, t > l} a(T) C(t-1, l) / C(t+l-1, l+s)

  FSII and FBII are the coefficients of the best order-``l`` Möbius polynomial approximation of
  ``v`` in weighted least squares, with Shapley-kernel weights (``v(empty)`` and ``v(N)`` fitted
  exactly) for FSII and uniform weights for FBII.

The test suite checks every index above against its definition by brute force over all
coalitions of small random games.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from itertools import combinations
from typing import Dict, Mapping, Tuple

import numpy as np

from .._coalitions import coalition_table
from .._validation import check_int


__all__ = [
    "INDICES",
    "SOURCES",
    "MAX_EXPANSION_ORDER",
    "game_table",
    "mobius_transform",
    "inverse_mobius_transform",
    "fourier_transform",
    "inverse_fourier_transform",
    "table_to_terms",
    "terms_to_table",
    "fourier_to_mobius",
    "mobius_to_fourier",
    "mobius_to_shapley",
    "mobius_to_banzhaf",
    "mobius_to_sii",
    "mobius_to_bii",
    "mobius_to_ksii",
    "mobius_to_stii",
    "mobius_to_fsii",
    "mobius_to_fbii",
    "convert",
]

Terms = Dict[Tuple[int, ...], float]

#: Valid ``source`` names of :func:`convert`.
SOURCES = ("fourier", "mobius")
#: Valid ``target`` names of :func:`convert`.
INDICES = ("fourier", "mobius", "shapley", "banzhaf", "sii", "bii", "k-sii", "stii", "fsii", "fbii")
#: Targets of :func:`convert` that need ``max_order``.
_NEED_ORDER = ("k-sii", "stii", "fsii", "fbii")
#: Largest term order the sparse Fourier <-> Möbius conversions expand over all its subsets
#: (``2^order`` subsets per term).
MAX_EXPANSION_ORDER = 16


# ---------------------------------------------------------------------------------------------
# Full tables
# ---------------------------------------------------------------------------------------------
def game_table(game, max_players: int = 20) -> np.ndarray:
    """Evaluate ``game`` on every coalition: a ``(2^n,)`` float64 table in bitmask order.

    ``game`` is a :class:`featurelens.games.Game` (anything with ``n_players`` that maps a
    ``(q, n)`` bool mask array to ``q`` values). The masks are generated and evaluated chunk by
    chunk (:func:`featurelens.approximators.coalition_table`); games with more than
    ``max_players`` players are refused at once, with the evaluations and the memory they would
    need: use a sampling explainer or SPEX for them instead.
    """
    n = getattr(game, "n_players", None)
    if n is None or not callable(game):
        raise TypeError(f"game must be a Game (callable with an n_players attribute); got {type(game).__name__}")
    # The table, its transform and the dict of up to 2^n terms (about 200 bytes each) of exact().
    return coalition_table(
        game, max_players, method="exact interactions (game_table)", bytes_per_coalition=216.0,
        way_out="Use SPEX (featurelens.interactions.spex) or ProxySPEX for games this large, a sampling "
                "explainer for Shapley values, group players, or raise max_players.",
    )


def _table_n(table, name: str = "table") -> Tuple[np.ndarray, int]:
    arr = np.array(table, dtype=np.float64)  # a copy: the butterflies work in place
    if arr.ndim == 0:
        raise ValueError(f"{name} must be an array whose last axis has length 2^n; got a scalar")
    size = arr.shape[-1]
    if size < 1 or size & (size - 1):
        raise ValueError(f"{name} has last-axis length {size}; expected a power of two, 2^n")
    return arr, size.bit_length() - 1


def _butterfly(table, kind: str) -> np.ndarray:
    arr, n = _table_n(table)
    lead = arr.shape[:-1]
    flat = arr.reshape(-1, 2**n)
    batch = flat.shape[0]
    if batch == 0:
        return arr
    for i in range(n):
        view = flat.reshape(batch, -1, 2, 2**i)  # axis 2 is bit i
        lo, hi = view[:, :, 0, :], view[:, :, 1, :]
        if kind == "mobius":
            hi -= lo
        elif kind == "zeta":
            hi += lo
        else:  # walsh-hadamard
            tmp = lo.copy()
            lo += hi
            hi *= -1.0
            hi += tmp
    return flat.reshape(*lead, 2**n)


def mobius_transform(table) -> np.ndarray:
    """Möbius transform of a table (last axis ``2^n``, bitmask order):
    ``a(S) = sum_{T subset S} (-1)^{|S|-|T|} v(T)``, the inverse of ``v(S) = sum_{T subset S} a(T)``
    (Grabisch 1997). Fast butterfly, ``O(n 2^n)``; returns a new float64 array."""
    return _butterfly(table, "mobius")


def inverse_mobius_transform(table) -> np.ndarray:
    """Inverse Möbius (zeta) transform: ``v(S) = sum_{T subset S} a(T)``, ``O(n 2^n)``."""
    return _butterfly(table, "zeta")


def fourier_transform(table) -> np.ndarray:
    """Fourier (Walsh-Hadamard) coefficients ``F(K) = 2^{-n} sum_S (-1)^{|K cap S|} f(S)``, so that
    ``f(S) = sum_K F(K) (-1)^{|K cap S|}`` (the SPEX convention, Kang et al. 2025,
    arXiv:2502.13870). Fast butterfly, ``O(n 2^n)``."""
    out = _butterfly(table, "wht")
    out /= out.shape[-1]
    return out


def inverse_fourier_transform(table) -> np.ndarray:
    """Inverse of :func:`fourier_transform`: ``f(S) = sum_K F(K) (-1)^{|K cap S|}``."""
    return _butterfly(table, "wht")


def table_to_terms(table, tol: float = 0.0) -> Terms:
    """The entries of a 1-D table (bitmask order) with ``|value| > tol`` as a term dict
    ``{sorted player tuple: float}`` (``tol = 0``: drop exact zeros only)."""
    arr, n = _table_n(table)
    if arr.ndim != 1:
        raise ValueError(f"table must be 1-D, shape (2^n,); got shape {arr.shape}")
    if not (tol >= 0):
        raise ValueError(f"tol must be a non-negative number; got {tol!r}")
    idx = np.flatnonzero(np.abs(arr) > tol)
    bits = (idx[:, None] >> np.arange(n, dtype=np.int64)[None, :]) & 1
    return {tuple(int(i) for i in np.flatnonzero(b)): float(arr[k]) for k, b in zip(idx, bits)}


def terms_to_table(terms: Mapping, n: int) -> np.ndarray:
    """The dense ``(2^n,)`` float64 table (bitmask order) of a term dict over ``n`` players;
    coalitions without a term are 0."""
    n = check_int(n, "n", low=0)
    terms = check_terms(terms, n)
    table = np.zeros(2**n, dtype=np.float64)
    for key, value in terms.items():
        table[sum(1 << i for i in key)] += value
    return table


# ---------------------------------------------------------------------------------------------
# Validation helpers
# ---------------------------------------------------------------------------------------------
def check_terms(terms: Mapping, n: int | None = None, canonical: bool = False) -> Terms:
    """The one check of a term dict ``{tuple of players: value}``: keys to sorted tuples of Python
    ints (an int key is one player), values to finite floats; keys that normalise to the same
    coalition are summed. ``n``: players must lie in ``0..n-1``. ``canonical=True`` (the stored
    terms of :class:`~featurelens.interactions.Interactions` and planted games) refuses keys that
    are not already sorted tuples of distinct ints instead of normalising them."""
    if not isinstance(terms, Mapping):
        raise TypeError(f"terms must be a dict {{tuple of players: float}}; got {type(terms).__name__}")
    out: Terms = {}
    for key, value in terms.items():
        if canonical:
            ok = isinstance(key, tuple) and all(
                isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_)) for p in key
            ) and all(a < b for a, b in zip(key, key[1:])) and all(0 <= p and (n is None or p < n) for p in key)
            if not ok:
                bound = f" in 0..{n - 1} (n_players = {n})" if n is not None else ""
                raise ValueError(f"terms keys must be sorted tuples of distinct players{bound}; got the key {key!r}")
        if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
            key = (key,)
        try:
            players = [int(i) for i in key]
        except (TypeError, ValueError):
            raise ValueError(f"term key {key!r} is not a tuple of player indices") from None
        norm = tuple(sorted(players))
        if len(set(norm)) != len(norm):
            raise ValueError(f"term key {key!r} repeats a player")
        if norm and norm[0] < 0:
            raise ValueError(f"term key {key!r} has a negative player index")
        if n is not None and norm and norm[-1] >= n:
            raise ValueError(f"term key {key!r} has a player index >= n_players = {n}")
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"terms[{key!r}] must be a real number; got {type(value).__name__}")
        v = float(value)
        if not math.isfinite(v):
            raise ValueError(f"term {key!r} has the non-finite value {value!r}; expected a finite number")
        out[norm] = out.get(norm, 0.0) + v
    return out




def _drop_zeros(terms: Terms) -> Terms:
    return {k: v for k, v in terms.items() if v != 0.0}


def _sorted(terms: Terms) -> Terms:
    return dict(sorted(terms.items(), key=lambda kv: (len(kv[0]), kv[0])))


def _check_expansion(key: Tuple[int, ...], limit: int, what: str) -> None:
    if len(key) > limit:
        raise ValueError(
            f"{what} expands every term over its subsets; the term {key[:8]}{'...' if len(key) > 8 else ''} "
            f"has order {len(key)} > max_expansion_order = {limit} (2^{len(key)} subsets). Truncate the "
            "terms to lower orders or raise max_expansion_order."
        )


def _subsets(key: Tuple[int, ...], max_size: int | None = None, min_size: int = 0):
    top = len(key) if max_size is None else min(max_size, len(key))
    for size in range(min_size, top + 1):
        yield from combinations(key, size)


# ---------------------------------------------------------------------------------------------
# Sparse Fourier <-> Möbius
# ---------------------------------------------------------------------------------------------
def fourier_to_mobius(terms: Mapping, max_expansion_order: int = MAX_EXPANSION_ORDER) -> Terms:
    """Möbius coefficients ``a(S) = (-2)^{|S|} sum_{K superset S} F(K)`` of sparse Fourier terms
    (Kang et al. 2025, arXiv:2502.13870, Appendix C). Every term ``K`` is expanded over its
    ``2^{|K|}`` subsets; terms of order above ``max_expansion_order`` raise a ValueError. Exact
    zeros are dropped."""
    terms = check_terms(terms)
    out: Terms = {}
    for key, value in terms.items():
        _check_expansion(key, max_expansion_order, "fourier_to_mobius")
        for sub in _subsets(key):
            out[sub] = out.get(sub, 0.0) + (-2.0) ** len(sub) * value
    return _sorted(_drop_zeros(out))


def mobius_to_fourier(terms: Mapping, max_expansion_order: int = MAX_EXPANSION_ORDER) -> Terms:
    """Fourier coefficients ``F(K) = (-1)^{|K|} sum_{S superset K} a(S) / 2^{|S|}`` of sparse Möbius
    terms (Kang et al. 2025, Appendix C); every term is expanded over its subsets (order at most
    ``max_expansion_order``). Exact zeros are dropped."""
    terms = check_terms(terms)
    out: Terms = {}
    for key, value in terms.items():
        _check_expansion(key, max_expansion_order, "mobius_to_fourier")
        scaled = value / 2.0 ** len(key)
        for sub in _subsets(key):
            out[sub] = out.get(sub, 0.0) + (-scaled if len(sub) % 2 else scaled)
    return _sorted(_drop_zeros(out))


# ---------------------------------------------------------------------------------------------
# Möbius -> values and indices
# ---------------------------------------------------------------------------------------------
def _aggregate(terms: Mapping, weight, max_size: int, min_size: int) -> Terms:
    """``out(S) = sum_{T superset S} weight(|T|, |S|) a(T)`` for ``min_size <= |S| <= max_size``."""
    terms = check_terms(terms)
    out: Terms = {}
    cache: Dict[Tuple[int, int], float] = {}
    for key, value in terms.items():
        t = len(key)
        for sub in _subsets(key, max_size=max_size, min_size=min_size):
            s = len(sub)
            w = cache.get((t, s))
            if w is None:
                w = cache[(t, s)] = float(weight(t, s))
            if w != 0.0:
                out[sub] = out.get(sub, 0.0) + w * value
    return _sorted(_drop_zeros(out))


def _values(terms: Mapping, weight, n_players: int | None) -> Terms:
    if n_players is None:
        return _aggregate(terms, weight, max_size=1, min_size=1)
    n = check_int(n_players, "n_players", low=0)
    out = _aggregate(check_terms(terms, n), weight, max_size=1, min_size=1)
    return {(i,): out.get((i,), 0.0) for i in range(n)}


def mobius_to_shapley(terms: Mapping, n_players: int | None = None) -> Terms:
    """Shapley values ``SV_i = sum_{T ni i} a(T) / |T|`` as order-1 terms ``{(i,): value}``; no
    constant term (efficiency: the values sum to ``v(N) - v(empty)``). With ``n_players`` every
    player ``0..n_players-1`` gets a term (0.0 included); without it, exact zeros are left out."""
    return _values(terms, lambda t, s: 1.0 / t, n_players)


def mobius_to_banzhaf(terms: Mapping, n_players: int | None = None) -> Terms:
    """Banzhaf values ``BV_i = sum_{T ni i} a(T) / 2^{|T|-1}`` as order-1 terms ``{(i,): value}``;
    no constant term. ``n_players`` as in :func:`mobius_to_shapley`."""
    return _values(terms, lambda t, s: 0.5 ** (t - 1), n_players)


def _max_or_all(max_order, terms: Terms) -> int:
    if max_order is None:
        return max((len(k) for k in terms), default=0)
    return check_int(max_order, "max_order", low=1)


def mobius_to_sii(terms: Mapping, max_order: int | None = None) -> Terms:
    """Shapley interaction index (Grabisch 1997) ``SII(S) = sum_{T superset S} a(T)/(|T|-|S|+1)``
    for ``1 <= |S| <= max_order`` (None: up to the highest order in ``terms``); no constant term."""
    terms = check_terms(terms)
    return _aggregate(terms, lambda t, s: 1.0 / (t - s + 1), _max_or_all(max_order, terms), 1)


def mobius_to_bii(terms: Mapping, max_order: int | None = None) -> Terms:
    """Banzhaf interaction index ``BII(S) = sum_{T superset S} a(T) / 2^{|T|-|S|}`` (Grabisch &
    Roubens 1999) for ``1 <= |S| <= max_order`` (None: all orders); no constant term."""
    terms = check_terms(terms)
    return _aggregate(terms, lambda t, s: 0.5 ** (t - s), _max_or_all(max_order, terms), 1)


def _bernoulli(m: int) -> list:
    """Bernoulli numbers ``B_0..B_m`` as Fractions, with ``B_1 = -1/2``."""
    b = [Fraction(1)]
    for k in range(1, m + 1):
        b.append(-sum(math.comb(k + 1, j) * b[j] for j in range(k)) / (k + 1))
    return b


def mobius_to_ksii(terms: Mapping, order: int) -> Terms:
    """k-Shapley interaction index of order ``k = order`` (SHAP-IQ, Fumagalli et al. 2023,
    arXiv:2303.01179; Bord et al.): the SII aggregated with Bernoulli numbers,
    ``kSII(S) = sum_{j=0}^{k-|S|} B_j sum_{U superset S, |U| = |S|+j} SII(U)`` for
    ``1 <= |S| <= k``, plus the constant ``() : a(()) = v(empty)``; all terms sum to ``v(N)``.

    In Möbius form a term ``a(T)`` adds ``w(|T|, |S|) a(T)`` to every ``S subset T`` with
    ``w(t, s) = sum_{j=0}^{min(k,t)-s} B_j C(t-s, j) / (t-s-j+1)``, which is 1 if ``s = t`` and 0
    if ``s < t <= k``: order-``k`` k-SII of a game of order at most ``k`` is its Möbius transform,
    and order 1 is the Shapley value."""
    k = check_int(order, "order", low=1)
    terms = check_terms(terms)
    bern = _bernoulli(k)

    def weight(t: int, s: int) -> float:
        if s == 0:
            return 1.0 if t == 0 else 0.0
        total = Fraction(0)
        for j in range(0, min(k, t) - s + 1):
            total += bern[j] * math.comb(t - s, j) / (t - s - j + 1)
        return float(total)

    return _aggregate(terms, weight, max_size=k, min_size=0)


def mobius_to_stii(terms: Mapping, order: int) -> Terms:
    """Shapley-Taylor interaction index of order ``l = order`` (Sundararajan, Dhamdhere, Agarwal
    2020): ``STII(S) = a(S)`` for ``|S| < l`` (including the constant ``()``) and
    ``STII(S) = sum_{T superset S} a(T) / C(|T|, l)`` for ``|S| = l``. All terms sum to ``v(N)``."""
    l = check_int(order, "order", low=1)

    def weight(t: int, s: int) -> float:
        if s < l:
            return 1.0 if t == s else 0.0
        return 1.0 / math.comb(t, l)

    return _aggregate(terms, weight, max_size=l, min_size=0)


def mobius_to_fbii(terms: Mapping, order: int) -> Terms:
    """Faithful Banzhaf interaction index of order ``l = order`` (Tsai, Yeh, Ravikumar 2023,
    "Faith-Shap", JMLR 24, eq. 13), for ``0 <= |S| <= l`` (including the constant ``()``)::

        FBII(S) = a(S) + (-1)^{l-s} sum_{T superset S, |T| > l} a(T) 2^{-(|T|-s)} C(|T|-s-1, l-s)

    the coefficients of the uniformly weighted least-squares approximation of ``v`` by a Möbius
    polynomial of order ``l``."""
    l = check_int(order, "order", low=1)

    def weight(t: int, s: int) -> float:
        if t <= l:
            return 1.0 if t == s else 0.0
        return (-1.0) ** (l - s) * 0.5 ** (t - s) * math.comb(t - s - 1, l - s)

    return _aggregate(terms, weight, max_size=l, min_size=0)


def mobius_to_fsii(terms: Mapping, order: int) -> Terms:
    """Faithful Shapley interaction index of order ``l = order`` (Tsai, Yeh, Ravikumar 2023,
    "Faith-Shap", JMLR 24, eq. 16), for ``0 <= |S| <= l`` (including the constant ``()``)::

        FSII(S) = a(S) + (-1)^{l-s} s/(s+l) C(l, s)
                         sum_{T superset S, |T| > l} a(T) C(|T|-1, l) / C(|T|+l-1, l+s)

    the coefficients of the Shapley-kernel weighted least-squares approximation of ``v`` by a
    Möbius polynomial of order ``l`` that is exact on the empty and the grand coalition. All terms
    sum to ``v(N)``."""
    l = check_int(order, "order", low=1)

    def weight(t: int, s: int) -> float:
        if t <= l:
            return 1.0 if t == s else 0.0
        return (
            (-1.0) ** (l - s)
            * s
            / (s + l)
            * math.comb(l, s)
            * math.comb(t - 1, l)
            / math.comb(t + l - 1, l + s)
        )

    return _aggregate(terms, weight, max_size=l, min_size=0)


# ---------------------------------------------------------------------------------------------
# Dispatcher
# ---------------------------------------------------------------------------------------------
def convert(terms: Mapping, source: str, target: str, n_players: int, max_order: int | None = None) -> Terms:
    """Convert sparse terms from ``source`` (one of :data:`SOURCES`: ``"fourier"``, ``"mobius"``)
    to ``target`` (one of :data:`INDICES`).

    ``max_order`` is required for ``"k-sii"``, ``"stii"``, ``"fsii"`` and ``"fbii"`` (the order of
    the index); for ``"sii"``, ``"bii"``, ``"fourier"`` and ``"mobius"`` it is optional and
    truncates the result to terms of order at most ``max_order``; it is ignored by ``"shapley"`` and
    ``"banzhaf"`` (order 1). ``n_players`` validates the player indices of ``terms``; the Shapley
    and Banzhaf values hold a term for every player ``0..n_players-1`` (0.0 included), the other
    targets drop exact zeros.

    Which terms carry a constant ``()``: ``fourier``, ``mobius`` (when nonzero), ``k-sii``,
    ``stii``, ``fsii`` and ``fbii``; ``shapley``, ``banzhaf``, ``sii`` and ``bii`` have none.
    """
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}; valid sources: {', '.join(SOURCES)}")
    if target not in INDICES:
        raise ValueError(f"unknown target {target!r}; valid targets: {', '.join(INDICES)}")
    n = check_int(n_players, "n_players", low=0)
    terms = check_terms(terms, n)
    if target in _NEED_ORDER:
        if max_order is None:
            raise ValueError(f"target {target!r} needs max_order, the order of the index")
        max_order = check_int(max_order, "max_order", low=1)
    elif max_order is not None and target not in ("shapley", "banzhaf"):
        max_order = check_int(max_order, "max_order", low=1)

    if source == target:
        out = _sorted(_drop_zeros(dict(terms)))
    elif target == "fourier":
        out = mobius_to_fourier(terms)
    else:
        mobius = terms if source == "mobius" else fourier_to_mobius(terms)
        if target == "mobius":
            out = _sorted(_drop_zeros(dict(mobius)))
        elif target == "shapley":
            return mobius_to_shapley(mobius, n)
        elif target == "banzhaf":
            return mobius_to_banzhaf(mobius, n)
        elif target == "sii":
            return mobius_to_sii(mobius, max_order)
        elif target == "bii":
            return mobius_to_bii(mobius, max_order)
        elif target == "k-sii":
            return mobius_to_ksii(mobius, max_order)
        elif target == "stii":
            return mobius_to_stii(mobius, max_order)
        elif target == "fsii":
            return mobius_to_fsii(mobius, max_order)
        else:
            return mobius_to_fbii(mobius, max_order)
    if max_order is not None:
        out = {k: v for k, v in out.items() if len(k) <= max_order}
    return out
