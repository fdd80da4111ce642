"""The random floor: a seeded uniform random map, which every explanation method must beat in a
benchmark or an audit. It reads no gradient and runs on numpy alone."""

from __future__ import annotations

import numpy as np

from .._random import parse_seed
from ._base import Explainer, Requires, register

__all__ = ["RandomAttribution"]


@register("random")
class RandomAttribution(Explainer):
    """A seeded uniform random map in [0, 1), shaped like the input: the floor every method must
    beat in a benchmark. It never calls the model's gradient (one forward row checks the shape).
    ``seed``: None, an int or a ``numpy.random.Generator``; row ``i`` of a call draws from its own
    stream ``SeedSequence(root, spawn_key=(i,))`` (``root`` the int seed, an int drawn from a
    Generator once per call, fresh entropy for None), so a row's map never depends on the others."""

    requires = Requires(gradients=False)
    numpy_inputs = True  # no torch on a numpy model

    accepts = frozenset({"seed"})  # the harness options it takes (see Explainer.accepts)

    def __init__(self, model, seed=0, batch_size: int | None = None):
        super().__init__(model, batch_size)
        self.seed = parse_seed(seed)

    def params(self):
        return {**super().params(), **self.seed_params()}

    def _attribute(self, x, target, outputs):
        shape = tuple(x.shape[1:])
        values = np.empty(tuple(x.shape), dtype=np.float32)
        for i in range(x.shape[0]):
            values[i] = self.row_rng(i).random(shape)
        return values, {}
