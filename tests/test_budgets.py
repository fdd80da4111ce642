"""Every budget-like argument is estimated and refused before any work (featurelens._validation.
check_budget): a ValueError naming the argument and the bound, in well under a second, for values
of 10^9, 10^10 and 10^12; legitimate values below the bound still run."""

from __future__ import annotations

import contextlib
import io
import os
import threading
import time

import numpy as np
import pytest
import torch

import featurelens as fl
import featurelens._budgets as V
from featurelens import approximators as ap
from featurelens.games import Game
from featurelens.learning._grokking import run_grokking

HUGE = (10**9, 10**10, 10**12)
#: A refusal "before work" must come long before the refused work could finish (hours at these
#: sizes); the bound only separates the two and leaves a loaded 2-core machine ample slack.
REFUSAL_BOUND_S = 20.0


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3)).eval()
    x = torch.randn(3, 6)
    a = torch.randn(3, 6)
    game = Game.from_function(lambda m: m.sum(1).astype(float), 8)
    X = np.random.default_rng(0).standard_normal((40, 6))
    return model, x, a, game, X


class _StubHFTokenizer:
    """Recognised as a HuggingFace tokenizer (callable, with convert_ids_to_tokens): enough for the
    text explainer's constructor, which checks its sizes before any text is tokenised."""

    def __call__(self, text, **kwargs):
        raise AssertionError("the tokenizer must not be called before the sizes are checked")

    def convert_ids_to_tokens(self, ids):
        raise AssertionError("the tokenizer must not be called before the sizes are checked")


def _text_cases():
    """fl.text: the budgets of explain() and of the text explainer, integrated gradients' n_steps."""
    from featurelens.text import ClassifierGame, Players

    def model_fn(texts):
        return np.array([[len(t), 0.0] for t in texts])

    text_game = ClassifierGame(model_fn, Players("the movie was not bad", None), inputs="text")
    embed = torch.nn.Embedding(8, 3)
    return [
        ("budget", lambda v: fl.text.explain(text_game, "kernel_shap", budget=v)),
        ("budget", lambda v: fl.text.explain(text_game, "permutation_shap", budget=v)),
        ("budget", lambda v: fl.text.explain(text_game, "lime", budget=v)),
        ("budget", lambda v: fl.text.explain(text_game, "spex", budget=v)),
        ("budget", lambda v: fl.text.explain(text_game, "proxy_spex", budget=v)),
        ("budget", lambda v: fl.text.TextExplainer("kernel_shap", model_fn, "whitespace", inputs="text", budget=v)),
        ("budget", lambda v: fl.text.TextExplainer("lime", model_fn, "whitespace", inputs="text", budget=v)),
        ("budget", lambda v: fl.text.TextExplainer("spex", model_fn, "whitespace", inputs="text", budget=v)),
        ("n_steps", lambda v: fl.text.TextExplainer("integrated_gradients", embed, _StubHFTokenizer(), n_steps=v)),
        ("batch_size", lambda v: _generation_game(_FakeLM(1000), batch_size=v)),
    ]


class _FakeLM(torch.nn.Module):
    """A causal LM with a large vocabulary that allocates almost nothing: its logits are one fixed
    vector broadcast over every sequence and position (an expanded view), so log p(y_j) is
    log_softmax(base)[y_j] whatever the prompt. Records the sequences of each call."""

    def __init__(self, vocab: int):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, 1)  # the vocabulary the game reads at construction
        self.base = torch.randn(vocab, generator=torch.Generator().manual_seed(0))
        self.rows = []

    def forward(self, ids):
        self.rows.append(int(ids.shape[0]))
        return self.base.view(1, 1, -1).expand(ids.shape[0], ids.shape[1], -1)


def _generation_game(lm, **kwargs):
    """8 prompt tokens (one per word), a fill token for removed words (every sequence 8 + 2 long)."""
    from featurelens.text import GenerationGame, Players

    players = Players("a bb ccc dddd eeeee ffffff gg hhh", None)
    return GenerationGame(lm, lambda s: [len(s) + 10], players, [7, 9], removal=1, **kwargs)


def _dataset_and_selection_cases(X):
    """fl.datasets generators and fl.selection's repetition counts (fits, rounds, epochs)."""
    y = (X[:, 0] > 0).astype(int)
    return [
        ("n_samples", lambda v: fl.datasets.xai_tris("linear", "white", n_samples=v)),
        ("n_samples", lambda v: fl.datasets.xai_tris("xor", "correlated", image_size=64, n_samples=v)),
        ("n_samples", lambda v: fl.datasets.superposition(8, 4, 0.9, n_samples=v)),
        ("n_features", lambda v: fl.datasets.superposition(v, 4, 0.9)),
        ("d", lambda v: fl.datasets.superposition(8, v, 0.9)),
        ("n", lambda v: fl.datasets.sparse_game(n=v)),
        ("n_terms", lambda v: fl.datasets.sparse_game(n=10**6, n_terms=v)),
        ("n_terms", lambda v: fl.datasets.sparse_game(n=10**6, n_terms=v, basis="fourier")),
        ("n_players", lambda v: fl.datasets.SparseGame(v, {(0, 1): 1.0})),
        ("n_bootstrap", lambda v: fl.selection.stability(fl.selection.SIOFS(k=2), X, y, n_bootstrap=v)),
        ("n_iter", lambda v: fl.selection.IIFLearn(n_clusters=2, n_iter=v).fit(X)),
        ("n_null", lambda v: fl.selection.IIFLearn(n_clusters=2, n_null=v).fit(X)),
        ("n_ks_null", lambda v: fl.selection.IIFLearn(n_clusters=2, n_ks_null=v).fit(X)),
        ("n_init", lambda v: fl.selection.IIFLearn(n_clusters=2, n_init=v).fit(X)),
        ("n_init", lambda v: fl.selection.MinkowskiWeightedSelector(n_init=v).fit(X)),
        ("max_iter", lambda v: fl.selection.MinkowskiWeightedSelector(max_iter=v).fit(X)),
        ("epochs", lambda v: fl.selection.SAND(k=2, epochs=v, progress=False).fit(X, y)),
        ("iters", lambda v: fl.selection.AGOPSelector(k=2, iters=v).fit(X, y)),
    ]


def _cases(model, x, a, game, X):
    """(argument name, call(value)) for every budget-like argument of the public functions."""
    saliency = fl.explainer("saliency", model)
    exact = fl.interactions.exact(Game.from_function(lambda m: m.sum(1).astype(float), 4), "fourier")
    imgs = np.random.default_rng(0).random((4, 1, 4, 4))
    return [
        ("n_steps", lambda v: fl.explainer("integrated_gradients", model, n_steps=v)),
        ("n_steps", lambda v: fl.explainer("integrated_gradients", model, n_steps=v, method="riemann_trapezoid")),
        ("n_samples", lambda v: fl.explainer("smoothgrad", model, n_samples=v)),
        ("n_subsets", lambda v: fl.metrics.sensitivity_n(model, x, a, n_subsets=v)),
        ("n_samples", lambda v: fl.metrics.monotonicity_correlation(model, x, a, n_samples=v)),
        ("n_subsets", lambda v: fl.metrics.faithfulness_correlation(model, x, a, n_subsets=v)),
        ("n_perturbations", lambda v: fl.metrics.infidelity(model, x, a, n_perturbations=v)),
        ("n_samples", lambda v: fl.metrics.max_sensitivity(saliency, x, n_samples=v)),
        ("n_samples", lambda v: fl.metrics.avg_sensitivity(saliency, x, n_samples=v)),
        ("n_samples", lambda v: fl.metrics.local_lipschitz(saliency, x, n_samples=v)),
        ("n_samples", lambda v: fl.metrics.relative_input_stability(saliency, x, n_samples=v)),
        ("n_samples", lambda v: fl.metrics.relative_output_stability(saliency, x, n_samples=v)),
        ("n_samples", lambda v: fl.metrics.smooth_mprt(saliency, x=x, n_samples=v)),
        ("n_mosaics", lambda v: fl.metrics.focus_mosaics(imgs, np.array([0, 1, 0, 1]), n_mosaics=v)),
        ("budget", lambda v: fl.explainer("kernel_shap", model, baseline=0.0, budget=v)),
        ("budget", lambda v: fl.explainer("permutation_shap", model, baseline=0.0, budget=v)),
        ("budget", lambda v: fl.explainer("minshap", model, baseline=0.0, budget=v)),
        ("budget", lambda v: fl.explainer("spex", model, baseline=0.0, budget=v)),
        ("n_samples", lambda v: fl.explainer("lime", model, baseline=0.0, n_samples=v)),
        ("n_samples", lambda v: fl.explainer("gradient_shap", model, n_samples=v)),
        ("n_permutations", lambda v: fl.selection.MinShapSelector(n_permutations=v).fit(X, X[:, 0] > 0)),
        ("budget", lambda v: ap.kernel_shap(game, budget=v)),
        ("budget", lambda v: ap.permutation_shap(game, budget=v)),
        ("budget", lambda v: ap.minshap(game, budget=v)),
        ("budget", lambda v: fl.interactions.spex(game, budget=v)),
        ("budget", lambda v: fl.interactions.proxy_spex(game, budget=v)),
        ("n_masks", lambda v: exact.r2(Game.from_function(lambda m: m.sum(1).astype(float), 4), n_masks=v)),
        ("n_latents", lambda v: fl.learning.SparseAutoencoder(n_latents=v, progress=False).fit(X)),
        ("n_features", lambda v: fl.learning.RandomFeatureRidge(n_features=v).fit(X, X[:, 0])),
        ("ensemble", lambda v: fl.learning.RandomFeatureRidge(ensemble=v).fit(X, X[:, 0])),
        ("n_features", lambda v: fl.learning.RFRBoostRegressor(n_features=v).fit(X, X[:, 0])),
        ("n_features", lambda v: fl.learning.RFRBoostClassifier(n_features=v).fit(X, X[:, 0] > 0)),
        ("steps", lambda v: fl.learning.train_with_monitor(model, x, torch.tensor([0, 1, 2]), steps=v)),
        ("n_projections", lambda v: fl.learning.GrokAlign(0.1, n_projections=v)),
        ("n_dichotomies", lambda v: fl.learning.manifold_capacity(X, np.arange(40) % 2, n_dichotomies=v)),
        ("p", lambda v: run_grokking(p=v)),
        ("width", lambda v: run_grokking(width=v)),
        ("steps", lambda v: run_grokking(steps=v)),
        *_text_cases(),
        *_dataset_and_selection_cases(X),
    ]


N_CASES = 38 + 10 + 18


def test_the_case_list_is_complete(setup):
    assert len(_cases(*setup)) == N_CASES


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("case", range(N_CASES))
def test_huge_budgets_are_refused_before_work(setup, case, value):
    model, x, a, game, X = setup
    name, call = _cases(*setup)[case]
    calls = game.calls
    start = time.perf_counter()
    with pytest.raises(ValueError) as err:
        call(value)
    elapsed = time.perf_counter() - start
    message = str(err.value)
    assert f"{name}={value}" in message  # names the argument and what was given
    # ... and the bound: the evaluation limit or the available memory, with the way out.
    assert ("the limit is" in message) or ("available" in message), message
    assert "lower" in message, message
    # Not a speed check: a call that started the work (10^9+ evaluations) would run for hours;
    # the bound is loose so a busy CI machine never trips it.
    assert elapsed < REFUSAL_BOUND_S, f"{name}={value} took {elapsed:.2f} s to refuse"
    assert game.calls == calls  # nothing was evaluated


def test_the_message_states_the_estimate_and_the_bound():
    model = torch.nn.Linear(4, 2)
    with pytest.raises(ValueError, match=r"n_steps=1000000000 needs about 1e\+09 model evaluations per input; "
                                         r"the limit is 1e\+08 .*MAX_EVALUATIONS.*lower n_steps"):
        fl.explainer("integrated_gradients", model, n_steps=10**9)


def test_batch_totals_are_refused_before_the_copies_are_evaluated(setup):
    # Within the bound per input, beyond it for the batch (3 inputs x 2 sizes).
    model, x, a, _, _ = setup
    with pytest.raises(ValueError, match=r"n_subsets=40000000 needs about 2\.4e\+08 model evaluations for 3 inputs "
                                         r"and 2 subset sizes"):
        fl.metrics.sensitivity_n(model, x, a, ns=[1, 2], n_subsets=4 * 10**7)


def test_gauss_legendre_nodes_are_bounded_separately():
    model = torch.nn.Linear(4, 2)
    with pytest.raises(ValueError, match=r"n_steps=5000 needs about 5,000 Gauss-Legendre nodes; the limit is 2,048"):
        fl.explainer("integrated_gradients", model, n_steps=5000)
    # A Riemann rule takes that many steps, and its weights still integrate 1 exactly.
    alphas, weights = fl.explainers.gradient.integration_rule("riemann_trapezoid", 5000)
    assert alphas.shape == (5000,) and weights.sum() == pytest.approx(1.0, abs=1e-12)


def test_the_bound_is_raised_by_the_environment(monkeypatch):
    assert V.check_budget(10**8, "budget") == 10**8  # the bound itself is allowed
    with pytest.raises(ValueError, match="budget="):
        V.check_budget(10**8 + 1, "budget")
    monkeypatch.setenv("FEATURELENS_MAX_EVALUATIONS", "1e9")
    assert V.check_budget(10**9, "budget") == 10**9
    monkeypatch.setenv("FEATURELENS_MAX_EVALUATIONS", "many")
    with pytest.raises(ValueError, match="FEATURELENS_MAX_EVALUATIONS must be a positive number"):
        V.check_budget(10, "budget")


def test_check_budget_keeps_the_int_checks():
    with pytest.raises(TypeError, match="n_steps must be an int"):
        V.check_budget(1.5, "n_steps")
    with pytest.raises(ValueError, match="n_subsets must be an int >= 2"):
        V.check_budget(1, "n_subsets", low=2)
    assert V.check_budget(None, "budget", allow_none=True) is None
    assert V.check_budget(np.int64(7), "budget") == 7


def test_memory_estimates_refuse_above_what_is_available(monkeypatch):
    monkeypatch.setattr(V, "available_memory", lambda: 10**6)
    with pytest.raises(ValueError, match=r"n_masks=1000 .*would need about 16 MB of memory, more than the 1 MB available"):
        V.check_budget(1000, "n_masks", nbytes=lambda v: 16 * v * 1000)


def test_counts_and_bytes_are_formatted_without_overflow():
    assert V.format_count(123456) == "123,456"
    assert V.format_count(10**9) == "1e+09"
    assert V.format_count(2**3000) == "1.23e+903"  # 2^3000 = 1.2302...e903
    assert V.format_bytes(1.5e9) == "1.5 GB"
    assert V.format_bytes(32 * 2**3000).endswith("PB")


def test_diagnose_cli_refuses_a_huge_modulus_in_process(tmp_path):
    from featurelens import cli
    import featurelens.learning._grokking  # noqa: F401  (imports outside the timing)

    out = tmp_path / "report"
    err = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stderr(err):
        rc = cli.main(["diagnose", "--out", str(out), "--p", "100000"])
    elapsed = time.perf_counter() - start
    assert rc == 2
    text = err.getvalue()
    assert "p=100000" in text and "of memory" in text and "lower p (--p" in text, text
    assert elapsed < REFUSAL_BOUND_S
    assert not out.exists() or not os.listdir(out)  # no report folder was written


#: Every size option of every command (command, argv before the option, option, what the message
#: names): refused in process, before any file is read or written and before any worker starts. The
#: model and data paths of audit and explain do not exist: a check placed after loading them would
#: answer "not found" instead of naming the option.
CLI_CASES = [
    ("benchmark", ["--no-progress"], "--n-samples", "n_samples={v}"),
    ("benchmark", ["--no-progress"], "--epochs", "epochs={v}"),
    ("benchmark", ["--no-progress"], "--n-explain", "--n-explain={v}"),
    ("benchmark", ["--no-progress"], "--jobs", "--jobs={v}"),
    ("diagnose", [], "--p", "p={v}"),
    ("diagnose", [], "--width", "width={v}"),
    ("diagnose", [], "--steps", "steps={v}"),
    ("audit", ["--model", "{tmp}/no-model.pt", "--data", "{tmp}/no-data.npy"], "--n-explain", "--n-explain={v}"),
    ("audit", ["--model", "{tmp}/no-model.pt", "--data", "{tmp}/no-data.npy", "--executor", "processes"],
     "--workers", "--workers={v}"),
    ("explain", ["--model", "{tmp}/no-model.skops", "--data", "{tmp}/no-data.csv"], "--rows", "--rows={v}"),
    ("explain", ["--model", "{tmp}/no-model.skops", "--data", "{tmp}/no-data.csv"], "--background",
     "--background={v}"),
    ("explain", ["--model", "{tmp}/no-model.skops", "--data", "{tmp}/no-data.csv", "--executor", "threads"],
     "--workers", "--workers={v}"),
    ("explain", ["--model", "{tmp}/no-model.skops", "--data", "{tmp}/no-data.csv", "--executor", "ray"],
     "--workers", "--workers={v}"),
    ("explain", ["--model", "{tmp}/no-model.skops", "--data", "{tmp}/no-data.csv", "--executor", "dask"],
     "--workers", "--workers={v}"),
    ("select", ["{tmp}/data.csv", "--target", "y", "--method", "agop"], "-k", "-k {v} is larger than the number "
     "of feature columns (2)"),
    ("select", ["{tmp}/data.csv", "--target", "y", "--method", "minshap", "--executor", "processes"], "--workers",
     "--workers={v}"),
]

#: Options of an int type that are not sizes (none of them makes a command do more work or hold
#: more memory), with the reason.
CLI_NOT_SIZES = {
    "--seed": "a random seed",
    "--probe-every": "a period: a larger one is fewer measurements",
    "--input-shape": "must hold as many values as each row of the data file (checked against the file)",
}


def _cli_size_options():
    """(command, option) of every option of the command line whose value is an int (or, for
    --background, may be one), read from the parser itself; options with fixed choices excluded."""
    import argparse

    from featurelens import cli
    from featurelens.cli import explain, options

    int_types = {int, options.positive_int, options.non_negative_int, options.shape, explain.background_spec}
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = set()
    for command, subparser in sub.choices.items():
        for action in subparser._actions:
            if action.type in int_types and action.choices is None and action.option_strings:
                found.add((command, max(action.option_strings, key=len)))
    return found


def test_the_cli_case_list_is_complete():
    found = _cli_size_options()
    covered = {(command, option) for command, _, option, _ in CLI_CASES}
    exempt = {(c, o) for c, o in found if o in CLI_NOT_SIZES}
    assert ("explain", "--rows") in found and ("select", "-k") in found  # the walk sees the options
    assert found - exempt == covered, (sorted(found - exempt - covered), sorted(covered - found))


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize("case", range(len(CLI_CASES)), ids=[f"{c}{o}" for c, _, o, _ in CLI_CASES])
def test_huge_cli_sizes_are_refused_in_process(tmp_path, case, value):
    import threading

    from featurelens import cli
    import featurelens._audit.core  # noqa: F401  (imports outside the timing)
    import featurelens._loading  # noqa: F401
    import featurelens.groundtruth.runner  # noqa: F401
    import featurelens.learning._grokking  # noqa: F401
    import featurelens.selection  # noqa: F401

    command, before, option, expected = CLI_CASES[case]
    (tmp_path / "data.csv").write_text("a,b,y\n1,2,0\n3,4,1\n5,6,0\n")
    out = tmp_path / ("report.csv" if command == "select" else "report")
    argv = [command] + [a.format(tmp=tmp_path) for a in before] + [option, str(value), "--out", str(out)]
    threads = threading.active_count()
    err, std = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(std):
        rc = cli.main(argv)
    elapsed = time.perf_counter() - start
    text = err.getvalue()
    assert rc == 2, (argv, text)
    assert text.endswith("\n") and text.count("\n") == 1 and "Traceback" not in text, text  # one line
    assert text.startswith(f"featurelens {command}: error: ") and expected.format(v=value) in text, text
    if option != "-k":  # the bound and the way out
        assert "the limit is" in text or "available" in text, text
        assert "lower " in text, text
    assert elapsed < REFUSAL_BOUND_S, f"{argv} took {elapsed:.2f} s to refuse"
    assert not out.exists()  # nothing was written
    assert threading.active_count() == threads  # no worker was started


def test_worker_bounds_follow_the_cores_and_legitimate_counts_pass():
    import argparse

    from featurelens.cli.executor import ExecutorUsage, check_executor_flags, max_workers

    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - platforms without affinity
        cores = os.cpu_count()
    assert max_workers("processes")[0] == 4 * cores
    assert max_workers("dask")[0] == 4 * cores
    assert max_workers("threads")[0] == max(32, 4 * cores)
    assert max_workers("ray")[0] == os.cpu_count()
    assert max_workers("ray", "auto") is None  # a joined cluster's size is the cluster's

    def flags(kind, workers, address=None):
        return argparse.Namespace(executor=kind, workers=workers, address=address)

    check_executor_flags(flags("processes", 4 * cores))  # the bound itself is allowed
    check_executor_flags(flags("threads", max(32, 4 * cores)))
    with pytest.raises(ExecutorUsage, match=rf"--workers={4 * cores + 1} needs about {4 * cores + 1} workers; "
                                            rf"the limit is {4 * cores} workers \(4 per CPU core"):
        check_executor_flags(flags("processes", 4 * cores + 1))
    with pytest.raises(ExecutorUsage, match="--workers applies to a local Dask cluster"):
        check_executor_flags(flags("dask", 2, "tcp://127.0.0.1:8786"))


@pytest.mark.parametrize("build", ["ThreadExecutor", "ProcessExecutor", "make_executor:threads",
                                   "make_executor:processes", "make_executor:dask"])
@pytest.mark.parametrize("value", [10**9, 10**12])
def test_executors_built_in_python_refuse_too_many_local_workers_before_any_starts(build, value):
    """``ProcessExecutor(10**9)`` from Python is bounded as ``--workers`` is (4 per core)."""
    from featurelens import parallel

    threads = threading.active_count()
    with pytest.raises(ValueError, match=rf"={value} needs about 1e\+\d\d workers; the limit is \d+ workers") as info:
        if build.startswith("make_executor:"):
            parallel.make_executor(build.split(":")[1], workers=value)
        else:
            getattr(parallel, build)(value)
    # no timing bound here: importing distributed alone can take a second on a busy machine;
    # what matters is that nothing started
    assert "lower " in str(info.value)
    assert threading.active_count() == threads  # nothing was started
    cap = parallel.max_workers("processes")[0]
    assert parallel.max_workers("threads")[0] >= cap


@pytest.mark.parametrize("num_cpus", [0, 1])
def test_ray_executor_refuses_too_many_local_actors_before_ray_starts(num_cpus):
    """A local Ray cluster's actors are processes here: ``RayExecutor(num_workers=10**9)`` is refused
    before ``ray.init`` (with ``num_cpus=0`` the cluster's CPU count would not stop them)."""
    ray = pytest.importorskip("ray")
    from featurelens import parallel

    if ray.is_initialized():  # pragma: no cover - another test left a cluster up
        pytest.skip("a Ray cluster is already running in this process")
    cap = parallel.max_workers("processes")[0]
    with pytest.raises(ValueError, match=rf"num_workers={cap + 1} needs about {cap + 1} workers; "
                                         rf"the limit is {cap} workers .*each Ray actor of a local cluster"):
        parallel.RayExecutor(num_workers=cap + 1, num_cpus=num_cpus)
    assert not ray.is_initialized()  # refused before any cluster started


def test_thread_executor_at_the_bound_is_allowed():
    from featurelens import parallel

    cap = parallel.max_workers("threads")[0]
    with parallel.ThreadExecutor(cap) as ex:
        assert ex.map(lambda shared, i: i * 2, range(5)) == [0, 2, 4, 6, 8]
    with pytest.raises(ValueError, match=rf"n={cap + 1} needs about {cap + 1} workers"):
        parallel.ThreadExecutor(cap + 1)


def test_select_k_is_bounded_by_the_header_before_the_rows_are_read(tmp_path, monkeypatch):
    import pandas as pd

    from featurelens import cli

    path = tmp_path / "data.csv"
    path.write_text("a,b,c,y\n1,2,3,0\n4,5,6,1\n7,8,9,0\n")
    reads = []
    real = pd.read_csv

    def counting(*args, **kwargs):
        reads.append(kwargs.get("nrows"))
        return real(*args, **kwargs)

    monkeypatch.setattr(pd, "read_csv", counting)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert cli.main(["select", str(path), "--target", "y", "-k", "4", "--method", "agop"]) == 2
    assert "-k 4 is larger than the number of feature columns (3)" in err.getvalue()
    assert reads == [0]  # only the header was read


def test_moebius_terms_are_bounded_by_their_pairs_and_fourier_terms_are_not():
    # The exact Moebius signal std pairs every term with every other: 10^4 terms are 10^8 pairs.
    with pytest.raises(ValueError, match=r"n_terms=10001 needs about 1e\+08 term pairs .*basis='fourier'"):
        fl.datasets.sparse_game(n=200, n_terms=10**4 + 1)
    terms = {(i, j): 1.0 for i in range(150) for j in range(i + 1, 150)}  # 11,175 pairs of players
    with pytest.raises(ValueError, match=r"len\(terms\)=11175 needs about 1\.25e\+08 term pairs"):
        fl.datasets.SparseGame(150, terms)
    # Fourier: the std is sqrt(sum c^2) (orthonormal characters), no pairs, so the same terms pass.
    game = fl.datasets.SparseGame(150, terms, basis="fourier")
    assert game.signal_std == pytest.approx(np.sqrt(len(terms)))


def test_dataset_memory_estimates_refuse_before_allocating(monkeypatch):
    monkeypatch.setattr(V, "available_memory", lambda: 10**6)
    # 1,000 images of 64x64 at 12 bytes a pixel: about 49 MB, more than 1 MB.
    with pytest.raises(ValueError, match=r"n_samples=1000 \(of 64x64\) would need about 49\.2 MB .* 1 MB available"):
        fl.datasets.xai_tris("linear", "white", image_size=64, n_samples=1000)
    with pytest.raises(ValueError, match=r"superposition\(n_samples=4096, n_features=100, d=10\) would need about"):
        fl.datasets.superposition(100, 10, 0.9)
    monkeypatch.setattr(V, "available_memory", lambda: 10**10)
    data = fl.datasets.xai_tris("linear", "white", n_samples=8)
    assert data.X.shape == (8, 1, 8, 8)


def test_text_sizes_are_refused_when_the_explainer_is_built_and_legitimate_ones_run():
    from featurelens.text import ClassifierGame, Players

    def model_fn(texts):  # a word count: LIME's and KernelSHAP's values are 1 per word
        return np.array([[len(t.split()), 0.0] for t in texts])

    with pytest.raises(ValueError, match=r"n_steps=5000 needs about 5,000 Gauss-Legendre nodes; the limit is 2,048"):
        fl.text.TextExplainer("integrated_gradients", torch.nn.Embedding(8, 3), _StubHFTokenizer(), n_steps=5000)
    ex = fl.text.TextExplainer("kernel_shap", model_fn, "whitespace", inputs="text", budget=64)
    e = ex.explain("a b c d")
    np.testing.assert_allclose(e.values, [[1.0, 1.0, 1.0, 1.0]], atol=1e-9)
    game = ClassifierGame(model_fn, Players("a b c d", None), inputs="text")
    lime = fl.text.explain(game, "lime", budget=200, kernel_width=100.0)
    np.testing.assert_allclose(lime.values, [[1.0, 1.0, 1.0, 1.0]], atol=0.05)


def _generation_masks(q=100):
    return np.random.default_rng(0).random((q, 8)) < 0.5


def test_generation_game_bounds_the_logits_of_one_call_by_the_chunk_bytes():
    from featurelens._batching import DEFAULT_CHUNK_BYTES

    vocab, length = 50_000, 10
    lm = _FakeLM(vocab)
    game = _generation_game(lm)
    values = game(_generation_masks())
    # log p(7) + log p(9) under the broadcast logits, for every coalition.
    logp = torch.log_softmax(lm.base.double(), 0)
    np.testing.assert_allclose(values, float(logp[7] + logp[9]), rtol=1e-12)
    assert sum(lm.rows) == 100
    assert max(lm.rows) * length * vocab * 4 <= DEFAULT_CHUNK_BYTES  # one call's float32 logits
    assert max(lm.rows) > 1  # and not one sequence at a time
    assert game.rows_per_call(length) == max(lm.rows)


def test_generation_game_learns_an_unknown_vocabulary_from_one_sequence():
    from featurelens._batching import DEFAULT_CHUNK_BYTES

    vocab, length = 50_000, 10
    lm = _FakeLM(vocab)
    game = _generation_game(lambda ids: lm(ids))  # a plain callable: no embedding to read the vocabulary from
    values = game(_generation_masks())
    logp = torch.log_softmax(lm.base.double(), 0)
    np.testing.assert_allclose(values, float(logp[7] + logp[9]), rtol=1e-12)
    assert lm.rows[0] == 1 and sum(lm.rows) == 100
    assert max(lm.rows) * length * vocab * 4 <= DEFAULT_CHUNK_BYTES and max(lm.rows[1:]) > 1


def test_generation_game_keeps_a_batch_size_that_fits_and_refuses_one_that_does_not(monkeypatch):
    lm = _FakeLM(50_000)
    game = _generation_game(lm, batch_size=4)
    game(_generation_masks(10))
    assert lm.rows == [4, 4, 2]
    # 1,024 sequences x 10 tokens x 50,000 entries: about 3.7 GB in one call, more than 100 MB.
    monkeypatch.setattr(V, "available_memory", lambda: 10**8)
    with pytest.raises(ValueError, match=r"batch_size=1024 \(the logits of 1,024 sequences x 10 tokens x 50,000 "
                                         r"vocabulary entries .*would need about 3\.69 GB of memory, more than the "
                                         r"100 MB available; lower batch_size"):
        _generation_game(lm, batch_size=1024)
    # A vocabulary first seen in the logits is checked then, before the next call.
    plain = _generation_game(lambda ids: lm(ids), batch_size=1024)
    lm.rows.clear()
    with pytest.raises(ValueError, match=r"batch_size=1024 .*50,000 vocabulary entries"):
        plain(_generation_masks(10))
    assert lm.rows == [1]  # one sequence told the vocabulary; the 1,024-row call never ran
