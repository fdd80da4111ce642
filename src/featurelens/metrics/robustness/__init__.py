"""Robustness metrics: does the explanation stay put when the input moves a little?

One module for the family (its parts are private modules of this package):

- under noise in an L-inf ball: :func:`max_sensitivity`, :func:`avg_sensitivity` (Yeh et al.
  2019), :func:`local_lipschitz` (Alvarez-Melis & Jaakkola 2018), and the relative stabilities
  :func:`relative_input_stability`, :func:`relative_output_stability`,
  :func:`relative_representation_stability` (Agarwal et al. 2022);
- under translations: :func:`continuity` (Montavon et al. 2018);
- across the batch: :func:`consistency` (Dasgupta et al. 2022).

Every one re-explains, and is called ``name(explainer, x, target=None, *, model=None, ...)``:
``explainer`` is a featurelens Explainer (``fl.explainer(name, model, ...)``; ``model=`` may be
given only when it is that explainer's own model) or a registered explainer name together with
``model=`` (and optional ``explainer_params=``, the keyword arguments of ``fl.explainer``).
``target`` is None (the predicted class of the clean input, kept for every moved copy), an int or
one int per sample; ``attributions=`` (optional) replaces the explainer's maps of the clean
``x``. The moved copies of the whole batch are explained in ONE batched ``explain`` call
(copies * n rows, copy-major), which the explainer chunks by its Model's ``batch_size``;
``executor`` (None or a :mod:`featurelens.parallel` executor) explains the rows in parts on its
workers. One float64 score per sample; lower is more robust, except :func:`consistency`.
"""

from . import _sensitivity, _stability
from ._sensitivity import *  # noqa: F401,F403  (the part's __all__)
from ._stability import *  # noqa: F401,F403  (the part's __all__)

# The family's metrics: the ``__all__`` of its parts, so that a new metric is exported by its part.
__all__ = [*_sensitivity.__all__, *_stability.__all__]

#: The family's specs (:mod:`featurelens.metrics._spec`), declared below the functions of each part.
SPECS = _sensitivity.SPECS + _stability.SPECS
