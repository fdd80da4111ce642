"""Forward passes of a text model on token ids, in calls whose activations stay within a memory
bound: how many sequences of one length go through the model at once.

A transformer's forward pass on ``m`` sequences of ``L`` tokens holds, layer by layer, about
``m * L * (intermediate + 4 * hidden)`` floats of hidden states and ``m * heads * L^2`` of
attention scores (twice: the scores and their softmax). Sending every coalition of a KernelSHAP
budget in one call (512 sequences of 512 tokens) needs gigabytes; sending them one by one wastes
the matrix units. :func:`rows_per_forward` sends as many as keep that estimate within
:data:`FORWARD_CHUNK_BYTES`.
"""

from __future__ import annotations

import inspect

from featurelens._optional import torch

from .._batching import DEFAULT_BATCH_SIZE, rows_for_bytes

__all__ = ["FORWARD_CHUNK_BYTES", "activation_bytes", "forward_ids", "is_hf_model", "keeps_last_logits",
           "rows_per_forward"]

#: Estimated activation bytes of one call of a text model (:func:`activation_bytes` per sequence
#: times the sequences sent): 256 MiB, 8 sequences of 512 tokens a call for MiniLM. On two CPU
#: cores, calls of 8 such sequences took 557 ms a sequence against 605 for calls of 4 and 883 for
#: calls of 1, and added 72 MB at their peak (the estimate counts the attention scores in full, which
#: scaled-dot-product attention does not keep, so it errs on the side of memory). Read at call time,
#: so setting ``featurelens.text._forward.FORWARD_CHUNK_BYTES`` changes how the sequences are split
#: into calls (never the values: each sequence's output does not depend on the others in its call).
FORWARD_CHUNK_BYTES = 2**28
#: The width assumed for a model whose configuration does not say it (no ``hidden_size`` /
#: ``n_embd`` and no embedding layer).
_DEFAULT_WIDTH = 1024


def is_hf_model(model) -> bool:
    """True for a transformers ``PreTrainedModel``, recognised by its class hierarchy (so without
    importing transformers)."""
    return any(c.__name__ == "PreTrainedModel" for c in type(model).__mro__)


def _forward_takes(model, name: str) -> bool:
    """True when ``model.forward`` takes the keyword ``name``."""
    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover - a forward without a signature
        return False


def keeps_last_logits(model) -> bool:
    """True when ``model`` is a transformers model whose ``forward`` takes ``logits_to_keep`` (its
    output head then runs on the last positions only)."""
    return is_hf_model(model) and _forward_takes(model, "logits_to_keep")


def forward_ids(model, ids: torch.Tensor, keep_last: int | None = None) -> torch.Tensor:
    """The logits of ``model`` on token ids ``(m, L)`` of one length (no padding): a transformers
    model is called as ``model(input_ids=ids, attention_mask=ones)``, any other module or callable
    as ``model(ids)``; an output with ``.logits`` (transformers' model outputs) gives those.

    ``keep_last``: with a transformers model that takes ``logits_to_keep``
    (:func:`keeps_last_logits`), only the logits of the last ``keep_last`` positions are computed
    and returned, ``(m, keep_last, vocab)``; other models ignore it (all ``L`` positions).

    A transformers model whose ``forward`` takes ``use_cache`` is called with ``use_cache=False``:
    one pass over whole sequences needs no key/value cache for later tokens (GPT-2 small would
    keep 2 x 12 layers x L x 768 floats a sequence)."""
    if is_hf_model(model):
        extra = {"logits_to_keep": int(keep_last)} if keep_last and keeps_last_logits(model) else {}
        if _forward_takes(model, "use_cache"):
            extra["use_cache"] = False
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), **extra)
    else:
        out = model(ids)
    return getattr(out, "logits", out)


def _config(model):
    """The first transformers-style configuration (an object with ``hidden_size`` or ``n_embd``)
    found on ``model`` or one of its submodules; None when there is none."""
    modules = model.modules() if isinstance(model, torch.nn.Module) else [model]
    for m in modules:
        cfg = getattr(m, "config", None)
        if cfg is not None and (getattr(cfg, "hidden_size", None) or getattr(cfg, "n_embd", None)):
            return cfg
    return None


def activation_bytes(model, length: int) -> int:
    """Estimated bytes of float32 activations one sequence of ``length`` tokens holds at once in a
    forward pass of ``model``: ``4 * L * (intermediate + 4 * hidden + 2 * heads * L)``.

    ``hidden``, ``heads`` and ``intermediate`` come from the model's transformers configuration
    (``hidden_size`` / ``n_embd``, ``num_attention_heads`` / ``n_head``, ``intermediate_size`` /
    ``n_inner``, else ``4 * hidden``); without one, ``hidden`` is the widest embedding of the model
    (1024 when it has none) and the attention term is left out."""
    length = max(1, int(length))
    cfg = _config(model)
    if cfg is not None:
        hidden = int(getattr(cfg, "hidden_size", None) or getattr(cfg, "n_embd"))
        heads = int(getattr(cfg, "num_attention_heads", None) or getattr(cfg, "n_head", None) or 0)
        inter = int(getattr(cfg, "intermediate_size", None) or getattr(cfg, "n_inner", None) or 4 * hidden)
    else:
        dims = [m.embedding_dim for m in model.modules() if isinstance(m, torch.nn.Embedding)] \
            if isinstance(model, torch.nn.Module) else []
        hidden, heads = (max(dims) if dims else _DEFAULT_WIDTH), 0
        inter = 4 * hidden
    return 4 * length * (inter + 4 * hidden + 2 * heads * length)


def rows_per_forward(model, length: int, batch_size: int | None = None, extra_row_bytes: int = 0,
                     budget_bytes: int | None = None) -> int:
    """Sequences of ``length`` tokens sent in one call of ``model``: ``batch_size`` when given,
    else as many as keep ``activation_bytes(model, length) + extra_row_bytes`` (e.g. a causal LM's
    logits) per sequence within ``budget_bytes`` (None: :data:`FORWARD_CHUNK_BYTES`), at least 1
    and at most ``featurelens._batching.DEFAULT_BATCH_SIZE``."""
    if batch_size is not None:
        return int(batch_size)
    row = activation_bytes(model, length) + int(extra_row_bytes)
    budget = FORWARD_CHUNK_BYTES if budget_bytes is None else int(budget_bytes)
    return rows_for_bytes(row, budget, max_rows=DEFAULT_BATCH_SIZE)
