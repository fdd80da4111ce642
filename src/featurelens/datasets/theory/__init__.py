"""Generators with planted structure for the theory of feature learning, and the lazy/rich output scale.

Each generator returns a small dataclass holding the data *and* the structure it planted, so that a
method can be scored against the truth:

* :func:`single_index` and :func:`multi_index`: Gaussian inputs ``x ~ N(0, I_d)`` and a target that
  depends on ``x`` only through ``k`` planted directions, ``y = g(W^T x) + noise``. The returned
  ``directions`` are the rows of ``W^T`` (orthonormal). The single-index model is the setting of
  Ben Arous, Gheissari & Jagannath, "Online stochastic gradient descent on non-convex losses from
  high-dimensional inference", JMLR 22 (2021) (the *information exponent* of ``g``: the index of its
  first nonzero Hermite coefficient); the multi-index ``staircase`` link is that of Abbe,
  Boix-Adsera & Misiakiewicz, "The merged-staircase property", COLT 2022 (arXiv 2202.08658).
* :func:`label_noise`: the signal-plus-noise model of benign overfitting with label-flipping noise,
  ``x = y_clean mu + xi`` (or the two patches ``[y_clean mu, xi]``) and a planted share of flipped
  labels, with the flipped rows returned (Cao, Chen, Belkin & Gu, "Benign overfitting in two-layer
  convolutional neural networks", NeurIPS 2022, arXiv 2202.06526; Kou, Chen, Chen & Gu, "Benign
  overfitting in two-layer ReLU convolutional neural networks", ICML 2023, arXiv 2303.04145).
* :func:`spiked_covariance`: ``x = sum_k sqrt(beta_k) z_k u_k + xi`` (Johnstone 2001), with the
  BBP threshold ``sqrt(d / n)`` and the limiting overlap of the top sample eigenvector with the
  spike (Baik, Ben Arous & Peche, Ann. Probab. 33 (2005); Paul, Statistica Sinica 17 (2007)).
* :func:`ica_mixture`: the linear ICA model ``x = A s (+ noise)`` with independent unit-variance
  non-Gaussian sources (Hyvarinen & Oja, "Independent component analysis: algorithms and
  applications", Neural Networks 13 (2000)); the sources and the mixing matrix are returned.
* :func:`continual_tasks`: a sequence of teacher-student regression tasks whose teachers sit at a
  chosen cosine to task 0's (the teacher-student continual-learning setting of Lee, Goldt & Saxe,
  "Continual learning in the teacher-student setup: impact of task similarity", ICML 2021, arXiv
  2107.04384).
* :class:`OutputScaled`: the lazy/rich output scale of Chizat, Oyallon & Bach, "On lazy training in
  differentiable programming", NeurIPS 2019 (arXiv 1812.07956): ``f_alpha(x) = alpha (f(x; w) -
  f(x; w_0))`` trained with the loss divided by ``alpha^2``.
"""

from .index_models import IndexModel, MULTI_INDEX_LINKS, SINGLE_INDEX_LINKS, multi_index, single_index
from .noise_models import ICA_SOURCES, ICAMixture, LabelNoise, SpikedCovariance, ica_mixture, label_noise, spiked_covariance
from .tasks import ContinualTasks, continual_tasks

__all__ = [
    "IndexModel",
    "single_index",
    "multi_index",
    "LabelNoise",
    "label_noise",
    "SpikedCovariance",
    "spiked_covariance",
    "ICAMixture",
    "ica_mixture",
    "ContinualTasks",
    "continual_tasks",
    "OutputScaled",
    "SINGLE_INDEX_LINKS",
    "MULTI_INDEX_LINKS",
    "ICA_SOURCES",
]


def __getattr__(name):
    # OutputScaled is a torch module: imported on first use, so that the generators need no torch.
    if name == "OutputScaled":
        from .output_scale import OutputScaled

        return OutputScaled
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"OutputScaled"})
