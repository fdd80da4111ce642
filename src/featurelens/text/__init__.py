"""Explaining text and language models over the players of a text (``fl.text``).

* :class:`Players`: a text's words, sentences or tokens (white space, a HuggingFace tokenizer's
  tokens grouped by their offsets, or any callable's pieces), and what a coalition keeps of it
  (the text, or token ids with removed players deleted or replaced by a mask / pad / baseline id).
* :class:`ClassifierGame`: a classifier's output for one class on the kept text.
* :class:`GenerationGame`: a causal LM's log-probability of a given continuation after the kept
  prompt (summed, averaged or per token).
* ``fl.explainer(name, model, tokenizer=...)``: a :class:`TextExplainer` that explains texts
  with any of these methods or with gradients through the input embeddings.
* :func:`embedding_attributions`: saliency, input x gradient and integrated gradients through a
  torch model's input embeddings, per token and per player.
* :func:`explain`: any approximator of :mod:`featurelens.approximators` on such a game, by name
  (Shapley values, LIME, leave-one-out, or the sparse interactions of SPEX / ProxySPEX; a new
  approximator in :data:`featurelens.approximators.APPROXIMATORS` is a text method too);
  ``fl.plots.text`` colours the words by their values.
"""

from ._explain import METHODS, SAMPLERS, explain, methods
from ._explainer import TEXT_METHODS, TextExplainer, method_options, text_methods
from ._gradients import EMBEDDING_BASELINES, GRADIENT_METHODS, embedding_attributions
from ._games import OUTPUTS, REDUCES, ClassifierGame, GenerationGame
from ._players import EMPTY_TOKENS, REMOVALS, UNITS, Players

__all__ = ["EMPTY_TOKENS", "method_options", "EMBEDDING_BASELINES", "GRADIENT_METHODS", "embedding_attributions", "METHODS", "methods", "TEXT_METHODS", "text_methods", "TextExplainer", "OUTPUTS", "REDUCES", "REMOVALS", "SAMPLERS", "UNITS", "ClassifierGame", "GenerationGame", "Players", "explain"]
