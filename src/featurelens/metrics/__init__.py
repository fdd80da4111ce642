"""Metrics for explanations and representations.

- localization against planted ground truth: precision_at_k, iou_at_k, emd_score, relevance_mass,
  relevance_rank_accuracy
- faithfulness: deletion_curve, insertion_curve, faithfulness_correlation, infidelity; by removal
  road, irof, selectivity, region_perturbation; by subsets sensitivity_n, monotonicity,
  monotonicity_correlation, sufficiency
- robustness: max_sensitivity, avg_sensitivity, local_lipschitz, continuity, consistency,
  relative_input_stability, relative_output_stability, relative_representation_stability
- localisation on masks: pointing_game, attribution_localisation, top_k_intersection, auc,
  focus (on focus_mosaics)
- axiomatic: completeness, non_sensitivity, input_invariance
- complexity: sparseness, complexity, effective_complexity
- randomisation: model_randomization, efficient_mprt, smooth_mprt, random_logit
- OOD detection scores: auroc, fpr_at_tpr

Every per-explanation metric declares itself with a :class:`MetricSpec` next to its function
(name, family, which direction is better, what it needs, whether it re-explains, its Quantus
counterpart, how the audit calls it): :func:`list_metrics` lists them by family and
:func:`spec` looks one up by name (``fl.metrics.spec("road").direction == -1``);
``spec.score(ScoreContext(...))`` calls any of them one way. The audit and
the ground-truth benchmark read their metrics from these specs.

Budgets: the counts of perturbed copies (``n_subsets``, ``n_samples``, ``n_perturbations``,
``n_mosaics``) are refused with a ValueError before any work when they ask for more than
:data:`featurelens._validation.MAX_EVALUATIONS` (10^8) evaluations per call, first per input, then
for the whole batch (times the subset sizes or regions), or for more memory than is available
(:func:`featurelens._validation.check_budget`).
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
