"""fl.text: players, classifier and generation games, explain, and fl.plots.text."""

import itertools

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.text import ClassifierGame, GenerationGame, Players, explain

from ._planted import minilm_tokenizer

TEXT = "the movie was not bad and I love the great ending"
# Planted truth: "great" +1.0, "love" +0.6, and the pair ("not", "bad") +2.0 only together.
WEIGHTS = {"great": 1.0, "love": 0.6}


def planted_model(texts):
    out = np.zeros((len(texts), 2))
    for r, t in enumerate(texts):
        words = set(t.split())
        score = sum(w for k, w in WEIGHTS.items() if k in words) + 2.0 * ({"not", "bad"} <= words)
        out[r] = [-score, score]
    return out


@pytest.fixture
def game():
    return ClassifierGame(planted_model, Players(TEXT), target=1)


# -- players ----------------------------------------------------------------------------------------


def test_players_words_sentences_callable():
    p = Players(TEXT)
    assert p.n == 11 and p.pieces == TEXT.split()
    assert p.names[0] == "the#0" and p.names[8] == "the#8" and p.names[1] == "movie"  # distinct names
    mask = np.ones(11, dtype=bool)
    mask[[3, 4]] = False
    assert p.keep(mask) == "the movie was and I love the great ending"
    assert p.keep(mask, removal="mask") == "the movie was [MASK] [MASK] and I love the great ending"
    s = Players("One two. Three four! Five?", unit="sentence")
    assert s.pieces == ["One two.", "Three four!", "Five?"]
    assert s.keep([True, False, True]) == "One two. Five?"
    c = Players("ab cd", tokenizer=lambda t: ["a", "b", "c", "d"], unit="token")
    assert c.pieces == ["a", "b", "c", "d"] and c.keep([1, 0, 0, 1]) == "a d"
    assert Players("ab cd", tokenizer=lambda t: ["a", "b", "c", "d"], unit="word").pieces == ["ab", "cd"]


def test_players_errors():
    with pytest.raises(ValueError, match="unit"):
        Players(TEXT, unit="letter")
    with pytest.raises(ValueError, match="unit='token' needs a tokenizer"):
        Players(TEXT, unit="token")
    with pytest.raises(ValueError, match="text"):
        Players("   ")
    with pytest.raises(ValueError, match="does not appear"):
        Players("abc", tokenizer=lambda t: ["x"])
    p = Players(TEXT)
    with pytest.raises(ValueError, match="removal"):
        p.keep(np.ones(11, dtype=bool), removal="erase")
    with pytest.raises(ValueError, match="mask"):
        p.keep(np.ones(5, dtype=bool))


# -- classifier game ----------------------------------------------------------------------------------


def test_classifier_game_values_and_errors(game):
    assert game.n_players == 11 and game.target == 1
    assert game.grand() == pytest.approx(3.6) and game.empty() == 0.0
    # output="softmax": the probability of class 1 from the two logits
    g = ClassifierGame(planted_model, Players(TEXT), target=1, output="softmax")
    assert g.grand() == pytest.approx(1 / (1 + np.exp(-7.2)))
    assert ClassifierGame(planted_model, Players(TEXT)).target == 1  # predicted class
    with pytest.raises(ValueError, match="target"):
        ClassifierGame(planted_model, Players(TEXT), target=2)
    with pytest.raises(TypeError, match="target"):
        ClassifierGame(planted_model, Players(TEXT), target=1.0)
    with pytest.raises(ValueError, match="removal"):
        ClassifierGame(planted_model, Players(TEXT), target=1, removal="blank")
    with pytest.raises(ValueError, match="removal"):
        ClassifierGame(planted_model, Players(TEXT), target=1, removal=0)  # an id needs token ids
    with pytest.raises(ValueError, match="output"):
        ClassifierGame(planted_model, Players(TEXT), target=1, output="prob")
    with pytest.raises(TypeError, match="players"):
        ClassifierGame(planted_model, TEXT, target=1)
    with pytest.raises(ValueError, match="model_fn"):
        ClassifierGame(lambda t: np.zeros((len(t) + 1, 2)), Players(TEXT), target=1)


def test_classifier_game_executor_and_batches(game):
    from featurelens.parallel import ThreadExecutor

    masks = np.random.default_rng(0).random((50, 11)) < 0.5
    g = ClassifierGame(planted_model, Players(TEXT), target=1, batch_size=7, executor=ThreadExecutor(2))
    np.testing.assert_array_equal(g(masks), game(masks))


@pytest.mark.parametrize("method", ["exact", "kernel_shap", "permutation_shap"])
def test_planted_words_ranked_first(game, method):
    e = explain(game, method=method, **({} if method == "exact" else {"budget": 600}))
    assert isinstance(e, fl.Explanation) and e.values.shape == (1, 11)
    assert e.feature_names == Players(TEXT).names
    top = {e.feature_names[i] for i in np.argsort(-e.values[0])[:4]}
    assert top == {"great", "love", "not", "bad"}
    # planted Shapley values: the pair's 2.0 is shared equally
    expected = np.zeros(11)
    expected[[3, 4]] = 1.0
    expected[TEXT.split().index("great")] = 1.0
    expected[TEXT.split().index("love")] = 0.6
    np.testing.assert_allclose(e.values[0], expected, atol=1e-8 if method != "permutation_shap" else 0.05)
    assert e.base_values[0] == 0.0 and e.model_calls > 0


def test_spex_finds_the_pair(game):
    inter = explain(game, method="spex", budget=1000, max_order=2, seed=0)
    assert isinstance(inter, fl.Interactions) and inter.params["player_names"] == Players(TEXT).names
    (pair, value), = inter.top(1, order=2)
    assert pair == (3, 4)  # "not" x "bad"
    # Fourier coefficient of a Moebius pair of weight 2.0 on +-1 features: 2.0 / 4
    assert abs(value) == pytest.approx(0.5, abs=1e-6)
    proxy = explain(game, method="proxy_spex", budget=200, max_order=2, seed=0, n_estimators=30)
    assert proxy.top(1, order=2)[0][0] == (3, 4)


def test_feature_ablation_is_leave_one_out(game):
    e = explain(game, method="feature_ablation")
    expected = np.zeros(11)
    expected[[3, 4]] = 2.0  # removing "not" or "bad" breaks the pair
    expected[TEXT.split().index("great")] = 1.0
    expected[TEXT.split().index("love")] = 0.6
    np.testing.assert_allclose(e.values[0], expected, atol=1e-12)
    full = 3.6
    assert e.params["full_value"] == pytest.approx(full) and e.model_calls == 12
    # base + sum over the kept players is v(N) on the full text and v(N - i) leaving one out
    assert e.base_values[0] + e.values[0].sum() == pytest.approx(full)
    with pytest.raises(ValueError, match="budget"):
        explain(game, method="feature_ablation", budget=5)


def test_lime_recovers_a_linear_model():
    weights = np.linspace(-1.0, 1.0, 11)
    text = TEXT.replace("the great", "a great")  # eleven distinct words

    def linear(texts):
        kept = [set(t.split()) for t in texts]
        return np.array([[sum(w for word, w in zip(text.split(), weights) if word in k) + 0.5] for k in kept])

    text_game = ClassifierGame(linear, Players(text), target=0)
    for sampler in ("bernoulli", "lime_text"):
        e = explain(text_game, method="lime", budget=300, alpha=0.0, sampler=sampler, seed=1)
        np.testing.assert_allclose(e.values[0], weights, atol=1e-9)
        assert e.base_values[0] == pytest.approx(0.5) and e.params["surrogate_r2"] == pytest.approx(1.0)
        assert e.model_calls == 300


def test_lime_planted_and_samplers(game):
    e = explain(game, method="lime", budget=800, seed=0)
    top = {e.feature_names[i] for i in np.argsort(-e.values[0])[:4]}
    assert top == {"great", "love", "not", "bad"}
    again = explain(game, method="lime", budget=800, seed=0)
    np.testing.assert_array_equal(e.values, again.values)
    from featurelens.approximators.lime import lime_masks

    masks = lime_masks(20000, 11, "lime_text", np.random.default_rng(0))
    removed = 11 - masks.sum(axis=1)
    counts = np.bincount(removed, minlength=11)
    assert counts[0] == 0 and counts[11:].sum() == 0
    assert np.allclose(counts[1:11] / 20000, 0.1, atol=0.01)  # uniform over 1..10 removed
    per_player = (~masks).mean(axis=0)
    assert np.allclose(per_player, per_player.mean(), atol=0.02)  # which ones: uniform


def test_explain_errors(game):
    with pytest.raises(ValueError, match="method"):
        explain(game, method="lim")
    with pytest.raises(ValueError, match="sampler"):
        explain(game, method="lime", sampler="uniform")
    with pytest.raises(ValueError, match="budget"):
        explain(game, method="lime", budget=2)
    with pytest.raises(TypeError, match="options"):
        explain(game, method="feature_ablation", seed_ish=1)
    with pytest.raises(ValueError, match="budget"):
        explain(game, method="exact", budget=10)


# -- generation game ---------------------------------------------------------------------------------

VOCAB = 12
BOS = 0


class TinyLM(torch.nn.Module):
    """Causal: the logits at position t come from the mean embedding of tokens 0..t."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(VOCAB, 8)
        self.head = torch.nn.Linear(8, VOCAB)

    def forward(self, ids):
        e = self.emb(ids)
        mean = e.cumsum(1) / torch.arange(1, ids.shape[1] + 1, device=ids.device)[None, :, None]
        return self.head(torch.tanh(3 * mean))


def word_ids(s):  # a word-level tokenizer: "w7" -> [7]
    return [int(w[1:]) for w in s.split()]


PROMPT = "w3 w5 w2 w9 w4 w7"
CONT = "w6 w1 w8"


def brute_log_prob(lm, mask, removal_id=None, per_token=False):
    prompt = [BOS] + [t if keep else removal_id for t, keep in zip(word_ids(PROMPT), mask)
                      if keep or removal_id is not None]
    cont = word_ids(CONT)
    seq = torch.tensor([prompt + cont])
    with torch.no_grad():
        logp = torch.log_softmax(lm(seq)[0].double(), -1)
    each = [float(logp[len(prompt) - 1 + j, c]) for j, c in enumerate(cont)]
    return each if per_token else sum(each)


@pytest.mark.parametrize("removal", ["delete", 11])
def test_generation_game_brute_force(removal):
    lm = TinyLM().eval()
    players = Players(PROMPT)
    game = GenerationGame(lm, word_ids, players, CONT, bos_token_id=BOS, removal=removal, batch_size=16)
    masks = np.array(list(itertools.product([False, True], repeat=6)))
    rid = None if removal == "delete" else removal
    expected = np.array([brute_log_prob(lm, m, rid) for m in masks])
    np.testing.assert_allclose(game(masks), expected, rtol=0, atol=1e-10)
    per = np.array([brute_log_prob(lm, m, rid, per_token=True) for m in masks])
    np.testing.assert_allclose(game.log_probs(masks), per, atol=1e-10)
    g1 = GenerationGame(lm, word_ids, players, CONT, reduce="per_token", token=1, bos_token_id=BOS, removal=removal)
    np.testing.assert_allclose(g1(masks), per[:, 1], atol=1e-10)
    gm = GenerationGame(lm, word_ids, players, [6, 1, 8], reduce="mean", bos_token_id=BOS, removal=removal)
    np.testing.assert_allclose(gm(masks), per.mean(1), atol=1e-10)
    # exact Shapley over the 6 prompt words: efficiency against the brute-force ends
    e = explain(game, method="exact")
    assert e.values[0].sum() == pytest.approx(expected[-1] - expected[0], abs=1e-9)
    assert lm.training is False


def test_generation_game_errors():
    lm = TinyLM()
    players = Players(PROMPT)
    with pytest.raises(ValueError, match="reduce"):
        GenerationGame(lm, word_ids, players, CONT, reduce="max")
    with pytest.raises(TypeError, match="token"):
        GenerationGame(lm, word_ids, players, CONT, reduce="per_token")
    with pytest.raises(ValueError, match="token"):
        GenerationGame(lm, word_ids, players, CONT, reduce="per_token", token=3)
    with pytest.raises(ValueError, match="removal"):
        GenerationGame(lm, word_ids, players, CONT, removal="mask")  # no mask id in a plain callable
    with pytest.raises(ValueError, match="continuation"):
        GenerationGame(lm, word_ids, players, [])
    game = GenerationGame(lm, word_ids, players, CONT)  # no BOS
    with pytest.raises(ValueError, match="bos_token_id"):
        game.empty()
    with pytest.raises(ValueError, match="logits"):
        GenerationGame(lambda ids: ids.float(), word_ids, players, CONT, bos_token_id=0).grand()


# -- plot --------------------------------------------------------------------------------------------


def test_plot_text_labels_are_the_words(game):
    e = explain(game, method="exact")
    ax = fl.plots.text(e, Players(TEXT))
    assert [t.get_text() for t in ax.texts] == TEXT.split()
    colours = {t.get_text(): t.get_bbox_patch().get_facecolor() for t in ax.texts}
    assert colours["great"][0] == 1.0 and colours["great"][3] > 0  # red, visible
    assert colours["movie"][3] == 0  # zero value: transparent
    fig, own = plt.subplots()
    assert fl.plots.text(-e.values[0], TEXT.split(), ax=own) is own
    assert own.texts[TEXT.split().index("great")].get_bbox_patch().get_facecolor()[2] > 0.9  # blue
    with pytest.raises(ValueError, match="names"):
        fl.plots.text(e, ["a", "b"])
    plt.close("all")


def test_plot_text_interactions_shows_the_planted_pair(game):
    inter = explain(game, method="spex", budget=1000, max_order=2, seed=0)
    text_ax, terms_ax = fl.plots.text_interactions(inter, Players(TEXT), k=4)
    assert [t.get_text() for t in text_ax.texts] == TEXT.split()
    # Moebius view: the pair planted as +2.0 together reads 2.0; the only term of two players
    assert [t.get_text() for t in terms_ax.get_yticklabels()] == ["not \u00d7 bad"]
    assert [p.get_width() for p in terms_ax.patches] == pytest.approx([2.0], abs=1e-6)
    _, fourier_ax = fl.plots.text_interactions(inter, Players(TEXT), index="fourier")
    assert [p.get_width() for p in fourier_ax.patches] == pytest.approx([0.5], abs=1e-6)
    _, own = plt.subplots(2, 1)
    assert fl.plots.text_interactions(inter, TEXT.split(), axes=own)[1] is own[1]
    with pytest.raises(TypeError, match="Interactions"):
        fl.plots.text_interactions(np.zeros(11), TEXT.split())
    with pytest.raises(ValueError, match="names"):
        fl.plots.text_interactions(inter, ["a"])
    plt.close("all")


# -- a real tokenizer (loads transformers: slow) ------------------------------------------------------


@pytest.mark.slow
def test_minilm_tokenizer_players():
    tok = minilm_tokenizer()
    text = "Unbelievably good. Not bad at all!"
    words = Players(text, tok, unit="word")
    assert words.pieces == ["Unbelievably", "good.", "Not", "bad", "at", "all!"]
    tokens = Players(text, tok, unit="token")
    assert tokens.n == len(tok(text)["input_ids"]) - 2  # [CLS] and [SEP] are not players
    sentences = Players(text, tok, unit="sentence")
    assert sentences.pieces == ["Unbelievably good.", "Not bad at all!"]
    full = tok(text)["input_ids"]
    assert words.keep(np.ones(6, dtype=bool)) == full
    kept = words.keep(np.array([1, 1, 0, 1, 1, 1], dtype=bool))
    assert kept == tok("Unbelievably good. bad at all!")["input_ids"]
    masked = words.keep(np.array([0, 1, 1, 1, 1, 1], dtype=bool), removal="mask")
    n_first = len(tok("Unbelievably", add_special_tokens=False)["input_ids"])
    assert masked[1:1 + n_first] == [tok.mask_token_id] * n_first and len(masked) == len(full)
    assert sentences.keep_text([False, True]) == "Not bad at all!"
    game = ClassifierGame(lambda ids: np.array([[len(s)] for s in ids], dtype=float), words, target=0)
    assert game.inputs == "ids" and game.grand() == len(full)
