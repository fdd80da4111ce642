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
from featurelens.datasets.theory import ContinualTasks, ICAMixture, IndexModel, LabelNoise, OutputScaled, SpikedCovariance, continual_tasks, ica_mixture, label_noise, multi_index, single_index, spiked_covariance  # noqa: E501

__all__ = ["sparse_game", "SparseGame", "superposition", "Superposition", "xai_tris", "XAITrisDataset", "XAI_TRIS_SNR", "SCENARIOS", "BACKGROUNDS", "single_index", "multi_index", "IndexModel", "label_noise", "LabelNoise", "spiked_covariance", "SpikedCovariance", "ica_mixture", "ICAMixture", "continual_tasks", "ContinualTasks", "OutputScaled"]
