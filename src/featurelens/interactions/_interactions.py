"""The :class:`Interactions` container and :func:`exact`.

Terms are a sparse dict ``{T: value}`` whose keys are sorted tuples of distinct players (``()`` is
the constant). The terms live either in a *basis*, in which they define a surrogate of the game,

* Moebius (AND basis): ``v(S) = sum_T a(T) [T subset of S]``,
* Fourier (parity / Walsh-Hadamard basis): ``v(S) = sum_K F(K) (-1)^{|K & S|}``,

or in an interaction *index* (Shapley and Banzhaf values, SII, BII, k-SII, STII, FSII, FBII),
derived from the Moebius coefficients by the closed forms of Grabisch (1997), Sundararajan et al.
(2020, arXiv:1902.05622) and Tsai, Yeh & Ravikumar (2023, arXiv:2203.00870), as collected by
Kang et al. (2025, SPEX, arXiv:2502.13870). An index is a summary, not a basis: it is not invertible
to the game, so only basis terms predict, score and convert.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import os
from itertools import permutations

import numpy as np
import scipy.sparse

from .._random import numpy_rng
from .._validation import check_executor, check_int, check_option
from .._budgets import check_budget
from .._coalitions import shapley_from_table
from ..games import Game

__all__ = ["BASES", "INDEX_NAMES", "Interactions", "exact", "load_interactions"]

#: Terms in a basis define a surrogate of the game (predict, r2, to any index).
BASES = ("fourier", "mobius")
#: Every name an Interactions may carry: the two bases, then the interaction indices.
INDEX_NAMES = BASES + ("shapley", "banzhaf", "sii", "bii", "k-sii", "stii", "fsii", "fbii")
#: Indices of single players only; ``max_order`` is ignored for them (always 1).
_VALUES = ("shapley", "banzhaf")

_FORMAT = "featurelens.interactions/1"
#: featurelens index names and shapiq's (Interactions.to_shapiq/from_shapiq); Fourier has none.
_TO_SHAPIQ = {"mobius": "Moebius", "shapley": "SV", "banzhaf": "BV", "sii": "SII", "bii": "BII",
              "k-sii": "k-SII", "stii": "STII", "fsii": "FSII", "fbii": "FBII"}
_FROM_SHAPIQ = {v: k for k, v in _TO_SHAPIQ.items()}
#: The largest dense array :meth:`Interactions.dense` builds for order >= 3.
_DENSE_LIMIT = 2**24
#: The largest (masks x terms) block :meth:`Interactions.predict` holds at once.
_PREDICT_BLOCK = 2**22


@contextlib.contextmanager
def evaluated_on(game, executor):
    """``game`` evaluated through ``executor`` (a :mod:`featurelens.parallel` executor or any
    callable of the game hook) for the duration of the block, its own executor restored after;
    None leaves the game as it is. The game cuts its masks into the same chunks either way, so
    the values equal those of the serial path; the game's counters count in this process."""
    executor = check_executor(executor)
    if executor is None:
        yield game
        return
    if not hasattr(game, "executor"):
        raise TypeError(f"executor= needs a featurelens Game (with an executor hook); got {type(game).__name__}")
    own = game.executor
    game.executor = executor
    try:
        yield game
    finally:
        game.executor = own


def _transforms():
    # Loaded on first use: featurelens.interactions.transforms is only needed for conversions.
    return importlib.import_module(".transforms", __package__)


def _label(key: tuple) -> str:
    return "×".join(str(p) for p in key) if key else "∅"


class Interactions:
    """Sparse interaction terms in a basis (``"fourier"``, ``"mobius"``) or an index.

    Parameters
    ----------
    terms
        ``{T: value}``; ``T`` a sorted tuple of distinct players in ``0..n_players-1``, ``()`` the
        constant. Copied; the object does not change afterwards (``terms`` returns a copy).
    index
        One of :data:`INDEX_NAMES`: ``"fourier"``, ``"mobius"``, ``"shapley"``, ``"banzhaf"``,
        ``"sii"``, ``"bii"``, ``"k-sii"``, ``"stii"``, ``"fsii"``, ``"fbii"``.
    n_players
        The number of players ``n``.
    max_order
        The largest order the terms were computed to (None: all orders).
    queries
        Game (model) evaluations spent to obtain the terms.
    params
        Free provenance (JSON-able values are kept by ``save``).
    """

    def __init__(self, terms: dict, index: str, n_players: int, max_order: int | None = None,
                 queries: int = 0, params: dict | None = None):
        self._index = check_option(index, "index", INDEX_NAMES)
        self._n = check_int(n_players, "n_players", low=1)
        self._terms = _transforms().check_terms(terms, self._n, canonical=True)
        self._max_order = check_int(max_order, "max_order", low=0, allow_none=True)
        self._queries = check_int(queries, "queries", low=0)
        if params is not None and not isinstance(params, dict):
            raise TypeError(f"params must be a dict or None; got {type(params).__name__}")
        self._params = dict(params or {})
        self._incidence = None  # built on the first predict

    # -- read-only attributes ---------------------------------------------------------------
    @property
    def index(self) -> str:
        return self._index

    @property
    def n_players(self) -> int:
        return self._n

    @property
    def max_order(self) -> int | None:
        return self._max_order

    @property
    def queries(self) -> int:
        """Game (model) evaluations spent to obtain these terms."""
        return self._queries

    @property
    def params(self) -> dict:
        return dict(self._params)

    @property
    def terms(self) -> dict:
        """A copy of the terms ``{tuple of players: value}``."""
        return dict(self._terms)

    def __len__(self) -> int:
        return len(self._terms)

    def __getitem__(self, key) -> float:
        """The value of one term (0.0 when absent); ``key`` a tuple of players in any order."""
        return self._terms.get(tuple(sorted(int(p) for p in key)), 0.0)

    def __repr__(self) -> str:
        return (
            f"Interactions(index={self._index!r}, n_players={self._n}, n_terms={len(self._terms)}, "
            f"max_order={self._max_order}, queries={self._queries})"
        )

    # -- conversion -------------------------------------------------------------------------
    def to(self, index: str, max_order: int | None = None) -> "Interactions":
        """These interactions in another basis or index, as a new Interactions (same ``queries``).

        From ``"fourier"`` or ``"mobius"`` to any name in :data:`INDEX_NAMES`, through
        :func:`featurelens.interactions.transforms.convert`; ``max_order`` is the order of the
        target index (ignored for ``"shapley"`` and ``"banzhaf"``). An index is not invertible to a
        basis, so from any other index only to the same index (and order).
        """
        index = check_option(index, "index", INDEX_NAMES)
        max_order = check_int(max_order, "max_order", low=0, allow_none=True)
        if self._index not in BASES:
            same_order = max_order is None or max_order == self._max_order
            if index != self._index or not same_order:
                raise ValueError(
                    f"cannot convert {self._index!r} interactions to {index!r}"
                    f"{'' if max_order is None else f' of max_order {max_order}'}: an interaction index "
                    f"is not invertible to a basis; convert from the 'mobius' or 'fourier' terms instead, "
                    f"e.g. exact(game, index='mobius').to({index!r})"
                )
            return Interactions(self._terms, self._index, self._n, self._max_order, self._queries, self._params)
        order = None if index in _VALUES else max_order
        terms = _transforms().convert(dict(self._terms), self._index, index, self._n, max_order=order)
        if index in _VALUES:
            order = 1
        params = dict(self._params, converted_from=self._index)
        return Interactions(terms, index, self._n, order, self._queries, params)

    # -- surrogate --------------------------------------------------------------------------
    def _check_basis(self, what: str) -> None:
        if self._index not in BASES:
            raise ValueError(
                f"{what} needs terms in a basis ('fourier' or 'mobius'); these are {self._index!r} "
                f"interactions, an index that does not reconstruct the game. Compute the basis terms "
                f"(e.g. exact(game, index='mobius')) and {what} on those; .to('mobius') works on a basis only"
            )

    def predict(self, masks) -> np.ndarray:
        """The surrogate's values on ``masks`` ``(q, n)`` bool, shape ``(q,)`` float64.

        Moebius: ``v(S) = sum_T a(T) [T subset of S]``; Fourier: ``v(S) = sum_K F(K) (-1)^{|K & S|}``.
        ``|K & S|`` for all terms at once is ``masks @ incidence.T`` with the sparse ``(terms, n)``
        0/1 incidence matrix. Other indices raise a ValueError.
        """
        self._check_basis("predict")
        # Game.check_masks only reads n_players: reuse it so that masks are checked one way.
        masks = Game.check_masks(self, masks)
        if self._incidence is None:
            keys = [k for k in self._terms if k]
            sizes = np.array([len(k) for k in keys], dtype=np.int64)
            rows = np.repeat(np.arange(len(keys)), sizes)
            cols = np.array([p for k in keys for p in k], dtype=np.int64)
            inc = scipy.sparse.csr_matrix(
                (np.ones(cols.size), (rows, cols)), shape=(len(keys), self._n), dtype=np.float64
            )
            coef = np.array([self._terms[k] for k in keys], dtype=np.float64)
            self._incidence = (inc, sizes, coef)
        inc, sizes, coef = self._incidence
        q = masks.shape[0]
        out = np.full(q, self._terms.get((), 0.0), dtype=np.float64)
        if coef.size == 0 or q == 0:
            return out
        step = max(1, _PREDICT_BLOCK // coef.size)
        for start in range(0, q, step):
            block = masks[start:start + step].astype(np.float64)
            # (terms, n) @ (n, m) -> (terms, m) overlap counts, exact small integers in float64.
            counts = np.rint(np.asarray(inc @ block.T)).astype(np.int64)
            if self._index == "mobius":
                basis = (counts == sizes[:, None]).astype(np.float64)
            else:
                basis = 1.0 - 2.0 * (counts & 1)
            out[start:start + step] += coef @ basis
        return out

    def r2(self, game, n_masks: int = 1000, seed=0) -> float:
        """Faithfulness ``R^2 = 1 - ||y - y_hat||^2 / ||y - mean(y)||^2`` on ``n_masks`` uniform masks.

        Each bit of each mask is Bernoulli(1/2) from ``numpy.random.default_rng(seed)`` (``seed`` an
        int or a Generator); ``y`` are the game's values (``n_masks`` evaluations of ``game``, not
        added to ``queries``), ``y_hat`` the surrogate's (:meth:`predict`). As in SPEX (Kang et al.,
        2025, arXiv:2502.13870). A constant ``y`` gives 1.0 when predicted exactly, else 0.0 (as
        scikit-learn's ``r2_score``). Fourier and Moebius terms only.
        """
        self._check_basis("r2")
        if not callable(game) or getattr(game, "n_players", None) is None:
            raise TypeError(f"game must be a featurelens Game with n_players; got {type(game).__name__}")
        if game.n_players != self._n:
            raise ValueError(
                f"game has n_players = {game.n_players}; these interactions have n_players = {self._n}"
            )
        # The masks and the design behind predict are held whole: about 16 bytes per mask element.
        n_masks = check_budget(n_masks, "n_masks", low=2, unit="game evaluations",
                               nbytes=lambda v: 16 * v * self._n,
                               hint="lower n_masks (1000 masks estimate R^2 to about 0.01)")
        rng = numpy_rng(seed)
        masks = rng.random((n_masks, self._n)) < 0.5
        y = np.asarray(game(masks), dtype=np.float64)
        resid = float(np.sum((y - self.predict(masks)) ** 2))
        total = float(np.sum((y - y.mean()) ** 2))
        if total == 0.0:
            scale = max(1.0, float(np.abs(y).max())) ** 2 * n_masks
            return 1.0 if resid <= 1e-24 * scale else 0.0
        return 1.0 - resid / total

    # -- summaries --------------------------------------------------------------------------
    @property
    def player_names(self) -> list | None:
        """The players' names, when these interactions carry them (``params["player_names"]``, as
        :func:`featurelens.text.explain` records a text's words), else None."""
        names = self._params.get("player_names")
        return None if names is None else [str(p) for p in names]

    def top(self, k: int = 10, order: int | None = None, names=False) -> list:
        """The ``k`` terms with the largest ``|value|`` (the constant ``()`` excluded), as a list of
        ``(tuple, value)``, largest first (ties: lower order, then lexicographic); ``order``
        restricts them to terms of that many players.

        ``names=False`` (default): each term is a tuple of player indices, ``((3, 4), 0.5)``.
        ``names=True``: a tuple of the players' names (:attr:`player_names`, e.g. the words of a
        text explained by :func:`featurelens.text.explain`: ``(("not", "bad"), 0.5)``); a
        ValueError where none are carried. ``names=`` a list of ``n_players`` str: those names.
        The order of the terms is the same either way."""
        k = check_int(k, "k", low=1)
        order = check_int(order, "order", low=1, allow_none=True)
        labels = self._names_for(names)
        items = [(t, v) for t, v in self._terms.items() if t and (order is None or len(t) == order)]
        items.sort(key=lambda tv: (-abs(tv[1]), len(tv[0]), tv[0]))
        items = items[:k]
        if labels is None:
            return items
        return [(tuple(labels[p] for p in t), v) for t, v in items]

    def _names_for(self, names) -> list | None:
        """The labels :meth:`top` uses for ``names`` (False: None, the indices)."""
        if names is False or names is None:
            return None
        if names is True:
            known = self.player_names
            if known is None:
                raise ValueError(
                    "names=True needs player names, and these interactions carry none (params['player_names'], "
                    "recorded by featurelens.text.explain and fl.explainer(..., tokenizer=...)); pass names= a "
                    f"list of {self._n} str, or names=False for player indices"
                )
            if len(known) != self._n:
                raise ValueError(f"params['player_names'] holds {len(known)} names for {self._n} players")
            return known
        if isinstance(names, (str, bytes)) or not hasattr(names, "__len__"):
            raise TypeError(f"names must be False, True or a list of {self._n} str; got {type(names).__name__}")
        labels = [str(p) for p in names]
        if len(labels) != self._n:
            raise ValueError(f"names must hold one name per player ({self._n}); got {len(labels)}")
        return labels

    def dense(self, order: int = 1):
        """The order-``order`` terms as a dense symmetric array.

        ``order=0``: the constant (a float); ``1``: shape ``(n,)``; ``2``: ``(n, n)``, symmetric with
        a zero diagonal; ``k >= 3``: shape ``(n,) * k``, symmetric under any permutation of the axes
        and zero wherever two indices coincide (refused above 2^24 entries).
        """
        order = check_int(order, "order", low=0)
        if order == 0:
            return float(self._terms.get((), 0.0))
        n = self._n
        if n**order > _DENSE_LIMIT:
            raise ValueError(
                f"order={order} with n_players={n} gives a dense array of {n}^{order} entries, above the "
                f"limit of {_DENSE_LIMIT}; use .terms or .top(k, order={order}) instead"
            )
        out = np.zeros((n,) * order, dtype=np.float64)
        keys = [t for t in self._terms if len(t) == order]
        if not keys:
            return out
        idx = np.array(keys, dtype=np.int64)  # (m, order)
        vals = np.array([self._terms[t] for t in keys], dtype=np.float64)
        for perm in permutations(range(order)):
            out[tuple(idx[:, list(perm)].T)] = vals
        return out

    # -- persistence ------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> str:
        """Write to ``path`` (``.npz`` appended when missing); returns the path.

        Arrays: ``players`` ``(m, L)`` int64, each row one term's players padded with -1, ``lengths``
        ``(m,)`` and ``values`` ``(m,)``; ``meta`` a JSON string (format, index, n_players,
        max_order, queries, params). Read back by :func:`load_interactions` without pickle.
        """
        from .._serialization import to_jsonable, write_npz

        keys = list(self._terms)
        lengths = np.array([len(t) for t in keys], dtype=np.int64)
        width = int(lengths.max()) if keys else 0
        players = np.full((len(keys), width), -1, dtype=np.int64)
        for r, t in enumerate(keys):
            players[r, : len(t)] = t
        values = np.array([self._terms[t] for t in keys], dtype=np.float64)
        meta = {
            "format": _FORMAT,
            "index": self._index,
            "n_players": self._n,
            "max_order": self._max_order,
            "queries": self._queries,
            "params": to_jsonable(self._params),
        }
        return write_npz(path, {"players": players, "lengths": lengths, "values": values}, meta)

    # -- bridges ----------------------------------------------------------------------------
    def to_shapiq(self):
        """These interactions as a ``shapiq.InteractionValues`` (needs the optional package
        ``shapiq``), for shapiq's plots and tools.

        Every term is kept (the dict of terms goes over as it is, with the constant ``()`` as the
        baseline value when present); the index maps to shapiq's name (``"mobius"`` to
        ``"Moebius"``, ``"shapley"`` to ``"SV"``, ``"banzhaf"`` to ``"BV"``, ``"k-sii"`` to
        ``"k-SII"`` and the other indices to their upper-case names). ``max_order`` None (all
        orders) becomes the largest order present; ``queries`` the estimation budget. Fourier
        terms have no shapiq counterpart: convert them first (``.to("mobius")``). shapiq itself
        names an index of ``max_order`` 1 that generalises the Shapley (Banzhaf) value ``"SV"``
        (``"BV"``), so such interactions come back from :meth:`from_shapiq` as ``"shapley"``
        (``"banzhaf"``) values.
        """
        try:
            import shapiq
        except ImportError:
            raise ImportError("Interactions.to_shapiq() needs the optional package 'shapiq', which is not "
                              "installed; install it with `pip install shapiq`") from None
        if self._index not in _TO_SHAPIQ:
            raise ValueError(f"shapiq has no counterpart of {self._index!r} terms; convert them to the Moebius "
                             f"basis or an index first, e.g. interactions.to('mobius').to_shapiq()")
        orders = [len(t) for t in self._terms]
        max_order = self._max_order if self._max_order is not None else max(orders, default=0)
        # min_order is the smallest order present, so shapiq adds no constant term of its own.
        min_order = min(orders, default=0)
        estimated = bool(self._params.get("estimated", self._params.get("method") != "exact"))
        return shapiq.InteractionValues(
            dict(self._terms), index=_TO_SHAPIQ[self._index], max_order=max(max_order, min_order),
            n_players=self._n, min_order=min_order, estimated=estimated,
            estimation_budget=self._queries or None, baseline_value=float(self._terms.get((), 0.0)),
        )

    @classmethod
    def from_shapiq(cls, interaction_values) -> "Interactions":
        """Interactions from a ``shapiq.InteractionValues``: every term (its ``dict_values``),
        the index (shapiq's names mapped back, see :meth:`to_shapiq`), ``n_players``,
        ``max_order`` and the estimation budget as ``queries``."""
        iv = interaction_values
        for attribute in ("interactions", "index", "n_players", "max_order"):
            if not hasattr(iv, attribute):
                raise TypeError(f"from_shapiq needs a shapiq.InteractionValues; got {type(iv).__name__} "
                                f"(no attribute {attribute!r})")
        if iv.index not in _FROM_SHAPIQ:
            raise ValueError(f"shapiq index {iv.index!r} has no featurelens counterpart; expected one of "
                             f"{sorted(_FROM_SHAPIQ)}")
        terms = {tuple(sorted(int(p) for p in key)): float(value) for key, value in iv.interactions.items()}
        params = {"from": "shapiq", "estimated": bool(getattr(iv, "estimated", True)),
                  "baseline_value": float(getattr(iv, "baseline_value", 0.0))}
        return cls(terms, _FROM_SHAPIQ[iv.index], int(iv.n_players), max_order=int(iv.max_order),
                   queries=int(getattr(iv, "estimation_budget", None) or 0), params=params)

    # -- plots ------------------------------------------------------------------------------
    def plot_top(self, k: int = 20, ax=None):
        """Bar chart of the :meth:`top` ``k`` terms (labels like ``"3×7"``, red positive, blue
        negative); returns the matplotlib Figure."""
        from ..plots.maps import subplot_grid

        items = self.top(k)
        if ax is None:
            _, axes = subplot_grid(1, size=4.0)
            ax = axes[0, 0]
        values = np.array([v for _, v in items], dtype=np.float64)
        ax.bar(np.arange(len(items)), values, color=np.where(values >= 0, "#c0392b", "#2e86c1"))
        ax.set_xticks(np.arange(len(items)))
        ax.set_xticklabels([_label(t) for t, _ in items], rotation=90, fontsize=7)
        ax.axhline(0.0, color="black", linewidth=0.5)
        ax.set_ylabel("value")
        ax.set_title(f"top {len(items)} {self._index} terms", fontsize=9)
        return ax.figure

    def plot_network(self, ax=None, k: int = 30):
        """The top ``k`` pairwise terms as a circular network: players are nodes on a circle (size
        by ``|order-1 value|`` when there are any), one line per pair with width proportional to
        ``|value|``, red positive and blue negative; returns the matplotlib Figure."""
        from ..plots.maps import subplot_grid

        pairs = self.top(k, order=2)
        if ax is None:
            _, axes = subplot_grid(1, size=5.0)
            ax = axes[0, 0]
        n = self._n
        angle = np.pi / 2 - 2 * np.pi * np.arange(n) / n
        xy = np.stack([np.cos(angle), np.sin(angle)], axis=1)
        biggest = max((abs(v) for _, v in pairs), default=1.0) or 1.0
        for (i, j), v in pairs:
            ax.plot(
                xy[[i, j], 0], xy[[i, j], 1], color="#c0392b" if v >= 0 else "#2e86c1",
                linewidth=0.5 + 5.0 * abs(v) / biggest, alpha=0.8, zorder=1, solid_capstyle="round",
            )
        first = self.dense(1)
        top1 = float(np.abs(first).max())
        sizes = 40.0 + (200.0 * np.abs(first) / top1 if top1 > 0 else 0.0)
        ax.scatter(xy[:, 0], xy[:, 1], s=sizes, color="#dddddd", edgecolors="black", linewidths=0.5, zorder=2)
        if n <= 64:
            for p in range(n):
                ax.text(1.12 * xy[p, 0], 1.12 * xy[p, 1], str(p), ha="center", va="center", fontsize=7)
        ax.set_xlim(-1.3, 1.3)
        ax.set_ylim(-1.3, 1.3)
        ax.set_aspect("equal")
        ax.set_axis_off()
        ax.set_title(f"{len(pairs)} pairwise {self._index} terms", fontsize=9)
        return ax.figure


def load_interactions(path: str | os.PathLike) -> Interactions:
    """Read interactions written by ``Interactions.save`` (``allow_pickle=False``).

    The file is checked against the format: ``players`` (ints, ``(m, L)``, each row one term's
    players padded with -1), ``lengths`` (ints, ``(m,)``, in ``[0, L]``), ``values`` (numbers,
    ``(m,)``: one per term) and ``meta`` (a JSON object with exactly ``format``, ``index`` (one of
    :data:`INDEX_NAMES`), ``n_players`` (an int >= 1), ``max_order`` (an int >= 0 or null),
    ``queries`` (an int >= 0) and ``params`` (an object)); terms must be distinct sorted tuples of
    players below ``n_players`` with finite values. Any violation (and a corrupt or truncated
    archive, an object array, broken JSON) raises
    ``featurelens._serialization.SavedFileError``, a ``ValueError`` naming the file, the field,
    what was found and what was expected; a missing file raises ``FileNotFoundError``.
    """
    from .. import _serialization as ser
    from .._random import numpy_rng
    from .._validation import check_int, check_option

    kind = "interactions"
    path, arrays = ser.read_npz(path, kind, ("players", "lengths", "values", "meta"))
    meta = ser.read_meta(path, kind, arrays["meta"], _FORMAT)
    ser.check_keys(path, kind, meta, ("format", "index", "n_players", "max_order", "queries", "params"))
    index = ser.meta_field(path, kind, meta, "index", check_option, INDEX_NAMES)
    n_players = ser.meta_field(path, kind, meta, "n_players", check_int, low=1)
    max_order = ser.meta_field(path, kind, meta, "max_order", check_int, low=0, allow_none=True)
    queries = ser.meta_field(path, kind, meta, "queries", check_int, low=0)
    if not isinstance(meta["params"], dict):
        raise ser.SavedFileError(path, kind, "meta field 'params'",
                                 f"found a {type(meta['params']).__name__}; expected a JSON object")
    players = ser.array_field(path, kind, arrays, "players", "iu", ndim=(2,))
    lengths = ser.array_field(path, kind, arrays, "lengths", "iu", ndim=(1,))
    values = ser.array_field(path, kind, arrays, "values", "iuf", ndim=(1,))
    m, width = players.shape
    for name, array in (("lengths", lengths), ("values", values)):
        if array.shape[0] != m:
            raise ser.SavedFileError(
                path, kind, f"array {name!r}",
                f"found {array.shape[0]} entries for {m} terms (rows of 'players'); expected one per term",
            )
    if m and (lengths.min() < 0 or lengths.max() > width):
        bad = int(lengths[(lengths < 0) | (lengths > width)][0])
        raise ser.SavedFileError(path, kind, "array 'lengths'",
                                 f"found the length {bad}; expected lengths in [0, {width}] (the width of 'players')")
    padding = np.arange(width)[None, :] >= lengths[:, None]
    if bool((players[padding] != -1).any()):
        row = int(np.flatnonzero((padding & (players != -1)).any(axis=1))[0])
        raise ser.SavedFileError(path, kind, "array 'players'",
                                 f"row {row} holds players beyond its length {int(lengths[row])}; expected -1 padding")
    terms = {}
    for row, length, value in zip(players.tolist(), lengths.tolist(), values.tolist()):
        key = tuple(row[:length])
        if key in terms:
            raise ser.SavedFileError(path, kind, "array 'players'",
                                     f"found the term {key} twice; expected each term once")
        terms[key] = value
    try:
        return Interactions(terms, index, n_players, max_order=max_order, queries=queries, params=meta["params"])
    except (TypeError, ValueError) as err:
        raise ser.SavedFileError(path, kind, "arrays 'players'/'values'", str(err)) from None


def exact(game, index: str = "mobius", max_order: int | None = None, tol: float | None = None,
          executor=None) -> Interactions:
    """Exact interactions of ``game`` from all ``2^n`` coalition values.

    The table ``v(S)`` of every coalition (``transforms.game_table``, ``n <= 20``; larger games are
    refused at once with the memory they would need) gives the
    Moebius coefficients ``a(T) = sum_{S subset of T} (-1)^{|T|-|S|} v(S)`` (or, for
    ``index="fourier"``, ``F(K) = 2^{-n} sum_S (-1)^{|K & S|} v(S)``), then ``index`` through
    ``transforms.convert`` with ``max_order`` (ignored for ``"shapley"``/``"banzhaf"``). Shapley
    values come straight from the table (:func:`featurelens.approximators.shapley_from_table`).

    ``tol``: transform coefficients with ``|value| <= tol`` are dropped before conversion; None means
    ``1e-12 * max|v(S)|``, which removes only the transform's rounding noise. ``queries`` is the
    number of game evaluations spent (``2^n``).

    ``executor``: evaluate the coalitions on an executor's workers (:mod:`featurelens.parallel`,
    or any callable of the game hook) instead of the game's own; the values are those of the
    serial path.
    """
    index = check_option(index, "index", INDEX_NAMES)
    max_order = check_int(max_order, "max_order", low=0, allow_none=True)
    if not isinstance(game, Game):
        raise TypeError(f"game must be a featurelens Game; got {type(game).__name__}")
    n = game.n_players
    tr = _transforms()
    before = game.calls
    with evaluated_on(game, executor):
        table = np.asarray(tr.game_table(game), dtype=np.float64)
    queries = game.calls - before
    if tol is None:
        tol = 1e-12 * float(np.abs(table).max()) if table.size else 0.0
    elif isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol >= 0:
        raise ValueError(f"tol must be a non-negative number or None; got {tol!r}")
    params = {"method": "exact", "tol": float(tol)}
    if index == "shapley":
        # The one exact-Shapley routine, shared with featurelens.approximators.exact_shapley.
        phi = shapley_from_table(table, n)
        return Interactions({(i,): float(v) for i, v in enumerate(phi)}, index, n, max_order=1, queries=queries,
                            params=params)
    basis = "fourier" if index == "fourier" else "mobius"
    coef = tr.fourier_transform(table) if basis == "fourier" else tr.mobius_transform(table)
    terms = tr.table_to_terms(coef, tol=float(tol))
    order = None if index in _VALUES else max_order
    if index != basis or order is not None:
        terms = tr.convert(terms, basis, index, n, max_order=order)
    if index in _VALUES:
        order = 1
    return Interactions(terms, index, n, max_order=order, queries=queries, params=params)
