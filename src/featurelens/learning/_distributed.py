"""The ``torch.distributed`` helpers of the mergeable accumulators' ``all_reduce``
(:class:`featurelens.learning.AGOPAccumulator`, :class:`featurelens.learning.CKAAccumulator`):
the process group or a clear error, the device collectives run on, and the check that every rank
built its accumulator with the same settings."""

from __future__ import annotations

import math

import numpy as np
from featurelens._optional import torch

__all__ = ["dist_module", "dist_device", "dist_agree"]


def dist_module(what: str):
    """``torch.distributed`` when a process group is initialised, else a clear RuntimeError."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        raise RuntimeError(
            f"{what} needs an initialised torch.distributed process group (run under torchrun and "
            "call torch.distributed.init_process_group(...)); none is initialised in this process. "
            "Without one, combine accumulators with merge(other) or their state() dicts"
        )
    return dist


def dist_device(dist, group) -> torch.device:
    """Where collective tensors live: the current CUDA device for NCCL, the CPU otherwise."""
    if dist.get_backend(group) == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def dist_agree(dist, values: np.ndarray, known: bool, group, device, names: str, what: str):
    """Check that every rank that knows ``values`` holds the same numbers (one MAX and one MIN
    all_reduce); returns them, or None when no rank knows them. Every rank reaches the same
    verdict, so a mismatch raises on all ranks rather than hanging one of them."""
    v = torch.as_tensor(np.asarray(values, dtype=np.float64), device=device)
    hi = v.clone() if known else torch.full_like(v, -math.inf)
    lo = v.clone() if known else torch.full_like(v, math.inf)
    dist.all_reduce(hi, op=dist.ReduceOp.MAX, group=group)
    dist.all_reduce(lo, op=dist.ReduceOp.MIN, group=group)
    if bool(torch.isinf(hi).all()) and bool((hi < 0).all()):
        return None
    if not torch.equal(hi, lo):
        raise ValueError(
            f"cannot all_reduce {what}: the ranks differ in {names}; every rank must build its "
            "accumulator with the same settings"
        )
    return hi.cpu().numpy()
