"""Audit of explainers: which explanation should I believe for this model and these inputs?

:func:`featurelens.audit` runs every applicable registered explainer on a sample of the data
through the shared harness (:mod:`featurelens._harness`), scores each map with the metrics of
:mod:`featurelens.metrics`, ranks the methods with a stated rule and a reason per method, and
optionally writes a self-contained HTML report.

The package is ``featurelens._audit`` (private), not ``featurelens.audit``: importing a
subpackage sets it as an attribute of its parent, so a package named ``audit`` would replace the
public function ``fl.audit`` with a module. Modules: ``core`` (the function, method choice,
inputs and targets), ``scoring`` (the metrics, read from their specs in :mod:`featurelens.metrics`; ranking,
reasons, verdict), ``report`` (the report
folder) and ``cli`` (``featurelens audit``).
"""

from .core import AuditTable, audit, choose_methods
from .scoring import RANKING_RULE, audit_columns

__all__ = ["audit", "AuditTable", "choose_methods", "RANKING_RULE", "audit_columns"]
