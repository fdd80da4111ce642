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

__all__ = ["sparse_game", "SparseGame", "superposition", "Superposition", "xai_tris", "XAITrisDataset", "XAI_TRIS_SNR", "SCENARIOS", "BACKGROUNDS"]
