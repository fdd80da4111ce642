"""The one model adapter, :class:`~featurelens.models.Model` (see ``featurelens.models._adapter``).

The package, bottom up: ``_estimators`` (which method a fitted estimator is called through),
``_frames`` (DataFrames as float64 rows, non-numeric columns as category codes), ``_outputs``
(what a model returns, checked and put in units), ``_factory_cache`` (models built once per
process for ``Model.from_factory``), ``_passes`` (gradients and expanded passes in chunks) and
``_adapter`` (the Model).
"""

from ._adapter import Model

__all__ = ["Model"]
