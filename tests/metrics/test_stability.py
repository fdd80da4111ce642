"""Continuity, consistency and the relative stabilities: closed forms, brute force, errors, and
parity with Quantus 0.6 fed the same noise (its perturbation function replaced)."""

import warnings

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.metrics import _perturb
from featurelens.metrics.robustness import _stability as S

N = 6


@pytest.fixture
def setup(small_cnn):
    x = np.random.default_rng(0).normal(size=(N, 1, 8, 8)).astype(np.float32)
    return small_cnn.eval(), fl.explainer("saliency", small_cnn), x


def _linear(d=6, classes=3):
    torch.manual_seed(0)
    return torch.nn.Linear(d, classes).double()


# -- analytic checks ---------------------------------------------------------------------------------


def test_linear_model_saliency_is_perfectly_stable():
    # Saliency of a linear model is its weight row: it never moves, so every ratio is 0.
    lin = _linear()
    x = np.random.default_rng(1).normal(size=(4, 6))
    ex = fl.explainer("saliency", lin)
    for f in (S.relative_input_stability, S.relative_output_stability):
        np.testing.assert_array_equal(f(ex, x, target=0, n_samples=4, same_prediction=False), 0.0)


def test_relative_input_stability_brute_force(setup):
    # float64: the element-wise relative change divides by tiny map entries, which would magnify
    # float32 gradients' batch-dependent last bits
    model, _, x = setup
    import copy

    ex = fl.explainer("saliency", copy.deepcopy(model).double())
    x = x.astype(np.float64)
    n_s, radius = 4, 0.3
    got = S.relative_input_stability(ex, x, n_samples=n_s, radius=radius, seed=3, same_prediction=False)
    span = x.reshape(N, -1).max(1) - x.reshape(N, -1).min(1)
    noise = list(_perturb.uniform_draws(3, n_s, x.shape, radius * span))
    t = ex.model.resolve_target(None, ex.model.to_tensor(x)).numpy()
    for i in range(N):
        a = ex.explain(x[i:i + 1], target=int(t[i])).values.reshape(-1).astype(np.float64)
        best = -np.inf
        for nz in noise:
            xs = x[i] + nz[i]
            b = ex.explain(xs[None], target=int(t[i])).values.reshape(-1).astype(np.float64)
            num = np.linalg.norm((a - b) / np.where(a == 0, 1e-6, a))
            x0 = x[i].reshape(-1).astype(np.float64)
            den = np.linalg.norm((x0 - xs.reshape(-1)) / np.where(x0 == 0, 1e-6, x0))
            best = max(best, num / max(den, 1e-6))
        np.testing.assert_allclose(got[i], best, rtol=1e-9)


def test_continuity_brute_force_and_translation(setup):
    _, ex, x = setup
    # translate by +2 along x fills the two left columns with each sample's minimum
    xt = torch.from_numpy(x)
    moved = S._translate(xt, torch.full_like(xt, -9.0), 2, 3)
    np.testing.assert_array_equal(moved[..., 2:].numpy(), x[..., :6])
    assert torch.all(moved[..., :2] == -9.0)
    moved = S._translate(xt, torch.full_like(xt, -9.0), -3, 2)
    np.testing.assert_array_equal(moved[:, :, :5].numpy(), x[:, :, 3:])
    got = S.continuity(ex, x, steps=4, normalise=False, abs=False)
    # n_steps=4 on width 8: dx = 17 // 4 = 4, shifts -4, 0, 4, 8
    t = ex.model.resolve_target(None, xt).numpy()
    a = ex.explain(x, target=t).values.reshape(N, -1).astype(np.float64)
    ref = np.zeros(N)
    mins = x.reshape(N, -1).min(1)
    for s in (-4, 0, 4, 8):
        xs = np.broadcast_to(mins[:, None, None, None], x.shape).copy()
        if s > 0:
            xs[..., s:] = x[..., : 8 - s]
        elif s < 0:
            xs[..., :s] = x[..., -s:]
        else:
            xs = x.copy()
        b = ex.explain(xs, target=t).values.reshape(N, -1).astype(np.float64)
        r = np.abs(a - b).sum(1) / (np.linalg.norm((x - xs).reshape(N, -1).astype(np.float64), axis=1) + 1e-9)
        ref = np.maximum(ref, r)
    np.testing.assert_allclose(got, ref, rtol=1e-5)


def test_consistency_counts_by_hand():
    # maps with planted top-2 sets; predictions of a linear model chosen by the first feature
    lin = torch.nn.Linear(4, 2, bias=False).double()
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[1.0, 0, 0, 0], [-1.0, 0, 0, 0]], dtype=torch.float64))
    x = np.array([[1.0, 0, 0, 0], [2, 0, 0, 0], [-1, 0, 0, 0], [3, 0, 0, 0], [-2, 0, 0, 0]])
    a = np.array([[5, 4, 0, 0], [4, 5, 1, 0], [3, 2, 0, 0], [0, 0, 2, 3], [1, 0, 2, 3]], float)
    # preds: 0 0 1 0 1 ; top-2 labels: {0,1} {0,1} {0,1} {2,3} {2,3}
    got = S.consistency("saliency", x, model=lin, attributions=a, k=2)
    np.testing.assert_allclose(got, [1 / 2, 1 / 2, 0, 0, 0])
    # a sample whose label nobody shares gets NaN
    got = S.consistency("saliency", x[:4], model=lin, attributions=a[:4], k=2)
    assert np.isnan(got[3]) and got[0] == 0.5


def test_representation_stability_of_the_input_layer_equals_input_stability(setup):
    # An identity first layer makes L(x) = x: RRS = RIS.
    _, _, x = setup
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Identity(), torch.nn.Flatten(), torch.nn.Linear(64, 2), torch.nn.Tanh(),
                              torch.nn.Linear(2, 2))
    ex = fl.explainer("saliency", net)
    kw = {"n_samples": 3, "seed": 1, "same_prediction": False}
    np.testing.assert_allclose(S.relative_representation_stability(ex, x, layer="0", **kw),
                               S.relative_input_stability(ex, x, **kw), rtol=1e-10)


def test_same_prediction_drops_changed_draws(setup):
    _, ex, x = setup
    kw = {"n_samples": 6, "radius": 1.5, "seed": 0}
    loose = S.relative_output_stability(ex, x, same_prediction=False, **kw)
    strict = S.relative_output_stability(ex, x, same_prediction=True, **kw)
    # the strict maximum runs over fewer draws: never larger, NaN only when all draws changed
    ok = ~np.isnan(strict)
    assert np.all(strict[ok] <= loose[ok] + 1e-12)


def test_names_and_model_are_accepted(setup):
    model, ex, x = setup
    np.testing.assert_allclose(S.continuity("saliency", x, model=model, steps=3), S.continuity(ex, x, steps=3))


# -- errors --------------------------------------------------------------------------------------------


def test_errors(setup):
    import copy

    model, ex, x = setup
    with pytest.raises(ValueError, match="pass model="):
        S.continuity("saliency", x)
    with pytest.raises(TypeError, match="explainer must be a featurelens Explainer"):
        S.consistency(3, x)
    with pytest.raises(ValueError, match="model must be None or the explainer's own model"):
        S.consistency(ex, x, model=copy.deepcopy(model))
    with pytest.raises(ValueError, match="steps must be at most 2 \\* 8 \\+ 1 = 17"):
        S.continuity(ex, x, steps=28)
    with pytest.raises(ValueError, match="x must be a batch of images"):
        S.continuity(fl.explainer("saliency", _linear()), np.zeros((2, 6)))
    with pytest.raises(ValueError, match="baseline must be one of"):
        S.continuity(ex, x, baseline="blur")
    with pytest.raises(ValueError, match="discretise must be one of"):
        S.consistency(ex, x, discretise="top")
    with pytest.raises(ValueError, match="k must be at most the map size 64"):
        S.consistency(ex, x, k=65)
    with pytest.raises(ValueError, match="attributions must hold one map per sample"):
        S.consistency(ex, x, attributions=np.zeros((2, 64)))
    with pytest.raises(ValueError, match="a contains NaN|attributions contains NaN|NaN"):
        S.relative_input_stability(ex, x, attributions=np.full(x.shape, np.nan))
    with pytest.raises(ValueError, match="radius must be"):
        S.relative_input_stability(ex, x, radius=0)
    with pytest.raises(ValueError, match="eps_min must be"):
        S.relative_output_stability(ex, x, eps_min=-1.0)
    with pytest.raises(ValueError, match="not a submodule name"):
        S.relative_representation_stability(ex, x, layer="nope")
    with pytest.raises(ValueError, match="x contains NaN|NaN"):
        S.relative_input_stability(ex, np.full(x.shape, np.nan, np.float32))

    def f(z):
        return z.reshape(z.shape[0], -1)[:, :2]

    with pytest.raises(TypeError, match="torch.nn.Module"):
        S.relative_representation_stability(fl.explainer("occlusion", f), np.ones((2, 4)), layer="0")


# -- parity with Quantus 0.6 -----------------------------------------------------------------------------


@pytest.fixture
def quantus():
    q = pytest.importorskip("quantus")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield q


def _saliency_func(model, inputs, targets, **kwargs):
    return fl.explainer("saliency", model).explain(np.asarray(inputs, np.float32), target=np.asarray(targets)).values


def _fed(noise):
    calls = iter(noise)

    def perturb(arr, indices, **kw):
        return (arr + next(calls).reshape(arr.shape)).astype(arr.dtype)

    return perturb


class _Float64(torch.nn.Module):
    """A float64 network behind a float32 door: Quantus 0.6 casts every batch to float32
    (``torch.Tensor(x)``), so the parity in float64 arithmetic needs inputs that are exactly
    representable in float32 (multiples of 2**-10 here) and a model that computes in float64."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x.double())


def _on_grid(v):
    return np.round(np.asarray(v, dtype=np.float64) * 1024) / 1024


def _saliency64(model, inputs, targets, **kwargs):
    return fl.explainer("saliency", model).explain(np.asarray(inputs, np.float64), target=np.asarray(targets)).values


@pytest.fixture
def grid_draws(monkeypatch):
    """The metrics' uniform noise rounded onto the float32 grid (see _Float64), for both sides."""
    draws = _perturb.uniform_draws

    def on_grid(*args, **kwargs):
        for d in draws(*args, **kwargs):
            yield _on_grid(d)

    monkeypatch.setattr(_perturb, "uniform_draws", on_grid)
    return on_grid


def _in_float64(net, x):
    """(model, explainer, x) for parity in float64 arithmetic (see _Float64)."""
    import copy

    model = _Float64(copy.deepcopy(net).double()).eval()
    return model, fl.explainer("saliency", model), _on_grid(x)


@pytest.mark.parametrize("name", ["RelativeInputStability", "RelativeOutputStability",
                                  "RelativeRepresentationStability"])
@pytest.mark.parametrize("radius", [0.2, 1.0])
def test_relative_stability_matches_quantus_on_the_same_noise(setup, quantus, grid_draws, name, radius):
    # float64 end to end: the metric divides by tiny map entries and output differences, which
    # magnify float32's batch-dependent last bits (about 1e-5 relative); in float64 the two agree
    # to 1e-9.
    model, ex, x = _in_float64(setup[0], setup[2])
    y = ex.model.predict(ex.model.to_tensor(x)).argmax(1).numpy()
    n_s = 4
    noise = list(grid_draws(5, n_s, x.shape, np.full(N, radius)))
    extra = {"layer_names": ["net.3"]} if "Representation" in name else {}
    ours_f = {"RelativeInputStability": S.relative_input_stability,
              "RelativeOutputStability": S.relative_output_stability,
              "RelativeRepresentationStability": lambda *a, **k: S.relative_representation_stability(
                  a[0], a[1], layer="net.3", **k)}[name]
    kw = {"target": y, "radius": radius, "n_samples": n_s, "seed": 5, "relative": False}
    a = ex.explain(x, target=y).values

    for nan_rule in (False, True):
        metric = getattr(quantus, name)(nr_samples=n_s, perturb_func=_fed(noise), disable_warnings=True,
                                        return_nan_when_prediction_changes=nan_rule, **extra)
        q = np.asarray(metric(model=model, x_batch=x, y_batch=y, a_batch=a.copy(), device="cpu",
                              explain_func=_saliency64), dtype=np.float64)
        ours = ours_f(ex, x, same_prediction=nan_rule, **kw)
        ok = ~np.isnan(q)
        np.testing.assert_allclose(ours[ok], q[ok], rtol=1e-9)
        if not nan_rule:
            assert ok.all()


def test_relative_stability_float32_is_near_quantus(setup, quantus):
    # The everyday float32 case: the same definition, off by float32 rounding only.
    model, ex, x = setup
    y = ex.model.predict(ex.model.to_tensor(x)).argmax(1).numpy()
    noise = list(_perturb.uniform_draws(5, 4, x.shape, np.full(N, 0.2)))
    a = ex.explain(x, target=y).values
    metric = quantus.RelativeOutputStability(nr_samples=4, perturb_func=_fed(noise), disable_warnings=True,
                                             return_nan_when_prediction_changes=False)
    q = np.asarray(metric(model=model, x_batch=x, y_batch=y, a_batch=a.copy(), device="cpu",
                          explain_func=_saliency_func), dtype=np.float64)
    ours = S.relative_output_stability(ex, x, target=y, radius=0.2, n_samples=4, seed=5, relative=False,
                                       same_prediction=False)
    np.testing.assert_allclose(ours, q, rtol=1e-4)


def _boundary_model():
    # f = (w.x, -w.x): samples planted at margin +-0.05 flip class under some noise draws only
    rng = np.random.default_rng(4)
    w = rng.normal(size=64) / 8
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 2, bias=False))
    with torch.no_grad():
        net[1].weight.copy_(torch.tensor(np.stack([w, -w]), dtype=torch.float32))
    x = rng.normal(size=(N, 64))
    margin = np.array([0.05, -0.05, 0.05, -0.05, 2.0, -2.0])
    x += ((margin - x @ w) / (w @ w))[:, None] * w[None]
    return net.eval(), x.reshape(N, 1, 8, 8).astype(np.float32)


def test_quantus_turns_a_score_nan_when_one_draw_changes_class(quantus, grid_draws):
    # float64 arithmetic on the float32 grid (see _Float64)
    net, x = _boundary_model()
    model, _, x = _in_float64(net, x)
    ex = fl.explainer("input_x_gradient", model)
    y = ex.model.predict(ex.model.to_tensor(x)).argmax(1).numpy()
    n_s, radius = 6, 0.1
    noise = list(grid_draws(1, n_s, x.shape, np.full(N, radius)))
    moved = np.stack([x + nz for nz in noise])
    changed = np.stack([ex.model.predict(ex.model.to_tensor(m)).argmax(1).numpy() != y for m in moved])
    some = changed.any(0) & ~changed.all(0)
    assert some.any()  # the planted case: a sample with changed and unchanged draws

    def ixg(model, inputs, targets, **kw):
        return fl.explainer("input_x_gradient", model).explain(np.asarray(inputs, np.float64),
                                                                 target=np.asarray(targets)).values

    q = np.asarray(quantus.RelativeInputStability(nr_samples=n_s, perturb_func=_fed(noise), disable_warnings=True)(
        model=model, x_batch=x, y_batch=y, a_batch=None, device="cpu", explain_func=ixg), dtype=np.float64)
    ours = S.relative_input_stability(ex, x, target=y, radius=radius, n_samples=n_s, seed=1, relative=False)
    assert np.all(np.isnan(q[changed.any(0)]))  # Quantus: one changed draw spoils the sample
    assert np.all(np.isfinite(ours[~changed.all(0)]))  # the paper: max over the same-class draws
    loose = S.relative_input_stability(ex, x, target=y, radius=radius, n_samples=n_s, seed=1, relative=False,
                                       same_prediction=False)
    np.testing.assert_allclose(ours[~changed.any(0)], q[~changed.any(0)], rtol=1e-9)
    assert np.all(ours[some] <= loose[some])


def test_continuity_matches_quantus(setup, quantus):
    # float64 arithmetic (see _Float64): the translated images stay on the float32 grid
    model, ex, x = _in_float64(setup[0], setup[2])
    y = ex.model.predict(ex.model.to_tensor(x)).argmax(1).numpy()
    for steps in (4, 6):
        q = quantus.Continuity(nr_steps=steps, normalise=False, abs=True, disable_warnings=True)(
            model=model, x_batch=x, y_batch=y, a_batch=None, device="cpu", explain_func=_saliency64)
        ours = S.continuity(ex, x, target=y, steps=steps, normalise=False)
        np.testing.assert_allclose(ours, np.asarray(q, np.float64), rtol=1e-9)
    # normalise=True: Quantus divides by the batch maximum; per sample with batches of one
    q = [quantus.Continuity(nr_steps=5, disable_warnings=True)(
        model=model, x_batch=x[i:i + 1], y_batch=y[i:i + 1], a_batch=None, device="cpu",
        explain_func=_saliency64)[0] for i in range(N)]
    np.testing.assert_allclose(S.continuity(ex, x, target=y, steps=5), q, rtol=1e-9)
    # the everyday float32 case differs by float32 rounding only
    net, ex32, x32 = setup
    q = quantus.Continuity(nr_steps=4, normalise=False, disable_warnings=True)(
        model=net, x_batch=x32, y_batch=y, a_batch=None, device="cpu", explain_func=_saliency_func)
    np.testing.assert_allclose(S.continuity(ex32, x32, target=y, steps=4, normalise=False), q, rtol=1e-4)


def test_consistency_matches_quantus(setup, quantus):
    model, ex, _ = setup
    rng = np.random.default_rng(2)
    n = 12
    xs = rng.normal(size=(n, 1, 8, 8)).astype(np.float32)
    y = ex.model.predict(ex.model.to_tensor(xs)).argmax(1).numpy()
    protos = rng.normal(size=(3, 64))
    a = (protos[rng.integers(0, 3, n)] * rng.uniform(0.5, 2.0, size=(n, 1))).reshape(n, 1, 8, 8)
    a[-1] = rng.normal(size=(1, 8, 8))  # a map no other sample shares
    from quantus.functions import discretise_func as D

    cases = [(D.sign, "sign", False), (D.rank, "rank", False), (D.top_n_sign, "first_k_sign", False),
             (D.top_n_sign, "first_k_sign", True)]
    for func, ours_name, abs_ in cases:
        q = np.asarray(quantus.Consistency(discretise_func=func, abs=abs_, disable_warnings=True)(
            model=model, x_batch=xs, y_batch=y, a_batch=a.copy(), device="cpu"), dtype=np.float64)
        ours = S.consistency(ex, xs, attributions=a, discretise=ours_name, abs=abs_)
        ok = ~np.isnan(ours)
        np.testing.assert_allclose(ours[ok], q[ok], atol=1e-6)
        # no other sample shares the label: undefined here, 0 in Quantus (its + 1e-9)
        np.testing.assert_array_equal(q[~ok], 0.0)
        if abs_:
            # Quantus's default "top_n_sign" reads the first 5 entries' signs: all +1 after abs,
            # so every map has one label and the score is just the share of equal predictions.
            assert ok.all()
            np.testing.assert_allclose(ours, [(np.sum(y == yi) - 1) / (n - 1) for yi in y])


def test_continuity_class_rule_brute_force():
    # samples planted near the decision boundary: some translated copies change class, and the
    # class rule leaves exactly those out of the maximum (NaN where all change)
    net, x = _boundary_model()
    ex = fl.explainer("saliency", net)
    xt = torch.from_numpy(x)
    t = ex.model.predict(xt).argmax(1).numpy()
    a = ex.explain(x, target=t).values.reshape(N, -1).astype(np.float64)
    ref, changed = np.full(N, np.nan), 0
    for s in (-4, 0, 4, 8):  # n_steps=4 on width 8
        xs = S._translate(xt, torch.broadcast_to(xt.amin((1, 2, 3), keepdim=True), xt.shape), s, 3).numpy()
        b = ex.explain(xs, target=t).values.reshape(N, -1).astype(np.float64)
        r = np.abs(a - b).sum(1) / (np.linalg.norm((x - xs).reshape(N, -1).astype(np.float64), axis=1) + 1e-9)
        same = net(torch.from_numpy(xs)).argmax(1).numpy() == t
        changed += int((~same).sum())
        ref = np.where(same, np.fmax(ref, r), ref)
    assert 0 < changed < 4 * N
    got = S.continuity(ex, x, steps=4, normalise=False, abs=False, same_prediction=True)
    np.testing.assert_allclose(got, ref, rtol=1e-5)


def test_continuity_same_prediction_and_consistency_callable():
    net, x = _boundary_model()
    ex = fl.explainer("saliency", net)
    loose = S.continuity(ex, x, steps=4)
    strict = S.continuity(ex, x, steps=4, same_prediction=True)
    ok = ~np.isnan(strict)
    assert ok.any() and np.all(strict[ok] <= loose[ok] + 1e-12)
    # a callable discretisation: every map one label -> the share of equal predictions
    y = ex.model.predict(ex.model.to_tensor(x)).argmax(1).numpy()
    got = S.consistency(ex, x, discretise=lambda row: 0)
    np.testing.assert_allclose(got, [(np.sum(y == yi) - 1) / (N - 1) for yi in y])
    with pytest.raises(TypeError, match="discretise must return a hashable"):
        S.consistency(ex, x, discretise=lambda row: row)


def _counting(net):
    rows = []
    net.register_forward_hook(lambda mod, inp, out: rows.append(inp[0].shape[0]))
    return rows


def test_every_pass_respects_the_models_batch_size():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3))
    x = np.random.default_rng(0).normal(size=(5, 1, 4, 4)).astype(np.float32)
    rows = _counting(net)
    ex = fl.explainer("saliency", fl.models.Model(net, batch_size=2))
    S.continuity(ex, x, steps=3, same_prediction=True)
    S.consistency(ex, x)
    S.relative_input_stability(ex, x, n_samples=3)
    S.relative_output_stability(ex, x, n_samples=3)
    S.relative_representation_stability(ex, x, layer="2", n_samples=3)
    assert rows and max(rows) <= 2


def test_executor_gives_the_serial_scores(setup):
    # float64: RIS divides by tiny map entries, magnifying float32 gradients' batch-dependent bits
    import copy

    from featurelens.parallel import make_executor

    model, _, x = setup
    ex = fl.explainer("saliency", copy.deepcopy(model).double())
    x = x.astype(np.float64)
    with make_executor("threads", workers=2) as pool:
        # the representation on threads: the explainer's passes run on the workers, so the
        # metric reads the layer in a pass of its own (the serial call reads the explainer's)
        for f in (lambda **k: S.relative_input_stability(ex, x, n_samples=3, **k),
                  lambda **k: S.relative_representation_stability(ex, x, layer="3", n_samples=3, **k),
                  lambda **k: S.continuity(ex, x, steps=3, **k)):
            np.testing.assert_allclose(f(executor=pool), f(), rtol=1e-9)


def test_gradient_explainers_need_gradients():
    def fn(z):
        return np.asarray(z).reshape(len(z), -1)[:, :3]

    with pytest.raises(TypeError, match="needs gradients"):
        S.relative_input_stability("saliency", np.ones((2, 6)), model=fn)


def test_relative_stabilities_reuse_the_explainers_outputs_exactly(setup):
    # saliency keeps the noisy copies' outputs (extra["outputs"]); an explainer that does not makes
    # the metric run its own forward pass (shared with the layer's for the representation): the
    # two routes must give the same scores, NaN rule included.
    import copy

    from featurelens.explainers.gradient import Saliency

    class WithoutOutputs(Saliency):
        def _attribute(self, x, target, outputs):
            values, _ = super()._attribute(x, target, outputs)
            return values, {}

    net, _, x = setup
    net = copy.deepcopy(net).double()
    x = x.astype(np.float64)
    kept, plain = fl.explainer("saliency", net), WithoutOutputs(net)
    e = kept.explain(x)
    np.testing.assert_array_equal(e.extra["outputs"], net(torch.from_numpy(x)).detach().numpy())
    assert "outputs" not in plain.explain(x).extra
    for f in (S.relative_input_stability, S.relative_output_stability,
              lambda *a, **k: S.relative_representation_stability(a[0], a[1], layer="3", **k)):
        for rule in (False, True):
            got, rows = [], []
            for ex in (kept, plain):
                before = ex.model.calls
                got.append(f(ex, x, radius=1.0, n_samples=5, seed=2, same_prediction=rule))
                rows.append(ex.model.calls - before)
            np.testing.assert_allclose(got[0], got[1], rtol=1e-12)
            if rule:
                assert np.isfinite(got[0]).any()
            # the kept outputs (and the layer read in the explainer's passes) save one pass over
            # the 5 x N noisy copies, except RIS without the class rule, which needs none
            assert rows[1] - rows[0] == (0 if rule is False and f is S.relative_input_stability else 5 * N)
