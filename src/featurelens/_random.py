"""THE home of randomness: seed parsing, the root seed of a call, per-row streams, the vectorised
per-row draws, and how a seed is recorded.

Seeds. Every seeded function and class accepts ``seed`` as None (fresh entropy), a non-negative
int or a ``numpy.random.Generator``. :func:`parse_seed` validates it (a ``TypeError`` or
``ValueError`` naming the argument); :func:`numpy_rng` and :func:`torch_generator` turn it into
the generator a method draws from, and :func:`spawn_rngs` into independent child generators.
Where a method needs one int (a torch global seed, scikit-learn's ``random_state``, a root for
per-row streams), :func:`root_seed` gives it: an int seed as it is, one int drawn from a
Generator (its stream advances once per call) or fresh entropy for None.

Per-row streams. Methods that treat the rows of a batch independently give row ``i`` (its index
in the whole call) the stream ``SeedSequence(root, spawn_key=(i,))`` (:func:`row_seed_sequence`,
:func:`row_rng`; the same as ``SeedSequence(root).spawn(n)[i]``), so a row draws the same numbers
alone, in a row split, on a worker or with the rest of the batch, whatever the ``batch_size``.
Two vectorised readers of such streams avoid building one numpy Generator per row:

- :class:`RowNormal`: standard normal noise for noisy copies ``e = 0 .. copies - 1`` of a batch;
  copy ``e`` reads ``SeedSequence(root, spawn_key=(e,))`` in row order (SmoothGrad, NoiseTunnel
  and GradientSHAP's input noise);
- :func:`row_draws`: ``size`` indices into ``n_choices`` items (uniform or by weight) and then
  ``size`` uniforms per row, from ``default_rng(SeedSequence(root, spawn_key=(row, 0)))``
  (GradientSHAP's background rows and path points), computed for all rows at once by numpy array
  arithmetic (SeedSequence's hash, PCG64's seeding and 128-bit LCG, the Generator's Lemire bounded
  integers and doubles), bitwise :func:`row_draws_numpy` row by row.

Records. :func:`seed_record` is how every seeded API records its seed (``Explanation.params``,
a benchmark's ``settings``, a summary, JSON): ``{"seed": s}`` with ``s`` the int as given, None
for fresh entropy, or ``"generator"`` for a numpy Generator; where the call reduced a Generator or
None to one int (its ``root``), also ``"seed_root"``: that int, which given as the seed repeats
the call exactly.
"""

from __future__ import annotations

import contextlib
import numbers

import numpy as np

__all__ = [
    "parse_seed",
    "numpy_rng",
    "torch_generator",
    "torch_seeded",
    "spawn_rngs",
    "keyed_rng",
    "root_seed",
    "row_seed_sequence",
    "row_rng",
    "RowNormal",
    "row_draws",
    "row_draws_numpy",
    "seed_record",
]

#: The exclusive upper bound of a root drawn from a Generator (an int torch and numpy both take).
ROOT_HIGH = 2**63 - 1


# --------------------------------------------------------------------------------------------------
# seeds


def parse_seed(seed, name: str = "seed"):
    """Check a seed: None, a non-negative int (numpy ints too) or a ``numpy.random.Generator``.

    Returned as given (an int as a plain int). A Generator is used as it is, so successive calls
    continue its stream. Anything else is refused naming ``name``: a ``TypeError`` for the wrong
    kind (a bool, a float, a string), a ``ValueError`` for a negative int.
    """
    if seed is None or isinstance(seed, np.random.Generator):
        return seed
    if not isinstance(seed, numbers.Integral) or isinstance(seed, (bool, np.bool_)):
        raise TypeError(
            f"{name} must be None, a non-negative int or a numpy.random.Generator; got {seed!r} "
            f"({type(seed).__name__})"
        )
    if seed < 0:
        raise ValueError(f"{name} must be None, a non-negative int or a numpy.random.Generator; got {seed}")
    return int(seed)


def numpy_rng(seed, name: str = "seed") -> np.random.Generator:
    """The numpy Generator to draw from: the given Generator itself, or ``default_rng(seed)``."""
    seed = parse_seed(seed, name)
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def spawn_rngs(seed, k: int, name: str = "seed") -> tuple:
    """``k`` independent numpy Generators from one seed: a Generator's own ``spawn(k)``, else
    ``default_rng(s)`` for each ``s`` of ``SeedSequence(seed).spawn(k)`` (an int or None)."""
    seed = parse_seed(seed, name)
    if isinstance(seed, np.random.Generator):
        return tuple(seed.spawn(k))
    return tuple(np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(k))


def keyed_rng(seed: int, *key: int) -> np.random.Generator:
    """A stream of its own for each ``key`` under one int seed: ``default_rng([seed, *key])``
    (numpy's ``SeedSequence`` of the words ``seed, *key``), independent of ``default_rng(seed)``."""
    seed = parse_seed(seed)
    if not isinstance(seed, int):
        raise TypeError(f"seed must be an int (each key's stream is rebuilt from it); got {seed!r}")
    return np.random.default_rng([seed, *(int(k) for k in key)])


def root_seed(seed, name: str = "seed", high: int = ROOT_HIGH) -> int:
    """One int for one call: the int seed itself; for a numpy Generator, ``int(g.integers(0, high))``
    (its stream advances once per call); for None, fresh entropy in ``[0, high)``.

    The root of a call's per-row streams (:func:`row_seed_sequence`) with the default ``high``;
    ``high=2**31 - 1`` where the int goes to scikit-learn's ``random_state``, ``2**62`` where
    ``root + 1`` must stay below ``2**63`` (torch's ``manual_seed``). Given back as the seed, the
    int repeats the call (record it with :func:`seed_record`).
    """
    seed = parse_seed(seed, name)
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(0, high))
    if seed is None:
        if high == ROOT_HIGH:
            return int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> np.uint64(1))
        return int(np.random.default_rng().integers(0, high))
    return seed


def torch_generator(seed, device="cpu", name: str = "seed"):
    """A ``torch.Generator`` on ``device`` seeded with :func:`root_seed` of ``seed``: the int
    itself, an int drawn from a numpy Generator (so the Generator's stream advances), or fresh
    entropy for None."""
    import torch  # here, not at import: the command line's --help imports no torch

    return torch.Generator(device=device).manual_seed(root_seed(seed, name))


@contextlib.contextmanager
def torch_seeded(seed: int | None, device=None):
    """Run a block with torch's global generator seeded by ``seed``, the caller's state restored
    after: ``torch.random.fork_rng`` (the CPU generator, and ``device``'s when it is a CUDA
    device) around ``torch.manual_seed(seed)``. The one place featurelens seeds torch's global
    generator (initialisations of ``nn`` modules and dropout draw from it).

    Parameters
    ----------
    seed : int or None
        The seed (an int, e.g. from :func:`root_seed`). None: the block runs on the global
        generator as it is (it advances, as for any torch code).
    device : torch.device or str, optional
        A CUDA device whose generator is forked and seeded too; None or a CPU device: the CPU
        generator only.

    Yields
    ------
    None

    Examples
    --------
    >>> import torch
    >>> with torch_seeded(3):
    ...     a = torch.nn.Linear(2, 2).weight.detach().clone()
    >>> with torch_seeded(3):
    ...     b = torch.nn.Linear(2, 2).weight.detach().clone()
    >>> bool((a == b).all())
    True
    """
    if seed is None:
        yield
        return
    import torch  # here, not at import: numpy paths never import torch

    device = None if device is None else torch.device(device)
    devices = [device] if device is not None and device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(int(seed))
        yield


# --------------------------------------------------------------------------------------------------
# per-row streams


def row_seed_sequence(root: int, row: int) -> np.random.SeedSequence:
    """The seed sequence of row ``row`` (its index in the whole call) under ``root``:
    ``SeedSequence(root, spawn_key=(row,))``, the same as ``SeedSequence(root).spawn(n)[row]``."""
    return np.random.SeedSequence(int(root), spawn_key=(int(row),))


def row_rng(root: int, row: int) -> np.random.Generator:
    """The numpy Generator of row ``row`` under ``root`` (see :func:`row_seed_sequence`)."""
    return np.random.default_rng(row_seed_sequence(root, row))


class RowNormal:
    """Standard normal noise for the noisy copies of a batch, drawn chunk by chunk.

    Copy ``e`` has one stream, ``numpy.random.default_rng(SeedSequence(root, spawn_key=(e,)))``,
    read in row order over the whole explain call: row ``i`` (its index in the call, so a row
    draws the same noise alone, in a row split or on a worker) gets elements ``[i d, (i + 1) d)``
    of ``standard_normal`` (``d`` = elements per row), in float64 on the CPU, cast to ``x``'s
    dtype and moved to its device. It depends only on the seed, the copy and the row index, never
    on the chunking, the other rows or the device. A batch starting at row ``k`` skips the first
    ``k d`` draws of each copy's stream. Chunks reach the copies in order (expansion-major), so
    one copy's rows are generated once, as they are needed, and at most the current copy's rows
    are held. (One numpy call per copy and chunk: the cost of the noise is that of the draws.)

    Parameters
    ----------
    root
        The call's root (:func:`root_seed`).
    row_start
        The index of ``x``'s first row in the whole call.
    x
        The batch (a tensor): its row shape, dtype and device.
    copies
        The number of noisy copies.
    """

    def __init__(self, root: int, row_start: int, x, copies: int):
        self.row_shape = tuple(x.shape[1:])
        self.d = int(np.prod(self.row_shape, dtype=np.int64))
        self.n = int(x.shape[0])
        self.device, self.dtype = x.device, x.dtype
        self.root, self.row_start, self.copies = int(root), int(row_start), int(copies)
        self._copy = None  # the copy whose rows are held
        self._rng = None
        self._rows = np.zeros((0, self.d))  # rows 0.. of this batch generated so far, for _copy

    def _upto(self, e: int, rows: int) -> np.ndarray:
        """Copy ``e``'s noise for this batch's rows ``0 .. rows - 1`` (n_rows, d) float64."""
        if e != self._copy:
            self._copy = e
            self._rng = np.random.default_rng(np.random.SeedSequence(self.root, spawn_key=(e,)))
            if self.row_start:  # the rows before this batch's first, skipped in bounded blocks
                left = self.row_start * self.d
                while left:
                    step = min(left, 1 << 22)
                    self._rng.standard_normal(step)
                    left -= step
            self._rows = np.zeros((0, self.d))
        have = self._rows.shape[0]
        if rows > have:
            more = self._rng.standard_normal((rows - have, self.d))
            self._rows = np.concatenate([self._rows, more]) if have else more
        return self._rows

    def pairs(self, copy: list, sample: list):
        """Noise rows for the (copy, sample) pairs given as two equal-length lists (each copy's
        pairs in increasing copy order, as the chunks of an expanded pass list them)."""
        import torch

        out = np.empty((len(copy), self.d))
        copy_arr, sample_arr = np.asarray(copy, dtype=np.int64), np.asarray(sample, dtype=np.int64)
        for e in np.unique(copy_arr):  # sorted: the copies in order
            where = np.flatnonzero(copy_arr == e)
            rows = self._upto(int(e), int(sample_arr[where].max()) + 1)
            out[where] = rows[sample_arr[where]]
        t = torch.from_numpy(out).to(self.dtype).reshape(len(copy), *self.row_shape)
        return t.to(self.device)

    def copy(self, e: int):
        """The ``x.shape`` standard normal noise of copy ``e`` (every row)."""
        return self.pairs([int(e)] * self.n, list(range(self.n)))

    def rows(self, copy, sample):
        """Noise rows for the (copy, sample) pairs of one chunk (expansion-major order)."""
        return self.pairs(copy.tolist(), sample.tolist())


# --------------------------------------------------------------------------------------------------
# vectorised per-row draws
#
# Row i's stream is ``default_rng(SeedSequence(root, spawn_key=(i, 0)))`` (numpy's PCG64); building
# one Generator per row costs ~25 us of Python, a third of a small GradientSHAP call. The helpers
# below compute the same streams for all rows at once with numpy array arithmetic: SeedSequence's
# hash (O'Neill's seed_seq mixing, as numpy implements it), PCG64's seeding and 128-bit LCG steps
# with XSL-RR output, and the Generator's bounded-integer (Lemire) and double draws.
# tests/test_random.py and tests/explainers/test_families_speed_paths.py pin them bitwise to
# numpy's own Generators; any row they cannot reproduce exactly (a Lemire rejection, a row index
# from 2**32) is drawn by numpy itself.

_M32 = np.uint64(0xFFFFFFFF)
_MUL_HI = np.uint64(0x2360ED051FC65DA4)  # PCG64's 128-bit LCG multiplier, high and low words
_MUL_LO = np.uint64(0x4385DF649FCCF645)


def _int_words(value: int) -> list:
    """An int as numpy's SeedSequence reads it: little-endian 32-bit words ([0] for 0)."""
    words = []
    while True:
        words.append(value & 0xFFFFFFFF)
        value >>= 32
        if not value:
            return words


def _hashmix(value, const):
    """SeedSequence's hashmix on uint32 arrays; ``const`` a one-element list (advanced)."""
    value = value ^ np.uint32(const[0])
    const[0] = (const[0] * 0x931E8875) & 0xFFFFFFFF
    value = value * np.uint32(const[0])
    return value ^ (value >> np.uint32(16))


def _mix(x, y):
    r = np.uint32(0xCA01F9DD) * x - np.uint32(0x4973F715) * y
    return r ^ (r >> np.uint32(16))


def _seed_states(root: int, rows: np.ndarray) -> np.ndarray:
    """``SeedSequence(root, spawn_key=(row, 0)).generate_state(4, uint64)`` for every row at once
    (rows below 2**32): (len(rows), 4) uint64."""
    run = _int_words(int(root))
    if len(run) < 4:
        run = run + [0] * (4 - len(run))
    n = rows.shape[0]
    entropy = [np.full(n, w, dtype=np.uint32) for w in run]
    entropy += [rows.astype(np.uint32), np.zeros(n, dtype=np.uint32)]
    const = [0x43B0D7E5]
    pool = [_hashmix(entropy[i], const) for i in range(4)]
    for src in range(4):
        for dst in range(4):
            if src != dst:
                pool[dst] = _mix(pool[dst], _hashmix(pool[src], const))
    for src in range(4, len(entropy)):
        for dst in range(4):
            pool[dst] = _mix(pool[dst], _hashmix(entropy[src], const))
    const = 0x8B51F9DD
    words = []
    for k in range(8):
        v = pool[k % 4] ^ np.uint32(const)
        const = (const * 0x58F38DED) & 0xFFFFFFFF
        v = v * np.uint32(const)
        words.append(v ^ (v >> np.uint32(16)))
    w = [x.astype(np.uint64) for x in words]
    return np.stack([w[2 * j] | (w[2 * j + 1] << np.uint64(32)) for j in range(4)], axis=1)


def _mul64(a, b):
    """Full 64 x 64 -> 128-bit products of uint64 arrays: (high, low)."""
    a0, a1 = a & _M32, a >> np.uint64(32)
    b0, b1 = b & _M32, b >> np.uint64(32)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> np.uint64(32)) + (p01 & _M32) + (p10 & _M32)
    low = (p00 & _M32) | (mid << np.uint64(32))
    high = p11 + (p01 >> np.uint64(32)) + (p10 >> np.uint64(32)) + (mid >> np.uint64(32))
    return high, low


class _PCG64Rows:
    """Many numpy PCG64 streams stepped together: the generators ``PCG64(SeedSequence(root,
    spawn_key=(row, 0)))`` of the given rows, advanced in lockstep (128-bit LCG on pairs of
    uint64 words, XSL-RR output)."""

    def __init__(self, root: int, rows: np.ndarray):
        seed = _seed_states(root, rows)
        s_hi, s_lo, i_hi, i_lo = seed[:, 0], seed[:, 1], seed[:, 2], seed[:, 3]
        self.inc_hi = (i_hi << np.uint64(1)) | (i_lo >> np.uint64(63))
        self.inc_lo = (i_lo << np.uint64(1)) | np.uint64(1)
        self.hi = np.zeros_like(s_hi)
        self.lo = np.zeros_like(s_lo)
        self._step()
        lo = self.lo + s_lo
        self.hi = self.hi + s_hi + (lo < self.lo).astype(np.uint64)
        self.lo = lo
        self._step()

    def _step(self):
        high, low = _mul64(self.lo, _MUL_LO)
        high = high + self.lo * _MUL_HI + self.hi * _MUL_LO
        lo = low + self.inc_lo
        self.hi = high + self.inc_hi + (lo < low).astype(np.uint64)
        self.lo = lo

    def next64(self) -> np.ndarray:
        self._step()
        x = self.hi ^ self.lo
        rot = self.hi >> np.uint64(58)
        return (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))

    def next_double(self) -> np.ndarray:
        """The Generator's ``random()``: the top 53 bits of a 64-bit output, times 2**-53."""
        return (self.next64() >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def row_draws_numpy(root: int, row: int, size: int, n_choices: int, p=None) -> tuple:
    """One row's ``size`` indices into ``n_choices`` items and ``size`` uniforms in [0, 1), drawn by
    numpy from the row's stream ``default_rng(SeedSequence(root, spawn_key=(row, 0)))``:
    ``rng.choice(n_choices, size, replace=True, p=p)`` then ``rng.random(size)`` (the reference
    :func:`row_draws` reproduces)."""
    rng = np.random.default_rng(np.random.SeedSequence(int(root), spawn_key=(int(row), 0)))
    return rng.choice(n_choices, size=size, replace=True, p=p), rng.random(size)


def row_draws(root: int, row_start: int, n: int, size: int, n_choices: int, p=None) -> tuple:
    """The draws of rows ``row_start .. row_start + n - 1`` for all rows at once: ``index``
    (n, size) int64 and ``uniform`` (n, size) float64, bitwise :func:`row_draws_numpy` row by row.

    Parameters
    ----------
    root
        The call's root (:func:`root_seed`).
    row_start, n
        The first row's index in the whole call and the number of rows.
    size
        Draws per row (of each kind).
    n_choices
        The number of items an index points into.
    p
        None (uniform choice) or the ``n_choices`` weights, normalised to sum to 1.
    """
    rows = np.arange(row_start, row_start + n, dtype=np.int64)
    index = np.empty((n, size), dtype=np.int64)
    uniform = np.empty((n, size))
    if n == 0:
        return index, uniform
    if rows[-1] >= 2**32:  # spawn keys of two words: numpy's own Generators
        for k, row in enumerate(rows):
            index[k], uniform[k] = row_draws_numpy(root, row, size, n_choices, p)
        return index, uniform
    gen = _PCG64Rows(int(root), rows)
    redo = np.zeros(n, dtype=bool)
    if p is not None:
        # Generator.choice with p: the cdf searched with one double per draw.
        cdf = p.cumsum()
        cdf /= cdf[-1]
        for j in range(size):
            index[:, j] = cdf.searchsorted(gen.next_double(), side="right")
    elif n_choices == 1:
        index[:] = 0  # Generator.integers(0, 1) draws nothing
    else:
        # Generator.integers(0, B): Lemire's bounded draws on 32-bit halves of the 64-bit outputs
        # (low half first); a draw below the threshold would be redrawn: that row goes to numpy.
        bound = np.uint64(n_choices)
        threshold = np.uint64((2**32 - n_choices) % n_choices)
        word = None
        for j in range(size):
            if j % 2 == 0:
                word = gen.next64()
                half = word & _M32
            else:
                half = word >> np.uint64(32)
            m = half * bound
            index[:, j] = (m >> np.uint64(32)).astype(np.int64)
            redo |= (m & _M32) < threshold
    for j in range(size):
        uniform[:, j] = gen.next_double()
    for k in np.flatnonzero(redo):
        index[k], uniform[k] = row_draws_numpy(root, rows[k], size, n_choices, p)
    return index, uniform


# --------------------------------------------------------------------------------------------------
# records


def seed_record(seed, root: int | None = None) -> dict:
    """How a seed is recorded (``Explanation.params``, settings, summaries; JSON-safe).

    ``{"seed": seed}`` for an int (as a plain int) or None; ``{"seed": "generator"}`` for a numpy
    Generator. ``root``: the one int the call reduced the seed to (:func:`root_seed`), or None when
    it drew from the seed directly; recorded as ``"seed_root"`` when the seed was a Generator or
    None (for an int seed the root is the seed itself), so that ``seed=record["seed_root"]``
    repeats the call exactly.
    """
    if isinstance(seed, np.random.Generator):
        record = {"seed": "generator"}
    elif seed is None:
        record = {"seed": None}
    else:
        record = {"seed": int(parse_seed(seed))}
    if root is not None and not isinstance(record["seed"], int):
        record["seed_root"] = int(root)
    return record
