"""Exact interactions: Moebius and Fourier (Walsh-Hadamard) transforms of a game and the
interaction indices derived from them (Shapley, Banzhaf, SII, BII, k-SII, STII, FSII, FBII).

* :func:`exact` evaluates a game on all ``2^n`` coalitions and returns an :class:`Interactions`.
* :class:`Interactions` holds sparse terms ``{tuple of players: value}`` in a basis or an index and
  converts, predicts, ranks, scores (R^2), saves and plots them.
* ``featurelens.interactions.transforms`` holds the transforms and conversions themselves.
"""

from __future__ import annotations

import importlib

from ._interactions import BASES, INDEX_NAMES, Interactions, exact, load_interactions
from .spex import spex
from .proxy_spex import proxy_spex

__all__ = ["BASES", "INDEX_NAMES", "Interactions", "exact", "load_interactions", "proxy_spex", "spex", "transforms"]


def __getattr__(name):
    # ``transforms`` is loaded on first use, so that importing featurelens stays light.
    if name == "transforms":
        return importlib.import_module(".transforms", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
