"""Feature-learning diagnostics: sparse autoencoders (inner, cosine and blended encoder scores),
the AGOP, its tracker and mergeable accumulator, the Neural Feature Ansatz, Recursive Feature
Machines, random-feature ridge and RFRBoost, representation similarity and geometry (CKA and its
mergeable accumulator), neural collapse, class-manifold geometry and capacity, target linearity,
Mahalanobis++ OOD scores, Jacobian alignment and the GrokAlign penalty, gradient signal-to-noise
ratios, the supervised contrastive and multi-class BCE losses, and a training monitor."""

from .agop import AGOPAccumulator, AGOPTracker, agop
from .alignment import GrokAlign, JacobianAlignment, jacobian_alignment
from .collapse import neural_collapse
from .eigengap import EigengapDetector
from .kernels import NeuralFeatureKernel
from .gsnr import GSNRResult, InfiniteGSNRWarning, gsnr, gsnr_monitor_metric
from .losses import SupConLoss, multiclass_bce
from .manifolds import (
    ManifoldCapacity,
    ManifoldGeometry,
    cover_fraction,
    manifold_capacity,
    manifold_geometry,
    target_linearity,
    virtual_covariance,
)
from .monitor import Monitor, train_with_monitor
from .nfa import layer_agops, nfa
from .ood import MahalanobisOOD
from .random_features import RandomFeatureRidge, RFRBoostClassifier, RFRBoostRegressor
from .representation_stats import compression_discrimination, effective_rank, linear_probe
from .rfm import RFMClassifier, RFMRegressor
from .sae import SparseAutoencoder, dead_latents, dictionary_recovery, norm_detectors
from .similarity import CKAAccumulator, cka

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
