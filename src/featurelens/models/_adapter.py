"""The one model adapter.

:class:`Model` wraps a ``torch.nn.Module``, a fitted scikit-learn estimator or Pipeline, or a plain
callable and gives every explainer, metric and
learning tool the same few operations: forward passes in bounded chunks, target selection, input
gradients (plain or over an expansion of the batch), and the bookkeeping of how many rows went
through the model. Torch models are put in eval mode for the duration of each call and their
previous train/eval flags restored afterwards; inputs are moved to the model's device, so the same
code runs on a GPU.

Estimators: classifiers are called through ``predict_proba`` (every class an output), classifiers
without it through ``decision_function``, regressors through ``predict``. An estimator fitted on a
DataFrame (it has ``feature_names_in_``) is called with a DataFrame that has those columns, so it
never warns about feature names and a ColumnTransformer may select columns by name. pandas is
imported only then. Non-numeric columns (strings, objects, pandas ``category``/``string``)
travel as integer codes into one list of values per column (:attr:`Model.categories`) and are
decoded to their values and dtype before the estimator is called, so a Pipeline's own encoder (a
OneHotEncoder) sees them as they were and each original column is one feature. Precision: numpy
callables and estimators are evaluated in float64 when the input is float64 (float32 otherwise);
torch modules in their parameters' dtype.

Rows per chunk: the Model owns the one rule (:meth:`Model.chunk_rows`). Consumers (explainers,
metrics, learning tools) only *read* it; they never change a Model they were handed. A consumer
asked for another ``batch_size`` gets a new Model around the same module or function
(:meth:`Model.with_batch_size`), whose rows are still counted by the original's ``calls``.

Fail safe: every forward pass checks the model's outputs (shape, numbers, finiteness), and a
forward pass that must carry gradients refuses outputs that do not depend on the input through
autograd (detached, computed under ``torch.no_grad``, or integers) with a clear error instead of
torch's.
"""

from __future__ import annotations

import contextlib
import copy
import math
import threading
from typing import Callable

import numpy as np
from featurelens._optional import is_tensor, is_torch_module, torch

from .._batching import check_batch_size, chunks, default_rows
from .._validation import (
    as_numpy,
    check_device,
    check_floating,
    check_option,
    check_target_range,
    numpy_to_tensor,
)
from .._validation import resolve_target as _resolve_target
from ._estimators import estimator_method
from ._factory_cache import factory_build, factory_key
from ._frames import FrameCodec, encode_frame, is_dataframe
from ._outputs import OUTPUTS, array_to_units, checked_array_outputs, checked_outputs, model_returns, to_units
from ._passes import BatchedPasses


#: The default units, "raw", told apart from an explicit ``output="raw"`` (``Model.output_asked``).
class _DefaultRaw(str):
    pass


_DEFAULT_RAW = _DefaultRaw("raw")


class Model(BatchedPasses):
    """Adapter around a ``torch.nn.Module`` or a callable.

    Parameters
    ----------
    model
        A ``torch.nn.Module`` (differentiable); a fitted scikit-learn estimator or Pipeline (or any
        object with the same methods, e.g. LightGBM's and XGBoost's scikit-learn wrappers), called
        through ``predict_proba`` (classifiers: every class an output), ``decision_function``
        (classifiers without ``predict_proba``) or ``predict`` (regressors); or a callable mapping
        a batch to outputs of shape ``(batch,)`` or ``(batch, classes)``. A callable receives numpy
        arrays unless ``accepts="torch"``, in which case it receives tensors and, if it is built
        from torch operations, is differentiable too. An estimator fitted on a DataFrame (and a
        bound method of one, ``estimator.predict_proba``) receives a DataFrame with the columns it
        was fitted on; its non-numeric columns (str, object, pandas ``category`` and ``string``
        dtypes) are coded as integers in ``x`` and decoded to their values before each call (see
        ``to_tensor``, ``categories``, ``decode``). Numpy callables and estimators are
        evaluated in float64 for float64 inputs (``dtype`` is None: the input's precision is kept),
        float32 otherwise.
    batch_size
        The most rows sent through the model in one call (memory bound for every expansion).
        None (default): chunks of at most 1024 rows (16384 for forward-only passes) and at most
        2**19 input elements (``featurelens._batching.default_rows``), so that large inputs go
        in smaller chunks. See ``chunk_rows``, the one rule every consumer reads.
    device
        Where inputs go. Default: the device of the module's first parameter (CPU otherwise).
        A device that is not available here (``"cuda"`` without CUDA) is refused.
    accepts
        For a callable: ``"numpy"`` (default) or ``"torch"``. Ignored for modules and estimators.
    output
        The units of the outputs every consumer sees (the one place outputs are turned into
        units; ``featurelens.explanation.OUTPUTS``):

        - ``"raw"`` (default): the model's outputs as they are (logits, scores, predict_proba).
        - ``"probability"``: for torch modules and callables, whose outputs are taken as logits,
          the softmax over the outputs (a single-output model: the sigmoid of its one output,
          the probability of the positive class); for estimators called through ``predict_proba``
          its probabilities as they are (``predict_log_proba``: their exponential); for
          classifiers called through ``decision_function`` the softmax (sigmoid) of the margins,
          exact for logistic models and uncalibrated for margin classifiers such as SVC.
        - ``"log_odds"``: ``log(p / (1 - p))`` of those probabilities. From logits it is computed
          exactly and stably as ``z_k - logsumexp_{j != k} z_j`` (a single output: ``z`` itself),
          no clipping; from probabilities as ``log(p) - log1p(-p)`` with ``p`` clipped to
          ``[eps, 1 - eps]`` (``eps`` the machine epsilon of the output dtype: log-odds within
          about +-36.0 in float64, +-15.9 in float32), so that 0 and 1 give finite values.

        Gradients flow through the transform (the transforms are torch operations). Regressors
        (estimators called through ``predict``) have no probabilities: only ``"raw"``.
        ``with_output`` gives a Model in other units around the same function.
    """

    def __init__(
        self,
        model,
        batch_size: int | None = None,
        device: str | torch.device | None = None,
        accepts: str = "numpy",
        output: str = _DEFAULT_RAW,
    ):
        if isinstance(model, Model):
            raise TypeError("model is already a featurelens Model; pass it directly instead of wrapping it")
        accepts = check_option(accepts, "accepts", ("numpy", "torch"))
        estimator, method = estimator_method(model)
        if estimator is None and not (is_torch_module(model) or callable(model)):
            raise TypeError(
                "model must be a torch.nn.Module, a fitted scikit-learn estimator or Pipeline (with "
                "predict_proba or predict), or a callable mapping a batch to outputs such as "
                f"estimator.predict_proba; got {type(model).__name__}, which is none of these"
            )
        self.module = model if is_torch_module(model) else None
        #: The scikit-learn-style estimator (or the owner of a bound ``predict*`` method), else None.
        self.estimator = estimator
        self.function = method if method is not None else model
        self.accepts = "torch" if self.module is not None else ("numpy" if estimator is not None else accepts)
        names = getattr(estimator, "feature_names_in_", None) if estimator is not None else None
        #: The column names the estimator was fitted on (a DataFrame is built with them), else None.
        self.feature_names = None if names is None else tuple(str(n) for n in names)
        # DataFrame columns <-> float64 (to_tensor, forward): integer dtypes, category codes. Shared
        # by the Models derived from this one, so x, the background and later calls share codes.
        self._frames = FrameCodec()
        self.batch_size = check_batch_size(batch_size)
        self.auto_batch = batch_size is None  # chunk rows also bounded by input size (chunk_rows)
        param = next(iter(self.module.parameters()), None) if self.module is not None else None
        if device is None and param is not None:
            device = param.device
        # A numpy model without a device never needs torch: the device is resolved (torch's CPU
        # device) only when a consumer moves tensors for it (the ``device`` property).
        self._device = None if device is None else check_device(device)
        #: Whether consumers get numpy arrays from this Model (``to_tensor``, ``predict``,
        #: ``resolve_target``): set by :meth:`with_numpy` for numpy callables and estimators.
        self.numpy_mode = False
        if self.accepts == "numpy":
            # None: the input's precision is kept (float64 stays float64, other floats float32).
            self.dtype = None
        else:
            self.dtype = param.dtype if param is not None and param.is_floating_point() else torch.float32
        #: What the function returns: "probability" (predict_proba), "log_probability"
        #: (predict_log_proba), "margin" (decision_function), "regression" (a regressor's
        #: predict) or "logits" (torch modules and callables).
        self.returns = model_returns(estimator, method)
        #: Whether the units were asked for (``output=`` given) rather than the default "raw": an
        #: explainer whose natural units differ (tree_shap of a booster's margin) tells them apart.
        self.output_asked = output is not _DEFAULT_RAW
        self.output = self._check_output(str(output))  # a plain str (pickles)
        self.calls = 0  # rows sent through the model since construction
        self.executor = None  # forward passes of expanded_forward on an executor (with_executor)
        self._eval_depth = 0  # nesting of evaluating() contexts
        self._eval_flags = None  # the submodules' train flags to restore when the outermost context ends
        self._parent: Model | None = None  # the Model this one was derived from (with_batch_size)
        self._factory = None  # (factory, key, model_kwargs) of a Model.from_factory
        self.allow_nan = False  # NaN inputs refused unless a consumer routes them (with_missing_values)

    @property
    def device(self):
        """The torch device inputs go to (torch's CPU device unless the module or ``device=``
        says otherwise; reading it imports torch)."""
        if self._device is None:
            self._device = torch.device("cpu")
        return self._device

    @device.setter
    def device(self, value):
        self._device = value

    # -- construction helpers ---------------------------------------------------------------
    @classmethod
    def wrap(cls, model, batch_size: int | None = None, output: str | None = None) -> "Model":
        """The Model a consumer works with.

        A Model is never changed: with ``batch_size=None`` (or the Model's own batch size) and
        ``output=None`` (or the Model's own units) it is returned as it is; otherwise a new Model
        around the same module or function (same device and dtype) is returned
        (:meth:`with_batch_size`, ``with_output``), so explainers that share the Model keep
        their settings. Anything else gets a new Model (``output=None``: ``"raw"``).
        """
        if isinstance(model, Model):
            derived = model if batch_size is None else model.with_batch_size(batch_size)
            return derived if output is None else derived.with_output(output)
        return cls(model, batch_size=batch_size, output=_DEFAULT_RAW if output is None else output)

    @classmethod
    def from_factory(cls, factory: Callable, key: str | None = None, **model_kwargs) -> "Model":
        """A Model around what ``factory()`` builds (a torch module, an estimator or a callable),
        built at most once per process and key, that pickles as the recipe instead of the weights.

        ``factory`` is a top-level function (or a ``functools.partial`` of one, or a class) that
        takes no arguments and returns the model, e.g. one that loads a checkpoint. The built
        object is cached in this process under ``key`` (default: the factory's module and
        qualified name, with a partial's arguments), so ``from_factory`` with the same key
        returns a Model around the same object. Pickling such a Model (a game holding it, sent to
        a :mod:`featurelens.parallel` worker) sends only ``(factory, key, model_kwargs)`` and the
        Model's settings (batch size, output units, device, category codes), never the weights:
        a worker process builds the model on first use and reuses it for every later task and
        call. ``model_kwargs`` go to :class:`Model` (``batch_size``, ``device``, ``accepts``,
        ``output``). The factory must be importable on the workers (the same package installed
        there), and should build the same model everywhere (e.g. load fixed weights, seed).
        A lambda or a local function has no name that identifies it: give ``key``.
        """
        if not callable(factory):
            raise TypeError(
                "factory must be a callable taking no arguments that returns the model (a top-level "
                f"function or a functools.partial); got {type(factory).__name__}"
            )
        if key is None:
            key = factory_key(factory)
        elif not isinstance(key, str) or not key:
            raise TypeError(f"key must be a non-empty string naming the model, or None; got {key!r}")
        built = factory_build(factory, key)
        if isinstance(built, Model):
            raise TypeError(
                f"factory {key!r} returned a featurelens Model; it must return the model itself (a torch "
                "module, an estimator or a callable), and model_kwargs set the Model's options"
            )
        model = cls(built, **model_kwargs)
        model._factory = (factory, key, dict(model_kwargs))
        return model

    @property
    def factory_key(self) -> str | None:
        """The cache key of a :meth:`from_factory` Model, else None."""
        return None if self._factory is None else self._factory[1]

    # -- pickling ---------------------------------------------------------------------------
    def __copy__(self):
        # A plain shallow copy (with_batch_size, with_output), not the pickling path below.
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_eval_depth"] = 0  # a copy made inside evaluating() starts outside it
        state["_eval_flags"] = None
        state["executor"] = None  # a Model sent to a worker travels without its executor
        if state.get("_factory") is not None:
            # The recipe travels instead of the weights; __setstate__ rebuilds (or finds) the model.
            state["module"] = state["estimator"] = state["function"] = None
        return state

    def __setstate__(self, state):
        state.setdefault("_eval_flags", None)
        state.setdefault("_factory", None)
        self.__dict__.update(state)
        if self._factory is not None:
            factory, key, _ = self._factory
            built = factory_build(factory, key)
            estimator, method = estimator_method(built)
            self.module = built if is_torch_module(built) else None
            self.estimator = estimator
            self.function = method if method is not None else built

    def _check_output(self, output) -> str:
        output = check_option(output, "output", OUTPUTS)
        if output != "raw" and self.returns == "regression":
            raise ValueError(
                f"output={output!r} needs a classifier, and model {self.display_name()} is a regressor "
                "(called through predict, no probabilities); use output='raw'"
            )
        return output

    def with_output(self, output: str) -> "Model":
        """This Model in other units (``"raw"``, ``"probability"`` or ``"log_odds"``, see the class
        docstring): ``self`` when it already has them, else a new Model sharing the module or
        function, device, dtype, batch size and input kind, whose ``calls`` also count in this
        Model's ``calls`` (like :meth:`with_batch_size`)."""
        output = self._check_output(output)
        if output == self.output:
            return self
        return self._derive(output=output, output_asked=True)

    def with_numpy(self) -> "Model":
        """This Model exchanging numpy arrays with its consumer, for the consumers that work on
        numpy alone (TreeSHAP, the games and approximators, occlusion): ``to_tensor`` returns a
        validated numpy array, ``predict`` and ``forward`` numpy outputs, ``resolve_target`` an
        int64 array. Torch is never imported for it. ``self`` for a torch module or a torch
        callable (they exchange tensors) and for a Model already in numpy mode; else a derived
        Model counting its calls in this Model's too. The numbers are those of the tensor path:
        a numpy model is called on the same numpy rows either way.

        Returns
        -------
        Model
            The Model in numpy mode (or ``self``).
        """
        if self.accepts == "torch" or self.numpy_mode:
            return self
        return self._derive(numpy_mode=True)

    def with_tensors(self) -> "Model":
        """This Model exchanging tensors with its consumer (the default): ``self`` unless it is in
        numpy mode (:meth:`with_numpy`), else a derived Model in tensor mode counting its calls in
        this Model's too. For the consumers that compute in torch (gradients, the Captum-family
        perturbations) when they are handed a Model in numpy mode.

        Returns
        -------
        Model
            The Model in tensor mode (or ``self``).
        """
        if not self.numpy_mode:
            return self
        return self._derive(numpy_mode=False)

    def with_missing_values(self) -> "Model":
        """This Model taking NaN in its inputs (missing values; inf is still refused), for a
        consumer that routes them exactly (TreeSHAP of trees that learned where missing values
        go): ``self`` when it already does, else a derived Model counting its calls in this
        Model's too."""
        if self.allow_nan:
            return self
        return self._derive(allow_nan=True)

    def with_batch_size(self, batch_size: int | None) -> "Model":
        """This Model with another batch size: ``self`` when it already has it, else a new Model
        sharing the module or function, device, dtype and input kind. The new Model counts its own
        ``calls`` (an explanation's ``model_calls``) and adds them to this Model's ``calls`` too.
        None means the automatic rule of ``chunk_rows``."""
        auto = batch_size is None
        batch_size = check_batch_size(batch_size)
        if auto == self.auto_batch and (auto or batch_size == self.batch_size):
            return self
        return self._derive(batch_size=batch_size, auto_batch=auto)

    def with_executor(self, executor) -> "Model":
        """This Model with an executor (:mod:`featurelens.parallel`) for the forward passes of
        :meth:`expanded_forward` (the perturbation metrics): ``self`` for None or the executor it
        already has, else a derived Model (its ``calls`` also count in this Model's). The chunks
        are built here in order, evaluated on the executor's workers a window at a time and
        reduced here, so the values equal the serial path's."""
        if executor is None or executor is getattr(self, "executor", None):
            return self
        if not callable(getattr(executor, "map", None)):
            raise TypeError(f"executor must be a featurelens.parallel executor (with a map method); "
                            f"got {type(executor).__name__}")
        return self._derive(executor=executor)

    def _derive(self, **changes) -> "Model":
        """A shallow copy of this Model with ``changes`` set: its own call count (added to this
        Model's through ``_parent``) and its own eval-mode state (depth and saved flags), so that
        a derived Model's ``evaluating()`` never restores flags this Model saved. The changes are
        set last, so they may also cut the copy loose (``_parent=None``: the copy the workers of
        an executor evaluate, whose rows are counted here)."""
        derived = copy.copy(self)
        derived.calls = 0
        derived._eval_depth = 0
        derived._eval_flags = None
        derived._parent = self
        for name, value in changes.items():
            setattr(derived, name, value)
        return derived

    def detached(self) -> "Model":
        """A shallow copy of this Model with its own call counter and eval-mode state, cut loose
        from this Model: its calls are not added here (the copy a worker evaluates a part of the
        rows with; the caller adds the parts' calls with :meth:`count_calls`).

        Returns
        -------
        Model
            The copy, sharing the module or function, device, dtype, output units and batch size.

        Examples
        --------
        >>> part = model.detached()
        >>> part.calls, part is model
        (0, False)
        """
        return self._derive(_parent=None)

    def count_calls(self, rows: int) -> None:
        """Add ``rows`` model evaluations to :attr:`calls` of this Model and of every Model it was
        derived from (``with_output``, ``with_batch_size``, ...). Passes that evaluate the model
        outside :meth:`predict` / :meth:`forward` (a copy on a worker, a merged chunk) count here."""
        model = self
        while model is not None:
            model.calls += rows
            model = model._parent

    @property
    def differentiable(self) -> bool:
        return self.accepts == "torch"

    def require_gradients(self, method: str) -> None:
        if not self.differentiable:
            raise TypeError(
                f"{method} needs gradients, so model must be a torch.nn.Module or a torch callable "
                f"(Model(fn, accepts='torch')); got "
                + (f"a scikit-learn-style estimator ({self.display_name()})" if self.estimator is not None
                   else f"a numpy callable ({type(self.function).__name__})")
                + ". Use a black-box explainer instead (kernel_shap, permutation_shap, occlusion)"
                + (f"; columns {list(self._frames.categories)[:10]} are categorical, which gradients "
                   "cannot move through" if self._frames.categories else "")
            )

    # -- eval mode --------------------------------------------------------------------------
    @contextlib.contextmanager
    def evaluating(self):
        """Put the module in eval mode and restore every submodule's previous flag afterwards.

        Nested and concurrent contexts (an explainer's many chunked passes; the threads of a
        :class:`featurelens.parallel.ThreadExecutor`) share one: the first to enter sets eval mode
        and the last to leave restores the flags, so no thread runs a pass in training mode while
        another is still inside."""
        with _EVAL_LOCK:
            if self._eval_depth == 0 and self.module is not None:
                # Walking every submodule costs tens of microseconds: done once, by the outermost.
                # Only the submodules in training mode are switched (and switched back): a model
                # already in eval mode costs one walk (nn.Module attribute writes are slow).
                training = [m for m in self.module.modules() if m.training]
                if training:
                    self.module.eval()
                self._eval_flags = training
            self._eval_depth += 1
        try:
            yield
        finally:
            with _EVAL_LOCK:
                self._eval_depth -= 1
                if self._eval_depth == 0 and self._eval_flags is not None:
                    training, self._eval_flags = self._eval_flags, None
                    for m in training:
                        m.training = True

    # -- inputs -----------------------------------------------------------------------------
    def to_tensor(self, x, name: str = "x") -> torch.Tensor:
        """Validate a batch (numpy, torch or a pandas DataFrame) and return it as a tensor on the
        model's device, in the model's dtype (numpy callables and estimators: float64 inputs stay
        float64, other floats become float32).

        A DataFrame's numeric columns (floats, integers, booleans) become a float64 array. For an
        estimator fitted on a DataFrame its columns must be the fitted ones, in order; their dtypes
        are remembered, so integer columns reach the estimator as integers again.

        Non-numeric columns (object, str, bytes, bool-as-object, pandas ``category`` and
        ``string`` dtypes), for a Model around an estimator: each becomes integer codes (float64)
        into one list of values per column (``categories``), which grows as new values are
        seen (sorted among a frame's new values where they compare; a ``category`` column first
        brings its dtype's categories in order; missing values None/NaN/``pd.NA`` are categories of
        their own), so ``x``, the background and later calls share the codes. The forward pass
        decodes them to the original values and dtype before calling the estimator, so a Pipeline
        encodes them with its own encoder (a OneHotEncoder in a ColumnTransformer) and each
        original column stays one feature (one player). A value that is not a code (noise,
        gradients, interpolation, a mean) raises a ValueError naming the column; a fill value of 0
        (``baseline=0.0``) is code 0, the column's first category. Torch modules and
        plain callables refuse non-numeric columns, and any Model refuses other dtypes
        (datetimes, complex), naming the columns.
        """
        if self.numpy_mode:
            return self.to_array(x, name)
        if is_dataframe(x):
            x = encode_frame(self._frames, x, name, self.estimator, self.feature_names, self.differentiable)
        if is_tensor(x):
            check_floating(x, name, allow_nan=getattr(self, "allow_nan", False))
            t = x.detach()
        else:
            arr = as_numpy(x, name)
            check_floating(arr, name, allow_nan=getattr(self, "allow_nan", False))
            t = numpy_to_tensor(arr)
        if t.ndim < 2:
            raise ValueError(
                f"{name} must be a batch with the samples along the first axis, shape (n, ...); "
                f"got shape {tuple(t.shape)}. For one sample use {name}[None]"
            )
        if t.shape[0] == 0:
            raise ValueError(f"{name} is an empty batch (shape {tuple(t.shape)}); expected n >= 1 rows")
        dtype = self.dtype
        if dtype is None:
            dtype = torch.float64 if t.dtype == torch.float64 else torch.float32
        return t.to(device=self.device, dtype=dtype)

    def to_array(self, x, name: str = "x") -> np.ndarray:
        """Validate a batch as :meth:`to_tensor` does and return it as a numpy array (float64
        inputs stay float64, other floats become float32), never importing torch.

        Parameters
        ----------
        x
            A batch, samples first: numpy, a tensor or a pandas DataFrame.
        name
            The argument's name in error messages.

        Returns
        -------
        numpy.ndarray
            The validated rows (DataFrame columns encoded as :meth:`to_tensor` describes).
        """
        if is_dataframe(x):
            x = encode_frame(self._frames, x, name, self.estimator, self.feature_names, self.differentiable)
        arr = as_numpy(x, name)
        check_floating(arr, name, allow_nan=getattr(self, "allow_nan", False))
        if arr.ndim < 2:
            raise ValueError(
                f"{name} must be a batch with the samples along the first axis, shape (n, ...); "
                f"got shape {tuple(arr.shape)}. For one sample use {name}[None]"
            )
        if arr.shape[0] == 0:
            raise ValueError(f"{name} is an empty batch (shape {tuple(arr.shape)}); expected n >= 1 rows")
        dtype = np.float64 if arr.dtype == np.float64 else np.float32
        return arr.astype(dtype, copy=False)

    def _model_input(self, arr: np.ndarray):
        """What the numpy callable or estimator is called with: the array, or for an estimator
        fitted on a DataFrame a DataFrame with its columns (integer columns given as integers when
        every value in them is whole, categorical columns decoded to their values and dtype)."""
        if self.estimator is None:
            return arr
        return self._frames.to_model_input(arr.reshape(arr.shape[0], -1), self.feature_names)

    @property
    def categories(self) -> dict:
        """``{column: [values]}`` for each non-numeric DataFrame column this Model has encoded
        (``to_tensor``): code ``k`` of a column stands for ``values[k]``. Explanations of such
        a model hold these codes in ``Explanation.data``; ``decode`` turns rows back into the
        values. Empty for numeric data. A copy: the Model's own lists only grow."""
        return {c: list(codes.values) for c, codes in self._frames.categories.items()}

    def decode(self, data):
        """Rows of numbers and category codes (``Explanation.data``, or a tensor from
        ``to_tensor``), shape ``(n, d)``, as the estimator receives them: a DataFrame with the
        fitted columns, categorical columns holding their original values in their original dtype
        (the array itself for a torch module, a callable or an estimator fitted on an array)."""
        arr = as_numpy(data, "data")
        if arr.ndim != 2 or arr.dtype.kind not in "biuf":
            raise ValueError(f"data must be rows of numbers, shape (n, d); got shape {arr.shape}, dtype {arr.dtype}")
        return self._model_input(arr.astype(np.float64, copy=False))

    # -- forward ----------------------------------------------------------------------------
    def forward(self, x: torch.Tensor, count: bool = True) -> torch.Tensor:
        """One forward pass of at most batch_size validated rows, as a (rows, classes) tensor.

        ``count=False``: the rows are not added to ``calls`` (a game evaluated by an executor
        counts its rows in the calling process instead, :meth:`count_calls`).

        Errors the model raises on the input are re-raised as a ValueError naming x's shape.
        Outputs are checked: integer outputs become floats (they carry no gradient: refused when
        ``x`` requires one), outputs that should carry a gradient (``x.requires_grad`` with
        gradients enabled) and do not are refused, and NaN/inf outputs raise a ValueError (one
        cheap sum per chunk; the elementwise check runs only when that sum is not finite).
        """
        if count:
            self.count_calls(x.shape[0])
        if isinstance(x, np.ndarray):
            return self._forward_array(x)
        needs_grad = x.requires_grad and torch.is_grad_enabled()
        # Decoded before the call: a value that is not a category code raises its own ValueError.
        inputs = x if self.accepts == "torch" else self._model_input(x.detach().cpu().numpy())
        try:
            out = self.function(inputs)
        except (RuntimeError, ValueError) as err:
            raise ValueError(
                f"x has shape {tuple(x.shape)} (samples first), and the model failed on it: {err}"
            ) from err
        out = checked_outputs(out, x, needs_grad, self.dtype or x.dtype, self.display_name)
        if self.output != "raw":
            out = to_units(out, self.returns, self.output)
        return out

    def _forward_array(self, x: np.ndarray) -> np.ndarray:
        """The forward pass of a numpy callable or estimator on numpy rows (numpy mode)."""
        if self.accepts == "torch":
            raise TypeError(f"model {self.display_name()} takes tensors; got a numpy array (use to_tensor)")
        try:
            out = self.function(self._model_input(x))
        except (RuntimeError, ValueError) as err:
            raise ValueError(
                f"x has shape {tuple(x.shape)} (samples first), and the model failed on it: {err}"
            ) from err
        out = checked_array_outputs(out, x, self.display_name)
        if self.output != "raw":
            out = array_to_units(out, self.returns, self.output)
        return out

    def display_name(self) -> str:
        """How messages name the model: ``Estimator.method`` for an estimator, else the module's
        class name or the function's name."""
        if self.estimator is not None:
            return f"{type(self.estimator).__name__}.{getattr(self.function, '__name__', 'predict')}"
        return type(self.function).__name__ if self.module is not None else getattr(
            self.function, "__name__", type(self.function).__name__
        )

    def chunk_rows(self, x: torch.Tensor, batch_size: int | None = None, forward_only: bool = False) -> int:
        """THE rule for rows per chunk, for inputs shaped like ``x`` (every expansion, gradient
        pass, forward pass and accumulator reads it here; nothing else computes chunk sizes):

        1. ``batch_size`` when the caller passes one for this call;
        2. else the Model's ``batch_size`` when one was given at construction;
        3. else ``featurelens._batching.default_rows``: at most 1024 rows (16384 for
           ``forward_only`` passes, which keep no autograd graph) and at most 2**19 input elements
           per chunk, but at least one row (8 for ``forward_only`` passes).

        It never changes the Model."""
        if batch_size is not None:
            return check_batch_size(batch_size)
        if self.auto_batch:
            return default_rows(math.prod(x.shape[1:]), forward_only=forward_only)
        return self.batch_size

    def predict(self, x, batch_size: int | None = None, count: bool = True) -> torch.Tensor:
        """Outputs for a batch, computed in chunks without gradients, as a (n, classes) tensor.
        ``count=False``: not added to ``calls`` (see :meth:`forward`)."""
        x = x if is_tensor(x) or (self.numpy_mode and isinstance(x, np.ndarray)) else self.to_tensor(x)
        bs = self.chunk_rows(x, batch_size, forward_only=True)
        if isinstance(x, np.ndarray):
            parts = [self.forward(x[s], count=count) for s in chunks(x.shape[0], bs)]
            return parts[0] if len(parts) == 1 else np.concatenate(parts)
        with self.evaluating(), torch.no_grad():
            return torch.cat([self.forward(x[s], count=count) for s in chunks(x.shape[0], bs)])

    def n_outputs(self, x: torch.Tensor) -> int:
        return int(self.predict(x[:1]).shape[1])

    # -- targets ----------------------------------------------------------------------------
    def resolve_target(
        self, target, x: torch.Tensor, outputs: torch.Tensor | None = None, name: str = "target",
        in_pass: bool = False,
    ) -> torch.Tensor:
        """Return one target index per sample as a long tensor on the model's device.

        ``target`` is None (the predicted class, argmax of the outputs), an int (0-d arrays too),
        or one int per sample (list, numpy or torch); everything but None goes through
        :func:`featurelens._validation.resolve_target`. ``outputs`` (the model's outputs on ``x``,
        or on its first row) give the number of outputs; without them one row is evaluated, unless
        ``in_pass``: then no row is evaluated here and the upper bound is checked on the outputs of
        the caller's own passes (:meth:`pick`, which :meth:`gradient` and :meth:`expanded_gradient`
        use), with the same message. A one-row forward pass costs a tenth of a 32-row CNN pass.
        """
        n = x.shape[0]
        if isinstance(x, np.ndarray):  # numpy mode: int64 arrays
            if target is None:
                outputs = self.predict(x) if outputs is None else outputs
                return np.asarray(outputs).argmax(axis=1).astype(np.int64)
            n_out = None if in_pass and outputs is None else (
                self.n_outputs(x) if outputs is None else int(outputs.shape[1]))
            return _resolve_target(target, n, n_out, name)
        if target is None:
            if outputs is None:
                outputs = self.predict(x)
            return outputs.argmax(dim=1).to(torch.long)
        if in_pass and outputs is None:
            return torch.from_numpy(_resolve_target(target, n, None, name)).to(self.device)
        n_out = self.n_outputs(x) if outputs is None else int(outputs.shape[1])
        return torch.from_numpy(_resolve_target(target, n, n_out, name)).to(self.device)

    def pick(self, out: torch.Tensor, target: torch.Tensor, name: str = "target") -> torch.Tensor:
        """``out[i, target_i]`` as a ``(rows, 1)`` tensor (autograd flows through), the target
        indices checked against ``out``'s number of outputs first (a clear ValueError, not torch's
        index error; see :meth:`resolve_target` with ``in_pass``)."""
        check_target_range(target, int(out.shape[1]), name)
        if isinstance(out, np.ndarray):
            return out[np.arange(out.shape[0]), np.asarray(target)][:, None]
        return out.gather(1, target[:, None])

    def __repr__(self) -> str:
        kind = self.display_name() if self.estimator is not None else type(self.function).__name__
        bs = "auto" if self.auto_batch else self.batch_size
        units = "" if self.output == "raw" else f", output={self.output!r}"
        where = "numpy" if self._device is None else f"device={self._device}"
        return f"Model({kind}, {where}, batch_size={bs}{units})"


#: Guards the eval-mode bookkeeping of :meth:`Model.evaluating` across threads.
_EVAL_LOCK = threading.Lock()
