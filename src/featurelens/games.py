"""Games: set functions over ``n`` players, the value functions of black-box explainers.

A :class:`Game` maps a boolean mask matrix ``masks`` of shape ``(q, n)`` (row ``r`` is a coalition
``S_r``: ``masks[r, i]`` is True when player ``i`` is in ``S_r``) to ``q`` float64 values
``v(S_1), ..., v(S_q)`` and counts how many mask rows it evaluated (``calls``).

Evaluation is batched, and every game evaluates through one hook, its *executor*:

``executor(evaluate_chunk, masks, chunk_size) -> values``
    ``evaluate_chunk`` maps a ``(m, n)`` bool numpy array with ``m <= chunk_size`` to ``m`` float64
    values; ``masks`` is the validated ``(q, n)`` bool array; the executor returns the ``q`` values
    in the order of the rows of ``masks``. The default, :func:`local_executor`, evaluates the chunks
    given by ``featurelens._batching.chunks`` one after the other in this process. Another
    executor (:mod:`featurelens.parallel`: threads, processes, Ray, Dask) may evaluate the chunks in
    any order and anywhere, as long as it returns the values in row order; ``evaluate_chunk`` is a
    bound method of the game, so it pickles with the game, and a game pickles without its executor
    (an unpickled game has the local one). Counting stays in the calling process: ``calls`` (and a
    MaskedModel's ``model_calls`` and its Model's ``calls``) are added when the executor returns,
    never on a worker, so every executor gives the same counts.

:class:`MaskedModel` builds the game of one model on one input ``x``: a kept player keeps its
input values and a dropped player is replaced by a baseline value, or averaged over background rows
(the interventional, or marginal, expectation), optionally weighted: :func:`summarize_background`
summarises a training set into ``k`` weighted rows (k-means centres weighted by cluster size, or a
uniform sample), a :class:`Background`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from featurelens._optional import is_tensor, torch

from ._batching import check_batch_size, chunks
from ._random import numpy_rng, parse_seed
from ._validation import (
    as_numpy,
    check_floating,
    check_int,
    check_option,
    numpy_to_tensor,
    resolve_baseline,
)
from .models import Model

__all__ = ["Background", "Game", "FunctionGame", "MaskedModel", "all_masks", "local_executor", "summarize_background"]

Executor = Callable[[Callable[[np.ndarray], np.ndarray], np.ndarray, int], np.ndarray]


def local_executor(evaluate_chunk: Callable[[np.ndarray], np.ndarray], masks: np.ndarray, chunk_size: int) -> np.ndarray:
    """The default executor: evaluate ``masks`` in consecutive chunks of at most ``chunk_size`` rows,
    one after the other, and concatenate the values (float64, in row order)."""
    parts = [evaluate_chunk(masks[s]) for s in chunks(masks.shape[0], chunk_size)]
    if not parts:
        return np.zeros(0, dtype=np.float64)
    return np.concatenate(parts)


def all_masks(n: int) -> np.ndarray:
    """All ``2^n`` coalitions of ``n`` players as a ``(2^n, n)`` bool array in bitmask order:
    row ``r`` holds player ``i`` iff bit ``i`` of ``r`` is set. (Exact methods do not build it:
    :func:`featurelens.approximators.coalition_table` generates its rows chunk by chunk.)"""
    n = check_int(n, "n", low=0)
    rows = np.arange(2**n, dtype=np.int64)
    return ((rows[:, None] >> np.arange(n, dtype=np.int64)[None, :]) & 1).astype(bool)


@dataclass(frozen=True, eq=False)
class Background:
    """Weighted background rows: ``rows`` (numpy array, tensor or DataFrame, shape
    ``(B, *input_shape)``) and ``weights`` (float64, shape ``(B,)``, non-negative, summing to 1).

    :class:`MaskedModel` (and every explainer taking ``background=``) averages the model over the
    rows with these weights, ``v(S) = sum_j w_j f(x_S, b_{j, not S})``. Unpacks as a pair:
    ``rows, weights = summarize_background(X_train, k=50)``. Made by :func:`summarize_background`.
    """

    rows: object
    weights: np.ndarray

    def __post_init__(self):
        n = _n_rows(self.rows, "rows")
        object.__setattr__(self, "weights", _check_weights(self.weights, n))

    def __iter__(self):
        return iter((self.rows, self.weights))

    def __len__(self) -> int:
        return int(self.weights.shape[0])

    def __repr__(self) -> str:
        return f"Background({len(self)} rows of shape {tuple(_shape(self.rows)[1:])}, weights summing to 1)"


def _shape(rows) -> tuple:
    return tuple(rows.shape) if hasattr(rows, "shape") else np.shape(rows)


def _n_rows(rows, name: str) -> int:
    shape = _shape(rows)
    if len(shape) < 2 or shape[0] < 1:
        raise ValueError(f"background {name} must be a batch of rows, shape (B >= 1, *input_shape); got shape {shape}")
    return int(shape[0])


def _check_weights(weights, n: int) -> np.ndarray:
    """Background weights as float64 ``(n,)``, finite, non-negative, normalised to sum 1."""
    w = as_numpy(weights, "background weights")
    if w.dtype.kind not in "biuf":
        raise TypeError(f"background weights must be numbers; got dtype {w.dtype}")
    w = w.astype(np.float64).reshape(-1) if w.ndim == 1 else w.astype(np.float64)
    if w.shape != (n,):
        raise ValueError(f"background weights must have one weight per row, shape ({n},); got shape {w.shape}")
    if not bool(np.isfinite(w).all()) or bool((w < 0).any()) or not w.sum() > 0:
        raise ValueError(
            "background weights must be finite, non-negative and not all zero (they are normalised to sum 1); "
            f"got min {w.min()}, sum {w.sum()}"
        )
    return w / w.sum()


def split_background(background):
    """``(rows, weights or None)`` from a :class:`Background`, a ``(rows, weights)`` pair (rows a
    batch of ndim >= 2, weights 1-D with one entry per row) or plain rows."""
    if isinstance(background, Background):
        return background.rows, background.weights
    if isinstance(background, tuple) and len(background) == 2:
        rows, weights = background
        rs, ws = _shape(rows), np.shape(weights)
        if len(rs) >= 2 and len(ws) == 1:
            if ws[0] != rs[0]:  # a (rows, weights) pair whose lengths differ, not rows of another shape
                raise ValueError(
                    f"background=(rows, weights) needs one weight per row; got {rs[0]} rows (shape {tuple(rs)}) "
                    f"and {ws[0]} weights"
                )
            return rows, _check_weights(weights, rs[0])
    return background, None


def summarize_background(X, k: int = 50, method: str = "kmeans", seed=0) -> Background:
    """Summarise background rows ``X`` (numpy, tensor or DataFrame, shape ``(n, *input_shape)``)
    into at most ``k`` weighted rows, a :class:`Background` to pass as ``background=``.

    ``method="kmeans"``: the centres of k-means on the rows (scikit-learn's ``KMeans``, seeded,
    ``n_init=10``; Lloyd 1982) weighted by cluster size / n, the summary shap's Kernel explainer
    recommends (Lundberg & Lee 2017, arXiv 1705.07874). When ``X`` has at most ``k`` distinct rows
    they are returned with weights (count / n), so the weighted background equals ``X`` exactly.
    ``method="sample"``: ``k`` rows drawn uniformly without replacement, weights ``1 / k``. With
    ``k >= n`` (sample) every row is kept. A DataFrame gives a DataFrame with the same columns
    (sampled rows keep their dtypes; k-means centres are float64). The cost of a black-box
    explanation grows linearly with the number of background rows, so ``k`` of 10 to 100 is usual.
    """
    k = check_int(k, "k", low=1)
    method = check_option(method, "method", ("kmeans", "sample"))
    seed = parse_seed(seed)
    frame = X if hasattr(X, "columns") and hasattr(X, "iloc") else None
    if frame is not None:
        kinds = {str(c): getattr(dt, "kind", "O") for c, dt in frame.dtypes.items()}
        bad = [c for c, kind in kinds.items() if kind not in "biuf"]
        if bad and method == "sample":  # rows are kept as they are: categories stay categories
            n = frame.shape[0]
            if n < 1:
                raise ValueError(f"X must have at least one row; got shape {frame.shape}")
            idx = np.arange(n) if k >= n else np.sort(numpy_rng(seed).choice(n, size=k, replace=False))
            return Background(frame.iloc[idx], np.full(idx.size, 1.0 / idx.size))
        if bad:
            raise ValueError(
                f"X has non-numeric columns {bad[:10]}, which k-means cannot average; use "
                "method='sample' (rows kept as they are)"
            )
        arr = frame.to_numpy(dtype=np.float64)
    else:
        arr = as_numpy(X, "X")
        check_floating(arr, "X")
    if arr.ndim < 2 or arr.shape[0] < 1:
        raise ValueError(f"X must be a batch of rows, shape (n >= 1, *input_shape); got shape {arr.shape}")
    check_floating(arr.astype(np.float64, copy=False), "X")
    n, input_shape = arr.shape[0], arr.shape[1:]
    flat = arr.reshape(n, -1)
    rng = numpy_rng(seed)
    if method == "sample":
        if k >= n:
            idx = np.arange(n)
        else:
            idx = np.sort(rng.choice(n, size=k, replace=False))
        rows = frame.iloc[idx] if frame is not None else arr[idx]
        return Background(rows, np.full(idx.size, 1.0 / idx.size))
    unique, counts = np.unique(flat, axis=0, return_counts=True)
    if unique.shape[0] <= k:
        centres, weights = unique, counts.astype(np.float64) / n
    else:
        from sklearn.cluster import KMeans

        km = KMeans(n_clusters=k, n_init=10, random_state=int(rng.integers(2**31 - 1))).fit(flat.astype(np.float64))
        sizes = np.bincount(km.labels_, minlength=k).astype(np.float64)
        keep = sizes > 0
        centres, weights = km.cluster_centers_[keep], sizes[keep] / n
    centres = centres.reshape(-1, *input_shape)
    if frame is not None:
        import pandas as pd

        rows = pd.DataFrame(centres, columns=frame.columns)
    else:
        rows = centres.astype(arr.dtype if arr.dtype.kind == "f" else np.float64, copy=False)
    return Background(rows, weights)


class Game:
    """A set function over ``n_players`` players, evaluated on boolean mask matrices.

    ``game(masks)`` takes ``masks`` of shape ``(q, n_players)`` (numpy or torch), bool or integer
    0/1 (converted to bool), and returns the ``q`` values ``v(S_r)`` as a float64 numpy array. A
    1-D mask of length ``n_players`` is accepted as one row and gives an array of shape ``(1,)``.
    Anything else raises a ValueError/TypeError naming ``masks``.

    Subclasses implement ``_evaluate(masks) -> values`` for a ``(m, n)`` bool chunk with
    ``m <= chunk_size``; ``__call__`` validates the masks, sends them through ``executor`` (see
    the module docstring for the protocol), checks that there is one finite value per row and adds
    the number of rows to ``calls``.

    Parameters
    ----------
    n_players
        The number of players ``n``.
    chunk_size
        The most mask rows per call of ``_evaluate`` (None: 1024).
    executor
        ``executor(evaluate_chunk, masks, chunk_size) -> values``; None: :func:`local_executor`.
        A :mod:`featurelens.parallel` executor (threads, processes, Ray, Dask) gives the values of
        the serial path; the game pickles without it (see the module docstring).
    """

    def __init__(self, n_players: int, chunk_size: int | None = None, executor: Executor | None = None):
        self.n_players = check_int(n_players, "n_players", low=1)
        self.chunk_size = check_batch_size(chunk_size)
        if executor is not None and not callable(executor):
            raise TypeError(
                "executor must be a callable executor(evaluate_chunk, masks, chunk_size) -> values; "
                f"got {type(executor).__name__}"
            )
        self.executor = executor if executor is not None else local_executor
        self.calls = 0  # mask rows evaluated since construction

    # -- to implement -----------------------------------------------------------------------
    def _evaluate(self, masks: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError  # pragma: no cover - abstract

    # -- evaluation -------------------------------------------------------------------------
    def check_masks(self, masks) -> np.ndarray:
        """Validate ``masks`` and return them as a C-contiguous ``(q, n_players)`` bool numpy array."""
        n = self.n_players
        expected = f"expected a bool (or integer 0/1) array of shape (q, {n}) (n_players = {n})"
        if is_tensor(masks):
            arr = masks.detach().cpu().numpy()
        else:
            arr = np.asarray(masks)
        if arr.ndim == 1 and arr.shape[0] == n:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != n:
            raise ValueError(f"masks has shape {arr.shape}; {expected}")
        if arr.dtype == np.bool_:
            return np.ascontiguousarray(arr)
        if arr.dtype.kind in "iu":
            if arr.size and not bool(((arr == 0) | (arr == 1)).all()):
                bad = arr[(arr != 0) & (arr != 1)][0]
                raise ValueError(f"masks holds the integer {bad}; {expected}")
            return np.ascontiguousarray(arr.astype(bool))
        raise TypeError(f"masks has dtype {arr.dtype}; {expected}")

    def _evaluate_chunk(self, masks: np.ndarray) -> np.ndarray:
        """``_evaluate`` on one chunk, with its output checked to hold one number per row."""
        out = self._evaluate(masks)
        values = as_numpy(out, "values")
        if values.shape != (masks.shape[0],):
            raise ValueError(
                f"the game must return one value per mask row, shape ({masks.shape[0]},); "
                f"got shape {values.shape}"
            )
        if values.dtype.kind not in "biuf":
            raise TypeError(f"the game must return numbers; got values of dtype {values.dtype}")
        return values.astype(np.float64, copy=False)

    def __call__(self, masks) -> np.ndarray:
        """Values ``v(S_r)`` of the coalitions given by the rows of ``masks``, shape ``(q,)``, float64."""
        masks = self.check_masks(masks)
        q = masks.shape[0]
        values = np.asarray(self._run_executor(masks), dtype=np.float64)
        if values.shape != (q,):
            raise ValueError(f"the executor must return {q} values, shape ({q},); got shape {values.shape}")
        finite = np.isfinite(values)
        if not bool(finite.all()):
            rows = np.flatnonzero(~finite)
            raise ValueError(
                f"the game returned NaN or inf for {rows.size} of {q} mask rows (first rows "
                f"{rows[:5].tolist()}); expected finite values"
            )
        self.calls += q
        return values

    def _run_executor(self, masks: np.ndarray) -> np.ndarray:
        """The executor's values for validated ``masks`` (subclasses add context and counting)."""
        return self.executor(self._evaluate_chunk, masks, self.chunk_size)

    # -- pickling: a game travels to workers without its executor ----------------------------
    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("executor", None)  # threads, processes or cluster handles of this process
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.executor = local_executor

    def grand(self) -> float:
        """``v(N)``, the value of the coalition of all players (one evaluation)."""
        return float(self(np.ones((1, self.n_players), dtype=bool))[0])

    def empty(self) -> float:
        """``v({})``, the value of the empty coalition (one evaluation)."""
        return float(self(np.zeros((1, self.n_players), dtype=bool))[0])

    @staticmethod
    def from_function(
        fn: Callable, n_players: int, batch_size: int | None = None, executor: Executor | None = None
    ) -> "FunctionGame":
        """Wrap ``fn``, a function mapping a ``(m, n_players)`` bool numpy array to ``m`` values
        (numpy, torch or a list), as a Game evaluated in chunks of at most ``batch_size`` rows."""
        return FunctionGame(fn, n_players, batch_size=batch_size, executor=executor)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_players={self.n_players}, calls={self.calls})"


class FunctionGame(Game):
    """A Game around a plain function ``fn(masks: (m, n) bool ndarray) -> (m,) values``."""

    def __init__(self, fn: Callable, n_players: int, batch_size: int | None = None, executor: Executor | None = None):
        if not callable(fn):
            raise TypeError(f"fn must be a callable mapping (q, n) bool masks to q values; got {type(fn).__name__}")
        super().__init__(n_players, chunk_size=batch_size, executor=executor)
        self.fn = fn

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        return self.fn(masks)


class MaskedModel(Game):
    """The game of a model on one input: ``v(S)`` is the target output when only the players in
    ``S`` keep their values in ``x``.

    With a baseline ``z`` (a scalar or an array shaped like ``x``; 0.0 when neither ``baseline`` nor
    ``background`` is given)::

        v(S) = f(x_S, z_{not S})[target]

    With background rows ``b_1..b_B`` (shape ``(B, *x.shape)``), the interventional (marginal)
    expectation of Janzing, Minorics & Bloebaum (2020, arXiv:1910.13413), the value function of
    KernelSHAP (Lundberg & Lee, 2017, arXiv:1705.07874)::

        v(S) = (1/B) sum_j f(x_S, b_{j, not S})[target]

    and with weights ``w_j`` (normalised to sum 1), ``v(S) = sum_j w_j f(x_S, b_{j, not S})[target]``.

    Parameters
    ----------
    model
        Anything ``featurelens.models.Model.wrap`` accepts: a torch module, a numpy callable such
        as sklearn's ``predict_proba``, or a Model (e.g. one around a torch callable).
    x
        One input, shape ``input_shape`` (e.g. ``(d,)`` or ``(C, H, W)``). A leading axis of size 1
        is taken as a batch axis and dropped when ``groups`` or ``background`` have the shape of
        ``x[0]``; otherwise, when both readings are possible, ``x`` is read as one input, and only if
        the model fails on ``x[None]`` as a batch of one.
    baseline
        The value of dropped input elements: a scalar or an array shaped like ``x``.
    background
        Rows that fill dropped elements, shape ``(B, *input_shape)``; not together with ``baseline``.
        Weighted rows: a :class:`Background` (see :func:`summarize_background`) or a pair
        ``(rows, weights)`` with one non-negative weight per row (normalised to sum 1).
    groups
        Int array shaped like ``x`` assigning each input element to a player ``0..n-1`` (superpixels,
        patches, tokens, columns); every label must occur. None: every input element is a player.
    target
        The output that is the game's value: None (the predicted class on ``x``, resolved once at
        construction) or an int.
    batch_size
        The most rows sent through the model at once; None: the Model's rule
        (``featurelens.models.Model.chunk_rows``, forward-only). With background,
        a chunk holds ``max(1, batch_size // B)`` masks, so ``masks x B`` rows stay within it.
    executor
        See :class:`Game`.

    Attributes
    ----------
    calls
        Mask rows evaluated. ``model_calls``: rows this game sent through the model for those
        evaluations (``calls * B`` with background, ``calls`` otherwise); the one forward pass at
        construction (for ``target``) is counted by ``model.calls`` only.
    """

    #: What ``baseline=None`` means without a background (a policy of
    #: :func:`featurelens._validation.default_baseline`): zeros. (The explainers that play this
    #: game decide None themselves first, by their ``Explainer.default_baseline``.)
    default_baseline = "zeros"

    def __init__(
        self,
        model,
        x,
        baseline=None,
        background=None,
        groups=None,
        target=None,
        batch_size: int | None = None,
        executor: Executor | None = None,
    ):
        if baseline is not None and background is not None:
            raise ValueError(
                "give either baseline (a fixed fill value) or background (rows to average over), not both; "
                f"got baseline of type {type(baseline).__name__} and background of type {type(background).__name__}"
            )
        # A Model handed in is used as it is (its batch size is never changed: other explainers may
        # share it); ``batch_size`` only overrides the rows per forward of this game.
        # Numpy models play in numpy (Model.with_numpy): no torch on their path.
        self.model = (model if isinstance(model, Model) else Model.wrap(model, batch_size)).with_numpy()
        xt = self._check_x(x)
        groups_arr = None if groups is None else as_numpy(groups, "groups")
        bg_rows, bg_weights = split_background(background)
        bg = None if bg_rows is None else self.model.to_tensor(bg_rows, "background")

        # Decide whether a leading axis of size 1 is a batch axis, then run the target forward pass.
        squeezable = xt.ndim >= 2 and xt.shape[0] == 1
        batch_axis = None
        if squeezable:
            if groups_arr is not None and groups_arr.shape in (tuple(xt.shape), tuple(xt.shape[1:])):
                batch_axis = groups_arr.shape == tuple(xt.shape[1:])
            elif bg is not None and bg.ndim in (xt.ndim, xt.ndim + 1):
                batch_axis = bg.ndim == xt.ndim
        if batch_axis is None and squeezable:
            try:
                out = self.model.predict(xt[None])
                batch_axis = False
            except ValueError:
                out = self.model.predict(xt)
                batch_axis = True
        else:
            try:
                out = self.model.predict(xt[None] if not batch_axis else xt)
            except ValueError as err:
                if not (batch_axis and groups_arr is not None):
                    raise
                raise ValueError(
                    f"groups has shape {groups_arr.shape}, so x of shape {tuple(xt.shape)} was read as a batch "
                    f"of one input {tuple(xt.shape[1:])}, and the model failed on that input ({err}). If x is "
                    f"one input, groups must be shaped like it, {tuple(xt.shape)}"
                ) from err
        if batch_axis:
            xt = xt[0]
        self.input_shape = tuple(xt.shape)
        self.x = xt
        numel = int(np.prod(xt.shape, dtype=np.int64))
        if target is None:
            self.target = int(out[0].argmax())
        else:
            self.target = int(self.model.resolve_target(target, xt[None], outputs=out)[0])

        # Players.
        if groups_arr is None:
            n_players = numel
            self.groups = None
            self._groups_flat = None
        else:
            self.groups = self._check_groups(groups_arr)
            n_players = int(self.groups.max()) + 1
            flat = self.groups.reshape(-1).astype(np.int64)
            self._groups_flat = flat if self.model.numpy_mode else torch.from_numpy(flat).to(self.model.device)

        # Fill values.
        self.background = None
        self.baseline = None
        self.weights = None  # None: the B background rows weigh 1/B each (a plain mean)
        if bg is not None:
            if tuple(bg.shape[1:]) != self.input_shape:
                raise ValueError(
                    f"background must have shape (B, *x.shape) = (B, {', '.join(map(str, self.input_shape))}); "
                    f"got shape {tuple(bg.shape)}"
                )
            self.background = bg
            self._fill = bg.reshape(bg.shape[0], numel)  # (B, D)
            n_background = bg.shape[0]
            if bg_weights is not None:
                # float64, sums to 1
                self.weights = bg_weights if self.model.numpy_mode else torch.from_numpy(bg_weights).to(self.model.device)
        else:
            # The one baseline resolver: None (the game's default_baseline), a scalar, one input,
            # or a batch of one, shaped like x.
            fill = resolve_baseline(baseline, xt[None], "baseline", default=self.default_baseline)[0]
            self.baseline = np.ascontiguousarray(fill) if isinstance(fill, np.ndarray) else fill.contiguous()
            self._fill = self.baseline.reshape(1, numel)  # (1, D)
            n_background = 1
        self.n_background = n_background

        # Chunking: at most `rows` model rows per forward; a chunk of masks expands to masks x B rows.
        self.rows_per_forward = self.model.chunk_rows(xt[None], batch_size, forward_only=True)
        super().__init__(n_players, chunk_size=max(1, self.rows_per_forward // n_background), executor=executor)
        self.model_calls = 0

    # -- validation -------------------------------------------------------------------------
    def _check_x(self, x):
        if self.model.numpy_mode:
            arr = as_numpy(x, "x")
            check_floating(arr, "x")
            if arr.ndim == 0:
                raise ValueError("x must be one input, shape (d,) or (C, H, W) etc.; got a scalar")
            return arr
        if is_tensor(x):
            check_floating(x, "x")
            t = x.detach()
        else:
            arr = as_numpy(x, "x")
            check_floating(arr, "x")
            t = numpy_to_tensor(arr)
        if t.ndim == 0:
            raise ValueError("x must be one input, shape (d,) or (C, H, W) etc.; got a scalar")
        return t.to(device=self.model.device, dtype=self.model.dtype)

    def _check_groups(self, groups: np.ndarray) -> np.ndarray:
        if groups.shape != self.input_shape:
            raise ValueError(
                f"groups must have the shape of x, {self.input_shape}; got shape {groups.shape}"
            )
        if groups.dtype.kind not in "iu":
            raise TypeError(f"groups must be an int array of player labels 0..n-1; got dtype {groups.dtype}")
        if groups.min() < 0:
            raise ValueError(f"groups must hold player labels 0..n-1; got the negative label {groups.min()}")
        labels = np.unique(groups)
        n = int(groups.max()) + 1
        if labels.size != n:
            missing = np.setdiff1d(np.arange(n), labels)
            raise ValueError(
                f"groups must use every label 0..{n - 1} (one per player); labels "
                f"{missing[:10].tolist()}{' ...' if missing.size > 10 else ''} are missing"
            )
        return groups

    # -- evaluation -------------------------------------------------------------------------
    def _run_executor(self, masks: np.ndarray) -> np.ndarray:
        # One eval-mode context around all chunks: threads of a ThreadExecutor nest inside it.
        with self.model.evaluating():
            values = super()._run_executor(masks)
        rows = masks.shape[0] * self.n_background
        self.model_calls += rows
        self.model.count_calls(rows)
        return values

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        if self.model.numpy_mode:
            return self._evaluate_array(masks)
        m = masks.shape[0]
        keep = numpy_to_tensor(masks).to(self.model.device)  # copies read-only masks (Ray hands those)
        if self._groups_flat is not None:
            keep = keep[:, self._groups_flat]  # (m, D): player mask expanded to input elements
        x_flat = self.x.reshape(1, 1, -1)
        # (m, B, D) hybrid inputs x_S with the fill rows on the dropped elements.
        rows = torch.where(keep[:, None, :], x_flat, self._fill[None, :, :])
        rows = rows.reshape(m * self.n_background, *self.input_shape)
        # Not counted here (this may run on a worker): _run_executor counts in the caller.
        out = self.model.predict(rows, batch_size=self.rows_per_forward, count=False)
        # Average in float64 so a float32 model's B outputs do not lose precision in the sum.
        per_row = out[:, self.target].double().reshape(m, self.n_background)
        if self.weights is None:
            values = per_row.mean(dim=1)
        else:
            values = (per_row * self.weights[None, :]).sum(dim=1)
        return values.detach().cpu().numpy()

    def _evaluate_array(self, masks: np.ndarray) -> np.ndarray:
        """:meth:`_evaluate` of a numpy model (numpy mode): the same rows, in numpy."""
        m = masks.shape[0]
        keep = masks if self._groups_flat is None else masks[:, self._groups_flat]
        x_flat = self.x.reshape(1, 1, -1)
        rows = np.where(keep[:, None, :], x_flat, self._fill[None, :, :])
        rows = rows.reshape(m * self.n_background, *self.input_shape)
        out = self.model.predict(rows, batch_size=self.rows_per_forward, count=False)
        per_row = out[:, self.target].astype(np.float64).reshape(m, self.n_background)
        if self.weights is None:
            return per_row.mean(axis=1)
        return (per_row * self.weights[None, :]).sum(axis=1)

    def __repr__(self) -> str:
        fill = f"background={self.n_background} rows" if self.background is not None else "baseline"
        return (
            f"MaskedModel(n_players={self.n_players}, input_shape={self.input_shape}, {fill}, "
            f"target={self.target}, calls={self.calls})"
        )
