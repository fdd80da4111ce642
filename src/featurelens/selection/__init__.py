"""Feature selection as scikit-learn selectors (``SelectorMixin``): every selector exposes
``scores_`` (higher = more important), ``ranking_`` (1 = best) and selects exactly ``k`` features
when ``k`` is given; ``stability`` measures how a selection varies over bootstrap resamples.
Degenerate data (one row, a target with one value, more clusters than rows) raise a ValueError; a
selection the data cannot support (all features tied, constant columns selected) warns with
:class:`DegenerateDataWarning`."""

from ._base import DegenerateDataWarning
from .agop import AGOPSelector
from .dynamic import HyperDFS
from .iif_learn import IIFLearn
from .minkowski import MinkowskiWeightedSelector
from .minshap import MinShapSelector
from .nbse import NBSE
from .sand import SAND, NoiseGainLayer
from .siofs import SIOFS
from .stability import stability

__all__ = [
    "SAND",
    "NoiseGainLayer",
    "SIOFS",
    "NBSE",
    "MinkowskiWeightedSelector",
    "MinShapSelector",
    "AGOPSelector",
    "IIFLearn",
    "stability",
    "HyperDFS",
    "DegenerateDataWarning",
]
