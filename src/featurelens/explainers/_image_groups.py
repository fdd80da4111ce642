"""The ``groups=`` option of the black-box explainers, resolved in one place: label arrays, square
patches, SLIC superpixels and the user's own segmentation.

``groups`` takes

* None: every input element is a player;
* an int array shaped like one input (Captum's ``feature_mask``): the players are its labels,
  shared by every row of a call;
* ``"patches"``: a square grid over an image (one input of shape ``(C, H, W)`` or ``(H, W)``),
  every channel of a pixel in its patch. The default patch side is the divisor ``s`` of both
  ``H`` and ``W`` closest (on a log scale) to ``sqrt(H W / 196)``, so that a 224 x 224 image gets
  14 x 14 = 196 patches of 16 px (28 x 28: 196 patches of 2 px); ``"patches:N"`` asks for
  ``N`` px patches (``N`` must divide ``H`` and ``W``). Patch ``(i, j)`` (row-major) is player
  ``i * (W / s) + j``;
* ``"slic"`` (or ``"superpixels"``): SLIC superpixels of each image (Achanta et al., "SLIC
  Superpixels Compared to State-of-the-Art Superpixel Methods", TPAMI 2012), computed per image
  by ``skimage.segmentation.slic(image01, n_segments, compactness=10, start_label=0,
  channel_axis=...)`` where ``image01`` is the image min-max scaled to ``[0, 1]`` (channels last;
  normalised inputs are not in the colour range SLIC's Lab conversion expects) and
  ``n_segments = min(196, H W)``; ``"slic:N"`` asks for about ``N`` segments. Needs scikit-image;
* a callable ``groups(image) -> labels``: the user's segmentation, called once per image with
  that image (numpy, shaped like one input); the labels are ints shaped like the image or, for a
  ``(C, H, W)`` image, like ``(H, W)`` (shared over the channels).

Per-image groupings (``"slic"``, a callable) give every row its own players; their labels are
renumbered ``0..n-1`` in sorted order. :class:`Grouping` is what the explainers hold;
:func:`grouping_hint` is the way out named by a budget refusal of an ungrouped image method.
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import as_numpy, check_int

__all__ = ["Grouping", "resolve_groups", "patch_labels", "default_patch_size", "slic_labels", "grouping_hint",
           "TARGET_PLAYERS"]

#: The number of patches (and SLIC segments) a default grouping aims at: 14 x 14 on a 224 x 224 image.
TARGET_PLAYERS = 196

_PATCHES = ("patches",)
_SLIC = ("slic", "superpixels")
_EXPECTED = ('None, an int array shaped like one input, "patches", "patches:N" (N px square patches), "slic" '
             '(or "superpixels", "slic:N" for about N segments), or a callable image -> int labels')


def _image_axes(shape: tuple, spec: str) -> tuple[int, int]:
    """``(H, W)`` of one input of shape ``(C, H, W)`` or ``(H, W)``; a ValueError naming ``groups``
    otherwise."""
    if len(shape) not in (2, 3):
        raise ValueError(f"groups={spec!r} needs image inputs, one input of shape (C, H, W) or (H, W); got inputs "
                         f"of shape {tuple(shape)} (give an int label array shaped like one input instead)")
    return int(shape[-2]), int(shape[-1])


def default_patch_size(height: int, width: int) -> int | None:
    """The default patch side for an ``height x width`` image: the divisor ``s`` of both sides closest
    to ``sqrt(H W / 196)`` on a log scale (ties: the larger), so 224 x 224 gives 16 (196 patches);
    None when no common divisor is within a factor 2 of that target (e.g. 225 x 224).

    Parameters
    ----------
    height, width
        The image's sides in pixels.

    Returns
    -------
    int or None
        The patch side in pixels.
    """
    target = max(1.0, math.sqrt(height * width / TARGET_PLAYERS))
    common = math.gcd(height, width)
    divisors = [d for d in range(1, common + 1) if common % d == 0]
    best = min(divisors, key=lambda d: (abs(math.log(d / target)), -d))
    return best if abs(math.log(best / target)) <= math.log(2) else None


def patch_labels(shape: tuple, size: int | None = None) -> np.ndarray:
    """Square patch labels for one input of shape ``(C, H, W)`` or ``(H, W)``: int64, shaped like the
    input, patch ``(i, j)`` (row-major) labelled ``i * (W // size) + j``, channels sharing a label.

    Parameters
    ----------
    shape
        One input's shape.
    size
        The patch side in pixels (must divide ``H`` and ``W``); None: :func:`default_patch_size`.

    Returns
    -------
    numpy.ndarray
        The labels ``0..n-1``.

    Examples
    --------
    >>> from featurelens.explainers._image_groups import patch_labels
    >>> int(patch_labels((3, 224, 224)).max()) + 1
    196
    >>> patch_labels((4, 4), 2)
    array([[0, 0, 1, 1],
           [0, 0, 1, 1],
           [2, 2, 3, 3],
           [2, 2, 3, 3]])
    """
    spec = "patches" if size is None else f"patches:{size}"
    h, w = _image_axes(tuple(shape), spec)
    if size is None:
        size = default_patch_size(h, w)
        if size is None:
            raise ValueError(
                f'groups="patches": no square patch side divides both sides of the {h} x {w} image into about '
                f'{TARGET_PLAYERS} patches; expected an image whose sides share a divisor near '
                f'{math.sqrt(h * w / TARGET_PLAYERS):.0f}: give "patches:N" with N dividing {h} and {w}, '
                'groups="slic", or an int label array')
    if size > min(h, w):
        raise ValueError(f"groups={spec!r}: the patch side {size} is bigger than the {h} x {w} image; expected a "
                         f"side of at most {min(h, w)} that divides {h} and {w}")
    if h % size or w % size:
        fits = [d for d in range(1, math.gcd(h, w) + 1) if math.gcd(h, w) % d == 0]
        raise ValueError(f"groups={spec!r}: the patch side {size} does not divide the {h} x {w} image; expected "
                         f"a side dividing both ({', '.join(map(str, fits))})")
    rows = np.arange(h) // size
    cols = np.arange(w) // size
    labels = rows[:, None] * (w // size) + cols[None, :]
    return np.broadcast_to(labels, tuple(shape)).astype(np.int64)


def _skimage_slic():
    try:
        from skimage.segmentation import slic
    except ImportError:
        raise ImportError(
            'groups="slic" (SLIC superpixels) needs scikit-image: pip install scikit-image; or use '
            'groups="patches" (a square grid, no extra package)') from None
    return slic


def slic_labels(image, n_segments: int | None = None, compactness: float = 10.0) -> np.ndarray:
    """SLIC superpixels of one image of shape ``(C, H, W)`` or ``(H, W)``: int64 labels shaped like
    the image (channels share a label), renumbered ``0..n-1``.

    ``skimage.segmentation.slic(image01, n_segments=n_segments, compactness=compactness,
    start_label=0, channel_axis=-1 or None)`` on the image min-max scaled to ``[0, 1]``, channels
    last (Achanta et al. 2012, TPAMI 34(11)).

    Parameters
    ----------
    image
        One image (numpy or torch), finite.
    n_segments
        About how many segments; None: ``min(196, H W)``.
    compactness
        SLIC's balance of colour and space (scikit-image's default 10).

    Returns
    -------
    numpy.ndarray
        The labels.

    Examples
    --------
    >>> import numpy as np
    >>> from featurelens.explainers._image_groups import slic_labels
    >>> img = np.zeros((3, 32, 32)); img[:, :, 16:] = 1.0
    >>> labels = slic_labels(img, n_segments=4)
    >>> labels.shape
    (3, 32, 32)
    >>> bool(np.intersect1d(labels[0, :, :16], labels[0, :, 16:]).size == 0)  # no segment crosses the edge
    True
    """
    slic = _skimage_slic()
    img = as_numpy(image, "groups")
    h, w = _image_axes(img.shape, "slic")
    if img.dtype.kind not in "biuf":
        raise TypeError(f'groups="slic" segments images of numbers; got an image of dtype {img.dtype}')
    img = img.astype(np.float64)
    if not np.isfinite(img).all():
        raise ValueError('groups="slic" cannot segment an image holding NaN or inf values; expected finite pixels')
    n_segments = min(TARGET_PLAYERS, h * w) if n_segments is None else check_int(n_segments, "n_segments", low=1)
    span = float(img.max() - img.min())
    scaled = (img - img.min()) / span if span > 0 else np.zeros_like(img)
    if img.ndim == 3:
        seg = slic(np.moveaxis(scaled, 0, -1), n_segments=n_segments, compactness=compactness, start_label=0,
                   channel_axis=-1)
    else:
        seg = slic(scaled, n_segments=n_segments, compactness=compactness, start_label=0, channel_axis=None)
    seg = np.unique(seg, return_inverse=True)[1].reshape(h, w).astype(np.int64)
    return np.broadcast_to(seg, img.shape).copy()


def _callable_labels(fn, image: np.ndarray) -> np.ndarray:
    """The user's labels of one image, checked, broadcast over channels and renumbered 0..n-1."""
    name = getattr(fn, "__name__", type(fn).__name__)
    out = as_numpy(fn(image), "groups")
    if out.dtype.kind not in "iu":
        raise TypeError(f"groups (the callable {name}) must return int labels; got dtype {out.dtype}")
    shape = tuple(image.shape)
    if out.shape != shape and not (len(shape) == 3 and out.shape == shape[1:]):
        wanted = f"{shape}" + (f" or {shape[1:]}" if len(shape) == 3 else "")
        raise ValueError(f"groups (the callable {name}) must return labels shaped like the image, {wanted}; "
                         f"got shape {out.shape}")
    labels = np.unique(out, return_inverse=True)[1].reshape(out.shape).astype(np.int64)
    return np.broadcast_to(labels, shape).copy()


class Grouping:
    """The resolved ``groups=`` option (see the module docstring): ``kind`` is ``"none"``,
    ``"array"``, ``"patches"``, ``"slic"`` or ``"callable"``."""

    def __init__(self, kind: str, array=None, size=None, fn=None):
        self.kind, self.array, self.size, self.fn = kind, array, size, fn

    @property
    def per_image(self) -> bool:
        """Whether every image gets its own players (SLIC, a callable)."""
        return self.kind in ("slic", "callable")

    def describe(self) -> str | None:
        """How ``params["grouping"]`` records it: ``"patches"``, ``"patches:16"``, ``"slic"``,
        ``"slic:100"``, ``"callable"``, ``"array"``, or None."""
        if self.kind in ("patches", "slic"):
            return self.kind if self.size is None else f"{self.kind}:{self.size}"
        return {"none": None}.get(self.kind, self.kind)

    def shared(self, input_shape: tuple) -> np.ndarray | None:
        """The labels shared by every row (an array or patches), or None (no groups, per image)."""
        if self.kind == "array":
            if tuple(self.array.shape) != tuple(input_shape):
                raise ValueError(f"groups must be shaped like one input {tuple(input_shape)} (an int player label per "
                                 f"input element); got shape {tuple(self.array.shape)}")
            return self.array
        if self.kind == "patches":
            return patch_labels(tuple(input_shape), self.size)
        if self.per_image:
            _image_axes(tuple(input_shape), self.describe())
        return None

    def labels(self, data: np.ndarray):
        """The players of the rows of ``data`` (numpy, samples first): None, one array shared by every
        row, or a list with one array per row (per-image groupings)."""
        shared = self.shared(tuple(data.shape[1:]))
        if not self.per_image:
            return shared
        if self.kind == "slic":
            return [slic_labels(row, self.size) for row in data]
        return [_callable_labels(self.fn, row) for row in data]


def resolve_groups(groups) -> Grouping:
    """Check the ``groups=`` option at construction (the shape is checked against the inputs later).

    Parameters
    ----------
    groups
        See the module docstring.

    Returns
    -------
    Grouping
        The checked option.

    Raises
    ------
    TypeError
        Not a string, callable or int array (a float array, a bool).
    ValueError
        An unknown string or a bad size in ``"patches:N"`` / ``"slic:N"``.
    """
    if groups is None:
        return Grouping("none")
    if isinstance(groups, str):
        head, _, tail = groups.partition(":")
        key = head.strip().lower()
        if key not in _PATCHES + _SLIC:
            raise ValueError(f"groups must be {_EXPECTED}; got the string {groups!r}")
        size = None
        if tail.strip():
            try:
                size = int(tail.strip())
            except ValueError:
                raise ValueError(f"groups={groups!r}: expected an int after the colon (e.g. \"{key}:16\"); got "
                                 f"{tail.strip()!r}") from None
            if size < 1:
                raise ValueError(f"groups={groups!r}: expected a positive int after the colon; got {size}")
        if key in _SLIC:
            _skimage_slic()  # refused at construction when scikit-image is missing
            return Grouping("slic", size=size)
        return Grouping("patches", size=size)
    if isinstance(groups, (bool, np.bool_)):
        raise TypeError(f"groups must be {_EXPECTED}; got the bool {groups!r}")
    if callable(groups) and not hasattr(groups, "shape") and not hasattr(groups, "__array__"):
        return Grouping("callable", fn=groups)
    arr = as_numpy(groups, "groups")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"groups must be {_EXPECTED}; got an array of dtype {arr.dtype}")
    return Grouping("array", array=arr)


def _fitting_patch(h: int, w: int, max_players: int) -> tuple[int, int] | None:
    """``(side, players)`` of the finest square patches of an ``h x w`` image with at most
    ``max_players`` patches, or None."""
    common = math.gcd(h, w)
    for d in range(1, common + 1):
        if common % d == 0 and (h // d) * (w // d) <= max_players:
            return d, (h // d) * (w // d)
    return None


def grouping_hint(input_shape: tuple, max_players: int | None = None) -> str:
    """The way out of a refusal for too many players on inputs of one-sample shape ``input_shape``:
    for images the ``groups=`` spellings with the number of players they give, else a label array.

    Parameters
    ----------
    input_shape
        One input's shape.
    max_players
        The most players the method takes (exact Shapley), or None.

    Returns
    -------
    str
        A sentence naming ``groups="patches"`` (and its players) and ``groups="slic"`` for images.
    """
    shape = tuple(input_shape)
    if len(shape) not in (2, 3):
        return "group the input elements into players (groups=, an int label per element of one input)"
    h, w = shape[-2:]
    size = default_patch_size(h, w)
    options = []
    if size is not None and (max_players is None or (h // size) * (w // size) <= max_players):
        options.append(f'groups="patches" ({(h // size) * (w // size)} players: square patches of {size} x {size} px, '
                       'shared over the channels)')
    elif max_players is not None and _fitting_patch(h, w, max_players) is not None:
        side, n = _fitting_patch(h, w, max_players)
        options.append(f'groups="patches:{side}" ({n} players: {side} x {side} px patches)')
    n_seg = min(TARGET_PLAYERS, h * w) if max_players is None else min(max_players, h * w)
    slic = '"slic"' if max_players is None else f'"slic:{n_seg}"'
    options.append(f"groups={slic} (about {n_seg} superpixels per image; needs scikit-image)")
    return "group the pixels into players: " + " or ".join(options)
