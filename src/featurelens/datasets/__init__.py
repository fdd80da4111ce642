"""Data sets with planted ground truth for evaluating explanations."""

from featurelens.datasets.xai_tris import (
    BACKGROUNDS,
    SCENARIOS,
    XAI_TRIS_SNR,
    XAITrisDataset,
    xai_tris,
)

__all__ = ["xai_tris", "XAITrisDataset", "XAI_TRIS_SNR", "SCENARIOS", "BACKGROUNDS"]
