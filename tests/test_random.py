"""featurelens._random, the one home of randomness: seeds, roots, per-row streams, the vectorised
per-row draws and the seed record.

References are numpy's own objects (``SeedSequence``, ``default_rng``, ``spawn``), never numbers
produced by the code under test: the per-row streams equal ``SeedSequence(root).spawn(n)[i]``, the
vectorised draws equal one numpy Generator per row, the noise of a row does not depend on the batch
it is drawn in, and an explainer's values do not depend on ``batch_size`` or on how its rows are
split. Every seeded API records its seed one way (:func:`featurelens._random.seed_record`), and the
recorded ``seed_root`` repeats the call.
"""

import ast
import pathlib

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens import _random as R

SRC = pathlib.Path(fl.__file__).parent


# --------------------------------------------------------------------------------------------------
# seeds


@pytest.mark.parametrize("seed", [None, 0, 7, np.int64(3), np.uint8(5), 2**70])
def test_parse_seed_takes_none_and_non_negative_ints_as_plain_ints(seed):
    got = R.parse_seed(seed)
    if seed is None:
        assert got is None
    else:
        assert type(got) is int and got == int(seed)


def test_parse_seed_returns_a_generator_itself():
    g = np.random.default_rng(1)
    assert R.parse_seed(g) is g


@pytest.mark.parametrize("bad", [1.0, "0", True, np.bool_(False), [1], np.random.RandomState(0)])
def test_a_seed_of_the_wrong_kind_is_refused_naming_the_argument(bad):
    with pytest.raises(TypeError, match=r"my_seed must be None, a non-negative int or a numpy.random.Generator; got"):
        R.parse_seed(bad, "my_seed")


def test_a_negative_seed_is_refused_naming_the_argument():
    with pytest.raises(ValueError, match=r"my_seed must be None, a non-negative int or a numpy.random.Generator; got -1"):
        R.parse_seed(-1, "my_seed")
    for fn in (R.numpy_rng, R.root_seed, R.torch_generator):
        with pytest.raises(ValueError, match="other"):
            fn(-3, name="other")


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: fl.explainer("smoothgrad", m, seed=1.5),
        lambda m, x: fl.explainer("gradient_shap", m, seed="1"),
        lambda m, x: fl.explainer("kernel_shap", m, seed=-2, baseline=0.0),
        lambda m, x: fl.metrics.infidelity(m, x, np.ones((3, 4)), 0, seed=0.5),
        lambda m, x: fl.approximators.permutation_shap(fl.datasets.sparse_game(4, 3, seed=0), budget=20, seed=True),
    ],
)
def test_seeded_apis_refuse_a_bad_seed_with_a_clear_error(call):
    m = torch.nn.Linear(4, 2)
    with pytest.raises((TypeError, ValueError), match=r"seed must be None, a non-negative int or a numpy.random.Generator"):
        call(m, torch.rand(3, 4))


def test_numpy_rng_is_default_rng_of_an_int_and_the_generator_itself():
    np.testing.assert_array_equal(R.numpy_rng(11).random(5), np.random.default_rng(11).random(5))
    g = np.random.default_rng(2)
    assert R.numpy_rng(g) is g


def test_root_seed_int_generator_and_none():
    assert R.root_seed(12) == 12
    g, twin = np.random.default_rng(4), np.random.default_rng(4)
    assert R.root_seed(g) == int(twin.integers(0, 2**63 - 1))
    assert R.root_seed(g) == int(twin.integers(0, 2**63 - 1))  # the Generator advances once per call
    assert R.root_seed(np.random.default_rng(4), high=2**31 - 1) == int(np.random.default_rng(4).integers(0, 2**31 - 1))
    for high in (2**63 - 1, 2**31 - 1, 10):
        r = R.root_seed(None, high=high)
        assert type(r) is int and 0 <= r < high


def test_torch_generator_is_seeded_with_the_root():
    assert R.torch_generator(9).initial_seed() == 9
    g = R.torch_generator(np.random.default_rng(5))
    assert g.initial_seed() == int(np.random.default_rng(5).integers(0, 2**63 - 1))
    torch.testing.assert_close(torch.rand(4, generator=R.torch_generator(3)),
                               torch.rand(4, generator=torch.Generator().manual_seed(3)))


def test_spawn_rngs_are_numpys_spawned_children():
    want = [np.random.default_rng(s).random(3) for s in np.random.SeedSequence(8).spawn(3)]
    for got, ref in zip(R.spawn_rngs(8, 3), want):
        np.testing.assert_array_equal(got.random(3), ref)
    want = [g.random(3) for g in np.random.default_rng(1).spawn(2)]
    for got, ref in zip(R.spawn_rngs(np.random.default_rng(1), 2), want):
        np.testing.assert_array_equal(got.random(3), ref)


def test_keyed_rng_is_the_seed_sequence_of_the_words_and_needs_an_int():
    np.testing.assert_array_equal(R.keyed_rng(5, 1).random(4),
                                  np.random.default_rng(np.random.SeedSequence([5, 1])).random(4))
    assert not np.array_equal(R.keyed_rng(5, 1).random(4), R.numpy_rng(5).random(4))
    with pytest.raises(TypeError, match="seed must be an int"):
        R.keyed_rng(np.random.default_rng(0), 1)


# --------------------------------------------------------------------------------------------------
# per-row streams


@pytest.mark.parametrize("root", [0, 17, 2**40 + 1])
def test_row_streams_are_the_spawned_children_of_the_root(root):
    children = np.random.SeedSequence(root).spawn(6)
    for i in range(6):
        np.testing.assert_array_equal(R.row_seed_sequence(root, i).generate_state(4),
                                      children[i].generate_state(4))
        np.testing.assert_array_equal(R.row_rng(root, i).random(3), np.random.default_rng(children[i]).random(3))


def _noise_reference(root, n, d, copies):
    """Copy e's stream read in row order: row i takes elements [i d, (i + 1) d)."""
    return np.stack([np.random.default_rng(np.random.SeedSequence(root, spawn_key=(e,))).standard_normal((n, d))
                     for e in range(copies)])


def test_row_normal_reads_each_copy_stream_in_row_order_whatever_the_batch():
    root, n, copies = 21, 7, 3
    x = torch.zeros(n, 2, 3, dtype=torch.float64)
    want = _noise_reference(root, n, 6, copies).reshape(copies, n, 2, 3)
    whole = R.RowNormal(root, 0, x, copies)
    for e in range(copies):
        np.testing.assert_array_equal(whole.copy(e).numpy(), want[e])
    # a batch of rows 4.. (a row split, a worker's part): the same rows of the same streams
    part = R.RowNormal(root, 4, x[4:], copies)
    for e in range(copies):
        np.testing.assert_array_equal(part.copy(e).numpy(), want[e, 4:])
    # chunks of (copy, sample) pairs of any size, copies in order: the same values
    chunked = R.RowNormal(root, 0, x, copies)
    pairs = [(e, i) for e in range(copies) for i in range(n)]
    for lo in range(0, len(pairs), 4):
        chunk = pairs[lo : lo + 4]
        got = chunked.rows(torch.tensor([c for c, _ in chunk]), torch.tensor([s for _, s in chunk]))
        np.testing.assert_array_equal(got.numpy(), np.stack([want[c, s] for c, s in chunk]))


def test_row_normal_casts_to_the_batch_dtype():
    x = torch.zeros(2, 3, dtype=torch.float32)
    got = R.RowNormal(5, 0, x, 1).copy(0)
    assert got.dtype == torch.float32
    np.testing.assert_array_equal(got.numpy(), _noise_reference(5, 2, 3, 1)[0].astype(np.float32))


def _reference_draws(root, row_start, n, s, n_choices, p):
    index, uniform = np.empty((n, s), dtype=np.int64), np.empty((n, s))
    for k in range(n):
        index[k], uniform[k] = R.row_draws_numpy(root, row_start + k, s, n_choices, p)
    return index, uniform


@pytest.mark.parametrize("root", [0, 5, 2**32 - 1, 2**32, 2**63 - 3, 2**140 + 7])
def test_vectorised_row_draws_are_numpys_per_row_generators(root):
    rng = np.random.default_rng(1)
    # 16: Lemire never rejects; 3, 1000: rarely; 2**31 + 11: about half the draws are rejected.
    for n_choices in (1, 2, 3, 16, 1000, 2**31 + 11):
        for s in (1, 4, 5):
            row_start = int(rng.integers(0, 5000))
            got = R.row_draws(root, row_start, 23, s, n_choices, None)
            want = _reference_draws(root, row_start, 23, s, n_choices, None)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
    for n_choices in (1, 2, 9):
        p = rng.random(n_choices)
        p = p / p.sum()
        got = R.row_draws(root, 11, 17, 5, n_choices, p)
        want = _reference_draws(root, 11, 17, 5, n_choices, p)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_row_draws_match_the_documented_stream_of_each_row():
    # Row i of a call: SeedSequence(root, spawn_key=(i,)).spawn(1)[0], choice then random.
    root, s = 123, 5
    index, uniform = R.row_draws(root, 40, 3, s, 16, None)
    for k in range(3):
        g = np.random.default_rng(np.random.SeedSequence(root, spawn_key=(40 + k,)).spawn(1)[0])
        np.testing.assert_array_equal(index[k], g.choice(16, size=s, replace=True))
        np.testing.assert_array_equal(uniform[k], g.random(s))
    assert R.row_draws(root, 0, 0, s, 16, None)[0].shape == (0, s)


def test_row_draws_of_rows_from_2_to_the_32_fall_back_to_numpy():
    start = 2**32 - 2
    got = R.row_draws(3, start, 4, 3, 7, None)
    want = _reference_draws(3, start, 4, 3, 7, None)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


# --------------------------------------------------------------------------------------------------
# explainers: per-row streams independent of the batch, same seed same values


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(5, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3)).double()


_SEEDED = {
    "smoothgrad": {"n_samples": 3},
    "gradient_shap": {"n_samples": 4, "stdevs": 0.2, "background": np.random.default_rng(0).normal(size=(6, 5))},
    "random": {},
    "kernel_shap": {"budget": 30, "baseline": 0.0},
    "lime": {"n_samples": 30, "baseline": 0.0},
}


@pytest.mark.parametrize("name", sorted(_SEEDED))
def test_a_rows_values_do_not_depend_on_batch_size_or_on_the_split(name):
    x = np.random.default_rng(3).normal(size=(6, 5))
    whole = fl.explainer(name, _mlp(), seed=5, **_SEEDED[name]).explain(x, target=0).values
    ones = fl.explainer(name, _mlp(), seed=5, batch_size=1, **_SEEDED[name]).explain(x, target=0).values
    ex = fl.explainer(name, _mlp(), seed=5, **_SEEDED[name])
    split = np.concatenate([ex.explain(x[:2], target=0).values, ex.explain(x[2:], target=0, first_row=2).values])
    np.testing.assert_allclose(ones, whole, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(split, whole, rtol=1e-12, atol=1e-12)
    again = fl.explainer(name, _mlp(), seed=5, **_SEEDED[name]).explain(x, target=0).values
    np.testing.assert_array_equal(again, whole)
    other = fl.explainer(name, _mlp(), seed=6, **_SEEDED[name]).explain(x, target=0).values
    assert not np.array_equal(other, whole)


@pytest.mark.parametrize("name", sorted(_SEEDED))
def test_int_generator_and_none_seeds_are_recorded_one_way_and_the_root_repeats_the_call(name):
    x = np.random.default_rng(4).normal(size=(3, 5))
    e = fl.explainer(name, _mlp(), seed=np.int64(7), **_SEEDED[name]).explain(x, target=0)
    assert e.params["seed"] == 7 and type(e.params["seed"]) is int and "seed_root" not in e.params
    g = fl.explainer(name, _mlp(), seed=np.random.default_rng(2), **_SEEDED[name]).explain(x, target=0)
    assert g.params["seed"] == "generator"
    assert g.params["seed_root"] == R.root_seed(np.random.default_rng(2))  # one draw per call
    replay = fl.explainer(name, _mlp(), seed=g.params["seed_root"], **_SEEDED[name]).explain(x, target=0)
    np.testing.assert_array_equal(replay.values, g.values)
    fresh = fl.explainer(name, _mlp(), seed=None, **_SEEDED[name]).explain(x, target=0)
    assert fresh.params["seed"] is None and type(fresh.params["seed_root"]) is int
    replay = fl.explainer(name, _mlp(), seed=fresh.params["seed_root"], **_SEEDED[name]).explain(x, target=0)
    np.testing.assert_array_equal(replay.values, fresh.values)


def test_a_generator_seed_gives_the_same_values_as_an_equal_generator():
    x = np.random.default_rng(4).normal(size=(3, 5))
    a = fl.explainer("smoothgrad", _mlp(), n_samples=3, seed=np.random.default_rng(9)).explain(x, target=0)
    b = fl.explainer("smoothgrad", _mlp(), n_samples=3, seed=np.random.default_rng(9)).explain(x, target=0)
    np.testing.assert_array_equal(a.values, b.values)


@pytest.mark.parametrize(
    "seed, want",
    [(None, {"seed": None}), (3, {"seed": 3}), (np.int32(4), {"seed": 4}),
     (np.random.default_rng(0), {"seed": "generator"})],
)
def test_seed_record_without_a_root(seed, want):
    got = R.seed_record(seed)
    assert got == want and all(type(got[k]) is type(want[k]) for k in want)


def test_seed_record_with_a_root_adds_it_only_where_the_seed_is_not_the_int():
    assert R.seed_record(3, 3) == {"seed": 3}
    assert R.seed_record(None, 11) == {"seed": None, "seed_root": 11}
    assert R.seed_record(np.random.default_rng(0), np.int64(12)) == {"seed": "generator", "seed_root": 12}


def test_interactions_record_a_generator_seed_as_every_api_does():
    from featurelens.interactions import spex

    game = fl.datasets.sparse_game(6, 4, seed=0)
    assert spex(game, budget=800, max_order=2, seed=np.random.default_rng(0)).params["seed"] == "generator"
    assert spex(game, budget=800, max_order=2, seed=np.int64(2)).params["seed"] == 2


# --------------------------------------------------------------------------------------------------
# one home


def _calls_outside(names: set) -> list:
    """(file, line, name) of calls to ``names`` (as a bare name or an attribute) outside _random.py."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "_random.py" and path.parent == SRC:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                if name in names:
                    found.append((str(path.relative_to(SRC)), node.lineno, name))
    return found


def test_seed_sequences_generators_and_spawns_are_made_only_in_featurelens_random():
    # numpy Generators, SeedSequences, bit generators and torch Generators are built in one module;
    # every other module asks it (numpy_rng, spawn_rngs, keyed_rng, row_rng, torch_generator).
    made = _calls_outside({"SeedSequence", "default_rng", "PCG64", "Philox", "spawn", "Generator", "RandomState"})
    assert made == []


def test_the_seed_helpers_live_only_in_featurelens_random():
    from featurelens import _validation

    for name in ("check_seed", "numpy_rng", "torch_generator", "seed_root", "row_seed_sequence", "row_rng",
                 "seed_param", "parse_seed", "root_seed", "seed_record"):
        assert not hasattr(_validation, name), name
    from featurelens.explainers import backprop, gradient

    for module, name in ((gradient, "_RowNoise"), (backprop, "_row_draws"), (backprop, "_PCG64Rows")):
        assert not hasattr(module, name), name


def test_torch_seeded_equals_manual_seed_and_restores_the_callers_state():
    import torch

    from featurelens._random import torch_seeded

    torch.manual_seed(123)
    before = torch.get_rng_state()
    with torch_seeded(7):
        inside = torch.rand(5)
    assert torch.equal(torch.get_rng_state(), before)  # the caller's stream is untouched
    torch.manual_seed(7)
    assert torch.equal(inside, torch.rand(5))  # the same draws as a plain manual_seed(7)
    torch.set_rng_state(before)
    with torch_seeded(None):  # None: the global generator as it is, advancing
        a = torch.rand(3)
    torch.set_rng_state(before)
    assert torch.equal(a, torch.rand(3))
    assert not torch.equal(torch.get_rng_state(), before)


def test_no_module_but_random_seeds_torchs_global_generator():
    """The one home of randomness: ``torch.manual_seed`` is called in ``_random.py`` only (through
    ``torch_seeded``, which restores the caller's state)."""
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src" / "featurelens"
    offenders = [str(p.relative_to(src)) for p in src.rglob("*.py")
                 if p.name != "_random.py" and "torch.manual_seed(" in p.read_text()]
    assert offenders == []
