"""The one result type of every explainer: :class:`Explanation`.

An explanation carries its values and its provenance (method, parameters, targets, model calls,
seconds). It is saved as a single ``.npz`` file holding the arrays and a JSON document with the
provenance; loading never unpickles anything (``allow_pickle=False``) and checks the file
against its schema (:func:`load_explanation`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from . import _serialization as _ser
from ._serialization import SavedFileError, to_jsonable
from ._validation import check_float, check_int

_FORMAT = "featurelens.explanation/1"


#: Kept for modules that imported it from here; the one JSON conversion lives in _serialization.


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
        meta = {
            "format": _FORMAT,
            "method": self.method,
            "params": to_jsonable(self.params),
            "model_calls": int(self.model_calls),
            "seconds": float(self.seconds),
        }
        arrays = {"values": self.values}
        if self.target is not None:
            arrays["target"] = self.target
        for name, array in self.extra.items():
            arrays[f"extra/{name}"] = array
        return _ser.write_npz(path, arrays, meta)

    # -- plotting ---------------------------------------------------------------------------
    def plot(self, index=None, inputs=None, cmap: str = "RdBu_r", ax=None, max_samples: int = 8):
        """Plot attribution maps; returns the matplotlib Figure.

        Image-like values ``(n, c, h, w)`` or ``(n, h, w)`` are summed over channels and shown as
        heatmaps with a symmetric colour scale (signed maps) next to the inputs when given.
        Tabular values ``(n, d)`` are shown as a bar chart of the first sample (or ``index``).
        """
        from .plots.maps import plot_explanation

        return plot_explanation(self, index=index, inputs=inputs, cmap=cmap, ax=ax, max_samples=max_samples)


_KIND = "explanation"
_META_KEYS = ("format", "method", "params", "model_calls", "seconds")


def load_explanation(path: str | os.PathLike) -> Explanation:
    """Read an explanation written by :meth:`Explanation.save`.

    No pickle is ever loaded, and the file is checked against the format: the arrays ``values``
    (numbers), ``meta`` (a JSON object with exactly ``format``, ``method`` (a non-empty string),
    ``params`` (an object), ``model_calls`` (an int >= 0) and ``seconds`` (a number >= 0)),
    optionally ``target`` (ints shaped like the leading axes of ``values``: one per sample, or
    ``(n, k)`` for ``k`` targets per sample) and ``extra/NAME`` (numbers). Anything else (a corrupt
    or truncated archive, an object array, broken JSON, a missing, unknown or mistyped field)
    raises :class:`featurelens._serialization.SavedFileError`, a ``ValueError`` naming the file,
    the field, what was found and what was expected; a missing file raises ``FileNotFoundError``.
    """
    path, arrays = _ser.read_npz(path, _KIND, ("values", "meta"), ("target",), ("extra/",))
    meta = _ser.read_meta(path, _KIND, arrays.pop("meta"), _FORMAT)
    _ser.check_keys(path, _KIND, meta, _META_KEYS)
    method = meta["method"]
    if not isinstance(method, str) or not method:
        raise SavedFileError(path, _KIND, "meta field 'method'",
                             f"found {method!r} ({type(method).__name__}); expected the explainer's name (a non-empty string)")
    if not isinstance(meta["params"], dict):
        raise SavedFileError(path, _KIND, "meta field 'params'",
                             f"found a {type(meta['params']).__name__}; expected a JSON object")
    model_calls = _ser.meta_field(path, _KIND, meta, "model_calls", check_int, low=0)
    seconds = _ser.meta_field(path, _KIND, meta, "seconds", check_float, low=0.0)
    values = _ser.array_field(path, _KIND, arrays, "values", "biuf")
    target = None
    if "target" in arrays:
        target = _ser.array_field(path, _KIND, arrays, "target", "iu", ndim=(1, 2))
        if values.ndim < target.ndim or target.shape != values.shape[: target.ndim]:
            raise SavedFileError(
                path, _KIND, "array 'target'",
                f"found shape {target.shape} for values of shape {values.shape}; expected one target per "
                f"sample, shape {values.shape[:1]} (or {values.shape[:2]} for several targets per sample)",
            )
    extra = {}
    for key in [k for k in arrays if k.startswith("extra/")]:
        name = key[len("extra/"):]
        if not name:
            raise SavedFileError(path, _KIND, f"array {key!r}", "found an empty name; expected extra/NAME")
        extra[name] = _ser.array_field(path, _KIND, arrays, key, "biuf")
    return Explanation(
        values=values,
        method=method,
        params=meta["params"],
        target=target,
        model_calls=model_calls,
        seconds=seconds,
        extra=extra,
    )
