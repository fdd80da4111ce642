"""The one result type of every explainer: :class:`Explanation`.

An explanation carries its values and its provenance (method, parameters, targets, model calls,
seconds). It is saved as a single ``.npz`` file holding the arrays and a JSON document with the
provenance; loading never unpickles anything (``allow_pickle=False``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_FORMAT = "featurelens.explanation/1"


def _jsonable(value: Any) -> Any:
    """Turn parameters into JSON: numpy scalars to numbers, arrays to a short summary."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    shape = getattr(value, "shape", None)
    if shape is not None:
        return {"array_shape": [int(s) for s in shape]}
    return repr(value)


@dataclass
class Explanation:
    """Attribution values with their provenance.

    Attributes
    ----------
    values
        numpy array; for input attributions the same shape as the explained batch ``x``.
    method
        Registered explainer name.
    params
        The explainer's parameters and diagnostics (for example IG's completeness gap).
    target
        The output index explained for each sample (numpy int array) or None.
    model_calls
        Rows sent through the model to produce this explanation.
    seconds
        Wall-clock time of the explanation.
    extra
        Further named arrays a method returns beside ``values`` (for example WAM's wavelet
        coefficient gradients, or MinShap's per-permutation contributions); saved with the
        explanation.
    """

    values: np.ndarray
    method: str
    params: dict = field(default_factory=dict)
    target: np.ndarray | None = None
    model_calls: int = 0
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        self.values = np.asarray(self.values)
        self.extra = {str(k): np.asarray(v) for k, v in (self.extra or {}).items()}
        if self.target is not None:
            self.target = np.asarray(self.target)

    @property
    def shape(self) -> tuple:
        return self.values.shape

    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:
        return (
            f"Explanation(method={self.method!r}, shape={self.values.shape}, "
            f"model_calls={self.model_calls}, seconds={self.seconds:.3g})"
        )

    # -- persistence ------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> str:
        """Write the explanation to ``path`` (``.npz`` is appended when missing); returns the path."""
        path = os.fspath(path)
        if not path.endswith(".npz"):
            path += ".npz"
        meta = {
            "format": _FORMAT,
            "method": self.method,
            "params": _jsonable(self.params),
            "model_calls": int(self.model_calls),
            "seconds": float(self.seconds),
        }
        arrays = {"values": self.values, "meta": np.array(json.dumps(meta))}
        if self.target is not None:
            arrays["target"] = self.target
        for name, array in self.extra.items():
            arrays[f"extra/{name}"] = array
        np.savez_compressed(path, **arrays)
        return path

    # -- plotting ---------------------------------------------------------------------------
    def plot(self, index=None, inputs=None, cmap: str = "RdBu_r", ax=None, max_samples: int = 8):
        """Plot attribution maps; returns the matplotlib Figure.

        Image-like values ``(n, c, h, w)`` or ``(n, h, w)`` are summed over channels and shown as
        heatmaps with a symmetric colour scale (signed maps) next to the inputs when given.
        Tabular values ``(n, d)`` are shown as a bar chart of the first sample (or ``index``).
        """
        from .plot import plot_explanation

        return plot_explanation(self, index=index, inputs=inputs, cmap=cmap, ax=ax, max_samples=max_samples)


def load_explanation(path: str | os.PathLike) -> Explanation:
    """Read an explanation written by :meth:`Explanation.save` (no pickle is ever loaded)."""
    path = os.fspath(path)
    if not os.path.exists(path) and os.path.exists(path + ".npz"):
        path += ".npz"
    with np.load(path, allow_pickle=False) as data:
        if "meta" not in data or "values" not in data:
            raise ValueError(f"path {path!r} is not a featurelens explanation (no 'values'/'meta' arrays)")
        meta = json.loads(str(data["meta"]))
        if meta.get("format") != _FORMAT:
            raise ValueError(f"path {path!r} has format {meta.get('format')!r}; expected {_FORMAT!r}")
        values = data["values"]
        target = data["target"] if "target" in data else None
        extra = {key[len("extra/"):]: data[key] for key in data.files if key.startswith("extra/")}
    return Explanation(
        values=values,
        method=meta["method"],
        params=meta["params"],
        target=target,
        model_calls=meta["model_calls"],
        seconds=meta["seconds"],
        extra=extra,
    )
