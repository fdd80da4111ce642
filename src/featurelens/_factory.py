"""``fl.explainer``: the one entry point for every explainer, on arrays and tables or on texts.

It sits above :mod:`featurelens.explainers` and :mod:`featurelens.text` (which uses the explainers'
estimators), so that neither imports the other upwards.
"""

from __future__ import annotations

__all__ = ["explainer"]


def explainer(name: str, model, output: str | None = None, **params):
    """Build the explainer ``name`` for ``model``.

    Without ``tokenizer=``: the explainer registered as ``name``
    (:func:`featurelens.explainers.explainer`; ``fl.list_explainers()`` names them), which explains
    arrays, tensors and tables. With ``tokenizer=`` the model is a text model and the result a
    :class:`featurelens.text.TextExplainer` that explains texts over their words, tokens or
    sentences (``unit=``): the black-box methods of :func:`featurelens.text.explain` or gradients
    through the input embeddings.

    >>> ex = fl.explainer("integrated_gradients", net, n_steps=50)
    >>> e = ex.explain(x, target=y)
    >>> fl.explainer("spex", classifier, tokenizer=tok, budget=2000).explain("not bad at all")
    """
    if "tokenizer" in params:
        from .text import TextExplainer

        return TextExplainer(name, model, **params, **({} if output is None else {"output": output}))
    from .explainers import explainer as array_explainer

    return array_explainer(name, model, output=output, **params)
