"""Localisation metrics: how well does a map match a ground-truth mask?

One module for the family (its parts are private modules of this package):

- top-k overlap and transport (the XAI-TRIS benchmark, Clark et al. 2024): :func:`precision_at_k`,
  :func:`iou_at_k`, :func:`emd_score`;
- relevance inside the mask (Arras et al. 2022): :func:`relevance_mass`,
  :func:`relevance_rank_accuracy`;
- Quantus's localisation family: :func:`pointing_game`, :func:`attribution_localisation`,
  :func:`top_k_intersection`, :func:`auc`, and :func:`focus` on the 2x2 mosaics of
  :func:`focus_mosaics`.

Every one is called ``name(a, masks, *, ...)``: ``a`` the maps (numpy array, torch tensor or
:class:`featurelens.Explanation`) with the samples first, ``masks`` the ground truth, one boolean
(or 0/1) mask per sample, everything else keyword-only. :func:`precision_at_k`, :func:`iou_at_k`
and :func:`emd_score` take (n, h, w) or (n, 1, h, w) images (maps with channels are reduced to
``sum_c |a_c|``); the others take masks shaped like ``a`` (for images (n, c, h, w) also the
spatial mask (n, h, w) / (n, 1, h, w), spread over the channels). :func:`focus` is the one whose
ground truth is not a mask shaped like the map: ``focus(a, layout)``, the (m, 4) quadrant flags of
:func:`focus_mosaics`. One float64 score per sample; NaN where the mask is empty; higher is better.
"""

from . import _overlap, _pointing
from ._overlap import *  # noqa: F401,F403  (the part's __all__)
from ._pointing import *  # noqa: F401,F403  (the part's __all__)

# The family's metrics: the ``__all__`` of its parts, so that a new metric is exported by its part.
__all__ = [*_overlap.__all__, *_pointing.__all__]

#: The family's specs (:mod:`featurelens.metrics._spec`), declared below the functions of each part.
SPECS = _overlap.SPECS + _pointing.SPECS
