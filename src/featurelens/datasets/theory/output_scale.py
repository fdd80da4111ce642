"""The lazy/rich output scale (:class:`OutputScaled`) of Chizat, Oyallon & Bach, "On lazy training in
differentiable programming", NeurIPS 2019 (arXiv 1812.07956). Needs torch (``featurelens[torch]``)."""

from __future__ import annotations

import copy

from featurelens._optional import torch

from ..._validation import check_float

__all__ = ["OutputScaled"]


class OutputScaled(torch.nn.Module):
    """The lazy/rich output scale: ``f_alpha(x) = alpha (f(x; w) - f(x; w_0))``.

    Chizat, Oyallon & Bach, "On lazy training in differentiable programming", NeurIPS 2019 (arXiv
    1812.07956). ``net`` is trained; ``init`` is a frozen copy of it taken at construction (its
    parameters have ``requires_grad=False``), so ``f_alpha`` is exactly 0 at initialisation and
    ``d f_alpha / d w = alpha d f / d w``. Train with the loss divided by ``alpha^2``
    (``scale_loss``): to first order the function then moves at the same speed for every
    ``alpha`` while the weights move about ``1 / alpha`` as far, so ``alpha = 1`` is the ordinary
    ("rich", feature-learning) network and a large ``alpha`` the "lazy" (linearised, kernel) regime.

    Parameters
    ----------
    net : torch.nn.Module, the network ``f(.; w)`` (trained in place: optimise ``self.net.parameters()``
        or ``self.parameters()``, whose frozen copies receive no gradient).
    alpha : float > 0, the output scale.

    Attributes
    ----------
    net, init : torch.nn.Module, the trained network and its frozen initial copy (so a layer of the
        trained network is ``"net.<name>"`` in ``named_modules()``).
    alpha : float. The property ``loss_scale`` is ``1 / alpha^2``.

    Examples
    --------
    >>> model = OutputScaled(torch.nn.Linear(3, 2), alpha=100.0)
    >>> x = torch.randn(5, 3)
    >>> bool((model(x) == 0).all())
    True
    >>> loss = model.scale_loss(torch.nn.functional.mse_loss(model(x), torch.ones(5, 2)))
    """

    def __init__(self, net: torch.nn.Module, alpha: float = 1.0):
        super().__init__()
        if not isinstance(net, torch.nn.Module):
            raise TypeError(f"net must be a torch.nn.Module; got {type(net).__name__}")
        self.alpha = check_float(alpha, "alpha", low=0.0, low_inclusive=False)
        self.net = net
        self.init = copy.deepcopy(net).requires_grad_(False)

    @property
    def loss_scale(self) -> float:
        """``1 / alpha^2``, the factor on the loss."""
        return 1.0 / self.alpha**2

    def scale_loss(self, loss: torch.Tensor) -> torch.Tensor:
        """``loss / alpha^2`` (Chizat et al. 2019's objective ``L(f_alpha) / alpha^2``)."""
        return loss / self.alpha**2

    def forward(self, x):
        return self.alpha * (self.net(x) - self.init(x))

    def extra_repr(self) -> str:
        return f"alpha={self.alpha:g}"
