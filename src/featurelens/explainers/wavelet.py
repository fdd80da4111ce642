"""The wavelet attribution method (WAM): gradients of the target output with respect to the
coefficients of a discrete wavelet transform of the input, for 1-D, 2-D and 3-D inputs.

Kasmi, Brunetto, Fel, Parekh, "One Wave to Explain Them All: A Unifying Perspective on Feature
Attribution", ICML 2025, arXiv 2410.01482.

With ``x = W^{-1} c`` (the inverse DWT, :func:`featurelens._wavelets.waverec`) the chain rule gives

    grad_c f_t(W^{-1} c) = (W^{-1})^T grad_x f_t(x),

so WAM is one batched input gradient from :class:`featurelens.models.Model` (at ``x``, which the
inverse transform rebuilds exactly) followed by the transpose of the differentiable inverse
transform (:func:`featurelens._wavelets.synthesis_adjoint`, the vector-Jacobian product of
``waverec`` written out). It is what autograd computes end to end through ``model(waverec(c))``,
in the same order (tests compare both), without a second model pass. For an orthogonal wavelet (Haar, Daubechies, symlets, coiflets) with
periodization and sizes divisible by ``2**levels`` the inverse is the transpose, so the coefficient
gradient is the forward DWT of the pixel gradient.

Output of every WAM explainer (``J = levels``, ``d`` spatial dimensions, input ``(n, c, *spatial)``):

- ``values``: ``(n, c, *spatial)``, the sum over the ``J + 1`` scales of the per-scale maps below,
  per channel (non-negative);
- ``extra["coefficients"]``: the signed coefficient pyramid ``(n, c, *packed)`` packed in
  ``pywt.coeffs_to_array``'s ("mallat") layout: the approximation ``a_J`` in the low corner, then
  from coarse to fine each level's ``2**d - 1`` detail sub-bands (2-D: ``ad`` = pywt's vertical detail top
  right, ``da`` = horizontal detail bottom left, ``dd`` = diagonal bottom right). ``packed == spatial`` when every size
  is divisible by ``2**J``; odd sizes at some level (extended by one sample, as pywt does) make it
  slightly larger (see :func:`featurelens._wavelets.packed_shape`);
- ``extra["scales"]``: ``(n, J + 1, *spatial)``, summed over channels; index ``j - 1`` is detail
  level ``j`` (``j = 1`` the finest), index ``J`` the approximation. Level ``j``'s map at a position
  is ``2**(-j d / 2) sum_bands |g_{j,band,k}|`` for the coefficient ``k`` whose ``2**j`` block holds
  the position: the |coefficients| put back through the |Haar atoms| (nearest-block upsampling), so
  a constant pixel gradient ``g0`` gives ``|g0|`` in the Haar approximation map. The paper instead
  upsamples bilinearly and divides each sub-band by its maximum for display; these maps keep
  the scales' relative sizes. ``values.sum(1) == scales.sum(1)``.

The wavelet library is an optional extra: ``pip install featurelens[wavelets]`` (PyWavelets gives
the filters); the Haar wavelet is built in and works without it.
"""

from __future__ import annotations

import numpy as np
from featurelens._optional import torch

from .. import _wavelets as wt
from .._validation import as_numpy, check_int, check_option
from ._base import Explainer, Requires, register
from .gradient import IntegratedGradients, SmoothGrad

MODE = "periodization"


class _WaveletMixin:
    """Shared by the three WAM explainers: the wavelet, the input checks, the output maps and the
    arrays in ``Explanation.extra``."""

    requires = Requires(gradients=True, channel_axis=True)
    target_in_pass = True  # every pass goes through Model.gradient / expanded_gradient (Model.pick)

    def _init_wavelet(self, wavelet, levels):
        self.wavelet = wt.get_wavelet(wavelet)
        self.levels = check_int(levels, "levels", low=1)

    def _wavelet_params(self) -> dict:
        return {"wavelet": self.wavelet.name, "levels": self.levels, "mode": MODE}

    def _check_x(self, x) -> None:
        shape = tuple(x.shape) if hasattr(x, "shape") else np.shape(x)
        if len(shape) not in (3, 4, 5):
            raise ValueError(
                f"x must have shape (n, c, L), (n, c, h, w) or (n, c, d, h, w) for {self.name}; "
                f"got shape {tuple(shape)}"
            )
        spatial = shape[2:]
        top = wt.max_level(spatial, self.wavelet)
        if self.levels > top:
            raise ValueError(
                f"levels={self.levels} is too large for input spatial shape {tuple(spatial)}: the maximum "
                f"is {top} (the level at which the smallest axis is down to one coefficient)"
            )

    def explain(self, x, target=None, **kwargs):
        self._check_x(x)
        self._pending = {}
        e = super().explain(x, target=target, **kwargs)
        extra, self._pending = self._pending, {}
        if e.target is not None and e.target.ndim == 2:  # several targets per sample
            k = e.target.shape[1]
            extra = {name: a.reshape(-1, k, *a.shape[1:]) for name, a in extra.items()}
        e.extra = {**e.extra, **extra}
        return e

    def _ndim(self, x: torch.Tensor) -> int:
        return x.ndim - 2

    def _adjoint(self, grad: torch.Tensor) -> list[torch.Tensor]:
        return wt.synthesis_adjoint(grad, self.wavelet, self.levels, self._ndim(grad))

    def _finish(self, pyramid: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """Store the packed pyramid and the per-scale maps; return the input-space values."""
        ndim = self._ndim(x)
        maps = wt.scale_maps(pyramid, ndim, tuple(x.shape[2:]))  # (n, c, J + 1, *spatial)
        self._pending = {
            "coefficients": wt.pack([p.detach() for p in pyramid], ndim).cpu().numpy(),
            "scales": maps.sum(1).detach().cpu().numpy(),
        }
        return maps.sum(2)


@register("wam")
class WAM(_WaveletMixin, Explainer):
    """WAM: the gradient of the target output with respect to the wavelet coefficients of ``x``,

    ``g_c = d f_t(W^{-1} c) / d c`` at ``c = W x``, ``= (W^{-1})^T grad_x f_t(x)``,

    with ``W`` the ``levels``-level DWT of the spatial axes (periodization; ``wavelet`` a PyWavelets
    name, "haar" built in). ``values`` are the per-scale maps of ``|g_c|`` summed over scales, in
    input space; ``extra["coefficients"]`` the signed packed pyramid; ``extra["scales"]`` the maps
    (see the module docstring for layouts and normalisation).

    Kasmi, Brunetto, Fel, Parekh, ICML 2025, arXiv 2410.01482.
    """

    audit_order = 7

    def __init__(self, model, wavelet="haar", levels: int = 3, batch_size: int | None = None):
        super().__init__(model, batch_size)
        self._init_wavelet(wavelet, levels)

    def params(self):
        return {**super().params(), **self._wavelet_params()}

    def _attribute(self, x, target, outputs):
        return self._finish(self._adjoint(self.model.gradient(x, target)), x), {}


@register("wam_smoothgrad")
class WAMSmoothGrad(_WaveletMixin, SmoothGrad):
    """WAM-SmoothGrad: the coefficient gradient averaged over noisy copies of the input,

    ``g_c = (1/n) sum_k (W^{-1})^T grad_x f_t(x + eps_k)``, ``eps_k ~ N(0, sigma^2)``,

    with featurelens's SmoothGrad conventions (``sigma = noise_level * (max(x) - min(x))`` per
    sample, ``noise="absolute"`` for a fixed sigma, ``seed`` None, an int or a numpy Generator, the
    same map for any ``batch_size``). ``variant``: "mean" (signed average;
    the transform is linear, so it is applied once to the averaged pixel gradient), "abs" (the
    average of ``|g_c|`` per coefficient, the paper's WAM-SG without its per-map max
    normalisation), "square" (average of ``g_c**2``) or "var" (variance of ``g_c``).

    Kasmi et al., ICML 2025, arXiv 2410.01482; Smilkov et al. 2017, arXiv 1706.03825.
    """

    audit_order = 8
    benchmark_order = None  # not SmoothGrad's place: after the ordered ones, by name

    def __init__(
        self,
        model,
        wavelet="haar",
        levels: int = 3,
        n_samples: int = 25,
        noise_level: float = 0.15,
        noise: str = "relative",
        variant: str = "mean",
        seed=0,
        batch_size: int | None = None,
    ):
        variant = check_option(variant, "variant", ("mean", "abs", "square", "var"))
        super().__init__(
            model, n_samples=n_samples, noise_level=noise_level, noise=noise,
            variant="mean" if variant == "abs" else variant, seed=seed, batch_size=batch_size,
        )
        self.variant = variant
        self._init_wavelet(wavelet, levels)

    def params(self):
        return {**super().params(), **self._wavelet_params()}

    def _attribute(self, x, target, outputs):
        noisy = self._noisy_rows(x)  # SmoothGrad's noise, drawn chunk by chunk
        n = self.n_samples
        ndim = self._ndim(x)
        if self.variant == "mean":
            avg = self.model.expanded_gradient(x, target, n, noisy) / n
            return self._finish(self._adjoint(avg), x), {}
        spatial = tuple(x.shape[2:])

        # Nonlinear variants act on each copy's coefficient gradient: transform each chunk's
        # pixel gradients into packed pyramids before they are summed.
        def packed(g):
            return wt.pack(self._adjoint(g), ndim)

        if self.variant == "abs":
            mean = self.model.expanded_gradient(x, target, n, noisy, transform=lambda g: packed(g).abs()) / n
        elif self.variant == "square":
            mean = self.model.expanded_gradient(x, target, n, noisy, transform=lambda g: packed(g).square()) / n
        else:  # VarGrad in coefficient space: E[g^2] - E[g]^2 from one pass (g and g^2 stacked)
            both = self.model.expanded_gradient(
                x, target, n, noisy, transform=lambda g: (lambda p: torch.stack([p, p.square()], dim=1))(packed(g))
            ) / n
            mean = both[:, 1] - both[:, 0].square()
        return self._finish(wt.unpack(mean, spatial, self.levels, ndim), x), {}


@register("wam_ig")
class WAMIntegratedGradients(_WaveletMixin, IntegratedGradients):
    """WAM-IG: integrated gradients in wavelet-coefficient space, along the straight path from the
    baseline's coefficients ``c' = W x'`` to ``c = W x``:

    ``A_c = (c - c') * int_0^1 grad_c f_t(W^{-1}(c' + alpha (c - c'))) d alpha``.

    The inverse transform is linear, so the path is ``x' + alpha (x - x')`` in input space and the
    integral is ``(W^{-1})^T`` of the averaged pixel gradient (one transform, not one per step).
    Completeness holds in coefficient space: ``sum A_c = f_t(x) - f_t(x')`` up to the quadrature
    error (``completeness_gap`` and ``max_relative_gap`` in the params). The integration rules and
    baselines are those of ``integrated_gradients`` (Gauss-Legendre by default; zeros baseline =
    zero coefficients, the paper's choice). The paper multiplies by ``|c|`` and integrates
    normalised maps by the trapezoid rule; this keeps IG's signed axioms.

    Kasmi et al., ICML 2025, arXiv 2410.01482; Sundararajan et al. 2017, arXiv 1703.01365.
    """

    audit_order = 9
    benchmark_order = None  # not IntegratedGradients's place: after the ordered ones, by name

    def __init__(
        self,
        model,
        wavelet="haar",
        levels: int = 3,
        n_steps: int = 50,
        method: str = "gausslegendre",
        baseline=None,
        batch_size: int | None = None,
    ):
        super().__init__(model, n_steps=n_steps, method=method, baseline=baseline, batch_size=batch_size)
        self._init_wavelet(wavelet, levels)

    def params(self):
        return {**super().params(), **self._wavelet_params()}

    def _attribute(self, x, target, outputs, baseline=None):
        base, delta, avg_grad = self._path_gradient(x, target, baseline)
        coef_delta = wt.wavedec(delta, self.wavelet, self.levels, self._ndim(x))
        pyramid = [d * g for d, g in zip(coef_delta, self._adjoint(avg_grad))]
        total = sum(p.flatten(1).double().sum(1) for p in pyramid)
        return self._finish(pyramid, x), self._completeness(x, target, outputs, base, total, baseline)


def plot_wam_scales(explanation, index: int = 0, inputs=None, cmap: str = "magma"):
    """Figure of one sample's WAM scales (``explanation.extra["scales"]``): one panel per scale,
    finest detail level first, then the approximation; the input first when ``inputs`` is given.
    2-D maps are heatmaps, 1-D maps line plots, 3-D maps their middle depth slice. Returns the
    matplotlib Figure."""
    from ..plots.maps import subplot_grid, show_map

    extra = getattr(explanation, "extra", None) or {}
    if "scales" not in extra:
        raise ValueError(
            "explanation has no extra['scales']; expected an explanation from wam, wam_smoothgrad or wam_ig"
        )
    scales = np.asarray(extra["scales"])
    if scales.ndim >= 3 and explanation.target is not None and np.ndim(explanation.target) == 2:
        scales = scales.reshape(-1, *scales.shape[2:])  # several targets: one row per (sample, target)
    if not 0 <= int(index) < len(scales):
        raise ValueError(f"index must be in [0, {len(scales)}); got {index!r}")
    maps = scales[int(index)]
    levels = maps.shape[0] - 1
    from ..plots._text import plain_text

    titles = [f"level {j}" + (" (finest)" if j == 1 else "") for j in range(1, levels + 1)] + [f"approx. {levels}"]
    panels = list(zip(maps, titles))
    if inputs is not None:
        x = as_numpy(inputs, "inputs")[int(index)]
        panels = [(x.sum(0) if x.ndim == maps.ndim else x, "input")] + panels
    fig, axes = subplot_grid(len(panels))
    for ax, (m, title) in zip(axes[0], panels):
        m = np.asarray(m)
        if m.ndim == 3:
            m = m[m.shape[0] // 2]
        if m.ndim == 1:
            ax.plot(m, lw=0.8)
            ax.set_title(title, fontsize=8)
        elif title == "input":
            ax.imshow(m, cmap="gray", interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(title, fontsize=8)
        else:
            show_map(ax, m, cmap, title)
    fig.suptitle(plain_text(f"{explanation.method}: scales of sample {int(index)}"), fontsize=9)
    fig.tight_layout()
    return fig
