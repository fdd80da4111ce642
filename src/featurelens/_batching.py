"""The one chunking utility: every expansion (IG steps, noise samples, AGOP batches, masks) goes
through :func:`chunks`, which bounds the number of rows sent through a model at once.

Expanded rows are ordered *expansion-major*: row ``r`` of an expansion of ``n_expand`` copies of
``n`` samples is copy ``r // n`` of sample ``r % n``. :func:`expansion_index` gives both indices for
one chunk so that a method can build only that chunk's inputs, never the whole expansion.
"""

from __future__ import annotations

from typing import Iterator

import torch

DEFAULT_BATCH_SIZE = 1024

#: With no batch_size given, a chunk also holds at most this many input elements (2 MiB of float32).
#: Why: on CPU, tensors above glibc's mmap threshold (32 MiB) are mapped afresh and page-faulted in
#: for every chunk; keeping a chunk's activations under it makes a 3x32x32 CNN's IG/SmoothGrad about
#: twice as fast as 1024-row chunks (benchmarks/bench_gradients.py), while tiny inputs keep 1024 rows.
DEFAULT_CHUNK_ELEMENTS = 2**19


def check_batch_size(batch_size: int | None) -> int:
    """Validate ``batch_size`` (None means :data:`DEFAULT_BATCH_SIZE`)."""
    if batch_size is None:
        return DEFAULT_BATCH_SIZE
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int; got {batch_size!r}")
    return batch_size


#: Row cap of forward-only chunks (no autograd graph is kept, so activations are freed layer by
#: layer): black-box games with background rows send tens of thousands of small rows, and per-call
#: overhead dominated at 1024 rows (benchmarks/bench_shapley.py).
DEFAULT_FORWARD_ROWS = 16384


def default_rows(row_numel: int, forward_only: bool = False) -> int:
    """Rows per chunk when no batch_size is given: at most :data:`DEFAULT_BATCH_SIZE` rows
    (:data:`DEFAULT_FORWARD_ROWS` for forward-only passes) and at most
    :data:`DEFAULT_CHUNK_ELEMENTS` input elements, but at least one row."""
    cap = DEFAULT_FORWARD_ROWS if forward_only else DEFAULT_BATCH_SIZE
    return max(1, min(cap, DEFAULT_CHUNK_ELEMENTS // max(1, int(row_numel))))


def chunks(total: int, batch_size: int) -> Iterator[slice]:
    """Yield consecutive slices covering ``range(total)``, each at most ``batch_size`` long."""
    batch_size = check_batch_size(batch_size)
    for start in range(0, total, batch_size):
        yield slice(start, min(start + batch_size, total))


def expansion_index(rows: slice, n: int, device: torch.device | str = "cpu"):
    """For the expanded rows ``rows`` of ``n`` samples, return ``(copy_index, sample_index)``."""
    r = torch.arange(rows.start, rows.stop, device=device)
    return r // n, r % n
