"""Text from user data as matplotlib draws it: literally, never as mathtext.

Matplotlib reads a string with an even number of unescaped ``$`` as mathtext, so a feature named
``$\\undefinedmacro$`` or ``$x^$`` (or a class named ``$\\badmacro$``) makes drawing the figure raise
``ParseFatalException``, and ``"$x$"`` would silently be drawn as an italic *x*. Every plot of
:mod:`featurelens.plots`, and every figure the reports draw, passes the text it takes from the
user's data (feature, class, player and method names, titles, labels of values) through
:func:`plain_text` before matplotlib sees it.

The escape is matplotlib's own: each ``$`` becomes ``\\$``, which the mathtext-free text path draws
as ``$`` (a string whose every ``$`` is escaped holds no math). A backslash already in front of a
``$`` survives: ``a\\$b`` is escaped to ``a\\\\$b`` and drawn as ``a\\$b``. ``Text.get_text()``
returns the escaped string. (With ``rcParams["text.usetex"] = True`` matplotlib hands every text to
LaTeX, whose own special characters this does not escape.)
"""

from __future__ import annotations

__all__ = ["plain_text", "plain_texts"]


def plain_text(text) -> str:
    """``text`` (anything; ``str`` is applied first) escaped so that matplotlib draws it literally.

    Parameters
    ----------
    text : object
        A name or label from the user's data.

    Returns
    -------
    str
        ``str(text)`` with every ``$`` written ``\\$``.

    Examples
    --------
    >>> plain_text("$x^$")
    '\\\\$x^\\\\$'
    >>> plain_text("age")
    'age'
    """
    return str(text).replace("$", "\\$")


def plain_texts(texts) -> list[str]:
    """:func:`plain_text` of each of ``texts``, as a list.

    Parameters
    ----------
    texts : iterable
        Names or labels.

    Returns
    -------
    list of str
        The escaped texts, in order.
    """
    return [plain_text(t) for t in texts]
