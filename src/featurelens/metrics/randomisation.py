"""Randomisation tests: does the explanation depend on what the model learned?

- :func:`model_randomization`: cascading model-parameter randomisation (Adebayo et al. 2018, MPRT);
- :func:`smooth_mprt`: MPRT on noise-averaged explanations (Hedstroem et al. 2023, sMPRT);
- :func:`efficient_mprt`: the rise of the explanations' complexity under full randomisation
  (Hedstroem et al. 2023, eMPRT);
- :func:`random_logit`: similarity of the explanation of the target to that of a random other
  class (Sixt et al. 2020).

The randomised copies re-initialise every module with ``reset_parameters`` from torch's generator
seeded with ``seed + 1`` (Quantus's rule; the global random state is saved and restored), on a
deep copy: the user's model is never modified.
"""

from __future__ import annotations

import copy

import numpy as np
from featurelens._optional import is_torch_module, torch
from scipy.stats import entropy as _entropy

from .._random import numpy_rng, parse_seed, root_seed, torch_seeded
from .._validation import check_bool, check_executor, check_float, check_int, check_option
from .._budgets import check_budget
from ..explainers._base import Explainer, explainer_class
from ..explainers._base import explainer as make_explainer
from ..models import Model
from .._arrays import host
from ._perturb import as_explainer, explain_maps, refuse_torch_only, row_pearson, row_spearman

__all__ = ["model_randomization", "smooth_mprt", "efficient_mprt", "random_logit"]

_ORDERS = ("top_down", "independent")  # model_randomization's (its tests pin "bottom_up" as unknown)
_ALL_ORDERS = ("top_down", "bottom_up", "independent")


def _layers(module: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """Modules that own parameters and can redraw them (``reset_parameters``), in definition
    order (Quantus's rule, so that the layer lists agree)."""
    return [(name, mod) for name, mod in module.named_modules() if hasattr(mod, "reset_parameters")]


def model_randomization(
    explainer,
    x,
    target=None,
    *,
    model=None,
    explainer_params=None,
    seed=0,
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
    layer at a time, the others trained). After each step the batch is re-explained and compared with the trained model's maps by the Spearman rank correlation per sample,
    ``rho_l(x) = Spearman(|a(x)|, |a_l(x)|)`` over the flattened map (``abs=False``: signed maps).
    A method whose maps depend on the weights gets low similarities (lower is better). Layer
    ``l``'s re-initialisation draws from torch's generator seeded with ``seed + 1`` (the global
    random state is saved and restored), which reproduces Quantus's ``MPRT(seed=seed)`` layer by
    layer. ``seed`` is None, an int or a ``numpy.random.Generator``; from a Generator (or None)
    one int is drawn first and used as above, so a Generator gives reproducible results but not
    those of the int it was built from. Targets are fixed on the trained model (the predicted class
    when ``target`` is None).

    Args:
        explainer: a featurelens Explainer (``model`` None or its own model, ``explainer_params``
            empty, as for every metric that re-explains: ``model_randomization(ex, x)``; the
            Explainer is deep-copied once and its copy's module randomised), or a registered
            explainer name (``fl.list_explainers()``) with ``model=``:
            ``model_randomization("saliency", x, model=net)``.
        model: with a name, a ``torch.nn.Module`` (or a featurelens Model around one, whose batch
            size and device the explainers of the trained and randomised copies use).
        explainer_params: keyword arguments for ``fl.explainer(explainer, model, ...)``.
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
    layer_order = check_option(layer_order, "layer_order", _ORDERS)
    executor = check_executor(executor, "executor", rows=True)
    abs = check_bool(abs, "abs")
    # One int seeds everything below (drawn once from a Generator, fresh for None), so the call
    # stays reproducible from a Generator; below 2**62, as layer re-initialisation seeds seed + 1.
    seed = root_seed(seed, high=2**62)
    R = _Randomiser(explainer, model, explainer_params, "model_randomization")
    m, xt, n, t, a0 = _start(R, x, target, executor, attributions)
    if abs:
        a0 = np.abs(a0)
    names, rows = [], []
    for name, ex in R.randomised(seed, layer_order):
        a_l = _explain_flat("model_randomization", ex, xt, t, executor, n)
        if abs:
            a_l = np.abs(a_l)
        names.append(name)
        rows.append(row_spearman(a0, a_l))
    sim = np.stack(rows)
    return {"layers": names, "similarity": sim, "mean": sim.mean(1), "last": sim[-1], "average": sim.mean(0)}


# --------------------------------------------------------------------------------------------------
# shared machinery of the MPRT family (model_randomization, smooth_mprt, efficient_mprt)


class _Randomiser:
    """The explainer of the trained model and, layer after layer, explainers of a randomised deep
    copy. ``explainer``: a registered name (built on ``model`` with ``explainer_params``, rebuilt on
    each randomised copy, a featurelens Model's batch size, device and units kept) or an Explainer
    (``model`` None or its own; deep-copied once, so every reference it holds into its module
    follows the copy)."""

    def __init__(self, explainer, model, explainer_params, fn: str):
        self.fn = fn
        if isinstance(explainer, Explainer):
            # The rule of every metric that re-explains: an Explainer brings its model (model= may
            # only repeat it) and its parameters.
            self.name, self.params, self.base = None, {}, as_explainer(explainer, model, explainer_params)
            model = None
            module = explainer.model.module
        elif isinstance(explainer, str):
            explainer_class(explainer)  # unknown names fail before any copying
            if model is None:
                raise ValueError(f"explainer={explainer!r} is a name: pass model= (the model to explain) too, "
                                 f"{fn}({explainer!r}, x, model=model, ...)")
            self.name, self.params = explainer, dict(explainer_params or {})
            module = model.module if isinstance(model, Model) else model
            self.base = None
        else:
            raise TypeError(
                "explainer must be a registered explainer name or a featurelens Explainer; "
                f"got {type(explainer).__name__}"
            )
        if not is_torch_module(module):
            refuse_torch_only(fn, "its layers are re-initialised", type(module).__name__)
        self.model, self.module = model, module
        if self.base is None:
            self.base = make_explainer(self.name, self._wrap(module), **self.params)

    def _wrap(self, m: torch.nn.Module):
        model = self.model
        if not isinstance(model, Model):
            return m
        return Model(m, batch_size=None if model.auto_batch else model.batch_size, device=model.device,
                     output=model.output)

    def randomised(self, seed: int, layer_order: str, every_layer: bool = True):
        """Yield ``(layer name, explainer of the randomised copy)`` after each layer's
        re-initialisation (cumulative, or one layer at a time for ``"independent"``); with
        ``every_layer=False`` only after the last one."""
        if self.name is None:
            ex = copy.deepcopy(self.base)
            work = ex.model.module
        else:
            work = copy.deepcopy(self.module)
            ex = None
        trained = copy.deepcopy(work.state_dict())
        layers = _layers(work)
        if layer_order != "bottom_up":
            layers = layers[::-1]
        if not layers:
            raise ValueError("model has no layers with parameters to re-initialise (no module has reset_parameters)")
        device = next(iter(work.parameters()), torch.empty(0)).device
        for i, (name, layer) in enumerate(layers):
            if layer_order == "independent":
                work.load_state_dict(trained)
            with torch_seeded(seed + 1, device):
                layer.reset_parameters()
            if not every_layer and i < len(layers) - 1:
                continue
            yield name, (ex if ex is not None else make_explainer(self.name, self._wrap(work), **self.params))


def _start(R: "_Randomiser", x, target, executor, attributions=None, explain: bool = True):
    """The common start of the randomisation tests: the batch as a tensor on the model, its targets,
    and the original model's flattened explanations (given, or computed when ``explain``)."""
    if x is None or is_torch_module(x) or isinstance(x, Model):
        got = "None" if x is None else f"a model ({type(x).__name__})"
        raise TypeError(
            f"{R.fn}: x must be the batch to explain; got {got}. The call is {R.fn}(explainer, x, target=None, "
            f"*, model=None, ...): {R.fn}(ex, x) with an Explainer, {R.fn}('saliency', x, model=net) with a name"
        )
    m = R.base.model
    xt = m.to_tensor(x, "x")
    n = xt.shape[0]
    t = host(m.resolve_target(target, xt))
    if not explain:
        return m, xt, n, t, None
    a0 = _explain_flat(R.fn, R.base, xt, t, executor, n) if attributions is None else _given(attributions, n)
    return m, xt, n, t, a0


def _explain_flat(metric: str, ex: Explainer, xt, target: np.ndarray, executor, rows: int) -> np.ndarray:
    e = explain_maps(ex, xt, target, metric, executor)
    return np.asarray(e.values, dtype=np.float64).reshape(rows, -1)


def _given(attributions, n: int) -> np.ndarray:
    from ._perturb import attributions_array

    a = attributions_array(attributions, "attributions")
    if a.ndim < 1 or a.shape[0] != n:
        raise ValueError(f"attributions must hold one map per sample ({n}); got shape {a.shape}")
    return np.asarray(a, dtype=np.float64).reshape(n, -1)


def discrete_entropy(a: np.ndarray, n_bins: int = 100) -> np.ndarray:
    """Shannon entropy (natural log) of the histogram of each row of ``a`` (n, d) in ``n_bins``
    equal-width bins between the row's minimum and maximum (a constant row: one bin of
    [v - 0.5, v + 0.5], entropy 0), the bins of ``numpy.histogram``. Float64 (n,)."""
    a = np.asarray(a, dtype=np.float64)
    n = a.shape[0]
    lo, hi = a.min(1), a.max(1)
    const = lo == hi
    lo, hi = np.where(const, lo - 0.5, lo), np.where(const, hi + 0.5, hi)
    edges = np.linspace(lo, hi, n_bins + 1, axis=1)
    idx = ((a - lo[:, None]) / (hi - lo)[:, None] * n_bins).astype(np.intp)
    idx[idx == n_bins] -= 1
    # numpy's corrections for values that land on the wrong side of an edge by rounding
    rows = np.arange(n)[:, None]
    idx[a < edges[rows, idx]] -= 1
    idx[(a >= edges[rows, idx + 1]) & (idx != n_bins - 1)] += 1
    counts = np.bincount((rows * n_bins + idx).reshape(-1), minlength=n * n_bins).reshape(n, n_bins)
    return _entropy(counts, axis=1)


def efficient_mprt(
    explainer,
    x,
    target=None,
    *,
    model=None,
    explainer_params=None,
    seed=0,
    n_bins=100,
    layer_order="bottom_up",
    every_layer=False,
    abs=False,
    attributions=None,
    executor=None,
):
    """Efficient MPRT, eMPRT (Hedstroem, Weber, Lapuschkin & Hoehne 2023, "Sanity Checks
    Revisited: An Exploration to Repair the Model Parameter Randomisation Test", XAI in Action
    workshop, NeurIPS, arXiv:2401.06465).

    Instead of correlating maps, eMPRT measures how much more complex the explanation becomes when
    every layer of the model is re-initialised:
    ``eMPRT(x) = (H(a_rand(x)) - H(a(x))) / H(a(x))``, ``H`` the discrete entropy of the map's
    histogram in ``n_bins`` equal-width bins over its range (``discrete_entropy``, Quantus's
    ``discrete_entropy`` with its default 100 bins). Higher: the explanation loses its structure
    with the model's weights, as it should. The layers (modules with ``reset_parameters``) are
    re-initialised cumulatively in ``layer_order`` (``"bottom_up"``, Quantus's default for eMPRT;
    ``"top_down"``; ``"independent"``: one layer at a time), each under ``seed + 1``, so the fully
    randomised model does not depend on the cumulative order. ``every_layer=True`` also explains
    every intermediate copy (Quantus's ``skip_layers=False``). ``abs``: entropies of |a|.
    ``explainer``: an Explainer, which brings its own model (``efficient_mprt(ex, x)``; ``model``
    None or its own, as for every metric that re-explains), or a registered name with ``model=``
    (and ``explainer_params=``): ``efficient_mprt("saliency", x, model=net)``. ``attributions``
    (optional) replaces the trained model's maps. Targets are fixed on the trained model (the
    predicted class when ``target`` is None). ``executor``: the explain calls' rows in parts on its
    workers.

    Returns:
        dict with ``"layers"`` (the layers after whose re-initialisation the maps were scored),
        ``"complexity"`` (float64 (1 + len(layers), n): row 0 the trained model's entropies),
        ``"score"`` (float64 (n,): the relative rise after the last layer; inf or NaN where the
        trained map's entropy is 0).
    """
    n_bins = check_int(n_bins, "n_bins", low=1)
    layer_order = check_option(layer_order, "layer_order", _ALL_ORDERS)
    every_layer = check_bool(every_layer, "every_layer")
    abs_ = check_bool(abs, "abs")
    executor = check_executor(executor, "executor", rows=True)
    # One int seeds everything below (drawn once from a Generator, fresh for None), so the call
    # stays reproducible from a Generator; below 2**62, as layer re-initialisation seeds seed + 1.
    seed = root_seed(seed, high=2**62)
    R = _Randomiser(explainer, model, explainer_params, "efficient_mprt")
    m, xt, n, t, a0 = _start(R, x, target, executor, attributions)
    prep = np.abs if abs_ else (lambda v: v)
    names, rows = [], [discrete_entropy(prep(a0), n_bins)]
    for name, ex in R.randomised(seed, layer_order, every_layer):
        names.append(name)
        rows.append(discrete_entropy(prep(_explain_flat("efficient_mprt", ex, xt, t, executor, n)), n_bins))
    comp = np.stack(rows)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = (comp[-1] - comp[0]) / comp[0]
    return {"layers": names, "complexity": comp, "score": score}


def smooth_mprt(
    explainer,
    x,
    target=None,
    *,
    model=None,
    explainer_params=None,
    seed=0,
    n_samples=50,
    noise_std=0.1,
    layer_order="bottom_up",
    abs=True,
    executor=None,
):
    """Smooth MPRT, sMPRT (Hedstroem, Weber, Lapuschkin & Hoehne 2023, arXiv:2401.06465).

    The MPRT of :func:`model_randomization` on noise-averaged explanations, which removes the
    shattered-gradient noise that makes plain MPRT over-optimistic:
    ``a_s(x) = (1/N) sum_{j<N} a(x + eps_j)``, ``eps_j ~ N(0, (noise_std * (max x - min x))^2)`` per
    sample, ``eps_{N-1} = 0`` (the clean input is one of the ``N = n_samples``, as in Quantus), and
    ``rho_l(x) = Spearman(|a_s(x)|, |a_s^l(x)|)`` after re-initialising layer ``l`` (cumulatively in
    ``layer_order``, ``"bottom_up"`` by default as Quantus's sMPRT; lower is better). The same noise
    draws (``featurelens.metrics._perturb.gaussian_draws`` of ``seed``) serve the trained and
    every randomised model (common random numbers: the similarities compare models, not noise);
    Quantus draws afresh for each. The N copies of the batch are explained in one call.
    ``explainer``: an Explainer, which brings its own model (``smooth_mprt(ex, x)``; ``model``
    None or its own, as for every metric that re-explains), or a registered name with ``model=``
    (and ``explainer_params=``). ``abs=False``: signed maps.

    Quantus 0.6's ``SmoothMPRT`` calls ``quantus.explain`` for the noisy copies, ignoring the
    ``explain_func`` it is given, and its ``return_average_correlation`` averages in the
    "original" row (a self-similarity near 1; it skips a key named "orig" that does not exist).

    Returns:
        dict as :func:`model_randomization`: ``"layers"``, ``"similarity"`` (float64
        (n_layers, n)), ``"mean"``, ``"last"`` and ``"average"`` (mean over layers, without the
        original).
    """
    from ._perturb import gaussian_draws

    n_samples = check_budget(n_samples, "n_samples", unit="explained inputs", what="per input and layer")
    noise_std = check_float(noise_std, "noise_std", low=0.0)
    layer_order = check_option(layer_order, "layer_order", _ALL_ORDERS)
    abs_ = check_bool(abs, "abs")
    executor = check_executor(executor, "executor", rows=True)
    # One int seeds everything below (drawn once from a Generator, fresh for None), so the call
    # stays reproducible from a Generator; below 2**62, as layer re-initialisation seeds seed + 1.
    seed = root_seed(seed, high=2**62)
    R = _Randomiser(explainer, model, explainer_params, "smooth_mprt")
    m, xt, n, t, _ = _start(R, x, target, executor, explain=False)
    check_budget(n_samples, "n_samples", per=n, unit="explained inputs", what=f"for {n} inputs, per layer",
                 nbytes=lambda v: 24 * v * xt[:1].numel() * n, hint="lower n_samples, or pass fewer inputs per call")
    flat = xt.reshape(n, -1).double()
    std = (noise_std * (flat.max(1).values - flat.min(1).values)).cpu().numpy()
    draws = list(gaussian_draws(numpy_rng(seed), n_samples - 1, tuple(xt.shape), std))
    eps = torch.as_tensor(np.stack(draws + [np.zeros(tuple(xt.shape))]), device=xt.device).to(xt.dtype)
    rows = (xt.unsqueeze(0) + eps).reshape(n_samples * n, *xt.shape[1:])
    tt = np.tile(t, n_samples)

    def smooth(ex):
        a = _explain_flat("smooth_mprt", ex, rows, tt, executor, n_samples * n).reshape(n_samples, n, -1).mean(0)
        return np.abs(a) if abs_ else a

    a0 = smooth(R.base)
    names, sims = [], []
    for name, ex in R.randomised(seed, layer_order):
        names.append(name)
        sims.append(row_spearman(a0, smooth(ex)))
    sim = np.stack(sims)
    return {"layers": names, "similarity": sim, "mean": sim.mean(1), "last": sim[-1], "average": sim.mean(0)}


# --------------------------------------------------------------------------------------------------
# random logit


def _ssim_1d(u: np.ndarray, v: np.ndarray, win: int = 7) -> np.ndarray:
    """Row-wise structural similarity of flat maps (Wang et al. 2004), as
    ``skimage.metrics.structural_similarity`` on 1-d arrays with its defaults: uniform windows of
    ``win`` entries (the valid ones), sample covariances, ``K1 = 0.01``, ``K2 = 0.03``, the data
    range of each pair (max - min over both maps)."""
    d = u.shape[1]
    if d < win:
        raise ValueError(f"similarity='ssim' needs maps of at least {win} values; got {d}")

    def window_mean(z):
        c = np.concatenate([np.zeros((z.shape[0], 1)), np.cumsum(z, axis=1)], axis=1)
        return (c[:, win:] - c[:, :-win]) / win

    ux, uy = window_mean(u), window_mean(v)
    cov = win / (win - 1)
    vx = cov * (window_mean(u * u) - ux * ux)
    vy = cov * (window_mean(v * v) - uy * uy)
    vxy = cov * (window_mean(u * v) - ux * uy)
    both = np.concatenate([u, v], axis=1)
    r = (both.max(1) - both.min(1))[:, None]
    c1, c2 = (0.01 * r) ** 2, (0.03 * r) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        s = (2 * ux * uy + c1) * (2 * vxy + c2) / ((ux * ux + uy * uy + c1) * (vx + vy + c2))
    return s.mean(1)


_SIMILARITIES = {"ssim": _ssim_1d, "spearman": row_spearman, "pearson": row_pearson}


def random_logit(
    explainer,
    x,
    target=None,
    *,
    model=None,
    explainer_params=None,
    seed=0,
    similarity="ssim",
    normalise=True,
    abs=False,
    attributions=None,
    executor=None,
):
    """Random logit test (Sixt, Granz & Landgraf 2020, "When Explanations Lie: Why Many Modified BP
    Attributions Fail", ICML, arXiv:1912.09818).

    A class-sensitive explanation of the target ``y`` differs from that of another class:
    ``RL(x) = sim(a_y(x), a_{y'}(x))`` with ``y'`` drawn uniformly among the other classes
    (``y' = j + [j >= y]``, ``j ~ U{0..C-2}`` from ``numpy_rng(seed)``; Quantus 0.6 draws ``j``
    with ``np.random.randint`` after ``np.random.seed(seed)``). Lower is better. ``similarity``:
    ``"ssim"`` (default, as Quantus: the structural similarity of the flattened maps, windows of 7,
    see ``_ssim_1d``), ``"spearman"`` or ``"pearson"``. Maps are divided by their largest |value|
    per sample first (``normalise``; Quantus divides the batch by one maximum, the same for a batch
    of one) and made absolute with ``abs=True``. ``C`` is the number of the model's outputs (at
    least 2). ``explainer``: an Explainer (``model=`` None or its own model), or a registered name
    with ``model=`` and ``explainer_params=``. ``attributions`` (optional) replaces ``a_y(x)``. Returns float64 (n,).
    """

    ex = as_explainer(explainer, model, explainer_params)
    similarity = check_option(similarity, "similarity", tuple(_SIMILARITIES))
    normalise = check_bool(normalise, "normalise")
    abs_ = check_bool(abs, "abs")
    seed = parse_seed(seed)
    executor = check_executor(executor, "executor", rows=True)
    m = ex.model
    xt = m.to_tensor(x, "x")
    n = xt.shape[0]
    outputs = m.predict(xt)
    n_classes = outputs.shape[1]
    if n_classes < 2:
        raise ValueError(f"random_logit needs a model with at least 2 outputs (classes); got {n_classes}")
    t = host(m.resolve_target(target, xt, outputs))
    j = numpy_rng(seed).integers(0, n_classes - 1, size=n)
    off = j + (j >= t)
    a = _explain_flat("random_logit", ex, xt, t, executor, n) if attributions is None else _given(attributions, n)
    b = _explain_flat("random_logit", ex, xt, off, executor, n)
    if a.shape != b.shape:
        raise ValueError(f"attributions have {a.shape[1]} values per sample but the explainer returns {b.shape[1]}")
    if normalise:
        a = a / np.where(np.abs(a).max(1, keepdims=True) == 0, 1.0, np.abs(a).max(1, keepdims=True))
        b = b / np.where(np.abs(b).max(1, keepdims=True) == 0, 1.0, np.abs(b).max(1, keepdims=True))
    if abs_:
        a, b = np.abs(a), np.abs(b)
    return _SIMILARITIES[similarity](a, b)


# ------------------------------------------------------------------------------------------------
# specs (featurelens.metrics._spec): what each metric is, and how the audit calls it


def _cascade_score(fn, ctx, key="last", attributions=True, **kw):
    """``fn(...)[key]`` per sample for a randomisation test ``fn`` (:func:`model_randomization`, the
    MPRT variants) of the explainer ``ctx.explainer_name`` on ``ctx.module`` (default: the
    model's module), its explainers built with ``ctx.explainer_params`` (batch_size included: it
    bounds their memory as it does the scored explainer's). ``attributions=False`` for tests that
    do not take the trained maps (smooth MPRT explains noisy copies itself)."""
    module = ctx.module if ctx.module is not None else ctx.model.module
    extra = ctx.executor_kw()
    if attributions:
        extra["attributions"] = ctx.raw
    res = fn(ctx.explainer_name, ctx.x, target=ctx.target, model=module, seed=ctx.seed,
             explainer_params=dict(ctx.explainer_params), **extra, **kw)
    return np.asarray(res[key], dtype=np.float64).reshape(-1)


from ._spec import MetricSpec  # noqa: E402  (the specs sit below the functions they declare)

SPECS = (
    MetricSpec(
        "model_randomization", model_randomization, "randomisation", -1,
        "Spearman similarity of the maps before and after every layer is "
        "re-initialised (Adebayo et al. 2018); lower is better, above 0.5 flagged",
        requires={"explainer", "parameters"}, reexplains=True, quantus="MPRT",
        score=lambda ctx: _cascade_score(model_randomization, ctx), column="randomization_similarity",
        label="random. sim.", audit_default=True),
    MetricSpec(
        "efficient_mprt", efficient_mprt, "randomisation", +1,
        "relative rise of the map's entropy once every layer is re-initialised "
        "(Hedstroem et al. 2023); higher is better",
        requires={"explainer", "parameters"}, reexplains=True, quantus="EfficientMPRT",
        score=lambda ctx: _cascade_score(efficient_mprt, ctx, "score"), column="efficient_mprt", label="eMPRT"),
    MetricSpec(
        "smooth_mprt", smooth_mprt, "randomisation", -1,
        "Spearman similarity of noise-averaged maps before and after every layer is "
        "re-initialised (Hedstroem et al. 2023); lower is better",
        requires={"explainer", "parameters"}, reexplains=True, quantus="SmoothMPRT",
        score=lambda ctx: _cascade_score(smooth_mprt, ctx, "last", attributions=False,
                                         n_samples=max(2, ctx.n_noise)),
        column="smooth_mprt", label="sMPRT sim."),
    MetricSpec(
        "random_logit", random_logit, "randomisation", -1,
        "structural similarity of the map of the target with that of a random other class "
        "(Sixt et al. 2020); lower is better",
        requires={"explainer", "classes", "windows"}, reexplains=True, quantus="RandomLogit",
        column="random_logit", label="random logit",
        score=lambda ctx: random_logit(ctx.explainer, ctx.x, target=ctx.target, seed=ctx.seed,
                                       attributions=ctx.raw, **ctx.executor_kw())),
)
