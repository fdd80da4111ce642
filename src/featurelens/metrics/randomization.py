"""Model-parameter randomisation test (Adebayo et al. 2018)."""

from __future__ import annotations

import copy

import numpy as np
import torch
from scipy.stats import rankdata

from .._validation import check_bool, check_executor, check_option, check_seed, numpy_rng
from ..explainers._base import explainer as make_explainer
from ..explainers._base import explainer_class
from ..models import Model

__all__ = ["model_randomization"]

_ORDERS = ("top_down", "independent")


def _layers(module: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """Modules that own parameters and can redraw them (``reset_parameters``), in definition
    order (Quantus's rule, so that the layer lists agree)."""
    return [(name, mod) for name, mod in module.named_modules() if hasattr(mod, "reset_parameters")]


def _spearman(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise Spearman correlation (average ranks for ties, as scipy.stats.spearmanr); NaN where a
    row is constant."""
    ru = rankdata(u, axis=1)
    rv = rankdata(v, axis=1)
    ru -= ru.mean(1, keepdims=True)
    rv -= rv.mean(1, keepdims=True)
    den = np.sqrt((ru * ru).sum(1) * (rv * rv).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (ru * rv).sum(1) / den
    r[den == 0] = np.nan
    return r


def model_randomization(
    explainer_name,
    model,
    x,
    target=None,
    seed=0,
    *,
    explainer_params=None,
    layer_order="top_down",
    abs=True,
    attributions=None,
    executor=None,
):
    """Cascading model-parameter randomisation (Adebayo, Gilmer, Muelly, Goodfellow, Hardt & Kim
    2018, "Sanity Checks for Saliency Maps", NeurIPS, arXiv:1810.03292).

    Starting from a deep copy of the trained model (the user's model is never modified), the layers
    that own parameters (modules with ``reset_parameters``) are re-initialised one after the other
    from the output layer down (``layer_order="top_down"``, cumulative; ``"independent"``: one
    layer at a time, the others trained). After each step the batch is re-explained and compared
    with the trained model's maps by the Spearman rank correlation per sample,
    ``rho_l(x) = Spearman(|a(x)|, |a_l(x)|)`` over the flattened map (``abs=False``: signed maps).
    A method whose maps depend on the weights gets low similarities (lower is better). Layer
    ``l``'s re-initialisation draws from torch's generator seeded with ``seed + 1`` (the global
    random state is saved and restored), which reproduces Quantus's ``MPRT(seed=seed)`` layer by
    layer. ``seed`` is None, an int or a ``numpy.random.Generator``; from a Generator (or None)
    one int is drawn first and used as above, so a Generator gives reproducible results but not
    those of the int it was built from. Targets are fixed on the trained model (the predicted class when ``target`` is None).

    Args:
        explainer_name: a registered explainer name (``fl.list_explainers()``).
        model: a ``torch.nn.Module`` (or a featurelens Model around one, whose batch size and
            device the explainers of the trained and randomised copies use).
        explainer_params: keyword arguments for ``fl.explainer(explainer_name, model, ...)``.
        attributions: optional maps of the trained model (default: computed).
        executor: None, or a :mod:`featurelens.parallel` executor: every explain call (the trained
            model's maps and each randomised copy's) explains its rows in parts on its workers
            (``explain(x, executor=...)``); each randomised copy is sent to the workers once per
            layer. The re-initialisation happens here, so the copies are those of the serial run.

    Returns:
        dict with ``"layers"`` (layer names, in randomisation order), ``"similarity"`` (float64
        (n_layers, n): row l after randomising layers 0..l, or only layer l with
        ``layer_order="independent"``), ``"mean"`` (n_layers,: mean over
        samples), ``"last"`` (n,: after the last layer) and ``"average"`` (n,: mean over layers,
        Quantus's ``return_average_correlation``).
    """
    explainer_class(explainer_name)  # unknown names fail before any copying
    layer_order = check_option(layer_order, "layer_order", _ORDERS)
    executor = check_executor(executor, "executor", rows=True)
    abs = check_bool(abs, "abs")
    seed = check_seed(seed)
    if not isinstance(seed, int):
        # The layers are re-initialised by torch's global generator seeded with an int (Quantus's
        # rule): a Generator (or None) gives that int, drawn once, so the call stays reproducible.
        seed = int(numpy_rng(seed).integers(0, 2**62))
    params = dict(explainer_params or {})
    module = model.module if isinstance(model, Model) else model
    if not isinstance(module, torch.nn.Module):
        raise TypeError(
            f"model must be a torch.nn.Module (its layers are re-initialised); got {type(module).__name__}"
        )

    def wrap(m: torch.nn.Module):
        # A featurelens Model's batch size, device and output units hold for the trained and the
        # randomised copies.
        if not isinstance(model, Model):
            return m
        return Model(m, batch_size=None if model.auto_batch else model.batch_size, device=model.device,
                     output=model.output)

    base = make_explainer(explainer_name, wrap(module), **params)
    xt = base.model.to_tensor(x, "x")
    n = xt.shape[0]
    t = base.model.resolve_target(target, xt).cpu().numpy()
    if attributions is None:
        a0 = base.explain(xt, target=t, executor=executor).values
    else:
        from ._perturb import attributions_array

        a0 = attributions_array(attributions, "attributions")
        if a0.shape[0] != n:
            raise ValueError(f"attributions must hold one map per sample ({n}); got shape {a0.shape}")
    a0 = np.asarray(a0, dtype=np.float64).reshape(n, -1)
    if abs:
        a0 = np.abs(a0)

    work = copy.deepcopy(module)
    trained = copy.deepcopy(module.state_dict())
    layers = _layers(work)[::-1]
    if not layers:
        raise ValueError("model has no layers with parameters to re-initialise (no module has reset_parameters)")
    device = next(iter(work.parameters()), torch.empty(0)).device
    fork = [device] if device.type == "cuda" else []
    names, rows = [], []
    for name, layer in layers:
        if layer_order == "independent":
            work.load_state_dict(trained)
        with torch.random.fork_rng(devices=fork):
            torch.manual_seed(seed + 1)
            layer.reset_parameters()
        a_l = make_explainer(explainer_name, wrap(work), **params).explain(xt, target=t, executor=executor).values
        a_l = np.asarray(a_l, dtype=np.float64).reshape(n, -1)
        if abs:
            a_l = np.abs(a_l)
        names.append(name)
        rows.append(_spearman(a0, a_l))
    sim = np.stack(rows)
    return {"layers": names, "similarity": sim, "mean": sim.mean(1), "last": sim[-1], "average": sim.mean(0)}
