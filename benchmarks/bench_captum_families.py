"""Captum's other attribution families, featurelens against Captum, side by side in one run.

The two CNNs of ``bench_gradients.py`` (imported from it, with its interleaved timing), a batch of
256 inputs and the predicted classes as targets; for each method:

- **featurelens** at its defaults (automatic chunks), given only what the method needs to run the
  same work as Captum: the 16 background rows (DeepLiftSHAP, GradientSHAP), the patch groups
  (feature ablation / permutation, LIME) and LIME's ``n_samples``;
- **Captum** at its defaults and, where it has internal batching, with a larger setting:
  ``perturbations_per_eval`` 1 (its default) and 16 for FeatureAblation and FeaturePermutation, 1
  and 200 (all samples of an input in one forward) for Lime. DeepLift, DeepLiftShap, GradientShap,
  GuidedBackprop, Deconvolution and LRP have no internal batching (one call on the whole batch).
  "Captum best" is the fastest setting;
- a **floor**: plain torch doing the same rows with the inputs prebuilt. Gradient methods: one
  forward/backward of the rows the method differentiates (the batch for DeepLift, guided backprop,
  deconvolution and LRP; batch x 16 background rows for DeepLiftSHAP; batch x 5 points on the
  segments for GradientSHAP), as one call and in chunks of featurelens' automatic size.
  Perturbation methods: forward passes only of batch x (players + 1) rows (ablation, permutation)
  or batch x (n_samples + 1) rows (LIME), in chunks of featurelens' forward size (one prebuilt
  chunk reused), plus one call where that is under 2**25 input elements. The floor leaves out
  the hooks, the surrogate fits and the bookkeeping, so it is a lower bound.

Every configuration is called once untimed (the first calls in a process pay one-off costs: lazy
imports, oneDNN primitives for new shapes; featurelens' first feature-ablation call on the 8x8 CNN
took seconds, its third 0.04 s), then timed by ``bench_gradients.time_interleaved``: one more
warm-up, then ``--repeats`` interleaved rounds, calls under 0.25 s repeated and averaged.

Settings: DeepLift and DeepLiftSHAP (Rescale rule) with the zero baseline / 16 background rows
drawn from N(0, 1); GradientSHAP with the same 16 rows, ``n_samples=5``, no noise; LRP with
Captum's default rules (epsilon on Conv/Linear/MaxPool; featurelens' default composite
``"epsilon"``). Captum's LRP has no rule for ``nn.Flatten``, so Captum runs on a view of the same
modules (shared weights) that flattens with ``Tensor.flatten`` instead; featurelens runs on the
model as built. Feature masks: 2x2 patches on 8x8 (16 players) and 4x4 patches on 32x32 (64
players, each covering the 3 channels); fill zero (both libraries' default). LIME: 200 samples;
each library's default surrogate and kernel (featurelens: ridge, alpha 1, cosine kernel of width
0.25 on the binary samples; Captum: Lasso alpha 0.01, cosine kernel of width 1 between the
inputs), so the two LIME values are not comparable, only their cost.

Values: max |featurelens - Captum| where both are deterministic and compute the same thing:
guided backprop, deconvolution, LRP, feature ablation, DeepLift and DeepLiftSHAP. For the DeepLift
pair both CNNs run Conv -> ReLU -> MaxPool, where Captum 0.9 loses its max-pool rule (see
tests/explainers/test_deeplift.py): featurelens' default differs from Captum there by design (it
keeps summation-to-delta, Captum does not), so the table gives the default's difference and, in
the "parity" column, the difference of featurelens with ``maxpool="gradient"`` (Captum's
effective rule; not timed) together with both libraries' largest summation-to-delta gap.
GradientSHAP, feature permutation and LIME draw random numbers differently in the two libraries
(their parity on the same draws is in the tests).

Layer and neuron methods, on the output of the second convolution (``model[3]`` of the 8x8 CNN,
4x5x5 per sample; ``model[2]`` of the 3x32x32 CNN, 16x32x32), zero baselines, each library's layer
class with the same settings: layer integrated gradients, layer conductance and neuron integrated
gradients with ``LAYER_STEPS`` (20) Gauss-Legendre steps, Captum at its default (all steps in one
pass) and ``internal_batch_size`` 1024 and 256 rows; layer gradient x activation, layer DeepLift,
layer DeepLiftSHAP (the 16 background rows) and neuron gradient have no internal batching. The
neurons: one unit of that layer, channel 1 at the centre. Their floors run plain torch on the
model split at the layer (``head = model[:k+1]``, ``tail = model[k+1:]``): layer methods, the head
without autograd on the input rows (batch; batch x 21 path points for conductance; batch x 16 for
DeepLiftSHAP) and the tail forward/backward to a leaf at the layer (layer IG: the tail alone on
the batch x 20 prebuilt layer-space path points); neuron methods, the head alone forward/backward
to the input (batch; batch x 20 path points). Both libraries run the whole model for every pass
(hooks on the layer), so these floors are lower bounds that the hook-based methods cannot reach
for the neuron methods (the tail) and layer IG (the head). One call only below 2**25 elements,
chunks of featurelens' automatic size otherwise. Values are compared with Captum's default for
all seven; layer DeepLift(SHAP) also with ``maxpool="gradient"`` as for DeepLift.

Usage: .venv/bin/python benchmarks/bench_captum_families.py [--repeats 5] [--quick] [--methods a,b]
``--quick``: batch 32, 1 repeat, prints only. Writes benchmarks/results/captum_families.md and
captum_families.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from _common import environment, load_average, write_results
from bench_gradients import (
    CAPTUM_CHUNKS,
    as_np,
    cnn8by8,
    cnn32,
    floor_gradient,
    max_diff,
    time_interleaved,
)

import featurelens as fl
from featurelens._batching import default_rows

try:
    import captum
    from captum.attr import (
        LRP,
        Deconvolution,
        DeepLift,
        DeepLiftShap,
        FeatureAblation,
        FeaturePermutation,
        GradientShap,
        GuidedBackprop,
        LayerConductance,
        LayerDeepLift,
        LayerDeepLiftShap,
        LayerGradientXActivation,
        LayerIntegratedGradients,
        Lime,
        NeuronGradient,
        NeuronIntegratedGradients,
    )
except ImportError:  # pragma: no cover - the benchmark needs the reference library
    sys.exit("bench_captum_families needs captum: .venv/bin/pip install -e '.[bench]'")

RESULTS = Path(__file__).resolve().parent / "results"
BATCH = 256
N_BACKGROUND = 16
GS_SAMPLES = 5
LIME_SAMPLES = 200
ABLATION_PPE = (1, 16)  # Captum's perturbations_per_eval tried for FeatureAblation / FeaturePermutation
LIME_PPE = (1, LIME_SAMPLES)  # ... and for Lime (it loops over the inputs, one surrogate each)
ONE_CALL_ELEMENTS = 2**25  # forward floors as a single call only below this many input elements
LAYER_STEPS = 20  # n_steps of the layer / neuron path methods (Gauss-Legendre in both libraries)
LAYER_METHODS = ("layer_integrated_gradients", "layer_gradient_x_activation", "layer_conductance", "layer_deeplift",
                 "layer_deeplift_shap", "neuron_gradient", "neuron_integrated_gradients")
METHODS = ("deeplift", "deeplift_shap", "gradient_shap", "guided_backprop", "deconvolution", "lrp",
           "feature_ablation", "feature_permutation", "lime") + LAYER_METHODS


# -- helpers ------------------------------------------------------------------------------------
class NoFlatten(torch.nn.Module):
    """The modules of a Sequential CNN, with ``nn.Flatten`` done by ``Tensor.flatten`` (Captum's LRP
    has no rule for ``nn.Flatten``). Shares the original's parameters."""

    def __init__(self, seq: torch.nn.Sequential):
        super().__init__()
        self.layers = torch.nn.ModuleList([m for m in seq if not isinstance(m, torch.nn.Flatten)])

    def forward(self, x):
        for m in self.layers:
            if isinstance(m, torch.nn.Linear) and x.dim() > 2:
                x = x.flatten(1)
            x = m(x)
        return x


def patch_groups(shape: tuple, patch: int) -> np.ndarray:
    """Player labels shaped like one input ``(C, H, W)``: square ``patch x patch`` patches, each
    covering every channel, numbered row-major."""
    c, h, w = shape
    rows, cols = np.arange(h)[:, None] // patch, np.arange(w)[None, :] // patch
    labels = rows * (w // patch) + cols
    return np.broadcast_to(labels, (c, h, w)).astype(np.int64).copy()


def floor_forward(model, row_shape: tuple, total: int, chunk: int | None, dtype=torch.float32):
    """Forward passes only over ``total`` rows shaped ``row_shape``, in chunks of ``chunk`` rows
    (None: one call); one prebuilt chunk of random rows is reused, so no time goes to building
    inputs."""
    size = total if chunk is None else min(chunk, total)
    block = torch.randn((size,) + tuple(row_shape), generator=torch.Generator().manual_seed(5), dtype=dtype)

    def run():
        with torch.no_grad():
            for s in range(0, total, size):
                model(block[: min(size, total - s)])

    return run


def forward_floors(model, row_shape, total):
    chunk = default_rows(int(np.prod(row_shape)), forward_only=True)
    floors = {}
    if total * int(np.prod(row_shape)) <= ONE_CALL_ELEMENTS:
        floors["one call"] = floor_forward(model, row_shape, total, None)
    if chunk < total:
        floors[f"chunks of {chunk}"] = floor_forward(model, row_shape, total, chunk)
    return floors


def gradient_floors(model, rows, target):
    chunk = default_rows(rows[0].numel())
    floors = {"one call": floor_gradient(model, rows, target, None)}
    if rows.shape[0] > chunk:
        floors[f"chunks of {chunk}"] = floor_gradient(model, rows, target, chunk)
    return floors


def captum_dl_gap(model, x, base, y, shap: bool, layer=None):
    """Captum's DeepLift(Shap) values (of ``layer``'s output when given) and its largest
    summation-to-delta gap."""
    if layer is None:
        method = (DeepLiftShap if shap else DeepLift)(model)
    else:
        method = (LayerDeepLiftShap if shap else LayerDeepLift)(model, layer)
    values, delta = method.attribute(x, baselines=base, target=y, return_convergence_delta=True)
    return values, float(delta.abs().max())


def second_conv(model: torch.nn.Sequential) -> tuple[int, str]:
    """Position and name of the second ``Conv2d`` of a Sequential CNN (the benchmark's middle layer)."""
    convs = [i for i, m in enumerate(model) if isinstance(m, torch.nn.Conv2d)]
    return convs[1], str(convs[1])


def floor_layer_gradient(head, tail, rows, target, chunk: int | None, at_layer: bool = False):
    """Gradients of the selected outputs w.r.t. the layer's output, on the model split at the layer
    (``head``: up to and including it, ``tail``: the rest): ``head`` without autograd on input rows
    (or, ``at_layer``, the rows are prebuilt layer outputs and ``head`` is skipped), then ``tail``
    forward and backward to a leaf at the layer, in one call or chunks of ``chunk`` rows."""
    size = rows.shape[0] if chunk is None else chunk

    def run():
        for s in range(0, rows.shape[0], size):
            with torch.no_grad():
                z = rows[s : s + size] if at_layer else head(rows[s : s + size])
            with torch.enable_grad():
                leaf = z.detach().requires_grad_(True)
                out = tail(leaf)
                torch.autograd.grad(out.gather(1, target[s : s + size, None]).sum(), leaf)

    return run


def floor_neuron_gradient(head, rows, unit: tuple, chunk: int | None):
    """Input gradients of one unit of the layer's output, through ``head`` only (the model up to and
    including the layer), in one call or chunks of ``chunk`` rows."""
    size = rows.shape[0] if chunk is None else chunk

    def run():
        with torch.enable_grad():
            for s in range(0, rows.shape[0], size):
                r = rows[s : s + size].detach().requires_grad_(True)
                z = head(r)
                torch.autograd.grad(z[(slice(None),) + unit].sum(), r)

    return run


def split_floors(make, rows, chunk):
    """``{"one call": make(None), "chunks of k": make(k)}``: one call only where ``rows`` has at
    most ``ONE_CALL_ELEMENTS`` elements, chunks only where there are more rows than ``chunk``."""
    floors = {}
    if rows.numel() <= ONE_CALL_ELEMENTS or rows.shape[0] <= chunk:
        floors["one call"] = make(None)
    if rows.shape[0] > chunk:
        floors[f"chunks of {chunk}"] = make(chunk)
    return floors


# -- the benchmark ------------------------------------------------------------------------------
def bench_model(label, model, x, repeats, patch, methods):
    model.eval()
    with torch.no_grad():
        y = model(x).argmax(1)
    n, row_shape = x.shape[0], tuple(x.shape[1:])
    gen = torch.Generator().manual_seed(1)
    bg = torch.randn((N_BACKGROUND,) + row_shape, generator=gen)
    groups = patch_groups(row_shape, patch)
    mask = torch.as_tensor(groups)[None]  # Captum's feature_mask, broadcast over the batch
    n_players = int(groups.max()) + 1
    view = NoFlatten(model).eval()
    spec = {}
    want = set(methods)

    spec["deeplift"] = {
        "featurelens": lambda: fl.explainer("deeplift", model).explain(x, target=y),
        "captum": {"default": lambda: DeepLift(model).attribute(x, target=y)},
        "floors": gradient_floors(model, x, y),
        "compare": True,
    }
    spec["deeplift_shap"] = {
        "featurelens": lambda: fl.explainer("deeplift_shap", model, background=bg).explain(x, target=y),
        "captum": {"default": lambda: DeepLiftShap(model).attribute(x, baselines=bg, target=y)},
        "floors": gradient_floors(model, x.repeat_interleave(N_BACKGROUND, 0), y.repeat_interleave(N_BACKGROUND)),
        "compare": True,
    }
    idx = torch.randint(0, N_BACKGROUND, (n * GS_SAMPLES,), generator=gen)
    alpha = torch.rand((n * GS_SAMPLES,) + (1,) * len(row_shape), generator=gen)
    xs = x.repeat_interleave(GS_SAMPLES, 0)
    spec["gradient_shap"] = {
        "featurelens": lambda: fl.explainer("gradient_shap", model, background=bg, n_samples=GS_SAMPLES)
        .explain(x, target=y),
        "captum": {"default": lambda: GradientShap(model).attribute(x, baselines=bg, n_samples=GS_SAMPLES,
                                                                    target=y)},
        "floors": gradient_floors(model, bg[idx] + alpha * (xs - bg[idx]), y.repeat_interleave(GS_SAMPLES)),
        "compare": False,
    }
    spec["guided_backprop"] = {
        "featurelens": lambda: fl.explainer("guided_backprop", model).explain(x, target=y),
        "captum": {"default": lambda: GuidedBackprop(model).attribute(x, target=y)},
        "floors": gradient_floors(model, x, y),
        "compare": True,
    }
    spec["deconvolution"] = {
        "featurelens": lambda: fl.explainer("deconvolution", model).explain(x, target=y),
        "captum": {"default": lambda: Deconvolution(model).attribute(x, target=y)},
        "floors": gradient_floors(model, x, y),
        "compare": True,
    }
    spec["lrp"] = {
        "featurelens": lambda: fl.explainer("lrp", model).explain(x, target=y),
        "captum": {"default": lambda: LRP(view).attribute(x, target=y)},
        "floors": gradient_floors(model, x, y),
        "compare": True,
    }
    spec["feature_ablation"] = {
        "featurelens": lambda: fl.explainer("feature_ablation", model, groups=groups).explain(x, target=y),
        "captum": {
            ("default" if k == 1 else f"perturbations_per_eval={k}"): (
                lambda k=k: FeatureAblation(model).attribute(x, target=y, feature_mask=mask,
                                                             perturbations_per_eval=k))
            for k in ABLATION_PPE
        },
        "floors": forward_floors(model, row_shape, n * (n_players + 1)),
        "compare": True,
    }
    spec["feature_permutation"] = {
        "featurelens": lambda: fl.explainer("feature_permutation", model, groups=groups).explain(x, target=y),
        "captum": {
            ("default" if k == 1 else f"perturbations_per_eval={k}"): (
                lambda k=k: FeaturePermutation(model).attribute(x, target=y, feature_mask=mask,
                                                                perturbations_per_eval=k))
            for k in ABLATION_PPE
        },
        "floors": forward_floors(model, row_shape, n * (n_players + 1)),
        "compare": False,
    }
    spec["lime"] = {
        "featurelens": lambda: fl.explainer("lime", model, groups=groups, n_samples=LIME_SAMPLES).explain(x, target=y),
        "captum": {
            ("default" if k == 1 else f"perturbations_per_eval={k}"): (
                lambda k=k: Lime(model).attribute(x, target=y, feature_mask=mask, n_samples=LIME_SAMPLES,
                                                  perturbations_per_eval=k))
            for k in LIME_PPE
        },
        "floors": forward_floors(model, row_shape, n * (LIME_SAMPLES + 1)),
        "compare": False,
    }

    # -- layer and neuron methods, on the second convolution's output --------------------------------
    k, lname = second_conv(model)
    layer, head, tail = model[k], model[: k + 1], model[k + 1 :]
    with torch.no_grad():
        z_x = head(x)
    unit = (1,) + tuple(d // 2 for d in z_x.shape[2:])  # one unit of the layer: channel 1, the centre
    chunk = default_rows(x[0].numel())  # featurelens' automatic chunk (its passes run the whole model)
    nodes = torch.as_tensor(0.5 * (1 + np.polynomial.legendre.leggauss(LAYER_STEPS)[0]), dtype=x.dtype)
    path_kw = {"n_steps": LAYER_STEPS, "method": "gausslegendre"}

    def path_settings(make):  # Captum's default (all steps in one pass) and internal_batch_size
        return {"default": make(None),
                **{f"internal_batch_size={r}": make(r) for r in CAPTUM_CHUNKS if r < n * LAYER_STEPS}}

    def layer_rows(rows):  # rows through head (no grad) and tail forward/backward to the layer
        t = y.repeat(rows.shape[0] // n)
        return split_floors(lambda c: floor_layer_gradient(head, tail, rows, t, c), rows, chunk)

    if "layer_integrated_gradients" in want:
        with torch.no_grad():  # the zero input's layer output is the path's start
            z_0 = head(torch.zeros_like(x[:1]))
        points = z_0 + (nodes.view(-1, *(1,) * z_x.dim()) * (z_x - z_0)[None]).flatten(0, 1)
        t = y.repeat(LAYER_STEPS)
        spec["layer_integrated_gradients"] = {
            "featurelens": lambda: fl.explainer("layer_integrated_gradients", model, layer=lname, **path_kw)
            .explain(x, target=y),
            "captum": path_settings(lambda r: lambda: LayerIntegratedGradients(model, layer).attribute(
                x, target=y, internal_batch_size=r, **path_kw)),
            "floors": split_floors(lambda c: floor_layer_gradient(head, tail, points, t, c, at_layer=True),
                                   points, chunk),
            "compare": True,
        }
    spec["layer_gradient_x_activation"] = {
        "featurelens": lambda: fl.explainer("layer_gradient_x_activation", model, layer=lname).explain(x, target=y),
        "captum": {"default": lambda: LayerGradientXActivation(model, layer).attribute(x, target=y)},
        "floors": layer_rows(x) if "layer_gradient_x_activation" in want else {},
        "compare": True,
    }
    if "layer_conductance" in want:
        c_nodes = torch.as_tensor(0.5 * (1 + np.polynomial.legendre.leggauss(LAYER_STEPS + 1)[0]), dtype=x.dtype)
        spec["layer_conductance"] = {
            "featurelens": lambda: fl.explainer("layer_conductance", model, layer=lname, **path_kw)
            .explain(x, target=y),
            "captum": path_settings(lambda r: lambda: LayerConductance(model, layer).attribute(
                x, target=y, internal_batch_size=r, **path_kw)),
            "floors": layer_rows((c_nodes.view(-1, *(1,) * x.dim()) * x[None]).flatten(0, 1)),
            "compare": True,
        }
    spec["layer_deeplift"] = {
        "featurelens": lambda: fl.explainer("layer_deeplift", model, layer=lname).explain(x, target=y),
        "captum": {"default": lambda: LayerDeepLift(model, layer).attribute(x, target=y)},
        "floors": layer_rows(x) if "layer_deeplift" in want else {},
        "compare": True,
    }
    spec["layer_deeplift_shap"] = {
        "featurelens": lambda: fl.explainer("layer_deeplift_shap", model, layer=lname, background=bg)
        .explain(x, target=y),
        "captum": {"default": lambda: LayerDeepLiftShap(model, layer).attribute(x, baselines=bg, target=y)},
        "floors": layer_rows(x.repeat(N_BACKGROUND, 1, 1, 1)) if "layer_deeplift_shap" in want else {},
        "compare": True,
    }
    spec["neuron_gradient"] = {
        "featurelens": lambda: fl.explainer("neuron_gradient", model, layer=lname, neuron=unit).explain(x),
        "captum": {"default": lambda: NeuronGradient(model, layer).attribute(x, neuron_selector=unit)},
        "floors": split_floors(lambda c: floor_neuron_gradient(head, x, unit, c), x, chunk),
        "compare": True,
    }
    if "neuron_integrated_gradients" in want:
        ipoints = (nodes.view(-1, *(1,) * x.dim()) * x[None]).flatten(0, 1)
        spec["neuron_integrated_gradients"] = {
            "featurelens": lambda: fl.explainer("neuron_integrated_gradients", model, layer=lname, neuron=unit,
                                                **path_kw).explain(x),
            "captum": path_settings(lambda r: lambda: NeuronIntegratedGradients(model, layer).attribute(
                x, neuron_selector=unit, internal_batch_size=r, **path_kw)),
            "floors": split_floors(lambda c: floor_neuron_gradient(head, ipoints, unit, c), ipoints, chunk),
            "compare": True,
        }
    layer_note = {"layer": lname, "layer_module": repr(layer), "layer_shape": list(z_x.shape[1:]),
                  "neuron": list(unit)}

    rows_out = []
    for name in methods:
        s = spec[name]
        configs = {"featurelens": s["featurelens"]}
        configs.update({f"captum {k}": fn for k, fn in s["captum"].items()})
        configs.update({f"floor {k}": fn for k, fn in s["floors"].items()})
        print(f"  {label} / {name}: {len(configs)} configurations x (2 warm-up calls + {repeats})", flush=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for fn in configs.values():  # an extra untimed call: first calls pay one-off costs
                fn()
            res = time_interleaved(configs, repeats)
            med = {k: statistics.median(v) for k, v in res["times"].items()}
            captum_cfgs = {k[len("captum "):]: med[k] for k in med if k.startswith("captum ")}
            best_cfg = min(captum_cfgs, key=captum_cfgs.get)
            floor_cfgs = {k[len("floor "):]: med[k] for k in med if k.startswith("floor ")}
            best_floor = min(floor_cfgs, key=floor_cfgs.get)
            ours, theirs = res["last"]["featurelens"], res["last"]["captum default"]
            row = {
                "model": label,
                "method": name,
                "featurelens_s": med["featurelens"],
                "captum_default_s": captum_cfgs["default"],
                "captum_best_s": captum_cfgs[best_cfg],
                "captum_best_setting": best_cfg,
                "captum_s_by_setting": captum_cfgs,
                "floor_s_by_setting": floor_cfgs,
                "floor_best_s": floor_cfgs[best_floor],
                "floor_best_setting": best_floor,
                "ratio_vs_captum_best": med["featurelens"] / captum_cfgs[best_cfg],
                "ratio_vs_captum_default": med["featurelens"] / captum_cfgs["default"],
                "ratio_vs_floor_best": med["featurelens"] / floor_cfgs[best_floor],
                "max_abs_diff": max_diff(ours, theirs) if s["compare"] else None,
                "max_abs_value": float(np.abs(as_np(theirs)).max()) if s["compare"] else None,
                "parity": None,
                "all_times_s": res["times"],
                "calls_per_sample": res["calls_per_sample"],
                "rounds": res["rounds"],
                "meets_target": med["featurelens"] <= captum_cfgs[best_cfg],
            }
            if name in LAYER_METHODS:
                row.update(layer_note)
            if name in ("deeplift", "deeplift_shap", "layer_deeplift", "layer_deeplift_shap"):
                # Captum's effective max-pool rule (untimed)
                shap = name.endswith("_shap")
                on_layer = name.startswith("layer_")
                kw = {"background": bg} if shap else {}
                if on_layer:
                    kw["layer"] = lname
                base = bg if shap else torch.zeros_like(x)
                grad_rule = fl.explainer(name, model, maxpool="gradient", **kw).explain(x, target=y)
                _, captum_gap = captum_dl_gap(model, x, base, y, shap, layer if on_layer else None)
                row["parity"] = {
                    "maxpool_gradient_max_abs_diff": max_diff(grad_rule, theirs),
                    "featurelens_max_abs_gap": float(ours.params["max_abs_gap"]),
                    "captum_max_abs_gap": captum_gap,
                }
        note = "" if row["max_abs_diff"] is None else f"  max diff {row['max_abs_diff']:.2e}"
        if row["parity"]:
            note += f" (maxpool='gradient': {row['parity']['maxpool_gradient_max_abs_diff']:.2e})"
        print(
            f"    featurelens {row['featurelens_s']:.4f}s  Captum best {row['captum_best_s']:.4f}s ({best_cfg})  "
            f"ratio {row['ratio_vs_captum_best']:.2f}  floor {row['floor_best_s']:.4f}s ({best_floor}){note}",
            flush=True,
        )
        rows_out.append(row)
    return rows_out


def markdown(rows: list[dict], env: dict, meta: dict) -> str:
    lines = [
        "# Captum's other attribution families: featurelens vs Captum",
        "",
        (f"torch {env['torch']}, Captum {env['captum']}, featurelens {env['featurelens']}, Python {env['python']}; "
        f"{env['threads']} torch threads on {env['cpu']} ({env['logical_cpus']} logical CPUs). "
        f"Batch {meta['batch']}, predicted classes as targets; DeepLiftSHAP / GradientSHAP with {N_BACKGROUND} "
        f"background rows (GradientSHAP {GS_SAMPLES} samples, no noise); feature masks of 2x2 patches on 8x8 and "
        f"4x4 patches on 32x32, fill 0; LIME {LIME_SAMPLES} samples per input; layer and neuron methods on the "
        f"second convolution's output, zero baselines, {LAYER_STEPS} Gauss-Legendre steps for the path methods, "
        f"the neuron channel 1 at the layer's centre. Median of {meta['repeats']} "
        "interleaved repeats (3 for methods slower than 1 s per call) after two warm-up calls (calls under 0.25 s "
        f"repeated and averaged within each repeat); load average {meta['load_before']} before, "
        f"{meta['load_after']} after; total {meta['seconds']:.0f} s."),
        "",
        ("| model | method | featurelens s | Captum default s | Captum best s (setting) | featurelens / Captum best "
        "| floor s (setting) | featurelens / floor | max abs diff (max abs value) | parity | at or below Captum |"),
        "|---|---|---:|---:|---|---:|---|---:|---|---|:-:|",
    ]
    for r in rows:
        diff = "-" if r["max_abs_diff"] is None else f"{r['max_abs_diff']:.1e} ({r['max_abs_value']:.1e})"
        p = r["parity"]
        parity = "-" if not p else (f"maxpool='gradient' {p['maxpool_gradient_max_abs_diff']:.1e}; gap "
                                    f"{p['featurelens_max_abs_gap']:.1e} vs Captum {p['captum_max_abs_gap']:.1e}")
        lines.append(
            f"| {r['model']} | {r['method']} | {r['featurelens_s']:.4f} | {r['captum_default_s']:.4f} "
            f"| {r['captum_best_s']:.4f} ({r['captum_best_setting']}) | {r['ratio_vs_captum_best']:.2f} "
            f"| {r['floor_best_s']:.4f} ({r['floor_best_setting']}) | {r['ratio_vs_floor_best']:.2f} "
            f"| {diff} | {parity} | {'yes' if r['meets_target'] else 'NO'} |"
        )
    lines += [
        "",
        ("Captum best: the fastest of Captum's default and its internal batching (`perturbations_per_eval` "
        f"{ABLATION_PPE[1]} for FeatureAblation / FeaturePermutation, {LIME_PPE[1]} for Lime, "
        f"`internal_batch_size` {' and '.join(map(str, CAPTUM_CHUNKS))} for LayerIntegratedGradients, "
        "LayerConductance and NeuronIntegratedGradients); the other methods have none. Floor: plain torch over the same model rows with the inputs prebuilt (see the "
        "script's docstring); it leaves out hooks, surrogate fits and bookkeeping. Max abs diff: against "
        "Captum's default output, for the deterministic methods computing the same values (GradientSHAP, "
        "feature permutation and LIME draw differently). DeepLift on Conv -> ReLU -> MaxPool: Captum 0.9 loses "
        "its max-pool rule there, featurelens does not (its summation-to-delta gap is ~0), so the parity column "
        "gives featurelens with `maxpool=\"gradient\"` (Captum's effective rule) against Captum, and both "
        "libraries' largest summation-to-delta gap. Captum's LRP runs on the same modules with `nn.Flatten` "
        "replaced by `Tensor.flatten` (it has no rule for `nn.Flatten`). Layer and neuron floors: plain torch on "
        "the model split at the layer (layer methods: head without autograd, tail forward/backward to the layer; "
        "layer IG: the tail on prebuilt layer-space path points; neuron methods: the head forward/backward to the "
        "input), lower bounds that methods hooking the whole model cannot reach."),
        "",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds after the warm-up (default 5)")
    parser.add_argument("--quick", action="store_true", help="small run: batch 32, 1 repeat, prints only")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated subset of " + ",".join(METHODS))
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    args = parser.parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        parser.error(f"--methods: unknown {unknown}; choose from {', '.join(METHODS)}")

    torch.set_num_threads(2)
    batch, repeats = (32, 1) if args.quick else (BATCH, args.repeats)
    env = environment(captum=captum.__version__)
    print(f"torch {env['torch']}, captum {env['captum']}, {env['threads']} threads, {env['cpu']}", flush=True)
    load_before = load_average()
    start = time.perf_counter()
    gen = torch.Generator().manual_seed(0)
    rows = []
    torch.manual_seed(0)
    rows += bench_model("CNN8by8 1x8x8", cnn8by8(), torch.randn(batch, 1, 8, 8, generator=gen), repeats, 2, methods)
    torch.manual_seed(0)
    rows += bench_model("CNN 3x32x32", cnn32(), torch.randn(batch, 3, 32, 32, generator=gen), repeats, 4, methods)
    meta = {"repeats": repeats, "load_before": load_before, "load_after": load_average(),
            "seconds": time.perf_counter() - start, "batch": batch, "methods": methods}
    table = markdown(rows, env, meta)
    print()
    print(table)
    if not args.quick:
        write_results(args.out, "captum_families", table, {"environment": env, "run": meta, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
