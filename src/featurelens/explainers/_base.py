"""The explainer base class and the registry that maps names to explainer classes."""

from __future__ import annotations

import copy
import difflib
import functools
import importlib
import inspect
import time
from dataclasses import dataclass, field

import numpy as np

from .._optional import require_torch, to_numpy, torch
from .._random import root_seed, row_rng, row_seed_sequence, seed_record
from .._validation import as_numpy, baseline_record, check_executor, check_int, resolve_baseline
from ..explanation import Explanation
from ..models import Model
from ._catalog import CATALOG
from ._requires import Requires, script_reason

_REGISTRY: dict[str, type["Explainer"]] = {}
_UNSET = object()  # Explainer._sample_groups before a call resolved them


def register(name: str):
    """Class decorator: register an explainer class under ``name``.

    Parameters
    ----------
    name
        The name ``fl.explainer(name, model)`` builds it by; it must be new.

    Returns
    -------
    callable
        The decorator, which sets ``cls.name`` and returns the class unchanged.
    """

    def decorate(cls):
        if name in _REGISTRY:
            raise ValueError(f"an explainer named {name!r} is already registered")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return decorate


def list_explainers(details: bool = False):
    """The explainers, sorted by name: those that ship (listed without importing them, so without
    torch) and those registered since.

    Parameters
    ----------
    details
        False (default): the names. True: one dict per explainer with ``name``, ``needs`` (the
        extra it needs beyond the core install, ``"torch"``, or None) and ``available`` (whether
        it can run here: its extra is installed).

    Returns
    -------
    list
        Names (str), or dicts with ``details=True``.

    Examples
    --------
    >>> import featurelens as fl
    >>> "tree_shap" in fl.list_explainers()
    True
    >>> [d["needs"] for d in fl.list_explainers(details=True) if d["name"] in ("saliency", "tree_shap")]
    ['torch', None]
    """
    names = sorted(set(CATALOG) | set(_REGISTRY))
    if not details:
        return names
    return [{"name": n, "needs": explainer_needs(n), "available": _extra_installed(explainer_needs(n))}
            for n in names]


def explainer_needs(name: str) -> str | None:
    """The extra the explainer ``name`` needs beyond the core install (``"torch"``), or None.

    Parameters
    ----------
    name
        A name of :func:`list_explainers`.

    Returns
    -------
    str or None
        ``"torch"`` for explainers that need torch, None for those that run on numpy alone (and
        for explainers registered outside featurelens).
    """
    return CATALOG[name][1] if name in CATALOG else None


def _extra_installed(extra: str | None) -> bool:
    if extra is None:
        return True
    import importlib.util

    try:
        return importlib.util.find_spec(extra) is not None
    except (ImportError, ValueError):
        return False


def explainer_class(name: str) -> type["Explainer"]:
    """The class registered as ``name``, its module imported on first use.

    Parameters
    ----------
    name
        A name of :func:`list_explainers`.

    Returns
    -------
    type
        The :class:`Explainer` subclass.

    Raises
    ------
    TypeError
        ``name`` is not a string.
    ValueError
        No explainer has that name (close names are suggested).
    ImportError
        The explainer needs an extra that is not installed (the message names it).
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string naming an explainer; got {type(name).__name__}")
    if name not in _REGISTRY:
        if name not in CATALOG:
            known = list_explainers()
            close = difflib.get_close_matches(name, known, n=3)
            hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise ValueError(f"unknown explainer name {name!r}.{hint} Registered: {', '.join(known)}")
        module, extra = CATALOG[name]
        if extra == "torch":
            require_torch(f"explainer {name!r}")
        importlib.import_module(f"{__package__}.{module}")
    return _REGISTRY[name]


@functools.lru_cache(maxsize=None)
def constructor_parameters(cls) -> list:
    """The parameter names of an explainer class's constructor (but self and model), read once per
    class (``inspect.signature`` costs a twentieth of a small CNN's saliency call)."""
    return [p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "model")]


def explainer(name: str, model, output: str | None = None, **params) -> "Explainer":
    """Build the explainer registered as ``name`` for ``model`` with the given parameters.

    ``output`` (every explainer): the units of the explained output, ``"raw"``, ``"probability"``
    or ``"log_odds"``; the model is put in those units (``featurelens.models.Model.wrap``)
    before the explainer sees it. None keeps the model's own units (``"raw"`` for a plain model).

    ``fl.explainer`` (``featurelens._factory.explainer``) also takes ``tokenizer=`` for text
    models; this function is the one for arrays and tables.

    >>> ex = explainer("integrated_gradients", net, n_steps=50)
    >>> e = ex.explain(x, target=y)
    """
    cls = explainer_class(name)
    allowed = constructor_parameters(cls)
    unknown = [p for p in params if p not in allowed]
    if unknown:
        raise TypeError(
            f"explainer {name!r} got unknown parameter(s) {', '.join(unknown)}; "
            f"it accepts: {', '.join(allowed + ['output'])}"
        )
    if output is not None:
        # The class may see the model as something else first (tree_shap: a raw LightGBM/XGBoost
        # Booster as the classifier or regressor its objective makes it), so that the units are
        # checked against what is explained, not against the raw object's ``predict``.
        model_for = getattr(cls, "model_for_explaining", None)  # registered classes need not subclass Explainer
        model = Model.wrap(model if model_for is None else model_for(model), output=output)
    return cls(model, **params)


class Explainer:
    """Base class: validates inputs and targets, times the work, counts model calls and wraps the
    result in an :class:`~featurelens.Explanation`.

    Subclasses implement ``_attribute(x, target, outputs, **kwargs) -> (values, extra params)``
    where ``x`` is a validated tensor on the model's device, ``target`` one long index per sample
    and ``outputs`` the model's outputs on ``x`` when they were needed to pick targets (else None).
    Arrays that belong in ``Explanation.extra`` (one row per sample, like ``values``) go in
    the extra params under the key ``"arrays"`` (a dict name -> array); the base class moves them
    to ``Explanation.extra`` and reshapes them like ``values`` for ``(n, k)`` targets.

    ``batch_size``: rows per model call. None keeps the rule of the Model (its own batch size, or
    automatic chunks); a Model passed in is never changed: another batch size gives the explainer
    its own Model around the same module (``featurelens.models.Model.wrap``).

    ``output``: the units of the explained output, ``"raw"``, ``"probability"`` (softmax /
    sigmoid of logits, an estimator's ``predict_proba``) or ``"log_odds"`` (see
    :class:`featurelens.models.Model`, the one place outputs are turned into units). None
    (default) keeps the Model's own units: ``"raw"`` unless a ``Model(..., output=...)`` is passed.
    The factory :func:`explainer` takes it for every explainer (``explainer(name, model,
    output="probability")``); a class built directly takes a ``Model(..., output=...)``. It is
    recorded in ``params`` and in ``Explanation.output``.

    Baselines: an explainer that takes a ``baseline`` (the reference input ``x'``: integrated
    gradients' path start, DeepLift's reference, the fill of occluded or removed players) declares
    what ``baseline=None`` means once, as ``default_baseline``, next to ``requires``:

    - ``"zeros"`` (the default): ``x' = 0``, the black image or the silent signal (integrated
      gradients, Sundararajan et al. 2017, arXiv 1703.01365; DeepLift, the layer and neuron path
      methods, occlusion, as Captum);
    - ``"refuse_tabular"``: ``x' = 0`` for images and signals, refused with a ValueError for tabular
      rows (one input of shape ``(d,)``) unless a ``background`` is given, because a zero lies
      anywhere on unscaled features (the black-box Shapley explainers, SPEX, LIME and feature
      ablation).

    ``_resolve_baseline`` (``featurelens._validation.resolve_baseline``) applies it; a bad
    baseline (a string, a bool, NaN or inf, a shape neither one input's nor the batch's) is refused
    naming ``baseline``. Every explanation of such an explainer records the baseline it used one
    way, ``params["baseline"]`` (``featurelens._validation.baseline_record``): ``"zeros"`` when
    None was given, the number as a float when a scalar was given, ``"array"`` when an array was
    given (shaped like one input or like the batch). The baseline of one call
    (``explain(x, baseline=...)``, where the explainer takes one) is the one recorded. An
    explainer that fills with ``background`` rows instead records no ``"baseline"``.
    """

    name = "explainer"
    #: Where the explainer applies (see :class:`Requires`); subclasses override it.
    requires = Requires(gradients=True)
    #: The shared constructor options it takes, read by the audit and benchmark harness
    #: (:mod:`featurelens._harness`) instead of inspecting signatures: any of "seed", "baseline",
    #: "groups", "data", "progress", "executor" (``batch_size`` every explainer takes).
    accepts: frozenset = frozenset()
    #: What ``baseline=None`` means, for an explainer that takes a ``baseline`` (``"baseline"`` in
    #: :attr:`accepts`): a policy of :func:`featurelens._validation.default_baseline`, applied by
    #: ``_resolve_baseline`` (see the class docstring): ``"zeros"`` or ``"refuse_tabular"``.
    default_baseline: str = "zeros"

    #: Whether :func:`featurelens.audit` runs it when ``methods=None`` (where it applies: gradient
    #: explainers on differentiable models, the others on models without gradients): True, or the
    #: reason it is left out, shown in the report (it can still be requested with ``methods=``).
    audit_default: bool | str = True
    #: Where a default explainer comes in the audit's run order (lower first; None: after those
    #: with a place, in name order). The order is the order of the random streams the methods
    #: draw from a Generator seed.
    audit_order: int | None = None

    #: Whether the ground-truth benchmark (:func:`featurelens.groundtruth.run_benchmark`) runs it
    #: when ``methods=None``: True, or the reason it is left out (it can still be requested with
    #: ``methods=``). None: decided by ``requires``: the explainers that need the model's
    #: gradients run, the others (black-box methods, far slower on images and with their own
    #: benchmark settings) do not. ``random`` is always run, last (the floor every method must beat).
    benchmark_default: bool | str | None = None
    #: Where a default explainer comes in the benchmark's run order and report (lower first; None:
    #: after those with a place, in name order).
    benchmark_order: int | None = None

    #: The output units it can explain in: those computed through the Model's forward passes get
    #: all three; an explainer that reads the model's structure instead (tree_shap) lists its own.
    outputs: tuple = ("raw", "probability", "log_odds")

    #: False for explainers that never read the target (the neuron attributions): with
    #: ``target=None`` they skip the forward pass that would find the predicted classes, and the
    #: explanation records target 0 for every sample.
    uses_target: bool = True

    #: True for explainers whose every pass picks the target outputs through the Model
    #: (:meth:`featurelens.models.Model.pick`: ``Model.gradient``, ``Model.expanded_gradient``),
    #: which checks the targets against the number of outputs it sees: a given target is then not
    #: checked by a one-row forward pass first (a tenth of a 32-row CNN pass). The message is the
    #: same; a row-parallel explain still checks by one row, on the caller's side.
    target_in_pass: bool = False

    #: True for explainers that work on numpy arrays as well as tensors (TreeSHAP, the games,
    #: occlusion, the random floor): on a scikit-learn model or a numpy callable their Model is in
    #: numpy mode (:meth:`featurelens.models.Model.with_numpy`), so ``_attribute`` gets numpy ``x``
    #: and ``target`` and torch is never imported; on a torch model it gets tensors as usual.
    numpy_inputs: bool = False

    @classmethod
    def model_for_explaining(cls, model):
        """The object this explainer explains when given ``model``, before any units are applied
        (:func:`explainer` wraps it with ``output=``): ``model`` itself by default; ``tree_shap``
        turns a raw LightGBM/XGBoost Booster into the classifier or regressor its objective makes
        it, so ``output="log_odds"`` is checked against a classifier, not the Booster's ``predict``.

        Parameters
        ----------
        model : object
            The model given to :func:`explainer`.

        Returns
        -------
        object
            What the explainer's Model should wrap.

        Examples
        --------
        >>> Explainer.model_for_explaining(net) is net
        True
        """
        return model

    def __init__(self, model, batch_size: int | None = None, output: str | None = None):
        self.model = Model.wrap(model, batch_size=batch_size, output=output)
        # Numpy models stay in numpy for the explainers that compute in numpy, tensors otherwise.
        self.model = self.model.with_numpy() if self.numpy_inputs else self.model.with_tensors()
        if self.model.output not in self.outputs:
            raise ValueError(
                f"explainer {self.name!r} explains outputs in {', '.join(repr(o) for o in self.outputs)} "
                f"units only; got output={self.model.output!r}"
            )
        if self.requires.gradients:
            self.model.require_gradients(f"explainer {self.name!r}")
        reason = script_reason(self.requires.hooks, self.model.module)
        if reason is not None:
            raise TypeError(f"explainer {self.name!r} {reason}")

    @property
    def output(self) -> str:
        """The units of the explained output (the Model's): "raw", "probability" or "log_odds"."""
        return self.model.output

    def params(self) -> dict:
        """The constructor parameters recorded in each explanation's provenance."""
        # None: automatic chunking (at most 1024 rows and 2**19 input elements per chunk).
        p = {"batch_size": None if self.model.auto_batch else self.model.batch_size, "output": self.model.output}
        if self._uses_baseline():
            p["baseline"] = baseline_record(getattr(self, "baseline", None), self.default_baseline)
        return p

    def _uses_baseline(self) -> bool:
        """Whether this explainer fills with a baseline: it takes one (``"baseline"`` in
        :attr:`accepts`) and has no ``background`` rows to fill with instead."""
        return "baseline" in self.accepts and getattr(self, "background", None) is None

    def _resolve_baseline(self, x: torch.Tensor, baseline=None) -> torch.Tensor:
        """The baseline of this call shaped like the batch ``x``: ``baseline`` (given to
        :meth:`explain`) or else the constructor's, None meaning what ``default_baseline``
        says (``featurelens._validation.resolve_baseline``, refusals naming the method)."""
        given = getattr(self, "baseline", None) if baseline is None else baseline
        return resolve_baseline(given, x, "baseline", default=self.default_baseline, method=self.name)

    def explain(self, x, target=None, feature_names=None, group_names=None, executor=None, first_row: int = 0,
                **kwargs) -> Explanation:
        """Attribute the model's ``target`` output for each sample of the batch ``x``.

        ``x`` is a numpy array or tensor with the samples along the first axis; ``target`` is None
        (the predicted class), an int, one int per sample, or an ``(n, k)`` int array for ``k``
        targets per sample in one call: the values then have shape ``(n, k, *x.shape[1:])`` and
        ``Explanation.target`` shape ``(n, k)`` (each (sample, target) pair is one row of an
        expanded batch, so memory stays bounded by ``batch_size``).

        The explanation records the explained rows (``data``), the base values the attributions
        add up from (where the method has them), the output units and the feature names: a
        DataFrame's columns, or ``feature_names`` (one str per element of one input). With an
        explainer's ``groups``, ``group_values`` holds one value per group and ``groups`` the group
        labels, or ``group_names`` (one str per distinct label, in sorted label order).

        ``executor`` (a :mod:`featurelens.parallel` executor, e.g. ``ThreadExecutor(4)`` or
        ``RayExecutor()``): the rows are explained in parts on its workers (2-4 parts per worker,
        whole rows, in order; the explainer is sent once per call) and the parts concatenated into
        one explanation: ``model_calls`` is the sum over the parts plus the target pass made here,
        ``seconds`` the wall time. The targets are resolved here first, exactly as without an
        executor. Each row keeps its own random stream (``SeedSequence(seed, spawn_key=(i,))``
        for row ``i`` of the batch). The Shapley explainers and SPEX play one game per row, in the
        same chunks whatever the split, so their values (and ``model_calls``) are bitwise those of
        the serial call for a deterministic model. The gradient explainers and occlusion batch the
        rows together: in parts a row is computed in batches of another composition, which is
        exact in arithmetic but may differ in the last bit where the model's matrix products
        depend on the batch (BLAS kernels do, about 1e-7 relative in float32; ``batch_size=1``
        makes every pass one row, and these explainers bitwise equal too); work shared by the rows of a
        call (integrated gradients' one baseline pass) is done once per part. On a worker the
        explainer evaluates its rows' games itself (its own ``executor=`` is for the coalitions
        of one row and is not used there). The explainer is pickled for process and cluster
        executors (a torch module pickles; a lambda model needs cloudpickle, which Ray, Dask and
        loky use; threads pickle nothing).

        ``first_row``: the index of ``x``'s first row in the whole data set, for the random streams
        only: row ``i`` of ``x`` draws from the stream of row ``first_row + i``. Explaining a data
        set in pieces of your own (``explain(X[:3])`` and ``explain(X[3:], first_row=3)``, a Spark
        partition with its offset) then gives bitwise the values of ``explain(X)``.

        Seeds: row-split and parallel calls equal the serial call for an int seed. A numpy
        Generator gives one root per call (its stream advances once per call), so the parts of one
        parallel call agree with each other, but two calls draw two roots; None draws fresh entropy
        per call (row-split equality needs an int seed).
        """
        part = kwargs.pop("_part", None)  # set by _explain_part on a worker (see _rows_in_parts)
        if kwargs:
            self._check_explain_kwargs(kwargs)
        start = time.perf_counter()
        calls_before = self.model.calls
        if part is None:
            executor = check_executor(executor, "executor", rows=True)
            first_row = check_int(first_row, "first_row", low=0)
        columns = getattr(x, "columns", None)  # read before x becomes a tensor
        xt = self.model.to_tensor(x)
        data = to_numpy(xt)
        input_shape = tuple(data.shape[1:])
        feature_names = self._feature_names(feature_names, columns, input_shape)
        given_kwargs = dict(kwargs)  # before a batch-shaped baseline is repeated for (n, k) targets
        per_sample = None
        if target is not None and not isinstance(target, (int, np.integer)):
            t = as_numpy(target, "target")
            if t.ndim == 2:
                if t.shape[0] != xt.shape[0] or t.shape[1] < 1:
                    raise ValueError(
                        f"target with several targets per sample must have shape (n, k) = "
                        f"({xt.shape[0]}, k >= 1); got shape {t.shape}"
                    )
                per_sample = t.shape[1]
                # Each (sample, target) pair becomes a row: the explainers see a plain batch, and a
                # batch-shaped baseline (given here or to the constructor) is repeated like x.
                if "baseline" in inspect.signature(self._attribute).parameters:
                    given = kwargs.get("baseline")
                    if given is None:
                        given = getattr(self, "baseline", None)
                    if given is not None:
                        kwargs["baseline"] = _repeat_rows(resolve_baseline(given, xt), per_sample)
                xt = _repeat_rows(xt, per_sample)
                target = t.reshape(-1)
        # Before any model call: the players of this call (groups=) and the refusal of a plan that
        # cannot fit (an ungrouped black-box method on a large image).
        self._prepare_call(data, int(xt.shape[0]), part, first_row, per_sample or 1)
        if part is not None:
            # Targets (and the outputs that picked them) were resolved by the caller.
            if isinstance(xt, np.ndarray):
                target_t = np.asarray(target).reshape(-1).astype(np.int64)
                outputs = None if part.outputs is None else to_numpy(part.outputs)
            else:
                target_t = torch.as_tensor(np.asarray(target).reshape(-1), dtype=torch.long).to(self.model.device)
                outputs = None if part.outputs is None else torch.as_tensor(part.outputs).to(self.model.device)
        elif target is None and not self.uses_target:
            outputs = None  # one row checks the input; no pass over the batch for unused classes
            target_t = self.model.resolve_target(0, xt, self.model.predict(xt[:1]))
        elif target is None:
            outputs = self.model.predict(xt)
            target_t = self.model.resolve_target(None, xt, outputs)
        elif self.target_in_pass and executor is None:
            # The explainer's own passes check the upper bound (Model.pick); the rest here. (A
            # row-parallel call checks here, by one row: an error of its own, not a worker's.)
            outputs = None
            target_t = self.model.resolve_target(target, xt, in_pass=True)
        else:
            # One row suffices to check the input shape and the number of outputs; the one target
            # resolver (featurelens._validation.resolve_target) checks the values.
            outputs = None
            target_t = self.model.resolve_target(target, xt, self.model.predict(xt[:1]))
        # The random streams of this call: row i of x (of the expanded batch for (n, k) targets)
        # draws from SeedSequence(root, spawn_key=(row_start + i,)).
        self._stream_root = part.root if part is not None else self._new_stream_root()
        self._row_start = (first_row if part is None else part.start) * (per_sample or 1)
        target_np = to_numpy(target_t)
        if executor is not None and part is None:
            rows_target = target_np if per_sample is None else target_np.reshape(-1, per_sample)
            values, extra, arrays = self._rows_in_parts(executor, data, rows_target, outputs, given_kwargs, first_row)
        else:
            with self.model.evaluating():  # once for the whole call, not once per chunk
                values, extra = self._attribute(xt, target_t, outputs=outputs, **kwargs)
            values = to_numpy(values)
            if per_sample is not None:
                values = np.asarray(values).reshape(-1, per_sample, *np.shape(values)[1:])
            arrays = {}
            extra = dict(extra)
            for name, array in extra.pop("arrays", {}).items():
                array = to_numpy(array)
                if per_sample is not None:
                    array = array.reshape(-1, per_sample, *array.shape[1:])
                arrays[name] = array
            if isinstance(self._sample_groups, list) and self._sample_groups:
                # Per-image players: each sample's label map, shaped like its values.
                maps = np.stack(self._sample_groups)
                if per_sample is not None:
                    maps = np.repeat(maps[:, None], per_sample, axis=1)
                arrays.setdefault("groups", maps)
        if per_sample is not None:
            target_np = target_np.reshape(-1, per_sample)
        params = dict(self.params())
        params.update(extra)
        if self._uses_baseline() and given_kwargs.get("baseline") is not None:
            params["baseline"] = baseline_record(given_kwargs["baseline"], self.default_baseline)
        categories = self.model.categories
        if categories:  # e.data holds codes for these columns: code k is categories[column][k]
            params["categories"] = categories
        values = np.asarray(values)
        base_values = None
        if extra.get("base_values") is not None:  # kept in params too, where it has always been
            base_values = np.asarray(extra["base_values"], dtype=np.float64).reshape(target_np.shape)
        group_values, groups = self._group_values(values, input_shape, group_names)
        return Explanation(
            values=values,
            method=self.name,
            params=params,
            target=target_np,
            model_calls=self.model.calls - calls_before,
            seconds=time.perf_counter() - start,
            extra=arrays,
            # feature_names name the elements of one input: a layer's attributions (values shaped
            # like the layer's output, not like the input) get none
            feature_names=feature_names if values.shape[1 if per_sample is None else 2:] == input_shape else None,
            data=data,
            base_values=base_values,
            output=self.model.output,
            group_values=group_values,
            groups=groups,
        )

    def _check_explain_kwargs(self, kwargs: dict) -> None:
        """Refuse keyword arguments of :meth:`explain` that this explainer's ``_attribute`` does not
        take (a TypeError naming them and what it takes, not Python's from deep inside)."""
        params = inspect.signature(self._attribute).parameters
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            return
        own = [p for p in params if p not in ("x", "target", "outputs")]
        unknown = [k for k in kwargs if k not in own]
        if not unknown:
            return
        takes = ", ".join(["target", "feature_names", "group_names", "executor", "first_row"] + own)
        hint = ""
        if "output" in unknown:
            hint = (f"; output= (the units explained) belongs to the explainer, not to one call: "
                    f"fl.explainer({self.name!r}, model, output=...)")
        elif any(k in inspect.signature(type(self).__init__).parameters for k in unknown):
            hint = "; constructor parameters go to fl.explainer(name, model, ...)"
        raise TypeError(f"explainer {self.name!r}: explain() got unknown keyword argument(s) "
                        f"{', '.join(unknown)}; it takes {takes}{hint}")

    # -- random streams ---------------------------------------------------------------------
    #: The root of the current call's random streams and the batch index of the first row the
    #: current ``_attribute`` sees (nonzero on a worker explaining a later part of the rows).
    _stream_root: int | None = None
    _row_start: int = 0

    def _new_stream_root(self) -> int | None:
        """The root of one call's per-row random streams (:func:`featurelens._random.root_seed`
        of ``self.seed``), or None for an explainer without a seed."""
        if not hasattr(self, "seed"):
            return None
        return root_seed(self.seed)

    def seed_params(self) -> dict:
        """The explainer's seed as every seeded explainer records it in ``Explanation.params``
        (:func:`featurelens._random.seed_record`): ``{"seed": s}`` (the int, None or
        ``"generator"``), plus ``"seed_root"``, the int root of the last call's streams, for a
        Generator or None (``seed=params["seed_root"]`` repeats that call)."""
        return seed_record(self.seed, self._stream_root)

    def row_rng(self, i: int) -> np.random.Generator:
        """The numpy Generator of row ``i`` of the batch ``_attribute`` sees: the stream
        ``SeedSequence(root, spawn_key=(i_global,))`` of that row's index in the whole call, so a
        row draws the same numbers whether it is explained alone, in a part or with the rest."""
        return row_rng(self._stream_root, self._row_start + int(i))

    def row_seed_sequence(self, i: int) -> np.random.SeedSequence:
        """The seed sequence of row ``i`` (see :meth:`row_rng`)."""
        return row_seed_sequence(self._stream_root, self._row_start + int(i))

    # -- row-parallel explain ---------------------------------------------------------------
    #: Extra-param keys that hold one entry per explained row (of the expanded batch for (n, k)
    #: targets): concatenated when the rows are explained in parts (``explain(x, executor=...)``).
    row_params: frozenset = frozenset({"base_values"})
    #: Extra-param keys reduced over the parts by a function of the parts' values (``max`` ...).
    param_reductions: dict = {}

    def _worker_copy(self) -> "Explainer":
        """A shallow copy that explains one part of the rows: its own Model counter (a copy of the
        Model with ``calls = 0`` and no parent; the caller adds the parts' model calls), no
        executor of its own (a worker evaluates its rows' games itself: nesting a pool inside its
        own tasks can deadlock, and an executor does not pickle) and no progress bar."""
        ex = copy.copy(self)
        ex.model = self.model.detached()
        if getattr(ex, "executor", None) is not None:
            ex.executor = None
        if getattr(ex, "progress", None) is not None:
            ex.progress = False
        return ex

    def _rows_in_parts(self, executor, data: np.ndarray, target: np.ndarray, outputs, kwargs: dict,
                       first_row: int = 0):
        """Explain the rows of ``data`` in parts on ``executor``: ``(values, extra params, arrays)``
        as one serial ``_attribute`` call would give them (values and arrays already reshaped for
        (n, k) targets), with the parts' model calls added to this Model."""
        n = data.shape[0]
        n_workers = max(1, int(getattr(executor, "n_workers", 1)))
        per_worker = max(1, int(getattr(executor, "tasks_per_worker", 3)))
        bounds = [b for b in np.array_split(np.arange(n), min(n, n_workers * per_worker)) if b.size]
        outputs_cpu = None if outputs is None else to_numpy(outputs)
        items = []
        for b in bounds:
            lo, hi = int(b[0]), int(b[-1]) + 1
            part_kwargs = {k: _row_slice(v, n, data.ndim, lo, hi) for k, v in kwargs.items()}
            baseline = getattr(self, "baseline", None)
            if ("baseline" not in part_kwargs and _batch_shaped(baseline, n, data.ndim)
                    and "baseline" in inspect.signature(self._attribute).parameters):
                part_kwargs["baseline"] = _row_slice(baseline, n, data.ndim, lo, hi)
            items.append(_Part(start=first_row + lo, root=self._stream_root, x=data[lo:hi], target=target[lo:hi],
                               outputs=None if outputs_cpu is None else outputs_cpu[lo:hi], kwargs=part_kwargs))
        with self.model.evaluating():  # the module stays in eval mode while any worker runs
            parts = executor.map(_explain_part, items, shared=self._worker_copy())
        part_calls = sum(int(e.model_calls) for e in parts)
        self.model.count_calls(part_calls)
        values = np.concatenate([np.asarray(e.values) for e in parts])
        names = list(parts[0].extra)
        arrays = {name: np.concatenate([np.asarray(e.extra[name]) for e in parts]) for name in names}
        # The parts' extra params: what their explainer's params() lacks, or declares per row (an
        # extra param may override a constructor one, e.g. spex's per-row "decoder").
        own = set(self.params()) - set(self.row_params) - set(self.param_reductions)
        per_row = int(np.prod(target.shape[1:], dtype=np.int64))  # k targets per sample, or 1
        rows = [int(e.values.shape[0]) * per_row for e in parts]
        extra = self._merge_params([{k: v for k, v in e.params.items() if k not in own and k != "categories"}
                                    for e in parts], rows)
        return values, extra, arrays

    def _merge_params(self, parts: list, rows: list) -> dict:
        """The extra params of the whole call from those of its parts (``rows``: each part's rows):
        :attr:`row_params` concatenated, :attr:`param_reductions` reduced, the others equal in every
        part (else per-row lists are concatenated, and anything else is an error)."""
        merged = {}
        for key in parts[0]:
            values = [p.get(key) for p in parts]
            if key in self.param_reductions:
                merged[key] = self.param_reductions[key](values)
            elif key in self.row_params or not all(_same(values[0], v) for v in values[1:]):
                if not all(isinstance(v, (list, tuple)) and len(v) == r for v, r in zip(values, rows)):
                    raise RuntimeError(
                        f"explainer {self.name!r}: cannot join the parameter {key!r} of the parts of a "
                        f"row-parallel explain (not one entry per row, and not the same in every part); "
                        f"declare it in row_params or param_reductions"
                    )
                merged[key] = [item for v in values for item in v]
            else:
                merged[key] = values[0]
        return merged

    @staticmethod
    def _feature_names(given, columns, input_shape: tuple) -> list | None:
        """Names for the elements of one input: ``given``, else a DataFrame's columns, else None."""
        if given is None and columns is None:
            return None
        names = [str(c) for c in columns] if given is None else given
        if isinstance(names, (str, bytes)) or not hasattr(names, "__len__"):
            raise TypeError(f"feature_names must be a list of str, one per element of one input; got "
                            f"{type(names).__name__}")
        size = int(np.prod(input_shape))
        if len(names) != size:
            raise ValueError(f"feature_names must name each of the {size} elements of one input (shape "
                             f"{input_shape}); got {len(names)} names")
        return list(names)

    #: The players of the current call's samples, set by :meth:`_prepare_call` of explainers with
    #: ``groups=``: None, one int array shared by every row, or a list of one array per sample
    #: (per-image groupings, ``"slic"`` or a callable); unset: the ``groups`` attribute is read.
    _sample_groups = _UNSET

    #: The per-row extra params of a call with per-image groups (one entry per row, then).
    per_image_params: frozenset = frozenset({"n_players"})
    _row_repeat = 1
    _groups_first_row = None

    def _prepare_call(self, data: np.ndarray, n_rows: int, part, first_row: int, repeat: int) -> None:
        """Called by :meth:`explain` before any model call, with the samples ``data`` (numpy), the
        rows ``_attribute`` will see (``repeat`` per sample for ``(n, k)`` targets) and the part of a
        row-parallel call (or None): resolve per-call state and refuse plans that cannot fit.

        Explainers with a ``grouping`` (the resolved ``groups=``,
        ``featurelens.explainers._image_groups.resolve_groups``) get this call's players in
        ``_sample_groups``: None, one array shared by every row, or one array per sample
        (per-image groups, computed once per sample here; a part of a row-parallel call takes its
        rows' from the caller's)."""
        grouping = getattr(self, "grouping", None)
        if grouping is None:
            return
        self._row_repeat = int(repeat)
        inherited = self._sample_groups
        if part is not None and isinstance(inherited, list) and self._groups_first_row is not None:
            lo = int(part.start) - int(self._groups_first_row)
            self._sample_groups = inherited[lo : lo + data.shape[0]]
        else:
            self._sample_groups = grouping.labels(data)
            self._groups_first_row = first_row
        if isinstance(self._sample_groups, list):
            self.row_params = type(self).row_params | self.per_image_params  # one entry per row
        else:
            self.__dict__.pop("row_params", None)

    def _group_values(self, values: np.ndarray, input_shape: tuple, group_names):
        """``(group_values, groups)``: one value per group (read at each group's first element:
        explainers with ``groups`` give every element of a group the group's value) and the group
        labels or ``group_names``; ``(None, None)`` without groups. Per-image groups (one label
        array per sample): ``group_values`` has one column per label ``0..G-1`` of the sample with
        the most players, NaN where a sample has fewer."""
        groups = self._sample_groups if self._sample_groups is not _UNSET else getattr(self, "groups", None)
        if isinstance(groups, list):
            if group_names is not None:
                raise ValueError("group_names cannot name per-image groups (groups='slic' or a callable give every "
                                 "image its own players); got group_names with per-image groups")
            lead = values.ndim - len(input_shape)
            flat = values.reshape(*values.shape[:lead], -1)
            n_groups = max(int(g.max()) + 1 for g in groups)
            out = np.full((*values.shape[:lead], n_groups), np.nan)
            for i, labels in enumerate(groups):
                found, first = np.unique(labels.reshape(-1), return_index=True)
                out[i, ..., found] = flat[i, ..., first]
            return out, list(range(n_groups))
        if groups is None:
            if group_names is not None:
                raise ValueError(f"group_names is for explainers built with groups=; {self.name!r} has none")
            return None, None
        labels, first = np.unique(np.asarray(groups).reshape(-1), return_index=True)
        lead = values.ndim - len(input_shape)
        group_values = values.reshape(*values.shape[:lead], -1)[..., first]
        if group_names is None:
            return group_values, [int(g) for g in labels]
        if isinstance(group_names, (str, bytes)) or not hasattr(group_names, "__len__"):
            raise TypeError(f"group_names must be a list of str, one per group; got {type(group_names).__name__}")
        if len(group_names) != len(labels):
            raise ValueError(f"group_names must name each of the {len(labels)} groups (labels "
                             f"{[int(g) for g in labels]}, in sorted order); got {len(group_names)} names")
        return group_values, list(group_names)

    def _attribute(self, x: torch.Tensor, target: torch.Tensor, outputs: torch.Tensor, **kwargs):
        raise NotImplementedError  # pragma: no cover - abstract

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"


# --------------------------------------------------------------------------------------------------
# row-parallel explain: what travels to a worker, and the task it runs


@dataclass
class _Part:
    """One part of a row-parallel explain call: the rows ``x`` starting at row ``start`` of the
    call (``first_row`` included), their resolved targets (``(m,)`` or ``(m, k)``), the outputs
    that picked them (or None), the call's random root and the explain keyword arguments with
    batch-shaped ones cut to the part."""

    start: int
    root: int | None
    x: np.ndarray
    target: np.ndarray
    outputs: torch.Tensor | None = None
    kwargs: dict = field(default_factory=dict)


def _explain_part(explainer: Explainer, part: _Part) -> Explanation:
    """The task of a row-parallel explain: explain one part of the rows on a copy of the shared
    explainer (its own Model counter and state, so parts never share mutable state on threads)."""
    return explainer._worker_copy().explain(part.x, target=part.target, _part=part, **part.kwargs)


def _repeat_rows(x, times: int):
    """Each row of ``x`` (an array or tensor) ``times`` times in a row (rows ``0,0,1,1,...``)."""
    if isinstance(x, np.ndarray):
        return np.repeat(x, times, axis=0)
    return x.repeat_interleave(times, dim=0)


def _batch_shaped(value, n: int, ndim: int) -> bool:
    """Whether ``value`` holds one entry per row of a batch of ``n > 1`` rows of ``ndim`` axes."""
    if value is None or n < 2 or isinstance(value, (str, bytes, int, float)):
        return False
    shape = tuple(getattr(value, "shape", None) or np.shape(value))
    return len(shape) == ndim and shape[0] == n


def _row_slice(value, n: int, ndim: int, lo: int, hi: int):
    """Rows ``lo:hi`` of a batch-shaped ``value`` (an array, tensor or Explanation-like object with
    ``.values``); anything else as it is."""
    if isinstance(getattr(value, "values", None), np.ndarray) and not hasattr(value, "shape"):
        value = value.values  # an Explanation used as a baseline
    if not _batch_shaped(value, n, ndim):
        return value
    if hasattr(value, "iloc"):
        return value.iloc[lo:hi]
    return value[lo:hi]


def _same(a, b) -> bool:
    """Whether two parameter values are equal (numbers, strings, lists, dicts or arrays)."""
    try:
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return bool(np.array_equal(a, b, equal_nan=True))
        if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
            return True  # NaN in both parts
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b
