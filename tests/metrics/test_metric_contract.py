"""The contract every declared metric keeps, parametrised over ``fl.metrics.list_metrics()``.

Each metric is called one way, ``spec.score(ScoreContext(...))`` (the way the audit calls it), on
the small CNN below (inputs (n, 1, 8, 8), 3 outputs, a first layer without padding) with a Model
and an explainer of ``batch_size`` 4:

- rows per model call never exceed ``batch_size`` (a forward pre-hook counts them), one value
  comes back per sample, and the model's parameters, requires_grad flags and train/eval modes are
  unchanged afterwards; a metric that declares ``reexplains`` calls the explainer, one that does not
  never does;
- the same seed gives the same values, for an int and for two numpy Generators built alike;
- NaN in the maps and NaN model outputs are refused with a ValueError naming NaN;
- the declared ``direction`` holds on a planted case: a faithful map (or explainer) beats a random
  one (``PLANTED`` below says which, per family; direction 0, complexity, has nothing to check);
- a declared Quantus counterpart is a Quantus class, and a test under ``tests/`` compares the metric
  with it (skipped without quantus).

A public function of ``fl.metrics`` without a spec fails ``test_every_public_metric_has_a_spec``
until its module declares one (or it is listed in ``NOT_METRICS`` with the reason).
"""

from __future__ import annotations

import ast
import copy
import functools
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.metrics import FAMILIES, REQUIREMENTS, MetricSpec, ScoreContext, list_metrics, spec

TESTS = Path(__file__).resolve().parents[1]
SHAPE = (1, 8, 8)
BATCH_SIZE = 4
N = 6
_PIXEL = np.arange(64).reshape(8, 8)
PATCHES = (_PIXEL // 2 % 4 + 4 * (_PIXEL // 16)).reshape(SHAPE)  # 16 regions of 2 x 2
MASKS = np.zeros((N, 8, 8), bool)
MASKS[:, 2:6, 2:6] = True
LAYOUT = np.zeros((N, 4), bool)  # focus: the target class in the two top quadrants
LAYOUT[:, :2] = True

#: Public names of fl.metrics that are not per-explanation metrics, and why.
NOT_METRICS = {
    # OOD detection scores: they compare two sets of scalar scores, not a map with a model or a mask.
    "auroc": "an OOD detection score of two score sets",
    "fpr_at_tpr": "an OOD detection score of two score sets",
    # It builds the mosaics (and the layout) that focus scores.
    "focus_mosaics": "builds the inputs of focus",
    # The registry itself.
    "MetricSpec": "the registry", "ScoreContext": "the registry", "list_metrics": "the registry",
    "spec": "the registry", "FAMILIES": "the registry", "REQUIREMENTS": "the registry",
}

#: Metrics that explain the inputs themselves instead of reading the given maps: NaN maps come
#: from their explainer (a model with finite outputs and NaN gradients).
EXPLAIN_THEMSELVES = {"continuity", "smooth_mprt"}

NAMES = [s.name for s in list_metrics()]


def make_cnn() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 3, 3),  # no padding: input_invariance's first layer absorbs a constant shift
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(3 * 6 * 6, 3),
    ).double()


def make_x(n: int = N, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, *SHAPE))


def maps(shape, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape)


class _NanOutput(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        out = self.net(x)
        return out + torch.where(torch.arange(out.shape[1]) == 1, float("nan"), 0.0).to(out.dtype)


class _NanGradient(torch.nn.Module):
    """Finite outputs, NaN gradients: sqrt(x - x) is 0 with derivative inf * 0."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        z = torch.sqrt(x - x).sum(dim=tuple(range(1, x.dim())))[:, None]
        return self.net(x) + (z - z.detach())


def context(name: str, net, *, seed=0, explainer_net=None, a=None, x=None) -> ScoreContext:
    """The contract's ScoreContext for ``name``: Model and explainer of batch_size 4, fixed
    targets, seeded maps (mosaic maps for focus), the masks, 2 x 2 regions."""
    x = make_x() if x is None else x
    ex = fl.explainer("saliency", net if explainer_net is None else explainer_net, batch_size=BATCH_SIZE)
    if a is None:
        a = maps((N, 1, 16, 16)) if name == "focus" else maps(x.shape)
    return ScoreContext(
        model=fl.Model(net, batch_size=BATCH_SIZE), x=x, a=a, target=np.arange(N) % 3, explainer=ex,
        explainer_name="saliency", explainer_params={"batch_size": BATCH_SIZE}, masks=MASKS, layer="0",
        layout=LAYOUT, baseline=0.0, seed=seed, steps=4, n_subsets=6, radius=0.1, n_noise=3, regions=PATCHES,
    )


def snapshot(model: torch.nn.Module):
    return (
        {k: v.detach().clone() for k, v in model.state_dict().items()},
        [(n, p.requires_grad) for n, p in model.named_parameters()],
        [(n, m.training) for n, m in model.named_modules()],
    )


def calls_model(s: MetricSpec) -> bool:
    return bool(s.requires & {"model", "explainer"})


# ------------------------------------------------------------------------------------------------
# the registry


def test_every_public_metric_has_a_spec():
    functions = {s.function for s in list_metrics()}
    for name in fl.metrics.__all__:
        if name in NOT_METRICS:
            continue
        fn = getattr(fl.metrics, name)
        assert fn in functions, f"fl.metrics.{name} has no MetricSpec: declare one in SPECS of {fn.__module__}"
        assert spec(name).function is fn
    # ... and every spec's function is public.
    for s in list_metrics():
        assert getattr(fl.metrics, s.function.__name__) is s.function, s.name


def test_the_package_reexports_every_familys_all():
    # a new metric is exported by its family module alone (its name in that module's __all__)
    import importlib

    names = []
    for family in (*FAMILIES, "ood"):
        module = importlib.import_module(f"featurelens.metrics.{family}")
        assert module.__all__, family
        for name in module.__all__:
            assert getattr(fl.metrics, name) is getattr(module, name), (family, name)
        names += module.__all__
    assert sorted(names + list(fl.metrics._spec.__all__)) == sorted(fl.metrics.__all__)


def test_list_metrics_by_family_and_spec_by_name():
    specs = list_metrics()
    assert len({s.name for s in specs}) == len(specs)
    ranks = [FAMILIES.index(s.family) for s in specs]
    assert ranks == sorted(ranks)  # by family, declaration order within one
    for family in FAMILIES:
        assert list_metrics(family) == [s for s in specs if s.family == family]
    assert [s.name for s in list_metrics("complexity")] == ["sparseness", "complexity", "effective_complexity"]
    assert spec("deletion").function is fl.metrics.deletion_curve
    assert spec("deletion_curve") is spec("deletion")  # the function's name finds it too
    assert spec("road").direction == -1 and spec("road").requires == {"model", "images"}
    with pytest.raises(ValueError, match=r"name: unknown metric 'roads'; known metrics: deletion, insertion, .*road"):
        spec("roads")
    with pytest.raises(TypeError, match="name must be a metric name"):
        spec(3)
    with pytest.raises(ValueError, match="family must be None or one of faithfulness, robustness"):
        list_metrics("faithful")


def test_every_spec_is_complete():
    for s in list_metrics():
        assert s.direction in (-1, 0, 1)
        assert s.requires <= set(REQUIREMENTS)
        assert "better" in s.reason, s.name  # what it measures and which direction is better
        assert callable(s.score), s.name
        assert s.reexplains <= ("explainer" in s.requires), s.name
        assert (s.direction == 0) == (s.family == "complexity"), s.name
        if s.audited:
            assert s.label
        for other in s.computed_with:
            assert spec(other).computed_with and s.name in spec(other).computed_with


def test_metric_spec_refuses_bad_declarations():
    fn = fl.metrics.sparseness
    with pytest.raises(ValueError, match="family must be one of"):
        MetricSpec("m", fn, "faithful", 1, "better")
    with pytest.raises(ValueError, match="direction must be"):
        MetricSpec("m", fn, "complexity", 2, "better")
    with pytest.raises(ValueError, match=r"unknown requirement\(s\) \['gpu'\]"):
        MetricSpec("m", fn, "complexity", 0, "better", requires={"gpu"})
    with pytest.raises(ValueError, match="an audit column needs score= and label="):
        MetricSpec("m", fn, "complexity", 0, "better", column="m")
    with pytest.raises(TypeError, match="function must be callable"):
        MetricSpec("m", None, "complexity", 0, "better")
    with pytest.raises(ValueError, match="name must be an identifier"):
        MetricSpec("a b", fn, "complexity", 0, "better")


def test_the_audit_reads_the_tables_it_had_before_the_specs():
    # The audit's metric order, default set and columns (label, direction) as its hand-written
    # tables held them before they moved into the specs: report text, columns and order unchanged.
    from featurelens._audit import scoring

    assert list(scoring.audit_specs()) == [
        "deletion", "insertion", "faithfulness_correlation", "road", "irof", "selectivity", "region_perturbation",
        "sensitivity_n", "monotonicity", "monotonicity_correlation", "sufficiency", "avg_sensitivity",
        "max_sensitivity", "continuity", "consistency", "relative_input_stability", "relative_output_stability",
        "model_randomization", "efficient_mprt", "smooth_mprt", "random_logit", "sparseness", "complexity",
        "effective_complexity", "completeness", "relevance_mass", "relevance_rank_accuracy", "precision_at_k"]
    assert scoring.default_metrics() == (
        "deletion", "insertion", "faithfulness_correlation", "avg_sensitivity", "max_sensitivity", "sparseness",
        "complexity", "model_randomization", "relevance_mass", "relevance_rank_accuracy", "precision_at_k")
    assert scoring.audit_columns() == (
        ("insertion_minus_deletion", "ins - del", +1), ("deletion_auc", "deletion AUC", -1),
        ("insertion_auc", "insertion AUC", +1), ("faithfulness_correlation", "faithf. corr.", +1),
        ("avg_sensitivity", "avg sens.", -1), ("max_sensitivity", "max sens.", -1), ("sparseness", "sparseness", 0),
        ("complexity", "complexity", 0), ("randomization_similarity", "random. sim.", -1),
        ("relevance_mass", "rel. mass", +1), ("relevance_rank_accuracy", "rank acc.", +1),
        ("precision_at_k", "prec@k", +1), ("road", "ROAD", -1), ("irof", "IROF", +1),
        ("selectivity", "selectivity", -1), ("region_perturbation", "AOPC", +1), ("sensitivity_n", "sens.-n", +1),
        ("monotonicity", "monoton.", +1), ("monotonicity_correlation", "monot. corr.", +1),
        ("sufficiency", "sufficiency", +1), ("continuity", "continuity", -1), ("consistency", "consistency", +1),
        ("relative_input_stability", "RIS", -1), ("relative_output_stability", "ROS", -1),
        ("efficient_mprt", "eMPRT", +1), ("smooth_mprt", "sMPRT sim.", -1), ("random_logit", "random logit", -1),
        ("effective_complexity", "eff. compl.", 0), ("completeness", "|compl. gap|", -1))


def test_the_benchmark_reads_its_metrics_from_the_specs():
    from featurelens.groundtruth import methods

    got = {k: (s.function, s.benchmark[1]) for k, s in methods.benchmark_metrics().items()}
    assert got == {"precision": (fl.metrics.precision_at_k, "precision"), "iou": (fl.metrics.iou_at_k, "IoU"),
                   "emd": (fl.metrics.emd_score, "EMD")}
    values, masks = maps((3, 1, 8, 8)), MASKS[:3]
    scores = methods.score_maps(values, masks, pool=2)
    np.testing.assert_array_equal(scores["precision"], fl.metrics.precision_at_k(values, masks))
    np.testing.assert_array_equal(scores["emd"], fl.metrics.emd_score(values, masks, pool=2))


# ------------------------------------------------------------------------------------------------
# the contract, per metric


@pytest.mark.parametrize("name", NAMES)
def test_rows_per_call_within_batch_size_and_model_untouched(name):
    s = spec(name)
    net = make_cnn().train()  # train mode: the metrics evaluate in eval mode and must restore it
    before = snapshot(net)
    rows = []
    net.register_forward_pre_hook(lambda mod, inp: rows.append(inp[0].shape[0]))
    ctx = context(name, net)
    explained = []
    real = ctx.explainer.explain
    ctx.explainer.explain = lambda *args, **kw: explained.append(1) or real(*args, **kw)
    out = np.asarray(s.score(ctx), dtype=np.float64)
    assert out.shape == (N,), f"{name} returned shape {out.shape}, not one value per sample"
    if calls_model(s):
        assert rows, f"{name} declares it needs a model or an explainer, and called neither"
        assert max(rows) <= BATCH_SIZE, f"{name} sent {max(rows)} rows in one call (batch_size={BATCH_SIZE})"
    else:
        assert not rows, f"{name} called the model; its spec should require 'model'"
    if s.reexplains and "parameters" in s.requires and not explained:
        pass  # it re-explains randomised copies with explainers built by name (explainer_name)
    else:
        assert bool(explained) == s.reexplains, f"{name}: reexplains={s.reexplains}, explained {len(explained)} times"
    assert ctx.model.batch_size == BATCH_SIZE and ctx.explainer.model.batch_size == BATCH_SIZE
    state, flags, modes = before
    after_state, after_flags, after_modes = snapshot(net)
    assert after_flags == flags and after_modes == modes
    for key, value in state.items():
        assert torch.equal(after_state[key], value), f"{name} changed {key}"


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_value_int_or_generator(name):
    s = spec(name)
    net = make_cnn().eval()

    def run(seed):
        return np.asarray(s.score(context(name, net, seed=seed)), dtype=np.float64)

    np.testing.assert_array_equal(run(3), run(3))
    np.testing.assert_array_equal(run(np.random.default_rng(3)), run(np.random.default_rng(3)))


@pytest.mark.parametrize("name", NAMES)
def test_nan_maps_are_refused(name):
    s = spec(name)
    net = make_cnn().eval()
    if name in EXPLAIN_THEMSELVES:
        # the model (and so every explainer built on it, by name or given) has NaN gradients; the
        # refusal names the metric and the explainer
        ctx = context(name, _NanGradient(net))
        match = rf"{name}: the explainer 'saliency' returned maps holding NaN"
    else:
        ctx = context(name, net)
        a = ctx.a.copy()
        a[0].flat[5] = np.nan
        ctx.a = ctx.raw = a
        match = "NaN"
    with pytest.raises(ValueError, match=match):
        s.score(ctx)


@pytest.mark.parametrize("name", [s.name for s in list_metrics() if s.reexplains])
def test_nan_maps_of_the_explainer_are_refused_by_every_metric_that_reexplains(name):
    # the maps of the clean inputs are given and finite; those the metric explains itself are NaN
    # (the noisy, translated, shifted or randomised inputs), and are refused all the same
    net = make_cnn().eval()
    ctx = context(name, _NanGradient(net))
    ctx.raw = ctx.a
    with pytest.raises(ValueError, match=r"the explainer 'saliency' returned maps holding NaN or inf values"):
        spec(name).score(ctx)


@pytest.mark.parametrize("name", [s.name for s in list_metrics() if calls_model(s)])
def test_nan_model_outputs_are_refused(name):
    net = _NanOutput(make_cnn().eval())
    with pytest.raises(ValueError, match="NaN"):
        spec(name).score(context(name, net))


# ------------------------------------------------------------------------------------------------
# the declared direction on a planted case


def planted_linear() -> torch.nn.Module:
    """f_k(x) = w_k . x + b_k with w_k >= 0 and zero on every other pixel (half of them do not
    matter): ``w_t * x`` are the exact contributions to f_t(x) - f_t(0)."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 3)).double()
    with torch.no_grad():
        net[1].weight.abs_()
        net[1].weight[:, ::2] = 0.0
    return net.eval()


def _x_monotone(net, x):
    """Positive inputs except one 2 x 2 region, whose (negative) contribution is the smallest in
    size: inserted least relevant first (one region per step), only a map that knows this puts it
    first, where the monotonicity check does not look (from the first insertion on)."""
    x = np.abs(x) + 0.5
    x[:, 0][:, PATCHES[0] == 0] = -0.01
    return x


#: Per family, the faithful and the random side of the planted case.
PLANTED = """
faithfulness, axiomatic (with a model): on planted_linear, the exact contributions w_t * x (the
    gradient w_t for infidelity, whose optimum it is; the gradient for sufficiency, identical maps
    within a class) against a random map with zeros; monotonicity on _x_monotone inputs.
robustness, randomisation, input_invariance (re-explaining): saliency on planted_linear (its map
    is the constant w_t: no change under noise or translation, and it changes with the weights)
    against the random explainer (seed=None under noise; seeded for randomisation, so its maps
    never change with the weights); input_invariance against input_x_gradient, which moves with
    the input (the random explainer ignores the input, so it is invariant too).
localisation: the mask plus small positive noise against a random map; focus: relevance on the
    target quadrants only.
A score of NaN is undefined (consistency, sufficiency: no other sample has a close map); the
faithful side must be finite, and an undefined random side counts as beaten.
"""


def planted_pair(name: str):
    s = spec(name)
    net = planted_linear()
    rng = np.random.default_rng(0)
    x = make_x()
    if name == "monotonicity":
        x = _x_monotone(net, x)
    t = net(torch.from_numpy(x)).argmax(1).numpy()
    w = net[1].weight.detach().numpy()[t].reshape(x.shape)
    random_map = rng.normal(size=x.shape) * (rng.random(x.shape) < 0.5)

    def ctx(a, ex_name="saliency", **params):
        ex = fl.explainer(ex_name, net, **params)
        if a is None:
            a = ex.explain(x, target=t).values
        return ScoreContext(model=fl.Model(net), x=x, a=a, target=t, explainer=ex, explainer_name=ex_name,
                            explainer_params=params, masks=MASKS, layer="1", layout=LAYOUT, baseline=0.0, seed=0,
                            steps=16, n_subsets=20, radius=0.1, n_noise=4, regions=PATCHES)

    if s.family == "localisation":
        if name == "focus":
            good = np.zeros((N, 1, 16, 16))
            good[:, :, :8, :] = 1.0 + rng.random((N, 1, 8, 16))
            return ctx(good), ctx(rng.normal(size=good.shape))
        return ctx(MASKS[:, None] + 0.1 * rng.random(x.shape)), ctx(random_map)
    if "explainer" in s.requires:
        if name == "input_invariance":
            return ctx(None), ctx(None, "input_x_gradient")
        seed = 0 if s.family == "randomisation" else None
        return ctx(None), ctx(None, "random", seed=seed)
    faithful = w if name in ("infidelity", "sufficiency") else w * x
    return ctx(faithful), ctx(random_map)


@pytest.mark.parametrize("name", [s.name for s in list_metrics() if s.direction != 0])
def test_declared_direction_holds_on_a_planted_case(name):
    s = spec(name)
    good_ctx, bad_ctx = planted_pair(name)
    good = np.asarray(s.score(good_ctx), dtype=np.float64)
    bad = np.asarray(s.score(bad_ctx), dtype=np.float64)
    assert np.isfinite(good).any(), f"{name}: the faithful side is undefined ({good})"
    g = np.nanmean(good)
    if np.isnan(bad).all():
        return  # undefined for the random side (see PLANTED)
    b = np.nanmean(bad)
    assert (g - b) * s.direction > 0, (
        f"{name} (direction {s.direction:+d}): faithful {g:.4g}, random {b:.4g}")


# ------------------------------------------------------------------------------------------------
# Quantus


@functools.lru_cache(maxsize=1)
def _parity_tests() -> dict:
    """``{test: source}`` (decorators included) of every test function under tests/ that names
    Quantus."""
    found = {}
    for path in TESTS.rglob("test_*.py"):
        if path.name == Path(__file__).name:
            continue
        text = path.read_text(encoding="utf-8")
        if "quantus" not in text:
            continue
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                found[f"{path.relative_to(TESTS)}::{node.name}"] = "\n".join(lines[first - 1:node.end_lineno])
    return found


@pytest.mark.parametrize("name", [s.name for s in list_metrics() if s.quantus])
def test_quantus_counterpart_exists_and_a_parity_test_compares_them(name):
    quantus = pytest.importorskip("quantus")
    s = spec(name)
    assert isinstance(getattr(quantus, s.quantus, None), type), f"quantus has no class {s.quantus}"
    fn = s.function.__name__
    backing = [test for test, src in _parity_tests().items()
               if re.search(rf"\b{s.quantus}\b", src) and re.search(rf"\b{fn}\b", src)]
    assert backing, f"{name}: no test under tests/ names both quantus's {s.quantus} and {fn}"


def test_a_copied_model_keeps_its_hooks_counted():
    # The row count above sees the randomised copies: deepcopy keeps the forward pre-hook.
    net = make_cnn()
    rows = []
    net.register_forward_pre_hook(lambda mod, inp: rows.append(inp[0].shape[0]))
    copy.deepcopy(net)(torch.zeros(2, *SHAPE, dtype=torch.float64))
    assert rows == [2]


def test_the_audit_skips_a_metric_whose_requirements_it_cannot_meet(monkeypatch):
    # A metric declared with a column but needing a layer (which the audit never chooses) is
    # skipped with the reason, not run and failed; the checks cover every requirement word.
    from featurelens._audit import scoring

    rrs = spec("relative_representation_stability")
    audited = MetricSpec(rrs.name, rrs.function, rrs.family, rrs.direction, rrs.reason, requires=rrs.requires,
                         reexplains=True, score=rrs.score, column="rrs", label="RRS")
    monkeypatch.setattr(scoring, "_SPECS", {**scoring.audit_specs(), audited.name: audited})
    why = scoring.skip_reasons([audited.name, "road"], (4, 1, 8, 8), 3, True, False, 2, True)
    assert why == {audited.name: "needs a layer of the model, which the audit does not choose"}
    checked = {req for req, _ in scoring._requirement_checks((4, 1, 8, 8), 3, True, True, 2, True)}
    assert checked == set(REQUIREMENTS) - {"model", "explainer"}  # those the audit always has
