"""Figures and pixel arrays as PNG bytes: the one place the reports (``featurelens explain``,
``audit``, ``diagnose``, ``benchmark``) turn what they drew into the images they embed or write.

Nothing here imports matplotlib or PIL until it is called.
"""

from __future__ import annotations

import io

import numpy as np

__all__ = ["figure_png", "image_png"]


def figure_png(fig, *, dpi: int = 90, tight: bool = False) -> bytes:
    """The PNG bytes of a matplotlib ``Figure`` (``fig.savefig(format="png", dpi=dpi)``).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure; it is not closed (a ``Figure`` made without pyplot needs no closing).
    dpi : int
        Pixels per inch of the image (default 90, what every report uses).
    tight : bool
        ``bbox_inches="tight"``: crop the image to what was drawn (an extra layout pass, which
        costs a few seconds on large figures; default False: the figure's own size).
    """
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, **({"bbox_inches": "tight"} if tight else {}))
    return buf.getvalue()


def image_png(rgb) -> bytes:
    """The PNG bytes of an RGB image given as floats in [0, 1], shape ``(height, width, 3)``
    (each channel rounded to the nearest of 0..255; PIL writes it)."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray((np.asarray(rgb) * 255).round().astype(np.uint8)).save(buf, format="PNG")
    return buf.getvalue()
