"""Metrics for explanations and representations, one module per family.

- :mod:`~featurelens.metrics.faithfulness`: deletion_curve, insertion_curve,
  faithfulness_correlation, infidelity, road, irof, selectivity, region_perturbation,
  sensitivity_n, monotonicity, monotonicity_correlation, sufficiency
- :mod:`~featurelens.metrics.robustness`: max_sensitivity, avg_sensitivity, local_lipschitz,
  continuity, consistency, relative_input_stability, relative_output_stability,
  relative_representation_stability
- :mod:`~featurelens.metrics.randomisation`: model_randomization, efficient_mprt, smooth_mprt,
  random_logit
- :mod:`~featurelens.metrics.complexity`: sparseness, complexity, effective_complexity
- :mod:`~featurelens.metrics.axiomatic`: completeness, non_sensitivity, input_invariance
- :mod:`~featurelens.metrics.localisation`: precision_at_k, iou_at_k, emd_score, relevance_mass,
  relevance_rank_accuracy, pointing_game, attribution_localisation, top_k_intersection, auc,
  focus (on focus_mosaics)
- :mod:`~featurelens.metrics.ood` (OOD detection scores): auroc, fpr_at_tpr

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

Budgets: the counts of perturbed copies (``n_subsets``, ``n_samples``, ``n_perturbations``,
``n_mosaics``) are refused with a ValueError before any work when they ask for more than
``featurelens._budgets.MAX_EVALUATIONS`` (10^8) evaluations per call, first per input, then
for the whole batch (times the subset sizes or regions), or for more memory than is available
(``featurelens._budgets.check_budget``).
"""

from featurelens.metrics._spec import FAMILIES, REQUIREMENTS, MetricSpec, ScoreContext, list_metrics, spec
from featurelens.metrics.axiomatic import completeness, input_invariance, non_sensitivity
from featurelens.metrics.complexity import complexity, effective_complexity, sparseness
from featurelens.metrics.faithfulness import (
    deletion_curve,
    faithfulness_correlation,
    infidelity,
    insertion_curve,
    irof,
    monotonicity,
    monotonicity_correlation,
    region_perturbation,
    road,
    selectivity,
    sensitivity_n,
    sufficiency,
)
from featurelens.metrics.localisation import (
    attribution_localisation,
    auc,
    emd_score,
    focus,
    focus_mosaics,
    iou_at_k,
    pointing_game,
    precision_at_k,
    relevance_mass,
    relevance_rank_accuracy,
    top_k_intersection,
)
from featurelens.metrics.ood import auroc, fpr_at_tpr
from featurelens.metrics.randomisation import efficient_mprt, model_randomization, random_logit, smooth_mprt
from featurelens.metrics.robustness import (
    avg_sensitivity,
    consistency,
    continuity,
    local_lipschitz,
    max_sensitivity,
    relative_input_stability,
    relative_output_stability,
    relative_representation_stability,
)

__all__ = [
    "MetricSpec",
    "ScoreContext",
    "list_metrics",
    "spec",
    "FAMILIES",
    "REQUIREMENTS",
    "precision_at_k",
    "iou_at_k",
    "emd_score",
    "relevance_mass",
    "relevance_rank_accuracy",
    "deletion_curve",
    "insertion_curve",
    "faithfulness_correlation",
    "infidelity",
    "road",
    "irof",
    "selectivity",
    "region_perturbation",
    "sensitivity_n",
    "monotonicity",
    "monotonicity_correlation",
    "sufficiency",
    "max_sensitivity",
    "avg_sensitivity",
    "local_lipschitz",
    "sparseness",
    "complexity",
    "effective_complexity",
    "pointing_game",
    "attribution_localisation",
    "top_k_intersection",
    "auc",
    "focus",
    "focus_mosaics",
    "completeness",
    "non_sensitivity",
    "input_invariance",
    "model_randomization",
    "efficient_mprt",
    "smooth_mprt",
    "random_logit",
    "continuity",
    "consistency",
    "relative_input_stability",
    "relative_output_stability",
    "relative_representation_stability",
    "auroc",
    "fpr_at_tpr",
]
