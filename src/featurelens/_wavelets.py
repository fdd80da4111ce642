"""A differentiable discrete wavelet transform (DWT) and its inverse in torch, for 1-D, 2-D and 3-D
signals, multi-level, with the periodization boundary mode (as ``pywt`` ``mode="periodization"``).

Conventions (checked coefficient by coefficient against ``pywt.wavedec``/``wavedec2``/``wavedecn``
with ``mode="periodization"`` in tests/test_wavelets.py). For filters of length ``L`` and one axis
of even length ``M`` (``p = L/2 - 1``):

    analysis   a[k] = sum_m dec_lo[m] x[(2k + p + 1 - m) mod M]   (d[k] likewise with dec_hi)
    synthesis  x[(2k + m - p) mod M] += a[k] rec_lo[m] + d[k] rec_hi[m]

An odd length is first extended by repeating its last sample (pywt's rule), so a level maps ``M``
samples to ``ceil(M/2)`` approximation and ``ceil(M/2)`` detail coefficients; the inverse crops the
reconstruction back to ``M``, so ``waverec(wavedec(x)) == x`` for every size. For orthogonal
wavelets and sizes divisible by ``2**levels`` the transform is an orthogonal matrix: its inverse is
its transpose, which is what makes WAM's coefficient gradient equal the DWT of the pixel gradient.

n-D transforms are separable: one 1-D level along each spatial axis. A level's ``2**d - 1`` detail
sub-bands are stacked on a band axis just before the spatial axes, in ``pywt.wavedecn``'s key order
(``itertools.product("ad", repeat=d)`` without ``"a" * d``; the first letter is the first spatial
axis): 1-D ``d``; 2-D ``ad, da, dd`` = pywt.wavedec2's ``(cV, cH, cD)``; 3-D ``aad, ada, add, ...``.

Filters come from PyWavelets (``pywt.Wavelet(name).dec_lo`` ...); the Haar wavelet (``"haar"`` or
``"db1"``) is hard-coded so that it works without PyWavelets. The code is written here from the
formulas above (not taken from ptwt).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product

import numpy as np
from featurelens._optional import is_tensor, torch
import torch.nn.functional as F

INSTALL_HINT = "pip install featurelens[wavelets] (or pip install PyWavelets)"

_SQRT_HALF = math.sqrt(0.5)


@dataclass(frozen=True)
class Wavelet:
    """A discrete wavelet's four filters (pywt's convention) and whether it is orthogonal."""

    name: str
    dec_lo: tuple
    dec_hi: tuple
    rec_lo: tuple
    rec_hi: tuple
    orthogonal: bool

    @property
    def length(self) -> int:
        return len(self.dec_lo)


_HAAR = Wavelet(
    "haar",
    dec_lo=(_SQRT_HALF, _SQRT_HALF),
    dec_hi=(-_SQRT_HALF, _SQRT_HALF),
    rec_lo=(_SQRT_HALF, _SQRT_HALF),
    rec_hi=(_SQRT_HALF, -_SQRT_HALF),
    orthogonal=True,
)


def get_wavelet(wavelet) -> Wavelet:
    """A :class:`Wavelet` from a name (``"haar"``, ``"db2"``, ``"sym4"``, ``"bior2.2"`` ...), a
    ``pywt.Wavelet`` or a :class:`Wavelet`. Haar needs no PyWavelets; every other name does."""
    if isinstance(wavelet, Wavelet):
        return wavelet
    if isinstance(wavelet, str) and wavelet.lower() in ("haar", "db1"):
        return _HAAR
    if not isinstance(wavelet, str) and not hasattr(wavelet, "dec_lo"):
        raise TypeError(f"wavelet must be a wavelet name such as 'haar' or 'db2'; got {type(wavelet).__name__}")
    try:
        import pywt
    except ImportError as err:
        raise ImportError(
            f"wavelet {wavelet!r} needs PyWavelets, which is not installed: {INSTALL_HINT}. "
            "The 'haar' wavelet works without it."
        ) from err
    if isinstance(wavelet, str):
        discrete = pywt.wavelist(kind="discrete")
        if wavelet not in discrete:
            import difflib

            close = difflib.get_close_matches(wavelet, discrete, n=3)
            hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise ValueError(
                f"wavelet must be the name of a discrete wavelet known to PyWavelets "
                f"(pywt.wavelist(kind='discrete'), e.g. 'haar', 'db2', 'sym4', 'coif1', 'bior2.2'); "
                f"got {wavelet!r}.{hint}"
            )
        w = pywt.Wavelet(wavelet)
    else:
        w = wavelet
    if len(w.dec_lo) % 2:
        raise ValueError(f"wavelet {w.name!r} has odd filter length {len(w.dec_lo)}; expected an even length")
    return Wavelet(w.name, tuple(w.dec_lo), tuple(w.dec_hi), tuple(w.rec_lo), tuple(w.rec_hi), bool(w.orthogonal))


def max_level(spatial_shape, wavelet=None) -> int:
    """The largest number of levels: the one at which the smallest axis's approximation is down
    to a single coefficient, ``ceil(log2(min(size)))`` (``floor(log2)`` for powers of two, then it
    is ``pywt.dwt_max_level`` for Haar). Periodization keeps every level exact and orthogonal; for
    longer filters pywt warns earlier (from ``(L - 1) * 2**J > size``) that all coefficients of
    the deeper levels see the wrap-around. ``wavelet`` is accepted for symmetry and unused."""
    size = min(int(s) for s in spatial_shape)
    return max(0, (size - 1).bit_length())


def level_shapes(spatial_shape, levels: int) -> list[tuple]:
    """Spatial shapes of the approximation after 0, 1, ..., levels levels: ``ceil(s / 2)`` each."""
    shapes = [tuple(int(s) for s in spatial_shape)]
    for _ in range(levels):
        shapes.append(tuple(-(-s // 2) for s in shapes[-1]))
    return shapes


def _analysis_axis(x: torch.Tensor, w: Wavelet, axis: int, adjoint: bool = False) -> torch.Tensor:
    """One level along ``axis`` (negative); returns ``(2, *x.shape)`` with the axis halved
    (rounded up): index 0 the approximation, 1 the detail.

    ``adjoint=True`` applies the transpose of :func:`_synthesis_axis` instead: the same wrap and
    strided correlation with the synthesis filters, and an odd length extended by a zero (the
    transpose of the crop) rather than by its last sample."""
    x = x.movedim(axis, -1)
    if x.shape[-1] % 2:
        x = torch.cat([x, torch.zeros_like(x[..., -1:]) if adjoint else x[..., -1:]], dim=-1)
    m = x.shape[-1]
    length = w.length
    if length > 2:  # periodic extension: p samples from the end in front, the rest after
        p = length // 2 - 1
        x = x.index_select(-1, (torch.arange(m + length - 2, device=x.device) - p) % m)
    # Correlation with stride 2 as a sum of strided slices: for short filters on small signals this
    # is several times faster on CPU than conv1d with one input channel.
    f_lo, f_hi = (w.rec_lo, w.rec_hi) if adjoint else (w.dec_lo[::-1], w.dec_hi[::-1])
    lo = hi = None
    for j in range(length):
        part = x[..., j : j + m - 1 : 2]
        lo = part * f_lo[j] if lo is None else lo.add(part, alpha=f_lo[j])
        hi = part * f_hi[j] if hi is None else hi.add(part, alpha=f_hi[j])
    return torch.stack([lo, hi]).movedim(-1, axis)


def _synthesis_axis(y: torch.Tensor, w: Wavelet, axis: int, length: int) -> torch.Tensor:
    """Inverse of :func:`_analysis_axis`: ``y`` is ``(2, ...)``; returns ``y.shape[1:]`` with the
    axis ``axis`` rebuilt to ``length`` samples."""
    y = y.movedim(axis, -1)
    a, d = y[0], y[1]
    k = a.shape[-1]
    m = 2 * k
    flen = w.length
    half = flen // 2
    # full[2k + j] = sum a[k] rec_lo[j] + d[k] rec_hi[j]: the even and odd outputs separately,
    # each a sum of shifted copies (out of place, so autograd sees plain adds).
    parity = []
    for start in (0, 1):
        acc = None
        for j in range(start, flen, 2):
            term = a * w.rec_lo[j] + d * w.rec_hi[j]
            if half > 1:
                term = F.pad(term, (j // 2, half - 1 - j // 2))
            acc = term if acc is None else acc + term
        parity.append(acc)
    full = torch.stack(parity, dim=-1).reshape(*a.shape[:-1], m + flen - 2)
    if flen > 2:
        # Periodization: the samples that fall outside [0, m) wrap around.
        p = half - 1
        wrap = (torch.arange(full.shape[-1], device=y.device) - p) % m
        lead = full.shape[:-1]
        flat = full.reshape(-1, full.shape[-1])
        full = flat.new_zeros(flat.shape[0], m).index_add(1, wrap, flat).reshape(*lead, m)
    return full[..., :length].movedim(-1, axis)


def dwt(x: torch.Tensor, wavelet, ndim: int, adjoint: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """One level over the last ``ndim`` axes: ``(approximation, details)`` with details
    ``(..., 2**ndim - 1, *half)`` in pywt.wavedecn's key order (``adjoint=True``: the transpose of
    :func:`idwt` instead, see :func:`synthesis_adjoint`)."""
    w = get_wavelet(wavelet)
    y = x
    # The last axis first, so that the first spatial axis ends up as the outermost band bit (idwt
    # consumes that bit first, so its transpose produces it last: the same order).
    for axis in range(-1, -ndim - 1, -1):
        y = _analysis_axis(y, w, axis, adjoint)
    y = y.reshape((2**ndim,) + tuple(y.shape[ndim:]))
    return y[0], y[1:].movedim(0, -ndim - 1)


def idwt(approx: torch.Tensor, details: torch.Tensor, wavelet, ndim: int, shape) -> torch.Tensor:
    """Inverse of :func:`dwt`; ``shape`` is the spatial shape to rebuild (odd sizes are cropped)."""
    w = get_wavelet(wavelet)
    y = torch.cat([approx[None], details.movedim(-ndim - 1, 0)], dim=0)
    y = y.reshape((2,) * ndim + tuple(y.shape[1:]))
    for i in range(ndim):
        # After i steps the remaining band bits lead; the spatial axes stay the last ndim axes.
        y = _synthesis_axis(y, w, -ndim + i, int(shape[i]))
    return y


def wavedec(
    x: torch.Tensor, wavelet="haar", levels: int = 3, ndim: int | None = None, adjoint: bool = False
) -> list[torch.Tensor]:
    """Multi-level DWT over the last ``ndim`` axes (default: all axes after the first two, i.e.
    ``(n, c, *spatial)``): ``[a_J, d_J, ..., d_1]`` with ``d_j`` of shape
    ``(..., 2**ndim - 1, *spatial_j)``, ``spatial_j = ceil(spatial / 2**j)`` (pywt's order).
    ``adjoint=True``: the transpose of :func:`waverec` (see :func:`synthesis_adjoint`)."""
    ndim = x.ndim - 2 if ndim is None else int(ndim)
    w = get_wavelet(wavelet)
    details = []
    a = x
    for _ in range(int(levels)):
        a, d = dwt(a, w, ndim, adjoint)
        details.append(d)
    return [a] + details[::-1]


def waverec(coeffs: list[torch.Tensor], wavelet="haar", shape=None, ndim: int | None = None) -> torch.Tensor:
    """Inverse of :func:`wavedec`. ``shape``: the spatial shape of the signal (needed when a level
    had an odd size; by default twice the finest detail's shape)."""
    ndim = coeffs[0].ndim - 2 if ndim is None else int(ndim)
    w = get_wavelet(wavelet)
    levels = len(coeffs) - 1
    if shape is None:
        shape = tuple(2 * s for s in coeffs[-1].shape[-ndim:])
    shapes = level_shapes(shape, levels)
    a = coeffs[0]
    for j, d in enumerate(coeffs[1:]):
        a = idwt(a, d, w, ndim, shapes[levels - 1 - j])
    return a


def synthesis_adjoint(grad: torch.Tensor, wavelet="haar", levels: int = 3, ndim: int | None = None) -> list[torch.Tensor]:
    """The gradient with respect to the coefficients of ``f(waverec(c))`` given the gradient
    ``grad`` of ``f`` with respect to the signal: the transpose of the (linear) inverse transform
    applied to ``grad``, ``[g_a_J, g_d_J, ..., g_d_1]``. It is what autograd computes through
    :func:`waverec` (tests check both against the explicit matrix), written out as the transposed
    operations (zero extension for the crop, wrap-gather for the periodic fold, strided
    correlation for the transposed convolution), several times faster than a vector-Jacobian
    product through the graph. For an orthogonal wavelet and sizes divisible by ``2**levels`` it equals
    ``wavedec(grad)``."""
    return wavedec(grad, wavelet, levels, ndim, adjoint=True)


def synthesis_adjoint_autograd(grad: torch.Tensor, wavelet="haar", levels: int = 3, ndim: int | None = None) -> list[torch.Tensor]:
    """:func:`synthesis_adjoint` by one vector-Jacobian product through :func:`waverec` (the
    reference the explicit transpose is tested against)."""
    ndim = grad.ndim - 2 if ndim is None else int(ndim)
    w = get_wavelet(wavelet)
    shape = tuple(grad.shape[-ndim:])
    shapes = level_shapes(shape, levels)
    lead = tuple(grad.shape[:-ndim])
    band = 2**ndim - 1
    # waverec is linear, so its Jacobian does not depend on the point: zeros do.
    coeffs = [grad.new_zeros(lead + shapes[levels])] + [
        grad.new_zeros(lead + (band,) + shapes[j]) for j in range(levels, 0, -1)
    ]
    with torch.enable_grad():
        for c in coeffs:
            c.requires_grad_(True)
        rebuilt = waverec(coeffs, w, shape, ndim)
        return list(torch.autograd.grad(rebuilt, coeffs, grad_outputs=grad))


def _detail_keys(ndim: int) -> list[str]:
    return ["".join(k) for k in product("ad", repeat=ndim)][1:]


def packed_shape(spatial_shape, levels: int) -> tuple:
    """Spatial shape of :func:`pack`'s array: the approximation's size plus every level's detail
    size, per axis (the input's own shape when each size is divisible by ``2**levels``)."""
    shapes = level_shapes(spatial_shape, levels)
    return tuple(shapes[levels][i] + sum(s[i] for s in shapes[1:]) for i in range(len(shapes[0])))


def pack(coeffs: list[torch.Tensor], ndim: int) -> torch.Tensor:
    """One array holding a pyramid ``[a_J, d_J, ..., d_1]``, in ``pywt.coeffs_to_array``'s layout
    (the "mallat" layout): the approximation in the low corner; at each level, from coarse to
    fine, sub-band ``key`` occupies, along an axis, ``[0, size)`` where its letter is ``a`` and
    ``[extent, extent + size)`` where it is ``d`` (``extent`` = what the coarser levels fill)."""
    a = coeffs[0]
    lead = tuple(a.shape[:-ndim])
    spatial = [tuple(a.shape[-ndim:])] + [tuple(d.shape[-ndim:]) for d in coeffs[1:]]
    total = tuple(spatial[0][i] + sum(s[i] for s in spatial[1:]) for i in range(ndim))
    out = a.new_zeros(lead + total)
    ell = (slice(None),) * len(lead)
    out[ell + tuple(slice(0, s) for s in spatial[0])] = a
    extent = list(spatial[0])
    keys = _detail_keys(ndim)
    for d in coeffs[1:]:
        size = d.shape[-ndim:]
        for b, key in enumerate(keys):
            region = tuple(
                slice(0, size[i]) if key[i] == "a" else slice(extent[i], extent[i] + size[i]) for i in range(ndim)
            )
            out[ell + region] = d.select(-ndim - 1, b)
        extent = [extent[i] + size[i] for i in range(ndim)]
    return out


def upsample_blocks(m: torch.Tensor, factor: int, shape) -> torch.Tensor:
    """Repeat each entry of the last ``len(shape)`` axes ``factor`` times per axis (the 2**j block
    that a level-j coefficient's Haar atom covers) and crop to ``shape``."""
    ndim = len(shape)
    for i in range(ndim):
        axis = m.ndim - ndim + i
        m = m.repeat_interleave(factor, dim=axis).narrow(axis, 0, int(shape[i]))
    return m


def scale_maps(coeffs: list[torch.Tensor], ndim: int, shape) -> torch.Tensor:
    """Per-scale maps in input space from a coefficient pyramid ``[a_J, d_J, ..., d_1]`` of shape
    ``(n, c, ...)``: ``(n, c, J + 1, *shape)``, index ``j - 1`` for detail level ``j`` (finest
    first) and index ``J`` for the approximation. Level ``j``'s map at a position is
    ``2**(-j * ndim / 2) * sum_bands |g_{j, band, k}|`` over the coefficient ``k`` whose Haar block
    holds the position: the |coefficients| re-synthesised with the |Haar atoms|, so a constant
    pixel gradient ``g0`` gives ``|g0|`` in the Haar approximation map."""
    levels = len(coeffs) - 1
    maps = []
    for j in range(1, levels + 1):
        d = coeffs[levels + 1 - j].abs().sum(dim=-ndim - 1)
        maps.append(upsample_blocks(d, 2**j, shape) * 2.0 ** (-j * ndim / 2))
    maps.append(upsample_blocks(coeffs[0].abs(), 2**levels, shape) * 2.0 ** (-levels * ndim / 2))
    return torch.stack(maps, dim=2)


def as_pywt(coeffs: list, ndim: int) -> list:
    """A pyramid as numpy in pywt's format (for comparisons): 1-D ``[a, d_J, ...]``, 2-D
    ``[a, (H, V, D), ...]``, n-D ``[a, {key: d}, ...]``."""
    def np_(t):
        return t.detach().cpu().numpy() if is_tensor(t) else np.asarray(t)

    out = [np_(coeffs[0])]
    for d in coeffs[1:]:
        d = np_(d)
        bands = [np.take(d, b, axis=d.ndim - ndim - 1) for b in range(d.shape[-ndim - 1])]
        if ndim == 1:
            out.append(bands[0])
        elif ndim == 2:
            out.append(tuple(bands))
        else:
            out.append(dict(zip(_detail_keys(ndim), bands)))
    return out


def unpack(packed: torch.Tensor, spatial_shape, levels: int, ndim: int) -> list[torch.Tensor]:
    """Inverse of :func:`pack` for a signal of spatial shape ``spatial_shape``."""
    shapes = level_shapes(spatial_shape, levels)
    lead = packed.shape[:-ndim]
    ell = (slice(None),) * len(lead)
    out = [packed[ell + tuple(slice(0, s) for s in shapes[levels])]]
    extent = list(shapes[levels])
    keys = _detail_keys(ndim)
    for j in range(levels, 0, -1):
        size = shapes[j]
        bands = []
        for key in keys:
            region = tuple(
                slice(0, size[i]) if key[i] == "a" else slice(extent[i], extent[i] + size[i]) for i in range(ndim)
            )
            bands.append(packed[ell + region])
        out.append(torch.stack(bands, dim=-ndim - 1))
        extent = [extent[i] + size[i] for i in range(ndim)]
    return out
