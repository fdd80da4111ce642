"""The explainers that ship with featurelens, by name, without importing them.

``fl.list_explainers()`` reads this table, so listing the explainers (the command line's
``--help``, ``featurelens explain --method``) imports none of their modules and no torch; a module
is imported when its explainer is first built (:func:`featurelens.explainers.explainer_class`).
Each entry names the module that registers the explainer (relative to
``featurelens.explainers``) and the extra it needs beyond the core install: ``None`` for those
that run on numpy alone (on scikit-learn models and numpy functions; on torch models they use
torch, which the model brings), ``"torch"`` for those that need a differentiable torch model or
torch operations. ``tests/explainers/test_catalog.py`` checks the table against the registry
and, with torch made unimportable, that each ``"torch"`` entry raises the ImportError naming
the extra and each ``None`` entry runs.
"""

from __future__ import annotations

#: name -> (module, extra it needs or None)
CATALOG: dict[str, tuple[str, str | None]] = {
    # numpy alone: trees, games and approximators, occlusion, ablation, LIME, the random floor
    "tree_shap": ("tree", None),
    "exact_shapley": ("shapley", None),
    "kernel_shap": ("shapley", None),
    "minshap": ("shapley", None),
    "permutation_shap": ("shapley", None),
    "spex": ("spex", None),
    "occlusion": ("perturbation", None),
    "random": ("random_map", None),
    "feature_ablation": ("ablation", None),
    "feature_permutation": ("ablation", None),
    "lime": ("surrogate", None),
    # torch
    "agop_global": ("agop", "torch"),
    "agop_local": ("agop", "torch"),
    "agop_weighted": ("agop", "torch"),
    "deconvolution": ("backprop", "torch"),
    "gradient_shap": ("backprop", "torch"),
    "guided_backprop": ("backprop", "torch"),
    "deeplift": ("deeplift", "torch"),
    "deeplift_shap": ("deeplift", "torch"),
    "layer_deeplift": ("deeplift", "torch"),
    "layer_deeplift_shap": ("deeplift", "torch"),
    "gradcam": ("gradient", "torch"),
    "input_x_gradient": ("gradient", "torch"),
    "integrated_gradients": ("gradient", "torch"),
    "saliency": ("gradient", "torch"),
    "smoothgrad": ("gradient", "torch"),
    "layer_conductance": ("layer", "torch"),
    "layer_gradient_x_activation": ("layer", "torch"),
    "layer_integrated_gradients": ("layer", "torch"),
    "neuron_gradient": ("layer", "torch"),
    "neuron_integrated_gradients": ("layer", "torch"),
    "lrp": ("lrp", "torch"),
    "sop": ("sop", "torch"),
    "wam": ("wavelet", "torch"),
    "wam_ig": ("wavelet", "torch"),
    "wam_smoothgrad": ("wavelet", "torch"),
}

#: What to install for each extra, as the refusals say it.
EXTRAS = {"torch": 'pip install "featurelens[torch]"'}
