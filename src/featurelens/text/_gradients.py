"""Gradient attributions over a text model's input embeddings: saliency, input x gradient and
integrated gradients, one value per token and per player of a :class:`Players`."""

from __future__ import annotations

import time

import numpy as np
from featurelens._optional import is_tensor, torch

from .._batching import chunks, default_rows
from .._validation import check_int, check_option, check_token_ids
from .._budgets import check_budget
from ..explainers._layer_hooks import resolve_layer
from ..explainers.gradient import MAX_GAUSS_LEGENDRE_STEPS, integration_rule
from ..models import Model
from ..models._outputs import class_score_units
from ._forward import forward_ids, keeps_last_logits
from ._games import input_embeddings
from ._players import Players

__all__ = ["EMBEDDING_BASELINES", "GRADIENT_METHODS", "embedding_attributions"]

#: The methods of :func:`embedding_attributions`.
GRADIENT_METHODS = ("saliency", "input_x_gradient", "integrated_gradients")
#: The named baselines of integrated gradients (an int token id is accepted too).
EMBEDDING_BASELINES = ("pad", "mask", "zeros")
_LM_REDUCES = ("sum", "mean")


def resolve_embedding_layer(model: torch.nn.Module, layer=None) -> tuple[str, torch.nn.Module]:
    """``(name, module)`` of the layer whose output is attributed. None: ``model.get_input_embeddings()``
    when it exists, else the model's single ``torch.nn.Embedding``; a module of ``model`` or its
    dotted name (or a unique dotted suffix of it) is looked up as the layer explainers look up
    ``layer=`` (:func:`featurelens.explainers._layer_hooks.resolve_layer`)."""
    if layer is None:
        layer = input_embeddings(model)
        if layer is None:
            found = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.Embedding)]
            if len(found) != 1:
                listed = ", ".join(repr(n) for n, _ in found) or "none"
                raise ValueError(
                    f"embedding_layer=None needs a model with get_input_embeddings() or exactly one "
                    f"torch.nn.Embedding; {type(model).__name__} has {len(found)} ({listed}). "
                    "Pass embedding_layer= a module name or the module"
                )
            return found[0]
    return resolve_layer(model, layer, "the embedding attributions", argument="embedding_layer")


def check_ig_steps(n_steps) -> int:
    """Integrated gradients' ``n_steps`` (Gauss-Legendre nodes, one model evaluation each): an int
    >= 1, refused before any work above ``featurelens._budgets.MAX_EVALUATIONS`` model
    evaluations and above ``featurelens.explainers.gradient.MAX_GAUSS_LEGENDRE_STEPS`` (2,048)
    nodes, the bounds of ``featurelens.explainers.gradient.integration_rule``."""
    n_steps = check_budget(n_steps, "n_steps", unit="model evaluations", what="per text",
                           hint="lower n_steps (50 to 300 nodes are usual)")
    return check_budget(n_steps, "n_steps", unit="Gauss-Legendre nodes", limit=MAX_GAUSS_LEGENDRE_STEPS,
                        source="featurelens.explainers.gradient.MAX_GAUSS_LEGENDRE_STEPS: numpy's leggauss is O(n^3)",
                        hint="lower n_steps")


class _Swap:
    """A forward hook on the embedding layer: records its output, or replaces it by ``replace``."""

    def __init__(self, name: str):
        self.name, self.replace, self.calls, self.captured = name, None, 0, None

    def __call__(self, module, inputs, out):
        self.calls += 1
        if not is_tensor(out):
            raise TypeError(f"embedding_layer {self.name!r} must output a tensor (m, L, dim); got {type(out).__name__}")
        if self.replace is None:
            self.captured = out.detach()
            return None
        if tuple(out.shape) != tuple(self.replace.shape):
            raise ValueError(f"embedding_layer {self.name!r} outputs shape {tuple(out.shape)}; "
                             f"expected {tuple(self.replace.shape)} (m, L, dim)")
        return self.replace.to(out.dtype)


def _baseline_id(baseline, players: Players, n_vocab: int | None):
    """The token id that replaces every player token (None for ``"zeros"``)."""
    if isinstance(baseline, (int, np.integer)) and not isinstance(baseline, (bool, np.bool_)):
        value = check_int(baseline, "baseline", low=0)
        check_token_ids([value], "baseline", n_vocab, "the model's input embedding")
        return value
    if not isinstance(baseline, str):
        raise TypeError(f"baseline must be 'pad', 'mask', 'zeros' or an int token id; got {baseline!r} "
                        f"({type(baseline).__name__})")
    baseline = check_option(baseline, "baseline", EMBEDDING_BASELINES)
    if baseline == "zeros":
        return None
    attr = f"{baseline}_token_id"
    value = getattr(players.tokenizer, attr, None)
    if value is None:
        raise ValueError(f"baseline={baseline!r} needs a tokenizer with a {attr}; {type(players.tokenizer).__name__} "
                         "has none. Pass baseline='zeros' or a token id (baseline=<int>)")
    check_token_ids([int(value)], f"baseline={baseline!r} (the tokenizer's {attr})", n_vocab,
                    "the model's input embedding")
    return int(value)


def embedding_attributions(model, players, method: str = "integrated_gradients", *, target=None, continuation=None,
                           baseline="pad", n_steps: int = 50, embedding_layer=None, output: str = "raw",
                           batch_size: int | None = None, reduce: str = "sum", bos_token_id: int | None = None):
    """Gradient attributions of a text model's output to its input embeddings, one value per token
    and per player of ``players`` (the sum over the player's tokens).

    Let ``e_t`` be the embedding layer's output at token ``t`` and ``g_t = d f / d e_t``:

    - ``"saliency"``: ``||g_t||_2`` over the embedding dimension (Simonyan et al. 2013, arXiv
      1312.6034). The L2 norm is the usual way Captum users turn Captum's per-dimension ``Saliency``
      of the embeddings into one number per token; it is never negative.
    - ``"input_x_gradient"``: ``sum_d e_t,d g_t,d`` (Shrikumar et al. 2016, arXiv 1605.01713).
    - ``"integrated_gradients"`` (Sundararajan, Taly, Yan 2017, arXiv 1703.01365) with respect to
      the embedding layer's output, from the baseline's embeddings ``e'`` to the input's:
      ``a_t = sum_d (e_t,d - e'_t,d) int_0^1 g_t,d(e' + alpha (e - e')) d alpha``, by Gauss-Legendre
      quadrature on ``n_steps`` nodes (``featurelens.explainers.gradient.integration_rule``).
      Completeness: ``sum_t a_t = f(x) - f(baseline)`` up to the quadrature error; the gap is
      ``params["completeness_delta"]``. ``baseline="pad"``, ``"mask"`` or an int token id replaces
      every player token's id by that id (special tokens keep theirs) and takes ``e'`` as the
      layer's output on those ids: Captum's ``LayerIntegratedGradients`` on the embedding layer with
      baseline ids. ``"zeros"``: ``e'`` is 0 at the player tokens and ``e`` at the others.

    Parameters
    ----------
    model
        A ``torch.nn.Module`` mapping ``input_ids`` (m, L) (a LongTensor) to logits: ``(m, classes)``
        for a classifier, ``(m, L, vocab)`` for a causal LM (or an object with ``.logits``). A
        transformers ``PreTrainedModel`` is called as ``model(input_ids=..., attention_mask=ones)``.
        It runs in eval mode; its modes, parameters, ``requires_grad`` flags and hooks are as before
        afterwards (the embedding output is replaced through a forward hook removed in ``finally``).
    players
        A :class:`Players` made with a HuggingFace tokenizer (token ids; special tokens, owner -1,
        are never players and never interpolated).
    method
        ``"saliency"``, ``"input_x_gradient"`` or ``"integrated_gradients"``.
    target
        A classifier's class (an int); None: the class the model predicts for the text.
    continuation
        For a causal LM: a str (encoded with ``players.tokenizer``, no special tokens) or token ids.
        The value is then ``log p(continuation | prompt)`` (:class:`GenerationGame`'s value, and that of
        Captum's ``LLMGradientAttribution``), summed (``reduce="sum"``) or averaged (``"mean"``)
        over the continuation's tokens; only the prompt's players are attributed and the
        continuation's embeddings stay as they are. As in :class:`GenerationGame`, the tokenizer's
        ``bos_token_id`` is put before a prompt that has no special token of its own.
    baseline
        Integrated gradients' baseline (above).
    n_steps
        Integrated gradients' quadrature nodes (an int >= 1), refused before any work above 2,048
        nodes (``featurelens.explainers.gradient.MAX_GAUSS_LEGENDRE_STEPS``) or
        ``featurelens._budgets.MAX_EVALUATIONS`` model evaluations.
    embedding_layer
        None (``model.get_input_embeddings()``, else the single ``torch.nn.Embedding``), a dotted
        module name or the module.
    output
        For a classifier, as in :class:`ClassifierGame`: ``"raw"`` (the logit),
        ``"probability"`` (the softmax probability) or ``"log_probability"`` (``"softmax"`` /
        ``"log_softmax"`` are read as those two).
    batch_size
        The most rows per model call (the integrated gradients' path points go through in chunks of
        it); None: ``featurelens._batching.default_rows`` of one row's embedding size.
    reduce
        ``"sum"`` or ``"mean"`` of the continuation's token log-probabilities.
    bos_token_id
        With ``continuation``: a token put before the prompt, as :class:`GenerationGame`'s (never a
        player). None: the tokenizer's ``bos_token_id`` when the prompt has no special token of its
        own (and the tokenizer has one).

    Returns
    -------
    featurelens.Explanation
        ``values`` (1, n) one per player, ``feature_names`` = ``players.names``,
        ``extra["token_values"]`` (1, L) per token of the model's input (special and continuation
        tokens included) and ``extra["input_ids"]`` (1, L); for integrated gradients
        ``base_values = [f(baseline)]`` and ``params["completeness_delta"]`` =
        ``sum(token_values) - (f(x) - f(baseline))``; ``params["f_input"]`` = ``f(x)``.
    """
    from ..explanation import Explanation

    start = time.perf_counter()
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (input_ids -> logits); got {type(model).__name__}")
    if not isinstance(players, Players):
        raise TypeError(f"players must be a featurelens.text.Players; got {type(players).__name__}")
    if not players.has_ids:
        raise ValueError("players must be made with a HuggingFace tokenizer (they need token ids to embed); "
                         "these have none: pass tokenizer= to Players")
    method = check_option(method, "method", GRADIENT_METHODS)
    n_steps = check_ig_steps(n_steps) if method == "integrated_gradients" else check_int(n_steps, "n_steps", low=1)
    output = class_score_units(output)
    reduce = check_option(reduce, "reduce", _LM_REDUCES)
    batch_size = check_int(batch_size, "batch_size", low=1, allow_none=True)
    layer_name, layer = resolve_embedding_layer(model, embedding_layer)

    prompt, owner = players.input_ids.astype(np.int64), players.owner.astype(np.int64)
    lm = continuation is not None
    if bos_token_id is not None and not lm:
        raise ValueError(f"bos_token_id applies to a causal LM (with continuation=); got bos_token_id={bos_token_id!r} "
                         "without a continuation")
    if lm:
        if target is not None:
            raise ValueError(f"target applies to a classifier; with continuation= the value is the continuation's "
                             f"log-probability. Got target={target!r}")
        if output != "raw":
            raise ValueError(f"output={output!r} applies to a classifier; with continuation= the value is a "
                             "log-probability (output='raw')")
        if isinstance(continuation, str):
            cont = list(players.tokenizer(continuation, add_special_tokens=False)["input_ids"])
        else:
            if is_tensor(continuation):
                continuation = continuation.detach().cpu().tolist()
            if np.ndim(continuation) != 1:
                raise TypeError(f"continuation must be a str or a list of token ids; got {continuation!r}")
            cont = [check_int(t, "continuation token", low=0) for t in np.asarray(continuation).tolist()]
        if not cont:
            raise ValueError("continuation must hold at least one token; got an empty continuation")
        if bos_token_id is not None:
            bos = check_int(bos_token_id, "bos_token_id", low=0)
        else:
            bos = getattr(players.tokenizer, "bos_token_id", None)
            bos = None if bos is None or bool((owner < 0).any()) else int(bos)
        if bos is not None:
            prompt, owner = np.concatenate([[bos], prompt]), np.concatenate([[-1], owner])
        cont = np.asarray(cont, dtype=np.int64)
        seq = np.concatenate([prompt, cont])
        owner_full = np.concatenate([owner, np.full(cont.shape[0], -1, dtype=np.int64)])
    else:
        if reduce != "sum":
            raise ValueError(f"reduce={reduce!r} applies to a causal LM's continuation; pass continuation= or leave "
                             "reduce='sum'")
        cont, seq, owner_full = None, prompt, owner
    is_player = owner_full >= 0
    n_vocab = layer.num_embeddings if isinstance(layer, torch.nn.Embedding) else None
    # Ids past the embedding table fail with an IndexError deep inside torch: named here instead.
    if lm and bos is not None:
        check_token_ids([bos], "bos_token_id", n_vocab, "the model's input embedding")
    check_token_ids(prompt, "the token ids of players (its tokenizer's)", n_vocab, "the model's input embedding")
    if lm:
        check_token_ids(cont, "continuation", n_vocab, "the model's input embedding")
    base_id = _baseline_id(baseline, players, n_vocab) if method == "integrated_gradients" else None

    params0 = list(model.parameters())
    device = params0[0].device if params0 else torch.device("cpu")
    L = int(seq.shape[0])
    P = L - (0 if cont is None else int(cont.shape[0]))
    calls = 0
    state = {"target": target}

    def value(out, m):
        logits = getattr(out, "logits", out)
        if not is_tensor(logits):
            raise TypeError(f"model must return a logits tensor (or an object with .logits); got {type(logits).__name__}")
        if lm:
            positions = L if keep is None else keep
            if logits.ndim != 3 or tuple(logits.shape[:2]) != (m, positions):
                raise ValueError(f"model must return a causal LM's logits of shape (m, L, vocab) = ({m}, {positions}, "
                                 f"vocab) with continuation=; got {tuple(logits.shape)}")
            T = int(cont.shape[0])
            check_token_ids(cont, "continuation", int(logits.shape[-1]), "the model's logits")
            first = P - 1 - (L - positions)  # the logits kept are those of the last `positions` tokens
            step = logits[:, first: first + T].double().log_softmax(-1)
            idx = torch.as_tensor(cont, device=logits.device).view(1, T, 1).expand(m, T, 1)
            lp = step.gather(-1, idx)[..., 0]
            return lp.sum(1) if reduce == "sum" else lp.mean(1)
        if logits.ndim != 2 or logits.shape[0] != m:
            hint = " (a causal LM? pass continuation=)" if logits.ndim == 3 else ""
            raise ValueError(f"model must return a classifier's logits of shape (m, classes) = ({m}, classes); "
                             f"got {tuple(logits.shape)}{hint}")
        if state["target"] is None:
            state["target"] = int(logits[0].argmax())
        t = check_int(state["target"], "target", low=0, high=logits.shape[1] - 1)
        z = logits.double()
        if output == "raw":
            return z[:, t]
        logp = z.log_softmax(1)[:, t]
        return logp if output == "log_probability" else logp.exp()

    # A transformers LM that takes logits_to_keep computes the logits of the last T + 1 positions
    # only (the T that predict the continuation, and the last), as GenerationGame asks.
    keep = int(cont.shape[0]) + 1 if lm and keeps_last_logits(model) else None
    swap = _Swap(layer_name)

    def run(ids: np.ndarray, replace=None, grad=False):
        """Values of ``ids`` (m, L) (and, with ``replace``, the gradient w.r.t. it; else the captured
        embedding output)."""
        nonlocal calls
        x = torch.as_tensor(ids, device=device)
        swap.calls, swap.captured = 0, None
        leaf = None
        if replace is not None:
            leaf = replace.detach().requires_grad_(grad)
            swap.replace = leaf
        else:
            swap.replace = None
        with torch.enable_grad() if grad else torch.no_grad():
            out = forward_ids(model, x, keep_last=keep)
            calls += x.shape[0]
            if swap.calls != 1:
                raise ValueError(f"embedding_layer {layer_name!r} ran {swap.calls} times in one forward pass; "
                                 "expected exactly once (choose the layer that embeds input_ids)")
            v = value(out, x.shape[0])
            g = torch.autograd.grad(v.sum(), leaf)[0] if grad else None
        swap.replace = None
        return v.detach(), (g if grad else swap.captured)

    handle = layer.register_forward_hook(swap)
    try:
        # Eval mode through the Model adapter: its lock, and every train flag restored after.
        with Model(model).evaluating():
            fx, emb_x = run(seq[None, :])
            if emb_x.ndim != 3 or tuple(emb_x.shape[:2]) != (1, L):
                raise ValueError(f"embedding_layer {layer_name!r} outputs shape {tuple(emb_x.shape)}; expected "
                                 f"(m, L, dim) = (1, {L}, dim)")
            rows = default_rows(L * emb_x.shape[-1]) if batch_size is None else batch_size
            f_b = None
            if method == "integrated_gradients":
                if base_id is None:
                    emb_b = torch.where(torch.as_tensor(is_player, device=emb_x.device)[None, :, None],
                                        torch.zeros_like(emb_x), emb_x)
                    f_b, _ = run(seq[None, :], replace=emb_b)
                else:
                    base_seq = np.where(is_player, base_id, seq)
                    f_b, emb_b = run(base_seq[None, :])
                alphas, weights = integration_rule("gausslegendre", n_steps)
                diff = emb_x - emb_b
                avg = torch.zeros(emb_x.shape[1:], dtype=torch.float64, device=emb_x.device)
                for s in chunks(n_steps, rows):
                    a = torch.as_tensor(alphas[s], dtype=emb_x.dtype, device=emb_x.device).view(-1, 1, 1)
                    points = emb_b + a * diff
                    _, g = run(np.repeat(seq[None, :], points.shape[0], axis=0), replace=points, grad=True)
                    w = torch.as_tensor(weights[s], dtype=torch.float64, device=g.device).view(-1, 1, 1)
                    avg += (w * g.double()).sum(0)
                token = (diff[0].double() * avg).sum(-1)
            else:
                _, g = run(seq[None, :], replace=emb_x, grad=True)
                g = g[0].double()
                token = g.norm(dim=-1) if method == "saliency" else (emb_x[0].double() * g).sum(-1)
    finally:
        handle.remove()

    token = token.cpu().numpy()
    values = np.zeros(players.n)
    np.add.at(values, owner_full[is_player], token[is_player])
    params = {
        "method": method, "target": state["target"], "embedding_layer": layer_name,
        "value": "continuation_log_prob" if lm else "class_output", "output": output,
        "batch_size": batch_size, "n_tokens": L, "n_prompt_tokens": P, "f_input": float(fx[0]),
    }
    if lm:
        params.update(reduce=reduce, continuation=cont.tolist(),
                      continuation_text=continuation if isinstance(continuation, str) else None)
    base_values = None
    if method == "integrated_gradients":
        change = float(fx[0] - f_b[0])
        delta = float(token.sum()) - change
        params.update(baseline=baseline if isinstance(baseline, str) else int(baseline), baseline_id=base_id,
                      n_steps=n_steps, integration="gausslegendre", completeness_delta=delta,
                      relative_completeness_delta=abs(delta) / max(abs(change), 1e-12))
        base_values = np.array([float(f_b[0])])
    return Explanation(
        values=values[None, :], method=method, params=params,
        target=None if lm else np.array([state["target"]]),
        model_calls=calls, seconds=time.perf_counter() - start, feature_names=list(players.names),
        base_values=base_values, output="probability" if output == "probability" else "raw",
        extra={"token_values": token[None, :], "input_ids": seq[None, :]},
    )
