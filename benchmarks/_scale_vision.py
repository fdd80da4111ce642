"""bench_scale's vision section: torchvision's ResNet-18, ResNet-50 and ViT-B/16 at 224x224,
featurelens against Captum 0.9.

The architectures are torchvision's own (:func:`_torchvision.import_torchvision`), built with
``weights=None`` (random weights, nothing downloaded; ``torch.manual_seed(0)`` before each), in eval
mode, float32. The images are standard normal draws (seed 0). Targets: each image's predicted class.

Images and rows per model (stated in every row): ResNet-18, 8 images, every row below (KernelSHAP
on the first 2 images); ResNet-50, 2 images: saliency, integrated gradients, Grad-CAM, DeepLift;
ViT-B/16, 1 image: saliency and integrated gradients (a ViT-B/16 forward and backward pass costs
about ten ResNet-18 ones, and the run has two shared CPU cores). Timing: one warm-up call each,
then 5 alternating timed rounds for the one-pass methods (saliency, Grad-CAM, DeepLift) and 1 for
the others (``Settings``).

Rows (featurelens call / Captum call; both build their explainer inside the timed call):

- saliency: ``fl.explainer("saliency", m, abs=True)`` / ``Saliency(m)`` (its default ``abs=True``);
- integrated gradients, 32 steps, zero baseline, Gauss-Legendre (both defaults): Captum at its
  default ``internal_batch_size=None`` (all 32 x n path points in one batch);
- SmoothGrad, 16 samples, absolute noise std 0.15, the mean of the signed gradients:
  ``NoiseTunnel(Saliency(m))`` with ``abs=False``; values compared with Captum fed featurelens'
  noise draws (the two libraries draw differently; ``bench_gradients.noise_tunnel_fed``);
- Grad-CAM on ``layer4`` (ReLU, bilinear upsampling) / ``LayerGradCam`` + ``LayerAttribution.interpolate``;
- DeepLift (Rescale, zero baseline) on the network as torchvision ships it (one in-place ReLU
  module called several times per block): featurelens with ``maxpool="gradient"`` (Captum's
  handling of torchvision's ReLU -> MaxPool stem, see the ``deeplift`` docstring) / Captum on a
  ``torch.fx`` copy with a distinct, not in-place ReLU module per call site (Captum's hooks need
  distinct modules; on the shipped network its values are wrong);
- feature ablation on 64 segments (an 8x8 grid of 28 px cells, all channels together), zero fill /
  ``FeatureAblation`` with that ``feature_mask`` (its default ``perturbations_per_eval=1``);
- occlusion, a 3x56x56 window with stride 28 (49 positions), zero fill / ``Occlusion``;
- KernelSHAP on 196 players (16x16 patches, all channels together, an explicit label array as
  ``groups=``), 512 coalitions per image, zero fill / ``KernelShap`` with ``n_samples=512`` and
  ``perturbations_per_eval=64``. The two libraries draw different coalitions, so the values are
  compared with an exact property instead: the efficiency gap ``|sum(phi) - (f(x) - f(0))|``
  (featurelens imposes it; the row's ``max_abs_diff`` is featurelens' largest gap, Captum's is in
  ``peer_efficiency_gap``).

Peak memory: what a call allocates on top of what the process held when it started, read as
glibc's live malloc bytes (``mallinfo2``: in-use heap plus mmapped blocks; :class:`LivePeak`),
sampled every millisecond, the largest over the timed calls (and, beside the wall time, each
call's process CPU time, ``fl_cpu_s`` / ``peer_cpu_s`` / ``cpu_ratio``: on a loaded machine the
wall time also counts the time other work held the cores); the resident-set peak of
``_scale_common.time_alternating`` is kept beside it (``fl_peak_rss_mb``, ``peer_peak_rss_mb``),
but at these sizes it reads whatever glibc did not hand back from the previous call (from 0 to
80 MB for the same ResNet-18 saliency call).

The floor of each row is its model passes times one plain-torch pass of the same batch, both
measured here: ``t_fb`` (one forward + backward of the batch, input gradient of the summed target
outputs) and ``t_f`` (one forward, no gradients): saliency and Grad-CAM ``t_fb``; IG ``32 t_fb``;
SmoothGrad ``16 t_fb``; DeepLift ``t_fb + t_f`` (the baseline's forward); feature ablation
``65 t_f``; occlusion ``50 t_f``; KernelSHAP ``512 t_f`` on its 2 images.
"""

from __future__ import annotations

import copy
import ctypes
import threading
import time
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import torch
import torch.nn.functional as F

import featurelens as fl
from _scale_common import max_abs_diff, row, time_alternating

SECTION = "vision"
PEER = "Captum"
#: One model pass each: timed over more rounds (``Settings.cheap_repeats``).
CHEAP = ("saliency", "gradcam", "deeplift")
ALL_METHODS = ("saliency", "integrated_gradients", "smoothgrad", "gradcam", "deeplift", "feature_ablation",
               "occlusion", "kernel_shap")


@dataclass
class Settings:
    """The sizes of one run (the defaults are the published run's)."""

    ig_steps: int = 32
    sg_samples: int = 16
    sg_std: float = 0.15
    grid: int = 8            # feature ablation: grid x grid segments
    window: int = 56         # occlusion window (pixels) and its stride
    stride: int = 28
    patch: int = 16          # KernelSHAP players: patch x patch squares
    ks_budget: int = 512     # coalitions per image
    ks_images: int = 2       # images explained by KernelSHAP (the first ones of the batch)
    ks_ppe: int = 64         # Captum KernelShap perturbations_per_eval
    repeats: int = 1         # timed rounds after the warm-up
    cheap_repeats: int = 5   # timed rounds for the one-pass methods (CHEAP)
    rel_tol: float = 1e-4    # value tolerance, relative to the reference's largest magnitude


@dataclass
class Case:
    """One model and its batch: ``layer`` names Grad-CAM's layer (None: no Grad-CAM row)."""

    label: str
    model: torch.nn.Module
    x: torch.Tensor
    methods: tuple = ALL_METHODS
    layer: str | None = None
    note: str = ""
    extra: dict = field(default_factory=dict)


# -- live memory --------------------------------------------------------------------------------
def _mallinfo2():
    try:
        libc = ctypes.CDLL("libc.so.6")
        fn = libc.mallinfo2
    except (OSError, AttributeError):  # not glibc >= 2.33
        return None

    class Info(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                    "fsmblks", "uordblks", "fordblks", "keepcost")]

    fn.restype = Info
    return fn


_MALLINFO2 = _mallinfo2()


def live_mb() -> float | None:
    """The bytes the process holds allocated through malloc now (glibc ``mallinfo2``: in-use heap
    chunks plus mmapped blocks), in MB; None where glibc's ``mallinfo2`` is unavailable."""
    if _MALLINFO2 is None:
        return None
    info = _MALLINFO2()
    return (info.uordblks + info.hblkhd) / 2**20


class LivePeak:
    """Wrap a call so that each run records its peak of :func:`live_mb` above the value at its
    start (sampled every millisecond). Unlike the resident set, this does not hide a call's
    allocations in memory that glibc kept from an earlier call (blocks under its dynamic mmap
    threshold, up to 32 MiB, are reused, not returned to the OS), so calls of the same size do not
    read 0 MB one time and 80 MB the next. ``peak_mb``: the largest over the calls after the first
    (the warm-up). Also records each call's process CPU time (``cpu_s``: the least after the
    first), which other work on a shared machine disturbs less than the wall time."""

    def __init__(self, fn):
        self.fn, self.peaks, self.cpu = fn, [], []

    def __call__(self):
        cpu = time.process_time()
        try:
            return self._sampled()
        finally:
            self.cpu.append(time.process_time() - cpu)

    @property
    def cpu_s(self) -> float:
        """The least process CPU time (all threads) of the calls after the first."""
        return min(self.cpu[1:] or self.cpu)

    def _sampled(self):
        start = live_mb()
        if start is None:
            return self.fn()
        high, stop = [start], threading.Event()

        def watch():
            while not stop.is_set():
                high[0] = max(high[0], live_mb())
                time.sleep(0.001)

        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        try:
            return self.fn()
        finally:
            stop.set()
            thread.join()
            self.peaks.append(max(high[0], live_mb()) - start)

    @property
    def peak_mb(self) -> float | None:
        timed = self.peaks[1:] or self.peaks
        return max(timed) if timed else None


# -- groups -------------------------------------------------------------------------------------
def grid_groups(shape: tuple, cells: int) -> np.ndarray:
    """Integer labels for a (C, H, W) input: a ``cells x cells`` grid, all channels together."""
    c, h, w = shape
    rows = np.minimum(np.arange(h) * cells // h, cells - 1)
    cols = np.minimum(np.arange(w) * cells // w, cells - 1)
    return np.broadcast_to((rows[:, None] * cells + cols[None, :])[None], (c, h, w)).astype(np.int64).copy()


def patch_groups(shape: tuple, patch: int) -> np.ndarray:
    """Integer labels for a (C, H, W) input: ``patch x patch`` squares, all channels together."""
    c, h, w = shape
    per_row = -(-w // patch)
    labels = (np.arange(h)[:, None] // patch) * per_row + np.arange(w)[None, :] // patch
    return np.broadcast_to(labels[None], (c, h, w)).astype(np.int64).copy()


# -- a copy with distinct ReLU modules, for Captum's DeepLift ------------------------------------
_FUNCTIONAL_RELU = {F.relu, torch.relu, torch.relu_}


def distinct_relus(net: torch.nn.Module) -> torch.nn.Module:
    """The same network (deep-copied weights) traced with ``torch.fx``, every ReLU call site given
    a ReLU module of its own, not in place (what Captum's DeepLift needs)."""
    gm = torch.fx.symbolic_trace(copy.deepcopy(net))
    count = 0
    for node in list(gm.graph.nodes):
        shared = node.op == "call_module" and isinstance(gm.get_submodule(node.target), torch.nn.ReLU)
        functional = (node.op == "call_function" and node.target in _FUNCTIONAL_RELU) or (
            node.op == "call_method" and node.target in ("relu", "relu_"))
        if shared or functional:
            name = f"distinct_relu_{count}"
            count += 1
            gm.add_submodule(name, torch.nn.ReLU())
            with gm.graph.inserting_after(node):
                new = gm.graph.call_module(name, (node.args[0],))
            node.replace_all_uses_with(new)
            gm.graph.erase_node(node)
    gm.graph.lint()
    gm.recompile()
    return gm.eval()


# -- the cases ----------------------------------------------------------------------------------
def _torchvision_case(tv, arch: str, label: str, n: int, methods: tuple, layer: str | None) -> Case:
    torch.manual_seed(0)
    model = getattr(tv.models, arch)(weights=None).eval()
    note = f"torchvision {arch}, weights=None (random, seed 0)"
    head = getattr(getattr(model, "heads", None), "head", None)
    if isinstance(head, torch.nn.Linear):
        # torchvision's ViT starts its classification head at zero: every output, and every
        # attribution, would be 0 and the value check empty. A random head as any other layer.
        with torch.no_grad():
            head.weight.normal_(0.0, head.in_features ** -0.5)
        note += "; classification head re-drawn from N(0, 1/768) (torchvision initialises it to zero)"
    x = torch.randn(n, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    return Case(f"{label} ({n} x 3x224x224)", model, x, methods, layer, note=note)


def cases(quick: bool) -> list[Case]:
    """The published cases, or (``quick``) ResNet-18 alone on 2 images with its cheap rows."""
    from _torchvision import import_torchvision

    tv = import_torchvision()
    if quick:
        return [_torchvision_case(tv, "resnet18", "ResNet-18", 2, ("saliency", "gradcam", "deeplift"), "layer4")]
    return [
        _torchvision_case(tv, "resnet18", "ResNet-18", 8, ALL_METHODS, "layer4"),
        _torchvision_case(tv, "resnet50", "ResNet-50", 2, ("saliency", "integrated_gradients", "gradcam", "deeplift"),
                          "layer4"),
        _torchvision_case(tv, "vit_b_16", "ViT-B/16", 1, ("saliency", "integrated_gradients"), None),
    ]


# -- one case -----------------------------------------------------------------------------------
def _floor_passes(model, x, y):
    """Plain torch: one forward + backward of the batch (input gradient), one forward."""

    def fwd_bwd():
        r = x.detach().requires_grad_(True)
        with torch.enable_grad():
            out = model(r)
            return torch.autograd.grad(out.gather(1, y[:, None]).sum(), r)[0]

    def fwd():
        with torch.no_grad():
            return model(x)

    return fwd_bwd, fwd


def bench_case(case: Case, settings: Settings = Settings(), log=print, save=None) -> list[dict]:
    """The rows of one case: each method timed against Captum, its values compared, its floor."""
    from captum.attr import (
        DeepLift,
        FeatureAblation,
        IntegratedGradients,
        KernelShap,
        LayerAttribution,
        LayerGradCam,
        NoiseTunnel,
        Occlusion,
        Saliency,
    )
    from bench_gradients import noise_tunnel_fed

    s = settings
    model, x = case.model, case.x
    n, shape = x.shape[0], tuple(x.shape[1:])
    with torch.no_grad():
        y = model(x).argmax(1)
    k = min(s.ks_images, n)
    xk, yk = x[:k], y[:k]

    fb, f = _floor_passes(model, x, y)
    fb_k, f_k = _floor_passes(model, xk, yk)
    base = time_alternating({"fb": fb, "f": f, "f_k": f_k}, repeats=max(s.repeats, s.cheap_repeats))["best_s"]
    t_fb, t_f, t_fk = base["fb"], base["f"], base["f_k"]

    images = f"{n} image{'s' if n > 1 else ''}"
    specs = {}
    specs["saliency"] = dict(
        fl=lambda: fl.explainer("saliency", model, abs=True).explain(x, target=y).values,
        peer=lambda: Saliency(model).attribute(x, target=y),
        floor=(t_fb, f"1 x fwd+bwd of {images}"), settings="abs=True (Captum's default)")
    specs["integrated_gradients"] = dict(
        fl=lambda: fl.explainer("integrated_gradients", model, n_steps=s.ig_steps).explain(x, target=y).values,
        peer=lambda: IntegratedGradients(model).attribute(x, target=y, n_steps=s.ig_steps),
        floor=(s.ig_steps * t_fb, f"{s.ig_steps} x fwd+bwd of {images}"),
        settings=f"{s.ig_steps} steps, Gauss-Legendre, zero baseline; Captum internal_batch_size=None (default)")

    def sg():
        return fl.explainer("smoothgrad", model, n_samples=s.sg_samples, noise="absolute",
                            noise_level=s.sg_std, seed=0)

    def captum_sg():
        return NoiseTunnel(Saliency(model)).attribute(x, nt_type="smoothgrad", nt_samples=s.sg_samples,
                                                      stdevs=s.sg_std, target=y, abs=False)

    def sg_reference():  # Captum's NoiseTunnel on featurelens' own noise draws (not timed)
        with noise_tunnel_fed(sg().noise_draws(x)) as used:
            ref = captum_sg()
        assert used["copies"] == s.sg_samples
        return ref

    specs["smoothgrad"] = dict(
        fl=lambda: sg().explain(x, target=y).values, peer=captum_sg, reference=sg_reference,
        floor=(s.sg_samples * t_fb, f"{s.sg_samples} x fwd+bwd of {images}"),
        settings=f"{s.sg_samples} samples, absolute noise std {s.sg_std}; values vs Captum fed featurelens' noise")
    if case.layer is not None:
        layer = dict(model.named_modules())[case.layer]
        specs["gradcam"] = dict(
            fl=lambda: fl.explainer("gradcam", model, layer=case.layer).explain(x, target=y).values,
            peer=lambda: LayerAttribution.interpolate(
                LayerGradCam(model, layer).attribute(x, target=y, relu_attributions=True), shape[1:],
                interpolate_mode="bilinear"),
            floor=(t_fb, f"1 x fwd+bwd of {images}"), settings=f"layer {case.layer}, ReLU, bilinear")
        if "deeplift" in case.methods:
            distinct = distinct_relus(model)
            specs["deeplift"] = dict(
                fl=lambda: fl.explainer("deeplift", model, maxpool="gradient").explain(x, target=y).values,
                peer=lambda: DeepLift(distinct).attribute(x, target=y),
                floor=(t_fb + t_f, f"1 x fwd+bwd + 1 x fwd of {images}"),
                settings="Rescale, zero baseline; featurelens on the network as shipped (maxpool='gradient'), "
                         "Captum on a torch.fx copy with distinct, not in-place ReLU modules")
    grid = grid_groups(shape, s.grid)
    specs["feature_ablation"] = dict(
        fl=lambda: fl.explainer("feature_ablation", model, groups=grid).explain(x, target=y).values,
        peer=lambda: FeatureAblation(model).attribute(x, target=y, feature_mask=torch.as_tensor(grid)[None]),
        floor=((s.grid**2 + 1) * t_f, f"{s.grid**2 + 1} x fwd of {images}"),
        settings=f"{s.grid**2} segments ({s.grid}x{s.grid} grid), zero fill; Captum perturbations_per_eval=1 (default)")
    win, st = (shape[0], s.window, s.window), (shape[0], s.stride, s.stride)
    positions = ((shape[1] - s.window) // s.stride + 1) * ((shape[2] - s.window) // s.stride + 1)
    specs["occlusion"] = dict(
        fl=lambda: fl.explainer("occlusion", model, window=win, strides=st).explain(x, target=y).values,
        peer=lambda: Occlusion(model).attribute(x, sliding_window_shapes=win, strides=st, target=y),
        floor=((positions + 1) * t_f, f"{positions + 1} x fwd of {images}"),
        settings=f"window {s.window}, stride {s.stride} ({positions} positions), zero fill; Captum "
                 "perturbations_per_eval=1 (default)")
    patches = patch_groups(shape, s.patch)
    n_players = int(patches.max()) + 1
    ks_state = {}

    def fl_ks():
        e = fl.explainer("kernel_shap", model, groups=patches, budget=s.ks_budget, seed=0).explain(xk, target=yk)
        ks_state["fl"] = e
        return e.values

    specs["kernel_shap"] = dict(
        fl=fl_ks,
        peer=lambda: KernelShap(model).attribute(xk, target=yk, feature_mask=torch.as_tensor(patches)[None],
                                                 n_samples=s.ks_budget, perturbations_per_eval=s.ks_ppe),
        floor=(s.ks_budget * t_fk, f"{s.ks_budget} x fwd of {k} image{'s' if k > 1 else ''}"),
        settings=f"{n_players} patches of {s.patch}x{s.patch}, {s.ks_budget} coalitions per image on the first {k} "
                 f"image(s), zero fill; Captum perturbations_per_eval={s.ks_ppe}; different coalitions, so "
                 "max_abs_diff is featurelens' efficiency gap")

    rows = []
    for method in case.methods:
        if method not in specs:
            continue
        log(f"  {case.label} / {method}", flush=True)
        try:
            rows.append(_measure(case, method, specs[method], s, k, xk, yk, patches, n_players, ks_state, log))
            if save is not None:
                save(rows[-1])
        except Exception:  # noqa: BLE001 - one method's failure (memory, a peer's error) keeps the others
            import traceback

            log(traceback.format_exc(), flush=True)
    return rows


def _measure(case, method, spec, s, k, xk, yk, patches, n_players, ks_state, log) -> dict:
    """Time, compare and record one method of one case (see :func:`bench_case`)."""
    model = case.model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        repeats = max(s.repeats, s.cheap_repeats) if method in CHEAP else s.repeats
        ours_fn, theirs_fn = LivePeak(spec["fl"]), LivePeak(spec["peer"])
        timing = time_alternating({"featurelens": ours_fn, "captum": theirs_fn}, repeats=repeats)
        rss = dict(timing["peak_mb"])
        if ours_fn.peak_mb is not None:  # the row's peak: live malloc bytes, the resident set kept
            timing["peak_mb"] = {"featurelens": ours_fn.peak_mb, "captum": theirs_fn.peak_mb}
        ours, theirs = timing["last"]["featurelens"], timing["last"]["captum"]
        extra = {}
        if method == "kernel_shap":
            with torch.no_grad():
                fx = model(xk).gather(1, yk[:, None])[:, 0].double()
                f0 = model(torch.zeros_like(xk)).gather(1, yk[:, None])[:, 0].double()
            change = (fx - f0).numpy()
            groups_of = [np.asarray(v).reshape(k, -1)[:, [np.flatnonzero(patches.reshape(-1) == g)[0]
                                                         for g in range(n_players)]] for v in (ours, theirs.numpy())]
            gaps = [np.abs(g.sum(1) - change) for g in groups_of]
            diff, scale = float(gaps[0].max()), float(np.abs(change).max())
            extra = {"peer_efficiency_gap": float(f"{gaps[1].max():.3g}"),
                     "diff_against": "efficiency: |sum(phi) - (f(x) - f(0))|",
                     "fl_model_calls": int(ks_state["fl"].model_calls)}
        else:
            reference = spec["reference"]() if "reference" in spec else theirs
            diff = max_abs_diff(ours, reference)
            scale = float(np.abs(np.asarray(reference.detach() if hasattr(reference, "detach") else reference)).max())
            extra = {"diff_against": "Captum fed featurelens' noise" if "reference" in spec else "Captum's values"}
    tol = float(f"{s.rel_tol * max(scale, 1e-12):.3g}")
    floor_s, floor_text = spec["floor"]
    r = row(SECTION, case.label, method, PEER, timing, "featurelens", "captum", diff, tol, floor_s=floor_s,
            floor=floor_text, note="", settings=spec["settings"], max_abs_value=float(f"{scale:.3g}"),
            model_note=case.note, fl_peak_rss_mb=round(rss["featurelens"], 1),
            peer_peak_rss_mb=round(rss["captum"], 1), fl_cpu_s=round(ours_fn.cpu_s, 4),
            peer_cpu_s=round(theirs_fn.cpu_s, 4), cpu_ratio=round(ours_fn.cpu_s / theirs_fn.cpu_s, 3), **extra)
    log(f"    featurelens {r['fl_s']:.3f}s {r['fl_peak_mb']:.0f} MB | Captum {r['peer_s']:.3f}s "
        f"{r['peer_peak_mb']:.0f} MB | ratio {r['ratio']:.2f} (CPU time {r['cpu_ratio']:.2f}) | floor {r['floor_s']} | diff {r['max_abs_diff']:.2g} "
        f"(tol {tol:.2g})", flush=True)
    return r


def run(quick: bool, settings: Settings | None = None, done: dict | None = None, save=None) -> list[dict]:
    """Every row of the vision section (``quick``: ResNet-18 on 2 images, its three cheapest rows).

    ``done``: rows already measured, by ``(model, method)`` (a resumed run: those are returned as
    they are, not measured again); ``save(row)`` is called with each new row as soon as it exists."""
    torch.set_num_threads(2)
    settings = settings or Settings()
    done = done or {}
    rows = []
    for case in cases(quick):
        todo = tuple(m for m in case.methods if (case.label, m) not in done)
        rows += [done[(case.label, m)] for m in case.methods if (case.label, m) in done]
        if not todo:
            continue
        case = replace(case, methods=todo)
        print(f"{case.label}: {', '.join(case.methods)}", flush=True)
        try:
            rows += bench_case(case, settings, save=save)
        except Exception:  # noqa: BLE001 - one model's failure does not lose the others' rows
            import traceback

            traceback.print_exc()
        finally:
            del case
    return rows


QUICK = replace(Settings(), ig_steps=4, sg_samples=2, ks_budget=64)
