"""fl.text embedding_attributions: saliency, input x gradient and integrated gradients over a text
model's input embeddings, against Captum 0.9, completeness, planted words and GenerationGame."""


import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.text import GenerationGame, Players
from featurelens.text._gradients import embedding_attributions

from ._planted import SPECIALS, minilm_tokenizer, word_tokenizer

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

WORDS = ["the", "movie", "was", "good", ".", "i", "love", "great", "ending", "!", "not", "bad", "a", "film"]
VOCAB = {w: i for i, w in enumerate(SPECIALS + WORDS)}
V = len(VOCAB)
PAD, MASK = VOCAB["[PAD]"], VOCAB["[MASK]"]
TEXT = "the movie was good. i love the great ending!"


def make_tokenizer(specials=True):
    return word_tokenizer(WORDS, specials=specials)


@pytest.fixture(scope="module")
def tok():
    return make_tokenizer()


class Bag(torch.nn.Module):
    """Embedding, mean pool, linear head."""

    def __init__(self, dim=4, classes=3, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.emb = torch.nn.Embedding(V, dim)
        self.out = torch.nn.Linear(dim, classes)

    def head(self, e):
        return self.out(torch.tanh(e).mean(1))

    def forward(self, ids):
        return self.head(self.emb(ids))


class TinyTransformer(torch.nn.Module):
    """Embedding, one transformer encoder layer (dropout: eval mode matters; GELU: smooth, so
    Gauss-Legendre quadrature converges fast), mean pool, linear."""

    def __init__(self, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.emb = torch.nn.Embedding(V, 8)
        self.layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.2, activation="gelu", batch_first=True)
        self.out = torch.nn.Linear(8, 3)

    def head(self, e):
        return self.out(self.layer(e).mean(1))

    def forward(self, ids):
        return self.head(self.emb(ids))


class TinyLM(torch.nn.Module):
    """Causal: the logits at position t come from the mean embedding of tokens 0..t."""

    def __init__(self, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.emb = torch.nn.Embedding(V, 8)
        self.head = torch.nn.Linear(8, V)

    def forward(self, ids):
        e = self.emb(ids)
        mean = e.cumsum(1) / torch.arange(1, ids.shape[1] + 1)[None, :, None]
        return self.head(torch.tanh(3 * mean))


def ids_of(players):
    return torch.as_tensor(players.input_ids)[None, :]


def base_ids(players, fill):
    return torch.as_tensor(np.where(players.owner >= 0, fill, players.input_ids))[None, :]


# -- identities -------------------------------------------------------------------------------------


@pytest.mark.parametrize("model_cls", [Bag, TinyTransformer])
@pytest.mark.parametrize("baseline", ["pad", "mask", 7, "zeros"])
def test_ig_completeness(tok, model_cls, baseline):
    model = model_cls().eval()
    players = Players(TEXT, tok, unit="word")
    e = embedding_attributions(model, players, target=1, baseline=baseline, n_steps=64)
    assert isinstance(e, fl.Explanation) and e.values.shape == (1, players.n) and e.feature_names == players.names
    tv = e.extra["token_values"][0]
    assert tv.shape == (len(players.input_ids),) and np.all(tv[players.owner < 0] == 0)  # specials fixed
    with torch.no_grad():
        fx = float(model(ids_of(players))[0, 1])
        if baseline == "zeros":
            emb = model.emb(ids_of(players))
            emb[0, players.owner >= 0] = 0
            fb = float(model.head(emb)[0, 1])
        else:
            fb = float(model(base_ids(players, {"pad": PAD, "mask": MASK}.get(baseline, baseline)))[0, 1])
    assert e.base_values[0] == pytest.approx(fb, abs=1e-6) and e.params["f_input"] == pytest.approx(fx, abs=1e-6)
    assert abs(tv.sum() - (fx - fb)) < 1e-4 and abs(e.values.sum() - (fx - fb)) < 1e-4
    assert abs(e.params["completeness_delta"]) < 1e-4
    assert e.params["embedding_layer"] == "emb" and e.params["n_steps"] == 64 and e.params["method"] == "integrated_gradients"


def test_word_values_are_sums_of_token_values(tok):
    model = TinyTransformer()
    words, tokens = Players(TEXT, tok, unit="word"), Players(TEXT, tok, unit="token")
    assert words.n < tokens.n  # "good." and "ending!" are two tokens each
    for method in ("saliency", "input_x_gradient", "integrated_gradients"):
        ew = embedding_attributions(model, words, method, target=2, n_steps=8)
        et = embedding_attributions(model, tokens, method, target=2, n_steps=8)
        np.testing.assert_allclose(ew.extra["token_values"], et.extra["token_values"], atol=1e-12)
        tv = ew.extra["token_values"][0]
        expected = np.zeros(words.n)
        np.add.at(expected, words.owner[words.owner >= 0], tv[words.owner >= 0])
        np.testing.assert_allclose(ew.values[0], expected, atol=1e-12)
        np.testing.assert_allclose(et.values[0], tv[tokens.owner >= 0], atol=1e-12)


def test_planted_words_ranked_first(tok):
    """A bag of one-number word embeddings: f_1 = sum_t w(token_t); IG from the pad baseline
    (w(PAD) = 0) and input x gradient give each word exactly its planted weight."""
    planted = {"great": 3.0, "love": 2.0, "good": 1.0}

    class Planted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(V, 1)
            w = torch.zeros(V, 1)
            for k, v in planted.items():
                w[VOCAB[k]] = v
            w[VOCAB["the"]] = 0.1
            self.emb.weight.data.copy_(w)

        def forward(self, ids):
            s = self.emb(ids).sum((1, 2))
            return torch.stack([-s, s], 1)

    players = Players(TEXT, tok, unit="word")
    for method in ("integrated_gradients", "input_x_gradient"):
        e = embedding_attributions(Planted(), players, method, n_steps=4)
        assert e.params["target"] == 1  # the predicted class
        top = [e.feature_names[i] for i in np.argsort(-e.values[0])[:3]]
        assert top == ["great", "love", "good."]
        expected = [planted.get(p.rstrip(".!"), 0.1 if p == "the" else 0.0) for p in players.pieces]
        np.testing.assert_allclose(e.values[0], expected, atol=1e-6)


def test_batches_and_model_unchanged(tok):
    model = TinyTransformer()
    model.train()
    model.layer.linear1.weight.requires_grad_(False)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    flags = [p.requires_grad for p in model.parameters()]
    modes = [m.training for m in model.modules()]
    rows = []
    model.register_forward_pre_hook(lambda mod, args: rows.append(args[0].shape[0]))
    players = Players(TEXT, tok, unit="word")
    e7 = embedding_attributions(model, players, target=0, n_steps=20, batch_size=7)
    assert max(rows) <= 7 and e7.model_calls == sum(rows) == 2 + 20
    e = embedding_attributions(model, players, target=0, n_steps=20)
    np.testing.assert_allclose(e7.values, e.values, atol=1e-6)
    assert abs(e.params["completeness_delta"]) < 1e-4  # dropout off while explaining
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k])
    assert [p.requires_grad for p in model.parameters()] == flags
    assert [m.training for m in model.modules()] == modes
    assert all(p.grad is None for p in model.parameters())
    assert len(model._forward_pre_hooks) == 1 and all(len(m._forward_hooks) == 0 for m in model.modules())


# -- Captum 0.9 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("model_cls", [Bag, TinyTransformer])
@pytest.mark.parametrize("baseline", ["pad", "mask", 9])
def test_ig_equals_captum_layer_ig(tok, model_cls, baseline):
    captum = pytest.importorskip("captum.attr")
    model = model_cls().eval()
    players = Players(TEXT, tok, unit="token")
    fill = {"pad": PAD, "mask": MASK}.get(baseline, baseline)
    for output, forward in (("raw", model), ("softmax", lambda ids: model(ids).softmax(1))):
        e = embedding_attributions(model, players, target=2, baseline=baseline, n_steps=30, output=output)
        lig = captum.LayerIntegratedGradients(forward, model.emb)
        ref = lig.attribute(ids_of(players), baselines=base_ids(players, fill), target=2, n_steps=30,
                            method="gausslegendre").sum(-1)[0].detach().numpy()
        np.testing.assert_allclose(e.extra["token_values"][0], ref, rtol=0, atol=1e-5)


def test_zeros_baseline_equals_captum_ig_on_embeddings(tok):
    captum = pytest.importorskip("captum.attr")
    model = TinyTransformer().eval()
    players = Players(TEXT, tok, unit="word")
    e = embedding_attributions(model, players, target=0, baseline="zeros", n_steps=25)
    with torch.no_grad():
        emb = model.emb(ids_of(players))
    base = emb.clone()
    base[0, players.owner >= 0] = 0
    ref = captum.IntegratedGradients(model.head).attribute(emb, baselines=base, target=0, n_steps=25,
                                                           method="gausslegendre")
    np.testing.assert_allclose(e.extra["token_values"][0], ref.sum(-1)[0].numpy(), atol=1e-5)


@pytest.mark.parametrize("model_cls", [Bag, TinyTransformer])
def test_saliency_and_input_x_gradient_equal_captum(tok, model_cls):
    captum = pytest.importorskip("captum.attr")
    model = model_cls().eval()
    players = Players(TEXT, tok, unit="word")
    with torch.no_grad():
        emb = model.emb(ids_of(players))
    sal = captum.Saliency(model.head).attribute(emb.clone().requires_grad_(), target=1, abs=False)
    ixg = captum.InputXGradient(model.head).attribute(emb.clone().requires_grad_(), target=1)
    es = embedding_attributions(model, players, "saliency", target=1)
    ei = embedding_attributions(model, players, "input_x_gradient", target=1)
    np.testing.assert_allclose(es.extra["token_values"][0], sal.norm(dim=-1)[0].detach().numpy(), atol=1e-6)
    np.testing.assert_allclose(ei.extra["token_values"][0], ixg.sum(-1)[0].detach().numpy(), atol=1e-6)
    assert es.base_values is None and "completeness_delta" not in es.params
    assert np.all(es.values >= 0)


# -- causal LM ----------------------------------------------------------------------------------------

PROMPT = "the movie was not bad"
CONT = "i love the film"


@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_lm_continuation_matches_generation_game_and_captum(tok, reduce):
    lm = TinyLM().eval()
    players = Players(PROMPT, tok, unit="word")
    game = GenerationGame(lm, tok, players, CONT, reduce=reduce)
    e = embedding_attributions(lm, players, continuation=CONT, reduce=reduce, baseline="mask", n_steps=64)
    assert e.params["f_input"] == pytest.approx(game.grand(), abs=1e-9)
    gm = GenerationGame(lm, tok, players, CONT, reduce=reduce, removal="mask")
    assert e.base_values[0] == pytest.approx(gm.empty(), abs=1e-9)
    assert abs(e.params["completeness_delta"]) < 1e-4
    assert abs(e.values.sum() - (game.grand() - gm.empty())) < 1e-4
    tv = e.extra["token_values"][0]
    P = e.params["n_prompt_tokens"]
    assert P == len(players.input_ids) and np.all(tv[P:] == 0) and np.all(tv[:P][players.owner < 0] == 0)
    cont = tok(CONT, add_special_tokens=False)["input_ids"]
    assert e.params["continuation"] == cont
    # Captum: LayerIntegratedGradients on the embedding with the continuation's log-probability as output
    captum = pytest.importorskip("captum.attr")
    T = len(cont)

    def logp(ids):
        lp = lm(ids)[:, P - 1:P - 1 + T].log_softmax(-1).gather(-1, torch.tensor(cont).view(1, T, 1).expand(len(ids), T, 1))
        return lp.sum((1, 2)) if reduce == "sum" else lp.mean((1, 2))

    full = torch.tensor([list(players.input_ids) + cont])
    base = torch.tensor([list(np.where(players.owner >= 0, MASK, players.input_ids)) + cont])
    ref = captum.LayerIntegratedGradients(logp, lm.emb).attribute(full, baselines=base, n_steps=64).sum(-1)[0]
    np.testing.assert_allclose(tv, ref.detach().numpy(), atol=1e-5)
    es = embedding_attributions(lm, players, "saliency", continuation=cont, reduce=reduce)
    assert es.values.shape == (1, players.n) and es.params["reduce"] == reduce


def test_lm_without_specials_gets_bos(tok):
    """As GenerationGame: a prompt without special tokens gets the tokenizer's BOS in front."""
    plain = make_tokenizer(specials=False)
    plain.bos_token = "[CLS]"
    lm = TinyLM().eval()
    players = Players(PROMPT, plain, unit="token")
    assert bool((players.owner >= 0).all())
    e = embedding_attributions(lm, players, continuation=CONT, baseline="pad", n_steps=48)
    game = GenerationGame(lm, plain, players, CONT, removal="pad")
    assert e.extra["input_ids"][0, 0] == VOCAB["[CLS]"]
    assert e.params["f_input"] == pytest.approx(game.grand(), abs=1e-9)
    assert e.base_values[0] == pytest.approx(game.empty(), abs=1e-9)
    assert abs(e.params["completeness_delta"]) < 1e-4


@pytest.mark.slow  # builds a transformers GPT-2 (imports its modelling code: seconds)
def test_hf_pretrained_model(tok):
    """A transformers model: called with input_ids= and attention_mask=, embedding from
    get_input_embeddings()."""
    config = transformers.GPT2Config(vocab_size=V, n_positions=32, n_embd=8, n_layer=1, n_head=2,
                                     bos_token_id=2, eos_token_id=3, pad_token_id=0)
    torch.manual_seed(0)
    lm = transformers.GPT2LMHeadModel(config).eval()
    players = Players(PROMPT, tok, unit="word")
    e = embedding_attributions(lm, players, continuation=CONT, baseline="pad", n_steps=48)
    assert e.params["embedding_layer"] == "transformer.wte"
    game = GenerationGame(lm, tok, players, CONT, removal="pad")
    assert e.params["f_input"] == pytest.approx(game.grand(), abs=1e-5)
    assert e.base_values[0] == pytest.approx(game.empty(), abs=1e-5)
    assert abs(e.params["completeness_delta"]) < 1e-4


# -- errors -------------------------------------------------------------------------------------------


def test_errors(tok):
    model = Bag()
    players = Players(TEXT, tok, unit="word")
    with pytest.raises(ValueError, match="method"):
        embedding_attributions(model, players, "deeplift")
    with pytest.raises(ValueError, match="players must be made with a HuggingFace tokenizer"):
        embedding_attributions(model, Players(TEXT))
    with pytest.raises(TypeError, match="players"):
        embedding_attributions(model, TEXT)
    with pytest.raises(TypeError, match="model"):
        embedding_attributions(lambda ids: ids, players)
    with pytest.raises(ValueError, match="target"):
        embedding_attributions(model, players, target=3)
    with pytest.raises(TypeError, match="target"):
        embedding_attributions(model, players, target=1.0)
    with pytest.raises(ValueError, match="n_steps"):
        embedding_attributions(model, players, n_steps=0)
    with pytest.raises(ValueError, match="baseline"):
        embedding_attributions(model, players, baseline="blank")
    with pytest.raises(TypeError, match="baseline"):
        embedding_attributions(model, players, baseline=0.5)
    with pytest.raises(ValueError, match="baseline"):
        embedding_attributions(model, players, baseline=V)  # outside the vocabulary
    with pytest.raises(ValueError, match="output"):
        embedding_attributions(model, players, output="prob")
    no_mask = transformers.PreTrainedTokenizerFast(tokenizer_object=tok.backend_tokenizer, unk_token="[UNK]")
    with pytest.raises(ValueError, match="baseline='mask' needs a tokenizer with a mask_token_id"):
        embedding_attributions(model, Players(TEXT, no_mask), baseline="mask")
    with pytest.raises(ValueError, match="reduce"):
        embedding_attributions(model, players, reduce="mean")  # a classifier has no continuation

    class Flat(Bag):
        def forward(self, ids):
            return super().forward(ids)[:, 0]

    with pytest.raises(ValueError, match=r"shape \(m, classes\)"):
        embedding_attributions(Flat(), players)
    with pytest.raises(ValueError, match="continuation="):
        embedding_attributions(TinyLM(), players)  # an LM's 3-D logits without continuation
    with pytest.raises(ValueError, match=r"\(m, L, vocab\)"):
        embedding_attributions(model, players, continuation=CONT)
    with pytest.raises(ValueError, match="target"):
        embedding_attributions(TinyLM(), players, continuation=CONT, target=1)
    with pytest.raises(ValueError, match="continuation"):
        embedding_attributions(TinyLM(), players, continuation=[])

    class TwoEmb(Bag):
        def __init__(self):
            super().__init__()
            self.pos = torch.nn.Embedding(32, 4)

    with pytest.raises(ValueError, match="'emb', 'pos'"):
        embedding_attributions(TwoEmb(), players)
    assert embedding_attributions(TwoEmb(), players, embedding_layer="emb", n_steps=2).values.shape == (1, players.n)
    with pytest.raises(ValueError, match="embedding_layer"):
        embedding_attributions(model, players, embedding_layer="embed")
    with pytest.raises(ValueError, match="embedding_layer"):
        embedding_attributions(model, players, embedding_layer=torch.nn.Embedding(3, 3))
    with pytest.raises(ValueError, match="embedding_layer 'out' outputs shape"):
        embedding_attributions(model, players, embedding_layer="out")


@pytest.mark.slow
def test_minilm_tokenizer_word_pieces():
    """The MiniLM WordPiece tokenizer (words split into several pieces): IG completeness over words,
    Captum parity, and word values = sums of their pieces' values."""
    captum = pytest.importorskip("captum.attr")
    mini = minilm_tokenizer()
    text = "Unbelievably good. Not bad at all!"
    words = Players(text, mini, unit="word")
    assert len(words.input_ids) > words.n + 2  # some words are several pieces

    class MiniBag(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.emb = torch.nn.Embedding(len(mini), 4)
            self.out = torch.nn.Linear(4, 2)

        def forward(self, ids):
            return self.out(torch.tanh(self.emb(ids)).mean(1))

    model = MiniBag().eval()
    e = embedding_attributions(model, words, target=1, baseline="mask", n_steps=32)
    assert abs(e.params["completeness_delta"]) < 1e-4 and e.params["baseline_id"] == mini.mask_token_id
    ref = captum.LayerIntegratedGradients(model, model.emb).attribute(
        ids_of(words), baselines=base_ids(words, mini.mask_token_id), target=1, n_steps=32).sum(-1)[0]
    np.testing.assert_allclose(e.extra["token_values"][0], ref.detach().numpy(), atol=1e-5)
    tv = e.extra["token_values"][0]
    expected = np.zeros(words.n)
    np.add.at(expected, words.owner[words.owner >= 0], tv[words.owner >= 0])
    np.testing.assert_allclose(e.values[0], expected, atol=1e-12)
