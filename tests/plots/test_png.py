"""featurelens.plots._png: the one figure-to-PNG helper the reports share."""

import io

import numpy as np
import pytest

from featurelens.plots._png import figure_png, image_png
from featurelens.report import png_data_uri

pytest.importorskip("matplotlib")


def _figure():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 1.5))
    ax = fig.add_subplot(1, 1, 1)
    ax.plot([0, 1, 2], [1, 0, 1])
    return fig


def test_figure_png_is_savefig_at_the_given_dpi():
    from PIL import Image

    fig = _figure()
    for dpi, tight in ((90, False), (90, True), (40, False)):
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, **({"bbox_inches": "tight"} if tight else {}))
        got = figure_png(fig, dpi=dpi, tight=tight)
        assert got[:8] == b"\x89PNG\r\n\x1a\n"
        assert got == buf.getvalue()
    size = Image.open(io.BytesIO(figure_png(fig, dpi=40))).size
    assert size == (80, 60)  # 2 x 1.5 inches at 40 dpi, not cropped


def test_image_png_round_trips_the_pixels():
    from PIL import Image

    rng = np.random.default_rng(0)
    rgb = rng.random((5, 7, 3))
    back = np.asarray(Image.open(io.BytesIO(image_png(rgb))))
    assert back.shape == (5, 7, 3) and back.dtype == np.uint8
    np.testing.assert_array_equal(back, np.round(rgb * 255).astype(np.uint8))


def test_data_uri_decodes_to_the_bytes():
    import base64

    png = image_png(np.zeros((2, 2, 3)))
    uri = png_data_uri(png)
    assert uri.startswith("data:image/png;base64,")
    assert base64.b64decode(uri.split(",", 1)[1]) == png
