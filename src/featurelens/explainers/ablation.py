"""Feature ablation and feature permutation: the output drop when one player is removed.

Registered names:

* ``feature_ablation``: ``a_g = f_t(x) - f_t(x with the elements of player g set to the fill)``,
  leave-one-out on the players (Captum's ``FeatureAblation``; the ablation study of Zeiler &
  Fergus, "Visualizing and Understanding Convolutional Networks", ECCV 2014, arXiv 1311.2901, with
  features or groups instead of image patches). The fill is a ``baseline`` (scalar or array shaped
  like one input) or the mean over ``background`` rows (the marginal expectation), exactly the
  value function of :class:`featurelens.games.MaskedModel`: ``a_g = v(N) - v(N minus g)``.
* ``feature_permutation``: permutation feature importance per example (Breiman, "Random
  Forests", Machine Learning 45, 2001; Fisher, Rudin & Dominici 2019, arXiv 1801.01489), as
  Captum's ``FeaturePermutation``: for each player ``g`` a random permutation ``pi_g`` of the rows
  of the batch (never the identity) and ``a_{r,g} = f_t(x_r) - f_t(x_r with g taken from row
  pi_g(r))``. That is feature ablation with a per-row fill ``z_r`` whose elements of player ``g``
  come from row ``pi_g(r)``; the same game is played with that fill.

Players: every input element, or the labels of ``groups=`` (Captum's ``feature_mask``). Every
element of a group carries the group's value (Captum's layout); :meth:`explain_players` returns
one value per player. Each row costs ``n_players + 1`` model rows (``v(N)`` and one ablation per
player; times ``B`` with ``B`` background rows; plus one setup pass per row, as for every game),
sent in chunks of at most ``batch_size`` rows.
The explanation's ``params["full_values"]`` holds ``f_t(x)`` per row; there is no base value
(the drops do not add up to the output).

Both are :func:`featurelens.approximators.leave_one_out` as a
:class:`~featurelens.explainers.GameExplainer`; with a fill tensor (a baseline, the permuted rows)
and no executor every row is ablated at once in batched passes, with the same values.
"""

from __future__ import annotations

import numpy as np

from .._arrays import host, ops

from .. import approximators
from .._random import numpy_rng, parse_seed
from ._base import Requires, register
from .game_explainer import GameExplainer

__all__ = ["FeatureAblation", "FeaturePermutation"]


class _LeaveOneOut(GameExplainer):
    """:func:`featurelens.approximators.leave_one_out` on one MaskedModel game per row, or on
    every row at once through batched passes when the fill is a tensor like ``x``."""

    approximator = staticmethod(approximators.leave_one_out)
    numpy_inputs = True  # a numpy model is ablated in numpy (the batched passes through ops())
    requires = Requires(gradients=False)
    row_params = frozenset({"full_values"})
    records = ("full_values",)  # the drops do not add up to the output: no base value

    def plan(self, n_players: int, way_out: str):
        return n_players + 1, None  # v(N) and one ablation per player

    def _batched_fill(self, x):
        """The fill of every row as a tensor like ``x`` when the whole batch can be ablated in
        batched passes (a baseline, no background, no executor), else None (one game per row)."""
        if self.background is not None or self.executor is not None:
            return None
        return self._resolve_baseline(x)

    def _batched_rows(self, x, target, fill):
        """Leave-one-out values of every row through :meth:`Model.expanded_forward`: copy 0 of
        each row is the row itself, copy ``g + 1`` the row with player ``g``'s elements taken from
        the fill. The ``(n_players + 1) x n`` rows are built chunk by chunk (at most
        ``batch_size`` per model call), as Captum batches its perturbations, instead of one small
        game per row."""
        xp = ops(x)  # numpy for a numpy model (numpy mode), torch otherwise
        n = x.shape[0]
        flat, fill_flat = x.reshape(n, -1), fill.reshape(n, -1)
        d = flat.shape[1]
        groups = self.batch_groups(x)
        per_row = isinstance(groups, list)
        if groups is None:
            player = xp.arange(d, like=x)
            n_players = d
        elif per_row:
            # Per-image groups: row r's player of each element; rows with fewer players than the
            # most have copies that remove nothing (their drops are never read).
            labels = np.stack([g.reshape(-1) for g in groups]).astype(np.int64)  # (n, d)
            player = xp.asarray(labels, like=x)
            n_players = int(labels.max()) + 1
        else:
            labels = np.asarray(groups).reshape(-1).astype(np.int64)
            player = xp.asarray(labels, like=x)
            n_players = int(labels.max()) + 1

        def make_rows(copy_idx, sample_idx):
            m = copy_idx.shape[0]
            if n and m % n == 0 and int(sample_idx[0]) == 0:
                # Whole copies (the chunks are contiguous and expansion-major): one broadcast
                # where over (copies, rows, elements), no row gathers and a (copies, elements)
                # mask instead of one per row. The same rows, element for element.
                first = int(copy_idx[0])
                copies = xp.arange(first, first + m // n, like=x)
                if per_row:
                    hit = player[None, :, :] == (copies - 1)[:, None, None]
                else:
                    hit = (player[None, :] == (copies - 1)[:, None])[:, None, :]
                return xp.where(hit, fill_flat[None], flat[None]).reshape(-1, *x.shape[1:])
            own = player[sample_idx] if per_row else player[None, :]
            hit = own == (copy_idx - 1)[:, None]  # copy 0: nothing removed
            rows = xp.where(hit, fill_flat[sample_idx], flat[sample_idx])
            return rows.reshape(-1, *x.shape[1:])

        v = self.model.expanded_forward(x, n_players + 1, make_rows, target=target,
                                        transform=lambda out, c, s: xp.to_float64(out))  # (G + 1, n)
        v = host(v)
        phi = v[0][None, :] - v[1:]  # (G, n)
        if groups is None:
            values = phi.T.reshape(x.shape)
        elif per_row:
            values = np.take_along_axis(phi.T, labels, axis=1).reshape(x.shape)
            return values, {"n_players": [int(row.max()) + 1 for row in labels],
                            "full_values": [float(f) for f in v[0]]}
        else:
            values = phi.T[:, labels].reshape(x.shape)
        return values, {"n_players": int(n_players), "full_values": [float(f) for f in v[0]]}

    def _rows(self, x, target):
        self._check_groups_shape(x)
        fill = self._batched_fill(x)
        if fill is not None:
            return self._batched_rows(x, target, fill)
        return super()._rows(x, target)


@register("feature_ablation")
class FeatureAblation(_LeaveOneOut):
    """Feature ablation: ``a_g = f_t(x) - f_t(x with player g replaced by the fill)``.

    Equals Captum's ``FeatureAblation(model).attribute(x, baselines=b, target=t, feature_mask=groups)``
    (each scalar its own player without ``groups``; a group's drop copied to its elements). See
    the module docstring for the cost and the layout.

    Parameters
    ----------
    model
        A torch module or any callable the Model adapter wraps (forward passes only).
    baseline, background
        The fill of a removed player: a scalar or an array shaped like one input (``baseline``), or
        rows averaged over (``background``, rows or a weighted
        :func:`featurelens.games.summarize_background`); not both. Images and signals default to
        ``baseline=0.0`` (Captum's default); tabular inputs (one input of shape ``(d,)``) need one
        of the two explicitly, as for the Shapley explainers.
    groups
        The players: None (every element), an int array shaped like one input assigning
        elements to players ``0..n-1`` (Captum's ``feature_mask``), or for images ``"patches"``
        (``"patches:N"``), ``"slic"`` (``"slic:N"``) or a callable ``image -> labels``, as for
        :class:`~featurelens.explainers.GameExplainer`. Per-image groups (slic, a callable) are
        ablated in the same batched passes, each row over its own players (``max_r n_r + 1``
        copies per row).
    batch_size
        Most model rows per forward pass.
    progress
        A tqdm bar over the rows; None: only when stderr is a terminal.
    executor
        Where each row's ablations are evaluated (the game hook, :mod:`featurelens.parallel`);
        ``explain(x, executor=...)`` spreads the rows instead. Values equal the serial path.
    """

    audit_default = "a Captum-family method, not audited by default; request it with methods="


@register("feature_permutation")
class FeaturePermutation(_LeaveOneOut):
    """Permutation importance per example: ``a_{r,g} = f_t(x_r) - f_t(x_r with player g's elements
    taken from row pi_g(r) of the batch)`` (Breiman 2001; Fisher, Rudin & Dominici 2019,
    arXiv 1801.01489; Captum's ``FeaturePermutation``).

    The permutations: one per player, in player order ``g = 0..n-1``, each
    ``rng.permutation(n_rows)`` redrawn while it is the identity (as Captum redraws
    ``torch.randperm``), from ``rng = numpy.random.default_rng(SeedSequence(root))`` where
    ``root`` is the call's seed root (the int seed itself; one int drawn from a Generator per call;
    fresh entropy for None). ``permutations`` returns them. Fed the same permutations (through
    its ``perm_func``) Captum gives the same values. Needs at least 2 rows per call; the rows of a
    call are permuted together, so ``explain(x, executor=...)`` (rows in parts) and several
    targets per row (``(n, k)`` targets) are refused.

    Parameters
    ----------
    model, groups, batch_size, progress
        As for ``feature_ablation``.
    seed
        Int, numpy Generator or None (see above).
    """

    audit_default = "a Captum-family method, not audited by default; request it with methods="
    accepts = frozenset({"groups", "progress", "seed"})

    def __init__(self, model, groups=None, seed=0, batch_size: int | None = None, progress: bool | None = None):
        super().__init__(model, groups=groups, batch_size=batch_size, progress=progress)
        self.seed = parse_seed(seed)

    def params(self) -> dict:
        p = {k: v for k, v in super().params().items() if k not in ("fill", "baseline", "executor")}
        p["fill"] = "batch permutation"
        p.update(self.seed_params())
        return p

    @staticmethod
    def permutations(n_rows: int, n_players: int, root: int) -> np.ndarray:
        """The ``(n_players, n_rows)`` permutations of a call with seed root ``root`` (for an int
        seed, the seed): row ``g`` is ``pi_g``; none is the identity."""
        if n_rows < 2:
            raise ValueError(f"feature_permutation permutes the rows of the batch and needs at least 2 rows; "
                             f"got x with {n_rows} row")
        rng = numpy_rng(int(root))  # default_rng(SeedSequence(root))
        identity = np.arange(n_rows)
        perms = np.empty((n_players, n_rows), dtype=np.int64)
        for g in range(n_players):
            p = rng.permutation(n_rows)
            while np.array_equal(p, identity):
                p = rng.permutation(n_rows)
            perms[g] = p
        return perms

    def explain(self, x, target=None, feature_names=None, group_names=None, executor=None, first_row: int = 0,
                **kwargs):
        if executor is not None:
            raise ValueError("feature_permutation permutes the rows of one call together; executor= (rows in "
                             f"parts) would permute within each part. Got executor={executor!r}; use None")
        if target is not None and np.ndim(target) == 2:
            raise ValueError("feature_permutation takes one target per row (None, an int or a 1-D array); got "
                             f"target of shape {np.shape(target)} (several targets per row would permute copies "
                             "of the same row among themselves); explain once per target column instead")
        return super().explain(x, target=target, feature_names=feature_names, group_names=group_names,
                               first_row=first_row, **kwargs)

    def _attribute(self, x, target, outputs=None):
        groups = self.batch_groups(x)
        n = x.shape[0]
        shape = tuple(x.shape[1:])
        if isinstance(groups, list):  # per-image groups: row r's own players
            labels = np.stack([g.reshape(-1) for g in groups]).astype(np.int64)  # (n, D)
        else:
            labels = (np.zeros(0, dtype=np.int64) if groups is None
                      else np.asarray(groups).reshape(-1).astype(np.int64))
        n_players = int(np.prod(shape)) if groups is None else int(labels.max()) + 1 if labels.size else 0
        xp = ops(x)  # numpy for a numpy model (numpy mode), torch otherwise
        perms = xp.asarray(self.permutations(n, n_players, self._stream_root), like=x)
        flat = x.reshape(n, -1)
        columns = xp.arange(flat.shape[1], like=x)
        # Fill z_r: element e of row r comes from row pi_{player(e)}(r).
        if isinstance(groups, list):
            rows_idx = xp.arange(n, like=x)
            source_rows = perms[xp.asarray(labels, like=x), rows_idx[:, None]]  # (n, D)
        else:
            element_player = xp.arange(flat.shape[1], like=x) if groups is None else xp.asarray(labels, like=x)
            source_rows = perms[element_player].T  # (n, D)
        self._fills = flat[source_rows, columns[None, :]].reshape(x.shape)
        try:
            return self._rows(x, target)
        finally:
            self._fills = None

    def fill(self, row: int) -> dict:
        return {"baseline": self._fills[row]}

    def _batched_fill(self, x):
        return self._fills  # the permuted rows: always batched (no background, no executor)
