"""Every approximator of fl.approximators runs on a text game through fl.text, with no text code of
its own: parametrised over fl.approximators.APPROXIMATORS at collection time, so a new
approximator is a text method too (and one registered at run time is picked up by fl.text.explain
and by fl.explainer(name, model, tokenizer=...)).

Each run is checked against the approximator called directly on an identical game (same seed):
the text front end only passes budget / seed / max_order where the approximator takes them and
wraps the result; Shapley-type values are checked against brute-force Shapley values of the
planted game, computed here from all 2^n coalitions.
"""

import inspect
import itertools
import math

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.text import ClassifierGame, GenerationGame, Players, explain

TEXT = "not bad and I love it"
NAMES = sorted(fl.approximators.APPROXIMATORS)


def planted(texts):
    """Class 1 scores "love" 0.6, "it" 0.1 and the pair ("not", "bad") 2.0 only together."""
    out = np.zeros((len(texts), 2))
    for r, t in enumerate(texts):
        words = set(t.split())
        s = 0.6 * ("love" in words) + 0.1 * ("it" in words) + 2.0 * ({"not", "bad"} <= words)
        out[r] = [-s, s]
    return out


class TinyLM(torch.nn.Module):
    """Causal: the logits at position t come from the mean embedding of tokens 0..t."""

    def __init__(self, vocab=12):
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(vocab, 8)
        self.head = torch.nn.Linear(8, vocab)

    def forward(self, ids):
        e = self.emb(ids)
        mean = e.cumsum(1) / torch.arange(1, ids.shape[1] + 1, device=ids.device)[None, :, None]
        return self.head(torch.tanh(3 * mean))


def word_ids(s):  # "w7" -> [7]
    return [int(w[1:]) for w in s.split()]


def classifier_game():
    return ClassifierGame(planted, Players(TEXT), target=1)


LM = TinyLM().eval()


def generation_game():
    return GenerationGame(LM, word_ids, Players("w3 w5 w2 w9 w4 w7"), "w6 w1", bos_token_id=0)


GAMES = {"classifier": classifier_game, "generation": generation_game}


def brute_shapley(game):
    n = game.n_players
    masks = np.array(list(itertools.product([False, True], repeat=n)))
    v = dict(zip(map(tuple, masks), game(masks)))
    phi = np.zeros(n)
    for m, value in v.items():
        for i in range(n):
            if m[i]:
                s = sum(m) - 1
                without = tuple(False if j == i else b for j, b in enumerate(m))
                phi[i] += math.factorial(s) * math.factorial(n - s - 1) / math.factorial(n) * (value - v[without])
    return phi


def own_keywords(fn):
    names = inspect.signature(fn).parameters
    return {k: v for k, v in (("seed", 0), ("max_order", 3)) if k in names}


@pytest.mark.parametrize("kind", sorted(GAMES))
@pytest.mark.parametrize("name", NAMES)
def test_every_approximator_runs_on_a_text_game(name, kind):
    fn = fl.approximators.APPROXIMATORS[name]
    game = GAMES[kind]()
    before = game.calls
    try:
        out = explain(game, method=name, seed=0)
    except ImportError as err:  # an approximator's optional dependency (ProxySPEX: scikit-learn)
        pytest.skip(str(err))
    direct = fn(GAMES[kind](), **own_keywords(fn))
    assert isinstance(direct, fl.approximators.ApproximationResult)
    if direct.interactions is not None:  # SPEX / ProxySPEX: the interactions, by player name
        assert isinstance(out, fl.Interactions)
        assert out.terms == direct.interactions.terms and out.queries == direct.interactions.queries
        assert out.params["player_names"] == list(game.players.names)
        assert game.calls - before == out.queries  # nothing evaluated beyond the method's queries
        return
    assert isinstance(out, fl.Explanation) and out.method == name
    assert out.values.shape == (1, game.n_players) and out.feature_names == list(game.players.names)
    np.testing.assert_array_equal(out.values[0], direct.values)
    assert out.base_values[0] == direct.base_value and out.params["full_value"] == direct.full_value
    assert out.params["game_evaluations"] == direct.game_evaluations
    assert out.model_calls == game.calls - before  # the game's own count of texts sent
    assert out.params["full_value"] == pytest.approx(game.grand(), abs=1e-12)
    if kind == "classifier":
        assert out.params["value"] == "class_output" and out.params["target"] == 1
    else:
        assert out.params["value"] == "continuation_log_prob" and out.params["continuation"] == [6, 1]


@pytest.mark.parametrize("kind", sorted(GAMES))
@pytest.mark.parametrize("name", ["exact_shapley", "kernel_shap"])
def test_shapley_approximators_equal_brute_force_on_text(name, kind):
    """6 players: KernelSHAP's default budget (2 n + 2048) enumerates all 64 coalitions, so both
    are exact; their values equal the Shapley formula on all 2^n coalitions of the game."""
    game = GAMES[kind]()
    e = explain(game, method=name)
    np.testing.assert_allclose(e.values[0], brute_shapley(GAMES[kind]()), atol=1e-9)
    assert e.base_values[0] == pytest.approx(game.empty(), abs=1e-12)


def test_leave_one_out_on_text_is_the_drop_of_each_word():
    game = classifier_game()
    e = explain(game, method="leave_one_out")
    full = game.grand()
    for i in range(game.n_players):
        keep = np.ones(game.n_players, dtype=bool)
        keep[i] = False
        assert e.values[0, i] == pytest.approx(full - game(keep[None])[0], abs=1e-12)
    # the explainer registry's name of the same approximator gives the same values
    np.testing.assert_array_equal(explain(classifier_game(), method="feature_ablation").values, e.values)


def test_a_new_approximator_is_a_text_method_without_text_code(monkeypatch):
    """Registered in fl.approximators only: fl.text.explain and fl.explainer(..., tokenizer=) run it."""

    def halves(game, budget=None, seed=0, scale: float = 0.5):
        full = fl.approximators.leave_one_out(game)
        return fl.approximators.ApproximationResult(values=scale * full.values, base_value=full.base_value,
                                                    full_value=full.full_value,
                                                    game_evaluations=full.game_evaluations,
                                                    info={"n_players": game.n_players, "budget": budget})

    monkeypatch.setitem(fl.approximators.APPROXIMATORS, "halves", halves)
    loo = explain(classifier_game(), method="leave_one_out").values
    np.testing.assert_allclose(explain(classifier_game(), method="halves", scale=0.25).values, 0.25 * loo)
    assert fl.text.method_options("halves") == ("scale",)
    ex = fl.explainer("halves", planted, tokenizer="whitespace", inputs="text", target=1)
    np.testing.assert_allclose(ex.explain(TEXT).values, 0.5 * loo)
    with pytest.raises(TypeError, match=r"unexpected options \['scales'\].*scale"):
        explain(classifier_game(), method="halves", scales=1.0)


def test_unknown_methods_and_budgets_are_refused_by_name():
    with pytest.raises(ValueError, match=r"method must be one of .*leave_one_out.*got 'lasso'"):
        explain(classifier_game(), method="lasso")
    with pytest.raises(ValueError, match=r"budget does not apply to method='exact_shapley'"):
        explain(classifier_game(), method="exact_shapley", budget=10)
    with pytest.raises(ValueError, match=r"leave_one_out evaluates n_players \+ 1 = 7 coalitions; got budget=3"):
        explain(classifier_game(), method="leave_one_out", budget=3)
