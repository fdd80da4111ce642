"""Data sets with planted ground truth for evaluating explanations."""

from featurelens.datasets.xai_tris import (
    BACKGROUNDS,
    SCENARIOS,
    XAI_TRIS_SNR,
    XAITrisDataset,
    xai_tris,
)
from featurelens.datasets.games import SparseGame, sparse_game
from featurelens.datasets.superposition import Superposition, superposition
from featurelens.datasets.theory import ContinualTasks, ICAMixture, IndexModel, LabelNoise, SpikedCovariance, continual_tasks, ica_mixture, label_noise, multi_index, single_index, spiked_covariance  # noqa: E501

__all__ = ["sparse_game", "SparseGame", "superposition", "Superposition", "xai_tris", "XAITrisDataset", "XAI_TRIS_SNR", "SCENARIOS", "BACKGROUNDS", "single_index", "multi_index", "IndexModel", "label_noise", "LabelNoise", "spiked_covariance", "SpikedCovariance", "ica_mixture", "ICAMixture", "continual_tasks", "ContinualTasks", "OutputScaled"]


def __getattr__(name):
    # OutputScaled is a torch module: imported on first use (featurelens[torch]).
    if name == "OutputScaled":
        from featurelens.datasets.theory.output_scale import OutputScaled

        return OutputScaled
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"OutputScaled"})
