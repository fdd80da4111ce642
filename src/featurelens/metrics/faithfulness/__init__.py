"""Faithfulness metrics: does the model react to removing what the attribution calls relevant?

One module for the family (its parts are private modules of this package):

- along an ordering of the features: :func:`deletion_curve`, :func:`insertion_curve` (pixel
  flipping), :func:`road`, :func:`irof`, :func:`selectivity`, :func:`region_perturbation`,
  :func:`monotonicity`;
- over random subsets or single regions: :func:`faithfulness_correlation`, :func:`infidelity`,
  :func:`sensitivity_n`, :func:`monotonicity_correlation`;
- over the batch: :func:`sufficiency`.

All metrics take a model (``torch.nn.Module``, callable, or :class:`featurelens.models.Model`), a
batch ``x`` with the samples first (images (n, c, h, w) or tabular rows (n, d)), attributions ``a``
(array, tensor or :class:`featurelens.Explanation`) shaped like ``x`` (or, for images, like the
spatial map (n, h, w) / (n, 1, h, w), spread over the channels), and ``target`` (None = the
predicted class, an int, or one int per sample). ``f_t`` below is the model's ``target`` output in
the units ``output=`` asks for (default: raw, the logit or whatever the model returns;
``"probability"`` or ``"log_odds"``, see :class:`featurelens.models.Model`). Every perturbed copy of every sample goes through the model
in chunked batches (the Model's batching), on the model's device; a scikit-learn estimator or a
numpy callable is evaluated in numpy mode, without torch (:mod:`featurelens.metrics`). Scores come
back as float64 numpy arrays with one entry per sample.

``groups`` (deletion/insertion and faithfulness correlation): an int array shaped like one input
(or, for images, like the spatial map) that assigns elements to regions; regions are then removed
whole and ranked by their summed attribution. Without groups every element is a region, except
that an image batch explained by a spatial map is perturbed pixel by pixel (all channels at once).

Units against Quantus 0.6: these metrics score the model's raw outputs by default (logits for a
classifier module), while Quantus's ``PixelFlipping``, ``Selectivity``, ``RegionPerturbation``,
``IROF``, ``SensitivityN``, ``Monotonicity``, ``MonotonicityCorrelation`` and ``NonSensitivity``
apply a softmax first (their ``softmax=True`` default; ``FaithfulnessCorrelation`` and
``Infidelity`` do not). Curves in the two units differ by as much as the logits do from
probabilities; pass ``output="probability"`` to score what Quantus scores by default (or call
Quantus with ``softmax=False`` to score the raw outputs). ROAD and Sufficiency use only the
arg-max, which a softmax leaves as it is; IROF here defaults to ``"probability"``.
"""

from . import _curves, _removal, _subsets
from ._curves import *  # noqa: F401,F403  (the part's __all__)
from ._removal import *  # noqa: F401,F403  (the part's __all__)
from ._subsets import *  # noqa: F401,F403  (the part's __all__)

# The family's metrics: the ``__all__`` of its parts, so that a new metric is exported by its part.
__all__ = [*_curves.__all__, *_removal.__all__, *_subsets.__all__]

#: The family's specs (:mod:`featurelens.metrics._spec`), declared below the functions of each part.
SPECS = _curves.SPECS + _removal.SPECS + _subsets.SPECS
