"""Feature selection as scikit-learn selectors (``SelectorMixin``): every selector exposes
``scores_`` (higher = more important), ``ranking_`` (1 = best) and selects exactly ``k`` features
when ``k`` is given; ``stability`` measures how a selection varies over bootstrap resamples.
Degenerate data (one row, a target with one value, more clusters than rows) raise a ValueError; a
selection the data cannot support (all features tied, constant columns selected) warns with
:class:`DegenerateDataWarning`."""

import sys as _sys

from .._optional import lazy_import as _lazy_import

# Names that are also submodules (the import system would set the package attribute to the
# submodule when another name loads it): imported now; these modules import no torch.
from .stability import stability  # noqa: E402

#: public name -> submodule: loaded on first use (PEP 562), so that the package imports without torch
_LAZY = {
    "DegenerateDataWarning": "_base",
    "AGOPSelector": "agop",
    "HyperDFS": "dynamic",
    "IIFLearn": "iif_learn",
    "MinkowskiWeightedSelector": "minkowski",
    "MinShapSelector": "minshap",
    "NBSE": "nbse",
    "SAND": "sand",
    "NoiseGainLayer": "sand",
    "SIOFS": "siofs",
    "stability": "stability",
}

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


def __getattr__(name):
    value = _lazy_import(__name__, _LAZY, name)
    setattr(_sys.modules[__name__], name, value)
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
