"""Metrics for explanations and representations, one module per family.

- :mod:`~featurelens.metrics.faithfulness`: does the model react to removing what the map calls
  relevant (deletion and insertion curves, ROAD, IROF, faithfulness correlation, ...)
- :mod:`~featurelens.metrics.robustness`: does the map stay put when the input moves a little
- :mod:`~featurelens.metrics.randomisation`: does the map change when the model is randomised
- :mod:`~featurelens.metrics.complexity`: how concentrated is the map
- :mod:`~featurelens.metrics.axiomatic`: completeness, non-sensitivity, input invariance
- :mod:`~featurelens.metrics.localisation`: how well does the map match a ground-truth mask
- :mod:`~featurelens.metrics.ood` (OOD detection scores): auroc, fpr_at_tpr

Each family module (or package) lists its metrics in its ``__all__``, which this package
re-exports: a new metric is added to its family's module (the function, its ``__all__`` entry and
its :class:`MetricSpec`) and nowhere else. :func:`list_metrics` lists them all.

One calling convention, by what a metric needs (everything after the named positional arguments
is keyword-only):

- maps and masks (localisation): ``name(a, masks, *, ...)``; complexity takes only the maps,
  ``name(a, *, ...)``. ``focus(a, layout)`` scores mosaics: its ground truth is the quadrant
  layout of :func:`focus_mosaics`.
- the model on perturbed copies (faithfulness, completeness, non-sensitivity):
  ``name(model, x, a, target=None, *, ...)``.
- re-explaining (robustness, randomisation, input invariance): ``name(explainer, x, target=None,
  *, model=None, explainer_params=None, ...)``. ``explainer`` is a featurelens Explainer (then
  ``model=`` is None or the explainer's own model: its Model, or the module, function or
  estimator that Model wraps; ``explainer_params`` is empty) or a registered explainer name, and
  then ``model=`` is required. ``attributions=`` (optional) are given maps of the clean ``x``.

``target`` is None (the predicted class), an int, or one int per sample; sufficiency, which
compares predicted classes, takes only None. The options shared by several metrics are spelled one
way: ``baseline`` (the replacement value), ``groups`` (regions removed whole), ``seed`` (None, an
int or a numpy Generator), ``steps``, ``n_samples`` / ``n_subsets`` / ``n_perturbations``,
``noise_std`` (a standard deviation), ``radius``, ``normalise`` (British, as the rest),
``abs``, ``output`` (the model's units), ``executor``; the batch size is the Model's
(``fl.Model(model, batch_size=...)``, or the explainer's ``batch_size``).

Every per-explanation metric declares itself with a :class:`MetricSpec` next to its function
(name, family, which direction is better, what it needs, whether it re-explains, its Quantus
counterpart, how the audit calls it): :func:`list_metrics` lists them by family and
:func:`spec` looks one up by name (``fl.metrics.spec("road").direction == -1``);
``spec.score(ScoreContext(...))`` calls any of them one way. The audit and
the ground-truth benchmark read their metrics from these specs.

Numpy models (issue 32): a scikit-learn estimator or a numpy callable is scored in numpy mode
(:meth:`featurelens.models.Model.with_numpy`): the batch, the maps, the targets and every perturbed
copy are numpy arrays and torch is never imported, so every metric that needs only forward passes
of the model (faithfulness, completeness, non-sensitivity) runs without the ``torch`` extra, and so
does every re-explaining metric whose explainer works on numpy (occlusion, the Shapley explainers,
SPEX, TreeSHAP, the random map). The values are those of the torch path: the model is called on the
same numpy rows. A torch model is scored on tensors on its device, as before. The metrics that need
a torch module (:func:`model_randomization`, :func:`efficient_mprt`, :func:`smooth_mprt`,
:func:`input_invariance`, :func:`relative_representation_stability`) refuse a numpy model with a
TypeError naming ``featurelens[torch]`` (an ImportError when torch is not installed); their specs
require ``"parameters"`` or ``"layer"``, so the audit skips them on such a model, with the reason.
``import featurelens.metrics`` imports no torch.

Budgets: the counts of perturbed copies (``n_subsets``, ``n_samples``, ``n_perturbations``,
``n_mosaics``) are refused with a ValueError before any work when they ask for more than
``featurelens._budgets.MAX_EVALUATIONS`` (10^8) evaluations per call, first per input, then
for the whole batch (times the subset sizes or regions), or for more memory than is available
(``featurelens._budgets.check_budget``).
"""

from featurelens.metrics import _spec
from featurelens.metrics import axiomatic as _axiomatic
from featurelens.metrics import complexity as _complexity  # the module; the metric of that name is below
from featurelens.metrics import faithfulness as _faithfulness
from featurelens.metrics import localisation as _localisation
from featurelens.metrics import ood as _ood
from featurelens.metrics import randomisation as _randomisation
from featurelens.metrics import robustness as _robustness
from featurelens.metrics._spec import *  # noqa: F401,F403  (MetricSpec, list_metrics, spec, ...)
from featurelens.metrics.axiomatic import *  # noqa: F401,F403  (each family's __all__)
from featurelens.metrics.complexity import *  # noqa: F401,F403
from featurelens.metrics.faithfulness import *  # noqa: F401,F403
from featurelens.metrics.localisation import *  # noqa: F401,F403
from featurelens.metrics.ood import *  # noqa: F401,F403
from featurelens.metrics.randomisation import *  # noqa: F401,F403
from featurelens.metrics.robustness import *  # noqa: F401,F403

__all__ = [
    *_spec.__all__,
    *_faithfulness.__all__,
    *_robustness.__all__,
    *_randomisation.__all__,
    *_complexity.__all__,
    *_axiomatic.__all__,
    *_localisation.__all__,
    *_ood.__all__,
]
