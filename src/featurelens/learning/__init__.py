"""Feature-learning tools: the AGOP and its training-time tracker."""

from .agop import AGOPTracker, agop

__all__ = ["agop", "AGOPTracker"]
