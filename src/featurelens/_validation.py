"""THE home of parameter checks: ints, floats, options, flags, seeds, arrays, targets and baselines.

Every explainer, metric, selector and learning tool calls these instead of writing its own check,
so that one argument is checked the same way everywhere (in the spirit of scikit-learn's
``utils/_param_validation.py``). Every error names the argument, what was given and what was
expected: a ``TypeError`` when the kind of value is wrong (a string where a number belongs), a
``ValueError`` when the kind is right and the value is not (a negative count, an unknown option).

Seeds, random streams and how a seed is recorded live in :mod:`featurelens._random`.

Budgets (the bound on the work and the memory an argument asks for, ``check_budget``,
``MAX_EVALUATIONS``) live in :mod:`featurelens._budgets`.

Targets and baselines (the model is the reference: Captum's ``_select_targets`` and
``_format_baseline``): :func:`resolve_target` turns None / an int / one int per sample into one
index per sample; :func:`resolve_baseline` turns None / a scalar / one input / a batch into a
tensor shaped like the batch. What None means is decided in one place, :func:`default_baseline`
(the named policies :data:`BASELINE_DEFAULTS`; each explainer declares its own as
``Explainer.default_baseline``), and a baseline is recorded one way, :func:`baseline_record`.
"""

from __future__ import annotations

import difflib
import math
import numbers
from typing import Iterable

import numpy as np
from featurelens._optional import is_tensor, torch

__all__ = [
    "as_numpy",
    "numpy_to_tensor",
    "check_floating",
    "check_int",
    "check_float",
    "check_bool",
    "check_option",
    "check_optional_bool",
    "check_device",
    "check_executor",
    "executor_param",
    "resolve_target",
    "BASELINE_DEFAULTS",
    "default_baseline",
    "resolve_baseline",
    "baseline_record",
    "relative_scale",
    "check_labels",
    "check_token_ids",
]


# --------------------------------------------------------------------------------------------------
# arrays


def as_numpy(a, name: str) -> np.ndarray:
    """Turn a numpy array, torch tensor, array-like or Explanation into a numpy array."""
    # torch.Tensor has a ``values`` method (sparse tensors), so check for tensors first.
    if is_tensor(a):
        return a.detach().cpu().numpy()
    if not callable(getattr(a, "values", None)):
        a = getattr(a, "values", a)  # an Explanation or a pandas object
    if is_tensor(a):
        return a.detach().cpu().numpy()
    try:
        return np.asarray(a)
    except Exception as err:  # ragged lists and other exotic inputs
        raise TypeError(f"{name} must be array-like (numpy or torch); got {type(a).__name__} ({err})") from err


def numpy_to_tensor(arr: np.ndarray, dtype=None) -> torch.Tensor:
    """A C-contiguous tensor sharing ``arr``'s memory where that is safe: a read-only array (pandas'
    copy-on-write frames, ``np.broadcast_to`` views, memory maps) is copied first, since torch
    cannot hold read-only memory (it warns and writes would be undefined)."""
    arr = np.ascontiguousarray(arr, dtype=dtype)
    return torch.from_numpy(arr if arr.flags.writeable else arr.copy())


def check_floating(a: np.ndarray | torch.Tensor, name: str, allow_nan: bool = False) -> None:
    """Refuse non-floating dtypes and NaN/inf values (``allow_nan``: inf only, NaN being a
    legitimate missing value for the models that route it, e.g. tree ensembles)."""
    if is_tensor(a):
        if not torch.is_floating_point(a):
            raise TypeError(
                f"{name} must be a floating-point array; got dtype {a.dtype}. "
                f"Convert it first, e.g. {name}.float()"
            )
        # A finite sum proves every element finite (NaN and inf propagate) in one cheap pass; only
        # a sum that overflowed needs the elementwise check.
        finite = bool(torch.isfinite(a.sum())) or bool(torch.isfinite(a).all())
    else:
        if a.dtype.kind != "f":
            raise TypeError(
                f"{name} must be a floating-point array; got dtype {a.dtype}. "
                f"Convert it first, e.g. {name}.astype(np.float32)"
            )
        with np.errstate(over="ignore", invalid="ignore"):
            finite = bool(np.isfinite(a.sum())) or bool(np.isfinite(a).all())
    if not finite and allow_nan:
        has_inf = bool(torch.isinf(a).any()) if is_tensor(a) else bool(np.isinf(a).any())
        if has_inf:
            raise ValueError(f"{name} contains inf values; expected finite numbers or NaN (missing)")
        return
    if not finite:
        raise ValueError(f"{name} contains NaN or inf values; expected finite numbers")


# --------------------------------------------------------------------------------------------------
# scalars


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _bounds_text(low, high, low_inclusive=True, high_inclusive=True) -> str:
    parts = []
    if low is not None:
        parts.append(f"{'>=' if low_inclusive else '>'} {low}")
    if high is not None:
        parts.append(f"{'<=' if high_inclusive else '<'} {high}")
    return " and ".join(parts)


def check_int(value, name: str, *, low: int | None = None, high: int | None = None, allow_none: bool = False):
    """An int (numpy integers too, never a bool or a float) in ``[low, high]``; None when
    ``allow_none``. Returns a plain ``int``."""
    if value is None and allow_none:
        return None
    bounds = _bounds_text(low, high)
    expected = f"an int{' ' + bounds if bounds else ''}{' or None' if allow_none else ''}"
    if not _is_int(value):
        raise TypeError(f"{name} must be {expected}; got {value!r} ({type(value).__name__})")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be {expected}; got {value}")
    return value


def check_float(
    value,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
    allow_none: bool = False,
):
    """A finite real number (ints and numpy scalars too, never a bool) within the bounds; None when
    ``allow_none``. Returns a plain ``float``."""
    if value is None and allow_none:
        return None
    bounds = _bounds_text(low, high, low_inclusive, high_inclusive)
    expected = f"a finite number{' ' + bounds if bounds else ''}{' or None' if allow_none else ''}"
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be {expected}; got {value!r} ({type(value).__name__})")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be {expected}; got {value}")
    if low is not None and (value < low or (value == low and not low_inclusive)):
        raise ValueError(f"{name} must be {expected}; got {value}")
    if high is not None and (value > high or (value == high and not high_inclusive)):
        raise ValueError(f"{name} must be {expected}; got {value}")
    return value


def check_bool(value, name: str) -> bool:
    """True or False (numpy bools too); anything else is a TypeError naming ``name``.

    The one parser of flags, trust flags included (``load_model(trust=...)``): 0/1, None and
    strings are refused, never read by their truth value, since ``"false"``, ``"no"`` and ``"0"``
    are true in Python and would switch on what they ask to switch off.

    Parameters
    ----------
    value : object
        The flag as given.
    name : str
        The argument's name, for the error.

    Returns
    -------
    bool
        ``value`` as a plain ``bool``.

    Raises
    ------
    TypeError
        ``value`` is not a bool, naming ``name``, the value given and its type.
    """
    if not isinstance(value, (bool, np.bool_)):
        hint = ""
        if isinstance(value, (str, bytes)):
            hint = (f"; a string is not a flag (any non-empty string, {'false'!r} included, is true in "
                    f"Python): pass {name}=True or {name}=False")
        elif value is None:
            hint = f"; None is not read as False here: pass {name}=False"
        raise TypeError(f"{name} must be True or False; got {value!r} ({type(value).__name__}){hint}")
    return bool(value)


def check_optional_bool(value, name: str):
    """True, False or None (the automatic choice, e.g. a progress bar only on a terminal)."""
    if value is None:
        return None
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True, False or None; got {value!r} ({type(value).__name__})")
    return bool(value)


def progress_bar(total: int, progress: bool | None, desc: str):
    """A tqdm bar of ``total`` steps when ``progress`` is True (None: only when stderr is a
    terminal), else None; the caller updates and closes it."""
    import sys

    if progress is None:
        progress = sys.stderr.isatty()
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, leave=False)


def check_option(value, name: str, options: Iterable):
    """One of ``options`` (compared with ``==``); the error lists them and suggests the closest."""
    options = tuple(options)
    for option in options:
        # True == 1 in Python: a bool only matches a bool option and vice versa.
        if isinstance(value, (bool, np.bool_)) != isinstance(option, bool):
            continue
        try:
            if value == option:
                return option
        except (TypeError, ValueError):  # arrays and incomparable values
            continue
    listed = ", ".join(repr(o) for o in options)
    hint = ""
    if isinstance(value, str):
        close = difflib.get_close_matches(value, [o for o in options if isinstance(o, str)], n=2)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise ValueError(f"{name} must be one of {listed}; got {value!r}.{hint}")


# --------------------------------------------------------------------------------------------------
# devices


def check_device(device, name: str = "device") -> torch.device:
    """A torch device that exists here: a clear ValueError for an unknown name, an accelerator
    this machine lacks (torch itself fails later with an AssertionError or a RuntimeError) or the
    meta device (no data)."""
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"{name} must be a string such as 'cpu' or 'cuda:0', or a torch.device; got {device!r}")
    try:
        dev = torch.device(device)
    except RuntimeError as err:
        raise ValueError(f"{name} must name a torch device such as 'cpu' or 'cuda:0'; got {device!r} ({err})") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"{name}={str(device)!r} was requested, but CUDA is not available here "
                "(torch.cuda.is_available() is False); use device='cpu' or leave device=None"
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(
                f"{name}={str(device)!r} was requested, but only {torch.cuda.device_count()} CUDA "
                "device(s) exist here"
            )
    elif dev.type == "meta":
        raise ValueError(
            f"{name}={str(device)!r} holds no data: meta tensors have shapes and dtypes only, so no "
            "output, gradient or attribution can be computed on them; use device='cpu' or 'cuda' (a "
            "module built on the meta device: module.to_empty(device='cpu') and load its weights first)"
        )
    elif dev.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError(f"{name}={str(device)!r} was requested, but MPS is not available here; use device='cpu'")
    return dev


def check_executor(executor, name: str = "executor", rows: bool = False):
    """None or an executor (:mod:`featurelens.parallel`), returned as given.

    ``rows=False``: anything that plugs into the game hook, a callable
    ``executor(evaluate_chunk, masks, chunk_size) -> values`` (every
    :class:`featurelens.parallel.Executor`, or a plain function). ``rows=True``: an executor with
    the ``map(fn, items, shared=None)`` primitive (a :class:`featurelens.parallel.Executor`), which
    row-parallel work (``explain(x, executor=...)``) needs."""
    if executor is None:
        return None
    if rows:
        if not callable(getattr(executor, "map", None)):
            raise TypeError(
                f"{name} must be None or an executor with map(fn, items, shared=None), such as "
                f"featurelens.parallel.ThreadExecutor(4); got {type(executor).__name__}"
            )
    elif not callable(executor):
        raise TypeError(
            f"{name} must be None or an executor, a callable executor(evaluate_chunk, masks, chunk_size) -> "
            f"values such as featurelens.parallel.ThreadExecutor(4); got {type(executor).__name__}"
        )
    return executor


def executor_param(executor):
    """How an executor is recorded in provenance (``Explanation.params``, JSON): None, its repr
    (``"ThreadExecutor(n=4)"``), or where that is a default ``<... at 0x...>`` the function's or
    the class's name; never the object."""
    if executor is None:
        return None
    text = repr(executor)
    if text.startswith("<"):  # a default repr (with an address): name the function or the class
        return getattr(executor, "__qualname__", None) or type(executor).__name__
    return text


# --------------------------------------------------------------------------------------------------
# targets and baselines


def _target_range_error(value: int, n_outputs: int, name: str) -> ValueError:
    """The one message for a target index outside ``[0, n_outputs)``."""
    return ValueError(
        f"{name} {int(value)} is out of range; the model has {n_outputs} output(s), "
        f"so targets must lie in [0, {n_outputs - 1}]"
    )


def check_target_range(target: torch.Tensor, n_outputs: int, name: str = "target") -> None:
    """Refuse target indices (a long tensor) outside ``[0, n_outputs)`` with the message of
    :func:`resolve_target`: the check of a target resolved with ``n_outputs=None``, made where the
    model's outputs are first seen (one reduction and one read per call)."""
    bad = (target < 0) | (target >= n_outputs)
    if (target.size if isinstance(target, np.ndarray) else target.numel()) and bool(bad.any()):
        raise _target_range_error(int(target[bad][0]), n_outputs, name)


def resolve_target(target, n: int, n_outputs: int | None, name: str = "target") -> np.ndarray:
    """One output index per sample, as an int64 numpy array of shape ``(n,)``.

    ``target`` is an int (numpy ints and 0-d integer arrays too) for every sample, or one int per
    sample (a list, numpy array or tensor of length ``n``). None is not resolved here: it means the
    predicted class, which needs the model's outputs (``Model.resolve_target`` does that).
    Each index must lie in ``[0, n_outputs)``; ``n_outputs=None``: only ``>= 0`` is checked here,
    and the caller checks the upper bound on the outputs it computes (:func:`check_target_range`).
    """
    if isinstance(target, (bool, np.bool_)) or isinstance(target, (float, np.floating, str)):
        raise TypeError(
            f"{name} must be None, an int or one int per sample; got {target!r} ({type(target).__name__})"
        )
    if _is_int(target):
        arr = np.full(n, int(target), dtype=np.int64)
    else:
        arr = as_numpy(target, name)
        if arr.dtype.kind not in "iu":
            raise TypeError(
                f"{name} must be None, an int or one int per sample; got an array of dtype {arr.dtype}"
            )
        if arr.ndim == 0:  # np.array(1): one int for every sample
            arr = np.full(n, int(arr), dtype=np.int64)
        if arr.ndim != 1 or arr.shape[0] != n:
            raise ValueError(
                f"{name} must be an int or hold one int per sample ({n}); got shape {tuple(arr.shape)}"
            )
        arr = arr.astype(np.int64)
    if n_outputs is None:
        if bool((arr < 0).any()):
            raise ValueError(f"{name} {int(arr[arr < 0][0])} is out of range; targets are output indices >= 0")
        return arr
    bad = (arr < 0) | (arr >= n_outputs)
    if bool(bad.any()):
        raise _target_range_error(int(arr[bad][0]), n_outputs, name)
    return arr


#: What ``baseline=None`` may mean: the named policies of :func:`default_baseline`. An explainer
#: declares its own once, as ``Explainer.default_baseline`` (next to ``Explainer.requires``).
BASELINE_DEFAULTS = ("zeros", "refuse_tabular", "feature_means")


def _refuse_tabular(x, method: str | None) -> ValueError:
    who = "this method" if method is None else method
    return ValueError(
        f"{who} on tabular data (one input of shape ({x.shape[1]},)) needs background= or baseline=: "
        "removed features must be filled with something, and the default zero fill is meaningless on "
        "unscaled features. Pass background=X_train (rows averaged over, as shap does), a summary "
        "background=fl.games.summarize_background(X_train, k=50) (k-means, weighted), or baseline=0.0 "
        "explicitly when a zero is meaningful (standardised features)"
    )


def default_baseline(policy: str, x, data=None, method: str | None = None):
    """What ``baseline=None`` stands for under the named ``policy``, for the batch ``x``.

    The one place a missing baseline is decided; :func:`resolve_baseline` applies it, and every
    explainer names its policy once, as ``Explainer.default_baseline``. A baseline ``x'`` is the
    reference input an attribution is measured against (integrated gradients'
    ``a_i = (x_i - x'_i) int_0^1 ...``, Sundararajan et al. 2017, arXiv 1703.01365; the fill of
    removed players in ``v(S) = f(x_S, x'_{not S})``), so its default is part of the method.

    Parameters
    ----------
    policy
        ``"zeros"``: 0 everywhere (the black image, the silent signal, the zero embedding; the
        path methods, DeepLift and occlusion, as Captum). ``"refuse_tabular"``: 0 for images and
        signals (one input with two or more axes), a ValueError naming ``method`` and the way out
        (``background=``, ``baseline=``) for tabular rows (``x`` of shape ``(n, d)``), where a
        zero lies anywhere on unscaled features, often far outside the data (the black-box
        Shapley, LIME, SPEX and ablation explainers). ``"feature_means"``: the mean over the rows
        of ``data`` (default ``x``) of each feature for tabular rows, ``mean_i = (1/N) sum_r
        data_{r,i}`` in ``data``'s dtype, 0 for images and signals (the audit's fill).
    x
        The batch (array or tensor); only its number of axes is read.
    data
        Rows of the data set for ``"feature_means"`` (numpy or tensor, shape ``(N, d)``).
    method
        The explainer's name, for the refusal.

    Returns
    -------
    float or numpy.ndarray
        ``0.0``, or the feature means shaped like one input.
    """
    policy = check_option(policy, "default_baseline", BASELINE_DEFAULTS)
    if (x.ndim if hasattr(x, "ndim") else np.ndim(x)) != 2:  # images and signals
        return 0.0
    if policy == "refuse_tabular":
        raise _refuse_tabular(x, method)
    if policy == "feature_means":
        rows = x if data is None else data
        rows = rows.detach().cpu().numpy() if is_tensor(rows) else np.asarray(rows)
        return rows.mean(axis=0).astype(rows.dtype)
    return 0.0


def resolve_baseline(baseline, x: torch.Tensor, name: str = "baseline", default: str = "zeros",
                     method: str | None = None, data=None) -> torch.Tensor:
    """A baseline shaped like the batch ``x`` (on its device and dtype).

    ``baseline`` is None (what :func:`default_baseline` gives under the policy ``default``:
    zeros unless told otherwise), a number (a Python or numpy scalar, or a 0-d array), an array or
    tensor shaped like one input ``x.shape[1:]`` (shared by every sample), one shaped like the
    batch ``x.shape``, or an Explanation-like object with ``.values``. Strings, non-numeric dtypes,
    NaN/inf and other shapes are refused with an error naming ``name``. The result may be a
    broadcast view: do not write into it. ``method`` names the explainer in a refusal, ``data``
    the rows of ``"feature_means"``. How the baseline is recorded: :func:`baseline_record`.
    """
    if isinstance(x, np.ndarray):
        return _resolve_array_baseline(baseline, x, name, default, method, data)
    if baseline is None:
        baseline = default_baseline(default, x, data=data, method=method)
        if isinstance(baseline, float) and baseline == 0.0:
            return torch.zeros_like(x)
    if isinstance(baseline, str) or isinstance(baseline, (bool, np.bool_)):
        raise TypeError(
            f"{name} must be None, a number or an array shaped like one input {tuple(x.shape[1:])} or "
            f"like the batch {tuple(x.shape)}; got {baseline!r}"
        )
    if isinstance(baseline, numbers.Real):
        return torch.full_like(x, check_float(baseline, name))
    if is_tensor(baseline):
        b = baseline.detach()
    else:
        arr = as_numpy(baseline, name)
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"{name} must hold numbers; got an array of dtype {arr.dtype}")
        b = numpy_to_tensor(arr, dtype=np.float64 if arr.dtype.kind != "f" else arr.dtype)
    if not torch.is_floating_point(b):
        b = b.double()
    check_floating(b, name)
    b = b.to(device=x.device, dtype=x.dtype)
    if b.ndim == 0:
        return torch.full_like(x, float(b))
    if tuple(b.shape) == tuple(x.shape[1:]):
        return b.expand_as(x)
    if b.ndim == x.ndim and b.shape[0] == 1 and tuple(b.shape[1:]) == tuple(x.shape[1:]):
        return b.expand_as(x)
    if tuple(b.shape) != tuple(x.shape):
        raise ValueError(
            f"{name} must be a scalar, shaped like one input {tuple(x.shape[1:])} or like the batch "
            f"{tuple(x.shape)}; got shape {tuple(b.shape)}"
        )
    return b


def _resolve_array_baseline(baseline, x: np.ndarray, name: str, default: str, method, data) -> np.ndarray:
    """:func:`resolve_baseline` for a numpy batch ``x`` (numpy mode): the same rules and
    refusals, the result a numpy array in ``x``'s dtype (possibly a broadcast view)."""
    if baseline is None:
        baseline = default_baseline(default, x, data=data, method=method)
    if isinstance(baseline, str) or isinstance(baseline, (bool, np.bool_)):
        raise TypeError(
            f"{name} must be None, a number or an array shaped like one input {tuple(x.shape[1:])} or "
            f"like the batch {tuple(x.shape)}; got {baseline!r}"
        )
    if isinstance(baseline, numbers.Real):
        return np.full_like(x, check_float(baseline, name))
    arr = as_numpy(baseline, name)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold numbers; got an array of dtype {arr.dtype}")
    arr = arr.astype(np.float64 if arr.dtype.kind != "f" else arr.dtype, copy=False)
    check_floating(arr, name)
    b = arr.astype(x.dtype, copy=False)
    if b.ndim == 0:
        return np.full_like(x, float(b))
    if tuple(b.shape) == tuple(x.shape[1:]):
        return np.broadcast_to(b, x.shape)
    if b.ndim == x.ndim and b.shape[0] == 1 and tuple(b.shape[1:]) == tuple(x.shape[1:]):
        return np.broadcast_to(b, x.shape)
    if tuple(b.shape) != tuple(x.shape):
        raise ValueError(
            f"{name} must be a scalar, shaped like one input {tuple(x.shape[1:])} or like the batch "
            f"{tuple(x.shape)}; got shape {tuple(b.shape)}"
        )
    return b


def baseline_record(baseline, default: str = "zeros", x=None):
    """How a baseline is recorded in ``Explanation.params["baseline"]`` (and in the audit's
    settings): one form for every explainer.

    - None: the name of what :func:`default_baseline` filled in, ``"zeros"`` (also under
      ``"refuse_tabular"``, on the images and signals where it is not refused), or
      ``"feature_means"`` (tabular ``x`` under ``"feature_means"``);
    - a number (a Python or numpy scalar, a 0-d array or tensor): that number as a float;
    - anything else (an array, tensor or Explanation shaped like one input or like the batch):
      ``"array"``.

    It never raises: a value :func:`resolve_baseline` would refuse is recorded by its kind (it is
    refused when the explainer uses it).
    """
    if baseline is None:
        if default == "feature_means" and x is not None and (x.ndim if hasattr(x, "ndim") else np.ndim(x)) == 2:
            return "feature_means"
        return "zeros"
    if isinstance(baseline, (str, bytes, bool, np.bool_)):
        return repr(baseline)
    if isinstance(baseline, numbers.Real):
        return float(baseline)
    if (isinstance(baseline, np.ndarray) or is_tensor(baseline)) and baseline.ndim == 0:
        try:
            return float(baseline)
        except (TypeError, ValueError):
            return "array"
    return "array"


def relative_scale(x: torch.Tensor) -> torch.Tensor:
    """The value range ``max(x_i) - min(x_i)`` of each sample, shape ``(n,)``: the unit of every
    *relative* noise level or radius (SmoothGrad's noise, the robustness metrics' radius). A
    constant sample, whose range is 0, gets the unit scale 1, so that a relative level still
    perturbs it (with 0 it would silently not be perturbed at all)."""
    flat = x.reshape(x.shape[0], -1)
    r = flat.max(1).values - flat.min(1).values
    return torch.where(r > 0, r, torch.ones_like(r))


# --------------------------------------------------------------------------------------------------
# class labels and token ids


def check_labels(y, name: str, n_classes: int) -> np.ndarray:
    """Integer class labels in ``0..n_classes-1`` (ints, or floats holding whole numbers), as an
    int64 numpy array of the same shape; a ValueError naming ``name``, the first bad label and
    ``n_classes`` else (cross-entropy would fail deep inside torch on such a label)."""
    arr = as_numpy(y, name)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold integer class labels in 0..{n_classes - 1}; got dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        whole = np.isfinite(arr) & (arr == np.round(arr))
        if not bool(whole.all()):
            bad = arr[~whole].flat[0].item()
            raise ValueError(f"{name} must hold integer class labels in 0..{n_classes - 1}; got {bad!r}")
    bad = (arr < 0) | (arr >= n_classes)
    if bool(bad.any()):
        first = int(np.flatnonzero(bad.reshape(-1))[0])
        raise ValueError(
            f"{name} must hold class labels in 0..{n_classes - 1} (the model has {n_classes} output"
            f"{'s' if n_classes != 1 else ''}); got {arr.reshape(-1)[first].item()!r} at index {first}"
            f" ({int(bad.sum())} of {arr.size} labels out of range)"
        )
    return arr.astype(np.int64)


def check_token_ids(ids, name: str, n_vocab: int | None, source: str = "the vocabulary") -> None:
    """Token ids ``>= 0`` and, when ``n_vocab`` is known, ``< n_vocab``; a ValueError naming
    ``name``, the first bad id and the vocabulary size (``source`` says whose: "the model's
    embedding", "the tokenizer") else. An embedding looked up past its table raises an IndexError
    deep inside torch; this says what was wrong first."""
    arr = np.asarray(ids).reshape(-1)
    if arr.size == 0:
        return
    low = arr < 0
    if bool(low.any()):
        raise ValueError(f"{name} must hold token ids >= 0; got {int(arr[low][0])}")
    if n_vocab is not None and int(arr.max()) >= n_vocab:
        bad = int(arr[arr >= n_vocab][0])
        raise ValueError(f"{name} holds the token id {bad}, past the vocabulary of {source} "
                         f"(size {n_vocab}: ids 0..{n_vocab - 1})")
