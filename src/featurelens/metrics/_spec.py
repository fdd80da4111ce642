"""Every metric declares itself: :class:`MetricSpec`, the registry, :func:`list_metrics`, :func:`spec`.

Each metric module declares the specs of its metrics in a module-level ``SPECS`` tuple right below
the functions (a family package, such as :mod:`featurelens.metrics.faithfulness`, joins the
``SPECS`` of its parts in its ``__init__``); the registry collects them from the modules of
:mod:`featurelens.metrics` (any module or package with a ``SPECS`` tuple, in name order), then
orders them by family (:data:`FAMILIES`), keeping the order of declaration within a family. The audit (:func:`featurelens.audit`) and the
ground-truth benchmark (``featurelens benchmark``) read everything they know about a metric from
its spec: which way is better, what it needs, its table column, its one-line reason and how to
call it (``MetricSpec.score``). Adding a metric therefore touches its module (the function and
its spec) and its test; ``tests/metrics/test_metric_contract.py`` fails for a public metric
without a spec.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

__all__ = ["MetricSpec", "ScoreContext", "list_metrics", "spec", "FAMILIES", "REQUIREMENTS"]

#: The metric families, in the order :func:`list_metrics` (and the audit's ``metrics="all"``) lists
#: them.
FAMILIES = ("faithfulness", "robustness", "randomisation", "complexity", "axiomatic", "localisation")

#: What a metric may need, by the words :attr:`MetricSpec.requires` uses. The first six say what
#: it takes besides the maps; the others when it applies (the audit skips a metric, with the reason,
#: where one does not hold).
REQUIREMENTS = {
    "model": "calls the model on perturbed copies of the inputs",
    "explainer": "re-explains (noisy or moved inputs, randomised models, other targets) with the explainer",
    "masks": "ground-truth masks, one per sample",
    "labels": "the samples' class labels",
    "layer": "a layer of the model whose representation it reads",
    "background": "rows of the data (a background set)",
    "parameters": "a torch module with parameters to re-initialise",
    "noise": "noisy copies of the inputs (the audit's robustness_samples, skipped at 0)",
    "images": "images, (n, h, w) or (n, c, h, w)",
    "translations": "images or signals, (n, c, h, w) or (n, c, length), that it can translate",
    "classes": "a model with at least 2 outputs (classes)",
    "samples": "at least 2 samples, compared with each other",
    "windows": "maps of at least 7 values (structural similarity over windows of 7)",
}


@dataclass
class ScoreContext:
    """What ``MetricSpec.score`` reads: the scored batch and the settings shared by the metrics.

    The audit builds one per explained method (its settings: ``steps``, ``n_subsets``, ``radius``,
    ...); the metric contract test builds one per case. ``a`` are the maps scored; ``raw`` the
    explainer's own maps (the same unless the audit broadcast a one-channel map over the
    channels), which the re-explaining metrics compare with their re-explanations. ``regions``:
    the labels of the regions the region metrics remove whole (None: every element is a region).
    ``module``: the torch module the randomisation tests re-initialise (the audit passes a
    TorchScript model's handle, ``featurelens._audit._script_layers.ScriptLayers``).
    ``curves``: where deletion and insertion leave their mean curves; ``cache``: computations that
    several metrics share (the average and maximum sensitivity read one set of noisy copies).
    """

    model: Any = None
    x: np.ndarray | None = None
    a: np.ndarray | None = None
    target: np.ndarray | None = None
    raw: np.ndarray | None = None
    explainer: Any = None
    explainer_name: str | None = None
    explainer_params: dict = field(default_factory=dict)
    module: Any = None
    masks: np.ndarray | None = None
    labels: np.ndarray | None = None
    layer: Any = None
    layout: dict | None = None
    baseline: Any = 0.0
    seed: Any = 0
    steps: int = 20
    n_subsets: int = 50
    subset_size: int | None = None
    radius: float = 0.1
    n_noise: int = 5
    regions: np.ndarray | None = None
    executor: Any = None
    curves: dict = field(default_factory=dict)
    cache: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.raw is None:
            self.raw = self.a

    def executor_kw(self) -> dict:
        """``{"executor": executor}`` when one is set, else ``{}``."""
        return {} if self.executor is None else {"executor": self.executor}

    def shared(self, key: str, compute: Callable):
        """``compute()`` once per context under ``key``: later calls return the same value (or
        raise :class:`SharedFailure` when the first call raised, so that the failure is reported
        once)."""
        if key not in self.cache:
            try:
                self.cache[key] = (True, compute())
            except Exception as err:
                self.cache[key] = (False, err)
                raise
        ok, value = self.cache[key]
        if not ok:
            raise SharedFailure(value)
        return value


class SharedFailure(Exception):
    """A shared computation (:meth:`ScoreContext.shared`) that already failed, and was reported."""


@dataclass(frozen=True)
class MetricSpec:
    """What one metric is and how it is called, declared next to its function.

    Attributes
    ----------
    name
        The registry's name (``fl.metrics.spec(name)``, the audit's ``metrics=``). Usually the
        function's name; ``"deletion"`` and ``"insertion"`` name the AUCs of
        :func:`~featurelens.metrics.deletion_curve` and :func:`~featurelens.metrics.insertion_curve`.
    function
        The public metric function.
    family
        One of :data:`FAMILIES`.
    direction
        Which way the value of ``score`` is better: ``+1`` higher, ``-1`` lower, ``0`` neither
        (complexity: a simpler map is not better or worse by itself).
    reason
        One line: what it measures (with the paper) and which direction is better; the audit's
        report shows it.
    requires
        Words of :data:`REQUIREMENTS`: what it takes besides the maps, and when it applies.
    reexplains
        Whether it explains again (noisy or moved inputs, randomised models, other targets) with the
        explainer, rather than scoring the given maps.
    quantus
        The name of its Quantus counterpart, the metric class a parity test under ``tests/``
        compares it with, or None.
    score
        ``score(ctx: ScoreContext) -> one float per sample``: the metric called with the settings
        of ``ctx``, the value ``direction`` refers to (the AUC of the deletion curve, the
        absolute completeness gap). The audit, and the contract test, call every metric this way.
    column, label
        The audit's table column and its short header; ``column=None``: not in the audit.
    audit_default
        Whether the audit runs it when ``metrics=None``.
    computed_with
        Names of specs computed in the same pass (a failure is reported once for all of them).
    benchmark
        ``(key, label)`` of the ground-truth benchmark's column (``precision`` -> ``precision_mean``),
        or None.
    """

    name: str
    function: Callable
    family: str
    direction: int
    reason: str
    requires: frozenset = frozenset()
    reexplains: bool = False
    quantus: str | None = None
    score: Callable | None = None
    column: str | None = None
    label: str | None = None
    audit_default: bool = False
    computed_with: tuple = ()
    benchmark: tuple | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"MetricSpec name must be an identifier; got {self.name!r}")
        if not callable(self.function):
            raise TypeError(f"MetricSpec {self.name!r}: function must be callable; got {self.function!r}")
        if self.family not in FAMILIES:
            raise ValueError(f"MetricSpec {self.name!r}: family must be one of {FAMILIES}; got {self.family!r}")
        if self.direction not in (-1, 0, 1):
            raise ValueError(f"MetricSpec {self.name!r}: direction must be +1, -1 or 0; got {self.direction!r}")
        requires = frozenset(self.requires)
        unknown = sorted(requires - set(REQUIREMENTS))
        if unknown:
            raise ValueError(f"MetricSpec {self.name!r}: unknown requirement(s) {unknown}; expected some of "
                             f"{', '.join(REQUIREMENTS)}")
        object.__setattr__(self, "requires", requires)
        if self.score is not None:
            object.__setattr__(self, "score", _context_checked(self.name, self.score, requires))
        if self.column is not None and (self.score is None or not self.label):
            raise ValueError(f"MetricSpec {self.name!r}: an audit column needs score= and label=")
        if self.audit_default and self.column is None:
            raise ValueError(f"MetricSpec {self.name!r}: audit_default needs an audit column")

    @property
    def audited(self) -> bool:
        """Whether :func:`featurelens.audit` can run it (it has a column)."""
        return self.column is not None


#: The fields of :class:`ScoreContext` that a requirement word of :data:`REQUIREMENTS` needs set,
#: with what each holds.
_CONTEXT_FIELDS = {
    "model": (("model", "the model it calls on perturbed copies of the inputs"),),
    "explainer": (("explainer", "the explainer it re-explains with"),),
    "masks": (("a", "the maps scored"), ("masks", "ground-truth masks, one per sample")),
    "labels": (("a", "the maps scored"),
               ("layout", "the layout of mosaics built from the class labels (featurelens.metrics.focus_mosaics)")),
}


def _context_checked(name: str, score: Callable, requires: frozenset) -> Callable:
    """``score`` behind a check that the context holds what the metric requires (a clear error
    naming the missing field, not an AttributeError of None inside the metric)."""
    if getattr(score, "_checks_context", False):
        return score
    needed = {}
    for word in sorted(requires):
        for field_name, what in _CONTEXT_FIELDS.get(word, ()):
            needed.setdefault(field_name, what)

    def checked(ctx):
        for field_name, what in needed.items():
            if getattr(ctx, field_name, None) is None:
                raise ValueError(f"metric {name!r} needs ScoreContext({field_name}=...), {what}; "
                                 f"got {field_name}=None")
        return score(ctx)

    checked._checks_context = True
    checked.__wrapped__ = score
    checked.__doc__ = getattr(score, "__doc__", None)
    return checked


_REGISTRY: dict | None = None


def _collect() -> dict:
    import featurelens.metrics as package

    found = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for s in getattr(module, "SPECS", ()):
            if not isinstance(s, MetricSpec):
                raise TypeError(f"{module.__name__}.SPECS holds {s!r}, not a MetricSpec")
            found.append(s)
    found.sort(key=lambda s: FAMILIES.index(s.family))  # stable: declaration order within a family
    registry = {}
    for s in found:
        if s.name in registry:
            raise ValueError(f"metric {s.name!r} is declared twice (in {registry[s.name].function.__module__} "
                             f"and {s.function.__module__})")
        registry[s.name] = s
    return registry


def _registry() -> dict:
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = _collect()
    return _REGISTRY


def list_metrics(family: str | None = None) -> list:
    """The declared metrics' :class:`MetricSpec` objects, by family (:data:`FAMILIES` order), in
    the order of declaration within a family.

    Parameters
    ----------
    family
        None (every metric) or one of :data:`FAMILIES`.

    Examples
    --------
    >>> import featurelens as fl
    >>> [s.name for s in fl.metrics.list_metrics("complexity")]
    ['sparseness', 'complexity', 'effective_complexity']
    """
    if family is not None and family not in FAMILIES:
        raise ValueError(f"family must be None or one of {', '.join(FAMILIES)}; got {family!r}")
    return [s for s in _registry().values() if family is None or s.family == family]


def spec(name: str) -> MetricSpec:
    """The :class:`MetricSpec` of the metric ``name``: a registry name (``"deletion"``) or the name
    of a metric function (``"deletion_curve"``). An unknown name is a ValueError listing the known
    ones."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a metric name (str); got {name!r} ({type(name).__name__})")
    registry = _registry()
    if name in registry:
        return registry[name]
    for s in registry.values():
        if s.function.__name__ == name:
            return s
    raise ValueError(f"name: unknown metric {name!r}; known metrics: {', '.join(registry)}")
