"""The empty coalition on tokenizers that add no special tokens, bos_token_id for causal LMs, and
fl.explainer(..., tokenizer=...) refusing unknown keywords at construction."""

import itertools
import math

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.text import ClassifierGame, GenerationGame, Players
from featurelens.text._explainer import method_options

from ._planted import SPECIALS, TEXT, WORDS, word_tokenizer

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

V = len(SPECIALS) + len(WORDS)
PAD, UNK, CLS = SPECIALS.index("[PAD]"), SPECIALS.index("[UNK]"), SPECIALS.index("[CLS]")


def bare_tokenizer():
    """A fast WordLevel tokenizer over WORDS only: no special tokens at all (no bos / eos / pad /
    unk / mask), so an empty coalition has no token to stand for it."""
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers

    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="the"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=core)


class MeanClassifier(torch.nn.Module):
    """Mean-pooled embeddings and a linear head: NaN on an empty sequence (a mean over no token)."""

    def __init__(self, n_vocab=V, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.embed = torch.nn.Embedding(n_vocab, 4)
        self.head = torch.nn.Linear(4, 2)
        with torch.no_grad():
            self.embed.weight.copy_(torch.randn(n_vocab, 4, generator=g))
            self.head.weight.copy_(torch.randn(2, 4, generator=g))

    def forward(self, ids):
        return self.head(self.embed(ids).mean(1))


class TinyLM(torch.nn.Module):
    """A causal LM: logits at position t depend on the tokens up to t (a cumulative mean)."""

    def __init__(self, n_vocab=V, seed=1):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.embed = torch.nn.Embedding(n_vocab, 6)
        self.out = torch.nn.Linear(6, n_vocab)
        with torch.no_grad():
            self.embed.weight.copy_(torch.randn(n_vocab, 6, generator=g))
            self.out.weight.copy_(torch.randn(n_vocab, 6, generator=g))

    def forward(self, ids):
        e = self.embed(ids)
        mean = e.cumsum(1) / torch.arange(1, ids.shape[1] + 1).view(1, -1, 1)
        return self.out(mean)


def logit(model, ids, target=1):
    with torch.no_grad():
        return float(model(torch.tensor([ids]))[0, target])


def log_prob(lm, prompt, cont):
    with torch.no_grad():
        logits = lm(torch.tensor([list(prompt) + list(cont)]))[0].double().log_softmax(-1)
    return sum(float(logits[len(prompt) - 1 + j, t]) for j, t in enumerate(cont))


def brute_shapley(v, n):
    """Shapley values of v (a function of a frozenset) by the permutation-free subset formula."""
    phi = np.zeros(n)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        for k in range(n):
            for s in itertools.combinations(others, k):
                w = math.factorial(k) * math.factorial(n - k - 1) / math.factorial(n)
                phi[i] += w * (v(frozenset(s) | {i}) - v(frozenset(s)))
    return phi


# -- ClassifierGame ---------------------------------------------------------------------------------


def test_delete_without_special_tokens_sends_one_token():
    tok, model = word_tokenizer(specials=False), MeanClassifier().double()  # float64: batched and one-by-one calls agree to 1e-9
    text = "not bad at all the plot"  # "at" and "all" are [UNK]
    ids = tok(text)["input_ids"]
    assert tok.bos_token_id is None and tok.eos_token_id is None and tok.pad_token_id == PAD
    ex = fl.explainer("exact", model, tokenizer=tok, target=1)
    game = ex.game(text)
    assert game.empty_token_id == PAD  # the first of bos, eos, pad, unk the tokenizer has
    assert game.batch(np.zeros((1, 6), dtype=bool)) == [[PAD]]
    assert game.empty() == pytest.approx(logit(model, [PAD]))
    e = ex.explain(text)
    assert e.params["empty_token_id"] == PAD and e.params["removal"] == "delete"
    assert e.params["value"] == "class_output" and e.params["target"] == 1 and e.target.tolist() == [1]

    def v(s):
        kept = [t for i, t in enumerate(ids) if i in s]
        return logit(model, kept or [PAD])

    np.testing.assert_allclose(e.values[0], brute_shapley(v, 6), atol=1e-9)
    assert e.base_values[0] == pytest.approx(logit(model, [PAD]))
    # the README's default, SPEX and KernelSHAP, run on it (the NaN of the issue is gone)
    inter = fl.explainer("spex", model, tokenizer=tok, budget=500, max_order=2).explain(text)
    assert inter.params["empty_token_id"] == PAD
    k = fl.explainer("kernel_shap", model, tokenizer=tok, budget=2000, target=1).explain(text)
    np.testing.assert_allclose(k.values, e.values, atol=1e-8)


def test_empty_token_id_given_and_special_tokens():
    tok, model = word_tokenizer(specials=False), MeanClassifier()
    e = fl.explainer("exact", model, tokenizer=tok, target=0, empty_token_id=UNK).explain("not bad")
    assert e.params["empty_token_id"] == UNK
    assert e.base_values[0] == pytest.approx(logit(model, [UNK], target=0))
    # with [CLS] ... [SEP] no coalition is empty: nothing is sent for it, nothing recorded
    with_specials = word_tokenizer(specials=True)
    game = fl.explainer("exact", model, tokenizer=with_specials, empty_token_id=UNK).game("not bad")
    assert game.empty_token_id is None
    assert game.batch(np.zeros((1, 2), dtype=bool)) == [[CLS, SPECIALS.index("[SEP]")]]
    # mask / pad removal always keeps a token
    assert ClassifierGame(lambda b: np.ones((len(b), 2)), Players("not bad", tok), removal="mask").empty_token_id is None
    with pytest.raises(ValueError, match="empty_token_id holds the token id 99"):
        fl.explainer("exact", model, tokenizer=tok, empty_token_id=99).explain("not bad")
    with pytest.raises(TypeError, match="empty_token_id must be an int"):
        fl.explainer("exact", model, tokenizer=tok, empty_token_id="pad")
    with pytest.raises(ValueError, match="inputs='ids'"):
        ClassifierGame(lambda texts: np.ones((len(texts), 2)), Players("not bad"), empty_token_id=3)


def test_no_token_for_the_empty_text_names_the_row_and_the_fix():
    tok, model = bare_tokenizer(), MeanClassifier(n_vocab=len(WORDS))
    ex = fl.explainer("exact", model, tokenizer=tok, target=1)
    with pytest.raises(ValueError, match=r"mask row 0 keeps no player.*empty_token_id=<int>.*removal=<int>") as err:
        ex.explain("not bad")
    assert "removal='mask'" not in str(err.value) and "removal='pad'" not in str(err.value)  # it has neither
    e = fl.explainer("exact", model, tokenizer=tok, target=1, empty_token_id=0).explain("not bad")
    assert e.base_values[0] == pytest.approx(logit(model, [0]))


def test_text_model_nan_on_the_empty_text():
    def on_texts(texts):  # NaN on the empty text, as a mean over no word
        return np.array([[np.mean([len(w) for w in t.split()]) if t else np.nan, 0.0] for t in texts])

    with pytest.raises(ValueError, match=r"mask row 0 keeps no player.*received ''.*removal='mask'"):
        fl.explainer("exact", on_texts, tokenizer="whitespace", inputs="text", target=0).explain("not bad")
    e = fl.explainer("exact", on_texts, tokenizer="whitespace", inputs="text", target=0,
                     removal="mask").explain("not bad")
    assert e.base_values[0] == pytest.approx(len("[MASK]"))


# -- GenerationGame and bos_token_id -----------------------------------------------------------------


def test_generation_game_empty_prompt_and_bos_token_id():
    tok, lm = word_tokenizer(specials=False), TinyLM()
    prompt, cont = "the movie was not", " bad"
    ids, cont_ids = tok(prompt)["input_ids"], tok(cont, add_special_tokens=False)["input_ids"]
    game = GenerationGame(lm, tok, Players(prompt, tok), cont)
    assert game.empty_token_id == PAD  # no bos: only the empty prompt becomes [PAD]
    masks = np.array([[0, 0, 0, 0], [1, 0, 1, 1], [1, 1, 1, 1]], dtype=bool)
    expected = [log_prob(lm, [PAD], cont_ids), log_prob(lm, [ids[0], ids[2], ids[3]], cont_ids),
                log_prob(lm, ids, cont_ids)]
    np.testing.assert_allclose(game(masks), expected, atol=1e-9)
    # the call: accepted at construction, and bos_token_id goes before every prompt
    ex = fl.explainer("spex", lm, tokenizer=tok, continuation=cont, bos_token_id=CLS, budget=400, max_order=2)
    g = ex.game(prompt)
    assert g.empty_token_id is None and g.prompt_ids.tolist() == [CLS] + ids
    np.testing.assert_allclose(g(masks), [log_prob(lm, [CLS], cont_ids), log_prob(lm, [CLS, ids[0], ids[2], ids[3]],
                                                                                    cont_ids),
                                          log_prob(lm, [CLS] + ids, cont_ids)], atol=1e-9)
    inter = ex.explain(prompt)
    assert inter.params["value"] == "continuation_log_prob" and inter.params["continuation_text"] == cont
    exact = fl.explainer("exact", lm, tokenizer=tok, continuation=cont, bos_token_id=CLS).explain(prompt)
    assert exact.values.sum() == pytest.approx(log_prob(lm, [CLS] + ids, cont_ids) - log_prob(lm, [CLS], cont_ids))
    # gradients take it too: the same f(x)
    sal = fl.explainer("saliency", lm, tokenizer=tok, continuation=cont, bos_token_id=CLS).explain(prompt)
    assert sal.params["f_input"] == pytest.approx(log_prob(lm, [CLS] + ids, cont_ids), abs=1e-6)
    assert sal.extra["input_ids"][0].tolist() == [CLS] + ids + cont_ids
    with pytest.raises(ValueError, match="bos_token_id applies to a causal LM"):
        fl.explainer("exact", lm, tokenizer=tok, bos_token_id=CLS).explain(prompt)
    with pytest.raises(ValueError, match="bos_token_id holds the token id 99"):
        fl.explainer("saliency", lm, tokenizer=tok, continuation=cont, bos_token_id=99).explain(prompt)


def test_generation_game_without_any_token_names_every_fix():
    def word_ids(s):
        return [int(w[1:]) for w in s.split()]

    lm = TinyLM()
    game = GenerationGame(lm, word_ids, Players("w5 w6"), [7])
    assert game.empty_token_id is None
    with pytest.raises(ValueError, match=r"mask row 0 keeps no prompt token.*bos_token_id=<int>.*"
                                         r"empty_token_id=<int>.*removal=<int>"):
        game.empty()
    assert GenerationGame(lm, word_ids, Players("w5 w6"), [7], empty_token_id=3).empty() == pytest.approx(
        log_prob(lm, [3], [7]))


# -- keywords refused at construction ---------------------------------------------------------------


def test_unknown_keywords_are_refused_at_construction():
    model, tok = MeanClassifier(), word_tokenizer()
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'n_step'.*accepts .*bos_token_id.*n_steps"):
        fl.explainer("integrated_gradients", model, tokenizer=tok, n_step=10)
    with pytest.raises(TypeError, match=r"'n_steps'.*accepts .*embedding_layer"):
        fl.explainer("saliency", model, tokenizer=tok, n_steps=10)  # IG's option only
    with pytest.raises(TypeError, match=r"'decoder'"):
        fl.explainer("kernel_shap", model, tokenizer=tok, decoder="soft")
    with pytest.raises(TypeError, match=r"'sampler'"):
        fl.explainer("feature_ablation", model, tokenizer=tok, sampler="lime_text")
    # the options are the approximator's own keywords (distance_space="input" needs a MaskedModel)
    assert set(method_options("lime")) == {"sampler", "surrogate", "alpha", "distance", "kernel_width",
                                           "distance_space"}
    assert method_options("exact_shapley") == ("max_players",)
    assert "n_estimators" in method_options("proxy_spex") or pytest.importorskip("sklearn") is None
    # each listed option reaches its estimator
    e = fl.explainer("lime", model, tokenizer=tok, target=1, budget=50, sampler="lime_text",
                     kernel_width=0.5).explain("not bad at all")
    assert e.params["sampler"] == "lime_text" and e.params["kernel_width"] == 0.5
    inter = fl.explainer("spex", model, tokenizer=tok, budget=300, max_order=1, decoder="hard").explain("not bad")
    assert isinstance(inter, fl.Interactions)
