"""The players of a text: words, sentences or tokens, and the text (or token ids) a coalition keeps."""

from __future__ import annotations

import re
from typing import Callable

import numpy as np
from featurelens._optional import is_tensor, torch

from .._validation import check_int, check_option, check_token_ids

__all__ = ["Players", "UNITS", "REMOVALS", "EMPTY_TOKENS"]

#: The units a text is split into.
UNITS = ("word", "token", "sentence")
#: The named ways to remove a player (an int token id is accepted too).
REMOVALS = ("delete", "mask", "pad")
#: The tokenizer's tokens tried, in this order, for the one token fed in place of an empty token
#: sequence (a coalition that keeps no token: every player deleted and no special token).
EMPTY_TOKENS = ("bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id")

_WORD = re.compile(r"\S+")
# A sentence runs to the first run of . ! ? followed by white space (or to the end of the text).
_SENTENCE = re.compile(r"\S.*?(?:[.!?]+(?=\s|$)|$)", re.S)


def is_hf_tokenizer(tokenizer) -> bool:
    """True for a HuggingFace (transformers) tokenizer: callable, with ``convert_ids_to_tokens``."""
    return callable(tokenizer) and hasattr(tokenizer, "convert_ids_to_tokens")


def tokenizer_vocab_size(tokenizer) -> int | None:
    """The number of token ids a tokenizer knows (ids ``0..size-1``), or None where unknown: a
    HuggingFace tokenizer's ``len(tokenizer)`` (its added tokens included, unlike ``vocab_size``),
    else an int ``vocab_size`` attribute."""
    if tokenizer is None:
        return None
    if is_hf_tokenizer(tokenizer):
        try:
            return int(len(tokenizer))
        except TypeError:
            pass
    size = getattr(tokenizer, "vocab_size", None)
    if isinstance(size, (int, np.integer)) and not isinstance(size, (bool, np.bool_)) and size > 0:
        return int(size)
    return None


def empty_token_id_of(tokenizer, empty_token_id=None, n_vocab: int | None = None,
                      source: str = "the model's input embedding") -> int | None:
    """The token fed in place of an empty token sequence: ``empty_token_id`` when given (an int
    token id, checked against the tokenizer's vocabulary and ``n_vocab``), else the first of the
    tokenizer's :data:`EMPTY_TOKENS` (``bos``, ``eos``, ``pad``, ``unk``) that it has, else None (no
    such token: evaluating the empty coalition is then an error naming ``empty_token_id=``)."""
    if empty_token_id is not None:
        if isinstance(empty_token_id, (bool, np.bool_)) or not isinstance(empty_token_id, (int, np.integer)):
            raise TypeError(f"empty_token_id must be an int token id or None; got {empty_token_id!r} "
                            f"({type(empty_token_id).__name__})")
        value = check_int(empty_token_id, "empty_token_id", low=0)
        check_token_ids([value], "empty_token_id", tokenizer_vocab_size(tokenizer), "the tokenizer")
        check_token_ids([value], "empty_token_id", n_vocab, source)
        return value
    for attr in EMPTY_TOKENS:
        value = getattr(tokenizer, attr, None)
        if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and value >= 0:
            check_token_ids([int(value)], f"the tokenizer's {attr} (sent as the empty text)", n_vocab, source)
            return int(value)
    return None


def _unique_names(pieces: list[str]) -> list[str]:
    """Distinct names: a piece that repeats gets its player index, ``the#7``."""
    seen: dict[str, int] = {}
    for p in pieces:
        seen[p] = seen.get(p, 0) + 1
    return [p if seen[p] == 1 else f"{p}#{i}" for i, p in enumerate(pieces)]


class Players:
    """The players of a text (Kang et al. 2025, SPEX, arXiv 2502.13870, explain language models
    over such players): its words, sentences or tokens.

    Parameters
    ----------
    text
        The text to explain (a non-empty str).
    tokenizer
        None: white space words (``unit="word"``) or sentences (``unit="sentence"``; a sentence ends
        at ``.``, ``!`` or ``?`` followed by white space). A HuggingFace tokenizer (a *fast* one,
        for its offsets): the text's token ids, with ``unit="token"`` one player per non-special
        token, ``"word"`` / ``"sentence"`` grouping the tokens whose first character lies in a
        white space word / sentence; special tokens ([CLS], [SEP], BOS) are never players and are
        always kept. Any other callable ``tokenizer(text) -> list[str]``: its pieces, which must
        appear in the text in order (a piece-level "token" unit; "word" and "sentence" group them).
    unit
        ``"word"``, ``"token"`` or ``"sentence"``.
    mask_text
        The text that replaces a removed player with ``removal="mask"`` in ``keep_text``;
        None: the tokenizer's mask token, else ``"[MASK]"``.

    Attributes
    ----------
    n
        The number of players.
    pieces
        The text of each player (``text[start:end]``).
    names
        Distinct names, one per player: the piece, or ``piece#i`` for a piece that repeats.
    spans
        ``(start, end)`` character offsets of each player in ``text``.
    input_ids, owner
        With a HuggingFace tokenizer: the full encoding's token ids (numpy int64) and, per token,
        the player that owns it (-1: a special token, always kept). Else None.
    """

    def __init__(self, text: str, tokenizer=None, unit: str = "word", mask_text: str | None = None):
        if not isinstance(text, str):
            raise TypeError(f"text must be a str; got {type(text).__name__}")
        if not text.strip():
            raise ValueError("text must hold at least one non-space character; got an empty text")
        self.text = text
        self.unit = check_option(unit, "unit", UNITS)
        self.tokenizer = tokenizer
        self.input_ids = None
        self.owner = None
        if tokenizer is None:
            if unit == "token":
                raise ValueError(
                    "unit='token' needs a tokenizer (a HuggingFace tokenizer or a callable text -> "
                    "list of pieces); got tokenizer=None. Use unit='word' or unit='sentence', or pass tokenizer="
                )
            regex = _WORD if unit == "word" else _SENTENCE
            self.spans = [(m.start(), m.end()) for m in regex.finditer(text)]
        elif is_hf_tokenizer(tokenizer):
            self._from_hf(tokenizer)
        elif callable(tokenizer):
            self._from_callable(tokenizer)
        else:
            raise TypeError(
                "tokenizer must be None, a HuggingFace tokenizer or a callable text -> list of str; "
                f"got {type(tokenizer).__name__}"
            )
        self.pieces = [text[a:b] for a, b in self.spans]
        self.names = _unique_names(self.pieces)
        if mask_text is None:
            mask_text = getattr(tokenizer, "mask_token", None) or "[MASK]"
        if not isinstance(mask_text, str):
            raise TypeError(f"mask_text must be a str or None; got {type(mask_text).__name__}")
        self.mask_text = mask_text

    # -- construction ---------------------------------------------------------------------------
    def _group(self, token_spans: list[tuple[int, int]]) -> tuple[list, np.ndarray]:
        """Player spans and the owner of each token span, for ``self.unit``."""
        if self.unit == "token":
            return list(token_spans), np.arange(len(token_spans), dtype=np.int64)
        regex = _WORD if self.unit == "word" else _SENTENCE
        units = [(m.start(), m.end()) for m in regex.finditer(self.text)]
        starts = np.array([a for a, _ in units], dtype=np.int64)
        owner_unit = np.searchsorted(starts, [a for a, _ in token_spans], side="right") - 1
        used = sorted(set(int(u) for u in owner_unit))
        remap = {u: k for k, u in enumerate(used)}
        return [units[u] for u in used], np.array([remap[int(u)] for u in owner_unit], dtype=np.int64)

    def _from_hf(self, tok):
        try:
            enc = tok(self.text, return_offsets_mapping=True, return_special_tokens_mask=True)
        except NotImplementedError as err:  # slow (Python) tokenizers have no offsets
            raise TypeError(
                f"tokenizer must be a fast HuggingFace tokenizer (with offsets); {type(tok).__name__} has none"
            ) from err
        ids = np.asarray(enc["input_ids"], dtype=np.int64)
        special = np.asarray(enc["special_tokens_mask"], dtype=bool)
        offsets = [tuple(o) for o in enc["offset_mapping"]]
        content = np.flatnonzero(~special & np.array([b > a for a, b in offsets], dtype=bool))
        spans, owner_content = self._group([offsets[i] for i in content])
        owner = np.full(ids.shape[0], -1, dtype=np.int64)
        owner[content] = owner_content
        self.spans, self.input_ids, self.owner = spans, ids, owner

    def _from_callable(self, fn: Callable):
        pieces = list(fn(self.text))
        spans, pos = [], 0
        for p in pieces:
            if not isinstance(p, str):
                raise TypeError(
                    "a callable tokenizer must return the text's pieces as str (for token ids use a "
                    f"HuggingFace tokenizer); got {type(p).__name__}"
                )
            if not p.strip():
                continue
            start = self.text.find(p, pos)
            if start < 0:
                raise ValueError(
                    f"tokenizer returned the piece {p!r}, which does not appear in the text after "
                    f"position {pos}; a callable tokenizer must return pieces of the text, in order"
                )
            spans.append((start, start + len(p)))
            pos = start + len(p)
        if not spans:
            raise ValueError("tokenizer returned no pieces for the text")
        self.spans, _ = self._group(spans)

    # -- public -----------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.spans)

    @property
    def has_ids(self) -> bool:
        """True when the players own token ids (a HuggingFace tokenizer)."""
        return self.input_ids is not None

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"Players(n={self.n}, unit={self.unit!r}, names={self.names[:6]}{'...' if self.n > 6 else ''})"

    def check_mask(self, mask) -> np.ndarray:
        """``mask`` as a bool ``(n,)`` (or ``(q, n)``) array; a ValueError naming ``mask`` else."""
        arr = mask.detach().cpu().numpy() if is_tensor(mask) else np.asarray(mask)
        if arr.shape[-1:] != (self.n,) or arr.ndim not in (1, 2):
            raise ValueError(f"mask must have shape ({self.n},) or (q, {self.n}) (one entry per player); got {arr.shape}")
        if arr.dtype != np.bool_:
            if arr.dtype.kind not in "iu" or not bool(np.isin(arr, (0, 1)).all()):
                raise ValueError(f"mask must be bool (or 0/1); got dtype {arr.dtype}")
            arr = arr.astype(bool)
        return arr

    def removal_id(self, removal, n_vocab: int | None = None, source: str = "the model's input embedding") -> int | None:
        """The token id that replaces a removed player (None for deletion). An int ``removal`` must
        be a token id of the tokenizer (below its vocabulary size, where known) and, with
        ``n_vocab`` (the model's vocabulary size), below ``n_vocab`` too, as must the tokenizer's
        mask / pad id: a ValueError naming ``removal``, the id and the size else."""
        if isinstance(removal, (int, np.integer)) and not isinstance(removal, (bool, np.bool_)):
            value = check_int(removal, "removal", low=0)
            check_token_ids([value], "removal", tokenizer_vocab_size(self.tokenizer), "the tokenizer")
            check_token_ids([value], "removal", n_vocab, source)
            return value
        removal = check_option(removal, "removal", REMOVALS)
        if removal == "delete":
            return None
        attr = "mask_token_id" if removal == "mask" else "pad_token_id"
        value = getattr(self.tokenizer, attr, None)
        if value is None:
            raise ValueError(
                f"removal={removal!r} needs a tokenizer with a {attr}; "
                f"{'there is no tokenizer' if self.tokenizer is None else type(self.tokenizer).__name__ + ' has none'}. "
                "Use removal='delete' or pass a token id (removal=<int>)"
            )
        check_token_ids([int(value)], f"removal={removal!r} (the tokenizer's {attr})", n_vocab, source)
        return int(value)

    def can_be_empty(self, removal) -> bool:
        """True when some coalition keeps no token id at all: ``removal="delete"`` on players that
        own every token (a tokenizer that adds no special tokens)."""
        return self.has_ids and removal == "delete" and not bool((self.owner < 0).any())

    def removal_fixes(self) -> list[str]:
        """The ``removal=`` values that keep a token in place of every removed player and that these
        players accept (for the hints of the errors on an empty coalition): ``'mask'`` / ``'pad'``
        where the tokenizer has that token (``'mask'`` always for players without token ids: the
        ``mask_text``), and ``<int>`` (any token id) for players with token ids."""
        if not self.has_ids:
            return ["removal='mask'"]
        fixes = [f"removal={name!r}" for name in ("mask", "pad")
                 if getattr(self.tokenizer, f"{name}_token_id", None) is not None]
        return fixes + ["removal=<int>"]

    def empty_token_id(self, empty_token_id=None, n_vocab: int | None = None,
                       source: str = "the model's input embedding") -> int | None:
        """The token fed in place of an empty token sequence (:func:`empty_token_id_of` with this
        tokenizer)."""
        return empty_token_id_of(self.tokenizer, empty_token_id, n_vocab, source)

    def keep(self, mask, removal="delete"):
        """What the coalition ``mask`` (bool, one per player) keeps of the text: with a HuggingFace
        tokenizer the token ids (a list of int; special tokens kept; a removed player's tokens
        deleted or replaced by the mask/pad token id or the int ``removal``), else the text
        (``keep_text``)."""
        if not self.has_ids:
            return self.keep_text(mask, removal)
        return self.keep_ids(self.check_mask(mask)[None, :], removal)[0]

    def keep_ids(self, masks, removal="delete", empty_token_id: int | None = None) -> list[list[int]]:
        """Token ids kept by each row of ``masks`` ``(q, n)`` (see :meth:`keep`). A row that keeps
        no token at all (every player deleted, no special token) is ``[empty_token_id]`` when that
        is given (:meth:`empty_token_id`), else ``[]``."""
        if not self.has_ids:
            raise ValueError("keep_ids needs players made with a HuggingFace tokenizer (token ids); these have none")
        fill = self.removal_id(removal)
        masks = self.check_mask(masks)
        masks = masks[None, :] if masks.ndim == 1 else masks
        special = self.owner < 0
        kept = np.where(special[None, :], True, masks[:, np.maximum(self.owner, 0)])  # (q, tokens)
        if fill is not None:
            return np.where(kept, self.input_ids[None, :], fill).tolist()
        out = [self.input_ids[row].tolist() for row in kept]
        if empty_token_id is not None:
            out = [seq if seq else [int(empty_token_id)] for seq in out]
        return out

    def keep_text(self, mask, removal="delete") -> str:
        """The text with the removed players deleted (``"delete"``) or replaced by ``mask_text``
        (``"mask"``); the text between players is kept, runs of spaces are collapsed."""
        if isinstance(removal, (int, np.integer)) and not isinstance(removal, bool):
            raise ValueError("removal=<token id> applies to token ids; keep_text takes 'delete' or 'mask'")
        removal = check_option(removal, "removal", ("delete", "mask"))
        mask = self.check_mask(mask)
        if mask.ndim != 1:
            raise ValueError(f"mask must have shape ({self.n},) for one text; got {mask.shape}")
        out, pos = [], 0
        for (a, b), keep in zip(self.spans, mask):
            out.append(self.text[pos:a])
            out.append(self.text[a:b] if keep else ("" if removal == "delete" else self.mask_text))
            pos = b
        out.append(self.text[pos:])
        return re.sub(r"[ \t]{2,}", " ", "".join(out)).strip()

    def pad(self, sequences: list[list[int]], pad_id: int | None = None):
        """Right-padded ``(input_ids, attention_mask)`` LongTensors of ragged token id lists (the
        pad id: ``pad_id``, else the tokenizer's, else 0)."""
        if pad_id is None:
            pad_id = getattr(self.tokenizer, "pad_token_id", None) or 0
        width = max((len(s) for s in sequences), default=0)
        ids = torch.full((len(sequences), width), int(pad_id), dtype=torch.long)
        attention = torch.zeros((len(sequences), width), dtype=torch.long)
        for r, s in enumerate(sequences):
            ids[r, : len(s)] = torch.as_tensor(s, dtype=torch.long)
            attention[r, : len(s)] = 1
        return ids, attention
