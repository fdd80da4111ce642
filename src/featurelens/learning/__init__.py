"""Feature-learning diagnostics: sparse autoencoders (inner, cosine and blended encoder scores),
the AGOP, its tracker and mergeable accumulator, the Neural Feature Ansatz, Recursive Feature
Machines, random-feature ridge and RFRBoost, representation similarity and geometry (CKA and its
mergeable accumulator), neural collapse, class-manifold geometry and capacity, target linearity,
Mahalanobis++ OOD scores, Jacobian alignment and the GrokAlign penalty, gradient signal-to-noise
ratios, the supervised contrastive and multi-class BCE losses, and a training monitor."""

import sys as _sys

from .._optional import lazy_import as _lazy_import

# Names that are also submodules (the import system would set the package attribute to the
# submodule when another name loads it): imported now; these modules import no torch.
from .agop import agop  # noqa: E402
from .gsnr import gsnr  # noqa: E402
from .nfa import nfa  # noqa: E402

#: public name -> submodule: loaded on first use (PEP 562), so that the package imports without torch
_LAZY = {
    "AGOPAccumulator": "agop",
    "AGOPTracker": "agop",
    "agop": "agop",
    "GrokAlign": "alignment",
    "JacobianAlignment": "alignment",
    "jacobian_alignment": "alignment",
    "neural_collapse": "collapse",
    "EigengapDetector": "eigengap",
    "NeuralFeatureKernel": "kernels",
    "GSNRResult": "gsnr",
    "InfiniteGSNRWarning": "gsnr",
    "gsnr": "gsnr",
    "gsnr_monitor_metric": "gsnr",
    "SupConLoss": "losses",
    "multiclass_bce": "losses",
    "ManifoldCapacity": "manifolds",
    "ManifoldGeometry": "manifolds",
    "cover_fraction": "manifolds",
    "manifold_capacity": "manifolds",
    "manifold_geometry": "manifolds",
    "target_linearity": "manifolds",
    "virtual_covariance": "manifolds",
    "Monitor": "monitor",
    "train_with_monitor": "monitor",
    "layer_agops": "nfa",
    "nfa": "nfa",
    "MahalanobisOOD": "ood",
    "RandomFeatureRidge": "random_features",
    "RFRBoostClassifier": "random_features",
    "RFRBoostRegressor": "random_features",
    "compression_discrimination": "representation_stats",
    "effective_rank": "representation_stats",
    "linear_probe": "representation_stats",
    "RFMClassifier": "rfm",
    "RFMRegressor": "rfm",
    "SparseAutoencoder": "sae",
    "dead_latents": "sae",
    "dictionary_recovery": "sae",
    "norm_detectors": "sae",
    "CKAAccumulator": "similarity",
    "cka": "similarity",
}

__all__ = [
    "agop",
    "AGOPTracker",
    "AGOPAccumulator",
    "nfa",
    "layer_agops",
    "RFMRegressor",
    "RFMClassifier",
    "cka",
    "CKAAccumulator",
    "effective_rank",
    "linear_probe",
    "compression_discrimination",
    "neural_collapse",
    "MahalanobisOOD",
    "Monitor",
    "EigengapDetector",
    "train_with_monitor",
    "jacobian_alignment",
    "JacobianAlignment",
    "GrokAlign",
    "manifold_geometry",
    "ManifoldGeometry",
    "manifold_capacity",
    "ManifoldCapacity",
    "cover_fraction",
    "target_linearity",
    "virtual_covariance",
    "SparseAutoencoder",
    "dictionary_recovery",
    "dead_latents",
    "norm_detectors",
    "RandomFeatureRidge",
    "RFRBoostRegressor",
    "RFRBoostClassifier",
    "gsnr",
    "GSNRResult",
    "InfiniteGSNRWarning",
    "gsnr_monitor_metric",
    "SupConLoss",
    "multiclass_bce",
    "NeuralFeatureKernel",
]


def __getattr__(name):
    value = _lazy_import(__name__, _LAZY, name)
    setattr(_sys.modules[__name__], name, value)
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
