"""fl.text token ids checked against the vocabulary: ids past a model's input embedding (or a
tokenizer's vocabulary) are a ValueError naming the argument, the id and the size, never an
IndexError from inside the embedding.

The tokenizer here is a duck-typed HuggingFace fast tokenizer (``convert_ids_to_tokens``, offsets,
special-tokens mask, ``len()``), so these checks run without transformers installed.
"""

import re

import numpy as np
import pytest
import torch

import featurelens as fl
from featurelens.text import ClassifierGame, GenerationGame, Players
from featurelens.text._explainer import module_classifier
from featurelens.text._gradients import embedding_attributions

from ._planted import SPECIALS, TEXT, WORDS, PlantedClassifier

VOCAB = {w: i for i, w in enumerate(SPECIALS + WORDS)}
V = len(VOCAB)  # 17: ids 0..16


class WordTokenizer:
    """White-space words to ids of ``VOCAB``, ``[CLS] ... [SEP]`` around a text (as a fast
    HuggingFace tokenizer answers: input ids, character offsets, special-tokens mask)."""

    mask_token_id, pad_token_id, bos_token_id, mask_token = VOCAB["[MASK]"], VOCAB["[PAD]"], None, "[MASK]"

    def __init__(self, mask_token_id=None):
        if mask_token_id is not None:
            self.mask_token_id = mask_token_id

    def __len__(self):
        return V

    def convert_ids_to_tokens(self, ids):
        names = list(VOCAB)
        return [names[i] for i in ids]

    def __call__(self, text, add_special_tokens=True, return_offsets_mapping=False, return_special_tokens_mask=False):
        spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
        ids = [VOCAB.get(text[a:b], VOCAB["[UNK]"]) for a, b in spans]
        special = [0] * len(ids)
        if add_special_tokens:
            ids, spans, special = [VOCAB["[CLS]"]] + ids + [VOCAB["[SEP]"]], [(0, 0)] + spans + [(0, 0)], [1] + special + [1]
        out = {"input_ids": ids}
        if return_offsets_mapping:
            out["offset_mapping"] = spans
        if return_special_tokens_mask:
            out["special_tokens_mask"] = special
        return out


class Bag(torch.nn.Module):
    """Embedding of ``n_vocab`` ids, mean pool, linear head (3 classes)."""

    def __init__(self, n_vocab):
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(n_vocab, 4).double()
        self.out = torch.nn.Linear(4, 3).double()

    def forward(self, ids):
        return self.out(torch.tanh(self.emb(ids)).mean(1))


class TinyLM(torch.nn.Module):
    """Causal: the logits at position t come from the mean embedding of tokens 0..t."""

    def __init__(self, n_vocab=V):
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(n_vocab, 8)
        self.head = torch.nn.Linear(8, n_vocab)

    def forward(self, ids):
        e = self.emb(ids)
        return self.head(torch.tanh(e.cumsum(1) / torch.arange(1, ids.shape[1] + 1)[None, :, None]))


def word_ids(s):  # a callable tokenizer without a vocabulary size: "w7" -> [7]
    return [int(w[1:]) for w in s.split()]


# -- a classifier whose embedding is smaller than the tokenizer's vocabulary ------------------------


@pytest.mark.parametrize("method", ["kernel_shap", "saliency"])
def test_text_ids_past_the_models_embedding_are_named(method):
    """'great' is id 13 and 'love' id 12 of the tokenizer; the model embeds ids 0..9 only."""
    budget = {"budget": 20} if method == "kernel_shap" else {}  # a gradient method refuses budget=
    explainer = fl.explainer(method, Bag(10), tokenizer=WordTokenizer(), **budget)
    with pytest.raises(ValueError, match=r"token ids of .*holds the token id 1[0-6], past the vocabulary of the "
                                         r"model's input embedding \(size 10: ids 0\.\.9\)"):
        explainer.explain(TEXT)
    # A text whose ids all lie below 10 ("the movie was not bad": ids 5..9) is explained.
    values = explainer.explain("the movie was not bad").values
    assert values.shape == (1, 5) and np.isfinite(values).all()


def test_explainer_removal_id_past_the_models_embedding():
    explainer = fl.explainer("feature_ablation", Bag(12), tokenizer=WordTokenizer(), removal=14)
    with pytest.raises(ValueError, match=r"removal holds the token id 14, past the vocabulary of the model's input "
                                         r"embedding \(size 12"):
        explainer.explain("the movie was not bad")
    # The tokenizer's mask id (4) is embedded; a mask id past the embedding is named as such.
    bad_mask = fl.explainer("feature_ablation", Bag(12), tokenizer=WordTokenizer(mask_token_id=15), removal="mask")
    with pytest.raises(ValueError, match=r"removal='mask' \(the tokenizer's mask_token_id\) holds the token id 15"):
        bad_mask.explain("the movie was not bad")


# -- removal=<id> past the tokenizer's vocabulary ---------------------------------------------------


def test_classifier_game_removal_past_the_tokenizer_vocabulary():
    model = PlantedClassifier().eval()
    players = Players(TEXT, WordTokenizer())
    # Before the check the game was built and failed inside the embedding on its first coalition.
    with pytest.raises(ValueError, match=r"removal holds the token id 17, past the vocabulary of the tokenizer "
                                         r"\(size 17: ids 0\.\.16\)"):
        ClassifierGame(module_classifier(model), players, target=1, removal=17)
    with pytest.raises(ValueError, match="removal must be an int >= 0; got -1"):
        ClassifierGame(module_classifier(model), players, target=1, removal=-1)
    # The last id (16, "plot": 0.04 like the other words) is accepted: removing "great" (1.0)
    # with it leaves the planted score minus 1.0 plus 0.04.
    game = ClassifierGame(module_classifier(model), players, target=1, removal=16)
    mask = np.ones(players.n, dtype=bool)
    mask[players.pieces.index("great")] = False
    full = game(np.ones((1, players.n), dtype=bool))[0]
    assert game(mask[None, :])[0] == pytest.approx(full - 1.0 + 0.04, abs=1e-12)


def test_module_classifier_refuses_ids_past_its_embedding():
    fn = module_classifier(Bag(10))
    assert fn([[1, 2, 9]]).shape == (1, 3)
    with pytest.raises(ValueError, match=r"the token ids sent to the model holds the token id 10, past the vocabulary "
                                         r"of the model's input embedding \(size 10"):
        fn([[1, 2], [3, 10]])


# -- a causal LM ------------------------------------------------------------------------------------


def test_generation_game_ids_past_the_lm_vocabulary():
    lm = TinyLM(12).eval()
    players = Players("w3 w5 w2", None)
    game = GenerationGame(lm, word_ids, players, [6, 11], bos_token_id=0)  # ids 0..11: fine
    assert np.isfinite(game(np.ones((1, 3), dtype=bool))).all()
    cases = [
        ({"continuation": [6, 12]}, r"continuation holds the token id 12"),
        ({"continuation": "w6 w30"}, r"continuation holds the token id 30"),
        ({"removal": 12}, r"removal holds the token id 12"),
        ({"bos_token_id": 12}, r"bos_token_id holds the token id 12"),
        ({"prompt_players": Players("w3 w15 w2")}, r"prompt's token ids \(prompt_players\) holds the token id 15"),
    ]
    for kwargs, match in cases:
        args = {"prompt_players": players, "continuation": [6, 11], "bos_token_id": 0, **kwargs}
        with pytest.raises(ValueError, match=match + r", past the vocabulary of the model's input embedding "
                                                     r"\(size 12: ids 0\.\.11\)"):
            GenerationGame(lm, word_ids, **args)


def test_generation_game_continuation_past_the_logits():
    """A callable LM (no embedding to read) with 5 logits per position: a continuation id 7 has no
    logit (before: an index error inside torch's gather)."""
    lm = lambda ids: torch.zeros(ids.shape + (5,))  # noqa: E731 - uniform over 5 tokens
    game = GenerationGame(lm, word_ids, Players("w1 w2"), [3, 7], bos_token_id=0)
    with pytest.raises(ValueError, match=r"continuation holds the token id 7, past the vocabulary of the model's "
                                         r"logits \(size 5"):
        game(np.ones((1, 2), dtype=bool))
    ok = GenerationGame(lm, word_ids, Players("w1 w2"), [3, 4], bos_token_id=0)
    assert ok(np.ones((1, 2), dtype=bool))[0] == pytest.approx(2 * np.log(1 / 5), abs=1e-12)


def test_embedding_attributions_ids_past_the_embedding():
    players = Players("the movie was great", WordTokenizer())  # "great": id 13
    with pytest.raises(ValueError, match=r"token ids of players .*holds the token id 13, past the vocabulary of "
                                         r"the model's input embedding \(size 10"):
        embedding_attributions(Bag(10), players, "saliency")
    small = Players("the movie was", WordTokenizer())
    with pytest.raises(ValueError, match=r"continuation holds the token id 20, past the vocabulary of the model's "
                                         r"input embedding \(size 17"):
        embedding_attributions(TinyLM(), small, "saliency", continuation=[6, 20])
    with pytest.raises(ValueError, match=r"baseline holds the token id 17, past the vocabulary of the model's input "
                                         r"embedding \(size 17"):
        embedding_attributions(Bag(V), small, "integrated_gradients", baseline=V)
