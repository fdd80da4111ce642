"""``fl.explainer(name, model, tokenizer=...)``: one object that explains texts with any method.

The black-box methods build a :class:`ClassifierGame` (or a :class:`GenerationGame` when a
``continuation`` is given) over the text's :class:`Players` and run :func:`explain`; the gradient
methods attribute through the model's input embeddings
(:func:`featurelens.text.embedding_attributions`). Either way the result is one value per player
(an :class:`featurelens.Explanation`), or Fourier interactions for SPEX / ProxySPEX.
"""

from __future__ import annotations

import inspect

import numpy as np
from featurelens._optional import torch

from .._validation import check_option, check_token_ids
from .._budgets import check_budget
from ._explain import OWN, explain, method_keywords, methods
from ._gradients import GRADIENT_METHODS, check_ig_steps, embedding_attributions
from ..models._outputs import class_score_units
from ._forward import forward_ids, rows_per_forward
from ._games import ClassifierGame, GenerationGame, model_vocab_size
from ._players import UNITS, Players, is_hf_tokenizer

__all__ = ["TextExplainer", "TEXT_METHODS", "method_options"]

#: Registry names that mean a method of :func:`embedding_attributions` under another name
#: ("layer_integrated_gradients": IG at the embedding layer, which is what
#: ``integrated_gradients`` computes for a text model). The black-box methods' names and aliases
#: are those of :mod:`featurelens.approximators` (:func:`featurelens.text.methods`).
_ALIASES = {"layer_integrated_gradients": "integrated_gradients"}


def text_methods() -> tuple[str, ...]:
    """Every method name ``fl.explainer(name, model, tokenizer=...)`` takes now: the
    approximators' (:func:`featurelens.text.methods`) and the gradient methods."""
    return methods() + GRADIENT_METHODS + tuple(_ALIASES)


#: Every method name ``fl.explainer(name, model, tokenizer=...)`` takes, at import
#: (:func:`text_methods` reads them at call time).
TEXT_METHODS = text_methods()
#: The options (``**options``) of each gradient method, passed to :func:`embedding_attributions`.
_GRADIENT_OPTIONS = {"saliency": ("embedding_layer",), "input_x_gradient": ("embedding_layer",),
                     "integrated_gradients": ("baseline", "n_steps", "embedding_layer")}
#: The keywords of ``TextExplainer`` itself (after ``method, model, tokenizer``).
_OWN_KEYWORDS = ("unit", "target", "output", "removal", "continuation", "reduce", "budget", "seed", "max_order",
                 "batch_size", "inputs", "bos_token_id", "empty_token_id")


def method_options(method: str) -> tuple[str, ...]:
    """The further options (``**options``) ``fl.explainer(method, model, tokenizer=...)`` takes for
    ``method`` (a name of :data:`TEXT_METHODS`): the keywords of the estimator it runs, less those
    the explainer passes itself (the game, ``budget``, ``seed``, ``max_order``); for ProxySPEX also
    the keywords of scikit-learn's ``GradientBoostingRegressor`` (where scikit-learn is installed)."""
    from .. import approximators

    method = _ALIASES.get(method, method)
    if method in _GRADIENT_OPTIONS:
        return _GRADIENT_OPTIONS[method]
    keywords, _ = method_keywords(method)
    names = [k for k in keywords if k not in OWN]
    if approximators.get(method) is approximators.proxy_spex:
        try:
            from sklearn.ensemble import GradientBoostingRegressor
        except ImportError:  # proxy_spex itself needs scikit-learn: it says so when run
            pass
        else:
            names += [k for k in inspect.signature(GradientBoostingRegressor).parameters if k not in names]
    return tuple(names)


def _device(model) -> torch.device:
    for p in model.parameters():
        return p.device
    return torch.device("cpu")


def module_classifier(model: torch.nn.Module, batch_size: int | None = None):
    """``model_fn(list of token id lists) -> numpy logits`` for :class:`ClassifierGame`: sequences
    of one length share a call, so no padding (and no attention mask) can change the outputs. Ids
    past the model's input embedding (where its size is known) are a ValueError naming the id.

    The sequences of one length go through the model in calls of
    :func:`featurelens.text._forward.rows_per_forward` rows: ``batch_size`` when given, else as
    many as keep the estimated activations of a call within
    :data:`featurelens.text._forward.FORWARD_CHUNK_BYTES` (512 coalitions of a 512-token text in
    one call would hold gigabytes of attention scores). The ids of a call are built there, as one
    int64 array, from the id lists."""
    n_vocab = model_vocab_size(model)

    def model_fn(sequences):
        for s in sequences:
            check_token_ids(s, "the token ids sent to the model", n_vocab, "the model's input embedding")
        lengths = np.array([len(s) for s in sequences])
        out = None
        device = _device(model)
        with torch.inference_mode():
            for length in np.unique(lengths):
                group = np.flatnonzero(lengths == length)
                step = rows_per_forward(model, int(length), batch_size)
                for start in range(0, group.size, step):
                    rows = group[start:start + step]
                    ids = np.array([sequences[r] for r in rows], dtype=np.int64).reshape(len(rows), -1)
                    logits = forward_ids(model, torch.as_tensor(ids, device=device)).double().cpu().numpy()
                    if out is None:
                        out = np.empty((len(sequences),) + logits.shape[1:])
                    out[rows] = logits
        return out

    return model_fn


class TextExplainer:
    """Explains a text model over the words, tokens or sentences of each text; built by
    ``fl.explainer(name, model, tokenizer=...)``.

    Parameters
    ----------
    method
        A method of :func:`featurelens.text.explain` (``kernel_shap``, ``permutation_shap``,
        ``exact`` / ``exact_shapley``, ``lime``, ``feature_ablation``, ``spex``, ``proxy_spex``)
        or a gradient method over the input embeddings (``saliency``, ``input_x_gradient``,
        ``integrated_gradients``, ``layer_integrated_gradients``: IG at the embedding layer).
    model
        A torch module on token ids (a transformers model, or any module ``ids (m, L) -> logits``;
        the gradient methods need one), or for the black-box methods any callable on a list of
        token id lists (``inputs="ids"``) or of texts (``inputs="text"``) returning ``(m, classes)``.
        With ``continuation=`` (here or in :meth:`explain`) it is a causal LM and the value is the
        continuation's log-probability (:class:`GenerationGame`).
    tokenizer
        A HuggingFace tokenizer, ``"whitespace"`` (white-space words, no token ids: black-box
        methods on a text model), or a callable ``text -> list of pieces``.
    unit
        The players: ``"word"`` (default), ``"token"`` or ``"sentence"``.
    target
        The class explained (None: the predicted class); :meth:`explain` may override it.
    output
        ``"raw"`` (default), ``"probability"`` or ``"log_probability"`` (the units of
        ``featurelens.models._outputs.CLASS_SCORE_UNITS``; ``"softmax"`` / ``"log_softmax"``
        are read as the last two).
    removal
        How the black-box methods remove a player: ``"delete"`` (default), ``"mask"``, ``"pad"``
        or a token id.
    continuation, reduce
        For a causal LM: the continuation whose log-probability is explained (``reduce`` "sum" or
        "mean"; :class:`GenerationGame`).
    bos_token_id
        For a causal LM: a token put before every prompt (None: the tokenizer's ``bos_token_id``
        when the text has no special tokens of its own; :class:`GenerationGame`,
        :func:`embedding_attributions`).
    empty_token_id
        The one token sent in place of an empty token sequence, the coalition that keeps no player
        with ``removal="delete"`` on a tokenizer that adds no special tokens (None: the tokenizer's
        first of ``bos``, ``eos``, ``pad``, ``unk``; :class:`ClassifierGame`,
        :class:`GenerationGame`). The explanation records it as ``params["empty_token_id"]``.
    budget, seed, max_order
        For the black-box methods (:func:`featurelens.text.explain`). A ``budget`` above
        ``featurelens._budgets.MAX_EVALUATIONS`` (10^8 game evaluations per text) is
        refused here, before any text is explained; so is an ``n_steps`` option above the bounds of
        :func:`featurelens.text.embedding_attributions`.
    batch_size
        Sequences per model call.
    **options
        Further options of the method (:func:`method_options` lists them): ``baseline``,
        ``n_steps``, ``embedding_layer`` for integrated gradients, ``embedding_layer`` for saliency
        and input x gradient; ``sampler``, ``surrogate``, ``alpha``, ``distance``, ``kernel_width``
        for LIME; ``max_players`` for exact; ``decoder`` for SPEX; ``n_terms`` and the
        ``GradientBoostingRegressor`` settings for ProxySPEX. Any other keyword is a TypeError
        here, naming it and the keywords accepted.
    """

    def __init__(self, method: str, model, tokenizer, unit: str = "word", target=None, output: str = "raw",
                 removal="delete", continuation=None, reduce: str = "sum", budget=None, seed=0, max_order: int = 3,
                 batch_size: int | None = None, inputs: str | None = None, bos_token_id: int | None = None,
                 empty_token_id: int | None = None, **options):
        method = check_option(method, "name", text_methods())
        self.method = _ALIASES.get(method, method)
        accepted = method_options(method)
        unknown = [k for k in options if k not in accepted]
        if unknown:
            listed = ", ".join(_OWN_KEYWORDS + accepted)
            raise TypeError(
                f"fl.explainer({method!r}, model, tokenizer=...) got an unexpected keyword argument {unknown[0]!r}; "
                f"it accepts {listed}"
            )
        if not callable(model):
            raise TypeError(f"model must be a torch module or a callable on token ids / texts; got {type(model).__name__}")
        self.gradient = self.method in GRADIENT_METHODS
        if self.gradient and not isinstance(model, torch.nn.Module):
            raise TypeError(f"{self.method!r} differentiates through the model's input embeddings, so model must be a "
                            f"torch.nn.Module; got {type(model).__name__} (use a black-box method: {', '.join(methods())})")
        if isinstance(tokenizer, str):
            if tokenizer != "whitespace":
                raise ValueError(f"tokenizer must be a HuggingFace tokenizer, 'whitespace' or a callable; got {tokenizer!r}")
            tokenizer = None
        elif not callable(tokenizer):
            raise TypeError("tokenizer must be a HuggingFace tokenizer, 'whitespace' or a callable text -> pieces; "
                            f"got {type(tokenizer).__name__}")
        if self.gradient and not is_hf_tokenizer(tokenizer):
            raise ValueError(f"{self.method!r} needs token ids: pass a HuggingFace tokenizer as tokenizer=")
        self.model, self.tokenizer = model, tokenizer
        self.unit = check_option(unit, "unit", UNITS)
        self.output = class_score_units(output)
        self.target, self.removal, self.continuation, self.reduce = target, removal, continuation, reduce
        # Sizes refused here, before any text is explained (featurelens._budgets.check_budget).
        if not self.gradient and "budget" in method_keywords(self.method)[0]:
            check_budget(budget, "budget", allow_none=True, unit="game evaluations", what="per text")
        if self.method == "integrated_gradients" and "n_steps" in options:
            check_ig_steps(options["n_steps"])
        self.budget, self.seed, self.max_order = budget, seed, max_order
        self.batch_size, self.inputs, self.options = batch_size, inputs, options
        for name, value in (("bos_token_id", bos_token_id), ("empty_token_id", empty_token_id)):
            if value is not None and (isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer))):
                raise TypeError(f"{name} must be an int token id or None; got {value!r} ({type(value).__name__})")
            if value is not None and value < 0:
                raise ValueError(f"{name} must be a token id >= 0; got {value}")
        self.bos_token_id, self.empty_token_id = bos_token_id, empty_token_id
        # Options of the black-box methods only: refused for a gradient method, not ignored.
        if self.gradient:
            ig = self.method == "integrated_gradients"
            what = {"empty_token_id": ("the token sent for the coalition that keeps no token",
                                       f"its reference input is baseline= ('pad', 'mask', 'zeros' or a token id, e.g. "
                                       f"baseline={empty_token_id!r})" if ig else "it has no reference input"),
                    "budget": ("the coalitions evaluated per text", "its cost is n_steps=" if ig else "it has no budget")}
            for name, value in (("empty_token_id", empty_token_id), ("budget", budget)):
                if value is not None:
                    raise ValueError(
                        f"{name}={value!r} is an option of the black-box methods ({what[name][0]}); {self.method!r} "
                        f"evaluates no coalition ({what[name][1]}); expected {name}=None"
                    )

    def __repr__(self) -> str:
        return f"TextExplainer(method={self.method!r}, unit={self.unit!r}, output={self.output!r})"

    def players(self, text: str) -> Players:
        """The players of ``text``."""
        return Players(text, self.tokenizer, unit=self.unit)

    def game(self, text: str, target=None, continuation=None):
        """The black-box game of ``text``: a :class:`GenerationGame` with a continuation, else a
        :class:`ClassifierGame`."""
        players = self.players(text)
        continuation = self.continuation if continuation is None else continuation
        if continuation is not None:
            return GenerationGame(self.model, self.tokenizer, players, continuation, reduce=self.reduce,
                                  removal=self.removal, bos_token_id=self.bos_token_id,
                                  empty_token_id=self.empty_token_id, batch_size=self.batch_size)
        model_fn = self.model
        inputs = self.inputs
        if isinstance(self.model, torch.nn.Module) and inputs != "text":
            if not players.has_ids:
                raise ValueError("a torch module reads token ids: pass a HuggingFace tokenizer as tokenizer=, or "
                                 "a callable on texts as model with inputs='text'")
            # The text's ids and the removal id must be ids the model embeds: checked here, by
            # name, before the model sees them.
            n_vocab = model_vocab_size(self.model)
            check_token_ids(players.input_ids, f"the token ids of the text (tokenizer={type(self.tokenizer).__name__})",
                            n_vocab, "the model's input embedding")
            players.removal_id(self.removal, n_vocab)
            if players.can_be_empty(self.removal) or self.empty_token_id is not None:
                players.empty_token_id(self.empty_token_id, n_vocab)
            model_fn, inputs = module_classifier(self.model, self.batch_size), "ids"
        target = self.target if target is None else target
        return ClassifierGame(model_fn, players, target=target, removal=self.removal, output=self.output,
                              inputs=inputs, batch_size=self.batch_size, empty_token_id=self.empty_token_id)

    def explain(self, text, target=None, continuation=None):
        """Explain ``text`` (a str; a list of str gives a list of results) for class ``target``
        (or the continuation's log-probability under a causal LM)."""
        if isinstance(text, (list, tuple)):
            return [self.explain(t, target=target, continuation=continuation) for t in text]
        if not isinstance(text, str):
            raise TypeError(f"text must be a str or a list of str; got {type(text).__name__}")
        if self.bos_token_id is not None and continuation is None and self.continuation is None:
            raise ValueError(f"bos_token_id applies to a causal LM (with continuation=, here or in explain); got "
                             f"bos_token_id={self.bos_token_id} and no continuation")
        if self.gradient:
            continuation = self.continuation if continuation is None else continuation
            return embedding_attributions(
                self.model, self.players(text), self.method,
                target=self.target if target is None else target, continuation=continuation, output=self.output,
                batch_size=self.batch_size, reduce=self.reduce, bos_token_id=self.bos_token_id, **self.options)
        game = self.game(text, target=target, continuation=continuation)
        return explain(game, method=self.method, budget=self.budget, seed=self.seed, max_order=self.max_order,
                       **self.options)
