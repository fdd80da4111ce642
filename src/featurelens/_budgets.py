"""THE home of budgets: the one place where the work and the memory an argument asks for are bounded.

Every budget-like argument (``n_steps``, ``n_samples``, ``n_subsets``, ``budget``, ``n_latents``,
``p``, ...) goes through :func:`check_budget`, which refuses it *before any work* when the work it
asks for is out of bounds, naming the argument, the estimate and the way out. There is one bound on
work, :data:`MAX_EVALUATIONS` = 10^8 evaluations (rows through a model or evaluations of a game) per
call, which the environment variable ``FEATURELENS_MAX_EVALUATIONS`` (or assigning
``featurelens._budgets.MAX_EVALUATIONS``) raises or lowers, and one bound on memory, the memory
available now (:func:`available_memory`, checked by :func:`check_memory`). The int checks under a
budget are those of ``featurelens._validation``.

Sizes. A size-like argument of an estimator or a layer (a width, a hidden size, a number of
latents or random features, a rank) asks for memory rather than work: :func:`check_sizes` turns
the sizes into the memory of the model they build (:func:`training_bytes`: its parameters, their
gradients and Adam's two moments, and the activations of a batch) and refuses them, before
anything is allocated, when that exceeds the available memory, naming the argument responsible,
its value, the parameters and the memory.
"""

from __future__ import annotations

import math
import numbers
import os

import numpy as np

from ._validation import check_int

__all__ = [
    "MAX_EVALUATIONS",
    "max_evaluations",
    "format_count",
    "format_bytes",
    "available_memory",
    "available_cores",
    "check_memory",
    "check_budget",
    "check_sizes",
    "training_bytes",
]


#: The most evaluations (rows through a model, or evaluations of a game) one call of a featurelens
#: function may plan: 10^8, generous for real use (a KernelSHAP budget of 10^6 on 100 inputs, 50
#: integration steps on a million inputs) while 10^9 and more is refused at once. Raise it with the
#: environment variable ``FEATURELENS_MAX_EVALUATIONS`` or by assigning this name (read per call).
MAX_EVALUATIONS = 10**8


def max_evaluations() -> int:
    """The bound on evaluations in force: ``FEATURELENS_MAX_EVALUATIONS`` when set (an int, e.g.
    ``1e9`` or ``1000000000``), else :data:`MAX_EVALUATIONS`."""
    env = os.environ.get("FEATURELENS_MAX_EVALUATIONS")
    if env:
        try:
            value = float(env)
        except ValueError:
            raise ValueError(
                f"the environment variable FEATURELENS_MAX_EVALUATIONS must be a positive number such as 1e9; "
                f"got {env!r}"
            ) from None
        if not (math.isfinite(value) and value >= 1):
            raise ValueError(f"the environment variable FEATURELENS_MAX_EVALUATIONS must be >= 1; got {env!r}")
        return int(value)
    return int(MAX_EVALUATIONS)


def format_count(count) -> str:
    """``123456`` -> ``'123,456'``; counts from 10^7 on in powers of ten (``'1e+09'``), exact for
    ints of any size (``2**3000`` -> ``'1.23e+903'``; ``2**150528``, the coalitions of a 224 x 224
    RGB image, -> ``'2.77e+45313'``), never an OverflowError."""
    if isinstance(count, numbers.Integral) and not isinstance(count, (bool, np.bool_)):
        count = int(count)
        if abs(count) < 10**7:
            return f"{count:,}"
        if abs(count).bit_length() > 12000:  # str() of ints above 4,300 digits is refused by Python
            shift = abs(count).bit_length() - 64
            log = math.log10(abs(count) >> shift) + shift * math.log10(2)
            exponent = int(math.floor(log))
            return f"{'-' if count < 0 else ''}{10 ** (log - exponent):.3g}e+{exponent}"
        exponent = len(str(abs(count))) - 1
        if exponent < 300:
            return f"{float(count):.3g}"
        mantissa = int(str(abs(count))[:4]) / 1000
        return f"{'-' if count < 0 else ''}{mantissa:.3g}e+{exponent}"
    value = float(count)
    return f"{value:,.0f}" if abs(value) < 1e7 else f"{value:.3g}"


def format_bytes(nbytes) -> str:
    """``1.5e9`` -> ``'1.5 GB'`` (decimal units, up to PB; beyond, in powers of ten). Ints of any
    size are accepted (a ``32 * 2**3000`` byte table), never an OverflowError."""
    if isinstance(nbytes, numbers.Integral) and not isinstance(nbytes, (bool, np.bool_)) and int(nbytes) >= 10**300:
        return f"{format_count(int(nbytes) // 10**15)} PB"
    value = float(nbytes)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1000:
            return f"{value:.3g} {unit}"
        value /= 1000
    return f"{value:.3g} PB"


def available_memory() -> int | None:
    """Bytes of memory available to this process now (``MemAvailable`` on Linux, else the physical
    memory), or None when the platform does not say."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def available_cores() -> int:
    """CPU cores this process may run on: its affinity mask where the OS reports one, else
    ``os.cpu_count()``.

    Returns
    -------
    int
        At least 1.

    Examples
    --------
    >>> available_cores() >= 1
    True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - platforms without affinity
        return max(1, os.cpu_count() or 1)


def check_memory(nbytes, what: str, way_out: str, limit=None) -> None:
    """Refuse, before allocating, work that needs more memory than there is.

    ``nbytes`` is the estimate (a float, or an int of any size), ``what`` names the work
    (``"spex with budget = 10^12"``), ``way_out`` says what to do instead. ``limit`` defaults to
    ``available_memory``. Raises a ValueError naming the estimate (in GB/TB) and the way out;
    never a raw MemoryError later.
    """
    limit = available_memory() if limit is None else limit
    if limit is not None and nbytes > limit:
        raise ValueError(
            f"{what} would need about {format_bytes(nbytes)} of memory, more than the "
            f"{format_bytes(limit)} available; {way_out}"
        )


def check_budget(
    value,
    name: str,
    *,
    low: int = 1,
    allow_none: bool = False,
    per=1,
    unit: str = "evaluations",
    what: str = "",
    hint: str | None = None,
    nbytes=None,
    limit: int | None = None,
    source: str | None = None,
    scope: str = "per call",
):
    """A budget-like int argument (steps, samples, subsets, a budget, players, latents, ...),
    checked like :func:`check_int` and refused, before any work, when what it asks for is too much.

    The work is ``value * per`` ``unit`` (``per``: what one unit of ``value`` costs, e.g. the
    inputs times the subset sizes; an int of any size); it must not exceed ``limit`` (default
    :func:`max_evaluations`, 10^8 evaluations per call). ``nbytes``, when given, is the memory the
    value needs (a number, or a function of the checked value), refused above ``available_memory`` by :func:`check_memory`. ``what`` says what
    the estimate counts (``"model evaluations for 4 inputs"``); ``hint`` the way out (default:
    lower the argument). The ValueError names the argument, the estimate and the bound, e.g.
    ``"n_steps=1000000000 needs about 1e+09 model evaluations per input; the limit is 1e+08 per
    call (...); lower n_steps ..."``. ``limit`` and ``source`` (where that limit is documented, named
    in the message) replace the evaluation bound for limits of another kind (the nodes of a
    quadrature rule); ``scope`` says what the limit is counted over (``"per call"``; ``""`` for a
    limit of another kind, such as the workers of this machine). Returns the value as a plain int (None when allowed).
    """
    value = check_int(value, name, low=low, allow_none=allow_none)
    if value is None:
        return None
    if limit is None:
        limit = max_evaluations()
        source = ("featurelens._budgets.MAX_EVALUATIONS, raised by the environment variable "
                  "FEATURELENS_MAX_EVALUATIONS")
    limit = int(limit)
    cost = value * per
    way_out = hint or f"lower {name}"
    if cost > limit:
        raise ValueError(
            f"{name}={value} needs about {format_count(cost)} {unit}{' ' + what if what else ''}; the limit is "
            f"{format_count(limit)} {unit}{' ' + scope if scope else ''}{' (' + source + ')' if source else ''}; {way_out}"
        )
    if callable(nbytes):
        nbytes = nbytes(value)
    if nbytes is not None:
        check_memory(nbytes, f"{name}={value}{' (' + what + ')' if what else ''}", way_out + ".")
    return value


def training_bytes(n_parameters, n_activations=0, itemsize: int = 4) -> int:
    """Bytes to train a model of ``n_parameters`` parameters by Adam (the parameters, their
    gradients and Adam's two moments: 4 copies) holding ``n_activations`` activation values of a
    batch at once (3 copies: the values, their gradients and one temporary), at ``itemsize`` bytes
    a value (4: float32). Ints of any size are kept exact (never an overflow)."""
    return int(itemsize) * (4 * int(n_parameters) + 3 * int(n_activations))


def _smallest(value):
    """The smallest setting of a size: 1, or a tuple of ones for a tuple of widths."""
    return tuple(1 for _ in value) if isinstance(value, tuple) else 1


def check_sizes(sizes: dict, estimate, what: str, *, hint: str | None = None, limit=None) -> None:
    """Refuse, before anything is allocated, size-like arguments whose model does not fit in memory.

    ``sizes`` maps each size-like argument to its (already int-checked) value, an int or a tuple of
    ints (the widths of hidden layers); ``estimate(**sizes)`` returns ``(n_parameters, nbytes)`` of
    the model they build, ints (see :func:`training_bytes`). When ``nbytes`` exceeds ``limit``
    (default :func:`available_memory`), a ValueError names the argument responsible (the one whose
    smallest setting frees the most memory), its value, the other sizes, the parameters and the
    memory, e.g. ``"width=1048576 (hyper_hidden=64, classifier_hidden=16; HyperDFS on 4 features)
    needs about 4.4e+12 parameters, about 70.4 TB of memory to train, more than the 21 GB
    available; lower width"``. ``what`` says what the sizes build; ``hint`` replaces the way out.
    """
    n_parameters, nbytes = estimate(**sizes)
    limit = available_memory() if limit is None else limit
    if limit is None or nbytes <= limit:
        return
    freed = {}
    for name, value in sizes.items():
        smaller = dict(sizes, **{name: _smallest(value)})
        freed[name] = nbytes - estimate(**smaller)[1]
    name = max(freed, key=lambda k: freed[k])
    value = sizes[name]
    others = ", ".join(f"{k}={v!r}" for k, v in sizes.items() if k != name)
    raise ValueError(
        f"{name}={value!r} ({others + '; ' if others else ''}{what}) needs about {format_count(n_parameters)} "
        f"parameters, about {format_bytes(nbytes)} of memory to train, more than the {format_bytes(limit)} "
        f"available; {hint or f'lower {name}'}"
    )
