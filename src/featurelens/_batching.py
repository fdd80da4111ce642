"""The one chunking utility: every expansion (IG steps, noise samples, AGOP batches, masks) goes
through :func:`chunks`, which bounds the number of rows sent through a model at once.

Expanded rows are ordered *expansion-major*: row ``r`` of an expansion of ``n_expand`` copies of
``n`` samples is copy ``r // n`` of sample ``r % n``. :func:`expansion_index` gives both indices for
one chunk so that a method can build only that chunk's inputs, never the whole expansion.

How many rows go in a chunk of model passes has one rule, owned by the Model adapter:
:meth:`featurelens.models.Model.chunk_rows` (the Model's ``batch_size``, else :func:`default_rows`).
Consumers read it; they never change a Model they were handed.
"""

from __future__ import annotations

from typing import Iterator

from featurelens._optional import torch

from ._validation import check_int

DEFAULT_BATCH_SIZE = 1024

#: With no batch_size given, a chunk also holds at most this many input elements (2 MiB of float32).
#: Why: on CPU, tensors above glibc's mmap threshold (32 MiB) are mapped afresh and page-faulted in
#: for every chunk; keeping a chunk's activations under it makes a 3x32x32 CNN's IG/SmoothGrad about
#: twice as fast as 1024-row chunks (benchmarks/bench_gradients.py), while tiny inputs keep 1024 rows.
DEFAULT_CHUNK_ELEMENTS = 2**19


def check_batch_size(batch_size: int | None) -> int:
    """Validate ``batch_size``, an int >= 1 (numpy ints too) or None (:data:`DEFAULT_BATCH_SIZE`).

    How many rows a chunk holds is decided in one place, :meth:`featurelens.models.Model.chunk_rows`
    (a Model's ``batch_size``, else :func:`default_rows`); this only checks the number."""
    if batch_size is None:
        return DEFAULT_BATCH_SIZE
    return check_int(batch_size, "batch_size", low=1, allow_none=True)


#: Row cap of forward-only chunks (no autograd graph is kept, so activations are freed layer by
#: layer): black-box games with background rows send tens of thousands of small rows, and per-call
#: overhead dominated at 1024 rows (benchmarks/bench_shapley.py).
DEFAULT_FORWARD_ROWS = 16384


#: Forward-only chunks hold at least this many rows. The element bound alone gives 3 rows of a
#: 3x224x224 image, and a convolution over 3 rows runs slower per row than over 8 (ResNet-18: the
#: occlusion / feature-ablation / KernelSHAP passes of benchmarks/bench_scale.py sent 3 images a
#: call where Captum sends 8). Without a graph only one layer's activations live at a time, so 8
#: rows of a 224x224 image stay small. Gradient passes have their own floor
#: (``featurelens.explainers.gradient.GRADIENT_MIN_ROWS``).
FORWARD_MIN_ROWS = 8


def default_rows(row_numel: int, forward_only: bool = False) -> int:
    """Rows per chunk when no batch_size is given: at most :data:`DEFAULT_BATCH_SIZE` rows
    (:data:`DEFAULT_FORWARD_ROWS` for forward-only passes) and at most
    :data:`DEFAULT_CHUNK_ELEMENTS` input elements, but at least one row (at least
    :data:`FORWARD_MIN_ROWS` for forward-only passes)."""
    if forward_only:
        return max(FORWARD_MIN_ROWS, min(DEFAULT_FORWARD_ROWS, DEFAULT_CHUNK_ELEMENTS // max(1, int(row_numel))))
    return max(1, min(DEFAULT_BATCH_SIZE, DEFAULT_CHUNK_ELEMENTS // max(1, int(row_numel))))


def chunks(total: int, batch_size: int) -> Iterator[slice]:
    """Yield consecutive slices covering ``range(total)``, each at most ``batch_size`` long."""
    batch_size = check_batch_size(batch_size)
    for start in range(0, total, batch_size):
        yield slice(start, min(start + batch_size, total))


def expansion_index(rows: slice, n: int, device: torch.device | str = "cpu"):
    """For the expanded rows ``rows`` of ``n`` samples, return ``(copy_index, sample_index)``."""
    r = torch.arange(rows.start, rows.stop, device=device)
    return r // n, r % n


#: Byte budget of one chunk of a data-matrix computation that involves no model (CKA sums, neural
#: collapse, OOD distances, RFM kernel blocks): 64 MiB, i.e. 2**23 float64 numbers. Large enough
#: that the matrix products keep a long inner dimension (BLAS near full speed), small enough to stay
#: well inside memory beside the data itself.
DEFAULT_CHUNK_BYTES = 2**26


def rows_for_bytes(
    row_bytes: int, budget_bytes: int = DEFAULT_CHUNK_BYTES, min_rows: int = 1, max_rows: int | None = None
) -> int:
    """Rows per chunk of a data-matrix computation: ``budget_bytes // row_bytes`` (the chunk's
    temporaries stay within the budget), clipped to ``[min_rows, max_rows]``.

    ``row_bytes`` is what one row of the chunk costs in temporaries (e.g. ``8 * (p + q)`` for a
    float64 row of two feature blocks). Model passes do not use this: their rule is
    :meth:`featurelens.models.Model.chunk_rows` (the Model's ``batch_size``)."""
    rows = max(int(min_rows), int(budget_bytes) // max(1, int(row_bytes)))
    return rows if max_rows is None else max(1, min(rows, int(max_rows)))
