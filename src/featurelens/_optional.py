"""Optional dependencies: torch (the ``torch`` extra) imported on first use, never at import time.

featurelens installs without torch (``pip install featurelens``): TreeSHAP, the games and every
approximator on a scikit-learn model or a numpy function, the array metrics, the audit and
``featurelens explain`` on estimators run on numpy alone. Every neural-network method needs torch
(``pip install "featurelens[torch]"``). Modules that use torch import it through the lazy
:data:`torch` handle below, so that importing them costs nothing and a function that needs torch
raises an ImportError naming the extra when it is absent:

>>> from featurelens._optional import torch, is_tensor
>>> is_tensor([1.0])     # never imports torch: nothing can be a tensor before torch is imported
False

Checks on the type of an object (:func:`is_tensor`, :func:`is_torch_module`) look at
``sys.modules``: before torch is imported nothing can be a tensor, so they never import it.
"""

from __future__ import annotations

import importlib
import sys
import types

__all__ = [
    "TORCH_EXTRA",
    "lazy_import",
    "is_tensor",
    "is_torch_module",
    "require_torch",
    "to_numpy",
    "torch",
    "torch_available",
    "torch_version",
]

#: The pip requirement that brings torch in, named by every refusal.
TORCH_EXTRA = 'featurelens[torch]'

_MISSING: dict[str, BaseException] = {}


def require_torch(what: str | None = None) -> types.ModuleType:
    """The torch module, imported now; an ImportError naming the extra when torch is not installed.

    Parameters
    ----------
    what
        What needs torch, for the message (``"explainer 'saliency'"``); None says "this".

    Returns
    -------
    module
        The ``torch`` module.

    Raises
    ------
    ImportError
        torch is not installed (or cannot be imported); the message names ``featurelens[torch]``.

    Examples
    --------
    >>> from featurelens._optional import require_torch
    >>> require_torch("integrated gradients").__name__
    'torch'
    """
    module = sys.modules.get("torch")
    if module is not None:
        return module
    try:
        return importlib.import_module("torch")
    except ImportError as err:
        _MISSING["torch"] = err
        raise ImportError(
            f"{what or 'this'} needs torch, which is not installed here: pip install "
            f"\"{TORCH_EXTRA}\" (on a machine without a GPU, install the CPU build of torch first; "
            f"see the installation page). Underlying error: {err}"
        ) from err


def torch_available() -> bool:
    """Whether torch can be imported here (imports it when it can: call this only on a path that
    is about to use torch anyway).

    Returns
    -------
    bool
        True when ``import torch`` succeeds.
    """
    if "torch" in sys.modules and sys.modules["torch"] is not None:
        return True
    try:
        require_torch()
    except ImportError:
        return False
    return True


class _LazyTorch(types.ModuleType):
    """A stand-in for the torch module that imports torch on the first attribute read (a missing
    torch raises the ImportError of :func:`require_torch`)."""

    def __getattr__(self, name):
        value = getattr(require_torch(), name)
        setattr(self, name, value)  # later reads find it here without calling __getattr__
        return value

    def __repr__(self) -> str:
        return "<lazy module 'torch' (imported on first use)>"


#: ``from featurelens._optional import torch``: the torch module, imported on first attribute use.
torch = _LazyTorch("torch")


def is_tensor(x) -> bool:
    """Whether ``x`` is a ``torch.Tensor``, without importing torch.

    Parameters
    ----------
    x
        Any object.

    Returns
    -------
    bool
        True for a tensor; always False while torch has not been imported.
    """
    module = sys.modules.get("torch")
    return module is not None and isinstance(x, module.Tensor)


def is_torch_module(x) -> bool:
    """Whether ``x`` is a ``torch.nn.Module``, without importing torch.

    Parameters
    ----------
    x
        Any object.

    Returns
    -------
    bool
        True for a module (a network); always False while torch has not been imported.
    """
    module = sys.modules.get("torch")
    return module is not None and isinstance(x, module.nn.Module)


def torch_version() -> str | None:
    """The installed torch's version, read from its package metadata (without importing torch), or
    None when torch is not installed.

    Returns
    -------
    str or None
        E.g. ``"2.13.0"``.
    """
    module = sys.modules.get("torch")
    if module is not None and getattr(module, "__version__", None):
        return str(module.__version__)
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python < 3.8
        return None
    try:
        return version("torch")
    except PackageNotFoundError:
        return None


def lazy_import(package: str, table: dict, name: str):
    """The attribute ``name`` of a package whose public names are loaded on first use (PEP 562):
    ``table`` maps each public name to its submodule (relative to ``package``). A submodule that
    needs torch, imported without torch, raises the ImportError naming the extra.

    Parameters
    ----------
    package
        The package's ``__name__``.
    table
        Public name -> submodule name.
    name
        The attribute asked for.

    Returns
    -------
    object
        The attribute.

    Raises
    ------
    AttributeError
        ``name`` is not in ``table``.
    ImportError
        The submodule needs an optional dependency that is not installed.
    """
    try:
        module = table[name]
    except KeyError:
        raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
    try:
        loaded = importlib.import_module(f"{package}.{module}")
    except ImportError as err:
        if (getattr(err, "name", None) or "").split(".")[0] == "torch" or "needs torch" in str(err):
            raise ImportError(
                f"{package}.{name} needs torch, which is not installed here: pip install \"{TORCH_EXTRA}\" "
                f"(see the installation page). Underlying error: {err}"
            ) from err
        raise
    return getattr(loaded, name)


def to_numpy(x):
    """A tensor as a numpy array (detached, on the CPU); anything else through ``np.asarray``.

    Parameters
    ----------
    x
        A tensor, an array or an array-like.

    Returns
    -------
    numpy.ndarray
        The values.
    """
    import numpy as np

    if is_tensor(x):
        return x.detach().cpu().numpy()
    return np.asarray(x)
