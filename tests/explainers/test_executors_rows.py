"""executor= on the black-box explainers and interaction functions, row-parallel explain
(``explain(x, executor=...)``) and per-row random streams.

References are built independently of the explainers: each row's game played by the approximator
itself with the generator ``SeedSequence(seed).spawn(n)[i]``; the serial path (no executor) is the
reference of every executor; the noise of SmoothGrad and the random map are rebuilt from their
documented streams.
"""

import json

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens import approximators
from featurelens.games import MaskedModel
from featurelens.parallel import SerialExecutor, ThreadExecutor, WorkerError

N = 7  # rows; the split below is X[:3] + X[3:]


@pytest.fixture(scope="module")
def net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(5, 12), torch.nn.Tanh(), torch.nn.Linear(12, 3)).double()


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(0).normal(size=(N, 5))


@pytest.fixture(scope="module")
def background():
    return np.random.default_rng(1).normal(size=(3, 5))


@pytest.fixture(scope="module")
def threads():
    with ThreadExecutor(2) as ex:
        yield ex


#: name -> constructor settings (small budgets; seed added by the tests).
SEEDED = {
    "kernel_shap": {"budget": 24},
    "permutation_shap": {"budget": 20},
    "minshap": {"budget": 20},
    "spex": {"budget": 300, "max_order": 2},
    # batch_size=1: every gradient pass is one row, so a row's arithmetic cannot depend on which
    # rows share its batch (BLAS products can, in the last bit; see Explainer.explain).
    "smoothgrad": {"n_samples": 4, "batch_size": 1},
}


def _build(name, net, background, **extra):
    kwargs = dict(SEEDED[name], **extra)
    if name != "smoothgrad":
        kwargs["background"] = background
    return fl.explainer(name, net, **kwargs)


# -- per-row streams: serial == row split == parallel ----------------------------------------------


@pytest.mark.parametrize("name", list(SEEDED))
def test_row_split_and_executors_equal_serial_bitwise(name, net, X, background, threads):
    ex = _build(name, net, background, seed=7)
    serial = ex.explain(X, target=1)
    first, rest = ex.explain(X[:3], target=1), ex.explain(X[3:], target=1, first_row=3)
    np.testing.assert_array_equal(np.concatenate([first.values, rest.values]), serial.values)
    # each call checks its target on one row (a parallel call once, as the serial one), unless its
    # own passes check it (Explainer.target_in_pass)
    assert first.model_calls + rest.model_calls == serial.model_calls + (0 if ex.target_in_pass else 1)
    for executor in (threads, SerialExecutor()):
        par = ex.explain(X, target=1, executor=executor)
        np.testing.assert_array_equal(par.values, serial.values)
        np.testing.assert_array_equal(par.target, serial.target)
        np.testing.assert_array_equal(par.data, serial.data)
        # a parallel call checks a given target by one row on the caller's side (its own error,
        # not a worker's), where the serial call of an explainer with target_in_pass needs none
        assert par.model_calls == serial.model_calls + (1 if ex.target_in_pass else 0)
        if serial.base_values is not None:
            np.testing.assert_array_equal(par.base_values, serial.base_values)
        for key in serial.extra:
            np.testing.assert_array_equal(par.extra[key], serial.extra[key])
        assert json.dumps(par.params, default=str) == json.dumps(serial.params, default=str)


def test_row_split_changed_values_before_per_row_streams(net, X, background):
    """Regression: one generator shared by all rows made row 3 of explain(X) depend on
    rows 0-2 (a 2-way split differed by up to 4.5e-3). Now row i alone, with its index, is row i."""
    ex = _build("kernel_shap", net, background, seed=7)
    full = ex.explain(X, target=0).values
    for i in range(N):
        np.testing.assert_array_equal(ex.explain(X[i:i + 1], target=0, first_row=i).values[0], full[i])


@pytest.mark.parametrize("name, approximator", [("kernel_shap", approximators.kernel_shap),
                                                ("permutation_shap", approximators.permutation_shap)])
def test_row_i_uses_spawned_stream_i(name, approximator, net, X, background):
    """Row i's values are the approximator's on row i's game with SeedSequence(7).spawn(n)[i]."""
    values = _build(name, net, background, seed=7).explain(X, target=2).values
    streams = np.random.SeedSequence(7).spawn(N)
    for i in (0, 4, 6):
        game = MaskedModel(net, X[i], background=background, target=2)
        phi = approximator(game, budget=SEEDED[name]["budget"], seed=np.random.default_rng(streams[i])).values
        np.testing.assert_array_equal(values[i], phi)


def test_minshap_row_uses_spawned_stream(net, X, background):
    e = _build("minshap", net, background, seed=3).explain(X, target=1)
    stream = np.random.SeedSequence(3).spawn(N)[5]
    game = MaskedModel(net, X[5], background=background, target=1)
    res = approximators.minshap(game, budget=20, seed=np.random.default_rng(stream))
    np.testing.assert_array_equal(e.values[5], res.values)
    np.testing.assert_array_equal(e.extra["shapley"][5], res.info["mean"])


def test_random_map_rows_are_spawned_streams(net, X):
    values = fl.explainer("random", net, seed=11).explain(X, target=0).values
    streams = np.random.SeedSequence(11).spawn(N)
    expected = np.stack([np.random.default_rng(s).random(5) for s in streams]).astype(np.float32)
    np.testing.assert_array_equal(values, expected)


def test_smoothgrad_noise_is_per_row_and_copy(net, X):
    """Copy e has one numpy stream, SeedSequence(seed, spawn_key=(e,)), read in row order: row i's
    noise is its i-th slice of d draws (rebuilt here), whatever the batch's first row."""
    ex = fl.explainer("smoothgrad", net, n_samples=3, seed=5, noise="absolute", noise_level=1.0)
    draws = ex.noise_draws(torch.as_tensor(X))
    for e in range(3):
        stream = np.random.default_rng(np.random.SeedSequence(5, spawn_key=(e,))).standard_normal(N * 5)
        for i in (0, 6):
            np.testing.assert_array_equal(draws[e, i].numpy(), stream[i * 5 : (i + 1) * 5])
    later = ex.noise_draws(torch.as_tensor(X[4:]), first_row=4)
    assert torch.equal(later, draws[:, 4:])


def test_smoothgrad_mean_is_the_gradient_mean_over_its_noise(net, X):
    """The map is (1/m) sum_e grad f(x + eps_e) with the documented per-row noise (rebuilt here)."""
    ex = fl.explainer("smoothgrad", net, n_samples=3, seed=2, noise="absolute", noise_level=0.3)
    values = ex.explain(X, target=1).values
    noise = ex.noise_draws(torch.as_tensor(X))
    x = (torch.as_tensor(X)[None] + noise).reshape(-1, 5).requires_grad_(True)
    net(x)[:, 1].sum().backward()
    expected = x.grad.reshape(3, N, 5).mean(0).numpy()
    np.testing.assert_allclose(values, expected, rtol=1e-12, atol=1e-14)


def test_generator_seed_one_root_per_call(net, X, background, threads):
    """A Generator seed: the parts of one parallel call share the call's root, so a parallel call
    equals a serial call made with a Generator in the same state."""
    a = _build("permutation_shap", net, background, seed=np.random.default_rng(9)).explain(X, target=0)
    b = _build("permutation_shap", net, background, seed=np.random.default_rng(9)).explain(
        X, target=0, executor=threads)
    np.testing.assert_array_equal(a.values, b.values)


def test_seed_none_is_fresh_per_call(net, X, background):
    ex = _build("kernel_shap", net, background, seed=None)
    assert not np.array_equal(ex.explain(X[:2], target=0).values, ex.explain(X[:2], target=0).values)


# -- row-parallel explain: every explainer, targets, params ---------------------------------------


@pytest.mark.parametrize("name, kwargs", [
    ("exact_shapley", {}),
    # batch_size=1 where rows of several samples would share a model pass (see SEEDED)
    ("occlusion", {"batch_size": 1}),
    ("integrated_gradients", {"batch_size": 1}),
    ("saliency", {"batch_size": 1}),
    ("random", {"seed": 4}),
])
def test_every_explainer_row_parallel(name, kwargs, net, X, background, threads):
    if name == "exact_shapley":
        kwargs = dict(kwargs, background=background)
    ex = fl.explainer(name, net, **kwargs)
    serial = ex.explain(X)  # target None: the predicted class, resolved once in the caller
    par = ex.explain(X, executor=threads)
    np.testing.assert_array_equal(par.values, serial.values)
    np.testing.assert_array_equal(par.target, serial.target)
    if name != "integrated_gradients":  # IG evaluates its shared baseline once per part
        assert par.model_calls == serial.model_calls


def test_integrated_gradients_parts_join_their_diagnostics(net, X, threads):
    ex = fl.explainer("integrated_gradients", net, batch_size=1)
    serial, par = ex.explain(X, target=2), ex.explain(X, target=2, executor=threads)
    np.testing.assert_array_equal(par.values, serial.values)
    assert par.params["completeness_gap"] == serial.params["completeness_gap"]
    assert par.params["max_relative_gap"] == serial.params["max_relative_gap"]
    np.testing.assert_array_equal(par.base_values, serial.base_values)
    # the baseline pass (one row) once per part instead of once per call, and the caller's one-row
    # check of the given target, which the serial call leaves to its own passes (target_in_pass)
    n_parts = min(N, threads.n_workers * threads.tasks_per_worker)
    assert par.model_calls == serial.model_calls + n_parts - 1 + 1


def test_several_targets_per_row_and_batch_baseline(net, X, background, threads):
    targets = np.array([[0, 2]] * N)
    ex = _build("kernel_shap", net, background, seed=1)
    serial, par = ex.explain(X, target=targets), ex.explain(X, target=targets, executor=threads)
    assert par.values.shape == (N, 2, 5)
    np.testing.assert_array_equal(par.values, serial.values)
    np.testing.assert_array_equal(par.base_values, serial.base_values)
    assert par.params["game_evaluations"] == serial.params["game_evaluations"]
    base = np.random.default_rng(3).normal(size=X.shape)  # one baseline row per sample
    ig = fl.explainer("integrated_gradients", net, batch_size=1)
    a = ig.explain(X, target=targets, baseline=base)
    b = ig.explain(X, target=targets, baseline=base, executor=threads)
    np.testing.assert_array_equal(a.values, b.values)
    ig_given = fl.explainer("integrated_gradients", net, batch_size=1, baseline=base)
    np.testing.assert_array_equal(ig_given.explain(X, target=1, executor=threads).values,
                                  ig_given.explain(X, target=1).values)


def test_spex_per_row_params_are_joined(net, X, background, threads):
    ex = _build("spex", net, background, seed=0)
    serial, par = ex.explain(X, target=0), ex.explain(X, target=0, executor=threads)
    for key in ("spex_queries", "b", "t", "decoder", "n_terms", "game_evaluations", "full_values"):
        assert par.params[key] == serial.params[key] and len(par.params[key]) == N


def test_model_calls_reach_the_callers_model(net, X, background, threads):
    model = fl.Model(net)
    ex = fl.explainer("permutation_shap", model, background=background, budget=20)
    before = model.calls
    e = ex.explain(X, target=0, executor=threads)
    assert model.calls - before == e.model_calls > 0


def test_train_mode_restored_after_parallel_explain(X, background, threads):
    torch.manual_seed(0)
    drop = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 2)).double()
    drop.train()
    ex = fl.explainer("kernel_shap", drop, background=background, budget=24)
    a = ex.explain(X, target=0, executor=threads)
    assert drop.training and all(m.training for m in drop.modules())
    np.testing.assert_array_equal(a.values, ex.explain(X, target=0).values)  # eval mode: no dropout


def test_dataframe_rows_keep_names(background, threads):
    pd = pytest.importorskip("pandas")
    w = np.array([1.0, -2.0, 0.5, 0.0, 3.0])
    frame = pd.DataFrame(np.random.default_rng(0).normal(size=(5, 5)), columns=list("abcde"))
    ex = fl.explainer("kernel_shap", lambda a: a @ w, background=background, budget=32)
    serial, par = ex.explain(frame), ex.explain(frame, executor=threads)
    assert par.feature_names == list("abcde")
    np.testing.assert_array_equal(par.values, serial.values)
    # a linear model's Shapley values are w_j (x_j - E[b_j]) (exact with the full kernel budget)
    np.testing.assert_allclose(par.values, w * (frame.to_numpy() - background.mean(0)), atol=1e-10)


def test_worker_error_reraised_with_its_message(background, threads):
    def model(a):
        if (a[:, 0] > 100).any():
            raise RuntimeError("planted failure on a large first feature")
        return a.sum(axis=1)

    X = np.zeros((6, 5))
    X[4, 0] = 1000.0
    ex = fl.explainer("permutation_shap", model, background=background, budget=20)
    with pytest.raises(WorkerError, match="planted failure"):
        ex.explain(X, target=0, executor=threads)


def test_explain_executor_and_first_row_are_checked(net, X, background):
    ex = _build("kernel_shap", net, background, seed=0)
    with pytest.raises(TypeError, match="executor"):
        ex.explain(X, executor=lambda *a: None)  # the game hook alone has no map()
    with pytest.raises(ValueError, match="first_row"):
        ex.explain(X, first_row=-1)
    with pytest.raises(TypeError, match="executor"):
        fl.explainer("kernel_shap", net, background=background, executor="threads")


# -- executor= on the explainers' games and the interaction functions -----------------------------


@pytest.mark.parametrize("name", ["kernel_shap", "permutation_shap", "minshap", "spex", "exact_shapley"])
def test_game_executor_gives_the_serial_values(name, net, X, background, threads):
    kwargs = {} if name == "exact_shapley" else dict(SEEDED[name], seed=3)
    serial = fl.explainer(name, net, background=background, batch_size=2, **kwargs).explain(X[:3], target=1)
    for executor in (threads, SerialExecutor()):
        ex = fl.explainer(name, net, background=background, batch_size=2, executor=executor, **kwargs)
        e = ex.explain(X[:3], target=1)
        np.testing.assert_array_equal(e.values, serial.values)
        assert e.model_calls == serial.model_calls
        recorded = e.params["executor"]  # provenance stays JSON: the executor's repr, never the object
        assert isinstance(recorded, str) and type(executor).__name__ in recorded and " at 0x" not in recorded
        json.dumps(e.params)


def test_game_executor_and_row_executor_together(net, X, background, threads):
    """A row-parallel call of an explainer that has its own executor: the workers evaluate their
    rows' games themselves (no pool nested in its own tasks), same values."""
    ex = _build("kernel_shap", net, background, seed=2, executor=threads)
    np.testing.assert_array_equal(ex.explain(X, target=0, executor=threads).values,
                                  _build("kernel_shap", net, background, seed=2).explain(X, target=0).values)


def test_occlusion_executor_same_drops_and_calls(threads):
    torch.manual_seed(0)
    cnn = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                              torch.nn.Linear(2 * 6 * 6, 3))
    x = torch.randn(3, 1, 6, 6)
    serial = fl.explainer("occlusion", cnn, window=(1, 2, 2), batch_size=5).explain(x, target=1)
    e = fl.explainer("occlusion", cnn, window=(1, 2, 2), batch_size=5, executor=threads).explain(x, target=1)
    np.testing.assert_array_equal(e.values, serial.values)
    # 9 windows per sample, f(x) of the 3 samples and the one-row target check
    assert e.model_calls == serial.model_calls == 3 * 9 + 3 + 1
    # brute force: the drop of the window that covers each element (tiles do not overlap)
    with torch.no_grad():
        f = cnn(x)[:, 1]
        occluded = x.clone()
        occluded[:, :, 0:2, 2:4] = 0
        drop = (f - cnn(occluded)[:, 1]).numpy()
    np.testing.assert_allclose(e.values[:, 0, 0, 2], drop, rtol=1e-6, atol=1e-6)


def _game(net, x, background):
    return MaskedModel(net, x, background=background, target=1, batch_size=4)


@pytest.mark.parametrize("executor", ["threads", "serial"])
def test_interactions_with_executor_equal_serial(executor, net, X, background, threads):
    ex = threads if executor == "threads" else SerialExecutor()
    game = _game(net, X[0], background)
    for fn, kwargs in ((fl.interactions.exact, {"index": "mobius"}),
                       (fl.interactions.spex, {"budget": 300, "max_order": 2, "seed": 1}),
                       (fl.interactions.proxy_spex, {"budget": 200, "max_order": 2, "seed": 1, "n_estimators": 5})):
        reference = fn(_game(net, X[0], background), **kwargs)
        before = game.calls
        got = fn(game, executor=ex, **kwargs)
        assert got.terms == reference.terms
        assert got.queries == reference.queries == game.calls - before
        assert game.executor is not ex  # the game's own executor is back


def test_exact_interactions_executor_sums_to_the_game(net, X, background, threads):
    """Planted truth: the Moebius coefficients add up to v(N) - v(empty) beyond the constant."""
    game = _game(net, X[2], background)
    inter = fl.interactions.exact(game, executor=threads)
    total = sum(v for k, v in inter.terms.items() if k)
    np.testing.assert_allclose(total, game.grand() - game.empty(), rtol=1e-10, atol=1e-12)


@pytest.mark.slow
def test_process_executor_pickles_the_explainer(net, X, background):
    ProcessExecutor = getattr(fl.parallel, "ProcessExecutor", None)
    if ProcessExecutor is None:
        pytest.skip("featurelens.parallel.ProcessExecutor is not available")
    ex = _build("kernel_shap", net, background, seed=7)
    serial = ex.explain(X, target=1)
    with ProcessExecutor(2) as pool:
        par = ex.explain(X, target=1, executor=pool)
    np.testing.assert_array_equal(par.values, serial.values)
    assert par.model_calls == serial.model_calls


@pytest.mark.parametrize("name, kwargs", [("gradcam", {}), ("wam", {}), ("wam_smoothgrad", {"n_samples": 2, "seed": 1})])
def test_hooked_and_wavelet_explainers_row_parallel(name, kwargs, threads):
    """Grad-CAM's layer hook sees only its own thread's passes; WAM's extra arrays are joined."""
    torch.manual_seed(0)
    cnn = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                              torch.nn.Linear(2 * 8 * 8, 3))
    x = torch.randn(5, 1, 8, 8)
    targets = np.array([[0, 2]] * 5)
    ex = fl.explainer(name, cnn, batch_size=1, **kwargs)
    serial, par = ex.explain(x, target=targets), ex.explain(x, target=targets, executor=threads)
    np.testing.assert_array_equal(par.values, serial.values)
    assert sorted(par.extra) == sorted(serial.extra)
    for key in serial.extra:
        np.testing.assert_array_equal(par.extra[key], serial.extra[key])
    # + the caller's one-row check of the given targets, left to the passes in a serial call
    assert par.model_calls == serial.model_calls + (1 if ex.target_in_pass else 0)
