"""Games over the players of a text: a classifier's class score and a causal LM's log-probability
of a given continuation."""

from __future__ import annotations

from typing import Callable

import numpy as np
from featurelens._optional import is_tensor, torch

from .._batching import DEFAULT_CHUNK_BYTES, rows_for_bytes
from .._validation import as_numpy, check_int, check_option, check_token_ids
from .._budgets import check_memory, format_bytes, format_count
from ..games import Game
from ..models._outputs import CLASS_SCORE_UNITS, class_score, class_score_units
from ._forward import forward_ids, is_hf_model, keeps_last_logits, rows_per_forward
from ._players import Players, empty_token_id_of, is_hf_tokenizer, tokenizer_vocab_size

__all__ = ["ClassifierGame", "GenerationGame", "OUTPUTS", "REDUCES", "forward_ids", "is_hf_model", "model_vocab_size"]

#: How a classifier's outputs become the value: as they are, or the softmax probability of the
#: class / its log (the units vocabulary of featurelens.models._outputs; "softmax" and
#: "log_softmax" are taken as spellings of the last two).
OUTPUTS = CLASS_SCORE_UNITS
#: How the continuation's token log-probabilities are combined.
REDUCES = ("sum", "mean", "per_token")


def input_embeddings(model):
    """``model.get_input_embeddings()`` (transformers' accessor of the input embedding) when the
    model has it and it answers, else None."""
    getter = getattr(model, "get_input_embeddings", None)
    if not callable(getter):
        return None
    try:
        return getter()
    except NotImplementedError:
        return None


def model_vocab_size(model) -> int | None:
    """The number of token ids a torch model embeds (ids ``0..size-1``): the ``num_embeddings`` of
    ``model.get_input_embeddings()`` or of the model's single ``torch.nn.Embedding``; None for a
    callable that is not a module, or where the input embedding cannot be told."""
    if not isinstance(model, torch.nn.Module):
        return None
    layer = input_embeddings(model)
    if isinstance(layer, torch.nn.Embedding):
        return int(layer.num_embeddings)
    found = [m for m in model.modules() if isinstance(m, torch.nn.Embedding)]
    return int(found[0].num_embeddings) if len(found) == 1 else None


def _check_players(players) -> Players:
    if not isinstance(players, Players):
        raise TypeError(f"players must be a featurelens.text.Players; got {type(players).__name__}")
    return players


class ClassifierGame(Game):
    """``v(S)`` = the classifier's output for class ``target`` on the text that keeps the players
    in ``S`` (removed players deleted, or replaced by a mask / pad / baseline token), the value
    function of the SPEX paper's sentiment experiments (Kang et al. 2025, arXiv 2502.13870) and of
    shap's text masker (Lundberg & Lee 2017, arXiv 1705.07874).

    Parameters
    ----------
    model_fn
        ``model_fn(batch) -> outputs`` of shape ``(m, classes)`` (or ``(m,)`` for one score), numpy
        or torch. ``batch`` is a list of ``m`` str (``inputs="text"``) or of ``m`` lists of token
        ids (``inputs="ids"``; ragged when players are deleted: ``Players.pad`` pads them).
    players
        A :class:`Players`.
    target
        The class explained (an int); None: the class the model predicts for the whole text.
    removal
        ``"delete"`` (default), ``"mask"`` (the tokenizer's mask token, or ``players.mask_text``
        for text), ``"pad"`` (the tokenizer's pad token) or an int token id (a baseline token).
    output
        ``"raw"`` (default): ``model_fn``'s number for ``target`` as it is (a probability if it
        returns probabilities, a logit if it returns logits); ``"probability"``: the probability
        of ``target`` from logits, ``softmax(z)_target``; ``"log_probability"``: its logarithm
        (``"softmax"`` and ``"log_softmax"`` are read as those two; ``game.output`` holds the
        name of ``featurelens.models._outputs.CLASS_SCORE_UNITS``).
    inputs
        ``"text"`` or ``"ids"``; None: ``"ids"`` for players with token ids, else ``"text"``.
    empty_token_id
        With ``removal="delete"`` and a tokenizer that adds no special tokens (no [CLS]/[SEP]/BOS),
        the coalition that keeps no player is an empty token sequence, which most models cannot
        read (an empty attention, a mean over no token: NaN). That coalition is sent as the one
        token ``[empty_token_id]`` instead; None: the tokenizer's first of ``bos``, ``eos``,
        ``pad``, ``unk`` token (:data:`featurelens.text.EMPTY_TOKENS`), recorded as
        ``game.empty_token_id``. ``v(empty)`` is then the model's output on that one token (the
        "nothing" of the value function). A tokenizer with none of those tokens and no
        ``empty_token_id``: evaluating the empty coalition is a ValueError naming this argument.
        Where a coalition always keeps a token (special tokens, or ``removal`` mask / pad / an id)
        it is never used.
    batch_size
        The most texts per call of ``model_fn`` (the game's ``chunk_size``; None: 1024).
    executor
        The game's executor (:mod:`featurelens.parallel`).
    """

    def __init__(self, model_fn: Callable, players: Players, target=None, removal="delete", output: str = "raw",
                 inputs: str | None = None, batch_size: int | None = None, executor=None,
                 empty_token_id: int | None = None):
        if not callable(model_fn):
            raise TypeError(f"model_fn must be callable (a list of texts or token ids -> outputs); got {type(model_fn).__name__}")
        self.players = _check_players(players)
        super().__init__(players.n, chunk_size=batch_size, executor=executor)
        self.model_fn = model_fn
        self.output = class_score_units(output)
        if inputs is None:
            inputs = "ids" if players.has_ids else "text"
        self.inputs = check_option(inputs, "inputs", ("text", "ids"))
        if self.inputs == "ids":
            players.removal_id(removal)  # validates, with the tokenizer's ids
            if not players.has_ids:
                raise ValueError("inputs='ids' needs players made with a HuggingFace tokenizer; use inputs='text'")
        elif isinstance(removal, (int, np.integer)) or removal == "pad":
            raise ValueError(f"removal={removal!r} replaces token ids; with inputs='text' use removal='delete' or "
                             "removal='mask'")
        else:
            check_option(removal, "removal", ("delete", "mask"))
        self.removal = removal
        if self.inputs == "ids":
            empty = players.empty_token_id(empty_token_id)  # a given id is checked even where unused
            self.empty_token_id = empty if players.can_be_empty(removal) else None
        elif empty_token_id is not None:
            raise ValueError(f"empty_token_id applies to token ids (inputs='ids'); got empty_token_id={empty_token_id!r} "
                             "with inputs='text' (model_fn receives '' for the empty coalition)")
        else:
            self.empty_token_id = None
        # One call on the whole text: checks the outputs and the target, and fixes target=None.
        full = self._outputs(np.ones((1, players.n), dtype=bool))
        self.n_outputs = 1 if full.ndim == 1 else full.shape[1]
        if target is None:
            target = 0 if full.ndim == 1 else int(np.argmax(full[0]))
        self.target = check_int(target, "target", low=0, high=self.n_outputs - 1)
        if self.output != "raw" and full.ndim == 1:
            raise ValueError(f"output={self.output!r} needs one output per class, shape (m, classes); model_fn returns (m,)")

    def batch(self, masks: np.ndarray) -> list:
        """The inputs ``model_fn`` receives for ``masks`` ``(m, n)``."""
        if self.inputs == "ids":
            batch = self.players.keep_ids(masks, self.removal, self.empty_token_id)
            empty = [r for r, seq in enumerate(batch) if not seq]
            if empty:
                raise ValueError(
                    f"mask row {empty[0]} keeps no player: with removal='delete' and a tokenizer that adds no special "
                    f"tokens that is an empty token sequence, and {type(self.players.tokenizer).__name__} has no "
                    "bos / eos / pad / unk token to send instead. Pass empty_token_id=<int> (the token sent as the "
                    f"empty text) or {' / '.join(self.players.removal_fixes())}"
                )
            return batch
        return [self.players.keep_text(row, self.removal) for row in masks]

    def _outputs(self, masks: np.ndarray) -> np.ndarray:
        batch = self.batch(masks)
        out = self.model_fn(batch)
        if is_tensor(out):
            out = out.detach().cpu().double().numpy()
        out = as_numpy(out, "model_fn output").astype(np.float64)
        if out.ndim not in (1, 2) or out.shape[0] != masks.shape[0]:
            raise ValueError(
                f"model_fn must return one row of outputs per input, shape ({masks.shape[0]}, classes) "
                f"or ({masks.shape[0]},); got shape {out.shape}"
            )
        bad = ~np.isfinite(out.reshape(out.shape[0], -1)).all(axis=1)
        if bool(bad.any()):
            rows = np.flatnonzero(bad)
            empty = [int(r) for r in rows if not masks[r].any()]
            if empty:
                shown = repr(batch[empty[0]])
                fixes = self.players.removal_fixes()
                if self.inputs == "ids" and self.empty_token_id is not None and self.empty_token_id == getattr(
                        self.players.tokenizer, "pad_token_id", None):
                    fixes = [f for f in fixes if f != "removal='pad'"]  # the model fails on the pad token already
                fix = ("removal='mask' (the model then reads the mask text)" if self.inputs == "text" else
                       "empty_token_id=<int> (another token sent as the empty text) or " + " / ".join(fixes))
                raise ValueError(
                    f"model_fn returned NaN or inf on the empty text (mask row {empty[0]} keeps no player; the model "
                    f"received {shown}). Pass {fix}"
                )
        return out

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        out = self._outputs(masks)
        if out.ndim == 1:
            return out
        return class_score(out, self.target, self.output)


def _encoder(tokenizer) -> Callable[[str], list[int]]:
    if is_hf_tokenizer(tokenizer):
        return lambda s: list(tokenizer(s, add_special_tokens=False)["input_ids"])
    if callable(tokenizer):
        return lambda s: [int(t) for t in tokenizer(s)]
    raise TypeError(
        "tokenizer must be a HuggingFace tokenizer or a callable str -> list of token ids; "
        f"got {type(tokenizer).__name__}"
    )


class GenerationGame(Game):
    """``v(S)`` = the log-probability of a given ``continuation`` under a causal language model
    prompted with the players of ``S`` (the others deleted or replaced by a token), the value
    function of LLM attribution by perturbation (Captum's ``LLMAttribution``: Miglani et al. 2023,
    arXiv 2312.05491; SPEX: Kang et al. 2025, arXiv 2502.13870)::

        log p(y | x_S) = sum_j log softmax(lm(x_S + y)[P + j - 1])[y_j]

    where ``P`` is the kept prompt's length and ``y`` the continuation's ``T`` token ids.

    Parameters
    ----------
    lm
        ``lm(input_ids) -> logits``: a LongTensor ``(m, L)`` to logits ``(m, L, vocab)`` (or an
        object with ``.logits``, as transformers' models return). Rows are batched by length, so no
        padding (and no attention mask) is needed: any causal LM callable works. Its train/eval
        mode is left as it is (call ``lm.eval()``).
    tokenizer
        Encodes ``continuation`` (a str) and, for players without token ids, each player's text:
        a HuggingFace tokenizer (no special tokens added) or a callable ``str -> list of ids``.
    prompt_players
        A :class:`Players` (or a str: the prompt's tokens, ``Players(prompt, tokenizer, "token")``).
        Players with token ids use them (special tokens kept); others are encoded piece by piece.
    continuation
        The target continuation: a str or a list of token ids.
    reduce
        ``"sum"`` (the continuation's log-probability), ``"mean"`` (per token) or ``"per_token"``
        (the log-probability of continuation token ``token``; ``log_probs`` gives them all).
    token
        With ``reduce="per_token"``: which continuation token (an int in ``0..T-1``).
    removal
        ``"delete"`` (default), ``"mask"``, ``"pad"`` or an int token id.
    bos_token_id
        A token put before the prompt (None: the tokenizer's ``bos_token_id`` when the players have
        no special tokens of their own and the tokenizer has one). Without it (and without
        special tokens), an empty kept prompt has no position to predict the first continuation
        token from: see ``empty_token_id``.
    empty_token_id
        Where a coalition can keep no prompt token at all (``removal="delete"``, no ``bos_token_id``
        and no special token), the empty prompt is sent as the one token ``[empty_token_id]``,
        ``v(empty) = log p(y | empty_token_id)``; every other coalition is unchanged. None: the
        tokenizer's first of ``bos``, ``eos``, ``pad``, ``unk`` token
        (:data:`featurelens.text.EMPTY_TOKENS`), recorded as ``game.empty_token_id`` (None where it
        is never used). A tokenizer with none of them (a plain callable): evaluating the empty
        coalition is a ValueError naming ``bos_token_id=``, ``empty_token_id=`` and ``removal=``.
    batch_size
        The most sequences per call of ``lm`` (and mask rows per chunk of the game). None: as many
        as keep one call's logits and their log-softmax within
        ``featurelens._batching.DEFAULT_CHUNK_BYTES`` (64 MiB; ``logits_bytes`` per
        sequence, ``L * vocab * 4`` bytes of float32 logits plus ``16 * T * vocab`` for the float64
        log-softmax of the continuation's ``T`` positions), at most 1,024: a 50,000-token vocabulary
        and 30-token sequences give about 10 sequences a call, not 1,024 (6 GB of logits). Until the
        vocabulary is known (a plain callable LM with a tokenizer that does not say it) the first
        call sends one sequence and its logits tell it. A batch_size given is used as it is, and
        refused (a ValueError naming it) when one call's logits would not fit in the available
        memory.
    executor
        As for :class:`featurelens.games.Game`.
    """

    def __init__(self, lm: Callable, tokenizer, prompt_players, continuation, reduce: str = "sum",
                 token: int | None = None, removal="delete", bos_token_id: int | None = None,
                 batch_size: int | None = None, executor=None, empty_token_id: int | None = None):
        if not callable(lm):
            raise TypeError(f"lm must be callable, input_ids -> logits; got {type(lm).__name__}")
        encode = _encoder(tokenizer)
        if isinstance(prompt_players, str):
            prompt_players = Players(prompt_players, tokenizer, unit="token")
        players = _check_players(prompt_players)
        super().__init__(players.n, chunk_size=batch_size, executor=executor)
        self.players, self.lm, self.tokenizer = players, lm, tokenizer
        self.reduce = check_option(reduce, "reduce", REDUCES)
        if players.has_ids:
            ids, owner = players.input_ids.copy(), players.owner.copy()
        else:
            parts = [encode(p) for p in players.pieces]
            ids = np.array([t for part in parts for t in part], dtype=np.int64)
            owner = np.repeat(np.arange(players.n), [len(p) for p in parts]).astype(np.int64)
        if bos_token_id is None and not bool((owner < 0).any()):
            bos_token_id = getattr(tokenizer, "bos_token_id", None)
        if bos_token_id is not None:
            bos_token_id = check_int(bos_token_id, "bos_token_id", low=0)
            ids, owner = np.concatenate([[bos_token_id], ids]), np.concatenate([[-1], owner])
        self.prompt_ids, self.owner = ids.astype(np.int64), owner.astype(np.int64)
        if isinstance(continuation, str):
            cont = encode(continuation)
        else:
            cont = [check_int(t, "continuation token", low=0) for t in continuation]
        if not cont:
            raise ValueError("continuation must hold at least one token; got an empty continuation")
        # Every id must be one the model embeds (its input embedding's size; else the tokenizer's,
        # where known): past it the embedding fails with an IndexError deep inside torch.
        n_vocab, source = model_vocab_size(lm), "the model's input embedding"
        if n_vocab is None:
            n_vocab, source = tokenizer_vocab_size(tokenizer), "the tokenizer"
        if bos_token_id is not None:
            check_token_ids([bos_token_id], "bos_token_id", n_vocab, source)
        check_token_ids(ids[owner >= 0], "the prompt's token ids (prompt_players)", n_vocab, source)
        check_token_ids(cont, "continuation", n_vocab, source)
        self._n_vocab, self._vocab_source = n_vocab, source
        self.continuation = np.asarray(cont, dtype=np.int64)
        #: The continuation as given when a str (None for token ids): for titles and provenance.
        self.continuation_text = continuation if isinstance(continuation, str) else None
        if self.reduce == "per_token":
            self.token = check_int(token, "token", low=0, high=len(cont) - 1)
        elif token is not None:
            raise ValueError(f"token= applies to reduce='per_token'; got token={token!r} with reduce={self.reduce!r}")
        else:
            self.token = None
        self.fill = (players.removal_id(removal, n_vocab, source) if players.has_ids
                     else self._fill_without_players(removal))
        self.removal = removal
        # The one token sent as an empty prompt (only where a coalition can keep no prompt token).
        can_be_empty = self.fill is None and not bool((self.owner < 0).any())
        if can_be_empty or empty_token_id is not None:  # a given id is checked even where unused
            empty = empty_token_id_of(tokenizer, empty_token_id, n_vocab, source)
        self.empty_token_id = empty if can_be_empty else None
        # Rows per call of lm: the batch_size given, else chosen from the logits' size per sequence
        # (the vocabulary: the model's or tokenizer's size until the first logits say it).
        self._batch_size = None if batch_size is None else self.chunk_size
        self._logit_vocab, self._logit_itemsize = n_vocab, 4
        # A transformers LM that takes logits_to_keep computes the logits of the last T + 1
        # positions only (the T that predict the continuation, and the last one): the output head
        # then costs T + 1 positions, not L (a 50,000-word head on 200 tokens is a fifth of GPT-2's
        # forward pass).
        self._keep = int(self.continuation.shape[0]) + 1 if keeps_last_logits(lm) else None
        if self._batch_size is not None and n_vocab is not None:
            self._check_batch_memory()

    def logits_bytes(self, length: int, vocab: int | None = None) -> int:
        """Bytes one sequence of ``length`` tokens costs in one call of ``lm``: its logits
        (``length * vocab`` numbers of the logits' dtype, float32 until seen; ``(T + 1) * vocab``
        for a transformers LM that takes ``logits_to_keep``) and the float64 log-softmax of the
        continuation's ``T`` positions (``2 * 8 * T * vocab``)."""
        vocab = self._logit_vocab if vocab is None else vocab
        T = int(self.continuation.shape[0])
        positions = int(length) if self._keep is None else min(int(length), self._keep)
        return int(vocab) * (positions * self._logit_itemsize + 16 * T)

    def _check_batch_memory(self) -> None:
        """Refuse a batch_size whose one call of lm holds more logits than the memory available."""
        b, L, V = self._batch_size, int(self.prompt_ids.shape[0] + self.continuation.shape[0]), self._logit_vocab
        check_memory(
            b * self.logits_bytes(L),
            f"batch_size={b} (the logits of {format_count(b)} sequences x {L} tokens x {format_count(V)} vocabulary "
            f"entries in one call of lm, {format_bytes(self.logits_bytes(L))} a sequence)",
            f"lower batch_size, or leave it None (as many sequences a call as keep its logits within "
            f"{format_bytes(DEFAULT_CHUNK_BYTES)}).",
        )

    def rows_per_call(self, length: int) -> int:
        """Sequences of ``length`` tokens (prompt and continuation) sent in one call of ``lm``: the
        batch_size given, else as many as keep ``logits_bytes`` within
        ``featurelens._batching.DEFAULT_CHUNK_BYTES`` (at least 1, at most the game's chunk
        size); 1 while the vocabulary is unknown (a batch_size given is checked once it is known).
        For a transformers LM that takes ``logits_to_keep`` (its logits are then ``T + 1`` positions,
        not ``length``), a sequence's activations
        (:func:`featurelens.text._forward.activation_bytes`) are counted with its logits, within the
        same ``DEFAULT_CHUNK_BYTES``."""
        if self._logit_vocab is None:
            return 1
        if self._batch_size is not None:
            return self._batch_size
        if self._keep is not None:
            return min(self.chunk_size, rows_per_forward(self.lm, length, extra_row_bytes=self.logits_bytes(length),
                                                         budget_bytes=DEFAULT_CHUNK_BYTES))
        return rows_for_bytes(self.logits_bytes(length), DEFAULT_CHUNK_BYTES, max_rows=self.chunk_size)

    def _learn_logits(self, logits: torch.Tensor) -> None:
        """The vocabulary and dtype of the logits, once seen (a batch_size given is checked again)."""
        vocab, itemsize = int(logits.shape[-1]), int(logits.element_size())
        if (vocab, itemsize) != (self._logit_vocab, self._logit_itemsize):
            self._logit_vocab, self._logit_itemsize = vocab, itemsize
            if self._batch_size is not None:
                self._check_batch_memory()

    def _fill_without_players(self, removal):
        if isinstance(removal, (int, np.integer)) and not isinstance(removal, (bool, np.bool_)):
            value = check_int(removal, "removal", low=0)
            check_token_ids([value], "removal", self._n_vocab, self._vocab_source)
            return value
        removal = check_option(removal, "removal", ("delete", "mask", "pad"))
        if removal == "delete":
            return None
        attr = "mask_token_id" if removal == "mask" else "pad_token_id"
        value = getattr(self.tokenizer, attr, None)
        if value is None:
            raise ValueError(f"removal={removal!r} needs a tokenizer with a {attr}; pass a token id (removal=<int>) instead")
        check_token_ids([int(value)], f"removal={removal!r} (the tokenizer's {attr})", self._n_vocab, self._vocab_source)
        return int(value)

    def _sequences(self, masks: np.ndarray) -> list[np.ndarray]:
        kept = np.where(self.owner[None, :] < 0, True, masks[:, np.maximum(self.owner, 0)])
        if self.fill is not None:
            return list(np.where(kept, self.prompt_ids[None, :], self.fill))
        out = [self.prompt_ids[row] for row in kept]
        if self.empty_token_id is not None:
            empty = np.array([self.empty_token_id], dtype=np.int64)
            out = [p if p.shape[0] else empty for p in out]
        return out

    def _empty_prompt_fixes(self) -> str:
        """The arguments that give an empty kept prompt a token (for the error's hint)."""
        fixes = ["bos_token_id=<int> (a token put before every prompt)",
                 "empty_token_id=<int> (the prompt of the empty coalition)"]
        if self.players.has_ids:
            fixes += self.players.removal_fixes()
        else:
            fixes += [f"removal={name!r}" for name in ("mask", "pad")
                      if getattr(self.tokenizer, f"{name}_token_id", None) is not None] + ["removal=<int>"]
        return ", ".join(fixes[:-1]) + " or " + fixes[-1]

    def _device(self):
        params = getattr(self.lm, "parameters", None)
        if callable(params):
            for p in params():
                return p.device
        return torch.device("cpu")

    def log_probs(self, masks) -> np.ndarray:
        """``log p(y_j | x_S, y_<j)`` for every row of ``masks`` and continuation token ``j``,
        shape ``(q, T)`` float64 (not counted in ``calls``)."""
        masks = self.check_masks(masks)
        prompts = self._sequences(masks)
        lengths = np.array([p.shape[0] for p in prompts])
        if bool((lengths == 0).any()):
            raise ValueError(
                f"mask row {int(np.flatnonzero(lengths == 0)[0])} keeps no prompt token, so nothing predicts the "
                f"continuation's first token, and {type(self.tokenizer).__name__} has no bos / eos / pad / unk "
                f"token to send instead; pass {self._empty_prompt_fixes()}"
            )
        T = self.continuation.shape[0]
        out = np.empty((masks.shape[0], T))
        device = self._device()
        cont = torch.as_tensor(self.continuation, device=device)
        with torch.inference_mode():
            for length in np.unique(lengths):  # equal lengths share a batch: no padding needed
                group = np.flatnonzero(lengths == length)
                done = 0
                while done < group.size:  # calls of rows_per_call sequences (bounded logits)
                    rows = group[done: done + self.rows_per_call(int(length) + T)]
                    done += rows.size
                    seq = np.stack([np.concatenate([prompts[r], self.continuation]) for r in rows])
                    keep = None if self._keep is None else min(self._keep, seq.shape[1])
                    logits = forward_ids(self.lm, torch.as_tensor(seq, device=device), keep_last=keep)
                    positions = seq.shape[1] if keep is None else keep
                    if not is_tensor(logits) or logits.ndim != 3 or tuple(logits.shape[:2]) != (seq.shape[0], positions):
                        raise ValueError(
                            f"lm must return logits of shape (m, L, vocab) = ({seq.shape[0]}, {positions}, "
                            f"vocab); got {getattr(logits, 'shape', type(logits).__name__)}"
                        )
                    check_token_ids(self.continuation, "continuation", int(logits.shape[-1]), "the model's logits")
                    self._learn_logits(logits)
                    # The logits of position p predict token p + 1: positions length - 1 .. length + T - 2
                    # (of the kept last positions, the first T).
                    first = int(length) - 1 - (seq.shape[1] - positions)
                    step = logits[:, first: first + T].double().log_softmax(-1)
                    picked = step.gather(-1, cont.view(1, T, 1).expand(len(rows), T, 1))[..., 0]
                    out[rows] = picked.cpu().numpy()
                    del logits, step
        return out

    def _evaluate(self, masks: np.ndarray) -> np.ndarray:
        lp = self.log_probs(masks)
        if self.reduce == "sum":
            return lp.sum(axis=1)
        if self.reduce == "mean":
            return lp.mean(axis=1)
        return lp[:, self.token]
