"""XAI-TRIS: tetromino images with planted ground truth for judging attribution methods.

Reference: B. Clark, R. Wilming, S. Haufe, "XAI-TRIS: Non-linear image benchmarks to quantify false
positive post-hoc attribution of feature importance", Machine Learning 113 (2024),
doi:10.1007/s10994-024-06574-3, arXiv:2306.12816.

Each image is a tetromino pattern ``P`` (a T or an L, 3x2 cells) planted into a noise background ``B``.
Four scenarios decide how the class is encoded:

* ``"linear"``: class 0 = T at ``positions[0]``, class 1 = L at ``positions[1]``; additive mixing.
* ``"multiplicative"``: same placement, but the pattern attenuates the background,
  ``x = normalise(1 - alpha * P) * B~``.
* ``"translations_rotations"``: class 0 = T, class 1 = L, each sample rotated by a random multiple of
  90 degrees and placed at a uniformly random position; additive mixing.
* ``"xor"``: every image holds T and L; class 0 when both have the same sign, class 1 otherwise;
  additive mixing.

Mixing uses *global* Frobenius norms over the whole (N, D) matrices, ``P~ = P / ||P||_F`` and
``B~ = B / ||B||_F``; the additive scenarios use ``x = alpha * P~ + (1 - alpha) * B~``. The data are then
divided by ``max |x|`` over all samples and pixels, so ``x`` lies in [-1, 1]. ``alpha`` (the SNR)
defaults to the values of the paper, :data:`XAI_TRIS_SNR`.

Two ground truths (``ground_truth=``): ``"union"`` (the default) marks, in every image of the
fixed-position scenarios, the union of both tetromino positions (the mask XAI-TRIS's top-k precision
is scored against); ``"own"`` marks only the pixels of the pattern planted in that image (the T of a
class-0 image, the L of a class-1 image; the per-image mask the reference generator also keeps).
The two differ only for ``linear`` and ``multiplicative``: an ``xor`` image holds both patterns, and a
``translations_rotations`` image only its own, so both kinds give the same masks there.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy.ndimage import gaussian_filter, gaussian_filter1d

from .._random import parse_seed, seed_record, spawn_rngs
from .._validation import check_float, check_option
from .._budgets import check_budget

__all__ = ["SCENARIOS", "BACKGROUNDS", "IMAGE_SIZES", "GROUND_TRUTHS", "XAI_TRIS_SNR", "XAITrisDataset", "xai_tris"]

SCENARIOS = ("linear", "multiplicative", "translations_rotations", "xor")
BACKGROUNDS = ("white", "correlated")
IMAGE_SIZES = (8, 64)
GROUND_TRUTHS = ("union", "own")

#: Signal-to-noise ratio ``alpha`` per (scenario, background, image_size), from the paper's table.
XAI_TRIS_SNR: dict[tuple[str, str, int], float] = {
    ("linear", "white", 8): 0.18,
    ("linear", "correlated", 8): 0.0125,
    ("linear", "white", 64): 0.03,
    ("linear", "correlated", 64): 0.02,
    ("multiplicative", "white", 8): 0.70,
    ("multiplicative", "correlated", 8): 0.10,
    ("multiplicative", "white", 64): 0.65,
    ("multiplicative", "correlated", 64): 0.05,
    ("translations_rotations", "white", 8): 0.65,
    ("translations_rotations", "correlated", 8): 0.20,
    ("translations_rotations", "white", 64): 0.575,
    ("translations_rotations", "correlated", 64): 0.375,
    ("xor", "white", 8): 0.35,
    ("xor", "correlated", 8): 0.15,
    ("xor", "white", 64): 0.075,
    ("xor", "correlated", 64): 0.03,
}

# Tetrominoes, 3 rows x 2 columns.
_T = np.array([[1, 0], [1, 1], [1, 0]], dtype=np.float32)
_L = np.array([[1, 0], [1, 0], [1, 1]], dtype=np.float32)

# Top-left corners (row, col) of T and L in the fixed-position scenarios.
_POSITIONS = {8: ((1, 1), (4, 5)), 64: ((8, 8), (32, 40))}
_NOISE_STD = 0.5  # the paper's `var_data=0.5` is used as a standard deviation
_BACKGROUND_SIGMA = {8: 3.0, 64: 10.0}  # smoothing of the "correlated" background
_PATTERN_BLUR_SIGMA = 1.5  # applied to patterns upscaled by more than 3
_MASK_THRESHOLD = 0.05  # ground truth = (blurred) pattern >= this
_CHUNK = 2048  # images per chunk in the memory-heavy steps


@dataclass(frozen=True, eq=False)
class XAITrisDataset:
    """An XAI-TRIS data set (see :func:`xai_tris`).

    Attributes:
        X: images, shape (N, 1, H, W), float32, in [-1, 1].
        y: labels, shape (N,), int64, in {0, 1}.
        ground_truth: bool masks of the pixels that carry the class signal, shape (N, H, W). With
            ``ground_truth_kind="union"``: for ``linear``, ``multiplicative`` and ``xor`` the union of
            both pattern locations (the same for every sample); for ``translations_rotations`` the
            sample's own pattern. With ``"own"``: the pixels of the pattern(s) planted in that image.
        patterns: the signed pattern image of each sample before SNR scaling, (N, H, W), float32.
        scenario, background, image_size: the generator's arguments.
        snr: the signal-to-noise ratio ``alpha`` that was used.
        seed: the seed the data were drawn with (an int; None for fresh entropy; ``"generator"``
            when a numpy Generator was given).
        ground_truth_kind: ``"union"`` or ``"own"``, the ``ground_truth`` argument of :func:`xai_tris`.
    """

    X: np.ndarray
    y: np.ndarray
    ground_truth: np.ndarray
    patterns: np.ndarray
    scenario: str
    background: str
    image_size: int
    snr: float
    seed: int | str | None
    ground_truth_kind: str = "union"

    def __len__(self) -> int:
        return int(self.y.shape[0])

    def split(self, fractions=(0.8, 0.1, 0.1)) -> tuple[XAITrisDataset, ...]:
        """Split into consecutive parts, by default (train, validation, test) = 80/10/10 %.

        The samples are already shuffled by :func:`xai_tris`, so contiguous slices give class
        proportions close to 1/2 in every part. ``fractions`` are non-negative and sum to 1; part ``i``
        gets ``round(sum(fractions[:i+1]) * N) - round(sum(fractions[:i]) * N)`` samples. The parts
        are views of this data set's arrays (no copy).
        """
        try:
            fr = np.asarray(fractions, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise ValueError(f"fractions must be a sequence of numbers; got {fractions!r}") from err
        if fr.ndim != 1 or fr.size == 0 or not np.all(np.isfinite(fr)) or np.any(fr < 0):
            raise ValueError(
                f"fractions must be a non-empty sequence of non-negative numbers; got {fractions!r}"
            )
        if abs(fr.sum() - 1.0) > 1e-6:
            raise ValueError(f"fractions must sum to 1; got {fractions!r} (sum {fr.sum():g})")
        n = len(self)
        bounds = np.rint(np.concatenate([[0.0], np.cumsum(fr)]) * n).astype(int)
        bounds[-1] = n
        return tuple(self._slice(slice(lo, hi)) for lo, hi in zip(bounds[:-1], bounds[1:]))

    def _slice(self, sl: slice) -> XAITrisDataset:
        return dataclasses.replace(
            self,
            X=self.X[sl],
            y=self.y[sl],
            ground_truth=self.ground_truth[sl],
            patterns=self.patterns[sl],
        )


def xai_tris(
    scenario: str,
    background: str,
    image_size: int = 8,
    n_samples: int = 10000,
    snr: float | None = None,
    seed=0,
    ground_truth: str = "union",
) -> XAITrisDataset:
    """Generate an XAI-TRIS data set (Clark, Wilming & Haufe 2024, arXiv:2306.12816).

    Formula (additive scenarios): ``x = alpha * P / ||P||_F + (1 - alpha) * B / ||B||_F``;
    multiplicative: ``x = (1 - alpha * P) / ||1 - alpha * P||_F * B / ||B||_F`` (elementwise product);
    norms are global over all N images; finally ``x /= max |x|``.

    Args:
        scenario: ``"linear"``, ``"multiplicative"``, ``"translations_rotations"`` or ``"xor"``.
        background: ``"white"`` (i.i.d. Normal(0, 0.5**2) pixels) or ``"correlated"`` (the same, smoothed
            per image by a Gaussian filter with sigma 3 on 8x8 and 10 on 64x64, reflect mode).
        image_size: 8 or 64. On 64x64 the tetrominoes are upscaled (by 8, or by 4 for
            ``translations_rotations``) and blurred with a Gaussian of sigma 1.5; ground-truth masks
            are the blurred pattern >= 0.05.
        n_samples: number of images N, at least 2 (one image per class), and at least 4 for ``"xor"``
            (one image per sign combination). Class 0 gets ``ceil(N / 2)`` images and class 1
            ``floor(N / 2)``, so the classes differ by at most one. In ``"xor"`` each class of
            ``N_c`` images holds ``ceil(N_c / 2)`` of its first sign combination ((+, +) for class 0,
            (+, -) for class 1) and ``floor(N_c / 2)`` of its second ((-, -), (-, +)). When N is a
            multiple of 4 every class and sign combination gets exactly N / 4 per combination, as in
            the paper.
        snr: ``alpha`` in (0, 1); ``None`` takes the paper's value from :data:`XAI_TRIS_SNR`.
        seed: None, a non-negative int or a ``numpy.random.Generator``; with an int the output is a
            deterministic function of all arguments.
        ground_truth: ``"union"`` (default) or ``"own"``, the masks of :attr:`XAITrisDataset.ground_truth`.
            ``"union"``: in ``linear``, ``multiplicative`` and ``xor``, every image's mask is the union of
            both tetromino positions ``T + L >= 0.05`` (blurred templates on 64x64; XAI-TRIS's precision
            mask). ``"own"``: each image's own pattern, ``P_i >= 0.05`` for the unsigned pattern of that
            image (its T or its L in ``linear`` / ``multiplicative``; both in ``xor``, so there
            ``"own" == "union"``). ``translations_rotations`` always uses the own pattern (its positions
            are random, so a union of positions is not defined). ``"own"`` is a subset of ``"union"``;
            the images, labels and patterns do not depend on this argument.

    Returns:
        An :class:`XAITrisDataset`. Samples are generated class 0 first, then class 1, and shuffled
        (the backgrounds are i.i.d., so they are drawn directly in the final order). Independent
        random streams are spawned from ``seed`` for backgrounds, pattern layout and the shuffle, so
        one seed gives the same backgrounds in every scenario, as in the reference generator.

    Cost: 64x64 with N = 40,000 takes about 4 s and 1.9 GB peak memory (the returned arrays alone
    take 1.5 GB: X and patterns as float32, ground_truth as bool). ``n_samples`` is refused before
    any work above ``featurelens._budgets.MAX_EVALUATIONS`` (10^8) images, or when the
    estimated peak memory (``check_xai_tris_size``) exceeds the memory available.
    """
    scenario = check_option(scenario, "scenario", SCENARIOS)
    background = check_option(background, "background", BACKGROUNDS)
    image_size = check_option(image_size, "image_size", IMAGE_SIZES)
    n_samples = check_xai_tris_size(n_samples, image_size)
    minimum = _min_samples(scenario)
    if n_samples < minimum:
        why = "one image of each sign combination" if scenario == "xor" else "one image of each class"
        raise ValueError(f"n_samples must be >= {minimum} for scenario {scenario!r} ({why}); got {n_samples}")
    snr = check_float(snr, "snr", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False, allow_none=True)
    alpha = XAI_TRIS_SNR[(scenario, background, image_size)] if snr is None else snr
    seed = parse_seed(seed)
    ground_truth = check_option(ground_truth, "ground_truth", GROUND_TRUTHS)

    bg_rng, layout_rng, shuffle_rng = _rngs(seed)
    labels = _split_counts(n_samples, 2)
    perm = shuffle_rng.permutation(n_samples)

    if scenario == "translations_rotations":
        patterns, masks = _rigid_patterns(labels, perm, image_size, layout_rng)
    else:
        patterns, masks = _fixed_patterns(scenario, labels, perm, image_size, own=ground_truth == "own")
    y = labels[perm]

    x = _background(n_samples, image_size, background, bg_rng)
    _mix_inplace(x, patterns, scenario, alpha)

    return XAITrisDataset(
        X=x.reshape(n_samples, 1, image_size, image_size),
        y=y,
        ground_truth=masks,
        patterns=patterns,
        scenario=scenario,
        background=background,
        image_size=image_size,
        snr=alpha,
        seed=seed_record(seed)["seed"],
        ground_truth_kind=ground_truth,
    )


# --------------------------------------------------------------------------------------------------
# building blocks (private; the tests use _rngs, _background and _mix_inplace to check the formulas)


#: Peak bytes per pixel of :func:`xai_tris` (X and patterns float32, the mask bool, the float64
#: chunks of the mixing step: 1.9 GB for 40,000 images of 64x64, rounded up), and per image (the
#: labels, the permutation and its inverse, int64).
_BYTES_PER_PIXEL = 12
_BYTES_PER_IMAGE = 32


def check_xai_tris_size(n_samples, image_size: int) -> int:
    """``n_samples`` of :func:`xai_tris` (an int >= 1), refused before any work above
    ``featurelens._budgets.MAX_EVALUATIONS`` images or when its estimated peak memory
    (12 bytes per pixel) is more than the memory available; returns it as an int. The benchmark
    checks its ``n_samples`` with it before training anything."""
    return check_budget(n_samples, "n_samples", unit="images", what=f"of {image_size}x{image_size}",
                        nbytes=lambda v: v * (_BYTES_PER_PIXEL * image_size * image_size + _BYTES_PER_IMAGE),
                        hint="lower n_samples")


def _min_samples(scenario: str) -> int:
    """One image per class; XOR needs one per sign combination (two per class)."""
    return 4 if scenario == "xor" else 2


def _split_counts(n: int, parts: int) -> np.ndarray:
    """Group ids 0..parts-1 in order, as equal as possible, the first groups one larger when
    ``parts`` does not divide ``n`` (``n // parts`` each when it does)."""
    sizes = np.full(parts, n // parts)
    sizes[: n % parts] += 1
    return np.repeat(np.arange(parts, dtype=np.int64), sizes)


def _rngs(seed) -> tuple[np.random.Generator, np.random.Generator, np.random.Generator]:
    """Independent generators for (backgrounds, pattern layout, shuffle), spawned from ``seed``
    (an int or None through a SeedSequence; a numpy Generator through its own ``spawn``)."""
    return spawn_rngs(seed, 3)


def _pattern_scale(scenario: str, image_size: int) -> int:
    if image_size == 8:
        return 1
    return 4 if scenario == "translations_rotations" else 8


def _tetromino(shape: np.ndarray, scale: int) -> np.ndarray:
    return np.kron(shape, np.ones((scale, scale), dtype=np.float32))


def _blur_matrix(size: int, sigma: float) -> np.ndarray:
    """The (size, size) matrix G of scipy's 1-D Gaussian filter (reflect mode, truncate 4.0).

    Filtering is linear, so filtering the columns of the identity yields the exact operator:
    ``gaussian_filter(img, sigma) == G @ img @ G.T`` for a square image, up to rounding.
    """
    eye = np.eye(size, dtype=np.float64)
    return gaussian_filter1d(eye, sigma, axis=0, mode="reflect", truncate=4.0)


def _blur_stack(images: np.ndarray, sigma: float) -> None:
    """Gaussian-filter each (H, W) image of an (N, H, W) float32 stack in place (reflect mode).

    Done as two small matrix products per chunk (BLAS), an order of magnitude faster than
    ``scipy.ndimage.gaussian_filter`` on large stacks with wide kernels; same result to float32 rounding.
    """
    g = _blur_matrix(images.shape[-1], sigma).astype(images.dtype)
    for start in range(0, images.shape[0], _CHUNK):
        chunk = images[start : start + _CHUNK]
        chunk[...] = g @ chunk @ g.T


def _background(
    n_samples: int, image_size: int, background: str, rng: np.random.Generator
) -> np.ndarray:
    """Backgrounds B, shape (N, H*W), float32: Normal(0, 0.5) pixels, smoothed if ``correlated``."""
    b = rng.standard_normal((n_samples, image_size, image_size), dtype=np.float32)
    b *= np.float32(_NOISE_STD)
    if background == "correlated":
        _blur_stack(b, _BACKGROUND_SIGMA[image_size])
    return b.reshape(n_samples, image_size * image_size)


def _fixed_patterns(scenario: str, labels: np.ndarray, perm: np.ndarray, image_size: int, own: bool = False):
    """Patterns and masks for linear / multiplicative / xor, already in shuffled order; the masks
    are the union of both positions, or with ``own`` each image's own (unsigned) pattern >= 0.05."""
    scale = _pattern_scale(scenario, image_size)
    templates = []
    for shape, (r, c) in zip((_T, _L), _POSITIONS[image_size]):
        tile = _tetromino(shape, scale)
        img = np.zeros((image_size, image_size), dtype=np.float32)
        img[r : r + tile.shape[0], c : c + tile.shape[1]] = tile
        if scale > 3:
            img = gaussian_filter(img, _PATTERN_BLUR_SIGMA, mode="reflect", truncate=4.0)
        templates.append(img)
    t_img, l_img = templates
    union = (t_img + l_img) >= _MASK_THRESHOLD

    n = labels.shape[0]
    if scenario == "xor":
        # Quarters: (+,+), (-,-) -> class 0; (+,-), (-,+) -> class 1. Blurring is linear, so signing the
        # blurred templates equals blurring the signed image.
        signs = np.array([[1, 1], [-1, -1], [1, -1], [-1, 1]], dtype=np.float32)
        stack = signs[:, :1, None] * t_img + signs[:, 1:, None] * l_img
        # Within each class (labels are in class order), the first half (rounded up) takes the
        # class's first sign combination; with n a multiple of 4 these are exact quarters.
        template_id = np.concatenate([2 * c + _split_counts(int((labels == c).sum()), 2) for c in (0, 1)])
    else:
        stack = np.stack([t_img, l_img])
        template_id = labels
    patterns = stack[template_id[perm]]
    if own and scenario != "xor":  # an xor image holds both patterns: its own mask is the union
        own_masks = np.stack([t_img >= _MASK_THRESHOLD, l_img >= _MASK_THRESHOLD])
        return patterns, own_masks[template_id[perm]]
    masks = np.broadcast_to(union, patterns.shape).copy()
    return patterns, masks


def _rigid_patterns(
    labels: np.ndarray, perm: np.ndarray, image_size: int, rng: np.random.Generator
):
    """Randomly rotated and translated T (class 0) / L (class 1), already in shuffled order.

    Per sample (in class order): k ~ U{0..3} quarter turns, then the top-left corner
    row ~ U{0..H-h}, col ~ U{0..W-w} for the rotated pattern of size (h, w).
    """
    scale = _pattern_scale("translations_rotations", image_size)
    n = labels.shape[0]
    k = rng.integers(0, 4, size=n)
    long_side, short_side = 3 * scale, 2 * scale
    heights = np.where(k % 2 == 0, long_side, short_side)
    widths = np.where(k % 2 == 0, short_side, long_side)
    rows = rng.integers(0, image_size - heights + 1)
    cols = rng.integers(0, image_size - widths + 1)
    k, rows, cols, lab = k[perm], rows[perm], cols[perm], labels[perm]

    patterns = np.zeros((n, image_size, image_size), dtype=np.float32)
    for cls, shape in enumerate((_T, _L)):
        tile = _tetromino(shape, scale)
        for quarter in range(4):
            rot = np.rot90(tile, quarter)
            idx = np.flatnonzero((lab == cls) & (k == quarter))
            if idx.size == 0:
                continue
            dr, dc = np.nonzero(rot)
            r0, c0 = rows[idx, None], cols[idx, None]
            patterns[idx[:, None], r0 + dr[None, :], c0 + dc[None, :]] = rot[dr, dc]
    if scale > 3:
        _blur_stack(patterns, _PATTERN_BLUR_SIGMA)
    masks = patterns >= _MASK_THRESHOLD
    return patterns, masks


def _frobenius(a: np.ndarray) -> float:
    """Global Frobenius norm of a large float32 array, accumulated in float64, chunk by chunk."""
    total = 0.0
    flat = a.reshape(a.shape[0], -1)
    for start in range(0, flat.shape[0], _CHUNK):
        chunk = flat[start : start + _CHUNK].astype(np.float64)
        total += float(np.einsum("ij,ij->", chunk, chunk))
    return float(np.sqrt(total))


def _mix_inplace(x: np.ndarray, patterns: np.ndarray, scenario: str, alpha: float) -> None:
    """Overwrite the backgrounds ``x`` (N, D) with the mixed, max-abs-normalised images.

    Additive: ``x = alpha * P / ||P||_F + (1 - alpha) * B / ||B||_F``; multiplicative:
    ``x = (1 - alpha * P) / ||1 - alpha * P||_F * B / ||B||_F``; then ``x /= max |x|``.
    """
    n = x.shape[0]
    p = patterns.reshape(n, -1)
    b_scale = 1.0 / _frobenius(x)
    if scenario == "multiplicative":
        q_sq = 0.0
        for start in range(0, n, _CHUNK):
            q = 1.0 - alpha * p[start : start + _CHUNK].astype(np.float64)
            q_sq += float(np.einsum("ij,ij->", q, q))
        scale = b_scale / np.sqrt(q_sq)
        for start in range(0, n, _CHUNK):
            sl = slice(start, start + _CHUNK)
            q = 1.0 - alpha * p[sl].astype(np.float64)
            x[sl] = (x[sl] * q) * scale
    else:
        p_scale = alpha / _frobenius(p)
        b_scale *= 1.0 - alpha
        for start in range(0, n, _CHUNK):
            sl = slice(start, start + _CHUNK)
            x[sl] = x[sl].astype(np.float64) * b_scale + p[sl].astype(np.float64) * p_scale
    peak = max(float(x.max()), -float(x.min()))
    x /= np.float32(peak)
