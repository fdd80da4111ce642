"""GameExplainer: any approximator of :mod:`featurelens.approximators` as an explainer.

For each sample ``x`` (and its target ``t``) the explainer builds the game
:class:`featurelens.games.MaskedModel`, ``v(S) = f_t(x_S, fill)``: the players in ``S`` keep their
values and the others take the fill, a ``baseline`` (a scalar or an array shaped like one input)
or the average over ``background`` rows; the players are the input's elements or the labels of
``groups``. It runs the class's :attr:`GameExplainer.approximator` on that game and spreads the
per-player values of the :class:`~featurelens.approximators.ApproximationResult` back over the
input: every element carries its player's value, so with ``groups`` all elements of a group hold
the same number (:meth:`GameExplainer.explain_players` returns one value per player).

A new black-box explainer is a subclass that names its approximator and the options it passes::

    @register("my_method")
    class MyMethod(GameExplainer):
        approximator = staticmethod(approximators.kernel_shap)

        def approximator_options(self, i):
            return {"budget": 1000, "seed": self.row_rng(i)}

Recorded per row (``Explanation.params``): ``base_values`` (the result's ``base_value``),
``full_values`` (``v(N)``) and ``game_evaluations``; :attr:`GameExplainer.records` says which of
them a method keeps, :meth:`GameExplainer.row_record` adds the method's own per-row entries and
:meth:`GameExplainer.row_arrays` further per-player arrays (``Explanation.extra``).

Cost: one game per sample (one forward pass to set up the game), that sample's coalitions in
batches; with ``B`` background rows each coalition costs ``B`` model rows. ``executor=``
(constructor) evaluates each sample's coalitions on an executor's workers; ``explain(x,
executor=...)`` explains the rows in parts on the workers.
"""

from __future__ import annotations

import sys

import numpy as np
from featurelens._optional import torch

from .._budgets import check_memory, format_count, max_evaluations
from .._validation import check_executor, check_optional_bool, default_baseline, executor_param
from ..approximators._common import check_result
from ..games import MaskedModel, split_background
from ._base import _UNSET, Explainer, Requires
from ._image_groups import grouping_hint, resolve_groups

__all__ = ["GameExplainer"]


class GameExplainer(Explainer):
    """An approximator of :mod:`featurelens.approximators` run on one MaskedModel game per sample.

    Parameters
    ----------
    model
        A torch module or any callable the Model adapter wraps (forward passes only).
    baseline, background
        The value function, see :class:`featurelens.games.MaskedModel`; give
        either ``baseline`` or ``background``, not both. On tabular data (one input of shape
        ``(d,)``) one of the two is required (``explain`` refuses otherwise); images and
        signals default to zeros (``default_baseline`` ``"refuse_tabular"``). Recorded as
        ``params["baseline"]`` (``"zeros"``, the number, or ``"array"``) with ``params["fill"] =
        "baseline"``, or ``params["fill"] = "background"`` and no ``"baseline"``.
    groups
        The players (``featurelens.explainers._image_groups``): None (every input element); an
        int array shaped like one input (Captum's ``feature_mask``); for images ``(C, H, W)`` or
        ``(H, W)``, ``"patches"`` (square patches shared over the channels, 196 of 16 px on a
        224 x 224 image; ``"patches:N"`` for ``N`` px), ``"slic"`` / ``"superpixels"`` (SLIC
        superpixels of each image, about 196; ``"slic:N"`` for about ``N``; needs scikit-image), or
        a callable ``image -> int labels`` (shaped like the image or its ``(H, W)``) called once per
        image. Per-image groups give each row its own players (``params["n_players"]`` one per
        row, ``Explanation.extra["groups"]`` the label maps, ``group_values`` NaN-padded).
        Recorded as ``params["groups"]`` (whether given) and ``params["grouping"]`` (the spelling).
    batch_size
        Most model rows per forward pass.
    progress
        A tqdm bar over the samples of a batch; None (default): only when stderr is a terminal.
    executor
        Where each sample's coalitions are evaluated (the game hook, :mod:`featurelens.parallel`);
        ``explain(x, executor=...)`` spreads the rows instead. Values equal the serial path.
    """

    #: The function of :mod:`featurelens.approximators` this explainer runs (a staticmethod).
    approximator = None
    requires = Requires(gradients=False)
    numpy_inputs = True  # numpy models play their games in numpy (no torch)
    #: None on tabular rows is refused (a zero lies anywhere on unscaled features); images and
    #: signals get zeros (see :class:`~featurelens.explainers.Explainer`).
    default_baseline = "refuse_tabular"
    accepts = frozenset({"baseline", "groups", "progress", "executor"})  # the harness options it takes (see Explainer.accepts)
    #: Per-row entries of the extra params (joined over the parts of a row-parallel explain).
    row_params = frozenset({"base_values", "full_values", "game_evaluations"})
    #: Which per-row results the explanation records: ``base_values``, ``full_values``,
    #: ``game_evaluations`` (a method without a base value leaves ``base_values`` out).
    records = ("base_values", "full_values", "game_evaluations")

    def __init__(self, model, baseline=None, background=None, groups=None, batch_size: int | None = None,
                 progress: bool | None = None, executor=None):
        super().__init__(model, batch_size)
        self.progress = check_optional_bool(progress, "progress")
        self.executor = check_executor(executor)
        if baseline is not None and background is not None:
            raise ValueError(
                "give either baseline (a fixed fill value) or background (rows to average over), not both; "
                f"got baseline of type {type(baseline).__name__} and background of type {type(background).__name__}"
            )
        if background is not None:
            split_background(background)  # bad weights of a (rows, weights) pair are refused here
        self.baseline = baseline
        self.background = background
        self.grouping = resolve_groups(groups)
        self.groups = groups

    def params(self) -> dict:
        p = dict(super().params())
        p["fill"] = "background" if self.background is not None else "baseline"
        if self.background is not None:
            rows, weights = split_background(self.background)
            p["n_background"] = int(rows.shape[0] if hasattr(rows, "shape") else np.shape(rows)[0])
            p["background_weighted"] = weights is not None
        p["groups"] = self.groups is not None
        if self.grouping.kind in ("patches", "slic", "callable"):
            p["grouping"] = self.grouping.describe()
        p["executor"] = executor_param(self.executor)
        return p

    # -- the game and the approximator of one row -------------------------------------------------

    def fill(self, row: int) -> dict:
        """The fill of row ``row``'s game, as keywords of MaskedModel (``baseline``, ``background``)."""
        return {"baseline": self.baseline, "background": self.background}

    def game(self, x_row: torch.Tensor, target: int, row: int = 0) -> MaskedModel:
        """The MaskedModel game of one sample ``x_row`` (row ``row`` of the batch) for ``target``."""
        return MaskedModel(self.model, x_row, groups=self.row_groups(row), target=target, executor=self.executor,
                           **self.fill(row))

    def approximator_options(self, row: int) -> dict:
        """The keywords the approximator gets for row ``row`` (a budget, the row's seed, ...)."""
        return {}

    def run(self, game, row: int):
        """The :class:`~featurelens.approximators.ApproximationResult` of row ``row``'s game."""
        fn = type(self).approximator
        if not callable(fn):
            raise TypeError(
                f"{type(self).__name__}.approximator must be a function (game, **options) -> "
                "ApproximationResult, set as approximator = staticmethod(featurelens.approximators.kernel_shap) "
                f"or another approximator (or override run()); got {type(fn).__name__}"
            )
        return fn(game, **self.approximator_options(row))

    def row_record(self, result) -> dict:
        """Per-row entries of the method beyond :attr:`records` (each becomes a list over rows)."""
        return {}

    def row_arrays(self, result) -> dict:
        """Per-player arrays of the method (spread over the input like the values; they reach
        ``Explanation.extra``)."""
        return {}

    # -- checks and the loop over rows ------------------------------------------------------------

    # -- the players of a call and the plan that must fit ------------------------------------------

    def _prepare_call(self, data, n_rows: int, part, first_row: int, repeat: int) -> None:
        """Resolve this call's players (``Explainer._prepare_call``) and, on the caller's side,
        refuse a plan that cannot fit, before any model call (:meth:`plan`)."""
        super()._prepare_call(data, n_rows, part, first_row, repeat)
        if part is None:
            self._check_plan(tuple(data.shape[1:]), n_rows)

    def row_groups(self, row: int):
        """The player labels of row ``row`` of the batch ``_attribute`` sees (None: every element)."""
        if self._sample_groups is _UNSET:
            return self.groups if self.grouping.kind == "array" else None
        labels = self._sample_groups
        return labels[row // self._row_repeat] if isinstance(labels, list) else labels

    def batch_groups(self, x):
        """The labels of every row of ``x`` (``_attribute``'s batch): None, one shared array, or a
        list with one array per row (per-image groups)."""
        if self._sample_groups is _UNSET:  # _attribute called directly, not through explain
            from .._optional import to_numpy

            self._sample_groups = self.grouping.labels(to_numpy(x))
        labels = self._sample_groups
        if isinstance(labels, list):
            return [labels[i // self._row_repeat] for i in range(x.shape[0])]
        return labels

    def _check_groups_shape(self, x) -> None:
        # Resolved (and shape-checked) by the grouping; kept for subclasses that call it.
        self.batch_groups(x)

    def _n_players(self, input_shape: tuple) -> int:
        labels = self._sample_groups
        if labels is None or labels is _UNSET:
            return int(np.prod(input_shape, dtype=np.int64))
        if isinstance(labels, list):
            return max(int(g.max()) + 1 for g in labels) if labels else 0
        return int(labels.max()) + 1 if labels.size else 0

    def plan(self, n_players: int, way_out: str) -> tuple[int | None, int | None]:
        """``(game evaluations per row, bytes)`` a game of ``n_players`` players will cost (None:
        not estimated); raises a ValueError ending in ``way_out`` when the method cannot play it
        (too many players for an exact method, a budget below the method's minimum)."""
        return None, None

    def _check_plan(self, input_shape: tuple, n_rows: int) -> None:
        """Refuse, before any model call, a call whose games cannot fit: more game evaluations than
        ``featurelens._budgets.max_evaluations`` over the rows, or more memory than is available.
        The message names the way out: ``groups="patches"`` / ``"slic"`` with their players."""
        n = self._n_players(input_shape)
        if self.grouping.kind == "none":
            way_out = grouping_hint(input_shape, getattr(self.requires, "max_players", None))
        else:
            way_out = "use fewer, larger groups (" + grouping_hint(input_shape).split(": ", 1)[-1] + ")"
        evaluations, nbytes = self.plan(n, way_out)
        what = (f"{self.name} on inputs of shape {tuple(input_shape)} with "
                f"{'every element a player' if self.grouping.kind == 'none' else 'groups=' + repr(self.grouping.describe())}"
                f" (n_players = {format_count(n)})")
        if evaluations is not None and evaluations * n_rows > max_evaluations():
            raise ValueError(
                f"{what} needs about {format_count(evaluations)} game evaluations per input, "
                f"{format_count(evaluations * n_rows)} for {n_rows} input(s); the limit is "
                f"{format_count(max_evaluations())} per call (featurelens._budgets.MAX_EVALUATIONS); {way_out}")
        if nbytes is not None:
            check_memory(nbytes, what, way_out)

    def _check_fill(self, x) -> None:
        """Apply ``default_baseline`` (``"refuse_tabular"``,
        :func:`featurelens._validation.default_baseline`) when neither ``background`` nor
        ``baseline`` was given: tabular inputs (one input is a row, shape ``(d,)``) are refused,
        because the zero fill that images and signals default to is a black image or silence
        there, but on unscaled tabular features a zero lies anywhere, often far outside the data,
        and the values would explain that arbitrary point."""
        if self.background is None and self.baseline is None:
            default_baseline(self.default_baseline, x, method=self.name)

    def _rows(self, x, target):
        """One game per row, the approximator on each: ``(values like x, extra params)``."""
        self._check_groups_shape(x)
        n_samples = x.shape[0]
        maps = []
        per_row: dict[str, list] = {name: [] for name in self.records}
        side_maps: dict[str, list] = {}
        n_players = []
        from tqdm.auto import tqdm

        show = sys.stderr.isatty() if self.progress is None else self.progress
        for i in tqdm(range(n_samples), desc=self.name, disable=not show or n_samples < 2, leave=False, unit="sample"):
            game = self.game(x[i], int(target[i]), row=i)
            # The boundary between explainer and approximator: an ApproximationResult with one
            # finite value per player (a subclass's approximator or run() may return anything).
            res = check_result(self.run(game, i), game.n_players, f"{type(self).__name__}'s approximator")
            n_players.append(int(game.n_players))
            spread = (lambda v: v.reshape(game.input_shape)) if game.groups is None else (lambda v: v[game.groups])
            maps.append(spread(res.values))
            for name, player_values in self.row_arrays(res).items():
                side_maps.setdefault(name, []).append(spread(player_values))
            row = {"base_values": float(res.base_value), "full_values": float(res.full_value),
                   "game_evaluations": int(res.game_evaluations)}
            for name in self.records:
                per_row[name].append(row[name])
            for name, value in self.row_record(res).items():
                per_row.setdefault(name, []).append(value)
        values = np.stack(maps).reshape(x.shape)
        per_image = isinstance(self._sample_groups, list)
        extra = {"n_players": n_players if per_image else int(n_players[-1]) if n_players else 0, **per_row}
        if side_maps:
            extra["arrays"] = {name: np.stack(m).reshape(x.shape) for name, m in side_maps.items()}
        return values, extra

    def _attribute(self, x, target, outputs=None):
        self._check_fill(x)
        return self._rows(x, target)

    def explain_players(self, x, target=None, executor=None) -> np.ndarray:
        """Per-player values, shape ``(n_samples, n_players)`` (``(n_samples, k, n_players)`` for
        ``(n, k)`` targets): each player's value once, not spread over its elements.
        ``executor``: rows in parallel, as for ``explain``."""
        e = self.explain(x, target=target, executor=executor)
        if e.group_values is not None:  # one value per player (NaN-padded for per-image groups)
            return np.asarray(e.group_values)
        lead = e.values.ndim - (np.ndim(x) - 1)
        return e.values.reshape(*e.values.shape[:lead], -1)
