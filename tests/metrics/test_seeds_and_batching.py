"""Seeds and batching of the metrics: seeds through the validation home (None, an int or a
numpy Generator; "seed must be an int" was the defect), the relative radius of a constant input,
the Model's batch size read and never changed, and NaN model outputs refused."""

import numpy as np
import pytest
import torch

import featurelens as fl
import featurelens.metrics as M
from featurelens.metrics import _perturb
from featurelens.models import Model

SEED_ERRORS = [("a", TypeError, "seed must be None, a non-negative int or a numpy.random.Generator; got 'a'"),
               (-1, ValueError, "seed must be None, a non-negative int or a numpy.random.Generator; got -1"),
               (1.5, TypeError, "seed must be .*got 1.5")]


@pytest.fixture
def lin():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3)).double()
    x = np.random.default_rng(1).normal(size=(5, 6))
    a = np.random.default_rng(2).normal(size=(5, 6))
    return net, x, a


def _seeded_metrics(net, x, a):
    """Every seeded metric as f(seed) -> float64 array."""
    ex = fl.explainer("saliency", net)
    return {
        "faithfulness_correlation": lambda s: M.faithfulness_correlation(net, x, a, n_subsets=6, seed=s, target=1),
        "infidelity": lambda s: M.infidelity(net, x, a, target=1, n_perturbations=5, seed=s),
        "max_sensitivity": lambda s: M.max_sensitivity(ex, x, target=1, n_samples=3, seed=s),
        "avg_sensitivity": lambda s: M.avg_sensitivity(ex, x, target=1, n_samples=3, seed=s),
        "local_lipschitz": lambda s: M.local_lipschitz(ex, x, target=1, n_samples=3, seed=s),
    }


@pytest.mark.parametrize(
    "name", ["faithfulness_correlation", "infidelity", "max_sensitivity", "avg_sensitivity", "local_lipschitz"]
)
def test_seed_accepts_an_int_and_a_generator_built_from_it(lin, name):
    # The metrics said "seed must be an int"; a Generator built from an int draws the same stream.
    f = _seeded_metrics(*lin)[name]
    by_int = f(3)
    np.testing.assert_array_equal(f(np.random.default_rng(3)), by_int)
    np.testing.assert_array_equal(f(np.int64(3)), by_int)
    assert not np.array_equal(f(4), by_int)  # the seed matters
    assert f(None).shape == by_int.shape
    # A Generator is advanced by a call: the next call on the same Generator draws anew.
    g = np.random.default_rng(3)
    first, second = f(g), f(g)
    np.testing.assert_array_equal(first, by_int)
    assert not np.array_equal(second, first)


@pytest.mark.parametrize(
    "name", ["faithfulness_correlation", "infidelity", "max_sensitivity", "avg_sensitivity", "local_lipschitz"]
)
@pytest.mark.parametrize("seed, err, match", SEED_ERRORS)
def test_bad_seed_names_the_argument(lin, name, seed, err, match):
    with pytest.raises(err, match=match):
        _seeded_metrics(*lin)[name](seed)


def test_model_randomization_seed_kinds():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3))
    x = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    a = M.model_randomization("saliency", x, model=net, target=1, seed=np.random.default_rng(5))
    b = M.model_randomization("saliency", x, model=net, target=1, seed=np.random.default_rng(5))
    np.testing.assert_array_equal(a["similarity"], b["similarity"])  # reproducible from a Generator
    for seed, err, match in SEED_ERRORS:
        with pytest.raises(err, match=match):
            M.model_randomization("saliency", x, model=net, seed=seed)


def test_draws_take_a_generator_and_stay_bit_identical_for_an_int():
    # The Quantus parity tests recompute the metrics on these draws: an int seed must keep its stream.
    shape = (3, 4)
    ref = np.random.default_rng(9)
    expected = [ref.uniform(-1.0, 1.0, size=shape) * 0.5 for _ in range(2)]
    for seed in (9, np.random.default_rng(9)):
        got = list(_perturb.uniform_draws(seed, 2, shape, np.full(3, 0.5)))
        np.testing.assert_array_equal(np.stack(got), np.stack(expected))
    ref = np.random.default_rng(4)
    expected = [ref.standard_normal(shape) * 2.0 for _ in range(2)]
    np.testing.assert_array_equal(np.stack(list(_perturb.gaussian_draws(np.random.default_rng(4), 2, shape, np.full(3, 2.0)))), np.stack(expected))
    masks = np.stack(list(_perturb.subset_draws(np.random.default_rng(2), 3, 10, 4, 3)))
    np.testing.assert_array_equal(masks, np.stack(list(_perturb.subset_draws(2, 3, 10, 4, 3))))
    assert masks.sum(-1).tolist() == [[3, 3, 3]] * 4


def test_relative_radius_of_a_constant_input_is_one():
    # max - min of a constant sample is 0; the relative scale is then 1 (featurelens._validation.
    # relative_scale), so radius=0.1 means noise in [-0.1, 0.1] there, not no noise at all.
    torch.manual_seed(0)
    lin = torch.nn.Linear(5, 3).double()
    x = np.stack([np.full(5, 0.7), np.linspace(-1.0, 3.0, 5)])  # a constant sample and a range-4 one
    ex = fl.explainer("input_x_gradient", lin)  # a(x) = w * x: the sensitivity is ||w * u|| / ||w * x||
    noise = np.stack(list(_perturb.uniform_draws(0, 10, x.shape, 0.1 * np.array([1.0, 4.0]))))
    w = lin.weight.detach().numpy()[2]
    ref = np.max(np.linalg.norm(w * noise, axis=2) / np.linalg.norm(w * x, axis=1), axis=0)
    np.testing.assert_allclose(M.max_sensitivity(ex, x, target=2, radius=0.1), ref, rtol=1e-10)
    # The Lipschitz estimate of a(x) = w * x is max ||w * u|| / ||u||: at least min |w_i| > 0, so
    # the constant sample was perturbed.
    assert M.local_lipschitz(ex, x, target=2)[0] >= np.abs(w).min() - 1e-12
    # Infidelity of the exact map of a linear model is 0 whatever the noise scale; with a wrong map
    # it is E[(u . (a - w))^2] = sigma^2 ||a - w||^2, sigma = noise_std * 1 on the constant sample.
    a_wrong = np.broadcast_to(w + 1.0, x.shape)
    inf = M.infidelity(lin, x, a_wrong, target=2, n_perturbations=4000, noise_std=0.1, seed=0)
    np.testing.assert_allclose(inf[0], 0.1**2 * 5, rtol=0.1)
    np.testing.assert_allclose(inf[1], 0.4**2 * 5, rtol=0.1)


# --------------------------------------------------------------------------------------------------
# the Model's batch size: read, respected, never changed


def _counting(net):
    rows = []
    net.register_forward_hook(lambda mod, inp, out: rows.append(inp[0].shape[0]))
    return rows


def _model_metric_calls(m, x, a):
    ex = fl.explainer("saliency", m)
    return {
        "deletion_curve": lambda: M.deletion_curve(m, x, a, target=1, steps=4),
        "insertion_curve": lambda: M.insertion_curve(m, x, a, target=1, steps=4),
        "faithfulness_correlation": lambda: M.faithfulness_correlation(m, x, a, n_subsets=4, target=1),
        "infidelity": lambda: M.infidelity(m, x, a, target=1, n_perturbations=3),
        "max_sensitivity": lambda: M.max_sensitivity(ex, x, target=1, n_samples=3),
        "avg_sensitivity": lambda: M.avg_sensitivity(ex, x, target=None, n_samples=2),
        "local_lipschitz": lambda: M.local_lipschitz(ex, x, n_samples=2),
        "model_randomization": lambda: M.model_randomization("saliency", x, model=m, target=1),
    }


@pytest.mark.parametrize(
    "name",
    ["deletion_curve", "insertion_curve", "faithfulness_correlation", "infidelity", "max_sensitivity",
     "avg_sensitivity", "local_lipschitz", "model_randomization"],
)
def test_metrics_send_at_most_batch_size_rows_and_leave_the_model_alone(lin, name):
    net, x, a = lin
    rows = _counting(net)
    m = Model(net, batch_size=2)
    out = _model_metric_calls(m, x, a)[name]()
    assert rows and max(rows) <= 2, (name, sorted(set(rows)))
    assert m.batch_size == 2 and not m.auto_batch
    # ... and the chunking does not change the numbers.
    ref = _model_metric_calls(net, x, a)[name]()
    if isinstance(out, dict):
        out, ref = out["similarity"], ref["similarity"]
    elif isinstance(out, tuple):
        out, ref = out[0], ref[0]
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-12)


def test_forward_copies_with_chunks_smaller_than_the_batch_matches_whole_copies(lin):
    # batch_size 2 < n = 5: a copy of the batch spans several chunks and a chunk spans two copies;
    # the perturbation of every copy is drawn once, in order.
    net, x, a = lin
    calls = []
    xt = torch.as_tensor(x)
    base = torch.arange(4, dtype=torch.float64).view(4, 1, 1)

    def make_block(s):
        calls.append((s.start, s.stop))
        return xt.unsqueeze(0) + base[s]

    t = torch.ones(5, dtype=torch.long)
    out = _perturb.forward_copies(Model(net, batch_size=2), xt, t, 4, make_block)
    assert [c for c in calls] == sorted(calls) and sum(b - a for a, b in calls) == 4
    with torch.no_grad():
        ref = torch.stack([net(xt + k)[:, 1] for k in range(4)])
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)


def test_metrics_refuse_a_model_that_outputs_nan(lin):
    _, x, a = lin

    def nan_model(z):
        out = np.zeros((z.shape[0], 3))
        out[:, 1] = np.nan
        return out

    for call in (
        lambda: M.deletion_curve(nan_model, x, a, target=1, steps=3),
        lambda: M.faithfulness_correlation(nan_model, x, a, n_subsets=3, target=1),
        lambda: M.infidelity(nan_model, x, a, target=1, n_perturbations=2),
    ):
        with pytest.raises(ValueError, match="NaN"):
            call()
