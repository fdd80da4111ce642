"""Input checks shared by explainers, metrics and learning tools. Every error names the argument,
what was given and what was expected."""

from __future__ import annotations

import numpy as np
import torch


def as_numpy(a, name: str) -> np.ndarray:
    """Turn a numpy array, torch tensor, array-like or Explanation into a numpy array."""
    # torch.Tensor has a ``values`` method (sparse tensors), so check for tensors first.
    if isinstance(a, torch.Tensor):
        return a.detach().cpu().numpy()
    if not isinstance(a, torch.Tensor) and not callable(getattr(a, "values", None)):
        a = getattr(a, "values", a)  # an Explanation or a pandas object
    if isinstance(a, torch.Tensor):
        return a.detach().cpu().numpy()
    try:
        return np.asarray(a)
    except Exception as err:  # pragma: no cover - exotic inputs
        raise TypeError(f"{name} must be array-like (numpy or torch); got {type(a).__name__}") from err


def check_floating(a: np.ndarray | torch.Tensor, name: str) -> None:
    """Refuse non-floating dtypes and NaN/inf values."""
    if isinstance(a, torch.Tensor):
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
    if not finite:
        raise ValueError(f"{name} contains NaN or inf values; expected finite numbers")
