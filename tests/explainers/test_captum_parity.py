"""featurelens' gradient explainers against Captum on the same models, inputs and targets.

Each test runs both libraries and asserts that the attributions agree to 1e-5 (relative to the
values' magnitude where it exceeds 1). Known, deliberate differences are asserted explicitly:

- Captum's ``riemann_trapezoid`` step sizes are ``1/n`` with halved ends, so they sum to
  ``(n - 1)/n``; featurelens uses the trapezoid rule proper (``1/(n - 1)``, summing to 1). The
  attributions therefore differ by exactly the factor ``n/(n - 1)``.
- Captum's ``Saliency`` defaults to ``abs=True``, featurelens' to ``abs=False``; both are compared.
- Captum's ``LayerGradCam`` defaults to ``relu_attributions=False`` and does not upsample;
  featurelens applies the ReLU by default and upsamples; both settings are compared.

SmoothGrad: Captum's ``NoiseTunnel`` draws its noise inside ``_add_noise_to_input`` with
``torch.normal`` on the global RNG, laid out sample-major (``input.repeat_interleave(k)``: row
``i * k + j`` is copy ``j`` of sample ``i``), while featurelens draws ``randn(n_samples, n, ...)``
from its own seeded Generator, copy-major. The two streams coincide only for a single sample, so:

1. for one sample and absolute noise, both are seeded identically and run unmodified (exact
   agreement of the draws, checked for smoothgrad / smoothgrad_sq / vargrad);
2. for batches, Captum's NoiseTunnel is fed featurelens' exact draws (``noise_draws``) by replacing
   only its noise-drawing step, ``NoiseTunnel._add_noise_to_input``, with one that returns the same
   ``repeat_interleave`` layout plus those draws. Captum's own partitioning
   (``nt_samples_batch_size``), per-sample attribution and smoothing (mean / mean of squares /
   variance) run unchanged, so neither side is weakened.
"""

import warnings

import numpy as np
import pytest
import torch

captum = pytest.importorskip("captum")
from captum.attr import (  # noqa: E402
    InputXGradient,
    IntegratedGradients,
    LayerAttribution,
    LayerGradCam,
    NoiseTunnel,
    Saliency,
)

import featurelens as fl  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

N = 6  # samples per batch
IG_STEPS = 20
RULES = ["gausslegendre", "riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid"]


class CNN(torch.nn.Module):
    """(N, 1, 8, 8) -> 3 classes; the last convolution (conv3) yields 4 x 4 maps."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(4, 8, 3, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.conv3 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.head = torch.nn.Linear(8 * 4 * 4, 3)

    def forward(self, x):
        h = torch.relu(self.conv1(x))
        h = self.pool(torch.relu(self.conv2(h)))
        h = torch.relu(self.conv3(h))
        return self.head(h.flatten(1))


def make_mlp():
    return torch.nn.Sequential(
        torch.nn.Linear(10, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16), torch.nn.Softplus(), torch.nn.Linear(16, 4)
    )


def build(kind: str, dtype: torch.dtype):
    torch.manual_seed(0)
    model = (CNN() if kind == "cnn" else make_mlp()).to(dtype).eval()
    gen = torch.Generator().manual_seed(1)
    shape = (N, 1, 8, 8) if kind == "cnn" else (N, 10)
    x = torch.randn(shape, generator=gen, dtype=dtype)
    return model, x


MODELS = [("cnn", torch.float32), ("cnn", torch.float64), ("mlp", torch.float32), ("mlp", torch.float64)]
MODEL_IDS = [f"{k}-{str(d).split('.')[-1]}" for k, d in MODELS]


def targets(model, x):
    """(featurelens target, Captum target) pairs: an int, a per-sample tensor, None vs argmax."""
    with torch.no_grad():
        n_out = model(x[:1]).shape[1]
        predicted = model(x).argmax(1)
    per_sample = torch.arange(N) % n_out
    return [(1, 1), (per_sample, per_sample), (None, predicted)]


def assert_close(ours, theirs, tol=1e-5):
    """|ours - theirs| <= tol * max(1, max|theirs|): absolute for small values, relative for large."""
    ours = np.asarray(ours, dtype=np.float64)
    theirs = theirs.detach().cpu().numpy().astype(np.float64) if torch.is_tensor(theirs) else np.asarray(theirs)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    assert np.abs(theirs).max() > 0, "the reference is all zeros: the comparison would be vacuous"
    scale = max(1.0, float(np.abs(theirs).max()))
    err = float(np.abs(ours - theirs).max())
    assert err <= tol * scale, f"max abs difference {err:.3g} > {tol * scale:.3g}"


# -- saliency and input x gradient -----------------------------------------------------------
@pytest.mark.parametrize("kind,dtype", MODELS, ids=MODEL_IDS)
def test_saliency_and_input_x_gradient_match_captum(kind, dtype):
    model, x = build(kind, dtype)
    for ours_t, their_t in targets(model, x):
        signed = fl.explainer("saliency", model).explain(x, target=ours_t)
        assert_close(signed.values, Saliency(model).attribute(x.clone(), target=their_t, abs=False))
        absolute = fl.explainer("saliency", model, abs=True).explain(x, target=ours_t)
        assert_close(absolute.values, Saliency(model).attribute(x.clone(), target=their_t))  # Captum default abs=True
        ixg = fl.explainer("input_x_gradient", model).explain(x, target=ours_t)
        assert_close(ixg.values, InputXGradient(model).attribute(x.clone(), target=their_t))
        np.testing.assert_array_equal(signed.target, np.broadcast_to(np.asarray(their_t), (N,)))


# -- integrated gradients --------------------------------------------------------------------
@pytest.mark.parametrize("kind,dtype", MODELS, ids=MODEL_IDS)
@pytest.mark.parametrize("method", RULES)
def test_integrated_gradients_match_captum(kind, dtype, method):
    model, x = build(kind, dtype)
    given = torch.rand(x.shape, generator=torch.Generator().manual_seed(2), dtype=dtype) - 0.5
    # Captum's trapezoid weights sum to (n - 1)/n, featurelens' to 1 (see the module docstring).
    factor = IG_STEPS / (IG_STEPS - 1) if method == "riemann_trapezoid" else 1.0
    for baseline in (None, given):
        for ours_t, their_t in targets(model, x):
            ex = fl.explainer("integrated_gradients", model, n_steps=IG_STEPS, method=method, baseline=baseline)
            ours = ex.explain(x, target=ours_t)
            theirs, delta = IntegratedGradients(model).attribute(
                x.clone(), baselines=baseline, target=their_t, n_steps=IG_STEPS, method=method,
                return_convergence_delta=True,
            )
            assert_close(ours.values, theirs * factor)
            gap = np.asarray(ours.params["completeness_gap"])
            if factor == 1.0:
                # Same attributions, same end points: the completeness gaps agree.
                assert_close(gap, delta)
            else:
                # gap - delta = sum(ours) - sum(theirs): only the weights' total differs.
                shift = ours.values.reshape(N, -1).sum(1) - theirs.detach().double().flatten(1).sum(1).numpy()
                assert_close(gap - shift, delta)


@pytest.mark.parametrize("batch_size", [None, 4, 13, "auto-small"])
def test_integrated_gradients_chunking_matches_captum(batch_size, monkeypatch):
    """Every accumulation path (one chunk, whole copies per chunk, copies split across chunks),
    also when automatic chunking (no batch_size) bounds chunks by input size."""
    model, x = build("cnn", torch.float32)
    if batch_size == "auto-small":  # automatic rows shrink to 4 (< N) for 64-element inputs
        monkeypatch.setattr("featurelens._batching.DEFAULT_CHUNK_ELEMENTS", 4 * 64)
        # and the gradient explainers' floor of 8 rows per chunk is lifted, so that copies split
        monkeypatch.setattr("featurelens.explainers.gradient.GRADIENT_MIN_ROWS", 1)
        monkeypatch.setattr("featurelens._batching.FORWARD_MIN_ROWS", 1)  # and the forward passes' floor
        batch_size, bound = None, 4
    else:
        bound = batch_size or 1024
    sizes = []
    handle = model.register_forward_hook(lambda m, i, o: sizes.append(i[0].shape[0]))
    try:
        ex = fl.explainer("integrated_gradients", model, n_steps=IG_STEPS, batch_size=batch_size)
        ours = ex.explain(x, target=2)
    finally:
        handle.remove()
    assert max(sizes) <= bound
    assert ours.params["batch_size"] == batch_size  # None records automatic chunking
    theirs = IntegratedGradients(model).attribute(x.clone(), target=2, n_steps=IG_STEPS, internal_batch_size=16)
    assert_close(ours.values, theirs)


# -- SmoothGrad / NoiseTunnel ----------------------------------------------------------------
NT_TYPES = {"mean": "smoothgrad", "square": "smoothgrad_sq", "var": "vargrad"}


@pytest.fixture
def feed_noise(monkeypatch):
    """Make NoiseTunnel add the given (n_samples, n, ...) draws instead of drawing its own."""

    def install(eps: torch.Tensor):
        used = {"copies": 0}

        def add_given_noise(input, stdev, nt_samples_partition):
            start = used["copies"]
            used["copies"] += nt_samples_partition
            part = eps[start : start + nt_samples_partition]  # (k, n, ...) copy-major
            noise = part.transpose(0, 1).reshape((-1,) + tuple(input.shape[1:]))  # sample-major
            return input.repeat_interleave(nt_samples_partition, dim=0) + noise

        monkeypatch.setattr(NoiseTunnel, "_add_noise_to_input", staticmethod(add_given_noise))
        return used

    return install


@pytest.mark.parametrize("kind,dtype", MODELS, ids=MODEL_IDS)
@pytest.mark.parametrize("variant", ["mean", "square", "var"])
def test_smoothgrad_matches_noise_tunnel_on_identical_noise(kind, dtype, variant, feed_noise):
    model, x = build(kind, dtype)
    n_samples = 9
    for noise, level in (("relative", 0.15), ("absolute", 0.3)):
        for (ours_t, their_t), nt_batch in zip(targets(model, x), (None, 4, 2)):
            ex = fl.explainer(
                "smoothgrad", model, n_samples=n_samples, noise=noise, noise_level=level, variant=variant, seed=3
            )
            ours = ex.explain(x, target=ours_t)
            used = feed_noise(ex.noise_draws(x))
            theirs = NoiseTunnel(Saliency(model)).attribute(
                x.clone(), nt_type=NT_TYPES[variant], nt_samples=n_samples, nt_samples_batch_size=nt_batch,
                stdevs=level, target=their_t, abs=False,
            )
            assert used["copies"] == n_samples  # Captum consumed exactly the featurelens draws
            assert_close(ours.values, theirs)


@pytest.mark.parametrize("kind", ["cnn", "mlp"])
@pytest.mark.parametrize("variant", ["mean", "square", "var"])
def test_smoothgrad_matches_noise_tunnel_on_the_same_noise(kind, variant, monkeypatch):
    """Absolute noise, float32, several samples: Captum's NoiseTunnel, with only its noise draw
    replaced by featurelens' draws for the same seed (featurelens draws per noisy copy from
    counter-based seeds, so that every batch size gives the same map; Captum draws one tensor from
    the global RNG), aggregates to the same map for every variant."""
    model, x = build(kind, torch.float32)
    ex = fl.explainer("smoothgrad", model, n_samples=11, noise="absolute", noise_level=0.25, variant=variant, seed=7)
    ours = ex.explain(x, target=1)
    noise = ex.noise_draws(x)  # (n_samples, n, ...)

    def add_our_noise(inp, stdev, k):
        assert k == 11 and stdev == 0.25
        # Captum's rows are sample-major (sample i's k copies together): noise[e, i] at row i*k + e.
        return inp.repeat_interleave(k, dim=0) + noise.transpose(0, 1).reshape(-1, *inp.shape[1:])

    monkeypatch.setattr(NoiseTunnel, "_add_noise_to_input", staticmethod(add_our_noise))
    theirs = NoiseTunnel(Saliency(model)).attribute(
        x.clone(), nt_type=NT_TYPES[variant], nt_samples=11, stdevs=0.25, target=1, abs=False
    )
    assert_close(ours.values, theirs)


# -- Grad-CAM --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("relu", [True, False])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_gradcam_matches_layer_gradcam_and_interpolate(dtype, relu, mode):
    model, x = build("cnn", dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for layer in (None, "conv3", "conv2"):  # default = the last conv (conv3); names as given
            module = model.conv2 if layer == "conv2" else model.conv3
            for ours_t, their_t in targets(model, x):
                ours = fl.explainer("gradcam", model, layer=layer, relu=relu, interpolate=mode).explain(x, target=ours_t)
                cam = LayerGradCam(model, module).attribute(x.clone(), target=their_t, relu_attributions=relu)
                theirs = LayerAttribution.interpolate(cam, tuple(x.shape[2:]), interpolate_mode=mode)
                assert ours.params["layer"] == (layer or "conv3")
                assert_close(ours.values, theirs)
